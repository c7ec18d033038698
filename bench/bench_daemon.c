/* bench_daemon.c — contactd over loopback (prints numbers, asserts nothing).
 *
 *  1. round trip p50/p99 of a 2-body wrench-only ContactQuery (compliant
 *     sphere on a rigid half space), one client, one request in flight;
 *  2. pairs per second for a 500-body scene (10 x 10 x 5 lattice of
 *     compliant spheres, each touching its lattice neighbours: 1300 pairs
 *     from the broad phase) with 1 and with 2 workers.
 *
 * Starts the real daemon (argv[1], or ../server/daemon/contactd next to this
 * binary's directory) on an ephemeral port. Self-contained on purpose: the
 * few messages it needs are encoded by hand in protobuf's wire format, so it
 * links like every other benchmark. */
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

static char daemon_path[4096];

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- protobuf wire format, by hand ------------------------------------- */

typedef struct buf { uint8_t *p; size_t n, cap; } buf;

static void put(buf *b, const void *d, size_t n) {
  if (b->n + n > b->cap) {
    while (b->n + n > b->cap) b->cap = b->cap ? 2 * b->cap : 256;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, d, n);
  b->n += n;
}
static void varint(buf *b, uint64_t v) {
  uint8_t t[10];
  size_t k = 0;
  while (v >= 0x80) { t[k++] = (uint8_t)(v | 0x80); v >>= 7; }
  t[k++] = (uint8_t)v;
  put(b, t, k);
}
static void f_varint(buf *b, int field, uint64_t v) { varint(b, (uint64_t)field << 3); varint(b, v); }
static void f_double(buf *b, int field, double v) { varint(b, (uint64_t)field << 3 | 1); put(b, &v, 8); }
static void f_bytes(buf *b, int field, const void *d, size_t n) {
  varint(b, (uint64_t)field << 3 | 2);
  varint(b, n);
  put(b, d, n);
}
static void f_msg(buf *b, int field, buf *m) { f_bytes(b, field, m->p, m->n); m->n = 0; }

/* Envelope{request_id, contact_query{bodies, pairs | all_pairs}} as a frame. */
static void encode_query(buf *out, uint64_t id, int n, const char *const *gid, const double (*pos)[3],
                         int explicit_pair) {
  buf q = {0}, body = {0}, pose = {0}, v = {0}, env = {0};
  for (int i = 0; i < n; i++) {
    f_double(&v, 1, pos[i][0]);
    f_double(&v, 2, pos[i][1]);
    f_double(&v, 3, pos[i][2]);
    f_msg(&pose, 1, &v);
    f_varint(&body, 1, (uint64_t)i + 1);
    f_bytes(&body, 2, gid[i], strlen(gid[i]));
    f_msg(&body, 3, &pose);
    f_msg(&q, 1, &body);
  }
  if (explicit_pair) {
    buf pr = {0};
    f_varint(&pr, 1, 1);
    f_varint(&pr, 2, 2);
    f_msg(&q, 2, &pr);
    free(pr.p);
  } else {
    f_bytes(&q, 3, "", 0); /* all_pairs: present and empty */
  }
  f_varint(&env, 1, id);
  f_msg(&env, 11, &q);
  out->n = 0;
  varint(out, env.n);
  put(out, env.p, env.n);
  free(q.p); free(body.p); free(pose.p); free(v.p); free(env.p);
}

static int read_varint(const uint8_t *p, size_t n, size_t *at, uint64_t *v) {
  *v = 0;
  for (int s = 0; s < 64 && *at < n; s += 7) {
    uint8_t c = p[(*at)++];
    *v |= (uint64_t)(c & 0x7f) << s;
    if (!(c & 0x80)) return 0;
  }
  return -1;
}

/* Find length-delimited field `field` in message p[0..n); count its
 * occurrences; return the first (or NULL). */
static const uint8_t *find_field(const uint8_t *p, size_t n, int field, size_t *len, int *count) {
  size_t at = 0;
  const uint8_t *first = NULL;
  if (count) *count = 0;
  while (at < n) {
    uint64_t key, v;
    if (read_varint(p, n, &at, &key)) return NULL;
    int wt = (int)(key & 7);
    if (wt == 0) read_varint(p, n, &at, &v);
    else if (wt == 1) at += 8;
    else if (wt == 5) at += 4;
    else if (wt == 2) {
      read_varint(p, n, &at, &v);
      if ((int)(key >> 3) == field) {
        if (!first) { first = p + at; *len = v; }
        if (count) (*count)++;
      }
      at += v;
    } else return NULL;
  }
  return first;
}

/* ---- sockets and the daemon -------------------------------------------- */

static int connect_port(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(0x7f000001);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) { perror("connect"); exit(1); }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static void send_all(int fd, const void *d, size_t n) {
  const char *p = d;
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) { perror("send"); exit(1); }
    p += k; n -= (size_t)k;
  }
}

static void recv_all(int fd, void *d, size_t n) {
  char *p = d;
  while (n) {
    ssize_t k = recv(fd, p, n, 0);
    if (k <= 0) { fprintf(stderr, "bench: connection lost\n"); exit(1); }
    p += k; n -= (size_t)k;
  }
}

