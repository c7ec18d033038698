/* ce_bvh_query.c — traversals of the bounding volume hierarchies built in
 * ce_bvh_build.c.
 *
 * Traversal (ce_bvh_collide) uses an explicit stack of node pairs in the
 * arena. A node pair is pruned when its pressure ranges are disjoint (with
 * use_pressure) or when a separating axis exists among the 15 axes of two
 * oriented boxes. B's boxes are placed in A's frame lazily, once per node per
 * query. Output order is the depth-first order of the traversal, which
 * depends only on the two trees and the pose.
 *
 * Boundary hierarchies also keep cylinders around the surface patches
 * (each node's two children's side by side) and their triangles, for
 * ce_bvh_collide_surfaces: the same descent, with a cylinder test of two
 * child pairs at once (~50 instructions a pair) instead of the ~350
 * instruction 15-axis one, made before a pair is pushed, and leaf pairs
 * kept only where their triangles meet.
 *
 * ce_bvh_near_points and ce_bvh_collide_plane descend one hierarchy, keeping
 * the leaves whose boxes meet a set of points or a plane. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_bvh_lanes.h"
#include "ce_bvh.h"
#include "ce_arena.h"
#include "ce_predicates.h"
#include "ce_internal.h"

/* ---- traversal ------------------------------------------------------------ */

/* B's node box placed in A's frame: centre, axes, and (with pressure
 * fields) B's linear pressure bound expressed in A's frame. */
typedef struct placed_box {
  ce_vec3 c;
  ce_vec3 u[3];
  ce_vec3 g;
  double off;
} placed_box;

/* Separating-axis test of A's box (centre ca, axes = columns of UA, half
 * ha) and B's placed box. Returns 1 when no axis separates them. |R| gets
 * an epsilon so near-parallel edges never yield a false separation. */
static inline int obb_overlap(ce_vec3 ca, const ce_mat3 *UA, ce_vec3 ha, const placed_box *pb, ce_vec3 hb) {
  const double eps = 1e-12;
  double R[3][3], AR[3][3], t[3];
  ce_vec3 d = ce_sub(pb->c, ca);
  const double a0 = ha.x, a1 = ha.y, a2 = ha.z, b0 = hb.x, b1 = hb.y, b2 = hb.z;
  /* A's face axes, computing rows of R as needed. */
  for (int i = 0; i < 3; i++) {
    ce_vec3 ai = ce_v3(UA->m[0][i], UA->m[1][i], UA->m[2][i]);
    t[i] = ce_dot(ai, d);
    R[i][0] = ce_dot(ai, pb->u[0]);
    R[i][1] = ce_dot(ai, pb->u[1]);
    R[i][2] = ce_dot(ai, pb->u[2]);
    AR[i][0] = fabs(R[i][0]) + eps;
    AR[i][1] = fabs(R[i][1]) + eps;
    AR[i][2] = fabs(R[i][2]) + eps;
    double ai_h = i == 0 ? a0 : (i == 1 ? a1 : a2);
    if (fabs(t[i]) > ai_h + b0 * AR[i][0] + b1 * AR[i][1] + b2 * AR[i][2]) return 0;
  }
  /* B's face axes. */
  if (fabs(t[0] * R[0][0] + t[1] * R[1][0] + t[2] * R[2][0]) > a0 * AR[0][0] + a1 * AR[1][0] + a2 * AR[2][0] + b0)
    return 0;
  if (fabs(t[0] * R[0][1] + t[1] * R[1][1] + t[2] * R[2][1]) > a0 * AR[0][1] + a1 * AR[1][1] + a2 * AR[2][1] + b1)
    return 0;
  if (fabs(t[0] * R[0][2] + t[1] * R[1][2] + t[2] * R[2][2]) > a0 * AR[0][2] + a1 * AR[1][2] + a2 * AR[2][2] + b2)
    return 0;
  /* Edge-edge axes a_i x b_j. */
  if (fabs(t[2] * R[1][0] - t[1] * R[2][0]) > a1 * AR[2][0] + a2 * AR[1][0] + b1 * AR[0][2] + b2 * AR[0][1]) return 0;
  if (fabs(t[2] * R[1][1] - t[1] * R[2][1]) > a1 * AR[2][1] + a2 * AR[1][1] + b0 * AR[0][2] + b2 * AR[0][0]) return 0;
  if (fabs(t[2] * R[1][2] - t[1] * R[2][2]) > a1 * AR[2][2] + a2 * AR[1][2] + b0 * AR[0][1] + b1 * AR[0][0]) return 0;
  if (fabs(t[0] * R[2][0] - t[2] * R[0][0]) > a0 * AR[2][0] + a2 * AR[0][0] + b1 * AR[1][2] + b2 * AR[1][1]) return 0;
  if (fabs(t[0] * R[2][1] - t[2] * R[0][1]) > a0 * AR[2][1] + a2 * AR[0][1] + b0 * AR[1][2] + b2 * AR[1][0]) return 0;
  if (fabs(t[0] * R[2][2] - t[2] * R[0][2]) > a0 * AR[2][2] + a2 * AR[0][2] + b0 * AR[1][1] + b1 * AR[1][0]) return 0;
  if (fabs(t[1] * R[0][0] - t[0] * R[1][0]) > a0 * AR[1][0] + a1 * AR[0][0] + b1 * AR[2][2] + b2 * AR[2][1]) return 0;
  if (fabs(t[1] * R[0][1] - t[0] * R[1][1]) > a0 * AR[1][1] + a1 * AR[0][1] + b0 * AR[2][2] + b2 * AR[2][0]) return 0;
  if (fabs(t[1] * R[0][2] - t[0] * R[1][2]) > a0 * AR[1][2] + a1 * AR[0][2] + b0 * AR[2][1] + b1 * AR[2][0]) return 0;
  return 1;
}

