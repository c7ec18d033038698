/* tbar — the T-shaped bar of Xie & Chakraborty ("Modeling and prediction of
 * rigid body motion with planar non-convex contact", §5.2) as a remote
 * simulator: a rigid T-shaped plate lying on the ground is tipped by applied
 * torques onto two of its corners, falls back flat, then slides and turns.
 * The program integrates the 6-DOF motion itself and asks contactd for the
 * contact every step; its contact with the ground is one non-convex patch
 * when flat, and two small patches (the paper's two-point contact) or one
 * patch along an edge while it is tipped.
 *
 * Bar: thickness 0.05 m, so its centre of mass rests at 0.025 m as in the
 * paper's flat phases (§5.2); the plan view is a crossbar 0.30 x 0.06 m over
 * a stem 0.06 x 0.24 m (0.30 m long overall; the paper gives the plan
 * dimensions in its Fig. 1); uniform density, m = 2 kg, mu = 0.22 (the
 * paper's values). Its inertia is that of the two boxes about the common
 * centre of mass.
 *
 * Contact: the bar is a rigid closed triangle mesh (both faces cut in 2 cm
 * cells, so the friction under turning is integrated finely) sent as OBJ
 * bytes; the ground is a compliant half space, E = 1e7 Pa over a 0.1 m slab,
 * so p = E d / 0.1 at depth d. Flat, the bottom face (area A = 0.0324 m^2)
 * gives k = E A / 0.1 = 3.24e6 N/m, a static penetration
 * delta_s = m g / k = 6.1 um and a normal mode of sqrt(k/m) = 1270 rad/s.
 * Hunt-Crossley dissipation 20 s/m (nearly plastic impacts, as the paper
 * assumes, at the ~0.3 m/s of a falling corner); regularised Coulomb
 * friction with stiction tolerance 1e-3 m/s.
 *
 * Integration: semi-implicit Euler at dt = 1e-4 s (omega dt = 0.13 for the
 * flat mode; mu g dt / v_s = 0.02 for the friction damper).
 *
 * Load program (applied torques and forces at the centre of mass, after the
 * paper's phases T1-T3):
 *   T1 [0, 1.5) s: a torque of 3 N m for 0.15 s along I d, d a support line
 *      of the plan's convex hull through the right crossbar corner, lifts
 *      the far side; the bar pivots on that corner and the end of the stem
 *      (two patches across the T's notch), falls back, bounces for a few
 *      ms and lies flat.
 *   T2 [1.5, 3) s: the mirror image (tau_y reversed) on the left corner.
 *   T3 [3, 5] s: fx = 4 + 3 sin(2 pi t') N, fy = 3 cos(2 pi t') N,
 *      tau_z = 0.4 cos(pi t') N m (t' = t - 3): it slides and turns flat.
 *
 * Every step records the equivalent contact point (ECP, §3.1 of the paper:
 * here the centre of pressure of the whole contact) and the contact mode:
 * "none", or the contact patches each classified by its plan-view size as
 * "point" (diameter < 2.5 cm), "line" (width < 2.5 cm) or "surface", joined
 * by "+" ("point+point" is the paper's two-point contact across the T's
 * non-convex notch). Checks, each printed:
 *   1. the ECP lies in the convex hull of the contact surface (plan view,
 *      vertices of all its faces) every step, to 1e-9 m;
 *   2. in the flat phases (one patch covering the whole bottom face, for at
 *      least 0.1 s) the centre-of-mass height equals the flat rest height
 *      0.025 m - delta_s to within delta_s;
 *   3. no step penetrates deeper than the stated bound of 5 mm (the deepest
 *      corner below the ground plane: a corner contact carries the weight
 *      on a small area and sinks ~3 mm).
 *
 * usage: tbar [--addr A] [--duration T] [--steps N] [--dt DT] [--every N]
 *             [--csv FILE] [--publish NAME]
 * Writes the trajectory to --csv (default tbar.csv; "-" = none). Exit status
 * 1 if a check fails, 2 on usage errors, 3 if the daemon is unreachable. */
#include "rb_sim.h"

