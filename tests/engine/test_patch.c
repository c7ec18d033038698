/* test_patch.c — connected patches and equivalent contact points. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 16); }
static void teardown(void) { ce_arena_destroy(arena); }

/* A hand-built surface: one axis-aligned unit square per face in the plane
 * z = 0, normal +z, lower-left corner (x0[f], y0[f]), elements (ea, eb).
 * Forces: uniform pressure pf[f], so fn = pf, fn_x = pf * centroid. */
typedef struct hand_surface {
  ce_surface s;
  ce_face_forces ff;
} hand_surface;

static void build(hand_surface *h, int nf, const double *x0, const double *y0, const int32_t *ea,
                  const int32_t *eb, const double *pf) {
  ce_surface *s = &h->s;
  memset(s, 0, sizeof *s);
  s->nf = nf;
  s->nv = 4 * nf;
  s->vertices = ce_arena_calloc(arena, 4 * (size_t)nf, sizeof(ce_vec3));
  s->pressure = ce_arena_calloc(arena, 4 * (size_t)nf, sizeof(double));
  s->face_offsets = ce_arena_calloc(arena, (size_t)nf + 1, sizeof(int32_t));
  s->face_vertices = ce_arena_calloc(arena, 4 * (size_t)nf, sizeof(int32_t));
  s->normal = ce_arena_calloc(arena, (size_t)nf, sizeof(ce_vec3));
  s->area = ce_arena_calloc(arena, (size_t)nf, sizeof(double));
  s->centroid = ce_arena_calloc(arena, (size_t)nf, sizeof(ce_vec3));
  s->centroid_pressure = ce_arena_calloc(arena, (size_t)nf, sizeof(double));
  s->element_a = ce_arena_calloc(arena, (size_t)nf, sizeof(int32_t));
  s->element_b = ce_arena_calloc(arena, (size_t)nf, sizeof(int32_t));
  s->patch = ce_arena_calloc(arena, (size_t)nf, sizeof(int32_t));
  memset(&h->ff, 0, sizeof h->ff); /* no surface sums: the patch pass adds its own */
  h->ff.fn = ce_arena_calloc(arena, (size_t)nf, sizeof(double));
  h->ff.fn_x = ce_arena_calloc(arena, (size_t)nf, sizeof(ce_vec3));
  for (int f = 0; f < nf; f++) {
    double cx[4] = {0, 1, 1, 0}, cy[4] = {0, 0, 1, 1};
    for (int i = 0; i < 4; i++) {
      s->vertices[4 * f + i] = ce_v3(x0[f] + cx[i], y0[f] + cy[i], 0);
      s->pressure[4 * f + i] = pf[f];
      s->face_vertices[4 * f + i] = 4 * f + i;
    }
    s->face_offsets[f + 1] = 4 * (f + 1);
    s->normal[f] = ce_v3(0, 0, 1);
    s->area[f] = 1;
    s->centroid[f] = ce_v3(x0[f] + 0.5, y0[f] + 0.5, 0);
    s->centroid_pressure[f] = pf[f];
    s->element_a[f] = ea[f];
    s->element_b[f] = eb[f];
    s->patch[f] = -1;
    h->ff.fn[f] = pf[f];
    h->ff.fn_x[f] = ce_scale(s->centroid[f], pf[f]);
  }
}

