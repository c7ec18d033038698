/* test_convex_pieces.c — point contact of a rigid non-convex mesh registered
 * with a convex decomposition (ce_geometry_from_trimesh_pieces): an
 * L-shaped block [0,2]x[0,1] u [0,1]x[0,2] x [0,1] with its two boxes as
 * pieces, against a small sphere in the L's notch and a half space, compared
 * with the same mesh without pieces (its convex hull). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 16); }
static void teardown(void) { ce_arena_destroy(arena); }

/* L outline (counter-clockwise), z in [0, 1]. */
static const double OUT[6][2] = {{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}};
/* piece 0: [0,2]x[0,1]x[0,1]; piece 1: [0,1]x[1,2]x[0,1] (8 corners each) */
static double PIECES[16 * 3];
static const int32_t NPTS[2] = {8, 8};

static ce_geometry *lblock(int with_pieces) {
  double v[12 * 3];
  int32_t t[20][3];
  int nt = 0;
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 2; k++) {
      v[3 * (6 * k + i)] = OUT[i][0];
      v[3 * (6 * k + i) + 1] = OUT[i][1];
      v[3 * (6 * k + i) + 2] = k;
    }
  /* top (+z) and bottom (-z): fan from the reflex corner 3 */
  static const int fan[4][3] = {{3, 4, 5}, {3, 5, 0}, {3, 0, 1}, {3, 1, 2}};
  for (int f = 0; f < 4; f++) {
    t[nt][0] = 6 + fan[f][0], t[nt][1] = 6 + fan[f][1], t[nt][2] = 6 + fan[f][2], nt++;
    t[nt][0] = fan[f][0], t[nt][1] = fan[f][2], t[nt][2] = fan[f][1], nt++;
  }
  for (int i = 0; i < 6; i++) {
    int j = (i + 1) % 6;
    t[nt][0] = i, t[nt][1] = j, t[nt][2] = 6 + j, nt++;
    t[nt][0] = i, t[nt][1] = 6 + j, t[nt][2] = 6 + i, nt++;
  }
  static const double box[2][2][3] = {{{0, 0, 0}, {2, 1, 1}}, {{0, 1, 0}, {1, 2, 1}}};
  for (int p = 0; p < 2; p++)
    for (int c = 0; c < 8; c++) {
      PIECES[3 * (8 * p + c)] = box[p][c & 1][0];
      PIECES[3 * (8 * p + c) + 1] = box[p][(c >> 1) & 1][1];
      PIECES[3 * (8 * p + c) + 2] = box[p][(c >> 2) & 1][2];
    }
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.5);
  ce_geometry *g = NULL;
  ce_error err;
  ce_errno e = ce_geometry_from_trimesh_pieces(v, 12, &t[0][0], nt, 1, PIECES, NPTS, with_pieces ? 2 : 0, &pr, &g,
                                               &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  return g;
}

static ce_geometry *prim(ce_shape s) {
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.1);
  ce_geometry *g = NULL;
  ce_error err;
  ce_errno e = ce_geometry_from_shape(&s, &pr, &g, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  return g;
}

