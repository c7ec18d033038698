/* ce_intersect_cc.c — compliant–compliant contact: the equal-pressure
 * surface of two tetrahedral pressure fields (Elandt et al. 2019, Appendix
 * X-B; polygons as in Masterjohn et al. 2022).
 *
 * Inside one tet of M and one tet of N both pressures are linear, so the set
 * where they are equal is a plane:
 *     (gM - gN) . x + (cM - cN) = 0        (everything in M's frame).
 * The contact polygon of the pair is that plane sliced by tet M (a triangle
 * or quadrilateral) and clipped by tet N's four face half-spaces. Its unit
 * normal n = (gM - gN) / |gM - gN| points out of N into M: crossing the plane
 * along +n, M's pressure grows relative to N's, i.e. we move deeper into M.
 *
 * Gradient-direction rule: a pair's polygon is kept only when the normal
 * agrees with both pressure gradients to within 5*pi/8 —
 *     n . gM/|gM| > cos(5 pi/8)   and   -n . gN/|gN| > cos(5 pi/8).
 * Pressure increases into each body, so on a genuine contact surface gM
 * points along +n and gN along -n. Pairs that violate this (typically deep
 * tets whose fields happen to be equal, or skewed tets near the rim) would
 * produce normals pointing the wrong way; they are dropped and counted in
 * faces_dropped. A zero gradient imposes no constraint.
 *
 * Candidates come from the BVHs with pressure-range pruning; per pair the
 * kernel does the cheap rejections first (pressure ranges, the plane missing
 * tet M), then tests the slice against all four of N's face planes at once
 * (ce_tetmesh.fplane, placed in M's frame by the pair that needs them), and
 * uses only fixed-size stack arrays.
 *
 * Shared vertices: a polygon vertex is where the pair's plane meets a
 * feature of tet M (the tet, a face, an edge or a vertex: the faces of M it
 * lies on have it in common) and a feature of tet N. Neighbouring pairs
 * that hold the same two features compute the same point: the pressure
 * fields are continuous, so on a shared feature every tet holding it has
 * the same pressure, and the pairs' planes agree there. Such a vertex is
 * keyed by the two features in global indices (tet_feature) and made once
 * (ce_vcache), when the features' dimensions add up to at most 4 (so they
 * and the plane fix a point). Which faces a vertex lies on is decided with
 * the slice's tolerance; where neighbours decide differently (points
 * within the tolerance of a third face) the vertex is simply not shared.
 * The first pair to make a vertex gives its position and pressure; later
 * pairs differ from it only by rounding. */
#include <math.h>
#include <string.h>

#include "ce_arena.h"
#include "ce_bvh.h"
#include "ce_geometry.h"
#include "ce_intersect.h"
#include "ce_mesh.h"
#include "ce_surface.h"
#include "ce_walk.h"

#define CC_MAXV 16

/* Slices of a tet by a plane, indexed by the mask of vertices with f > 0:
 * the crossed edges in cyclic order (orientation is fixed afterwards). */
static const int8_t slice_n[16] = {0, 3, 3, 4, 3, 4, 4, 3, 3, 4, 4, 3, 4, 3, 3, 0};
static const int8_t slice_e[16][4][2] = {
    {{0, 0}, {0, 0}, {0, 0}, {0, 0}},
    {{0, 1}, {0, 2}, {0, 3}, {0, 0}},
    {{1, 0}, {1, 2}, {1, 3}, {0, 0}},
    {{0, 2}, {0, 3}, {1, 3}, {1, 2}},
    {{2, 0}, {2, 1}, {2, 3}, {0, 0}},
    {{0, 1}, {0, 3}, {2, 3}, {2, 1}},
    {{1, 0}, {1, 3}, {2, 3}, {2, 0}},
    {{3, 0}, {3, 1}, {3, 2}, {0, 0}},
    {{3, 0}, {3, 1}, {3, 2}, {0, 0}},
    {{0, 1}, {0, 2}, {3, 2}, {3, 1}},
    {{1, 0}, {1, 2}, {3, 2}, {3, 0}},
    {{2, 0}, {2, 1}, {2, 3}, {0, 0}},
    {{2, 0}, {2, 1}, {3, 1}, {3, 0}},
    {{1, 0}, {1, 2}, {1, 3}, {0, 0}},
    {{0, 1}, {0, 2}, {0, 3}, {0, 0}},
    {{0, 0}, {0, 0}, {0, 0}, {0, 0}},
};

/* The two faces of the tet holding each slice vertex's edge (a, b): bit k
 * = the face opposite vertex k, so faces_with(a) & faces_with(b). */
static const uint8_t slice_faces[16][4] = {
    {0, 0, 0, 0},       {0xC, 0xA, 0x6, 0}, {0xC, 0x9, 0x5, 0}, {0xA, 0x6, 0x5, 0x9},
    {0xA, 0x9, 0x3, 0}, {0xC, 0x6, 0x3, 0x9}, {0xC, 0x5, 0x3, 0xA}, {0x6, 0x5, 0x3, 0},
    {0x6, 0x5, 0x3, 0}, {0xC, 0xA, 0x3, 0x5}, {0xC, 0x9, 0x3, 0x6}, {0xA, 0x9, 0x3, 0},
    {0xA, 0x9, 0x5, 0x6}, {0xC, 0x9, 0x5, 0},   {0xC, 0xA, 0x6, 0},   {0, 0, 0, 0},
};

