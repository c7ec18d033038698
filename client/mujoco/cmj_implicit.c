/* cmj_implicit.c — a step of MuJoCo's state with contactd's contact taken
 * implicitly: semi-implicit Euler whose contact force is linearised in the
 * new velocity with the wrench Jacobians contactd returns (docs/jacobians.md).
 *
 * With Q(q, v) the generalised contact force and v+ = v + dt a+,
 * q+ = q (+) dt v+ (Euler as mj_Euler, with joint damping implicit too):
 *   M a+ = f + dQ/dv (v+ - v) + dQ/dq dt v+ - B (v+ - v)
 *   (M + dt B - dt dQ/dv - dt^2 dQ/dq) a+ = M a + dt (dQ/dq) v
 * where M a = f is MuJoCo's own forward dynamics at (q, v) (d->qacc, with
 * the contact force, its constraints and actuators explicit) and B the
 * joint damping. Per pair, with J_g = [jacr; jacp] of geom g at its origin
 * (6 x nv) and T = -[[I, [p_A - p_B]x], [0, I]] taking the wrench on A
 * about A's origin to the wrench on B about B's origin:
 *   dQ/dv = (J_A^T + J_B^T T) (dW/dV_A J_A + dW/dV_B J_B)
 * and dQ/dq likewise with the pose derivatives (whose (dtheta, dp)
 * columns match the velocity's (w, v)). The change of J and T with the
 * pose is left out. Explicit regularised friction needs
 * dt < 2 m vs / (mu N (2/pi)); this step has no such bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmj_implicit.h"

/* Solve A x = b in place (b <- x), dense LU with partial pivoting; -1 when
 * singular. */
static int solve(double *A, double *b, int n) {
  for (int k = 0; k < n; k++) {
    int p = k;
    for (int i = k + 1; i < n; i++)
      if (fabs(A[i * n + k]) > fabs(A[p * n + k])) p = i;
    if (!(fabs(A[p * n + k]) > 0)) return -1;
    if (p != k) {
      for (int j = 0; j < n; j++) {
        double t = A[k * n + j];
        A[k * n + j] = A[p * n + j], A[p * n + j] = t;
      }
      double t = b[k];
      b[k] = b[p], b[p] = t;
    }
    for (int i = k + 1; i < n; i++) {
      double f = A[i * n + k] / A[k * n + k];
      if (f == 0) continue;
      for (int j = k; j < n; j++) A[i * n + j] -= f * A[k * n + j];
      b[i] -= f * b[k];
    }
  }
  for (int i = n - 1; i >= 0; i--) {
    double s = b[i];
    for (int j = i + 1; j < n; j++) s -= A[i * n + j] * b[j];
    b[i] = s / A[i * n + i];
  }
  return 0;
}

/* J (6 x nv): rows (jacr; jacp) of geom g at its origin; zero for the world. */
static void geom_jac(const mjModel *m, const mjData *d, int g, double *J) {
  int nv = m->nv, b = m->geom_bodyid[g];
  memset(J, 0, 6 * (size_t)nv * sizeof *J);
  if (b > 0) mj_jac(m, d, J + 3 * nv, J, d->geom_xpos + 3 * g, b);
}

