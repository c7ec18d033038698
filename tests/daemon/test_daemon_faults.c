/* test_daemon_faults.c — the real daemon when allocations fail.
 *
 * contactd_faults is contactd with every allocation of our own code
 * (daemon, wire codecs, engine) routed through tests/common/td_faults.c,
 * which fails the ones CONTACTD_FAULTS names (SQLite's malloc tests, at
 * the process level):
 *  - startup: allocation K fails, for good and alone, for every K until
 *    the daemon starts without any failing. Each run must either end with
 *    exit status 1 and a log line that says what failed, or start and
 *    serve — never a crash, a sanitizer report or a hang;
 *  - serving: while armed (SIGUSR1 .. SIGUSR2) about one allocation in N
 *    fails. Two clients at once register primitives, convex sets (with
 *    progress) and OBJ files, query pairs, scenes and rigid pairs (point
 *    contact), ask HasGeometry, release, stream, speak JSON and scrape
 *    /metrics through it, with a 1.1 MB request and a 0.7 MB reply that
 *    go through the codec thread. Every request must be answered (a reply
 *    or an Error saying "out of memory") or its connection closed: nothing
 *    hangs and the daemon stays up. Once disarmed, the geometry
 *    registered before is still there, a query gives the force it gave
 *    before to the last bit, every request succeeds again, and SIGTERM
 *    still exits 0 (under the sanitizers: with no leak). */
#include <criterion/criterion.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

static tc_daemon D; /* the daemon being served through */

/* How one request ended. Silence (no reply, the connection still open),
 * an Error without a message and a reply of another kind are wrong: the
 * first such is kept in the tally (clients run on threads; the test
 * asserts afterwards, on its own). */
typedef enum { GOT_REPLY, GOT_ERROR, GOT_CLOSED, GOT_WRONG } outcome;

typedef struct tally {
  int replies, errors, closed, wrong;
  int oom;               /* errors whose message says "out of memory" */
  char other_error[200]; /* the first error message that does not */
  char first_wrong[200];
} tally;

static void error_seen(tally *t, const char *message) {
  t->errors++;
  if (strstr(message, "out of memory")) t->oom++;
  else if (!t->other_error[0]) snprintf(t->other_error, sizeof t->other_error, "%s", message);
}

static outcome wrong(tally *t, const char *what, const char *how) {
  if (!t->wrong++) snprintf(t->first_wrong, sizeof t->first_wrong, "%s: %s", what, how);
  return GOT_WRONG;
}

/* No reply came: the connection must have been closed. */
static outcome no_reply(tally *t, int fd, const char *what) {
  if (!tc_wait_closed(fd, 1000)) return wrong(t, what, "no reply, yet the connection is open");
  t->closed++;
  return GOT_CLOSED;
}

/* One request and its outcome (*out keeps a reply for the caller). */
static outcome call(tally *t, int fd, Env *req, int want, const char *what, Env **out) {
  *out = NULL;
  if (tc_send(fd, req)) {
    t->closed++;
    return GOT_CLOSED;
  }
  Env *r = tc_recv(fd, 20000);
  while (r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS) { /* (asked for) */
    contactd__v1__envelope__free_unpacked(r, NULL);
    r = tc_recv(fd, 20000);
  }
  if (!r) return no_reply(t, fd, what);
  if (r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR) {
    int said = r->error->message && r->error->message[0];
    if (said) error_seen(t, r->error->message);
    contactd__v1__envelope__free_unpacked(r, NULL);
    if (!said) return wrong(t, what, "an Error without a message");
    return GOT_ERROR;
  }
  if ((int)r->msg_case != want) {
    contactd__v1__envelope__free_unpacked(r, NULL);
    return wrong(t, what, "a reply of another kind");
  }
  t->replies++;
  *out = r;
  return GOT_REPLY;
}

/* A JSON request line and its outcome: the reply line holds `want`, or an
 * error with a message, or the connection was closed. *out keeps a reply. */
