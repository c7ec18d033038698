/* ce_hull.c — convex shapes: the 3D convex hull of a point set (quickhull),
 * turned into a rigid triangle mesh or a compliant "starburst" tet mesh.
 *
 * Quickhull: start from a tetrahedron of extreme points; every face keeps
 * the points outside it; repeatedly take a face's farthest outside point
 * (the eye), remove the faces it sees (a connected set found by walking
 * face neighbours), and cone the horizon to the eye; the points of the
 * removed faces are handed to the new faces or dropped when inside.
 *
 * Robustness: a point is "outside" a face only when its distance exceeds
 * eps = CE_HULL_RTOL * (max|x| + max|y| + max|z|). Points within eps of the
 * hull (duplicates, points on a face or an edge) are dropped, so coplanar
 * points produce coplanar triangles rather than slivers; faces are not
 * merged. If rounding still makes a horizon that is not a simple loop the
 * build fails with CE_EDEGENERATE rather than returning a broken mesh.
 *
 * Memory: faces are made in an array; the dead ones are dropped whenever
 * they outnumber the live (compact_faces, which keeps the order), and the
 * array stays within ce_props.max_bytes (CE_EBYTES beyond it, before any
 * mesh is made). The walk's scratch is sized by the live faces.
 *
 * Output: hull vertices renumbered in increasing input order, triangles
 * counter-clockwise seen from outside, in face-creation order (the whole
 * computation is deterministic).
 *
 * Progress (stage "geometry"): the weld and the hull take the first
 * CE_HULL_SHARE of the build, the mesh's checks and hierarchies the rest.
 * Both report after every CE_HULL_PROGRESS_WORK points handled, so a
 * callback can cancel a large hull between reports (a million points on a
 * sphere take about 3 s before the mesh is even built). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_limits.h"
#include "ce_progress.h"
#include "ce_validate.h"

#define CE_HULL_RTOL 1e-12
/* Point sets thinner than CE_HULL_FLAT * size are collinear or coplanar. */
#define CE_HULL_FLAT 1e-6
/* Points closer than CE_HULL_WELD * (bounding-box diagonal) are one point
 * (the lowest-numbered one is kept). */
#define CE_HULL_WELD 1e-6
/* Progress: the share of weld + hull, the weld's share of that, and the
 * points handled between reports. */
#define CE_HULL_SHARE 0.3
#define CE_HULL_WELD_SHARE 0.25
#define CE_HULL_PROGRESS_WORK 65536

typedef struct hface {
  int32_t v[3];   /* counter-clockwise seen from outside */
  int32_t nb[3];  /* face across edge (v[i], v[i+1 mod 3]) */
  ce_vec3 n;      /* unit outward normal */
  double d;       /* plane n . x = d */
  int32_t outside; /* head of this face's outside-point list, -1 if none */
  int32_t visit;  /* visit stamp of the last visibility walk */
  int vis;        /* seen by the eye (valid when visit is current) */
  int alive;
} hface;

typedef struct hull {
  const ce_vec3 *p;
  int32_t np;
  double eps;
  hface *f;
  int32_t nf, capf; /* faces made (live and dead, in making order), room */
  int32_t nlive;    /* live faces: the current hull */
  int32_t maxf;     /* most faces the working memory may hold */
  int over;         /* add_face failed at maxf (not out of memory) */
  int32_t stamp;    /* visibility walks so far (hface.visit) */
  int32_t *next; /* outside-point lists, per point */
  const int32_t *orig; /* input index of each point (messages) */
  size_t max_bytes; /* ce_props.max_bytes (0: none) */
  int32_t nout;  /* points in outside lists (progress: 1 - nout / np) */
  int64_t work, next_report; /* points handled, and when to report next */
  const ce_buildprog *prog;
} hull;

static double face_dist(const hull *h, const hface *f, int32_t i) { return ce_dot(f->n, h->p[i]) - f->d; }

/* Appends a face (a, b, c); returns its index, or -1 when out of memory or
 * (h->over set) when h->maxf faces are made already. */
