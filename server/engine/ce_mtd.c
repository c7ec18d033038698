/* ce_mtd.c — minimum translational distance (MTD) between two convex shapes
 * in the world: penetration depth, normal (out of B into A) and witness
 * points (Drake's docs: "the smallest relative displacement between two volumes
 * that will take them from intersecting to just touching").
 *
 * Shapes. Primitives use their analytic parameters (geometry->shape_params),
 * not their tessellation: sphere, capsule (segment + radius), box (half
 * sizes), cylinder, ellipsoid. Everything else (CE_SHAPE_CONVEX, tet and
 * triangle meshes) is the convex hull of its mesh vertices; a mesh that is
 * not convex is flagged (hull_a / hull_b) because its hull stands in for it.
 *
 * Pairs, in order of preference:
 *  - anything – half space: the deepest point of the shape (its support
 *    point along -n); for a flat support feature (box face or edge,
 *    cylinder cap, mesh face) the feature's centre, so a resting box is
 *    pushed through its centre line;
 *  - sphere / capsule – sphere / capsule: closest points of the two medial
 *    segments (a sphere is a zero-length segment), depth = rA + rB - dist;
 *  - sphere – box: the centre's closest point on (or nearest face from
 *    inside) the box;
 *  - box – box: separating axes (3 + 3 face normals, 9 edge cross
 *    products); for polytopes the MTD direction is one of these, so the
 *    smallest overlap is the exact depth. Witnesses: the centre of the
 *    deepest feature against a face, closest points of the two edges for an
 *    edge–edge axis;
 *  - every other pair: GJK + EPA from libccd (Debian libccd-dev, double
 *    precision build). Chosen over an in-house GJK/EPA because it is the
 *    long-used implementation behind FCL's convex-convex queries, packaged
 *    by Debian, and works on support functions, so curved shapes
 *    (cylinder, ellipsoid, capsule against a box or hull) stay exact. Its
 *    EPA tolerance is set relative to the shapes' size (1e-12 of it), and a
 *    gradient polish follows (mtd_gjk), finished by Newton steps on the
 *    stationarity of the projection overlap within the closest features
 *    (ce_mtd_polish in ce_point_jacobian.c, which differentiates the
 *    same). Measured accuracy: flat contacts exact to rounding; smooth
 *    minima to rounding after the Newton steps (before them 1e-9 to 1e-6
 *    rad off); a curved shape against a polytope edge or corner
 *    (where the minimum sits in a kink of the projection overlap) to about
 *    5e-7 of the shapes' size after a valley search along the kink
 *    (test gjk_matches_closed_form_random: worst 1.5e-7 m on 0.3 m shapes).
 *
 * Degenerate inputs, documented choices:
 *  - coincident sphere centres (or intersecting capsule axes along a line):
 *    normal = world +z (or, if +z is along the capsule axis, world +x
 *    projected off the axis), depth = rA + rB;
 *  - crossing capsule axes: normal along the axes' cross product, oriented
 *    from B's centre towards A's (else +z side);
 *  - box centres coincident: the smallest-overlap axis, oriented with a
 *    non-negative world z (then x, y) component.
 * Zero-size primitives cannot be built (ce_geometry_from_shape rejects
 * them), so they never reach here. *
 * Two-way with ce_point_jacobian.c: the GJK/EPA normal is finished by
 * ce_mtd_polish there, the closest-feature evaluation in dual numbers that
 * the point-contact Jacobians differentiate, so the answer and its
 * derivative cannot disagree; that file calls back for the shapes. */
#include <ccd/ccd.h>
#include <math.h>
#include <string.h>

#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_point_contact.h"
#include "ce_mtd.h"

typedef ce_cvx cvx;

/* Describe geometry g at pose X; *hull = 1 when a non-convex mesh is
 * replaced by its hull. */
