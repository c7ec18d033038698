/* test_bvh.c — bounding volume hierarchies: boxes enclose their elements,
 * traversal finds every overlapping element pair (checked against brute
 * force with an exact separating-axis test), plane queries, determinism. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

/* A soup of nt random small tets (positively oriented) in [-1, 1]^3 with a
 * pressure per vertex. */
typedef struct soup {
  int32_t nv, nt;
  ce_vec3 *v;
  double *p;
  int32_t (*t)[4];
} soup;

static soup make_soup(int32_t nt, double size, uint64_t seed) {
  soup s;
  s.nt = nt;
  s.nv = 4 * nt;
  s.v = malloc(sizeof(ce_vec3) * (size_t)s.nv);
  s.p = malloc(sizeof(double) * (size_t)s.nv);
  s.t = malloc(sizeof(int32_t[4]) * (size_t)nt);
  uint64_t st = seed;
  for (int32_t i = 0; i < nt; i++) {
    ce_vec3 c = ce_v3(2 * ce_test_rand(&st) - 1, 2 * ce_test_rand(&st) - 1, 2 * ce_test_rand(&st) - 1);
    ce_vec3 x[4];
    for (int j = 0; j < 4; j++)
      x[j] = ce_add(c, ce_v3(size * (ce_test_rand(&st) - 0.5), size * (ce_test_rand(&st) - 0.5),
                             size * (ce_test_rand(&st) - 0.5)));
    double vol = ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0])));
    if (vol < 0) {
      ce_vec3 tmp = x[1];
      x[1] = x[2];
      x[2] = tmp;
    }
    for (int j = 0; j < 4; j++) {
      s.v[4 * i + j] = x[j];
      s.p[4 * i + j] = 1e5 * (1.2 - ce_norm(x[j]));
      s.t[i][j] = 4 * i + j;
    }
  }
  return s;
}

static void free_soup(soup *s) {
  free(s->v);
  free(s->p);
  free(s->t);
}

/* Exact-arithmetic-free but conservative-free SAT for two convex point sets
 * (tets): they overlap unless some axis among face normals and edge cross
 * products separates them. */
static void proj(const ce_vec3 *x, int n, ce_vec3 ax, double *lo, double *hi) {
  *lo = INFINITY;
  *hi = -INFINITY;
  for (int i = 0; i < n; i++) {
    double s = ce_dot(ax, x[i]);
    if (s < *lo) *lo = s;
    if (s > *hi) *hi = s;
  }
}

static int tets_overlap(const ce_vec3 a[4], const ce_vec3 b[4]) {
  static const int E[6][2] = {{0, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {2, 3}};
  static const int F[4][3] = {{1, 2, 3}, {0, 2, 3}, {0, 1, 3}, {0, 1, 2}};
  ce_vec3 axes[4 + 4 + 36];
  int n = 0;
  for (int f = 0; f < 4; f++) {
    axes[n++] = ce_cross(ce_sub(a[F[f][1]], a[F[f][0]]), ce_sub(a[F[f][2]], a[F[f][0]]));
    axes[n++] = ce_cross(ce_sub(b[F[f][1]], b[F[f][0]]), ce_sub(b[F[f][2]], b[F[f][0]]));
  }
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++)
      axes[n++] = ce_cross(ce_sub(a[E[i][1]], a[E[i][0]]), ce_sub(b[E[j][1]], b[E[j][0]]));
  for (int k = 0; k < n; k++) {
    if (ce_norm2(axes[k]) < 1e-24) continue;
    double la, ha, lb, hb;
    proj(a, 4, axes[k], &la, &ha);
    proj(b, 4, axes[k], &lb, &hb);
    if (ha < lb || hb < la) return 0;
  }
  return 1;
}

/* Barycentric coordinates of x in tet y (positively or negatively oriented). */
static void bary(const ce_vec3 y[4], ce_vec3 x, double l[4]) {
  double vol = ce_dot(ce_sub(y[1], y[0]), ce_cross(ce_sub(y[2], y[0]), ce_sub(y[3], y[0])));
  for (int k = 0; k < 4; k++) {
    ce_vec3 z[4] = {y[0], y[1], y[2], y[3]};
    z[k] = x;
    l[k] = ce_dot(ce_sub(z[1], z[0]), ce_cross(ce_sub(z[2], z[0]), ce_sub(z[3], z[0]))) / vol;
  }
}