Test(patch, two_squares_tet_adjacency, .init = setup, .fini = teardown) {
  /* A: tets 0 and 1 are neighbours, tet 2 is apart. B: a half space. */
  int32_t adj[3][4] = {{-1, -1, -1, 1}, {0, -1, -1, -1}, {-1, -1, -1, -1}};
  ce_geometry ga, gb;
  memset(&ga, 0, sizeof ga);
  memset(&gb, 0, sizeof gb);
  ga.compliance = CE_COMPLIANT;
  ga.tet.nt = 3;
  ga.tet.adj = adj;
  gb.is_halfspace = 1;
  /* square 1 = faces 0, 1, 3 (tets 0, 1, 0): x in [0, 2]; square 2 = face 2
   * (tet 2) at x = 10. Face 3 repeats face 0's element pair (a fan). */
  double x0[] = {0, 1, 10, 0}, y0[] = {0, 0, 0, 0};
  int32_t ea[] = {0, 1, 2, 0}, eb[] = {0, 0, 0, 0};
  double pf[] = {100, 300, 50, 0};
  hand_surface h;
  build(&h, 4, x0, y0, ea, eb, pf);
  ce_result r;
  memset(&r, 0, sizeof r);
  cr_assert_eq(ce_patches_compute(&h.s, &ga, &gb, &h.ff, arena, &r), CE_OK);
  cr_assert_eq(r.npatches, 2);
  cr_assert_eq(h.s.patch[0], 0);
  cr_assert_eq(h.s.patch[1], 0);
  cr_assert_eq(h.s.patch[2], 1);
  cr_assert_eq(h.s.patch[3], 0);
  ce_patch *p = r.patches;
  cr_assert_eq(p[0].faces, 3);
  cr_assert_eq(p[1].faces, 1);
  cr_assert(fabs(p[0].area - 3) < 1e-15);
  cr_assert(fabs(p[0].normal_force.z - 400) < 1e-12);
  cr_assert(fabs(p[0].normal_force_magnitude - 400) < 1e-12);
  /* centre of pressure: (100 * 0.5 + 300 * 1.5 + 0 * 0.5) / 400 = 1.25 */
  cr_assert(ce_norm(ce_sub(p[0].point, ce_v3(1.25, 0.5, 0))) < 1e-14, "x %g", p[0].point.x);
  cr_assert(ce_norm(ce_sub(p[1].point, ce_v3(10.5, 0.5, 0))) < 1e-14);
  cr_assert(fabs(p[1].normal_force_magnitude - 50) < 1e-12);
  /* whole surface */
  cr_assert_eq(r.total.faces, 4);
  cr_assert(fabs(r.total.area - 4) < 1e-15);
  cr_assert(fabs(r.total.normal_force_magnitude - 450) < 1e-12);
  cr_assert(ce_norm(ce_sub(r.total.point, ce_v3((400 * 1.25 + 50 * 10.5) / 450, 0.5, 0))) < 1e-13);
}

Test(patch, triangle_adjacency_and_zero_force_uses_area_centroid, .init = setup, .fini = teardown) {
  /* A: a half space (element 0); B: triangles 0-1-2 in a chain, 3 apart.
   * Faces listed so that the chain is joined only through face 2. */
  int32_t adj[4][3] = {{-1, 1, -1}, {0, 2, -1}, {-1, 1, -1}, {-1, -1, -1}};
  ce_geometry ga, gb;
  memset(&ga, 0, sizeof ga);
  memset(&gb, 0, sizeof gb);
  ga.is_halfspace = 1;
  ga.compliance = CE_COMPLIANT;
  gb.compliance = CE_RIGID;
  gb.tri.nf = 4;
  gb.tri.adj = adj;
  double x0[] = {5, 0, 2, 1}, y0[] = {0, 0, 0, 0};
  int32_t ea[] = {0, 0, 0, 0}, eb[] = {3, 0, 2, 1};
  double pf[] = {0, 0, 0, 0};
  hand_surface h;
  build(&h, 4, x0, y0, ea, eb, pf);
  ce_result r;
  memset(&r, 0, sizeof r);
  cr_assert_eq(ce_patches_compute(&h.s, &ga, &gb, &h.ff, arena, &r), CE_OK);
  cr_assert_eq(r.npatches, 2);
  /* first face (triangle 3) opens patch 0; the chain is patch 1 */
  cr_assert_eq(h.s.patch[0], 0);
  cr_assert_eq(h.s.patch[1], 1);
  cr_assert_eq(h.s.patch[2], 1);
  cr_assert_eq(h.s.patch[3], 1);
  cr_assert_eq(r.patches[1].faces, 3);
  /* no force: area centroid of squares at x0 = 0, 2, 1 -> (1.5, 0.5, 0) */
  cr_assert(ce_norm(ce_sub(r.patches[1].point, ce_v3(1.5, 0.5, 0))) < 1e-14);
  cr_assert(ce_norm(ce_sub(r.patches[0].point, ce_v3(5.5, 0.5, 0))) < 1e-14);
  cr_assert(r.patches[1].normal_force_magnitude == 0);
}

