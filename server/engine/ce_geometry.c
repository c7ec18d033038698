/* ce_geometry.c — building and validating tet and triangle meshes.
 *
 * A compliant geometry is a tet mesh with a piecewise-linear pressure field
 * (one value per vertex, zero on the boundary); a rigid geometry is a
 * triangle surface mesh. Both are validated once here, get their per-element
 * data (field gradients, normals, adjacency) and a BVH, and are immutable
 * afterwards.
 *
 * Two-way with ce_margin.c: a tet mesh built here with a margin gets its
 * inflated copy there, and that copy is itself a tet mesh finished here.
 *
 * Validation rules (every error names the offending element):
 *  - counts: 0 → CE_EEMPTY; negative → CE_EINVAL; above
 *    CE_LIMIT_MESH_COUNT (2^28) → CE_ELIMIT.
 *  - indices outside [0, nv) → CE_ERANGE; non-finite coordinates →
 *    CE_ENONFINITE.
 *  - tets: signed volume < 0 → CE_EINVERTED ("inverted"); zero volume →
 *    CE_EINVERTED ("zero volume"), where zero means 6 V <= CE_TET_VOLUME_RTOL
 *    * min over the 4 corners of (product of the corner's 3 edge lengths):
 *    every corner of the tet is flat (6 V / product is the sine of the solid
 *    angle's "spread", 0.707 for a regular tet). The rule depends on the
 *    tet's shape only, not on units, size or position, so small but
 *    well-shaped tets (a tiny hull triangle coned to a far centroid) pass
 *    while flat slivers and needles fail.
 *  - tet faces: a face shared by more than two tets, or two tets on the same
 *    side of their shared face (overlapping) → CE_EDEGENERATE.
 *  - pressure: non-finite, negative, or nonzero on a boundary vertex (a
 *    vertex of a face that belongs to exactly one tet) → CE_EFIELD.
 *  - triangles: twice the area not larger than CE_TRI_AREA_RTOL * (longest
 *    edge)^2 → CE_EDEGENERATE; an edge used by more than two triangles or
 *    twice in the same direction → CE_EDEGENERATE; an edge with one triangle
 *    when a closed mesh is required → CE_EOPEN; a closed mesh whose enclosed
 *    volume is not positive → CE_EINVAL (inward winding).
 *
 * Default field (pressure NULL): p = E * d / max d, d = exact distance from
 * the vertex to the boundary surface (the faces that belong to one tet),
 * found by a nearest-triangle search in a BVH over the boundary triangles;
 * a mesh without an interior vertex has no such field (CE_EFIELD).
 *
 * Face and edge adjacency, components and convexity come from
 * ce_topology.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_geometry.h"
#include "ce_bvh.h"
#include "ce_internal.h"
#include "ce_limits.h"
#include "ce_mesh.h"
#include "ce_progress.h"
#include "ce_terrain.h"
#include "ce_validate.h"

#define CE_TET_VOLUME_RTOL 1e-12
#define CE_TRI_AREA_RTOL 1e-12

/* ---- small helpers ---------------------------------------------------- */

ce_vec3 ce_tet_linear_field(const ce_vec3 x[4], const double p[4], double *offset) {
  ce_vec3 e1 = ce_sub(x[1], x[0]), e2 = ce_sub(x[2], x[0]), e3 = ce_sub(x[3], x[0]);
  ce_vec3 c23 = ce_cross(e2, e3), c31 = ce_cross(e3, e1), c12 = ce_cross(e1, e2);
  double det = ce_dot(e1, c23);
  /* grad . e_k = p_k - p_0 for k = 1..3: the rows of the inverse of
   * [e1 e2 e3]^T are the cross products divided by the determinant. */
  ce_vec3 g = ce_scale(ce_add(ce_add(ce_scale(c23, p[1] - p[0]), ce_scale(c31, p[2] - p[0])),
                              ce_scale(c12, p[3] - p[0])),
                       1.0 / det);
  /* Average the four vertex residuals so no vertex is privileged. */
  double o = 0;
  for (int i = 0; i < 4; i++) o += p[i] - ce_dot(g, x[i]);
  if (offset) *offset = 0.25 * o;
  return g;
}

void ce_tet_face_planes(const ce_vec3 x[4], double fplane[4][4]) {
  ce_vec3 e1 = ce_sub(x[1], x[0]), e2 = ce_sub(x[2], x[0]), e3 = ce_sub(x[3], x[0]);
  ce_vec3 nf[4] = {ce_cross(ce_sub(x[2], x[1]), ce_sub(x[3], x[1])), ce_cross(e3, e2), ce_cross(e1, e3),
                   ce_cross(e2, e1)};
  for (int k = 0; k < 4; k++) {
    double l = ce_norm(nf[k]);
    ce_vec3 u = l > 0 ? ce_scale(nf[k], 1.0 / l) : nf[k];
    fplane[0][k] = u.x;
    fplane[1][k] = u.y;
    fplane[2][k] = u.z;
    fplane[3][k] = ce_dot(u, x[k == 0 ? 1 : 0]);
  }
}

