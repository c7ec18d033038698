/* ce_surface.c — the contact-surface builder.
 *
 * An intersector adds vertices (position, pressure) and convex faces in the
 * frame of the compliant geometry M, with normals pointing out of N into M.
 * ce_builder_finish turns that into the world-frame ce_surface of the query,
 * in the query's (A, B) order:
 *  - vertices are placed by X_WM, normals and gradients rotated by R_WM;
 *  - when M is body B (m_is_a == 0) every normal is flipped (so it points out
 *    of B into A) and every face's vertex order is reversed, which keeps it
 *    counter-clockwise about the flipped normal; M's gradient/element arrays
 *    go to the B slots and N's to the A slots;
 *  - per face: area, area centroid and the pressure at the centroid. For a
 *    planar convex polygon carrying a linear field these are exact: the
 *    polygon is fanned into triangles around its vertex 0 (in M's frame,
 *    areas from the known normal without a sqrt), and the pressure at a
 *    triangle's centroid is the mean of its three vertex pressures, so the
 *    area-weighted mean of those is the mean pressure of the polygon, which
 *    equals the pressure at its area centroid;
 *  - CE_REPRESENTATION_TRIANGLE: every polygon is fanned into n triangles
 *    around one new vertex at its area centroid carrying the centroid
 *    pressure (Elandt et al. 2019, Fig. 5). Neighbouring polygons share their edge
 *    vertices, so the fanned surface stays continuous; each triangle
 *    inherits the polygon's normal, gradients and source elements.
 * All storage is arena memory (ce_buf growable arrays). */
#include <math.h>
#include <string.h>

#include "ce_surface.h"
#include "ce_arena.h"

ce_errno ce_builder_init(ce_builder *b, ce_arena *arena) {
  memset(b, 0, sizeof *b);
  b->arena = arena;
  ce_buf_init(&b->v, sizeof(ce_vec3));
  ce_buf_init(&b->p, sizeof(double));
  ce_buf_init(&b->face_off, sizeof(int32_t));
  ce_buf_init(&b->face_vert, sizeof(int32_t));
  ce_buf_init(&b->normal, sizeof(ce_vec3));
  ce_buf_init(&b->grad_m, sizeof(ce_vec3));
  ce_buf_init(&b->grad_n, sizeof(ce_vec3));
  ce_buf_init(&b->elem_m, sizeof(int32_t));
  ce_buf_init(&b->elem_n, sizeof(int32_t));
  int32_t *z = ce_buf_push(arena, &b->face_off);
  if (!z) return CE_ENOMEM;
  *z = 0;
  return CE_OK;
}

ce_errno ce_builder_add_polygon(ce_builder *b, const ce_vec3 *x, const double *p, int n,
                                ce_vec3 normal, ce_vec3 grad_m, ce_vec3 grad_n, int32_t elem_m,
                                int32_t elem_n) {
  if (n < 3 || n > CE_MAX_POLY) return CE_EINVAL;
  if (b->v.len + n > INT32_MAX) return CE_ENOMEM;
  if (b->face_vert.len + n > INT32_MAX) return CE_ELIMIT;
  /* What n calls of ce_builder_add_vertex and one of ce_builder_add_face
   * do, in one go; the ids (fresh, hence valid) are not re-checked. */
  if (ce_builder_face_room(b, n, n) != CE_OK) return CE_ENOMEM;
  int32_t base = (int32_t)b->v.len;
  ce_vec3 *bv = (ce_vec3 *)b->v.data + base;
  double *bp = (double *)b->p.data + base;
  int32_t *fv = (int32_t *)b->face_vert.data + b->face_vert.len;
  for (int i = 0; i < n; i++) {
    bv[i] = x[i];
    bp[i] = p[i];
    fv[i] = base + i;
  }
  b->v.len += n;
  b->p.len += n;
  b->face_vert.len += n;
  ce_builder_face_record(b, normal, grad_m, grad_n, elem_m, elem_n);
  return CE_OK;
}

