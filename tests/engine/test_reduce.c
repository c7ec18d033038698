/* test_reduce.c — reduced contacts (ce_reduce.c): at most K points per
 * patch whose forces and moments add up to the patch's (the pair's wrench)
 * for every pair type, lying within the patch and spanning it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 22); }
static void teardown(void) { ce_arena_destroy(arena); }
TestSuite(reduce, .init = setup, .fini = teardown, .timeout = 600);

static ce_vec3 rand_dir(uint64_t *rng) { return ce_quat_rotate(ce_test_rand_quat(rng), ce_v3(1, 0, 0)); }

/* two bodies about 0.1 in radius, centres 0.15 .. 0.17 apart */
static void pose_pair(uint64_t *rng, ce_pose *xa, ce_pose *xb) {
  *xa = ce_test_rand_pose(rng, 0, 0.2);
  ce_vec3 d = ce_scale(rand_dir(rng), 0.15 + 0.02 * ce_test_rand(rng));
  *xb = ce_pose_from_quat(ce_test_rand_quat(rng), ce_add(xa->p, d));
}

/* A at a random pose, B a half space, A's origin 0.05 .. 0.07 above it */
static void pose_on_halfspace_b(uint64_t *rng, ce_pose *xa, ce_pose *xb) {
  *xb = ce_test_rand_pose(rng, 0, 0.2);
  ce_vec3 n = ce_v3(xb->R.m[0][2], xb->R.m[1][2], xb->R.m[2][2]);
  ce_vec3 c = ce_axpy(xb->p, 0.05 + 0.02 * ce_test_rand(rng), n);
  *xa = ce_pose_from_quat(ce_test_rand_quat(rng), c);
}
static void pose_on_halfspace_a(uint64_t *rng, ce_pose *xa, ce_pose *xb) { pose_on_halfspace_b(rng, xb, xa); }

static double wave(double x, double y) { return 0.03 * sin(3 * x) * cos(2 * y); }
/* A (radius 0.1) over the wavy terrain B, 0.01 .. 0.03 into it */
static void pose_on_terrain(uint64_t *rng, ce_pose *xa, ce_pose *xb) {
  *xb = ce_pose_identity();
  double x = -0.5 + ce_test_rand(rng), y = -0.5 + ce_test_rand(rng);
  ce_vec3 c = ce_v3(x, y, wave(x, y) + 0.1 - 0.01 - 0.02 * ce_test_rand(rng));
  *xa = ce_pose_from_quat(ce_test_rand_quat(rng), c);
}

static ce_geometry *shape(ce_shape_type t, ce_compliance c, double hint) {
  ce_vec3 size = t == CE_SHAPE_ELLIPSOID ? ce_v3(0.1, 0.09, 0.08) : ce_v3(0.2, 0.18, 0.16);
  ce_geometry *g = ce_test_shape(t, c, 0.1, size, hint);
  cr_assert(g);
  return g;
}

static ce_geometry *halfspace(ce_compliance c) {
  ce_props pr = ce_test_props(c, c == CE_COMPLIANT ? 2e6 : 0, 0.05);
  pr.slab_thickness = 0.5;
  ce_shape s = {.type = CE_SHAPE_HALFSPACE};
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

static ce_geometry *wavy_terrain(void) {
  const int n = 41;
  const double d = 0.05;
  double *z = malloc(sizeof(double) * n * n);
  cr_assert(z);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) z[j * n + i] = wave(-1 + i * d, -1 + j * d);
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.05);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_heightfield(z, n, n, d, d, ce_v3(-1, -1, 0), 1, &pr, &g, &err), CE_OK, "%s",
               err.message);
  free(z);
  return g;
}

