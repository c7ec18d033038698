/* test_tetrahedralize.c — compliant geometry from closed surfaces
 * (ce_tetrahedralize.c): sphere, torus and a non-convex L-shaped block from
 * OBJ text; volume against the analytic volume, orientation, the dihedral
 * guard, open / inverted / self-overlapping input, the hull option,
 * progress reports, and a compliant torus against a rigid peg through
 * ce_contact(). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

typedef struct surf {
  ce_mesh_data m;
} surf;

static ce_mesh_data parse_obj(char *text, size_t len) {
  ce_mesh_data m;
  ce_error err;
  cr_assert_eq(ce_mesh_parse(text, len, CE_MESH_OBJ, 0, &m, &err), CE_OK, "%s", err.message);
  free(text);
  return m;
}

/* The unit UV sphere (ce_test_obj_sphere) parsed. */
static ce_mesh_data unit_sphere(int nlat, int nlon) {
  size_t len;
  char *txt = ce_test_obj_sphere(1, nlat, nlon, &len);
  return parse_obj(txt, len);
}

/* Tetrahedralise at edge length a; check orientation, reported quality and
 * volume against the recomputed ones; return the volume error against
 * `exact`. */
static double run(const ce_mesh_data *s, double a, double exact, ce_surface_build_report *rep_out) {
  ce_surface_build_options o;
  ce_surface_build_options_default(&o);
  o.edge_length = a;
  double *v;
  int32_t *t, nv, nt;
  ce_surface_build_report rep;
  ce_error err;
  cr_assert_eq(ce_tetrahedralize_surface(s->vertices, s->nv, s->tris, s->ntri, &o, &v, &nv, &t, &nt, &rep, &err), CE_OK,
               "%s", err.message);
  cr_assert_eq(rep.tets, nt);
  cr_assert_eq(rep.vertices, nv);
  double vol = 0, mind = 180;
  for (int32_t q = 0; q < nt; q++) {
    ce_vec3 x[4];
    for (int r = 0; r < 4; r++) {
      cr_assert(t[4 * q + r] >= 0 && t[4 * q + r] < nv);
      x[r] = ce_v3(v[3 * t[4 * q + r]], v[3 * t[4 * q + r] + 1], v[3 * t[4 * q + r] + 2]);
    }
    double v6 = ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0])));
    cr_assert_gt(v6, 0, "tet %d inverted or flat (6V = %g)", (int)q, v6);
    vol += v6 / 6;
    /* dihedral angles from the face normals */
    static const int F[4][3] = {{1, 2, 3}, {0, 3, 2}, {0, 1, 3}, {0, 2, 1}};
    ce_vec3 n[4];
    for (int f = 0; f < 4; f++)
      n[f] = ce_normalize(ce_cross(ce_sub(x[F[f][1]], x[F[f][0]]), ce_sub(x[F[f][2]], x[F[f][0]])));
    for (int i = 0; i < 4; i++)
      for (int j = i + 1; j < 4; j++) mind = fmin(mind, acos(fmax(-1, fmin(1, -ce_dot(n[i], n[j])))) * 180 / M_PI);
  }
  cr_assert(ce_test_close(vol, rep.volume, 1e-9, 0), "volume %g reported %g", vol, rep.volume);
  cr_assert(fabs(mind - rep.min_dihedral_deg) < 1e-6, "min dihedral %g reported %g", mind, rep.min_dihedral_deg);
  cr_assert_geq(rep.min_dihedral_deg, CE_TETRAHEDRALIZE_MIN_DIHEDRAL_DEG - 1e-9);
  cr_assert(ce_test_close(rep.volume_error, (rep.volume - rep.surface_volume) / rep.surface_volume, 1e-12, 1e-15));
  /* the mesh makes a valid compliant geometry */
  ce_props props = ce_test_props(CE_COMPLIANT, 1e6, a);
  ce_geometry *g = NULL;
  cr_assert_eq(ce_geometry_from_tetmesh(v, nv, t, nt, NULL, &props, &g, &err), CE_OK, "%s", err.message);
  ce_geometry_free(g);
  free(v);
  free(t);
  if (rep_out) *rep_out = rep;
  return (rep.volume - exact) / exact;
}

