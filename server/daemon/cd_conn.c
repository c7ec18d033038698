/* cd_conn.c — a connection's lifecycle: accept, reading from the socket,
 * the idle and linger timers, closing and freeing (input: cd_input.c,
 * output: cd_output.c).
 *
 * States (cd_conn_state) and their transitions:
 *
 *   OPEN ──EOF read──> PEER_DONE ──everything answered and written──> CLOSED
 *     │                   │
 *     └──cd__input_fatal───┴──> FAILED ──replies written──> LINGERING ──> CLOSED
 *                                 │                  (peer's EOF or linger_ms)
 *                                 └──replies written, no linger──> CLOSED
 *
 *  - OPEN: reading, answering. A shutdown (the server draining) stops the
 *    reading and closes once nothing is in flight or queued.
 *  - PEER_DONE: the peer half-closed. No more input; what is in flight is
 *    answered and written, then the connection closes.
 *  - FAILED: the input cannot go on (framing lost, a frame over
 *    max_frame_bytes, a slow sender, a refused connection): the error reply
 *    is queued behind the earlier replies, reading stops. Once all is
 *    written it lingers, or closes at once when CD_CF_NO_LINGER is set (the
 *    peer had half-closed, or the connection was refused), when the server
 *    is draining or when linger_ms is 0.
 *  - LINGERING: the write side is shut (FIN after the error); input is read
 *    and dropped until the peer closes or linger_ms passes.
 *  - CLOSED: cd_conn_close ran (from any state: an error, the idle timer, a
 *    slow reader, output_memory_bytes, the shutdown's grace period). Its
 *    handles are closing, results for it are dropped; the structure goes
 *    with its last reference.
 * The flags (CD_CF_*) say what it is doing within its state: reading,
 * decoding off the loop, holding admitted request memory, and so on.
 *
 * Two-way with cd_input.c: the socket's bytes go to the
 * input, and an input that cannot go on fails the connection or stops its
 * reading. Two-way with cd_outmem.c: cutting a connection is
 * closing it, and a closing connection returns its queued bytes there.
 * Two-way with cd_output.c: a TLS handshake's records go out through the
 * output's write queue, and a write that fails closes the connection. */
#include "cd__conn.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cd_log.h"
#include "cd_loop.h"
#include "cd_outmem.h"
#include "cd_server.h"
#include "cd_tls.h"

#define READ_CHUNK 65536

static const cd_limits *lim(const cd_conn *c) { return &c->srv->cfg.limits; }

/* ---- lifetime ----------------------------------------------------------- */

/* Atomic: a geometry build's worker holds references to the connections
 * waiting for it, and its loop drops them, whichever loops those are. The
 * last reference goes after the connection's loop is done with it (its
 * handles closed), so freeing it on another thread touches no loop state. */
void cd_conn_ref(cd_conn *c) { atomic_fetch_add_explicit(&c->refs, 1, memory_order_relaxed); }

static void conn_free(cd_conn *c) {
  /* every job holds a reference (through its request or stream) until its done() */
  assert(!c->jobs.queued);
  for (uint64_t i = 0; i < c->ring_cap; i++) free(c->ring[i].data);
  free(c->ring);
  free(c->line);
  free(c->held);
  free(c->hs_buf);
  free(c->session.geoms);
  cd_frame_decoder_free(&c->dec);
  cd_budget_destroy(&c->scratch);
  cd_tls_free(c->tls);
  cd_tls_ctx_unref(c->tls_ctx);
  free(c);
}

void cd_conn_unref(cd_conn *c) {
  if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) conn_free(c);
}

/* ---- what the protocol sees (cd_proto.h) ----------------------------------- */

