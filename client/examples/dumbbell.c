/* dumbbell — the dumbbell of Xie & Chakraborty ("Modeling and prediction of
 * rigid body motion with planar non-convex contact", §5.3) as a remote
 * simulator: standing on one end disc, it is given an impulse, topples,
 * lands on both end discs and rolls and turns on them. Its contact with the
 * ground is then two separate patches (the paper's union of two line
 * segments), whose convex hull is the segment between them.
 *
 * Dumbbell (§5.3): length L = 0.3 m, bar length L_b = 0.18 m, end radius
 * R = 0.1 m, bar radius R_b = 0.05 m (so each end disc is 0.06 m thick),
 * m = 3 kg of uniform density, mu = 0.22 (the paper's values). Inertia of
 * the three cylinders about the common centre.
 *
 * Contact: the dumbbell is one rigid closed triangle mesh of revolution
 * (96 sectors; the rims' facets sag 53 um) sent as OBJ bytes; the ground is
 * a compliant half space, E = 1e6 Pa over a 0.1 m slab (p = E d / 0.1 at
 * depth d). Lying on its discs, each disc of width w = 0.06 m carries
 * F(d) ~ (4/3)(E w / 0.1) sqrt(2 R) d^(3/2), so the static penetration
 * delta_s where 2 F = m g is ~1.2 mm; the program finds it exactly by
 * bisection on the daemon's force and prints it. Hunt-Crossley dissipation
 * 5 s/m (its hysteresis is the rolling resistance: the roll slows at
 * ~0.06 m/s^2); regularised friction, stiction tolerance 1e-3 m/s.
 *
 * Integration: semi-implicit Euler at dt = 5e-4 s (standing on a disc face,
 * the stiffest mode is sqrt(k / m), k = E pi R^2 / 0.1 m, ~320 rad/s: omega dt =
 * 0.16; mu g dt / v_s = 1.1 for the friction damper).
 *
 * Impulse at t = 0, at the centre of mass: linear p = (0, 2, 0) N s and
 * angular I w0 with w0 = (-7, 0, 10) rad/s (body = world axes while it
 * stands): a push and a tip towards +y, and a spin about the dumbbell's own
 * vertical axis. It topples on the rim of the bottom disc, its heading
 * turning as it goes; it lands on both discs still turning (friction at the
 * two patches stops the turn within ~0.15 s) and what is left of the spin
 * is a roll about its axis.
 *
 * Every step records the equivalent contact point (ECP: the centre of
 * pressure of the whole contact; §3.1 of the paper) and the mode ("none",
 * "one patch: face" standing on an end face, "one patch: rim" on a disc's
 * rim, "two patches", ...). The rolling phase is the part after the
 * first two-patch contact (plus 0.2 s to damp the landing) in which the axis
 * lies within 5 degrees of horizontal. Checks, each printed:
 *   1. the contact is two patches at every step of the rolling phase;
 *   2. there the ECP lies on the segment between the two patches' points
 *      (off the segment's line by < 1e-9 m) and away from both ends (its
 *      parameter along the segment in [0.1, 0.9]);
 *   3. there the CM height stays within delta_s of its static rest height
 *      R - delta_s (i.e. between R - 2 delta_s and R).
 *
 * usage: dumbbell [--addr A] [--duration T] [--steps N] [--dt DT]
 *                 [--every N] [--csv FILE] [--publish NAME]
 * Writes the trajectory to --csv (default dumbbell.csv; "-" = none). Exit
 * status 1 if a check fails, 2 on usage errors, 3 if the daemon is
 * unreachable. */
#include "rb_sim.h"

#define NSEC 96 /* sectors around the axis */

static const double LEN = 0.3, LEN_B = 0.18, R = 0.1, R_B = 0.05, M = 3.0, MU = 0.22;
static const double E_GROUND = 1e6, SLAB = 0.1, DISS = 5.0, V_S = 1e-3;
static const double SETTLE = 0.2;                  /* s after the first two-patch contact */
static const double AXIS_TILT = 5 * M_PI / 180;    /* rad */
static const double ECP_LINE_TOL = 1e-9, ECP_END = 0.1;

static const char USAGE[] = "usage: dumbbell [--addr A] [--duration T] [--steps N] [--dt DT] [--every N] "
                            "[--csv FILE] [--publish NAME]\n";