static ce_body body(const ce_geometry *g, ce_pose X, uint64_t *rng, int moving) {
  ce_body b;
  memset(&b, 0, sizeof b);
  b.geometry = g;
  b.X_WB = X;
  b.material.dissipation = moving ? 1.0 : 0;
  b.material.friction = moving ? 0.5 : 0;
  if (moving) {
    b.V_WB.w = ce_scale(rand_dir(rng), 2.0 * ce_test_rand(rng));
    b.V_WB.v = ce_scale(rand_dir(rng), 0.2 * ce_test_rand(rng));
  }
  return b;
}

/* The largest relative mismatch, over the pair, between the reduced
 * contacts' wrench about A's origin and wrench_a: |dF| / |F| and
 * |dM| / (|M| + |F| L), L = 0.1 m the bodies' size. Also checks the count
 * per patch (<= K, patches in order, at least one point each). */
static double worst_pull; /* the most negative point normal force over |F| seen */
static double wrench_mismatch(const ce_result *r, const ce_body *a, int32_t K) {
  ce_vec3 F = ce_v3(0, 0, 0), M = ce_v3(0, 0, 0);
  int32_t last = -1, run = 0;
  for (int32_t i = 0; i < r->nreduced; i++) {
    const ce_reduced_contact *c = &r->reduced[i];
    cr_assert(c->patch == last || c->patch == last + 1, "patch %d after %d", c->patch, last);
    run = c->patch == last ? run + 1 : 1;
    last = c->patch;
    cr_assert_leq(run, K, "patch %d has more than %d points", c->patch, K);
    cr_assert(ce_test_close(ce_norm(c->normal), 1, 1e-12, 0));
    F = ce_add(F, c->force);
    M = ce_add(M, ce_add(ce_cross(ce_sub(c->position, a->X_WB.p), c->force), c->couple));
  }
  if (r->status == CE_CONTACT_SURFACE) cr_assert_eq(last + 1, r->npatches);
  double fs = ce_norm(r->wrench_a.force), ms = ce_norm(r->wrench_a.torque) + 0.1 * fs;
  if (!(fs > 0)) return 0;
  for (int32_t i = 0; i < r->nreduced; i++) {
    double fn = ce_dot(r->reduced[i].force, r->reduced[i].normal);
    worst_pull = fmin(worst_pull, fn / fs);
    /* the moment correction may tilt a light point's force slightly
     * against its normal, never by much */
    cr_assert_geq(fn, -0.01 * fs, "point %d pulls: fn %.3g of |F| %.3g", i, fn, fs);
  }
  double ef = ce_norm(ce_sub(F, r->wrench_a.force)) / fs, em = ce_norm(ce_sub(M, r->wrench_a.torque)) / ms;
  return fmax(ef, em);
}

typedef void (*pose_fn)(uint64_t *, ce_pose *, ce_pose *);

/* nposes random poses (half of them moving: dissipation and friction) for
 * K = 1, 4, 8; returns the worst mismatch; asserts it <= 1e-9 and that
 * enough poses touch. */
static double run_pair(const char *what, ce_geometry *ga, ce_geometry *gb, pose_fn pose, ce_contact_model model,
                       int nposes, uint64_t seed) {
  static const int32_t Ks[] = {1, 4, 8};
  uint64_t rng = seed;
  double worst = 0;
  int touching = 0;
  worst_pull = 0;
  for (int i = 0; i < nposes; i++) {
    ce_pose xa, xb;
    pose(&rng, &xa, &xb);
    ce_body a = body(ga, xa, &rng, i & 1), b = body(gb, xb, &rng, i & 1);
    for (int k = 0; k < 3; k++) {
      ce_options o;
      ce_options_default(&o);
      o.model = model;
      o.reduced_contacts = Ks[k];
      ce_result r;
      ce_error err;
      ce_arena_reset(arena);
      cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s: %s", what, err.message);
      if (r.status != CE_CONTACT_SURFACE && r.status != CE_CONTACT_POINT) continue;
      cr_assert_gt(r.nreduced, 0, "%s: no reduced contacts", what);
      touching += k == 0;
      double e = wrench_mismatch(&r, &a, Ks[k]);
      cr_assert_leq(e, 1e-9, "%s pose %d K %d: wrench mismatch %.3g", what, i, Ks[k], e);
      worst = fmax(worst, e);
    }
  }
  cr_assert_geq(touching, nposes / 2, "%s: only %d of %d poses touch", what, touching, nposes);
  cr_log_info("%s: worst wrench mismatch %.3g over %d touching poses; least point normal force %.3g of |F|", what,
              worst, touching, worst_pull);
  return worst;
}

