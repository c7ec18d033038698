/* test_mtd.c — minimum translational distance between convex shapes
 * (ce_mtd.c): depths, normals (out of B into A) and witness points against
 * hand-computed values, for the analytic pairs, the separating-axis box
 * pairs, GJK/EPA pairs and convex hulls of meshes. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static ce_geometry *rigid(ce_shape s, double hint) {
  ce_props p = ce_test_props(CE_RIGID, 0, hint);
  ce_geometry *g = NULL;
  ce_error err;
  ce_errno e = ce_geometry_from_shape(&s, &p, &g, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  return g;
}
static ce_geometry *sphere(double r) {
  ce_shape s = {.type = CE_SHAPE_SPHERE, .radius = r};
  return rigid(s, r / 2);
}
static ce_geometry *box(double x, double y, double z) {
  ce_shape s = {.type = CE_SHAPE_BOX, .size = {x, y, z}};
  return rigid(s, fmin(x, fmin(y, z)) / 2);
}
static ce_geometry *capsule(double r, double l) {
  ce_shape s = {.type = CE_SHAPE_CAPSULE, .radius = r, .length = l};
  return rigid(s, r / 2);
}
static ce_geometry *halfspace(void) {
  ce_shape s = {.type = CE_SHAPE_HALFSPACE};
  return rigid(s, 1);
}

static ce_pose at(double x, double y, double z) { return ce_pose_from_quat(ce_quat_identity(), ce_v3(x, y, z)); }
static ce_pose rot(ce_vec3 axis, double angle, double x, double y, double z) {
  return ce_pose_from_quat(ce_quat_from_axis_angle(axis, angle), ce_v3(x, y, z));
}

static ce_mtd run(const ce_geometry *a, ce_pose Xa, const ce_geometry *b, ce_pose Xb) {
  ce_mtd m;
  ce_error err;
  ce_errno e = ce_mtd_compute(a, &Xa, b, &Xb, &m, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  return m;
}

#define VEC_NEAR(v, X, Y, Z, tol)                                                                   \
  cr_assert(fabs((v).x - (X)) <= (tol) && fabs((v).y - (Y)) <= (tol) && fabs((v).z - (Z)) <= (tol), \
            #v " = (%.12g, %.12g, %.12g), expected (%.12g, %.12g, %.12g)", (v).x, (v).y, (v).z,     \
            (double)(X), (double)(Y), (double)(Z))

/* The invariant every overlapping result satisfies. */
static void check_consistent(const ce_mtd *m, double tol) {
  cr_assert(m->overlap);
  cr_assert(m->depth > 0);
  cr_assert(fabs(ce_norm(m->normal) - 1) < 1e-12);
  ce_vec3 d = ce_sub(m->witness_b, m->witness_a);
  VEC_NEAR(d, m->depth * m->normal.x, m->depth * m->normal.y, m->depth * m->normal.z, tol);
}

Test(mtd, sphere_sphere) {
  ce_geometry *a = sphere(1), *b = sphere(0.5);
  ce_mtd m = run(a, at(0, 0, 1.2), b, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.3, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-15);
  VEC_NEAR(m.witness_a, 0, 0, 0.2, 1e-14);
  VEC_NEAR(m.witness_b, 0, 0, 0.5, 1e-14);
  cr_assert_eq(m.hull_a + m.hull_b, 0);
  /* oblique: centres 1.3 apart along (3, 4, 12)/13 */
  m = run(a, at(0.3, 0.4, 1.2), b, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.2, 1e-14);
  VEC_NEAR(m.normal, 3.0 / 13, 4.0 / 13, 12.0 / 13, 1e-15);
  /* swapped order: same depth, opposite normal */
  ce_mtd s = run(b, at(0, 0, 0), a, at(0.3, 0.4, 1.2));
  cr_assert_float_eq(s.depth, 0.2, 1e-14);
  VEC_NEAR(s.normal, -3.0 / 13, -4.0 / 13, -12.0 / 13, 1e-15);
  /* apart and exactly touching: no overlap */
  cr_assert_eq(run(a, at(0, 0, 1.6), b, at(0, 0, 0)).overlap, 0);
  cr_assert_eq(run(a, at(0, 0, 1.5), b, at(0, 0, 0)).overlap, 0);
  ce_geometry_free(a);
  ce_geometry_free(b);
}

