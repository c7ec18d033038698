/* cc_client.c — connection, framing and the blocking calls (see cc_client.h). */
#include "cc_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

typedef Contactd__V1__Envelope Envelope;

/* Request ids of stream updates carry this bit, so that an Error for an
 * update is told apart from a late reply to an abandoned call. */
#define CC_STREAM_RID_BIT (1ULL << 63)

typedef struct cc_queued {
  Envelope *env;
  struct cc_queued *next;
} cc_queued;

typedef struct cc_open_stream {
  uint64_t stream_id, open_rid;
} cc_open_stream;

struct cc_client {
  int fd;
  int timeout_ms;
  size_t max_frame;
  uint64_t next_rid;       /* ordinary calls */
  uint64_t next_stream_rid; /* updates (with CC_STREAM_RID_BIT) */
  uint8_t *rbuf;           /* received, not yet decoded */
  size_t rlen, rcap;
  uint8_t *wbuf;
  size_t wcap;
  cc_queued *qhead, *qtail; /* stream results / stream errors */
  cc_open_stream *streams;
  size_t nstreams, cstreams;
  int broken;              /* framing lost or peer closed */
  cc_progress_fn progress;  /* RegisterProgress of the awaited request */
  void *progress_user;
};

void cc_set_progress(cc_client *c, cc_progress_fn fn, void *user) {
  c->progress = fn;
  c->progress_user = user;
}

