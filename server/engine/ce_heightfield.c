/* ce_heightfield.c — terrain from a digital elevation map (the port-based DEM terrain paper).
 *
 * A heightfield is an nx x ny grid of heights z[j * nx + i] at
 * (origin.x + i dx, origin.y + j dy), plus origin.z, in the geometry frame;
 * the terrain's material lies below the surface and its outward normal
 * points up (+z side), like a half space whose boundary is z = F(x, y).
 *
 * Reconstruction (the port-based DEM terrain paper, §III). The cell [x_i, x_i+1] x [y_j, y_j+1] holds
 * the patch f_ij, built from the 4 x 4 samples i-1..i+2, j-1..j+2:
 *  - C1 (§III-A/B): along x, the cubic through z_i, z_i+1 whose end slopes
 *    are the central differences (z_i+1 - z_i-1) / 2dx and
 *    (z_i+2 - z_i) / 2dx; the four such lines j-1..j+2 are then joined along
 *    y by the cubic with the same rule. This is the tensor product of the
 *    1-D rule, i.e. f_ij(x, y) = sum_ab wx_a(s) wy_b(t) z_(i+a, j+b) with
 *    s, t in [0, 1] the position in the cell; the paper's matrix C_ij is this
 *    sum written in monomials.
 *  - C2 (§III-C): the quintic with the same values and slopes and the end
 *    second derivatives (z_i+1 - 2 z_i + z_i-1) / dx^2, again as a tensor
 *    product.
 * Value, slope (and curvature for C2) at a grid line are functions of the
 * samples on that line alone, so both neighbouring patches agree there: the
 * surface is C1 (C2) everywhere. Both rules reproduce quadratics exactly
 * (central differences are exact for them), so the paper's validation bowl
 * z = 0.2 (x^2 + y^2) comes back exactly.
 *
 * Borders: a patch next to the grid's edge needs a sample outside the grid;
 * it is extrapolated quadratically from the three nearest samples on its
 * line (z_-1 = 3 z_0 - 3 z_1 + z_2), which keeps quadratics exact up to the
 * edge. Outside the domain [x_0, x_nx-1] x [y_0, y_ny-1] there is no
 * terrain: the solid is {(x, y) in the domain, z <= F(x, y)}, whose sides
 * are vertical walls under the rim; ce_heightfield_closest measures the
 * distance to that solid (top surface or wall).
 *
 * Memory: the heights (8 bytes per sample) and a min/max per block of
 * CE_HF_BLOCK x CE_HF_BLOCK samples (1/128 of that); nothing else is kept.
 * Patch coefficients are formed on demand from the 16 samples. The block
 * ranges bound the surface over any rectangle (ce_heightfield_bounds): the
 * patches are affine combinations of the samples whose weights' absolute
 * sum stays below 1 + 2 CE_HF_OVERSHOOT, so F lies within the samples'
 * range widened by CE_HF_OVERSHOOT times its length on each side. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_limits.h"
#include "ce_terrain.h"
#include "ce_validate.h"

#define CE_HF_BLOCK_SHIFT 4
#define CE_HF_BLOCK (1 << CE_HF_BLOCK_SHIFT)
/* F - min = sum w (z - min) <= (sum of the positive weights) (max - min),
 * and the positive weights sum to (L + 1) / 2 with L = sum |w|. The 1-D
 * weights (cubic and quintic, the extrapolated border sample expanded into
 * real ones) have sum |w| <= 1.25 (at s = 1/2), so L <= 1.5625 and the
 * overshoot is at most 0.28 of the range; 0.5 for margin (containment is
 * tested in test_heightfield.c). */
#define CE_HF_OVERSHOOT 0.5

struct ce_heightfield {
  int32_t nx, ny;
  double dx, dy;
  ce_vec3 origin;
  int continuity;        /* 1 (bicubic) or 2 (biquintic) */
  double *z;             /* nx * ny heights with origin.z added */
  int32_t bnx, bny;      /* blocks per row / column */
  double (*brange)[2];   /* per block [min, max] of its samples */
  double zmin, zmax;     /* all samples */
};

/* ---- registration ------------------------------------------------------- */

void ce_heightfield_free(ce_heightfield *h) {
  if (!h) return;
  free(h->z);
  free(h->brange);
  free(h);
}

