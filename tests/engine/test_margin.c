/* test_margin.c — margins (ce_props.margin, ce_margin.c): the inflated
 * copy's field, speculative contact of bodies apart within their margins,
 * and forces unchanged by a margin. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 22); }
static void teardown(void) { ce_arena_destroy(arena); }
TestSuite(margin, .init = setup, .fini = teardown, .timeout = 300);

#define R 0.1
#define E 1e6
#define DELTA 0.01

static ce_geometry *build(ce_shape_type t, double margin, double hint) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = t;
  s.radius = R;
  s.length = 0.1;
  s.size = ce_v3(0.2, 0.18, 0.16);
  ce_props pr = ce_test_props(CE_COMPLIANT, E, hint);
  pr.margin = margin;
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

static ce_geometry *halfspace(void) {
  ce_shape s = {.type = CE_SHAPE_HALFSPACE};
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.05);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

/* The inflated copy (Drake's check): the original vertices keep their
 * pressures, the original boundary's are zero, and every outer vertex has
 * -G delta and lies delta outside the original surface. */
Test(margin, field_is_zero_on_the_original_surface) {
  static const ce_shape_type types[] = {CE_SHAPE_SPHERE, CE_SHAPE_CAPSULE, CE_SHAPE_BOX, CE_SHAPE_CYLINDER};
  for (int k = 0; k < 4; k++) {
    ce_geometry *g = build(types[k], DELTA, 0.03);
    const ce_geometry *in = g->inflated;
    cr_assert(in, "an inflated copy");
    const ce_tetmesh *m = &g->tet, *mi = &in->tet;
    cr_assert_gt(mi->nv, m->nv);
    cr_assert_eq(memcmp(mi->p, m->p, (size_t)m->nv * sizeof *m->p), 0);
    int boundary = 0;
    for (int32_t t = 0; t < m->nt; t++)
      for (int i = 0; i < 4; i++)
        if (m->adj[t][i] < 0)
          for (int j = 0; j < 3; j++) {
            cr_assert_eq(m->p[m->tet[t][ce_tet_face_vertex[i][j]]], 0.0);
            boundary++;
          }
    cr_assert_gt(boundary, 0);
    for (int32_t v = m->nv; v < mi->nv; v++) {
      ce_vec3 x = mi->v[v];
      cr_assert_lt(mi->p[v], 0, "outer vertex %d: pressure %g", v, mi->p[v]);
      double d; /* distance outside the original surface */
      if (types[k] == CE_SHAPE_SPHERE) d = ce_norm(x) - R;
      else if (types[k] == CE_SHAPE_CAPSULE) d = hypot(hypot(x.x, x.y), fmax(fabs(x.z) - 0.05, 0)) - R;
      else if (types[k] == CE_SHAPE_BOX) d = fmax(fabs(x.x) - 0.1, fmax(fabs(x.y) - 0.09, fabs(x.z) - 0.08));
      else d = fmax(fabs(x.z) - 0.05, -INFINITY); /* cylinder: the caps' planes at least */
      if (types[k] != CE_SHAPE_CYLINDER)
        cr_assert(fabs(d - DELTA) <= 1e-12, "shape %d outer vertex %d at %.17g outside, not %g", k, v, d, DELTA);
      else
        cr_assert_leq(d, DELTA * (1 + 1e-12));
    }
    /* the boundary of the copy is the outer layer */
    ce_geometry_info info;
    ce_geometry_get_info(in, &info);
    cr_assert_lt(info.min_pressure, 0);
    ce_geometry_free(g);
  }
}

/* Rigid primitives and bad values are refused (meshes, the ellipsoid and
 * convex sets: test_margin_mesh.c). */
Test(margin, refused_where_it_cannot_work) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_SPHERE;
  s.radius = R;
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.03);
  pr.margin = DELTA;
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "rigid sphere"), "%s", err.message);
  pr = ce_test_props(CE_COMPLIANT, E, 0.03);
  pr.margin = -1;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "margin must be finite and >= 0"), "%s", err.message);
  pr.margin = 1e10;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "margin"), "%s", err.message);
  cr_assert_null(g);
}

/* The sphere turned so that a boundary vertex points straight down: its
 * lowest point is then that vertex (at R) and its copy's lowest point the
 * copy of it (at R + delta). */