static const char *const code_names[] = {
    "OK",        "CANCELLED",         "UNKNOWN",       "INVALID_ARGUMENT",    "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS",    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",      "UNIMPLEMENTED", "INTERNAL",            "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

const char *cc_code_name(int code) {
  if (code < 0 || code > 16) return "UNKNOWN";
  return code_names[code];
}

static int fail(cc_error *err, int code, const char *fmt, ...) {
  if (err) {
    err->code = code;
    err->remote = 0;
    err->field[0] = 0;
    err->stream_id = err->sequence = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

static int ok(cc_error *err) {
  if (err) {
    err->code = 0;
    err->remote = 0;
    err->field[0] = 0;
    err->message[0] = 0;
    err->stream_id = err->sequence = 0;
  }
  return 0;
}

static int remote_fail(cc_error *err, const Contactd__V1__Error *e) {
  int code = (int)e->code;
  if (code <= 0 || code > 16) code = CC_EUNKNOWN;
  if (err) {
    err->code = code;
    err->remote = 1;
    err->stream_id = e->stream_id;
    err->sequence = e->sequence;
    snprintf(err->field, sizeof err->field, "%s", e->field ? e->field : "");
    snprintf(err->message, sizeof err->message, "%s", e->message ? e->message : "");
  }
  return code;
}

void cc_options_default(cc_options *o) {
  o->connect_timeout_ms = 5000;
  o->timeout_ms = 60000;
  o->max_frame_bytes = (size_t)256 << 20;
}

const char *cc_default_addr(void) {
  const char *e = getenv("CONTACTD_ADDR");
  return (e && *e) ? e : CC_DEFAULT_ADDR;
}

void cc_free(void *msg) {
  if (msg) protobuf_c_message_free_unpacked((ProtobufCMessage *)msg, NULL);
}

int cc_fd(const cc_client *c) { return c->fd; }

void cc_set_timeout(cc_client *c, int timeout_ms) { c->timeout_ms = timeout_ms; }

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline (deadline < 0 = forever → -1). */
static int left_ms(int64_t deadline) {
  if (deadline < 0) return -1;
  int64_t l = deadline - now_ms();
  return l < 0 ? 0 : (int)(l > 1000000000 ? 1000000000 : l);
}

static int64_t deadline_after(int ms) { return ms < 0 ? -1 : now_ms() + ms; }

/* ---- connect -------------------------------------------------------------- */

/* Wait for a non-blocking connect to finish; 0 or a code. */
static int finish_connect(int fd, int timeout_ms, const char *addr, cc_error *err) {
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  int r;
  do r = poll(&p, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  if (r == 0) return fail(err, CC_EDEADLINE_EXCEEDED, "connect to %s timed out after %d ms", addr, timeout_ms);
  if (r < 0) return fail(err, CC_EUNAVAILABLE, "connect to %s: %s", addr, strerror(errno));
  int soerr = 0;
  socklen_t sl = sizeof soerr;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
  if (soerr) return fail(err, CC_EUNAVAILABLE, "connect to %s: %s", addr, strerror(soerr));
  return 0;
}

static int connect_addr(int fd, const struct sockaddr *sa, socklen_t len, int timeout_ms,
                        const char *addr, cc_error *err) {
  int fl = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, fl | O_NONBLOCK);
  int rc = 0;
  if (connect(fd, sa, len) < 0) {
    if (errno == EINPROGRESS || errno == EAGAIN)
      rc = finish_connect(fd, timeout_ms, addr, err);
    else
      rc = fail(err, CC_EUNAVAILABLE, "connect to %s: %s", addr, strerror(errno));
  }
  fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return rc;
}

static int open_socket(const char *addr, int timeout_ms, int *out_fd, cc_error *err) {
  if (strncmp(addr, "unix:", 5) == 0) {
    const char *path = addr + 5;
    struct sockaddr_un sun;
    memset(&sun, 0, sizeof sun);
    sun.sun_family = AF_UNIX;
    if (!*path || strlen(path) >= sizeof sun.sun_path)
      return fail(err, CC_EINVALID_ARGUMENT, "bad Unix socket path in address \"%s\"", addr);
    memcpy(sun.sun_path, path, strlen(path) + 1);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return fail(err, CC_EUNAVAILABLE, "socket: %s", strerror(errno));
    int rc = connect_addr(fd, (struct sockaddr *)&sun, sizeof sun, timeout_ms, addr, err);
    if (rc) {
      close(fd);
      return rc;
    }
    *out_fd = fd;
    return 0;
  }
  /* host:port, [v6]:port */
  char host[256];
  const char *port;
  if (addr[0] == '[') {
    const char *e = strchr(addr, ']');
    if (!e || e[1] != ':' || (size_t)(e - addr - 1) >= sizeof host)
      return fail(err, CC_EINVALID_ARGUMENT, "bad address \"%s\" (want [v6addr]:port)", addr);
    memcpy(host, addr + 1, (size_t)(e - addr - 1));
    host[e - addr - 1] = 0;
    port = e + 2;
  } else {
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof host)
      return fail(err, CC_EINVALID_ARGUMENT,
                  "bad address \"%s\" (want host:port, [v6addr]:port or unix:/path)", addr);
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    port = colon + 1;
  }
  char *endp;
  long pn = strtol(port, &endp, 10);
  if (!*port || *endp || pn <= 0 || pn > 65535)
    return fail(err, CC_EINVALID_ARGUMENT, "bad port \"%s\" in address \"%s\"", port, addr);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int gr = getaddrinfo(host[0] ? host : "127.0.0.1", port, &hints, &res);
  if (gr) return fail(err, CC_EUNAVAILABLE, "cannot resolve \"%s\": %s", host, gai_strerror(gr));
  int rc = CC_EUNAVAILABLE;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      rc = fail(err, CC_EUNAVAILABLE, "socket: %s", strerror(errno));
      continue;
    }
    rc = connect_addr(fd, ai->ai_addr, ai->ai_addrlen, timeout_ms, addr, err);
    if (rc == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      *out_fd = fd;
      break;
    }
    close(fd);
  }
  freeaddrinfo(res);
  return rc;
}

int cc_connect(const char *addr, const cc_options *opt, cc_client **out, cc_error *err) {
  *out = NULL;
  cc_options o;
  if (opt) o = *opt;
  else cc_options_default(&o);
  if (!addr) addr = cc_default_addr();
  int fd = -1;
  int rc = open_socket(addr, o.connect_timeout_ms, &fd, err);
  if (rc) return rc;
  cc_client *c = calloc(1, sizeof *c);
  if (!c) {
    close(fd);
    return fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  }
  c->fd = fd;
  c->timeout_ms = o.timeout_ms;
  c->max_frame = o.max_frame_bytes ? o.max_frame_bytes : ((size_t)256 << 20);
  c->next_rid = 1;
  c->next_stream_rid = 1;
  *out = c;
  return ok(err);
}

