/* test_physics.c — end-to-end physics through ce_contact() with real
 * primitives: convergence to the analytic sphere-on-plane force, half space
 * vs box, Newton's third law and frame invariance, continuity along long
 * paths (with a derived Lipschitz bound), representation independence, a
 * four-legged table on a compliant half space, and Hunt–Crossley/friction.
 *
 * These tests exercise every stage (primitives, geometry, BVH, intersectors,
 * builder, wrench, patches); a failure names the stage where it can. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

/* ---- helpers ------------------------------------------------------------ */

static ce_geometry *shape_geom(ce_shape_type type, double radius, double length, ce_vec3 size,
                               ce_compliance c, double E, double hint, double d, double mu) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = type;
  s.radius = radius;
  s.length = length;
  s.size = size;
  ce_props pr = ce_test_props(c, c == CE_COMPLIANT ? E : 0, hint);
  pr.material.dissipation = d;
  pr.material.friction = mu;
  ce_geometry *g = NULL;
  ce_error err;
  memset(&err, 0, sizeof err);
  ce_errno e = ce_geometry_from_shape(&s, &pr, &g, &err);
  cr_assert_eq(e, CE_OK, "shape %d (compliance %d): %s: %s", (int)type, (int)c, ce_errname(e), err.message);
  cr_assert(g);
  return g;
}

static ce_geometry *sphere(double R, ce_compliance c, double E, double hint) {
  return shape_geom(CE_SHAPE_SPHERE, R, 0, ce_v3(0, 0, 0), c, E, hint, 0, 0);
}

static ce_geometry *halfspace(ce_compliance c, double E, double slab) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_HALFSPACE;
  ce_props pr = ce_test_props(c, c == CE_COMPLIANT ? E : 0, 1.0);
  pr.slab_thickness = slab;
  ce_geometry *g = NULL;
  ce_error err;
  memset(&err, 0, sizeof err);
  ce_errno e = ce_geometry_from_shape(&s, &pr, &g, &err);
  cr_assert_eq(e, CE_OK, "half space: %s: %s", ce_errname(e), err.message);
  return g;
}

static void contact(const ce_body *a, const ce_body *b, const ce_options *o, ce_arena *ar, ce_result *r) {
  ce_error err;
  memset(&err, 0, sizeof err);
  ce_errno e = ce_contact(a, b, o, ar, r, &err);
  cr_assert_eq(e, CE_OK, "ce_contact: %s: %s", ce_errname(e), err.message);
}

static ce_body body(const ce_geometry *g, ce_pose X) {
  ce_body b;
  memset(&b, 0, sizeof b);
  b.geometry = g;
  b.X_WB = X;
  b.material = g->material;
  return b;
}

static ce_pose pose_t(double x, double y, double z) {
  ce_pose X = ce_pose_identity();
  X.p = ce_v3(x, y, z);
  return X;
}

static double wnorm(ce_wrench w, double L) { return ce_norm(w.force) * L + ce_norm(w.torque); }

/* ---- a. sphere on a rigid half space vs the closed form ------------------ */

/* Analytic force. The sphere's field is p = E (1 - r/R) (r = distance from
 * the centre). With the centre at height h = R - d above the plane z = 0 the
 * contact surface is the disc rho <= a, a^2 = R^2 - h^2, where
 * r = sqrt(rho^2 + h^2), so
 *   F = Int_0^a E (1 - sqrt(rho^2 + h^2)/R) 2 pi rho drho
 *     = pi E Int_{h^2}^{R^2} (1 - sqrt(u)/R) du                 (u = rho^2 + h^2)
 *     = pi E [ (R^2 - h^2) - (2/(3R)) (R^3 - h^3) ]
 * and with R^2 - h^2 = 2Rd - d^2, R^3 - h^3 = 3R^2 d - 3R d^2 + d^3:
 *   F = pi E [ 2Rd - d^2 - 2Rd + 2 d^2 - (2/3) d^3/R ] = pi E d^2 (1 - 2d/(3R)). */
static double sphere_plane_force(double E, double R, double d) {
  return M_PI * E * d * d * (1 - 2 * d / (3 * R));
}

#define NHINT 3
static const double HINT_DIV[NHINT] = {4, 8, 16};

Test(physics, sphere_on_halfspace_converges_to_closed_form, .timeout = 600) {
  const double R = 0.05, E = 1e5;
  const double depth[4] = {0.1, 0.2, 0.4, 0.6};
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *hs = halfspace(CE_RIGID, 0, 0);
  double err[NHINT][4];
  for (int h = 0; h < NHINT; h++) {
    ce_geometry *sp = sphere(R, CE_COMPLIANT, E, R / HINT_DIV[h]);
    for (int k = 0; k < 4; k++) {
      double d = depth[k] * R;
      ce_body A = body(sp, pose_t(0, 0, R - d)), B = body(hs, ce_pose_identity());
      ce_result r;
      contact(&A, &B, NULL, ar, &r);
      cr_assert_eq(r.status, CE_CONTACT_SURFACE, "hint R/%g depth %gR: no contact", HINT_DIV[h], depth[k]);
      double F = sphere_plane_force(E, R, d);
      /* force on A is +z; no tangential force, no torque about the centre
       * beyond rounding and mesh asymmetry */
      cr_assert(r.wrench_a.force.z > 0);
      err[h][k] = fabs(r.wrench_a.force.z - F) / F;
      cr_log_info("sphere/halfspace hint R/%g depth %.1fR: F %.6g analytic %.6g rel.err %.3g", HINT_DIV[h],
                  depth[k], r.wrench_a.force.z, F, err[h][k]);
      /* Newton: equal and opposite force on the half space */
      cr_assert(ce_norm(ce_add(r.wrench_a.force, r.wrench_b.force)) <= 1e-12 * F);
      ce_arena_reset(ar);
    }
    ce_geometry_free(sp);
  }
  for (int k = 0; k < 4; k++) {
    for (int h = 1; h < NHINT; h++)
      cr_assert(err[h][k] < err[h - 1][k], "depth %.1fR: error does not decrease from hint R/%g (%.3g) to R/%g (%.3g)",
                depth[k], HINT_DIV[h - 1], err[h - 1][k], HINT_DIV[h], err[h][k]);
    cr_assert(err[NHINT - 1][k] < 0.02, "depth %.1fR: error %.3g at the finest hint", depth[k], err[NHINT - 1][k]);
  }
  ce_geometry_free(hs);
  ce_arena_destroy(ar);
}

