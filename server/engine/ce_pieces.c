/* ce_pieces.c — convex decompositions of rigid meshes for point contact
 * (per convex piece when the geometry was registered with a convex
 * decomposition, otherwise by the convex hull, and the result says which).
 *
 * A piece is the convex hull of a point set, built as a rigid
 * CE_SHAPE_CONVEX geometry (ce_build_convex's quickhull, via
 * ce_geometry_from_shape) in the mesh's frame and owned by the mesh.
 *
 * Point contact with pieces: every pair (piece of A or A itself) x (piece of
 * B or B itself) goes through ce_point_contact_compute (MTD, force law,
 * friction) with the whole body's stiffness on each side (a piece does not
 * get a stiffness from its own, smaller volume). Every penetrating pair is
 * one contact; wrenches and the total force are summed, the contacts'
 * centroid is their force-weighted mean (the deepest contact's point when
 * the forces are all zero), and r->point describes the deepest contact
 * (ties: the first in piece order), with pieces_a/pieces_b and contacts
 * saying what was used. The hydroelastic model does not use the pieces. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_arena.h"
#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_passes.h"
#include "ce_point_contact.h"
#include "ce_progress.h"

/* The mesh and each piece are builds of their own, reporting 0 to 1; each
 * reports into its share of the caller's callback (ce_props_reporting_into),
 * so the caller sees one rising fraction. The mesh takes the first share
 * of the progress, the pieces the rest in proportion to their points.
 * ce_props.max_bytes bounds the whole: each piece gets what the mesh and
 * the pieces before it left, so a set of pieces too large together stops
 * at the first piece that does not fit, not after all of them are built. */
#define CE_PIECES_MESH_SHARE 0.2

ce_errno ce_geometry_from_trimesh_pieces(const double *vertices, int32_t nv, const int32_t *tris, int32_t nf,
                                         int require_closed, const double *piece_points,
                                         const int32_t *piece_npoints, int32_t npieces, const ce_props *props,
                                         ce_geometry **out, ce_error *err) {
  if (!out) return ce_fail(err, CE_EINVAL, "triangle mesh: out is NULL");
  *out = NULL;
  if (npieces < 0) return ce_fail(err, CE_EINVAL, "convex pieces: count %d is negative", (int)npieces);
  if (npieces > 0 && (!piece_points || !piece_npoints))
    return ce_fail(err, CE_EINVAL, "convex pieces: point or count array is NULL");
  ce_geometry *g = NULL;
  int64_t total = 0;
  for (int32_t i = 0; i < npieces; i++) total += piece_npoints[i] > 0 ? piece_npoints[i] : 0;
  const ce_buildprog whole = ce_buildprog_of(props);
  ce_buildprog step = ce_buildprog_part(&whole, 0, npieces > 0 ? CE_PIECES_MESH_SHARE : 1);
  const ce_props mp = ce_props_reporting_into(props, &step);
  ce_errno e = ce_geometry_from_trimesh(vertices, nv, tris, nf, require_closed, &mp, &g, err);
  if (e != CE_OK || npieces == 0) {
    *out = g;
    return e;
  }
  g->pieces = calloc((size_t)npieces, sizeof *g->pieces);
  if (!g->pieces) {
    ce_geometry_free(g);
    return ce_fail(err, CE_ENOMEM, "convex pieces: out of memory for %d pieces", (int)npieces);
  }
  size_t off = 0;
  const double per_point = (1 - CE_PIECES_MESH_SHARE) / (double)(total > 0 ? total : 1);
  g->bytes += (size_t)npieces * sizeof *g->pieces;
  for (int32_t i = 0; i < npieces; i++) {
    size_t left = 0;
    char before[64]; /* what the limit went to so far */
    if (i == 0) snprintf(before, sizeof before, "the mesh");
    else snprintf(before, sizeof before, "the mesh and pieces 0 to %d", (int)i - 1);
    if (props->max_bytes) {
      if (g->bytes >= props->max_bytes) {
        e = ce_fail(err, CE_EBYTES, "convex pieces: %s already take %.6g MB of the limit of %.6g MB", before,
                    (double)g->bytes / 1e6, (double)props->max_bytes / 1e6);
        ce_geometry_free(g);
        return e;
      }
      left = props->max_bytes - g->bytes;
    }
    const size_t count = piece_npoints[i] > 0 ? (size_t)piece_npoints[i] : 0;
    step = ce_buildprog_part(&whole, CE_PIECES_MESH_SHARE + per_point * (double)off,
                             CE_PIECES_MESH_SHARE + per_point * (double)(off + count));
    ce_props pp = ce_props_reporting_into(props, &step);
    pp.max_bytes = left;
    ce_shape s;
    memset(&s, 0, sizeof s);
    s.type = CE_SHAPE_CONVEX;
    s.points = piece_points + 3 * off;
    s.npoints = piece_npoints[i];
    if (s.npoints < 0) {
      ce_geometry_free(g);
      return ce_fail(err, CE_EINVAL, "convex piece %d: point count %d is negative", (int)i, (int)s.npoints);
    }
    ce_error pe;
    memset(&pe, 0, sizeof pe);
    e = ce_geometry_from_shape(&s, &pp, &g->pieces[i], &pe);
    if (e != CE_OK) {
      ce_geometry_free(g);
      if (e == CE_EBYTES)
        return ce_fail(err, e, "convex piece %d: %s (what %s left of %.3g MB)", (int)i, pe.message, before,
                       (double)props->max_bytes / 1e6);
      return ce_fail(err, e, "convex piece %d: %s", (int)i, pe.message);
    }
    g->npieces = i + 1;
    g->bytes += g->pieces[i]->bytes;
    off += (size_t)s.npoints;
  }
  *out = g;
  return CE_OK;
}

