/* ce_intersect_rigid.c — contact surfaces between a compliant geometry M and
 * a rigid one (or a compliant half space), built in M's frame with normals
 * pointing out of N into M.
 *
 *  ce_intersect_tet_tri        compliant tet mesh M – rigid triangle mesh N:
 *                              the surface is N's boundary inside M; every
 *                              candidate triangle is clipped by the tet.
 *  ce_intersect_tet_halfspace  compliant tet mesh M – half space N: a rigid
 *                              N gives N's boundary plane sliced by M's tets;
 *                              a compliant N (a slab of thickness s) gives
 *                              the equal-pressure surface p_M = p_N, clipped
 *                              by the tets and by N's material z_N <= 0.
 *  ce_intersect_halfspace_tri  compliant half space M – rigid mesh N: N's
 *                              triangles clipped to M's material z_M <= 0.
 *
 * Gradient rule (Elandt et al. 2019, as Drake): a face is kept only when its normal n
 * makes an angle of less than 5 pi/8 with the unit pressure gradient of each
 * compliant side, oriented so that it points into that side: n.gM > cos(5pi/8)
 * for M and -n.gN > cos(5pi/8) for a compliant N. For a rigid N the normal is
 * N's outward normal, so the rule removes the faces of N whose outward normal
 * points against M's pressure gradient — the back faces of thin rigid objects
 * that poke through the compliant body, whose pressure would otherwise push N
 * the wrong way. faces_dropped counts the polygons (non-empty intersections)
 * rejected by this rule.
 *
 * Shared vertices: polygons of neighbouring elements share their vertices
 * through an open-addressing hash (in the arena) keyed by global mesh
 * indices — a vertex, an edge as a sorted pair, a face as a sorted triple,
 * or for tet–triangle clipping the pair of features a point lies on (see
 * clip_label) — never by address, so the surface is deterministic and forms
 * one connected mesh. Exactly degenerate hits (a rigid edge lying in a tet
 * face plane) may duplicate a vertex; positions and pressures stay right.
 *
 * Double counting: a rigid triangle lying in a tet face shared by two tets,
 * or a half-space boundary through a tet face, is produced once (half-open
 * rules in ce_intersect_tet_tri and slice_tet); Drake counts the former
 * twice. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ce_arena.h"
#include "ce_bvh.h"
#include "ce_geometry.h"
#include "ce_intersect.h"
#include "ce_mesh.h"
#include "ce_predicates.h"
#include "ce_surface.h"
#include "ce_walk.h"

#define MAXV CE_CLIP_MAXV

/* ---- vertex keys (the cache is ce_vcache, ce_walk.c) ---------------------- */

/* Slicers use k[0..2] (a sorted vertex, edge or face, unused = -1, and
 * k[3..5] = -1); the tet–triangle clipper uses all six (see clip_label). */
typedef ce_vkey vkey;

static void sort3(int32_t *a) {
  int32_t t;
  if (a[0] > a[1]) { t = a[0]; a[0] = a[1]; a[1] = t; }
  if (a[1] > a[2]) { t = a[1]; a[1] = a[2]; a[2] = t; }
  if (a[0] > a[1]) { t = a[0]; a[0] = a[1]; a[1] = t; }
}

/* Key of a vertex (i), an edge (i, j) or a face (i, j, l); unused = -1. */
static vkey key_of(int32_t i, int32_t j, int32_t l) {
  vkey k = {{i, j, l, -1, -1, -1}};
  sort3(k.k);
  return k;
}

/* ---- small polygon helpers ---------------------------------------------- */

/* Twice the vector area (Newell) of the polygon x[0..n). */
static ce_vec3 poly_area2(const ce_vec3 *x, int n) {
  ce_vec3 s = ce_v3(0, 0, 0);
  for (int i = 0; i < n; i++) s = ce_add(s, ce_cross(x[i], x[(i + 1) % n]));
  return s;
}

/* Remove cyclically consecutive duplicate ids; returns the new count. */
static int dedupe_ids(int32_t *ids, int n) {
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m == 0 || ids[m - 1] != ids[i]) ids[m++] = ids[i];
  while (m > 1 && ids[m - 1] == ids[0]) m--;
  return m;
}

/* Add a face from cached vertex ids after removing repeats; orients it
 * counter-clockwise about `normal`; skips polygons of (numerically) zero
 * area. Returns CE_OK whether or not a face was added; *added says. */
static ce_errno emit_face(ce_builder *b, int32_t *ids, int n, ce_vec3 normal, ce_vec3 gm, ce_vec3 gn,
                          int32_t em, int32_t en, int *added) {
  *added = 0;
  n = dedupe_ids(ids, n);
  if (n < 3) return CE_OK;
  const ce_vec3 *V = b->v.data;
  ce_vec3 x[MAXV];
  double ext = 0;
  for (int i = 0; i < n; i++) {
    x[i] = V[ids[i]];
    ext = fmax(ext, ce_norm2(ce_sub(x[i], x[0])));
  }
  ce_vec3 a2 = poly_area2(x, n);
  double s = ce_dot(a2, normal);
  /* zero area relative to the polygon's extent: nothing to add */
  if (!(fabs(s) > 1e-13 * ext)) return CE_OK;
  if (s < 0)
    for (int i = 0, j = n - 1; i < j; i++, j--) {
      int32_t t = ids[i];
      ids[i] = ids[j];
      ids[j] = t;
    }
  ce_errno e = ce_builder_add_face(b, ids, n, normal, gm, gn, em, en);
  if (e == CE_OK) *added = 1;
  return e;
}

/* ---- compliant tet mesh M vs rigid triangle mesh N ------------------------ */