/* ---- b. half space vs the top face of a big rigid box -------------------- */

/* The box's top face is the plane z = 0 over 1 m x 1 m, far wider than the
 * contact disc: the surface is the same plane section of the same tets (cut
 * differently by the face's triangles), the pressure is linear on each piece
 * and the quadrature exact, so the wrench agrees to rounding. */
Test(physics, sphere_on_box_top_equals_halfspace) {
  const double R = 0.05, E = 1e5;
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *hs = halfspace(CE_RIGID, 0, 0);
  ce_geometry *box = shape_geom(CE_SHAPE_BOX, 0, 0, ce_v3(1, 1, 1), CE_RIGID, 0, 0.5, 0, 0);
  ce_geometry *sp = sphere(R, CE_COMPLIANT, E, R / 4);
  uint64_t st = 17;
  for (int k = 0; k < 6; k++) {
    double d = (0.05 + 0.1 * k) * R;
    ce_pose X = ce_pose_from_quat(ce_test_rand_quat(&st), ce_v3(0.01 * k, -0.02, R - d));
    ce_body A = body(sp, X), Bh = body(hs, ce_pose_identity()), Bb = body(box, pose_t(0, 0, -0.5));
    ce_result rh, rb;
    contact(&A, &Bh, NULL, ar, &rh);
    contact(&A, &Bb, NULL, ar, &rb);
    double F = rh.wrench_a.force.z;
    cr_assert(F > 0 && rb.status == CE_CONTACT_SURFACE);
    cr_assert(ce_norm(ce_sub(rh.wrench_a.force, rb.wrench_a.force)) <= 1e-9 * F,
              "depth %.2fR: half space %.17g box %.17g", d / R, F, rb.wrench_a.force.z);
    cr_assert(ce_norm(ce_sub(rh.wrench_a.torque, rb.wrench_a.torque)) <= 1e-9 * F * R);
    cr_assert(fabs(rh.area - rb.area) <= 1e-9 * rh.area);
    ce_arena_reset(ar);
  }
  ce_geometry_free(sp);
  ce_geometry_free(box);
  ce_geometry_free(hs);
  ce_arena_destroy(ar);
}

/* A compliant box (half sizes b, b, c) pressed d into the top of a wider
 * one (a, a, c), same modulus E, footprint inside the top face by more
 * than d: both fields are exact (p = E dist / c in the box meshes), the
 * lower box's field in the overlap is its top face's, E (c - z) / c, and
 * the upper box's is its bottom face's or, within d/2 of its sides, its
 * side faces'. So the surface is the mid-plane of the overlap, pressure
 * E h / c (h = d / 2), bent down at the upper box's rim onto 45-degree
 * strips where E (b - |x|) / c takes over. Vertically that is
 * (E / c) times the integral of min(h, b - |x|, b - |y|) over the
 * footprint: F = (4 E / c) (b^2 h - b h^2 + h^3 / 3), at any resolution,
 * offset or turn of the upper box; no sideways force. */
Test(physics, box_pressed_into_a_wider_box_matches_the_closed_form) {
  const double E = 1e6, a = 0.15, b = 0.1, c = 0.05;
  ce_arena *ar = ce_arena_create(1 << 20);
  const double hints[2] = {0.05, 0.02};
  for (int hi = 0; hi < 2; hi++) {
    ce_geometry *lower = shape_geom(CE_SHAPE_BOX, 0, 0, ce_v3(2 * a, 2 * a, 2 * c), CE_COMPLIANT, E, hints[hi], 0, 0);
    ce_geometry *upper = shape_geom(CE_SHAPE_BOX, 0, 0, ce_v3(2 * b, 2 * b, 2 * c), CE_COMPLIANT, E, hints[hi], 0, 0);
    const double ds[3] = {0.002, 0.01, 0.04};
    for (int k = 0; k < 3; k++) {
      const double d = ds[k], h = d / 2, F = 4 * E / c * (b * b * h - b * h * h + h * h * h / 3);
      for (int pose = 0; pose < 3; pose++) {
        /* centred; moved (6, -4) mm; and, for d <= 1 cm, also turned 10 degrees */
        if (pose == 2 && d > 0.01) continue;
        ce_pose X = pose_t(pose ? 0.006 : 0, pose ? -0.004 : 0, 2 * c - d);
        if (pose == 2) X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 0, 1), 10 * M_PI / 180), X.p);
        ce_body A = body(upper, X), B = body(lower, ce_pose_identity());
        ce_result r;
        contact(&A, &B, NULL, ar, &r);
        cr_expect(fabs(r.wrench_a.force.z - F) <= 1e-9 * F, "hint %g d %g pose %d: fz %.17g, closed form %.17g",
                  hints[hi], d, pose, r.wrench_a.force.z, F);
        cr_expect(hypot(r.wrench_a.force.x, r.wrench_a.force.y) <= 1e-9 * F,
                  "hint %g d %g pose %d: sideways force (%g, %g) N", hints[hi], d, pose, r.wrench_a.force.x,
                  r.wrench_a.force.y);
        ce_arena_reset(ar);
      }
    }
    ce_geometry_free(lower);
    ce_geometry_free(upper);
  }
  ce_arena_destroy(ar);
}

/* ---- c. Newton's third law and frame invariance -------------------------- */

typedef struct pair_spec {
  const char *name;
  ce_shape_type ta, tb;
  double ra, la, rb, lb;
  ce_vec3 sa, sb;
  ce_compliance ca, cb;
  double ia, ib; /* inscribed radius: centre distances below ia + ib overlap */
} pair_spec;