ce_errno ce_builder_reserve(ce_builder *b, int64_t nv, int64_t nf, int64_t nc) {
  ce_arena *a = b->arena;
  if (ce_buf_reserve(a, &b->v, nv) != CE_OK || ce_buf_reserve(a, &b->p, nv) != CE_OK ||
      ce_buf_reserve(a, &b->face_vert, nc) != CE_OK || ce_buf_reserve(a, &b->face_off, nf) != CE_OK ||
      ce_buf_reserve(a, &b->normal, nf) != CE_OK || ce_buf_reserve(a, &b->grad_m, nf) != CE_OK ||
      ce_buf_reserve(a, &b->grad_n, nf) != CE_OK || ce_buf_reserve(a, &b->elem_m, nf) != CE_OK ||
      ce_buf_reserve(a, &b->elem_n, nf) != CE_OK)
    return CE_ENOMEM;
  return CE_OK;
}

ce_builder_mark ce_builder_tell(const ce_builder *b) {
  return (ce_builder_mark){b->v.len, b->face_off.len, b->face_vert.len};
}

void ce_builder_rewind(ce_builder *b, ce_builder_mark m) {
  b->v.len = b->p.len = m.v;
  b->face_off.len = m.face;
  b->normal.len = b->grad_m.len = b->grad_n.len = b->elem_m.len = b->elem_n.len = m.face - 1;
  b->face_vert.len = m.corner;
}

/* Area, area centroid and centroid pressure of the polygon ids[0..n) of the
 * builder (M's frame), planar with unit normal nrm, and (with fn != NULL)
 * its pressure moments: fn = integral of p, *cp = integral of p x / fn.
 * Fan around vertex 0: with r relative to it, triangle (0, i, j) has area
 * d/2, d = (ri x rj) . nrm (the polygon is planar, so no sqrt is needed),
 * centroid offset (ri + rj)/3 and, for a linear field, centroid pressure
 * (p0 + pi + pj)/3, so the area-weighted mean of those is the mean
 * pressure of the polygon, which equals the pressure at its area centroid.
 * The integral of p r over the triangle is d/24 ((s + pi) ri + (s + pj) rj)
 * with s = p0 + pi + pj (the degree-2 rule exact for a linear p times r).
 * The signed d sum to the exact area of the polygon; taking the magnitude
 * of the total (the ratios below do not depend on its sign) keeps a
 * polygon that arrives clockwise correct too. */
static inline __attribute__((always_inline)) void polygon_moments(const ce_vec3 *v, const double *p,
                                                                  const int32_t *ids, int n, ce_vec3 nrm,
                                                                  double *area, ce_vec3 *centroid, double *pc,
                                                                  double *fn, ce_vec3 *cp) {
  ce_vec3 x0 = v[ids[0]];
  double p0 = p[ids[0]];
  ce_vec3 ri = ce_sub(v[ids[1]], x0);
  double pi = p[ids[1]];
  if (n == 3) { /* most polygons: the triangle's own centroid, no division */
    ce_vec3 rj = ce_sub(v[ids[2]], x0);
    double pj = p[ids[2]];
    double d = ce_dot(ce_cross(ri, rj), nrm), sp = p0 + pi + pj;
    *area = 0.5 * fabs(d);
    *centroid = ce_axpy(x0, 1.0 / 3.0, ce_add(ri, rj));
    *pc = sp * (1.0 / 3.0);
    if (fn) {
      /* d cancels between the integral of p r and fn */
      *fn = *area * *pc;
      *cp = sp != 0 ? ce_axpy(x0, 0.25 / sp, ce_axpy(ce_scale(ri, sp + pi), sp + pj, rj)) : *centroid;
    }
    return;
  }
  double D = 0, P = 0;
  ce_vec3 R = ce_v3(0, 0, 0), Q = ce_v3(0, 0, 0);
  for (int i = 2; i < n; i++) {
    ce_vec3 rj = ce_sub(v[ids[i]], x0);
    double pj = p[ids[i]];
    double d = ce_dot(ce_cross(ri, rj), nrm);
    double sp = p0 + pi + pj;
    D += d;
    P += d * sp;
    R = ce_axpy(R, d, ce_add(ri, rj));
    if (fn) Q = ce_axpy(Q, d, ce_axpy(ce_scale(ri, sp + pi), sp + pj, rj));
    ri = rj;
    pi = pj;
  }
  *area = 0.5 * fabs(D);
  if (fabs(D) > 0) {
    double s = 1.0 / (3.0 * D);
    *centroid = ce_axpy(x0, s, R);
    *pc = P * s;
  } else { /* degenerate: the vertex average */
    ce_vec3 c = ce_v3(0, 0, 0);
    double q = 0;
    for (int i = 0; i < n; i++) {
      c = ce_add(c, v[ids[i]]);
      q += p[ids[i]];
    }
    *centroid = ce_scale(c, 1.0 / n);
    *pc = q / n;
  }
  if (fn) {
    *fn = *area * *pc;
    *cp = P != 0 && fabs(D) > 0 ? ce_axpy(x0, 0.25 / P, Q) : *centroid;
  }
}