/* Shared vertices for tet–triangle polygons. Every polygon vertex carries a
 * label naming the mesh features it is the intersection of, so that the
 * polygons of neighbouring tets and of neighbouring triangles reuse one
 * builder vertex for the same point:
 *   {1, v}                  rigid vertex v (inside the tet)
 *   {2, a, b, f0, f1, f2}   rigid edge (a, b) crossing tet face (f0, f1, f2)
 *   {3, i, j, tri}          tet edge (i, j) piercing triangle tri
 *   {0}                     anything else (degenerate hits): never shared
 * and every polygon edge carries the feature it lies on: a rigid edge, a
 * tet face, or unknown. A point lying exactly on a clipping plane keeps its
 * old label, so exact degeneracies only lose sharing, never correctness.
 *
 * While clipping, the labels are local to the pair (small integers: corner,
 * edge and face indices of the triangle and the tet), so the clipper copies
 * a few bytes per vertex; only the corners of a polygon that is kept get
 * the global key above (global_label).
 *   vertex: 0 none | 1 + 4 i: corner i | 2 + 4 e + 16 k: triangle edge e
 *           (corner e to e + 1) crossing tet face k (opposite vertex k) |
 *           3 + 4 k1 + 16 k2: the tet edge common to faces k1 and k2
 *   edge:   0 unknown | 1 + 4 e: triangle edge e | 2 + 4 k: tet face k */
enum { VL_NONE = 0, VL_CORNER = 1, VL_EDGE_FACE = 2, VL_TET_EDGE = 3 };
enum { EL_NONE = 0, EL_TRI_EDGE = 1, EL_FACE = 2 };

static vkey label_none(void) {
  vkey k = {{0, -1, -1, -1, -1, -1}};
  return k;
}

/* Local label of the point where an edge labelled el crosses tet face k. */
static inline int clip_label(int el, int k) {
  if ((el & 3) == EL_TRI_EDGE) return VL_EDGE_FACE | (el >> 2) << 2 | k << 4;
  /* two different faces of a tet share the edge joining the two vertices
   * opposite neither */
  if ((el & 3) == EL_FACE && el >> 2 != k) return VL_TET_EDGE | (el >> 2) << 2 | k << 4;
  return VL_NONE;
}

/* The global key (see above) of local label vl in the pair (tet with
 * vertices tv, triangle tri with vertices sv). */
static inline vkey global_label(int vl, const int32_t tv[4], const int32_t sv[3], int32_t tri) {
  vkey k = label_none();
  switch (vl & 3) {
    case VL_CORNER:
      k.k[0] = 1;
      k.k[1] = sv[vl >> 2];
      break;
    case VL_EDGE_FACE: {
      int e = vl >> 2 & 3, f = vl >> 4;
      int32_t u = sv[e], w = sv[e == 2 ? 0 : e + 1];
      int32_t fc[3] = {tv[(f + 1) & 3], tv[(f + 2) & 3], tv[(f + 3) & 3]};
      sort3(fc);
      k.k[0] = 2;
      k.k[1] = u < w ? u : w;
      k.k[2] = u < w ? w : u;
      k.k[3] = fc[0];
      k.k[4] = fc[1];
      k.k[5] = fc[2];
      break;
    }
    case VL_TET_EDGE: {
      int other = 0xF & ~(1 << (vl >> 2 & 3)) & ~(1 << (vl >> 4));
      int32_t i = tv[__builtin_ctz(other)], j = tv[31 - __builtin_clz(other)];
      k.k[0] = 3;
      k.k[1] = i < j ? i : j;
      k.k[2] = i < j ? j : i;
      k.k[3] = tri;
      break;
    }
    default:
      break;
  }
  return k;
}

/* A vertex of the polygon being clipped: position, local label, label of
 * its outgoing edge (to the next vertex), and the features it lies on for
 * the surface walk: faces of the tet (bits 0-3, face k opposite vertex k)
 * and edges of the triangle (bits 4-6, edge e from corner e to e + 1). A
 * vertex made on face k lies on it and on what both ends of the clipped
 * edge lie on; a vertex kept within eps of a face plane lies on it. */
typedef struct cvert {
  ce_vec3 x;
  int16_t vl;
  int8_t el;
  uint8_t bits;
} cvert;

/* Twice the vector area (Newell) of the polygon v[0..n). */
static ce_vec3 cpoly_area2(const cvert *v, int n) {
  ce_vec3 s = ce_v3(0, 0, 0);
  for (int i = 0; i < n; i++) s = ce_add(s, ce_cross(v[i].x, v[i + 1 == n ? 0 : i + 1].x));
  return s;
}

/* The polygon where rigid triangle P (M frame, unit normal nrm) lies inside
 * tet t of M; see ce_clip_tri_tet. Output in out[0..k): positions, and with
 * `labels` set the local labels and walk bits too. *exists (when not NULL;
 * it starts at 0) gets the corner count k of the intersection left in out:
 * k when it has positive area, even when the gradient rule drops it, and -k
 * when it is a segment or has no area. The surface walk crosses both.
 * *area2 (when positive area) gets twice the polygon's vector area. */
