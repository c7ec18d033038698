/* ce_bvh_build.c — per-geometry bounding volume hierarchies: their build.
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
 * The traversals that use them are in ce_bvh_query.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_bvh_lanes.h"
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

