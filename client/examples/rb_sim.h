/* rb_sim.h — what the tbar and dumbbell remote simulators share: one rigid
 * body's state and its semi-implicit Euler step, quaternion helpers, the
 * common command line, a planar convex hull, the contact summary of one
 * pair and the CSV trajectory. Header-only (static inline), so each example
 * stays a single translation unit like the others in this directory.
 *
 * Integrator (as desk.c): v += dt F/m; body-frame Euler equations
 * I dw/dt = tau - w x I w with a diagonal body inertia about the CM; then
 * p += dt v and q += dt (1/2) (0, w) q, renormalised. */
#ifndef RB_SIM_H
#define RB_SIM_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cc_client.h"

#define RB_G 9.8 /* m/s^2, as in Xie & Chakraborty §5.1 */

typedef struct rb_state {
  double p[3]; /* CM position, m (the body origin is its CM) */
  double q[4]; /* orientation w, x, y, z */
  double v[3]; /* CM velocity, m/s, world */
  double w[3]; /* angular velocity, rad/s, world */
} rb_state;

typedef struct rb_mat3 { double m[3][3]; } rb_mat3;

static inline void rb_quat_to_mat(const double q[4], rb_mat3 *R) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  R->m[0][0] = 1 - 2 * (y * y + z * z), R->m[0][1] = 2 * (x * y - w * z), R->m[0][2] = 2 * (x * z + w * y);
  R->m[1][0] = 2 * (x * y + w * z), R->m[1][1] = 1 - 2 * (x * x + z * z), R->m[1][2] = 2 * (y * z - w * x);
  R->m[2][0] = 2 * (x * z - w * y), R->m[2][1] = 2 * (y * z + w * x), R->m[2][2] = 1 - 2 * (x * x + y * y);
}

/* o = R v and o = R^T v */
static inline void rb_mv(const rb_mat3 *R, const double v[3], double o[3]) {
  for (int i = 0; i < 3; i++) o[i] = R->m[i][0] * v[0] + R->m[i][1] * v[1] + R->m[i][2] * v[2];
}

static inline void rb_mtv(const rb_mat3 *R, const double v[3], double o[3]) {
  for (int i = 0; i < 3; i++) o[i] = R->m[0][i] * v[0] + R->m[1][i] * v[1] + R->m[2][i] * v[2];
}

static inline void rb_cross(const double a[3], const double b[3], double o[3]) {
  o[0] = a[1] * b[2] - a[2] * b[1];
  o[1] = a[2] * b[0] - a[0] * b[2];
  o[2] = a[0] * b[1] - a[1] * b[0];
}

/* Quaternion of a rotation by angle a about the unit axis u. */
static inline void rb_quat_axis(const double u[3], double a, double q[4]) {
  q[0] = cos(a / 2);
  for (int d = 0; d < 3; d++) q[d + 1] = sin(a / 2) * u[d];
}

/* One semi-implicit Euler step under the world force F (at the CM, gravity
 * included by the caller) and world torque T about the CM; Ib is the
 * diagonal body-frame inertia about the CM. */
static inline void rb_step(rb_state *s, const double F[3], const double T[3], double m, const double Ib[3],
                           double dt) {
  rb_mat3 R;
  rb_quat_to_mat(s->q, &R);
  for (int d = 0; d < 3; d++) s->v[d] += dt * F[d] / m;
  double wb[3], tb[3], Iw[3], gyro[3];
  rb_mtv(&R, s->w, wb);
  rb_mtv(&R, T, tb);
  for (int d = 0; d < 3; d++) Iw[d] = Ib[d] * wb[d];
  rb_cross(wb, Iw, gyro);
  for (int d = 0; d < 3; d++) wb[d] += dt * (tb[d] - gyro[d]) / Ib[d];
  rb_mv(&R, wb, s->w);
  for (int d = 0; d < 3; d++) s->p[d] += dt * s->v[d];
  const double *w = s->w, *q = s->q;
  double dq[4] = {0.5 * (-w[0] * q[1] - w[1] * q[2] - w[2] * q[3]), 0.5 * (w[0] * q[0] + w[1] * q[3] - w[2] * q[2]),
                  0.5 * (-w[0] * q[3] + w[1] * q[0] + w[2] * q[1]), 0.5 * (w[0] * q[2] - w[1] * q[1] + w[2] * q[0])};
  double n = 0;
  for (int d = 0; d < 4; d++) s->q[d] += dt * dq[d], n += s->q[d] * s->q[d];
  for (int d = 0; d < 4; d++) s->q[d] /= sqrt(n);
}

