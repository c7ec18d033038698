/* ce_margin.c — margins: a compliant primitive's copy inflated by delta,
 * and what the inflated copies say about two bodies that do not touch.
 *
 * Inflation (as Drake gives its hydroelastic geometries a margin): the
 * primitive's tet mesh and field stay as they are, and a layer of tets is
 * added over its boundary. Each boundary vertex x gets an outer copy x':
 *  - sphere, capsule: x' = x + delta u, u the unit vector from the centre
 *    (the medial segment's nearest point) to x, so x' lies on the sphere
 *    (capsule) of radius R + delta: the exact offset surface, tessellated
 *    as the original;
 *  - box, cylinder (a regular prism): every face plane through x moves out
 *    by delta (n_j . (x' - x) = delta for its one, two or three distinct
 *    face planes), so the outer surface is the box (prism) grown by delta
 *    on every side.
 * The primitive's field is E d / H (box, prism: d the distance to the
 * nearest face) or E (1 - r / R) (sphere, capsule: r the distance to the
 * centre or segment), of gradient magnitude G = E / H or E / R at the
 * boundary; extended beyond it the same function takes -G delta at every
 * x', which is what x' gets. Each boundary triangle (a, b, c) and its copy
 * make a prism, split into three tets by the vertices' global order (so
 * that neighbouring prisms split their shared side the same way). The
 * field is then zero on the original surface (the layer's inner faces
 * carry the boundary's zero), negative in the layer, and unchanged inside.
 * Other shapes and user meshes are refused (ce_primitive.c): an offset of
 * a general boundary along vertex normals can fold over itself in concave
 * regions.
 *
 * Speculative contact. The contact itself is always computed on the
 * original geometries, so a margin changes no force. When the bodies do not
 * touch, the inflated copies' surface (every face of it where the extended
 * fields are negative) tells how far apart they are: at a corner of face f
 * with pressure p < 0 and effective gradient g = gA gB / (gA + gB) along the
 * face normal (as ce_face_contact.c, Masterjohn et al. 2022), both fields
 * reach zero after an approach of -p / g. The separation is the least such
 * value over the corners, the stiffness the sum of g A over the faces (the
 * per-face springs of the speculative surface). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_passes.h"

/* Distinct face planes per boundary vertex: at most three (a corner). */
#define CE_MARGIN_PLANES 3

typedef struct vplanes {
  ce_vec3 n[CE_MARGIN_PLANES];
  int k;
} vplanes;

/* The outward unit normal of the boundary face of tet t opposite its
 * vertex i, and the face's three vertices. */
static ce_vec3 face_normal(const ce_tetmesh *m, int32_t t, int i, int32_t f[3]) {
  for (int j = 0; j < 3; j++) f[j] = m->tet[t][ce_tet_face_vertex[i][j]];
  ce_vec3 a = m->v[f[0]];
  ce_vec3 n = ce_normalize(ce_cross(ce_sub(m->v[f[1]], a), ce_sub(m->v[f[2]], a)));
  if (ce_dot(n, ce_sub(m->v[m->tet[t][i]], a)) > 0) n = ce_neg(n);
  return n;
}

/* x' - x for a vertex on the planes pl (every plane moved out by delta). */
static int plane_offset(const vplanes *pl, double delta, ce_vec3 *o) {
  const ce_vec3 *n = pl->n;
  if (pl->k == 1) {
    *o = ce_scale(n[0], delta);
    return 0;
  }
  if (pl->k == 2) {
    *o = ce_scale(ce_add(n[0], n[1]), delta / (1 + ce_dot(n[0], n[1])));
    return 0;
  }
  /* rows n0, n1, n2: the inverse's columns are n1 x n2, n2 x n0, n0 x n1
   * over the determinant */
  ce_vec3 a = ce_cross(n[1], n[2]), b = ce_cross(n[2], n[0]), c = ce_cross(n[0], n[1]);
  double det = ce_dot(n[0], a);
  if (!(fabs(det) > 1e-9)) return -1;
  *o = ce_scale(ce_add(a, ce_add(b, c)), delta / det);
  return 0;
}

