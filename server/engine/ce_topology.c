/* ce_topology.c — the topology of tet and triangle meshes: shared faces
 * and edges (adjacency, boundary faces, winding and manifold checks),
 * connected components, and whether a closed surface bounds a convex body.
 *
 * Faces and edges are paired by sorting integer keys (vertex indices, then
 * element, then local index), so the results are deterministic and the
 * work O(n log n). */
#include <stdlib.h>
#include <string.h>

#include "ce_mesh.h"
#include "ce_internal.h"
#include "ce_progress.h"

typedef struct face_key {
  int32_t v[3];  /* sorted vertex indices */
  int32_t t;     /* tet */
  int8_t i;      /* local face: opposite vertex i */
  int8_t sign;   /* parity of the permutation sorting the outward triple */
} face_key;

static int face_key_cmp(const void *pa, const void *pb) {
  const face_key *a = pa, *b = pb;
  for (int k = 0; k < 3; k++)
    if (a->v[k] != b->v[k]) return a->v[k] < b->v[k] ? -1 : 1;
  if (a->t != b->t) return a->t < b->t ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Local vertices of the face opposite vertex i, ordered counter-clockwise
 * seen from outside a positively oriented tet. */
const int ce_tet_face_vertex[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};

/* Sorts keys (of `size` bytes) bucket by bucket with cmp: bucket v holds
 * keys [end[v - 1], end[v]) (from 0 for v = 0), nb buckets. Reports the
 * fraction of keys sorted to prog every 65,536 keys (~5 ms). */
static ce_errno sort_buckets(void *keys, size_t size, const int64_t *end, int32_t nb,
                             int (*cmp)(const void *, const void *), const ce_buildprog *prog, ce_error *err) {
  const int64_t n = nb > 0 ? end[nb - 1] : 0;
  int64_t reported = 0;
  for (int32_t v = 0; v < nb; v++) {
    const int64_t first = v == 0 ? 0 : end[v - 1];
    if (end[v] - first > 1) qsort((char *)keys + (size_t)first * size, (size_t)(end[v] - first), size, cmp);
    if (end[v] - reported >= 65536) {
      reported = end[v];
      ce_errno e = ce_buildprog_report(prog, (double)reported / (double)n, err);
      if (e != CE_OK) return e;
    }
  }
  return CE_OK;
}

static void sort3(int32_t v[3], int8_t *sign) {
  int s = 1;
  int32_t t;
  if (v[0] > v[1]) { t = v[0]; v[0] = v[1]; v[1] = t; s = -s; }
  if (v[1] > v[2]) { t = v[1]; v[1] = v[2]; v[2] = t; s = -s; }
  if (v[0] > v[1]) { t = v[0]; v[0] = v[1]; v[1] = t; s = -s; }
  *sign = (int8_t)s;
}

/* Fills adjacency, marks boundary vertices, and lists boundary faces as
 * (tet, local face) pairs in *bfaces (malloc'd, *nb entries) when asked.
 * The faces are sorted by (sorted vertex triple, tet, local face): first
 * into buckets by their smallest vertex, then each bucket (a vertex's
 * faces, a few dozen) on its own, which is the same order as one sort of
 * all of them, in a fraction of the time, and leaves room for progress
 * reports (prog, [0, 1]) between buckets. */
ce_errno ce_tet_faces(ce_tetmesh *m, unsigned char *boundary, int32_t (**bfaces)[2], int64_t *nb,
                      const ce_buildprog *prog, ce_error *err) {
  int64_t nk = (int64_t)m->nt * 4;
  face_key *keys = malloc((size_t)nk * sizeof *keys);
  int64_t *end = calloc((size_t)m->nv + 1, sizeof *end);
  if (!keys || !end) {
    free(keys);
    free(end);
    return ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for %lld face keys", (long long)nk);
  }
  /* bucket v holds the faces whose smallest vertex is v: count them, then
   * place each face at its bucket's cursor (end[v] ends as the bucket's end) */
  for (int32_t t = 0; t < m->nt; t++)
    for (int i = 0; i < 4; i++) {
      const int32_t *tv = m->tet[t];
      int32_t lo = tv[ce_tet_face_vertex[i][0]];
      if (tv[ce_tet_face_vertex[i][1]] < lo) lo = tv[ce_tet_face_vertex[i][1]];
      if (tv[ce_tet_face_vertex[i][2]] < lo) lo = tv[ce_tet_face_vertex[i][2]];
      end[lo + 1]++;
    }
  for (int32_t v = 0; v < m->nv; v++) end[v + 1] += end[v];
  for (int32_t t = 0; t < m->nt; t++)
    for (int i = 0; i < 4; i++) {
      face_key k;
      for (int j = 0; j < 3; j++) k.v[j] = m->tet[t][ce_tet_face_vertex[i][j]];
      sort3(k.v, &k.sign);
      k.t = t;
      k.i = (int8_t)i;
      keys[end[k.v[0]]++] = k;
      m->adj[t][i] = -1;
    }
  ce_errno e = sort_buckets(keys, sizeof *keys, end, m->nv, face_key_cmp, prog, err);
  if (e != CE_OK) goto done;
  int64_t nbound = 0;
  for (int64_t s = 0; s < nk;) {
    int64_t r = s + 1;
    while (r < nk && memcmp(keys[r].v, keys[s].v, sizeof keys[s].v) == 0) r++;
    int64_t run = r - s;
    const face_key *a = &keys[s];
    if (run == 1) {
      for (int j = 0; j < 3; j++) boundary[a->v[j]] = 1;
      nbound++;
    } else if (run == 2) {
      const face_key *b = &keys[s + 1];
      if (a->sign == b->sign) {
        e = ce_fail(err, CE_EDEGENERATE,
                    "tets %d and %d lie on the same side of their shared face (%d, %d, %d): they overlap",
                    (int)a->t, (int)b->t, (int)a->v[0], (int)a->v[1], (int)a->v[2]);
        goto done;
      }
      m->adj[a->t][a->i] = b->t;
      m->adj[b->t][b->i] = a->t;
    } else {
      e = ce_fail(err, CE_EDEGENERATE,
                  "face (%d, %d, %d) is shared by %lld tets (%d, %d, %d%s): mesh is not manifold",
                  (int)a->v[0], (int)a->v[1], (int)a->v[2], (long long)run, (int)keys[s].t,
                  (int)keys[s + 1].t, (int)keys[s + 2].t, run > 3 ? ", ..." : "");
      goto done;
    }
    s = r;
  }
  if (bfaces) {
    *nb = nbound;
    *bfaces = malloc((size_t)(nbound > 0 ? nbound : 1) * sizeof **bfaces);
    if (!*bfaces) {
      e = ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for %lld boundary faces", (long long)nbound);
      goto done;
    }
    int64_t n = 0;
    for (int64_t s = 0; s < nk;) {
      int64_t r = s + 1;
      while (r < nk && memcmp(keys[r].v, keys[s].v, sizeof keys[s].v) == 0) r++;
      if (r - s == 1) {
        (*bfaces)[n][0] = keys[s].t;
        (*bfaces)[n][1] = keys[s].i;
        n++;
      }
      s = r;
    }
  }
done:
  free(keys);
  free(end);
  return e;
}

/* Labels the components of n elements joined across shared sides (adj: k
 * neighbours per element, -1 none) in comp, numbered in the order of their
 * lowest element; stack: n entries of scratch. Returns the count. */
static int32_t label_components(int32_t n, const int32_t *adj, int k, int32_t *comp, int32_t *stack) {
  for (int32_t e = 0; e < n; e++) comp[e] = -1;
  int32_t nc = 0;
  for (int32_t e0 = 0; e0 < n; e0++) {
    if (comp[e0] >= 0) continue;
    int32_t top = 0;
    stack[top++] = e0;
    comp[e0] = nc;
    while (top > 0) {
      const int32_t *nb = adj + (size_t)stack[--top] * (size_t)k;
      for (int i = 0; i < k; i++)
        if (nb[i] >= 0 && comp[nb[i]] < 0) {
          comp[nb[i]] = nc;
          stack[top++] = nb[i];
        }
    }
    nc++;
  }
  return nc;
}

/* The components of the tets across shared faces (m->ncomp, comp,
 * comp_first; see ce_tetmesh), numbered in the order of their lowest tet. */
ce_errno ce_tet_components(ce_tetmesh *m, ce_error *err) {
  const int32_t nt = m->nt;
  m->comp = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *m->comp);
  int32_t *stack = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *stack);
  if (!m->comp || !stack) {
    free(stack);
    return ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for %d component marks", (int)nt);
  }
  const int32_t nc = label_components(nt, &m->adj[0][0], 4, m->comp, stack);
  free(stack);
  m->ncomp = nc;
  m->comp_first = malloc((size_t)(nc > 0 ? nc : 1) * sizeof *m->comp_first);
  if (!m->comp_first) return ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for %d components", (int)nc);
  for (int32_t t = nt - 1; t >= 0; t--) m->comp_first[m->comp[t]] = t;
  if (nc <= 1) { /* every tet in component 0 */
    free(m->comp);
    m->comp = NULL;
  }
  return CE_OK;
}