static inline double rb_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- command line ------------------------------------------------------- */

typedef struct rb_args {
  const char *addr;    /* --addr; NULL = the default address */
  const char *csv;     /* --csv FILE; "-" = none */
  const char *publish; /* --publish NAME (see rb_apply_publish) */
  double duration;     /* --duration T, s */
  double dt;           /* --dt DT, s */
  long steps;          /* --steps N (overrides --duration when > 0) */
  int every;           /* --every N: print every N-th step */
  cc_options opt;      /* connection options: defaults, and the TLS and token flags (cc_options_flag) */
} rb_args;

/* Parse the shared options; returns 0, or 2 (usage) after printing usage. */
static inline int rb_parse_args(int argc, char **argv, const char *usage, rb_args *a) {
  cc_options_default(&a->opt);
  for (int i = 1; i < argc; i++) {
    int net = cc_options_flag(&a->opt, argc, argv, &i, NULL);
    if (net == 1) continue;
    if (net) goto bad;
    const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) goto bad;
    if (!strcmp(k, "--addr")) a->addr = v;
    else if (!strcmp(k, "--csv")) a->csv = v;
    else if (!strcmp(k, "--publish")) a->publish = v;
    else if (!strcmp(k, "--duration")) a->duration = atof(v);
    else if (!strcmp(k, "--dt")) a->dt = atof(v);
    else if (!strcmp(k, "--steps")) a->steps = atol(v);
    else if (!strcmp(k, "--every")) a->every = atoi(v);
    else goto bad;
    i++;
  }
  if (!(a->dt > 0) || !(a->duration > 0) || a->steps < 0 || a->every < 1) goto bad;
  if (a->steps == 0) a->steps = (long)llround(a->duration / a->dt);
  return 0;
bad:
  fprintf(stderr, "%s", usage);
  return 2;
}

/* --publish NAME asks the daemon to keep the run's latest result for its
 * viewer (QueryOptions.publish), so the run can be watched in a browser. */
static inline void rb_apply_publish(Contactd__V1__QueryOptions *opt, const char *name) {
  if (name) opt->publish = (char *)name;
}

/* ---- planar convex hull ------------------------------------------------- */

static inline int rb_pt_cmp(const void *a, const void *b) {
  const double *p = a, *q = b;
  if (p[0] != q[0]) return p[0] < q[0] ? -1 : 1;
  return (p[1] > q[1]) - (p[1] < q[1]);
}

static inline double rb_turn(const double o[2], const double a[2], const double b[2]) {
  return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
}

/* Convex hull of n points (x, y) (sorted in place), counter-clockwise into
 * h (room for n + 1 points); returns the number of hull vertices. */
static inline int rb_hull2(double (*pt)[2], int n, double (*h)[2]) {
  if (n < 3) {
    for (int i = 0; i < n; i++) h[i][0] = pt[i][0], h[i][1] = pt[i][1];
    return n;
  }
  qsort(pt, (size_t)n, sizeof pt[0], rb_pt_cmp);
  int k = 0;
  for (int i = 0; i < n; i++) {
    while (k >= 2 && rb_turn(h[k - 2], h[k - 1], pt[i]) <= 0) k--;
    h[k][0] = pt[i][0], h[k][1] = pt[i][1], k++;
  }
  for (int i = n - 2, lo = k + 1; i >= 0; i--) {
    while (k >= lo && rb_turn(h[k - 2], h[k - 1], pt[i]) <= 0) k--;
    h[k][0] = pt[i][0], h[k][1] = pt[i][1], k++;
  }
  return k - 1;
}

/* Signed distance of x inside the counter-clockwise hull h (> 0 inside,
 * < 0 outside: the least distance to an edge line; a hull of one or two
 * points gives minus the distance to that point or segment). */
