/* test_daemon_reduce.c — reduced contacts over the wire (QueryOptions.
 * reduced_contacts, PairResult.reduced_contacts) against the real contactd:
 * a compliant sphere pressed into a rigid half space, in protobuf (the
 * points' forces and moments add up to the served wrench), in JSON, on a
 * stream, under the point-contact model, with a K out of range, and the
 * same bytes whatever the server's worker count. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

TestSuite(reduce_wire, .init = tc_suite_up, .fini = tc_suite_down, .timeout = 120);

#define R 0.1
#define E 1e6

static Env *query(int sock, const char *sphere, const char *plane, double z, uint32_t K, uint64_t id, int point) {
  tc_pair_query q;
  tc_pair_query_init(&q, id, sphere, z, plane, 0, CONTACTD__V1__DETAIL__DETAIL_WRENCH);
  q.options.reduced_contacts = K;
  if (point) q.options.contact_model = CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT;
  Env *r = tc_call(sock, &q.env, 30000);
  cr_assert(r, "a reply");
  return r;
}

typedef struct vec { double x, y, z; } vec;
static vec v3(const Contactd__V1__Vec3 *v) {
  vec o = {v ? v->x : 0, v ? v->y : 0, v ? v->z : 0};
  return o;
}

/* The points' wrench about A's origin (0, 0, z) against wrench_a. */
static void expect_matched(const Contactd__V1__PairResult *pr, double z, uint32_t K) {
  double F[3] = {0, 0, 0}, M[3] = {0, 0, 0};
  int32_t last = -1, run = 0;
  for (size_t i = 0; i < pr->n_reduced_contacts; i++) {
    const Contactd__V1__ReducedContact *c = pr->reduced_contacts[i];
    run = c->patch == last ? run + 1 : 1;
    last = c->patch;
    cr_expect_leq(run, (int32_t)K, "at most K points per patch");
    vec p = v3(c->position), f = v3(c->force), cp = v3(c->couple);
    p.z -= z;
    F[0] += f.x, F[1] += f.y, F[2] += f.z;
    M[0] += p.y * f.z - p.z * f.y + cp.x;
    M[1] += p.z * f.x - p.x * f.z + cp.y;
    M[2] += p.x * f.y - p.y * f.x + cp.z;
    cr_expect_gt(c->stiffness, 0);
    cr_expect(fabs(c->stiffness * -c->separation) > 0, "an elastic force");
  }
  const Contactd__V1__Wrench *w = pr->wrench_a;
  double fs = fabs(w->force->z);
  cr_assert_gt(fs, 0);
  const double f[3] = {w->force->x, w->force->y, w->force->z}, t[3] = {w->torque->x, w->torque->y, w->torque->z};
  for (int k = 0; k < 3; k++) {
    cr_expect_leq(fabs(F[k] - f[k]), 1e-9 * fs, "force %d: %.17g vs %.17g", k, F[k], f[k]);
    cr_expect_leq(fabs(M[k] - t[k]), 1e-9 * fs * R, "moment %d: %.17g vs %.17g", k, M[k], t[k]);
  }
}

