/* cc_client.c — the public calls (see cc_client.h), with recovery around
 * each: reconnecting after a break, sending a lost idempotent request once
 * more when asked to, re-registering kept geometry a server answers
 * NOT_FOUND for, and keeping the ids of reopened streams stable. */
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cc_internal.h"

void cc_set_progress(cc_client *c, cc_progress_fn fn, void *user) {
  c->progress = fn;
  c->progress_user = user;
}

void cc_set_event(cc_client *c, cc_event_fn fn, void *user) {
  c->event = fn;
  c->event_user = user;
}

const char *cc_addr(const cc_client *c) { return c->addrs[c->cur]; }

static const char *const code_names[] = {
    "OK",        "CANCELLED",         "UNKNOWN",       "INVALID_ARGUMENT",    "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS",    "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",      "UNIMPLEMENTED", "INTERNAL",            "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

const char *cc_code_name(int code) {
  if (code < 0 || code > 16) return "UNKNOWN";
  return code_names[code];
}

void cc_options_default(cc_options *o) {
  memset(o, 0, sizeof *o);
  o->connect_timeout_ms = 5000;
  o->timeout_ms = 60000;
  o->max_frame_bytes = (size_t)256 << 20;
  o->reconnect = 1;
  o->backoff_initial_ms = 50;
  o->backoff_max_ms = 2000;
  o->reconnect_timeout_ms = 30000;
  o->retry_queries = 0;
  o->keep_registrations = 1024;
  o->keep_bytes = (size_t)64 << 20;
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

int cc_options_flag(cc_options *o, int argc, char **argv, int *i, cc_error *err) {
  const char *f = argv[*i];
  if (strcmp(f, "--tls") == 0) {
    o->tls = 1;
    return 1;
  }
  static const char *const names[] = {"--ca", "--cert", "--key", "--server-name", "--token-file"};
  size_t k = 0;
  while (k < sizeof names / sizeof *names && strcmp(f, names[k]) != 0) k++;
  if (k == sizeof names / sizeof *names) {
    if (strcmp(f, "--token") == 0)
      return cc_wire_fail(err, CC_EINVALID_ARGUMENT,
                          "--token: a token is not taken on the command line (every user of the machine can "
                          "read it there): use --token-file FILE or $CONTACTD_TOKEN_FILE");
    return 0;
  }
  if (*i + 1 >= argc || !argv[*i + 1][0]) return cc_wire_fail(err, CC_EINVALID_ARGUMENT, "%s needs a value", f);
  const char *v = argv[++*i];
  const char **slot[] = {&o->tls_ca_file, &o->tls_cert_file, &o->tls_key_file, &o->tls_server_name, &o->token_file};
  *slot[k] = v;
  if (k != 2 && k != 4) o->tls = 1; /* a CA, a certificate or a server name only make sense with TLS */
  return 1;
}

/* A token file's contents, trailing whitespace off: 0 or a code. */
static int read_token_file(cc_client *c, const char *path, const char *how, cc_error *err) {
  FILE *f = fopen(path, "r");
  if (!f) return cc_wire_fail(err, CC_EINVALID_ARGUMENT, "cannot read the token file %s (%s): %s", path, how, strerror(errno));
  char buf[4097];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  if (n == sizeof buf) {
    OPENSSL_cleanse(buf, sizeof buf);
    return cc_wire_fail(err, CC_EINVALID_ARGUMENT, "the token file %s (%s) is over 4096 bytes", path, how);
  }
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' ' || buf[n - 1] == '\t')) n--;
  buf[n] = 0;
  if (!n || memchr(buf, 0, n)) {
    OPENSSL_cleanse(buf, sizeof buf);
    return cc_wire_fail(err, CC_EINVALID_ARGUMENT, "the token file %s (%s) holds %s", path, how,
                        n ? "a NUL byte" : "no token");
  }
  c->token = strdup(buf);
  OPENSSL_cleanse(buf, sizeof buf);
  snprintf(c->token_from, sizeof c->token_from, "the file %.200s (%s)", path, how);
  return c->token ? 0 : cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
}

