/* ce_rawmesh.c — helpers shared by the primitive mesh generators: freeing a
 * raw mesh, orienting its tets and triangles, the out-of-memory error. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_rawmesh.h"

void ce_rawmesh_free(ce_rawmesh *m) {
  if (!m) return;
  free(m->v);
  free(m->p);
  free(m->tet);
  free(m->tri);
  memset(m, 0, sizeof *m);
}

/* Make every tet positively oriented (swap two vertices if needed). */
void ce_prim_orient_tets(const ce_vec3 *v, int32_t (*t)[4], int32_t nt) {
  for (int32_t i = 0; i < nt; ++i)
    if (ce_prim_det3(v[t[i][0]], v[t[i][1]], v[t[i][2]], v[t[i][3]]) < 0) {
      int32_t s = t[i][0];
      t[i][0] = t[i][1];
      t[i][1] = s;
    }
}

/* Rigid primitives are convex: a triangle faces outward when its normal
 * points away from the nearest point of the medial segment z in [-l, l]
 * (l = 0: the origin; the capsule passes its half length, since far from
 * the origin a band triangle's tiny axial normal component would decide). */
void ce_prim_orient_tris_outward(const ce_vec3 *v, int32_t (*f)[3], int32_t nf, double l) {
  for (int32_t i = 0; i < nf; ++i) {
    ce_vec3 a = v[f[i][0]], b = v[f[i][1]], c = v[f[i][2]];
    ce_vec3 n = ce_cross(ce_sub(b, a), ce_sub(c, a));
    ce_vec3 g = ce_scale(ce_add(ce_add(a, b), c), 1.0 / 3.0);
    g.z -= fmax(-l, fmin(l, g.z));
    if (ce_dot(n, g) < 0) {
      int32_t s = f[i][1];
      f[i][1] = f[i][2];
      f[i][2] = s;
    }
  }
}

ce_errno ce_prim_oom(ce_error *err, const char *what) {
  return ce_fail(err, CE_ENOMEM, "%s: out of memory", what);
}
