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
 * tet M) before touching N's vertices, and uses only fixed-size stack arrays. */
#include <math.h>
#include <string.h>

#include "ce_internal.h"

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

/* Tet j of N in M's frame, computed once per query the first time a pair
 * needs it: vertices, the four face normals (outward, unnormalised: face k
 * is opposite vertex k) with the squared touching tolerance scaled by
 * |nf|^2, and the field p_N(x) = gN . x + cN. */
typedef struct ntet {
  ce_vec3 y[4];
  ce_vec3 nf[4];
  double tol2[4];
  ce_vec3 g;
  double c;
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
  int32_t *nslot;  /* per tet of N: its index in ncache, or -1 */
  ce_buf ncache;   /* ntet entries */
} cc_query;

/* Tet j of N in M's frame (cached); NULL when the arena is exhausted. */
static const ntet *ntet_get(cc_query *q, int32_t j) {
  int32_t k = q->nslot[j];
  if (k >= 0) return (const ntet *)q->ncache.data + k;
  if (q->ncache.len >= INT32_MAX) return NULL;
  ntet *t;
  if (q->ncache.len < q->ncache.cap) t = (ntet *)q->ncache.data + q->ncache.len++;
  else if (!(t = ce_buf_push(q->b->arena, &q->ncache))) return NULL;
  q->nslot[j] = (int32_t)(q->ncache.len - 1);
  const ce_tetmesh *TN = q->TN;
  const int32_t *tn = TN->tet[j];
  for (int v = 0; v < 4; v++) t->y[v] = ce_add(ce_mat3_mul_vec(&q->R, TN->v[tn[v]]), q->t);
  const ce_vec3 *yn = t->y;
  ce_vec3 e1 = ce_sub(yn[1], yn[0]), e2 = ce_sub(yn[2], yn[0]), e3 = ce_sub(yn[3], yn[0]);
  t->nf[0] = ce_cross(ce_sub(yn[2], yn[1]), ce_sub(yn[3], yn[1]));
  t->nf[1] = ce_cross(e3, e2);
  t->nf[2] = ce_cross(e1, e3);
  t->nf[3] = ce_cross(e2, e1);
  /* |s| <= tol |nf| without the square root */
  for (int f = 0; f < 4; f++) t->tol2[f] = q->tol * q->tol * ce_norm2(t->nf[f]);
  t->g = ce_mat3_mul_vec(&q->R, TN->grad[j]);
  t->c = TN->offset[j] - ce_dot(t->g, q->t);
  return t;
}

#define TOUCH_NONEMPTY 0x100

/* The faces of a tet that contain vertex a (bit k = face opposite k). */
static inline int faces_with(int a) { return 0xF & ~(1 << a); }

/* Evaluate the pair (tet i of M, tet j of N): add its polygon to the
 * builder when it has one, and report in *touch which faces of tet i (bits
 * 0-3) and tet j (bits 4-7) the pair's intersection with the equal-pressure
 * plane touches, plus TOUCH_NONEMPTY when that intersection is not empty
 * (degenerate intersections, down to a point, count: surface tracing walks
 * through them). The slice and the clip use a tolerance so that a plane
 * through a vertex or along an edge is seen consistently from every tet
 * that shares it. */