Test(reduce, wrench_matches_every_pair_type) {
  ce_geometry *cs = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.03), *cb = shape(CE_SHAPE_BOX, CE_COMPLIANT, 0.05);
  ce_geometry *ce = shape(CE_SHAPE_ELLIPSOID, CE_COMPLIANT, 0.04), *rb = shape(CE_SHAPE_BOX, CE_RIGID, 0.05);
  ce_geometry *rs = shape(CE_SHAPE_SPHERE, CE_RIGID, 0.04), *rc = shape(CE_SHAPE_CYLINDER, CE_RIGID, 0.04);
  ce_geometry *hr = halfspace(CE_RIGID), *hc = halfspace(CE_COMPLIANT), *terrain = wavy_terrain();
  const ce_contact_model H = CE_MODEL_HYDROELASTIC_WITH_FALLBACK;
  run_pair("compliant-compliant", cs, cb, pose_pair, H, 24, 11);
  run_pair("compliant-compliant ellipsoid", ce, cs, pose_pair, H, 16, 12);
  run_pair("compliant-rigid", cs, rb, pose_pair, H, 24, 13);
  run_pair("rigid-compliant", rc, ce, pose_pair, H, 16, 14);
  run_pair("compliant-halfspace", cb, hr, pose_on_halfspace_b, H, 16, 15);
  run_pair("halfspace-compliant", hc, cs, pose_on_halfspace_a, H, 16, 16);
  run_pair("compliant halfspace-rigid", hc, rs, pose_on_halfspace_a, H, 16, 17);
  run_pair("compliant-terrain", cs, terrain, pose_on_terrain, H, 16, 18);
  run_pair("rigid-rigid point", rs, rb, pose_pair, H, 16, 19);
  run_pair("point model compliant", cs, cb, pose_pair, CE_MODEL_POINT, 16, 20);
  run_pair("rigid-terrain point", rs, terrain, pose_on_terrain, H, 16, 21);
  ce_geometry *gs[] = {cs, cb, ce, rb, rs, rc, hr, hc, terrain};
  for (size_t i = 0; i < sizeof gs / sizeof *gs; i++) ce_geometry_free(gs[i]);
}

/* Andrew's monotone chain: the convex hull of n 2-D points (xy[2 i],
 * xy[2 i + 1]) counter-clockwise into h; returns its size. */
static int cmp2(const void *p, const void *q) {
  const double *a = p, *b = q;
  return a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : (a[1] < b[1] ? -1 : a[1] > b[1]);
}
static double turn(const double *o, const double *a, const double *b) {
  return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}
static int hull2(double *xy, int n, double *h) {
  qsort(xy, (size_t)n, 2 * sizeof(double), cmp2);
  int k = 0;
  for (int i = 0; i < n; i++) {
    while (k >= 2 && turn(h + 2 * (k - 2), h + 2 * (k - 1), xy + 2 * i) <= 0) k--;
    memcpy(h + 2 * k++, xy + 2 * i, 2 * sizeof(double));
  }
  for (int i = n - 2, t = k + 1; i >= 0; i--) {
    while (k >= t && turn(h + 2 * (k - 2), h + 2 * (k - 1), xy + 2 * i) <= 0) k--;
    memcpy(h + 2 * k++, xy + 2 * i, 2 * sizeof(double));
  }
  return k - 1;
}