void cc_close(cc_client *c) {
  if (!c) return;
  if (c->fd >= 0) close(c->fd);
  while (c->qhead) {
    cc_queued *q = c->qhead;
    c->qhead = q->next;
    contactd__v1__envelope__free_unpacked(q->env, NULL);
    free(q);
  }
  free(c->rbuf);
  free(c->wbuf);
  free(c->streams);
  free(c);
}

/* ---- framing -------------------------------------------------------------- */

static int send_env(cc_client *c, const Envelope *env, cc_error *err) {
  if (c->broken) return fail(err, CC_EUNAVAILABLE, "connection is closed");
  size_t body = contactd__v1__envelope__get_packed_size(env);
  size_t need = body + 10;
  if (need > c->wcap) {
    uint8_t *nb = realloc(c->wbuf, need);
    if (!nb) return fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory for a %zu-byte request", body);
    c->wbuf = nb;
    c->wcap = need;
  }
  size_t h = 0;
  uint64_t v = body;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    c->wbuf[h++] = (uint8_t)(b | (v ? 0x80 : 0));
  } while (v);
  contactd__v1__envelope__pack(env, c->wbuf + h);
  size_t total = h + body, off = 0;
  int64_t dl = deadline_after(c->timeout_ms);
  while (off < total) {
    ssize_t w = send(c->fd, c->wbuf + off, total - off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w > 0) {
      off += (size_t)w;
      continue;
    }
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      struct pollfd p = {.fd = c->fd, .events = POLLOUT};
      int r = poll(&p, 1, left_ms(dl));
      if (r == 0) {
        c->broken = 1; /* a partial frame was written: framing is lost */
        return fail(err, CC_EDEADLINE_EXCEEDED, "sending a request timed out after %d ms", c->timeout_ms);
      }
      continue;
    }
    c->broken = 1;
    return fail(err, CC_EUNAVAILABLE, "connection lost while sending: %s",
                w < 0 ? strerror(errno) : "closed");
  }
  return 0;
}

/* Try to decode one envelope from rbuf: 1 = *out set, 0 = need more, < 0 =
 * error code (err filled). */
static int try_decode(cc_client *c, Envelope **out, cc_error *err) {
  uint64_t len = 0;
  size_t i = 0;
  int shift = 0;
  for (;;) {
    if (i >= c->rlen) return 0;
    if (i >= 10) {
      c->broken = 1;
      return -fail(err, CC_EINTERNAL, "malformed length prefix from the server");
    }
    uint8_t b = c->rbuf[i++];
    len |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) break;
  }
  if (len > c->max_frame) {
    c->broken = 1;
    return -fail(err, CC_ERESOURCE_EXHAUSTED, "reply of %llu bytes exceeds the client's cap of %zu",
                 (unsigned long long)len, c->max_frame);
  }
  if (c->rlen - i < len) {
    size_t need = i + (size_t)len;
    if (need > c->rcap) {
      uint8_t *nb = realloc(c->rbuf, need);
      if (!nb) {
        c->broken = 1;
        return -fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory for a %llu-byte reply",
                     (unsigned long long)len);
      }
      c->rbuf = nb;
      c->rcap = need;
    }
    return 0;
  }
  Envelope *env = contactd__v1__envelope__unpack(NULL, (size_t)len, c->rbuf + i);
  memmove(c->rbuf, c->rbuf + i + len, c->rlen - i - (size_t)len);
  c->rlen -= i + (size_t)len;
  if (!env) {
    return -fail(err, CC_EINTERNAL, "the server sent a %llu-byte frame that is not an Envelope",
                 (unsigned long long)len);
  }
  *out = env;
  return 1;
}