static double tet_signed_volume(ce_vec3 a, ce_vec3 b, ce_vec3 c, ce_vec3 d) {
  ce_vec3 e1 = ce_sub(b, a), e2 = ce_sub(c, a), e3 = ce_sub(d, a);
  return ce_dot(e1, ce_cross(e2, e3)) / 6.0;
}

/* Distance from x to triangle (a, b, c) (closest-point by Voronoi regions). */
static double point_triangle_distance(ce_vec3 x, ce_vec3 a, ce_vec3 b, ce_vec3 c) {
  ce_vec3 ab = ce_sub(b, a), ac = ce_sub(c, a), ax = ce_sub(x, a);
  double d1 = ce_dot(ab, ax), d2 = ce_dot(ac, ax);
  if (d1 <= 0 && d2 <= 0) return ce_norm(ax);
  ce_vec3 bx = ce_sub(x, b);
  double d3 = ce_dot(ab, bx), d4 = ce_dot(ac, bx);
  if (d3 >= 0 && d4 <= d3) return ce_norm(bx);
  double vc = d1 * d4 - d3 * d2;
  if (vc <= 0 && d1 >= 0 && d3 <= 0) {
    double t = d1 / (d1 - d3);
    return ce_norm(ce_sub(x, ce_axpy(a, t, ab)));
  }
  ce_vec3 cx = ce_sub(x, c);
  double d5 = ce_dot(ab, cx), d6 = ce_dot(ac, cx);
  if (d6 >= 0 && d5 <= d6) return ce_norm(cx);
  double vb = d5 * d2 - d1 * d6;
  if (vb <= 0 && d2 >= 0 && d6 <= 0) {
    double t = d2 / (d2 - d6);
    return ce_norm(ce_sub(x, ce_axpy(a, t, ac)));
  }
  double va = d3 * d6 - d5 * d4;
  if (va <= 0 && (d4 - d3) >= 0 && (d5 - d6) >= 0) {
    double t = (d4 - d3) / ((d4 - d3) + (d5 - d6));
    return ce_norm(ce_sub(x, ce_axpy(b, t, ce_sub(c, b))));
  }
  double denom = 1.0 / (va + vb + vc);
  double v = vb * denom, w = vc * denom;
  ce_vec3 q = ce_axpy(ce_axpy(a, v, ab), w, ac);
  return ce_norm(ce_sub(x, q));
}

static ce_errno check_counts(const char *what, int32_t nv, int32_t ne, const char *elem, ce_error *err) {
  if (nv < 0) return ce_fail(err, CE_EINVAL, "%s: vertex count %d is negative", what, (int)nv);
  if (ne < 0) return ce_fail(err, CE_EINVAL, "%s: %s count %d is negative", what, elem, (int)ne);
  if (nv == 0 || ne == 0)
    return ce_fail(err, CE_EEMPTY, "%s is empty (%d vertices, %d %ss)", what, (int)nv, (int)ne, elem);
  if (nv > CE_LIMIT_MESH_COUNT || ne > CE_LIMIT_MESH_COUNT)
    return ce_fail(err, CE_ELIMIT, "%s has %d vertices and %d %ss; the limit is %d of each", what, (int)nv,
                   (int)ne, elem, CE_LIMIT_MESH_COUNT);
  return CE_OK;
}

static void geometry_common(ce_geometry *g, ce_shape_type shape, const ce_props *props) {
  g->shape = shape;
  g->compliance = props->compliance;
  g->modulus = props->compliance == CE_COMPLIANT ? props->modulus : INFINITY;
  g->material = props->material;
  g->scale = 1;
}

/* ---- tet meshes --------------------------------------------------------- */

/* Lower bound of the distance from x to anything inside a BVH node's box. */
static double node_distance(const ce_bvh_node *n, ce_vec3 x) {
  ce_vec3 l = ce_mat3_tmul_vec(&n->axes, ce_sub(x, n->center));
  ce_vec3 ex = ce_v3(fmax(fabs(l.x) - n->half.x, 0), fmax(fabs(l.y) - n->half.y, 0), fmax(fabs(l.z) - n->half.z, 0));
  return ce_norm(ex);
}

/* Exact distance from x to the nearest triangle of a triangle BVH:
 * depth-first, nearer child first, pruning boxes no nearer than the best
 * triangle so far. `stack` holds bvh->nnodes + 1 entries. */
static double bvh_nearest(const ce_bvh *b, const int32_t (*tri)[3], const ce_vec3 *v, ce_vec3 x, int32_t *stack) {
  double best = INFINITY;
  int32_t sp = 0;
  stack[sp++] = 0;
  while (sp > 0) {
    const ce_bvh_node *n = &b->nodes[stack[--sp]];
    if (n->left < 0) {
      for (int32_t k = n->first; k < n->first + n->count; k++) {
        const int32_t *t = tri[b->order[k]];
        double d = point_triangle_distance(x, v[t[0]], v[t[1]], v[t[2]]);
        if (d < best) best = d;
      }
      continue;
    }
    double dl = node_distance(&b->nodes[n->left], x), dr = node_distance(&b->nodes[n->right], x);
    int32_t near = dl <= dr ? n->left : n->right, far = dl <= dr ? n->right : n->left;
    if (fmax(dl, dr) < best) stack[sp++] = far;
    if (fmin(dl, dr) < best) stack[sp++] = near;
  }
  return best;
}