Test(tetrahedralize, sphere_volume_converges) {
  ce_mesh_data s = unit_sphere(48, 96);
  const double exact = 4.0 / 3 * M_PI;
  double e1 = run(&s, 0.4, exact, NULL), e2 = run(&s, 0.2, exact, NULL), e3 = run(&s, 0.1, exact, NULL);
  /* measured -3.5%, -1.2%, -0.29% */
  cr_assert_lt(fabs(e3), 0.02, "finest volume error %g", e3);
  cr_assert_lt(fabs(e3), 0.005, "finest volume error %g", e3);
  cr_assert_lt(fabs(e3), fabs(e2));
  cr_assert_lt(fabs(e2), fabs(e1));
  ce_mesh_data_free(&s);
}

Test(tetrahedralize, torus_volume) {
  size_t len;
  char *txt = ce_test_obj_torus(1, 0.4, 96, 48, &len);
  ce_mesh_data s = parse_obj(txt, len);
  const double exact = 2 * M_PI * M_PI * 1 * 0.4 * 0.4;
  ce_surface_build_report rep;
  double e1 = run(&s, 0.2, exact, NULL), e2 = run(&s, 0.1, exact, &rep);
  /* measured -1.8%, -0.65% (the 96 x 48 facets alone are -0.36%) */
  cr_assert_lt(fabs(e2), 0.02, "finest volume error %g", e2);
  cr_assert_lt(fabs(e2), fabs(e1));
  cr_assert_lt(fabs(rep.volume_error), 0.005, "error against the facets %g", rep.volume_error);
  cr_assert_gt(rep.tets, 30000);
  ce_mesh_data_free(&s);
}

Test(tetrahedralize, nonconvex_lblock_volume) {
  size_t len;
  char *txt = ce_test_obj_lblock(1, &len);
  ce_mesh_data s = parse_obj(txt, len);
  double e1 = run(&s, 0.4, 3, NULL), e2 = run(&s, 0.2, 3, NULL), e3 = run(&s, 0.1, 3, NULL);
  /* measured -1.9%, +0.22%, +0.06% */
  cr_assert_lt(fabs(e3), 0.02);
  cr_assert_lt(fabs(e3), 0.002, "finest volume error %g", e3);
  cr_assert_lt(fabs(e2), fabs(e1));
  cr_assert_lt(fabs(e3), fabs(e2));
  ce_mesh_data_free(&s);
}

Test(tetrahedralize, lblock_reentrant_corner_is_not_filled) {
  size_t len;
  char *txt = ce_test_obj_lblock(1, &len);
  ce_mesh_data s = parse_obj(txt, len);
  double *v;
  int32_t *t, nv, nt;
  ce_surface_build_options o;
  ce_surface_build_options_default(&o);
  o.edge_length = 0.1;
  cr_assert_eq(ce_tetrahedralize_surface(s.vertices, s.nv, s.tris, s.ntri, &o, &v, &nv, &t, &nt, NULL, NULL), CE_OK);
  /* no tet centroid in the missing quadrant (1, 2) x (1, 2) beyond a sliver */
  int bad = 0;
  for (int32_t q = 0; q < nt; q++) {
    double cx = 0, cy = 0;
    for (int r = 0; r < 4; r++) {
      cx += v[3 * t[4 * q + r]] / 4;
      cy += v[3 * t[4 * q + r] + 1] / 4;
    }
    if (cx > 1.05 && cy > 1.05) bad++;
  }
  cr_assert_eq(bad, 0);
  free(v);
  free(t);
  ce_mesh_data_free(&s);
}

static double last_fraction;
static int calls, monotone = 1;
static char last_stage[32];
static int on_progress(void *user, double f, const char *stage) {
  (void)user;
  if (strcmp(stage, last_stage) == 0 && f < last_fraction) monotone = 0;
  snprintf(last_stage, sizeof last_stage, "%s", stage);
  last_fraction = f;
  calls++;
  return 0;
}

/* The compliant geometry built from s (modulus 2e5) with options o: built,
 * its tet count the report's, and its core at E. */
static ce_geometry *built_core_at_e(const ce_mesh_data *s, const ce_props *props, const ce_surface_build_options *o,
                                    ce_surface_build_report *rep) {
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_surface(s->vertices, s->nv, s->tris, s->ntri, props, o, &g, rep, &err), CE_OK, "%s",
               err.message);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert_eq(info.tetrahedra, rep->tets);
  cr_assert(ce_test_close(info.max_pressure, 2e5, 1e-12, 0)); /* the core is at E */
  return g;
}

