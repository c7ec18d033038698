/* ce_wrench.c — tractions integrated over the contact surface into the net
 * wrenches on both bodies (seed 000 Eq. 2–3, 7–8; seed 004).
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
 * Quadrature. Every face (triangles included) is fanned around its
 * centroid (pressure s->centroid_pressure[f]) into triangles, and each
 * triangle is integrated with the symmetric 3-point rule at its edge
 * midpoints, weight area/3, exact for polynomials of degree 2. The pressure
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

#include "ce_internal.h"

/* atan(s)/s for s >= 0, smooth through s = 0: the Taylor series
 * 1 - s^2/3 + s^4/5 below s = 1e-3 (the first omitted term, s^6/7, is below
 * 1.5e-19), the direct quotient above. */
static double atan_over_x(double s) {
  if (s < 1e-3) {
    double s2 = s * s;
    return 1.0 - s2 * (1.0 / 3.0 - s2 * (1.0 / 5.0));
  }
  return atan(s) / s;
}

typedef struct integ_ctx {
  ce_vec3 C;                /* moment point */
  ce_vec3 n;                /* face normal */
  const ce_spatial_velocity *VA, *VB;
  ce_vec3 oA, oB;           /* body origins, world */
  double d, mu, vs;
  /* accumulators */
  ce_vec3 force, torque;    /* on A, torque about C */
  double fn;                /* integral of tn */
  ce_vec3 fn_x;             /* integral of tn (x - C) */
} integ_ctx;

/* Add the traction at x (pressure p) with quadrature weight w. */
static void add_point(integ_ctx *c, ce_vec3 x, double p, double w) {
  ce_vec3 v = ce_sub(ce_velocity_at(c->VA, c->oA, x), ce_velocity_at(c->VB, c->oB, x));
  double vn = ce_dot(v, c->n);
  double hc = 1.0 - c->d * vn;
  double tn = hc > 0 ? p * hc : 0.0;
  ce_vec3 t = ce_scale(c->n, tn);
  if (c->mu > 0 && tn != 0) {
    ce_vec3 vt = ce_axpy(v, -vn, c->n);
    double s = ce_norm(vt) / c->vs;
    /* -mu (2/pi) atan(s) tn vt/|vt| = -mu (2/pi) (atan(s)/s) tn vt / vs */
    double k = -c->mu * (2.0 / M_PI) * atan_over_x(s) * tn / c->vs;
    t = ce_axpy(t, k, vt);
  }
  ce_vec3 r = ce_sub(x, c->C);
  c->force = ce_axpy(c->force, w, t);
  c->torque = ce_axpy(c->torque, w, ce_cross(r, t));
  c->fn += w * tn;
  c->fn_x = ce_axpy(c->fn_x, w * tn, r);
}

/* One triangle with vertex pressures: 3-point edge-midpoint rule. */
static void add_triangle(integ_ctx *c, ce_vec3 x0, double p0, ce_vec3 x1, double p1,
                         ce_vec3 x2, double p2) {
  double area = 0.5 * ce_norm(ce_cross(ce_sub(x1, x0), ce_sub(x2, x0)));
  if (!(area > 0)) return;
  double w = area / 3.0;
  add_point(c, ce_scale(ce_add(x0, x1), 0.5), 0.5 * (p0 + p1), w);
  add_point(c, ce_scale(ce_add(x1, x2), 0.5), 0.5 * (p1 + p2), w);
  add_point(c, ce_scale(ce_add(x2, x0), 0.5), 0.5 * (p2 + p0), w);
}

ce_errno ce_wrench_compute(const ce_surface *s, const ce_body *a, const ce_body *b,
                           const ce_material *combined, double stiction_tolerance,
                           ce_arena *arena, ce_result *r, ce_face_forces *ff) {
  const ce_wrench zero = {{0, 0, 0}, {0, 0, 0}};
  r->wrench_a = r->wrench_b = r->wrench_a_centroid = zero;
  r->area = 0;
  r->centroid = ce_v3(0, 0, 0);
  memset(&r->total, 0, sizeof r->total);
  ff->fn = NULL;
  ff->fn_x = NULL;
  int32_t nf = s ? s->nf : 0;
  if (nf <= 0) return CE_OK;

  ff->fn = ce_arena_calloc(arena, (size_t)nf, sizeof *ff->fn);
  ff->fn_x = ce_arena_calloc(arena, (size_t)nf, sizeof *ff->fn_x);
  if (!ff->fn || !ff->fn_x) return CE_ENOMEM;

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
  c.C = C;
  c.VA = &a->V_WB;
  c.VB = &b->V_WB;
  c.oA = a->X_WB.p;
  c.oB = b->X_WB.p;
  c.d = combined ? combined->dissipation : 0;
  c.mu = combined ? combined->friction : 0;
  c.vs = stiction_tolerance > 0 ? stiction_tolerance : 1e-4;

  ce_vec3 force = ce_v3(0, 0, 0), torque = ce_v3(0, 0, 0), nforce = ce_v3(0, 0, 0);
  double fn_total = 0;
  ce_vec3 fnx_total = ce_v3(0, 0, 0);
  for (int32_t f = 0; f < nf; f++) {
    int32_t o = s->face_offsets[f], m = s->face_offsets[f + 1] - o;
    const int32_t *ids = s->face_vertices + o;
    c.n = s->normal[f];
    c.force = c.torque = c.fn_x = ce_v3(0, 0, 0);
    c.fn = 0;
    if (m >= 3) {
      ce_vec3 xc = s->centroid[f];
      double pc = s->centroid_pressure[f];
      for (int32_t i = 0; i < m; i++) {
        int32_t j = i + 1 == m ? 0 : i + 1;
        add_triangle(&c, xc, pc, s->vertices[ids[i]], s->pressure[ids[i]], s->vertices[ids[j]],
                     s->pressure[ids[j]]);
      }
    }
    force = ce_add(force, c.force);
    torque = ce_add(torque, c.torque);
    nforce = ce_axpy(nforce, c.fn, c.n);
    ff->fn[f] = c.fn;
    /* fn_x was accumulated relative to C: integral tn x = fn C + integral tn (x - C) */
    ff->fn_x[f] = ce_axpy(c.fn_x, c.fn, C);
    fn_total += c.fn;
    fnx_total = ce_add(fnx_total, c.fn_x);
  }

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
  r->total.point = fn_total > 0 ? ce_axpy(C, 1.0 / fn_total, fnx_total) : C;
  return CE_OK;
}
