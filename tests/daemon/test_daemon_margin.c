/* test_daemon_margin.c — margins over the wire (RegisterGeometry.margin,
 * CONTACT_STATUS_SPECULATIVE, PairResult.speculative) against the real
 * contactd: a compliant sphere with a margin above a rigid half space, the
 * id, the broad phase, JSON, compliant meshes (a tet mesh, a tetrahedralised
 * surface) with margins, and margins refused where they cannot work. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

TestSuite(margin_wire, .init = tc_suite_up, .fini = tc_suite_down, .timeout = 120);

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
  Env *r = tc_call(tc_suite_fd, &e, 60000);
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
  Env *r = tc_call(tc_suite_fd, &q.env, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "a contact reply");
  return r;
}

Test(margin_wire, speculative_within_the_margin) {
  Env *reg = register_sphere(DELTA, 1, 1), *reg0 = register_sphere(0, 1, 2);
  cr_assert_eq(reg->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  cr_assert_eq(reg0->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  const char *s = reg->register_reply->geometry_id, *s0 = reg0->register_reply->geometry_id;
  cr_expect_str_neq(s, s0, "the margin is part of the id");
  char *p = tc_register_halfspace(tc_suite_fd, 3, 0, 0);
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
  int fj = tc_connect_tcp(tc_suite_daemon.port);
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
  cr_expect(strstr(r->error->message, "only compliant geometries with a tet mesh take a margin") &&
                strstr(r->error->message, "rigid sphere"),
            "%s", r->error->message);
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

/* The cube [0, 0.1]^3 as a tet mesh: 2^3 cells, Kuhn's six tets each,
 * positively oriented; v (27 * 3), t (48 * 4). */
static void cube_tets(double *v, int32_t *t) {
  static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int q = 0; q < 27; q++) v[3 * q] = 0.05 * (q / 9), v[3 * q + 1] = 0.05 * (q / 3 % 3), v[3 * q + 2] = 0.05 * (q % 3);
  int nt = 0;
  for (int c = 0; c < 8; c++)
    for (int p = 0; p < 6; p++) {
      int x[3] = {c >> 2 & 1, c >> 1 & 1, c & 1}, tv[4];
      for (int s = 0; s < 4; s++) {
        if (s > 0) x[perm[p][s - 1]]++;
        tv[s] = x[0] * 9 + x[1] * 3 + x[2];
      }
      double a[3], b[3], d[3];
      for (int k = 0; k < 3; k++) {
        a[k] = v[3 * tv[1] + k] - v[3 * tv[0] + k];
        b[k] = v[3 * tv[2] + k] - v[3 * tv[0] + k];
        d[k] = v[3 * tv[3] + k] - v[3 * tv[0] + k];
      }
      double det = a[0] * (b[1] * d[2] - b[2] * d[1]) - a[1] * (b[0] * d[2] - b[2] * d[0]) +
                   a[2] * (b[0] * d[1] - b[1] * d[0]);
      if (det < 0) {
        int s = tv[0];
        tv[0] = tv[1];
        tv[1] = s;
      }
      memcpy(t + 4 * nt++, tv, sizeof tv);
    }
}

static Env *register_msg(Contactd__V1__RegisterGeometry *rg, uint64_t id) {
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = rg;
  Env *r = tc_call(tc_suite_fd, &e, 60000);
  cr_assert(r, "a reply");
  return r;
}

/* A compliant tet mesh, a compliant closed surface (tetrahedralised by
 * the server) and an OBJ mesh file of it, with margins: speculative 5 mm above a plane, found by the
 * broad phase (bounding spheres grown by the margin), with the separation
 * of the flat bottom; the same force in contact as without the margin. */
