/* test_terrain_contact.c — bodies against a heightfield terrain: compliant
 * bodies hydroelastically (terrain sampled into rigid triangles under the
 * body), rigid bodies by point contact. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 20); }
static void teardown(void) { ce_arena_destroy(arena); }

static ce_geometry *sphere(ce_compliance c, double r, double hint) {
  ce_props pr = ce_test_props(c, 1e6, hint);
  ce_shape s = {.type = CE_SHAPE_SPHERE, .radius = r};
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

static ce_geometry *terrain(const double *z, int nx, int ny, double d, ce_vec3 o, int cont) {
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.1);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_heightfield(z, nx, ny, d, d, o, cont, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

static double bowl(double x, double y) { return 0.2 * (x * x + y * y); }

/* DEM of the bowl on [-n, n]^2 at spacing 1 (the DEM terrain paper's validation). */
static ce_geometry *bowl_terrain(int n, int cont) {
  int m = 2 * n + 1;
  double *z = malloc((size_t)m * m * sizeof *z);
  for (int j = 0; j < m; j++)
    for (int i = 0; i < m; i++) z[j * m + i] = bowl(i - n, j - n);
  ce_geometry *g = terrain(z, m, m, 1.0, ce_v3(-n, -n, 0), cont);
  free(z);
  return g;
}

/* The analytic bowl as a fine open rigid triangle mesh over [x0, x1] x [y0, y1]. */
static ce_geometry *bowl_mesh(double x0, double x1, double y0, double y1, double step) {
  int nx = (int)lround((x1 - x0) / step) + 1, ny = (int)lround((y1 - y0) / step) + 1;
  double *v = malloc((size_t)nx * ny * 3 * sizeof *v);
  int32_t *t = malloc((size_t)(nx - 1) * (ny - 1) * 6 * sizeof *t);
  for (int j = 0; j < ny; j++)
    for (int i = 0; i < nx; i++) {
      double x = x0 + i * step, y = y0 + j * step;
      double *p = v + 3 * (j * nx + i);
      p[0] = x;
      p[1] = y;
      p[2] = bowl(x, y);
    }
  int nf = 0;
  for (int j = 0; j + 1 < ny; j++)
    for (int i = 0; i + 1 < nx; i++) {
      int a = j * nx + i, b = a + 1, c = a + nx + 1, d = a + nx;
      int32_t q[6] = {a, b, c, a, c, d};
      memcpy(t + 3 * nf, q, sizeof q);
      nf += 2;
    }
  ce_props pr = ce_test_props(CE_RIGID, 0, step);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh(v, nx * ny, t, nf, 0, &pr, &g, &err), CE_OK, "%s", err.message);
  free(v);
  free(t);
  return g;
}

static ce_result query(const ce_geometry *ga, ce_vec3 pa, const ce_geometry *gb, ce_vec3 pb, int patches) {
  ce_body a = ce_test_body(ga, ce_quat_identity(), pa), b = ce_test_body(gb, ce_quat_identity(), pb);
  ce_options opt;
  ce_options_default(&opt);
  opt.want_patches = patches;
  opt.want_face_contacts = patches;
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(&a, &b, &opt, arena, &r, &err), CE_OK, "%s", err.message);
  return r;
}

static double rel(ce_vec3 a, ce_vec3 b) { return ce_norm(ce_sub(a, b)) / fmax(ce_norm(b), 1e-300); }

