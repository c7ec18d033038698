/* test_intersect_cc.c — compliant–compliant equal-pressure polygons: a
 * hand-computed single-tet pair, the gradient-direction rule, role swap,
 * and geometric invariants on random tet pairs. Geometries are filled by
 * hand here so the test depends only on the BVH and the surface builder. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

/* Gradient and offset of the linear field with values p[k] at x[k]. */
static ce_vec3 lin_field(const ce_vec3 x[4], const double p[4], double *off) {
  ce_vec3 e1 = ce_sub(x[1], x[0]), e2 = ce_sub(x[2], x[0]), e3 = ce_sub(x[3], x[0]);
  double d1 = p[1] - p[0], d2 = p[2] - p[0], d3 = p[3] - p[0];
  double det = ce_dot(e1, ce_cross(e2, e3));
  /* rows e_i . g = d_i  =>  g = (d1 (e2 x e3) + d2 (e3 x e1) + d3 (e1 x e2)) / det */
  ce_vec3 g = ce_scale(
      ce_add(ce_add(ce_scale(ce_cross(e2, e3), d1), ce_scale(ce_cross(e3, e1), d2)), ce_scale(ce_cross(e1, e2), d3)),
      1.0 / det);
  *off = p[0] - ce_dot(g, x[0]);
  return g;
}

/* A compliant geometry over nt tets; copies the arrays. */
static ce_geometry *make_geom(const ce_vec3 *v, int32_t nv, const int32_t (*tets)[4], int32_t nt, const double *p) {
  ce_geometry *g = calloc(1, sizeof *g);
  g->shape = CE_SHAPE_TETMESH;
  g->compliance = CE_COMPLIANT;
  g->modulus = 1e5;
  ce_tetmesh *T = &g->tet;
  T->nv = nv;
  T->nt = nt;
  T->v = malloc(sizeof(ce_vec3) * (size_t)nv);
  T->p = malloc(sizeof(double) * (size_t)nv);
  T->tet = malloc(sizeof(int32_t[4]) * (size_t)nt);
  T->grad = malloc(sizeof(ce_vec3) * (size_t)nt);
  T->offset = malloc(sizeof(double) * (size_t)nt);
  T->prange = malloc(sizeof(double[2]) * (size_t)nt);
  T->fplane = malloc(sizeof(double[4][4]) * (size_t)nt);
  memcpy(T->v, v, sizeof(ce_vec3) * (size_t)nv);
  memcpy(T->p, p, sizeof(double) * (size_t)nv);
  memcpy(T->tet, tets, sizeof(int32_t[4]) * (size_t)nt);
  double scale = 0;
  for (int32_t i = 0; i < nv; i++) scale = fmax(scale, ce_norm(v[i]));
  g->scale = scale;
  for (int32_t i = 0; i < nt; i++) {
    ce_vec3 x[4];
    double q[4];
    T->prange[i][0] = INFINITY;
    T->prange[i][1] = -INFINITY;
    for (int k = 0; k < 4; k++) {
      x[k] = v[tets[i][k]];
      q[k] = p[tets[i][k]];
      T->prange[i][0] = fmin(T->prange[i][0], q[k]);
      T->prange[i][1] = fmax(T->prange[i][1], q[k]);
    }
    cr_assert(ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0]))) > 0,
              "test tet %d must be positively oriented", i);
    T->grad[i] = lin_field(x, q, &T->offset[i]);
    ce_tet_face_planes(x, T->fplane[i]);
  }
  cr_assert_eq(ce_bvh_build(&g->bvh, nt, 4, &T->tet[0][0], T->v, T->p, NULL, NULL), CE_OK);
  return g;
}

static void free_geom(ce_geometry *g) {
  ce_bvh_free(&g->bvh);
  free(g->tet.v);
  free(g->tet.p);
  free(g->tet.tet);
  free(g->tet.grad);
  free(g->tet.offset);
  free(g->tet.prange);
  free(g->tet.fplane);
  free(g->tet.adj);
  free(g);
}

static ce_vec3 vtx(const ce_builder *b, int32_t f, int k) {
  const int32_t *off = b->face_off.data, *fv = b->face_vert.data;
  return ((const ce_vec3 *)b->v.data)[fv[off[f] + k]];
}
static double prs(const ce_builder *b, int32_t f, int k) {
  const int32_t *off = b->face_off.data, *fv = b->face_vert.data;
  return ((const double *)b->p.data)[fv[off[f] + k]];
}
static int nverts(const ce_builder *b, int32_t f) {
  const int32_t *off = b->face_off.data;
  return off[f + 1] - off[f];
}
static ce_vec3 face_normal(const ce_builder *b, int32_t f) { return ((const ce_vec3 *)b->normal.data)[f]; }
static int64_t nfaces(const ce_builder *b) { return b->normal.len; }

/* Area of face f about its normal (positive when counter-clockwise). */
static double face_area(const ce_builder *b, int32_t f) {
  int n = nverts(b, f);
  ce_vec3 s = ce_v3(0, 0, 0), x0 = vtx(b, f, 0);
  for (int k = 1; k + 1 < n; k++) s = ce_add(s, ce_cross(ce_sub(vtx(b, f, k), x0), ce_sub(vtx(b, f, k + 1), x0)));
  return 0.5 * ce_dot(s, face_normal(b, f));
}

/* M: unit corner tet, p_M = 2e5 z + 1e5 x. N (own frame): the same tet
 * turned upside down with apex at the origin, p_N = 2e5 (1 - z) + 1e5 x. */
static const ce_vec3 VM[4] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
static const double PM[4] = {0, 1e5, 0, 2e5};
static const ce_vec3 VN[4] = {{0, 0, 1}, {0, 1, 1}, {1, 0, 1}, {0, 0, 0}};
static const double PN[4] = {0, 0, 1e5, 2e5};
static const int32_t T1[1][4] = {{0, 1, 2, 3}};