/* p = E * d / max d, d = exact distance to the boundary surface (nearest
 * boundary triangle, found through a BVH over the boundary triangles). */
static ce_errno tet_distance_field(ce_tetmesh *m, double modulus, const unsigned char *boundary,
                                   const unsigned char *used, int32_t (*bfaces)[2], int64_t nb,
                                   const ce_buildprog *prog, ce_error *err) {
  ce_errno e = CE_OK;
  ce_bvh bb;
  memset(&bb, 0, sizeof bb);
  int32_t *stack = NULL;
  int32_t(*btri)[3] = malloc((size_t)(nb > 0 ? nb : 1) * sizeof *btri);
  if (!btri) return ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for %lld boundary triangles", (long long)nb);
  for (int64_t f = 0; f < nb; f++) {
    const int32_t *t = m->tet[bfaces[f][0]];
    const int *loc = ce_tet_face_vertex[bfaces[f][1]];
    for (int j = 0; j < 3; j++) btri[f][j] = t[loc[j]];
  }
  const ce_buildprog pb = ce_buildprog_part(prog, 0, 0.2);
  if ((e = ce_bvh_build(&bb, (int32_t)nb, 3, &btri[0][0], m->v, NULL, &pb, err)) != CE_OK) goto done;
  stack = malloc(((size_t)bb.nnodes + 1) * sizeof *stack);
  if (!stack) {
    e = ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for the distance query");
    goto done;
  }
  double dmax = 0;
  for (int32_t i = 0; i < m->nv; i++) {
    /* ~1 ms per 1,024 nearest-triangle searches */
    if ((i & 1023) == 1023 && (e = ce_buildprog_report(prog, 0.2 + 0.8 * i / m->nv, err)) != CE_OK) goto done;
    double d = 0;
    if (used[i] && !boundary[i] && bb.nnodes > 0) {
      d = bvh_nearest(&bb, (const int32_t(*)[3])btri, m->v, m->v[i], stack);
      if (!isfinite(d)) d = 0;
    }
    m->p[i] = d;
    if (d > dmax) dmax = d;
  }
  if (!(dmax > 0)) {
    e = ce_fail(err, CE_EFIELD, "mesh has no interior vertex: cannot build a pressure field");
    goto done;
  }
  for (int32_t i = 0; i < m->nv; i++) m->p[i] = modulus * (m->p[i] / dmax);
done:
  free(stack);
  ce_bvh_free(&bb);
  free(btri);
  return e;
}

/* Checks and builds a tet mesh's tables, default field and hierarchies,
 * reporting into prog: the checks in [0, 0.1], the faces in
 * [0.1, 0.2], the default field's distances in [0.2, 0.35], the per-tet
 * tables in [0.35, 0.45], 0.5 before the hierarchy, the hierarchy in
 * [0.5, 1] (ce_bvh_build_tets), 1 at the end. */