Test(tetrahedralize, geometry_from_surface_with_fields_and_progress) {
  ce_mesh_data s = unit_sphere(24, 48);
  ce_props props = ce_test_props(CE_COMPLIANT, 2e5, 0.2);
  ce_surface_build_options o;
  ce_surface_build_options_default(&o);
  o.progress = on_progress;
  ce_surface_build_report rep;
  ce_error err;
  ce_geometry *g = built_core_at_e(&s, &props, &o, &rep);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert_eq(info.min_pressure, 0);
  cr_assert_gt(rep.field.core_vertices, 0);
  cr_assert_gt(rep.field.iterations, 0);
  cr_assert_lt(rep.field.residual, 1e-9);
  cr_assert_gt(calls, 3);
  cr_assert(monotone);
  cr_assert_str_eq(last_stage, "finish");
  cr_assert_eq(last_fraction, 1.0);
  ce_geometry_free(g);
  /* distance field */
  o.field = CE_FIELD_DISTANCE;
  o.progress = NULL;
  cr_assert_eq(ce_geometry_from_surface(s.vertices, s.nv, s.tris, s.ntri, &props, &o, &g, &rep, &err), CE_OK, "%s",
               err.message);
  ce_geometry_get_info(g, &info);
  cr_assert(ce_test_close(info.max_pressure, 2e5, 1e-12, 0));
  ce_geometry_free(g);
  /* rigid props are refused */
  props.compliance = CE_RIGID;
  cr_assert_eq(ce_geometry_from_surface(s.vertices, s.nv, s.tris, s.ntri, &props, &o, &g, &rep, &err), CE_EINVAL);
  cr_assert_null(g);
  ce_mesh_data_free(&s);
}

/* A progress callback that asks to stop at its k-th call (k = 0: never). */
typedef struct stopper {
  int k, calls, after_stop, tet_calls, field_calls, geometry_calls;
  int first_geometry; /* the first "geometry" call's number (from 1) */
} stopper;

static int stop_at(void *user, double f, const char *stage) {
  (void)f;
  stopper *s = user;
  if (s->k > 0 && s->calls >= s->k) s->after_stop++;
  s->calls++;
  s->tet_calls += strcmp(stage, "tetrahedralise") == 0;
  s->field_calls += strcmp(stage, "field") == 0;
  s->geometry_calls += strcmp(stage, "geometry") == 0;
  if (!s->first_geometry && strcmp(stage, "geometry") == 0) s->first_geometry = s->calls;
  return s->k > 0 && s->calls == s->k;
}

Test(tetrahedralize, a_callback_cancels_the_build_at_every_progress_point) {
  ce_mesh_data s = unit_sphere(24, 48);
  ce_props props = ce_test_props(CE_COMPLIANT, 2e5, 0.15);
  ce_surface_build_options o;
  ce_surface_build_options_default(&o);
  stopper st;
  memset(&st, 0, sizeof st);
  o.progress = stop_at;
  o.progress_user = &st;
  ce_surface_build_report rep;
  ce_error err;
  ce_geometry *g = built_core_at_e(&s, &props, &o, &rep);
  ce_geometry_free(g);
  const int total = st.calls, tet_calls = st.tet_calls;
  /* the lattice loop reports every z slice (2 / 0.15 + 2 of them): more
   * points than slices */
  cr_assert_gt(tet_calls, 2 / 0.15, "%d tetrahedralise reports", tet_calls);
  /* then the field's: 0, 0.05, 0.15, PCG's, 0.95, 1, with the two
   * geometry builds' between them; and finish */
  cr_assert_geq(st.field_calls, 5);
  cr_assert_geq(st.geometry_calls, 10);
  cr_assert_eq(st.first_geometry, tet_calls + 2, "after the field's first report");
  const int first_geometry = st.first_geometry;
  cr_assert_eq(total, tet_calls + st.field_calls + st.geometry_calls + 1);
  /* the tet mesh alone, stopped at each of its points: outputs NULL and 0
   * (ASan checks that nothing leaks) */
  o.edge_length = 0.15;
  for (int k = 1; k <= tet_calls; k++) {
    memset(&st, 0, sizeof st);
    st.k = k;
    double *v = (double *)&st;
    int32_t *t = (int32_t *)&st, nv = -1, nt = -1;
    memset(&err, 0, sizeof err);
    cr_assert_eq(ce_tetrahedralize_surface(s.vertices, s.nv, s.tris, s.ntri, &o, &v, &nv, &t, &nt, NULL, &err),
                 CE_ECANCELED, "stop at call %d of %d", k, tet_calls);
    cr_assert_eq(err.code, CE_ECANCELED);
    cr_assert_str_eq(err.message, "tetrahedralise: build cancelled");
    cr_assert_null(v);
    cr_assert_null(t);
    cr_assert_eq(nv, 0);
    cr_assert_eq(nt, 0);
    cr_assert_eq(st.calls, k, "no progress after the stop (call %d)", k);
    cr_assert_eq(st.after_stop, 0);
  }
  /* the whole build stopped in the field (its first point, its last), in
   * the temporary geometry's build and the final one's, and at "finish":
   * no geometry */
  o.edge_length = 0;
  const int stops[] = {tet_calls + 1, first_geometry, total - 2, total - 1, total};
  const char *msgs[] = {"laplace: build cancelled", "geometry: build cancelled", "geometry: build cancelled",
                        "laplace: build cancelled", "surface build: build cancelled"};
  for (int i = 0; i < 5; i++) {
    memset(&st, 0, sizeof st);
    st.k = stops[i];
    g = (ce_geometry *)&st; /* must be overwritten with NULL */
    memset(&err, 0, sizeof err);
    cr_assert_eq(ce_geometry_from_surface(s.vertices, s.nv, s.tris, s.ntri, &props, &o, &g, &rep, &err), CE_ECANCELED,
                 "stop at call %d of %d", stops[i], total);
    cr_assert_null(g);
    cr_assert_eq(err.code, CE_ECANCELED);
    cr_assert_str_eq(err.message, msgs[i]);
    cr_assert_eq(st.calls, stops[i]);
    cr_assert_eq(st.after_stop, 0);
  }
  ce_mesh_data_free(&s);
}

