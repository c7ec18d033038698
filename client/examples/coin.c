/* coin — the sliding and spinning coin of Masterjohn et al. 2022 §V-A as a remote
 * simulator: this program integrates the coin's rigid-body motion and asks
 * contactd for the contact wrench at every stage of every step.
 *
 * A disc (R = 1.213 cm, t = 1.75 mm, m = 5.67 g, mu = 0.2) lies flat on a
 * rigid plane and is launched with speed v and spin w; eps = v / (w R).
 * Farkas et al. (PRL 90, 248302) show that for a uniformly loaded disc eps
 * tends to 0.653 as the coin comes to rest, whatever eps0 = v0 / (w0 R).
 *
 * Model and numerics (why they converge):
 *  - The coin stays flat: its height is held at the static equilibrium
 *    depth where the hydroelastic normal force equals m g (found once by a
 *    few queries), and only the planar motion (x, y, yaw) is integrated.
 *    This is the setting of the theory (constant normal load, uniform
 *    pressure) and removes the stiff normal mode (sqrt(k/m) ~ 1e5 rad/s
 *    for E = 1 GPa) that would otherwise force microsecond steps.
 *  - The coin is a rigid cylinder primitive on a compliant half space
 *    (modulus E, default 1e5 Pa, slab 1 cm): the pressure on its flat face
 *    is then exactly uniform (the half space's field depends on depth only),
 *    which is the assumption of the theory, so eps* does not depend on E; a
 *    modest E keeps the equilibrium penetration (~12 um) far above round-off
 *    yet far below the thickness. --compliant-coin swaps the roles (a
 *    compliant cylinder, as in the paper, on a rigid plane; its medial-axis
 *    field softens the pressure within the penetration depth of the rim).
 *  - The disc's face is triangulated at --hint (default R/16, 808 surface
 *    triangles): at R/8 the polygonal disc gives eps about 1.5% lower at the
 *    same speed (the paper's 152-triangle disc gives 0.644).
 *  - Friction is regularised Coulomb; the stiction tolerance is set to
 *    1e-7 m/s (the default 1e-4 m/s would bend the end of the trajectory,
 *    where eps is read), and eps is read when the speed
 *    u = sqrt(v^2 + (w R)^2) has dropped to --stop (default 2e-3) of u0,
 *    i.e. 3e-4 m/s >> v_s. eps approaches its limit slowly (the distance
 *    halves about every two halvings of u, in the exact theory too): at
 *    2e-3 u0 the exact uniform disc has eps = 0.657.
 *  - Integrator: classical RK4 with an adaptive step dt = min(dt_max,
 *    c u / (mu g)): the coin stops in a finite time ~ u / (mu g), so a step
 *    proportional to the remaining stopping time resolves the end as well
 *    as the start (a few hundred steps for three decades of speed).
 *
 * Usage: coin [--addr A] [--eps0 0.1,0.3,1,3,10] [--modulus E] [--hint H]
 *             [--compliant-coin] [--stop F] [--courant C] [--check TOL] [--trace]
 * Exit status 1 if --check is given and some eps differs from 0.653 by more
 * than TOL (relative). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cc_client.h"

#define EPS_THEORY 0.653
#define EPS_PAPER 0.64426

static const double R = 0.01213, T = 0.00175, M = 0.00567, MU = 0.2, G = 9.81;

typedef struct sim {
  cc_client *c;
  char coin[CC_ID_MAX], floor[CC_ID_MAX];
  double z;             /* height of the coin's origin (equilibrium) */
  Contactd__V1__QueryOptions opt;
  long queries;
} sim;

