/* ce_contact.c — one contact query between two bodies: checks the input,
 * picks the intersector for the pair, and runs the passes that turn the
 * surface into wrenches, point contacts and patches.
 *
 * Pair table (M is the side whose frame the surface is built in):
 *   compliant mesh  – compliant mesh   tet–tet equal-pressure planes, M = A
 *   compliant mesh  – rigid mesh       rigid triangles clipped by tets, M = tet side
 *   compliant mesh  – half space       tets sliced by the boundary plane (rigid)
 *                                      or by the equal-pressure plane (compliant)
 *   compliant half space – rigid mesh  triangles clipped by the half space
 *   compliant mesh  – terrain          sampled terrain triangles clipped by tets
 *   anything else (rigid–rigid, two half spaces, rigid body – terrain)
 *                                      → no hydroelastic model (see classify).
 *
 * Contact model (opt->model): HYDROELASTIC uses the table above only;
 * POINT sends every pair to compliant point contact (ce_point_contact.c);
 * HYDROELASTIC_WITH_FALLBACK (default) sends the pairs the table leaves
 * unsupported to point contact. Two half spaces stay UNSUPPORTED always. */
#include <math.h>
#include <string.h>

#include "ce_arena.h"
#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_intersect.h"
#include "ce_jacobian.h"
#include "ce_passes.h"
#include "ce_point_contact.h"
#include "ce_surface.h"
#include "ce_terrain.h"
#include "ce_mtd.h"

void ce_options_default(ce_options *o) {
  memset(o, 0, sizeof *o);
  o->representation = CE_REPRESENTATION_POLYGON;
  o->stiction_tolerance = 1e-4;
}

/* A pose is accepted when finite and its rotation is orthonormal with
 * determinant +1 to 1e-6 (callers normalise quaternions before this). */
static ce_errno check_body(const ce_body *b, const char *name, ce_error *err) {
  if (!b || !b->geometry) return ce_fail(err, CE_EINVAL, "body %s: no geometry", name);
  const ce_pose *X = &b->X_WB;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      if (!isfinite(X->R.m[i][j]))
        return ce_fail(err, CE_ENONFINITE, "body %s: rotation entry (%d,%d) is not finite", name, i, j);
  if (!ce_vec3_isfinite(X->p))
    return ce_fail(err, CE_ENONFINITE, "body %s: position is not finite", name);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      double s = X->R.m[0][i] * X->R.m[0][j] + X->R.m[1][i] * X->R.m[1][j] + X->R.m[2][i] * X->R.m[2][j];
      if (fabs(s - (i == j ? 1.0 : 0.0)) > 1e-6)
        return ce_fail(err, CE_EINVAL, "body %s: rotation is not orthonormal (R^T R differs from I by %.3g at (%d,%d))",
                       name, s - (i == j ? 1.0 : 0.0), i, j);
    }
  if (ce_mat3_det(&X->R) < 0)
    return ce_fail(err, CE_EINVAL, "body %s: rotation is a reflection (det < 0)", name);
  if (!ce_vec3_isfinite(b->V_WB.w) || !ce_vec3_isfinite(b->V_WB.v))
    return ce_fail(err, CE_ENONFINITE, "body %s: spatial velocity is not finite", name);
  if (!(b->material.dissipation >= 0) || !isfinite(b->material.dissipation))
    return ce_fail(err, CE_EINVAL, "body %s: dissipation %g must be finite and >= 0", name, b->material.dissipation);
  if (!(b->material.friction >= 0) || !isfinite(b->material.friction))
    return ce_fail(err, CE_EINVAL, "body %s: friction %g must be finite and >= 0", name, b->material.friction);
  return CE_OK;
}

typedef enum {
  PAIR_UNSUPPORTED,
  PAIR_TET_TET,
  PAIR_TET_TRI,
  PAIR_TET_HALFSPACE,
  PAIR_HALFSPACE_TRI,
  PAIR_TET_TERRAIN,   /* compliant mesh – terrain: sampled triangles clipped by tets */
  PAIR_TERRAIN_POINT, /* any other body – terrain: point contact (ce_intersect_terrain.c) */
} pair_kind;