cd_server *cd_conn_server(const cd_conn *c) { return c->srv; }
cd_loop *cd_conn_loop(const cd_conn *c) { return c->loop; }
uint64_t cd_conn_id(const cd_conn *c) { return c->id; }
const char *cd_conn_peer(const cd_conn *c) { return c->peer; }
int cd_conn_is_proto(const cd_conn *c) { return c->wire == CD_WIRE_PROTO; }
const atomic_int *cd_conn_cancel_flag(const cd_conn *c) { return &c->cancelled; }
cd_jobq *cd_conn_jobs(cd_conn *c) { return &c->jobs; }
cd_session *cd_conn_session(cd_conn *c) { return &c->session; }
int cd_conn_gone(const cd_conn *c) { return c->state == CD_CONN_CLOSED; }
const char *cd_conn_tls_subject(const cd_conn *c) {
  return c->tls && cd_tls_handshake_done(c->tls) ? cd_tls_peer_subject(c->tls) : "";
}
int cd_conn_peer_cred(const cd_conn *c, uid_t *uid, gid_t *gid) {
  if (!c->has_cred) return -1;
  *uid = c->uid;
  *gid = c->gid;
  return 0;
}
const char *cd_conn_host(const cd_conn *c) { return c->host; }

static void on_idle(uv_timer_t *t);

void cd_conn_greet(cd_conn *c) {
  if (c->greeted || c->state == CD_CONN_CLOSED) return;
  c->greeted = 1;
  uint64_t idle = lim(c)->idle_timeout_ms;
  if (idle) uv_timer_start(&c->idle, on_idle, idle, idle);
  else uv_timer_stop(&c->idle);
}

/* The connection is gone from its loop: unlinked and uncounted. */
static void conn_gone(cd_conn *c) {
  cd_loop *l = c->loop;
  cd_server *s = c->srv;
  pthread_mutex_lock(&l->conns_mu);
  if (c->prev) c->prev->next = c->next;
  else if (l->conns == c) l->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  pthread_mutex_unlock(&l->conns_mu);
  s->stats.connections--;
  if (c->flags & CD_CF_SEATED) atomic_fetch_sub(&s->seated, 1);
  l->connections--;
  l->load--;
  s->conn_ended(s, 1);
}

static void on_handle_closed(uv_handle_t *h) {
  cd_conn *c = h->data;
  if (--c->handles_open == 0) {
    /* a failed accept never linked nor counted the connection */
    if (c->flags & CD_CF_LINKED) {
      conn_gone(c);
    } else {
      c->loop->load--;
      c->srv->conn_ended(c->srv, 0);
    }
    cd_conn_unref(c);
  }
}

static void hs_unqueue(cd_conn *c);

void cd_conn_close(cd_conn *c, const char *reason) {
  if (c->state == CD_CONN_CLOSED) return;
  c->state = CD_CONN_CLOSED;
  hs_unqueue(c);
  cd_outmem_closing(c->srv, c); /* its queued replies are cancelled as it closes */
  cd__input_closing(c);          /* its input is dropped: its request memory goes back */
  atomic_store_explicit(&c->cancelled, 1, memory_order_relaxed);
  char q[160];
  CD_INFO("connection closed", "conn=%llu peer=%s requests=%llu reason=%s", (unsigned long long)c->id, c->peer,
          (unsigned long long)c->requests, cd_log_quote(q, sizeof q, reason));
  if (c->counted) cd_addrs_close(c->srv->sec.addrs, c->host);
  /* Session state goes now so the cache can evict. */
  c->srv->proto->closed(c);
  uv_os_fd_t fd = -1;
  uv_fileno((uv_handle_t *)&c->h, &fd);
  cd_loop_fd_lock();
  uv_close((uv_handle_t *)&c->h, on_handle_closed); /* closes the descriptor now */
  if (fd >= 0) cd_loop_fd_closed(fd);
  cd_loop_fd_unlock();
  uv_close((uv_handle_t *)&c->idle, on_handle_closed);
}

/* Lingering close. A connection ended by an error (framing lost, a frame
 * over max_frame_bytes, a slow sender) usually has unread input: the rest
 * of the frame the client is still sending. Closing a TCP socket with
 * unread input sends a reset, and the client's kernel then discards the
 * error reply it has not read yet. So once the replies are written the
 * write side is shut (FIN after the error), and input is read and dropped
 * until the client closes or linger_ms passes; then the connection
 * closes. */
static void on_linger_timeout(uv_timer_t *t) {
  cd_conn *c = t->data;
  cd_conn_close(c, c->fatal_why);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)req;
  (void)status; /* the close that follows reports nothing more */
}

