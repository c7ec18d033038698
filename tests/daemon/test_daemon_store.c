/* test_daemon_store.c — the geometry store end to end: real contactd
 * processes sharing a directory or a redis-server (each test starts its own
 * on a free loopback port with a temporary directory, and stops it).
 * Replicas answer for geometry registered on another, restarts keep it,
 * corrupt records are ignored and counted, a stopped or killed Redis costs
 * speed but never correctness, and a full disk is an error, not a crash. */
#include <criterion/criterion.h>
#include <errno.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cd_test_client.h"
#include "td_redis.h"

typedef Contactd__V1__Envelope Env;

#define REDIS_BIN "/usr/bin/redis-server"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- redis-server -------------------------------------------------------- */

typedef td_redis redis; /* tests/common/td_redis.h */

static redisContext *redis_conn(const redis *r) {
  struct timeval tv = {1, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
  if (c && c->err) {
    redisFree(c);
    return NULL;
  }
  return c;
}

/* Start (or restart, on the same port and directory) redis-server. */
static void redis_run(redis *r) {
  const char *why = "";
  cr_assert_eq(td_redis_run(r, REDIS_BIN, NULL, &why), 0, "%s (port %d)", why, r->port);
}

static void redis_start(redis *r) {
  const char *why = "";
  cr_assert_eq(td_redis_start(r, REDIS_BIN, NULL, &why), 0, "%s", why);
}

static void redis_stop(redis *r) { td_redis_stop(r); }

static long long redis_keys(const redis *r) {
  redisContext *c = redis_conn(r);
  cr_assert(c);
  redisReply *rep = redisCommand(c, "KEYS contactd:v1:spec:*");
  long long n = rep && rep->type == REDIS_REPLY_ARRAY ? (long long)rep->elements : -1;
  if (rep) freeReplyObject(rep);
  redisFree(c);
  return n;
}

/* ---- daemons and requests ------------------------------------------------ */

static void start_with(tc_daemon *d, const char *store, const char *timeout_ms) {
  const char *extra[] = {"--store", store, "--store-timeout-ms", timeout_ms ? timeout_ms : "1000", NULL};
  tc_start(d, extra);
}

static Env *reg(int fd, Contactd__V1__RegisterGeometry *rg, uint64_t rid) {
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = rid;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = rg;
  return tc_call(fd, &e, 60000);
}

static char *reg_id(int fd, Contactd__V1__RegisterGeometry *rg, uint64_t rid) {
  Env *r = reg(fd, rg, rid);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "registration failed: %s",
            r && r->error ? r->error->message : "no reply");
  char *id = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  return id;
}

/* Query shape ga (at z 0) against gb (at z zb): the reply packed with its
 * timings zeroed (malloc'd, *len), or NULL with the error in err. */