size_t ce_heightfield_bytes(const ce_heightfield *h) {
  if (!h) return 0;
  return sizeof *h + (size_t)h->nx * (size_t)h->ny * sizeof(double) +
         (size_t)h->bnx * (size_t)h->bny * sizeof *h->brange;
}

int64_t ce_heightfield_samples(const ce_heightfield *h) { return h ? (int64_t)h->nx * h->ny : 0; }

ce_errno ce_geometry_from_heightfield(const double *heights, int32_t nx, int32_t ny, double dx, double dy,
                                      ce_vec3 origin, int continuity, const ce_props *props,
                                      ce_geometry **out, ce_error *err) {
  ce_errno e;
  if (!out) return ce_fail(err, CE_EINVAL, "heightfield: out is NULL");
  *out = NULL;
  if ((e = ce_props_check(props, 0, 0, err)) != CE_OK) return e;
  if (props->compliance != CE_RIGID)
    return ce_fail(err, CE_EINVAL, "heightfield: a terrain is rigid (compliance %d given, %d expected)",
                   (int)props->compliance, (int)CE_RIGID);
  if (continuity != 1 && continuity != 2)
    return ce_fail(err, CE_EINVAL, "heightfield: continuity %d must be 1 (bicubic C1) or 2 (biquintic C2)",
                   continuity);
  if (nx < 4 || ny < 4)
    return ce_fail(err, nx <= 0 || ny <= 0 ? CE_EEMPTY : CE_EINVAL,
                   "heightfield: grid of %d x %d samples (nx x ny); at least 4 x 4 are needed", (int)nx, (int)ny);
  if ((int64_t)nx * ny > CE_LIMIT_HEIGHTFIELD_SAMPLES)
    return ce_fail(err, CE_ELIMIT, "heightfield: grid of %d x %d samples exceeds the limit of %d samples",
                   (int)nx, (int)ny, CE_LIMIT_HEIGHTFIELD_SAMPLES);
  if (!isfinite(dx) || !(dx > 0))
    return ce_fail(err, isfinite(dx) ? CE_EINVAL : CE_ENONFINITE,
                   "heightfield: spacing dx = %g must be finite and > 0", dx);
  if (!isfinite(dy) || !(dy > 0))
    return ce_fail(err, isfinite(dy) ? CE_EINVAL : CE_ENONFINITE,
                   "heightfield: spacing dy = %g must be finite and > 0", dy);
  /* the range of primitive dimensions: a spacing of 1e300 m once made a
   * flat terrain answer no contact (tolerances scale with the terrain) */
  if (!ce_length_in_range(dx) || !ce_length_in_range(dy))
    return ce_fail(err, CE_EINVAL, "heightfield: spacing dx = %g, dy = %g m is outside the range [%g, %g] m", dx, dy,
                   CE_LIMIT_MIN_LENGTH, CE_LIMIT_MAX_LENGTH);
  if (!ce_vec3_isfinite(origin))
    return ce_fail(err, CE_ENONFINITE, "heightfield: origin (%g, %g, %g) is not finite", origin.x, origin.y,
                   origin.z);
  if (!isfinite(origin.x + dx * (nx - 1)) || !isfinite(origin.y + dy * (ny - 1)))
    return ce_fail(err, CE_ENONFINITE, "heightfield: the grid's extent overflows");
  if (!heights) return ce_fail(err, CE_EINVAL, "heightfield: heights array is NULL");

  ce_heightfield *h = calloc(1, sizeof *h);
  ce_geometry *g = calloc(1, sizeof *g);
  if (!h || !g) goto nomem;
  h->nx = nx;
  h->ny = ny;
  h->dx = dx;
  h->dy = dy;
  h->origin = origin;
  h->continuity = continuity;
  h->bnx = (nx + CE_HF_BLOCK - 1) >> CE_HF_BLOCK_SHIFT;
  h->bny = (ny + CE_HF_BLOCK - 1) >> CE_HF_BLOCK_SHIFT;
  h->z = malloc((size_t)nx * (size_t)ny * sizeof(double));
  h->brange = malloc((size_t)h->bnx * (size_t)h->bny * sizeof *h->brange);
  if (!h->z || !h->brange) goto nomem;
  for (int64_t b = 0; b < (int64_t)h->bnx * h->bny; b++) {
    h->brange[b][0] = INFINITY;
    h->brange[b][1] = -INFINITY;
  }
  /* One pass: validate, copy with origin.z added, block ranges. */
  for (int32_t j = 0; j < ny; j++) {
    const double *src = heights + (size_t)j * (size_t)nx;
    double *dst = h->z + (size_t)j * (size_t)nx;
    double (*brow)[2] = h->brange + (size_t)(j >> CE_HF_BLOCK_SHIFT) * (size_t)h->bnx;
    for (int32_t i0 = 0; i0 < nx; i0 += CE_HF_BLOCK) {
      int32_t i1 = i0 + CE_HF_BLOCK < nx ? i0 + CE_HF_BLOCK : nx;
      double lo = INFINITY, hi = -INFINITY;
      int bad = 0;
      for (int32_t i = i0; i < i1; i++) {
        double w = src[i] + origin.z;
        bad |= !(fabs(w) <= CE_LIMIT_MAX_LENGTH); /* NaN too */
        dst[i] = w;
        lo = w < lo ? w : lo;
        hi = w > hi ? w : hi;
      }
      if (bad || !isfinite(lo) || !isfinite(hi)) {
        for (int32_t i = i0; i < i1; i++) {
          if (!isfinite(src[i]) || !isfinite(src[i] + origin.z)) {
            ce_heightfield_free(h);
            free(g);
            return ce_fail(err, CE_ENONFINITE, "heightfield: height at sample (i=%d, j=%d) (index %lld) is %g",
                           (int)i, (int)j, (long long)j * nx + i, src[i]);
          }
          if (!(fabs(src[i] + origin.z) <= CE_LIMIT_MAX_LENGTH)) {
            ce_heightfield_free(h);
            free(g);
            return ce_fail(err, CE_EINVAL,
                           "heightfield: height at sample (i=%d, j=%d) (index %lld) is %g m (with origin.z), "
                           "beyond +-%g m",
                           (int)i, (int)j, (long long)j * nx + i, src[i] + origin.z, CE_LIMIT_MAX_LENGTH);
          }
        }
      }
      double *br = brow[i0 >> CE_HF_BLOCK_SHIFT];
      if (lo < br[0]) br[0] = lo;
      if (hi > br[1]) br[1] = hi;
    }
  }
  h->zmin = INFINITY;
  h->zmax = -INFINITY;
  for (int64_t b = 0; b < (int64_t)h->bnx * h->bny; b++) {
    h->zmin = fmin(h->zmin, h->brange[b][0]);
    h->zmax = fmax(h->zmax, h->brange[b][1]);
  }
  g->shape = CE_SHAPE_HEIGHTFIELD;
  g->compliance = CE_RIGID;
  g->modulus = INFINITY;
  g->material = props->material;
  g->hf = h;
  double x1 = origin.x + dx * (nx - 1), y1 = origin.y + dy * (ny - 1);
  double s = 0;
  for (int k = 0; k < 4; k++) {
    double x = (k & 1) ? x1 : origin.x, y = (k & 2) ? y1 : origin.y;
    s = fmax(s, fmax(ce_norm(ce_v3(x, y, h->zmin)), ce_norm(ce_v3(x, y, h->zmax))));
  }
  g->scale = s > 0 ? s : 1.0;
  g->bytes = sizeof *g + ce_heightfield_bytes(h);
  *out = g;
  return CE_OK;
nomem:
  ce_heightfield_free(h);
  free(g);
  return ce_fail(err, CE_ENOMEM, "heightfield: out of memory for %d x %d samples", (int)nx, (int)ny);
}

