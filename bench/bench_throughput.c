/* bench_throughput.c — contactd over loopback with many clients (prints
 * numbers, asserts nothing).
 *
 *  1. queries/s, p50 and p99 of 2-body wrench-only ContactQuery round trips
 *     (compliant sphere on a rigid half space) at each client count, for
 *     each io_threads: every client keeps one query in flight (send, wait
 *     for the reply, send the next), driven by a few threads with epoll;
 *  2. the same run's reference: redis-benchmark -t ping_mbulk at 32
 *     clients against a redis-server started here on a loopback port
 *     (skipped, with a note, when either is not installed);
 *  3. optionally (--scene W,..) the pairs/s of a 500-body scene query (10 x
 *     10 x 5 lattice of compliant spheres, 1300 pairs) for each worker
 *     count.
 *
 * Usage: bench_throughput [--daemon PATH] [--io-threads 1,2] [--clients
 * 1,8,32,128,1000] [--seconds 2] [--workers N] [--drivers N] [--scene 1,2]
 * [--redis-server PATH] [--redis-benchmark PATH] [--no-redis] [--port P]
 * (--port: measure a contactd already listening on 127.0.0.1:P, for
 * profiling it; the io_threads list is then ignored)
 * io_threads 0: the daemon's default, without the flag (so a contactd from
 * before the flag can be measured the same way).
 * Defaults: contactd next to this binary, io_threads 1..cores, the client
 * counts above, 2 s per cell, workers = cores, drivers = half the cores. */
#include "bench_tmp.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cd_frame.h"
#include "contactd.pb-c.h"

typedef Contactd__V1__Envelope Env;

static char daemon_path[4096];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "bench_throughput: %s\n", what);
  exit(1);
}

/* ---- the daemon ------------------------------------------------------------ */

typedef struct daemon {
  pid_t pid;
  int port;
  char log[512];
} daemon_t;

static void start_daemon(daemon_t *d, int workers, int io_threads) {
  snprintf(d->log, sizeof d->log, "%s/bench_throughput_%d.log", bench_tmp_root(), (int)getpid());
  char w[16], io[16];
  snprintf(w, sizeof w, "%d", workers);
  snprintf(io, sizeof io, "%d", io_threads);
  d->pid = fork();
  if (d->pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    if (io_threads > 0)
      execl(daemon_path, daemon_path, "--listen", "127.0.0.1:0", "--workers", w, "--io-threads", io, (char *)NULL);
    else /* the daemon's default (also: a contactd from before io_threads) */
      execl(daemon_path, daemon_path, "--listen", "127.0.0.1:0", "--workers", w, (char *)NULL);
    _exit(127);
  }
  d->port = 0; /* logged: "msg=\"listening\" tcp=127.0.0.1 port=N" */
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
  if (!d->port) die("the daemon did not start (see its log)");
}

static void stop_daemon(daemon_t *d) {
  kill(d->pid, SIGTERM);
  int st;
  waitpid(d->pid, &st, 0);
  unlink(d->log);
}

static int connect_port(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0) die("connect failed");
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

/* ---- frames ------------------------------------------------------------------ */

static uint8_t *encode(Env *e, size_t *len) {
  size_t body;
  *len = cd_frame_size(&e->base, &body);
  uint8_t *out = malloc(*len);
  if (!out) die("out of memory");
  cd_frame_write(&e->base, body, out);
  return out;
}

static void send_all(int fd, const uint8_t *b, size_t n) {
  while (n) {
    ssize_t w = write(fd, b, n);
    if (w <= 0) die("write failed");
    b += w;
    n -= (size_t)w;
  }
}

