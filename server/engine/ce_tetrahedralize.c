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
 * The surface checks of step 1 and the triangle tree of steps 3 and 4 are
 * in ce_closed_surface.c; here are the lattice and the build's stages.
 * Deterministic: no dependence on addresses or threads. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_closed_surface.h"
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

/* Winding numbers along one vertical lattice line (corners when pass is 0,
 * cube centres when 1) at (i, j): the signed crossings above each vertex
 * (buf, cap: the growable crossing buffer). */
static ce_errno wind_line(const lattice *L, const ce_tri_tree *T, int8_t *wind, int pass, int32_t i, int32_t j,
                          int32_t *stack, ce_ray_crossing **buf, int32_t *cap, ce_error *err) {
  /* a tiny generic offset keeps the rays off mesh edges and vertices that sit
   * on "round" coordinates; it is far below any meaningful length */
  const double ex = L->a * 3.1415926535e-7, ey = L->a * 2.7182818284e-7;
  const int32_t nk = pass == 0 ? L->nz + 1 : L->nz;
  const double off = pass == 0 ? 0 : 0.5;
  double px = L->o.x + L->a * (i + off) + ex, py = L->o.y + L->a * (j + off) + ey;
  int32_t nc = 0;
  if (ce_tri_tree_vertical(T, px, py, stack, buf, cap, &nc) != CE_OK)
    return ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory for ray crossings");
  const ce_ray_crossing *c = *buf;
  if (nc > 1) qsort(*buf, (size_t)nc, sizeof **buf, ce_ray_crossing_cmp);
  /* winding(z) = sum of signs of crossings above z */
  int total = 0;
  for (int32_t q = 0; q < nc; q++) total += c[q].sign;
  int below = 0;
  int32_t q = 0;
  for (int32_t k = 0; k < nk; k++) {
    double z = L->o.z + L->a * (k + off);
    while (q < nc && c[q].z <= z) below += c[q++].sign;
    int w = total - below;
    int64_t id = pass == 0 ? corner_id(L, i, j, k) : centre_id(L, i, j, k);
    wind[id] = (int8_t)(w > 100 ? 100 : (w < -100 ? -100 : w));
  }
  return CE_OK;
}

/* Winding number of every lattice vertex (int8), one vertical ray per
 * lattice line. */
static ce_errno classify(const lattice *L, const ce_tri_tree *T, int8_t *wind, const ce_surface_build_options *opt,
                         ce_error *err) {
  int32_t *stack = malloc((size_t)(T->nn + 1) * sizeof *stack);
  ce_ray_crossing *buf = NULL;
  int32_t cap = 0;
  ce_errno e = CE_OK;
  if (!stack) return ce_fail(err, CE_ENOMEM, "tetrahedralise: out of memory");
  int64_t lines = (int64_t)(L->nx + 1) * (L->ny + 1) + (int64_t)L->nx * L->ny, done = 0;
  for (int pass = 0; pass < 2 && e == CE_OK; pass++) {
    int32_t ni = pass == 0 ? L->nx + 1 : L->nx, nj = pass == 0 ? L->ny + 1 : L->ny;
    for (int32_t j = 0; j < nj && e == CE_OK; j++) {
      for (int32_t i = 0; i < ni && e == CE_OK; i++) e = wind_line(L, T, wind, pass, i, j, stack, &buf, &cap, err);
      done += ni;
      if (e == CE_OK && (j & 15) == 0) e = progress(opt, 0.4 * (double)done / (double)lines, "tetrahedralise", err);
    }
  }
  free(stack);
  free(buf);
  return e;
}

/* ---- the build, stage by stage ---------------------------------------------- */

/* One surface-to-tets build: its inputs, the arrays each stage leaves for
 * the next, and everything tb_free releases (the single cleanup path). */