/* Per boundary vertex: its index among the boundary vertices (bidx, -1
 * elsewhere) and, when `planes`, its face planes; returns the number of
 * boundary vertices, or -1 when a vertex lies on more than
 * CE_MARGIN_PLANES planes. */
static int32_t boundary_planes(const ce_tetmesh *m, int planes, int32_t *bidx, vplanes *pl) {
  int32_t nb = 0;
  for (int32_t i = 0; i < m->nv; i++) bidx[i] = -1;
  for (int32_t t = 0; t < m->nt; t++)
    for (int i = 0; i < 4; i++) {
      if (m->adj[t][i] >= 0) continue;
      int32_t f[3];
      ce_vec3 n = face_normal(m, t, i, f);
      for (int j = 0; j < 3; j++) {
        vplanes *q = &pl[f[j]];
        if (bidx[f[j]] < 0) bidx[f[j]] = nb++;
        if (!planes) continue;
        int seen = 0;
        for (int k = 0; k < q->k && !seen; k++) seen = ce_dot(q->n[k], n) > 1 - 1e-9;
        if (seen) continue;
        if (q->k == CE_MARGIN_PLANES) return -1;
        q->n[q->k++] = n;
      }
    }
  return nb;
}

/* Appends tet (a, b, c, d), positively oriented. */
static void add_tet(const ce_vec3 *v, int32_t (*tets)[4], int32_t *nt, int32_t a, int32_t b, int32_t c, int32_t d) {
  ce_vec3 x = v[a];
  double vol = ce_dot(ce_sub(v[b], x), ce_cross(ce_sub(v[c], x), ce_sub(v[d], x)));
  int32_t *t = tets[(*nt)++];
  t[0] = vol >= 0 ? a : b;
  t[1] = vol >= 0 ? b : a;
  t[2] = c;
  t[3] = d;
}

static void sort3(int32_t f[3]) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2 - i; j++)
      if (f[j] > f[j + 1]) {
        int32_t t = f[j];
        f[j] = f[j + 1];
        f[j + 1] = t;
      }
}

/* The outer copies' positions (after the nv originals) and pressures. */
static ce_errno outer_vertices(const ce_geometry *g, const ce_shape *shape, double delta, const int32_t *bidx,
                               const vplanes *pl, ce_vec3 *v, double *p, ce_error *err) {
  const ce_tetmesh *m = &g->tet;
  const int smooth = shape->type == CE_SHAPE_SPHERE || shape->type == CE_SHAPE_CAPSULE;
  double G = smooth ? g->modulus / shape->radius : 0;
  if (!smooth) /* the field's gradient magnitude, E / H in every tet */
    for (int32_t t = 0; t < m->nt; t++) G = fmax(G, ce_norm(m->grad[t]));
  for (int32_t i = 0; i < m->nv; i++) {
    if (bidx[i] < 0) continue;
    ce_vec3 x = m->v[i], o;
    if (smooth) {
      ce_vec3 c = ce_v3(0, 0, 0);
      if (shape->type == CE_SHAPE_CAPSULE) c.z = fmax(-0.5 * shape->length, fmin(0.5 * shape->length, x.z));
      o = ce_scale(ce_normalize(ce_sub(x, c)), delta);
    } else if (plane_offset(&pl[i], delta, &o) != 0) {
      return ce_fail(err, CE_EDEGENERATE, "margin: boundary vertex %d lies on dependent face planes", (int)i);
    }
    v[m->nv + bidx[i]] = ce_add(x, o);
    p[m->nv + bidx[i]] = -G * delta;
  }
  return CE_OK;
}