/* Four doubles, one per tet face: GCC/Clang vector extension, element-wise
 * IEEE arithmetic (SSE2 pairs on baseline x86-64), so results do not depend
 * on the machine's vector width. */
typedef double v4d __attribute__((vector_size(32), aligned(16)));

/* (macros and pointers: passing 32-byte vectors by value would make the
 * ABI depend on -mavx) */
#define v4_splat(x) ((v4d){(x), (x), (x), (x)})

/* Bit k set where lane k of *v is above t, or within [-t, t]. */
#if defined(__SSE2__)
#include <emmintrin.h>
static inline int v4_gt(const v4d *v, double t) {
  const __m128d *h = (const __m128d *)v, T = _mm_set1_pd(t);
  return _mm_movemask_pd(_mm_cmpgt_pd(h[0], T)) | _mm_movemask_pd(_mm_cmpgt_pd(h[1], T)) << 2;
}
static inline int v4_near(const v4d *v, double t) {
  const __m128d *h = (const __m128d *)v, T = _mm_set1_pd(t), S = _mm_set1_pd(-0.0);
  return _mm_movemask_pd(_mm_cmple_pd(_mm_andnot_pd(S, h[0]), T)) |
         _mm_movemask_pd(_mm_cmple_pd(_mm_andnot_pd(S, h[1]), T)) << 2;
}
#else
static inline int v4_gt(const v4d *v, double t) {
  const double *d = (const double *)v;
  return (d[0] > t) | (d[1] > t) << 1 | (d[2] > t) << 2 | (d[3] > t) << 3;
}
static inline int v4_near(const v4d *v, double t) {
  const double *d = (const double *)v;
  return (fabs(d[0]) <= t) | (fabs(d[1]) <= t) << 1 | (fabs(d[2]) <= t) << 2 | (fabs(d[3]) <= t) << 3;
}
#endif

/* Tet j of N's face planes in M's frame (from ce_tetmesh.fplane), lane k
 * = face k: the outward unit normals and offsets (inside face k when
 * nx.x + ny.y + nz.z - d <= 0). */
typedef struct ntet {
  v4d nx, ny, nz, d;
} ntet;

/* One query's constants. */
typedef struct cc_query {
  const ce_tetmesh *TM, *TN;
  ce_mat3 R;
  ce_vec3 t;
  double tol;      /* touching tolerance (length) */
  double merge2;   /* squared distance below which vertices merge */
  double min_area; /* polygons below this area are dropped (slivers) */
  ce_builder *b;
  ce_counters *c;
  int identical;   /* set when a pair's two fields coincide (see below) */
  ce_vcache verts;    /* shared polygon vertices (see the top) */
} cc_query;

/* The feature of tet t (global vertex ids tv) that the faces in `bits`
 * (bit k = the face opposite vertex k) have in common, named by two
 * indices (hi, lo) packed in *w: the tet (t, -1); a vertex (v, -2); a face
 * (the two tets holding it, lower first, so both name it alike; a face
 * without a neighbour, or any face when adj is NULL, is (t, -3 - k)); an
 * edge (~a, b) for its vertices a < b. Features of different dimensions
 * never share a name (hi < 0 only for edges; lo < 0 for the tet, a vertex
 * and a face without a neighbour, distinct values). Returns the feature's
 * dimension, or -1 when the faces have nothing in common. Tables by
 * `bits`: the dimension, and the local index of the one face (one face),
 * of the edge's two vertices (two faces: the vertices opposite neither) or
 * of the vertex (three faces). */
static inline int tet_feature(const int32_t tv[4], const int32_t (*adj)[4], int32_t t, int bits, uint64_t *w) {
  static const int8_t dim[16] = {3, 2, 2, 1, 2, 1, 1, 0, 2, 1, 1, 0, 1, 0, 0, -1};
  static const int8_t ia[16] = {0, 0, 1, 2, 2, 1, 0, 3, 3, 1, 0, 2, 0, 1, 0, 0};
  static const int8_t ib[16] = {0, 0, 0, 3, 0, 3, 3, 0, 0, 2, 2, 0, 1, 0, 0, 0};
  bits &= 0xF;
  const int d = dim[bits];
  int32_t hi = 0, lo = 0;
  switch (d) {
    case 3:
      hi = t;
      lo = -1;
      break;
    case 2: {
      const int k = ia[bits];
      const int32_t o = adj ? adj[t][k] : -1;
      hi = o >= 0 && o < t ? o : t;
      lo = o < 0 ? -3 - k : (o < t ? t : o);
      break;
    }
    case 1: {
      const int32_t a = tv[ia[bits]], b = tv[ib[bits]];
      hi = ~(a < b ? a : b);
      lo = a < b ? b : a;
      break;
    }
    case 0:
      hi = tv[ia[bits]];
      lo = -2;
      break;
    default:
      break;
  }
  *w = (uint64_t)(uint32_t)hi << 32 | (uint32_t)lo;
  return d;
}

