/* cd_conn.c — connection state: framing, in-flight limit, reorder buffer,
 * write queue with an output-bytes limit, idle timeout, session state. */
#include "cd_conn.h"

#include <assert.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_handlers.h"
#include "cd_json.h"
#include "cd_log.h"
#include "cd_loop.h"
#include "cd_outmem.h"
#include "cd_query.h"
#include "cd_server.h"
#include "cd_stream.h"
#include "cd_utf8.h"
#include "cd_wirecheck.h"

#define READ_CHUNK 65536

static const cd_limits *lim(const cd_conn *c) { return &c->srv->cfg.limits; }
static uint64_t inflight(const cd_conn *c) { return c->next_seq - c->base_seq; }
static void process(cd_conn *c, const uint8_t *data, size_t n);
static void maybe_finish(cd_conn *c);

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
  free(c->geoms);
  cd_frame_decoder_free(&c->dec);
  cd_budget_destroy(&c->scratch);
  free(c);
}

void cd_conn_unref(cd_conn *c) {
  if (atomic_fetch_sub_explicit(&c->refs, 1, memory_order_acq_rel) == 1) conn_free(c);
}

static void on_handle_closed(uv_handle_t *h) {
  cd_conn *c = h->data;
  if (--c->handles_open == 0) {
    /* a failed accept never linked nor counted the connection */
    if (c->linked) cd_server_conn_closed(c->srv, c);
    else cd_server_conn_failed(c->srv, c->loop);
    cd_conn_unref(c);
  }
}

static void mem_unwait(cd_conn *c);
static void mem_frame_done(cd_conn *c);

void cd_conn_close(cd_conn *c, const char *reason) {
  if (c->closing) return;
  c->closing = 1;
  cd_outmem_closing(c->srv, c); /* its queued replies are cancelled as it closes */
  /* its input is dropped: give back its share of request_memory_bytes */
  mem_unwait(c);
  mem_frame_done(c);
  cd_conn_input_released(c->srv, c->line_charge);
  c->line_charge = 0;
  atomic_store_explicit(&c->cancelled, 1, memory_order_relaxed);
  char q[160];
  CD_INFO("connection closed", "conn=%llu peer=%s requests=%llu reason=%s", (unsigned long long)c->id, c->peer,
          (unsigned long long)c->requests, cd_log_quote(q, sizeof q, reason));
  /* Session state goes now so the cache can evict. */
  for (size_t i = 0; i < c->ngeoms; i++) cd_cache_unref(c->geoms[i]);
  c->ngeoms = 0;
  cd_stream_close_all(c);
  uv_os_fd_t fd = -1;
  uv_fileno((uv_handle_t *)&c->h, &fd);
  uv_close((uv_handle_t *)&c->h, on_handle_closed); /* closes the descriptor now */
  if (fd >= 0) cd_loop_fd_closed(fd);
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

static void start_reading(cd_conn *c);

static void linger(cd_conn *c) {
  const cd_limits *l = lim(c);
  c->lingering = 1;
  c->shut.data = c;
  if (uv_shutdown(&c->shut, (uv_stream_t *)&c->h, on_shutdown) != 0) {
    cd_conn_close(c, c->fatal_why);
    return;
  }
  uv_timer_stop(&c->idle);
  uv_timer_start(&c->idle, on_linger_timeout, l->linger_ms, 0);
  start_reading(c);
}

static void maybe_finish(cd_conn *c) {
  if (c->closing || c->lingering) return;
  int quiet = inflight(c) == 0 && c->out_bytes == 0 && c->held_len == 0;
  if (c->fatal && c->base_seq == c->next_seq && c->out_bytes == 0) {
    if (c->eof || c->rejected || c->srv->draining || !lim(c)->linger_ms) cd_conn_close(c, c->fatal_why);
    else linger(c);
  }
  else if (c->eof && quiet) cd_conn_close(c, "peer closed");
  else if (c->srv->draining && quiet) cd_conn_close(c, "server shutting down");
}

void cd_conn_drain(cd_conn *c) {
  if (c->lingering) { /* its error is out; a shutdown does not wait for the linger */
    cd_conn_close(c, c->fatal_why);
    return;
  }
  if (c->reading) {
    uv_read_stop((uv_stream_t *)&c->h);
    c->reading = 0;
  }
  maybe_finish(c);
}

/* ---- output ------------------------------------------------------------ */

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
  if (status < 0 && !c->closing) cd_conn_close(c, uv_strerror(status));
  maybe_finish(c);
  cd_conn_unref(c);
}

