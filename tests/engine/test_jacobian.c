/* test_jacobian.c — wrench Jacobians (ce.h, "wrench Jacobians";
 * ce_jacobian.c) against central differences of the reported wrench, the
 * relative-pose identities, and the symmetry of the elastic stiffness.
 *
 * Per pair type, 20 random overlapping poses with dissipation, friction
 * and nonzero velocities of both bodies. A matrix is compared with central
 * differences (step 1e-6 m or rad for poses, 1e-7 for velocities) when the
 * surface keeps its topology at every +-h of its columns (same faces: the
 * source element pairs and corner counts); otherwise the one-sided
 * derivative of the current topology need not match and the matrix is
 * skipped and counted. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 22); }
static void teardown(void) { ce_arena_destroy(arena); }

#define HP 1e-6 /* pose step */
#define HV 1e-7 /* velocity step */

/* ---- evaluation ------------------------------------------------------------ */

static ce_options opts(int jac) {
  ce_options o;
  ce_options_default(&o);
  o.want_surface = 1;
  o.want_jacobian = jac;
  return o;
}

/* The surface's faces as sorted keys (source elements, corner count: a
 * vertex on the straight edge between its neighbours, such as a clip point
 * that rounding makes next to a vertex, changes no polygon). */
static int32_t corner_count(const ce_surface *s, int32_t f) {
  int32_t out[64], m = s->face_offsets[f + 1] - s->face_offsets[f];
  int32_t k = ce_wrench_corners(s->vertices, s->face_vertices + s->face_offsets[f], m, out);
  return k < 0 ? m : k;
}

static int64_t *signature(const ce_result *r, int32_t *n) {
  const ce_surface *s = &r->surface;
  *n = s->nf;
  int64_t *k = malloc(sizeof(int64_t) * (size_t)(s->nf + 1));
  cr_assert(k);
  for (int32_t f = 0; f < s->nf; f++)
    k[f] = ((int64_t)s->element_a[f] << 36) ^ ((int64_t)s->element_b[f] << 8) ^
           (int64_t)corner_count(s, f);
  for (int32_t i = 1; i < s->nf; i++)
    for (int32_t j = i; j > 0 && k[j] < k[j - 1]; j--) {
      int64_t t = k[j];
      k[j] = k[j - 1];
      k[j - 1] = t;
    }
  return k;
}

/* The wrench on A (torque, force) at (a, b) and whether the surface has
 * the signature (sig, nsig). */
static int wrench_at(const ce_body *a, const ce_body *b, double w[6], const int64_t *sig, int32_t nsig) {
  ce_options o = opts(0);
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(a, b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  const double v[6] = {r.wrench_a.torque.x, r.wrench_a.torque.y, r.wrench_a.torque.z,
                       r.wrench_a.force.x,  r.wrench_a.force.y,  r.wrench_a.force.z};
  memcpy(w, v, sizeof v);
  int32_t n;
  int64_t *k = signature(&r, &n);
  int same = n == nsig && (n == 0 || !memcmp(k, sig, sizeof(int64_t) * (size_t)n));
  free(k);
  return same;
}

/* Column j of a body's pose (j < 6) or velocity (6 <= j < 12) moved by h. */
static ce_body moved(ce_body b, int j, double h) {
  if (j < 3) {
    ce_vec3 axis = ce_v3(j == 0, j == 1, j == 2);
    ce_mat3 Rd = ce_quat_to_mat3(ce_quat_from_axis_angle(axis, h));
    b.X_WB.R = ce_mat3_mul(&Rd, &b.X_WB.R);
  } else if (j < 6) {
    double *p = &b.X_WB.p.x;
    p[j - 3] += h;
  } else if (j < 9) {
    double *w = &b.V_WB.w.x;
    w[j - 6] += h;
  } else {
    double *v = &b.V_WB.v.x;
    v[j - 9] += h;
  }
  return b;
}

/* The matrix d wrench / d (column block blk: 0 pose A, 1 pose B, 2 velocity
 * A, 3 velocity B) by central differences; 0 when the topology changes. */
static int central(const ce_body *a, const ce_body *b, int blk, const int64_t *sig, int32_t nsig, double J[36]) {
  const int on_b = blk & 1, vel = blk >= 2;
  const double h = vel ? HV : HP;
  int same = 1;
  for (int j = 0; j < 6; j++) {
    double wp[6], wm[6];
    ce_body ap = *a, am = *a, bp = *b, bm = *b;
    if (on_b) {
      bp = moved(*b, j + 6 * vel, h);
      bm = moved(*b, j + 6 * vel, -h);
    } else {
      ap = moved(*a, j + 6 * vel, h);
      am = moved(*a, j + 6 * vel, -h);
    }
    same &= wrench_at(&ap, &bp, wp, sig, nsig);
    same &= wrench_at(&am, &bm, wm, sig, nsig);
    for (int i = 0; i < 6; i++) J[6 * i + j] = (wp[i] - wm[i]) / (2 * h);
  }
  return same;
}

static double frob(const double *x) {
  double s = 0;
  for (int i = 0; i < 36; i++) s += x[i] * x[i];
  return sqrt(s);
}

static double rel_diff(const double *x, const double *y) {
  double d[36];
  for (int i = 0; i < 36; i++) d[i] = x[i] - y[i];
  double n = fmax(frob(x), frob(y));
  return n > 0 ? frob(d) / n : 0;
}

static const double *block(const ce_jacobian *J, int blk) {
  return blk == 0 ? J->d_pose_a : blk == 1 ? J->d_pose_b : blk == 2 ? J->d_velocity_a : J->d_velocity_b;
}

/* ---- cases ------------------------------------------------------------------ */

typedef struct jcase {
  const char *name;
  ce_geometry *ga, *gb;
  ce_jac_pair kind;
  int m_is_a;
  void (*pose)(uint64_t *rng, ce_pose *xa, ce_pose *xb);
} jcase;

static ce_vec3 rand_dir(uint64_t *rng) { return ce_quat_rotate(ce_test_rand_quat(rng), ce_v3(1, 0, 0)); }

/* two bodies about 0.1 in radius, centres 0.15 .. 0.17 apart */
static void pose_pair(uint64_t *rng, ce_pose *xa, ce_pose *xb) {
  *xa = ce_test_rand_pose(rng, 0, 0.2);
  ce_vec3 d = ce_scale(rand_dir(rng), 0.15 + 0.02 * ce_test_rand(rng));
  *xb = ce_pose_from_quat(ce_test_rand_quat(rng), ce_add(xa->p, d));
}

/* A at a random pose, B a half space (any rotation), A's origin 0.05 ..
 * 0.07 above B's boundary */
static void pose_on_halfspace_b(uint64_t *rng, ce_pose *xa, ce_pose *xb) {
  *xb = ce_test_rand_pose(rng, 0, 0.2);
  ce_vec3 n = ce_v3(xb->R.m[0][2], xb->R.m[1][2], xb->R.m[2][2]);
  ce_vec3 t = ce_cross(n, rand_dir(rng));
  ce_vec3 c = ce_add(ce_axpy(xb->p, 0.05 + 0.02 * ce_test_rand(rng), n), ce_scale(t, 0.1));
  *xa = ce_pose_from_quat(ce_test_rand_quat(rng), c);
}

static void pose_on_halfspace_a(uint64_t *rng, ce_pose *xa, ce_pose *xb) { pose_on_halfspace_b(rng, xb, xa); }

/* A (radius 0.1) over the wavy terrain, 0.01 .. 0.03 into it */
static double wave(double x, double y) { return 0.03 * sin(3 * x) * cos(2 * y); }
static void pose_on_terrain(uint64_t *rng, ce_pose *xa, ce_pose *xb) {
  *xb = ce_pose_identity();
  double x = -0.5 + ce_test_rand(rng), y = -0.5 + ce_test_rand(rng);
  ce_vec3 c = ce_v3(x, y, wave(x, y) + 0.1 - 0.01 - 0.02 * ce_test_rand(rng));
  *xa = ce_pose_from_quat(ce_test_rand_quat(rng), c);
}

static void pose_mirrored(uint64_t *rng, ce_pose *xa, ce_pose *xb) {
  (void)rng;
  *xa = ce_pose_identity();
  *xb = ce_pose_identity();
  xb->p = ce_v3(0.18, 0, 0);
}

/* radius 0.1; a box 0.2 x 0.18 x 0.16; an ellipsoid of semi-axes 0.1,
 * 0.09, 0.08 */
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
    b.V_WB.w = ce_scale(rand_dir(rng), 0.5 * ce_test_rand(rng));
    b.V_WB.v = ce_scale(rand_dir(rng), 0.1 * ce_test_rand(rng));
  }
  return b;
}

