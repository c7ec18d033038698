/* ce_primitive.c — meshes for the primitive shapes: sphere, ellipsoid, box,
 * cylinder, capsule (compliant tet meshes with pressure fields, or rigid
 * closed surfaces), and the dispatch of ce_geometry_from_shape().
 *
 * Compliant pressure fields are "zero on the boundary, E on the medial axis
 * (or centre), linear in between":
 *  - sphere / ellipsoid: p = E (1 - r/R) (ellipsoid: r/R measured in the
 *    frame scaled to the unit sphere), exact at the vertices;
 *  - box / cylinder (a regular n-gon prism): p = E d / H, d the distance to
 *    the nearest face, H the largest such distance. The mesh follows the
 *    medial axis (each face owns the region of points closer to it than to
 *    any other face), so d is one linear function per tet and the
 *    interpolated field is EXACT everywhere, at any resolution. The hint
 *    sets the cylinder's polygon (n = max(8, ceil(2 pi R / h))) and slices
 *    the box and the long cylinder along their medial sets; it does not
 *    layer them by depth, so each of their tets spans most of [0, E]
 *    (no pressure pruning, as with Drake's medial meshes);
 *  - capsule: p = E (1 - r/R), r the distance to the medial segment, exact
 *    at the vertices.
 *
 * The box and cylinder generators are in ce_prism_mesh.c.
 *
 * All arrays are malloc'd; the finish functions take ownership. Tets are
 * oriented by the sign of their determinant after construction, so every
 * generator only has to produce a conforming partition. */
#include "ce_primitive.h"
#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_limits.h"
#include "ce_progress.h"
#include "ce_validate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXEL CE_LIMIT_PRIMITIVE_ELEMENTS

/* ---- icosphere ------------------------------------------------------------ */

int ce_icosphere_level(double r, double h) {
  double x = 1.0515 * r / h;
  if (!(x > 1)) return 0;
  double l = ceil(log2(x) - 1e-12);
  return l > 31 ? 31 : (int)l;
}

typedef struct edge_map {
  int64_t *key;
  int32_t *val;
  int64_t cap; /* power of two */
} edge_map;

/* Unit icosphere of the given level (vertices on the unit sphere, triangles
 * CCW seen from outside). Level 0 = icosahedron; each level splits every
 * triangle into 4 at its edge midpoints (projected to the sphere). */
