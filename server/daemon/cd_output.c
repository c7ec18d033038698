/* cd_output.c — a connection's output: the reorder ring (a slot per
 * request, filled when its reply is ready, written in request order),
 * encoding (on the codec thread when large), the write queue and the
 * slow-reader limit (max_output_bytes), and the reply functions the
 * protocol fills a slot with (cd_proto.h; cd_req.c answers a request). On
 * the owning loop's thread (encode_env, also on the codec thread, touches
 * only its arguments).
 *
 * Two-way with cd_input.c: each frame reserves its slot
 * here, and a flush that frees in-flight room resumes the input held back
 * there (cd__input_resume). Two-way with cd_conn.c: a write that fails
 * closes the connection there, and its TLS handshake's records are written
 * here (cd__output_tls_flush). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cd__conn.h"
#include "cd_fmt.h"
#include "cd_json.h"
#include "cd_log.h"
#include "cd_loop.h"
#include "cd_outmem.h"
#include "cd_server.h"
#include "cd_splice.h"
#include "cd_tls.h"
#include "cd_utf8.h"

static const cd_limits *lim(const cd_conn *c) { return &c->srv->cfg.limits; }

typedef struct cd_wreq {
  uv_write_t w;
  cd_conn *c;
  char *data;
  size_t len;
  struct cd_wreq *next;
} wreq;

static void on_write(uv_write_t *w, int status) {
  wreq *r = (wreq *)w;
  cd_conn *c = r->c;
  c->out_bytes -= r->len;
  cd_outmem_done(c->srv, c, r->len);
  if (c->wq_head == r) { /* writes on a stream complete in order */
    c->wq_head = r->next;
    if (!c->wq_head) c->wq_tail = NULL;
  }
  free(r->data);
  free(r);
  if (status < 0) cd_conn_close(c, uv_strerror(status));
  cd__conn_maybe_finish(c);
  cd_conn_unref(c);
}

/* Queue data (malloc'd, taken) on the socket as it is. */
static void write_raw(cd_conn *c, char *data, size_t len) {
  wreq *r = malloc(sizeof *r);
  if (!r) {
    free(data);
    cd_conn_close(c, "out of memory queueing a reply");
    return;
  }
  r->c = c;
  r->data = data;
  r->len = len;
  r->next = NULL;
  uv_buf_t b = uv_buf_init(data, (unsigned)len); /* len < 4 GiB: cd_output_reply checks */
  c->out_bytes += len;
  cd_outmem_queued(c->srv, c, len);
  cd_conn_ref(c);
  int rc = uv_write(&r->w, (uv_stream_t *)&c->h, &b, 1, on_write);
  if (rc >= 0) {
    if (c->wq_tail) c->wq_tail->next = r;
    else c->wq_head = r;
    c->wq_tail = r;
    cd_outmem_check(c->srv);
  } else {
    c->out_bytes -= len;
    cd_outmem_done(c->srv, c, len);
    free(data);
    free(r);
    cd_conn_unref(c);
    cd_conn_close(c, uv_strerror(rc));
  }
}

void cd__output_tls_flush(cd_conn *c) {
  size_t n = c->tls ? cd_tls_out_pending(c->tls) : 0;
  if (!n || c->state == CD_CONN_CLOSED) return;
  char *b = malloc(n);
  if (!b) {
    cd_conn_close(c, "out of memory for TLS records");
    return;
  }
  write_raw(c, b, cd_tls_take(c->tls, b, n));
}

/* Queue a reply: on a TLS connection its records, else its bytes. The
 * output limits count what goes to the socket. */
static void write_out(cd_conn *c, char *data, size_t len) {
  if (!c->tls) {
    write_raw(c, data, len);
    return;
  }
  cd_tls_status st = cd_tls_write(c->tls, data, len);
  free(data);
  if (st != CD_TLS_OK) {
    cd_conn_close(c, cd_tls_why(c->tls));
    return;
  }
  cd__output_tls_flush(c);
}

/* Reply bytes libuv has not yet handed to the kernel. out_bytes counts every
 * reply until its write callback, which runs on a later loop turn, so replies
 * the kernel took at once would look queued to a client that reads. */
