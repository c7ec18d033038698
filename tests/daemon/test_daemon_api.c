/* test_daemon_api.c — the protocol end to end against the real contactd:
 * hello, register, has, query (explicit and all pairs), stats, release, over
 * TCP and the Unix socket, in protobuf and in JSON; two clients share one
 * cached geometry (one build, visible in stats). */
#include <criterion/criterion.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_budget.h"
#include "cd_json.h"
#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

static tc_daemon D;
static void up(void) { tc_start(&D, NULL); }
static void down(void) { cr_expect_eq(tc_stop(&D), 0, "contactd exits 0 on SIGTERM"); }

static Env *stats(int fd, uint64_t id) {
  Env *r = tc_stats(fd, id, 10000);
  cr_assert(r, "no stats reply to request %llu", (unsigned long long)id);
  return r;
}

/* Sphere (body 1) at height z over a rigid half space (body 2). */
static Env *query_sphere_plane(int fd, uint64_t id, const char *sphere, const char *plane, double z, int all) {
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, sphere, 0, 0, z);
  tc_body(&b2, &p2, &v2, 2, plane, 0, 0, 0);
  Contactd__V1__Pair pr = CONTACTD__V1__PAIR__INIT, *prs[1] = {&pr};
  pr.a = 1;
  pr.b = 2;
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = 2;
  q.bodies = bodies;
  if (all) q.all_pairs = &ap;
  else {
    q.n_pairs = 1;
    q.pairs = prs;
  }
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  Env *r = tc_call(fd, &e, 30000);
  cr_assert(r, "a reply arrives");
  cr_assert_eq(r->request_id, id);
  return r;
}