void ce_cvx_make(const ce_geometry *g, const ce_pose *X, cvx *c, int *hull) {
  memset(c, 0, sizeof *c);
  c->X = *X;
  c->scale = g->scale > 0 ? g->scale : 1;
  *hull = 0;
  const ce_shape *s = &g->shape_params;
  if (g->is_halfspace) {
    c->kind = CE_CVX_HALF;
    return;
  }
  switch (s->type) {
    case CE_SHAPE_SPHERE:
      c->kind = CE_CVX_SPHERE;
      c->r = s->radius;
      c->scale = s->radius;
      return;
    case CE_SHAPE_CAPSULE:
      c->kind = CE_CVX_CAPSULE;
      c->r = s->radius;
      c->hl = 0.5 * s->length;
      c->scale = s->radius + c->hl;
      return;
    case CE_SHAPE_BOX:
      c->kind = CE_CVX_BOX;
      c->h = ce_scale(s->size, 0.5);
      c->scale = ce_norm(c->h);
      return;
    case CE_SHAPE_CYLINDER:
      c->kind = CE_CVX_CYL;
      c->r = s->radius;
      c->hl = 0.5 * s->length;
      c->scale = hypot(c->r, c->hl);
      return;
    case CE_SHAPE_ELLIPSOID:
      c->kind = CE_CVX_ELL;
      c->h = s->size;
      c->scale = fmax(s->size.x, fmax(s->size.y, s->size.z));
      return;
    default:
      break;
  }
  c->kind = CE_CVX_PTS;
  if (g->tri.nf > 0) {
    c->v = g->tri.v;
    c->nv = g->tri.nv;
    if (s->type != CE_SHAPE_CONVEX) *hull = !g->convex;
  } else {
    c->v = g->tet.v;
    c->nv = g->tet.nv;
    if (s->type != CE_SHAPE_CONVEX) *hull = !g->convex;
  }
}

/* ---- support functions --------------------------------------------------- */

static double sgn(double x) { return x < 0 ? -1.0 : 1.0; }

/* Support point in the shape frame along local direction d. With `centre`,
 * a flat support feature (box face/edge, cylinder cap, mesh face) returns
 * its centre instead of one of its corners. */
ce_vec3 ce_cvx_support_local(const cvx *c, ce_vec3 d, int centre) {
  double dn = ce_norm(d);
  double eps = 1e-9 * (dn > 0 ? dn : 1);
  switch (c->kind) {
    case CE_CVX_SPHERE:
      return dn > 0 ? ce_scale(d, c->r / dn) : ce_v3(0, 0, 0);
    case CE_CVX_CAPSULE: {
      ce_vec3 p = dn > 0 ? ce_scale(d, c->r / dn) : ce_v3(0, 0, 0);
      p.z += (centre && fabs(d.z) <= eps) ? 0 : sgn(d.z) * c->hl;
      return p;
    }
    case CE_CVX_BOX: {
      ce_vec3 p;
      p.x = (centre && fabs(d.x) <= eps) ? 0 : sgn(d.x) * c->h.x;
      p.y = (centre && fabs(d.y) <= eps) ? 0 : sgn(d.y) * c->h.y;
      p.z = (centre && fabs(d.z) <= eps) ? 0 : sgn(d.z) * c->h.z;
      return p;
    }
    case CE_CVX_CYL: {
      double rxy = hypot(d.x, d.y);
      ce_vec3 p = ce_v3(0, 0, 0);
      if (rxy > eps || (!centre && rxy > 0)) {
        p.x = c->r * d.x / rxy;
        p.y = c->r * d.y / rxy;
      }
      p.z = (centre && fabs(d.z) <= eps) ? 0 : sgn(d.z) * c->hl;
      return p;
    }
    case CE_CVX_ELL: {
      ce_vec3 a2d = ce_v3(c->h.x * c->h.x * d.x, c->h.y * c->h.y * d.y, c->h.z * c->h.z * d.z);
      double q = sqrt(ce_dot(a2d, d));
      return q > 0 ? ce_scale(a2d, 1.0 / q) : ce_v3(0, 0, 0);
    }
    case CE_CVX_PTS: {
      int32_t best = 0;
      double bv = -INFINITY;
      for (int32_t i = 0; i < c->nv; i++) {
        double t = ce_dot(c->v[i], d);
        if (t > bv) {
          bv = t;
          best = i;
        }
      }
      if (!centre || !(dn > 0)) return c->v[best];
      /* centre of the vertices within 1e-9 scale of the supporting plane */
      double tol = 1e-9 * c->scale * dn;
      ce_vec3 sum = ce_v3(0, 0, 0);
      int32_t k = 0;
      for (int32_t i = 0; i < c->nv; i++)
        if (ce_dot(c->v[i], d) >= bv - tol) {
          sum = ce_add(sum, c->v[i]);
          k++;
        }
      return ce_scale(sum, 1.0 / k);
    }
    case CE_CVX_HALF:
    default:
      return ce_v3(0, 0, 0);
  }
}