/* The Jacobians with all 24 partials evaluated (no identities used). */
static ce_jacobian full_jacobian(const jcase *c, const ce_body *a, const ce_body *b) {
  ce_options o = opts(0);
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(a, b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  ce_jac_input in;
  memset(&in, 0, sizeof in);
  in.s = &r.surface;
  in.a = a;
  in.b = b;
  in.m_is_a = c->m_is_a;
  in.kind = c->kind;
  in.d = r.combined_material.dissipation;
  in.mu = r.combined_material.friction;
  in.vs = o.stiction_tolerance;
  cr_assert_eq(ce_jacobian_hydro_full(&in, arena, &r), CE_OK);
  cr_assert_eq(r.jacobian_status, CE_JACOBIAN_OK, "%s: %s", c->name, r.jacobian_note);
  return *r.jacobian;
}

typedef struct tally {
  int checked, skipped, poses;
  double worst;
} tally;

/* One pose: Jacobians against central differences, and the identities. */
static void check_pose(const jcase *c, const ce_body *a, const ce_body *b, tally *t) {
  ce_options o = opts(1);
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(a, b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  if (r.status != CE_CONTACT_SURFACE) return;
  cr_assert_eq(r.jacobian_status, CE_JACOBIAN_OK, "%s: %s", c->name, r.jacobian_note);
  ce_jacobian J = *r.jacobian;
  int32_t nsig;
  int64_t *sig = signature(&r, &nsig);
  t->poses++;
  for (int blk = 0; blk < 4; blk++) {
    double F[36];
    if (!central(a, b, blk, sig, nsig, F)) {
      t->skipped++;
      continue;
    }
    double e = rel_diff(block(&J, blk), F);
    t->checked++;
    t->worst = fmax(t->worst, e);
    cr_expect(e <= 1e-4, "%s, block %d: Jacobian differs from central differences by %.3g (Frobenius, relative)",
              c->name, blk, e);
  }
  free(sig);
  /* the identities: the other body's matrices as evaluated directly */
  ce_jacobian Jf = full_jacobian(c, a, b);
  for (int blk = 0; blk < 4; blk++) {
    double e = rel_diff(block(&J, blk), block(&Jf, blk));
    cr_expect(e <= 1e-9, "%s, block %d: relative-pose identity off by %.3g", c->name, blk, e);
  }
}

static void run_case(const jcase *c, int nposes, uint64_t seed) {
  tally t = {0, 0, 0, 0};
  uint64_t rng = seed;
  for (int k = 0; k < nposes; k++) {
    ce_pose xa, xb;
    c->pose(&rng, &xa, &xb);
    ce_body a = body(c->ga, xa, &rng, 1), b = body(c->gb, xb, &rng, 1);
    check_pose(c, &a, &b, &t);
  }
  fprintf(stderr, "jacobian %-8s poses %2d  matrices checked %3d skipped %3d  worst relative error %.2e\n", c->name,
          t.poses, t.checked, t.skipped, t.worst);
  cr_assert(t.poses == nposes, "%s: %d of %d poses in contact", c->name, t.poses, nposes);
  /* velocity blocks never change the topology; most pose blocks keep it */
  cr_assert(t.checked >= (3 * 4 * t.poses) / 5, "%s: only %d of %d matrices checked", c->name, t.checked,
            4 * t.poses);
}

TestSuite(jacobian, .init = setup, .fini = teardown, .timeout = 600);

Test(jacobian, compliant_compliant) {
  jcase c = {"cc", shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.05), shape(CE_SHAPE_ELLIPSOID, CE_COMPLIANT, 0.05),
             CE_JAC_TET_TET, 1, pose_pair};
  run_case(&c, 20, 11);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

/* The benchmark's spheres, identical meshes mirrored across the plane
 * between them (centres 0.18 apart along x, identity rotations): where the
 * mesh is mirror-symmetric a polygon is a tet of A cut by the plane and
 * also its mirror tet of B cut by it, so its edges lie on faces of both
 * meshes (all of them at hint 0.05), and any perturbation but the approach
 * opens slivers along them (different faces at +-h, so run_case would skip
 * every pose matrix).
 * The wrench is differentiable there without dissipation and friction and
 * has a kink in them otherwise; the Jacobians are its symmetric derivative
 * (docs/jacobians.md, "Topology rule"), which central differences
 * converge to: all four matrices are compared with them, column by column
 * printed, and with the identities. */
static void check_mirrored(double hint, int moving) {
  ce_geometry *g = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, hint);
  jcase c = {"cc-mirr", g, g, CE_JAC_TET_TET, 1, pose_mirrored};
  uint64_t rng = 5;
  ce_pose xa, xb;
  pose_mirrored(&rng, &xa, &xb);
  ce_body a = body(g, xa, &rng, moving), b = body(g, xb, &rng, moving);
  if (!moving) { /* at rest: the closed forms, the velocity part linearised */
    a.material.dissipation = b.material.dissipation = 1.0;
    a.material.friction = b.material.friction = 0.5;
  }
  ce_options o = opts(1);
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  cr_assert_eq(r.status, CE_CONTACT_SURFACE);
  cr_assert_eq(r.jacobian_status, CE_JACOBIAN_OK, "%s", r.jacobian_note);
  const ce_jacobian J = *r.jacobian;
  int32_t nsig;
  int64_t *sig = signature(&r, &nsig);
  for (int blk = 0; blk < 4; blk++) {
    double F[36];
    (void)central(&a, &b, blk, sig, nsig, F);
    const double e = rel_diff(block(&J, blk), F);
    fprintf(stderr, "jacobian cc-mirr  hint %.3f %s block %d: %.2e from central differences; columns", hint,
            moving ? "moving" : "at rest", blk, e);
    for (int j = 0; j < 6; j++) {
      double d = 0, n = 0;
      for (int i = 0; i < 6; i++) {
        const double x = block(&J, blk)[6 * i + j] - F[6 * i + j];
        d += x * x;
        n += F[6 * i + j] * F[6 * i + j];
      }
      fprintf(stderr, " %.1e", n > 0 ? sqrt(d / n) : sqrt(d));
    }
    fprintf(stderr, "\n");
    cr_expect(e <= 1e-4, "hint %g, block %d: Jacobian differs from central differences by %.3g (Frobenius, relative)",
              hint, blk, e);
  }
  free(sig);
  ce_jacobian Jf = full_jacobian(&c, &a, &b);
  for (int blk = 0; blk < 4; blk++) {
    double e = rel_diff(block(&J, blk), block(&Jf, blk));
    cr_expect(e <= 1e-9, "hint %g, block %d: relative-pose identity off by %.3g", hint, blk, e);
  }
  ce_geometry_free(g);
}

Test(jacobian, mirrored_spheres) {
  check_mirrored(0.05, 1);
  check_mirrored(0.026, 1);
  check_mirrored(0.05, 0);
  check_mirrored(0.026, 0);
}

Test(jacobian, compliant_rigid) {
  jcase c = {"cr", shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.05), shape(CE_SHAPE_BOX, CE_RIGID, 0.05), CE_JAC_TET_TRI, 1,
             pose_pair};
  run_case(&c, 20, 12);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

Test(jacobian, rigid_compliant) {
  jcase c = {"rc", shape(CE_SHAPE_SPHERE, CE_RIGID, 0.04), shape(CE_SHAPE_ELLIPSOID, CE_COMPLIANT, 0.05),
             CE_JAC_TET_TRI, 0, pose_pair};
  run_case(&c, 20, 13);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

Test(jacobian, compliant_on_rigid_halfspace) {
  jcase c = {"c-hs", shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.05), halfspace(CE_RIGID), CE_JAC_TET_HALFSPACE, 1,
             pose_on_halfspace_b};
  run_case(&c, 20, 14);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

Test(jacobian, compliant_halfspace_on_compliant) {
  jcase c = {"chs-c", halfspace(CE_COMPLIANT), shape(CE_SHAPE_ELLIPSOID, CE_COMPLIANT, 0.05), CE_JAC_TET_HALFSPACE, 0,
             pose_on_halfspace_a};
  run_case(&c, 20, 15);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

Test(jacobian, compliant_halfspace_rigid_mesh) {
  jcase c = {"chs-r", halfspace(CE_COMPLIANT), shape(CE_SHAPE_SPHERE, CE_RIGID, 0.04), CE_JAC_HALFSPACE_TRI, 1,
             pose_on_halfspace_a};
  run_case(&c, 20, 16);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

Test(jacobian, rigid_mesh_on_compliant_halfspace) {
  jcase c = {"r-chs", shape(CE_SHAPE_BOX, CE_RIGID, 0.05), halfspace(CE_COMPLIANT), CE_JAC_HALFSPACE_TRI, 0,
             pose_on_halfspace_b};
  run_case(&c, 20, 17);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

Test(jacobian, compliant_on_terrain) {
  jcase c = {"terrain", shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.05), wavy_terrain(), CE_JAC_TET_TERRAIN, 1,
             pose_on_terrain};
  run_case(&c, 20, 18);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

/* ---- the elastic stiffness -------------------------------------------------
 * Without dissipation and friction the wrench on A is minus the gradient of
 * the strain energy U with respect to A's pose: with the perturbation
 * R <- exp([dth]x) R, p <- p + dp, (torque about A's origin, force) =
 * -(dU/dth, dU/dp). So d_pose_a = -(the second derivative of U along those
 * perturbations):
 *  - the translational block d f / d p is the Hessian of U: symmetric;
 *  - the mixed blocks: translations and rotations about A's origin
 *    commute, so d tau / d p = (d f / d dth)^T;
 *  - the rotational block d tau / d dth is not symmetric: rotations do not
 *    commute (exp(a) exp(b) = exp(a + b + (a x b)/2 + ...)), which adds
 *    (tau . (e_i x e_j))/2 to entry (i, j): d tau / d dth + [tau]x / 2 is
 *    the symmetric Hessian ([tau]x the cross-product matrix). */
static void check_elastic_symmetry(const jcase *c, int nposes, uint64_t seed) {
  uint64_t rng = seed;
  int checked = 0, dropped = 0;
  for (int k = 0; k < nposes; k++) {
    ce_pose xa, xb;
    c->pose(&rng, &xa, &xb);
    ce_body a = body(c->ga, xa, &rng, 0), b = body(c->gb, xb, &rng, 0);
    ce_options o = opts(1);
    ce_result r;
    ce_error err;
    ce_arena_reset(arena);
    cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
    if (r.status != CE_CONTACT_SURFACE) continue;
    cr_assert_eq(r.jacobian_status, CE_JACOBIAN_OK);
    if (r.faces_dropped > 0) { /* a face the gradient rule drops has no energy counterpart */
      dropped++;
      continue;
    }
    const double *J = r.jacobian->d_pose_a;
    const ce_vec3 t = r.wrench_a.torque;
    const double tx[3][3] = {{0, -t.z, t.y}, {t.z, 0, -t.x}, {-t.y, t.x, 0}};
    double H[36], asym = 0, norm = frob(J);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 6; j++) H[6 * i + j] = J[6 * i + j] + (i < 3 && j < 3 ? 0.5 * tx[i][j] : 0);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < i; j++) asym = fmax(asym, fabs(H[6 * i + j] - H[6 * j + i]));
    cr_expect(asym <= 1e-9 * norm, "%s pose %d: d_pose_a + [tau]x/2 is not symmetric: %.3g of %.3g", c->name, k,
              asym, norm);
    /* and the velocities do not matter */
    cr_expect(frob(r.jacobian->d_velocity_a) == 0 && frob(r.jacobian->d_velocity_b) == 0, "%s: velocity terms",
              c->name);
    checked++;
  }
  fprintf(stderr, "jacobian %-8s elastic symmetry checked at %d poses (%d with dropped faces skipped)\n", c->name,
          checked, dropped);
  cr_assert(checked + dropped == nposes, "%s: %d of %d poses in contact", c->name, checked + dropped, nposes);
  cr_assert(checked >= nposes / 2, "%s: %d of %d poses without dropped faces", c->name, checked, nposes);
}

Test(jacobian, elastic_stiffness_is_a_hessian) {
  ce_geometry *s = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.05), *e = shape(CE_SHAPE_ELLIPSOID, CE_COMPLIANT, 0.05),
              *box = shape(CE_SHAPE_SPHERE, CE_RIGID, 0.04), *hs = halfspace(CE_RIGID), *chs = halfspace(CE_COMPLIANT);
  const jcase cases[] = {
      {"cc", s, e, CE_JAC_TET_TET, 1, pose_pair},
      {"cr", s, box, CE_JAC_TET_TRI, 1, pose_pair},
      {"c-hs", s, hs, CE_JAC_TET_HALFSPACE, 1, pose_on_halfspace_b},
      {"chs-c", chs, e, CE_JAC_TET_HALFSPACE, 0, pose_on_halfspace_a},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_elastic_symmetry(&cases[i], 10, 100 + i);
  ce_geometry_free(s);
  ce_geometry_free(e);
  ce_geometry_free(box);
  ce_geometry_free(hs);
  ce_geometry_free(chs);
}

/* At rest (no relative motion) the wrench pass takes its closed forms and
 * so does the Jacobian: the same matrices as the quadrature's derivatives
 * (all 24 partials evaluated), and central differences. */
Test(jacobian, at_rest_closed_forms) {
  ce_geometry *s = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.05), *e = shape(CE_SHAPE_ELLIPSOID, CE_COMPLIANT, 0.05);
  jcase c = {"cc-rest", s, e, CE_JAC_TET_TET, 1, pose_pair};
  uint64_t rng = 21;
  tally t = {0, 0, 0, 0};
  for (int k = 0; k < 10; k++) {
    ce_pose xa, xb;
    pose_pair(&rng, &xa, &xb);
    ce_body a = body(s, xa, &rng, 1), b = body(e, xb, &rng, 1);
    /* both bodies in one rigid motion: no relative motion */
    b.V_WB.w = a.V_WB.w;
    b.V_WB.v = ce_add(a.V_WB.v, ce_cross(a.V_WB.w, ce_sub(b.X_WB.p, a.X_WB.p)));
    check_pose(&c, &a, &b, &t);
  }
  fprintf(stderr, "jacobian %-8s poses %2d  matrices checked %3d skipped %3d  worst relative error %.2e\n", c.name,
          t.poses, t.checked, t.skipped, t.worst);
  cr_assert(t.checked >= 30);
  ce_geometry_free(s);
  ce_geometry_free(e);
}

Test(jacobian, unavailable_is_said) {
  ce_geometry *r1 = shape(CE_SHAPE_SPHERE, CE_RIGID, 0.05), *r2 = shape(CE_SHAPE_SPHERE, CE_RIGID, 0.05),
              *s = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.05), *hs = halfspace(CE_RIGID);
  ce_options o = opts(1);
  ce_result r;
  ce_error err;
  /* point contact with a degenerate normal (coincident centres) */
  ce_body a = ce_test_body(r1, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_body b = ce_test_body(r2, ce_quat_identity(), ce_v3(0, 0, 0));
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_expect_eq(r.jacobian_status, CE_JACOBIAN_UNAVAILABLE);
  cr_expect(r.jacobian == NULL && r.jacobian_note && strstr(r.jacobian_note, "point-contact normal is degenerate"), "%s",
            r.jacobian_note);
  /* the triangle representation */
  ce_body c = ce_test_body(s, ce_quat_identity(), ce_v3(0, 0, 0.09));
  ce_body h = ce_test_body(hs, ce_quat_identity(), ce_v3(0, 0, 0));
  o.representation = CE_REPRESENTATION_TRIANGLE;
  cr_assert_eq(ce_contact(&c, &h, &o, arena, &r, &err), CE_OK, "%s", err.message);
  cr_expect_eq(r.jacobian_status, CE_JACOBIAN_UNAVAILABLE);
  cr_expect(r.jacobian_note && strstr(r.jacobian_note, "polygon"), "%s", r.jacobian_note);
  /* apart: zero, available */
  o.representation = CE_REPRESENTATION_POLYGON;
  c.X_WB.p.z = 0.5;
  cr_assert_eq(ce_contact(&c, &h, &o, arena, &r, &err), CE_OK, "%s", err.message);
  cr_expect_eq(r.status, CE_CONTACT_NONE);
  cr_assert_eq(r.jacobian_status, CE_JACOBIAN_OK);
  cr_expect(frob(r.jacobian->d_pose_a) == 0 && frob(r.jacobian->d_velocity_b) == 0);
  /* not asked for */
  o.want_jacobian = 0;
  c.X_WB.p.z = 0.09;
  cr_assert_eq(ce_contact(&c, &h, &o, arena, &r, &err), CE_OK, "%s", err.message);
  cr_expect(r.jacobian_status == CE_JACOBIAN_NOT_REQUESTED && r.jacobian == NULL);
  ce_geometry_free(r1);
  ce_geometry_free(r2);
  ce_geometry_free(s);
  ce_geometry_free(hs);
}

/* The worked example of ce.h: a compliant sphere pressed x into a rigid
 * half space, d fz / d pz of A = -2 pi E x (1 - x/R) for the smooth linear
 * field (the tessellated sphere's own force law differs by a few percent). */
Test(jacobian, sphere_on_plane_normal_stiffness) {
  ce_geometry *s = shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.01), *hs = halfspace(CE_RIGID);
  const double E = 1e6, R = 0.1, x = 0.01; /* the plane runs through a layer of the mesh's vertices */
  ce_body a = ce_test_body(s, ce_quat_identity(), ce_v3(0, 0, R - x));
  ce_body b = ce_test_body(hs, ce_quat_identity(), ce_v3(0, 0, 0));
  ce_options o = opts(1);
  ce_result r;
  ce_error err;
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  cr_assert_eq(r.jacobian_status, CE_JACOBIAN_OK);
  const double kz = r.jacobian->d_pose_a[35], exact = -2 * M_PI * E * x * (1 - x / R);
  cr_expect(fabs(kz - exact) <= 0.05 * fabs(exact), "d fz / d pz = %.6g, smooth sphere %.6g", kz, exact);
  cr_expect(fabs(r.jacobian->d_pose_b[35] + kz) <= 1e-9 * fabs(kz));
  ce_geometry_free(s);
  ce_geometry_free(hs);
}

static void pose_terrain_first(uint64_t *rng, ce_pose *xa, ce_pose *xb) { pose_on_terrain(rng, xb, xa); }

Test(jacobian, terrain_on_compliant) {
  jcase c = {"terr-c", wavy_terrain(), shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.04), CE_JAC_TET_TERRAIN, 0,
             pose_terrain_first};
  run_case(&c, 20, 19);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

Test(jacobian, rigid_halfspace_on_compliant) {
  jcase c = {"hs-c", halfspace(CE_RIGID), shape(CE_SHAPE_ELLIPSOID, CE_COMPLIANT, 0.05), CE_JAC_TET_HALFSPACE, 0,
             pose_on_halfspace_a};
  run_case(&c, 20, 20);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

/* ---- point contact ---------------------------------------------------------- */

/* out[6x3] = the 6x3 block of J at column j0 times [d]x */
static void times_skew(const double *J, int j0, ce_vec3 d, double out[6][3]) {
  const double K[3][3] = {{0, -d.z, d.y}, {d.z, 0, -d.x}, {-d.y, d.x, 0}};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 3; j++) {
      out[i][j] = 0;
      for (int k = 0; k < 3; k++) out[i][j] += J[6 * i + j0 + k] * K[k][j];
    }
}

/* B's matrices from A's by the relative-pose identities of the convention
 * (ce.h, "wrench Jacobians"): with dBA = p_B - p_A and w = wrench_a,
 *   d_pose_b[dp]  = -d_pose_a[dp]
 *   d_pose_b[dth] = S - d_pose_a[dth] - d_pose_a[dp] [dBA]x
 *                   + sum_k (d_velocity_k[w] [w_k]x + d_velocity_k[v] [v_k]x),
 *   S = (-[tau]x; -[f]x),
 *   d_velocity_b[v] = -d_velocity_a[v],
 *   d_velocity_b[w] = -d_velocity_a[w] - d_velocity_a[v] [dBA]x. */
static void identities(const ce_jacobian *J, const ce_body *a, const ce_body *b, const double w[6], ce_jacobian *o) {
  const ce_vec3 dBA = ce_sub(b->X_WB.p, a->X_WB.p);
  double T[6][3], V[6][3], U[6][3];
  times_skew(J->d_pose_a, 3, dBA, T);
  times_skew(J->d_velocity_a, 3, dBA, U);
  const double *jv[2] = {J->d_velocity_a, J->d_velocity_b};
  const ce_body *bd[2] = {a, b};
  for (int k = 0; k < 2; k++) {
    times_skew(jv[k], 0, bd[k]->V_WB.w, V);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 3; j++) T[i][j] -= V[i][j];
    times_skew(jv[k], 3, bd[k]->V_WB.v, V);
    for (int i = 0; i < 6; i++)
      for (int j = 0; j < 3; j++) T[i][j] -= V[i][j];
  }
  for (int i = 0; i < 6; i++) {
    const ce_vec3 q = i < 3 ? ce_v3(w[0], w[1], w[2]) : ce_v3(w[3], w[4], w[5]);
    const double S[3][3] = {{0, q.z, -q.y}, {-q.z, 0, q.x}, {q.y, -q.x, 0}};
    for (int j = 0; j < 3; j++) {
      o->d_pose_b[6 * i + j] = S[i % 3][j] - J->d_pose_a[6 * i + j] - T[i][j];
      o->d_pose_b[6 * i + 3 + j] = -J->d_pose_a[6 * i + 3 + j];
      o->d_velocity_b[6 * i + j] = -J->d_velocity_a[6 * i + j] - U[i][j];
      o->d_velocity_b[6 * i + 3 + j] = -J->d_velocity_a[6 * i + 3 + j];
    }
  }
}

