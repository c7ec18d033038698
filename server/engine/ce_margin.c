/* ce_margin.c — margins: a compliant geometry's copy inflated by delta,
 * and what the inflated copies say about two bodies that do not touch.
 *
 * Inflation (as Drake gives its hydroelastic geometries a margin): the
 * geometry's tet mesh and field stay as they are, and a layer of tets is
 * added over its boundary. Each boundary vertex x gets an outer copy
 * x' = x + o:
 *  - sphere, capsule: o = delta u, u the unit vector from the centre (the
 *    medial segment's nearest point) to x, so x' lies on the sphere
 *    (capsule) of radius R + delta: the exact offset surface, tessellated
 *    as the original;
 *  - every other compliant mesh (box, cylinder, ellipsoid, convex set,
 *    user tet mesh, tetrahedralised surface): every boundary face plane
 *    through x moves out by delta, o the least-norm offset with
 *    n_f . o >= delta for each distinct incident face normal n_f
 *    (ce_offset.c). On a box or a regular prism (the cylinder) that is the
 *    body grown by delta on every side, exactly; on a curved tessellation
 *    (the ellipsoid) every facet's plane moves out by at least delta, so
 *    the outer surface lies outside the facets' offset by delta (not the
 *    exact offset surface of the smooth ellipsoid, which the facets only
 *    approximate); at a concave edge or corner x' is where the moved planes
 *    meet.
 * The field in the layer extends the boundary's: every x' gets p = -g delta,
 * g the field's slope along the outward normal at the boundary, so that
 * p = 0 stays on the original surface and p < 0 in the layer:
 *  - sphere, capsule: g = E / R, the analytic field E (1 - r / R);
 *  - box, cylinder: g = E / H, the analytic field E d / H (the largest
 *    tet gradient, the same in every tet);
 *  - other meshes: g the area-weighted mean of the slopes |grad_t . n_f|
 *    over the boundary faces f (tet t's gradient across its boundary
 *    face, on which the field is zero), faces of flat tets (every vertex
 *    on the boundary) left out.
 * One g for the whole layer, rather than each vertex's own slope: where
 * the offsets are delta along the faces' normals the layer's field then
 * falls at g along the normal in every prism, so -p / g is the distance
 * from the original surface (what the speculative separation below reads),
 * however uneven the mesh's field is along its boundary (a coarse mesh's
 * distance field has slopes differing by the ratio of its tets' heights);
 * what that gives up is the local stiffness: each face's speculative
 * spring uses the mean slope, not its own.
 * Each boundary triangle (a, b, c) and its copies make a prism, split
 * into three tets by the vertices' global order (so that neighbouring
 * prisms split their shared side the same way).
 *
 * Where one shared offset per vertex cannot work, the layer is made
 * locally of faces moved apart (ce_offset.c, and here), never refused:
 *  - a vertex where the boundary pinches (two blocks meeting at a corner)
 *    gets a copy per fan of faces around it;
 *  - a vertex whose face normals leave no offset (they do not lie in an
 *    open hemisphere: a fin's edge, a fold of the boundary), whose offset
 *    exceeds MARGIN_STRETCH delta (a needle's tip, a wedge under 29
 *    degrees) or that has more than MARGIN_NORMALS normals is split: each
 *    of its faces gets a copy of its own moved by delta along its normal;
 *  - a prism whose shared copies fold (a tet of zero or negative volume:
 *    the moved planes cross over a face narrower than about 2 delta, in a
 *    concave corner or a crinkle of a tetrahedralised surface) gets copies
 *    of its own, its corners moved by delta along its normal: a right
 *    prism.
 * Every face plane still moves out by delta at each of its corners, but
 * the outer surface there is not closed: it has cracks between split
 * copies (at a needle's tip the layer reaches only delta sin(half angle)
 * beyond it) and overlaps where right prisms cross their neighbours'.
 * Two parts of the boundary closer than 2 delta that face each other (a
 * narrow slot's walls, the ends of a C) get layers that overlap too; that
 * is not detected. The layer serves only the speculative estimates below
 * (overlaps count their faces' stiffness twice; cracks report an approach
 * later there), and never changes a force. A tetrahedralised surface's
 * boundary is crinkled at its edge length a: on a torus of tube radius
 * 4 a, 65 of 3,237 boundary vertices split, and at delta = a 171 of its
 * 5,894 prisms are right prisms.
 *
 * Speculative contact. The contact itself is always computed on the
 * original geometries, so a margin changes no force. When the bodies do not
 * touch, the inflated copies' surface (every face of it where the extended
 * fields are negative) tells how far apart they are: at a corner of face f
 * with pressure p < 0 and effective gradient g = gA gB / (gA + gB) along the
 * face normal (as ce_face_contact.c, Masterjohn et al. 2022), both fields
 * reach zero after an approach of -p / g. The separation is the least such
 * value over the corners, the stiffness the sum of g A over the faces (the
 * per-face springs of the speculative surface).
 *
 * Two-way with ce_geometry.c: the inflated copy is a tet mesh finished
 * there, and the tet meshes built there take their margins here. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_limits.h"
#include "ce_offset.h"
#include "ce_passes.h"
#include "ce_validate.h"

/* The field's slope g at the boundary (the header's rules). */
static ce_errno layer_slope(const ce_geometry *g, const ce_shape *shape, const ce_offset_layer *L, double *G,
                            ce_error *err) {
  const ce_tetmesh *m = &g->tet;
  const int type = shape ? (int)shape->type : 0;
  if (type == CE_SHAPE_SPHERE || type == CE_SHAPE_CAPSULE) {
    *G = g->modulus / shape->radius;
    return CE_OK;
  }
  double sum = 0, area = 0, top = 0;
  for (int32_t f = 0; f < L->nbf; f++) {
    const int32_t *q = m->tet[L->face[f][0]];
    const int i = L->face[f][1];
    const ce_vec3 a = m->v[q[ce_tet_face_vertex[i][0]]];
    const ce_vec3 n = ce_cross(ce_sub(m->v[q[ce_tet_face_vertex[i][1]]], a), ce_sub(m->v[q[ce_tet_face_vertex[i][2]]], a));
    const double s = fabs(ce_dot(m->grad[L->face[f][0]], ce_normalize(n))); /* the field is 0 on the face */
    if (s > 0) sum += s * ce_norm(n), area += ce_norm(n);
  }
  for (int32_t t = 0; t < m->nt; t++) top = fmax(top, ce_norm(m->grad[t]));
  *G = type == CE_SHAPE_BOX || type == CE_SHAPE_CYLINDER ? top : area > 0 ? sum / area : 0;
  if (!(*G > 0) || !isfinite(*G))
    return ce_fail(err, CE_EDEGENERATE, "margin: the field has no slope at the boundary to extend into the layer");
  return CE_OK;
}

