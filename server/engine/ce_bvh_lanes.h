/* ce_bvh_lanes.h — two doubles at once for the bounding volume hierarchies
 * (internal to ce_bvh_build.c and ce_bvh_query.c): the fits of the build and
 * the cylinder and triangle tests of the traversal run two lanes together. */
#ifndef CE_BVH_LANES_H
#define CE_BVH_LANES_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "ce_internal.h"

/* Two doubles at once (GCC/Clang vector extension: SSE2 on x86-64, NEON
 * on arm64). Lane arithmetic is the scalar IEEE arithmetic. */
typedef double v2d __attribute__((vector_size(16)));
typedef long long v2i __attribute__((vector_size(16)));

/* p is 16-byte aligned (ce_bvh_disk's lanes). */
static inline v2d v2_load(const double *p) {
  v2d v;
  memcpy(&v, __builtin_assume_aligned(p, 16), sizeof v);
  return v;
}

static inline v2d v2_splat(double x) { return (v2d){x, x}; }

static inline v2d v2_abs(v2d x) { return (v2d)((v2i)x & (v2i){INT64_MAX, INT64_MAX}); }

static inline v2d v2_swap(v2d x) {
#if defined(__clang__)
  return __builtin_shufflevector(x, x, 1, 0);
#else
  return __builtin_shuffle(x, (v2i){1, 0});
#endif
}

/* Masks are all-ones lanes where a comparison holds (a NaN never does). */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline v2d v2_sqrt(v2d x) { return _mm_sqrt_pd(x); }
static inline v2d v2_pos(v2d x) { return _mm_max_pd(x, _mm_setzero_pd()); } /* NaN -> 0 */
static inline v2d v2_gt(v2d a, v2d b) { return _mm_cmpgt_pd(a, b); }
static inline v2d v2_or(v2d a, v2d b) { return _mm_or_pd(a, b); }
static inline v2d v2_and(v2d a, v2d b) { return _mm_and_pd(a, b); }
/* Bit k set where mask lane k is clear. */
static inline int v2_clear_bits(v2d m) { return ~_mm_movemask_pd(m) & 3; }
/* a < b ? a : b and a > b ? a : b, lane by lane */
static inline v2d v2_min(v2d a, v2d b) { return _mm_min_pd(a, b); }
static inline v2d v2_max(v2d a, v2d b) { return _mm_max_pd(a, b); }
#else
static inline v2d v2_sqrt(v2d x) { return (v2d){sqrt(x[0]), sqrt(x[1])}; }
static inline v2d v2_pos(v2d x) { return (v2d)((v2i)x & (x > 0)); }
static inline v2d v2_gt(v2d a, v2d b) { return (v2d)(a > b); }
static inline v2d v2_or(v2d a, v2d b) { return (v2d)((v2i)a | (v2i)b); }
static inline v2d v2_and(v2d a, v2d b) { return (v2d)((v2i)a & (v2i)b); }
static inline int v2_clear_bits(v2d m) { return (((v2i)m)[0] == 0) | (((v2i)m)[1] == 0) << 1; }
static inline v2d v2_min(v2d a, v2d b) { return (v2d){a[0] < b[0] ? a[0] : b[0], a[1] < b[1] ? a[1] : b[1]}; }
static inline v2d v2_max(v2d a, v2d b) { return (v2d){a[0] > b[0] ? a[0] : b[0], a[1] > b[1] ? a[1] : b[1]}; }
#endif

/* Two consecutive doubles from anywhere. */
static inline v2d v2_loadu(const double *p) {
  v2d v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* The smaller and the larger lane (ties keep lane 0). */
static inline double v2_hmin(v2d a) { return a[1] < a[0] ? a[1] : a[0]; }
static inline double v2_hmax(v2d a) { return a[1] > a[0] ? a[1] : a[0]; }

/* Column j of M (a box's axis). */
static inline ce_vec3 col(const ce_mat3 *M, int j) { return ce_v3(M->m[0][j], M->m[1][j], M->m[2][j]); }

#endif /* CE_BVH_LANES_H */