static void write_out(cd_conn *c, char *data, size_t len) {
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
  uv_buf_t b = uv_buf_init(data, (unsigned)len); /* len < 4 GiB: cd_conn_reply checks */
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

static void resume_input(cd_conn *c) {
  /* (a connection waiting for request_memory_bytes is resumed by mem_pump) */
  if (c->closing || c->fatal || c->mem_waiting || c->decoding) return;
  if (c->held_len && inflight(c) < c->ring_cap) {
    uint8_t *h = c->held;
    size_t n = c->held_len;
    c->held = NULL;
    c->held_len = 0;
    process(c, h, n);
    free(h);
  }
  if (!c->closing && !c->fatal && !c->eof && !c->reading && !c->srv->draining && c->held_len == 0 &&
      !c->mem_waiting && !c->decoding && inflight(c) < c->ring_cap) {
    start_reading(c);
  }
}


/* Reply bytes libuv has not yet handed to the kernel. out_bytes counts every
 * reply until its write callback, which runs on a later loop turn, so replies
 * the kernel took at once would look queued to a client that reads. */
static uint64_t unsent(cd_conn *c) { return (uint64_t)uv_stream_get_write_queue_size((uv_stream_t *)&c->h); }

static void flush(cd_conn *c) {
  uint64_t prior = unsent(c); /* waiting for the socket before this batch */
  while (c->base_seq < c->next_seq && !c->closing) {
    cd_slot *s = &c->ring[c->base_seq % c->ring_cap];
    if (s->state == CD_SLOT_WAITING) break;
    if (s->state == CD_SLOT_READY) {
      cd_stats_latency(&c->srv->stats, (double)(cd_now_ns() - s->t0_ns) / 1000.0);
      char *d = s->data;
      s->data = NULL;
      write_out(c, d, s->len);
    }
    s->state = CD_SLOT_FREE;
    c->base_seq++;
  }
  if (c->closing) return;
  /* Slow reader: bytes the socket would not take were already waiting before
   * this batch, and what waits now exceeds max_output_bytes by more than the
   * oldest pending reply (one large reply, or one batch written into an empty
   * socket, is not a sign of a client that stopped reading). */
  uint64_t head = c->wq_head ? c->wq_head->len : 0, waiting = unsent(c);
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
  if (!c->processing) resume_input(c);
  maybe_finish(c);
}

uint64_t cd_conn_reserve(cd_conn *c, uint64_t t0_ns) {
  uint64_t seq = c->next_seq++;
  cd_slot *s = &c->ring[seq % c->ring_cap];
  s->state = CD_SLOT_WAITING;
  s->data = NULL;
  s->len = 0;
  s->t0_ns = t0_ns;
  s->is_error = 0;
  c->requests++;
  c->srv->stats.requests++;
  c->loop->requests++;
  return seq;
}

static void set_slot(cd_conn *c, uint64_t seq, char *data, size_t len, cd_slot_state st) {
  if (c->closing) {
    free(data);
    return;
  }
  cd_slot *s = &c->ring[seq % c->ring_cap];
  s->data = data;
  s->len = len;
  s->state = st;
  if (seq == c->base_seq) flush(c);
}

/* What encode_env made of an envelope. */
typedef enum {
  ENC_OK,           /* *out_p holds it */
  ENC_OVER,         /* a reply (not an Error) would pass max_reply: *st says so, the request fails */
  ENC_NOMEM,        /* a reply (not an Error) found no memory: *st says so, the request fails */
  ENC_ERROR_NOMEM,  /* an Error found no memory: the connection closes */
  ENC_FAILED,       /* the JSON encoder failed otherwise (*why): the connection closes */
} enc_result;

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
  char b1[32], b2[32];
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
    if (limit && total > limit) {
      cd_status_set(st, CD_EXHAUSTED, "",
                    "reply would be %s (%zu bytes), over max_reply_bytes %s; ask for fewer pairs or less detail "
                    "(no surfaces or patches)",
                    cd_fmt_bytes(b1, sizeof b1, total), total, cd_fmt_bytes(b2, sizeof b2, limit));
      return ENC_OVER;
    }
    out = malloc(total ? total : 1);
    if (out) len = cd_frame_write(&env->base, body, (uint8_t *)out);
  }
  if (!out) {
    if (encoder_failed) return ENC_FAILED;
    snprintf(why, 200, "out of memory");
    if (is_error) return ENC_ERROR_NOMEM;
    cd_status_set(st, CD_EXHAUSTED, "", "out of memory encoding the reply%s; try again", json ? " as JSON" : "");
    return ENC_NOMEM;
  }
  *out_p = out;
  *out_len = len;
  return ENC_OK;
}

/* The reply of slot seq, encoded (encode_env's rc, out, len, st, why). */
static void reply_encoded(cd_conn *c, uint64_t seq, uint64_t request_id, enc_result rc, char *out, size_t len,
                          cd_status *st, const char *why) {
  if (c->closing) {
    free(out);
    return;
  }
  if (rc == ENC_NOMEM) { /* this request fails, the connection goes on */
    CD_WARN("out of memory encoding a reply", "conn=%llu peer=%s request_id=%llu", (unsigned long long)c->id,
            c->peer, (unsigned long long)request_id);
    cd_conn_reply_error(c, seq, request_id, st);
    return;
  }
  if (rc == ENC_OVER) { /* this request fails, the connection goes on */
    CD_INFO("reply over max_reply_bytes", "conn=%llu peer=%s request_id=%llu", (unsigned long long)c->id, c->peer,
            (unsigned long long)request_id);
    c->srv->stats.replies_over_limit++;
    cd_conn_reply_error(c, seq, request_id, st);
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
    cd_conn_reply_error(c, seq, request_id, st);
    return;
  }
  set_slot(c, seq, out, len, CD_SLOT_READY);
}