Test(tetrahedralize, open_inverted_and_overlapping_input) {
  ce_mesh_data s = unit_sphere(12, 24);
  ce_surface_build_options o;
  ce_surface_build_options_default(&o);
  o.edge_length = 0.25;
  double *v;
  int32_t *t, nv, nt;
  ce_surface_build_report rep;
  ce_error err;
  /* open: drop the last triangle */
  cr_assert_eq(ce_tetrahedralize_surface(s.vertices, s.nv, s.tris, s.ntri - 1, &o, &v, &nv, &t, &nt, &rep, &err),
               CE_EOPEN);
  cr_assert(strstr(err.message, "not closed"), "%s", err.message);
  cr_assert_null(v);
  o.use_hull_if_open = 1;
  cr_assert_eq(ce_tetrahedralize_surface(s.vertices, s.nv, s.tris, s.ntri - 1, &o, &v, &nv, &t, &nt, &rep, &err), CE_OK,
               "%s", err.message);
  cr_assert_eq(rep.used_hull, 1);
  cr_assert_lt(fabs(rep.volume_error), 0.05);
  free(v);
  free(t);
  o.use_hull_if_open = 0;
  /* inward winding */
  int32_t *flip = malloc((size_t)s.ntri * 3 * sizeof *flip);
  for (int32_t f = 0; f < s.ntri; f++) {
    flip[3 * f] = s.tris[3 * f];
    flip[3 * f + 1] = s.tris[3 * f + 2];
    flip[3 * f + 2] = s.tris[3 * f + 1];
  }
  cr_assert_eq(ce_tetrahedralize_surface(s.vertices, s.nv, flip, s.ntri, &o, &v, &nv, &t, &nt, &rep, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "inward"), "%s", err.message);
  free(flip);
  /* two overlapping spheres in one mesh: winding number 2 in the overlap */
  double *v2 = malloc((size_t)s.nv * 6 * sizeof *v2);
  int32_t *t2 = malloc((size_t)s.ntri * 6 * sizeof *t2);
  for (int32_t i = 0; i < s.nv; i++)
    for (int c = 0; c < 3; c++) {
      v2[3 * i + c] = s.vertices[3 * i + c];
      v2[3 * (s.nv + i) + c] = s.vertices[3 * i + c] + (c == 0 ? 0.8 : 0);
    }
  for (int32_t k = 0; k < 3 * s.ntri; k++) {
    t2[k] = s.tris[k];
    t2[3 * s.ntri + k] = s.tris[k] + s.nv;
  }
  cr_assert_eq(ce_tetrahedralize_surface(v2, 2 * s.nv, t2, 2 * s.ntri, &o, &v, &nv, &t, &nt, &rep, &err),
               CE_EDEGENERATE);
  cr_assert(strstr(err.message, "intersects itself"), "%s", err.message);
  o.use_hull_if_open = 1;
  cr_assert_eq(ce_tetrahedralize_surface(v2, 2 * s.nv, t2, 2 * s.ntri, &o, &v, &nv, &t, &nt, &rep, &err), CE_OK, "%s",
               err.message);
  cr_assert_eq(rep.used_hull, 1);
  /* hull of two unit spheres 0.8 apart: 4/3 pi + pi 0.8 (a cylinder between) */
  cr_assert_lt(fabs(rep.volume / (4.0 / 3 * M_PI + M_PI * 0.8) - 1), 0.05, "volume %g", rep.volume);
  free(v);
  free(t);
  free(v2);
  free(t2);
  /* bad arguments */
  o.edge_length = 0;
  cr_assert_eq(ce_tetrahedralize_surface(s.vertices, s.nv, s.tris, s.ntri, &o, &v, &nv, &t, &nt, &rep, &err), CE_EINVAL);
  o.edge_length = 1e-4; /* far too many tets */
  cr_assert_eq(ce_tetrahedralize_surface(s.vertices, s.nv, s.tris, s.ntri, &o, &v, &nv, &t, &nt, &rep, &err), CE_ELIMIT);
  cr_assert(strstr(err.message, "over the limit"), "%s", err.message);
  ce_mesh_data_free(&s);
}