Test(intersect_cc, hand_computed_polygon) {
  ce_geometry *m = make_geom(VM, 4, T1, 1, PM), *n = make_geom(VN, 4, T1, 1, PN);
  ce_arena *arena = ce_arena_create(1 << 14);
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  ce_counters c = {0, 0, 0};
  /* N shifted by (0.2, 0.1, 0): in M's frame p_N = 2e5 (1 - z) + 1e5 (x - 0.2).
   * Equal pressure: 4e5 z = 1.8e5, the plane z = 0.45, normal +z. M's section
   * is x, y >= 0, x + y <= 0.55; N's is x >= 0.2, y >= 0.1, x + y <= 0.75.
   * The polygon: triangle (0.2, 0.1), (0.45, 0.1), (0.2, 0.35) at z = 0.45,
   * area 0.25^2 / 2 = 0.03125, pressures 1.1e5, 1.35e5, 1.1e5. */
  ce_pose X = ce_pose_identity();
  X.p = ce_v3(0.2, 0.1, 0);
  ce_errno e0 = ce_intersect_tet_tet(m, n, &X, &b, &c);
  cr_assert_eq(e0, CE_OK, "%s", ce_errname(e0));
  cr_assert_eq(c.candidate_pairs, 1);
  cr_assert_eq(c.polygons, 1);
  cr_assert_eq(c.faces_dropped, 0);
  cr_assert_eq(nfaces(&b), 1);
  cr_assert_eq(nverts(&b, 0), 3);
  ce_vec3 nr = face_normal(&b, 0);
  cr_assert(fabs(nr.x) < 1e-15 && fabs(nr.y) < 1e-15 && fabs(nr.z - 1) < 1e-15);
  cr_assert(fabs(face_area(&b, 0) - 0.03125) < 1e-12, "area %.17g", face_area(&b, 0));
  const ce_vec3 want[3] = {{0.2, 0.1, 0.45}, {0.45, 0.1, 0.45}, {0.2, 0.35, 0.45}};
  const double wantp[3] = {1.1e5, 1.35e5, 1.1e5};
  for (int w = 0; w < 3; w++) {
    int found = 0;
    for (int k = 0; k < 3; k++) {
      if (ce_norm(ce_sub(vtx(&b, 0, k), want[w])) < 1e-12) {
        found++;
        cr_assert(fabs(prs(&b, 0, k) - wantp[w]) < 1e-12 * 1e5, "pressure %.17g want %g", prs(&b, 0, k), wantp[w]);
      }
    }
    cr_assert_eq(found, 1, "vertex %d (%g %g %g) found %d times", w, want[w].x, want[w].y, want[w].z, found);
  }
  /* Gradients are reported in M's frame. */
  ce_vec3 gm = ((ce_vec3 *)b.grad_m.data)[0], gn = ((ce_vec3 *)b.grad_n.data)[0];
  cr_assert(ce_norm(ce_sub(gm, ce_v3(1e5, 0, 2e5))) < 1e-9);
  cr_assert(ce_norm(ce_sub(gn, ce_v3(1e5, 0, -2e5))) < 1e-9);
  cr_assert_eq(((int32_t *)b.elem_m.data)[0], 0);
  cr_assert_eq(((int32_t *)b.elem_n.data)[0], 0);
  ce_arena_destroy(arena);
  free_geom(m);
  free_geom(n);
}