static ce_errno tet_build(ce_geometry *g, const ce_buildprog *prog, ce_error *err) {
  ce_tetmesh *m = &g->tet;
  const int32_t nv = m->nv, nt = m->nt;
  ce_errno e = CE_OK;
  unsigned char *flags = NULL;
  int32_t (*bfaces)[2] = NULL;
  int64_t nb = 0;

  if ((e = ce_buildprog_report(prog, 0, err)) != CE_OK) return e;
  for (int32_t t = 0; t < nt; t++)
    for (int i = 0; i < 4; i++)
      if (m->tet[t][i] < 0 || m->tet[t][i] >= nv)
        return ce_fail(err, CE_ERANGE, "tet %d vertex %d index %d out of range [0, %d)", (int)t, i,
                       (int)m->tet[t][i], (int)nv);
  double scale = 0;
  for (int32_t i = 0; i < nv; i++) {
    if (!ce_vec3_isfinite(m->v[i]))
      return ce_fail(err, CE_ENONFINITE, "vertex %d has a non-finite coordinate (%g, %g, %g)", (int)i,
                     m->v[i].x, m->v[i].y, m->v[i].z);
    double r = ce_norm(m->v[i]);
    if (r > scale) scale = r;
  }
  if (m->p)
    for (int32_t i = 0; i < nv; i++) {
      if (!isfinite(m->p[i]))
        return ce_fail(err, CE_EFIELD, "vertex %d has a non-finite pressure (%g)", (int)i, m->p[i]);
      if (m->p[i] < 0 && !g->signed_field)
        return ce_fail(err, CE_EFIELD, "vertex %d has negative pressure %g", (int)i, m->p[i]);
    }
  double volume = 0;
  for (int32_t t = 0; t < nt; t++) {
    /* ~10 ms per 65,536 tets */
    if ((t & 65535) == 65535 && (e = ce_buildprog_report(prog, 0.1 * t / nt, err)) != CE_OK) return e;
    ce_vec3 x[4];
    for (int i = 0; i < 4; i++) x[i] = m->v[m->tet[t][i]];
    double vol = tet_signed_volume(x[0], x[1], x[2], x[3]);
    if (vol < 0) return ce_fail(err, CE_EINVERTED, "tet %d is inverted (volume %.3g)", (int)t, vol);
    double len[4][4], corner = INFINITY;
    for (int i = 0; i < 4; i++)
      for (int j = 0; j < 4; j++) len[i][j] = ce_norm(ce_sub(x[i], x[j]));
    for (int i = 0; i < 4; i++) {
      double prod = 1;
      for (int j = 0; j < 4; j++)
        if (j != i) prod *= len[i][j];
      corner = fmin(corner, prod);
    }
    if (!(6 * vol > CE_TET_VOLUME_RTOL * corner))
      return ce_fail(err, CE_EINVERTED, "tet %d has zero volume (volume %.3g: every corner is flat)", (int)t, vol);
    volume += vol;
  }
  if ((e = ce_buildprog_report(prog, 0.1, err)) != CE_OK) return e;

  /* flags: bit 0 = boundary vertex (array 0), used vertex (array 1). */
  flags = calloc((size_t)nv * 2, 1);
  if (!flags) return ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for %d vertex flags", (int)nv);
  unsigned char *boundary = flags, *used = flags + nv;
  for (int32_t t = 0; t < nt; t++)
    for (int i = 0; i < 4; i++) used[m->tet[t][i]] = 1;
  const ce_buildprog pfaces = ce_buildprog_part(prog, 0.1, 0.2);
  if ((e = ce_tet_faces(m, boundary, &bfaces, &nb, &pfaces, err)) != CE_OK) goto done;
  if ((e = ce_tet_components(m, err)) != CE_OK) goto done;
  if ((e = ce_buildprog_report(prog, 0.2, err)) != CE_OK) goto done;
  if (!m->p) {
    m->p = malloc((size_t)nv * sizeof *m->p);
    if (!m->p) {
      e = ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for %d pressures", (int)nv);
      goto done;
    }
    const ce_buildprog pf = ce_buildprog_part(prog, 0.2, 0.35);
    if ((e = tet_distance_field(m, g->modulus, boundary, used, bfaces, nb, &pf, err)) != CE_OK) goto done;
  } else if (!g->signed_field) {
    for (int32_t i = 0; i < nv; i++)
      if (boundary[i] && m->p[i] != 0) {
        e = ce_fail(err, CE_EFIELD, "vertex %d is on the boundary but has pressure %g", (int)i, m->p[i]);
        goto done;
      }
  }

  for (int32_t t = 0; t < nt; t++) {
    /* ~30 ms per 65,536 tets */
    if ((t & 65535) == 65535 && (e = ce_buildprog_report(prog, 0.35 + 0.1 * t / nt, err)) != CE_OK) goto done;
    ce_vec3 x[4];
    double pv[4];
    for (int i = 0; i < 4; i++) {
      x[i] = m->v[m->tet[t][i]];
      pv[i] = m->p[m->tet[t][i]];
    }
    m->grad[t] = ce_tet_linear_field(x, pv, &m->offset[t]);
    double lo = pv[0], hi = pv[0];
    for (int i = 1; i < 4; i++) {
      lo = fmin(lo, pv[i]);
      hi = fmax(hi, pv[i]);
    }
    m->prange[t][0] = lo;
    m->prange[t][1] = hi;
    ce_tet_face_planes(x, m->fplane[t]); /* tets of zero volume were rejected */
  }
  g->volume = volume;
  g->scale = scale > 0 ? scale : 1;
  const ce_buildprog pconvex = ce_buildprog_part(prog, 0.45, 0.5);
  if ((e = ce_tet_boundary_convex(m, bfaces, nb, 1e-9 * g->scale, &pconvex, &g->convex, err)) != CE_OK) goto done;
  if ((e = ce_buildprog_report(prog, 0.5, err)) != CE_OK) goto done;
  const ce_buildprog ph = ce_buildprog_part(prog, 0.5, 1.0);
  if ((e = ce_bvh_build_tets(&g->bvh, nt, &m->tet[0][0], m->v, m->p, (const int32_t(*)[2])bfaces, nb, &ph, err)) !=
      CE_OK)
    goto done;
  if ((e = ce_buildprog_report(prog, 1.0, err)) != CE_OK) goto done;
  g->bytes = sizeof *g + (size_t)nv * (sizeof *m->v + sizeof *m->p) +
             (size_t)nt * (sizeof *m->tet + sizeof *m->grad + sizeof *m->offset + sizeof *m->prange +
                           sizeof *m->adj + sizeof *m->fplane + (m->comp ? sizeof *m->comp : 0)) +
             (size_t)m->ncomp * sizeof *m->comp_first + ce_bvh_bytes(&g->bvh);
done:
  free(bfaces);
  free(flags);
  return e;
}

