/* test_alloc_failure.c — every allocation of a build or a query may fail.
 *
 * Linked with tests/common/td_faults.c (-Wl,--wrap), where
 * td_faults_fail_from(k) makes the calling thread's allocation k and all
 * after it fail; the test's own inputs are made with failures paused. Each case below is run with k = 0, 1, 2, ... until it no
 * longer reaches allocation k: every failure point it has is hit once.
 * At each one the call must return CE_ENOMEM with a message and no output,
 * and leak nothing (the sanitizer build's LeakSanitizer checks each test
 * process at exit); the run that gets through must give the geometry a run
 * without failures gives. SQLite's malloc tests are the model. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"
#include "td_faults.h"

typedef ce_errno (*build_fn)(ce_geometry **out, ce_error *err);

static ce_errno build_shape(ce_shape_type type, ce_compliance c, double radius, double length, ce_vec3 size,
                            ce_geometry **out, ce_error *err) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = type;
  s.radius = radius;
  s.length = length;
  s.size = size;
  ce_props p = ce_test_props(c, c == CE_COMPLIANT ? 1e6 : 0, 0.02);
  p.slab_thickness = 0.1;
  return ce_geometry_from_shape(&s, &p, out, err);
}

static ce_errno primitive(ce_shape_type type, ce_compliance c, ce_geometry **out, ce_error *err) {
  return build_shape(type, c, 0.05, 0.08, type == CE_SHAPE_ELLIPSOID ? ce_v3(0.06, 0.04, 0.03) : ce_v3(0.1, 0.08, 0.06),
                     out, err);
}

/* The meshers' other branches: a cylinder longer than wide
 * (cylinder_long_tets; the one below is flat), a box too flat for the
 * refined mesh (box_tets after box_sliced_tets), a long capsule and a
 * long thin ellipsoid. */
static ce_errno long_cylinder_c(ce_geometry **o, ce_error *e) {
  return build_shape(CE_SHAPE_CYLINDER, CE_COMPLIANT, 0.03, 0.2, ce_v3(0, 0, 0), o, e);
}
static ce_errno flat_box_c(ce_geometry **o, ce_error *e) {
  return build_shape(CE_SHAPE_BOX, CE_COMPLIANT, 0, 0, ce_v3(0.1, 0.1, 1e-7), o, e);
}
static ce_errno long_capsule_c(ce_geometry **o, ce_error *e) {
  return build_shape(CE_SHAPE_CAPSULE, CE_COMPLIANT, 0.01, 0.2, ce_v3(0, 0, 0), o, e);
}
static ce_errno long_ellipsoid_c(ce_geometry **o, ce_error *e) {
  return build_shape(CE_SHAPE_ELLIPSOID, CE_COMPLIANT, 0, 0, ce_v3(0.2, 0.01, 0.02), o, e);
}

static ce_errno sphere_c(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_SPHERE, CE_COMPLIANT, o, e); }
static ce_errno sphere_r(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_SPHERE, CE_RIGID, o, e); }
static ce_errno box_c(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_BOX, CE_COMPLIANT, o, e); }
static ce_errno box_r(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_BOX, CE_RIGID, o, e); }
static ce_errno cylinder_c(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_CYLINDER, CE_COMPLIANT, o, e); }
static ce_errno cylinder_r(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_CYLINDER, CE_RIGID, o, e); }
static ce_errno capsule_c(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_CAPSULE, CE_COMPLIANT, o, e); }
static ce_errno capsule_r(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_CAPSULE, CE_RIGID, o, e); }
static ce_errno ellipsoid_c(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_ELLIPSOID, CE_COMPLIANT, o, e); }
static ce_errno ellipsoid_r(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_ELLIPSOID, CE_RIGID, o, e); }
static ce_errno halfspace_c(ce_geometry **o, ce_error *e) { return primitive(CE_SHAPE_HALFSPACE, CE_COMPLIANT, o, e); }

static ce_errno convex(ce_compliance c, ce_geometry **out, ce_error *err) {
  double pts[3 * 300];
  ce_test_fibonacci_sphere(300, 0.05, ce_v3(0.01, 0, 0), pts);
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_CONVEX;
  s.points = pts;
  s.npoints = 300;
  ce_props p = ce_test_props(c, c == CE_COMPLIANT ? 1e6 : 0, 0.02);
  return ce_geometry_from_shape(&s, &p, out, err);
}
static ce_errno convex_c(ce_geometry **o, ce_error *e) { return convex(CE_COMPLIANT, o, e); }
static ce_errno convex_r(ce_geometry **o, ce_error *e) { return convex(CE_RIGID, o, e); }

/* An OBJ sphere parsed (the parser's and the weld's allocations fail too)
 * and built rigid, or compliant through the tetrahedraliser with a
 * Laplace or a distance field. */
