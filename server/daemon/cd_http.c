/* cd_http.c — the HTTP port's server: listener, connection cap, deadline
 * and request parsing, responses and event streams (cd_http.h); the
 * Prometheus endpoint (its text: cd_metrics.c) and health probes; every
 * other path goes to the viewer (cd_viewer.c).
 * Two-way with cd_viewer.c: this file is the HTTP
 * server, which routes a request to the viewer (cd_viewer_route), and the
 * viewer answers through the server's response functions (cd_http.h). */
#include "cd_http.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cd_log.h"
#include "cd_metrics.h"
#include "cd_server.h"
#include "cd_viewer.h"

#define REQ_MAX 4096

typedef struct cd_http_conn mconn;

struct cd_http {
  cd_server *srv;
  uv_tcp_t listener;
  cd_spare spare; /* takes the connections we have no memory for */
  int nconns;   /* connections whose handles are not yet closed */
  int nopen;    /* of those, the ones not closing: what max_metrics_connections caps
                   (a closed socket's handle is released a moment later, and a
                   client may already be reconnecting) */
  int stopping;
  int listener_closed;
  mconn *conns; /* open (not yet closing) connections, for cd_http_stop */
};

/* One HTTP connection. Its timer is a deadline from accept, never reset by
 * traffic: a client that connects and sends nothing, or dribbles a byte at a
 * time, is closed metrics_timeout_ms after it connected. */
struct cd_http_conn {
  uv_tcp_t h;
  uv_timer_t deadline;
  int handles_open; /* h and deadline: closed asynchronously */
  int closing;
  cd_http *m;
  mconn *prev, *next;
  char req[REQ_MAX];
  size_t len;
  int done;
  uv_write_t w;
  char *resp;
  int draining;  /* answered an oversize request: reading and dropping the rest */
  int streaming; /* an event stream (cd_http_stream_start) */
  int writing;   /* a stream write in flight (resp is its buffer) */
  void (*on_sent)(void *);
  void (*on_close)(void *);
  void *arg;
  uv_shutdown_t sd;
};

static void free_server(cd_http *m) {
  if (m->stopping && m->listener_closed && m->nconns == 0 && !m->spare.busy) free(m);
}

static void on_spare_idle(void *arg) { free_server(arg); }

static void mfree(mconn *c) {
  cd_http *m = c->m;
  free(c->resp);
  free(c);
  m->nconns--;
  free_server(m);
}

static void on_mclose(uv_handle_t *h) {
  mconn *c = h->data;
  if (--c->handles_open > 0) return;
  mfree(c);
}

/* Close c once (a pending write is cancelled: on_written then sees closing). */
static void mclose(mconn *c) {
  if (c->closing) return;
  c->closing = 1;
  cd_http *m = c->m;
  m->nopen--;
  if (c->prev) c->prev->next = c->next;
  else if (m->conns == c) m->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  if (c->on_close) c->on_close(c->arg);
  c->on_close = NULL;
  c->on_sent = NULL;
  uv_close((uv_handle_t *)&c->h, on_mclose);
  uv_close((uv_handle_t *)&c->deadline, on_mclose);
}

static void on_shutdown(uv_shutdown_t *r, int status) {
  (void)r;
  (void)status; /* the deadline or the client's EOF closes it */
}

static void on_written(uv_write_t *w, int status) {
  mconn *c = w->data;
  if (c->streaming && !c->closing && status == 0) {
    free(c->resp);
    c->resp = NULL;
    c->writing = 0;
    if (c->on_sent) c->on_sent(c->arg);
    return;
  }
  /* An oversize request: the client may still be sending it. Closing now
   * would reset the connection and lose the response, so say we are done
   * (FIN) and read on, dropping, until it closes or the deadline. */
  if (c->draining && !c->closing && status == 0 &&
      uv_shutdown(&c->sd, (uv_stream_t *)&c->h, on_shutdown) == 0)
    return;
  mclose(c);
}

static void on_deadline(uv_timer_t *t) {
  mconn *c = t->data;
  CD_DEBUG("metrics connection timed out", "timeout_ms=%llu answered=%d",
           (unsigned long long)c->m->srv->cfg.limits.metrics_timeout_ms, c->done);
  mclose(c);
}

static const char *reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

static void write_resp(mconn *c, size_t n) {
  uv_buf_t b = uv_buf_init(c->resp, (unsigned)n);
  c->w.data = c;
  if (uv_write(&c->w, (uv_stream_t *)&c->h, &b, 1, on_written) < 0) mclose(c);
}

void cd_http_respond(mconn *c, int code, const char *ctype, const char *extra, const void *body, size_t blen) {
  if (c->closing || c->resp) return;
  size_t cap = blen + 512 + (extra ? strlen(extra) : 0);
  c->resp = malloc(cap);
  if (!c->resp) {
    mclose(c);
    return;
  }
  int n = snprintf(c->resp, cap,
                   "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sCache-Control: no-store\r\n"
                   "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n",
                   code, reason(code), ctype, blen, extra ? extra : "");
  if (blen) memcpy(c->resp + n, body, blen);
  write_resp(c, (size_t)n + blen);
}

