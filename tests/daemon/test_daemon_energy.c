/* test_daemon_energy.c — strain energy over the wire: QueryOptions.want_energy
 * in protobuf, JSON and streams against the real contactd; a compliant
 * sphere on a rigid plane holds pi E (d^3/3 - d^4/(6R)). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

TestSuite(daemon_energy, .init = tc_suite_up, .fini = tc_suite_down);

static const double R = 0.1, E = 1e6, d = 0.02;

static double closed_form(void) { return M_PI * E * (d * d * d / 3 - d * d * d * d / (6 * R)); }

static Env *query(const char *sphere, const char *plane, uint64_t rid, int energy) {
  tc_pair_query q;
  tc_pair_query_init(&q, rid, sphere, R - d, plane, 0, CONTACTD__V1__DETAIL__DETAIL_PATCHES);
  q.options.want_energy = energy;
  Env *r = tc_call(tc_suite_fd, &q.env, 60000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "the query is answered");
  cr_assert_eq(r->contact_reply->n_results, 1);
  return r;
}

Test(daemon_energy, query_reports_energy_only_on_request) {
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, R / 8), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  Env *on = query(s, p, 3, 1), *off = query(s, p, 4, 0);
  const Contactd__V1__PairResult *a = on->contact_reply->results[0], *b = off->contact_reply->results[0];
  cr_expect_eq(a->energy, CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_EXACT);
  double rel = a->strain_energy / closed_form() - 1;
  cr_expect(fabs(rel) < 0.02, "U = %.6g J, closed form %.6g J (hint R/8)", a->strain_energy, closed_form());
  cr_expect_eq(a->total->strain_energy, a->strain_energy);
  double sum = 0;
  for (size_t i = 0; i < a->n_patches; i++) sum += a->patches[i]->strain_energy;
  cr_expect(fabs(sum - a->strain_energy) <= 1e-12 * a->strain_energy, "patches %.17g vs %.17g", sum,
            a->strain_energy);
  /* off: no energy, and the same wrench */
  cr_expect_eq(b->energy, CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_UNSPECIFIED);
  cr_expect_eq(b->strain_energy, 0);
  cr_expect_eq(b->wrench_a->force->z, a->wrench_a->force->z);
  contactd__v1__envelope__free_unpacked(on, NULL);
  contactd__v1__envelope__free_unpacked(off, NULL);
  free(s);
  free(p);
}

Test(daemon_energy, json_and_streams_accept_the_option) {
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, R / 4), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  Env *pb = query(s, p, 3, 1);
  double U = pb->contact_reply->results[0]->strain_energy;
  int j = tc_connect_tcp(tc_suite_daemon.port);
  char line[1024];
  snprintf(line, sizeof line,
           "{\"requestId\":\"5\",\"contactQuery\":{\"bodies\":[{\"bodyId\":1,\"geometryId\":\"%s\","
           "\"pose\":{\"position\":{\"z\":%.17g}}},{\"bodyId\":2,\"geometryId\":\"%s\"}],"
           "\"pairs\":[{\"a\":1,\"b\":2}],\"options\":{\"wantEnergy\":true}}}",
           s, R - d, p);
  cr_assert_eq(tc_send_line(j, line), 0);
  char *l = tc_recv_line(j, 30000);
  cr_assert(l && strstr(l, "\"contactReply\""), "%s", l ? l : "(nothing)");
  cr_expect(strstr(l, "\"energy\":\"ENERGY_STATUS_EXACT\""), "%s", l);
  const char *e = strstr(l, "\"strainEnergy\":");
  cr_assert(e, "%s", l);
  cr_expect_eq(strtod(e + strlen("\"strainEnergy\":"), NULL), U, "JSON and protobuf agree");
  free(l);
  close(j);

  /* a stream opened with the option answers every update with the energy */
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.want_energy = 1;
  uint64_t sid = tc_open_pair_stream(tc_suite_fd, s, R - d, p, 0, &o, 0, 6, 5000);
  cr_assert_neq(sid, 0);
  cr_assert_eq(tc_send_stream_update_z(tc_suite_fd, 7, sid, 1, 1, R - d), 0);
  Env *r = tc_recv(tc_suite_fd, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT, "the update is answered");
  cr_assert_eq(r->stream_result->n_results, 1);
  cr_expect_eq(r->stream_result->results[0]->energy, CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_EXACT);
  cr_expect_eq(r->stream_result->results[0]->strain_energy, U, "the stream's energy is the query's");
  contactd__v1__envelope__free_unpacked(r, NULL);
  contactd__v1__envelope__free_unpacked(pb, NULL);
  free(s);
  free(p);
}

/* The pairs of one query run on several workers; each pair's energy is
 * bit-identical to the same pair queried alone. */
Test(daemon_energy, energy_does_not_depend_on_the_worker) {
  char *s = tc_register_sphere(tc_suite_fd, 1, R, E, R / 4), *p = tc_register_halfspace(tc_suite_fd, 2, 0, 0);
  enum { N = 6 };
  Contactd__V1__Body b[N + 1], *bodies[N + 1];
  Contactd__V1__Pose pose[N + 1];
  Contactd__V1__Vec3 pos[N + 1];
  Contactd__V1__Pair pr[N], *prs[N];
  tc_body(&b[0], &pose[0], &pos[0], 1, p, 0, 0, 0);
  bodies[0] = &b[0];
  for (int i = 0; i < N; i++) {
    tc_body(&b[i + 1], &pose[i + 1], &pos[i + 1], (uint32_t)(i + 2), s, 0, 0, R - 0.004 * (i + 1));
    bodies[i + 1] = &b[i + 1];
    contactd__v1__pair__init(&pr[i]);
    pr[i].a = (uint32_t)(i + 2);
    pr[i].b = 1;
    prs[i] = &pr[i];
  }
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.want_energy = 1;
  Contactd__V1__ContactQuery cq = CONTACTD__V1__CONTACT_QUERY__INIT;
  cq.n_bodies = N + 1;
  cq.bodies = bodies;
  cq.n_pairs = N;
  cq.pairs = prs;
  cq.options = &o;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 3;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &cq;
  Env *all = tc_call(tc_suite_fd, &e, 60000);
  cr_assert(all && all->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_assert_eq(all->contact_reply->n_results, N);
  for (int i = 0; i < N; i++) {
    tc_pair_query q;
    tc_pair_query_init(&q, (uint64_t)(10 + i), s, R - 0.004 * (i + 1), p, 0, CONTACTD__V1__DETAIL__DETAIL_WRENCH);
    q.options.want_energy = 1;
    Env *one = tc_call(tc_suite_fd, &q.env, 60000);
    cr_assert(one && one->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
    double u1 = one->contact_reply->results[0]->strain_energy, un = all->contact_reply->results[i]->strain_energy;
    cr_expect(memcmp(&u1, &un, sizeof u1) == 0, "pair %d: %.17g alone, %.17g among others", i, u1, un);
    cr_expect_gt(u1, 0);
    contactd__v1__envelope__free_unpacked(one, NULL);
  }
  contactd__v1__envelope__free_unpacked(all, NULL);
  free(s);
  free(p);
}
