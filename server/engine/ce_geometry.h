/* ce_geometry.h — a geometry's internals: the built meshes, their
 * hierarchies and the finishing steps every kind of geometry goes through
 * (ce_geometry.c, ce_hull.c). */
#ifndef CE_GEOMETRY_H
#define CE_GEOMETRY_H

#include "ce_bvh.h"
#include "ce_mesh.h"
#include "ce_progress.h"

struct ce_geometry {
  ce_shape_type shape;
  ce_compliance compliance;
  int is_halfspace;
  double modulus;          /* compliant: E; rigid: INFINITY */
  double slab_thickness;   /* compliant half space */
  ce_material material;
  ce_tetmesh tet;          /* compliant meshes (nt > 0) */
  ce_trimesh tri;          /* rigid meshes (nf > 0) */
  ce_bvh bvh;              /* over tets (compliant) or triangles (rigid) */
  double volume;
  double scale;            /* largest |vertex| in the geometry frame (>0) */
  int convex;              /* meshes: 1 when the mesh bounds a convex body
                            * (checked once at build, ce_geometry.c) */
  size_t bytes;
  struct ce_heightfield *hf; /* CE_SHAPE_HEIGHTFIELD only (ce_heightfield.c) */
  /* The primitive's analytic parameters (type, radius, length, size) as
   * given to ce_geometry_from_shape (points = NULL, npoints kept); type 0
   * for meshes and geometries built otherwise. The point-contact model
   * (ce_mtd.c) uses them for exact shapes instead of the tessellation. */
  ce_shape shape_params;
  /* Optional convex decomposition of a rigid mesh (ce_pieces.c): npieces
   * rigid CE_SHAPE_CONVEX geometries in this geometry's frame, owned (freed
   * by ce_geometry_free). The point-contact model uses them instead of the
   * mesh's hull. */
  struct ce_geometry **pieces;
  int32_t npieces;
  /* Margin (ce_props.margin; ce_margin.c): the inflated copy (owned, freed
   * by ce_geometry_free; NULL without a margin) and, on that copy,
   * signed_field = 1 (its field may be negative: the layer). */
  double margin;
  int32_t margin_split; /* vertices whose copy split, one per face (ce_offset.h) */
  int32_t margin_right; /* layer prisms made right prisms where they folded */
  struct ce_geometry *inflated;
  int signed_field;
};

/* Take ownership of malloc'd arrays (v, tets, p) and finish a compliant
 * geometry: validate (finite, positive volumes, field >= 0), compute per-tet
 * gradients/offsets/ranges, adjacency, BVH. On failure frees the arrays.
 * prog: these steps' share of the build's progress (ce_buildprog_of(props)
 * when they are the whole build; NULL: no reports). */
ce_errno ce_geometry_finish_tetmesh(ce_shape_type shape, const ce_props *props,
                                    const ce_buildprog *prog, ce_vec3 *v, int32_t nv,
                                    int32_t (*tets)[4], int32_t nt, double *p,
                                    ce_geometry **out, ce_error *err);
/* ce_geometry_finish_tetmesh for a field that may be negative and nonzero
 * on the boundary (a margin's inflated copy, ce_margin.c). */
ce_errno ce_geometry_finish_tetmesh_signed(ce_shape_type shape, const ce_props *props, ce_vec3 *v, int32_t nv,
                                           int32_t (*tets)[4], int32_t nt, double *p, ce_geometry **out,
                                           ce_error *err);
/* The inflated copy of compliant geometry g with margin delta > 0 into
 * g->inflated (ce_margin.c); props as for g; shape: the primitive g was
 * built from (NULL for a mesh). */
ce_errno ce_margin_inflate(ce_geometry *g, const ce_shape *shape, double delta, const ce_props *props,
                           ce_error *err);
/* For the builders that take a margin: checks props->margin (finite,
 * >= 0, a length in range when > 0) and copies props to *p0 without it
 * (ce_margin.c). */
ce_errno ce_margin_take(const ce_props *props, ce_props *p0, ce_error *err);
/* After such a build (e its result): e when it failed or delta is 0,
 * else the inflated copy of the mesh *out (ce_margin_inflate, shape NULL),
 * freeing *out and setting it NULL when that fails. */
ce_errno ce_margin_apply(ce_errno e, double delta, const ce_props *p0, ce_geometry **out, ce_error *err);
/* Same for rigid triangle meshes (arrays malloc'd, ownership taken). */
ce_errno ce_geometry_finish_trimesh(ce_shape_type shape, const ce_props *props,
                                    const ce_buildprog *prog, ce_vec3 *v, int32_t nv,
                                    int32_t (*tris)[3], int32_t nf, int require_closed,
                                    ce_geometry **out, ce_error *err);

/* The linear function taking value p[i] at x[i] (i = 0..3) on a tet of
 * nonzero volume: returns its gradient and sets *offset so that
 * p(x) = grad . x + offset (ce_geometry.c). */
ce_vec3 ce_tet_linear_field(const ce_vec3 x[4], const double p[4], double *offset);
/* The face planes of a positively oriented tet in ce_tetmesh.fplane's
 * layout (outward unit normals; a zero-area face gets a zero normal). */
void ce_tet_face_planes(const ce_vec3 x[4], double fplane[4][4]);

/* A half space (rigid, or compliant with a slab thickness) (ce_geometry.c). */
ce_errno ce_build_halfspace(const ce_props *props, ce_geometry **out,
                            ce_error *err);
/* A convex point set: compliant = hull tetrahedralised from the centroid
 * (field E at the centroid, 0 on the hull); rigid = hull triangles
 * (ce_hull.c). */
ce_errno ce_build_convex(const ce_shape *shape, const ce_props *props,
                         ce_geometry **out, ce_error *err);

#endif /* CE_GEOMETRY_H */
