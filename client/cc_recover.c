/* cc_recover.c — surviving the server (see cc_internal.h): the address
 * list, reconnecting with capped exponential backoff and jitter, the
 * registrations and streams this client keeps, and re-registering and
 * reopening them on a new connection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cc_internal.h"

static void tell(cc_client *c, cc_event ev) {
  ev.addr = c->addrs[c->cur];
  if (c->event) c->event(c->event_user, &ev);
}

/* ---- addresses ------------------------------------------------------------ */

void cc_recover_free(cc_client *c) {
  for (size_t i = 0; i < c->naddrs; i++) free(c->addrs[i]);
  free(c->addrs);
  for (size_t i = 0; i < c->nregs; i++) free(c->regs[i].msg);
  free(c->regs);
  for (size_t i = 0; i < c->nstreams; i++) free(c->streams[i].open_msg);
  free(c->streams);
}

int cc_recover_set_addrs(cc_client *c, const char *list, cc_error *err) {
  size_t n = 1;
  for (const char *p = list; *p; p++) n += *p == ',';
  c->addrs = calloc(n, sizeof *c->addrs);
  if (!c->addrs) return cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  const char *p = list;
  for (size_t i = 0; i < n; i++) {
    const char *e = strchr(p, ',');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    while (len && (*p == ' ' || *p == '\t')) p++, len--;
    while (len && (p[len - 1] == ' ' || p[len - 1] == '\t')) len--;
    if (!len) return cc_wire_fail(err, CC_EINVALID_ARGUMENT, "empty address at position %zu of \"%s\"", i + 1, list);
    c->addrs[i] = strndup(p, len);
    if (!c->addrs[i]) return cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
    c->naddrs = i + 1;
    p = e ? e + 1 : p + len;
  }
  return 0;
}

int cc_recover_connect_once(cc_client *c, cc_error *err) {
  int rc = CC_EUNAVAILABLE;
  for (size_t k = 0; k < c->naddrs; k++) {
    size_t i = (c->cur + k) % c->naddrs;
    int fd = -1;
    rc = cc_wire_open(c->addrs[i], c->opt.connect_timeout_ms, &fd, err);
    if (rc == CC_EINVALID_ARGUMENT) return rc;
    if (rc == 0) {
      c->fd = fd;
      c->cur = i;
      c->broken = 0;
      c->rlen = 0;
      return 0;
    }
  }
  if (c->naddrs > 1 && err) { /* say it was the whole list */
    char m[sizeof err->message];
    snprintf(m, sizeof m, "%s", err->message);
    snprintf(err->message, sizeof err->message, "none of the %zu addresses answered; last: %.400s", c->naddrs, m);
  }
  return rc;
}

/* ---- kept registrations --------------------------------------------------- */

static void drop_oldest_reg(cc_client *c) {
  c->reg_bytes -= c->regs[0].len;
  free(c->regs[0].msg);
  memmove(c->regs, c->regs + 1, (c->nregs - 1) * sizeof *c->regs);
  c->nregs--;
}

void cc_recover_keep_reg(cc_client *c, const Contactd__V1__RegisterGeometry *req, const char *id) {
  if (!id || !*id || strlen(id) >= CC_ID_MAX || !c->opt.keep_registrations) return;
  for (size_t i = 0; i < c->nregs; i++)
    if (strcmp(c->regs[i].id, id) == 0) return;
  Contactd__V1__RegisterGeometry r = *req;
  r.want_progress = 0; /* progress is for the caller's first registration only */
  size_t len = contactd__v1__register_geometry__get_packed_size(&r);
  if (len > c->opt.keep_bytes) return;
  while (c->nregs && (c->nregs >= c->opt.keep_registrations || c->reg_bytes + len > c->opt.keep_bytes))
    drop_oldest_reg(c);
  if (c->nregs == c->cregs) {
    size_t nc = c->cregs ? 2 * c->cregs : 8;
    cc_kept_reg *nr = realloc(c->regs, nc * sizeof *nr);
    if (!nr) return;
    c->regs = nr;
    c->cregs = nc;
  }
  uint8_t *msg = malloc(len ? len : 1);
  if (!msg) return;
  contactd__v1__register_geometry__pack(&r, msg);
  cc_kept_reg *k = &c->regs[c->nregs++];
  snprintf(k->id, sizeof k->id, "%s", id);
  k->msg = msg;
  k->len = len;
  c->reg_bytes += len;
}