static uint8_t *query_bytes(int fd, const char *ga, const char *gb, double zb, size_t *len, char *err, int *code) {
  static uint64_t rid = 1000;
  tc_pair_query q;
  tc_pair_query_init(&q, ++rid, ga, 0, gb, zb, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
  Env *r = tc_call(fd, &q.env, 60000);
  cr_assert(r, "no reply to a query");
  if (r->msg_case != CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY) {
    if (err) snprintf(err, 512, "%s", r->error ? r->error->message : "?");
    if (code) *code = r->error ? (int)r->error->code : -1;
    contactd__v1__envelope__free_unpacked(r, NULL);
    return NULL;
  }
  Contactd__V1__ContactReply *c = r->contact_reply;
  c->compute_time_us = 0;
  for (size_t i = 0; i < c->n_results; i++) c->results[i]->compute_time_us = 0;
  *len = contactd__v1__contact_reply__get_packed_size(c);
  uint8_t *b = malloc(*len);
  contactd__v1__contact_reply__pack(c, b);
  contactd__v1__envelope__free_unpacked(r, NULL);
  return b;
}

/* The counters of a Stats reply (its repeated and string fields are not kept). */
static Contactd__V1__StatsReply stats(int fd) {
  Env *r = tc_stats(fd, 77, 10000);
  cr_assert(r, "no stats");
  Contactd__V1__StatsReply s = *r->stats_reply;
  contactd__v1__envelope__free_unpacked(r, NULL);
  s.latency = NULL;
  s.worker_utilisation = NULL;
  s.store_breaker = NULL;
  return s;
}

static int same(const uint8_t *a, size_t na, const uint8_t *b, size_t nb) {
  return a && b && na == nb && memcmp(a, b, na) == 0;
}

/* ---- shapes ------------------------------------------------------------- */

#define NSHAPES 5
static Contactd__V1__RegisterGeometry RG[NSHAPES];
static Contactd__V1__Sphere SPH = CONTACTD__V1__SPHERE__INIT;
static Contactd__V1__MeshFile OBJ = CONTACTD__V1__MESH_FILE__INIT;
static Contactd__V1__SurfaceOptions SURF = CONTACTD__V1__SURFACE_OPTIONS__INIT;
static Contactd__V1__Convex CVX = CONTACTD__V1__CONVEX__INIT;
static Contactd__V1__HeightField HF = CONTACTD__V1__HEIGHT_FIELD__INIT;
static Contactd__V1__TriMesh TM = CONTACTD__V1__TRI_MESH__INIT;
static Contactd__V1__ConvexPiece PC[2], *PCP[2] = {&PC[0], &PC[1]};
static double CUBE[24], HEIGHTS[64], PIECE[2][24];
static int32_t CUBE_TRIS[36];
static char OBJ_TEXT[1024];

static void cube(double *v, double x0, double y0, double z0, double x1, double y1, double z1) {
  for (int c = 0; c < 8; c++) {
    v[3 * c] = c & 1 ? x1 : x0;
    v[3 * c + 1] = c & 2 ? y1 : y0;
    v[3 * c + 2] = c & 4 ? z1 : z0;
  }
}

static void shapes(void) {
  static const int32_t f[12][3] = {{0, 2, 1}, {1, 2, 3}, {4, 5, 6}, {5, 7, 6}, {0, 1, 4}, {1, 5, 4},
                                   {2, 6, 3}, {3, 6, 7}, {0, 4, 2}, {2, 4, 6}, {1, 3, 5}, {3, 7, 5}};
  cube(CUBE, -0.5, -0.5, -1, 0.5, 0.5, 0);
  for (int i = 0; i < 12; i++)
    for (int k = 0; k < 3; k++) CUBE_TRIS[3 * i + k] = f[i][k];
  int n = 0;
  for (int i = 0; i < 8; i++)
    n += snprintf(OBJ_TEXT + n, sizeof OBJ_TEXT - (size_t)n, "v %g %g %g\n", CUBE[3 * i], CUBE[3 * i + 1],
                  CUBE[3 * i + 2]);
  for (int i = 0; i < 12; i++)
    n += snprintf(OBJ_TEXT + n, sizeof OBJ_TEXT - (size_t)n, "f %d %d %d\n", f[i][0] + 1, f[i][1] + 1, f[i][2] + 1);
  for (int i = 0; i < NSHAPES; i++) contactd__v1__register_geometry__init(&RG[i]);
  /* a primitive: a compliant sphere */
  SPH.radius = 0.5;
  RG[0].shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  RG[0].sphere = &SPH;
  RG[0].compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  RG[0].modulus = 1e6;
  RG[0].resolution_hint = 0.25;
  /* a tetrahedralised OBJ */
  OBJ.data.data = (uint8_t *)OBJ_TEXT;
  OBJ.data.len = strlen(OBJ_TEXT);
  OBJ.format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_OBJ;
  SURF.edge_length = 0.34;
  RG[1].shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE;
  RG[1].mesh_file = &OBJ;
  RG[1].surface = &SURF;
  RG[1].compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  RG[1].modulus = 2e6;
  /* a convex set */
  CVX.points = CUBE;
  CVX.n_points = 24;
  RG[2].shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CONVEX;
  RG[2].convex = &CVX;
  RG[2].compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  /* a heightfield */
  for (int i = 0; i < 64; i++) HEIGHTS[i] = -0.05 * (i % 8) * (i / 8) / 49.0;
  HF.heights = HEIGHTS;
  HF.n_heights = 64;
  HF.nx = HF.ny = 8;
  HF.dx = HF.dy = 0.25;
  RG[3].shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD;
  RG[3].height_field = &HF;
  RG[3].compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  /* convex pieces: the cube as a rigid mesh made of two halves */
  cube(PIECE[0], -0.5, -0.5, -1, 0, 0.5, 0);
  cube(PIECE[1], 0, -0.5, -1, 0.5, 0.5, 0);
  for (int p = 0; p < 2; p++) {
    contactd__v1__convex_piece__init(&PC[p]);
    PC[p].points = PIECE[p];
    PC[p].n_points = 24;
  }
  TM.vertices = CUBE;
  TM.n_vertices = 24;
  TM.triangles = CUBE_TRIS;
  TM.n_triangles = 36;
  TM.convex_pieces = PCP;
  TM.n_convex_pieces = 2;
  RG[4].shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH;
  RG[4].tri_mesh = &TM;
  RG[4].compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
}

/* Register the five shapes and a probe sphere on d, record each shape's
 * result against the probe. */
static void record(tc_daemon *d, char *ids[NSHAPES + 1], uint8_t *res[NSHAPES], size_t len[NSHAPES]) {
  shapes();
  int fd = tc_connect_tcp(d->port);
  for (int i = 0; i < NSHAPES; i++) ids[i] = reg_id(fd, &RG[i], 10 + (uint64_t)i);
  Contactd__V1__RegisterGeometry probe;
  Contactd__V1__Sphere ps;
  tc_sphere_spec(&probe, &ps, 0.3, 3e6, 0.15);
  ids[NSHAPES] = reg_id(fd, &probe, 20);
  char err[512];
  for (int i = 0; i < NSHAPES; i++) {
    res[i] = query_bytes(fd, ids[i], ids[NSHAPES], 0.25, &len[i], err, NULL);
    cr_assert(res[i], "shape %d: %s", i, err);
  }
  close(fd);
}

/* Every shape answers on d exactly as recorded, built from the store. */
static void replay(tc_daemon *d, char *ids[NSHAPES + 1], uint8_t *res[NSHAPES], size_t len[NSHAPES]) {
  int fd = tc_connect_tcp(d->port);
  char err[512] = "";
  for (int i = 0; i < NSHAPES; i++) {
    size_t n = 0;
    uint8_t *b = query_bytes(fd, ids[i], ids[NSHAPES], 0.25, &n, err, NULL);
    cr_expect(same(b, n, res[i], len[i]), "shape %d differs after the restart (%s)", i, b ? "other bytes" : err);
    free(b);
  }
  Contactd__V1__StatsReply s = stats(fd);
  cr_expect_eq(s.cache_builds, NSHAPES + 1, "each geometry built once from the store (builds %llu)",
               (unsigned long long)s.cache_builds);
  cr_expect_eq(s.store_loads, NSHAPES + 1);
  close(fd);
}

static void restart_case(const char *store, redis *rd) {
  tc_daemon a;
  start_with(&a, store, NULL);
  char *ids[NSHAPES + 1];
  uint8_t *res[NSHAPES];
  size_t len[NSHAPES];
  record(&a, ids, res, len);
  /* no wait: the writes still queued go out during the shutdown */
  cr_assert_eq(tc_stop(&a), 0);
  if (rd) cr_expect_eq(redis_keys(rd), NSHAPES + 1);
  tc_daemon b;
  start_with(&b, store, NULL);
  replay(&b, ids, res, len);
  cr_expect_eq(tc_stop(&b), 0);
  for (int i = 0; i < NSHAPES; i++) free(res[i]);
  for (int i = 0; i <= NSHAPES; i++) free(ids[i]);
}

Test(store, restart_with_dir, .timeout = 240) {
  char dir[256], store[300];
  cr_assert(td_mkdtemp(dir, sizeof dir, "cd_store_") == 0);
  snprintf(store, sizeof store, "dir:%s/geometry", dir);
  restart_case(store, NULL);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
}

Test(store, restart_with_redis, .timeout = 240) {
  redis rd;
  redis_start(&rd);
  restart_case(rd.uri, &rd);
  redis_stop(&rd);
}

Test(store, three_replicas_one_redis, .timeout = 240) {
  redis rd;
  redis_start(&rd);
  tc_daemon d[3];
  for (int i = 0; i < 3; i++) start_with(&d[i], rd.uri, NULL);
  int fa = tc_connect_tcp(d[0].port);
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 1;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  e.hello = &h;
  Env *hr = tc_call(fa, &e, 10000);
  cr_assert(hr && hr->hello_reply);
  cr_expect_str_eq(hr->hello_reply->store, rd.uri, "HelloReply.store names the store");
  contactd__v1__envelope__free_unpacked(hr, NULL);
  char *s = tc_register_sphere(fa, 2, 0.5, 1e6, 0.1);
  char *p = tc_register_sphere(fa, 3, 0.3, 2e6, 0.1);
  size_t na = 0;
  uint8_t *ra = query_bytes(fa, s, p, 0.7, &na, NULL, NULL);
  cr_assert(ra);
  usleep(300000);
  for (int k = 1; k < 3; k++) {
    int fd = tc_connect_tcp(d[k].port);
    /* HasGeometry reports what the store holds */
    Contactd__V1__HasGeometry hg = CONTACTD__V1__HAS_GEOMETRY__INIT;
    char *ids[3] = {s, p, "0000000000000000000000000000000000000000000000000000000000000000"};
    hg.geometry_ids = ids;
    hg.n_geometry_ids = 3;
    Env he = CONTACTD__V1__ENVELOPE__INIT;
    he.request_id = 4;
    he.msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
    he.has_geometry = &hg;
    Env *r = tc_call(fd, &he, 30000);
    cr_assert(r && r->has_geometry_reply);
    cr_expect_eq(r->has_geometry_reply->n_missing, 1, "only the unknown id is missing on replica %d", k);
    contactd__v1__envelope__free_unpacked(r, NULL);
    for (int rep = 0; rep < 3; rep++) {
      size_t n = 0;
      uint8_t *b = query_bytes(fd, s, p, 0.7, &n, NULL, NULL);
      cr_expect(same(b, n, ra, na), "replica %d answers bit-identically to the one that built it", k);
      free(b);
    }
    Contactd__V1__StatsReply st = stats(fd);
    cr_expect_eq(st.cache_builds, 2, "replica %d built each geometry once (%llu builds)", k,
                 (unsigned long long)st.cache_builds);
    cr_expect_eq(st.store_hits, 2);
    close(fd);
  }
  kill(d[0].pid, SIGKILL);
  td_stop(&d[0], 0);
  int fb = tc_connect_tcp(d[1].port);
  size_t n = 0;
  uint8_t *b = query_bytes(fb, s, p, 0.7, &n, NULL, NULL);
  cr_expect(same(b, n, ra, na), "B still answers once A is gone");
  free(b);
  close(fb);
  close(fa);
  for (int i = 1; i < 3; i++) cr_expect_eq(tc_stop(&d[i]), 0);
  free(ra);
  free(s);
  free(p);
  redis_stop(&rd);
}

Test(store, many_clients_same_spec_on_replicas, .timeout = 240) {
  redis rd;
  redis_start(&rd);
  tc_daemon d[3];
  for (int i = 0; i < 3; i++) start_with(&d[i], rd.uri, NULL);
  enum { PER = 4 };
  int fds[3 * PER];
  Contactd__V1__RegisterGeometry rg;
  Contactd__V1__Sphere sp;
  tc_sphere_spec(&rg, &sp, 0.5, 1e6, 0.04); /* a build long enough for the registrations to meet */
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  for (int i = 0; i < 3 * PER; i++) {
    fds[i] = tc_connect_tcp(d[i % 3].port);
    e.request_id = 100 + (uint64_t)i;
    cr_assert_eq(tc_send(fds[i], &e), 0);
  }
  char *id = NULL;
  for (int i = 0; i < 3 * PER; i++) {
    Env *r = tc_recv(fds[i], 60000);
    cr_assert(r && r->register_reply, "registration %d answered", i);
    if (!id) id = strdup(r->register_reply->geometry_id);
    cr_expect_str_eq(r->register_reply->geometry_id, id);
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  usleep(500000);
  for (int k = 0; k < 3; k++) {
    Contactd__V1__StatsReply st = stats(fds[k]);
    cr_expect_eq(st.cache_builds, 1, "replica %d built once (%llu)", k, (unsigned long long)st.cache_builds);
  }
  cr_expect_eq(redis_keys(&rd), 1, "one stored entry");
  for (int i = 0; i < 3 * PER; i++) close(fds[i]);
  for (int i = 0; i < 3; i++) cr_expect_eq(tc_stop(&d[i]), 0);
  free(id);
  redis_stop(&rd);
}

/* ---- failures ------------------------------------------------------------ */

static const char UNKNOWN[] = "1111111111111111111111111111111111111111111111111111111111111111";

/* A query naming an unknown id: NOT_FOUND saying the store is unavailable,
 * within the store timeout + 100 ms. */
static void expect_unavailable(int fd, const char *known, double timeout_s) {
  char err[512] = "";
  int code = 0;
  size_t n;
  double t0 = now_s();
  uint8_t *b = query_bytes(fd, UNKNOWN, known, 0.7, &n, err, &code);
  double dt = now_s() - t0;
  cr_expect_null(b);
  free(b);
  cr_expect_eq(code, CONTACTD__V1__ERROR_CODE__NOT_FOUND, "%s", err);
  cr_expect(strstr(err, "unavailable") && strstr(err, "register it again"), "the message says why: %s", err);
  cr_expect(dt <= timeout_s + 0.1, "answered in %.0f ms (timeout %.0f ms)", dt * 1e3, timeout_s * 1e3);
  printf("store down: unknown id answered NOT_FOUND in %.1f ms\n", dt * 1e3);
}

static double p99_ms(int fd, const char *a, const char *b) {
  enum { N = 200 };
  double t[N];
  for (int i = 0; i < N; i++) {
    size_t n;
    double t0 = now_s();
    uint8_t *r = query_bytes(fd, a, b, 0.7, &n, NULL, NULL);
    t[i] = (now_s() - t0) * 1e3;
    cr_assert(r);
    free(r);
  }
  for (int i = 1; i < N; i++)
    for (int k = i; k > 0 && t[k] < t[k - 1]; k--) {
      double x = t[k];
      t[k] = t[k - 1];
      t[k - 1] = x;
    }
  return t[N * 99 / 100];
}

/* Register a new sphere (radius r) on fa and wait until fb answers for it. */
static void expect_recovery(int fa, int fb, double radius) {
  char *s = tc_register_sphere(fa, 300, radius, 1e6, 0.2);
  char *p = tc_register_sphere(fb, 301, 0.3, 2e6, 0.1);
  int ok = 0;
  double t0 = now_s();
  while (!ok && now_s() - t0 < 10) {
    size_t n;
    uint8_t *b = query_bytes(fb, s, p, 0.7, &n, NULL, NULL);
    ok = b != NULL;
    free(b);
    if (!ok) usleep(100000);
  }
  cr_expect(ok, "the other replica finds a new registration once the store is back (no restart)");
  printf("store back: a replica found a new geometry after %.2f s\n", now_s() - t0);
  free(s);
  free(p);
}

Test(store, redis_stopped_and_killed, .timeout = 240) {
  redis rd;
  redis_start(&rd);
  tc_daemon a, b;
  start_with(&a, rd.uri, "300");
  start_with(&b, rd.uri, "300");
  int fa = tc_connect_tcp(a.port), fb = tc_connect_tcp(b.port);
  char *s = tc_register_sphere(fa, 1, 0.5, 1e6, 0.1);
  char *p = tc_register_sphere(fa, 2, 0.3, 2e6, 0.1);
  double base = p99_ms(fa, s, p);
  kill(rd.pid, SIGSTOP);
  expect_unavailable(fa, s, 0.3);
  /* Geometry in memory must not wait on the store: a query that did would
   * take the store's 300 ms timeout. The bound is half of that, so the
   * machine's own load (sanitizers, parallel tests) cannot fail it while a
   * query blocked on Redis always would; the cost itself is printed. */
  double stopped = p99_ms(fa, s, p);
  printf("query p99 on geometry in memory: %.3f ms with the store up, %.3f ms with it stopped\n", base, stopped);
  cr_expect(stopped < 150.0, "p99 %.3f ms with Redis stopped (store timeout 300 ms) vs %.3f ms up", stopped, base);
  char *n1 = tc_register_sphere(fa, 3, 0.45, 1e6, 0.2);
  cr_expect(n1, "registration works while the store is stopped");
  expect_unavailable(fb, s, 0.3);
  kill(rd.pid, SIGCONT);
  expect_recovery(fa, fb, 0.41);
  td_redis_kill(&rd, SIGKILL);
  for (int i = 0; i < 20; i++) expect_unavailable(fb, s, 0.3);
  char *n2 = tc_register_sphere(fa, 4, 0.44, 1e6, 0.2);
  cr_expect(n2, "registration works while the store is down");
  redis_run(&rd);
  expect_recovery(fa, fb, 0.42);
  cr_expect_eq(tc_log_count(&b, "store circuit open"), 1, "one log line per breaker change, not per request");
  cr_expect_eq(tc_log_count(&b, "store circuit closed"), 1);
  close(fa);
  close(fb);
  cr_expect_eq(tc_stop(&a), 0);
  cr_expect_eq(tc_stop(&b), 0);
  free(s);
  free(p);
  free(n1);
  free(n2);
  redis_stop(&rd);
}

static void write_file(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  cr_assert(f, "%s: %s", path, strerror(errno));
  fwrite(data, 1, n, f);
  fclose(f);
}

Test(store, corrupt_and_foreign_entries, .timeout = 120) {
  char dir[256], store[300], path[400], src[400];
  cr_assert(td_mkdtemp(dir, sizeof dir, "cd_store_") == 0);
  snprintf(store, sizeof store, "dir:%s", dir);
  tc_daemon a;
  start_with(&a, store, NULL);
  int fd = tc_connect_tcp(a.port);
  char *s = tc_register_sphere(fd, 1, 0.5, 1e6, 0.2);
  char *p = tc_register_sphere(fd, 2, 0.3, 2e6, 0.2);
  usleep(300000);
  cr_assert_eq(tc_stop(&a), 0);
  /* s's record under another id (valid, but hashes to s), garbage, a wrong header */
  snprintf(src, sizeof src, "%s/contactd:v1:spec:%s", dir, s);
  FILE *f = fopen(src, "rb");
  cr_assert(f);
  uint8_t rec[65536];
  size_t n = fread(rec, 1, sizeof rec, f);
  fclose(f);
  static const char *ids[3] = {"2222222222222222222222222222222222222222222222222222222222222222",
                               "3333333333333333333333333333333333333333333333333333333333333333", NULL};
  snprintf(path, sizeof path, "%s/contactd:v1:spec:%s", dir, ids[0]);
  write_file(path, rec, n);
  snprintf(path, sizeof path, "%s/contactd:v1:spec:%s", dir, ids[1]);
  write_file(path, "not a record at all", 19);
  rec[8] = 99; /* format version 99 */
  write_file(src, rec, n);
  tc_start(&a, (const char *const[]){"--store", store, NULL});
  fd = tc_connect_tcp(a.port);
  char *all[3] = {(char *)ids[0], (char *)ids[1], s};
  for (int i = 0; i < 3; i++) {
    char err[512] = "";
    int code = 0;
    size_t len;
    uint8_t *b = query_bytes(fd, all[i], p, 0.7, &len, err, &code);
    cr_expect_null(b, "entry %d is not used", i);
    free(b);
    cr_expect_eq(code, CONTACTD__V1__ERROR_CODE__NOT_FOUND, "%s", err);
  }
  Contactd__V1__StatsReply st = stats(fd);
  cr_expect_eq(st.store_verify_failures, 3, "each bad entry counted (%llu)",
               (unsigned long long)st.store_verify_failures);
  cr_expect_eq(st.cache_builds, 1, "only p was built (from its good record)");
  cr_expect(tc_alive(&a));
  /* registering s again replaces nothing (the bad file stays) but works */
  char *s2 = tc_register_sphere(fd, 5, 0.5, 1e6, 0.2);
  cr_expect_str_eq(s2, s);
  close(fd);
  cr_expect_eq(tc_stop(&a), 0);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  cr_expect_eq(system(cmd), 0);
  free(s);
  free(s2);
  free(p);
}

Test(store, dir_on_a_full_filesystem, .timeout = 120) {
  char dir[256], store[300], fill[300];
  cr_assert(td_mkdtemp(dir, sizeof dir, "cd_full_") == 0);
  if (mount("tmpfs", dir, "tmpfs", 0, "size=64k") != 0) {
    rmdir(dir);
    cr_skip_test("cannot mount a small tmpfs here (%s): needs root", strerror(errno));
  }
  snprintf(fill, sizeof fill, "%s/fill", dir);
  FILE *f = fopen(fill, "wb");
  cr_assert(f);
  char block[4096] = {0};
  while (fwrite(block, 1, sizeof block, f) == sizeof block && fflush(f) == 0) {
  }
  fclose(f);
  snprintf(store, sizeof store, "dir:%s", dir);
  tc_daemon a;
  start_with(&a, store, NULL);
  int fd = tc_connect_tcp(a.port);
  char *s = tc_register_sphere(fd, 1, 0.5, 1e6, 0.1);
  cr_expect(s, "registration answers on a full disk");
  char *p = tc_register_sphere(fd, 2, 0.3, 2e6, 0.1);
  size_t n;
  uint8_t *b = query_bytes(fd, s, p, 0.7, &n, NULL, NULL);
  cr_expect(b, "queries work");
  free(b);
  usleep(300000);
  Contactd__V1__StatsReply st = stats(fd);
  cr_expect_geq(st.store_errors, 1, "the failed write is counted");
  cr_expect_geq(st.store_write_drops, 1);
  cr_expect_geq(tc_log_count(&a, "No space left on device"), 1, "and logged");
  close(fd);
  cr_expect_eq(tc_stop(&a), 0);
  umount(dir);
  rmdir(dir);
  free(s);
  free(p);
}

/* A stream opened on a replica that never saw its geometry, and a query
 * right behind it on the same connection: the stream's bodies come from
 * the store, and the two replies keep their request order. A Redis with a
 * password: from store_password_file on one replica and
 * CONTACTD_STORE_PASSWORD on the other. */
Test(store, stream_bodies_and_password, .timeout = 120) {
  redis rd;
  const char *why = "";
  cr_assert_eq(td_redis_start(&rd, REDIS_BIN, (const char *const[]){"--requirepass", "s3cret", NULL}, &why), 0,
               "%s", why);
  snprintf(rd.uri, sizeof rd.uri, "redis://127.0.0.1:%d/3", rd.port);
  char pwfile[300], cfg[300];
  snprintf(pwfile, sizeof pwfile, "%s/pw", rd.dir);
  write_file(pwfile, "s3cret\n", 7);
  snprintf(cfg, sizeof cfg, "%s/a.json", rd.dir);
  char json[600];
  snprintf(json, sizeof json, "{\"store\": \"%s\", \"store_password_file\": \"%s\"}", rd.uri, pwfile);
  write_file(cfg, json, strlen(json));
  tc_daemon a, b;
  tc_start(&a, (const char *const[]){"--config", cfg, NULL});
  setenv("CONTACTD_STORE_PASSWORD", "s3cret", 1);
  start_with(&b, rd.uri, NULL);
  unsetenv("CONTACTD_STORE_PASSWORD");
  int fa = tc_connect_tcp(a.port), fb = tc_connect_tcp(b.port);
  char *s = tc_register_sphere(fa, 1, 0.5, 1e6, 0.1);
  char *p = tc_register_sphere(fa, 2, 0.3, 2e6, 0.1);
  usleep(300000);
  Contactd__V1__Body bd[2], *bp[2] = {&bd[0], &bd[1]};
  Contactd__V1__Pose pose[2];
  Contactd__V1__Vec3 pos[2];
  tc_body(&bd[0], &pose[0], &pos[0], 1, s, 0, 0, 0);
  tc_body(&bd[1], &pose[1], &pos[1], 2, p, 0, 0, 0.7);
  Contactd__V1__OpenStream os = CONTACTD__V1__OPEN_STREAM__INIT;
  os.bodies = bp;
  os.n_bodies = 2;
  Contactd__V1__AllPairs all = CONTACTD__V1__ALL_PAIRS__INIT;
  os.all_pairs = &all;
  Env oe = CONTACTD__V1__ENVELOPE__INIT;
  oe.request_id = 10;
  oe.msg_case = CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM;
  oe.open_stream = &os;
  tc_pair_query q;
  tc_pair_query_init(&q, 11, s, 0, p, 0.7, 0);
  Env burst[2] = {oe, q.env};
  cr_assert_eq(tc_send_burst(fb, burst, 2), 0);
  Env *r1 = tc_recv(fb, 30000), *r2 = tc_recv(fb, 30000);
  cr_assert(r1 && r2);
  cr_expect_eq(r1->request_id, 10);
  cr_expect_eq(r1->msg_case, CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM_REPLY, "%s",
               r1->error ? r1->error->message : "");
  cr_expect_eq(r2->request_id, 11);
  cr_expect_eq(r2->msg_case, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "%s", r2->error ? r2->error->message : "");
  contactd__v1__envelope__free_unpacked(r1, NULL);
  contactd__v1__envelope__free_unpacked(r2, NULL);
  Contactd__V1__StatsReply st = stats(fb);
  cr_expect_eq(st.store_loads, 2, "B built both from A's records (authenticated, database 3)");
  cr_expect_eq(st.cache_builds, 2);
  close(fa);
  close(fb);
  cr_expect_eq(tc_stop(&a), 0);
  cr_expect_eq(tc_stop(&b), 0);
  free(s);
  free(p);
  redis_stop(&rd);
}

Test(store, bad_store_settings_are_refused, .timeout = 60) {
  static const char *bad[] = {"redis://user:pw@127.0.0.1:6379", "redis://127.0.0.1", "redis://127.0.0.1:0",
                              "redis://127.0.0.1:6379/x", "dir:", "s3://bucket"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    tc_daemon d;
    const char *why = NULL;
    const char *extra[] = {"--store", bad[i], NULL};
    cr_expect_neq(td_start(&d, CONTACTD_BIN, extra, &why), 0, "--store %s is refused", bad[i]);
    cr_expect(strstr(d.startup_log, "store"), "the error names the store: %s", d.startup_log);
  }
}