/* A compliant torus (axis z, hole radius 0.6) threaded by a rigid peg
 * (cylinder radius 0.7 along z): the rim is squeezed all around. Centred,
 * the radial forces cancel; moved along +x the peg pushes the torus +x. */
Test(tetrahedralize, compliant_torus_against_rigid_peg) {
  size_t len;
  char *txt = ce_test_obj_torus(1, 0.4, 64, 32, &len);
  ce_mesh_data s = parse_obj(txt, len);
  ce_props props = ce_test_props(CE_COMPLIANT, 1e5, 0.14); /* ~16k tets */
  ce_geometry *torus = NULL, *peg = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_surface(s.vertices, s.nv, s.tris, s.ntri, &props, NULL, &torus, NULL, &err), CE_OK, "%s",
               err.message);
  ce_shape cyl;
  memset(&cyl, 0, sizeof cyl);
  cyl.type = CE_SHAPE_CYLINDER;
  cyl.radius = 0.7;
  cyl.length = 2;
  ce_props rp = ce_test_props(CE_RIGID, 0, 0.05);
  cr_assert_eq(ce_geometry_from_shape(&cyl, &rp, &peg, &err), CE_OK, "%s", err.message);
  ce_arena *arena = ce_arena_create(1 << 20);
  ce_options opt;
  ce_options_default(&opt);
  opt.want_surface = 1;
  ce_quat id = {1, 0, 0, 0};
  double fx[2];
  for (int k = 0; k < 2; k++) {
    ce_arena_reset(arena);
    ce_body a = ce_test_body(torus, id, ce_v3(0, 0, 0));
    ce_body b = ce_test_body(peg, id, ce_v3(k ? 0.05 : 0, 0, 0));
    ce_result r;
    cr_assert_eq(ce_contact(&a, &b, &opt, arena, &r, &err), CE_OK, "%s", err.message);
    cr_assert_eq(r.status, CE_CONTACT_SURFACE);
    cr_assert_gt(r.area, 0.5, "area %g", r.area); /* the band is ~ 2 pi 0.6 x 2 sqrt(0.4^2 - 0.3^2) */
    cr_assert_gt(r.total.normal_force_magnitude, 0);
    double fsum = 0; /* sum of |face normal force| via pressure * area */
    for (int32_t f = 0; f < r.surface.nf; f++) fsum += r.surface.centroid_pressure[f] * r.surface.area[f];
    cr_assert_gt(fsum, 1e3, "squeeze %g", fsum);
    ce_vec3 F = r.wrench_a.force;
    /* mirror symmetry in y and z: those components cancel */
    cr_assert_lt(fabs(F.y), 0.01 * fsum, "Fy %g of %g", F.y, fsum);
    cr_assert_lt(fabs(F.z), 0.01 * fsum, "Fz %g of %g", F.z, fsum);
    /* equal and opposite */
    cr_assert_lt(ce_norm(ce_add(r.wrench_a.force, r.wrench_b.force)), 1e-9 * fsum);
    fx[k] = F.x;
  }
  cr_assert_lt(fabs(fx[0]), 0.01 * fabs(fx[1]) + 1e-6, "centred Fx %g vs offset %g", fx[0], fx[1]);
  cr_assert_gt(fx[1], 0, "offset peg pushes the torus +x (Fx %g)", fx[1]);
  ce_arena_destroy(arena);
  ce_geometry_free(torus);
  ce_geometry_free(peg);
  ce_mesh_data_free(&s);
}