/* One whole reply, blocking. */
static Env *recv_env(int fd) {
  uint8_t hdr[10];
  size_t h = 0;
  uint64_t len = 0;
  for (;;) {
    if (read(fd, &hdr[h], 1) != 1) die("read failed");
    if (cd_frame_varint_decode(hdr, ++h, &len) > 0) break;
    if (h == sizeof hdr) die("bad frame");
  }
  uint8_t *b = malloc(len ? len : 1);
  for (size_t got = 0; got < len;) {
    ssize_t r = read(fd, b + got, len - got);
    if (r <= 0) die("read failed");
    got += (size_t)r;
  }
  Env *e = contactd__v1__envelope__unpack(NULL, len, b);
  free(b);
  if (!e) die("bad reply");
  return e;
}

static Env *call(int fd, Env *e) {
  size_t n;
  uint8_t *f = encode(e, &n);
  send_all(fd, f, n);
  free(f);
  return recv_env(fd);
}

static void register_shape(int fd, int sphere, char id[80]) {
  Contactd__V1__Sphere s = CONTACTD__V1__SPHERE__INIT;
  s.radius = 0.1;
  Contactd__V1__HalfSpace hs = CONTACTD__V1__HALF_SPACE__INIT;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  if (sphere) {
    rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
    rg.sphere = &s;
    rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
    rg.modulus = 1e6;
    rg.resolution_hint = 0.05;
  } else {
    rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE;
    rg.half_space = &hs;
    rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  }
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 1;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  Env *r = call(fd, &e);
  if (r->msg_case != CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY) die("registration failed");
  snprintf(id, 80, "%s", r->register_reply->geometry_id);
  contactd__v1__envelope__free_unpacked(r, NULL);
}

/* A ContactQuery of n bodies: (body i at pos[i], geometry ids[i]) and, with
 * a pair, the pair (1, 2); else all pairs (broad phase). Wrench only. */
static uint8_t *query_frame(size_t n, char **ids, double (*pos)(size_t, int), int pair, size_t *len) {
  Contactd__V1__Body *b = calloc(n, sizeof *b), **bp = calloc(n, sizeof *bp);
  Contactd__V1__Pose *p = calloc(n, sizeof *p);
  Contactd__V1__Vec3 *v = calloc(n, sizeof *v);
  for (size_t i = 0; i < n; i++) {
    contactd__v1__vec3__init(&v[i]);
    v[i].x = pos(i, 0);
    v[i].y = pos(i, 1);
    v[i].z = pos(i, 2);
    contactd__v1__pose__init(&p[i]);
    p[i].position = &v[i];
    contactd__v1__body__init(&b[i]);
    b[i].body_id = (uint32_t)i + 1;
    b[i].geometry_id = ids[i];
    b[i].pose = &p[i];
    bp[i] = &b[i];
  }
  Contactd__V1__Pair pr = CONTACTD__V1__PAIR__INIT, *prs[1] = {&pr};
  pr.a = 1;
  pr.b = 2;
  Contactd__V1__AllPairs ap = CONTACTD__V1__ALL_PAIRS__INIT;
  Contactd__V1__QueryOptions o = CONTACTD__V1__QUERY_OPTIONS__INIT;
  o.detail = CONTACTD__V1__DETAIL__DETAIL_WRENCH;
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = n;
  q.bodies = bp;
  if (pair) {
    q.n_pairs = 1;
    q.pairs = prs;
  } else {
    q.all_pairs = &ap;
  }
  q.options = &o;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 7;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  uint8_t *f = encode(&e, len);
  free(b);
  free(bp);
  free(p);
  free(v);
  return f;
}

static double pair_pos(size_t i, int k) { return i == 0 && k == 2 ? 0.09 : 0; }

/* ---- many clients ------------------------------------------------------------ */

typedef struct conn {
  int fd;
  double t0;
  size_t have;   /* bytes of the reply so far */
  uint64_t need; /* its frame length, header included (0: unknown yet) */
  uint8_t buf[512];
} conn_t;

typedef struct driver {
  int port, nconns;
  conn_t *conns;
  const uint8_t *frame;
  size_t frame_len;
  double t_start, t_end; /* count replies between these */
  volatile int *stop;
  double *lat;
  size_t nlat, cap;
  uint64_t replies;
} driver_t;