static ce_errno eval_pair(cc_query *q, int32_t i, int32_t j, int *touch) {
  const ce_tetmesh *TM = q->TM, *TN = q->TN;
  *touch = 0;
  if (TM->prange[i][1] < TN->prange[j][0] || TN->prange[j][1] < TM->prange[i][0]) return CE_OK;
  const int32_t *tm = TM->tet[i];
  ce_vec3 xm[4] = {TM->v[tm[0]], TM->v[tm[1]], TM->v[tm[2]], TM->v[tm[3]]};
  const ntet *nt = ntet_get(q, j);
  if (!nt) return CE_ENOMEM;
  ce_vec3 gM = TM->grad[i];
  ce_vec3 gN = nt->g;
  double cM = TM->offset[i], cN = nt->c;
  ce_vec3 g = ce_sub(gM, gN);
  double c0 = cM - cN;
  double gg = ce_norm2(g);
  if (!(gg > 1e-24 * (ce_norm2(gM) + ce_norm2(gN)))) {
    /* Parallel fields: no plane. Identical fields (equal everywhere in the
     * pair) make the equal-pressure set a volume, which the surface walk
     * cannot cross; it hands such a query to the all-candidates path. */
    double mag = fabs(cM) + fabs(cN) + TM->prange[i][1] + TN->prange[j][1];
    if (fabs(c0) <= 1e-9 * mag) q->identical = 1;
    return CE_OK;
  }
  double gl = sqrt(gg), tol_f = q->tol * gl;
  double f[4];
  int mask = 0;
  for (int k = 0; k < 4; k++) {
    f[k] = ce_dot(g, xm[k]) + c0;
    mask |= (f[k] > 0) << k;
  }
  /* Cheap rejection, with a plane touching a vertex or edge moved across. */
  if (mask == 0 || mask == 15) {
    int near = 0;
    for (int k = 0; k < 4; k++) near |= (fabs(f[k]) <= tol_f) << k;
    if (near == 0 || near == 15) return CE_OK;
    mask ^= near;
  }
  int n = slice_n[mask];
  ce_vec3 A[CC_MAXV], B[CC_MAXV];
  int bitsA[CC_MAXV], bitsB[CC_MAXV];
  for (int v = 0; v < n; v++) {
    int a = slice_e[mask][v][0], bb = slice_e[mask][v][1];
    double t = f[a] / (f[a] - f[bb]);
    t = t < 0 ? 0 : (t > 1 ? 1 : t);
    A[v] = ce_axpy(xm[a], t, ce_sub(xm[bb], xm[a]));
    int bits = faces_with(a) & faces_with(bb); /* the two faces holding edge (a, b) */
    if (fabs(f[a]) <= tol_f) bits |= faces_with(a);
    if (fabs(f[bb]) <= tol_f) bits |= faces_with(bb);
    bitsA[v] = bits;
  }
  /* Orient counter-clockwise about g. */
  ce_vec3 av = n == 3 ? ce_cross(ce_sub(A[1], A[0]), ce_sub(A[2], A[0]))
                      : ce_cross(ce_sub(A[2], A[0]), ce_sub(A[3], A[1]));
  if (ce_dot(av, g) < 0) {
    for (int lo = 0, hi = n - 1; lo < hi; lo++, hi--) {
      ce_vec3 tv = A[lo];
      A[lo] = A[hi];
      A[hi] = tv;
      int tb = bitsA[lo];
      bitsA[lo] = bitsA[hi];
      bitsA[hi] = tb;
    }
  }
  /* N's vertices in M's frame; clip by its faces (face k opposite vertex k,
   * outward normals; inside when s <= tolerance). */
  ce_vec3 *cur = A, *nxt = B;
  int *cb = bitsA, *nb = bitsB;
  for (int k = 0; k < 4; k++) {
    const ce_vec3 o = k == 0 ? nt->y[1] : nt->y[0], nfk = nt->nf[k];
    const double tol2_s = nt->tol2[k];
    double sv[CC_MAXV];
    int nout = 0;
    for (int v = 0; v < n; v++) {
      double sk = ce_dot(nfk, ce_sub(cur[v], o));
      int near = sk * sk <= tol2_s;
      sv[v] = near ? 0.0 : sk; /* within tolerance: on the face */
      nout += sv[v] > 0;
      if (near) cb[v] |= 1 << (4 + k);
    }
    if (nout == n) return CE_OK;
    if (nout == 0) continue;
    int m = 0;
    for (int v = 0; v < n; v++) {
      int w = v + 1 == n ? 0 : v + 1;
      int in_v = sv[v] <= 0, in_w = sv[w] <= 0;
      if (in_v) {
        nxt[m] = cur[v];
        nb[m++] = cb[v];
      }
      if (in_v != in_w) {
        double t = sv[v] / (sv[v] - sv[w]);
        t = t < 0 ? 0 : (t > 1 ? 1 : t);
        nxt[m] = ce_axpy(cur[v], t, ce_sub(cur[w], cur[v]));
        nb[m++] = (cb[v] & cb[w]) | (1 << (4 + k));
      }
    }
    n = m;
    ce_vec3 *tv = cur;
    cur = nxt;
    nxt = tv;
    int *tb = cb;
    cb = nb;
    nb = tb;
  }
  if (n == 0) return CE_OK;
  /* The output polygon: merge near-duplicate vertices, drop slivers. */
  ce_vec3 poly[CC_MAXV];
  int pbits[CC_MAXV];
  int m = 0;
  for (int v = 0; v < n; v++) {
    if (m > 0 && ce_norm2(ce_sub(cur[v], poly[m - 1])) <= q->merge2) {
      pbits[m - 1] |= cb[v];
      continue;
    }
    pbits[m] = cb[v];
    poly[m++] = cur[v];
  }
  while (m > 1 && ce_norm2(ce_sub(poly[m - 1], poly[0])) <= q->merge2) pbits[0] |= pbits[--m];
  /* The walk continues across a face only where a whole edge of the
   * intersection lies on it; a pair touching in a single point is no
   * bridge (the cells around a point are joined through segments). */
  if (m < 2) return CE_OK;
  int bits = 0;
  for (int v = 0; v < m; v++) bits |= pbits[v] & pbits[v + 1 == m ? 0 : v + 1];
  *touch = bits | TOUCH_NONEMPTY;
  if (m < 3) return CE_OK;
  ce_vec3 sa = ce_v3(0, 0, 0);
  for (int v = 1; v + 1 < m; v++) sa = ce_add(sa, ce_cross(ce_sub(poly[v], poly[0]), ce_sub(poly[v + 1], poly[0])));
  double area = 0.5 * ce_dot(sa, g) / gl;
  if (!(area > q->min_area)) return CE_OK;
  ce_vec3 nrm = ce_scale(g, 1.0 / gl);
  double lm = ce_norm(gM), ln = ce_norm(gN);
  int ok_m = lm == 0 || ce_dot(nrm, gM) > CE_GRADIENT_COS_LIMIT * lm;
  int ok_n = ln == 0 || -ce_dot(nrm, gN) > CE_GRADIENT_COS_LIMIT * ln;
  if (!ok_m || !ok_n) {
    q->c->faces_dropped++;
    return CE_OK;
  }
  double p[CC_MAXV];
  for (int v = 0; v < m; v++) p[v] = ce_dot(gM, poly[v]) + cM;
  ce_errno e = ce_builder_add_polygon(q->b, poly, p, m, nrm, gM, gN, i, j);
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
    int touch;
    if ((e = eval_pair(q, pairs[k].a, pairs[k].b, &touch)) != CE_OK) return e;
  }
  return CE_OK;
}

