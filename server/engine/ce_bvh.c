/* ce_bvh.c — per-geometry bounding volume hierarchies and their traversal.
 *
 * Built once in the geometry's own frame. Every node is an oriented box: the
 * principal axes of the node's element vertices (PCA) or the geometry frame's
 * axes, whichever encloses the vertices in the smaller volume, padded by a
 * tiny margin so rounding never loses a touching pair. Leaves hold up to
 * CE_BVH_TET_LEAF tets or CE_BVH_TRI_LEAF triangles. Internal nodes split
 * their elements at the median centroid along the longest axis of the
 * centroids' bounding box (ties broken by element index, so builds are
 * deterministic). The elements are sorted along each axis once, and a
 * split partitions those lists, so no node sorts; a node's fits run over
 * its vertices gathered into contiguous arrays (a chunk at a time for the
 * few nodes larger than CE_BVH_GATHER vertices). Compliant meshes also
 * store the pressure range [pmin, pmax] of each node's vertices.
 *
 * Traversal (ce_bvh_collide) uses an explicit stack of node pairs in the
 * arena. A node pair is pruned when its pressure ranges are disjoint (with
 * use_pressure) or when a separating axis exists among the 15 axes of two
 * oriented boxes. B's boxes are placed in A's frame lazily, once per node per
 * query. Output order is the depth-first order of the traversal, which
 * depends only on the two trees and the pose.
 *
 * Boundary hierarchies also keep cylinders around the surface patches
 * (each node's two children's side by side) and their triangles, for
 * ce_bvh_collide_surfaces: the same descent, with a cylinder test of two
 * child pairs at once (~50 instructions a pair) instead of the ~350
 * instruction 15-axis one, made before a pair is pushed, and leaf pairs
 * kept only where their triangles meet. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_bvh.h"
#include "ce_arena.h"
#include "ce_internal.h"
#include "ce_predicates.h"
#include "ce_progress.h"

/* A build reports its progress (ce_buildprog) once this many elements
 * have been fitted and split since its last report: ~20 ms of work (a node
 * costs about its element count; the nodes near the root are the big
 * ones). */
#define CE_BVH_PROGRESS_WORK 65536

/* Two doubles at once (GCC/Clang vector extension: SSE2 on x86-64, NEON
 * on arm64). Lane arithmetic is the scalar IEEE arithmetic. */
typedef double v2d __attribute__((vector_size(16)));
typedef long long v2i __attribute__((vector_size(16)));

/* p is 16-byte aligned (ce_bvh_disk's lanes). */
static inline v2d v2_load(const double *p) {
  v2d v;
  memcpy(&v, __builtin_assume_aligned(p, 16), sizeof v);
  return v;
}

static inline v2d v2_splat(double x) { return (v2d){x, x}; }

static inline v2d v2_abs(v2d x) { return (v2d)((v2i)x & (v2i){INT64_MAX, INT64_MAX}); }

static inline v2d v2_swap(v2d x) {
#if defined(__clang__)
  return __builtin_shufflevector(x, x, 1, 0);
#else
  return __builtin_shuffle(x, (v2i){1, 0});
#endif
}

/* Masks are all-ones lanes where a comparison holds (a NaN never does). */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline v2d v2_sqrt(v2d x) { return _mm_sqrt_pd(x); }
static inline v2d v2_pos(v2d x) { return _mm_max_pd(x, _mm_setzero_pd()); } /* NaN -> 0 */
static inline v2d v2_gt(v2d a, v2d b) { return _mm_cmpgt_pd(a, b); }
static inline v2d v2_or(v2d a, v2d b) { return _mm_or_pd(a, b); }
static inline v2d v2_and(v2d a, v2d b) { return _mm_and_pd(a, b); }
/* Bit k set where mask lane k is clear. */
static inline int v2_clear_bits(v2d m) { return ~_mm_movemask_pd(m) & 3; }
/* a < b ? a : b and a > b ? a : b, lane by lane */
static inline v2d v2_min(v2d a, v2d b) { return _mm_min_pd(a, b); }
static inline v2d v2_max(v2d a, v2d b) { return _mm_max_pd(a, b); }
#else
static inline v2d v2_sqrt(v2d x) { return (v2d){sqrt(x[0]), sqrt(x[1])}; }
static inline v2d v2_pos(v2d x) { return (v2d)((v2i)x & (x > 0)); }
static inline v2d v2_gt(v2d a, v2d b) { return (v2d)(a > b); }
static inline v2d v2_or(v2d a, v2d b) { return (v2d)((v2i)a | (v2i)b); }
static inline v2d v2_and(v2d a, v2d b) { return (v2d)((v2i)a & (v2i)b); }
static inline int v2_clear_bits(v2d m) { return (((v2i)m)[0] == 0) | (((v2i)m)[1] == 0) << 1; }
static inline v2d v2_min(v2d a, v2d b) { return (v2d){a[0] < b[0] ? a[0] : b[0], a[1] < b[1] ? a[1] : b[1]}; }
static inline v2d v2_max(v2d a, v2d b) { return (v2d){a[0] > b[0] ? a[0] : b[0], a[1] > b[1] ? a[1] : b[1]}; }
#endif

/* Two consecutive doubles from anywhere. */
static inline v2d v2_loadu(const double *p) {
  v2d v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* The smaller and the larger lane (ties keep lane 0). */
static inline double v2_hmin(v2d a) { return a[1] < a[0] ? a[1] : a[0]; }
static inline double v2_hmax(v2d a) { return a[1] > a[0] ? a[1] : a[0]; }

/* ---- build ---------------------------------------------------------------- */

typedef struct build_ctx {
  int k;
  const int32_t *elems;
  const ce_vec3 *v;
  const double *p;
  ce_vec3 *centroid;
  int32_t *order;
  ce_bvh_node *nodes;     /* maxnodes of them: node_count(), exactly */
  int32_t nnodes, maxnodes;
  int leaf_size;
  double pad;
  /* the elements sorted along each axis (build_node), sort scratch */
  int32_t *list[3];
  int32_t *mark;
  /* node_box's gathered vertices: x, y, z, p arrays of gcap each, room
   * for the vertices of gelems elements: all of them in a small mesh, else
   * an even number, up to CE_BVH_GATHER vertices (32 bytes each, 2 MiB in
   * all; freed with the build). Nodes with more elements are fitted a
   * chunk at a time (next_chunk). */
  double *gather;
  int64_t gcap;
  int32_t gelems;
  int sort_axis;
  int32_t *tmp;
  /* tets with pressures: per-element gradient and volume, per-node fits */
  ce_vec3 *egrad;
  double *evol;
  double (*field)[5];
  /* progress: nodes built of maxnodes, reported after every
   * CE_BVH_PROGRESS_WORK elements of node work (`work` counts them up to
   * `next_report`); `stop` once the callback asked to stop (err filled) */
  const ce_buildprog *prog;
  int64_t work, next_report;
  int stop;
  int overflow; /* more nodes than node_count() said (a bug; stops the build) */
  ce_error *err;
} build_ctx;

/* Symmetric 3x3 eigenvectors by cyclic Jacobi rotations; columns of V. */
static void jacobi3(double A[3][3], double V[3][3]) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) V[i][j] = i == j ? 1.0 : 0.0;
  for (int sweep = 0; sweep < 32; sweep++) {
    double off = fabs(A[0][1]) + fabs(A[0][2]) + fabs(A[1][2]);
    double diag = fabs(A[0][0]) + fabs(A[1][1]) + fabs(A[2][2]);
    if (off <= 1e-15 * diag || off == 0) break;
    for (int p = 0; p < 2; p++)
      for (int q = p + 1; q < 3; q++) {
        if (A[p][q] == 0) continue;
        double theta = (A[q][q] - A[p][p]) / (2 * A[p][q]);
        double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        for (int r = 0; r < 3; r++) { /* A = A J */
          double arp = A[r][p], arq = A[r][q];
          A[r][p] = c * arp - s * arq;
          A[r][q] = s * arp + c * arq;
        }
        for (int r = 0; r < 3; r++) { /* A = J^T A */
          double apr = A[p][r], aqr = A[q][r];
          A[p][r] = c * apr - s * aqr;
          A[q][r] = s * apr + c * aqr;
        }
        for (int r = 0; r < 3; r++) {
          double vrp = V[r][p], vrq = V[r][q];
          V[r][p] = c * vrp - s * vrq;
          V[r][q] = s * vrp + c * vrq;
        }
      }
  }
}

static ce_vec3 col(const ce_mat3 *M, int j) { return ce_v3(M->m[0][j], M->m[1][j], M->m[2][j]); }

/* The box with extents [lo, hi] along the columns of U, padded; returns
 * its volume and fills center/half. */
static double box_from_range(const build_ctx *c, const ce_mat3 *U, const double lo[3], const double hi[3],
                             ce_vec3 *center, ce_vec3 *half) {
  const ce_vec3 ax[3] = {col(U, 0), col(U, 1), col(U, 2)};
  double h[3], m[3];
  for (int a = 0; a < 3; a++) {
    m[a] = 0.5 * (lo[a] + hi[a]);
    h[a] = 0.5 * (hi[a] - lo[a]) + c->pad;
  }
  *center = ce_add(ce_add(ce_scale(ax[0], m[0]), ce_scale(ax[1], m[1])), ce_scale(ax[2], m[2]));
  *half = ce_v3(h[0], h[1], h[2]);
  return h[0] * h[1] * h[2];
}

_Static_assert(CE_BVH_GATHER >= 8, "a chunk holds two elements or more");