typedef struct edge_key {
  int32_t lo, hi; /* vertex indices, lo < hi */
  int32_t f;      /* triangle */
  int8_t i;       /* local edge (i, i + 1 mod 3) */
  int8_t fwd;     /* 1 when the triangle runs lo -> hi */
} edge_key;

static int edge_key_cmp(const void *pa, const void *pb) {
  const edge_key *a = pa, *b = pb;
  if (a->lo != b->lo) return a->lo < b->lo ? -1 : 1;
  if (a->hi != b->hi) return a->hi < b->hi ? -1 : 1;
  if (a->f != b->f) return a->f < b->f ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Counts the connected components of the triangles across shared edges
 * (m->ncomp; surface tracing needs to know whether one walk covers all).
 * With keep, also stores each triangle's component and the triangles of
 * each component (m->comp, comp_off, comp_tris): a component the walk
 * never reaches is tested for lying inside the compliant body through one
 * of its vertices, and then evaluated triangle by triangle. */
ce_errno ce_tri_components(ce_trimesh *m, int keep, ce_error *err) {
  const size_t n = (size_t)(m->nf > 0 ? m->nf : 1);
  int32_t *stack = malloc(n * sizeof *stack), *comp = malloc(n * sizeof *comp);
  if (!stack || !comp) {
    free(stack);
    free(comp);
    return ce_fail(err, CE_ENOMEM, "triangle mesh: out of memory for %d component marks", (int)m->nf);
  }
  const int32_t nc = label_components(m->nf, &m->adj[0][0], 3, comp, stack);
  m->ncomp = nc;
  if (!keep) {
    free(stack);
    free(comp);
    return CE_OK;
  }
  int32_t *off = calloc((size_t)nc + 1, sizeof *off), *tris = malloc(n * sizeof *tris);
  if (!off || !tris) {
    free(stack);
    free(comp);
    free(off);
    free(tris);
    return ce_fail(err, CE_ENOMEM, "triangle mesh: out of memory for %d components", (int)nc);
  }
  /* counting sort by component (the stack, nc <= nf long, holds each
   * component's fill position): ascending triangles within each */
  for (int32_t f = 0; f < m->nf; f++) off[comp[f] + 1]++;
  for (int32_t c = 0; c < nc; c++) off[c + 1] += off[c];
  int32_t *pos = stack;
  for (int32_t c = 0; c < nc; c++) pos[c] = off[c];
  for (int32_t f = 0; f < m->nf; f++) tris[pos[comp[f]]++] = f;
  free(stack);
  m->comp = comp;
  m->comp_off = off;
  m->comp_tris = tris;
  return CE_OK;
}

/* Sets adjacency; *open = number of edges with a single triangle. The
 * edges are sorted by (lo, hi, triangle, local edge) as ce_tet_faces sorts
 * faces: into buckets by lo, then each bucket (a vertex's edges) on its
 * own, with progress reports (prog, [0, 1]) between buckets. */
ce_errno ce_tri_edges(ce_trimesh *m, int require_closed, const ce_buildprog *prog, int64_t *open,
                      ce_error *err) {
  int64_t nk = (int64_t)m->nf * 3;
  edge_key *keys = malloc((size_t)nk * sizeof *keys);
  int64_t *end = calloc((size_t)m->nv + 1, sizeof *end);
  if (!keys || !end) {
    free(keys);
    free(end);
    return ce_fail(err, CE_ENOMEM, "triangle mesh: out of memory for %lld edge keys", (long long)nk);
  }
  /* bucket v: the edges whose lower vertex is v (end[v] ends as its end) */
  for (int32_t f = 0; f < m->nf; f++)
    for (int i = 0; i < 3; i++) {
      int32_t a = m->tri[f][i], b = m->tri[f][(i + 1) % 3];
      end[(a < b ? a : b) + 1]++;
    }
  for (int32_t v = 0; v < m->nv; v++) end[v + 1] += end[v];
  for (int32_t f = 0; f < m->nf; f++)
    for (int i = 0; i < 3; i++) {
      int32_t a = m->tri[f][i], b = m->tri[f][(i + 1) % 3];
      edge_key *k = &keys[end[a < b ? a : b]++];
      k->lo = a < b ? a : b;
      k->hi = a < b ? b : a;
      k->f = f;
      k->i = (int8_t)i;
      k->fwd = (int8_t)(a < b);
      m->adj[f][i] = -1;
    }
  ce_errno e = sort_buckets(keys, sizeof *keys, end, m->nv, edge_key_cmp, prog, err);
  if (e != CE_OK) goto done;
  int64_t nopen = 0;
  for (int64_t s = 0; s < nk;) {
    int64_t r = s + 1;
    while (r < nk && keys[r].lo == keys[s].lo && keys[r].hi == keys[s].hi) r++;
    int64_t run = r - s;
    const edge_key *a = &keys[s];
    if (run == 1) {
      if (require_closed) {
        e = ce_fail(err, CE_EOPEN, "edge (%d, %d) of triangle %d has no neighbour: mesh is open",
                    (int)m->tri[a->f][a->i], (int)m->tri[a->f][(a->i + 1) % 3], (int)a->f);
        goto done;
      }
      nopen++;
    } else if (run == 2) {
      const edge_key *b = &keys[s + 1];
      if (a->fwd == b->fwd) {
        e = ce_fail(err, CE_EDEGENERATE,
                    "edge (%d, %d) is used in the same direction by triangles %d and %d: inconsistent winding",
                    (int)m->tri[a->f][a->i], (int)m->tri[a->f][(a->i + 1) % 3], (int)a->f, (int)b->f);
        goto done;
      }
      m->adj[a->f][a->i] = b->f;
      m->adj[b->f][b->i] = a->f;
    } else {
      e = ce_fail(err, CE_EDEGENERATE, "edge (%d, %d) is shared by %lld triangles (%d, %d, %d%s): mesh is not manifold",
                  (int)a->lo, (int)a->hi, (long long)run, (int)keys[s].f, (int)keys[s + 1].f, (int)keys[s + 2].f,
                  run > 3 ? ", ..." : "");
      goto done;
    }
    s = r;
  }
  *open = nopen;
done:
  free(keys);
  free(end);
  return e;
}

/* Whether the closed surface m (adjacency and components counted, outward
 * unit normals) bounds a convex body: one piece, and across every edge the
 * neighbour's vertices lie on or below the face's plane (within tol). A
 * connected closed surface that is convex at every edge is convex, so this
 * is linear in the faces (the point-contact model replaces a non-convex
 * mesh by its hull and says so; see ce_mtd.c). */
int ce_trimesh_convex(const ce_trimesh *m, double tol) {
  if (m->ncomp != 1) return 0;
  for (int32_t f = 0; f < m->nf; f++) {
    ce_vec3 n = m->normal[f], p0 = m->v[m->tri[f][0]];
    for (int e = 0; e < 3; e++) {
      int32_t g = m->adj[f][e];
      if (g < 0) return 0;
      for (int k = 0; k < 3; k++)
        if (ce_dot(n, ce_sub(m->v[m->tri[g][k]], p0)) > tol) return 0;
    }
  }
  return 1;
}

/* The same for a tet mesh's boundary (its nb faces as (tet, local face)):
 * the faces wound outward as a temporary triangle mesh, paired by edges
 * (a boundary that is not a closed manifold surface is not convex). */
ce_errno ce_tet_boundary_convex(const ce_tetmesh *t, const int32_t (*bfaces)[2], int64_t nb, double tol,
                                const ce_buildprog *prog, int *convex, ce_error *err) {
  *convex = 0;
  if (nb < 4 || nb > INT32_MAX) return CE_OK;
  ce_trimesh m;
  memset(&m, 0, sizeof m);
  m.nv = t->nv;
  m.nf = (int32_t)nb;
  m.v = t->v;
  m.tri = malloc((size_t)nb * sizeof *m.tri);
  m.normal = malloc((size_t)nb * sizeof *m.normal);
  m.adj = malloc((size_t)nb * sizeof *m.adj);
  ce_errno e = CE_OK;
  if (!m.tri || !m.normal || !m.adj) {
    e = ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for %lld boundary faces", (long long)nb);
    goto done;
  }
  for (int64_t f = 0; f < nb; f++) {
    const int32_t *tv = t->tet[bfaces[f][0]];
    const int i = bfaces[f][1];
    for (int j = 0; j < 3; j++) m.tri[f][j] = tv[ce_tet_face_vertex[i][j]];
    ce_vec3 a = t->v[m.tri[f][0]];
    ce_vec3 n = ce_cross(ce_sub(t->v[m.tri[f][1]], a), ce_sub(t->v[m.tri[f][2]], a));
    m.normal[f] = ce_scale(n, 1.0 / ce_norm(n)); /* tets of zero volume were rejected */
  }
  int64_t open = 0;
  /* an open, non-manifold or inconsistently wound boundary is not convex */
  ce_error te_err;
  ce_errno te = ce_tri_edges(&m, 1, prog, &open, &te_err);
  if (te == CE_ENOMEM) e = ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for boundary edges");
  if (te == CE_ECANCELED) {
    e = te;
    if (err) *err = te_err;
  }
  if (te != CE_OK) goto done;
  if ((e = ce_tri_components(&m, 0, err)) != CE_OK) goto done;
  *convex = ce_trimesh_convex(&m, tol);
done:
  free(m.tri);
  free(m.normal);
  free(m.adj);
  return e;
}