/* Heap bytes a tet mesh (compliant) or triangle mesh (rigid) of nv
 * vertices and ne elements holds at least once built: the per-vertex and
 * per-element arrays it always has and its hierarchy's nodes (at most
 * CE_BVH_TET_LEAF tets or CE_BVH_TRI_LEAF triangles per leaf; a triangle
 * hierarchy's seed data), leaving out what depends on the mesh's shape (a
 * tet mesh's boundary and components). What tet_build and tri_build count
 * in g->bytes is at least this. */
static size_t mesh_bytes_at_least(ce_compliance kind, int32_t nv, int32_t ne) {
  const size_t v = (size_t)nv, n = (size_t)ne;
  if (kind == CE_COMPLIANT) {
    const ce_tetmesh *m = NULL;
    const size_t leaves = (n + CE_BVH_TET_LEAF - 1) / CE_BVH_TET_LEAF;
    return sizeof(ce_geometry) + v * (sizeof *m->v + sizeof *m->p) +
           n * (sizeof *m->tet + sizeof *m->grad + sizeof *m->offset + sizeof *m->prange + sizeof *m->adj +
                sizeof *m->fplane + sizeof(int32_t)) +
           (2 * leaves - 1) * (sizeof(ce_bvh_node) + sizeof(double[5]));
  }
  const ce_trimesh *m = NULL;
  const size_t leaves = (n + CE_BVH_TRI_LEAF - 1) / CE_BVH_TRI_LEAF;
  return sizeof(ce_geometry) + v * sizeof *m->v +
         n * (sizeof *m->tri + sizeof *m->normal + sizeof *m->area + sizeof *m->adj + sizeof *m->comp +
              sizeof *m->comp_tris + sizeof(int32_t) + sizeof(ce_bvh_tri)) +
         (2 * leaves - 1) * sizeof(ce_bvh_node) + leaves * sizeof(ce_bvh_disk);
}

/* The checks and the allocation both mesh finishers start with: out
 * given, props valid and of the compliance the mesh kind needs, counts in
 * range, arrays given (have_arrays); then a zeroed geometry with the
 * common fields (*g). `what` and `elem` name the kind in messages. */
static ce_errno mesh_start(ce_shape_type shape, const ce_props *props, ce_compliance want, const char *what,
                           const char *elem, int32_t nv, int32_t ne, int have_arrays, ce_geometry **out,
                           ce_geometry **g, ce_error *err) {
  ce_errno e;
  if (out) *out = NULL;
  if (!out) return ce_fail(err, CE_EINVAL, "%s: out is NULL", what);
  if ((e = ce_props_check(props, 0, 0, err)) != CE_OK) return e;
  if (props->compliance != want)
    return ce_fail(err, CE_EINVAL, "a %s must be %s (compliance %d)", what, want == CE_RIGID ? "rigid" : "compliant",
                   (int)props->compliance);
  if ((e = check_counts(what, nv, ne, elem, err)) != CE_OK) return e;
  if (!have_arrays) return ce_fail(err, CE_EINVAL, "%s: vertex or %s array is NULL", what, elem);
  const size_t least = mesh_bytes_at_least(want, nv, ne);
  if (props->max_bytes && least > props->max_bytes)
    return ce_fail(err, CE_EBYTES,
                   "%s: %d %ss and %d vertices take at least %.3g MB once built, over the limit of %.3g MB", what,
                   (int)ne, elem, (int)nv, (double)least / 1e6, (double)props->max_bytes / 1e6);
  *g = calloc(1, sizeof **g);
  if (!*g) return ce_fail(err, CE_ENOMEM, "%s: out of memory", what);
  geometry_common(*g, shape, props);
  return CE_OK;
}

/* p may be NULL: the field is then E * (distance to the boundary) / (largest
 * such distance). */
static ce_errno finish_tetmesh(ce_shape_type shape, const ce_props *props, const ce_buildprog *prog, ce_vec3 *v,
                               int32_t nv, int32_t (*tets)[4], int32_t nt, double *p, int signed_field,
                               ce_geometry **out, ce_error *err) {
  ce_geometry *g = NULL;
  ce_errno e = mesh_start(shape, props, CE_COMPLIANT, "tet mesh", "tet", nv, nt, v && tets, out, &g, err);
  if (e != CE_OK) goto fail_arrays;
  g->signed_field = signed_field;
  g->tet.nv = nv;
  g->tet.nt = nt;
  g->tet.v = v;
  g->tet.tet = tets;
  g->tet.p = p;
  g->tet.grad = malloc((size_t)nt * sizeof *g->tet.grad);
  g->tet.offset = malloc((size_t)nt * sizeof *g->tet.offset);
  g->tet.prange = malloc((size_t)nt * sizeof *g->tet.prange);
  g->tet.adj = malloc((size_t)nt * sizeof *g->tet.adj);
  g->tet.fplane = malloc((size_t)nt * sizeof *g->tet.fplane);
  if (!g->tet.grad || !g->tet.offset || !g->tet.prange || !g->tet.adj || !g->tet.fplane) {
    e = ce_fail(err, CE_ENOMEM, "tet mesh: out of memory for %d tets", (int)nt);
    goto fail;
  }
  if ((e = tet_build(g, prog, err)) != CE_OK) goto fail;
  *out = g;
  return CE_OK;
fail:
  ce_geometry_free(g);
  return e;
fail_arrays:
  free(v);
  free(tets);
  free(p);
  return e;
}