/* Every point of patch p within the convex hull of the patch's vertices
 * projected on the plane through its centre of pressure normal to its net
 * normal force (to 1e-9 of the patch's size), and between the vertices'
 * extremes along that normal. Returns the number of points of the patch. */
static int check_in_hull(const ce_result *r, int32_t p) {
  const ce_surface *s = &r->surface;
  ce_vec3 N = ce_normalize(r->patches[p].normal_force), x0 = r->patches[p].point;
  ce_vec3 u = fabs(N.x) < 0.9 ? ce_normalize(ce_cross(N, ce_v3(1, 0, 0))) : ce_normalize(ce_cross(N, ce_v3(0, 1, 0)));
  ce_vec3 v = ce_cross(N, u);
  int n = 0;
  for (int32_t f = 0; f < s->nf; f++)
    if (s->patch[f] == p) n += s->face_offsets[f + 1] - s->face_offsets[f];
  double *xy = malloc(sizeof(double) * 2 * (size_t)n), *h = malloc(sizeof(double) * 2 * (size_t)(n + 1));
  cr_assert(xy && h);
  double lo = INFINITY, hi = -INFINITY, size = 0;
  int m = 0;
  for (int32_t f = 0; f < s->nf; f++) {
    if (s->patch[f] != p) continue;
    for (int32_t i = s->face_offsets[f]; i < s->face_offsets[f + 1]; i++) {
      ce_vec3 d = ce_sub(s->vertices[s->face_vertices[i]], x0);
      xy[2 * m] = ce_dot(d, u);
      xy[2 * m + 1] = ce_dot(d, v);
      lo = fmin(lo, ce_dot(d, N));
      hi = fmax(hi, ce_dot(d, N));
      size = fmax(size, ce_norm(d));
      m++;
    }
  }
  int nh = hull2(xy, m, h);
  const double tol = 1e-9 * size;
  int count = 0;
  for (int32_t i = 0; i < r->nreduced; i++) {
    if (r->reduced[i].patch != p) continue;
    count++;
    ce_vec3 d = ce_sub(r->reduced[i].position, x0);
    double q[2] = {ce_dot(d, u), ce_dot(d, v)}, z = ce_dot(d, N);
    cr_assert(z >= lo - tol && z <= hi + tol, "point %d off the patch along its normal (%g not in [%g, %g])", i, z,
              lo, hi);
    for (int e = 0; e < nh; e++) {
      const double *a = h + 2 * e, *b = h + 2 * ((e + 1) % nh);
      double t = turn(a, b, q) / fmax(hypot(b[0] - a[0], b[1] - a[1]), 1e-300);
      cr_assert_geq(t, -tol, "point %d of patch %d outside the patch's hull by %g m", i, p, -t);
    }
  }
  free(xy);
  free(h);
  return count;
}

Test(reduce, points_within_the_patch_and_spread) {
  ce_geometry *cs = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.02), *hr = halfspace(CE_RIGID);
  ce_geometry *cb = shape(CE_SHAPE_BOX, CE_COMPLIANT, 0.05), *rc = shape(CE_SHAPE_CYLINDER, CE_RIGID, 0.03);
  uint64_t rng = 77;
  for (int i = 0; i < 20; i++) {
    ce_pose xa, xb;
    int sphere = i < 10;
    if (sphere) pose_on_halfspace_b(&rng, &xa, &xb);
    else pose_pair(&rng, &xa, &xb);
    ce_body a = body(sphere ? cs : cb, xa, &rng, 0), b = body(sphere ? hr : rc, xb, &rng, 0);
    for (int32_t K = 1; K <= 8; K++) {
      ce_options o;
      ce_options_default(&o);
      o.want_surface = 1;
      o.reduced_contacts = K;
      ce_result r;
      ce_error err;
      ce_arena_reset(arena);
      cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
      if (r.status != CE_CONTACT_SURFACE) continue;
      for (int32_t p = 0; p < r.npatches; p++) {
        int n = check_in_hull(&r, p);
        cr_assert(n >= 1 && n <= K);
        /* K = 1: the equivalent contact point */
        if (K == 1) cr_assert_eq(memcmp(&r.reduced[p].position, &r.patches[p].point, sizeof(ce_vec3)), 0);
      }
      /* a sphere's disc of many faces gets K distinct points that reach
       * out towards its rim in several directions */
      if (sphere && r.surface.nf > 50) {
        cr_assert_eq(r.nreduced, K, "K %d: %d points", K, r.nreduced);
        double rim = sqrt(r.area / M_PI), far = 0;
        for (int32_t j = 1; j < r.nreduced; j++)
          far = fmax(far, ce_norm(ce_sub(r.reduced[j].position, r.reduced[0].position)));
        if (K > 1) cr_assert_gt(far, 0.6 * rim, "K %d: points span %g of a disc of radius %g", K, far, rim);
      }
    }
  }
  ce_geometry_free(cs);
  ce_geometry_free(hr);
  ce_geometry_free(cb);
  ce_geometry_free(rc);
}

