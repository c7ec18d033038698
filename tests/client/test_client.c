/* test_client.c — the C client library against a real contactd (TCP and
 * Unix socket): every call, success and error paths, streams, timeouts. */
#include <criterion/criterion.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cc_client.h"
#include "cc_scene.h"
#include "cc_test_daemon.h"

static cc_test_daemon D;
static cc_client *C;

static void setup(void) {
  cr_assert_eq(cc_test_daemon_start(&D), 0, "contactd did not start");
  cc_error e;
  cr_assert_eq(cc_connect(D.tcp_addr, NULL, &C, &e), 0, "connect: %s", e.message);
}

static void teardown(void) {
  cc_close(C);
  C = NULL;
  cr_assert_eq(cc_test_daemon_stop(&D), 0, "contactd exit status");
}

TestSuite(client, .init = setup, .fini = teardown, .timeout = 60);

static void reg_sphere(char id[CC_ID_MAX], double r, double E) {
  cc_shape s = {.kind = CC_SHAPE_SPHERE, .a = r, .modulus = E, .hint = r / 4};
  cc_error e;
  cr_assert_eq(cc_register_shape(C, &s, id, NULL, &e), 0, "register sphere: %s", e.message);
}

static void reg_floor(char id[CC_ID_MAX]) {
  cc_shape s = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1};
  cc_error e;
  cr_assert_eq(cc_register_shape(C, &s, id, NULL, &e), 0, "register half space: %s", e.message);
}

/* Ball (id 1) at height h above a rigid floor (id 2). */
static void ball_floor(cc_body b[2], const char *ball, const char *floor, double h) {
  memset(b, 0, 2 * sizeof *b);
  b[0].id = 1;
  b[0].geometry_id = ball;
  b[0].p[2] = h;
  b[1].id = 2;
  b[1].geometry_id = floor;
}

/* The state of the ball (id 1) alone, at height h. */
static void ball_state(cc_body *b, const char *ball, double h) {
  memset(b, 0, sizeof *b);
  b->id = 1;
  b->geometry_id = ball;
  b->p[2] = h;
}

/* Normal force of a compliant sphere (R, E, field E * depth / R) on a rigid
 * plane with its centre at height h. */
static double sphere_force(double R, double E, double h) {
  return 2 * M_PI * E / R * (R * (R * R - h * h) / 2 - (R * R * R - h * h * h) / 3);
}

Test(client, hello_over_tcp) {
  Contactd__V1__HelloReply *h;
  cc_error e;
  cr_assert_eq(cc_hello(C, "test_client", &h, &e), 0, "%s", e.message);
  cr_assert_eq(h->protocol_version, 1);
  cr_assert(h->server_version && strlen(h->server_version) > 0);
  cr_assert(h->limits && h->limits->max_frame_bytes > 0);
  int streams = 0;
  for (size_t i = 0; i < h->n_capabilities; i++) streams |= strcmp(h->capabilities[i], "streams") == 0;
  cr_assert(streams, "the server advertises streams");
  cc_free(h);
}

Test(client, hello_over_unix_socket) {
  cc_client *u;
  cc_error e;
  cr_assert_eq(cc_connect(D.unix_addr, NULL, &u, &e), 0, "%s", e.message);
  Contactd__V1__HelloReply *h;
  cr_assert_eq(cc_hello(u, "unix", &h, &e), 0, "%s", e.message);
  cr_assert_eq(h->protocol_version, 1);
  cc_free(h);
  cc_close(u);
}

Test(client, connect_refused_is_unavailable) {
  /* a port nobody listens on: bind one, learn it, close it */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  bind(fd, (struct sockaddr *)&a, sizeof a);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  close(fd);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(a.sin_port));
  cc_client *c = NULL;
  cc_error e;
  cr_assert_eq(cc_connect(addr, NULL, &c, &e), CC_EUNAVAILABLE);
  cr_assert_eq(e.remote, 0);
  cr_assert_null(c);
  cr_assert_eq(cc_connect("unix:/nonexistent/contactd.sock", NULL, &c, &e), CC_EUNAVAILABLE);
}

Test(client, bad_addresses_are_invalid_argument) {
  cc_client *c;
  cc_error e;
  cr_assert_eq(cc_connect("localhost", NULL, &c, &e), CC_EINVALID_ARGUMENT);
  cr_assert_eq(cc_connect("127.0.0.1:99999", NULL, &c, &e), CC_EINVALID_ARGUMENT);
  cr_assert_eq(cc_connect("[::1:7411", NULL, &c, &e), CC_EINVALID_ARGUMENT);
  cr_assert_eq(cc_connect("unix:", NULL, &c, &e), CC_EINVALID_ARGUMENT);
}

Test(client, read_timeout_is_deadline_exceeded) {
  /* a listener that never accepts: connect succeeds (backlog), no reply */
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  cr_assert_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  listen(fd, 4);
  socklen_t l = sizeof a;
  getsockname(fd, (struct sockaddr *)&a, &l);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(a.sin_port));
  cc_options o;
  cc_options_default(&o);
  o.timeout_ms = 150;
  cc_client *c;
  cc_error e;
  cr_assert_eq(cc_connect(addr, &o, &c, &e), 0, "%s", e.message);
  cr_assert_eq(cc_hello(c, "x", NULL, &e), CC_EDEADLINE_EXCEEDED);
  cr_assert_eq(e.remote, 0);
  cc_close(c);
  close(fd);
}