static void linger(cd_conn *c) {
  const cd_limits *l = lim(c);
  c->state = CD_CONN_LINGERING;
  c->shut.data = c;
  if (uv_shutdown(&c->shut, (uv_stream_t *)&c->h, on_shutdown) != 0) {
    cd_conn_close(c, c->fatal_why);
    return;
  }
  uv_timer_stop(&c->idle);
  uv_timer_start(&c->idle, on_linger_timeout, l->linger_ms, 0);
  cd__conn_start_reading(c);
}

void cd__conn_maybe_finish(cd_conn *c) {
  if (c->state >= CD_CONN_LINGERING) return;
  int quiet = cd__conn_inflight(c) == 0 && c->out_bytes == 0 && c->held_len == 0;
  if (c->state == CD_CONN_FAILED) {
    if (c->base_seq != c->next_seq || c->out_bytes != 0) return;
    if ((c->flags & CD_CF_NO_LINGER) || c->srv->draining || !lim(c)->linger_ms) cd_conn_close(c, c->fatal_why);
    else linger(c);
  } else if (c->state == CD_CONN_PEER_DONE && quiet) {
    cd_conn_close(c, "peer closed");
  } else if (c->srv->draining && quiet) {
    cd_conn_close(c, "server shutting down");
  }
}

void cd_conn_drain(cd_conn *c) {
  if (c->state == CD_CONN_LINGERING) { /* its error is out; a shutdown does not wait for the linger */
    cd_conn_close(c, c->fatal_why);
    return;
  }
  cd__conn_stop_reading(c);
  cd__conn_maybe_finish(c);
}

void cd_conn_drain_all(cd_loop *l) {
  for (cd_conn *c = l->conns, *n; c; c = n) {
    n = c->next;
    cd_conn_drain(c);
  }
}

void cd_conn_close_all(cd_loop *l, const char *reason) {
  /* cd_conn_close does not unlink (on_handle_closed does, later), so walk the
   * list with a saved next pointer and close every connection still open. */
  for (cd_conn *c = l->conns, *next; c; c = next) {
    next = c->next;
    cd_conn_close(c, reason);
  }
}

/* The first deadline of a connection: hello_timeout_ms, or idle_timeout_ms
 * when that is shorter (0 = none). */
static uint64_t first_deadline(const cd_limits *l) {
  uint64_t h = l->hello_timeout_ms, i = l->idle_timeout_ms;
  return !h ? i : !i || h < i ? h : i;
}

/* Nothing (or nothing authenticated) since the accept, for hello_timeout_ms
 * or the shorter idle_timeout_ms. */
static void on_hello_deadline(uv_timer_t *t) {
  cd_conn *c = t->data;
  if (c->state == CD_CONN_CLOSED || c->greeted) return;
  if (lim(c)->idle_timeout_ms && lim(c)->idle_timeout_ms < lim(c)->hello_timeout_ms) {
    c->srv->stats.disconnects_idle++;
    cd_conn_close(c, "idle timeout");
    return;
  }
  c->srv->stats.disconnects_hello_timeout++;
  char why[128];
  snprintf(why, sizeof why, "no %s within hello_timeout_ms (%llu ms)",
           cd_security_auth_on(&c->srv->sec) ? "authenticated Hello" : "request",
           (unsigned long long)lim(c)->hello_timeout_ms);
  cd_conn_close(c, why);
}

static void on_idle(uv_timer_t *t) {
  cd_conn *c = t->data;
  if (c->state == CD_CONN_CLOSED) {
  } else if (cd__conn_inflight(c) == 0 && c->out_bytes == 0) {
    c->srv->stats.disconnects_idle++;
    cd_conn_close(c, "idle timeout");
  } else {
    uv_timer_again(t);
  }
}

/* ---- reading ------------------------------------------------------------ */