/* The outer copies' positions (after the nv originals) and pressures. */
static ce_errno outer_vertices(const ce_geometry *g, const ce_shape *shape, double delta, const ce_offset_layer *L,
                               ce_vec3 *v, double *p, ce_error *err) {
  const ce_tetmesh *m = &g->tet;
  const int type = shape ? (int)shape->type : 0;
  double G;
  ce_errno e = layer_slope(g, shape, L, &G, err);
  for (int32_t c = 0; c < L->ncopy && e == CE_OK; c++) {
    const ce_vec3 x = m->v[L->vertex[c]];
    ce_vec3 o = L->o[c];
    if (type == CE_SHAPE_SPHERE || type == CE_SHAPE_CAPSULE) {
      ce_vec3 k = ce_v3(0, 0, 0);
      if (type == CE_SHAPE_CAPSULE) k.z = fmax(-0.5 * shape->length, fmin(0.5 * shape->length, x.z));
      o = ce_scale(ce_normalize(ce_sub(x, k)), delta);
    }
    v[m->nv + c] = ce_add(x, o);
    p[m->nv + c] = -G * delta;
  }
  return e;
}

static double orient(const ce_vec3 *v, int32_t a, int32_t b, int32_t c, int32_t d) {
  ce_vec3 x = v[a];
  return ce_dot(ce_sub(v[b], x), ce_cross(ce_sub(v[c], x), ce_sub(v[d], x)));
}

/* Appends tet (a, b, c, d), positively oriented. */
static void add_tet(const ce_vec3 *v, int32_t (*tets)[4], int32_t *nt, int32_t a, int32_t b, int32_t c, int32_t d) {
  double vol = orient(v, a, b, c, d);
  int32_t *t = tets[(*nt)++];
  t[0] = vol >= 0 ? a : b;
  t[1] = vol >= 0 ? b : a;
  t[2] = c;
  t[3] = d;
}