typedef struct pcase {
  const char *name;
  ce_geometry *ga, *gb;
  ce_contact_model model;
  void (*pose)(uint64_t *rng, ce_pose *xa, ce_pose *xb);
} pcase;

static void point_wrench(const pcase *c, const ce_body *a, const ce_body *b, double w[6]) {
  ce_options o = opts(0);
  o.model = c->model;
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(a, b, &o, arena, &r, &err), CE_OK, "%s", err.message);
  const double v[6] = {r.wrench_a.torque.x, r.wrench_a.torque.y, r.wrench_a.torque.z,
                       r.wrench_a.force.x,  r.wrench_a.force.y,  r.wrench_a.force.z};
  memcpy(w, v, sizeof v);
}

/* Central differences of block blk; 0 when the closest features switch
 * within +-h, seen as a kink: the one-sided differences disagree by more
 * than 1e-3 (relative, Frobenius; smooth, they differ by O(h)). */
static int point_central(const pcase *c, const ce_body *a, const ce_body *b, int blk, double J[36]) {
  const int on_b = blk & 1, vel = blk >= 2;
  const double h = vel ? HV : HP;
  double w0[6], Fp[36], Fm[36];
  point_wrench(c, a, b, w0);
  for (int j = 0; j < 6; j++) {
    double wp[6], wm[6];
    ce_body ap = *a, am = *a, bp = *b, bm = *b;
    if (on_b) {
      bp = moved(*b, j + 6 * vel, h);
      bm = moved(*b, j + 6 * vel, -h);
    } else {
      ap = moved(*a, j + 6 * vel, h);
      am = moved(*a, j + 6 * vel, -h);
    }
    point_wrench(c, &ap, &bp, wp);
    point_wrench(c, &am, &bm, wm);
    for (int i = 0; i < 6; i++) {
      J[6 * i + j] = (wp[i] - wm[i]) / (2 * h);
      Fp[6 * i + j] = (wp[i] - w0[i]) / h;
      Fm[6 * i + j] = (w0[i] - wm[i]) / h;
    }
  }
  return rel_diff(Fp, Fm) <= 1e-3;
}

