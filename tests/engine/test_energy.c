/* test_energy.c — strain energy (ce_energy.c): closed forms, the energy as
 * the potential of the elastic wrench, and the option's bookkeeping. */
#include <criterion/criterion.h>
#include <criterion/logging.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static const double E = 1e6;

static ce_geometry *halfspace(ce_compliance c, double slab) {
  ce_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.type = CE_SHAPE_HALFSPACE;
  ce_props pr = ce_test_props(c, c == CE_COMPLIANT ? E : 0, 1);
  pr.slab_thickness = slab;
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&sh, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

static ce_body body_at(const ce_geometry *g, ce_pose X) {
  ce_body b = ce_test_body(g, (ce_quat){1, 0, 0, 0}, ce_v3(0, 0, 0));
  b.X_WB = X;
  return b;
}

static ce_pose pose(ce_quat q, ce_vec3 p) { return ce_pose_from_quat(q, p); }
static const ce_quat I = {1, 0, 0, 0};

/* ce_contact with energy (and patches) on; the arena is reset first. */
static ce_result query(const ce_body *a, const ce_body *b, int energy, int surface, ce_arena *ar) {
  ce_options o;
  ce_options_default(&o);
  o.want_energy = energy;
  o.want_patches = 1;
  o.want_surface = surface;
  ce_result r;
  ce_error err;
  ce_arena_reset(ar);
  cr_assert_eq(ce_contact(a, b, &o, ar, &r, &err), CE_OK, "%s", err.message);
  return r;
}

static double energy_of(const ce_geometry *ga, ce_pose Xa, const ce_geometry *gb, ce_pose Xb, ce_arena *ar) {
  ce_body a = body_at(ga, Xa), b = body_at(gb, Xb);
  ce_result r = query(&a, &b, 1, 0, ar);
  cr_assert_eq(r.energy, CE_ENERGY_EXACT);
  return r.strain_energy;
}

/* U(d) of a compliant sphere (R, E, p = E (1 - r/R)) pressed d into a rigid
 * plane: integral over the cap of p, pi E (d^3/3 - d^4/(6R)). */
static double sphere_cap_energy(double R, double d) { return M_PI * E * (d * d * d / 3 - d * d * d * d / (6 * R)); }

Test(energy, sphere_on_rigid_halfspace_converges) {
  const double R = 0.1, d = 0.02;
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *hs = halfspace(CE_RIGID, 0);
  double prev = INFINITY, rel = 0;
  for (int k = 2; k <= 16; k *= 2) {
    ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, R, ce_v3(0, 0, 0), R / k);
    cr_assert_not_null(s);
    double U = energy_of(s, pose(I, ce_v3(0, 0, R - d)), hs, pose(I, ce_v3(0, 0, 0)), ar);
    rel = fabs(U / sphere_cap_energy(R, d) - 1);
    cr_log_info("sphere on rigid plane, hint R/%d: U = %.6g J, relative error %.3g", k, U, rel);
    cr_expect(rel < prev, "hint R/%d: error %.3g did not shrink (was %.3g)", k, rel, prev);
    prev = rel;
    ce_geometry_free(s);
  }
  cr_expect(rel < 0.01, "hint R/16: relative error %.3g", rel);
  ce_geometry_free(hs);
  ce_arena_destroy(ar);
}

/* The medial-axis box's field p = E dist / H (H the smallest half size) is
 * exact in every tet, so the energy of the box flat on a rigid plane at
 * depth d <= H is exact: with half sizes a, b of the bottom face,
 * U = (4E/H)(a b d^2/2 - (a + b) d^3/6 + d^4/12). */
Test(energy, box_flat_on_rigid_halfspace_exact) {
  const double a = 0.1, b = 0.08, c = 0.05; /* half sizes; H = c */
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *hs = halfspace(CE_RIGID, 0);
  ce_geometry *box = ce_test_shape(CE_SHAPE_BOX, CE_COMPLIANT, 0, ce_v3(2 * a, 2 * b, 2 * c), 0.02);
  cr_assert_not_null(box);
  const double ds[] = {1e-4, 0.003, 0.017, 0.04, 0.05};
  for (int i = 0; i < 5; i++) {
    double d = ds[i];
    double want = 4 * E / c * (a * b * d * d / 2 - (a + b) * d * d * d / 6 + d * d * d * d / 12);
    ce_quat q = ce_quat_from_axis_angle(ce_v3(0, 0, 1), 0.3 * i);
    double U = energy_of(box, pose(q, ce_v3(0.01 * i, -0.02, c - d)), hs, pose(I, ce_v3(0, 0, 0)), ar);
    cr_expect(ce_test_close(U, want, 1e-12, 0), "d = %g: U = %.17g, closed form %.17g (rel %.3g)", d, U, want,
              U / want - 1);
  }
  ce_geometry_free(box);
  ce_geometry_free(hs);
  ce_arena_destroy(ar);
}

/* Two identical compliant spheres overlapping by delta hold, by symmetry,
 * twice the energy of one pressed delta/2 into a plane. */
Test(energy, two_spheres_twice_one_on_a_plane) {
  const double R = 0.1, delta = 0.03;
  ce_arena *ar = ce_arena_create(1 << 22);
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, R, ce_v3(0, 0, 0), R / 16);
  ce_geometry *hs = halfspace(CE_RIGID, 0);
  cr_assert_not_null(s);
  /* B mirrored (rotated by pi about x) so the meshes are mirror images */
  double Ucc = energy_of(s, pose(I, ce_v3(0, 0, R - delta / 2)), s,
                         pose((ce_quat){0, 1, 0, 0}, ce_v3(0, 0, -(R - delta / 2))), ar);
  double Uplane = energy_of(s, pose(I, ce_v3(0, 0, R - delta / 2)), hs, pose(I, ce_v3(0, 0, 0)), ar);
  double Uexact = 2 * sphere_cap_energy(R, delta / 2);
  cr_log_info("two spheres: U = %.6g J; 2 x one on a plane %.6g; closed form %.6g", Ucc, 2 * Uplane, Uexact);
  cr_expect(ce_test_close(Ucc, 2 * Uplane, 1e-9, 0), "U = %.12g vs 2 x %.12g", Ucc, Uplane);
  cr_expect(ce_test_close(Ucc, Uexact, 0.01, 0), "U = %.6g vs closed form %.6g", Ucc, Uexact);
  /* and with B turned, the meshes no longer mirror: mesh tolerance only */
  double Uturn = energy_of(s, pose(I, ce_v3(0, 0, R - delta / 2)), s,
                           pose(ce_quat_from_axis_angle(ce_v3(1, 1, 0), 2.0), ce_v3(0, 0, -(R - delta / 2))), ar);
  cr_expect(ce_test_close(Uturn, Uexact, 0.02, 0), "turned: U = %.6g vs closed form %.6g", Uturn, Uexact);
  ce_geometry_free(hs);
  ce_geometry_free(s);
  ce_arena_destroy(ar);
}

