/* test_laplace.c — pressure fields for arbitrary tet meshes (ce_laplace.c):
 * the Laplace field on a spherical shell against the exact harmonic
 * eps(r) = (1/r - 1/R) / (1/r0 - 1/R) under refinement, the default core,
 * the distance and user fields through ce_geometry_from_tetmesh_field, and
 * the errors. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

/* A ball of radius R whose vertices lie on the spheres r_k = r0 + k (R -
 * r0) / nr (k = 0..nr) over a UV sphere of n bands and 2n segments, plus
 * the centre: prisms between layers split into 3 tets by the
 * smallest-index rule (conforming), the inner layer coned to the centre. */
typedef struct mesh {
  double *v;
  int32_t nv, nt;
  int32_t *t;
} mesh;

static void add_tet(mesh *m, int32_t a, int32_t b, int32_t c, int32_t d) {
  ce_vec3 x[4];
  int32_t id[4] = {a, b, c, d};
  for (int r = 0; r < 4; r++) x[r] = ce_v3(m->v[3 * id[r]], m->v[3 * id[r] + 1], m->v[3 * id[r] + 2]);
  double v6 = ce_dot(ce_sub(x[1], x[0]), ce_cross(ce_sub(x[2], x[0]), ce_sub(x[3], x[0])));
  cr_assert(v6 != 0);
  if (v6 < 0) {
    id[2] = d;
    id[3] = c;
  }
  memcpy(&m->t[4 * m->nt], id, sizeof id);
  m->nt++;
}

static mesh shell_ball(int n, int nr, double r0, double R) {
  int nlon = 2 * n, ns = 2 + (n - 1) * nlon; /* vertices per sphere */
  int nf = 2 * nlon + 2 * (n - 2) * nlon;   /* triangles per sphere */
  mesh m;
  m.nv = 1 + (nr + 1) * ns;
  m.v = calloc((size_t)m.nv * 3, sizeof *m.v);
  m.t = malloc((size_t)(nf * (3 * nr + 1)) * 4 * sizeof *m.t);
  m.nt = 0;
  int32_t(*tri)[3] = malloc((size_t)nf * sizeof *tri);
  /* unit sphere directions: 0 = north pole, 1.. rings, ns-1 = south pole */
  ce_vec3 *dir = malloc((size_t)ns * sizeof *dir);
  dir[0] = ce_v3(0, 0, 1);
  for (int i = 1; i < n; i++)
    for (int j = 0; j < nlon; j++) {
      double th = M_PI * i / n, ph = 2 * M_PI * j / nlon;
      dir[1 + (i - 1) * nlon + j] = ce_v3(sin(th) * cos(ph), sin(th) * sin(ph), cos(th));
    }
  dir[ns - 1] = ce_v3(0, 0, -1);
  int k = 0;
#define SID(i, j) (1 + ((i) - 1) * nlon + ((j) % nlon))
  for (int j = 0; j < nlon; j++) {
    tri[k][0] = 0, tri[k][1] = SID(1, j), tri[k][2] = SID(1, j + 1), k++;
    tri[k][0] = ns - 1, tri[k][1] = SID(n - 1, j + 1), tri[k][2] = SID(n - 1, j), k++;
  }
  for (int i = 1; i < n - 1; i++)
    for (int j = 0; j < nlon; j++) {
      tri[k][0] = SID(i, j), tri[k][1] = SID(i + 1, j), tri[k][2] = SID(i + 1, j + 1), k++;
      tri[k][0] = SID(i, j), tri[k][1] = SID(i + 1, j + 1), tri[k][2] = SID(i, j + 1), k++;
    }
#undef SID
  cr_assert_eq(k, nf);
  for (int l = 0; l <= nr; l++) {
    double r = r0 + (R - r0) * l / nr;
    for (int i = 0; i < ns; i++) {
      ce_vec3 p = ce_scale(dir[i], r);
      int32_t id = 1 + l * ns + i;
      m.v[3 * id] = p.x, m.v[3 * id + 1] = p.y, m.v[3 * id + 2] = p.z;
    }
  }
  for (int f = 0; f < nf; f++) {
    int32_t s[3] = {tri[f][0], tri[f][1], tri[f][2]};
    /* sort by index: the prism split depends on the order only */
    for (int a = 0; a < 3; a++)
      for (int b = a + 1; b < 3; b++)
        if (s[b] < s[a]) {
          int32_t x = s[a];
          s[a] = s[b];
          s[b] = x;
        }
    add_tet(&m, 0, 1 + s[0], 1 + s[1], 1 + s[2]);
    for (int l = 0; l < nr; l++) {
      int32_t lo = 1 + l * ns, hi = 1 + (l + 1) * ns;
      add_tet(&m, lo + s[0], lo + s[1], lo + s[2], hi + s[0]);
      add_tet(&m, lo + s[1], lo + s[2], hi + s[0], hi + s[1]);
      add_tet(&m, lo + s[2], hi + s[0], hi + s[1], hi + s[2]);
    }
  }
  free(tri);
  free(dir);
  return m;
}

