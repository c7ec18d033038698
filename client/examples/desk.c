/* desk — pushing a four-legged desk (Xie & Chakraborty, §5.1) as a remote simulator.
 *
 * A square desk (L = 0.5 m, four square feet Ls = 0.06 m at the corners, CM
 * at H = 0.45 m, m = 15 kg, mu = 0.22) slides on the ground under the
 * periodic push of the paper, applied at the CM:
 *   fx = 22.5 sin(2 pi t) + 22.5 N, fy = 22.5 cos(2 pi t) + 22.5 N,
 *   tau_z = 2.1 cos(2 pi t) N m,   t in [0, 4] s,
 * from v = (0.3, 0.2) m/s, w_z = 0.5 rad/s. The program integrates the full
 * 6-DOF motion itself and asks contactd, every step, for the contact of the
 * four feet (rigid boxes, one body each, posed from the desk's pose) with a
 * compliant half-space ground. It prints the velocity trace and the path of
 * the equivalent contact point (ECP: the centre of pressure of the four
 * patches, from their equivalent points and normal forces) in the desk frame,
 * and checks that the ECP stays inside the convex hull of the feet (the
 * square |x|, |y| <= L/2 in the desk frame).
 *
 * Numerics: ground modulus 1e6 Pa over a 0.1 m slab (normal stiffness
 * 1.4e5 N/m, static sink 1 mm, normal and tilt modes ~100-170 rad/s) with
 * Hunt-Crossley dissipation 5 s/m; semi-implicit Euler at 1 ms (10 steps per
 * step of the paper), stable for those modes (w dt < 0.2). Regularised
 * friction behaves like a viscous damper mu m g / v_s below the stiction
 * tolerance v_s; an explicit step needs mu g dt / v_s < 2, so v_s = 1e-2
 * m/s. Desk inertia: a thin L x L plate at the CM (legs massless).
 *
 * usage: desk [--addr A] [--time T] [--dt DT] [--every N]
 * Exit status 1 if the ECP ever leaves the convex hull of the feet. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cc_client.h"

static const double L = 0.5, LS = 0.06, H = 0.45, M = 15.0, MU = 0.22, G = 9.8;
static const double FOOT_H = 0.02; /* height of a foot box */

typedef struct { double m[3][3]; } mat3;

static void quat_to_mat(const double q[4], mat3 *R) {
  double w = q[0], x = q[1], y = q[2], z = q[3];
  R->m[0][0] = 1 - 2 * (y * y + z * z), R->m[0][1] = 2 * (x * y - w * z), R->m[0][2] = 2 * (x * z + w * y);
  R->m[1][0] = 2 * (x * y + w * z), R->m[1][1] = 1 - 2 * (x * x + z * z), R->m[1][2] = 2 * (y * z - w * x);
  R->m[2][0] = 2 * (x * z - w * y), R->m[2][1] = 2 * (y * z + w * x), R->m[2][2] = 1 - 2 * (x * x + y * y);
}

static void mv(const mat3 *R, const double v[3], double o[3]) {
  for (int i = 0; i < 3; i++) o[i] = R->m[i][0] * v[0] + R->m[i][1] * v[1] + R->m[i][2] * v[2];
}

static void mtv(const mat3 *R, const double v[3], double o[3]) {
  for (int i = 0; i < 3; i++) o[i] = R->m[0][i] * v[0] + R->m[1][i] * v[1] + R->m[2][i] * v[2];
}

static void cross(const double a[3], const double b[3], double o[3]) {
  o[0] = a[1] * b[2] - a[2] * b[1];
  o[1] = a[2] * b[0] - a[0] * b[2];
  o[2] = a[0] * b[1] - a[1] * b[0];
}

