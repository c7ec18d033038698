/* ce_intersect.h — the hydroelastic intersectors: contact surfaces in the
 * frame of the compliant geometry M (ce_intersect_cc.c,
 * ce_intersect_rigid.c). */
#ifndef CE_INTERSECT_H
#define CE_INTERSECT_H

#include "ce_mesh.h"
#include "ce_surface.h"
#include "ce_walk.h"

typedef struct ce_counters {
  int64_t candidate_pairs;
  int64_t polygons;
  int64_t faces_dropped;
} ce_counters;

/* Gradient-direction rule: cos of the largest accepted angle between a face
 * normal and a compliant side's pressure gradient (5*pi/8, as Drake). */
#define CE_GRADIENT_COS_LIMIT (-0.38268343236508978) /* cos(5 pi / 8) */

/* compliant mesh M vs compliant mesh N (ce_intersect_cc.c) */
ce_errno ce_intersect_tet_tet(const ce_geometry *m, const ce_geometry *n,
                              const ce_pose *X_MN, ce_builder *b,
                              ce_counters *c);
/* The same from every pressure-pruned BVH candidate pair, without surface
 * tracing (the reference the traced result is tested against). */
ce_errno ce_intersect_tet_tet_all(const ce_geometry *m, const ce_geometry *n,
                                  const ce_pose *X_MN, ce_builder *b,
                                  ce_counters *c);
/* compliant mesh M vs rigid mesh N (ce_intersect_rigid.c) */
ce_errno ce_intersect_tet_tri(const ce_geometry *m, const ce_geometry *n,
                              const ce_pose *X_MN, ce_builder *b,
                              ce_counters *c);
/* The same from every BVH candidate pair, without surface tracing. */
ce_errno ce_intersect_tet_tri_all(const ce_geometry *m, const ce_geometry *n,
                                  const ce_pose *X_MN, ce_builder *b,
                                  ce_counters *c);
/* One rigid triangle tri (M's frame, unit normal nrm) clipped by tet t of
 * M, with the rules of ce_intersect_tet_tri (ce_intersect_rigid.c): cheap
 * rejections, the half-open rule for a triangle in a shared tet face,
 * Sutherland–Hodgman by the 4 face planes, near-duplicate vertices (within
 * eps) removed, zero-area polygons dropped, then the gradient rule (a
 * polygon failing it counts in c->faces_dropped). Returns the polygon's
 * vertex count k >= 3 in out[0..k) (room for CE_CLIP_MAXV), else 0.
 * labels != NULL also labels each vertex with the mesh features it lies on
 * (tri_v = the triangle's global vertex ids, tri_id its index), for vertex
 * sharing; labels == NULL (tri_v, tri_id unused) gives positions only. */
#define CE_CLIP_MAXV 16
int ce_clip_tri_tet(const ce_tetmesh *T, int32_t t, const ce_vec3 tri[3], ce_vec3 nrm, double eps,
                    const int32_t tri_v[3], int32_t tri_id, ce_vec3 *out, ce_vkey *labels, ce_counters *c);
/* compliant mesh M vs rigid half space N */
ce_errno ce_intersect_tet_halfspace(const ce_geometry *m, const ce_geometry *n,
                                    const ce_pose *X_MN, ce_builder *b,
                                    ce_counters *c);
/* compliant half space M vs rigid mesh N */
ce_errno ce_intersect_halfspace_tri(const ce_geometry *m, const ce_geometry *n,
                                    const ce_pose *X_MN, ce_builder *b,
                                    ce_counters *c);

#endif /* CE_INTERSECT_H */
