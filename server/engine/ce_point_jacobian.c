/* ce_point_jacobian.c — the wrench Jacobians of compliant point contact
 * (convention in ce.h, "wrench Jacobians"; the model in
 * ce_point_contact.c, the closest features in ce_mtd.c).
 *
 * Forward-mode dual numbers (ce_dual.h) with all 24 partials (the poses
 * and the velocities of A and B) re-evaluate what the engine computed: the
 * minimum translational distance from the same closest features (depth x,
 * normal n, witnesses wa, wb), the force point P = (wa + wb)/2 and the
 * force law fn = k x (1 + d xdot)+ with xdot = -(v_A(P) - v_B(P)) . n and
 * the regularised Coulomb friction -mu (2/pi) atan(|vt|/vs) fn vt/|vt|.
 * Every combinatorial choice of the MTD (the separating axis of two boxes,
 * the clamped ends of two segments, the face of a box nearest to a sphere's
 * centre inside it, a flat support feature and its centre) is taken from
 * the values, so the result is the one-sided derivative of the current
 * features: where a perturbation switches them (a box edge that becomes
 * the separating axis instead of a face, a sphere's centre that leaves a
 * box's face region), the derivative of the features in use now.
 *
 * A pose column moves a body as R <- exp([dth]x) R, p <- p + dp, so a
 * shape-frame column c of R gets the partial dth x c and the origin dp.
 * The 24 partials give all four matrices directly (no identities needed;
 * the tests check that they hold).
 *
 * Covered: every point-contact pair. The analytic MTD pairs (anything
 * against a half space, spheres and capsules with each other, sphere and
 * box, box and box) are re-evaluated as ce_mtd.c evaluates them; GJK/EPA
 * pairs from the closest features of their normal (see "GJK/EPA pairs"
 * below); convex pieces per penetrating piece pair, summed; terrain per
 * feature (see "terrain" below). Unavailable, with a note: a degenerate
 * normal (coincident sphere centres, crossing capsule axes), a normal that
 * the features and curvatures do not fix, and contacts at the terrain's
 * edge. *
 * Two-way with ce_mtd.c: the MTD finishes its GJK/EPA normal with
 * ce_mtd_polish here, the same closest-feature evaluation this file
 * differentiates, so the answer and its derivative cannot disagree; this
 * file in turn rebuilds the MTD's shapes and re-runs it. */
#define CE_DUAL_N 26 /* the 24 of the four matrices and two auxiliary ones (slots 24, 25) */
#include <math.h>
#include <string.h>

#include "ce_dual.h"
#include "ce_arena.h"
#include "ce_geometry.h"
#include "ce_mtd.h"
#include "ce_terrain.h"

enum { SLOT_POSE_A = 0, SLOT_POSE_B = 6, SLOT_VEL_A = 12, SLOT_VEL_B = 18 };

/* A pose in duals: the columns of R and the origin. */
typedef struct jpose {
  jv c[3];
  jv p;
} jpose;

/* The minimum translational distance in duals (ce_mtd). */
typedef struct jmtd {
  int overlap;
  jd depth;
  jv n, wa, wb;
} jmtd;

static jd jd_neg(jd a) { return jd_scale(a, -1.0); }
static jd jd_abs(jd a) { return a.v < 0 ? jd_neg(a) : a; }
static jd jd_clamp01(jd a) { return a.v < 0 ? jd_c(0) : a.v > 1 ? jd_c(1) : a; }
static jv jv_neg(jv a) { return jv_scalec(a, -1.0); }
static jd jv_norm(jv a) { return jd_sqrt(jv_dot(a, a)); }
static jv jv_div(jv a, jd s) {
  jv r = {jd_div(a.x, s), jd_div(a.y, s), jd_div(a.z, s)};
  return r;
}
static jv jv_axpy(jv a, jd s, jv b) { return jv_add(a, jv_scale(b, s)); }

static jpose seed_pose(const ce_pose *X, int slot) {
  jpose P;
  for (int i = 0; i < 3; i++) {
    const ce_vec3 ci = ce_v3(X->R.m[0][i], X->R.m[1][i], X->R.m[2][i]);
    P.c[i] = jv_c(ci);
    for (int j = 0; j < 3; j++) {
      const ce_vec3 dc = ce_cross(ce_v3(j == 0, j == 1, j == 2), ci);
      P.c[i].x.d[slot + j] = dc.x;
      P.c[i].y.d[slot + j] = dc.y;
      P.c[i].z.d[slot + j] = dc.z;
    }
  }
  P.p = jv_c(X->p);
  P.p.x.d[slot + 3] = 1;
  P.p.y.d[slot + 4] = 1;
  P.p.z.d[slot + 5] = 1;
  return P;
}

static jv seed_vec(ce_vec3 v, int slot) {
  jv r = jv_c(v);
  r.x.d[slot] = 1;
  r.y.d[slot + 1] = 1;
  r.z.d[slot + 2] = 1;
  return r;
}

static jv jp_rotate(const jpose *X, jv x) {
  return jv_add(jv_add(jv_scale(X->c[0], x.x), jv_scale(X->c[1], x.y)), jv_scale(X->c[2], x.z));
}
static jv jp_apply(const jpose *X, jv x) { return jv_add(jp_rotate(X, x), X->p); }
static jv jp_applyc(const jpose *X, ce_vec3 x) {
  return jv_add(jv_axpyc(jv_axpyc(jv_scalec(X->c[0], x.x), x.y, X->c[1]), x.z, X->c[2]), X->p);
}
/* R^T d */
static jv jp_trotate(const jpose *X, jv d) {
  jv r = {jv_dot(X->c[0], d), jv_dot(X->c[1], d), jv_dot(X->c[2], d)};
  return r;
}