/* Gathers the vertices of elements ord[from .. from + m) (m <= gelems)
 * into c->gather, in element order, with their pressures p when p is not
 * NULL. Compiled for k = 3 and k = 4 (gather): a constant k unrolls the
 * loop over an element's vertices. */
static inline __attribute__((always_inline)) void gather_k(const build_ctx *c, const int k, const double *p,
                                                           const int32_t *ord, int32_t from, int32_t m) {
  double *xs = c->gather, *ys = xs + c->gcap, *zs = ys + c->gcap, *ps = zs + c->gcap;
  for (int32_t i = 0; i < m; i++) {
    const int32_t *el = c->elems + (size_t)ord[from + i] * k;
    const int64_t q = (int64_t)i * k;
    for (int j = 0; j < k; j++) {
      const ce_vec3 x = c->v[el[j]];
      xs[q + j] = x.x;
      ys[q + j] = x.y;
      zs[q + j] = x.z;
      if (p) ps[q + j] = p[el[j]];
    }
  }
}

/* with_p: the pressures too, when the mesh has them. */
static void gather(const build_ctx *c, const int32_t *ord, int32_t from, int32_t m, int with_p) {
  const double *p = with_p ? c->p : NULL;
  if (c->k == 4) gather_k(c, 4, p, ord, from, m);
  else gather_k(c, 3, p, ord, from, m);
}

/* One pass over the vertices of the node's elements ord[first..first +
 * count), a chunk at a time in element order: *at is the next element (0
 * to start the pass); returns the number of vertices now in c->gather, 0
 * once the pass is done. A node of at most gelems elements is one chunk,
 * which node_box gathered once before its passes, pressures included. A
 * larger one is regathered for every pass (with the pressures only when
 * with_p: the pass reads them), gelems elements at a time: an even
 * number of elements, so every chunk but the last has an even number of
 * vertices and the two-lane loops pair the same vertices as over the
 * whole node. Sums carried from chunk to chunk then run in the same
 * order. Each chunk of a large node is also a progress point (the root
 * of a million tets takes ~0.3 s to fit); after a stop the passes end at
 * once, and build_node returns before using the node. */
static int64_t next_chunk(build_ctx *c, const int32_t *ord, int32_t first, int32_t count, int with_p,
                          int32_t *at) {
  int32_t m = count - *at;
  if (m <= 0 || c->stop) return 0;
  if (count > c->gelems) {
    if (ce_buildprog_report(c->prog, (double)c->nnodes / c->maxnodes, c->err) != CE_OK) {
      c->stop = 1;
      return 0;
    }
    if (m > c->gelems) m = c->gelems;
    gather(c, ord, first + *at, m, with_p);
  }
  *at += m;
  return (int64_t)m * c->k;
}

/* The running extremes of a series taken two values at a time: lane 0 of
 * l and h those of the values at even positions, lane 1 at odd ones, and
 * the last value of an odd-length series kept aside. A series comes in
 * chunks of even length but the last. */
typedef struct range2 {
  v2d l, h;
  double last;
  int has_last;
} range2;

static inline range2 range_new(void) { return (range2){v2_splat(INFINITY), v2_splat(-INFINITY), 0, 0}; }

/* The series' extremes, combined in the order the loops over a whole
 * series did: the lanes, then the last value. */
static void range_end(const range2 *r, double *lo, double *hi) {
  *lo = v2_hmin(r->l);
  *hi = v2_hmax(r->h);
  if (r->has_last) {
    *lo = r->last < *lo ? r->last : *lo;
    *hi = r->last > *hi ? r->last : *hi;
  }
}

/* Adds the projections of the gathered vertices xs, ys, zs [0, n) on the
 * columns of U to r[0..3), two vertices at a time; each projection is
 * ce_dot's sum, in its order (the extremes are those of the scalar loop,
 * up to the sign of a zero). */
static void extents_add(range2 r[3], const ce_mat3 *U, const double *xs, const double *ys, const double *zs,
                        int64_t n) {
  v2d l[3], h[3], u[3][3];
  for (int a = 0; a < 3; a++) {
    l[a] = r[a].l;
    h[a] = r[a].h;
    for (int b = 0; b < 3; b++) u[b][a] = v2_splat(U->m[b][a]);
  }
  int64_t q = 0;
  for (; q + 1 < n; q += 2) {
    const v2d x = v2_loadu(xs + q), y = v2_loadu(ys + q), z = v2_loadu(zs + q);
    for (int a = 0; a < 3; a++) {
      v2d s = u[0][a] * x + u[1][a] * y + u[2][a] * z;
      l[a] = v2_min(s, l[a]);
      h[a] = v2_max(s, h[a]);
    }
  }
  for (int a = 0; a < 3; a++) {
    r[a].l = l[a];
    r[a].h = h[a];
    if (q < n) {
      r[a].last = U->m[0][a] * xs[q] + U->m[1][a] * ys[q] + U->m[2][a] * zs[q];
      r[a].has_last = 1;
    }
  }
}

/* Adds the gathered values ps [0, n) to r. */
static void values_add(range2 *r, const double *ps, int64_t n) {
  v2d l = r->l, h = r->h;
  int64_t q = 0;
  for (; q + 1 < n; q += 2) {
    l = v2_min(v2_loadu(ps + q), l);
    h = v2_max(v2_loadu(ps + q), h);
  }
  r->l = l;
  r->h = h;
  if (q < n) {
    r->last = ps[q];
    r->has_last = 1;
  }
}

/* Adds p - g.x of the gathered tet vertices [0, n) to r (n is even: four
 * vertices a tet). */
static void field_add(range2 *r, ce_vec3 g, const double *xs, const double *ys, const double *zs,
                      const double *ps, int64_t n) {
  const v2d gx = v2_splat(g.x), gy = v2_splat(g.y), gz = v2_splat(g.z);
  v2d l = r->l, h = r->h;
  for (int64_t q = 0; q < n; q += 2) {
    v2d d = v2_loadu(ps + q) - (gx * v2_loadu(xs + q) + gy * v2_loadu(ys + q) + gz * v2_loadu(zs + q));
    l = v2_min(d, l);
    h = v2_max(d, h);
  }
  r->l = l;
  r->h = h;
}

/* The volume-weighted mean of the gradients of the node's tets
 * ord[first..first + count). */
static ce_vec3 field_gradient(const build_ctx *c, const int32_t *ord, int32_t first, int32_t count) {
  ce_vec3 g = ce_v3(0, 0, 0);
  double vol = 0;
  for (int32_t i = first; i < first + count; i++) {
    int32_t e = ord[i];
    g = ce_axpy(g, c->evol[e], c->egrad[e]);
    vol += c->evol[e];
  }
  return vol > 0 ? ce_scale(g, 1.0 / vol) : ce_v3(0, 0, 0);
}

/* Linear bound of the pressure over the node's tets: g their mean
 * gradient (field_gradient), c and e from the range r of p - g.x over the
 * node's vertices (p - g.x - c is linear on every tet, so its extremes
 * over the node are at vertices). e is padded against rounding. */
static void node_field(const ce_bvh_node *nd, ce_vec3 g, const range2 *r, double f[5]) {
  double lo, hi;
  range_end(r, &lo, &hi);
  double off = 0.5 * (lo + hi), dev = 0.5 * (hi - lo);
  double mag = fabs(off) + fabs(nd->pmin) + fabs(nd->pmax) +
               ce_norm(g) * (ce_norm(nd->center) + ce_norm(nd->half));
  f[0] = g.x;
  f[1] = g.y;
  f[2] = g.z;
  f[3] = off;
  f[4] = dev + 1e-10 * mag;
}

/* The box, pressure range and field bound of the node over elements
 * ord[first..first+count). Their vertices (with repeats, in element order)
 * are gathered into c->gather, once when they fit (next_chunk), and three
 * passes run over them: the first needs only the vertices (their sum, the
 * box along the geometry frame's axes, the pressure range and the range
 * for the field bound), the second the mean (the covariance about it,
 * whose eigenvectors are the principal axes), the third those axes (the
 * box along them). */