/* Reads go into the loop's own buffer: libuv reads into it and hands it to
 * on_read at once, and nothing keeps a pointer into it after on_read (held
 * input and bodies sent to the codec thread are copies). One buffer per loop
 * instead of a 64 KiB malloc and free per read: fewer allocator calls on the
 * loop, and no heap churn that grows the resident set with many clients. A
 * read while it is in use (not expected: on_read does not read again) gets
 * its own. Owning loop's thread only. */
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  cd_loop *l = ((cd_conn *)h->data)->loop;
  if (!l->rbuf_busy && (l->rbuf || (l->rbuf = malloc(READ_CHUNK)) != NULL)) {
    l->rbuf_busy = 1;
    buf->base = l->rbuf;
  } else {
    buf->base = malloc(READ_CHUNK);
  }
  buf->len = buf->base ? READ_CHUNK : 0;
}

/* The connection cannot go on and has nothing to answer: close once what
 * is queued (a TLS alert) is written, without lingering. why is logged
 * with the close; it must outlive the call (a literal, or the TLS
 * session's reason). */
static void refuse(cd_conn *c, const char *why) {
  c->fatal_why = why;
  if (c->state < CD_CONN_FAILED) c->state = CD_CONN_FAILED;
  c->flags |= CD_CF_NO_LINGER;
  cd__conn_stop_reading(c);
  cd__conn_maybe_finish(c);
}

/* Ciphertext from the socket: the handshake's progress is answered at once,
 * and what it decrypts goes to the input. */
static void tls_input(cd_conn *c, const uint8_t *p, size_t n) {
  int was_done = cd_tls_handshake_done(c->tls);
  cd_tls_status st = cd_tls_feed(c->tls, p, n);
  cd__output_tls_flush(c);
  if (st == CD_TLS_FAILED) {
    c->srv->stats.disconnects_tls++;
    refuse(c, cd_tls_why(c->tls));
    return;
  }
  if (!was_done && cd_tls_handshake_done(c->tls)) c->srv->stats.tls_handshakes++;
  uint8_t plain[16384];
  size_t k;
  while (c->state < CD_CONN_FAILED && (k = cd_tls_read(c->tls, plain, sizeof plain)) > 0)
    cd__input_process(c, plain, k);
  if (cd_tls_failed(c->tls) && c->state < CD_CONN_FAILED) {
    c->srv->stats.disconnects_tls++;
    refuse(c, cd_tls_why(c->tls));
  }
}

/* ---- tls_handshake_turn_us ---------------------------------------------------
 * A handshake costs its loop the server's key exchange and signature
 * (hundreds of microseconds); a loop whose poll returns hundreds of
 * ClientHellos at once would spend one turn on all of them while its open
 * connections wait. Past the budget, handshake bytes are kept (one read's
 * worth: the connection stops reading meanwhile) and the connection
 * queued; an idle handle (which also keeps the poll from sleeping) takes
 * the queue a budget at a time, and each poll between serves the open
 * connections. */

static void tls_input_timed(cd_conn *c, const uint8_t *p, size_t n) {
  if (cd_tls_handshake_done(c->tls)) {
    tls_input(c, p, n);
    return;
  }
  cd_loop *l = c->loop;
  uint64_t t0 = uv_hrtime();
  tls_input(c, p, n);
  l->hs_spent_ns += uv_hrtime() - t0;
}

static void hs_unqueue(cd_conn *c) {
  if (!c->hs_queued) return;
  cd_loop *l = c->loop;
  cd_conn **pp = &l->hs_head, *prev = NULL;
  while (*pp && *pp != c) prev = *pp, pp = &(*pp)->hs_next;
  if (*pp) *pp = c->hs_next;
  if (l->hs_tail == c) l->hs_tail = prev;
  c->hs_queued = 0;
  c->hs_next = NULL;
}

static void on_hs_idle(uv_idle_t *h) {
  cd_loop *l = h->data;
  uint64_t budget = (uint64_t)l->srv->cfg.limits.tls_handshake_turn_us * 1000;
  l->hs_spent_ns = 0;
  while (l->hs_head && l->hs_spent_ns <= budget) {
    cd_conn *c = l->hs_head;
    hs_unqueue(c);
    uint8_t *b = c->hs_buf;
    size_t n = c->hs_len;
    c->hs_buf = NULL;
    c->hs_len = 0;
    cd_conn_ref(c);
    if (c->state == CD_CONN_OPEN && !c->srv->draining) cd__conn_start_reading(c);
    if (c->state < CD_CONN_FAILED) tls_input_timed(c, b, n);
    cd_conn_unref(c);
    free(b);
  }
  if (!l->hs_head) uv_idle_stop(h);
}