/* ce_cvx_support_local in duals: the same feature, differentiated where
 * the support point moves with the direction (round shapes). */
static jv support_local(const ce_cvx *c, jv d, int centre) {
  const ce_vec3 dv = jv_val(d);
  const double dn = ce_norm(dv), eps = 1e-9 * (dn > 0 ? dn : 1);
  const double zoff = (centre && fabs(dv.z) <= eps) ? 0 : (dv.z < 0 ? -c->hl : c->hl);
  switch (c->kind) {
    case CE_CVX_SPHERE:
    case CE_CVX_CAPSULE: {
      if (!(dn > 0)) return jv_c(ce_v3(0, 0, zoff));
      jv p = jv_scale(d, jd_div(jd_c(c->r), jv_norm(d)));
      p.z = jd_addc(p.z, c->kind == CE_CVX_CAPSULE ? zoff : 0);
      return p;
    }
    case CE_CVX_CYL: {
      const double rxy = hypot(dv.x, dv.y);
      jv p = jv_c(ce_v3(0, 0, zoff));
      if (rxy > eps || (!centre && rxy > 0)) {
        const jd s = jd_div(jd_c(c->r), jd_sqrt(jd_add(jd_mul(d.x, d.x), jd_mul(d.y, d.y))));
        p.x = jd_mul(d.x, s);
        p.y = jd_mul(d.y, s);
      }
      return p;
    }
    case CE_CVX_ELL: {
      const jv a2d = {jd_scale(d.x, c->h.x * c->h.x), jd_scale(d.y, c->h.y * c->h.y), jd_scale(d.z, c->h.z * c->h.z)};
      const jd q = jd_sqrt(jv_dot(a2d, d));
      return q.v > 0 ? jv_div(a2d, q) : jv_c(ce_v3(0, 0, 0));
    }
    default: /* box, mesh: a vertex or the centre of a flat feature, fixed in the body */
      return jv_c(ce_cvx_support_local(c, dv, centre));
  }
}

static jv support_world(const ce_cvx *c, const jpose *X, jv d, int centre) {
  return jp_apply(X, support_local(c, jp_trotate(X, d), centre));
}

static void set_from_a(jmtd *o, jv wa, jv n, jd depth) {
  o->overlap = depth.v > 0;
  o->depth = depth;
  o->n = n;
  o->wa = wa;
  o->wb = jv_axpy(wa, depth, n);
}
static void set_from_b(jmtd *o, jv wb, jv n, jd depth) { set_from_a(o, jv_axpy(wb, jd_neg(depth), n), n, depth); }

/* A against half space B. */
static void mtd_halfspace(const ce_cvx *a, const jpose *Xa, const jpose *Xb, jmtd *o) {
  const jv n = Xb->c[2];
  const jv s = support_world(a, Xa, jv_neg(n), 1);
  set_from_a(o, s, n, jd_neg(jv_dot(n, jv_sub(s, Xb->p))));
}

/* Closest points of two segments, with ce_mtd.c's branches. */
static void segment_closest(jv p0, jv p1, jv q0, jv q1, jv *cp, jv *cq) {
  const jv d1 = jv_sub(p1, p0), d2 = jv_sub(q1, q0), r = jv_sub(p0, q0);
  const jd a = jv_dot(d1, d1), e = jv_dot(d2, d2), f = jv_dot(d2, r);
  jd s = jd_c(0), t = jd_c(0);
  const double tiny = 1e-300;
  if (a.v <= tiny && e.v <= tiny) {
  } else if (a.v <= tiny) {
    t = jd_clamp01(jd_div(f, e));
  } else {
    const jd c = jv_dot(d1, r);
    if (e.v <= tiny) {
      s = jd_clamp01(jd_neg(jd_div(c, a)));
    } else {
      const jd b = jv_dot(d1, d2), den = jd_sub(jd_mul(a, e), jd_mul(b, b));
      if (den.v > 1e-14 * a.v * e.v) s = jd_clamp01(jd_div(jd_sub(jd_mul(b, f), jd_mul(c, e)), den));
      t = jd_div(jd_add(jd_mul(b, s), f), e);
      if (t.v < 0) {
        t = jd_c(0);
        s = jd_clamp01(jd_neg(jd_div(c, a)));
      } else if (t.v > 1) {
        t = jd_c(1);
        s = jd_clamp01(jd_div(jd_sub(b, c), a));
      }
    }
  }
  *cp = jv_axpy(p0, s, d1);
  *cq = jv_axpy(q0, t, d2);
}

/* Sphere/capsule A against sphere/capsule B; 0 when the normal is
 * degenerate (coincident centres, crossing axes). */
static int mtd_segments(const ce_cvx *a, const jpose *Xa, const ce_cvx *b, const jpose *Xb, jmtd *o) {
  jv pa, pb;
  segment_closest(jp_applyc(Xa, ce_v3(0, 0, -a->hl)), jp_applyc(Xa, ce_v3(0, 0, a->hl)),
                  jp_applyc(Xb, ce_v3(0, 0, -b->hl)), jp_applyc(Xb, ce_v3(0, 0, b->hl)), &pa, &pb);
  const jv d = jv_sub(pa, pb);
  const jd dist = jv_norm(d);
  if (!(dist.v > 1e-12 * (a->scale + b->scale))) return 0;
  const jv n = jv_div(d, dist);
  set_from_a(o, jv_axpy(pa, jd_c(-a->r), n), n, jd_sub(jd_c(a->r + b->r), dist));
  return 1;
}