/* ---- accessors ------------------------------------------------------------ */

const ce_heightfield *ce_geometry_heightfield(const ce_geometry *g) { return g ? g->hf : NULL; }

void ce_heightfield_domain(const ce_heightfield *h, double *x0, double *y0, double *x1, double *y1) {
  *x0 = h->origin.x;
  *y0 = h->origin.y;
  *x1 = h->origin.x + h->dx * (h->nx - 1);
  *y1 = h->origin.y + h->dy * (h->ny - 1);
}

void ce_heightfield_spacing(const ce_heightfield *h, double *dx, double *dy) {
  *dx = h->dx;
  *dy = h->dy;
}

/* Sample (i, j) with quadratic extrapolation one sample beyond each edge. */
static double sample_x(const ce_heightfield *h, int32_t i, int32_t j) {
  const double *row = h->z + (size_t)j * (size_t)h->nx;
  if (i < 0) return 3 * row[0] - 3 * row[1] + row[2];
  if (i >= h->nx) {
    int32_t n = h->nx;
    return 3 * row[n - 1] - 3 * row[n - 2] + row[n - 3];
  }
  return row[i];
}

static double sample(const ce_heightfield *h, int32_t i, int32_t j) {
  if (j < 0) return 3 * sample_x(h, i, 0) - 3 * sample_x(h, i, 1) + sample_x(h, i, 2);
  if (j >= h->ny) {
    int32_t n = h->ny;
    return 3 * sample_x(h, i, n - 1) - 3 * sample_x(h, i, n - 2) + sample_x(h, i, n - 3);
  }
  return sample_x(h, i, j);
}