static void conn_send(driver_t *d, conn_t *c) {
  c->t0 = now_s();
  c->have = 0;
  c->need = 0;
  send_all(c->fd, d->frame, d->frame_len);
}

/* Reads what c has; 1 when its whole reply is in. */
static int conn_read(conn_t *c) {
  for (;;) {
    ssize_t r = read(c->fd, c->buf + c->have, sizeof c->buf - c->have);
    if (r < 0 && (errno == EAGAIN || errno == EINTR)) return 0;
    if (r <= 0) die("a client lost its connection");
    c->have += (size_t)r;
    if (!c->need) {
      uint64_t len;
      int h = cd_frame_varint_decode(c->buf, c->have, &len);
      if (h > 0) c->need = (uint64_t)h + len;
      if (c->need > sizeof c->buf) die("reply larger than expected");
    }
    if (c->need && c->have >= c->need) return 1;
  }
}

static void *driver_main(void *arg) {
  driver_t *d = arg;
  int ep = epoll_create1(0);
  for (int i = 0; i < d->nconns; i++) {
    conn_t *c = &d->conns[i];
    fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) | O_NONBLOCK);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev);
    conn_send(d, c);
  }
  struct epoll_event evs[256];
  while (!*d->stop) {
    int n = epoll_wait(ep, evs, 256, 100);
    for (int i = 0; i < n; i++) {
      conn_t *c = evs[i].data.ptr;
      if (!conn_read(c)) continue;
      double t = now_s();
      if (c->t0 >= d->t_start && t <= d->t_end) {
        d->replies++;
        if (d->nlat == d->cap) {
          d->cap = d->cap ? 2 * d->cap : 65536;
          d->lat = realloc(d->lat, d->cap * sizeof *d->lat);
        }
        d->lat[d->nlat++] = t - c->t0;
      }
      if (!*d->stop) conn_send(d, c);
    }
  }
  close(ep);
  return NULL;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One cell of the table: n clients for `seconds` (after a warm-up). */
static void run_cell(const daemon_t *dm, const uint8_t *frame, size_t flen, int clients, int drivers, double seconds,
                     int io_threads) {
  if (drivers > clients) drivers = clients;
  conn_t *conns = calloc((size_t)clients, sizeof *conns);
  for (int i = 0; i < clients; i++) conns[i].fd = connect_port(dm->port);
  /* one reply checked in full: the query is answered (the drivers only
   * frame the replies, to spend as little of the machine as they can) */
  send_all(conns[0].fd, frame, flen);
  Env *r = recv_env(conns[0].fd);
  if (r->msg_case != CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY || r->contact_reply->n_results != 1)
    die("the query is not answered with one pair result");
  contactd__v1__envelope__free_unpacked(r, NULL);
  volatile int stop = 0;
  driver_t *dv = calloc((size_t)drivers, sizeof *dv);
  pthread_t *th = calloc((size_t)drivers, sizeof *th);
  const double warm = seconds < 1 ? 0.2 : 0.5, t0 = now_s();
  for (int k = 0, at = 0; k < drivers; k++) {
    int m = clients / drivers + (k < clients % drivers);
    dv[k] = (driver_t){.port = dm->port, .nconns = m, .conns = conns + at, .frame = frame, .frame_len = flen,
                       .t_start = t0 + warm, .t_end = t0 + warm + seconds, .stop = &stop};
    at += m;
    pthread_create(&th[k], NULL, driver_main, &dv[k]);
  }
  struct timespec ts = {(time_t)(warm + seconds), (long)((warm + seconds - (double)(time_t)(warm + seconds)) * 1e9)};
  nanosleep(&ts, NULL);
  stop = 1;
  size_t n = 0;
  uint64_t replies = 0;
  for (int k = 0; k < drivers; k++) {
    pthread_join(th[k], NULL);
    n += dv[k].nlat;
    replies += dv[k].replies;
  }
  double *all = malloc((n ? n : 1) * sizeof *all);
  for (int k = 0, at = 0; k < drivers; k++) {
    memcpy(all + at, dv[k].lat, dv[k].nlat * sizeof *all);
    at += (int)dv[k].nlat;
    free(dv[k].lat);
  }
  qsort(all, n, sizeof *all, cmp_d);
  printf("io_threads %2d  clients %5d  %9.0f queries/s  p50 %8.1f us  p99 %8.1f us\n", io_threads, clients,
         (double)replies / seconds, n ? all[n / 2] * 1e6 : 0, n ? all[(size_t)((double)n * 0.99)] * 1e6 : 0);
  fflush(stdout);
  free(all);
  for (int i = 0; i < clients; i++) close(conns[i].fd);
  free(conns);
  free(dv);
  free(th);
}