/* A rigid convex mesh: a box face against the sphere gives the rigid plane's
 * energy (the same tets clipped by the same plane); a sphere wholly inside
 * the box gives the whole mesh's integral of p (found by the flood fill). */
Test(energy, convex_rigid_mesh_matches_plane_and_whole_body) {
  const double R = 0.1, d = 0.025;
  ce_arena *ar = ce_arena_create(1 << 22);
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, R, ce_v3(0, 0, 0), R / 8);
  ce_geometry *box = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(1, 1, 1), 1);
  ce_geometry *hs = halfspace(CE_RIGID, 0);
  cr_assert(s && box);
  ce_pose Xs = pose(ce_quat_from_axis_angle(ce_v3(1, 2, 3), 0.7), ce_v3(0.05, -0.1, R - d));
  double Ubox = energy_of(s, Xs, box, pose(I, ce_v3(0, 0, -0.5)), ar);
  double Uhs = energy_of(s, Xs, hs, pose(I, ce_v3(0, 0, 0)), ar);
  cr_expect(ce_test_close(Ubox, Uhs, 1e-12, 0), "box face %.17g vs plane %.17g", Ubox, Uhs);
  /* the rigid box as body A: the same energy */
  double Uswap = energy_of(box, pose(I, ce_v3(0, 0, -0.5)), s, Xs, ar);
  cr_expect(ce_test_close(Uswap, Uhs, 1e-12, 0), "swapped %.17g vs plane %.17g", Uswap, Uhs);
  double whole = 0;
  const ce_tetmesh *T = &s->tet;
  for (int32_t t = 0; t < T->nt; t++) {
    ce_vec3 x[4];
    double p = 0;
    for (int i = 0; i < 4; i++) {
      x[i] = T->v[T->tet[t][i]];
      p += T->p[T->tet[t][i]];
    }
    double vol = ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0]))) / 6;
    whole += vol * p / 4;
  }
  double Uin = energy_of(s, pose(I, ce_v3(0.1, 0, -0.4)), box, pose(I, ce_v3(0, 0, -0.5)), ar);
  cr_expect(ce_test_close(Uin, whole, 1e-12, 0), "inside: %.17g vs the whole mesh %.17g", Uin, whole);
  ce_geometry_free(hs);
  ce_geometry_free(box);
  ce_geometry_free(s);
  ce_arena_destroy(ar);
}

/* ---- the energy is the potential of the elastic wrench -------------------- */

typedef struct fingerprint { int64_t polygons, candidates, dropped; int32_t nv; } fingerprint;

static double energy_fp(const ce_body *a, const ce_body *b, ce_arena *ar, fingerprint *fp, ce_wrench *w) {
  ce_result r = query(a, b, 1, 1, ar);
  cr_assert_eq(r.energy, CE_ENERGY_EXACT);
  fp->polygons = r.polygons;
  fp->candidates = r.candidate_pairs;
  fp->dropped = r.faces_dropped;
  fp->nv = r.surface.nf > 0 ? r.surface.face_offsets[r.surface.nf] : 0; /* corners: vertex sharing may vary */
  if (w) *w = r.wrench_a;
  return r.strain_energy;
}

/* Against a compliant half space the equal-pressure surface meets the
 * slab's boundary plane exactly on M's boundary (both pressures are 0
 * there), so its corner count there changes with rounding: corners are
 * not compared for that pair (corners = 0). */
static int same_fp(fingerprint x, fingerprint y, int corners) {
  return x.polygons == y.polygons && x.candidates == y.candidates && (!corners || x.nv == y.nv) &&
         x.dropped == y.dropped;
}

/* Checks force = -dU/dp_A and torque (about A's origin) = -dU/dtheta_A by
 * central differences. Returns 1 when checked, 0 when skipped (the surface
 * changed between the evaluations or the gradient rule dropped faces). */