/* Keep the bytes for a later turn (after any kept before); 0, or -1 when
 * there is no memory for them. */
static int hs_defer(cd_conn *c, const uint8_t *p, size_t n) {
  uint8_t *b = realloc(c->hs_buf, c->hs_len + n);
  if (!b) return -1;
  memcpy(b + c->hs_len, p, n);
  c->hs_buf = b;
  c->hs_len += n;
  if (c->hs_queued) return 0;
  cd_loop *l = c->loop;
  if (!l->hs_idle_init) {
    uv_idle_init(l->uv, &l->hs_idle);
    l->hs_idle.data = l;
    l->hs_idle_init = 1;
  }
  c->hs_queued = 1;
  c->hs_next = NULL;
  if (l->hs_tail) l->hs_tail->hs_next = c;
  else l->hs_head = c;
  l->hs_tail = c;
  uv_idle_start(&l->hs_idle, on_hs_idle);
  cd__conn_stop_reading(c);
  return 0;
}

/* TLS bytes: now, or (a handshake's, past the loop's budget) later. */
static void tls_bytes(cd_conn *c, const uint8_t *p, size_t n) {
  uint64_t budget = (uint64_t)lim(c)->tls_handshake_turn_us * 1000;
  int later = c->hs_queued || (budget && !cd_tls_handshake_done(c->tls) && c->loop->hs_spent_ns > budget);
  if (!later) tls_input_timed(c, p, n);
  else if (hs_defer(c, p, n)) cd_conn_close(c, "out of memory for TLS handshake bytes");
}

/* The socket's bytes. The first ones decide TLS: a listener with a
 * context makes a session when TLS is required or the client says
 * ClientHello; a listener without one refuses a ClientHello by name. */
static void conn_input(cd_conn *c, const uint8_t *p, size_t n) {
  if (!c->sniffed) {
    c->sniffed = 1;
    int hello = cd_tls_looks_like_hello(p, n);
    if (c->tls_ctx && (hello || c->srv->sec.tls_required)) {
      if (!(c->tls = cd_tls_new(c->tls_ctx))) {
        cd_conn_close(c, "out of memory for a TLS session");
        return;
      }
    } else if (hello) {
      c->srv->stats.disconnects_tls++;
      refuse(c, c->h.tcp.type == UV_TCP ? "a TLS client on a plaintext port" : "a TLS client on the Unix socket");
      return;
    }
  }
  if (c->tls) tls_bytes(c, p, n);
  else cd__input_process(c, p, n);
}

static void on_read_conn(cd_conn *c, ssize_t nread, const uv_buf_t *buf) {
  if (c->state == CD_CONN_CLOSED) return;
  if (c->state == CD_CONN_LINGERING) { /* dropped; the client's end or linger_ms closes */
    if (nread < 0) cd_conn_close(c, c->fatal_why);
    return;
  }
  if (nread > 0) {
    if (c->greeted && lim(c)->idle_timeout_ms) uv_timer_again(&c->idle); /* the hello deadline stands */
    cd_conn_ref(c);
    conn_input(c, (const uint8_t *)buf->base, (size_t)nread);
    cd_conn_unref(c);
  } else if (nread == UV_EOF) {
    if (c->state == CD_CONN_OPEN) c->state = CD_CONN_PEER_DONE;
    else c->flags |= CD_CF_NO_LINGER; /* failed already: nobody to linger for */
    cd__conn_stop_reading(c);
    cd_conn_ref(c);
    cd__input_eof(c);
    cd__conn_maybe_finish(c);
    cd_conn_unref(c);
  } else if (nread < 0) {
    /* (on_alloc found no memory for the read: libuv reports ENOBUFS) */
    cd_conn_close(c, nread == UV_ENOBUFS ? "out of memory for a read buffer" : uv_strerror((int)nread));
  }
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  cd_conn *c = st->data;
  cd_loop *l = c->loop; /* c may be gone after on_read_conn */
  on_read_conn(c, nread, buf);
  if (buf->base && buf->base == l->rbuf) l->rbuf_busy = 0;
  else free(buf->base);
}