static ce_vec3 rand_vec(uint64_t *st, double s) {
  return ce_v3(s * (2 * ce_test_rand(st) - 1), s * (2 * ce_test_rand(st) - 1), s * (2 * ce_test_rand(st) - 1));
}

static ce_wrench rot_wrench(const ce_mat3 *R, ce_wrench w) {
  ce_wrench r = {ce_mat3_mul_vec(R, w.torque), ce_mat3_mul_vec(R, w.force)};
  return r;
}

Test(physics, third_law_and_frame_invariance, .timeout = 600) {
  const pair_spec pairs[] = {
      {"sphere(C)-sphere(C)", CE_SHAPE_SPHERE, CE_SHAPE_SPHERE, 0.05, 0, 0.04, 0, {0, 0, 0}, {0, 0, 0},
       CE_COMPLIANT, CE_COMPLIANT, 0.05, 0.04},
      {"box(R)-sphere(C)", CE_SHAPE_BOX, CE_SHAPE_SPHERE, 0, 0, 0.05, 0, {0.08, 0.06, 0.1}, {0, 0, 0}, CE_RIGID,
       CE_COMPLIANT, 0.03, 0.05},
      {"capsule(C)-ellipsoid(C)", CE_SHAPE_CAPSULE, CE_SHAPE_ELLIPSOID, 0.03, 0.06, 0, 0, {0, 0, 0},
       {0.05, 0.04, 0.03}, CE_COMPLIANT, CE_COMPLIANT, 0.03, 0.03},
      {"cylinder(C)-box(R)", CE_SHAPE_CYLINDER, CE_SHAPE_BOX, 0.04, 0.08, 0, 0, {0, 0, 0}, {0.08, 0.06, 0.1},
       CE_COMPLIANT, CE_RIGID, 0.04, 0.03},
      {"ellipsoid(R)-capsule(C)", CE_SHAPE_ELLIPSOID, CE_SHAPE_CAPSULE, 0, 0, 0.03, 0.06, {0.05, 0.04, 0.03},
       {0, 0, 0}, CE_RIGID, CE_COMPLIANT, 0.03, 0.03},
  };
  const int npairs = (int)(sizeof pairs / sizeof pairs[0]);
  ce_arena *ar = ce_arena_create(1 << 20);
  uint64_t st = 2024;
  for (int k = 0; k < npairs; k++) {
    const pair_spec *ps = &pairs[k];
    ce_geometry *ga = shape_geom(ps->ta, ps->ra, ps->la, ps->sa, ps->ca, 1e5, 0.015, 0.4, 0.5);
    ce_geometry *gb = shape_geom(ps->tb, ps->rb, ps->lb, ps->sb, ps->cb, 3e5, 0.015, 0.2, 0.7);
    int contacts = 0;
    for (int t = 0; t < 12; t++) {
      double dist = (0.4 + 0.5 * ce_test_rand(&st)) * (ps->ia + ps->ib);
      ce_vec3 dir = ce_normalize(rand_vec(&st, 1));
      ce_vec3 pa = rand_vec(&st, 0.1);
      ce_body A = body(ga, ce_pose_from_quat(ce_test_rand_quat(&st), pa));
      ce_body B = body(gb, ce_pose_from_quat(ce_test_rand_quat(&st), ce_axpy(pa, dist, dir)));
      A.V_WB.w = rand_vec(&st, 2);
      A.V_WB.v = rand_vec(&st, 0.3);
      B.V_WB.w = rand_vec(&st, 2);
      B.V_WB.v = rand_vec(&st, 0.3);
      ce_result r;
      contact(&A, &B, NULL, ar, &r);
      cr_assert_eq(r.status, CE_CONTACT_SURFACE, "%s pose %d: overlapping bodies gave no contact surface", ps->name, t);
      contacts++;
      const double L = 0.1;
      double scale = wnorm(r.wrench_a, L) + wnorm(r.wrench_b, L);
      cr_assert(ce_norm(r.wrench_a.force) > 0, "%s pose %d: zero force", ps->name, t);
      /* Newton's third law about a common point Q */
      ce_vec3 Q = rand_vec(&st, 0.2);
      ce_wrench sum = ce_wrench_add(ce_wrench_shift(r.wrench_a, A.X_WB.p, Q), ce_wrench_shift(r.wrench_b, B.X_WB.p, Q));
      cr_assert(wnorm(sum, L) <= 1e-9 * scale, "%s pose %d: third law residual %.3g", ps->name, t,
                wnorm(sum, L) / scale);
      /* one random rigid motion applied to both bodies and their velocities */
      ce_pose M = ce_pose_from_quat(ce_test_rand_quat(&st), rand_vec(&st, 1.0));
      ce_body A2 = A, B2 = B;
      A2.X_WB = ce_pose_compose(&M, &A.X_WB);
      B2.X_WB = ce_pose_compose(&M, &B.X_WB);
      A2.V_WB.w = ce_mat3_mul_vec(&M.R, A.V_WB.w);
      A2.V_WB.v = ce_mat3_mul_vec(&M.R, A.V_WB.v);
      B2.V_WB.w = ce_mat3_mul_vec(&M.R, B.V_WB.w);
      B2.V_WB.v = ce_mat3_mul_vec(&M.R, B.V_WB.v);
      ce_result r2;
      contact(&A2, &B2, NULL, ar, &r2);
      ce_wrench ea = rot_wrench(&M.R, r.wrench_a), eb = rot_wrench(&M.R, r.wrench_b);
      double da = wnorm(ce_wrench_add(r2.wrench_a, ce_wrench_neg(ea)), L);
      double db = wnorm(ce_wrench_add(r2.wrench_b, ce_wrench_neg(eb)), L);
      cr_assert(da <= 1e-9 * scale && db <= 1e-9 * scale, "%s pose %d: frame dependence %.3g / %.3g", ps->name, t,
                da / scale, db / scale);
      cr_assert(fabs(r2.area - r.area) <= 1e-9 * r.area);
      ce_arena_reset(ar);
    }
    cr_assert(contacts == 12);
    ce_geometry_free(ga);
    ce_geometry_free(gb);
  }
  ce_arena_destroy(ar);
}