static double shell_error(int n, double *maxerr, ce_field_report *rep) {
  const double r0 = 0.3, R = 1;
  int nr = n / 2;
  mesh m = shell_ball(n, nr, r0, R);
  double *eps = malloc((size_t)m.nv * sizeof *eps);
  ce_field_options o;
  memset(&o, 0, sizeof o);
  o.kind = CE_FIELD_LAPLACE;
  /* the inner sphere and the centre: deeper than the second layer */
  o.core_depth = (R - r0) - 0.5 * (R - r0) / nr;
  ce_error err;
  cr_assert_eq(ce_tetmesh_laplace(m.v, m.nv, m.t, m.nt, &o, eps, rep, &err), CE_OK, "%s", err.message);
  int ns = 2 + (n - 1) * 2 * n;
  cr_assert_eq(rep->core_vertices, 1 + ns, "core %d", rep->core_vertices);
  cr_assert_eq(rep->boundary_vertices, ns);
  double s2 = 0, mx = 0;
  int cnt = 0;
  for (int32_t i = 0; i < m.nv; i++) {
    double r = sqrt(m.v[3 * i] * m.v[3 * i] + m.v[3 * i + 1] * m.v[3 * i + 1] + m.v[3 * i + 2] * m.v[3 * i + 2]);
    cr_assert(eps[i] >= 0 && eps[i] <= 1);
    if (r <= r0 + 1e-12) {
      cr_assert_eq(eps[i], 1.0);
      continue;
    }
    if (r >= R - 1e-12) {
      cr_assert_eq(eps[i], 0.0);
      continue;
    }
    double ex = (1 / r - 1 / R) / (1 / r0 - 1 / R), d = eps[i] - ex;
    s2 += d * d;
    mx = fmax(mx, fabs(d));
    cnt++;
  }
  free(eps);
  free(m.v);
  free(m.t);
  *maxerr = mx;
  return sqrt(s2 / cnt);
}

Test(laplace, spherical_shell_matches_harmonic_and_converges) {
  double m1, m2, m3;
  ce_field_report r1, r2, r3;
  double e1 = shell_error(6, &m1, &r1), e2 = shell_error(12, &m2, &r2), e3 = shell_error(24, &m3, &r3);
  cr_log_info("shell L2 %.4g %.4g %.4g  max %.4g %.4g %.4g  iterations %d %d %d", e1, e2, e3, m1, m2, m3, r1.iterations,
              r2.iterations, r3.iterations);
  cr_assert_lt(e2, e1);
  cr_assert_lt(e3, e2);
  cr_assert_lt(e3, 0.5 * e1, "L2 %g -> %g", e1, e3);
  cr_assert_lt(e3, 0.002, "finest L2 error %g", e3); /* measured 0.0129, 0.0037, 0.0010 */
  cr_assert_lt(r3.residual, 1e-10);
}