void cd__conn_start_reading(cd_conn *c) {
  if ((c->flags & CD_CF_READING) || c->state == CD_CONN_CLOSED) return;
  if (uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read) == 0) c->flags |= CD_CF_READING;
}

void cd__conn_stop_reading(cd_conn *c) {
  if (!(c->flags & CD_CF_READING)) return;
  uv_read_stop((uv_stream_t *)&c->h);
  c->flags &= ~CD_CF_READING;
}

/* ---- accept ------------------------------------------------------------ */

static void peer_name(cd_conn *c, int is_tcp) {
  if (!is_tcp) {
    snprintf(c->peer, sizeof c->peer, "unix");
    snprintf(c->host, sizeof c->host, "unix");
    struct ucred cred;
    socklen_t clen = sizeof cred;
    uv_os_fd_t fd = -1;
    if (uv_fileno((uv_handle_t *)&c->h, &fd) == 0 && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0) {
      c->has_cred = 1;
      c->uid = cred.uid;
      c->gid = cred.gid;
    }
    return;
  }
  struct sockaddr_storage ss;
  int len = sizeof ss;
  char host[64] = "?";
  int port = 0;
  uv_tcp_nodelay(&c->h.tcp, 1);
  if (uv_tcp_getpeername(&c->h.tcp, (struct sockaddr *)&ss, &len) == 0) {
    if (ss.ss_family == AF_INET6) {
      uv_ip6_name((struct sockaddr_in6 *)&ss, host, sizeof host);
      port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    } else {
      uv_ip4_name((struct sockaddr_in *)&ss, host, sizeof host);
      port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    }
  }
  snprintf(c->peer, sizeof c->peer, "%s:%d", host, port);
  snprintf(c->host, sizeof c->host, "%s", host);
}

static int is_loopback(const char *host) {
  return strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0 || strncmp(host, "::ffff:127.", 11) == 0;
}

/* max_connections_per_address: 0, or -1 when host has as many open as it
 * may (the refusal is counted, and logged once per window). */
static int count_address(cd_conn *c) {
  const cd_limits *l = lim(c);
  cd_security *sec = &c->srv->sec;
  if (l->per_address_exempt_loopback && is_loopback(c->host)) return 0;
  if (cd_addrs_open(sec->addrs, c->host) == 0) {
    c->counted = 1;
    return 0;
  }
  uint64_t n = cd_security_refused(sec, CD_REFUSED_PER_ADDRESS, cd_stats_now_ns() / 1000000, l->refusal_log_window_ms);
  if (n)
    CD_WARN("connections refused: too many from one address", "address=%s refused=%llu max_connections_per_address=%llu",
            c->host, (unsigned long long)n, (unsigned long long)l->max_connections_per_address);
  return -1;
}

/* Open fd as a connection of loop lp, on lp's thread. -1 when there was no
 * memory for it (the caller closes fd); while the server drains, fd is
 * closed here. lp->load counts it since the hand-off, and until it is gone
 * (conn_gone, or conn_ended(s, 0) when it never gets that far), so that a
 * shutdown never sees it neither on its way nor open. */
