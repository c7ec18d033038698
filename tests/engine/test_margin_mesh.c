/* test_margin_mesh.c — margins on compliant meshes (ce_margin.c, the face
 * planes' offset of ce_offset.c): user tet meshes (a Kuhn box, voxel L and
 * slot shapes), tetrahedralised surfaces (sphere, torus, L block), the
 * ellipsoid and a convex set: Drake's check that p = 0 stays on the
 * original surface, the layer's field and volumes, every face plane moved
 * out by delta; forces unchanged; speculative contact of a mesh nearing a
 * plane; and the refusals (a vertex tip, a sharp needle, a fold). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 22); }
static void teardown(void) { ce_arena_destroy(arena); }
TestSuite(margin_mesh, .init = setup, .fini = teardown, .timeout = 300);

#define E 1e6

/* ---- meshes --------------------------------------------------------- */

/* A voxel set's tet mesh: the cells (i, j, k) of an n^3 grid of spacing h
 * with mask(i, j, k), each split into Kuhn's six tets (one diagonal
 * throughout, so neighbours share faces), vertices used only. */
typedef int (*voxel_mask)(int i, int j, int k);

static void voxels(int n, double h, voxel_mask mask, double **vo, int32_t *nvo, int32_t **to, int32_t *nto) {
  const int g = n + 1;
  int32_t *id = malloc((size_t)g * g * g * sizeof *id);
  double *v = malloc(3 * (size_t)g * g * g * sizeof *v);
  int32_t *t = malloc(24 * (size_t)n * n * n * sizeof *t);
  cr_assert(id && v && t);
  for (int q = 0; q < g * g * g; q++) id[q] = -1;
  int32_t nv = 0, nt = 0;
  static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++)
      for (int k = 0; k < n; k++) {
        if (!mask(i, j, k)) continue;
        for (int p = 0; p < 6; p++) {
          int c[3] = {i, j, k}, tv[4];
          for (int s = 0; s < 4; s++) {
            if (s > 0) c[perm[p][s - 1]]++;
            int q = (c[0] * g + c[1]) * g + c[2];
            if (id[q] < 0) {
              id[q] = nv;
              v[3 * nv] = c[0] * h, v[3 * nv + 1] = c[1] * h, v[3 * nv + 2] = c[2] * h;
              nv++;
            }
            tv[s] = id[q];
          }
          ce_vec3 x[4];
          for (int s = 0; s < 4; s++) x[s] = ce_v3(v[3 * tv[s]], v[3 * tv[s] + 1], v[3 * tv[s] + 2]);
          if (ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0]))) < 0) {
            int s = tv[0];
            tv[0] = tv[1];
            tv[1] = s;
          }
          memcpy(t + 4 * nt++, tv, sizeof tv);
        }
      }
  free(id);
  *vo = v, *nvo = nv, *to = t, *nto = nt;
}

/* L: a 4 x 4 x 2 block less its x, y >= 2 quarter (a concave edge). */
static int mask_l(int i, int j, int k) { return k < 2 && !(i >= 2 && j >= 2); }
/* A block 5 x 3 x 2 with a slot one cell wide, two deep (x = 2, y >= 1). */
static int mask_slot(int i, int j, int k) { return i < 5 && j < 3 && k < 2 && !(i == 2 && j >= 1); }
/* Two 2^3 blocks that share only the vertex (2, 2, 2). */
static int mask_bowtie(int i, int j, int k) { return (i < 2 && j < 2 && k < 2) || (i >= 2 && j >= 2 && k >= 2); }

static ce_errno tetmesh(const double *v, int32_t nv, const int32_t *t, int32_t nt, double margin, ce_geometry **g,
                        ce_error *err) {
  ce_props pr = ce_test_props(CE_COMPLIANT, E, 0.05);
  pr.margin = margin;
  return ce_geometry_from_tetmesh(v, nv, t, nt, NULL, &pr, g, err);
}

static ce_geometry *voxel_geometry(voxel_mask mask, int n, double h, double margin) {
  double *v;
  int32_t *t, nv, nt;
  voxels(n, h, mask, &v, &nv, &t, &nt);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(tetmesh(v, nv, t, nt, margin, &g, &err), CE_OK, "%s", err.message);
  free(v);
  free(t);
  return g;
}

