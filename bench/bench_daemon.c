/* bench_daemon.c — contactd over loopback (prints numbers, asserts nothing).
 *
 *  1. round trip p50/p99 of a 2-body wrench-only ContactQuery (compliant
 *     sphere on a rigid half space), one client, one request in flight,
 *     back to back and once per millisecond (a 1 kHz controller), with
 *     the loop polling for results (result_poll_us, default) and without;
 *     beside it a HasGeometry, which the loop answers without a worker,
 *     and a plain loopback TCP echo with no daemon: the machine's floor;
 *  2. pairs per second for a 500-body scene (10 x 10 x 5 lattice of
 *     compliant spheres, each touching its lattice neighbours: 1300 pairs
 *     from the broad phase) with 1 and with 2 workers;
 *  3. the same round trip as 1 while a second client registers 4096^2
 *     heightfields (134 MB frames), and while it asks for the contact
 *     surfaces of the 500-body scene (a reply of several MB), and while
 *     two clients register fine spheres (geometry builds of ~1 s; with the
 *     default build_workers, and with builds allowed on both workers): how
 *     long large requests hold up everybody else's small ones (p50, p99
 *     and the longest wait).
 *
 * Starts the real daemon (argv[1], or ../server/daemon/contactd next to this
 * binary's directory) on an ephemeral port and talks to it through the C
 * client library (client/cc_client.h), as a user's program would. */
#include "bench_tmp.h"
#include <arpa/inet.h>
#include <errno.h>
#include <libgen.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <pthread.h>

#include "cc_client.h"

static char daemon_path[4096];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- sockets and the daemon -------------------------------------------- */

typedef struct daemon { pid_t pid; int port; char log[512]; } daemon_t;

/* config: a config file, or NULL for the defaults. */
static void start_daemon(daemon_t *d, int workers, const char *config) {
  snprintf(d->log, sizeof d->log, "%s/bench_daemon_%d.log", bench_tmp_root(), (int)getpid());
  char w[16];
  snprintf(w, sizeof w, "%d", workers);
  d->pid = fork();
  if (d->pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    if (config)
      execl(daemon_path, daemon_path, "--listen", "127.0.0.1:0", "--workers", w, "--config", config, (char *)NULL);
    else
      execl(daemon_path, daemon_path, "--listen", "127.0.0.1:0", "--workers", w, (char *)NULL);
    _exit(127);
  }
  /* the daemon logs its bound port: "msg=\"listening\" tcp=127.0.0.1 port=N" */
  d->port = 0;
  for (int i = 0; i < 1000 && !d->port; i++) {
    usleep(10000);
    FILE *f = fopen(d->log, "r");
    char line[512];
    while (f && fgets(line, sizeof line, f)) {
      char *c = strstr(line, "msg=\"listening\" tcp=");
      if (c && (c = strstr(c, "port="))) d->port = atoi(c + 5);
    }
    if (f) fclose(f);
  }
  if (!d->port) { fprintf(stderr, "bench: daemon did not start (%s)\n", daemon_path); exit(1); }
}

static void stop_daemon(daemon_t *d) {
  kill(d->pid, SIGTERM);
  int st;
  waitpid(d->pid, &st, 0);
  unlink(d->log);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static cc_client *connect_daemon(const daemon_t *d) {
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d->port);
  cc_client *c;
  cc_error e;
  if (cc_connect(addr, NULL, &c, &e) != CC_OK) {
    fprintf(stderr, "bench: connect %s: %s\n", addr, e.message);
    exit(1);
  }
  return c;
}

static void register_or_die(cc_client *c, const cc_shape *s, char id[CC_ID_MAX]) {
  cc_error e;
  if (cc_register_shape(c, s, id, NULL, &e) != CC_OK) {
    fprintf(stderr, "bench: register failed: %s\n", e.message);
    exit(1);
  }
}

static const cc_shape SPHERE = {.kind = CC_SHAPE_SPHERE, .a = 0.1, .modulus = 1e6, .hint = 0.05};
static const cc_shape PLANE = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1};

static Contactd__V1__ContactReply *query_or_die(cc_client *c, const cc_body *b, size_t n,
                                                const uint32_t (*pairs)[2], size_t npairs,
                                                const Contactd__V1__QueryOptions *opt) {
  Contactd__V1__ContactReply *r = NULL;
  cc_error e;
  if (cc_query_bodies(c, b, n, pairs, npairs, opt, &r, &e) != CC_OK) {
    fprintf(stderr, "bench: query failed: %s\n", e.message);
    exit(1);
  }
  return r;
}

/* The small request of 1 and 3: a compliant sphere on a rigid half space,
 * wrench only, on its own connection. */