/* Two patches (a rigid mesh of two separate tetrahedra pressed into a
 * compliant box): each patch's points carry that patch's normal force. */
Test(reduce, one_set_per_patch) {
  double v[24];
  int32_t t[8][3];
  static const double tip[4][3] = {{0, 0, -1}, {1, 0, 0.2}, {-0.5, 0.87, 0.2}, {-0.5, -0.87, 0.2}};
  static const int32_t faces[4][3] = {{0, 2, 1}, {0, 3, 2}, {0, 1, 3}, {1, 2, 3}};
  for (int k = 0; k < 2; k++) {
    for (int i = 0; i < 4; i++)
      for (int c = 0; c < 3; c++) v[3 * (4 * k + i) + c] = 0.03 * tip[i][c] + (c == 0 ? (k ? 0.05 : -0.05) : 0);
    for (int f = 0; f < 4; f++)
      for (int c = 0; c < 3; c++) t[4 * k + f][c] = 4 * k + faces[f][c];
  }
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.05);
  ce_geometry *rm = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh(v, 8, &t[0][0], 8, 1, &pr, &rm, &err), CE_OK, "%s", err.message);
  ce_geometry *cb = shape(CE_SHAPE_BOX, CE_COMPLIANT, 0.02);
  ce_body a = ce_test_body(rm, ce_quat_identity(), ce_v3(0, 0, 0.08 + 0.02));
  ce_body b = ce_test_body(cb, ce_quat_identity(), ce_v3(0, 0, 0));
  for (int32_t K = 1; K <= 8; K += 3) {
    ce_options o;
    ce_options_default(&o);
    o.reduced_contacts = K;
    ce_result r;
    ce_arena_reset(arena);
    cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
    cr_assert_eq(r.npatches, 2, "%d patches", r.npatches);
    for (int32_t p = 0; p < 2; p++) {
      ce_vec3 F = ce_v3(0, 0, 0);
      for (int32_t i = 0; i < r.nreduced; i++)
        if (r.reduced[i].patch == p) F = ce_add(F, r.reduced[i].force);
      double e = ce_norm(ce_sub(F, r.patches[p].normal_force)) / r.patches[p].normal_force_magnitude;
      cr_assert_leq(e, 1e-12, "patch %d: force off by %g", p, e);
    }
    cr_assert_leq(wrench_mismatch(&r, &a, K), 1e-9);
  }
  ce_geometry_free(rm);
  ce_geometry_free(cb);
}

/* Stiffness and separation: the points' k sum to the faces' g A
 * (Masterjohn et al. 2022), and k (-phi) sums to the elastic normal force;
 * K = 1 on a flat patch at rest carries no couple; with spin it carries
 * the torsional moment about the normal. */