static ce_errno obj_sphere(int how, ce_geometry **out, ce_error *err) {
  size_t len;
  td_faults_pause();
  char *obj = ce_test_obj_sphere(0.05, 8, 12, &len);
  td_faults_resume();
  cr_assert(obj);
  ce_mesh_data m;
  ce_errno e = ce_mesh_parse(obj, len, CE_MESH_OBJ, 1e-9, &m, err);
  free(obj);
  if (e != CE_OK) return e;
  if (how == 0) {
    ce_props p = ce_test_props(CE_RIGID, 0, 0.02);
    e = ce_geometry_from_trimesh(m.vertices, m.nv, m.tris, m.ntri, 1, &p, out, err);
  } else {
    ce_props p = ce_test_props(CE_COMPLIANT, 1e6, 0.02);
    ce_surface_build_options o;
    ce_surface_build_options_default(&o);
    o.field = how == 1 ? CE_FIELD_LAPLACE : CE_FIELD_DISTANCE;
    e = ce_geometry_from_surface(m.vertices, m.nv, m.tris, m.ntri, &p, &o, out, NULL, err);
  }
  ce_mesh_data_free(&m);
  return e;
}
static ce_errno obj_rigid(ce_geometry **o, ce_error *e) { return obj_sphere(0, o, e); }
static ce_errno obj_laplace(ce_geometry **o, ce_error *e) { return obj_sphere(1, o, e); }
static ce_errno obj_distance(ce_geometry **o, ce_error *e) { return obj_sphere(2, o, e); }

/* A user tet mesh (a jittered Kuhn cube) with the distance field, and
 * with a Laplace field. */
static ce_errno tetmesh(int laplace, ce_geometry **out, ce_error *err) {
  double *v;
  int32_t nv, nt, *t;
  td_faults_pause();
  ce_test_kuhn_cube(4, 0.02, 7, &v, &nv, &t, &nt);
  td_faults_resume();
  ce_props p = ce_test_props(CE_COMPLIANT, 1e6, 0.02);
  ce_errno e;
  if (laplace) {
    ce_field_options f;
    memset(&f, 0, sizeof f);
    f.kind = CE_FIELD_LAPLACE;
    e = ce_geometry_from_tetmesh_field(v, nv, t, nt, &f, &p, out, NULL, err);
  } else {
    e = ce_geometry_from_tetmesh(v, nv, t, nt, NULL, &p, out, err);
  }
  free(v);
  free(t);
  return e;
}
static ce_errno tetmesh_distance(ce_geometry **o, ce_error *e) { return tetmesh(0, o, e); }
static ce_errno tetmesh_laplace(ce_geometry **o, ce_error *e) { return tetmesh(1, o, e); }

static ce_errno heightfield(ce_geometry **out, ce_error *err) {
  double z[12 * 10];
  for (int j = 0; j < 10; j++)
    for (int i = 0; i < 12; i++) z[j * 12 + i] = 0.01 * sin(0.7 * i) * cos(0.5 * j);
  ce_props p = ce_test_props(CE_RIGID, 0, 0.02);
  return ce_geometry_from_heightfield(z, 12, 10, 0.05, 0.05, ce_v3(0, 0, 0), 1, &p, out, err);
}

/* A rigid box surface with two convex pieces for point contact. */
static ce_errno pieces(ce_geometry **out, ce_error *err) {
  const double v[8 * 3] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1};
  const int32_t f[12 * 3] = {0, 2, 1, 0, 3, 2, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4,
                             1, 2, 6, 1, 6, 5, 2, 3, 7, 2, 7, 6, 3, 0, 4, 3, 4, 7};
  double pp[2 * 8 * 3];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 8; i++) {
      pp[(k * 8 + i) * 3 + 0] = 0.5 * v[i * 3 + 0] + 0.5 * k;
      pp[(k * 8 + i) * 3 + 1] = v[i * 3 + 1];
      pp[(k * 8 + i) * 3 + 2] = v[i * 3 + 2];
    }
  const int32_t np[2] = {8, 8};
  ce_props p = ce_test_props(CE_RIGID, 0, 0.5);
  return ce_geometry_from_trimesh_pieces(v, 8, f, 12, 1, pp, np, 2, &p, out, err);
}

/* Mesh files parsed (every format's reader and the weld); the surface
 * ones are then built rigid. No geometry for the tet files (*out NULL). */
