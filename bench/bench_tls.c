/* bench_tls.c — what TLS and tokens cost contactd (prints numbers, asserts
 * nothing), all in one run against daemons started here with certificates
 * made now (tests/common/make_certs.sh):
 *
 *  1. queries/s, p50 and p99 of small 2-body queries (a compliant sphere on
 *     a rigid half space, wrench only) at 1 and 32 clients, each client a
 *     thread with its own cc_client keeping one query in flight, in
 *     rounds that take each mode in turn (so that a neighbour's load on a
 *     shared machine falls on all modes alike; queries/s is the rounds'
 *     mean, p50 and p99 their medians):
 *     plaintext, TLS 1.3, and TLS 1.3 with a token (a daemon with a
 *     principals file); beside them a Redis PING client of the same shape
 *     (a thread per connection, one PING in flight) against redis-server;
 *  2. TLS handshakes per second on one event loop (--io-threads 1): client
 *     threads connecting, handshaking, sending Hello and closing, in a loop;
 *  3. the loop's longest turn while 200 clients handshake at once, two
 *     ways: from the daemon, its contactd_loop_longest_turn_seconds and
 *     _cpu_seconds metrics (the callbacks of one turn, without the wait in
 *     the poll: wall time, and the thread's CPU time) before and after;
 *     and from the client side, the slowest round trip of small
 *     queries sent back to back on an already open connection of the same
 *     loop, before and during the 200 handshakes. On a small machine the
 *     second includes the CPU the 200 client threads' own handshakes take
 *     from the daemon.
 *
 * Usage: bench_tls [--daemon PATH] [--seconds S] [--rounds R] [--workers N]
 *                  [--redis-server PATH] [--no-redis] [--keep]
 * (--keep: leave the run's directory, with the daemons' logs)
 * Defaults: contactd next to this binary's directory (../server/daemon),
 * 5 rounds of 1 s per cell, 2 workers. The daemon has one I/O loop throughout, so
 * every connection's cryptography shares one thread. */
#include "bench_tmp.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cc_client.h"

#ifndef BENCH_SOURCE_DIR
#error "BENCH_SOURCE_DIR must name the source tree (for tests/common/make_certs.sh)"
#endif

static const char TOKEN[] = "bench-tls-token-0123456789abcdef";
/* SHA-256 of TOKEN, computed at start with the openssl CLI. */
static char g_token_hash[65];
static char g_dir[512], g_daemon[4096];
static int g_workers = 2;
static double g_seconds = 1;
static int g_rounds = 5;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "bench_tls: %s\n", what);
  exit(1);
}

static const char *path(const char *name) {
  static char buf[8][700];
  static int k;
  k = (k + 1) % 8;
  snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
  return buf[k];
}

/* ---- daemons -------------------------------------------------------------- */

typedef struct daemon {
  pid_t pid;
  int port, http_port;
  char log[700];
} daemon_t;

/* contactd --listen 127.0.0.1:0 --workers N --io-threads 1 plus extra (NULL-terminated). */
static void start_daemon(daemon_t *d, const char *tag, const char *const *extra) {
  snprintf(d->log, sizeof d->log, "%s/%s.log", g_dir, tag);
  char w[16];
  snprintf(w, sizeof w, "%d", g_workers);
  const char *argv[32] = {g_daemon, "--listen", "127.0.0.1:0", "--workers", w, "--io-threads", "1"};
  int n = 7;
  for (int i = 0; extra && extra[i] && n < 31; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  d->pid = fork();
  if (d->pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    execv(g_daemon, (char *const *)argv);
    _exit(127);
  }
  d->port = 0;
  for (int i = 0; i < 1000 && !d->port; i++) {
    usleep(10000);
    FILE *f = fopen(d->log, "r");
    char line[512];
    int ready = 0, port = 0;
    while (f && fgets(line, sizeof line, f)) {
      char *c = strstr(line, "msg=\"listening\" tcp=");
      if (c && (c = strstr(c, "port="))) port = atoi(c + 5);
      if ((c = strstr(line, " http_port="))) d->http_port = atoi(c + 11);
      ready |= strstr(line, "msg=\"ready\"") != NULL;
    }
    if (f) fclose(f);
    if (ready) d->port = port;
  }
  if (!d->port) die("a daemon did not start (see its log)");
}

/* contactd_loop_longest_turn_seconds{loop="0"} (cpu: ..._cpu_seconds) from GET /metrics, in us (-1: unread). */
static double longest_turn_us(const daemon_t *d, int cpu) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d->http_port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || !d->http_port || connect(fd, (struct sockaddr *)&a, sizeof a)) {
    if (fd >= 0) close(fd);
    return -1;
  }
  const char req[] = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(fd, req, sizeof req - 1, MSG_NOSIGNAL) < 0) die("metrics: send");
  static char body[1 << 20];
  size_t n = 0;
  ssize_t k;
  while (n + 1 < sizeof body && (k = recv(fd, body + n, sizeof body - 1 - n, 0)) > 0) n += (size_t)k;
  body[n] = 0;
  close(fd);
  const char *m = strstr(body, cpu ? "contactd_loop_longest_turn_cpu_seconds{loop=\"0\"} "
                                   : "contactd_loop_longest_turn_seconds{loop=\"0\"} ");
  return m ? 1e6 * atof(strchr(m, ' ') + 1) : -1;
}