/* Diagonal inertia about the CM (axis = body z). */
static void dumbbell_inertia(double Ib[3]) {
  const double t = (LEN - LEN_B) / 2, vd = M_PI * R * R * t, vb = M_PI * R_B * R_B * LEN_B;
  const double md = M * vd / (2 * vd + vb), mb = M - 2 * md, zc = LEN_B / 2 + t / 2;
  Ib[2] = md * R * R + mb * R_B * R_B / 2;
  Ib[0] = Ib[1] = 2 * (md * (3 * R * R + t * t) / 12 + md * zc * zc) + mb * (3 * R_B * R_B + LEN_B * LEN_B) / 12;
}

/* The dumbbell as OBJ text: a closed surface of revolution about z through
 * the profile (r, z) below, with a centre vertex on each end face. */
static char *dumbbell_obj(size_t *len) {
  const double h = LEN / 2, hb = LEN_B / 2;
  const double prof[6][2] = {{R, -h}, {R, -hb}, {R_B, -hb}, {R_B, hb}, {R, hb}, {R, h}};
  size_t cap = 1 << 16, n = 0;
  char *s = malloc(cap);
  if (!s) return NULL;
  for (int k = 0; k < 6; k++)
    for (int i = 0; i < NSEC; i++) {
      double a = 2 * M_PI * i / NSEC;
      if (rb_text_room(&s, &cap, n, 256)) return NULL;
      n += (size_t)snprintf(s + n, cap - n, "v %.9f %.9f %.9f\n", prof[k][0] * cos(a), prof[k][0] * sin(a), prof[k][1]);
    }
  if (rb_text_room(&s, &cap, n, 256)) return NULL;
  n += (size_t)snprintf(s + n, cap - n, "v 0 0 %.9f\nv 0 0 %.9f\n", -h, h);
  const int cb = 6 * NSEC + 1, ct = 6 * NSEC + 2;
#define V(k, i) ((k) * NSEC + ((i) % NSEC) + 1)
  for (int i = 0; i < NSEC; i++) {
    if (rb_text_room(&s, &cap, n, 1024)) return NULL;
    /* end faces: -z fan, +z fan */
    n += (size_t)snprintf(s + n, cap - n, "f %d %d %d\nf %d %d %d\n", cb, V(0, i + 1), V(0, i), ct, V(5, i),
                          V(5, i + 1));
    /* bands between consecutive profile rings, outward */
    for (int k = 0; k < 5; k++)
      n += (size_t)snprintf(s + n, cap - n, "f %d %d %d\nf %d %d %d\n", V(k, i), V(k, i + 1), V(k + 1, i + 1), V(k, i),
                            V(k + 1, i + 1), V(k + 1, i));
  }
#undef V
  *len = n;
  return s;
}

typedef struct sim {
  cc_client *cl;
  char body[CC_ID_MAX], ground[CC_ID_MAX];
  Contactd__V1__QueryOptions opt;
} sim;

/* Contact of the dumbbell in state st (one query). */
static int contact(sim *S, const rb_state *st, rb_contact *c) {
  const uint32_t pairs[1][2] = {{1, 2}};
  cc_body bd[2] = {{.id = 1, .geometry_id = S->body}, {.id = 2, .geometry_id = S->ground}};
  memcpy(bd[0].p, st->p, sizeof st->p), memcpy(bd[0].q, st->q, sizeof st->q);
  memcpy(bd[0].v, st->v, sizeof st->v), memcpy(bd[0].w, st->w, sizeof st->w);
  Contactd__V1__ContactReply *rep;
  cc_error e;
  if (cc_query_bodies(S->cl, bd, 2, pairs, 1, &S->opt, &rep, &e)) {
    fprintf(stderr, "dumbbell: query: %s: %s\n", cc_code_name(e.code), e.message);
    return -1;
  }
  rb_contact_of(rep->results[0], c);
  cc_free(rep);
  return 0;
}

/* Static penetration lying on both discs (axis along x, at rest): the
 * depth d at which the contact carries m g, by bisection. */
static int static_sink(sim *S, double *d) {
  double lo = 0, hi = 0.02;
  const double ax[3] = {0, 1, 0};
  rb_state st = {0};
  rb_quat_axis(ax, M_PI / 2, st.q);
  for (int it = 0; it < 60; it++) {
    rb_contact c;
    st.p[2] = R - (lo + hi) / 2;
    if (contact(S, &st, &c)) return -1;
    if (c.F[2] > M * RB_G) hi = (lo + hi) / 2;
    else lo = (lo + hi) / 2;
  }
  *d = (lo + hi) / 2;
  return 0;
}

