/* test_intersect_rigid.c — compliant mesh vs rigid mesh, compliant mesh vs
 * half space (rigid and compliant), compliant half space vs rigid mesh. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 16); }
/* for the tests whose surfaces are large */
static void setup_large(void) { arena = ce_arena_create(1 << 20); }
static void teardown(void) { ce_arena_destroy(arena); }

/* A compliant tet mesh built by hand (the public builder insists on zero
 * pressure on the boundary, which a one-tet mesh cannot have). */
static ce_geometry *raw_tetmesh(int32_t nv, const double *v, int32_t nt, const int32_t *tets, const double *p,
                                double modulus) {
  ce_geometry *g = calloc(1, sizeof *g);
  g->shape = CE_SHAPE_TETMESH;
  g->compliance = CE_COMPLIANT;
  g->modulus = modulus;
  ce_tetmesh *m = &g->tet;
  m->nv = nv;
  m->nt = nt;
  m->v = malloc((size_t)nv * sizeof *m->v);
  m->p = malloc((size_t)nv * sizeof *m->p);
  m->tet = malloc((size_t)nt * sizeof *m->tet);
  m->grad = malloc((size_t)nt * sizeof *m->grad);
  m->offset = malloc((size_t)nt * sizeof *m->offset);
  m->prange = malloc((size_t)nt * sizeof *m->prange);
  m->adj = malloc((size_t)nt * sizeof *m->adj);
  double sc = 0;
  for (int32_t i = 0; i < nv; i++) {
    m->v[i] = ce_v3(v[3 * i], v[3 * i + 1], v[3 * i + 2]);
    m->p[i] = p[i];
    sc = fmax(sc, ce_norm(m->v[i]));
  }
  g->scale = sc;
  memcpy(m->tet, tets, (size_t)nt * sizeof *m->tet);
  for (int32_t t = 0; t < nt; t++) {
    ce_vec3 x[4];
    double pv[4];
    m->prange[t][0] = INFINITY;
    m->prange[t][1] = -INFINITY;
    for (int i = 0; i < 4; i++) {
      x[i] = m->v[m->tet[t][i]];
      pv[i] = m->p[m->tet[t][i]];
      m->prange[t][0] = fmin(m->prange[t][0], pv[i]);
      m->prange[t][1] = fmax(m->prange[t][1], pv[i]);
    }
    m->grad[t] = ce_tet_linear_field(x, pv, &m->offset[t]);
  }
  ce_test_tet_adjacency(m);
  cr_assert_eq(ce_bvh_build(&g->bvh, nt, 4, &m->tet[0][0], m->v, m->p, NULL, NULL), CE_OK);
  return g;
}

