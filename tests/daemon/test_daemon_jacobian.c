/* test_daemon_jacobian.c — wrench Jacobians over the wire (QueryOptions.
 * want_jacobian, PairResult.jacobian) against the real contactd: a
 * compliant sphere pressed into a rigid half space, in protobuf (the normal
 * stiffness against central differences of the served force and against
 * the sphere's closed form), in JSON, on a stream, and under the
 * point-contact model (fn = k x: d fz / d pz = -k). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

TestSuite(jacobian_wire, .init = tc_suite_up, .fini = tc_suite_down, .timeout = 120);

#define R 0.1
#define E 1e6

/* The pair (sphere at height z, plane) with or without Jacobians, under
 * the query's default model or the point-contact model. */
static Env *query_model(const char *sphere, const char *plane, double z, int jac, uint64_t id, int point) {
  tc_pair_query q;
  tc_pair_query_init(&q, id, sphere, z, plane, 0, CONTACTD__V1__DETAIL__DETAIL_WRENCH);
  q.options.want_jacobian = jac;
  if (point) q.options.contact_model = CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT;
  Env *r = tc_call(tc_suite_fd, &q.env, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "a contact reply");
  cr_assert_eq(r->contact_reply->n_results, 1);
  return r;
}
static Env *query(const char *sphere, const char *plane, double z, int jac, uint64_t id) {
  return query_model(sphere, plane, z, jac, id, 0);
}

Test(jacobian_wire, normal_stiffness_of_a_sphere_on_a_plane) {
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, 0.02), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  cr_assert(s && p);
  const double z = 0.09, x = R - z, h = 1e-6;
  Env *r = query(s, p, z, 1, 3);
  const Contactd__V1__PairResult *pr = r->contact_reply->results[0];
  cr_assert(pr->jacobian, "the reply carries the Jacobian");
  const Contactd__V1__WrenchJacobian *j = pr->jacobian;
  cr_assert_eq(j->n_d_pose_a, 36);
  cr_assert_eq(j->n_d_pose_b, 36);
  cr_assert_eq(j->n_d_velocity_a, 36);
  cr_assert_eq(j->n_d_velocity_b, 36);
  cr_expect(!j->unavailable || !j->unavailable[0]);
  const double kz = j->d_pose_a[35];
  /* central differences of the served force */
  Env *rp = query(s, p, z + h, 0, 4), *rm = query(s, p, z - h, 0, 5);
  cr_expect(!rp->contact_reply->results[0]->jacobian, "none unless asked for");
  const double fd_kz =
      (rp->contact_reply->results[0]->wrench_a->force->z - rm->contact_reply->results[0]->wrench_a->force->z) /
      (2 * h);
  cr_expect(fabs(kz - fd_kz) <= 1e-4 * fabs(fd_kz), "d fz / d pz %.9g vs central differences %.9g", kz, fd_kz);
  /* the linear-field sphere: fz = pi E (x^2 - 2 x^3 / (3 R)), dfz/dpz = -2 pi E x (1 - x/R) */
  const double exact = -2 * M_PI * E * x * (1 - x / R);
  cr_expect(fabs(kz - exact) <= 0.1 * fabs(exact), "d fz / d pz %.6g vs the smooth sphere's %.6g", kz, exact);
  cr_expect(fabs(j->d_pose_b[35] + kz) <= 1e-9 * fabs(kz), "B's pose: the opposite");
  contactd__v1__envelope__free_unpacked(r, NULL);
  contactd__v1__envelope__free_unpacked(rp, NULL);
  contactd__v1__envelope__free_unpacked(rm, NULL);

  /* JSON: the option and the matrices under their proto3 JSON names */
  int fj = tc_connect_tcp(tc_suite_daemon.port);
  char line[1024];
  snprintf(line, sizeof line,
           "{\"requestId\":\"7\",\"contactQuery\":{\"bodies\":[{\"bodyId\":1,\"geometryId\":\"%s\",\"pose\":"
           "{\"position\":{\"z\":%.17g}}},{\"bodyId\":2,\"geometryId\":\"%s\"}],\"pairs\":[{\"a\":1,\"b\":2}],"
           "\"options\":{\"wantJacobian\":true}}}\n",
           s, z, p);
  cr_assert_eq(tc_send_raw(fj, line, strlen(line)), 0);
  char *l = tc_recv_line(fj, 30000);
  cr_assert(l, "a JSON reply");
  cr_expect(strstr(l, "\"jacobian\"") && strstr(l, "\"dPoseA\"") && strstr(l, "\"dVelocityB\""), "%.400s", l);
  free(l);
  close(fj);
  free(s);
  free(p);
}

Test(jacobian_wire, streams_accept_the_option) {
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, 0.05), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  cr_assert(s && p);
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.want_jacobian = 1;
  uint64_t sid = tc_open_pair_stream(tc_suite_fd, s, 0.09, p, 0, &o, 0, 10, 10000);
  cr_assert_neq(sid, 0, "the stream opens");
  cr_assert_eq(tc_send_stream_update_z(tc_suite_fd, 11, sid, 1, 1, 0.085), 0);
  Env *r = tc_recv(tc_suite_fd, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT, "a stream result");
  cr_assert_eq(r->stream_result->n_results, 1);
  const Contactd__V1__WrenchJacobian *j = r->stream_result->results[0]->jacobian;
  cr_assert(j && j->n_d_pose_a == 36, "the stream's results carry Jacobians");
  cr_expect_lt(j->d_pose_a[35], 0.0, "raising the sphere unloads it");
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(s);
  free(p);
}

Test(jacobian_wire, point_contact_stiffness) {
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, 0.05), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  cr_assert(s && p);
  const double z = 0.095, h = 1e-6;
  Env *r = query_model(s, p, z, 1, 3, 1);
  const Contactd__V1__PairResult *pr = r->contact_reply->results[0];
  cr_assert_eq(pr->model, CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT);
  cr_assert(pr->jacobian && pr->jacobian->n_d_pose_a == 36, "the point contact's Jacobian: %s",
            pr->jacobian && pr->jacobian->unavailable ? pr->jacobian->unavailable : "none");
  const double kz = pr->jacobian->d_pose_a[35];
  Env *rp = query_model(s, p, z + h, 0, 4, 1), *rm = query_model(s, p, z - h, 0, 5, 1);
  const double fd_kz =
      (rp->contact_reply->results[0]->wrench_a->force->z - rm->contact_reply->results[0]->wrench_a->force->z) /
      (2 * h);
  cr_expect(kz < 0 && fabs(kz - fd_kz) <= 1e-6 * fabs(fd_kz), "d fz / d pz %.9g vs central differences %.9g", kz,
            fd_kz);
  cr_expect(fabs(pr->jacobian->d_pose_b[35] + kz) <= 1e-9 * fabs(kz), "B's pose: the opposite");
  contactd__v1__envelope__free_unpacked(r, NULL);
  contactd__v1__envelope__free_unpacked(rp, NULL);
  contactd__v1__envelope__free_unpacked(rm, NULL);
  free(s);
  free(p);
}
