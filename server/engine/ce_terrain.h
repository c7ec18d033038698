/* ce_terrain.h — terrain: the heightfield surface and the contacts against
 * it (ce_heightfield.c, ce_intersect_terrain.c). */
#ifndef CE_TERRAIN_H
#define CE_TERRAIN_H

#include "ce_intersect.h"
#include "ce_surface.h"

typedef struct ce_heightfield ce_heightfield;

/* Height and derivatives of the reconstructed surface at (x, y). */
typedef struct ce_hf_jet {
  double z, zx, zy, zxx, zxy, zyy;
  int32_t cell_i, cell_j;
} ce_hf_jet;

/* The closest point of the surface to c (Newton from the nearest sample). */
typedef struct ce_hf_closest {
  ce_vec3 point, normal; /* on the surface; unit upward normal there */
  double distance;       /* signed: > 0 when c is above the surface */
  int iterations;
  ce_hf_jet jet;
} ce_hf_closest;

void ce_heightfield_free(ce_heightfield *h);
size_t ce_heightfield_bytes(const ce_heightfield *h);
int64_t ce_heightfield_samples(const ce_heightfield *h); /* nx * ny */
const ce_heightfield *ce_geometry_heightfield(const ce_geometry *g);
void ce_heightfield_domain(const ce_heightfield *h, double *x0, double *y0, double *x1, double *y1);
void ce_heightfield_spacing(const ce_heightfield *h, double *dx, double *dy);
/* 0 (jet zeroed) outside the grid's rectangle. */
int ce_heightfield_jet(const ce_heightfield *h, double x, double y, ce_hf_jet *out);
/* Patch (i, j) (0 <= i <= nx-2, 0 <= j <= ny-2) at local (s, t) in [0, 1]^2. */
void ce_heightfield_patch_jet(const ce_heightfield *h, int32_t i, int32_t j, double s, double t, ce_hf_jet *out);
ce_vec3 ce_hf_jet_normal(const ce_hf_jet *j);
/* Bounds of the surface over the rectangle (clipped to the grid); 0 when
 * the rectangle misses the grid. Cost ~ the rectangle's area / 256 cells. */
int ce_heightfield_bounds(const ce_heightfield *h, double x0, double y0, double x1, double y1, double *zlo,
                          double *zhi);
/* Bounds of the whole surface. */
void ce_heightfield_range(const ce_heightfield *h, double *zlo, double *zhi);
/* Closest point to c, starting from the nearest sample within `radius` (plus
 * a spacing) of c's footprint; 0 when c's footprint is farther than radius
 * from the grid. */
int ce_heightfield_closest(const ce_heightfield *h, ce_vec3 c, double radius, ce_hf_closest *out);

/* compliant mesh M vs terrain N: terrain sampled into rigid triangles under
 * M's bounding box, clipped by M's tets. */
ce_errno ce_intersect_tet_terrain(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                                  ce_builder *b, ce_counters *c);
/* Rigid (or any non-terrain) body vs terrain by compliant point contact:
 * fills the result's status, wrenches, total, (want_patches) one patch per
 * contact point and (reduce > 0) one reduced contact per contact point. */
ce_errno ce_terrain_point_contact(const ce_body *a, const ce_body *b, double stiction_tolerance,
                                  int want_patches, int32_t reduce, ce_arena *arena, ce_result *r,
                                  ce_error *err);

#endif /* CE_TERRAIN_H */