static ce_geometry *rigid_trimesh(int32_t nv, const double *v, int32_t nf, const int32_t *tris) {
  ce_props pr = ce_test_props(CE_RIGID, 0, 1);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh(v, nv, tris, nf, 0, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

static ce_geometry *halfspace(ce_compliance c, double E, double slab) {
  ce_props pr = ce_test_props(c, E, 1);
  pr.slab_thickness = slab;
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_build_halfspace(&pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

/* the unit corner tet with p = 1000 z (gradient +z) */
static const double tet_v[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
static const int32_t tet_t[] = {0, 1, 2, 3};
static const double tet_p[] = {0, 0, 0, 1000};

static double surface_area(const ce_surface *s) {
  double A = 0;
  for (int f = 0; f < s->nf; f++) A += s->area[f];
  return A;
}
static double surface_force(const ce_surface *s) {
  double F = 0;
  for (int f = 0; f < s->nf; f++) F += s->area[f] * s->centroid_pressure[f];
  return F;
}

/* Polygon vertices are CCW about the face normal. */
static void assert_ccw(const ce_surface *s) {
  for (int f = 0; f < s->nf; f++) {
    const int32_t *ids = s->face_vertices + s->face_offsets[f];
    int n = s->face_offsets[f + 1] - s->face_offsets[f];
    ce_vec3 a2 = ce_v3(0, 0, 0);
    for (int i = 0; i < n; i++) a2 = ce_add(a2, ce_cross(s->vertices[ids[i]], s->vertices[ids[(i + 1) % n]]));
    cr_assert(ce_dot(a2, s->normal[f]) > 0, "face %d is not CCW about its normal", f);
  }
}

/* ---- tet vs rigid triangle ------------------------------------------------ */

Test(intersect_rigid, tet_tri_single_triangle_clipped, .init = setup, .fini = teardown) {
  ce_geometry *m = raw_tetmesh(4, tet_v, 1, tet_t, tet_p, 1000);
  /* triangle in z = 0.25, normal +z (along M's gradient): clipped to
   * x >= 0.1, y >= 0.1, x + y <= 0.75: a right triangle with legs 0.55 */
  double tv[] = {0.1, 0.1, 0.25, 2, 0.1, 0.25, 0.1, 2, 0.25};
  int32_t tt[] = {0, 1, 2};
  ce_geometry *n = rigid_trimesh(3, tv, 1, tt);
  ce_pose X = ce_pose_identity();
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_tet_tri(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.candidate_pairs, 1);
  cr_assert_eq(c.polygons, 1);
  cr_assert_eq(c.faces_dropped, 0);
  ce_surface s;
  cr_assert_eq(ce_builder_finish(&b, &X, 1, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 1);
  cr_assert_eq(s.face_offsets[1], 3);
  cr_assert(fabs(s.area[0] - 0.55 * 0.55 / 2) < 1e-14, "area %.17g", s.area[0]);
  cr_assert(fabs(s.centroid_pressure[0] - 250) < 1e-10);
  for (int i = 0; i < s.nv; i++) cr_assert(fabs(s.pressure[i] - 250) < 1e-10);
  cr_assert(ce_norm(ce_sub(s.centroid[0], ce_v3(0.1 + 0.55 / 3, 0.1 + 0.55 / 3, 0.25))) < 1e-14);
  cr_assert(ce_norm(ce_sub(s.normal[0], ce_v3(0, 0, 1))) < 1e-15);
  cr_assert_eq(s.element_a[0], 0);
  cr_assert_eq(s.element_b[0], 0);
  cr_assert_null(s.grad_b);
  cr_assert(ce_norm(ce_sub(s.grad_a[0], ce_v3(0, 0, 1000))) < 1e-9);
  assert_ccw(&s);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

Test(intersect_rigid, tet_tri_back_face_dropped_by_gradient_rule, .init = setup, .fini = teardown) {
  ce_geometry *m = raw_tetmesh(4, tet_v, 1, tet_t, tet_p, 1000);
  /* two triangles at z = 0.5 covering the cross-section: one facing +z
   * (kept), one facing -z (against M's gradient: dropped) */
  double tv[] = {-1, -1, 0.5, 3, -1, 0.5, -1, 3, 0.5, -1, -1, 0.5, 3, -1, 0.5, -1, 3, 0.5};
  int32_t tt[] = {0, 1, 2, 3, 5, 4};
  ce_geometry *n = rigid_trimesh(6, tv, 2, tt);
  /* place N rotated 90 degrees about z and shifted along x: the plane stays
   * z = 0.5; the triangle becomes (2,-1) (2,3) (-2,-1), still covering the
   * section */
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 0, 1), M_PI / 2), ce_v3(1, 0, 0));
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_tet_tri(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.candidate_pairs, 2);
  cr_assert_eq(c.faces_dropped, 1);
  cr_assert_eq(c.polygons, 1);
  ce_surface s;
  ce_pose I = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &I, 1, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 1);
  /* the section x, y >= 0, x + y <= 0.5 */
  cr_assert(fabs(s.area[0] - 0.125) < 1e-14, "area %.17g", s.area[0]);
  cr_assert(fabs(s.centroid_pressure[0] - 500) < 1e-10);
  cr_assert_eq(s.element_b[0], 0);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

Test(intersect_rigid, tet_tri_on_shared_face_counted_once, .init = setup, .fini = teardown) {
  /* two tets sharing the face z = 0 (vertices 0, 1, 2); apexes at z = +-1 */
  double v[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, -1};
  int32_t t[] = {0, 1, 2, 3, 0, 2, 1, 4};
  /* p grows with z in both tets, so both pass the gradient rule and only
   * the half-open rule on the shared face prevents the double count */
  double p[] = {100, 100, 100, 1000, 0};
  ce_geometry *m = raw_tetmesh(5, v, 2, t, p, 1000);
  cr_assert_eq(m->tet.adj[0][3], 1);
  cr_assert_eq(m->tet.adj[1][3], 0);
  double tv[] = {-1, -1, 0, 3, -1, 0, -1, 3, 0};
  int32_t tt[] = {0, 1, 2};
  ce_geometry *n = rigid_trimesh(3, tv, 1, tt);
  ce_pose X = ce_pose_identity();
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_tet_tri(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.candidate_pairs, 2);
  cr_assert_eq(c.faces_dropped, 0);
  cr_assert_eq(c.polygons, 1, "the shared face was produced %lld times", (long long)c.polygons);
  ce_surface s;
  cr_assert_eq(ce_builder_finish(&b, &X, 1, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert(fabs(surface_area(&s) - 0.5) < 1e-14);
  cr_assert(fabs(s.centroid_pressure[0] - 100) < 1e-10);
  /* kept in the tet on the side the normal points to (+z: tet 0) */
  cr_assert_eq(s.element_a[0], 0);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

/* ---- tet vs rigid half space ---------------------------------------------- */

Test(intersect_rigid, tet_rigid_halfspace_triangle_slice, .init = setup, .fini = teardown) {
  ce_geometry *m = raw_tetmesh(4, tet_v, 1, tet_t, tet_p, 1000);
  ce_geometry *n = halfspace(CE_RIGID, 0, 0);
  /* N's boundary at z_M = 0.5, N's +z = M's +z (N below, pushing up);
   * a rotation about z leaves the plane unchanged */
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 0, 1), 0.3), ce_v3(5, -2, 0.5));
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_tet_halfspace(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.candidate_pairs, 1);
  cr_assert_eq(c.polygons, 1);
  ce_surface s;
  ce_pose I = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &I, 1, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 1);
  cr_assert_eq(s.nv, 3);
  cr_assert(fabs(s.area[0] - 0.125) < 1e-14);
  cr_assert(fabs(s.centroid_pressure[0] - 500) < 1e-10);
  cr_assert(ce_norm(ce_sub(s.centroid[0], ce_v3(1.0 / 6, 1.0 / 6, 0.5))) < 1e-14);
  cr_assert(ce_norm(ce_sub(s.normal[0], ce_v3(0, 0, 1))) < 1e-15);
  assert_ccw(&s);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

Test(intersect_rigid, tet_rigid_halfspace_quad_slice_tilted, .init = setup, .fini = teardown) {
  ce_geometry *m = raw_tetmesh(4, tet_v, 1, tet_t, tet_p, 1000);
  ce_geometry *n = halfspace(CE_RIGID, 0, 0);
  /* N's +z = (1, 0, 1)/sqrt2 in M, boundary x + z = 0.5: vertices 0, 2 in N,
   * 1, 3 outside: a 0.5 x (0.5 sqrt2) rectangle with corners
   * (.5,0,0) (.5,.5,0) (0,.5,.5) (0,0,.5); p = 1000 z: 0, 0, 500, 500 */
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 1, 0), M_PI / 4), ce_v3(0.25, 0, 0.25));
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_tet_halfspace(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.polygons, 1);
  ce_surface s;
  ce_pose I = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &I, 1, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 1);
  cr_assert_eq(s.face_offsets[1], 4);
  cr_assert(fabs(s.area[0] - 0.25 * sqrt(2.0)) < 1e-14, "area %.17g", s.area[0]);
  cr_assert(fabs(s.centroid_pressure[0] - 250) < 1e-10);
  cr_assert(ce_norm(ce_sub(s.normal[0], ce_v3(M_SQRT1_2, 0, M_SQRT1_2))) < 1e-15);
  cr_assert(ce_norm(ce_sub(s.centroid[0], ce_v3(0.25, 0.25, 0.25))) < 1e-14);
  assert_ccw(&s);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

Test(intersect_rigid, tet_rigid_halfspace_shares_vertices, .init = setup, .fini = teardown) {
  /* the two-tet mesh sliced by z = 0.5 ... only tet 0 reaches it; use x = 0.5
   * instead (N's +z = M's -x, material x >= 0.5): both tets are cut and the
   * cut points on their shared edges coincide */
  double v[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, -1};
  int32_t t[] = {0, 1, 2, 3, 0, 2, 1, 4};
  double p[] = {100, 100, 100, 1000, 1000};
  ce_geometry *m = raw_tetmesh(5, v, 2, t, p, 1000);
  ce_geometry *n = halfspace(CE_RIGID, 0, 0);
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 1, 0), -M_PI / 2), ce_v3(0.5, 0, 0));
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_tet_halfspace(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.polygons, 2);
  ce_surface s;
  ce_pose I = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &I, 1, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  /* cut edges: (0,1) shared, (1,2) shared, (1,3), (1,4): 4 distinct points */
  cr_assert_eq(s.nv, 4, "nv %d", s.nv);
  /* each slice is a triangle with legs 0.5: area 1/8 each */
  cr_assert(fabs(surface_area(&s) - 0.25) < 1e-14);
  for (int f = 0; f < 2; f++) cr_assert(ce_norm(ce_sub(s.normal[f], ce_v3(-1, 0, 0))) < 1e-15);
  /* pressures: at (0.5,0,0) and (0.5,0.5,0): 100; at (0.5,0,+-0.5): 550 */
  cr_assert(fabs(surface_force(&s) - 2 * 0.125 * (100 + 100 + 550) / 3) < 1e-10);
  assert_ccw(&s);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

/* ---- tet vs compliant half space ------------------------------------------ */

Test(intersect_rigid, tet_compliant_halfspace_equal_pressure_plane, .init = setup, .fini = teardown) {
  ce_geometry *m = raw_tetmesh(4, tet_v, 1, tet_t, tet_p, 1000);
  /* N: E = 1000, slab 0.5 (p_N = 2000 * depth), boundary z_M = 0.75, N below.
   * p_M = 1000 z = 2000 (0.75 - z)  ->  z = 0.5, p = 500 */
  ce_geometry *n = halfspace(CE_COMPLIANT, 1000, 0.5);
  ce_pose X = ce_pose_from_quat(ce_quat_identity(), ce_v3(0, 0, 0.75));
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_tet_halfspace(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.candidate_pairs, 1);
  cr_assert_eq(c.polygons, 1);
  ce_surface s;
  ce_pose I = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &I, 1, 1, 1, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 1);
  cr_assert(fabs(s.area[0] - 0.125) < 1e-14, "area %.17g", s.area[0]);
  cr_assert(fabs(s.centroid_pressure[0] - 500) < 1e-9);
  cr_assert(ce_norm(ce_sub(s.normal[0], ce_v3(0, 0, 1))) < 1e-15);
  cr_assert(ce_norm(ce_sub(s.grad_a[0], ce_v3(0, 0, 1000))) < 1e-9);
  cr_assert(ce_norm(ce_sub(s.grad_b[0], ce_v3(0, 0, -2000))) < 1e-9);
  cr_assert_eq(s.element_b[0], 0);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