static mesh ball_from_surface(double a) {
  size_t len;
  char *txt = ce_test_obj_sphere(1, 24, 48, &len);
  ce_mesh_data s;
  cr_assert_eq(ce_mesh_parse(txt, len, CE_MESH_OBJ, 0, &s, NULL), CE_OK);
  free(txt);
  ce_surface_build_options o;
  ce_surface_build_options_default(&o);
  o.edge_length = a;
  mesh m;
  cr_assert_eq(ce_tetrahedralize_surface(s.vertices, s.nv, s.tris, s.ntri, &o, &m.v, &m.nv, &m.t, &m.nt, NULL, NULL),
               CE_OK);
  ce_mesh_data_free(&s);
  return m;
}

Test(laplace, default_core_and_field_kinds) {
  mesh m = ball_from_surface(0.2);
  ce_props props = ce_test_props(CE_COMPLIANT, 3e4, 0.2);
  ce_field_options o;
  memset(&o, 0, sizeof o);
  ce_field_report rep;
  ce_error err;
  double *eps = malloc((size_t)m.nv * sizeof *eps);
  cr_assert_eq(ce_tetmesh_laplace(m.v, m.nv, m.t, m.nt, &o, eps, &rep, &err), CE_OK, "%s", err.message);
  cr_assert_gt(rep.core_vertices, 0);
  cr_assert_gt(rep.boundary_vertices, 100);
  /* harmonic: every free vertex lies strictly between 0 and 1, and eps
   * falls with the radius on average (monotone shells) */
  int ones = 0, zeros = 0;
  double inner = 0, outer = 0;
  int ni = 0, no = 0;
  for (int32_t i = 0; i < m.nv; i++) {
    ones += eps[i] == 1;
    zeros += eps[i] == 0;
    double r = sqrt(m.v[3 * i] * m.v[3 * i] + m.v[3 * i + 1] * m.v[3 * i + 1] + m.v[3 * i + 2] * m.v[3 * i + 2]);
    if (r > 0.3 && r < 0.5) inner += eps[i], ni++;
    if (r > 0.7 && r < 0.9) outer += eps[i], no++;
  }
  cr_assert_eq(ones, rep.core_vertices);
  cr_assert_eq(zeros, rep.boundary_vertices);
  cr_assert_gt(inner / ni, outer / no);
  free(eps);

  /* LAPLACE through the geometry: p = E eps */
  ce_geometry *g = NULL;
  cr_assert_eq(ce_geometry_from_tetmesh_field(m.v, m.nv, m.t, m.nt, &o, &props, &g, &rep, &err), CE_OK, "%s",
               err.message);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert_eq(info.max_pressure, 3e4);
  cr_assert_eq(info.min_pressure, 0);
  ce_geometry_free(g);

  /* DISTANCE = the default field of ce_geometry_from_tetmesh */
  o.kind = CE_FIELD_DISTANCE;
  ce_geometry *g2 = NULL;
  cr_assert_eq(ce_geometry_from_tetmesh_field(m.v, m.nv, m.t, m.nt, &o, &props, &g, &rep, &err), CE_OK);
  cr_assert_eq(ce_geometry_from_tetmesh(m.v, m.nv, m.t, m.nt, NULL, &props, &g2, &err), CE_OK);
  cr_assert_eq(memcmp(g->tet.p, g2->tet.p, (size_t)m.nv * sizeof(double)), 0);

  /* USER: accepted as is when valid; the distance values are valid */
  o.kind = CE_FIELD_USER;
  double *user = malloc((size_t)m.nv * sizeof *user);
  memcpy(user, g2->tet.p, (size_t)m.nv * sizeof *user);
  o.user_field = user;
  ce_geometry *g3 = NULL;
  cr_assert_eq(ce_geometry_from_tetmesh_field(m.v, m.nv, m.t, m.nt, &o, &props, &g3, &rep, &err), CE_OK);
  cr_assert_eq(memcmp(g3->tet.p, user, (size_t)m.nv * sizeof(double)), 0);
  ce_geometry_free(g3);
  /* nonzero on the boundary, negative, NaN: refused */
  int32_t bnd = -1, in = -1;
  for (int32_t i = 0; i < m.nv && (bnd < 0 || in < 0); i++) {
    if (user[i] == 0 && bnd < 0) bnd = i;
    if (user[i] > 0 && in < 0) in = i;
  }
  user[bnd] = 1;
  cr_assert_eq(ce_geometry_from_tetmesh_field(m.v, m.nv, m.t, m.nt, &o, &props, &g3, &rep, &err), CE_EFIELD);
  cr_assert(strstr(err.message, "boundary"), "%s", err.message);
  user[bnd] = 0;
  user[in] = -1;
  cr_assert_eq(ce_geometry_from_tetmesh_field(m.v, m.nv, m.t, m.nt, &o, &props, &g3, &rep, &err), CE_EFIELD);
  user[in] = NAN;
  cr_assert_eq(ce_geometry_from_tetmesh_field(m.v, m.nv, m.t, m.nt, &o, &props, &g3, &rep, &err), CE_EFIELD);
  cr_assert_null(g3);
  o.user_field = NULL;
  cr_assert_eq(ce_geometry_from_tetmesh_field(m.v, m.nv, m.t, m.nt, &o, &props, &g3, &rep, &err), CE_EINVAL);
  free(user);
  ce_geometry_free(g);
  ce_geometry_free(g2);
  free(m.v);
  free(m.t);
}

