/* ce_predicates.h — geometric tests on triangles (ce_predicates.c). */
#ifndef CE_PREDICATES_H
#define CE_PREDICATES_H

#include "ce_math.h"

/* Whether triangles x and y (one frame) meet: Moller's test with a margin
 * tol (a length) that only lets more through; coplanar or degenerate
 * triangles count as meeting. */
int ce_triangles_meet(const ce_vec3 x[3], const ce_vec3 y[3], double tol);

/* Its second half, for callers that know both planes and have already
 * checked that neither triangle lies strictly on one side of the other's
 * plane: normals na, nb (any length) and the signed distances dx[k] of x[k]
 * to y's plane and dy[k] of y[k] to x's plane (scaled alike per triangle). */
int ce_triangles_meet_planes(const ce_vec3 x[3], ce_vec3 na, const double dx[3], const ce_vec3 y[3], ce_vec3 nb,
                             const double dy[3], double tol);

/* The point of triangle abc closest to p. */
ce_vec3 ce_closest_point_triangle(ce_vec3 p, ce_vec3 a, ce_vec3 b, ce_vec3 c);

#endif /* CE_PREDICATES_H */
