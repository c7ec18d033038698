/* cd_test_client.c — see cd_test_client.h. */
#include "cd_test_client.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cd_frame.h"

#ifndef CONTACTD_BIN
#error "CONTACTD_BIN must name the contactd executable"
#endif

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

int tc_log_count(tc_daemon *d, const char *needle) {
  char *b = td_read_log(d);
  if (!b) return 0;
  int c = 0;
  for (char *p = b; (p = strstr(p, needle)); p++) c++;
  free(b);
  return c;
}

void tc_start(tc_daemon *d, const char *const *extra) {
  const char *why = NULL;
  if (td_start(d, CONTACTD_BIN, extra, &why) != 0) {
    fprintf(stderr, "tc: %s\n", why);
    abort();
  }
}

tc_daemon tc_suite_daemon;
int tc_suite_fd = -1;

void tc_suite_up(void) {
  tc_start(&tc_suite_daemon, NULL);
  tc_suite_fd = tc_connect_tcp(tc_suite_daemon.port);
}

void tc_suite_down(void) {
  close(tc_suite_fd);
  tc_suite_fd = -1;
  cr_expect_eq(tc_stop(&tc_suite_daemon), 0);
}

int tc_alive(tc_daemon *d) { return td_alive(d); }

int tc_stop(tc_daemon *d) { return td_stop(d, 1); }

int tc_connect_tcp(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(0x7f000001);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

int tc_connect_unix(const char *path) {
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_un a;
  memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX;
  snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
    close(fd);
    return -1;
  }
  return fd;
}

