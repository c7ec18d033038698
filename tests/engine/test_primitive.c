/* test_primitive.c — the primitive meshes (ce_primitive.c): orientation,
 * conformity, closed boundaries, pressure values, exact linearity of the
 * box and cylinder fields, volume convergence, errors and size limits. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_primitive.h"
#include "ce_test_util.h"

#define E0 1.0e5

static ce_shape shape_sphere(double r) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_SPHERE;
  s.radius = r;
  return s;
}
static ce_shape shape_box(double x, double y, double z) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_BOX;
  s.size = ce_v3(x, y, z);
  return s;
}
static ce_shape shape_ellipsoid(double a, double b, double c) {
  ce_shape s = shape_box(a, b, c);
  s.type = CE_SHAPE_ELLIPSOID;
  return s;
}
static ce_shape shape_rl(ce_shape_type t, double r, double l) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = t;
  s.radius = r;
  s.length = l;
  return s;
}

static double tet_volume(const ce_rawmesh *m, int32_t t) {
  ce_vec3 a = m->v[m->tet[t][0]], b = m->v[m->tet[t][1]], c = m->v[m->tet[t][2]],
          d = m->v[m->tet[t][3]];
  return ce_dot(ce_sub(b, a), ce_cross(ce_sub(c, a), ce_sub(d, a))) / 6.0;
}

typedef struct face { int32_t k[3]; int32_t o[3]; int parity; } face;

static int face_cmp(const void *pa, const void *pb) {
  const face *a = pa, *b = pb;
  for (int i = 0; i < 3; ++i)
    if (a->k[i] != b->k[i]) return a->k[i] < b->k[i] ? -1 : 1;
  return 0;
}

static int edge_cmp(const void *pa, const void *pb) {
  const int64_t *a = pa, *b = pb;
  return *a < *b ? -1 : (*a > *b);
}

static face make_face(int32_t a, int32_t b, int32_t c) {
  face f;
  f.o[0] = a; f.o[1] = b; f.o[2] = c;
  int32_t k[3] = {a, b, c};
  int par = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 2 - i; ++j)
      if (k[j] > k[j + 1]) { int32_t s = k[j]; k[j] = k[j + 1]; k[j + 1] = s; par ^= 1; }
  memcpy(f.k, k, sizeof k);
  f.parity = par;
  return f;
}

/* Closed, consistently oriented 2-manifold: every directed edge appears
 * exactly once and so does its reverse. Returns the number of violations. */
static int64_t surface_defects(int32_t (*tri)[3], int64_t nf, int64_t nv) {
  int64_t *e = malloc((size_t)(3 * nf) * sizeof *e), bad = 0;
  cr_assert_not_null(e);
  for (int64_t i = 0; i < nf; ++i)
    for (int k = 0; k < 3; ++k) e[3 * i + k] = (int64_t)tri[i][k] * nv + tri[i][(k + 1) % 3];
  qsort(e, (size_t)(3 * nf), sizeof *e, edge_cmp);
  for (int64_t i = 0; i < 3 * nf; ++i) {
    if (i > 0 && e[i] == e[i - 1]) ++bad;
    int64_t rev = (e[i] % nv) * nv + e[i] / nv;
    if (!bsearch(&rev, e, (size_t)(3 * nf), sizeof *e, edge_cmp)) ++bad;
  }
  free(e);
  return bad;
}

/* Volume enclosed by a triangle surface (divergence theorem). */
static double surface_volume(const ce_vec3 *v, int32_t (*tri)[3], int64_t nf) {
  double s = 0;
  for (int64_t i = 0; i < nf; ++i)
    s += ce_dot(v[tri[i][0]], ce_cross(v[tri[i][1]], v[tri[i][2]])) / 6.0;
  return s;
}

typedef struct tet_report {
  double volume, min_volume, boundary_volume, max_p, min_p, max_boundary_p;
  int64_t nboundary, bad_faces, surface_bad;
} tet_report;

/* Orientation, conformity (interior faces shared by exactly two tets with
 * opposite orientations), closed boundary, pressure on the boundary. */
static tet_report check_tets(const ce_rawmesh *m) {
  tet_report r;
  memset(&r, 0, sizeof r);
  r.min_volume = INFINITY;
  r.min_p = INFINITY;
  r.max_p = -INFINITY;
  for (int32_t t = 0; t < m->nt; ++t) {
    double vol = tet_volume(m, t);
    r.volume += vol;
    r.min_volume = fmin(r.min_volume, vol);
  }
  for (int32_t i = 0; i < m->nv; ++i) {
    r.max_p = fmax(r.max_p, m->p[i]);
    r.min_p = fmin(r.min_p, m->p[i]);
  }
  int64_t nfc = 4 * (int64_t)m->nt;
  face *f = malloc((size_t)nfc * sizeof *f);
  cr_assert_not_null(f);
  for (int32_t t = 0; t < m->nt; ++t) {
    const int32_t *q = m->tet[t];
    f[4 * t + 0] = make_face(q[1], q[2], q[3]);
    f[4 * t + 1] = make_face(q[0], q[3], q[2]);
    f[4 * t + 2] = make_face(q[0], q[1], q[3]);
    f[4 * t + 3] = make_face(q[0], q[2], q[1]);
  }
  qsort(f, (size_t)nfc, sizeof *f, face_cmp);
  int32_t(*bt)[3] = malloc((size_t)nfc * sizeof *bt);
  cr_assert_not_null(bt);
  int64_t nb = 0;
  for (int64_t i = 0; i < nfc;) {
    int64_t j = i;
    while (j < nfc && face_cmp(&f[i], &f[j]) == 0) ++j;
    if (j - i == 1) {
      memcpy(bt[nb++], f[i].o, sizeof f[i].o);
    } else if (j - i == 2) {
      if (f[i].parity == f[i + 1].parity) ++r.bad_faces;
    } else {
      r.bad_faces += j - i;
    }
    i = j;
  }
  r.nboundary = nb;
  r.surface_bad = surface_defects(bt, nb, m->nv);
  r.boundary_volume = surface_volume(m->v, bt, nb);
  r.max_boundary_p = 0;
  for (int64_t i = 0; i < nb; ++i)
    for (int k = 0; k < 3; ++k) r.max_boundary_p = fmax(r.max_boundary_p, fabs(m->p[bt[i][k]]));
  free(bt);
  free(f);
  return r;
}

