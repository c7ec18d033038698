/* test_surface.c — the contact-surface builder (ce_surface.c). */
#include <criterion/criterion.h>
#include <math.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 16); }
static void teardown(void) { ce_arena_destroy(arena); }

/* Unit square in the z = 0 plane of M, normal +z, pressure p = 10 + 2x + 4y. */
static void add_square(ce_builder *b, double ox) {
  ce_vec3 x[4] = {{ox, 0, 0}, {ox + 1, 0, 0}, {ox + 1, 1, 0}, {ox, 1, 0}};
  double p[4];
  for (int i = 0; i < 4; i++) p[i] = 10 + 2 * x[i].x + 4 * x[i].y;
  cr_assert_eq(ce_builder_add_polygon(b, x, p, 4, ce_v3(0, 0, 1), ce_v3(1, 2, 3), ce_v3(-4, -5, -6), 7, 9),
               CE_OK);
}

Test(surface, polygon_moments_and_m_is_a, .init = setup, .fini = teardown) {
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  add_square(&b, 0);
  /* a triangle sharing vertices 1 and 2 via add_face */
  int32_t v4 = ce_builder_add_vertex(&b, ce_v3(2, 0.5, 0), 7.0);
  int32_t ids[3] = {1, v4, 2};
  cr_assert_eq(ce_builder_add_face(&b, ids, 3, ce_v3(0, 0, 1), ce_v3(0, 0, 0), ce_v3(0, 0, 0), 8, 10), CE_OK);
  ce_pose X = ce_pose_from_quat(ce_quat_identity(), ce_v3(0, 0, 5));
  ce_surface s;
  ce_face_moments pm;
  cr_assert_eq(ce_builder_finish(&b, &X, 1, 1, 1, CE_REPRESENTATION_POLYGON, &s, &pm), CE_OK);
  cr_assert_eq(s.nf, 2);
  /* Pressure moments by hand. Square [0,1]^2, p = 10 + 2x + 4y: the
   * integral of p is 13, of p x 5 + 2/3 + 1, of p y 5 + 1/2 + 4/3. The
   * triangle (1,0) p 12, (2,0.5) p 7, (1,1) p 16, area 1/2: the integral of
   * p is 35/6, of p x = A/12 (sum p_k x_k + sum p sum x) = (42 + 140)/24, of
   * p y = (19.5 + 52.5)/24. */
  cr_assert(pm.fn && pm.cp);
  cr_assert(fabs(pm.fn[0] - 13) < 1e-12);
  cr_assert(ce_norm(ce_sub(pm.cp[0], ce_v3((5 + 2.0 / 3 + 1) / 13, (5 + 0.5 + 4.0 / 3) / 13, 5))) < 1e-14);
  cr_assert(fabs(pm.fn[1] - 35.0 / 6) < 1e-12);
  cr_assert(ce_norm(ce_sub(pm.cp[1], ce_v3(182.0 / 24 / (35.0 / 6), 72.0 / 24 / (35.0 / 6), 5))) < 1e-14);
  cr_assert_eq(s.nv, 5);
  cr_assert(fabs(s.area[0] - 1) < 1e-14);
  cr_assert(ce_norm(ce_sub(s.centroid[0], ce_v3(0.5, 0.5, 5))) < 1e-14);
  cr_assert(fabs(s.centroid_pressure[0] - (10 + 1 + 2)) < 1e-12);
  cr_assert(fabs(s.area[1] - 0.5) < 1e-14);
  cr_assert(ce_norm(ce_sub(s.centroid[1], ce_v3(4.0 / 3, 0.5, 5))) < 1e-14);
  /* pressures at vertices 1, 2: 12, 16; v4: 7 */
  cr_assert(fabs(s.centroid_pressure[1] - (12 + 16 + 7) / 3.0) < 1e-12);
  cr_assert_eq(s.element_a[0], 7);
  cr_assert_eq(s.element_b[0], 9);
  cr_assert_eq(s.element_a[1], 8);
  cr_assert(s.grad_a && s.grad_b);
  cr_assert(ce_norm(ce_sub(s.grad_a[0], ce_v3(1, 2, 3))) < 1e-14);
  cr_assert(ce_norm(ce_sub(s.grad_b[0], ce_v3(-4, -5, -6))) < 1e-14);
  cr_assert(ce_norm(ce_sub(s.normal[0], ce_v3(0, 0, 1))) < 1e-14);
  cr_assert_eq(s.face_offsets[1], 4);
  cr_assert_eq(s.face_offsets[2], 7);
  cr_assert_eq(s.face_vertices[5], v4);
  cr_assert_eq(s.patch[0], -1);
  cr_assert_eq(s.patch[1], -1);
}

