/* ce_limits.h — every limit the engine enforces, in one table.
 *
 * Each row: name (CE_LIMIT_<name>), C type, value, unit, what it bounds and
 * why. Inputs beyond a count limit fail with CE_ELIMIT before anything is
 * sized by them; dimensions outside the length range with CE_EINVAL naming
 * the field. The daemon's limits (server/daemon/cd_limits.h) derive from
 * these where they mean the same thing: its max_mesh_elements defaults to
 * CE_DEFAULT_MAX_TETS (ce.h), the tetrahedraliser's default bound. */
#ifndef CE_LIMITS_H
#define CE_LIMITS_H

#include "ce.h"

/* XX(name, type, value, unit, description) */
#define CE_LIMITS_MAP(XX)                                                                     \
  XX(MESH_COUNT, int32_t, 1 << 28, "vertices or elements",                                   \
     "vertices, and tets or triangles, of one mesh: a geometry build, a parsed mesh file, a " \
     "Laplace field; with 4 corners per tet, corner counts and indices stay within int32_t")  \
  XX(HULL_POINTS, int32_t, 1 << 28, "points",                                                 \
     "points of one convex set (ce_build_convex); same reason as MESH_COUNT")                 \
  XX(HEIGHTFIELD_SAMPLES, int32_t, 1 << 28, "samples",                                        \
     "nx * ny samples of one heightfield grid; same reason as MESH_COUNT")                    \
  XX(TETRAHEDRALIZE_INPUT, int32_t, 1 << 26, "vertices or triangles",                         \
     "the closed surface given to the tetrahedraliser (a quarter of MESH_COUNT: the tet mesh " \
     "made from it is larger than the surface)")                                              \
  XX(SURFACE_TETS, int32_t, CE_DEFAULT_MAX_TETS, "tets",                                      \
     "tets one tetrahedralisation may make when ce_surface_build_options.max_tets <= 0")      \
  XX(PRIMITIVE_ELEMENTS, int32_t, 2000000, "elements",                                        \
     "tets, or triangles of a rigid mesh, one primitive may make; a finer hint fails before " \
     "any big allocation")                                                                    \
  XX(TERRAIN_SAMPLES, int32_t, 1024, "samples per axis",                                      \
     "lattice samples along each axis of a compliant body's footprint on a terrain (the "     \
     "lattice coarsens beyond it), which bounds the triangles one terrain pair makes")        \
  XX(MIN_LENGTH, double, 1e-9, "m",                                                           \
     "smallest dimension of a primitive (radius, length, sizes, semi-axes, slab thickness), " \
     "heightfield spacing or convex set span")                                                \
  XX(MAX_LENGTH, double, 1e9, "m",                                                            \
     "largest such dimension, heightfield height or convex set coordinate: far outside "      \
     "[MIN_LENGTH, MAX_LENGTH] the cubes and products of lengths in volumes and fields "      \
     "leave double precision (a sphere of radius 1e-110 or 1e200 has tets of zero or "        \
     "infinite volume)")                                                                      \
  XX(PRIMITIVE_ASPECT, double, 1e9, "ratio",                                                  \
     "largest ratio between two dimensions of a box, cylinder or capsule: beyond it the "     \
     "elements are too thin to tell from flat (they first fail at 1e12)")                    \
  XX(ELLIPSOID_ASPECT, double, 1e4, "ratio",                                                  \
     "the same for an ellipsoid's semi-axes, whose tets are an icosphere's stretched along "  \
     "its axes (they first fail at 1e6)")                                                     \
  XX(REDUCED_POINTS, int32_t, CE_REDUCE_MAX_POINTS, "points",                               \
     "reduced contacts per patch (ce_options.reduced_contacts): each patch's points are "    \
     "chosen and solved for on the stack")                                                  \
  XX(MARGIN_NORMALS, int32_t, 64, "face normals",                                           \
     "distinct boundary face normals at one vertex of a geometry with a margin (ce_margin.c) " \
     "whose offset is solved for (enumerating sets of up to three, O(k^4)); more: split")   \
  XX(MARGIN_STRETCH, double, 4, "ratio",                                                    \
     "largest distance a boundary vertex moves, over the margin, when its face planes move "   \
     "out by the margin (ce_margin.c): sharper vertices (a wedge under 29 degrees, a cone "    \
     "tip under 14.5 degrees of half angle) are split, a copy per face")                    \
  XX(COARSEST_HINT, double, 1e3, "ratio",                                                     \
     "a resolution hint above this many times a primitive's largest dimension is taken as "   \
     "this one (the same, coarsest, mesh), so that hint over size cannot overflow")

#define CE_LIMIT_DEFINE(name, type, value, unit, desc) static const type CE_LIMIT_##name = (value);
CE_LIMITS_MAP(CE_LIMIT_DEFINE)
#undef CE_LIMIT_DEFINE

#endif /* CE_LIMITS_H */