static void assert_good_tets(const ce_rawmesh *m, double E, const char *what) {
  tet_report r = check_tets(m);
  cr_assert_gt(m->nt, 0, "%s: no tets", what);
  cr_assert_gt(r.min_volume, 0, "%s: smallest tet volume %g", what, r.min_volume);
  cr_assert_eq(r.bad_faces, 0, "%s: %ld non-conforming faces", what, (long)r.bad_faces);
  cr_assert_eq(r.surface_bad, 0, "%s: boundary not a closed oriented manifold (%ld defects)",
               what, (long)r.surface_bad);
  /* tets tile the solid: their volumes add up to the boundary's volume */
  cr_assert(ce_test_close(r.volume, r.boundary_volume, 1e-10, 0),
            "%s: tet volume %.15g vs enclosed %.15g", what, r.volume, r.boundary_volume);
  cr_assert_eq(r.max_boundary_p, 0.0, "%s: boundary pressure %g", what, r.max_boundary_p);
  cr_assert(ce_test_close(r.max_p, E, 1e-12, 0), "%s: max pressure %.17g", what, r.max_p);
  cr_assert_geq(r.min_p, 0.0, "%s: min pressure %g", what, r.min_p);
}

static ce_rawmesh make(ce_shape s, ce_compliance c, double h) {
  ce_rawmesh m;
  ce_error err = {0};
  ce_errno e = ce_primitive_mesh(&s, c, E0, h, &m, &err);
  cr_assert_eq(e, CE_OK, "mesh failed: %s", err.message);
  return m;
}

/* ---- sphere ---------------------------------------------------------------- */

Test(primitive, sphere_level_and_surface_count) {
  cr_assert_eq(ce_icosphere_level(0.1, 0.0066), 4);
  cr_assert_eq(ce_icosphere_level(0.1, 0.2), 0);
  cr_assert_eq(ce_icosphere_level(0.1, 0.05), 2);
  ce_rawmesh m = make(shape_sphere(0.1), CE_RIGID, 0.0066);
  cr_assert_eq(m.nf, 5120);
  cr_assert_eq(m.nv, 2562);
  ce_rawmesh_free(&m);
  m = make(shape_sphere(0.1), CE_COMPLIANT, 0.0066);
  tet_report r = check_tets(&m);
  cr_assert_eq(r.nboundary, 5120);
  ce_rawmesh_free(&m);
}

Test(primitive, sphere_compliant_meshes) {
  const double R = 0.1, hs[4] = {0.05, 0.026, 0.013, 0.0066};
  const double V = 4.0 / 3.0 * M_PI * R * R * R;
  double prev_err = INFINITY;
  for (int i = 0; i < 4; ++i) {
    ce_rawmesh m = make(shape_sphere(R), CE_COMPLIANT, hs[i]);
    assert_good_tets(&m, E0, "sphere");
    for (int32_t k = 0; k < m.nv; ++k) {
      double want = E0 * (1.0 - ce_norm(m.v[k]) / R);
      cr_assert(fabs(m.p[k] - want) <= 1e-9 * E0, "vertex %d p %g want %g", k, m.p[k], want);
    }
    tet_report r = check_tets(&m);
    double rel = (V - r.volume) / V;
    cr_log_info("sphere R=0.1 h=%g: %d tets, %d vertices, volume error %.3g%%", hs[i], m.nt,
                m.nv, 100 * rel);
    cr_assert_gt(rel, 0); /* inscribed polyhedron */
    /* h = 0.013 and 0.0066 both give level 4: same surface, same volume */
    cr_assert_leq(rel, prev_err * (1 + 1e-9));
    prev_err = rel;
    ce_rawmesh_free(&m);
  }
  cr_assert_lt(prev_err, 0.01); /* R/h = 15: within 1% */
}

Test(primitive, sphere_tet_counts) {
  /* level 4, shells at R, R-h, R-3h, R-7h (> R/2): 3 prism layers + core */
  ce_rawmesh m = make(shape_sphere(0.1), CE_COMPLIANT, 0.0066);
  cr_assert_eq(m.nt, 5120 * (3 * 3 + 1));
  ce_rawmesh_free(&m);
  /* coarse: level 0 icosahedron, no shell above R/2 -> 20 tets to the centre */
  m = make(shape_sphere(0.1), CE_COMPLIANT, 0.2);
  cr_assert_eq(m.nt, 20);
  cr_assert_eq(m.nv, 13);
  ce_rawmesh_free(&m);
}

/* ---- ellipsoid ------------------------------------------------------------ */

Test(primitive, ellipsoid_compliant) {
  const double a = 0.2, b = 0.1, c = 0.05;
  double prev = INFINITY;
  const double hs[3] = {0.08, 0.03, 0.012};
  for (int i = 0; i < 3; ++i) {
    ce_rawmesh m = make(shape_ellipsoid(a, b, c), CE_COMPLIANT, hs[i]);
    assert_good_tets(&m, E0, "ellipsoid");
    for (int32_t k = 0; k < m.nv; ++k) {
      ce_vec3 u = ce_v3(m.v[k].x / a, m.v[k].y / b, m.v[k].z / c);
      double want = E0 * (1.0 - ce_norm(u));
      cr_assert(fabs(m.p[k] - want) <= 1e-9 * E0, "vertex %d p %g want %g", k, m.p[k], want);
    }
    double V = 4.0 / 3.0 * M_PI * a * b * c, rel = (V - check_tets(&m).volume) / V;
    cr_assert_gt(rel, 0);
    cr_assert_lt(rel, prev);
    prev = rel;
    ce_rawmesh_free(&m);
  }
  cr_assert_lt(prev, 0.01); /* largest semi-axis / h = 16.7 */
}