/* Builder vertex ids for the polygon x[0..m) of pair (i, j) with pressures
 * p and face bits (M's faces in bits 0-3, N's in 4-7): shared through
 * q->verts where the two features fix a point, fresh otherwise, and fresh
 * too where a shared id would repeat within the polygon (its slot already
 * carries this polygon's mark: a vertex id lives in one slot only). */
static ce_errno polygon_ids(cc_query *q, int32_t i, int32_t j, const ce_vec3 *x, const double *p,
                            const int *bits, int m, int32_t *ids) {
  ce_vcache *vc = &q->verts;
  if (ce_vcache_reserve(vc, m) != CE_OK) return CE_ENOMEM;
  const int32_t *tm = q->TM->tet[i], *tn = q->TN->tet[j];
  const int32_t(*adjM)[4] = (const int32_t(*)[4])q->TM->adj, (*adjN)[4] = (const int32_t(*)[4])q->TN->adj;
  const uint32_t mark = ++vc->mark;
  for (int v = 0; v < m; v++) {
    ce_vkey key;
    const int dm = tet_feature(tm, adjM, i, bits[v] & 0xF, &key.w[0]);
    const int dn = tet_feature(tn, adjN, j, bits[v] >> 4 & 0xF, &key.w[1]);
    ce_vslot *sl = NULL;
    if (dm >= 0 && dn >= 0 && dm + dn <= 4) {
      key.w[2] = 0;
      sl = ce_vcache_find(vc, key);
      if (sl->id >= 0) {
        if (sl->mark != mark) {
          sl->mark = mark;
          ids[v] = sl->id;
          continue;
        }
        sl = NULL;
      }
    }
    if ((ids[v] = ce_builder_add_vertex(q->b, x[v], p[v])) < 0) return CE_ENOMEM;
    if (sl) ce_vcache_set(vc, sl, key, ids[v]);
  }
  return CE_OK;
}

/* Tet j of N's face planes placed in M's frame. Placing them per pair is
 * cheaper than looking a tet up in a cache of placed ones: the walk meets
 * most tets of N in one or two pairs only. */
static void ntet_place(const cc_query *q, int32_t j, ntet *t) {
  v4d in[4];
  memcpy(in, q->TN->fplane[j], sizeof in);
  const ce_mat3 *R = &q->R;
  t->nx = v4_splat(R->m[0][0]) * in[0] + v4_splat(R->m[0][1]) * in[1] + v4_splat(R->m[0][2]) * in[2];
  t->ny = v4_splat(R->m[1][0]) * in[0] + v4_splat(R->m[1][1]) * in[1] + v4_splat(R->m[1][2]) * in[2];
  t->nz = v4_splat(R->m[2][0]) * in[0] + v4_splat(R->m[2][1]) * in[1] + v4_splat(R->m[2][2]) * in[2];
  /* a point x_N maps to R x_N + t, so n'.x' = n.x_N + n'.t */
  t->d = in[3] + t->nx * v4_splat(q->t.x) + t->ny * v4_splat(q->t.y) + t->nz * v4_splat(q->t.z);
}

/* What one pair's intersection with its equal-pressure plane is, for the
 * surface walk: per edge of the intersection (a segment counts as one edge)
 * the faces of tet i (bits 0-3) and tet j (bits 4-7) that hold the edge;
 * nonempty when there is at least a segment, proper when it is a polygon
 * of positive area (kept or dropped by the gradient rule). */
typedef struct pair_hit {
  int nonempty, proper, nedge;
  int ebits[CC_MAXV];
} pair_hit;

/* The faces of a tet that contain vertex a (bit k = face opposite k). */
static inline int faces_with(int a) { return 0xF & ~(1 << a); }

/* A vertex of the polygon being clipped: position, signed distances to
 * tet j's four face planes (affine in position, so a new vertex on an edge
 * interpolates them), and the faces of tet i holding it. */
typedef struct cvert {
  v4d s;
  ce_vec3 x;
  int bits;
} cvert;

/* Two linear fields g . x + c of a pair of tets, in one frame: parallel
 * when their gradients ga, gb differ by rounding only (gg = |ga - gb|^2),
 * and then equal everywhere when also their offsets do (ta, tb: the
 * fields' largest values in the tets, for the scale). */
static inline int fields_parallel(ce_vec3 ga, ce_vec3 gb, double gg) {
  return !(gg > 1e-24 * (ce_norm2(ga) + ce_norm2(gb)));
}
static inline int offsets_equal(double ca, double cb, double ta, double tb) {
  return fabs(ca - cb) <= 1e-9 * (fabs(ca) + fabs(cb) + ta + tb);
}

