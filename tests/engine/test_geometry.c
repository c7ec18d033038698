/* test_geometry.c — tet and triangle mesh building and validation, property
 * checks, half spaces. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ce_test_util.h"

/* Unit cube [0,1]^3: corner index = x + 2y + 4z, centre = vertex 8. */
static double cube_v[9 * 3];
static const int32_t cube_tri[12][3] = {
    {0, 2, 3}, {0, 3, 1}, /* z = 0 */
    {4, 5, 7}, {4, 7, 6}, /* z = 1 */
    {0, 1, 5}, {0, 5, 4}, /* y = 0 */
    {2, 6, 7}, {2, 7, 3}, /* y = 1 */
    {0, 4, 6}, {0, 6, 2}, /* x = 0 */
    {1, 3, 7}, {1, 7, 5}, /* x = 1 */
};
static const double cube_normal[12][3] = {{0, 0, -1}, {0, 0, -1}, {0, 0, 1},  {0, 0, 1},  {0, -1, 0}, {0, -1, 0},
                                          {0, 1, 0},  {0, 1, 0},  {-1, 0, 0}, {-1, 0, 0}, {1, 0, 0},  {1, 0, 0}};

static void make_cube(double *v) {
  for (int i = 0; i < 8; i++) {
    v[3 * i] = i & 1;
    v[3 * i + 1] = (i >> 1) & 1;
    v[3 * i + 2] = (i >> 2) & 1;
  }
  v[24] = v[25] = v[26] = 0.5;
}

/* 12 tets from the centre to every boundary triangle. */
static void cube_tets(int32_t t[12][4]) {
  for (int f = 0; f < 12; f++) {
    t[f][0] = 8;
    for (int j = 0; j < 3; j++) t[f][j + 1] = cube_tri[f][j];
  }
}

static void cube_pressure(double *p, double E) {
  for (int i = 0; i < 8; i++) p[i] = 0;
  p[8] = E;
}

static ce_props compliant(double E) { return ce_test_props(CE_COMPLIANT, E, 0.1); }
static ce_props rigid(void) { return ce_test_props(CE_RIGID, 0, 0.1); }

/* Builds the centred cube tet mesh after `edit` had a chance to break it. */
static ce_errno build_cube_tet(int32_t (*t)[4], int32_t nt, double *v, int32_t nv, double *p, ce_geometry **g,
                               ce_error *err) {
  ce_props pr = compliant(1e5);
  return ce_geometry_from_tetmesh(v, nv, &t[0][0], nt, p, &pr, g, err);
}

#define EXPECT_ERR(want, e, err, substr)                                                                      \
  do {                                                                                                        \
    ce_errno got_ = (e);                                                                                      \
    cr_assert_eq(got_, (want), "expected %s, got %s (%s)", ce_errname(want), ce_errname(got_), (err).message); \
    cr_assert((err).code == (want));                                                                          \
    cr_assert(strstr((err).message, (substr)) != NULL, "message '%s' lacks '%s'", (err).message, (substr)); \
  } while (0)

/* ---- properties ------------------------------------------------------- */

Test(geometry, props_check_rules) {
  ce_error err;
  ce_props p = compliant(-1);
  EXPECT_ERR(CE_EINVAL, ce_props_check(&p, 0, 0, &err), err, "modulus must be finite and > 0 (got -1)");
  p.modulus = NAN;
  EXPECT_ERR(CE_ENONFINITE, ce_props_check(&p, 0, 0, &err), err, "modulus");
  p.modulus = 0;
  EXPECT_ERR(CE_EINVAL, ce_props_check(&p, 0, 0, &err), err, "modulus");
  p = compliant(1e6);
  p.compliance = (ce_compliance)7;
  EXPECT_ERR(CE_EINVAL, ce_props_check(&p, 0, 0, &err), err, "compliance");
  p = compliant(1e6);
  p.material.friction = -0.1;
  EXPECT_ERR(CE_EINVAL, ce_props_check(&p, 0, 0, &err), err, "friction must be finite and >= 0 (got -0.1)");
  p = compliant(1e6);
  p.material.dissipation = INFINITY;
  EXPECT_ERR(CE_ENONFINITE, ce_props_check(&p, 0, 0, &err), err, "dissipation");
  p = compliant(1e6);
  p.hint = 0;
  cr_assert_eq(ce_props_check(&p, 0, 0, &err), CE_OK);
  EXPECT_ERR(CE_EINVAL, ce_props_check(&p, 1, 0, &err), err, "hint");
  p.hint = 0.1;
  EXPECT_ERR(CE_EINVAL, ce_props_check(&p, 1, 1, &err), err, "slab thickness");
  p.slab_thickness = 0.2;
  cr_assert_eq(ce_props_check(&p, 1, 1, &err), CE_OK);
  /* a rigid body's modulus is not looked at */
  p = rigid();
  p.modulus = -5;
  cr_assert_eq(ce_props_check(&p, 0, 0, &err), CE_OK);
}

/* ---- the linear field helper ----------------------------------------- */

Test(geometry, tet_linear_field_is_exact_on_kuhn_cube) {
  /* Kuhn split of the unit cube: 6 tets along the 0-7 diagonal. */
  static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  double total = 0;
  for (int k = 0; k < 6; k++) {
    ce_vec3 x[4];
    double p[4];
    int idx = 0;
    x[0] = ce_v3(0, 0, 0);
    for (int j = 0; j < 3; j++) {
      idx |= 1 << perm[k][j];
      x[j + 1] = ce_v3(idx & 1, (idx >> 1) & 1, (idx >> 2) & 1);
    }
    double vol = ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0]))) / 6;
    total += fabs(vol);
    for (int i = 0; i < 4; i++) p[i] = 3 * x[i].x + 2 * x[i].y + x[i].z + 5;
    double off = 0;
    ce_vec3 g = ce_tet_linear_field(x, p, &off);
    cr_assert(fabs(g.x - 3) < 1e-12 && fabs(g.y - 2) < 1e-12 && fabs(g.z - 1) < 1e-12,
              "tet %d gradient (%g, %g, %g)", k, g.x, g.y, g.z);
    cr_assert(fabs(off - 5) < 1e-12, "tet %d offset %g", k, off);
  }
  cr_assert(fabs(total - 1) < 1e-12);
}

