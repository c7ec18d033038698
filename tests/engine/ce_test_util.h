/* ce_test_util.h — helpers shared by the engine's unit tests. */
#ifndef CE_TEST_UTIL_H
#define CE_TEST_UTIL_H

/* The unit tests reach into every subsystem of the engine. */
#include "ce_arena.h"
#include "ce_bvh.h"
#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_intersect.h"
#include "ce_jacobian.h"
#include "ce_limits.h"
#include "ce_mesh.h"
#include "ce_passes.h"
#include "ce_point_contact.h"
#include "ce_predicates.h"
#include "ce_progress.h"
#include "ce_surface.h"
#include "ce_terrain.h"
#include "ce_validate.h"
#include "ce_walk.h"

/* |a - b| <= tol * max(|a|, |b|, floor) */
int ce_test_close(double a, double b, double rtol, double floor);
/* Props for a compliant/rigid body with the given modulus and hint. */
ce_props ce_test_props(ce_compliance c, double modulus, double hint);
/* A body at pose (quaternion q, position p) at rest, with its geometry's material. */
ce_body ce_test_body(const ce_geometry *g, ce_quat q, ce_vec3 p);
/* ce_contact of a and b with o (NULL: the defaults) after resetting arena;
 * aborts the test when it fails. */
ce_result ce_test_contact(const ce_body *a, const ce_body *b, const ce_options *o, ce_arena *arena);
/* A deterministic pseudo-random generator (xorshift64*), uniform in [0, 1). */
double ce_test_rand(uint64_t *state);
/* A uniformly random unit quaternion. */
ce_quat ce_test_rand_quat(uint64_t *state);
/* A random pose: a random rotation, and a translation of length
 * dmin + dspan * u along a random direction (drawn in that order). */
ce_pose ce_test_rand_pose(uint64_t *state, double dmin, double dspan);
/* A primitive (length 0.1 for capsules and cylinders; modulus 1e6 when
 * compliant), or NULL with the reason printed. */
ce_geometry *ce_test_shape(ce_shape_type type, ce_compliance c, double radius, ce_vec3 size, double hint);
/* The builder's faces as sorted keys (element of M << 32 | element of N),
 * malloc'd (the caller frees; never NULL for a valid builder). */
int64_t *ce_test_face_keys(const ce_builder *b);

/* Total area of a builder's faces about their normals (each face fanned
 * from its first vertex; counter-clockwise faces count positive). */
double ce_test_builder_area(const ce_builder *b);

/* Fills m->adj (allocating it when NULL) by brute force over the tets'
 * faces: for small hand-built meshes that skip ce_geometry_from_tetmesh. */
void ce_test_tet_adjacency(ce_tetmesh *m);

/* Kuhn-subdivided unit cube, N^3 cells x 6 tets (positively oriented,
 * neighbours sharing faces), interior vertices jittered by up to `jitter`
 * (small enough to keep every tet positive); *v (3 * nv) and *t (4 * nt)
 * malloc'd. */
void ce_test_kuhn_cube(int N, double jitter, uint64_t seed, double **v, int32_t *nv, int32_t **t, int32_t *nt);

/* n points on the sphere of radius R about c, evenly spread (a Fibonacci
 * sphere: every point is a vertex of their hull), into out[3 * n]. */
void ce_test_fibonacci_sphere(int32_t n, double R, ce_vec3 c, double *out);

/* A progress callback (ce_props.progress, user = a ce_test_stopper) that
 * asserts stage "geometry" and fractions rising within [0, 1], counts the
 * reports, and asks to stop at report k (k = 0: never), counting any
 * report after that in after_stop. */
typedef struct ce_test_stopper {
  int k, calls, after_stop;
  double last;
} ce_test_stopper;
int ce_test_stop_at(void *user, double f, const char *stage);

/* The Euler characteristic V - E + F of nf faces (corners fv[off[f] ..
 * off[f + 1])) over nv vertices, each edge counted once (a half-edge and
 * its reverse are one edge). *bad (may be NULL) counts half-edges that
 * occur more than once in one direction: faces that overlap or disagree
 * in orientation. A disc whose faces share their vertices gives 1. */
int64_t ce_test_euler(int64_t nv, int64_t nf, const int32_t *off, const int32_t *fv, int64_t *bad);

/* An intersector (ce_intersect_tet_tet, ce_intersect_tet_tri and their
 * _all references). */
typedef ce_errno (*ce_test_intersector)(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                                        ce_builder *b, ce_counters *c);

/* Asserts that the traced intersector gives the same polygons (source
 * pairs), drops and area (1e-12) as the one over every candidate pair, for
 * m and n at X; `what` names the case in failures. Resets arena. Returns
 * the all-candidates counters. */
ce_counters ce_test_compare_traced(ce_test_intersector all, ce_test_intersector traced, const ce_geometry *m,
                                   const ce_geometry *n, const ce_pose *X, ce_arena *arena, const char *what);


/* Wavefront OBJ text of test surfaces (malloc'd, NUL terminated; *len =
 * strlen), outward winding:
 *  - UV sphere of radius R (nlat bands, nlon segments, quads as "f a b c d");
 *  - torus about z (major R, minor r, nu x nv quads split in triangles);
 *  - L-shaped block [0,2]x[0,1] u [0,1]x[0,2] x [0,h] (volume 3 h). */
char *ce_test_obj_sphere(double R, int nlat, int nlon, size_t *len);
char *ce_test_obj_torus(double R, double r, int nu, int nv, size_t *len);
char *ce_test_obj_lblock(double h, size_t *len);

/* The bytes of tests/engine/data/<name> (malloc'd, NUL-terminated; *len
 * without the NUL); asserts that the file can be read. */
char *ce_test_read_data(const char *name, size_t *len);

#endif