static ce_vec3 support_world(const cvx *c, ce_vec3 d, int centre) {
  return ce_pose_apply(&c->X, ce_cvx_support_local(c, ce_mat3_tmul_vec(&c->X.R, d), centre));
}

/* ---- helpers --------------------------------------------------------------- */

/* A deterministic unit vector perpendicular to unit u: world +z made
 * perpendicular, or world +x if u is (nearly) along z. */
static ce_vec3 perpendicular(ce_vec3 u) {
  ce_vec3 z = ce_v3(0, 0, 1);
  ce_vec3 p = ce_axpy(z, -ce_dot(z, u), u);
  if (ce_norm(p) < 1e-6) {
    ce_vec3 x = ce_v3(1, 0, 0);
    p = ce_axpy(x, -ce_dot(x, u), u);
  }
  return ce_normalize(p);
}

/* Closest points of segments p0 + s (p1 - p0) and q0 + t (q1 - q0)
 * (s, t in [0, 1]); zero-length segments allowed. */
static void segment_closest(ce_vec3 p0, ce_vec3 p1, ce_vec3 q0, ce_vec3 q1, ce_vec3 *cp, ce_vec3 *cq) {
  ce_vec3 d1 = ce_sub(p1, p0), d2 = ce_sub(q1, q0), r = ce_sub(p0, q0);
  double a = ce_dot(d1, d1), e = ce_dot(d2, d2), f = ce_dot(d2, r);
  double s, t;
  const double tiny = 1e-300;
  if (a <= tiny && e <= tiny) {
    s = t = 0;
  } else if (a <= tiny) {
    s = 0;
    t = ce_clamp01(f / e);
  } else {
    double c = ce_dot(d1, r);
    if (e <= tiny) {
      t = 0;
      s = ce_clamp01(-c / a);
    } else {
      double b = ce_dot(d1, d2), den = a * e - b * b;
      s = den > 1e-14 * a * e ? ce_clamp01((b * f - c * e) / den) : 0;
      t = (b * s + f) / e;
      if (t < 0) {
        t = 0;
        s = ce_clamp01(-c / a);
      } else if (t > 1) {
        t = 1;
        s = ce_clamp01((b - c) / a);
      }
    }
  }
  *cp = ce_axpy(p0, s, d1);
  *cq = ce_axpy(q0, t, d2);
}

/* Medial segment (world) and radius of a sphere or capsule. */
static void medial(const cvx *c, ce_vec3 *p0, ce_vec3 *p1, double *r) {
  *p0 = ce_pose_apply(&c->X, ce_v3(0, 0, -c->hl));
  *p1 = ce_pose_apply(&c->X, ce_v3(0, 0, c->hl));
  *r = c->r;
}

static ce_vec3 axis_of(const ce_pose *X, int i) {
  return ce_v3(X->R.m[0][i], X->R.m[1][i], X->R.m[2][i]);
}

