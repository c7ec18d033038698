/* ce_predicates.c — geometric tests on triangles that several engine files
 * share: whether two triangles meet (Moller's test; the seed test of
 * surface tracing and the leaf test of the seed search) and the closest
 * point of a triangle (surface distances of the tetrahedraliser and the
 * distance field). A leaf: it calls only ce_math. */
#include <math.h>

#include "ce_predicates.h"

/* The interval that a triangle (vertices projected on a line: p[k]; signed
 * distances to the other triangle's plane: d[k], not all zero and not all
 * of one strict sign) cuts from the line where the two planes cross. */
static void meet_interval(const double p[3], const double d[3], double *lo, double *hi) {
  /* The usual case first: one vertex strictly on one side, two strictly
   * on the other; the interval runs between the crossings of its two
   * edges. */
  for (int k = 0; k < 3; k++) {
    int l = k == 2 ? 0 : k + 1, m = l == 2 ? 0 : l + 1;
    if (d[l] * d[m] > 0 && d[k] * d[l] < 0) {
      double x = p[k] + (p[l] - p[k]) * (d[k] / (d[k] - d[l]));
      double y = p[k] + (p[m] - p[k]) * (d[k] / (d[k] - d[m]));
      *lo = x < y ? x : y;
      *hi = x < y ? y : x;
      return;
    }
  }
  double a = INFINITY, b = -INFINITY;
  for (int k = 0; k < 3; k++) {
    int l = k == 2 ? 0 : k + 1;
    if (d[k] == 0) {
      a = fmin(a, p[k]);
      b = fmax(b, p[k]);
    }
    if ((d[k] < 0 && d[l] > 0) || (d[k] > 0 && d[l] < 0)) {
      double x = p[k] + (p[l] - p[k]) * (d[k] / (d[k] - d[l]));
      a = fmin(a, x);
      b = fmax(b, x);
    }
  }
  *lo = a;
  *hi = b;
}

/* The second half of Moller's test, for triangles that each straddle (or
 * touch) the other's plane: na, nb are their normals (any length, not
 * zero unless degenerate), dx[k] the signed distance of x[k] to y's plane
 * and dy[k] of y[k] to x's plane, both scaled alike per triangle (only
 * their signs and ratios matter). Their intervals on the line where the
 * planes cross must overlap, with a margin tol (a length) that only lets
 * more through. Coplanar or degenerate triangles are let through. */
int ce_triangles_meet_planes(const ce_vec3 x[3], ce_vec3 na, const double dx[3], const ce_vec3 y[3], ce_vec3 nb,
                             const double dy[3], double tol) {
  ce_vec3 D = ce_cross(na, nb);
  double dd = ce_norm2(D), nn = ce_norm2(na) * ce_norm2(nb);
  if (!(dd > 1e-20 * nn)) return 1;
  if ((dx[0] == 0 && dx[1] == 0 && dx[2] == 0) || (dy[0] == 0 && dy[1] == 0 && dy[2] == 0)) return 1;
  double px[3], py[3], alo, ahi, blo, bhi;
  for (int k = 0; k < 3; k++) {
    px[k] = ce_dot(D, x[k]);
    py[k] = ce_dot(D, y[k]);
  }
  meet_interval(px, dx, &alo, &ahi);
  meet_interval(py, dy, &blo, &bhi);
  double margin = 1e-9 * (fabs(alo) + fabs(ahi) + fabs(blo) + fabs(bhi)) + tol * sqrt(dd);
  return ahi >= blo - margin && bhi >= alo - margin;
}

/* Moller's test: each triangle straddles the other's plane and their
 * intervals on the line where the planes cross overlap, with a margin
 * (tol, a length) that only lets more through. Coplanar or degenerate
 * triangles are let through. */
int ce_triangles_meet(const ce_vec3 x[3], const ce_vec3 y[3], double tol) {
  ce_vec3 na = ce_cross(ce_sub(x[1], x[0]), ce_sub(x[2], x[0]));
  double dy[3], dx[3];
  for (int k = 0; k < 3; k++) dy[k] = ce_dot(na, ce_sub(y[k], x[0]));
  if ((dy[0] > 0 && dy[1] > 0 && dy[2] > 0) || (dy[0] < 0 && dy[1] < 0 && dy[2] < 0)) return 0;
  ce_vec3 nb = ce_cross(ce_sub(y[1], y[0]), ce_sub(y[2], y[0]));
  for (int k = 0; k < 3; k++) dx[k] = ce_dot(nb, ce_sub(x[k], y[0]));
  if ((dx[0] > 0 && dx[1] > 0 && dx[2] > 0) || (dx[0] < 0 && dx[1] < 0 && dx[2] < 0)) return 0;
  return ce_triangles_meet_planes(x, na, dx, y, nb, dy, tol);
}

/* The closest point by Voronoi regions (Ericson, Real-Time Collision
 * Detection, 5.1.5). */
ce_vec3 ce_closest_point_triangle(ce_vec3 p, ce_vec3 a, ce_vec3 b, ce_vec3 c) {
  ce_vec3 ab = ce_sub(b, a), ac = ce_sub(c, a), ap = ce_sub(p, a);
  double d1 = ce_dot(ab, ap), d2 = ce_dot(ac, ap);
  if (d1 <= 0 && d2 <= 0) return a;
  ce_vec3 bp = ce_sub(p, b);
  double d3 = ce_dot(ab, bp), d4 = ce_dot(ac, bp);
  if (d3 >= 0 && d4 <= d3) return b;
  double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) return ce_axpy(a, d1 / (d1 - d3), ab);
  ce_vec3 cp = ce_sub(p, c);
  double d5 = ce_dot(ab, cp), d6 = ce_dot(ac, cp);
  if (d6 >= 0 && d5 <= d6) return c;
  double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) return ce_axpy(a, d2 / (d2 - d6), ac);
  double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0)
    return ce_axpy(b, (d4 - d3) / ((d4 - d3) + (d5 - d6)), ce_sub(c, b));
  double den = 1.0 / (va + vb + vc);
  return ce_add(a, ce_add(ce_scale(ab, vb * den), ce_scale(ac, vc * den)));
}