/* ---- surface tracing ------------------------------------------------------
 * The equal-pressure set {p_M = p_N} is a level set of a continuous
 * function, so its pieces in neighbouring cells (tet of M) x (tet of N)
 * join across the faces of M or N. Its boundary lies where both pressures
 * are zero, i.e. on both boundaries, so every piece that reaches a boundary
 * is found by starting from the tet pairs whose boundary faces overlap and
 * walking across the faces each pair's intersection touches. A visited set
 * (open addressing on the pair key) keeps each pair to one evaluation; the
 * walk is first-in first-out from the seeds in hierarchy order, so the
 * output order is deterministic. Closed pieces that never reach a boundary
 * (one body's high-pressure core wholly inside the other with no boundary
 * crossing) are found only through the fallback below, which runs when the
 * walk finds nothing. */

typedef struct pair_set {
  uint64_t *key; /* 0 = empty; pair (i, j) stored as ((i << 32) | j) + 1 */
  int64_t cap, len;
} pair_set;

static ce_errno set_init(ce_arena *a, pair_set *s, int64_t want) {
  int64_t cap = 1024;
  while (cap < 2 * want) cap *= 2;
  s->key = ce_arena_calloc(a, (size_t)cap, sizeof *s->key);
  if (!s->key) return CE_ENOMEM;
  s->cap = cap;
  s->len = 0;
  return CE_OK;
}

static inline uint64_t set_hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

/* Insert; *added = 1 when the key was new. */
static inline ce_errno set_add(ce_arena *a, pair_set *s, int32_t i, int32_t j, int *added) {
  uint64_t key = (((uint64_t)(uint32_t)i << 32) | (uint32_t)j) + 1;
  if (2 * (s->len + 1) > s->cap) {
    pair_set t;
    ce_errno e = set_init(a, &t, s->cap);
    if (e != CE_OK) return e;
    for (int64_t k = 0; k < s->cap; k++) {
      uint64_t kk = s->key[k];
      if (!kk) continue;
      uint64_t h = set_hash(kk) & (uint64_t)(t.cap - 1);
      while (t.key[h]) h = (h + 1) & (uint64_t)(t.cap - 1);
      t.key[h] = kk;
      t.len++;
    }
    *s = t;
  }
  uint64_t h = set_hash(key) & (uint64_t)(s->cap - 1);
  while (s->key[h]) {
    if (s->key[h] == key) {
      *added = 0;
      return CE_OK;
    }
    h = (h + 1) & (uint64_t)(s->cap - 1);
  }
  s->key[h] = key;
  s->len++;
  *added = 1;
  return CE_OK;
}

static inline ce_errno push_pair(ce_arena *a, pair_set *s, ce_buf *queue, int32_t i, int32_t j) {
  int added;
  ce_errno e = set_add(a, s, i, j, &added);
  if (e != CE_OK || !added) return e;
  ce_pair *p;
  if (queue->len < queue->cap) p = (ce_pair *)queue->data + queue->len++;
  else if (!(p = ce_buf_push(a, queue))) return CE_ENOMEM;
  p->a = i;
  p->b = j;
  return CE_OK;
}

