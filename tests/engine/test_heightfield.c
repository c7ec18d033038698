/* test_heightfield.c — terrain from a height grid (the DEM terrain paper): registration,
 * patch interpolation, continuity across patch borders, the bowl, bounds,
 * closest points, bad grids. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static ce_props rigid_props(void) { return ce_test_props(CE_RIGID, 0, 0.1); }

static ce_geometry *make_hf(const double *z, int nx, int ny, double dx, double dy, ce_vec3 o, int cont) {
  ce_props pr = rigid_props();
  ce_geometry *g = NULL;
  ce_error err;
  ce_errno e = ce_geometry_from_heightfield(z, nx, ny, dx, dy, o, cont, &pr, &g, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  cr_assert_not_null(g);
  return g;
}

static double *random_grid(int nx, int ny, uint64_t seed) {
  double *z = malloc((size_t)nx * ny * sizeof *z);
  for (int k = 0; k < nx * ny; k++) z[k] = 2.0 * ce_test_rand(&seed) - 1.0;
  return z;
}

/* z = 0.2 (x^2 + y^2) on [-n, n]^2 at spacing 1 */
static double *bowl_grid(int n) {
  int m = 2 * n + 1;
  double *z = malloc((size_t)m * m * sizeof *z);
  for (int j = 0; j < m; j++)
    for (int i = 0; i < m; i++) {
      double x = i - n, y = j - n;
      z[j * m + i] = 0.2 * (x * x + y * y);
    }
  return z;
}

Test(heightfield, reproduces_samples_exactly) {
  for (int cont = 1; cont <= 2; cont++) {
    const int nx = 13, ny = 9;
    double *z = random_grid(nx, ny, 7 + cont);
    ce_vec3 o = ce_v3(-1.5, 2.25, 0.75);
    ce_geometry *g = make_hf(z, nx, ny, 0.3, 0.7, o, cont);
    double worst = 0;
    for (int j = 0; j < ny; j++)
      for (int i = 0; i < nx; i++) {
        ce_heightfield_point p;
        ce_error err;
        cr_assert_eq(ce_heightfield_eval(g, o.x + 0.3 * i, o.y + 0.7 * j, &p, &err), CE_OK, "%s", err.message);
        worst = fmax(worst, fabs(p.height - (z[j * nx + i] + o.z)));
      }
    cr_assert_lt(worst, 1e-13, "continuity %d: largest sample error %g", cont, worst);
    ce_geometry_free(g);
    free(z);
  }
}

/* Both patches meeting at a grid line give the same value and derivatives
 * there: C1 → z, zx, zy; C2 → also zxx, zxy, zyy. The second derivative
 * across the border of a C1 surface generally jumps (checked to show the
 * comparison has teeth). */