/* Whether tet i of M and tet j of N have the same pressure field. */
static int pair_identical(const cc_query *q, int32_t i, int32_t j) {
  const ce_vec3 gM = q->TM->grad[i], gN = ce_mat3_mul_vec(&q->R, q->TN->grad[j]);
  const double cN = q->TN->offset[j] - ce_dot(gN, q->t);
  return fields_parallel(gM, gN, ce_norm2(ce_sub(gM, gN))) &&
         offsets_equal(q->TM->offset[i], cN, q->TM->prange[i][1], q->TN->prange[j][1]);
}

/* The half-open rule for a polygon of pair (i, j) lying in the faces
 * `common` (M's in bits 0-3, N's in 4-7; see eval_pair): f holds the
 * plane function g . x + c0 at tet i's vertices. A face without a
 * neighbour, or any face when the mesh has no adjacency, keeps it.
 *
 * Where the neighbour across the face pairs with the other tet into
 * identical fields (flush sides: both pressures are the distance to one
 * common face, so their equal set is a volume that makes no polygon), the
 * polygon has no twin, and whether the surface runs there is settled by a
 * fixed symbolic perturbation: M's pressure lowered by an infinitesimal
 * constant, p_M - eps. An identical pair then holds no surface, and a
 * polygon in a shared face moves off it to the side where
 * f = p_M - p_N > 0, so it belongs to the tet whose fourth vertex has
 * f > 0, of M or of N. For M's faces this is the rule for every face; for
 * N's faces with a twin, the tet on the -n side keeps it (either side
 * would do there; the side is the established one). */
static int half_open_keeps(const cc_query *q, int32_t i, int32_t j, int common, const double f[4], ce_vec3 g,
                           double c0) {
  const ce_tetmesh *TM = q->TM, *TN = q->TN;
  const int bm = common & 0xF, bn = common >> 4 & 0xF;
  if (bm && TM->adj && !(bm & (bm - 1))) {
    const int k = __builtin_ctz((unsigned)bm);
    if (TM->adj[i][k] >= 0 && !(f[k] > 0)) return 0;
  }
  if (bn && TN->adj && !(bn & (bn - 1))) {
    const int l = __builtin_ctz((unsigned)bn);
    const int32_t o = TN->adj[j][l];
    if (o >= 0) {
      const ce_vec3 x = ce_add(ce_mat3_mul_vec(&q->R, TN->v[TN->tet[j][l]]), q->t);
      const double fx = ce_dot(g, x) + c0;
      if (pair_identical(q, i, o) ? !(fx > 0) : !(fx < 0)) return 0;
    }
  }
  return 1;
}

/* Clip the polygon a[0..*n) by the faces k of tet j with bit k set in
 * out_any (inside when s_k <= tol), alternating between the buffers a and
 * b. The cyclic order is kept; orientation is fixed on the result. A
 * vertex made on face k gets s_k = 0 exactly. Returns the buffer holding
 * the result, with *n its vertex count (0: nothing is left). */
static inline __attribute__((always_inline)) const cvert *clip_by_tet(cvert *a, cvert *b, int *n_io, int out_any,
                                                                      double tol) {
  cvert *cur = a, *nxt = b;
  int n = *n_io;
  for (int k = 0; k < 4; k++) {
    if (!(out_any >> k & 1)) continue;
    int m = 0, nout = 0;
    for (int v = 0; v < n; v++) nout += cur[v].s[k] > tol;
    if (nout == n) {
      *n_io = 0;
      return cur;
    }
    if (nout == 0) continue;
    for (int v = 0; v < n; v++) {
      const cvert *cv = &cur[v], *cw = &cur[v + 1 == n ? 0 : v + 1];
      int in_v = cv->s[k] <= tol, in_w = cw->s[k] <= tol;
      if (in_v) nxt[m++] = *cv;
      if (in_v != in_w) {
        double t = cv->s[k] / (cv->s[k] - cw->s[k]);
        t = ce_clamp01(t);
        cvert *o = &nxt[m++];
        o->x = ce_axpy(cv->x, t, ce_sub(cw->x, cv->x));
        o->s = cv->s + v4_splat(t) * (cw->s - cv->s);
        o->s[k] = 0;
        o->bits = cv->bits & cw->bits;
      }
    }
    n = m;
    cvert *tv = cur;
    cur = nxt;
    nxt = tv;
  }
  *n_io = n;
  return cur;
}

/* Evaluate the pair (tet i of M, tet j of N): add its polygon to the
 * builder when it has one and describe its intersection in *h. The slice
 * and the clip use a tolerance so that a plane through a vertex or along an
 * edge is seen consistently from every tet that shares it. */