/* ---- box and cylinder: exact linear fields --------------------------------- */

static double box_exact(ce_vec3 hsz, ce_vec3 x) {
  double d = fmin(hsz.x - fabs(x.x), fmin(hsz.y - fabs(x.y), hsz.z - fabs(x.z)));
  return E0 * d / fmin(hsz.x, fmin(hsz.y, hsz.z));
}

typedef struct prism { int n; double R, l; } prism;

static double prism_exact(const prism *P, ce_vec3 x) {
  double rho = P->R * cos(M_PI / P->n), d = P->l - fabs(x.z);
  for (int i = 0; i < P->n; ++i) {
    double al = (2.0 * i + 1.0) * M_PI / P->n;
    d = fmin(d, rho - (x.x * cos(al) + x.y * sin(al)));
  }
  return E0 * d / fmin(rho, P->l);
}

/* Largest |interpolated - exact| over random points in random tets. */
static double linearity_error(const ce_rawmesh *m, double (*exact)(const void *, ce_vec3),
                              const void *ctx, uint64_t seed) {
  double worst = 0;
  for (int s = 0; s < 4000; ++s) {
    int32_t t = (int32_t)(ce_test_rand(&seed) * m->nt);
    if (s < m->nt) t = s; /* every tet of small meshes at least once */
    double w[4], sum = 0;
    for (int k = 0; k < 4; ++k) sum += (w[k] = -log(1.0 - ce_test_rand(&seed)));
    ce_vec3 x = ce_v3(0, 0, 0);
    double p = 0;
    for (int k = 0; k < 4; ++k) {
      x = ce_axpy(x, w[k] / sum, m->v[m->tet[t][k]]);
      p += w[k] / sum * m->p[m->tet[t][k]];
    }
    worst = fmax(worst, fabs(p - exact(ctx, x)));
  }
  return worst;
}

static double box_exact_cb(const void *ctx, ce_vec3 x) { return box_exact(*(const ce_vec3 *)ctx, x); }
static double prism_exact_cb(const void *ctx, ce_vec3 x) { return prism_exact(ctx, x); }

Test(primitive, box_exact_field) {
  /* every ordering of the axes, cubes, square cross-sections, a thin plate;
   * coarse (hint > size: no refinement) and fine hints */
  const double sizes[][4] = {{0.4, 0.2, 0.1, 1.0},  {0.4, 0.2, 0.1, 0.02}, {0.1, 0.2, 0.4, 0.03},
                             {0.2, 0.4, 0.1, 0.05}, {0.2, 0.2, 0.2, 0.01}, {0.4, 0.1, 0.1, 0.02},
                             {0.3, 0.3, 0.1, 0.04}, {0.1, 0.3, 0.3, 1.0},  {1.0, 0.5, 0.02, 0.05}};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
    ce_rawmesh m =
        make(shape_box(sizes[i][0], sizes[i][1], sizes[i][2]), CE_COMPLIANT, sizes[i][3]);
    assert_good_tets(&m, E0, "box");
    ce_vec3 hsz = ce_v3(sizes[i][0] / 2, sizes[i][1] / 2, sizes[i][2] / 2);
    double vol = check_tets(&m).volume, want = sizes[i][0] * sizes[i][1] * sizes[i][2];
    cr_assert(ce_test_close(vol, want, 1e-12, 0), "box %zu volume %.15g want %.15g", i, vol, want);
    for (int32_t k = 0; k < m.nv; ++k)
      cr_assert(fabs(m.p[k] - box_exact(hsz, m.v[k])) <= 1e-9 * E0, "box %zu vertex %d", i, k);
    double le = linearity_error(&m, box_exact_cb, &hsz, 17 + i);
    cr_assert_leq(le, 1e-9 * E0, "box %zu: field off by %g", i, le);
    ce_rawmesh_free(&m);
  }
}

/* A box too flat to refine (1 m x 1 m x 1 um) keeps the unrefined
 * 104-tet medial mesh, exact and valid. */
Test(primitive, flat_box_falls_back_to_unrefined_mesh) {
  ce_rawmesh m = make(shape_box(1.0, 0.7, 1e-6), CE_COMPLIANT, 0.02);
  cr_assert_eq(m.nt, 104);
  assert_good_tets(&m, E0, "flat box");
  ce_vec3 hsz = ce_v3(0.5, 0.35, 0.5e-6);
  cr_assert_leq(linearity_error(&m, box_exact_cb, &hsz, 5), 1e-9 * E0);
  ce_rawmesh_free(&m);
}

/* The hint refines a box along its medial rectangle: 0.4 x 0.2 x 0.1 at
 * h = 0.02 has the slab |x| <= 0.15 cut into 15 slices of 26 cross-section
 * triangles (3 tets each), and no tet inside the slab is longer than h
 * along x. */
Test(primitive, box_refined_by_hint) {
  ce_rawmesh coarse = make(shape_box(0.4, 0.2, 0.1), CE_COMPLIANT, 1.0);
  ce_rawmesh m = make(shape_box(0.4, 0.2, 0.1), CE_COMPLIANT, 0.02);
  cr_assert_eq(coarse.nt, 154);
  cr_assert_gt(m.nt, 3 * 15 * 26);
  int64_t inside = 0;
  for (int32_t t = 0; t < m.nt; ++t) {
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < 4; ++k) {
      lo = fmin(lo, m.v[m.tet[t][k]].x);
      hi = fmax(hi, m.v[m.tet[t][k]].x);
    }
    if (hi <= 0.15 + 1e-12 && lo >= -0.15 - 1e-12) {
      ++inside;
      cr_assert_leq(hi - lo, 0.02 + 1e-12, "tet %d spans %g in x", t, hi - lo);
    }
  }
  cr_assert_eq(inside, 3 * 15 * 26);
  ce_rawmesh_free(&m);
  ce_rawmesh_free(&coarse);
}