static ce_errno icosphere(int level, ce_vec3 **pv, int32_t *pnv,
                          int32_t (**pf)[3], int32_t *pnf, ce_error *err) {
  static const double T = 1.6180339887498948482;
  static const double iv[12][3] = {{-1, T, 0}, {1, T, 0}, {-1, -T, 0}, {1, -T, 0},
                                   {0, -1, T}, {0, 1, T}, {0, -1, -T}, {0, 1, -T},
                                   {T, 0, -1}, {T, 0, 1}, {-T, 0, -1}, {-T, 0, 1}};
  static const int ifc[20][3] = {{0, 11, 5}, {0, 5, 1},  {0, 1, 7},   {0, 7, 10}, {0, 10, 11},
                                 {1, 5, 9},  {5, 11, 4}, {11, 10, 2}, {10, 7, 6}, {7, 1, 8},
                                 {3, 9, 4},  {3, 4, 2},  {3, 2, 6},   {3, 6, 8},  {3, 8, 9},
                                 {4, 9, 5},  {2, 4, 11}, {6, 2, 10},  {8, 6, 7},  {9, 8, 1}};
  int64_t nv_final = 10 * ((int64_t)1 << (2 * level)) + 2;
  int64_t nf_final = 20 * ((int64_t)1 << (2 * level));
  ce_vec3 *v = malloc((size_t)nv_final * sizeof *v);
  int32_t(*f)[3] = malloc((size_t)nf_final * sizeof *f);
  int32_t(*g)[3] = level > 0 ? malloc((size_t)nf_final * sizeof *g) : NULL;
  edge_map em = {0};
  if (level > 0) {
    em.cap = 1;
    while (em.cap < nf_final) em.cap <<= 1; /* > 2x the edges of the last level */
    em.key = malloc((size_t)em.cap * sizeof *em.key);
    em.val = malloc((size_t)em.cap * sizeof *em.val);
  }
  if (!v || !f || (level > 0 && (!g || !em.key || !em.val))) {
    free(v); free(f); free(g); free(em.key); free(em.val);
    return ce_prim_oom(err, "icosphere");
  }
  int32_t nv = 12, nf = 20;
  for (int i = 0; i < 12; ++i) v[i] = ce_normalize(ce_v3(iv[i][0], iv[i][1], iv[i][2]));
  for (int i = 0; i < 20; ++i)
    for (int k = 0; k < 3; ++k) f[i][k] = ifc[i][k];
  for (int l = 0; l < level; ++l) {
    for (int64_t i = 0; i < em.cap; ++i) em.key[i] = -1;
    int32_t ng = 0;
    for (int32_t i = 0; i < nf; ++i) {
      int32_t m[3];
      for (int k = 0; k < 3; ++k) {
        int32_t a = f[i][k], b = f[i][(k + 1) % 3];
        int64_t lo = a < b ? a : b, hi = a < b ? b : a;
        int64_t key = lo * (int64_t)nv_final + hi;
        uint64_t s = ce_mix64((uint64_t)key) & (uint64_t)(em.cap - 1);
        while (em.key[s] != -1 && em.key[s] != key) s = (s + 1) & (uint64_t)(em.cap - 1);
        if (em.key[s] == -1) {
          em.key[s] = key;
          em.val[s] = nv;
          v[nv++] = ce_normalize(ce_add(v[a], v[b]));
        }
        m[k] = em.val[s];
      }
      int32_t a = f[i][0], b = f[i][1], c = f[i][2];
      int32_t tri[4][3] = {{a, m[0], m[2]}, {m[0], b, m[1]}, {m[2], m[1], c}, {m[0], m[1], m[2]}};
      for (int q = 0; q < 4; ++q) {
        g[ng][0] = tri[q][0];
        g[ng][1] = tri[q][1];
        g[ng][2] = tri[q][2];
        ++ng;
      }
    }
    int32_t(*s)[3] = f;
    f = g;
    g = s;
    nf = ng;
  }
  free(g);
  free(em.key);
  free(em.val);
  *pv = v;
  *pnv = nv;
  *pf = f;
  *pnf = nf;
  return CE_OK;
}

/* ---- layered meshes (sphere, ellipsoid, capsule) ----------------------------
 *
 * A closed surface triangulation is copied onto inner shells; shell k's copy
 * of surface vertex i is foot(i) + s_k (x_i - foot(i)), with foot(i) the
 * vertex's nearest point on the medial set (the centre, or the capsule's
 * segment). s_0 = 1 and s_k = 1 - (2^k - 1) h / R while s_k > 1/2: the
 * layers are h, 2h, 4h, ... thick. The last layer collapses onto the feet.
 *
 * Why layers rather than one vertex at the centre: a "needle" mesh (every
 * surface triangle coned to the centre) makes each tet span the whole
 * pressure range [0, E], so the BVH nodes' pressure ranges all overlap and
 * the compliant-compliant intersector cannot prune any pair by pressure;
 * its tets near the surface are also long slivers. Thin outer layers keep
 * the tets near the surface (where contact happens) well shaped and give
 * BVH nodes there narrow pressure ranges.
 *
 * Each prism between shells is split into 3 tets by the rule that makes
 * neighbours agree (Dompierre et al. 1999): every quad side face is cut by
 * the diagonal through its smallest global vertex index. Outer shells have
 * smaller indices, so with the triangle sorted (a < b < c) the tets are
 * [ao bo co ci], [ao bo bi ci], [ao ai bi ci]. In the collapse layer inner
 * vertices may coincide (same foot, same index); tets with a repeated
 * index have zero volume and are dropped, which leaves a conforming mesh
 * because a repeated-index tet's non-degenerate faces come in cancelling
 * pairs. */

static int layer_count(double h_over_R) {
  int k = 1;
  while (1.0 - (ldexp(1.0, k) - 1.0) * h_over_R > 0.5) ++k;
  return k - 1; /* number of prism layers between shells */
}

static double layer_scale(int k, double h_over_R) {
  return 1.0 - (ldexp(1.0, k) - 1.0) * h_over_R;
}

/* surface: ns vertices x (feet index foot[i] into naxis axis points), nf
 * triangles. Output tets and vertices; p = E (1 - s). */
