/* ce_boundary.c — the boundary of a geometry as a triangle mesh, for
 * drawing: a rigid mesh's own triangles, the faces of a tet mesh that have
 * no neighbour (oriented outward), a terrain's surface sampled on a grid. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_mesh.h"

void ce_boundary_free(ce_boundary *b) {
  if (!b) return;
  free(b->v);
  free(b->tri);
  memset(b, 0, sizeof *b);
}

static ce_errno from_trimesh(const ce_trimesh *m, ce_boundary *out, ce_error *err) {
  out->v = malloc((size_t)m->nv * 3 * sizeof *out->v);
  out->tri = malloc((size_t)m->nf * 3 * sizeof *out->tri);
  if (!out->v || !out->tri) return ce_fail(err, CE_ENOMEM, "boundary: %d triangles", m->nf);
  for (int32_t i = 0; i < m->nv; i++) {
    out->v[3 * i] = m->v[i].x;
    out->v[3 * i + 1] = m->v[i].y;
    out->v[3 * i + 2] = m->v[i].z;
  }
  memcpy(out->tri, m->tri, (size_t)m->nf * 3 * sizeof *out->tri);
  out->nv = m->nv;
  out->nt = m->nf;
  return CE_OK;
}

/* Faces without a neighbour, wound so that their normal points away from
 * the tet's fourth vertex; only the vertices they use are kept. */
static ce_errno from_tetmesh(const ce_tetmesh *m, ce_boundary *out, ce_error *err) {
  int32_t nb = 0;
  for (int32_t t = 0; t < m->nt; t++)
    for (int k = 0; k < 4; k++) nb += m->adj[t][k] < 0;
  int32_t *remap = malloc((size_t)(m->nv ? m->nv : 1) * sizeof *remap);
  out->tri = malloc((size_t)(nb ? nb : 1) * 3 * sizeof *out->tri);
  out->v = malloc((size_t)(m->nv ? m->nv : 1) * 3 * sizeof *out->v);
  if (!remap || !out->tri || !out->v) {
    free(remap);
    return ce_fail(err, CE_ENOMEM, "boundary: %d faces", nb);
  }
  for (int32_t i = 0; i < m->nv; i++) remap[i] = -1;
  int32_t nt = 0, nv = 0;
  for (int32_t t = 0; t < m->nt; t++)
    for (int k = 0; k < 4; k++) {
      if (m->adj[t][k] >= 0) continue;
      int32_t f[3], j = 0;
      for (int i = 0; i < 4; i++)
        if (i != k) f[j++] = m->tet[t][i];
      ce_vec3 a = m->v[f[0]], n = ce_cross(ce_sub(m->v[f[1]], a), ce_sub(m->v[f[2]], a));
      if (ce_dot(n, ce_sub(m->v[m->tet[t][k]], a)) > 0) {
        int32_t s = f[1];
        f[1] = f[2];
        f[2] = s;
      }
      for (int i = 0; i < 3; i++) {
        if (remap[f[i]] < 0) {
          ce_vec3 p = m->v[f[i]];
          out->v[3 * nv] = p.x;
          out->v[3 * nv + 1] = p.y;
          out->v[3 * nv + 2] = p.z;
          remap[f[i]] = nv++;
        }
        out->tri[3 * nt + i] = remap[f[i]];
      }
      nt++;
    }
  free(remap);
  out->nv = nv;
  out->nt = nt;
  return CE_OK;
}

/* The terrain sampled on at most CE_BOUNDARY_TERRAIN_SAMPLES per side. */
static ce_errno from_terrain(const ce_geometry *g, ce_boundary *out, ce_error *err) {
  ce_vec3 lo, hi;
  ce_errno e = ce_heightfield_extent(g, &lo, &hi, err);
  if (e != CE_OK) return e;
  const int n = CE_BOUNDARY_TERRAIN_SAMPLES;
  out->v = malloc((size_t)n * n * 3 * sizeof *out->v);
  out->tri = malloc((size_t)(n - 1) * (n - 1) * 6 * sizeof *out->tri);
  if (!out->v || !out->tri) return ce_fail(err, CE_ENOMEM, "boundary: terrain of %d x %d samples", n, n);
  /* a hair inside the rectangle: its edges belong to the last patch */
  double ex = (hi.x - lo.x) * 1e-9, ey = (hi.y - lo.y) * 1e-9;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) {
      double x = lo.x + ex + (hi.x - lo.x - 2 * ex) * i / (n - 1);
      double y = lo.y + ey + (hi.y - lo.y - 2 * ey) * j / (n - 1);
      ce_heightfield_point hp;
      double z = ce_heightfield_eval(g, x, y, &hp, NULL) == CE_OK ? hp.height : lo.z;
      double *v = &out->v[3 * (j * n + i)];
      v[0] = x;
      v[1] = y;
      v[2] = z;
    }
  int32_t t = 0;
  for (int j = 0; j + 1 < n; j++)
    for (int i = 0; i + 1 < n; i++) {
      int32_t a = j * n + i, b = a + 1, c = a + n, d = c + 1;
      int32_t q[6] = {a, b, d, a, d, c}; /* counter-clockwise seen from above */
      memcpy(&out->tri[3 * t], q, sizeof q);
      t += 2;
    }
  out->nv = n * n;
  out->nt = t;
  return CE_OK;
}

ce_errno ce_geometry_boundary(const ce_geometry *g, ce_boundary *out, ce_error *err) {
  memset(out, 0, sizeof *out);
  ce_errno e;
  if (!g || g->is_halfspace)
    return ce_fail(err, CE_EINVAL, "boundary: a half space has none to mesh (its boundary is the plane z = 0)");
  if (g->hf) e = from_terrain(g, out, err);
  else if (g->tet.nt > 0) e = from_tetmesh(&g->tet, out, err);
  else if (g->tri.nf > 0) e = from_trimesh(&g->tri, out, err);
  else e = ce_fail(err, CE_EEMPTY, "boundary: the geometry has no mesh");
  if (e != CE_OK) ce_boundary_free(out);
  return e;
}