/* A closed surface (OBJ text) tetrahedralised at edge length a. */
static ce_errno surface(char *txt, size_t len, double a, double margin, ce_geometry **g, ce_error *err) {
  ce_mesh_data m;
  cr_assert_eq(ce_mesh_parse(txt, len, CE_MESH_OBJ, 0, &m, err), CE_OK, "%s", err->message);
  free(txt);
  ce_props pr = ce_test_props(CE_COMPLIANT, E, a);
  pr.margin = margin;
  ce_errno e = ce_geometry_from_surface(m.vertices, m.nv, m.tris, m.ntri, &pr, NULL, g, NULL, err);
  ce_mesh_data_free(&m);
  return e;
}

static ce_geometry *sphere_mesh(double R, double a, double margin) {
  size_t len;
  char *txt = ce_test_obj_sphere(R, 16, 32, &len);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(surface(txt, len, a, margin, &g, &err), CE_OK, "%s", err.message);
  return g;
}

/* ---- the inflated copy ------------------------------------------------ */

/* The copies of a layer prism's corners a (sorted) from its three tets
 * (ce_margin.c: {a0, a1, a2, o0}, {a1, a2, o0, o1}, {a2, o0, o1, o2}, the
 * first two entries swapped where that orients them). */
static void prism_copies(const int32_t (*q)[4], const int32_t a[3], int32_t o[3]) {
  for (int j = 0; j < 3; j++) {
    const int32_t known[3] = {j >= 1 ? o[0] : a[0], j >= 2 ? o[1] : a[1], a[2]};
    o[j] = -1;
    for (int r = 0; r < 4; r++) {
      int32_t x = q[j][r], seen = 0;
      for (int s = 0; s < 3; s++) seen |= x == known[s] || x == a[s];
      if (!seen) o[j] = x;
    }
    cr_assert_geq(o[j], 0, "prism tet %d names its copy", j);
  }
}

/* Drake's check and the layer's: the copy keeps every original vertex,
 * tet and pressure, zero at every original boundary vertex; three layer
 * tets per boundary face (in their order), each of positive volume; every
 * outer vertex has p < 0; every original boundary face's plane moves out
 * by at least delta at each of its corners (to 1e-12), by delta exactly
 * at some; no corner moves more than 4 delta. Returns the largest
 * |o| / delta. */
static double check_inflated(const ce_geometry *g, double delta, const char *what) {
  const ce_geometry *in = g->inflated;
  cr_assert(in, "%s: an inflated copy", what);
  cr_assert_eq(g->margin, delta);
  const ce_tetmesh *m = &g->tet, *mi = &in->tet;
  cr_assert_eq(memcmp(mi->v, m->v, (size_t)m->nv * sizeof *m->v), 0, "%s: the original vertices", what);
  cr_assert_eq(memcmp(mi->p, m->p, (size_t)m->nv * sizeof *m->p), 0, "%s: the original field", what);
  cr_assert_eq(memcmp(mi->tet, m->tet, (size_t)m->nt * sizeof *m->tet), 0, "%s: the original tets", what);
  for (int32_t v = m->nv; v < mi->nv; v++) cr_assert_lt(mi->p[v], 0, "%s: outer vertex %d p = %g", what, v, mi->p[v]);
  for (int32_t t = m->nt; t < mi->nt; t++) {
    const int32_t *q = mi->tet[t];
    double v6 = ce_dot(ce_sub(mi->v[q[1]], mi->v[q[0]]),
                       ce_cross(ce_sub(mi->v[q[2]], mi->v[q[0]]), ce_sub(mi->v[q[3]], mi->v[q[0]])));
    cr_assert_gt(v6, 0, "%s: layer tet %d has 6V = %g", what, t, v6);
  }
  double stretch = 0;
  int exact = 0;
  int32_t f = 0;
  for (int32_t t = 0; t < m->nt; t++)
    for (int i = 0; i < 4; i++) {
      if (m->adj[t][i] >= 0) continue;
      int32_t a[3], o[3];
      for (int j = 0; j < 3; j++) {
        a[j] = m->tet[t][ce_tet_face_vertex[i][j]];
        cr_assert_eq(m->p[a[j]], 0.0, "%s: boundary vertex %d has p = %g", what, a[j], m->p[a[j]]);
      }
      ce_vec3 n = ce_normalize(ce_cross(ce_sub(m->v[a[1]], m->v[a[0]]), ce_sub(m->v[a[2]], m->v[a[0]])));
      for (int x = 0; x < 2; x++) /* sorted */
        for (int y = 0; y < 2 - x; y++)
          if (a[y] > a[y + 1]) {
            int32_t s = a[y];
            a[y] = a[y + 1];
            a[y + 1] = s;
          }
      cr_assert_leq(m->nt + 3 * (f + 1), mi->nt, "%s: three layer tets per boundary face", what);
      prism_copies((const int32_t(*)[4])mi->tet + m->nt + 3 * f, a, o);
      f++;
      for (int j = 0; j < 3; j++) {
        cr_assert_geq(o[j], m->nv, "%s: a copy, not an original vertex", what);
        ce_vec3 d3 = ce_sub(mi->v[o[j]], m->v[a[j]]);
        double d = ce_dot(n, d3);
        cr_assert_geq(d, delta * (1 - 1e-12), "%s: face plane at vertex %d moved %.17g, not >= %g", what, a[j], d,
                      delta);
        exact += d <= delta * (1 + 1e-9);
        stretch = fmax(stretch, ce_norm(d3) / delta);
      }
    }
  cr_assert_eq(mi->nt, m->nt + 3 * f, "%s: three layer tets per boundary face", what);
  cr_assert_gt(exact, 0, "%s: some face moved by delta exactly", what);
  cr_assert_leq(stretch, 4.0, "%s", what);
  return stretch;
}

