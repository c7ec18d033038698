/* ce_wrench.c — tractions integrated over the contact surface into the net
 * wrenches on both bodies (Elandt et al. 2019, Eq. 2–3, 7–8; Drake's docs).
 *
 * At a surface point x with pressure p and face normal n (out of B into A):
 *   v   = v_A(x) - v_B(x)                       relative velocity of the
 *                                               material points of A and B
 *   vn  = v . n                                 > 0 when separating
 *   tn  = p * max(0, 1 - d vn)                  Hunt–Crossley normal traction
 *   vt  = v - vn n                              slip velocity
 *   tt  = -mu (2/pi) atan(|vt|/vs) tn vt/|vt|   regularised Coulomb friction
 * and the traction on A is tn n + tt (on B its negative).
 *
 * Quadrature. Without dissipation and friction, or without relative
 * motion, the traction is p n and each face's force and moment come from
 * the closed forms in static_polygon_moments(). Under a relative
 * translation (w_A = w_B) the velocity is the same everywhere, so on each
 * face the traction is those closed forms times the constant factor
 * (1 - d vn)+, plus one constant friction vector times them (exact, like
 * the rule below for these integrands). Otherwise every face (triangles
 * included) is fanned around its centroid (pressure
 * s->centroid_pressure[f]) into triangles over its corners (vertices lying
 * on a straight edge are skipped, see corners()), and each triangle is
 * integrated with the symmetric 3-point rule at its edge midpoints, weight
 * area/3, exact for polynomials of degree 2 (adjacent triangles share the
 * midpoint of their common spoke, so a face with k corners needs 2k
 * evaluations, taken two at a time, see add_face()); the slip factor
 * atan(s)/s uses an exact series when s >= 100 (atan_far()). The pressure
 * is linear on each face, so without dissipation and friction the force
 * (degree 1) and the moment (linear pressure times linear x, degree 2) are
 * exact whatever the representation: a polygon and its centroid fan give
 * the same wrench. With dissipation, and a linear relative velocity field,
 * the normal traction p (1 - d vn) is quadratic, so the force stays exact
 * where the traction is positive; the moment (cubic) and the friction
 * (non-polynomial) are approximations that converge as the faces shrink.
 *
 * Moments are summed about the area-weighted surface centroid C (short lever
 * arms, little cancellation), then shifted to each body's origin. The wrench
 * on B is minus the wrench on A about C, so Newton's third law holds by
 * construction. */
#include <math.h>
#include <string.h>

#include "ce_passes.h"
#include "ce_surface.h"

/* Integration state. Points are handled relative to the moment point C
 * (r = x - C). The relative velocity field is that of a rigid motion,
 * v(x) = v_A(x) - v_B(x) = vC + w x r with vC = v_A(C) - v_B(C) and
 * w = w_A - w_B. The normal traction's force and moment follow from the
 * per-face sums fn = Int tn and fn_r = Int tn r (force fn n, moment
 * fn_r x n); friction is summed point by point. Without dissipation and
 * friction (kin == 0) the velocities are not needed at all. */
typedef struct integ_ctx {
  ce_vec3 n;                /* face normal */
  ce_vec3 vC, w;            /* relative velocity at C, relative spin */
  double d, mu, vs;
  double big2;              /* (CE_WRENCH_ATAN_FAR vs)^2: slip speeds^2 above it use atan_far() */
  int kin;                  /* d > 0 or mu > 0 */
} integ_ctx;

/* Per-face sums. A local of add_face(), apart from the context, so that the
 * compiler keeps them in registers (stores through a context pointer could
 * alias the pressure array and would be redone at every point). */
typedef struct face_acc {
  double fn;                /* integral of tn */
  ce_vec3 fn_r;             /* integral of tn r */
  ce_vec3 ft, tt;           /* friction force on A and its moment about C */
} face_acc;