Test(heightfield, continuity_across_patch_borders) {
  for (int cont = 1; cont <= 2; cont++) {
    const int nx = 10, ny = 8;
    double *z = random_grid(nx, ny, 99);
    ce_geometry *g = make_hf(z, nx, ny, 0.5, 0.25, ce_v3(0, 0, 0), cont);
    const ce_heightfield *h = ce_geometry_heightfield(g);
    double d0 = 0, d1 = 0, d2 = 0, jump2 = 0;
    for (int dir = 0; dir < 2; dir++)
      for (int j = 0; j < ny - 1; j++)
        for (int i = 1; i < nx - 1; i++) {
          if (dir == 1 && (i >= ny - 1 || j >= nx - 1)) continue;
          for (int k = 0; k <= 8; k++) {
            double t = k / 8.0;
            ce_hf_jet L, R;
            if (dir == 0) { /* vertical border x = x_i between cells i-1 and i */
              ce_heightfield_patch_jet(h, i - 1, j, 1.0, t, &L);
              ce_heightfield_patch_jet(h, i, j, 0.0, t, &R);
            } else { /* horizontal border y = y_i between cells (j, i-1) and (j, i) */
              ce_heightfield_patch_jet(h, j, i - 1, t, 1.0, &L);
              ce_heightfield_patch_jet(h, j, i, t, 0.0, &R);
            }
            d0 = fmax(d0, fabs(L.z - R.z));
            d1 = fmax(d1, fmax(fabs(L.zx - R.zx), fabs(L.zy - R.zy)));
            double e2 = fmax(fabs(L.zxx - R.zxx), fmax(fabs(L.zxy - R.zxy), fabs(L.zyy - R.zyy)));
            d2 = fmax(d2, e2);
            jump2 = fmax(jump2, e2);
          }
        }
    cr_assert_lt(d0, 1e-13, "C%d: value jump %g", cont, d0);
    cr_assert_lt(d1, 1e-12, "C%d: slope jump %g", cont, d1);
    if (cont == 2) cr_assert_lt(d2, 1e-10, "C2: curvature jump %g", d2);
    else cr_assert_gt(jump2, 1e-2, "C1 random data should have curvature jumps (%g)", jump2);
    /* the same through the public query, a hair either side of a border */
    ce_heightfield_point a, b;
    double eps = 1e-9;
    cr_assert_eq(ce_heightfield_eval(g, 2.0 - eps, 0.6, &a, NULL), CE_OK);
    cr_assert_eq(ce_heightfield_eval(g, 2.0 + eps, 0.6, &b, NULL), CE_OK);
    cr_assert_neq(a.cell_i, b.cell_i);
    cr_assert_lt(fabs(a.height - b.height), 1e-7);
    cr_assert_lt(fabs(a.normal.x - b.normal.x) + fabs(a.normal.y - b.normal.y) + fabs(a.normal.z - b.normal.z), 1e-6);
    ce_geometry_free(g);
    free(z);
  }
}

/* The DEM terrain paper's validation surface sampled at spacing 1: both reconstructions
 * reproduce quadratics, so height, normal and curvature match the analytic
 * bowl to rounding everywhere, border patches included. */
Test(heightfield, bowl_matches_analytic_surface) {
  const int n = 6, m = 2 * n + 1;
  double *z = bowl_grid(n);
  for (int cont = 1; cont <= 2; cont++) {
    ce_geometry *g = make_hf(z, m, m, 1.0, 1.0, ce_v3(-n, -n, 0), cont);
    uint64_t seed = 5;
    double eh = 0, en = 0, ek = 0;
    for (int k = 0; k < 2000; k++) {
      double x = (2 * ce_test_rand(&seed) - 1) * n, y = (2 * ce_test_rand(&seed) - 1) * n;
      ce_heightfield_point p;
      cr_assert_eq(ce_heightfield_eval(g, x, y, &p, NULL), CE_OK);
      double zx = 0.4 * x, zy = 0.4 * y, w = sqrt(1 + zx * zx + zy * zy);
      ce_vec3 nn = ce_v3(-zx / w, -zy / w, 1 / w);
      eh = fmax(eh, fabs(p.height - 0.2 * (x * x + y * y)));
      en = fmax(en, ce_norm(ce_sub(p.normal, nn)));
      /* mean curvature of z = a (x^2 + y^2), a = 0.2 */
      double H = 0.4 * (2 + zx * zx + zy * zy) / (2 * w * w * w);
      double K = 0.16 / (w * w * w * w);
      ek = fmax(ek, fmax(fabs(p.mean_curvature - H), fabs(p.gaussian_curvature - K)));
      /* Gauss frame: orthonormal, right-handed, tangents in the surface */
      cr_assert_lt(fabs(ce_dot(p.tangent_x, p.normal)), 1e-14);
      cr_assert_lt(fabs(ce_dot(p.tangent_y, p.tangent_x)), 1e-14);
      cr_assert_lt(fabs(ce_norm(p.tangent_y) - 1), 1e-14);
    }
    cr_assert_lt(eh, 1e-12, "C%d bowl height error %g", cont, eh);
    cr_assert_lt(en, 1e-12, "C%d bowl normal error %g", cont, en);
    cr_assert_lt(ek, 1e-11, "C%d bowl curvature error %g", cont, ek);
    ce_heightfield_point p0;
    cr_assert_eq(ce_heightfield_eval(g, 0, 0, &p0, NULL), CE_OK);
    cr_assert_lt(fabs(p0.k1 - 0.4) + fabs(p0.k2 - 0.4), 1e-12);
    cr_assert_lt(fabs(p0.normal.z - 1), 1e-15);
    ce_geometry_free(g);
  }
  free(z);
}

