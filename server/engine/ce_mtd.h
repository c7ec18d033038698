/* ce_mtd.h — the minimum translational distance between convex shapes and
 * the default point stiffness (ce_mtd.c), and the wrench Jacobians of point
 * contact (ce_point_jacobian.c), which re-evaluates the MTD's closest
 * features. */
#ifndef CE_MTD_H
#define CE_MTD_H

#include "ce_internal.h"

/* Minimum translational distance between two convex shapes in the world.
 * overlap = 0: the shapes do not overlap (depth 0, other fields zero).
 * Otherwise depth > 0, normal unit out of B into A, witness_b = witness_a +
 * depth * normal, hull_a/hull_b = 1 when a non-convex mesh was replaced by
 * the convex hull of its vertices. */
typedef struct ce_mtd {
  int overlap;
  double depth;
  ce_vec3 normal, witness_a, witness_b;
  int hull_a, hull_b;
} ce_mtd;

/* CE_EUNSUPPORTED for two half spaces; CE_ENOMEM if GJK/EPA runs out of
 * memory. */
ce_errno ce_mtd_compute(const ce_geometry *ga, const ce_pose *X_WA,
                        const ce_geometry *gb, const ce_pose *X_WB,
                        ce_mtd *out, ce_error *err);
/* The default point stiffness of a geometry, N/m (see ce_material in ce.h);
 * INFINITY for half spaces. */
double ce_point_stiffness_default(const ce_geometry *g);
typedef enum {
  CE_CVX_HALF,    /* half space: boundary z = 0 of its frame, normal +z */
  CE_CVX_SPHERE,  /* radius r */
  CE_CVX_CAPSULE, /* segment z in [-hl, hl], radius r */
  CE_CVX_BOX,     /* half sizes h */
  CE_CVX_CYL,     /* radius r, z in [-hl, hl] */
  CE_CVX_ELL,     /* semi-axes h */
  CE_CVX_PTS      /* convex hull of v[0 .. nv) */
} ce_cvx_kind;

/* A convex shape at a pose in the world (shape frame X). */
typedef struct ce_cvx {
  ce_cvx_kind kind;
  ce_pose X;        /* shape frame in the world */
  double r, hl;     /* radius, half length (capsule, cylinder) */
  ce_vec3 h;        /* box half sizes, ellipsoid semi-axes */
  const ce_vec3 *v; /* CE_CVX_PTS: vertices (shape frame) */
  int32_t nv;
  double scale; /* size for tolerances */
} ce_cvx;

/* Describe geometry g at pose X: primitives by their analytic parameters,
 * everything else by its mesh's vertices; *hull = 1 when a non-convex mesh
 * is replaced by its hull. */
void ce_cvx_make(const ce_geometry *g, const ce_pose *X, ce_cvx *c, int *hull);

/* Support point in the shape frame along local direction d. With centre, a
 * flat support feature (box face or edge, cylinder cap, mesh face) gives
 * its centre instead of one of its corners. */
ce_vec3 ce_cvx_support_local(const ce_cvx *c, ce_vec3 d, int centre);

/* The closest features of a GJK/EPA answer o (ce_point_jacobian.c): its
 * normal made exact where the polish stopped short (a face's normal, two
 * edges' cross product, Newton on the stationarity of the projection
 * overlap for round shapes, steps below 1e-4 rad that keep the
 * features), depth and
 * witnesses from it. o unchanged when the features do not fix the normal. */
void ce_mtd_polish(const ce_cvx *a, const ce_cvx *b, ce_mtd *o);

/* The four wrench Jacobians of a point-contact result r of bodies a, b
 * (ce_point_contact_compute; vs the stiction tolerance in use): fills
 * r->jacobian_status, r->jacobian and, when unavailable, r->jacobian_note.
 * CE_ENOMEM when the arena is exhausted. */
ce_errno ce_point_jacobian(const ce_body *a, const ce_body *b, double vs, ce_arena *arena, ce_result *r);

#endif /* CE_MTD_H */
