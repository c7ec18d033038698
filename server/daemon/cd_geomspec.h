/* cd_geomspec.h — a RegisterGeometry request as the cache sees it: field
 * checks, the canonical content id, and the build (on a worker). */
#ifndef CD_GEOMSPEC_H
#define CD_GEOMSPEC_H

#include "cd_hash.h"
#include "cd_limits.h"
#include "cd_status.h"
#include "ce.h"

typedef Contactd__V1__RegisterGeometry cd_register_msg;

/* Slab thickness of a compliant half space when the request gives none, m. */
#define CD_DEFAULT_SLAB_THICKNESS 1.0

/* Cheap field checks (loop thread): required fields, positive dimensions,
 * array shapes, element-count limits. 0 or an error code. */
int cd_geomspec_check(const cd_register_msg *r, const cd_limits *l, cd_status *st);

/* The geometry id: hex SHA-256 of a canonical encoding of every field that
 * changes the built geometry (shape, its numbers, compliance, modulus,
 * resolution hint, slab thickness, material, point stiffness); names and
 * want_progress are left out. Linear in the input size (run it on a worker
 * for meshes). */
void cd_geomspec_id(const cd_register_msg *r, char id[CD_HASH_HEX_LEN + 1]);

/* Build the geometry (worker thread). *bound_radius: radius of a sphere about
 * the body origin enclosing the geometry (INFINITY for a half space). */
int cd_geomspec_build(const cd_register_msg *r, const cd_limits *l, ce_geometry **out,
                      double *bound_radius, cd_status *st);
/* The same with the engine's progress callback (long builds: surface
 * tetrahedralisation, Laplace fields); progress may be NULL. */
int cd_geomspec_build_progress(const cd_register_msg *r, const cd_limits *l, ce_progress_fn progress, void *user,
                               ce_geometry **out, double *bound_radius, cd_status *st);

/* Whether the build is cheap enough to run on the loop (primitives are not:
 * they mesh). Currently always 0: every build runs on the workers. */
#endif
