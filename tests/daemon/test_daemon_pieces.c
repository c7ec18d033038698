/* test_daemon_pieces.c — a rigid TriMesh registered with convex pieces
 * (TriMesh.convex_pieces) end to end against the real contactd: the
 * pieces change the geometry id, the point contact comes from the pieces
 * (Penetration.pieces_b / contacts) instead of the hull (hull_b), and
 * compliant meshes with pieces are INVALID_ARGUMENT with the field path. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

static tc_daemon D;
static void up(void) { tc_start(&D, NULL); }
static void down(void) { cr_expect_eq(tc_stop(&D), 0, "contactd exits 0 on SIGTERM"); }

static const char *err_of(const Env *r) {
  return r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? r->error->message : "";
}

/* L block [0,2]x[0,1] u [0,1]x[0,2] x [0,1]; pieces = its two boxes. */
static double V[36], P[2][24];
static int32_t T[60];
static Contactd__V1__TriMesh M;
static Contactd__V1__ConvexPiece C[2], *CP[2] = {&C[0], &C[1]};

static void lblock(int with_pieces) {
  static const double out[6][2] = {{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}};
  static const int fan[4][3] = {{3, 4, 5}, {3, 5, 0}, {3, 0, 1}, {3, 1, 2}};
  static const double box[2][2][3] = {{{0, 0, 0}, {2, 1, 1}}, {{0, 1, 0}, {1, 2, 1}}};
  int nt = 0;
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 2; k++) {
      V[3 * (6 * k + i)] = out[i][0];
      V[3 * (6 * k + i) + 1] = out[i][1];
      V[3 * (6 * k + i) + 2] = k;
    }
  for (int f = 0; f < 4; f++) {
    int32_t tri[6] = {6 + fan[f][0], 6 + fan[f][1], 6 + fan[f][2], fan[f][0], fan[f][2], fan[f][1]};
    memcpy(T + 3 * nt, tri, sizeof tri);
    nt += 2;
  }
  for (int i = 0; i < 6; i++) {
    int j = (i + 1) % 6;
    int32_t tri[6] = {i, j, 6 + j, i, 6 + j, 6 + i};
    memcpy(T + 3 * nt, tri, sizeof tri);
    nt += 2;
  }
  for (int p = 0; p < 2; p++) {
    for (int c = 0; c < 8; c++) {
      P[p][3 * c] = box[p][c & 1][0];
      P[p][3 * c + 1] = box[p][(c >> 1) & 1][1];
      P[p][3 * c + 2] = box[p][(c >> 2) & 1][2];
    }
    contactd__v1__convex_piece__init(&C[p]);
    C[p].points = P[p];
    C[p].n_points = 24;
  }
  contactd__v1__tri_mesh__init(&M);
  M.vertices = V;
  M.n_vertices = 36;
  M.triangles = T;
  M.n_triangles = (size_t)3 * nt;
  M.n_convex_pieces = with_pieces ? 2 : 0;
  M.convex_pieces = with_pieces ? CP : NULL;
}

static Env *reg_l(int fd, uint64_t id, int with_pieces, int compliant) {
  lblock(with_pieces);
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH;
  rg.tri_mesh = &M;
  rg.compliance =
      compliant ? CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT : CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rg.modulus = compliant ? 1e6 : 0;
  rg.resolution_hint = 0.5;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  cr_assert_eq(tc_send(fd, &e), 0);
  for (;;) {
    Env *r = tc_recv(fd, 60000);
    cr_assert(r, "no reply");
    if (r->msg_case != CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS) return r;
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
}

static char *reg_ok(int fd, uint64_t id, int with_pieces) {
  Env *r = reg_l(fd, id, with_pieces, 0);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  char *s = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
  return s;
}

/* Sphere (body 1) at (x, y, 0.5) against the L (body 2) at the origin. */
static Env *query(int fd, uint64_t id, const char *ball, double x, double y, const char *l) {
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, ball, x, y, 0.5);
  tc_body(&b2, &p2, &v2, 2, l, 0, 0, 0);
  Contactd__V1__Pair pr = CONTACTD__V1__PAIR__INIT, *prs[1] = {&pr};
  pr.a = 1;
  pr.b = 2;
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = 2;
  q.bodies = bodies;
  q.n_pairs = 1;
  q.pairs = prs;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  Env *r = tc_call(fd, &e, 60000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "%s", err_of(r));
  cr_assert_eq(r->contact_reply->n_results, 1);
  return r;
}

Test(daemon_pieces, l_block_pieces_vs_hull, .init = up, .fini = down) {
  int fd = tc_connect_tcp(D.port);
  char *lp = reg_ok(fd, 1, 1), *lh = reg_ok(fd, 2, 0);
  cr_expect_str_neq(lp, lh, "the pieces are part of the geometry's content");
  char *again = reg_ok(fd, 3, 1);
  cr_expect_str_eq(again, lp);
  Contactd__V1__Sphere s = CONTACTD__V1__SPHERE__INIT;
  s.radius = 0.2;
  Contactd__V1__RegisterGeometry rs = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rs.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rs.sphere = &s;
  rs.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rs.resolution_hint = 0.05;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 4;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rs;
  Env *r = tc_call(fd, &e, 60000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s", err_of(r));
  char *ball = strdup(r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);

  /* in the notch: the pieces give 0.05 m along +y, the hull 0.2 + 0.35/sqrt(2) */
  r = query(fd, 5, ball, 1.5, 1.15, lp);
  Contactd__V1__PairResult *p = r->contact_reply->results[0];
  cr_assert_eq(p->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT);
  cr_assert(p->penetration);
  cr_expect_float_eq(p->penetration->depth, 0.05, 1e-7);
  cr_expect_float_eq(p->penetration->normal->y, 1.0, 1e-7);
  cr_expect_eq(p->penetration->pieces_b, 2);
  cr_expect_eq(p->penetration->pieces_a, 0);
  cr_expect_eq(p->penetration->contacts, 1);
  cr_expect_eq(p->penetration->hull_b, 0);
  contactd__v1__envelope__free_unpacked(r, NULL);

  r = query(fd, 6, ball, 1.5, 1.15, lh);
  p = r->contact_reply->results[0];
  cr_assert(p->penetration);
  cr_expect_float_eq(p->penetration->depth, 0.2 + 0.35 / sqrt(2.0), 1e-6);
  cr_expect_eq(p->penetration->hull_b, 1);
  cr_expect_eq(p->penetration->pieces_b, 0);
  cr_expect_eq(p->penetration->contacts, 1);
  contactd__v1__envelope__free_unpacked(r, NULL);

  /* in the notch's corner: two contacts from the pieces, summed */
  r = query(fd, 7, ball, 1.1, 1.15, lp);
  p = r->contact_reply->results[0];
  cr_assert(p->penetration);
  cr_expect_eq(p->penetration->contacts, 2);
  cr_expect_float_eq(p->penetration->depth, 0.1, 1e-7);
  cr_expect_float_eq(p->wrench_a->force->y / p->wrench_a->force->x, 0.5, 1e-6);
  contactd__v1__envelope__free_unpacked(r, NULL);

  /* a compliant mesh cannot take pieces */
  r = reg_l(fd, 8, 1, 1);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT);
  cr_expect(strstr(r->error->message, "convexPieces") != NULL || strstr(r->error->field, "convexPieces") != NULL,
            "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(lp);
  free(lh);
  free(again);
  free(ball);
}
