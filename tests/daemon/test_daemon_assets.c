/* test_daemon_assets.c — terrain (heightField) and mesh assets (a compliant
 * surface from OBJ bytes) end to end against the real contactd: register,
 * query, broad phase, errors with field paths. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

static tc_daemon D;
static void up(void) { tc_start(&D, NULL); }
static void down(void) { cr_expect_eq(tc_stop(&D), 0, "contactd exits 0 on SIGTERM"); }

/* Send a RegisterGeometry; skip RegisterProgress messages (counted). */
static Env *reg(int fd, uint64_t id, Contactd__V1__RegisterGeometry *rg, int *progress) {
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = rg;
  cr_assert_eq(tc_send(fd, &e), 0);
  for (;;) {
    Env *r = tc_recv(fd, 120000);
    cr_assert(r, "no reply");
    cr_assert_eq(r->request_id, id);
    if (r->msg_case != CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS) return r;
    cr_expect(r->register_progress->fraction >= 0 && r->register_progress->fraction <= 1);
    if (progress) (*progress)++;
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
}

static const char *err_of(const Env *r) {
  return r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? r->error->message : "";
}

/* The bowl z = 0.2 (x^2 + y^2) sampled at 1 m on [-5, 5]^2. */
static double H[121];
static void bowl(Contactd__V1__HeightField *h, Contactd__V1__Vec3 *o) {
  for (int j = 0; j < 11; j++)
    for (int i = 0; i < 11; i++) H[j * 11 + i] = 0.2 * ((i - 5) * (i - 5) + (j - 5) * (j - 5));
  contactd__v1__height_field__init(h);
  contactd__v1__vec3__init(o);
  o->x = o->y = -5;
  h->heights = H;
  h->n_heights = 121;
  h->nx = h->ny = 11;
  h->dx = h->dy = 1;
  h->origin = o;
  h->continuity = CONTACTD__V1__CONTINUITY__CONTINUITY_C1;
}

static Env *query(int fd, uint64_t id, const char *ga, double xa, double ya, double za, const char *gb, int all) {
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, ga, xa, ya, za);
  tc_body(&b2, &p2, &v2, 2, gb, 0, 0, 0);
  Contactd__V1__Pair pr = CONTACTD__V1__PAIR__INIT, *prs[1] = {&pr};
  pr.a = 1;
  pr.b = 2;
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = 2;
  q.bodies = bodies;
  if (all) {
    q.all_pairs = &ap;
  } else {
    q.n_pairs = 1;
    q.pairs = prs;
  }
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  Env *r = tc_call(fd, &e, 60000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "%s", err_of(r));
  return r;
}