typedef struct tet_build {
  /* inputs */
  const double *vertices; /* the caller's surface, 3 nv_in coordinates */
  const int32_t *tris;    /* 3 nf_in vertex indices */
  int32_t nv_in, nf_in;
  const ce_surface_build_options *opt;
  double a;         /* lattice cube size: the edge length */
  int32_t max_tets;
  ce_error *err;
  /* the surface tetrahedralised: the input's, or its convex hull's */
  ce_vec3 *v;
  int32_t (*t)[3];
  int32_t nv, nf;
  ce_geometry *hull;
  int used_hull;     /* the surface was open: its hull is used */
  int retry_on_hull; /* the surface intersects itself: rerun on its hull */
  double svol;       /* volume it encloses */
  /* the lattice and the winding number of its vertices */
  lattice L;
  int64_t nlat;
  ce_tri_tree T;
  int8_t *wind;
  /* kept tets: first as lattice ids (tlat), then numbered (tet) */
  int64_t *tlat;
  uint64_t *used; /* bitmap of the lattice ids the kept tets use */
  int32_t *rank;  /* used ids below each bitmap word */
  int32_t nt, nverts;
  int32_t (*tet)[4];
  /* per vertex: position, warp target, flags; per tet: dropped */
  ce_vec3 *pos, *target;
  unsigned char *move, *side, *onsurf, *dead;
  int32_t *vt_off, *vt; /* vertex -> tets (CSR) */
  int32_t *stack;       /* tree traversal stack */
} tet_build;

static ce_errno tb_nomem(tet_build *b) { return ce_fail(b->err, CE_ENOMEM, "tetrahedralise: out of memory"); }

static ce_errno tb_progress(tet_build *b, double f) { return progress(b->opt, f, "tetrahedralise", b->err); }

/* Copy the caller's surface, checking coordinates and indices. */
static ce_errno tb_load_surface(tet_build *b) {
  b->nv = b->nv_in;
  b->nf = b->nf_in;
  b->v = malloc((size_t)b->nv * sizeof *b->v);
  b->t = malloc((size_t)b->nf * sizeof *b->t);
  if (!b->v || !b->t) return tb_nomem(b);
  for (int32_t i = 0; i < b->nv; i++) {
    const double *x = &b->vertices[3 * (size_t)i];
    b->v[i] = ce_v3(x[0], x[1], x[2]);
    if (!ce_vec3_isfinite(b->v[i]))
      return ce_fail(b->err, CE_ENONFINITE, "tetrahedralise: vertex %d is not finite", (int)i);
  }
  for (int32_t f = 0; f < b->nf; f++)
    for (int j = 0; j < 3; j++) {
      int32_t x = b->tris[3 * (size_t)f + j];
      if (x < 0 || x >= b->nv)
        return ce_fail(b->err, CE_ERANGE, "tetrahedralise: triangle %d vertex %d index %d out of range [0, %d)",
                       (int)f, j, (int)x, (int)b->nv);
      b->t[f][j] = x;
    }
  return CE_OK;
}

/* The convex hull of the caller's points as a rigid geometry (its
 * triangles), with the edge length as its hint. */
static ce_errno hull_of(const double *vertices, int32_t nv, double a, ce_geometry **out, ce_error *err) {
  ce_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.type = CE_SHAPE_CONVEX;
  sh.points = vertices;
  sh.npoints = nv;
  ce_props hp;
  memset(&hp, 0, sizeof hp);
  hp.compliance = CE_RIGID;
  hp.hint = a;
  return ce_build_convex(&sh, &hp, out, err);
}

/* A closed 2-manifold with outward winding, or (use_hull_if_open) the
 * convex hull in its place; then the enclosed volume. */