typedef struct probe {
  cc_client *c;
  char sphere[CC_ID_MAX], plane[CC_ID_MAX];
  cc_body b[2];
  uint32_t pair[1][2];
  Contactd__V1__QueryOptions opt;
} probe_t;

static void probe_open(probe_t *p, const daemon_t *d) {
  p->c = connect_daemon(d);
  register_or_die(p->c, &SPHERE, p->sphere);
  register_or_die(p->c, &PLANE, p->plane);
  p->b[0] = (cc_body){.id = 1, .geometry_id = p->sphere, .p = {0, 0, 0.09}};
  p->b[1] = (cc_body){.id = 2, .geometry_id = p->plane};
  p->pair[0][0] = 1;
  p->pair[0][1] = 2;
  contactd__v1__query_options__init(&p->opt);
  p->opt.detail = CONTACTD__V1__DETAIL__DETAIL_WRENCH;
}

/* One round trip, seconds: the query, or (has != 0) a HasGeometry, which
 * the loop answers itself. */
static double probe_once(probe_t *p, int has) {
  double t0 = now_s();
  if (has) {
    const char *ids[1] = {p->sphere};
    Contactd__V1__HasGeometryReply *r = NULL;
    cc_error e;
    if (cc_has(p->c, ids, 1, &r, &e) != CC_OK) { fprintf(stderr, "bench: has failed: %s\n", e.message); exit(1); }
    double dt = now_s() - t0;
    cc_free(r);
    return dt;
  }
  Contactd__V1__ContactReply *r = query_or_die(p->c, p->b, 2, (const uint32_t(*)[2])p->pair, 1, &p->opt);
  double dt = now_s() - t0;
  if (r->n_results != 1) { fprintf(stderr, "bench: expected one pair result\n"); exit(1); }
  cc_free(r);
  return dt;
}

/* Median and p99 of n round trips (after warm-up) made by `trip`, one at a
 * time: back to back (gap_us 0), or gap_us apart like a controller that
 * asks once per cycle. */
static void rtt_series(double (*trip)(void *), void *arg, int gap_us, const char *what) {
  const int warm = 200, n = gap_us ? 2000 : 5000;
  double *t = malloc(sizeof(double) * n);
  for (int i = 0; i < warm + n; i++) {
    if (gap_us) usleep((useconds_t)gap_us);
    double dt = trip(arg);
    if (i >= warm) t[i - warm] = dt;
  }
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  char how[32] = "back to back";
  if (gap_us) snprintf(how, sizeof how, "one per %g ms", gap_us * 1e-3);
  printf("rtt  %s, %s: p50 %.1f us  p99 %.1f us  (n=%d)\n", what, how, t[n / 2] * 1e6, t[(int)(n * 0.99)] * 1e6, n);
  free(t);
}

/* The floor: the same loopback TCP round trip with no daemon, between this
 * process and a child that echoes 200-byte messages (about the size of the
 * query and its reply). */
static double echo_once(void *arg) {
  int fd = *(int *)arg;
  char b[200] = {0};
  double t0 = now_s();
  if (write(fd, b, sizeof b) != (ssize_t)sizeof b) exit(1);
  for (size_t got = 0; got < sizeof b;) {
    ssize_t r = read(fd, b + got, sizeof b - got);
    if (r <= 0) exit(1);
    got += (size_t)r;
  }
  return now_s() - t0;
}

static void bench_floor(void) {
  int ls = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 1) ||
      getsockname(ls, (struct sockaddr *)&a, &len)) { perror("bench: echo socket"); exit(1); }
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int s = accept(ls, NULL, NULL);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    char b[4096];
    for (ssize_t r; (r = read(s, b, sizeof b)) > 0;)
      if (write(s, b, (size_t)r) != r) break;
    _exit(0);
  }
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (struct sockaddr *)&a, sizeof a)) { perror("bench: echo connect"); exit(1); }
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  rtt_series(echo_once, &fd, 0, "floor: loopback TCP echo of 200 bytes, no daemon");
  rtt_series(echo_once, &fd, 1000, "floor: loopback TCP echo of 200 bytes, no daemon");
  close(fd);
  close(ls);
  waitpid(pid, NULL, 0);
}

static double query_trip(void *p) { return probe_once(p, 0); }
static double has_trip(void *p) { return probe_once(p, 1); }

static void bench_rtt(const char *config, const char *label) {
  daemon_t d;
  start_daemon(&d, 2, config);
  probe_t p;
  probe_open(&p, &d);
  char what[256];
  snprintf(what, sizeof what, "HasGeometry (answered on the loop), %s", label);
  rtt_series(has_trip, &p, 0, what);
  snprintf(what, sizeof what, "2-body wrench-only query, %s", label);
  rtt_series(query_trip, &p, 0, what);
  rtt_series(query_trip, &p, 1000, what);
  cc_close(p.c);
  stop_daemon(&d);
}