/* Planar state: x, y, yaw, vx, vy, w. */
typedef struct st { double x, y, th, vx, vy, w; } st;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Contact wrench on the coin (about its origin) in state s at height z. */
static int wrench(sim *S, const st *s, double z, double F[3], double Tq[3]) {
  cc_body b[2];
  memset(b, 0, sizeof b);
  b[0].id = 1;
  b[0].geometry_id = S->coin;
  b[0].p[0] = s->x;
  b[0].p[1] = s->y;
  b[0].p[2] = z;
  b[0].q[0] = cos(s->th / 2);
  b[0].q[3] = sin(s->th / 2);
  b[0].v[0] = s->vx;
  b[0].v[1] = s->vy;
  b[0].w[2] = s->w;
  b[1].id = 2;
  b[1].geometry_id = S->floor;
  const uint32_t pairs[1][2] = {{1, 2}};
  Contactd__V1__ContactReply *rep;
  cc_error e;
  S->queries++;
  if (cc_query_bodies(S->c, b, 2, pairs, 1, &S->opt, &rep, &e)) {
    fprintf(stderr, "coin: query failed: %s: %s\n", cc_code_name(e.code), e.message);
    return -1;
  }
  const Contactd__V1__PairResult *r = rep->results[0];
  F[0] = F[1] = F[2] = Tq[0] = Tq[1] = Tq[2] = 0;
  if (r->wrench_a && r->wrench_a->force && r->wrench_a->torque) {
    F[0] = r->wrench_a->force->x;
    F[1] = r->wrench_a->force->y;
    F[2] = r->wrench_a->force->z;
    Tq[0] = r->wrench_a->torque->x;
    Tq[1] = r->wrench_a->torque->y;
    Tq[2] = r->wrench_a->torque->z;
  }
  cc_free(rep);
  return 0;
}

static int deriv(sim *S, const st *s, st *d) {
  double F[3], Tq[3];
  if (wrench(S, s, S->z, F, Tq)) return -1;
  const double I = 0.5 * M * R * R;
  d->x = s->vx;
  d->y = s->vy;
  d->th = s->w;
  d->vx = F[0] / M;
  d->vy = F[1] / M;
  d->w = Tq[2] / I;
  return 0;
}

static st axpy(const st *a, double h, const st *d) {
  st r = {a->x + h * d->x, a->y + h * d->y, a->th + h * d->th, a->vx + h * d->vx, a->vy + h * d->vy, a->w + h * d->w};
  return r;
}

/* Height where the normal force is m g: the force is (nearly) linear in the
 * penetration for a flat face, so a secant iteration converges in a few
 * queries. */
static int equilibrium(sim *S, double *z) {
  st s = {0};
  double F[3], Tq[3];
  double d0 = 1e-7, d1 = 2e-6; /* trial penetrations */
  double f0, f1;
  if (wrench(S, &s, T / 2 - d0, F, Tq)) return -1;
  f0 = F[2] - M * G;
  if (wrench(S, &s, T / 2 - d1, F, Tq)) return -1;
  f1 = F[2] - M * G;
  for (int it = 0; it < 30 && fabs(f1) > 1e-9 * M * G; it++) {
    if (f1 == f0) break;
    double d2 = d1 - f1 * (d1 - d0) / (f1 - f0);
    if (d2 <= 0) d2 = d1 / 2;
    d0 = d1;
    f0 = f1;
    d1 = d2;
    if (wrench(S, &s, T / 2 - d1, F, Tq)) return -1;
    f1 = F[2] - M * G;
  }
  if (fabs(f1) > 1e-6 * M * G) {
    fprintf(stderr, "coin: no equilibrium height found (residual %g N)\n", f1);
    return -1;
  }
  *z = T / 2 - d1;
  return 0;
}


/* A closed rigid disc mesh whose flat faces are triangulated in concentric
 * rings (ring k has 6k vertices), so every triangle is about R / nr in both
 * directions. (A centre fan of slivers never refines radially: the friction
 * field, whose direction turns around the instantaneous centre of rotation,
 * is then integrated with a fixed radial error and the spin-slide coupling
 * converges to a wrong eps.) */
typedef struct disc_mesh {
  double *v;
  int32_t *f;
  size_t nv, nf;
} disc_mesh;

static size_t ring_start(int k) { return k == 0 ? 0 : 1 + 3 * (size_t)k * (size_t)(k - 1); }

static void add_tri(disc_mesh *m, size_t a, size_t b, size_t c, int flip) {
  m->f[3 * m->nf] = (int32_t)a;
  m->f[3 * m->nf + 1] = (int32_t)(flip ? c : b);
  m->f[3 * m->nf + 2] = (int32_t)(flip ? b : c);
  m->nf++;
}