void cd_conn_reply(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env) {
  if (c->closing) return;
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

void cd_conn_reply_large(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env, uint64_t size_hint,
                         void (*release)(void *arg), void *arg) {
  cd_server *s = c->srv;
  encode_job *j = NULL;
  if (!c->closing && s->codec && size_hint >= CD_ENCODE_OFF_LOOP_BYTES) j = calloc(1, sizeof *j);
  if (!j) {
    cd_conn_reply(c, seq, env);
    release(arg);
    return;
  }
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
  s->stats.encoded_off_loop++;
  cd_pool_submit(s->codec, NULL, &j->job);
}

void cd_conn_progress(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env) {
  if (c->closing || seq != c->base_seq) return;
  cd_slot *s = &c->ring[seq % c->ring_cap];
  if (s->state != CD_SLOT_WAITING) return;
  if (unsent(c) > lim(c)->max_output_bytes / 2) return; /* advisory: never the reason to drop a reader */
  size_t len = 0;
  char *out = NULL;
  cd_status st;
  char why[200];
  if (encode_env(c->wire == CD_WIRE_JSON, lim(c)->max_reply_bytes, &c->scratch, env, &out, &len, &st, why) != ENC_OK)
    return; /* advisory: dropped */
  if (len >= UINT_MAX) free(out);
  else write_out(c, out, len);
}

void cd_conn_reply_stream_error(cd_conn *c, uint64_t seq, uint64_t request_id, uint64_t stream_id,
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
  cd_conn_reply(c, seq, &env);
}

void cd_conn_reply_error(cd_conn *c, uint64_t seq, uint64_t request_id, const cd_status *st) {
  cd_conn_reply_stream_error(c, seq, request_id, 0, 0, st);
}

void cd_conn_skip(cd_conn *c, uint64_t seq) { set_slot(c, seq, NULL, 0, CD_SLOT_SKIP); }

/* ---- input ------------------------------------------------------------- */

/* Best effort: the request id of a frame that failed to decode. */
static uint64_t proto_request_id(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  if (n >= 2 && p[0] == 0x08 && cd_varint_decode(p + 1, n - 1, &v) > 0) return v;
  return 0;
}

/* Best effort, bounded: the top-level "requestId" / "request_id" of a JSON
 * line that failed to decode, found by scanning at most the first
 * JSON_ID_SCAN bytes by hand (never a second, unbudgeted parse of the line). */
#define JSON_ID_SCAN 4096
static uint64_t json_request_id(const char *s, size_t n) {
  if (n > JSON_ID_SCAN) n = JSON_ID_SCAN;
  int depth = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '{' || ch == '[') depth++;
    else if (ch == '}' || ch == ']') depth--;
    else if (ch == '"') {
      size_t k0 = ++i;
      while (i < n && s[i] != '"') i += s[i] == '\\' ? 2 : 1;
      if (i >= n) return 0;
      size_t klen = i - k0;
      if (depth != 1 || !((klen == 9 && memcmp(s + k0, "requestId", 9) == 0) ||
                          (klen == 10 && memcmp(s + k0, "request_id", 10) == 0)))
        continue;
      size_t j = i + 1;
      while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n')) j++;
      if (j >= n || s[j] != ':') continue; /* a string value, not a key */
      j++;
      while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n')) j++;
      if (j < n && s[j] == '"') j++;
      uint64_t id = 0;
      int digits = 0;
      while (j < n && s[j] >= '0' && s[j] <= '9' && digits < 20) {
        id = id * 10 + (uint64_t)(s[j++] - '0');
        digits++;
      }
      return id;
    }
  }
  return 0;
}

/* ---- decoding ------------------------------------------------------------
 * A request body is decoded (protobuf-c or cJSON, then the string checks)
 * on the loop when it is small. A body of CD_DECODE_OFF_LOOP_BYTES or more
 * goes to the server's codec thread with its bytes (the frame decoder's
 * buffer or the JSON line buffer, handed over, not copied) and their share
 * of request_bytes: its connection stops reading until it is decoded (so
 * its requests are still handled in order), every other connection goes
 * on. One thread, so at most one decode at a time allocates outside
 * request_memory_bytes before its request is charged: the same bound as a
 * decode on the loop. */

/* Decode body into r->env (and r->request_id), or fill *st. Touches only r:
 * any thread. */
static int decode_body(cd_req *r, const uint8_t *body, size_t len, int json, cd_status *st) {
  cd_wire_error we;
  memset(&we, 0, sizeof we);
  ProtobufCMessage *m = json ? cd_json_decode(&contactd__v1__envelope__descriptor, (const char *)body, len,
                                              &r->budget, &we)
                             : cd_frame_unpack(&contactd__v1__envelope__descriptor, body, len, &r->budget, &we);
  if (!m) {
    st->code = we.code ? we.code : CD_INVALID;
    snprintf(st->field, sizeof st->field, "%s", we.field);
    snprintf(st->message, sizeof st->message, "%s%s", json ? "invalid JSON envelope: " : "invalid envelope: ",
             we.message[0] ? we.message : "cannot decode");
    r->request_id = json ? json_request_id((const char *)body, len) : proto_request_id(body, len);
    return 1;
  }
  r->request_id = ((Contactd__V1__Envelope *)m)->request_id;
  /* replies must not echo invalid strings, and a NUL would cut a string
   * short (cd_json_decode checks JSON strings as it converts them) */
  if (!json && cd_wirecheck_strings(&contactd__v1__envelope__descriptor, body, len, &we) != 0) {
    st->code = CD_INVALID;
    snprintf(st->field, sizeof st->field, "%s", we.field);
    snprintf(st->message, sizeof st->message, "%s", we.message);
    return 1;
  }
  r->env = (Contactd__V1__Envelope *)m;
  return 0;
}

/* A decoded request (or its decoding error) on the loop: what decoding
 * allocated is charged until the request is answered (cd_req_free). */
static void body_decoded(cd_req *r, int failed, const cd_status *st) {
  r->charged = r->budget.held;
  cd_conn_input_charge(r->conn->srv, r->charged);
  if (failed) cd_req_fail(r, st);
  else cd_handle(r);
}