Test(surface, m_is_b_flips_normals_reverses_and_swaps, .init = setup, .fini = teardown) {
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  add_square(&b, 0);
  /* rotate 90 degrees about x: M's +z becomes world -y */
  ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(1, 0, 0), M_PI / 2), ce_v3(1, 2, 3));
  ce_surface s;
  cr_assert_eq(ce_builder_finish(&b, &X, 0, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 1);
  /* normal: out of N into M is R*(+z) = -y; flipped for (A=N, B=M) gives +y */
  cr_assert(ce_norm(ce_sub(s.normal[0], ce_v3(0, 1, 0))) < 1e-14, "n = %g %g %g", s.normal[0].x,
            s.normal[0].y, s.normal[0].z);
  /* M's element goes to B, N's to A; M's gradient to grad_b; N rigid: grad_a NULL */
  cr_assert_eq(s.element_a[0], 9);
  cr_assert_eq(s.element_b[0], 7);
  cr_assert_null(s.grad_a);
  cr_assert_not_null(s.grad_b);
  ce_vec3 g = ce_pose_rotate(&X, ce_v3(1, 2, 3)); /* (1, -3, 2) */
  cr_assert(ce_norm(ce_sub(s.grad_b[0], g)) < 1e-14);
  cr_assert(ce_norm(ce_sub(g, ce_v3(1, -3, 2))) < 1e-14);
  /* reversed order: CCW about the flipped normal */
  const int32_t *fv = s.face_vertices;
  cr_assert_eq(fv[0], 3);
  cr_assert_eq(fv[1], 2);
  cr_assert_eq(fv[2], 1);
  cr_assert_eq(fv[3], 0);
  ce_vec3 x0 = s.vertices[fv[0]], x1 = s.vertices[fv[1]], x2 = s.vertices[fv[2]];
  ce_vec3 c = ce_cross(ce_sub(x1, x0), ce_sub(x2, x0));
  cr_assert(ce_dot(c, s.normal[0]) > 0.99);
  /* vertex 0 of M at (0,0,0) is placed at the pose's position */
  cr_assert(ce_norm(ce_sub(s.vertices[0], ce_v3(1, 2, 3))) < 1e-14);
  cr_assert(ce_norm(ce_sub(s.centroid[0], ce_pose_apply(&X, ce_v3(0.5, 0.5, 0)))) < 1e-14);
}

Test(surface, triangle_representation_preserves_area_and_pressure_integral, .init = setup,
     .fini = teardown) {
  for (int flip = 0; flip < 2; flip++) {
    ce_arena_reset(arena);
    ce_builder b;
    cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
    /* a non-symmetric quadrilateral so the vertex average differs from the centroid */
    ce_vec3 x[4] = {{0, 0, 0}, {3, 0, 0}, {1, 1, 0}, {0, 1, 0}};
    double p[4];
    for (int i = 0; i < 4; i++) p[i] = 10 + 2 * x[i].x + 4 * x[i].y;
    cr_assert_eq(ce_builder_add_polygon(&b, x, p, 4, ce_v3(0, 0, 1), ce_v3(2, 4, 0), ce_v3(0, 0, 0), 3, 4),
                 CE_OK);
    ce_pose X = ce_pose_identity();
    ce_surface poly, tri;
    cr_assert_eq(ce_builder_finish(&b, &X, !flip, 1, 0, CE_REPRESENTATION_POLYGON, &poly, NULL), CE_OK);
    cr_assert_eq(ce_builder_finish(&b, &X, !flip, 1, 0, CE_REPRESENTATION_TRIANGLE, &tri, NULL), CE_OK);
    /* trapezoid: area (3 + 1)/2 = 2; centroid x = (1/A) * int x dA */
    cr_assert(fabs(poly.area[0] - 2) < 1e-14);
    /* int x over the trapezoid 0<=y<=1, 0<=x<=3-2y: int (3-2y)^2/2 dy = (27-1)/12 = 13/6 */
    /* int y dA = int y (3-2y) dy = 3/2 - 2/3 = 5/6 */
    double cx = (13.0 / 6) / 2, cy = (5.0 / 6) / 2;
    cr_assert(ce_norm(ce_sub(poly.centroid[0], ce_v3(cx, cy, 0))) < 1e-14);
    double pint = poly.area[0] * poly.centroid_pressure[0];
    cr_assert(fabs(poly.centroid_pressure[0] - (10 + 2 * cx + 4 * cy)) < 1e-12);
    cr_assert_eq(tri.nf, 4);
    cr_assert_eq(tri.nv, 5);
    double A = 0, P = 0;
    for (int f = 0; f < 4; f++) {
      cr_assert_eq(tri.face_offsets[f + 1] - tri.face_offsets[f], 3);
      A += tri.area[f];
      P += tri.area[f] * tri.centroid_pressure[f];
      const int32_t *t = tri.face_vertices + tri.face_offsets[f];
      cr_assert_eq(t[0], 4); /* the centroid vertex */
      ce_vec3 c = ce_cross(ce_sub(tri.vertices[t[1]], tri.vertices[t[0]]),
                           ce_sub(tri.vertices[t[2]], tri.vertices[t[0]]));
      cr_assert(ce_dot(c, tri.normal[f]) > 0, "triangle %d not CCW about its normal", f);
      cr_assert(fabs(tri.normal[f].z - (flip ? -1 : 1)) < 1e-15);
      cr_assert_eq(flip ? tri.element_b[f] : tri.element_a[f], 3);
      /* centroid pressure of each triangle matches the linear field */
      ce_vec3 g = tri.centroid[f];
      cr_assert(fabs(tri.centroid_pressure[f] - (10 + 2 * g.x + 4 * g.y)) < 1e-12);
    }
    cr_assert(fabs(A - 2) < 1e-14);
    cr_assert(fabs(P - pint) < 1e-12);
    cr_assert(ce_norm(ce_sub(tri.vertices[4], ce_v3(cx, cy, 0))) < 1e-14);
    cr_assert(fabs(tri.pressure[4] - poly.centroid_pressure[0]) < 1e-12);
  }
}