void cd_http_respond_owned(mconn *c, int code, const char *ctype, char *body, size_t len) {
  cd_http_respond(c, code, ctype, NULL, body, len);
  free(body);
}

static void respond(mconn *c, int code, const char *ctype, const char *body, size_t blen) {
  cd_http_respond(c, code, ctype, code == 405 ? "Allow: GET\r\n" : NULL, body, blen);
}

/* A plain-text answer whose body is a string literal. */
#define respond_text(c, code, literal) respond((c), (code), "text/plain", "" literal, sizeof(literal) - 1)

cd_server *cd_http_server(const mconn *c) { return c->m->srv; }

void cd_http_close(mconn *c) { mclose(c); }

int cd_http_busy(const mconn *c) { return c->writing || c->closing; }

int cd_http_send(mconn *c, char *buf, size_t len) {
  if (c->writing || c->closing || !c->streaming) {
    free(buf);
    return -1;
  }
  c->writing = 1;
  c->resp = buf;
  write_resp(c, len);
  return 0;
}

static void on_discard_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b) {
  (void)sz;
  mconn *c = h->data;
  b->base = c->req;
  b->len = REQ_MAX - 1;
}

static void on_discard(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
  (void)b;
  if (n < 0) mclose(st->data);
}

int cd_http_stream_start(mconn *c, void (*on_sent)(void *), void (*on_close)(void *), void *arg) {
  static const char head[] = "HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
                             "X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n: contactd\n\n";
  c->on_sent = on_sent;
  c->on_close = on_close; /* from here on, closing tells the caller */
  c->arg = arg;
  char *buf = malloc(sizeof head);
  if (!buf) {
    mclose(c);
    return -1;
  }
  memcpy(buf, head, sizeof head);
  /* A viewer that stops reading must stall its stream at once: with the
   * kernel's autotuned buffer (up to megabytes) the loop would go on
   * encoding and writing updates nobody reads for seconds. */
  uint64_t sndbuf = c->m->srv->cfg.limits.viewer_send_buffer_bytes;
  int sb = sndbuf > INT_MAX / 2 ? INT_MAX / 2 : (int)sndbuf;
  if (uv_send_buffer_size((uv_handle_t *)&c->h, &sb) != 0)
    CD_DEBUG("event stream: cannot set its send buffer", "viewer_send_buffer_bytes=%llu",
             (unsigned long long)sndbuf);
  uv_timer_stop(&c->deadline);
  c->streaming = 1;
  /* read on only to see the client go; what it sends is dropped */
  uv_read_start((uv_stream_t *)&c->h, on_discard_alloc, on_discard);
  cd_http_send(c, buf, sizeof head - 1);
  return c->closing ? -1 : 0;
}

/* Parse "METHOD SP PATH SP HTTP/1.x" in place; 0, or -1 when malformed. */
static int parse_request_line(char *req, cd_http_req *out) {
  char *eol = strchr(req, '\n');
  if (!eol) return -1;
  if (eol > req && eol[-1] == '\r') eol--;
  *eol = 0;
  char *sp1 = strchr(req, ' ');
  if (!sp1 || sp1 == req) return -1;
  *sp1 = 0;
  char *path = sp1 + 1;
  char *sp2 = strchr(path, ' ');
  if (!sp2 || path[0] != '/' || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) return -1;
  *sp2 = 0;
  char *qm = strpbrk(path, "?#");
  if (qm) *qm = 0;
  for (const char *p = req; *p; p++)
    if (*p < 'A' || *p > 'Z') return -1;
  out->method = req;
  out->path = path;
  return 0;
}

static void handle(mconn *c) {
  c->done = 1;
  uv_read_stop((uv_stream_t *)&c->h);
  cd_server *s = c->m->srv;
  cd_http_req rq;
  if (parse_request_line(c->req, &rq)) {
    respond_text(c, 400, "bad request\n");
    return;
  }
  const char *path = rq.path;
  int ours = strcmp(path, "/metrics") == 0 || strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0;
  if (!ours) {
    if (!s->viewers || !cd_viewer_route(s->viewers, c, &rq)) respond_text(c, 404, "not found\n");
    return;
  }
  if (strcmp(rq.method, "GET") != 0) {
    respond_text(c, 405, "method not allowed\n");
    return;
  }
  if (strcmp(path, "/metrics") == 0) {
    size_t n = 0;
    int over = 0;
    char *buf = cd_metrics_render(s, &n, &over);
    if (buf) {
      cd_http_respond_owned(c, 200, "text/plain; version=0.0.4", buf, n);
    } else if (over) {
      CD_WARN("metrics exposition over max_metrics_bytes", "max_metrics_bytes=%llu",
              (unsigned long long)s->cfg.limits.max_metrics_bytes);
      respond_text(c, 500, "the metrics exposition is over max_metrics_bytes\n");
    } else {
      mclose(c); /* out of memory */
    }
  } else if (strcmp(path, "/healthz") == 0) {
    respond_text(c, 200, "ok\n");
  } else if (s->draining) {
    respond_text(c, 503, "shutting down\n");
  } else {
    respond_text(c, 200, "ready\n");
  }
}