/* ---- the 500-body scene -------------------------------------------------------- */

static double lattice_pos(size_t i, int k) {
  const int idx[3] = {(int)(i / 50), (int)(i / 5 % 10), (int)(i % 5)};
  return 0.19 * idx[k];
}

static void bench_scene(int workers, double seconds) {
  daemon_t d;
  start_daemon(&d, workers, 1);
  int fd = connect_port(d.port);
  char sphere[80];
  register_shape(fd, 1, sphere);
  enum { N = 500 };
  char *ids[N];
  for (int i = 0; i < N; i++) ids[i] = sphere;
  size_t len;
  uint8_t *f = query_frame(N, ids, lattice_pos, 0, &len);
  send_all(fd, f, len);
  Env *r = recv_env(fd); /* warm-up */
  size_t pairs = r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY ? r->contact_reply->n_results : 0;
  contactd__v1__envelope__free_unpacked(r, NULL);
  int reps = 0;
  double t0 = now_s();
  while (now_s() - t0 < seconds || reps < 2) {
    send_all(fd, f, len);
    contactd__v1__envelope__free_unpacked(recv_env(fd), NULL);
    reps++;
  }
  double dt = now_s() - t0;
  printf("scene %d bodies, %zu pairs (all pairs, compliant spheres): %2d worker%s: %.0f pairs/s (%.1f ms/query)\n", N,
         pairs, workers, workers > 1 ? "s" : " ", (double)pairs * reps / dt, dt / reps * 1e3);
  fflush(stdout);
  free(f);
  close(fd);
  stop_daemon(&d);
}

/* ---- redis reference -------------------------------------------------------------- */

static int free_port(void) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) || getsockname(s, (struct sockaddr *)&a, &l)) die("no port");
  int p = ntohs(a.sin_port);
  close(s);
  return p;
}

static void bench_redis(const char *server, const char *benchmark, int clients) {
  if (access(server, X_OK) != 0 || access(benchmark, X_OK) != 0) {
    printf("redis reference skipped: %s or %s not found (apt-get install redis-server redis-tools)\n", server,
           benchmark);
    return;
  }
  int port = free_port();
  char ps[16], cs[16];
  snprintf(ps, sizeof ps, "%d", port);
  snprintf(cs, sizeof cs, "%d", clients);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int nul = open("/dev/null", O_WRONLY);
    dup2(nul, 1);
    dup2(nul, 2);
    execl(server, server, "--port", ps, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", (char *)NULL);
    _exit(127);
  }
  int up = 0;
  for (int i = 0; i < 500 && !up; i++) {
    usleep(10000);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    up = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
    close(s);
  }
  if (!up) {
    printf("redis reference skipped: redis-server did not start\n");
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return;
  }
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "%s -h 127.0.0.1 -p %d -t ping_mbulk -c %d -n 400000 -q 2>/dev/null", benchmark, port,
           clients);
  FILE *p = popen(cmd, "r");
  char line[512], last[512] = "";
  while (p && fgets(line, sizeof line, p)) {
    char *r = strrchr(line, '\r'); /* progress lines end in \r: keep the result */
    if (strstr(r ? r + 1 : line, "requests per second")) snprintf(last, sizeof last, "%s", r ? r + 1 : line);
  }
  if (p) pclose(p);
  last[strcspn(last, "\n")] = 0;
  printf("reference: redis-benchmark -t ping_mbulk -c %d against redis-server on loopback: %s\n", clients, last);
  fflush(stdout);
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

