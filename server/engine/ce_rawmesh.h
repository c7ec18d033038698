/* ce_rawmesh.h — a primitive's raw mesh before it becomes a geometry, and
 * the helpers every mesh generator shares (ce_rawmesh.c): orientation,
 * the out-of-memory error. A leaf: it calls only ce_math and
 * ce_fail, so the generators (ce_primitive.c, ce_prism_mesh.c) can all use
 * it without calling each other back. */
#ifndef CE_RAWMESH_H
#define CE_RAWMESH_H

#include "ce_internal.h"

/* A malloc'd mesh. Compliant: v, p (per vertex, Pa), tet (positively
 * oriented). Rigid: v, tri (counter-clockwise seen from outside); p = NULL. */
typedef struct ce_rawmesh {
  int32_t nv, nt, nf;
  ce_vec3 *v;
  double *p;
  int32_t (*tet)[4];
  int32_t (*tri)[3];
} ce_rawmesh;

void ce_rawmesh_free(ce_rawmesh *m);

/* Six times the signed volume of the tet (a, b, c, d). */
static inline double ce_prim_det3(ce_vec3 a, ce_vec3 b, ce_vec3 c, ce_vec3 d) {
  return ce_dot(ce_sub(b, a), ce_cross(ce_sub(c, a), ce_sub(d, a)));
}

/* Make every tet positively oriented (swap two vertices if needed). */
void ce_prim_orient_tets(const ce_vec3 *v, int32_t (*t)[4], int32_t nt);

/* Turn the triangles of a convex rigid primitive outward, away from the
 * nearest point of the medial segment z in [-l, l] (l = 0: the origin). */
void ce_prim_orient_tris_outward(const ce_vec3 *v, int32_t (*f)[3], int32_t nf, double l);

/* CE_ENOMEM: "<what>: out of memory". */
ce_errno ce_prim_oom(ce_error *err, const char *what);

#endif /* CE_RAWMESH_H */