static ce_result query(const ce_body *a, const ce_body *b) {
  ce_options o;
  ce_options_default(&o);
  o.model = CE_MODEL_POINT;
  o.want_patches = 1;
  ce_result r;
  ce_error err;
  ce_errno e = ce_contact(a, b, &o, arena, &r, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  return r;
}

#define NEAR(x, X, tol) cr_assert(fabs((x) - (X)) <= (tol), #x " = %.12g, expected %.12g", (double)(x), (double)(X))
#define VNEAR(v, X, Y, Z, tol) \
  do {                         \
    NEAR((v).x, X, tol);       \
    NEAR((v).y, Y, tol);       \
    NEAR((v).z, Z, tol);       \
  } while (0)

TestSuite(convex_pieces, .init = setup, .fini = teardown);

/* A sphere (r 0.2) at (1.5, 1.15, 0.5) in the notch: with pieces it touches
 * only piece 0's face y = 1 (depth 0.05, normal +y); the hull (which fills
 * the notch up to x + y = 3) swallows it: depth 0.2 + 0.35/sqrt(2). */
Test(convex_pieces, sphere_in_notch_pieces_vs_hull) {
  ce_geometry *lp = lblock(1), *lh = lblock(0);
  ce_geometry *s = prim((ce_shape){.type = CE_SHAPE_SPHERE, .radius = 0.2});
  ce_body a = ce_test_body(s, ce_quat_identity(), ce_v3(1.5, 1.15, 0.5));
  ce_body bp = ce_test_body(lp, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_body bh = ce_test_body(lh, ce_quat_identity(), ce_v3(0, 0, 0));

  ce_result r = query(&a, &bp);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert_eq(r.point.pieces_b, 2);
  cr_assert_eq(r.point.pieces_a, 0);
  cr_assert_eq(r.point.hull_b, 0);
  cr_assert_eq(r.point.contacts, 1);
  cr_assert_eq(r.npatches, 1);
  NEAR(r.point.depth, 0.05, 1e-7);
  VNEAR(r.point.normal, 0, 1, 0, 1e-7);
  VNEAR(r.point.point, 1.5, 0.975, 0.5, 1e-6);
  NEAR(r.point.normal_force, r.point.stiffness * 0.05, 1e-6 * r.point.normal_force);
  /* two rigid bodies: the series modulus stays infinite through the pieces path */
  cr_assert(isinf(r.combined_modulus), "combined modulus %g", r.combined_modulus);
  VNEAR(r.wrench_a.force, 0, r.point.normal_force, 0, 1e-9 * r.point.normal_force);
  VNEAR(r.wrench_b.force, 0, -r.point.normal_force, 0, 1e-9 * r.point.normal_force);

  ce_result h = query(&a, &bh);
  cr_assert_eq(h.status, CE_CONTACT_POINT);
  cr_assert_eq(h.point.hull_b, 1);
  cr_assert_eq(h.point.pieces_b, 0);
  NEAR(h.point.depth, 0.2 + 0.35 / sqrt(2.0), 1e-6);
  VNEAR(h.point.normal, 1 / sqrt(2.0), 1 / sqrt(2.0), 0, 1e-6);
  /* the pieces keep the whole body's stiffness */
  NEAR(r.point.stiffness, h.point.stiffness, 1e-12 * h.point.stiffness);

  /* out of the notch's corner: no contact with pieces, still one with the hull */
  a.X_WB.p = ce_v3(1.6, 1.6, 0.5);
  r = query(&a, &bp);
  cr_assert_eq(r.status, CE_CONTACT_NONE);
  cr_assert_eq(r.point.contacts, 0);
  cr_assert_eq(r.point.pieces_b, 2);
  cr_assert_eq(r.npatches, 0);
  h = query(&a, &bh);
  cr_assert_eq(h.status, CE_CONTACT_POINT);
  NEAR(h.point.depth, 0.2 - 0.2 / sqrt(2.0), 1e-6);
  ce_geometry_free(lp);
  ce_geometry_free(lh);
  ce_geometry_free(s);
}

/* A sphere in the notch's corner touching both pieces: two contacts (depth
 * 0.1 along +x from piece 1, 0.05 along +y from piece 0), forces summed,
 * the deepest reported; the L as body A gives the opposite forces. */
Test(convex_pieces, two_contacts_summed) {
  ce_geometry *lp = lblock(1);
  ce_geometry *s = prim((ce_shape){.type = CE_SHAPE_SPHERE, .radius = 0.2});
  ce_body a = ce_test_body(s, ce_quat_identity(), ce_v3(1.1, 1.15, 0.5));
  ce_body b = ce_test_body(lp, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_result r = query(&a, &b);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert_eq(r.point.contacts, 2);
  cr_assert_eq(r.npatches, 2);
  NEAR(r.point.depth, 0.1, 1e-7);
  VNEAR(r.point.normal, 1, 0, 0, 1e-7);
  double k = r.point.stiffness;
  VNEAR(r.total.normal_force, 0.1 * k, 0.05 * k, 0, 1e-6 * k);
  VNEAR(r.wrench_a.force, 0.1 * k, 0.05 * k, 0, 1e-6 * k);
  /* patches in piece order: piece 0 (+y) then piece 1 (+x) */
  VNEAR(r.patches[0].normal_force, 0, 0.05 * k, 0, 1e-6 * k);
  VNEAR(r.patches[1].normal_force, 0.1 * k, 0, 0, 1e-6 * k);
  /* centroid: force-weighted mean of (1.1, 0.975, 0.5) and (0.95, 1.15, 0.5) */
  VNEAR(r.centroid, (0.05 * 1.1 + 0.1 * 0.95) / 0.15, (0.05 * 0.975 + 0.1 * 1.15) / 0.15, 0.5, 1e-6);

  ce_result q = query(&b, &a);
  cr_assert_eq(q.point.contacts, 2);
  cr_assert_eq(q.point.pieces_a, 2);
  VNEAR(q.wrench_a.force, -0.1 * k, -0.05 * k, 0, 1e-6 * k);
  VNEAR(q.point.normal, -1, 0, 0, 1e-7);
  ce_geometry_free(lp);
  ce_geometry_free(s);
}

/* The L standing on a rigid half space, rotated +90 deg about x (piece 0 at
 * the bottom, piece 1 above it), sunk 1 mm: only piece 0 touches, at the
 * centre of its bottom face, with the L's own stiffness. */
Test(convex_pieces, standing_on_halfspace_one_piece) {
  ce_geometry *lp = lblock(1);
  ce_geometry *hs = prim((ce_shape){.type = CE_SHAPE_HALFSPACE});
  ce_quat q = ce_quat_from_axis_angle(ce_v3(1, 0, 0), M_PI / 2);
  ce_body a = ce_test_body(lp, q, ce_v3(0, 0, -0.001));
  ce_body b = ce_test_body(hs, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_result r = query(&a, &b);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert_eq(r.point.contacts, 1);
  cr_assert_eq(r.point.pieces_a, 2);
  cr_assert_eq(r.point.hull_a, 0);
  NEAR(r.point.depth, 0.001, 1e-9);
  VNEAR(r.point.normal, 0, 0, 1, 1e-9);
  VNEAR(r.point.point, 1, -0.5, -0.0005, 1e-9);
  NEAR(r.point.stiffness, ce_point_stiffness_default(lp), 1e-12 * r.point.stiffness);
  NEAR(r.total.normal_force_magnitude, r.point.stiffness * 0.001, 1e-9 * r.point.stiffness);
  ce_geometry_free(lp);
  ce_geometry_free(hs);
}

/* A bad piece fails the whole build and is named. */
Test(convex_pieces, bad_piece_named) {
  double v[4 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  int32_t t[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};
  double pts[(4 + 3) * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0};
  int32_t np[2] = {4, 3};
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.5);
  ce_geometry *g = (ce_geometry *)1;
  ce_error err;
  ce_errno e = ce_geometry_from_trimesh_pieces(v, 4, &t[0][0], 4, 1, pts, np, 2, &pr, &g, &err);
  cr_assert_eq(e, CE_EINVAL);
  cr_assert_null(g);
  cr_assert(strstr(err.message, "convex piece 1") != NULL, "%s", err.message);
  np[1] = 4; /* coplanar-free second tet: ok */
  double pts2[8 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, .5, 0, 0, 0, .5, 0, 0, 0, .5};
  e = ce_geometry_from_trimesh_pieces(v, 4, &t[0][0], 4, 1, pts2, np, 2, &pr, &g, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  cr_assert_eq(g->npieces, 2);
  ce_geometry_free(g);
}

/* Six pieces, each a Fibonacci sphere of 2,000 points (every point on its
 * hull), shifted along x; the mesh is a tetrahedron. */
#define NP 6
#define PER 2000
static double *sphere_pieces(int32_t np[NP]) {
  double *pts = malloc(3 * sizeof(double) * NP * PER);
  for (int p = 0; p < NP; p++) {
    np[p] = PER;
    ce_test_fibonacci_sphere(PER, 0.1, ce_v3(0.3 * p, 0, 0), pts + 3 * p * PER);
  }
  return pts;
}

static const double TV[4 * 3] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
static const int32_t TT[4][3] = {{0, 2, 1}, {0, 1, 3}, {0, 3, 2}, {1, 2, 3}};

/* max_bytes bounds the mesh and all its pieces together: a limit of the
 * whole geometry's bytes passes; half of it stops at the piece that no
 * longer fits (piece 3 here: the mesh and pieces 0 to 2 use the limit up),
 * naming the pieces and the limit, before the rest are built. */
Test(convex_pieces, max_bytes_bounds_all_pieces_together) {
  int32_t np[NP];
  double *pts = sphere_pieces(np);
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.5);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh_pieces(TV, 4, &TT[0][0], 4, 1, pts, np, NP, &pr, &g, &err), CE_OK, "%s",
               err.message);
  const size_t whole = g->bytes;
  cr_assert_eq(g->npieces, NP);
  cr_assert_gt(whole, NP * g->pieces[0]->bytes); /* the pieces are most of it */
  ce_geometry_free(g);

  pr.max_bytes = whole;
  cr_assert_eq(ce_geometry_from_trimesh_pieces(TV, 4, &TT[0][0], 4, 1, pts, np, NP, &pr, &g, &err), CE_OK, "%s",
               err.message);
  cr_assert_eq(g->bytes, whole);
  ce_geometry_free(g);

  pr.max_bytes = whole / 2;
  g = (ce_geometry *)1;
  cr_assert_eq(ce_geometry_from_trimesh_pieces(TV, 4, &TT[0][0], 4, 1, pts, np, NP, &pr, &g, &err), CE_EBYTES,
               "%s", err.message);
  cr_assert_null(g);
  cr_log_info("%s", err.message);
  cr_assert(strstr(err.message, "convex piece"), "%s", err.message);
  cr_assert(strstr(err.message, "pieces 0 to 2") && strstr(err.message, "of the limit of"), "%s", err.message);
  free(pts);
}

/* Progress: the mesh and the pieces report as one build, fractions rising
 * from 0 to 1 (each piece's own 0..1 mapped into its share); stopping at
 * any report cancels the whole build at once. */
Test(convex_pieces, progress_rises_once_and_cancels_everywhere) {
  int32_t np[NP];
  double *pts = sphere_pieces(np);
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.5);
  ce_test_stopper s;
  memset(&s, 0, sizeof s);
  pr.progress = ce_test_stop_at;
  pr.progress_user = &s;
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh_pieces(TV, 4, &TT[0][0], 4, 1, pts, np, NP, &pr, &g, &err), CE_OK, "%s",
               err.message);
  ce_geometry_free(g);
  const int total = s.calls;
  cr_assert_geq(total, 5 * NP, "%d reports", total);
  cr_assert_eq(s.last, 1.0);
  for (int k = 1; k <= total; k++) {
    memset(&s, 0, sizeof s);
    s.k = k;
    g = (ce_geometry *)1;
    cr_assert_eq(ce_geometry_from_trimesh_pieces(TV, 4, &TT[0][0], 4, 1, pts, np, NP, &pr, &g, &err),
                 CE_ECANCELED, "stop at report %d of %d", k, total);
    cr_assert_null(g);
    cr_assert_eq(s.calls, k);
    cr_assert_eq(s.after_stop, 0);
  }
  free(pts);
}