/* A flat terrain is a rigid half space: same surface, same wrench. */
Test(terrain_contact, flat_terrain_equals_halfspace, .init = setup, .fini = teardown) {
  ce_geometry *s = sphere(CE_COMPLIANT, 0.5, 0.1);
  const int n = 17;
  double z[17 * 17];
  for (int k = 0; k < n * n; k++) z[k] = 0.0;
  ce_geometry *t = terrain(z, n, n, 0.25, ce_v3(-2, -2, 0), 1);
  ce_props hp = ce_test_props(CE_RIGID, 0, 0.1);
  ce_shape hs = {.type = CE_SHAPE_HALFSPACE};
  ce_geometry *h = NULL;
  cr_assert_eq(ce_geometry_from_shape(&hs, &hp, &h, NULL), CE_OK);
  ce_vec3 c = ce_v3(0.137, -0.213, 0.4531);
  ce_result rt = query(s, c, t, ce_v3(0, 0, 0), 1);
  ce_wrench wt = rt.wrench_a;
  double at = rt.area;
  int32_t np = rt.npatches;
  ce_result rh = query(s, c, h, ce_v3(0, 0, 0), 0);
  cr_assert_eq(rt.status, CE_CONTACT_SURFACE);
  cr_assert_gt(wt.force.z, 0, "the terrain pushes the sphere up");
  cr_assert_lt(rel(wt.force, rh.wrench_a.force), 1e-9, "force %g vs half space %g", wt.force.z,
               rh.wrench_a.force.z);
  cr_assert_lt(ce_norm(ce_sub(wt.torque, rh.wrench_a.torque)), 1e-9 * ce_norm(rh.wrench_a.force));
  cr_assert(ce_test_close(at, rh.area, 1e-9, 0));
  cr_assert_eq(np, 1, "one patch (%d)", np);
  ce_geometry_free(h);
  ce_geometry_free(t);
  ce_geometry_free(s);
}

/* The DEM terrain paper's validation, static: a compliant sphere resting in the bowl
 * z = 0.2 (x^2 + y^2) given as a DEM at spacing 1 and as fine analytic
 * triangle meshes (spacings 0.01 and 0.005, whose chords sit above the bowl
 * by ~ kappa h^2 / 12: their forces converge as h^2, so Richardson's
 * (4 F(h/2) - F(h)) / 3 is the exact bowl's force to ~1e-5). The DEM's
 * force agrees with the extrapolated one within 1e-4 (measured 4e-5) and with the 0.005
 * mesh within 1e-3. */
Test(terrain_contact, sphere_in_dem_bowl_matches_analytic_mesh, .init = setup, .fini = teardown) {
  ce_geometry *s = sphere(CE_COMPLIANT, 0.5, 0.05);
  /* resting off-centre: on the surface at (1, 0.5), 3 cm deep along the normal */
  ce_vec3 p0 = ce_v3(1.0, 0.5, bowl(1.0, 0.5));
  ce_vec3 n0 = ce_normalize(ce_v3(-0.4, -0.2, 1.0));
  ce_vec3 c = ce_axpy(p0, 0.5 - 0.03, n0);
  ce_vec3 fm[2];
  const double hs[2] = {0.01, 0.005};
  for (int q = 0; q < 2; q++) {
    ce_geometry *mesh = bowl_mesh(0.5, 1.5, 0.0, 1.0, hs[q]);
    ce_result rm = query(s, c, mesh, ce_v3(0, 0, 0), 0);
    cr_assert_eq(rm.status, CE_CONTACT_SURFACE);
    fm[q] = rm.wrench_a.force;
    ce_geometry_free(mesh);
  }
  ce_vec3 fx = ce_scale(ce_sub(ce_scale(fm[1], 4.0), fm[0]), 1.0 / 3.0);
  for (int cont = 1; cont <= 2; cont++) {
    ce_geometry *t = bowl_terrain(6, cont);
    ce_result rt = query(s, c, t, ce_v3(0, 0, 0), 1);
    ce_vec3 ft = rt.wrench_a.force;
    cr_log_info("C%d: DEM force (%.6g %.6g %.6g); mesh 0.01 (%.6g %.6g %.6g), 0.005 (%.6g %.6g %.6g), "
                "extrapolated (%.6g %.6g %.6g); rel diff to extrapolated %.3g, to 0.005 mesh %.3g", cont, ft.x,
                ft.y, ft.z, fm[0].x, fm[0].y, fm[0].z, fm[1].x, fm[1].y, fm[1].z, fx.x, fx.y, fx.z, rel(ft, fx),
                rel(ft, fm[1]));
    cr_assert_eq(rt.status, CE_CONTACT_SURFACE);
    cr_assert_lt(rel(ft, fx), 1e-4, "C%d: DEM force differs from the analytic bowl's by %g", cont, rel(ft, fx));
    cr_assert_lt(rel(ft, fm[1]), 1e-3, "C%d: DEM force differs from the 0.005 mesh by %g", cont, rel(ft, fm[1]));
    /* the force is along the bowl's normal at the contact (sphere symmetric) */
    cr_assert_lt(ce_norm(ce_cross(ce_normalize(ft), n0)), 1e-2);
    cr_assert_eq(rt.npatches, 1);
    cr_assert_lt(ce_norm(ce_sub(rt.total.point, p0)), 0.05, "centre of pressure near the contact");
    ce_geometry_free(t);
  }
  ce_geometry_free(s);
}