/* CPU time the daemon's main thread (loop 0) has had, in ns
 * (/proc/PID/task/PID/schedstat, first field); -1 when unreadable. */
static double loop0_cpu_ns(const daemon_t *d) {
  char p[64];
  snprintf(p, sizeof p, "/proc/%d/task/%d/schedstat", (int)d->pid, (int)d->pid);
  FILE *f = fopen(p, "r");
  unsigned long long ns = 0;
  int ok = f && fscanf(f, "%llu", &ns) == 1;
  if (f) fclose(f);
  return ok ? (double)ns : -1;
}

static void stop_daemon(daemon_t *d) {
  kill(d->pid, SIGTERM);
  waitpid(d->pid, NULL, 0);
}

/* ---- the clients ------------------------------------------------------------ */

typedef enum { PLAIN, TLS, TLS_TOKEN, REDIS } mode_t_;
static const char *const MODE_NAME[] = {"plaintext", "TLS 1.3", "TLS 1.3 + token", "Redis PING (reference)"};

static cc_options options_for(mode_t_ m) {
  cc_options o;
  cc_options_default(&o);
  o.timeout_ms = 30000;
  if (m == TLS || m == TLS_TOKEN) {
    o.tls = 1;
    o.tls_ca_file = path("ca.pem");
  }
  if (m == TLS_TOKEN) o.token = TOKEN;
  return o;
}

static cc_client *connect_or_die(int port, mode_t_ m) {
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
  cc_options o = options_for(m);
  cc_client *c = NULL;
  cc_error e;
  if (cc_connect(addr, &o, &c, &e)) {
    fprintf(stderr, "bench_tls: connect (%s): %s\n", MODE_NAME[m], e.message);
    exit(1);
  }
  return c;
}

typedef struct scene {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
} scene;

static void register_scene(cc_client *c, scene *s) {
  cc_shape b = {.kind = CC_SHAPE_SPHERE, .a = 0.05, .modulus = 1e5, .hint = 0.0125};
  cc_shape f = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1};
  cc_error e;
  if (cc_register_shape(c, &b, s->ball, NULL, &e) || cc_register_shape(c, &f, s->floor, NULL, &e)) die(e.message);
}

/* One small query; its round trip in seconds. */
static double query_once(cc_client *c, const scene *s) {
  cc_body b[2];
  memset(b, 0, sizeof b);
  b[0].id = 1, b[0].geometry_id = s->ball, b[0].p[2] = 0.048;
  b[1].id = 2, b[1].geometry_id = s->floor;
  static const uint32_t pair[1][2] = {{1, 2}};
  Contactd__V1__QueryOptions qo = CONTACTD__V1__QUERY_OPTIONS__INIT;
  qo.detail = CONTACTD__V1__DETAIL__DETAIL_WRENCH;
  Contactd__V1__ContactReply *r = NULL;
  cc_error e;
  double t0 = now_s();
  if (cc_query_bodies(c, b, 2, pair, 1, &qo, &r, &e)) die(e.message);
  double dt = now_s() - t0;
  cc_free(r);
  return dt;
}

