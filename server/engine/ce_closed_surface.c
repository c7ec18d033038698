/* ce_closed_surface.c — a closed triangle surface as tetrahedralisation
 * input (ce_tetrahedralize.c): the check that it is a closed 2-manifold
 * with consistent winding, the volume it encloses, and an AABB tree over
 * its triangles answering two queries: the closest surface point, and
 * every crossing of a vertical line with the surface (signed by the
 * triangle's facing, for winding numbers). Deterministic: no dependence on
 * addresses or threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_closed_surface.h"
#include "ce_internal.h"
#include "ce_predicates.h"

/* ---- AABB tree over triangles ---------------------------------------------- */

typedef struct sortkey {
  double c;
  int32_t i;
} sortkey;
static int sortkey_cmp(const void *pa, const void *pb) {
  const sortkey *a = pa, *b = pb;
  if (a->c < b->c) return -1;
  if (a->c > b->c) return 1;
  return (a->i > b->i) - (a->i < b->i);
}

static int32_t tree_build_rec(ce_tri_tree *T, sortkey *tmp, const ce_vec3 *cen, int32_t first, int32_t count) {
  int32_t id = T->nn++;
  ce_tri_tree_node *nd = &T->n[id];
  for (int k = 0; k < 3; k++) {
    nd->lo[k] = INFINITY;
    nd->hi[k] = -INFINITY;
  }
  for (int32_t q = first; q < first + count; q++) {
    const int32_t *t = T->t[T->order[q]];
    for (int j = 0; j < 3; j++) {
      ce_vec3 p = T->v[t[j]];
      double c[3] = {p.x, p.y, p.z};
      for (int k = 0; k < 3; k++) {
        nd->lo[k] = fmin(nd->lo[k], c[k]);
        nd->hi[k] = fmax(nd->hi[k], c[k]);
      }
    }
  }
  if (count <= 4) {
    nd->left = nd->right = -1;
    nd->first = first;
    nd->count = count;
    return id;
  }
  int ax = 0;
  double ext = -1;
  for (int k = 0; k < 3; k++)
    if (nd->hi[k] - nd->lo[k] > ext) {
      ext = nd->hi[k] - nd->lo[k];
      ax = k;
    }
  for (int32_t q = 0; q < count; q++) {
    int32_t f = T->order[first + q];
    tmp[q].c = ce_v3_get(cen[f], ax);
    tmp[q].i = f;
  }
  qsort(tmp, (size_t)count, sizeof *tmp, sortkey_cmp);
  for (int32_t q = 0; q < count; q++) T->order[first + q] = tmp[q].i;
  int32_t half = count / 2;
  int32_t l = tree_build_rec(T, tmp, cen, first, half);
  int32_t r = tree_build_rec(T, tmp, cen, first + half, count - half);
  T->n[id].left = l;
  T->n[id].right = r;
  T->n[id].first = first;
  T->n[id].count = count;
  return id;
}

ce_errno ce_tri_tree_build(ce_tri_tree *T, const ce_vec3 *v, const int32_t (*t)[3], int32_t nf, ce_error *err) {
  memset(T, 0, sizeof *T);
  T->v = v;
  T->t = t;
  T->n = malloc((size_t)(2 * nf) * sizeof *T->n);
  T->order = malloc((size_t)nf * sizeof *T->order);
  sortkey *tmp = malloc((size_t)nf * sizeof *tmp);
  ce_vec3 *cen = malloc((size_t)nf * sizeof *cen);
  if (!T->n || !T->order || !tmp || !cen) {
    free(tmp);
    free(cen);
    return ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory for the triangle tree (%d triangles)", (int)nf);
  }
  for (int32_t f = 0; f < nf; f++) {
    T->order[f] = f;
    cen[f] = ce_scale(ce_add(ce_add(v[t[f][0]], v[t[f][1]]), v[t[f][2]]), 1.0 / 3);
  }
  tree_build_rec(T, tmp, cen, 0, nf);
  free(tmp);
  free(cen);
  return CE_OK;
}

void ce_tri_tree_free(ce_tri_tree *T) {
  free(T->n);
  free(T->order);
}

static double box_dist2(const ce_tri_tree_node *n, ce_vec3 p) {
  double c[3] = {p.x, p.y, p.z}, s = 0;
  for (int k = 0; k < 3; k++) {
    double d = c[k] < n->lo[k] ? n->lo[k] - c[k] : (c[k] > n->hi[k] ? c[k] - n->hi[k] : 0);
    s += d * d;
  }
  return s;
}

/* Closest surface point to p; returns the squared distance. */
double ce_tri_tree_closest(const ce_tri_tree *T, ce_vec3 p, ce_vec3 *out, int32_t *stack) {
  double best = INFINITY;
  int32_t sp = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const ce_tri_tree_node *n = &T->n[stack[--sp]];
    if (box_dist2(n, p) >= best) continue;
    if (n->left < 0) {
      for (int32_t q = n->first; q < n->first + n->count; q++) {
        const int32_t *t = T->t[T->order[q]];
        ce_vec3 c = ce_closest_point_triangle(p, T->v[t[0]], T->v[t[1]], T->v[t[2]]);
        double d = ce_norm2(ce_sub(c, p));
        if (d < best) {
          best = d;
          *out = c;
        }
      }
      continue;
    }
    double dl = box_dist2(&T->n[n->left], p), dr = box_dist2(&T->n[n->right], p);
    if (dl <= dr) {
      stack[sp++] = n->right;
      stack[sp++] = n->left;
    } else {
      stack[sp++] = n->left;
      stack[sp++] = n->right;
    }
  }
  return best;
}

/* Edge function of the canonical directed edge (lower index first) at
 * (px, py); the sign flips for the opposite direction, exactly. */