Test(mtd, coincident_centres_defined) {
  ce_geometry *a = sphere(1), *b = sphere(0.5);
  ce_mtd m = run(a, at(1, 2, 3), b, at(1, 2, 3));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 1.5, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 0); /* documented: world +z */
  VEC_NEAR(m.witness_a, 1, 2, 2, 1e-14);
  VEC_NEAR(m.witness_b, 1, 2, 3.5, 1e-14);
  /* two capsules whose axes cross at their centres: along the cross product */
  ce_geometry *c = capsule(0.5, 2);
  m = run(c, rot(ce_v3(0, 1, 0), M_PI / 2, 0, 0, 0), c, rot(ce_v3(1, 0, 0), M_PI / 2, 0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 1.0, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-15);
  /* two identical boxes at the same pose: the smallest half size, +z side */
  ce_geometry *bx = box(2, 3, 1);
  m = run(bx, at(0, 0, 0), bx, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 1.0, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 0);
  ce_geometry_free(a);
  ce_geometry_free(b);
  ce_geometry_free(c);
  ce_geometry_free(bx);
}

Test(mtd, sphere_box) {
  ce_geometry *s = sphere(0.5), *b = box(2, 2, 2);
  /* face region */
  ce_mtd m = run(s, at(0.2, -0.3, 1.3), b, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.2, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 0);
  VEC_NEAR(m.witness_b, 0.2, -0.3, 1, 1e-15);
  VEC_NEAR(m.witness_a, 0.2, -0.3, 0.8, 1e-14);
  /* corner region: centre 0.2 (1,1,1) beyond the corner */
  m = run(s, at(1.2, 1.2, 1.2), b, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.5 - 0.2 * sqrt(3.0), 1e-14);
  double k = 1 / sqrt(3.0);
  VEC_NEAR(m.normal, k, k, k, 1e-15);
  VEC_NEAR(m.witness_b, 1, 1, 1, 1e-15);
  /* edge region */
  m = run(s, at(1.3, 0, 1.4), b, at(0, 0, 0));
  cr_assert_float_eq(m.depth, 0.5 - 0.5, 1e-14); /* |(0.3, 0.4)| = 0.5: touching */
  m = run(s, at(1.15, 0, 1.2), b, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.25, 1e-14);
  VEC_NEAR(m.normal, 0.6, 0, 0.8, 1e-15);
  /* centre inside, nearest face +z */
  m = run(s, at(0.1, 0, 0.9), b, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.6, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 0);
  /* box A, sphere B, rotated box: normal flips, depth the same */
  ce_pose Xb = rot(ce_v3(0, 0, 1), 0.7, 0, 0, 0);
  m = run(b, Xb, s, at(0, 0, 1.3));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.2, 1e-14);
  VEC_NEAR(m.normal, 0, 0, -1, 1e-15);
  ce_geometry_free(s);
  ce_geometry_free(b);
}

Test(mtd, box_box_face) {
  ce_geometry *a = box(1, 1, 1), *b = box(4, 4, 1);
  ce_mtd m = run(a, at(0.3, 0.2, 0.9), b, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.1, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-15);
  /* the centre of A's bottom face (a resting box is pushed through its
   * centre line) */
  VEC_NEAR(m.witness_a, 0.3, 0.2, 0.4, 1e-14);
  VEC_NEAR(m.witness_b, 0.3, 0.2, 0.5, 1e-14);
  /* A spun about z: still its bottom face */
  m = run(a, rot(ce_v3(0, 0, 1), 0.4, 0.3, 0.2, 0.9), b, at(0, 0, 0));
  cr_assert_float_eq(m.depth, 0.1, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-15);
  VEC_NEAR(m.witness_a, 0.3, 0.2, 0.4, 1e-14);
  /* separated */
  cr_assert_eq(run(a, at(0, 0, 1.01), b, at(0, 0, 0)).overlap, 0);
  cr_assert_eq(run(a, at(2.6, 0, 0), b, at(0, 0, 0)).overlap, 0);
  ce_geometry_free(a);
  ce_geometry_free(b);
}