Test(laplace, errors) {
  mesh m = ball_from_surface(0.3);
  double *eps = malloc((size_t)m.nv * sizeof *eps);
  ce_field_options o;
  memset(&o, 0, sizeof o);
  ce_error err;
  o.core_depth = 5; /* deeper than the ball */
  cr_assert_eq(ce_tetmesh_laplace(m.v, m.nv, m.t, m.nt, &o, eps, NULL, &err), CE_EFIELD);
  cr_assert(strstr(err.message, "no vertex at depth >= 5"), "%s", err.message);
  o.core_depth = NAN;
  cr_assert_eq(ce_tetmesh_laplace(m.v, m.nv, m.t, m.nt, &o, eps, NULL, &err), CE_EINVAL);
  o.core_depth = 0;
  /* an inverted tet is named */
  int32_t x = m.t[2];
  m.t[2] = m.t[3];
  m.t[3] = x;
  cr_assert_eq(ce_tetmesh_laplace(m.v, m.nv, m.t, m.nt, &o, eps, NULL, &err), CE_EINVERTED);
  cr_assert(strstr(err.message, "tet 0"), "%s", err.message);
  m.t[3] = m.t[2];
  m.t[2] = x;
  m.t[5] = m.nv + 3;
  cr_assert_eq(ce_tetmesh_laplace(m.v, m.nv, m.t, m.nt, &o, eps, NULL, &err), CE_ERANGE);
  /* a single tet has no interior vertex */
  const double v1[12] = {0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1};
  const int32_t t1[4] = {0, 1, 2, 3};
  cr_assert_eq(ce_tetmesh_laplace(v1, 4, t1, 1, &o, eps, NULL, &err), CE_EFIELD);
  free(eps);
  free(m.v);
  free(m.t);
}

/* A progress callback that asks to stop at its k-th call (k = 0: never),
 * and records the stage of each call ('f' field, 'g' geometry) and the
 * field's last fraction. */
#define STOPPER_MAX 1024
typedef struct stopper {
  int k, calls, after_stop, pcg_calls, field_calls;
  double last;
  char stage[STOPPER_MAX];
} stopper;

static int stop_at(void *user, double f, const char *stage) {
  stopper *s = user;
  const int field = strcmp(stage, "field") == 0;
  cr_assert(field || strcmp(stage, "geometry") == 0, "stage %s", stage);
  cr_assert(f >= 0 && f <= 1, "fraction %g", f);
  if (s->k > 0 && s->calls >= s->k) s->after_stop++; /* called again after asking to stop */
  if (s->calls < STOPPER_MAX) s->stage[s->calls] = field ? 'f' : 'g';
  s->calls++;
  if (field) {
    s->field_calls++;
    if (f > 0.15 && f < 0.95) s->pcg_calls++;
    s->last = f;
  }
  return s->k > 0 && s->calls == s->k;
}