static int is_tet(const ce_geometry *g) { return !g->is_halfspace && g->compliance == CE_COMPLIANT; }
static int is_tri(const ce_geometry *g) { return !g->is_halfspace && g->compliance == CE_RIGID; }

/* Decide the algorithm and which body plays M (*m_is_a). */
static pair_kind classify(const ce_geometry *a, const ce_geometry *b, int *m_is_a) {
  *m_is_a = 1;
  if (a->hf || b->hf) { /* terrain: one large rigid body, never a mesh */
    if ((a->hf && b->hf) || a->is_halfspace || b->is_halfspace) return PAIR_UNSUPPORTED;
    if (is_tet(a) || is_tet(b)) { *m_is_a = is_tet(a); return PAIR_TET_TERRAIN; }
    return PAIR_TERRAIN_POINT;
  }
  if (is_tet(a) && is_tet(b)) return PAIR_TET_TET;
  if (is_tet(a) && is_tri(b)) return PAIR_TET_TRI;
  if (is_tri(a) && is_tet(b)) { *m_is_a = 0; return PAIR_TET_TRI; }
  if (is_tet(a) && b->is_halfspace) return PAIR_TET_HALFSPACE;
  if (a->is_halfspace && is_tet(b)) { *m_is_a = 0; return PAIR_TET_HALFSPACE; }
  if (a->is_halfspace && a->compliance == CE_COMPLIANT && is_tri(b)) return PAIR_HALFSPACE_TRI;
  if (is_tri(a) && b->is_halfspace && b->compliance == CE_COMPLIANT) { *m_is_a = 0; return PAIR_HALFSPACE_TRI; }
  return PAIR_UNSUPPORTED;
}

/* The wrench Jacobians of a hydroelastic result (ce_jacobian.c). */
static ce_errno jacobian(pair_kind kind, int m_is_a, const ce_body *a, const ce_body *b, const ce_options *opt,
                         double vs, ce_arena *arena, ce_result *r) {
  ce_jac_input in;
  memset(&in, 0, sizeof in);
  in.s = &r->surface;
  in.a = a;
  in.b = b;
  in.m_is_a = m_is_a;
  in.d = r->combined_material.dissipation;
  in.mu = r->combined_material.friction;
  in.vs = vs;
  switch (kind) {
    case PAIR_TET_TET: in.kind = CE_JAC_TET_TET; break;
    case PAIR_TET_TRI: in.kind = CE_JAC_TET_TRI; break;
    case PAIR_TET_HALFSPACE: in.kind = CE_JAC_TET_HALFSPACE; break;
    case PAIR_HALFSPACE_TRI: in.kind = CE_JAC_HALFSPACE_TRI; break;
    case PAIR_TET_TERRAIN: in.kind = CE_JAC_TET_TERRAIN; break;
    default: return CE_EUNSUPPORTED;
  }
  return ce_jacobian_hydro(&in, opt->representation, arena, r);
}

/* One point contact (ce_point_contact.c), and its reduced contact. */
static ce_errno point_contact(const ce_body *a, const ce_body *b, double vs, const ce_options *opt, ce_arena *arena,
                              ce_result *r, ce_error *err) {
  ce_errno e = ce_point_contact_compute(a, b, vs, opt->want_patches, arena, r, err);
  if (e != CE_OK || opt->reduced_contacts <= 0 || r->status != CE_CONTACT_POINT) return e;
  if (!(r->reduced = ce_arena_alloc(arena, sizeof *r->reduced)))
    return ce_fail(err, CE_ENOMEM, "contact query: scratch arena exhausted");
  const ce_point_mtd *m = &r->point;
  r->reduced[0] = ce_reduce_point(0, m->point, m->normal, m->normal_force, m->friction_force, m->stiffness,
                                  m->dissipation, m->depth);
  r->nreduced = 1;
  return CE_OK;
}