Test(mtd, box_box_edge) {
  ce_geometry *a = box(1, 1, 1), *b = box(4, 4, 1);
  /* A turned 45 degrees about x: its lowest feature is the edge along x at
   * depth sqrt(2)/2 below its centre */
  double zc = 0.5 + sqrt(0.5) - 0.05;
  ce_mtd m = run(a, rot(ce_v3(1, 0, 0), M_PI / 4, 0.1, 0, zc), b, at(0, 0, 0));
  check_consistent(&m, 1e-13);
  cr_assert_float_eq(m.depth, 0.05, 1e-13);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-15);
  VEC_NEAR(m.witness_a, 0.1, 0, 0.45, 1e-13); /* midpoint of the edge */
  ce_geometry_free(a);
  ce_geometry_free(b);
}

Test(mtd, box_box_corner) {
  ce_geometry *a = box(1, 1, 1), *b = box(4, 4, 1);
  /* turn A so that its corner (-1,-1,-1)/2 points straight down */
  ce_vec3 u = ce_normalize(ce_v3(-1, -1, -1)), down = ce_v3(0, 0, -1);
  ce_vec3 axis = ce_normalize(ce_cross(u, down));
  double angle = acos(ce_dot(u, down));
  double zc = 0.5 + 0.5 * sqrt(3.0) - 0.02;
  ce_mtd m = run(a, rot(axis, angle, -0.2, 0.3, zc), b, at(0, 0, 0));
  check_consistent(&m, 1e-13);
  cr_assert_float_eq(m.depth, 0.02, 1e-13);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-13);
  VEC_NEAR(m.witness_a, -0.2, 0.3, 0.48, 1e-13);
  VEC_NEAR(m.witness_b, -0.2, 0.3, 0.5, 1e-13);
  ce_geometry_free(a);
  ce_geometry_free(b);
}

Test(mtd, box_box_edge_edge) {
  ce_geometry *a = box(1, 1, 1);
  /* A's bottom edge along x, B's top edge along y, crossing at x = y = 0 */
  double zc = sqrt(2.0) - 0.03;
  ce_mtd m = run(a, rot(ce_v3(1, 0, 0), M_PI / 4, 0, 0, zc), a, rot(ce_v3(0, 1, 0), M_PI / 4, 0, 0, 0));
  check_consistent(&m, 1e-13);
  cr_assert_float_eq(m.depth, 0.03, 1e-13);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-13);
  VEC_NEAR(m.witness_a, 0, 0, sqrt(0.5) - 0.03, 1e-13);
  VEC_NEAR(m.witness_b, 0, 0, sqrt(0.5), 1e-13);
  ce_geometry_free(a);
}

Test(mtd, capsule_pairs) {
  ce_geometry *c = capsule(0.5, 2), *s = sphere(0.25);
  /* crossed capsules (A along x above B along y) */
  ce_mtd m = run(c, rot(ce_v3(0, 1, 0), M_PI / 2, 0.3, 0.2, 0.9), c, rot(ce_v3(1, 0, 0), M_PI / 2, 0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.1, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-15);
  VEC_NEAR(m.witness_a, 0, 0.2, 0.4, 1e-14);  /* A's axis point above B's axis */
  VEC_NEAR(m.witness_b, 0, 0.2, 0.5, 1e-14);
  /* parallel capsules side by side, axes 0.8 apart along x */
  m = run(c, at(0.8, 0, 0.5), c, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.2, 1e-14);
  VEC_NEAR(m.normal, 1, 0, 0, 1e-15);
  /* end to end along z: caps overlap by 0.1 */
  m = run(c, at(0, 0, 2.9), c, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.1, 1e-14);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-15);
  VEC_NEAR(m.witness_a, 0, 0, 1.4, 1e-14);
  /* sphere against the side of a capsule (both orders) */
  m = run(s, at(0.6, 0, 0.3), c, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.15, 1e-14);
  VEC_NEAR(m.normal, 1, 0, 0, 1e-15);
  m = run(c, at(0, 0, 0), s, at(0.6, 0, 0.3));
  cr_assert_float_eq(m.depth, 0.15, 1e-14);
  VEC_NEAR(m.normal, -1, 0, 0, 1e-15);
  VEC_NEAR(m.witness_a, 0.5, 0, 0.3, 1e-14);
  ce_geometry_free(c);
  ce_geometry_free(s);
}