static ce_errno layered_tets(const ce_vec3 *x, const int32_t *foot, int32_t ns,
                             const ce_vec3 *axis, int32_t naxis,
                             int32_t (*tri)[3], int32_t nf, int K,
                             double h_over_R, double E, ce_rawmesh *m,
                             ce_error *err) {
  int64_t nv = (int64_t)ns * (K + 1) + naxis;
  int64_t nt = (int64_t)nf * (3 * K + 3);
  m->v = malloc((size_t)nv * sizeof *m->v);
  m->p = malloc((size_t)nv * sizeof *m->p);
  m->tet = malloc((size_t)nt * sizeof *m->tet);
  if (!m->v || !m->p || !m->tet) {
    ce_rawmesh_free(m);
    return ce_prim_oom(err, "layered mesh");
  }
  for (int k = 0; k <= K; ++k) {
    double s = layer_scale(k, h_over_R);
    for (int32_t i = 0; i < ns; ++i) {
      ce_vec3 f = axis[foot[i]];
      m->v[(int64_t)k * ns + i] = ce_add(f, ce_scale(ce_sub(x[i], f), s));
      m->p[(int64_t)k * ns + i] = k == 0 ? 0.0 : E * (1.0 - s);
    }
  }
  int32_t base_axis = ns * (K + 1);
  for (int32_t j = 0; j < naxis; ++j) {
    m->v[base_axis + j] = axis[j];
    m->p[base_axis + j] = E;
  }
  int32_t n = 0;
  for (int k = 0; k <= K; ++k) {
    for (int32_t t = 0; t < nf; ++t) {
      int32_t a = tri[t][0], b = tri[t][1], c = tri[t][2], s;
      if (a > b) { s = a; a = b; b = s; }
      if (b > c) { s = b; b = c; c = s; }
      if (a > b) { s = a; a = b; b = s; }
      int32_t ao = k * ns + a, bo = k * ns + b, co = k * ns + c, ai, bi, ci;
      if (k < K) {
        ai = ao + ns; bi = bo + ns; ci = co + ns;
      } else {
        ai = base_axis + foot[a]; bi = base_axis + foot[b]; ci = base_axis + foot[c];
      }
      int32_t q[3][4] = {{ao, bo, co, ci}, {ao, bo, bi, ci}, {ao, ai, bi, ci}};
      for (int u = 0; u < 3; ++u) {
        int rep = 0;
        for (int i = 0; i < 4; ++i)
          for (int j = i + 1; j < 4; ++j) rep |= q[u][i] == q[u][j];
        if (rep) continue;
        memcpy(m->tet[n++], q[u], sizeof q[u]);
      }
    }
  }
  m->nv = (int32_t)nv;
  m->nt = n;
  ce_prim_orient_tets(m->v, m->tet, m->nt);
  return CE_OK;
}

/* Ellipsoid (a, b, c) from the unit sphere at relative hint hr = h / max. */
static ce_errno ellipsoid_mesh(ce_vec3 axes, double hr, int compliant, double E,
                               const char *name, ce_rawmesh *m, ce_error *err) {
  int L = ce_icosphere_level(1.0, hr);
  double nf = 20.0 * ldexp(1.0, 2 * (L > 30 ? 30 : L));
  int K = compliant ? layer_count(hr) : 0;
  double count = compliant ? nf * (3.0 * K + 1.0) : nf;
  if (L > 30 || count > MAXEL)
    return ce_fail(err, CE_ELIMIT,
                   "%s: hint %g of the largest semi-axis needs icosphere level %d "
                   "(%.3g %s), over the limit of %d",
                   name, hr, L, count, compliant ? "tets" : "triangles", MAXEL);
  ce_vec3 *sv = NULL;
  int32_t nsv = 0, nsf = 0;
  int32_t(*sf)[3] = NULL;
  ce_errno e = icosphere(L, &sv, &nsv, &sf, &nsf, err);
  if (e) return e;
  if (!compliant) {
    for (int32_t i = 0; i < nsv; ++i)
      sv[i] = ce_v3(sv[i].x * axes.x, sv[i].y * axes.y, sv[i].z * axes.z);
    m->v = sv;
    m->nv = nsv;
    m->tri = sf;
    m->nf = nsf;
    ce_prim_orient_tris_outward(m->v, m->tri, m->nf, 0.0);
    return CE_OK;
  }
  int32_t *foot = calloc((size_t)nsv, sizeof *foot);
  if (!foot) {
    free(sv); free(sf);
    return ce_prim_oom(err, name);
  }
  ce_vec3 centre = ce_v3(0, 0, 0);
  e = layered_tets(sv, foot, nsv, &centre, 1, sf, nsf, K, hr, E, m, err);
  free(foot);
  free(sv);
  free(sf);
  if (e) return e;
  for (int32_t i = 0; i < m->nv; ++i)
    m->v[i] = ce_v3(m->v[i].x * axes.x, m->v[i].y * axes.y, m->v[i].z * axes.z);
  ce_prim_orient_tets(m->v, m->tet, m->nt); /* scaling keeps signs; cheap insurance */
  return CE_OK;
}