/* A Redis connection: PING, +PONG. */
static int redis_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a)) return -1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static double redis_ping(int fd) {
  char buf[64];
  double t0 = now_s();
  if (send(fd, "PING\r\n", 6, MSG_NOSIGNAL) != 6) die("redis: send");
  size_t got = 0;
  while (got < 7) {
    ssize_t n = recv(fd, buf + got, sizeof buf - got, 0);
    if (n <= 0) die("redis: connection lost");
    got += (size_t)n;
  }
  return now_s() - t0;
}

/* ---- 1: throughput and latency ------------------------------------------------ */

enum { MAX_SAMPLES = 1 << 17 };

typedef struct worker {
  pthread_t th;
  mode_t_ mode;
  int port;
  const scene *s;
  pthread_barrier_t *go;
  atomic_int *stop;
  float *lat; /* seconds */
  size_t n, count;
} worker_t;

static void *worker_main(void *arg) {
  worker_t *w = arg;
  cc_client *c = NULL;
  int fd = -1;
  if (w->mode == REDIS) {
    if ((fd = redis_connect(w->port)) < 0) die("redis: connect");
    for (int i = 0; i < 50; i++) redis_ping(fd);
  } else {
    c = connect_or_die(w->port, w->mode);
    for (int i = 0; i < 50; i++) query_once(c, w->s);
  }
  pthread_barrier_wait(w->go);
  while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
    double dt = w->mode == REDIS ? redis_ping(fd) : query_once(c, w->s);
    if (w->n < MAX_SAMPLES) w->lat[w->n++] = (float)dt;
    w->count++;
  }
  if (c) cc_close(c);
  if (fd >= 0) close(fd);
  return NULL;
}

static int cmp_f(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

typedef struct cell {
  double qps, p50_us, p99_us;
} cell_t;

static cell_t run_cell(mode_t_ m, int port, const scene *s, int clients) {
  worker_t *w = calloc((size_t)clients, sizeof *w);
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, (unsigned)clients + 1);
  atomic_int stop = 0;
  for (int i = 0; i < clients; i++) {
    w[i] = (worker_t){.mode = m, .port = port, .s = s, .go = &go, .stop = &stop};
    w[i].lat = malloc(MAX_SAMPLES * sizeof(float));
    if (!w[i].lat || pthread_create(&w[i].th, NULL, worker_main, &w[i])) die("thread");
  }
  pthread_barrier_wait(&go);
  double t0 = now_s();
  usleep((useconds_t)(g_seconds * 1e6));
  atomic_store(&stop, 1);
  size_t total = 0, ns = 0;
  for (int i = 0; i < clients; i++) {
    pthread_join(w[i].th, NULL);
    total += w[i].count;
    ns += w[i].n;
  }
  double el = now_s() - t0;
  float *all = malloc((ns ? ns : 1) * sizeof *all);
  size_t k = 0;
  for (int i = 0; i < clients; i++) {
    memcpy(all + k, w[i].lat, w[i].n * sizeof *all);
    k += w[i].n;
    free(w[i].lat);
  }
  qsort(all, ns, sizeof *all, cmp_f);
  cell_t r = {.qps = (double)total / el,
              .p50_us = ns ? 1e6 * all[ns / 2] : 0,
              .p99_us = ns ? 1e6 * all[(size_t)((double)ns * 0.99)] : 0};
  free(all);
  free(w);
  pthread_barrier_destroy(&go);
  return r;
}

/* ---- 2: handshakes per second ------------------------------------------------------ */

typedef struct hs {
  pthread_t th;
  int port;
  mode_t_ mode;
  atomic_int *stop;
  size_t count;
} hs_t;

static void *hs_main(void *arg) {
  hs_t *h = arg;
  while (!atomic_load_explicit(h->stop, memory_order_relaxed)) {
    cc_client *c = connect_or_die(h->port, h->mode);
    Contactd__V1__HelloReply *r = NULL;
    cc_error e;
    if (cc_hello(c, "bench_tls", &r, &e)) die(e.message); /* the server has finished its side too */
    cc_free(r);
    cc_close(c);
    h->count++;
  }
  return NULL;
}

