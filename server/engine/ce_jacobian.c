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

#include "ce_jacobian.h"
#include "ce_arena.h"
#include "ce_passes.h"

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

static void mat3_mul(const double A[3][3], const double B[3][3], double C[3][3]) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) C[i][j] = A[i][0] * B[0][j] + A[i][1] * B[1][j] + A[i][2] * B[2][j];
}

static void skew(ce_vec3 u, double K[3][3]) {
  const double k[3][3] = {{0, -u.z, u.y}, {u.z, 0, -u.x}, {-u.y, u.x, 0}};
  memcpy(K, k, sizeof k);
}

/* d wrench_a / d V_A without relative motion (the tractions are p n): the
 * traction's derivative at v = 0 is linear in the relative velocity field,
 *   dt = -p (d n n^T + mu (2 / (pi vs)) (I - n n^T)) dv(x),
 *   dv(x) = dv_A + dw_A x (x - p_A),
 * integrated with the wrench pass's rule (fan around the face centroid,
 * edge midpoints, weight area / 3), which the engine uses as soon as the
 * bodies move relative to each other.
 * Per face with K = d n n^T + g0 (I - n n^T) = g0 I + (d - g0) n n^T, the
 * rule's weights s_q = -p_q area / 3 and r_q = x_q - p_A summed into
 * S0 = sum s, S1 = sum s r, S2 = sum s r r^T: with D(r) = [-[r]x, I],
 *   force rows  = sum s K D(r)       = [-K [S1]x, S0 K],
 *   torque rows = sum s [r]x K D(r)  = [-Q, [S1]x K],
 *   Q = sum s [r]x K [r]x = g0 (S2 - tr(S2) I) + (d - g0) [n]x S2 [n]x. */
static void velocity_static(const ce_jac_input *in, const ce_vec3 pa, double Jv[36]) {
  const ce_surface *s = in->s;
  const double g0 = in->mu * (2.0 / M_PI) / (in->vs > 0 ? in->vs : 1e-4), beta = in->d - g0;
  memset(Jv, 0, 36 * sizeof *Jv);
  for (int32_t f = 0; f < s->nf; f++) {
    const int32_t o = s->face_offsets[f], m = s->face_offsets[f + 1] - o;
    if (m < 3) continue;
    int32_t cid[64];
    const int32_t *ids = s->face_vertices + o, *use = cid;
    int32_t k = ce_wrench_corners(s->vertices, ids, m, cid);
    if (k < 0) {
      use = ids;
      k = m;
    }
    const ce_vec3 n = s->normal[f], C = ce_sub(s->centroid[f], pa);
    const double pc = s->centroid_pressure[f];
    double S0 = 0, S2[3][3] = {{0}};
    ce_vec3 S1 = ce_v3(0, 0, 0);
    for (int i = 0; i < k; i++) {
      const int32_t vi = use[i], vj = use[i + 1 == k ? 0 : i + 1];
      const ce_vec3 xi = ce_sub(s->vertices[vi], pa), xj = ce_sub(s->vertices[vj], pa);
      const double a = 0.5 * fabs(ce_dot(ce_cross(ce_sub(xi, C), ce_sub(xj, C)), n));
      if (!(a > 0)) continue;
      const double pi = s->pressure[vi], pj = s->pressure[vj];
      const ce_vec3 qx[3] = {ce_scale(ce_add(C, xi), 0.5), ce_scale(ce_add(xi, xj), 0.5), ce_scale(ce_add(xj, C), 0.5)};
      const double qp[3] = {0.5 * (pc + pi), 0.5 * (pi + pj), 0.5 * (pj + pc)};
      for (int q = 0; q < 3; q++) {
        const double w = -qp[q] * a / 3.0;
        const double r[3] = {qx[q].x, qx[q].y, qx[q].z};
        S0 += w;
        S1 = ce_axpy(S1, w, qx[q]);
        for (int i2 = 0; i2 < 3; i2++)
          for (int j = 0; j < 3; j++) S2[i2][j] += w * r[i2] * r[j];
      }
    }
    double K[3][3], S1x[3][3], KS1x[3][3], S1xK[3][3], nx[3][3], T[3][3], Q[3][3];
    const double nn[3] = {n.x, n.y, n.z};
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) K[i][j] = beta * nn[i] * nn[j] + (i == j ? g0 : 0);
    skew(S1, S1x);
    skew(n, nx);
    mat3_mul(K, S1x, KS1x);
    mat3_mul(S1x, K, S1xK);
    mat3_mul(nx, S2, T);
    mat3_mul(T, nx, Q);
    const double tr = S2[0][0] + S2[1][1] + S2[2][2];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        Q[i][j] = g0 * (S2[i][j] - (i == j ? tr : 0)) + beta * Q[i][j];
        Jv[6 * (3 + i) + j] += -KS1x[i][j];
        Jv[6 * (3 + i) + 3 + j] += S0 * K[i][j];
        Jv[6 * i + j] += -Q[i][j];
        Jv[6 * i + 3 + j] += S1xK[i][j];
      }
  }
}

/* Whether the wrench pass took its closed forms (tractions p n): no
 * dissipation and no friction, or no relative motion at the surface
 * centroid C and no relative spin (ce_wrench.c). */
static int closed_form(const ce_jac_input *in, ce_vec3 C) {
  const ce_body *a = in->a, *b = in->b;
  ce_vec3 vC = ce_sub(ce_velocity_at(&a->V_WB, a->X_WB.p, C), ce_velocity_at(&b->V_WB, b->X_WB.p, C));
  ce_vec3 w = ce_sub(a->V_WB.w, b->V_WB.w);
  return !((in->d > 0 || in->mu > 0) && (ce_norm2(vC) > 0 || ce_norm2(w) > 0));
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
  in.slot_vel[1] = -1;
  in.closed_form = closed_form(&in, r->centroid);
  double val[6], der[6][12];
  const char *why = NULL;
  ce_errno e;
  if (in.closed_form) {
    /* pose partials only (6); the velocity part by velocity_static() */
    in.slot_vel[0] = -1;
    double d6[6][6];
    e = ce_jacobian_eval6(&in, val, d6, &why);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++) der[i][j] = d6[i][j];
  } else {
    in.slot_vel[0] = 6;
    e = ce_jacobian_eval12(&in, val, der, &why);
  }
  if (e == CE_EUNSUPPORTED) {
    unavailable(r, why);
    return CE_OK;
  }
  if (e != CE_OK) return e;
  double *JN = n_is_b ? J->d_pose_b : J->d_pose_a, *JM = n_is_b ? J->d_pose_a : J->d_pose_b;
  if (!in.closed_form)
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++) J->d_velocity_a[6 * i + j] = der[i][6 + j];
  if (in.closed_form && (in.d > 0 || in.mu > 0)) {
    velocity_static(&in, in.a->X_WB.p, J->d_velocity_a);
    /* Moving N's origin by dp moves its velocity field v_N(x) = v_N +
     * w_N x (x - p_N) by -w_N x dp: the relative velocity changes by
     * +-w_N x dp everywhere (+ when N is B), as if A's origin velocity
     * changed by that much. */
    const ce_body *N = n_is_b ? in.b : in.a;
    double T[6][3];
    times_skew(J->d_velocity_a, 3, N->V_WB.w, T);
    const double sg = n_is_b ? 1.0 : -1.0;
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 3; j++) der[i][3 + j] += sg * T[i][j];
  }
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) JN[6 * i + j] = der[i][j];
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
  in.closed_form = 0; /* the quadrature everywhere: also the static case's check */
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
