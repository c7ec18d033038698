/* ce_surface.h — the contact-surface builder the intersectors fill and its
 * finishing into a ce_surface (ce_surface.c). */
#ifndef CE_SURFACE_H
#define CE_SURFACE_H

#include "ce_arena.h"

/* Collects polygons in the frame of the compliant geometry M while an
 * intersector runs. Normals point out of N into M. */
typedef struct ce_builder {
  ce_arena *arena;
  ce_buf v;          /* ce_vec3 */
  ce_buf p;          /* double */
  ce_buf face_off;   /* int32_t, starts with 0 */
  ce_buf face_vert;  /* int32_t */
  ce_buf normal;     /* ce_vec3 per face */
  ce_buf grad_m;     /* ce_vec3 per face */
  ce_buf grad_n;     /* ce_vec3 per face (zero when N is rigid) */
  ce_buf elem_m;     /* int32_t per face */
  ce_buf elem_n;     /* int32_t per face */
} ce_builder;

ce_errno ce_builder_init(ce_builder *b, ce_arena *arena);

/* Corners of one face at most. */
#define CE_MAX_POLY 16

/* Returns the new vertex id, or -1 on arena exhaustion. */
static inline int32_t ce_builder_add_vertex(ce_builder *b, ce_vec3 x, double p) {
  if (b->v.len >= INT32_MAX) return -1;
  if ((b->v.len >= b->v.cap || b->p.len >= b->p.cap) &&
      (ce_buf_reserve(b->arena, &b->v, 1) != CE_OK || ce_buf_reserve(b->arena, &b->p, 1) != CE_OK))
    return -1;
  int32_t id = (int32_t)b->v.len;
  ((ce_vec3 *)b->v.data)[b->v.len++] = x;
  ((double *)b->p.data)[b->p.len++] = p;
  return id;
}

/* Room for nv new vertices and one face of n corners in every array (the
 * per-face arrays grow together; all are checked inline first, since this
 * runs once per output polygon). */
static inline ce_errno ce_builder_face_room(ce_builder *b, int nv, int n) {
  int room = b->v.len + nv <= b->v.cap && b->p.len + nv <= b->p.cap && b->face_vert.len + n <= b->face_vert.cap &&
             b->face_off.len < b->face_off.cap && b->normal.len < b->normal.cap && b->grad_m.len < b->grad_m.cap &&
             b->grad_n.len < b->grad_n.cap && b->elem_m.len < b->elem_m.cap && b->elem_n.len < b->elem_n.cap;
  if (room) return CE_OK;
  ce_arena *a = b->arena;
  if ((nv > 0 && (ce_buf_reserve(a, &b->v, nv) != CE_OK || ce_buf_reserve(a, &b->p, nv) != CE_OK)) ||
      ce_buf_reserve(a, &b->face_vert, n) != CE_OK || ce_buf_reserve(a, &b->face_off, 1) != CE_OK ||
      ce_buf_reserve(a, &b->normal, 1) != CE_OK || ce_buf_reserve(a, &b->grad_m, 1) != CE_OK ||
      ce_buf_reserve(a, &b->grad_n, 1) != CE_OK || ce_buf_reserve(a, &b->elem_m, 1) != CE_OK ||
      ce_buf_reserve(a, &b->elem_n, 1) != CE_OK)
    return CE_ENOMEM;
  return CE_OK;
}

/* The per-face record of a face whose corners were just appended to
 * face_vert (room checked by ce_builder_face_room). */
static inline void ce_builder_face_record(ce_builder *b, ce_vec3 normal, ce_vec3 grad_m, ce_vec3 grad_n,
                                          int32_t elem_m, int32_t elem_n) {
  ((int32_t *)b->face_off.data)[b->face_off.len++] = (int32_t)b->face_vert.len;
  ((ce_vec3 *)b->normal.data)[b->normal.len++] = normal;
  ((ce_vec3 *)b->grad_m.data)[b->grad_m.len++] = grad_m;
  ((ce_vec3 *)b->grad_n.data)[b->grad_n.len++] = grad_n;
  ((int32_t *)b->elem_m.data)[b->elem_m.len++] = elem_m;
  ((int32_t *)b->elem_n.data)[b->elem_n.len++] = elem_n;
}

/* A face from existing vertex ids (convex, counter-clockwise about normal).
 * Inline: the surface walks add one per output polygon. */
static inline ce_errno ce_builder_add_face(ce_builder *b, const int32_t *ids, int n, ce_vec3 normal,
                                           ce_vec3 grad_m, ce_vec3 grad_n, int32_t elem_m, int32_t elem_n) {
  if (n < 3 || n > CE_MAX_POLY) return CE_EINVAL;
  for (int i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= b->v.len) return CE_ERANGE;
  if (b->face_vert.len + n > INT32_MAX) return CE_ELIMIT;
  if (ce_builder_face_room(b, 0, n) != CE_OK) return CE_ENOMEM;
  memcpy((int32_t *)b->face_vert.data + b->face_vert.len, ids, (size_t)n * sizeof(int32_t));
  b->face_vert.len += n;
  ce_builder_face_record(b, normal, grad_m, grad_n, elem_m, elem_n);
  return CE_OK;
}

/* A face with its own new vertices. */
ce_errno ce_builder_add_polygon(ce_builder *b, const ce_vec3 *x, const double *p,
                                int n, ce_vec3 normal, ce_vec3 grad_m,
                                ce_vec3 grad_n, int32_t elem_m, int32_t elem_n);
/* Room for nv more vertices and nf more faces of nc corners in all, in
 * every array (arena bumps, untouched until used). */
ce_errno ce_builder_reserve(ce_builder *b, int64_t nv, int64_t nf, int64_t nc);
/* Where the builder stands, and going back there (an intersector that gives
 * up on a strategy drops what it added). */
typedef struct ce_builder_mark {
  int64_t v, face, corner;
} ce_builder_mark;
ce_builder_mark ce_builder_tell(const ce_builder *b);
void ce_builder_rewind(ce_builder *b, ce_builder_mark m);

/* Per-face pressure moments of a built surface: fn = the integral of the
 * pressure over the face (N) and cp = where that force acts (the integral
 * of p x over fn, world frame; the area centroid when fn = 0). Exact for a
 * pressure linear over each face. */
typedef struct ce_face_moments {
  double *fn;
  ce_vec3 *cp;
} ce_face_moments;

/* Turn the builder into a world-frame surface for the (A, B) order of the
 * query: X_WM places M; `m_is_a` says whether M is body A (otherwise normals
 * are flipped and the per-face m/n arrays are swapped into a/b).
 * `n_compliant` says whether N has a pressure gradient. Computes area,
 * centroid and centroid pressure per face; fans polygons into triangles
 * around their centroids for CE_REPRESENTATION_TRIANGLE. With pm != NULL
 * and the polygon representation, also the faces' pressure moments (arena
 * arrays; computed in the same pass as the area, for the wrench pass);
 * otherwise pm->fn = pm->cp = NULL. */
ce_errno ce_builder_finish(ce_builder *b, const ce_pose *X_WM, int m_is_a,
                           int m_compliant, int n_compliant,
                           ce_representation rep, ce_surface *out,
                           ce_face_moments *pm);

#endif /* CE_SURFACE_H */