Test(reduce, stiffness_separation_and_couple) {
  ce_geometry *cs = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.02), *hr = halfspace(CE_RIGID);
  ce_body a = ce_test_body(cs, ce_quat_identity(), ce_v3(0, 0, 0.09));
  ce_body b = ce_test_body(hr, ce_quat_identity(), ce_v3(0, 0, 0));
  for (int32_t K = 1; K <= 8; K++) {
    ce_options o;
    ce_options_default(&o);
    o.reduced_contacts = K;
    o.want_face_contacts = 1;
    ce_result r;
    ce_error err;
    ce_arena_reset(arena);
    cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
    double k = 0, kf = 0, fe = 0;
    for (int32_t i = 0; i < r.nreduced; i++) {
      k += r.reduced[i].stiffness;
      fe += r.reduced[i].stiffness * -r.reduced[i].separation;
      cr_assert_leq(r.reduced[i].separation, 0);
      cr_assert_leq(ce_norm(r.reduced[i].couple), 1e-12 * r.total.normal_force_magnitude);
    }
    for (int32_t i = 0; i < r.nface_contacts; i++) kf += r.face_contacts[i].stiffness;
    cr_assert(ce_test_close(k, kf, 1e-12, 0), "K %d: k %.17g vs faces %.17g", K, k, kf);
    cr_assert(ce_test_close(fe, r.wrench_a.force.z, 1e-12, 0), "K %d: k phi %.17g vs %.17g", K, fe,
              r.wrench_a.force.z);
  }
  /* spinning about the normal: K = 1's couple is the torsional friction */
  a.V_WB.w = ce_v3(0, 0, 3);
  a.material.friction = b.material.friction = 0.5;
  ce_options o;
  ce_options_default(&o);
  o.reduced_contacts = 1;
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  cr_assert_eq(r.nreduced, 1);
  ce_vec3 cpl = r.reduced[0].couple;
  cr_assert_lt(cpl.z, 0, "the friction opposes the spin: couple z %g", cpl.z);
  cr_assert_leq(hypot(cpl.x, cpl.y), 1e-9 * fabs(cpl.z));
  cr_assert_leq(wrench_mismatch(&r, &a, 1), 1e-9);
  ce_geometry_free(cs);
  ce_geometry_free(hr);
}

/* A point contact: one point, at the force's point, k depth = fn. */
Test(reduce, point_contact_is_one_point) {
  ce_geometry *rs = shape(CE_SHAPE_SPHERE, CE_RIGID, 0.04), *rb = shape(CE_SHAPE_BOX, CE_RIGID, 0.05);
  ce_body a = ce_test_body(rs, ce_quat_identity(), ce_v3(0, 0, 0.175));
  ce_body b = ce_test_body(rb, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_options o;
  ce_options_default(&o);
  o.reduced_contacts = 4;
  ce_result r;
  ce_error err;
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert_eq(r.nreduced, 1);
  const ce_reduced_contact *c = &r.reduced[0];
  cr_assert(ce_test_close(c->stiffness * -c->separation, r.point.normal_force, 1e-12, 0));
  cr_assert(ce_test_close(c->separation, -r.point.depth, 1e-15, 0));
  cr_assert_leq(wrench_mismatch(&r, &a, 1), 1e-12);
  ce_geometry_free(rs);
  ce_geometry_free(rb);
}

Test(reduce, refuses_bad_k_and_repeats_exactly) {
  ce_geometry *cs = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.03), *cb = shape(CE_SHAPE_BOX, CE_COMPLIANT, 0.05);
  ce_body a = ce_test_body(cs, ce_quat_from_axis_angle(ce_v3(1, 2, 3), 0.7), ce_v3(0.01, 0.02, 0.165));
  ce_body b = ce_test_body(cb, ce_quat_identity(), ce_v3(0, 0, 0));
  a.V_WB.w = ce_v3(1, -2, 0.5);
  a.material.friction = 0.4;
  a.material.dissipation = 2;
  ce_options o;
  ce_options_default(&o);
  ce_result r;
  ce_error err;
  o.reduced_contacts = CE_REDUCE_MAX_POINTS + 1;
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "reduced contacts"), "%s", err.message);
  o.reduced_contacts = -1;
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_EINVAL);
  o.reduced_contacts = 6;
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  cr_assert_gt(r.nreduced, 1);
  size_t bytes = (size_t)r.nreduced * sizeof *r.reduced;
  ce_reduced_contact *first = malloc(bytes);
  cr_assert(first);
  memcpy(first, r.reduced, bytes);
  ce_wrench w = r.wrench_a;
  /* the wrench does not change with reduction on; the points repeat bit for bit */
  ce_options plain;
  ce_options_default(&plain);
  ce_result r0;
  cr_assert_eq(ce_contact(&a, &b, &plain, arena, &r0, &err), CE_OK);
  cr_assert_eq(memcmp(&r0.wrench_a, &w, sizeof w), 0);
  cr_assert_eq(r0.nreduced, 0);
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK);
  cr_assert_eq(memcmp(first, r.reduced, bytes), 0);
  free(first);
  ce_geometry_free(cs);
  ce_geometry_free(cb);
}