Test(margin_mesh, user_tet_meshes) {
  /* a Kuhn box: the box grown by delta on every side, exactly */
  double *v;
  int32_t *t, nv, nt;
  ce_test_kuhn_cube(3, 0.02, 7, &v, &nv, &t, &nt);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(tetmesh(v, nv, t, nt, 0.05, &g, &err), CE_OK, "%s", err.message);
  check_inflated(g, 0.05, "kuhn box");
  const ce_tetmesh *mi = &g->inflated->tet;
  for (int32_t i = g->tet.nv; i < mi->nv; i++) {
    ce_vec3 x = mi->v[i];
    double d = fmax(fmax(fabs(x.x - 0.5), fabs(x.y - 0.5)), fabs(x.z - 0.5)) - 0.5;
    cr_assert(fabs(d - 0.05) <= 1e-12, "outer vertex %d at %.17g outside the box, not 0.05", i, d);
  }
  ce_geometry_free(g);
  free(v);
  free(t);
  /* non-convex: the L (a concave edge: x' where the moved planes meet) */
  g = voxel_geometry(mask_l, 4, 0.05, 0.02);
  cr_log_info("voxel L: largest |o| = %.4g delta", check_inflated(g, 0.02, "voxel L"));
  mi = &g->inflated->tet;
  int concave = 0;
  for (int32_t i = g->tet.nv; i < mi->nv; i++) /* the concave edge x = y = 0.1 moves to 0.12 */
    if (fabs(mi->v[i].x - 0.12) < 1e-12 && fabs(mi->v[i].y - 0.12) < 1e-12) concave++;
  cr_assert_geq(concave, 3, "the concave edge's copies at (0.12, 0.12)");
  ce_geometry_free(g);
  /* the slot, with a margin under half its width */
  g = voxel_geometry(mask_slot, 5, 0.05, 0.02);
  check_inflated(g, 0.02, "voxel slot");
  ce_geometry_free(g);
}

Test(margin_mesh, tetrahedralised_surfaces_ellipsoid_convex) {
  ce_geometry *g = sphere_mesh(0.1, 0.02, 0.01);
  cr_log_info("tetrahedralised sphere: largest |o| = %.4g delta", check_inflated(g, 0.01, "sphere surface"));
  ce_geometry_free(g);
  size_t len;
  ce_error err;
  char *txt = ce_test_obj_torus(0.1, 0.04, 48, 24, &len);
  cr_assert_eq(surface(txt, len, 0.01, 0.005, &g, &err), CE_OK, "%s", err.message);
  cr_log_info("tetrahedralised torus: largest |o| = %.4g delta", check_inflated(g, 0.005, "torus surface"));
  ce_geometry_free(g);
  txt = ce_test_obj_lblock(0.5, &len);
  cr_assert_eq(surface(txt, len, 0.125, 0.05, &g, &err), CE_OK, "%s", err.message);
  cr_log_info("tetrahedralised L block: largest |o| = %.4g delta", check_inflated(g, 0.05, "L block surface"));
  ce_geometry_free(g);
  /* the ellipsoid and a convex set (ce_geometry_from_shape) */
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_ELLIPSOID;
  s.size = ce_v3(0.1, 0.07, 0.05);
  ce_props pr = ce_test_props(CE_COMPLIANT, E, 0.02);
  pr.margin = 0.01;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_OK, "%s", err.message);
  check_inflated(g, 0.01, "ellipsoid");
  ce_geometry_free(g);
  double pts[3 * 60];
  ce_test_fibonacci_sphere(60, 0.1, ce_v3(0, 0, 0), pts);
  s.type = CE_SHAPE_CONVEX;
  s.points = pts;
  s.npoints = 60;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_OK, "%s", err.message);
  check_inflated(g, 0.01, "convex");
  ce_geometry_free(g);
}

