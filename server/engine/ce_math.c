/* ce_math.c — rotations, quaternions and poses. */
#include "ce_math.h"

ce_mat3 ce_mat3_identity(void) {
  ce_mat3 r = {{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}};
  return r;
}

ce_mat3 ce_mat3_mul(const ce_mat3 *a, const ce_mat3 *b) {
  ce_mat3 r;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      r.m[i][j] = a->m[i][0] * b->m[0][j] + a->m[i][1] * b->m[1][j] + a->m[i][2] * b->m[2][j];
  return r;
}

ce_mat3 ce_mat3_transpose(const ce_mat3 *a) {
  ce_mat3 r;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) r.m[i][j] = a->m[j][i];
  return r;
}

double ce_mat3_det(const ce_mat3 *a) {
  const double (*m)[3] = a->m;
  return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
         m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
         m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

ce_quat ce_quat_identity(void) {
  ce_quat q = {1, 0, 0, 0};
  return q;
}

ce_quat ce_quat_normalize(ce_quat q) {
  double n = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
  if (!(n > 0)) return ce_quat_identity();
  ce_quat r = {q.w / n, q.x / n, q.y / n, q.z / n};
  return r;
}

ce_quat ce_quat_mul(ce_quat a, ce_quat b) {
  ce_quat r = {a.w * b.w - a.x * b.x - a.y * b.y - a.z * b.z,
               a.w * b.x + a.x * b.w + a.y * b.z - a.z * b.y,
               a.w * b.y - a.x * b.z + a.y * b.w + a.z * b.x,
               a.w * b.z + a.x * b.y - a.y * b.x + a.z * b.w};
  return r;
}

ce_quat ce_quat_from_axis_angle(ce_vec3 axis, double angle) {
  ce_vec3 u = ce_normalize(axis);
  double s = sin(0.5 * angle);
  ce_quat q = {cos(0.5 * angle), u.x * s, u.y * s, u.z * s};
  return q;
}

ce_mat3 ce_quat_to_mat3(ce_quat q) {
  double w = q.w, x = q.x, y = q.y, z = q.z;
  ce_mat3 R = {{{1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)},
                {2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)},
                {2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)}}};
  return R;
}

/* Shepperd's method: pick the largest of the four candidates for accuracy. */
ce_quat ce_mat3_to_quat(const ce_mat3 *R) {
  const double (*m)[3] = R->m;
  double tr = m[0][0] + m[1][1] + m[2][2];
  ce_quat q;
  if (tr > m[0][0] && tr > m[1][1] && tr > m[2][2]) {
    double s = 2 * sqrt(1 + tr);
    q.w = 0.25 * s;
    q.x = (m[2][1] - m[1][2]) / s;
    q.y = (m[0][2] - m[2][0]) / s;
    q.z = (m[1][0] - m[0][1]) / s;
  } else if (m[0][0] > m[1][1] && m[0][0] > m[2][2]) {
    double s = 2 * sqrt(1 + m[0][0] - m[1][1] - m[2][2]);
    q.w = (m[2][1] - m[1][2]) / s;
    q.x = 0.25 * s;
    q.y = (m[0][1] + m[1][0]) / s;
    q.z = (m[0][2] + m[2][0]) / s;
  } else if (m[1][1] > m[2][2]) {
    double s = 2 * sqrt(1 + m[1][1] - m[0][0] - m[2][2]);
    q.w = (m[0][2] - m[2][0]) / s;
    q.x = (m[0][1] + m[1][0]) / s;
    q.y = 0.25 * s;
    q.z = (m[1][2] + m[2][1]) / s;
  } else {
    double s = 2 * sqrt(1 + m[2][2] - m[0][0] - m[1][1]);
    q.w = (m[1][0] - m[0][1]) / s;
    q.x = (m[0][2] + m[2][0]) / s;
    q.y = (m[1][2] + m[2][1]) / s;
    q.z = 0.25 * s;
  }
  if (q.w < 0) { q.w = -q.w; q.x = -q.x; q.y = -q.y; q.z = -q.z; }
  return ce_quat_normalize(q);
}

ce_vec3 ce_quat_rotate(ce_quat q, ce_vec3 v) {
  ce_mat3 R = ce_quat_to_mat3(q);
  return ce_mat3_mul_vec(&R, v);
}

ce_pose ce_pose_identity(void) {
  ce_pose X = {ce_mat3_identity(), {0, 0, 0}};
  return X;
}

ce_pose ce_pose_from_quat(ce_quat q, ce_vec3 p) {
  ce_pose X = {ce_quat_to_mat3(q), p};
  return X;
}

ce_pose ce_pose_inverse(const ce_pose *X) {
  ce_pose r;
  r.R = ce_mat3_transpose(&X->R);
  r.p = ce_neg(ce_mat3_mul_vec(&r.R, X->p));
  return r;
}

ce_pose ce_pose_compose(const ce_pose *X_AB, const ce_pose *X_BC) {
  ce_pose r;
  r.R = ce_mat3_mul(&X_AB->R, &X_BC->R);
  r.p = ce_pose_apply(X_AB, X_BC->p);
  return r;
}