static ce_errno tb_closed_or_hull(tet_build *b) {
  const int32_t(*t)[3] = (const int32_t(*)[3])b->t;
  ce_errno e = ce_surface_check_closed(t, b->nf, b->err);
  if (e == CE_OK && !(ce_surface_enclosed_volume(b->v, t, b->nf) > 0))
    e = ce_fail(b->err, CE_EINVAL, "surface encloses volume %g <= 0 (inward winding?)",
                ce_surface_enclosed_volume(b->v, t, b->nf));
  if (e != CE_OK && e != CE_ENOMEM && b->opt->use_hull_if_open) {
    if ((e = hull_of(b->vertices, b->nv_in, b->a, &b->hull, b->err)) != CE_OK) return e;
    free(b->v);
    free(b->t);
    b->nv = b->hull->tri.nv;
    b->nf = b->hull->tri.nf;
    b->v = malloc((size_t)b->nv * sizeof *b->v);
    b->t = malloc((size_t)b->nf * sizeof *b->t);
    if (!b->v || !b->t) return tb_nomem(b);
    memcpy(b->v, b->hull->tri.v, (size_t)b->nv * sizeof *b->v);
    memcpy(b->t, b->hull->tri.tri, (size_t)b->nf * sizeof *b->t);
    b->used_hull = 1;
    e = CE_OK;
  }
  if (e != CE_OK) return e;
  b->svol = ce_surface_enclosed_volume(b->v, (const int32_t(*)[3])b->t, b->nf);
  return CE_OK;
}

/* The lattice over the surface's box plus one cell, refused when far
 * beyond the tet budget. */
static ce_errno tb_lattice(tet_build *b) {
  const double a = b->a, svol = b->svol;
  const ce_vec3 *v = b->v;
  ce_vec3 lo = v[0], hi = v[0];
  for (int32_t i = 1; i < b->nv; i++) {
    lo = ce_v3(fmin(lo.x, v[i].x), fmin(lo.y, v[i].y), fmin(lo.z, v[i].z));
    hi = ce_v3(fmax(hi.x, v[i].x), fmax(hi.y, v[i].y), fmax(hi.z, v[i].z));
  }
  lattice *L = &b->L;
  L->a = a;
  double ncell[3] = {ceil((hi.x - lo.x) / a) + 2, ceil((hi.y - lo.y) / a) + 2, ceil((hi.z - lo.z) / a) + 2};
  /* kept tets ~ 12 per cell inside: refuse lattices far beyond the tet budget */
  double cells = ncell[0] * ncell[1] * ncell[2];
  if (!(svol / (a * a * a) * 12 <= (double)b->max_tets) || !(cells <= 8.0 * b->max_tets + 1e6) || ncell[0] > 1e6 ||
      ncell[1] > 1e6 || ncell[2] > 1e6)
    return ce_fail(b->err, CE_ELIMIT,
                   "tetrahedralise: edge length %g gives ~%.0f tets (lattice %.0f x %.0f x %.0f), over the limit %d", a,
                   svol / (a * a * a) * 12, ncell[0], ncell[1], ncell[2], (int)b->max_tets);
  L->nx = (int32_t)ncell[0];
  L->ny = (int32_t)ncell[1];
  L->nz = (int32_t)ncell[2];
  ce_vec3 mid = ce_scale(ce_add(lo, hi), 0.5);
  L->o = ce_v3(mid.x - 0.5 * a * L->nx, mid.y - 0.5 * a * L->ny, mid.z - 0.5 * a * L->nz);
  b->nlat = (int64_t)(L->nx + 1) * (L->ny + 1) * (L->nz + 1) + (int64_t)L->nx * L->ny * L->nz;
  return CE_OK;
}

/* The winding number of every lattice vertex; one other than 0 or 1 means
 * the surface intersects itself: an error, or (use_hull_if_open, hull not
 * used yet) retry_on_hull. */
static ce_errno tb_classify(tet_build *b) {
  ce_errno e;
  if ((e = ce_tri_tree_build(&b->T, b->v, (const int32_t(*)[3])b->t, b->nf, b->err)) != CE_OK) return e;
  b->wind = malloc((size_t)b->nlat);
  if (!b->wind)
    return ce_fail(b->err, CE_ENOMEM, "tetrahedralise: out of memory for %lld lattice vertices", (long long)b->nlat);
  if ((e = classify(&b->L, &b->T, b->wind, b->opt, b->err)) != CE_OK) return e;
  for (int64_t id = 0; id < b->nlat; id++)
    if (b->wind[id] != 0 && b->wind[id] != 1) {
      if (b->opt->use_hull_if_open && !b->used_hull) {
        b->retry_on_hull = 1;
        return CE_OK;
      }
      ce_vec3 p = lattice_pos(&b->L, id);
      return ce_fail(b->err, CE_EDEGENERATE,
                     "surface intersects itself: winding number %d at (%.6g, %.6g, %.6g) (expected 0 or 1)",
                     (int)b->wind[id], p.x, p.y, p.z);
    }
  return CE_OK;
}