typedef struct decode_job {
  cd_job job;
  cd_req *r;
  uint8_t *body; /* owned */
  size_t len;
  int json;
  uint64_t charge; /* the body's share of request_bytes */
  int failed;
  cd_status st;
} decode_job;

static void decode_run(cd_job *job, cd_worker *w) {
  (void)w;
  decode_job *j = (decode_job *)job;
  j->failed = decode_body(j->r, j->body, j->len, j->json, &j->st);
  free(j->body); /* (a large free: here rather than on the loop) */
  j->body = NULL;
}

static void decode_done(cd_job *job) {
  decode_job *j = (decode_job *)job;
  cd_req *r = j->r;
  cd_conn *c = r->conn;
  cd_conn_ref(c);
  c->decoding = 0;
  if (c->closing) {
    cd_req_free(r); /* nobody to answer */
  } else {
    body_decoded(r, j->failed, &j->st);
  }
  cd_conn_input_released(c->srv, j->charge);
  free(j);
  if (!c->closing) {
    resume_input(c);
    maybe_finish(c);
  }
  cd_conn_unref(c);
}

/* Hand r's body to the codec thread: 1 if it went, 0 to decode it here. */
static int decode_off_loop(cd_conn *c, cd_req *r, const uint8_t *body, size_t len, int json) {
  cd_server *s = c->srv;
  if (!s->codec || len < CD_DECODE_OFF_LOOP_BYTES) return 0;
  decode_job *j = calloc(1, sizeof *j);
  if (!j) return 0;
  if (json && body == (const uint8_t *)c->line) { /* the line buffer, with its charge */
    j->body = (uint8_t *)c->line;
    j->charge = c->line_charge;
    c->line = NULL;
    c->line_cap = 0;
    c->line_charge = 0;
  } else if (!json && (j->body = cd_frame_decoder_take(&c->dec, body)) != NULL) {
    j->charge = c->frame_charge; /* the announced length, taken by mem_take */
    c->frame_charge = 0;
  } else if ((j->body = malloc(len ? len : 1)) != NULL) { /* in place in a read: copied */
    memcpy(j->body, body, len);
  } else {
    free(j);
    return 0;
  }
  j->job.run = decode_run;
  j->job.done = decode_done;
  j->r = r;
  j->len = len;
  j->json = json;
  c->decoding = 1;
  s->stats.decoded_off_loop++;
  if (c->reading) { /* the rest of this read is held by process() */
    uv_read_stop((uv_stream_t *)&c->h);
    c->reading = 0;
  }
  cd_pool_submit(s->codec, NULL, &j->job);
  return 1;
}

static void handle_body(cd_conn *c, const uint8_t *body, size_t len, int json) {
  uint64_t t0 = cd_now_ns();
  uint64_t seq = cd_conn_reserve(c, t0);
  cd_req *r = cd_req_new(c, seq, t0);
  if (!r) {
    cd_status st;
    cd_status_set(&st, CD_EXHAUSTED, "", "out of memory");
    cd_conn_reply_error(c, seq, 0, &st);
    return;
  }
  if (decode_off_loop(c, r, body, len, json)) return;
  cd_status st;
  int failed = decode_body(r, body, len, json, &st);
  body_decoded(r, failed, &st);
}

/* Answer msg and close once the replies before it are written: the input
 * cannot go on (framing lost, or a frame arriving too slowly). why is
 * the close reason logged, *counter its statistic. */
static void fatal_input(cd_conn *c, int code, const char *msg, const char *why, _Atomic uint64_t *counter) {
  (*counter)++;
  if (inflight(c) >= c->ring_cap) { /* no slot left for the error: just hang up */
    cd_conn_close(c, msg);
    return;
  }
  uint64_t seq = cd_conn_reserve(c, cd_now_ns());
  cd_status st;
  cd_status_set(&st, code, "", "%s", msg);
  c->fatal = 1;
  c->fatal_why = why;
  if (c->reading) {
    uv_read_stop((uv_stream_t *)&c->h);
    c->reading = 0;
  }
  cd_conn_reply_error(c, seq, 0, &st);
  maybe_finish(c);
}

static void fatal_framing(cd_conn *c, int code, const char *msg) {
  fatal_input(c, code, msg, "framing error", &c->srv->stats.disconnects_framing);
}

static int is_blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r') return 0;
  return 1;
}

static void json_line(cd_conn *c, const char *s, size_t n) {
  if (is_blank(s, n)) return;
  handle_body(c, (const uint8_t *)s, n, 1);
}

static void hold(cd_conn *c, const uint8_t *data, size_t n) {
  uint8_t *h = malloc(n);
  if (!h) {
    cd_conn_close(c, "out of memory holding input");
    return;
  }
  memcpy(h, data, n);
  free(c->held);
  c->held = h;
  c->held_len = n;
  if (c->reading) {
    uv_read_stop((uv_stream_t *)&c->h);
    c->reading = 0;
  }
}


/* ---- input memory (request_memory_bytes) --------------------------------
 * Every frame is taken before it is buffered or decoded: its announced
 * length (1 for a JSON line, whose length is unknown until its newline)
 * must fit under request_memory_bytes next to what the server holds
 * (frames being received, JSON line buffers, decoded requests not yet
 * answered), or the server must hold nothing at all (so a lone frame always
 * gets in). A connection whose frame does not fit stops reading, keeps the
 * rest of its input (hold), and joins a queue; a frame is taken only when
 * no earlier connection waits, so a large frame is not starved by small
 * ones. Room freed anywhere (a request answered, a frame decoded, a
 * connection closed) starts the server's idle handle, which lets waiting
 * connections in, oldest first, on the loop's next turn. */