Test(reduce_wire, points_carry_the_wrench) {
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, 0.02), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  cr_assert(s && p);
  const double z = 0.085;
  for (uint32_t K = 1; K <= 8; K *= 2) {
    Env *r = query(tc_suite_fd, s, p, z, K, 3, 0);
    cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
    const Contactd__V1__PairResult *pr = r->contact_reply->results[0];
    cr_assert_eq(pr->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
    cr_expect_eq(pr->n_reduced_contacts, K, "a disc of many faces: K points (got %zu)", pr->n_reduced_contacts);
    expect_matched(pr, z, K);
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  Env *r = query(tc_suite_fd, s, p, z, 0, 4, 0);
  cr_expect_eq(r->contact_reply->results[0]->n_reduced_contacts, 0, "none unless asked for");
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* the point-contact model: one point, k depth its force */
  r = query(tc_suite_fd, s, p, z, 4, 5, 1);
  const Contactd__V1__PairResult *pr = r->contact_reply->results[0];
  cr_assert_eq(pr->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT);
  cr_assert_eq(pr->n_reduced_contacts, 1);
  const Contactd__V1__ReducedContact *c = pr->reduced_contacts[0];
  cr_expect(fabs(c->separation + pr->penetration->depth) <= 1e-15, "separation = -depth");
  cr_expect(fabs(c->stiffness * -c->separation - pr->wrench_a->force->z) <= 1e-9 * pr->wrench_a->force->z);
  expect_matched(pr, z, 1);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(s);
  free(p);
}

Test(reduce_wire, json_and_a_bad_k) {
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, 0.05), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  cr_assert(s && p);
  Env *r = query(tc_suite_fd, s, p, 0.09, 65, 3, 0);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR, "K = 65 is refused");
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT);
  cr_expect(strstr(r->error->field, "reducedContacts"), "field %s", r->error->field);
  cr_expect(strstr(r->error->message, "at most 64"), "message %s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* the server stays up and answers JSON under the proto3 JSON names */
  int fj = tc_connect_tcp(tc_suite_daemon.port);
  char line[1024];
  snprintf(line, sizeof line,
           "{\"requestId\":\"7\",\"contactQuery\":{\"bodies\":[{\"bodyId\":1,\"geometryId\":\"%s\",\"pose\":"
           "{\"position\":{\"z\":0.09}}},{\"bodyId\":2,\"geometryId\":\"%s\"}],\"pairs\":[{\"a\":1,\"b\":2}],"
           "\"options\":{\"reducedContacts\":4}}}\n",
           s, p);
  cr_assert_eq(tc_send_raw(fj, line, strlen(line)), 0);
  char *l = tc_recv_line(fj, 30000);
  cr_assert(l, "a JSON reply");
  cr_expect(strstr(l, "\"reducedContacts\":[") && strstr(l, "\"separation\"") && strstr(l, "\"stiffness\"") &&
                strstr(l, "\"couple\""),
            "%.600s", l);
  free(l);
  close(fj);
  free(s);
  free(p);
}

Test(reduce_wire, streams_accept_the_option) {
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, 0.03), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  cr_assert(s && p);
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.reduced_contacts = 5;
  uint64_t sid = tc_open_pair_stream(tc_suite_fd, s, 0.09, p, 0, &o, 0, 10, 10000);
  cr_assert_neq(sid, 0, "the stream opens");
  cr_assert_eq(tc_send_stream_update_z(tc_suite_fd, 11, sid, 1, 1, 0.085), 0);
  Env *r = tc_recv(tc_suite_fd, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT, "a stream result");
  cr_assert_eq(r->stream_result->n_results, 1);
  const Contactd__V1__PairResult *pr = r->stream_result->results[0];
  cr_expect_eq(pr->n_reduced_contacts, 5, "the stream's results carry the points (%zu)", pr->n_reduced_contacts);
  expect_matched(pr, 0.085, 5);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(s);
  free(p);
}

/* The packed PairResult without its compute time. */
static uint8_t *packed(Contactd__V1__PairResult *pr, size_t *n) {
  pr->compute_time_us = 0;
  *n = protobuf_c_message_get_packed_size(&pr->base);
  uint8_t *b = malloc(*n);
  cr_assert(b);
  protobuf_c_message_pack(&pr->base, b);
  return b;
}

Test(reduce_wire, same_bytes_whatever_the_worker_count) {
  tc_daemon D1;
  const char *extra[] = {"--workers", "1", NULL};
  tc_start(&D1, extra);
  int fd1 = tc_connect_tcp(D1.port);
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, 0.03), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  char *s1 = tc_register_sphere(fd1, 1, R, E, 0.03), *p1 = tc_register_halfspace(fd1, 2, 0, 0);
  cr_assert(s && p && s1 && p1);
  cr_assert_str_eq(s, s1);
  Env *a = query(tc_suite_fd, s, p, 0.08, 8, 3, 0), *b = query(fd1, s1, p1, 0.08, 8, 3, 0);
  size_t na, nb;
  uint8_t *pa = packed(a->contact_reply->results[0], &na), *pb = packed(b->contact_reply->results[0], &nb);
  cr_expect_gt(a->contact_reply->results[0]->n_reduced_contacts, 1);
  cr_expect(na == nb && memcmp(pa, pb, na) == 0, "the same result from 2 workers and from 1");
  free(pa);
  free(pb);
  contactd__v1__envelope__free_unpacked(a, NULL);
  contactd__v1__envelope__free_unpacked(b, NULL);
  close(fd1);
  cr_expect_eq(tc_stop(&D1), 0);
  free(s);
  free(p);
  free(s1);
  free(p1);
}