/* The state of the integrand at one point: r = x - C, pressure, normal
 * relative velocity and slip velocity. All four are affine in x over a face
 * (the pressure is linear, the velocity field rigid), so the state at an
 * edge midpoint is the mean of the states at its ends: each vertex's
 * velocity is computed once per face instead of at every quadrature point
 * (a rounding-level difference from evaluating vC + w x r there). Vertices
 * keep half their state (vertex_half), so a midpoint is a plain sum
 * (halving is exact). */
typedef struct qpoint {
  ce_vec3 r;
  double p, vn;
  ce_vec3 vt;
} qpoint;

static inline __attribute__((always_inline)) qpoint vertex_half(const integ_ctx *c, ce_vec3 r, double p) {
  qpoint q;
  ce_vec3 v = ce_add(c->vC, ce_cross(c->w, r));
  double vn = ce_dot(v, c->n);
  q.r = ce_scale(r, 0.5);
  q.p = 0.5 * p;
  q.vn = 0.5 * vn;
  q.vt = ce_scale(ce_axpy(v, -vn, c->n), 0.5);
  return q;
}

static inline __attribute__((always_inline)) qpoint mid_point(const qpoint *a, const qpoint *b) {
  qpoint q;
  q.r = ce_add(a->r, b->r);
  q.p = a->p + b->p;
  q.vn = a->vn + b->vn;
  q.vt = ce_add(a->vt, b->vt);
  return q;
}

/* (2/pi) atan(u) for u = 1/s <= 1/CE_WRENCH_ATAN_FAR = 0.01, so that
 * (2/pi) atan(s) = 1 - (2/pi) atan(u) (atan(s) = pi/2 - atan(1/s)), from the
 * alternating series atan(u) = u - u^3/3 + u^5/5 - u^7/7: the first omitted
 * term bounds the error, u^9/9 <= 1.2e-19, far below the rounding of the
 * result (~1, ulp 2.2e-16). libm's atan costs ~70 instructions, this ~10,
 * and sliding contacts, where the slip speed is many stiction tolerances
 * (0.1 m/s = 1000 vs by default), take it at nearly every point. */
#define CE_WRENCH_ATAN_FAR 100.0

static inline double atan_far(double u) {
  double u2 = u * u;
  double q = 1.0 / 3 - u2 * (1.0 / 5 - u2 * (1.0 / 7));
  return (2.0 / M_PI) * (u * (1.0 - u2 * q));
}

/* (2/pi) atan(|vt|/vs) / |vt| for |vt|^2 = vt2: the friction traction is
 * -mu tn vt times this (finite, 2/(pi vs), at vt = 0). */
static inline __attribute__((always_inline)) double slip_factor(const integ_ctx *c, double vt2) {
  if (vt2 >= c->big2) {
    double inv = 1.0 / sqrt(vt2);
    return (1.0 - atan_far(c->vs * inv)) * inv;
  }
  /* (2/pi) atan(s) / |vt| = (2/pi) (atan(s)/s) / vs */
  return (2.0 / M_PI) * ce_atan_over_x(sqrt(vt2) / c->vs) / c->vs;
}

/* Add the traction at q with quadrature weight w. */
static inline __attribute__((always_inline)) void add_point(const integ_ctx *c, face_acc *acc, const qpoint *q,
                                                            double w) {
  double hc = 1.0 - c->d * q->vn;
  double tn = hc > 0 ? q->p * hc : 0.0;
  double wt = w * tn;
  acc->fn += wt;
  acc->fn_r = ce_axpy(acc->fn_r, wt, q->r);
  if (c->mu > 0 && tn != 0) {
    ce_vec3 f = ce_scale(q->vt, -wt * c->mu * slip_factor(c, ce_norm2(q->vt)));
    acc->ft = ce_add(acc->ft, f);
    acc->tt = ce_add(acc->tt, ce_cross(q->r, f));
  }
}

/* The area of the triangle whose corners are 2a, 2b, 2c (half states): the
 * face is planar with unit normal n, so |cross| = |cross . n| (no sqrt). A
 * degenerate (or non-finite) triangle weighs nothing. */