static void node_box(build_ctx *c, ce_bvh_node *nd, const int32_t *ord, int32_t first, int32_t count) {
  const double *xs = c->gather, *ys = xs + c->gcap, *zs = ys + c->gcap, *ps = zs + c->gcap;
  const ce_mat3 I = ce_mat3_identity();
  const ce_vec3 g = c->field ? field_gradient(c, ord, first, count) : ce_v3(0, 0, 0);
  if (count <= c->gelems) gather(c, ord, first, count, 1);
  int64_t n;
  ce_vec3 mean = ce_v3(0, 0, 0);
  range2 box[3] = {range_new(), range_new(), range_new()}, pr = range_new(), fr = range_new();
  for (int32_t at = 0; (n = next_chunk(c, ord, first, count, 1, &at)) > 0;) {
    for (int64_t q = 0; q < n; q++) mean = ce_add(mean, ce_v3(xs[q], ys[q], zs[q]));
    extents_add(box, &I, xs, ys, zs, n);
    if (c->p) values_add(&pr, ps, n);
    if (c->field) field_add(&fr, g, xs, ys, zs, ps, n);
  }
  mean = ce_scale(mean, 1.0 / (double)((int64_t)count * c->k));
  /* Principal axes of the vertex cloud. */
  double C[3][3] = {{0}};
  for (int32_t at = 0; (n = next_chunk(c, ord, first, count, 0, &at)) > 0;)
    for (int64_t q = 0; q < n; q++) {
      const double dv[3] = {xs[q] - mean.x, ys[q] - mean.y, zs[q] - mean.z};
      for (int a = 0; a < 3; a++)
        for (int b = a; b < 3; b++) C[a][b] += dv[a] * dv[b];
    }
  C[1][0] = C[0][1];
  C[2][0] = C[0][2];
  C[2][1] = C[1][2];
  double V[3][3];
  jacobi3(C, V);
  ce_mat3 U;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) U.m[i][j] = V[i][j];
  /* Right-handed, unit columns. */
  ce_vec3 u0 = ce_normalize(col(&U, 0)), u1 = ce_normalize(col(&U, 1));
  u1 = ce_normalize(ce_axpy(u1, -ce_dot(u0, u1), u0));
  ce_vec3 u2 = ce_cross(u0, u1);
  int pca_ok = ce_norm2(u0) > 0.5 && ce_norm2(u1) > 0.5;
  for (int i = 0; i < 3; i++) {
    U.m[i][0] = ce_v3_get(u0, i);
    U.m[i][1] = ce_v3_get(u1, i);
    U.m[i][2] = ce_v3_get(u2, i);
  }
  double lo[3], hi[3], vol_pca = INFINITY;
  ce_vec3 c_aabb, h_aabb, c_pca, h_pca;
  for (int a = 0; a < 3; a++) range_end(&box[a], &lo[a], &hi[a]);
  double vol_aabb = box_from_range(c, &I, lo, hi, &c_aabb, &h_aabb);
  if (pca_ok) {
    range2 pca[3] = {range_new(), range_new(), range_new()};
    for (int32_t at = 0; (n = next_chunk(c, ord, first, count, 0, &at)) > 0;) extents_add(pca, &U, xs, ys, zs, n);
    for (int a = 0; a < 3; a++) range_end(&pca[a], &lo[a], &hi[a]);
    vol_pca = box_from_range(c, &U, lo, hi, &c_pca, &h_pca);
  }
  if (vol_pca < 0.98 * vol_aabb) {
    nd->center = c_pca;
    nd->half = h_pca;
    nd->axes = U;
  } else {
    nd->center = c_aabb;
    nd->half = h_aabb;
    nd->axes = I;
  }
  double pmin = 0, pmax = 0;
  if (c->p) range_end(&pr, &pmin, &pmax);
  nd->pmin = pmin;
  nd->pmax = pmax;
  if (c->field) node_field(nd, g, &fr, c->field[nd - c->nodes]);
}

/* Stable merge sort of a[0..n) by (centroid[axis], index). */
static int key_less(const build_ctx *c, int32_t a, int32_t b) {
  double ka = ce_v3_get(c->centroid[a], c->sort_axis), kb = ce_v3_get(c->centroid[b], c->sort_axis);
  if (ka != kb) return ka < kb;
  return a < b;
}

/* Merge sort by key_less; a cancellation point after each merge of 65,536
 * or more (~30 ms of work), after which (c->stop) it returns at once. */
static void msort(build_ctx *c, int32_t *a, int32_t n, int32_t *tmp) {
  if (c->stop) return;
  if (n < 16) {
    for (int32_t i = 1; i < n; i++) {
      int32_t x = a[i], j = i - 1;
      while (j >= 0 && key_less(c, x, a[j])) {
        a[j + 1] = a[j];
        j--;
      }
      a[j + 1] = x;
    }
    return;
  }
  int32_t h = n / 2;
  msort(c, a, h, tmp);
  msort(c, a + h, n - h, tmp);
  int32_t i = 0, j = h, o = 0;
  while (i < h && j < n) tmp[o++] = key_less(c, a[j], a[i]) ? a[j++] : a[i++];
  while (i < h) tmp[o++] = a[i++];
  while (j < n) tmp[o++] = a[j++];
  memcpy(a, tmp, (size_t)n * sizeof *a);
  if (n >= 65536 && ce_buildprog_report(c->prog, 0, c->err) != CE_OK) c->stop = 1;
}

/* The node over elements ord[first..first+count): ord is the list sorted
 * along the parent's split axis (the identity order for the root), which
 * is the order the node's sums run in. A split takes the lower half of the
 * list along the longest axis of the centroids' bounds, by (centroid,
 * index); every list is then stably partitioned the same way (the mark of
 * this node on the lower half), so each stays sorted within both children
 * and no node sorts. A leaf's elements go to c->order in ord's order. */
static int32_t build_node(build_ctx *c, const int32_t *ord, int32_t first, int32_t count) {
  if (c->stop) return -1;
  if (c->work >= c->next_report) {
    c->next_report = c->work + CE_BVH_PROGRESS_WORK;
    if (ce_buildprog_report(c->prog, (double)c->nnodes / c->maxnodes, c->err) != CE_OK) {
      c->stop = 1;
      return -1;
    }
  }
  c->work += count;
  if (c->nnodes == c->maxnodes) { /* cannot happen: node_count() follows the splits below */
    c->overflow = 1;
    c->stop = 1;
    return -1;
  }
  int32_t id = c->nnodes++;
  ce_bvh_node *nd = &c->nodes[id];
  node_box(c, nd, ord, first, count);
  if (c->stop) return -1; /* stopped at one of its chunks */
  nd->first = first;
  nd->count = count;
  nd->left = nd->right = -1;
  if (count <= c->leaf_size) {
    if (ord != c->order) memcpy(c->order + first, ord + first, (size_t)count * sizeof *ord);
    return id;
  }
  /* Longest axis of the centroids' bounds. */
  ce_vec3 lo = c->centroid[ord[first]], hi = lo;
  for (int32_t i = first + 1; i < first + count; i++) {
    ce_vec3 x = c->centroid[ord[i]];
    lo = ce_v3(fmin(lo.x, x.x), fmin(lo.y, x.y), fmin(lo.z, x.z));
    hi = ce_v3(fmax(hi.x, x.x), fmax(hi.y, x.y), fmax(hi.z, x.z));
  }
  ce_vec3 ext = ce_sub(hi, lo);
  const int axis = (ext.x >= ext.y && ext.x >= ext.z) ? 0 : (ext.y >= ext.z ? 1 : 2);
  const int32_t h = count / 2, stamp = id + 1;
  const int32_t *L = c->list[axis];
  for (int32_t i = first; i < first + h; i++) c->mark[L[i]] = stamp;
  for (int b = 0; b < 3; b++) {
    if (b == axis) continue;
    int32_t *B = c->list[b] + first, nl = 0, nr = 0;
    for (int32_t i = 0; i < count; i++) {
      int32_t e = B[i];
      if (c->mark[e] == stamp) B[nl++] = e;
      else c->tmp[nr++] = e;
    }
    memcpy(B + nl, c->tmp, (size_t)nr * sizeof *B);
  }
  int32_t l = build_node(c, L, first, h);
  int32_t r = build_node(c, L, first + h, count - h);
  nd = &c->nodes[id];
  nd->left = l;
  nd->right = r;
  return id;
}

/* Lane k of a disk entry: a cylinder around node nd's triangles, axis
 * along its box's thinnest side (where a surface patch is flat), h that
 * box's half extent along it, and radii rho (from the axis) and r (from
 * the centre) the largest over the node's vertices: they bound the
 * triangles (convex hulls of vertices) and are smaller than the box's when
 * the patch does not fill the box's corners, as on a curved surface. Radii
 * are inflated by 1e-12 of the centre's and radius' size against the
 * rounding of the distances, so the traversal never drops a pair of
 * triangles that meet. */
static void disk_lane(const ce_bvh *s, const int32_t (*face)[3], const ce_vec3 *v, ce_bvh_disk *dk, int k,
                      const ce_bvh_node *nd, const int32_t *entry, int32_t id) {
  double h[3] = {nd->half.x, nd->half.y, nd->half.z};
  int a = h[0] <= h[1] && h[0] <= h[2] ? 0 : (h[1] <= h[2] ? 1 : 2);
  ce_vec3 n = col(&nd->axes, a), c = nd->center;
  double r2 = 0, rho2 = 0;
  for (int32_t q = nd->first; q < nd->first + nd->count; q++)
    for (int j = 0; j < 3; j++) {
      ce_vec3 d = ce_sub(v[face[s->order[q]][j]], c);
      double dn = ce_dot(d, n), d2 = ce_dot(d, d);
      r2 = fmax(r2, d2);
      rho2 = fmax(rho2, d2 - dn * dn);
    }
  double pad = 1e-12 * (ce_norm(c) + ce_norm(nd->half));
  dk->cx[k] = c.x;
  dk->cy[k] = c.y;
  dk->cz[k] = c.z;
  dk->nx[k] = n.x;
  dk->ny[k] = n.y;
  dk->nz[k] = n.z;
  dk->h[k] = h[a];
  dk->rho[k] = sqrt(rho2) * (1 + 1e-12) + pad;
  dk->r[k] = sqrt(r2) * (1 + 1e-12) + pad;
  dk->first[k] = nd->first;
  dk->count[k] = nd->left >= 0 ? 0 : nd->count;
  dk->ref[k] = nd->left >= 0 ? entry[id] : ~(2 * (int32_t)(dk - s->disk) + k);
}

