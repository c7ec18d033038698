/* ce_mesh.h — the tet and triangle meshes of a geometry: vertices,
 * elements and the per-element tables built once (ce_tetmesh.c,
 * ce_trimesh.c). */
#ifndef CE_MESH_H
#define CE_MESH_H

#include "ce_internal.h"

/* Linear field on one tet: p(x) = grad . x + offset (geometry frame). */
typedef struct ce_tetmesh {
  int32_t nv, nt;
  ce_vec3 *v;             /* nv vertices, geometry frame */
  double *p;              /* nv pressures, Pa */
  int32_t (*tet)[4];      /* nt tets, positively oriented */
  ce_vec3 *grad;          /* nt pressure gradients, Pa/m */
  double *offset;         /* nt field offsets */
  double (*prange)[2];    /* nt [min, max] pressure over the tet */
  int32_t (*adj)[4];      /* neighbour across the face opposite vertex i; -1 */
  /* nt face planes, [row][face k] with rows nx, ny, nz, d: face k (opposite
   * vertex k) has outward unit normal n and x is inside it when
   * n . x <= d. Rows of four let an intersector test all faces at once. */
  double (*fplane)[4][4];
  /* Connected components across shared faces (built with adj): ncomp;
   * comp[t] of tet t (NULL when ncomp == 1) and comp_first[c], the lowest
   * tet of component c. Surface tracing tests a component no seed reached
   * for lying wholly inside the other body. */
  int32_t ncomp;
  int32_t *comp;
  int32_t *comp_first;
} ce_tetmesh;

typedef struct ce_trimesh {
  int32_t nv, nf;
  ce_vec3 *v;             /* nv vertices, geometry frame */
  int32_t (*tri)[3];      /* nf triangles, counter-clockwise seen from outside */
  ce_vec3 *normal;        /* nf unit outward normals */
  double *area;           /* nf areas */
  int32_t (*adj)[3];      /* neighbour across edge (i, i+1 mod 3); -1 if open */
  int32_t ncomp;          /* connected components across shared edges (0: not counted) */
  /* The components (built with ncomp; NULL for temporary meshes): comp[f]
   * of triangle f, numbered in the order of their lowest triangle; the
   * triangles of component c, ascending, are comp_tris[comp_off[c] ..
   * comp_off[c + 1]). Lets surface tracing test a component the walk never
   * reached for lying wholly inside the compliant body. */
  int32_t *comp;          /* nf */
  int32_t *comp_off;      /* ncomp + 1 */
  int32_t *comp_tris;     /* nf */
} ce_trimesh;

#endif /* CE_MESH_H */
