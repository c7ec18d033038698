/* manysim — many simulations, one cache: N client processes (default 8),
 * each running its own scene of the same geometries against one contactd.
 *
 * Every process registers the same three geometries (a compliant sphere
 * primitive, a rigid box sent as OBJ file bytes, a rigid floor), opens a
 * stream over its own scene (four balls dropped from client-specific
 * heights onto the floor and the box; every pair involving a ball) and
 * integrates the balls itself (semi-implicit Euler, 1 ms steps,
 * gravity plus the contact wrenches of every StreamResult). The daemon
 * builds each geometry once, whichever client asks first; every other
 * registration is a cache hit. The parent prints each client's step rate and
 * the cache statistics before and after, and exits 1 if anything was built
 * more than once.
 *
 * usage: manysim [--addr A] [--clients N] [--steps S] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cc_client.h"

#define NBALLS 4
static const double RADIUS = 0.05, MASS = 0.5, G = 9.81, DT = 1e-3;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A closed box (0.3 x 0.3 x 0.1 m, centred) as OBJ text. */
static const char BOX_OBJ[] =
    "v -0.15 -0.15 -0.05\nv 0.15 -0.15 -0.05\nv 0.15 0.15 -0.05\nv -0.15 0.15 -0.05\n"
    "v -0.15 -0.15 0.05\nv 0.15 -0.15 0.05\nv 0.15 0.15 0.05\nv -0.15 0.15 0.05\n"
    "f 1 3 2\nf 1 4 3\nf 5 6 7\nf 5 7 8\nf 1 2 6\nf 1 6 5\n"
    "f 2 3 7\nf 2 7 6\nf 3 4 8\nf 3 8 7\nf 4 1 5\nf 4 5 8\n";

static int register_all(cc_client *c, char ids[3][CC_ID_MAX], cc_error *e) {
  cc_shape ball = {.kind = CC_SHAPE_SPHERE, .a = RADIUS, .modulus = 1e5, .hint = RADIUS / 4, .dissipation = 2,
                   .friction = 0.5, .name = "ball"};
  cc_shape box = {.kind = CC_SHAPE_MESH_FILE, .data = BOX_OBJ, .size = sizeof BOX_OBJ - 1, .rigid = 1,
                  .friction = 0.5, .name = "box.obj"};
  cc_shape floor = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1, .friction = 0.5, .name = "floor"};
  if (cc_register_shape(c, &ball, ids[0], NULL, e)) return -1;
  if (cc_register_shape(c, &box, ids[1], NULL, e)) return -1;
  if (cc_register_shape(c, &floor, ids[2], NULL, e)) return -1;
  return 0;
}