/* A smooth non-polynomial surface: the error shrinks with the spacing at
 * the interpolation order (cubic: ~h^3 for the height). */
Test(heightfield, smooth_surface_converges) {
  double prev = 0;
  for (int level = 0; level < 3; level++) {
    double d = 0.2 / (1 << level);
    int nn = (int)lround(4.0 / d) + 1;
    double *z = malloc((size_t)nn * nn * sizeof *z);
    for (int j = 0; j < nn; j++)
      for (int i = 0; i < nn; i++) z[j * nn + i] = sin(i * d) * cos(0.7 * j * d);
    ce_geometry *g = make_hf(z, nn, nn, d, d, ce_v3(0, 0, 0), 1);
    double err = 0;
    uint64_t seed = 11;
    for (int k = 0; k < 500; k++) {
      double x = 0.5 + 3 * ce_test_rand(&seed), y = 0.5 + 3 * ce_test_rand(&seed);
      ce_heightfield_point p;
      cr_assert_eq(ce_heightfield_eval(g, x, y, &p, NULL), CE_OK);
      err = fmax(err, fabs(p.height - sin(x) * cos(0.7 * y)));
    }
    if (level > 0) cr_assert_gt(prev / err, 6.0, "halving the spacing: error %g -> %g", prev, err);
    prev = err;
    ce_geometry_free(g);
    free(z);
  }
  cr_assert_lt(prev, 2e-4);
}

Test(heightfield, bounds_contain_the_surface) {
  for (int cont = 1; cont <= 2; cont++) {
    const int nx = 40, ny = 37;
    double *z = random_grid(nx, ny, 3 + cont);
    ce_geometry *g = make_hf(z, nx, ny, 0.1, 0.1, ce_v3(0, 0, 1), cont);
    const ce_heightfield *h = ce_geometry_heightfield(g);
    uint64_t seed = 17;
    for (int r = 0; r < 50; r++) {
      double x0 = 3.3 * ce_test_rand(&seed), y0 = 3.0 * ce_test_rand(&seed);
      double x1 = x0 + 0.5 * ce_test_rand(&seed), y1 = y0 + 0.5 * ce_test_rand(&seed);
      double lo, hi;
      cr_assert(ce_heightfield_bounds(h, x0, y0, x1, y1, &lo, &hi));
      for (int k = 0; k < 200; k++) {
        double x = x0 + (x1 - x0) * ce_test_rand(&seed), y = y0 + (y1 - y0) * ce_test_rand(&seed);
        ce_hf_jet J;
        if (!ce_heightfield_jet(h, x, y, &J)) continue;
        cr_assert(J.z >= lo && J.z <= hi, "F(%g, %g) = %g outside [%g, %g]", x, y, J.z, lo, hi);
      }
    }
    double lo, hi;
    cr_assert_not(ce_heightfield_bounds(h, 10, 10, 11, 11, &lo, &hi), "rectangle off the grid");
    ce_geometry_free(g);
    free(z);
  }
}

