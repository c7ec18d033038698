/* cmj_implicit.h — one step with contactd's contact implicit in the new
 * velocity (internal to contactd_mujoco; cmj_implicit.c says how). */
#ifndef CMJ_IMPLICIT_H
#define CMJ_IMPLICIT_H

#include "cmj.h"

/* After mj_forward(m, d) whose evaluation returned r (queried with wrench
 * Jacobians; body id i + 1 = geom[i]): advance d by one time step. 0, or
 * -1 with the reason in why[n] (d unchanged then). */
int cmj_implicit_step(const mjModel *m, mjData *d, const Contactd__V1__ContactReply *r, const int *geom, int ng,
                      char *why, size_t n);

#endif