ce_errno ce_geometry_finish_tetmesh(ce_shape_type shape, const ce_props *props, const ce_buildprog *prog,
                                    ce_vec3 *v, int32_t nv, int32_t (*tets)[4], int32_t nt, double *p,
                                    ce_geometry **out, ce_error *err) {
  return finish_tetmesh(shape, props, prog, v, nv, tets, nt, p, 0, out, err);
}

ce_errno ce_geometry_finish_tetmesh_signed(ce_shape_type shape, const ce_props *props, ce_vec3 *v, int32_t nv,
                                           int32_t (*tets)[4], int32_t nt, double *p, ce_geometry **out,
                                           ce_error *err) {
  if (!p) {
    free(v);
    free(tets);
    return ce_fail(err, CE_EINVAL, "signed tet mesh: no field");
  }
  return finish_tetmesh(shape, props, NULL, v, nv, tets, nt, p, 1, out, err);
}

/* ---- triangle meshes ---------------------------------------------------- */

/* Checks and builds a triangle mesh's tables and hierarchies, reporting
 * into prog: the checks in [0, 0.1], the edges in [0.1, 0.2], the
 * hierarchy in [0.2, 0.76] and its seed data in [0.76, 1]. */
static ce_errno tri_build(ce_geometry *g, int require_closed, const ce_buildprog *prog, ce_error *err) {
  ce_trimesh *m = &g->tri;
  const int32_t nv = m->nv, nf = m->nf;
  ce_errno e;
  if ((e = ce_buildprog_report(prog, 0, err)) != CE_OK) return e;
  for (int32_t f = 0; f < nf; f++)
    for (int i = 0; i < 3; i++)
      if (m->tri[f][i] < 0 || m->tri[f][i] >= nv)
        return ce_fail(err, CE_ERANGE, "triangle %d vertex %d index %d out of range [0, %d)", (int)f, i,
                       (int)m->tri[f][i], (int)nv);
  double scale = 0;
  for (int32_t i = 0; i < nv; i++) {
    if (!ce_vec3_isfinite(m->v[i]))
      return ce_fail(err, CE_ENONFINITE, "vertex %d has a non-finite coordinate (%g, %g, %g)", (int)i,
                     m->v[i].x, m->v[i].y, m->v[i].z);
    double r = ce_norm(m->v[i]);
    if (r > scale) scale = r;
  }
  for (int32_t f = 0; f < nf; f++) {
    if ((f & 65535) == 65535 && (e = ce_buildprog_report(prog, 0.1 * f / nf, err)) != CE_OK) return e;
    ce_vec3 a = m->v[m->tri[f][0]], b = m->v[m->tri[f][1]], c = m->v[m->tri[f][2]];
    ce_vec3 n = ce_cross(ce_sub(b, a), ce_sub(c, a));
    double l2 = fmax(ce_norm2(ce_sub(b, a)), fmax(ce_norm2(ce_sub(c, b)), ce_norm2(ce_sub(a, c))));
    double twice = ce_norm(n);
    if (!(twice > CE_TRI_AREA_RTOL * l2))
      return ce_fail(err, CE_EDEGENERATE, "triangle %d is degenerate (area %.3g, longest edge %.3g)", (int)f,
                     0.5 * twice, sqrt(l2));
    m->area[f] = 0.5 * twice;
    m->normal[f] = ce_scale(n, 1.0 / twice);
  }
  int64_t nopen = 0;
  const ce_buildprog pedges = ce_buildprog_part(prog, 0.1, 0.2);
  if ((e = ce_tri_edges(m, require_closed, &pedges, &nopen, err)) != CE_OK) return e;
  if ((e = ce_tri_components(m, 1, err)) != CE_OK) return e;
  g->convex = nopen == 0 && ce_trimesh_convex(m, 1e-9 * (scale > 0 ? scale : 1));
  double volume = 0;
  if (nopen == 0) {
    /* Signed volume of the closed surface, about a vertex of the mesh to
     * keep the products small. */
    ce_vec3 o = m->v[m->tri[0][0]];
    for (int32_t f = 0; f < nf; f++) {
      ce_vec3 a = ce_sub(m->v[m->tri[f][0]], o), b = ce_sub(m->v[m->tri[f][1]], o),
              c = ce_sub(m->v[m->tri[f][2]], o);
      volume += ce_dot(a, ce_cross(b, c)) / 6.0;
    }
    if (volume < 0) return ce_fail(err, CE_EINVAL, "triangles wind inward (volume %.3g)", volume);
    if (!(volume > 0)) return ce_fail(err, CE_EINVAL, "closed triangle mesh encloses no volume (volume %.3g)", volume);
  }
  g->volume = volume;
  g->scale = scale > 0 ? scale : 1;
  if ((e = ce_buildprog_report(prog, 0.2, err)) != CE_OK) return e;
  const ce_buildprog ph = ce_buildprog_part(prog, 0.2, 0.76), ps = ce_buildprog_part(prog, 0.76, 1);
  if ((e = ce_bvh_build(&g->bvh, nf, 3, &m->tri[0][0], m->v, NULL, &ph, err)) != CE_OK) return e;
  /* the seed search of a tet mesh against this one (ce_intersect_tet_tri) */
  if ((e = ce_bvh_build_surface(&g->bvh, (const int32_t(*)[3])m->tri, m->v, &ps, err)) != CE_OK) return e;
  if ((e = ce_buildprog_report(prog, 1.0, err)) != CE_OK) return e;
  g->bytes = sizeof *g + (size_t)nv * sizeof *m->v +
             (size_t)nf * (sizeof *m->tri + sizeof *m->normal + sizeof *m->area + sizeof *m->adj +
                           sizeof *m->comp + sizeof *m->comp_tris) +
             (size_t)(m->ncomp + 1) * sizeof *m->comp_off + ce_bvh_bytes(&g->bvh);
  return CE_OK;
}