/* The lattice tets of one cube face: centres c1 = centre (i,j,k) and c2,
 * its neighbour along axis d, and each edge of their shared face; those
 * with an inside vertex are appended (positively oriented) to tlat. */
static ce_errno kept_tets_of_face(tet_build *b, int32_t i, int32_t j, int32_t k, int d, int64_t *cap, int64_t *nt) {
  const lattice *L = &b->L;
  int32_t i2 = i + (d == 0), j2 = j + (d == 1), k2 = k + (d == 2);
  if (i2 >= L->nx || j2 >= L->ny || k2 >= L->nz) return CE_OK;
  int64_t c1 = centre_id(L, i, j, k), c2 = centre_id(L, i2, j2, k2);
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
    q[s] = corner_id(L, ci, cj, ck);
  }
  const int8_t *wind = b->wind;
  for (int s = 0; s < 4; s++) {
    int64_t tv[4] = {c1, c2, q[s], q[(s + 1) % 4]};
    if (!(wind[tv[0]] || wind[tv[1]] || wind[tv[2]] || wind[tv[3]])) continue;
    ce_vec3 x[4];
    for (int r = 0; r < 4; r++) x[r] = lattice_pos(L, tv[r]);
    double vol6 = ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0])));
    if (vol6 < 0) {
      int64_t tmp = tv[2];
      tv[2] = tv[3];
      tv[3] = tmp;
    }
    if (*nt == *cap) {
      *cap *= 2;
      int64_t *nb = realloc(b->tlat, (size_t)*cap * 4 * sizeof *b->tlat);
      if (!nb) return ce_fail(b->err, CE_ENOMEM, "tetrahedralise: out of memory for %lld tets", (long long)*cap);
      b->tlat = nb;
    }
    if (*nt >= b->max_tets)
      return ce_fail(b->err, CE_ELIMIT, "tetrahedralise: more than %d tets at edge length %g", (int)b->max_tets, b->a);
    memcpy(&b->tlat[4 * *nt], tv, sizeof tv);
    (*nt)++;
  }
  return CE_OK;
}

/* Kept lattice tets: two adjacent centres + an edge of their shared face,
 * with at least one inside vertex. */
static ce_errno tb_kept_tets(tet_build *b) {
  const lattice *L = &b->L;
  int64_t cap = 1024, nt = 0;
  ce_errno e;
  b->tlat = malloc((size_t)cap * 4 * sizeof *b->tlat);
  if (!b->tlat) return tb_nomem(b);
  for (int32_t k = 0; k < L->nz; k++) {
    if ((e = tb_progress(b, 0.4 + 0.1 * k / (double)L->nz)) != CE_OK) return e;
    for (int32_t j = 0; j < L->ny; j++)
      for (int32_t i = 0; i < L->nx; i++)
        for (int d = 0; d < 3; d++)
          if ((e = kept_tets_of_face(b, i, j, k, d, &cap, &nt)) != CE_OK) return e;
  }
  if (nt == 0)
    return ce_fail(b->err, CE_EEMPTY,
                   "tetrahedralise: no lattice vertex inside the surface at edge length %g (too coarse)", b->a);
  b->nt = (int32_t)nt;
  return tb_progress(b, 0.5);
}

/* Compact the used lattice vertices, numbered in lattice-id order
 * (deterministic): a bitmap of the used ids, and a vertex's number is the
 * count of used ids below it (per-word prefix + popcount). Linear, where
 * sorting the 4 nt references took ~1 s per million tets with no
 * cancellation point inside. */
