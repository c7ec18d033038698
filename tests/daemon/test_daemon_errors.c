/* test_daemon_errors.c — the bad-input catalogue, one test each: every bad
 * input gets an Error with the right gRPC code, a message naming the
 * offending field or element and the request id; the connection stays
 * usable where the framing allows; another client is unaffected; the daemon
 * stays up (and still exits 0 on SIGTERM). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cd_frame.h"
#include "cd_test_client.h"
#include "cd_utf8.h"

typedef Contactd__V1__Envelope Env;

static tc_daemon D;
static int bystander = -1;
static char *sphere, *plane;

static void start_with(const char *const *extra) {
  if (sphere) { /* criterion ran the suite's init before the test's own: replace its daemon */
    close(bystander);
    free(sphere);
    free(plane);
    sphere = plane = NULL;
    cr_assert_eq(tc_stop(&D), 0);
  }
  tc_start(&D, extra);
  bystander = tc_connect_unix(D.unix_path);
  cr_assert_geq(bystander, 0);
  sphere = tc_register_sphere(bystander, 1, 0.1, 1e6, 0.05);
  plane = tc_register_halfspace(bystander, 2, 0, 0);
  cr_assert(sphere && plane);
}
static void up(void) { start_with(NULL); }
/* Start with a config file at path whose "limits" object holds `limits`. */
static void start_with_limits(const char *path, const char *limits) {
  const char *extra[] = {"--config", tc_limits_file(path, limits), NULL};
  start_with(extra);
}

static Env *hello(int fd, uint64_t id) {
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  e.hello = &h;
  return tc_call(fd, &e, 5000);
}

static void expect_usable(int fd, uint64_t id) {
  Env *r = hello(fd, id);
  cr_assert(r, "the connection is still usable");
  cr_expect_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  cr_expect_eq(r->request_id, id);
  contactd__v1__envelope__free_unpacked(r, NULL);
}

static void expect_error(Env *r, int code, uint64_t id, const char *needle) {
  cr_assert(r, "an error reply arrives");
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR, "got case %d", r->msg_case);
  cr_expect_eq(r->error->code, code, "code %d, want %d (%s)", r->error->code, code, r->error->message);
  cr_expect_eq(r->request_id, id, "request id echoed");
  cr_expect(strstr(r->error->message, needle), "message \"%s\" names \"%s\"", r->error->message, needle);
}