/* ---- capsule -------------------------------------------------------------- */

/* Capsule surface as rings of latitude from the top pole to the bottom one:
 * top hemisphere rings (angle phi_j = j (pi/2) / nphi from the pole; the
 * last is the top equator z = +l), band rings every ~L/mb, bottom
 * hemisphere rings. Hemisphere rings hold about 2 pi R sin(phi) / h
 * vertices (so the tets near the poles are not slivers); the equators and
 * band rings hold n. Alternate rings are rotated by half a step and
 * consecutive rings are zipped into triangles by angle. Every vertex's
 * foot (nearest point of the medial segment) is an axis point: 0 = top end
 * (0,0,l), 1..mb-1 band ring centres, mb = bottom end, so each triangle's
 * feet span at most two axis points, which the collapse layer needs. */
typedef struct cap_ring { int32_t n, first, foot; double z, r, off; } cap_ring;

typedef struct cap_plan {
  int32_t n, nphi, mb, nrings;
  double nv, nf; /* totals (doubles: computed before the limit check) */
} cap_plan;

static double cap_ring_count(const cap_plan *P, double R, double h, int32_t j) {
  /* ring j of a hemisphere, 1 <= j <= nphi, counted from the pole */
  if (j >= P->nphi) return P->n;
  double phi = 0.5 * M_PI * j / P->nphi;
  return fmin((double)P->n, fmax(5.0, ceil(2.0 * M_PI * R * sin(phi) / h)));
}

static cap_plan capsule_plan(double R, double L, double h) {
  cap_plan P;
  double n = fmax(8.0, ceil(2.0 * M_PI * R / h));
  double nphi = fmax(2.0, ceil(0.5 * M_PI * R / h));
  double mb = fmax(1.0, ceil(L / h));
  P.n = n > 1e8 ? 100000000 : (int32_t)n;
  P.nphi = nphi > 1e8 ? 100000000 : (int32_t)nphi;
  P.mb = mb > 1e8 ? 100000000 : (int32_t)mb;
  P.nrings = 2 * P.nphi + P.mb - 1;
  /* vertices: poles + rings; triangles: pole fans + 2 per ring pair vertex */
  double hemi = 0;
  if (n <= 1e7 && nphi <= 1e7)
    for (int32_t j = 1; j < P.nphi; ++j) hemi += cap_ring_count(&P, R, h, j);
  else
    hemi = INFINITY;
  double ringv = 2.0 * hemi + (mb + 1.0) * n;
  P.nv = 2.0 + ringv;
  P.nf = 2.0 * ringv; /* a closed triangulation: 2 V - 4 */
  return P;
}

