/* ce_primitive.h — raw mesh generators for the primitive shapes (internal).
 *
 * ce_geometry_from_shape() (ce.h) validates, generates a raw mesh here and
 * hands its arrays to ce_geometry_finish_tetmesh/_trimesh. The generators are
 * exposed so tests can check the meshes directly (orientation, conformity,
 * pressure values, volume). */
#ifndef CE_PRIMITIVE_H
#define CE_PRIMITIVE_H

#include "ce_internal.h"
#include "ce_rawmesh.h"

/* The limits on primitives (elements, lengths, aspect ratios, the coarsest
 * hint) are in ce_limits.h. */

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

/* ---- box and cylinder (ce_prism_mesh.c) ------------------------------------ */

/* Compliant box of half sizes hs: the medial-axis mesh sliced at about h
 * (the unrefined 104-tet medial mesh for boxes too flat to refine). */
ce_errno ce_box_compliant(const double hs[3], double E, double h, ce_rawmesh *m, ce_error *err);

/* Compliant regular n-gon prism of radius R (circumscribed) and length L:
 * `slices` along a long prism's medial segment, K rings on each cap. */
ce_errno ce_cylinder_tets(double R, double L, int32_t n, int32_t slices, int32_t K, double E, ce_rawmesh *m,
                          ce_error *err);

/* Rigid box surface: cells of about h, each fanned into 4 triangles. */
ce_errno ce_box_surface(const double hs[3], double h, ce_rawmesh *m, ce_error *err);

/* Rigid cylinder surface: n-gon rings every ~h, caps fanned. */
ce_errno ce_cylinder_surface(double R, double L, double h, int32_t n, ce_rawmesh *m, ce_error *err);

#endif /* CE_PRIMITIVE_H */