/* Returns CE_OK with *found = number of pairs with a nonempty intersection. */
static ce_errno trace_surface(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, cc_query *q,
                              int64_t *found) {
  ce_arena *a = q->b->arena;
  *found = 0;
  ce_buf faces;
  ce_buf_init(&faces, sizeof(ce_pair));
  ce_errno e = ce_bvh_collide(m->bvh.bnd, n->bvh.bnd, X_MN, 0, a, &faces);
  if (e != CE_OK) return e;
  if (faces.len == 0) return CE_OK;
  pair_set set;
  /* The walk evaluates about 5 pairs per seed (sphere pairs); both the
   * set and the queue grow if needed. */
  if ((e = set_init(a, &set, 6 * faces.len)) != CE_OK) return e;
  ce_buf queue;
  ce_buf_init(&queue, sizeof(ce_pair));
  if (ce_buf_reserve(a, &queue, 256 + 6 * faces.len) != CE_OK) return CE_ENOMEM;
  /* About 1.3 polygons of 3-4 vertices per seed (sphere pairs): room for
   * that in the builder up front instead of doubling and copying. */
  {
    ce_builder *b = q->b;
    int64_t np = 64 + 2 * faces.len, nv = 4 * np;
    if (ce_buf_reserve(a, &b->v, nv) != CE_OK || ce_buf_reserve(a, &b->p, nv) != CE_OK ||
        ce_buf_reserve(a, &b->face_vert, nv) != CE_OK || ce_buf_reserve(a, &b->face_off, np) != CE_OK ||
        ce_buf_reserve(a, &b->normal, np) != CE_OK || ce_buf_reserve(a, &b->grad_m, np) != CE_OK ||
        ce_buf_reserve(a, &b->grad_n, np) != CE_OK || ce_buf_reserve(a, &b->elem_m, np) != CE_OK ||
        ce_buf_reserve(a, &b->elem_n, np) != CE_OK)
      return CE_ENOMEM;
  }
  const ce_pair *fp = faces.data;
  const int32_t(*adjM)[4] = (const int32_t(*)[4])q->TM->adj, (*adjN)[4] = (const int32_t(*)[4])q->TN->adj;
  /* Seeds one at a time, each walk run to the end before the next seed:
   * seeds on an already traced piece are then skipped by the visited set. */
  int64_t head = 0, seed = 0;
  for (;;) {
    if (head == queue.len) {
      if (seed == faces.len) break;
      e = push_pair(a, &set, &queue, m->bvh.bnd_tet[fp[seed].a], n->bvh.bnd_tet[fp[seed].b]);
      if (e != CE_OK) return e;
      seed++;
      continue;
    }
    ce_pair pr = ((const ce_pair *)queue.data)[head++];
    int touch;
    if ((e = eval_pair(q, pr.a, pr.b, &touch)) != CE_OK) return e;
    if (q->identical) {
      *found = 0;
      return CE_OK;
    }
    if (!(touch & TOUCH_NONEMPTY)) continue;
    (*found)++;
    for (int k = 0; k < 4; k++) {
      if ((touch & (1 << k)) && adjM[pr.a][k] >= 0)
        if ((e = push_pair(a, &set, &queue, adjM[pr.a][k], pr.b)) != CE_OK) return e;
      if ((touch & (1 << (4 + k))) && adjN[pr.b][k] >= 0)
        if ((e = push_pair(a, &set, &queue, pr.a, adjN[pr.b][k])) != CE_OK) return e;
    }
  }
  q->c->candidate_pairs += queue.len;
  return CE_OK;
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
  int32_t nt = n->tet.nt > 0 ? n->tet.nt : 1;
  q->nslot = ce_arena_alloc(b->arena, (size_t)nt * sizeof *q->nslot);
  if (!q->nslot) return CE_ENOMEM;
  memset(q->nslot, 0xff, (size_t)nt * sizeof *q->nslot); /* all -1 */
  ce_buf_init(&q->ncache, sizeof(ntet));
  if (ce_buf_reserve(b->arena, &q->ncache, 256) != CE_OK) return CE_ENOMEM;
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
    ce_builder saved = *b;
    ce_counters saved_c = *c;
    int64_t found;
    ce_errno e = trace_surface(m, n, X_MN, &q, &found);
    if (e != CE_OK || found > 0) return e;
    b->v.len = saved.v.len;
    b->p.len = saved.p.len;
    b->face_off.len = saved.face_off.len;
    b->face_vert.len = saved.face_vert.len;
    b->normal.len = saved.normal.len;
    b->grad_m.len = saved.grad_m.len;
    b->grad_n.len = saved.grad_n.len;
    b->elem_m.len = saved.elem_m.len;
    b->elem_n.len = saved.elem_n.len;
    c->polygons = saved_c.polygons;
    c->faces_dropped = saved_c.faces_dropped;
    q.identical = 0;
  }
  return run_all_candidates(m, n, X_MN, &q);
}