static ce_errno parse_file(const char *name, ce_geometry **out, ce_error *err) {
  size_t len;
  td_faults_pause();
  char *bytes = ce_test_read_data(name, &len);
  td_faults_resume();
  ce_mesh_data m;
  ce_errno e = ce_mesh_parse(bytes, len, CE_MESH_AUTO, 0, &m, err);
  free(bytes);
  if (e != CE_OK) return e;
  if (m.ntri > 0) {
    ce_props p = ce_test_props(CE_RIGID, 0, 0.5);
    e = ce_geometry_from_trimesh(m.vertices, m.nv, m.tris, m.ntri, 1, &p, out, err);
  }
  ce_mesh_data_free(&m);
  return e;
}
static ce_errno vtk_ascii(ce_geometry **o, ce_error *e) { return parse_file("two_tets.vtk", o, e); }
static ce_errno vtk_binary(ce_geometry **o, ce_error *e) { return parse_file("two_tets_binary.vtk", o, e); }
static ce_errno vtk_51(ce_geometry **o, ce_error *e) { return parse_file("two_tets_v51.vtk", o, e); }
static ce_errno msh_22(ce_geometry **o, ce_error *e) { return parse_file("two_tets_v22_binary.msh", o, e); }
static ce_errno msh_41(ce_geometry **o, ce_error *e) { return parse_file("two_tets_v41.msh", o, e); }
static ce_errno stl_ascii(ce_geometry **o, ce_error *e) { return parse_file("cube_ascii.stl", o, e); }
static ce_errno stl_binary(ce_geometry **o, ce_error *e) { return parse_file("cube_binary.stl", o, e); }
static ce_errno obj_cube(ce_geometry **o, ce_error *e) { return parse_file("cube.obj", o, e); }

/* Runs build with failures from allocation 0 on, then 1 on, ... Returns the
 * number of failure points hit. */
static long every_failure(const char *name, build_fn build) {
  ce_geometry *ref = NULL;
  ce_error err;
  memset(&err, 0, sizeof err);
  cr_assert_eq(build(&ref, &err), CE_OK, "%s: %s", name, err.message);
  ce_geometry_info want;
  memset(&want, 0, sizeof want);
  if (ref) ce_geometry_get_info(ref, &want);
  ce_geometry_free(ref);
  long k = 0;
  for (;; k++) {
    cr_assert_lt(k, 100000, "%s: no end to its allocations", name);
    ce_geometry *g = NULL;
    memset(&err, 0, sizeof err);
    td_faults_fail_from(k);
    ce_errno e = build(&g, &err);
    long used = td_faults_count();
    td_faults_fail_from(-1);
    if (e == CE_OK) {
      /* got through: either no allocation failed, or the build tolerated
       * one; the geometry is the one without failures either way */
      ce_geometry_info got;
      memset(&got, 0, sizeof got);
      if (g) ce_geometry_get_info(g, &got);
      cr_expect(got.vertices == want.vertices && got.tetrahedra == want.tetrahedra &&
                    got.triangles == want.triangles && got.bvh_nodes == want.bvh_nodes && got.bytes == want.bytes,
                "%s: the build after allocation %ld failed differs", name, k);
      ce_geometry_free(g);
      if (used <= k) break;
      continue;
    }
    cr_expect_eq(e, CE_ENOMEM, "%s: allocation %ld failed: %s (%s)", name, k, ce_errname(e), err.message);
    cr_expect_eq(err.code, e, "%s: allocation %ld: the error carries its code", name, k);
    cr_expect(err.message[0], "%s: allocation %ld: no message", name, k);
    cr_expect_null(g, "%s: allocation %ld: an output next to an error", name, k);
    if (g) ce_geometry_free(g);
  }
  cr_log_info("%s: %ld allocations, each failed once", name, k);
  return k;
}

