/* test_daemon_stream.c — streams against the real contactd: queue-all
 * (every update answered, in order, with its sequence), latest-only
 * (overtaken updates dropped and counted, the newest always answered),
 * broad phase per update, bad updates rejected without changing state. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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
TestSuite(stream, .init = up, .fini = down);

static uint64_t open_stream(const char *sphere, const char *plane, int mode, int all, int detail,
                            uint64_t request_id) {
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, sphere, 0, 0, 1.0);
  tc_body(&b2, &p2, &v2, 2, plane, 0, 0, 0);
  Contactd__V1__Pair pr = CONTACTD__V1__PAIR__INIT, *prs[1] = {&pr};
  pr.a = 1;
  pr.b = 2;
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.detail = (Contactd__V1__Detail)detail;
  Contactd__V1__OpenStream os = CONTACTD__V1__OPEN_STREAM__INIT;
  os.n_bodies = 2;
  os.bodies = bodies;
  if (all) os.all_pairs = &ap;
  else {
    os.n_pairs = 1;
    os.pairs = prs;
  }
  os.options = &o;
  os.mode = (Contactd__V1__StreamMode)mode;
  uint64_t id = tc_open_stream(fd, &os, request_id, 5000);
  cr_assert_neq(id, 0, "the stream opens");
  return id;
}

/* A StreamUpdate moving body 1 to height z, in caller-owned storage. */
typedef struct update_msg {
  Contactd__V1__Vec3 pos;
  Contactd__V1__Pose pose;
  Contactd__V1__BodyState bs, *bsp[1];
  Contactd__V1__StreamUpdate u;
  Env e;
} update_msg;

static Env *update_init(update_msg *m, uint64_t sid, uint64_t request_id, uint64_t seq, double z) {
  contactd__v1__vec3__init(&m->pos);
  m->pos.z = z;
  contactd__v1__pose__init(&m->pose);
  m->pose.position = &m->pos;
  contactd__v1__body_state__init(&m->bs);
  m->bs.body_id = 1;
  m->bs.pose = &m->pose;
  m->bsp[0] = &m->bs;
  contactd__v1__stream_update__init(&m->u);
  m->u.stream_id = sid;
  m->u.sequence = seq;
  m->u.n_bodies = 1;
  m->u.bodies = m->bsp;
  contactd__v1__envelope__init(&m->e);
  m->e.request_id = request_id;
  m->e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
  m->e.stream_update = &m->u;
  return &m->e;
}

static void send_update(uint64_t sid, uint64_t request_id, uint64_t seq, double z) {
  update_msg m;
  cr_assert_eq(tc_send(fd, update_init(&m, sid, request_id, seq, z)), 0);
}

static Env *close_stream(uint64_t sid, uint64_t request_id) {
  Contactd__V1__CloseStream cs = CONTACTD__V1__CLOSE_STREAM__INIT;
  cs.stream_id = sid;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = request_id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM;
  e.close_stream = &cs;
  Env *r = tc_call(fd, &e, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM_REPLY);
  return r;
}

Test(stream, queue_all_answers_every_update_in_order) {
  char *s = tc_register_sphere(fd, 1, 0.1, 1e6, 0.05), *p = tc_register_halfspace(fd, 2, 0, 0);
  uint64_t sid = open_stream(s, p, CONTACTD__V1__STREAM_MODE__STREAM_MODE_QUEUE_ALL, 0, 0, 500);
  cr_expect_eq(sid, 1);
  for (uint64_t i = 1; i <= 10; i++) send_update(sid, 600 + i, i * 10, 0.1 - 0.002 * (double)i);
  double last = 0;
  for (uint64_t i = 1; i <= 10; i++) {
    Env *r = tc_recv(fd, 10000);
    cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT);
    cr_expect_eq(r->request_id, 500, "stream results carry the OpenStream's request id");
    cr_expect_eq(r->stream_result->stream_id, sid);
    cr_expect_eq(r->stream_result->sequence, i * 10);
    cr_expect_eq(r->stream_result->dropped_updates, 0);
    cr_assert_eq(r->stream_result->n_results, 1);
    double fz = r->stream_result->results[0]->wrench_a->force->z;
    cr_expect_gt(fz, last, "deeper means more force (update %llu: %g after %g)", (unsigned long long)i, fz, last);
    last = fz;
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  Env *c = close_stream(sid, 700);
  cr_expect_eq(c->close_stream_reply->updates, 10);
  cr_expect_eq(c->close_stream_reply->results, 10);
  cr_expect_eq(c->close_stream_reply->dropped_updates, 0);
  contactd__v1__envelope__free_unpacked(c, NULL);
  free(s);
  free(p);
}