Test(intersect_rigid, tet_compliant_halfspace_tilted_plane, .init = setup, .fini = teardown) {
  ce_geometry *m = raw_tetmesh(4, tet_v, 1, tet_t, tet_p, 1000);
  ce_geometry *n = halfspace(CE_COMPLIANT, 3000, 2.0);
  /* N tilted 20 degrees about y, boundary through (0.3, 0.1, 0.8) */
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 1, 0), 20 * M_PI / 180), ce_v3(0.3, 0.1, 0.8));
  ce_vec3 nz = ce_pose_rotate(&X, ce_v3(0, 0, 1));
  double kN = 3000 / 2.0;
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_tet_halfspace(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.polygons, 1);
  ce_surface s;
  ce_pose I = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &I, 1, 1, 1, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  ce_vec3 gN = ce_scale(nz, -kN);
  ce_vec3 nexp = ce_normalize(ce_sub(ce_v3(0, 0, 1000), gN));
  cr_assert(ce_norm(ce_sub(s.normal[0], nexp)) < 1e-14);
  for (int i = 0; i < s.nv; i++) {
    ce_vec3 x = s.vertices[i];
    double pM = 1000 * x.z, pN = kN * -(ce_dot(nz, ce_sub(x, X.p)));
    cr_assert(fabs(pM - pN) < 1e-9, "vertex %d: pM %g pN %g", i, pM, pN);
    cr_assert(fabs(s.pressure[i] - pM) < 1e-9);
    /* inside the tet */
    cr_assert(x.x >= -1e-14 && x.y >= -1e-14 && x.z >= -1e-14 && x.x + x.y + x.z <= 1 + 1e-14);
  }
  /* The equal-pressure plane 1000 z = kN (d - nz.x) is
   * (1000 + kN nz.z) z + kN nz.x x = kN d: a plane through the tet; its
   * section area (a triangle with vertices on edges 0-3, 1-3, 2-3) */
  double d = ce_dot(nz, X.p);
  double az = 1000 + kN * nz.z, ax = kN * nz.x, rhs = kN * d;
  /* edge 0-3: (0,0,z): z = rhs/az; edge 2-3: (0,y,z) with y + z = 1: same z;
   * edge 1-3: (x,0,1-x): ax x + az (1-x) = rhs */
  double z0 = rhs / az, x1 = (rhs - az) / (ax - az);
  ce_vec3 A = ce_v3(0, 0, z0), B = ce_v3(x1, 0, 1 - x1), C = ce_v3(0, 1 - z0, z0);
  double area = 0.5 * ce_norm(ce_cross(ce_sub(B, A), ce_sub(C, A)));
  cr_assert(fabs(s.area[0] - area) < 1e-13, "area %.17g vs %.17g", s.area[0], area);
  assert_ccw(&s);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

Test(intersect_rigid, tet_compliant_halfspace_gradient_rule_drops_opposed, .init = setup, .fini = teardown) {
  ce_geometry *m = raw_tetmesh(4, tet_v, 1, tet_t, tet_p, 1000);
  ce_geometry *n = halfspace(CE_COMPLIANT, 1000, 0.5);
  /* N above the tet pushing down (its +z = M's -z), boundary at z = 0.25:
   * p_N = 2000 (z - 0.25) meets p_M = 1000 z at z = 0.5, but there the two
   * gradients point the same way (+z): no valid equal-pressure surface */
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(1, 0, 0), M_PI), ce_v3(0, 0, 0.25));
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_tet_halfspace(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.polygons, 0);
  cr_assert_eq(c.faces_dropped, 1);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

/* ---- compliant half space vs rigid triangles ------------------------------ */

Test(intersect_rigid, halfspace_tri_clip_and_pressure, .init = setup, .fini = teardown) {
  /* M: compliant half space E = 1e5, slab 0.1 -> p = 1e6 (-z) */
  ce_geometry *m = halfspace(CE_COMPLIANT, 1e5, 0.1);
  /* N: two triangles facing down (normal ~ -z) sharing the edge (1, 2),
   * plus one facing up (dropped by the gradient rule) */
  double v[] = {0, 0, -0.01, 0, 1, -0.01, 1, 0, 0.01, 1, 1, 0.01, 2, 0, -0.01, 3, 0, -0.01, 2, 1, -0.01};
  int32_t t[] = {0, 1, 2, 1, 3, 2, 4, 5, 6};
  ce_geometry *n = rigid_trimesh(7, v, 3, t);
  ce_pose X = ce_pose_identity();
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_halfspace_tri(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.candidate_pairs, 3);
  cr_assert_eq(c.faces_dropped, 1);
  /* triangle 0 gives a quad (x <= 0.5); triangle 1 (1,3,2) has only vertex
   * 1 below: a triangle; both lie in the plane z = -0.01 + 0.02 x */
  cr_assert_eq(c.polygons, 2);
  ce_surface s;
  cr_assert_eq(ce_builder_finish(&b, &X, 1, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  /* shared: vertex 0, vertex 1, crossing on edge (0,2) at (0.5,0,0), crossing
   * on the shared edge (1,2) at (0.5,0.5,0), crossing on edge (1,3) at
   * (0.5,1,0): 5 vertices */
  cr_assert_eq(s.nv, 5, "nv %d", s.nv);
  /* Whole clipped region: the strip 0 <= x <= 0.5, 0 <= y <= 1 of the tilted
   * plane z = -0.01 + 0.02 x; slope factor sqrt(1 + 0.02^2) */
  double slope = sqrt(1 + 0.02 * 0.02);
  cr_assert(fabs(surface_area(&s) - 0.5 * slope) < 1e-13, "area %.17g", surface_area(&s));
  /* integral of p = 1e6 (0.01 - 0.02 x) over the strip: 1e6 (0.005 - 0.0025) */
  cr_assert(fabs(surface_force(&s) - 1e6 * 0.0025 * slope) < 1e-7, "force %.17g", surface_force(&s));
  for (int f = 0; f < s.nf; f++) {
    cr_assert(s.normal[f].z < -0.99);
    cr_assert_eq(s.element_a[f], 0);
    cr_assert(ce_norm(ce_sub(s.grad_a[f], ce_v3(0, 0, -1e6))) < 1e-6);
  }
  assert_ccw(&s);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

Test(intersect_rigid, halfspace_tri_with_pose, .init = setup, .fini = teardown) {
  ce_geometry *m = halfspace(CE_COMPLIANT, 2e5, 0.5); /* p = 4e5 (-z) */
  /* a horizontal triangle facing -z in N, placed 0.02 below M's boundary by
   * a pose with a rotation about z */
  double v[] = {0, 0, 0, 0, 1, 0, 1, 0, 0};
  int32_t t[] = {0, 1, 2};
  ce_geometry *n = rigid_trimesh(3, v, 1, t);
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 0, 1), 1.0), ce_v3(3, 4, -0.02));
  ce_builder b;
  ce_counters c = {0, 0, 0};
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_intersect_halfspace_tri(m, n, &X, &b, &c), CE_OK);
  cr_assert_eq(c.polygons, 1);
  ce_surface s;
  ce_pose I = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &I, 1, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert(fabs(s.area[0] - 0.5) < 1e-14);
  cr_assert(fabs(s.centroid_pressure[0] - 4e5 * 0.02) < 1e-8);
  cr_assert_eq(s.element_b[0], 0);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

/* ---- consistency on a real mesh -------------------------------------------- */

/* The cube [-0.5, 0.5]^3 as 12 tets around its centre (vertex 8): pressure
 * 0 at the corners, E at the centre (built by the public builder). */