Test(mtd, halfspace_pairs) {
  ce_geometry *h = halfspace(), *s = sphere(0.5), *b = box(1, 2, 0.5), *c = capsule(0.2, 1);
  /* sphere above a tilted half space (normal (0, sin t, cos t)) */
  double t = 0.3;
  ce_pose Xh = rot(ce_v3(-1, 0, 0), t, 0, 0, 0);
  ce_vec3 n = ce_v3(0, sin(t), cos(t));
  ce_mtd m = run(s, ce_pose_from_quat(ce_quat_identity(), ce_scale(n, 0.4)), h, Xh);
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.1, 1e-14);
  VEC_NEAR(m.normal, n.x, n.y, n.z, 1e-15);
  VEC_NEAR(m.witness_b, 0, 0, 0, 1e-14);
  /* box resting flat: the centre of its bottom face */
  m = run(b, at(1, 2, 0.2), h, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.05, 1e-14);
  VEC_NEAR(m.witness_a, 1, 2, -0.05, 1e-14);
  /* half space as A: the normal points into A, i.e. -z */
  m = run(h, at(0, 0, 0), b, at(1, 2, 0.2));
  cr_assert_float_eq(m.depth, 0.05, 1e-14);
  VEC_NEAR(m.normal, 0, 0, -1, 0);
  /* capsule tilted 30 degrees about y: lowest point is the lower cap */
  double a = M_PI / 6;
  m = run(c, rot(ce_v3(0, 1, 0), a, 0, 0, 0.5 * cos(a) + 0.2 - 0.07), h, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.07, 1e-14);
  VEC_NEAR(m.witness_a, -0.5 * sin(a), 0, -0.07, 1e-14);
  /* two half spaces: a clear error */
  ce_mtd q;
  ce_error err;
  ce_pose I = at(0, 0, 0);
  cr_assert_eq(ce_mtd_compute(h, &I, h, &I, &q, &err), CE_EUNSUPPORTED);
  cr_assert(strstr(err.message, "half spaces") != NULL);
  ce_geometry_free(h);
  ce_geometry_free(s);
  ce_geometry_free(b);
  ce_geometry_free(c);
}

/* GJK/EPA pairs (libccd plus the polish) against closed forms. */
Test(mtd, gjk_pairs) {
  ce_shape cs = {.type = CE_SHAPE_CYLINDER, .radius = 0.5, .length = 1};
  ce_shape es = {.type = CE_SHAPE_ELLIPSOID, .size = {1, 0.5, 0.3}};
  ce_shape us = {.type = CE_SHAPE_ELLIPSOID, .size = {1, 1, 1}};
  ce_geometry *cyl = rigid(cs, 0.25), *ell = rigid(es, 0.1), *unit = rigid(us, 0.5);
  ce_geometry *b = box(4, 4, 1), *s = sphere(0.2), *c = capsule(0.3, 1);
  /* cylinder standing on a box: flat contact, exact */
  ce_mtd m = run(cyl, at(0.1, 0.2, 0.97), b, at(0, 0, 0));
  check_consistent(&m, 1e-9);
  cr_assert(fabs(m.depth - 0.03) < 1e-9, "depth %.15g", m.depth);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-9);
  /* sphere on the pole of an ellipsoid */
  m = run(s, at(0, 0, 0.45), ell, at(0, 0, 0));
  check_consistent(&m, 1e-9);
  cr_assert(fabs(m.depth - 0.05) < 1e-9, "depth %.15g", m.depth);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-6);
  /* a unit ellipsoid is a sphere: compare with the closed form */
  m = run(unit, at(0.3, 0.4, 1.2), unit, at(0, 0, 0));
  check_consistent(&m, 1e-9);
  cr_assert(fabs(m.depth - 0.7) < 1e-9, "depth %.15g", m.depth);
  VEC_NEAR(m.normal, 0.3 / 1.3, 0.4 / 1.3, 1.2 / 1.3, 1e-6);
  /* capsule lying on a box (box-capsule goes through GJK) */
  m = run(c, rot(ce_v3(1, 0, 0), M_PI / 2, 0, 0, 0.5 + 0.3 - 0.04), b, at(0, 0, 0));
  check_consistent(&m, 1e-9);
  cr_assert(fabs(m.depth - 0.04) < 1e-9, "depth %.15g", m.depth);
  VEC_NEAR(m.normal, 0, 0, 1, 1e-9);
  /* apart */
  cr_assert_eq(run(cyl, at(0, 0, 1.2), b, at(0, 0, 0)).overlap, 0);
  ce_geometry_free(cyl);
  ce_geometry_free(ell);
  ce_geometry_free(unit);
  ce_geometry_free(b);
  ce_geometry_free(s);
  ce_geometry_free(c);
}