uint64_t cd__output_unsent(cd_conn *c) { return (uint64_t)uv_stream_get_write_queue_size((uv_stream_t *)&c->h); }

void cd__output_flush(cd_conn *c) {
  uint64_t prior = cd__output_unsent(c); /* waiting for the socket before this batch */
  while (c->base_seq < c->next_seq && c->state != CD_CONN_CLOSED) {
    cd_slot *s = &c->ring[c->base_seq % c->ring_cap];
    if (s->state == CD_SLOT_WAITING) break;
    if (s->state == CD_SLOT_READY) {
      cd_stats_latency(&c->srv->stats, (double)(cd_stats_now_ns() - s->t0_ns) / 1000.0);
      char *d = s->data;
      s->data = NULL;
      write_out(c, d, s->len);
    }
    s->state = CD_SLOT_FREE;
    c->base_seq++;
  }
  if (c->state == CD_CONN_CLOSED) return;
  /* Slow reader: bytes the socket would not take were already waiting before
   * this batch, and what waits now exceeds max_output_bytes by more than the
   * oldest pending reply (one large reply, or one batch written into an empty
   * socket, is not a sign of a client that stopped reading). */
  uint64_t head = c->wq_head ? c->wq_head->len : 0, waiting = cd__output_unsent(c);
  if (prior > 0 && waiting > head && waiting - head > lim(c)->max_output_bytes) {
    char why[160];
    snprintf(why, sizeof why, "client is not reading: %llu reply bytes queued (max_output_bytes %llu)",
             (unsigned long long)waiting, (unsigned long long)lim(c)->max_output_bytes);
    c->srv->stats.disconnects_slow_reader++;
    cd_log(CD_LOG_WARN, "slow reader disconnected", "conn=%llu peer=%s queued_bytes=%llu",
           (unsigned long long)c->id, c->peer, (unsigned long long)waiting);
    cd_conn_close(c, why);
    return;
  }
  if (!(c->flags & CD_CF_PROCESSING)) cd__input_resume(c);
  cd__conn_maybe_finish(c);
}

uint64_t cd__output_reserve(cd_conn *c, uint64_t t0_ns) {
  uint64_t seq = c->next_seq++;
  cd_slot *s = &c->ring[seq % c->ring_cap];
  s->state = CD_SLOT_WAITING;
  s->data = NULL;
  s->len = 0;
  s->t0_ns = t0_ns;
  s->request_id = 0;
  s->is_error = 0;
  c->requests++;
  c->srv->stats.requests++;
  c->loop->requests++;
  return seq;
}

static void set_slot(cd_conn *c, uint64_t seq, char *data, size_t len, cd_slot_state st) {
  if (c->state == CD_CONN_CLOSED) {
    free(data);
    return;
  }
  cd_slot *s = &c->ring[seq % c->ring_cap];
  s->data = data;
  s->len = len;
  s->state = st;
  if (seq == c->base_seq) cd__output_flush(c);
}

/* What encode_env made of an envelope. */
typedef enum {
  ENC_OK,           /* *out_p holds it */
  ENC_OVER,         /* a reply (not an Error) would pass max_reply: *st says so, the request fails */
  ENC_NOMEM,        /* a reply (not an Error) found no memory: *st says so, the request fails */
  ENC_ERROR_NOMEM,  /* an Error found no memory: the connection closes */
  ENC_FAILED,       /* the JSON encoder failed otherwise (*why): the connection closes */
} enc_result;

static enc_result frame_over(cd_status *st, size_t total, uint64_t limit) {
  char b1[32], b2[32];
  cd_status_set(st, CD_EXHAUSTED, "",
                "reply would be %s (%zu bytes), over max_reply_bytes %s; ask for fewer pairs or less detail "
                "(no surfaces or patches)",
                cd_fmt_bytes(b1, sizeof b1, total), total, cd_fmt_bytes(b2, sizeof b2, limit));
  return ENC_OVER;
}

static enc_result frame_nomem(cd_status *st, char why[200], int json) {
  snprintf(why, 200, "out of memory");
  cd_status_set(st, CD_EXHAUSTED, "", "out of memory encoding the reply%s; try again", json ? " as JSON" : "");
  return ENC_NOMEM;
}