/* 20 poses in contact per pair type, dissipation and friction on, both
 * bodies moving: the four matrices against central differences (1e-4),
 * and B's matrices against the identities applied to A's (1e-9). */
static void run_point_case(const pcase *c, uint64_t seed) {
  tally t = {0, 0, 0, 0};
  double worst_id = 0;
  uint64_t rng = seed;
  for (int tries = 0; t.poses < 20 && tries < 200; tries++) {
    ce_pose xa, xb;
    c->pose(&rng, &xa, &xb);
    ce_body a = body(c->ga, xa, &rng, 1), b = body(c->gb, xb, &rng, 1);
    ce_options o = opts(1);
    o.model = c->model;
    ce_result r;
    ce_error err;
    ce_arena_reset(arena);
    cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
    if (r.status != CE_CONTACT_POINT) continue;
    cr_assert_eq(r.jacobian_status, CE_JACOBIAN_OK, "%s: %s", c->name, r.jacobian_note);
    const ce_jacobian J = *r.jacobian;
    const double w[6] = {r.wrench_a.torque.x, r.wrench_a.torque.y, r.wrench_a.torque.z,
                         r.wrench_a.force.x,  r.wrench_a.force.y,  r.wrench_a.force.z};
    t.poses++;
    ce_jacobian I;
    identities(&J, &a, &b, w, &I);
    for (int blk = 1; blk < 4; blk += 2) {
      const double e = rel_diff(block(&J, blk), block(&I, blk));
      worst_id = fmax(worst_id, e);
      cr_expect(e <= 1e-9, "%s, block %d: relative-pose identity off by %.3g", c->name, blk, e);
    }
    for (int blk = 0; blk < 4; blk++) {
      double F[36];
      if (!point_central(c, &a, &b, blk, F)) {
        t.skipped++;
        continue;
      }
      const double e = rel_diff(block(&J, blk), F);
      t.checked++;
      t.worst = fmax(t.worst, e);
      cr_expect(e <= 1e-4, "%s, block %d: Jacobian differs from central differences by %.3g (Frobenius, relative)",
                c->name, blk, e);
    }
  }
  fprintf(stderr,
          "point jacobian %-14s poses %2d  matrices checked %3d skipped %3d  worst relative error %.2e  "
          "identities %.2e\n",
          c->name, t.poses, t.checked, t.skipped, t.worst, worst_id);
  cr_assert_eq(t.poses, 20, "%s: %d poses in contact", c->name, t.poses);
  cr_assert(t.checked >= 60, "%s: only %d of 80 matrices checked", c->name, t.checked);
}

