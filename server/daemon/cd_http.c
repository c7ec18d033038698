/* cd_http.c — the HTTP port's server: listener, the request-head deadline
 * and the pool of connections still sending their head, the cap on
 * connections being answered, TLS (cd_tls.h, the protocol port's
 * certificate), request parsing, who a request is (cd_webauth.h),
 * responses and event streams (cd_http.h); the Prometheus endpoint (its
 * text: cd_metrics.c) and health probes; every other path goes to the
 * viewer (cd_viewer.c).
 * Two-way with cd_viewer.c: this file is the HTTP
 * server, which routes a request to the viewer (cd_viewer_route), and the
 * viewer answers through the server's response functions (cd_http.h). */
#include "cd_http.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cd_log.h"
#include "cd_metrics.h"
#include "cd_server.h"
#include "cd_tls.h"
#include "cd_viewer.h"
#include "cd_webauth.h"

#define REQ_MAX 4096
#define RBUF_BYTES 16384

typedef struct cd_http_conn mconn;

struct cd_http {
  cd_server *srv;
  uv_tcp_t listener;
  cd_spare spare; /* takes the connections we have no memory for */
  int nconns;   /* connections whose handles are not yet closed */
  int nopen;    /* of those, the ones not closing */
  int nbusy;    /* of those, the ones past their head being answered (not probes): what
                   max_metrics_connections caps */
  int nheads;   /* of those, the ones still reading their head: what max_http_heads caps */
  int nheld;    /* of those, the ones whose 401 waits auth_fail_delay_ms (at most max_http_heads) */
  mconn *heads, *heads_tail; /* those, oldest first: the oldest goes when one more arrives */
  int stopping;
  int listener_closed;
  mconn *conns; /* open (not yet closing) connections, for cd_http_stop */
  cd_webauth *auth; /* viewer sessions (principals set) */
  char rbuf[RBUF_BYTES]; /* every read lands here first (one loop: used by one callback at a time) */
};

/* One HTTP connection. Its timer is a deadline from accept, never reset by
 * traffic: http_head_timeout_ms for its TLS handshake and request head,
 * metrics_timeout_ms in all (an event stream: none once its request is
 * read). A client that dribbles a byte at a time gains nothing. */
struct cd_http_conn {
  uv_tcp_t h;
  uv_timer_t deadline;
  int handles_open; /* h and deadline: closed asynchronously */
  int closing;
  cd_http *m;
  mconn *prev, *next;   /* m->conns */
  mconn *hprev, *hnext; /* m->heads while in_heads */
  int in_heads;
  uint64_t accepted_ms;
  char host[64];        /* the peer's address, without its port */
  cd_tls *tls;          /* NULL: plaintext */
  int tls_decided;      /* the first bytes said TLS or not */
  char req[REQ_MAX];
  size_t len;
  int done;
  int counted;          /* counted in m->nbusy */
  cd_principal who;     /* the request's principal (principals set), a copy */
  const char *held_why; /* a failed authentication's reason, answered after auth_fail_delay_ms */
  int held;             /* counted in m->nheld (its 401 waits; not in m->nbusy) */
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
  if (m->stopping && m->listener_closed && m->nconns == 0 && !m->spare.busy) {
    cd_webauth_free(m->auth);
    free(m);
  }
}

static void on_spare_idle(void *arg) { free_server(arg); }