/* n uninitialised elements (the caller writes every one); NULL on failure. */
static void *arena_array(ce_arena *a, size_t n, size_t elem) {
  if (elem && n > SIZE_MAX / elem) return NULL;
  return ce_arena_alloc(a, n * elem);
}

/* out[i] = R in[i] for n vectors (one tight loop per array). */
static void rotate_all(const ce_mat3 *R, const ce_vec3 *in, ce_vec3 *out, int64_t n) {
  const ce_mat3 M = *R;
  for (int64_t i = 0; i < n; i++) out[i] = ce_mat3_mul_vec(&M, in[i]);
}

/* ce_builder_finish's view of one builder and the surface it fills. */
typedef struct finish_ctx {
  ce_arena *a;
  int64_t npoly, nvb, nfv; /* builder polygons, vertices, polygon corners */
  const ce_vec3 *bv;
  const double *bp;
  const int32_t *off, *fv;
  const ce_vec3 *bn, *bgm, *bgn;
  const int32_t *bem, *ben;
  int flip; /* M is B: normals negated, polygons reversed */
  ce_pose X;
  ce_mat3 Rn;     /* normals out of B into A */
  int32_t *remap; /* builder vertex -> surface vertex, -1 unused (NULL: same ids) */
  int64_t nused;  /* builder vertices some face uses */
  ce_surface s;
  int32_t *em, *en; /* s.element_a / element_b as M's and N's */
  ce_vec3 *gm, *gn; /* M's and N's face gradients (NULL: rigid side) */
} finish_ctx;

/* Drop vertices no face uses (an intersector may create a cut point for a
 * polygon it then rejects as degenerate); keep the others in order. When
 * the faces list the vertices exactly once each and in order (every
 * builder fed by ce_builder_add_polygon alone) nothing is dropped and the
 * ids stay as they are: one compare per id instead of the remap. */
static ce_errno finish_remap(finish_ctx *c) {
  const int64_t nvb = c->nvb, nfv = c->nfv;
  const int32_t *fv = c->fv;
  c->remap = NULL;
  c->nused = nvb;
  int ident = nfv == nvb;
  if (ident) {
    int32_t diff = 0; /* a branch-free OR over all ids (vectorises) */
    for (int64_t i = 0; i < nfv; i++) diff |= fv[i] ^ (int32_t)i;
    ident = diff == 0;
  }
  if (ident) return CE_OK;
  int32_t *remap = ce_arena_alloc(c->a, (size_t)(nvb > 0 ? nvb : 1) * sizeof(int32_t));
  if (!remap) return CE_ENOMEM;
  for (int64_t i = 0; i < nvb; i++) remap[i] = -1;
  for (int64_t i = 0; i < nfv; i++) remap[fv[i]] = 0;
  int64_t nused = 0;
  for (int64_t i = 0; i < nvb; i++)
    if (remap[i] == 0) remap[i] = (int32_t)nused++;
  c->nused = nused;
  /* every vertex used (shared vertices, none dropped): ids unchanged */
  c->remap = nused == nvb ? NULL : remap;
  return CE_OK;
}

