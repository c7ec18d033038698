/* ce_energy.h — declarations shared by the strain energy (ce_energy.c) and
 * the terrain contact (ce_intersect_terrain.c): the sampled terrain both
 * integrate over, so the energy is the potential of the surface's wrench. */
#ifndef CE_ENERGY_H
#define CE_ENERGY_H

#include "ce_internal.h"

/* The terrain N sampled under compliant mesh M's bounding box: nx * ny
 * samples, sample (i, j) at (x[i], y[j], z[j * nx + i]) in N's frame and
 * pm[j * nx + i] in M's frame. Lattice cell (i, j) (i < nx - 1, j < ny - 1)
 * is split into the triangles (s00, s10, s11) and (s00, s11, s01), normals
 * up; the terrain's solid under the lattice is the union of the vertical
 * prisms below them. The sample positions are fixed to the grid's cells
 * (see ce_intersect_terrain.c), so the same terrain region gives the same
 * triangles at any pose of M. nx = 0 when M cannot reach the terrain. All
 * arrays live in the arena. */
typedef struct ce_terrain_lattice {
  int nx, ny;
  double *x, *y, *z;
  ce_vec3 *pm;
} ce_terrain_lattice;

ce_errno ce_terrain_sample(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, ce_arena *arena,
                           ce_terrain_lattice *out);

#endif /* CE_ENERGY_H */
