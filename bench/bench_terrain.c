/* bench_terrain.c — heightfield terrain (the DEM terrain paper): registration time of a
 * 4096^2 grid, and the cost of a contact query for a compliant sphere
 * (hydroelastic) and a rigid sphere (point contact) on a 4096^2 grid vs a
 * 64^2 grid holding the same local terrain — it should be the same, since
 * only the terrain under the body is touched. Prints numbers, asserts
 * nothing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ce.h"
#include "bench_util.h"

static double now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

static double height(double x, double y) { return 0.05 * sin(3 * x) * cos(2 * y) + 0.01 * sin(17 * x + 5 * y); }

static double *grid(int n, double d, double o) {
  double *z = malloc((size_t)n * n * sizeof *z);
  if (!z) return NULL;
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) z[(size_t)j * n + i] = height(o + i * d, o + j * d);
  return z;
}

static ce_geometry *terrain(const double *z, int n, double d, double o, int cont, double *seconds) {
  ce_props pr;
  memset(&pr, 0, sizeof pr);
  pr.compliance = CE_RIGID;
  ce_geometry *g = NULL;
  ce_error err;
  double t0 = now(CLOCK_THREAD_CPUTIME_ID);
  if (ce_geometry_from_heightfield(z, n, n, d, d, (ce_vec3){o, o, 0}, cont, &pr, &g, &err) != CE_OK) {
    fprintf(stderr, "heightfield: %s\n", err.message);
    exit(1);
  }
  if (seconds) *seconds = now(CLOCK_THREAD_CPUTIME_ID) - t0;
  return g;
}

/* (bodies at rest: the bench material's dissipation and friction change
 * nothing here) */
static ce_geometry *sphere(ce_compliance c, double r, double hint) {
  ce_geometry *g = bench_sphere(c, r, hint);
  if (!g) exit(1);
  return g;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median wall and thread-CPU time per query over reps (after one warm-up). */
static void time_query(const char *label, const ce_geometry *s, const ce_geometry *t, double r, int reps,
                       double lift) {
  ce_arena *arena = ce_arena_create(1 << 20);
  ce_body a, b;
  memset(&a, 0, sizeof a);
  memset(&b, 0, sizeof b);
  a.geometry = s;
  b.geometry = t;
  a.X_WB.R.m[0][0] = a.X_WB.R.m[1][1] = a.X_WB.R.m[2][2] = 1;
  b.X_WB = a.X_WB;
  double x = 0.31, y = 0.17;
  a.X_WB.p = (ce_vec3){x, y, height(x, y) + r - 0.01 + lift};
  ce_options opt;
  ce_options_default(&opt);
  ce_result res;
  ce_error err;
  double *wall = malloc((size_t)reps * sizeof *wall), *cpu = malloc((size_t)reps * sizeof *cpu);
  for (int k = -1; k < reps; k++) {
    ce_arena_reset(arena);
    double w0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_THREAD_CPUTIME_ID);
    if (ce_contact(&a, &b, &opt, arena, &res, &err) != CE_OK) {
      fprintf(stderr, "%s: %s\n", label, err.message);
      exit(1);
    }
    double w1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_THREAD_CPUTIME_ID);
    if (k >= 0) {
      wall[k] = w1 - w0;
      cpu[k] = c1 - c0;
    }
  }
  qsort(wall, (size_t)reps, sizeof *wall, cmp);
  qsort(cpu, (size_t)reps, sizeof *cpu, cmp);
  printf("  %-34s %9.1f us wall %9.1f us cpu  status %d  fz %.6g N  candidates %lld  faces %d\n", label,
         1e6 * wall[reps / 2], 1e6 * cpu[reps / 2], (int)res.status, res.wrench_a.force.z,
         (long long)res.candidate_pairs, res.surface.nf);
  free(wall);
  free(cpu);
  ce_arena_destroy(arena);
}

int main(void) {
  const double d = 0.05;
  const int big = 4096, small = 64;
  printf("bench_terrain: spacing %.3g m, terrain 0.05 sin(3x) cos(2y) + 0.01 sin(17x + 5y)\n", d);
  double *zb = grid(big, d, -0.5 * d * big);
  double *zs = grid(small, d, -0.5 * d * small);
  if (!zb || !zs) return 1;
  double treg1 = 0, treg2 = 0;
  ce_geometry *tb1 = terrain(zb, big, d, -0.5 * d * big, 1, &treg1);
  ce_geometry *tb = terrain(zb, big, d, -0.5 * d * big, 2, &treg2);
  ce_geometry_free(tb1);
  ce_geometry *ts = terrain(zs, small, d, -0.5 * d * small, 2, NULL);
  ce_geometry_info info;
  ce_geometry_get_info(tb, &info);
  printf("registration of %d x %d: %.1f ms cpu (C1), %.1f ms cpu (C2); %.1f MB held\n", big, big, 1e3 * treg1,
         1e3 * treg2, info.bytes / 1048576.0);

  ce_heightfield_point p;
  const int ne = 1000000;
  double t0 = now(CLOCK_THREAD_CPUTIME_ID), acc = 0;
  for (int k = 0; k < ne; k++) {
    ce_heightfield_eval(tb, -10 + 20.0 * k / ne, 3.3 - 7.0 * k / ne, &p, NULL);
    acc += p.height;
  }
  printf("ce_heightfield_eval (height, normal, curvature): %.1f ns cpu per call (checksum %.6g)\n",
         1e9 * (now(CLOCK_THREAD_CPUTIME_ID) - t0) / ne, acc);

  ce_geometry *cs = sphere(CE_COMPLIANT, 0.25, 0.025);
  ce_geometry *rs = sphere(CE_RIGID, 0.25, 0.025);
  printf("compliant sphere r 0.25 m (hint 0.025 m), 1 cm deep (hydroelastic):\n");
  time_query("64 x 64 grid", cs, ts, 0.25, 200, 0);
  time_query("4096 x 4096 grid", cs, tb, 0.25, 200, 0);
  {
    ce_props hp;
    memset(&hp, 0, sizeof hp);
    hp.compliance = CE_RIGID;
    ce_shape hs;
    memset(&hs, 0, sizeof hs);
    hs.type = CE_SHAPE_HALFSPACE;
    ce_geometry *h = NULL;
    if (ce_geometry_from_shape(&hs, &hp, &h, NULL) != CE_OK) return 1;
    time_query("reference: rigid half space z = 0", cs, h, 0.25 - height(0.31, 0.17), 200, 0);
    ce_geometry_free(h);
  }
  time_query("1 m above the 4096 x 4096 grid", cs, tb, 0.25, 20000, 1.0);
  printf("rigid sphere r 0.25 m, 1 cm deep (point contact, Newton on the smooth surface):\n");
  time_query("64 x 64 grid", rs, ts, 0.25, 2000, 0);
  time_query("4096 x 4096 grid", rs, tb, 0.25, 2000, 0);
  time_query("1 m above the 4096 x 4096 grid", rs, tb, 0.25, 20000, 1.0);
  ce_geometry_free(rs);
  ce_geometry_free(cs);
  ce_geometry_free(ts);
  ce_geometry_free(tb);
  free(zb);
  free(zs);
  return 0;
}