/* ---- d. continuity along long paths -------------------------------------- */

/* Lipschitz bound. Let A be compliant with the piecewise-linear field p_A
 * (zero on its boundary, extended by zero outside A: a continuous function
 * on all of space whose Lipschitz constant is L = max over tets of
 * |grad p_A|, since along any segment it is piecewise linear with slopes
 * bounded by L). Let B be rigid with a fixed surface S (the plane z = 0 of a
 * half space, or a triangle mesh). Without dissipation and friction the
 * contact force on A at pose X is
 *     F(X) = Int_S p_A(X^-1 x) n(x) dA(x)
 * (only the part of S inside A contributes; the normals n are fixed by B,
 * and the quadrature is exact for the pressure, linear on each polygon), so
 * between poses X1 and X2
 *     |F(X2) - F(X1)| <= Int_{S1 u S2} |p_A(X2^-1 x) - p_A(X1^-1 x)| dA
 *                     <= L * max_x |X2^-1 x - X1^-1 x| * (A1 + A2),
 * with S_i the contact surface at pose i and A_i its area. For x at distance
 * at most rho from A's origin (rho = largest |vertex| of A's mesh),
 *     |X2^-1 x - X1^-1 x| = |R2^T (x - p2) - R1^T (x - p1)|
 *                         <= |p2 - p1| + ||R2 - R1|| rho <= |dp| + |dtheta| rho
 * for rotations about a fixed axis (||R2 - R1|| = 2 sin(dtheta/2)). So
 *     |dF| <= L (|dp| + |dtheta| rho) (A1 + A2).
 * What it covers: rigid B, no dissipation or friction, and no face dropped by
 * the gradient-direction rule (asserted: faces_dropped == 0 along the path);
 * a missing or duplicated polygon anywhere would break it by orders of
 * magnitude. It does not cover compliant-compliant pairs (their surface
 * moves with both fields). */
typedef struct path_stats {
  double max_ratio;  /* largest |dF| / bound */
  double max_jump;   /* largest |dF| */
  double max_force;
} path_stats;

static double max_tet_gradient(const ce_geometry *g, double *rho) {
  double L = 0;
  for (int32_t t = 0; t < g->tet.nt; t++) L = fmax(L, ce_norm(g->tet.grad[t]));
  *rho = 0;
  for (int32_t i = 0; i < g->tet.nv; i++) *rho = fmax(*rho, ce_norm(g->tet.v[i]));
  return L;
}

/* Sphere A rolls along x (angle x/R about y) while sinking, over n poses. */
static path_stats roll_path(const ce_geometry *ga, const ce_geometry *gb, ce_pose XB, double x0, double x1,
                            double z0, double z1, int n, ce_arena *ar) {
  double rho, L = max_tet_gradient(ga, &rho);
  cr_assert(L > 0);
  const double R = 0.05;
  path_stats ps = {0, 0, 0};
  ce_vec3 Fprev = ce_v3(0, 0, 0);
  double Aprev = 0;
  ce_vec3 pprev = ce_v3(0, 0, 0);
  double thprev = 0;
  for (int i = 0; i < n; i++) {
    double t = (double)i / (n - 1);
    double x = x0 + (x1 - x0) * t, z = z0 + (z1 - z0) * t, th = x / R;
    ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 1, 0), th), ce_v3(x, 0.003, z));
    ce_body A = body(ga, X), B = body(gb, XB);
    ce_result r;
    contact(&A, &B, NULL, ar, &r);
    cr_assert_eq(r.faces_dropped, 0, "pose %d: faces dropped by the gradient rule; the bound does not apply", i);
    ce_vec3 F = r.wrench_a.force;
    ps.max_force = fmax(ps.max_force, ce_norm(F));
    if (i > 0) {
      double jump = ce_norm(ce_sub(F, Fprev));
      double bound = L * (ce_norm(ce_sub(X.p, pprev)) + fabs(th - thprev) * rho) * (r.area + Aprev);
      /* rounding slack: 1e-12 of the force */
      double ratio = jump / (bound + 1e-12 * ce_norm(F) + 1e-300);
      ps.max_ratio = fmax(ps.max_ratio, ratio);
      ps.max_jump = fmax(ps.max_jump, jump);
      cr_assert(ratio <= 1.0, "pose %d: |dF| = %.6g exceeds the Lipschitz bound %.6g", i, jump, bound);
    }
    Fprev = F;
    Aprev = r.area;
    pprev = X.p;
    thprev = th;
    ce_arena_reset(ar);
  }
  return ps;
}

