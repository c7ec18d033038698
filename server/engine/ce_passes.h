/* ce_passes.h — the passes over a built contact surface: wrenches,
 * per-face points, patches and strain energy (ce_wrench.c, ce_face_contact.c,
 * ce_patch.c, ce_energy.c). */
#ifndef CE_PASSES_H
#define CE_PASSES_H

#include "ce_surface.h"

/* Per-face quantities the wrench pass leaves for the patch pass, and
 * their sums over the surface in face order (the additions the patch pass
 * would make for a surface of one patch; sums = 0: not filled, the patch
 * pass adds them itself). */
typedef struct ce_face_forces {
  double *fn;        /* per face: integral of the normal traction, N */
  ce_vec3 *fn_x;     /* per face: integral of (normal traction * x), N m */
  int sums;
  double area;           /* sum of the faces' areas */
  ce_vec3 area_centroid; /* sum of area * centroid */
  double fn_sum;         /* sum of fn */
  ce_vec3 fn_x_sum;      /* sum of fn_x */
  ce_vec3 fn_n;          /* sum of fn * normal */
} ce_face_forces;

/* Per-face friction from the wrench pass, for the reduction pass (NULL
 * arrays: no friction acts). */
typedef struct ce_face_friction {
  ce_vec3 *ft;       /* per face: friction force on A, N */
  ce_vec3 *tt;       /* per face: its moment about r->centroid, N m */
} ce_face_friction;

/* Integrate tractions over the surface (ce_wrench.c). Fills the result's
 * wrenches, area, centroid; fills *ff (arena) for the patch pass. pm (may
 * be NULL, or hold NULL arrays): the surface's pressure moments from
 * ce_builder_finish, used instead of integrating again wherever a face's
 * tractions are its pressure times constants (no relative rotation, or
 * d = mu = 0). */
ce_errno ce_wrench_compute(const ce_surface *s, const ce_body *a,
                           const ce_body *b, const ce_material *combined,
                           double stiction_tolerance,
                           const ce_face_moments *pm, ce_arena *arena,
                           ce_result *r, ce_face_forces *ff);
/* ce_wrench_compute, also filling *fr (arena; when fr is not NULL). */
ce_errno ce_wrench_compute_friction(const ce_surface *s, const ce_body *a, const ce_body *b,
                                    const ce_material *combined, double stiction_tolerance,
                                    const ce_face_moments *pm, ce_arena *arena, ce_result *r,
                                    ce_face_forces *ff, ce_face_friction *fr);
/* Per-face point contacts (ce_face_contact.c). */
ce_errno ce_face_contacts_compute(const ce_surface *s, ce_arena *arena, ce_result *r);
/* Patches and equivalent contact points (ce_patch.c). */
ce_errno ce_patches_compute(ce_surface *s, const ce_geometry *ga,
                            const ce_geometry *gb, const ce_face_forces *ff,
                            ce_arena *arena, ce_result *r);

/* Reduced contacts (ce_reduce.c): at most K points per patch, from the
 * surface with its patches (ce_patches_compute) and the wrench pass's
 * per-face forces and friction; d = the pair's dissipation. */
ce_errno ce_reduce_compute(const ce_surface *s, const ce_face_forces *ff, const ce_face_friction *fr, int32_t K,
                           double d, ce_arena *arena, ce_result *r);
/* One point contact as a reduced contact: position pt, normal n, force
 * fn n + ft, stiffness k, dissipation d, penetration depth (separation
 * -depth), patch index. */
ce_reduced_contact ce_reduce_point(int32_t patch, ce_vec3 pt, ce_vec3 n, double fn, ce_vec3 ft, double k, double d,
                                   double depth);

/* The speculative contact from the surface s of two bodies' inflated
 * copies (ce_margin.c): fills *out and returns 1, or 0 when no face of s
 * has a positive effective gradient. */
int ce_margin_speculative(const ce_surface *s, ce_speculative *out);

/* Strain energy of a hydroelastic pair (ce_energy.c), M and N as for the
 * intersectors (X_MN places N in M's frame): fills r->strain_energy,
 * r->total.strain_energy and r->energy, and with want_patches each patch's
 * strain_energy (after ce_patches_compute, from r->surface's patch and
 * element arrays). */
ce_errno ce_energy_compute(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, int m_is_a,
                           int want_patches, ce_arena *arena, ce_result *r);
/* The corners of face polygon ids[0..m) as the wrench pass integrates it
 * (collinear vertices dropped; ce_wrench.c): their ids in out (room for 64)
 * and their count, or -1 when every vertex is a corner. */
int32_t ce_wrench_corners(const ce_vec3 *v, const int32_t *ids, int32_t m, int32_t *out);

#endif /* CE_PASSES_H */