/* Sample tet a (vertex pressures pa) on a barycentric grid; among samples
 * inside tet b, does p_a - p_b take both signs? */
static int equal_pressure_inside(const ce_vec3 a[4], const double pa[4], const ce_vec3 b[4], const double pb[4]) {
  int pos = 0, neg = 0;
  const int n = 8;
  for (int i = 0; i <= n; i++)
    for (int j = 0; i + j <= n; j++)
      for (int k = 0; i + j + k <= n; k++) {
        double l0 = (double)i / n, l1 = (double)j / n, l2 = (double)k / n, l3 = 1 - l0 - l1 - l2;
        ce_vec3 x = ce_add(ce_add(ce_scale(a[0], l0), ce_scale(a[1], l1)), ce_add(ce_scale(a[2], l2), ce_scale(a[3], l3)));
        double lb[4];
        bary(b, x, lb);
        if (lb[0] < 0 || lb[1] < 0 || lb[2] < 0 || lb[3] < 0) continue;
        double d = l0 * pa[0] + l1 * pa[1] + l2 * pa[2] + l3 * pa[3] -
                   (lb[0] * pb[0] + lb[1] * pb[1] + lb[2] * pb[2] + lb[3] * pb[3]);
        pos |= d >= 0;
        neg |= d <= 0;
      }
  return pos && neg;
}

static int has_pair(const ce_buf *out, int32_t a, int32_t b) {
  const ce_pair *p = out->data;
  for (int64_t i = 0; i < out->len; i++)
    if (p[i].a == a && p[i].b == b) return 1;
  return 0;
}

static int cmp_pair(const void *x, const void *y) {
  const ce_pair *a = x, *b = y;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  if (a->b != b->b) return a->b < b->b ? -1 : 1;
  return 0;
}

Test(bvh, boxes_enclose_their_elements_and_tree_is_complete) {
  soup s = make_soup(300, 0.2, 11);
  ce_bvh bvh;
  cr_assert_eq(ce_bvh_build(&bvh, s.nt, 4, &s.t[0][0], s.v, s.p, NULL, NULL), CE_OK);
  int *seen = calloc((size_t)s.nt, sizeof(int));
  int32_t leaves = 0;
  for (int32_t i = 0; i < bvh.nnodes; i++) {
    const ce_bvh_node *nd = &bvh.nodes[i];
    /* median splits of 300 tets: leaves of half CE_BVH_TET_LEAF to all of it */
    if (nd->left < 0) {
      leaves++;
      cr_assert(nd->count >= CE_BVH_TET_LEAF / 2 && nd->count <= CE_BVH_TET_LEAF, "leaf %d holds %d tets", i,
                nd->count);
    } else {
      cr_assert_gt(nd->count, CE_BVH_TET_LEAF, "node %d of %d tets was split", i, nd->count);
      cr_assert_eq(bvh.nodes[nd->left].count + bvh.nodes[nd->right].count, nd->count);
    }
    for (int32_t k = nd->first; k < nd->first + nd->count; k++) {
      int32_t e = bvh.order[k];
      if (nd->left < 0) seen[e]++;
      for (int j = 0; j < 4; j++) {
        ce_vec3 x = ce_sub(s.v[s.t[e][j]], nd->center);
        double h[3] = {nd->half.x, nd->half.y, nd->half.z};
        for (int a = 0; a < 3; a++) {
          ce_vec3 ax = ce_v3(nd->axes.m[0][a], nd->axes.m[1][a], nd->axes.m[2][a]);
          cr_assert(fabs(ce_dot(ax, x)) <= h[a], "node %d elem %d vertex %d outside on axis %d", i, e, j, a);
        }
        double p = s.p[s.t[e][j]];
        cr_assert(p >= nd->pmin && p <= nd->pmax, "node %d pressure range misses %g", i, p);
      }
    }
  }
  for (int32_t e = 0; e < s.nt; e++) cr_assert_eq(seen[e], 1, "tet %d is in %d leaves", e, seen[e]);
  cr_assert_eq(bvh.nnodes, 2 * leaves - 1, "%d nodes for %d leaves", bvh.nnodes, leaves);
  cr_assert(ce_bvh_bytes(&bvh) >= (size_t)bvh.nnodes * sizeof(ce_bvh_node));
  free(seen);
  ce_bvh_free(&bvh);
  cr_assert_eq(bvh.nodes, NULL);
  free_soup(&s);
}

