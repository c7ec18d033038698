/* ce_offset.c — how far a boundary vertex moves when every face plane
 * through it moves out by delta (a margin's outer layer, ce_margin.c).
 *
 * A vertex x on the distinct face planes n_1 .. n_k (outward unit normals)
 * gets x' = x + delta u, u the least-norm vector with n_i . u >= 1 for
 * every i: every incident face plane moves out by at least delta, and by
 * exactly delta where the constraint is active. This is a quadratic
 * programme in three unknowns; its solution is the equality solution of
 * its active set, a set of at most three independent constraints, so the
 * active sets of one, two and three constraints are enumerated and the
 * feasible candidate of least norm kept (any feasible point has at least
 * the optimum's norm, and the optimum is one of the candidates):
 *  - one plane {i}: u = n_i;
 *  - two {i, j}: u = (n_i + n_j) / (1 + n_i . n_j), in their span;
 *  - three {i, j, l}: u = (n_j x n_l + n_l x n_i + n_i x n_j) / det, det =
 *    n_i . (n_j x n_l) (the rows' inverse applied to (1, 1, 1)).
 * On a box the three cases are a face, an edge and a corner, and the outer
 * surface the box grown by delta on every side; at a concave edge or
 * corner the same u puts x' where the moved planes meet (the exact offset
 * of the planes). Equivalently, u = w / |w|^2 for w the point of the normals'
 * convex hull nearest the origin, so no u exists exactly when the normals
 * do not lie in an open hemisphere (the tip of a needle or a fin): 0 is in
 * their hull.
 *
 * ce_offset_layer_build applies this to a mesh's boundary: one copy per
 * fan of faces around a vertex (faces joined through boundary edges at
 * it; a pinched vertex has several), and where the offset fails (no u,
 * |u| > MARGIN_STRETCH, more than MARGIN_NORMALS normals) a copy per face,
 * moved delta along the face's normal (ce_margin.c says what the layer
 * then gives up). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_internal.h"
#include "ce_limits.h"
#include "ce_offset.h"

/* Normals closer than this (1 - cos) are one plane. */
#define MERGE_TOL 1e-9
/* A constraint n . o >= delta holds to this relative rounding. */
#define FEASIBLE_TOL 1e-12

int ce_offset_add_normal(ce_vec3 *n, int k, int cap, ce_vec3 nf) {
  for (int i = 0; i < k; i++)
    if (ce_dot(n[i], nf) > 1 - MERGE_TOL) return k;
  if (k == cap) return -1;
  n[k] = nf;
  return k + 1;
}

/* The equality solution delta u of the planes n[s[0..m-1]] (0), or -1
 * when they are dependent. */
static int candidate(const ce_vec3 *n, const int *s, int m, double delta, ce_vec3 *o) {
  if (m == 1) {
    *o = ce_scale(n[s[0]], delta);
    return 0;
  }
  if (m == 2) {
    double den = 1 + ce_dot(n[s[0]], n[s[1]]);
    if (!(den > 1e-9)) return -1;
    *o = ce_scale(ce_add(n[s[0]], n[s[1]]), delta / den);
    return 0;
  }
  const ce_vec3 n0 = n[s[0]], n1 = n[s[1]], n2 = n[s[2]];
  ce_vec3 a = ce_cross(n1, n2), b = ce_cross(n2, n0), c = ce_cross(n0, n1);
  double det = ce_dot(n0, a);
  if (!(fabs(det) > 1e-9)) return -1;
  *o = ce_scale(ce_add(a, ce_add(b, c)), delta / det);
  return 0;
}

static int feasible(const ce_vec3 *n, int k, double delta, ce_vec3 o) {
  for (int i = 0; i < k; i++)
    if (!(ce_dot(n[i], o) >= delta * (1 - FEASIBLE_TOL))) return 0;
  return 1;
}