int tc_send_raw(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

int tc_send_burst(int fd, const Contactd__V1__Envelope *env, int n) {
  uint8_t *buf = NULL;
  size_t len = 0;
  for (int k = 0; k < n; k++) {
    size_t body, m = cd_frame_size(&env[k].base, &body);
    uint8_t *grown = realloc(buf, len + m);
    if (!grown) {
      free(buf);
      return -1;
    }
    buf = grown;
    cd_frame_write(&env[k].base, body, buf + len);
    len += m;
  }
  int rc = tc_send_raw(fd, buf, len);
  free(buf);
  return rc;
}

int tc_send(int fd, const Contactd__V1__Envelope *env) { return tc_send_burst(fd, env, 1); }

/* Read exactly n bytes within the deadline. */
static int read_full(int fd, void *buf, size_t n, long deadline) {
  char *p = buf;
  while (n) {
    long left = deadline - now_ms();
    if (left <= 0) return -1;
    struct pollfd pf = {fd, POLLIN, 0};
    int r = poll(&pf, 1, (int)left);
    if (r <= 0) return -1;
    ssize_t k = recv(fd, p, n, 0);
    if (k <= 0) {
      if (k < 0 && errno == EINTR) continue;
      return -1;
    }
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

uint8_t *tc_recv_frame(int fd, int timeout_ms, size_t *n) {
  long deadline = now_ms() + timeout_ms;
  uint64_t len = 0;
  int shift = 0;
  for (;;) {
    uint8_t b;
    if (read_full(fd, &b, 1, deadline)) return NULL;
    len |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
    shift += 7;
    if (shift > 63) return NULL;
  }
  uint8_t *buf = malloc(len ? len : 1);
  if (read_full(fd, buf, len, deadline)) {
    free(buf);
    return NULL;
  }
  *n = (size_t)len;
  return buf;
}

Contactd__V1__Envelope *tc_recv(int fd, int timeout_ms) {
  size_t len;
  uint8_t *buf = tc_recv_frame(fd, timeout_ms, &len);
  if (!buf) return NULL;
  Contactd__V1__Envelope *e = contactd__v1__envelope__unpack(NULL, len, buf);
  free(buf);
  return e;
}

int tc_wait_closed(int fd, int timeout_ms) {
  long deadline = now_ms() + timeout_ms;
  char buf[4096];
  for (;;) {
    long left = deadline - now_ms();
    if (left <= 0) return 0;
    struct pollfd pf = {fd, POLLIN, 0};
    if (poll(&pf, 1, (int)left) <= 0) return 0;
    ssize_t k = recv(fd, buf, sizeof buf, 0);
    if (k == 0) return 1;
    if (k < 0 && errno != EINTR) return 1;
  }
}

int tc_send_line(int fd, const char *json) {
  if (tc_send_raw(fd, json, strlen(json))) return -1;
  return tc_send_raw(fd, "\n", 1);
}

char *tc_recv_line(int fd, int timeout_ms) {
  long deadline = now_ms() + timeout_ms;
  size_t cap = 4096, n = 0;
  char *b = malloc(cap);
  for (;;) {
    char c;
    if (read_full(fd, &c, 1, deadline)) {
      free(b);
      return NULL;
    }
    if (c == '\n') break;
    if (n + 2 >= cap) b = realloc(b, cap *= 2);
    b[n++] = c;
  }
  b[n] = 0;
  return b;
}

Contactd__V1__Envelope *tc_call(int fd, Contactd__V1__Envelope *req, int timeout_ms) {
  if (tc_send(fd, req)) return NULL;
  return tc_recv(fd, timeout_ms);
}

Contactd__V1__Envelope *tc_stats(int fd, uint64_t request_id, int timeout_ms) {
  Contactd__V1__Stats s = CONTACTD__V1__STATS__INIT;
  Contactd__V1__Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = request_id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STATS;
  e.stats = &s;
  Contactd__V1__Envelope *r = tc_call(fd, &e, timeout_ms);
  if (r && (r->msg_case != CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY || r->request_id != request_id)) {
    contactd__v1__envelope__free_unpacked(r, NULL);
    r = NULL;
  }
  return r;
}

static char *register_msg(int fd, Contactd__V1__RegisterGeometry *rg, uint64_t id) {
  Contactd__V1__Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = rg;
  Contactd__V1__Envelope *r = tc_call(fd, &e, 60000);
  char *out = NULL;
  if (r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY) out = strdup(r->register_reply->geometry_id);
  else if (r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR)
    fprintf(stderr, "tc: register failed: %s\n", r->error->message);
  if (r) contactd__v1__envelope__free_unpacked(r, NULL);
  return out;
}

void tc_sphere_spec(Contactd__V1__RegisterGeometry *rg, Contactd__V1__Sphere *s, double radius, double modulus,
                    double hint) {
  contactd__v1__sphere__init(s);
  s->radius = radius;
  contactd__v1__register_geometry__init(rg);
  rg->shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rg->sphere = s;
  rg->compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg->modulus = modulus;
  rg->resolution_hint = hint;
}

char *tc_register_sphere(int fd, uint64_t request_id, double radius, double modulus, double hint) {
  Contactd__V1__Sphere s;
  Contactd__V1__RegisterGeometry rg;
  tc_sphere_spec(&rg, &s, radius, modulus, hint);
  return register_msg(fd, &rg, request_id);
}

char *tc_register_halfspace(int fd, uint64_t request_id, int compliant, double modulus) {
  Contactd__V1__HalfSpace h = CONTACTD__V1__HALF_SPACE__INIT;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE;
  rg.half_space = &h;
  rg.compliance = compliant ? CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT : CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rg.modulus = modulus;
  return register_msg(fd, &rg, request_id);
}

int tc_send_stream_update_z(int fd, uint64_t request_id, uint64_t sid, uint64_t seq, uint32_t body_id, double z) {
  Contactd__V1__Vec3 pos = CONTACTD__V1__VEC3__INIT;
  pos.z = z;
  Contactd__V1__Pose pose = CONTACTD__V1__POSE__INIT;
  pose.position = &pos;
  Contactd__V1__BodyState bs = CONTACTD__V1__BODY_STATE__INIT, *bsp[1] = {&bs};
  bs.body_id = body_id;
  bs.pose = &pose;
  Contactd__V1__StreamUpdate u = CONTACTD__V1__STREAM_UPDATE__INIT;
  u.stream_id = sid;
  u.sequence = seq;
  u.n_bodies = 1;
  u.bodies = bsp;
  Contactd__V1__Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = request_id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
  e.stream_update = &u;
  return tc_send(fd, &e);
}

uint64_t tc_open_stream(int fd, Contactd__V1__OpenStream *os, uint64_t request_id, int timeout_ms) {
  Contactd__V1__Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = request_id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM;
  e.open_stream = os;
  Contactd__V1__Envelope *r = tc_call(fd, &e, timeout_ms);
  uint64_t id = 0;
  if (r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM_REPLY && r->request_id == request_id)
    id = r->open_stream_reply->stream_id;
  else if (r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR)
    fprintf(stderr, "tc: open stream failed: %s\n", r->error->message);
  if (r) contactd__v1__envelope__free_unpacked(r, NULL);
  return id;
}

uint64_t tc_open_pair_stream(int fd, const char *ga, double za, const char *gb, double zb,
                             Contactd__V1__QueryOptions *o, int mode, uint64_t request_id, int timeout_ms) {
  Contactd__V1__Body b1, b2, *bodies[2] = {&b1, &b2};
  Contactd__V1__Pose p1, p2;
  Contactd__V1__Vec3 v1, v2;
  tc_body(&b1, &p1, &v1, 1, ga, 0, 0, za);
  tc_body(&b2, &p2, &v2, 2, gb, 0, 0, zb);
  Contactd__V1__Pair pr = CONTACTD__V1__PAIR__INIT, *prs[1] = {&pr};
  pr.a = 1;
  pr.b = 2;
  Contactd__V1__OpenStream os = CONTACTD__V1__OPEN_STREAM__INIT;
  os.n_bodies = 2;
  os.bodies = bodies;
  os.n_pairs = 1;
  os.pairs = prs;
  os.options = o;
  os.mode = (Contactd__V1__StreamMode)mode;
  return tc_open_stream(fd, &os, request_id, timeout_ms);
}

const char *tc_config_file(const char *name, const char *json) {
  /* in this process's own directory: ctest runs a test program with one
   * and with four event loops at once, and each writes its own configs */
  static char path[512];
  snprintf(path, sizeof path, "%s/%s", td_own_dir(), name);
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "tc: cannot write %s\n", path);
    abort();
  }
  fprintf(f, "%s\n", json);
  fclose(f);
  return path;
}

const char *tc_limits_file(const char *name, const char *limits) {
  char json[4096];
  snprintf(json, sizeof json, "{\"limits\": {%s}}", limits);
  return tc_config_file(name, json);
}

void tc_token_sha256_hex(const char *token, char out[65]) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "printf %%s '%s' | openssl dgst -sha256 -r", token);
  FILE *p = popen(cmd, "r");
  if (!p || !fgets(out, 65, p)) {
    fprintf(stderr, "tc: openssl dgst failed\n");
    abort();
  }
  pclose(p);
  out[64] = 0;
}