ce_errno ce_bvh_build_surface(ce_bvh *s, const int32_t (*face)[3], const ce_vec3 *v, const ce_buildprog *prog,
                               ce_error *err) {
  if (s->nnodes == 0) return CE_OK;
  int32_t ninner = 0;
  for (int32_t i = 0; i < s->nnodes; i++) ninner += s->nodes[i].left >= 0;
  int32_t *entry = calloc((size_t)s->nnodes, sizeof *entry);
  s->disk = malloc((size_t)(ninner + 1) * sizeof *s->disk);
  s->tri = malloc((size_t)s->nelem * sizeof *s->tri);
  if (!entry || !s->disk || !s->tri) {
    free(entry);
    return ce_fail(err, CE_ENOMEM, "bvh: out of memory for surface bounds");
  }
  for (int32_t i = 0, e = 1; i < s->nnodes; i++) entry[i] = s->nodes[i].left >= 0 ? e++ : -1;
  for (int k = 0; k < 2; k++) disk_lane(s, face, v, &s->disk[0], k, &s->nodes[0], entry, 0);
  /* a node's lanes read its children's vertices: nd->count triangles */
  int64_t work = 2 * (int64_t)s->nodes[0].count, next_report = 0;
  for (int32_t i = 0; i < s->nnodes; i++) {
    const ce_bvh_node *nd = &s->nodes[i];
    if (nd->left < 0) continue;
    if (work >= next_report) {
      next_report = work + CE_BVH_PROGRESS_WORK;
      ce_errno e = ce_buildprog_report(prog, 0.9 * i / s->nnodes, err);
      if (e != CE_OK) {
        free(entry);
        return e;
      }
    }
    disk_lane(s, face, v, &s->disk[entry[i]], 0, &s->nodes[nd->left], entry, nd->left);
    disk_lane(s, face, v, &s->disk[entry[i]], 1, &s->nodes[nd->right], entry, nd->right);
    work += nd->count;
  }
  free(entry);
  for (int32_t q = 0; q < s->nelem; q++) {
    if ((q & 65535) == 65535) {
      ce_errno e = ce_buildprog_report(prog, 0.9 + 0.1 * q / s->nelem, err);
      if (e != CE_OK) return e;
    }
    const int32_t *f = face[s->order[q]];
    ce_bvh_tri *t = &s->tri[q];
    for (int j = 0; j < 3; j++) t->v[j] = v[f[j]];
    ce_vec3 n = ce_cross(ce_sub(t->v[1], t->v[0]), ce_sub(t->v[2], t->v[0]));
    double len = ce_norm(n);
    t->n = len > 0 ? ce_scale(n, 1.0 / len) : ce_v3(0, 0, 0);
    t->d = ce_dot(t->n, t->v[0]);
    /* Inflated against the rounding of the norms. */
    t->c = ce_scale(ce_add(ce_add(t->v[0], t->v[1]), t->v[2]), 1.0 / 3);
    t->r = fmax(ce_norm(ce_sub(t->v[0], t->c)), fmax(ce_norm(ce_sub(t->v[1], t->c)), ce_norm(ce_sub(t->v[2], t->c))));
    t->r *= 1 + 1e-12;
  }
  return CE_OK;
}

/* Boundary faces of a tet mesh: faces that belong to exactly one tet. */
typedef struct face_key {
  int32_t v[3]; /* sorted */
  int32_t tet, k;
} face_key;

static int face_cmp(const void *x, const void *y) {
  const face_key *a = x, *b = y;
  for (int i = 0; i < 3; i++)
    if (a->v[i] != b->v[i]) return a->v[i] < b->v[i] ? -1 : 1;
  if (a->tet != b->tet) return a->tet < b->tet ? -1 : 1;
  return a->k < b->k ? -1 : (a->k > b->k);
}

/* The boundary hierarchy of a tet mesh: its faces that belong to one tet
 * only, ordered by their sorted vertex triples. bfaces (nb entries of
 * (tet, local face k), the face opposite vertex k) lists them when the
 * caller already knows them (from the mesh's adjacency); otherwise
 * (bfaces NULL) every face of every tet is sorted to find them. */
static ce_errno build_boundary(ce_bvh *bvh, int32_t nt, const int32_t *tets, const ce_vec3 *v,
                               const int32_t (*bfaces)[2], int64_t nb, const ce_buildprog *prog, ce_error *err) {
  const int64_t n4 = bfaces ? nb : (int64_t)nt * 4;
  face_key *f = malloc((size_t)(n4 > 0 ? n4 : 1) * sizeof *f);
  if (!f) return ce_fail(err, CE_ENOMEM, "bvh: out of memory for boundary faces");
  for (int64_t i = 0; i < n4; i++) {
    const int32_t t = bfaces ? bfaces[i][0] : (int32_t)(i / 4), k = bfaces ? bfaces[i][1] : (int32_t)(i % 4);
    face_key *q = &f[i];
    int32_t a = tets[4 * t + (k + 1) % 4], b = tets[4 * t + (k + 2) % 4], c = tets[4 * t + (k + 3) % 4], s;
    if (a > b) { s = a; a = b; b = s; }
    if (b > c) { s = b; b = c; c = s; }
    if (a > b) { s = a; a = b; b = s; }
    q->v[0] = a;
    q->v[1] = b;
    q->v[2] = c;
    q->tet = t;
    q->k = k;
  }
  qsort(f, (size_t)n4, sizeof *f, face_cmp);
  int64_t nf = 0;
  for (int64_t i = 0; i < n4;) {
    int64_t j = i + 1;
    while (j < n4 && memcmp(f[j].v, f[i].v, sizeof f[i].v) == 0) j++;
    if (j - i == 1) f[nf++] = f[i];
    i = j;
  }
  ce_errno e = CE_OK;
  bvh->bnd = calloc(1, sizeof *bvh->bnd);
  bvh->bnd_face = malloc((size_t)(nf ? nf : 1) * sizeof *bvh->bnd_face);
  bvh->bnd_tet = malloc((size_t)(nf ? nf : 1) * sizeof *bvh->bnd_tet);
  if (!bvh->bnd || !bvh->bnd_face || !bvh->bnd_tet) {
    e = ce_fail(err, CE_ENOMEM, "bvh: out of memory for boundary faces");
  } else {
    for (int64_t i = 0; i < nf; i++) {
      memcpy(bvh->bnd_face[i], f[i].v, sizeof f[i].v);
      bvh->bnd_tet[i] = f[i].tet;
    }
    /* (shares as in a rigid mesh's build, tri_build) */
    const ce_buildprog ptree = ce_buildprog_part(prog, 0, 0.7), psurf = ce_buildprog_part(prog, 0.7, 1);
    e = ce_bvh_build(bvh->bnd, (int32_t)nf, 3, &bvh->bnd_face[0][0], v, NULL, &ptree, err);
    if (e == CE_OK) e = ce_bvh_build_surface(bvh->bnd, (const int32_t(*)[3])bvh->bnd_face, v, &psurf, err);
  }
  free(f);
  return e;
}

/* How many nodes build_node makes for n elements with leaves of up to
 * `leaf`: a node of s > leaf elements splits into s / 2 and s - s / 2, so
 * the nodes of one depth have at most two sizes, a and a + 1, and the tree
 * is counted a depth at a time (ca nodes of size a, cb of size a + 1). */
static int64_t node_count(int64_t n, int leaf) {
  int64_t total = 0, a = n, ca = 1, cb = 0;
  while (ca + cb > 0) {
    total += ca + cb;
    const int64_t k = a / 2, sa = a > leaf ? ca : 0, sb = a + 1 > leaf ? cb : 0;
    /* children: a = 2k gives k, k and a + 1 gives k, k + 1; a = 2k + 1
     * gives k, k + 1 and a + 1 gives k + 1, k + 1 */
    if (a % 2 == 0) {
      ca = 2 * sa + sb;
      cb = sb;
    } else {
      ca = sa;
      cb = sa + 2 * sb;
    }
    a = k;
  }
  return total;
}