typedef struct checks {
  double delta_s, t_two;   /* static penetration; first two-patch contact (< 0: none yet) */
  long roll_steps, not_two, off_line, near_end, height_bad;
  double max_off, min_end, zmin, zmax;
} checks;

static void mode_name(const rb_contact *c, char *s, size_t n) {
  if (c->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE) snprintf(s, n, "none");
  else if (c->npatches == 1) snprintf(s, n, c->area > 0.5 * M_PI * R * R ? "one patch: face" : "one patch: rim");
  else if (c->npatches == 2) snprintf(s, n, "two patches");
  else snprintf(s, n, "%d patches", c->npatches);
}

/* Checks 1-3 at one step of the rolling phase. */
static void check_rolling(checks *ck, const rb_state *st, const rb_contact *c) {
  ck->roll_steps++;
  ck->zmin = fmin(ck->zmin, st->p[2]), ck->zmax = fmax(ck->zmax, st->p[2]);
  if (fabs(st->p[2] - (R - ck->delta_s)) > ck->delta_s) ck->height_bad++;
  if (c->npatches != 2) {
    ck->not_two++;
    return;
  }
  const double *a = c->pp[0], *b = c->pp[1];
  double ab[3], ae[3], L2 = 0, t = 0;
  for (int d = 0; d < 3; d++) ab[d] = b[d] - a[d], ae[d] = c->ecp[d] - a[d], L2 += ab[d] * ab[d], t += ae[d] * ab[d];
  t = L2 > 0 ? t / L2 : 0;
  double off = 0;
  for (int d = 0; d < 3; d++) off += (ae[d] - t * ab[d]) * (ae[d] - t * ab[d]);
  off = sqrt(off);
  ck->max_off = fmax(ck->max_off, off);
  ck->min_end = fmin(ck->min_end, fmin(t, 1 - t));
  if (off > ECP_LINE_TOL) ck->off_line++;
  if (t < ECP_END || t > 1 - ECP_END) ck->near_end++;
}

static int simulate(sim *S, const rb_args *a, const double Ib[3], FILE *csv, checks *ck) {
  /* standing on the bottom disc at its static depth, then the impulse */
  rb_state st = {.p = {0, 0, LEN / 2 - M * RB_G * SLAB / (E_GROUND * M_PI * R * R)}, .q = {1, 0, 0, 0}};
  const double P[3] = {0, 2.0, 0}, w0[3] = {-7, 0, 10};
  for (int d = 0; d < 3; d++) st.v[d] = P[d] / M, st.w[d] = w0[d];
  char mode[32], prev[32] = "";
  double t_mode = 0;
  printf("%7s %9s %9s %9s %8s %8s %8s %8s %9s %9s %8s %-15s\n", "t s", "x m", "y m", "z m", "|v| m/s", "w_ax r/s",
         "yaw r/s", "axis_z", "ECPx m", "ECPy m", "Fn N", "mode");
  for (long k = 0; k <= a->steps; k++) {
    const double t = (double)k * a->dt;
    rb_contact c;
    if (contact(S, &st, &c)) return 1;
    rb_mat3 Rm;
    rb_quat_to_mat(st.q, &Rm);
    const double axis[3] = {Rm.m[0][2], Rm.m[1][2], Rm.m[2][2]};
    const double w_ax = st.w[0] * axis[0] + st.w[1] * axis[1] + st.w[2] * axis[2];
    mode_name(&c, mode, sizeof mode);
    if (c.npatches == 2 && ck->t_two < 0) ck->t_two = t;
    if (ck->t_two >= 0 && t >= ck->t_two + SETTLE && fabs(axis[2]) < sin(AXIS_TILT)) check_rolling(ck, &st, &c);
    if (strcmp(mode, prev) || k == a->steps) {
      if (prev[0]) printf("  mode %-15s from %7.4f s to %7.4f s\n", prev, t_mode, t);
      snprintf(prev, sizeof prev, "%s", mode);
      t_mode = t;
    }
    rb_csv_row(csv, t, &st, &c, mode);
    if (k % a->every == 0)
      printf("%7.3f %9.5f %9.5f %9.6f %8.4f %8.3f %8.3f %8.4f %9.5f %9.5f %8.3f %-15s\n", t, st.p[0], st.p[1], st.p[2],
             sqrt(st.v[0] * st.v[0] + st.v[1] * st.v[1] + st.v[2] * st.v[2]), w_ax, st.w[2], axis[2], c.ecp[0],
             c.ecp[1], c.fn, mode);
    if (k == a->steps) break;
    double F[3] = {c.F[0], c.F[1], c.F[2] - M * RB_G};
    rb_step(&st, F, c.T, M, Ib, a->dt);
  }
  return 0;
}