/* Shrink a box (centre *C, axes u[0..2], half extents *h) to the tightest
 * box with the same axes that contains its intersection with the slab
 * |w . x + c0| <= e. Returns 0 when the slab misses the box. Exact per axis:
 * with x = C + sum t_i u_i and b_i = w . u_i the slab reads
 * sum b_i t_i in [L, U]; the other two terms range over [-r_i, r_i], so
 * b_i t_i in [L - r_i, U + r_i]. */
static inline int shrink_to_slab(ce_vec3 w, double c0, double e, ce_vec3 *C, const ce_vec3 u[3], ce_vec3 *h) {
  double hh[3] = {h->x, h->y, h->z};
  double b[3] = {ce_dot(w, u[0]), ce_dot(w, u[1]), ce_dot(w, u[2])};
  double ab[3] = {hh[0] * fabs(b[0]), hh[1] * fabs(b[1]), hh[2] * fabs(b[2])};
  double R = ab[0] + ab[1] + ab[2];
  double sc = ce_dot(w, *C) + c0;
  double slack = e + 1e-12 * (R + fabs(sc));
  double L = -slack - sc, U = slack - sc;
  if (L > R || U < -R) return 0;
  ce_vec3 c = *C;
  for (int i = 0; i < 3; i++) {
    double ri = R - ab[i];
    if (ab[i] <= 1e-9 * (R + slack)) continue; /* axis nearly in the slab plane */
    double lo = (L - ri) / b[i], hi = (U + ri) / b[i];
    if (b[i] < 0) {
      double t = lo;
      lo = hi;
      hi = t;
    }
    if (lo < -hh[i]) lo = -hh[i];
    if (hi > hh[i]) hi = hh[i];
    if (lo > hi) return 0;
    double m = 0.5 * (lo + hi), half = 0.5 * (hi - lo);
    half += 1e-9 * hh[i]; /* rounding of the division */
    c = ce_axpy(c, m, u[i]);
    hh[i] = half;
  }
  *C = c;
  *h = ce_v3(hh[0], hh[1], hh[2]);
  return 1;
}

