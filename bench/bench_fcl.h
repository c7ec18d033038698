/* bench_fcl.h — the engine's side of bench_fcl (bench_fcl_ours.c), as plain
 * functions the C++ file can call: the engine's internal header is C11 and
 * is not included from C++. */
#ifndef BENCH_FCL_H
#define BENCH_FCL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bfo_ctx bfo_ctx;

/* Two spheres of `radius` at hint, B at (dx, 0, 0): rigid (triangle
 * meshes) or compliant (tet meshes, queried by their boundaries). */
bfo_ctx *bfo_create(double radius, double hint, double dx, int compliant);
void bfo_destroy(bfo_ctx *c);
/* The icosphere level the engine uses for radius at hint. */
int bfo_level(double radius, double hint);
/* A's surface mesh (vertices 3 * nv, triangles 3 * nf). */
void bfo_mesh(const bfo_ctx *c, int *nv, const double **v, int *nf, const int32_t **f);
/* One query: the number of meeting triangle pairs (-1 on failure). */
long bfo_query(bfo_ctx *c);
/* The whole contact query of two compliant spheres (bench_contact's `cc`
 * row): the number of polygons (-1 on failure or for rigid spheres). */
long bfo_contact(bfo_ctx *c);
/* The last query's pairs (a, b triangle indices, 2 per pair). */
const int32_t *bfo_pairs(const bfo_ctx *c);
long bfo_triangles(const bfo_ctx *c);

#ifdef __cplusplus
}
#endif

#endif
