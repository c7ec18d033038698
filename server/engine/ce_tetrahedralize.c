/* ce_tetrahedralize.c — compliant geometry from a closed surface.
 *
 * Method (a simplified isosurface stuffing, after Labelle & Shewchuk 2007):
 *  1. The surface must be a closed 2-manifold with outward winding (every
 *     edge used once in each direction, positive enclosed volume);
 *     otherwise CE_EOPEN / CE_EDEGENERATE, or its convex hull
 *     (ce_build_convex) when use_hull_if_open.
 *  2. A body-centred cubic lattice of cube size a = edge length covers the
 *     surface's box plus one cell. Its tets (two cube centres and an edge
 *     of their shared face) have dihedral angles of 60 and 90 degrees.
 *  3. Inside test: the winding number of every lattice vertex, from the
 *     signed crossings of its vertical lattice line with the triangles
 *     (one ray per line through a triangle AABB tree; edge functions
 *     evaluated in a canonical vertex order so a line through a shared
 *     edge is counted exactly once). A winding number other than 0 or 1
 *     means the surface overlaps itself (CE_EDEGENERATE).
 *  4. Tets with an inside vertex are kept. Their outside vertices, and
 *     inside vertices closer than 0.3 a to the surface, are warped to the
 *     closest surface point, one vertex at a time in index order; a move
 *     is shortened (1, 1/2, 1/4, 1/8, 0) until every tet around the vertex
 *     keeps its smallest dihedral angle >= CE_TETRAHEDRALIZE_MIN_DIHEDRAL_DEG.
 *     Hence the quality bound holds by construction; where a move had to be
 *     shortened the boundary stays up to a cell off the surface, which the
 *     reported volume error measures.
 * Deterministic: no dependence on addresses or threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_limits.h"
#include "ce_predicates.h"
#include "ce_validate.h"

#define WARP_NEAR 0.3 /* inside vertices closer than WARP_NEAR * a are warped */

void ce_surface_build_options_default(ce_surface_build_options *o) {
  memset(o, 0, sizeof *o);
  o->field = CE_FIELD_LAPLACE;
}

/* ---- dihedral angles -------------------------------------------------------- */

/* Smallest and largest dihedral angle (radians) and signed volume * 6. */
static void tet_quality(const ce_vec3 x[4], double *mind, double *maxd, double *vol6) {
  static const int F[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};
  ce_vec3 n[4];
  for (int f = 0; f < 4; f++)
    n[f] = ce_normalize(ce_cross(ce_sub(x[F[f][1]], x[F[f][0]]), ce_sub(x[F[f][2]], x[F[f][0]])));
  double lo = INFINITY, hi = 0;
  for (int i = 0; i < 4; i++)
    for (int j = i + 1; j < 4; j++) {
      double c = -ce_dot(n[i], n[j]);
      c = c > 1 ? 1 : (c < -1 ? -1 : c);
      double ang = acos(c);
      lo = fmin(lo, ang);
      hi = fmax(hi, ang);
    }
  *mind = lo;
  *maxd = hi;
  *vol6 = ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0])));
}

/* ---- AABB tree over triangles ---------------------------------------------- */

typedef struct tnode {
  double lo[3], hi[3];
  int32_t left, right; /* left < 0: leaf over order[first .. first+count) */
  int32_t first, count;
} tnode;

typedef struct ttree {
  tnode *n;
  int32_t nn;
  int32_t *order;
  const ce_vec3 *v;
  const int32_t (*t)[3];
} ttree;

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