int main(int argc, char **argv) {
  rb_args a = {.csv = "dumbbell.csv", .duration = 2.5, .dt = 5e-4, .every = 200};
  if (rb_parse_args(argc, argv, USAGE, &a)) return 2;
  sim S = {.opt = CONTACTD__V1__QUERY_OPTIONS__INIT};
  S.opt.detail = CONTACTD__V1__DETAIL__DETAIL_PATCHES;
  S.opt.stiction_tolerance = V_S;
  rb_apply_publish(&S.opt, a.publish);
  double Ib[3];
  dumbbell_inertia(Ib);
  size_t len;
  char *obj = dumbbell_obj(&len);
  if (!obj) return fprintf(stderr, "dumbbell: out of memory\n"), 1;
  cc_error e;
  cc_options ropt; /* through a server restart: a lost query is sent once more (queries are idempotent) */
  cc_options_default(&ropt);
  ropt.retry_queries = 1;
  if (cc_connect(a.addr, &ropt, &S.cl, &e)) {
    fprintf(stderr, "dumbbell: %s\n", e.message);
    free(obj);
    return 3;
  }
  cc_shape bs = {.kind = CC_SHAPE_MESH_FILE, .data = obj, .size = len, .rigid = 1, .friction = MU,
                 .dissipation = DISS, .name = "dumbbell.obj"};
  cc_shape gs = {.kind = CC_SHAPE_HALF_SPACE, .modulus = E_GROUND, .slab = SLAB, .dissipation = DISS,
                 .friction = MU, .name = "ground"};
  int rc = 1;
  checks ck = {.t_two = -1, .min_end = INFINITY, .zmin = INFINITY, .zmax = -INFINITY};
  if (cc_register_shape(S.cl, &bs, S.body, NULL, &e) || cc_register_shape(S.cl, &gs, S.ground, NULL, &e)) {
    fprintf(stderr, "dumbbell: register: %s: %s\n", cc_code_name(e.code), e.message);
    goto out;
  }
  if (static_sink(&S, &ck.delta_s)) goto out;
  printf("dumbbell: L = %g m, L_b = %g m, R = %g m, R_b = %g m, m = %g kg, I = (%.4g, %.4g, %.4g) kg m^2, mu = %g; "
         "ground E = %g Pa, slab %g m: static penetration lying %.4g m; dt = %g s, %ld steps\n",
         LEN, LEN_B, R, R_B, M, Ib[0], Ib[1], Ib[2], MU, E_GROUND, SLAB, ck.delta_s, a.dt, a.steps);
  FILE *csv = rb_csv_open(a.csv, "dumbbell");
  rb_csv_header(csv);
  double t0 = rb_now();
  rc = simulate(&S, &a, Ib, csv, &ck);
  double wall = rb_now() - t0;
  if (csv) fclose(csv);
  if (rc) goto out;
  printf("%ld steps in %.2f s (%.0f steps/s); rolling phase: %ld steps from t = %.3f s\n", a.steps + 1, wall,
         (double)(a.steps + 1) / wall, ck.roll_steps, ck.t_two + SETTLE);
  printf("check two patches while rolling: %s (%ld of %ld steps not two)\n",
         ck.not_two || !ck.roll_steps ? "FAIL" : "ok", ck.not_two, ck.roll_steps);
  printf("check ECP on the segment between the patches, away from both: %s (largest distance off it %.3g m, "
         "nearest end at parameter %.3f)\n",
         ck.off_line || ck.near_end ? "FAIL" : "ok", ck.max_off, ck.min_end);
  printf("check CM height within %.3g m of R - %.3g m while rolling: %s (z from %.6f to %.6f m)\n", ck.delta_s,
         ck.delta_s, ck.height_bad ? "FAIL" : "ok", ck.zmin, ck.zmax);
  rc = ck.not_two || !ck.roll_steps || ck.off_line || ck.near_end || ck.height_bad ? 1 : 0;
out:
  free(obj);
  cc_close(S.cl);
  return rc;
}