Test(client, register_is_content_addressed) {
  cc_shape s = {.kind = CC_SHAPE_SPHERE, .a = 0.05, .modulus = 1e5, .hint = 0.0125};
  char id1[CC_ID_MAX], id2[CC_ID_MAX];
  Contactd__V1__RegisterReply *r1, *r2;
  cc_error e;
  cr_assert_eq(cc_register_shape(C, &s, id1, &r1, &e), 0, "%s", e.message);
  cr_assert_eq(cc_register_shape(C, &s, id2, &r2, &e), 0, "%s", e.message);
  cr_assert_str_eq(id1, id2);
  cr_assert_geq(strlen(id1), 16);
  cr_assert_eq(r1->already_cached, 0);
  cr_assert_eq(r2->already_cached, 1);
  cr_assert(r1->stats && r1->stats->tetrahedra > 0);
  cr_assert_float_eq(r1->stats->max_pressure, 1e5, 1e-6 * 1e5);
  cc_free(r1);
  cc_free(r2);
  /* a different modulus is a different geometry */
  s.modulus = 2e5;
  cr_assert_eq(cc_register_shape(C, &s, id2, NULL, &e), 0, "%s", e.message);
  cr_assert_str_neq(id1, id2);
}

Test(client, register_every_primitive) {
  cc_shape shapes[] = {
      {.kind = CC_SHAPE_BOX, .a = 0.1, .b = 0.2, .c = 0.05, .modulus = 1e6, .hint = 0.05},
      {.kind = CC_SHAPE_CYLINDER, .a = 0.05, .b = 0.02, .modulus = 1e6, .hint = 0.02},
      {.kind = CC_SHAPE_CAPSULE, .a = 0.02, .b = 0.1, .modulus = 1e6, .hint = 0.01},
      {.kind = CC_SHAPE_ELLIPSOID, .a = 0.03, .b = 0.02, .c = 0.01, .modulus = 1e6, .hint = 0.01},
      {.kind = CC_SHAPE_HALF_SPACE, .modulus = 1e6, .slab = 0.1},
      {.kind = CC_SHAPE_BOX, .a = 0.1, .b = 0.1, .c = 0.1, .rigid = 1, .hint = 0.05, .friction = 0.5},
  };
  char ids[6][CC_ID_MAX];
  for (size_t i = 0; i < 6; i++) {
    cc_error e;
    cr_assert_eq(cc_register_shape(C, &shapes[i], ids[i], NULL, &e), 0, "shape %zu (%s): %s", i,
                 cc_shape_kind_name(shapes[i].kind), e.message);
    for (size_t k = 0; k < i; k++) cr_assert_str_neq(ids[i], ids[k]);
  }
}

Test(client, register_mesh_file_bytes) {
  /* a unit tetrahedron as OBJ, rigid */
  const char obj[] = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";
  cc_shape s = {.kind = CC_SHAPE_MESH_FILE, .data = obj, .size = sizeof obj - 1, .rigid = 1, .name = "tet.obj"};
  char id[CC_ID_MAX];
  Contactd__V1__RegisterReply *r;
  cc_error e;
  cr_assert_eq(cc_register_shape(C, &s, id, &r, &e), 0, "%s", e.message);
  cr_assert_eq(r->stats->triangles, 4);
  cr_assert_float_eq(r->stats->volume, 1.0 / 6, 1e-12);
  cc_free(r);
  /* garbage is the server's INVALID_ARGUMENT */
  s.data = "v 0 0\nf 1 2 9\n";
  s.size = strlen(s.data);
  cr_assert_eq(cc_register_shape(C, &s, id, NULL, &e), CC_EINVALID_ARGUMENT);
  cr_assert_eq(e.remote, 1);
}

Test(client, register_error_carries_server_code_and_field) {
  cc_shape s = {.kind = CC_SHAPE_SPHERE, .a = -1, .modulus = 1e5, .hint = 0.01};
  char id[CC_ID_MAX];
  cc_error e;
  cr_assert_eq(cc_register_shape(C, &s, id, NULL, &e), CC_EINVALID_ARGUMENT);
  cr_assert_eq(e.remote, 1);
  cr_assert(strstr(e.field, "radius"), "field = %s", e.field);
  cr_assert(strstr(e.message, "radius"), "message = %s", e.message);
  /* the connection stays usable */
  cr_assert_eq(cc_hello(C, "after error", NULL, &e), 0, "%s", e.message);
}

Test(client, has_and_release) {
  char id[CC_ID_MAX];
  reg_sphere(id, 0.05, 1e5);
  const char *ids[] = {id, "00000000000000000000000000000000deadbeef"};
  Contactd__V1__HasGeometryReply *h;
  cc_error e;
  cr_assert_eq(cc_has(C, ids, 2, &h, &e), 0, "%s", e.message);
  cr_assert_eq(h->n_missing, 1);
  cr_assert_str_eq(h->missing[0], ids[1]);
  cc_free(h);
  Contactd__V1__ReleaseReply *r;
  cr_assert_eq(cc_release(C, ids, 1, &r, &e), 0, "%s", e.message);
  cr_assert_eq(r->n_released, 1);
  cr_assert_str_eq(r->released[0], id);
  cc_free(r);
  cr_assert_eq(cc_release(C, ids, 1, &r, &e), 0, "%s", e.message);
  cr_assert_eq(r->n_released, 0);
  cr_assert_eq(r->n_unknown, 1);
  cc_free(r);
}