static void bench_scene(int workers) {
  daemon_t d;
  start_daemon(&d, workers, NULL);
  cc_client *c = connect_daemon(&d);
  char sphere[CC_ID_MAX];
  register_or_die(c, &SPHERE, sphere);
  enum { NX = 10, NY = 10, NZ = 5, N = NX * NY * NZ };
  cc_body *b = calloc(N, sizeof *b);
  int k = 0;
  for (int x = 0; x < NX; x++)
    for (int y = 0; y < NY; y++)
      for (int z = 0; z < NZ; z++, k++) {
        b[k].id = (uint32_t)k + 1;
        b[k].geometry_id = sphere;
        b[k].p[0] = 0.19 * x;
        b[k].p[1] = 0.19 * y;
        b[k].p[2] = 0.19 * z;
      }
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.detail = CONTACTD__V1__DETAIL__DETAIL_WRENCH;
  cc_free(query_or_die(c, b, N, NULL, 0, &opt)); /* warm-up */
  const int reps = 5;
  size_t pairs = 0;
  double t0 = now_s();
  for (int i = 0; i < reps; i++) {
    Contactd__V1__ContactReply *r = query_or_die(c, b, N, NULL, 0, &opt);
    pairs = r->n_results;
    cc_free(r);
  }
  double dt = now_s() - t0;
  printf("scene %d bodies, %zu pairs (all pairs, compliant spheres): %d worker%s: %.0f pairs/s (%.1f ms/query)\n",
         N, pairs, workers, workers > 1 ? "s" : " ", (double)pairs * reps / dt, dt / reps * 1e3);
  free(b);
  cc_close(c);
  stop_daemon(&d);
}

/* ---- 3. small requests during large ones --------------------------------- */

typedef struct loader {
  const daemon_t *d;
  int rounds;
  double seconds; /* per large request, mean */
  double mbytes;  /* size of one, MB on the wire */
  volatile int done;
} loader_t;

/* Registers a new 4096^2 heightfield each round (a cache hit would skip the
 * build, not the decode). */
static void *upload_main(void *arg) {
  loader_t *u = arg;
  cc_client *c = connect_daemon(u->d);
  enum { N = 4096 };
  double *z = malloc(sizeof(double) * N * N);
  if (!z) { fprintf(stderr, "bench: out of memory\n"); exit(1); }
  double t = 0;
  for (int r = 0; r < u->rounds; r++) {
    for (size_t k = 0; k < (size_t)N * N; k++) z[k] = 1e-3 * (double)((k * 2654435761u + (size_t)r) % 97);
    cc_shape s = {.kind = CC_SHAPE_HEIGHT_FIELD, .rigid = 1, .heights = z, .nx = N, .ny = N, .dx = 0.01, .dy = 0.01};
    char id[CC_ID_MAX];
    double t0 = now_s();
    register_or_die(c, &s, id);
    t += now_s() - t0;
  }
  u->seconds = t / u->rounds;
  u->mbytes = 8.0 * N * N / 1e6;
  free(z);
  cc_close(c);
  u->done = 1;
  return NULL;
}

/* Asks for the full contact surfaces of the 500-body lattice of
 * bench_scene (hint 0.02) each round. */
static void *surfaces_main(void *arg) {
  loader_t *u = arg;
  cc_client *c = connect_daemon(u->d);
  char sphere[CC_ID_MAX];
  cc_shape fine = SPHERE;
  fine.hint = 0.02;
  register_or_die(c, &fine, sphere);
  enum { NX = 10, NY = 10, NZ = 5, N = NX * NY * NZ };
  cc_body *b = calloc(N, sizeof *b);
  for (int k = 0; k < N; k++) {
    b[k].id = (uint32_t)k + 1;
    b[k].geometry_id = sphere;
    b[k].p[0] = 0.19 * (k / (NY * NZ));
    b[k].p[1] = 0.19 * (k / NZ % NY);
    b[k].p[2] = 0.19 * (k % NZ);
  }
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.detail = CONTACTD__V1__DETAIL__DETAIL_SURFACE;
  double t = 0;
  for (int r = 0; r < u->rounds; r++) {
    double t0 = now_s();
    Contactd__V1__ContactReply *rep = query_or_die(c, b, N, NULL, 0, &opt);
    t += now_s() - t0;
    u->mbytes = (double)contactd__v1__contact_reply__get_packed_size(rep) / 1e6;
    cc_free(rep);
  }
  u->seconds = t / u->rounds;
  free(b);
  cc_close(c);
  u->done = 1;
  return NULL;
}

