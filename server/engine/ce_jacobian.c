/* ce_jacobian.c — the four wrench Jacobians of a hydroelastic contact
 * (convention in ce.h, "wrench Jacobians").
 *
 * One forward-mode evaluation (ce_jacobian_eval.inc) with 12 partials
 * differentiates the wrench on A with respect to the pose of N (the body
 * whose frame the surface is not built in) and to A's spatial velocity.
 * The other two matrices follow from invariances of the model:
 *
 *  - The wrench depends on the poses only through the relative pose, up to
 *    the frame it is expressed in and the point it is taken about. Moving
 *    both bodies by one world twist (w, v) (a body at p then gets
 *    (dth, dp) = (w, v + w x p)), and turning their world-frame velocities
 *    with them (dw_k = w x w_k, dv_k = w x v_k), rotates the wrench about A's
 *    origin by w: d tau = w x tau, d f = w x f. So for every w, v
 *      J_A (w, v - [p_A]x w) + J_B (w, v - [p_B]x w)
 *        - sum_k Jv_k ([w_k]x w, [v_k]x w) = S w,
 *    S = (-[tau]x; -[f]x), hence (p columns, theta columns)
 *      J_A,p = -J_B,p,
 *      J_A,th + J_B,th = S - J_A,p [p_B - p_A]x
 *                        + sum_k (Jv_k,w [w_k]x + Jv_k,v [v_k]x).
 *  - The tractions depend on the velocities only through the relative
 *    velocity field v_A(x) - v_B(x), unchanged when one rigid velocity field
 *    is added to both, so the same identities hold with S = 0:
 *      Jv_B,v = -Jv_A,v,   Jv_B,w = -Jv_A,w - Jv_A,v [p_B - p_A]x.
 * ce_jacobian_hydro_full evaluates all 24 partials instead, which the
 * tests use to check these identities. */
#include <math.h>
#include <string.h>

#include "ce_internal.h"

/* out[6x3] (rows of a 6x6, columns c0..c0+2) = J[6x3 at column j0] [d]x */
static void times_skew(const double *J, int j0, ce_vec3 d, double out[6][3]) {
  const double K[3][3] = {{0, -d.z, d.y}, {d.z, 0, -d.x}, {-d.y, d.x, 0}};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 3; j++) {
      double s = 0;
      for (int k = 0; k < 3; k++) s += J[6 * i + j0 + k] * K[k][j];
      out[i][j] = s;
    }
}

/* From the pose Jacobian J of one body (the known one) the other's:
 * other,p = -J,p; other,th = S - J,th + sign J,p [p_B - p_A]x + the
 * velocity terms, sign = -1 when J is A's, +1 when J is B's
 * (J_B,p = -J_A,p). */
static void other_pose(const double *J, int j_is_a, ce_vec3 dBA, const double val[6], const ce_jacobian *Jv,
                       const ce_body *a, const ce_body *b, double *out) {
  double T[6][3], V[6][3];
  times_skew(J, 3, dBA, T);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 3; j++) T[i][j] *= j_is_a ? -1.0 : 1.0;
  const double *jv[2] = {Jv->d_velocity_a, Jv->d_velocity_b};
  const ce_body *body[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    times_skew(jv[k], 0, body[k]->V_WB.w, V);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 3; j++) T[i][j] += V[i][j];
    times_skew(jv[k], 3, body[k]->V_WB.v, V);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 3; j++) T[i][j] += V[i][j];
  }
  const ce_vec3 tau = ce_v3(val[0], val[1], val[2]), f = ce_v3(val[3], val[4], val[5]);
  for (int i = 0; i < 6; i++) {
    ce_vec3 q = i < 3 ? tau : f;
    /* -[q]x row (i mod 3) */
    const double S[3][3] = {{0, q.z, -q.y}, {-q.z, 0, q.x}, {q.y, -q.x, 0}};
    for (int j = 0; j < 3; j++) {
      out[6 * i + j] = S[i % 3][j] - J[6 * i + j] + T[i][j];
      out[6 * i + 3 + j] = -J[6 * i + 3 + j];
    }
  }
}

