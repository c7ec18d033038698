/* ce_point_contact.h — the compliant point-contact model: force law and
 * convex pieces (ce_point_contact.c, ce_pieces.c), over the minimum
 * translational distance of ce_mtd.h. */
#ifndef CE_POINT_CONTACT_H
#define CE_POINT_CONTACT_H

#include "ce_internal.h"
#include "ce_mtd.h"

/* The volume of a geometry for the default stiffness: analytic for
 * primitives, the mesh's volume otherwise (scale^3 when unknown). */
double ce_point_volume(const ce_geometry *g);
/* The whole point-contact answer of a pair (MTD, force law, friction,
 * wrenches, total patch; one patch when want_patches). Fills r->status
 * (CE_CONTACT_POINT or CE_CONTACT_NONE), r->model = CE_MODEL_POINT,
 * r->point and r->combined_material. For geometries without convex
 * pieces: a pair with pieces goes to ce_point_contact_pieces, which calls
 * this per piece pair. */
ce_errno ce_point_contact_compute(const ce_body *a, const ce_body *b,
                                  double stiction_tolerance, int want_patches,
                                  ce_arena *arena, ce_result *r, ce_error *err);

/* Point contact when a or b has convex pieces (ce_pieces.c): the point
 * contact of every piece pair (a piece or the whole shape per side, each
 * side keeping its whole body's stiffness), one contact per penetrating
 * pair; wrenches summed, r->point the deepest pair with pieces_a/b and
 * contacts set; one patch per contact when want_patches, one reduced
 * contact per contact (ce_reduce_point) when reduce > 0. */
ce_errno ce_point_contact_pieces(const ce_body *a, const ce_body *b,
                                 double stiction_tolerance, int want_patches,
                                 int32_t reduce, ce_arena *arena, ce_result *r,
                                 ce_error *err);

/* Shared by ce_point_contact_compute and ce_terrain_point_contact
 * (ce_point_contact.c). ce_point_model_init: *mu = combined friction,
 * *vs = the stiction tolerance (1e-4 m/s when <= 0); fills r->model,
 * r->combined_material and r->point.stiffness / dissipation from k, d.
 * ce_point_force: at point pt with normal n (out of B into A), returns
 * fn = kx (1 + d xdot)+ (kx = stiffness times depth, xdot = -v.n) and sets
 * *xdot and the regularised Coulomb friction *ft. */
void ce_point_model_init(const ce_body *a, const ce_body *b, double k, double d, double stiction_tolerance,
                         ce_result *r, double *mu, double *vs);
double ce_point_force(const ce_body *a, const ce_body *b, ce_vec3 pt, ce_vec3 n, double kx, double d, double mu,
                      double vs, double *xdot, ce_vec3 *ft);

#endif /* CE_POINT_CONTACT_H */