static double handshakes_per_s(int port, mode_t_ m, int threads) {
  hs_t h[16];
  atomic_int stop = 0;
  for (int i = 0; i < threads; i++) {
    h[i] = (hs_t){.port = port, .mode = m, .stop = &stop};
    pthread_create(&h[i].th, NULL, hs_main, &h[i]);
  }
  double t0 = now_s();
  usleep(2000000);
  atomic_store(&stop, 1);
  size_t n = 0;
  for (int i = 0; i < threads; i++) {
    pthread_join(h[i].th, NULL);
    n += h[i].count;
  }
  return (double)n / (now_s() - t0);
}

/* ---- 3: the loop's longest turn during 200 simultaneous handshakes ---------------- */

enum { STORM = 200 };

typedef struct storm {
  int port;
  pthread_barrier_t *go;
  atomic_int *done;
} storm_t;

static void *storm_main(void *arg) {
  storm_t *s = arg;
  pthread_barrier_wait(s->go);
  cc_client *c = connect_or_die(s->port, TLS_TOKEN);
  atomic_fetch_add(s->done, 1);
  pthread_barrier_wait(s->go); /* hold the connection until all are in */
  cc_close(c);
  return NULL;
}

/* Probe queries on an open connection for `seconds` or until *until
 * reaches want: the slowest and the 99th percentile round trip. */
static void probe(cc_client *c, const scene *s, double seconds, atomic_int *until, int want, double *max_us,
                  double *p99_us, size_t *n_out) {
  static float lat[MAX_SAMPLES];
  size_t n = 0;
  double t0 = now_s();
  while (n < MAX_SAMPLES && (until ? atomic_load(until) < want : now_s() - t0 < seconds))
    lat[n++] = (float)query_once(c, s);
  qsort(lat, n, sizeof *lat, cmp_f);
  *max_us = n ? 1e6 * lat[n - 1] : 0;
  *p99_us = n ? 1e6 * lat[(size_t)((double)n * 0.99)] : 0;
  *n_out = n;
}

static void bench_storm(const daemon_t *d, const scene *s) {
  int port = d->port;
  cc_client *c = connect_or_die(port, TLS_TOKEN);
  for (int i = 0; i < 100; i++) query_once(c, s);
  double base_max, base_p99, dur_max, dur_p99;
  size_t nb, nd;
  probe(c, s, 1.0, NULL, 0, &base_max, &base_p99, &nb);
  double turn0 = longest_turn_us(d, 0), tcpu0 = longest_turn_us(d, 1), cpu0 = loop0_cpu_ns(d);
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, STORM + 1);
  atomic_int done = 0;
  pthread_t th[STORM];
  storm_t st = {.port = port, .go = &go, .done = &done};
  for (int i = 0; i < STORM; i++)
    if (pthread_create(&th[i], NULL, storm_main, &st)) die("thread");
  pthread_barrier_wait(&go);
  double t0 = now_s();
  probe(c, s, 0, &done, STORM, &dur_max, &dur_p99, &nd);
  double storm_s = now_s() - t0;
  double turn1 = longest_turn_us(d, 0), tcpu1 = longest_turn_us(d, 1), cpu1 = loop0_cpu_ns(d);
  pthread_barrier_wait(&go);
  for (int i = 0; i < STORM; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&go);
  cc_close(c);
  printf("\n3. the loop's longest turn while %d clients connect with TLS 1.3 + token at once (the %d\n"
         "   handshakes took %.0f ms in all)\n", STORM, STORM, 1e3 * storm_s);
  printf("   the daemon's metrics, before (start-up and warm-up included) -> after: longest turn %.1f -> %.1f ms,\n"
         "   its CPU (contactd_loop_longest_turn_cpu_seconds) %.1f -> %.1f ms\n",
         1e-3 * turn0, 1e-3 * turn1, 1e-3 * tcpu0, 1e-3 * tcpu1);
  printf("   the loop thread's CPU during the storm (/proc schedstat): %.1f ms, %.0f us a connection (handshake,\n"
         "   Hello with its token, the probe's queries)\n", 1e-6 * (cpu1 - cpu0), 1e-3 * (cpu1 - cpu0) / STORM);
  printf("   client side, small queries back to back on an open TLS connection of the same loop:\n");
  printf("     before: %zu queries, p99 %.0f us, slowest %.0f us\n", nb, base_p99, base_max);
  printf("     during: %zu queries, p99 %.0f us, slowest %.0f us\n", nd, dur_p99, dur_max);
}