/* The other client still gets answers; the daemon is alive. */
static void down(void) {
  cr_expect(tc_alive(&D), "the daemon is still up");
  tc_pair_query pq;
  tc_pair_query_init(&pq, 77, sphere, 0.09, plane, 0, 0);
  Env *r = tc_call(bystander, &pq.env, 30000);
  cr_expect(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "another client is unaffected");
  if (r) {
    cr_expect_gt(r->contact_reply->results[0]->wrench_a->force->z, 0.0);
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  close(bystander);
  free(sphere);
  free(plane);
  cr_expect_eq(tc_stop(&D), 0, "contactd exits 0 on SIGTERM");
}

static Env *query(int fd, uint64_t id, Contactd__V1__Body **bodies, size_t n) {
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  q.n_bodies = n;
  q.bodies = bodies;
  q.all_pairs = &ap;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  return tc_call(fd, &e, 30000);
}

TestSuite(bad_input, .init = up, .fini = down);

Test(bad_input, truncated_frame) {
  int fd = tc_connect_tcp(D.port);
  uint8_t buf[51] = {100}; /* announces 100 bytes, sends 50 */
  tc_send_raw(fd, buf, sizeof buf);
  shutdown(fd, SHUT_WR);
  Env *r = tc_recv(fd, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 0, "truncated frame");
  contactd__v1__envelope__free_unpacked(r, NULL);
  cr_expect(tc_wait_closed(fd, 5000), "the server closes after the error");
  close(fd);
}

Test(bad_input, length_prefix_over_the_cap) {
  int fd = tc_connect_tcp(D.port);
  uint8_t v[10];
  size_t n = 0;
  uint64_t len = (uint64_t)300 << 20; /* 300 MiB > 256 MiB */
  while (len >= 0x80) {
    v[n++] = (uint8_t)(len | 0x80);
    len >>= 7;
  }
  v[n++] = (uint8_t)len;
  tc_send_raw(fd, v, n);
  Env *r = tc_recv(fd, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, 0, "max_frame_bytes");
  contactd__v1__envelope__free_unpacked(r, NULL);
  cr_expect(tc_wait_closed(fd, 5000), "framing is lost: the server closes");
  close(fd);
}

static void small_frames(void) {
  start_with_limits("small-frames.json", "\"max_frame_bytes\": 65536");
}

/* A client sends a whole frame over max_frame_bytes, as clients do. The
 * server answers after reading the length alone; closing with the rest of
 * the frame unread would make the kernel send a reset, and the client
 * would lose the error (3 times in 10 under the fuzzer). So the server
 * shuts its write side and drops input until the client closes (or
 * linger_ms): every round gets the error, then the end of the stream. */
Test(bad_input, whole_frame_over_the_cap_gets_its_error, .init = small_frames) {
  const size_t body = 2400000;
  uint8_t *buf = calloc(1, body + 10);
  size_t n = 0;
  for (uint64_t len = body; ; len >>= 7) {
    buf[n++] = (uint8_t)(len & 0x7F) | (len >= 0x80 ? 0x80 : 0);
    if (len < 0x80) break;
  }
  for (int round = 0; round < 8; round++) {
    int fd = tc_connect_tcp(D.port);
    cr_assert_eq(tc_send_raw(fd, buf, n + body), 0, "round %d: the whole frame is taken", round);
    Env *r = tc_recv(fd, 5000);
    expect_error(r, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, 0, "frame length 2400000 exceeds the limit");
    if (r) contactd__v1__envelope__free_unpacked(r, NULL);
    shutdown(fd, SHUT_WR);
    cr_expect(tc_wait_closed(fd, 5000), "round %d: then the server closes", round);
    close(fd);
  }
  free(buf);
}

Test(bad_input, random_bytes) {
  int fd = tc_connect_tcp(D.port);
  /* a 6-byte frame of noise: framing survives, the message does not decode */
  uint8_t junk[7] = {6, 0xff, 0xfe, 0x07, 0x13, 0xff, 0x80};
  tc_send_raw(fd, junk, sizeof junk);
  Env *r = tc_recv(fd, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 0, "invalid envelope");
  cr_expect(strstr(r->error->message, "unsupported wire type 7 at byte 0"), "says why: %s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_usable(fd, 5);
  close(fd);
}

Test(bad_input, unknown_oneof_case) {
  int fd = tc_connect_tcp(D.port);
  /* request_id = 7, then field 99 (varint 1): no request this server knows */
  uint8_t body[] = {0x08, 0x07, 0x98, 0x06, 0x01};
  uint8_t frame[1 + sizeof body] = {sizeof body};
  memcpy(frame + 1, body, sizeof body);
  tc_send_raw(fd, frame, sizeof frame);
  Env *r = tc_recv(fd, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 7, "unknown field number 99");
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* a reply sent as a request is refused too */
  Contactd__V1__StatsReply sr = CONTACTD__V1__STATS_REPLY__INIT;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 8;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY;
  e.stats_reply = &sr;
  r = tc_call(fd, &e, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 8, "statsReply is a reply");
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_usable(fd, 9);
  close(fd);
}

Test(bad_input, invalid_json) {
  int fd = tc_connect_tcp(D.port);
  tc_send_line(fd, "{\"requestId\":\"3\",\"hello\":");
  char *l = tc_recv_line(fd, 5000);
  cr_assert(l);
  cr_expect(strstr(l, "\"code\":\"INVALID_ARGUMENT\""), "%s", l);
  cr_expect(strstr(l, "invalid JSON"), "%s", l);
  free(l);
  tc_send_line(fd, "{\"requestId\":\"4\",\"hello\":{\"clientName\":\"after\"}}");
  l = tc_recv_line(fd, 5000);
  cr_assert(l && strstr(l, "\"requestId\":\"4\"") && strstr(l, "helloReply"), "still usable: %s", l);
  free(l);
  close(fd);
}

/* The id of an undecodable line comes from a bounded hand scan of its start:
 * top-level keys only, and it works on truncated JSON too. */
Test(bad_input, json_request_id_recovered_by_bounded_scan) {
  int fd = tc_connect_tcp(D.port);
  tc_send_line(fd, "{\"hello\":{\"requestId\":\"9\",\"clientName\":5},\"requestId\":\"7\"}");
  char *l = tc_recv_line(fd, 5000);
  cr_assert(l);
  cr_expect(strstr(l, "\"requestId\":\"7\"") && strstr(l, "INVALID_ARGUMENT"), "top-level id: %s", l);
  free(l);
  tc_send_line(fd, "{\"requestId\":\"3\",\"hello\":");
  l = tc_recv_line(fd, 5000);
  cr_assert(l);
  cr_expect(strstr(l, "\"requestId\":\"3\"") && strstr(l, "invalid JSON"), "truncated line: %s", l);
  free(l);
  close(fd);
}

Test(bad_input, json_with_wrong_types) {
  int fd = tc_connect_unix(D.unix_path);
  tc_send_line(fd, "{\"requestId\":\"4\",\"hello\":{\"clientName\":5}}");
  char *l = tc_recv_line(fd, 5000);
  cr_assert(l);
  cr_expect(strstr(l, "\"requestId\":\"4\""), "request id recovered: %s", l);
  cr_expect(strstr(l, "\"code\":\"INVALID_ARGUMENT\""), "%s", l);
  cr_expect(strstr(l, "hello.clientName"), "names the field: %s", l);
  free(l);
  tc_send_line(fd, "{\"requestId\":\"5\",\"contactQuery\":{\"bodies\":[{\"bodyId\":\"x\"}]}}");
  l = tc_recv_line(fd, 5000);
  cr_expect(l && strstr(l, "contactQuery.bodies[0].bodyId"), "%s", l);
  free(l);
  tc_send_line(fd, "{\"requestId\":\"6\",\"stats\":{}}");
  l = tc_recv_line(fd, 5000);
  cr_expect(l && strstr(l, "statsReply"), "still usable: %s", l);
  free(l);
  close(fd);
}

Test(bad_input, unknown_geometry_id) {
  int fd = tc_connect_tcp(D.port);
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, sphere, 0, 0, 0);
  tc_body(&b2, &p2, &v2, 31, "0123456789abcdef", 0, 0, 0);
  Env *r = query(fd, 12, bodies, 2);
  expect_error(r, CONTACTD__V1__ERROR_CODE__NOT_FOUND, 12, "body 31");
  cr_expect(strstr(r->error->message, "not registered"));
  cr_expect_str_eq(r->error->field, "contactQuery.bodies[1].geometryId");
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_usable(fd, 13);
  close(fd);
}

/* protobuf `string` fields must be UTF-8, and a reply echoing invalid bytes
 * (an unknown id in HasGeometryReply.missing, in an error message) could not
 * be parsed by conforming clients. A request holding one is refused naming
 * the field, on both wires; error texts that quote client bytes (a mesh
 * file's token) or cut a name mid-character are sent as valid UTF-8. */
Test(bad_input, strings_must_be_utf8_and_errors_are) {
  int fd = tc_connect_tcp(D.port);
  char *ids[2] = {"fine", "bad\xFF\xFE"};
  Contactd__V1__HasGeometry h = CONTACTD__V1__HAS_GEOMETRY__INIT;
  h.n_geometry_ids = 2;
  h.geometry_ids = ids;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 21;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
  e.has_geometry = &h;
  Env *r = tc_call(fd, &e, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 21, "not valid UTF-8 (byte 3 of 5)");
  cr_expect_str_eq(r->error->field, "hasGeometry.geometryIds[1]");
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_usable(fd, 22);
  /* a NUL inside a string, which protobuf-c would silently cut at */
  ids[1] = "abcXdef";
  e.request_id = 29;
  size_t body, n = cd_frame_size(&e.base, &body);
  uint8_t *fb = malloc(n);
  cd_frame_write(&e.base, body, fb);
  *(uint8_t *)memchr(fb, 'X', n) = 0;
  cr_assert_eq(tc_send_raw(fd, fb, n), 0);
  free(fb);
  r = tc_recv(fd, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 29, "holds a NUL character (byte 3 of 7)");
  cr_expect_str_eq(r->error->field, "hasGeometry.geometryIds[1]");
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* a body name of 'x' and 30 two-byte characters: the error quotes the
   * name with a byte limit, which must not cut a character in two */
  char name[64] = "x";
  for (int i = 0; i < 30; i++) strcat(name, "\xC3\xA9");
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, sphere, 0, 0, 0);
  tc_body(&b2, &p2, &v2, 2, "0123456789abcdef", 0, 0, 0);
  b2.name = name;
  r = query(fd, 23, bodies, 2);
  expect_error(r, CONTACTD__V1__ERROR_CODE__NOT_FOUND, 23, "body 2");
  cr_expect_eq(cd_utf8_valid_prefix(r->error->message, strlen(r->error->message)), strlen(r->error->message),
               "valid UTF-8: %s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* an OBJ whose bad token is not UTF-8: the parse error quotes it */
  static const char obj[] = "v 0 0 0\nv 1 0 0\nv 0 1 \xFF\xFE\nf 1 2 3\n";
  Contactd__V1__MeshFile mf = CONTACTD__V1__MESH_FILE__INIT;
  mf.format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_OBJ;
  mf.data.data = (uint8_t *)obj;
  mf.data.len = sizeof obj - 1;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE;
  rg.mesh_file = &mf;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  e = (Env)CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 24;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  r = tc_call(fd, &e, 30000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 24, "OBJ line 3");
  cr_expect_eq(cd_utf8_valid_prefix(r->error->message, strlen(r->error->message)), strlen(r->error->message),
               "valid UTF-8: %s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(fd);
  /* JSON: the same refusal, naming the field */
  fd = tc_connect_tcp(D.port);
  tc_send_line(fd, "{\"requestId\":\"25\",\"hello\":{\"clientName\":\"bad\xC0\x80\"}}");
  char *l = tc_recv_line(fd, 5000);
  cr_assert(l);
  cr_expect(strstr(l, "\"requestId\":\"25\"") && strstr(l, "INVALID_ARGUMENT") && strstr(l, "hello.clientName"),
            "%s", l);
  cr_expect_eq(cd_utf8_valid_prefix(l, strlen(l)), strlen(l), "the reply line is valid UTF-8: %s", l);
  free(l);
  tc_send_line(fd, "{\"requestId\":\"28\",\"hello\":{\"clientName\":\"a\\u0000b\"}}");
  l = tc_recv_line(fd, 5000);
  cr_assert(l);
  cr_expect(strstr(l, "\"requestId\":\"28\"") && strstr(l, "INVALID_ARGUMENT") && strstr(l, "NUL character"), "%s",
            l);
  free(l);
  tc_send_line(fd, "{\"requestId\":\"26\",\"stats\":{}}");
  l = tc_recv_line(fd, 5000);
  cr_expect(l && strstr(l, "statsReply"), "still usable: %s", l);
  free(l);
  close(fd);
}

Test(bad_input, nan_or_infinite_pose) {
  int fd = tc_connect_tcp(D.port);
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, sphere, 0, 0, 0);
  tc_body(&b2, &p2, &v2, 2, plane, NAN, 0, 0);
  Env *r = query(fd, 14, bodies, 2);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 14, "body 2");
  cr_expect(strstr(r->error->message, "not finite"));
  cr_expect_str_eq(r->error->field, "contactQuery.bodies[1].pose.position");
  contactd__v1__envelope__free_unpacked(r, NULL);
  tc_body(&b2, &p2, &v2, 2, plane, 0, 0, INFINITY);
  r = query(fd, 15, bodies, 2);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 15, "not finite");
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_usable(fd, 16);
  close(fd);
}