static int32_t tree_build_rec(ttree *T, sortkey *tmp, const ce_vec3 *cen, int32_t first, int32_t count) {
  int32_t id = T->nn++;
  tnode *nd = &T->n[id];
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

static ce_errno tree_build(ttree *T, const ce_vec3 *v, const int32_t (*t)[3], int32_t nf, ce_error *err) {
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

static void tree_free(ttree *T) {
  free(T->n);
  free(T->order);
}

static double box_dist2(const tnode *n, ce_vec3 p) {
  double c[3] = {p.x, p.y, p.z}, s = 0;
  for (int k = 0; k < 3; k++) {
    double d = c[k] < n->lo[k] ? n->lo[k] - c[k] : (c[k] > n->hi[k] ? c[k] - n->hi[k] : 0);
    s += d * d;
  }
  return s;
}

/* Closest surface point to p; returns the squared distance. */
static double tree_closest(const ttree *T, ce_vec3 p, ce_vec3 *out, int32_t *stack) {
  double best = INFINITY;
  int32_t sp = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const tnode *n = &T->n[stack[--sp]];
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

typedef struct crossing {
  double z;
  int sign;
} crossing;
static int crossing_cmp(const void *pa, const void *pb) {
  const crossing *a = pa, *b = pb;
  if (a->z < b->z) return -1;
  if (a->z > b->z) return 1;
  return (a->sign > b->sign) - (a->sign < b->sign);
}

/* All crossings of the vertical line through (px, py) with the surface. */
static ce_errno tree_vertical(const ttree *T, double px, double py, int32_t *stack, crossing **buf, int32_t *cap,
                              int32_t *count) {
  int32_t sp = 0, nc = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const tnode *n = &T->n[stack[--sp]];
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
        crossing *nb = realloc(*buf, (size_t)nc2 * sizeof **buf);
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
static ce_errno check_closed(const int32_t (*t)[3], int32_t nf, ce_error *err) {
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

static double enclosed_volume(const ce_vec3 *v, const int32_t (*t)[3], int32_t nf) {
  double s = 0;
  for (int32_t f = 0; f < nf; f++) s += ce_dot(v[t[f][0]], ce_cross(v[t[f][1]], v[t[f][2]]));
  return s / 6;
}

/* ---- the lattice ------------------------------------------------------------- */

typedef struct lattice {
  double a;
  ce_vec3 o;        /* corner (0,0,0) */
  int32_t nx, ny, nz; /* cells */
} lattice;

/* corner (i,j,k), 0 <= i <= nx; centre (i,j,k), 0 <= i < nx */
static int64_t corner_id(const lattice *L, int64_t i, int64_t j, int64_t k) {
  return (k * (L->ny + 1) + j) * (L->nx + 1) + i;
}
static int64_t centre_id(const lattice *L, int64_t i, int64_t j, int64_t k) {
  return (int64_t)(L->nx + 1) * (L->ny + 1) * (L->nz + 1) + (k * L->ny + j) * L->nx + i;
}
static ce_vec3 lattice_pos(const lattice *L, int64_t id) {
  int64_t nc = (int64_t)(L->nx + 1) * (L->ny + 1) * (L->nz + 1);
  if (id < nc) {
    int64_t i = id % (L->nx + 1), j = (id / (L->nx + 1)) % (L->ny + 1), k = id / ((int64_t)(L->nx + 1) * (L->ny + 1));
    return ce_v3(L->o.x + L->a * (double)i, L->o.y + L->a * (double)j, L->o.z + L->a * (double)k);
  }
  id -= nc;
  int64_t i = id % L->nx, j = (id / L->nx) % L->ny, k = id / ((int64_t)L->nx * L->ny);
  return ce_v3(L->o.x + L->a * ((double)i + 0.5), L->o.y + L->a * ((double)j + 0.5), L->o.z + L->a * ((double)k + 0.5));
}

/* Report progress; CE_ECANCELED when the callback asks the build to stop
 * (every caller then frees what it holds through its error path). */
static ce_errno progress(const ce_surface_build_options *o, double f, const char *stage, ce_error *err) {
  if (o && o->progress && o->progress(o->progress_user, f, stage))
    return ce_fail(err, CE_ECANCELED, "%s: build cancelled", strcmp(stage, "finish") ? stage : "surface build");
  return CE_OK;
}

/* Winding number of every lattice vertex (int8), one vertical ray per
 * lattice line. */
static ce_errno classify(const lattice *L, const ttree *T, int8_t *wind, const ce_surface_build_options *opt,
                         ce_error *err) {
  int32_t *stack = malloc((size_t)(T->nn + 1) * sizeof *stack);
  crossing *buf = NULL;
  int32_t cap = 0;
  ce_errno e = CE_OK;
  if (!stack) return ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
  /* a tiny generic offset keeps the rays off mesh edges and vertices that sit
   * on "round" coordinates; it is far below any meaningful length */
  const double ex = L->a * 3.1415926535e-7, ey = L->a * 2.7182818284e-7;
  int64_t lines = (int64_t)(L->nx + 1) * (L->ny + 1) + (int64_t)L->nx * L->ny, done = 0;
  for (int pass = 0; pass < 2; pass++) {
    int32_t ni = pass == 0 ? L->nx + 1 : L->nx, nj = pass == 0 ? L->ny + 1 : L->ny;
    int32_t nk = pass == 0 ? L->nz + 1 : L->nz;
    double off = pass == 0 ? 0 : 0.5;
    for (int32_t j = 0; j < nj; j++) {
      for (int32_t i = 0; i < ni; i++) {
        double px = L->o.x + L->a * (i + off) + ex, py = L->o.y + L->a * (j + off) + ey;
        int32_t nc = 0;
        if (tree_vertical(T, px, py, stack, &buf, &cap, &nc) != CE_OK) {
          e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory for ray crossings");
          goto done;
        }
        if (nc > 1) qsort(buf, (size_t)nc, sizeof *buf, crossing_cmp);
        /* winding(z) = sum of signs of crossings above z */
        int total = 0;
        for (int32_t q = 0; q < nc; q++) total += buf[q].sign;
        int below = 0;
        int32_t q = 0;
        for (int32_t k = 0; k < nk; k++) {
          double z = L->o.z + L->a * (k + off);
          while (q < nc && buf[q].z <= z) below += buf[q++].sign;
          int w = total - below;
          int64_t id = pass == 0 ? corner_id(L, i, j, k) : centre_id(L, i, j, k);
          wind[id] = (int8_t)(w > 100 ? 100 : (w < -100 ? -100 : w));
        }
      }
      done += ni;
      if ((j & 15) == 0 && (e = progress(opt, 0.4 * (double)done / (double)lines, "tetrahedralise", err)) != CE_OK)
        goto done;
    }
  }
done:
  free(stack);
  free(buf);
  return e;
}

/* ---- the main entry --------------------------------------------------------- */

ce_errno ce_tetrahedralize_surface(const double *vertices, int32_t nv, const int32_t *tris, int32_t nf,
                                   const ce_surface_build_options *opt, double **out_vertices, int32_t *out_nv,
                                   int32_t **out_tets, int32_t *out_nt, ce_surface_build_report *rep,
                                   ce_error *err) {
  ce_errno e = CE_OK;
  ce_surface_build_options dopt;
  if (!opt) {
    ce_surface_build_options_default(&dopt);
    opt = &dopt;
  }
  if (!out_vertices || !out_nv || !out_tets || !out_nt)
    return ce_fail(err, CE_EINVAL, "tetrahedralise: an output pointer is NULL");
  *out_vertices = NULL;
  *out_tets = NULL;
  *out_nv = *out_nt = 0;
  if (!vertices || !tris || nv < 4 || nf < 4)
    return ce_fail(err, CE_EINVAL, "tetrahedralise: needs >= 4 vertices and >= 4 triangles (got %d, %d)", (int)nv,
                   (int)nf);
  if (nv > CE_LIMIT_TETRAHEDRALIZE_INPUT || nf > CE_LIMIT_TETRAHEDRALIZE_INPUT)
    return ce_fail(err, CE_ELIMIT, "tetrahedralise: %d vertices / %d triangles exceed the limit %d", (int)nv, (int)nf,
                   CE_LIMIT_TETRAHEDRALIZE_INPUT);
  double a = opt->edge_length;
  if (!(a > 0) || !isfinite(a))
    return ce_fail(err, CE_EINVAL, "tetrahedralise: edge length %g must be finite and > 0", a);
  int32_t max_tets = opt->max_tets > 0 ? opt->max_tets : CE_LIMIT_SURFACE_TETS;

  ce_vec3 *v = NULL;
  int32_t(*t)[3] = NULL;
  int8_t *wind = NULL;
  int32_t(*tet)[4] = NULL;
  int64_t *tlat = NULL;
  uint64_t *used = NULL;
  int32_t *rank = NULL;
  ce_vec3 *pos = NULL, *target = NULL;
  unsigned char *move = NULL, *side = NULL, *onsurf = NULL, *dead = NULL;
  int32_t *vt_off = NULL, *vt = NULL, *stack = NULL;
  ttree T;
  memset(&T, 0, sizeof T);
  ce_geometry *hull = NULL;
  int used_hull = 0;

  v = malloc((size_t)nv * sizeof *v);
  t = malloc((size_t)nf * sizeof *t);
  if (!v || !t) {
    e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
    goto done;
  }
  for (int32_t i = 0; i < nv; i++) {
    v[i] = ce_v3(vertices[3 * (size_t)i], vertices[3 * (size_t)i + 1], vertices[3 * (size_t)i + 2]);
    if (!ce_vec3_isfinite(v[i])) {
      e = ce_fail(err, CE_ENONFINITE, "tetrahedralise: vertex %d is not finite", (int)i);
      goto done;
    }
  }
  for (int32_t f = 0; f < nf; f++)
    for (int j = 0; j < 3; j++) {
      int32_t x = tris[3 * (size_t)f + j];
      if (x < 0 || x >= nv) {
        e = ce_fail(err, CE_ERANGE, "tetrahedralise: triangle %d vertex %d index %d out of range [0, %d)", (int)f, j,
                    (int)x, (int)nv);
        goto done;
      }
      t[f][j] = x;
    }
  e = check_closed((const int32_t(*)[3])t, nf, err);
  if (e == CE_OK && !(enclosed_volume(v, (const int32_t(*)[3])t, nf) > 0))
    e = ce_fail(err, CE_EINVAL, "surface encloses volume %g <= 0 (inward winding?)",
                enclosed_volume(v, (const int32_t(*)[3])t, nf));
  if (e != CE_OK && e != CE_ENOMEM && opt->use_hull_if_open) {
    /* the convex hull instead (a rigid hull gives its triangles) */
    ce_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.type = CE_SHAPE_CONVEX;
    sh.points = vertices;
    sh.npoints = nv;
    ce_props hp;
    memset(&hp, 0, sizeof hp);
    hp.compliance = CE_RIGID;
    hp.hint = a;
    if ((e = ce_build_convex(&sh, &hp, &hull, err)) != CE_OK) goto done;
    free(v);
    free(t);
    nv = hull->tri.nv;
    nf = hull->tri.nf;
    v = malloc((size_t)nv * sizeof *v);
    t = malloc((size_t)nf * sizeof *t);
    if (!v || !t) {
      e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
      goto done;
    }
    memcpy(v, hull->tri.v, (size_t)nv * sizeof *v);
    memcpy(t, hull->tri.tri, (size_t)nf * sizeof *t);
    used_hull = 1;
    e = CE_OK;
  }
  if (e != CE_OK) goto done;
  double svol = enclosed_volume(v, (const int32_t(*)[3])t, nf);

  /* lattice over the box plus one cell */
  ce_vec3 lo = v[0], hi = v[0];
  for (int32_t i = 1; i < nv; i++) {
    lo = ce_v3(fmin(lo.x, v[i].x), fmin(lo.y, v[i].y), fmin(lo.z, v[i].z));
    hi = ce_v3(fmax(hi.x, v[i].x), fmax(hi.y, v[i].y), fmax(hi.z, v[i].z));
  }
  lattice L;
  L.a = a;
  double ncell[3] = {ceil((hi.x - lo.x) / a) + 2, ceil((hi.y - lo.y) / a) + 2, ceil((hi.z - lo.z) / a) + 2};
  /* kept tets ~ 12 per cell inside: refuse lattices far beyond the tet budget */
  double cells = ncell[0] * ncell[1] * ncell[2];
  if (!(svol / (a * a * a) * 12 <= (double)max_tets) || !(cells <= 8.0 * max_tets + 1e6) || ncell[0] > 1e6 ||
      ncell[1] > 1e6 || ncell[2] > 1e6) {
    e = ce_fail(err, CE_ELIMIT,
                "tetrahedralise: edge length %g gives ~%.0f tets (lattice %.0f x %.0f x %.0f), over the limit %d", a,
                svol / (a * a * a) * 12, ncell[0], ncell[1], ncell[2], (int)max_tets);
    goto done;
  }
  L.nx = (int32_t)ncell[0];
  L.ny = (int32_t)ncell[1];
  L.nz = (int32_t)ncell[2];
  ce_vec3 mid = ce_scale(ce_add(lo, hi), 0.5);
  L.o = ce_v3(mid.x - 0.5 * a * L.nx, mid.y - 0.5 * a * L.ny, mid.z - 0.5 * a * L.nz);
  int64_t nlat = (int64_t)(L.nx + 1) * (L.ny + 1) * (L.nz + 1) + (int64_t)L.nx * L.ny * L.nz;

  if ((e = tree_build(&T, v, (const int32_t(*)[3])t, nf, err)) != CE_OK) goto done;
  wind = malloc((size_t)nlat);
  if (!wind) {
    e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory for %lld lattice vertices", (long long)nlat);
    goto done;
  }
  if ((e = classify(&L, &T, wind, opt, err)) != CE_OK) goto done;
  for (int64_t id = 0; id < nlat; id++)
    if (wind[id] != 0 && wind[id] != 1) {
      if (opt->use_hull_if_open && !used_hull) {
        /* fall back to the hull: rerun on it */
        tree_free(&T);
        free(wind);
        free(v);
        free(t);
        ce_shape sh;
        memset(&sh, 0, sizeof sh);
        sh.type = CE_SHAPE_CONVEX;
        sh.points = vertices;
        sh.npoints = nv;
        ce_props hp;
        memset(&hp, 0, sizeof hp);
        hp.compliance = CE_RIGID;
        hp.hint = a;
        ce_geometry *h2 = NULL;
        if ((e = ce_build_convex(&sh, &hp, &h2, err)) != CE_OK) return e;
        double *hvx = malloc((size_t)h2->tri.nv * 3 * sizeof(double));
        if (!hvx) {
          ce_geometry_free(h2);
          return ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
        }
        for (int32_t i = 0; i < h2->tri.nv; i++) {
          hvx[3 * i] = h2->tri.v[i].x;
          hvx[3 * i + 1] = h2->tri.v[i].y;
          hvx[3 * i + 2] = h2->tri.v[i].z;
        }
        e = ce_tetrahedralize_surface(hvx, h2->tri.nv, &h2->tri.tri[0][0], h2->tri.nf, opt, out_vertices, out_nv,
                                      out_tets, out_nt, rep, err);
        if (e == CE_OK && rep) rep->used_hull = 1;
        free(hvx);
        ce_geometry_free(h2);
        return e;
      }
      ce_vec3 p = lattice_pos(&L, id);
      e = ce_fail(err, CE_EDEGENERATE,
                  "surface intersects itself: winding number %d at (%.6g, %.6g, %.6g) (expected 0 or 1)",
                  (int)wind[id], p.x, p.y, p.z);
      goto done;
    }

  /* kept lattice tets: two adjacent centres + an edge of their shared face */
  {
    int64_t cap = 1024, nt = 0;
    tlat = malloc((size_t)cap * 4 * sizeof *tlat);
    if (!tlat) {
      e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
      goto done;
    }
    for (int32_t k = 0; k < L.nz; k++) {
      if ((e = progress(opt, 0.4 + 0.1 * k / (double)L.nz, "tetrahedralise", err)) != CE_OK) goto done;
      for (int32_t j = 0; j < L.ny; j++)
        for (int32_t i = 0; i < L.nx; i++)
          for (int d = 0; d < 3; d++) {
            int32_t i2 = i + (d == 0), j2 = j + (d == 1), k2 = k + (d == 2);
            if (i2 >= L.nx || j2 >= L.ny || k2 >= L.nz) continue;
            int64_t c1 = centre_id(&L, i, j, k), c2 = centre_id(&L, i2, j2, k2);
            /* the shared face's corners in cyclic order */
            int64_t q[4];
            for (int s = 0; s < 4; s++) {
              int u = (s == 1 || s == 2), w = (s >= 2);
              int64_t ci = i2, cj = j2, ck = k2;
              if (d == 0) {
                cj = j + u;
                ck = k + w;
              } else if (d == 1) {
                ci = i + u;
                ck = k + w;
              } else {
                ci = i + u;
                cj = j + w;
              }
              q[s] = corner_id(&L, ci, cj, ck);
            }
            for (int s = 0; s < 4; s++) {
              int64_t tv[4] = {c1, c2, q[s], q[(s + 1) % 4]};
              if (!(wind[tv[0]] || wind[tv[1]] || wind[tv[2]] || wind[tv[3]])) continue;
              ce_vec3 x[4];
              for (int r = 0; r < 4; r++) x[r] = lattice_pos(&L, tv[r]);
              double vol6 = ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0])));
              if (vol6 < 0) {
                int64_t tmp = tv[2];
                tv[2] = tv[3];
                tv[3] = tmp;
              }
              if (nt == cap) {
                cap *= 2;
                int64_t *nb = realloc(tlat, (size_t)cap * 4 * sizeof *tlat);
                if (!nb) {
                  e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory for %lld tets", (long long)cap);
                  goto done;
                }
                tlat = nb;
              }
              if (nt >= max_tets) {
                e = ce_fail(err, CE_ELIMIT, "tetrahedralise: more than %d tets at edge length %g", (int)max_tets, a);
                goto done;
              }
              memcpy(&tlat[4 * nt], tv, sizeof tv);
              nt++;
            }
          }
    }
    if (nt == 0) {
      e = ce_fail(err, CE_EEMPTY, "tetrahedralise: no lattice vertex inside the surface at edge length %g (too coarse)",
                  a);
      goto done;
    }
    *out_nt = (int32_t)nt;
  }
  int32_t nt = *out_nt;
  if ((e = progress(opt, 0.5, "tetrahedralise", err)) != CE_OK) goto done;

  /* compact the used lattice vertices, numbered in lattice-id order
   * (deterministic): a bitmap of the used ids, and a vertex's number is the
   * count of used ids below it (per-word prefix + popcount). Linear, where
   * sorting the 4 nt references took ~1 s per million tets with no
   * cancellation point inside. */
  const int64_t nwords = (nlat + 63) / 64;
  used = calloc((size_t)nwords, sizeof *used);
  rank = malloc((size_t)nwords * sizeof *rank);
  tet = malloc((size_t)nt * sizeof *tet);
  if (!used || !rank || !tet) {
    e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
    goto done;
  }
  for (int64_t q = 0; q < (int64_t)nt * 4; q++) used[tlat[q] >> 6] |= 1ull << (tlat[q] & 63);
  int32_t nverts = 0;
  for (int64_t w = 0; w < nwords; w++) {
    rank[w] = nverts;
    nverts += __builtin_popcountll(used[w]);
  }
  for (int64_t q = 0; q < (int64_t)nt * 4; q++) {
    int64_t id = tlat[q];
    (&tet[0][0])[q] = rank[id >> 6] + __builtin_popcountll(used[id >> 6] & ((1ull << (id & 63)) - 1));
  }
  pos = malloc((size_t)nverts * sizeof *pos);
  target = malloc((size_t)nverts * sizeof *target);
  move = calloc((size_t)nverts, 1);
  side = calloc((size_t)nverts, 1);
  if (!pos || !target || !move || !side) {
    e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
    goto done;
  }
  {
    int32_t c = 0;
    for (int64_t w = 0; w < nwords; w++)
      for (uint64_t bits = used[w]; bits; bits &= bits - 1) {
        int64_t id = 64 * w + __builtin_ctzll(bits);
        pos[c] = lattice_pos(&L, id);
        move[c] = wind[id] ? 2 : 1; /* 1 outside, 2 inside */
        side[c] = move[c];
        c++;
      }
  }
  free(tlat);
  tlat = NULL;
  free(used);
  used = NULL;
  free(rank);
  rank = NULL;

  /* warp targets */
  stack = malloc((size_t)(T.nn + 1) * sizeof *stack);
  if (!stack) {
    e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
    goto done;
  }
  /* near the surface: the vertices of tets with an outside vertex (bit 4) */
  for (int32_t q = 0; q < nt; q++) {
    int out = 0;
    for (int r = 0; r < 4; r++) out |= move[tet[q][r]] == 1;
    if (out)
      for (int r = 0; r < 4; r++) move[tet[q][r]] |= 4;
  }
  for (int32_t i = 0; i < nverts; i++) {
    ce_vec3 c = pos[i];
    double d2 = INFINITY;
    if (!(move[i] & 4)) {
      move[i] = 0;
      continue;
    }
    d2 = tree_closest(&T, pos[i], &c, stack);
    if ((move[i] & 3) == 1 || d2 < (WARP_NEAR * a) * (WARP_NEAR * a)) {
      target[i] = c;
      move[i] = 1;
    } else {
      move[i] = 0;
    }
    if ((i & 4095) == 0 && (e = progress(opt, 0.5 + 0.25 * i / (double)nverts, "tetrahedralise", err)) != CE_OK)
      goto done;
  }

  /* vertex -> tets */
  vt_off = calloc((size_t)nverts + 1, sizeof *vt_off);
  vt = malloc((size_t)nt * 4 * sizeof *vt);
  if (!vt_off || !vt) {
    e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
    goto done;
  }
  for (int32_t q = 0; q < nt; q++)
    for (int r = 0; r < 4; r++) vt_off[tet[q][r] + 1]++;
  for (int32_t i = 0; i < nverts; i++) vt_off[i + 1] += vt_off[i];
  {
    int32_t *fill = malloc((size_t)nverts * sizeof *fill);
    if (!fill) {
      e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
      goto done;
    }
    memcpy(fill, vt_off, (size_t)nverts * sizeof *fill);
    for (int32_t q = 0; q < nt; q++)
      for (int r = 0; r < 4; r++) vt[fill[tet[q][r]]++] = q;
    free(fill);
  }

  /* guarded warp; tets whose four vertices all reach the surface may fail
   * the guard: they are flat slivers on the surface and are dropped */
  const double bound = CE_TETRAHEDRALIZE_MIN_DIHEDRAL_DEG * M_PI / 180.0;
  onsurf = calloc((size_t)nverts, 1);
  dead = calloc((size_t)nt, 1);
  if (!onsurf || !dead) {
    e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
    goto done;
  }
  for (int32_t i = 0; i < nverts; i++) {
    if (!move[i]) continue;
    ce_vec3 x0 = pos[i], dx = ce_sub(target[i], x0);
    static const double steps[4] = {1, 0.5, 0.25, 0.125};
    for (int s = 0; s < 4; s++) {
      pos[i] = ce_axpy(x0, steps[s], dx);
      onsurf[i] = s == 0;
      int ok = 1;
      for (int32_t q = vt_off[i]; q < vt_off[i + 1] && ok; q++) {
        if (dead[vt[q]]) continue;
        ce_vec3 x[4];
        int all = 1;
        for (int r = 0; r < 4; r++) {
          x[r] = pos[tet[vt[q]][r]];
          all &= onsurf[tet[vt[q]][r]];
        }
        double mn, mx, v6;
        tet_quality(x, &mn, &mx, &v6);
        if (!(v6 > 0) || !(mn >= bound)) ok = all ? 2 : 0;
      }
      if (ok) {
        if (ok == 2 || s == 0)
          for (int32_t q = vt_off[i]; q < vt_off[i + 1]; q++) {
            int all = 1;
            ce_vec3 x[4];
            for (int r = 0; r < 4; r++) {
              x[r] = pos[tet[vt[q]][r]];
              all &= onsurf[tet[vt[q]][r]];
            }
            if (!all || dead[vt[q]]) continue;
            double mn, mx, v6;
            tet_quality(x, &mn, &mx, &v6);
            if (!(v6 > 0) || !(mn >= bound)) dead[vt[q]] = 1;
          }
        break;
      }
      pos[i] = x0;
      onsurf[i] = 0;
    }
    if ((i & 4095) == 0 && (e = progress(opt, 0.75 + 0.2 * i / (double)nverts, "tetrahedralise", err)) != CE_OK)
      goto done;
  }

  /* tets still sticking out (a vertex left outside, or all four on the
   * surface) whose centroid is outside the surface are dropped */
  {
    const double ex = a * 3.1415926535e-7, ey = a * 2.7182818284e-7;
    crossing *cb = NULL;
    int32_t ccap = 0;
    for (int32_t q = 0; q < nt; q++) {
      if ((q & 16383) == 0 && (e = progress(opt, 0.95, "tetrahedralise", err)) != CE_OK) {
        free(cb);
        goto done;
      }
      if (dead[q]) continue;
      int stuck = 0, all = 1;
      for (int r = 0; r < 4; r++) {
        int32_t i = tet[q][r];
        stuck |= side[i] == 1 && !onsurf[i];
        all &= onsurf[i];
      }
      if (!stuck && !all) continue;
      ce_vec3 c = ce_scale(ce_add(ce_add(pos[tet[q][0]], pos[tet[q][1]]), ce_add(pos[tet[q][2]], pos[tet[q][3]])), 0.25);
      int32_t nc = 0;
      if (tree_vertical(&T, c.x + ex, c.y + ey, stack, &cb, &ccap, &nc) != CE_OK) {
        free(cb);
        e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory for ray crossings");
        goto done;
      }
      int w = 0;
      for (int32_t k = 0; k < nc; k++)
        if (cb[k].z > c.z) w += cb[k].sign;
      if (w == 0) dead[q] = 1;
    }
    free(cb);
  }
  /* compact: live tets, used vertices (order kept) */
  {
    int32_t *ren = vt_off; /* reuse: nverts + 1 entries */
    for (int32_t i = 0; i < nverts; i++) ren[i] = -1;
    int32_t k = 0;
    for (int32_t q = 0; q < nt; q++)
      if (!dead[q]) memmove(tet[k++], tet[q], sizeof tet[q]);
    if (k == 0) {
      e = ce_fail(err, CE_EEMPTY, "tetrahedralise: no tet left at edge length %g (too coarse)", a);
      goto done;
    }
    nt = k;
    for (int32_t q = 0; q < nt; q++)
      for (int r = 0; r < 4; r++) ren[tet[q][r]] = 0;
    int32_t c = 0;
    for (int32_t i = 0; i < nverts; i++)
      if (ren[i] == 0) {
        ren[i] = c;
        pos[c++] = pos[i];
      }
    for (int32_t q = 0; q < nt; q++)
      for (int r = 0; r < 4; r++) tet[q][r] = ren[tet[q][r]];
    nverts = c;
  }

  /* outputs */
  {
    double vol = 0, mn = INFINITY, mx = 0;
    for (int32_t q = 0; q < nt; q++) {
      ce_vec3 x[4];
      for (int r = 0; r < 4; r++) x[r] = pos[tet[q][r]];
      double a1, a2, v6;
      tet_quality(x, &a1, &a2, &v6);
      vol += v6 / 6;
      mn = fmin(mn, a1);
      mx = fmax(mx, a2);
    }
    if ((e = progress(opt, 1.0, "tetrahedralise", err)) != CE_OK) goto done;
    double *ov = malloc((size_t)nverts * 3 * sizeof *ov);
    if (!ov) {
      e = ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
      goto done;
    }
    for (int32_t i = 0; i < nverts; i++) {
      ov[3 * i] = pos[i].x;
      ov[3 * i + 1] = pos[i].y;
      ov[3 * i + 2] = pos[i].z;
    }
    *out_vertices = ov;
    *out_nv = nverts;
    *out_tets = &tet[0][0];
    *out_nt = nt;
    tet = NULL;
    if (rep) {
      memset(rep, 0, sizeof *rep);
      rep->tets = nt;
      rep->vertices = nverts;
      rep->min_dihedral_deg = mn * 180 / M_PI;
      rep->max_dihedral_deg = mx * 180 / M_PI;
      rep->volume = vol;
      rep->surface_volume = svol;
      rep->volume_error = (vol - svol) / svol;
      rep->used_hull = used_hull;
    }
  }

done:
  if (e != CE_OK) {
    *out_nt = 0;
    *out_nv = 0;
  }
  tree_free(&T);
  ce_geometry_free(hull);
  free(v);
  free(t);
  free(wind);
  free(tet);
  free(tlat);
  free(used);
  free(rank);
  free(pos);
  free(target);
  free(move);
  free(side);
  free(onsurf);
  free(dead);
  free(vt_off);
  free(vt);
  free(stack);
  return e;
}

ce_errno ce_geometry_from_surface(const double *vertices, int32_t nv, const int32_t *tris, int32_t nf,
                                  const ce_props *props, const ce_surface_build_options *opt, ce_geometry **out,
                                  ce_surface_build_report *rep, ce_error *err) {
  if (!out) return ce_fail(err, CE_EINVAL, "surface build: out is NULL");
  *out = NULL;
  ce_errno e = ce_props_check(props, 0, 0, err);
  if (e) return e;
  if (props->compliance != CE_COMPLIANT)
    return ce_fail(err, CE_EINVAL, "surface build: compliance must be CE_COMPLIANT (rigid meshes use ce_geometry_from_trimesh)");
  ce_surface_build_options o;
  if (opt) o = *opt;
  else ce_surface_build_options_default(&o);
  if (!(o.edge_length > 0)) o.edge_length = props->hint;
  if (!(o.edge_length > 0))
    return ce_fail(err, CE_EINVAL, "surface build: no edge length (options) and no hint (props)");
  if (o.field != CE_FIELD_LAPLACE && o.field != CE_FIELD_DISTANCE)
    return ce_fail(err, CE_EINVAL, "surface build: field kind %d must be LAPLACE or DISTANCE", (int)o.field);
  double *tv = NULL;
  int32_t *tt = NULL, tnv = 0, tnt = 0;
  ce_surface_build_report r;
  memset(&r, 0, sizeof r);
  if ((e = ce_tetrahedralize_surface(vertices, nv, tris, nf, &o, &tv, &tnv, &tt, &tnt, &r, err)) != CE_OK) return e;
  ce_field_options fo;
  memset(&fo, 0, sizeof fo);
  fo.kind = o.field;
  fo.core_depth = o.core_depth;
  fo.progress = o.progress;
  fo.progress_user = o.progress_user;
  e = ce_geometry_from_tetmesh_field(tv, tnv, tt, tnt, &fo, props, out, &r.field, err);
  free(tv);
  free(tt);
  if (e == CE_OK && (e = progress(&o, 1.0, "finish", err)) != CE_OK) {
    ce_geometry_free(*out);
    *out = NULL;
  }
  if (e == CE_OK && rep) *rep = r;
  return e;
}