static void mem_pump(uv_idle_t *h);
static void mem_sweep(uv_timer_t *t);

/* Threads: request_bytes and its peak are atomic; the queue of waiting
 * connections, its length (mem_waiters, also read without the lock) and
 * every connection's mem_next / mem_waiting are under s->mem_mu. A
 * connection joins and leaves the queue on its own loop; another loop only
 * reads a queued connection's `loop` (fixed for its life) to wake that loop,
 * and only a connection's own loop lets it in (mem_pump). */
static void note_peak(cd_server *s, uint64_t now) {
  uint64_t p = atomic_load_explicit(&s->request_bytes_peak, memory_order_relaxed);
  while (now > p && !atomic_compare_exchange_weak_explicit(&s->request_bytes_peak, &p, now, memory_order_relaxed,
                                                           memory_order_relaxed)) {
  }
}

void cd_conn_input_charge(cd_server *s, uint64_t n) {
  note_peak(s, atomic_fetch_add(&s->request_bytes, n) + n);
}

/* Charge need when it fits under request_memory_bytes next to what the
 * server holds, or when the server holds nothing; 1 when charged. */
static int mem_reserve(cd_server *s, uint64_t need) {
  const uint64_t limit = s->cfg.limits.request_memory_bytes;
  uint64_t cur = atomic_load(&s->request_bytes);
  do {
    if (limit && cur != 0 && (need > limit || cur > limit - need)) return 0;
  } while (!atomic_compare_exchange_weak(&s->request_bytes, &cur, cur + need));
  note_peak(s, cur + need);
  return 1;
}

/* The waiting connections are let in on their own loops, oldest first:
 * the pump of the oldest's loop runs, and hands over to the next one's loop
 * when that is another. */
static void run_pump_task(cd_task *t) {
  cd_loop *l = (cd_loop *)((char *)t - offsetof(cd_loop, pump_task));
  atomic_store(&l->pump_posted, 0);
  if (!uv_is_closing((uv_handle_t *)&l->mem_pump)) uv_idle_start(&l->mem_pump, mem_pump);
}

static void kick_pump(cd_loop *l) {
  if (l == cd_loop_current()) {
    if (!uv_is_closing((uv_handle_t *)&l->mem_pump)) uv_idle_start(&l->mem_pump, mem_pump);
  } else if (!atomic_exchange(&l->pump_posted, 1)) { /* one pump task in its inbox at a time */
    l->pump_task.run = run_pump_task;
    if (cd_loop_post(l, &l->pump_task) != 0) atomic_store(&l->pump_posted, 0);
  }
}

/* Wake the loop of the oldest waiting connection, if any. */
static void kick_oldest(cd_server *s) {
  pthread_mutex_lock(&s->mem_mu);
  if (s->mem_wait_head) kick_pump(s->mem_wait_head->loop);
  pthread_mutex_unlock(&s->mem_mu);
}

void cd_conn_input_released(cd_server *s, uint64_t n) {
  if (n) atomic_fetch_sub(&s->request_bytes, n);
  /* seq_cst with mem_wait's increment and its own wake-up: a connection
   * that queued just now is either seen here or sees this room itself */
  if (atomic_load(&s->mem_waiters)) kick_oldest(s);
}

/* The size a connection's next frame asks for. */
static uint64_t mem_need(const cd_conn *c) { return c->wire == CD_WIRE_JSON ? 1 : c->dec.body_len; }

static void mem_admit(cd_conn *c, uint64_t need) {
  c->frame_charge = need;
  c->admitted = 1;
  c->admit_ns = cd_now_ns();
}

/* Take the next frame of c when it fits and nobody is queued ahead. */
static int mem_take(cd_conn *c) {
  cd_server *s = c->srv;
  const uint64_t need = mem_need(c);
  if (atomic_load(&s->mem_waiters) || !mem_reserve(s, need)) return 0;
  mem_admit(c, need);
  return 1;
}

/* The frame (or line) taken by mem_take is decoded, or dropped. */
static void mem_frame_done(cd_conn *c) {
  const uint64_t n = c->frame_charge;
  c->frame_charge = 0;
  c->admitted = 0;
  if (n) cd_conn_input_released(c->srv, n);
}

static void sweep_start(cd_loop *l) {
  const cd_limits *lm = &l->srv->cfg.limits;
  if (uv_is_active((uv_handle_t *)&l->mem_sweep) || uv_is_closing((uv_handle_t *)&l->mem_sweep)) return;
  uint64_t period = lm->frame_grace_ms / 4;
  period = period < 50 ? 50 : period > 1000 ? 1000 : period;
  uv_timer_start(&l->mem_sweep, mem_sweep, period, period);
}

static void run_sweep_task(cd_task *t) {
  cd_loop *l = (cd_loop *)((char *)t - offsetof(cd_loop, sweep_task));
  atomic_store(&l->sweep_posted, 0);
  if (atomic_load(&l->srv->mem_waiters)) sweep_start(l);
}