static int check_gradient(const ce_body *a0, const ce_body *b, double L, int corners, ce_arena *ar, double *worst) {
  fingerprint f0, fp, fm;
  ce_wrench w;
  energy_fp(a0, b, ar, &f0, &w);
  if (f0.dropped > 0 || f0.polygons == 0) {
    cr_log_info("skip: %lld polygons, %lld dropped", (long long)f0.polygons, (long long)f0.dropped);
    return 0;
  }
  double g[6];
  const double ht = 1e-7 * L, hr = 1e-6;
  for (int k = 0; k < 6; k++) {
    ce_body ap = *a0, am = *a0;
    ce_vec3 e = ce_v3(k % 3 == 0, k % 3 == 1, k % 3 == 2);
    if (k < 3) {
      ce_mat3 Rp = ce_pose_from_quat(ce_quat_from_axis_angle(e, hr), ce_v3(0, 0, 0)).R;
      ce_mat3 Rm = ce_pose_from_quat(ce_quat_from_axis_angle(e, -hr), ce_v3(0, 0, 0)).R;
      ap.X_WB.R = ce_mat3_mul(&Rp, &a0->X_WB.R);
      am.X_WB.R = ce_mat3_mul(&Rm, &a0->X_WB.R);
    } else {
      ap.X_WB.p = ce_axpy(a0->X_WB.p, ht, e);
      am.X_WB.p = ce_axpy(a0->X_WB.p, -ht, e);
    }
    double up = energy_fp(&ap, b, ar, &fp, NULL), um = energy_fp(&am, b, ar, &fm, NULL);
    if (!same_fp(fp, f0, corners) || !same_fp(fm, f0, corners)) {
      cr_log_info("skip: component %d changes the surface: %lld/%lld/%d -> %lld/%lld/%d, %lld/%lld/%d", k, (long long)f0.polygons, (long long)f0.candidates, f0.nv, (long long)fp.polygons, (long long)fp.candidates, fp.nv, (long long)fm.polygons, (long long)fm.candidates, fm.nv);
      return 0;
    }
    g[k] = -(up - um) / (2 * (k < 3 ? hr : ht));
  }
  ce_vec3 tau = ce_v3(g[0], g[1], g[2]), F = ce_v3(g[3], g[4], g[5]);
  double scale = ce_norm(w.force) + ce_norm(w.torque) / L;
  double err = ce_norm(ce_sub(F, w.force)) + ce_norm(ce_sub(tau, w.torque)) / L;
  cr_expect(err <= 1e-6 * scale, "-grad U = (%.9g %.9g %.9g | %.9g %.9g %.9g), wrench (%.9g %.9g %.9g | %.9g %.9g %.9g)",
            tau.x, tau.y, tau.z, F.x, F.y, F.z, w.torque.x, w.torque.y, w.torque.z, w.force.x, w.force.y,
            w.force.z);
  if (err / scale > *worst) *worst = err / scale;
  return 1;
}

typedef void (*pose_gen)(uint64_t *rng, ce_pose *Xa, ce_pose *Xb);

static void run_gradient_case(const char *what, const ce_geometry *ga, const ce_geometry *gb, pose_gen gen,
                              double L, int corners) {
  ce_arena *ar = ce_arena_create(1 << 22);
  uint64_t rng = 0x9E3779B97F4A7C15ULL;
  int checked = 0;
  double worst = 0;
  for (int i = 0; i < 20; i++) {
    ce_pose Xa, Xb;
    gen(&rng, &Xa, &Xb);
    ce_body a = body_at(ga, Xa), b = body_at(gb, Xb);
    checked += check_gradient(&a, &b, L, corners, ar, &worst);
  }
  cr_log_info("%s: %d of 20 poses checked, worst relative difference %.3g", what, checked, worst);
  cr_expect(checked >= 12, "%s: only %d of 20 poses kept their surface's topology", what, checked);
  ce_arena_destroy(ar);
}

static ce_vec3 rand_dir(uint64_t *rng) {
  double z = 2 * ce_test_rand(rng) - 1, phi = 2 * M_PI * ce_test_rand(rng), s = sqrt(1 - z * z);
  return ce_v3(s * cos(phi), s * sin(phi), z);
}

static void gen_cc(uint64_t *rng, ce_pose *Xa, ce_pose *Xb) {
  double delta = 0.1 * (0.1 + 0.3 * ce_test_rand(rng));
  *Xa = pose(ce_test_rand_quat(rng), ce_v3(0, 0, 0));
  ce_vec3 dir = rand_dir(rng);
  *Xb = pose(ce_test_rand_quat(rng), ce_scale(dir, 0.2 - delta));
}

/* a rigid box (half sizes 0.06, 0.05, 0.04) poking a corner or edge a depth
 * d along u into the sphere (R = 0.1) at the origin: its faces there face
 * the sphere's centre, so the gradient rule keeps them */
static void gen_c_rigid(uint64_t *rng, ce_pose *Xa, ce_pose *Xb) {
  const double h[3] = {0.06, 0.05, 0.04};
  *Xa = pose(ce_test_rand_quat(rng), ce_v3(0, 0, 0));
  ce_quat q = ce_test_rand_quat(rng);
  ce_pose X = pose(q, ce_v3(0, 0, 0));
  ce_vec3 u = rand_dir(rng);
  double ext = 0;
  for (int i = 0; i < 3; i++) ext += h[i] * fabs(X.R.m[0][i] * u.x + X.R.m[1][i] * u.y + X.R.m[2][i] * u.z);
  double d = 0.01 + 0.02 * ce_test_rand(rng);
  *Xb = pose(q, ce_scale(u, 0.1 - d + ext));
}

static void gen_c_halfspace(uint64_t *rng, ce_pose *Xa, ce_pose *Xb) {
  double d = 0.1 * (0.1 + 0.3 * ce_test_rand(rng));
  *Xb = pose(ce_quat_from_axis_angle(rand_dir(rng), 0.3 * ce_test_rand(rng)), ce_v3(0, 0, 0));
  ce_vec3 n = ce_v3(Xb->R.m[0][2], Xb->R.m[1][2], Xb->R.m[2][2]);
  ce_vec3 t = ce_v3(0.1 * ce_test_rand(rng), 0.1 * ce_test_rand(rng), 0);
  *Xa = pose(ce_test_rand_quat(rng), ce_axpy(ce_sub(t, ce_scale(n, ce_dot(n, t))), 0.1 - d, n));
}

/* a rigid box (half sizes 0.1, 0.075, 0.05) tilted into a compliant plane */
static void gen_rigid_halfspace(uint64_t *rng, ce_pose *Xa, ce_pose *Xb) {
  ce_quat q = ce_test_rand_quat(rng);
  ce_pose X = pose(q, ce_v3(0, 0, 0));
  double low = INFINITY;
  for (int i = 0; i < 8; i++) {
    ce_vec3 c = ce_v3(i & 1 ? 0.1 : -0.1, i & 2 ? 0.075 : -0.075, i & 4 ? 0.05 : -0.05);
    low = fmin(low, ce_pose_apply(&X, c).z);
  }
  double d = 0.005 + 0.025 * ce_test_rand(rng);
  *Xa = pose(q, ce_v3(0.3 * ce_test_rand(rng), 0, -low - d));
  *Xb = pose(I, ce_v3(0, 0, 0));
}