Test(patch, empty_surface, .init = setup, .fini = teardown) {
  ce_surface s;
  memset(&s, 0, sizeof s);
  ce_face_forces ff = {.fn = NULL};
  ce_result r;
  memset(&r, 0, sizeof r);
  r.npatches = 7;
  cr_assert_eq(ce_patches_compute(&s, NULL, NULL, &ff, arena, &r), CE_OK);
  cr_assert_eq(r.npatches, 0);
  cr_assert_null(r.patches);
  cr_assert_eq(r.total.faces, 0);
}

/* End to end: a compliant half space (A) pressed by two separate rigid
 * squares (B) at different depths gives two patches whose equivalent points
 * are the squares' centres. */
Test(patch, contact_query_two_rigid_squares_on_compliant_halfspace, .init = setup, .fini = teardown) {
  ce_props pa = ce_test_props(CE_COMPLIANT, 1e5, 1);
  pa.slab_thickness = 0.1; /* p = 1e6 * depth */
  ce_geometry *ga = NULL, *gb = NULL;
  ce_error err;
  cr_assert_eq(ce_build_halfspace(&pa, &ga, &err), CE_OK, "%s", err.message);
  /* squares facing -z: [0,1]x[0,1] at z = -0.01 and [3,5]x[0,1] at z = -0.02 */
  double v[] = {0, 0, -0.01, 1, 0, -0.01, 1, 1, -0.01, 0, 1, -0.01,
                3, 0, -0.02, 5, 0, -0.02, 5, 1, -0.02, 3, 1, -0.02};
  int32_t t[] = {0, 2, 1, 0, 3, 2, 4, 6, 5, 4, 7, 6};
  ce_props pb = ce_test_props(CE_RIGID, 0, 1);
  cr_assert_eq(ce_geometry_from_trimesh(v, 8, t, 4, 0, &pb, &gb, &err), CE_OK, "%s", err.message);
  ce_body A = ce_test_body(ga, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_body B = ce_test_body(gb, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_options o;
  ce_options_default(&o);
  o.want_patches = 1;
  o.want_surface = 1;
  for (int rep = 0; rep < 2; rep++) {
    o.representation = rep ? CE_REPRESENTATION_TRIANGLE : CE_REPRESENTATION_POLYGON;
    ce_arena_reset(arena);
    ce_result r;
    cr_assert_eq(ce_contact(&A, &B, &o, arena, &r, &err), CE_OK, "%s", err.message);
    cr_assert_eq(r.status, CE_CONTACT_SURFACE);
    cr_assert_eq(r.npatches, 2);
    cr_assert_eq(r.surface.nf, rep ? 12 : 4);
    ce_patch *p = r.patches;
    cr_assert(fabs(p[0].area - 1) < 1e-12);
    cr_assert(fabs(p[1].area - 2) < 1e-12);
    /* normals point out of B into A: -z; force 1e4 * 1 and 2e4 * 2 */
    cr_assert(ce_norm(ce_sub(p[0].normal_force, ce_v3(0, 0, -1e4))) < 1e-6, "f %g", p[0].normal_force.z);
    cr_assert(ce_norm(ce_sub(p[1].normal_force, ce_v3(0, 0, -4e4))) < 1e-6);
    cr_assert(ce_norm(ce_sub(p[0].point, ce_v3(0.5, 0.5, -0.01))) < 1e-12);
    cr_assert(ce_norm(ce_sub(p[1].point, ce_v3(4, 0.5, -0.02))) < 1e-12);
    cr_assert(fabs(r.total.normal_force_magnitude - 5e4) < 1e-6);
    cr_assert(ce_norm(ce_sub(r.total.point, ce_v3(3.3, 0.5, -0.018))) < 1e-12);
    for (int f = 0; f < r.surface.nf; f++) cr_assert(r.surface.patch[f] == (r.surface.centroid[f].x < 2 ? 0 : 1));
  }
  ce_geometry_free(gb);
  ce_geometry_free(ga);
}

Test(patch, diagonal_neighbours_and_shared_vertices_join, .init = setup, .fini = teardown) {
  /* A: tets 0-1 adjacent; B: triangles 0-1 adjacent. Faces (0, 0) and
   * (1, 1) share no element (A's and B's element boundaries coincide):
   * joined because both pairs are neighbours. Faces (5, 5) and (6, 6) have
   * unrelated elements but share a surface vertex: joined. Face (8, 8) is
   * alone. */
  int32_t tadj[9][4], sadj[9][3];
  for (int i = 0; i < 9; i++) {
    for (int j = 0; j < 4; j++) tadj[i][j] = -1;
    for (int j = 0; j < 3; j++) sadj[i][j] = -1;
  }
  tadj[0][2] = 1;
  tadj[1][0] = 0;
  sadj[0][1] = 1;
  sadj[1][2] = 0;
  ce_geometry ga, gb;
  memset(&ga, 0, sizeof ga);
  memset(&gb, 0, sizeof gb);
  ga.compliance = CE_COMPLIANT;
  ga.tet.nt = 9;
  ga.tet.adj = tadj;
  gb.compliance = CE_RIGID;
  gb.tri.nf = 9;
  gb.tri.adj = sadj;
  double x0[] = {0, 1, 5, 6, 20}, y0[] = {0, 0, 0, 0, 0};
  int32_t ea[] = {0, 1, 5, 6, 8}, eb[] = {0, 1, 5, 6, 8};
  double pf[] = {1, 1, 1, 1, 1};
  hand_surface h;
  build(&h, 5, x0, y0, ea, eb, pf);
  /* faces 2 and 3 share a vertex: face 3's first vertex is face 2's second */
  h.s.face_vertices[4 * 3] = 4 * 2 + 1;
  ce_result r;
  memset(&r, 0, sizeof r);
  cr_assert_eq(ce_patches_compute(&h.s, &ga, &gb, &h.ff, arena, &r), CE_OK);
  cr_assert_eq(r.npatches, 3);
  int32_t expect[] = {0, 0, 1, 1, 2};
  for (int f = 0; f < 5; f++) cr_assert_eq(h.s.patch[f], expect[f], "face %d", f);
  cr_assert(ce_norm(ce_sub(r.patches[0].point, ce_v3(1, 0.5, 0))) < 1e-14);
  cr_assert(ce_norm(ce_sub(r.patches[1].point, ce_v3(6, 0.5, 0))) < 1e-14);
}

/* Squares at x = 0, 1, 2 joined only through shared vertices (no element
 * is anyone's neighbour): in the order 0, 2, 1 the second face shares no
 * vertex with the first (the union-find decides), in the order 0, 1, 2
 * every face shares one with an earlier face (one patch at once); one
 * patch either way, with the same sums. Without the shared vertices, three
 * patches. */
Test(patch, vertex_chains_in_any_order_give_one_patch, .init = setup, .fini = teardown) {
  int32_t tadj[9][4], sadj[9][3];
  for (int i = 0; i < 9; i++) {
    for (int j = 0; j < 4; j++) tadj[i][j] = -1;
    for (int j = 0; j < 3; j++) sadj[i][j] = -1;
  }
  ce_geometry ga, gb;
  memset(&ga, 0, sizeof ga);
  memset(&gb, 0, sizeof gb);
  ga.compliance = CE_COMPLIANT;
  ga.tet.nt = 9;
  ga.tet.adj = tadj;
  gb.compliance = CE_RIGID;
  gb.tri.nf = 9;
  gb.tri.adj = sadj;
  double area[2] = {0, 0};
  for (int order = 0; order < 3; order++) {
    /* order 0: faces at x 0, 2, 1; orders 1 and 2: at x 0, 1, 2 */
    double x0[] = {0, order ? 1 : 2, order ? 2 : 1}, y0[] = {0, 0, 0}, pf[] = {1, 2, 3};
    int32_t ea[] = {0, 4, 8}, eb[] = {0, 4, 8};
    hand_surface h;
    build(&h, 3, x0, y0, ea, eb, pf);
    const int mid = order ? 1 : 2, right = order ? 2 : 1; /* the faces at x = 1 and 2 */
    if (order < 2) {
      h.s.face_vertices[4 * mid + 0] = 4 * 0 + 1; /* the middle's lower left is the left's lower right */
      h.s.face_vertices[4 * right + 0] = 4 * mid + 1;
    }
    ce_result r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(ce_patches_compute(&h.s, &ga, &gb, &h.ff, arena, &r), CE_OK);
    cr_assert_eq(r.npatches, order < 2 ? 1 : 3, "order %d: %d patches", order, r.npatches);
    for (int f = 0; f < 3; f++) cr_assert_eq(h.s.patch[f], order < 2 ? 0 : f, "order %d face %d", order, f);
    if (order < 2) area[order] = r.patches[0].area;
    /* centre of pressure: (0.5 * 1 + 1.5 * pf(x = 1) + 2.5 * pf(x = 2)) / 6 */
    double fx = order < 2 ? (0.5 * 1 + 1.5 * pf[mid] + 2.5 * pf[right]) / 6 : 0.5;
    cr_assert(fabs(r.patches[0].point.x - fx) < 1e-14, "order %d: x* %.17g", order, r.patches[0].point.x);
  }
  cr_assert(area[0] == 3 && area[1] == 3);
}

/* A compliant sphere against a rigid sphere meshed by the same generator,
 * aligned: their element boundaries coincide along whole meridians; the
 * contact must still be one patch. */
Test(patch, aligned_sphere_meshes_give_one_patch, .init = setup, .fini = teardown) {
  ce_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.type = CE_SHAPE_SPHERE;
  sh.radius = 0.1;
  ce_props pc = ce_test_props(CE_COMPLIANT, 1e6, 0.02), pr = ce_test_props(CE_RIGID, 0, 0.02);
  ce_geometry *gc = NULL, *gr = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&sh, &pc, &gc, &err), CE_OK, "%s", err.message);
  cr_assert_eq(ce_geometry_from_shape(&sh, &pr, &gr, &err), CE_OK, "%s", err.message);
  ce_options o;
  ce_options_default(&o);
  o.want_patches = 1;
  for (int k = 0; k < 4; k++) {
    ce_body A = ce_test_body(gc, ce_quat_identity(), ce_v3(0, 0, 0));
    ce_body B = ce_test_body(gr, ce_quat_identity(), ce_v3(0, 0, 0.19 - 0.002 * k));
    ce_arena_reset(arena);
    ce_result r;
    cr_assert_eq(ce_contact(&A, &B, &o, arena, &r, &err), CE_OK, "%s", err.message);
    cr_assert_eq(r.status, CE_CONTACT_SURFACE);
    cr_assert_eq(r.npatches, 1, "k %d: %d patches", k, r.npatches);
    /* symmetric about the z axis: the centre of pressure lies on it */
    cr_assert(fabs(r.patches[0].point.x) < 1e-9 && fabs(r.patches[0].point.y) < 1e-9);
    cr_assert(fabs(r.patches[0].normal_force_magnitude - r.total.normal_force_magnitude) < 1e-9);
  }
  ce_geometry_free(gr);
  ce_geometry_free(gc);
}