Test(stream, latest_only_drops_overtaken_updates_and_counts_them) {
  /* a fine sphere and full surfaces make each update take a while */
  char *s = tc_register_sphere(fd, 1, 0.1, 1e6, 0.008), *p = tc_register_halfspace(fd, 2, 0, 0);
  uint64_t sid = open_stream(s, p, CONTACTD__V1__STREAM_MODE__STREAM_MODE_LATEST_ONLY, 0,
                             CONTACTD__V1__DETAIL__DETAIL_SURFACE, 800);
  const uint64_t n = 60;
  for (uint64_t i = 1; i <= n; i++) send_update(sid, 900 + i, i, 0.05);
  uint64_t prev = 0, results = 0, dropped = 0;
  for (;;) {
    Env *r = tc_recv(fd, 30000);
    cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT);
    uint64_t seq = r->stream_result->sequence;
    cr_expect_gt(seq, prev, "results keep their order");
    prev = seq;
    results++;
    dropped += r->stream_result->dropped_updates;
    cr_expect_gt(r->stream_result->results[0]->area, 0.0);
    contactd__v1__envelope__free_unpacked(r, NULL);
    if (seq == n) break; /* the newest update is never overtaken */
  }
  cr_expect_gt(dropped, 0, "a burst of %llu updates overtakes some", (unsigned long long)n);
  cr_expect_eq(results + dropped, n, "every update is either answered or counted as dropped");
  Env *c = close_stream(sid, 1000);
  cr_expect_eq(c->close_stream_reply->updates, n);
  cr_expect_eq(c->close_stream_reply->results, results);
  cr_expect_eq(c->close_stream_reply->dropped_updates, dropped);
  contactd__v1__envelope__free_unpacked(c, NULL);
  free(s);
  free(p);
}

Test(stream, broad_phase_reruns_on_every_update) {
  char *s = tc_register_sphere(fd, 1, 0.1, 1e6, 0.05), *p = tc_register_halfspace(fd, 2, 0, 0);
  uint64_t sid = open_stream(s, p, 0, 1, 0, 1100);
  send_update(sid, 1101, 1, 0.09); /* touching */
  send_update(sid, 1102, 2, 3.0);  /* far away */
  Env *a = tc_recv(fd, 10000), *b = tc_recv(fd, 10000);
  cr_assert(a && b);
  cr_assert_eq(a->msg_case, CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT);
  cr_assert_eq(b->msg_case, CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT);
  cr_expect_eq(a->stream_result->n_results, 1);
  cr_expect_eq(b->stream_result->n_results, 0);
  contactd__v1__envelope__free_unpacked(a, NULL);
  contactd__v1__envelope__free_unpacked(b, NULL);
  free(s);
  free(p);
}