Test(energy, potential_compliant_compliant) {
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.025);
  cr_assert_not_null(s);
  run_gradient_case("compliant-compliant", s, s, gen_cc, 0.1, 1);
  ce_geometry_free(s);
}

Test(energy, potential_compliant_rigid) {
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.025);
  ce_geometry *box = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(0.12, 0.1, 0.08), 1);
  cr_assert(s && box);
  run_gradient_case("compliant-rigid mesh", s, box, gen_c_rigid, 0.1, 1);
  ce_geometry_free(box);
  ce_geometry_free(s);
}

Test(energy, potential_compliant_halfspace) {
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.025);
  ce_geometry *hr = halfspace(CE_RIGID, 0), *hc = halfspace(CE_COMPLIANT, 0.5);
  cr_assert_not_null(s);
  run_gradient_case("compliant-rigid half space", s, hr, gen_c_halfspace, 0.1, 1);
  run_gradient_case("compliant-compliant half space", s, hc, gen_c_halfspace, 0.1, 0);
  ce_geometry_free(hc);
  ce_geometry_free(hr);
  ce_geometry_free(s);
}

Test(energy, potential_rigid_mesh_compliant_halfspace) {
  ce_geometry *box = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(0.2, 0.15, 0.1), 1);
  ce_geometry *hc = halfspace(CE_COMPLIANT, 0.5);
  cr_assert_not_null(box);
  run_gradient_case("rigid mesh-compliant half space", box, hc, gen_rigid_halfspace, 0.1, 1);
  ce_geometry_free(hc);
  ce_geometry_free(box);
}

/* Along a closed path of poses the elastic wrench does no work: the
 * trapezoidal sum of F . dp + tau . dtheta around a loop (translation on a
 * circle, rotation about a fixed axis through A's origin, so rotations
 * commute) vanishes up to the rule's O(1/n^2) error. */
Test(energy, closed_path_does_no_work) {
  ce_arena *ar = ce_arena_create(1 << 22);
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.025);
  ce_geometry *box = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(0.3, 0.3, 0.3), 1);
  cr_assert(s && box);
  const int n = 200;
  const ce_vec3 axis = ce_normalize(ce_v3(1, 2, 2));
  ce_body b = body_at(box, pose(I, ce_v3(0, 0, -0.15)));
  double work = 0, absw = 0, Umax = 0;
  ce_wrench w_prev = {ce_v3(0, 0, 0), ce_v3(0, 0, 0)};
  ce_vec3 p_prev = ce_v3(0, 0, 0);
  double th_prev = 0;
  for (int i = 0; i <= n; i++) {
    double s_ = 2 * M_PI * i / n;
    ce_vec3 p = ce_v3(0.02 * cos(s_), 0.02 * sin(s_), 0.08 + 0.005 * sin(2 * s_));
    double th = 0.4 * sin(s_);
    ce_body a = body_at(s, pose(ce_quat_from_axis_angle(axis, th), p));
    ce_result r = query(&a, &b, 1, 0, ar);
    Umax = fmax(Umax, r.strain_energy);
    if (i > 0) {
      double dw = 0.5 * (ce_dot(ce_add(r.wrench_a.force, w_prev.force), ce_sub(p, p_prev)) +
                         ce_dot(ce_add(r.wrench_a.torque, w_prev.torque), axis) * (th - th_prev));
      work += dw;
      absw += fabs(dw);
    }
    w_prev = r.wrench_a;
    p_prev = p;
    th_prev = th;
  }
  cr_log_info("closed path: work %.3g J, sum |dW| %.3g J, max U %.3g J", work, absw, Umax);
  cr_expect(fabs(work) <= 1e-4 * absw, "work %.3g J around the loop (sum |dW| %.3g J)", work, absw);
  ce_geometry_free(box);
  ce_geometry_free(s);
  ce_arena_destroy(ar);
}

/* ---- bookkeeping ------------------------------------------------------------ */

Test(energy, off_changes_nothing_and_patches_sum_to_total) {
  ce_arena *ar = ce_arena_create(1 << 22);
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.025);
  cr_assert_not_null(s);
  ce_body a = body_at(s, pose(I, ce_v3(0, 0, 0))), b = body_at(s, pose(I, ce_v3(0.05, 0.1, 0.12)));
  ce_result off = query(&a, &b, 0, 0, ar);
  ce_wrench w_off = off.wrench_a;
  ce_patch t_off = off.total;
  ce_result on = query(&a, &b, 1, 0, ar);
  cr_expect_eq(off.energy, CE_ENERGY_NONE);
  cr_expect_eq(off.strain_energy, 0);
  cr_expect_eq(memcmp(&w_off, &on.wrench_a, sizeof w_off), 0, "the wrench changed with energy on");
  t_off.strain_energy = on.total.strain_energy;
  cr_expect_eq(memcmp(&t_off, &on.total, sizeof t_off), 0, "the total patch changed with energy on");
  cr_expect_gt(on.strain_energy, 0);
  double sum = 0;
  for (int32_t i = 0; i < on.npatches; i++) sum += on.patches[i].strain_energy;
  cr_expect(ce_test_close(sum, on.strain_energy, 1e-12, 0), "patches %.17g, pair %.17g", sum, on.strain_energy);
  ce_geometry_free(s);
  ce_arena_destroy(ar);
}

/* Point contact: the elastic part fn = k x of its law stores k x^2 / 2. */
Test(energy, point_contact_force_law) {
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_RIGID, 0.1, ce_v3(0, 0, 0), 0.05);
  cr_assert_not_null(s);
  ce_body a = body_at(s, pose(I, ce_v3(0, 0, 0))), b = body_at(s, pose(I, ce_v3(0, 0, 0.19)));
  ce_result r = query(&a, &b, 1, 0, ar);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_expect_eq(r.energy, CE_ENERGY_FORCE_LAW);
  double want = 0.5 * r.point.stiffness * r.point.depth * r.point.depth;
  cr_expect(ce_test_close(r.strain_energy, want, 1e-15, 0), "%.17g vs %.17g", r.strain_energy, want);
  cr_expect(ce_test_close(r.point.depth, 0.01, 1e-9, 0));
  cr_assert_eq(r.npatches, 1);
  cr_expect_eq(r.patches[0].strain_energy, r.strain_energy);
  ce_geometry_free(s);
  ce_arena_destroy(ar);
}