Test(intersect_cc, gradient_rule_drops_and_counts) {
  /* M: p = 2e5 z. N: the same tet shifted up by 0.25 with p = 4e5 z_N, i.e.
   * 4e5 (z - 0.25) in M's frame. Equal at z = 0.5, but gM - gN = -2e5 z:
   * the normal is -z while M's gradient is +z (angle pi > 5 pi / 8). */
  const double pm[4] = {0, 0, 0, 2e5}, pn[4] = {0, 0, 0, 4e5};
  ce_geometry *m = make_geom(VM, 4, T1, 1, pm), *n = make_geom(VM, 4, T1, 1, pn);
  ce_arena *arena = ce_arena_create(1 << 14);
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  ce_counters c = {0, 0, 0};
  ce_pose X = ce_pose_identity();
  X.p = ce_v3(0.05, 0.05, 0.25);
  cr_assert_eq(ce_intersect_tet_tet(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.candidate_pairs, 1);
  cr_assert_eq(c.polygons, 0);
  cr_assert_eq(c.faces_dropped, 1);
  cr_assert_eq(nfaces(&b), 0);
  ce_arena_destroy(arena);
  free_geom(m);
  free_geom(n);
}

Test(intersect_cc, disjoint_pressure_ranges_and_missing_plane_give_nothing) {
  const double pm[4] = {0, 0, 0, 1e5}, pn[4] = {2e5, 2e5, 2e5, 3e5};
  ce_geometry *m = make_geom(VM, 4, T1, 1, pm), *n = make_geom(VM, 4, T1, 1, pn);
  ce_arena *arena = ce_arena_create(1 << 14);
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  ce_counters c = {0, 0, 0};
  ce_pose X = ce_pose_identity();
  cr_assert_eq(ce_intersect_tet_tet(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.candidate_pairs, 0, "the BVH prunes disjoint pressure ranges");
  cr_assert_eq(c.polygons, 0);
  /* Far apart: no candidates at all. */
  ce_geometry *n2 = make_geom(VN, 4, T1, 1, PN);
  X.p = ce_v3(5, 0, 0);
  cr_assert_eq(ce_intersect_tet_tet(m, n2, &X, &b, &c), CE_OK);
  cr_assert_eq(c.candidate_pairs, 0);
  cr_assert_eq(nfaces(&b), 0);
  ce_arena_destroy(arena);
  free_geom(m);
  free_geom(n);
  free_geom(n2);
}

Test(intersect_cc, swapping_roles_flips_normal_keeps_area) {
  ce_geometry *m = make_geom(VM, 4, T1, 1, PM), *n = make_geom(VN, 4, T1, 1, PN);
  ce_arena *arena = ce_arena_create(1 << 14);
  uint64_t st = 17;
  int tested = 0;
  for (int trial = 0; trial < 50; trial++) {
    ce_quat q = ce_quat_normalize((ce_quat){1, 0.3 * (ce_test_rand(&st) - 0.5), 0.3 * (ce_test_rand(&st) - 0.5),
                                            0.3 * (ce_test_rand(&st) - 0.5)});
    ce_pose X = ce_pose_from_quat(q, ce_v3(0.3 * ce_test_rand(&st), 0.3 * ce_test_rand(&st), 0.2 * (ce_test_rand(&st) - 0.5)));
    ce_pose Xi = ce_pose_inverse(&X);
    ce_arena_reset(arena);
    ce_builder b1, b2;
    cr_assert_eq(ce_builder_init(&b1, arena), CE_OK);
    cr_assert_eq(ce_builder_init(&b2, arena), CE_OK);
    ce_counters c1 = {0, 0, 0}, c2 = {0, 0, 0};
    cr_assert_eq(ce_intersect_tet_tet(m, n, &X, &b1, &c1), CE_OK);
    cr_assert_eq(ce_intersect_tet_tet(n, m, &Xi, &b2, &c2), CE_OK);
    cr_assert_eq(nfaces(&b1), nfaces(&b2), "trial %d", trial);
    if (nfaces(&b1) == 0) continue;
    tested++;
    double a1 = face_area(&b1, 0), a2 = face_area(&b2, 0);
    cr_assert(a1 > 0);
    cr_assert(fabs(a1 - a2) < 1e-12, "trial %d: area %.17g vs %.17g", trial, a1, a2);
    /* b2's normal is in N's frame; rotate into M's. */
    ce_vec3 n1 = face_normal(&b1, 0), n2 = ce_pose_rotate(&X, face_normal(&b2, 0));
    cr_assert(ce_norm(ce_add(n1, n2)) < 1e-12, "normals not opposite");
    /* Same pressure at the (shared) centroid. */
    double p1 = 0, p2 = 0;
    for (int k = 0; k < nverts(&b1, 0); k++) p1 += prs(&b1, 0, k) / nverts(&b1, 0);
    for (int k = 0; k < nverts(&b2, 0); k++) p2 += prs(&b2, 0, k) / nverts(&b2, 0);
    cr_assert(fabs(a1 * p1 - a2 * p2) < 1e-9 * fabs(a1 * p1) + 1e-12 || nverts(&b1, 0) != nverts(&b2, 0));
  }
  cr_assert(tested >= 20, "only %d trials produced a polygon", tested);
  ce_arena_destroy(arena);
  free_geom(m);
  free_geom(n);
}

/* Random positively oriented tets with random nonnegative vertex pressures:
 * every polygon vertex lies on the equal-pressure plane, inside both tets;
 * polygons are convex and counter-clockwise about their normal; normals obey
 * the gradient rule; the vertex pressure is p_M. */
static double det4(const ce_vec3 y[4]) {
  return ce_dot(ce_sub(y[1], y[0]), ce_cross(ce_sub(y[2], y[0]), ce_sub(y[3], y[0])));
}
/* Smallest barycentric coordinate of x in tet y. */
static double bary_min(const ce_vec3 y[4], ce_vec3 x) {
  double vol = det4(y), lo = INFINITY;
  for (int k = 0; k < 4; k++) {
    ce_vec3 z[4] = {y[0], y[1], y[2], y[3]};
    z[k] = x;
    lo = fmin(lo, det4(z) / vol);
  }
  return lo;
}

Test(intersect_cc, random_pairs_satisfy_invariants) {
  uint64_t st = 2024;
  ce_arena *arena = ce_arena_create(1 << 14);
  int produced = 0, dropped = 0;
  for (int trial = 0; trial < 1500; trial++) {
    ce_vec3 a[4], bv[4];
    double pa[4], pb[4];
    for (int k = 0; k < 4; k++) {
      a[k] = ce_v3(ce_test_rand(&st), ce_test_rand(&st), ce_test_rand(&st));
      bv[k] = ce_v3(ce_test_rand(&st), ce_test_rand(&st), ce_test_rand(&st));
      pa[k] = 1e5 * ce_test_rand(&st);
      pb[k] = 1e5 * ce_test_rand(&st);
    }
    double va = ce_dot(ce_sub(a[1], a[0]), ce_cross(ce_sub(a[2], a[0]), ce_sub(a[3], a[0])));
    double vb = ce_dot(ce_sub(bv[1], bv[0]), ce_cross(ce_sub(bv[2], bv[0]), ce_sub(bv[3], bv[0])));
    if (fabs(va) < 1e-3 || fabs(vb) < 1e-3) continue;
    if (va < 0) { ce_vec3 t = a[1]; a[1] = a[2]; a[2] = t; double s = pa[1]; pa[1] = pa[2]; pa[2] = s; }
    if (vb < 0) { ce_vec3 t = bv[1]; bv[1] = bv[2]; bv[2] = t; double s = pb[1]; pb[1] = pb[2]; pb[2] = s; }
    ce_geometry *m = make_geom(a, 4, T1, 1, pa), *n = make_geom(bv, 4, T1, 1, pb);
    /* B's vertices are in [0,1]^3; rotate about the cube centre so the tets overlap. */
    ce_quat q = ce_test_rand_quat(&st);
    ce_vec3 ctr = ce_v3(0.5, 0.5, 0.5);
    ce_pose X = ce_pose_from_quat(q, ce_sub(ctr, ce_quat_rotate(q, ctr)));
    ce_arena_reset(arena);
    ce_builder b;
    cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
    ce_counters c = {0, 0, 0};
    cr_assert_eq(ce_intersect_tet_tet(m, n, &X, &b, &c), CE_OK);
    dropped += (int)c.faces_dropped;
    cr_assert_eq(c.polygons, nfaces(&b));
    ce_vec3 yn[4];
    for (int k = 0; k < 4; k++) yn[k] = ce_pose_apply(&X, bv[k]);
    ce_vec3 gM = m->tet.grad[0], gN = ce_pose_rotate(&X, n->tet.grad[0]);
    double cM = m->tet.offset[0], cN = n->tet.offset[0] - ce_dot(gN, X.p);
    for (int64_t f = 0; f < nfaces(&b); f++) {
      produced++;
      ce_vec3 nr = face_normal(&b, (int32_t)f);
      cr_assert(fabs(ce_norm(nr) - 1) < 1e-12);
      cr_assert(ce_dot(nr, gM) > CE_GRADIENT_COS_LIMIT * ce_norm(gM));
      cr_assert(-ce_dot(nr, gN) > CE_GRADIENT_COS_LIMIT * ce_norm(gN));
      int nvv = nverts(&b, (int32_t)f);
      cr_assert(nvv >= 3 && nvv <= 8);
      for (int k = 0; k < nvv; k++) {
        ce_vec3 x = vtx(&b, (int32_t)f, k);
        double pm = ce_dot(gM, x) + cM, pn = ce_dot(gN, x) + cN;
        cr_assert(fabs(pm - pn) < 1e-9 * 1e5, "trial %d: pM %g != pN %g", trial, pm, pn);
        cr_assert(fabs(prs(&b, (int32_t)f, k) - pm) < 1e-9 * 1e5);
        cr_assert(bary_min(a, x) > -1e-9, "trial %d: vertex outside M", trial);
        cr_assert(bary_min(yn, x) > -1e-9, "trial %d: vertex outside N", trial);
        /* Convex, CCW: every consecutive turn is positive about the normal. */
        ce_vec3 x1 = vtx(&b, (int32_t)f, (k + 1) % nvv), x2 = vtx(&b, (int32_t)f, (k + 2) % nvv);
        cr_assert(ce_dot(ce_cross(ce_sub(x1, x), ce_sub(x2, x1)), nr) > -1e-14, "trial %d: not convex CCW", trial);
      }
      cr_assert(face_area(&b, (int32_t)f) > 0);
    }
    free_geom(m);
    free_geom(n);
  }
  cr_assert(produced > 20, "only %d polygons", produced);
  cr_assert(dropped > 5, "only %d drops: the rule is not exercised", dropped);
  ce_arena_destroy(arena);
}

/* Unit cube as 6 Kuhn tets around the main diagonal, positively oriented. */
static void kuhn_cube(ce_vec3 v[8], int32_t t[6][4]) {
  for (int i = 0; i < 8; i++) v[i] = ce_v3(i & 1, (i >> 1) & 1, (i >> 2) & 1);
  static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int k = 0; k < 6; k++) {
    int a = 1 << perm[k][0], b = a | (1 << perm[k][1]);
    int32_t q[4] = {0, a, b, 7};
    ce_vec3 x[4] = {v[q[0]], v[q[1]], v[q[2]], v[q[3]]};
    if (ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0]))) < 0) {
      int32_t s = q[1];
      q[1] = q[2];
      q[2] = s;
    }
    memcpy(t[k], q, sizeof q);
  }
}