static int conn_open(cd_loop *lp, uv_os_sock_t fd, int is_tcp) {
  cd_server *s = lp->srv;
  if (atomic_load(&s->draining)) { /* accepted just before the shutdown: not served */
    close(fd);
    lp->load--;
    s->conn_ended(s, 0);
    return 0;
  }
  cd_conn *c = calloc(1, sizeof *c);
  if (!c) return -1;
  c->srv = s;
  c->loop = lp;
  c->id = atomic_fetch_add(&s->next_conn_id, 1) + 1;
  c->refs = 1;
  if (is_tcp) uv_tcp_init(lp->uv, &c->h.tcp);
  else uv_pipe_init(lp->uv, &c->h.pipe, 0);
  c->h.tcp.data = c;
  if (is_tcp) c->tls_ctx = cd_security_tls(&s->sec);
  uv_timer_init(lp->uv, &c->idle);
  c->idle.data = c;
  c->handles_open = 2;
  if ((is_tcp ? uv_tcp_open(&c->h.tcp, fd) : uv_pipe_open(&c->h.pipe, fd)) != 0) {
    close(fd);
    c->state = CD_CONN_CLOSED;
    uv_close((uv_handle_t *)&c->h, on_handle_closed);
    uv_close((uv_handle_t *)&c->idle, on_handle_closed);
    return 0;
  }
  /* link first: on_handle_closed unlinks */
  pthread_mutex_lock(&lp->conns_mu);
  c->next = lp->conns;
  if (lp->conns) lp->conns->prev = c;
  lp->conns = c;
  pthread_mutex_unlock(&lp->conns_mu);
  c->flags |= CD_CF_LINKED;
  atomic_fetch_add(&s->stats.connections, 1);
  s->stats.connections_total++;
  lp->connections++;
  lp->connections_total++;
  peer_name(c, is_tcp);
  const cd_limits *l = lim(c);
  c->ring_cap = l->max_inflight_per_conn;
  c->ring = calloc(c->ring_cap, sizeof *c->ring);
  cd_frame_decoder_init(&c->dec, l->max_frame_bytes);
  cd_budget_init(&c->scratch, 0);
  CD_DEBUG("connection accepted", "conn=%llu peer=%s", (unsigned long long)c->id, c->peer);
  if (!c->ring) {
    c->ring_cap = 0;
    cd_conn_close(c, "out of memory for the connection's request ring");
    return 0;
  }
  if (is_tcp && count_address(c) != 0) {
    c->wire = CD_WIRE_PROTO;
    c->flags |= CD_CF_NO_LINGER;
    char msg[160];
    snprintf(msg, sizeof msg, "too many connections from %s (max_connections_per_address %llu)", c->host,
             (unsigned long long)l->max_connections_per_address);
    /* a TLS client cannot read a plaintext error: it is just closed */
    if (c->tls_ctx) cd_conn_close(c, msg);
    else cd__input_fatal(c, CD_UNAVAILABLE, msg, "too many connections from one address", NULL);
    return 0;
  }
  if (atomic_fetch_add(&s->seated, 1) + 1 > l->max_connections) {
    atomic_fetch_sub(&s->seated, 1); /* cd_server.seated: refused, it holds no seat */
    s->stats.connections_rejected++;
    /* One UNAVAILABLE error (protobuf framing: the client may speak JSON,
     * but it cannot have said so yet), then close. */
    c->wire = CD_WIRE_PROTO;
    c->flags |= CD_CF_NO_LINGER; /* lingering would hold a slot it does not have */
    char msg[128];
    snprintf(msg, sizeof msg, "too many connections (max_connections %llu)", (unsigned long long)l->max_connections);
    cd__input_fatal(c, CD_UNAVAILABLE, msg, "framing error", &s->stats.disconnects_framing);
    return 0;
  }
  c->flags |= CD_CF_SEATED;
  if (l->hello_timeout_ms) uv_timer_start(&c->idle, on_hello_deadline, first_deadline(l), 0);
  else cd_conn_greet(c);
  cd__conn_start_reading(c);
  return 0;
}

/* An accepted descriptor on its way to its loop. */
typedef struct adopt_task {
  cd_task task;
  cd_loop *loop;
  uv_os_sock_t fd;
  int is_tcp;
} adopt_task;

static void run_adopt(cd_task *t) {
  adopt_task *a = (adopt_task *)t;
  cd_loop *l = a->loop;
  if (conn_open(l, a->fd, a->is_tcp) != 0) {
    CD_WARN("connection refused: out of memory for its state", "listener=%s loop=%d", a->is_tcp ? "tcp" : "unix",
            l->index);
    close(a->fd);
    l->load--;
    l->srv->conn_ended(l->srv, 0);
  }
  free(a);
}

int cd_conn_adopt(cd_loop *l, uv_os_sock_t fd, int is_tcp) {
  adopt_task *a = malloc(sizeof *a);
  if (!a) return -1;
  a->task.run = run_adopt;
  a->loop = l;
  a->fd = fd;
  a->is_tcp = is_tcp;
  if (cd_loop_post(l, &a->task) != 0) {
    free(a);
    return -1;
  }
  return 0;
}