static const placed_box *place(const ce_bvh *bb, int32_t j, const ce_pose *X, placed_box *cache,
                               unsigned char *done) {
  placed_box *p = &cache[j];
  if (!done[j]) {
    const ce_bvh_node *n = &bb->nodes[j];
    p->c = ce_pose_apply(X, n->center);
    for (int k = 0; k < 3; k++) p->u[k] = ce_mat3_mul_vec(&X->R, col(&n->axes, k));
    if (bb->field) {
      /* p_B(y) ~ gB . y + cB with y = R^T (x - t): in A's frame the
       * gradient is R gB and the offset cB - (R gB) . t. */
      const double *f = bb->field[j];
      p->g = ce_mat3_mul_vec(&X->R, ce_v3(f[0], f[1], f[2]));
      p->off = f[3] - ce_dot(p->g, X->p);
    }
    done[j] = 1;
  }
  return p;
}

/* The two child pairs of node pair `top` onto the traversal stack, right
 * child first (so the left one is popped first): A's children when
 * split_a, else B's. Shared by both pair traversals so they descend alike. */
static inline ce_errno push_children(ce_arena *arena, ce_buf *stack, ce_pair top, int split_a, int32_t left,
                                     int32_t right) {
  if (stack->len + 2 > stack->cap && ce_buf_reserve(arena, stack, 2) != CE_OK) return CE_ENOMEM;
  ce_pair *s = (ce_pair *)stack->data + stack->len;
  s[0] = split_a ? (ce_pair){right, top.b} : (ce_pair){top.a, right};
  s[1] = split_a ? (ce_pair){left, top.b} : (ce_pair){top.a, left};
  stack->len += 2;
  return CE_OK;
}

ce_errno ce_bvh_collide(const ce_bvh *bvh_a, const ce_bvh *bvh_b, const ce_pose *X_AB,
                        int use_pressure, ce_arena *arena, ce_buf *out) {
  if (bvh_a->nnodes == 0 || bvh_b->nnodes == 0) return CE_OK;
  placed_box *cache = ce_arena_alloc(arena, (size_t)bvh_b->nnodes * sizeof(placed_box));
  unsigned char *done = ce_arena_calloc(arena, (size_t)bvh_b->nnodes, 1);
  if (!cache || !done) return CE_ENOMEM;
  ce_buf stack;
  ce_buf_init(&stack, sizeof(ce_pair));
  if (ce_buf_reserve(arena, &stack, 64) != CE_OK) return CE_ENOMEM;
  ce_pair *st = stack.data;
  st[0].a = 0;
  st[0].b = 0;
  stack.len = 1;
  const ce_bvh_node *NA = bvh_a->nodes, *NB = bvh_b->nodes;
  /* Equal-pressure slabs need both linear bounds. */
  const int use_slab = use_pressure && bvh_a->field && bvh_b->field;
  while (stack.len > 0) {
    ce_pair top = ((ce_pair *)stack.data)[--stack.len];
    const ce_bvh_node *na = &NA[top.a], *nb = &NB[top.b];
    if (use_pressure && (na->pmax < nb->pmin || nb->pmax < na->pmin)) continue;
    const placed_box *pb = place(bvh_b, top.b, X_AB, cache, done);
    if (use_slab) {
      /* Any point with p_A = p_B inside both nodes lies in the slab
       * |(gA - gB) . x + (cA - cB)| <= eA + eB and in both boxes: shrink
       * both boxes to the slab, then test the shrunken boxes. */
      const double *fa = bvh_a->field[top.a];
      ce_vec3 w = ce_sub(ce_v3(fa[0], fa[1], fa[2]), pb->g);
      double c0 = fa[3] - pb->off, e = fa[4] + bvh_b->field[top.b][4];
      ce_vec3 ua[3] = {col(&na->axes, 0), col(&na->axes, 1), col(&na->axes, 2)};
      ce_vec3 ca = na->center, ha = na->half, cb = pb->c, hb = nb->half;
      if (!shrink_to_slab(w, c0, e, &ca, ua, &ha)) continue;
      if (!shrink_to_slab(w, c0, e, &cb, pb->u, &hb)) continue;
      placed_box sb = *pb;
      sb.c = cb;
      if (!obb_overlap(ca, &na->axes, ha, &sb, hb)) continue;
    } else if (!obb_overlap(na->center, &na->axes, na->half, pb, nb->half)) {
      continue;
    }
    int leaf_a = na->left < 0, leaf_b = nb->left < 0;
    if (leaf_a && leaf_b) {
      if (ce_buf_reserve(arena, out, (int64_t)na->count * nb->count) != CE_OK) return CE_ENOMEM;
      ce_pair *o = (ce_pair *)out->data + out->len;
      for (int32_t i = 0; i < na->count; i++)
        for (int32_t j = 0; j < nb->count; j++) {
          o->a = bvh_a->order[na->first + i];
          o->b = bvh_b->order[nb->first + j];
          o++;
        }
      out->len += (int64_t)na->count * nb->count;
      continue;
    }
    /* Descend into the larger box (or the only internal node). */
    int split_a;
    if (leaf_b) split_a = 1;
    else if (leaf_a) split_a = 0;
    else {
      double va = na->half.x * na->half.y * na->half.z, vb = nb->half.x * nb->half.y * nb->half.z;
      split_a = va >= vb;
    }
    if (push_children(arena, &stack, top, split_a, split_a ? na->left : nb->left,
                      split_a ? na->right : nb->right) != CE_OK)
      return CE_ENOMEM;
  }
  return CE_OK;
}