static void mfree(mconn *c) {
  cd_http *m = c->m;
  cd_tls_free(c->tls);
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

static void heads_remove(mconn *c) {
  cd_http *m = c->m;
  if (!c->in_heads) return;
  c->in_heads = 0;
  m->nheads--;
  if (c->hprev) c->hprev->hnext = c->hnext;
  else m->heads = c->hnext;
  if (c->hnext) c->hnext->hprev = c->hprev;
  else m->heads_tail = c->hprev;
  c->hprev = c->hnext = NULL;
}

static void heads_append(mconn *c) {
  cd_http *m = c->m;
  c->in_heads = 1;
  m->nheads++;
  c->hprev = m->heads_tail;
  if (m->heads_tail) m->heads_tail->hnext = c;
  else m->heads = c;
  m->heads_tail = c;
}

/* Close c once (a pending write is cancelled: on_written then sees closing). */
static void mclose(mconn *c) {
  if (c->closing) return;
  c->closing = 1;
  cd_http *m = c->m;
  m->nopen--;
  heads_remove(c);
  if (c->counted) m->nbusy--;
  c->counted = 0;
  if (c->held) m->nheld--;
  c->held = 0;
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

static uint64_t now_ms(void) { return cd_stats_now_ns() / 1000000; }

/* One refusal by the HTTP port's limits: counted, logged once per window. */
static void refused(cd_http *m, const char *why) {
  const cd_limits *l = &m->srv->cfg.limits;
  uint64_t n = cd_security_refused(&m->srv->sec, CD_REFUSED_HTTP, now_ms(), l->refusal_log_window_ms);
  if (n)
    CD_WARN("HTTP connections refused", "count=%llu last_reason=\"%s\" max_http_heads=%llu "
            "max_metrics_connections=%llu window_ms=%llu",
            (unsigned long long)n, why, (unsigned long long)l->max_http_heads,
            (unsigned long long)l->max_metrics_connections, (unsigned long long)l->refusal_log_window_ms);
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
  const cd_limits *l = &c->m->srv->cfg.limits;
  if (!c->done) {
    c->m->srv->stats.http_head_timeouts++;
    CD_DEBUG("HTTP connection closed: no complete request head in time", "peer=%s http_head_timeout_ms=%llu",
             c->host, (unsigned long long)l->http_head_timeout_ms);
  } else {
    CD_DEBUG("HTTP connection timed out", "peer=%s metrics_timeout_ms=%llu", c->host,
             (unsigned long long)l->metrics_timeout_ms);
  }
  mclose(c);
}

static const char *reason(int code) {
  switch (code) {
    case 200: return "OK";
    case 303: return "See Other";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

/* ---- writing: plaintext, or through the connection's TLS ------------------- */

typedef struct rawwrite {
  uv_write_t w;
  char data[];
} rawwrite;

static void on_raw_written(uv_write_t *w, int status) {
  (void)status; /* a failure shows on the next read or write */
  free(w);
}

/* Ciphertext the TLS has for the peer (handshake messages, alerts). */
static void flush_tls(mconn *c) {
  size_t n = c->tls ? cd_tls_out_pending(c->tls) : 0;
  if (!n || c->closing) return;
  rawwrite *r = malloc(sizeof *r + n);
  if (!r) {
    mclose(c);
    return;
  }
  uv_buf_t b = uv_buf_init(r->data, (unsigned)cd_tls_take(c->tls, r->data, n));
  if (uv_write(&r->w, (uv_stream_t *)&c->h, &b, 1, on_raw_written) < 0) {
    free(r);
    mclose(c);
  }
}

/* Write c->resp (n bytes): encrypted first on a TLS connection, which a
 * one-off answer then closes (close_notify). */
static void write_resp(mconn *c, size_t n) {
  if (c->tls) {
    if (cd_tls_write(c->tls, c->resp, n) != CD_TLS_OK) {
      mclose(c);
      return;
    }
    if (!c->streaming) cd_tls_shutdown(c->tls);
    size_t k = cd_tls_out_pending(c->tls);
    char *ct = malloc(k ? k : 1);
    if (!ct) {
      mclose(c);
      return;
    }
    n = cd_tls_take(c->tls, ct, k);
    free(c->resp);
    c->resp = ct;
  }
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

static void on_alloc(uv_handle_t *h, size_t sz, uv_buf_t *b) {
  (void)sz;
  mconn *c = h->data;
  b->base = c->m->rbuf;
  b->len = sizeof c->m->rbuf;
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b);

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
  uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read);
  cd_http_send(c, buf, sizeof head - 1);
  return c->closing ? -1 : 0;
}

/* ---- the request ------------------------------------------------------------- */

/* Parse "METHOD SP PATH SP HTTP/1.x" in place; 0, or -1 when malformed.
 * *query: the query string (after '?'), or NULL; *headers: the lines
 * after the request line. */
static int parse_request_line(char *req, cd_http_req *out, char **query, char **headers) {
  char *eol = strchr(req, '\n');
  if (!eol) return -1;
  *headers = eol + 1;
  if (eol > req && eol[-1] == '\r') eol--;
  *eol = 0;
  char *sp1 = strchr(req, ' ');
  if (!sp1 || sp1 == req) return -1;
  *sp1 = 0;
  char *path = sp1 + 1;
  char *sp2 = strchr(path, ' ');
  if (!sp2 || path[0] != '/' || strncmp(sp2 + 1, "HTTP/1.", 7) != 0) return -1;
  *sp2 = 0;
  char *hash = strchr(path, '#');
  if (hash) *hash = 0;
  char *qm = strchr(path, '?');
  *query = qm ? qm + 1 : NULL;
  if (qm) *qm = 0;
  for (const char *p = req; *p; p++)
    if (*p < 'A' || *p > 'Z') return -1;
  out->method = req;
  out->path = path;
  out->principal = NULL;
  return 0;
}

static void serve_metrics(mconn *c, const char *headers) {
  cd_server *s = c->m->srv;
  size_t tl = 0;
  const char *tok = cd_webauth_bearer(headers, &tl);
  if (!cd_security_metrics_token_ok(&s->sec, tok, tl)) {
    s->stats.http_unauthorized++;
    cd_http_respond(c, 401, "text/plain", "WWW-Authenticate: Bearer realm=\"contactd metrics\"\r\n",
                    "/metrics needs its bearer token (metrics_token_file)\n",
                    sizeof "/metrics needs its bearer token (metrics_token_file)\n" - 1);
    return;
  }
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
}

/* 401: no valid token or session (why names what was wrong). */
static void unauthorized(mconn *c, const char *why) {
  char msg[256];
  int k = snprintf(msg, sizeof msg,
                   "%s: this port needs a principal's token: send \"Authorization: Bearer <token>\", or open "
                   "/?token=<token> once in a browser\n",
                   why);
  cd_http_respond(c, 401, "text/plain", "WWW-Authenticate: Bearer realm=\"contactd\"\r\n", msg, (size_t)k);
}

static void on_auth_delay(uv_timer_t *t) {
  mconn *c = t->data;
  c->m->nheld--;
  c->held = 0;
  const cd_limits *l = &c->m->srv->cfg.limits;
  /* the rest of the connection's lifetime, as head_complete set it */
  uint64_t spent = uv_now(c->h.loop) - c->accepted_ms;
  if (l->metrics_timeout_ms)
    uv_timer_start(&c->deadline, on_deadline, l->metrics_timeout_ms > spent ? l->metrics_timeout_ms - spent : 1, 0);
  unauthorized(c, c->held_why);
}

/* With principals set: who the request is (1: go on, c->who set), or it
 * is answered here (0): 401 without a valid token or session (after
 * auth_fail_delay_ms once its address has failed often), 429 while its
 * address is locked out, 303 to the same path without ?token= once a
 * token was exchanged for a session cookie. */
static int authenticate(mconn *c, const cd_http_req *rq, const char *query, const char *headers) {
  cd_server *s = c->m->srv;
  cd_webauth_in in = {headers, query, c->host, c->tls != NULL, now_ms()};
  char cookie[256], extra[REQ_MAX + 320];
  int fresh = 0;
  const char *why = "";
  uint64_t wait = 0;
  cd_webauth_result r =
      cd_webauth_check(c->m->auth, &s->sec, &in, &c->who, cookie, sizeof cookie, &fresh, &why, &wait);
  if (r == CD_WEBAUTH_OK && !fresh) return 1;
  if (r == CD_WEBAUTH_OK) {
    CD_INFO("viewer session opened", "peer=%s principal=%s tenant=%s secure=%d", c->host, c->who.name,
            c->who.tenant, c->tls != NULL);
    snprintf(extra, sizeof extra, "Location: %s\r\n%s", rq->path, cookie);
    cd_http_respond(c, 303, "text/plain", extra, "signed in\n", sizeof "signed in\n" - 1);
  } else if (r == CD_WEBAUTH_LOCKED) {
    const cd_limits *l = &s->cfg.limits;
    uint64_t n = cd_security_refused(&s->sec, CD_REFUSED_LOCKED_OUT, in.now_ms, l->refusal_log_window_ms);
    if (n) CD_WARN("authentications refused: address locked out", "address=%s refused=%llu port=http", c->host,
                   (unsigned long long)n);
    CD_HTTP_RESPOND_TEXT(c, 429, NULL, "too many failed authentications from this address: try again later\n");
  } else {
    s->stats.http_unauthorized++;
    CD_DEBUG("HTTP request refused", "peer=%s path=%s reason=\"%s\"", c->host, rq->path, why);
    /* The deadline timer holds the answer, then the lifetime again. A
     * held answer frees its max_metrics_connections slot, so that
     * guessers cannot keep the viewer busy; at most max_http_heads are
     * held at once (past that, failures are answered at once, and the
     * lock-out alone bounds the guesses). */
    if (wait && (uint64_t)c->m->nheld < s->cfg.limits.max_http_heads) {
      c->held_why = why;
      c->held = 1;
      c->m->nheld++;
      if (c->counted) c->m->nbusy--;
      c->counted = 0;
      uv_timer_start(&c->deadline, on_auth_delay, wait, 0);
    } else {
      unauthorized(c, why);
    }
  }
  return 0;
}

static void handle(mconn *c) {
  c->done = 1;
  uv_read_stop((uv_stream_t *)&c->h);
  cd_http *m = c->m;
  cd_server *s = m->srv;
  cd_http_req rq;
  char *query = NULL, *headers = NULL;
  if (parse_request_line(c->req, &rq, &query, &headers)) {
    respond_text(c, 400, "bad request\n");
    return;
  }
  const char *path = rq.path;
  /* Probes are answered whatever else holds the port: a few bytes written
   * at once, counted against nothing. */
  if (strcmp(path, "/healthz") == 0 || strcmp(path, "/readyz") == 0) {
    if (strcmp(rq.method, "GET") != 0) respond_text(c, 405, "method not allowed\n");
    else if (strcmp(path, "/healthz") == 0) respond_text(c, 200, "ok\n");
    else if (s->draining) respond_text(c, 503, "shutting down\n");
    else respond_text(c, 200, "ready\n");
    return;
  }
  uint64_t cap = s->cfg.limits.max_metrics_connections;
  if (cap && (uint64_t)m->nbusy >= cap) {
    refused(m, "max_metrics_connections");
    CD_HTTP_RESPOND_TEXT(c, 503, "Retry-After: 1\r\n", "the HTTP port is busy (max_metrics_connections): retry\n");
    return;
  }
  c->counted = 1;
  m->nbusy++;
  if (strcmp(path, "/metrics") == 0) {
    if (strcmp(rq.method, "GET") != 0) respond_text(c, 405, "method not allowed\n");
    else serve_metrics(c, headers);
    return;
  }
  if (cd_security_auth_on(&s->sec)) {
    if (!authenticate(c, &rq, query, headers)) return;
    rq.principal = &c->who;
  }
  if (!s->viewers || !cd_viewer_route(s->viewers, c, &rq)) respond_text(c, 404, "not found\n");
}

/* The head is complete: out of the head pool, under the connection's
 * lifetime only, answered. */
static void head_complete(mconn *c) {
  const cd_limits *l = &c->m->srv->cfg.limits;
  heads_remove(c);
  if (l->metrics_timeout_ms) {
    uint64_t spent = uv_now(c->h.loop) - c->accepted_ms;
    uv_timer_start(&c->deadline, on_deadline, l->metrics_timeout_ms > spent ? l->metrics_timeout_ms - spent : 1, 0);
  } else {
    uv_timer_stop(&c->deadline);
  }
  handle(c);
}

/* k plaintext bytes were appended at c->req + c->len. */
static void took(mconn *c, size_t k) {
  if (memchr(c->req + c->len, 0, k)) { /* no HTTP request holds a NUL byte */
    c->done = 1;
    c->draining = 1;
    c->len = 0;
    respond_text(c, 400, "bad request\n");
    return;
  }
  c->len += k;
  c->req[c->len] = 0;
  if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n")) {
    head_complete(c);
  } else if (c->len >= REQ_MAX - 1) {
    /* 431 whether the request line or the headers are too long */
    c->done = 1;
    c->draining = 1;
    c->len = 0;
    respond_text(c, 431, "request too large\n");
  }
}

/* The first bytes: a TLS ClientHello, or plaintext. With a certificate set
 * and tls_required, plaintext is answered (in plaintext) that this port
 * speaks HTTPS. 0: go on; -1: answered or closed. */
static int decide_tls(mconn *c, const uint8_t *p, size_t n) {
  cd_server *s = c->m->srv;
  c->tls_decided = 1;
  cd_tls_ctx *ctx = cd_security_tls(&s->sec);
  if (!ctx) return 0;
  int hello = n >= 3 ? cd_tls_looks_like_hello(p, n) : p[0] == 0x16;
  if (hello) {
    c->tls = cd_tls_new(ctx);
    cd_tls_ctx_unref(ctx);
    if (!c->tls) {
      mclose(c);
      return -1;
    }
    return 0;
  }
  cd_tls_ctx_unref(ctx);
  if (!s->sec.tls_required) return 0;
  s->stats.http_tls_failures++;
  CD_DEBUG("HTTP connection refused", "peer=%s reason=\"not TLS (a plaintext client on a TLS port)\"", c->host);
  /* it stays in the head pool while its answer drains: one more of them
   * cannot hold the port longer than a slow head could */
  c->done = 1;
  c->draining = 1;
  respond_text(c, 400, "this port speaks HTTPS (TLS is on): use https://\n");
  return -1;
}

/* Ciphertext from the socket: the handshake, then plaintext into req. */
static void tls_input(mconn *c, const char *p, size_t n) {
  cd_server *s = c->m->srv;
  int was_done = cd_tls_handshake_done(c->tls);
  cd_tls_status st = cd_tls_feed(c->tls, p, n);
  flush_tls(c);
  if (st == CD_TLS_FAILED) {
    s->stats.http_tls_failures++;
    CD_DEBUG("HTTP connection refused", "peer=%s reason=\"%s\"", c->host, cd_tls_why(c->tls));
    mclose(c);
    return;
  }
  if (!was_done && cd_tls_handshake_done(c->tls)) s->stats.http_tls_handshakes++;
  size_t k;
  while (!c->closing && !c->done && c->len < REQ_MAX - 1 &&
         (k = cd_tls_read(c->tls, c->req + c->len, REQ_MAX - 1 - c->len)) > 0)
    took(c, k);
  if (!c->closing && !c->done && cd_tls_failed(c->tls)) mclose(c);
}

static void on_read(uv_stream_t *st, ssize_t n, const uv_buf_t *b) {
  mconn *c = st->data;
  if (c->closing) return;
  if (n < 0) {
    mclose(c);
    return;
  }
  /* an event stream's client, or the rest of an oversize request: dropped */
  if (n == 0 || c->streaming || c->draining || c->done) return;
  if (!c->tls_decided && decide_tls(c, (const uint8_t *)b->base, (size_t)n)) return;
  if (c->tls) {
    tls_input(c, b->base, (size_t)n);
    return;
  }
  size_t room = REQ_MAX - 1 - c->len, k = (size_t)n < room ? (size_t)n : room;
  memcpy(c->req + c->len, b->base, k);
  took(c, k);
}

/* ---- the listener ------------------------------------------------------------ */

static void on_listener_closed(uv_handle_t *h) {
  cd_http *m = h->data;
  m->listener_closed = 1;
  free_server(m); /* once the connections closed by cd_http_stop are gone */
}

static void peer_host(mconn *c) {
  struct sockaddr_storage ss;
  int len = sizeof ss;
  snprintf(c->host, sizeof c->host, "?");
  if (uv_tcp_getpeername(&c->h, (struct sockaddr *)&ss, &len) != 0) return;
  if (ss.ss_family == AF_INET6) uv_ip6_name((struct sockaddr_in6 *)&ss, c->host, sizeof c->host);
  else uv_ip4_name((struct sockaddr_in *)&ss, c->host, sizeof c->host);
}

/* Read what c's socket holds now, through on_read: libuv accepts a burst
 * of connections in one turn, before it reads any of them, so a probe that
 * sent its request at once may be the oldest head when the burst fills the
 * pool. 1 when c is no longer a head (its request was complete: answered,
 * or closed). */
static int read_now(mconn *c) {
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&c->h, &fd) != 0) return 0;
  ssize_t n = recv(fd, c->m->rbuf, sizeof c->m->rbuf, MSG_DONTWAIT);
  if (n <= 0) return 0; /* nothing yet; an end or an error is read by libuv as usual */
  uv_buf_t b = uv_buf_init(c->m->rbuf, (unsigned)n);
  on_read((uv_stream_t *)&c->h, n, &b);
  return !c->in_heads;
}