/* Sphere A against box B. */
static void mtd_sphere_box(const ce_cvx *a, const jpose *Xa, const ce_cvx *b, const jpose *Xb, jmtd *o) {
  const jv c = jp_trotate(Xb, jv_sub(Xa->p, Xb->p));
  const double h[3] = {b->h.x, b->h.y, b->h.z};
  jd cc[3] = {c.x, c.y, c.z}, q[3];
  for (int i = 0; i < 3; i++) q[i] = cc[i].v < -h[i] ? jd_c(-h[i]) : cc[i].v > h[i] ? jd_c(h[i]) : cc[i];
  const jv qv = {q[0], q[1], q[2]}, d = jv_sub(c, qv);
  const jd dist = jv_norm(d);
  if (dist.v > 0) {
    set_from_b(o, jp_apply(Xb, qv), jp_rotate(Xb, jv_div(d, dist)), jd_sub(jd_c(a->r), dist));
    return;
  }
  /* centre inside: the nearest face (ties: x before y before z) */
  jd gap[3];
  for (int k = 0; k < 3; k++) gap[k] = jd_sub(jd_c(h[k]), jd_abs(cc[k]));
  int i = 0;
  for (int k = 1; k < 3; k++)
    if (gap[k].v < gap[i].v) i = k;
  const double s = cc[i].v < 0 ? -1.0 : 1.0;
  jd nl[3] = {jd_c(0), jd_c(0), jd_c(0)};
  nl[i] = jd_c(s);
  cc[i] = jd_c(s * h[i]);
  const jv nv = {nl[0], nl[1], nl[2]}, f = {cc[0], cc[1], cc[2]};
  set_from_b(o, jp_apply(Xb, f), jp_rotate(Xb, nv), jd_addc(gap[i], a->r));
}

/* Box A against box B: the separating axis chosen as ce_mtd.c chooses it
 * (on the values), its overlap and witnesses in duals. */
static void mtd_box_box(const ce_cvx *a, const jpose *Xa, const ce_cvx *b, const jpose *Xb, jmtd *o) {
  const double ha[3] = {a->h.x, a->h.y, a->h.z}, hb[3] = {b->h.x, b->h.y, b->h.z};
  const jv cc = jv_sub(Xa->p, Xb->p);
  double best = INFINITY;
  int best_k = -1;
  jd best_depth = jd_c(0);
  jv best_n = jv_c(ce_v3(0, 0, 1));
  const double bias = 1e-9 * (a->scale + b->scale);
  for (int k = 0; k < 15; k++) {
    jv u;
    if (k < 3) u = Xa->c[k];
    else if (k < 6) u = Xb->c[k - 3];
    else {
      u = jv_cross(Xa->c[(k - 6) / 3], Xb->c[(k - 6) % 3]);
      const jd l = jv_norm(u);
      if (l.v < 1e-9) continue;
      u = jv_div(u, l);
    }
    jd ra = jd_c(0), rb = jd_c(0);
    for (int i = 0; i < 3; i++) {
      ra = jd_axpy(ra, ha[i], jd_abs(jv_dot(u, Xa->c[i])));
      rb = jd_axpy(rb, hb[i], jd_abs(jv_dot(u, Xb->c[i])));
    }
    const jd s = jv_dot(cc, u), overlap = jd_sub(jd_add(ra, rb), jd_abs(s));
    if (overlap.v <= 0) {
      o->overlap = 0;
      return;
    }
    const double score = overlap.v + (k >= 6 ? bias : 0);
    int take = score < best - bias;
    if (!take && score < best + bias && k < 6 && best_k >= 0 && best_k < 6) {
      const double *hk = k < 3 ? ha : hb, *hbk = best_k < 3 ? ha : hb;
      const int i = k % 3, j = best_k % 3;
      take = hk[(i + 1) % 3] * hk[(i + 2) % 3] > hbk[(j + 1) % 3] * hbk[(j + 2) % 3] * (1 + 1e-9);
    } else if (!take && score < best) {
      take = 1;
    }
    if (take) {
      best = score;
      best_k = k;
      best_depth = overlap;
      const ce_vec3 uv = jv_val(u);
      const double sv = s.v;
      if (sv < 0 || (sv == 0 && (uv.z < 0 || (uv.z == 0 && (uv.x < 0 || (uv.x == 0 && uv.y < 0)))))) u = jv_neg(u);
      best_n = u;
    }
  }
  const jv n = best_n;
  if (best_k < 3) {
    set_from_b(o, support_world(b, Xb, n, 1), n, best_depth);
  } else if (best_k < 6) {
    set_from_a(o, support_world(a, Xa, jv_neg(n), 1), n, best_depth);
  } else {
    const int i = (best_k - 6) / 3, j = (best_k - 6) % 3;
    const jv ma = support_world(a, Xa, jv_neg(n), 1), mb = support_world(b, Xb, n, 1);
    jv pa, pb;
    segment_closest(jv_axpyc(ma, -ha[i], Xa->c[i]), jv_axpyc(ma, ha[i], Xa->c[i]), jv_axpyc(mb, -hb[j], Xb->c[j]),
                    jv_axpyc(mb, hb[j], Xb->c[j]), &pa, &pb);
    o->overlap = 1;
    o->depth = best_depth;
    o->n = n;
    o->wa = pa;
    o->wb = pb;
  }
}