ce_errno ce_point_contact_pieces(const ce_body *a, const ce_body *b, double stiction_tolerance, int want_patches,
                                 int32_t reduce, ce_arena *arena, ce_result *r, ce_error *err) {
  const ce_geometry *ga = a->geometry, *gb = b->geometry;
  int32_t na = ga->npieces > 0 ? ga->npieces : 1, nb = gb->npieces > 0 ? gb->npieces : 1;
  ce_body ca = *a, cb = *b;
  if (ga->npieces > 0 && a->point_stiffness == 0) ca.point_stiffness = ce_point_stiffness_default(ga);
  if (gb->npieces > 0 && b->point_stiffness == 0) cb.point_stiffness = ce_point_stiffness_default(gb);
  ce_patch *patches = NULL;
  if (want_patches) {
    patches = ce_arena_calloc(arena, (size_t)na * (size_t)nb, sizeof *patches);
    if (!patches) return ce_fail(err, CE_ENOMEM, "contact query: scratch arena exhausted");
  }
  ce_reduced_contact *red = NULL;
  if (reduce > 0) {
    red = ce_arena_calloc(arena, (size_t)na * (size_t)nb, sizeof *red);
    if (!red) return ce_fail(err, CE_ENOMEM, "contact query: scratch arena exhausted");
  }
  ce_result first, deepest;
  memset(&first, 0, sizeof first);
  memset(&deepest, 0, sizeof deepest);
  ce_wrench wa = {ce_v3(0, 0, 0), ce_v3(0, 0, 0)}, wb = wa;
  ce_vec3 fsum = ce_v3(0, 0, 0), pw = ce_v3(0, 0, 0);
  double fw = 0, energy = 0;
  int32_t contacts = 0;
  for (int32_t i = 0; i < na; i++)
    for (int32_t j = 0; j < nb; j++) {
      ca.geometry = ga->npieces > 0 ? ga->pieces[i] : ga;
      cb.geometry = gb->npieces > 0 ? gb->pieces[j] : gb;
      ce_result t;
      memset(&t, 0, sizeof t);
      ce_errno e = ce_point_contact_compute(&ca, &cb, stiction_tolerance, 0, arena, &t, err);
      if (e != CE_OK) return e;
      if (i == 0 && j == 0) first = t;
      if (t.status != CE_CONTACT_POINT) continue;
      if (contacts == 0 || t.point.depth > deepest.point.depth) deepest = t;
      if (patches) patches[contacts] = t.total;
      if (red)
        red[contacts] = ce_reduce_point(contacts, t.point.point, t.point.normal, t.point.normal_force,
                                        t.point.friction_force, t.point.stiffness, t.point.dissipation, t.point.depth);
      contacts++;
      wa = ce_wrench_add(wa, t.wrench_a);
      wb = ce_wrench_add(wb, t.wrench_b);
      fsum = ce_add(fsum, t.total.normal_force);
      pw = ce_axpy(pw, t.point.normal_force, t.point.point);
      fw += t.point.normal_force;
      energy += t.strain_energy;
    }
  r->model = first.model;
  r->combined_material = first.combined_material;
  if (contacts == 0) {
    r->status = CE_CONTACT_NONE;
    memset(&r->point, 0, sizeof r->point);
    r->point.stiffness = first.point.stiffness;
    r->point.dissipation = first.point.dissipation;
    r->point.hull_a = ga->npieces > 0 ? 0 : first.point.hull_a;
    r->point.hull_b = gb->npieces > 0 ? 0 : first.point.hull_b;
  } else {
    r->status = CE_CONTACT_POINT;
    r->point = deepest.point;
    if (ga->npieces > 0) r->point.hull_a = 0;
    if (gb->npieces > 0) r->point.hull_b = 0;
  }
  r->point.pieces_a = ga->npieces;
  r->point.pieces_b = gb->npieces;
  r->point.contacts = contacts;
  if (contacts == 0) return CE_OK;
  ce_vec3 c = fw > 0 ? ce_scale(pw, 1.0 / fw) : deepest.point.point;
  r->wrench_a = wa;
  r->wrench_b = wb;
  r->wrench_a_centroid = ce_wrench_shift(wa, a->X_WB.p, c);
  r->area = 0;
  r->centroid = c;
  r->total.faces = 0;
  r->total.area = 0;
  r->total.normal_force = fsum;
  r->total.normal_force_magnitude = ce_norm(fsum);
  r->total.point = c;
  r->strain_energy = energy;
  r->total.strain_energy = energy;
  if (patches) {
    r->patches = patches;
    r->npatches = contacts;
  }
  if (red) {
    r->reduced = red;
    r->nreduced = contacts;
  }
  return CE_OK;
}