/* 1-D weights of samples -1..2 at s in [0, 1] (per unit of s) and their
 * first and second derivatives. */
static void weights(int continuity, double s, double w[4], double w1[4], double w2[4]) {
  double s2 = s * s, s3 = s2 * s;
  if (continuity == 1) {
    /* Hermite cubic: value and central-difference slope at both ends. */
    double h00 = 2 * s3 - 3 * s2 + 1, h10 = s3 - 2 * s2 + s, h01 = -2 * s3 + 3 * s2, h11 = s3 - s2;
    double d00 = 6 * s2 - 6 * s, d10 = 3 * s2 - 4 * s + 1, d01 = -6 * s2 + 6 * s, d11 = 3 * s2 - 2 * s;
    double e00 = 12 * s - 6, e10 = 6 * s - 4, e01 = -12 * s + 6, e11 = 6 * s - 2;
    w[0] = -0.5 * h10; w[1] = h00 - 0.5 * h11; w[2] = h01 + 0.5 * h10; w[3] = 0.5 * h11;
    w1[0] = -0.5 * d10; w1[1] = d00 - 0.5 * d11; w1[2] = d01 + 0.5 * d10; w1[3] = 0.5 * d11;
    w2[0] = -0.5 * e10; w2[1] = e00 - 0.5 * e11; w2[2] = e01 + 0.5 * e10; w2[3] = 0.5 * e11;
    return;
  }
  /* Hermite quintic: value, slope (z1 - z-1)/2 and second difference
   * z1 - 2 z0 + z-1 at both ends. Basis: H0 value@0, H1 slope@0,
   * H2 second@0, H3 second@1, H4 slope@1, H5 value@1. */
  double s4 = s3 * s, s5 = s4 * s;
  double H[6] = {1 - 10 * s3 + 15 * s4 - 6 * s5, s - 6 * s3 + 8 * s4 - 3 * s5,
                 0.5 * (s2 - 3 * s3 + 3 * s4 - s5), 0.5 * (s3 - 2 * s4 + s5),
                 -4 * s3 + 7 * s4 - 3 * s5, 10 * s3 - 15 * s4 + 6 * s5};
  double D[6] = {-30 * s2 + 60 * s3 - 30 * s4, 1 - 18 * s2 + 32 * s3 - 15 * s4,
                 0.5 * (2 * s - 9 * s2 + 12 * s3 - 5 * s4), 0.5 * (3 * s2 - 8 * s3 + 5 * s4),
                 -12 * s2 + 28 * s3 - 15 * s4, 30 * s2 - 60 * s3 + 30 * s4};
  double E[6] = {-60 * s + 180 * s2 - 120 * s3, -36 * s + 96 * s2 - 60 * s3,
                 0.5 * (2 - 18 * s + 36 * s2 - 20 * s3), 0.5 * (6 * s - 24 * s2 + 20 * s3),
                 -24 * s + 84 * s2 - 60 * s3, 60 * s - 180 * s2 + 120 * s3};
  const double *B[3] = {H, D, E};
  double *W[3] = {w, w1, w2};
  for (int k = 0; k < 3; k++) {
    const double *b = B[k];
    W[k][0] = -0.5 * b[1] + b[2];
    W[k][1] = b[0] - 2 * b[2] + b[3] - 0.5 * b[4];
    W[k][2] = b[5] + 0.5 * b[1] + b[2] - 2 * b[3];
    W[k][3] = 0.5 * b[4] + b[3];
  }
}