Test(bvh, collide_has_no_false_negatives_for_random_poses) {
  soup sa = make_soup(250, 0.25, 1), sb = make_soup(200, 0.3, 2);
  ce_bvh ba, bb;
  cr_assert_eq(ce_bvh_build(&ba, sa.nt, 4, &sa.t[0][0], sa.v, sa.p, NULL, NULL), CE_OK);
  cr_assert_eq(ce_bvh_build(&bb, sb.nt, 4, &sb.t[0][0], sb.v, sb.p, NULL, NULL), CE_OK);
  ce_arena *arena = ce_arena_create(1 << 16);
  uint64_t st = 99;
  int64_t total_true = 0, total_reported = 0;
  for (int trial = 0; trial < 12; trial++) {
    ce_pose X = ce_pose_from_quat(ce_test_rand_quat(&st),
                                  ce_v3(ce_test_rand(&st) - 0.5, ce_test_rand(&st) - 0.5, ce_test_rand(&st) - 0.5));
    for (int use_p = 0; use_p <= 1; use_p++) {
      ce_arena_reset(arena);
      ce_buf out;
      ce_buf_init(&out, sizeof(ce_pair));
      cr_assert_eq(ce_bvh_collide(&ba, &bb, &X, use_p, arena, &out), CE_OK);
      total_reported += out.len;
      /* No duplicates. */
      ce_pair *cp = malloc(sizeof(ce_pair) * (size_t)(out.len + 1));
      memcpy(cp, out.data, sizeof(ce_pair) * (size_t)out.len);
      qsort(cp, (size_t)out.len, sizeof(ce_pair), cmp_pair);
      for (int64_t i = 1; i < out.len; i++) cr_assert(cmp_pair(&cp[i - 1], &cp[i]) != 0, "duplicate pair");
      free(cp);
      for (int32_t i = 0; i < sa.nt; i++) {
        ce_vec3 xa[4];
        double pa_lo = INFINITY, pa_hi = -INFINITY;
        for (int j = 0; j < 4; j++) {
          xa[j] = sa.v[sa.t[i][j]];
          pa_lo = fmin(pa_lo, sa.p[sa.t[i][j]]);
          pa_hi = fmax(pa_hi, sa.p[sa.t[i][j]]);
        }
        for (int32_t k = 0; k < sb.nt; k++) {
          ce_vec3 xb[4];
          double pb_lo = INFINITY, pb_hi = -INFINITY;
          for (int j = 0; j < 4; j++) {
            xb[j] = ce_pose_apply(&X, sb.v[sb.t[k][j]]);
            pb_lo = fmin(pb_lo, sb.p[sb.t[k][j]]);
            pb_hi = fmax(pb_hi, sb.p[sb.t[k][j]]);
          }
          if (!tets_overlap(xa, xb)) continue;
          if (use_p && (pa_hi < pb_lo || pb_hi < pa_lo)) continue;
          /* With pressures the tree may also prune pairs without an
           * equal-pressure point; require a report only when samples of
           * the common volume show p_A - p_B taking both signs. */
          if (use_p && !equal_pressure_inside(xa, &sa.p[4 * i], xb, &sb.p[4 * k])) continue;
          total_true++;
          cr_assert(has_pair(&out, i, k), "trial %d use_p %d: overlapping tets (%d, %d) not reported", trial,
                    use_p, i, k);
        }
      }
    }
  }
  /* The test must exercise real overlaps and the tree must prune. */
  cr_assert(total_true > 100, "only %lld overlapping pairs", (long long)total_true);
  cr_assert(total_reported < 24LL * sa.nt * sb.nt / 10, "pruning too weak: %lld", (long long)total_reported);
  ce_arena_destroy(arena);
  ce_bvh_free(&ba);
  ce_bvh_free(&bb);
  free_soup(&sa);
  free_soup(&sb);
}

