/* ce_test_util.h — helpers shared by the engine's unit tests. */
#ifndef CE_TEST_UTIL_H
#define CE_TEST_UTIL_H

#include "ce_internal.h"

/* |a - b| <= tol * max(|a|, |b|, floor) */
int ce_test_close(double a, double b, double rtol, double floor);
/* Props for a compliant/rigid body with the given modulus and hint. */
ce_props ce_test_props(ce_compliance c, double modulus, double hint);
/* A body at pose (quaternion q, position p) at rest, with its geometry's material. */
ce_body ce_test_body(const ce_geometry *g, ce_quat q, ce_vec3 p);
/* A deterministic pseudo-random generator (xorshift64*), uniform in [0, 1). */
double ce_test_rand(uint64_t *state);
/* A uniformly random unit quaternion. */
ce_quat ce_test_rand_quat(uint64_t *state);

#endif