static ce_errno contact(const ce_body *a, const ce_body *b, const ce_options *opt, ce_arena *arena, ce_result *r,
                        ce_error *err) {
  ce_options defaults;
  if (!opt) {
    ce_options_default(&defaults);
    opt = &defaults;
  }
  if (!r || !arena) return ce_fail(err, CE_EINVAL, "ce_contact: result and arena are required");
  memset(r, 0, sizeof *r);
  ce_errno e;
  if ((e = check_body(a, "A", err)) != CE_OK) return e;
  if ((e = check_body(b, "B", err)) != CE_OK) return e;
  if (opt->representation != CE_REPRESENTATION_POLYGON && opt->representation != CE_REPRESENTATION_TRIANGLE)
    return ce_fail(err, CE_EINVAL, "options: representation %d is neither polygon (0) nor triangle (1)",
                   (int)opt->representation);
  double vs = opt->stiction_tolerance > 0 ? opt->stiction_tolerance : 1e-4;
  if (!isfinite(vs)) return ce_fail(err, CE_EINVAL, "options: stiction tolerance is not finite");
  if (opt->reduced_contacts < 0 || opt->reduced_contacts > CE_REDUCE_MAX_POINTS)
    return ce_fail(err, CE_EINVAL, "options: reduced contacts %d is outside [0, %d]", (int)opt->reduced_contacts,
                   CE_REDUCE_MAX_POINTS);
  if (opt->model != CE_MODEL_HYDROELASTIC_WITH_FALLBACK && opt->model != CE_MODEL_HYDROELASTIC &&
      opt->model != CE_MODEL_POINT)
    return ce_fail(err, CE_EINVAL, "options: contact model %d is not hydroelastic with fallback (0), "
                   "hydroelastic (1) or point (2)", (int)opt->model);

  const ce_geometry *ga = a->geometry, *gb = b->geometry;
  r->combined_modulus = ce_combine_modulus(ga->modulus, gb->modulus);
  r->combined_material.dissipation =
      ce_combine_dissipation(ga->modulus, a->material.dissipation, gb->modulus, b->material.dissipation);
  r->combined_material.friction = ce_combine_friction(a->material.friction, b->material.friction);

  int m_is_a;
  pair_kind kind = classify(ga, gb, &m_is_a);
  if (ga->hf || gb->hf) { /* terrain pairs never reach the generic point model (no mesh to hull) */
    if (kind == PAIR_UNSUPPORTED || (kind == PAIR_TERRAIN_POINT && opt->model == CE_MODEL_HYDROELASTIC)) {
      r->model = opt->model == CE_MODEL_POINT ? CE_MODEL_POINT : CE_MODEL_HYDROELASTIC;
      r->status = CE_CONTACT_UNSUPPORTED;
      return CE_OK;
    }
    if (kind == PAIR_TERRAIN_POINT || opt->model == CE_MODEL_POINT)
      return ce_terrain_point_contact(a, b, vs, opt->want_patches, opt->reduced_contacts, arena, r, err);
  }
  int two_halfspaces = ga->is_halfspace && gb->is_halfspace;
  if (!two_halfspaces && (opt->model == CE_MODEL_POINT ||
                          (opt->model == CE_MODEL_HYDROELASTIC_WITH_FALLBACK && kind == PAIR_UNSUPPORTED)))
    return ga->npieces > 0 || gb->npieces > 0 /* convex decomposition (ce_pieces.c) */
               ? ce_point_contact_pieces(a, b, vs, opt->want_patches, opt->reduced_contacts, arena, r, err)
               : point_contact(a, b, vs, opt, arena, r, err);
  r->model = opt->model == CE_MODEL_POINT ? CE_MODEL_POINT : CE_MODEL_HYDROELASTIC;
  if (kind == PAIR_UNSUPPORTED) {
    r->status = CE_CONTACT_UNSUPPORTED;
    return CE_OK;
  }
  const ce_body *M = m_is_a ? a : b, *N = m_is_a ? b : a;
  ce_pose X_MW = ce_pose_inverse(&M->X_WB);
  ce_pose X_MN = ce_pose_compose(&X_MW, &N->X_WB);

  ce_builder bld;
  if ((e = ce_builder_init(&bld, arena)) != CE_OK) goto fail;
  ce_counters cnt = {0, 0, 0};
  switch (kind) {
    case PAIR_TET_TET: e = ce_intersect_tet_tet(M->geometry, N->geometry, &X_MN, &bld, &cnt); break;
    case PAIR_TET_TRI: e = ce_intersect_tet_tri(M->geometry, N->geometry, &X_MN, &bld, &cnt); break;
    case PAIR_TET_HALFSPACE: e = ce_intersect_tet_halfspace(M->geometry, N->geometry, &X_MN, &bld, &cnt); break;
    case PAIR_HALFSPACE_TRI: e = ce_intersect_halfspace_tri(M->geometry, N->geometry, &X_MN, &bld, &cnt); break;
    case PAIR_TET_TERRAIN: e = ce_intersect_tet_terrain(M->geometry, N->geometry, &X_MN, &bld, &cnt); break;
    default: e = CE_EUNSUPPORTED; break;
  }
  if (e != CE_OK) goto fail;
  r->candidate_pairs = cnt.candidate_pairs;
  r->polygons = cnt.polygons;
  r->faces_dropped = cnt.faces_dropped;

  int m_compliant = M->geometry->compliance == CE_COMPLIANT;
  int n_compliant = N->geometry->compliance == CE_COMPLIANT;
  ce_face_moments pm;
  if ((e = ce_builder_finish(&bld, &M->X_WB, m_is_a, m_compliant, n_compliant, opt->representation,
                             &r->surface, &pm)) != CE_OK)
    goto fail;
  r->status = r->surface.nf > 0 ? CE_CONTACT_SURFACE : CE_CONTACT_NONE;

  ce_face_forces ff = {.fn = NULL};
  ce_face_friction fr = {NULL, NULL};
  if ((e = ce_wrench_compute_friction(&r->surface, a, b, &r->combined_material, vs, &pm, arena, r, &ff,
                                      opt->reduced_contacts > 0 ? &fr : NULL)) != CE_OK)
    goto fail;
  if (opt->want_jacobian && (e = jacobian(kind, m_is_a, a, b, opt, vs, arena, r)) != CE_OK) goto fail;
  if (opt->want_face_contacts && (e = ce_face_contacts_compute(&r->surface, arena, r)) != CE_OK) goto fail;
  if ((opt->want_patches || opt->reduced_contacts > 0) &&
      (e = ce_patches_compute(&r->surface, ga, gb, &ff, arena, r)) != CE_OK)
    goto fail;
  if (opt->reduced_contacts > 0 && (e = ce_reduce_compute(&r->surface, &ff, &fr, opt->reduced_contacts,
                                                          r->combined_material.dissipation, arena, r)) != CE_OK)
    goto fail;
  if (opt->want_energy &&
      (e = ce_energy_compute(M->geometry, N->geometry, &X_MN, m_is_a, opt->want_patches, arena, r)) != CE_OK)
    goto fail;
  if (!opt->want_surface) memset(&r->surface, 0, sizeof r->surface);
  return CE_OK;

fail:
  if (e == CE_ENOMEM) return ce_fail(err, CE_ENOMEM, "contact query: scratch arena exhausted");
  return ce_fail(err, e, "contact query failed: %s", ce_strerror(e));
}