Test(intersect_cc, polygons_tile_the_section_of_two_tet_cubes) {
  /* p_M = 1e5 z, p_N = 1e5 (1 - z_N) with N shifted by (0.3, 0.2, 0) and
   * turned by 90 degrees about z around its centre: the surface is the
   * square [0.3, 1] x [0.2, 1] at z = 0.5, area 0.56, pressure 5e4. */
  ce_vec3 v[8];
  int32_t t[6][4];
  kuhn_cube(v, t);
  double pm[8], pn[8];
  for (int i = 0; i < 8; i++) {
    pm[i] = 1e5 * v[i].z;
    pn[i] = 1e5 * (1 - v[i].z);
  }
  ce_geometry *m = make_geom(v, 8, (const int32_t(*)[4])t, 6, pm), *n = make_geom(v, 8, (const int32_t(*)[4])t, 6, pn);
  ce_arena *arena = ce_arena_create(1 << 14);
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  ce_counters c = {0, 0, 0};
  /* Rotation by 90 deg about z maps the cube [0,1]^2 to [-1,0]x[0,1]; shift back. */
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 0, 1), M_PI / 2), ce_v3(1.3, 0.2, 0));
  cr_assert_eq(ce_intersect_tet_tet(m, n, &X, &b, &c), CE_OK);
  cr_assert(c.polygons >= 6, "%lld polygons", (long long)c.polygons);
  cr_assert_eq(c.faces_dropped, 0);
  cr_assert(c.candidate_pairs >= c.polygons);
  cr_assert(fabs(ce_test_builder_area(&b) - 0.56) < 1e-12, "area %.17g", ce_test_builder_area(&b));
  for (int64_t f = 0; f < nfaces(&b); f++)
    for (int k = 0; k < nverts(&b, (int32_t)f); k++) {
      cr_assert(fabs(vtx(&b, (int32_t)f, k).z - 0.5) < 1e-14);
      cr_assert(fabs(prs(&b, (int32_t)f, k) - 5e4) < 1e-9);
    }
  ce_arena_destroy(arena);
  free_geom(m);
  free_geom(n);
}

/* A plane through faces that two tets share: M is a column of two Kuhn
 * cubes with p_M = 1e5 z, N one cube with p_N = 1e5 (1.5 - z_N) placed at
 * (0.2, 0.3, 0.5), so the surface is z = 1, M's layer of shared faces,
 * over [0.2, 1] x [0.3, 1]: area 0.56 at 1e5 Pa. Both of M's tets at each
 * face make its polygon; the half-open rule keeps one (the sum was 1.12
 * before it). With the roles swapped the plane runs through N's faces.
 * Traced and all-candidates alike. */
Test(intersect_cc, polygon_in_shared_face_counts_once) {
  ce_vec3 v1[8], v2[12];
  int32_t t1[6][4], t2[12][4];
  kuhn_cube(v1, t1);
  for (int i = 0; i < 8; i++) v2[i] = v1[i];
  for (int i = 8; i < 12; i++) v2[i] = ce_add(v1[i - 4], ce_v3(0, 0, 1));
  for (int k = 0; k < 12; k++)
    for (int r = 0; r < 4; r++) {
      int32_t l = t1[k % 6][r];
      t2[k][r] = k < 6 ? l : (l < 4 ? l + 4 : l + 4);
    }
  double pc[12], pcube[8];
  for (int i = 0; i < 12; i++) pc[i] = 1e5 * v2[i].z;
  for (int i = 0; i < 8; i++) pcube[i] = 1e5 * (1.5 - v1[i].z);
  ce_geometry *col = make_geom(v2, 12, (const int32_t(*)[4])t2, 12, pc);
  ce_geometry *cube = make_geom(v1, 8, (const int32_t(*)[4])t1, 6, pcube);
  ce_test_tet_adjacency(&col->tet);
  ce_test_tet_adjacency(&cube->tet);
  ce_arena *arena = ce_arena_create(1 << 16);
  for (int swap = 0; swap < 2; swap++)
    for (int all = 0; all < 2; all++) {
      ce_pose X = ce_pose_identity();
      X.p = swap ? ce_v3(-0.2, -0.3, -0.5) : ce_v3(0.2, 0.3, 0.5);
      ce_arena_reset(arena);
      ce_builder b;
      cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
      ce_counters c = {0, 0, 0};
      cr_assert_eq((all ? ce_intersect_tet_tet_all : ce_intersect_tet_tet)(swap ? cube : col, swap ? col : cube, &X,
                                                                            &b, &c),
                   CE_OK);
      double area = ce_test_builder_area(&b);
      cr_assert(fabs(area - 0.56) < 1e-12, "swap %d all %d: area %.17g", swap, all, area);
      const double zs = swap ? 0.5 : 1.0; /* the plane in M's frame */
      for (int64_t f = 0; f < nfaces(&b); f++)
        for (int k = 0; k < nverts(&b, (int32_t)f); k++) {
          cr_assert(fabs(vtx(&b, (int32_t)f, k).z - zs) < 1e-14);
          cr_assert(fabs(prs(&b, (int32_t)f, k) - (swap ? 1e5 * (1.5 - zs) : 1e5 * zs)) < 1e-9);
        }
    }
  ce_arena_destroy(arena);
  free_geom(col);
  free_geom(cube);
}

