/* bench_store.c — the geometry store (prints numbers, asserts nothing).
 *
 *  1. A fine compliant sphere (radius 0.1 m, hint 0.005 m: ~200k tets, the
 *     fine sphere of bench_daemon) registered on replica A; the time replica
 *     B, sharing A's Redis, takes to answer its first query on it (store
 *     lookup + rebuild + query) next to A's build time and a warm query.
 *     Also what a built-geometry blob would cost instead of the rebuild: the
 *     geometry's bytes (RegisterReply stats) fetched from the same Redis.
 *  2. Restart to first answer with dir: for 100 cached geometries: a new
 *     daemon on the same directory, from exec to the reply of one query
 *     naming all 100 (each looked up and built from its record).
 *  3. Query round trip p50/p99 (compliant sphere on a rigid plane, wrench
 *     only) with store memory and with a warm Redis store.
 *  4. Bytes per geometry in Redis (used_memory over 100 records), for
 *     sizing maxmemory.
 *
 * Needs /usr/bin/redis-server; starts it, and the daemon (argv[1], or
 * ../server/daemon/contactd next to this binary's directory), on loopback. */
#include "bench_tmp.h"
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <libgen.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cc_client.h"

static char daemon_path[4096];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what, const char *why) {
  fprintf(stderr, "bench_store: %s: %s\n", what, why);
  exit(1);
}

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
  socklen_t len = sizeof a;
  if (bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &len)) die("port", "bind");
  close(fd);
  return ntohs(a.sin_port);
}

/* ---- redis-server ------------------------------------------------------- */

typedef struct redis { pid_t pid; int port; char dir[400]; char uri[64]; } redis_t;

static redisContext *redis_conn(const redis_t *r) {
  struct timeval tv = {2, 0};
  redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
  if (c && c->err) {
    redisFree(c);
    c = NULL;
  }
  return c;
}

static void redis_start(redis_t *r) {
  snprintf(r->dir, sizeof r->dir, "%s/bench_redis_XXXXXX", bench_tmp_root());
  if (!mkdtemp(r->dir)) die("mkdtemp", r->dir);
  r->port = free_port();
  snprintf(r->uri, sizeof r->uri, "redis://127.0.0.1:%d", r->port);
  char port[16];
  snprintf(port, sizeof port, "%d", r->port);
  r->pid = fork();
  if (r->pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int nul = open("/dev/null", O_WRONLY);
    dup2(nul, 1);
    execl("/usr/bin/redis-server", "redis-server", "--port", port, "--bind", "127.0.0.1", "--dir", r->dir, "--save",
          "", "--appendonly", "no", "--loglevel", "warning", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 300; i++) {
    redisContext *c = redis_conn(r);
    if (c) {
      redisFree(c);
      return;
    }
    usleep(10000);
  }
  die("redis-server", "did not start (install redis-server)");
}

static void redis_stop(redis_t *r) {
  kill(r->pid, SIGTERM);
  waitpid(r->pid, NULL, 0);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf %s", r->dir);
  if (system(cmd)) fprintf(stderr, "bench_store: could not remove %s\n", r->dir);
}

static long long redis_used_memory(const redis_t *r) {
  redisContext *c = redis_conn(r);
  redisReply *rep = c ? redisCommand(c, "INFO memory") : NULL;
  long long v = -1;
  const char *p = rep && rep->str ? strstr(rep->str, "used_memory:") : NULL;
  if (p) v = atoll(p + 12);
  if (rep) freeReplyObject(rep);
  if (c) redisFree(c);
  return v;
}

/* Seconds to SET then GET a value of n bytes (a blob standing in for a
 * serialised geometry), GET only. */
static double redis_get_blob(const redis_t *r, size_t n) {
  redisContext *c = redis_conn(r);
  char *v = malloc(n);
  if (!c || !v) die("redis", "connect");
  for (size_t i = 0; i < n; i++) v[i] = (char)(i * 2654435761u >> 24);
  redisReply *rep = redisCommand(c, "SET bench:blob %b", v, n);
  if (rep) freeReplyObject(rep);
  double best = 1e9;
  for (int k = 0; k < 5; k++) {
    double t0 = now_s();
    rep = redisCommand(c, "GET bench:blob");
    memcpy(v, rep->str, rep->len); /* the copy a loader would make */
    double dt = now_s() - t0;
    freeReplyObject(rep);
    if (dt < best) best = dt;
  }
  free(v);
  redisFree(c);
  return best;
}

/* ---- contactd ------------------------------------------------------------- */

typedef struct daemon { pid_t pid; int port; char log[512]; double t_exec; } daemon_t;

static void start_daemon(daemon_t *d, const char *store) {
  static int n;
  snprintf(d->log, sizeof d->log, "%s/bench_store_%d_%d.log", bench_tmp_root(), (int)getpid(), n++);
  d->t_exec = now_s();
  d->pid = fork();
  if (d->pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    execl(daemon_path, daemon_path, "--listen", "127.0.0.1:0", "--workers", "2", "--store", store, (char *)NULL);
    _exit(127);
  }
  d->port = 0;
  for (int i = 0; i < 20000 && !d->port; i++) {
    usleep(500);
    FILE *f = fopen(d->log, "r");
    char line[512];
    int ready = 0, port = 0;
    while (f && fgets(line, sizeof line, f)) {
      char *c = strstr(line, "msg=\"listening\" tcp=");
      if (c && (c = strstr(c, "port="))) port = atoi(c + 5);
      if (strstr(line, "msg=\"ready\"")) ready = 1;
    }
    if (f) fclose(f);
    if (ready) d->port = port;
  }
  if (!d->port) die("contactd", "did not start");
}

static void stop_daemon(daemon_t *d) {
  kill(d->pid, SIGTERM);
  waitpid(d->pid, NULL, 0);
  unlink(d->log);
}

static cc_client *connect_daemon(const daemon_t *d) {
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d->port);
  cc_client *c;
  cc_error e;
  for (int i = 0; i < 200; i++) {
    if (cc_connect(addr, NULL, &c, &e) == CC_OK) return c;
    usleep(1000);
  }
  die("connect", e.message);
  return NULL;
}