/* ---- where the shared offset cannot work -------------------------------- */

static int32_t vertex_at(const double *v, int32_t nv, ce_vec3 x) {
  for (int32_t i = 0; i < nv; i++)
    if (ce_norm(ce_sub(ce_v3(v[3 * i], v[3 * i + 1], v[3 * i + 2]), x)) < 1e-12) return i;
  cr_assert_fail("no vertex at (%g, %g, %g)", x.x, x.y, x.z);
  return -1;
}

/* The copies of original vertex i in g's inflated copy. */
static int copies_of(const ce_geometry *g, int32_t i) {
  const ce_tetmesh *mi = &g->inflated->tet;
  int k = 0;
  for (int32_t c = g->tet.nv; c < mi->nv; c++) {
    ce_vec3 d = ce_sub(mi->v[c], g->tet.v[i]);
    k += ce_norm(d) <= 4 * g->margin * (1 + 1e-12) && ce_norm(d) >= g->margin * (1 - 1e-12) && c >= g->tet.nv;
  }
  return k;
}

/* A pinched vertex (two fans), a needle's tip (no shared offset within
 * 4 delta: split, one copy per face) and a slot narrower than twice the
 * margin (its floor's prism folds with the shared copies: a right prism):
 * every layer still valid, each face plane moved out by delta. */
Test(margin_mesh, split_vertices_and_right_prisms) {
  ce_geometry *g = NULL;
  ce_error err;
  double *v;
  int32_t *t, nv, nt;
  voxels(4, 0.05, mask_bowtie, &v, &nv, &t, &nt);
  cr_assert_eq(tetmesh(v, nv, t, nt, 0.01, &g, &err), CE_OK, "%s", err.message);
  check_inflated(g, 0.01, "bowtie");
  const int32_t pinch = vertex_at(v, nv, ce_v3(0.1, 0.1, 0.1));
  ce_vec3 x = g->tet.v[pinch];
  int corner = 0;
  for (int32_t c = g->tet.nv; c < g->inflated->tet.nv; c++) { /* one copy per block: (+-d, +-d, +-d) */
    ce_vec3 d = ce_sub(g->inflated->tet.v[c], x);
    corner += fabs(fabs(d.x) - 0.01) < 1e-12 && fabs(fabs(d.y) - 0.01) < 1e-12 && fabs(fabs(d.z) - 0.01) < 1e-12 &&
              d.x * d.y > 0 && d.y * d.z > 0;
  }
  cr_assert_eq(corner, 2, "the pinched vertex has a copy per block");
  cr_assert_eq(g->margin_split, 0);
  ce_geometry_free(g);
  free(v);
  free(t);
  /* the slot, 0.05 wide, with a margin of 0.03 */
  voxels(5, 0.05, mask_slot, &v, &nv, &t, &nt);
  cr_assert_eq(tetmesh(v, nv, t, nt, 0.024, &g, &err), CE_OK, "%s", err.message); /* just under */
  cr_assert_eq(g->margin_right, 0);
  ce_geometry_free(g);
  cr_assert_eq(tetmesh(v, nv, t, nt, 0.03, &g, &err), CE_OK, "%s", err.message);
  check_inflated(g, 0.03, "slot");
  cr_assert_gt(g->margin_right, 0, "the slot's floor: right prisms");
  cr_log_info("slot 0.05 wide, margin 0.03: %d right prisms", g->margin_right);
  ce_geometry_free(g);
  free(v);
  free(t);
  /* a needle: a pyramid 0.04 wide and 1 tall (apex half angle 1.1 deg),
   * tets from an inner point to its six boundary triangles */
  static const double pv[] = {-0.02, -0.02, 0, 0.02, -0.02, 0, 0.02, 0.02, 0, -0.02, 0.02, 0, 0, 0, 1, 0, 0, 0.1};
  static const int32_t pt[] = {5, 0, 2, 1, 5, 0, 3, 2, 5, 0, 1, 4, 5, 1, 2, 4, 5, 2, 3, 4, 5, 3, 0, 4};
  int32_t tets[24];
  memcpy(tets, pt, sizeof tets);
  for (int q = 0; q < 6; q++) { /* orient positively */
    ce_vec3 y[4];
    for (int r = 0; r < 4; r++)
      y[r] = ce_v3(pv[3 * tets[4 * q + r]], pv[3 * tets[4 * q + r] + 1], pv[3 * tets[4 * q + r] + 2]);
    if (ce_dot(ce_sub(y[1], y[0]), ce_cross(ce_sub(y[2], y[0]), ce_sub(y[3], y[0]))) < 0) {
      int32_t s = tets[4 * q];
      tets[4 * q] = tets[4 * q + 1];
      tets[4 * q + 1] = s;
    }
  }
  cr_assert_eq(tetmesh(pv, 6, tets, 6, 0.001, &g, &err), CE_OK, "%s", err.message);
  check_inflated(g, 0.001, "needle");
  cr_assert_eq(g->margin_split, 1, "the tip splits");
  cr_assert_eq(copies_of(g, 4), 4, "the tip: one copy per side");
  ce_geometry_free(g);
}