/* Surface tracing (the default path for meshes with adjacency) against
 * the reference that evaluates every BVH candidate pair: the same
 * polygons (count, total area, per-face source pairs) for primitives at
 * random poses, including the symmetric sphere pair whose meshes mirror
 * each other across the contact plane. */
static ce_geometry *prim(ce_shape_type type, double r, ce_vec3 size, double hint) {
  ce_geometry *g = ce_test_shape(type, CE_COMPLIANT, r, size, hint);
  cr_assert_not_null(g);
  return g;
}

/* Traced vs every candidate pair (ce_test_compare_traced); the polygons. */
static int64_t compare_traced(const ce_geometry *m, const ce_geometry *n, const ce_pose *X, ce_arena *arena,
                              const char *what) {
  return ce_test_compare_traced(ce_intersect_tet_tet_all, ce_intersect_tet_tet, m, n, X, arena, what).polygons;
}

Test(intersect_cc, surface_tracing_matches_all_candidates) {
  ce_geometry *s1 = prim(CE_SHAPE_SPHERE, 0.1, ce_v3(0, 0, 0), 0.026);
  ce_geometry *s2 = prim(CE_SHAPE_SPHERE, 0.07, ce_v3(0, 0, 0), 0.02);
  ce_geometry *bx = prim(CE_SHAPE_BOX, 0, ce_v3(0.2, 0.15, 0.1), 0.03);
  ce_arena *arena = ce_arena_create(1 << 20);
  ce_pose X = ce_pose_identity();
  X.p = ce_v3(0.18, 0, 0);
  cr_assert(compare_traced(s1, s1, &X, arena, "mirrored spheres") > 100);
  /* Mirrored meshes meet along lines where faces of both cross inside the
   * surface; the walk steps diagonally there. Also the two spheres of
   * different resolution, and a mirrored pair shifted off the axis. */
  X.p = ce_v3(0.17, 0.004, -0.003);
  cr_assert(compare_traced(s1, s1, &X, arena, "mirrored spheres off axis") > 100);
  X.p = ce_v3(0.0, 0.0, 0.16);
  cr_assert(compare_traced(s1, s1, &X, arena, "mirrored spheres along z") > 100);
  X.p = ce_v3(0.15, 0, 0);
  cr_assert(compare_traced(s1, s2, &X, arena, "spheres of two resolutions") > 50);
  X.p = ce_v3(0.18, 0, 0);
  uint64_t st = 77;
  char what[64];
  int touching = 0;
  for (int trial = 0; trial < 12; trial++) {
    const ce_geometry *a = trial % 3 == 0 ? s1 : (trial % 3 == 1 ? bx : s2);
    const ce_geometry *b = trial % 2 == 0 ? s2 : bx;
    ce_pose Y = ce_test_rand_pose(&st, 0.08, 0.08);
    snprintf(what, sizeof what, "trial %d", trial);
    touching += compare_traced(a, b, &Y, arena, what) > 0;
  }
  cr_assert(touching >= 8, "only %d of 12 random poses touch", touching);
  /* Axis-aligned boxes and a sphere on a box: planes through many mesh
   * vertices and along edges (degenerate cases for the walk). */
  const ce_vec3 offs[4] = {{0.15, 0, 0}, {0.15, 0.05, 0}, {0.1, 0.075, 0.05}, {0, 0, 0.09}};
  for (int k = 0; k < 4; k++) {
    ce_pose Y = ce_pose_identity();
    Y.p = offs[k];
    snprintf(what, sizeof what, "aligned boxes %d", k);
    cr_assert(compare_traced(bx, bx, &Y, arena, what) > 0, "%s: no contact", what);
    snprintf(what, sizeof what, "sphere on box %d", k);
    cr_assert(compare_traced(bx, s2, &Y, arena, what) > 0, "%s: no contact", what);
  }
  /* Other primitives at random poses. */
  ce_geometry *cy = prim(CE_SHAPE_CYLINDER, 0.06, ce_v3(0, 0, 0), 0.03);
  ce_geometry *ca = prim(CE_SHAPE_CAPSULE, 0.05, ce_v3(0, 0, 0), 0.03);
  ce_geometry *el = prim(CE_SHAPE_ELLIPSOID, 0, ce_v3(0.1, 0.07, 0.05), 0.03);
  const ce_geometry *shapes[5] = {cy, ca, el, bx, s2};
  int touching2 = 0;
  for (int trial = 0; trial < 15; trial++) {
    ce_pose Y = ce_test_rand_pose(&st, 0.05, 0.07);
    snprintf(what, sizeof what, "primitives %d", trial);
    touching2 += compare_traced(shapes[trial % 5], shapes[(trial / 5 + trial + 1) % 5], &Y, arena, what) > 0;
  }
  cr_assert(touching2 >= 10, "only %d of 15 primitive poses touch", touching2);
  ce_geometry_free(cy);
  ce_geometry_free(ca);
  ce_geometry_free(el);
  /* Deep nesting: a small sphere inside a big one has no boundary crossing;
   * the fallback still finds the closed surface. */
  X.p = ce_v3(0.005, 0, 0);
  ce_arena_reset(arena);
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_intersect_tet_tet(s1, s2, &X, &b, &c), CE_OK);
  cr_assert(compare_traced(s1, s2, &X, arena, "nested") > 0);
  ce_arena_destroy(arena);
  ce_geometry_free(s1);
  ce_geometry_free(s2);
  ce_geometry_free(bx);
}

static int cmp_x(const void *a, const void *b) {
  double x = ((const ce_vec3 *)a)->x, y = ((const ce_vec3 *)b)->x;
  return (x > y) - (x < y);
}