/* The corners of boundary face f in their global order (so that
 * neighbouring prisms split their shared side the same way), their copies
 * o, and the face's outward normal (twice its area long). */
static ce_vec3 prism_corners(const ce_tetmesh *m, const ce_offset_layer *L, int32_t f, int32_t a[3], int32_t o[3]) {
  for (int j = 0; j < 3; j++) {
    a[j] = m->tet[L->face[f][0]][ce_tet_face_vertex[L->face[f][1]][j]];
    o[j] = m->nv + L->copy[f][j];
  }
  const ce_vec3 n = ce_cross(ce_sub(m->v[a[1]], m->v[a[0]]), ce_sub(m->v[a[2]], m->v[a[0]]));
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2 - i; j++)
      if (a[j] > a[j + 1]) {
        int32_t s = a[j], so = o[j];
        a[j] = a[j + 1], o[j] = o[j + 1];
        a[j + 1] = s, o[j + 1] = so;
      }
  return n;
}

/* Whether the prism (a, o) over a face of outward normal n folds: each of
 * its three tets must have the orientation of the base (its normal towards
 * the copies) and at least 1e-9 of the nominal volume |n| delta. */
static int prism_folds(const ce_vec3 *v, const int32_t a[3], const int32_t o[3], ce_vec3 n, double delta) {
  const ce_vec3 N = ce_cross(ce_sub(v[a[1]], v[a[0]]), ce_sub(v[a[2]], v[a[0]]));
  const double sign = ce_dot(N, n) >= 0 ? 1 : -1, least = 1e-9 * ce_norm(N) * delta;
  const int32_t q[3][4] = {{a[0], a[1], a[2], o[0]}, {a[1], a[2], o[0], o[1]}, {a[2], o[0], o[1], o[2]}};
  for (int j = 0; j < 3; j++)
    if (!(sign * orient(v, q[j][0], q[j][1], q[j][2], q[j][3]) > least)) return 1;
  return 0;
}

/* The layer's tets after the originals (*n of them): three per boundary
 * face. A prism whose shared copies fold gets copies of its own, its
 * corners moved by delta along its normal (a right prism), appended at
 * v[*nvp], p as the copies they replace. */
static ce_errno layer_tets(const ce_tetmesh *m, const ce_offset_layer *L, double delta, ce_vec3 *v, double *p,
                           int32_t *nvp, int32_t (*tets)[4], int32_t *n, int32_t *nright, ce_error *err) {
  for (int32_t f = 0; f < L->nbf; f++) {
    int32_t a[3], o[3];
    const ce_vec3 nf = prism_corners(m, L, f, a, o);
    if (prism_folds(v, a, o, nf, delta)) {
      const ce_vec3 u = ce_scale(ce_normalize(nf), delta);
      for (int j = 0; j < 3; j++) {
        v[*nvp] = ce_add(m->v[a[j]], u);
        p[*nvp] = p[o[j]];
        o[j] = (*nvp)++;
      }
      ++*nright;
      if (prism_folds(v, a, o, nf, delta)) {
        ce_vec3 x = m->v[a[0]];
        return ce_fail(err, CE_EDEGENERATE,
                       "margin %g: boundary face (%d, %d, %d) at vertex %d (%g, %g, %g) is too small to carry a "
                       "layer (area %.3g)",
                       delta, (int)a[0], (int)a[1], (int)a[2], (int)a[0], x.x, x.y, x.z, 0.5 * ce_norm(nf));
      }
    }
    const int32_t q[3][4] = {{a[0], a[1], a[2], o[0]}, {a[1], a[2], o[0], o[1]}, {a[2], o[0], o[1], o[2]}};
    for (int j = 0; j < 3; j++) add_tet(v, tets, n, q[j][0], q[j][1], q[j][2], q[j][3]);
  }
  return CE_OK;
}

/* How many prisms fold with their shared copies. */
static int32_t folded_prisms(const ce_tetmesh *m, const ce_offset_layer *L, double delta, const ce_vec3 *v) {
  int32_t k = 0;
  for (int32_t f = 0; f < L->nbf; f++) {
    int32_t a[3], o[3];
    const ce_vec3 nf = prism_corners(m, L, f, a, o);
    k += prism_folds(v, a, o, nf, delta);
  }
  return k;
}