static outcome call_line(tally *t, int fd, const char *line, const char *want, const char *what, char **out) {
  *out = NULL;
  if (tc_send_line(fd, line)) {
    t->closed++;
    return GOT_CLOSED;
  }
  char *l = tc_recv_line(fd, 20000);
  if (!l) return no_reply(t, fd, what);
  if (strstr(l, want)) {
    t->replies++;
    *out = l;
    return GOT_REPLY;
  }
  const char *m = strstr(l, "\"error\"") ? strstr(l, "\"message\"") : NULL;
  if (m) error_seen(t, m);
  free(l);
  if (!m) return wrong(t, what, "a line that is neither the reply nor an error with a message");
  return GOT_ERROR;
}

/* A connection to port (0: the Unix socket), or -1 counted as wrong. */
static int connect_or_wrong(tally *t, int port) {
  int fd = port ? tc_connect_tcp(port) : tc_connect_unix(D.unix_path);
  if (fd < 0) wrong(t, "connect", "the daemon refuses connections");
  return fd;
}

/* Register rg (request id 1) → its id in id[65], or "" when it failed. */
static void register_one(tally *t, int fd, Contactd__V1__RegisterGeometry *rg, const char *what, char id[65]) {
  Env e = CONTACTD__V1__ENVELOPE__INIT, *r;
  e.request_id = 1;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = rg;
  id[0] = 0;
  if (call(t, fd, &e, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, what, &r) == GOT_REPLY) {
    snprintf(id, 65, "%s", r->register_reply->geometry_id);
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
}

/* One client's session over protobuf: register a sphere of this round's
 * size (a new build every round), query it against the plane, ask for
 * stats, open a stream and run one update. */
static void protobuf_round(tally *t, const char *plane, int round) {
  int fd = connect_or_wrong(t, D.port);
  if (fd < 0) return;
  const double radius = 0.1 + 1e-4 * round;
  Contactd__V1__Sphere s;
  Contactd__V1__RegisterGeometry rg;
  tc_sphere_spec(&rg, &s, radius, 1e6, 0.04);
  char sphere[65];
  register_one(t, fd, &rg, "registerGeometry", sphere);
  if (!sphere[0]) {
    close(fd);
    return;
  }
  Env e, *r;

  tc_pair_query pq;
  tc_pair_query_init(&pq, 2, sphere, radius - 0.01, plane, 0, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
  outcome o = call(t, fd, &pq.env, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "contactQuery", &r);
  if (o == GOT_REPLY) {
    if (!(r->contact_reply->results[0]->wrench_a->force->z > 0)) wrong(t, "contactQuery", "no upward force");
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  if (o == GOT_CLOSED || o == GOT_WRONG) {
    close(fd);
    return;
  }
  Contactd__V1__Stats st = CONTACTD__V1__STATS__INIT;
  contactd__v1__envelope__init(&e);
  e.request_id = 3;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STATS;
  e.stats = &st;
  o = call(t, fd, &e, CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY, "stats", &r);
  if (o == GOT_REPLY) contactd__v1__envelope__free_unpacked(r, NULL);
  if (o == GOT_CLOSED || o == GOT_WRONG) {
    close(fd);
    return;
  }

  /* a stream of the same two bodies and pair as the query above */
  Contactd__V1__OpenStream os = CONTACTD__V1__OPEN_STREAM__INIT;
  os.n_bodies = pq.query.n_bodies;
  os.bodies = pq.query.bodies;
  os.n_pairs = pq.query.n_pairs;
  os.pairs = pq.query.pairs;
  contactd__v1__envelope__init(&e);
  e.request_id = 4;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM;
  e.open_stream = &os;
  if (call(t, fd, &e, CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM_REPLY, "openStream", &r) == GOT_REPLY) {
    uint64_t sid = r->open_stream_reply->stream_id;
    contactd__v1__envelope__free_unpacked(r, NULL);
    Contactd__V1__Vec3 pos = CONTACTD__V1__VEC3__INIT;
    pos.z = radius - 0.02;
    Contactd__V1__Pose pose = CONTACTD__V1__POSE__INIT;
    pose.position = &pos;
    Contactd__V1__BodyState bs = CONTACTD__V1__BODY_STATE__INIT, *bsp[1] = {&bs};
    bs.body_id = 1;
    bs.pose = &pose;
    Contactd__V1__StreamUpdate u = CONTACTD__V1__STREAM_UPDATE__INIT;
    u.stream_id = sid;
    u.sequence = 1;
    u.n_bodies = 1;
    u.bodies = bsp;
    contactd__v1__envelope__init(&e);
    e.request_id = 5;
    e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
    e.stream_update = &u;
    if (call(t, fd, &e, CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT, "streamUpdate", &r) == GOT_REPLY)
      contactd__v1__envelope__free_unpacked(r, NULL);
  }
  close(fd);
}

/* The same over JSON lines on the Unix socket. */
static void json_round(tally *t, const char *plane, int round) {
  int fd = connect_or_wrong(t, 0);
  if (fd < 0) return;
  char line[1024], *l, id[65] = "";
  const double radius = 0.2 + 1e-4 * round;
  snprintf(line, sizeof line,
           "{\"requestId\":\"1\",\"registerGeometry\":{\"sphere\":{\"radius\":%.17g},"
           "\"compliance\":\"COMPLIANCE_COMPLIANT\",\"modulus\":1e6,\"resolutionHint\":0.05}}",
           radius);
  if (call_line(t, fd, line, "\"geometryId\":\"", "JSON registerGeometry", &l) == GOT_REPLY) {
    const char *p = strstr(l, "\"geometryId\":\"") + 14;
    if (strlen(p) >= 64) snprintf(id, sizeof id, "%.64s", p);
    free(l);
  }
  if (id[0]) {
    snprintf(line, sizeof line,
             "{\"requestId\":\"2\",\"contactQuery\":{\"bodies\":[{\"bodyId\":1,\"geometryId\":\"%s\","
             "\"pose\":{\"position\":{\"z\":%.17g}}},{\"bodyId\":2,\"geometryId\":\"%s\"}],"
             "\"pairs\":[{\"a\":1,\"b\":2}]}}",
             id, radius - 0.01, plane);
    if (call_line(t, fd, line, "\"contactReply\"", "JSON contactQuery", &l) == GOT_REPLY) free(l);
  }
  close(fd);
}

/* A scene: ten spheres in a row on the plane, every pair from the broad
 * phase but one excluded, surfaces reported: 9 results, in jobs of 8
 * pairs, a 0.7 MB reply encoded on the codec thread. */
static void scene_round(tally *t, const char *sphere, const char *plane) {
  int fd = connect_or_wrong(t, D.port);
  if (fd < 0) return;
  enum { NB = 11 };
  Contactd__V1__Body b[NB], *bodies[NB];
  Contactd__V1__Pose pose[NB];
  Contactd__V1__Vec3 pos[NB];
  for (int k = 0; k < NB; k++) {
    tc_body(&b[k], &pose[k], &pos[k], (uint32_t)k + 1, k ? sphere : plane, 0.3 * k, 0, k ? 0.09 : 0);
    bodies[k] = &b[k];
  }
  Contactd__V1__Pair ex = CONTACTD__V1__PAIR__INIT, *exs[1] = {&ex};
  ex.a = 1;
  ex.b = 2;
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  ap.n_exclude = 1;
  ap.exclude = exs;
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.detail = CONTACTD__V1__DETAIL__DETAIL_SURFACE;
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = NB;
  q.bodies = bodies;
  q.all_pairs = &ap;
  q.options = &o;
  Env e = CONTACTD__V1__ENVELOPE__INIT, *r;
  e.request_id = 7;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  if (call(t, fd, &e, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "scene contactQuery", &r) == GOT_REPLY) {
    if (r->contact_reply->n_results != NB - 2) wrong(t, "scene contactQuery", "not every sphere-plane pair");
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  close(fd);
}

/* The other requests and shapes: a compliant convex set built with
 * progress messages, a rigid cube from OBJ bytes, a rigid convex set of
 * 45,000 points (a request large enough to be decoded on the codec
 * thread), HasGeometry, a query of the first two and of the cube on the
 * plane (rigid–rigid: point contact), ReleaseGeometry. */
static void catalogue_round(tally *t, const char *plane, int round) {
  int fd = connect_or_wrong(t, D.port);
  if (fd < 0) return;
  const double scale = 1 + 1e-3 * round; /* new geometry every round */
  double pts[3 * 40];
  for (int k = 0; k < 40; k++) { /* a Fibonacci sphere */
    double z = 1 - (2 * k + 1) / 40.0, rr = sqrt(1 - z * z), a = 2.399963229728653 * k;
    pts[3 * k] = 0.05 * scale * rr * cos(a);
    pts[3 * k + 1] = 0.05 * scale * rr * sin(a);
    pts[3 * k + 2] = 0.05 * scale * z;
  }
  Contactd__V1__Convex cv = CONTACTD__V1__CONVEX__INIT;
  cv.n_points = 120;
  cv.points = pts;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CONVEX;
  rg.convex = &cv;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = 1e6;
  rg.resolution_hint = 0.02;
  rg.want_progress = 1;
  char convex[65], cube[65];
  register_one(t, fd, &rg, "registerGeometry convex", convex);

  char obj[1024];
  const double h = 0.05 * scale;
  int n = snprintf(obj, sizeof obj,
                   "v %g %g %g\nv %g %g %g\nv %g %g %g\nv %g %g %g\n"
                   "v %g %g %g\nv %g %g %g\nv %g %g %g\nv %g %g %g\n"
                   "f 1 3 2\nf 1 4 3\nf 5 6 7\nf 5 7 8\nf 1 2 6\nf 1 6 5\n"
                   "f 2 3 7\nf 2 7 6\nf 3 4 8\nf 3 8 7\nf 4 1 5\nf 4 5 8\n",
                   -h, -h, -h, h, -h, -h, h, h, -h, -h, h, -h, -h, -h, h, h, -h, h, h, h, h, -h, h, h);
  Contactd__V1__MeshFile mf = CONTACTD__V1__MESH_FILE__INIT;
  mf.data.data = (uint8_t *)obj;
  mf.data.len = (size_t)n;
  mf.format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_OBJ;
  mf.name = "cube.obj";
  contactd__v1__register_geometry__init(&rg);
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE;
  rg.mesh_file = &mf;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  register_one(t, fd, &rg, "registerGeometry OBJ", cube);

  /* 45,000 points in a box: a 1.1 MB request, decoded on the codec thread */
  enum { NBIG = 45000 };
  double *big = malloc(3 * NBIG * sizeof *big);
  cr_assert(big);
  uint64_t x = 88172645463325252ULL + (uint64_t)round;
  for (int k = 0; k < 3 * NBIG; k++) { /* xorshift64 */
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    big[k] = 0.05 * ((double)(x >> 11) / 9007199254740992.0 - 0.5);
  }
  Contactd__V1__Convex bc = CONTACTD__V1__CONVEX__INIT;
  bc.n_points = 3 * NBIG;
  bc.points = big;
  contactd__v1__register_geometry__init(&rg);
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CONVEX;
  rg.convex = &bc;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  char bigid[65];
  register_one(t, fd, &rg, "registerGeometry 1.1 MB convex", bigid);
  free(big);

  Env e = CONTACTD__V1__ENVELOPE__INIT, *r;
  if (convex[0] && cube[0]) {
    char unknown[65];
    memset(unknown, '0', 64);
    unknown[64] = 0;
    char *ids[3] = {convex, cube, unknown};
    Contactd__V1__HasGeometry hg = CONTACTD__V1__HAS_GEOMETRY__INIT;
    hg.n_geometry_ids = 3;
    hg.geometry_ids = ids;
    e.request_id = 2;
    e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
    e.has_geometry = &hg;
    if (call(t, fd, &e, CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY_REPLY, "hasGeometry", &r) == GOT_REPLY) {
      if (r->has_geometry_reply->n_missing != 1) wrong(t, "hasGeometry", "not exactly the unknown id missing");
      contactd__v1__envelope__free_unpacked(r, NULL);
    }
    /* the convex set pressed onto the cube's top; the cube on the plane */
    Contactd__V1__Body b[3], *bodies[3] = {&b[0], &b[1], &b[2]};
    Contactd__V1__Pose pose[3];
    Contactd__V1__Vec3 pos[3];
    tc_body(&b[0], &pose[0], &pos[0], 1, convex, 0, 0, 2 * h + 0.045 * scale);
    tc_body(&b[1], &pose[1], &pos[1], 2, cube, 0, 0, h - 0.001);
    tc_body(&b[2], &pose[2], &pos[2], 3, plane, 0, 0, 0);
    Contactd__V1__Pair p12 = CONTACTD__V1__PAIR__INIT, p23 = CONTACTD__V1__PAIR__INIT, *prs[2] = {&p12, &p23};
    p12.a = 1;
    p12.b = 2;
    p23.a = 2;
    p23.b = 3;
    Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
    q.n_bodies = 3;
    q.bodies = bodies;
    q.n_pairs = 2;
    q.pairs = prs;
    contactd__v1__envelope__init(&e);
    e.request_id = 3;
    e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
    e.contact_query = &q;
    if (call(t, fd, &e, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "catalogue contactQuery", &r) == GOT_REPLY) {
      Contactd__V1__ContactReply *cr = r->contact_reply;
      if (cr->n_results != 2 || !(cr->results[0]->wrench_a->force->z > 0) ||
          !(cr->results[1]->wrench_a->force->z > 0))
        wrong(t, "catalogue contactQuery", "a pair without its upward force");
      contactd__v1__envelope__free_unpacked(r, NULL);
    }
  }
  if (convex[0]) {
    char *ids[1] = {convex};
    Contactd__V1__ReleaseGeometry rl = CONTACTD__V1__RELEASE_GEOMETRY__INIT;
    rl.n_geometry_ids = 1;
    rl.geometry_ids = ids;
    contactd__v1__envelope__init(&e);
    e.request_id = 4;
    e.msg_case = CONTACTD__V1__ENVELOPE__MSG_RELEASE_GEOMETRY;
    e.release_geometry = &rl;
    if (call(t, fd, &e, CONTACTD__V1__ENVELOPE__MSG_RELEASE_REPLY, "releaseGeometry", &r) == GOT_REPLY) {
      if (r->release_reply->n_released != 1) wrong(t, "releaseGeometry", "the convex set was not released");
      contactd__v1__envelope__free_unpacked(r, NULL);
    }
  }
  close(fd);
}

/* A 200 answer to GET /metrics (resp, NUL-terminated): a whole exposition,
 * never one cut short where memory ran out: promtool accepts it and it ends
 * with the latency histogram's count. */
static void metrics_whole(tally *t, const char *resp) {
  const char *body = strstr(resp, "\r\n\r\n");
  const char *count = body ? strstr(body, "\ncontactd_request_latency_us_count ") : NULL;
  const char *end = count ? strchr(count + 1, '\n') : NULL;
  if (!end || end[1]) {
    wrong(t, "GET /metrics", "an exposition that does not end with the histogram's count");
    return;
  }
  char why[180]; /* promtool's first findings: the tally keeps 200 bytes */
  if (tc_promtool_check(body + 4, strlen(body + 4), why, sizeof why)) {
    wrong(t, "GET /metrics", why);
    return;
  }
  t->replies++;
}

/* GET /metrics: the whole response, or the connection closed without one
 * (no memory for it); never silence. */
static void metrics_round(tally *t) {
  int fd = connect_or_wrong(t, D.metrics_port);
  if (fd < 0) return;
  const char *req = "GET /metrics HTTP/1.0\r\n\r\n";
  if (tc_send_raw(fd, req, strlen(req))) {
    t->closed++;
    close(fd);
    return;
  }
  char buf[65536];
  size_t n = 0;
  struct pollfd pf = {fd, POLLIN, 0};
  for (;;) {
    if (poll(&pf, 1, 20000) <= 0) {
      wrong(t, "GET /metrics", "no response, yet the connection is open");
      break;
    }
    ssize_t k = recv(fd, buf + n, sizeof buf - 1 - n, 0);
    if (k <= 0) {
      buf[n] = 0;
      if (n == 0) t->closed++;
      else if (!strncmp(buf, "HTTP/1.0 200", 12) && strstr(buf, "contactd_up")) metrics_whole(t, buf);
      else wrong(t, "GET /metrics", "a response that is not the metrics");
      break;
    }
    n += (size_t)k;
    if (n == sizeof buf - 1) {
      wrong(t, "GET /metrics", "a response over 64 KiB");
      break;
    }
  }
  close(fd);
}

/* One client: its rounds, on its own thread. */
typedef struct client {
  pthread_t thread;
  int first, rounds;
  const char *sphere, *plane;
  tally t;
} client;

static void *client_main(void *arg) {
  client *c = arg;
  for (int k = c->first; k < c->first + c->rounds && !c->t.wrong; k++) {
    protobuf_round(&c->t, c->plane, k);
    json_round(&c->t, c->plane, k);
    scene_round(&c->t, c->sphere, c->plane);
    catalogue_round(&c->t, c->plane, k);
    metrics_round(&c->t);
  }
  return NULL;
}

/* Two clients for `rounds` rounds each; asserts that nothing went wrong
 * and returns the sum of their tallies. */
static tally run_clients(const char *sphere, const char *plane, int first, int rounds) {
  client c[2];
  for (int i = 0; i < 2; i++) {
    memset(&c[i], 0, sizeof c[i]);
    c[i].first = first + i * rounds;
    c[i].rounds = rounds;
    c[i].sphere = sphere;
    c[i].plane = plane;
    cr_assert_eq(pthread_create(&c[i].thread, NULL, client_main, &c[i]), 0);
  }
  tally sum;
  memset(&sum, 0, sizeof sum);
  for (int i = 0; i < 2; i++) {
    pthread_join(c[i].thread, NULL);
    sum.replies += c[i].t.replies;
    sum.errors += c[i].t.errors;
    sum.closed += c[i].t.closed;
    sum.oom += c[i].t.oom;
    if (!sum.other_error[0]) memcpy(sum.other_error, c[i].t.other_error, sizeof sum.other_error);
    if (c[i].t.wrong && !sum.wrong++) memcpy(sum.first_wrong, c[i].t.first_wrong, sizeof sum.first_wrong);
  }
  if (sum.wrong || !tc_alive(&D)) {
    char *l = td_read_log(&D);
    size_t n = l ? strlen(l) : 0;
    fprintf(stderr, "---- contactd log (end) ----\n%s\n---- end ----\n", l ? l + (n > 6000 ? n - 6000 : 0) : "");
    free(l);
  }
  cr_assert(tc_alive(&D), "the daemon is up");
  cr_assert_eq(sum.wrong, 0, "%d requests went wrong; the first: %s", sum.wrong, sum.first_wrong);
  return sum;
}

/* The force on the shared sphere 1 cm into the plane (fresh connection). */
static double reference_force(const char *sphere, const char *plane) {
  int fd = tc_connect_tcp(D.port);
  cr_assert_geq(fd, 0);
  tc_pair_query pq;
  tc_pair_query_init(&pq, 9, sphere, 0.09, plane, 0, 0);
  Env *r = tc_call(fd, &pq.env, 20000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "a clean query is answered");
  double fz = r->contact_reply->results[0]->wrench_a->force->z;
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(fd);
  return fz;
}

static void serve_with_faults(int one_in, int seed, int rounds) {
  char spec[64];
  snprintf(spec, sizeof spec, "serve:%d:%d", one_in, seed);
  setenv("CONTACTD_FAULTS", spec, 1);
  const char *why = NULL;
  const char *extra[] = {"--metrics-port", "0", NULL};
  cr_assert_eq(td_start(&D, CONTACTD_FAULTS_BIN, extra, &why), 0, "contactd_faults starts: %s", why);
  cr_assert_gt(D.metrics_port, 0);
  unsetenv("CONTACTD_FAULTS");
  int fd = tc_connect_tcp(D.port);
  char *sphere = tc_register_sphere(fd, 1, 0.1, 1e6, 0.012);
  char *plane = tc_register_halfspace(fd, 2, 0, 0);
  close(fd);
  cr_assert(sphere && plane);
  const double before = reference_force(sphere, plane);

  /* Each signal waits for the shim's line: handlers of two signals sent
   * close together can run at once, and an arm finishing after the disarm
   * would leave the faults on. */
  kill(D.pid, SIGUSR1);
  int armed = 0;
  for (int i = 0; i < 2000 && !(armed = tc_log_count(&D, "faults: armed") > 0); i++) usleep(10000);
  cr_assert(armed, "the shim says it is armed");
  tally t = run_clients(sphere, plane, 0, rounds);
  kill(D.pid, SIGUSR2);
  int reported = 0;
  for (int i = 0; i < 2000 && !(reported = tc_log_count(&D, " allocations failed") > 0); i++) usleep(10000);
  cr_assert(reported, "the shim reports its window");
  cr_expect_eq(tc_log_count(&D, "faults: 0 of "), 0, "some allocations failed");
  cr_log_info("1 in %d: %d replies, %d errors (%d out of memory), %d connections closed", one_in, t.replies,
              t.errors, t.oom, t.closed);
  cr_expect_eq(t.oom, t.errors, "every Error says \"out of memory\"; one said: %s", t.other_error);
  /* (at one in 400 a few failures may all land where nobody waits) */
  if (one_in <= 60) cr_expect_gt(t.errors + t.closed, 0, "the failures reached the clients");

  /* Nothing registered before is lost, the answers are the same, and
   * every request succeeds again. */
  fd = tc_connect_tcp(D.port);
  char *again = tc_register_sphere(fd, 3, 0.1, 1e6, 0.012);
  close(fd);
  cr_assert(again, "registering the same sphere again works");
  cr_expect_str_eq(again, sphere, "and finds it cached");
  cr_expect_eq(reference_force(sphere, plane), before, "the force is the same to the last bit");
  tally clean = run_clients(sphere, plane, 2 * rounds, 1);
  cr_expect_eq(clean.errors + clean.closed, 0, "once disarmed every request succeeds");
  free(again);
  free(sphere);
  free(plane);
  cr_expect_eq(td_stop(&D, 1), 0, "SIGTERM still ends the daemon cleanly");
}

Test(faults, serving_with_one_allocation_in_8_failing, .timeout = 600) { serve_with_faults(8, 1, 6); }

Test(faults, serving_with_one_allocation_in_25_failing, .timeout = 600) { serve_with_faults(25, 4, 6); }

Test(faults, serving_with_one_allocation_in_60_failing, .timeout = 600) { serve_with_faults(60, 2, 6); }

Test(faults, serving_with_one_allocation_in_400_failing, .timeout = 600) { serve_with_faults(400, 3, 6); }


/* Start the daemon with CONTACTD_FAULTS=spec; 1 if it became ready (d
 * running), 0 if it exited, which it must do cleanly: status 1, the
 * shim's failure and an error in the log, no sanitizer report. */
static int start_failing(tc_daemon *d, const char *spec, int k) {
  setenv("CONTACTD_FAULTS", spec, 1);
  const char *why = NULL;
  const char *extra[] = {"--metrics-port", "0", NULL};
  int started = td_start(d, CONTACTD_FAULTS_BIN, extra, &why) == 0;
  unsetenv("CONTACTD_FAULTS");
  if (started) return 1;
  cr_assert_eq(d->startup_status, 1, "%s: exit status %d, want 1; log:\n%s", spec, d->startup_status,
               d->startup_log);
  cr_assert(strstr(d->startup_log, "faults: allocation"), "%s: the shim failed allocation %d", spec, k);
  cr_assert(strstr(d->startup_log, "level=error"), "%s: an error is logged:\n%s", spec, d->startup_log);
  cr_assert(!strstr(d->startup_log, "Sanitizer"), "%s: no sanitizer report:\n%s", spec, d->startup_log);
  return 0;
}

/* Every allocation of startup fails in turn, for good (start:K) and alone
 * (once:K), until K is past the last one startup makes. */
Test(faults, startup_fails_cleanly_at_every_allocation, .timeout = 600) {
  int k = 0;
  for (;; k++) {
    cr_assert_lt(k, 10000, "startup makes fewer than 10,000 allocations");
    char spec[64];
    snprintf(spec, sizeof spec, "start:%d", k);
    tc_daemon d;
    if (!start_failing(&d, spec, k)) {
      snprintf(spec, sizeof spec, "once:%d", k);
      if (start_failing(&d, spec, k)) {
        /* ready although one allocation failed: it must serve normally */
        int fd = tc_connect_tcp(d.port);
        char *sphere = tc_register_sphere(fd, 1, 0.1, 1e6, 0.05);
        cr_expect(sphere, "%s: ready after a failure, and it serves", spec);
        free(sphere);
        close(fd);
        cr_assert_eq(td_stop(&d, 1), 0, "%s: then exits cleanly", spec);
      }
      continue;
    }
    /* Ready: either no allocation failed (k is past startup) or the one
     * that failed, and all after it, did not stop startup. */
    int failed = tc_log_count(&d, "faults: allocation") > 0;
    cr_assert_eq(td_stop(&d, 1), 0, "%s: a clean exit", spec);
    if (!failed) break;
  }
  cr_log_info("startup makes %d allocations; each one's failure was tried", k);
  cr_expect_gt(k, 3, "startup was really exercised");
}