static uint64_t tets;

static uint64_t reg(cc_client *c, const cc_shape *s, char id[CC_ID_MAX], uint64_t *bytes) {
  Contactd__V1__RegisterReply *r = NULL;
  cc_error e;
  if (cc_register_shape(c, s, id, &r, &e) != CC_OK) die("register", e.message);
  uint64_t us = r->stats ? r->stats->build_time_us : 0;
  if (bytes) *bytes = r->stats ? r->stats->bytes : 0;
  if (bytes) tets = r->stats ? r->stats->tetrahedra : 0;
  cc_free(r);
  return us;
}

static const cc_shape PLANE = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1};

/* One wrench-only query of bodies b[0..n) against the plane (last body). */
static double query(cc_client *c, const cc_body *b, size_t n) {
  uint32_t(*pairs)[2] = calloc(n - 1, sizeof *pairs);
  for (size_t i = 0; i + 1 < n; i++) {
    pairs[i][0] = b[i].id;
    pairs[i][1] = b[n - 1].id;
  }
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.detail = CONTACTD__V1__DETAIL__DETAIL_WRENCH;
  Contactd__V1__ContactReply *r = NULL;
  cc_error e;
  double t0 = now_s();
  if (cc_query_bodies(c, b, n, (const uint32_t(*)[2])pairs, n - 1, &opt, &r, &e) != CC_OK) die("query", e.message);
  double dt = now_s() - t0;
  cc_free(r);
  free(pairs);
  return dt;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* ---- 1: replica B's first answer ---------------------------------------- */

static void replica_first_query(void) {
  redis_t r;
  redis_start(&r);
  daemon_t a, b;
  start_daemon(&a, r.uri);
  start_daemon(&b, r.uri);
  cc_client *ca = connect_daemon(&a), *cb = connect_daemon(&b);
  cc_shape fine = {.kind = CC_SHAPE_SPHERE, .a = 0.1, .modulus = 1e6, .hint = 0.005};
  char s[CC_ID_MAX], p[CC_ID_MAX];
  uint64_t bytes = 0;
  uint64_t build_us = reg(ca, &fine, s, &bytes);
  reg(ca, &PLANE, p, NULL);
  reg(cb, &PLANE, p, NULL);
  cc_body bod[2] = {{.id = 1, .geometry_id = s, .p = {0, 0, 0.09}}, {.id = 2, .geometry_id = p}};
  double warm_a = query(ca, bod, 2);
  warm_a = query(ca, bod, 2);
  usleep(200000); /* A's asynchronous store write */
  double first_b = query(cb, bod, 2);
  double warm_b = query(cb, bod, 2);
  double blob = redis_get_blob(&r, (size_t)bytes);
  printf("1. fine sphere (r 0.1 m, hint 0.005 m): %llu tets, %.1f MB built\n", (unsigned long long)tets,
         (double)bytes / 1e6);
  printf("   build on A (RegisterReply)                 %9.1f ms\n", build_us / 1e3);
  printf("   B's first query (store lookup + rebuild)   %9.1f ms\n", first_b * 1e3);
  printf("   warm query on A / on B                     %9.3f / %.3f ms\n", warm_a * 1e3, warm_b * 1e3);
  printf("   GET of a %.1f MB blob from the same Redis   %9.1f ms (a blob's lower bound)\n", (double)bytes / 1e6,
         blob * 1e3);
  cc_close(ca);
  cc_close(cb);
  stop_daemon(&a);
  stop_daemon(&b);
  redis_stop(&r);
}

/* ---- 2 and 4: 100 geometries --------------------------------------------- */

enum { NGEOM = 100 };

static void register_many(cc_client *c, char ids[NGEOM + 1][CC_ID_MAX], cc_body *bod) {
  for (int i = 0; i < NGEOM; i++) {
    cc_shape s = {.kind = CC_SHAPE_SPHERE, .a = 0.05 + 0.0001 * i, .modulus = 1e6, .hint = 0.02};
    reg(c, &s, ids[i], NULL);
    bod[i] = (cc_body){.id = (uint32_t)i + 1, .geometry_id = ids[i], .p = {0.2 * i, 0, 0.045}};
  }
  reg(c, &PLANE, ids[NGEOM], NULL);
  bod[NGEOM] = (cc_body){.id = NGEOM + 1, .geometry_id = ids[NGEOM]};
}

static void restart_dir(void) {
  char dir[400], store[512];
  snprintf(dir, sizeof dir, "%s/bench_store_XXXXXX", bench_tmp_root());
  if (!mkdtemp(dir)) die("mkdtemp", dir);
  snprintf(store, sizeof store, "dir:%s", dir);
  static char ids[NGEOM + 1][CC_ID_MAX];
  cc_body bod[NGEOM + 1];
  daemon_t d;
  start_daemon(&d, store);
  cc_client *c = connect_daemon(&d);
  double t0 = now_s();
  register_many(c, ids, bod);
  double reg_s = now_s() - t0;
  double warm = query(c, bod, NGEOM + 1);
  cc_close(c);
  usleep(300000);
  stop_daemon(&d);
  start_daemon(&d, store);
  double ready = now_s() - d.t_exec;
  c = connect_daemon(&d);
  query(c, bod, NGEOM + 1);
  double first = now_s() - d.t_exec;
  cc_close(c);
  stop_daemon(&d);
  printf("2. restart with dir: and %d cached spheres (hint 0.02 m)\n", NGEOM);
  printf("   registering them on the first daemon       %9.1f ms\n", reg_s * 1e3);
  printf("   restart: exec to ready                     %9.1f ms\n", ready * 1e3);
  printf("   restart: exec to the first answer (all %d)%9.1f ms (a warm query: %.2f ms)\n", NGEOM, first * 1e3,
         warm * 1e3);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd)) fprintf(stderr, "bench_store: could not remove %s\n", dir);
}