/* One reply frame into *b (body only). */
static void recv_frame(int fd, buf *b) {
  uint64_t len = 0;
  for (int s = 0;; s += 7) {
    uint8_t c;
    recv_all(fd, &c, 1);
    len |= (uint64_t)(c & 0x7f) << s;
    if (!(c & 0x80)) break;
  }
  b->n = 0;
  if (len > b->cap) { b->cap = len; b->p = realloc(b->p, len); }
  recv_all(fd, b->p, len);
  b->n = len;
}

static char *json_call(int fd, const char *line) {
  send_all(fd, line, strlen(line));
  send_all(fd, "\n", 1);
  static char out[1 << 16];
  size_t n = 0;
  for (;;) {
    char c;
    recv_all(fd, &c, 1);
    if (c == '\n' || n + 1 >= sizeof out) break;
    out[n++] = c;
  }
  out[n] = 0;
  return out;
}

static char *register_json(int fd, const char *req) {
  char *r = json_call(fd, req);
  char *p = strstr(r, "\"geometryId\":\"");
  if (!p) { fprintf(stderr, "bench: register failed: %s\n", r); exit(1); }
  return strndup(p + 14, 64);
}

typedef struct daemon { pid_t pid; int port; char log[256]; } daemon_t;

static void start_daemon(daemon_t *d, int workers) {
  snprintf(d->log, sizeof d->log, "/tmp/bench_daemon_%d.log", (int)getpid());
  char w[16];
  snprintf(w, sizeof w, "%d", workers);
  d->pid = fork();
  if (d->pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
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

static const char *SPHERE =
    "{\"requestId\":\"1\",\"registerGeometry\":{\"sphere\":{\"radius\":0.1},\"compliance\":"
    "\"COMPLIANCE_COMPLIANT\",\"modulus\":1e6,\"resolutionHint\":0.05}}";
static const char *PLANE =
    "{\"requestId\":\"2\",\"registerGeometry\":{\"halfSpace\":{},\"compliance\":\"COMPLIANCE_RIGID\"}}";

static void bench_rtt(void) {
  daemon_t d;
  start_daemon(&d, 2);
  int j = connect_port(d.port), fd = connect_port(d.port);
  char *sphere = register_json(j, SPHERE), *plane = register_json(j, PLANE);
  const char *gid[2] = {sphere, plane};
  const double pos[2][3] = {{0, 0, 0.09}, {0, 0, 0}};
  buf q = {0}, r = {0};
  const int warm = 300, n = 5000;
  double *t = malloc(sizeof(double) * n);
  for (int i = 0; i < warm + n; i++) {
    encode_query(&q, (uint64_t)i + 10, 2, gid, pos, 1);
    double t0 = now_s();
    send_all(fd, q.p, q.n);
    recv_frame(fd, &r);
    double dt = now_s() - t0;
    size_t len;
    if (!find_field(r.p, r.n, 12, &len, NULL)) { fprintf(stderr, "bench: not a ContactReply\n"); exit(1); }
    if (i >= warm) t[i - warm] = dt;
  }
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  printf("rtt  2-body wrench-only query, loopback TCP, 1 client: p50 %.1f us  p99 %.1f us  (n=%d)\n",
         t[n / 2] * 1e6, t[(int)(n * 0.99)] * 1e6, n);
  free(t); free(q.p); free(r.p); free(sphere); free(plane);
  close(j); close(fd);
  stop_daemon(&d);
}

static void bench_scene(int workers) {
  daemon_t d;
  start_daemon(&d, workers);
  int j = connect_port(d.port), fd = connect_port(d.port);
  char *sphere = register_json(j, SPHERE);
  enum { NX = 10, NY = 10, NZ = 5, N = NX * NY * NZ };
  const char *gid[N];
  double (*pos)[3] = malloc(sizeof(double[3]) * N);
  int k = 0;
  for (int x = 0; x < NX; x++)
    for (int y = 0; y < NY; y++)
      for (int z = 0; z < NZ; z++, k++) {
        gid[k] = sphere;
        pos[k][0] = 0.19 * x;
        pos[k][1] = 0.19 * y;
        pos[k][2] = 0.19 * z;
      }
  buf q = {0}, r = {0};
  int pairs = 0;
  encode_query(&q, 1, N, gid, (const double(*)[3])pos, 0);
  send_all(fd, q.p, q.n); /* warm-up */
  recv_frame(fd, &r);
  const int reps = 5;
  double t0 = now_s();
  for (int i = 0; i < reps; i++) {
    send_all(fd, q.p, q.n);
    recv_frame(fd, &r);
  }
  double dt = now_s() - t0;
  size_t len;
  const uint8_t *cr = find_field(r.p, r.n, 12, &len, NULL);
  if (!cr) { fprintf(stderr, "bench: scene query failed\n"); exit(1); }
  find_field(cr, len, 1, &len, &pairs);
  printf("scene %d bodies, %d pairs (all pairs, compliant spheres): %d worker%s: %.0f pairs/s (%.1f ms/query)\n",
         N, pairs, workers, workers > 1 ? "s" : " ", pairs * reps / dt, dt / reps * 1e3);
  free(q.p); free(r.p); free(pos); free(sphere);
  close(j); close(fd);
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
  bench_rtt();
  bench_scene(1);
  bench_scene(2);
  return 0;
}