Test(primitive, cylinder_exact_field) {
  /* long (L/2 > apothem), flat (L/2 < apothem), and L/2 == apothem */
  const double R = 0.1, h = 0.02;
  const int n = (int)ceil(2 * M_PI * R / h); /* 32 */
  const double rho = R * cos(M_PI / n);
  const double lengths[3] = {0.5, 0.05, 2 * rho};
  for (int i = 0; i < 3; ++i) {
    ce_rawmesh m = make(shape_rl(CE_SHAPE_CYLINDER, R, lengths[i]), CE_COMPLIANT, h);
    assert_good_tets(&m, E0, "cylinder");
    prism P = {n, R, lengths[i] / 2};
    double area = 0.5 * n * R * R * sin(2 * M_PI / n);
    double vol = check_tets(&m).volume;
    cr_assert(ce_test_close(vol, area * lengths[i], 1e-12, 0), "cylinder %d volume %.15g", i, vol);
    for (int32_t k = 0; k < m.nv; ++k)
      cr_assert(fabs(m.p[k] - prism_exact(&P, m.v[k])) <= 1e-9 * E0, "cyl %d vertex %d", i, k);
    double le = linearity_error(&m, prism_exact_cb, &P, 99 + i);
    cr_assert_leq(le, 1e-9 * E0, "cylinder %d: field off by %g", i, le);
    ce_rawmesh_free(&m);
  }
}

Test(primitive, long_cylinder_sliced_along_axis) {
  /* the side wedges are cut into slices of height <= h along the medial
   * segment |z| <= L/2 - apothem: n (3 slices + 4) tets, and each cap's n
   * sectors into K = R/4h rings of 2 tets (1 at the centre) */
  const double R = 0.1, L = 0.5, h = 0.02;
  const int n = 32;
  const double zo = L / 2 - R * cos(M_PI / n);
  const int slices = (int)ceil(2 * zo / h);
  ce_rawmesh m = make(shape_rl(CE_SHAPE_CYLINDER, R, L), CE_COMPLIANT, h);
  cr_assert_eq(slices, 16);
  const int K = 2;
  cr_assert_eq(m.nt, n * (3 * slices + 4) + 2 * n * (2 * K - 1));
  for (int32_t t = 0; t < m.nt; ++t) {
    double zlo = INFINITY, zhi = -INFINITY;
    for (int k = 0; k < 4; ++k) {
      zlo = fmin(zlo, m.v[m.tet[t][k]].z);
      zhi = fmax(zhi, m.v[m.tet[t][k]].z);
    }
    if (zhi <= zo + 1e-12 && zlo >= -zo - 1e-12)
      cr_assert_leq(zhi - zlo, h, "tet %d spans %g in z", t, zhi - zlo);
  }
  ce_rawmesh_free(&m);
}

/* Contact on a flat end (a coin, a can on a table) needs the cap resolved
 * across its radius, not only around it: both the long and the flat
 * cylinder put rings of vertices every R/K <= 4h on each cap, and no tet
 * with a face on the cap reaches across more than one ring. */
Test(primitive, cylinder_caps_have_rings) {
  const double R = 0.1, h = 0.005, lengths[2] = {0.5, 0.05};
  const int K = 5;
  for (int i = 0; i < 2; ++i) {
    double l = lengths[i] / 2;
    ce_rawmesh m = make(shape_rl(CE_SHAPE_CYLINDER, R, lengths[i]), CE_COMPLIANT, h);
    int seen[6] = {0, 0, 0, 0, 0, 0};
    for (int32_t k = 0; k < m.nv; ++k) {
      if (fabs(fabs(m.v[k].z) - l) > 1e-12) continue;
      double r = hypot(m.v[k].x, m.v[k].y) / R * K;
      int ri = (int)lround(r);
      cr_assert(fabs(r - ri) < 1e-9, "length %g: cap vertex %d at radius %g R/K", lengths[i], k, r);
      seen[ri]++;
    }
    for (int r = 0; r <= K; ++r) cr_assert_gt(seen[r], 0, "length %g: no cap vertex on ring %d", lengths[i], r);
    cr_assert_eq(seen[0], 2, "one centre per cap");
    for (int32_t t = 0; t < m.nt; ++t) {
      int on = 0;
      double rlo = INFINITY, rhi = -INFINITY;
      for (int k = 0; k < 4; ++k) {
        ce_vec3 x = m.v[m.tet[t][k]];
        if (fabs(fabs(x.z) - l) > 1e-12) continue;
        on++;
        double r = hypot(x.x, x.y);
        rlo = fmin(rlo, r), rhi = fmax(rhi, r);
      }
      if (on == 3) cr_assert_leq(rhi - rlo, R / K * (1 + 1e-9), "length %g: tet %d spans %g across the cap", lengths[i], t,
                                 rhi - rlo);
    }
    ce_rawmesh_free(&m);
  }
}

Test(primitive, cylinder_volume_converges) {
  const double R = 0.05, L = 0.2, V = M_PI * R * R * L;
  double prev = INFINITY;
  const double hs[3] = {0.03, 0.01, 0.0033};
  for (int i = 0; i < 3; ++i) {
    ce_rawmesh m = make(shape_rl(CE_SHAPE_CYLINDER, R, L), CE_COMPLIANT, hs[i]);
    double rel = (V - check_tets(&m).volume) / V;
    cr_assert_gt(rel, 0);
    cr_assert_lt(rel, prev);
    prev = rel;
    ce_rawmesh_free(&m);
  }
  cr_assert_lt(prev, 0.002); /* R/h = 15: a 96-gon */
}