static int32_t add_face(hull *h, int32_t a, int32_t b, int32_t c) {
  if (h->nf == h->capf) {
    if (h->capf >= h->maxf) {
      h->over = 1;
      return -1;
    }
    int32_t cap = h->capf ? (h->capf < h->maxf / 2 ? h->capf * 2 : h->maxf) : 64;
    hface *nf = realloc(h->f, (size_t)cap * sizeof *nf);
    if (!nf) return -1;
    h->f = nf;
    h->capf = cap;
  }
  hface *f = &h->f[h->nf];
  f->v[0] = a;
  f->v[1] = b;
  f->v[2] = c;
  f->nb[0] = f->nb[1] = f->nb[2] = -1;
  ce_vec3 n = ce_cross(ce_sub(h->p[b], h->p[a]), ce_sub(h->p[c], h->p[a]));
  f->n = ce_normalize(n);
  /* Plane through the centroid of the three points (balanced rounding). */
  ce_vec3 m = ce_scale(ce_add(ce_add(h->p[a], h->p[b]), h->p[c]), 1.0 / 3.0);
  f->d = ce_dot(f->n, m);
  f->outside = -1;
  f->visit = 0;
  f->vis = 0;
  f->alive = 1;
  h->nlive++;
  return h->nf++;
}

/* Gives point i to the face among faces[0..n) it is farthest outside of;
 * drops it when it is inside all of them. */
static void assign_point(hull *h, const int32_t *faces, int32_t n, int32_t i) {
  h->work++;
  double best = h->eps;
  int32_t bf = -1;
  for (int32_t k = 0; k < n; k++) {
    double d = face_dist(h, &h->f[faces[k]], i);
    if (d > best) {
      best = d;
      bf = faces[k];
    }
  }
  if (bf >= 0) {
    h->next[i] = h->f[bf].outside;
    h->f[bf].outside = i;
    h->nout++;
  }
}

static int32_t edge_index(const hface *f, int32_t a, int32_t b) {
  for (int i = 0; i < 3; i++)
    if (f->v[i] == a && f->v[(i + 1) % 3] == b) return i;
  return -1;
}

/* Drops the dead faces, keeping the live ones in making order (so the
 * output and the order faces are taken as eyes' starts do not change);
 * *fi, a live face, is renumbered with them. Run when the dead outnumber
 * the live, it keeps the face array within about twice the hull. */
static ce_errno compact_faces(hull *h, int32_t *fi) {
  int32_t *map = malloc((size_t)h->nf * sizeof *map);
  if (!map) return CE_ENOMEM;
  int32_t k = 0;
  for (int32_t j = 0; j < h->nf; j++) {
    map[j] = h->f[j].alive ? k : -1;
    if (h->f[j].alive) h->f[k++] = h->f[j];
  }
  /* a live face's neighbours are live: the hull is closed */
  for (int32_t j = 0; j < k; j++)
    for (int i = 0; i < 3; i++) h->f[j].nb[i] = map[h->f[j].nb[i]];
  *fi = map[*fi];
  h->nf = k;
  free(map);
  return CE_OK;
}

/* Scratch of the hull's main loop: the visibility walk's stack, the faces
 * the eye sees, the horizon's (face, edge) pairs, the new faces, and per
 * point the new face whose horizon edge starts there (-1: none). */
typedef struct hull_scratch {
  int32_t *stack, *visible, *newf, *star, *horizon;
  int32_t capv;
} hull_scratch;

/* The failure of add_face or of a working array: over the byte limit
 * (h->over) or out of memory. */
static ce_errno hull_nomem(const hull *h, ce_error *err) {
  if (h->over)
    return ce_fail(err, CE_EBYTES,
                   "convex: the hull of %d points outgrew the limit of %.3g MB (%d faces of working memory, %d of "
                   "them on the hull so far)",
                   (int)h->np, (double)h->max_bytes / 1e6, (int)h->maxf, (int)h->nlive);
  return ce_fail(err, CE_ENOMEM, "convex: out of memory building the hull of %d points", (int)h->np);
}

/* The starting tetrahedron: the farthest pair of axis-extreme points, the
 * point farthest from their line and the one farthest from their plane;
 * every other point goes to the face it is farthest outside of. Fails for
 * coincident, collinear or coplanar points. */