static ce_errno tb_number_vertices(tet_build *b) {
  const int32_t nt = b->nt;
  const int64_t nwords = (b->nlat + 63) / 64;
  const int64_t *tlat = b->tlat;
  b->used = calloc((size_t)nwords, sizeof *b->used);
  b->rank = malloc((size_t)nwords * sizeof *b->rank);
  b->tet = malloc((size_t)nt * sizeof *b->tet);
  if (!b->used || !b->rank || !b->tet) return tb_nomem(b);
  uint64_t *used = b->used;
  for (int64_t q = 0; q < (int64_t)nt * 4; q++) used[tlat[q] >> 6] |= 1ull << (tlat[q] & 63);
  int32_t nverts = 0;
  for (int64_t w = 0; w < nwords; w++) {
    b->rank[w] = nverts;
    nverts += __builtin_popcountll(used[w]);
  }
  for (int64_t q = 0; q < (int64_t)nt * 4; q++) {
    int64_t id = tlat[q];
    (&b->tet[0][0])[q] = b->rank[id >> 6] + __builtin_popcountll(used[id >> 6] & ((1ull << (id & 63)) - 1));
  }
  b->nverts = nverts;
  b->pos = malloc((size_t)nverts * sizeof *b->pos);
  b->target = malloc((size_t)nverts * sizeof *b->target);
  b->move = calloc((size_t)nverts, 1);
  b->side = calloc((size_t)nverts, 1);
  if (!b->pos || !b->target || !b->move || !b->side) return tb_nomem(b);
  int32_t c = 0;
  for (int64_t w = 0; w < nwords; w++)
    for (uint64_t bits = used[w]; bits; bits &= bits - 1) {
      int64_t id = 64 * w + __builtin_ctzll(bits);
      b->pos[c] = lattice_pos(&b->L, id);
      b->move[c] = b->wind[id] ? 2 : 1; /* 1 outside, 2 inside */
      b->side[c] = b->move[c];
      c++;
    }
  free(b->tlat);
  b->tlat = NULL;
  free(b->used);
  b->used = NULL;
  free(b->rank);
  b->rank = NULL;
  return CE_OK;
}

/* Warp targets: the closest surface point of every outside vertex of a tet
 * near the surface, and of its inside vertices closer than WARP_NEAR a;
 * move[i] = 1 for those, 0 for the rest. */
static ce_errno tb_warp_targets(tet_build *b) {
  const int32_t nt = b->nt, nverts = b->nverts;
  unsigned char *move = b->move;
  ce_errno e;
  b->stack = malloc((size_t)(b->T.nn + 1) * sizeof *b->stack);
  if (!b->stack) return tb_nomem(b);
  /* near the surface: the vertices of tets with an outside vertex (bit 4) */
  for (int32_t q = 0; q < nt; q++) {
    int out = 0;
    for (int r = 0; r < 4; r++) out |= move[b->tet[q][r]] == 1;
    if (out)
      for (int r = 0; r < 4; r++) move[b->tet[q][r]] |= 4;
  }
  for (int32_t i = 0; i < nverts; i++) {
    ce_vec3 c = b->pos[i];
    double d2 = INFINITY;
    if (!(move[i] & 4)) {
      move[i] = 0;
      continue;
    }
    d2 = ce_tri_tree_closest(&b->T, b->pos[i], &c, b->stack);
    if ((move[i] & 3) == 1 || d2 < (WARP_NEAR * b->a) * (WARP_NEAR * b->a)) {
      b->target[i] = c;
      move[i] = 1;
    } else {
      move[i] = 0;
    }
    if ((i & 4095) == 0 && (e = tb_progress(b, 0.5 + 0.25 * i / (double)nverts)) != CE_OK) return e;
  }
  return CE_OK;
}

/* Vertex -> tets, in compressed rows (vt_off, vt). */
static ce_errno tb_vertex_tets(tet_build *b) {
  const int32_t nt = b->nt, nverts = b->nverts;
  b->vt_off = calloc((size_t)nverts + 1, sizeof *b->vt_off);
  b->vt = malloc((size_t)nt * 4 * sizeof *b->vt);
  if (!b->vt_off || !b->vt) return tb_nomem(b);
  for (int32_t q = 0; q < nt; q++)
    for (int r = 0; r < 4; r++) b->vt_off[b->tet[q][r] + 1]++;
  for (int32_t i = 0; i < nverts; i++) b->vt_off[i + 1] += b->vt_off[i];
  int32_t *fill = malloc((size_t)nverts * sizeof *fill);
  if (!fill) return tb_nomem(b);
  memcpy(fill, b->vt_off, (size_t)nverts * sizeof *fill);
  for (int32_t q = 0; q < nt; q++)
    for (int r = 0; r < 4; r++) b->vt[fill[b->tet[q][r]]++] = q;
  free(fill);
  return CE_OK;
}