static int is_round(const ce_cvx *c) { return c->kind == CE_CVX_SPHERE || c->kind == CE_CVX_CAPSULE; }

/* ce_mtd.c's analytic pairs, (a, b) in that order: 1 done, 0 not an
 * analytic pair, -1 a degenerate normal. */
static int mtd_analytic(const ce_cvx *a, const jpose *Xa, const ce_cvx *b, const jpose *Xb, jmtd *o) {
  if (b->kind == CE_CVX_HALF) {
    mtd_halfspace(a, Xa, Xb, o);
    return 1;
  }
  if (is_round(a) && is_round(b)) return mtd_segments(a, Xa, b, Xb, o) ? 1 : -1;
  if (a->kind == CE_CVX_SPHERE && b->kind == CE_CVX_BOX) {
    mtd_sphere_box(a, Xa, b, Xb, o);
    return 1;
  }
  if (a->kind == CE_CVX_BOX && b->kind == CE_CVX_BOX) {
    mtd_box_box(a, Xa, b, Xb, o);
    return 1;
  }
  return 0;
}

/* ---- GJK/EPA pairs ------------------------------------------------------------
 *
 * ce_mtd.c finds the normal n as the minimiser over unit n of the
 * projection overlap f(n) = h_B(n) + h_A(-n) (h the support value) and
 * takes the witness on A as A's support point along -n. The minimiser is
 * fixed by the closest features:
 *  - flat directions: a support feature that is a face or an edge (box,
 *    mesh, a cylinder's cap or side line, a capsule's side line) holds n
 *    perpendicular to its edges, which turn with their body;
 *  - the remaining directions of n (two minus the flat ones) make f
 *    stationary on the unit sphere: the tangential part of its gradient
 *    s_B(n) - s_A(-n) vanishes along each free tangent, and implicit
 *    differentiation through the
 *    round shapes' support points (their curvature) gives how n moves.
 * Two auxiliary partials (slots 24, 25) carry d/dphi of the free tangent
 * coordinates of n; solving the 2x2 (or 1x1) system eliminates them. */

enum { SLOT_PHI = 24 };

/* The flat directions (shape frame, up to 2) of c's support feature along
 * local direction d, with a tolerance above the polish's accuracy. */
static int flat_dirs(const ce_cvx *c, ce_vec3 d, ce_vec3 out[2]) {
  const double dn = ce_norm(d), tol = 1e-6 * dn;
  int k = 0;
  switch (c->kind) {
    case CE_CVX_CAPSULE:
      if (fabs(d.z) <= tol) out[k++] = ce_v3(0, 0, 1);
      return k;
    case CE_CVX_CYL:
      if (hypot(d.x, d.y) <= tol) {
        out[k++] = ce_v3(1, 0, 0);
        out[k++] = ce_v3(0, 1, 0);
      } else if (fabs(d.z) <= tol) {
        out[k++] = ce_v3(0, 0, 1);
      }
      return k;
    case CE_CVX_BOX:
      if (fabs(d.x) <= tol) out[k++] = ce_v3(1, 0, 0);
      if (fabs(d.y) <= tol) out[k++] = ce_v3(0, 1, 0);
      if (fabs(d.z) <= tol && k < 2) out[k++] = ce_v3(0, 0, 1);
      return k;
    case CE_CVX_PTS: {
      double bv = -INFINITY;
      for (int32_t i = 0; i < c->nv; i++) bv = fmax(bv, ce_dot(c->v[i], d));
      const double vt = 1e-6 * c->scale * dn;
      int32_t i0 = -1;
      ce_vec3 e1 = ce_v3(0, 0, 0), e2 = e1;
      double l1 = 0, l2 = 0;
      for (int32_t i = 0; i < c->nv; i++) {
        if (!(ce_dot(c->v[i], d) >= bv - vt)) continue;
        if (i0 < 0) {
          i0 = i;
          continue;
        }
        const ce_vec3 e = ce_sub(c->v[i], c->v[i0]);
        if (ce_norm2(e) > l1) {
          l1 = ce_norm2(e);
          e1 = e;
        }
      }
      if (!(l1 > 1e-12 * c->scale * c->scale)) return 0;
      out[k++] = e1;
      for (int32_t i = 0; i < c->nv; i++) {
        if (!(ce_dot(c->v[i], d) >= bv - vt)) continue;
        const ce_vec3 e = ce_cross(e1, ce_sub(c->v[i], c->v[i0]));
        if (ce_norm2(e) > l2) {
          l2 = ce_norm2(e);
          e2 = ce_sub(c->v[i], c->v[i0]);
        }
      }
      if (l2 > 1e-6 * l1 * l1) out[k++] = e2;
      return k;
    }
    default:
      return 0;
  }
}

/* A unit vector perpendicular to unit u. */
static ce_vec3 any_perpendicular(ce_vec3 u) {
  const ce_vec3 x = fabs(u.x) < 0.6 ? ce_v3(1, 0, 0) : ce_v3(0, 1, 0);
  return ce_normalize(ce_axpy(x, -ce_dot(x, u), u));
}