/* Pairs of the builder's vertices closer than tol (distinct ids). */
static int64_t near_duplicates(const ce_builder *b, double tol) {
  int64_t nv = b->v.len, n = 0;
  ce_vec3 *v = malloc(sizeof *v * (size_t)(nv + 1));
  memcpy(v, b->v.data, sizeof *v * (size_t)nv);
  qsort(v, (size_t)nv, sizeof *v, cmp_x);
  for (int64_t u = 0; u < nv; u++)
    for (int64_t w = u + 1; w < nv && v[w].x - v[u].x < tol; w++) n += ce_norm(ce_sub(v[u], v[w])) < tol;
  free(v);
  return n;
}

/* Neighbouring polygons share their vertices: the surface of two
 * overlapping convex bodies is one disc (V - E + F = 1) with every edge in
 * at most two faces, counter-clockwise alike, and about a quarter as many
 * vertices as polygon corners. Sharing changes no polygon: the traced
 * surface still matches every candidate pair's (area to 1e-12). */
/* Vertex ids listed twice within one face. */
static int64_t face_repeats(const ce_builder *b) {
  const int32_t *off = b->face_off.data, *fv = b->face_vert.data;
  int64_t n = 0;
  for (int64_t f = 0; f + 1 < b->face_off.len; f++)
    for (int32_t i = off[f]; i < off[f + 1]; i++)
      for (int32_t j = i + 1; j < off[f + 1]; j++) n += fv[i] == fv[j];
  return n;
}

Test(intersect_cc, polygons_share_vertices) {
  ce_geometry *s1 = prim(CE_SHAPE_SPHERE, 0.1, ce_v3(0, 0, 0), 0.026);
  ce_geometry *s2 = prim(CE_SHAPE_SPHERE, 0.07, ce_v3(0, 0, 0), 0.02);
  ce_geometry *bx = prim(CE_SHAPE_BOX, 0, ce_v3(0.2, 0.15, 0.1), 0.03);
  ce_geometry *el = prim(CE_SHAPE_ELLIPSOID, 0, ce_v3(0.1, 0.07, 0.05), 0.03);
  ce_arena *arena = ce_arena_create(1 << 20);
  const ce_geometry *ms[4] = {s1, s1, s2, bx}, *ns[4] = {s1, s2, el, el};
  uint64_t st = 2026;
  int discs = 0;
  for (int trial = 0; trial < 24; trial++) {
    const ce_geometry *m = ms[trial % 4], *n = ns[trial % 4];
    ce_pose X = ce_pose_identity();
    if (trial == 0) X.p = ce_v3(0.18, 0, 0); /* mirrored meshes */
    else X = ce_test_rand_pose(&st, 0.03, 0.08);
    ce_arena_reset(arena);
    ce_builder b;
    cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
    ce_counters c = {0, 0, 0};
    cr_assert_eq(ce_intersect_tet_tet(m, n, &X, &b, &c), CE_OK);
    if (c.polygons == 0) continue;
    int64_t bad, nf = b.normal.len, corners = b.face_vert.len, nv = b.v.len;
    int64_t chi = ce_test_euler(nv, nf, b.face_off.data, b.face_vert.data, &bad);
    cr_assert_eq(bad, 0, "trial %d: %lld half-edges repeat", trial, (long long)bad);
    cr_assert(4 * nv < corners + 4 * 64, "trial %d: %lld vertices for %lld corners", trial, (long long)nv,
              (long long)corners);
    cr_assert_eq(near_duplicates(&b, 1e-12), 0, "trial %d: a vertex is not shared", trial);
    discs += chi == 1;
    ce_test_compare_traced(ce_intersect_tet_tet_all, ce_intersect_tet_tet, m, n, &X, arena, "shared vertices");
  }
  /* (the others have holes where the gradient rule drops polygons, or
   * several pieces: no two of their vertices coincide either) */
  cr_assert(discs >= 18, "only %d surfaces are discs", discs);
  /* Planes through mesh vertices, along edges and through faces (aligned
   * boxes, a sphere on a box): no face overlaps another (a polygon in a
   * shared face is made once). Here neighbouring pairs may see a point on
   * different features within the tolerance (a mesh vertex from one, an
   * edge ending there from the other), so some vertices are made twice. */
  const ce_vec3 offs[4] = {{0.15, 0, 0}, {0.15, 0.05, 0}, {0.1, 0.075, 0.05}, {0, 0, 0.09}};
  for (int k = 0; k < 8; k++) {
    ce_pose X = ce_pose_identity();
    X.p = offs[k % 4];
    ce_arena_reset(arena);
    ce_builder b;
    cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
    ce_counters c = {0, 0, 0};
    cr_assert_eq(ce_intersect_tet_tet(bx, k < 4 ? bx : s2, &X, &b, &c), CE_OK);
    cr_assert(c.polygons > 0, "aligned case %d: no contact", k);
    int64_t bad;
    ce_test_euler(b.v.len, b.normal.len, b.face_off.data, b.face_vert.data, &bad);
    cr_assert_eq(bad, 0, "aligned case %d: %lld half-edges repeat", k, (long long)bad);
  }
  /* Boxes whose meshes' planes coincide: tolerances can put two corners of
   * one polygon on the same pair of features, and the second is then made
   * as a vertex of its own, so no face lists a vertex twice (without that,
   * 74 of 4,131 aligned box poses scanned did, these three among them). */
  const ce_vec3 flush[3] = {{0.1, 0, 0}, {0.1, 0.0125, 0}, {0.10625, 0, 0.05}};
  for (int k = 0; k < 3; k++) {
    ce_pose X = ce_pose_identity();
    X.p = flush[k];
    ce_arena_reset(arena);
    ce_builder b;
    cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
    ce_counters c = {0, 0, 0};
    cr_assert_eq(ce_intersect_tet_tet(bx, bx, &X, &b, &c), CE_OK);
    cr_assert(c.polygons > 0, "flush case %d: no contact", k);
    cr_assert_eq(face_repeats(&b), 0, "flush case %d: a face lists a vertex twice", k);
  }
  ce_arena_destroy(arena);
  ce_geometry_free(s1);
  ce_geometry_free(s2);
  ce_geometry_free(bx);
  ce_geometry_free(el);
}

/* Two copies of g's tet mesh as one compliant geometry, the second shifted
 * by d (a mesh of two components, e.g. two pads in one file); modulus E. */