/* A convex point set shaped like a box gives the box-box answer. */
Test(mtd, convex_hull_matches_box) {
  double pts[8 * 3];
  for (int i = 0; i < 8; i++) {
    pts[3 * i] = (i & 1) ? 0.5 : -0.5;
    pts[3 * i + 1] = (i & 2) ? 0.5 : -0.5;
    pts[3 * i + 2] = (i & 4) ? 0.5 : -0.5;
  }
  ce_shape hs = {.type = CE_SHAPE_CONVEX, .points = pts, .npoints = 8};
  ce_geometry *hull = rigid(hs, 0.5), *bx = box(1, 1, 1), *big = box(4, 4, 1);
  uint64_t seed = 7;
  for (int k = 0; k < 20; k++) {
    ce_pose Xa = ce_pose_from_quat(ce_test_rand_quat(&seed), ce_v3(0.2, -0.1, 0.5 + 0.8 * ce_test_rand(&seed)));
    ce_mtd mb = run(bx, Xa, big, at(0, 0, 0));
    ce_mtd mh = run(hull, Xa, big, at(0, 0, 0));
    cr_assert_eq(mb.overlap, mh.overlap, "pose %d", k);
    if (!mb.overlap) continue;
    cr_assert(fabs(mb.depth - mh.depth) < 1e-9, "pose %d: box %.15g hull %.15g", k, mb.depth, mh.depth);
    cr_assert(ce_norm(ce_sub(mb.normal, mh.normal)) < 1e-6, "pose %d", k);
    cr_assert_eq(mh.hull_a, 0);
  }
  ce_geometry_free(hull);
  ce_geometry_free(bx);
  ce_geometry_free(big);
}

/* A non-convex closed triangle mesh (a tetrahedron with a dent in its
 * base) is replaced by its hull, and the result says so; a convex mesh is
 * not flagged. */
Test(mtd, nonconvex_mesh_uses_hull) {
  /* base triangle 0,1,2 at z = 0, apex 3 above, dent vertex 4 inside */
  double v[5 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0.3, 0.3, 1, 0.3, 0.3, 0.5};
  int32_t tris[6 * 3] = {0, 1, 3, 1, 2, 3, 2, 0, 3, 1, 0, 4, 2, 1, 4, 0, 2, 4};
  ce_props p = ce_test_props(CE_RIGID, 0, 1);
  ce_geometry *g = NULL, *t = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh(v, 5, tris, 6, 1, &p, &g, &err), CE_OK, "%s", err.message);
  int32_t ttris[4 * 3] = {0, 1, 3, 1, 2, 3, 2, 0, 3, 1, 0, 2};
  cr_assert_eq(ce_geometry_from_trimesh(v, 4, ttris, 4, 1, &p, &t, &err), CE_OK, "%s", err.message);
  ce_geometry *h = halfspace();
  ce_mtd m = run(g, at(0, 0, -0.1), h, at(0, 0, 0));
  check_consistent(&m, 1e-14);
  cr_assert_float_eq(m.depth, 0.1, 1e-14);
  cr_assert_eq(m.hull_a, 1);
  cr_assert_eq(m.hull_b, 0);
  /* the centre of the deepest face (the base triangle's three corners) */
  VEC_NEAR(m.witness_a, 1.0 / 3, 1.0 / 3, -0.1, 1e-14);
  m = run(t, at(0, 0, -0.1), h, at(0, 0, 0));
  cr_assert_eq(m.hull_a, 0);
  cr_assert_float_eq(m.depth, 0.1, 1e-14);
  /* through GJK: the dented mesh's hull is the tetrahedron */
  ce_geometry *s = sphere(0.2);
  ce_mtd mg = run(g, at(0, 0, 0), s, at(0.3, 0.3, 1.1));
  ce_mtd mt = run(t, at(0, 0, 0), s, at(0.3, 0.3, 1.1));
  cr_assert(mg.overlap && mt.overlap);
  cr_assert(fabs(mg.depth - mt.depth) < 1e-9);
  cr_assert_eq(mg.hull_a, 1);
  cr_assert_eq(mt.hull_a, 0);
  ce_geometry_free(g);
  ce_geometry_free(t);
  ce_geometry_free(h);
  ce_geometry_free(s);
}