/* ---- tet meshes: success ---------------------------------------------- */

Test(geometry, cube_tetmesh_fields_volume_adjacency) {
  make_cube(cube_v);
  int32_t t[12][4];
  cube_tets(t);
  double p[9];
  const double E = 2.5e5;
  cube_pressure(p, E);
  ce_error err;
  ce_geometry *g = NULL;
  ce_props pr = compliant(E);
  pr.material.dissipation = 3;
  pr.material.friction = 0.4;
  ce_errno e = ce_geometry_from_tetmesh(cube_v, 9, &t[0][0], 12, p, &pr, &g, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  cr_assert(fabs(g->volume - 1) < 1e-12, "volume %.17g", g->volume);
  cr_assert_eq(g->modulus, E);
  cr_assert_eq(g->material.friction, 0.4);
  cr_assert_eq(g->material.dissipation, 3);
  cr_assert(fabs(g->scale - sqrt(3)) < 1e-15);
  /* p = E at the centre, 0 on the face: gradient = -2E * outward normal. */
  for (int k = 0; k < 12; k++) {
    ce_vec3 gr = g->tet.grad[k];
    cr_assert(fabs(gr.x + 2 * E * cube_normal[k][0]) < 1e-12 * E && fabs(gr.y + 2 * E * cube_normal[k][1]) < 1e-12 * E &&
                  fabs(gr.z + 2 * E * cube_normal[k][2]) < 1e-12 * E,
              "tet %d gradient (%g, %g, %g)", k, gr.x, gr.y, gr.z);
    double pc = ce_dot(gr, ce_v3(0.5, 0.5, 0.5)) + g->tet.offset[k];
    cr_assert(fabs(pc - E) < 1e-12 * E, "tet %d field at centre %g", k, pc);
    cr_assert_eq(g->tet.prange[k][0], 0);
    cr_assert_eq(g->tet.prange[k][1], E);
  }
  /* Adjacency: the face opposite the centre is on the boundary; the other
   * three faces have a neighbour that points back and shares the face. */
  int boundary = 0;
  for (int k = 0; k < 12; k++)
    for (int i = 0; i < 4; i++) {
      int32_t a = g->tet.adj[k][i];
      if (a < 0) {
        boundary++;
        cr_assert_eq(i, 0, "tet %d: face %d should have a neighbour", k, i);
        continue;
      }
      int back = 0;
      for (int j = 0; j < 4; j++)
        if (g->tet.adj[a][j] == k) {
          back++;
          /* shared face: all vertices of k but its i-th are in a, and a's j-th is not in k */
          for (int m = 0; m < 4; m++) {
            if (m == i) continue;
            int found = 0;
            for (int n = 0; n < 4; n++) found |= g->tet.tet[a][n] == g->tet.tet[k][m];
            cr_assert(found);
          }
        }
      cr_assert_eq(back, 1, "tet %d neighbour %d does not point back once", k, a);
    }
  cr_assert_eq(boundary, 12);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert_eq(info.shape, CE_SHAPE_TETMESH);
  cr_assert_eq(info.compliance, CE_COMPLIANT);
  cr_assert_eq(info.is_halfspace, 0);
  cr_assert_eq(info.vertices, 9);
  cr_assert_eq(info.tetrahedra, 12);
  cr_assert_eq(info.triangles, 0);
  cr_assert_eq(info.min_pressure, 0);
  cr_assert_eq(info.max_pressure, E);
  cr_assert(fabs(info.volume - 1) < 1e-12);
  cr_assert_eq(info.bvh_nodes, g->bvh.nnodes);
  /* 12 tets split 6 + 6, then into four leaves of 3 (CE_BVH_TET_LEAF 4) */
  cr_assert_eq(info.bvh_nodes, 7, "bvh nodes %d", info.bvh_nodes);
  size_t arrays = 9 * (sizeof(ce_vec3) + sizeof(double)) +
                  12 * (4 * sizeof(int32_t) + sizeof(ce_vec3) + 3 * sizeof(double) + 4 * sizeof(int32_t) +
                        16 * sizeof(double)) + /* tets, gradients, offsets and ranges, adjacency, face planes */
                  sizeof(int32_t); /* one component: its first tet (no per-tet marks) */
  cr_assert_eq(info.bytes, sizeof(ce_geometry) + arrays + ce_bvh_bytes(&g->bvh));
  cr_assert_eq(g->tet.ncomp, 1);
  cr_assert_null(g->tet.comp);
  cr_assert_eq(g->tet.comp_first[0], 0);
  ce_geometry_free(g);
}

Test(geometry, distance_field_gives_E_at_the_single_interior_vertex) {
  make_cube(cube_v);
  int32_t t[12][4];
  cube_tets(t);
  ce_error err;
  ce_geometry *g = NULL;
  ce_errno e = build_cube_tet(t, 12, cube_v, 9, NULL, &g, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  for (int i = 0; i < 8; i++) cr_assert_eq(g->tet.p[i], 0);
  cr_assert(fabs(g->tet.p[8] - 1e5) < 1e-9, "p centre %.17g", g->tet.p[8]);
  ce_geometry_free(g);
}

Test(geometry, distance_field_is_distance_to_the_nearest_face) {
  /* Move the centre off-centre: (0.3, 0.5, 0.5) is 0.3 from x = 0 and is
   * the only interior vertex, so it gets E; check the tets' gradients. */
  make_cube(cube_v);
  cube_v[24] = 0.3;
  int32_t t[12][4];
  cube_tets(t);
  ce_error err;
  ce_geometry *g = NULL;
  ce_errno e = build_cube_tet(t, 12, cube_v, 9, NULL, &g, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  cr_assert(fabs(g->tet.p[8] - 1e5) < 1e-9);
  /* tet 8 lies on x = 0: p = E x / 0.3 there */
  cr_assert(fabs(g->tet.grad[8].x - 1e5 / 0.3) < 1e-6, "grad %.17g", g->tet.grad[8].x);
  ce_geometry_free(g);
}

Test(geometry, distance_field_without_interior_vertex_fails) {
  double v[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  int32_t t[] = {0, 1, 2, 3};
  ce_props pr = compliant(1e5);
  ce_error err;
  ce_geometry *g = (ce_geometry *)&err; /* must be reset to NULL */
  EXPECT_ERR(CE_EFIELD, ce_geometry_from_tetmesh(v, 4, t, 1, NULL, &pr, &g, &err), err, "no interior vertex");
  cr_assert_null(g);
}

/* ---- tet meshes: validation ------------------------------------------- */

Test(geometry, tet_empty_and_counts) {
  make_cube(cube_v);
  int32_t t[12][4];
  cube_tets(t);
  ce_error err;
  ce_geometry *g = NULL;
  EXPECT_ERR(CE_EEMPTY, build_cube_tet(t, 0, cube_v, 9, NULL, &g, &err), err, "empty");
  EXPECT_ERR(CE_EEMPTY, build_cube_tet(t, 12, cube_v, 0, NULL, &g, &err), err, "empty");
  EXPECT_ERR(CE_EINVAL, build_cube_tet(t, -3, cube_v, 9, NULL, &g, &err), err, "-3");
  EXPECT_ERR(CE_ELIMIT, build_cube_tet(t, 12, cube_v, (1 << 28) + 1, NULL, &g, &err), err, "limit");
  cr_assert_null(g);
}

Test(geometry, tet_index_out_of_range) {
  make_cube(cube_v);
  int32_t t[12][4];
  cube_tets(t);
  t[5][2] = 99;
  ce_error err;
  ce_geometry *g = NULL;
  EXPECT_ERR(CE_ERANGE, build_cube_tet(t, 12, cube_v, 9, NULL, &g, &err), err,
             "tet 5 vertex 2 index 99 out of range [0, 9)");
  t[5][2] = -1;
  EXPECT_ERR(CE_ERANGE, build_cube_tet(t, 12, cube_v, 9, NULL, &g, &err), err, "tet 5 vertex 2 index -1");
  cr_assert_null(g);
}

Test(geometry, tet_nonfinite_vertex) {
  make_cube(cube_v);
  cube_v[3 * 3 + 1] = NAN;
  int32_t t[12][4];
  cube_tets(t);
  ce_error err;
  ce_geometry *g = NULL;
  EXPECT_ERR(CE_ENONFINITE, build_cube_tet(t, 12, cube_v, 9, NULL, &g, &err), err,
             "vertex 3 has a non-finite coordinate");
  cube_v[3 * 3 + 1] = INFINITY;
  EXPECT_ERR(CE_ENONFINITE, build_cube_tet(t, 12, cube_v, 9, NULL, &g, &err), err, "vertex 3 ");
}

Test(geometry, tet_inverted) {
  make_cube(cube_v);
  int32_t t[12][4];
  cube_tets(t);
  int32_t s = t[4][1];
  t[4][1] = t[4][2];
  t[4][2] = s;
  double p[9];
  cube_pressure(p, 1e5);
  ce_error err;
  ce_geometry *g = NULL;
  EXPECT_ERR(CE_EINVERTED, build_cube_tet(t, 12, cube_v, 9, p, &g, &err), err, "tet 4 is inverted (volume -0.0833)");
}

Test(geometry, tet_zero_volume) {
  make_cube(cube_v);
  int32_t t[12][4];
  cube_tets(t);
  t[7][2] = t[7][1];
  double p[9];
  cube_pressure(p, 1e5);
  ce_error err;
  ce_geometry *g = NULL;
  EXPECT_ERR(CE_EINVERTED, build_cube_tet(t, 12, cube_v, 9, p, &g, &err), err, "tet 7 has zero volume");
  /* nearly flat: the centre 1e-14 from the x = 0 face gives tets 8 and 9
   * volumes ~1.7e-15, far below 1e-12 * (longest edge)^3 */
  cube_tets(t);
  cube_v[24] = 1e-14;
  EXPECT_ERR(CE_EINVERTED, build_cube_tet(t, 12, cube_v, 9, p, &g, &err), err, "tet 8 has zero volume");
  /* but 1e-6 is a valid (thin) tet */
  cube_v[24] = 1e-6;
  cr_assert_eq(build_cube_tet(t, 12, cube_v, 9, p, &g, &err), CE_OK, "%s", err.message);
  ce_geometry_free(g);
}

Test(geometry, tet_bad_pressure) {
  make_cube(cube_v);
  int32_t t[12][4];
  cube_tets(t);
  double p[9];
  cube_pressure(p, 1e5);
  ce_error err;
  ce_geometry *g = NULL;
  p[8] = -1;
  EXPECT_ERR(CE_EFIELD, build_cube_tet(t, 12, cube_v, 9, p, &g, &err), err, "vertex 8 has negative pressure -1");
  p[8] = NAN;
  EXPECT_ERR(CE_EFIELD, build_cube_tet(t, 12, cube_v, 9, p, &g, &err), err, "vertex 8 has a non-finite pressure");
  p[8] = 1e5;
  p[3] = 5;
  EXPECT_ERR(CE_EFIELD, build_cube_tet(t, 12, cube_v, 9, p, &g, &err), err,
             "vertex 3 is on the boundary but has pressure 5");
  cr_assert_null(g);
}

Test(geometry, tet_face_shared_by_three_tets) {
  double v[10 * 3];
  make_cube(v);
  v[27] = 0.5;
  v[28] = 0.5;
  v[29] = -1; /* vertex 9 below the z = 0 face */
  int32_t t[14][4];
  cube_tets(t);
  /* (9, 0, 3, 2) sits below face (0, 2, 3): valid alone, twice is not */
  for (int k = 12; k < 14; k++) {
    t[k][0] = 9;
    t[k][1] = 0;
    t[k][2] = 3;
    t[k][3] = 2;
  }
  double p[10] = {0};
  p[8] = 1e5;
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(build_cube_tet(t, 13, v, 10, p, &g, &err), CE_OK, "%s", err.message);
  cr_assert_eq(g->tet.adj[12][0], 0);
  cr_assert_eq(g->tet.adj[0][0], 12);
  cr_assert(fabs(g->volume - (1 + 1.0 / 6)) < 1e-12, "volume %.17g", g->volume);
  ce_geometry_free(g);
  EXPECT_ERR(CE_EDEGENERATE, build_cube_tet(t, 14, v, 10, p, &g, &err), err,
             "face (0, 2, 3) is shared by 3 tets (0, 12, 13)");
}

Test(geometry, tet_overlapping_tets) {
  make_cube(cube_v);
  int32_t t[13][4];
  cube_tets(t);
  memcpy(t[12], t[0], sizeof t[0]);
  double p[9];
  cube_pressure(p, 1e5);
  ce_error err;
  ce_geometry *g = NULL;
  EXPECT_ERR(CE_EDEGENERATE, build_cube_tet(t, 13, cube_v, 9, p, &g, &err), err, "tets 0 and 12 lie on the same side");
}

Test(geometry, tetmesh_must_be_compliant) {
  make_cube(cube_v);
  int32_t t[12][4];
  cube_tets(t);
  ce_props pr = rigid();
  ce_error err;
  ce_geometry *g = NULL;
  EXPECT_ERR(CE_EINVAL, ce_geometry_from_tetmesh(cube_v, 9, &t[0][0], 12, NULL, &pr, &g, &err), err, "compliant");
  pr = compliant(-1);
  EXPECT_ERR(CE_EINVAL, ce_geometry_from_tetmesh(cube_v, 9, &t[0][0], 12, NULL, &pr, &g, &err), err,
             "modulus must be finite and > 0 (got -1)");
  EXPECT_ERR(CE_EINVAL, ce_geometry_from_tetmesh(NULL, 9, &t[0][0], 12, NULL, &pr, &g, &err), err, "modulus");
  pr = compliant(1);
  EXPECT_ERR(CE_EINVAL, ce_geometry_from_tetmesh(NULL, 9, &t[0][0], 12, NULL, &pr, &g, &err), err, "NULL");
}

/* ---- triangle meshes -------------------------------------------------- */

static ce_errno build_tri(const int32_t (*t)[3], int32_t nf, const double *v, int32_t nv, int closed, ce_geometry **g,
                          ce_error *err) {
  ce_props pr = rigid();
  return ce_geometry_from_trimesh(v, nv, &t[0][0], nf, closed, &pr, g, err);
}

Test(geometry, trimesh_closed_cube) {
  make_cube(cube_v);
  /* shift the cube far from the origin: the volume must not suffer */
  double v[24];
  for (int i = 0; i < 24; i++) v[i] = cube_v[i] + (i % 3 == 0 ? 100 : 0);
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(build_tri(cube_tri, 12, v, 8, 1, &g, &err), CE_OK, "%s", err.message);
  cr_assert(fabs(g->volume - 1) < 1e-12, "volume %.17g", g->volume);
  cr_assert(isinf(g->modulus) && g->modulus > 0);
  cr_assert_eq(g->compliance, CE_RIGID);
  double area = 0;
  for (int f = 0; f < 12; f++) {
    area += g->tri.area[f];
    cr_assert(fabs(g->tri.normal[f].x - cube_normal[f][0]) < 1e-15 && fabs(g->tri.normal[f].y - cube_normal[f][1]) < 1e-15 &&
              fabs(g->tri.normal[f].z - cube_normal[f][2]) < 1e-15);
    for (int i = 0; i < 3; i++) {
      int32_t a = g->tri.adj[f][i];
      cr_assert(a >= 0 && a < 12);
      int back = 0;
      for (int j = 0; j < 3; j++)
        if (g->tri.adj[a][j] == f) {
          back++;
          /* the shared edge is reversed */
          cr_assert_eq(g->tri.tri[a][j], g->tri.tri[f][(i + 1) % 3]);
          cr_assert_eq(g->tri.tri[a][(j + 1) % 3], g->tri.tri[f][i]);
        }
      cr_assert_eq(back, 1);
    }
  }
  cr_assert(fabs(area - 6) < 1e-12);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert_eq(info.shape, CE_SHAPE_TRIMESH);
  cr_assert_eq(info.triangles, 12);
  cr_assert_eq(info.vertices, 8);
  cr_assert_eq(info.tetrahedra, 0);
  cr_assert(info.bvh_nodes >= 1);
  cr_assert(info.bytes > sizeof(ce_geometry) + 12 * 3 * sizeof(int32_t));
  ce_geometry_free(g);
}

Test(geometry, trimesh_open_cube) {
  make_cube(cube_v);
  ce_error err;
  ce_geometry *g = NULL;
  EXPECT_ERR(CE_EOPEN, build_tri(cube_tri, 11, cube_v, 8, 1, &g, &err), err,
             "edge (1, 5) of triangle 4 has no neighbour: mesh is open");
  cr_assert_null(g);
  /* accepted when open meshes are allowed: 3 open edges, no volume */
  cr_assert_eq(build_tri(cube_tri, 11, cube_v, 8, 0, &g, &err), CE_OK, "%s", err.message);
  int open = 0;
  for (int f = 0; f < 11; f++)
    for (int i = 0; i < 3; i++) open += g->tri.adj[f][i] < 0;
  cr_assert_eq(open, 3);
  cr_assert_eq(g->volume, 0);
  ce_geometry_free(g);
}

Test(geometry, trimesh_flipped_cube) {
  make_cube(cube_v);
  int32_t t[12][3];
  for (int f = 0; f < 12; f++) {
    t[f][0] = cube_tri[f][0];
    t[f][1] = cube_tri[f][2];
    t[f][2] = cube_tri[f][1];
  }
  ce_error err;
  ce_geometry *g = NULL;
  EXPECT_ERR(CE_EINVAL, build_tri((const int32_t(*)[3])t, 12, cube_v, 8, 1, &g, &err), err,
             "triangles wind inward (volume -1)");
  /* one flipped triangle: inconsistent winding on its edges */
  memcpy(t, cube_tri, sizeof t);
  t[3][1] = cube_tri[3][2];
  t[3][2] = cube_tri[3][1];
  EXPECT_ERR(CE_EDEGENERATE, build_tri((const int32_t(*)[3])t, 12, cube_v, 8, 1, &g, &err), err,
             "inconsistent winding");
  cr_assert(strstr(err.message, "triangles 2 and 3") || strstr(err.message, "triangles 3 and"), "%s", err.message);
}

Test(geometry, trimesh_bad_elements) {
  make_cube(cube_v);
  int32_t t[13][3];
  memcpy(t, cube_tri, sizeof cube_tri);
  ce_error err;
  ce_geometry *g = NULL;
  t[3][2] = t[3][0];
  EXPECT_ERR(CE_EDEGENERATE, build_tri((const int32_t(*)[3])t, 12, cube_v, 8, 1, &g, &err), err,
             "triangle 3 is degenerate");
  memcpy(t, cube_tri, sizeof cube_tri);
  t[6][1] = 8;
  EXPECT_ERR(CE_ERANGE, build_tri((const int32_t(*)[3])t, 12, cube_v, 8, 1, &g, &err), err,
             "triangle 6 vertex 1 index 8 out of range [0, 8)");
  memcpy(t, cube_tri, sizeof cube_tri);
  /* third triangle on edge (0, 1), with vertex 8 below the cube */
  double v[27];
  make_cube(v);
  v[24] = 0.5;
  v[25] = -1;
  v[26] = -1;
  t[12][0] = 0;
  t[12][1] = 1;
  t[12][2] = 8;
  EXPECT_ERR(CE_EDEGENERATE, build_tri((const int32_t(*)[3])t, 13, v, 9, 0, &g, &err), err,
             "edge (0, 1) is shared by 3 triangles");
  v[7] = INFINITY;
  EXPECT_ERR(CE_ENONFINITE, build_tri((const int32_t(*)[3])t, 12, v, 9, 1, &g, &err), err,
             "vertex 2 has a non-finite coordinate");
  EXPECT_ERR(CE_EEMPTY, build_tri((const int32_t(*)[3])t, 0, v, 9, 1, &g, &err), err, "empty");
  ce_props pr = compliant(1e5);
  EXPECT_ERR(CE_EINVAL, ce_geometry_from_trimesh(cube_v, 8, &cube_tri[0][0], 12, 1, &pr, &g, &err), err, "rigid");
  cr_assert_null(g);
}

/* ---- ownership-taking builders free on failure (checked under ASan) ---- */

Test(geometry, finish_functions_take_ownership_on_failure) {
  ce_props pr = compliant(1e5);
  ce_error err;
  ce_geometry *g = NULL;
  ce_vec3 *v = malloc(4 * sizeof *v);
  int32_t(*t)[4] = malloc(sizeof *t);
  double *p = malloc(4 * sizeof *p);
  v[0] = ce_v3(0, 0, 0);
  v[1] = ce_v3(1, 0, 0);
  v[2] = ce_v3(0, 1, 0);
  v[3] = ce_v3(0, 0, 1);
  t[0][0] = 0;
  t[0][1] = 2; /* inverted */
  t[0][2] = 1;
  t[0][3] = 3;
  for (int i = 0; i < 4; i++) p[i] = 0;
  EXPECT_ERR(CE_EINVERTED, ce_geometry_finish_tetmesh(CE_SHAPE_TETMESH, &pr, NULL, v, 4, t, 1, p, &g, &err), err,
             "tet 0 is inverted (volume -0.167)");
  ce_vec3 *w = malloc(3 * sizeof *w);
  int32_t(*f)[3] = malloc(sizeof *f);
  w[0] = ce_v3(0, 0, 0);
  w[1] = ce_v3(1, 0, 0);
  w[2] = ce_v3(0, 1, 0);
  f[0][0] = 0;
  f[0][1] = 1;
  f[0][2] = 2;
  pr = rigid();
  EXPECT_ERR(CE_EOPEN, ce_geometry_finish_trimesh(CE_SHAPE_TRIMESH, &pr, NULL, w, 3, f, 1, 1, &g, &err), err,
             "edge (0, 1) of triangle 0");
  cr_assert_null(g);
}

/* ---- half spaces ------------------------------------------------------ */

Test(geometry, halfspace_rigid_and_compliant) {
  ce_error err;
  ce_geometry *g = NULL;
  ce_props pr = rigid();
  pr.material.friction = 0.5;
  cr_assert_eq(ce_build_halfspace(&pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert(g->is_halfspace);
  cr_assert_eq(g->shape, CE_SHAPE_HALFSPACE);
  cr_assert(isinf(g->modulus));
  cr_assert_eq(g->scale, 1);
  cr_assert_eq(g->material.friction, 0.5);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert_eq(info.is_halfspace, 1);
  cr_assert_eq(info.vertices, 0);
  cr_assert_eq(info.bvh_nodes, 0);
  cr_assert_eq(info.bytes, sizeof(ce_geometry));
  ce_geometry_free(g);

  pr = compliant(3e6);
  EXPECT_ERR(CE_EINVAL, ce_build_halfspace(&pr, &g, &err), err, "slab thickness must be finite and > 0 (got 0)");
  cr_assert_null(g);
  /* 1e-300 once gave no contact at all (the field's gradient squared overflowed) */
  pr.slab_thickness = 1e-300;
  EXPECT_ERR(CE_EINVAL, ce_build_halfspace(&pr, &g, &err), err,
             "half space slab thickness 1e-300 m is outside the range of primitive dimensions [1e-09, 1e+09] m");
  cr_assert_null(g);
  pr.slab_thickness = 2e9;
  EXPECT_ERR(CE_EINVAL, ce_build_halfspace(&pr, &g, &err), err, "slab thickness 2e+09 m is outside");
  pr.slab_thickness = 0.25;
  cr_assert_eq(ce_build_halfspace(&pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert_eq(g->modulus, 3e6);
  cr_assert_eq(g->slab_thickness, 0.25);
  cr_assert_eq(g->compliance, CE_COMPLIANT);
  ce_geometry_free(g);
  ce_geometry_free(NULL);
}

/* ---- the zero-volume rule depends on shape, not size ------------------- */

Test(geometry, tiny_well_shaped_tet_passes_needle_fails) {
  /* a 1e-7 base triangle coned to an apex 1 away: small, not flat */
  double v[] = {0, 0, 0, 1e-7, 0, 0, 0, 1e-7, 0, 0, 0, 1};
  int32_t t[] = {0, 1, 2, 3};
  double p[4] = {0, 0, 0, 0};
  ce_props pr = compliant(1e5);
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(ce_geometry_from_tetmesh(v, 4, t, 1, p, &pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert(fabs(g->volume - 1e-14 / 6) < 1e-28);
  ce_geometry_free(g);
  /* a needle: the same points squeezed onto the z axis to 1e-13 */
  double w[] = {0, 0, 0, 1e-13, 0, 0.3, 0, 1e-13, 0.6, 0, 0, 1};
  EXPECT_ERR(CE_EINVERTED, ce_geometry_from_tetmesh(w, 4, t, 1, p, &pr, &g, &err), err, "tet 0 has zero volume");
}

/* Hostile tet and triangle meshes never crash and always explain errors. */
Test(geometry, random_hostile_meshes) {
  uint64_t s = 77;
  int outcomes[CE_ERRNO_COUNT] = {0};
  for (int it = 0; it < 30000; it++) {
    int nv = 1 + (int)(ce_test_rand(&s) * 8), nt = (int)(ce_test_rand(&s) * 6);
    double v[3 * 9], p[9];
    int32_t t[4 * 6];
    for (int i = 0; i < 3 * nv; i++) {
      double r = ce_test_rand(&s);
      v[i] = r < 0.002 ? NAN : (r < 0.3 ? floor(ce_test_rand(&s) * 3) : ce_test_rand(&s) * 2 - 1);
    }
    for (int i = 0; i < nv; i++) {
      double r = ce_test_rand(&s);
      p[i] = r < 0.6 ? 0 : (r < 0.62 ? -1 : (r < 0.63 ? INFINITY : ce_test_rand(&s)));
    }
    for (int i = 0; i < 4 * nt; i++)
      t[i] = ce_test_rand(&s) < 0.01 ? (int)(ce_test_rand(&s) * 100) - 50 : (int)(ce_test_rand(&s) * nv);
    ce_props pr = compliant(1);
    ce_error err;
    memset(&err, 0, sizeof err);
    ce_geometry *g = (ce_geometry *)&err;
    ce_errno e = ce_geometry_from_tetmesh(v, nv, t, nt, ce_test_rand(&s) < 0.5 ? p : NULL, &pr, &g, &err);
    outcomes[e]++;
    if (e == CE_OK) {
      for (int k = 0; k < g->tet.nt; k++) cr_assert(g->tet.prange[k][0] <= g->tet.prange[k][1]);
      ce_geometry_free(g);
    } else {
      cr_assert_null(g);
      cr_assert(err.code == e && err.message[0] != 0);
    }
    pr = rigid();
    int nf = (int)(ce_test_rand(&s) * 7);
    g = (ce_geometry *)&err;
    e = ce_geometry_from_trimesh(v, nv, t, nf, ce_test_rand(&s) < 0.5, &pr, &g, &err);
    outcomes[e]++;
    if (e == CE_OK)
      ce_geometry_free(g);
    else
      cr_assert(g == NULL && err.code == e && err.message[0] != 0);
  }
  /* the generator reaches every validation path */
  cr_assert(outcomes[CE_OK] > 100);
  cr_assert(outcomes[CE_ERANGE] > 100 && outcomes[CE_EINVERTED] > 100 && outcomes[CE_EFIELD] > 100);
  cr_assert(outcomes[CE_EDEGENERATE] > 100 && outcomes[CE_EOPEN] > 100 && outcomes[CE_ENONFINITE] > 100);
}

Test(geometry, distance_field_matches_cube_distance_on_kuhn_mesh) {
  double *v;
  int32_t *t, nv, nt;
  ce_test_kuhn_cube(6, 0.02, 5, &v, &nv, &t, &nt);
  ce_props pr = compliant(7e5);
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(ce_geometry_from_tetmesh(v, nv, t, nt, NULL, &pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert(fabs(g->volume - 1) < 1e-12, "volume %.17g", g->volume);
  /* distance to the boundary of the unit cube, brute force */
  double dmax = 0;
  for (int i = 0; i < nv; i++) {
    const double *x = v + 3 * i;
    double d = fmin(fmin(fmin(x[0], 1 - x[0]), fmin(x[1], 1 - x[1])), fmin(x[2], 1 - x[2]));
    dmax = fmax(dmax, d);
  }
  for (int i = 0; i < nv; i++) {
    const double *x = v + 3 * i;
    double d = fmin(fmin(fmin(x[0], 1 - x[0]), fmin(x[1], 1 - x[1])), fmin(x[2], 1 - x[2]));
    cr_assert(fabs(g->tet.p[i] - 7e5 * d / dmax) < 1e-9, "vertex %d: p %.17g vs %.17g", i, g->tet.p[i],
              7e5 * d / dmax);
  }
  /* boundary faces: 6 sides x N^2 x 2 triangles */
  int open = 0;
  for (int k = 0; k < nt; k++)
    for (int i = 0; i < 4; i++) open += g->tet.adj[k][i] < 0;
  cr_assert_eq(open, 6 * 36 * 2);
  /* gradients are exact on every tet: p at each vertex is reproduced */
  for (int k = 0; k < nt; k++)
    for (int i = 0; i < 4; i++) {
      int32_t vi = g->tet.tet[k][i];
      double pv = ce_dot(g->tet.grad[k], g->tet.v[vi]) + g->tet.offset[k];
      cr_assert(fabs(pv - g->tet.p[vi]) < 1e-9, "tet %d vertex %d: %.17g vs %.17g", k, i, pv, g->tet.p[vi]);
    }
  ce_geometry_free(g);
  free(v);
  free(t);
}

/* ---- progress and cancellation ----------------------------------------- */

/* The builds: a compliant and a rigid primitive, a user tet mesh with the
 * default (distance) field, a rigid triangle mesh, and a convex point set
 * (points on a sphere, so every one is a hull vertex) rigid and compliant:
 * its weld and hull report too. */
typedef struct progress_case {
  const char *what;
  double *v;
  int32_t *e, nv, ne;
} progress_case;

static ce_errno build_case(const progress_case *c, int i, ce_props *pr, ce_geometry **out, ce_error *err) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_SPHERE;
  s.radius = 0.1;
  switch (i) {
    case 0:
      pr->compliance = CE_COMPLIANT;
      pr->modulus = 1e6;
      pr->hint = 0.026; /* 5,120 tets */
      return ce_geometry_from_shape(&s, pr, out, err);
    case 1:
      pr->compliance = CE_RIGID;
      pr->modulus = INFINITY;
      pr->hint = 0.0066; /* 5,120 triangles */
      return ce_geometry_from_shape(&s, pr, out, err);
    case 2:
      pr->compliance = CE_COMPLIANT;
      pr->modulus = 1e6;
      return ce_geometry_from_tetmesh(c->v, c->nv, c->e, c->ne, NULL, pr, out, err);
    case 4:
    case 5:
      s.type = CE_SHAPE_CONVEX;
      s.points = c->v;
      s.npoints = c->nv;
      pr->compliance = i == 4 ? CE_RIGID : CE_COMPLIANT;
      pr->modulus = i == 4 ? INFINITY : 1e6;
      pr->hint = 0.01;
      return ce_geometry_from_shape(&s, pr, out, err);
    default:
      pr->compliance = CE_RIGID;
      pr->modulus = INFINITY;
      return ce_geometry_from_trimesh(c->v, c->nv, c->e, c->ne, 1, pr, out, err);
  }
}

/* Every geometry build reports stage "geometry" through props.progress, a
 * few times per hierarchy of a few thousand nodes; a callback that goes on
 * changes nothing in the geometry; one that stops at any report gets
 * CE_ECANCELED at once, no geometry, and nothing leaks (ASan). */
Test(geometry, a_callback_cancels_every_build_at_its_progress_points) {
  progress_case c[6];
  memset(c, 0, sizeof c);
  c[0].what = "compliant sphere";
  c[1].what = "rigid sphere";
  c[2].what = "tet mesh (distance field)";
  ce_test_kuhn_cube(10, 0.02, 3, &c[2].v, &c[2].nv, &c[2].e, &c[2].ne); /* 6,000 tets */
  c[3].what = "triangle mesh";
  size_t len;
  char *obj = ce_test_obj_sphere(0.1, 48, 96, &len);
  ce_mesh_data md;
  ce_error err;
  cr_assert_eq(ce_mesh_parse(obj, len, CE_MESH_OBJ, 0, &md, &err), CE_OK, "%s", err.message);
  free(obj);
  c[3].v = md.vertices;
  c[3].nv = md.nv;
  c[3].e = md.tris;
  c[3].ne = md.ntri;
  c[4].what = "rigid convex point set";
  c[5].what = "compliant convex point set";
  c[4].nv = c[5].nv = 12000;
  c[4].v = c[5].v = malloc(3 * sizeof(double) * (size_t)c[4].nv);
  ce_test_fibonacci_sphere(c[4].nv, 0.1, ce_v3(0, 0, 0), c[4].v);
  for (int i = 0; i < 6; i++) {
    ce_props pr;
    memset(&pr, 0, sizeof pr);
    ce_geometry *ref = NULL, *g = NULL;
    cr_assert_eq(build_case(&c[i], i, &pr, &ref, &err), CE_OK, "%s: %s", c[i].what, err.message);
    ce_test_stopper s;
    memset(&s, 0, sizeof s);
    pr.progress = ce_test_stop_at;
    pr.progress_user = &s;
    cr_assert_eq(build_case(&c[i], i, &pr, &g, &err), CE_OK, "%s: %s", c[i].what, err.message);
    const int total = s.calls;
    ce_geometry_info a, b;
    ce_geometry_get_info(ref, &a);
    ce_geometry_get_info(g, &b);
    cr_log_info("%s: %d reports, %d hierarchy nodes", c[i].what, total, (int)b.bvh_nodes);
    cr_assert_eq(s.last, 1.0, "%s: the last report is 1", c[i].what);
    /* the checks' (start, after them, end) and the hierarchy's */
    cr_assert_geq(total, 5, "%s: %d reports for %d nodes", c[i].what, total, (int)b.bvh_nodes);
    cr_assert(memcmp(&a, &b, sizeof a) == 0, "%s: the callback changed the geometry's info", c[i].what);
    cr_assert(memcmp(ref->bvh.nodes, g->bvh.nodes, (size_t)a.bvh_nodes * sizeof *g->bvh.nodes) == 0,
              "%s: the callback changed the hierarchy", c[i].what);
    ce_geometry_free(ref);
    ce_geometry_free(g);
    for (int k = 1; k <= total; k++) {
      memset(&s, 0, sizeof s);
      s.k = k;
      g = (ce_geometry *)&s; /* must be overwritten with NULL */
      memset(&err, 0, sizeof err);
      cr_assert_eq(build_case(&c[i], i, &pr, &g, &err), CE_ECANCELED, "%s: stop at report %d of %d", c[i].what, k,
                   total);
      cr_assert_null(g);
      cr_assert_str_eq(err.message, "geometry: build cancelled");
      cr_assert_eq(s.calls, k, "%s: no report after the stop (%d)", c[i].what, k);
      cr_assert_eq(s.after_stop, 0);
    }
  }
  free(c[2].v);
  free(c[2].e);
  free(c[4].v);
  ce_mesh_data_free(&md);
}

/* ce_props.max_bytes: a mesh build whose counts already show more bytes
 * than allowed fails with CE_EBYTES before building anything; the bound
 * compared is a lower bound, so a limit of the geometry's own bytes
 * passes. Compliant (tets) and rigid (triangles) spheres, refused at half
 * their bytes; and a convex point set (points on a sphere, each a hull
 * vertex), whose quickhull keeps its faces within the limit too: at an
 * eighth of the geometry's bytes the hull stops as soon as its faces
 * outgrow it, before the mesh is made. */
Test(geometry, max_bytes_fails_a_build_that_cannot_fit) {
  const int32_t n = 20000;
  double *pts = malloc(3 * sizeof(double) * (size_t)n);
  ce_test_fibonacci_sphere(n, 0.1, ce_v3(0, 0, 0), pts);
  for (int convex = 0; convex < 2; convex++)
    for (int rigid_case = 0; rigid_case < 2; rigid_case++) {
      ce_shape s;
      memset(&s, 0, sizeof s);
      s.type = convex ? CE_SHAPE_CONVEX : CE_SHAPE_SPHERE;
      s.radius = 0.1;
      s.points = convex ? pts : NULL;
      s.npoints = convex ? n : 0;
      ce_props p = rigid_case ? ce_test_props(CE_RIGID, 0, 0.02) : ce_test_props(CE_COMPLIANT, 1e6, 0.02);
      ce_geometry *g = NULL;
      ce_error err;
      cr_assert_eq(ce_geometry_from_shape(&s, &p, &g, &err), CE_OK, "%s", err.message);
      ce_geometry_info info;
      ce_geometry_get_info(g, &info);
      ce_geometry_free(g);
      const size_t bytes = info.bytes;
      if (convex) cr_assert_eq(rigid_case ? info.triangles : info.tetrahedra, 2 * n - 4);

      p.max_bytes = bytes; /* exactly its own size: allowed */
      cr_expect_eq(ce_geometry_from_shape(&s, &p, &g, &err), CE_OK, "%s", err.message);
      ce_geometry_get_info(g, &info);
      cr_expect_eq(info.bytes, bytes);
      ce_geometry_free(g);

      /* the mesh's lower bound is most of the geometry: half of it is
       * refused; the hull's faces outgrow an eighth */
      p.max_bytes = convex ? bytes / 8 : bytes / 2;
      g = NULL;
      cr_expect_eq(ce_geometry_from_shape(&s, &p, &g, &err), CE_EBYTES, "convex=%d rigid=%d: %s", convex,
                   rigid_case, err.message);
      cr_expect_null(g);
      if (convex) {
        cr_expect(strstr(err.message, "convex: the hull of 20000 points outgrew the limit of"), "%s", err.message);
      } else {
        cr_expect(strstr(err.message, "over the limit of"), "%s", err.message);
        cr_expect(strstr(err.message, rigid_case ? "triangles" : "tets"), "%s", err.message);
      }
    }
  free(pts);
}

/* The bound compared with max_bytes is a lower bound for every primitive
 * mesh, compliant and rigid: a limit of the geometry's own size passes. */
Test(geometry, max_bytes_of_its_own_size_passes_for_every_primitive) {
  const ce_shape_type types[] = {CE_SHAPE_SPHERE, CE_SHAPE_BOX, CE_SHAPE_CYLINDER, CE_SHAPE_CAPSULE,
                                 CE_SHAPE_ELLIPSOID};
  for (size_t k = 0; k < sizeof types / sizeof *types; k++)
    for (int rigid_case = 0; rigid_case < 2; rigid_case++) {
      ce_shape s;
      memset(&s, 0, sizeof s);
      s.type = types[k];
      s.radius = 0.05;
      s.length = 0.12;
      s.size = ce_v3(0.1, 0.07, 0.05);
      ce_props p = rigid_case ? ce_test_props(CE_RIGID, 0, 0.02) : ce_test_props(CE_COMPLIANT, 1e6, 0.02);
      ce_geometry *g = NULL;
      ce_error err;
      cr_assert_eq(ce_geometry_from_shape(&s, &p, &g, &err), CE_OK, "shape %d: %s", (int)types[k], err.message);
      ce_geometry_info info;
      ce_geometry_get_info(g, &info);
      ce_geometry_free(g);
      p.max_bytes = info.bytes;
      cr_expect_eq(ce_geometry_from_shape(&s, &p, &g, &err), CE_OK, "shape %d rigid=%d: %s", (int)types[k],
                   rigid_case, err.message);
      ce_geometry_free(g);
    }
}
