/* test_hull.c — convex hulls of point sets: rigid hull meshes and compliant
 * starburst tet meshes. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static ce_props rigid(void) { return ce_test_props(CE_RIGID, 0, 0); }
static ce_props compliant(double E) { return ce_test_props(CE_COMPLIANT, E, 0); }

static ce_errno hull_of(const double *pts, int32_t n, const ce_props *pr, ce_geometry **g, ce_error *err) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_CONVEX;
  s.points = pts;
  s.npoints = n;
  return ce_build_convex(&s, pr, g, err);
}

/* 8 box corners after `extra` noise points strictly inside the box. */
static double *box_points(ce_vec3 lo, ce_vec3 hi, int extra, uint64_t seed, int32_t *n) {
  *n = 8 + extra;
  double *p = malloc((size_t)*n * 3 * sizeof *p);
  for (int i = 0; i < extra; i++) {
    p[3 * i] = lo.x + (hi.x - lo.x) * (0.01 + 0.98 * ce_test_rand(&seed));
    p[3 * i + 1] = lo.y + (hi.y - lo.y) * (0.01 + 0.98 * ce_test_rand(&seed));
    p[3 * i + 2] = lo.z + (hi.z - lo.z) * (0.01 + 0.98 * ce_test_rand(&seed));
  }
  for (int c = 0; c < 8; c++) {
    double *q = p + 3 * (extra + c);
    q[0] = c & 1 ? hi.x : lo.x;
    q[1] = c & 2 ? hi.y : lo.y;
    q[2] = c & 4 ? hi.z : lo.z;
  }
  return p;
}

/* Checks the closed-surface invariants of a rigid hull and returns its
 * volume, computed independently as sum(area * plane offset / 3) about the
 * vertex mean. */
static double check_rigid_hull(const ce_geometry *g, const double *pts, int32_t n) {
  const ce_trimesh *m = &g->tri;
  cr_assert_eq(m->nf, 2 * m->nv - 4, "Euler: %d faces, %d vertices", m->nf, m->nv);
  ce_vec3 o = ce_v3(0, 0, 0);
  for (int i = 0; i < m->nv; i++) o = ce_add(o, m->v[i]);
  o = ce_scale(o, 1.0 / m->nv);
  double vol = 0, extent = 0;
  for (int i = 0; i < n; i++) extent = fmax(extent, fabs(pts[3 * i]) + fabs(pts[3 * i + 1]) + fabs(pts[3 * i + 2]));
  for (int f = 0; f < m->nf; f++) {
    ce_vec3 a = m->v[m->tri[f][0]];
    ce_vec3 nrm = m->normal[f];
    double h = ce_dot(nrm, ce_sub(a, o));
    cr_assert(h > 0, "face %d does not face away from the interior (%g)", f, h);
    vol += m->area[f] * h / 3;
    /* every input point is inside or on every face plane */
    for (int i = 0; i < n; i++) {
      double d = ce_dot(nrm, ce_sub(ce_v3(pts[3 * i], pts[3 * i + 1], pts[3 * i + 2]), a));
      cr_assert(d <= 1e-11 * extent, "point %d is %g outside face %d", i, d, f);
    }
    for (int j = 0; j < 3; j++) cr_assert(m->adj[f][j] >= 0);
  }
  cr_assert(fabs(vol - g->volume) <= 1e-12 * vol, "volume %.17g vs %.17g", vol, g->volume);
  return vol;
}

