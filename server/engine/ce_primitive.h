/* ce_primitive.h — raw mesh generators for the primitive shapes (internal).
 *
 * ce_geometry_from_shape() (ce.h) validates, generates a raw mesh here and
 * hands its arrays to ce_geometry_finish_tetmesh/_trimesh. The generators are
 * exposed so tests can check the meshes directly (orientation, conformity,
 * pressure values, volume). */
#ifndef CE_PRIMITIVE_H
#define CE_PRIMITIVE_H

#include "ce_internal.h"

/* The limits on primitives (elements, lengths, aspect ratios, the coarsest
 * hint) are in ce_limits.h. */

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

/* Generate the mesh of a sphere, box, cylinder, capsule or ellipsoid:
 * compliance CE_COMPLIANT gives a tet mesh with pressure (modulus E),
 * CE_RIGID a closed surface. Validates the dimensions and the hint
 * (CE_EINVAL naming the field) and the size (CE_ELIMIT). On failure *m is
 * zeroed. */
ce_errno ce_primitive_mesh(const ce_shape *shape, ce_compliance compliance,
                           double E, double hint, ce_rawmesh *m, ce_error *err);

/* Icosphere subdivision level for a sphere of radius r at hint h:
 * max(0, ceil(log2(1.0515 r / h))); returns a large value (> 30) for
 * hints so small that the mesh could not be built. */
int ce_icosphere_level(double r, double h);

#endif /* CE_PRIMITIVE_H */
