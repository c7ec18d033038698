/* bench_fcl_ours.c — the engine's side of bench_fcl (see bench_fcl.cpp).
 *
 * The engine's internal header is C11 (compound literals and the like), so
 * it is not included from the C++ file: this file builds the spheres and
 * runs the engine's triangle-pair query, and bench_fcl.cpp calls it through
 * the few plain functions below. It is linked into bench_fcl only (the
 * bench glob leaves it out).
 *
 * The query, for two spheres R = 0.1 m, B at (0.18, 0, 0) in A's frame:
 * the boundary-triangle pairs that really meet. Two variants:
 *   rigid: two CE_RIGID spheres; their triangle hierarchy has no cylinder
 *          bounds, so ce_bvh_collide_surfaces runs ce_bvh_collide (OBBs)
 *          and the overlapping leaf pairs it returns are kept when
 *          ce_triangles_meet says so;
 *   bnd:   two CE_COMPLIANT spheres; the boundary hierarchy of each tet
 *          mesh (cylinder bounds, Moller at the leaves: its pairs all
 *          meet), which is how the finest `cc` row of bench_contact seeds
 *          its walk.
 * And, on the compliant pair, the whole `cc` query of bench_contact
 * (bfo_contact): seeds, traced surface, polygons, wrench. */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* internal headers: the bench times the engine's BVH and triangle tests
 * on their own, below the public ce_contact() */
#include "ce_arena.h"
#include "ce_bvh.h"
#include "ce_geometry.h"
#include "ce_predicates.h"
#include "ce_primitive.h"
#include "bench_fcl.h"
#include "bench_util.h"

struct bfo_ctx {
  ce_geometry *g[2];
  int compliant;
  ce_pose X_AB;
  ce_arena *arena;
  ce_buf pairs; /* the last query's meeting pairs (ce_pair), in the arena */
  double tol;
};


int bfo_level(double radius, double hint) { return ce_icosphere_level(radius, hint); }

bfo_ctx *bfo_create(double radius, double hint, double dx, int compliant) {
  bfo_ctx *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->compliant = compliant;
  c->g[0] = bench_sphere(compliant ? CE_COMPLIANT : CE_RIGID, radius, hint);
  c->g[1] = bench_sphere(compliant ? CE_COMPLIANT : CE_RIGID, radius, hint);
  c->arena = ce_arena_create(1 << 20);
  if (!c->g[0] || !c->g[1] || !c->arena) {
    bfo_destroy(c);
    return NULL;
  }
  c->X_AB = ce_pose_identity();
  c->X_AB.p = ce_v3(dx, 0, 0);
  /* The compliant tracer's margin (ce_intersect_cc.c, query_init). */
  c->tol = 1e-13 * (c->g[0]->scale > 0 ? c->g[0]->scale : 1.0);
  return c;
}

void bfo_destroy(bfo_ctx *c) {
  if (!c) return;
  ce_geometry_free(c->g[0]);
  ce_geometry_free(c->g[1]);
  if (c->arena) ce_arena_destroy(c->arena);
  free(c);
}

/* The triangles the query pairs up: the rigid mesh, or the tet mesh's
 * boundary faces (indices into its vertices). v holds nv x, y, z triples. */
void bfo_mesh(const bfo_ctx *c, int *nv, const double **v, int *nf, const int32_t **f) {
  const ce_geometry *g = c->g[0];
  if (c->compliant) {
    *nv = g->tet.nv;
    *v = &g->tet.v[0].x;
    *nf = g->bvh.bnd->nelem;
    *f = &g->bvh.bnd_face[0][0];
  } else {
    *nv = g->tri.nv;
    *v = &g->tri.v[0].x;
    *nf = g->tri.nf;
    *f = &g->tri.tri[0][0];
  }
}

long bfo_triangles(const bfo_ctx *c) {
  return c->compliant ? c->g[0]->bvh.bnd->nelem : c->g[0]->tri.nf;
}

/* One query: returns the number of meeting pairs (-1 on failure). The
 * proposed pairs are filtered in place, so the kept ones stay in the
 * traversal's (deterministic) order. */
static inline long query(bfo_ctx *c, const ce_bvh *ba, const ce_bvh *bb, const ce_vec3 *va, const ce_vec3 *vb,
                         const int32_t (*fa)[3], const int32_t (*fb)[3]) {
  ce_arena_reset(c->arena);
  ce_buf_init(&c->pairs, sizeof(ce_pair));
  if (ce_bvh_collide_surfaces(ba, bb, &c->X_AB, c->arena, &c->pairs) != CE_OK) return -1;
  if (ba->disk && bb->disk) return (long)c->pairs.len; /* tested at the leaves */
  ce_pair *p = c->pairs.data;
  int64_t kept = 0;
  for (int64_t i = 0; i < c->pairs.len; i++) {
    const int32_t *ia = fa[p[i].a], *ib = fb[p[i].b];
    ce_vec3 x[3] = {va[ia[0]], va[ia[1]], va[ia[2]]}, y[3];
    for (int k = 0; k < 3; k++) y[k] = ce_pose_apply(&c->X_AB, vb[ib[k]]);
    if (ce_triangles_meet(x, y, c->tol)) p[kept++] = p[i];
  }
  c->pairs.len = kept;
  return (long)kept;
}

/* One function per variant, so that callgrind can count each
 * (--toggle-collect=query_rigid, --toggle-collect=query_bnd). */
__attribute__((noinline)) static long query_rigid(bfo_ctx *c) {
  const ce_geometry *ga = c->g[0], *gb = c->g[1];
  return query(c, &ga->bvh, &gb->bvh, ga->tri.v, gb->tri.v, (const int32_t(*)[3])ga->tri.tri,
               (const int32_t(*)[3])gb->tri.tri);
}

__attribute__((noinline)) static long query_bnd(bfo_ctx *c) {
  const ce_geometry *ga = c->g[0], *gb = c->g[1];
  return query(c, ga->bvh.bnd, gb->bvh.bnd, ga->tet.v, gb->tet.v, (const int32_t(*)[3])ga->bvh.bnd_face,
               (const int32_t(*)[3])gb->bvh.bnd_face);
}

long bfo_query(bfo_ctx *c) { return c->compliant ? query_bnd(c) : query_rigid(c); }

/* The bodies as bench_contact's `cc` row has them: at rest, its material
 * (d = 1 s/m, mu = 0.5), B at X_AB. */
static ce_body body(const ce_geometry *g, ce_pose X) {
  ce_body b;
  memset(&b, 0, sizeof b);
  b.geometry = g;
  b.X_WB = X;
  b.material.dissipation = 1.0;
  b.material.friction = 0.5;
  return b;
}

__attribute__((noinline)) long bfo_contact(bfo_ctx *c) {
  if (!c->compliant) return -1;
  ce_body a = body(c->g[0], ce_pose_identity()), b = body(c->g[1], c->X_AB);
  ce_options opt;
  ce_options_default(&opt);
  opt.want_surface = 1;
  ce_result r;
  ce_error err;
  ce_arena_reset(c->arena);
  if (ce_contact(&a, &b, &opt, c->arena, &r, &err) != CE_OK) {
    fprintf(stderr, "bfo_contact: %s\n", err.message);
    return -1;
  }
  return (long)r.polygons;
}

/* The last query's pairs, (a, b) interleaved. */
const int32_t *bfo_pairs(const bfo_ctx *c) { return (const int32_t *)c->pairs.data; }