static inline __attribute__((always_inline)) double fan_area(ce_vec3 a, ce_vec3 b, ce_vec3 c, ce_vec3 n) {
  double t = 2.0 * fabs(ce_dot(ce_cross(ce_sub(b, a), ce_sub(c, a)), n));
  return t > 0 ? t : 0.0;
}

/* One face as the fan of triangles (centroid, corner i, corner i+1), each
 * integrated with the 3-point edge-midpoint rule (weight area/3). Adjacent
 * triangles share the midpoint of their common spoke (centroid, corner i),
 * so the rule needs 2k distinct points for k corners, not 3k: each spoke
 * midpoint is evaluated once with the summed weight (A_{i-1} + A_i)/3, each
 * outer edge midpoint with A_i/3. Same quadrature, fewer evaluations. */
/* Two quadrature points at once, one per lane of a GCC vector (SSE2 on
 * x86-64, NEON on arm64): the rule pairs each outer edge midpoint with a
 * spoke midpoint, and both need exactly the same operations. Lane
 * arithmetic is the scalar IEEE arithmetic, so each point's traction is
 * bit-for-bit what add_point() gives; only the order of the face sums
 * changes (two partial sums, added at the end). */
typedef double v2d __attribute__((vector_size(16)));
typedef long long v2i __attribute__((vector_size(16)));

typedef struct pair_acc {
  v2d fn, rx, ry, rz, fx, fy, fz, tx, ty, tz;
} pair_acc;

/* The pair (a, b) with weights (wa, wb). Friction goes the vector way only
 * when both slips are fast (vt2 >= big2, atan_far(), finite factor);
 * otherwise each point takes add_point(). */