Test(physics, continuity_rolling_on_plane_and_sphere, .timeout = 600) {
  const double R = 0.05, E = 1e5;
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *sp = sphere(R, CE_COMPLIANT, E, R / 4);
  ce_geometry *hs = halfspace(CE_RIGID, 0, 0);
  /* across the plane: depth 0.02R -> 0.5R */
  path_stats a = roll_path(sp, hs, ce_pose_identity(), -0.03, 0.03, R - 0.02 * R, R - 0.5 * R, 10000, ar);
  cr_log_info("rolling on plane: max |dF| %.4g N (max |F| %.4g N), max |dF|/bound %.3g", a.max_jump, a.max_force,
              a.max_ratio);
  cr_assert(a.max_force > 0.5 * sphere_plane_force(E, R, 0.5 * R));
  cr_assert(a.max_jump > 0);
  /* across a rigid sphere of radius R at the origin: centre distance from
   * about 1.95R down to 1.6R and back as A rolls over the top */
  ce_geometry *rs = sphere(R, CE_RIGID, 0, R / 3);
  path_stats b = roll_path(sp, rs, ce_pose_identity(), -0.04, 0.04, 1.8 * R, 1.6 * R, 10000, ar);
  cr_log_info("rolling over sphere: max |dF| %.4g N (max |F| %.4g N), max |dF|/bound %.3g", b.max_jump,
              b.max_force, b.max_ratio);
  cr_assert(b.max_force > 0 && b.max_jump > 0);
  ce_geometry_free(rs);
  ce_geometry_free(hs);
  ce_geometry_free(sp);
  ce_arena_destroy(ar);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Compliant sphere rolling over a compliant sphere. Both fields move the
 * equal-pressure surface, and the bound above does not carry over (no proof
 * here), so this path checks for jumps empirically: along a smooth path the
 * force changes smoothly, so no step may exceed 3 times the median step (a
 * lost or duplicated polygon, of area ~ hint^2, would be tens of medians). */
Test(physics, continuity_compliant_over_compliant, .timeout = 600) {
  const double R = 0.05;
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *sa = sphere(R, CE_COMPLIANT, 1e5, R / 2), *sb = sphere(R, CE_COMPLIANT, 2e5, R / 2);
  const int n = 10000;
  double *jump = malloc((size_t)n * sizeof *jump);
  cr_assert(jump);
  ce_vec3 Fprev = ce_v3(0, 0, 0);
  double maxj = 0, maxF = 0;
  int imax = 0;
  for (int i = 0; i < n; i++) {
    double t = (double)i / (n - 1), x = -0.04 + 0.08 * t, z = 1.8 * R - 0.2 * R * t;
    ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 1, 0), x / R), ce_v3(x, 0.003, z));
    ce_body A = body(sa, X), B = body(sb, ce_pose_identity());
    ce_result r;
    contact(&A, &B, NULL, ar, &r);
    cr_assert_eq(r.faces_dropped, 0, "pose %d: faces dropped by the gradient rule", i);
    maxF = fmax(maxF, ce_norm(r.wrench_a.force));
    if (i > 0) {
      jump[i - 1] = ce_norm(ce_sub(r.wrench_a.force, Fprev));
      if (jump[i - 1] > maxj) {
        maxj = jump[i - 1];
        imax = i;
      }
    }
    Fprev = r.wrench_a.force;
    ce_arena_reset(ar);
  }
  qsort(jump, (size_t)(n - 1), sizeof *jump, cmp_double);
  double med = jump[(n - 1) / 2];
  cr_log_info("compliant over compliant: max |dF| %.4g N at pose %d, median %.4g N, max |F| %.4g N", maxj, imax, med,
              maxF);
  cr_assert(maxF > 1 && med > 0);
  cr_assert(maxj <= 3 * med, "pose %d: |dF| %.4g is %.1f median steps", imax, maxj, maxj / med);
  free(jump);
  ce_geometry_free(sa);
  ce_geometry_free(sb);
  ce_arena_destroy(ar);
}

/* ---- e. polygon vs triangle representation ------------------------------- */

Test(physics, polygon_and_triangle_representation_agree) {
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *c1 = sphere(0.05, CE_COMPLIANT, 1e5, 0.0125);
  ce_geometry *c2 = shape_geom(CE_SHAPE_ELLIPSOID, 0, 0, ce_v3(0.05, 0.04, 0.03), CE_COMPLIANT, 2e5, 0.01, 0, 0);
  ce_geometry *r1 = shape_geom(CE_SHAPE_BOX, 0, 0, ce_v3(0.08, 0.06, 0.1), CE_RIGID, 0, 0.02, 0, 0);
  ce_geometry *hs = halfspace(CE_RIGID, 0, 0);
  const ce_geometry *pairs[3][2] = {{c1, c2}, {c1, r1}, {c2, hs}};
  uint64_t st = 77;
  for (int k = 0; k < 3; k++) {
    for (int t = 0; t < 5; t++) {
      ce_pose XA = ce_pose_from_quat(ce_test_rand_quat(&st), ce_v3(0, 0, 0.02));
      ce_pose XB = ce_pose_from_quat(ce_test_rand_quat(&st), ce_axpy(ce_v3(0, 0, 0), 0.05, ce_normalize(rand_vec(&st, 1))));
      if (pairs[k][1] == hs) XB = ce_pose_identity();
      ce_body A = body(pairs[k][0], XA), B = body(pairs[k][1], XB);
      A.V_WB.w = rand_vec(&st, 1);
      A.V_WB.v = rand_vec(&st, 0.2);
      ce_options o;
      ce_options_default(&o);
      ce_result rp, rt;
      o.representation = CE_REPRESENTATION_POLYGON;
      contact(&A, &B, &o, ar, &rp);
      o.representation = CE_REPRESENTATION_TRIANGLE;
      contact(&A, &B, &o, ar, &rt);
      cr_assert_eq(rp.status, CE_CONTACT_SURFACE, "pair %d pose %d: no contact", k, t);
      double s = wnorm(rp.wrench_a, 0.1);
      cr_assert(wnorm(ce_wrench_add(rp.wrench_a, ce_wrench_neg(rt.wrench_a)), 0.1) <= 1e-9 * s,
                "pair %d pose %d: polygon vs triangle differ by %.3g", k, t,
                wnorm(ce_wrench_add(rp.wrench_a, ce_wrench_neg(rt.wrench_a)), 0.1) / s);
      cr_assert(wnorm(ce_wrench_add(rp.wrench_b, ce_wrench_neg(rt.wrench_b)), 0.1) <= 1e-9 * wnorm(rp.wrench_b, 0.1));
      cr_assert(fabs(rp.area - rt.area) <= 1e-9 * rp.area);
      ce_arena_reset(ar);
    }
  }
  ce_geometry_free(c1);
  ce_geometry_free(c2);
  ce_geometry_free(r1);
  ce_geometry_free(hs);
  ce_arena_destroy(ar);
}

/* ---- f. a four-legged table on a compliant half space -------------------- */

/* Append a closed axis-aligned box [lo, hi] (outward winding). */
static void add_box(double *v, int32_t *nv, int32_t *t, int32_t *nt, ce_vec3 lo, ce_vec3 hi) {
  int32_t b = *nv;
  for (int i = 0; i < 8; i++) {
    v[3 * (*nv)] = (i & 1) ? hi.x : lo.x;
    v[3 * (*nv) + 1] = (i & 2) ? hi.y : lo.y;
    v[3 * (*nv) + 2] = (i & 4) ? hi.z : lo.z;
    (*nv)++;
  }
  /* vertex i = x bit 0, y bit 1, z bit 2; quads counter-clockwise from outside */
  static const int q[6][4] = {{0, 2, 3, 1}, {4, 5, 7, 6}, {0, 1, 5, 4}, {2, 6, 7, 3}, {0, 4, 6, 2}, {1, 3, 7, 5}};
  for (int f = 0; f < 6; f++) {
    int32_t *a = t + 3 * (*nt);
    a[0] = b + q[f][0], a[1] = b + q[f][1], a[2] = b + q[f][2];
    a[3] = b + q[f][0], a[4] = b + q[f][2], a[5] = b + q[f][3];
    *nt += 2;
  }
}