/* a rigid convex hull of 12 points (an icosahedron of radius 0.1) */
static ce_geometry *icosahedron(void) {
  const double g = (1 + sqrt(5.0)) / 2, s = 0.1 / sqrt(1 + g * g);
  double p[36];
  for (int i = 0; i < 4; i++) {
    const double u = (i & 1 ? 1 : -1) * s, v = (i & 2 ? 1 : -1) * g * s;
    const double q[9] = {0, u, v, u, v, 0, v, 0, u};
    for (int k = 0; k < 3; k++) memcpy(p + 3 * (4 * k + i), q + 3 * k, 3 * sizeof(double));
  }
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.05);
  ce_shape sh = {.type = CE_SHAPE_CONVEX, .points = p, .npoints = 12};
  ce_geometry *out = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&sh, &pr, &out, &err), CE_OK, "%s", err.message);
  return out;
}

static ce_geometry *point_geometry(ce_shape_type t, ce_compliance c) {
  if (t == CE_SHAPE_HALFSPACE) return halfspace(c);
  if (t == CE_SHAPE_HEIGHTFIELD) return wavy_terrain();
  if (t == CE_SHAPE_CONVEX) return icosahedron();
  return shape(t, c, 0.05);
}

static void run_point(const char *name, ce_shape_type ta, ce_compliance ca, ce_shape_type tb, ce_compliance cb,
                      ce_contact_model model, void (*pose)(uint64_t *, ce_pose *, ce_pose *), uint64_t seed) {
  pcase c = {name, point_geometry(ta, ca), point_geometry(tb, cb), model, pose};
  run_point_case(&c, seed);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

Test(jacobian, point_sphere_sphere) {
  run_point("sphere-sphere", CE_SHAPE_SPHERE, CE_RIGID, CE_SHAPE_SPHERE, CE_RIGID,
            CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_pair, 101);
}
Test(jacobian, point_capsule_capsule) {
  run_point("capsule-capsule", CE_SHAPE_CAPSULE, CE_RIGID, CE_SHAPE_CAPSULE, CE_RIGID,
            CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_pair, 102);
}
Test(jacobian, point_sphere_box) {
  run_point("sphere-box", CE_SHAPE_SPHERE, CE_RIGID, CE_SHAPE_BOX, CE_RIGID, CE_MODEL_HYDROELASTIC_WITH_FALLBACK,
            pose_pair, 103);
}
Test(jacobian, point_box_sphere) {
  run_point("box-sphere", CE_SHAPE_BOX, CE_RIGID, CE_SHAPE_SPHERE, CE_RIGID, CE_MODEL_HYDROELASTIC_WITH_FALLBACK,
            pose_pair, 104);
}
Test(jacobian, point_box_box) {
  run_point("box-box", CE_SHAPE_BOX, CE_RIGID, CE_SHAPE_BOX, CE_RIGID, CE_MODEL_HYDROELASTIC_WITH_FALLBACK,
            pose_pair, 105);
}
Test(jacobian, point_on_halfspace) {
  run_point("box-halfspace", CE_SHAPE_BOX, CE_RIGID, CE_SHAPE_HALFSPACE, CE_RIGID,
            CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_on_halfspace_b, 106);
  run_point("halfspace-cyl", CE_SHAPE_HALFSPACE, CE_RIGID, CE_SHAPE_CYLINDER, CE_RIGID,
            CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_on_halfspace_a, 107);
  run_point("ell-halfspace", CE_SHAPE_ELLIPSOID, CE_RIGID, CE_SHAPE_HALFSPACE, CE_RIGID,
            CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_on_halfspace_b, 108);
  run_point("capsule-halfspace", CE_SHAPE_CAPSULE, CE_RIGID, CE_SHAPE_HALFSPACE, CE_RIGID,
            CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_on_halfspace_b, 109);
}
/* the point model asked for compliant bodies (hydroelastic pairs otherwise) */
Test(jacobian, point_model_compliant) {
  run_point("model-point", CE_SHAPE_SPHERE, CE_COMPLIANT, CE_SHAPE_BOX, CE_COMPLIANT, CE_MODEL_POINT, pose_pair, 110);
}
/* rigid bodies on terrain: a sphere, a capsule (its contact point slides
 * along its axis), a box's corners (several contacts, weighted) */
Test(jacobian, point_on_terrain) {
  run_point("sphere-terrain", CE_SHAPE_SPHERE, CE_RIGID, CE_SHAPE_HEIGHTFIELD, CE_RIGID,
            CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_on_terrain, 111);
  run_point("capsule-terrain", CE_SHAPE_CAPSULE, CE_RIGID, CE_SHAPE_HEIGHTFIELD, CE_RIGID,
            CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_on_terrain, 112);
  run_point("terrain-box", CE_SHAPE_HEIGHTFIELD, CE_RIGID, CE_SHAPE_BOX, CE_RIGID,
            CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_terrain_first, 113);
}
/* pairs whose normal comes from GJK/EPA: round against round (the normal
 * from the curvatures), round against a box or a hull (faces and edges fix
 * it, curvature the rest), hull against hull */
Test(jacobian, point_gjk) {
  const ce_contact_model m = CE_MODEL_HYDROELASTIC_WITH_FALLBACK;
  run_point("ell-ell", CE_SHAPE_ELLIPSOID, CE_RIGID, CE_SHAPE_ELLIPSOID, CE_RIGID, m, pose_pair, 121);
  run_point("sphere-ell", CE_SHAPE_SPHERE, CE_RIGID, CE_SHAPE_ELLIPSOID, CE_RIGID, m, pose_pair, 122);
  run_point("ell-box", CE_SHAPE_ELLIPSOID, CE_RIGID, CE_SHAPE_BOX, CE_RIGID, m, pose_pair, 123);
  run_point("cyl-box", CE_SHAPE_CYLINDER, CE_RIGID, CE_SHAPE_BOX, CE_RIGID, m, pose_pair, 124);
  run_point("capsule-box", CE_SHAPE_CAPSULE, CE_RIGID, CE_SHAPE_BOX, CE_RIGID, m, pose_pair, 125);
  run_point("hull-hull", CE_SHAPE_CONVEX, CE_RIGID, CE_SHAPE_CONVEX, CE_RIGID, m, pose_pair, 126);
  run_point("sphere-hull", CE_SHAPE_SPHERE, CE_RIGID, CE_SHAPE_CONVEX, CE_RIGID, m, pose_pair, 127);
  run_point("cyl-cyl", CE_SHAPE_CYLINDER, CE_RIGID, CE_SHAPE_CYLINDER, CE_RIGID, m, pose_pair, 128);
}

/* A rigid L-shaped block (unit thickness) with its convex decomposition:
 * [0,2]x[0,1]x[0,1] and [0,1]x[1,2]x[0,1] (ce_geometry_from_trimesh_pieces). */
static ce_geometry *lblock_pieces(void) {
  static const double out[6][2] = {{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}};
  static const int fan[4][3] = {{3, 4, 5}, {3, 5, 0}, {3, 0, 1}, {3, 1, 2}};
  static const double box[2][2][3] = {{{0, 0, 0}, {2, 1, 1}}, {{0, 1, 0}, {1, 2, 1}}};
  double v[36], pts[48];
  int32_t t[20][3], nt = 0;
  for (int i = 0; i < 6; i++)
    for (int k = 0; k < 2; k++) {
      v[3 * (6 * k + i)] = out[i][0];
      v[3 * (6 * k + i) + 1] = out[i][1];
      v[3 * (6 * k + i) + 2] = k;
    }
  for (int f = 0; f < 4; f++) {
    t[nt][0] = 6 + fan[f][0], t[nt][1] = 6 + fan[f][1], t[nt][2] = 6 + fan[f][2], nt++;
    t[nt][0] = fan[f][0], t[nt][1] = fan[f][2], t[nt][2] = fan[f][1], nt++;
  }
  for (int i = 0; i < 6; i++) {
    const int j = (i + 1) % 6;
    t[nt][0] = i, t[nt][1] = j, t[nt][2] = 6 + j, nt++;
    t[nt][0] = i, t[nt][1] = 6 + j, t[nt][2] = 6 + i, nt++;
  }
  for (int p = 0; p < 2; p++)
    for (int c = 0; c < 8; c++)
      for (int a = 0; a < 3; a++) pts[3 * (8 * p + c) + a] = box[p][(c >> a) & 1][a];
  static const int32_t npts[2] = {8, 8};
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.5);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh_pieces(v, 12, &t[0][0], nt, 1, pts, npts, 2, &pr, &g, &err), CE_OK, "%s",
               err.message);
  return g;
}