static inline __attribute__((always_inline)) int clip_tri_tet(const ce_tetmesh *T, int32_t t, const ce_vec3 tri[3],
                                                              ce_vec3 nrm, double eps, int labels, cvert *out,
                                                              int *exists, ce_vec3 *area2, ce_counters *c) {
  const int32_t *tv = T->tet[t];
  ce_vec3 X[4] = {T->v[tv[0]], T->v[tv[1]], T->v[tv[2]], T->v[tv[3]]};
  /* Cheap rejections of the many box-overlap false positives, with the
   * coplanarity tolerance so a triangle in a tet face is never lost:
   * the tet entirely on one side of the triangle's plane, or the triangle
   * entirely outside one face plane of the tet. */
  double tp = ce_dot(nrm, tri[0]);
  int above = 0, below = 0;
  for (int j = 0; j < 4; j++) {
    double sd = ce_dot(nrm, X[j]) - tp;
    above += sd > eps;
    below += sd < -eps;
  }
  if (above == 4 || below == 4) return 0;
  ce_vec3 fns[4];
  double offs[4];
  /* the stored face planes (outward, unit) when the mesh has them */
  const int unit = T->fplane != NULL;
  for (int i = 0; i < 4; i++) {
    /* face opposite vertex i, normal pointing into the tet */
    ce_vec3 fn;
    double off;
    if (unit) {
      const double(*fp)[4] = T->fplane[t];
      fn = ce_v3(-fp[0][i], -fp[1][i], -fp[2][i]);
      off = -fp[3][i];
    } else {
      ce_vec3 x0 = X[(i + 1) & 3], x1 = X[(i + 2) & 3], x2 = X[(i + 3) & 3];
      fn = ce_cross(ce_sub(x1, x0), ce_sub(x2, x0));
      if (ce_dot(fn, ce_sub(X[i], x0)) < 0) fn = ce_neg(fn);
      off = ce_dot(fn, x0);
    }
    double lim = eps * eps * ce_norm2(fn);
    int outc = 0;
    for (int k = 0; k < 3; k++) {
      double d = ce_dot(fn, tri[k]) - off;
      outc += d < 0 && d * d > lim;
    }
    if (outc == 3) return 0;
    /* the clip wants unit normals (its tolerance is a length) */
    double inv = unit ? 1.0 : 1.0 / ce_norm(fn);
    fns[i] = ce_scale(fn, inv);
    offs[i] = off * inv;
  }
  cvert A[MAXV], B[MAXV];
  int np = 3;
  for (int i = 0; i < 3; i++) {
    A[i].x = tri[i];
    if (labels) {
      A[i].vl = VL_CORNER | i << 2;
      A[i].el = EL_TRI_EDGE | i << 2;
      /* corner i: edges i and i - 1 */
      A[i].bits = (uint8_t)(1 << (4 + i) | 1 << (4 + (i == 0 ? 2 : i - 1)));
    }
  }
  /* the walk also crosses segments (exists != NULL: clip 2-gons too) */
  const int npmin = exists ? 2 : 3;
  cvert *cur = A, *nxt = B;
  for (int i = 0; i < 4 && np >= npmin; i++) {
    /* unit inward normal of the face opposite vertex i */
    const ce_vec3 fn = fns[i];
    const double off = offs[i];
    double d[MAXV];
    int coplanar = 1, nout = 0;
    for (int k = 0; k < np; k++) {
      d[k] = ce_dot(fn, cur[k].x) - off;
      int near = fabs(d[k]) <= eps;
      coplanar &= near;
      nout += d[k] < 0;
      if (labels) cur[k].bits |= (uint8_t)(near << i);
    }
    /* A triangle lying in this face's plane: the face, when shared by two
     * tets, would give the same polygon twice (once per tet). Half-open
     * rule: the polygon belongs only to the tet on the side its normal
     * points to (dot(n, inward) > 0) — M's material outside N, whose
     * gradient is the one that matters. The two tets sharing the face
     * have opposite inward normals, so exactly one keeps it. */
    if (coplanar) {
      if (!(ce_dot(nrm, fn) > 0)) return 0;
      continue;
    }
    if (nout == 0) continue; /* all kept: the clip would copy the polygon */
    /* Sutherland–Hodgman: keep d >= 0; an endpoint at exactly 0 is kept as
     * itself, new points only between strictly opposite sides. */
    const int8_t on_face = (int8_t)(EL_FACE | i << 2);
    int m = 0;
    for (int v = 0; v < np; v++) {
      int w = v + 1 == np ? 0 : v + 1;
      double da = d[v], db = d[w];
      if (da >= 0) {
        nxt[m] = cur[v];
        /* the outgoing edge runs along v -> w unless w is cut away */
        if (labels && !(db >= 0 || da > 0)) nxt[m].el = on_face;
        m++;
      }
      if ((da > 0 && db < 0) || (da < 0 && db > 0)) {
        double s = da / (da - db);
        cvert *o = &nxt[m++];
        o->x = ce_axpy(cur[v].x, s, ce_sub(cur[w].x, cur[v].x));
        if (labels) {
          o->vl = (int16_t)clip_label(cur[v].el, i);
          /* leaving the half space: the next edge runs along the face plane */
          o->el = da > 0 ? on_face : cur[v].el;
          o->bits = (uint8_t)((cur[v].bits & cur[w].bits) | 1 << i);
        }
      }
    }
    np = m;
    /* the output becomes the input of the next face (swap, no copies) */
    cvert *tq = cur;
    cur = nxt;
    nxt = tq;
  }
  if (np < npmin) return 0;
  /* drop near-duplicate consecutive vertices (the first one stays, with
   * the features of both) */
  int k = 0;
  for (int i = 0; i < np; i++)
    if (k == 0 || ce_norm(ce_sub(cur[i].x, out[k - 1].x)) > eps) out[k++] = cur[i];
    else if (labels) out[k - 1].bits |= cur[i].bits;
  while (k > 1 && ce_norm(ce_sub(out[k - 1].x, out[0].x)) <= eps) {
    if (labels) out[0].bits |= out[k - 1].bits;
    k--;
  }
  if (exists && k >= 2) *exists = -k; /* a segment, or no area: a bridge */
  if (k < 3) return 0;
  ce_vec3 a2 = cpoly_area2(out, k);
  if (!(ce_dot(a2, nrm) > 0)) return 0; /* zero area (or degenerate) */
  if (exists) *exists = k;
  /* Gradient rule (see the file comment): n . g > cos(5 pi/8) |g| with the
   * cosine negative holds for n . g >= 0, else compare squares (no square
   * root). A zero gradient (constant field) is accepted. The pair is
   * clipped even when the rule fails, so that faces_dropped counts only
   * polygons that exist (as the compliant-compliant intersector does), not
   * every candidate pair whose bounding boxes overlap. */
  const ce_vec3 g = T->grad[t];
  const double dm = ce_dot(nrm, g);
  if (!(dm >= 0 || dm * dm < CE_GRADIENT_COS_LIMIT * CE_GRADIENT_COS_LIMIT * ce_norm2(g))) {
    c->faces_dropped++;
    return 0;
  }
  if (area2) *area2 = a2;
  return k;
}

/* ce_intersect.h. Shared with ce_intersect_terrain.c. The two calls let the
 * compiler drop the label work from the unlabelled (terrain) copy. */