static int wrench_is_finite(const ce_wrench *w) { return ce_vec3_isfinite(w->force) && ce_vec3_isfinite(w->torque); }

/* The point-contact paths always fill their force law's energy (cheap);
 * the result shows it only on request, and every result says how its
 * energy was obtained. */
static void energy_status(const ce_options *opt, ce_result *r) {
  if (opt && opt->want_energy) {
    if (r->model == CE_MODEL_POINT && r->status != CE_CONTACT_UNSUPPORTED) r->energy = CE_ENERGY_FORCE_LAW;
    else if (r->status == CE_CONTACT_UNSUPPORTED) {
      r->energy = CE_ENERGY_UNAVAILABLE;
      r->energy_note = "no contact model for this pair";
    }
    return;
  }
  r->strain_energy = 0;
  r->total.strain_energy = 0;
  r->energy = CE_ENERGY_NONE;
  for (int32_t i = 0; i < r->npatches; i++) r->patches[i].strain_energy = 0;
}

/* Bodies apart but within their margins (ce_margin.c): the hydroelastic
 * surface of their inflated copies, all of it at negative pressure, gives
 * r->speculative; r keeps its zero wrenches. */
static ce_errno speculative(const ce_body *a, const ce_body *b, const ce_options *opt, ce_arena *arena, ce_result *r,
                            ce_error *err) {
  ce_body ia = *a, ib = *b;
  if (a->geometry->inflated) ia.geometry = a->geometry->inflated;
  if (b->geometry->inflated) ib.geometry = b->geometry->inflated;
  ce_options o;
  ce_options_default(&o);
  o.representation = opt ? opt->representation : CE_REPRESENTATION_POLYGON;
  o.model = CE_MODEL_HYDROELASTIC;
  o.want_surface = 1;
  ce_result s;
  ce_errno e = contact(&ia, &ib, &o, arena, &s, err);
  if (e != CE_OK) return e;
  if (s.status == CE_CONTACT_SURFACE && ce_margin_speculative(&s.surface, &r->speculative))
    r->status = CE_CONTACT_SPECULATIVE;
  return CE_OK;
}