/* Only the terrain under the body is touched: the same local terrain inside
 * a 64^2 and a 1024^2 grid gives the same candidates and force. */
Test(terrain_contact, cost_independent_of_grid_size, .init = setup, .fini = teardown) {
  ce_geometry *s = sphere(CE_COMPLIANT, 0.4, 0.08);
  int sizes[2] = {64, 1024};
  ce_result r[2];
  ce_vec3 f[2];
  for (int q = 0; q < 2; q++) {
    int n = sizes[q];
    double d = 0.1, o = -0.5 * d * n;
    double *z = malloc((size_t)n * n * sizeof *z);
    for (int j = 0; j < n; j++)
      for (int i = 0; i < n; i++) {
        double x = o + i * d, y = o + j * d;
        z[(size_t)j * n + i] = 0.05 * sin(3 * x) * cos(2 * y);
      }
    ce_geometry *t = terrain(z, n, n, d, ce_v3(o, o, 0), 2);
    free(z);
    r[q] = query(s, ce_v3(0.31, 0.17, 0.4), t, ce_v3(0, 0, 0), 0);
    f[q] = r[q].wrench_a.force;
    ce_geometry_free(t);
  }
  cr_assert_eq(r[0].status, CE_CONTACT_SURFACE);
  cr_assert_gt(r[0].candidate_pairs, 0);
  cr_assert_eq(r[0].candidate_pairs, r[1].candidate_pairs, "%lld vs %lld", (long long)r[0].candidate_pairs,
               (long long)r[1].candidate_pairs);
  cr_assert_eq(r[0].polygons, r[1].polygons);
  cr_assert_lt(rel(f[1], f[0]), 1e-9);
  ce_geometry_free(s);
}

Test(terrain_contact, far_above_or_off_the_grid_costs_nothing, .init = setup, .fini = teardown) {
  ce_geometry *s = sphere(CE_COMPLIANT, 0.5, 0.1);
  ce_geometry *t = bowl_terrain(6, 1);
  ce_result r = query(s, ce_v3(0.5, 0.5, 30.0), t, ce_v3(0, 0, 0), 1);
  cr_assert_eq(r.status, CE_CONTACT_NONE);
  cr_assert_eq(r.candidate_pairs, 0);
  r = query(s, ce_v3(9.0, 0.0, 0.0), t, ce_v3(0, 0, 0), 1);
  cr_assert_eq(r.status, CE_CONTACT_NONE, "beyond the grid's edge there is no terrain");
  cr_assert_eq(r.candidate_pairs, 0);
  ce_geometry_free(t);
  ce_geometry_free(s);
}

/* Terrain as A or B: equal and opposite, normals out of B into A. */
Test(terrain_contact, roles_swap, .init = setup, .fini = teardown) {
  ce_geometry *s = sphere(CE_COMPLIANT, 0.5, 0.1);
  ce_geometry *t = bowl_terrain(6, 2);
  ce_vec3 c = ce_v3(-0.8, 0.3, 0.5 + bowl(-0.8, 0.3) - 0.06);
  ce_vec3 tp = ce_v3(0.1, -0.2, 0.05); /* the terrain body placed off the origin */
  ce_vec3 cw = ce_add(c, tp);
  ce_result r1 = query(s, cw, t, tp, 0);
  ce_wrench w1 = r1.wrench_a, w1b = r1.wrench_b;
  ce_result r2 = query(t, tp, s, cw, 0);
  cr_assert_eq(r1.status, CE_CONTACT_SURFACE);
  cr_assert_lt(rel(r2.wrench_b.force, w1.force), 1e-12);
  cr_assert_lt(rel(r2.wrench_a.force, w1b.force), 1e-12);
  cr_assert_lt(rel(ce_neg(w1b.force), w1.force), 1e-12);
  ce_geometry_free(t);
  ce_geometry_free(s);
}

/* ---- rigid bodies: point contact ------------------------------------------ */

static ce_geometry *rigid_shape(ce_shape s) {
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.05);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