Test(heightfield, closest_point_on_bowl) {
  const int n = 6, m = 2 * n + 1;
  double *z = bowl_grid(n);
  ce_geometry *g = make_hf(z, m, m, 1.0, 1.0, ce_v3(-n, -n, 0), 2);
  const ce_heightfield *h = ce_geometry_heightfield(g);
  ce_vec3 cs[3] = {ce_v3(1.3, -0.4, 1.5), ce_v3(-2.2, 2.9, 3.0), ce_v3(0.7, 0.2, 0.0)};
  for (int q = 0; q < 3; q++) {
    ce_hf_closest cp;
    cr_assert(ce_heightfield_closest(h, cs[q], 1.0, &cp));
    /* brute force over a fine parameter grid around the answer */
    double best = INFINITY;
    for (int j = -400; j <= 400; j++)
      for (int i = -400; i <= 400; i++) {
        double x = cp.point.x + i * 2.5e-3, y = cp.point.y + j * 2.5e-3;
        best = fmin(best, ce_norm(ce_sub(cs[q], ce_v3(x, y, 0.2 * (x * x + y * y)))));
      }
    cr_assert_leq(fabs(cp.distance), best + 1e-12, "case %d: %g vs brute force %g", q, cp.distance, best);
    cr_assert_lt(fabs(cp.distance) - best, 1e-5);
    /* c - p along the normal; sign: above = positive */
    ce_vec3 d = ce_sub(cs[q], cp.point);
    cr_assert_lt(ce_norm(ce_cross(d, cp.normal)), 1e-9 * fmax(1, ce_norm(d)));
    double above = cs[q].z - 0.2 * (cs[q].x * cs[q].x + cs[q].y * cs[q].y);
    cr_assert((above > 0) == (cp.distance > 0), "case %d sign", q);
    cr_assert_lt(cp.iterations, 30);
  }
  ce_geometry_free(g);
  free(z);
}

static void expect_bad(const double *z, int nx, int ny, double dx, double dy, ce_vec3 o, int cont, ce_props pr,
                       ce_errno code, const char *needle) {
  ce_geometry *g = (ce_geometry *)0x1;
  ce_error err;
  memset(&err, 0, sizeof err);
  ce_errno e = ce_geometry_from_heightfield(z, nx, ny, dx, dy, o, cont, &pr, &g, &err);
  cr_assert_eq(e, code, "expected %s, got %s: %s", ce_errname(code), ce_errname(e), err.message);
  cr_assert_null(g);
  cr_assert_not_null(strstr(err.message, needle), "message '%s' lacks '%s'", err.message, needle);
}

Test(heightfield, bad_grids_are_rejected_with_messages) {
  double z[64];
  for (int k = 0; k < 64; k++) z[k] = 0.01 * k;
  ce_props pr = rigid_props();
  ce_vec3 o = ce_v3(0, 0, 0);
  z[3 * 8 + 5] = NAN;
  expect_bad(z, 8, 8, 1, 1, o, 1, pr, CE_ENONFINITE, "sample (i=5, j=3)");
  z[3 * 8 + 5] = INFINITY;
  expect_bad(z, 8, 8, 1, 1, o, 2, pr, CE_ENONFINITE, "sample (i=5, j=3)");
  /* the range of primitive dimensions: 1e300 m once gave a flat terrain no contact */
  z[3 * 8 + 5] = 1e300;
  expect_bad(z, 8, 8, 1, 1, o, 1, pr, CE_EINVAL,
             "sample (i=5, j=3) (index 29) is 1e+300 m (with origin.z), beyond +-1e+09 m");
  z[3 * 8 + 5] = 0;
  expect_bad(z, 8, 8, 1, 1, ce_v3(0, 0, -2e9), 1, pr, CE_EINVAL, "is -2e+09 m (with origin.z)");
  expect_bad(z, 8, 8, 1e300, 1, o, 1, pr, CE_EINVAL,
             "spacing dx = 1e+300, dy = 1 m is outside the range [1e-09, 1e+09] m");
  expect_bad(z, 8, 8, 1, 1e-12, o, 1, pr, CE_EINVAL, "dy = 1e-12 m is outside");
  expect_bad(z, 3, 8, 1, 1, o, 1, pr, CE_EINVAL, "at least 4 x 4");
  expect_bad(z, 8, 2, 1, 1, o, 1, pr, CE_EINVAL, "8 x 2");
  expect_bad(z, 0, 8, 1, 1, o, 1, pr, CE_EEMPTY, "at least 4 x 4");
  expect_bad(z, 8, 8, 0, 1, o, 1, pr, CE_EINVAL, "dx = 0");
  expect_bad(z, 8, 8, 1, -2, o, 1, pr, CE_EINVAL, "dy = -2");
  expect_bad(z, 8, 8, NAN, 1, o, 1, pr, CE_ENONFINITE, "dx = nan");
  expect_bad(z, 8, 8, 1, INFINITY, o, 1, pr, CE_ENONFINITE, "dy = inf");
  expect_bad(z, 8, 8, 1, 1, ce_v3(0, NAN, 0), 1, pr, CE_ENONFINITE, "origin");
  expect_bad(z, 8, 8, 1, 1, o, 3, pr, CE_EINVAL, "continuity 3");
  expect_bad(NULL, 8, 8, 1, 1, o, 1, pr, CE_EINVAL, "heights");
  expect_bad(z, 8, 8, 1, 1, o, 1, ce_test_props(CE_COMPLIANT, 1e6, 0.1), CE_EINVAL, "rigid");
}