/* Receive one envelope (any) before deadline. */
static int recv_env(cc_client *c, int64_t deadline, Envelope **out, cc_error *err) {
  *out = NULL;
  for (;;) {
    int r = try_decode(c, out, err);
    if (r == 1) return 0;
    if (r < 0) return -r;
    if (c->broken) return fail(err, CC_EUNAVAILABLE, "connection is closed");
    if (c->rcap - c->rlen < 65536) {
      size_t nc = c->rcap ? c->rcap * 2 : 65536;
      while (nc - c->rlen < 65536) nc *= 2;
      uint8_t *nb = realloc(c->rbuf, nc);
      if (!nb) return fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
      c->rbuf = nb;
      c->rcap = nc;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int pr = poll(&p, 1, left_ms(deadline));
    if (pr < 0) {
      if (errno == EINTR) continue;
      return fail(err, CC_EUNAVAILABLE, "poll: %s", strerror(errno));
    }
    if (pr == 0) return fail(err, CC_EDEADLINE_EXCEEDED, "no reply from the server within the timeout");
    ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      c->broken = 1;
      return fail(err, CC_EUNAVAILABLE, "the server closed the connection%s%s",
                  n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
    }
    c->rlen += (size_t)n;
  }
}

static int is_stream_rid(const cc_client *c, uint64_t rid) {
  if (rid & CC_STREAM_RID_BIT) return 1;
  for (size_t i = 0; i < c->nstreams; i++)
    if (c->streams[i].open_rid == rid) return 1;
  return 0;
}

static void enqueue(cc_client *c, Envelope *env) {
  cc_queued *q = malloc(sizeof *q);
  if (!q) {
    contactd__v1__envelope__free_unpacked(env, NULL);
    return;
  }
  q->env = env;
  q->next = NULL;
  if (c->qtail) c->qtail->next = q;
  else c->qhead = q;
  c->qtail = q;
}

/* Route a message that is not the reply being waited for: stream results and
 * stream errors are queued, anything else (a late reply to an abandoned
 * call) is dropped. */
static void route(cc_client *c, Envelope *env) {
  if (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT ||
      (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR && is_stream_rid(c, env->request_id)))
    enqueue(c, env);
  else
    contactd__v1__envelope__free_unpacked(env, NULL);
}

int cc_call(cc_client *c, Envelope *req, Envelope **reply, cc_error *err) {
  *reply = NULL;
  uint64_t rid = c->next_rid++;
  req->request_id = rid;
  int rc = send_env(c, req, err);
  if (rc) return rc;
  int64_t dl = deadline_after(c->timeout_ms);
  for (;;) {
    Envelope *env;
    rc = recv_env(c, dl, &env, err);
    if (rc) return rc;
    if (env->request_id != rid || env->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT) {
      route(c, env);
      continue;
    }
    if (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS) {
      if (c->progress && env->register_progress)
        c->progress(c->progress_user, env->register_progress->fraction,
                    env->register_progress->stage ? env->register_progress->stage : "");
      contactd__v1__envelope__free_unpacked(env, NULL);
      continue;
    }
    if (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR) {
      rc = env->error ? remote_fail(err, env->error) : fail(err, CC_EUNKNOWN, "empty error reply");
      contactd__v1__envelope__free_unpacked(env, NULL);
      return rc;
    }
    *reply = env;
    return ok(err);
  }
}

/* Take the reply's payload out of its envelope (the envelope is freed). */
static void *detach(Envelope *env, void **slot) {
  void *m = *slot;
  *slot = NULL;
  env->msg_case = CONTACTD__V1__ENVELOPE__MSG__NOT_SET;
  contactd__v1__envelope__free_unpacked(env, NULL);
  return m;
}

/* Call and expect reply case `want`; the payload is detached into *out. */
#define CALL_EXPECT(c, req, want, member, out, err)                                               \
  do {                                                                                            \
    Envelope *rep_;                                                                               \
    int rc_ = cc_call((c), (req), &rep_, (err));                                                  \
    if (rc_) return rc_;                                                                          \
    if (rep_->msg_case != (want) || !rep_->member) {                                              \
      int mc_ = (int)rep_->msg_case;                                                              \
      contactd__v1__envelope__free_unpacked(rep_, NULL);                                          \
      return fail((err), CC_EINTERNAL, "unexpected reply (envelope case %d) to %s", mc_, #member); \
    }                                                                                             \
    void *m_ = detach(rep_, (void **)&rep_->member);                                              \
    if (out) *(out) = m_;                                                                         \
    else cc_free(m_);                                                                             \
    return 0;                                                                                     \
  } while (0)

int cc_hello(cc_client *c, const char *client_name, Contactd__V1__HelloReply **out, cc_error *err) {
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  h.protocol_version = CC_PROTOCOL_VERSION;
  h.client_name = (char *)(client_name ? client_name : "cc_client");
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  env.hello = &h;
  CALL_EXPECT(c, &env, CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY, hello_reply, out, err);
}

int cc_register(cc_client *c, const Contactd__V1__RegisterGeometry *req,
                Contactd__V1__RegisterReply **out, cc_error *err) {
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  env.register_geometry = (Contactd__V1__RegisterGeometry *)req;
  CALL_EXPECT(c, &env, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, register_reply, out, err);
}

int cc_has(cc_client *c, const char *const *ids, size_t n, Contactd__V1__HasGeometryReply **out,
           cc_error *err) {
  Contactd__V1__HasGeometry h = CONTACTD__V1__HAS_GEOMETRY__INIT;
  h.n_geometry_ids = n;
  h.geometry_ids = (char **)ids;
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
  env.has_geometry = &h;
  CALL_EXPECT(c, &env, CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY_REPLY, has_geometry_reply, out, err);
}

int cc_ensure_shapes(cc_client *c, const cc_shape *const *shapes, char *const *ids, size_t n, size_t *registered,
                     cc_error *err) {
  if (registered) *registered = 0;
  const char **known = calloc(n ? n : 1, sizeof *known);
  if (!known) return fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  size_t nk = 0;
  for (size_t i = 0; i < n; i++)
    if (ids[i][0]) known[nk++] = ids[i];
  Contactd__V1__HasGeometryReply *h = NULL;
  int rc = nk ? cc_has(c, known, nk, &h, err) : 0;
  free(known);
  for (size_t i = 0; !rc && i < n; i++) {
    int need = !ids[i][0];
    for (size_t k = 0; h && !need && k < h->n_missing; k++) need = strcmp(h->missing[k], ids[i]) == 0;
    if (!need) continue;
    rc = cc_register_shape(c, shapes[i], ids[i], NULL, err);
    if (!rc && registered) ++*registered;
    if (rc && err && shapes[i]->name) { /* which one, for a scene of many */
      char m[sizeof err->message];
      snprintf(m, sizeof m, "%s", err->message);
      snprintf(err->message, sizeof err->message, "geometry \"%.64s\": %.400s", shapes[i]->name, m);
    }
  }
  if (h) cc_free(h);
  return rc;
}

int cc_release(cc_client *c, const char *const *ids, size_t n, Contactd__V1__ReleaseReply **out,
               cc_error *err) {
  Contactd__V1__ReleaseGeometry r = CONTACTD__V1__RELEASE_GEOMETRY__INIT;
  r.n_geometry_ids = n;
  r.geometry_ids = (char **)ids;
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_RELEASE_GEOMETRY;
  env.release_geometry = &r;
  CALL_EXPECT(c, &env, CONTACTD__V1__ENVELOPE__MSG_RELEASE_REPLY, release_reply, out, err);
}

int cc_query(cc_client *c, const Contactd__V1__ContactQuery *q, Contactd__V1__ContactReply **out,
             cc_error *err) {
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  env.contact_query = (Contactd__V1__ContactQuery *)q;
  CALL_EXPECT(c, &env, CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, contact_reply, out, err);
}

int cc_stats(cc_client *c, Contactd__V1__StatsReply **out, cc_error *err) {
  Contactd__V1__Stats s = CONTACTD__V1__STATS__INIT;
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_STATS;
  env.stats = &s;
  CALL_EXPECT(c, &env, CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY, stats_reply, out, err);
}

/* ---- streams -------------------------------------------------------------- */

int cc_stream_open(cc_client *c, const Contactd__V1__OpenStream *m, uint64_t *stream_id,
                   cc_error *err) {
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM;
  env.open_stream = (Contactd__V1__OpenStream *)m;
  Envelope *rep;
  int rc = cc_call(c, &env, &rep, err);
  if (rc) return rc;
  if (rep->msg_case != CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM_REPLY || !rep->open_stream_reply) {
    contactd__v1__envelope__free_unpacked(rep, NULL);
    return fail(err, CC_EINTERNAL, "unexpected reply to OpenStream");
  }
  if (c->nstreams == c->cstreams) {
    size_t nc = c->cstreams ? 2 * c->cstreams : 4;
    cc_open_stream *ns = realloc(c->streams, nc * sizeof *ns);
    if (!ns) {
      contactd__v1__envelope__free_unpacked(rep, NULL);
      return fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
    }
    c->streams = ns;
    c->cstreams = nc;
  }
  c->streams[c->nstreams].stream_id = rep->open_stream_reply->stream_id;
  c->streams[c->nstreams].open_rid = rep->request_id;
  c->nstreams++;
  if (stream_id) *stream_id = rep->open_stream_reply->stream_id;
  contactd__v1__envelope__free_unpacked(rep, NULL);
  return 0;
}

int cc_stream_update(cc_client *c, const Contactd__V1__StreamUpdate *u, cc_error *err) {
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.request_id = CC_STREAM_RID_BIT | c->next_stream_rid++;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
  env.stream_update = (Contactd__V1__StreamUpdate *)u;
  int rc = send_env(c, &env, err);
  return rc ? rc : ok(err);
}

int cc_stream_recv(cc_client *c, int timeout_ms, Contactd__V1__StreamResult **out, cc_error *err) {
  *out = NULL;
  int64_t dl = deadline_after(timeout_ms < 0 ? c->timeout_ms : timeout_ms);
  for (;;) {
    Envelope *env = NULL;
    if (c->qhead) {
      cc_queued *q = c->qhead;
      c->qhead = q->next;
      if (!c->qhead) c->qtail = NULL;
      env = q->env;
      free(q);
    } else {
      int rc = recv_env(c, dl, &env, err);
      if (rc) return rc;
    }
    if (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT && env->stream_result) {
      *out = detach(env, (void **)&env->stream_result);
      return ok(err);
    }
    if (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR && env->error &&
        is_stream_rid(c, env->request_id)) {
      int rc = remote_fail(err, env->error);
      contactd__v1__envelope__free_unpacked(env, NULL);
      return rc;
    }
    contactd__v1__envelope__free_unpacked(env, NULL); /* late reply to an abandoned call */
  }
}

int cc_stream_close(cc_client *c, uint64_t stream_id, Contactd__V1__CloseStreamReply **out,
                    cc_error *err) {
  Contactd__V1__CloseStream m = CONTACTD__V1__CLOSE_STREAM__INIT;
  m.stream_id = stream_id;
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM;
  env.close_stream = &m;
  Envelope *rep;
  int rc = cc_call(c, &env, &rep, err);
  /* Keep the open rid known while queued results/errors may still refer to
   * it; forget it only when nothing is queued. */
  if (!c->qhead)
    for (size_t i = 0; i < c->nstreams; i++)
      if (c->streams[i].stream_id == stream_id) {
        c->streams[i] = c->streams[--c->nstreams];
        break;
      }
  if (rc) return rc;
  if (rep->msg_case != CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM_REPLY || !rep->close_stream_reply) {
    contactd__v1__envelope__free_unpacked(rep, NULL);
    return fail(err, CC_EINTERNAL, "unexpected reply to CloseStream");
  }
  void *m2 = detach(rep, (void **)&rep->close_stream_reply);
  if (out) *out = m2;
  else cc_free(m2);
  return 0;
}

int cc_pair_jacobian(const Contactd__V1__PairResult *r, double out[4][36], const char **why) {
  const Contactd__V1__WrenchJacobian *j = r ? r->jacobian : NULL;
  if (!j) {
    if (why) *why = "not requested";
    return -1;
  }
  const double *m[4] = {j->d_pose_a, j->d_pose_b, j->d_velocity_a, j->d_velocity_b};
  const size_t n[4] = {j->n_d_pose_a, j->n_d_pose_b, j->n_d_velocity_a, j->n_d_velocity_b};
  for (int k = 0; k < 4; k++)
    if (n[k] != 36) {
      if (why) *why = j->unavailable && j->unavailable[0] ? j->unavailable : "incomplete Jacobian";
      return -1;
    }
  for (int k = 0; k < 4; k++) memcpy(out[k], m[k], sizeof out[k]);
  return 0;
}