/* The surface's arrays (arena), sized for the representation. */
static ce_errno finish_alloc(finish_ctx *c, int tri, int m_is_a, int m_compliant, int n_compliant) {
  ce_arena *a = c->a;
  int64_t nv = c->nused + (tri ? c->npoly : 0);
  int64_t nf = tri ? c->nfv : c->npoly;
  int64_t nidx = tri ? 3 * nf : c->nfv;
  if (nv > INT32_MAX || nf > INT32_MAX || nidx > INT32_MAX) return CE_ELIMIT;
  ce_surface *s = &c->s;
  memset(s, 0, sizeof *s);
  s->nv = (int32_t)nv;
  s->nf = (int32_t)nf;
  /* every element of these is written below */
  s->vertices = arena_array(a, (size_t)nv, sizeof(ce_vec3));
  s->pressure = arena_array(a, (size_t)nv, sizeof(double));
  s->face_offsets = arena_array(a, (size_t)nf + 1, sizeof(int32_t));
  s->face_vertices = arena_array(a, (size_t)nidx, sizeof(int32_t));
  s->normal = arena_array(a, (size_t)nf, sizeof(ce_vec3));
  s->area = arena_array(a, (size_t)nf, sizeof(double));
  s->centroid = arena_array(a, (size_t)nf, sizeof(ce_vec3));
  s->centroid_pressure = arena_array(a, (size_t)nf, sizeof(double));
  s->element_a = arena_array(a, (size_t)nf, sizeof(int32_t));
  s->element_b = arena_array(a, (size_t)nf, sizeof(int32_t));
  s->patch = arena_array(a, (size_t)nf, sizeof(int32_t));
  int grad_m_on = m_compliant != 0, grad_n_on = n_compliant != 0;
  ce_vec3 *gm = grad_m_on ? arena_array(a, (size_t)nf, sizeof(ce_vec3)) : NULL;
  ce_vec3 *gn = grad_n_on ? arena_array(a, (size_t)nf, sizeof(ce_vec3)) : NULL;
  if (!s->vertices || !s->pressure || !s->face_offsets || !s->face_vertices || !s->normal || !s->area ||
      !s->centroid || !s->centroid_pressure || !s->element_a || !s->element_b || !s->patch ||
      (grad_m_on && !gm) || (grad_n_on && !gn))
    return CE_ENOMEM;
  c->em = m_is_a ? s->element_a : s->element_b;
  c->en = m_is_a ? s->element_b : s->element_a;
  c->gm = gm;
  c->gn = gn;
  s->grad_a = m_is_a ? gm : gn;
  s->grad_b = m_is_a ? gn : gm;
  return CE_OK;
}

/* The used builder vertices and their pressures, placed in the world. */
static void finish_vertices(finish_ctx *c) {
  const ce_pose X = c->X;
  const ce_vec3 *bv = c->bv;
  const double *bp = c->bp;
  const int32_t *remap = c->remap;
  ce_vec3 *sv = c->s.vertices;
  double *sp = c->s.pressure;
  if (!remap) {
    for (int64_t i = 0; i < c->nvb; i++) {
      sv[i] = ce_pose_apply(&X, bv[i]);
      sp[i] = bp[i];
    }
  } else {
    for (int64_t i = 0; i < c->nvb; i++) {
      if (remap[i] < 0) continue;
      sv[remap[i]] = ce_pose_apply(&X, bv[i]);
      sp[remap[i]] = bp[i];
    }
  }
}

/* One face per polygon: the per-face arrays are whole-array passes. The
 * moments are taken in M's frame (area is invariant, the centroid is
 * placed once). */
