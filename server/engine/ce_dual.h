/* ce_dual.h — forward-mode dual numbers for the wrench Jacobians
 * (ce_jacobian.c): a value and CE_DUAL_N partial derivatives, and
 * 3-vectors of them. The includer defines CE_DUAL_N (the number of
 * partials) before including; every function is static inline, so two
 * translation units may use different widths. First-order only: a product
 * keeps the value's product and the product rule's partials. */
#ifndef CE_DUAL_H
#define CE_DUAL_H

#include <math.h>
#include <string.h>

#include "ce_math.h"

/* (always inlined: by value, a dual of 12 partials is 104 bytes; inlined,
 * the compiler keeps the loops over the partials in registers) */
#ifndef CE_DUAL_N
#error "define CE_DUAL_N before including ce_dual.h"
#endif

/* The partials in one GCC vector (elementwise IEEE arithmetic), padded to
 * a power of two: the compiler keeps them in vector registers instead of
 * copying arrays through memory. The padding stays zero. Aligned to 16
 * bytes (two doubles, what SSE2 loads), not to the vector's own size,
 * which would pad a dual to twice its width. */
#if CE_DUAL_N <= 8
#define CE_DUAL_W 8
#elif CE_DUAL_N <= 16
#define CE_DUAL_W 16
#else
#define CE_DUAL_W 32
#endif
typedef double jd_vec __attribute__((vector_size(CE_DUAL_W * sizeof(double)), aligned(16)));

typedef struct jd {
  double v;
  jd_vec d;
} jd;

typedef struct jv {
  jd x, y, z;
} jv;

static inline __attribute__((always_inline)) jd jd_c(double v) {
  jd r;
  r.v = v;
  r.d = (jd_vec){0};
  return r;
}
static inline __attribute__((always_inline)) jd jd_add(jd a, jd b) {
  a.v += b.v;
  a.d += b.d;
  return a;
}
static inline __attribute__((always_inline)) jd jd_sub(jd a, jd b) {
  a.v -= b.v;
  a.d -= b.d;
  return a;
}
static inline __attribute__((always_inline)) jd jd_mul(jd a, jd b) {
  jd r;
  r.v = a.v * b.v;
  r.d = a.d * b.v + a.v * b.d;
  return r;
}
static inline __attribute__((always_inline)) jd jd_scale(jd a, double s) {
  a.v *= s;
  a.d *= s;
  return a;
}
static inline __attribute__((always_inline)) jd jd_addc(jd a, double c) {
  a.v += c;
  return a;
}
/* a + s b */
static inline __attribute__((always_inline)) jd jd_axpy(jd a, double s, jd b) {
  a.v += s * b.v;
  a.d += s * b.d;
  return a;
}
static inline __attribute__((always_inline)) jd jd_div(jd a, jd b) {
  jd r;
  r.v = a.v / b.v;
  const double ib = 1.0 / b.v;
  r.d = (a.d - r.v * b.d) * ib;
  return r;
}
/* f(a) given f = f(a.v) and its derivative df = f'(a.v). */
static inline __attribute__((always_inline)) jd jd_chain(jd a, double f, double df) {
  a.v = f;
  a.d *= df;
  return a;
}
static inline __attribute__((always_inline)) jd jd_sqrt(jd a) {
  double s = sqrt(a.v);
  return jd_chain(a, s, s > 0 ? 0.5 / s : 0.0);
}

static inline __attribute__((always_inline)) jv jv_c(ce_vec3 a) {
  jv r = {jd_c(a.x), jd_c(a.y), jd_c(a.z)};
  return r;
}
static inline __attribute__((always_inline)) ce_vec3 jv_val(jv a) { return ce_v3(a.x.v, a.y.v, a.z.v); }
static inline __attribute__((always_inline)) jv jv_add(jv a, jv b) {
  jv r = {jd_add(a.x, b.x), jd_add(a.y, b.y), jd_add(a.z, b.z)};
  return r;
}
static inline __attribute__((always_inline)) jv jv_sub(jv a, jv b) {
  jv r = {jd_sub(a.x, b.x), jd_sub(a.y, b.y), jd_sub(a.z, b.z)};
  return r;
}
static inline __attribute__((always_inline)) jv jv_scale(jv a, jd s) {
  jv r = {jd_mul(a.x, s), jd_mul(a.y, s), jd_mul(a.z, s)};
  return r;
}
static inline __attribute__((always_inline)) jv jv_scalec(jv a, double s) {
  jv r = {jd_scale(a.x, s), jd_scale(a.y, s), jd_scale(a.z, s)};
  return r;
}
/* a + s b */
static inline __attribute__((always_inline)) jv jv_axpyc(jv a, double s, jv b) {
  jv r = {jd_axpy(a.x, s, b.x), jd_axpy(a.y, s, b.y), jd_axpy(a.z, s, b.z)};
  return r;
}
static inline __attribute__((always_inline)) jd jv_dot(jv a, jv b) {
  return jd_add(jd_add(jd_mul(a.x, b.x), jd_mul(a.y, b.y)), jd_mul(a.z, b.z));
}
static inline __attribute__((always_inline)) jv jv_cross(jv a, jv b) {
  jv r = {jd_sub(jd_mul(a.y, b.z), jd_mul(a.z, b.y)), jd_sub(jd_mul(a.z, b.x), jd_mul(a.x, b.z)),
          jd_sub(jd_mul(a.x, b.y), jd_mul(a.y, b.x))};
  return r;
}

#endif /* CE_DUAL_H */