Test(laplace, a_callback_cancels_the_solve_at_every_progress_point) {
  /* big enough that PCG reaches its work-based progress points */
  mesh m = ball_from_surface(0.1);
  ce_props props = ce_test_props(CE_COMPLIANT, 3e4, 0.1);
  ce_field_options o;
  memset(&o, 0, sizeof o);
  o.progress = stop_at;
  stopper s;
  memset(&s, 0, sizeof s);
  o.progress_user = &s;
  ce_field_report rep;
  ce_error err;
  ce_geometry *g = NULL;
  /* a callback that returns 0 builds as before */
  cr_assert_eq(ce_geometry_from_tetmesh_field(m.v, m.nv, m.t, m.nt, &o, &props, &g, &rep, &err), CE_OK, "%s",
               err.message);
  cr_assert_not_null(g);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert_eq(info.max_pressure, 3e4);
  cr_assert_eq(info.min_pressure, 0);
  cr_assert_lt(rep.residual, 1e-9);
  ce_geometry_free(g);
  const int total = s.calls, field_calls = s.field_calls;
  cr_assert_lt(total, STOPPER_MAX);
  char stages[STOPPER_MAX];
  memcpy(stages, s.stage, sizeof stages);
  cr_log_info("%d vertices, %d tets, %d iterations, %d progress calls (%d field)", (int)m.nv, (int)m.nt,
              rep.iterations, total, field_calls);
  /* the field's: 0 (before the temporary geometry), 0.05, 0.15, PCG points,
   * 0.95, 1.0; the two geometry builds' (temporary and final) between
   * them: at least 0, 0.1, 0.2, 0.5 and 1 of each */
  cr_assert_geq(s.pcg_calls, 2, "PCG reports every ~4M entries of work (%d iterations, %d calls)", rep.iterations,
               s.pcg_calls);
  cr_assert_eq(field_calls, 5 + s.pcg_calls);
  cr_assert_geq(total - field_calls, 10);
  cr_assert_eq(stages[0], 'f');
  cr_assert_eq(stages[1], 'g', "the temporary geometry follows the first report");
  cr_assert_eq(stages[total - 2], 'g', "the final geometry precedes the last report");
  cr_assert_eq(s.last, 1.0);
  /* asked to stop at each of the field's and at the first and last of each
   * geometry build's: CE_ECANCELED at once, with the stage's message, no
   * geometry (ASan checks that nothing leaks) */
  for (int k = 1; k <= total; k++) {
    const char st = stages[k - 1];
    if (st != 'f' && stages[k - 2] == st && stages[k] == st) continue;
    memset(&s, 0, sizeof s);
    s.k = k;
    g = (ce_geometry *)&s; /* must be overwritten with NULL */
    memset(&err, 0, sizeof err);
    cr_assert_eq(ce_geometry_from_tetmesh_field(m.v, m.nv, m.t, m.nt, &o, &props, &g, &rep, &err), CE_ECANCELED,
                 "stop at call %d of %d", k, total);
    cr_assert_null(g);
    cr_assert_eq(err.code, CE_ECANCELED);
    cr_assert_str_eq(err.message, stages[k - 1] == 'f' ? "laplace: build cancelled" : "geometry: build cancelled");
    cr_assert_eq(s.calls, k, "no progress after the stop (call %d)", k);
    cr_assert_eq(s.after_stop, 0);
  }
  cr_assert_str_eq(ce_strerror(CE_ECANCELED), "build cancelled");
  cr_assert_str_eq(ce_errname(CE_ECANCELED), "CE_ECANCELED");
  /* the bare solve too */
  double *eps = malloc((size_t)m.nv * sizeof *eps);
  memset(&s, 0, sizeof s);
  /* field 0, the temporary geometry, 0.05, then stop at 0.15 */
  s.k = (int)(strchr(stages + 1, 'f') - stages) + 2;
  cr_assert_eq(stages[s.k - 1], 'f');
  cr_assert_eq(ce_tetmesh_laplace(m.v, m.nv, m.t, m.nt, &o, eps, &rep, &err), CE_ECANCELED);
  cr_assert_eq(s.last, 0.15);
  free(eps);
  free(m.v);
  free(m.t);
}