/* Continuity: a sphere (hint h = 0.02) rolling on a plane about its
 * centre in steps of 1e-3 rad, so that its tets cross the plane and the
 * surface's faces change. The net wrench changes smoothly; a support
 * point jumps between face centroids along the patch's rim, by less than
 * 2.5 h (measured: 1.6 h). */
Test(reduce, points_jump_by_at_most_a_face) {
  const double h = 0.02;
  ce_geometry *cs = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, h), *hr = halfspace(CE_RIGID);
  ce_body b = ce_test_body(hr, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_reduced_contact prev[8];
  ce_vec3 fprev = ce_v3(0, 0, 0);
  int32_t nprev = 0;
  double jump = 0, fjump = 0, wjump = 0;
  for (int i = 0; i <= 200; i++) {
    ce_body a = ce_test_body(cs, ce_quat_from_axis_angle(ce_v3(0.3, 1, 0.2), 1e-3 * i), ce_v3(0, 0, 0.085));
    ce_options o;
    ce_options_default(&o);
    o.reduced_contacts = 8;
    ce_result r;
    ce_error err;
    ce_arena_reset(arena);
    cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
    cr_assert_eq(r.npatches, 1);
    double F = ce_norm(r.wrench_a.force);
    if (i > 0) wjump = fmax(wjump, ce_norm(ce_sub(r.wrench_a.force, fprev)) / F);
    /* each point against the nearest point of the previous step, both ways */
    for (int pass = 0; i > 0 && pass < 2; pass++) {
      const ce_reduced_contact *x = pass ? prev : r.reduced, *y = pass ? r.reduced : prev;
      int32_t nx = pass ? nprev : r.nreduced, ny = pass ? r.nreduced : nprev;
      for (int32_t j = 0; j < nx; j++) {
        double best = INFINITY, df = 0;
        for (int32_t k = 0; k < ny; k++) {
          double dk = ce_norm(ce_sub(x[j].position, y[k].position));
          if (dk < best) best = dk, df = ce_norm(ce_sub(x[j].force, y[k].force)) / F;
        }
        jump = fmax(jump, best);
        fjump = fmax(fjump, df);
      }
    }
    nprev = r.nreduced;
    memcpy(prev, r.reduced, (size_t)r.nreduced * sizeof *prev);
    fprev = r.wrench_a.force;
  }
  cr_log_info("rolling 1e-3 rad steps: net force changes by %.3g of itself, points jump by up to %.3g m (%.2f h), "
              "the nearest point's force by %.3g of the net",
              wjump, jump, jump / h, fjump);
  cr_assert_lt(wjump, 1e-3);
  cr_assert_lt(jump, 2.5 * h);
  ce_geometry_free(cs);
  ce_geometry_free(hr);
}