Test(bad_input, quaternion_far_from_unit) {
  int fd = tc_connect_tcp(D.port);
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  Contactd__V1__Quat q = CONTACTD__V1__QUAT__INIT;
  tc_body(&b1, &p1, &v1, 1, sphere, 0, 0, 0.09);
  tc_body(&b2, &p2, &v2, 2, plane, 0, 0, 0);
  p1.orientation = &q;
  q.w = 1.01; /* |q| = 1.01: outside 1 +- 1e-3 */
  Env *r = query(fd, 17, bodies, 2);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 17, "body 1");
  cr_expect(strstr(r->error->message, "quaternion norm 1.01"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  q.w = 1.0005; /* within tolerance: normalised and accepted */
  r = query(fd, 18, bodies, 2);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_expect_gt(r->contact_reply->results[0]->wrench_a->force->z, 0.0);
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(fd);
}

Test(bad_input, inverted_tet_mesh) {
  int fd = tc_connect_tcp(D.port);
  /* one tet with negative orientation */
  double v[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  int32_t t[4] = {0, 2, 1, 3};
  Contactd__V1__TetMesh m = CONTACTD__V1__TET_MESH__INIT;
  m.n_vertices = 12;
  m.vertices = v;
  m.n_tets = 4;
  m.tets = t;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TET_MESH;
  rg.tet_mesh = &m;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = 1e6;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 19;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  Env *r = tc_call(fd, &e, 10000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT, 19, "tet 0");
  cr_expect(strstr(r->error->message, "registerGeometry.tetMesh"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* the failed build left nothing behind */
  r = tc_stats(fd, 20, 5000);
  cr_assert(r);
  cr_expect_eq(r->stats_reply->cache_entries, 2);
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(fd);
}

static void small_cache(void) { start_with_limits("cache.json", "\"cache_bytes\": 8388608"); }

/* A geometry larger than the whole cache (cache_bytes 8 MiB; a sphere at
 * hint 0.0066 takes 33 MB) is refused as soon as its mesh's counts show
 * it, naming cache_bytes, instead of being built and then dropped; the
 * cached geometry stays and the connection goes on. */
Test(bad_input, geometry_larger_than_the_cache_is_refused, .init = small_cache) {
  int fd = tc_connect_tcp(D.port);
  Contactd__V1__Sphere sp = CONTACTD__V1__SPHERE__INIT;
  sp.radius = 0.1;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rg.sphere = &sp;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = 1e6;
  rg.resolution_hint = 0.0066;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 40;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  Env *r = tc_call(fd, &e, 60000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, 40, "cache_bytes");
  cr_expect(strstr(r->error->message, "51200 tets"), "%s", r->error->message);
  cr_expect(strstr(r->error->message, "over the limit of 8.39 MB"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = tc_stats(fd, 41, 5000);
  cr_assert(r);
  cr_expect_eq(r->stats_reply->cache_entries, 2, "the bystander's geometry is kept, nothing else");
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_usable(fd, 42);
  close(fd);
}

static void small_limits(void) {
  start_with_limits("limits.json", "\"max_bodies_per_query\": 4, \"max_streams_per_conn\": 0");
}

static void tiny_arena(void) { start_with_limits("arena.json", "\"worker_arena_bytes\": 65536"); }

/* A pair whose scratch passes worker_arena_bytes fails naming the limit
 * and its size; the connection goes on (and the bystander's coarse pair,
 * which fits, is answered). */
Test(bad_input, pair_over_worker_arena_bytes_names_the_limit, .init = tiny_arena) {
  int fd = tc_connect_tcp(D.port);
  char *fine = tc_register_sphere(fd, 30, 0.1, 1e6, 0.005);
  cr_assert(fine);
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, fine, 0, 0, 0.09);
  tc_body(&b2, &p2, &v2, 2, plane, 0, 0, 0);
  Env *r = query(fd, 31, bodies, 2);
  expect_error(r, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, 31, "worker_arena_bytes, 65536 bytes");
  cr_expect(strstr(r->error->message, "pair 0 (bodies 1 and 2)"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_usable(fd, 32);
  free(fine);
  close(fd);
}

Test(bad_input, too_many_bodies, .init = small_limits) {
  int fd = tc_connect_tcp(D.port);
  Contactd__V1__Body b[5], *bodies[5];
  Contactd__V1__Pose p[5];
  Contactd__V1__Vec3 v[5];
  for (int i = 0; i < 5; i++) {
    tc_body(&b[i], &p[i], &v[i], (uint32_t)i + 1, sphere, i * 1.0, 0, 0);
    bodies[i] = &b[i];
  }
  Env *r = query(fd, 21, bodies, 5);
  expect_error(r, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, 21, "5 bodies exceed the limit of 4");
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = query(fd, 22, bodies, 4);
  cr_expect(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "four are fine");
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(fd);
}

/* An OpenStream of the bystander's sphere resting on its plane, all pairs. */
typedef struct ball_stream {
  Contactd__V1__Body b[2], *bodies[2];
  Contactd__V1__Pose pose[2];
  Contactd__V1__Vec3 pos[2];
  Contactd__V1__AllPairs ap;
  Contactd__V1__OpenStream os;
} ball_stream;

static void ball_stream_init(ball_stream *s) {
  tc_body(&s->b[0], &s->pose[0], &s->pos[0], 1, sphere, 0, 0, 0.09);
  tc_body(&s->b[1], &s->pose[1], &s->pos[1], 2, plane, 0, 0, 0);
  s->bodies[0] = &s->b[0];
  s->bodies[1] = &s->b[1];
  s->ap = (Contactd__V1__AllPairs)CONTACTD__V1__ALL_PAIRS__INIT;
  s->os = (Contactd__V1__OpenStream)CONTACTD__V1__OPEN_STREAM__INIT;
  s->os.n_bodies = 2;
  s->os.bodies = s->bodies;
  s->os.all_pairs = &s->ap;
}

/* max_streams_per_conn 0 turns streams off: an OpenStream says so (not
 * "already has 0 open streams") and the connection goes on. */
Test(bad_input, streams_off, .init = small_limits) {
  int fd = tc_connect_tcp(D.port);
  ball_stream bs;
  ball_stream_init(&bs);
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 31;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM;
  e.open_stream = &bs.os;
  Env *r = tc_call(fd, &e, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, 31, "streams are off on this server");
  cr_expect(strstr(r->error->message, "max_streams_per_conn"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_usable(fd, 32);
  close(fd);
}

Test(bad_input, update_on_a_closed_stream) {
  int fd = tc_connect_tcp(D.port);
  ball_stream bs;
  ball_stream_init(&bs);
  uint64_t sid = tc_open_stream(fd, &bs.os, 23, 5000);
  cr_assert_neq(sid, 0);
  Contactd__V1__CloseStream cs = CONTACTD__V1__CLOSE_STREAM__INIT;
  cs.stream_id = sid;
  Env ce = CONTACTD__V1__ENVELOPE__INIT;
  ce.request_id = 24;
  ce.msg_case = CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM;
  ce.close_stream = &cs;
  Env *r = tc_call(fd, &ce, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM_REPLY);
  contactd__v1__envelope__free_unpacked(r, NULL);
  Contactd__V1__StreamUpdate up = CONTACTD__V1__STREAM_UPDATE__INIT;
  up.stream_id = sid;
  up.sequence = 1;
  Env ue = CONTACTD__V1__ENVELOPE__INIT;
  ue.request_id = 25;
  ue.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
  ue.stream_update = &up;
  r = tc_call(fd, &ue, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__FAILED_PRECONDITION, 25, "is closed");
  cr_expect_str_eq(r->error->field, "streamUpdate.streamId");
  contactd__v1__envelope__free_unpacked(r, NULL);
  up.stream_id = 999;
  ue.request_id = 26;
  r = tc_call(fd, &ue, 5000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__NOT_FOUND, 26, "never opened");
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_usable(fd, 27);
  close(fd);
}

static void tiny_output(void) {
  start_with_limits("output.json", "\"max_output_bytes\": 65536, \"max_inflight_per_conn\": 4096");
}

static void tinier_output(void) { start_with_limits("output2.json", "\"max_output_bytes\": 512"); }

/* One reply larger than max_output_bytes, to a client that reads, is not a
 * slow reader: nothing else was queued before it. */
Test(bad_input, single_reply_over_max_output_bytes_is_delivered, .init = tinier_output) {
  int fd = tc_connect_tcp(D.port);
  tc_pair_query pq;
  tc_pair_query_init(&pq, 0, sphere, 0.05, plane, 0, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
  Env e = pq.env;
  for (uint64_t k = 0; k < 3; k++) {
    e.request_id = 40 + k;
    tc_send(fd, &e);
    Env *r = tc_recv(fd, 10000);
    cr_assert(r, "reply %llu delivered", (unsigned long long)k);
    cr_expect_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
    cr_expect_gt(contactd__v1__envelope__get_packed_size(r), 512, "the reply alone exceeds the limit");
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  cr_expect_eq(tc_log_count(&D, "slow reader disconnected"), 0);
  expect_usable(fd, 50);
  close(fd);
}

/* Replies the socket takes at once are not queued: a Hello and a
 * HasGeometry in one write are answered in two flushes of one loop turn, and
 * the first reply's write callback has not run when the second is checked. */
Test(bad_input, replies_the_socket_took_do_not_count_as_queued, .init = tinier_output) {
  int fd = tc_connect_tcp(D.port);
  char ids[20][65], *idp[20];
  for (int k = 0; k < 20; k++) {
    snprintf(ids[k], sizeof ids[k], "%064x", k);
    idp[k] = ids[k];
  }
  Contactd__V1__HasGeometry hg = CONTACTD__V1__HAS_GEOMETRY__INIT;
  hg.n_geometry_ids = 20;
  hg.geometry_ids = idp;
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  Env e[2] = {CONTACTD__V1__ENVELOPE__INIT, CONTACTD__V1__ENVELOPE__INIT};
  e[0].request_id = 60;
  e[0].msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  e[0].hello = &h;
  e[1].request_id = 61;
  e[1].msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
  e[1].has_geometry = &hg;
  cr_assert_eq(tc_send_burst(fd, e, 2), 0);
  for (uint64_t id = 60; id <= 61; id++) {
    Env *r = tc_recv(fd, 10000);
    cr_assert(r, "reply %llu delivered", (unsigned long long)id);
    cr_expect_eq(r->request_id, id);
    if (id == 61) {
      cr_expect_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY_REPLY);
      cr_expect_gt(contactd__v1__envelope__get_packed_size(r), 512, "this reply alone exceeds the limit");
    }
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  cr_expect_eq(tc_log_count(&D, "slow reader disconnected"), 0);
  expect_usable(fd, 62);
  close(fd);
}

Test(bad_input, client_that_stops_reading_is_disconnected, .init = tiny_output) {
  int fd = tc_connect_tcp(D.port);
  int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  /* Large replies (full surfaces), never read. */
  tc_pair_query pq;
  tc_pair_query_init(&pq, 0, sphere, 0.05, plane, 0, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
  Env e = pq.env;
  for (int i = 0; i < 3000; i++) {
    e.request_id = (uint64_t)i;
    if (tc_send(fd, &e)) break; /* the server hung up */
    if (i % 100 == 99 && tc_log_count(&D, "slow reader disconnected")) break;
  }
  /* (two lines, the warning then the close: wait for both) */
  for (int i = 0; i < 500 && !tc_log_count(&D, "reason=\"client is not reading"); i++) usleep(10000);
  cr_expect_eq(tc_log_count(&D, "slow reader disconnected"), 1, "logged with its reason");
  cr_expect(tc_log_count(&D, "reason=\"client is not reading"), "the close reason is logged");
  close(fd);
}


/* max_reply_bytes: building a reply (the converted results, then the
 * encoding) is bounded; a reply over it is RESOURCE_EXHAUSTED for that
 * request only. Sizes measured with these geometries: one fine sphere on the
 * plane with the full triangle surface is 848 KB encoded (9464 faces), about
 * 0.9 MiB of converted structs; the coarse sphere's polygon surface is 9.5 KB
 * encoded, 15 KB as JSON text (far more while cJSON builds it); a
 * wrench-only reply is 222 bytes. */
/* 1.5 MiB: one fine surface fits, two do not; one pair per job, so the two
 * workers convert at once and share the budget. */
static void reply_limit_proto(void) {
  start_with_limits("reply.json", "\"max_reply_bytes\": 1572864, \"pairs_per_job\": 1");
}
/* 32 KiB: the coarse polygon surface converts (about 10 KB) but its JSON
 * encoding does not fit. */
static void reply_limit_json(void) {
  start_with_limits("reply-json.json", "\"max_reply_bytes\": 32768");
}

/* Three fine spheres side by side on the plane (bodies 1-3, the plane 4),
 * the pairs sphere-plane, full triangle surfaces (about 0.9 MiB of
 * converted structs each). */
typedef struct fine_scene {
  Contactd__V1__Body b[4], *bodies[4];
  Contactd__V1__Pose p[4];
  Contactd__V1__Vec3 v[4];
  Contactd__V1__Pair pr[3], *pairs[3];
  Contactd__V1__QueryOptions o;
} fine_scene;

static void fine_scene_init(fine_scene *f, const char *fine) {
  for (int i = 0; i < 3; i++) {
    tc_body(&f->b[i], &f->p[i], &f->v[i], (uint32_t)i + 1, fine, i * 0.5, 0, 0.05);
    f->bodies[i] = &f->b[i];
    contactd__v1__pair__init(&f->pr[i]);
    f->pr[i].a = (uint32_t)i + 1;
    f->pr[i].b = 4;
    f->pairs[i] = &f->pr[i];
  }
  tc_body(&f->b[3], &f->p[3], &f->v[3], 4, plane, 0, 0, 0);
  f->bodies[3] = &f->b[3];
  contactd__v1__query_options__init(&f->o);
  f->o.detail = CONTACTD__V1__DETAIL__DETAIL_SURFACE;
  f->o.representation = CONTACTD__V1__REPRESENTATION__REPRESENTATION_TRIANGLE;
}

/* The first npairs of the scene's surfaces, asked on fd as request id. */
static Env *fine_surfaces(int fd, const char *fine, uint64_t id, size_t npairs) {
  fine_scene f;
  fine_scene_init(&f, fine);
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = 4;
  q.bodies = f.bodies;
  q.n_pairs = npairs;
  q.pairs = f.pairs;
  q.options = &f.o;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  return tc_call(fd, &e, 60000);
}

Test(bad_input, reply_over_max_reply_bytes_fails_that_request_only, .init = reply_limit_proto) {
  char *fine = tc_register_sphere(bystander, 3, 0.1, 1e6, 0.01);
  cr_assert(fine);
  int fd = tc_connect_tcp(D.port);
  Env *r = fine_surfaces(fd, fine, 60, 3);
  expect_error(r, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, 60, "over max_reply_bytes 1.5 MiB");
  cr_expect(strstr(r->error->message, "ask for fewer pairs"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* The same connection goes on: one of those surfaces fits ... */
  r = fine_surfaces(fd, fine, 61, 1);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "one surface fits the limit");
  cr_expect_eq(r->request_id, 61);
  cr_expect_gt(r->contact_reply->results[0]->surface->n_areas, 1000);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* ... and so does a small query. */
  tc_pair_query pq;
  tc_pair_query_init(&pq, 62, sphere, 0.09, plane, 0, 0);
  r = tc_call(fd, &pq.env, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "a small query still works");
  cr_expect_gt(r->contact_reply->results[0]->wrench_a->force->z, 0.0);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* The limit is reported in Hello. */
  r = hello(fd, 63);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  cr_expect_eq(r->hello_reply->limits->max_reply_bytes, 1572864);
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(fd);
  free(fine);
}

/* An update whose computation fails is answered, in its place, by an Error
 * that carries the OpenStream's request id and names the stream and the
 * update; the stream goes on. The three fine surfaces are over the 1.5 MiB
 * max_reply_bytes; with two spheres lifted off the plane the next update
 * fits. */
Test(bad_input, stream_computation_error_names_stream_and_update, .init = reply_limit_proto) {
  char *fine = tc_register_sphere(bystander, 3, 0.1, 1e6, 0.01);
  cr_assert(fine);
  int fd = tc_connect_tcp(D.port);
  fine_scene f;
  fine_scene_init(&f, fine);
  Contactd__V1__OpenStream os = CONTACTD__V1__OPEN_STREAM__INIT;
  os.n_bodies = 4;
  os.bodies = f.bodies;
  os.n_pairs = 3;
  os.pairs = f.pairs;
  os.options = &f.o;
  uint64_t sid = tc_open_stream(fd, &os, 100, 30000);
  cr_assert_neq(sid, 0);
  /* update 7 keeps all three on the plane; update 8 lifts spheres 2 and 3 */
  Contactd__V1__Vec3 up[2];
  Contactd__V1__Pose upose[2];
  Contactd__V1__BodyState bs[2], *bsp[2] = {&bs[0], &bs[1]};
  for (int k = 0; k < 2; k++) {
    contactd__v1__vec3__init(&up[k]);
    up[k].x = (k + 1) * 0.5;
    up[k].z = 1.0;
    contactd__v1__pose__init(&upose[k]);
    upose[k].position = &up[k];
    contactd__v1__body_state__init(&bs[k]);
    bs[k].body_id = (uint32_t)k + 2;
    bs[k].pose = &upose[k];
  }
  for (uint64_t seq = 7; seq <= 8; seq++) {
    Contactd__V1__StreamUpdate u = CONTACTD__V1__STREAM_UPDATE__INIT;
    u.stream_id = sid;
    u.sequence = seq;
    u.n_bodies = seq == 8 ? 2 : 0;
    u.bodies = seq == 8 ? bsp : NULL;
    Env ue = CONTACTD__V1__ENVELOPE__INIT;
    ue.request_id = 100 + seq;
    ue.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
    ue.stream_update = &u;
    cr_assert_eq(tc_send(fd, &ue), 0);
  }
  Env *r = tc_recv(fd, 60000);
  expect_error(r, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, 100, "over max_reply_bytes 1.5 MiB");
  cr_expect_eq(r->error->stream_id, sid);
  cr_expect_eq(r->error->sequence, 7);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = tc_recv(fd, 60000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT, "the stream goes on");
  cr_expect_eq(r->request_id, 100);
  cr_expect_eq(r->stream_result->sequence, 8);
  cr_assert_eq(r->stream_result->n_results, 3);
  cr_expect_gt(r->stream_result->results[0]->surface->n_areas, 1000);
  cr_expect_eq(r->stream_result->results[1]->surface, NULL);
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(fd);
  free(fine);
}

Test(bad_input, json_reply_over_max_reply_bytes_fails_that_request_only, .init = reply_limit_json) {
  int fd = tc_connect_tcp(D.port);
  char line[1024];
  const char *fmt = "{\"requestId\":\"%d\",\"contactQuery\":{\"bodies\":[{\"bodyId\":1,\"geometryId\":\"%s\","
                    "\"pose\":{\"position\":{\"z\":%g}}},{\"bodyId\":2,\"geometryId\":\"%s\"}],"
                    "\"pairs\":[{\"a\":1,\"b\":2}],\"options\":{\"detail\":\"%s\"}}}";
  snprintf(line, sizeof line, fmt, 70, sphere, 0.05, plane, "DETAIL_SURFACE");
  tc_send_line(fd, line);
  char *l = tc_recv_line(fd, 30000);
  cr_assert(l, "an answer arrives");
  cr_expect(strstr(l, "\"requestId\":\"70\""), "%s", l);
  cr_expect(strstr(l, "\"code\":\"RESOURCE_EXHAUSTED\""), "%s", l);
  cr_expect(strstr(l, "over max_reply_bytes 32.0 KiB as JSON"), "%s", l);
  free(l);
  snprintf(line, sizeof line, fmt, 71, sphere, 0.09, plane, "DETAIL_WRENCH");
  tc_send_line(fd, line);
  l = tc_recv_line(fd, 30000);
  cr_assert(l, "the connection goes on");
  cr_expect(strstr(l, "\"requestId\":\"71\"") && strstr(l, "\"contactReply\""), "%s", l);
  free(l);
  close(fd);
}

/* reply_memory_bytes: the converted results of all replies being built
 * stay under it together. 1.5 MiB with the default max_reply_bytes: three
 * fine surfaces (about 2.7 MiB) do not fit, one does; and since a reply
 * gives its bytes back when it is sent, one surface after another keeps
 * fitting (a leak would fail the second). */
static void reply_memory_limit(void) {
  start_with_limits("reply-mem.json", "\"reply_memory_bytes\": 1572864, \"pairs_per_job\": 1");
}

Test(bad_input, replies_over_reply_memory_bytes_fail_and_give_memory_back, .init = reply_memory_limit) {
  char *fine = tc_register_sphere(bystander, 3, 0.1, 1e6, 0.01);
  cr_assert(fine);
  int fd = tc_connect_tcp(D.port);
  Env *r = fine_surfaces(fd, fine, 80, 3);
  expect_error(r, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, 80, "of reply_memory_bytes 1.5 MiB");
  cr_expect(strstr(r->error->message, "server busy"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  for (uint64_t id = 81; id < 85; id++) {
    r = fine_surfaces(fd, fine, id, 1);
    cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "request %llu: one surface fits",
              (unsigned long long)id);
    cr_expect_gt(r->contact_reply->results[0]->surface->n_areas, 1000);
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  /* another connection is served too, and Hello reports the limit */
  int fd2 = tc_connect_tcp(D.port);
  r = fine_surfaces(fd2, fine, 90, 1);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = hello(fd2, 91);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  cr_expect_eq(r->hello_reply->limits->reply_memory_bytes, 1572864);
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(fd2);
  close(fd);
  free(fine);
}