Test(margin_wire, compliant_meshes) {
  double v[81];
  int32_t t[192];
  cube_tets(v, t);
  Contactd__V1__TetMesh m = CONTACTD__V1__TET_MESH__INIT;
  m.n_vertices = 81;
  m.vertices = v;
  m.n_tets = 192;
  m.tets = t;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TET_MESH;
  rg.tet_mesh = &m;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = E;
  rg.margin = DELTA;
  Env *tm = register_msg(&rg, 20);
  cr_assert_eq(tm->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s",
               tm->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? tm->error->message : "");
  rg.margin = 0;
  Env *tm0 = register_msg(&rg, 21);
  cr_assert_eq(tm0->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  /* the cube's surface, 12 triangles, outward */
  static const double cv[24] = {0, 0, 0, 0.1, 0, 0, 0.1, 0.1, 0, 0, 0.1, 0, 0, 0, 0.1, 0.1, 0, 0.1, 0.1, 0.1, 0.1, 0, 0.1, 0.1};
  static const int32_t ct[36] = {0, 2, 1, 0, 3, 2, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4,
                                 1, 2, 6, 1, 6, 5, 2, 3, 7, 2, 7, 6, 3, 0, 4, 3, 4, 7};
  Contactd__V1__TriMesh tri = CONTACTD__V1__TRI_MESH__INIT;
  tri.n_vertices = 24;
  tri.vertices = (double *)cv;
  tri.n_triangles = 36;
  tri.triangles = (int32_t *)ct;
  Contactd__V1__RegisterGeometry rs = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rs.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH;
  rs.tri_mesh = &tri;
  rs.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rs.modulus = E;
  rs.resolution_hint = 0.025;
  rs.margin = DELTA;
  Env *sm = register_msg(&rs, 22);
  cr_assert_eq(sm->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s",
               sm->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? sm->error->message : "");
  static const char obj[] = "v 0 0 0\nv 0.1 0 0\nv 0.1 0.1 0\nv 0 0.1 0\nv 0 0 0.1\nv 0.1 0 0.1\nv 0.1 0.1 0.1\n"
                            "v 0 0.1 0.1\nf 1 4 3 2\nf 5 6 7 8\nf 1 2 6 5\nf 2 3 7 6\nf 3 4 8 7\nf 4 1 5 8\n";
  Contactd__V1__MeshFile mf = CONTACTD__V1__MESH_FILE__INIT;
  mf.data.data = (uint8_t *)obj;
  mf.data.len = sizeof obj - 1;
  mf.format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_OBJ;
  mf.name = "cube.obj";
  Contactd__V1__RegisterGeometry rf = rs;
  rf.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE;
  rf.mesh_file = &mf;
  rf.resolution_hint = 0.02;
  Env *fm = register_msg(&rf, 24);
  cr_assert_eq(fm->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, "%s",
               fm->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? fm->error->message : "");
  char *p = tc_register_halfspace(tc_suite_fd, 23, 0, 0);
  cr_assert(p);
  const char *ids[3] = {tm->register_reply->geometry_id, sm->register_reply->geometry_id,
                        fm->register_reply->geometry_id};
  for (int k = 0; k < 3; k++)
    for (int all = 0; all < 2; all++) {
      Env *r = query(ids[k], p, 0.005, all); /* the cube's bottom 5 mm above the plane */
      cr_assert_eq(r->contact_reply->n_results, 1, "mesh %d: the pair (all pairs: %d)", k, all);
      const Contactd__V1__PairResult *pr = r->contact_reply->results[0];
      cr_expect_eq(pr->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SPECULATIVE, "mesh %d: status %d", k,
                   pr->status);
      cr_assert(pr->speculative, "the speculative contact");
      cr_expect(fabs(pr->speculative->separation - 0.005) < 1e-3, "mesh %d: separation %g", k,
                pr->speculative->separation);
      cr_expect_eq(pr->wrench_a->force->z, 0.0);
      contactd__v1__envelope__free_unpacked(r, NULL);
    }
  Env *a = query(ids[0], p, -0.01, 0), *b = query(tm0->register_reply->geometry_id, p, -0.01, 0);
  cr_expect_eq(a->contact_reply->results[0]->status, CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE);
  cr_expect_gt(a->contact_reply->results[0]->wrench_a->force->z, 0.0);
  cr_expect_eq(a->contact_reply->results[0]->wrench_a->force->z, b->contact_reply->results[0]->wrench_a->force->z);
  contactd__v1__envelope__free_unpacked(a, NULL);
  contactd__v1__envelope__free_unpacked(b, NULL);
  contactd__v1__envelope__free_unpacked(tm, NULL);
  contactd__v1__envelope__free_unpacked(tm0, NULL);
  contactd__v1__envelope__free_unpacked(sm, NULL);
  contactd__v1__envelope__free_unpacked(fm, NULL);
  free(p);
}

/* Margins on geometries without a tet mesh are refused naming
 * registerGeometry.margin, and the server stays up. */
Test(margin_wire, refused_without_a_tet_mesh) {
  static const double cv[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  static const int32_t ct[12] = {0, 2, 1, 0, 1, 3, 1, 2, 3, 2, 0, 3};
  Contactd__V1__TriMesh tri = CONTACTD__V1__TRI_MESH__INIT;
  tri.n_vertices = 12;
  tri.vertices = (double *)cv;
  tri.n_triangles = 12;
  tri.triangles = (int32_t *)ct;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH;
  rg.tri_mesh = &tri;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rg.margin = DELTA;
  Env *r = register_msg(&rg, 30);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR, "a rigid mesh takes no margin");
  cr_expect_str_eq(r->error->field, "registerGeometry.margin");
  cr_expect(strstr(r->error->message, "rigid triMesh"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  Contactd__V1__HalfSpace h = CONTACTD__V1__HALF_SPACE__INIT;
  Contactd__V1__RegisterGeometry rh = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rh.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE;
  rh.half_space = &h;
  rh.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rh.modulus = E;
  rh.margin = DELTA;
  r = register_msg(&rh, 31);
  cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_ERROR, "a compliant half space takes no margin");
  cr_expect_str_eq(r->error->field, "registerGeometry.margin");
  cr_expect(strstr(r->error->message, "no tet mesh to inflate"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  r = register_sphere(DELTA, 1, 32); /* the server is still up */
  cr_expect_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  contactd__v1__envelope__free_unpacked(r, NULL);
}