/* Cell index and local coordinate along one axis; u in [0, n-1] grid units. */
/* floor/ceil result u clamped to [lo, hi] in double before the conversion,
 * so a huge (or NaN) u never overflows int32_t (NaN gives lo). */
static int32_t clamp_index(double u, int32_t lo, int32_t hi) {
  if (!(u >= lo)) return lo;
  if (u > hi) return hi;
  return (int32_t)u;
}

static int32_t cell_of(double u, int32_t n, double *s) {
  int32_t i = clamp_index(floor(u), 0, n - 2);
  *s = u - i;
  return i;
}

void ce_heightfield_patch_jet(const ce_heightfield *h, int32_t i, int32_t j, double s, double t, ce_hf_jet *out) {
  double wx[4], wx1[4], wx2[4], wy[4], wy1[4], wy2[4];
  weights(h->continuity, s, wx, wx1, wx2);
  weights(h->continuity, t, wy, wy1, wy2);
  double z = 0, zx = 0, zy = 0, zxx = 0, zxy = 0, zyy = 0;
  const int inner = i >= 1 && i + 2 < h->nx && j >= 1 && j + 2 < h->ny;
  for (int b = 0; b < 4; b++) {
    /* row j-1+b combined along x: value, d/ds, d2/ds2 */
    double r = 0, r1 = 0, r2 = 0;
    if (inner) {
      const double *row = h->z + (size_t)(j - 1 + b) * (size_t)h->nx + (i - 1);
      for (int a = 0; a < 4; a++) {
        r += wx[a] * row[a];
        r1 += wx1[a] * row[a];
        r2 += wx2[a] * row[a];
      }
    } else {
      for (int a = 0; a < 4; a++) {
        double zz = sample(h, i - 1 + a, j - 1 + b);
        r += wx[a] * zz;
        r1 += wx1[a] * zz;
        r2 += wx2[a] * zz;
      }
    }
    z += wy[b] * r;
    zx += wy[b] * r1;
    zy += wy1[b] * r;
    zxx += wy[b] * r2;
    zxy += wy1[b] * r1;
    zyy += wy2[b] * r;
  }
  out->z = z;
  out->zx = zx / h->dx;
  out->zy = zy / h->dy;
  out->zxx = zxx / (h->dx * h->dx);
  out->zxy = zxy / (h->dx * h->dy);
  out->zyy = zyy / (h->dy * h->dy);
  out->cell_i = i;
  out->cell_j = j;
}

int ce_heightfield_jet(const ce_heightfield *h, double x, double y, ce_hf_jet *out) {
  memset(out, 0, sizeof *out);
  double u = (x - h->origin.x) / h->dx, v = (y - h->origin.y) / h->dy;
  /* a rounding ulp beyond the edge still counts as on it */
  const double tol = 1e-9;
  if (!(u >= -tol && u <= h->nx - 1 + tol && v >= -tol && v <= h->ny - 1 + tol)) return 0;
  double s, t;
  int32_t i = cell_of(u, h->nx, &s), j = cell_of(v, h->ny, &t);
  ce_heightfield_patch_jet(h, i, j, s, t, out);
  return 1;
}

ce_vec3 ce_hf_jet_normal(const ce_hf_jet *j) {
  return ce_normalize(ce_v3(-j->zx, -j->zy, 1.0));
}