/* Two clients at once each register a new compliant sphere of hint 0.005
 * each round (radii differ, so every one is built). */
typedef struct builder_arg { loader_t *u; int k; double t; } builder_arg;

static void *builder_main(void *arg) {
  builder_arg *a = arg;
  cc_client *c = connect_daemon(a->u->d);
  for (int r = 0; r < a->u->rounds; r++) {
    cc_shape s = SPHERE;
    s.a = 0.1 + 0.0001 * (a->k * 10 + r);
    s.hint = 0.005;
    char id[CC_ID_MAX];
    double t0 = now_s();
    register_or_die(c, &s, id);
    a->t += now_s() - t0;
  }
  cc_close(c);
  return NULL;
}

static void *builds_main(void *arg) {
  loader_t *u = arg;
  builder_arg a[2] = {{u, 0, 0}, {u, 1, 0}};
  pthread_t th[2];
  for (int k = 0; k < 2; k++) pthread_create(&th[k], NULL, builder_main, &a[k]);
  for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
  u->seconds = (a[0].t + a[1].t) / (2 * u->rounds);
  u->done = 1;
  return NULL;
}

static void bench_stall(void *(*load)(void *), const char *what, const char *config) {
  daemon_t d;
  start_daemon(&d, 2, config);
  probe_t p;
  probe_open(&p, &d);
  for (int i = 0; i < 300; i++) probe_once(&p, 0);
  loader_t u = {.d = &d, .rounds = 3};
  pthread_t th;
  pthread_create(&th, NULL, load, &u);
  size_t cap = 1 << 20, n = 0;
  double *t = malloc(sizeof(double) * cap);
  while (!u.done && n < cap) t[n++] = probe_once(&p, 0);
  pthread_join(th, NULL);
  qsort(t, n, sizeof *t, cmp_d);
  size_t over = 0;
  while (over < n && t[n - 1 - over] > 0.010) over++;
  char size[32] = "";
  if (u.mbytes > 0) snprintf(size, sizeof size, "%.0f MB, ", u.mbytes);
  printf("rtt  the same query while %s (%s%.0f ms each, %d rounds): "
         "p50 %.1f us  p99 %.1f us  max %.1f ms  over 10 ms: %zu  (n=%zu)\n",
         what, size, u.seconds * 1e3, u.rounds, t[n / 2] * 1e6, t[(size_t)((double)n * 0.99)] * 1e6,
         t[n - 1] * 1e3, over, n);
  free(t);
  cc_close(p.c);
  stop_daemon(&d);
}

int main(int argc, char **argv) {
  if (argc > 1) snprintf(daemon_path, sizeof daemon_path, "%s", argv[1]);
  else {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) return 1;
    self[n] = 0;
    snprintf(daemon_path, sizeof daemon_path, "%s/../server/daemon/contactd", dirname(self));
  }
  if (access(daemon_path, X_OK) != 0) {
    fprintf(stderr, "bench_daemon: no contactd at %s (build the contactd target, or pass its path)\n", daemon_path);
    return 1;
  }
  bench_floor();
  bench_rtt(NULL, "result_poll_us 100 (default)");
  char nopoll[512], all[512];
  snprintf(nopoll, sizeof nopoll, "%s/bench_daemon_no_poll_%d.json", bench_tmp_root(), (int)getpid());
  snprintf(all, sizeof all, "%s/bench_daemon_build_workers_%d.json", bench_tmp_root(), (int)getpid());
  FILE *np = fopen(nopoll, "w");
  if (!np) { fprintf(stderr, "bench: cannot write %s\n", nopoll); return 1; }
  fprintf(np, "{\"limits\": {\"result_poll_us\": 0}}\n");
  fclose(np);
  bench_rtt(nopoll, "result_poll_us 0");
  unlink(nopoll);
  bench_scene(1);
  bench_scene(2);
  bench_stall(upload_main, "another client registers 4096^2 heightfields", NULL);
  bench_stall(surfaces_main, "another client asks for 1300 contact surfaces", NULL);
  bench_stall(builds_main, "two clients register 0.005 m spheres, build_workers 0 (default: 1 of 2)", NULL);
  FILE *f = fopen(all, "w");
  if (!f) { fprintf(stderr, "bench: cannot write %s\n", all); return 1; }
  fprintf(f, "{\"limits\": {\"build_workers\": 2}}\n");
  fclose(f);
  bench_stall(builds_main, "two clients register 0.005 m spheres, build_workers 2", all);
  unlink(all);
  return 0;
}