Test(client, query_sphere_on_floor) {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
  const double R = 0.05, E = 1e5, h = 0.045;
  reg_sphere(ball, R, E);
  reg_floor(floor);
  cc_body b[2];
  ball_floor(b, ball, floor, h);
  const uint32_t pairs[1][2] = {{1, 2}};
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.detail = CONTACTD__V1__DETAIL__DETAIL_PATCHES;
  Contactd__V1__ContactReply *rep;
  cc_error e;
  cr_assert_eq(cc_query_bodies(C, b, 2, pairs, 1, &opt, &rep, &e), 0, "%s", e.message);
  cr_assert_eq(rep->n_results, 1);
  const Contactd__V1__PairResult *r = rep->results[0];
  cr_assert_eq(r->a, 1);
  cr_assert_eq(r->b, 2);
  cr_assert_eq(r->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
  double fz = r->wrench_a->force->z, expect = sphere_force(R, E, h);
  cr_assert(fabs(fz - expect) < 0.15 * expect, "Fz %g vs analytic %g", fz, expect);
  cr_assert_float_eq(r->wrench_b->force->z, -fz, 1e-9 * fz);
  cr_assert_float_eq(r->area, M_PI * (R * R - h * h), 0.15 * M_PI * (R * R - h * h));
  cr_assert_eq(r->n_patches, 1);
  cr_assert(fabs(r->patches[0]->point->x) < 1e-9 && fabs(r->patches[0]->point->y) < 1e-9);
  cc_free(rep);
  /* apart: no contact */
  b[0].p[2] = 0.2;
  cr_assert_eq(cc_query_bodies(C, b, 2, pairs, 1, NULL, &rep, &e), 0, "%s", e.message);
  cr_assert_eq(rep->results[0]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_NONE);
  cc_free(rep);
  /* all pairs by the broad phase (npairs = 0) */
  b[0].p[2] = h;
  cr_assert_eq(cc_query_bodies(C, b, 2, NULL, 0, NULL, &rep, &e), 0, "%s", e.message);
  cr_assert_eq(rep->n_results, 1);
  cr_assert_eq(rep->results[0]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
  cc_free(rep);
}

/* The strain energy through the C client (QueryOptions.want_energy):
 * pi E (d^3/3 - d^4/(6R)) for the ball pressed d = R - h into the floor,
 * to 15 % on this coarse mesh, as the force. */
Test(client, query_strain_energy) {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
  const double R = 0.05, E = 1e5, h = 0.045, d = R - h;
  reg_sphere(ball, R, E);
  reg_floor(floor);
  cc_body b[2];
  ball_floor(b, ball, floor, h);
  const uint32_t pairs[1][2] = {{1, 2}};
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.want_energy = 1;
  Contactd__V1__ContactReply *rep;
  cc_error e;
  cr_assert_eq(cc_query_bodies(C, b, 2, pairs, 1, &opt, &rep, &e), 0, "%s", e.message);
  const Contactd__V1__PairResult *r = rep->results[0];
  double want = M_PI * E * (d * d * d / 3 - d * d * d * d / (6 * R));
  cr_expect_eq(r->energy, CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_EXACT);
  cr_expect(fabs(r->strain_energy - want) < 0.15 * want, "U %g vs %g", r->strain_energy, want);
  cc_free(rep);
}

/* Reduced contacts and a margin through the C client: a sliding ball
 * (friction, so forces have tangential parts) pressed into the floor with
 * opt.reduced_contacts = 4; cc_pair_reduced's points carry the pair's
 * wrench (force, and moment about A's origin with their couples) to 1e-9;
 * a ball with a 10 mm margin 4 mm above the floor is speculative
 * (cc_pair_speculative: the gap to 10 %, normal up, zero force). */
Test(client, query_reduced_and_speculative) {
  const double R = 0.05, E = 1e5, h = 0.046, gap = 0.004;
  char ball[CC_ID_MAX], near[CC_ID_MAX], floor[CC_ID_MAX];
  cc_shape sb = {.kind = CC_SHAPE_SPHERE, .a = R, .modulus = E, .hint = R / 4, .friction = 0.3};
  cc_shape sn = {.kind = CC_SHAPE_SPHERE, .a = R, .modulus = E, .hint = R / 4, .margin = 0.01};
  cc_shape sf = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1, .friction = 0.3};
  cc_error e;
  cr_assert_eq(cc_register_shape(C, &sb, ball, NULL, &e), 0, "%s", e.message);
  cr_assert_eq(cc_register_shape(C, &sn, near, NULL, &e), 0, "%s", e.message);
  cr_assert_eq(cc_register_shape(C, &sf, floor, NULL, &e), 0, "%s", e.message);
  cc_body b[3] = {{.id = 1, .geometry_id = ball, .p = {0, 0, h}, .v = {0.1, 0, 0}, .w = {0, 2, 1}},
                  {.id = 2, .geometry_id = near, .p = {0.3, 0, R + gap}},
                  {.id = 3, .geometry_id = floor}};
  const uint32_t pairs[2][2] = {{1, 3}, {2, 3}};
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.reduced_contacts = 4;
  Contactd__V1__ContactReply *rep;
  cr_assert_eq(cc_query_bodies(C, b, 3, pairs, 2, &opt, &rep, &e), 0, "%s", e.message);
  cr_assert_eq(rep->n_results, 2);
  const Contactd__V1__PairResult *r = rep->results[0];
  size_t n = cc_pair_reduced(r, NULL, 0);
  cr_assert(n >= 2 && n <= 4, "%zu reduced contacts on the ball's one patch", n);
  cc_reduced_contact pts[4];
  cr_assert_eq(cc_pair_reduced(r, pts, 1), n); /* copies one, counts all */
  cr_assert_eq(cc_pair_reduced(r, pts, n), n);
  double f[3] = {0}, m[3] = {0};
  for (size_t i = 0; i < n; i++) {
    const double *x = pts[i].position, *q = pts[i].force, d[3] = {x[0] - b[0].p[0], x[1] - b[0].p[1], x[2] - b[0].p[2]};
    for (int k = 0; k < 3; k++) f[k] += q[k];
    m[0] += d[1] * q[2] - d[2] * q[1] + pts[i].couple[0];
    m[1] += d[2] * q[0] - d[0] * q[2] + pts[i].couple[1];
    m[2] += d[0] * q[1] - d[1] * q[0] + pts[i].couple[2];
    cr_expect(pts[i].stiffness > 0 && pts[i].separation < 0 && fabs(pts[i].normal[2] - 1) < 1e-9,
              "point %zu: k %g phi %g n_z %.17g", i, pts[i].stiffness, pts[i].separation, pts[i].normal[2]);
    cr_expect_eq(pts[i].patch, 0);
  }
  const Contactd__V1__Vec3 *F = r->wrench_a->force, *T = r->wrench_a->torque;
  const double want_f[3] = {F ? F->x : 0, F ? F->y : 0, F ? F->z : 0};
  const double want_m[3] = {T ? T->x : 0, T ? T->y : 0, T ? T->z : 0};
  double fn = sqrt(want_f[0] * want_f[0] + want_f[1] * want_f[1] + want_f[2] * want_f[2]);
  cr_assert(fn > 0 && fabs(want_f[0]) > 0.1 * fn, "a sliding ball: |F| %g, F_x %g", fn, want_f[0]);
  for (int k = 0; k < 3; k++) {
    cr_expect(fabs(f[k] - want_f[k]) <= 1e-9 * fn, "force[%d]: %.17g vs %.17g", k, f[k], want_f[k]);
    cr_expect(fabs(m[k] - want_m[k]) <= 1e-9 * fn * R, "moment[%d]: %.17g vs %.17g", k, m[k], want_m[k]);
  }
  double ef = 0, em = 0;
  for (int k = 0; k < 3; k++) {
    ef = fmax(ef, fabs(f[k] - want_f[k]));
    em = fmax(em, fabs(m[k] - want_m[k]));
  }
  printf("reduced: %zu points, |F| %.6g N; force residual %.3g N, moment residual %.3g N m\n", n, fn, ef, em);
  cc_speculative sp = {0};
  cr_expect_eq(cc_pair_speculative(r, &sp), -1, "a pair in contact is not speculative");
  const Contactd__V1__PairResult *s = rep->results[1];
  cr_assert_eq(s->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SPECULATIVE, "status %d", s->status);
  cr_assert_eq(cc_pair_speculative(s, &sp), 0);
  cr_expect(fabs(sp.separation - gap) < 0.1 * gap, "separation %g vs gap %g", sp.separation, gap);
  cr_expect(sp.normal[2] > 0.9 && sp.stiffness > 0 && sp.faces > 0, "n_z %g k %g faces %d", sp.normal[2],
            sp.stiffness, sp.faces);
  printf("speculative: separation %.9g m (gap %g), stiffness %.6g N/m, %d faces\n", sp.separation, gap,
         sp.stiffness, sp.faces);
  cr_expect_eq(cc_pair_reduced(s, NULL, 0), 0);
  const Contactd__V1__Vec3 *sf0 = s->wrench_a ? s->wrench_a->force : NULL;
  cr_expect(!sf0 || (sf0->x == 0 && sf0->y == 0 && sf0->z == 0), "a speculative pair has no force");
  cc_free(rep);
}

Test(client, query_errors_keep_connection) {
  char ball[CC_ID_MAX];
  reg_sphere(ball, 0.05, 1e5);
  cc_body b[2];
  ball_floor(b, ball, "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", 0.045);
  const uint32_t pairs[1][2] = {{1, 2}};
  Contactd__V1__ContactReply *rep;
  cc_error e;
  cr_assert_eq(cc_query_bodies(C, b, 2, pairs, 1, NULL, &rep, &e), CC_ENOT_FOUND);
  cr_assert_eq(e.remote, 1);
  /* NaN pose */
  b[1].geometry_id = ball;
  b[0].p[0] = NAN;
  cr_assert_eq(cc_query_bodies(C, b, 2, pairs, 1, NULL, &rep, &e), CC_EINVALID_ARGUMENT);
  cr_assert(strstr(e.field, "bodies[0]"), "field = %s", e.field);
  /* pair naming a body that is not there */
  b[0].p[0] = 0;
  const uint32_t bad[1][2] = {{1, 7}};
  cr_assert_eq(cc_query_bodies(C, b, 2, bad, 1, NULL, &rep, &e), CC_EINVALID_ARGUMENT);
  cr_assert_eq(cc_hello(C, "still here", NULL, &e), 0, "%s", e.message);
}

Test(client, stats_count_requests_and_cache) {
  char ball[CC_ID_MAX];
  reg_sphere(ball, 0.05, 1e5);
  reg_sphere(ball, 0.05, 1e5);
  Contactd__V1__StatsReply *s;
  cc_error e;
  cr_assert_eq(cc_stats(C, &s, &e), 0, "%s", e.message);
  cr_assert_geq(s->requests, 2);
  cr_assert_eq(s->cache_entries, 1);
  cr_assert_eq(s->cache_builds, 1);
  cr_assert_eq(s->cache_hits, 1);
  cr_assert_eq(s->connections, 1);
  cr_assert_eq(s->n_worker_utilisation, 2);
  cc_free(s);
}

static void open_ball_stream(const char *ball, const char *floor, int latest, uint64_t *sid) {
  cc_body b[2];
  ball_floor(b, ball, floor, 0.045);
  const uint32_t pairs[1][2] = {{1, 2}};
  cc_error e;
  cr_assert_eq(cc_stream_open_bodies(C, b, 2, pairs, 1, NULL, latest, sid, &e), 0, "%s", e.message);
}

Test(client, stream_results_in_order) {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
  reg_sphere(ball, 0.05, 1e5);
  reg_floor(floor);
  uint64_t sid;
  open_ball_stream(ball, floor, 0, &sid);
  cc_error e;
  double prev = 0;
  for (int k = 1; k <= 10; k++) {
    cc_body s;
    ball_state(&s, ball, 0.0495 - 0.0005 * k); /* sinking: more force each step */
    cr_assert_eq(cc_stream_send(C, sid, (uint64_t)k, &s, 1, &e), 0, "%s", e.message);
  }
  for (int k = 1; k <= 10; k++) {
    Contactd__V1__StreamResult *r;
    cr_assert_eq(cc_stream_recv(C, -1, &r, &e), 0, "%s", e.message);
    cr_assert_eq(r->sequence, (uint64_t)k);
    cr_assert_eq(r->stream_id, sid);
    cr_assert_eq(r->n_results, 1);
    double fz = r->results[0]->wrench_a->force->z;
    cr_assert_gt(fz, prev);
    prev = fz;
    cc_free(r);
  }
  Contactd__V1__CloseStreamReply *cr;
  cr_assert_eq(cc_stream_close(C, sid, &cr, &e), 0, "%s", e.message);
  cr_assert_eq(cr->updates, 10);
  cr_assert_eq(cr->results, 10);
  cc_free(cr);
}

Test(client, stream_results_queued_across_blocking_calls) {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
  reg_sphere(ball, 0.05, 1e5);
  reg_floor(floor);
  uint64_t sid;
  open_ball_stream(ball, floor, 0, &sid);
  cc_error e;
  cc_body s;
  ball_state(&s, ball, 0.045);
  for (int k = 1; k <= 5; k++) cr_assert_eq(cc_stream_send(C, sid, (uint64_t)k, &s, 1, &e), 0);
  /* a blocking call: its reply comes after the five results (request order) */
  Contactd__V1__StatsReply *st;
  cr_assert_eq(cc_stats(C, &st, &e), 0, "%s", e.message);
  cc_free(st);
  for (int k = 1; k <= 5; k++) {
    Contactd__V1__StreamResult *r;
    cr_assert_eq(cc_stream_recv(C, 0, &r, &e), 0, "result %d: %s", k, e.message);
    cr_assert_eq(r->sequence, (uint64_t)k);
    cc_free(r);
  }
  Contactd__V1__StreamResult *r;
  cr_assert_eq(cc_stream_recv(C, 50, &r, &e), CC_EDEADLINE_EXCEEDED);
  cr_assert_eq(cc_stream_close(C, sid, NULL, &e), 0, "%s", e.message);
}

Test(client, stream_errors) {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
  reg_sphere(ball, 0.05, 1e5);
  reg_floor(floor);
  uint64_t sid;
  open_ball_stream(ball, floor, 0, &sid);
  cc_error e;
  cc_body s;
  ball_state(&s, ball, 0.045);
  cr_assert_eq(cc_stream_send(C, sid, 5, &s, 1, &e), 0);
  cr_assert_eq(cc_stream_send(C, sid, 5, &s, 1, &e), 0); /* not increasing */
  Contactd__V1__StreamResult *r;
  cr_assert_eq(cc_stream_recv(C, -1, &r, &e), 0, "%s", e.message);
  cr_assert_eq(r->sequence, 5);
  cc_free(r);
  cr_assert_eq(cc_stream_recv(C, -1, &r, &e), CC_EINVALID_ARGUMENT);
  cr_assert_eq(e.remote, 1);
  cr_assert(strstr(e.field, "sequence"), "field = %s", e.field);
  cr_assert_eq(cc_stream_close(C, sid, NULL, &e), 0, "%s", e.message);
  /* update on the closed stream */
  cr_assert_eq(cc_stream_send(C, sid, 6, &s, 1, &e), 0);
  cr_assert_eq(cc_stream_recv(C, -1, &r, &e), CC_EFAILED_PRECONDITION, "%s", e.message);
  /* closing again, and a stream that never existed */
  cr_assert_eq(cc_stream_close(C, sid, NULL, &e), CC_EFAILED_PRECONDITION);
  cr_assert_eq(cc_stream_close(C, 999, NULL, &e), CC_ENOT_FOUND);
  /* a stream over an unknown geometry fails to open */
  uint64_t sid2;
  cc_body b[2];
  ball_floor(b, ball, "0123", 0.045);
  const uint32_t pairs[1][2] = {{1, 2}};
  cr_assert_eq(cc_stream_open_bodies(C, b, 2, pairs, 1, NULL, 0, &sid2, &e), CC_ENOT_FOUND);
}

/* cc_stream_next: each stream's own results, in order, whatever arrives
 * first; cc_stream_latest: the newest, the older ones discarded; the
 * result says whether a newer update was sent; a timeout never makes an
 * older result come out as new; cc_call_timeout bounds one call. */
Test(client, stream_next_and_latest_per_stream) {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
  reg_sphere(ball, 0.05, 1e5);
  reg_floor(floor);
  uint64_t a, b;
  open_ball_stream(ball, floor, 0, &a);
  open_ball_stream(ball, floor, 0, &b);
  cc_error e;
  cc_body sa, sb;
  ball_state(&sa, ball, 0.045);
  ball_state(&sb, ball, 0.040);
  for (int k = 1; k <= 20; k++) {
    cr_assert_eq(cc_stream_send(C, a, (uint64_t)k, &sa, 1, &e), 0);
    cr_assert_eq(cc_stream_send(C, b, (uint64_t)k, &sb, 1, &e), 0);
  }
  Contactd__V1__StreamResult *r;
  cc_stream_info info;
  double fb = 0, fa = 0;
  for (int k = 1; k <= 20; k++) { /* b's first: a's wait in the queue */
    cr_assert_eq(cc_stream_next(C, b, -1, &r, &info, &e), 0, "%s", e.message);
    cr_assert_eq(r->stream_id, b);
    cr_assert_eq(r->sequence, (uint64_t)k);
    cr_assert_eq(info.stale, k < 20);
    if (k == 1) fb = r->results[0]->wrench_a->force->z;
    cr_assert_eq(r->results[0]->wrench_a->force->z, fb);
    cc_free(r);
  }
  cr_assert_eq(cc_stream_latest(C, a, -1, &r, &info, &e), 0, "%s", e.message);
  fa = r->results[0]->wrench_a->force->z;
  cr_assert_eq(r->stream_id, a);
  cr_assert_lt(fa, fb, "a's ball is higher: its own results");
  uint64_t got = r->sequence;
  cc_free(r);
  while (got < 20) { /* the rest of a's may still be on the way */
    cr_assert_eq(cc_stream_latest(C, a, -1, &r, &info, &e), 0, "%s", e.message);
    cr_assert_gt(r->sequence, got);
    got = r->sequence;
    cc_free(r);
  }
  cr_assert_eq(info.stale, 0);
  cr_assert_eq(cc_stream_next(C, a, 50, &r, &info, &e), CC_EDEADLINE_EXCEEDED);
  /* a timeout, then the result: handed out in order, never older than one handed out */
  cr_assert_eq(cc_stream_send(C, a, 21, &sa, 1, &e), 0);
  int rc = cc_stream_next(C, a, 0, &r, &info, &e);
  if (rc == 0) cc_free(r);
  else cr_assert_eq(rc, CC_EDEADLINE_EXCEEDED);
  cr_assert_eq(cc_stream_send(C, a, 22, &sa, 1, &e), 0);
  uint64_t last = rc == 0 ? 21 : 20;
  while (last < 22) {
    cr_assert_eq(cc_stream_next(C, a, -1, &r, &info, &e), 0, "%s", e.message);
    cr_assert_gt(r->sequence, last);
    cr_assert_eq(info.stale, r->sequence < 22);
    last = r->sequence;
    cc_free(r);
  }
  /* an error about one of a's updates comes from a's reader, naming it */
  cr_assert_eq(cc_stream_send(C, a, 22, &sa, 1, &e), 0);
  cr_assert_eq(cc_stream_next(C, a, -1, &r, &info, &e), CC_EINVALID_ARGUMENT);
  cr_assert_eq(e.stream_id, a);
  cr_assert_eq(e.sequence, 22);
  cr_assert_eq(cc_stream_close(C, a, NULL, &e), 0, "%s", e.message);
  cr_assert_eq(cc_stream_close(C, b, NULL, &e), 0, "%s", e.message);
  /* one call's own timeout */
  Contactd__V1__Stats st = CONTACTD__V1__STATS__INIT;
  Contactd__V1__Envelope env = CONTACTD__V1__ENVELOPE__INIT, *rep = NULL;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_STATS;
  env.stats = &st;
  cr_assert_eq(cc_call_timeout(C, &env, &rep, 5000, &e), 0, "%s", e.message);
  cc_free(rep);
}

Test(client, stream_latest_only_drops_overtaken) {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
  reg_sphere(ball, 0.05, 1e5);
  reg_floor(floor);
  uint64_t sid;
  open_ball_stream(ball, floor, 1, &sid);
  cc_error e;
  cc_body s;
  ball_state(&s, ball, 0.045);
  const int N = 40;
  for (int k = 1; k <= N; k++) cr_assert_eq(cc_stream_send(C, sid, (uint64_t)k, &s, 1, &e), 0);
  uint64_t got = 0, dropped = 0, last = 0;
  while (last < (uint64_t)N) {
    Contactd__V1__StreamResult *r;
    cr_assert_eq(cc_stream_recv(C, -1, &r, &e), 0, "%s", e.message);
    cr_assert_gt(r->sequence, last);
    last = r->sequence;
    got++;
    dropped += r->dropped_updates;
    cc_free(r);
  }
  cr_assert_eq(got + dropped, (uint64_t)N, "results %llu + dropped %llu", (unsigned long long)got,
               (unsigned long long)dropped);
  Contactd__V1__CloseStreamReply *cr;
  cr_assert_eq(cc_stream_close(C, sid, &cr, &e), 0, "%s", e.message);
  cr_assert_eq(cr->dropped_updates, dropped);
  cc_free(cr);
}

Test(client, connection_lost_is_unavailable) {
  cc_error e;
  cr_assert_eq(cc_hello(C, "x", NULL, &e), 0);
  cr_assert_eq(cc_test_daemon_stop(&D), 0);
  int rc = cc_hello(C, "x", NULL, &e);
  cr_assert_eq(rc, CC_EUNAVAILABLE, "rc %d: %s", rc, e.message);
  cr_assert_eq(e.remote, 0);
  cr_assert_eq(cc_test_daemon_start(&D), 0); /* for teardown */
}

Test(client, scene_parse_errors_name_the_path) {
  cc_scene s;
  char err[512];
  cr_assert_eq(cc_scene_parse("{\"geometries\":{\"g\":{\"shape\":\"sphere\"}},\"bodies\":[]}", NULL, &s, err, sizeof err), -1);
  cr_assert(strstr(err, "geometries.g.radius"), "%s", err);
  cr_assert_eq(cc_scene_parse("{\"geometries\":{\"g\":{\"shape\":\"half-space\",\"rigid\":true}},"
                              "\"bodies\":[{\"geometry\":\"g\",\"position\":[1,2]}]}", NULL, &s, err, sizeof err), -1);
  cr_assert(strstr(err, "bodies[0].position"), "%s", err);
  cr_assert_eq(cc_scene_parse("{\"geometries\":{\"g\":{\"shape\":\"half-space\",\"rigid\":true}},"
                              "\"bodies\":[{\"geometry\":\"g\"}],\"pairs\":[[\"body1\",\"nobody\"]]}", NULL, &s, err,
                              sizeof err), -1);
  cr_assert(strstr(err, "pairs[0][1]"), "%s", err);
  cr_assert_eq(cc_scene_parse("{\"geometries\":{\"g\":{\"shape\":\"half-space\",\"rigid\":true}},"
                              "\"bodies\":[{\"geometry\":\"g\",\"rpy_deg\":[0,0,90]}],\"options\":{\"detail\":\"surface\"}}",
                              NULL, &s, err, sizeof err), 0, "%s", err);
  cr_assert_float_eq(s.bodies[0].state.q[0], sqrt(0.5), 1e-12);
  cr_assert_float_eq(s.bodies[0].state.q[3], sqrt(0.5), 1e-12);
  cr_assert_eq(s.options.detail, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
  cr_assert_eq(s.all_pairs, 1);
  cc_scene_free(&s);
}

/* cc_ensure_shapes: shapes without an id are registered; shapes whose id
 * the server holds are not sent again (one HasGeometry), and an id it does
 * not hold (another server's, say) is registered again and replaced. */
Test(client, ensure_registers_only_what_the_server_lacks) {
  cc_shape a = {.kind = CC_SHAPE_SPHERE, .a = 0.1, .modulus = 1e5, .hint = 0.025};
  cc_shape b = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1};
  const cc_shape *shapes[2] = {&a, &b};
  char ida[CC_ID_MAX] = "", idb[CC_ID_MAX] = "";
  char *ids[2] = {ida, idb};
  size_t sent = 0;
  cc_error e;
  cr_assert_eq(cc_ensure_shapes(C, shapes, ids, 2, &sent, &e), 0, "%s", e.message);
  cr_expect_eq(sent, 2);
  cr_expect(ida[0] && idb[0]);
  char keep[CC_ID_MAX];
  snprintf(keep, sizeof keep, "%s", ida);
  cr_assert_eq(cc_ensure_shapes(C, shapes, ids, 2, &sent, &e), 0, "%s", e.message);
  cr_expect_eq(sent, 0, "both held: nothing registered");
  cr_expect_str_eq(ida, keep);
  snprintf(idb, CC_ID_MAX, "%064d", 0); /* an id this server never saw */
  cr_assert_eq(cc_ensure_shapes(C, shapes, ids, 2, &sent, &e), 0, "%s", e.message);
  cr_expect_eq(sent, 1, "only the missing one is registered");
  cr_expect_str_neq(idb, "0000000000000000000000000000000000000000000000000000000000000000");
}

/* Numbers that do not fit their uint32 fields are refused (a filter's bits)
 * or match nothing (a pair's body id), never converted out of range (found
 * by the libFuzzer target fuzz_scene under UBSan). */
Test(client, scene_parse_refuses_numbers_outside_uint32) {
  cc_scene s;
  char err[512];
  const char *g = "{\"geometries\":{\"g\":{\"shape\":\"half-space\",\"rigid\":true}},";
  char buf[512];
  snprintf(buf, sizeof buf, "%s\"bodies\":[{\"geometry\":\"g\",\"filter\":{\"group\":1.5e62,\"mask\":3}}]}", g);
  cr_assert_eq(cc_scene_parse(buf, NULL, &s, err, sizeof err), -1);
  cr_assert(strstr(err, "bodies[0].filter.group"), "%s", err);
  snprintf(buf, sizeof buf, "%s\"bodies\":[{\"geometry\":\"g\",\"filter\":{\"group\":1,\"mask\":-1}}]}", g);
  cr_assert_eq(cc_scene_parse(buf, NULL, &s, err, sizeof err), -1);
  cr_assert(strstr(err, "bodies[0].filter.mask"), "%s", err);
  snprintf(buf, sizeof buf, "%s\"bodies\":[{\"geometry\":\"g\"},{\"geometry\":\"g\"}],"
           "\"pairs\":[[1,4294967298]]}", g);
  cr_assert_eq(cc_scene_parse(buf, NULL, &s, err, sizeof err), -1);
  cr_assert(strstr(err, "pairs[0][1]: no such body"), "%s", err);
  snprintf(buf, sizeof buf, "%s\"bodies\":[{\"geometry\":\"g\",\"filter\":{\"group\":4294967295,\"mask\":0}}]}", g);
  cr_assert_eq(cc_scene_parse(buf, NULL, &s, err, sizeof err), 0, "%s", err);
  cr_assert_eq(s.bodies[0].group, 4294967295u);
  cr_assert_eq(s.bodies[0].mask, 0u);
  cc_scene_free(&s);
}

/* A scene file's geometry "margin" and options.reduced_contacts reach the
 * server: the ball near the floor comes back speculative, the one pressed
 * into it with at most K reduced contacts; bad values name their path. */
Test(client, scene_margin_and_reduced_contacts) {
  const char *json =
      "{\"geometries\":{\"ball\":{\"shape\":\"sphere\",\"radius\":0.05,\"modulus\":1e5,\"hint\":0.0125},"
      "\"near\":{\"shape\":\"sphere\",\"radius\":0.05,\"modulus\":1e5,\"hint\":0.0125,\"margin\":0.01},"
      "\"floor\":{\"shape\":\"half-space\",\"rigid\":true}},"
      "\"bodies\":[{\"name\":\"ball\",\"geometry\":\"ball\",\"position\":[0,0,0.046]},"
      "{\"name\":\"near\",\"geometry\":\"near\",\"position\":[0.3,0,0.054]},"
      "{\"name\":\"floor\",\"geometry\":\"floor\"}],"
      "\"pairs\":[[\"ball\",\"floor\"],[\"near\",\"floor\"]],\"options\":{\"reduced_contacts\":3}}";
  cc_scene s;
  char err[512];
  cc_error e;
  cr_assert_eq(cc_scene_parse(json, NULL, &s, err, sizeof err), 0, "%s", err);
  cr_assert_eq(s.options.reduced_contacts, 3u);
  cr_assert_eq(s.geoms[1].shape.margin, 0.01);
  cr_assert_eq(cc_scene_register(C, &s, &e), 0, "%s", e.message);
  cr_expect_str_neq(s.geoms[0].id, s.geoms[1].id, "the margin is part of the geometry's id");
  cc_scene_msgs m;
  cr_assert_eq(cc_scene_msgs_build(&s, NULL, NULL, 0, &m), 0);
  Contactd__V1__ContactReply *rep;
  cr_assert_eq(cc_query(C, &m.query, &rep, &e), 0, "%s", e.message);
  cr_assert_eq(rep->n_results, 2);
  size_t n = cc_pair_reduced(rep->results[0], NULL, 0);
  cr_expect(n >= 1 && n <= 3, "%zu reduced contacts with K = 3", n);
  cr_expect_eq(rep->results[1]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SPECULATIVE, "status %d",
               rep->results[1]->status);
  cc_free(rep);
  cc_scene_msgs_free(&m);
  cc_scene_free(&s);
  const char *bad[][2] = {{"\"options\":{\"reduced_contacts\":2.5}", "options.reduced_contacts"},
                          {"\"options\":{\"reduced_contacts\":-1}", "options.reduced_contacts"},
                          {"\"options\":{\"reduced_contacts\":\"4\"}", "options.reduced_contacts"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char buf[512];
    snprintf(buf, sizeof buf, "{\"geometries\":{\"g\":{\"shape\":\"half-space\",\"rigid\":true}},"
             "\"bodies\":[{\"geometry\":\"g\"}],%s}", bad[i][0]);
    cr_expect_eq(cc_scene_parse(buf, NULL, &s, err, sizeof err), -1, "%s", bad[i][0]);
    cr_expect(strstr(err, bad[i][1]), "%s: %s", bad[i][0], err);
  }
  cr_expect_eq(cc_scene_parse("{\"geometries\":{\"g\":{\"shape\":\"sphere\",\"radius\":1,\"margin\":\"x\"}},"
                              "\"bodies\":[{\"geometry\":\"g\"}]}", NULL, &s, err, sizeof err), -1);
  cr_expect(strstr(err, "geometries.g.margin"), "%s", err);
}