static ce_errno capsule_surface(double R, double L, double h, const cap_plan *P,
                                ce_vec3 **pv, int32_t **pfoot, int32_t *pns,
                                ce_vec3 **paxis, int32_t *pnaxis, int32_t (**pf)[3],
                                int32_t *pnf, ce_error *err) {
  double l = 0.5 * L;
  int32_t mb = P->mb, nphi = P->nphi, nr = P->nrings;
  int32_t ns = (int32_t)P->nv, nf = (int32_t)P->nf, naxis = mb + 1;
  ce_vec3 *v = malloc((size_t)ns * sizeof *v);
  int32_t *foot = malloc((size_t)ns * sizeof *foot);
  ce_vec3 *axis = malloc((size_t)naxis * sizeof *axis);
  int32_t(*f)[3] = malloc((size_t)nf * sizeof *f);
  cap_ring *ring = malloc((size_t)nr * sizeof *ring);
  if (!v || !foot || !axis || !f || !ring) {
    free(v); free(foot); free(axis); free(f); free(ring);
    return ce_prim_oom(err, "capsule");
  }
  for (int32_t j = 0; j <= mb; ++j) axis[j] = ce_v3(0, 0, j == mb ? -l : l - L * j / mb);
  int32_t r = 0;
  for (int32_t j = 1; j <= nphi; ++j, ++r) { /* top hemisphere */
    double phi = 0.5 * M_PI * j / nphi;
    ring[r].n = (int32_t)cap_ring_count(P, R, h, j);
    ring[r].r = j == nphi ? R : R * sin(phi);
    ring[r].z = j == nphi ? l : l + R * cos(phi);
    ring[r].foot = 0;
  }
  for (int32_t j = 1; j < mb; ++j, ++r) { /* band */
    ring[r].n = P->n;
    ring[r].r = R;
    ring[r].z = axis[j].z;
    ring[r].foot = j;
  }
  for (int32_t j = nphi; j >= 1; --j, ++r) { /* bottom hemisphere */
    double phi = 0.5 * M_PI * j / nphi;
    ring[r].n = (int32_t)cap_ring_count(P, R, h, j);
    ring[r].r = j == nphi ? R : R * sin(phi);
    ring[r].z = j == nphi ? -l : -l - R * cos(phi);
    ring[r].foot = mb;
  }
  int32_t nv = 0;
  v[nv] = ce_v3(0, 0, l + R);
  foot[nv++] = 0;
  for (r = 0; r < nr; ++r) {
    ring[r].first = nv;
    ring[r].off = (r % 2) ? M_PI / ring[r].n : 0.0; /* stagger alternate rings */
    for (int32_t k = 0; k < ring[r].n; ++k) {
      double th = ring[r].off + 2.0 * M_PI * k / ring[r].n;
      v[nv] = ce_v3(ring[r].r * cos(th), ring[r].r * sin(th), ring[r].z);
      foot[nv++] = ring[r].foot;
    }
  }
  v[nv] = ce_v3(0, 0, -l - R);
  foot[nv++] = mb;
  int32_t t = 0;
  for (int32_t k = 0; k < ring[0].n; ++k) {
    f[t][0] = 0; f[t][1] = ring[0].first + k; f[t][2] = ring[0].first + (k + 1) % ring[0].n; ++t;
  }
  const cap_ring *lr = &ring[nr - 1];
  for (int32_t k = 0; k < lr->n; ++k) {
    f[t][0] = nv - 1; f[t][1] = lr->first + k; f[t][2] = lr->first + (k + 1) % lr->n; ++t;
  }
  for (r = 0; r + 1 < nr; ++r) { /* zip ring r to ring r + 1 by angle */
    const cap_ring *A = &ring[r], *B = &ring[r + 1];
    int32_t i = 0, k = 0;
    while (i < A->n || k < B->n) {
      double ta = A->off + 2.0 * M_PI * (i + 1) / A->n, tb = B->off + 2.0 * M_PI * (k + 1) / B->n;
      int32_t a0 = A->first + i % A->n, b0 = B->first + k % B->n;
      if (k == B->n || (i < A->n && ta <= tb)) {
        f[t][0] = a0; f[t][1] = A->first + (i + 1) % A->n; f[t][2] = b0;
        ++i;
      } else {
        f[t][0] = a0; f[t][1] = B->first + (k + 1) % B->n; f[t][2] = b0;
        ++k;
      }
      ++t;
    }
  }
  free(ring);
  ce_prim_orient_tris_outward(v, f, t, l);
  *pv = v; *pfoot = foot; *pns = nv; *paxis = axis; *pnaxis = naxis; *pf = f; *pnf = t;
  return CE_OK;
}