/* One client's simulation; writes "steps seconds z0 z1 z2 z3" to fd. */
static int child(const char *addr, int k, int steps, int fd) {
  cc_client *c;
  cc_error e;
  cc_options ropt; /* through a server restart: a lost query is sent once more (queries are idempotent) */
  cc_options_default(&ropt);
  ropt.retry_queries = 1;
  if (cc_connect(addr, &ropt, &c, &e)) {
    fprintf(stderr, "client %d: %s\n", k, e.message);
    return 1;
  }
  char ids[3][CC_ID_MAX];
  if (register_all(c, ids, &e)) {
    fprintf(stderr, "client %d: register: %s\n", k, e.message);
    return 1;
  }
  /* bodies 1..4 balls, 5 box (resting on the floor), 6 floor */
  cc_body b[NBALLS + 2];
  memset(b, 0, sizeof b);
  for (int i = 0; i < NBALLS; i++) {
    b[i].id = (uint32_t)(i + 1);
    b[i].geometry_id = ids[0];
    b[i].p[0] = -0.12 + 0.08 * i + 0.01 * k;
    b[i].p[1] = 0.02 * (k % 3);
    b[i].p[2] = 0.25 + 0.03 * i + 0.01 * k;
  }
  b[NBALLS].id = NBALLS + 1;
  b[NBALLS].geometry_id = ids[1];
  b[NBALLS].p[2] = 0.05;
  b[NBALLS + 1].id = NBALLS + 2;
  b[NBALLS + 1].geometry_id = ids[2];
  /* The box rests on the floor and is static: only pairs with a ball. */
  uint32_t pairs[NBALLS * 3 + NBALLS * (NBALLS - 1) / 2][2];
  size_t np = 0;
  for (int i = 0; i < NBALLS; i++) {
    pairs[np][0] = b[i].id, pairs[np++][1] = NBALLS + 1;
    pairs[np][0] = b[i].id, pairs[np++][1] = NBALLS + 2;
    for (int j = i + 1; j < NBALLS; j++) pairs[np][0] = b[i].id, pairs[np++][1] = b[j].id;
  }
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.detail = CONTACTD__V1__DETAIL__DETAIL_WRENCH;
  uint64_t sid;
  if (cc_stream_open_bodies(c, b, NBALLS + 2, (const uint32_t(*)[2])pairs, np, &opt, 0, &sid, &e)) {
    fprintf(stderr, "client %d: open stream: %s\n", k, e.message);
    return 1;
  }
  const double I = 0.4 * MASS * RADIUS * RADIUS;
  double t0 = now_s();
  for (int s = 1; s <= steps; s++) {
    if (cc_stream_send(c, sid, (uint64_t)s, b, NBALLS, &e)) {
      fprintf(stderr, "client %d: update: %s\n", k, e.message);
      return 1;
    }
    Contactd__V1__StreamResult *r;
    int rc;
    while ((rc = cc_stream_recv(c, -1, &r, &e)) && e.reopened) {
      /* The server restarted and the library reopened the stream: this
       * step's update went with the old connection; send it again. */
      fprintf(stderr, "client %d: %s\n", k, e.message);
      if (cc_stream_send(c, sid, (uint64_t)s, b, NBALLS, &e)) break;
    }
    if (rc) {
      fprintf(stderr, "client %d: result: %s\n", k, e.message);
      return 1;
    }
    double F[NBALLS][3] = {{0}}, T[NBALLS][3] = {{0}};
    for (size_t p = 0; p < r->n_results; p++) {
      const Contactd__V1__PairResult *pr = r->results[p];
      if (!pr->wrench_a || !pr->wrench_b) continue;
      const Contactd__V1__Wrench *w[2] = {pr->wrench_a, pr->wrench_b};
      uint32_t id[2] = {pr->a, pr->b};
      for (int s2 = 0; s2 < 2; s2++) {
        if (id[s2] < 1 || id[s2] > NBALLS || !w[s2]->force || !w[s2]->torque) continue;
        int i = (int)id[s2] - 1;
        F[i][0] += w[s2]->force->x, F[i][1] += w[s2]->force->y, F[i][2] += w[s2]->force->z;
        T[i][0] += w[s2]->torque->x, T[i][1] += w[s2]->torque->y, T[i][2] += w[s2]->torque->z;
      }
    }
    cc_free(r);
    for (int i = 0; i < NBALLS; i++) {
      for (int d = 0; d < 3; d++) {
        b[i].v[d] += DT * (F[i][d] / MASS - (d == 2 ? G : 0));
        b[i].w[d] += DT * T[i][d] / I;
        b[i].p[d] += DT * b[i].v[d];
      }
      /* orientation: integrate the angular velocity into the quaternion */
      double *q = b[i].q;
      if (q[0] == 0 && q[1] == 0 && q[2] == 0 && q[3] == 0) q[0] = 1;
      double wx = b[i].w[0], wy = b[i].w[1], wz = b[i].w[2];
      double dq[4] = {0.5 * (-wx * q[1] - wy * q[2] - wz * q[3]), 0.5 * (wx * q[0] + wy * q[3] - wz * q[2]),
                      0.5 * (-wx * q[3] + wy * q[0] + wz * q[1]), 0.5 * (wx * q[2] - wy * q[1] + wz * q[0])};
      double n = 0;
      for (int d = 0; d < 4; d++) q[d] += DT * dq[d], n += q[d] * q[d];
      for (int d = 0; d < 4; d++) q[d] /= sqrt(n);
    }
  }
  double wall = now_s() - t0;
  cc_stream_close(c, sid, NULL, &e);
  cc_close(c);
  char line[256];
  int n = snprintf(line, sizeof line, "%d %.6f %.5f %.5f %.5f %.5f\n", steps, wall, b[0].p[2], b[1].p[2], b[2].p[2],
                   b[3].p[2]);
  return write(fd, line, (size_t)n) == n ? 0 : 1;
}