/* Quality of tet q at the current positions: 1 if it keeps a positive
 * volume and its smallest dihedral angle >= bound; *all: its four
 * vertices are on the surface. */
static int tet_ok(const tet_build *b, int32_t q, double bound, int *all) {
  ce_vec3 x[4];
  *all = 1;
  for (int r = 0; r < 4; r++) {
    x[r] = b->pos[b->tet[q][r]];
    *all &= b->onsurf[b->tet[q][r]];
  }
  double mn, mx, v6;
  tet_quality(x, &mn, &mx, &v6);
  return v6 > 0 && mn >= bound;
}

/* Move vertex i toward its target by the longest step (1, 1/2, 1/4, 1/8)
 * that keeps every live tet around it at the bound; a tet that fails only
 * because its four vertices are all on the surface does not block the
 * move, and is dropped (dead) with the other failing all-on-surface tets
 * once the move is taken at full length or over such a tet. No step: the
 * vertex stays. */
static void warp_vertex(tet_build *b, int32_t i, double bound) {
  const int32_t *vt_off = b->vt_off, *vt = b->vt;
  ce_vec3 x0 = b->pos[i], dx = ce_sub(b->target[i], x0);
  static const double steps[4] = {1, 0.5, 0.25, 0.125};
  for (int s = 0; s < 4; s++) {
    b->pos[i] = ce_axpy(x0, steps[s], dx);
    b->onsurf[i] = s == 0;
    int ok = 1;
    for (int32_t q = vt_off[i]; q < vt_off[i + 1] && ok; q++) {
      if (b->dead[vt[q]]) continue;
      int all;
      if (!tet_ok(b, vt[q], bound, &all)) ok = all ? 2 : 0;
    }
    if (ok) {
      if (ok == 2 || s == 0)
        for (int32_t q = vt_off[i]; q < vt_off[i + 1]; q++) {
          int all = 1;
          for (int r = 0; r < 4; r++) all &= b->onsurf[b->tet[vt[q]][r]];
          if (!all || b->dead[vt[q]]) continue;
          if (!tet_ok(b, vt[q], bound, &all)) b->dead[vt[q]] = 1;
        }
      return;
    }
    b->pos[i] = x0;
    b->onsurf[i] = 0;
  }
}

/* Guarded warp, one vertex at a time in index order; tets whose four
 * vertices all reach the surface may fail the guard: they are flat slivers
 * on the surface and are dropped. */
static ce_errno tb_guarded_warp(tet_build *b) {
  const double bound = CE_TETRAHEDRALIZE_MIN_DIHEDRAL_DEG * M_PI / 180.0;
  const int32_t nverts = b->nverts;
  ce_errno e;
  b->onsurf = calloc((size_t)nverts, 1);
  b->dead = calloc((size_t)b->nt, 1);
  if (!b->onsurf || !b->dead) return tb_nomem(b);
  for (int32_t i = 0; i < nverts; i++) {
    if (!b->move[i]) continue;
    warp_vertex(b, i, bound);
    if ((i & 4095) == 0 && (e = tb_progress(b, 0.75 + 0.2 * i / (double)nverts)) != CE_OK) return e;
  }
  return CE_OK;
}

/* Tets still sticking out (a vertex left outside, or all four on the
 * surface) whose centroid is outside the surface are dropped. */