/* Fill out from the witness on A and the normal and depth. */
static void set_from_a(ce_mtd *o, ce_vec3 wa, ce_vec3 n, double depth) {
  o->overlap = depth > 0;
  if (!o->overlap) return;
  o->depth = depth;
  o->normal = n;
  o->witness_a = wa;
  o->witness_b = ce_axpy(wa, depth, n);
}
static void set_from_b(ce_mtd *o, ce_vec3 wb, ce_vec3 n, double depth) {
  set_from_a(o, ce_axpy(wb, -depth, n), n, depth);
}

/* ---- pairs (A, B order; callers swap) --------------------------------------- */

/* A against half space B. */
static void mtd_halfspace(const cvx *a, const cvx *b, ce_mtd *o) {
  ce_vec3 n = axis_of(&b->X, 2);
  ce_vec3 s = support_world(a, ce_neg(n), 1);
  set_from_a(o, s, n, -ce_dot(n, ce_sub(s, b->X.p)));
}

/* Sphere/capsule A against sphere/capsule B. */
static void mtd_segments(const cvx *a, const cvx *b, ce_mtd *o) {
  ce_vec3 a0, a1, b0, b1, pa, pb;
  double ra, rb;
  medial(a, &a0, &a1, &ra);
  medial(b, &b0, &b1, &rb);
  segment_closest(a0, a1, b0, b1, &pa, &pb);
  ce_vec3 d = ce_sub(pa, pb);
  double dist = ce_norm(d);
  ce_vec3 n;
  double tol = 1e-12 * (a->scale + b->scale);
  if (dist > tol) {
    n = ce_scale(d, 1.0 / dist);
  } else {
    dist = 0;
    ce_vec3 ua = ce_sub(a1, a0), ub = ce_sub(b1, b0);
    ce_vec3 x = ce_cross(ua, ub);
    double lx = ce_norm(x);
    if (lx > 1e-9 * ce_norm(ua) * ce_norm(ub) && lx > 0) {
      n = ce_scale(x, 1.0 / lx);
      ce_vec3 cc = ce_sub(a->X.p, b->X.p);
      double s = ce_dot(cc, n);
      if (s < 0 || (s == 0 && (n.z < 0 || (n.z == 0 && (n.x < 0 || (n.x == 0 && n.y < 0)))))) n = ce_neg(n);
    } else if (ce_norm(ua) > 0 || ce_norm(ub) > 0) {
      n = perpendicular(ce_normalize(ce_norm(ua) > 0 ? ua : ub));
    } else {
      n = ce_v3(0, 0, 1); /* coincident sphere centres */
    }
  }
  set_from_a(o, ce_axpy(pa, -ra, n), n, ra + rb - dist);
}

/* Sphere A against box B. */
static void mtd_sphere_box(const cvx *a, const cvx *b, ce_mtd *o) {
  ce_vec3 c = ce_pose_apply_inverse(&b->X, a->X.p);
  ce_vec3 h = b->h;
  ce_vec3 q = ce_v3(fmax(-h.x, fmin(h.x, c.x)), fmax(-h.y, fmin(h.y, c.y)), fmax(-h.z, fmin(h.z, c.z)));
  ce_vec3 d = ce_sub(c, q);
  double dist = ce_norm(d);
  if (dist > 0) {
    ce_vec3 nl = ce_scale(d, 1.0 / dist);
    ce_vec3 n = ce_pose_rotate(&b->X, nl);
    set_from_b(o, ce_pose_apply(&b->X, q), n, a->r - dist);
    return;
  }
  /* centre inside: the nearest face (ties: x before y before z) */
  double gap[3] = {h.x - fabs(c.x), h.y - fabs(c.y), h.z - fabs(c.z)};
  int i = 0;
  for (int k = 1; k < 3; k++)
    if (gap[k] < gap[i]) i = k;
  ce_vec3 nl = ce_v3(0, 0, 0), f = c;
  double s = sgn(ce_v3_get(c, i));
  if (i == 0) { nl.x = s; f.x = s * h.x; }
  if (i == 1) { nl.y = s; f.y = s * h.y; }
  if (i == 2) { nl.z = s; f.z = s * h.z; }
  set_from_b(o, ce_pose_apply(&b->X, f), ce_pose_rotate(&b->X, nl), a->r + gap[i]);
}