static ce_errno eval_pair(cc_query *q, int32_t i, int32_t j, pair_hit *h) {
  const ce_tetmesh *TM = q->TM;
  h->nonempty = h->proper = 0;
  h->nedge = 0;
  if (TM->prange[i][1] < q->TN->prange[j][0] || q->TN->prange[j][1] < TM->prange[i][0]) return CE_OK;
  /* N's field p_N(x) = gN . x + cN in M's frame */
  const ce_vec3 gM = TM->grad[i], gN = ce_mat3_mul_vec(&q->R, q->TN->grad[j]);
  const double cM = TM->offset[i], cN = q->TN->offset[j] - ce_dot(gN, q->t);
  const ce_vec3 g = ce_sub(gM, gN);
  const double c0 = cM - cN;
  const double gg = ce_norm2(g);
  if (fields_parallel(gM, gN, gg)) {
    /* Parallel fields: no plane. Identical fields (equal everywhere in the
     * pair) make the equal-pressure set a volume, which the surface walk
     * cannot cross; it hands such a query to the all-candidates path. */
    if (offsets_equal(cM, cN, TM->prange[i][1], q->TN->prange[j][1])) q->identical = 1;
    return CE_OK;
  }
  const double gl = sqrt(gg), tol_f = q->tol * gl;
  const int32_t *tm = TM->tet[i];
  const ce_vec3 xm[4] = {TM->v[tm[0]], TM->v[tm[1]], TM->v[tm[2]], TM->v[tm[3]]};
  double f[4];
  for (int k = 0; k < 4; k++) f[k] = ce_dot(g, xm[k]) + c0;
  int mask = (f[0] > 0) | (f[1] > 0) << 1 | (f[2] > 0) << 2 | (f[3] > 0) << 3;
  const int near = (fabs(f[0]) <= tol_f) | (fabs(f[1]) <= tol_f) << 1 | (fabs(f[2]) <= tol_f) << 2 |
                   (fabs(f[3]) <= tol_f) << 3;
  /* A plane touching a vertex or edge of tet i is moved across it. */
  if (mask == 0 || mask == 15) {
    if (near == 0 || near == 15) return CE_OK;
    mask ^= near;
  }
  const double tol = q->tol;
  ntet ntj;
  ntet_place(q, j, &ntj);
  const ntet *nt = &ntj;
  int n = slice_n[mask];
  cvert A[CC_MAXV], B[CC_MAXV];
  int out_all = 15, out_any = 0;
  for (int v = 0; v < n; v++) {
    int a = slice_e[mask][v][0], bb = slice_e[mask][v][1];
    double t = f[a] / (f[a] - f[bb]);
    t = ce_clamp01(t);
    ce_vec3 x = ce_axpy(xm[a], t, ce_sub(xm[bb], xm[a]));
    A[v].x = x;
    A[v].s = nt->nx * v4_splat(x.x) + nt->ny * v4_splat(x.y) + nt->nz * v4_splat(x.z) - nt->d;
    int out = v4_gt(&A[v].s, tol);
    out_all &= out;
    out_any |= out;
    /* the two faces holding edge (a, b), and all three of a vertex on the
     * plane; where both ends are on it (the edge lies in the plane) the
     * point is anywhere on the edge, at an end only where t says so */
    A[v].bits = slice_faces[mask][v];
    if (near) {
      int na = near >> a & 1, nb = near >> bb & 1;
      if (na & nb) {
        na = t == 0;
        nb = t == 1;
      }
      A[v].bits |= (na ? faces_with(a) : 0) | (nb ? faces_with(bb) : 0);
    }
  }
  /* Outside one face of tet j entirely: no intersection. */
  if (out_all) return CE_OK;
  /* Clip by the faces of tet j that some vertex is outside of. */
  const cvert *cur = clip_by_tet(A, B, &n, out_any, tol);
  if (n == 0) return CE_OK;
  /* The output polygon: merge near-duplicate vertices, drop slivers; a
   * vertex within tolerance of a face of tet j lies on it. */
  ce_vec3 poly[CC_MAXV];
  int pbits[CC_MAXV];
  int m = 0;
  for (int v = 0; v < n; v++) {
    int bits = cur[v].bits | v4_near(&cur[v].s, tol) << 4;
    if (m > 0 && ce_norm2(ce_sub(cur[v].x, poly[m - 1])) <= q->merge2) {
      pbits[m - 1] |= bits;
      continue;
    }
    pbits[m] = bits;
    poly[m++] = cur[v].x;
  }
  while (m > 1 && ce_norm2(ce_sub(poly[m - 1], poly[0])) <= q->merge2) pbits[0] |= pbits[--m];
  /* The walk continues across a face only where a whole edge of the
   * intersection lies on it; a pair touching in a single point is no
   * bridge (the cells around a point are joined through segments). */
  if (m < 2) return CE_OK;
  h->nonempty = 1;
  h->nedge = m == 2 ? 1 : m;
  for (int v = 0; v < h->nedge; v++) h->ebits[v] = pbits[v] & pbits[v + 1 == m ? 0 : v + 1];
  if (m < 3) return CE_OK;
  ce_vec3 sa = ce_v3(0, 0, 0);
  for (int v = 1; v + 1 < m; v++) sa = ce_add(sa, ce_cross(ce_sub(poly[v], poly[0]), ce_sub(poly[v + 1], poly[0])));
  double area2 = ce_dot(sa, g); /* twice the area times |g|, signed by orientation */
  if (!(fabs(area2) > 2 * q->min_area * gl)) return CE_OK;
  h->proper = 1;
  /* A polygon lying in a face that tet i shares with a neighbour (the
   * plane runs through the face) is made by both tets' pairs. Half-open
   * rule: only the tet on the +n side (deeper into M: its fourth vertex,
   * opposite the face, has f > 0) keeps it; where the surface crosses the
   * face the neighbour's fourth vertex has f < 0, so the face counts once
   * and the force does not jump as a pose moves through this position.
   * Likewise a polygon in a shared face of tet j is kept by the tet on the
   * -n side (deeper into N), except beside a pair of identical fields,
   * which makes no twin (half_open_keeps). The walk goes on from both. */
  int common = pbits[0];
  for (int v = 1; v < m; v++) common &= pbits[v];
  if (common && !half_open_keeps(q, i, j, common, f, g, c0)) return CE_OK;
  ce_vec3 nrm = ce_scale(g, 1.0 / gl);
  /* n . g > cos(5 pi/8) |g| with the cosine negative: true for n . g >= 0
   * (g != 0), else compared squared (no square root for the usual case). */
  const double c2 = CE_GRADIENT_COS_LIMIT * CE_GRADIENT_COS_LIMIT;
  double dm = ce_dot(nrm, gM), dn = -ce_dot(nrm, gN);
  int ok_m = dm >= 0 || dm * dm < c2 * ce_norm2(gM);
  int ok_n = dn >= 0 || dn * dn < c2 * ce_norm2(gN);
  if (!ok_m || !ok_n) {
    q->c->faces_dropped++;
    return CE_OK;
  }
  if (area2 < 0) /* counter-clockwise about the normal */
    for (int lo = 0, hi = m - 1; lo < hi; lo++, hi--) {
      ce_vec3 tv = poly[lo];
      poly[lo] = poly[hi];
      poly[hi] = tv;
      int tb = pbits[lo];
      pbits[lo] = pbits[hi];
      pbits[hi] = tb;
    }
  double p[CC_MAXV];
  for (int v = 0; v < m; v++) p[v] = ce_dot(gM, poly[v]) + cM;
  int32_t ids[CC_MAXV];
  ce_errno e = polygon_ids(q, i, j, poly, p, pbits, m, ids);
  if (e == CE_OK) e = ce_builder_add_face(q->b, ids, m, nrm, gM, gN, i, j);
  if (e != CE_OK) return e;
  q->c->polygons++;
  return CE_OK;
}