/* env encoded for the wire (json: a JSON line, else a delimited frame)
 * into *out_p (malloc'd). Over max_reply (0 = none) nothing large was
 * allocated: the frame size is computed first, and JSON encodes in the
 * connection's scratch budget, capped at the limit. scratch holds the JSON
 * encoder's tree and is reset. Touches nothing else: any thread. */
static enc_result encode_env(int json, uint64_t max_reply, cd_budget *scratch, Contactd__V1__Envelope *env,
                             char **out_p, size_t *out_len, cd_status *st, char why[200]) {
  const int is_error = env->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR;
  uint64_t limit = is_error ? 0 : max_reply;
  char *out = NULL;
  size_t len = 0;
  char b1[32];
  *out_p = NULL;
  *out_len = 0;
  int encoder_failed = 0;
  if (json) {
    cd_wire_error we;
    size_t n;
    cd_budget_set_limit(scratch, (size_t)limit);
    char *j = cd_json_encode(&env->base, scratch, &n, &we);
    if (j) {
      out = malloc(n + 1);
      if (out) {
        memcpy(out, j, n);
        out[n] = '\n';
        len = n + 1;
      }
    }
    const int nomem = !j && cd_budget_nomem(scratch);
    int over = !j && !nomem && limit && we.code == CD_WIRE_RESOURCE_EXHAUSTED;
    cd_budget_reset(scratch);
    if (over) {
      cd_status_set(st, CD_EXHAUSTED, "",
                    "reply would be over max_reply_bytes %s as JSON (encoding it needs more); ask for fewer pairs "
                    "or less detail (no surfaces or patches), or use the protobuf framing, which is smaller",
                    cd_fmt_bytes(b1, sizeof b1, limit));
      return ENC_OVER;
    }
    if (!j && !nomem) {
      encoder_failed = 1;
      snprintf(why, 200, "cannot encode a JSON reply: %.160s", we.message);
    }
  } else {
    size_t body;
    size_t total = cd_frame_size(&env->base, &body);
    if (limit && total > limit) return frame_over(st, total, limit);
    out = malloc(total ? total : 1);
    if (out) len = cd_frame_write(&env->base, body, (uint8_t *)out);
  }
  if (!out) {
    if (encoder_failed) return ENC_FAILED;
    if (is_error) {
      snprintf(why, 200, "out of memory");
      return ENC_ERROR_NOMEM;
    }
    return frame_nomem(st, why, json);
  }
  *out_p = out;
  *out_len = len;
  return ENC_OK;
}

/* The frame of env (a reply, never an Error) from its pieces: inner (env's
 * message) lacks its field `field`, whose records lie packed in parts, in
 * order (cd_splice.h). The same bytes encode_env would give, and the same
 * max_reply check before the frame is allocated. Any thread. */
static enc_result splice_env(uint64_t max_reply, Contactd__V1__Envelope *env, const ProtobufCMessage *inner,
                             uint32_t field, const cd_splice_part *parts, size_t nparts, char **out_p,
                             size_t *out_len, cd_status *st, char why[200]) {
  size_t nrec = 0;
  for (size_t k = 0; k < nparts; k++) nrec += parts[k].n;
  cd_splice sp;
  *out_p = NULL;
  *out_len = 0;
  if (cd_splice_frame(env, inner, field, nrec, &sp)) return frame_nomem(st, why, 0);
  if (max_reply && sp.total > max_reply) {
    size_t total = sp.total;
    cd_splice_free(&sp);
    return frame_over(st, total, max_reply);
  }
  char *out = malloc(sp.total);
  if (!out) {
    cd_splice_free(&sp);
    return frame_nomem(st, why, 0);
  }
  char *o = out;
  memcpy(o, sp.head, sp.nhead);
  o += sp.nhead;
  for (size_t k = 0; k < nparts; k++) {
    memcpy(o, parts[k].p, parts[k].n);
    o += parts[k].n;
  }
  memcpy(o, sp.tail, sp.ntail);
  *out_p = out;
  *out_len = sp.total;
  cd_splice_free(&sp);
  return ENC_OK;
}