static ce_errno hull_simplex(hull *h, ce_error *err) {
  const ce_vec3 *p = h->p;
  const int32_t np = h->np;
  /* Extreme points along the axes; the farthest pair starts the simplex. */
  int32_t ext[6] = {0, 0, 0, 0, 0, 0};
  for (int32_t i = 1; i < np; i++)
    for (int a = 0; a < 3; a++) {
      if (ce_v3_get(p[i], a) < ce_v3_get(p[ext[2 * a]], a)) ext[2 * a] = i;
      if (ce_v3_get(p[i], a) > ce_v3_get(p[ext[2 * a + 1]], a)) ext[2 * a + 1] = i;
    }
  int32_t i0 = ext[0], i1 = ext[1];
  double best = -1;
  for (int a = 0; a < 3; a++) {
    double d = ce_norm(ce_sub(p[ext[2 * a + 1]], p[ext[2 * a]]));
    if (d > best) {
      best = d;
      i0 = ext[2 * a];
      i1 = ext[2 * a + 1];
    }
  }
  if (!(best > h->eps)) return ce_fail(err, CE_EDEGENERATE, "convex: all %d points coincide", (int)np);
  const double size = best, flat = fmax(h->eps, CE_HULL_FLAT * size);
  ce_vec3 dir = ce_scale(ce_sub(p[i1], p[i0]), 1.0 / best);
  int32_t i2 = -1;
  best = 0;
  for (int32_t i = 0; i < np; i++) {
    double d = ce_norm(ce_cross(ce_sub(p[i], p[i0]), dir));
    if (d > best) {
      best = d;
      i2 = i;
    }
  }
  if (!(best > flat))
    return ce_fail(err, CE_EDEGENERATE, "convex: all %d points are collinear (width %.3g, below %g of the size %.3g)",
                   (int)np, best, CE_HULL_FLAT, size);
  ce_vec3 pn = ce_normalize(ce_cross(ce_sub(p[i1], p[i0]), ce_sub(p[i2], p[i0])));
  int32_t i3 = -1;
  best = 0;
  for (int32_t i = 0; i < np; i++) {
    double d = fabs(ce_dot(pn, ce_sub(p[i], p[i0])));
    if (d > best) {
      best = d;
      i3 = i;
    }
  }
  if (!(best > flat))
    return ce_fail(err, CE_EDEGENERATE,
                   "convex: all %d points are coplanar (thickness %.3g, below %g of the size %.3g)", (int)np, best,
                   CE_HULL_FLAT, size);
  int32_t t[4] = {i0, i1, i2, i3};
  if (ce_dot(pn, ce_sub(p[i3], p[i0])) < 0) {
    t[1] = i2;
    t[2] = i1;
  }
  static const int kFace[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};
  for (int k = 0; k < 4; k++)
    if (add_face(h, t[kFace[k][0]], t[kFace[k][1]], t[kFace[k][2]]) < 0) return hull_nomem(h, err);
  for (int32_t a = 0; a < 4; a++)
    for (int i = 0; i < 3; i++)
      for (int32_t b = 0; b < 4; b++) {
        if (b == a) continue;
        if (edge_index(&h->f[b], h->f[a].v[(i + 1) % 3], h->f[a].v[i]) >= 0) h->f[a].nb[i] = b;
      }
  int32_t first[4] = {0, 1, 2, 3};
  for (int32_t i = np - 1; i >= 0; i--)
    if (i != i0 && i != i1 && i != i2 && i != i3) assign_point(h, first, 4, i);
  return CE_OK;
}

/* Room in the walk's arrays for every live face (with up to 3 horizon
 * edges and new faces each); CE_ENOMEM without a message. */
static ce_errno hull_scratch_grow(const hull *h, hull_scratch *s) {
  if (s->capv >= h->nlive) return CE_OK;
  s->capv = h->nlive * 2;
  int32_t *s2 = realloc(s->stack, (size_t)s->capv * sizeof *s2);
  if (!s2) return CE_ENOMEM;
  s->stack = s2;
  int32_t *v2 = realloc(s->visible, (size_t)s->capv * sizeof *v2);
  if (!v2) return CE_ENOMEM;
  s->visible = v2;
  int32_t *h2 = realloc(s->horizon, (size_t)s->capv * 6 * sizeof *h2);
  if (!h2) return CE_ENOMEM;
  s->horizon = h2;
  int32_t *n2 = realloc(s->newf, (size_t)s->capv * 3 * sizeof *n2);
  if (!n2) return CE_ENOMEM;
  s->newf = n2;
  return CE_OK;
}

/* Faces the eye sees, walking neighbours from fi (which sees it), into
 * s->visible; the horizon edges (seen face, edge index) into s->horizon. */