/* a sphere (radius 0.1) in the L's notch, touching both pieces */
static void pose_notch(uint64_t *rng, ce_pose *xa, ce_pose *xb) {
  *xb = ce_pose_identity();
  *xa = ce_pose_from_quat(ce_test_rand_quat(rng), ce_v3(1.05 + 0.03 * ce_test_rand(rng),
                                                        1.05 + 0.03 * ce_test_rand(rng), 0.5));
}

/* convex pieces: every penetrating piece pair's contact, summed */
Test(jacobian, point_convex_pieces) {
  pcase c = {"sphere-pieces", shape(CE_SHAPE_SPHERE, CE_RIGID, 0.05), lblock_pieces(),
             CE_MODEL_HYDROELASTIC_WITH_FALLBACK, pose_notch};
  run_point_case(&c, 131);
  ce_geometry_free(c.ga);
  ce_geometry_free(c.gb);
}

/* Two axis-aligned compliant boxes, the finer below, same x and y: whole
 * element faces of the upper box lie in the equal-pressure plane. 40 poses
 * (0.12 to 0.15 m apart, moving): every pose is answered, and the matrices
 * and columns whose topology survives +-h match central differences (1e-4;
 * docs/jacobians.md, "Coverage"). */
Test(jacobian, aligned_boxes) {
  ce_geometry *ga = ce_test_shape(CE_SHAPE_BOX, CE_COMPLIANT, 0.1, ce_v3(0.2, 0.18, 0.16), 0.05);
  ce_geometry *gb = ce_test_shape(CE_SHAPE_BOX, CE_COMPLIANT, 0.1, ce_v3(0.2, 0.18, 0.16), 0.025);
  cr_assert(ga && gb);
  uint64_t rng = 7;
  int refused = 0, checked = 0, skipped = 0, approach = 0;
  double worst = 0, worst_approach = 0;
  for (int k = 0; k < 40; k++) {
    ce_pose xa = ce_pose_identity(), xb = ce_pose_identity();
    xa.p = ce_v3(0, 0, 0.12 + 0.03 * ce_test_rand(&rng));
    ce_body a = body(ga, xa, &rng, 1), b = body(gb, xb, &rng, 1);
    ce_options o = opts(1);
    ce_result r;
    ce_error err;
    ce_arena_reset(arena);
    cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_OK, "%s", err.message);
    cr_assert_eq(r.status, CE_CONTACT_SURFACE, "pose %d: in contact", k);
    if (r.jacobian_status != CE_JACOBIAN_OK) {
      cr_expect(0, "aligned boxes pose %d refused: %s", k, r.jacobian_note ? r.jacobian_note : "(no note)");
      refused++;
      continue;
    }
    const ce_jacobian J = *r.jacobian;
    int32_t nsig;
    int64_t *sig = signature(&r, &nsig);
    for (int blk = 0; blk < 4; blk++) {
      double F[36];
      if (!central(&a, &b, blk, sig, nsig, F)) {
        skipped++;
        continue;
      }
      const double e = rel_diff(block(&J, blk), F);
      checked++;
      worst = fmax(worst, e);
      cr_expect(e <= 1e-4, "aligned boxes pose %d, block %d: %.3g from central differences", k, blk, e);
    }
    /* The approach column (dp z) of both pose matrices: moving either box
     * along z keeps the sides flush and the topology. A sideways move
     * does not (it makes the flush sides' wedges into surface strips on
     * one side or the other: the one-sided derivative is the answer
     * there, and central differences straddle two). */
    for (int blk = 0; blk < 2; blk++) {
      double w[2][6];
      ce_body ap = blk ? a : moved(a, 5, HP), am = blk ? a : moved(a, 5, -HP);
      ce_body bp = blk ? moved(b, 5, HP) : b, bm = blk ? moved(b, 5, -HP) : b;
      if (!wrench_at(&ap, &bp, w[0], sig, nsig) || !wrench_at(&am, &bm, w[1], sig, nsig)) continue;
      double e = 0, n = 0;
      for (int i = 0; i < 6; i++) {
        const double fd = (w[0][i] - w[1][i]) / (2 * HP), jj = block(&J, blk)[6 * i + 5];
        e += (jj - fd) * (jj - fd);
        n += fd * fd;
      }
      approach++;
      worst_approach = fmax(worst_approach, sqrt(e / n));
      cr_expect(sqrt(e) <= 1e-4 * sqrt(n), "aligned boxes pose %d, block %d, approach column: %.3g relative", k, blk,
                sqrt(e / n));
    }
    free(sig);
  }
  fprintf(stderr,
          "jacobian aligned boxes: 40 poses, %d refused, matrices checked %d skipped %d, worst %.2e; approach "
          "columns checked %d, worst %.2e\n",
          refused, checked, skipped, worst, approach, worst_approach);
  /* every pose answered; the velocity matrices and the approach columns
   * keep the topology at every pose */
  cr_assert(refused == 0 && checked >= 80 && approach == 80, "%d refused, %d matrices and %d approach columns checked",
            refused, checked, approach);
  ce_geometry_free(ga);
  ce_geometry_free(gb);
}