static int get_stats(const char *addr, Contactd__V1__StatsReply **s) {
  cc_client *c;
  cc_error e;
  if (cc_connect(addr, NULL, &c, &e) || cc_stats(c, s, &e)) {
    fprintf(stderr, "manysim: stats: %s\n", e.message);
    return -1;
  }
  cc_close(c);
  return 0;
}

int main(int argc, char **argv) {
  const char *addr = NULL;
  int nclients = 8, steps = 300;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--addr") == 0) addr = argv[i + 1];
    else if (strcmp(argv[i], "--clients") == 0) nclients = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--steps") == 0) steps = atoi(argv[i + 1]);
    else {
      fprintf(stderr, "usage: manysim [--addr A] [--clients N] [--steps S]\n");
      return 2;
    }
  }
  if (argc % 2 == 0 || nclients < 1 || nclients > 256 || steps < 1) {
    fprintf(stderr, "usage: manysim [--addr A] [--clients N] [--steps S]\n");
    return 2;
  }
  if (!addr) addr = cc_default_addr();
  Contactd__V1__StatsReply *s0, *s1;
  if (get_stats(addr, &s0)) return 3;
  int(*pipes)[2] = calloc((size_t)nclients, sizeof *pipes);
  pid_t *pids = calloc((size_t)nclients, sizeof *pids);
  double t0 = now_s();
  for (int k = 0; k < nclients; k++) {
    if (pipe(pipes[k])) return 1;
    pids[k] = fork();
    if (pids[k] == 0) {
      close(pipes[k][0]);
      _exit(child(addr, k, steps, pipes[k][1]));
    }
    close(pipes[k][1]);
  }
  int failed = 0;
  double total_rate = 0;
  printf("%6s %8s %9s %10s   %s\n", "client", "steps", "wall s", "steps/s", "ball heights at the end (m)");
  for (int k = 0; k < nclients; k++) {
    char buf[256] = "";
    ssize_t n = read(pipes[k][0], buf, sizeof buf - 1);
    close(pipes[k][0]);
    int st;
    waitpid(pids[k], &st, 0);
    int steps_k;
    double wall, z[4];
    if (n <= 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
        sscanf(buf, "%d %lf %lf %lf %lf %lf", &steps_k, &wall, &z[0], &z[1], &z[2], &z[3]) != 6) {
      printf("%6d failed\n", k);
      failed = 1;
      continue;
    }
    total_rate += steps_k / wall;
    printf("%6d %8d %9.3f %10.1f   %.4f %.4f %.4f %.4f\n", k, steps_k, wall, steps_k / wall, z[0], z[1], z[2], z[3]);
  }
  double wall = now_s() - t0;
  if (get_stats(addr, &s1)) return 3;
  unsigned long long builds = s1->cache_builds - s0->cache_builds, hits = s1->cache_hits - s0->cache_hits;
  printf("%d clients in %.2f s: %.1f steps/s in total\n", nclients, wall, total_rate);
  printf("cache: %llu builds, %llu hits during the run (3 geometries x %d clients = %d registrations); "
         "%llu entries, %.2f MiB now\n",
         builds, hits, nclients, 3 * nclients, (unsigned long long)s1->cache_entries,
         (double)s1->cache_bytes / 1048576.0);
  int once = builds <= 3 && builds + hits == 3ull * (unsigned long long)nclients;
  printf("%s\n", once ? "each geometry was built at most once" : "SOME GEOMETRY WAS BUILT MORE THAN ONCE");
  cc_free(s0);
  cc_free(s1);
  free(pipes);
  free(pids);
  return failed || !once ? 1 : 0;
}
