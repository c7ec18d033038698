/* ce_jacobian.h — wrench Jacobians of a hydroelastic result (ce_jacobian.c,
 * ce_jacobian_eval.inc). */
#ifndef CE_JACOBIAN_H
#define CE_JACOBIAN_H

#include "ce_internal.h"

typedef enum {
  CE_JAC_TET_TET = 1,    /* compliant mesh - compliant mesh */
  CE_JAC_TET_TRI,        /* compliant mesh - rigid mesh */
  CE_JAC_TET_HALFSPACE,  /* compliant mesh - half space (rigid or compliant) */
  CE_JAC_HALFSPACE_TRI,  /* compliant half space - rigid mesh */
  CE_JAC_TET_TERRAIN,    /* compliant mesh - terrain */
} ce_jac_pair;

/* A built surface (polygon representation) and what its wrench depends on.
 * slot_pose[k] / slot_vel[k]: index of the first of the 6 partials of body
 * k's (A = 0, B = 1) pose (dth, dp) / velocity (w, v); -1: held fixed. */
typedef struct ce_jac_input {
  const ce_surface *s;
  const ce_body *a, *b;
  int m_is_a;
  ce_jac_pair kind;
  double d, mu, vs;
  int slot_pose[2], slot_vel[2];
  /* tractions p n (the wrench pass's closed forms: no relative motion, or
   * d = mu = 0) instead of the quadrature of the full traction law */
  int closed_form;
} ce_jac_input;

/* wrench_a (torque, force) re-evaluated in val and its partials in der;
 * CE_EUNSUPPORTED (with *why) when a face cannot be rebuilt. */
ce_errno ce_jacobian_eval12(const ce_jac_input *in, double val[6], double der[6][12], const char **why);
ce_errno ce_jacobian_eval24(const ce_jac_input *in, double val[6], double der[6][24], const char **why);
ce_errno ce_jacobian_eval6(const ce_jac_input *in, double val[6], double der[6][6], const char **why);

/* The four Jacobians of a hydroelastic result (fills r->jacobian*): one
 * evaluation with 12 partials (the pose of M's partner N and A's
 * velocity), the other two matrices from the relative-pose identities. */
ce_errno ce_jacobian_hydro(const ce_jac_input *in, ce_representation rep, ce_arena *arena, ce_result *r);
/* The same with all 24 partials evaluated (no identities used): a check of
 * the identities for tests. */
ce_errno ce_jacobian_hydro_full(const ce_jac_input *in, ce_arena *arena, ce_result *r);

#endif /* CE_JACOBIAN_H */