Test(daemon_api, hello_reports_version_limits_and_capabilities, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  cr_assert_geq(fd, 0);
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  h.client_name = "test";
  h.protocol_version = 1;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 42;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  e.hello = &h;
  Env *r = tc_call(fd, &e, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  cr_expect_eq(r->request_id, 42);
  cr_expect_eq(r->hello_reply->protocol_version, 1);
  cr_expect_str_eq(r->hello_reply->server_version, "0.1.0");
  cr_assert(r->hello_reply->limits);
  cr_expect_eq(r->hello_reply->limits->max_frame_bytes, 256u << 20);
  cr_expect_eq(r->hello_reply->limits->max_in_flight, 256);
  int json = 0, streams = 0, energy = 0, jacobian = 0;
  for (size_t i = 0; i < r->hello_reply->n_capabilities; i++) {
    json |= strcmp(r->hello_reply->capabilities[i], "json") == 0;
    streams |= strcmp(r->hello_reply->capabilities[i], "latest_only") == 0;
    energy |= strcmp(r->hello_reply->capabilities[i], "energy") == 0;
    jacobian |= strcmp(r->hello_reply->capabilities[i], "jacobian") == 0;
  }
  cr_expect(json && streams);
  cr_expect(energy && jacobian, "QueryOptions.want_energy and want_jacobian are announced");
  contactd__v1__envelope__free_unpacked(r, NULL);
  cr_expect_eq(tc_log_count(&D, "client=\"test\""), 1, "the hello is logged with the client name");
  close(fd);
}

/* HelloReply.config_limits names every limit as --help (and the config
 * file) does, in the same order; the
 * capabilities name every mesh format accepted; a newer protocol version
 * is FAILED_PRECONDITION. */
Test(daemon_api, hello_limit_names_are_the_help_names, .init = up, .fini = down) {
  char cmd[600], *out = calloc(1, 65536);
  snprintf(cmd, sizeof cmd, "%s --help", CONTACTD_BIN);
  FILE *p = popen(cmd, "r");
  cr_assert(p && out);
  size_t n = fread(out, 1, 65535, p);
  out[n] = 0;
  cr_assert_eq(pclose(p), 0);
  const char *t = strstr(out, "limits (config file key");
  cr_assert(t, "%s", out);
  t = strchr(t, '\n') + 1;
  char names[64][48];
  unsigned long long values[64];
  size_t nh = 0;
  while (nh < 64 && sscanf(t, "  %47s %llu", names[nh], &values[nh]) == 2) {
    nh++;
    t = strchr(t, '\n') + 1;
  }
  cr_assert_gt(nh, 30, "--help lists the limits table");
  int fd = tc_connect_tcp(D.port);
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  h.protocol_version = 1;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 7;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  e.hello = &h;
  Env *r = tc_call(fd, &e, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  const Contactd__V1__HelloReply *hr = r->hello_reply;
  cr_assert_eq(hr->n_config_limits, nh, "every limit of --help, and no other");
  for (size_t i = 0; i < nh; i++) {
    cr_expect_str_eq(hr->config_limits[i]->name, names[i]);
    if (strcmp(names[i], "max_inflight_per_conn") == 0) /* (the harness may set others, e.g. io_threads) */
      cr_expect_eq(hr->config_limits[i]->value, values[i], "%s", names[i]);
    cr_expect_neq(hr->config_limits[i]->unit[0], 0, "%s has a unit", names[i]);
  }
  /* the deprecated names are still filled */
  cr_expect_eq(hr->limits->max_in_flight, 256);
  cr_expect_eq(hr->limits->max_bodies, 10000);
  const char *formats[] = {"mesh_file:obj", "mesh_file:stl", "mesh_file:vtk", "mesh_file:msh"};
  for (size_t f = 0; f < 4; f++) {
    int seen = 0;
    for (size_t i = 0; i < hr->n_capabilities; i++) seen |= strcmp(hr->capabilities[i], formats[f]) == 0;
    cr_expect(seen, "%s is announced", formats[f]);
  }
  contactd__v1__envelope__free_unpacked(r, NULL);
  h.protocol_version = 2;
  r = tc_call(fd, &e, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__FAILED_PRECONDITION);
  cr_expect_str_eq(r->error->field, "hello.protocolVersion");
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(out);
  close(fd);
}

/* A nonzero request id names one request in flight on a connection: a
 * second request with the same id before the first is answered is refused
 * (INVALID_ARGUMENT naming it); the first is answered as usual, and the id
 * may be used again once it is. Id 0 is never checked. */
Test(daemon_api, duplicate_request_id_in_flight_is_refused, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  Contactd__V1__RegisterGeometry rg;
  Contactd__V1__Sphere sp;
  tc_sphere_spec(&rg, &sp, 0.1, 1e6, 0.004); /* a build of many ms: still in flight when the second is read */
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 31;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  Env two[2] = {e, e};
  cr_assert_eq(tc_send_burst(fd, two, 2), 0);
  Env *a = tc_recv(fd, 60000);
  while (a && a->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS) {
    contactd__v1__envelope__free_unpacked(a, NULL);
    a = tc_recv(fd, 60000);
  }
  cr_assert(a);
  cr_expect_eq(a->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "the first is answered");
  cr_expect_eq(a->request_id, 31);
  Env *b = tc_recv(fd, 60000);
  cr_assert(b && b->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(b->request_id, 31);
  cr_expect_eq(b->error->code, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT);
  cr_expect_str_eq(b->error->field, "requestId");
  cr_expect(strstr(b->error->message, "request_id 31 is already in flight"), "%s", b->error->message);
  contactd__v1__envelope__free_unpacked(a, NULL);
  contactd__v1__envelope__free_unpacked(b, NULL);
  Env *s = stats(fd, 31);
  cr_expect(s && s->msg_case == CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY, "answered: the id is free again");
  if (s) contactd__v1__envelope__free_unpacked(s, NULL);
  /* id 0, twice in one read: both answered */
  Contactd__V1__Stats st = CONTACTD__V1__STATS__INIT;
  Env z = CONTACTD__V1__ENVELOPE__INIT;
  z.msg_case = CONTACTD__V1__ENVELOPE__MSG_STATS;
  z.stats = &st;
  Env zz[2] = {z, z};
  cr_assert_eq(tc_send_burst(fd, zz, 2), 0);
  for (int i = 0; i < 2; i++) {
    Env *y = tc_recv(fd, 10000);
    cr_assert(y && y->msg_case == CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY);
    contactd__v1__envelope__free_unpacked(y, NULL);
  }
  close(fd);
}

Test(daemon_api, register_has_query_stats_release_over_tcp, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  char *sphere = tc_register_sphere(fd, 1, 0.1, 1e6, 0.05);
  char *plane = tc_register_halfspace(fd, 2, 0, 0);
  cr_assert(sphere && plane);
  cr_expect_eq(strlen(sphere), 64, "ids are hex SHA-256");
  cr_expect_str_neq(sphere, plane);
  /* same content again: same id, nothing built */
  char *again = tc_register_sphere(fd, 3, 0.1, 1e6, 0.05);
  cr_expect_str_eq(again, sphere);
  /* a different modulus is a different geometry */
  char *stiffer = tc_register_sphere(fd, 4, 0.1, 2e6, 0.05);
  cr_expect_str_neq(stiffer, sphere);

  /* has: which are missing */
  Contactd__V1__HasGeometry h = CONTACTD__V1__HAS_GEOMETRY__INIT;
  char *ids[3] = {sphere, "0000", plane};
  h.n_geometry_ids = 3;
  h.geometry_ids = ids;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 5;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
  e.has_geometry = &h;
  Env *r = tc_call(fd, &e, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY_REPLY);
  cr_assert_eq(r->has_geometry_reply->n_missing, 1);
  cr_expect_str_eq(r->has_geometry_reply->missing[0], "0000");
  contactd__v1__envelope__free_unpacked(r, NULL);

  /* query: the sphere sinks 1 cm into the plane */
  r = query_sphere_plane(fd, 6, sphere, plane, 0.09, 0);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_assert_eq(r->contact_reply->n_results, 1);
  Contactd__V1__PairResult *pr = r->contact_reply->results[0];
  cr_expect_eq(pr->a, 1);
  cr_expect_eq(pr->b, 2);
  cr_expect_eq(pr->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
  double fz = pr->wrench_a->force->z;
  cr_expect_gt(fz, 50.0, "the plane pushes the sphere up (normal into A), got %g", fz);
  cr_expect_lt(fz, 600.0);
  cr_expect_float_eq(pr->wrench_b->force->z, -fz, 1e-9 * fz, "third law");
  cr_expect_gt(pr->area, 0.0);
  cr_expect_float_eq(pr->combined_modulus, 1e6, 1e-3);
  contactd__v1__envelope__free_unpacked(r, NULL);

  /* all pairs: the broad phase finds the same pair, same numbers */
  r = query_sphere_plane(fd, 7, sphere, plane, 0.09, 1);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_assert_eq(r->contact_reply->n_results, 1);
  cr_expect_float_eq(r->contact_reply->results[0]->wrench_a->force->z, fz, 1e-12 * fz);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* far above: no candidate pair */
  r = query_sphere_plane(fd, 8, sphere, plane, 5.0, 1);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_expect_eq(r->contact_reply->n_results, 0);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* explicit pair far above: computed, no contact */
  r = query_sphere_plane(fd, 9, sphere, plane, 5.0, 0);
  cr_assert_eq(r->contact_reply->n_results, 1);
  cr_expect_eq(r->contact_reply->results[0]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_NONE);
  contactd__v1__envelope__free_unpacked(r, NULL);

  r = stats(fd, 10);
  cr_expect_eq(r->stats_reply->connections, 1);
  cr_expect_eq(r->stats_reply->cache_builds, 3);
  cr_expect_eq(r->stats_reply->cache_hits, 1);
  cr_expect_eq(r->stats_reply->cache_entries, 3);
  cr_expect_gt(r->stats_reply->cache_bytes, 0);
  cr_expect_eq(r->stats_reply->pairs, 3);
  cr_expect_eq(r->stats_reply->n_worker_utilisation, 2);
  cr_expect_eq(r->stats_reply->n_latency, 16);
  uint64_t counted = 0;
  for (size_t i = 0; i < r->stats_reply->n_latency; i++) counted += r->stats_reply->latency[i]->count;
  cr_expect_eq(counted, 9, "nine requests answered before this one");
  cr_expect(isinf(r->stats_reply->latency[15]->upper_bound_us));
  contactd__v1__envelope__free_unpacked(r, NULL);

  /* release: held ids are released once, unknown ones reported */
  Contactd__V1__ReleaseGeometry rel = CONTACTD__V1__RELEASE_GEOMETRY__INIT;
  char *rids[2] = {sphere, "ffff"};
  rel.n_geometry_ids = 2;
  rel.geometry_ids = rids;
  Env re = CONTACTD__V1__ENVELOPE__INIT;
  re.request_id = 11;
  re.msg_case = CONTACTD__V1__ENVELOPE__MSG_RELEASE_GEOMETRY;
  re.release_geometry = &rel;
  r = tc_call(fd, &re, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_RELEASE_REPLY);
  cr_assert_eq(r->release_reply->n_released, 1);
  cr_expect_str_eq(r->release_reply->released[0], sphere);
  cr_assert_eq(r->release_reply->n_unknown, 1);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = tc_call(fd, &re, 5000);
  cr_expect_eq(r->release_reply->n_released, 0, "a second release finds nothing to drop");
  cr_expect_eq(r->release_reply->n_unknown, 2);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(sphere);
  free(plane);
  free(again);
  free(stiffer);
  close(fd);
}

Test(daemon_api, unix_socket_and_tcp_give_the_same_numbers, .init = up, .fini = down) {
  int t = tc_connect_tcp(D.port), u = tc_connect_unix(D.unix_path);
  cr_assert(t >= 0 && u >= 0);
  char *s1 = tc_register_sphere(u, 1, 0.1, 1e6, 0.05), *p1 = tc_register_halfspace(u, 2, 0, 0);
  Env *a = query_sphere_plane(u, 3, s1, p1, 0.095, 0);
  Env *b = query_sphere_plane(t, 4, s1, p1, 0.095, 0);
  cr_assert(a->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_assert(b->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_expect_eq(a->contact_reply->results[0]->wrench_a->force->z, b->contact_reply->results[0]->wrench_a->force->z);
  cr_expect_gt(a->contact_reply->results[0]->wrench_a->force->z, 0.0);
  contactd__v1__envelope__free_unpacked(a, NULL);
  contactd__v1__envelope__free_unpacked(b, NULL);
  free(s1);
  free(p1);
  close(t);
  close(u);
}

static double json_number_after(const char *s, const char *key) {
  const char *p = strstr(s, key);
  cr_assert(p, "%s in %s", key, s);
  return strtod(p + strlen(key), NULL);
}

Test(daemon_api, json_connection_mirrors_protobuf, .init = up, .fini = down) {
  int j = tc_connect_unix(D.unix_path), t = tc_connect_tcp(D.port);
  tc_send_line(j, "{\"requestId\":\"1\",\"hello\":{\"clientName\":\"json-client\"}}");
  char *l = tc_recv_line(j, 5000);
  cr_assert(l);
  cr_expect(strstr(l, "\"requestId\":\"1\"") && strstr(l, "\"helloReply\""), "%s", l);
  cr_expect(strstr(l, "\"maxFrameBytes\":\"268435456\""), "64-bit integers are strings: %s", l);
  free(l);
  tc_send_line(j, "{\"requestId\":\"2\",\"registerGeometry\":{\"sphere\":{\"radius\":0.1},"
                  "\"compliance\":\"COMPLIANCE_COMPLIANT\",\"modulus\":1e6,\"resolutionHint\":0.05}}");
  l = tc_recv_line(j, 30000);
  cr_assert(l && strstr(l, "registerReply"), "%s", l);
  char sid[65];
  const char *p = strstr(l, "\"geometryId\":\"");
  cr_assert(p);
  memcpy(sid, p + 14, 64);
  sid[64] = 0;
  free(l);
  /* the protobuf client registering the same content gets the same id */
  char *same = tc_register_sphere(t, 9, 0.1, 1e6, 0.05);
  cr_expect_str_eq(same, sid);
  char *plane = tc_register_halfspace(t, 10, 0, 0);
  char line[1024];
  snprintf(line, sizeof line,
           "{\"requestId\":\"3\",\"contactQuery\":{\"bodies\":[{\"bodyId\":1,\"geometryId\":\"%s\","
           "\"pose\":{\"position\":{\"z\":0.09}}},{\"bodyId\":2,\"geometryId\":\"%s\"}],"
           "\"pairs\":[{\"a\":1,\"b\":2}]}}",
           sid, plane);
  tc_send_line(j, line);
  l = tc_recv_line(j, 30000);
  cr_assert(l && strstr(l, "\"contactReply\""), "%s", l);
  cr_expect(strstr(l, "\"status\":\"CONTACT_STATUS_SURFACE\""), "enums by name: %s", l);
  /* the JSON force equals the protobuf force */
  const char *wa = strstr(l, "\"wrenchA\"");
  cr_assert(wa);
  double fz_json = json_number_after(strstr(wa, "\"force\""), "\"z\":");
  Env *r = query_sphere_plane(t, 11, sid, plane, 0.09, 0);
  cr_expect_eq(fz_json, r->contact_reply->results[0]->wrench_a->force->z);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(l);
  free(same);
  free(plane);
  close(j);
  close(t);
}

Test(daemon_api, two_clients_share_one_build, .init = up, .fini = down) {
  int a = tc_connect_tcp(D.port), b = tc_connect_unix(D.unix_path);
  /* Both send before either reads: the second joins the first's build. */
  Contactd__V1__Sphere s = CONTACTD__V1__SPHERE__INIT;
  s.radius = 0.2;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rg.sphere = &s;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = 1e7;
  rg.resolution_hint = 0.02;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  e.request_id = 100;
  tc_send(a, &e);
  e.request_id = 200;
  tc_send(b, &e);
  Env *ra = tc_recv(a, 60000), *rb = tc_recv(b, 60000);
  cr_assert(ra && rb);
  cr_assert_eq(ra->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  cr_assert_eq(rb->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  cr_expect_eq(ra->request_id, 100);
  cr_expect_eq(rb->request_id, 200);
  cr_expect_str_eq(ra->register_reply->geometry_id, rb->register_reply->geometry_id);
  cr_expect_eq(ra->register_reply->already_cached + rb->register_reply->already_cached, 1,
               "exactly one of the two built it");
  cr_expect_eq(ra->register_reply->stats->tetrahedra, rb->register_reply->stats->tetrahedra);
  cr_expect_gt(ra->register_reply->stats->tetrahedra, 0);
  Env *st = stats(a, 300);
  cr_expect_eq(st->stats_reply->cache_builds, 1, "built once");
  cr_expect_eq(st->stats_reply->cache_hits, 1);
  cr_expect_eq(st->stats_reply->cache_entries, 1);
  cr_expect_eq(st->stats_reply->connections, 2);
  contactd__v1__envelope__free_unpacked(st, NULL);
  /* b's query uses the geometry a registered */
  char *plane = tc_register_halfspace(a, 301, 0, 0);
  Env *q = query_sphere_plane(b, 302, ra->register_reply->geometry_id, plane, 0.19, 0);
  cr_expect_eq(q->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  contactd__v1__envelope__free_unpacked(q, NULL);
  contactd__v1__envelope__free_unpacked(ra, NULL);
  contactd__v1__envelope__free_unpacked(rb, NULL);
  free(plane);
  close(a);
  close(b);
}

Test(daemon_api, replies_leave_in_request_order, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  char *s = tc_register_sphere(fd, 1, 0.1, 1e6, 0.02), *p = tc_register_halfspace(fd, 2, 0, 0);
  /* A slow query (fine sphere, full surface) then cheap stats requests:
   * the stats are computed first but must not overtake the query. */
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, s, 0, 0, 0.05);
  tc_body(&b2, &p2, &v2, 2, p, 0, 0, 0);
  Contactd__V1__Pair pr = CONTACTD__V1__PAIR__INIT, *prs[1] = {&pr};
  pr.a = 1;
  pr.b = 2;
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.detail = CONTACTD__V1__DETAIL__DETAIL_SURFACE;
  o.point_contacts = 1;
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = 2;
  q.bodies = bodies;
  q.n_pairs = 1;
  q.pairs = prs;
  q.options = &o;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  Contactd__V1__Stats st = CONTACTD__V1__STATS__INIT;
  Env se = CONTACTD__V1__ENVELOPE__INIT;
  se.msg_case = CONTACTD__V1__ENVELOPE__MSG_STATS;
  se.stats = &st;
  for (uint64_t i = 0; i < 20; i++) {
    if (i % 2 == 0) {
      e.request_id = 1000 + i;
      tc_send(fd, &e);
    } else {
      se.request_id = 1000 + i;
      tc_send(fd, &se);
    }
  }
  for (uint64_t i = 0; i < 20; i++) {
    Env *r = tc_recv(fd, 30000);
    cr_assert(r);
    cr_assert_eq(r->request_id, 1000 + i, "reply %llu out of order (got %llu)", (unsigned long long)i,
                 (unsigned long long)r->request_id);
    if (i % 2 == 0) {
      cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
      Contactd__V1__PairResult *res = r->contact_reply->results[0];
      cr_assert(res->surface, "DETAIL_SURFACE sends the surface");
      cr_expect_gt(res->surface->n_areas, 0);
      cr_expect_eq(res->surface->n_face_offsets, res->surface->n_areas + 1);
      cr_expect_gt(res->n_patches, 0);
      cr_expect_gt(res->n_point_contacts, 0);
      double area = 0;
      for (size_t f = 0; f < res->surface->n_areas; f++) area += res->surface->areas[f];
      cr_expect_float_eq(area, res->area, 1e-9 * res->area, "face areas sum to the total");
    } else {
      cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY);
    }
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  free(s);
  free(p);
  close(fd);
}

/* GET path from the metrics port: the whole response (HTTP/1.0, the server
 * closes), NUL-terminated in buf. */
static void http_get(int port, const char *path, char *buf, size_t cap) {
  int fd = tc_connect_tcp(port);
  char req[256];
  snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
  tc_send_raw(fd, req, strlen(req));
  size_t n = 0;
  for (;;) {
    ssize_t k = read(fd, buf + n, cap - 1 - n);
    if (k <= 0) break;
    n += (size_t)k;
  }
  buf[n] = 0;
  close(fd);
  /* every exposition a test fetches is one Prometheus can read */
  const char *body = strstr(buf, "\r\n\r\n");
  if (strcmp(path, "/metrics") == 0 && strncmp(buf, "HTTP/1.0 200", 12) == 0 && body) {
    cr_assert(n + 1 < cap, "the /metrics response filled the test's buffer");
    char why[9000];
    cr_assert_eq(tc_promtool_check(body + 4, strlen(body + 4), why, sizeof why), 0, "%s", why);
  }
}

Test(daemon_api, metrics_endpoint_serves_prometheus_text) {
  const char *extra[] = {"--metrics-port", "0", NULL};
  tc_start(&D, extra);
  cr_assert_gt(D.metrics_port, 0);
  char buf[16384];
  http_get(D.metrics_port, "/metrics", buf, sizeof buf);
  cr_expect(strstr(buf, "HTTP/1.0 200"), "%s", buf);
  cr_expect(strstr(buf, "contactd_requests_total"));
  cr_expect(strstr(buf, "contactd_request_latency_us_bucket{le=\"+Inf\"}"));
  http_get(D.metrics_port, "/readyz", buf, sizeof buf);
  cr_expect(strstr(buf, "200 OK") && strstr(buf, "ready"), "%s", buf);
  cr_expect_eq(tc_stop(&D), 0);
}

static long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* A client of the HTTP port that connects and sends nothing is closed
 * after http_head_timeout_ms; past max_http_heads connections still sending
 * their heads, the oldest of them is closed (not the newcomer, which may be
 * a probe about to send its request); the port still answers afterwards. */
Test(daemon_api, silent_metrics_connections_time_out) {
  const char *path = tc_limits_file("metrics.json", "\"http_head_timeout_ms\": 300, \"max_http_heads\": 2");
  const char *extra[] = {"--config", path, "--metrics-port", "0", NULL};
  tc_start(&D, extra);
  cr_assert_gt(D.metrics_port, 0);
  long t0 = mono_ms();
  int a = tc_connect_tcp(D.metrics_port), b = tc_connect_tcp(D.metrics_port);
  cr_assert(a >= 0 && b >= 0);
  usleep(50000); /* both accepted before the third arrives */
  int c = tc_connect_tcp(D.metrics_port);
  cr_assert_geq(c, 0);
  cr_expect(tc_wait_closed(a, 200), "the oldest head is closed when a third arrives over max_http_heads");
  cr_expect(tc_wait_closed(c, 3000), "a silent connection is closed");
  long waited = mono_ms() - t0;
  cr_expect_geq(waited, 250, "not before the head deadline (%ld ms)", waited);
  cr_expect_lt(waited, 2000, "soon after the head deadline (%ld ms)", waited);
  cr_expect(tc_wait_closed(b, 1000));
  close(a);
  close(b);
  close(c);
  cr_expect_eq(tc_log_count(&D, "HTTP connections refused"), 1);
  /* A client that talks is answered as before. */
  char buf[1024];
  http_get(D.metrics_port, "/healthz", buf, sizeof buf);
  cr_expect(strstr(buf, "200 OK") && strstr(buf, "ok"), "%s", buf);
  /* A silent metrics connection does not hold up shutdown either. */
  a = tc_connect_tcp(D.metrics_port);
  usleep(50000);
  long s0 = mono_ms();
  cr_expect_eq(tc_stop(&D), 0);
  cr_expect_lt(mono_ms() - s0, 5000);
  close(a);
}

/* ---- request_memory_bytes ------------------------------------------------ */

/* The value of metric `name` in a /metrics response, or -1. */
static double metric_value(const char *text, const char *name) {
  char key[128];
  snprintf(key, sizeof key, "\ncontactd_%s ", name);
  const char *p = strstr(text, key);
  return p ? strtod(p + strlen(key), NULL) : -1;
}

/* /metrics once request_bytes is back to 0, or after 5 s. A request's
 * memory is given back on its connection's loop right after its reply is
 * sent, and /metrics is served by loop 0: with several loops the client may
 * read its last reply and ask before that loop has finished the request. */
static void metrics_settled(int port, char *buf, size_t cap) {
  for (int k = 0; k < 250; k++) {
    http_get(port, "/metrics", buf, cap);
    if (metric_value(buf, "request_bytes") == 0) return;
    usleep(20000);
  }
}

#define MEM_QUERIES 16
#define MEM_BODIES 10000

typedef struct mem_sender {
  int fd;
  const char *geometry;
} mem_sender;

/* A long build (one worker: every query job waits behind it), then
 * MEM_QUERIES ContactQuery frames of MEM_BODIES bodies each (~1 MB on the
 * wire, ~5 MB decoded), each with one pair (bodies 1 and 2 overlap; the
 * rest are 1 m apart). Blocking writes: the server may stop reading this
 * connection for a while. */
static void *mem_send(void *arg) {
  mem_sender *m = arg;
  Contactd__V1__Sphere s = CONTACTD__V1__SPHERE__INIT;
  s.radius = 0.1;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rg.sphere = &s;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = 1e5;
  rg.resolution_hint = 0.005; /* ~120k tets: about a second */
  Contactd__V1__Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 1;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  cr_assert_eq(tc_send(m->fd, &e), 0);
  Contactd__V1__Body *b = calloc(MEM_BODIES, sizeof *b), **bp = calloc(MEM_BODIES, sizeof *bp);
  Contactd__V1__Pose *pose = calloc(MEM_BODIES, sizeof *pose);
  Contactd__V1__Vec3 *pos = calloc(MEM_BODIES, sizeof *pos);
  for (int i = 0; i < MEM_BODIES; i++) {
    tc_body(&b[i], &pose[i], &pos[i], (uint32_t)i + 1, m->geometry, i ? i % 100 : 0.15, i / 100, 0);
    bp[i] = &b[i];
  }
  Contactd__V1__Pair pair = CONTACTD__V1__PAIR__INIT, *pairs[1] = {&pair};
  pair.a = 1;
  pair.b = 2;
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = MEM_BODIES;
  q.bodies = bp;
  q.n_pairs = 1;
  q.pairs = pairs;
  for (int k = 0; k < MEM_QUERIES; k++) {
    Contactd__V1__Envelope qe = CONTACTD__V1__ENVELOPE__INIT;
    qe.request_id = 2 + (uint64_t)k;
    qe.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
    qe.contact_query = &q;
    cr_assert_eq(tc_send(m->fd, &qe), 0);
  }
  free(b);
  free(bp);
  free(pose);
  free(pos);
  return NULL;
}

/* Runs the pipelined client against a daemon with config `limits` (a JSON
 * object's body) and one worker; another client's Hello is answered too.
 * Returns the request_bytes high-water mark and the waits counted. */
static void mem_run(const char *limits, double *peak, double *waits) {
  const char *path = tc_limits_file("request-memory.json", limits);
  const char *extra[] = {"--config", path, "--workers", "1", "--metrics-port", "0", NULL};
  tc_start(&D, extra);
  int f0 = tc_connect_tcp(D.port);
  char *g = tc_register_sphere(f0, 1, 0.1, 1e5, 0.05);
  cr_assert(g);
  int fa = tc_connect_tcp(D.port), fb = tc_connect_tcp(D.port);
  mem_sender m = {fa, g};
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, mem_send, &m), 0);
  usleep(200000); /* the build has started and the queries are arriving */
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  h.client_name = "bystander";
  Contactd__V1__Envelope he = CONTACTD__V1__ENVELOPE__INIT;
  he.request_id = 77;
  he.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  he.hello = &h;
  Contactd__V1__Envelope *r = tc_call(fb, &he, 120000);
  cr_assert(r, "the other client is answered");
  cr_expect_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  cr_expect_eq(r->hello_reply->limits->request_memory_bytes, strstr(limits, "request_memory") ? 6u << 20 : 1024u << 20);
  contactd__v1__envelope__free_unpacked(r, NULL);
  pthread_join(th, NULL);
  /* every request is answered, in order: none was dropped while waiting */
  for (uint64_t k = 1; k <= 1 + MEM_QUERIES; k++) {
    while ((r = tc_recv(fa, 120000)) && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS)
      contactd__v1__envelope__free_unpacked(r, NULL);
    cr_assert(r, "reply %llu", (unsigned long long)k);
    cr_expect_eq(r->request_id, k);
    cr_expect_eq(r->msg_case, k == 1 ? CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY
                                     : CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY,
                 "request %llu: %s", (unsigned long long)k,
                 r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? r->error->message : "");
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  char buf[32768];
  metrics_settled(D.metrics_port, buf, sizeof buf);
  *peak = metric_value(buf, "request_bytes_peak");
  *waits = metric_value(buf, "input_waits_total");
  cr_expect_eq(metric_value(buf, "request_bytes"), 0, "nothing is held once everything is answered");
  cr_log_info("%s: request_bytes peak %.1f MiB, %g waits", limits[0] ? limits : "defaults", *peak / 1048576,
              *waits);
  free(g);
  close(f0);
  close(fa);
  close(fb);
  cr_expect_eq(tc_stop(&D), 0);
}

/* A client that pipelines large requests behind a long build makes the
 * server hold every decoded request until its turn: ~16 x 5 MB with the
 * defaults. With request_memory_bytes 6 MiB the server stops reading that
 * client while the input side is full, holds at most the limit plus one
 * decoded frame, still answers everything in order, and answers another
 * client too. */
Test(daemon_api, request_memory_bytes_bounds_pipelined_input, .timeout = 300) {
  double peak_default, waits_default, peak, waits;
  mem_run("", &peak_default, &waits_default);
  cr_expect_gt(peak_default, 24.0 * 1048576, "with the defaults the decoded queries pile up (%.0f bytes)",
               peak_default);
  cr_expect_eq(waits_default, 0);
  mem_run("\"request_memory_bytes\": 6291456, \"max_frame_bytes\": 2097152", &peak, &waits);
  cr_expect_gt(waits, 0, "the pipelining client had to wait");
  cr_expect_lt(peak, 6291456 + 6.0 * 1048576, "held %.0f bytes: the limit plus at most one decoded query", peak);
}

/* e framed (varint length, then the Envelope) into a malloc'd buffer. */
static uint8_t *framed(const Env *e, size_t *len) {
  size_t body = contactd__v1__envelope__get_packed_size(e), k = 0;
  uint8_t *out = malloc(body + 10);
  for (uint64_t v = body; ; v >>= 7) {
    out[k++] = (uint8_t)(v & 0x7F) | (v >= 0x80 ? 0x80 : 0);
    if (v < 0x80) break;
  }
  contactd__v1__envelope__pack(e, out + k);
  *len = k + body;
  return out;
}

/* A Hello whose client name pads it to about `size` bytes, framed. */
static uint8_t *padded_hello(uint64_t request_id, size_t size, size_t *len) {
  char *name = malloc(size + 1);
  memset(name, 'x', size);
  name[size] = 0;
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  h.client_name = name;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = request_id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  e.hello = &h;
  uint8_t *out = framed(&e, len);
  free(name);
  return out;
}

typedef struct steady_sender {
  int fd;
  const uint8_t *data;
  size_t len;
} steady_sender;

/* 60 KB every 50 ms: about 1.2 MB/s, well above the minimum rate. */
static void *steady_send(void *arg) {
  steady_sender *s = arg;
  for (size_t off = 0; off < s->len; off += 60000) {
    size_t n = s->len - off < 60000 ? s->len - off : 60000;
    cr_assert_eq(tc_send_raw(s->fd, s->data + off, n), 0);
    usleep(50000);
  }
  return NULL;
}

static void expect_hello(int fd, uint64_t request_id, const char *who) {
  Env *r = tc_recv(fd, 20000);
  cr_assert(r, "%s is answered", who);
  cr_expect_eq(r->request_id, request_id);
  cr_expect_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY, "%s: %s", who,
               r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? r->error->message : "");
  contactd__v1__envelope__free_unpacked(r, NULL);
}

/* A client that announces a frame and stops sending would hold its room in
 * request_memory_bytes for ever, and with it every other client's next
 * frame. While others wait, a frame must arrive within frame_grace_ms plus
 * its bytes so far at frame_min_rate_bytes: the staller is answered
 * RESOURCE_EXHAUSTED and closed, the waiting client gets in; a client
 * sending a large frame steadily is not cut, and without waiters a slow
 * frame costs nobody anything. */
Test(daemon_api, stalled_frame_is_closed_while_others_wait, .timeout = 120) {
  const char *path = tc_limits_file("frame-rate.json",
                                    "\"max_frame_bytes\": 1048576, \"request_memory_bytes\": 1048576, "
                                    "\"frame_grace_ms\": 300, \"frame_min_rate_bytes\": 65536");
  const char *extra[] = {"--config", path, "--metrics-port", "0", NULL};
  tc_start(&D, extra);
  /* announces 1,000,000 bytes, sends 10 */
  int fs = tc_connect_tcp(D.port);
  uint8_t stall[13] = {0xC0, 0x84, 0x3D};
  cr_assert_eq(tc_send_raw(fs, stall, sizeof stall), 0);
  /* alone, the stalled frame is harmless: it is not cut */
  usleep(800000);
  int fq = tc_connect_tcp(D.port);
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  Env he = CONTACTD__V1__ENVELOPE__INIT;
  he.request_id = 5;
  he.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  he.hello = &h;
  cr_assert_eq(tc_send(fq, &he), 0);
  expect_hello(fq, 5, "a small frame that fits next to the stalled one");
  char buf[32768];
  http_get(D.metrics_port, "/metrics", buf, sizeof buf);
  cr_expect_eq(metric_value(buf, "disconnects_total{reason=\"slow_sender\"}"), 0);
  /* a 100 KB frame does not fit next to it: it waits, the staller is cut */
  size_t n1;
  uint8_t *big = padded_hello(6, 100000, &n1);
  const long t0 = mono_ms();
  cr_assert_eq(tc_send_raw(fq, big, n1), 0);
  expect_hello(fq, 6, "the waiting client");
  const long waited = mono_ms() - t0;
  cr_log_info("the waiting client was answered after %ld ms", waited);
  /* the staller's grace ran out long ago (it was taken 0.8 s earlier): it
   * goes at the next sweep, not after idle_timeout_ms */
  cr_expect_lt(waited, 5000, "answered after %ld ms", waited);
  Env *r = tc_recv(fs, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR, "the staller is told why");
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED);
  cr_expect(strstr(r->error->message, "a frame of 1000000 bytes arrived too slowly") &&
                strstr(r->error->message, "frame_min_rate_bytes"),
            "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  cr_expect(tc_wait_closed(fs, 5000), "and closed");
  close(fs);
  /* a steady 600 KB upload with a waiter behind it is not cut */
  size_t n2, n3;
  uint8_t *steady = padded_hello(7, 600000, &n2), *after = padded_hello(8, 600000, &n3);
  int fu = tc_connect_tcp(D.port), fw = tc_connect_tcp(D.port);
  steady_sender ss = {fu, steady, n2};
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, steady_send, &ss), 0);
  usleep(100000);
  cr_assert_eq(tc_send_raw(fw, after, n3), 0);
  pthread_join(th, NULL);
  expect_hello(fu, 7, "the steady sender");
  expect_hello(fw, 8, "the client waiting behind it");
  metrics_settled(D.metrics_port, buf, sizeof buf);
  cr_expect_eq(metric_value(buf, "disconnects_total{reason=\"slow_sender\"}"), 1);
  cr_expect_gt(metric_value(buf, "input_waits_total"), 1);
  cr_expect_eq(metric_value(buf, "request_bytes"), 0);
  free(big);
  free(steady);
  free(after);
  close(fq);
  close(fu);
  close(fw);
  cr_expect_eq(tc_stop(&D), 0);
}

/* A JSON line that spans reads is assembled in a buffer charged to
 * request_memory_bytes. Once the line is answered, the buffer and its charge
 * go: two idle JSON connections that each once sent a 40 KB Hello in two
 * parts hold nothing, and a protobuf client that needs room next to them
 * is answered at once. Kept buffers (64 KB each) held the whole 128 KiB
 * limit until those connections closed. */
Test(daemon_api, idle_json_connections_hold_no_request_memory, .timeout = 120) {
  const char *path = tc_limits_file("json-lines.json",
                                    "\"max_frame_bytes\": 131072, \"request_memory_bytes\": 131072");
  const char *extra[] = {"--config", path, "--metrics-port", "0", NULL};
  tc_start(&D, extra);
  enum { NAME = 40000 };
  char *line = malloc(NAME + 100);
  int n = snprintf(line, NAME + 100, "{\"requestId\":\"1\",\"hello\":{\"clientName\":\"");
  memset(line + n, 'j', NAME);
  n += NAME;
  n += snprintf(line + n, 100, "\"}}\n");
  int fj[2];
  for (int k = 0; k < 2; k++) {
    fj[k] = tc_connect_tcp(D.port);
    /* two writes apart: the server reads the line in two pieces */
    cr_assert_eq(tc_send_raw(fj[k], line, 20000), 0);
    usleep(100000);
    cr_assert_eq(tc_send_raw(fj[k], line + 20000, (size_t)n - 20000), 0);
    char *l = tc_recv_line(fj[k], 20000);
    cr_assert(l && strstr(l, "\"helloReply\""), "JSON client %d is answered: %s", k, l ? l : "(nothing)");
    free(l);
  }
  char buf[32768];
  metrics_settled(D.metrics_port, buf, sizeof buf);
  cr_expect_eq(metric_value(buf, "request_bytes"), 0, "answered lines hold nothing (%.0f bytes held)",
               metric_value(buf, "request_bytes"));
  cr_expect_gt(metric_value(buf, "request_bytes_peak"), 40000, "the lines were assembled in charged buffers");
  /* 100 KB fits only if the idle connections hold less than 31 KB */
  size_t nh;
  uint8_t *big = padded_hello(9, 100000, &nh);
  int fp = tc_connect_tcp(D.port);
  cr_assert_eq(tc_send_raw(fp, big, nh), 0);
  expect_hello(fp, 9, "a protobuf client next to the idle JSON ones");
  free(big);
  free(line);
  close(fp);
  close(fj[0]);
  close(fj[1]);
  cr_expect_eq(tc_stop(&D), 0);
}

/* ---- large bodies: decoded off the loop ---------------------------------- */

#define HF_N 400 /* 160,000 heights: a 1.28 MB frame, over CD_DECODE_OFF_LOOP_BYTES */

/* A RegisterGeometry of the rigid plane z = 0.01 x sampled HF_N x HF_N
 * (heights must hold HF_N^2 values), framed; name and nx as given. */
static uint8_t *terrain_frame(uint64_t request_id, double *heights, const char *name, uint32_t nx, size_t *len) {
  for (int j = 0; j < HF_N; j++)
    for (int i = 0; i < HF_N; i++) heights[j * HF_N + i] = 0.01 * i;
  Contactd__V1__HeightField h = CONTACTD__V1__HEIGHT_FIELD__INIT;
  h.heights = heights;
  h.n_heights = (size_t)HF_N * HF_N;
  h.nx = nx;
  h.ny = HF_N;
  h.dx = h.dy = 0.01;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD;
  rg.height_field = &h;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rg.name = (char *)name;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = request_id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  return framed(&e, len);
}

/* The next reply on fd: request id and kind, or the error's field. */
static void expect_reply(int fd, uint64_t request_id, int msg_case, const char *error_field) {
  Env *r = tc_recv(fd, 30000);
  cr_assert(r, "request %llu is answered", (unsigned long long)request_id);
  cr_expect_eq(r->request_id, request_id);
  cr_expect_eq(r->msg_case, msg_case, "request %llu: %s", (unsigned long long)request_id,
               r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? r->error->message : "not the expected reply");
  if (error_field && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR)
    cr_expect_str_eq(r->error->field, error_field, "request %llu: %s", (unsigned long long)request_id,
                     r->error->message);
  if (r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY)
    cr_expect_eq(r->register_reply->stats->vertices, (uint64_t)HF_N * HF_N);
  contactd__v1__envelope__free_unpacked(r, NULL);
}

/* Bodies of 1 MiB or more are decoded on the decode thread (one upload
 * does not hold up every other connection; see bench_daemon). Pipelined
 * with small ones in one write, over both wires, each is answered in
 * order: valid ones as usual, broken ones (bytes that are no Envelope,
 * invalid UTF-8, a grid of the wrong size) with their error; the decode
 * thread took exactly the large ones, and nothing stays charged. */
Test(daemon_api, large_bodies_are_decoded_off_the_loop_in_order, .timeout = 120) {
  const char *extra[] = {"--metrics-port", "0", NULL};
  tc_start(&D, extra);
  double *z = malloc(sizeof(double) * HF_N * HF_N);
  uint8_t *part[7];
  size_t len[7], total = 0;
  part[0] = padded_hello(1, 10, &len[0]);
  part[1] = padded_hello(2, 1500000, &len[1]);
  part[2] = terrain_frame(3, z, "plane", HF_N, &len[2]);
  part[3] = terrain_frame(4, z, "bad \xff name", HF_N, &len[3]);
  part[4] = terrain_frame(5, z, "short", HF_N - 1, &len[4]);
  /* 1.2 MB that are no Envelope: field 1 with wire type 7 at byte 0 */
  len[5] = 3 + 1200000;
  part[5] = malloc(len[5]);
  part[5][0] = 0x80, part[5][1] = 0x9F, part[5][2] = 0x49; /* varint 1,200,000 */
  memset(part[5] + 3, 0x0F, 1200000);
  part[6] = padded_hello(7, 10, &len[6]);
  for (int k = 0; k < 7; k++) total += len[k];
  uint8_t *all = malloc(total), *p = all;
  for (int k = 0; k < 7; k++) {
    memcpy(p, part[k], len[k]);
    p += len[k];
    free(part[k]);
  }
  int fd = tc_connect_tcp(D.port);
  cr_assert_eq(tc_send_raw(fd, all, total), 0);
  free(all);
  expect_reply(fd, 1, CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY, NULL);
  expect_reply(fd, 2, CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY, NULL);
  expect_reply(fd, 3, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, NULL);
  expect_reply(fd, 4, CONTACTD__V1__ENVELOPE__MSG_ERROR, "registerGeometry.name");
  expect_reply(fd, 5, CONTACTD__V1__ENVELOPE__MSG_ERROR, "registerGeometry.heightField.heights");
  Env *r = tc_recv(fd, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR, "the bytes that are no Envelope get an error");
  cr_expect(strstr(r->error->message, "the 1200000-byte frame is not a valid") &&
                strstr(r->error->message, "wire type 7 at byte 0"),
            "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  expect_reply(fd, 7, CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY, NULL);

  /* JSON lines: a small one, a large valid one, a large one with a NUL, a
   * small one */
  size_t cap = (size_t)HF_N * HF_N * 2 * 12 + 1000, n = 0;
  char *lines = malloc(cap);
  for (int bad = 0; bad < 2; bad++) {
    if (!bad) n += (size_t)snprintf(lines + n, cap - n, "{\"requestId\":\"11\",\"hello\":{}}\n");
    n += (size_t)snprintf(lines + n, cap - n,
                          "{\"requestId\":\"%d\",\"registerGeometry\":{\"name\":\"%s\",\"compliance\":"
                          "\"COMPLIANCE_RIGID\",\"heightField\":{\"nx\":%d,\"ny\":%d,\"dx\":0.01,\"dy\":0.01,"
                          "\"heights\":[",
                          12 + bad, bad ? "a\\u0000b" : "json plane", HF_N, HF_N);
    for (int k = 0; k < HF_N * HF_N; k++)
      n += (size_t)snprintf(lines + n, cap - n, "%s%.6f", k ? "," : "", 0.01 * (k % HF_N) + 0.5 * bad);
    n += (size_t)snprintf(lines + n, cap - n, "]}}}\n");
  }
  n += (size_t)snprintf(lines + n, cap - n, "{\"requestId\":\"14\",\"hello\":{}}\n");
  cr_assert_gt(n / 2, 1048576, "each large line is over 1 MiB");
  int fj = tc_connect_tcp(D.port);
  cr_assert_eq(tc_send_raw(fj, lines, n), 0);
  free(lines);
  const char *want[4][2] = {{"\"requestId\":\"11\"", "helloReply"},
                            {"\"requestId\":\"12\"", "registerReply"},
                            {"\"requestId\":\"13\"", "a string holds a NUL character"},
                            {"\"requestId\":\"14\"", "helloReply"}};
  for (int k = 0; k < 4; k++) {
    char *l = tc_recv_line(fj, 30000);
    cr_assert(l, "JSON reply %d", k);
    cr_expect(strstr(l, want[k][0]) && strstr(l, want[k][1]), "JSON reply %d: %.300s", k, l);
    free(l);
  }
  char buf[32768];
  metrics_settled(D.metrics_port, buf, sizeof buf);
  cr_expect_eq(metric_value(buf, "decoded_off_loop_total"), 7, "the large bodies, and only they");
  cr_expect_eq(metric_value(buf, "request_bytes"), 0, "nothing is held once everything is answered");
  free(z);
  close(fd);
  close(fj);
  cr_expect_eq(tc_stop(&D), 0);
}

/* A shutdown while a large body is on the decode thread (SIGTERM as soon
 * as the server has taken the whole frame): with the default grace the
 * request is still answered (registered, or UNAVAILABLE: no new builds
 * once stopping) before the connection closes; with shutdown_grace_s 0 the
 * connection is closed at once and the decoded request is dropped. The
 * server exits 0 either way (and, under the sanitizers, touches nothing
 * freed). */
Test(daemon_api, shutdown_while_a_large_body_decodes, .timeout = 120) {
  const size_t side = 2600, nh = side * side; /* 54 MB: ~40 ms to decode */
  double *z = calloc(nh, sizeof *z);
  Contactd__V1__HeightField h = CONTACTD__V1__HEIGHT_FIELD__INIT;
  h.heights = z;
  h.n_heights = nh;
  h.nx = h.ny = (uint32_t)side;
  h.dx = h.dy = 0.01;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD;
  rg.height_field = &h;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 1;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  size_t n;
  uint8_t *f = framed(&e, &n);
  char path[512];
  snprintf(path, sizeof path, "%s", tc_config_file("no-grace.json", "{\"shutdown_grace_s\": 0}"));
  for (int grace = 1; grace >= 0; grace--) {
    const char *with[] = {"--metrics-port", "0", NULL}, *without[] = {"--metrics-port", "0", "--config", path, NULL};
    tc_start(&D, grace ? with : without);
    int fd = tc_connect_tcp(D.port);
    cr_assert_eq(tc_send_raw(fd, f, n), 0);
    char buf[32768];
    for (int k = 0; k < 2000; k++) { /* until the frame is on the decode thread */
      http_get(D.metrics_port, "/metrics", buf, sizeof buf);
      if (metric_value(buf, "decoded_off_loop_total") == 1) break;
      usleep(1000);
    }
    cr_assert_eq(metric_value(buf, "decoded_off_loop_total"), 1);
    kill(D.pid, SIGTERM);
    Env *r = tc_recv(fd, 60000);
    if (grace) {
      cr_assert(r, "the request is answered");
      cr_expect_eq(r->request_id, 1);
      cr_expect(r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY ||
                    (r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR &&
                     r->error->code == CONTACTD__V1__ERROR_CODE__UNAVAILABLE),
                "%s", r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? r->error->message : "");
    }
    if (r) contactd__v1__envelope__free_unpacked(r, NULL);
    cr_expect(tc_wait_closed(fd, 30000));
    cr_expect_eq(tc_stop(&D), 0, "exits 0 (grace %d)", grace);
    close(fd);
  }
  free(f);
  free(z);
}

/* ---- large replies: encoded off the loop --------------------------------- */

/* A fine sphere (hint 0.01) half sunk in a rigid half space with its full
 * triangle surface: ~9,500 faces, ~0.9 MiB of converted results, over
 * CD_ENCODE_OFF_LOOP_BYTES; the same pair wrench-only is a few hundred bytes.
 * Pipelined between Hellos over both wires, the large replies come in their
 * place with their whole surface and the same wrench as the small one;
 * the codec thread encoded exactly the large ones; clients that close while
 * their large reply is being built or encoded cost nothing; nothing stays
 * charged. */
Test(daemon_api, large_replies_are_encoded_off_the_loop_in_order, .timeout = 180) {
  const char *extra[] = {"--metrics-port", "0", NULL};
  tc_start(&D, extra);
  int fd = tc_connect_tcp(D.port);
  char *fine = tc_register_sphere(fd, 1, 0.1, 1e6, 0.01), *half = tc_register_halfspace(fd, 2, 0, 0);
  cr_assert(fine && half);
  tc_pair_query big, small;
  tc_pair_query_init(&big, 4, fine, 0.05, half, 0, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
  big.options.representation = CONTACTD__V1__REPRESENTATION__REPRESENTATION_TRIANGLE;
  tc_pair_query_init(&small, 5, fine, 0.05, half, 0, CONTACTD__V1__DETAIL__DETAIL_WRENCH);
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  Env e[4];
  for (int k = 0; k < 4; k += 3) {
    contactd__v1__envelope__init(&e[k]);
    e[k].request_id = 3 + (uint64_t)k;
    e[k].msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
    e[k].hello = &h;
  }
  e[1] = big.env;
  e[2] = small.env;
  cr_assert_eq(tc_send_burst(fd, e, 4), 0);
  Env *r[4];
  for (int k = 0; k < 4; k++) {
    r[k] = tc_recv(fd, 60000);
    cr_assert(r[k], "reply %d", k);
    cr_expect_eq(r[k]->request_id, 3 + (uint64_t)k, "in request order");
  }
  cr_expect_eq(r[0]->msg_case, CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  cr_expect_eq(r[3]->msg_case, CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  cr_assert_eq(r[1]->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_assert_eq(r[2]->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  const Contactd__V1__PairResult *pb = r[1]->contact_reply->results[0], *ps = r[2]->contact_reply->results[0];
  cr_assert(pb->surface);
  cr_expect_gt(pb->surface->n_areas, 5000, "%zu faces", pb->surface->n_areas);
  cr_expect_eq(pb->surface->n_pressure * 3, pb->surface->n_vertices);
  cr_expect_gt(ps->wrench_a->force->z, 0.0);
  cr_expect_float_eq(pb->wrench_a->force->z, ps->wrench_a->force->z, 1e-12 * ps->wrench_a->force->z);
  for (int k = 0; k < 4; k++) contactd__v1__envelope__free_unpacked(r[k], NULL);

  /* JSON: the same surface between two Hellos */
  int fj = tc_connect_tcp(D.port);
  char line[1024];
  snprintf(line, sizeof line,
           "{\"requestId\":\"11\",\"hello\":{}}\n"
           "{\"requestId\":\"12\",\"contactQuery\":{\"bodies\":[{\"bodyId\":1,\"geometryId\":\"%s\",\"pose\":"
           "{\"position\":{\"z\":0.05}}},{\"bodyId\":2,\"geometryId\":\"%s\"}],\"pairs\":[{\"a\":1,\"b\":2}],"
           "\"options\":{\"detail\":\"DETAIL_SURFACE\",\"representation\":\"REPRESENTATION_TRIANGLE\"}}}\n"
           "{\"requestId\":\"13\",\"hello\":{}}\n",
           fine, half);
  cr_assert_eq(tc_send_raw(fj, line, strlen(line)), 0);
  const char *want[3][2] = {{"\"requestId\":\"11\"", "helloReply"},
                            {"\"requestId\":\"12\"", "\"surface\""},
                            {"\"requestId\":\"13\"", "helloReply"}};
  for (int k = 0; k < 3; k++) {
    char *l = tc_recv_line(fj, 60000);
    cr_assert(l, "JSON reply %d", k);
    cr_expect(strstr(l, want[k][0]) && strstr(l, want[k][1]), "JSON reply %d: %.300s", k, l);
    if (k == 1) cr_expect_gt(strlen(l), 1000000, "the whole surface: %zu bytes", strlen(l));
    free(l);
  }
  char buf[32768];
  http_get(D.metrics_port, "/metrics", buf, sizeof buf);
  cr_expect_eq(metric_value(buf, "encoded_off_loop_total"), 2, "the large replies, and only they");

  /* clients that ask for the surface and leave at once */
  for (int k = 0; k < 10; k++) {
    int fx = tc_connect_tcp(D.port);
    cr_assert_eq(tc_send_raw(fx, line, strlen(line)), 0);
    if (k % 2) usleep(20000 * (k / 2)); /* some while the reply is computed or encoded */
    close(fx);
  }
  Env *hr = tc_call(fd, &e[0], 60000);
  cr_assert(hr && hr->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY, "the server goes on");
  contactd__v1__envelope__free_unpacked(hr, NULL);
  for (int k = 0; k < 500; k++) { /* the abandoned queries finish */
    metrics_settled(D.metrics_port, buf, sizeof buf);
    if (metric_value(buf, "reply_bytes") == 0 && metric_value(buf, "request_bytes") == 0) break;
    usleep(20000);
  }
  cr_expect_eq(metric_value(buf, "reply_bytes"), 0, "no results held");
  cr_expect_eq(metric_value(buf, "request_bytes"), 0, "no requests held");
  free(fine);
  free(half);
  close(fd);
  close(fj);
  cr_expect_eq(tc_stop(&D), 0);
}

/* One worker, and a client whose query is split into many jobs (64 pairs,
 * one per job): another client's one-pair query sent just after it is not
 * held up by that backlog. The workers serve the clients' job queues in
 * turn, so the small query's job runs after at most the job already
 * running, and its reply arrives while the large query is still being
 * computed; first come first served, it waited for all 64 jobs. */
Test(daemon_api, one_client_backlog_does_not_delay_another, .timeout = 120) {
  const char *path = tc_limits_file("turns.json", "\"pairs_per_job\": 1");
  const char *extra[] = {"--config", path, "--workers", "1", NULL};
  tc_start(&D, extra);
  int fa = tc_connect_tcp(D.port), fb = tc_connect_tcp(D.port);
  char *sphere = tc_register_sphere(fa, 1, 0.1, 1e6, 0.01), *plane = tc_register_halfspace(fa, 2, 0, 0);
  cr_assert(sphere && plane);
  enum { N = 64 };
  Contactd__V1__Body b[N + 1], *bodies[N + 1];
  Contactd__V1__Pose pose[N + 1];
  Contactd__V1__Vec3 pos[N + 1];
  Contactd__V1__Pair pr[N], *prs[N];
  for (int k = 0; k < N; k++) {
    tc_body(&b[k], &pose[k], &pos[k], (uint32_t)k + 1, sphere, 0.3 * k, 0, 0.05);
    contactd__v1__pair__init(&pr[k]);
    pr[k].a = (uint32_t)k + 1;
    pr[k].b = 1000;
    prs[k] = &pr[k];
  }
  tc_body(&b[N], &pose[N], &pos[N], 1000, plane, 0, 0, 0);
  for (int k = 0; k <= N; k++) bodies[k] = &b[k];
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = N + 1;
  q.bodies = bodies;
  q.n_pairs = N;
  q.pairs = prs;
  Env big = CONTACTD__V1__ENVELOPE__INIT;
  big.request_id = 3;
  big.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  big.contact_query = &q;
  tc_pair_query small;
  tc_pair_query_init(&small, 4, sphere, 0.05, plane, 0, CONTACTD__V1__DETAIL__DETAIL_WRENCH);

  cr_assert_eq(tc_send(fa, &big), 0);
  usleep(5000); /* the large query's jobs are queued */
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  cr_assert_eq(tc_send(fb, &small.env), 0);
  Env *rs = tc_recv(fb, 60000);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  cr_assert(rs && rs->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "the small query is answered");
  struct pollfd pa = {.fd = fa, .events = POLLIN};
  cr_expect_eq(poll(&pa, 1, 0), 0, "the small query is answered before the large one");
  Env *rb = tc_recv(fa, 60000);
  struct timespec t2;
  clock_gettime(CLOCK_MONOTONIC, &t2);
  cr_assert(rb && rb->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "the large query is answered");
  cr_assert_eq(rb->contact_reply->n_results, N);
  /* every sphere sits on the plane alike: the same force as the small query's */
  for (int k = 0; k < N; k++)
    cr_expect_float_eq(rb->contact_reply->results[k]->wrench_a->force->z,
                       rs->contact_reply->results[0]->wrench_a->force->z,
                       1e-9 * rs->contact_reply->results[0]->wrench_a->force->z, "pair %d", k);
  cr_log_info("small query answered in %.1f ms, the large one %.1f ms later",
              (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6,
              (double)(t2.tv_sec - t1.tv_sec) * 1e3 + (double)(t2.tv_nsec - t1.tv_nsec) / 1e6);
  contactd__v1__envelope__free_unpacked(rs, NULL);
  contactd__v1__envelope__free_unpacked(rb, NULL);
  free(sphere);
  free(plane);
  close(fa);
  close(fb);
  cr_expect_eq(tc_stop(&D), 0);
}

/* Two workers, and one client registering two large spheres at once (each
 * a build of ~0.3 s, seconds under the sanitizers): registrations may use
 * all workers but one (build_workers 0), so another client's query is
 * answered while the builds run; with both workers building it waited for
 * the first build to end. With build_workers 2 both builds run at once and
 * the query waits: the control. */
static void builds_leave_a_worker(const char *limits, int query_first) {
  const char *path = tc_limits_file("build-workers.json", limits);
  const char *extra[] = {"--config", path, "--workers", "2", NULL};
  tc_start(&D, extra);
  int fa = tc_connect_tcp(D.port), fb = tc_connect_tcp(D.port);
  char *sphere = tc_register_sphere(fb, 1, 0.1, 1e6, 0.05), *plane = tc_register_halfspace(fb, 2, 0, 0);
  cr_assert(sphere && plane);
  Contactd__V1__Sphere sp[2] = {CONTACTD__V1__SPHERE__INIT, CONTACTD__V1__SPHERE__INIT};
  Contactd__V1__RegisterGeometry rg[2];
  Env reg[2];
  for (int k = 0; k < 2; k++) {
    sp[k].radius = 0.1 + 0.01 * k;
    contactd__v1__register_geometry__init(&rg[k]);
    rg[k].shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
    rg[k].sphere = &sp[k];
    rg[k].compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
    rg[k].modulus = 1e6;
    rg[k].resolution_hint = 0.0066;
    contactd__v1__envelope__init(&reg[k]);
    reg[k].request_id = 10 + (uint64_t)k;
    reg[k].msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
    reg[k].register_geometry = &rg[k];
  }
  cr_assert_eq(tc_send_burst(fa, reg, 2), 0);
  usleep(50000); /* the builds are under way (or waiting for a worker) */
  tc_pair_query q;
  tc_pair_query_init(&q, 20, sphere, 0.05, plane, 0, CONTACTD__V1__DETAIL__DETAIL_WRENCH);
  cr_assert_eq(tc_send(fb, &q.env), 0);
  Env *r = tc_recv(fb, 120000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "the query is answered");
  contactd__v1__envelope__free_unpacked(r, NULL);
  struct pollfd pa = {.fd = fa, .events = POLLIN};
  if (query_first) cr_expect_eq(poll(&pa, 1, 0), 0, "%s: the query is answered before either build ends", limits);
  /* (the registration's reply comes from the loop of its own connection:
   * with several loops it may leave a moment after the query's; a query
   * that did not wait would be answered a build's length, ~0.3 s, before) */
  else cr_expect_eq(poll(&pa, 1, 50), 1, "%s: the query waited for a build", limits);
  for (int k = 0; k < 2; k++) {
    r = tc_recv(fa, 120000);
    cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "registration %d is answered", k);
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  free(sphere);
  free(plane);
  close(fa);
  close(fb);
  cr_expect_eq(tc_stop(&D), 0);
}

Test(daemon_api, builds_leave_a_worker_for_queries, .timeout = 300) {
  builds_leave_a_worker("", 1);
  builds_leave_a_worker("\"build_workers\": 2", 0);
}

Test(daemon_api, rigid_pairs_fall_back_to_point_contact, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  Contactd__V1__Sphere s = CONTACTD__V1__SPHERE__INIT;
  s.radius = 0.1;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rg.sphere = &s;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rg.resolution_hint = 0.02;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 1;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  Env *r = tc_call(fd, &e, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  char *rigid = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* A at x = 0.18 overlaps B at the origin by about 2 cm */
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, rigid, 0.18, 0, 0);
  tc_body(&b2, &p2, &v2, 2, rigid, 0, 0, 0);
  Contactd__V1__Pair pr = CONTACTD__V1__PAIR__INIT, *prs[1] = {&pr};
  pr.a = 1;
  pr.b = 2;
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = 2;
  q.bodies = bodies;
  q.n_pairs = 1;
  q.pairs = prs;
  Env qe = CONTACTD__V1__ENVELOPE__INIT;
  qe.request_id = 2;
  qe.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  qe.contact_query = &q;
  r = tc_call(fd, &qe, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "%s",
            r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? r->error->message : "");
  Contactd__V1__PairResult *res = r->contact_reply->results[0];
  cr_expect_eq(res->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT);
  cr_expect_eq(res->model, CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT);
  cr_assert(res->penetration);
  cr_expect_gt(res->penetration->depth, 0.01);
  cr_expect_lt(res->penetration->depth, 0.03);
  cr_expect_gt(res->penetration->normal->x, 0.9, "out of B into A");
  cr_expect_gt(res->wrench_a->force->x, 0.0, "A is pushed away from B");
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* hydroelastic only: no model for two rigid bodies */
  pr.contact_model = CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_HYDROELASTIC;
  qe.request_id = 3;
  r = tc_call(fd, &qe, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_expect_eq(r->contact_reply->results[0]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_UNSUPPORTED);
  cr_expect_null(r->contact_reply->results[0]->penetration);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(rigid);
  close(fd);
}

/* The same query gives the same bytes whatever the number of workers: a
 * scene of 16 compliant balls (sliding and spinning, with friction and
 * dissipation) heaped on a compliant floor, every pair found by the broad
 * phase, split into one-pair jobs, with surfaces, patches and point
 * contacts; answered by daemons with 1, 2 and 4 workers, twice each. Only
 * the timings (compute_time_us) may differ, and they are cleared before
 * the replies are compared. */
#define DET_BALLS 16
static uint8_t *det_reply(int workers, size_t *len) {
  char wn[8];
  snprintf(wn, sizeof wn, "%d", workers);
  const char *path = tc_limits_file("determinism.json", "\"pairs_per_job\": 1");
  const char *extra[] = {"--config", path, "--workers", wn, NULL};
  tc_start(&D, extra);
  int fd = tc_connect_tcp(D.port);
  char *ball = tc_register_sphere(fd, 1, 0.05, 2e5, 0.02), *floor = tc_register_halfspace(fd, 2, 1, 1e6);
  cr_assert(ball && floor);
  Contactd__V1__Body b[DET_BALLS + 1], *bodies[DET_BALLS + 1];
  Contactd__V1__Pose pose[DET_BALLS + 1];
  Contactd__V1__Vec3 pos[DET_BALLS + 1], w[DET_BALLS + 1], v[DET_BALLS + 1];
  Contactd__V1__Quat q[DET_BALLS + 1];
  Contactd__V1__SpatialVelocity vel[DET_BALLS + 1];
  for (int k = 0; k <= DET_BALLS; k++) {
    /* a heap: balls 6 cm apart in a 4 x 4 grid, every other one raised
     * onto its neighbours; body DET_BALLS is the floor */
    double x = k < DET_BALLS ? 0.06 * (k % 4) : 0, y = k < DET_BALLS ? 0.06 * (k / 4) : 0;
    double z = k < DET_BALLS ? 0.046 + 0.03 * (k % 2) : 0;
    tc_body(&b[k], &pose[k], &pos[k], (uint32_t)k + 1, k < DET_BALLS ? ball : floor, x, y, z);
    contactd__v1__quat__init(&q[k]);
    /* a turn of 0.3 k rad about the unit axis (1, k mod 3, 2) / |.| */
    double ax = 1, ay = k % 3, az = 2, an = sqrt(ax * ax + ay * ay + az * az), h = 0.15 * k;
    q[k].w = cos(h), q[k].x = sin(h) * ax / an, q[k].y = sin(h) * ay / an, q[k].z = sin(h) * az / an;
    pose[k].orientation = k < DET_BALLS ? &q[k] : NULL;
    contactd__v1__spatial_velocity__init(&vel[k]);
    contactd__v1__vec3__init(&w[k]);
    contactd__v1__vec3__init(&v[k]);
    w[k].z = 0.5 * (k % 3);
    v[k].x = 0.01 * (k % 5);
    v[k].z = -0.005 * (k % 2);
    vel[k].angular = &w[k];
    vel[k].linear = &v[k];
    b[k].velocity = &vel[k];
    bodies[k] = &b[k];
  }
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.detail = CONTACTD__V1__DETAIL__DETAIL_SURFACE;
  o.point_contacts = 1;
  Contactd__V1__ContactQuery cq = CONTACTD__V1__CONTACT_QUERY__INIT;
  cq.n_bodies = DET_BALLS + 1;
  cq.bodies = bodies;
  cq.all_pairs = &ap;
  cq.options = &o;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &cq;
  uint8_t *first = NULL;
  for (int rep = 0; rep < 2; rep++) {
    e.request_id = 10 + (uint64_t)rep;
    Env *r = tc_call(fd, &e, 60000);
    cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "%d workers: no contact reply",
              workers);
    Contactd__V1__ContactReply *cr = r->contact_reply;
    cr_assert_gt(cr->n_results, 20, "%d workers: %zu pairs", workers, cr->n_results);
    int surfaces = 0;
    cr->compute_time_us = 0;
    for (size_t i = 0; i < cr->n_results; i++) {
      cr->results[i]->compute_time_us = 0;
      surfaces += cr->results[i]->surface != NULL;
    }
    cr_assert_gt(surfaces, 20, "%d workers: %d surfaces", workers, surfaces);
    size_t n = contactd__v1__contact_reply__get_packed_size(cr);
    uint8_t *bytes = malloc(n);
    cr_assert(bytes);
    contactd__v1__contact_reply__pack(cr, bytes);
    contactd__v1__envelope__free_unpacked(r, NULL);
    if (rep == 0) {
      first = bytes;
      *len = n;
    } else {
      cr_expect(n == *len && memcmp(bytes, first, n) == 0, "%d workers: the same query twice differs", workers);
      free(bytes);
    }
  }
  free(ball);
  free(floor);
  close(fd);
  cr_expect_eq(tc_stop(&D), 0);
  return first;
}

Test(daemon_api, results_are_bit_identical_whatever_the_worker_count) {
  size_t n1, n;
  uint8_t *one = det_reply(1, &n1);
  cr_log_info("determinism: a %zu-byte reply", n1);
  const int counts[2] = {2, 4};
  for (int c = 0; c < 2; c++) {
    uint8_t *other = det_reply(counts[c], &n);
    cr_expect(n == n1 && memcmp(one, other, n) == 0, "%d workers answer differently from 1 (%zu vs %zu bytes)",
              counts[c], n, n1);
    free(other);
  }
  free(one);
}

/* A protobuf reply is packed in pieces: each job packs its pairs on its
 * worker and the rest of the message is packed around them. Over the wire,
 * a scene of touching balls (every pair from the broad phase, three pairs a
 * job so the last job is short; patches and energy) and a stream over it:
 * each frame is the one packing the whole decoded message gives, byte for
 * byte, and its results are those of the same query over JSON (encoded
 * whole from the messages), timings aside. */
#define SPL_BALLS 40
static void spl_zero_times(Contactd__V1__PairResult **r, size_t n) {
  for (size_t i = 0; i < n; i++) r[i]->compute_time_us = 0;
}

static void spl_expect_canonical(const uint8_t *raw, size_t n, const Env *e, const char *what) {
  size_t m = contactd__v1__envelope__get_packed_size(e);
  uint8_t *re = malloc(m ? m : 1);
  cr_assert(re);
  contactd__v1__envelope__pack(e, re);
  cr_expect(m == n && memcmp(raw, re, n) == 0, "%s: %zu bytes on the wire, %zu packed whole", what, n, m);
  free(re);
}

Test(daemon_api, replies_packed_on_the_workers_are_whole_messages, .timeout = 120) {
  const char *path = tc_limits_file("splice.json", "\"pairs_per_job\": 3");
  const char *extra[] = {"--config", path, "--workers", "2", NULL};
  tc_start(&D, extra);
  int fd = tc_connect_tcp(D.port), fj = tc_connect_tcp(D.port);
  char *ball = tc_register_sphere(fd, 1, 0.05, 2e5, 0.02);
  cr_assert(ball);
  Contactd__V1__Body b[SPL_BALLS], *bodies[SPL_BALLS];
  Contactd__V1__Pose pose[SPL_BALLS];
  Contactd__V1__Vec3 pos[SPL_BALLS];
  for (int k = 0; k < SPL_BALLS; k++) { /* 9 cm apart: each ball presses into its neighbours */
    tc_body(&b[k], &pose[k], &pos[k], (uint32_t)k + 1, ball, 0.09 * (k % 5), 0.09 * (k / 5 % 4), 0.09 * (k / 20));
    bodies[k] = &b[k];
  }
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.detail = CONTACTD__V1__DETAIL__DETAIL_PATCHES;
  o.want_energy = 1;
  Contactd__V1__ContactQuery cq = CONTACTD__V1__CONTACT_QUERY__INIT;
  cq.n_bodies = SPL_BALLS;
  cq.bodies = bodies;
  cq.all_pairs = &ap;
  cq.options = &o;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 300;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &cq;
  cr_assert_eq(tc_send(fd, &e), 0);
  size_t n;
  uint8_t *raw = tc_recv_frame(fd, 60000, &n);
  cr_assert(raw);
  Env *r = contactd__v1__envelope__unpack(NULL, n, raw);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY && r->request_id == 300);
  spl_expect_canonical(raw, n, r, "the scene's reply");
  Contactd__V1__ContactReply *cr = r->contact_reply;
  cr_assert_gt(cr->n_results, 60, "%zu pairs", cr->n_results);
  cr_expect_eq(cr->n_results, cr->candidate_pairs);
  for (size_t i = 0; i < cr->n_results; i++) {
    const Contactd__V1__PairResult *p = cr->results[i];
    cr_expect(p->a != p->b && p->a >= 1 && p->a <= SPL_BALLS && p->b >= 1 && p->b <= SPL_BALLS, "pair %zu", i);
    cr_expect_eq(p->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE, "pair %zu touches", i);
    cr_expect_eq(p->wrench_a->force->x, -p->wrench_b->force->x, "pair %zu: opposite forces", i);
    cr_expect_eq(p->n_patches, 1, "pair %zu: one patch", i);
  }

  /* the same query over JSON */
  cd_budget jb;
  cd_budget_init(&jb, 0);
  cd_wire_error we;
  size_t jl;
  char *line = cd_json_encode(&e.base, &jb, &jl, &we);
  cr_assert(line);
  cr_assert_eq(tc_send_line(fj, line), 0);
  char *lj = tc_recv_line(fj, 60000);
  cr_assert(lj);
  Env *rj = (Env *)cd_json_decode(&contactd__v1__envelope__descriptor, lj, strlen(lj), &jb, &we);
  cr_assert(rj && rj->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "%s", we.message);
  cr_assert_eq(rj->contact_reply->n_results, cr->n_results);
  cr->compute_time_us = rj->contact_reply->compute_time_us = 0;
  spl_zero_times(cr->results, cr->n_results);
  spl_zero_times(rj->contact_reply->results, rj->contact_reply->n_results);
  size_t np = contactd__v1__contact_reply__get_packed_size(cr);
  size_t nj = contactd__v1__contact_reply__get_packed_size(rj->contact_reply);
  uint8_t *bp = malloc(np), *bj = malloc(nj);
  contactd__v1__contact_reply__pack(cr, bp);
  contactd__v1__contact_reply__pack(rj->contact_reply, bj);
  cr_expect(np == nj && memcmp(bp, bj, np) == 0, "protobuf and JSON give the same results (%zu and %zu bytes)", np,
            nj);
  free(bp);
  free(bj);
  free(lj);
  cd_budget_destroy(&jb);

  /* a stream over the scene: a StreamResult packed in pieces */
  Contactd__V1__OpenStream os = CONTACTD__V1__OPEN_STREAM__INIT;
  os.n_bodies = SPL_BALLS;
  os.bodies = bodies;
  os.all_pairs = &ap;
  os.options = &o;
  uint64_t sid = tc_open_stream(fd, &os, 301, 30000);
  cr_assert_gt(sid, 0);
  cr_assert_eq(tc_send_stream_update_z(fd, 302, sid, 7, 1, 0.005), 0);
  free(raw);
  raw = tc_recv_frame(fd, 60000, &n);
  cr_assert(raw);
  Env *rs = contactd__v1__envelope__unpack(NULL, n, raw);
  cr_assert(rs && rs->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT);
  spl_expect_canonical(raw, n, rs, "the stream's result");
  cr_expect_eq(rs->stream_result->sequence, 7);
  cr_expect_eq(rs->stream_result->stream_id, sid);
  cr_expect_eq(rs->stream_result->n_results, cr->n_results);
  contactd__v1__envelope__free_unpacked(rs, NULL);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(raw);
  free(ball);
  close(fd);
  close(fj);
  cr_expect_eq(tc_stop(&D), 0);
}

/* The broad phase of a query (or stream update) with many bodies runs on a
 * worker before its pairs are split into jobs; a small one on the loop.
 * Either way the same pairs come back, and one over max_pairs_per_query
 * fails the same way, naming the same field: a query of 100 balls (on a
 * worker) and of its first 10 (on the loop), each spread out and heaped,
 * and a stream of the 100 whose update heaps them. */
#define BP_BALLS 100
static Env *bp_query(int fd, uint64_t id, Contactd__V1__Body **bodies, size_t n, Contactd__V1__AllPairs *ap) {
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = n;
  q.bodies = bodies;
  q.all_pairs = ap;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  Env *r = tc_call(fd, &e, 60000);
  cr_assert(r && r->request_id == id, "a reply to %llu", (unsigned long long)id);
  return r;
}

static void bp_expect_over(Env *r, const char *field, const char *what) {
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR, "%s: an error", what);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED, "%s", what);
  cr_expect_str_eq(r->error->field, field, "%s", what);
  cr_expect(strstr(r->error->message, "the broad phase found more than 40 candidate pairs (max_pairs_per_query)"),
            "%s: %s", what, r->error->message);
}

Test(daemon_api, broad_phase_off_the_loop_finds_the_same_pairs_and_limits, .timeout = 120) {
  const char *path = tc_limits_file("broadphase.json", "\"max_pairs_per_query\": 40");
  const char *extra[] = {"--config", path, NULL};
  tc_start(&D, extra);
  int fd = tc_connect_tcp(D.port);
  char *ball = tc_register_sphere(fd, 1, 0.05, 2e5, 0.02);
  cr_assert(ball);
  Contactd__V1__Body b[BP_BALLS], *bodies[BP_BALLS];
  Contactd__V1__Pose pose[BP_BALLS];
  Contactd__V1__Vec3 pos[BP_BALLS];
  /* spread out, 0.5 m apart in two rows, but each ball k = 9 (mod 10) 9 cm
   * beside ball k - 1: 10 pairs among the 100, 1 among the first 10 */
  for (int k = 0; k < BP_BALLS; k++) {
    double x = 0.5 * (k / 2), y = k % 2 ? 1.0 : 0;
    if (k % 10 == 9) x = 0.5 * ((k - 1) / 2) + 0.09, y = 0;
    tc_body(&b[k], &pose[k], &pos[k], (uint32_t)(1000 - k), ball, x, y, 0);
    bodies[k] = &b[k];
  }
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  const size_t sizes[2] = {BP_BALLS, 10};
  for (int s = 0; s < 2; s++) {
    Env *r = bp_query(fd, 10 + (uint64_t)s, bodies, sizes[s], &ap);
    cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "%zu bodies: %s", sizes[s],
                 r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? r->error->message : "");
    const Contactd__V1__ContactReply *cr = r->contact_reply;
    cr_expect_eq(cr->n_results, sizes[s] / 10, "%zu bodies: %zu pairs", sizes[s], cr->n_results);
    cr_expect_eq(cr->candidate_pairs, cr->n_results);
    for (size_t i = 0; i < cr->n_results; i++) { /* by ids: (991 - 10 j, 992 - 10 j), j descending */
      cr_expect_eq(cr->results[i]->a, 991 - 10 * (cr->n_results - 1 - i), "%zu bodies, pair %zu", sizes[s], i);
      cr_expect_eq(cr->results[i]->b, cr->results[i]->a + 1);
      cr_expect_eq(cr->results[i]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
    }
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  /* an exclusion drops one of them */
  Contactd__V1__Pair ex = CONTACTD__V1__PAIR__INIT, *exs[1] = {&ex};
  ex.a = 992;
  ex.b = 991;
  ap.n_exclude = 1;
  ap.exclude = exs;
  Env *r = bp_query(fd, 12, bodies, BP_BALLS, &ap);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  cr_expect_eq(r->contact_reply->n_results, BP_BALLS / 10 - 1);
  contactd__v1__envelope__free_unpacked(r, NULL);
  ap.n_exclude = 0;

  /* a stream of all of them; its update heaps them in one spot */
  Contactd__V1__OpenStream os = CONTACTD__V1__OPEN_STREAM__INIT;
  os.n_bodies = BP_BALLS;
  os.bodies = bodies;
  os.all_pairs = &ap;
  uint64_t sid = tc_open_stream(fd, &os, 20, 30000);
  cr_assert_gt(sid, 0);
  Contactd__V1__Vec3 here = CONTACTD__V1__VEC3__INIT;
  Contactd__V1__Pose at = CONTACTD__V1__POSE__INIT;
  at.position = &here;
  Contactd__V1__BodyState st[BP_BALLS], *stp[BP_BALLS];
  for (int k = 0; k < BP_BALLS; k++) {
    contactd__v1__body_state__init(&st[k]);
    st[k].body_id = b[k].body_id;
    st[k].pose = &at;
    stp[k] = &st[k];
  }
  Contactd__V1__StreamUpdate u = CONTACTD__V1__STREAM_UPDATE__INIT;
  u.stream_id = sid;
  u.sequence = 1;
  u.n_bodies = BP_BALLS;
  u.bodies = stp;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 21;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
  e.stream_update = &u;
  cr_assert_eq(tc_send(fd, &e), 0);
  r = tc_recv(fd, 60000);
  cr_assert(r);
  bp_expect_over(r, "streamUpdate", "the stream's heaped update");
  cr_expect_eq(r->error->stream_id, sid);
  cr_expect_eq(r->error->sequence, 1);
  contactd__v1__envelope__free_unpacked(r, NULL);

  /* heaped: over the limit, on a worker (100 bodies) and on the loop (10) */
  for (int k = 0; k < BP_BALLS; k++) pos[k].x = pos[k].y = pos[k].z = 0;
  for (int s = 0; s < 2; s++) {
    r = bp_query(fd, 30 + (uint64_t)s, bodies, sizes[s], &ap);
    bp_expect_over(r, "contactQuery.allPairs", s ? "10 heaped bodies (45 pairs)" : "100 heaped bodies");
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  free(ball);
  close(fd);
  cr_expect_eq(tc_stop(&D), 0);
}