/* ---- set-up ------------------------------------------------------------------------- */

static void make_material(void) {
  snprintf(g_dir, sizeof g_dir, "%s/bench_tls_XXXXXX", bench_tmp_root());
  if (!mkdtemp(g_dir)) die("mkdtemp");
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "sh '%s/tests/common/make_certs.sh' '%s/certs' && mv '%s'/certs/* '%s'/", BENCH_SOURCE_DIR,
           g_dir, g_dir, g_dir);
  if (system(cmd) != 0) die("make_certs.sh failed");
  snprintf(cmd, sizeof cmd, "printf %%s '%s' | openssl dgst -sha256 -r | cut -c1-64", TOKEN);
  FILE *p = popen(cmd, "r");
  if (!p || !fgets(g_token_hash, sizeof g_token_hash, p)) die("openssl dgst failed");
  pclose(p);
  FILE *f = fopen(path("principals.json"), "w");
  if (!f) die("cannot write principals.json");
  fprintf(f, "{\"principals\": [{\"name\": \"bench\", \"token_sha256\": \"%s\", \"roles\": [\"query\", \"register\"], "
          "\"tenant\": \"bench\"}]}\n", g_token_hash);
  fclose(f);
}

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &l)) die("no port");
  int p = ntohs(a.sin_port);
  close(s);
  return p;
}