/* A compliant half space against a non-convex closed rigid mesh (the
 * L-shaped block, footprint area 3, height h): the divergence theorem is
 * exact for any closed mesh. Its field (E/s) depth integrated over the
 * submerged part: (E/s) 3 d^2/2 at depth d <= h, (E/s) 3 h (d - h/2) once
 * wholly under. */
Test(energy, compliant_halfspace_nonconvex_rigid_mesh_exact) {
  ce_arena *ar = ce_arena_create(1 << 20);
  const double h = 0.1, s = 0.5;
  size_t len;
  char *obj = ce_test_obj_lblock(h, &len);
  ce_mesh_data md;
  ce_error err;
  cr_assert_eq(ce_mesh_parse(obj, len, CE_MESH_OBJ, 0, &md, &err), CE_OK, "%s", err.message);
  ce_props pr = ce_test_props(CE_RIGID, 0, 1);
  ce_geometry *l = NULL;
  cr_assert_eq(ce_geometry_from_trimesh(md.vertices, md.nv, md.tris, md.ntri, 1, &pr, &l, &err), CE_OK, "%s",
               err.message);
  ce_geometry *hc = halfspace(CE_COMPLIANT, s);
  const double ds[] = {0.01, 0.07, 0.25};
  for (int i = 0; i < 3; i++) {
    double d = ds[i];
    double want = d <= h ? E / s * 3 * d * d / 2 : E / s * 3 * h * (d - h / 2);
    ce_quat q = ce_quat_from_axis_angle(ce_v3(0, 0, 1), 0.4 * i);
    double U = energy_of(hc, pose(I, ce_v3(0, 0, 0)), l, pose(q, ce_v3(0.3, -0.2, -d)), ar);
    cr_expect(ce_test_close(U, want, 1e-12, 0), "d = %g: U = %.17g, closed form %.17g", d, U, want);
  }
  ce_geometry_free(hc);
  ce_geometry_free(l);
  ce_mesh_data_free(&md);
  free(obj);
  ce_arena_destroy(ar);
}

/* ---- non-convex closed rigid meshes and terrains (signed prisms) ----------- */

static ce_geometry *rigid_trimesh(const double *v, int32_t nv, const int32_t *f, int32_t nf, int closed) {
  ce_props pr = ce_test_props(CE_RIGID, 0, 1);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh(v, nv, f, nf, closed, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

/* The L-shaped block of ce_test_obj_lblock (footprint: the unit squares at
 * (0, 0), (1, 0), (0, 1); height h), closed, or open with one side
 * triangle left out. */
static ce_geometry *lblock(double h, int open) {
  size_t len;
  char *obj = ce_test_obj_lblock(h, &len);
  ce_mesh_data md;
  ce_error err;
  cr_assert_eq(ce_mesh_parse(obj, len, CE_MESH_OBJ, 0, &md, &err), CE_OK, "%s", err.message);
  ce_geometry *g = rigid_trimesh(md.vertices, md.nv, md.tris, md.ntri - open, !open);
  ce_mesh_data_free(&md);
  free(obj);
  return g;
}

/* A channel along y (|y| <= 0.5): the U-shaped section |x| <= 0.5,
 * -0.45 <= z <= 0, with the groove |x| < g, z > -0.35 taken out. */
static ce_geometry *u_channel(double g) {
  const double P[10][2] = {{-0.5, -0.45}, {0.5, -0.45}, {0.5, -0.35}, {0.5, 0}, {g, 0},
                           {g, -0.35},    {-g, -0.35},  {-g, 0},      {-0.5, 0}, {-0.5, -0.35}};
  /* the section (x, z) in triangles, counter-clockwise */
  static const int32_t sec[8][3] = {{0, 1, 2}, {0, 2, 5}, {0, 5, 6}, {0, 6, 9},
                                    {5, 2, 3}, {5, 3, 4}, {9, 6, 7}, {9, 7, 8}};
  double v[20 * 3];
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 10; i++) {
      v[3 * (10 * k + i)] = P[i][0];
      v[3 * (10 * k + i) + 1] = k ? 0.5 : -0.5;
      v[3 * (10 * k + i) + 2] = P[i][1];
    }
  int32_t f[36 * 3], nf = 0;
  for (int t = 0; t < 8; t++) { /* y = -0.5 faces -y: (x, z) counter-clockwise; y = +0.5 reversed */
    const int32_t front[3] = {sec[t][0], sec[t][1], sec[t][2]}, back[3] = {sec[t][0] + 10, sec[t][2] + 10, sec[t][1] + 10};
    memcpy(&f[3 * nf++], front, sizeof front);
    memcpy(&f[3 * nf++], back, sizeof back);
  }
  for (int i = 0; i < 10; i++) { /* the sides along the section's boundary */
    int32_t a = i, b = (i + 1) % 10;
    const int32_t t0[3] = {a, b + 10, b}, t1[3] = {a, a + 10, b + 10};
    memcpy(&f[3 * nf++], t0, sizeof t0);
    memcpy(&f[3 * nf++], t1, sizeof t1);
  }
  return rigid_trimesh(v, 20, f, nf, 1);
}

static ce_geometry *terrain(const double *z, int32_t n, double dx, ce_vec3 origin) {
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.1);
  ce_geometry *t = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_heightfield(z, n, n, dx, dx, origin, 1, &pr, &t, &err), CE_OK, "%s", err.message);
  return t;
}

/* A rigid half space whose boundary passes through o with outward normal n. */
static ce_pose plane_pose(ce_vec3 o, ce_vec3 n) {
  ce_vec3 ax = ce_cross(ce_v3(0, 0, 1), n);
  double s = ce_norm(ax);
  ce_quat q = s > 0 ? ce_quat_from_axis_angle(ce_scale(ax, 1 / s), atan2(s, n.z)) : I;
  return pose(q, o);
}