Test(bvh, touching_tets_are_reported) {
  /* Two unit tets sharing exactly one face under a rotation + translation. */
  ce_vec3 va[4] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  ce_vec3 vb[4] = {{0, 0, 0}, {1, 0, 0}, {0, 0, -1}, {0, 1, 0}};
  int32_t t[1][4] = {{0, 1, 2, 3}};
  ce_bvh ba, bb;
  cr_assert_eq(ce_bvh_build(&ba, 1, 4, &t[0][0], va, NULL, NULL, NULL), CE_OK);
  cr_assert_eq(ce_bvh_build(&bb, 1, 4, &t[0][0], vb, NULL, NULL, NULL), CE_OK);
  ce_arena *arena = ce_arena_create(4096);
  ce_pose X = ce_pose_identity();
  ce_buf out;
  ce_buf_init(&out, sizeof(ce_pair));
  cr_assert_eq(ce_bvh_collide(&ba, &bb, &X, 0, arena, &out), CE_OK);
  cr_assert_eq(out.len, 1);
  /* Move B 1e-3 away along -z: separated. */
  X.p = ce_v3(0, 0, -1e-3);
  ce_buf_init(&out, sizeof(ce_pair));
  cr_assert_eq(ce_bvh_collide(&ba, &bb, &X, 0, arena, &out), CE_OK);
  cr_assert_eq(out.len, 0);
  ce_arena_destroy(arena);
  ce_bvh_free(&ba);
  ce_bvh_free(&bb);
}

Test(bvh, pressure_ranges_prune) {
  ce_vec3 va[4] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  int32_t t[1][4] = {{0, 1, 2, 3}};
  /* pb: ranges disjoint. pc: ranges overlap but p_c = p_a + 1 everywhere, no
   * equal-pressure point (pruned by the slab). pd: p_a - p_d changes sign. */
  double pa[4] = {0, 1, 2, 3}, pb[4] = {3.5, 4, 5, 6}, pc[4] = {1, 2, 3, 4}, pd[4] = {3, 2, 1, 0};
  ce_bvh ba, bb, bc, bd;
  cr_assert_eq(ce_bvh_build(&bd, 1, 4, &t[0][0], va, pd, NULL, NULL), CE_OK);
  cr_assert_eq(ce_bvh_build(&ba, 1, 4, &t[0][0], va, pa, NULL, NULL), CE_OK);
  cr_assert_eq(ce_bvh_build(&bb, 1, 4, &t[0][0], va, pb, NULL, NULL), CE_OK);
  cr_assert_eq(ce_bvh_build(&bc, 1, 4, &t[0][0], va, pc, NULL, NULL), CE_OK);
  cr_assert_eq(ba.nodes[0].pmin, 0);
  cr_assert_eq(ba.nodes[0].pmax, 3);
  ce_arena *arena = ce_arena_create(4096);
  ce_pose X = ce_pose_identity();
  ce_buf out;
  ce_buf_init(&out, sizeof(ce_pair));
  cr_assert_eq(ce_bvh_collide(&ba, &bb, &X, 1, arena, &out), CE_OK);
  cr_assert_eq(out.len, 0);
  cr_assert_eq(ce_bvh_collide(&ba, &bb, &X, 0, arena, &out), CE_OK);
  cr_assert_eq(out.len, 1);
  cr_assert_eq(ce_bvh_collide(&ba, &bc, &X, 1, arena, &out), CE_OK);
  cr_assert_eq(out.len, 1, "parallel fields 1 Pa apart must be pruned");
  cr_assert_eq(ce_bvh_collide(&ba, &bd, &X, 1, arena, &out), CE_OK);
  cr_assert_eq(out.len, 2, "crossing fields must not be pruned");
  /* p_a = x + 2 y + 3 z exactly: the node's linear bound is that field. */
  cr_assert(ba.field != NULL && bb.field != NULL);
  cr_assert(fabs(ba.field[0][0] - 1) < 1e-12 && fabs(ba.field[0][1] - 2) < 1e-12 && fabs(ba.field[0][2] - 3) < 1e-12);
  cr_assert(fabs(ba.field[0][3]) < 1e-12 && fabs(ba.field[0][4]) < 1e-8, "offset %g dev %g", ba.field[0][3],
            ba.field[0][4]);
  ce_arena_destroy(arena);
  ce_bvh_free(&bd);
  ce_bvh_free(&ba);
  ce_bvh_free(&bb);
  ce_bvh_free(&bc);
}