static void hull_visible(hull *h, hull_scratch *s, int32_t fi, int32_t eye, int32_t *nvis_out, int32_t *nhor_out) {
  int32_t nvis = 0, nsp = 0, nhor = 0;
  const int32_t stamp = ++h->stamp;
  s->stack[nsp++] = fi;
  h->f[fi].visit = stamp;
  h->f[fi].vis = 1;
  while (nsp > 0) {
    int32_t g = s->stack[--nsp];
    s->visible[nvis++] = g;
    for (int i = 0; i < 3; i++) {
      int32_t nb = h->f[g].nb[i];
      if (h->f[nb].visit != stamp) {
        h->f[nb].visit = stamp;
        h->f[nb].vis = face_dist(h, &h->f[nb], eye) > h->eps;
        if (h->f[nb].vis) s->stack[nsp++] = nb;
      }
      if (!h->f[nb].vis) {
        /* horizon edge (v[i], v[i+1]) of g, kept by nb */
        s->horizon[2 * nhor] = g;
        s->horizon[2 * nhor + 1] = i;
        nhor++;
      }
    }
  }
  *nvis_out = nvis;
  *nhor_out = nhor;
}

/* Cone the horizon's nhor edges to the eye: new faces from h->nf on (into
 * s->newf), linked to the kept faces and to each other; CE_EDEGENERATE
 * when rounding made the horizon anything but one simple loop. */
static ce_errno hull_cone(hull *h, hull_scratch *s, int32_t eye, int32_t nhor, ce_error *err) {
  int32_t *star = s->star;
  const int32_t base = h->nf;
  for (int32_t k = 0; k < nhor; k++) {
    const hface *g = &h->f[s->horizon[2 * k]];
    int i = s->horizon[2 * k + 1];
    int32_t a = g->v[i], b = g->v[(i + 1) % 3], nb = g->nb[i];
    if (star[a] >= 0)
      return ce_fail(err, CE_EDEGENERATE,
                     "convex: the hull is numerically degenerate near point %d (horizon is not a simple loop)",
                     (int)h->orig[eye]);
    int32_t nfid = add_face(h, a, b, eye);
    if (nfid < 0) return hull_nomem(h, err);
    h->f[nfid].nb[0] = nb;
    int32_t j = edge_index(&h->f[nb], b, a);
    if (j >= 0) h->f[nb].nb[j] = nfid;
    star[a] = nfid;
    s->newf[k] = nfid;
  }
  for (int32_t k = 0; k < nhor; k++) {
    hface *f = &h->f[base + k];
    /* edge (b, eye) meets the new face starting at b; (eye, a) the one
     * ending at a, i.e. whose edge (b', eye) has b' = a. */
    int32_t nb1 = star[f->v[1]];
    if (nb1 < 0)
      return ce_fail(err, CE_EDEGENERATE,
                     "convex: the hull is numerically degenerate near point %d (horizon is not closed)",
                     (int)h->orig[eye]);
    f->nb[1] = nb1;
    h->f[nb1].nb[2] = base + k;
  }
  /* The horizon must be one loop: walking b -> star[b] from the first
   * new face visits every new face exactly once. */
  int32_t steps = 0, cur = base;
  do {
    cur = star[h->f[cur].v[1]];
    steps++;
  } while (cur != base && steps <= nhor);
  for (int32_t k = 0; k < nhor; k++) star[h->f[base + k].v[0]] = -1;
  if (cur != base || steps != nhor)
    return ce_fail(err, CE_EDEGENERATE,
                   "convex: the hull is numerically degenerate near point %d (horizon is not one loop)",
                   (int)h->orig[eye]);
  return CE_OK;
}

/* Hand the points of the nvis removed faces to the new faces (dropping
 * the eye and the points now inside). */
static void hull_reassign(hull *h, const hull_scratch *s, int32_t nvis, int32_t nhor, int32_t eye) {
  for (int32_t k = 0; k < nvis; k++) {
    int32_t i = h->f[s->visible[k]].outside;
    h->f[s->visible[k]].outside = -1;
    while (i >= 0) {
      int32_t nx = h->next[i];
      h->nout--;
      if (i != eye) assign_point(h, s->newf, nhor, i);
      i = nx;
    }
  }
}

/* Grow the starting tetrahedron to the hull: each face with outside
 * points, in making order, takes its farthest one as the eye. */