Contactd__V1__Envelope *tc_hello(int fd, const char *token) {
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  h.protocol_version = 1;
  h.client_name = "contactd-test";
  h.token = (char *)(token ? token : "");
  Contactd__V1__Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 1;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  e.hello = &h;
  return tc_call(fd, &e, 10000);
}

int tc_login(int fd, const char *token, const char *name) {
  Contactd__V1__Envelope *r = tc_hello(fd, token);
  int ok = r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY && strcmp(r->hello_reply->principal, name) == 0;
  if (r) contactd__v1__envelope__free_unpacked(r, NULL);
  return ok ? 0 : -1;
}

void tc_body(Contactd__V1__Body *b, Contactd__V1__Pose *pose, Contactd__V1__Vec3 *pos, uint32_t id,
             const char *geometry_id, double x, double y, double z) {
  contactd__v1__body__init(b);
  contactd__v1__pose__init(pose);
  contactd__v1__vec3__init(pos);
  pos->x = x;
  pos->y = y;
  pos->z = z;
  pose->position = pos;
  b->body_id = id;
  b->geometry_id = (char *)geometry_id;
  b->pose = pose;
}

void tc_pair_query_init(tc_pair_query *q, uint64_t request_id, const char *ga, double za, const char *gb,
                        double zb, Contactd__V1__Detail detail) {
  tc_body(&q->b[0], &q->pose[0], &q->pos[0], 1, ga, 0, 0, za);
  tc_body(&q->b[1], &q->pose[1], &q->pos[1], 2, gb, 0, 0, zb);
  q->bodies[0] = &q->b[0];
  q->bodies[1] = &q->b[1];
  contactd__v1__pair__init(&q->pair);
  q->pair.a = 1;
  q->pair.b = 2;
  q->pairs[0] = &q->pair;
  contactd__v1__query_options__init(&q->options);
  q->options.detail = detail;
  contactd__v1__contact_query__init(&q->query);
  q->query.n_bodies = 2;
  q->query.bodies = q->bodies;
  q->query.n_pairs = 1;
  q->query.pairs = q->pairs;
  if (detail) q->query.options = &q->options;
  contactd__v1__envelope__init(&q->env);
  q->env.request_id = request_id;
  q->env.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  q->env.contact_query = &q->query;
}

/* promtool's lint findings other than the one let through (its line names a
 * metric ending in _us, or _us_ and a suffix); 0 when there are none. */
static int promtool_other_findings(char *out) {
  for (char *ln = strtok(out, "\n"); ln; ln = strtok(NULL, "\n")) {
    const char *sp = strchr(ln, ' ');
    int us = sp && strstr(sp, " metric names should not contain abbreviated units") == sp &&
             (memcmp(sp - 3, "_us", 3) == 0 || (strstr(ln, "_us_") && strstr(ln, "_us_") < sp));
    if (!us && *ln) return 1;
  }
  return 0;
}

int tc_promtool_check(const char *text, size_t n, char *why, size_t whylen) {
  int in[2], out[2];
  /* close-on-exec: a promtool another thread starts meanwhile must not
   * inherit these ends, or neither promtool sees the end of its input */
  if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC)) {
    snprintf(why, whylen, "pipe: %s", strerror(errno));
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(out[1], 2);
    close(in[0]), close(in[1]), close(out[0]), close(out[1]);
    execlp("promtool", "promtool", "check", "metrics", (char *)NULL);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  for (size_t off = 0; off < n;) { /* promtool reads it all before it writes */
    ssize_t k = write(in[1], text + off, n - off);
    if (k <= 0) break;
    off += (size_t)k;
  }
  close(in[1]);
  char buf[8192];
  size_t got = 0;
  for (ssize_t k; got < sizeof buf - 1 && (k = read(out[0], buf + got, sizeof buf - 1 - got)) > 0;) got += (size_t)k;
  buf[got] = 0;
  close(out[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  int rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  if (rc == 127) {
    snprintf(why, whylen, "promtool not found: install Debian's prometheus package (deploy/deps.sh)");
    return -1;
  }
  snprintf(why, whylen, "promtool check metrics exited %d: %s", rc, buf);
  if (rc == 0) return 0;
  /* 3: it parsed, with lint findings */
  return rc == 3 && !promtool_other_findings(buf) ? 0 : -1;
}