int main(int argc, char **argv) {
  const char *addr = NULL, *publish = NULL;
  double T_end = 4.0, dt = 1e-3;
  int every = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--addr") == 0) addr = argv[i + 1];
    else if (strcmp(argv[i], "--time") == 0) T_end = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--dt") == 0) dt = atof(argv[i + 1]);
    else if (strcmp(argv[i], "--every") == 0) every = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--publish") == 0) publish = argv[i + 1];
    else {
      fprintf(stderr, "usage: desk [--addr A] [--time T] [--dt DT] [--every N] [--publish NAME]\n");
      return 2;
    }
  }
  if (argc % 2 == 0 || !(dt > 0) || every < 1) {
    fprintf(stderr, "usage: desk [--addr A] [--time T] [--dt DT] [--every N]\n");
    return 2;
  }
  cc_client *c;
  cc_error e;
  cc_options ropt; /* through a server restart: a lost query is sent once more (queries are idempotent) */
  cc_options_default(&ropt);
  ropt.retry_queries = 1;
  if (cc_connect(addr, &ropt, &c, &e)) {
    fprintf(stderr, "desk: %s\n", e.message);
    return 3;
  }
  char foot[CC_ID_MAX], ground[CC_ID_MAX];
  cc_shape fs = {.kind = CC_SHAPE_BOX, .a = LS, .b = LS, .c = FOOT_H, .rigid = 1, .hint = LS / 4, .friction = MU,
                 .name = "desk foot"};
  cc_shape gs = {.kind = CC_SHAPE_HALF_SPACE, .modulus = 1e6, .slab = 0.1, .dissipation = 5, .friction = MU,
                 .name = "ground"};
  if (cc_register_shape(c, &fs, foot, NULL, &e) || cc_register_shape(c, &gs, ground, NULL, &e)) {
    fprintf(stderr, "desk: register: %s: %s\n", cc_code_name(e.code), e.message);
    return 1;
  }
  /* foot centres in the desk frame (origin at the CM) */
  const double a = (L - LS) / 2;
  const double off[4][3] = {{a, a, -H + FOOT_H / 2}, {-a, a, -H + FOOT_H / 2}, {-a, -a, -H + FOOT_H / 2},
                            {a, -a, -H + FOOT_H / 2}};
  const double Ib[3] = {M * L * L / 12, M * L * L / 12, M * L * L / 6};
  double p[3] = {0, 0, H - 1.0e-3}, q[4] = {1, 0, 0, 0}, v[3] = {0.3, 0.2, 0}, w[3] = {0, 0, 0.5};
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.detail = CONTACTD__V1__DETAIL__DETAIL_PATCHES;
  opt.stiction_tolerance = 1e-2;
  if (publish) opt.publish = (char *)publish; /* the viewer shows the run */
  const uint32_t pairs[4][2] = {{1, 5}, {2, 5}, {3, 5}, {4, 5}};
  long steps = (long)llround(T_end / dt);
  int outside = 0;
  double min_margin = 1e300, t0w = 0;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  t0w = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
  printf("desk: L = %g m, feet %g m, H = %g m, m = %g kg, mu = %g; dt = %g s, %ld steps\n", L, LS, H, M, MU, dt,
         steps);
  printf("%6s %8s %8s %8s %8s %8s %8s %9s %9s %9s %8s\n", "t s", "x m", "y m", "theta", "vx m/s", "vy m/s",
         "wz rad/s", "ECPx m", "ECPy m", "sum Fn N", "margin");
  for (long k = 0; k <= steps; k++) {
    double t = k * dt;
    mat3 R;
    quat_to_mat(q, &R);
    cc_body b[5];
    memset(b, 0, sizeof b);
    for (int i = 0; i < 4; i++) {
      double r[3], wr[3];
      mv(&R, off[i], r);
      cross(w, r, wr);
      b[i].id = (uint32_t)(i + 1);
      b[i].geometry_id = foot;
      for (int d = 0; d < 3; d++) {
        b[i].p[d] = p[d] + r[d];
        b[i].v[d] = v[d] + wr[d];
        b[i].w[d] = w[d];
      }
      memcpy(b[i].q, q, sizeof q);
    }
    b[4].id = 5;
    b[4].geometry_id = ground;
    Contactd__V1__ContactReply *rep;
    if (cc_query_bodies(c, b, 5, pairs, 4, &opt, &rep, &e)) {
      fprintf(stderr, "desk: query at t = %g: %s: %s\n", t, cc_code_name(e.code), e.message);
      return 1;
    }
    double F[3] = {0}, Tq[3] = {0}, fn = 0, ecp[3] = {0};
    for (size_t i = 0; i < rep->n_results; i++) {
      const Contactd__V1__PairResult *pr = rep->results[i];
      if (!pr->wrench_a || !pr->wrench_a->force || !pr->wrench_a->torque) continue;
      int fi = (int)pr->a - 1;
      double f[3] = {pr->wrench_a->force->x, pr->wrench_a->force->y, pr->wrench_a->force->z};
      double tq[3] = {pr->wrench_a->torque->x, pr->wrench_a->torque->y, pr->wrench_a->torque->z};
      double r[3] = {b[fi].p[0] - p[0], b[fi].p[1] - p[1], b[fi].p[2] - p[2]}, rf[3];
      cross(r, f, rf);
      for (int d = 0; d < 3; d++) F[d] += f[d], Tq[d] += tq[d] + rf[d];
      for (size_t k2 = 0; k2 < pr->n_patches; k2++) {
        const Contactd__V1__Patch *pa = pr->patches[k2];
        if (!pa->point) continue;
        fn += pa->normal_force_magnitude;
        ecp[0] += pa->normal_force_magnitude * pa->point->x;
        ecp[1] += pa->normal_force_magnitude * pa->point->y;
        ecp[2] += pa->normal_force_magnitude * pa->point->z;
      }
    }
    cc_free(rep);
    /* ECP in the desk frame */
    double el[3] = {0, 0, 0}, margin = 0;
    if (fn > 0) {
      double rel[3] = {ecp[0] / fn - p[0], ecp[1] / fn - p[1], ecp[2] / fn - p[2]};
      mtv(&R, rel, el);
      margin = L / 2 - fmax(fabs(el[0]), fabs(el[1]));
      if (margin < min_margin) min_margin = margin;
      if (margin < 0) outside++;
    }
    if (k % every == 0) {
      double th = 2 * atan2(q[3], q[0]);
      printf("%6.2f %8.4f %8.4f %8.4f %8.4f %8.4f %8.4f %9.5f %9.5f %9.3f %8.4f\n", t, p[0], p[1], th, v[0], v[1], w[2],
             el[0], el[1], fn, margin);
    }
    if (k == steps) break;
    /* push at the CM, gravity */
    double push[3] = {22.5 * sin(2 * M_PI * t) + 22.5, 22.5 * cos(2 * M_PI * t) + 22.5, 0};
    Tq[2] += 2.1 * cos(2 * M_PI * t);
    for (int d = 0; d < 3; d++) v[d] += dt * ((F[d] + push[d]) / M - (d == 2 ? G : 0));
    /* angular: body frame Euler equations */
    double wb[3], tb[3], Iw[3], gyro[3];
    mtv(&R, w, wb);
    mtv(&R, Tq, tb);
    for (int d = 0; d < 3; d++) Iw[d] = Ib[d] * wb[d];
    cross(wb, Iw, gyro);
    for (int d = 0; d < 3; d++) wb[d] += dt * (tb[d] - gyro[d]) / Ib[d];
    mv(&R, wb, w);
    for (int d = 0; d < 3; d++) p[d] += dt * v[d];
    double dq[4] = {0.5 * (-w[0] * q[1] - w[1] * q[2] - w[2] * q[3]), 0.5 * (w[0] * q[0] + w[1] * q[3] - w[2] * q[2]),
                    0.5 * (-w[0] * q[3] + w[1] * q[0] + w[2] * q[1]), 0.5 * (w[0] * q[2] - w[1] * q[1] + w[2] * q[0])};
    double n = 0;
    for (int d = 0; d < 4; d++) q[d] += dt * dq[d], n += q[d] * q[d];
    for (int d = 0; d < 4; d++) q[d] /= sqrt(n);
  }
  clock_gettime(CLOCK_MONOTONIC, &ts);
  double wall = (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec - t0w;
  printf("%ld steps in %.2f s (%.0f steps/s); ECP inside the convex hull of the feet at every step: %s "
         "(smallest margin %.4f m of %.2f m)\n",
         steps + 1, wall, (double)(steps + 1) / wall, outside ? "NO" : "yes", min_margin, L / 2);
  cc_close(c);
  return outside ? 1 : 0;
}