Test(bvh, plane_queries_have_no_false_negatives) {
  soup s = make_soup(400, 0.2, 5);
  ce_bvh bvh;
  cr_assert_eq(ce_bvh_build(&bvh, s.nt, 4, &s.t[0][0], s.v, NULL, NULL, NULL), CE_OK);
  ce_arena *arena = ce_arena_create(1 << 14);
  uint64_t st = 3;
  for (int trial = 0; trial < 20; trial++) {
    ce_vec3 n = ce_quat_rotate(ce_test_rand_quat(&st), ce_v3(0, 0, 1));
    double d = 1.2 * (ce_test_rand(&st) - 0.5);
    for (int plane_only = 0; plane_only <= 1; plane_only++) {
      ce_arena_reset(arena);
      ce_buf out;
      ce_buf_init(&out, sizeof(int32_t));
      cr_assert_eq(ce_bvh_collide_plane(&bvh, n, d, plane_only, arena, &out), CE_OK);
      char *mark = calloc((size_t)s.nt, 1);
      for (int64_t i = 0; i < out.len; i++) {
        int32_t e = ((int32_t *)out.data)[i];
        cr_assert(e >= 0 && e < s.nt);
        cr_assert_eq(mark[e], 0, "tet %d reported twice", e);
        mark[e] = 1;
      }
      int64_t expected = 0;
      for (int32_t e = 0; e < s.nt; e++) {
        double lo = INFINITY, hi = -INFINITY;
        for (int j = 0; j < 4; j++) {
          double q = ce_dot(n, s.v[s.t[e][j]]) - d;
          lo = fmin(lo, q);
          hi = fmax(hi, q);
        }
        int meets = plane_only ? (lo <= 0 && hi >= 0) : (lo <= 0);
        if (meets) {
          expected++;
          cr_assert(mark[e], "trial %d plane_only %d: tet %d missed", trial, plane_only, e);
        }
      }
      cr_assert(expected > 0);
      /* Pruning: a plane query returns far fewer than all tets. */
      if (plane_only) cr_assert(out.len < s.nt / 2, "plane query returned %lld", (long long)out.len);
      free(mark);
    }
  }
  ce_arena_destroy(arena);
  ce_bvh_free(&bvh);
  free_soup(&s);
}

Test(bvh, output_is_deterministic_across_builds) {
  soup sa = make_soup(300, 0.25, 7), sb = make_soup(300, 0.25, 8);
  ce_arena *arena = ce_arena_create(1 << 16);
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(1, 2, 3), 0.7), ce_v3(0.3, 0.1, -0.2));
  ce_pair *first = NULL;
  int64_t first_len = 0;
  for (int rep = 0; rep < 3; rep++) {
    ce_bvh ba, bb;
    cr_assert_eq(ce_bvh_build(&ba, sa.nt, 4, &sa.t[0][0], sa.v, sa.p, NULL, NULL), CE_OK);
    cr_assert_eq(ce_bvh_build(&bb, sb.nt, 4, &sb.t[0][0], sb.v, sb.p, NULL, NULL), CE_OK);
    ce_arena_reset(arena);
    ce_buf out;
    ce_buf_init(&out, sizeof(ce_pair));
    cr_assert_eq(ce_bvh_collide(&ba, &bb, &X, 1, arena, &out), CE_OK);
    cr_assert(out.len > 0);
    if (rep == 0) {
      first_len = out.len;
      first = malloc(sizeof(ce_pair) * (size_t)out.len);
      memcpy(first, out.data, sizeof(ce_pair) * (size_t)out.len);
    } else {
      cr_assert_eq(out.len, first_len);
      cr_assert(memcmp(first, out.data, sizeof(ce_pair) * (size_t)out.len) == 0, "order differs on rebuild %d", rep);
    }
    ce_bvh_free(&ba);
    ce_bvh_free(&bb);
  }
  free(first);
  ce_arena_destroy(arena);
  free_soup(&sa);
  free_soup(&sb);
}