static ce_geometry *two_copies(const ce_geometry *g, ce_vec3 d, double E) {
  const ce_tetmesh *T = &g->tet;
  int32_t nv = 2 * T->nv, nt = 2 * T->nt;
  double *v = malloc((size_t)nv * 3 * sizeof *v), *p = malloc((size_t)nv * sizeof *p);
  int32_t *t = malloc((size_t)nt * 4 * sizeof *t);
  for (int c = 0; c < 2; c++) {
    for (int32_t i = 0; i < T->nv; i++) {
      ce_vec3 x = c ? ce_add(T->v[i], d) : T->v[i];
      int32_t k = c * T->nv + i;
      v[3 * k] = x.x, v[3 * k + 1] = x.y, v[3 * k + 2] = x.z;
      p[k] = T->p[i] * (E / 1e6); /* ce_test_shape builds with E = 1e6 */
    }
    for (int32_t q = 0; q < T->nt; q++)
      for (int r = 0; r < 4; r++) t[4 * (c * T->nt + q) + r] = T->tet[q][r] + c * T->nv;
  }
  ce_props props = ce_test_props(CE_COMPLIANT, E, 0.02);
  ce_geometry *out = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_tetmesh(v, nv, t, nt, p, &props, &out, &err), CE_OK, "%s", err.message);
  free(v);
  free(p);
  free(t);
  return out;
}

/* A body of several pieces: the walk seeds only the piece that crosses the
 * other body's boundary; a piece wholly inside it has a closed surface no
 * seed reaches, and must still be found (as every candidate pair finds
 * it). Both roles, and a piece wholly outside (no contact, nothing to
 * find). */
Test(intersect_cc, pieces_wholly_inside_are_found) {
  ce_geometry *small = prim(CE_SHAPE_SPHERE, 0.05, ce_v3(0, 0, 0), 0.02);
  ce_geometry *big = prim(CE_SHAPE_SPHERE, 0.3, ce_v3(0, 0, 0), 0.06);
  /* stiffer pieces, so that their cores rise above the big sphere's field */
  ce_geometry *pair = two_copies(small, ce_v3(0.45, 0, 0), 1e7);
  cr_assert_eq(pair->tet.ncomp, 2);
  cr_assert_eq(pair->tet.comp_first[1], small->tet.nt);
  ce_arena *arena = ce_arena_create(1 << 20);
  ce_pose X = ce_pose_identity();
  /* piece 1 inside the big sphere, off its centre (its closed surface is
   * kept on the side facing the centre, where the big field rises toward
   * it, and dropped by the gradient rule on the other), piece 2 across the
   * big sphere's boundary (0.3 from its centre) */
  X.p = ce_v3(0.15, 0, 0);
  int64_t both = compare_traced(pair, big, &X, arena, "one piece inside, one across (M)");
  ce_pose Xi = ce_pose_inverse(&X);
  int64_t both_n = compare_traced(big, pair, &Xi, arena, "one piece inside, one across (N)");
  cr_assert_eq(both, both_n);
  /* the inside piece alone gives a closed surface of many polygons */
  X.p = ce_v3(-0.3, 0, 0); /* piece 1 across the boundary, piece 2 outside */
  int64_t across = compare_traced(pair, big, &X, arena, "one piece across, one outside");
  cr_assert_gt(both, across + 50, "the inside piece adds its closed surface (%lld vs %lld polygons)", (long long)both,
               (long long)across);
  ce_arena_destroy(arena);
  ce_geometry_free(pair);
  ce_geometry_free(small);
  ce_geometry_free(big);
}

/* Two axis-aligned medial-axis boxes pressed together (A above B, same
 * orientation, footprints offset in x and y): both fields are exactly
 * piecewise linear, so the equal-pressure surface is exact. It is a graph
 * over the plane z: flat halfway between A's bottom and B's top, with 45°
 * strips where a side face is nearer than the pressed face. Its boundary
 * is where both boundaries meet, over the rim of the overlap of the two
 * footprints, so its area projected along z is that overlap rectangle. The
 * force is continuous in the pose, so moving A by 1e-9 m changes the force
 * and the projected area by about 1e-9 relative, whatever mesh elements
 * the plane happens to run through (here whole faces of A's elements lie
 * in the flat part at some poses). */
typedef struct box_eval {
  double fz, az;
  int32_t nf;
  ce_vec3 f; /* the force on A, world frame */
} box_eval;

/* A (pose xa) against B (pose xb), at rest: fz, the area projected along
 * z (the faces' areas times their normals' z) and the force. */
static box_eval pair_eval(const ce_geometry *ga, const ce_geometry *gb, ce_pose xa, ce_pose xb, ce_arena *arena) {
  ce_body a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.geometry = ga;
  b.geometry = gb;
  a.X_WB = xa;
  b.X_WB = xb;
  ce_options o;
  ce_options_default(&o);
  o.want_surface = 1;
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  box_eval e = {r.wrench_a.force.z, 0, r.surface.nf, r.wrench_a.force};
  for (int32_t f = 0; f < r.surface.nf; f++) e.az += r.surface.area[f] * r.surface.normal[f].z;
  return e;
}

static box_eval box_pair_eval(const ce_geometry *ga, const ce_geometry *gb, ce_vec3 pa, ce_arena *arena) {
  ce_pose xa = ce_pose_identity();
  xa.p = pa;
  return pair_eval(ga, gb, xa, ce_pose_identity(), arena);
}