int ce_clip_tri_tet(const ce_tetmesh *T, int32_t t, const ce_vec3 tri[3], ce_vec3 nrm, double eps,
                    const int32_t tri_v[3], int32_t tri_id, ce_vec3 *out, ce_vkey *labels, ce_counters *c) {
  cvert V[MAXV];
  int k;
  if (labels) {
    k = clip_tri_tet(T, t, tri, nrm, eps, 1, V, NULL, NULL, c);
    for (int i = 0; i < k; i++) labels[i] = global_label(V[i].vl, T->tet[t], tri_v, tri_id);
  } else {
    k = clip_tri_tet(T, t, tri, nrm, eps, 0, V, NULL, NULL, c);
  }
  for (int i = 0; i < k; i++) out[i] = V[i].x;
  return k;
}

/* A triangle of N placed in M's frame: corners and unit normal. */
typedef struct ptri {
  ce_vec3 x[3], n;
} ptri;

/* One query of ce_intersect_tet_tri. */
typedef struct tt_query {
  const ce_tetmesh *T;
  const ce_trimesh *S;
  const ce_pose *X_MN;
  double eps;
  /* 0: pressures below zero (rounding) are taken as zero; a margin's
   * inflated copy (ce_margin.c) keeps them, negative in its layer */
  double pmin;
  ce_builder *b;
  ce_counters *c;
  ce_vcache cache;
  ce_elemcache ptris; /* triangles of N placed so far (ptri entries; each meets several tets) */
} tt_query;

/* Triangle f of N in M's frame (placed once per query); NULL when the
 * arena is exhausted. */
static const ptri *ptri_get(tt_query *q, int32_t f) {
  int fresh;
  ptri *p = ce_elemcache_get(q->b->arena, &q->ptris, f, sizeof *p, &fresh);
  if (!p || !fresh) return p;
  const int32_t *sv = q->S->tri[f];
  for (int i = 0; i < 3; i++) p->x[i] = ce_pose_apply(q->X_MN, q->S->v[sv[i]]);
  p->n = ce_pose_rotate(q->X_MN, q->S->normal[f]);
  return p;
}

/* Pair (tet t, triangle f): its polygon into the builder (vertices shared
 * through the cache). With walk != NULL, also what the surface walk needs:
 * walk->n edges of the intersection (0 when it is empty or a point, 1 for
 * a segment), walk->proper when it is a polygon with area (kept or
 * dropped by the gradient rule), and per edge (corner i -> i + 1) the
 * features holding it: faces of tet t (bits 0-3, face k opposite vertex
 * k) and edges of triangle f (bits 4-6, edge e from corner e to e + 1),
 * within eps. */
typedef struct tt_hit {
  int n, proper;
  int ebits[MAXV];
} tt_hit;

static ce_errno tet_tri_pair(tt_query *q, int32_t t, int32_t f, tt_hit *walk) {
  const ce_trimesh *S = q->S;
  const ce_tetmesh *T = q->T;
  const ptri *pt = ptri_get(q, f);
  if (!pt) return CE_ENOMEM;
  const ce_vec3 nrm = pt->n;
  const int32_t *sv = S->tri[f];
  cvert Q[MAXV];
  int ex = 0;
  ce_vec3 a2;
  int k = clip_tri_tet(T, t, pt->x, nrm, q->eps, 1, Q, walk ? &ex : NULL, &a2, q->c);
  if (walk) {
    int kx = ex < 0 ? -ex : ex;
    walk->n = kx;
    walk->proper = ex > 0;
    if (kx >= 2) {
      for (int i = 0; i < kx; i++) walk->ebits[i] = Q[i].bits & Q[i + 1 == kx ? 0 : i + 1].bits;
      if (kx == 2) walk->n = 1; /* a segment: one edge */
    }
  }
  if (k < 3) return CE_OK;
  ce_vec3 g = T->grad[t];
  const double off = T->offset[t];
  const int32_t *tv = T->tet[t];
  ce_errno e;
  if ((e = ce_vcache_reserve(&q->cache, k)) != CE_OK) return e;
  int32_t ids[MAXV];
  for (int i = 0; i < k; i++) {
    vkey key;
    ce_vslot *sl = NULL;
    if (Q[i].vl != VL_NONE) {
      key = global_label(Q[i].vl, tv, sv, f);
      sl = ce_vcache_find(&q->cache, key);
      if (sl->id >= 0) {
        ids[i] = sl->id;
        continue;
      }
    }
    ids[i] = ce_builder_add_vertex(q->b, Q[i].x, fmax(q->pmin, ce_dot(g, Q[i].x) + off));
    if (ids[i] < 0) return CE_ENOMEM;
    if (sl) ce_vcache_set(&q->cache, sl, key, ids[i]);
  }
  int added;
  if (dedupe_ids(ids, k) == k) {
    /* What emit_face would do, on the clipper's area (of the same points
     * unless a shared vertex came from a neighbour's rounding): the
     * polygon is already counter-clockwise about nrm (a2 . nrm > 0). */
    double ext = 0;
    for (int i = 1; i < k; i++) ext = fmax(ext, ce_norm2(ce_sub(Q[i].x, Q[0].x)));
    if (!(ce_dot(a2, nrm) > 1e-13 * ext)) return CE_OK;
    if ((e = ce_builder_add_face(q->b, ids, k, nrm, g, ce_v3(0, 0, 0), t, f)) != CE_OK) return e;
    added = 1;
  } else if ((e = emit_face(q->b, ids, k, nrm, g, ce_v3(0, 0, 0), t, f, &added)) != CE_OK) {
    return e;
  }
  q->c->polygons += added;
  return CE_OK;
}

/* State of a surface walk: the pairs visited, the queue (pairs from
 * head on still to evaluate) and whether the arrays are set up. */
typedef struct tt_walk {
  ce_pairset set;
  ce_buf queue;
  int64_t head;
  int ready;
} tt_walk;

