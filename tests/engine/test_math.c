/* test_math.c — vectors, quaternions, poses, wrench shifting. */
#include <criterion/criterion.h>
#include <math.h>

#include "ce_test_util.h"

Test(math, quaternion_matrix_round_trip) {
  uint64_t s = 42;
  for (int i = 0; i < 1000; i++) {
    ce_quat q = ce_test_rand_quat(&s);
    ce_mat3 R = ce_quat_to_mat3(q);
    cr_assert(fabs(ce_mat3_det(&R) - 1) < 1e-12);
    ce_quat q2 = ce_mat3_to_quat(&R);
    double d = fabs(q.w * q2.w + q.x * q2.x + q.y * q2.y + q.z * q2.z);
    cr_assert(fabs(d - 1) < 1e-12, "round trip %d: |<q,q2>| = %.17g", i, d);
  }
}

Test(math, axis_angle_rotates_x_to_y) {
  ce_quat q = ce_quat_from_axis_angle(ce_v3(0, 0, 1), M_PI / 2);
  ce_vec3 v = ce_quat_rotate(q, ce_v3(1, 0, 0));
  cr_assert(fabs(v.x) < 1e-15 && fabs(v.y - 1) < 1e-15 && fabs(v.z) < 1e-15);
}

Test(math, pose_inverse_and_compose) {
  uint64_t s = 7;
  ce_pose X = ce_pose_from_quat(ce_test_rand_quat(&s), ce_v3(0.3, -1.2, 2.5));
  ce_pose Xi = ce_pose_inverse(&X);
  ce_pose I = ce_pose_compose(&X, &Xi);
  ce_vec3 p = ce_v3(0.1, 0.2, 0.3);
  ce_vec3 q = ce_pose_apply(&I, p);
  cr_assert(ce_norm(ce_sub(p, q)) < 1e-14);
  cr_assert(ce_norm(ce_sub(ce_pose_apply_inverse(&X, ce_pose_apply(&X, p)), p)) < 1e-14);
}

Test(math, wrench_shift_preserves_moment_about_any_point) {
  /* A force f at point x: torque about P is (x - P) x f. */
  ce_vec3 x = ce_v3(1, 2, 3), f = ce_v3(-0.5, 0.25, 2), P = ce_v3(0.2, -0.4, 1), Q = ce_v3(-3, 1, 0.5);
  ce_wrench wP = {ce_cross(ce_sub(x, P), f), f};
  ce_wrench wQ = ce_wrench_shift(wP, P, Q);
  ce_vec3 expect = ce_cross(ce_sub(x, Q), f);
  cr_assert(ce_norm(ce_sub(wQ.torque, expect)) < 1e-14);
}

Test(math, velocity_of_body_point) {
  ce_spatial_velocity V = {ce_v3(0, 0, 2), ce_v3(1, 0, 0)};
  ce_vec3 v = ce_velocity_at(&V, ce_v3(0, 0, 0), ce_v3(0, 1, 0));
  /* w x r = (0,0,2) x (0,1,0) = (-2, 0, 0) */
  cr_assert(fabs(v.x + 1) < 1e-15 && fabs(v.y) < 1e-15);
}

Test(material, combination_laws) {
  cr_assert(fabs(ce_combine_modulus(2e5, 2e5) - 1e5) < 1e-9);
  cr_assert(ce_combine_modulus(INFINITY, 3e5) == 3e5);
  cr_assert(isinf(ce_combine_modulus(INFINITY, INFINITY)));
  /* softer side's dissipation dominates: E_A = 1, E_B = 3, d_A = 1, d_B = 5 → (3*1 + 1*5)/4 = 2 */
  cr_assert(fabs(ce_combine_dissipation(1, 1, 3, 5) - 2) < 1e-15);
  cr_assert(ce_combine_dissipation(INFINITY, 9, 1e5, 0.5) == 0.5);
  cr_assert(fabs(ce_combine_friction(0.2, 0.6) - 0.3) < 1e-15);
  cr_assert(ce_combine_friction(0, 0) == 0);
}

Test(arena, alloc_reset_budget_and_growth) {
  ce_arena *a = ce_arena_create(1024);
  cr_assert_not_null(a);
  void *p = ce_arena_alloc(a, 10);
  cr_assert(((uintptr_t)p & 15) == 0);
  for (int i = 0; i < 1000; i++) cr_assert_not_null(ce_arena_alloc(a, 1000));
  ce_arena_reset(a);
  cr_assert_eq(ce_arena_used(a), 0);
  ce_arena_set_budget(a, 4096);
  cr_assert_not_null(ce_arena_alloc(a, 4000));
  cr_assert_null(ce_arena_alloc(a, 200), "budget must refuse the allocation");
  ce_buf b;
  ce_buf_init(&b, sizeof(int));
  ce_arena_set_budget(a, 0);
  ce_arena_reset(a);
  for (int i = 0; i < 10000; i++) *(int *)ce_buf_push(a, &b) = i;
  cr_assert_eq(b.len, 10000);
  cr_assert_eq(((int *)b.data)[9999], 9999);
  ce_arena_destroy(a);
}

Test(error, table_names_and_messages) {
  cr_assert_str_eq(ce_errname(CE_EINVERTED), "CE_EINVERTED");
  cr_assert_str_eq(ce_strerror(CE_EOPEN), "mesh is not closed");
  ce_error e;
  cr_assert_eq(ce_fail(&e, CE_ERANGE, "tet %d vertex %d", 3, 99), CE_ERANGE);
  cr_assert_str_eq(e.message, "tet 3 vertex 99");
}
