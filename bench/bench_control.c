/* bench_control.c — a 1 kHz controller loop through the C client library:
 * each tick (1 ms apart; a late one starts at once, without catching up) sends the bodies' states and waits
 * for their contact, either as a stream update and its result or as one
 * ContactQuery. Prints, per mode: ticks, achieved rate, p50 / p99 / max
 * latency (send to result), ticks over 1 ms, and the client's CPU (share
 * of one core). bench/controller_loop.py runs it beside the Python client's
 * loop against one daemon.
 *
 * usage: bench_control ADDR [seconds [bodies]]   (bodies: spheres on a floor) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cc_client.h"

static double now_s(clockid_t clk) {
  struct timespec t;
  clock_gettime(clk, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void report(const char *mode, int nb, double *lat, int n, double wall, double cpu) {
  qsort(lat, (size_t)n, sizeof *lat, cmp);
  int over = 0;
  for (int i = 0; i < n; i++) over += lat[i] > 1e-3;
  printf("C       %-6s %3d bodies: %5d ticks %7.1f Hz  p50 %6.0f us  p99 %6.0f us  max %7.0f us  "
         "over 1 ms %4d  client CPU %4.1f%%\n",
         mode, nb, n, n / wall, lat[n / 2] * 1e6, lat[(int)(n * 0.99)] * 1e6, lat[n - 1] * 1e6, over,
         100.0 * cpu / wall);
  fflush(stdout);
}

/* mode 0: stream; 1: one query per tick */
static int run(cc_client *c, int mode, cc_body *b, int nb, const uint32_t (*pairs)[2], double secs) {
  cc_error err;
  uint64_t sid = 0;
  if (mode == 0 && cc_stream_open_bodies(c, b, (size_t)nb + 1, pairs, (size_t)nb, NULL, 0, &sid, &err)) {
    fprintf(stderr, "open stream: %s\n", err.message);
    return 1;
  }
  int cap = (int)(secs * 1000) + 1, k = 0;
  double *lat = malloc((size_t)cap * sizeof *lat);
  double t0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_PROCESS_CPUTIME_ID), due = t0;
  for (;; k++) {
    /* ticks 1 ms apart; a late tick starts at once (no catching up) */
    due += 1e-3;
    if (due < now_s(CLOCK_MONOTONIC)) due = now_s(CLOCK_MONOTONIC);
    if (due > t0 + secs || k >= cap) break;
    struct timespec next = {(time_t)due, (long)((due - (double)(time_t)due) * 1e9)};
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    for (int i = 0; i < nb; i++) b[i].p[2] = 0.045 + 0.0005 * (double)((k + i) % 5);
    double ts = now_s(CLOCK_MONOTONIC);
    if (mode == 0) {
      Contactd__V1__StreamResult *r = NULL;
      if (cc_stream_send(c, sid, (uint64_t)k + 1, b, (size_t)nb, &err) || cc_stream_next(c, sid, -1, &r, NULL, &err)) {
        fprintf(stderr, "stream tick %d: %s\n", k, err.message);
        return 1;
      }
      if (r->sequence != (uint64_t)k + 1 || r->n_results != (size_t)nb) {
        fprintf(stderr, "stream tick %d: sequence %llu\n", k, (unsigned long long)r->sequence);
        return 1;
      }
      cc_free(r);
    } else {
      Contactd__V1__ContactReply *r = NULL;
      if (cc_query_bodies(c, b, (size_t)nb + 1, pairs, (size_t)nb, NULL, &r, &err)) {
        fprintf(stderr, "query tick %d: %s\n", k, err.message);
        return 1;
      }
      cc_free(r);
    }
    lat[k] = now_s(CLOCK_MONOTONIC) - ts;
  }
  report(mode == 0 ? "stream" : "query", nb, lat, k, now_s(CLOCK_MONOTONIC) - t0,
         now_s(CLOCK_PROCESS_CPUTIME_ID) - c0);
  free(lat);
  if (mode == 0) cc_stream_close(c, sid, NULL, &err);
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s ADDR [seconds [bodies]]\n", argv[0]);
    return 2;
  }
  double secs = argc > 2 ? atof(argv[2]) : 10.0;
  int nb = argc > 3 ? atoi(argv[3]) : 1;
  cc_client *c;
  cc_error err;
  if (cc_connect(argv[1], NULL, &c, &err)) {
    fprintf(stderr, "connect: %s\n", err.message);
    return 1;
  }
  cc_shape ball = {.kind = CC_SHAPE_SPHERE, .a = 0.05, .modulus = 1e5, .hint = 0.0125};
  cc_shape floor_ = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1};
  char bid[CC_ID_MAX], fid[CC_ID_MAX];
  if (cc_register_shape(c, &ball, bid, NULL, &err) || cc_register_shape(c, &floor_, fid, NULL, &err)) {
    fprintf(stderr, "register: %s\n", err.message);
    return 1;
  }
  cc_body *b = calloc((size_t)nb + 1, sizeof *b);
  uint32_t(*pairs)[2] = calloc((size_t)nb, sizeof *pairs);
  for (int i = 0; i < nb; i++) {
    b[i] = (cc_body){.id = (uint32_t)i + 1, .geometry_id = bid, .p = {0.2 * (i % 10), 0.2 * (i / 10), 0.045}};
    pairs[i][0] = (uint32_t)i + 1;
    pairs[i][1] = (uint32_t)nb + 1;
  }
  b[nb] = (cc_body){.id = (uint32_t)nb + 1, .geometry_id = fid};
  int rc = run(c, 0, b, nb, (const uint32_t(*)[2])pairs, secs) || run(c, 1, b, nb, (const uint32_t(*)[2])pairs, secs);
  free(b);
  free(pairs);
  cc_close(c);
  return rc;
}