/* Every candidate pair from the two hierarchies (pressure-pruned). */
static ce_errno run_all_candidates(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                                   cc_query *q) {
  ce_buf cand;
  ce_buf_init(&cand, sizeof(ce_pair));
  ce_errno e = ce_bvh_collide(&m->bvh, &n->bvh, X_MN, 1, q->b->arena, &cand);
  if (e != CE_OK) return e;
  q->c->candidate_pairs += cand.len;
  const ce_pair *pairs = cand.data;
  for (int64_t k = 0; k < cand.len; k++) {
    pair_hit h;
    if ((e = eval_pair(q, pairs[k].a, pairs[k].b, &h)) != CE_OK) return e;
  }
  return CE_OK;
}

/* ---- surface tracing ------------------------------------------------------
 * The equal-pressure set {p_M = p_N} is a level set of a continuous
 * function, so its pieces in neighbouring cells (tet of M) x (tet of N)
 * join across the faces of M or N. Its boundary lies where both pressures
 * are zero, i.e. on both boundaries, so every piece that reaches a boundary
 * is found by starting from the tet pairs whose boundary triangles meet
 * (ce_bvh_collide_surfaces) and walking across the faces each pair's
 * intersection touches (stepping diagonally where an edge lies on a face
 * of both tets, see the walk). A visited set
 * (open addressing on the pair key) keeps each pair to one evaluation; the
 * walk is first-in first-out from the seeds in hierarchy order, so the
 * output order is deterministic. A body of several pieces may have a piece
 * wholly inside the other body, with no boundary crossing: those pieces are
 * covered after the walk (cover_unseeded). Closed pieces of the surface
 * that reach no boundary inside one piece (a high-pressure core of one
 * field inside the other with no crossing) are found only through the
 * fallback below, which runs when the walk finds nothing. */

/* Bodies of several pieces (tet components). A piece whose boundary meets
 * no boundary of the other body gave no seed: it lies wholly inside the
 * other body or wholly outside it, and a piece inside holds a closed
 * surface the walk never reached. One of its vertices tells which (within
 * a tolerance: calling an outside piece inside only costs time). For each
 * piece inside, every candidate pair with a tet of it that the walk did not
 * visit is evaluated (the visited set keeps each pair to one evaluation).
 * Some piece of one body's boundary lies in the other wherever they
 * overlap, so testing the pieces of both bodies finds every overlap
 * between pieces of single boundaries; a piece with several boundary
 * surfaces (a hollow shell) is tested at one of them. */