#define FOOT_X 0.3
#define FOOT_Y 0.2
#define FOOT_H 0.025 /* half side of a square foot */

static ce_geometry *table_geom(void) {
  double v[5 * 8 * 3];
  int32_t t[5 * 12 * 3], nv = 0, nt = 0;
  for (int i = 0; i < 4; i++) {
    double cx = (i & 1) ? FOOT_X : -FOOT_X, cy = (i & 2) ? FOOT_Y : -FOOT_Y;
    add_box(v, &nv, t, &nt, ce_v3(cx - FOOT_H, cy - FOOT_H, 0), ce_v3(cx + FOOT_H, cy + FOOT_H, 0.1));
  }
  add_box(v, &nv, t, &nt, ce_v3(-0.35, -0.25, 0.11), ce_v3(0.35, 0.25, 0.15)); /* table top, 1 cm gap */
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.1);
  ce_geometry *g = NULL;
  ce_error err;
  memset(&err, 0, sizeof err);
  ce_errno e = ce_geometry_from_trimesh(v, nv, t, nt, 1, &pr, &g, &err);
  cr_assert_eq(e, CE_OK, "table mesh: %s: %s", ce_errname(e), err.message);
  return g;
}

static int inside_feet_hull(ce_vec3 p) {
  return fabs(p.x) < FOOT_X + FOOT_H && fabs(p.y) < FOOT_Y + FOOT_H;
}

Test(physics, table_on_compliant_halfspace) {
  const double E = 1e6, slab = 0.1, pen = 0.002;
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *table = table_geom();
  ce_geometry *hs = halfspace(CE_COMPLIANT, E, slab);
  ce_options o;
  ce_options_default(&o);
  o.want_patches = 1;
  /* level: each foot's bottom (0.05 m square) at depth pen carries
   * E pen/slab * area = 1e6 * 0.02 * 0.0025 = 50 N; the submerged side
   * faces push horizontally and cancel in pairs. */
  ce_body A = body(table, pose_t(0, 0, -pen)), B = body(hs, ce_pose_identity());
  ce_result r;
  contact(&A, &B, &o, ar, &r);
  cr_assert_eq(r.status, CE_CONTACT_SURFACE);
  cr_assert_eq(r.npatches, 4, "level table: %d patches", r.npatches);
  double Fz = 4 * E * pen / slab * (2 * FOOT_H) * (2 * FOOT_H);
  cr_assert(fabs(r.wrench_a.force.z - Fz) <= 1e-9 * Fz, "Fz %.17g vs %.17g", r.wrench_a.force.z, Fz);
  cr_assert(fabs(r.wrench_a.force.x) + fabs(r.wrench_a.force.y) <= 1e-9 * Fz);
  cr_assert(fabs(r.total.point.x) < 1e-9 && fabs(r.total.point.y) < 1e-9, "level: point (%.3g, %.3g)",
            r.total.point.x, r.total.point.y);
  for (int i = 0; i < r.npatches; i++) {
    cr_assert(fabs(r.patches[i].normal_force_magnitude - Fz / 4) <= 1e-6 * Fz, "patch %d: %.17g", i,
              r.patches[i].normal_force_magnitude);
    cr_assert(fabs(fabs(r.patches[i].point.x) - FOOT_X) < 1e-9 && fabs(fabs(r.patches[i].point.y) - FOOT_Y) < 1e-9,
              "patch %d point (%.6g, %.6g)", i, r.patches[i].point.x, r.patches[i].point.y);
  }
  ce_arena_reset(ar);
  /* tilted about y by a small angle: the +x feet sink deeper, the point
   * moves toward +x; about x: toward -y for a positive angle (y -> z = y sin) */
  double prevx = 0;
  for (int k = 1; k <= 4; k++) {
    double th = 0.0015 * k; /* 0.3 m * 0.0015 = 0.45 mm per step; all four feet stay in at k = 1, 2, 3, 4 */
    ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(0, 1, 0), th), ce_v3(0, 0, -pen));
    ce_body At = body(table, X);
    contact(&At, &B, &o, ar, &r);
    cr_log_info("table tilt %g: point (%.6g, %.6g, %.6g), %d patches, Fz %.6g", th, r.total.point.x, r.total.point.y,
                r.total.point.z, r.npatches, r.wrench_a.force.z);
    cr_assert_eq(r.npatches, 4, "tilt %g: %d patches", th, r.npatches);
    cr_assert(r.total.point.x > prevx + 1e-4, "tilt %g: point x %.6g did not move toward the lower (+x) side", th,
              r.total.point.x);
    cr_assert(fabs(r.total.point.y) < 1e-6);
    cr_assert(inside_feet_hull(r.total.point));
    /* leading order (feet as points at x = +-X carrying E/slab (pen +- X sin)
     * times their area): x = X^2 sin(th) / pen; the pressure on the
     * submerged side faces shifts it a little further */
    double lever = FOOT_X * FOOT_X * sin(th) / pen;
    cr_assert(r.total.point.x > 0.9 * lever && r.total.point.x < 1.2 * lever, "tilt %g: x %.6g vs lever rule %.6g", th,
              r.total.point.x, lever);
    prevx = r.total.point.x;
    ce_arena_reset(ar);
  }
  {
    ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(ce_v3(1, 0, 0), 0.003), ce_v3(0, 0, -pen));
    ce_body At = body(table, X);
    contact(&At, &B, &o, ar, &r);
    cr_assert(r.total.point.y < -1e-3 && fabs(r.total.point.x) < 1e-6, "tilt about x: point (%.6g, %.6g)",
              r.total.point.x, r.total.point.y);
    ce_arena_reset(ar);
  }
  /* random tilts (some lift feet off): the point stays inside the hull */
  uint64_t st = 3;
  int lifted = 0;
  for (int k = 0; k < 50; k++) {
    ce_vec3 axis = ce_normalize(ce_v3(2 * ce_test_rand(&st) - 1, 2 * ce_test_rand(&st) - 1, 0));
    ce_pose X = ce_pose_from_quat(ce_quat_from_axis_angle(axis, 0.02 * ce_test_rand(&st)), ce_v3(0, 0, -pen));
    ce_body At = body(table, X);
    contact(&At, &B, &o, ar, &r);
    cr_assert_eq(r.status, CE_CONTACT_SURFACE);
    cr_assert(r.npatches >= 1 && r.npatches <= 4);
    lifted += r.npatches < 4;
    cr_assert(inside_feet_hull(r.total.point), "tilt %d: point (%.6g, %.6g) outside the feet", k, r.total.point.x,
              r.total.point.y);
    for (int i = 0; i < r.npatches; i++) cr_assert(inside_feet_hull(r.patches[i].point));
    ce_arena_reset(ar);
  }
  cr_assert(lifted > 0, "no random tilt lifted a foot");
  ce_geometry_free(hs);
  ce_geometry_free(table);
  ce_arena_destroy(ar);
}