Test(stream, bad_updates_are_rejected_and_change_nothing) {
  char *s = tc_register_sphere(fd, 1, 0.1, 1e6, 0.05), *p = tc_register_halfspace(fd, 2, 0, 0);
  uint64_t sid = open_stream(s, p, 0, 0, 0, 1200);
  send_update(sid, 1201, 5, 0.09);
  Env *r = tc_recv(fd, 10000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT);
  double f0 = r->stream_result->results[0]->wrench_a->force->z;
  contactd__v1__envelope__free_unpacked(r, NULL);
  send_update(sid, 1202, 6, NAN);
  r = tc_recv(fd, 10000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->request_id, 1202);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT);
  cr_expect(strstr(r->error->message, "body 1"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  send_update(sid, 1203, 5, 0.08); /* sequence not increasing */
  r = tc_recv(fd, 10000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect(strstr(r->error->message, "not greater"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* an update that moves no body recomputes the unchanged state */
  Contactd__V1__StreamUpdate u = CONTACTD__V1__STREAM_UPDATE__INIT;
  u.stream_id = sid;
  u.sequence = 7;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 1204;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
  e.stream_update = &u;
  r = tc_call(fd, &e, 10000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT);
  cr_expect_eq(r->stream_result->results[0]->wrench_a->force->z, f0);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(s);
  free(p);
}

/* The next reply, which must be an error about stream sid's update seq. */
static void expect_update_error(uint64_t sid, uint64_t seq, int code, const char *text) {
  Env *r = tc_recv(fd, 10000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR, "an error for update %llu",
            (unsigned long long)seq);
  cr_expect_eq(r->error->code, code, "%s", r->error->message);
  cr_expect_eq(r->error->stream_id, sid, "%s", r->error->message);
  cr_expect_eq(r->error->sequence, seq, "%s", r->error->message);
  cr_expect_eq(r->request_id, 0, "under the update's request id, 0");
  cr_expect(strstr(r->error->message, text), "'%s' in: %s", text, r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
}

/* Every kind of bad StreamUpdate, sent with request id 0, is answered with
 * an error naming its stream and sequence: an unknown stream, a closed one,
 * a repeated sequence, a non-finite position, a quaternion far from unit
 * length, a body not in the stream, a frame that does not decode; and in
 * JSON, an unknown stream and a line that does not decode. */
Test(stream, every_bad_update_names_its_stream_and_sequence) {
  char *s = tc_register_sphere(fd, 1, 0.1, 1e6, 0.05), *p = tc_register_halfspace(fd, 2, 0, 0);
  uint64_t sid = open_stream(s, p, 0, 0, 0, 1300);
  send_update(sid, 0, 5, 0.09);
  Env *r = tc_recv(fd, 10000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT, "request id 0 is fine");
  cr_expect_eq(r->stream_result->sequence, 5);
  contactd__v1__envelope__free_unpacked(r, NULL);
  send_update(99, 0, 3, 0.09);
  expect_update_error(99, 3, CONTACTD__V1__ERROR_CODE__NOT_FOUND, "never opened");
  send_update(sid, 0, 5, 0.09);
  expect_update_error(sid, 5, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, "not greater");
  send_update(sid, 0, 6, NAN);
  expect_update_error(sid, 6, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, "body 1");
  update_msg m;
  Contactd__V1__Quat q = CONTACTD__V1__QUAT__INIT;
  q.w = 2;
  update_init(&m, sid, 0, 7, 0.09);
  m.pose.orientation = &q;
  cr_assert_eq(tc_send(fd, &m.e), 0);
  expect_update_error(sid, 7, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, "body 1");
  update_init(&m, sid, 0, 8, 0.09);
  m.bs.body_id = 9;
  cr_assert_eq(tc_send(fd, &m.e), 0);
  expect_update_error(sid, 8, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, "body 9 is not in stream");
  /* an Envelope{stream_update{stream_id, sequence 9, bodies: a cut varint}} */
  cr_assert_lt(sid, 128);
  const uint8_t bad[] = {10, 0x7a, 8, 0x08, (uint8_t)sid, 0x10, 9, 0x1a, 2, 0xff, 0xff};
  cr_assert_eq(tc_send_raw(fd, bad, sizeof bad), 0);
  expect_update_error(sid, 9, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, "invalid envelope");
  uint64_t other = open_stream(s, p, 0, 0, 0, 1301);
  contactd__v1__envelope__free_unpacked(close_stream(other, 1302), NULL);
  send_update(other, 0, 4, 0.09);
  expect_update_error(other, 4, CONTACTD__V1__ERROR_CODE__FAILED_PRECONDITION, "is closed");
  /* the stream is unharmed: the next good update is computed */
  send_update(sid, 0, 10, 0.09);
  r = tc_recv(fd, 10000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT);
  cr_expect_eq(r->stream_result->sequence, 10);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* JSON lines */
  int jfd = tc_connect_tcp(D.port);
  cr_assert_eq(tc_send_line(jfd, "{\"streamUpdate\": {\"streamId\": \"4\", \"sequence\": \"12\"}}"), 0);
  char *line = tc_recv_line(jfd, 10000);
  cr_assert(line);
  cr_expect(strstr(line, "NOT_FOUND") && strstr(line, "\"streamId\":\"4\"") && strstr(line, "\"sequence\":\"12\""),
            "%s", line);
  free(line);
  cr_assert_eq(tc_send_line(jfd, "{\"streamUpdate\": {\"streamId\": 4, \"sequence\": 13, \"bodies\": "
                                 "[{\"bodyId\": \"one\"}]}}"),
               0);
  line = tc_recv_line(jfd, 10000);
  cr_assert(line);
  cr_expect(strstr(line, "INVALID_ARGUMENT") && strstr(line, "\"streamId\":\"4\"") &&
                strstr(line, "\"sequence\":\"13\""),
            "%s", line);
  free(line);
  close(jfd);
  free(s);
  free(p);
}

/* A CloseStream held back by max_inflight_per_conn behind a running
 * update: the update's reply frees the slots, the held CloseStream is read
 * inside that reply; the stream must not be freed under the computation
 * that is still finishing (a heap use after free the fuzzer once found).
 * Every reply comes, in order, the close counting the one result. */
Test(stream_held, close_held_behind_a_running_update) {
  const char *path = tc_limits_file("stream-held.json", "\"max_inflight_per_conn\": 4");
  const char *extra[] = {"--config", path, NULL};
  tc_start(&D, extra);
  fd = tc_connect_tcp(D.port);
  char *sphere = tc_register_sphere(fd, 1, 0.1, 1e6, 0.01), *plane = tc_register_halfspace(fd, 2, 0, 0);
  cr_assert(sphere && plane);
  uint64_t sid = open_stream(sphere, plane, CONTACTD__V1__STREAM_MODE__STREAM_MODE_QUEUE_ALL, 0,
                             CONTACTD__V1__DETAIL__DETAIL_SURFACE, 3);
  /* one write: the update, three Hellos (4 slots), the CloseStream */
  update_msg um;
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  Contactd__V1__CloseStream cs = CONTACTD__V1__CLOSE_STREAM__INIT;
  cs.stream_id = sid;
  Env e[5];
  e[0] = *update_init(&um, sid, 4, 1, 0.09);
  for (int k = 1; k < 5; k++) {
    contactd__v1__envelope__init(&e[k]);
    e[k].request_id = 4 + (uint64_t)k;
    e[k].msg_case = k < 4 ? CONTACTD__V1__ENVELOPE__MSG_HELLO : CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM;
  }
  e[1].hello = e[2].hello = e[3].hello = &h;
  e[4].close_stream = &cs;
  cr_assert_eq(tc_send_burst(fd, e, 5), 0);
  Env *r = tc_recv(fd, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT, "the update's result first");
  cr_expect_eq(r->stream_result->sequence, 1);
  contactd__v1__envelope__free_unpacked(r, NULL);
  for (uint64_t id = 5; id <= 7; id++) {
    r = tc_recv(fd, 30000);
    cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
    cr_expect_eq(r->request_id, id);
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  r = tc_recv(fd, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM_REPLY, "then the close");
  cr_expect_eq(r->request_id, 8);
  cr_expect_eq(r->close_stream_reply->updates, 1);
  cr_expect_eq(r->close_stream_reply->results, 1);
  contactd__v1__envelope__free_unpacked(r, NULL);
  cr_expect(tc_alive(&D));
  free(sphere);
  free(plane);
  down();
}

/* A client that stops reading is disconnected from inside CloseStream: the
 * close drops the stream's overtaken update, and that skipped slot lets the
 * replies behind it out, whose flush finds the client not reading. The
 * connection's close closes its streams; the stream being closed was counted
 * out twice (the open-streams gauge wrapped to 2^64 - 1) and could be freed
 * under the close. Order on the not-reading connection, one worker kept busy
 * by another client's build so everything arrives before the first update
 * runs: update 1 (four fine surfaces, ~5.6 MB, more than the socket takes),
 * update 2 (latest-only: waits behind it), a HasGeometry whose reply echoes
 * 120,000 ids (~8 MB, ready at once but behind the updates), the close (held:
 * three requests are in flight). */
Test(stream_held, reader_dropped_inside_a_close_counts_the_stream_once, .timeout = 300) {
  const char *path =
      tc_limits_file("stream-drop.json", "\"max_inflight_per_conn\": 3, \"max_output_bytes\": 1024");
  const char *extra[] = {"--config", path, "--workers", "1", NULL};
  tc_start(&D, extra);
  fd = tc_connect_tcp(D.port);
  char *h = tc_register_sphere(fd, 1, 0.1, 1e6, 0.005);
  cr_assert(h);
  int rd = tc_connect_tcp(D.port), small = 4096;
  setsockopt(rd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  Contactd__V1__Body b[5], *bodies[5];
  Contactd__V1__Pose p[5];
  Contactd__V1__Vec3 v[5];
  Contactd__V1__Pair pr[4], *prs[4];
  const double at[5][2] = {{0, 0}, {0.12, 0}, {-0.12, 0}, {0, 0.12}, {0, -0.12}};
  for (int k = 0; k < 5; k++) {
    tc_body(&b[k], &p[k], &v[k], (uint32_t)k + 1, h, at[k][0], at[k][1], 0);
    bodies[k] = &b[k];
  }
  for (int k = 0; k < 4; k++) {
    contactd__v1__pair__init(&pr[k]);
    pr[k].a = 1;
    pr[k].b = (uint32_t)k + 2;
    prs[k] = &pr[k];
  }
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.detail = CONTACTD__V1__DETAIL__DETAIL_SURFACE;
  Contactd__V1__OpenStream os = CONTACTD__V1__OPEN_STREAM__INIT;
  os.n_bodies = 5;
  os.bodies = bodies;
  os.n_pairs = 4;
  os.pairs = prs;
  os.options = &o;
  os.mode = CONTACTD__V1__STREAM_MODE__STREAM_MODE_LATEST_ONLY;
  uint64_t sid = tc_open_stream(rd, &os, 2, 10000);
  cr_assert_neq(sid, 0);

  /* another client's build occupies the only worker */
  int bz = tc_connect_tcp(D.port);
  Contactd__V1__Sphere sp = CONTACTD__V1__SPHERE__INIT;
  sp.radius = 0.1001;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rg.sphere = &sp;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = 1e6;
  rg.resolution_hint = 0.004;
  rg.want_progress = 1;
  Env re = CONTACTD__V1__ENVELOPE__INIT;
  re.request_id = 3;
  re.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  re.register_geometry = &rg;
  Env *r = tc_call(bz, &re, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS, "the build is running");
  contactd__v1__envelope__free_unpacked(r, NULL);

  enum { NIDS = 120000 };
  char (*ids)[65] = malloc(NIDS * sizeof *ids);
  char **idp = malloc(NIDS * sizeof *idp);
  for (int k = 0; k < NIDS; k++) {
    snprintf(ids[k], sizeof ids[k], "%064x", k);
    idp[k] = ids[k];
  }
  Contactd__V1__HasGeometry hg = CONTACTD__V1__HAS_GEOMETRY__INIT;
  hg.n_geometry_ids = NIDS;
  hg.geometry_ids = idp;
  Contactd__V1__CloseStream cs = CONTACTD__V1__CLOSE_STREAM__INIT;
  cs.stream_id = sid;
  update_msg u1, u2;
  Env e[4];
  e[0] = *update_init(&u1, sid, 10, 1, 0);
  e[1] = *update_init(&u2, sid, 11, 2, 0.001);
  contactd__v1__envelope__init(&e[2]);
  e[2].request_id = 12;
  e[2].msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
  e[2].has_geometry = &hg;
  contactd__v1__envelope__init(&e[3]);
  e[3].request_id = 13;
  e[3].msg_case = CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM;
  e[3].close_stream = &cs;
  cr_assert_eq(tc_send_burst(rd, e, 4), 0);
  free(idp);
  free(ids);

  for (int k = 0; k < 3000 && !tc_log_count(&D, "slow reader disconnected"); k++) usleep(10000);
  cr_assert_eq(tc_log_count(&D, "slow reader disconnected"), 1, "the client that does not read is dropped");
  r = tc_stats(fd, 20, 10000);
  cr_assert(r, "the server answers others");
  cr_expect_eq(r->stats_reply->streams, 0, "the closed stream is counted out once (gauge %llu)",
               (unsigned long long)r->stats_reply->streams);
  contactd__v1__envelope__free_unpacked(r, NULL);
  while ((r = tc_recv(bz, 300000)) && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS)
    contactd__v1__envelope__free_unpacked(r, NULL);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "the other client's build completes");
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(rd);
  close(bz);
  free(h);
  down();
}