Test(surface, rejects_large_polygons_and_bad_ids, .init = setup, .fini = teardown) {
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  ce_vec3 x[17];
  double p[17];
  for (int i = 0; i < 17; i++) {
    x[i] = ce_v3(cos(i * 2 * M_PI / 17), sin(i * 2 * M_PI / 17), 0);
    p[i] = 1;
  }
  ce_vec3 z = ce_v3(0, 0, 1), o = ce_v3(0, 0, 0);
  cr_assert_eq(ce_builder_add_polygon(&b, x, p, 17, z, o, o, 0, 0), CE_EINVAL);
  for (int i = 0; i < 16; i++) x[i] = ce_v3(cos(i * 2 * M_PI / 16), sin(i * 2 * M_PI / 16), 0);
  cr_assert_eq(ce_builder_add_polygon(&b, x, p, 16, z, o, o, 0, 0), CE_OK);
  int32_t ids[3] = {0, 1, 99};
  cr_assert_eq(ce_builder_add_face(&b, ids, 3, z, o, o, 0, 0), CE_ERANGE);
  ce_surface s;
  ce_pose X = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &X, 1, 1, 0, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 1);
  /* regular 16-gon inscribed in the unit circle: area 8 sin(2 pi/16) */
  cr_assert(fabs(s.area[0] - 8 * sin(2 * M_PI / 16)) < 1e-13);
}

Test(surface, empty_builder_gives_empty_surface, .init = setup, .fini = teardown) {
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  ce_surface s;
  ce_pose X = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &X, 1, 1, 1, CE_REPRESENTATION_TRIANGLE, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 0);
  cr_assert_eq(s.nv, 0);
  cr_assert_not_null(s.face_offsets);
  cr_assert_eq(s.face_offsets[0], 0);
}

Test(surface, unused_vertices_are_dropped, .init = setup, .fini = teardown) {
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_builder_add_vertex(&b, ce_v3(9, 9, 9), 5), 0); /* never used */
  add_square(&b, 0);                                              /* vertices 1..4 */
  cr_assert_eq(ce_builder_add_vertex(&b, ce_v3(8, 8, 8), 5), 5); /* never used */
  for (int rep = 0; rep < 2; rep++) {
    ce_surface s;
    ce_pose X = ce_pose_identity();
    cr_assert_eq(ce_builder_finish(&b, &X, 1, 1, 1, rep, &s, NULL), CE_OK);
    cr_assert_eq(s.nv, rep ? 5 : 4);
    if (rep) {
      cr_assert_eq(s.face_vertices[0], 4); /* the centroid vertex follows the used ones */
      cr_assert_eq(s.face_vertices[1], 0);
      cr_assert_eq(s.face_vertices[2], 1);
    }
    for (int i = 0; i < 4; i++) {
      if (!rep) cr_assert_eq(s.face_vertices[i], i);
      cr_assert(fabs(s.pressure[i] - (10 + 2 * s.vertices[i].x + 4 * s.vertices[i].y)) < 1e-12);
    }
    cr_assert(ce_norm(ce_sub(s.vertices[0], ce_v3(0, 0, 0))) == 0);
    cr_assert(fabs(s.area[0] - (rep ? 0.25 : 1)) < 1e-15);
  }
}

/* A polygon given clockwise about its normal (ce_builder_add_face with the
 * ids reversed) keeps a positive area and the same centroid and centroid
 * pressure; with M = B and an unused vertex (remap path) the output order is
 * still reversed and remapped. Also a pentagon against its closed form. */