Test(heightfield, queries_outside_and_wrong_geometry) {
  double z[16] = {0};
  ce_geometry *g = make_hf(z, 4, 4, 1, 1, ce_v3(0, 0, 0), 1);
  ce_heightfield_point p;
  ce_error err;
  cr_assert_eq(ce_heightfield_eval(g, 3.5, 1, &p, &err), CE_ERANGE);
  cr_assert_not_null(strstr(err.message, "outside the grid"));
  cr_assert_eq(ce_heightfield_eval(g, 3.0, 3.0, &p, &err), CE_OK, "the far corner is on the grid");
  cr_assert_eq(ce_heightfield_eval(g, NAN, 1, &p, &err), CE_ENONFINITE);
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.1);
  ce_shape s = {.type = CE_SHAPE_SPHERE, .radius = 1};
  ce_geometry *sp = NULL;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &sp, NULL), CE_OK);
  cr_assert_eq(ce_heightfield_eval(sp, 0, 0, &p, &err), CE_EINVAL);
  ce_vec3 lo, hi;
  cr_assert_eq(ce_heightfield_extent(sp, &lo, &hi, &err), CE_EINVAL);
  ce_geometry_free(sp);
  ce_geometry_free(g);
}

Test(heightfield, extent_holds_the_surface) {
  const int n = 30;
  double *z = random_grid(n, n, 21);
  ce_geometry *g = make_hf(z, n, n, 0.2, 0.1, ce_v3(1, -1, 3), 2);
  ce_vec3 lo, hi;
  cr_assert_eq(ce_heightfield_extent(g, &lo, &hi, NULL), CE_OK);
  cr_assert_eq(lo.x, 1.0);
  cr_assert_eq(lo.y, -1.0);
  cr_assert(ce_test_close(hi.x, 1 + 0.2 * 29, 1e-15, 0));
  cr_assert(ce_test_close(hi.y, -1 + 0.1 * 29, 1e-15, 0));
  uint64_t seed = 4;
  double zmin = INFINITY, zmax = -INFINITY;
  for (int k = 0; k < 20000; k++) {
    ce_heightfield_point p;
    cr_assert_eq(ce_heightfield_eval(g, lo.x + (hi.x - lo.x) * ce_test_rand(&seed),
                                     lo.y + (hi.y - lo.y) * ce_test_rand(&seed), &p, NULL), CE_OK);
    zmin = fmin(zmin, p.height);
    zmax = fmax(zmax, p.height);
  }
  cr_assert(zmin >= lo.z && zmax <= hi.z, "[%g, %g] outside [%g, %g]", zmin, zmax, lo.z, hi.z);
  cr_assert_lt(hi.z - lo.z, 5 * 2.0 + 1e-9, "no looser than 5 sample ranges");
  ce_geometry_free(g);
  free(z);
}

