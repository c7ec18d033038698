/* ce_offset.h — a boundary vertex's offset when every face plane through
 * it moves out by delta (ce_offset.c; used by a margin's layer,
 * ce_margin.c). */
#ifndef CE_OFFSET_H
#define CE_OFFSET_H

#include "ce_mesh.h"

/* Adds the unit normal nf to the k distinct normals n (capacity cap)
 * unless one within 1e-9 (1 - cos) of it is there: returns the new count,
 * or -1 when nf is new and n is full. */
int ce_offset_add_normal(ce_vec3 *n, int k, int cap, ce_vec3 nf);

/* The offset o = delta u of a vertex on the k >= 1 distinct face planes of
 * outward unit normals n: u the least-norm vector with n_i . u >= 1 for
 * every i (to a relative 1e-12). Returns 0, or -1 when no such u exists
 * (the normals do not lie in an open hemisphere). */
int ce_offset_vertex(const ce_vec3 *n, int k, double delta, ce_vec3 *o);

/* The outer copies of a tet mesh's boundary vertices (ce_offset_layer_build). */
typedef struct ce_offset_layer {
  int32_t nbf;          /* boundary faces, as the tets list them (t, then face i) */
  int32_t (*face)[2];   /* nbf: (tet, local vertex opposite the face) */
  int32_t (*copy)[3];   /* nbf: the outer copy at each corner, corners in
                         * ce_tet_face_vertex order */
  int32_t ncopy;        /* outer copies, numbered as the faces first reach them */
  int32_t *vertex;      /* ncopy: the boundary vertex each copies */
  ce_vec3 *o;           /* ncopy: its offset (zero unless planes) */
  int32_t nsplit;       /* vertices split into one copy per face */
} ce_offset_layer;

/* The copies of mesh m's boundary vertices (m->adj built): one per fan of
 * boundary faces around a vertex (faces joined by boundary edges through
 * it; a vertex where the boundary pinches has several). planes: each
 * copy's offset moves the fan's face planes out by delta
 * (ce_offset_vertex); where that fails (no offset, or one longer than
 * CE_LIMIT_MARGIN_STRETCH delta, or more than CE_LIMIT_MARGIN_NORMALS
 * normals) the vertex is split: each of its faces there gets its own copy,
 * moved by delta along the face's normal. CE_ENOMEM only. */
ce_errno ce_offset_layer_build(const ce_tetmesh *m, double delta, int planes, ce_offset_layer *L, ce_error *err);
void ce_offset_layer_free(ce_offset_layer *L);

#endif /* CE_OFFSET_H */
