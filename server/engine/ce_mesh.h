/* ce_mesh.h — the tet and triangle meshes of a geometry: vertices,
 * elements and the per-element tables built once (ce_geometry.c), and
 * their topology (ce_topology.c). */
#ifndef CE_MESH_H
#define CE_MESH_H

#include "ce_internal.h"
#include "ce_progress.h"

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

/* ---- topology (ce_topology.c) ------------------------------------------ */

/* Local vertices of the face opposite vertex i, counter-clockwise seen
 * from outside a positively oriented tet. */
extern const int ce_tet_face_vertex[4][3];

/* Fills m->adj, marks boundary vertices (boundary[v] = 1) and, when bfaces
 * is not NULL, lists the boundary faces as (tet, local face) in *bfaces
 * (malloc'd, *nb entries); CE_EDEGENERATE for a face of three tets or two
 * overlapping tets. prog: [0, 1] of this step. */
ce_errno ce_tet_faces(ce_tetmesh *m, unsigned char *boundary, int32_t (**bfaces)[2], int64_t *nb,
                      const ce_buildprog *prog, ce_error *err);
/* m->ncomp, comp and comp_first (see ce_tetmesh) from m->adj. */
ce_errno ce_tet_components(ce_tetmesh *m, ce_error *err);
/* m->ncomp from m->adj; with keep also comp, comp_off, comp_tris. */
ce_errno ce_tri_components(ce_trimesh *m, int keep, ce_error *err);
/* Fills m->adj; *open = the edges with one triangle (CE_EOPEN at the first
 * one when require_closed); CE_EDEGENERATE for inconsistent winding or a
 * non-manifold edge. prog: [0, 1] of this step. */
ce_errno ce_tri_edges(ce_trimesh *m, int require_closed, const ce_buildprog *prog, int64_t *open,
                      ce_error *err);
/* Whether the closed surface m (adjacency and components counted, outward
 * unit normals) bounds a convex body, within tol. */
int ce_trimesh_convex(const ce_trimesh *m, double tol);
/* The same for a tet mesh's nb boundary faces (tet, local face): *convex. */
ce_errno ce_tet_boundary_convex(const ce_tetmesh *t, const int32_t (*bfaces)[2], int64_t nb, double tol,
                                const ce_buildprog *prog, int *convex, ce_error *err);

#endif /* CE_MESH_H */