/* ---- g. Hunt–Crossley and friction end-to-end ----------------------------- */

Test(physics, dissipation_and_friction_on_plane) {
  const double R = 0.05, E = 1e5, dHC = 0.5, mu = 0.3, vs = 1e-4;
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *sp = shape_geom(CE_SHAPE_SPHERE, R, 0, ce_v3(0, 0, 0), CE_COMPLIANT, E, R / 4, dHC, mu);
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_HALFSPACE;
  ce_props pr = ce_test_props(CE_RIGID, 0, 1);
  pr.material.friction = mu;
  pr.material.dissipation = 7; /* a rigid side's dissipation does not count */
  ce_geometry *hs = NULL;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &hs, NULL), CE_OK);
  ce_body A = body(sp, pose_t(0, 0, R - 0.2 * R)), B = body(hs, ce_pose_identity());
  ce_result r0, r;
  contact(&A, &B, NULL, ar, &r0);
  cr_assert(fabs(r0.combined_material.dissipation - dHC) < 1e-15 && fabs(r0.combined_material.friction - mu) < 1e-15);
  double F0 = r0.wrench_a.force.z;
  cr_assert(F0 > 0);
  /* normal velocity only: every traction scales by (1 - d vn)+ */
  const double vns[] = {-0.4, -0.1, 0.3, 1.0, 2.0, 5.0};
  for (int i = 0; i < 6; i++) {
    A.V_WB.v = ce_v3(0, 0, vns[i]);
    contact(&A, &B, NULL, ar, &r);
    double f = fmax(0, 1 - dHC * vns[i]);
    cr_assert(fabs(r.wrench_a.force.z - f * F0) <= 1e-12 * F0, "vn %g: Fz %.17g expected %.17g", vns[i],
              r.wrench_a.force.z, f * F0);
    cr_assert(fabs(r.wrench_a.force.x) + fabs(r.wrench_a.force.y) <= 1e-12 * F0);
    if (f == 0) cr_assert(ce_norm(r.wrench_a.torque) == 0 && ce_norm(r.wrench_a.force) == 0);
  }
  /* sliding (uniform slip) along a direction in the plane */
  const double vts[] = {1e-7, 5e-5, 1e-4, 1e-3, 0.5};
  ce_vec3 dir = ce_normalize(ce_v3(1, 2, 0));
  for (int i = 0; i < 5; i++) {
    A.V_WB.v = ce_scale(dir, vts[i]);
    contact(&A, &B, NULL, ar, &r);
    double ft = mu * (2 / M_PI) * atan(vts[i] / vs) * F0;
    ce_vec3 expect = ce_axpy(ce_v3(0, 0, F0), -ft, dir);
    cr_assert(ce_norm(ce_sub(r.wrench_a.force, expect)) <= 1e-12 * F0, "slip %g: friction %.17g expected %.17g",
              vts[i], -ce_dot(r.wrench_a.force, dir), ft);
    /* the friction traction is proportional to the pressure (uniform slip),
     * so it acts at the centre of pressure c (on z = 0): the torque about
     * A's origin gains (c - o) x (-ft dir) over the torque at rest */
    ce_vec3 c = r0.total.point;
    cr_assert(fabs(c.z) <= 1e-12 && hypot(c.x, c.y) < 0.1 * R);
    ce_vec3 tau = ce_add(r0.wrench_a.torque, ce_cross(ce_sub(c, A.X_WB.p), ce_scale(dir, -ft)));
    cr_assert(ce_norm(ce_sub(r.wrench_a.torque, tau)) <= 1e-12 * F0 * R, "slip %g: torque off by %.3g N m",
              vts[i], ce_norm(ce_sub(r.wrench_a.torque, tau)));
    /* it tips the sphere forward: about z x dir, lever about R - d */
    cr_assert(ce_dot(ce_sub(r.wrench_a.torque, r0.wrench_a.torque), ce_cross(ce_v3(0, 0, 1), dir)) > 0.9 * ft * 0.8 * R);
  }
  /* sliding while approaching: both laws at once */
  A.V_WB.v = ce_v3(0.01, 0, -0.2);
  contact(&A, &B, NULL, ar, &r);
  double Fn = F0 * (1 + dHC * 0.2);
  cr_assert(fabs(r.wrench_a.force.z - Fn) <= 1e-12 * Fn);
  cr_assert(fabs(-r.wrench_a.force.x - mu * (2 / M_PI) * atan(0.01 / vs) * Fn) <= 1e-12 * Fn);
  /* spin about the normal through the contact centre: friction nearly
   * cancels (mesh asymmetry only), a torque resists the spin. With the slip
   * w rho >> vs almost everywhere, tau_z -> -mu Int p rho dA, and for the
   * field p = E (1 - sqrt(rho^2 + h^2)/R) on the disc rho <= a that is
   * -mu 2 pi E Int_0^a (1 - sqrt(rho^2 + h^2)/R) rho^2 drho (Simpson below);
   * the mesh's own force error (~3% at this hint) bounds the agreement. */
  A.V_WB.v = ce_v3(0, 0, 0);
  A.V_WB.w = ce_v3(0, 0, 5);
  contact(&A, &B, NULL, ar, &r);
  double h = R - 0.2 * R, arad = sqrt(R * R - h * h), tau = 0;
  const int NS = 2000;
  for (int i = 0; i <= NS; i++) {
    double rho = arad * i / NS, wgt = (i == 0 || i == NS) ? 1 : (i % 2 ? 4 : 2);
    tau += wgt * (1 - sqrt(rho * rho + h * h) / R) * rho * rho;
  }
  tau *= -mu * 2 * M_PI * E * arad / (3.0 * NS);
  cr_log_info("spin: tau_z %.6g analytic %.6g; net friction %.3g of mu F0", r.wrench_a.torque.z, tau,
              hypot(r.wrench_a.force.x, r.wrench_a.force.y) / (mu * F0));
  cr_assert(hypot(r.wrench_a.force.x, r.wrench_a.force.y) < 1e-3 * mu * F0, "spin: net friction %.3g of mu F0",
            hypot(r.wrench_a.force.x, r.wrench_a.force.y) / (mu * F0));
  cr_assert(fabs(r.wrench_a.torque.z - tau) < 0.05 * fabs(tau), "spin torque %.6g vs %.6g", r.wrench_a.torque.z, tau);
  cr_assert(fabs(r.wrench_a.force.z - F0) <= 1e-12 * F0); /* a spin about n does not change vn */
  /* finite but absurd speeds overflow the Hunt-Crossley factor: an error
   * naming the materials, not a force of (nan, nan, inf) */
  A.V_WB.w = ce_v3(0, 0, 0);
  A.V_WB.v = ce_v3(1e308, 0, -1e308);
  ce_error err;
  memset(&err, 0, sizeof err);
  cr_assert_eq(ce_contact(&A, &B, NULL, ar, &r, &err), CE_ENONFINITE);
  cr_assert(strstr(err.message, "the contact wrench overflows double precision") && strstr(err.message, "0.5 s/m"),
            "%s", err.message);
  cr_assert_eq(r.status, 0, "the result is cleared");
  ce_geometry_free(sp);
  ce_geometry_free(hs);
  ce_arena_destroy(ar);
}