ce_errno ce_margin_inflate(ce_geometry *g, const ce_shape *shape, double delta, const ce_props *props,
                           ce_error *err) {
  const ce_tetmesh *m = &g->tet;
  if (m->nt <= 0 || g->is_halfspace)
    return ce_fail(err, CE_EINVAL, "margin %g: the geometry has no tet mesh to inflate", delta);
  const int radial = shape && (shape->type == CE_SHAPE_SPHERE || shape->type == CE_SHAPE_CAPSULE);
  ce_offset_layer L;
  ce_props p0 = *props; /* the copy has no margin of its own */
  p0.margin = 0;
  ce_vec3 *v = NULL;
  double *p = NULL;
  int32_t(*tets)[4] = NULL;
  ce_errno e = ce_offset_layer_build(m, delta, !radial, &L, err);
  if (e != CE_OK) return e;
  int64_t nv = (int64_t)m->nv + L.ncopy;
  const int64_t nt = (int64_t)m->nt + 3 * (int64_t)L.nbf;
  v = malloc((size_t)nv * sizeof *v);
  p = malloc((size_t)nv * sizeof *p);
  if (!v || !p) {
    e = ce_fail(err, CE_ENOMEM, "margin: out of memory for %lld vertices", (long long)nv);
    goto done;
  }
  memcpy(v, m->v, (size_t)m->nv * sizeof *v);
  memcpy(p, m->p, (size_t)m->nv * sizeof *p);
  if ((e = outer_vertices(g, shape, delta, &L, v, p, err)) != CE_OK) goto done;
  const int32_t folds = folded_prisms(m, &L, delta, v);
  nv += 3 * (int64_t)folds;
  if (nt > CE_LIMIT_MESH_COUNT || nv > CE_LIMIT_MESH_COUNT) {
    e = ce_fail(err, CE_ELIMIT, "margin: %lld tets over the mesh limit %d", (long long)nt, CE_LIMIT_MESH_COUNT);
    goto done;
  }
  ce_vec3 *v2 = realloc(v, (size_t)nv * sizeof *v);
  if (v2) v = v2;
  double *p2 = v2 ? realloc(p, (size_t)nv * sizeof *p) : NULL;
  if (p2) p = p2;
  tets = malloc((size_t)nt * sizeof *tets);
  if (!v2 || !p2 || !tets) {
    e = ce_fail(err, CE_ENOMEM, "margin: out of memory for %lld tets", (long long)nt);
    goto done;
  }
  memcpy(tets, m->tet, (size_t)m->nt * sizeof *tets);
  int32_t n = m->nt, nvp = m->nv + L.ncopy, nright = 0;
  if ((e = layer_tets(m, &L, delta, v, p, &nvp, tets, &n, &nright, err)) != CE_OK) goto done;
  e = ce_geometry_finish_tetmesh_signed(g->shape, &p0, v, (int32_t)nv, tets, n, p, &g->inflated, err);
  v = NULL; /* taken */
  p = NULL;
  tets = NULL;
  if (e == CE_OK) {
    g->margin = delta;
    g->margin_split = L.nsplit;
    g->margin_right = nright;
    g->bytes += g->inflated->bytes;
  }
done:
  ce_offset_layer_free(&L);
  free(v);
  free(p);
  free(tets);
  return e;
}

ce_errno ce_margin_take(const ce_props *props, ce_props *p0, ce_error *err) {
  if (!props) return ce_fail(err, CE_EINVAL, "props is NULL");
  *p0 = *props;
  p0->margin = 0;
  const double d = props->margin;
  if (d == 0) return CE_OK;
  if (!isfinite(d) || d < 0) return ce_fail(err, CE_EINVAL, "margin must be finite and >= 0 (got %g)", d);
  if (props->compliance != CE_COMPLIANT)
    return ce_fail(err, CE_EINVAL, "margin %g: only compliant geometries take a margin, not a rigid one", d);
  return ce_check_length("geometry", "margin", d, err);
}

ce_errno ce_margin_apply(ce_errno e, double delta, const ce_props *p0, ce_geometry **out, ce_error *err) {
  if (e != CE_OK || !(delta > 0) || !*out) return e;
  if ((e = ce_margin_inflate(*out, NULL, delta, p0, err)) != CE_OK) {
    ce_geometry_free(*out);
    *out = NULL;
  }
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