/* Sets up the walk's arrays for about `seeds` seed pairs. */
static ce_errno walk_init(tt_query *q, tt_walk *w, int64_t seeds) {
  ce_arena *a = q->b->arena;
  ce_errno e;
  /* Sized by the seeds (boundary triangle pairs that meet): at the finest
   * sphere pair 234 seeds give 2,739 pairs, 322 placed triangles, 2,382
   * polygons, 2,318 vertices and 8,572 corners; at the coarsest 54 give
   * 54 polygons (small queries have many seeds per polygon, so this is
   * kept to what the fine case needs). The zeroed tables (visited pairs,
   * vertex cache) get 16 per seed, the builder's arrays room for 12
   * polygons and vertices per seed and 4 corners per polygon, all capped
   * (2^20 table entries, 2^18 polygons) so that a guess never exhausts a
   * worker's arena that the actual surface would fit in; everything still
   * grows if needed. */
  const int64_t per = seeds < ((int64_t)1 << 16) ? 16 * seeds : ((int64_t)1 << 20);
  const int64_t room = seeds < ((int64_t)1 << 18) / 12 ? 12 * seeds : ((int64_t)1 << 18);
  if ((e = ce_pairset_init(a, &w->set, per)) != CE_OK) return e;
  ce_buf_init(&w->queue, sizeof(ce_pair));
  w->head = 0;
  if (ce_buf_reserve(a, &w->queue, 256 + room) != CE_OK) return CE_ENOMEM;
  if ((e = ce_vcache_init(&q->cache, a, per)) != CE_OK) return e;
  {
    const int64_t np = 16 + room / 6; /* placed triangles: 2 per seed */
    if (ce_elemcache_reserve(a, &q->ptris, np, np) != CE_OK) return CE_ENOMEM;
  }
  if ((e = ce_builder_reserve(q->b, room, room, 4 * room)) != CE_OK) return e;
  w->ready = 1;
  return CE_OK;
}

/* Evaluates the queue, and whenever it runs dry the next seed (a boundary
 * face of M, pair.a, and a triangle of N, pair.b, in seeds[*next ..)) that
 * meets and was not visited, until both are used up. Marks the component
 * of each such seed in seeded and counts them in *nseeds; adds to *found
 * the polygons with area (kept or dropped). */
static ce_errno walk_run(const ce_geometry *m, tt_query *q, tt_walk *w, const ce_pair *sp, int64_t nsp,
                         int64_t *next, unsigned char *seeded, int64_t *nseeds, int64_t *found) {
  ce_arena *a = q->b->arena;
  const int32_t(*adjM)[4] = (const int32_t(*)[4])q->T->adj;
  const int32_t(*adjN)[3] = (const int32_t(*)[3])q->S->adj;
  ce_errno e;
  for (;;) {
    if (w->head == w->queue.len) {
      if (*next == nsp) break;
      int32_t fa = sp[*next].a, f = sp[*next].b, t = m->bvh.bnd_tet[fa];
      ++*next;
      if (ce_pairset_has(&w->set, t, f)) continue;
      const int32_t *ia = m->bvh.bnd_face[fa];
      const ptri *pt = ptri_get(q, f);
      if (!pt) return CE_ENOMEM;
      ce_vec3 x[3];
      for (int k = 0; k < 3; k++) x[k] = q->T->v[ia[k]];
      if (!ce_triangles_meet(x, pt->x, q->eps)) continue;
      /* (a seed already visited belongs to a component marked before) */
      seeded[q->S->comp[f]] = 1;
      ++*nseeds;
      if ((e = ce_walk_push(a, &w->set, &w->queue, t, f)) != CE_OK) return e;
      continue;
    }
    ce_pair pr = ((const ce_pair *)w->queue.data)[w->head++];
    tt_hit h;
    if ((e = tet_tri_pair(q, pr.a, pr.b, &h)) != CE_OK) return e;
    if (h.n < 1) continue;
    *found += h.proper;
    for (int i = 0; i < h.n; i++) {
      const int ft = h.ebits[i] & 0xF, fe = h.ebits[i] >> 4;
      int32_t tt[5] = {pr.a}, ff[4] = {pr.b};
      int nt = 1, nf = 1;
      for (int b = ft; b; b &= b - 1) {
        int32_t t2 = adjM[pr.a][__builtin_ctz(b)];
        if (t2 >= 0) tt[nt++] = t2;
      }
      for (int b = fe; b; b &= b - 1) {
        int32_t f2 = adjN[pr.b][__builtin_ctz(b)];
        if (f2 >= 0) ff[nf++] = f2;
      }
      /* every combination but (t, f) itself: across the tet faces, across
       * the triangle edges, and diagonally where the edge lies on both */
      for (int u = 0; u < nt; u++)
        for (int v = 0; v < nf; v++)
          if ((u || v) && (e = ce_walk_push(a, &w->set, &w->queue, tt[u], ff[v])) != CE_OK) return e;
    }
  }
  return CE_OK;
}

/* Surface tracing, as for two tet meshes (ce_intersect_cc.c): N's surface
 * inside M is a surface whose pieces in neighbouring cells (tet of M) x
 * (triangle of N) join across tet faces and triangle edges. Every piece
 * of a component of N that meets M's boundary reaches that boundary (a
 * piece that did not would be the whole component), where a boundary
 * triangle of M meets a triangle of N: those pairs seed the walk, which
 * steps across the tet faces and triangle edges each polygon's edges lie
 * on (diagonally too where an edge lies on both).
 *
 * A component no seed reached meets no boundary face of M, so being
 * connected it lies wholly outside M (no contact) or wholly inside M's
 * volume, where all of it is contact surface. One of its vertices tells
 * which: inside when some tet of M holds it (within eps: calling an
 * outside component inside only costs time, as every pair is clipped
 * exactly). An inside component is walked from every pair of its first
 * triangle with the tets near that triangle: those cover the triangle, and
 * the walk steps from there over the whole component.
 *
 * *nseeds: the boundary seed pairs that met; *found: the polygons with
 * area (kept or dropped by the gradient rule). */