/* Box A against box B: separating axes. */
static void mtd_box_box(const cvx *a, const cvx *b, ce_mtd *o) {
  ce_vec3 ua[3], ub[3];
  double ha[3] = {a->h.x, a->h.y, a->h.z}, hb[3] = {b->h.x, b->h.y, b->h.z};
  for (int i = 0; i < 3; i++) {
    ua[i] = axis_of(&a->X, i);
    ub[i] = axis_of(&b->X, i);
  }
  ce_vec3 cc = ce_sub(a->X.p, b->X.p);
  double best = INFINITY;
  int best_k = -1;
  ce_vec3 best_n = ce_v3(0, 0, 1);
  double bias = 1e-9 * (a->scale + b->scale); /* prefer face axes on ties */
  for (int k = 0; k < 15; k++) {
    ce_vec3 u;
    if (k < 3) u = ua[k];
    else if (k < 6) u = ub[k - 3];
    else {
      u = ce_cross(ua[(k - 6) / 3], ub[(k - 6) % 3]);
      double l = ce_norm(u);
      if (l < 1e-9) continue; /* parallel edges: covered by face axes */
      u = ce_scale(u, 1.0 / l);
    }
    double ra = 0, rb = 0;
    for (int i = 0; i < 3; i++) {
      ra += ha[i] * fabs(ce_dot(u, ua[i]));
      rb += hb[i] * fabs(ce_dot(u, ub[i]));
    }
    double s = ce_dot(cc, u);
    double overlap = ra + rb - fabs(s);
    if (overlap <= 0) {
      o->overlap = 0;
      return;
    }
    double score = overlap + (k >= 6 ? bias : 0);
    /* face against face (two face axes within the bias): the larger face is
     * the reference, so the smaller body's face centre is the witness */
    int take = score < best - bias;
    if (!take && score < best + bias && k < 6 && best_k >= 0 && best_k < 6) {
      const double *hk = k < 3 ? ha : hb, *hbk = best_k < 3 ? ha : hb;
      int i = k % 3, j = best_k % 3;
      take = hk[(i + 1) % 3] * hk[(i + 2) % 3] > hbk[(j + 1) % 3] * hbk[(j + 2) % 3] * (1 + 1e-9);
    } else if (!take && score < best) {
      take = 1;
    }
    if (take) {
      best = score;
      best_k = k;
      if (s < 0 || (s == 0 && (u.z < 0 || (u.z == 0 && (u.x < 0 || (u.x == 0 && u.y < 0)))))) u = ce_neg(u);
      best_n = u;
    }
  }
  ce_vec3 n = best_n;
  double depth = best - (best_k >= 6 ? bias : 0);
  if (best_k < 3) {
    /* A's face: B's deepest feature, pushed into A */
    set_from_b(o, support_world(b, n, 1), n, depth);
  } else if (best_k < 6) {
    set_from_a(o, support_world(a, ce_neg(n), 1), n, depth);
  } else {
    int i = (best_k - 6) / 3, j = (best_k - 6) % 3;
    ce_vec3 ma = support_world(a, ce_neg(n), 1); /* midpoint of A's edge along ua[i] */
    ce_vec3 mb = support_world(b, n, 1);
    ce_vec3 pa, pb;
    segment_closest(ce_axpy(ma, -ha[i], ua[i]), ce_axpy(ma, ha[i], ua[i]), ce_axpy(mb, -hb[j], ub[j]),
                    ce_axpy(mb, hb[j], ub[j]), &pa, &pb);
    o->overlap = 1;
    o->depth = depth;
    o->normal = n;
    o->witness_a = pa;
    o->witness_b = pb;
  }
}

/* ---- GJK / EPA through libccd ------------------------------------------------ */