static int disc_mesh_build(disc_mesh *m, int nr) {
  size_t per_face = ring_start(nr + 1); /* vertices of one flat face */
  size_t nrim = 6 * (size_t)nr;
  m->v = malloc(2 * per_face * 3 * sizeof *m->v);
  m->f = malloc((2 * 6 * (size_t)nr * (size_t)nr + 2 * nrim) * 3 * sizeof *m->f);
  if (!m->v || !m->f) return -1;
  m->nv = 2 * per_face;
  m->nf = 0;
  for (int side = 0; side < 2; side++) { /* 0 = bottom (z = -t/2), 1 = top */
    double z = side ? T / 2 : -T / 2;
    double *v = m->v + 3 * side * per_face;
    v[0] = v[1] = 0;
    v[2] = z;
    for (int k = 1; k <= nr; k++)
      for (int i = 0; i < 6 * k; i++) {
        double a = 2 * M_PI * i / (6 * k), r = R * k / nr;
        double *p = v + 3 * (ring_start(k) + (size_t)i);
        p[0] = r * cos(a);
        p[1] = r * sin(a);
        p[2] = z;
      }
    size_t o = side * per_face;
    /* counter-clockwise seen from +z is outward for the top face; the bottom
     * face is flipped */
    int flip = side == 0;
    for (int k = 1; k <= nr; k++) {
      size_t n0 = k == 1 ? 1 : 6 * (size_t)(k - 1), n1 = 6 * (size_t)k;
      size_t s0 = o + ring_start(k - 1), s1 = o + ring_start(k);
      size_t i = 0, j = 0;
      while (i < n0 || j < n1) {
        /* advance the ring whose next vertex comes first in angle */
        double ai = (double)(i + 1) / (double)n0, aj = (double)(j + 1) / (double)n1;
        size_t a = s0 + i % n0, b = s1 + j % n1;
        if (k == 1 || (j < n1 && aj <= ai)) {
          add_tri(m, a, b, s1 + (j + 1) % n1, flip);
          j++;
        } else {
          add_tri(m, a, b, s0 + (i + 1) % n0, flip);
          i++;
        }
        if (k == 1 && j == n1) break;
      }
    }
  }
  /* side: rim of the bottom (ring nr) to rim of the top */
  size_t b0 = ring_start(nr), t0 = per_face + ring_start(nr);
  for (size_t i = 0; i < nrim; i++) {
    size_t i1 = (i + 1) % nrim;
    add_tri(m, b0 + i, b0 + i1, t0 + i1, 0);
    add_tri(m, b0 + i, t0 + i1, t0 + i, 0);
  }
  return 0;
}

static int register_disc(cc_client *c, int nr, char id[CC_ID_MAX], Contactd__V1__RegisterReply **out, cc_error *e) {
  disc_mesh m;
  memset(&m, 0, sizeof m);
  if (disc_mesh_build(&m, nr)) return -1;
  Contactd__V1__RegisterGeometry r = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  Contactd__V1__TriMesh tm = CONTACTD__V1__TRI_MESH__INIT;
  Contactd__V1__Material mat = CONTACTD__V1__MATERIAL__INIT;
  tm.n_vertices = 3 * m.nv;
  tm.vertices = m.v;
  tm.n_triangles = 3 * m.nf;
  tm.triangles = m.f;
  r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH;
  r.tri_mesh = &tm;
  r.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  mat.friction = MU;
  r.material = &mat;
  r.name = "coin";
  int rc = cc_register(c, &r, out, e);
  if (!rc) snprintf(id, CC_ID_MAX, "%s", (*out)->geometry_id);
  free(m.v);
  free(m.f);
  return rc;
}

static int g_trace;

typedef struct run_out {
  double eps, eps_half, eps_rest, t;
  long steps;
} run_out;

/* Launch with eps0 (the larger of v0, w0 R is u_scale) and integrate until
 * u < stop * u0. */