static ce_geometry *flat_terrain(double zlevel) {
  double z[20 * 20];
  for (int k = 0; k < 400; k++) z[k] = zlevel;
  return terrain(z, 20, 20, 0.25, ce_v3(-2.5, -2.5, 0), 2);
}

static ce_result query_body(const ce_body *a, const ce_body *b, ce_contact_model model) {
  ce_options opt;
  ce_options_default(&opt);
  opt.want_patches = 1;
  opt.model = model;
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(a, b, &opt, arena, &r, &err), CE_OK, "%s", err.message);
  return r;
}

/* A rigid sphere on a flat terrain: the point law of a rigid half space. */
Test(terrain_contact, rigid_sphere_on_flat_terrain_is_halfspace_point_law, .init = setup, .fini = teardown) {
  ce_geometry *s = rigid_shape((ce_shape){.type = CE_SHAPE_SPHERE, .radius = 0.3});
  ce_geometry *t = flat_terrain(0.1);
  ce_geometry *h = rigid_shape((ce_shape){.type = CE_SHAPE_HALFSPACE});
  ce_body bs = ce_test_body(s, ce_quat_identity(), ce_v3(0.2, -0.1, 0.1 + 0.3 - 0.004));
  bs.V_WB.v = ce_v3(0.05, 0, -0.2); /* sliding and sinking */
  bs.material.dissipation = 0.5;
  bs.material.friction = 0.6;
  ce_body bt = ce_test_body(t, ce_quat_identity(), ce_v3(0, 0, 0));
  bt.material.friction = 0.6;
  ce_body bh = ce_test_body(h, ce_quat_identity(), ce_v3(0, 0, 0.1));
  bh.material.friction = 0.6;
  ce_result rt = query_body(&bs, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  ce_wrench wt = rt.wrench_a;
  ce_point_mtd pt = rt.point;
  ce_result rh = query_body(&bs, &bh, CE_MODEL_POINT);
  cr_assert_eq(rt.status, CE_CONTACT_POINT);
  cr_assert_eq(rt.model, CE_MODEL_POINT);
  cr_assert_eq(rh.status, CE_CONTACT_POINT);
  double k = ce_point_stiffness_default(s);
  cr_assert(ce_test_close(pt.depth, 0.004, 1e-9, 0), "depth %g", pt.depth);
  cr_assert(ce_test_close(pt.stiffness, k, 1e-12, 0));
  cr_assert(ce_test_close(pt.normal_force, k * 0.004 * (1 + 0.5 * 0.2), 1e-9, 0), "fn %g", pt.normal_force);
  cr_assert_lt(ce_norm(ce_sub(pt.normal, ce_v3(0, 0, 1))), 1e-12);
  cr_assert_lt(rel(wt.force, rh.wrench_a.force), 1e-9, "terrain (%g %g %g) vs half space (%g %g %g)", wt.force.x,
               wt.force.y, wt.force.z, rh.wrench_a.force.x, rh.wrench_a.force.y, rh.wrench_a.force.z);
  cr_assert_lt(ce_norm(ce_sub(wt.torque, rh.wrench_a.torque)), 1e-9 * ce_norm(wt.force));
  cr_assert_lt(wt.force.x, 0, "friction opposes the sliding");
  ce_geometry_free(h);
  ce_geometry_free(t);
  ce_geometry_free(s);
}

/* A rigid sphere in the DEM bowl: the closest point of the smooth surface,
 * its Gauss normal and the depth equal the analytic bowl's. */
Test(terrain_contact, rigid_sphere_in_dem_bowl, .init = setup, .fini = teardown) {
  ce_geometry *s = rigid_shape((ce_shape){.type = CE_SHAPE_SPHERE, .radius = 0.5});
  for (int cont = 1; cont <= 2; cont++) {
    ce_geometry *t = bowl_terrain(6, cont);
    ce_vec3 p0 = ce_v3(-1.3, 0.7, bowl(-1.3, 0.7));
    ce_vec3 n0 = ce_normalize(ce_v3(0.4 * 1.3, -0.4 * 0.7, 1.0));
    const double x = 0.002;
    ce_body bs = ce_test_body(s, ce_quat_identity(), ce_axpy(p0, 0.5 - x, n0));
    ce_body bt = ce_test_body(t, ce_quat_identity(), ce_v3(0, 0, 0));
    ce_result r = query_body(&bs, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
    cr_assert_eq(r.status, CE_CONTACT_POINT);
    cr_assert(ce_test_close(r.point.depth, x, 1e-8, 0), "C%d depth %.12g", cont, r.point.depth);
    cr_assert_lt(ce_norm(ce_sub(r.point.normal, n0)), 1e-10);
    cr_assert_lt(ce_norm(ce_sub(r.point.witness_b, p0)), 1e-9, "the terrain's witness is the bowl point");
    double k = ce_point_stiffness_default(s);
    cr_assert_lt(rel(r.wrench_a.force, ce_scale(n0, k * x)), 1e-8);
    cr_assert_eq(r.npatches, 1);
    /* terrain as A: equal and opposite */
    ce_result r2 = query_body(&bt, &bs, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
    cr_assert_lt(rel(r2.wrench_a.force, ce_scale(n0, -k * x)), 1e-8);
    cr_assert_lt(ce_norm(ce_sub(r2.point.normal, ce_neg(n0))), 1e-10);
    ce_geometry_free(t);
  }
  ce_geometry_free(s);
}

/* A tilted capsule touches with its lower end; a tilted box with its corners
 * (each weighted by its share of the depth, total stiffness k). */
Test(terrain_contact, rigid_capsule_and_box_corners, .init = setup, .fini = teardown) {
  ce_geometry *t = flat_terrain(0.0);
  ce_body bt = ce_test_body(t, ce_quat_identity(), ce_v3(0, 0, 0));
  const double th = 0.3, r = 0.1, L = 0.6;
  ce_geometry *c = rigid_shape((ce_shape){.type = CE_SHAPE_CAPSULE, .radius = r, .length = L});
  ce_quat q = ce_quat_from_axis_angle(ce_v3(0, 1, 0), th);
  double zc = r + 0.5 * L * cos(th) - 0.003; /* lower end 3 mm deep */
  ce_body bc = ce_test_body(c, q, ce_v3(0.4, 0.3, zc));
  ce_result rc = query_body(&bc, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  cr_assert_eq(rc.status, CE_CONTACT_POINT);
  cr_assert(ce_test_close(rc.point.depth, 0.003, 1e-7, 0), "capsule depth %.10g", rc.point.depth);
  ce_vec3 lower = ce_pose_apply(&bc.X_WB, ce_v3(0, 0, -0.5 * L));
  cr_assert_lt(fabs(rc.point.point.x - lower.x) + fabs(rc.point.point.y - lower.y), 1e-4);
  cr_assert(ce_test_close(rc.wrench_a.force.z, ce_point_stiffness_default(c) * 0.003, 1e-6, 0));

  ce_geometry *b = rigid_shape((ce_shape){.type = CE_SHAPE_BOX, .size = {0.4, 0.2, 0.1}});
  double kb = ce_point_stiffness_default(b);
  /* flat: 4 corners 2 mm deep -> k * 2 mm in total */
  ce_body bb = ce_test_body(b, ce_quat_identity(), ce_v3(-0.5, 0.2, 0.05 - 0.002));
  ce_result rb = query_body(&bb, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  cr_assert_eq(rb.npatches, 4);
  cr_assert(ce_test_close(rb.wrench_a.force.z, kb * 0.002, 1e-9, 0), "box fn %g", rb.wrench_a.force.z);
  cr_assert_lt(fabs(rb.wrench_a_centroid.torque.x) + fabs(rb.wrench_a_centroid.torque.y), 1e-9 * kb);
  /* tilted about y: two corners at depth x1, two at x2 */
  ce_quat qb = ce_quat_from_axis_angle(ce_v3(0, 1, 0), 0.05);
  bb = ce_test_body(b, qb, ce_v3(-0.5, 0.2, 0.05));
  double x1 = 0, x2 = 0;
  for (int k = 0; k < 8; k++) {
    ce_vec3 cw = ce_pose_apply(&bb.X_WB, ce_v3(k & 1 ? 0.2 : -0.2, k & 2 ? 0.1 : -0.1, k & 4 ? 0.05 : -0.05));
    if (cw.z < 0) {
      if (x1 == 0 || fabs(-cw.z - x1) < 1e-12) x1 = -cw.z;
      else x2 = -cw.z;
    }
  }
  rb = query_body(&bb, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  double expect = kb * (2 * x1 * x1 + 2 * x2 * x2) / (2 * x1 + 2 * x2);
  cr_assert_eq(rb.npatches, x2 > 0 ? 4 : 2);
  cr_assert(ce_test_close(rb.wrench_a.force.z, expect, 1e-8, 0), "tilted box fn %g vs %g", rb.wrench_a.force.z,
            expect);
  ce_geometry_free(b);
  ce_geometry_free(c);
  ce_geometry_free(t);
}

Test(terrain_contact, rigid_far_above_off_grid_and_models, .init = setup, .fini = teardown) {
  ce_geometry *s = rigid_shape((ce_shape){.type = CE_SHAPE_SPHERE, .radius = 0.3});
  ce_geometry *t = flat_terrain(0.0);
  ce_body bt = ce_test_body(t, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_body bs = ce_test_body(s, ce_quat_identity(), ce_v3(0, 0, 5));
  ce_result r = query_body(&bs, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  cr_assert_eq(r.status, CE_CONTACT_NONE);
  bs = ce_test_body(s, ce_quat_identity(), ce_v3(10, 0, 0.1));
  r = query_body(&bs, &bt, CE_MODEL_POINT);
  cr_assert_eq(r.status, CE_CONTACT_NONE, "off the grid");
  bs = ce_test_body(s, ce_quat_identity(), ce_v3(0, 0, 0.29));
  r = query_body(&bs, &bt, CE_MODEL_HYDROELASTIC);
  cr_assert_eq(r.status, CE_CONTACT_UNSUPPORTED, "rigid vs terrain has no hydroelastic model");
  r = query_body(&bs, &bt, CE_MODEL_POINT);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  /* a compliant sphere under the point model takes the point path too */
  ce_geometry *cs = sphere(CE_COMPLIANT, 0.3, 0.1);
  ce_body bcs = ce_test_body(cs, ce_quat_identity(), ce_v3(0, 0, 0.29));
  r = query_body(&bcs, &bt, CE_MODEL_POINT);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert(ce_test_close(r.point.depth, 0.01, 1e-6, 0), "depth %g", r.point.depth);
  /* terrain vs half space and terrain vs terrain: undefined */
  ce_geometry *h = rigid_shape((ce_shape){.type = CE_SHAPE_HALFSPACE});
  ce_body bh = ce_test_body(h, ce_quat_identity(), ce_v3(0, 0, 0));
  r = query_body(&bh, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  cr_assert_eq(r.status, CE_CONTACT_UNSUPPORTED);
  r = query_body(&bt, &bt, CE_MODEL_POINT);
  cr_assert_eq(r.status, CE_CONTACT_UNSUPPORTED);
  ce_geometry_free(h);
  ce_geometry_free(cs);
  ce_geometry_free(t);
  ce_geometry_free(s);
}

/* Any other rigid shape touches with its mesh vertices: a convex hull of a
 * box's corners gives the box's answer. */
Test(terrain_contact, rigid_convex_vertices_equal_box_corners, .init = setup, .fini = teardown) {
  ce_geometry *t = bowl_terrain(6, 2);
  ce_body bt = ce_test_body(t, ce_quat_identity(), ce_v3(0, 0, 0));
  double pts[24];
  for (int k = 0; k < 8; k++) {
    pts[3 * k] = k & 1 ? 0.15 : -0.15;
    pts[3 * k + 1] = k & 2 ? 0.1 : -0.1;
    pts[3 * k + 2] = k & 4 ? 0.05 : -0.05;
  }
  ce_geometry *cv = rigid_shape((ce_shape){.type = CE_SHAPE_CONVEX, .points = pts, .npoints = 8});
  ce_geometry *bx = rigid_shape((ce_shape){.type = CE_SHAPE_BOX, .size = {0.3, 0.2, 0.1}});
  ce_quat q = ce_quat_from_axis_angle(ce_normalize(ce_v3(1, 2, 0.5)), 0.4);
  ce_vec3 pos = ce_v3(0.8, -0.6, bowl(0.8, -0.6) + 0.07);
  ce_body b1 = ce_test_body(cv, q, pos), b2 = ce_test_body(bx, q, pos);
  b1.point_stiffness = b2.point_stiffness = 1e5;
  ce_result r1 = query_body(&b1, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  ce_wrench w1 = r1.wrench_a;
  int32_t n1 = r1.npatches;
  ce_result r2 = query_body(&b2, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  cr_assert_eq(r2.status, CE_CONTACT_POINT);
  cr_assert_geq(n1, 1);
  cr_assert_eq(n1, r2.npatches);
  cr_assert_lt(rel(w1.force, r2.wrench_a.force), 1e-9, "convex fz %g vs box %g", w1.force.z, r2.wrench_a.force.z);
  cr_assert_lt(ce_norm(ce_sub(w1.torque, r2.wrench_a.torque)), 1e-9 * ce_norm(w1.force));
  ce_geometry_free(bx);
  ce_geometry_free(cv);
  ce_geometry_free(t);
}

/* A rotated, translated flat terrain is the same rotated half space, for a
 * compliant sphere (hydroelastic) and a rigid one (point contact). */
Test(terrain_contact, posed_terrain_equals_posed_halfspace, .init = setup, .fini = teardown) {
  ce_geometry *t = flat_terrain(0.0);
  ce_geometry *h = rigid_shape((ce_shape){.type = CE_SHAPE_HALFSPACE});
  ce_quat q = ce_quat_from_axis_angle(ce_normalize(ce_v3(0.3, -1, 0.2)), 0.5);
  ce_vec3 o = ce_v3(0.4, -0.3, 1.2);
  ce_body bt = ce_test_body(t, q, o), bh = ce_test_body(h, q, o);
  ce_vec3 n = ce_quat_rotate(q, ce_v3(0, 0, 1));
  ce_vec3 foot = ce_add(o, ce_quat_rotate(q, ce_v3(0.21, -0.13, 0)));
  ce_geometry *cs = sphere(CE_COMPLIANT, 0.3, 0.06);
  ce_geometry *rs = rigid_shape((ce_shape){.type = CE_SHAPE_SPHERE, .radius = 0.3});
  ce_geometry *sp[2] = {cs, rs};
  for (int k = 0; k < 2; k++) {
    ce_body bs = ce_test_body(sp[k], ce_test_rand_quat(&(uint64_t){77}), ce_axpy(foot, 0.3 - 0.02, n));
    bs.V_WB.v = ce_v3(0.01, 0.02, -0.03);
    bs.material.dissipation = 0.2;
    ce_result r1 = query_body(&bs, &bt, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
    ce_wrench w1 = r1.wrench_a;
    ce_contact_status st = r1.status;
    ce_result r2 = query_body(&bs, &bh, k == 0 ? CE_MODEL_HYDROELASTIC : CE_MODEL_POINT);
    cr_assert_eq(st, k == 0 ? CE_CONTACT_SURFACE : CE_CONTACT_POINT);
    cr_assert_eq(r2.status, st);
    cr_assert_lt(rel(w1.force, r2.wrench_a.force), 1e-8, "%s: (%g %g %g) vs (%g %g %g)", k ? "rigid" : "compliant",
                 w1.force.x, w1.force.y, w1.force.z, r2.wrench_a.force.x, r2.wrench_a.force.y, r2.wrench_a.force.z);
    cr_assert_lt(ce_norm(ce_sub(w1.torque, r2.wrench_a.torque)), 1e-8 * ce_norm(w1.force));
    cr_assert_gt(ce_dot(w1.force, n), 0);
  }
  ce_geometry_free(rs);
  ce_geometry_free(cs);
  ce_geometry_free(h);
  ce_geometry_free(t);
}

/* The terrain ends at the grid's edges: a sphere centred on a corner of a
 * flat grid touches a quarter of its contact disk, on an edge half. */
Test(terrain_contact, grid_edges_cut_the_surface, .init = setup, .fini = teardown) {
  ce_geometry *s = sphere(CE_COMPLIANT, 0.3, 0.05);
  ce_geometry *t = flat_terrain(0.0); /* [-2.5, 2.25]^2 */
  double full = query(s, ce_v3(0.03, 0.02, 0.27), t, ce_v3(0, 0, 0), 0).area;
  double edge = query(s, ce_v3(2.25, 0.02, 0.27), t, ce_v3(0, 0, 0), 0).area;
  double corner = query(s, ce_v3(2.25, -2.5, 0.27), t, ce_v3(0, 0, 0), 0).area;
  cr_assert_gt(full, 0);
  cr_assert_lt(fabs(edge / full - 0.5), 0.03, "edge %g of %g", edge, full);
  cr_assert_lt(fabs(corner / full - 0.25), 0.03, "corner %g of %g", corner, full);
  ce_geometry_free(t);
  ce_geometry_free(s);
}

/* Beyond the grid's edge the terrain is a vertical wall under its rim
 * (ce_heightfield_closest): a rigid sphere (R = 0.4) centred 0.5 R beyond
 * the edge x = 2.25 and 0.2 R below the flat rim penetrates the wall by
 * 0.5 R with a horizontal normal, not by the slanted 1.54 R to the rim;
 * above the rim the rim point is closest; just inside the edge and below
 * the surface the nearer wall wins; the depth is continuous across it. */
Test(terrain_contact, rigid_sphere_at_the_grid_edge_meets_the_wall, .init = setup, .fini = teardown) {
  const double R = 0.4, ex = 2.25;
  ce_geometry *s = rigid_shape((ce_shape){.type = CE_SHAPE_SPHERE, .radius = R});
  ce_geometry *t = flat_terrain(0.0);
  ce_body bt = ce_test_body(t, ce_quat_identity(), ce_v3(0, 0, 0));
  /* reviewer's case: beyond the edge, below the rim */
  ce_body bs = ce_test_body(s, ce_quat_identity(), ce_v3(ex + 0.5 * R, 0.1, -0.2 * R));
  ce_result r = query_body(&bs, &bt, CE_MODEL_POINT);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert(ce_test_close(r.point.depth, 0.5 * R, 1e-9, 0), "depth %g (expected %g)", r.point.depth, 0.5 * R);
  cr_assert_lt(ce_norm(ce_sub(r.point.normal, ce_v3(1, 0, 0))), 1e-12, "normal (%g %g %g)", r.point.normal.x,
               r.point.normal.y, r.point.normal.z);
  double k = ce_point_stiffness_default(s);
  cr_assert(ce_test_close(r.point.normal_force, k * 0.5 * R, 1e-9, 0), "fn %g", r.point.normal_force);
  /* beyond the edge, above the rim: distance to the rim point (ex, y, 0) */
  bs = ce_test_body(s, ce_quat_identity(), ce_v3(ex + 0.2, 0.1, 0.1));
  r = query_body(&bs, &bt, CE_MODEL_POINT);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  double dr = sqrt(0.2 * 0.2 + 0.1 * 0.1);
  cr_assert(ce_test_close(r.point.depth, R - dr, 1e-7, 0), "depth %g (expected %g)", r.point.depth, R - dr);
  cr_assert_lt(ce_norm(ce_sub(r.point.normal, ce_v3(0.2 / dr, 0, 0.1 / dr))), 1e-6);
  /* inside the edge by 0.1, 0.3 below the surface: the wall (gap 0.1) is
   * nearer than the top (0.3) */
  bs = ce_test_body(s, ce_quat_identity(), ce_v3(ex - 0.1, 0.1, -0.3));
  r = query_body(&bs, &bt, CE_MODEL_POINT);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert(ce_test_close(r.point.depth, R + 0.1, 1e-9, 0), "depth %g", r.point.depth);
  cr_assert_lt(ce_norm(ce_sub(r.point.normal, ce_v3(1, 0, 0))), 1e-12);
  /* continuity across the wall */
  double dm, dp;
  bs = ce_test_body(s, ce_quat_identity(), ce_v3(ex - 1e-7, 0.1, -0.2 * R));
  dm = query_body(&bs, &bt, CE_MODEL_POINT).point.depth;
  bs = ce_test_body(s, ce_quat_identity(), ce_v3(ex + 1e-7, 0.1, -0.2 * R));
  dp = query_body(&bs, &bt, CE_MODEL_POINT).point.depth;
  cr_assert_lt(fabs(dm - R), 2e-7, "inside %g", dm);
  cr_assert_lt(fabs(dp - R), 2e-7, "outside %g", dp);
  ce_geometry_free(t);
  ce_geometry_free(s);
}