/* O(grid) memory, nothing meshed: bytes ~ 8 per sample, no triangles. */
Test(heightfield, memory_is_the_grid) {
  const int n = 512;
  double *z = calloc((size_t)n * n, sizeof *z);
  ce_geometry *g = make_hf(z, n, n, 0.01, 0.01, ce_v3(0, 0, 0), 2);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert_eq(info.shape, CE_SHAPE_HEIGHTFIELD);
  cr_assert_eq(info.compliance, CE_RIGID);
  cr_assert_eq(info.vertices, n * n);
  cr_assert_eq(info.triangles, 0);
  cr_assert_eq(info.tetrahedra, 0);
  cr_assert_geq(info.bytes, (size_t)8 * n * n);
  cr_assert_lt(info.bytes, (size_t)8 * n * n * 1.01 + 4096, "bytes %zu", info.bytes);
  ce_geometry_free(g);
  free(z);
}

/* The worst overshoot of the patches: a 2 x 2 block of ones in zeros peaks
 * at (9/8)^2 = 1.265625 in the middle of the block (C1), above every
 * sample; the block bounds still contain it. */
Test(heightfield, overshoot_is_bounded) {
  double z[64] = {0};
  z[3 * 8 + 3] = z[3 * 8 + 4] = z[4 * 8 + 3] = z[4 * 8 + 4] = 1.0;
  for (int cont = 1; cont <= 2; cont++) {
    ce_geometry *g = make_hf(z, 8, 8, 1, 1, ce_v3(0, 0, 0), cont);
    const ce_heightfield *h = ce_geometry_heightfield(g);
    ce_hf_jet J;
    cr_assert(ce_heightfield_jet(h, 3.5, 3.5, &J));
    if (cont == 1) cr_assert(ce_test_close(J.z, 1.265625, 1e-14, 0), "C1 peak %.17g", J.z);
    cr_assert_gt(J.z, 1.0, "C%d overshoots the samples", cont);
    double lo, hi;
    cr_assert(ce_heightfield_bounds(h, 3.4, 3.4, 3.6, 3.6, &lo, &hi));
    cr_assert_geq(hi, J.z);
    cr_assert_leq(lo, 0.0);
    ce_vec3 elo, ehi;
    cr_assert_eq(ce_heightfield_extent(g, &elo, &ehi, NULL), CE_OK);
    cr_assert_geq(ehi.z, J.z);
    ce_geometry_free(g);
  }
}

/* A radius far beyond int32 cells (1e300 / dx) must not overflow the index
 * conversions: the window is clamped in double first, and the answer
 * is the ordinary closest point. */
Test(heightfield, closest_with_huge_radius) {
  const int n = 6, m = 2 * n + 1;
  double *z = bowl_grid(n);
  ce_geometry *g = make_hf(z, m, m, 1.0, 1.0, ce_v3(-n, -n, 0), 2);
  const ce_heightfield *h = ce_geometry_heightfield(g);
  ce_vec3 c = ce_v3(0.7, 0.2, 0.0);
  ce_hf_closest a, b;
  cr_assert(ce_heightfield_closest(h, c, 1.0, &a));
  cr_assert(ce_heightfield_closest(h, c, 1e300, &b));
  cr_assert_lt(fabs(a.distance - b.distance), 1e-12, "%g vs %g", a.distance, b.distance);
  cr_assert_lt(a.distance, 0);
  cr_assert(ce_heightfield_closest(h, ce_v3(1e299, -1e299, 5), 1e300, &b));
  cr_assert_gt(b.distance, 9e298);
  ce_geometry_free(g);
  free(z);
}