/* |x / y - 1|, kept in *worst */
static void track(double x, double y, double *worst) {
  double r = fabs(x / y - 1);
  if (r > *worst) *worst = r;
}

static double medial_box_energy(double a, double b, double c, double d) {
  return 4 * E / c * (a * b * d * d / 2 - (a + b) * d * d * d / 6 + d * d * d * d / 12);
}

/* The medial-axis box pressed flat into the top of the non-convex L-block,
 * once beside its inner corner and once in an arm: the closed form of a
 * rigid plane. */
Test(energy, nonconvex_rigid_mesh_flat_face_is_the_plane) {
  const double a = 0.1, b = 0.08, c = 0.05, h = 0.1;
  ce_arena *ar = ce_arena_create(1 << 22);
  ce_geometry *l = lblock(h, 0), *hs = halfspace(CE_RIGID, 0);
  ce_geometry *box = ce_test_shape(CE_SHAPE_BOX, CE_COMPLIANT, 0, ce_v3(2 * a, 2 * b, 2 * c), 0.02);
  cr_assert(box && !l->convex);
  double worst = 0;
  const double ds[] = {1e-4, 0.017, 0.05};
  for (int i = 0; i < 6; i++) {
    double d = ds[i % 3];
    ce_quat q = ce_quat_from_axis_angle(ce_v3(0, 0, 1), 0.3 * i);
    ce_vec3 at = i < 3 ? ce_v3(0.85, 0.86, h + c - d) : ce_v3(1.6, 0.3, h + c - d);
    double U = energy_of(box, pose(q, at), l, pose(I, ce_v3(0, 0, 0)), ar);
    double Uhs = energy_of(box, pose(q, at), hs, pose(I, ce_v3(0, 0, h)), ar);
    double want = medial_box_energy(a, b, c, d);
    cr_expect(ce_test_close(U, want, 1e-9, 0), "d = %g: U = %.17g, closed form %.17g", d, U, want);
    cr_expect(ce_test_close(U, Uhs, 1e-9, 0), "d = %g: U = %.17g, rigid plane %.17g", d, U, Uhs);
    track(U, want, &worst);
  }
  cr_log_info("box on the L-block: worst relative difference to the closed form %.3g", worst);
  ce_geometry_free(box);
  ce_geometry_free(hs);
  ce_geometry_free(l);
  ce_arena_destroy(ar);
}

/* A sphere in a U-shaped channel narrower than it touches the two inner
 * walls, two separate faces, and holds the sum of the energies of the two
 * rigid planes through them, each wall's in its own patch; the whole scene
 * turned and moved. */
Test(energy, channel_two_faces_sum_two_planes) {
  const double R = 0.1, d = 0.02, g = R - d;
  ce_arena *ar = ce_arena_create(1 << 22);
  ce_geometry *u = u_channel(g), *hs = halfspace(CE_RIGID, 0);
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, R, ce_v3(0, 0, 0), R / 8);
  cr_assert(s && !u->convex);
  double worst = 0;
  for (int i = 0; i < 3; i++) {
    ce_pose G = pose(i ? ce_quat_from_axis_angle(ce_v3(1, -2, 0.5), 0.9 * i) : I, ce_v3(0.3 * i, -0.1, 0.2));
    ce_pose Xs = pose(ce_quat_from_axis_angle(ce_v3(0.3, 1, 2), 0.5 + i), ce_v3(0, 0.03 * i, -0.15));
    ce_pose Wr = plane_pose(ce_v3(g, 0, 0), ce_v3(-1, 0, 0)), Wl = plane_pose(ce_v3(-g, 0, 0), ce_v3(1, 0, 0));
    ce_pose GXs = ce_pose_compose(&G, &Xs), GWr = ce_pose_compose(&G, &Wr), GWl = ce_pose_compose(&G, &Wl);
    double Ur = energy_of(s, GXs, hs, GWr, ar), Ul = energy_of(s, GXs, hs, GWl, ar);
    ce_body ba = body_at(s, GXs), bb = body_at(u, G);
    ce_result r = query(&ba, &bb, 1, 0, ar);
    cr_assert_eq(r.energy, CE_ENERGY_EXACT);
    const double U = r.strain_energy;
    /* one patch per wall, each holding its wall's energy */
    cr_assert_eq(r.npatches, 2);
    double p0 = r.patches[0].strain_energy, p1 = r.patches[1].strain_energy;
    double lo = fmin(p0, p1), hi = fmax(p0, p1);
    cr_expect(ce_test_close(lo, fmin(Ur, Ul), 1e-9, 0) && ce_test_close(hi, fmax(Ur, Ul), 1e-9, 0),
              "pose %d: patches %.17g %.17g, walls %.17g %.17g", i, p0, p1, Ur, Ul);
    cr_expect_gt(Ur, 0);
    cr_expect_gt(Ul, 0);
    cr_expect(ce_test_close(U, Ur + Ul, 1e-9, 0), "pose %d: U = %.17g, two planes %.17g + %.17g", i, U, Ur, Ul);
    track(U, Ur + Ul, &worst);
  }
  cr_log_info("sphere in the channel: worst relative difference to two planes %.3g", worst);
  ce_geometry_free(s);
  ce_geometry_free(hs);
  ce_geometry_free(u);
  ce_arena_destroy(ar);
}

/* A convex box taken through the general closed-mesh path (its convexity
 * flag cleared) gives the convex path's energy: a sphere poking a face,
 * an edge or a corner, and one wholly inside. */