static ce_errno cover_unseeded(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, cc_query *q,
                               ce_pairset *set, const ce_pair *fp, int64_t nfaces, int64_t *found) {
  const ce_tetmesh *TM = q->TM, *TN = q->TN;
  if (TM->ncomp <= 1 && TN->ncomp <= 1) return CE_OK; /* both seeded, or the caller falls back */
  ce_arena *a = q->b->arena;
  /* (a mesh whose components were not counted, ncomp 0, counts as one) */
  const int32_t ncm = TM->ncomp > 0 ? TM->ncomp : 1, ncn = TN->ncomp > 0 ? TN->ncomp : 1;
  unsigned char *seeded = ce_arena_calloc(a, (size_t)ncm + (size_t)ncn, 1);
  if (!seeded) return CE_ENOMEM;
  for (int64_t k = 0; k < nfaces; k++) {
    int32_t ta = m->bvh.bnd_tet[fp[k].a], tb = n->bvh.bnd_tet[fp[k].b];
    seeded[TM->comp ? TM->comp[ta] : 0] = 1;
    seeded[ncm + (TN->comp ? TN->comp[tb] : 0)] = 1;
  }
  const ce_pose X_NM = ce_pose_inverse(X_MN);
  ce_buf near, cand;
  ce_buf_init(&near, sizeof(int32_t));
  ce_buf_init(&cand, sizeof(ce_pair));
  int have_cand = 0;
  ce_errno e = CE_OK;
  for (int side = 0; side < 2; side++) {
    const ce_tetmesh *T = side ? TN : TM;
    const ce_geometry *other = side ? m : n;
    const double eps = 1e-9 * other->scale;
    for (int32_t c = 0; c < T->ncomp; c++) {
      if (seeded[(side ? ncm : 0) + c]) continue;
      ce_vec3 x = T->v[T->tet[T->comp_first[c]][0]];
      x = ce_pose_apply(side ? X_MN : &X_NM, x);
      int in = ce_tets_contain(other, x, eps, a, &near, &e);
      if (e != CE_OK) return e;
      if (!in) continue;
      if (!have_cand) {
        if ((e = ce_bvh_collide(&m->bvh, &n->bvh, X_MN, 1, a, &cand)) != CE_OK) return e;
        have_cand = 1;
      }
      const ce_pair *pr = cand.data;
      for (int64_t k = 0; k < cand.len; k++) {
        int32_t t = side ? pr[k].b : pr[k].a;
        if ((T->comp ? T->comp[t] : 0) != c) continue;
        int added;
        if ((e = ce_pairset_add(a, set, pr[k].a, pr[k].b, &added)) != CE_OK) return e;
        if (!added) continue;
        q->c->candidate_pairs++;
        pair_hit h;
        if ((e = eval_pair(q, pr[k].a, pr[k].b, &h)) != CE_OK) return e;
        if (q->identical) { /* the caller starts over on every candidate */
          *found = 0;
          return CE_OK;
        }
        if (h.nonempty) (*found)++;
      }
    }
  }
  return CE_OK;
}