static ce_errno trace_tet_tri(const ce_geometry *m, const ce_geometry *n, tt_query *q, int64_t *found,
                              int64_t *nseeds) {
  ce_arena *a = q->b->arena;
  const ce_trimesh *S = q->S;
  *found = 0;
  *nseeds = 0;
  unsigned char *seeded = ce_arena_calloc(a, (size_t)S->ncomp, 1);
  if (!seeded) return CE_ENOMEM;
  ce_buf seeds;
  ce_buf_init(&seeds, sizeof(ce_pair));
  ce_errno e = ce_bvh_collide_surfaces(m->bvh.bnd, &n->bvh, q->X_MN, a, &seeds);
  if (e != CE_OK) return e;
  tt_walk w;
  w.ready = 0;
  int64_t next = 0;
  if (seeds.len > 0) {
    if ((e = walk_init(q, &w, seeds.len)) != CE_OK) return e;
    if ((e = walk_run(m, q, &w, seeds.data, seeds.len, &next, seeded, nseeds, found)) != CE_OK) return e;
  }
  ce_buf near;
  ce_buf_init(&near, sizeof(int32_t));
  for (int32_t c = 0; c < S->ncomp; c++) {
    if (seeded[c]) continue;
    const int32_t f0 = S->comp_tris[S->comp_off[c]];
    const ce_vec3 x = ce_pose_apply(q->X_MN, S->v[S->tri[f0][0]]);
    int inside = ce_tets_contain(m, x, q->eps, a, &near, &e);
    if (e != CE_OK) return e;
    if (!inside) continue;
    const ptri *pt = ptri_get(q, f0);
    if (!pt) return CE_ENOMEM;
    near.len = 0;
    if ((e = ce_bvh_near_points(&m->bvh, pt->x, 3, q->eps, a, &near)) != CE_OK) return e;
    if (!w.ready && (e = walk_init(q, &w, near.len)) != CE_OK) return e;
    for (int64_t k = 0; k < near.len; k++)
      if ((e = ce_walk_push(a, &w.set, &w.queue, ((const int32_t *)near.data)[k], f0)) != CE_OK) return e;
    int64_t none = 0;
    if ((e = walk_run(m, q, &w, NULL, 0, &none, seeded, nseeds, found)) != CE_OK) return e;
  }
  if (w.ready) q->c->candidate_pairs += w.queue.len;
  return CE_OK;
}

static ce_errno tt_query_init(tt_query *q, const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                              ce_builder *b, ce_counters *c) {
  memset(q, 0, sizeof *q);
  q->T = &m->tet;
  q->S = &n->tri;
  q->X_MN = X_MN;
  /* coplanarity tolerance: a few ulps of the coordinates' magnitude */
  q->eps = 64 * DBL_EPSILON * fmax(m->scale, 1e-300);
  q->pmin = m->signed_field ? -INFINITY : 0.0;
  q->b = b;
  q->c = c;
  /* small to start with (the trace sizes both from its seeds) */
  if (ce_elemcache_init(b->arena, &q->ptris, sizeof(ptri), 4, 0) != CE_OK) return CE_ENOMEM;
  return CE_OK;
}

/* Every candidate pair, without surface tracing (also the reference the
 * tests compare the walk with). */
ce_errno ce_intersect_tet_tri_all(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                                  ce_builder *b, ce_counters *c) {
  tt_query q;
  ce_errno e = tt_query_init(&q, m, n, X_MN, b, c);
  if (e != CE_OK) return e;
  ce_buf pairs;
  ce_buf_init(&pairs, sizeof(ce_pair));
  e = ce_bvh_collide(&m->bvh, &n->bvh, X_MN, 0, b->arena, &pairs);
  if (e != CE_OK) return e;
  c->candidate_pairs += pairs.len;
  if ((e = ce_vcache_init(&q.cache, b->arena, pairs.len)) != CE_OK) return e;
  for (int64_t k = 0; k < pairs.len; k++) {
    ce_pair pr = ((const ce_pair *)pairs.data)[k];
    if ((e = tet_tri_pair(&q, pr.a, pr.b, NULL)) != CE_OK) return e;
  }
  return CE_OK;
}

ce_errno ce_intersect_tet_tri(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                              ce_builder *b, ce_counters *c) {
  if (m->bvh.bnd && m->tet.adj && m->tet.fplane && n->tri.adj && n->tri.comp) {
    tt_query q;
    ce_errno e = tt_query_init(&q, m, n, X_MN, b, c);
    if (e != CE_OK) return e;
    int64_t found, nseeds;
    if ((e = trace_tet_tri(m, n, &q, &found, &nseeds)) != CE_OK) return e;
    /* Nothing found: no polygon was added (any polygon counts as found),
     * so the builder is as it was. With no seed, every component lies
     * outside M (an inside one gives polygons): no contact. Seeds that
     * met and a walk that found nothing (a touching contact) keep the
     * check over every candidate pair. */
    if (found > 0 || nseeds == 0) return CE_OK;
  }
  return ce_intersect_tet_tri_all(m, n, X_MN, b, c);
}

/* ---- slicing a tet by the zero set of a linear function ------------------ */

/* Values h[i] at the 4 vertices of tet t (global ids tv). Half-open rule:
 * a vertex is "above" when h >= 0 and "below" when h < 0; the slice runs
 * through the edges joining the two classes, so a face lying exactly in the
 * zero set belongs to the tet below it only and is never produced twice.
 * A cut point whose above endpoint has h == 0 is that vertex itself (keyed as
 * the vertex, so neighbours share it). Appends up to 4 cut points to ids/keys
 * (cached builder vertices), with pressures interpolated along the edge. The
 * points are in cyclic order (not yet oriented). Returns the count. */