/* ---- capsule ---------------------------------------------------------------- */

Test(primitive, capsule_compliant) {
  const double R = 0.05, L = 0.1, V = M_PI * R * R * L + 4.0 / 3.0 * M_PI * R * R * R;
  double prev = INFINITY;
  const double hs[3] = {0.03, 0.01, 0.0033};
  for (int i = 0; i < 3; ++i) {
    ce_rawmesh m = make(shape_rl(CE_SHAPE_CAPSULE, R, L), CE_COMPLIANT, hs[i]);
    assert_good_tets(&m, E0, "capsule");
    for (int32_t k = 0; k < m.nv; ++k) {
      ce_vec3 x = m.v[k];
      double z = fmax(-L / 2, fmin(L / 2, x.z));
      double r = ce_norm(ce_sub(x, ce_v3(0, 0, z)));
      double want = E0 * (1.0 - r / R);
      cr_assert(fabs(m.p[k] - want) <= 1e-9 * E0, "vertex %d p %g want %g", k, m.p[k], want);
    }
    double rel = (V - check_tets(&m).volume) / V;
    cr_assert_gt(rel, 0);
    cr_assert_lt(rel, prev);
    prev = rel;
    ce_rawmesh_free(&m);
  }
  cr_assert_lt(prev, 0.01);
}

/* ---- rigid surfaces --------------------------------------------------------- */

/* Outward: the normal points away from the nearest point of the segment
 * z in [-l, l] (l = 0 for all but the capsule). */
static void check_rigid_l(ce_shape s, double h, double V, double rtol, double l,
                          const char *what) {
  ce_rawmesh m = make(s, CE_RIGID, h);
  cr_assert_null(m.p);
  cr_assert_gt(m.nf, 0);
  cr_assert_eq(surface_defects(m.tri, m.nf, m.nv), 0, "%s: not closed/consistent", what);
  for (int32_t i = 0; i < m.nf; ++i) {
    ce_vec3 a = m.v[m.tri[i][0]], b = m.v[m.tri[i][1]], c = m.v[m.tri[i][2]];
    ce_vec3 n = ce_cross(ce_sub(b, a), ce_sub(c, a));
    cr_assert_gt(ce_norm(n), 0, "%s: triangle %d degenerate", what, i);
    ce_vec3 g = ce_scale(ce_add(a, ce_add(b, c)), 1.0 / 3.0);
    g.z -= fmax(-l, fmin(l, g.z));
    cr_assert_gt(ce_dot(n, g), 0, "%s: triangle %d faces inward", what, i);
  }
  double vol = surface_volume(m.v, m.tri, m.nf);
  cr_assert_gt(vol, 0);
  cr_assert(ce_test_close(vol, V, rtol, 0), "%s: volume %.15g vs %.15g", what, vol, V);
  ce_rawmesh_free(&m);
}

static void check_rigid(ce_shape s, double h, double V, double rtol, const char *what) {
  check_rigid_l(s, h, V, rtol, 0.0, what);
}

Test(primitive, rigid_surfaces) {
  check_rigid(shape_sphere(0.1), 0.0066, 4.0 / 3.0 * M_PI * 1e-3, 0.01, "sphere");
  check_rigid(shape_ellipsoid(0.2, 0.1, 0.05), 0.012, 4.0 / 3.0 * M_PI * 1e-3, 0.01, "ellipsoid");
  check_rigid(shape_box(0.4, 0.2, 0.1), 1.0, 0.008, 1e-12, "coarse box");
  check_rigid(shape_box(0.4, 0.2, 0.1), 0.03, 0.008, 1e-12, "fine box");
  check_rigid(shape_rl(CE_SHAPE_CYLINDER, 0.05, 0.2), 0.0033, M_PI * 0.05 * 0.05 * 0.2, 0.002,
              "cylinder");
  check_rigid_l(shape_rl(CE_SHAPE_CAPSULE, 0.05, 0.1), 0.0033,
                M_PI * 0.0025 * 0.1 + 4.0 / 3.0 * M_PI * 0.05 * 0.0025, 0.01, 0.05, "capsule");
  /* long and thin: far from the origin the band triangles still face out */
  check_rigid_l(shape_rl(CE_SHAPE_CAPSULE, 0.01, 2.0), 0.002,
                M_PI * 1e-4 * 2.0 + 4.0 / 3.0 * M_PI * 1e-6, 0.01, 1.0, "long capsule");
}

Test(primitive, rigid_box_counts) {
  ce_rawmesh m = make(shape_box(0.4, 0.2, 0.1), CE_RIGID, 1.0);
  cr_assert_eq(m.nf, 24); /* 6 faces x 4 triangles around the face centres */
  cr_assert_eq(m.nv, 14);
  ce_rawmesh_free(&m);
  m = make(shape_box(0.4, 0.2, 0.1), CE_RIGID, 0.1); /* 4 x 2 x 1 cells */
  cr_assert_eq(m.nf, 4 * 2 * (8 + 2 + 4));
  ce_rawmesh_free(&m);
}

/* ---- errors and limits -------------------------------------------------------- */

static ce_errno try_mesh(ce_shape s, ce_compliance c, double h, ce_error *err) {
  ce_rawmesh m;
  ce_errno e = ce_primitive_mesh(&s, c, E0, h, &m, err);
  cr_assert_null(m.v);
  cr_assert_null(m.tet);
  cr_assert_null(m.tri);
  return e;
}