static ce_errno bvh_build(ce_bvh *bvh, int32_t nelem, int k, const int32_t *elems, const ce_vec3 *v,
                          const double *pressure, const int32_t (*bfaces)[2], int64_t nb,
                          const ce_buildprog *prog, ce_error *err) {
  memset(bvh, 0, sizeof *bvh);
  if (nelem < 0 || (k != 3 && k != 4))
    return ce_fail(err, CE_EINVAL, "bvh: bad element count %d or arity %d", (int)nelem, k);
  if (nelem == 0) return CE_OK;
  build_ctx c;
  memset(&c, 0, sizeof c);
  c.k = k;
  c.elems = elems;
  c.v = v;
  c.p = pressure;
  c.leaf_size = k == 4 ? CE_BVH_TET_LEAF : CE_BVH_TRI_LEAF;
  /* The nodes and their fields are allocated at their final size, not at
   * a bound of 2n shrunk afterwards: with leaves of several elements that
   * bound is 3-6 times the tree and would set the build's peak memory
   * (docs/architecture.md: builds). */
  const int64_t maxnodes = node_count(nelem, c.leaf_size);
  c.maxnodes = (int32_t)maxnodes;
  /* the tree's share of the build; a tet mesh's boundary hierarchy the rest */
  const ce_buildprog tree = ce_buildprog_part(prog, 0, k == 4 ? 0.85 : 1.0);
  const ce_buildprog bnd = ce_buildprog_part(prog, 0.85, 1.0);
  c.prog = &tree;
  c.err = err;
  c.next_report = CE_BVH_PROGRESS_WORK;
  c.centroid = malloc((size_t)nelem * sizeof *c.centroid);
  c.tmp = malloc((size_t)nelem * sizeof *c.tmp);
  c.order = malloc((size_t)nelem * sizeof *c.order);
  c.nodes = malloc((size_t)maxnodes * sizeof *c.nodes);
  /* the three sorted lists and the marks in one block */
  int32_t *lists = malloc((size_t)nelem * 4 * sizeof *lists);
  c.gelems = (CE_BVH_GATHER / k) & ~1;
  if (c.gelems > nelem) c.gelems = nelem;
  c.gcap = (int64_t)c.gelems * k;
  c.gather = malloc((size_t)c.gcap * 4 * sizeof *c.gather);
  if (k == 4 && pressure) {
    c.egrad = malloc((size_t)nelem * sizeof *c.egrad);
    c.evol = malloc((size_t)nelem * sizeof *c.evol);
    c.field = malloc((size_t)maxnodes * sizeof *c.field);
  }
  if (!c.centroid || !c.tmp || !c.order || !c.nodes || !lists || !c.gather ||
      (k == 4 && pressure && (!c.egrad || !c.evol || !c.field))) {
    free(lists);
    free(c.gather);
    free(c.centroid);
    free(c.tmp);
    free(c.order);
    free(c.nodes);
    free(c.egrad);
    free(c.evol);
    free(c.field);
    return ce_fail(err, CE_ENOMEM, "bvh: out of memory for %d elements", (int)nelem);
  }
  if (c.field) {
    for (int32_t i = 0; i < nelem; i++) {
      const int32_t *el = elems + (size_t)i * 4;
      ce_vec3 e1 = ce_sub(v[el[1]], v[el[0]]), e2 = ce_sub(v[el[2]], v[el[0]]), e3 = ce_sub(v[el[3]], v[el[0]]);
      double d1 = pressure[el[1]] - pressure[el[0]], d2 = pressure[el[2]] - pressure[el[0]],
             d3 = pressure[el[3]] - pressure[el[0]];
      double det = ce_dot(e1, ce_cross(e2, e3));
      ce_vec3 g = ce_add(ce_add(ce_scale(ce_cross(e2, e3), d1), ce_scale(ce_cross(e3, e1), d2)),
                         ce_scale(ce_cross(e1, e2), d3));
      c.egrad[i] = det != 0 ? ce_scale(g, 1.0 / det) : ce_v3(0, 0, 0);
      c.evol[i] = fabs(det);
    }
  }
  double scale = 0;
  for (int32_t i = 0; i < nelem; i++) {
    ce_vec3 s = ce_v3(0, 0, 0);
    for (int j = 0; j < k; j++) {
      ce_vec3 x = v[elems[(size_t)i * k + j]];
      s = ce_add(s, x);
      double m = fmax(fabs(x.x), fmax(fabs(x.y), fabs(x.z)));
      if (m > scale) scale = m;
    }
    c.centroid[i] = ce_scale(s, 1.0 / k);
    c.order[i] = i;
  }
  /* Rounding in the box fit and the separating-axis test is ~1e-16 of the
   * coordinates; pad generously above that, far below any element size. */
  c.pad = 1e-9 * (scale > 0 ? scale : 1.0);
  for (int a = 0; a < 3; a++) {
    c.list[a] = lists + (size_t)a * nelem;
    memcpy(c.list[a], c.order, (size_t)nelem * sizeof *c.order);
    c.sort_axis = a;
    msort(&c, c.list[a], nelem, c.tmp);
    /* a cancellation point after each sort (within it for large ones) */
    if (c.stop || ce_buildprog_report(&tree, 0, err) != CE_OK) {
      c.stop = 1;
      break;
    }
  }
  c.mark = lists + (size_t)3 * nelem;
  memset(c.mark, 0, (size_t)nelem * sizeof *c.mark);
  if (!c.stop) build_node(&c, c.order, 0, nelem);
  free(lists);
  free(c.gather);
  free(c.centroid);
  free(c.tmp);
  free(c.egrad);
  free(c.evol);
  if (c.stop) {
    free(c.field);
    free(c.nodes);
    free(c.order);
    if (c.overflow)
      return ce_fail(err, CE_EINVAL, "bvh: more nodes than the %d counted for %d elements", (int)c.maxnodes,
                     (int)nelem);
    return CE_ECANCELED; /* *err filled by the report */
  }
  bvh->field = c.field;
  bvh->nodes = c.nodes;
  bvh->nnodes = c.nnodes;
  bvh->nelem = nelem;
  bvh->order = c.order;
  if (k == 4) {
    ce_errno e = build_boundary(bvh, nelem, elems, v, bfaces, nb, &bnd, err);
    if (e != CE_OK) {
      ce_bvh_free(bvh);
      return e;
    }
  }
  return CE_OK;
}

ce_errno ce_bvh_build(ce_bvh *bvh, int32_t nelem, int k, const int32_t *elems, const ce_vec3 *v,
                      const double *pressure, const ce_buildprog *prog, ce_error *err) {
  return bvh_build(bvh, nelem, k, elems, v, pressure, NULL, 0, prog, err);
}

ce_errno ce_bvh_build_tets(ce_bvh *bvh, int32_t nt, const int32_t *tets, const ce_vec3 *v, const double *pressure,
                           const int32_t (*bfaces)[2], int64_t nb, const ce_buildprog *prog, ce_error *err) {
  return bvh_build(bvh, nt, 4, tets, v, pressure, bfaces, nb, prog, err);
}

void ce_bvh_free(ce_bvh *bvh) {
  if (!bvh) return;
  free(bvh->nodes);
  free(bvh->order);
  free(bvh->field);
  free(bvh->disk);
  free(bvh->tri);
  if (bvh->bnd) {
    ce_bvh_free(bvh->bnd);
    free(bvh->bnd);
  }
  free(bvh->bnd_face);
  free(bvh->bnd_tet);
  memset(bvh, 0, sizeof *bvh);
}

size_t ce_bvh_bytes(const ce_bvh *bvh) {
  size_t bytes = (size_t)bvh->nnodes * (sizeof(ce_bvh_node) + (bvh->field ? sizeof(double[5]) : 0)) +
                 (size_t)bvh->nelem * sizeof(int32_t);
  if (bvh->disk) bytes += (size_t)(bvh->nnodes + 1) / 2 * sizeof(ce_bvh_disk); /* internal nodes + 1 */
  if (bvh->tri) bytes += (size_t)bvh->nelem * sizeof(ce_bvh_tri);
  if (bvh->bnd)
    bytes += sizeof(ce_bvh) + ce_bvh_bytes(bvh->bnd) + (size_t)bvh->bnd->nelem * (sizeof(int32_t[3]) + sizeof(int32_t));
  return bytes;
}

/* ---- traversal ------------------------------------------------------------ */

/* B's node box placed in A's frame: centre, axes, and (with pressure
 * fields) B's linear pressure bound expressed in A's frame. */
typedef struct placed_box {
  ce_vec3 c;
  ce_vec3 u[3];
  ce_vec3 g;
  double off;
} placed_box;

/* Separating-axis test of A's box (centre ca, axes = columns of UA, half
 * ha) and B's placed box. Returns 1 when no axis separates them. |R| gets
 * an epsilon so near-parallel edges never yield a false separation. */
static inline int obb_overlap(ce_vec3 ca, const ce_mat3 *UA, ce_vec3 ha, const placed_box *pb, ce_vec3 hb) {
  const double eps = 1e-12;
  double R[3][3], AR[3][3], t[3];
  ce_vec3 d = ce_sub(pb->c, ca);
  const double a0 = ha.x, a1 = ha.y, a2 = ha.z, b0 = hb.x, b1 = hb.y, b2 = hb.z;
  /* A's face axes, computing rows of R as needed. */
  for (int i = 0; i < 3; i++) {
    ce_vec3 ai = ce_v3(UA->m[0][i], UA->m[1][i], UA->m[2][i]);
    t[i] = ce_dot(ai, d);
    R[i][0] = ce_dot(ai, pb->u[0]);
    R[i][1] = ce_dot(ai, pb->u[1]);
    R[i][2] = ce_dot(ai, pb->u[2]);
    AR[i][0] = fabs(R[i][0]) + eps;
    AR[i][1] = fabs(R[i][1]) + eps;
    AR[i][2] = fabs(R[i][2]) + eps;
    double ai_h = i == 0 ? a0 : (i == 1 ? a1 : a2);
    if (fabs(t[i]) > ai_h + b0 * AR[i][0] + b1 * AR[i][1] + b2 * AR[i][2]) return 0;
  }
  /* B's face axes. */
  if (fabs(t[0] * R[0][0] + t[1] * R[1][0] + t[2] * R[2][0]) > a0 * AR[0][0] + a1 * AR[1][0] + a2 * AR[2][0] + b0)
    return 0;
  if (fabs(t[0] * R[0][1] + t[1] * R[1][1] + t[2] * R[2][1]) > a0 * AR[0][1] + a1 * AR[1][1] + a2 * AR[2][1] + b1)
    return 0;
  if (fabs(t[0] * R[0][2] + t[1] * R[1][2] + t[2] * R[2][2]) > a0 * AR[0][2] + a1 * AR[1][2] + a2 * AR[2][2] + b2)
    return 0;
  /* Edge-edge axes a_i x b_j. */
  if (fabs(t[2] * R[1][0] - t[1] * R[2][0]) > a1 * AR[2][0] + a2 * AR[1][0] + b1 * AR[0][2] + b2 * AR[0][1]) return 0;
  if (fabs(t[2] * R[1][1] - t[1] * R[2][1]) > a1 * AR[2][1] + a2 * AR[1][1] + b0 * AR[0][2] + b2 * AR[0][0]) return 0;
  if (fabs(t[2] * R[1][2] - t[1] * R[2][2]) > a1 * AR[2][2] + a2 * AR[1][2] + b0 * AR[0][1] + b1 * AR[0][0]) return 0;
  if (fabs(t[0] * R[2][0] - t[2] * R[0][0]) > a0 * AR[2][0] + a2 * AR[0][0] + b1 * AR[1][2] + b2 * AR[1][1]) return 0;
  if (fabs(t[0] * R[2][1] - t[2] * R[0][1]) > a0 * AR[2][1] + a2 * AR[0][1] + b0 * AR[1][2] + b2 * AR[1][0]) return 0;
  if (fabs(t[0] * R[2][2] - t[2] * R[0][2]) > a0 * AR[2][2] + a2 * AR[0][2] + b0 * AR[1][1] + b1 * AR[1][0]) return 0;
  if (fabs(t[1] * R[0][0] - t[0] * R[1][0]) > a0 * AR[1][0] + a1 * AR[0][0] + b1 * AR[2][2] + b2 * AR[2][1]) return 0;
  if (fabs(t[1] * R[0][1] - t[0] * R[1][1]) > a0 * AR[1][1] + a1 * AR[0][1] + b0 * AR[2][2] + b2 * AR[2][0]) return 0;
  if (fabs(t[1] * R[0][2] - t[0] * R[1][2]) > a0 * AR[1][2] + a1 * AR[0][2] + b0 * AR[2][1] + b1 * AR[2][0]) return 0;
  return 1;
}