/* Returns CE_OK with *found = number of pairs with a nonempty intersection. */
static ce_errno trace_surface(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, cc_query *q,
                              int64_t *found) {
  ce_arena *a = q->b->arena;
  *found = 0;
  ce_buf faces;
  ce_buf_init(&faces, sizeof(ce_pair));
  ce_errno e = ce_bvh_collide_surfaces(m->bvh.bnd, n->bvh.bnd, X_MN, a, &faces);
  if (e != CE_OK) return e;
  if (faces.len == 0) return CE_OK;
  ce_pairset set;
  /* Seeds (boundary triangle pairs that meet) at the finest sphere pair:
   * 234 for 1,336 pairs and 1,180 polygons where the meshes mirror each
   * other, 160 for 4,275 at a generic pose: the surface's area grows with
   * the square of its rim, so the pairs with the square of the seeds
   * (s^2 / 4 covers both poses), capped at 32 per seed. The builder's
   * arrays and the queue get that room up front (arena bumps, untouched
   * until used: growing them later copies every array); the visited set
   * and the shared vertices, which are cleared, get 8 per seed. All of
   * them grow if needed. Both guesses are capped (2^18 polygons, about 60
   * MB of builder arrays; 2^20 visited pairs, 16 MB zeroed) so that a guess
   * never exhausts a worker's arena that the actual surface would fit in. */
  const int64_t per = faces.len < ((int64_t)1 << 17) ? 8 * faces.len : ((int64_t)1 << 20);
  int64_t room = 64 + (faces.len < 128 ? faces.len * faces.len / 4 : 32 * faces.len);
  if (room > ((int64_t)1 << 18)) room = (int64_t)1 << 18;
  if ((e = ce_pairset_init(a, &set, per)) != CE_OK) return e;
  ce_buf queue;
  ce_buf_init(&queue, sizeof(ce_pair));
  if (ce_buf_reserve(a, &queue, 256 + 2 * room) != CE_OK) return CE_ENOMEM;
  if (ce_builder_reserve(q->b, 4 * room, room, 4 * room) != CE_OK) return CE_ENOMEM;
  if (ce_vcache_reserve(&q->verts, per) != CE_OK) return CE_ENOMEM;
  const ce_pair *fp = faces.data;
  const int32_t(*adjM)[4] = (const int32_t(*)[4])q->TM->adj, (*adjN)[4] = (const int32_t(*)[4])q->TN->adj;
  /* Seeds one at a time, each walk run to the end before the next seed:
   * seeds on an already traced piece are then skipped by the visited set. */
  int64_t head = 0, seed = 0;
  for (;;) {
    if (head == queue.len) {
      if (seed == faces.len) break;
      int32_t ta = m->bvh.bnd_tet[fp[seed].a], tb = n->bvh.bnd_tet[fp[seed].b];
      seed++;
      if (ce_pairset_has(&set, ta, tb)) continue;
      if ((e = ce_walk_push(a, &set, &queue, ta, tb)) != CE_OK) return e;
      continue;
    }
    ce_pair pr = ((const ce_pair *)queue.data)[head++];
    pair_hit h;
    if ((e = eval_pair(q, pr.a, pr.b, &h)) != CE_OK) return e;
    if (q->identical) {
      *found = 0;
      return CE_OK;
    }
    if (!h.nonempty) continue;
    (*found)++;
    for (int v = 0; v < h.nedge; v++) {
      const int fm = h.ebits[v] & 0xF, fn = h.ebits[v] >> 4;
      /* An edge lying on one face of each tet is a line where the two
       * meshes' faces cross inside the surface (mirrored meshes meet like
       * this everywhere). The four cells around it are (i|i')x(j|j'); the
       * surface, a manifold there, leaves this cell's polygon into one of
       * the other three, and when it is the diagonal one the two side
       * cells only touch the edge. So a proper polygon steps to the
       * diagonal cell alone; if the surface turns into a side cell
       * instead, the diagonal cell's piece is just this edge (not proper)
       * and stepping from it below reaches both side cells. */
      if (h.proper && fm && !(fm & (fm - 1)) && fn && !(fn & (fn - 1))) {
        int32_t am = adjM[pr.a][__builtin_ctz(fm)], an = adjN[pr.b][__builtin_ctz(fn)];
        if (am >= 0 && an >= 0) {
          if ((e = ce_walk_push(a, &set, &queue, am, an)) != CE_OK) return e;
          continue;
        }
      }
      for (int bm = fm; bm; bm &= bm - 1) {
        int32_t am = adjM[pr.a][__builtin_ctz(bm)];
        if (am >= 0 && (e = ce_walk_push(a, &set, &queue, am, pr.b)) != CE_OK) return e;
      }
      for (int bn = fn; bn; bn &= bn - 1) {
        int32_t an = adjN[pr.b][__builtin_ctz(bn)];
        if (an >= 0 && (e = ce_walk_push(a, &set, &queue, pr.a, an)) != CE_OK) return e;
      }
    }
  }
  q->c->candidate_pairs += queue.len;
  return cover_unseeded(m, n, X_MN, q, &set, fp, faces.len, found);
}

static ce_errno query_init(cc_query *q, const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                           ce_builder *b, ce_counters *c) {
  q->TM = &m->tet;
  q->TN = &n->tet;
  q->R = X_MN->R;
  q->t = X_MN->p;
  double scale = m->scale > 0 ? m->scale : 1.0;
  q->tol = 1e-13 * scale;
  q->merge2 = (1e-11 * scale) * (1e-11 * scale);
  q->min_area = 1e-12 * scale * scale;
  q->b = b;
  q->c = c;
  q->identical = 0;
  if (ce_vcache_init(&q->verts, b->arena, 256) != CE_OK) return CE_ENOMEM;
  return CE_OK;
}

ce_errno ce_intersect_tet_tet_all(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                                  ce_builder *b, ce_counters *c) {
  cc_query q;
  ce_errno e = query_init(&q, m, n, X_MN, b, c);
  if (e != CE_OK) return e;
  return run_all_candidates(m, n, X_MN, &q);
}

ce_errno ce_intersect_tet_tet(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                              ce_builder *b, ce_counters *c) {
  cc_query q;
  ce_errno e0 = query_init(&q, m, n, X_MN, b, c);
  if (e0 != CE_OK) return e0;
  if (m->bvh.bnd && n->bvh.bnd && m->tet.adj && n->tet.adj) {
    /* Remember the builder and counters to undo a walk that gives up. */
    ce_builder_mark mark = ce_builder_tell(b);
    ce_counters saved_c = *c;
    int64_t found;
    ce_errno e = trace_surface(m, n, X_MN, &q, &found);
    if (e != CE_OK || found > 0) return e;
    ce_builder_rewind(b, mark);
    c->polygons = saved_c.polygons;
    c->faces_dropped = saved_c.faces_dropped;
    q.identical = 0;
    /* the shared vertices named ids the rewind dropped */
    if (ce_vcache_init(&q.verts, b->arena, 256) != CE_OK) return CE_ENOMEM;
  }
  return run_all_candidates(m, n, X_MN, &q);
}