int ce_heightfield_bounds(const ce_heightfield *h, double x0, double y0, double x1, double y1, double *zlo,
                          double *zhi) {
  double ax, ay, bx, by;
  ce_heightfield_domain(h, &ax, &ay, &bx, &by);
  x0 = fmax(x0, ax);
  y0 = fmax(y0, ay);
  x1 = fmin(x1, bx);
  y1 = fmin(y1, by);
  if (!(x0 <= x1 && y0 <= y1)) return 0;
  /* cells under the rectangle, then their support (one sample each side) */
  double s;
  int32_t i0 = cell_of((x0 - h->origin.x) / h->dx, h->nx, &s) - 1;
  int32_t i1 = cell_of((x1 - h->origin.x) / h->dx, h->nx, &s) + 2;
  int32_t j0 = cell_of((y0 - h->origin.y) / h->dy, h->ny, &s) - 1;
  int32_t j1 = cell_of((y1 - h->origin.y) / h->dy, h->ny, &s) + 2;
  if (i0 < 0) i0 = 0;
  if (j0 < 0) j0 = 0;
  if (i1 > h->nx - 1) i1 = h->nx - 1;
  if (j1 > h->ny - 1) j1 = h->ny - 1;
  /* A border patch's extrapolated sample is made of the 3 nearest real ones
   * on its line (samples 0..2 or n-3..n-1), which the clamped support
   * [cell - 1, cell + 2] always contains. */
  double lo = INFINITY, hi = -INFINITY;
  for (int32_t bj = j0 >> CE_HF_BLOCK_SHIFT; bj <= j1 >> CE_HF_BLOCK_SHIFT; bj++)
    for (int32_t bi = i0 >> CE_HF_BLOCK_SHIFT; bi <= i1 >> CE_HF_BLOCK_SHIFT; bi++) {
      const double *br = h->brange[(size_t)bj * (size_t)h->bnx + (size_t)bi];
      lo = fmin(lo, br[0]);
      hi = fmax(hi, br[1]);
    }
  double m = CE_HF_OVERSHOOT * (hi - lo);
  *zlo = lo - m;
  *zhi = hi + m;
  return 1;
}

void ce_heightfield_range(const ce_heightfield *h, double *zlo, double *zhi) {
  double m = CE_HF_OVERSHOOT * (h->zmax - h->zmin);
  *zlo = h->zmin - m;
  *zhi = h->zmax + m;
}

/* ---- closest point ---------------------------------------------------------- */