static inline __attribute__((always_inline)) void add_pair(const integ_ctx *c, pair_acc *pa, const qpoint *a,
                                                           const qpoint *b, double wa, double wb) {
  const v2d zero = {0, 0}, one = {1, 1};
  v2d p = {a->p, b->p}, vn = {a->vn, b->vn}, w = {wa, wb};
  v2d rx = {a->r.x, b->r.x}, ry = {a->r.y, b->r.y}, rz = {a->r.z, b->r.z};
  v2d hc = one - c->d * vn;
  v2d tn = (v2d)((v2i)(p * hc) & (hc > zero)); /* hc > 0 ? p hc : 0 */
  const double vt2a = ce_norm2(a->vt), vt2b = ce_norm2(b->vt);
  if (c->mu > 0 && !(vt2a >= c->big2 && vt2b >= c->big2)) {
    face_acc t = {0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
    add_point(c, &t, a, wa);
    add_point(c, &t, b, wb);
    pa->fn[0] += t.fn;
    pa->rx[0] += t.fn_r.x;
    pa->ry[0] += t.fn_r.y;
    pa->rz[0] += t.fn_r.z;
    pa->fx[0] += t.ft.x;
    pa->fy[0] += t.ft.y;
    pa->fz[0] += t.ft.z;
    pa->tx[0] += t.tt.x;
    pa->ty[0] += t.tt.y;
    pa->tz[0] += t.tt.z;
    return;
  }
  v2d wt = w * tn;
  pa->fn += wt;
  pa->rx += wt * rx;
  pa->ry += wt * ry;
  pa->rz += wt * rz;
  if (c->mu > 0) {
    v2d sq = {sqrt(vt2a), sqrt(vt2b)};
    v2d inv = one / sq;
    v2d u = c->vs * inv, u2 = u * u;
    v2d q = (1.0 / 3) - u2 * ((1.0 / 5) - u2 * (1.0 / 7));
    v2d af = (2.0 / M_PI) * (u * (one - u2 * q));
    v2d coef = -wt * c->mu * ((one - af) * inv); /* 0 where tn = 0 */
    v2d fx = (v2d){a->vt.x, b->vt.x} * coef, fy = (v2d){a->vt.y, b->vt.y} * coef,
        fz = (v2d){a->vt.z, b->vt.z} * coef;
    pa->fx += fx;
    pa->fy += fy;
    pa->fz += fz;
    pa->tx += ry * fz - rz * fy;
    pa->ty += rz * fx - rx * fz;
    pa->tz += rx * fy - ry * fx;
  }
}

/* One face as the fan of triangles (centroid, corner i, corner i+1), each
 * integrated with the 3-point edge-midpoint rule (weight area/3). Adjacent
 * triangles share the midpoint of their common spoke (centroid, corner i),
 * so the rule needs 2k distinct points for k corners, not 3k: each spoke
 * midpoint is evaluated once with the summed weight (A_{i-1} + A_i)/3, each
 * outer edge midpoint with A_i/3. Same quadrature, fewer evaluations. The
 * edge midpoint of triangle i is paired with spoke i (add_pair), the first
 * edge midpoint with spoke 0 at the end (its weight needs the last area). */
static face_acc add_face(const integ_ctx *c, const ce_vec3 *sv, const double *sp, const int32_t *use, int32_t k,
                         ce_vec3 C, ce_vec3 xc, double pc) {
  pair_acc pa;
  memset(&pa, 0, sizeof pa);
  const qpoint qc = vertex_half(c, ce_sub(xc, C), pc);
  const qpoint q0 = vertex_half(c, ce_sub(sv[use[0]], C), sp[use[0]]);
  qpoint qi = vertex_half(c, ce_sub(sv[use[1]], C), sp[use[1]]);
  const double a0 = fan_area(qc.r, q0.r, qi.r, c->n);
  const qpoint e0 = mid_point(&q0, &qi);
  double a_prev = a0;
  for (int32_t i = 1; i < k; i++) {
    int32_t j = i + 1 == k ? 0 : i + 1;
    qpoint qj = vertex_half(c, ce_sub(sv[use[j]], C), sp[use[j]]);
    double a = fan_area(qc.r, qi.r, qj.r, c->n);
    qpoint me = mid_point(&qi, &qj), ms = mid_point(&qc, &qi);
    add_pair(c, &pa, &me, &ms, a * (1.0 / 3.0), (a_prev + a) * (1.0 / 3.0));
    a_prev = a;
    qi = qj;
  }
  /* the first edge and the spoke to corner 0, shared by the last triangle
   * and the first */
  qpoint ms = mid_point(&qc, &q0);
  add_pair(c, &pa, &e0, &ms, a0 * (1.0 / 3.0), (a_prev + a0) * (1.0 / 3.0));
  face_acc acc;
  acc.fn = pa.fn[0] + pa.fn[1];
  acc.fn_r = ce_v3(pa.rx[0] + pa.rx[1], pa.ry[0] + pa.ry[1], pa.rz[0] + pa.rz[1]);
  acc.ft = ce_v3(pa.fx[0] + pa.fx[1], pa.fy[0] + pa.fy[1], pa.fz[0] + pa.fz[1]);
  acc.tt = ce_v3(pa.tx[0] + pa.tx[1], pa.ty[0] + pa.ty[1], pa.tz[0] + pa.tz[1]);
  return acc;
}

/* Corners of a convex polygon: its vertices without those lying on the
 * straight edge between their neighbours (within CE_WRENCH_COLLINEAR of the
 * neighbours' distance). Clipping often leaves such a vertex where a clip
 * plane meets an edge that it (nearly) contains, and whether it appears can
 * depend on rounding; it does not change the polygon, so the quadrature must
 * not depend on it either (otherwise friction and moments with dissipation,
 * which the rule does not integrate exactly, would jump with the frame the
 * query is posed in). Dropping a vertex at distance h from its neighbours'
 * line removes a sliver of area <= h |ac| / 2, below 1e-10 of |ac|^2.
 * Walks the polygon from its sharpest vertex (always a corner), comparing each
 * vertex with the last corner kept and the next vertex, so a run of collinear
 * vertices or a pair of near-duplicates leaves exactly one corner. Writes the
 * corner ids to out and returns their count; returns -1 when every vertex is
 * a corner or m exceeds the buffer (the caller then uses ids as they are). */
#define CE_WRENCH_MAX_CORNERS 64
#define CE_WRENCH_COLLINEAR 1e-10

/* Whether b is a corner between a and c: its distance from the line through
 * a and c exceeds CE_WRENCH_COLLINEAR |c - a| (squared, no division). */
static int is_corner(ce_vec3 a, ce_vec3 b, ce_vec3 c) {
  ce_vec3 ac = ce_sub(c, a);
  double l2 = ce_norm2(ac);
  double h2 = ce_norm2(ce_cross(ce_sub(b, a), ac)); /* (distance * |ac|)^2 */
  if (!(l2 > 0)) return ce_norm2(ce_sub(b, a)) > 0;
  return h2 > CE_WRENCH_COLLINEAR * CE_WRENCH_COLLINEAR * l2 * l2;
}

static double sharpness(ce_vec3 a, ce_vec3 b, ce_vec3 c) {
  ce_vec3 ac = ce_sub(c, a);
  double l2 = ce_norm2(ac);
  return l2 > 0 ? ce_norm2(ce_cross(ce_sub(b, a), ac)) / (l2 * l2) : 0;
}

static int32_t corners(const ce_vec3 *v, const int32_t *ids, int32_t m, int32_t *out) {
  if (m > CE_WRENCH_MAX_CORNERS) return -1;
  /* common case: every vertex is a corner */
  int32_t i;
  for (i = 0; i < m; i++)
    if (!is_corner(v[ids[i == 0 ? m - 1 : i - 1]], v[ids[i]], v[ids[i + 1 == m ? 0 : i + 1]])) break;
  if (i == m) return -1; /* all corners: use ids as they are */
  int32_t start = 0;
  double best = -1;
  for (i = 0; i < m; i++) {
    double h = sharpness(v[ids[i == 0 ? m - 1 : i - 1]], v[ids[i]], v[ids[i + 1 == m ? 0 : i + 1]]);
    if (h > best) {
      best = h;
      start = i;
    }
  }
  int32_t k = 0;
  out[k++] = ids[start];
  for (int32_t t = 1; t < m; t++) {
    int32_t a = (start + t) % m, b = (start + t + 1) % m;
    if (is_corner(v[out[k - 1]], v[ids[a]], v[ids[b]])) out[k++] = ids[a];
  }
  return k;
}

/* Without dissipation and friction (or relative motion) the normal
 * traction is the linear pressure itself, and its integrals have closed
 * forms: fanning the polygon from its vertex 0 into triangles (0, i, j) of
 * area a, with r relative to vertex 0 (r0 = 0), over each
 *   Int p   = a (p0 + pi + pj) / 3,
 *   Int p r = a/12 ((p0 + pi + pj)(ri + rj) + pi ri + pj rj),
 * exact for a linear p; they equal what the quadrature below gives (it is
 * exact for these degree-1 and degree-2 integrands) up to rounding. The
 * face is planar with unit normal n, so 2a = (ri x rj) . n without a sqrt;
 * signed, these sum to the exact polygon whatever its shape, and a polygon
 * given clockwise about n is handled by the sign of the total. The moment
 * about C is Int p r + (x0 - C) Int p: lever arms within the face, then one
 * shift. */
static inline __attribute__((always_inline)) void static_polygon_moments(const ce_vec3 *v, const double *p,
                                                                         const int32_t *ids, int32_t m, ce_vec3 C,
                                                                         ce_vec3 n, double *fn, ce_vec3 *fn_r) {
  if (m < 3) {
    *fn = 0;
    *fn_r = ce_v3(0, 0, 0);
    return;
  }
  const ce_vec3 x0 = v[ids[0]];
  const double p0 = p[ids[0]];
  ce_vec3 ri = ce_sub(v[ids[1]], x0);
  double pi = p[ids[1]];
  double D = 0, F = 0; /* sums of 2a and of 2a (p0 + pi + pj) */
  ce_vec3 Q = ce_v3(0, 0, 0); /* sum of 2a ((sp + pi) ri + (sp + pj) rj) */
  for (int32_t i = 2; i < m; i++) {
    ce_vec3 rj = ce_sub(v[ids[i]], x0);
    double pj = p[ids[i]];
    double d = ce_dot(ce_cross(ri, rj), n);
    double sp = p0 + pi + pj;
    double u = d * (sp + pi), w = d * (sp + pj);
    D += d;
    F += d * sp;
    Q.x += u * ri.x + w * rj.x;
    Q.y += u * ri.y + w * rj.y;
    Q.z += u * ri.z + w * rj.z;
    ri = rj;
    pi = pj;
  }
  double sf = D < 0 ? -1.0 / 6.0 : 1.0 / 6.0;
  double f = F * sf;
  *fn = f;
  *fn_r = ce_axpy(ce_scale(Q, 0.25 * sf), f, ce_sub(x0, C));
}

/* A face's fn and fn_r = integral of p (x - C): from the builder's
 * pressure moments when there are some, else by the closed forms. */
static inline __attribute__((always_inline)) void face_moments(const ce_surface *s, const ce_face_moments *pm,
                                                               int32_t f, ce_vec3 C, ce_vec3 n, double *fn,
                                                               ce_vec3 *fnr) {
  if (pm) {
    *fn = pm->fn[f];
    *fnr = ce_scale(ce_sub(pm->cp[f], C), *fn);
    return;
  }
  const int32_t *so = s->face_offsets;
  static_polygon_moments(s->vertices, s->pressure, s->face_vertices + so[f], so[f + 1] - so[f], C, n, fn, fnr);
}

/* The per-face arrays of *ff (fn, fn_x) and, where tractions have
 * friction (kin) of *fr (fr may be NULL); every entry is written by the
 * wrench pass. Without relative motion fr's arrays stay NULL: no friction. */
static ce_errno face_forces_alloc(ce_face_forces *ff, ce_face_friction *fr, int kin, int32_t nf, ce_arena *arena) {
  ff->fn = ce_arena_alloc(arena, (size_t)nf * sizeof *ff->fn);
  ff->fn_x = ce_arena_alloc(arena, (size_t)nf * sizeof *ff->fn_x);
  if (!ff->fn || !ff->fn_x) return CE_ENOMEM;
  if (fr && kin) {
    fr->ft = ce_arena_alloc(arena, (size_t)nf * sizeof *fr->ft);
    fr->tt = ce_arena_alloc(arena, (size_t)nf * sizeof *fr->tt);
    if (!fr->ft || !fr->tt) return CE_ENOMEM;
  }
  return CE_OK;
}

/* The surface's sums for the patch pass (ce_face_forces). */
static void face_sums(ce_face_forces *ff, double area, ce_vec3 ac, double fn, ce_vec3 fnx, ce_vec3 nforce) {
  ff->sums = 1;
  ff->area = area;
  ff->area_centroid = ac;
  ff->fn_sum = fn;
  ff->fn_x_sum = fnx;
  ff->fn_n = nforce;
}

ce_errno ce_wrench_compute(const ce_surface *s, const ce_body *a, const ce_body *b,
                           const ce_material *combined, double stiction_tolerance,
                           const ce_face_moments *pm, ce_arena *arena, ce_result *r, ce_face_forces *ff) {
  return ce_wrench_compute_friction(s, a, b, combined, stiction_tolerance, pm, arena, r, ff, NULL);
}

ce_errno ce_wrench_compute_friction(const ce_surface *s, const ce_body *a, const ce_body *b,
                                    const ce_material *combined, double stiction_tolerance,
                                    const ce_face_moments *pm, ce_arena *arena, ce_result *r,
                                    ce_face_forces *ff, ce_face_friction *fr) {
  const ce_wrench zero = {{0, 0, 0}, {0, 0, 0}};
  r->wrench_a = r->wrench_b = r->wrench_a_centroid = zero;
  r->area = 0;
  r->centroid = ce_v3(0, 0, 0);
  memset(&r->total, 0, sizeof r->total);
  memset(ff, 0, sizeof *ff);
  if (fr) fr->ft = fr->tt = NULL;
  int32_t nf = s ? s->nf : 0;
  if (nf <= 0) return CE_OK;

  /* Surface centroid: area-weighted face centroids (their plain mean if all
   * faces are degenerate, so C stays on the surface). */
  double area = 0;
  ce_vec3 ac = ce_v3(0, 0, 0), mean = ce_v3(0, 0, 0);
  for (int32_t f = 0; f < nf; f++) {
    area += s->area[f];
    ac = ce_axpy(ac, s->area[f], s->centroid[f]);
    mean = ce_add(mean, s->centroid[f]);
  }
  ce_vec3 C = area > 0 ? ce_scale(ac, 1.0 / area) : ce_scale(mean, 1.0 / nf);
  r->area = area;
  r->centroid = C;

  integ_ctx c;
  memset(&c, 0, sizeof c);
  c.vC = ce_sub(ce_velocity_at(&a->V_WB, a->X_WB.p, C), ce_velocity_at(&b->V_WB, b->X_WB.p, C));
  c.w = ce_sub(a->V_WB.w, b->V_WB.w);
  c.d = combined ? combined->dissipation : 0;
  c.mu = combined ? combined->friction : 0;
  c.vs = stiction_tolerance > 0 ? stiction_tolerance : 1e-4;
  c.big2 = (CE_WRENCH_ATAN_FAR * c.vs) * (CE_WRENCH_ATAN_FAR * c.vs);
  /* Without relative motion (vC = 0 and w = 0 exactly) the tractions are
   * p n whatever d and mu: hc = 1 and the slip, hence the friction, is 0. */
  c.kin = (c.d > 0 || c.mu > 0) && (ce_norm2(c.vC) > 0 || ce_norm2(c.w) > 0);
  if (face_forces_alloc(ff, fr, c.kin, nf, arena) != CE_OK) return CE_ENOMEM;

  int32_t cid[CE_WRENCH_MAX_CORNERS];
  ce_vec3 force = ce_v3(0, 0, 0), torque = ce_v3(0, 0, 0), nforce = ce_v3(0, 0, 0);
  double fn_total = 0;
  ce_vec3 fnr_total = ce_v3(0, 0, 0), fnx_total = ce_v3(0, 0, 0);
  if (pm && !pm->fn) pm = NULL;
  if (!c.kin) {
    /* Tractions p n: the closed forms, face by face, without the
     * quadrature state (the friction terms are zero, so force = nforce). */
    for (int32_t f = 0; f < nf; f++) {
      const ce_vec3 n = s->normal[f];
      double fn;
      ce_vec3 fnr;
      face_moments(s, pm, f, C, n, &fn, &fnr);
      nforce = ce_axpy(nforce, fn, n);
      torque = ce_add(torque, ce_cross(fnr, n));
      ff->fn[f] = fn;
      /* integral tn x = fn C + integral tn (x - C) */
      fnx_total = ce_add(fnx_total, ff->fn_x[f] = ce_axpy(fnr, fn, C));
      fn_total += fn;
      fnr_total = ce_add(fnr_total, fnr);
    }
    force = nforce;
  } else if (ce_norm2(c.w) == 0) {
    /* Relative translation (w_A = w_B exactly): the relative velocity vC is
     * the same at every point, so on each face hc = 1 - d vn and the slip
     * are constant, the normal traction hc p is linear (closed forms, as
     * without motion, scaled by hc) and the friction traction is that
     * linear traction times one constant vector F = -mu g(vt) vt:
     * Int tn F = fn F, Int r x tn F = fn_r x F. The quadrature gives the
     * same up to rounding: it is exact for these degree-1 and degree-2
     * integrands. One slip factor per face instead of one per point. */
    for (int32_t f = 0; f < nf; f++) {
      const ce_vec3 n = s->normal[f];
      double vn = ce_dot(c.vC, n);
      double hc = 1.0 - c.d * vn;
      double fn = 0;
      ce_vec3 fnr = ce_v3(0, 0, 0), ft = ce_v3(0, 0, 0), tt = ce_v3(0, 0, 0);
      if (hc > 0) {
        face_moments(s, pm, f, C, n, &fn, &fnr);
        fn *= hc;
        fnr = ce_scale(fnr, hc);
        if (c.mu > 0 && fn != 0) {
          ce_vec3 vt = ce_axpy(c.vC, -vn, n);
          ce_vec3 F = ce_scale(vt, -c.mu * slip_factor(&c, ce_norm2(vt)));
          ft = ce_scale(F, fn);
          tt = ce_cross(fnr, F);
        }
      }
      ce_vec3 fnv = ce_scale(n, fn);
      force = ce_add(force, ce_add(fnv, ft));
      torque = ce_add(torque, ce_add(ce_cross(fnr, n), tt));
      nforce = ce_add(nforce, fnv);
      ff->fn[f] = fn;
      fnx_total = ce_add(fnx_total, ff->fn_x[f] = ce_axpy(fnr, fn, C));
      if (fr) {
        fr->ft[f] = ft;
        fr->tt[f] = tt;
      }
      fn_total += fn;
      fnr_total = ce_add(fnr_total, fnr);
    }
  } else {
    for (int32_t f = 0; f < nf; f++) {
      int32_t o = s->face_offsets[f], m = s->face_offsets[f + 1] - o;
      const int32_t *ids = s->face_vertices + o;
      c.n = s->normal[f];
      face_acc acc = {0, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
      int32_t k = m >= 3 ? corners(s->vertices, ids, m, cid) : 0;
      const int32_t *use = cid;
      if (k < 0) {
        use = ids;
        k = m;
      }
      if (k >= 3) acc = add_face(&c, s->vertices, s->pressure, use, k, C, s->centroid[f], s->centroid_pressure[f]);
      ce_vec3 fnv = ce_scale(c.n, acc.fn);
      force = ce_add(force, ce_add(fnv, acc.ft));
      torque = ce_add(torque, ce_add(ce_cross(acc.fn_r, c.n), acc.tt));
      nforce = ce_add(nforce, fnv);
      ff->fn[f] = acc.fn;
      fnx_total = ce_add(fnx_total, ff->fn_x[f] = ce_axpy(acc.fn_r, acc.fn, C));
      if (fr) {
        fr->ft[f] = acc.ft;
        fr->tt[f] = acc.tt;
      }
      fn_total += acc.fn;
      fnr_total = ce_add(fnr_total, acc.fn_r);
    }
  }

  face_sums(ff, area, ac, fn_total, fnx_total, nforce);
  ce_wrench wc = {torque, force};
  r->wrench_a_centroid = wc;
  r->wrench_a = ce_wrench_shift(wc, C, a->X_WB.p);
  r->wrench_b = ce_wrench_shift(ce_wrench_neg(wc), C, b->X_WB.p);

  /* The whole surface as one patch: summed normal tractions and their
   * centre of pressure (the centroid when no pressure acts). Patch passes
   * may refine this. */
  r->total.faces = nf;
  r->total.area = area;
  r->total.normal_force = nforce;
  r->total.normal_force_magnitude = ce_norm(nforce);
  r->total.point = fn_total > 0 ? ce_axpy(C, 1.0 / fn_total, fnr_total) : C;
  return CE_OK;
}

int32_t ce_wrench_corners(const ce_vec3 *v, const int32_t *ids, int32_t m, int32_t *out) {
  return corners(v, ids, m, out);
}