/* The token, from the options or the environment (cc_options.token). */
static int load_token(cc_client *c, cc_error *err) {
  const cc_options *o = &c->opt;
  const char *file = getenv("CONTACTD_TOKEN_FILE"), *var = getenv("CONTACTD_TOKEN");
  int rc = 0;
  if (o->token) {
    c->token = strdup(o->token);
    snprintf(c->token_from, sizeof c->token_from, "cc_options.token");
  } else if (o->token_file) {
    rc = read_token_file(c, o->token_file, "--token-file", err);
  } else if (file && *file) {
    rc = read_token_file(c, file, "$CONTACTD_TOKEN_FILE", err);
  } else if (var && *var) {
    c->token = strdup(var);
    snprintf(c->token_from, sizeof c->token_from, "$CONTACTD_TOKEN");
  } else {
    return 0;
  }
  if (rc) return rc;
  return c->token ? 0 : cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
}

/* The caller's strings in c->opt become the client's own copies. */
static int copy_strings(cc_client *c, cc_error *err) {
  const char **s[] = {&c->opt.tls_ca_file, &c->opt.tls_cert_file, &c->opt.tls_key_file, &c->opt.tls_server_name,
                      &c->opt.token_file};
  for (size_t i = 0; i < sizeof s / sizeof *s; i++)
    if (*s[i] && !(*s[i] = strdup(*s[i]))) {
      for (size_t j = i + 1; j < sizeof s / sizeof *s; j++) *s[j] = NULL;
      return cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
    }
  c->opt.token = NULL; /* c->token holds it (load_token) */
  return 0;
}

static void free_strings(cc_client *c) {
  free((char *)c->opt.tls_ca_file);
  free((char *)c->opt.tls_cert_file);
  free((char *)c->opt.tls_key_file);
  free((char *)c->opt.tls_server_name);
  free((char *)c->opt.token_file);
  if (c->token) {
    OPENSSL_cleanse(c->token, strlen(c->token));
    free(c->token);
  }
}

/* Token, TLS context, addresses, the first connection (and its Hello when
 * there is a token). */
static int start(cc_client *c, const char *addr, cc_error *err) {
  int rc = load_token(c, err);
  if (!rc) rc = copy_strings(c, err);
  if (rc) return rc;
  char why[512];
  if (cc_tls_setup(c, why, sizeof why)) return cc_wire_fail(err, CC_EINVALID_ARGUMENT, "%s", why);
  rc = cc_recover_set_addrs(c, addr ? addr : cc_default_addr(), err);
  if (!rc) rc = cc_recover_connect_once(c, err);
  if (!rc && c->token) rc = cc_recover_hello(c, "cc_client", err);
  return rc;
}