Test(bvh, triangle_leaves_and_empty_trees) {
  /* Triangles in a strip. */
  enum { NT = 50 };
  ce_vec3 v[NT + 2];
  int32_t tri[NT][3];
  for (int i = 0; i < NT + 2; i++) v[i] = ce_v3(0.1 * (i / 2), (i % 2) ? 0.1 : 0, 0);
  for (int i = 0; i < NT; i++) {
    tri[i][0] = i;
    tri[i][1] = i + 1;
    tri[i][2] = i + 2;
  }
  ce_bvh b, e;
  cr_assert_eq(ce_bvh_build(&b, NT, 3, &tri[0][0], v, NULL, NULL, NULL), CE_OK);
  cr_assert_eq(ce_bvh_build(&e, 0, 3, NULL, NULL, NULL, NULL, NULL), CE_OK);
  cr_assert_eq(e.nnodes, 0);
  ce_arena *arena = ce_arena_create(4096);
  ce_buf out;
  ce_buf_init(&out, sizeof(int32_t));
  /* Plane x = 1.05 crosses triangles whose x-range contains it. */
  cr_assert_eq(ce_bvh_collide_plane(&b, ce_v3(1, 0, 0), 1.05, 1, arena, &out), CE_OK);
  int found = 0;
  for (int64_t i = 0; i < out.len; i++) {
    int32_t t = ((int32_t *)out.data)[i];
    double lo = fmin(v[t].x, fmin(v[t + 1].x, v[t + 2].x)), hi = fmax(v[t].x, fmax(v[t + 1].x, v[t + 2].x));
    if (lo <= 1.05 && hi >= 1.05) found++;
  }
  cr_assert_eq(found, 2, "triangles 20 and 21 straddle x = 1.05, found %d", found);
  ce_buf pairs;
  ce_buf_init(&pairs, sizeof(ce_pair));
  ce_pose X = ce_pose_identity();
  cr_assert_eq(ce_bvh_collide(&b, &e, &X, 0, arena, &pairs), CE_OK);
  cr_assert_eq(pairs.len, 0);
  ce_arena_destroy(arena);
  ce_bvh_free(&b);
  ce_bvh_free(&e);
}

/* Whether segment p-q meets triangle t: where it crosses t's plane, the
 * point lies within slack (a distance) of the triangle, edge by edge. A
 * segment lying in the plane counts as meeting. */
static int segment_meets_triangle(ce_vec3 p, ce_vec3 q, const ce_vec3 t[3], double slack) {
  ce_vec3 n = ce_cross(ce_sub(t[1], t[0]), ce_sub(t[2], t[0]));
  double dp = ce_dot(n, ce_sub(p, t[0])), dq = ce_dot(n, ce_sub(q, t[0]));
  double ln = ce_norm(n), sp = slack * ln;
  if ((dp > sp && dq > sp) || (dp < -sp && dq < -sp)) return 0;
  if (dp == dq) { /* parallel: in the plane (within slack), clip p-q by the three edges */
    if (fabs(dp) > sp) return 0;
    double lo = 0, hi = 1;
    for (int k = 0; k < 3; k++) {
      ce_vec3 e = ce_sub(t[(k + 1) % 3], t[k]), m = ce_cross(n, e); /* inward in the plane */
      double lm = ce_norm(m), f0 = ce_dot(m, ce_sub(p, t[k])) + slack * lm, df = ce_dot(m, ce_sub(q, p));
      if (df == 0) {
        if (f0 < 0) return 0;
      } else if (df > 0) {
        lo = fmax(lo, -f0 / df);
      } else {
        hi = fmin(hi, -f0 / df);
      }
    }
    return lo <= hi;
  }
  double u = dp / (dp - dq);
  u = u < 0 ? 0 : (u > 1 ? 1 : u);
  ce_vec3 x = ce_axpy(p, u, ce_sub(q, p));
  for (int k = 0; k < 3; k++) {
    ce_vec3 e = ce_sub(t[(k + 1) % 3], t[k]);
    if (ce_dot(n, ce_cross(e, ce_sub(x, t[k]))) < -slack * ln * ce_norm(e)) return 0;
  }
  return 1;
}

/* Whether boundary triangle fa of ga and fb of gb (placed by X) meet,
 * decided independently of the Moller test under test: two triangles meet
 * when an edge of one meets the other (the ends of their common segment
 * lie on edges). slack: distance allowed (0 = exact meeting). */
static int seed_tris_meet(const ce_geometry *ga, const ce_geometry *gb, const ce_pose *X, int32_t fa, int32_t fb,
                          double slack) {
  const int32_t *ia = ga->bvh.bnd_face[fa], *ib = gb->bvh.bnd_face[fb];
  ce_vec3 x[3], y[3];
  for (int k = 0; k < 3; k++) {
    x[k] = ga->tet.v[ia[k]];
    y[k] = ce_pose_apply(X, gb->tet.v[ib[k]]);
  }
  for (int k = 0; k < 3; k++)
    if (segment_meets_triangle(x[k], x[(k + 1) % 3], y, slack) ||
        segment_meets_triangle(y[k], y[(k + 1) % 3], x, slack))
      return 1;
  return 0;
}