Test(energy, closed_mesh_path_matches_convex_path) {
  ce_arena *ar = ce_arena_create(1 << 22);
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.025);
  ce_geometry *bx = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(0.12, 0.1, 0.08), 1);
  ce_geometry *bg = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(0.12, 0.1, 0.08), 1);
  cr_assert(s && bx && bg && bx->convex);
  bg->convex = 0;
  double worst = 0;
  uint64_t rng = 12345;
  for (int i = 0; i < 21; i++) {
    ce_pose Xa, Xb;
    gen_c_rigid(&rng, &Xa, &Xb);
    if (i == 20) Xb = pose(I, ce_v3(0.02, 0, 0)); /* the box wholly inside the sphere */
    double Uc = energy_of(s, Xa, bx, Xb, ar), Ug = energy_of(s, Xa, bg, Xb, ar);
    cr_expect_gt(Uc, 0);
    cr_expect(ce_test_close(Ug, Uc, 1e-9, 0), "pose %d: general %.17g, convex %.17g", i, Ug, Uc);
    track(Ug, Uc, &worst);
  }
  /* the sphere wholly inside a large box: the whole mesh's integral */
  ce_geometry *big = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(1, 1, 1), 1);
  cr_assert_not_null(big);
  double Uc = energy_of(s, pose(I, ce_v3(0.1, 0, -0.4)), big, pose(I, ce_v3(0, 0, -0.5)), ar);
  big->convex = 0;
  double Ug = energy_of(s, pose(I, ce_v3(0.1, 0, -0.4)), big, pose(I, ce_v3(0, 0, -0.5)), ar);
  cr_expect(ce_test_close(Ug, Uc, 1e-9, 0), "inside: general %.17g, convex %.17g", Ug, Uc);
  track(Ug, Uc, &worst);
  cr_log_info("box through the general path: worst relative difference to the convex path %.3g", worst);
  ce_geometry_free(big);
  ce_geometry_free(bg);
  ce_geometry_free(bx);
  ce_geometry_free(s);
  ce_arena_destroy(ar);
}

/* A flat terrain holds the energy of the rigid plane at its height (the
 * medial-axis box: the closed form), a planar tilted one that of the
 * tilted plane: the lattice triangles of a plane lie in it. */
Test(energy, planar_terrain_is_the_plane) {
  enum { N = 24 };
  const double dx = 0.05, a = 0.2, b = -0.1, z0 = 0.03;
  const ce_vec3 org = ce_v3(-0.6, -0.55, z0);
  double zf[N * N], zt[N * N];
  for (int j = 0; j < N; j++)
    for (int i = 0; i < N; i++) {
      zf[j * N + i] = 0;
      zt[j * N + i] = a * (org.x + i * dx) + b * (org.y + j * dx);
    }
  ce_arena *ar = ce_arena_create(1 << 22);
  ce_geometry *tf = terrain(zf, N, dx, org), *tt = terrain(zt, N, dx, org), *hs = halfspace(CE_RIGID, 0);
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.025);
  ce_geometry *box = ce_test_shape(CE_SHAPE_BOX, CE_COMPLIANT, 0, ce_v3(0.2, 0.16, 0.1), 0.02);
  cr_assert(s && box);
  const ce_vec3 n = ce_normalize(ce_v3(-a, -b, 1));
  double wf = 0, wb = 0, wt = 0;
  for (int i = 0; i < 3; i++) {
    const double d = 0.005 + 0.01 * i;
    ce_quat q = ce_quat_from_axis_angle(ce_v3(1, 2, 3), 0.7 * i);
    ce_pose Xs = pose(q, ce_v3(0.05 * i, -0.02, z0 + 0.1 - d));
    double U = energy_of(s, Xs, tf, pose(I, ce_v3(0, 0, 0)), ar);
    double Uhs = energy_of(s, Xs, hs, pose(I, ce_v3(0, 0, z0)), ar);
    cr_expect(ce_test_close(U, Uhs, 1e-9, 0), "flat, d = %g: U = %.17g, plane %.17g", d, U, Uhs);
    track(U, Uhs, &wf);
    ce_pose Xb = pose(ce_quat_from_axis_angle(ce_v3(0, 0, 1), 0.4 * i), ce_v3(0.03 * i, 0.01, z0 + 0.05 - d));
    double Ub = energy_of(box, Xb, tf, pose(I, ce_v3(0, 0, 0)), ar), want = medial_box_energy(0.1, 0.08, 0.05, d);
    cr_expect(ce_test_close(Ub, want, 1e-9, 0), "flat, box, d = %g: U = %.17g, closed form %.17g", d, Ub, want);
    track(Ub, want, &wb);
    /* tilted: the plane z = z0 + a x + b y, the sphere's centre 0.1 - d above it */
    ce_vec3 o = ce_v3(0.05 * i, -0.02, z0 + 0.05 * i * a - 0.02 * b);
    ce_pose Xt = pose(q, ce_axpy(o, 0.1 - d, n));
    double Ut = energy_of(s, Xt, tt, pose(I, ce_v3(0, 0, 0)), ar);
    double Uth = energy_of(s, Xt, hs, plane_pose(o, n), ar);
    cr_expect(ce_test_close(Ut, Uth, 1e-9, 0), "tilted, d = %g: U = %.17g, plane %.17g", d, Ut, Uth);
    track(Ut, Uth, &wt);
  }
  cr_log_info("terrain: flat vs plane %.3g, box vs closed form %.3g, tilted vs plane %.3g", wf, wb, wt);
  ce_geometry_free(box);
  ce_geometry_free(s);
  ce_geometry_free(hs);
  ce_geometry_free(tt);
  ce_geometry_free(tf);
  ce_arena_destroy(ar);
}

/* the sphere (R = 0.1) pressed 0.01 .. 0.03 into the L-block's top (h =
 * 0.1) near its inner corner (1, 1) */
static void gen_lblock(uint64_t *rng, ce_pose *Xa, ce_pose *Xb) {
  double d = 0.01 + 0.02 * ce_test_rand(rng);
  *Xa = pose(ce_test_rand_quat(rng), ce_v3(0.8 + 0.15 * ce_test_rand(rng), 0.8 + 0.15 * ce_test_rand(rng), 0.2 - d));
  *Xb = pose(I, ce_v3(0, 0, 0));
}

/* the sphere pressed 0.01 .. 0.03 into the wavy terrain of the test below,
 * measured from the terrain's height under its centre */