static void redis_bytes(void) {
  redis_t r;
  redis_start(&r);
  daemon_t d;
  start_daemon(&d, r.uri);
  cc_client *c = connect_daemon(&d);
  long long before = redis_used_memory(&r);
  static char ids[NGEOM + 1][CC_ID_MAX];
  cc_body bod[NGEOM + 1];
  register_many(c, ids, bod);
  usleep(500000);
  long long after = redis_used_memory(&r);
  printf("4. Redis used_memory per primitive record      %9.0f bytes (%d records)\n",
         (double)(after - before) / (NGEOM + 1), NGEOM + 1);
  cc_close(c);
  stop_daemon(&d);
  redis_stop(&r);
}

/* ---- 3: query latency, memory vs store ----------------------------------- */

static void latency(const char *store, const char *label) {
  daemon_t d;
  start_daemon(&d, store);
  cc_client *c = connect_daemon(&d);
  cc_shape sph = {.kind = CC_SHAPE_SPHERE, .a = 0.1, .modulus = 1e6, .hint = 0.05};
  char s[CC_ID_MAX], p[CC_ID_MAX];
  reg(c, &sph, s, NULL);
  reg(c, &PLANE, p, NULL);
  cc_body bod[2] = {{.id = 1, .geometry_id = s, .p = {0, 0, 0.09}}, {.id = 2, .geometry_id = p}};
  enum { N = 3000 };
  static double t[N];
  for (int i = 0; i < 200; i++) query(c, bod, 2);
  for (int i = 0; i < N; i++) t[i] = query(c, bod, 2);
  qsort(t, N, sizeof *t, cmp_d);
  printf("   %-28s p50 %7.1f us  p99 %7.1f us\n", label, t[N / 2] * 1e6, t[N * 99 / 100] * 1e6);
  cc_close(c);
  stop_daemon(&d);
}

int main(int argc, char **argv) {
  if (argc > 1) {
    snprintf(daemon_path, sizeof daemon_path, "%s", argv[1]);
  } else {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) die("readlink", "/proc/self/exe");
    self[n] = 0;
    snprintf(daemon_path, sizeof daemon_path, "%s/../server/daemon/contactd", dirname(self));
  }
  signal(SIGPIPE, SIG_IGN);
  replica_first_query();
  restart_dir();
  redis_t r;
  redis_start(&r);
  printf("3. query round trip, sphere on plane, wrench only, 3000 queries\n");
  latency("memory", "store memory");
  latency(r.uri, "store redis (warm)");
  latency("memory", "store memory (again)");
  redis_stop(&r);
  redis_bytes();
  return 0;
}