static ce_errno capsule_mesh(double R, double L, double h, int compliant, double E,
                             ce_rawmesh *m, ce_error *err) {
  cap_plan P = capsule_plan(R, L, h);
  int K = compliant ? layer_count(h / R) : 0;
  double count = compliant ? P.nf * (3.0 * K + 2.0) : P.nf;
  if (!(count <= MAXEL))
    return ce_fail(err, CE_ELIMIT,
                   "capsule radius %g length %g with hint %g needs about %.3g %s, "
                   "over the limit of %d",
                   R, L, h, count, compliant ? "tets" : "triangles", MAXEL);
  ce_vec3 *v = NULL, *axis = NULL;
  int32_t *foot = NULL, ns = 0, naxis = 0, nsf = 0;
  int32_t(*f)[3] = NULL;
  ce_errno e = capsule_surface(R, L, h, &P, &v, &foot, &ns, &axis, &naxis, &f, &nsf, err);
  if (e) return e;
  if (!compliant) {
    free(foot);
    free(axis);
    m->v = v; m->nv = ns; m->tri = f; m->nf = nsf;
    return CE_OK;
  }
  e = layered_tets(v, foot, ns, axis, naxis, f, nsf, K, h / R, E, m, err);
  free(v); free(foot); free(axis); free(f);
  return e;
}

/* ---- validation and dispatch ---------------------------------------------- */

/* The shape's n dimensions (named) within a factor `limit` of each other. */
static ce_errno check_aspect(const char *shape, const char *const *names, const double *d, int n, double limit,
                             ce_error *err) {
  int lo = 0, hi = 0;
  for (int i = 1; i < n; i++) {
    if (d[i] < d[lo]) lo = i;
    if (d[i] > d[hi]) hi = i;
  }
  if (d[hi] <= limit * d[lo]) return CE_OK;
  return ce_fail(err, CE_EINVAL,
                 "%s %s %g m and %s %g m differ by a factor %.3g, over the limit of %g: its elements would be "
                 "too thin to tell from flat",
                 shape, names[lo], d[lo], names[hi], d[hi], d[hi] / d[lo], limit);
}

static const char *const radius_length[2] = {"radius", "length"};

/* The hint, taken as at most CE_LIMIT_COARSEST_HINT times the shape's
 * largest dimension. */
static double coarsest(double hint, double largest) { return fmin(hint, CE_LIMIT_COARSEST_HINT * largest); }

static const char *shape_name(ce_shape_type t) {
  switch (t) {
    case CE_SHAPE_SPHERE: return "sphere";
    case CE_SHAPE_BOX: return "box";
    case CE_SHAPE_CYLINDER: return "cylinder";
    case CE_SHAPE_CAPSULE: return "capsule";
    case CE_SHAPE_ELLIPSOID: return "ellipsoid";
    case CE_SHAPE_HALFSPACE: return "half space";
    case CE_SHAPE_CONVEX: return "convex set";
    default: return "shape";
  }
}