/* libccd 2.1's EPA loop has no iteration cap: it runs until a support
 * point fails to push the polytope out by epa_tolerance, and on degenerate
 * minima (a sphere centred exactly on a box corner, where every direction
 * of a whole cone is a minimum) it never stops. So the support calls of
 * one query are counted; past CCD_SUPPORT_BUDGET both shapes answer the
 * origin, whose Minkowski point (0) cannot push anything out, and EPA
 * returns what it has. GJK takes at most 2 * CCD_GJK_ITERATIONS calls, so
 * the cap only ever ends EPA; the polish below repairs its early answer (it
 * only lowers the overlap, never below the true MTD). The engine's tests
 * take at most 484 calls on regular pairs; a capped degenerate one costs
 * ~20 ms. */
#define CCD_GJK_ITERATIONS 200
#define CCD_SUPPORT_BUDGET 2000

typedef struct ccd_obj {
  const cvx *c;
  int *calls; /* shared by the two shapes of one query */
} ccd_obj;

static void ccd_support(const void *obj, const ccd_vec3_t *dir, ccd_vec3_t *vec) {
  const ccd_obj *o = obj;
  if (++*o->calls > CCD_SUPPORT_BUDGET) {
    ccdVec3Set(vec, 0, 0, 0);
    return;
  }
  ce_vec3 d = ce_v3(ccdVec3X(dir), ccdVec3Y(dir), ccdVec3Z(dir));
  ce_vec3 p = support_world(o->c, d, 0);
  ccdVec3Set(vec, p.x, p.y, p.z);
}

static void ccd_center(const void *obj, ccd_vec3_t *center) {
  const cvx *c = ((const ccd_obj *)obj)->c;
  ce_vec3 p = c->X.p;
  if (c->kind == CE_CVX_PTS && c->nv > 0) {
    ce_vec3 s = ce_v3(0, 0, 0);
    for (int32_t i = 0; i < c->nv; i++) s = ce_add(s, c->v[i]);
    p = ce_pose_apply(&c->X, ce_scale(s, 1.0 / c->nv));
  }
  ccdVec3Set(center, p.x, p.y, p.z);
}

/* Overlap of the projections of A and B on unit n: how far A must move
 * along +n to clear B. */
static double overlap_along(const cvx *a, const cvx *b, ce_vec3 n) {
  return ce_dot(support_world(b, n, 0), n) - ce_dot(support_world(a, ce_neg(n), 0), n);
}

/* Tangential gradient of overlap_along at n: b*(n) - a*(-n) without its
 * n component. */
static ce_vec3 overlap_gradient(const cvx *a, const cvx *b, ce_vec3 n) {
  ce_vec3 g = ce_sub(support_world(b, n, 0), support_world(a, ce_neg(n), 0));
  return ce_axpy(g, -ce_dot(g, n), n);
}