#define CELL 0.02 /* m; the plan view is in whole cells */
#define NX 15     /* crossbar length, cells */
#define NY 15     /* overall length, cells */
#define CB_Y 12   /* crossbar spans cells y in [CB_Y, NY) */
#define ST_X0 6   /* the stem spans cells x in [ST_X0, ST_X1) */
#define ST_X1 9

static const double M = 2.0, MU = 0.22, THICK = 0.05;
static const double E_GROUND = 1e7, SLAB = 0.1, DISS = 20.0, V_S = 1e-3;
static const double FLAT_SETTLE = 0.1; /* s of flat contact before checking the height */
static const double PEN_BOUND = 5e-3;  /* m */
static const double POINT_SIZE = 0.025; /* m, see "mode" above */

static const char USAGE[] = "usage: tbar [--addr A] [--duration T] [--steps N] [--dt DT] [--every N] "
                            "[--csv FILE] [--publish NAME]\n";

/* ---- geometry ----------------------------------------------------------- */

static int in_t(int i, int j) {
  return i >= 0 && i < NX && j >= 0 && j < NY && (j >= CB_Y || (i >= ST_X0 && i < ST_X1));
}

typedef struct tgeom {
  double cm[2];  /* centre of mass in the plan grid frame, m */
  double area;   /* plan area, m^2 */
  double Ib[3];  /* body inertia about the CM */
  double corner[8][2]; /* plan outline corners, CM frame */
} tgeom;

static void tbar_geometry(tgeom *g) {
  const double a1 = NX * CELL * (NY - CB_Y) * CELL, a2 = (ST_X1 - ST_X0) * CELL * CB_Y * CELL;
  const double m1 = M * a1 / (a1 + a2), m2 = M - m1;
  const double y1 = (CB_Y + NY) * CELL / 2, y2 = CB_Y * CELL / 2, xc = NX * CELL / 2;
  g->area = a1 + a2;
  g->cm[0] = xc;
  g->cm[1] = (m1 * y1 + m2 * y2) / M;
  const double w1 = NX * CELL, d1 = (NY - CB_Y) * CELL, w2 = (ST_X1 - ST_X0) * CELL, d2 = CB_Y * CELL;
  const double e1 = y1 - g->cm[1], e2 = y2 - g->cm[1];
  g->Ib[0] = m1 * (d1 * d1 + THICK * THICK) / 12 + m1 * e1 * e1 + m2 * (d2 * d2 + THICK * THICK) / 12 + m2 * e2 * e2;
  g->Ib[1] = m1 * (w1 * w1 + THICK * THICK) / 12 + m2 * (w2 * w2 + THICK * THICK) / 12;
  g->Ib[2] = m1 * (w1 * w1 + d1 * d1) / 12 + m1 * e1 * e1 + m2 * (w2 * w2 + d2 * d2) / 12 + m2 * e2 * e2;
  const int c[8][2] = {{0, NY}, {0, CB_Y}, {ST_X0, CB_Y}, {ST_X0, 0}, {ST_X1, 0}, {ST_X1, CB_Y}, {NX, CB_Y}, {NX, NY}};
  for (int k = 0; k < 8; k++) g->corner[k][0] = c[k][0] * CELL - g->cm[0], g->corner[k][1] = c[k][1] * CELL - g->cm[1];
}

/* The bar as OBJ text (CM frame, outward winding): both faces cut in cells,
 * the walls one quad per boundary cell edge. Returns malloc'd text. */