/* redis-server on a free loopback port; its pid, or 0 when it did not start. */
static pid_t start_redis(const char *server, int *port) {
  if (access(server, X_OK) != 0) return 0;
  *port = free_port();
  char ps[16];
  snprintf(ps, sizeof ps, "%d", *port);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int nul = open("/dev/null", O_WRONLY);
    dup2(nul, 1);
    dup2(nul, 2);
    execl(server, server, "--port", ps, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 500; i++) {
    usleep(10000);
    int fd = redis_connect(*port);
    if (fd >= 0) {
      close(fd);
      return pid;
    }
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return 0;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  const char *redis = "/usr/bin/redis-server";
  int keep = 0; /* --keep: leave the directory with the daemons' logs */
  snprintf(g_daemon, sizeof g_daemon, "%s/../server/daemon/contactd", dirname(strdup(argv[0])));
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--no-redis")) redis = NULL;
    else if (!strcmp(a, "--keep")) keep = 1;
    else if (!v) die("usage: bench_tls [--daemon PATH] [--seconds S] [--workers N] [--redis-server PATH] [--no-redis]");
    else if (!strcmp(a, "--daemon")) snprintf(g_daemon, sizeof g_daemon, "%s", v), i++;
    else if (!strcmp(a, "--seconds")) g_seconds = atof(v), i++;
    else if (!strcmp(a, "--rounds")) g_rounds = atoi(v) > 0 ? atoi(v) : 1, i++;
    else if (!strcmp(a, "--workers")) g_workers = atoi(v), i++;
    else if (!strcmp(a, "--redis-server")) redis = v, i++;
    else die("unknown option (see the comment at the top of bench_tls.c)");
  }
  make_material();
  /* Daemon A: a certificate, TLS not required (plaintext and TLS on one
   * port, one server for both); daemon B: TLS required and principals. */
  const char *a_args[] = {"--tls-cert", path("server.pem"), "--tls-key", path("server.key"), "--tls-required", "false",
                          NULL};
  const char *b_args[] = {"--tls-cert", path("server.pem"), "--tls-key", path("server.key"), "--principals",
                          path("principals.json"), NULL};
  daemon_t A, B;
  start_daemon(&A, "a", a_args);
  start_daemon(&B, "b", b_args);
  scene sa, sb;
  cc_client *ca = connect_or_die(A.port, PLAIN), *cb = connect_or_die(B.port, TLS_TOKEN);
  register_scene(ca, &sa);
  register_scene(cb, &sb);
  int rport = 0;
  pid_t rpid = redis ? start_redis(redis, &rport) : 0;
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  printf("bench_tls: %ld cores, contactd --workers %d --io-threads 1, %d rounds of %.1f s per cell, OpenSSL's default "
         "TLS 1.3 suite, P-256 certificates\n\n1. small 2-body queries (wrench only), one in flight per client\n",
         cores, g_workers, g_rounds, g_seconds);
  printf("   %-24s %8s %12s %10s %10s\n", "", "clients", "queries/s", "p50 us", "p99 us");
  cell_t res[2][4];
  const int counts[2] = {1, 32};
  for (int k = 0; k < 2; k++) {
    double qps[4] = {0}, p50[4][64], p99[4][64];
    for (int r = 0; r < g_rounds && r < 64; r++)
      for (int m = PLAIN; m <= REDIS; m++) {
        if (m == REDIS && !rpid) continue;
        int port = m == REDIS ? rport : m == TLS_TOKEN ? B.port : A.port;
        cell_t c = run_cell((mode_t_)m, port, m == TLS_TOKEN ? &sb : &sa, counts[k]);
        qps[m] += c.qps / g_rounds;
        p50[m][r] = c.p50_us;
        p99[m][r] = c.p99_us;
      }
    for (int m = PLAIN; m <= REDIS; m++) {
      if (m == REDIS && !rpid) continue;
      int n = g_rounds < 64 ? g_rounds : 64;
      qsort(p50[m], (size_t)n, sizeof(double), cmp_d);
      qsort(p99[m], (size_t)n, sizeof(double), cmp_d);
      res[k][m] = (cell_t){qps[m], p50[m][n / 2], p99[m][n / 2]};
      printf("   %-24s %8d %12.0f %10.1f %10.1f\n", MODE_NAME[m], counts[k], qps[m], p50[m][n / 2], p99[m][n / 2]);
    }
    fflush(stdout);
  }
  if (!rpid && redis) printf("   (Redis reference skipped: %s did not start)\n", redis);
  printf("   TLS + token at 32 clients: %.2fx plaintext's queries/s (TLS alone %.2fx); at 1 client p50 %+.1f us "
         "(TLS alone %+.1f us)\n",
         res[1][TLS_TOKEN].qps / res[1][PLAIN].qps, res[1][TLS].qps / res[1][PLAIN].qps,
         res[0][TLS_TOKEN].p50_us - res[0][PLAIN].p50_us, res[0][TLS].p50_us - res[0][PLAIN].p50_us);
  printf("\n2. connections per second on one loop (connect, handshake, Hello, close; 4 client threads)\n");
  printf("   plaintext: %.0f/s   TLS 1.3: %.0f/s   TLS 1.3 + token: %.0f/s\n", handshakes_per_s(A.port, PLAIN, 4),
         handshakes_per_s(A.port, TLS, 4), handshakes_per_s(B.port, TLS_TOKEN, 4));
  fflush(stdout);
  /* A fresh daemon C for the storm, so that its longest turn is the storm's. */
  const char *c_args[] = {"--tls-cert", path("server.pem"), "--tls-key", path("server.key"), "--principals",
                          path("principals.json"), "--http-port", "0", NULL};
  daemon_t C;
  start_daemon(&C, "c", c_args);
  cc_client *cc = connect_or_die(C.port, TLS_TOKEN);
  scene sc;
  register_scene(cc, &sc);
  bench_storm(&C, &sc);
  cc_close(cc);
  stop_daemon(&C);
  cc_close(ca);
  cc_close(cb);
  stop_daemon(&A);
  stop_daemon(&B);
  if (rpid) {
    kill(rpid, SIGTERM);
    waitpid(rpid, NULL, 0);
  }
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  if (keep) printf("kept: %s\n", g_dir);
  else if (system(cmd) != 0) fprintf(stderr, "bench_tls: could not remove %s\n", g_dir);
  return 0;
}