static double edge_fn(const ce_vec3 *v, int32_t i, int32_t j, double px, double py, int *flip) {
  *flip = 0;
  if (i > j) {
    int32_t t = i;
    i = j;
    j = t;
    *flip = 1;
  }
  ce_vec3 a = v[i], b = v[j];
  return (b.x - a.x) * (py - a.y) - (b.y - a.y) * (px - a.x);
}

int ce_ray_crossing_cmp(const void *pa, const void *pb) {
  const ce_ray_crossing *a = pa, *b = pb;
  if (a->z < b->z) return -1;
  if (a->z > b->z) return 1;
  return (a->sign > b->sign) - (a->sign < b->sign);
}

/* All crossings of the vertical line through (px, py) with the surface. */
ce_errno ce_tri_tree_vertical(const ce_tri_tree *T, double px, double py, int32_t *stack, ce_ray_crossing **buf,
                              int32_t *cap, int32_t *count) {
  int32_t sp = 0, nc = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const ce_tri_tree_node *n = &T->n[stack[--sp]];
    if (px < n->lo[0] || px > n->hi[0] || py < n->lo[1] || py > n->hi[1]) continue;
    if (n->left >= 0) {
      stack[sp++] = n->left;
      stack[sp++] = n->right;
      continue;
    }
    for (int32_t q = n->first; q < n->first + n->count; q++) {
      const int32_t *t = T->t[T->order[q]];
      double w[3];
      int pos = 0, neg = 0;
      for (int k = 0; k < 3; k++) {
        int flip;
        double e = edge_fn(T->v, t[(k + 1) % 3], t[(k + 2) % 3], px, py, &flip);
        /* canonical tie rule: a zero counts as positive for the canonical
         * direction, so it is negative for the flipped one */
        int s = e > 0 || (e == 0 && !flip) ? 1 : -1;
        if (flip) {
          e = -e;
          s = -s;
        }
        w[k] = e;
        if (s > 0) pos++;
        else neg++;
      }
      if (pos != 3 && neg != 3) continue;
      double sum = w[0] + w[1] + w[2];
      if (sum == 0) continue; /* vertical triangle: no crossing */
      ce_vec3 a = T->v[t[0]], b = T->v[t[1]], c = T->v[t[2]];
      double z = (w[0] * a.z + w[1] * b.z + w[2] * c.z) / sum;
      if (nc == *cap) {
        int32_t nc2 = *cap ? *cap * 2 : 64;
        ce_ray_crossing *nb = realloc(*buf, (size_t)nc2 * sizeof **buf);
        if (!nb) return CE_ENOMEM;
        *buf = nb;
        *cap = nc2;
      }
      (*buf)[nc].z = z;
      (*buf)[nc].sign = pos == 3 ? 1 : -1; /* counter-clockwise seen from +z: normal up */
      nc++;
    }
  }
  *count = nc;
  return CE_OK;
}

/* ---- surface checks --------------------------------------------------------- */

typedef struct ekey {
  int32_t lo, hi;
  int32_t f;
  int8_t fwd;
} ekey;
static int ekey_cmp(const void *pa, const void *pb) {
  const ekey *a = pa, *b = pb;
  if (a->lo != b->lo) return (a->lo > b->lo) - (a->lo < b->lo);
  if (a->hi != b->hi) return (a->hi > b->hi) - (a->hi < b->hi);
  return (a->f > b->f) - (a->f < b->f);
}

/* CE_OK for a closed 2-manifold with consistent winding. */
ce_errno ce_surface_check_closed(const int32_t (*t)[3], int32_t nf, ce_error *err) {
  ekey *k = malloc((size_t)nf * 3 * sizeof *k);
  if (!k) return ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory for %d edges", (int)(3 * nf));
  for (int32_t f = 0; f < nf; f++)
    for (int j = 0; j < 3; j++) {
      int32_t a = t[f][j], b = t[f][(j + 1) % 3];
      ekey *e = &k[3 * (size_t)f + j];
      e->lo = a < b ? a : b;
      e->hi = a < b ? b : a;
      e->f = f;
      e->fwd = a < b;
    }
  qsort(k, (size_t)nf * 3, sizeof *k, ekey_cmp);
  ce_errno e = CE_OK;
  for (int64_t i = 0; i < (int64_t)nf * 3;) {
    int64_t j = i;
    while (j < (int64_t)nf * 3 && k[j].lo == k[i].lo && k[j].hi == k[i].hi) j++;
    if (j - i == 1) {
      e = ce_fail(err, CE_EOPEN, "surface is not closed: edge (%d, %d) of triangle %d has no neighbour", (int)k[i].lo,
                  (int)k[i].hi, (int)k[i].f);
      break;
    }
    if (j - i > 2) {
      e = ce_fail(err, CE_EDEGENERATE, "surface is not a manifold: edge (%d, %d) is shared by %d triangles",
                  (int)k[i].lo, (int)k[i].hi, (int)(j - i));
      break;
    }
    if (k[i].fwd == k[i + 1].fwd) {
      e = ce_fail(err, CE_EDEGENERATE,
                  "surface winding is inconsistent: triangles %d and %d run edge (%d, %d) the same way", (int)k[i].f,
                  (int)k[i + 1].f, (int)k[i].lo, (int)k[i].hi);
      break;
    }
    i = j;
  }
  free(k);
  return e;
}

double ce_surface_enclosed_volume(const ce_vec3 *v, const int32_t (*t)[3], int32_t nf) {
  double s = 0;
  for (int32_t f = 0; f < nf; f++) s += ce_dot(v[t[f][0]], ce_cross(v[t[f][1]], v[t[f][2]]));
  return s / 6;
}