static void mem_wait(cd_conn *c) {
  cd_server *s = c->srv;
  if (c->mem_waiting) return;
  pthread_mutex_lock(&s->mem_mu);
  c->mem_waiting = 1;
  c->mem_next = NULL;
  if (s->mem_wait_tail) s->mem_wait_tail->mem_next = c;
  else s->mem_wait_head = c;
  s->mem_wait_tail = c;
  atomic_fetch_add(&s->mem_waiters, 1);
  /* Room freed by a loop that saw no waiter yet is seen by the oldest's
   * pump, which runs now (it stops at once when nothing fits). */
  kick_pump(s->mem_wait_head->loop);
  pthread_mutex_unlock(&s->mem_mu);
  s->stats.input_waits++;
  if (!s->cfg.limits.frame_min_rate_bytes) return;
  /* every loop sweeps its own connections while any connection waits */
  for (int i = 0; i < s->nloops; i++) {
    cd_loop *l = &s->loops[i];
    if (l == cd_loop_current()) {
      sweep_start(l);
    } else if (!atomic_exchange(&l->sweep_posted, 1)) {
      l->sweep_task.run = run_sweep_task;
      if (cd_loop_post(l, &l->sweep_task) != 0) atomic_store(&l->sweep_posted, 0);
    }
  }
}

static void mem_unwait_locked(cd_server *s, cd_conn *c) {
  cd_conn *prev = NULL;
  for (cd_conn *q = s->mem_wait_head; q; prev = q, q = q->mem_next)
    if (q == c) {
      if (prev) prev->mem_next = c->mem_next;
      else s->mem_wait_head = c->mem_next;
      if (s->mem_wait_tail == c) s->mem_wait_tail = prev;
      atomic_fetch_sub(&s->mem_waiters, 1);
      break;
    }
  c->mem_waiting = 0;
  c->mem_next = NULL;
}

static void mem_unwait(cd_conn *c) {
  cd_server *s = c->srv;
  if (!c->mem_waiting) return;
  pthread_mutex_lock(&s->mem_mu);
  mem_unwait_locked(s, c);
  /* the next one may fit where this one did not */
  if (s->mem_wait_head) kick_pump(s->mem_wait_head->loop);
  pthread_mutex_unlock(&s->mem_mu);
}

/* Stop reading c until its next frame is taken; the unprocessed rest of
 * the current read (if any) is kept. */
static void mem_pause(cd_conn *c, const uint8_t *data, size_t n) {
  mem_wait(c);
  if (n) {
    hold(c, data, n);
  } else if (c->reading) {
    uv_read_stop((uv_stream_t *)&c->h);
    c->reading = 0;
  }
}

/* A JSON line is answered (or skipped): its admission ends, and the
 * buffer that assembled it across reads is let go with its charge. Kept,
 * it would hold request_memory_bytes for the connection's life: a 60 MB
 * line its 64 MB, and even a line of a few KB split over two reads its 4-64
 * KB, which idle JSON connections together could keep until no other
 * frame fits. */
static void json_line_done(cd_conn *c) {
  mem_frame_done(c);
  if (c->line_cap) {
    free(c->line);
    c->line = NULL;
    c->line_cap = 0;
    cd_conn_input_released(c->srv, c->line_charge);
    c->line_charge = 0;
  }
}

static void mem_pump(uv_idle_t *h) {
  cd_loop *l = h->data;
  cd_server *s = l->srv;
  uv_idle_stop(h);
  pthread_mutex_lock(&s->mem_mu);
  while (s->mem_wait_head) {
    cd_conn *c = s->mem_wait_head;
    if (c->loop != l) { /* the oldest waiter is another loop's */
      kick_pump(c->loop);
      break;
    }
    const uint64_t need = mem_need(c); /* c is this loop's */
    if (!mem_reserve(s, need)) break;
    mem_unwait_locked(s, c);
    pthread_mutex_unlock(&s->mem_mu); /* its input may take or free memory */
    mem_admit(c, need);
    cd_conn_ref(c);
    resume_input(c); /* its kept input, then reading again */
    cd_conn_unref(c);
    pthread_mutex_lock(&s->mem_mu);
  }
  pthread_mutex_unlock(&s->mem_mu);
}

/* A frame (or JSON line) holding request memory arrived too slowly while
 * others waited for it: its memory is given back now, the connection is
 * answered with the reason and closed (its framing cannot go on). */
static void slow_sender(cd_conn *c, uint64_t got, double took_s) {
  const cd_limits *l = lim(c);
  char what[64], msg[400];
  if (c->wire == CD_WIRE_JSON) snprintf(what, sizeof what, "a JSON line");
  else snprintf(what, sizeof what, "a frame of %llu bytes", (unsigned long long)c->dec.body_len);
  snprintf(msg, sizeof msg,
           "%s arrived too slowly while other connections waited for request memory "
           "(request_memory_bytes): %llu bytes in %.1f s, where frame_grace_ms %llu plus frame_min_rate_bytes "
           "%llu per second allow %.1f s",
           what, (unsigned long long)got, took_s, (unsigned long long)l->frame_grace_ms,
           (unsigned long long)l->frame_min_rate_bytes,
           (double)l->frame_grace_ms * 1e-3 + (double)got / (double)l->frame_min_rate_bytes);
  mem_frame_done(c);
  cd_conn_input_released(c->srv, c->line_charge);
  c->line_charge = 0;
  CD_WARN("slow sender", "conn=%llu peer=%s %s", (unsigned long long)c->id, c->peer, msg);
  fatal_input(c, CD_EXHAUSTED, msg, "slow sender", &c->srv->stats.disconnects_slow_sender);
}

/* While any connection waits for request memory: every connection that
 * holds an admitted frame, is being read (not paused by the server) and
 * has received fewer bytes of it than frame_min_rate_bytes per second
 * since frame_grace_ms after its admission is a slow sender. Without
 * waiters the timer stops: a slow frame then costs nobody anything. */
static void sweep_loop(cd_loop *lp);

static void mem_sweep(uv_timer_t *t) { sweep_loop(t->data); }

