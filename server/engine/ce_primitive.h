/* ce_primitive.h — raw mesh generators for the primitive shapes (internal).
 *
 * ce_geometry_from_shape() (ce.h) validates, generates a raw mesh here and
 * hands its arrays to ce_geometry_finish_tetmesh/_trimesh. The generators are
 * exposed so tests can check the meshes directly (orientation, conformity,
 * pressure values, volume). */
#ifndef CE_PRIMITIVE_H
#define CE_PRIMITIVE_H

#include "ce_internal.h"

/* Largest element count (tets, or triangles of a rigid mesh) a primitive may
 * produce; a finer hint fails with CE_ELIMIT before any big allocation. */
#define CE_PRIMITIVE_MAX_ELEMENTS 2000000

/* The largest ratio between two dimensions of one primitive (box sides,
 * cylinder or capsule radius and length, ellipsoid semi-axes): beyond it the
 * elements are too thin to tell from flat. Boxes, cylinders and capsules
 * first fail at 1e12; an ellipsoid, whose tets are an icosphere's stretched
 * along its axes, at 1e6. */
#define CE_PRIMITIVE_MAX_ASPECT 1e9
#define CE_ELLIPSOID_MAX_ASPECT 1e4

/* A hint above this many times a primitive's largest dimension gives the
 * same (coarsest) mesh as this one, and is taken as this one, so that hint
 * over size cannot overflow (a hint of 1e300 once gave NaN vertices). */
#define CE_PRIMITIVE_COARSEST_HINT 1e3

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