/* Whether the two triangles lie in one plane (within slack): the seeds
 * keep such pairs whether or not they overlap (the tracer sorts them out). */
static int seed_tris_coplanar(const ce_geometry *ga, const ce_geometry *gb, const ce_pose *X, int32_t fa,
                              int32_t fb, double slack) {
  const int32_t *ia = ga->bvh.bnd_face[fa], *ib = gb->bvh.bnd_face[fb];
  ce_vec3 x[3], y[3];
  for (int k = 0; k < 3; k++) {
    x[k] = ga->tet.v[ia[k]];
    y[k] = ce_pose_apply(X, gb->tet.v[ib[k]]);
  }
  ce_vec3 n = ce_normalize(ce_cross(ce_sub(x[1], x[0]), ce_sub(x[2], x[0])));
  for (int k = 0; k < 3; k++)
    if (fabs(ce_dot(n, ce_sub(y[k], x[0]))) > slack) return 0;
  return 1;
}

Test(bvh, surface_seeds_cover_collide_pairs_whose_triangles_meet) {
  ce_shape sh[3];
  memset(sh, 0, sizeof sh);
  sh[0].type = CE_SHAPE_SPHERE;
  sh[0].radius = 0.1;
  sh[1].type = CE_SHAPE_BOX;
  sh[1].size = ce_v3(0.2, 0.15, 0.1);
  sh[2].type = CE_SHAPE_CAPSULE;
  sh[2].radius = 0.06;
  sh[2].length = 0.15;
  ce_props pr;
  memset(&pr, 0, sizeof pr);
  pr.compliance = CE_COMPLIANT;
  pr.modulus = 1e6;
  pr.hint = 0.03;
  ce_geometry *g[3];
  for (int i = 0; i < 3; i++) cr_assert_eq(ce_geometry_from_shape(&sh[i], &pr, &g[i], NULL), CE_OK);
  ce_arena *arena = ce_arena_create(1 << 20);
  uint64_t st = 11;
  int64_t total = 0, total_collide = 0;
  for (int a = 0; a < 3; a++)
    for (int b = 0; b < 3; b++)
      for (int it = 0; it < 12; it++) {
        ce_vec3 dir = ce_normalize(ce_v3(ce_test_rand(&st) - 0.5, ce_test_rand(&st) - 0.5, ce_test_rand(&st) - 0.5));
        ce_pose X = ce_pose_from_quat(ce_test_rand_quat(&st), ce_scale(dir, 0.05 + 0.2 * ce_test_rand(&st)));
        if (it == 0) X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 0, 1), 0), ce_v3(0.15, 0, 0)); /* aligned */
        const ce_bvh *A = g[a]->bvh.bnd, *B = g[b]->bvh.bnd;
        ce_arena_reset(arena);
        ce_buf ref, out, again;
        ce_buf_init(&ref, sizeof(ce_pair));
        ce_buf_init(&out, sizeof(ce_pair));
        ce_buf_init(&again, sizeof(ce_pair));
        cr_assert_eq(ce_bvh_collide(A, B, &X, 0, arena, &ref), CE_OK);
        cr_assert_eq(ce_bvh_collide_surfaces(A, B, &X, arena, &out), CE_OK);
        cr_assert_eq(ce_bvh_collide_surfaces(A, B, &X, arena, &again), CE_OK);
        cr_assert_eq(out.len, again.len);
        cr_assert(out.len == 0 || memcmp(out.data, again.data, sizeof(ce_pair) * (size_t)out.len) == 0,
                  "not deterministic (shapes %d %d, pose %d)", a, b, it);
        /* Every pair it returns meets or lies in one plane (up to a margin far
         * above rounding). */
        for (int64_t i = 0; i < out.len; i++) {
          ce_pair p = ((ce_pair *)out.data)[i];
          cr_assert(seed_tris_meet(g[a], g[b], &X, p.a, p.b, 1e-9) || seed_tris_coplanar(g[a], g[b], &X, p.a, p.b, 1e-9),
                    "pair %d %d cannot meet", p.a, p.b);
        }
        if (out.len > 0) qsort(out.data, (size_t)out.len, sizeof(ce_pair), cmp_pair);
        for (int64_t i = 0; i < ref.len; i++) {
          ce_pair p = ((ce_pair *)ref.data)[i];
          if (!seed_tris_meet(g[a], g[b], &X, p.a, p.b, 0)) continue;
          total_collide++;
          cr_assert(out.len > 0 && bsearch(&p, out.data, (size_t)out.len, sizeof(ce_pair), cmp_pair) != NULL,
                    "collide pair %d %d (meeting) missing (shapes %d %d, pose %d)", p.a, p.b, a, b, it);
        }
        total += out.len;
      }
  cr_assert(total_collide > 100 && total >= total_collide, "too few meeting pairs: %lld of %lld",
            (long long)total_collide, (long long)total);
  ce_arena_destroy(arena);
  for (int i = 0; i < 3; i++) ce_geometry_free(g[i]);
}