static ce_errno hull_expand(hull *h, hull_scratch *s, ce_error *err) {
  const int32_t np = h->np;
  ce_errno e;
  s->star = malloc((size_t)np * sizeof *s->star);
  if (!s->star) return hull_nomem(h, err);
  for (int32_t i = 0; i < np; i++) s->star[i] = -1;

  for (int32_t fi = 0; fi < h->nf; fi++) {
    if (!h->f[fi].alive || h->f[fi].outside < 0) continue;
    if (h->nf - h->nlive > h->nlive && h->nf > 4096 && compact_faces(h, &fi) != CE_OK) return hull_nomem(h, err);
    if (h->work >= h->next_report) {
      h->next_report = h->work + CE_HULL_PROGRESS_WORK;
      if ((e = ce_buildprog_report(h->prog, 1.0 - (double)h->nout / np, err)) != CE_OK) return e;
    }
    /* The eye: the farthest outside point of this face. */
    int32_t eye = -1;
    double far = -INFINITY;
    for (int32_t i = h->f[fi].outside; i >= 0; i = h->next[i]) {
      double d = face_dist(h, &h->f[fi], i);
      if (d > far) {
        far = d;
        eye = i;
      }
    }
    if (hull_scratch_grow(h, s) != CE_OK) return hull_nomem(h, err);
    int32_t nvis, nhor;
    hull_visible(h, s, fi, eye, &nvis, &nhor);
    for (int32_t k = 0; k < nvis; k++) h->f[s->visible[k]].alive = 0;
    h->nlive -= nvis;
    if ((e = hull_cone(h, s, eye, nhor, err)) != CE_OK) return e;
    hull_reassign(h, s, nvis, nhor, eye);
  }
  return CE_OK;
}

static ce_errno hull_run(hull *h, ce_error *err) {
  hull_scratch s;
  memset(&s, 0, sizeof s);
  ce_errno e = hull_simplex(h, err);
  if (e == CE_OK) e = hull_expand(h, &s, err);
  free(s.stack);
  free(s.visible);
  free(s.newf);
  free(s.star);
  free(s.horizon);
  return e;
}

typedef struct weld_key {
  int64_t c[3];
  int32_t i;
} weld_key;

static int weld_key_cmp(const void *pa, const void *pb) {
  const weld_key *a = pa, *b = pb;
  for (int k = 0; k < 3; k++)
    if (a->c[k] != b->c[k]) return a->c[k] < b->c[k] ? -1 : 1;
  return (a->i > b->i) - (a->i < b->i);
}

/* Keeps point i unless an earlier kept point lies within w of it; writes
 * the kept indices (increasing) to keep[] and their number to *nkept.
 * Points are bucketed in a grid of cell size w (cell coordinates relative
 * to the box corner lo, at most 1/CE_HULL_WELD per axis) and sorted by
 * cell, so each point only looks at its 27 neighbour cells (9 binary
 * searches). Reports progress to prog (the sort counts as a tenth). */
static ce_errno weld_points(const ce_vec3 *p, int32_t n, ce_vec3 lo, double w, const ce_buildprog *prog,
                            int32_t *keep, int32_t *nkept, ce_error *err) {
  *nkept = 0;
  if (!(w > 0)) {
    for (int32_t i = 0; i < n; i++) keep[i] = i;
    *nkept = n;
    return CE_OK;
  }
  ce_errno e = CE_OK;
  weld_key *k = malloc((size_t)n * sizeof *k);
  unsigned char *kept = malloc((size_t)n);
  if (!k || !kept) {
    free(k);
    free(kept);
    return ce_fail(err, CE_ENOMEM, "convex: out of memory for %d points", (int)n);
  }
  for (int32_t i = 0; i < n; i++) {
    k[i].c[0] = (int64_t)floor((p[i].x - lo.x) / w);
    k[i].c[1] = (int64_t)floor((p[i].y - lo.y) / w);
    k[i].c[2] = (int64_t)floor((p[i].z - lo.z) / w);
    k[i].i = i;
  }
  int64_t cells[3];
  int32_t nk = 0;
  /* cells of point i, before sorting */
  int64_t(*own)[3] = malloc((size_t)n * sizeof *own);
  if (!own) {
    free(k);
    free(kept);
    return ce_fail(err, CE_ENOMEM, "convex: out of memory for %d points", (int)n);
  }
  for (int32_t i = 0; i < n; i++) memcpy(own[i], k[i].c, sizeof own[i]);
  qsort(k, (size_t)n, sizeof *k, weld_key_cmp);
  for (int32_t i = 0; i < n; i++) {
    if (i % CE_HULL_PROGRESS_WORK == 0 && (e = ce_buildprog_report(prog, 0.1 + 0.9 * i / n, err)) != CE_OK) break;
    int found = 0;
    /* 9 columns (dx, dy); cells dz = -1..1 of a column are contiguous. */
    for (int dx = -1; dx <= 1 && !found; dx++)
      for (int dy = -1; dy <= 1 && !found; dy++) {
        cells[0] = own[i][0] + dx;
        cells[1] = own[i][1] + dy;
        cells[2] = own[i][2] - 1;
        int32_t a = 0, b = n;
        while (a < b) {
          int32_t m = a + (b - a) / 2;
          int c = 0;
          for (int j = 0; j < 3 && c == 0; j++) c = k[m].c[j] < cells[j] ? -1 : (k[m].c[j] > cells[j] ? 1 : 0);
          if (c < 0)
            a = m + 1;
          else
            b = m;
        }
        for (int32_t m = a; m < n && k[m].c[0] == cells[0] && k[m].c[1] == cells[1] && k[m].c[2] <= cells[2] + 2;
             m++)
          if (k[m].i < i && kept[k[m].i] && ce_norm(ce_sub(p[k[m].i], p[i])) <= w) {
            found = 1;
            break;
          }
      }
    kept[i] = (unsigned char)!found;
    if (!found) keep[nk++] = i;
  }
  free(own);
  free(k);
  free(kept);
  *nkept = nk;
  return e;
}