Test(intersect_cc, aligned_boxes_force_is_continuous) {
  const ce_vec3 size = ce_v3(0.2, 0.18, 0.16);
  const struct {
    double hint_a, hint_b;
  } meshes[] = {{0.1, 0.05}, {0.05, 0.025}};
  ce_arena *arena = ce_arena_create(1 << 22);
  uint64_t rng = 31;
  double worst_f = 0, worst_a = 0, worst_area = 0, worst_fz = 0;
  int poses = 0;
  for (size_t mi = 0; mi < sizeof meshes / sizeof meshes[0]; mi++) {
    ce_geometry *ga = prim(CE_SHAPE_BOX, 0.1, size, meshes[mi].hint_a);
    ce_geometry *gb = prim(CE_SHAPE_BOX, 0.1, size, meshes[mi].hint_b);
    for (int k = 0; k < 30; k++) {
      /* x/y offsets: none for the first poses (the aligned columns), then
       * along x only, along y only, and both */
      const double dx = k < 4 || (k >= 10 && k < 16) ? 0 : 0.16 * (ce_test_rand(&rng) - 0.5);
      const double dy = k < 10 ? 0 : 0.14 * (ce_test_rand(&rng) - 0.5);
      const double dz = 0.12 + 0.03 * ce_test_rand(&rng);
      const ce_vec3 p = ce_v3(dx, dy, dz);
      const box_eval e0 = box_pair_eval(ga, gb, p, arena);
      const double overlap = (size.x - fabs(dx)) * (size.y - fabs(dy));
      const double ea = fabs(fabs(e0.az) - overlap) / overlap;
      worst_area = fmax(worst_area, ea);
      cr_expect(ea <= 1e-9, "hints %g/%g pose %d (%.6f %.6f %.6f): projected area %.12g, overlap %.12g", meshes[mi].hint_a,
                meshes[mi].hint_b, k, dx, dy, dz, fabs(e0.az), overlap);
      /* On the vertical through a point of the overlap, p_A rises from A's
       * bottom and p_B from B's top until each is capped by its side faces
       * (p = E d / H, d the distance to the nearest face, H = 0.08 m here),
       * so they meet at E/H min(s, u) with s half the overlap depth and u
       * the distance to the overlap rectangle's rim (the nearer of the
       * footprints' rims): fz = E/H int min(s, u) dA = E/H (W D s - (W + D)
       * s^2 + 4 s^3 / 3) over the W x D overlap. */
      const double W = size.x - fabs(dx), D = size.y - fabs(dy), sd = (size.z - dz) / 2;
      const double fz = 1e6 / 0.08 * (W * D * sd - (W + D) * sd * sd + 4 * sd * sd * sd / 3);
      const double ef = fabs(e0.fz - fz) / fz;
      worst_fz = fmax(worst_fz, ef);
      cr_expect(ef <= 1e-9, "hints %g/%g pose %d (%.6f %.6f %.6f): fz %.12g, closed form %.12g", meshes[mi].hint_a,
                meshes[mi].hint_b, k, dx, dy, dz, e0.fz, fz);
      for (int axis = 0; axis < 3; axis++)
        for (int s = -1; s <= 1; s += 2) {
          ce_vec3 q = p;
          (&q.x)[axis] += s * 1e-9;
          const box_eval e1 = box_pair_eval(ga, gb, q, arena);
          const double df = fabs(e1.fz - e0.fz) / fabs(e0.fz), da = fabs(e1.az - e0.az) / fabs(e0.az);
          worst_f = fmax(worst_f, df);
          worst_a = fmax(worst_a, da);
          cr_expect(df <= 1e-6 && da <= 1e-6,
                    "hints %g/%g pose %d (%.6f %.6f %.6f) moved %+g on axis %d: fz %.12g -> %.12g (%.2g), area "
                    "%.12g -> %.12g, faces %d -> %d",
                    meshes[mi].hint_a, meshes[mi].hint_b, k, dx, dy, dz, s * 1e-9, axis, e0.fz, e1.fz, df, e0.az,
                    e1.az, e0.nf, e1.nf);
        }
      poses++;
    }
    ce_geometry_free(ga);
    ce_geometry_free(gb);
  }
  fprintf(stderr,
          "aligned boxes: %d poses, fz moved by 1e-9 m worst %.2e relative, projected area %.2e; projected area "
          "vs footprint overlap worst %.2e, fz vs closed form worst %.2e\n",
          poses, worst_f, worst_a, worst_area, worst_fz);
  ce_arena_destroy(arena);
}

/* Flush sides in other guises: boxes turned together by a generic
 * rotation (the sides coincide only to rounding), and two equal
 * cylinders (n-gon prisms) stacked on one axis. Moving A by 1e-9 m
 * changes the force along the common axis by about 1e-9 relative; the
 * turned boxes keep the unturned force, and stacked cylinders, symmetric
 * about their axis, feel no sideways force. */
Test(intersect_cc, flush_sides_turned_and_cylinders) {
  ce_geometry *bx = prim(CE_SHAPE_BOX, 0.1, ce_v3(0.2, 0.18, 0.16), 0.05);
  ce_geometry *cy = prim(CE_SHAPE_CYLINDER, 0.08, ce_v3(0, 0, 0), 0.05);
  ce_arena *arena = ce_arena_create(1 << 22);
  const double sd = (0.16 - 0.13) / 2, box_fz = 1e6 / 0.08 * (0.2 * 0.18 * sd - 0.38 * sd * sd + 4 * sd * sd * sd / 3);
  for (int c = 0; c < 4; c++) {
    const ce_geometry *g = c < 2 ? bx : cy;
    const ce_quat qr = c & 1 ? ce_quat_from_axis_angle(ce_normalize(ce_v3(0.3, -0.5, 0.8)), 0.7)
                             : ce_quat_from_axis_angle(ce_v3(0, 0, 1), 0);
    const ce_mat3 R = ce_quat_to_mat3(qr);
    const ce_vec3 axis = ce_mat3_mul_vec(&R, ce_v3(0, 0, 1));
    const ce_pose xb = ce_pose_from_quat(qr, ce_v3(0.01, 0.02, 0.03));
    const ce_pose xa = ce_pose_from_quat(qr, ce_axpy(xb.p, c < 2 ? 0.13 : 0.08, axis));
    const box_eval e0 = pair_eval(g, g, xa, xb, arena);
    const double fn = ce_dot(e0.f, axis), side = ce_norm(ce_sub(e0.f, ce_scale(axis, fn)));
    double worst = 0;
    for (int k = 0; k < 6; k++) {
      ce_pose x1 = xa;
      (&x1.p.x)[k / 2] += k & 1 ? 1e-9 : -1e-9;
      worst = fmax(worst, fabs(ce_dot(pair_eval(g, g, x1, xb, arena).f, axis) - fn) / fn);
    }
    fprintf(stderr, "flush %s%s: normal force %.10g N, sideways %.2g N, moved 1e-9 m: worst %.2e relative\n",
            c < 2 ? "boxes" : "cylinders", c & 1 ? " turned" : "", fn, side, worst);
    cr_expect(worst <= 1e-6, "case %d: the normal force jumps by %.3g when A moves 1e-9 m", c, worst);
    if (c < 2) cr_expect(fabs(fn - box_fz) <= 1e-9 * box_fz, "case %d: normal force %.12g, closed form %.12g", c, fn, box_fz);
    else cr_expect(side <= 1e-9 * fn, "case %d: sideways force %.3g N on stacked cylinders", c, side);
  }
  ce_arena_destroy(arena);
  ce_geometry_free(bx);
  ce_geometry_free(cy);
}