/* Two cylinders (lanes), centres and axes in A's frame. */
typedef struct cyl2 {
  v2d cx, cy, cz, nx, ny, nz, h, rho, r;
} cyl2;

/* B's disk entry with its centres and axes placed in A's frame. */
typedef struct placed_disk {
  v2d cx, cy, cz, nx, ny, nz;
  v2d wx, wy, wz, wnx, wny, wnz; /* the same, lanes swapped */
} placed_disk;

/* Same operations as ce_pose_apply / ce_mat3_mul_vec, lane by lane. */
static void place_disk(const ce_bvh_disk *e, const ce_pose *X, placed_disk *p) {
  const double(*R)[3] = X->R.m;
  v2d x = v2_load(e->cx), y = v2_load(e->cy), z = v2_load(e->cz);
  p->cx = R[0][0] * x + R[0][1] * y + R[0][2] * z + X->p.x;
  p->cy = R[1][0] * x + R[1][1] * y + R[1][2] * z + X->p.y;
  p->cz = R[2][0] * x + R[2][1] * y + R[2][2] * z + X->p.z;
  x = v2_load(e->nx);
  y = v2_load(e->ny);
  z = v2_load(e->nz);
  p->nx = R[0][0] * x + R[0][1] * y + R[0][2] * z;
  p->ny = R[1][0] * x + R[1][1] * y + R[1][2] * z;
  p->nz = R[2][0] * x + R[2][1] * y + R[2][2] * z;
  p->wx = v2_swap(p->cx);
  p->wy = v2_swap(p->cy);
  p->wz = v2_swap(p->cz);
  p->wnx = v2_swap(p->nx);
  p->wny = v2_swap(p->ny);
  p->wnz = v2_swap(p->nz);
}

/* A's entry e as lanes (already in A's frame). */
static inline cyl2 lanes_a(const ce_bvh_disk *e) {
  return (cyl2){v2_load(e->cx), v2_load(e->cy), v2_load(e->cz), v2_load(e->nx), v2_load(e->ny),
                v2_load(e->nz), v2_load(e->h), v2_load(e->rho), v2_load(e->r)};
}

/* B's entry e as lanes, with its placement p. */
static inline cyl2 lanes_b(const ce_bvh_disk *e, const placed_disk *p) {
  return (cyl2){p->cx, p->cy, p->cz, p->nx, p->ny, p->nz, v2_load(e->h), v2_load(e->rho), v2_load(e->r)};
}

/* B's entry e as lanes swapped (lane 0 the right child). */
static inline cyl2 lanes_b_swapped(const ce_bvh_disk *e, const placed_disk *p) {
  return (cyl2){p->wx, p->wy, p->wz, p->wnx, p->wny, p->wnz, v2_swap(v2_load(e->h)), v2_swap(v2_load(e->rho)),
                v2_swap(v2_load(e->r))};
}