/* Convexity is decided once at build, from the boundary's edges and its
 * connectivity: two disjoint tetrahedra in one mesh are each locally
 * convex but together not convex (hull flagged), while a large convex tet
 * mesh (a sphere's tets given as a plain mesh: thousands of boundary faces
 * times thousands of vertices, more than a per-query all-pairs check could
 * afford) is convex (not flagged). */
Test(mtd, convexity_of_meshes_is_decided_at_build) {
  double v[8 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 3, 0, 0, 4, 0, 0, 3, 1, 0, 3, 0, 1};
  int32_t tets[2 * 4] = {0, 1, 2, 3, 4, 5, 6, 7};
  double zero[8] = {0}; /* every vertex is on the boundary */
  ce_props p = ce_test_props(CE_COMPLIANT, 1e5, 1);
  ce_geometry *two = NULL, *one = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_tetmesh(v, 8, tets, 2, zero, &p, &two, &err), CE_OK, "%s", err.message);
  cr_assert_eq(ce_geometry_from_tetmesh(v, 4, tets, 1, zero, &p, &one, &err), CE_OK, "%s", err.message);
  cr_assert_eq(two->convex, 0);
  cr_assert_eq(one->convex, 1);
  ce_geometry *h = halfspace();
  cr_assert_eq(run(two, at(0, 0, -0.1), h, at(0, 0, 0)).hull_a, 1);
  cr_assert_eq(run(one, at(0, 0, -0.1), h, at(0, 0, 0)).hull_a, 0);

  ce_geometry *ball = NULL, *plain = NULL;
  ce_shape sh = {.type = CE_SHAPE_SPHERE, .radius = 0.1};
  ce_props pc = ce_test_props(CE_COMPLIANT, 1e5, 0.013);
  cr_assert_eq(ce_geometry_from_shape(&sh, &pc, &ball, &err), CE_OK, "%s", err.message);
  const ce_tetmesh *T = &ball->tet;
  cr_assert_gt((int64_t)T->nv * T->nt, 2000000); /* beyond the old per-query check */
  cr_assert_eq(ce_geometry_from_tetmesh(&T->v[0].x, T->nv, &T->tet[0][0], T->nt, NULL, &pc, &plain, &err), CE_OK,
               "%s", err.message);
  cr_assert_eq(plain->convex, 1);
  cr_assert_eq(run(plain, at(0, 0, 0.05), h, at(0, 0, 0)).hull_a, 0);
  ce_geometry_free(two);
  ce_geometry_free(one);
  ce_geometry_free(h);
  ce_geometry_free(ball);
  ce_geometry_free(plain);
}

/* Zero-size primitives never reach the MTD: building them is an error
 * naming the field. */
Test(mtd, zero_size_rejected) {
  ce_shape s = {.type = CE_SHAPE_SPHERE, .radius = 0};
  ce_props p = ce_test_props(CE_RIGID, 0, 0.1);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_neq(ce_geometry_from_shape(&s, &p, &g, &err), CE_OK);
  cr_assert_null(g);
  ce_shape b = {.type = CE_SHAPE_BOX, .size = {1, 0, 1}};
  cr_assert_neq(ce_geometry_from_shape(&b, &p, &g, &err), CE_OK);
  cr_assert_null(g);
}

/* GJK/EPA on curved shapes over random poses, against a closed form: a
 * unit ellipsoid is a unit sphere, so ellipsoid-box must match the
 * analytic sphere-box answer (shallow and deep, centre inside the box). */