/* Shrink a box (centre *C, axes u[0..2], half extents *h) to the tightest
 * box with the same axes that contains its intersection with the slab
 * |w . x + c0| <= e. Returns 0 when the slab misses the box. Exact per axis:
 * with x = C + sum t_i u_i and b_i = w . u_i the slab reads
 * sum b_i t_i in [L, U]; the other two terms range over [-r_i, r_i], so
 * b_i t_i in [L - r_i, U + r_i]. */
static inline int shrink_to_slab(ce_vec3 w, double c0, double e, ce_vec3 *C, const ce_vec3 u[3], ce_vec3 *h) {
  double hh[3] = {h->x, h->y, h->z};
  double b[3] = {ce_dot(w, u[0]), ce_dot(w, u[1]), ce_dot(w, u[2])};
  double ab[3] = {hh[0] * fabs(b[0]), hh[1] * fabs(b[1]), hh[2] * fabs(b[2])};
  double R = ab[0] + ab[1] + ab[2];
  double sc = ce_dot(w, *C) + c0;
  double slack = e + 1e-12 * (R + fabs(sc));
  double L = -slack - sc, U = slack - sc;
  if (L > R || U < -R) return 0;
  ce_vec3 c = *C;
  for (int i = 0; i < 3; i++) {
    double ri = R - ab[i];
    if (ab[i] <= 1e-9 * (R + slack)) continue; /* axis nearly in the slab plane */
    double lo = (L - ri) / b[i], hi = (U + ri) / b[i];
    if (b[i] < 0) {
      double t = lo;
      lo = hi;
      hi = t;
    }
    if (lo < -hh[i]) lo = -hh[i];
    if (hi > hh[i]) hi = hh[i];
    if (lo > hi) return 0;
    double m = 0.5 * (lo + hi), half = 0.5 * (hi - lo);
    half += 1e-9 * hh[i]; /* rounding of the division */
    c = ce_axpy(c, m, u[i]);
    hh[i] = half;
  }
  *C = c;
  *h = ce_v3(hh[0], hh[1], hh[2]);
  return 1;
}

static const placed_box *place(const ce_bvh *bb, int32_t j, const ce_pose *X, placed_box *cache,
                               unsigned char *done) {
  placed_box *p = &cache[j];
  if (!done[j]) {
    const ce_bvh_node *n = &bb->nodes[j];
    p->c = ce_pose_apply(X, n->center);
    for (int k = 0; k < 3; k++) p->u[k] = ce_mat3_mul_vec(&X->R, col(&n->axes, k));
    if (bb->field) {
      /* p_B(y) ~ gB . y + cB with y = R^T (x - t): in A's frame the
       * gradient is R gB and the offset cB - (R gB) . t. */
      const double *f = bb->field[j];
      p->g = ce_mat3_mul_vec(&X->R, ce_v3(f[0], f[1], f[2]));
      p->off = f[3] - ce_dot(p->g, X->p);
    }
    done[j] = 1;
  }
  return p;
}

/* The two child pairs of node pair `top` onto the traversal stack, right
 * child first (so the left one is popped first): A's children when
 * split_a, else B's. Shared by both pair traversals so they descend alike. */
static inline ce_errno push_children(ce_arena *arena, ce_buf *stack, ce_pair top, int split_a, int32_t left,
                                     int32_t right) {
  if (stack->len + 2 > stack->cap && ce_buf_reserve(arena, stack, 2) != CE_OK) return CE_ENOMEM;
  ce_pair *s = (ce_pair *)stack->data + stack->len;
  s[0] = split_a ? (ce_pair){right, top.b} : (ce_pair){top.a, right};
  s[1] = split_a ? (ce_pair){left, top.b} : (ce_pair){top.a, left};
  stack->len += 2;
  return CE_OK;
}

ce_errno ce_bvh_collide(const ce_bvh *bvh_a, const ce_bvh *bvh_b, const ce_pose *X_AB,
                        int use_pressure, ce_arena *arena, ce_buf *out) {
  if (bvh_a->nnodes == 0 || bvh_b->nnodes == 0) return CE_OK;
  placed_box *cache = ce_arena_alloc(arena, (size_t)bvh_b->nnodes * sizeof(placed_box));
  unsigned char *done = ce_arena_calloc(arena, (size_t)bvh_b->nnodes, 1);
  if (!cache || !done) return CE_ENOMEM;
  ce_buf stack;
  ce_buf_init(&stack, sizeof(ce_pair));
  if (ce_buf_reserve(arena, &stack, 64) != CE_OK) return CE_ENOMEM;
  ce_pair *st = stack.data;
  st[0].a = 0;
  st[0].b = 0;
  stack.len = 1;
  const ce_bvh_node *NA = bvh_a->nodes, *NB = bvh_b->nodes;
  /* Equal-pressure slabs need both linear bounds. */
  const int use_slab = use_pressure && bvh_a->field && bvh_b->field;
  while (stack.len > 0) {
    ce_pair top = ((ce_pair *)stack.data)[--stack.len];
    const ce_bvh_node *na = &NA[top.a], *nb = &NB[top.b];
    if (use_pressure && (na->pmax < nb->pmin || nb->pmax < na->pmin)) continue;
    const placed_box *pb = place(bvh_b, top.b, X_AB, cache, done);
    if (use_slab) {
      /* Any point with p_A = p_B inside both nodes lies in the slab
       * |(gA - gB) . x + (cA - cB)| <= eA + eB and in both boxes: shrink
       * both boxes to the slab, then test the shrunken boxes. */
      const double *fa = bvh_a->field[top.a];
      ce_vec3 w = ce_sub(ce_v3(fa[0], fa[1], fa[2]), pb->g);
      double c0 = fa[3] - pb->off, e = fa[4] + bvh_b->field[top.b][4];
      ce_vec3 ua[3] = {col(&na->axes, 0), col(&na->axes, 1), col(&na->axes, 2)};
      ce_vec3 ca = na->center, ha = na->half, cb = pb->c, hb = nb->half;
      if (!shrink_to_slab(w, c0, e, &ca, ua, &ha)) continue;
      if (!shrink_to_slab(w, c0, e, &cb, pb->u, &hb)) continue;
      placed_box sb = *pb;
      sb.c = cb;
      if (!obb_overlap(ca, &na->axes, ha, &sb, hb)) continue;
    } else if (!obb_overlap(na->center, &na->axes, na->half, pb, nb->half)) {
      continue;
    }
    int leaf_a = na->left < 0, leaf_b = nb->left < 0;
    if (leaf_a && leaf_b) {
      if (ce_buf_reserve(arena, out, (int64_t)na->count * nb->count) != CE_OK) return CE_ENOMEM;
      ce_pair *o = (ce_pair *)out->data + out->len;
      for (int32_t i = 0; i < na->count; i++)
        for (int32_t j = 0; j < nb->count; j++) {
          o->a = bvh_a->order[na->first + i];
          o->b = bvh_b->order[nb->first + j];
          o++;
        }
      out->len += (int64_t)na->count * nb->count;
      continue;
    }
    /* Descend into the larger box (or the only internal node). */
    int split_a;
    if (leaf_b) split_a = 1;
    else if (leaf_a) split_a = 0;
    else {
      double va = na->half.x * na->half.y * na->half.z, vb = nb->half.x * nb->half.y * nb->half.z;
      split_a = va >= vb;
    }
    if (push_children(arena, &stack, top, split_a, split_a ? na->left : nb->left,
                      split_a ? na->right : nb->right) != CE_OK)
      return CE_ENOMEM;
  }
  return CE_OK;
}

/* Two cylinders (lanes), centres and axes in A's frame. */
typedef struct cyl2 {
  v2d cx, cy, cz, nx, ny, nz, h, rho, r;
} cyl2;

/* B's disk entry with its centres and axes placed in A's frame. */
typedef struct placed_disk {
  v2d cx, cy, cz, nx, ny, nz;
  v2d wx, wy, wz, wnx, wny, wnz; /* the same, lanes swapped */
} placed_disk;

