/* test_boundary.c — ce_geometry_boundary: the boundary of a tet mesh is a
 * closed, outward-wound triangle surface enclosing the mesh's volume; a
 * rigid mesh's is its own triangles; a terrain's is its sampled surface; a
 * half space has none. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static int cmp(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return a < b ? -1 : a > b;
}

/* Every directed edge appears once and its reverse once: closed, and
 * consistently wound. */
static void assert_closed(const ce_boundary *b) {
  int64_t n = 3 * (int64_t)b->nt;
  int64_t *e = malloc((size_t)n * sizeof *e), *r = malloc((size_t)n * sizeof *r);
  for (int32_t t = 0; t < b->nt; t++)
    for (int k = 0; k < 3; k++) {
      int64_t i = b->tri[3 * t + k], j = b->tri[3 * t + (k + 1) % 3];
      e[3 * t + k] = i << 32 | j;
      r[3 * t + k] = j << 32 | i;
    }
  qsort(e, (size_t)n, sizeof *e, cmp);
  qsort(r, (size_t)n, sizeof *r, cmp);
  for (int64_t k = 0; k < n; k++) {
    if (k) cr_assert_neq(e[k], e[k - 1], "directed edge used twice");
    cr_assert_eq(e[k], r[k], "edge without its reverse: the surface is open or mis-wound");
  }
  free(e);
  free(r);
}

/* Volume enclosed by the triangles (divergence theorem): > 0 when outward. */
static double enclosed_volume(const ce_boundary *b) {
  double v = 0;
  for (int32_t t = 0; t < b->nt; t++) {
    const double *p = &b->v[3 * b->tri[3 * t]], *q = &b->v[3 * b->tri[3 * t + 1]], *s = &b->v[3 * b->tri[3 * t + 2]];
    v += (p[0] * (q[1] * s[2] - q[2] * s[1]) - p[1] * (q[0] * s[2] - q[2] * s[0]) +
          p[2] * (q[0] * s[1] - q[1] * s[0])) / 6.0;
  }
  return v;
}

Test(boundary, compliant_sphere_is_closed_outward_and_encloses_its_volume) {
  ce_geometry *g = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.05, ce_v3(0, 0, 0), 0.01);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  ce_boundary b;
  ce_error err;
  cr_assert_eq(ce_geometry_boundary(g, &b, &err), CE_OK, "%s", err.message);
  cr_assert_gt(b.nt, 0);
  cr_assert_lt(b.nv, info.vertices, "interior vertices are left out");
  assert_closed(&b);
  cr_assert(ce_test_close(enclosed_volume(&b), info.volume, 1e-9, 0), "%g vs %g", enclosed_volume(&b),
            info.volume);
  ce_boundary_free(&b);
  ce_geometry_free(g);
}

Test(boundary, rigid_box_is_its_triangles) {
  ce_geometry *g = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0, ce_v3(0.2, 0.4, 0.6), 0.1);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  ce_boundary b;
  cr_assert_eq(ce_geometry_boundary(g, &b, NULL), CE_OK);
  cr_assert_eq(b.nt, info.triangles);
  assert_closed(&b);
  cr_assert(ce_test_close(enclosed_volume(&b), 0.2 * 0.4 * 0.6, 1e-9, 0));
  ce_boundary_free(&b);
  ce_geometry_free(g);
}

Test(boundary, terrain_is_sampled_on_its_grid) {
  double z[36];
  for (int k = 0; k < 36; k++) z[k] = 0.1 * (k % 6) + 0.05 * (k / 6);
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.1);
  ce_geometry *g = NULL;
  cr_assert_eq(ce_geometry_from_heightfield(z, 6, 6, 1.0, 1.0, ce_v3(0, 0, 0), 1, &pr, &g, NULL), CE_OK);
  ce_boundary b;
  cr_assert_eq(ce_geometry_boundary(g, &b, NULL), CE_OK);
  const int n = CE_BOUNDARY_TERRAIN_SAMPLES;
  cr_assert_eq(b.nv, n * n);
  cr_assert_eq(b.nt, 2 * (n - 1) * (n - 1));
  /* a plane stays a plane: z = 0.1 x + 0.05 y at every sample */
  for (int32_t i = 0; i < b.nv; i += 97)
    cr_assert(ce_test_close(b.v[3 * i + 2], 0.1 * b.v[3 * i] + 0.05 * b.v[3 * i + 1], 1e-9, 1e-12));
  /* wound counter-clockwise seen from above */
  const double *p = &b.v[3 * b.tri[0]], *q = &b.v[3 * b.tri[1]], *s = &b.v[3 * b.tri[2]];
  cr_assert_gt((q[0] - p[0]) * (s[1] - p[1]) - (q[1] - p[1]) * (s[0] - p[0]), 0);
  ce_boundary_free(&b);
  ce_geometry_free(g);
}

Test(boundary, half_space_has_none) {
  ce_geometry *g = ce_test_shape(CE_SHAPE_HALFSPACE, CE_RIGID, 0, ce_v3(0, 0, 0), 0.1);
  ce_boundary b;
  ce_error err;
  cr_assert_eq(ce_geometry_boundary(g, &b, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "half space"));
  cr_assert_eq(b.nt, 0);
  cr_assert_null(b.v);
  ce_geometry_free(g);
}