Test(alloc_failure, primitives) {
  static const struct {
    const char *name;
    build_fn fn;
  } cases[] = {
      {"compliant sphere", sphere_c},     {"rigid sphere", sphere_r},
      {"compliant box", box_c},           {"rigid box", box_r},
      {"compliant cylinder", cylinder_c}, {"rigid cylinder", cylinder_r},
      {"compliant long cylinder", long_cylinder_c}, {"compliant flat box", flat_box_c},
      {"compliant long capsule", long_capsule_c}, {"compliant long ellipsoid", long_ellipsoid_c},
      {"compliant capsule", capsule_c},   {"rigid capsule", capsule_r},
      {"compliant ellipsoid", ellipsoid_c}, {"rigid ellipsoid", ellipsoid_r},
      {"compliant half space", halfspace_c},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    cr_expect_gt(every_failure(cases[i].name, cases[i].fn), 0, "%s allocates nothing?", cases[i].name);
}

Test(alloc_failure, convex_sets_meshes_and_terrain) {
  static const struct {
    const char *name;
    build_fn fn;
  } cases[] = {
      {"compliant convex set", convex_c},
      {"rigid convex set", convex_r},
      {"OBJ parsed, rigid", obj_rigid},
      {"OBJ parsed, tetrahedralised, Laplace field", obj_laplace},
      {"OBJ parsed, tetrahedralised, distance field", obj_distance},
      {"tet mesh, distance field", tetmesh_distance},
      {"tet mesh, Laplace field", tetmesh_laplace},
      {"heightfield", heightfield},
      {"mesh with convex pieces", pieces},
      {"VTK ASCII", vtk_ascii},
      {"VTK binary", vtk_binary},
      {"VTK 5.1", vtk_51},
      {"MSH 2.2 binary", msh_22},
      {"MSH 4.1", msh_41},
      {"STL ASCII, rigid", stl_ascii},
      {"STL binary, rigid", stl_binary},
      {"OBJ cube, rigid", obj_cube},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    cr_expect_gt(every_failure(cases[i].name, cases[i].fn), 0, "%s allocates nothing?", cases[i].name);
}

/* Queries whose arena cannot get memory, one per intersector (the traced
 * compliant-compliant and compliant-rigid walks, half spaces, terrain,
 * point contact), with the surface, patches and point contacts asked for:
 * CE_ENOMEM with a message, and the same arena answers once memory is
 * back. */
static long every_query_failure(const char *name, const ce_geometry *ga, ce_vec3 pa, const ce_geometry *gb) {
  ce_body A = ce_test_body(ga, ce_quat_identity(), pa);
  ce_body B = ce_test_body(gb, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_options o;
  ce_options_default(&o);
  o.want_surface = o.want_patches = o.want_face_contacts = 1;
  ce_result r;
  ce_error err;
  ce_arena *ar = ce_arena_create(4096);
  cr_assert(ar);
  cr_assert_eq(ce_contact(&A, &B, &o, ar, &r, &err), CE_OK, "%s: %s", name, err.message);
  const double fz = r.wrench_a.force.z;
  cr_assert_gt(fz, 0, "%s: no contact", name);
  long k = 0;
  for (;; k++) {
    cr_assert_lt(k, 100000, "%s", name);
    ce_arena_destroy(ar);
    td_faults_fail_from(k);
    ar = ce_arena_create(4096); /* its first chunk is allocation 0 */
    memset(&err, 0, sizeof err);
    ce_errno e = ar ? ce_contact(&A, &B, &o, ar, &r, &err) : CE_ENOMEM;
    long used = td_faults_count();
    td_faults_fail_from(-1);
    if (!ar) {
      ar = ce_arena_create(4096);
      cr_assert(ar);
      continue;
    }
    if (e == CE_OK) {
      cr_expect_eq(r.wrench_a.force.z, fz, "%s: allocation %ld: a different force", name, k);
      if (used <= k) break;
      continue;
    }
    cr_expect_eq(e, CE_ENOMEM, "%s: allocation %ld failed: %s (%s)", name, k, ce_errname(e), err.message);
    cr_expect(err.message[0], "%s: allocation %ld: no message", name, k);
    /* the arena is still good */
    ce_arena_reset(ar);
    cr_expect_eq(ce_contact(&A, &B, &o, ar, &r, &err), CE_OK, "%s: allocation %ld: after the failure: %s", name,
                 k, err.message);
    cr_expect_eq(r.wrench_a.force.z, fz, "%s: allocation %ld: after the failure, a different force", name, k);
  }
  cr_log_info("%s: %ld allocations, each failed once", name, k);
  ce_arena_destroy(ar);
  return k;
}

Test(alloc_failure, queries) {
  ce_geometry *ball = NULL, *ball_r = NULL, *box = NULL, *hs = NULL, *terrain = NULL;
  ce_error err;
  cr_assert_eq(sphere_c(&ball, &err), CE_OK);
  cr_assert_eq(sphere_r(&ball_r, &err), CE_OK);
  cr_assert_eq(box_r(&box, &err), CE_OK);
  cr_assert_eq(halfspace_c(&hs, &err), CE_OK);
  cr_assert_eq(heightfield(&terrain, &err), CE_OK);
  cr_expect_gt(every_query_failure("compliant sphere on rigid box", ball, ce_v3(0, 0, 0.07), box), 1);
  cr_expect_gt(every_query_failure("two compliant spheres", ball, ce_v3(0.02, 0.01, 0.09), ball), 1);
  cr_expect_gt(every_query_failure("compliant sphere on compliant half space", ball, ce_v3(0, 0, 0.04), hs), 1);
  cr_expect_gt(every_query_failure("rigid box on compliant half space", box, ce_v3(0, 0, 0.02), hs), 1);
  cr_expect_gt(every_query_failure("compliant sphere on terrain", ball, ce_v3(0.3, 0.25, 0.045), terrain), 1);
  cr_expect_gt(every_query_failure("rigid sphere on rigid box (point contact)", ball_r, ce_v3(0, 0, 0.07), box), 0);
  ce_geometry_free(ball);
  ce_geometry_free(ball_r);
  ce_geometry_free(box);
  ce_geometry_free(hs);
  ce_geometry_free(terrain);
}
