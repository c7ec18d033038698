/* ce_primitive.h — raw mesh generators for the primitive shapes (internal).
 *
 * ce_geometry_from_shape() (ce.h) validates, generates a raw mesh here and
 * hands its arrays to ce_geometry_finish_tetmesh/_trimesh. The generators are
 * exposed so tests can check the meshes directly (orientation, conformity,
 * pressure values, volume). */
#ifndef CE_PRIMITIVE_H
#define CE_PRIMITIVE_H

#include "ce_internal.h"

/* The limits on primitives (elements, lengths, aspect ratios, the coarsest
 * hint) are in ce_limits.h. */

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

/* ---- shared by the generators (ce_primitive.c, ce_prism_mesh.c) ---------- */

/* Six times the signed volume of the tet (a, b, c, d). */
static inline double ce_prim_det3(ce_vec3 a, ce_vec3 b, ce_vec3 c, ce_vec3 d) {
  return ce_dot(ce_sub(b, a), ce_cross(ce_sub(c, a), ce_sub(d, a)));
}

/* A 64-bit mixing function (MurmurHash3's finaliser) for hash tables. */
static inline uint64_t ce_prim_mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

/* Make every tet positively oriented (swap two vertices if needed). */
void ce_prim_orient_tets(const ce_vec3 *v, int32_t (*t)[4], int32_t nt);

/* Turn the triangles of a convex rigid primitive outward, away from the
 * nearest point of the medial segment z in [-l, l] (l = 0: the origin). */
void ce_prim_orient_tris_outward(const ce_vec3 *v, int32_t (*f)[3], int32_t nf, double l);

/* CE_ENOMEM: "<what>: out of memory". */
ce_errno ce_prim_oom(ce_error *err, const char *what);

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
