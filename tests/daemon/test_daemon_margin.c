/* test_daemon_margin.c — margins over the wire (RegisterGeometry.margin,
 * CONTACT_STATUS_SPECULATIVE, PairResult.speculative) against the real
 * contactd: a compliant sphere with a margin above a rigid half space, the
 * id, the broad phase, JSON, and margins refused where they cannot work. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

static tc_daemon D;
static int fd = -1;
static void up(void) {
  tc_start(&D, NULL);
  fd = tc_connect_tcp(D.port);
}
static void down(void) {
  close(fd);
  cr_expect_eq(tc_stop(&D), 0);
}
TestSuite(margin_wire, .init = up, .fini = down, .timeout = 120);

#define R 0.1
#define E 1e6
#define DELTA 0.01

/* Registers a compliant sphere with the given margin; the reply envelope. */
static Env *register_sphere(double margin, int compliant, uint64_t id) {
  Contactd__V1__Sphere s;
  Contactd__V1__RegisterGeometry rg;
  tc_sphere_spec(&rg, &s, R, E, 0.02);
  rg.margin = margin;
  if (!compliant) rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  Contactd__V1__Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  Env *r = tc_call(fd, &e, 60000);
  cr_assert(r, "a reply");
  return r;
}

static Env *query(const char *sphere, const char *plane, double z, int all_pairs) {
  tc_pair_query q;
  tc_pair_query_init(&q, 9, sphere, z, plane, 0, CONTACTD__V1__DETAIL__DETAIL_WRENCH);
  Contactd__V1__AllPairs all = CONTACTD__V1__ALL_PAIRS__INIT;
  if (all_pairs) { /* the broad phase finds the pair */
    q.query.n_pairs = 0;
    q.query.all_pairs = &all;
  }
  Env *r = tc_call(fd, &q.env, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "a contact reply");
  return r;
}

Test(margin_wire, speculative_within_the_margin) {
  Env *reg = register_sphere(DELTA, 1, 1), *reg0 = register_sphere(0, 1, 2);
  cr_assert_eq(reg->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  cr_assert_eq(reg0->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  const char *s = reg->register_reply->geometry_id, *s0 = reg0->register_reply->geometry_id;
  cr_expect_str_neq(s, s0, "the margin is part of the id");
  char *p = tc_register_halfspace(fd, 3, 0, 0);
  cr_assert(p);
  Env *r;
  /* 5 mm above the plane: speculative, found by the broad phase too */
  for (int all = 0; all < 2; all++) {
    r = query(s, p, R + 0.005, all);
    cr_assert_eq(r->contact_reply->n_results, 1, "the pair (all pairs: %d)", all);
    const Contactd__V1__PairResult *pr = r->contact_reply->results[0];
    cr_expect_eq(pr->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SPECULATIVE, "status %d", pr->status);
    cr_assert(pr->speculative, "the speculative contact");
    cr_expect(pr->speculative->separation > 0 && pr->speculative->separation < 0.006, "separation %g",
              pr->speculative->separation);
    cr_expect_gt(pr->speculative->stiffness, 0);
    cr_expect_gt(pr->speculative->normal->z, 0.9);
    cr_expect_eq(pr->wrench_a->force->z, 0.0);
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  /* two spheres 5 mm apart: their bounding spheres (grown by the margins)
   * meet, so the broad phase pairs them, and they are speculative */
  r = query(s, s, 2 * R + 0.005, 1);
  cr_assert_eq(r->contact_reply->n_results, 1, "the broad phase pairs them");
  cr_expect_eq(r->contact_reply->results[0]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SPECULATIVE);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = query(s0, s0, 2 * R + 0.005, 1);
  cr_expect_eq(r->contact_reply->n_results, 0, "without margins they are not paired");
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* without the margin: apart; beyond it: apart */
  r = query(s0, p, R + 0.005, 0);
  cr_expect_eq(r->contact_reply->results[0]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_NONE);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = query(s, p, R + 0.02, 0);
  cr_expect_eq(r->contact_reply->results[0]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_NONE);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* in contact: the same force with and without */
  Env *a = query(s, p, R - 0.01, 0), *b = query(s0, p, R - 0.01, 0);
  cr_expect_eq(a->contact_reply->results[0]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
  cr_expect_eq(a->contact_reply->results[0]->wrench_a->force->z, b->contact_reply->results[0]->wrench_a->force->z);
  contactd__v1__envelope__free_unpacked(a, NULL);
  contactd__v1__envelope__free_unpacked(b, NULL);
  /* JSON names */
  int fj = tc_connect_tcp(D.port);
  char line[1024];
  snprintf(line, sizeof line,
           "{\"requestId\":\"7\",\"contactQuery\":{\"bodies\":[{\"bodyId\":1,\"geometryId\":\"%s\",\"pose\":"
           "{\"position\":{\"z\":%.17g}}},{\"bodyId\":2,\"geometryId\":\"%s\"}],\"pairs\":[{\"a\":1,\"b\":2}]}}\n",
           s, R + 0.005, p);
  cr_assert_eq(tc_send_raw(fj, line, strlen(line)), 0);
  char *l = tc_recv_line(fj, 30000);
  cr_assert(l, "a JSON reply");
  cr_expect(strstr(l, "CONTACT_STATUS_SPECULATIVE") && strstr(l, "\"speculative\"") && strstr(l, "\"separation\""),
            "%.600s", l);
  free(l);
  close(fj);
  contactd__v1__envelope__free_unpacked(reg, NULL);
  contactd__v1__envelope__free_unpacked(reg0, NULL);
  free(p);
}

Test(margin_wire, refused_where_it_cannot_work) {
  Env *r = register_sphere(DELTA, 0, 4);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR, "a rigid sphere takes no margin");
  cr_expect_str_eq(r->error->field, "registerGeometry.margin");
  cr_expect(strstr(r->error->message, "only compliant spheres, boxes, cylinders and capsules"), "%s",
            r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = register_sphere(-1, 1, 5);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect(strstr(r->error->message, "must be finite and >= 0"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* the server is still up */
  r = register_sphere(DELTA, 1, 6);
  cr_expect_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  contactd__v1__envelope__free_unpacked(r, NULL);
}