/* ---- point contacts from a real surface ----------------------------------- */

/* Each face's point contact is a spring k = g A at signed distance
 * phi0 = -p0/g, so at the current pose it pushes with k (-phi0) = A p0, the
 * face's exact pressure integral (linear pressure: mean = centroid value).
 * Summed over faces (n times that) they reproduce the hydroelastic force at
 * rest. Against a rigid half space g is A's normal gradient; between two
 * compliant spheres it is the series combination, never above either side. */
Test(physics, point_contacts_reproduce_the_force) {
  const double R = 0.05;
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *sp = sphere(R, CE_COMPLIANT, 1e5, R / 4);
  ce_geometry *sp2 = sphere(0.04, CE_COMPLIANT, 3e5, 0.01);
  ce_geometry *hs = halfspace(CE_RIGID, 0, 0);
  ce_options o;
  ce_options_default(&o);
  o.want_face_contacts = 1;
  o.want_surface = 1;
  const ce_geometry *others[2] = {hs, sp2};
  uint64_t st = 8;
  for (int k = 0; k < 2; k++) {
    ce_body A = body(sp, ce_pose_from_quat(ce_test_rand_quat(&st), ce_v3(0, 0, 0.8 * R)));
    ce_body B = body(others[k], k == 0 ? ce_pose_identity() : ce_pose_from_quat(ce_test_rand_quat(&st), ce_v3(0.01, 0, -0.029)));
    ce_result r;
    contact(&A, &B, &o, ar, &r);
    cr_assert_eq(r.status, CE_CONTACT_SURFACE);
    cr_assert_eq(r.nface_contacts + r.face_contacts_excluded, r.surface.nf, "every face is a point or excluded");
    ce_vec3 F = ce_v3(0, 0, 0);
    for (int i = 0; i < r.nface_contacts; i++) {
      const ce_face_contact *q = &r.face_contacts[i];
      cr_assert(q->g > 0 && q->stiffness > 0 && q->phi0 <= 0);
      cr_assert(fabs(q->stiffness - q->g * q->area) <= 1e-12 * q->stiffness);
      int f = q->face;
      double gA = ce_dot(r.surface.grad_a[f], q->normal);
      if (k == 0) {
        cr_assert(fabs(q->g - gA) <= 1e-12 * gA);
      } else {
        double gB = -ce_dot(r.surface.grad_b[f], q->normal);
        cr_assert(fabs(q->g - gA * gB / (gA + gB)) <= 1e-12 * q->g && q->g < gA && q->g < gB);
      }
      F = ce_axpy(F, q->stiffness * -q->phi0, q->normal);
    }
    double Fh = ce_norm(r.wrench_a.force);
    if (r.face_contacts_excluded == 0)
      cr_assert(ce_norm(ce_sub(F, r.wrench_a.force)) <= 1e-9 * Fh, "pair %d: points %.12g vs surface %.12g", k,
                ce_norm(F), Fh);
    else /* excluded faces carry their share of the force; the rest agrees in size */
      cr_assert(ce_norm(ce_sub(F, r.wrench_a.force)) <= 0.1 * Fh);
    cr_log_info("points pair %d: %d points, %d excluded, |F| points %.6g surface %.6g", k, r.nface_contacts,
                r.face_contacts_excluded, ce_norm(F), Fh);
    ce_arena_reset(ar);
  }
  ce_geometry_free(sp);
  ce_geometry_free(sp2);
  ce_geometry_free(hs);
  ce_arena_destroy(ar);
}