/* The reply of slot seq, encoded (encode_env's rc, out, len, st, why). */
static void reply_encoded(cd_conn *c, uint64_t seq, uint64_t request_id, enc_result rc, char *out, size_t len,
                          cd_status *st, const char *why) {
  if (c->state == CD_CONN_CLOSED) {
    free(out);
    return;
  }
  if (rc == ENC_NOMEM) { /* this request fails, the connection goes on */
    CD_WARN("out of memory encoding a reply", "conn=%llu peer=%s request_id=%llu", (unsigned long long)c->id,
            c->peer, (unsigned long long)request_id);
    cd_output_reply_error(c, seq, request_id, st);
    return;
  }
  if (rc == ENC_OVER) { /* this request fails, the connection goes on */
    CD_INFO("reply over max_reply_bytes", "conn=%llu peer=%s request_id=%llu", (unsigned long long)c->id, c->peer,
            (unsigned long long)request_id);
    c->srv->stats.replies_over_limit++;
    cd_output_reply_error(c, seq, request_id, st);
    return;
  }
  if (rc == ENC_ERROR_NOMEM) { /* nothing smaller to say */
    CD_WARN("out of memory encoding an error reply", "conn=%llu peer=%s request_id=%llu", (unsigned long long)c->id,
            c->peer, (unsigned long long)request_id);
    cd_conn_close(c, "out of memory encoding a reply");
    return;
  }
  if (rc == ENC_FAILED) {
    CD_ERROR("cannot encode a reply", "conn=%llu error=\"%s\"", (unsigned long long)c->id, why);
    cd_conn_close(c, "cannot encode a reply");
    return;
  }
  if (len >= UINT_MAX) { /* one uv_buf_t holds < 4 GiB */
    free(out);
    cd_status_set(st, CD_EXHAUSTED, "", "the reply is %zu bytes, a single reply must be under 4 GiB", len);
    cd_output_reply_error(c, seq, request_id, st);
    return;
  }
  set_slot(c, seq, out, len, CD_SLOT_READY);
}

void cd_output_reply(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env) {
  if (c->state == CD_CONN_CLOSED) return;
  size_t len = 0;
  char *out = NULL;
  cd_status st;
  char why[200];
  enc_result rc =
      encode_env(c->wire == CD_WIRE_JSON, lim(c)->max_reply_bytes, &c->scratch, env, &out, &len, &st, why);
  reply_encoded(c, seq, env->request_id, rc, out, len, &st, why);
}

/* ---- large replies: encoded on the codec thread ----------------------------
 * A reply whose converted results reach CD_ENCODE_OFF_LOOP_BYTES is encoded
 * on the server's codec thread (which also decodes large bodies): JSON
 * takes ~60 ms per MB, which on the loop would hold up every connection.
 * Its slot waits meanwhile, so replies still leave in request order. */

typedef struct encode_job {
  cd_job job;
  cd_conn *c; /* referenced */
  uint64_t seq, request_id;
  Contactd__V1__Envelope *env;
  void (*release)(void *);
  void *arg;
  const ProtobufCMessage *inner; /* set: env is spliced (splice_env) */
  uint32_t field;
  const cd_splice_part *parts;
  size_t nparts;
  int json;
  uint64_t max_reply;
  enc_result rc;
  char *out;
  size_t len;
  cd_status st;
  char why[200];
} encode_job;

static void encode_run(cd_job *job, cd_worker *w) {
  (void)w;
  encode_job *j = (encode_job *)job;
  cd_budget scratch;
  cd_budget_init(&scratch, 0);
  if (j->inner)
    j->rc = splice_env(j->max_reply, j->env, j->inner, j->field, j->parts, j->nparts, &j->out, &j->len, &j->st,
                       j->why);
  else
    j->rc = encode_env(j->json, j->max_reply, &scratch, j->env, &j->out, &j->len, &j->st, j->why);
  cd_budget_destroy(&scratch);
}

static void encode_done(cd_job *job) {
  encode_job *j = (encode_job *)job;
  cd_conn *c = j->c;
  j->release(j->arg);
  reply_encoded(c, j->seq, j->request_id, j->rc, j->out, j->len, &j->st, j->why);
  free(j);
  cd_conn_unref(c);
}

/* The codec thread's job for env (and its pieces when j->inner), or NULL
 * when the reply is encoded here: small, no codec, or no memory. */