/* Lane k of both entries as both lanes. */
static inline cyl2 lanes_splat(const cyl2 *c, int k) {
  return (cyl2){v2_splat(c->cx[k]), v2_splat(c->cy[k]), v2_splat(c->cz[k]), v2_splat(c->nx[k]),
                v2_splat(c->ny[k]), v2_splat(c->nz[k]), v2_splat(c->h[k]), v2_splat(c->rho[k]),
                v2_splat(c->r[k])};
}

/* Bit k set unless lane k of the cylinders a and b is found apart.
 * Necessary for two cylinders to meet: their spheres meet, and each one's
 * slab |n . (x - c)| <= h meets the other cylinder, whose extent along a
 * unit u is h' |u . n'| + rho' sqrt(1 - (u . n')^2). The sine gets 1e-15
 * inside the root: 1 - cos^2 rounds by ~2e-16. Symmetric in a and b; a NaN
 * never counts as apart. */
static inline int disks_meet(const cyl2 *a, const cyl2 *b, double tol) {
  v2d dx = b->cx - a->cx, dy = b->cy - a->cy, dz = b->cz - a->cz;
  v2d rr = a->r + b->r + tol;
  v2d apart = v2_gt(dx * dx + dy * dy + dz * dz, rr * rr);
  v2d cs = v2_abs(a->nx * b->nx + a->ny * b->ny + a->nz * b->nz);
  v2d sn = v2_sqrt(v2_pos(1 - cs * cs) + 1e-15);
  apart = v2_or(apart, v2_gt(v2_abs(a->nx * dx + a->ny * dy + a->nz * dz), a->h + b->h * cs + b->rho * sn + tol));
  apart = v2_or(apart, v2_gt(v2_abs(b->nx * dx + b->ny * dy + b->nz * dz), b->h + a->h * cs + a->rho * sn + tol));
  return v2_clear_bits(apart);
}

/* Two of B's placed triangles as lanes: vertices and planes. */
typedef struct tri2 {
  v2d x[3], y[3], z[3];
  v2d nx, ny, nz, d;
  v2d cx, cy, cz, r;
} tri2;

static inline void tri_lanes(tri2 *l, const ce_bvh_tri *t0, const ce_bvh_tri *t1) {
  for (int k = 0; k < 3; k++) {
    l->x[k] = (v2d){t0->v[k].x, t1->v[k].x};
    l->y[k] = (v2d){t0->v[k].y, t1->v[k].y};
    l->z[k] = (v2d){t0->v[k].z, t1->v[k].z};
  }
  l->nx = (v2d){t0->n.x, t1->n.x};
  l->ny = (v2d){t0->n.y, t1->n.y};
  l->nz = (v2d){t0->n.z, t1->n.z};
  l->d = (v2d){t0->d, t1->d};
  l->cx = (v2d){t0->c.x, t1->c.x};
  l->cy = (v2d){t0->c.y, t1->c.y};
  l->cz = (v2d){t0->c.z, t1->c.z};
  l->r = (v2d){t0->r, t1->r};
}

/* Lanes where the signed distances s[0..2] all exceed tol or all are
 * below -tol: a triangle strictly on one side of a plane. */
static inline v2d v2_one_side(const v2d s[3], v2d tol) {
  v2d above = v2_and(v2_and(v2_gt(s[0], tol), v2_gt(s[1], tol)), v2_gt(s[2], tol));
  v2d below = v2_and(v2_and(v2_gt(-tol, s[0]), v2_gt(-tol, s[1])), v2_gt(-tol, s[2]));
  return v2_or(above, below);
}

/* Traversal over node pairs that passed the cylinder tests: a popped pair
 * tests its child pairs (both nodes split when both are internal, else the
 * internal one) and pushes the ones that pass, in the depth-first order of
 * ce_bvh_collide's traversal; leaf pairs test their triangles. */