static int run(sim *S, double eps0, double stop, double courant, double dt_max, run_out *o) {
  const double u_scale = 1.0; /* m/s */
  double v0, w0;
  if (eps0 >= 1) {
    v0 = u_scale;
    w0 = v0 / (eps0 * R);
  } else {
    w0 = u_scale / R;
    v0 = eps0 * w0 * R;
  }
  st s = {0, 0, 0, v0, 0, w0};
  double u0 = sqrt(v0 * v0 + w0 * w0 * R * R), t = 0;
  long steps = 0;
  o->eps_half = NAN;
  double next_trace = 0.5, ck[3] = {NAN, NAN, NAN}; /* eps at the last three halvings of u */
  for (;;) {
    double v = hypot(s.vx, s.vy), u = sqrt(v * v + s.w * s.w * R * R);
    if (u < 0.1 * u0 && isnan(o->eps_half)) o->eps_half = v / (fabs(s.w) * R);
    if (u < next_trace * u0) {
      ck[0] = ck[1];
      ck[1] = ck[2];
      ck[2] = v / (fabs(s.w) * R);
      if (g_trace) fprintf(stderr, "  trace eps0 %g: t %.5f s  u/u0 %.3g  eps %.5f\n", eps0, t, u / u0, ck[2]);
      next_trace /= 2;
    }
    if (u < stop * u0) {
      o->eps = v / (fabs(s.w) * R);
      /* eps - eps* shrinks geometrically per halving of u near rest: Aitken's
       * delta-squared over the last three halvings extrapolates to u -> 0 */
      double d1 = ck[1] - ck[0], d2 = ck[2] - ck[1];
      o->eps_rest = (fabs(d2 - d1) > 1e-15 && fabs(d2) < fabs(d1)) ? ck[2] - d2 * d2 / (d2 - d1) : ck[2];
      break;
    }
    if (steps > 2000000) {
      fprintf(stderr, "coin: too many steps\n");
      return -1;
    }
    double dt = courant * u / (MU * G);
    if (dt > dt_max) dt = dt_max;
    st k1, k2, k3, k4, tmp;
    if (deriv(S, &s, &k1)) return -1;
    tmp = axpy(&s, dt / 2, &k1);
    if (deriv(S, &tmp, &k2)) return -1;
    tmp = axpy(&s, dt / 2, &k2);
    if (deriv(S, &tmp, &k3)) return -1;
    tmp = axpy(&s, dt, &k3);
    if (deriv(S, &tmp, &k4)) return -1;
    s.x += dt / 6 * (k1.x + 2 * k2.x + 2 * k3.x + k4.x);
    s.y += dt / 6 * (k1.y + 2 * k2.y + 2 * k3.y + k4.y);
    s.th += dt / 6 * (k1.th + 2 * k2.th + 2 * k3.th + k4.th);
    s.vx += dt / 6 * (k1.vx + 2 * k2.vx + 2 * k3.vx + k4.vx);
    s.vy += dt / 6 * (k1.vy + 2 * k2.vy + 2 * k3.vy + k4.vy);
    s.w += dt / 6 * (k1.w + 2 * k2.w + 2 * k3.w + k4.w);
    t += dt;
    steps++;
  }
  o->t = t;
  o->steps = steps;
  return 0;
}