/* No tet mesh, or rigid: refused, naming the margin. */
Test(margin_mesh, refused_without_a_tet_mesh) {
  ce_geometry *g = NULL;
  ce_error err;
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = CE_SHAPE_HALFSPACE;
  ce_props pr = ce_test_props(CE_COMPLIANT, E, 0.05);
  pr.slab_thickness = 0.1;
  pr.margin = 0.01;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "margin") && strstr(err.message, "compliant half space"), "%s", err.message);
  static const double pv[] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  pr = ce_test_props(CE_RIGID, 0, 0.05);
  pr.margin = 0.01;
  static const int32_t tri[] = {0, 2, 1, 0, 1, 3, 1, 2, 3, 2, 0, 3};
  cr_assert_eq(ce_geometry_from_trimesh(pv, 4, tri, 4, 1, &pr, &g, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "margin") && strstr(err.message, "rigid"), "%s", err.message);
  double z[4] = {0, 0, 0, 0};
  cr_assert_eq(ce_geometry_from_heightfield(z, 2, 2, 1, 1, ce_v3(0, 0, 0), 1, &pr, &g, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "margin"), "%s", err.message);
  static const int32_t tet[] = {0, 1, 2, 3};
  cr_assert_eq(tetmesh(pv, 4, tet, 1, NAN, &g, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "margin must be finite"), "%s", err.message);
  cr_assert_null(g);
}

/* ---- contact ------------------------------------------------------------ */

static ce_geometry *rigid_halfspace(void) {
  ce_shape s = {.type = CE_SHAPE_HALFSPACE};
  ce_props pr = ce_test_props(CE_RIGID, 0, 0.05);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_shape(&s, &pr, &g, &err), CE_OK, "%s", err.message);
  return g;
}

static ce_result query(const ce_geometry *ga, ce_quat q, ce_vec3 c, const ce_geometry *gb) {
  ce_body a = ce_test_body(ga, q, c), b = ce_test_body(gb, ce_quat_identity(), ce_v3(0, 0, 0));
  a.V_WB.v = ce_v3(0.1, 0, -0.05);
  a.material.dissipation = 2;
  a.material.friction = 0.3;
  return ce_test_contact(&a, &b, NULL, arena);
}

/* In contact, a margin changes nothing for meshes either: the contact is
 * computed on the original geometry, so the wrench is the same bit for bit
 * (a tetrahedralised sphere and the voxel L, on a plane and on a
 * compliant sphere, random poses). */