Test(daemon_assets, heightfield_register_query_broadphase, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  Contactd__V1__HeightField h;
  Contactd__V1__Vec3 o;
  bowl(&h, &o);
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD;
  rg.height_field = &h;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  Env *r = reg(fd, 1, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  char *terrain = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* same content, same id; C2 is a different geometry */
  r = reg(fd, 2, &rg, NULL);
  cr_expect_str_eq(r->register_reply->geometry_id, terrain);
  cr_expect(r->register_reply->already_cached);
  contactd__v1__envelope__free_unpacked(r, NULL);
  h.continuity = CONTACTD__V1__CONTINUITY__CONTINUITY_C2;
  r = reg(fd, 3, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  cr_expect_str_neq(r->register_reply->geometry_id, terrain);
  contactd__v1__envelope__free_unpacked(r, NULL);
  h.continuity = CONTACTD__V1__CONTINUITY__CONTINUITY_C1;
  /* bad grids: a NaN height, too few samples, compliant */
  H[37] = NAN;
  r = reg(fd, 4, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT);
  cr_expect_str_eq(r->error->field, "registerGeometry.heightField.heights");
  cr_expect(strstr(r->error->message, "height 37"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  H[37] = 0.2 * (4 + 4);
  h.nx = 3;
  r = reg(fd, 5, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_str_eq(r->error->field, "registerGeometry.heightField.nx");
  contactd__v1__envelope__free_unpacked(r, NULL);
  h.nx = 11;
  char *ball = tc_register_sphere(fd, 6, 0.5, 1e6, 0.05);
  /* a compliant ball resting 2 cm deep at the bottom of the bowl */
  r = query(fd, 7, ball, 0, 0, 0.48, terrain, 0);
  Contactd__V1__PairResult *p = r->contact_reply->results[0];
  cr_expect_eq(p->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
  cr_expect_gt(p->wrench_a->force->z, 0.0, "the terrain pushes the ball up");
  cr_expect_lt(fabs(p->wrench_a->force->x), 1e-6 * p->wrench_a->force->z, "symmetric bowl");
  double fz = p->wrench_a->force->z;
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* all pairs: the terrain is one large body */
  r = query(fd, 8, ball, 0, 0, 0.48, terrain, 1);
  cr_assert_eq(r->contact_reply->n_results, 1);
  cr_expect_eq(r->contact_reply->results[0]->a, 1);
  cr_expect_eq(r->contact_reply->results[0]->b, 2);
  cr_expect_float_eq(r->contact_reply->results[0]->wrench_a->force->z, fz, 1e-9);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = query(fd, 9, ball, 1, 2, 40, terrain, 1);
  cr_expect_eq(r->contact_reply->n_results, 0, "far above the terrain: no candidate pair");
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = query(fd, 10, ball, 30, 0, 1, terrain, 1);
  cr_expect_eq(r->contact_reply->n_results, 0, "beside the grid: no candidate pair");
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* a rigid sphere gets point contact from the terrain */
  Contactd__V1__Sphere s = CONTACTD__V1__SPHERE__INIT;
  s.radius = 0.5;
  Contactd__V1__RegisterGeometry rs = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rs.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rs.sphere = &s;
  rs.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rs.resolution_hint = 0.05;
  r = reg(fd, 11, &rs, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  char *rball = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = query(fd, 12, rball, 0, 0, 0.48, terrain, 0);
  p = r->contact_reply->results[0];
  cr_expect_eq(p->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT);
  cr_expect_eq(p->model, CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT);
  cr_assert(p->penetration);
  cr_expect_float_eq(p->penetration->depth, 0.02, 2e-3);
  cr_expect_gt(p->penetration->normal->z, 0.99);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(terrain);
  free(ball);
  free(rball);
  close(fd);
}

/* The terrain issue's size, 4096 x 4096 float64 heights (134 MB on the
 * wire), registers over a socket with the default limits. The grid is the
 * plane z = 0.1 x (dx = dy = 0.05 m): a compliant ball pressed 2 cm into it
 * near the far corner of the grid is pushed up and back along -x at the
 * plane's slope, so the samples arrived in their place. */
Test(daemon_assets, heightfield_4096_squared_with_default_limits, .init = up, .fini = down, .timeout = 300) {
  const int n = 4096;
  double *z = malloc((size_t)n * n * sizeof *z);
  cr_assert(z);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) z[(size_t)j * n + i] = 0.1 * (i * 0.05);
  Contactd__V1__HeightField h = CONTACTD__V1__HEIGHT_FIELD__INIT;
  h.heights = z;
  h.n_heights = (size_t)n * n;
  h.nx = h.ny = n;
  h.dx = h.dy = 0.05;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD;
  rg.height_field = &h;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  int fd = tc_connect_tcp(D.port);
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  Env *r = reg(fd, 1, &rg, NULL);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  free(z);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  cr_log_info("4096^2 heightfield: sent, decoded, hashed and built in %.0f ms (build %.0f ms)",
              (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-6,
              r->register_reply->stats ? r->register_reply->stats->build_time_us * 1e-3 : -1.0);
  cr_assert(r->register_reply->stats);
  cr_expect_eq(r->register_reply->stats->vertices, (uint64_t)n * n);
  char *terrain = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  char *ball = tc_register_sphere(fd, 2, 0.5, 1e6, 0.05);
  cr_assert(ball);
  const double x = 200, y = 190; /* samples i = 4000, j = 3800 */
  r = query(fd, 3, ball, x, y, 0.1 * x + 0.5 * sqrt(1 + 0.01) - 0.02, terrain, 0);
  Contactd__V1__PairResult *p = r->contact_reply->results[0];
  cr_expect_eq(p->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
  const Contactd__V1__Vec3 *f = p->wrench_a->force;
  cr_expect_gt(f->z, 0.0, "the terrain pushes the ball up");
  cr_expect_float_eq(f->x / f->z, -0.1, 2e-3, "along the plane's normal (-0.1, 0, 1): %g", f->x / f->z);
  cr_expect_lt(fabs(f->y), 1e-3 * f->z);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(terrain);
  free(ball);
  close(fd);
}

/* A torus (R, r) as OBJ text: nu x nv quads split into outward triangles. */
static char *torus_obj(double R, double rr, int nu, int nv, size_t *len) {
  size_t cap = (size_t)(nu * nv) * 120 + 64, n = 0;
  char *s = malloc(cap);
  n += (size_t)snprintf(s + n, cap - n, "# torus R=%g r=%g\n", R, rr);
  for (int i = 0; i < nu; i++)
    for (int j = 0; j < nv; j++) {
      double u = 2 * M_PI * i / nu, v = 2 * M_PI * j / nv;
      n += (size_t)snprintf(s + n, cap - n, "v %.17g %.17g %.17g\n", (R + rr * cos(v)) * cos(u),
                            (R + rr * cos(v)) * sin(u), rr * sin(v));
    }
  for (int i = 0; i < nu; i++)
    for (int j = 0; j < nv; j++) {
      int a = i * nv + j + 1, b = ((i + 1) % nu) * nv + j + 1, c = ((i + 1) % nu) * nv + (j + 1) % nv + 1,
          d = i * nv + (j + 1) % nv + 1;
      n += (size_t)snprintf(s + n, cap - n, "f %d %d %d\nf %d %d %d\n", a, b, c, a, c, d);
    }
  *len = n;
  return s;
}

Test(daemon_assets, compliant_torus_from_obj_against_rigid_peg, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  size_t len;
  char *obj = torus_obj(0.05, 0.02, 48, 24, &len);
  Contactd__V1__MeshFile mf = CONTACTD__V1__MESH_FILE__INIT;
  mf.data.data = (uint8_t *)obj;
  mf.data.len = len;
  mf.format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_OBJ;
  mf.name = "torus.obj";
  Contactd__V1__SurfaceOptions so = CONTACTD__V1__SURFACE_OPTIONS__INIT;
  so.edge_length = 0.006;
  so.field = CONTACTD__V1__FIELD_KIND__FIELD_KIND_LAPLACE;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE;
  rg.mesh_file = &mf;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = 1e6;
  rg.surface = &so;
  rg.want_progress = 1;
  int progress = 0;
  Env *r = reg(fd, 1, &rg, &progress);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  char *torus = strdup(r->register_reply->geometry_id);
  Contactd__V1__GeometryStats *gs = r->register_reply->stats;
  cr_expect_gt(gs->tetrahedra, 1000);
  double vol = 2 * M_PI * M_PI * 0.05 * 0.02 * 0.02;
  cr_expect_lt(fabs(gs->volume - vol) / vol, 0.05, "tet volume %g vs torus %g", gs->volume, vol);
  cr_expect_float_eq(gs->max_pressure, 1e6, 1e-6, "Laplace core at the modulus");
  cr_expect_gt(progress, 0, "RegisterProgress messages before the reply");
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* the Distance field is a different geometry */
  so.field = CONTACTD__V1__FIELD_KIND__FIELD_KIND_DISTANCE;
  rg.want_progress = 0;
  r = reg(fd, 2, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  cr_expect_str_neq(r->register_reply->geometry_id, torus);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* a rigid peg (cylinder r = 1 cm along z) 5 mm into the hole's wall at x = 0.03 */
  Contactd__V1__Cylinder cy = CONTACTD__V1__CYLINDER__INIT;
  cy.radius = 0.01;
  cy.length = 0.1;
  Contactd__V1__RegisterGeometry rp = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rp.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CYLINDER;
  rp.cylinder = &cy;
  rp.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rp.resolution_hint = 0.002;
  r = reg(fd, 3, &rp, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  char *peg = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* torus = body 1 at (-0.025, 0, 0): its hole's wall at x = 0.005 is 5 mm inside the peg at the origin */
  r = query(fd, 4, torus, -0.025, 0, 0, peg, 0);
  Contactd__V1__PairResult *p = r->contact_reply->results[0];
  cr_expect_eq(p->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
  cr_expect_gt(p->area, 0.0);
  cr_expect_gt(p->wrench_a->force->x, 0.0, "the peg pushes the torus's wall towards +x");
  cr_expect_lt(fabs(p->wrench_a->force->y), 1e-3 * fabs(p->wrench_a->force->x), "symmetric about y = 0");
  cr_expect_float_eq(p->wrench_b->force->x, -p->wrench_a->force->x, 1e-9 * fabs(p->wrench_a->force->x));
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* an open surface for compliant use: an error naming the field, or the hull on request */
  /* a unit cube without its top */
  const char *open_obj = "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n"
                         "f 1 4 3\nf 1 3 2\nf 1 2 6\nf 1 6 5\nf 2 3 7\nf 2 7 6\nf 3 4 8\nf 3 8 7\n"
                         "f 4 1 5\nf 4 5 8\n";
  mf.data.data = (uint8_t *)open_obj;
  mf.data.len = strlen(open_obj);
  mf.name = "open.obj";
  so.edge_length = 0.1;
  r = reg(fd, 5, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT);
  cr_expect(strstr(r->error->field, "registerGeometry.meshFile"), "%s", r->error->field);
  contactd__v1__envelope__free_unpacked(r, NULL);
  so.use_convex_hull_if_open = 1;
  r = reg(fd, 6, &rg, NULL);
  cr_expect_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* a parse error names the file and the line */
  const char *bad = "v 0 0 0\nv 1 0 0\nf 1 2 9\n";
  mf.data.data = (uint8_t *)bad;
  mf.data.len = strlen(bad);
  mf.name = "bad.obj";
  r = reg(fd, 7, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT);
  cr_expect_str_eq(r->error->field, "registerGeometry.meshFile.data");
  cr_expect(strstr(r->error->message, "bad.obj: OBJ line 3"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(obj);
  free(torus);
  free(peg);
  close(fd);
}

/* Contact models through the wire: a mixed scene answers every pair with the model
 * that produced it (proto HYDROELASTIC_WITH_FALLBACK = 3 is the engine's 0). */
Test(daemon_assets, mixed_scene_every_pair_has_its_model, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  char *soft = tc_register_sphere(fd, 1, 0.1, 1e6, 0.02);
  Contactd__V1__Sphere s = CONTACTD__V1__SPHERE__INIT;
  s.radius = 0.1;
  Contactd__V1__RegisterGeometry rs = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rs.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rs.sphere = &s;
  rs.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rs.resolution_hint = 0.02;
  Env *r = reg(fd, 2, &rs, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  char *hard = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  char *plane = tc_register_halfspace(fd, 3, 0, 0);
  Contactd__V1__Body b1, b2, b3, *bodies[3] = {&b1, &b2, &b3};
  Contactd__V1__Pose p1, p2, p3;
  Contactd__V1__Vec3 v1, v2, v3;
  tc_body(&b1, &p1, &v1, 1, soft, 0, 0, 0.09);
  tc_body(&b2, &p2, &v2, 2, hard, 1, 0, 0.09);
  tc_body(&b3, &p3, &v3, 3, plane, 0, 0, 0);
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = 3;
  q.bodies = bodies;
  q.all_pairs = &ap;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 4;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  r = tc_call(fd, &e, 60000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "%s", err_of(r));
  cr_assert_eq(r->contact_reply->n_results, 2);
  Contactd__V1__PairResult *a = r->contact_reply->results[0], *b = r->contact_reply->results[1];
  cr_expect_eq(a->a, 1);
  cr_expect_eq(a->b, 3);
  cr_expect_eq(a->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
  cr_expect_eq(a->model, CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_HYDROELASTIC);
  cr_expect_gt(a->wrench_a->force->z, 0.0);
  cr_expect_eq(b->a, 2);
  cr_expect_eq(b->b, 3);
  cr_expect_eq(b->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT);
  cr_expect_eq(b->model, CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT);
  cr_assert(b->penetration);
  cr_expect_float_eq(b->penetration->depth, 0.01, 1e-9);
  cr_expect_float_eq(b->penetration->normal->z, 1.0, 1e-9);
  cr_expect_gt(b->wrench_a->force->z, 0.0);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* explicit pairs: the compliant pair asked for POINT gets POINT; the rigid
   * pair asked for the fallback (value 3) gets POINT too */
  Contactd__V1__Pair x = CONTACTD__V1__PAIR__INIT, y = CONTACTD__V1__PAIR__INIT, *prs[2] = {&x, &y};
  x.a = 1;
  x.b = 3;
  x.contact_model = CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT;
  y.a = 2;
  y.b = 3;
  y.contact_model = CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_HYDROELASTIC_WITH_FALLBACK;
  q.all_pairs = NULL;
  q.n_pairs = 2;
  q.pairs = prs;
  e.request_id = 5;
  r = tc_call(fd, &e, 60000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "%s", err_of(r));
  a = r->contact_reply->results[0];
  b = r->contact_reply->results[1];
  cr_expect_eq(a->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT);
  cr_expect_eq(a->model, CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT);
  cr_expect_eq(b->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT);
  cr_expect_eq(b->model, CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(soft);
  free(hard);
  free(plane);
  close(fd);
}

/* A Gmsh MSH 2.2 tet file with a user per-vertex pressure field. */
Test(daemon_assets, msh_file_with_user_vertex_pressure, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  /* the unit corner tet split at its centroid (node 5) into 4 positive tets */
  const char *msh = "$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n5\n1 0 0 0\n2 1 0 0\n3 0 1 0\n4 0 0 1\n"
                    "5 0.25 0.25 0.25\n$EndNodes\n$Elements\n5\n1 15 2 0 1 1\n2 4 2 0 1 5 2 3 4\n"
                    "3 4 2 0 1 1 5 3 4\n4 4 2 0 1 1 2 5 4\n5 4 2 0 1 1 2 3 5\n$EndElements\n";
  Contactd__V1__MeshFile mf = CONTACTD__V1__MESH_FILE__INIT;
  mf.data.data = (uint8_t *)msh;
  mf.data.len = strlen(msh);
  mf.format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_MSH;
  mf.name = "corner.msh";
  double pv[5] = {0, 0, 0, 0, 2e5};
  Contactd__V1__DoubleArray vp = CONTACTD__V1__DOUBLE_ARRAY__INIT;
  vp.values = pv;
  vp.n_values = 5;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE;
  rg.mesh_file = &mf;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = 1e6;
  rg.vertex_pressure = &vp;
  Env *r = reg(fd, 1, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  cr_expect_eq(r->register_reply->stats->tetrahedra, 4);
  cr_expect_float_eq(r->register_reply->stats->max_pressure, 2e5, 1e-6, "the user's field, not E");
  cr_expect_float_eq(r->register_reply->stats->volume, 1.0 / 6, 1e-12);
  char *id = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* without the field: the distance field scaled by E, a different id */
  rg.vertex_pressure = NULL;
  r = reg(fd, 2, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  cr_expect_str_neq(r->register_reply->geometry_id, id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* a count that does not match the file, and a field not zero on the boundary */
  rg.vertex_pressure = &vp;
  vp.n_values = 4;
  r = reg(fd, 3, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT);
  cr_expect_str_eq(r->error->field, "registerGeometry.vertexPressure");
  cr_expect(strstr(r->error->message, "4 values for 5 vertices"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  vp.n_values = 5;
  pv[1] = 1e3;
  r = reg(fd, 4, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT);
  cr_expect_str_eq(r->error->field, "registerGeometry.meshFile");
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* PLY is refused up front */
  mf.format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_PLY;
  r = reg(fd, 5, &rg, NULL);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__UNIMPLEMENTED);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(id);
  close(fd);
}