static int usage(void) {
  fprintf(stderr,
          "usage: coin [--addr A] [--eps0 LIST] [--modulus E] [--hint H] [--compliant-coin]\n"
          "            [--stop F] [--courant C] [--check TOL] [--trace] [--publish NAME]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *addr = NULL, *publish = NULL;
  double eps0s[32] = {0.1, 0.3, 1, 3, 10};
  int neps = 5, rigid_coin = 1;
  double E = 1e5, hint = R / 16, stop = 1e-5, courant = 0.02, check = -1, dt_max = 1e-3;
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(f, "--trace") == 0) {
      g_trace = 1;
      continue;
    }
    if (strcmp(f, "--rigid-coin") == 0 || strcmp(f, "--compliant-coin") == 0) {
      rigid_coin = f[2] == 'r';
      continue;
    }
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      usage();
      return 0;
    }
    if (!v) return usage();
    i++;
    if (strcmp(f, "--addr") == 0) addr = v;
    else if (strcmp(f, "--eps0") == 0) {
      neps = 0;
      char buf[512];
      snprintf(buf, sizeof buf, "%s", v);
      for (char *save, *tok = strtok_r(buf, ",", &save); tok && neps < 32; tok = strtok_r(NULL, ",", &save))
        eps0s[neps++] = atof(tok);
    } else if (strcmp(f, "--modulus") == 0) E = atof(v);
    else if (strcmp(f, "--hint") == 0) hint = atof(v);
    else if (strcmp(f, "--stop") == 0) stop = atof(v);
    else if (strcmp(f, "--courant") == 0) courant = atof(v);
    else if (strcmp(f, "--check") == 0) check = atof(v);
    else if (strcmp(f, "--publish") == 0) publish = v;
    else return usage();
  }
  sim S;
  memset(&S, 0, sizeof S);
  cc_error e;
  cc_options ropt; /* through a server restart: a lost query is sent once more (queries are idempotent) */
  cc_options_default(&ropt);
  ropt.retry_queries = 1;
  if (cc_connect(addr, &ropt, &S.c, &e)) {
    fprintf(stderr, "coin: %s\n", e.message);
    return 3;
  }
  cc_shape coin = {.kind = CC_SHAPE_CYLINDER, .a = R, .b = T, .hint = hint, .friction = MU, .name = "coin"};
  cc_shape floor = {.kind = CC_SHAPE_HALF_SPACE, .friction = MU, .name = "floor"};
  if (rigid_coin) {
    coin.rigid = 1;
    floor.modulus = E;
    floor.slab = 0.01;
  } else {
    coin.modulus = E;
    floor.rigid = 1;
  }
  Contactd__V1__RegisterReply *rr = NULL;
  int nr = (int)ceil(R / hint - 1e-9);
  int rc = rigid_coin ? register_disc(S.c, nr, S.coin, &rr, &e) : cc_register_shape(S.c, &coin, S.coin, &rr, &e);
  if (rc || cc_register_shape(S.c, &floor, S.floor, NULL, &e)) {
    fprintf(stderr, "coin: register: %s: %s\n", cc_code_name(e.code), e.message);
    return 1;
  }
  printf("coin: R = %.4g m, t = %.4g m, m = %.4g kg, mu = %.2g; %s coin (%s, %d %s, volume %.4g m^3)\n", R, T, M,
         MU, rigid_coin ? "rigid" : "compliant",
         rigid_coin ? "ring-triangulated faces" : "cylinder primitive",
         rr->stats ? (rigid_coin ? rr->stats->triangles : rr->stats->tetrahedra) : 0,
         rigid_coin ? "triangles" : "tetrahedra", rr->stats ? rr->stats->volume : 0.0);
  printf("%s: modulus %.3g Pa, resolution %.3g m\n", rigid_coin ? "compliant half space" : "coin", E, hint);
  cc_free(rr);
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.detail = CONTACTD__V1__DETAIL__DETAIL_WRENCH;
  opt.representation = CONTACTD__V1__REPRESENTATION__REPRESENTATION_POLYGON;
  opt.stiction_tolerance = 1e-10;
  if (publish) opt.publish = (char *)publish; /* the viewer shows the run */
  S.opt = opt;
  if (equilibrium(&S, &S.z)) return 1;
  printf("equilibrium penetration %.4g m (normal force = m g), stiction tolerance %.1g m/s\n", T / 2 - S.z,
         opt.stiction_tolerance);
  printf("%8s %12s %12s %12s %10s %10s %8s %10s %9s\n", "eps0", "eps(u=0.1u0)", "eps at stop", "eps at rest",
         "vs 0.653", "vs 0.644", "steps", "t_stop s", "wall s");
  int bad = 0;
  double sum = 0;
  for (int k = 0; k < neps; k++) {
    run_out o;
    long q0 = S.queries;
    double w0 = now_s();
    if (run(&S, eps0s[k], stop, courant, dt_max, &o)) return 1;
    double wall = now_s() - w0;
    double rel = (o.eps_rest - EPS_THEORY) / EPS_THEORY;
    printf("%8.3g %12.5f %12.5f %12.5f %+9.2f%% %+9.2f%% %8ld %10.4g %9.2f\n", eps0s[k], o.eps_half, o.eps,
           o.eps_rest, 100 * rel, 100 * (o.eps_rest - EPS_PAPER) / EPS_PAPER, o.steps, o.t, wall);
    (void)q0;
    sum += o.eps_rest;
    if (check > 0 && fabs(rel) > check) bad = 1;
  }
  printf("mean eps at rest %.5f (theory %.3f, paper %.5f on a 152-triangle disc); %ld queries\n", sum / neps,
         EPS_THEORY, EPS_PAPER, S.queries);
  cc_close(S.c);
  if (bad) {
    fprintf(stderr, "coin: eps at rest differs from %.3f by more than %.1f%%\n", EPS_THEORY, 100 * check);
    return 1;
  }
  return 0;
}