/* ---- main ------------------------------------------------------------------------ */

static int parse_list(const char *s, int *out, int cap) {
  int n = 0;
  while (*s && n < cap) {
    out[n++] = atoi(s);
    s = strchr(s, ',');
    if (!s) break;
    s++;
  }
  return n;
}

int main(int argc, char **argv) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  if (cores < 1) cores = 1;
  int io[64], nio = 0, cl[64], ncl = parse_list("1,8,32,128,1000", cl, 64), sc[16], nsc = 0;
  int workers = (int)cores, drivers = cores > 1 ? (int)cores / 2 : 1, redis = 1, port = 0;
  double seconds = 2;
  const char *rs = "/usr/bin/redis-server", *rb = "/usr/bin/redis-benchmark";
  daemon_path[0] = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
    if (!strcmp(a, "--no-redis")) {
      redis = 0;
      continue;
    }
    if (!strcmp(a, "--daemon")) snprintf(daemon_path, sizeof daemon_path, "%s", v);
    else if (!strcmp(a, "--io-threads")) nio = parse_list(v, io, 64);
    else if (!strcmp(a, "--clients")) ncl = parse_list(v, cl, 64);
    else if (!strcmp(a, "--scene")) nsc = parse_list(v, sc, 16);
    else if (!strcmp(a, "--seconds")) seconds = atof(v);
    else if (!strcmp(a, "--workers")) workers = atoi(v);
    else if (!strcmp(a, "--drivers")) drivers = atoi(v);
    else if (!strcmp(a, "--port")) port = atoi(v);
    else if (!strcmp(a, "--redis-server")) rs = v;
    else if (!strcmp(a, "--redis-benchmark")) rb = v;
    else {
      fprintf(stderr, "bench_throughput: unknown argument %s\n", a);
      return 2;
    }
    i++;
  }
  if (!daemon_path[0]) {
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n < 0) return 1;
    self[n] = 0;
    snprintf(daemon_path, sizeof daemon_path, "%s/../server/daemon/contactd", dirname(self));
  }
  if (!port && access(daemon_path, X_OK) != 0) {
    fprintf(stderr, "bench_throughput: no contactd at %s (build it, or pass --daemon PATH)\n", daemon_path);
    return 1;
  }
  if (!nio)
    for (int k = 1; k <= cores && nio < 64; k++) io[nio++] = k;
  /* descriptors for 1,000 clients here and their ends in the daemon */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  signal(SIGPIPE, SIG_IGN);
  printf("machine: %ld online cores; contactd --workers %d; %d client driver thread%s; %.1f s per cell\n", cores,
         workers, drivers, drivers > 1 ? "s" : "", seconds);
  if (redis) bench_redis(rs, rb, 32);
  for (int i = 0; i < nio; i++) {
    daemon_t d = {.port = port};
    if (port) nio = 1; /* a daemon already running: one pass */
    else start_daemon(&d, workers, io[i]);
    int fd = connect_port(d.port);
    char sphere[80], plane[80];
    register_shape(fd, 1, sphere);
    register_shape(fd, 0, plane);
    char *ids[2] = {sphere, plane};
    size_t len;
    uint8_t *f = query_frame(2, ids, pair_pos, 1, &len);
    for (int k = 0; k < ncl; k++) run_cell(&d, f, len, cl[k], drivers, seconds, io[i]);
    free(f);
    close(fd);
    if (!port) stop_daemon(&d);
  }
  for (int i = 0; i < nsc; i++) bench_scene(sc[i], seconds);
  return 0;
}