Test(primitive, bad_dimensions_name_the_field) {
  ce_error err = {0};
  cr_assert_eq(try_mesh(shape_sphere(-1), CE_COMPLIANT, 0.01, &err), CE_EINVAL);
  cr_assert_str_eq(err.message, "sphere radius must be finite and > 0 (got -1)");
  cr_assert_eq(try_mesh(shape_sphere(NAN), CE_RIGID, 0.01, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "radius"));
  cr_assert_eq(try_mesh(shape_box(0.1, 0, 0.1), CE_COMPLIANT, 0.01, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "box size.y"));
  cr_assert_eq(try_mesh(shape_rl(CE_SHAPE_CYLINDER, 0.1, INFINITY), CE_COMPLIANT, 0.01, &err),
               CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "cylinder length"));
  cr_assert_eq(try_mesh(shape_rl(CE_SHAPE_CAPSULE, 0, 0.1), CE_RIGID, 0.01, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "capsule radius"));
  cr_assert_eq(try_mesh(shape_ellipsoid(0.1, 0.1, -0.1), CE_COMPLIANT, 0.01, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "size.z"));
  cr_assert_eq(try_mesh(shape_sphere(0.1), CE_COMPLIANT, 0, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "hint"));
  cr_assert_eq(try_mesh(shape_sphere(0.1), CE_COMPLIANT, NAN, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "hint"));
  ce_shape s = shape_sphere(0.1);
  s.type = CE_SHAPE_TETMESH;
  cr_assert_eq(try_mesh(s, CE_COMPLIANT, 0.01, &err), CE_EINVAL);
}

/* Dimensions far outside [CE_LIMIT_MIN_LENGTH, CE_LIMIT_MAX_LENGTH],
 * or too far from each other, would fail on a tet of zero or NaN volume;
 * they are refused with an error naming the dimensions. The limits
 * themselves build, compliant and rigid. */
Test(primitive, dimensions_outside_the_range_name_it) {
  ce_error err = {0};
  cr_assert_eq(try_mesh(shape_sphere(1e-200), CE_COMPLIANT, 1e-201, &err), CE_EINVAL);
  cr_assert_str_eq(err.message, "sphere radius 1e-200 m is outside the range of primitive dimensions [1e-09, 1e+09] m");
  cr_assert_eq(try_mesh(shape_sphere(1e200), CE_RIGID, 1e200, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "sphere radius 1e+200 m is outside"), "%s", err.message);
  cr_assert_eq(try_mesh(shape_box(0.1, 0.1, 1e-12), CE_COMPLIANT, 0.01, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "box size.z 1e-12 m"), "%s", err.message);
  cr_assert_eq(try_mesh(shape_rl(CE_SHAPE_CYLINDER, 0.1, 2e9), CE_COMPLIANT, 0.01, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "cylinder length 2e+09 m"), "%s", err.message);
  cr_assert_eq(try_mesh(shape_rl(CE_SHAPE_CAPSULE, 1e-10, 0.1), CE_RIGID, 0.01, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "capsule radius 1e-10 m"), "%s", err.message);
  cr_assert_eq(try_mesh(shape_ellipsoid(0.1, 1e100, 0.1), CE_COMPLIANT, 0.01, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "(size.y) 1e+100 m"), "%s", err.message);
  /* and within a factor of each other: 1e9 (an ellipsoid 1e4) */
  cr_assert_eq(try_mesh(shape_ellipsoid(1e-5, 1, 1), CE_COMPLIANT, 0.125, &err), CE_EINVAL);
  cr_assert_str_eq(err.message, "ellipsoid semi-axis a 1e-05 m and semi-axis b 1 m differ by a factor 1e+05, over the "
                                "limit of 10000: its elements would be too thin to tell from flat");
  cr_assert_eq(try_mesh(shape_box(1e-9, 1.1, 1), CE_RIGID, 0.125, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "box size.x 1e-09 m and size.y 1.1 m differ by a factor 1.1e+09"), "%s",
                     err.message);
  cr_assert_eq(try_mesh(shape_rl(CE_SHAPE_CAPSULE, 10, 1e-9), CE_COMPLIANT, 1, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "capsule length 1e-09 m and radius 10 m"), "%s", err.message);
  const ce_shape at_limit[4] = {shape_ellipsoid(1e-4, 1, 1), shape_box(1e-9, 1, 1), shape_rl(CE_SHAPE_CYLINDER, 1e-9, 1),
                                shape_rl(CE_SHAPE_CAPSULE, 1, 1e-9)};
  for (int i = 0; i < 8; i++) {
    ce_rawmesh m;
    ce_errno e = ce_primitive_mesh(&at_limit[i / 2], i % 2 ? CE_RIGID : CE_COMPLIANT, E0, 0.125, &m, &err);
    cr_assert_eq(e, CE_OK, "shape %d at its aspect limit: %s", i / 2, err.message);
    ce_rawmesh_free(&m);
  }
  const double ends[2] = {CE_LIMIT_MIN_LENGTH, CE_LIMIT_MAX_LENGTH};
  for (int k = 0; k < 2; k++) {
    const double d = ends[k];
    const ce_shape shapes[5] = {shape_sphere(d), shape_box(d, d, d), shape_rl(CE_SHAPE_CYLINDER, d, d),
                                shape_rl(CE_SHAPE_CAPSULE, d, d), shape_ellipsoid(d, d, d)};
    for (int i = 0; i < 10; i++) {
      ce_rawmesh m;
      ce_errno e = ce_primitive_mesh(&shapes[i / 2], i % 2 ? CE_RIGID : CE_COMPLIANT, E0, d / 2, &m, &err);
      cr_assert_eq(e, CE_OK, "shape %d at %g m: %s", i / 2, d, err.message);
      cr_assert_gt(i % 2 ? m.nf : m.nt, 0);
      ce_rawmesh_free(&m);
    }
  }
}