static int send_kept_reg(cc_client *c, const cc_kept_reg *k, cc_error *err) {
  Contactd__V1__RegisterGeometry *r = contactd__v1__register_geometry__unpack(NULL, k->len, k->msg);
  if (!r) return cc_wire_fail(err, CC_EINTERNAL, "kept registration of %s does not decode", k->id);
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  env.register_geometry = r;
  Envelope *rep = NULL;
  int rc = cc_wire_call(c, &env, &rep, err);
  contactd__v1__register_geometry__free_unpacked(r, NULL);
  if (!rc && (rep->msg_case != CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY || !rep->register_reply ||
              !rep->register_reply->geometry_id || strcmp(rep->register_reply->geometry_id, k->id) != 0))
    rc = cc_wire_fail(err, CC_EINTERNAL, "registering %s again gave another reply or id", k->id);
  contactd__v1__envelope__free_unpacked(rep, NULL);
  return rc;
}

int cc_recover_reregister(cc_client *c, Contactd__V1__Body *const *bodies, size_t n, size_t *sent,
                          cc_error *err) {
  if (sent) *sent = 0;
  if (!c->nregs || !n) return 0;
  unsigned char *want = calloc(c->nregs, 1);
  if (!want) return cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  for (size_t i = 0; i < n; i++)
    for (size_t k = 0; bodies[i] && bodies[i]->geometry_id && k < c->nregs; k++)
      if (strcmp(c->regs[k].id, bodies[i]->geometry_id) == 0) {
        want[k] = 1;
        break;
      }
  /* Registered again whether the server lacks them or is still building
   * them (a registration joins that build and is answered when it is
   * done); one it holds answers from its cache at once. */
  size_t count = 0;
  int rc = 0;
  for (size_t k = 0; !rc && k < c->nregs; k++)
    if (want[k]) {
      rc = send_kept_reg(c, &c->regs[k], err);
      count += !rc;
    }
  free(want);
  if (sent) *sent = count;
  if (count) tell(c, (cc_event){.kind = CC_EVENT_REREGISTERED, .registered = count});
  return rc;
}

/* ---- kept streams --------------------------------------------------------- */

int cc_recover_keep_stream(cc_client *c, const Contactd__V1__OpenStream *m, uint64_t server_id,
                           uint64_t open_rid, uint64_t *stream_id, cc_error *err) {
  if (c->nstreams == c->cstreams) {
    size_t nc = c->cstreams ? 2 * c->cstreams : 4;
    cc_open_stream *ns = realloc(c->streams, nc * sizeof *ns);
    if (!ns) return cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
    c->streams = ns;
    c->cstreams = nc;
  }
  size_t len = contactd__v1__open_stream__get_packed_size(m);
  uint8_t *msg = malloc(len ? len : 1);
  if (!msg) return cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  contactd__v1__open_stream__pack(m, msg);
  /* The caller's id is the server's unless a stream reopened on this
   * connection already goes by it. */
  uint64_t id = server_id, top = 0;
  int taken = 0;
  for (size_t i = 0; i < c->nstreams; i++) {
    taken |= c->streams[i].stream_id == id;
    if (c->streams[i].stream_id > top) top = c->streams[i].stream_id;
  }
  if (taken) id = top + 1;
  c->streams[c->nstreams++] = (cc_open_stream){.stream_id = id, .server_id = server_id, .open_rid = open_rid,
                                               .open_msg = msg, .open_len = len};
  if (stream_id) *stream_id = id;
  return 0;
}

void cc_recover_forget_stream(cc_client *c, uint64_t stream_id) {
  for (size_t i = 0; i < c->nstreams; i++)
    if (c->streams[i].stream_id == stream_id) {
      free(c->streams[i].open_msg);
      c->streams[i] = c->streams[--c->nstreams];
      return;
    }
}

/* A notice for cc_stream_recv: the stream was reopened (code 0 given) or
 * could not be (the server's error in *why). */
static void notice(cc_client *c, const cc_open_stream *s, const cc_error *why) {
  for (const cc_queued *q = c->qhead; !why && q; q = q->next) /* reopened twice (a second break): say it once */
    if (q->notice && q->notice->reopened && q->notice->stream_id == s->stream_id) return;
  cc_error *n = calloc(1, sizeof *n);
  if (!n) return;
  if (why) {
    *n = *why;
    char m[sizeof n->message];
    snprintf(m, sizeof m, "%s", why->message);
    snprintf(n->message, sizeof n->message, "stream %llu could not be reopened on %s: %.400s",
             (unsigned long long)s->stream_id, c->addrs[c->cur], m);
  } else {
    n->code = CC_EUNAVAILABLE;
    n->retryable = n->reopened = 1;
    snprintf(n->message, sizeof n->message,
             "connection lost; stream %llu reopened on %s: updates after the last result have no result, "
             "send them again", (unsigned long long)s->stream_id, c->addrs[c->cur]);
  }
  n->stream_id = s->stream_id;
  n->sequence = s->last_seq;
  cc_wire_enqueue(c, NULL, n);
}