Test(hull, box_with_interior_noise_is_exactly_the_box) {
  int32_t n;
  double *p = box_points(ce_v3(-0.3, -1, 0.5), ce_v3(0.7, 2, 0.75), 300, 11, &n);
  ce_props pr = rigid();
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(hull_of(p, n, &pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert_eq(g->shape, CE_SHAPE_CONVEX);
  cr_assert_eq(g->compliance, CE_RIGID);
  cr_assert_eq(g->tri.nv, 8);
  cr_assert_eq(g->tri.nf, 12);
  cr_assert(fabs(g->volume - 0.75) < 1e-12, "volume %.17g", g->volume);
  double v = check_rigid_hull(g, p, n);
  cr_assert(fabs(v - 0.75) < 1e-12);
  /* hull vertices are the corners, in input order */
  for (int c = 0; c < 8; c++) {
    cr_assert_eq(g->tri.v[c].x, p[3 * (300 + c)]);
    cr_assert_eq(g->tri.v[c].y, p[3 * (300 + c) + 1]);
    cr_assert_eq(g->tri.v[c].z, p[3 * (300 + c) + 2]);
  }
  ce_geometry_free(g);
  free(p);
}

Test(hull, far_from_origin_and_small) {
  int32_t n;
  ce_vec3 lo = ce_v3(1000, -2000, 500), hi = ce_v3(1000.001, -1999.998, 500.0005);
  double *p = box_points(lo, hi, 100, 5, &n);
  ce_props pr = rigid();
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(hull_of(p, n, &pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert_eq(g->tri.nv, 8);
  double expect = (hi.x - lo.x) * (hi.y - lo.y) * (hi.z - lo.z);
  cr_assert(fabs(g->volume - expect) < 1e-8 * expect, "volume %.17g vs %.17g", g->volume, expect);
  ce_geometry_free(g);
  free(p);
}

Test(hull, cube_with_points_on_faces_edges_and_duplicates) {
  /* unit cube corners, each twice, + 5x5 grids on every face (edges and
   * corners included) + interior points */
  int32_t n = 0;
  double *p = malloc(1000 * 3 * sizeof *p);
  uint64_t s = 3;
  for (int face = 0; face < 6; face++)
    for (int i = 0; i < 5; i++)
      for (int j = 0; j < 5; j++) {
        int ax = face / 2;
        double c[3];
        c[ax] = face & 1;
        c[(ax + 1) % 3] = i / 4.0;
        c[(ax + 2) % 3] = j / 4.0;
        memcpy(p + 3 * n++, c, sizeof c);
      }
  for (int k = 0; k < 50; k++) {
    p[3 * n] = 0.1 + 0.8 * ce_test_rand(&s);
    p[3 * n + 1] = 0.1 + 0.8 * ce_test_rand(&s);
    p[3 * n + 2] = 0.1 + 0.8 * ce_test_rand(&s);
    n++;
  }
  for (int c = 0; c < 8; c++) {
    p[3 * n] = c & 1;
    p[3 * n + 1] = (c >> 1) & 1;
    p[3 * n + 2] = (c >> 2) & 1;
    n++;
  }
  ce_props pr = rigid();
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(hull_of(p, n, &pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert(fabs(g->volume - 1) < 1e-12, "volume %.17g", g->volume);
  check_rigid_hull(g, p, n);
  /* every hull vertex is on the cube's boundary */
  for (int i = 0; i < g->tri.nv; i++) {
    ce_vec3 v = g->tri.v[i];
    double d = fmin(fmin(fmin(v.x, 1 - v.x), fmin(v.y, 1 - v.y)), fmin(v.z, 1 - v.z));
    cr_assert(fabs(d) < 1e-15, "hull vertex %d is inside (%g)", i, d);
  }
  ce_geometry_free(g);
  free(p);
}

Test(hull, sphere_points_are_all_hull_vertices) {
  const int ns = 1000, ni = 300;
  double *p = malloc((size_t)(ns + ni) * 3 * sizeof *p);
  uint64_t s = 99;
  for (int i = 0; i < ns + ni; i++) {
    double z = 2 * ce_test_rand(&s) - 1, phi = 2 * M_PI * ce_test_rand(&s);
    double r = i < ns ? 1.0 : 0.5 * ce_test_rand(&s);
    double q = sqrt(1 - z * z);
    p[3 * i] = r * q * cos(phi);
    p[3 * i + 1] = r * q * sin(phi);
    p[3 * i + 2] = r * z;
  }
  /* interleave: swap some interior points to the front */
  for (int i = 0; i < ni; i += 2) {
    double t[3];
    memcpy(t, p + 3 * i, sizeof t);
    memcpy(p + 3 * i, p + 3 * (ns + i), sizeof t);
    memcpy(p + 3 * (ns + i), t, sizeof t);
  }
  ce_props pr = rigid();
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(hull_of(p, ns + ni, &pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert_eq(g->tri.nv, ns, "hull has %d vertices", g->tri.nv);
  cr_assert_eq(g->tri.nf, 2 * ns - 4);
  for (int i = 0; i < g->tri.nv; i++) cr_assert(fabs(ce_norm(g->tri.v[i]) - 1) < 1e-15);
  double v = check_rigid_hull(g, p, ns + ni);
  double ball = 4.0 / 3 * M_PI;
  cr_assert(v < ball && v > 0.98 * ball, "volume %g vs ball %g", v, ball);
  /* deterministic: a second build gives the same triangles */
  ce_geometry *g2 = NULL;
  cr_assert_eq(hull_of(p, ns + ni, &pr, &g2, &err), CE_OK);
  cr_assert_eq(memcmp(g->tri.tri, g2->tri.tri, (size_t)g->tri.nf * sizeof *g->tri.tri), 0);
  ce_geometry_free(g2);
  ce_geometry_free(g);
  free(p);
}

Test(hull, icosahedron_with_coplanar_points) {
  const double phi = (1 + sqrt(5)) / 2;
  double ico[12][3];
  int k = 0;
  for (int a = 0; a < 3; a++)
    for (int s1 = -1; s1 <= 1; s1 += 2)
      for (int s2 = -1; s2 <= 1; s2 += 2) {
        ico[k][a] = 0;
        ico[k][(a + 1) % 3] = s1;
        ico[k][(a + 2) % 3] = s2 * phi;
        k++;
      }
  double *p = malloc(2000 * 3 * sizeof *p);
  int n = 0;
  uint64_t s = 17;
  /* points on every face (edge length 2 triples) and on every edge */
  for (int a = 0; a < 12; a++)
    for (int b = a + 1; b < 12; b++) {
      double dab = hypot(hypot(ico[a][0] - ico[b][0], ico[a][1] - ico[b][1]), ico[a][2] - ico[b][2]);
      if (fabs(dab - 2) > 1e-9) continue;
      for (int j = 0; j < 3; j++) p[3 * n + j] = 0.5 * (ico[a][j] + ico[b][j]);
      n++;
      for (int c = b + 1; c < 12; c++) {
        double dac = hypot(hypot(ico[a][0] - ico[c][0], ico[a][1] - ico[c][1]), ico[a][2] - ico[c][2]);
        double dbc = hypot(hypot(ico[b][0] - ico[c][0], ico[b][1] - ico[c][1]), ico[b][2] - ico[c][2]);
        if (fabs(dac - 2) > 1e-9 || fabs(dbc - 2) > 1e-9) continue;
        for (int r = 0; r < 5; r++) {
          double u = ce_test_rand(&s), w = ce_test_rand(&s);
          if (u + w > 1) {
            u = 1 - u;
            w = 1 - w;
          }
          for (int j = 0; j < 3; j++) p[3 * n + j] = ico[a][j] + u * (ico[b][j] - ico[a][j]) + w * (ico[c][j] - ico[a][j]);
          n++;
        }
      }
    }
  for (int r = 0; r < 200; r++) {
    for (int j = 0; j < 3; j++) p[3 * n + j] = 1.4 * (ce_test_rand(&s) - 0.5);
    n++;
  }
  for (int rep = 0; rep < 2; rep++)
    for (int a = 0; a < 12; a++) {
      memcpy(p + 3 * n, ico[a], sizeof ico[a]);
      n++;
    }
  ce_props pr = rigid();
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(hull_of(p, n, &pr, &g, &err), CE_OK, "%s", err.message);
  double expect = 10.0 / 3.0 * (3 + sqrt(5)); /* (5/12)(3 + sqrt 5) a^3, a = 2 */
  cr_assert(fabs(g->volume - expect) < 1e-12 * expect, "volume %.17g vs %.17g", g->volume, expect);
  check_rigid_hull(g, p, n);
  cr_assert(g->tri.nv >= 12);
  ce_geometry_free(g);
  free(p);
}

Test(hull, compliant_box_starburst) {
  int32_t n;
  ce_vec3 lo = ce_v3(-0.3, -1, 0.5), hi = ce_v3(0.7, 2, 0.75);
  double *p = box_points(lo, hi, 200, 23, &n);
  const double E = 4e5;
  ce_props pr = compliant(E);
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(hull_of(p, n, &pr, &g, &err), CE_OK, "%s", err.message);
  const ce_tetmesh *m = &g->tet;
  cr_assert_eq(g->compliance, CE_COMPLIANT);
  cr_assert_eq(g->shape, CE_SHAPE_CONVEX);
  cr_assert_eq(m->nt, 12);
  cr_assert_eq(m->nv, 9);
  /* the centroid is the last vertex: the box centre, pressure E */
  ce_vec3 c = m->v[8];
  cr_assert(fabs(c.x - 0.2) < 1e-12 && fabs(c.y - 0.5) < 1e-12 && fabs(c.z - 0.625) < 1e-12, "centroid (%g, %g, %g)",
            c.x, c.y, c.z);
  cr_assert_eq(m->p[8], E);
  for (int i = 0; i < 8; i++) cr_assert_eq(m->p[i], 0);
  double total = 0;
  for (int t = 0; t < m->nt; t++) {
    ce_vec3 a = m->v[m->tet[t][0]], b = m->v[m->tet[t][1]], d = m->v[m->tet[t][2]], e = m->v[m->tet[t][3]];
    double vol = ce_dot(ce_sub(b, a), ce_cross(ce_sub(d, a), ce_sub(e, a))) / 6;
    cr_assert(vol > 0, "tet %d volume %g", t, vol);
    total += vol;
    cr_assert_eq(m->tet[t][0], 8);
    cr_assert_eq(m->adj[t][0], -1);
    /* the field at the centroid is E in every tet */
    cr_assert(fabs(ce_dot(m->grad[t], c) + m->offset[t] - E) < 1e-9 * E);
  }
  cr_assert(fabs(total - 0.75) < 1e-12, "total %.17g", total);
  cr_assert(fabs(g->volume - 0.75) < 1e-12);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert_eq(info.min_pressure, 0);
  cr_assert_eq(info.max_pressure, E);
  cr_assert_eq(info.tetrahedra, 12);
  ce_geometry_free(g);
  free(p);
}

Test(hull, compliant_sphere_points) {
  const int ns = 300;
  double *p = malloc((size_t)ns * 3 * sizeof *p);
  uint64_t s = 5;
  for (int i = 0; i < ns; i++) {
    double z = 2 * ce_test_rand(&s) - 1, phi = 2 * M_PI * ce_test_rand(&s), q = sqrt(1 - z * z);
    p[3 * i] = 0.2 * q * cos(phi) + 3;
    p[3 * i + 1] = 0.2 * q * sin(phi);
    p[3 * i + 2] = 0.2 * z;
  }
  ce_props rp = rigid(), cp = compliant(1e6);
  ce_error err;
  ce_geometry *gr = NULL, *gc = NULL;
  cr_assert_eq(hull_of(p, ns, &rp, &gr, &err), CE_OK, "%s", err.message);
  cr_assert_eq(hull_of(p, ns, &cp, &gc, &err), CE_OK, "%s", err.message);
  cr_assert_eq(gc->tet.nt, gr->tri.nf);
  cr_assert_eq(gc->tet.nv, gr->tri.nv + 1);
  cr_assert(fabs(gc->volume - gr->volume) < 1e-12 * gr->volume, "%.17g vs %.17g", gc->volume, gr->volume);
  cr_assert_eq(gc->tet.p[gc->tet.nv - 1], 1e6);
  ce_geometry_free(gr);
  ce_geometry_free(gc);
  free(p);
}

Test(hull, degenerate_point_sets) {
  double p[3 * 20];
  ce_props pr = rigid();
  ce_error err;
  ce_geometry *g = NULL;
  uint64_t s = 1;
  for (int i = 0; i < 20; i++) {
    p[3 * i] = ce_test_rand(&s);
    p[3 * i + 1] = ce_test_rand(&s);
    p[3 * i + 2] = 2 * p[3 * i] - p[3 * i + 1] + 0.5; /* one plane */
  }
  cr_assert_eq(hull_of(p, 20, &pr, &g, &err), CE_EDEGENERATE);
  cr_assert(strstr(err.message, "coplanar"), "%s", err.message);
  for (int i = 0; i < 20; i++) {
    p[3 * i] = i;
    p[3 * i + 1] = 2 * i;
    p[3 * i + 2] = -i;
  }
  cr_assert_eq(hull_of(p, 20, &pr, &g, &err), CE_EDEGENERATE);
  cr_assert(strstr(err.message, "collinear"), "%s", err.message);
  for (int i = 0; i < 60; i++) p[i] = 1.5;
  cr_assert_eq(hull_of(p, 20, &pr, &g, &err), CE_EDEGENERATE);
  cr_assert(strstr(err.message, "coincide"), "%s", err.message);
  cr_assert_eq(hull_of(p, 3, &pr, &g, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "at least 4 points (got 3)"), "%s", err.message);
  /* a cube's corners at 1e200 m once welded into "all 1 points coincide", at
   * 1e-200 m into "all 8 points coincide": the range of primitive dimensions */
  double cube[24];
  for (int k = 0; k < 2; k++) {
    const double sc = k ? 1e200 : 1e-200;
    for (int i = 0; i < 8; i++)
      for (int a = 0; a < 3; a++) cube[3 * i + a] = (i >> a & 1) ? sc : -sc;
    cr_assert_eq(hull_of(cube, 8, &pr, &g, &err), CE_EINVAL);
    cr_assert(strstr(err.message, k ? "convex: point 0 (-1e+200, -1e+200, -1e+200) is beyond +-1e+09 m"
                                    : "convex: the points span 2e-200 m, below the 1e-09 m of the smallest primitive"),
              "%s", err.message);
  }
  p[7] = NAN;
  cr_assert_eq(hull_of(p, 20, &pr, &g, &err), CE_ENONFINITE);
  cr_assert(strstr(err.message, "point 2 "), "%s", err.message);
  ce_props bad = compliant(-1);
  cr_assert_eq(hull_of(p, 20, &bad, &g, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "modulus"), "%s", err.message);
  cr_assert_eq(hull_of(NULL, 20, &pr, &g, &err), CE_EINVAL);
  cr_assert_null(g);
}

Test(hull, lattice_cube_is_the_box) {
  /* 8x8x8 lattice: many coplanar and collinear points on every face */
  double *p = malloc(512 * 3 * sizeof *p);
  int n = 0;
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 8; j++)
      for (int k = 0; k < 8; k++) {
        p[3 * n] = i;
        p[3 * n + 1] = j;
        p[3 * n + 2] = k;
        n++;
      }
  ce_props pr = rigid();
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(hull_of(p, n, &pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert(fabs(g->volume - 343) < 1e-12 * 343, "volume %.17g", g->volume);
  cr_assert_eq(g->tri.nv, 8);
  check_rigid_hull(g, p, n);
  ce_geometry_free(g);
  ce_props cp = compliant(1e5);
  cr_assert_eq(hull_of(p, n, &cp, &g, &err), CE_OK, "%s", err.message);
  cr_assert(fabs(g->volume - 343) < 1e-12 * 343);
  cr_assert_eq(g->tet.nt, 12);
  ce_geometry_free(g);
  free(p);
}

Test(hull, near_duplicates_are_welded) {
  /* every cube corner 10 times, jittered by up to 1e-9 (well below the weld
   * tolerance 1e-6 * diagonal): the hull is the cube, with the first copy of
   * each corner kept */
  double p[80 * 3];
  uint64_t s = 8;
  int n = 0;
  for (int r = 0; r < 10; r++)
    for (int c = 0; c < 8; c++) {
      double j = r == 0 ? 0 : 1e-9;
      p[3 * n] = (c & 1) + j * (ce_test_rand(&s) - 0.5);
      p[3 * n + 1] = ((c >> 1) & 1) + j * (ce_test_rand(&s) - 0.5);
      p[3 * n + 2] = ((c >> 2) & 1) + j * (ce_test_rand(&s) - 0.5);
      n++;
    }
  ce_props pr = rigid(), cp = compliant(1e5);
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(hull_of(p, n, &pr, &g, &err), CE_OK, "%s", err.message);
  cr_assert_eq(g->tri.nv, 8);
  cr_assert(fabs(g->volume - 1) < 1e-14, "volume %.17g", g->volume);
  ce_geometry_free(g);
  cr_assert_eq(hull_of(p, n, &cp, &g, &err), CE_OK, "%s", err.message);
  cr_assert_eq(g->tet.nv, 9);
  cr_assert(fabs(g->volume - 1) < 1e-14);
  ce_geometry_free(g);
}

Test(hull, thin_slab_is_coplanar) {
  double p[50 * 3];
  uint64_t s = 4;
  for (int i = 0; i < 50; i++) {
    p[3 * i] = ce_test_rand(&s);
    p[3 * i + 1] = ce_test_rand(&s);
    p[3 * i + 2] = 1e-9 * ce_test_rand(&s); /* 1e-9 thick: below 1e-6 of the size */
  }
  ce_props pr = rigid();
  ce_error err;
  ce_geometry *g = NULL;
  cr_assert_eq(hull_of(p, 50, &pr, &g, &err), CE_EDEGENERATE);
  cr_assert(strstr(err.message, "coplanar (thickness"), "%s", err.message);
  /* 1e-4 thick is a valid (thin) hull */
  for (int i = 0; i < 50; i++) p[3 * i + 2] *= 1e5;
  cr_assert_eq(hull_of(p, 50, &pr, &g, &err), CE_OK, "%s", err.message);
  check_rigid_hull(g, p, 50);
  ce_geometry_free(g);
  ce_props cp = compliant(1e5);
  cr_assert_eq(hull_of(p, 50, &cp, &g, &err), CE_OK, "%s", err.message);
  ce_geometry_free(g);
}

/* Hostile inputs never crash, never return a geometry with an error, and
 * always explain the error. Deterministic; clean under ASan/UBSan. */
Test(hull, random_hostile_point_sets) {
  uint64_t s = 2024;
  double p[12 * 3];
  int ok = 0, failed = 0;
  for (int it = 0; it < 20000; it++) {
    int n = 1 + (int)(ce_test_rand(&s) * 12);
    for (int i = 0; i < 3 * n; i++) {
      double r = ce_test_rand(&s);
      p[i] = r < 0.002 ? NAN : (r < 0.4 ? floor(ce_test_rand(&s) * 3) : ce_test_rand(&s) * 2 - 1);
    }
    ce_props pr = ce_test_rand(&s) < 0.5 ? rigid() : compliant(1e5);
    ce_error err;
    memset(&err, 0, sizeof err);
    ce_geometry *g = (ce_geometry *)&err;
    ce_errno e = hull_of(p, n, &pr, &g, &err);
    if (e == CE_OK) {
      cr_assert_not_null(g);
      cr_assert(g->volume > 0);
      ce_geometry_free(g);
      ok++;
    } else {
      cr_assert_null(g);
      cr_assert_eq(err.code, e);
      cr_assert(err.message[0] != 0);
      failed++;
    }
  }
  cr_assert(ok > 1000 && failed > 1000, "ok %d failed %d", ok, failed);
}