/* The MTD of a GJK/EPA pair from its normal n0 (value): NULL or why not. */
static const char *mtd_gjk(const ce_cvx *a, const jpose *Xa, const ce_cvx *b, const jpose *Xb, ce_vec3 n0, jmtd *o) {
  ce_vec3 fa[2], fb[2];
  const int ka = flat_dirs(a, ce_mat3_tmul_vec(&a->X.R, ce_neg(n0)), fa);
  const int kb = flat_dirs(b, ce_mat3_tmul_vec(&b->X.R, n0), fb);
  jv e[4];
  int k = 0;
  /* a face fixes n by itself (B's first when both are faces: the one-sided
   * choice of parallel faces) */
  if (kb == 2) {
    e[k++] = jp_rotate(Xb, jv_c(fb[0]));
    e[k++] = jp_rotate(Xb, jv_c(fb[1]));
  } else {
    for (int i = 0; i < ka && k < 2; i++) e[k++] = jp_rotate(Xa, jv_c(fa[i]));
    for (int i = 0; i < kb && k < 2; i++) e[k++] = jp_rotate(Xb, jv_c(fb[i]));
  }
  jv n;
  if (k == 2) {
    n = jv_cross(e[0], e[1]);
    n = jv_div(n, jv_norm(n));
    if (ce_dot(jv_val(n), n0) < 0) n = jv_neg(n);
  } else {
    /* n = normalize(m + sum phi_j t_j), m = n0 off the flat direction */
    jv m = jv_c(n0), t[2];
    if (k == 1) {
      const jv u = jv_div(e[0], jv_norm(e[0]));
      m = jv_axpy(m, jd_neg(jv_dot(m, u)), u);
      m = jv_div(m, jv_norm(m));
      t[0] = jv_cross(u, m);
    } else {
      t[0] = jv_c(any_perpendicular(n0));
      t[1] = jv_c(ce_cross(n0, jv_val(t[0])));
    }
    const int nf = 2 - k;
    /* Newton on the stationarity (ce_mtd.c's polish stops 1e-9 to 1e-6
     * short of it): the derivative is the exact minimiser's */
    jd g[2];
    double G[2][2], det = 0;
    jv q = m;
    for (int it = 0; it < 4; it++) {
      q = m;
      for (int j = 0; j < nf; j++) {
        jd phi = jd_c(0);
        phi.d[SLOT_PHI + j] = 1;
        q = jv_axpy(q, phi, t[j]);
      }
      q = jv_div(q, jv_norm(q));
      const jv gap = jv_sub(support_world(b, Xb, q, 1), support_world(a, Xa, jv_neg(q), 1));
      for (int i = 0; i < nf; i++) {
        g[i] = jd_sub(jv_dot(t[i], gap), jd_mul(jv_dot(gap, q), jv_dot(t[i], q))); /* tangential to q */
        for (int j = 0; j < nf; j++) G[i][j] = g[i].d[SLOT_PHI + j];
      }
      det = nf == 2 ? G[0][0] * G[1][1] - G[0][1] * G[1][0] : G[0][0];
      if (!(fabs(det) > 1e-12 * (nf == 2 ? fabs(G[0][0] * G[1][1]) + fabs(G[0][1] * G[1][0]) : fabs(G[0][0])) &&
            det != 0))
        return "the point-contact normal is not fixed by the closest features here (no curvature)";
      if (it == 3) break;
      double step[2] = {-g[0].v / G[0][0], 0};
      if (nf == 2) {
        step[0] = -(G[1][1] * g[0].v - G[0][1] * g[1].v) / det;
        step[1] = -(G[0][0] * g[1].v - G[1][0] * g[0].v) / det;
      }
      if (!(fabs(step[0]) + fabs(step[1]) < 1e-4)) break; /* only polish */
      jv m2 = m;
      for (int j = 0; j < nf; j++) m2 = jv_axpyc(m2, step[j], t[j]);
      m2 = jv_div(m2, jv_norm(m2));
      /* never leave the features */
      ce_vec3 f2[2];
      const ce_vec3 nv = jv_val(m2);
      if (flat_dirs(a, ce_mat3_tmul_vec(&a->X.R, ce_neg(nv)), f2) != ka ||
          flat_dirs(b, ce_mat3_tmul_vec(&b->X.R, nv), f2) != kb)
        break;
      m = m2;
      if (k == 1) t[0] = jv_cross(jv_div(e[0], jv_norm(e[0])), m);
      else {
        t[0] = jv_c(any_perpendicular(jv_val(m)));
        t[1] = jv_c(ce_cross(jv_val(m), jv_val(t[0])));
        m = jv_c(jv_val(m));
      }
    }
    /* dphi = -G^-1 dg */
    jd phi[2];
    if (nf == 1) {
      phi[0] = jd_c(0);
      phi[0].d = -g[0].d / G[0][0];
    } else {
      phi[0] = jd_c(0);
      phi[1] = jd_c(0);
      phi[0].d = -(G[1][1] * g[0].d - G[0][1] * g[1].d) / det;
      phi[1].d = -(G[0][0] * g[1].d - G[1][0] * g[0].d) / det;
    }
    n = m;
    for (int j = 0; j < nf; j++) {
      phi[j].d[SLOT_PHI] = 0;
      phi[j].d[SLOT_PHI + 1] = 0;
      n = jv_axpy(n, phi[j], t[j]);
    }
    n = jv_div(n, jv_norm(n));
  }
  const jv wa = support_world(a, Xa, jv_neg(n), 1);
  set_from_a(o, wa, n, jv_dot(n, jv_sub(support_world(b, Xb, n, 1), wa)));
  return NULL;
}

