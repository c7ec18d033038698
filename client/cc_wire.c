/* cc_wire.c — the client object's lowest layer: sockets, framing, one raw
 * request and its reply, the queue of stream results, errors (see
 * cc_internal.h). Nothing here reconnects. */
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

#include "cc_internal.h"

static void clear(cc_error *err, int code, int remote) {
  err->code = code;
  err->remote = remote;
  err->field[0] = 0;
  err->message[0] = 0;
  err->stream_id = err->sequence = 0;
  err->retryable = err->reopened = 0;
}

int cc_wire_fail(cc_error *err, int code, const char *fmt, ...) {
  if (err) {
    clear(err, code, 0);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}

int cc_wire_lost(cc_error *err, const char *fmt, ...) {
  if (err) {
    clear(err, CC_EUNAVAILABLE, 0);
    err->retryable = 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return CC_EUNAVAILABLE;
}

int cc_wire_ok(cc_error *err) {
  if (err) clear(err, 0, 0);
  return 0;
}

static int remote_fail(cc_error *err, const Contactd__V1__Error *e) {
  int code = (int)e->code;
  if (code <= 0 || code > 16) code = CC_EUNKNOWN;
  if (err) {
    clear(err, code, 1);
    err->stream_id = e->stream_id;
    err->sequence = e->sequence;
    snprintf(err->field, sizeof err->field, "%s", e->field ? e->field : "");
    snprintf(err->message, sizeof err->message, "%s", e->message ? e->message : "");
  }
  return code;
}

int64_t cc_wire_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Milliseconds left until deadline (deadline < 0 = forever → -1). */
static int left_ms(int64_t deadline) {
  if (deadline < 0) return -1;
  int64_t l = deadline - cc_wire_now_ms();
  return l < 0 ? 0 : (int)(l > 1000000000 ? 1000000000 : l);
}

static int64_t deadline_after(int ms) { return ms < 0 ? -1 : cc_wire_now_ms() + ms; }

/* ---- connect -------------------------------------------------------------- */

/* Wait for a non-blocking connect to finish; 0 or a code. */
static int finish_connect(int fd, int timeout_ms, const char *addr, cc_error *err) {
  struct pollfd p = {.fd = fd, .events = POLLOUT};
  int r;
  do r = poll(&p, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  if (r == 0) return cc_wire_fail(err, CC_EDEADLINE_EXCEEDED, "connect to %s timed out after %d ms", addr, timeout_ms);
  if (r < 0) return cc_wire_fail(err, CC_EUNAVAILABLE, "connect to %s: %s", addr, strerror(errno));
  int soerr = 0;
  socklen_t sl = sizeof soerr;
  getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
  if (soerr) return cc_wire_fail(err, CC_EUNAVAILABLE, "connect to %s: %s", addr, strerror(soerr));
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
      rc = cc_wire_fail(err, CC_EUNAVAILABLE, "connect to %s: %s", addr, strerror(errno));
  }
  fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return rc;
}

static int open_unix(const char *addr, int timeout_ms, int *out_fd, cc_error *err) {
  const char *path = addr + 5;
  struct sockaddr_un sun;
  memset(&sun, 0, sizeof sun);
  sun.sun_family = AF_UNIX;
  if (!*path || strlen(path) >= sizeof sun.sun_path)
    return cc_wire_fail(err, CC_EINVALID_ARGUMENT, "bad Unix socket path in address \"%s\"", addr);
  memcpy(sun.sun_path, path, strlen(path) + 1);
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return cc_wire_fail(err, CC_EUNAVAILABLE, "socket: %s", strerror(errno));
  int rc = connect_addr(fd, (struct sockaddr *)&sun, sizeof sun, timeout_ms, addr, err);
  if (rc) {
    close(fd);
    return rc;
  }
  *out_fd = fd;
  return 0;
}

int cc_wire_open(const char *addr, int timeout_ms, int *out_fd, cc_error *err) {
  if (strncmp(addr, "unix:", 5) == 0) return open_unix(addr, timeout_ms, out_fd, err);
  /* host:port, [v6]:port */
  char host[256];
  const char *port;
  if (addr[0] == '[') {
    const char *e = strchr(addr, ']');
    if (!e || e[1] != ':' || (size_t)(e - addr - 1) >= sizeof host)
      return cc_wire_fail(err, CC_EINVALID_ARGUMENT, "bad address \"%s\" (want [v6addr]:port)", addr);
    memcpy(host, addr + 1, (size_t)(e - addr - 1));
    host[e - addr - 1] = 0;
    port = e + 2;
  } else {
    const char *colon = strrchr(addr, ':');
    if (!colon || (size_t)(colon - addr) >= sizeof host)
      return cc_wire_fail(err, CC_EINVALID_ARGUMENT,
                          "bad address \"%s\" (want host:port, [v6addr]:port or unix:/path)", addr);
    memcpy(host, addr, (size_t)(colon - addr));
    host[colon - addr] = 0;
    port = colon + 1;
  }
  char *endp;
  long pn = strtol(port, &endp, 10);
  if (!*port || *endp || pn <= 0 || pn > 65535)
    return cc_wire_fail(err, CC_EINVALID_ARGUMENT, "bad port \"%s\" in address \"%s\"", port, addr);
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof hints);
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int gr = getaddrinfo(host[0] ? host : "127.0.0.1", port, &hints, &res);
  if (gr) return cc_wire_fail(err, CC_EUNAVAILABLE, "cannot resolve \"%s\": %s", host, gai_strerror(gr));
  int rc = CC_EUNAVAILABLE;
  for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      rc = cc_wire_fail(err, CC_EUNAVAILABLE, "socket: %s", strerror(errno));
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

void cc_wire_drop(cc_client *c) {
  if (c->fd >= 0) close(c->fd);
  c->fd = -1;
  c->rlen = 0;
  c->broken = 1;
}

void cc_wire_free_queue(cc_client *c) {
  while (c->qhead) {
    cc_queued *q = c->qhead;
    c->qhead = q->next;
    if (q->env) contactd__v1__envelope__free_unpacked(q->env, NULL);
    free(q->notice);
    free(q);
  }
  c->qtail = NULL;
}

/* ---- framing -------------------------------------------------------------- */

int cc_wire_send(cc_client *c, const Envelope *env, cc_error *err) {
  if (c->broken) return cc_wire_lost(err, "connection to %s is lost", c->addrs[c->cur]);
  size_t body = contactd__v1__envelope__get_packed_size(env);
  size_t need = body + 10;
  if (need > c->wcap) {
    uint8_t *nb = realloc(c->wbuf, need);
    if (!nb) return cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory for a %zu-byte request", body);
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
        return cc_wire_fail(err, CC_EDEADLINE_EXCEEDED, "sending a request timed out after %d ms", c->timeout_ms);
      }
      continue;
    }
    c->broken = 1;
    return cc_wire_lost(err, "connection to %s lost while sending: %s", c->addrs[c->cur],
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
      return -cc_wire_fail(err, CC_EINTERNAL, "malformed length prefix from the server");
    }
    uint8_t b = c->rbuf[i++];
    len |= (uint64_t)(b & 0x7f) << shift;
    shift += 7;
    if (!(b & 0x80)) break;
  }
  if (len > c->max_frame) {
    c->broken = 1;
    return -cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "reply of %llu bytes exceeds the client's cap of %zu",
                         (unsigned long long)len, c->max_frame);
  }
  if (c->rlen - i < len) {
    size_t need = i + (size_t)len;
    if (need > c->rcap) {
      uint8_t *nb = realloc(c->rbuf, need);
      if (!nb) {
        c->broken = 1;
        return -cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory for a %llu-byte reply",
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
    return -cc_wire_fail(err, CC_EINTERNAL, "the server sent a %llu-byte frame that is not an Envelope",
                         (unsigned long long)len);
  }
  *out = env;
  return 1;
}

cc_open_stream *cc_wire_stream(cc_client *c, uint64_t stream_id) {
  for (size_t i = 0; i < c->nstreams; i++)
    if (c->streams[i].stream_id == stream_id) return &c->streams[i];
  return NULL;
}

/* Server stream ids → the caller's (they differ after a reopen). */
static void to_caller_ids(cc_client *c, Envelope *env) {
  uint64_t *id = NULL;
  if (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT && env->stream_result)
    id = &env->stream_result->stream_id;
  else if (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR && env->error && env->error->stream_id)
    id = &env->error->stream_id;
  if (!id) return;
  for (size_t i = 0; i < c->nstreams; i++)
    if (c->streams[i].server_id == *id) {
      *id = c->streams[i].stream_id;
      return;
    }
}

int cc_wire_recv(cc_client *c, int64_t deadline, Envelope **out, cc_error *err) {
  *out = NULL;
  for (;;) {
    int r = try_decode(c, out, err);
    if (r == 1) {
      to_caller_ids(c, *out);
      return 0;
    }
    if (r < 0) return -r;
    if (c->broken) return cc_wire_lost(err, "connection to %s is lost", c->addrs[c->cur]);
    if (c->rcap - c->rlen < 65536) {
      size_t nc = c->rcap ? c->rcap * 2 : 65536;
      while (nc - c->rlen < 65536) nc *= 2;
      uint8_t *nb = realloc(c->rbuf, nc);
      if (!nb) return cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
      c->rbuf = nb;
      c->rcap = nc;
    }
    struct pollfd p = {.fd = c->fd, .events = POLLIN};
    int pr = poll(&p, 1, left_ms(deadline));
    if (pr < 0) {
      if (errno == EINTR) continue;
      return cc_wire_fail(err, CC_EUNAVAILABLE, "poll: %s", strerror(errno));
    }
    if (pr == 0) return cc_wire_fail(err, CC_EDEADLINE_EXCEEDED, "no reply from the server within the timeout");
    ssize_t n = recv(c->fd, c->rbuf + c->rlen, c->rcap - c->rlen, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) {
      c->broken = 1;
      return cc_wire_lost(err, "the server at %s closed the connection%s%s", c->addrs[c->cur],
                          n < 0 ? ": " : "", n < 0 ? strerror(errno) : "");
    }
    c->rlen += (size_t)n;
  }
}

int cc_wire_is_stream_rid(const cc_client *c, uint64_t rid) {
  if (rid & CC_STREAM_RID_BIT) return 1;
  for (size_t i = 0; i < c->nstreams; i++)
    if (c->streams[i].open_rid == rid) return 1;
  return 0;
}

void cc_wire_enqueue(cc_client *c, Envelope *env, cc_error *notice) {
  cc_queued *q = malloc(sizeof *q);
  if (!q) {
    if (env) contactd__v1__envelope__free_unpacked(env, NULL);
    free(notice);
    return;
  }
  q->env = env;
  q->notice = notice;
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
      (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR && cc_wire_is_stream_rid(c, env->request_id)))
    cc_wire_enqueue(c, env, NULL);
  else
    contactd__v1__envelope__free_unpacked(env, NULL);
}

int cc_wire_call(cc_client *c, Envelope *req, Envelope **reply, cc_error *err) {
  *reply = NULL;
  uint64_t rid = c->next_rid++;
  req->request_id = rid;
  int rc = cc_wire_send(c, req, err);
  if (rc) return rc;
  int64_t dl = deadline_after(c->timeout_ms);
  for (;;) {
    Envelope *env;
    rc = cc_wire_recv(c, dl, &env, err);
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
      rc = env->error ? remote_fail(err, env->error) : cc_wire_fail(err, CC_EUNKNOWN, "empty error reply");
      contactd__v1__envelope__free_unpacked(env, NULL);
      return rc;
    }
    *reply = env;
    return cc_wire_ok(err);
  }
}

int cc_wire_remote(cc_error *err, const Contactd__V1__Error *e) { return remote_fail(err, e); }