static char *tbar_obj(const tgeom *g, size_t *len) {
  size_t cap = 1 << 17, n = 0;
  char *s = malloc(cap);
  int idx[NX + 1][NY + 1][2], nv = 0;
  if (!s) return NULL;
  memset(idx, 0, sizeof idx);
  for (int i = 0; i <= NX; i++)
    for (int j = 0; j <= NY; j++) {
      int used = in_t(i, j) || in_t(i - 1, j) || in_t(i, j - 1) || in_t(i - 1, j - 1);
      for (int k = 0; used && k < 2; k++) {
        if (rb_text_room(&s, &cap, n, 256)) return NULL;
        idx[i][j][k] = ++nv;
        n += (size_t)snprintf(s + n, cap - n, "v %.6f %.6f %.6f\n", i * CELL - g->cm[0], j * CELL - g->cm[1],
                              k ? THICK / 2 : -THICK / 2);
      }
    }
#define F3(a, b, c) n += (size_t)snprintf(s + n, cap - n, "f %d %d %d\n", a, b, c)
  for (int i = 0; i < NX; i++)
    for (int j = 0; j < NY; j++) {
      if (!in_t(i, j)) continue;
      if (rb_text_room(&s, &cap, n, 4096)) return NULL;
      /* top (+z) counter-clockwise, bottom (-z) reversed */
      F3(idx[i][j][1], idx[i + 1][j][1], idx[i + 1][j + 1][1]);
      F3(idx[i][j][1], idx[i + 1][j + 1][1], idx[i][j + 1][1]);
      F3(idx[i][j][0], idx[i + 1][j + 1][0], idx[i + 1][j][0]);
      F3(idx[i][j][0], idx[i][j + 1][0], idx[i + 1][j + 1][0]);
      /* walls on the cell's boundary edges, P -> Q counter-clockwise */
      const int nb[4][2] = {{0, -1}, {1, 0}, {0, 1}, {-1, 0}};
      const int pq[4][4] = {{0, 0, 1, 0}, {1, 0, 1, 1}, {1, 1, 0, 1}, {0, 1, 0, 0}};
      for (int e = 0; e < 4; e++) {
        if (in_t(i + nb[e][0], j + nb[e][1])) continue;
        const int *P = idx[i + pq[e][0]][j + pq[e][1]], *Q = idx[i + pq[e][2]][j + pq[e][3]];
        F3(P[0], Q[0], Q[1]);
        F3(P[0], Q[1], P[1]);
      }
    }
#undef F3
  *len = n;
  return s;
}

/* ---- load program ------------------------------------------------------- */

/* Applied force and torque (world, at the CM) at time t. The tipping axis is
 * a support line of the plan's convex hull through the right crossbar
 * corner (between the hull edges meeting there), oriented to lift the CM. */
static void tbar_load(const tgeom *g, double t, double F[3], double T[3]) {
  memset(F, 0, 3 * sizeof *F);
  memset(T, 0, 3 * sizeof *T);
  const double tau = 3.0, pulse = 0.15;
  if (t < 3.0) {
    const double mirror = t < 1.5 ? 1 : -1, t0 = t < 1.5 ? 0 : 1.5;
    if (t - t0 >= pulse) return;
    /* the right (T1) or left (T2) crossbar corner, and a support line
     * through it between the two hull edges that meet there */
    const double *c = g->corner[mirror > 0 ? 6 : 1];
    const double d[2] = {mirror * 0.23, 0.973};
    /* rotating about d through c moves the CM (the origin, at r = -c) by
     * (d x r).z = d0 r1 - d1 r0 per unit rate: pick the sign that lifts it */
    const double r[2] = {-c[0], -c[1]};
    const double s = d[0] * r[1] - d[1] * r[0] > 0 ? 1 : -1;
    /* tau along I d: the bar starts to turn about d itself */
    const double u[2] = {g->Ib[0] * d[0], g->Ib[1] * d[1]}, n = hypot(u[0], u[1]);
    T[0] = s * tau * u[0] / n;
    T[1] = s * tau * u[1] / n;
    return;
  }
  const double tp = t - 3.0;
  F[0] = 4 + 3 * sin(2 * M_PI * tp);
  F[1] = 3 * cos(2 * M_PI * tp);
  T[2] = 0.4 * cos(M_PI * tp);
}

/* ---- contact analysis --------------------------------------------------- */

typedef struct pts {
  double (*p)[2], (*h)[2];
  int n, cap;
} pts;