int ce_offset_vertex(const ce_vec3 *n, int k, double delta, ce_vec3 *o) {
  /* KKT: a feasible candidate of one plane (multiplier 1) or two (equal
   * positive multipliers) is the optimum, so the search stops at the
   * first size that has one; three planes' multipliers may be negative,
   * so there the least norm decides */
  int s[3];
  for (s[0] = 0; s[0] < k; s[0]++)
    if (candidate(n, s, 1, delta, o) == 0 && feasible(n, k, delta, *o)) return 0;
  for (s[0] = 0; s[0] < k; s[0]++)
    for (s[1] = s[0] + 1; s[1] < k; s[1]++)
      if (candidate(n, s, 2, delta, o) == 0 && feasible(n, k, delta, *o)) return 0;
  double best = INFINITY;
  ce_vec3 c;
  for (s[0] = 0; s[0] < k; s[0]++)
    for (s[1] = s[0] + 1; s[1] < k; s[1]++)
      for (s[2] = s[1] + 1; s[2] < k; s[2]++)
        if (candidate(n, s, 3, delta, &c) == 0 && ce_dot(c, c) < best && feasible(n, k, delta, c)) {
          best = ce_dot(c, c);
          *o = c;
        }
  return isfinite(best) ? 0 : -1;
}

void ce_offset_layer_free(ce_offset_layer *L) {
  free(L->face);
  free(L->copy);
  free(L->vertex);
  free(L->o);
  memset(L, 0, sizeof *L);
}

/* The outward unit normal of the boundary face opposite local vertex i of
 * tet t. */
static ce_vec3 face_normal(const ce_tetmesh *m, int32_t t, int i) {
  const int32_t *q = m->tet[t];
  ce_vec3 a = m->v[q[ce_tet_face_vertex[i][0]]];
  ce_vec3 n = ce_normalize(ce_cross(ce_sub(m->v[q[ce_tet_face_vertex[i][1]]], a),
                                    ce_sub(m->v[q[ce_tet_face_vertex[i][2]]], a)));
  if (ce_dot(n, ce_sub(m->v[q[i]], a)) > 0) n = ce_neg(n);
  return n;
}

static int32_t corner_vertex(const ce_tetmesh *m, const ce_offset_layer *L, int32_t c) {
  return m->tet[L->face[c / 3][0]][ce_tet_face_vertex[L->face[c / 3][1]][c % 3]];
}

static int32_t root(int32_t *par, int32_t i) {
  while (par[i] != i) i = par[i] = par[par[i]];
  return i;
}

/* A corner's other vertex u (each corner has two) and the corner's local
 * index a at its vertex. */
typedef struct other {
  int32_t u, a;
} other;

static int other_cmp(const void *x, const void *y) {
  const other *p = x, *q = y;
  return p->u < q->u ? -1 : p->u > q->u ? 1 : p->a - q->a;
}

/* Scratch of one vertex's corners: their local parents (fans), their
 * other vertices (2 per corner), normals. */
typedef struct vscratch {
  int32_t *par;
  other *oth;
  ce_vec3 *n;
} vscratch;

/* The groups of vertex v's k corners cs (the copy each takes: group[c] a
 * corner of its group) and each group's offset og[group]. */
static void vertex_groups(const ce_tetmesh *m, ce_offset_layer *L, const ce_vec3 *fn, int32_t v, const int32_t *cs,
                          int32_t k, double delta, int planes, vscratch *w, int32_t *group, ce_vec3 *og) {
  int32_t no = 0;
  for (int32_t a = 0; a < k; a++) {
    w->par[a] = a;
    for (int x = 0; x < 3; x++) {
      int32_t u = corner_vertex(m, L, 3 * (cs[a] / 3) + x);
      if (u != v) w->oth[no++] = (other){u, a};
    }
  }
  /* fans: faces sharing a second vertex (sorted by it, O(k log k)) */
  qsort(w->oth, (size_t)no, sizeof *w->oth, other_cmp);
  for (int32_t i = 1; i < no; i++)
    if (w->oth[i].u == w->oth[i - 1].u) w->par[root(w->par, w->oth[i].a)] = root(w->par, w->oth[i - 1].a);
  for (int32_t r = 0; r < k; r++) {
    if (root(w->par, r) != r) continue;
    int kn = 0, split = 0;
    ce_vec3 o = ce_v3(0, 0, 0);
    for (int32_t a = 0; a < k && planes && kn >= 0; a++)
      if (root(w->par, a) == r) kn = ce_offset_add_normal(w->n, kn, CE_LIMIT_MARGIN_NORMALS, fn[cs[a] / 3]);
    if (planes)
      split = kn < 0 || ce_offset_vertex(w->n, kn, delta, &o) != 0 || !(ce_norm(o) <= CE_LIMIT_MARGIN_STRETCH * delta);
    L->nsplit += split;
    for (int32_t a = 0; a < k; a++) {
      if (root(w->par, a) != r) continue;
      group[cs[a]] = split ? cs[a] : cs[r];
      og[group[cs[a]]] = split ? ce_scale(fn[cs[a] / 3], delta) : o;
    }
  }
}