void ce_mtd_polish(const ce_cvx *a, const ce_cvx *b, ce_mtd *o) {
  if (!o->overlap) return;
  const jpose Xa = seed_pose(&a->X, SLOT_POSE_A), Xb = seed_pose(&b->X, SLOT_POSE_B);
  jmtd m;
  if (mtd_gjk(a, &Xa, b, &Xb, o->normal, &m) || !m.overlap) return;
  o->depth = m.depth.v;
  o->normal = jv_val(m.n);
  o->witness_a = jv_val(m.wa);
  o->witness_b = jv_val(m.wb);
}

/* The MTD of geometries ga, gb in duals, as ce_mtd_compute finds it. */
static const char *mtd(const ce_geometry *ga, const jpose *Xa, const ce_geometry *gb, const jpose *Xb,
                       const ce_pose *xa, const ce_pose *xb, const ce_vec3 *normal, jmtd *o) {
  ce_cvx a, b;
  int hull;
  ce_cvx_make(ga, xa, &a, &hull);
  ce_cvx_make(gb, xb, &b, &hull);
  memset(o, 0, sizeof *o);
  int k = mtd_analytic(&a, Xa, &b, Xb, o);
  if (k == 0 && (k = mtd_analytic(&b, Xb, &a, Xa, o)) == 1 && o->overlap) {
    const jv t = o->wa;
    o->wa = o->wb;
    o->wb = t;
    o->n = jv_neg(o->n);
  }
  if (k == 0 && normal) return mtd_gjk(&a, Xa, &b, Xb, *normal, o); /* the result's (GJK/EPA again otherwise) */
  if (k == 0) {
    ce_mtd m;
    ce_error err;
    if (ce_mtd_compute(ga, xa, gb, xb, &m, &err) != CE_OK) return "the point contact's GJK/EPA failed";
    if (!m.overlap) return NULL;
    return mtd_gjk(&a, Xa, &b, Xb, m.normal, o);
  }
  if (k < 0) return "the point-contact normal is degenerate here (coincident centres or crossing axes)";
  return NULL;
}

/* atan(s)/s as a function of q = s^2 (ce_atan_over_x), smooth through 0. */
static jd atan_over_x_of_sq(jd q) {
  const double s = sqrt(q.v), g = ce_atan_over_x(s);
  const double dg = s < 1e-3 ? -1.0 / 3.0 + 0.4 * q.v : (1.0 / (1.0 + q.v) - g) / (2.0 * q.v);
  return jd_chain(q, g, dg);
}

typedef struct jlaw {
  double k, d, mu, vs;
  jpose Xa, Xb;
  jv wa, va, wb, vb; /* spatial velocities */
} jlaw;

/* The force law of ce_point_force at point P with normal n (out of B into
 * A) and kx = stiffness times depth: the wrench on A about A's origin
 * (torque, force) added to tau, f. */
static void add_force(const jlaw *L, jv P, jv n, jd kx, jv *tau, jv *f) {
  const jv vA = jv_add(L->va, jv_cross(L->wa, jv_sub(P, L->Xa.p)));
  const jv vB = jv_add(L->vb, jv_cross(L->wb, jv_sub(P, L->Xb.p)));
  const jv v = jv_sub(vA, vB);
  const jd vn = jv_dot(v, n);
  const jd hc = jd_addc(jd_scale(vn, -L->d), 1.0);
  if (!(hc.v > 0)) return; /* fn = 0, ft = 0 */
  const jd fn = jd_mul(kx, hc);
  jv F = jv_scale(n, fn);
  if (L->mu > 0 && fn.v > 0) {
    const jv vt = jv_axpy(v, jd_neg(vn), n);
    const jd g = atan_over_x_of_sq(jd_scale(jv_dot(vt, vt), 1.0 / (L->vs * L->vs)));
    F = jv_add(F, jv_scale(vt, jd_scale(jd_mul(g, fn), -L->mu * (2.0 / M_PI) / L->vs)));
  }
  *f = jv_add(*f, F);
  *tau = jv_add(*tau, jv_cross(jv_sub(P, L->Xa.p), F));
}

/* ---- terrain (ce_terrain_point_contact) --------------------------------------
 *
 * A feature (centre c, radius rho, terrain frame) touches the surface z =
 * F(x, y) at its closest point (x, y), where Newton's gradient
 * g = (x - c.x + e F_x, y - c.y + e F_y), e = F - c.z, vanishes. Implicit
 * differentiation: H d(x, y) = (dc.x + F_x dc.z, dc.y + F_y dc.z) with H
 * Newton's Hessian (1 + F_x^2 + e F_xx, F_x F_y + e F_xy; ., 1 + F_y^2 +
 * e F_yy); the point, the normal (-F_x, -F_y, 1)/|.| and the signed
 * distance (c - p) . n follow with the patch's second derivatives. A
 * capsule's contact point e0 + u (e1 - e0) minimises the distance along the
 * segment, so an interior u moves with the pose as n(u) . (e1 - e0) = 0
 * implies: one extra partial (slot U) carries d/du, and
 * du = -(d g)/(dg/du). Contacts at the terrain's edge (a wall or the rim)
 * are not differentiated (unavailable). */

enum { SLOT_U = 24 };

/* The closest point of c (duals, terrain frame) with depth x = rho - the
 * signed distance, the surface point ps and the normal n; 0 when c does
 * not touch, -1 at the terrain's edge. */