ce_errno ce_bvh_collide_surfaces(const ce_bvh *a, const ce_bvh *b, const ce_pose *X_AB, ce_arena *arena,
                                 ce_buf *out) {
  if (a->nnodes == 0 || b->nnodes == 0) return CE_OK;
  if (!a->disk || !b->disk) return ce_bvh_collide(a, b, X_AB, 0, arena, out);
  const ce_bvh_disk *DA = a->disk, *DB = b->disk;
  const ce_bvh_tri *TA = a->tri;
  const int32_t nb = (b->nnodes + 1) / 2; /* B's disk entries */
  placed_disk *pd = ce_arena_alloc(arena, (size_t)nb * sizeof *pd);
  ce_bvh_tri *pt = ce_arena_alloc(arena, (size_t)b->nelem * sizeof *pt);
  unsigned char *done = ce_arena_calloc(arena, (size_t)nb + (size_t)b->nelem, 1);
  if (!pd || !pt || !done) return CE_ENOMEM;
  unsigned char *tdone = done + nb;
  place_disk(&DB[0], X_AB, &pd[0]);
  done[0] = 1;
  /* Rounding in placing B and in the dot products is ~1e-16 of the
   * coordinates; the margin is far above that and far below any element
   * (sized by the root boxes: centres and the radii around their corners). */
  const ce_bvh_node *ra = &a->nodes[0], *rb = &b->nodes[0];
  const double tol = 1e-12 * (ce_norm(ra->center) + ce_norm(ra->half) * (1 + 1e-12) +
                              ce_norm(ce_pose_apply(X_AB, rb->center)) + ce_norm(rb->half) * (1 + 1e-12));
  {
    cyl2 ca = lanes_a(&DA[0]), cb = lanes_b(&DB[0], &pd[0]);
    if (!(disks_meet(&ca, &cb, tol) & 1)) return CE_OK;
  }
  ce_buf stack;
  ce_buf_init(&stack, sizeof(ce_pair));
  if (ce_buf_reserve(arena, &stack, 64) != CE_OK) return CE_ENOMEM;
  ((ce_pair *)stack.data)[0] = (ce_pair){DA[0].ref[0], DB[0].ref[0]};
  stack.len = 1;
  while (stack.len > 0) {
    ce_pair top = ((ce_pair *)stack.data)[--stack.len];
    if (top.a < 0 && top.b < 0) {
      int32_t la = ~top.a, lb = ~top.b;
      const int32_t fa = DA[la >> 1].first[la & 1], na = DA[la >> 1].count[la & 1];
      const int32_t fb = DB[lb >> 1].first[lb & 1], nbt = DB[lb >> 1].count[lb & 1];
      if (out->len + (int64_t)na * nbt > out->cap && ce_buf_reserve(arena, out, (int64_t)na * nbt) != CE_OK)
        return CE_ENOMEM;
      ce_pair *o = (ce_pair *)out->data + out->len;
      for (int32_t j = fb; j < fb + nbt; j++) {
        if (tdone[j]) continue;
        /* Same operations as a caller placing N's vertices in M's frame,
         * so planes agree with its up to the normalisation. */
        const ce_bvh_tri *t = &b->tri[j];
        ce_bvh_tri *u = &pt[j];
        for (int k = 0; k < 3; k++) u->v[k] = ce_pose_apply(X_AB, t->v[k]);
        ce_vec3 n = ce_cross(ce_sub(u->v[1], u->v[0]), ce_sub(u->v[2], u->v[0]));
        double len = ce_norm(n);
        u->n = len > 0 ? ce_scale(n, 1.0 / len) : ce_v3(0, 0, 0);
        u->d = ce_dot(u->n, u->v[0]);
        u->c = ce_pose_apply(X_AB, t->c);
        u->r = t->r;
        tdone[j] = 1;
      }
      /* A's triangle i against two of B's at once: their spheres (a
       * triangle lies in its sphere, so spheres apart by more than the
       * margin mean triangles apart), then Moller's test: plane sides (the
       * signed distances sb of B's vertices to A's plane, then sa of A's
       * to B's, as the scalar dot products would give them), then the
       * intervals for the pairs that straddle both ways. */
      tri2 L[(CE_BVH_TRI_LEAF + 1) / 2];
      for (int32_t c = 0; 2 * c < nbt; c++)
        tri_lanes(&L[c], &pt[fb + 2 * c], &pt[fb + (2 * c + 1 < nbt ? 2 * c + 1 : 2 * c)]);
      const v2d T = v2_splat(tol);
      for (int32_t i = fa; i < fa + na; i++) {
        const ce_bvh_tri *ta = &TA[i];
        for (int32_t c = 0; 2 * c < nbt; c++) {
          const tri2 *l = &L[c];
          v2d dx = l->cx - ta->c.x, dy = l->cy - ta->c.y, dz = l->cz - ta->c.z, rr = l->r + ta->r + tol;
          int keep = v2_clear_bits(v2_gt(dx * dx + dy * dy + dz * dz, rr * rr)) & (2 * c + 1 < nbt ? 3 : 1);
          if (!keep) continue;
          v2d sb[3], sa[3];
          for (int k = 0; k < 3; k++) sb[k] = ta->n.x * l->x[k] + ta->n.y * l->y[k] + ta->n.z * l->z[k] - ta->d;
          keep &= v2_clear_bits(v2_one_side(sb, T));
          if (!keep) continue;
          for (int k = 0; k < 3; k++) sa[k] = l->nx * ta->v[k].x + l->ny * ta->v[k].y + l->nz * ta->v[k].z - l->d;
          keep &= v2_clear_bits(v2_one_side(sa, T));
          for (int q = 0; q < 2; q++) {
            if (!(keep >> q & 1)) continue;
            int32_t j = fb + 2 * c + q;
            const ce_bvh_tri *tb = &pt[j];
            double da[3] = {sa[0][q], sa[1][q], sa[2][q]}, db[3] = {sb[0][q], sb[1][q], sb[2][q]};
            if (!ce_triangles_meet_planes(ta->v, ta->n, da, tb->v, tb->n, db, tol)) continue;
            o->a = a->order[i];
            o->b = b->order[j];
            o++;
          }
        }
      }
      out->len = o - (ce_pair *)out->data;
      continue;
    }
    if (stack.len + 4 > stack.cap && ce_buf_reserve(arena, &stack, 4) != CE_OK) return CE_ENOMEM;
    ce_pair *s = (ce_pair *)stack.data + stack.len;
    int64_t n = 0;
    /* Each candidate is written, and kept (n advanced) only when it
     * passes; the last pushed is popped first. */
    if (top.a >= 0 && top.b >= 0) {
      const ce_bvh_disk *eb = &DB[top.b];
      placed_disk *p = &pd[top.b];
      if (!done[top.b]) {
        place_disk(eb, X_AB, p);
        done[top.b] = 1;
      }
      /* Lanes (a0, b0), (a1, b1) straight, (a0, b1), (a1, b0) with B's
       * lanes swapped. */
      cyl2 ca = lanes_a(&DA[top.a]), cb = lanes_b(eb, p), cw = lanes_b_swapped(eb, p);
      int m = disks_meet(&ca, &cb, tol), w = disks_meet(&ca, &cw, tol);
      int32_t ra0 = DA[top.a].ref[0], ra1 = DA[top.a].ref[1];
      int32_t rb0 = DB[top.b].ref[0], rb1 = DB[top.b].ref[1];
      s[n] = (ce_pair){ra1, rb1};
      n += m >> 1;
      s[n] = (ce_pair){ra1, rb0};
      n += w >> 1;
      s[n] = (ce_pair){ra0, rb1};
      n += w & 1;
      s[n] = (ce_pair){ra0, rb0};
      n += m & 1;
    } else if (top.a >= 0) {
      /* B is a leaf: split A. Its entry was placed when it was pushed. */
      int32_t lb = ~top.b;
      cyl2 ca = lanes_a(&DA[top.a]), pb = lanes_b(&DB[lb >> 1], &pd[lb >> 1]), cb = lanes_splat(&pb, lb & 1);
      int m = disks_meet(&ca, &cb, tol);
      s[n] = (ce_pair){DA[top.a].ref[1], top.b};
      n += m >> 1;
      s[n] = (ce_pair){DA[top.a].ref[0], top.b};
      n += m & 1;
    } else {
      /* A is a leaf: split B. */
      int32_t la = ~top.a;
      const ce_bvh_disk *eb = &DB[top.b];
      placed_disk *p = &pd[top.b];
      if (!done[top.b]) {
        place_disk(eb, X_AB, p);
        done[top.b] = 1;
      }
      cyl2 pa = lanes_a(&DA[la >> 1]), ca = lanes_splat(&pa, la & 1), cb = lanes_b(eb, p);
      int m = disks_meet(&ca, &cb, tol);
      s[n] = (ce_pair){top.a, DB[top.b].ref[1]};
      n += m >> 1;
      s[n] = (ce_pair){top.a, DB[top.b].ref[0]};
      n += m & 1;
    }
    stack.len += n;
  }
  return CE_OK;
}