/* Same operations as ce_pose_apply / ce_mat3_mul_vec, lane by lane. */
static void place_disk(const ce_bvh_disk *e, const ce_pose *X, placed_disk *p) {
  const double(*R)[3] = X->R.m;
  v2d x = v2_load(e->cx), y = v2_load(e->cy), z = v2_load(e->cz);
  p->cx = R[0][0] * x + R[0][1] * y + R[0][2] * z + X->p.x;
  p->cy = R[1][0] * x + R[1][1] * y + R[1][2] * z + X->p.y;
  p->cz = R[2][0] * x + R[2][1] * y + R[2][2] * z + X->p.z;
  x = v2_load(e->nx);
  y = v2_load(e->ny);
  z = v2_load(e->nz);
  p->nx = R[0][0] * x + R[0][1] * y + R[0][2] * z;
  p->ny = R[1][0] * x + R[1][1] * y + R[1][2] * z;
  p->nz = R[2][0] * x + R[2][1] * y + R[2][2] * z;
  p->wx = v2_swap(p->cx);
  p->wy = v2_swap(p->cy);
  p->wz = v2_swap(p->cz);
  p->wnx = v2_swap(p->nx);
  p->wny = v2_swap(p->ny);
  p->wnz = v2_swap(p->nz);
}

/* A's entry e as lanes (already in A's frame). */
static inline cyl2 lanes_a(const ce_bvh_disk *e) {
  return (cyl2){v2_load(e->cx), v2_load(e->cy), v2_load(e->cz), v2_load(e->nx), v2_load(e->ny),
                v2_load(e->nz), v2_load(e->h), v2_load(e->rho), v2_load(e->r)};
}

/* B's entry e as lanes, with its placement p. */
static inline cyl2 lanes_b(const ce_bvh_disk *e, const placed_disk *p) {
  return (cyl2){p->cx, p->cy, p->cz, p->nx, p->ny, p->nz, v2_load(e->h), v2_load(e->rho), v2_load(e->r)};
}

/* B's entry e as lanes swapped (lane 0 the right child). */
static inline cyl2 lanes_b_swapped(const ce_bvh_disk *e, const placed_disk *p) {
  return (cyl2){p->wx, p->wy, p->wz, p->wnx, p->wny, p->wnz, v2_swap(v2_load(e->h)), v2_swap(v2_load(e->rho)),
                v2_swap(v2_load(e->r))};
}

/* Lane k of both entries as both lanes. */
static inline cyl2 lanes_splat(const cyl2 *c, int k) {
  return (cyl2){v2_splat(c->cx[k]), v2_splat(c->cy[k]), v2_splat(c->cz[k]), v2_splat(c->nx[k]),
                v2_splat(c->ny[k]), v2_splat(c->nz[k]), v2_splat(c->h[k]), v2_splat(c->rho[k]),
                v2_splat(c->r[k])};
}

/* Bit k set unless lane k of the cylinders a and b is found apart.
 * Necessary for two cylinders to meet: their spheres meet, and each one's
 * slab |n . (x - c)| <= h meets the other cylinder, whose extent along a
 * unit u is h' |u . n'| + rho' sqrt(1 - (u . n')^2). The sine gets 1e-15
 * inside the root: 1 - cos^2 rounds by ~2e-16. Symmetric in a and b; a NaN
 * never counts as apart. */
static inline int disks_meet(const cyl2 *a, const cyl2 *b, double tol) {
  v2d dx = b->cx - a->cx, dy = b->cy - a->cy, dz = b->cz - a->cz;
  v2d rr = a->r + b->r + tol;
  v2d apart = v2_gt(dx * dx + dy * dy + dz * dz, rr * rr);
  v2d cs = v2_abs(a->nx * b->nx + a->ny * b->ny + a->nz * b->nz);
  v2d sn = v2_sqrt(v2_pos(1 - cs * cs) + 1e-15);
  apart = v2_or(apart, v2_gt(v2_abs(a->nx * dx + a->ny * dy + a->nz * dz), a->h + b->h * cs + b->rho * sn + tol));
  apart = v2_or(apart, v2_gt(v2_abs(b->nx * dx + b->ny * dy + b->nz * dz), b->h + a->h * cs + a->rho * sn + tol));
  return v2_clear_bits(apart);
}

/* Two of B's placed triangles as lanes: vertices and planes. */
typedef struct tri2 {
  v2d x[3], y[3], z[3];
  v2d nx, ny, nz, d;
  v2d cx, cy, cz, r;
} tri2;

static inline void tri_lanes(tri2 *l, const ce_bvh_tri *t0, const ce_bvh_tri *t1) {
  for (int k = 0; k < 3; k++) {
    l->x[k] = (v2d){t0->v[k].x, t1->v[k].x};
    l->y[k] = (v2d){t0->v[k].y, t1->v[k].y};
    l->z[k] = (v2d){t0->v[k].z, t1->v[k].z};
  }
  l->nx = (v2d){t0->n.x, t1->n.x};
  l->ny = (v2d){t0->n.y, t1->n.y};
  l->nz = (v2d){t0->n.z, t1->n.z};
  l->d = (v2d){t0->d, t1->d};
  l->cx = (v2d){t0->c.x, t1->c.x};
  l->cy = (v2d){t0->c.y, t1->c.y};
  l->cz = (v2d){t0->c.z, t1->c.z};
  l->r = (v2d){t0->r, t1->r};
}

/* Lanes where the signed distances s[0..2] all exceed tol or all are
 * below -tol: a triangle strictly on one side of a plane. */
static inline v2d v2_one_side(const v2d s[3], v2d tol) {
  v2d above = v2_and(v2_and(v2_gt(s[0], tol), v2_gt(s[1], tol)), v2_gt(s[2], tol));
  v2d below = v2_and(v2_and(v2_gt(-tol, s[0]), v2_gt(-tol, s[1])), v2_gt(-tol, s[2]));
  return v2_or(above, below);
}

/* Traversal over node pairs that passed the cylinder tests: a popped pair
 * tests its child pairs (both nodes split when both are internal, else the
 * internal one) and pushes the ones that pass, in the depth-first order of
 * ce_bvh_collide's traversal; leaf pairs test their triangles. */