static void gen_terrain(uint64_t *rng, ce_pose *Xa, ce_pose *Xb) {
  double d = 0.01 + 0.02 * ce_test_rand(rng), x = 0.2 * ce_test_rand(rng) - 0.1, y = 0.2 * ce_test_rand(rng) - 0.1;
  double z = 0.02 * sin(3 * x) * cos(2 * y);
  *Xa = pose(ce_test_rand_quat(rng), ce_v3(x, y, z + 0.1 - d));
  *Xb = pose(I, ce_v3(0, 0, 0));
}

Test(energy, potential_nonconvex_rigid_mesh_and_terrain) {
  enum { N = 32 };
  double z[N * N];
  const double dx = 0.05;
  const ce_vec3 org = ce_v3(-0.775, -0.775, 0);
  for (int j = 0; j < N; j++)
    for (int i = 0; i < N; i++) z[j * N + i] = 0.02 * sin(3 * (org.x + i * dx)) * cos(2 * (org.y + j * dx));
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.025);
  ce_geometry *l = lblock(0.1, 0), *t = terrain(z, N, dx, org);
  cr_assert_not_null(s);
  run_gradient_case("compliant-non-convex rigid mesh", s, l, gen_lblock, 0.1, 1);
  run_gradient_case("compliant-terrain", s, t, gen_terrain, 0.1, 1);
  ce_geometry_free(t);
  ce_geometry_free(l);
  ce_geometry_free(s);
}

/* An open rigid mesh bounds no solid: not computed (0, UNAVAILABLE, with
 * the reason); the contact itself is unchanged. */
Test(energy, open_rigid_mesh_is_unavailable) {
  ce_arena *ar = ce_arena_create(1 << 20);
  ce_geometry *l = lblock(0.1, 1);
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.05);
  cr_assert_not_null(s);
  ce_body a = body_at(s, pose(I, ce_v3(0.5, 0.5, 0.15))), b = body_at(l, pose(I, ce_v3(0, 0, 0)));
  ce_result r = query(&a, &b, 1, 0, ar);
  cr_expect_eq(r.status, CE_CONTACT_SURFACE);
  cr_expect_eq(r.energy, CE_ENERGY_UNAVAILABLE);
  cr_expect_eq(r.strain_energy, 0);
  cr_expect(r.energy_note && strstr(r.energy_note, "open"), "note: %s", r.energy_note ? r.energy_note : "(none)");
  ce_geometry_free(s);
  ce_geometry_free(l);
  ce_arena_destroy(ar);
}

/* An exhausted scratch arena fails the query with CE_ENOMEM at any point
 * of the energy pass, for every pair type, and never crashes; with room
 * enough the same query succeeds with the same energy. */
Test(energy, arena_exhaustion_is_enomem) {
  ce_geometry *s = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.05);
  ce_geometry *box = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(0.12, 0.1, 0.08), 1);
  ce_geometry *hr = halfspace(CE_RIGID, 0), *hc = halfspace(CE_COMPLIANT, 0.5);
  cr_assert(s && box);
  ce_body sa = body_at(s, pose(ce_quat_from_axis_angle(ce_v3(1, 2, 3), 0.4), ce_v3(0, 0, 0.08)));
  ce_body others[4] = {body_at(s, pose(I, ce_v3(0, 0, -0.1))), body_at(box, pose(I, ce_v3(0.02, 0, -0.02))),
                       body_at(hr, pose(I, ce_v3(0, 0, 0))), body_at(hc, pose(I, ce_v3(0, 0, 0)))};
  ce_body boxa = body_at(box, pose(I, ce_v3(0, 0, 0.03)));
  /* and a non-convex rigid mesh and a terrain (signed prisms) */
  double z[16 * 16];
  for (int i = 0; i < 16 * 16; i++) z[i] = 0.01 * (i % 3);
  ce_geometry *l = lblock(0.1, 0), *tg = terrain(z, 16, 0.1, ce_v3(-0.75, -0.75, 0));
  ce_body lb = body_at(l, pose(I, ce_v3(-0.95, -0.95, -0.02))), tb = body_at(tg, pose(I, ce_v3(0, 0, 0)));
  const ce_body *A[7] = {&sa, &sa, &sa, &sa, &boxa, &sa, &sa};
  const ce_body *B[7] = {&others[0], &others[1], &others[2], &others[3], &others[3], &lb, &tb};
  ce_arena *ar = ce_arena_create(1 << 12);
  ce_options o;
  ce_options_default(&o);
  o.want_patches = o.want_energy = 1;
  for (int k = 0; k < 7; k++) {
    const ce_body *a = A[k], *b = B[k];
    ce_result r;
    ce_error err;
    ce_arena_set_budget(ar, 0);
    ce_arena_reset(ar);
    cr_assert_eq(ce_contact(a, b, &o, ar, &r, &err), CE_OK, "%s", err.message);
    const double want = r.strain_energy;
    const size_t need = ce_arena_used(ar);
    int ok = 0, nomem = 0;
    for (size_t budget = 1024; budget <= 2 * need + 65536; budget = budget * 5 / 4) {
      ce_arena_set_budget(ar, budget);
      ce_arena_reset(ar);
      ce_errno e = ce_contact(a, b, &o, ar, &r, &err);
      cr_assert(e == CE_OK || e == CE_ENOMEM, "pair %d budget %zu: %s", k, budget, ce_errname(e));
      if (e == CE_OK) {
        ok++;
        cr_expect_eq(r.strain_energy, want, "pair %d budget %zu", k, budget);
      } else {
        nomem++;
      }
    }
    cr_expect(ok > 0 && nomem > 0, "pair %d: ok %d nomem %d", k, ok, nomem);
    cr_expect_gt(want, 0, "pair %d", k);
  }
  ce_arena_set_budget(ar, 0);
  ce_arena_destroy(ar);
  ce_geometry_free(tg);
  ce_geometry_free(l);
  ce_geometry_free(hc);
  ce_geometry_free(hr);
  ce_geometry_free(box);
  ce_geometry_free(s);
}