static ce_errno mtd_gjk(const cvx *a, const cvx *b, ce_mtd *o) {
  ccd_t ccd;
  CCD_INIT(&ccd);
  ccd.support1 = ccd_support;
  ccd.support2 = ccd_support;
  ccd.center1 = ccd_center;
  ccd.center2 = ccd_center;
  ccd.max_iterations = CCD_GJK_ITERATIONS;
  ccd.epa_tolerance = 1e-12 * (a->scale + b->scale);
  ccd.dist_tolerance = 1e-12 * (a->scale + b->scale);
  ccd_real_t depth;
  ccd_vec3_t dir, pos;
  int calls = 0;
  const ccd_obj oa = {a, &calls}, ob = {b, &calls};
  int rc = ccdGJKPenetration(&oa, &ob, &ccd, &depth, &dir, &pos);
  if (rc == -2) return CE_ENOMEM;
  if (rc != 0 || !(depth > 0)) {
    o->overlap = 0;
    return CE_OK;
  }
  /* libccd: translating B by depth * dir separates the shapes (checked on
   * two spheres), so our normal (out of B into A) is -dir. */
  ce_vec3 n = ce_neg(ce_normalize(ce_v3(ccdVec3X(&dir), ccdVec3Y(&dir), ccdVec3Z(&dir))));
  if (!(ce_norm(n) > 0)) {
    o->overlap = 0;
    return CE_OK;
  }
  /* libccd's EPA stops early on curved shapes (about 1e-5 relative on two
   * spheres), so polish: the MTD is the minimum over unit n of the
   * projection overlap f(n) = h_B(n) + h_A(-n) (h = support value), whose
   * gradient is b*(n) - a*(-n). Projected gradient steps with a step that
   * doubles on success and shrinks on failure; f only decreases and never
   * goes below the MTD, so the polish cannot make EPA's answer worse. */
  double f = overlap_along(a, b, n);
  double t = 0.25 / (a->scale + b->scale);
  for (int it = 0; it < 200 && t > 1e-14 / (a->scale + b->scale); it++) {
    ce_vec3 g = ce_sub(support_world(b, n, 0), support_world(a, ce_neg(n), 0));
    g = ce_axpy(g, -ce_dot(g, n), n);
    if (!(ce_norm(g) > 1e-15 * (a->scale + b->scale))) break;
    ce_vec3 n2 = ce_normalize(ce_axpy(n, -t, g));
    double f2 = overlap_along(a, b, n2);
    if (f2 < f) {
      n = n2;
      f = f2;
      t *= 2;
    } else {
      t *= 0.25;
    }
  }
  /* Valleys: against a polytope edge the minimum lies on a kink line of f,
   * the great circle n . e = 0 where e = p1 - p2 is the jump of the support
   * point across the line (found from the gradients on either side), and
   * plain steps stall on its walls. Project onto the line and line-search
   * along it; every accepted step lowers f. */
  double sc = a->scale + b->scale;
  for (int it = 0; it < 60; it++) {
    ce_vec3 g = overlap_gradient(a, b, n);
    double lg = ce_norm(g);
    if (!(lg > 0)) break;
    ce_vec3 u = ce_scale(g, 1.0 / lg);
    /* the support point that jumps (an edge of a polytope side) */
    ce_vec3 np = ce_normalize(ce_axpy(n, 1e-5, u)), nm = ce_normalize(ce_axpy(n, -1e-5, u));
    ce_vec3 eb = ce_sub(support_world(b, np, 0), support_world(b, nm, 0));
    ce_vec3 ea = ce_sub(support_world(a, ce_neg(np), 0), support_world(a, ce_neg(nm), 0));
    ce_vec3 e = ce_norm2(eb) >= ce_norm2(ea) ? eb : ea;
    if (!(ce_norm(e) > 1e-6 * sc)) break; /* smooth here: the gradient polish did it */
    e = ce_normalize(e);
    ce_vec3 v = ce_normalize(ce_cross(n, e));
    int moved = 0;
    for (double st = 1e-2; st > 1e-13 && !moved; st *= 0.25)
      for (int sgn_ = -1; sgn_ <= 1 && !moved; sgn_ += 2) {
        ce_vec3 n2 = ce_normalize(ce_axpy(n, sgn_ * st, v));
        n2 = ce_normalize(ce_axpy(n2, -ce_dot(n2, e), e));
        double f2 = overlap_along(a, b, n2);
        if (f2 < f) {
          n = n2;
          f = f2;
          moved = 1;
        }
      }
    if (!moved) {
      ce_vec3 n2 = ce_normalize(ce_axpy(n, -ce_dot(n, e), e)); /* onto the line itself */
      double f2 = overlap_along(a, b, n2);
      if (!(f2 < f)) break;
      n = n2;
      f = f2;
    }
  }
  set_from_a(o, support_world(a, ce_neg(n), 1), n, f); /* f >= MTD >= EPA depth */
  ce_mtd_polish(a, b, o); /* exact where the closest features fix the normal */
  return CE_OK;
}

/* ---- dispatch ------------------------------------------------------------------ */

static int is_round(const cvx *c) { return c->kind == CE_CVX_SPHERE || c->kind == CE_CVX_CAPSULE; }