int ce_heightfield_closest(const ce_heightfield *h, ce_vec3 c, double radius, ce_hf_closest *out) {
  memset(out, 0, sizeof *out);
  double ax, ay, bx, by;
  ce_heightfield_domain(h, &ax, &ay, &bx, &by);
  if (!(c.x >= ax - radius && c.x <= bx + radius && c.y >= ay - radius && c.y <= by + radius)) return 0;
  /* Nearest grid sample (3-D distance) among those within radius + one
   * spacing of c's footprint: the Newton start. */
  double r = radius > 0 ? radius : 0;
  int32_t i0 = clamp_index(floor((c.x - r - ax) / h->dx) - 1, 0, h->nx - 1);
  int32_t i1 = clamp_index(ceil((c.x + r - ax) / h->dx) + 1, 0, h->nx - 1);
  int32_t j0 = clamp_index(floor((c.y - r - ay) / h->dy) - 1, 0, h->ny - 1);
  int32_t j1 = clamp_index(ceil((c.y + r - ay) / h->dy) + 1, 0, h->ny - 1);
  /* keep the window small for a huge radius: the nearest sample's xy is
   * then near c's footprint anyway */
  const int32_t maxw = 64;
  if (i1 - i0 > maxw || j1 - j0 > maxw) {
    int32_t ci = clamp_index(floor((fmin(fmax(c.x, ax), bx) - ax) / h->dx + 0.5), 0, h->nx - 1);
    int32_t cj = clamp_index(floor((fmin(fmax(c.y, ay), by) - ay) / h->dy + 0.5), 0, h->ny - 1);
    if (i1 - i0 > maxw) { i0 = ci - maxw / 2 < 0 ? 0 : ci - maxw / 2; i1 = i0 + maxw > h->nx - 1 ? h->nx - 1 : i0 + maxw; }
    if (j1 - j0 > maxw) { j0 = cj - maxw / 2 < 0 ? 0 : cj - maxw / 2; j1 = j0 + maxw > h->ny - 1 ? h->ny - 1 : j0 + maxw; }
  }
  double best = INFINITY, x = c.x, y = c.y;
  for (int32_t j = j0; j <= j1; j++)
    for (int32_t i = i0; i <= i1; i++) {
      ce_vec3 p = ce_v3(ax + i * h->dx, ay + j * h->dy, h->z[(size_t)j * (size_t)h->nx + i]);
      double d = ce_norm2(ce_sub(p, c));
      if (d < best) {
        best = d;
        x = p.x;
        y = p.y;
      }
    }
  /* Newton on D(x, y) = |(x, y, F) - c|^2 / 2, clamped to the domain;
   * a gradient step when the Hessian is not positive definite. */
  ce_hf_jet J;
  int it;
  for (it = 0; it < 30; it++) {
    ce_heightfield_jet(h, x, y, &J);
    double e = J.z - c.z;
    double gx = (x - c.x) + e * J.zx, gy = (y - c.y) + e * J.zy;
    double hxx = 1 + J.zx * J.zx + e * J.zxx, hxy = J.zx * J.zy + e * J.zxy, hyy = 1 + J.zy * J.zy + e * J.zyy;
    double det = hxx * hyy - hxy * hxy, sx, sy;
    if (hxx > 0 && det > 1e-12 * hxx * hyy) {
      sx = -(hyy * gx - hxy * gy) / det;
      sy = -(-hxy * gx + hxx * gy) / det;
    } else {
      double L = 1 + J.zx * J.zx + J.zy * J.zy + fabs(e) * (fabs(J.zxx) + fabs(J.zyy) + 2 * fabs(J.zxy));
      sx = -gx / L;
      sy = -gy / L;
    }
    /* limit a step to one cell so Newton stays among the local patches */
    double lim = fmax(h->dx, h->dy), sn = sqrt(sx * sx + sy * sy);
    if (sn > lim) {
      sx *= lim / sn;
      sy *= lim / sn;
    }
    double nx = fmin(fmax(x + sx, ax), bx), ny = fmin(fmax(y + sy, ay), by);
    double moved = fabs(nx - x) + fabs(ny - y);
    x = nx;
    y = ny;
    if (moved <= 1e-13 * (fabs(x) + fabs(y) + h->dx + h->dy)) break;
  }
  ce_heightfield_jet(h, x, y, &J);
  ce_vec3 p = ce_v3(x, y, J.z);
  ce_vec3 n = ce_hf_jet_normal(&J);
  ce_vec3 d = ce_sub(c, p);
  double dist = ce_norm(d);
  /* sign: c above the surface (on the normal's side) is positive */
  double side = ce_dot(d, n);
  if (dist == 0) side = 0;
  out->point = p;
  out->normal = n;
  out->distance = side >= 0 ? dist : -dist;
  out->iterations = it;
  out->jet = J;
  /* The domain's edge. The terrain is the solid {(x, y) in the rectangle,
   * z <= F(x, y)}: nothing exists outside the rectangle, so its sides are
   * vertical walls from the rim (x, y on the edge, z = F) down. Newton's
   * point p is the closest point of the top surface only (clamped to the
   * rim when the minimum lies beyond the edge); the distance to the solid
   * also considers the walls:
   *  - c outside the rectangle (its footprint beyond an edge): c is outside
   *    the solid, distance > 0. Its footprint's clamp q onto the rectangle
   *    gives the closest wall point (q, c.z) when c.z <= F(q) (distance
   *    |c_xy - q|, horizontal normal), else the rim point (q, F(q)); the
   *    smaller of that and |c - p| wins, with the normal (c - point) /
   *    distance, which turns continuously from horizontal (wall) to the
   *    surface's normal (interior minimum).
   *  - c inside the rectangle and below the surface: c is inside the solid
   *    and its depth is the smaller of |c - p| and the horizontal distance
   *    to a wall whose rim at c's projection is above c (normal: the wall's
   *    outward horizontal). So the depth goes to 0 as c crosses a wall, and
   *    a sphere centred 0.5 R beyond the edge and 0.2 R below a flat rim
   *    penetrates by 0.5 R (not by the slanted 1.54 R to the rim).
   * Inside the rectangle and above the surface |c - p| stands. */
  const double cx = fmin(fmax(c.x, ax), bx), cy = fmin(fmax(c.y, ay), by);
  if (cx != c.x || cy != c.y) {
    ce_hf_jet Q;
    ce_heightfield_jet(h, cx, cy, &Q);
    ce_vec3 q = ce_v3(cx, cy, fmin(c.z, Q.z));
    ce_vec3 dq = ce_sub(c, q);
    double lq = ce_norm(dq);
    if (lq < dist) {
      out->point = q;
      out->jet = Q;
      d = dq;
      dist = lq;
    }
    out->distance = dist;
    out->normal = ce_scale(d, 1.0 / dist); /* dist > 0: c is off the rectangle */
    return 1;
  }
  if (out->distance < 0) {
    /* walls x = ax, x = bx, y = ay, y = by: horizontal gap and outward normal */
    const double gap[4] = {c.x - ax, bx - c.x, c.y - ay, by - c.y};
    const ce_vec3 wn[4] = {ce_v3(-1, 0, 0), ce_v3(1, 0, 0), ce_v3(0, -1, 0), ce_v3(0, 1, 0)};
    for (int k = 0; k < 4; k++) {
      if (!(gap[k] < -out->distance)) continue;
      double wx = k == 0 ? ax : k == 1 ? bx : c.x, wy = k == 2 ? ay : k == 3 ? by : c.y;
      ce_hf_jet W;
      ce_heightfield_jet(h, wx, wy, &W);
      if (!(c.z <= W.z)) continue;
      out->point = ce_v3(wx, wy, c.z);
      out->normal = wn[k];
      out->distance = -gap[k];
      out->jet = W;
    }
  }
  return 1;
}