static ce_geometry *pyramid_cube(double E) {
  double v[27];
  for (int i = 0; i < 8; i++) {
    v[3 * i] = (i & 1) ? 0.5 : -0.5;
    v[3 * i + 1] = (i & 2) ? 0.5 : -0.5;
    v[3 * i + 2] = (i & 4) ? 0.5 : -0.5;
  }
  v[24] = v[25] = v[26] = 0;
  int32_t t[48];
  int nt = 0;
  for (int k = 0; k < 3; k++)
    for (int s = 0; s < 2; s++) {
      int u = (k + 1) % 3, w = (k + 2) % 3;
      int q[4], uv[4][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 1}};
      for (int i = 0; i < 4; i++) q[i] = (s << k) | (uv[i][0] << u) | (uv[i][1] << w);
      int tri[2][3] = {{q[0], q[1], q[2]}, {q[0], q[2], q[3]}};
      for (int j = 0; j < 2; j++) {
        int32_t *o = t + 4 * nt++;
        o[0] = tri[j][0];
        o[1] = tri[j][1];
        o[2] = tri[j][2];
        o[3] = 8;
        ce_vec3 a = ce_v3(v[3 * o[0]], v[3 * o[0] + 1], v[3 * o[0] + 2]);
        ce_vec3 b = ce_v3(v[3 * o[1]], v[3 * o[1] + 1], v[3 * o[1] + 2]);
        ce_vec3 c = ce_v3(v[3 * o[2]], v[3 * o[2] + 1], v[3 * o[2] + 2]);
        if (ce_dot(ce_cross(ce_sub(b, a), ce_sub(c, a)), ce_neg(a)) < 0) {
          o[1] = tri[j][2];
          o[2] = tri[j][1];
        }
      }
    }
  double p[9] = {0, 0, 0, 0, 0, 0, 0, 0, E};
  ce_props pr = ce_test_props(CE_COMPLIANT, E, 1);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_tetmesh(v, 9, t, nt, p, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

/* A rigid square [-L, L]^2 in z = 0 of its frame, normal +z (2 triangles). */
static ce_geometry *rigid_square(double L) {
  double v[] = {-L, -L, 0, L, -L, 0, L, L, 0, -L, L, 0};
  int32_t t[] = {0, 1, 2, 0, 2, 3};
  return rigid_trimesh(4, v, 2, t);
}

static void run(ce_errno (*fn)(const ce_geometry *, const ce_geometry *, const ce_pose *, ce_builder *,
                               ce_counters *),
                const ce_geometry *m, const ce_geometry *n, const ce_pose *X, ce_representation rep,
                ce_surface *s, ce_counters *c) {
  ce_builder b;
  memset(c, 0, sizeof *c);
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(fn(m, n, X, &b, c), CE_OK);
  ce_pose I = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &I, 1, 1, n->compliance == CE_COMPLIANT, rep, s, NULL), CE_OK);
}

Test(intersect_rigid, plane_through_centre_vertex_counted_once, .init = setup, .fini = teardown) {
  /* z = 0 passes through the centre vertex shared by all 12 tets: the slice
   * is the unit square once, its pressure a pyramid of height E: E/3 */
  ce_geometry *m = pyramid_cube(1e5);
  ce_geometry *n = halfspace(CE_RIGID, 0, 0);
  ce_geometry *sq = rigid_square(2);
  ce_pose X = ce_pose_identity();
  ce_surface s, s2;
  ce_counters c, c2;
  run(ce_intersect_tet_halfspace, m, n, &X, CE_REPRESENTATION_POLYGON, &s, &c);
  cr_assert(fabs(surface_area(&s) - 1) < 1e-14, "area %.17g", surface_area(&s));
  cr_assert(fabs(surface_force(&s) - 1e5 / 3) < 1e-9);
  cr_assert_eq(c.polygons, 8);
  assert_ccw(&s);
  run(ce_intersect_tet_tri, m, sq, &X, CE_REPRESENTATION_POLYGON, &s2, &c2);
  cr_assert(fabs(surface_area(&s2) - 1) < 1e-14, "area %.17g", surface_area(&s2));
  cr_assert(fabs(surface_force(&s2) - 1e5 / 3) < 1e-9);
  ce_geometry_free(sq);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

/* V - E + F of a surface whose faces share vertices (edges counted once). */
static int64_t euler(const ce_surface *s) {
  return ce_test_euler(s->nv, s->nf, s->face_offsets, s->face_vertices, NULL);
}

Test(intersect_rigid, halfspace_slice_equals_clipped_square, .init = setup, .fini = teardown) {
  /* The same plane as a rigid half space and as a big rigid square: both
   * must give the same area and pressure integral. Planes tilted <= 20 deg
   * from +z, below the centre, so no cut tet opposes the normal and the
   * square's gradient rule drops nothing. */
  ce_geometry *m = pyramid_cube(1e5);
  ce_geometry *n = halfspace(CE_RIGID, 0, 0);
  ce_geometry *sq = rigid_square(3);
  uint64_t seed = 12345;
  for (int it = 0; it < 50; it++) {
    ce_arena_reset(arena);
    double tilt = 20 * M_PI / 180 * ce_test_rand(&seed), az = 2 * M_PI * ce_test_rand(&seed);
    ce_quat q1 = ce_quat_from_axis_angle(ce_v3(cos(az), sin(az), 0), tilt);
    ce_quat q0 = ce_quat_from_axis_angle(ce_v3(0, 0, 1), 2 * M_PI * ce_test_rand(&seed));
    ce_quat q = ce_quat_mul(q1, q0);
    ce_vec3 nz = ce_quat_rotate(q, ce_v3(0, 0, 1));
    double depth = 0.02 + 0.3 * ce_test_rand(&seed); /* centre above the plane */
    ce_vec3 p = ce_axpy(ce_v3(0.2 * ce_test_rand(&seed) - 0.1, 0.2 * ce_test_rand(&seed) - 0.1, 0), -depth, nz);
    ce_pose X = ce_pose_from_quat(q, p);
    ce_surface s1, s2;
    ce_counters c1, c2;
    run(ce_intersect_tet_halfspace, m, n, &X, CE_REPRESENTATION_POLYGON, &s1, &c1);
    run(ce_intersect_tet_tri, m, sq, &X, CE_REPRESENTATION_TRIANGLE, &s2, &c2);
    cr_assert_eq(c2.faces_dropped, 0);
    cr_assert(c1.polygons > 0);
    double A1 = surface_area(&s1), A2 = surface_area(&s2);
    double F1 = surface_force(&s1), F2 = surface_force(&s2);
    cr_assert(fabs(A1 - A2) < 1e-12 * A1, "it %d: area %.17g vs %.17g", it, A1, A2);
    cr_assert(fabs(F1 - F2) < 1e-10 * F1, "it %d: force %.17g vs %.17g", it, F1, F2);
    for (int f = 0; f < s1.nf; f++) cr_assert(ce_norm(ce_sub(s1.normal[f], nz)) < 1e-14);
    assert_ccw(&s1);
    assert_ccw(&s2);
    /* both surfaces are connected and share their vertices: a disc,
     * Euler characteristic V - E + F = 1 */
    cr_assert_eq(euler(&s1), 1, "it %d: half-space slice is not a disc", it);
    cr_assert_eq(euler(&s2), 1, "it %d: clipped square is not a disc", it);
  }
  ce_geometry_free(sq);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

Test(intersect_rigid, stiff_compliant_halfspace_approaches_rigid, .init = setup, .fini = teardown) {
  ce_geometry *m = pyramid_cube(1e5);
  ce_geometry *nr = halfspace(CE_RIGID, 0, 0);
  ce_geometry *nc = halfspace(CE_COMPLIANT, 1e13, 1.0);
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(1, 1, 0), 0.2), ce_v3(0.05, -0.02, -0.2));
  ce_surface s1, s2;
  ce_counters c1, c2;
  run(ce_intersect_tet_halfspace, m, nr, &X, CE_REPRESENTATION_POLYGON, &s1, &c1);
  run(ce_intersect_tet_halfspace, m, nc, &X, CE_REPRESENTATION_POLYGON, &s2, &c2);
  cr_assert_eq(c2.faces_dropped, 0);
  double A1 = surface_area(&s1), A2 = surface_area(&s2);
  double F1 = surface_force(&s1), F2 = surface_force(&s2);
  /* the equal-pressure plane sits p / (E_N / s) ~ 1e-8 below the boundary */
  cr_assert(fabs(A1 - A2) < 1e-6 * A1, "area %.17g vs %.17g", A1, A2);
  cr_assert(fabs(F1 - F2) < 1e-6 * F1, "force %.17g vs %.17g", F1, F2);
  cr_assert(F2 < F1); /* slightly shallower */
  ce_geometry_free(nc);
  ce_geometry_free(nr);
  ce_geometry_free(m);
}