static void sweep_loop(cd_loop *lp) {
  cd_server *s = lp->srv;
  const cd_limits *l = &s->cfg.limits;
  if (!atomic_load(&s->mem_waiters) || !l->frame_min_rate_bytes) {
    uv_timer_stop(&lp->mem_sweep);
    return;
  }
  const uint64_t now = cd_now_ns();
  for (cd_conn *c = lp->conns, *next; c; c = next) {
    next = c->next;
    if (!c->admitted || c->closing || c->fatal || !c->reading || c->held_len) continue;
    const uint64_t got = c->wire == CD_WIRE_JSON ? c->line_len : cd_frame_decoder_pending(&c->dec);
    const double took_s = (double)(now - c->admit_ns) * 1e-9;
    if (took_s > (double)l->frame_grace_ms * 1e-3 + (double)got / (double)l->frame_min_rate_bytes)
      slow_sender(c, got, took_s);
  }
}

static void process(cd_conn *c, const uint8_t *data, size_t n) {
  c->processing++;
  size_t off = 0;
  while (off < n && !c->closing && !c->fatal) {
    if (inflight(c) >= c->ring_cap || c->decoding) {
      hold(c, data + off, n - off);
      break;
    }
    if (c->wire == CD_WIRE_UNKNOWN) c->wire = data[off] == '{' ? CD_WIRE_JSON : CD_WIRE_PROTO;
    if (c->wire == CD_WIRE_PROTO) {
      size_t used = 0, flen = 0;
      const uint8_t *frame = NULL;
      cd_frame_status fs = CD_FRAME_OK;
      if (!c->admitted) {
        /* the next frame's length first: it is taken only if it fits */
        fs = cd_frame_decoder_header(&c->dec, data + off, n - off, &used);
        off += used;
        if (fs == CD_FRAME_OK && !mem_take(c)) {
          mem_pause(c, data + off, n - off);
          break;
        }
      }
      if (fs == CD_FRAME_OK) {
        fs = cd_frame_decoder_feed(&c->dec, data + off, n - off, &used, &frame, &flen);
        off += used;
      }
      if (fs == CD_FRAME_OK) {
        handle_body(c, frame, flen, 0);
        mem_frame_done(c);
        cd_frame_decoder_done(&c->dec);
      } else if (fs == CD_FRAME_NEED_MORE) {
        break;
      } else {
        char msg[200];
        if (fs == CD_FRAME_TOO_LARGE)
          snprintf(msg, sizeof msg, "frame length %llu exceeds the limit of %llu bytes (max_frame_bytes)",
                   (unsigned long long)c->dec.announced, (unsigned long long)lim(c)->max_frame_bytes);
        else
          snprintf(msg, sizeof msg, "framing lost: %s", cd_frame_strerror(fs));
        fatal_framing(c, fs == CD_FRAME_TOO_LARGE || fs == CD_FRAME_NOMEM ? CD_EXHAUSTED : CD_INVALID, msg);
      }
    } else {
      if (!c->admitted && !mem_take(c)) { /* a new line */
        mem_pause(c, data + off, n - off);
        break;
      }
      const uint8_t *nl = memchr(data + off, '\n', n - off);
      size_t take = nl ? (size_t)(nl - (data + off)) : n - off;
      if (!c->line_overflow && c->line_len + take > lim(c)->max_frame_bytes) {
        /* The line is too long: answer once, skip to its end, keep going. */
        c->line_overflow = 1;
        c->line_len = 0;
        uint64_t seq = cd_conn_reserve(c, cd_now_ns());
        cd_status st;
        cd_status_set(&st, CD_EXHAUSTED, "", "JSON line longer than the limit of %llu bytes (max_frame_bytes)",
                      (unsigned long long)lim(c)->max_frame_bytes);
        cd_conn_reply_error(c, seq, 0, &st);
      }
      if (c->line_overflow) {
        off += take;
      } else if (nl && c->line_len == 0) {
        json_line(c, (const char *)data + off, take); /* whole line in the buffer: no copy */
        off += take;
      } else {
        if (c->line_len + take > c->line_cap) {
          size_t nc = c->line_cap ? c->line_cap : 4096;
          while (nc < c->line_len + take) nc *= 2;
          char *nb = realloc(c->line, nc);
          if (!nb) {
            cd_conn_close(c, "out of memory assembling a JSON line");
            break;
          }
          cd_conn_input_charge(c->srv, nc - c->line_cap);
          c->line_charge += nc - c->line_cap;
          c->line = nb;
          c->line_cap = nc;
        }
        memcpy(c->line + c->line_len, data + off, take);
        c->line_len += take;
        off += take;
        if (nl) {
          size_t ln = c->line_len;
          c->line_len = 0;
          json_line(c, c->line, ln);
        }
      }
      if (nl) {
        off++; /* the newline */
        c->line_overflow = 0;
        json_line_done(c);
      }
    }
  }
  c->processing--;
  if (!c->processing && !c->closing) {
    /* Replies produced while processing may have freed room. */
    flush(c);
  }
}

static void on_idle(uv_timer_t *t) {
  cd_conn *c = t->data;
  if (c->closing) {
  } else if (inflight(c) == 0 && c->out_bytes == 0) {
    c->srv->stats.disconnects_idle++;
    cd_conn_close(c, "idle timeout");
  } else {
    uv_timer_again(t);
  }
}

static void touch(cd_conn *c) {
  if (lim(c)->idle_timeout_ms) uv_timer_again(&c->idle);
}

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