static ce_quat vertex_down(const ce_geometry *g) {
  ce_vec3 u = ce_normalize(g->tet.v[0]);
  for (int32_t i = 0; i < g->tet.nv; i++)
    if (ce_norm(g->tet.v[i]) > 0.999 * R) {
      u = ce_normalize(g->tet.v[i]);
      break;
    }
  ce_vec3 down = ce_v3(0, 0, -1), ax = ce_cross(u, down);
  double s = ce_norm(ax), c = ce_dot(u, down);
  if (s < 1e-12) return c > 0 ? ce_quat_identity() : ce_quat_from_axis_angle(ce_v3(1, 0, 0), M_PI);
  return ce_quat_from_axis_angle(ce_scale(ax, 1 / s), atan2(s, c));
}

static ce_result query(const ce_geometry *ga, ce_quat q, double z, const ce_geometry *gb) {
  ce_body a = ce_test_body(ga, q, ce_v3(0, 0, z)), b = ce_test_body(gb, ce_quat_identity(), ce_v3(0, 0, 0));
  return ce_test_contact(&a, &b, NULL, arena);
}

/* A sphere approaching a plane: apart beyond delta, speculative from gap
 * delta (with its separation the gap), touching (first positive force) at
 * gap 0, the force continuous through it. */
Test(margin, sphere_approaching_a_plane) {
  ce_geometry *s = build(CE_SHAPE_SPHERE, DELTA, 0.02), *p = halfspace();
  ce_quat q = vertex_down(s);
  double worst = 0;
  for (int i = 0; i <= 60; i++) {
    double gap = 0.015 - 0.00025 * i;
    ce_result r = query(s, q, R + gap, p);
    if (fabs(gap - DELTA) <= 1e-9 * DELTA) continue; /* the copy touches the plane at one point */
    if (gap > DELTA) {
      cr_assert_eq(r.status, CE_CONTACT_NONE, "gap %g: apart beyond the margin (status %d)", gap, r.status);
    } else if (gap > 1e-12) {
      cr_assert_eq(r.status, CE_CONTACT_SPECULATIVE, "gap %g: speculative (status %d)", gap, r.status);
      cr_assert_eq(ce_norm(r.wrench_a.force), 0.0);
      cr_assert_gt(r.speculative.stiffness, 0);
      cr_assert_gt(r.speculative.normal.z, 0.99);
      double e = fabs(r.speculative.separation - gap);
      worst = fmax(worst, e / gap);
      cr_assert_leq(e, 0.02 * gap + 1e-9, "gap %g: separation %g", gap, r.speculative.separation);
    } else {
      cr_assert_eq(r.status, gap < -1e-12 ? CE_CONTACT_SURFACE : r.status);
    }
  }
  cr_log_info("sphere on a plane: speculative separation within %.3g of the gap", worst);
  /* through touch: speculative just above, a force just below that tends to 0 */
  ce_result up = query(s, q, R + 1e-7, p), down = query(s, q, R - 1e-7, p), deep = query(s, q, R - 1e-3, p);
  cr_assert_eq(up.status, CE_CONTACT_SPECULATIVE);
  cr_assert(up.speculative.separation < 2e-7, "%g", up.speculative.separation);
  cr_assert_eq(down.status, CE_CONTACT_SURFACE);
  cr_assert_gt(down.wrench_a.force.z, 0);
  cr_assert_lt(down.wrench_a.force.z, 1e-6 * deep.wrench_a.force.z, "%g vs %g", down.wrench_a.force.z,
               deep.wrench_a.force.z);
  ce_geometry_free(s);
  ce_geometry_free(p);
}

/* Two spheres with margins: speculative while their gap is below 2 delta. */
Test(margin, two_compliant_spheres) {
  ce_geometry *s = build(CE_SHAPE_SPHERE, DELTA, 0.02);
  ce_quat q = vertex_down(s), up = ce_quat_mul(ce_quat_from_axis_angle(ce_v3(1, 0, 0), M_PI), q);
  for (int i = 0; i < 6; i++) {
    double gap = 0.003 * i + 0.001;
    ce_body a = ce_test_body(s, q, ce_v3(0, 0, R + gap)), b = ce_test_body(s, up, ce_v3(0, 0, -R));
    ce_result r = ce_test_contact(&a, &b, NULL, arena);
    if (gap < 2 * DELTA) {
      cr_assert_eq(r.status, CE_CONTACT_SPECULATIVE, "gap %g: status %d", gap, r.status);
      cr_assert(fabs(r.speculative.separation - gap) <= 0.03 * gap, "gap %g: separation %g", gap,
                r.speculative.separation);
    }
  }
  ce_geometry_free(s);
}