/* Add one pair's terms to A (nv x nv) and rhs (nv). w: scratch. */
static void add_pair(const mjModel *m, const mjData *d, int ga, int gb, const Contactd__V1__WrenchJacobian *jac,
                     double *A, double *rhs, double *w) {
  int nv = m->nv;
  double dt = m->opt.timestep;
  double *JA = w, *JB = JA + 6 * nv, *KV = JB + 6 * nv, *KP = KV + 6 * nv, *G = KP + 6 * nv;
  geom_jac(m, d, ga, JA);
  geom_jac(m, d, gb, JB);
  /* KV = dVA JA + dVB JB, KP = dPA JA + dPB JB (6 x nv) */
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < nv; j++) {
      double kv = 0, kp = 0;
      for (int k = 0; k < 6; k++) {
        kv += jac->d_velocity_a[6 * i + k] * JA[k * nv + j] + jac->d_velocity_b[6 * i + k] * JB[k * nv + j];
        kp += jac->d_pose_a[6 * i + k] * JA[k * nv + j] + jac->d_pose_b[6 * i + k] * JB[k * nv + j];
      }
      KV[i * nv + j] = kv, KP[i * nv + j] = kp;
    }
  /* G = JA^T + JB^T T (nv x 6); T = -[[I, [r]x], [0, I]], r = pA - pB */
  const double *pa = d->geom_xpos + 3 * ga, *pb = d->geom_xpos + 3 * gb;
  double r[3] = {pa[0] - pb[0], pa[1] - pb[1], pa[2] - pb[2]};
  double T[36] = {0};
  for (int i = 0; i < 6; i++) T[6 * i + i] = -1;
  double rx[9] = {0, -r[2], r[1], r[2], 0, -r[0], -r[1], r[0], 0};
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) T[6 * i + 3 + j] = -rx[3 * i + j];
  for (int q = 0; q < nv; q++)
    for (int j = 0; j < 6; j++) {
      double s = JA[j * nv + q];
      for (int k = 0; k < 6; k++) s += JB[k * nv + q] * T[6 * k + j];
      G[q * 6 + j] = s;
    }
  /* A -= G (dt KV + dt^2 KP); rhs += dt G KP v */
  double kpv[6];
  for (int i = 0; i < 6; i++) {
    kpv[i] = 0;
    for (int j = 0; j < nv; j++) kpv[i] += KP[i * nv + j] * d->qvel[j];
  }
  for (int q = 0; q < nv; q++) {
    for (int i = 0; i < 6; i++) rhs[q] += dt * G[q * 6 + i] * kpv[i];
    for (int j = 0; j < nv; j++) {
      double s = 0;
      for (int i = 0; i < 6; i++) s += G[q * 6 + i] * (dt * KV[i * nv + j] + dt * dt * KP[i * nv + j]);
      A[q * nv + j] -= s;
    }
  }
}

int cmj_implicit_step(const mjModel *m, mjData *d, const Contactd__V1__ContactReply *r, const int *geom, int ng,
                      char *why, size_t n) {
  int nv = m->nv;
  double dt = m->opt.timestep;
  double *A = malloc(((size_t)nv * nv + 2 * (size_t)nv + 30 * (size_t)nv + 1) * sizeof *A);
  if (!A) return snprintf(why, n, "out of memory"), -1;
  double *rhs = A + (size_t)nv * nv, *acc = rhs + nv, *w = acc + nv;
  mj_fullM(m, A, d->qM);
  for (int i = 0; i < nv; i++) {
    rhs[i] = 0;
    for (int j = 0; j < nv; j++) rhs[i] += A[i * nv + j] * d->qacc[j];
  }
  for (int i = 0; i < nv; i++) A[i * nv + i] += dt * m->dof_damping[i];
  for (size_t k = 0; r && k < r->n_results; k++) {
    const Contactd__V1__PairResult *p = r->results[k];
    const Contactd__V1__WrenchJacobian *j = p->jacobian;
    if (!j || j->n_d_pose_a != 36 || j->n_d_pose_b != 36 || j->n_d_velocity_a != 36 || j->n_d_velocity_b != 36) continue;
    if (p->a < 1 || p->b < 1 || p->a > (uint32_t)ng || p->b > (uint32_t)ng) continue;
    add_pair(m, d, geom[p->a - 1], geom[p->b - 1], j, A, rhs, w);
  }
  if (solve(A, rhs, nv)) {
    free(A);
    return snprintf(why, n, "implicit contact step: singular system at t = %g", d->time), -1;
  }
  memcpy(acc, rhs, (size_t)nv * sizeof *acc);
  for (int i = 0; i < nv; i++) d->qvel[i] += dt * acc[i];
  mj_integratePos(m, d->qpos, d->qvel, dt);
  for (int i = 0; i < m->na; i++) d->act[i] += dt * d->act_dot[i]; /* as mj_Euler */
  memcpy(d->qacc_warmstart, d->qacc, (size_t)nv * sizeof *acc);
  d->time += dt;
  free(A);
  return 0;
}