ce_errno ce_margin_inflate(ce_geometry *g, const ce_shape *shape, double delta, const ce_props *props,
                           ce_error *err) {
  const ce_tetmesh *m = &g->tet;
  int32_t nbf = 0;
  for (int32_t t = 0; t < m->nt; t++)
    for (int i = 0; i < 4; i++) nbf += m->adj[t][i] < 0;
  int32_t *bidx = malloc((size_t)m->nv * sizeof *bidx);
  vplanes *pl = calloc((size_t)m->nv, sizeof *pl);
  if (!bidx || !pl) {
    free(bidx);
    free(pl);
    return ce_fail(err, CE_ENOMEM, "margin: out of memory for %d vertices", (int)m->nv);
  }
  const int smooth = shape->type == CE_SHAPE_SPHERE || shape->type == CE_SHAPE_CAPSULE;
  const int32_t nb = boundary_planes(m, !smooth, bidx, pl);
  const int64_t nv = (int64_t)m->nv + (nb > 0 ? nb : 0), nt = (int64_t)m->nt + 3 * (int64_t)nbf;
  ce_vec3 *v = NULL;
  double *p = NULL;
  int32_t(*tets)[4] = NULL;
  ce_errno e = CE_OK;
  if (nb < 0) {
    e = ce_fail(err, CE_EDEGENERATE, "margin: a boundary vertex lies on more than %d face planes", CE_MARGIN_PLANES);
    goto done;
  }
  if (nt > INT32_MAX || nv > INT32_MAX) {
    e = ce_fail(err, CE_ELIMIT, "margin: %lld tets over the mesh limit", (long long)nt);
    goto done;
  }
  v = malloc((size_t)nv * sizeof *v);
  p = malloc((size_t)nv * sizeof *p);
  tets = malloc((size_t)nt * sizeof *tets);
  if (!v || !p || !tets) {
    e = ce_fail(err, CE_ENOMEM, "margin: out of memory for %lld tets", (long long)nt);
    goto done;
  }
  memcpy(v, m->v, (size_t)m->nv * sizeof *v);
  memcpy(p, m->p, (size_t)m->nv * sizeof *p);
  memcpy(tets, m->tet, (size_t)m->nt * sizeof *tets);
  if ((e = outer_vertices(g, shape, delta, bidx, pl, v, p, err)) != CE_OK) goto done;
  int32_t n = m->nt;
  for (int32_t t = 0; t < m->nt; t++)
    for (int i = 0; i < 4; i++) {
      if (m->adj[t][i] >= 0) continue;
      int32_t f[3];
      for (int j = 0; j < 3; j++) f[j] = m->tet[t][ce_tet_face_vertex[i][j]];
      sort3(f);
      const int32_t o0 = m->nv + bidx[f[0]], o1 = m->nv + bidx[f[1]], o2 = m->nv + bidx[f[2]];
      add_tet(v, tets, &n, f[0], f[1], f[2], o0);
      add_tet(v, tets, &n, f[1], f[2], o0, o1);
      add_tet(v, tets, &n, f[2], o0, o1, o2);
    }
  e = ce_geometry_finish_tetmesh_signed(shape->type, props, v, (int32_t)nv, tets, n, p, &g->inflated, err);
  v = NULL; /* taken */
  p = NULL;
  tets = NULL;
  if (e == CE_OK) {
    g->margin = delta;
    g->bytes += g->inflated->bytes;
  }
done:
  free(bidx);
  free(pl);
  free(v);
  free(p);
  free(tets);
  return e;
}

int ce_margin_speculative(const ce_surface *s, ce_speculative *out) {
  memset(out, 0, sizeof *out);
  double best = INFINITY;
  for (int32_t f = 0; f < s->nf; f++) {
    const ce_vec3 n = s->normal[f];
    double gA = s->grad_a ? ce_dot(s->grad_a[f], n) : INFINITY;
    double gB = s->grad_b ? -ce_dot(s->grad_b[f], n) : INFINITY;
    if (!(gA > 0) || !(gB > 0) || (isinf(gA) && isinf(gB))) continue;
    double g = isinf(gA) ? gB : isinf(gB) ? gA : gA * gB / (gA + gB);
    out->stiffness += g * s->area[f];
    out->faces++;
    for (int32_t i = s->face_offsets[f]; i < s->face_offsets[f + 1]; i++) {
      int32_t v = s->face_vertices[i];
      double phi = -s->pressure[v] / g;
      if (phi < best) {
        best = phi;
        out->point = s->vertices[v];
        out->normal = n;
      }
    }
  }
  if (out->faces == 0) return 0;
  out->separation = best > 0 ? best : 0;
  return 1;
}