Test(surface, orientation_remap_flip_and_pentagon, .init = setup, .fini = teardown) {
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_builder_add_vertex(&b, ce_v3(9, 9, 9), 5), 0); /* never used */
  add_square(&b, 0);                                              /* vertices 1..4, face 0 */
  int32_t cw[4] = {4, 3, 2, 1};
  cr_assert_eq(ce_builder_add_face(&b, cw, 4, ce_v3(0, 0, 1), ce_v3(0, 0, 0), ce_v3(0, 0, 0), 1, 2), CE_OK);
  /* pentagon: unit square plus the triangle (1,0) (1.5,0.5) (1,1); p = 1 + x */
  ce_vec3 x[5] = {{0, 0, 0}, {1, 0, 0}, {1.5, 0.5, 0}, {1, 1, 0}, {0, 1, 0}};
  double p[5];
  for (int i = 0; i < 5; i++) p[i] = 1 + x[i].x;
  cr_assert_eq(ce_builder_add_polygon(&b, x, p, 5, ce_v3(0, 0, 1), ce_v3(1, 0, 0), ce_v3(0, 0, 0), 3, 4), CE_OK);
  ce_pose X = ce_pose_identity();
  ce_surface s;
  cr_assert_eq(ce_builder_finish(&b, &X, 0, 1, 1, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 3);
  cr_assert_eq(s.nv, 9);
  cr_assert(fabs(s.area[1] - 1) < 1e-15);
  cr_assert(ce_norm(ce_sub(s.centroid[1], s.centroid[0])) < 1e-15);
  cr_assert(fabs(s.centroid_pressure[1] - s.centroid_pressure[0]) < 1e-12);
  /* flipped (M = B): every face reversed, ids shifted down past vertex 0 */
  const int32_t *fv = s.face_vertices;
  int32_t want0[4] = {3, 2, 1, 0}, want1[4] = {0, 1, 2, 3};
  for (int i = 0; i < 4; i++) {
    cr_assert_eq(fv[i], want0[i]);
    cr_assert_eq(fv[4 + i], want1[i]);
  }
  for (int i = 0; i < 5; i++) cr_assert_eq(fv[8 + i], 8 - i);
  /* pentagon: area 1.25; x-moment 0.5 (square) + 0.25 * 7/6 (triangle) */
  double cx = (0.5 + 0.25 * 7.0 / 6) / 1.25;
  cr_assert(fabs(s.area[2] - 1.25) < 1e-15);
  cr_assert(ce_norm(ce_sub(s.centroid[2], ce_v3(cx, 0.5, 0))) < 1e-15);
  cr_assert(fabs(s.centroid_pressure[2] - (1 + cx)) < 1e-15);
  cr_assert(ce_norm(ce_sub(s.normal[2], ce_v3(0, 0, -1))) == 0);
  cr_assert_eq(s.element_b[2], 3);
  cr_assert_eq(s.element_a[2], 4);
}

/* An intersector that gives up drops what it added since a mark, and the
 * builder goes on from there: the surface holds the faces before the mark
 * and after the rewind, nothing of what was dropped. */
Test(surface, rewind_drops_faces_after_the_mark, .init = setup, .fini = teardown) {
  ce_builder b;
  cr_assert_eq(ce_builder_init(&b, arena), CE_OK);
  cr_assert_eq(ce_builder_reserve(&b, 64, 8, 64), CE_OK);
  add_square(&b, 0);
  ce_builder_mark mk = ce_builder_tell(&b);
  add_square(&b, 10);
  int32_t v = ce_builder_add_vertex(&b, ce_v3(20, 0, 0), 1.0);
  int32_t ids[3] = {v, v - 1, v - 2};
  cr_assert_eq(ce_builder_add_face(&b, ids, 3, ce_v3(0, 0, 1), ce_v3(0, 0, 0), ce_v3(0, 0, 0), 1, 2), CE_OK);
  ce_builder_rewind(&b, mk);
  add_square(&b, 5);
  ce_surface s;
  ce_pose X = ce_pose_identity();
  cr_assert_eq(ce_builder_finish(&b, &X, 1, 1, 1, CE_REPRESENTATION_POLYGON, &s, NULL), CE_OK);
  cr_assert_eq(s.nf, 2);
  cr_assert_eq(s.nv, 8);
  cr_assert_eq(s.face_offsets[2], 8);
  /* the second face is the square at x = 5, with the vertices after the mark */
  for (int k = 0; k < 4; k++) cr_assert_eq(s.face_vertices[4 + k], 4 + k);
  cr_assert(fabs(s.centroid[1].x - 5.5) < 1e-15 && fabs(s.centroid[0].x - 0.5) < 1e-15);
  cr_assert(fabs(s.area[0] - 1) < 1e-15 && fabs(s.area[1] - 1) < 1e-15);
}
