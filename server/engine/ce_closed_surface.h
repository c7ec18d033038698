/* ce_closed_surface.h — the tetrahedraliser's input surface (ce_closed_surface.c):
 * the closed-manifold check, the enclosed volume, and an AABB tree over the
 * triangles for closest points and vertical-ray crossings. */
#ifndef CE_CLOSED_SURFACE_H
#define CE_CLOSED_SURFACE_H

#include "ce_internal.h"

/* The tetrahedraliser's input surface (ce_closed_surface.c). CE_OK for a
 * closed 2-manifold with consistent winding (every edge used once in each
 * direction), else CE_EOPEN / CE_EDEGENERATE naming the edge. */
ce_errno ce_surface_check_closed(const int32_t (*t)[3], int32_t nf, ce_error *err);
/* Signed volume enclosed by the triangles (positive for outward winding). */
double ce_surface_enclosed_volume(const ce_vec3 *v, const int32_t (*t)[3], int32_t nf);

/* An AABB tree over the triangles (median splits on the longest axis,
 * leaves of <= 4 triangles; node 0 is the root). */
typedef struct ce_tri_tree_node {
  double lo[3], hi[3];
  int32_t left, right; /* left < 0: leaf over order[first .. first+count) */
  int32_t first, count;
} ce_tri_tree_node;

typedef struct ce_tri_tree {
  ce_tri_tree_node *n;
  int32_t nn;
  int32_t *order;
  const ce_vec3 *v;
  const int32_t (*t)[3];
} ce_tri_tree;

/* A crossing of a vertical line with the surface at height z; sign +1
 * where the triangle faces up (counter-clockwise seen from +z). */
typedef struct ce_ray_crossing {
  double z;
  int sign;
} ce_ray_crossing;

/* Builds T over triangles t of vertices v (both borrowed; malloc'd nodes). */
ce_errno ce_tri_tree_build(ce_tri_tree *T, const ce_vec3 *v, const int32_t (*t)[3], int32_t nf, ce_error *err);
void ce_tri_tree_free(ce_tri_tree *T);
/* Closest surface point to p into *out; returns the squared distance.
 * stack: T->nn + 1 entries of scratch. */
double ce_tri_tree_closest(const ce_tri_tree *T, ce_vec3 p, ce_vec3 *out, int32_t *stack);
/* All crossings of the vertical line through (px, py), unsorted, into the
 * growable *buf (*cap entries; realloc'd), their number into *count;
 * CE_ENOMEM (no message) when *buf cannot grow. */
ce_errno ce_tri_tree_vertical(const ce_tri_tree *T, double px, double py, int32_t *stack, ce_ray_crossing **buf,
                              int32_t *cap, int32_t *count);
/* qsort order of crossings: by z, then sign. */
int ce_ray_crossing_cmp(const void *pa, const void *pb);

#endif /* CE_CLOSED_SURFACE_H */