/* Compute for (a, b); returns 1 if the pair was handled analytically. */
static int mtd_analytic(const cvx *a, const cvx *b, ce_mtd *o) {
  if (b->kind == CE_CVX_HALF) {
    mtd_halfspace(a, b, o);
    return 1;
  }
  if (is_round(a) && is_round(b)) {
    mtd_segments(a, b, o);
    return 1;
  }
  if (a->kind == CE_CVX_SPHERE && b->kind == CE_CVX_BOX) {
    mtd_sphere_box(a, b, o);
    return 1;
  }
  if (a->kind == CE_CVX_BOX && b->kind == CE_CVX_BOX) {
    mtd_box_box(a, b, o);
    return 1;
  }
  return 0;
}

static void swap_result(ce_mtd *o) {
  ce_vec3 t = o->witness_a;
  o->witness_a = o->witness_b;
  o->witness_b = t;
  o->normal = ce_neg(o->normal);
}

ce_errno ce_mtd_compute(const ce_geometry *ga, const ce_pose *X_WA, const ce_geometry *gb,
                        const ce_pose *X_WB, ce_mtd *out, ce_error *err) {
  memset(out, 0, sizeof *out);
  if (ga->is_halfspace && gb->is_halfspace)
    return ce_fail(err, CE_EUNSUPPORTED, "point contact: two half spaces have no minimum translational distance");
  cvx a, b;
  ce_cvx_make(ga, X_WA, &a, &out->hull_a);
  ce_cvx_make(gb, X_WB, &b, &out->hull_b);
  int ha = out->hull_a, hb = out->hull_b;
  if ((a.kind == CE_CVX_PTS && a.nv <= 0) || (b.kind == CE_CVX_PTS && b.nv <= 0))
    return ce_fail(err, CE_EUNSUPPORTED, "point contact: geometry %s has neither vertices nor an analytic shape",
                   a.kind == CE_CVX_PTS && a.nv <= 0 ? "A" : "B");
  if (mtd_analytic(&a, &b, out)) {
  } else if (mtd_analytic(&b, &a, out)) {
    if (out->overlap) swap_result(out);
  } else {
    ce_errno e = mtd_gjk(&a, &b, out);
    if (e != CE_OK) return ce_fail(err, e, "point contact: GJK/EPA ran out of memory");
  }
  if (!out->overlap) memset(out, 0, sizeof *out);
  out->hull_a = ha;
  out->hull_b = hb;
  return CE_OK;
}

/* ---- stiffness defaults ----------------------------------------------------------- */

double ce_point_volume(const ce_geometry *g) {
  const ce_shape *s = &g->shape_params;
  double r = s->radius, l = s->length;
  switch (s->type) {
    case CE_SHAPE_SPHERE: return 4.0 / 3.0 * M_PI * r * r * r;
    case CE_SHAPE_BOX: return s->size.x * s->size.y * s->size.z;
    case CE_SHAPE_CYLINDER: return M_PI * r * r * l;
    case CE_SHAPE_CAPSULE: return M_PI * r * r * l + 4.0 / 3.0 * M_PI * r * r * r;
    case CE_SHAPE_ELLIPSOID: return 4.0 / 3.0 * M_PI * s->size.x * s->size.y * s->size.z;
    default: break;
  }
  if (g->volume > 0) return g->volume;
  double sc = g->scale > 0 ? g->scale : 1;
  return sc * sc * sc;
}

#define CE_POINT_DENSITY 1000.0   /* kg/m^3, water */
#define CE_POINT_GRAVITY 9.81     /* m/s^2 */
#define CE_POINT_ALLOWANCE 1e-3   /* m, penetration allowance */

double ce_point_stiffness_default(const ce_geometry *g) {
  if (g->is_halfspace) return INFINITY;
  double V = ce_point_volume(g);
  if (g->compliance == CE_COMPLIANT && isfinite(g->modulus)) return g->modulus * cbrt(V);
  return 2.0 * CE_POINT_DENSITY * CE_POINT_GRAVITY * V / CE_POINT_ALLOWANCE;
}