Test(intersect_rigid, contact_role_swap_and_representations, .init = setup, .fini = teardown) {
  ce_geometry *m = pyramid_cube(1e5);
  ce_geometry *h = halfspace(CE_RIGID, 0, 0);
  ce_geometry *hc = halfspace(CE_COMPLIANT, 2e5, 0.5);
  ce_geometry *sq = rigid_square(3);
  uint64_t seed = 99;
  ce_body cube = ce_test_body(m, ce_test_rand_quat(&seed), ce_v3(0.1, 0.2, 0.3));
  /* N's boundary 0.2 below the cube centre, tilted */
  ce_quat qn = ce_quat_from_axis_angle(ce_v3(0, 1, 0), 0.15);
  ce_vec3 pn = ce_axpy(ce_v3(0.1, 0.2, 0.3), -0.2, ce_quat_rotate(qn, ce_v3(0, 0, 1)));
  const ce_geometry *others[3] = {h, hc, sq};
  for (int k = 0; k < 3; k++) {
    ce_body other = ce_test_body(others[k], qn, pn);
    ce_options o;
    ce_options_default(&o);
    o.want_surface = 1;
    ce_result r1, r2, r3;
    ce_error err;
    ce_arena_reset(arena);
    cr_assert_eq(ce_contact(&cube, &other, &o, arena, &r1, &err), CE_OK, "%s", err.message);
    cr_assert_eq(ce_contact(&other, &cube, &o, arena, &r2, &err), CE_OK, "%s", err.message);
    o.representation = CE_REPRESENTATION_TRIANGLE;
    cr_assert_eq(ce_contact(&other, &cube, &o, arena, &r3, &err), CE_OK, "%s", err.message);
    cr_assert_eq(r1.status, CE_CONTACT_SURFACE, "pair %d", k);
    double F = ce_norm(r1.wrench_a.force);
    cr_assert(F > 0);
    /* the cube is pushed along the plane's +z, away from N */
    ce_vec3 nz = ce_quat_rotate(qn, ce_v3(0, 0, 1));
    cr_assert(ce_dot(r1.wrench_a.force, nz) > 0.999 * F, "pair %d", k);
    cr_assert(ce_norm(ce_sub(r1.wrench_a.force, r2.wrench_b.force)) < 1e-9 * F, "pair %d", k);
    cr_assert(ce_norm(ce_sub(r1.wrench_a.torque, r2.wrench_b.torque)) < 1e-9 * F, "pair %d", k);
    cr_assert(ce_norm(ce_sub(r3.wrench_b.force, r2.wrench_b.force)) < 1e-9 * F, "pair %d", k);
    cr_assert(ce_norm(ce_sub(r3.wrench_b.torque, r2.wrench_b.torque)) < 1e-9 * F, "pair %d", k);
    cr_assert(fabs(r1.area - r2.area) < 1e-12, "pair %d", k);
    cr_assert(fabs(r3.area - r2.area) < 1e-12, "pair %d", k);
    /* rigid N: the plane's normal; compliant N: (gM - gN)/|gM - gN| */
    double lim = others[k]->compliance == CE_COMPLIANT ? 0.5 : 0.999999;
    for (int f = 0; f < r1.surface.nf; f++) cr_assert(ce_dot(r1.surface.normal[f], nz) > lim);
    for (int f = 0; f < r2.surface.nf; f++) cr_assert(ce_dot(r2.surface.normal[f], nz) < -lim);
    assert_ccw(&r1.surface);
    assert_ccw(&r2.surface);
    assert_ccw(&r3.surface);
  }
  ce_geometry_free(sq);
  ce_geometry_free(hc);
  ce_geometry_free(h);
  ce_geometry_free(m);
}

Test(intersect_rigid, diagonal_plane_along_shared_tet_faces, .init = setup, .fini = teardown) {
  /* The plane x = y contains tet faces of the cube mesh (the split diagonals
   * of the z = +-0.5 faces with the centre, and the cube edges x = y = +-0.5
   * with the centre). On it p = E (1 - 2 max(|t|, |z|)) for points (t, t, z),
   * so the slice has area sqrt2 and pressure integral sqrt2 E / 3. */
  const double E = 1e5;
  ce_geometry *m = pyramid_cube(E);
  ce_geometry *n = halfspace(CE_RIGID, 0, 0);
  ce_geometry *sq = rigid_square(3);
  /* N's +z = (1, -1, 0)/sqrt2: rotate 90 degrees about (1, 1, 0)/sqrt2 */
  ce_quat q = ce_quat_from_axis_angle(ce_v3(M_SQRT1_2, M_SQRT1_2, 0), M_PI / 2);
  ce_pose X = ce_pose_from_quat(q, ce_v3(0, 0, 0));
  ce_vec3 nz = ce_pose_rotate(&X, ce_v3(0, 0, 1));
  cr_assert(ce_norm(ce_sub(nz, ce_v3(M_SQRT1_2, -M_SQRT1_2, 0))) < 1e-15);
  ce_surface s;
  ce_counters c;
  run(ce_intersect_tet_halfspace, m, n, &X, CE_REPRESENTATION_POLYGON, &s, &c);
  cr_assert(fabs(surface_area(&s) - sqrt(2.0)) < 1e-13, "area %.17g", surface_area(&s));
  cr_assert(fabs(surface_force(&s) - sqrt(2.0) * E / 3) < 1e-8, "force %.17g", surface_force(&s));
  assert_ccw(&s);
  /* As a rigid square: only the z = +-0.5 pyramids pass the gradient rule
   * (their gradients are perpendicular to n); their shared diagonal faces
   * lie in the plane and must be counted once: area sqrt2/2, force sqrt2 E/6.
   * (Counted twice, the area would be sqrt2.) */
  run(ce_intersect_tet_tri, m, sq, &X, CE_REPRESENTATION_POLYGON, &s, &c);
  cr_assert(fabs(surface_area(&s) - sqrt(2.0) / 2) < 1e-13, "area %.17g", surface_area(&s));
  cr_assert(fabs(surface_force(&s) - sqrt(2.0) * E / 6) < 1e-8, "force %.17g", surface_force(&s));
  for (int f = 0; f < s.nf; f++) {
    ce_vec3 g = m->tet.grad[s.element_a[f]];
    cr_assert(fabs(ce_dot(g, nz)) < 1e-9 * E, "face %d from tet %d", f, s.element_a[f]);
  }
  ce_geometry_free(sq);
  ce_geometry_free(n);
  ce_geometry_free(m);
}

Test(intersect_rigid, arena_exhaustion_is_reported, .init = setup, .fini = teardown) {
  ce_geometry *m = pyramid_cube(1e5);
  ce_geometry *hc = halfspace(CE_COMPLIANT, 2e5, 0.5);
  ce_geometry *h = halfspace(CE_RIGID, 0, 0);
  ce_geometry *sq = rigid_square(3);
  ce_body cube = ce_test_body(m, ce_quat_from_axis_angle(ce_v3(1, 2, 3), 0.4), ce_v3(0, 0, 0.3));
  const ce_geometry *others[3] = {h, hc, sq};
  ce_options o;
  ce_options_default(&o);
  o.want_patches = o.want_surface = o.want_face_contacts = 1;
  for (int k = 0; k < 3; k++) {
    ce_body other = ce_test_body(others[k], ce_quat_identity(), ce_v3(0, 0, 0));
    int ok = 0, nomem = 0;
    for (size_t budget = 256; budget <= 64 * 1024; budget += 256) {
      ce_arena_set_budget(arena, budget);
      ce_arena_reset(arena);
      ce_result r;
      ce_error err;
      ce_errno e = ce_contact(&cube, &other, &o, arena, &r, &err);
      cr_assert(e == CE_OK || e == CE_ENOMEM, "pair %d budget %zu: %s", k, budget, ce_errname(e));
      if (e == CE_OK) {
        ok++;
        cr_assert_eq(r.status, CE_CONTACT_SURFACE);
        cr_assert_eq(r.npatches, 1);
      } else {
        nomem++;
      }
    }
    cr_assert(ok > 0 && nomem > 0, "pair %d: ok %d nomem %d", k, ok, nomem);
  }
  ce_arena_set_budget(arena, 0);
  ce_geometry_free(sq);
  ce_geometry_free(h);
  ce_geometry_free(hc);
  ce_geometry_free(m);
}