/* A hint far above the shape (1e300 on a 1 nm sphere) gives the coarsest
 * mesh, the one of a hint 1e3 times the shape: finite, not NaN vertices
 * from an overflowing hint / size. */
Test(primitive, huge_hints_give_the_coarsest_mesh) {
  const ce_shape shapes[5] = {shape_sphere(1e-9), shape_box(1e-9, 2e-9, 1e-9), shape_rl(CE_SHAPE_CYLINDER, 1e-9, 2e-9),
                              shape_rl(CE_SHAPE_CAPSULE, 1e-9, 2e-9), shape_ellipsoid(1e-9, 2e-9, 1e-9)};
  for (int i = 0; i < 10; i++) {
    const ce_compliance c = i % 2 ? CE_RIGID : CE_COMPLIANT;
    ce_rawmesh ref, m;
    ce_error err = {0};
    cr_assert_eq(ce_primitive_mesh(&shapes[i / 2], c, E0, 2e-6, &ref, &err), CE_OK, "%s", err.message);
    for (int k = 0; k < 2; k++) {
      const double h = k ? DBL_MAX : 1e300;
      cr_assert_eq(ce_primitive_mesh(&shapes[i / 2], c, E0, h, &m, &err), CE_OK, "shape %d hint %g: %s", i / 2, h,
                   err.message);
      cr_assert_eq(m.nv, ref.nv);
      cr_assert_eq(c == CE_RIGID ? m.nf : m.nt, c == CE_RIGID ? ref.nf : ref.nt);
      for (int v = 0; v < m.nv; v++)
        cr_assert(m.v[v].x == ref.v[v].x && m.v[v].y == ref.v[v].y && m.v[v].z == ref.v[v].z,
                  "shape %d vertex %d", i / 2, v);
      ce_rawmesh_free(&m);
    }
    ce_rawmesh_free(&ref);
  }
}

Test(primitive, hostile_hints_hit_the_limit) {
  ce_error err = {0};
  const double h = 1e-6;
  cr_assert_eq(try_mesh(shape_sphere(0.1), CE_COMPLIANT, h, &err), CE_ELIMIT);
  cr_assert_not_null(strstr(err.message, "2000000"), "%s", err.message);
  cr_assert_eq(try_mesh(shape_sphere(0.1), CE_RIGID, 1e-300, &err), CE_ELIMIT);
  cr_assert_eq(try_mesh(shape_ellipsoid(0.1, 0.2, 0.3), CE_COMPLIANT, h, &err), CE_ELIMIT);
  cr_assert_eq(try_mesh(shape_box(1, 1, 1), CE_RIGID, h, &err), CE_ELIMIT);
  cr_assert_eq(try_mesh(shape_rl(CE_SHAPE_CYLINDER, 1, 1), CE_COMPLIANT, h, &err), CE_ELIMIT);
  cr_assert_eq(try_mesh(shape_rl(CE_SHAPE_CYLINDER, 1, 1), CE_RIGID, h, &err), CE_ELIMIT);
  cr_assert_eq(try_mesh(shape_rl(CE_SHAPE_CAPSULE, 1, 1), CE_COMPLIANT, h, &err), CE_ELIMIT);
  cr_assert_eq(try_mesh(shape_rl(CE_SHAPE_CAPSULE, 1, 1), CE_RIGID, 1e-300, &err), CE_ELIMIT);
  cr_assert_eq(try_mesh(shape_box(1, 0.5, 0.2), CE_COMPLIANT, h, &err), CE_ELIMIT);
  cr_assert_not_null(strstr(err.message, "box size 1 x 0.5 x 0.2"), "%s", err.message);
  /* a cube's medial set is a point: nothing to refine, any hint works */
  ce_rawmesh m = make(shape_box(1, 1, 1), CE_COMPLIANT, h);
  cr_assert_eq(m.nt, 88);
  ce_rawmesh_free(&m);
}

Test(primitive, from_shape_dispatch_errors) {
  ce_error err = {0};
  ce_geometry *g = (ce_geometry *)&err; /* must be reset to NULL */
  ce_props props = ce_test_props(CE_COMPLIANT, E0, 0.01);
  ce_shape s = shape_sphere(0.1);
  s.type = (ce_shape_type)42;
  cr_assert_eq(ce_geometry_from_shape(&s, &props, &g, &err), CE_EINVAL);
  cr_assert_null(g);
  cr_assert_not_null(strstr(err.message, "42"));
  s.type = CE_SHAPE_TRIMESH;
  cr_assert_eq(ce_geometry_from_shape(&s, &props, &g, &err), CE_EINVAL);
  cr_assert_eq(ce_geometry_from_shape(NULL, &props, &g, &err), CE_EINVAL);
  cr_assert_null(g);
}

/* ---- through ce_geometry_from_shape ------------------------------------------ */

static ce_geometry *build(ce_shape s, ce_compliance c, double h) {
  ce_props props = ce_test_props(c, E0, h);
  ce_geometry *g = NULL;
  ce_error err = {0};
  ce_errno e = ce_geometry_from_shape(&s, &props, &g, &err);
  cr_assert_eq(e, CE_OK, "from_shape(%d) failed: %s", (int)s.type, err.message);
  cr_assert_not_null(g);
  return g;
}