ce_errno ce_geometry_finish_trimesh(ce_shape_type shape, const ce_props *props, const ce_buildprog *prog,
                                    ce_vec3 *v, int32_t nv, int32_t (*tris)[3], int32_t nf, int require_closed,
                                    ce_geometry **out, ce_error *err) {
  ce_geometry *g = NULL;
  ce_errno e = mesh_start(shape, props, CE_RIGID, "triangle mesh", "triangle", nv, nf, v && tris, out, &g, err);
  if (e != CE_OK) goto fail_arrays;
  g->tri.nv = nv;
  g->tri.nf = nf;
  g->tri.v = v;
  g->tri.tri = tris;
  g->tri.normal = malloc((size_t)nf * sizeof *g->tri.normal);
  g->tri.area = malloc((size_t)nf * sizeof *g->tri.area);
  g->tri.adj = malloc((size_t)nf * sizeof *g->tri.adj);
  if (!g->tri.normal || !g->tri.area || !g->tri.adj) {
    e = ce_fail(err, CE_ENOMEM, "triangle mesh: out of memory for %d triangles", (int)nf);
    goto fail;
  }
  if ((e = tri_build(g, require_closed, prog, err)) != CE_OK) goto fail;
  *out = g;
  return CE_OK;
fail:
  ce_geometry_free(g);
  return e;
fail_arrays:
  free(v);
  free(tris);
  return e;
}

/* ---- public builders ---------------------------------------------------- */

ce_errno ce_geometry_from_tetmesh(const double *vertices, int32_t nv, const int32_t *tets, int32_t nt,
                                  const double *pressure, const ce_props *props, ce_geometry **out,
                                  ce_error *err) {
  ce_errno e;
  if (!out) return ce_fail(err, CE_EINVAL, "tet mesh: out is NULL");
  *out = NULL;
  if (props && props->compliance != CE_COMPLIANT)
    return ce_fail(err, CE_EINVAL, "a tet mesh must be compliant (compliance %d)", (int)props->compliance);
  ce_props p0; /* the margin's inflated copy is made after the build */
  if ((e = ce_margin_take(props, &p0, err)) != CE_OK || (e = ce_props_check(&p0, 0, 0, err)) != CE_OK) return e;
  const double margin = props->margin;
  props = &p0;
  if ((e = check_counts("tet mesh", nv, nt, "tet", err)) != CE_OK) return e;
  if (!vertices || !tets) return ce_fail(err, CE_EINVAL, "tet mesh: vertex or tet array is NULL");
  ce_vec3 *v = malloc((size_t)nv * sizeof *v);
  int32_t(*t)[4] = malloc((size_t)nt * sizeof *t);
  double *p = pressure ? malloc((size_t)nv * sizeof *p) : NULL;
  if (!v || !t || (pressure && !p)) {
    free(v);
    free(t);
    free(p);
    return ce_fail(err, CE_ENOMEM, "tet mesh: out of memory copying %d vertices and %d tets", (int)nv, (int)nt);
  }
  for (int32_t i = 0; i < nv; i++) v[i] = ce_v3(vertices[3 * (size_t)i], vertices[3 * (size_t)i + 1],
                                                vertices[3 * (size_t)i + 2]);
  memcpy(t, tets, (size_t)nt * sizeof *t);
  if (p) memcpy(p, pressure, (size_t)nv * sizeof *p);
  const ce_buildprog prog = ce_buildprog_of(props);
  e = ce_geometry_finish_tetmesh(CE_SHAPE_TETMESH, props, &prog, v, nv, t, nt, p, out, err);
  return ce_margin_apply(e, margin, props, out, err);
}