Test(mtd, gjk_matches_closed_form_random) {
  ce_shape us = {.type = CE_SHAPE_ELLIPSOID, .size = {0.3, 0.3, 0.3}};
  ce_geometry *ell = rigid(us, 0.15), *sph = sphere(0.3), *bx = box(1, 0.6, 0.4);
  uint64_t seed = 3;
  int hits = 0;
  double worst = 0;
  for (int k = 0; k < 300; k++) {
    ce_vec3 c = ce_v3(1.6 * ce_test_rand(&seed) - 0.8, 1.2 * ce_test_rand(&seed) - 0.6, ce_test_rand(&seed) - 0.5);
    ce_pose Xs = ce_pose_from_quat(ce_test_rand_quat(&seed), c);
    ce_pose Xb = ce_pose_from_quat(ce_test_rand_quat(&seed), ce_v3(0, 0, 0));
    ce_mtd ms = run(sph, Xs, bx, Xb);
    ce_mtd me = run(ell, Xs, bx, Xb);
    if (!ms.overlap || ms.depth < 1e-6) continue;
    hits++;
    cr_assert(me.overlap, "pose %d: GJK missed an overlap of %g", k, ms.depth);
    double err = fabs(me.depth - ms.depth);
    worst = fmax(worst, err);
    cr_assert(err < 3e-7, "pose %d: depth %.15g, closed form %.15g", k, me.depth, ms.depth);
    cr_assert(ce_norm(ce_sub(me.normal, ms.normal)) < 3e-3, "pose %d: normals differ by %g", k,
              ce_norm(ce_sub(me.normal, ms.normal)));
    check_consistent(&me, 1e-9);
  }
  cr_assert(hits > 100, "only %d overlapping poses", hits);
  fprintf(stderr, "gjk vs closed form: %d poses, worst depth error %.3g m (shapes 0.3-0.6 m)\n", hits, worst);
  ce_geometry_free(ell);
  ce_geometry_free(sph);
  ce_geometry_free(bx);
}

/* A geometry with neither vertices nor analytic parameters (nothing the
 * public builders produce, but a future shape kind might) is a clear error,
 * not a crash. */
Test(mtd, empty_geometry_is_an_error) {
  ce_geometry *g = calloc(1, sizeof *g);
  g->shape = CE_SHAPE_TRIMESH;
  g->compliance = CE_RIGID;
  g->modulus = INFINITY;
  g->scale = 1;
  ce_geometry *s = sphere(0.5);
  ce_pose I = at(0, 0, 0);
  ce_mtd m;
  ce_error err;
  cr_assert_eq(ce_mtd_compute(s, &I, g, &I, &m, &err), CE_EUNSUPPORTED);
  cr_assert(strstr(err.message, "geometry B") != NULL, "%s", err.message);
  free(g);
  ce_geometry_free(s);
}

/* A sphere centred exactly on a corner of a cube mesh (a hull: GJK/EPA):
 * every direction of the corner's outward octant is a minimum, EPA's
 * polytope never stops growing, and libccd has no cap on it (the worker
 * running such a query spun for ever). With the support budget it
 * returns, and the answer is the true MTD: depth r along a direction of
 * that octant. Also for a hair off the corner and for the compliant
 * fallback's usual pose family (centre on an edge, on a face). */
static ce_geometry *unit_cube_mesh(void) {
  double v[8 * 3] = {0, 0, 0, 1, 0, 0, 1, 1, 0, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1};
  int32_t t[12 * 3] = {0, 2, 1, 0, 3, 2, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4,
                       1, 2, 6, 1, 6, 5, 2, 3, 7, 2, 7, 6, 3, 0, 4, 3, 4, 7};
  ce_props p = ce_test_props(CE_RIGID, 0, 1);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh(v, 8, t, 12, 1, &p, &g, &err), CE_OK, "%s", err.message);
  return g;
}

Test(mtd, degenerate_minimum_terminates, .timeout = 20) {
  ce_geometry *c = unit_cube_mesh(), *s = sphere(0.1);
  const double at_[][3] = {{0, 0, 0}, {1e-12, -1e-12, 0}, {0, 0, 0.5}, {0, 0.5, 0.5}, {1, 1, 1}};
  for (size_t k = 0; k < sizeof at_ / sizeof at_[0]; k++) {
    ce_mtd m = run(c, at(0, 0, 0), s, at(at_[k][0], at_[k][1], at_[k][2]));
    check_consistent(&m, 1e-9);
    cr_expect(fabs(m.depth - 0.1) < 1e-9, "centre (%g, %g, %g): depth %.15g, want 0.1", at_[k][0], at_[k][1],
              at_[k][2], m.depth);
    /* moving the cube along +n by the depth separates it from the sphere */
    for (int i = 0; i < 3; i++) {
      const double ni = i == 0 ? m.normal.x : i == 1 ? m.normal.y : m.normal.z;
      const double inward = at_[k][i] < 0.5 ? 1 : -1; /* the cube lies on this side of the centre */
      cr_expect(ni * inward >= -1e-9, "centre (%g, %g, %g): normal (%g, %g, %g) points out of the cube's side",
                at_[k][0], at_[k][1], at_[k][2], m.normal.x, m.normal.y, m.normal.z);
    }
  }
  ce_geometry_free(c);
  ce_geometry_free(s);
}