static void on_read_conn(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  cd_conn *c = st->data;
  cd_loop *l = c->loop; /* c may be gone after on_read_conn */
  on_read_conn(st, nread, buf);
  if (buf->base && buf->base == l->rbuf) l->rbuf_busy = 0;
  else free(buf->base);
}

static void on_read_conn(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  cd_conn *c = st->data;
  if (c->lingering) { /* dropped; the client's end or linger_ms closes */
    if (!c->closing && nread < 0) cd_conn_close(c, c->fatal_why);
    return;
  }
  if (nread > 0) {
    touch(c);
    cd_conn_ref(c);
    process(c, (const uint8_t *)buf->base, (size_t)nread);
    cd_conn_unref(c);
  } else if (nread < 0 && !c->closing) {
    if (nread == UV_EOF) {
      c->eof = 1;
      uv_read_stop(st);
      c->reading = 0;
      size_t pend = c->wire == CD_WIRE_PROTO ? cd_frame_decoder_pending(&c->dec) : 0;
      cd_conn_ref(c);
      if (c->wire == CD_WIRE_JSON && c->line_len && !c->line_overflow) {
        size_t ln = c->line_len;
        c->line_len = 0;
        c->processing++;
        json_line(c, c->line, ln); /* a last line without its newline */
        json_line_done(c);
        c->processing--;
        flush(c);
      } else if (pend && !c->fatal) {
        char msg[160];
        snprintf(msg, sizeof msg, "truncated frame: the connection ended %zu bytes into an unfinished frame", pend);
        fatal_framing(c, CD_INVALID, msg);
      }
      maybe_finish(c);
      cd_conn_unref(c);
    } else {
      /* (on_alloc found no memory for the read: libuv reports ENOBUFS) */
      cd_conn_close(c, nread == UV_ENOBUFS ? "out of memory for a read buffer" : uv_strerror((int)nread));
    }
  }
}

static void start_reading(cd_conn *c) {
  if (c->reading || c->closing) return;
  if (uv_read_start((uv_stream_t *)&c->h, on_alloc, on_read) == 0) c->reading = 1;
}

/* ---- accept ------------------------------------------------------------ */

int cd_conn_adopt(cd_loop *lp, uv_os_sock_t fd, int is_tcp) {
  /* lp->load counts it since the hand-off, and until cd_server_conn_closed
   * (or cd_server_conn_failed when it never gets that far), so that a
   * shutdown never sees it neither on its way nor open */
  cd_server *s = lp->srv;
  if (atomic_load(&s->draining)) { /* accepted just before the shutdown: not served */
    close(fd);
    cd_server_conn_failed(s, lp);
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
  uv_timer_init(lp->uv, &c->idle);
  c->idle.data = c;
  c->handles_open = 2;
  if ((is_tcp ? uv_tcp_open(&c->h.tcp, fd) : uv_pipe_open(&c->h.pipe, fd)) != 0) {
    close(fd);
    c->closing = 1;
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
  c->linked = 1;
  const uint64_t open_now = atomic_fetch_add(&s->stats.connections, 1) + 1;
  s->stats.connections_total++;
  lp->connections++;
  lp->connections_total++;
  if (is_tcp) {
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
  } else {
    snprintf(c->peer, sizeof c->peer, "unix");
  }
  const cd_limits *l = lim(c);
  c->ring_cap = l->max_inflight_per_conn;
  c->ring = calloc(c->ring_cap, sizeof *c->ring);
  cd_frame_decoder_init(&c->dec, l->max_frame_bytes);
  cd_budget_init(&c->scratch, 0);
  c->next_stream_id = 1;
  CD_DEBUG("connection accepted", "conn=%llu peer=%s", (unsigned long long)c->id, c->peer);
  if (!c->ring) {
    c->ring_cap = 0;
    cd_conn_close(c, "out of memory for the connection's request ring");
    return 0;
  }
  if (open_now > l->max_connections) {
    s->stats.connections_rejected++;
    /* One UNAVAILABLE error (protobuf framing: the client may speak JSON,
     * but it cannot have said so yet), then close. */
    c->wire = CD_WIRE_PROTO;
    c->rejected = 1; /* lingering would hold a slot it does not have */
    char msg[128];
    snprintf(msg, sizeof msg, "too many connections (max_connections %llu)", (unsigned long long)l->max_connections);
    fatal_framing(c, CD_UNAVAILABLE, msg);
    return 0;
  }
  if (l->idle_timeout_ms) uv_timer_start(&c->idle, on_idle, l->idle_timeout_ms, l->idle_timeout_ms);
  start_reading(c);
  return 0;
}

/* ---- session ----------------------------------------------------------- */

int cd_conn_hold_geometry(cd_conn *c, cd_cache_entry *e) {
  for (size_t i = 0; i < c->ngeoms; i++)
    if (c->geoms[i] == e) return 0;
  if (c->ngeoms == c->geoms_cap) {
    size_t nc = c->geoms_cap ? 2 * c->geoms_cap : 8;
    cd_cache_entry **ng = realloc(c->geoms, nc * sizeof *ng);
    if (!ng) return -1;
    c->geoms = ng;
    c->geoms_cap = nc;
  }
  c->geoms[c->ngeoms++] = e;
  cd_cache_ref(e);
  return 0;
}

int cd_conn_release_geometry(cd_conn *c, cd_cache_entry *e) {
  for (size_t i = 0; i < c->ngeoms; i++)
    if (c->geoms[i] == e) {
      c->geoms[i] = c->geoms[--c->ngeoms];
      cd_cache_unref(e);
      return 1;
    }
  return 0;
}