static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b) {
  (void)sz;
  mconn *c = h->data;
  if (c->draining) c->len = 0;
  b->base = c->req + c->len;
  b->len = REQ_MAX - 1 - c->len;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
  (void)b;
  mconn *c = st->data;
  if (c->closing || (c->done && !c->draining)) return;
  if (n < 0) {
    mclose(c);
    return;
  }
  if (c->draining) return; /* the rest of an oversize request */
  if (memchr(c->req + c->len, 0, (size_t)n)) { /* no HTTP request holds a NUL byte */
    c->done = 1;
    c->draining = 1;
    c->len = 0;
    respond_text(c, 400, "bad request\n");
    return;
  }
  c->len += (size_t)n;
  c->req[c->len] = 0;
  if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
    handle(c);
  } else if (c->len >= REQ_MAX - 1) {
    /* 431 whether the request line or the headers are too long */
    c->done = 1;
    c->draining = 1;
    c->len = 0;
    respond_text(c, 431, "request too large\n");
  }
}

static void on_listener_closed(uv_handle_t *h) {
  cd_http *m = h->data;
  m->listener_closed = 1;
  free_server(m); /* once the connections closed by cd_http_stop are gone */
}

static void on_conn(uv_stream_t *ls, int status) {
  cd_http *m = ls->data;
  if (status < 0) return;
  const cd_limits *l = &m->srv->cfg.limits;
  mconn *c = calloc(1, sizeof *c);
  if (!c) {
    CD_WARN("metrics connection refused: out of memory for its state", NULL);
    cd_spare_take(&m->spare);
    return;
  }
  c->m = m;
  uv_tcp_init(ls->loop, &c->h);
  c->h.data = c;
  uv_timer_init(ls->loop, &c->deadline);
  c->deadline.data = c;
  c->handles_open = 2;
  m->nconns++;
  m->nopen++;
  c->next = m->conns;
  if (m->conns) m->conns->prev = c;
  m->conns = c;
  /* Over the cap the connection is accepted (to take it off the backlog)
   * and closed at once: a scraper retries, a flood holds nothing. */
  int over = l->max_metrics_connections && (uint64_t)m->nopen > l->max_metrics_connections;
  if (uv_accept(ls, (uv_stream_t *)&c->h) != 0 || m->stopping || over) {
    if (over)
      CD_WARN("metrics connection refused", "open=%d max_metrics_connections=%llu", m->nopen - 1,
              (unsigned long long)l->max_metrics_connections);
    mclose(c);
    return;
  }
  if (l->metrics_timeout_ms) uv_timer_start(&c->deadline, on_deadline, l->metrics_timeout_ms, 0);
  uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read);
}

cd_http *cd_http_start(cd_server *s, const char *host, int port, int *bound) {
  cd_http *m = calloc(1, sizeof *m);
  if (!m) {
    CD_ERROR("out of memory starting the metrics listener", NULL);
    return NULL;
  }
  m->srv = s;
  struct sockaddr_storage addr;
  int rc = strchr(host, ':') ? uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr)
                             : uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
  uv_tcp_init(s->loop, &m->listener);
  m->listener.data = m;
  cd_spare_init(&m->spare, (uv_stream_t *)&m->listener, 1);
  m->spare.on_idle = on_spare_idle;
  m->spare.arg = m;
  if (!rc) rc = uv_tcp_bind(&m->listener, (struct sockaddr *)&addr, 0);
  if (!rc) rc = uv_listen((uv_stream_t *)&m->listener, 64, on_conn);
  if (rc) {
    CD_ERROR("cannot listen for metrics", "host=%s port=%d error=\"%s\"", host, port, uv_strerror(rc));
    m->stopping = 1;
    uv_close((uv_handle_t *)&m->listener, on_listener_closed);
    return NULL;
  }
  struct sockaddr_storage ss;
  int len = sizeof ss;
  uv_tcp_getsockname(&m->listener, (struct sockaddr *)&ss, &len);
  *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                          : ((struct sockaddr_in *)&ss)->sin_port);
  return m;
}


void cd_http_stop(cd_http *m) {
  if (!m) return;
  m->stopping = 1;
  /* An open connection would keep the loop (and so the process) alive after
   * shutdown until its deadline: close them all now. */
  while (m->conns) mclose(m->conns);
  uv_close((uv_handle_t *)&m->listener, on_listener_closed);
}