static int slice_tet(ce_builder *b, ce_vcache *cache, const ce_tetmesh *T, int32_t t, const double h[4],
                     int32_t *ids, vkey *keys) {
  const int32_t *tv = T->tet[t];
  int below[4], nb = 0, above[4], na = 0;
  for (int i = 0; i < 4; i++) {
    if (h[i] < 0) below[nb++] = i;
    else above[na++] = i;
  }
  if (nb == 0 || na == 0) return 0;
  int ev[4][2], ne = 0; /* (below, above) local vertex pairs in cyclic order */
  if (nb == 1 || na == 1) {
    int lone = nb == 1 ? below[0] : above[0];
    int *others = nb == 1 ? above : below;
    for (int i = 0; i < 3; i++) {
      int o = others[i];
      ev[ne][0] = nb == 1 ? lone : o;
      ev[ne][1] = nb == 1 ? o : lone;
      ne++;
    }
  } else {
    int b0 = below[0], b1 = below[1], a0 = above[0], a1 = above[1];
    ev[0][0] = b0; ev[0][1] = a0;
    ev[1][0] = b0; ev[1][1] = a1;
    ev[2][0] = b1; ev[2][1] = a1;
    ev[3][0] = b1; ev[3][1] = a0;
    ne = 4;
  }
  for (int i = 0; i < ne; i++) {
    int lb = ev[i][0], la = ev[i][1];
    int32_t gb = tv[lb], ga = tv[la];
    vkey k = h[la] == 0 ? key_of(ga, -1, -1) : key_of(gb, ga, -1);
    ce_vslot *s = ce_vcache_find(cache, k);
    if (s->id < 0) {
      ce_vec3 x;
      double p;
      if (h[la] == 0) {
        x = T->v[ga];
        p = T->p[ga];
      } else {
        /* interpolate from the lower global index so the point does not
         * depend on which tet computes it first */
        int32_t g0 = gb < ga ? gb : ga, g1 = gb < ga ? ga : gb;
        double h0 = gb < ga ? h[lb] : h[la], h1 = gb < ga ? h[la] : h[lb];
        double u = h0 / (h0 - h1);
        x = ce_axpy(T->v[g0], u, ce_sub(T->v[g1], T->v[g0]));
        p = T->p[g0] + u * (T->p[g1] - T->p[g0]);
      }
      int32_t id = ce_builder_add_vertex(b, x, p);
      if (id < 0) return -1;
      ce_vcache_set(cache, s, k, id);
    }
    ids[i] = s->id;
    keys[i] = k;
  }
  return ne;
}

/* ---- compliant tet mesh M vs half space N --------------------------------- */

ce_errno ce_intersect_tet_halfspace(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                                    ce_builder *b, ce_counters *c) {
  ce_arena *a = b->arena;
  const ce_tetmesh *T = &m->tet;
  /* N's boundary plane in M's frame: nz.x = d; N's material nz.x <= d. */
  ce_vec3 nz = ce_v3(X_MN->R.m[0][2], X_MN->R.m[1][2], X_MN->R.m[2][2]);
  double d = ce_dot(nz, X_MN->p);
  const int compliant_n = n->compliance == CE_COMPLIANT;
  ce_buf tets;
  ce_buf_init(&tets, sizeof(int32_t));
  ce_errno e = ce_bvh_collide_plane(&m->bvh, nz, d, compliant_n ? 0 : 1, a, &tets);
  if (e != CE_OK) return e;
  c->candidate_pairs += tets.len;
  if (tets.len == 0) return CE_OK;
  ce_vcache cache;
  /* about 2 shared cut points per sliced tet; grows on demand */
  if ((e = ce_vcache_init(&cache, a, compliant_n ? 64 : tets.len * 2)) != CE_OK) return e;
  const ce_vec3 zero = ce_v3(0, 0, 0);

  /* compliant N: p_N(x) = kN (d - nz.x), kN = E_N / s; gradient -kN nz */
  const double kN = compliant_n ? n->modulus / n->slab_thickness : 0;
  const ce_vec3 gN = ce_scale(nz, -kN);
  const ce_vec3 gNh = ce_neg(nz);

  for (int64_t q = 0; q < tets.len; q++) {
    int32_t t = ((const int32_t *)tets.data)[q];
    const int32_t *tv = T->tet[t];
    double h[4];
    int32_t ids[MAXV];
    vkey keys[MAXV];
    ce_vec3 normal, gm = T->grad[t];
    /* at most 4 slice points and 2 clip crossings per tet */
    if ((e = ce_vcache_reserve(&cache, 6)) != CE_OK) return e;
    if (!compliant_n) {
      /* No gradient rule against a rigid half space (as Drake): its plane is
       * the only surface there is, so every slice is kept. */
      for (int i = 0; i < 4; i++) h[i] = ce_dot(nz, T->v[tv[i]]) - d;
      normal = nz;
      int ns = slice_tet(b, &cache, T, t, h, ids, keys);
      if (ns < 0) return CE_ENOMEM;
      if (ns == 0) continue;
      int added;
      if ((e = emit_face(b, ids, ns, normal, gm, zero, t, 0, &added)) != CE_OK) return e;
      c->polygons += added;
      continue;
    }
    /* compliant N: equal-pressure plane h = p_M - p_N = 0 */
    ce_vec3 dg = ce_sub(gm, gN);
    normal = ce_normalize(dg);
    if (ce_norm2(normal) == 0) continue; /* parallel equal fields: no plane */
    if (!(ce_dot(normal, ce_normalize(gm)) > CE_GRADIENT_COS_LIMIT) ||
        !(-ce_dot(normal, gNh) > CE_GRADIENT_COS_LIMIT)) {
      /* only count tets that actually hold an equal-pressure plane */
      double lo = INFINITY, hi = -INFINITY;
      for (int i = 0; i < 4; i++) {
        ce_vec3 x = T->v[tv[i]];
        double hv = T->p[tv[i]] - kN * (d - ce_dot(nz, x));
        lo = fmin(lo, hv);
        hi = fmax(hi, hv);
      }
      if (lo < 0 && hi >= 0) c->faces_dropped++;
      continue;
    }
    double z[4];
    for (int i = 0; i < 4; i++) {
      ce_vec3 x = T->v[tv[i]];
      z[i] = ce_dot(nz, x) - d;
      h[i] = T->p[tv[i]] - kN * (-z[i]);
    }
    int ns = slice_tet(b, &cache, T, t, h, ids, keys);
    if (ns < 0) return CE_ENOMEM;
    if (ns == 0) continue;
    /* clip to N's material z_N <= 0 (kept side closed, as for the slice) */
    const ce_vec3 *V = b->v.data;
    int32_t out[MAXV];
    int no = 0;
    for (int i = 0; i < ns; i++) {
      int j = (i + 1) % ns;
      V = b->v.data;
      double za = ce_dot(nz, V[ids[i]]) - d, zb = ce_dot(nz, V[ids[j]]) - d;
      if (za <= 0) out[no++] = ids[i];
      if ((za < 0 && zb > 0) || (za > 0 && zb < 0)) {
        /* The segment lies in a tet face; the face (sorted vertex triple)
         * keys the crossing so the neighbour across it shares the point. */
        int32_t u[6] = {keys[i].k[0], keys[i].k[1], keys[i].k[2], keys[j].k[0], keys[j].k[1], keys[j].k[2]};
        int32_t fk[3] = {-1, -1, -1};
        int nf = 0;
        for (int r = 0; r < 6; r++) {
          if (u[r] < 0) continue;
          int seen = 0;
          for (int s2 = 0; s2 < nf; s2++) seen |= fk[s2] == u[r];
          if (!seen && nf < 3) fk[nf++] = u[r];
        }
        vkey k = key_of(fk[0], fk[1], fk[2]);
        /* tag crossings apart from slice points (which use <= 2 entries) */
        if (nf < 3) k = key_of(-2 - k.k[1], k.k[1], k.k[2]); /* degenerate: unique-ish */
        ce_vslot *s = ce_vcache_find(&cache, k);
        if (s->id < 0) {
          /* compute from the end with the smaller vertex id (deterministic) */
          int32_t i0 = ids[i] < ids[j] ? ids[i] : ids[j], i1 = ids[i] < ids[j] ? ids[j] : ids[i];
          ce_vec3 x0 = V[i0], x1 = V[i1];
          double z0 = ce_dot(nz, x0) - d, z1 = ce_dot(nz, x1) - d;
          double u2 = z0 / (z0 - z1);
          double p0 = ((const double *)b->p.data)[i0], p1 = ((const double *)b->p.data)[i1];
          int32_t id = ce_builder_add_vertex(b, ce_axpy(x0, u2, ce_sub(x1, x0)), p0 + u2 * (p1 - p0));
          if (id < 0) return CE_ENOMEM;
          ce_vcache_set(&cache, s, k, id);
        }
        out[no++] = s->id;
      }
    }
    if (no < 3) continue;
    int added;
    if ((e = emit_face(b, out, no, normal, gm, gN, t, 0, &added)) != CE_OK) return e;
    c->polygons += added;
  }
  return CE_OK;
}