static int pts_reserve(pts *b, int n) {
  if (n + 1 <= b->cap) return 0;
  int cap = 2 * (n + 1);
  double(*p)[2] = realloc(b->p, (size_t)cap * sizeof *p);
  if (p) b->p = p;
  double(*h)[2] = realloc(b->h, (size_t)cap * sizeof *h);
  if (h) b->h = h;
  if (!p || !h) return -1;
  b->cap = cap;
  return 0;
}

/* Plan-view vertices of the faces of patch k (k < 0: all faces) into b. */
static int collect(const Contactd__V1__Surface *s, int k, pts *b) {
  b->n = 0;
  if (pts_reserve(b, (int)s->n_face_vertices)) return -1;
  for (size_t f = 0; f + 1 < s->n_face_offsets; f++) {
    if (k >= 0 && (f >= s->n_patch || s->patch[f] != k)) continue;
    for (int32_t i = s->face_offsets[f]; i < s->face_offsets[f + 1]; i++) {
      size_t v = (size_t)s->face_vertices[i];
      if (3 * v + 2 >= s->n_vertices) continue;
      b->p[b->n][0] = s->vertices[3 * v], b->p[b->n][1] = s->vertices[3 * v + 1];
      b->n++;
    }
  }
  return 0;
}

/* Diameter and width (least extent over the edge directions) of a hull. */
static void hull_size(const double (*h)[2], int n, double *diam, double *width) {
  *diam = 0, *width = n < 3 ? 0 : INFINITY;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) *diam = fmax(*diam, hypot(h[i][0] - h[j][0], h[i][1] - h[j][1]));
  for (int i = 0; n >= 3 && i < n; i++) {
    const double *a = h[i], *b = h[(i + 1) % n];
    double L = hypot(b[0] - a[0], b[1] - a[1]), far = 0;
    for (int j = 0; j < n && L > 0; j++) far = fmax(far, fabs(rb_turn(a, b, h[j])) / L);
    if (L > 0) *width = fmin(*width, far);
  }
}

typedef struct analysis {
  char mode[64];
  double margin; /* ECP's plan-view margin inside the contact's convex hull */
} analysis;

static int analyse(const Contactd__V1__PairResult *pr, const rb_contact *c, pts *b, analysis *an) {
  const Contactd__V1__Surface *s = pr->surface;
  strcpy(an->mode, "none");
  an->margin = INFINITY;
  if (c->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE || !s) return 0;
  if (collect(s, -1, b)) return -1;
  int nh = rb_hull2(b->p, b->n, b->h);
  an->margin = rb_hull_margin((const double(*)[2])b->h, nh, c->ecp);
  an->mode[0] = 0;
  for (int k = 0; k < c->npatches; k++) {
    if (k == 3) {
      strcat(an->mode, "+...");
      break;
    }
    if (collect(s, k, b)) return -1;
    nh = rb_hull2(b->p, b->n, b->h);
    double diam, width;
    hull_size((const double(*)[2])b->h, nh, &diam, &width);
    if (k) strcat(an->mode, "+");
    strcat(an->mode, diam < POINT_SIZE ? "point" : width < POINT_SIZE ? "line" : "surface");
  }
  return 0;
}

/* Depth of the deepest corner below the ground plane (0 if none). */
static double penetration(const tgeom *g, const rb_state *st) {
  rb_mat3 R;
  rb_quat_to_mat(st->q, &R);
  double deep = 0;
  for (int k = 0; k < 16; k++) {
    double x[3] = {g->corner[k % 8][0], g->corner[k % 8][1], k < 8 ? -THICK / 2 : THICK / 2}, w[3];
    rb_mv(&R, x, w);
    deep = fmax(deep, -(st->p[2] + w[2]));
  }
  return deep;
}

/* ---- the run ------------------------------------------------------------ */

typedef struct runs {
  char mode[64];
  double t0;
  int shown, hidden;
} runs;

/* Print the run of the previous mode when the mode changes (runs shorter
 * than 2 ms are counted, not printed). */
static void mode_track(runs *r, const char *mode, double t, int last) {
  if (!last && !strcmp(mode, r->mode)) return;
  if (r->mode[0]) {
    if (t - r->t0 >= 2e-3 && r->shown < 60) {
      printf("  mode %-22s from %7.4f s to %7.4f s\n", r->mode, r->t0, t);
      r->shown++;
    } else {
      r->hidden++;
    }
  }
  snprintf(r->mode, sizeof r->mode, "%s", mode);
  r->t0 = t;
}