Test(margin_mesh, same_force_with_and_without) {
  ce_geometry *p = rigid_halfspace(), *o = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.1, ce_v3(0, 0, 0), 0.03);
  ce_geometry *g0[2] = {sphere_mesh(0.1, 0.02, 0), voxel_geometry(mask_l, 4, 0.05, 0)};
  ce_geometry *g1[2] = {sphere_mesh(0.1, 0.02, 0.01), voxel_geometry(mask_l, 4, 0.05, 0.01)};
  uint64_t rng = 11;
  int touching = 0;
  double worst = 0;
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 12; i++) {
      ce_quat q = ce_test_rand_quat(&rng);
      ce_vec3 c = ce_v3(0, 0, 0.05 + 0.04 * ce_test_rand(&rng));
      const ce_geometry *other = i & 1 ? o : p;
      if (i & 1) c = ce_add(c, ce_v3(0, 0, 0.1));
      ce_result r0 = query(g0[k], q, c, other);
      ce_wrench w0 = r0.wrench_a;
      ce_result r1 = query(g1[k], q, c, other);
      if (r0.status != CE_CONTACT_SURFACE) { /* apart: apart or speculative, no force */
        cr_assert(r1.status == r0.status || (r0.status == CE_CONTACT_NONE && r1.status == CE_CONTACT_SPECULATIVE),
                  "mesh %d pose %d: status %d, %d", k, i, r0.status, r1.status);
        cr_assert_eq(ce_norm(r1.wrench_a.force), 0.0);
        continue;
      }
      cr_assert_eq(r1.status, CE_CONTACT_SURFACE, "mesh %d pose %d", k, i);
      touching++;
      cr_assert_eq(memcmp(&w0, &r1.wrench_a, sizeof w0), 0, "mesh %d pose %d", k, i);
      worst = fmax(worst, ce_norm(ce_sub(w0.force, r1.wrench_a.force)));
    }
  cr_assert_geq(touching, 12);
  cr_log_info("meshes in contact with and without a margin: %d poses, largest force difference %g N", touching, worst);
  for (int k = 0; k < 2; k++) {
    ce_geometry_free(g0[k]);
    ce_geometry_free(g1[k]);
  }
  ce_geometry_free(p);
  ce_geometry_free(o);
}

/* A tetrahedralised sphere nearing a plane: apart while its inflated
 * copy's lowest point is above the plane, speculative from there (a gap of
 * delta times the lowest copy's offset) with its separation near the gap,
 * touching (first positive force) at gap 0. */
Test(margin_mesh, mesh_approaching_a_plane) {
  const double delta = 0.01;
  ce_geometry *s = sphere_mesh(0.1, 0.02, delta), *p = rigid_halfspace();
  double zmin = INFINITY, zmin_out = INFINITY;
  for (int32_t i = 0; i < s->tet.nv; i++) zmin = fmin(zmin, s->tet.v[i].z);
  for (int32_t i = s->tet.nv; i < s->inflated->tet.nv; i++) zmin_out = fmin(zmin_out, s->inflated->tet.v[i].z);
  const double reach = zmin - zmin_out; /* how far below the mesh the layer reaches */
  cr_assert(reach >= delta * (1 - 1e-12) && reach <= 1.1 * delta, "the layer reaches %g below", reach);
  double worst = 0, worst_abs = 0;
  int spec = 0;
  for (int i = 0; i <= 60; i++) {
    double gap = 1.5 * delta - 0.00025 * i;
    ce_result r = query(s, ce_quat_identity(), ce_v3(0, 0, gap - zmin), p);
    if (fabs(gap - reach) <= 1e-9) continue;
    if (gap > reach) {
      cr_assert_eq(r.status, CE_CONTACT_NONE, "gap %g: apart beyond the layer (status %d)", gap, r.status);
    } else if (gap > 1e-9) {
      cr_assert_eq(r.status, CE_CONTACT_SPECULATIVE, "gap %g: speculative (status %d)", gap, r.status);
      cr_assert_eq(ce_norm(r.wrench_a.force), 0.0);
      cr_assert_gt(r.speculative.stiffness, 0);
      cr_assert_gt(r.speculative.normal.z, 0.9);
      double e = fabs(r.speculative.separation - gap);
      worst = fmax(worst, e / gap);
      worst_abs = fmax(worst_abs, e);
      cr_assert_leq(e, 0.02 * gap + 1e-9, "gap %g: separation %g", gap, r.speculative.separation);
      spec++;
    } else if (gap < -1e-9) {
      cr_assert_eq(r.status, CE_CONTACT_SURFACE, "gap %g", gap);
      cr_assert_gt(r.wrench_a.force.z, 0);
    }
  }
  cr_assert_geq(spec, 30);
  cr_log_info("tetrahedralised sphere on a plane: layer reach %.4g delta; separation within %.3g of the gap (%.3g m)",
              reach / delta, worst, worst_abs);
  ce_result up = query(s, ce_quat_identity(), ce_v3(0, 0, 1e-7 - zmin), p);
  ce_result down = query(s, ce_quat_identity(), ce_v3(0, 0, -1e-7 - zmin), p);
  cr_assert_eq(up.status, CE_CONTACT_SPECULATIVE);
  cr_assert(up.speculative.separation < 1e-6, "%g", up.speculative.separation);
  cr_assert_eq(down.status, CE_CONTACT_SURFACE);
  cr_assert_gt(down.wrench_a.force.z, 0);
  ce_geometry_free(s);
  ce_geometry_free(p);
}