static void on_conn(uv_stream_t *ls, int status) {
  cd_http *m = ls->data;
  if (status < 0) return;
  const cd_limits *l = &m->srv->cfg.limits;
  mconn *c = calloc(1, sizeof *c);
  if (!c) {
    CD_WARN("HTTP connection refused: out of memory for its state", NULL);
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
  if (uv_accept(ls, (uv_stream_t *)&c->h) != 0 || m->stopping) {
    mclose(c);
    return;
  }
  peer_host(c);
  /* The head pool is full: the connection that has taken longest over its
   * head goes, never the new one, so a probe that sends its request at
   * once is read before a flood of slow heads can push it out; what the
   * oldest has sent is read first, in case its head is complete. */
  while ((uint64_t)m->nheads >= l->max_http_heads && m->heads) {
    if (read_now(m->heads)) continue;
    refused(m, "max_http_heads: the oldest unfinished request head was closed");
    mclose(m->heads);
  }
  heads_append(c);
  c->accepted_ms = uv_now(ls->loop);
  uint64_t first = l->http_head_timeout_ms;
  if (l->metrics_timeout_ms && l->metrics_timeout_ms < first) first = l->metrics_timeout_ms;
  uv_timer_start(&c->deadline, on_deadline, first, 0);
  uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read);
}

cd_http *cd_http_start(cd_server *s, const char *host, int port, int *bound) {
  cd_http *m = calloc(1, sizeof *m);
  if (m) m->auth = cd_webauth_new(s->cfg.limits.viewer_sessions, s->cfg.limits.viewer_session_ttl_ms);
  if (!m || !m->auth) {
    free(m);
    CD_ERROR("out of memory starting the HTTP port", NULL);
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
  /* a backlog deep enough that a burst of connections waits for accept
   * rather than being dropped by the kernel (the head pool sorts them) */
  if (!rc) rc = uv_listen((uv_stream_t *)&m->listener, CD_LISTEN_BACKLOG, on_conn);
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