/* Jv_B from Jv_A. */
static void other_velocity(const double *Jv, ce_vec3 dBA, double *out) {
  double T[6][3];
  times_skew(Jv, 3, dBA, T);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 3; j++) {
      out[6 * i + j] = -Jv[6 * i + j] - T[i][j];
      out[6 * i + 3 + j] = -Jv[6 * i + 3 + j];
    }
}

static ce_jacobian *jac_alloc(ce_arena *arena, ce_result *r) {
  ce_jacobian *J = ce_arena_calloc(arena, 1, sizeof *J);
  r->jacobian = J;
  return J;
}

static void unavailable(ce_result *r, const char *why) {
  r->jacobian_status = CE_JACOBIAN_UNAVAILABLE;
  r->jacobian = NULL;
  r->jacobian_note = why;
}

ce_errno ce_jacobian_hydro(const ce_jac_input *in0, ce_representation rep, ce_arena *arena, ce_result *r) {
  if (rep != CE_REPRESENTATION_POLYGON && in0->s->nf > 0) {
    unavailable(r, "wrench Jacobians need the polygon representation");
    return CE_OK;
  }
  ce_jacobian *J = jac_alloc(arena, r);
  if (!J) return CE_ENOMEM;
  r->jacobian_status = CE_JACOBIAN_OK;
  if (in0->s->nf == 0) return CE_OK; /* no contact: all zero */
  ce_jac_input in = *in0;
  const int n_is_b = in.m_is_a;
  in.slot_pose[n_is_b ? 1 : 0] = 0;
  in.slot_pose[n_is_b ? 0 : 1] = -1;
  in.slot_vel[0] = 6;
  in.slot_vel[1] = -1;
  double val[6], der[6][12];
  const char *why = NULL;
  ce_errno e = ce_jacobian_eval12(&in, val, der, &why);
  if (e == CE_EUNSUPPORTED) {
    unavailable(r, why);
    return CE_OK;
  }
  if (e != CE_OK) return e;
  double *JN = n_is_b ? J->d_pose_b : J->d_pose_a, *JM = n_is_b ? J->d_pose_a : J->d_pose_b;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      JN[6 * i + j] = der[i][j];
      J->d_velocity_a[6 * i + j] = der[i][6 + j];
    }
  const ce_vec3 dBA = ce_sub(in.b->X_WB.p, in.a->X_WB.p);
  other_velocity(J->d_velocity_a, dBA, J->d_velocity_b);
  other_pose(JN, !n_is_b, dBA, val, J, in.a, in.b, JM);
  return CE_OK;
}

ce_errno ce_jacobian_hydro_full(const ce_jac_input *in0, ce_arena *arena, ce_result *r) {
  ce_jacobian *J = jac_alloc(arena, r);
  if (!J) return CE_ENOMEM;
  r->jacobian_status = CE_JACOBIAN_OK;
  if (in0->s->nf == 0) return CE_OK;
  ce_jac_input in = *in0;
  in.slot_pose[0] = 0;
  in.slot_pose[1] = 6;
  in.slot_vel[0] = 12;
  in.slot_vel[1] = 18;
  double val[6], der[6][24];
  const char *why = NULL;
  ce_errno e = ce_jacobian_eval24(&in, val, der, &why);
  if (e == CE_EUNSUPPORTED) {
    unavailable(r, why);
    return CE_OK;
  }
  if (e != CE_OK) return e;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      J->d_pose_a[6 * i + j] = der[i][j];
      J->d_pose_b[6 * i + j] = der[i][6 + j];
      J->d_velocity_a[6 * i + j] = der[i][12 + j];
      J->d_velocity_b[6 * i + j] = der[i][18 + j];
    }
  return CE_OK;
}