static inline double rb_hull_margin(const double (*h)[2], int n, const double x[2]) {
  if (n == 0) return -INFINITY;
  if (n < 3) {
    const double *a = h[0], *b = h[n - 1];
    double ab[2] = {b[0] - a[0], b[1] - a[1]}, L2 = ab[0] * ab[0] + ab[1] * ab[1];
    double t = L2 > 0 ? ((x[0] - a[0]) * ab[0] + (x[1] - a[1]) * ab[1]) / L2 : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    return -hypot(x[0] - a[0] - t * ab[0], x[1] - a[1] - t * ab[1]);
  }
  double m = INFINITY;
  for (int i = 0; i < n; i++) {
    const double *a = h[i], *b = h[(i + 1) % n];
    double d = rb_turn(a, b, x) / hypot(b[0] - a[0], b[1] - a[1]);
    if (d < m) m = d;
  }
  return m;
}

/* ---- contact summary of one pair ---------------------------------------- */

#define RB_MAX_PATCHES 8

typedef struct rb_contact {
  int status;           /* Contactd__V1__ContactStatus */
  double F[3], T[3];    /* wrench on the body about its origin (CM), world */
  double ecp[3];        /* equivalent contact point of the whole contact */
  double fn;            /* total normal force magnitude, N */
  double area;          /* m^2 */
  int npatches;         /* patches reported (>= RB_MAX_PATCHES: capped) */
  double pp[RB_MAX_PATCHES][3]; /* each patch's equivalent contact point */
  double pfn[RB_MAX_PATCHES];   /* and normal force */
  double parea[RB_MAX_PATCHES]; /* and area */
} rb_contact;

static inline void rb_vec(const Contactd__V1__Vec3 *v, double o[3]) {
  o[0] = v ? v->x : 0, o[1] = v ? v->y : 0, o[2] = v ? v->z : 0;
}

static inline void rb_contact_of(const Contactd__V1__PairResult *pr, rb_contact *c) {
  memset(c, 0, sizeof *c);
  c->status = pr->status;
  if (pr->wrench_a) rb_vec(pr->wrench_a->force, c->F), rb_vec(pr->wrench_a->torque, c->T);
  if (pr->total) rb_vec(pr->total->point, c->ecp), c->fn = pr->total->normal_force_magnitude;
  c->area = pr->area;
  c->npatches = (int)pr->n_patches;
  for (int i = 0; i < c->npatches && i < RB_MAX_PATCHES; i++) {
    rb_vec(pr->patches[i]->point, c->pp[i]);
    c->pfn[i] = pr->patches[i]->normal_force_magnitude;
    c->parea[i] = pr->patches[i]->area;
  }
}

/* ---- CSV trajectory ----------------------------------------------------- */

static inline void rb_csv_header(FILE *f) {
  if (f)
    fprintf(f, "t,x,y,z,qw,qx,qy,qz,vx,vy,vz,wx,wy,wz,ecp_x,ecp_y,ecp_z,mode,patches,area,"
               "fx,fy,fz,tx,ty,tz\n");
}

static inline void rb_csv_row(FILE *f, double t, const rb_state *s, const rb_contact *c, const char *mode) {
  if (!f) return;
  fprintf(f, "%.5f,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.6g,%.6g,%.6g,%.6g,%.6g,%.9g,%.9g,%.9g,%s,%d,%.6g,"
             "%.6g,%.6g,%.6g,%.6g,%.6g,%.6g\n",
          t, s->p[0], s->p[1], s->p[2], s->q[0], s->q[1], s->q[2], s->q[3], s->v[0], s->v[1], s->v[2], s->w[0],
          s->w[1], s->w[2], c->ecp[0], c->ecp[1], c->ecp[2], mode, c->npatches, c->area, c->F[0], c->F[1], c->F[2],
          c->T[0], c->T[1], c->T[2]);
}

/* Room for `need` more bytes after n in the growing text buffer *s of
 * capacity *cap; 0, or -1 (the buffer freed) when out of memory. */
static inline int rb_text_room(char **s, size_t *cap, size_t n, size_t need) {
  while (*cap - n < need) {
    char *t = realloc(*s, *cap * 2);
    if (!t) return free(*s), *s = NULL, -1;
    *s = t, *cap *= 2;
  }
  return 0;
}

static inline FILE *rb_csv_open(const char *path, const char *prog) {
  if (!path || !strcmp(path, "-")) return NULL;
  FILE *f = fopen(path, "w");
  if (!f) fprintf(stderr, "%s: cannot write %s\n", prog, path);
  return f;
}

#endif /* RB_SIM_H */