/* ---- public query -------------------------------------------------------------- */

ce_errno ce_heightfield_eval(const ce_geometry *g, double x, double y, ce_heightfield_point *out, ce_error *err) {
  if (!g || !g->hf) return ce_fail(err, CE_EINVAL, "heightfield query: the geometry is not a heightfield");
  if (!out) return ce_fail(err, CE_EINVAL, "heightfield query: out is NULL");
  memset(out, 0, sizeof *out);
  if (!isfinite(x) || !isfinite(y))
    return ce_fail(err, CE_ENONFINITE, "heightfield query: point (%g, %g) is not finite", x, y);
  const ce_heightfield *h = g->hf;
  ce_hf_jet J;
  if (!ce_heightfield_jet(h, x, y, &J)) {
    double ax, ay, bx, by;
    ce_heightfield_domain(h, &ax, &ay, &bx, &by);
    return ce_fail(err, CE_ERANGE, "heightfield query: point (%g, %g) is outside the grid [%g, %g] x [%g, %g]", x,
                   y, ax, bx, ay, by);
  }
  out->height = J.z;
  out->dz_dx = J.zx;
  out->dz_dy = J.zy;
  out->d2z_dx2 = J.zxx;
  out->d2z_dxdy = J.zxy;
  out->d2z_dy2 = J.zyy;
  out->cell_i = J.cell_i;
  out->cell_j = J.cell_j;
  /* Gauss frame: f_u = (1, 0, zx), f_v = (0, 1, zy), n = f_u x f_v / |.| */
  double w2 = 1 + J.zx * J.zx + J.zy * J.zy, w = sqrt(w2);
  out->normal = ce_v3(-J.zx / w, -J.zy / w, 1 / w);
  out->tangent_x = ce_normalize(ce_v3(1, 0, J.zx));
  out->tangent_y = ce_cross(out->normal, out->tangent_x);
  /* first (E, F, G) and second (L, M, N) fundamental forms */
  double E = 1 + J.zx * J.zx, F = J.zx * J.zy, G = 1 + J.zy * J.zy;
  double L = J.zxx / w, M = J.zxy / w, N = J.zyy / w;
  double K = (L * N - M * M) / (E * G - F * F);
  double H = (E * N - 2 * F * M + G * L) / (2 * (E * G - F * F));
  double disc = sqrt(fmax(0.0, H * H - K));
  out->gaussian_curvature = K;
  out->mean_curvature = H;
  out->k1 = H + disc;
  out->k2 = H - disc;
  return CE_OK;
}

ce_errno ce_heightfield_extent(const ce_geometry *g, ce_vec3 *lo, ce_vec3 *hi, ce_error *err) {
  if (!g || !g->hf) return ce_fail(err, CE_EINVAL, "heightfield extent: the geometry is not a heightfield");
  if (!lo || !hi) return ce_fail(err, CE_EINVAL, "heightfield extent: lo and hi are required");
  double x0, y0, x1, y1, z0, z1;
  ce_heightfield_domain(g->hf, &x0, &y0, &x1, &y1);
  ce_heightfield_range(g->hf, &z0, &z1);
  *lo = ce_v3(x0, y0, z0);
  *hi = ce_v3(x1, y1, z1);
  return CE_OK;
}