typedef struct checks {
  long hull_bad, flat_steps, flat_bad, pen_bad;
  double min_margin, flat_dev, max_pen, flat_since;
} checks;

static int simulate(cc_client *cl, const char *bar, const char *ground, const rb_args *a, const tgeom *g, FILE *csv,
                    checks *ck) {
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.detail = CONTACTD__V1__DETAIL__DETAIL_SURFACE;
  opt.stiction_tolerance = V_S;
  rb_apply_publish(&opt, a->publish);
  const uint32_t pairs[1][2] = {{1, 2}};
  const double delta_s = M * RB_G * SLAB / (E_GROUND * g->area), z_rest = THICK / 2 - delta_s;
  rb_state st = {.p = {0, 0, z_rest}, .q = {1, 0, 0, 0}};
  pts b = {0};
  runs rs = {.mode = ""};
  cc_error e;
  ck->min_margin = INFINITY, ck->flat_since = -1;
  printf("%7s %9s %9s %9s %8s %8s %9s %9s %9s %-16s\n", "t s", "x m", "y m", "z m", "vz m/s", "|w| r/s", "ECPx m",
         "ECPy m", "Fn N", "mode");
  for (long k = 0; k <= a->steps; k++) {
    const double t = (double)k * a->dt;
    cc_body bd[2] = {{.id = 1, .geometry_id = bar}, {.id = 2, .geometry_id = ground}};
    memcpy(bd[0].p, st.p, sizeof st.p), memcpy(bd[0].q, st.q, sizeof st.q);
    memcpy(bd[0].v, st.v, sizeof st.v), memcpy(bd[0].w, st.w, sizeof st.w);
    Contactd__V1__ContactReply *rep;
    if (cc_query_bodies(cl, bd, 2, pairs, 1, &opt, &rep, &e)) {
      fprintf(stderr, "tbar: query at t = %g: %s: %s\n", t, cc_code_name(e.code), e.message);
      free(b.p), free(b.h);
      return 1;
    }
    rb_contact c;
    analysis an;
    rb_contact_of(rep->results[0], &c);
    int bad = analyse(rep->results[0], &c, &b, &an);
    cc_free(rep);
    if (bad) {
      fprintf(stderr, "tbar: out of memory\n");
      free(b.p), free(b.h);
      return 1;
    }
    /* 1: ECP in the hull of the contact */
    if (isfinite(an.margin)) {
      ck->min_margin = fmin(ck->min_margin, an.margin);
      if (an.margin < -1e-9) ck->hull_bad++;
    }
    /* 2: height in the settled flat phases */
    int flat = c.npatches == 1 && c.area >= 0.999 * g->area;
    if (!flat) ck->flat_since = -1;
    else if (ck->flat_since < 0) ck->flat_since = t;
    if (flat && t - ck->flat_since >= FLAT_SETTLE) {
      double dev = fabs(st.p[2] - z_rest);
      ck->flat_steps++;
      ck->flat_dev = fmax(ck->flat_dev, dev);
      if (dev > delta_s) ck->flat_bad++;
    }
    /* 3: penetration */
    double pen = penetration(g, &st);
    ck->max_pen = fmax(ck->max_pen, pen);
    if (pen > PEN_BOUND) ck->pen_bad++;
    mode_track(&rs, an.mode, t, k == a->steps);
    rb_csv_row(csv, t, &st, &c, an.mode);
    if (k % a->every == 0)
      printf("%7.3f %9.5f %9.5f %9.6f %8.4f %8.4f %9.5f %9.5f %9.3f %-16s\n", t, st.p[0], st.p[1], st.p[2], st.v[2],
             sqrt(st.w[0] * st.w[0] + st.w[1] * st.w[1] + st.w[2] * st.w[2]), c.ecp[0], c.ecp[1], c.fn, an.mode);
    if (k == a->steps) break;
    double Fa[3], Ta[3], F[3], T[3];
    tbar_load(g, t, Fa, Ta);
    for (int d = 0; d < 3; d++) F[d] = c.F[d] + Fa[d] - (d == 2 ? M * RB_G : 0), T[d] = c.T[d] + Ta[d];
    rb_step(&st, F, T, M, g->Ib, a->dt);
  }
  if (rs.hidden) printf("  (%d shorter mode runs, under 2 ms, not listed)\n", rs.hidden);
  free(b.p), free(b.h);
  return 0;
}