/* Numbers the groups as the faces first reach them: the copies. */
static void number_copies(const ce_tetmesh *m, ce_offset_layer *L, const int32_t *group, const ce_vec3 *og,
                          int32_t *num) {
  const int32_t nc = 3 * L->nbf;
  for (int32_t c = 0; c < nc; c++) num[c] = -1;
  for (int32_t c = 0; c < nc; c++) {
    const int32_t g = group[c];
    if (num[g] < 0) {
      num[g] = L->ncopy++;
      L->vertex[num[g]] = corner_vertex(m, L, c);
      L->o[num[g]] = og[g];
    }
    L->copy[c / 3][c % 3] = num[g];
  }
}

ce_errno ce_offset_layer_build(const ce_tetmesh *m, double delta, int planes, ce_offset_layer *L, ce_error *err) {
  memset(L, 0, sizeof *L);
  for (int32_t t = 0; t < m->nt; t++)
    for (int i = 0; i < 4; i++) L->nbf += m->adj[t][i] < 0;
  const size_t nc = 3 * (size_t)L->nbf;
  L->face = malloc((size_t)L->nbf * sizeof *L->face + 1);
  L->copy = malloc((size_t)L->nbf * sizeof *L->copy + 1);
  L->vertex = malloc(nc * sizeof *L->vertex + 1);
  L->o = malloc(nc * sizeof *L->o + 1);
  ce_vec3 *fn = malloc((size_t)L->nbf * sizeof *fn + 1), *og = malloc(nc * sizeof *og + 1);
  int32_t *first = calloc((size_t)m->nv + 1, sizeof *first), *cs = malloc(nc * sizeof *cs + 1);
  int32_t *group = malloc(nc * sizeof *group + 1), *num = malloc(nc * sizeof *num + 1);
  vscratch w = {NULL, NULL, malloc((size_t)CE_LIMIT_MARGIN_NORMALS * sizeof *w.n)};
  ce_errno e = CE_OK;
  if (!L->face || !L->copy || !L->vertex || !L->o || !fn || !og || !first || !cs || !group || !num || !w.n) {
    e = ce_fail(err, CE_ENOMEM, "margin: out of memory for %d boundary faces", (int)L->nbf);
    goto done;
  }
  int32_t f = 0;
  for (int32_t t = 0; t < m->nt; t++)
    for (int i = 0; i < 4; i++)
      if (m->adj[t][i] < 0) {
        L->face[f][0] = t, L->face[f][1] = i;
        fn[f++] = face_normal(m, t, i);
      }
  for (size_t c = 0; c < nc; c++) first[corner_vertex(m, L, (int32_t)c) + 1]++;
  int32_t maxk = 0;
  for (int32_t v = 0; v < m->nv; v++) {
    maxk = first[v + 1] > maxk ? first[v + 1] : maxk;
    first[v + 1] += first[v];
  }
  for (size_t c = 0; c < nc; c++) cs[first[corner_vertex(m, L, (int32_t)c)]++] = (int32_t)c;
  for (int32_t v = m->nv; v > 0; v--) first[v] = first[v - 1]; /* back to the starts */
  first[0] = 0;
  w.par = malloc((size_t)maxk * sizeof *w.par + 1);
  w.oth = malloc(2 * (size_t)maxk * sizeof *w.oth + 1);
  if (!w.par || !w.oth) {
    e = ce_fail(err, CE_ENOMEM, "margin: out of memory for a vertex of %d faces", (int)maxk);
    goto done;
  }
  for (int32_t v = 0; v < m->nv; v++)
    if (first[v + 1] > first[v])
      vertex_groups(m, L, fn, v, cs + first[v], first[v + 1] - first[v], delta, planes, &w, group, og);
  number_copies(m, L, group, og, num);
done:
  free(fn);
  free(og);
  free(first);
  free(cs);
  free(group);
  free(num);
  free(w.par);
  free(w.oth);
  free(w.n);
  if (e != CE_OK) ce_offset_layer_free(L);
  return e;
}