ce_errno ce_primitive_mesh(const ce_shape *shape, ce_compliance compliance, double E,
                           double hint, ce_rawmesh *m, ce_error *err) {
  if (!m) return ce_fail(err, CE_EINVAL, "primitive mesh: NULL output");
  memset(m, 0, sizeof *m);
  if (!shape) return ce_fail(err, CE_EINVAL, "primitive mesh: NULL shape");
  if (compliance != CE_RIGID && compliance != CE_COMPLIANT)
    return ce_fail(err, CE_EINVAL, "primitive mesh: compliance must be rigid (1) or compliant (2), got %d",
                   (int)compliance);
  const char *nm = shape_name(shape->type);
  ce_errno e;
  if ((e = ce_check_dim(nm, "resolution hint", hint, err))) return e;
  if (compliance == CE_COMPLIANT && (e = ce_check_dim(nm, "modulus", E, err))) return e;
  int compliant = compliance == CE_COMPLIANT;
  switch (shape->type) {
    case CE_SHAPE_SPHERE: {
      if ((e = ce_check_length(nm, "radius", shape->radius, err))) return e;
      double R = shape->radius;
      return ellipsoid_mesh(ce_v3(R, R, R), coarsest(hint, R) / R, compliant, E, "sphere", m, err);
    }
    case CE_SHAPE_ELLIPSOID: {
      if ((e = ce_check_length(nm, "semi-axis a (size.x)", shape->size.x, err)) ||
          (e = ce_check_length(nm, "semi-axis b (size.y)", shape->size.y, err)) ||
          (e = ce_check_length(nm, "semi-axis c (size.z)", shape->size.z, err)))
        return e;
      static const char *const axes[3] = {"semi-axis a", "semi-axis b", "semi-axis c"};
      const double d[3] = {shape->size.x, shape->size.y, shape->size.z};
      if ((e = check_aspect(nm, axes, d, 3, CE_LIMIT_ELLIPSOID_ASPECT, err))) return e;
      double mx = fmax(shape->size.x, fmax(shape->size.y, shape->size.z));
      return ellipsoid_mesh(shape->size, coarsest(hint, mx) / mx, compliant, E, "ellipsoid", m, err);
    }
    case CE_SHAPE_BOX: {
      if ((e = ce_check_length(nm, "size.x", shape->size.x, err)) ||
          (e = ce_check_length(nm, "size.y", shape->size.y, err)) ||
          (e = ce_check_length(nm, "size.z", shape->size.z, err)))
        return e;
      static const char *const sides[3] = {"size.x", "size.y", "size.z"};
      const double d[3] = {shape->size.x, shape->size.y, shape->size.z};
      if ((e = check_aspect(nm, sides, d, 3, CE_LIMIT_PRIMITIVE_ASPECT, err))) return e;
      double hs[3] = {0.5 * shape->size.x, 0.5 * shape->size.y, 0.5 * shape->size.z};
      hint = coarsest(hint, fmax(shape->size.x, fmax(shape->size.y, shape->size.z)));
      /* The compliant box's field is exact at any resolution; the hint
       * refines it along its medial rectangle only (slices ~h along the two
       * longer axes, none across the thickness). The rigid surface is a
       * grid of ~h cells. */
      return compliant ? ce_box_compliant(hs, E, hint, m, err) : ce_box_surface(hs, hint, m, err);
    }
    case CE_SHAPE_CYLINDER: {
      if ((e = ce_check_length(nm, "radius", shape->radius, err)) ||
          (e = ce_check_length(nm, "length", shape->length, err)) ||
          (e = check_aspect(nm, radius_length, (const double[2]){shape->radius, shape->length}, 2,
                                CE_LIMIT_PRIMITIVE_ASPECT, err)))
        return e;
      double R = shape->radius, L = shape->length;
      hint = coarsest(hint, fmax(R, L));
      double nd = fmax(8.0, ceil(2.0 * M_PI * R / hint));
      /* long: m slices of the axis segment |z| <= L/2 - apothem */
      double zo = 0.5 * L - R * cos(M_PI / fmin(nd, 1e9));
      double slices = zo > 0 ? fmax(1.0, ceil(2.0 * zo / hint - 1e-9)) : 0.0;
      /* rings every ~4h across each cap's radius: the sectors resolve the
       * angle; a flat end pressed on a plane (the coin of Masterjohn et al. 2022, the
       * daemon's coin example, compliant coin at hint R/16: eps at rest
       * 0.598 with fans from centre to rim, 0.6512 with rings every 4h,
       * 0.6519 every 2h, 0.6521 every h, against 0.653) needs only a few,
       * and every ring adds 6 tets per sector crossing the contact plane
       * (2,828 polygons in 1.1 ms a query at 4h; 10,100 in 5.9 ms at h) */
      double rings = fmax(1.0, ceil(0.25 * R / hint - 1e-9));
      /* flat: each side region makes at most 14 tets, each cap sector at
       * most 6 per ring; long: 3 per slice and 4 more per side, and 2 per
       * ring of each cap sector */
      double bound = compliant ? nd * fmax(14.0 + 12.0 * rings, 3.0 * slices + 4.0 + 4.0 * rings) : 2.0 * nd;
      if (bound > MAXEL)
        return ce_fail(err, CE_ELIMIT,
                       "cylinder radius %g length %g with hint %g needs a %.3g-gon (%.3g "
                       "slices, %.3g rings, ~%.3g %s), over the limit of %d",
                       R, L, hint, nd, compliant ? slices : 0.0, compliant ? rings : 0.0, bound,
                       compliant ? "tets" : "triangles", MAXEL);
      return compliant ? ce_cylinder_tets(R, L, (int32_t)nd, (int32_t)slices, (int32_t)rings, E, m, err)
                       : ce_cylinder_surface(R, L, hint, (int32_t)nd, m, err);
    }
    case CE_SHAPE_CAPSULE: {
      if ((e = ce_check_length(nm, "radius", shape->radius, err)) ||
          (e = ce_check_length(nm, "length", shape->length, err)) ||
          (e = check_aspect(nm, radius_length, (const double[2]){shape->radius, shape->length}, 2,
                                CE_LIMIT_PRIMITIVE_ASPECT, err)))
        return e;
      return capsule_mesh(shape->radius, shape->length, coarsest(hint, fmax(shape->radius, shape->length)), compliant,
                          E, m, err);
    }
    default:
      return ce_fail(err, CE_EINVAL, "primitive mesh: shape type %d is not a primitive",
                     (int)shape->type);
  }
}