ce_errno ce_bvh_collide_surfaces(const ce_bvh *a, const ce_bvh *b, const ce_pose *X_AB, ce_arena *arena,
                                 ce_buf *out) {
  if (a->nnodes == 0 || b->nnodes == 0) return CE_OK;
  if (!a->disk || !b->disk) return ce_bvh_collide(a, b, X_AB, 0, arena, out);
  const ce_bvh_disk *DA = a->disk, *DB = b->disk;
  const ce_bvh_tri *TA = a->tri;
  const int32_t nb = (b->nnodes + 1) / 2; /* B's disk entries */
  placed_disk *pd = ce_arena_alloc(arena, (size_t)nb * sizeof *pd);
  ce_bvh_tri *pt = ce_arena_alloc(arena, (size_t)b->nelem * sizeof *pt);
  unsigned char *done = ce_arena_calloc(arena, (size_t)nb + (size_t)b->nelem, 1);
  if (!pd || !pt || !done) return CE_ENOMEM;
  unsigned char *tdone = done + nb;
  place_disk(&DB[0], X_AB, &pd[0]);
  done[0] = 1;
  /* Rounding in placing B and in the dot products is ~1e-16 of the
   * coordinates; the margin is far above that and far below any element
   * (sized by the root boxes: centres and the radii around their corners). */
  const ce_bvh_node *ra = &a->nodes[0], *rb = &b->nodes[0];
  const double tol = 1e-12 * (ce_norm(ra->center) + ce_norm(ra->half) * (1 + 1e-12) +
                              ce_norm(ce_pose_apply(X_AB, rb->center)) + ce_norm(rb->half) * (1 + 1e-12));
  {
    cyl2 ca = lanes_a(&DA[0]), cb = lanes_b(&DB[0], &pd[0]);
    if (!(disks_meet(&ca, &cb, tol) & 1)) return CE_OK;
  }
  ce_buf stack;
  ce_buf_init(&stack, sizeof(ce_pair));
  if (ce_buf_reserve(arena, &stack, 64) != CE_OK) return CE_ENOMEM;
  ((ce_pair *)stack.data)[0] = (ce_pair){DA[0].ref[0], DB[0].ref[0]};
  stack.len = 1;
  while (stack.len > 0) {
    ce_pair top = ((ce_pair *)stack.data)[--stack.len];
    if (top.a < 0 && top.b < 0) {
      int32_t la = ~top.a, lb = ~top.b;
      const int32_t fa = DA[la >> 1].first[la & 1], na = DA[la >> 1].count[la & 1];
      const int32_t fb = DB[lb >> 1].first[lb & 1], nbt = DB[lb >> 1].count[lb & 1];
      if (out->len + (int64_t)na * nbt > out->cap && ce_buf_reserve(arena, out, (int64_t)na * nbt) != CE_OK)
        return CE_ENOMEM;
      ce_pair *o = (ce_pair *)out->data + out->len;
      for (int32_t j = fb; j < fb + nbt; j++) {
        if (tdone[j]) continue;
        /* Same operations as a caller placing N's vertices in M's frame,
         * so planes agree with its up to the normalisation. */
        const ce_bvh_tri *t = &b->tri[j];
        ce_bvh_tri *u = &pt[j];
        for (int k = 0; k < 3; k++) u->v[k] = ce_pose_apply(X_AB, t->v[k]);
        ce_vec3 n = ce_cross(ce_sub(u->v[1], u->v[0]), ce_sub(u->v[2], u->v[0]));
        double len = ce_norm(n);
        u->n = len > 0 ? ce_scale(n, 1.0 / len) : ce_v3(0, 0, 0);
        u->d = ce_dot(u->n, u->v[0]);
        u->c = ce_pose_apply(X_AB, t->c);
        u->r = t->r;
        tdone[j] = 1;
      }
      /* A's triangle i against two of B's at once: their spheres (a
       * triangle lies in its sphere, so spheres apart by more than the
       * margin mean triangles apart), then Moller's test: plane sides (the
       * signed distances sb of B's vertices to A's plane, then sa of A's
       * to B's, as the scalar dot products would give them), then the
       * intervals for the pairs that straddle both ways. */
      tri2 L[(CE_BVH_TRI_LEAF + 1) / 2];
      for (int32_t c = 0; 2 * c < nbt; c++)
        tri_lanes(&L[c], &pt[fb + 2 * c], &pt[fb + (2 * c + 1 < nbt ? 2 * c + 1 : 2 * c)]);
      const v2d T = v2_splat(tol);
      for (int32_t i = fa; i < fa + na; i++) {
        const ce_bvh_tri *ta = &TA[i];
        for (int32_t c = 0; 2 * c < nbt; c++) {
          const tri2 *l = &L[c];
          v2d dx = l->cx - ta->c.x, dy = l->cy - ta->c.y, dz = l->cz - ta->c.z, rr = l->r + ta->r + tol;
          int keep = v2_clear_bits(v2_gt(dx * dx + dy * dy + dz * dz, rr * rr)) & (2 * c + 1 < nbt ? 3 : 1);
          if (!keep) continue;
          v2d sb[3], sa[3];
          for (int k = 0; k < 3; k++) sb[k] = ta->n.x * l->x[k] + ta->n.y * l->y[k] + ta->n.z * l->z[k] - ta->d;
          keep &= v2_clear_bits(v2_one_side(sb, T));
          if (!keep) continue;
          for (int k = 0; k < 3; k++) sa[k] = l->nx * ta->v[k].x + l->ny * ta->v[k].y + l->nz * ta->v[k].z - l->d;
          keep &= v2_clear_bits(v2_one_side(sa, T));
          for (int q = 0; q < 2; q++) {
            if (!(keep >> q & 1)) continue;
            int32_t j = fb + 2 * c + q;
            const ce_bvh_tri *tb = &pt[j];
            double da[3] = {sa[0][q], sa[1][q], sa[2][q]}, db[3] = {sb[0][q], sb[1][q], sb[2][q]};
            if (!ce_triangles_meet_planes(ta->v, ta->n, da, tb->v, tb->n, db, tol)) continue;
            o->a = a->order[i];
            o->b = b->order[j];
            o++;
          }
        }
      }
      out->len = o - (ce_pair *)out->data;
      continue;
    }
    if (stack.len + 4 > stack.cap && ce_buf_reserve(arena, &stack, 4) != CE_OK) return CE_ENOMEM;
    ce_pair *s = (ce_pair *)stack.data + stack.len;
    int64_t n = 0;
    /* Each candidate is written, and kept (n advanced) only when it
     * passes; the last pushed is popped first. */
    if (top.a >= 0 && top.b >= 0) {
      const ce_bvh_disk *eb = &DB[top.b];
      placed_disk *p = &pd[top.b];
      if (!done[top.b]) {
        place_disk(eb, X_AB, p);
        done[top.b] = 1;
      }
      /* Lanes (a0, b0), (a1, b1) straight, (a0, b1), (a1, b0) with B's
       * lanes swapped. */
      cyl2 ca = lanes_a(&DA[top.a]), cb = lanes_b(eb, p), cw = lanes_b_swapped(eb, p);
      int m = disks_meet(&ca, &cb, tol), w = disks_meet(&ca, &cw, tol);
      int32_t ra0 = DA[top.a].ref[0], ra1 = DA[top.a].ref[1];
      int32_t rb0 = DB[top.b].ref[0], rb1 = DB[top.b].ref[1];
      s[n] = (ce_pair){ra1, rb1};
      n += m >> 1;
      s[n] = (ce_pair){ra1, rb0};
      n += w >> 1;
      s[n] = (ce_pair){ra0, rb1};
      n += w & 1;
      s[n] = (ce_pair){ra0, rb0};
      n += m & 1;
    } else if (top.a >= 0) {
      /* B is a leaf: split A. Its entry was placed when it was pushed. */
      int32_t lb = ~top.b;
      cyl2 ca = lanes_a(&DA[top.a]), pb = lanes_b(&DB[lb >> 1], &pd[lb >> 1]), cb = lanes_splat(&pb, lb & 1);
      int m = disks_meet(&ca, &cb, tol);
      s[n] = (ce_pair){DA[top.a].ref[1], top.b};
      n += m >> 1;
      s[n] = (ce_pair){DA[top.a].ref[0], top.b};
      n += m & 1;
    } else {
      /* A is a leaf: split B. */
      int32_t la = ~top.a;
      const ce_bvh_disk *eb = &DB[top.b];
      placed_disk *p = &pd[top.b];
      if (!done[top.b]) {
        place_disk(eb, X_AB, p);
        done[top.b] = 1;
      }
      cyl2 pa = lanes_a(&DA[la >> 1]), ca = lanes_splat(&pa, la & 1), cb = lanes_b(eb, p);
      int m = disks_meet(&ca, &cb, tol);
      s[n] = (ce_pair){top.a, DB[top.b].ref[1]};
      n += m >> 1;
      s[n] = (ce_pair){top.a, DB[top.b].ref[0]};
      n += m & 1;
    }
    stack.len += n;
  }
  return CE_OK;
}

/* The elements of the leaves reached by descending from the root through
 * the nodes `meets` accepts, appended to out in traversal order (left
 * before right). Inlined into each caller, so the test is a direct call. */
static inline __attribute__((always_inline)) ce_errno bvh_select(const ce_bvh *bvh,
                                                                 int (*meets)(const ce_bvh_node *, const void *),
                                                                 const void *ctx, ce_arena *arena, ce_buf *out) {
  if (bvh->nnodes == 0) return CE_OK;
  ce_buf stack;
  ce_buf_init(&stack, sizeof(int32_t));
  if (ce_buf_reserve(arena, &stack, 64) != CE_OK) return CE_ENOMEM;
  ((int32_t *)stack.data)[0] = 0;
  stack.len = 1;
  while (stack.len > 0) {
    const ce_bvh_node *nd = &bvh->nodes[((const int32_t *)stack.data)[--stack.len]];
    if (!meets(nd, ctx)) continue;
    if (nd->left < 0) {
      if (ce_buf_reserve(arena, out, nd->count) != CE_OK) return CE_ENOMEM;
      memcpy((int32_t *)out->data + out->len, bvh->order + nd->first, (size_t)nd->count * sizeof(int32_t));
      out->len += nd->count;
      continue;
    }
    if (ce_buf_reserve(arena, &stack, 2) != CE_OK) return CE_ENOMEM;
    int32_t *st = (int32_t *)stack.data + stack.len;
    st[0] = nd->right; /* the left child is popped first */
    st[1] = nd->left;
    stack.len += 2;
  }
  return CE_OK;
}

typedef struct points_ctx {
  const ce_vec3 *x;
  int nx;
  double tol;
} points_ctx;

/* The points' extent along each of the box's axes meets the (widened)
 * box. */
static int box_meets_points(const ce_bvh_node *nd, const void *ctx) {
  const points_ctx *c = ctx;
  for (int j = 0; j < 3; j++) {
    const ce_vec3 u = col(&nd->axes, j);
    const double h = ce_v3_get(nd->half, j) + c->tol;
    double lo = INFINITY, hi = -INFINITY;
    for (int k = 0; k < c->nx; k++) {
      double d = ce_dot(u, ce_sub(c->x[k], nd->center));
      lo = fmin(lo, d);
      hi = fmax(hi, d);
    }
    if (lo > h || hi < -h) return 0;
  }
  return 1;
}

ce_errno ce_bvh_near_points(const ce_bvh *bvh, const ce_vec3 *x, int nx, double tol, ce_arena *arena,
                            ce_buf *out) {
  if (nx <= 0) return CE_OK;
  const points_ctx c = {x, nx, tol};
  return bvh_select(bvh, box_meets_points, &c, arena, out);
}

typedef struct plane_ctx {
  ce_vec3 n;
  double d;
  int plane_only;
} plane_ctx;

static int box_meets_plane(const ce_bvh_node *nd, const void *ctx) {
  const plane_ctx *c = ctx;
  double s = ce_dot(c->n, nd->center) - c->d;
  double r = nd->half.x * fabs(ce_dot(c->n, col(&nd->axes, 0))) + nd->half.y * fabs(ce_dot(c->n, col(&nd->axes, 1))) +
             nd->half.z * fabs(ce_dot(c->n, col(&nd->axes, 2)));
  r *= 1 + 1e-12;
  if (s - r > 0) return 0;                  /* entirely above the plane */
  if (c->plane_only && s + r < 0) return 0; /* entirely below */
  return 1;
}

ce_errno ce_bvh_collide_plane(const ce_bvh *bvh, ce_vec3 n, double d, int plane_only, ce_arena *arena,
                              ce_buf *out) {
  const plane_ctx c = {n, d, plane_only};
  return bvh_select(bvh, box_meets_plane, &c, arena, out);
}