int main(int argc, char **argv) {
  rb_args a = {.csv = "tbar.csv", .duration = 5.0, .dt = 1e-4, .every = 1000};
  if (rb_parse_args(argc, argv, USAGE, &a)) return 2;
  tgeom g;
  tbar_geometry(&g);
  size_t len;
  char *obj = tbar_obj(&g, &len);
  if (!obj) return fprintf(stderr, "tbar: out of memory\n"), 1;
  cc_client *cl;
  cc_error e;
  cc_options ropt; /* through a server restart: a lost query is sent once more (queries are idempotent) */
  cc_options_default(&ropt);
  ropt.retry_queries = 1;
  if (cc_connect(a.addr, &ropt, &cl, &e)) {
    fprintf(stderr, "tbar: %s\n", e.message);
    free(obj);
    return 3;
  }
  char bar[CC_ID_MAX], ground[CC_ID_MAX];
  cc_shape bs = {.kind = CC_SHAPE_MESH_FILE, .data = obj, .size = len, .rigid = 1, .friction = MU,
                 .dissipation = DISS, .name = "tbar.obj"};
  cc_shape gs = {.kind = CC_SHAPE_HALF_SPACE, .modulus = E_GROUND, .slab = SLAB, .dissipation = DISS,
                 .friction = MU, .name = "ground"};
  if (cc_register_shape(cl, &bs, bar, NULL, &e) || cc_register_shape(cl, &gs, ground, NULL, &e)) {
    fprintf(stderr, "tbar: register: %s: %s\n", cc_code_name(e.code), e.message);
    free(obj), cc_close(cl);
    return 1;
  }
  free(obj);
  const double k_flat = E_GROUND * g.area / SLAB, delta_s = M * RB_G / k_flat;
  printf("tbar: plan area %.4f m^2, m = %g kg, I = (%.4g, %.4g, %.4g) kg m^2, mu = %g; ground E = %g Pa, "
         "slab %g m: k = %.4g N/m, static penetration %.3g m; dt = %g s, %ld steps\n",
         g.area, M, g.Ib[0], g.Ib[1], g.Ib[2], MU, E_GROUND, SLAB, k_flat, delta_s, a.dt, a.steps);
  FILE *csv = rb_csv_open(a.csv, "tbar");
  rb_csv_header(csv);
  checks ck = {0};
  double t0 = rb_now();
  int rc = simulate(cl, bar, ground, &a, &g, csv, &ck);
  double wall = rb_now() - t0;
  if (csv) fclose(csv);
  cc_close(cl);
  if (rc) return rc;
  printf("%ld steps in %.2f s (%.0f steps/s)\n", a.steps + 1, wall, (double)(a.steps + 1) / wall);
  printf("check ECP in the convex hull of the contact: %s (%ld steps outside; smallest margin %.3g m)\n",
         ck.hull_bad ? "FAIL" : "ok", ck.hull_bad, ck.min_margin);
  printf("check flat height 0.025 m - %.3g m within %.3g m: %s (%ld settled flat steps, largest deviation %.3g m)\n",
         delta_s, delta_s, ck.flat_bad || !ck.flat_steps ? "FAIL" : "ok", ck.flat_steps, ck.flat_dev);
  printf("check penetration <= %g m: %s (deepest %.3g m)\n", PEN_BOUND, ck.pen_bad ? "FAIL" : "ok", ck.max_pen);
  return ck.hull_bad || ck.flat_bad || !ck.flat_steps || ck.pen_bad ? 1 : 0;
}