/* The margin of props (ce.h): which shapes take one, and its range. A
 * compliant half space has no tet mesh (its field is the slab's analytic
 * one), so nothing to inflate. */
static ce_errno check_margin(const ce_shape *shape, const ce_props *props, ce_error *err) {
  const double d = props->margin;
  if (d == 0) return CE_OK;
  if (!isfinite(d) || d < 0) return ce_fail(err, CE_EINVAL, "margin must be finite and >= 0 (got %g)", d);
  if (props->compliance != CE_COMPLIANT || shape->type == CE_SHAPE_HALFSPACE)
    return ce_fail(err, CE_EINVAL,
                   "margin %g: only compliant geometries with a tet mesh take a margin, not a %s %s%s", d,
                   props->compliance == CE_COMPLIANT ? "compliant" : "rigid", shape_name(shape->type),
                   shape->type == CE_SHAPE_HALFSPACE && props->compliance == CE_COMPLIANT
                       ? " (its field is the slab's analytic one: no tet mesh to inflate)"
                       : "");
  return ce_check_length(shape_name(shape->type), "margin", d, err);
}

ce_errno ce_geometry_from_shape(const ce_shape *shape, const ce_props *props,
                                ce_geometry **out, ce_error *err) {
  if (!out) return ce_fail(err, CE_EINVAL, "geometry from shape: NULL output");
  *out = NULL;
  if (!shape || !props) return ce_fail(err, CE_EINVAL, "geometry from shape: NULL shape or properties");
  ce_errno e;
  if ((e = check_margin(shape, props, err)) != CE_OK) return e;
  const double margin = props->margin;
  ce_props p0 = *props; /* the geometry itself has no margin; its inflated copy carries it */
  p0.margin = 0;
  props = &p0;
  switch (shape->type) {
    case CE_SHAPE_HALFSPACE:
      e = ce_build_halfspace(props, out, err);
      break;
    case CE_SHAPE_CONVEX:
      e = ce_build_convex(shape, props, out, err);
      break;
    case CE_SHAPE_SPHERE:
    case CE_SHAPE_BOX:
    case CE_SHAPE_CYLINDER:
    case CE_SHAPE_CAPSULE:
    case CE_SHAPE_ELLIPSOID: {
      if ((e = ce_props_check(props, 1, 0, err))) return e;
      ce_rawmesh m;
      e = ce_primitive_mesh(shape, props->compliance, props->modulus, props->hint, &m, err);
      if (e) return e;
      const ce_buildprog prog = ce_buildprog_of(props);
      if (props->compliance == CE_COMPLIANT)
        e = ce_geometry_finish_tetmesh(shape->type, props, &prog, m.v, m.nv, m.tet, m.nt, m.p, out, err);
      else
        e = ce_geometry_finish_trimesh(shape->type, props, &prog, m.v, m.nv, m.tri, m.nf, 1, out, err);
      break;
    }
    default:
      return ce_fail(err, CE_EINVAL,
                     "geometry from shape: unknown shape type %d (tet and triangle meshes "
                     "use ce_geometry_from_tetmesh / ce_geometry_from_trimesh)",
                     (int)shape->type);
  }
  if (e == CE_OK && *out) { /* analytic parameters for point contact (ce_mtd.c) */
    (*out)->shape_params = *shape;
    (*out)->shape_params.points = NULL;
  }
  if (e == CE_OK && margin > 0 && (e = ce_margin_inflate(*out, shape, margin, props, err)) != CE_OK) {
    ce_geometry_free(*out);
    *out = NULL;
  }
  return e;
}