/* ---- compliant half space M vs rigid triangle mesh N --------------------- */

ce_errno ce_intersect_halfspace_tri(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                                    ce_builder *b, ce_counters *c) {
  ce_arena *a = b->arena;
  const ce_trimesh *S = &n->tri;
  /* M's half space z_M <= 0 expressed in N's frame: nN.x <= dN */
  ce_pose X_NM = ce_pose_inverse(X_MN);
  ce_vec3 nN = ce_v3(X_NM.R.m[0][2], X_NM.R.m[1][2], X_NM.R.m[2][2]);
  double dN = ce_dot(nN, X_NM.p);
  ce_buf tris;
  ce_buf_init(&tris, sizeof(int32_t));
  ce_errno e = ce_bvh_collide_plane(&n->bvh, nN, dN, 0, a, &tris);
  if (e != CE_OK) return e;
  c->candidate_pairs += tris.len;
  if (tris.len == 0) return CE_OK;
  ce_vcache cache;
  if ((e = ce_vcache_init(&cache, a, tris.len * 2)) != CE_OK) return e;
  const double k = m->modulus / m->slab_thickness; /* p = k (-z) */
  const ce_vec3 gm = ce_v3(0, 0, -k), zero = ce_v3(0, 0, 0);
  for (int64_t q = 0; q < tris.len; q++) {
    int32_t f = ((const int32_t *)tris.data)[q];
    ce_vec3 nrm = ce_pose_rotate(X_MN, S->normal[f]);
    const int32_t *tv = S->tri[f];
    ce_vec3 x[3];
    for (int i = 0; i < 3; i++) x[i] = ce_pose_apply(X_MN, S->v[tv[i]]);
    /* gradient rule with the unit gradient -z (pressure grows with depth).
     * A failing triangle has |n.z| > 0.38, so it holds a polygon of nonzero
     * area exactly when a vertex lies strictly below z = 0: only those are
     * counted as dropped. */
    if (!(-nrm.z > CE_GRADIENT_COS_LIMIT)) {
      if (x[0].z < 0 || x[1].z < 0 || x[2].z < 0) c->faces_dropped++;
      continue;
    }
    int32_t ids[MAXV];
    int ni = 0;
    if ((e = ce_vcache_reserve(&cache, 6)) != CE_OK) return e;
    for (int i = 0; i < 3; i++) {
      int j = (i + 1) % 3;
      double za = x[i].z, zb = x[j].z;
      if (za <= 0) {
        vkey key = key_of(tv[i], -1, -1);
        ce_vslot *s = ce_vcache_find(&cache, key);
        if (s->id < 0) {
          int32_t id = ce_builder_add_vertex(b, x[i], k * fmax(0.0, -za));
          if (id < 0) return CE_ENOMEM;
          ce_vcache_set(&cache, s, key, id);
        }
        ids[ni++] = s->id;
      }
      if ((za < 0 && zb > 0) || (za > 0 && zb < 0)) {
        vkey key = key_of(tv[i], tv[j], -1);
        ce_vslot *s = ce_vcache_find(&cache, key);
        if (s->id < 0) {
          /* from the lower vertex id so both triangles get the same point */
          int lo = tv[i] < tv[j] ? i : j, hi = lo == i ? j : i;
          double u = x[lo].z / (x[lo].z - x[hi].z);
          ce_vec3 xc = ce_axpy(x[lo], u, ce_sub(x[hi], x[lo]));
          xc.z = 0;
          int32_t id = ce_builder_add_vertex(b, xc, 0.0);
          if (id < 0) return CE_ENOMEM;
          ce_vcache_set(&cache, s, key, id);
        }
        ids[ni++] = s->id;
      }
    }
    if (ni < 3) continue;
    int added;
    if ((e = emit_face(b, ids, ni, nrm, gm, zero, 0, f, &added)) != CE_OK) return e;
    c->polygons += added;
  }
  return CE_OK;
}