Test(primitive, from_shape_builds_every_primitive) {
  ce_shape shapes[5] = {shape_sphere(0.1), shape_ellipsoid(0.2, 0.1, 0.05),
                        shape_box(0.4, 0.2, 0.1), shape_rl(CE_SHAPE_CYLINDER, 0.05, 0.2),
                        shape_rl(CE_SHAPE_CAPSULE, 0.05, 0.1)};
  for (int i = 0; i < 5; ++i) {
    ce_rawmesh m = make(shapes[i], CE_COMPLIANT, 0.02);
    double vol = check_tets(&m).volume;
    ce_geometry *g = build(shapes[i], CE_COMPLIANT, 0.02);
    ce_geometry_info info;
    ce_geometry_get_info(g, &info);
    cr_assert_eq(info.shape, shapes[i].type);
    cr_assert_eq(info.compliance, CE_COMPLIANT);
    cr_assert_eq(info.tetrahedra, m.nt, "shape %d: %d tets vs raw %d", i, info.tetrahedra, m.nt);
    cr_assert_eq(info.vertices, m.nv);
    cr_assert(ce_test_close(info.max_pressure, E0, 1e-12, 0), "max p %g", info.max_pressure);
    cr_assert_eq(info.min_pressure, 0.0);
    cr_assert(ce_test_close(info.volume, vol, 1e-9, 0), "shape %d volume %g vs %g", i, info.volume,
              vol);
    ce_geometry_free(g);
    ce_rawmesh_free(&m);

    m = make(shapes[i], CE_RIGID, 0.02);
    g = build(shapes[i], CE_RIGID, 0.02);
    ce_geometry_get_info(g, &info);
    cr_assert_eq(info.triangles, m.nf);
    cr_assert(ce_test_close(info.volume, surface_volume(m.v, m.tri, m.nf), 1e-9, 0));
    ce_geometry_free(g);
    ce_rawmesh_free(&m);
  }
}

/* The box and cylinder fields are d(x) E / H: every tet's gradient has
 * magnitude E / H (d is a distance to a plane in each tet). */
Test(primitive, from_shape_medial_gradients) {
  ce_geometry *g = build(shape_box(0.4, 0.2, 0.1), CE_COMPLIANT, 0.02);
  cr_assert_gt(g->tet.nt, 1000);
  for (int32_t t = 0; t < g->tet.nt; ++t)
    cr_assert(ce_test_close(ce_norm(g->tet.grad[t]), E0 / 0.05, 1e-9, 0), "box tet %d |grad| %g",
              t, ce_norm(g->tet.grad[t]));
  ce_geometry_free(g);
  g = build(shape_rl(CE_SHAPE_CYLINDER, 0.05, 0.3), CE_COMPLIANT, 0.01);
  double rho = 0.05 * cos(M_PI / 32);
  for (int32_t t = 0; t < g->tet.nt; ++t)
    cr_assert(ce_test_close(ce_norm(g->tet.grad[t]), E0 / rho, 1e-9, 0), "cyl tet %d |grad| %g",
              t, ce_norm(g->tet.grad[t]));
  ce_geometry_free(g);
}

Test(primitive, from_shape_errors) {
  ce_error err = {0};
  ce_geometry *g = NULL;
  ce_shape s = shape_sphere(0.1);
  ce_props props = ce_test_props(CE_COMPLIANT, 0, 0.01); /* no modulus */
  cr_assert_eq(ce_geometry_from_shape(&s, &props, &g, &err), CE_EINVAL);
  cr_assert_null(g);
  props = ce_test_props(CE_COMPLIANT, E0, -0.01);
  cr_assert_eq(ce_geometry_from_shape(&s, &props, &g, &err), CE_EINVAL);
  cr_assert_not_null(strstr(err.message, "hint"), "%s", err.message);
  props = ce_test_props(CE_COMPLIANT, E0, 1e-7);
  cr_assert_eq(ce_geometry_from_shape(&s, &props, &g, &err), CE_ELIMIT);
  cr_assert_null(g);
  s.radius = -2;
  props = ce_test_props(CE_RIGID, 0, 0.01);
  cr_assert_eq(ce_geometry_from_shape(&s, &props, &g, &err), CE_EINVAL);
  cr_assert_str_eq(err.message, "sphere radius must be finite and > 0 (got -2)");
}

/* Tets with a face on the boundary (where contact happens) are well shaped:
 * q = 6 sqrt(2) V / l_rms^3 (1 for a regular tet) stays above 0.4. */
static double surface_tet_quality(const ce_rawmesh *m) {
  double qmin = INFINITY;
  for (int32_t t = 0; t < m->nt; ++t) {
    int zeros = 0;
    double s2 = 0;
    for (int i = 0; i < 4; ++i) {
      zeros += m->p[m->tet[t][i]] == 0;
      for (int j = i + 1; j < 4; ++j) s2 += ce_norm2(ce_sub(m->v[m->tet[t][i]], m->v[m->tet[t][j]]));
    }
    if (zeros < 3) continue;
    double lr = sqrt(s2 / 6);
    qmin = fmin(qmin, 6 * sqrt(2) * tet_volume(m, t) / (lr * lr * lr));
  }
  return qmin;
}

Test(primitive, surface_tets_well_shaped) {
  ce_rawmesh m = make(shape_sphere(0.1), CE_COMPLIANT, 0.0066);
  double q = surface_tet_quality(&m);
  cr_assert_gt(q, 0.4, "sphere surface tet quality %g", q);
  ce_rawmesh_free(&m);
  m = make(shape_rl(CE_SHAPE_CAPSULE, 0.05, 0.1), CE_COMPLIANT, 0.0033);
  q = surface_tet_quality(&m);
  cr_assert_gt(q, 0.4, "capsule surface tet quality %g", q);
  ce_rawmesh_free(&m);
}

Test(primitive, long_capsule_compliant) {
  ce_rawmesh m = make(shape_rl(CE_SHAPE_CAPSULE, 0.01, 2.0), CE_COMPLIANT, 0.002);
  assert_good_tets(&m, E0, "long capsule");
  double V = M_PI * 1e-4 * 2.0 + 4.0 / 3.0 * M_PI * 1e-6;
  double vol = check_tets(&m).volume;
  cr_assert_lt((V - vol) / V, 0.01);
  cr_assert_gt((V - vol) / V, 0);
  ce_rawmesh_free(&m);
}