/* A convex build's working arrays: the hull, its points (welded and
 * compacted), their input indices, and the hull-vertex numbering. */
typedef struct convex_work {
  hull h;
  ce_vec3 *p;
  int32_t *orig;
  int32_t *map;
} convex_work;

/* Frees the hull and its points (the mesh made from them has copies). */
static void release(convex_work *w) {
  free(w->h.f);
  free(w->h.next);
  w->h.f = NULL;
  w->h.next = NULL;
  free(w->p);
  free(w->orig);
  free(w->map);
  w->p = NULL;
  w->orig = NULL;
  w->map = NULL;
}

/* The shape's points into p, checked (finite, within the primitive
 * lengths); their box (lo, hi) and largest |x|, |y|, |z| (m[3]). */
static ce_errno load_points(const ce_shape *shape, int32_t np, ce_vec3 *p, ce_vec3 *lo_out, ce_vec3 *hi_out,
                            double m[3], ce_error *err) {
  ce_vec3 lo = ce_v3(INFINITY, INFINITY, INFINITY), hi = ce_v3(-INFINITY, -INFINITY, -INFINITY);
  double mx = 0, my = 0, mz = 0;
  for (int32_t i = 0; i < np; i++) {
    p[i] = ce_v3(shape->points[3 * (size_t)i], shape->points[3 * (size_t)i + 1], shape->points[3 * (size_t)i + 2]);
    if (!ce_vec3_isfinite(p[i]))
      return ce_fail(err, CE_ENONFINITE, "convex: point %d has a non-finite coordinate", (int)i);
    mx = fmax(mx, fabs(p[i].x));
    my = fmax(my, fabs(p[i].y));
    mz = fmax(mz, fabs(p[i].z));
    /* the range of primitive dimensions (1e200 m once welded 8 corners into
     * "all 1 points coincide"): the running maxima pass it first at point i */
    if (fmax(mx, fmax(my, mz)) > CE_LIMIT_MAX_LENGTH)
      return ce_fail(err, CE_EINVAL, "convex: point %d (%g, %g, %g) is beyond +-%g m", (int)i, p[i].x, p[i].y, p[i].z,
                     CE_LIMIT_MAX_LENGTH);
    lo = ce_v3(fmin(lo.x, p[i].x), fmin(lo.y, p[i].y), fmin(lo.z, p[i].z));
    hi = ce_v3(fmax(hi.x, p[i].x), fmax(hi.y, p[i].y), fmax(hi.z, p[i].z));
  }
  const double span = fmax(hi.x - lo.x, fmax(hi.y - lo.y, hi.z - lo.z)); /* no squares to underflow */
  if (span > 0 && span < CE_LIMIT_MIN_LENGTH)
    return ce_fail(err, CE_EINVAL, "convex: the points span %g m, below the %g m of the smallest primitive", span,
                   CE_LIMIT_MIN_LENGTH);
  *lo_out = lo;
  *hi_out = hi;
  m[0] = mx;
  m[1] = my;
  m[2] = mz;
  return CE_OK;
}

/* Rigid: the hull's live triangles over the nv hull vertices v (taken
 * over). */