/* In contact, a margin changes nothing: the same wrench, bit for bit, as
 * the same primitive without one (every pair the primitives make with a
 * plane and with each other). */
Test(margin, same_force_with_and_without) {
  static const ce_shape_type types[] = {CE_SHAPE_SPHERE, CE_SHAPE_CAPSULE, CE_SHAPE_BOX, CE_SHAPE_CYLINDER};
  ce_geometry *p = halfspace();
  uint64_t rng = 5;
  int touching = 0;
  for (int k = 0; k < 4; k++) {
    ce_geometry *g0 = build(types[k], 0, 0.03), *g1 = build(types[k], DELTA, 0.03), *o = build(CE_SHAPE_SPHERE, 0, 0.03);
    for (int i = 0; i < 8; i++) {
      ce_quat q = ce_test_rand_quat(&rng);
      ce_vec3 c = ce_v3(0, 0, 0.05 + 0.03 * ce_test_rand(&rng));
      const ce_geometry *other = i & 1 ? o : p;
      if (i & 1) c = ce_add(c, ce_v3(0, 0, 0.1));
      ce_body b = ce_test_body(other, ce_quat_identity(), ce_v3(0, 0, 0));
      ce_body a0 = ce_test_body(g0, q, c), a1 = ce_test_body(g1, q, c);
      a0.V_WB.v = a1.V_WB.v = ce_v3(0.1, 0, -0.05);
      a0.material.dissipation = a1.material.dissipation = 2;
      a0.material.friction = a1.material.friction = 0.3;
      ce_options opt;
      ce_options_default(&opt);
      ce_result r0, r1;
      ce_error err;
      cr_assert_eq(ce_contact(&a0, &b, &opt, arena, &r0, &err), CE_OK, "%s", err.message);
      cr_assert_eq(ce_contact(&a1, &b, &opt, arena, &r1, &err), CE_OK, "%s", err.message);
      if (r0.status != CE_CONTACT_SURFACE) continue;
      touching++;
      cr_assert_eq(r1.status, CE_CONTACT_SURFACE);
      cr_assert_eq(memcmp(&r0.wrench_a, &r1.wrench_a, sizeof r0.wrench_a), 0, "shape %d pose %d", k, i);
    }
    ce_geometry_free(g0);
    ce_geometry_free(g1);
    ce_geometry_free(o);
  }
  cr_assert_geq(touching, 16);
  ce_geometry_free(p);
}

/* A sphere with a margin over a rigid box (the rigid mesh path): its top
 * face is flat, so the separation is the gap. */
Test(margin, sphere_over_a_rigid_box) {
  ce_geometry *s = build(CE_SHAPE_SPHERE, DELTA, 0.02);
  ce_geometry *box = ce_test_shape(CE_SHAPE_BOX, CE_RIGID, 0.1, ce_v3(0.4, 0.4, 0.2), 0.05);
  cr_assert(box);
  ce_quat q = vertex_down(s);
  for (int i = 0; i < 5; i++) {
    double gap = 0.002 * i + 0.001;
    ce_result r = query(s, q, 0.1 + R + gap, box);
    cr_assert_eq(r.status, CE_CONTACT_SPECULATIVE, "gap %g: status %d", gap, r.status);
    cr_assert(fabs(r.speculative.separation - gap) <= 1e-9, "gap %g: separation %.17g", gap,
              r.speculative.separation);
  }
  cr_assert_eq(query(s, q, 0.1 + R + 1.5 * DELTA, box).status, CE_CONTACT_NONE);
  cr_assert_eq(query(s, q, 0.1 + R - 0.001, box).status, CE_CONTACT_SURFACE);
  ce_geometry_free(s);
  ce_geometry_free(box);
}