static int terrain_closest(const ce_heightfield *h, jv c, double rho, jd *x, jv *ps, jv *n) {
  ce_hf_closest cp;
  if (!ce_heightfield_closest(h, jv_val(c), rho, &cp) || !(rho - cp.distance > 0)) return 0;
  const ce_hf_jet J = cp.jet;
  const ce_vec3 jn = ce_hf_jet_normal(&J);
  double ax, ay, bx, by;
  ce_heightfield_domain(h, &ax, &ay, &bx, &by);
  const ce_vec3 cv = jv_val(c);
  if (!(cp.point.z == J.z && cp.normal.x == jn.x && cp.normal.y == jn.y && cp.normal.z == jn.z && cv.x > ax &&
        cv.x < bx && cv.y > ay && cv.y < by && cp.point.x > ax && cp.point.x < bx && cp.point.y > ay &&
        cp.point.y < by))
    return -1;
  const double e = J.z - cv.z;
  const double hxx = 1 + J.zx * J.zx + e * J.zxx, hxy = J.zx * J.zy + e * J.zxy, hyy = 1 + J.zy * J.zy + e * J.zyy;
  const double det = hxx * hyy - hxy * hxy;
  if (!(det > 0)) return -1;
  const jd rx = jd_axpy(c.x, J.zx, c.z), ry = jd_axpy(c.y, J.zy, c.z);
  jd px = jd_c(cp.point.x), py = jd_c(cp.point.y);
  px.d = (hyy * rx.d - hxy * ry.d) / det;
  py.d = (hxx * ry.d - hxy * rx.d) / det;
  jd F = jd_c(J.z), Fx = jd_c(J.zx), Fy = jd_c(J.zy);
  F.d = J.zx * px.d + J.zy * py.d;
  Fx.d = J.zxx * px.d + J.zxy * py.d;
  Fy.d = J.zxy * px.d + J.zyy * py.d;
  const jv up = {jd_neg(Fx), jd_neg(Fy), jd_c(1)};
  *n = jv_div(up, jv_norm(up));
  const jv p = {px, py, F};
  *ps = p;
  *x = jd_sub(jd_c(rho), jv_dot(jv_sub(c, p), *n));
  return 1;
}

/* Feature c (terrain frame) in contact: depth x, force point and normal in
 * the world (normal out of B into A). */
typedef struct jtc {
  jd x;
  jv P, n;
} jtc;

/* A capsule's contact centre: its medial segment at the u of the engine's
 * search (recovered from the result: the centre lies rho from P's witness
 * along the normal), moving with the pose when u is interior. */
static jv capsule_centre(const ce_heightfield *h, jv e0, jv e1, double rho, double u) {
  const jv ax = jv_sub(e1, e0);
  jd uu = jd_c(u);
  if (!(u > 1e-9 && u < 1 - 1e-9)) return jv_axpy(e0, uu, ax);
  uu.d[SLOT_U] = 1;
  jd x;
  jv ps, n;
  if (terrain_closest(h, jv_axpy(e0, uu, ax), rho, &x, &ps, &n) != 1) return jv_axpy(e0, jd_c(u), ax);
  const jd g = jv_dot(n, ax);
  const double gu = g.d[SLOT_U];
  uu = jd_c(u);
  if (gu != 0) uu.d = -g.d / gu;
  uu.d[SLOT_U] = 0;
  return jv_axpy(e0, uu, ax);
}

/* The features of P as ce_terrain_point_contact takes them: feature i's
 * centre (world, duals) and radius; 0 past the last. */
static int terrain_feature(const ce_geometry *gp, const jpose *XP, int32_t i, jv *c, double *rho) {
  const ce_shape *sp = &gp->shape_params;
  *rho = 0;
  if (sp->type == CE_SHAPE_BOX) {
    if (i >= 8) return 0;
    *c = jp_applyc(XP, ce_v3((i & 1 ? 0.5 : -0.5) * sp->size.x, (i & 2 ? 0.5 : -0.5) * sp->size.y,
                             (i & 4 ? 0.5 : -0.5) * sp->size.z));
    return 1;
  }
  if (gp->tri.nf > 0) {
    if (i >= gp->tri.nv) return 0;
    *c = jp_applyc(XP, gp->tri.v[i]);
    return 1;
  }
  if (i >= gp->tet.nv) return 0;
  *c = jp_applyc(XP, gp->tet.v[i]);
  return gp->tet.p && gp->tet.p[i] != 0 ? -1 : 1; /* -1: not a surface vertex, skipped */
}

/* The wrench of P on terrain T by ce_terrain_point_contact's law in duals:
 * contact i carries stiffness k x_i / sum_j x_j. NULL or why not. */