static encode_job *offload(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env, uint64_t size_hint,
                           void (*release)(void *arg), void *arg) {
  cd_server *s = c->srv;
  encode_job *j = NULL;
  if (c->state != CD_CONN_CLOSED && s->codec && size_hint >= CD_ENCODE_OFF_LOOP_BYTES) j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->job.run = encode_run;
  j->job.done = encode_done;
  j->c = c;
  cd_conn_ref(c);
  j->seq = seq;
  j->request_id = env->request_id;
  j->env = env;
  j->release = release;
  j->arg = arg;
  j->json = c->wire == CD_WIRE_JSON;
  j->max_reply = lim(c)->max_reply_bytes;
  return j;
}

void cd_output_reply_large(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env, uint64_t size_hint,
                         void (*release)(void *arg), void *arg) {
  encode_job *j = offload(c, seq, env, size_hint, release, arg);
  if (!j) {
    cd_output_reply(c, seq, env);
    release(arg);
    return;
  }
  c->srv->stats.encoded_off_loop++;
  cd_pool_submit(c->srv->codec, NULL, &j->job);
}

void cd_output_reply_spliced(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env, const ProtobufCMessage *inner,
                           uint32_t field, const cd_splice_part *parts, size_t nparts, uint64_t size_hint,
                           void (*release)(void *arg), void *arg) {
  encode_job *j = offload(c, seq, env, size_hint, release, arg);
  if (!j) {
    if (c->state != CD_CONN_CLOSED) {
      char *out, why[200];
      size_t len;
      cd_status st;
      enc_result rc = splice_env(lim(c)->max_reply_bytes, env, inner, field, parts, nparts, &out, &len, &st, why);
      reply_encoded(c, seq, env->request_id, rc, out, len, &st, why);
    }
    release(arg);
    return;
  }
  j->inner = inner;
  j->field = field;
  j->parts = parts;
  j->nparts = nparts;
  c->srv->stats.encoded_off_loop++;
  cd_pool_submit(c->srv->codec, NULL, &j->job);
}

void cd_output_progress(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env) {
  if (c->state == CD_CONN_CLOSED || seq != c->base_seq) return;
  cd_slot *s = &c->ring[seq % c->ring_cap];
  if (s->state != CD_SLOT_WAITING) return;
  if (cd__output_unsent(c) > lim(c)->max_output_bytes / 2) return; /* advisory: never the reason to drop a reader */
  size_t len = 0;
  char *out = NULL;
  cd_status st;
  char why[200];
  if (encode_env(c->wire == CD_WIRE_JSON, lim(c)->max_reply_bytes, &c->scratch, env, &out, &len, &st, why) != ENC_OK)
    return; /* advisory: dropped */
  if (len >= UINT_MAX) free(out);
  else write_out(c, out, len);
}

void cd_output_reply_stream_error(cd_conn *c, uint64_t seq, uint64_t request_id, uint64_t stream_id,
                                uint64_t sequence, const cd_status *st) {
  Contactd__V1__Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  Contactd__V1__Error err = CONTACTD__V1__ERROR__INIT;
  env.request_id = request_id;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_ERROR;
  env.error = &err;
  err.code = (Contactd__V1__ErrorCode)st->code;
  /* the text may quote client bytes, or be cut mid-character by a printf
   * precision: sent as valid UTF-8 */
  cd_status valid = *st;
  cd_utf8_repair(valid.message);
  cd_utf8_repair(valid.field);
  err.message = valid.message;
  err.field = valid.field;
  err.stream_id = stream_id;
  err.sequence = sequence;
  c->srv->stats.errors++;
  char q[600];
  CD_DEBUG("request failed", "conn=%llu request_id=%llu stream_id=%llu sequence=%llu code=%d error=%s",
           (unsigned long long)c->id, (unsigned long long)request_id, (unsigned long long)stream_id,
           (unsigned long long)sequence, st->code, cd_log_quote(q, sizeof q, st->message));
  cd_output_reply(c, seq, &env);
}

void cd_output_reply_error(cd_conn *c, uint64_t seq, uint64_t request_id, const cd_status *st) {
  cd_output_reply_stream_error(c, seq, request_id, 0, 0, st);
}

void cd_output_skip(cd_conn *c, uint64_t seq) { set_slot(c, seq, NULL, 0, CD_SLOT_SKIP); }