static ce_errno finish_polygons(finish_ctx *c, ce_face_moments *pm) {
  ce_surface s = c->s;
  const ce_pose X = c->X;
  const int64_t npoly = c->npoly, nfv = c->nfv;
  const ce_vec3 *bv = c->bv, *bn = c->bn;
  const double *bp = c->bp;
  const int32_t *off = c->off, *fv = c->fv, *remap = c->remap;
  const int flip = c->flip;
  double *fn = pm ? arena_array(c->a, (size_t)npoly, sizeof(double)) : NULL;
  ce_vec3 *cp = pm ? arena_array(c->a, (size_t)npoly, sizeof(ce_vec3)) : NULL;
  if (pm && (!fn || !cp)) return CE_ENOMEM;
  if (fn) {
    for (int64_t q = 0; q < npoly; q++) {
      ce_vec3 cq, x;
      polygon_moments(bv, bp, fv + off[q], off[q + 1] - off[q], bn[q], &s.area[q], &cq, &s.centroid_pressure[q],
                      &fn[q], &x);
      s.centroid[q] = ce_pose_apply(&X, cq);
      cp[q] = ce_pose_apply(&X, x);
    }
    pm->fn = fn;
    pm->cp = cp;
  } else {
    for (int64_t q = 0; q < npoly; q++) {
      ce_vec3 cq;
      polygon_moments(bv, bp, fv + off[q], off[q + 1] - off[q], bn[q], &s.area[q], &cq, &s.centroid_pressure[q],
                      NULL, NULL);
      s.centroid[q] = ce_pose_apply(&X, cq);
    }
  }
  rotate_all(&c->Rn, bn, s.normal, npoly);
  if (c->gm) rotate_all(&X.R, c->bgm, c->gm, npoly);
  if (c->gn) rotate_all(&X.R, c->bgn, c->gn, npoly);
  if (npoly) {
    memcpy(c->em, c->bem, (size_t)npoly * sizeof(int32_t));
    memcpy(c->en, c->ben, (size_t)npoly * sizeof(int32_t));
    memcpy(s.face_offsets, off, (size_t)(npoly + 1) * sizeof(int32_t));
    memset(s.patch, 0xff, (size_t)npoly * sizeof(int32_t)); /* every patch -1 */
  }
  if (!remap && !flip) {
    /* a plain loop: these arrays are large enough for memcpy's string
     * path, which is no faster here */
    for (int64_t i = 0; i < nfv; i++) s.face_vertices[i] = fv[i];
  } else {
    /* reversed when flipped: counter-clockwise about the flipped normal */
    for (int64_t q = 0; q < npoly; q++) {
      const int32_t *src = fv + off[q];
      int32_t *dst = s.face_vertices + off[q];
      int n = off[q + 1] - off[q];
      for (int i = 0; i < n; i++) {
        int32_t id = src[flip ? n - 1 - i : i];
        dst[i] = remap ? remap[id] : id;
      }
    }
  }
  return CE_OK;
}

/* Each polygon fanned into triangles around its centroid (a new vertex
 * after the used builder vertices). */