static const char *terrain_wrench(const ce_body *a, const ce_body *b, const jlaw *L, const ce_result *r, jv *tau,
                                  jv *f) {
  const int t_is_a = a->geometry->hf != NULL;
  const ce_body *T = t_is_a ? a : b, *P = t_is_a ? b : a;
  const jpose *XT = t_is_a ? &L->Xa : &L->Xb, *XP = t_is_a ? &L->Xb : &L->Xa;
  const ce_geometry *gp = P->geometry;
  const ce_heightfield *h = ce_geometry_heightfield(T->geometry);
  const ce_shape *sp = &gp->shape_params;
  const double sgn = t_is_a ? -1.0 : 1.0;
  const char *edge = "wrench Jacobians of point contact with terrain are not implemented at the terrain's edge";
  int round = sp->type == CE_SHAPE_SPHERE || sp->type == CE_SHAPE_CAPSULE;
  jv c0 = XP->p;
  if (sp->type == CE_SHAPE_CAPSULE) {
    const jv e0 = jp_applyc(XP, ce_v3(0, 0, -0.5 * sp->length)), e1 = jp_applyc(XP, ce_v3(0, 0, 0.5 * sp->length));
    /* the engine's u: the centre lies radius from P's witness, against the normal's push on P */
    const ce_vec3 wp = t_is_a ? r->point.witness_b : r->point.witness_a;
    const ce_vec3 cw = ce_axpy(wp, sgn * sp->radius, r->point.normal);
    const ce_vec3 ev0 = jv_val(e0), ax = ce_sub(jv_val(e1), ev0);
    const double u = ce_clamp01(ce_dot(ce_sub(cw, ev0), ax) / ce_dot(ax, ax));
    c0 = capsule_centre(h, jp_trotate(XT, jv_sub(e0, XT->p)), jp_trotate(XT, jv_sub(e1, XT->p)), sp->radius, u);
    c0 = jp_apply(XT, c0); /* back to the world, as the features below */
  }
  jd sum = jd_c(0);
  for (int pass = 0; pass < 2; pass++)
    for (int32_t i = 0;; i++) {
      jv cw;
      double rho = sp->radius;
      if (round) {
        if (i > 0) break;
        cw = c0;
      } else {
        const int k = terrain_feature(gp, XP, i, &cw, &rho);
        if (k == 0) break;
        if (k < 0) continue;
      }
      jd x;
      jv ps, n;
      const int t = terrain_closest(h, jp_trotate(XT, jv_sub(cw, XT->p)), rho, &x, &ps, &n);
      if (t < 0) return edge;
      if (t == 0) continue;
      if (pass == 0) {
        sum = jd_add(sum, x);
        continue;
      }
      const jv pt = jv_axpy(ps, jd_scale(x, -0.5), n);
      add_force(L, jp_apply(XT, pt), jv_scalec(jp_rotate(XT, n), sgn), jd_div(jd_scale(jd_mul(x, x), L->k), sum),
                tau, f);
    }
  return NULL;
}

/* The four matrices from the partials of the wrench (tau, f). */
static ce_errno fill(const jv *tau, const jv *f, ce_arena *arena, ce_result *r) {
  ce_jacobian *J = ce_arena_calloc(arena, 1, sizeof *J);
  if (!J) return CE_ENOMEM;
  const jd row[6] = {tau->x, tau->y, tau->z, f->x, f->y, f->z};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      J->d_pose_a[6 * i + j] = row[i].d[SLOT_POSE_A + j];
      J->d_pose_b[6 * i + j] = row[i].d[SLOT_POSE_B + j];
      J->d_velocity_a[6 * i + j] = row[i].d[SLOT_VEL_A + j];
      J->d_velocity_b[6 * i + j] = row[i].d[SLOT_VEL_B + j];
    }
  r->jacobian = J;
  r->jacobian_status = CE_JACOBIAN_OK;
  r->jacobian_note = NULL;
  return CE_OK;
}

ce_errno ce_point_jacobian(const ce_body *a, const ce_body *b, double vs, ce_arena *arena, ce_result *r) {
  jlaw L;
  L.k = r->point.stiffness;
  L.d = r->point.dissipation;
  L.mu = r->combined_material.friction;
  L.vs = vs > 0 ? vs : 1e-4;
  L.Xa = seed_pose(&a->X_WB, SLOT_POSE_A);
  L.Xb = seed_pose(&b->X_WB, SLOT_POSE_B);
  L.wa = seed_vec(a->V_WB.w, SLOT_VEL_A);
  L.va = seed_vec(a->V_WB.v, SLOT_VEL_A + 3);
  L.wb = seed_vec(b->V_WB.w, SLOT_VEL_B);
  L.vb = seed_vec(b->V_WB.v, SLOT_VEL_B + 3);
  const ce_geometry *ga = a->geometry, *gb = b->geometry;
  jv tau = jv_c(ce_v3(0, 0, 0)), f = tau;
  if (ga->hf || gb->hf) {
    const char *why = terrain_wrench(a, b, &L, r, &tau, &f);
    if (why) {
      r->jacobian_status = CE_JACOBIAN_UNAVAILABLE;
      r->jacobian = NULL;
      r->jacobian_note = why;
      return CE_OK;
    }
    return fill(&tau, &f, arena, r);
  }
  const int32_t na = ga->npieces > 0 ? ga->npieces : 1, nb = gb->npieces > 0 ? gb->npieces : 1;
  /* convex pieces (ce_pieces.c): every penetrating piece pair, summed */
  for (int32_t i = 0; i < na; i++)
    for (int32_t j = 0; j < nb; j++) {
      jmtd m;
      const char *why = mtd(ga->npieces > 0 ? ga->pieces[i] : ga, &L.Xa, gb->npieces > 0 ? gb->pieces[j] : gb,
                            &L.Xb, &a->X_WB, &b->X_WB, na * nb == 1 ? &r->point.normal : NULL, &m);
      if (why) {
        r->jacobian_status = CE_JACOBIAN_UNAVAILABLE;
        r->jacobian = NULL;
        r->jacobian_note = why;
        return CE_OK;
      }
      if (m.overlap) add_force(&L, jv_scalec(jv_add(m.wa, m.wb), 0.5), m.n, jd_scale(m.depth, L.k), &tau, &f);
    }
  return fill(&tau, &f, arena, r);
}