/* The elements of the leaves reached by descending from the root through
 * the nodes `meets` accepts, appended to out in traversal order (left
 * before right). Inlined into each caller, so the test is a direct call. */
static inline __attribute__((always_inline)) ce_errno bvh_select(const ce_bvh *bvh,
                                                                 int (*meets)(const ce_bvh_node *, const void *),
                                                                 const void *ctx, ce_arena *arena, ce_buf *out) {
  if (bvh->nnodes == 0) return CE_OK;
  ce_buf stack;
  ce_buf_init(&stack, sizeof(int32_t));
  if (ce_buf_reserve(arena, &stack, 64) != CE_OK) return CE_ENOMEM;
  ((int32_t *)stack.data)[0] = 0;
  stack.len = 1;
  while (stack.len > 0) {
    const ce_bvh_node *nd = &bvh->nodes[((const int32_t *)stack.data)[--stack.len]];
    if (!meets(nd, ctx)) continue;
    if (nd->left < 0) {
      if (ce_buf_reserve(arena, out, nd->count) != CE_OK) return CE_ENOMEM;
      memcpy((int32_t *)out->data + out->len, bvh->order + nd->first, (size_t)nd->count * sizeof(int32_t));
      out->len += nd->count;
      continue;
    }
    if (ce_buf_reserve(arena, &stack, 2) != CE_OK) return CE_ENOMEM;
    int32_t *st = (int32_t *)stack.data + stack.len;
    st[0] = nd->right; /* the left child is popped first */
    st[1] = nd->left;
    stack.len += 2;
  }
  return CE_OK;
}