ce_errno ce_contact(const ce_body *a, const ce_body *b, const ce_options *opt, ce_arena *arena, ce_result *r,
                    ce_error *err) {
  ce_errno e = contact(a, b, opt, arena, r, err);
  if (e != CE_OK) return e;
  if (r->status == CE_CONTACT_NONE && r->model == CE_MODEL_HYDROELASTIC &&
      (a->geometry->inflated || b->geometry->inflated) && (e = speculative(a, b, opt, arena, r, err)) != CE_OK)
    return e;
  energy_status(opt, r);
  if (opt && opt->want_jacobian && r->jacobian_status == CE_JACOBIAN_NOT_REQUESTED && r->status == CE_CONTACT_POINT) {
    const double vs = opt->stiction_tolerance > 0 ? opt->stiction_tolerance : 1e-4;
    if (ce_point_jacobian(a, b, vs, arena, r) != CE_OK)
      return ce_fail(err, CE_ENOMEM, "contact query: scratch arena exhausted");
  }
  if (opt && opt->want_jacobian && r->jacobian_status == CE_JACOBIAN_NOT_REQUESTED) {
    if (r->status == CE_CONTACT_NONE || r->status == CE_CONTACT_SPECULATIVE) { /* apart: zero nearby */
      r->jacobian = ce_arena_calloc(arena, 1, sizeof *r->jacobian);
      if (!r->jacobian) return ce_fail(err, CE_ENOMEM, "contact query: scratch arena exhausted");
      r->jacobian_status = CE_JACOBIAN_OK;
    } else {
      r->jacobian_status = CE_JACOBIAN_UNAVAILABLE;
      r->jacobian_note = r->status == CE_CONTACT_POINT
                             ? "wrench Jacobians are not implemented for this point contact"
                             : "the pair has no contact model";
    }
  }
  /* Finite inputs can still overflow: a dissipation of 1e300 s/m at 1e300
   * m/s gave a force of (nan, nan, inf). Such a result is an error, not an
   * answer. */
  if (wrench_is_finite(&r->wrench_a) && wrench_is_finite(&r->wrench_b) && wrench_is_finite(&r->wrench_a_centroid))
    return CE_OK;
  const double E = r->combined_modulus, d = r->combined_material.dissipation, mu = r->combined_material.friction;
  memset(r, 0, sizeof *r);
  return ce_fail(err, CE_ENONFINITE,
                 "the contact wrench overflows double precision (combined modulus %g Pa, dissipation %g s/m, "
                 "friction %g): the materials or the bodies' speeds are too large",
                 E, d, mu);
}