static int open_kept(cc_client *c, const cc_open_stream *s, Envelope **rep, cc_error *err) {
  Contactd__V1__OpenStream *m = contactd__v1__open_stream__unpack(NULL, s->open_len, s->open_msg);
  if (!m) return cc_wire_fail(err, CC_EINTERNAL, "kept OpenStream does not decode");
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM;
  env.open_stream = m;
  int rc = cc_wire_call(c, &env, rep, err);
  if (rc == CC_ENOT_FOUND && err->remote) { /* the new server lacks geometry: send it, once */
    size_t n = 0;
    cc_error e2;
    if (cc_recover_reregister(c, m->bodies, m->n_bodies, &n, &e2) == 0 && n) rc = cc_wire_call(c, &env, rep, err);
    else if (c->broken) rc = cc_wire_lost(err, "%s", e2.message);
  }
  contactd__v1__open_stream__free_unpacked(m, NULL);
  if (!rc && ((*rep)->msg_case != CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM_REPLY || !(*rep)->open_stream_reply)) {
    contactd__v1__envelope__free_unpacked(*rep, NULL);
    rc = cc_wire_fail(err, CC_EINTERNAL, "unexpected reply to OpenStream");
  }
  return rc;
}

/* Reopen every kept stream on the new connection, in the order opened. 0,
 * or the error of a break while doing it (a stream the server refuses is
 * dropped with a notice instead). */
static int reopen_streams(cc_client *c, cc_error *err) {
  for (size_t i = 0; i < c->nstreams; i++) c->streams[i].server_id = c->streams[i].open_rid = 0;
  for (size_t i = 0; i < c->nstreams;) {
    cc_open_stream *s = &c->streams[i];
    Envelope *rep = NULL;
    int rc = open_kept(c, s, &rep, err);
    if (rc && c->broken) return rc;
    if (rc) {
      notice(c, s, err);
      cc_recover_forget_stream(c, s->stream_id);
      continue;
    }
    s->server_id = rep->open_stream_reply->stream_id;
    s->open_rid = rep->request_id;
    contactd__v1__envelope__free_unpacked(rep, NULL);
    notice(c, s, NULL);
    tell(c, (cc_event){.kind = CC_EVENT_STREAM_REOPENED, .stream_id = s->stream_id, .last_sequence = s->last_seq});
    i++;
  }
  return 0;
}

/* ---- reconnecting --------------------------------------------------------- */

/* A Hello round trip on the new connection: a server that is going down
 * can still complete a handshake (its listening socket's queue), and a
 * request must not be spent finding that out. */
static int hello(cc_client *c, cc_error *err) {
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  h.protocol_version = CC_PROTOCOL_VERSION;
  h.client_name = (char *)"cc_client (reconnect)";
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  env.hello = &h;
  Envelope *rep = NULL;
  int timeout = c->timeout_ms; /* a server that accepts and never answers is no server */
  c->timeout_ms = c->opt.connect_timeout_ms;
  int rc = cc_wire_call(c, &env, &rep, err);
  c->timeout_ms = timeout;
  if (!rc) contactd__v1__envelope__free_unpacked(rep, NULL);
  return rc;
}

static void sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

int cc_recover_reconnect(cc_client *c, cc_error *err) {
  cc_error e;
  if (!c->opt.reconnect)
    return cc_wire_lost(err, "connection to %s is lost (reconnecting is off)", c->addrs[c->cur]);
  cc_wire_drop(c);
  int64_t t0 = cc_wire_now_ms();
  int limit = c->opt.reconnect_timeout_ms;
  int delay = c->opt.backoff_initial_ms > 0 ? c->opt.backoff_initial_ms : 1;
  int attempts = 0;
  for (;;) {
    attempts++;
    int rc = cc_recover_connect_once(c, &e);
    if (rc == CC_EINVALID_ARGUMENT) break;
    if (rc == 0) rc = hello(c, &e);
    if (rc == 0) {
      tell(c, (cc_event){.kind = CC_EVENT_RECONNECTED, .attempts = attempts});
      rc = reopen_streams(c, &e);
      if (rc == 0) {
        return cc_wire_ok(err);
      }
      cc_wire_drop(c);
    }
    int64_t spent = cc_wire_now_ms() - t0;
    if (limit >= 0 && spent >= limit) break;
    /* Equal jitter: half the delay fixed, half random, so that many
     * clients cut off at once do not come back in step. */
    int wait = delay / 2 + (int)(rand_r(&c->rng) % (unsigned)(delay - delay / 2 + 1));
    if (limit >= 0 && spent + wait > limit) wait = (int)(limit - spent);
    sleep_ms(wait);
    delay = delay > c->opt.backoff_max_ms / 2 ? c->opt.backoff_max_ms : delay * 2;
  }
  if (e.code == CC_EINVALID_ARGUMENT) return cc_wire_fail(err, e.code, "%s", e.message);
  return cc_wire_lost(err, "cannot reconnect within %d ms (%d attempts): %s", limit, attempts, e.message);
}
