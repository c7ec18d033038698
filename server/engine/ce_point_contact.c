/* ce_point_contact.c — compliant point contact (Drake's docs), the model for
 * rigid–rigid pairs and the per-pair fallback of ce_contact().
 *
 * From the minimum translational distance (ce_mtd.c): depth x, normal n
 * (out of B into A), witness points wa, wb. The force acts at the midpoint
 * P = (wa + wb)/2 of the witnesses:
 *   k    = k1 k2 / (k1 + k2)                     combined stiffness
 *   d    = k2/(k1+k2) d1 + k1/(k1+k2) d2         combined dissipation (the
 *                                                softer side dominates)
 *   v    = v_A(P) - v_B(P),  vn = v . n,  xdot = -vn
 *   fn   = k x (1 + d xdot)+                     Hunt–Crossley normal force
 *   vt   = v - vn n
 *   ft   = -mu (2/pi) atan(|vt|/vs) fn vt/|vt|   regularised Coulomb, as the
 *                                                hydroelastic tractions
 * and the force on A is fn n + ft (on B its negative). k_i is the body's
 * point_stiffness (ce_body) when > 0, else ce_point_stiffness_default()
 * (ce.h documents the formula); a half space is infinitely stiff, so the
 * other side's k and d are the pair's. mu combines as in the hydroelastic
 * path (ce_combine_friction). */
#include <math.h>
#include <string.h>

#include "ce_point_contact.h"
#include "ce_arena.h"
#include "ce_internal.h"

static ce_errno body_stiffness(const ce_body *b, const char *name, double *k, ce_error *err) {
  double s = b->point_stiffness;
  if (!isfinite(s) || !(s >= 0))
    return ce_fail(err, CE_EINVAL, "body %s: point stiffness %g must be finite and >= 0", name, s);
  *k = s > 0 ? s : ce_point_stiffness_default(b->geometry);
  if (!(*k > 0))
    return ce_fail(err, CE_EINVAL, "body %s: default point stiffness %g is not positive", name, *k);
  return CE_OK;
}

void ce_point_model_init(const ce_body *a, const ce_body *b, double k, double d, double stiction_tolerance,
                         ce_result *r, double *mu, double *vs) {
  *mu = ce_combine_friction(a->material.friction, b->material.friction);
  *vs = stiction_tolerance > 0 ? stiction_tolerance : 1e-4;
  r->model = CE_MODEL_POINT;
  r->combined_material.dissipation = d;
  r->combined_material.friction = *mu;
  r->point.stiffness = k;
  r->point.dissipation = d;
}

double ce_point_force(const ce_body *a, const ce_body *b, ce_vec3 pt, ce_vec3 n, double kx, double d, double mu,
                      double vs, double *xdot, ce_vec3 *ft) {
  ce_vec3 v = ce_sub(ce_velocity_at(&a->V_WB, a->X_WB.p, pt), ce_velocity_at(&b->V_WB, b->X_WB.p, pt));
  double vn = ce_dot(v, n);
  *xdot = -vn;
  double hc = 1.0 + d * *xdot;
  double fn = hc > 0 ? kx * hc : 0.0;
  *ft = ce_v3(0, 0, 0);
  if (mu > 0 && fn > 0) {
    ce_vec3 vt = ce_axpy(v, -vn, n);
    double s = ce_norm(vt) / vs;
    *ft = ce_scale(vt, -mu * (2.0 / M_PI) * ce_atan_over_x(s) * fn / vs);
  }
  return fn;
}

ce_errno ce_point_contact_compute(const ce_body *a, const ce_body *b, double stiction_tolerance,
                                  int want_patches, ce_arena *arena, ce_result *r, ce_error *err) {
  ce_errno e;
  double ka = 0, kb = 0;
  if ((e = body_stiffness(a, "A", &ka, err)) != CE_OK) return e;
  if ((e = body_stiffness(b, "B", &kb, err)) != CE_OK) return e;
  double k, d;
  double da = a->material.dissipation, db = b->material.dissipation;
  if (isinf(ka) && isinf(kb)) {
    return ce_fail(err, CE_EUNSUPPORTED, "point contact: both sides are infinitely stiff (half spaces)");
  } else if (isinf(ka)) {
    k = kb;
    d = db;
  } else if (isinf(kb)) {
    k = ka;
    d = da;
  } else {
    k = ka * kb / (ka + kb);
    d = (kb * da + ka * db) / (ka + kb);
  }
  double mu, vs;
  ce_point_model_init(a, b, k, d, stiction_tolerance, r, &mu, &vs);

  ce_mtd m;
  if ((e = ce_mtd_compute(a->geometry, &a->X_WB, b->geometry, &b->X_WB, &m, err)) != CE_OK) return e;
  r->point.hull_a = m.hull_a;
  r->point.hull_b = m.hull_b;
  if (!m.overlap) {
    r->status = CE_CONTACT_NONE;
    return CE_OK;
  }
  ce_vec3 n = m.normal;
  ce_vec3 P = ce_scale(ce_add(m.witness_a, m.witness_b), 0.5);
  double xdot;
  ce_vec3 ft;
  double fn = ce_point_force(a, b, P, n, k * m.depth, d, mu, vs, &xdot, &ft);

  r->status = CE_CONTACT_POINT;
  r->point.depth = m.depth;
  r->point.normal = n;
  r->point.witness_a = m.witness_a;
  r->point.witness_b = m.witness_b;
  r->point.point = P;
  r->point.depth_rate = xdot;
  r->point.normal_force = fn;
  r->point.friction_force = ft;

  ce_wrench wc = {ce_v3(0, 0, 0), ce_axpy(ft, fn, n)};
  r->wrench_a_centroid = wc;
  r->wrench_a = ce_wrench_shift(wc, P, a->X_WB.p);
  r->wrench_b = ce_wrench_shift(ce_wrench_neg(wc), P, b->X_WB.p);
  r->area = 0;
  r->centroid = P;
  r->total.faces = 0;
  r->total.area = 0;
  r->total.normal_force = ce_scale(n, fn);
  r->total.normal_force_magnitude = fn;
  r->total.point = P;
  /* the potential of the elastic part fn = k x (ce.h, CE_ENERGY_FORCE_LAW) */
  r->strain_energy = 0.5 * k * m.depth * m.depth;
  r->total.strain_energy = r->strain_energy;
  if (want_patches) {
    r->patches = ce_arena_calloc(arena, 1, sizeof *r->patches);
    if (!r->patches) return ce_fail(err, CE_ENOMEM, "contact query: scratch arena exhausted");
    r->patches[0] = r->total;
    r->npatches = 1;
  }
  return CE_OK;
}