static void finish_triangles(finish_ctx *c) {
  ce_surface s = c->s;
  const ce_pose X = c->X;
  const ce_mat3 Rn = c->Rn;
  const ce_vec3 *bv = c->bv, *bn = c->bn, *bgm = c->bgm, *bgn = c->bgn;
  const double *bp = c->bp;
  const int32_t *off = c->off, *fv = c->fv, *remap = c->remap, *bem = c->bem, *ben = c->ben;
  int32_t *em = c->em, *en = c->en;
  ce_vec3 *gm = c->gm, *gn = c->gn;
  const int flip = c->flip;
  int64_t f = 0, k = 0;
  for (int64_t q = 0; q < c->npoly; q++) {
    int n = off[q + 1] - off[q];
    int32_t ids[CE_MAX_POLY];
    for (int i = 0; i < n; i++) ids[i] = remap ? remap[fv[off[q] + i]] : fv[off[q] + i];
    ce_vec3 nW = ce_mat3_mul_vec(&Rn, bn[q]);
    ce_vec3 gmW = gm ? ce_pose_rotate(&X, bgm[q]) : ce_v3(0, 0, 0);
    ce_vec3 gnW = gn ? ce_pose_rotate(&X, bgn[q]) : ce_v3(0, 0, 0);
    double A, pc;
    ce_vec3 cq;
    polygon_moments(bv, bp, fv + off[q], n, bn[q], &A, &cq, &pc, NULL, NULL);
    int32_t cid = (int32_t)(c->nused + q);
    s.vertices[cid] = ce_pose_apply(&X, cq);
    s.pressure[cid] = pc;
    for (int i = 0; i < n; i++) {
      int32_t vi = ids[i], vj = ids[i + 1 == n ? 0 : i + 1];
      int32_t t[3] = {cid, flip ? vj : vi, flip ? vi : vj};
      s.face_vertices[k++] = t[0];
      s.face_vertices[k++] = t[1];
      s.face_vertices[k++] = t[2];
      s.face_offsets[f + 1] = (int32_t)k;
      ce_vec3 x0 = s.vertices[t[0]], x1 = s.vertices[t[1]], x2 = s.vertices[t[2]];
      /* planar, unit normal: |cross| = |cross . n| (no sqrt) */
      s.area[f] = 0.5 * fabs(ce_dot(ce_cross(ce_sub(x1, x0), ce_sub(x2, x0)), nW));
      s.centroid[f] = ce_scale(ce_add(x0, ce_add(x1, x2)), 1.0 / 3.0);
      s.centroid_pressure[f] = (s.pressure[t[0]] + s.pressure[t[1]] + s.pressure[t[2]]) / 3.0;
      s.normal[f] = nW;
      if (gm) gm[f] = gmW;
      if (gn) gn[f] = gnW;
      em[f] = bem[q];
      en[f] = ben[q];
      s.patch[f] = -1;
      f++;
    }
  }
}

ce_errno ce_builder_finish(ce_builder *b, const ce_pose *X_WM, int m_is_a, int m_compliant,
                           int n_compliant, ce_representation rep, ce_surface *out, ce_face_moments *pm) {
  memset(out, 0, sizeof *out);
  if (pm) pm->fn = NULL, pm->cp = NULL;
  finish_ctx c;
  memset(&c, 0, sizeof c);
  c.a = b->arena;
  c.npoly = b->face_off.len - 1;
  c.nvb = b->v.len;
  c.nfv = b->face_vert.len;
  c.bv = b->v.data;
  c.bp = b->p.data;
  c.off = b->face_off.data;
  c.fv = b->face_vert.data;
  c.bn = b->normal.data;
  c.bgm = b->grad_m.data;
  c.bgn = b->grad_n.data;
  c.bem = b->elem_m.data;
  c.ben = b->elem_n.data;
  c.flip = !m_is_a;
  c.X = *X_WM;
  const int tri = rep == CE_REPRESENTATION_TRIANGLE;
  ce_errno e;
  if ((e = finish_remap(&c)) != CE_OK) return e;
  if ((e = finish_alloc(&c, tri, m_is_a, m_compliant, n_compliant)) != CE_OK) return e;
  finish_vertices(&c);
  /* Normals out of B into A: R_WM n, negated when M is B (folded into the
   * matrix once; negation is exact). */
  c.Rn = c.X.R;
  if (c.flip)
    for (int r = 0; r < 3; r++)
      for (int k = 0; k < 3; k++) c.Rn.m[r][k] = -c.Rn.m[r][k];
  c.s.face_offsets[0] = 0;
  if (!tri) {
    if ((e = finish_polygons(&c, pm)) != CE_OK) return e;
  } else {
    finish_triangles(&c);
  }
  *out = c.s;
  return CE_OK;
}