int cc_connect(const char *addr, const cc_options *opt, cc_client **out, cc_error *err) {
  *out = NULL;
  cc_client *c = calloc(1, sizeof *c);
  if (!c) return cc_wire_fail(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  if (opt) c->opt = *opt;
  else cc_options_default(&c->opt);
  if (c->opt.backoff_initial_ms <= 0) c->opt.backoff_initial_ms = 1;
  if (c->opt.backoff_max_ms < c->opt.backoff_initial_ms) c->opt.backoff_max_ms = c->opt.backoff_initial_ms;
  c->fd = -1;
  c->timeout_ms = c->opt.timeout_ms;
  c->max_frame = c->opt.max_frame_bytes ? c->opt.max_frame_bytes : ((size_t)256 << 20);
  c->next_rid = 1;
  c->next_stream_rid = 1;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  c->rng = (unsigned)ts.tv_nsec ^ (unsigned)getpid() ^ (unsigned)(uintptr_t)c;
  int rc = start(c, addr, err);
  if (rc) {
    cc_close(c);
    return rc;
  }
  *out = c;
  return cc_wire_ok(err);
}

void cc_close(cc_client *c) {
  if (!c) return;
  cc_tls_free(c);
  if (c->fd >= 0) close(c->fd);
  free_strings(c);
  cc_wire_free_queue(c);
  cc_recover_free(c);
  free(c->rbuf);
  free(c->wbuf);
  free(c);
}

/* ---- calls ---------------------------------------------------------------- */

/* Requests that may run twice with the same effect. */
static int idempotent(const Envelope *req) {
  switch (req->msg_case) {
    case CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY:
    case CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY:
    case CONTACTD__V1__ENVELOPE__MSG_STATS:
    case CONTACTD__V1__ENVELOPE__MSG_HELLO:
      return 1;
    default:
      return 0;
  }
}

/* NOT_FOUND to a request naming geometry may mean the server lost it (or
 * another client's registration of it is still building): register the
 * kept ones it names again. 1 when some were sent. */
static int reregister_named(cc_client *c, const Envelope *req) {
  Contactd__V1__Body *const *bodies = NULL;
  size_t n = 0, sent = 0;
  if (req->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY && req->contact_query)
    bodies = req->contact_query->bodies, n = req->contact_query->n_bodies;
  else if (req->msg_case == CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM && req->open_stream)
    bodies = req->open_stream->bodies, n = req->open_stream->n_bodies;
  cc_error e;
  return bodies && cc_recover_reregister(c, bodies, n, &sent, &e) == 0 && sent;
}

/* Reconnect first when the connection is known to be lost. */
static int ready(cc_client *c, cc_error *err) {
  return c->broken ? cc_recover_reconnect(c, err) : 0;
}

int cc_call(cc_client *c, Envelope *req, Envelope **reply, cc_error *err) {
  cc_error local;
  if (!err) err = &local;
  *reply = NULL;
  int resent = 0, reregistered = 0;
  for (;;) {
    int rc = ready(c, err);
    if (rc) return rc;
    rc = cc_wire_call(c, req, reply, err);
    if (rc == 0) return 0;
    if (err->retryable && c->opt.reconnect && c->opt.retry_queries && !resent && idempotent(req)) {
      resent = 1;
      continue;
    }
    if (rc == CC_ENOT_FOUND && err->remote && !reregistered && c->nregs) {
      reregistered = 1;
      if (reregister_named(c, req)) continue;
    }
    return rc;
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
      return cc_wire_fail((err), CC_EINTERNAL, "unexpected reply (envelope case %d) to %s", mc_, #member); \
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

static int register_once(cc_client *c, const Contactd__V1__RegisterGeometry *req,
                         Contactd__V1__RegisterReply **out, cc_error *err) {
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  env.register_geometry = (Contactd__V1__RegisterGeometry *)req;
  CALL_EXPECT(c, &env, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY, register_reply, out, err);
}

int cc_register(cc_client *c, const Contactd__V1__RegisterGeometry *req,
                Contactd__V1__RegisterReply **out, cc_error *err) {
  Contactd__V1__RegisterReply *rep = NULL;
  int rc = register_once(c, req, &rep, err);
  if (rc) return rc;
  cc_recover_keep_reg(c, req, rep->geometry_id);
  if (out) *out = rep;
  else cc_free(rep);
  return 0;
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
    return cc_wire_fail(err, CC_EINTERNAL, "unexpected reply to OpenStream");
  }
  rc = cc_recover_keep_stream(c, m, rep->open_stream_reply->stream_id, rep->request_id, stream_id, err);
  contactd__v1__envelope__free_unpacked(rep, NULL);
  return rc;
}

int cc_stream_update(cc_client *c, const Contactd__V1__StreamUpdate *u, cc_error *err) {
  int rc = ready(c, err);
  if (rc) return rc;
  Contactd__V1__StreamUpdate m = *u;
  cc_open_stream *s = cc_wire_stream(c, u->stream_id);
  if (s) {
    m.stream_id = s->server_id;
    if (u->sequence > s->sent_seq) s->sent_seq = u->sequence;
  }
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.request_id = CC_STREAM_RID_BIT | c->next_stream_rid++;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
  env.stream_update = &m;
  rc = cc_wire_send(c, &env, err);
  return rc ? rc : cc_wire_ok(err);
}

/* The next queued item or message from the socket; a break with streams
 * open reconnects (which queues a notice per reopened stream). */
static int next_env(cc_client *c, int64_t dl, Envelope **env, cc_error *err) {
  for (;;) {
    if (c->qhead) {
      cc_queued *q = c->qhead;
      c->qhead = q->next;
      if (!c->qhead) c->qtail = NULL;
      *env = q->env;
      cc_error *n = q->notice;
      free(q);
      if (!n) return 0;
      const cc_open_stream *s = n->reopened ? cc_wire_stream(c, n->stream_id) : NULL;
      if (s) n->sequence = s->last_seq; /* results queued before it are handed out by now */
      if (err) *err = *n;
      int rc = n->code;
      free(n);
      return rc;
    }
    int rc = cc_wire_recv(c, dl, env, err);
    if (rc && err->retryable && c->opt.reconnect && c->nstreams) {
      rc = cc_recover_reconnect(c, err);
      if (rc) return rc;
      continue;
    }
    if (!rc && (*env)->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR &&
        !cc_wire_is_stream_rid(c, (*env)->request_id)) {
      contactd__v1__envelope__free_unpacked(*env, NULL); /* late reply to an abandoned call */
      continue;
    }
    return rc;
  }
}

int cc_stream_recv(cc_client *c, int timeout_ms, Contactd__V1__StreamResult **out, cc_error *err) {
  cc_error local;
  if (!err) err = &local;
  *out = NULL;
  int rc = c->broken && c->nstreams && !c->qhead ? cc_recover_reconnect(c, err) : 0;
  if (rc) return rc;
  int64_t dl = (timeout_ms < 0 ? c->timeout_ms : timeout_ms) < 0
                   ? -1
                   : cc_wire_now_ms() + (timeout_ms < 0 ? c->timeout_ms : timeout_ms);
  for (;;) {
    Envelope *env = NULL;
    rc = next_env(c, dl, &env, err);
    if (rc) return rc;
    if (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT && env->stream_result) {
      Contactd__V1__StreamResult *r = detach(env, (void **)&env->stream_result);
      cc_open_stream *s = cc_wire_stream(c, r->stream_id);
      if (s && r->sequence > s->last_seq) s->last_seq = r->sequence;
      *out = r;
      return cc_wire_ok(err);
    }
    if (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR && env->error) {
      rc = cc_wire_remote(err, env->error);
      contactd__v1__envelope__free_unpacked(env, NULL);
      return rc;
    }
    contactd__v1__envelope__free_unpacked(env, NULL);
  }
}

/* The stream (caller's id) a queued item is about, 0 if none. */
static uint64_t item_stream(const cc_queued *q) {
  if (q->notice) return q->notice->stream_id;
  if (q->env->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT && q->env->stream_result)
    return q->env->stream_result->stream_id;
  if (q->env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR && q->env->error) return q->env->error->stream_id;
  return 0;
}

static int item_is_result(const cc_queued *q) {
  return !q->notice && q->env->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT;
}

/* Take stream sid's item from the queue (after prev, NULL = the head). */
static void unlink_item(cc_client *c, cc_queued *prev, cc_queued *q) {
  if (prev) prev->next = q->next;
  else c->qhead = q->next;
  if (c->qtail == q) c->qtail = prev;
}

/* Stream sid's next item from the queue (1: *out or the returned code set),
 * older results than the last handed out dropped, and with latest every
 * result followed by a newer one of the same stream. 0: none queued. */
static int take_item(cc_client *c, cc_open_stream *s, int latest, Contactd__V1__StreamResult **out,
                     cc_stream_info *info, cc_error *err, int *rc) {
  cc_queued *prev = NULL, *q = c->qhead;
  while (q) {
    if (item_stream(q) != s->stream_id) {
      prev = q;
      q = q->next;
      continue;
    }
    cc_queued *nx = q->next;
    if (item_is_result(q)) {
      const Contactd__V1__StreamResult *r = q->env->stream_result;
      int newer = 0;
      for (cc_queued *o = nx; latest && o && !newer; o = o->next)
        newer = item_stream(o) == s->stream_id && item_is_result(o);
      if (r->sequence <= s->last_seq || newer) { /* older than one handed out, or overtaken */
        unlink_item(c, prev, q);
        contactd__v1__envelope__free_unpacked(q->env, NULL);
        free(q);
        info->skipped++;
        q = nx;
        continue;
      }
    }
    unlink_item(c, prev, q);
    if (q->notice) {
      if (err) *err = *q->notice;
      if (err && q->notice->reopened) err->sequence = s->last_seq;
      *rc = q->notice->code;
      free(q->notice);
    } else if (q->env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR) {
      *rc = cc_wire_remote(err, q->env->error);
      contactd__v1__envelope__free_unpacked(q->env, NULL);
    } else {
      Contactd__V1__StreamResult *r = detach(q->env, (void **)&q->env->stream_result);
      s->last_seq = r->sequence;
      info->sequence = r->sequence;
      info->newest_sent = s->sent_seq;
      info->stale = r->sequence < s->sent_seq;
      for (cc_queued *o = c->qhead; o; o = o->next) info->queued += item_stream(o) == s->stream_id;
      *out = r;
      *rc = cc_wire_ok(err);
    }
    free(q);
    return 1;
  }
  return 0;
}

static int stream_take(cc_client *c, uint64_t stream_id, int latest, int timeout_ms,
                       Contactd__V1__StreamResult **out, cc_stream_info *info, cc_error *err) {
  cc_error local;
  cc_stream_info li;
  if (!err) err = &local;
  if (!info) info = &li;
  memset(info, 0, sizeof *info);
  *out = NULL;
  int64_t t = timeout_ms < 0 ? c->timeout_ms : timeout_ms;
  int64_t dl = t < 0 ? -1 : cc_wire_now_ms() + t;
  for (;;) {
    cc_open_stream *s = cc_wire_stream(c, stream_id);
    if (!s) return cc_wire_fail(err, CC_EFAILED_PRECONDITION, "stream %llu is not open", (unsigned long long)stream_id);
    int rc = 0;
    if (take_item(c, s, latest, out, info, err, &rc)) return rc;
    Envelope *env = NULL;
    if (c->broken && c->opt.reconnect) { /* reopens the streams, queueing a notice for each */
      rc = cc_recover_reconnect(c, err);
      if (rc) return rc;
      continue;
    }
    rc = cc_wire_recv(c, dl, &env, err);
    if (rc && err->retryable && c->opt.reconnect && c->nstreams) {
      rc = cc_recover_reconnect(c, err); /* queues a notice per reopened stream */
      if (rc) return rc;
      continue;
    }
    if (rc) return rc;
    if (!env) continue;
    if ((env->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT && env->stream_result) ||
        (env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR && env->error &&
         (env->error->stream_id || cc_wire_is_stream_rid(c, env->request_id))))
      cc_wire_enqueue(c, env, NULL);
    else
      contactd__v1__envelope__free_unpacked(env, NULL); /* a late reply to an abandoned call */
  }
}

int cc_stream_next(cc_client *c, uint64_t stream_id, int timeout_ms, Contactd__V1__StreamResult **out,
                   cc_stream_info *info, cc_error *err) {
  return stream_take(c, stream_id, 0, timeout_ms, out, info, err);
}

int cc_stream_latest(cc_client *c, uint64_t stream_id, int timeout_ms, Contactd__V1__StreamResult **out,
                     cc_stream_info *info, cc_error *err) {
  return stream_take(c, stream_id, 1, timeout_ms, out, info, err);
}

int cc_call_timeout(cc_client *c, Envelope *req, Envelope **reply, int timeout_ms, cc_error *err) {
  int saved = c->timeout_ms;
  c->timeout_ms = timeout_ms;
  int rc = cc_call(c, req, reply, err);
  c->timeout_ms = saved;
  return rc;
}

int cc_stream_close(cc_client *c, uint64_t stream_id, Contactd__V1__CloseStreamReply **out,
                    cc_error *err) {
  const cc_open_stream *s = cc_wire_stream(c, stream_id);
  Contactd__V1__CloseStream m = CONTACTD__V1__CLOSE_STREAM__INIT;
  m.stream_id = s ? s->server_id : stream_id;
  if (c->broken) { /* the server's side of it went with the connection */
    cc_recover_forget_stream(c, stream_id);
    return cc_wire_lost(err, "connection lost: stream %llu is closed with it", (unsigned long long)stream_id);
  }
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM;
  env.close_stream = &m;
  Envelope *rep;
  int rc = cc_wire_call(c, &env, &rep, err); /* no reconnect: it must not reopen this stream */
  cc_recover_forget_stream(c, stream_id);
  if (rc) return rc;
  if (rep->msg_case != CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM_REPLY || !rep->close_stream_reply) {
    contactd__v1__envelope__free_unpacked(rep, NULL);
    return cc_wire_fail(err, CC_EINTERNAL, "unexpected reply to CloseStream");
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

static void vec3_copy(double out[3], const Contactd__V1__Vec3 *v) {
  out[0] = v ? v->x : 0;
  out[1] = v ? v->y : 0;
  out[2] = v ? v->z : 0;
}

size_t cc_pair_reduced(const Contactd__V1__PairResult *r, cc_reduced_contact *out, size_t max) {
  size_t n = r ? r->n_reduced_contacts : 0;
  for (size_t i = 0; i < n && i < max; i++) {
    const Contactd__V1__ReducedContact *p = r->reduced_contacts[i];
    cc_reduced_contact *q = &out[i];
    q->patch = p->patch;
    vec3_copy(q->position, p->position);
    vec3_copy(q->normal, p->normal);
    vec3_copy(q->force, p->force);
    vec3_copy(q->couple, p->couple);
    q->stiffness = p->stiffness;
    q->dissipation = p->dissipation;
    q->separation = p->separation;
  }
  return n;
}

int cc_pair_speculative(const Contactd__V1__PairResult *r, cc_speculative *out) {
  if (!r || r->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SPECULATIVE || !r->speculative) return -1;
  const Contactd__V1__Speculative *sp = r->speculative;
  out->separation = sp->separation;
  vec3_copy(out->normal, sp->normal);
  vec3_copy(out->point, sp->point);
  out->stiffness = sp->stiffness;
  out->faces = sp->faces;
  return 0;
}