typedef struct points_ctx {
  const ce_vec3 *x;
  int nx;
  double tol;
} points_ctx;

/* The points' extent along each of the box's axes meets the (widened)
 * box. */
static int box_meets_points(const ce_bvh_node *nd, const void *ctx) {
  const points_ctx *c = ctx;
  for (int j = 0; j < 3; j++) {
    const ce_vec3 u = col(&nd->axes, j);
    const double h = ce_v3_get(nd->half, j) + c->tol;
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < c->nx; k++) {
      double d = ce_dot(u, ce_sub(c->x[k], nd->center));
      lo = fmin(lo, d);
      hi = fmax(hi, d);
    }
    if (lo > h || hi < -h) return 0;
  }
  return 1;
}

ce_errno ce_bvh_near_points(const ce_bvh *bvh, const ce_vec3 *x, int nx, double tol, ce_arena *arena,
                            ce_buf *out) {
  if (nx <= 0) return CE_OK;
  const points_ctx c = {x, nx, tol};
  return bvh_select(bvh, box_meets_points, &c, arena, out);
}

typedef struct plane_ctx {
  ce_vec3 n;
  double d;
  int plane_only;
} plane_ctx;

static int box_meets_plane(const ce_bvh_node *nd, const void *ctx) {
  const plane_ctx *c = ctx;
  double s = ce_dot(c->n, nd->center) - c->d;
  double r = nd->half.x * fabs(ce_dot(c->n, col(&nd->axes, 0))) + nd->half.y * fabs(ce_dot(c->n, col(&nd->axes, 1))) +
             nd->half.z * fabs(ce_dot(c->n, col(&nd->axes, 2)));
  r *= 1 + 1e-12;
  if (s - r > 0) return 0;                  /* entirely above the plane */
  if (c->plane_only && s + r < 0) return 0; /* entirely below */
  return 1;
}

ce_errno ce_bvh_collide_plane(const ce_bvh *bvh, ce_vec3 n, double d, int plane_only, ce_arena *arena,
                              ce_buf *out) {
  const plane_ctx c = {n, d, plane_only};
  return bvh_select(bvh, box_meets_plane, &c, arena, out);
}