static ce_errno tb_drop_outside(tet_build *b) {
  const double ex = b->a * 3.1415926535e-7, ey = b->a * 2.7182818284e-7;
  const int32_t(*tet)[4] = (const int32_t(*)[4])b->tet;
  ce_ray_crossing *cb = NULL;
  int32_t ccap = 0;
  ce_errno e = CE_OK;
  for (int32_t q = 0; q < b->nt; q++) {
    if ((q & 16383) == 0 && (e = tb_progress(b, 0.95)) != CE_OK) break;
    if (b->dead[q]) continue;
    int stuck = 0, all = 1;
    for (int r = 0; r < 4; r++) {
      int32_t i = tet[q][r];
      stuck |= b->side[i] == 1 && !b->onsurf[i];
      all &= b->onsurf[i];
    }
    if (!stuck && !all) continue;
    const ce_vec3 *pos = b->pos;
    ce_vec3 c = ce_scale(ce_add(ce_add(pos[tet[q][0]], pos[tet[q][1]]), ce_add(pos[tet[q][2]], pos[tet[q][3]])), 0.25);
    int32_t nc = 0;
    if (ce_tri_tree_vertical(&b->T, c.x + ex, c.y + ey, b->stack, &cb, &ccap, &nc) != CE_OK) {
      e = ce_fail(b->err, CE_ENOMEM, "tetrahedralise: out of memory for ray crossings");
      break;
    }
    int w = 0;
    for (int32_t k = 0; k < nc; k++)
      if (cb[k].z > c.z) w += cb[k].sign;
    if (w == 0) b->dead[q] = 1;
  }
  free(cb);
  return e;
}

/* Compact: live tets, used vertices (order kept). */
static ce_errno tb_compact(tet_build *b) {
  int32_t(*tet)[4] = b->tet;
  int32_t *ren = b->vt_off; /* reuse: nverts + 1 entries */
  for (int32_t i = 0; i < b->nverts; i++) ren[i] = -1;
  int32_t k = 0;
  for (int32_t q = 0; q < b->nt; q++)
    if (!b->dead[q]) memmove(tet[k++], tet[q], sizeof tet[q]);
  if (k == 0) return ce_fail(b->err, CE_EEMPTY, "tetrahedralise: no tet left at edge length %g (too coarse)", b->a);
  b->nt = k;
  for (int32_t q = 0; q < b->nt; q++)
    for (int r = 0; r < 4; r++) ren[tet[q][r]] = 0;
  int32_t c = 0;
  for (int32_t i = 0; i < b->nverts; i++)
    if (ren[i] == 0) {
      ren[i] = c;
      b->pos[c++] = b->pos[i];
    }
  for (int32_t q = 0; q < b->nt; q++)
    for (int r = 0; r < 4; r++) tet[q][r] = ren[tet[q][r]];
  b->nverts = c;
  return CE_OK;
}

/* The outputs (the tets move to the caller) and the report. */
static ce_errno tb_outputs(tet_build *b, double **out_vertices, int32_t *out_nv, int32_t **out_tets, int32_t *out_nt,
                           ce_surface_build_report *rep) {
  const int32_t nt = b->nt, nverts = b->nverts;
  const ce_vec3 *pos = b->pos;
  ce_errno e;
  double vol = 0, mn = INFINITY, mx = 0;
  for (int32_t q = 0; q < nt; q++) {
    ce_vec3 x[4];
    for (int r = 0; r < 4; r++) x[r] = pos[b->tet[q][r]];
    double a1, a2, v6;
    tet_quality(x, &a1, &a2, &v6);
    vol += v6 / 6;
    mn = fmin(mn, a1);
    mx = fmax(mx, a2);
  }
  if ((e = tb_progress(b, 1.0)) != CE_OK) return e;
  double *ov = malloc((size_t)nverts * 3 * sizeof *ov);
  if (!ov) return tb_nomem(b);
  for (int32_t i = 0; i < nverts; i++) {
    ov[3 * i] = pos[i].x;
    ov[3 * i + 1] = pos[i].y;
    ov[3 * i + 2] = pos[i].z;
  }
  *out_vertices = ov;
  *out_nv = nverts;
  *out_tets = &b->tet[0][0];
  *out_nt = nt;
  b->tet = NULL;
  if (rep) {
    memset(rep, 0, sizeof *rep);
    rep->tets = nt;
    rep->vertices = nverts;
    rep->min_dihedral_deg = mn * 180 / M_PI;
    rep->max_dihedral_deg = mx * 180 / M_PI;
    rep->volume = vol;
    rep->surface_volume = b->svol;
    rep->volume_error = (vol - b->svol) / b->svol;
    rep->used_hull = b->used_hull;
  }
  return CE_OK;
}