ce_errno ce_geometry_from_trimesh(const double *vertices, int32_t nv, const int32_t *tris, int32_t nf,
                                  int require_closed, const ce_props *props, ce_geometry **out,
                                  ce_error *err) {
  ce_errno e;
  if (!out) return ce_fail(err, CE_EINVAL, "triangle mesh: out is NULL");
  *out = NULL;
  if ((e = ce_props_check(props, 0, 0, err)) != CE_OK) return e;
  if (props->compliance != CE_RIGID)
    return ce_fail(err, CE_EINVAL, "a triangle mesh must be rigid (compliance %d)", (int)props->compliance);
  if ((e = check_counts("triangle mesh", nv, nf, "triangle", err)) != CE_OK) return e;
  if (!vertices || !tris) return ce_fail(err, CE_EINVAL, "triangle mesh: vertex or triangle array is NULL");
  ce_vec3 *v = malloc((size_t)nv * sizeof *v);
  int32_t(*t)[3] = malloc((size_t)nf * sizeof *t);
  if (!v || !t) {
    free(v);
    free(t);
    return ce_fail(err, CE_ENOMEM, "triangle mesh: out of memory copying %d vertices and %d triangles", (int)nv,
                   (int)nf);
  }
  for (int32_t i = 0; i < nv; i++) v[i] = ce_v3(vertices[3 * (size_t)i], vertices[3 * (size_t)i + 1],
                                                vertices[3 * (size_t)i + 2]);
  memcpy(t, tris, (size_t)nf * sizeof *t);
  const ce_buildprog prog = ce_buildprog_of(props);
  return ce_geometry_finish_trimesh(CE_SHAPE_TRIMESH, props, &prog, v, nv, t, nf, require_closed, out, err);
}

ce_errno ce_build_halfspace(const ce_props *props, ce_geometry **out, ce_error *err) {
  ce_errno e;
  if (!out) return ce_fail(err, CE_EINVAL, "half space: out is NULL");
  *out = NULL;
  if ((e = ce_props_check(props, 0, props && props->compliance == CE_COMPLIANT, err)) != CE_OK) return e;
  /* a slab of 1e-300 m made the field's gradient's square overflow: no contact at all */
  if (props->compliance == CE_COMPLIANT &&
      (e = ce_check_length("half space", "slab thickness", props->slab_thickness, err)) != CE_OK)
    return e;
  ce_geometry *g = calloc(1, sizeof *g);
  if (!g) return ce_fail(err, CE_ENOMEM, "half space: out of memory");
  geometry_common(g, CE_SHAPE_HALFSPACE, props);
  g->is_halfspace = 1;
  g->slab_thickness = props->compliance == CE_COMPLIANT ? props->slab_thickness : 0;
  g->scale = 1;
  g->bytes = sizeof *g;
  *out = g;
  return CE_OK;
}

void ce_geometry_free(ce_geometry *g) {
  if (!g) return;
  free(g->tet.v);
  free(g->tet.p);
  free(g->tet.tet);
  free(g->tet.grad);
  free(g->tet.offset);
  free(g->tet.prange);
  free(g->tet.adj);
  free(g->tet.fplane);
  free(g->tet.comp);
  free(g->tet.comp_first);
  free(g->tri.v);
  free(g->tri.tri);
  free(g->tri.normal);
  free(g->tri.area);
  free(g->tri.adj);
  free(g->tri.comp);
  free(g->tri.comp_off);
  free(g->tri.comp_tris);
  ce_bvh_free(&g->bvh);
  ce_heightfield_free(g->hf);
  for (int32_t i = 0; i < g->npieces; i++) ce_geometry_free(g->pieces[i]);
  free(g->pieces);
  ce_geometry_free(g->inflated);
  free(g);
}

void ce_geometry_get_info(const ce_geometry *g, ce_geometry_info *info) {
  if (!info) return;
  memset(info, 0, sizeof *info);
  if (!g) return;
  info->shape = g->shape;
  info->compliance = g->compliance;
  info->is_halfspace = g->is_halfspace;
  info->vertices = g->tet.nt > 0 ? g->tet.nv : g->tri.nv;
  info->tetrahedra = g->tet.nt;
  info->triangles = g->tri.nf;
  info->bvh_nodes = g->bvh.nnodes;
  if (g->tet.nt > 0 && g->tet.p) {
    double lo = INFINITY, hi = -INFINITY;
    for (int32_t i = 0; i < g->tet.nv; i++) {
      lo = fmin(lo, g->tet.p[i]);
      hi = fmax(hi, g->tet.p[i]);
    }
    info->min_pressure = lo;
    info->max_pressure = hi;
  }
  info->volume = g->volume;
  info->bytes = g->bytes;
  if (g->hf) info->vertices = (int32_t)ce_heightfield_samples(g->hf);
}