static ce_errno convex_rigid(convex_work *w, ce_vec3 *v, int32_t nv, int32_t nf, const ce_props *props,
                             const ce_buildprog *pmesh, ce_geometry **out, ce_error *err) {
  const hull *h = &w->h;
  int32_t(*tri)[3] = malloc((size_t)nf * sizeof *tri);
  if (!tri) {
    free(v);
    return ce_fail(err, CE_ENOMEM, "convex: out of memory");
  }
  int32_t k = 0;
  for (int32_t f = 0; f < h->nf; f++)
    if (h->f[f].alive) {
      for (int j = 0; j < 3; j++) tri[k][j] = w->map[h->f[f].v[j]];
      k++;
    }
  release(w); /* before the mesh's build, which peaks higher */
  return ce_geometry_finish_trimesh(CE_SHAPE_CONVEX, props, pmesh, v, nv, tri, nf, 1, out, err);
}

/* Compliant: a starburst from the volume centroid, tet (centroid, a, b, c)
 * per hull triangle; the field is E at the centroid and 0 on the hull. v
 * (taken over) has room for the centroid after the nv hull vertices. */
static ce_errno convex_starburst(convex_work *w, ce_vec3 *v, int32_t nv, int32_t nf, const ce_props *props,
                                 const ce_buildprog *pmesh, ce_geometry **out, ce_error *err) {
  const hull *h = &w->h;
  const ce_vec3 *p = w->p;
  ce_vec3 o = ce_v3(0, 0, 0);
  for (int32_t i = 0; i < nv; i++) o = ce_add(o, v[i]);
  o = ce_scale(o, 1.0 / nv);
  double vol = 0;
  ce_vec3 c = ce_v3(0, 0, 0);
  for (int32_t f = 0; f < h->nf; f++)
    if (h->f[f].alive) {
      ce_vec3 a = p[h->f[f].v[0]], b = p[h->f[f].v[1]], d = p[h->f[f].v[2]];
      double wt = ce_dot(ce_sub(a, o), ce_cross(ce_sub(b, o), ce_sub(d, o))) / 6.0;
      vol += wt;
      c = ce_axpy(c, wt * 0.25, ce_add(ce_add(a, b), ce_add(d, o)));
    }
  c = vol > 0 ? ce_scale(c, 1.0 / vol) : o;
  v[nv] = c;
  int32_t(*tet)[4] = malloc((size_t)nf * sizeof *tet);
  double *pr = malloc((size_t)(nv + 1) * sizeof *pr);
  if (!tet || !pr) {
    free(v);
    free(tet);
    free(pr);
    return ce_fail(err, CE_ENOMEM, "convex: out of memory");
  }
  int32_t k = 0;
  for (int32_t f = 0; f < h->nf; f++)
    if (h->f[f].alive) {
      tet[k][0] = nv;
      for (int j = 0; j < 3; j++) tet[k][j + 1] = w->map[h->f[f].v[j]];
      k++;
    }
  for (int32_t i = 0; i < nv; i++) pr[i] = 0;
  pr[nv] = props->modulus;
  release(w);
  ce_errno e = ce_geometry_finish_tetmesh(CE_SHAPE_CONVEX, props, pmesh, v, nv + 1, tet, nf, pr, out, err);
  if (e == CE_EINVERTED) {
    /* a hull triangle too thin to cone to the centroid: name the shape */
    if (err) {
      char msg[sizeof err->message];
      memcpy(msg, err->message, sizeof msg);
      ce_fail(err, CE_EDEGENERATE, "convex: starburst %s (hull triangle too thin)", msg);
    }
    e = CE_EDEGENERATE;
  }
  return e;
}

/* The mesh of the finished hull over its nq points: hull vertices in
 * increasing input order, then the rigid or the compliant mesh. */