static void tb_free(tet_build *b) {
  ce_tri_tree_free(&b->T);
  ce_geometry_free(b->hull);
  free(b->v);
  free(b->t);
  free(b->wind);
  free(b->tet);
  free(b->tlat);
  free(b->used);
  free(b->rank);
  free(b->pos);
  free(b->target);
  free(b->move);
  free(b->side);
  free(b->onsurf);
  free(b->dead);
  free(b->vt_off);
  free(b->vt);
  free(b->stack);
}

/* The surface intersects itself: tetrahedralise its convex hull instead
 * (reported as used_hull). */
static ce_errno tetrahedralize_hull(const double *vertices, int32_t nv, const ce_surface_build_options *opt,
                                    double **out_vertices, int32_t *out_nv, int32_t **out_tets, int32_t *out_nt,
                                    ce_surface_build_report *rep, ce_error *err) {
  ce_geometry *h2 = NULL;
  ce_errno e;
  if ((e = hull_of(vertices, nv, opt->edge_length, &h2, err)) != CE_OK) return e;
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
  e = ce_tetrahedralize_surface(hvx, h2->tri.nv, &h2->tri.tri[0][0], h2->tri.nf, opt, out_vertices, out_nv, out_tets,
                                out_nt, rep, err);
  if (e == CE_OK && rep) rep->used_hull = 1;
  free(hvx);
  ce_geometry_free(h2);
  return e;
}

/* ---- the main entry --------------------------------------------------------- */

ce_errno ce_tetrahedralize_surface(const double *vertices, int32_t nv, const int32_t *tris, int32_t nf,
                                   const ce_surface_build_options *opt, double **out_vertices, int32_t *out_nv,
                                   int32_t **out_tets, int32_t *out_nt, ce_surface_build_report *rep,
                                   ce_error *err) {
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

  tet_build b;
  memset(&b, 0, sizeof b);
  b.vertices = vertices;
  b.tris = tris;
  b.nv_in = nv;
  b.nf_in = nf;
  b.opt = opt;
  b.a = a;
  b.max_tets = opt->max_tets > 0 ? opt->max_tets : CE_LIMIT_SURFACE_TETS;
  b.err = err;
  /* each stage fills what the next one reads; tb_free releases it all */
  static ce_errno (*const stages[])(tet_build *) = {
      tb_load_surface,    tb_closed_or_hull, tb_lattice,     tb_classify,     tb_kept_tets, tb_number_vertices,
      tb_warp_targets,    tb_vertex_tets,    tb_guarded_warp, tb_drop_outside, tb_compact,
  };
  ce_errno e = CE_OK;
  for (size_t s = 0; s < sizeof stages / sizeof stages[0] && e == CE_OK && !b.retry_on_hull; s++) e = stages[s](&b);
  if (e == CE_OK && !b.retry_on_hull) e = tb_outputs(&b, out_vertices, out_nv, out_tets, out_nt, rep);
  tb_free(&b);
  if (e == CE_OK && b.retry_on_hull)
    return tetrahedralize_hull(vertices, nv, opt, out_vertices, out_nv, out_tets, out_nt, rep, err);
  if (e != CE_OK) {
    *out_nt = 0;
    *out_nv = 0;
  }
  return e;
}

ce_errno ce_geometry_from_surface(const double *vertices, int32_t nv, const int32_t *tris, int32_t nf,
                                  const ce_props *props, const ce_surface_build_options *opt, ce_geometry **out,
                                  ce_surface_build_report *rep, ce_error *err) {
  if (!out) return ce_fail(err, CE_EINVAL, "surface build: out is NULL");
  *out = NULL;
  ce_props p0; /* the margin passes on to ce_geometry_from_tetmesh_field */
  ce_errno e = ce_margin_take(props, &p0, err);
  if (e || (e = ce_props_check(&p0, 0, 0, err))) return e;
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