Test(intersect_rigid, compliant_halfspace_vs_rigid_role_swap, .init = setup, .fini = teardown) {
  ce_geometry *hc = halfspace(CE_COMPLIANT, 1e5, 0.1); /* p = 1e6 depth */
  /* a tilted rigid square (normal -z in its frame) 1 cm into the half space */
  double v[] = {-0.5, -0.5, 0, -0.5, 0.5, 0, 0.5, 0.5, 0, 0.5, -0.5, 0};
  int32_t t[] = {0, 1, 2, 0, 2, 3};
  ce_geometry *sq = rigid_trimesh(4, v, 2, t);
  cr_assert(sq->tri.normal[0].z < -0.999);
  ce_body H = ce_test_body(hc, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_body S = ce_test_body(sq, ce_quat_from_axis_angle(ce_v3(1, 0, 0), 0.01), ce_v3(0.2, 0.1, -0.01));
  ce_options o;
  ce_options_default(&o);
  o.want_surface = o.want_patches = 1;
  ce_result r1, r2;
  ce_error err;
  cr_assert_eq(ce_contact(&H, &S, &o, arena, &r1, &err), CE_OK, "%s", err.message);
  cr_assert_eq(ce_contact(&S, &H, &o, arena, &r2, &err), CE_OK, "%s", err.message);
  cr_assert_eq(r1.status, CE_CONTACT_SURFACE);
  /* force on the square: up, about 1e6 * 0.01 * area (depth varies
   * linearly across the tilt, area slightly less than 1 where it exits) */
  double F = r2.wrench_a.force.z;
  cr_assert(F > 0.9e4 && F < 1.01e4, "F %g", F);
  cr_assert(ce_norm(ce_sub(r1.wrench_a.force, r2.wrench_b.force)) < 1e-9 * F);
  cr_assert(ce_norm(ce_sub(r1.wrench_b.torque, r2.wrench_a.torque)) < 1e-9 * F);
  cr_assert(ce_norm(ce_sub(r1.total.point, r2.total.point)) < 1e-12);
  /* r2: A is the rigid square: grad_a is NULL, grad_b is the half space's */
  cr_assert_null(r2.surface.grad_a);
  cr_assert_not_null(r2.surface.grad_b);
  for (int f = 0; f < r2.surface.nf; f++) {
    cr_assert(ce_norm(ce_sub(r2.surface.grad_b[f], ce_v3(0, 0, -1e6))) < 1e-6);
    cr_assert(r2.surface.normal[f].z > 0.999); /* out of B (half space) into A */
    cr_assert_eq(r2.surface.element_b[f], 0);
  }
  assert_ccw(&r2.surface);
  ce_geometry_free(sq);
  ce_geometry_free(hc);
}

/* ---- surface tracing (compliant mesh vs rigid mesh) ----------------------- */

static ce_geometry *shape_of(ce_shape_type type, ce_compliance c, double r, ce_vec3 size, double hint) {
  ce_geometry *g = ce_test_shape(type, c, r, size, hint);
  cr_assert_not_null(g);
  return g;
}

/* The traced surface has the same polygons (source pairs), drops and area
 * as the one from every candidate pair; returns the number of polygons,
 * kept or dropped by the gradient rule. */
static int64_t compare_traced_tri(const ce_geometry *m, const ce_geometry *n, const ce_pose *X, const char *what) {
  ce_counters c = ce_test_compare_traced(ce_intersect_tet_tri_all, ce_intersect_tet_tri, m, n, X, arena, what);
  return c.polygons + c.faces_dropped;
}

Test(intersect_rigid, tet_tri_tracing_matches_all_candidates, .init = setup_large, .fini = teardown) {
  ce_geometry *cs = shape_of(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.026);
  ce_geometry *cb = shape_of(CE_SHAPE_BOX, CE_COMPLIANT, 0, ce_v3(0.2, 0.15, 0.1), 0.03);
  ce_geometry *cc = shape_of(CE_SHAPE_CAPSULE, CE_COMPLIANT, 0.05, ce_v3(0, 0, 0), 0.02);
  ce_geometry *rs = shape_of(CE_SHAPE_SPHERE, CE_RIGID, 0.08, ce_v3(0, 0, 0), 0.02);
  ce_geometry *rb = shape_of(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(0.2, 0.15, 0.1), 0.05);
  ce_geometry *ry = shape_of(CE_SHAPE_CYLINDER, CE_RIGID, 0.05, ce_v3(0, 0, 0), 0.02);
  cr_assert_eq(rs->tri.ncomp, 1);
  cr_assert_eq(rb->tri.ncomp, 1);
  char what[64];
  /* the benchmark's pose: a rigid sphere overlapping the compliant one */
  ce_pose X = ce_pose_identity();
  X.p = ce_v3(0.16, 0, 0);
  cr_assert(compare_traced_tri(cs, rs, &X, "spheres") > 50);
  /* Aligned boxes: rigid faces in tet face planes, edges along tet edges
   * (the degenerate cases of the walk), and a box face through the centre. */
  const ce_vec3 offs[5] = {{0.15, 0, 0}, {0.15, 0.05, 0}, {0.1, 0.075, 0.05}, {0, 0, 0.09}, {0.1, 0, 0}};
  for (int k = 0; k < 5; k++) {
    ce_pose Y = ce_pose_identity();
    Y.p = offs[k];
    snprintf(what, sizeof what, "aligned boxes %d", k);
    cr_assert(compare_traced_tri(cb, rb, &Y, what) > 0, "%s: no contact", what);
    snprintf(what, sizeof what, "rigid sphere on compliant box %d", k);
    compare_traced_tri(cb, rs, &Y, what);
  }
  /* random poses of several pairs */
  const ce_geometry *cm[3] = {cs, cb, cc}, *rn[3] = {rs, rb, ry};
  uint64_t st = 99;
  int touching = 0;
  for (int trial = 0; trial < 24; trial++) {
    ce_pose Y = ce_test_rand_pose(&st, 0.04, 0.12);
    snprintf(what, sizeof what, "random %d", trial);
    touching += compare_traced_tri(cm[trial % 3], rn[(trial / 3) % 3], &Y, what) > 0;
  }
  cr_assert(touching >= 16, "only %d of 24 random poses touch", touching);
  /* A rigid sphere wholly inside the compliant one: no boundary crossing,
   * so no seed; its vertex lies in a tet of M and the walk starts from its
   * first triangle (near the centre the gradient rule drops its faces:
   * they count). */
  X.p = ce_v3(0.005, 0, 0);
  ce_geometry *small = shape_of(CE_SHAPE_SPHERE, CE_RIGID, 0.03, ce_v3(0, 0, 0), 0.02);
  cr_assert(compare_traced_tri(cs, small, &X, "rigid sphere inside") > 0);
  ce_geometry_free(small);
  ce_geometry_free(cs);
  ce_geometry_free(cb);
  ce_geometry_free(cc);
  ce_geometry_free(rs);
  ce_geometry_free(rb);
  ce_geometry_free(ry);
}

/* Two closed shells in one rigid mesh, one crossing the compliant body's
 * boundary and one wholly inside it: the walk from the boundary seeds
 * alone would miss the inner one (no seed reaches it), which is found
 * inside M by one of its vertices and walked from its first triangle. */
Test(intersect_rigid, tet_tri_two_component_mesh_keeps_inner_shell, .init = setup_large, .fini = teardown) {
  ce_geometry *cs = shape_of(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.026);
  /* two tetrahedral shells: one around (0.09, 0, 0) poking out, one around
   * the centre (outward winding) */
  const double s = 0.04;
  double v[24];
  const double c[2][3] = {{0.09, 0, 0}, {0, 0, 0}};
  for (int k = 0; k < 2; k++) {
    const double u[4][3] = {{0, 0, 0}, {s, 0, 0}, {0, s, 0}, {0, 0, s}};
    for (int i = 0; i < 4; i++)
      for (int d = 0; d < 3; d++) v[12 * k + 3 * i + d] = c[k][d] + u[i][d];
  }
  const int32_t t[24] = {0, 2, 1, 0, 1, 3, 0, 3, 2, 1, 2, 3, 4, 6, 5, 4, 5, 7, 4, 7, 6, 5, 6, 7};
  ce_geometry *two = rigid_trimesh(8, v, 8, t);
  cr_assert_eq(two->tri.ncomp, 2);
  ce_pose X = ce_pose_identity();
  ce_arena_reset(arena);
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  ce_counters cnt = {0, 0, 0};
  cr_assert_eq(ce_intersect_tet_tri(cs, two, &X, &b, &cnt), CE_OK);
  int inner = 0;
  for (int64_t f = 0; f < b.normal.len; f++) inner += ((int32_t *)b.elem_n.data)[f] >= 4;
  cr_assert(inner > 0, "no polygon from the inner shell");
  cr_assert(compare_traced_tri(cs, two, &X, "two shells") > 0);
  ce_geometry_free(two);
  ce_geometry_free(cs);
}

/* ---- rigid meshes of several components ----------------------------------- */

/* Appends to v / t (counts *nv, *nf) the closed surface of the box centre c,
 * half extents h: 8 corners, 12 triangles wound outward. */
static void add_box(double *v, int32_t *nv, int32_t *t, int32_t *nf, ce_vec3 c, ce_vec3 h) {
  const int32_t base = *nv;
  for (int i = 0; i < 8; i++) {
    v[3 * (base + i)] = c.x + (i & 1 ? h.x : -h.x);
    v[3 * (base + i) + 1] = c.y + (i & 2 ? h.y : -h.y);
    v[3 * (base + i) + 2] = c.z + (i & 4 ? h.z : -h.z);
  }
  /* each face as a quad (corner bits), split in two; wound outward by the
   * sign of the normal against the face's direction from the centre */
  static const int quad[6][4] = {{0, 2, 6, 4}, {1, 3, 7, 5}, {0, 1, 5, 4}, {2, 3, 7, 6}, {0, 1, 3, 2}, {4, 5, 7, 6}};
  for (int f = 0; f < 6; f++) {
    for (int s = 0; s < 2; s++) {
      int32_t a = base + quad[f][0], b = base + quad[f][1 + s], d = base + quad[f][2 + s];
      ce_vec3 xa = ce_v3(v[3 * a], v[3 * a + 1], v[3 * a + 2]), xb = ce_v3(v[3 * b], v[3 * b + 1], v[3 * b + 2]),
              xd = ce_v3(v[3 * d], v[3 * d + 1], v[3 * d + 2]);
      ce_vec3 nrm = ce_cross(ce_sub(xb, xa), ce_sub(xd, xa));
      ce_vec3 out = ce_sub(ce_scale(ce_add(ce_add(xa, xb), xd), 1.0 / 3), c);
      int32_t *o = t + 3 * *nf;
      o[0] = a;
      o[1] = ce_dot(nrm, out) > 0 ? b : d;
      o[2] = ce_dot(nrm, out) > 0 ? d : b;
      ++*nf;
    }
  }
  *nv += 8;
}

/* Net force of a builder's faces: the linear pressure integrated over each
 * face (fanned from its first vertex), along the face normal. */
static ce_vec3 builder_force(const ce_builder *b) {
  const int32_t *off = b->face_off.data, *fv = b->face_vert.data;
  const ce_vec3 *v = b->v.data, *nrm = b->normal.data;
  const double *p = b->p.data;
  ce_vec3 F = ce_v3(0, 0, 0);
  for (int64_t f = 0; f < b->normal.len; f++) {
    int32_t i0 = fv[off[f]];
    double fn = 0;
    for (int k = off[f] + 1; k + 1 < off[f + 1]; k++) {
      int32_t i1 = fv[k], i2 = fv[k + 1];
      double a = 0.5 * ce_dot(ce_cross(ce_sub(v[i1], v[i0]), ce_sub(v[i2], v[i0])), nrm[f]);
      fn += a * (p[i0] + p[i1] + p[i2]) / 3;
    }
    F = ce_axpy(F, fn, nrm[f]);
  }
  return F;
}

/* The traced and all-candidates surfaces of m and n at X: same polygons,
 * drops, source pairs and area (ce_test_compare_traced), and the same net
 * force (1e-9 relative). Returns both paths' counters and the area; b
 * keeps the traced surface (arena reset first). */
typedef struct multi_run {
  ce_counters traced, all;
  double area;
  ce_vec3 force;
} multi_run;

static multi_run traced_and_all(const ce_geometry *m, const ce_geometry *n, const ce_pose *X, ce_builder *b,
                                const char *what) {
  multi_run r;
  ce_test_compare_traced(ce_intersect_tet_tri_all, ce_intersect_tet_tri, m, n, X, arena, what);
  ce_arena_reset(arena);
  ce_builder ba;
  cr_assert_eq(ce_builder_init(&ba, arena), CE_OK);
  cr_assert_eq(ce_builder_init(b, arena), CE_OK);
  memset(&r, 0, sizeof r);
  cr_assert_eq(ce_intersect_tet_tri_all(m, n, X, &ba, &r.all), CE_OK);
  cr_assert_eq(ce_intersect_tet_tri(m, n, X, b, &r.traced), CE_OK);
  ce_vec3 Fa = builder_force(&ba);
  r.force = builder_force(b);
  cr_assert(ce_norm(ce_sub(Fa, r.force)) <= 1e-9 * ce_norm(Fa), "%s: force (%g %g %g) traced vs (%g %g %g)", what,
            r.force.x, r.force.y, r.force.z, Fa.x, Fa.y, Fa.z);
  cr_assert_eq(b->normal.len, ba.normal.len, "%s: %lld faces traced, %lld from all pairs", what,
               (long long)b->normal.len, (long long)ba.normal.len);
  r.area = ce_test_builder_area(b);
  return r;
}

/* The area of the faces whose triangle of N lies in [f0, f1). */
static double area_from_tris(const ce_builder *b, int32_t f0, int32_t f1, int64_t *faces) {
  const int32_t *off = b->face_off.data, *fv = b->face_vert.data, *en = b->elem_n.data;
  const ce_vec3 *v = b->v.data, *nrm = b->normal.data;
  double a = 0;
  *faces = 0;
  for (int64_t f = 0; f < b->normal.len; f++) {
    if (en[f] < f0 || en[f] >= f1) continue;
    ++*faces;
    ce_vec3 s = ce_v3(0, 0, 0), x0 = v[fv[off[f]]];
    for (int k = off[f] + 1; k + 1 < off[f + 1]; k++) s = ce_add(s, ce_cross(ce_sub(v[fv[k]], x0), ce_sub(v[fv[k + 1]], x0)));
    a += 0.5 * ce_dot(s, nrm[f]);
  }
  return a;
}

/* Four feet (boxes) in one rigid mesh under a compliant sphere: three
 * cross its boundary, one is clear of it. The walk covers the three (each
 * component that meets M's boundary is seeded); the fourth has no seed and
 * its vertex is outside M, so it adds nothing. Same surface as every
 * candidate pair, at a fraction of the pairs. */
Test(intersect_rigid, tet_tri_four_feet_traced, .init = setup_large, .fini = teardown) {
  ce_geometry *cs = shape_of(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.013);
  double v[4 * 24];
  int32_t t[4 * 36], nv = 0, nf = 0;
  /* the sphere's surface is at z = -0.0707 above (+-0.05, +-0.05): feet
   * spanning z in [-0.1, -0.06] cross it; the last one, in [-0.15, -0.11],
   * lies below the sphere (its lowest point is z = -0.1) */
  const ce_vec3 h = ce_v3(0.02, 0.02, 0.02);
  add_box(v, &nv, t, &nf, ce_v3(0.05, 0.05, -0.08), h);
  add_box(v, &nv, t, &nf, ce_v3(-0.05, 0.05, -0.08), h);
  add_box(v, &nv, t, &nf, ce_v3(-0.05, -0.05, -0.08), h);
  add_box(v, &nv, t, &nf, ce_v3(0.05, -0.05, -0.13), h);
  ce_geometry *feet = rigid_trimesh(nv, v, nf, t);
  cr_assert_eq(feet->tri.ncomp, 4);
  for (int c = 0; c < 4; c++) {
    cr_assert_eq(feet->tri.comp_off[c], 12 * c);
    for (int k = 0; k < 12; k++) cr_assert_eq(feet->tri.comp[12 * c + k], c);
  }
  ce_pose X = ce_pose_identity();
  ce_builder b;
  multi_run r = traced_and_all(cs, feet, &X, &b, "four feet");
  cr_assert(r.area > 0 && r.force.z > 0, "area %g force z %g", r.area, r.force.z);
  /* each touching foot is in the surface, the clear one is not */
  for (int c = 0; c < 4; c++) {
    int64_t faces;
    double a = area_from_tris(&b, 12 * c, 12 * c + 12, &faces);
    if (c < 3) cr_assert(faces > 0 && a > 0, "foot %d: %lld faces, area %g", c, (long long)faces, a);
    else cr_assert_eq(faces, 0, "the clear foot gave %lld faces", (long long)faces);
  }
  /* the traced path ran (the all-candidates path would count every pair) */
  cr_assert(r.traced.candidate_pairs * 3 < r.all.candidate_pairs, "traced %lld pairs, all %lld",
            (long long)r.traced.candidate_pairs, (long long)r.all.candidate_pairs);
  /* a pose that turns the feet: the same */
  uint64_t st = 7;
  for (int k = 0; k < 4; k++) {
    ce_pose Y = ce_pose_from_quat(ce_test_rand_quat(&st), ce_v3(0, 0, 0));
    char what[32];
    snprintf(what, sizeof what, "four feet turned %d", k);
    multi_run ry = traced_and_all(cs, feet, &Y, &b, what);
    cr_assert(ry.traced.candidate_pairs * 3 < ry.all.candidate_pairs, "%s: traced %lld pairs, all %lld", what,
              (long long)ry.traced.candidate_pairs, (long long)ry.all.candidate_pairs);
  }
  ce_geometry_free(feet);
  ce_geometry_free(cs);
}

/* One rigid mesh of four components: a box crossing the compliant
 * sphere's boundary, a closed box wholly inside it, a square plate wholly
 * inside it (open, facing the centre) and a plate outside it. The inner
 * ones meet no boundary face, so no seed reaches them: their vertex lies
 * in a tet of M, and their whole surface is in the contact surface. The
 * plate at x = 0.05 faces -x, along the pressure gradient (towards the
 * centre), so the gradient rule keeps it: its area is exactly 0.02^2. */
Test(intersect_rigid, tet_tri_component_wholly_inside, .init = setup_large, .fini = teardown) {
  ce_geometry *cs = shape_of(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.013);
  double v[3 * 24 + 3 * 8];
  int32_t t[3 * 36 + 3 * 4], nv = 0, nf = 0;
  add_box(v, &nv, t, &nf, ce_v3(0, 0, -0.1), ce_v3(0.03, 0.03, 0.03));  /* crossing: triangles 0-11 */
  add_box(v, &nv, t, &nf, ce_v3(-0.04, 0.01, 0.02), ce_v3(0.01, 0.015, 0.02)); /* inside: 12-23 */
  /* plates: triangles 24-25 (inside, x = 0.05) and 26-27 (outside, x = 0.15) */
  const double px[2] = {0.05, 0.15};
  for (int k = 0; k < 2; k++) {
    const int32_t base = nv;
    const double yz[4][2] = {{-0.01, -0.01}, {0.01, -0.01}, {0.01, 0.01}, {-0.01, 0.01}};
    for (int i = 0; i < 4; i++) {
      v[3 * nv] = px[k];
      v[3 * nv + 1] = yz[i][0];
      v[3 * nv + 2] = yz[i][1];
      nv++;
    }
    /* (0, 2, 1) and (0, 3, 2): normal -x */
    const int32_t q[6] = {0, 2, 1, 0, 3, 2};
    for (int i = 0; i < 6; i++) t[3 * nf + i] = base + q[i];
    nf += 2;
  }
  ce_geometry *n = rigid_trimesh(nv, v, nf, t);
  cr_assert_eq(n->tri.ncomp, 4);
  cr_assert(n->tri.normal[24].x < -0.999 && n->tri.normal[25].x < -0.999);
  ce_pose X = ce_pose_identity();
  ce_builder b;
  multi_run r = traced_and_all(cs, n, &X, &b, "inner components");
  int64_t faces;
  /* the crossing box and the inner box are both in the surface */
  cr_assert(area_from_tris(&b, 0, 12, &faces) > 0 && faces > 0, "crossing box missing");
  double inner_box = area_from_tris(&b, 12, 24, &faces);
  cr_assert(faces > 0 && inner_box > 0, "inner box missing");
  /* at most its full surface area (the gradient rule drops the faces
   * turned away from the centre) */
  cr_assert(inner_box <= 8 * (0.01 * 0.015 + 0.01 * 0.02 + 0.015 * 0.02) * (1 + 1e-12), "inner box area %g",
            inner_box);
  double plate = area_from_tris(&b, 24, 26, &faces);
  cr_assert(fabs(plate - 4e-4) <= 1e-12 * 4e-4, "inner plate area %.17g, want 4e-4", plate);
  cr_assert(area_from_tris(&b, 26, 28, &faces) == 0 && faces == 0, "outer plate in the surface");
  /* the traced path ran */
  cr_assert(r.traced.candidate_pairs * 2 < r.all.candidate_pairs, "traced %lld pairs, all %lld",
            (long long)r.traced.candidate_pairs, (long long)r.all.candidate_pairs);
  /* The inner box and the outer plate alone: no seed at all, so neither
   * the walk nor the fall-back runs; still the same surface. */
  double v2[3 * 12];
  int32_t t2[3 * 14], nv2 = 0, nf2 = 0;
  add_box(v2, &nv2, t2, &nf2, ce_v3(-0.04, 0.01, 0.02), ce_v3(0.01, 0.015, 0.02));
  memcpy(v2 + 3 * nv2, v + 3 * (nv - 4), 12 * sizeof *v);
  for (int i = 0; i < 6; i++) t2[3 * nf2 + i] = t[3 * (nf - 2) + i] - (nv - 4) + nv2;
  nv2 += 4;
  nf2 += 2;
  ce_geometry *inner = rigid_trimesh(nv2, v2, nf2, t2);
  cr_assert_eq(inner->tri.ncomp, 2);
  multi_run ri = traced_and_all(cs, inner, &X, &b, "inner box, outer plate");
  cr_assert(fabs(ri.area - inner_box) <= 1e-12 * inner_box, "inner box alone %.17g, with the others %.17g", ri.area,
            inner_box);
  cr_assert(ri.traced.candidate_pairs * 2 < ri.all.candidate_pairs, "traced %lld pairs, all %lld",
            (long long)ri.traced.candidate_pairs, (long long)ri.all.candidate_pairs);
  ce_geometry_free(inner);
  ce_geometry_free(n);
  ce_geometry_free(cs);
}