static ce_errno convex_mesh(convex_work *w, int32_t nq, const ce_props *props, const ce_buildprog *pmesh,
                            ce_geometry **out, ce_error *err) {
  const hull *h = &w->h;
  w->map = malloc((size_t)nq * sizeof *w->map);
  if (!w->map) return ce_fail(err, CE_ENOMEM, "convex: out of memory");
  int32_t *map = w->map;
  for (int32_t i = 0; i < nq; i++) map[i] = -1;
  int32_t nf = 0, nv = 0;
  for (int32_t f = 0; f < h->nf; f++)
    if (h->f[f].alive) {
      nf++;
      for (int k = 0; k < 3; k++) map[h->f[f].v[k]] = 0;
    }
  for (int32_t i = 0; i < nq; i++)
    if (map[i] == 0) map[i] = nv++;
  int compliant = props->compliance == CE_COMPLIANT;
  ce_vec3 *v = malloc((size_t)(nv + compliant) * sizeof *v);
  if (!v) return ce_fail(err, CE_ENOMEM, "convex: out of memory");
  for (int32_t i = 0; i < nq; i++)
    if (map[i] >= 0) v[map[i]] = w->p[i];
  if (!compliant) return convex_rigid(w, v, nv, nf, props, pmesh, out, err);
  return convex_starburst(w, v, nv, nf, props, pmesh, out, err);
}

ce_errno ce_build_convex(const ce_shape *shape, const ce_props *props, ce_geometry **out, ce_error *err) {
  ce_errno e;
  if (!out) return ce_fail(err, CE_EINVAL, "convex: out is NULL");
  *out = NULL;
  if (!shape) return ce_fail(err, CE_EINVAL, "convex: shape is NULL");
  if ((e = ce_props_check(props, 0, 0, err)) != CE_OK) return e;
  const int32_t np = shape->npoints;
  if (np < 4) return ce_fail(err, CE_EINVAL, "convex: needs at least 4 points (got %d)", (int)np);
  if (np > CE_LIMIT_HULL_POINTS)
    return ce_fail(err, CE_ELIMIT, "convex: %d points exceed the limit %d", (int)np, CE_LIMIT_HULL_POINTS);
  if (!shape->points) return ce_fail(err, CE_EINVAL, "convex: points is NULL");

  convex_work w;
  memset(&w, 0, sizeof w);
  hull *h = &w.h;
  const ce_buildprog whole = ce_buildprog_of(props);
  const ce_buildprog pweld = ce_buildprog_part(&whole, 0, CE_HULL_SHARE * CE_HULL_WELD_SHARE);
  const ce_buildprog phull = ce_buildprog_part(&whole, CE_HULL_SHARE * CE_HULL_WELD_SHARE, CE_HULL_SHARE);
  const ce_buildprog pmesh = ce_buildprog_part(&whole, CE_HULL_SHARE, 1);
  w.p = malloc((size_t)np * sizeof *w.p);
  w.orig = malloc((size_t)np * sizeof *w.orig);
  h->next = malloc((size_t)np * sizeof *h->next);
  ce_vec3 lo = ce_v3(0, 0, 0), hi = lo;
  double m[3] = {0, 0, 0};
  int32_t nq = 0;
  if (!w.p || !w.orig || !h->next) e = ce_fail(err, CE_ENOMEM, "convex: out of memory for %d points", (int)np);
  else e = load_points(shape, np, w.p, &lo, &hi, m, err);
  /* Weld near-duplicates, then run the hull on the kept points (compacted,
   * in input order; orig[] maps back for messages). */
  if (e == CE_OK) e = weld_points(w.p, np, lo, CE_HULL_WELD * ce_norm(ce_sub(hi, lo)), &pweld, w.orig, &nq, err);
  if (e == CE_OK) {
    for (int32_t i = 0; i < nq; i++) w.p[i] = w.p[w.orig[i]];
    h->p = w.p;
    h->np = nq;
    h->orig = w.orig;
    h->eps = CE_HULL_RTOL * (m[0] + m[1] + m[2]);
    h->prog = &phull;
    /* The faces' working memory stays within the geometry's byte limit.
     * When it is reached, about half the faces or more are live (see
     * compact_faces): the hull so far has over maxf / 2 triangles, and a
     * finished rigid mesh takes ~276 bytes per triangle, so that many would
     * be ~2x the limit. (A hull can lose faces as it grows, so strictly this
     * refuses a point set whose hull at some stage is that large.) */
    h->max_bytes = props->max_bytes;
    h->maxf = INT32_MAX / 8; /* keeps every size below in range */
    if (h->max_bytes && h->max_bytes / sizeof(hface) < (size_t)h->maxf)
      h->maxf = (int32_t)(h->max_bytes / sizeof(hface));
    if (h->maxf < 64) h->maxf = 64;
    e = hull_run(h, err);
  }
  if (e == CE_OK) e = ce_buildprog_report(&phull, 1, err);
  if (e == CE_OK) e = convex_mesh(&w, nq, props, &pmesh, out, err);
  release(&w);
  return e;
}