/* Geometry builds hand the tet hierarchy the boundary faces they already
 * found (ce_bvh_build_tets); given in any order, they must give the same
 * boundary hierarchy as sorting every face of every tet (ce_bvh_build). */
Test(bvh, listed_boundary_faces_give_the_sorted_hierarchy) {
  /* a 3x3x3 Kuhn grid: 648 tets sharing faces, with a pressure field */
  double *xv;
  int32_t *tv, nv, nt;
  ce_test_kuhn_cube(3, 0, 1, &xv, &nv, &tv, &nt);
  ce_tetmesh m = {.nv = nv, .nt = nt, .v = malloc(sizeof(ce_vec3) * (size_t)nv), .tet = (int32_t(*)[4])tv};
  double *p = malloc(sizeof(double) * (size_t)nv);
  for (int32_t i = 0; i < nv; i++) {
    m.v[i] = ce_v3(xv[3 * i], xv[3 * i + 1], xv[3 * i + 2]);
    p[i] = m.v[i].x * m.v[i].y * m.v[i].z;
  }
  /* its boundary faces, (tet, k) without a neighbour */
  ce_test_tet_adjacency(&m);
  int32_t(*bf)[2] = malloc(sizeof(int32_t[2]) * (size_t)nt * 4);
  int64_t nb = 0;
  for (int32_t t = 0; t < nt; t++)
    for (int k = 0; k < 4; k++)
      if (m.adj[t][k] < 0) {
        bf[nb][0] = t;
        bf[nb][1] = k;
        nb++;
      }
  cr_assert_eq(nb, 6 * 9 * 2, "a 3x3x3 grid's boundary has 108 triangles, found %lld", (long long)nb);
  for (int64_t i = 0; i < nb / 2; i++) { /* reversed: the order must not matter */
    int32_t w0 = bf[i][0], w1 = bf[i][1];
    bf[i][0] = bf[nb - 1 - i][0];
    bf[i][1] = bf[nb - 1 - i][1];
    bf[nb - 1 - i][0] = w0;
    bf[nb - 1 - i][1] = w1;
  }
  ce_bvh a, b;
  cr_assert_eq(ce_bvh_build(&a, nt, 4, tv, m.v, p, NULL, NULL), CE_OK);
  cr_assert_eq(ce_bvh_build_tets(&b, nt, tv, m.v, p, (const int32_t(*)[2])bf, nb, NULL, NULL), CE_OK);
  cr_assert_eq(a.nnodes, b.nnodes);
  cr_assert_eq(memcmp(a.nodes, b.nodes, sizeof(ce_bvh_node) * (size_t)a.nnodes), 0, "tet hierarchies differ");
  cr_assert(a.bnd && b.bnd);
  cr_assert_eq(a.bnd->nelem, nb);
  cr_assert_eq(b.bnd->nelem, nb);
  cr_assert_eq(memcmp(a.bnd_face, b.bnd_face, sizeof(int32_t[3]) * (size_t)nb), 0, "boundary faces differ");
  cr_assert_eq(memcmp(a.bnd_tet, b.bnd_tet, sizeof(int32_t) * (size_t)nb), 0, "boundary tets differ");
  cr_assert_eq(memcmp(a.bnd->nodes, b.bnd->nodes, sizeof(ce_bvh_node) * (size_t)a.bnd->nnodes), 0,
               "boundary hierarchies differ");
  ce_bvh_free(&a);
  ce_bvh_free(&b);
  free(bf);
  free(m.adj);
  free(m.v);
  free(p);
  free(xv);
  free(tv);
}
