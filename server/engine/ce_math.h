/* ce_math.h — small vector, rotation, pose and wrench algebra (inline).
 * Everything here is pure; rotations are row-major 3x3 matrices. */
#ifndef CE_MATH_H
#define CE_MATH_H

#include <math.h>
#include "ce.h"

static inline ce_vec3 ce_v3(double x, double y, double z) {
  ce_vec3 r = {x, y, z};
  return r;
}
static inline ce_vec3 ce_add(ce_vec3 a, ce_vec3 b) { return ce_v3(a.x + b.x, a.y + b.y, a.z + b.z); }
static inline ce_vec3 ce_sub(ce_vec3 a, ce_vec3 b) { return ce_v3(a.x - b.x, a.y - b.y, a.z - b.z); }
static inline ce_vec3 ce_scale(ce_vec3 a, double s) { return ce_v3(a.x * s, a.y * s, a.z * s); }
static inline ce_vec3 ce_neg(ce_vec3 a) { return ce_v3(-a.x, -a.y, -a.z); }
static inline double ce_dot(ce_vec3 a, ce_vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
static inline ce_vec3 ce_cross(ce_vec3 a, ce_vec3 b) {
  return ce_v3(a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x);
}
static inline double ce_norm2(ce_vec3 a) { return ce_dot(a, a); }
static inline double ce_norm(ce_vec3 a) { return sqrt(ce_dot(a, a)); }
/* a + s*b */
static inline ce_vec3 ce_axpy(ce_vec3 a, double s, ce_vec3 b) {
  return ce_v3(a.x + s * b.x, a.y + s * b.y, a.z + s * b.z);
}
/* Unit vector; returns the zero vector for a zero input. */
static inline ce_vec3 ce_normalize(ce_vec3 a) {
  double n = ce_norm(a);
  return n > 0 ? ce_scale(a, 1.0 / n) : ce_v3(0, 0, 0);
}
static inline int ce_vec3_isfinite(ce_vec3 a) {
  return isfinite(a.x) && isfinite(a.y) && isfinite(a.z);
}
static inline double ce_v3_get(ce_vec3 a, int i) { return i == 0 ? a.x : (i == 1 ? a.y : a.z); }
/* t clamped to [0, 1] (NaN stays NaN, -0 stays -0): written as the two
 * select forms that compile to one minsd and one maxsd, no branches. */
static inline double ce_clamp01(double t) {
  t = 1 < t ? 1 : t;
  return 0 > t ? 0 : t;
}

/* ---- 3x3 matrices ---- */
static inline ce_vec3 ce_mat3_mul_vec(const ce_mat3 *R, ce_vec3 v) {
  return ce_v3(R->m[0][0] * v.x + R->m[0][1] * v.y + R->m[0][2] * v.z,
               R->m[1][0] * v.x + R->m[1][1] * v.y + R->m[1][2] * v.z,
               R->m[2][0] * v.x + R->m[2][1] * v.y + R->m[2][2] * v.z);
}
/* R^T v */
static inline ce_vec3 ce_mat3_tmul_vec(const ce_mat3 *R, ce_vec3 v) {
  return ce_v3(R->m[0][0] * v.x + R->m[1][0] * v.y + R->m[2][0] * v.z,
               R->m[0][1] * v.x + R->m[1][1] * v.y + R->m[2][1] * v.z,
               R->m[0][2] * v.x + R->m[1][2] * v.y + R->m[2][2] * v.z);
}
ce_mat3 ce_mat3_identity(void);
ce_mat3 ce_mat3_mul(const ce_mat3 *a, const ce_mat3 *b);
ce_mat3 ce_mat3_transpose(const ce_mat3 *a);
double ce_mat3_det(const ce_mat3 *a);

/* ---- quaternions (unit, w first) ---- */
ce_quat ce_quat_identity(void);
ce_quat ce_quat_normalize(ce_quat q);
ce_quat ce_quat_mul(ce_quat a, ce_quat b);
ce_quat ce_quat_from_axis_angle(ce_vec3 axis, double angle);
ce_mat3 ce_quat_to_mat3(ce_quat q);
ce_quat ce_mat3_to_quat(const ce_mat3 *R);
ce_vec3 ce_quat_rotate(ce_quat q, ce_vec3 v);

/* ---- rigid poses: p_W = R p_B + p ---- */
ce_pose ce_pose_identity(void);
/* ce_pose_from_quat is public (ce.h). */
static inline ce_vec3 ce_pose_apply(const ce_pose *X, ce_vec3 p) {
  return ce_add(ce_mat3_mul_vec(&X->R, p), X->p);
}
static inline ce_vec3 ce_pose_rotate(const ce_pose *X, ce_vec3 v) { return ce_mat3_mul_vec(&X->R, v); }
/* Inverse-apply: the point expressed in B given it in W. */
static inline ce_vec3 ce_pose_apply_inverse(const ce_pose *X, ce_vec3 p) {
  return ce_mat3_tmul_vec(&X->R, ce_sub(p, X->p));
}
ce_pose ce_pose_inverse(const ce_pose *X);
/* X_AC = X_AB * X_BC */
ce_pose ce_pose_compose(const ce_pose *X_AB, const ce_pose *X_BC);

/* ---- spatial velocities and wrenches ---- */
/* Velocity of the world point p fixed to a body with spatial velocity V
 * whose origin is at o (world). */
static inline ce_vec3 ce_velocity_at(const ce_spatial_velocity *V, ce_vec3 o, ce_vec3 p) {
  return ce_add(V->v, ce_cross(V->w, ce_sub(p, o)));
}
/* Shift a wrench from point P to point Q (same force, torque about Q):
 * tau_Q = tau_P + (P - Q) x f. */
static inline ce_wrench ce_wrench_shift(ce_wrench w, ce_vec3 P, ce_vec3 Q) {
  ce_wrench r;
  r.force = w.force;
  r.torque = ce_add(w.torque, ce_cross(ce_sub(P, Q), w.force));
  return r;
}
static inline ce_wrench ce_wrench_add(ce_wrench a, ce_wrench b) {
  ce_wrench r = {ce_add(a.torque, b.torque), ce_add(a.force, b.force)};
  return r;
}
static inline ce_wrench ce_wrench_neg(ce_wrench a) {
  ce_wrench r = {ce_neg(a.torque), ce_neg(a.force)};
  return r;
}

/* atan(s)/s for s >= 0, smooth through 0 (regularised Coulomb friction
 * -mu (2/pi) atan(|vt|/vs) fn vt/|vt| = -mu (2/pi) atan_over_x fn vt/vs):
 * the Taylor series 1 - s^2/3 + s^4/5 below s = 1e-3 (the first omitted
 * term, s^6/7, is below 1.5e-19), the direct quotient above. Used by the
 * hydroelastic wrench and by point contact, so both regularise alike. */
static inline double ce_atan_over_x(double s) {
  if (s < 1e-3) {
    double s2 = s * s;
    return 1.0 - s2 * (1.0 / 3.0 - s2 * (1.0 / 5.0));
  }
  return atan(s) / s;
}

/* A 64-bit mixing function (MurmurHash3's finaliser) for hash tables. */
static inline uint64_t ce_mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

#endif /* CE_MATH_H */
