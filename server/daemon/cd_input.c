/* cd_input.c — a connection's input: framing (protobuf delimited, or one
 * JSON object per line), the in-flight limit (input is held back while
 * max_inflight_per_conn requests are unanswered), request memory admission
 * (request_memory_bytes, slow senders), decoding, and the hand-off of each
 * decoded request to the protocol (cd_proto.h). On the owning loop's
 * thread; the ownership rules are cd_loop.h's.
 *
 * Two-way with cd_conn.c: the socket's bytes come from there, and the
 * input fails the connection or stops its reading.
 * Two-way with cd_output.c: each frame reserves its reply slot there and
 * errors are answered through it; written replies free in-flight room,
 * which resumes the input held back here. Backpressure runs both ways.
 * Two-way with cd_req.c: requests are made here (and those that fail to
 * decode answered there); a request's end gives its memory back here. */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cd__conn.h"
#include "cd_json.h"
#include "cd_log.h"
#include "cd_loop.h"
#include "cd_server.h"
#include "cd_wirecheck.h"

static const cd_limits *lim(const cd_conn *c) { return &c->srv->cfg.limits; }

/* ---- requests -------------------------------------------------------------- */

/* A new request on c for slot seq; its budget is the configured decode budget. */
static cd_req *req_new(cd_conn *c, uint64_t seq, uint64_t t0_ns) {
  cd_req *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->conn = c;
  r->seq = seq;
  r->t0_ns = t0_ns;
  cd_budget_init(&r->budget, c->srv->cfg.limits.decode_budget_bytes);
  cd_conn_ref(c);
  return r;
}

/* ---- input ------------------------------------------------------------- */

/* Best effort, bounded: a varint field of a protobuf message that failed to
 * decode. The walk stops at the first byte that is not a well-formed field. */
static int proto_field(const uint8_t *p, size_t n, uint32_t field, int wire, uint64_t *out, const uint8_t **sub,
                       size_t *subn) {
  size_t off = 0;
  while (off < n) {
    uint64_t tag, v;
    int k = cd_frame_varint_decode(p + off, n - off, &tag);
    if (k <= 0) return 0;
    off += (size_t)k;
    int wt = (int)(tag & 7);
    if (wt == 0 || wt == 2) {
      if ((k = cd_frame_varint_decode(p + off, n - off, &v)) <= 0) return 0;
      off += (size_t)k;
      if (wt == 2 && v > n - off) v = n - off; /* a cut frame: what there is of it */
    } else if (wt == 1 || wt == 5) {
      v = wt == 1 ? 8 : 4;
      if (v > n - off) return 0;
    } else {
      return 0;
    }
    if ((tag >> 3) == field && wt == wire) {
      if (wt == 0) *out = v;
      else {
        *sub = p + off;
        *subn = (size_t)v;
      }
      return 1;
    }
    if (wt != 0) off += (size_t)v;
  }
  return 0;
}

static uint64_t proto_request_id(const uint8_t *p, size_t n) {
  uint64_t v = 0;
  if (n >= 2 && p[0] == 0x08 && cd_frame_varint_decode(p + 1, n - 1, &v) > 0) return v;
  return 0;
}

/* The stream and sequence of a StreamUpdate frame that failed to decode. */
static void proto_stream_update(cd_req *r, const uint8_t *p, size_t n) {
  const uint8_t *u = NULL;
  size_t un = 0;
  if (!proto_field(p, n, CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE, 2, NULL, &u, &un)) return;
  proto_field(u, un, 1, 0, &r->stream_id, NULL, NULL);
  proto_field(u, un, 2, 0, &r->sequence, NULL, NULL);
}

/* Best effort, bounded: where the value of key k1 (or k2) of the JSON
 * object s begins starts ("{" at s[0]), or n. Scans at most JSON_ID_SCAN
 * bytes by hand (never a second, unbudgeted parse of the line). */
#define JSON_ID_SCAN 4096
static size_t json_value_at(const char *s, size_t n, const char *k1, const char *k2) {
  if (n > JSON_ID_SCAN) n = JSON_ID_SCAN;
  int depth = 0;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    if (ch == '{' || ch == '[') depth++;
    else if (ch == '}' || ch == ']') {
      if (--depth <= 0) return n; /* the object ends */
    } else if (ch == '"') {
      size_t k0 = ++i;
      while (i < n && s[i] != '"') i += s[i] == '\\' ? 2 : 1;
      if (i >= n) return n;
      size_t klen = i - k0;
      if (depth != 1 || !((klen == strlen(k1) && memcmp(s + k0, k1, klen) == 0) ||
                          (klen == strlen(k2) && memcmp(s + k0, k2, klen) == 0)))
        continue;
      size_t j = i + 1;
      while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n')) j++;
      if (j >= n || s[j] != ':') continue; /* a string value, not a key */
      j++;
      while (j < n && (s[j] == ' ' || s[j] == '\t' || s[j] == '\r' || s[j] == '\n')) j++;
      return j;
    }
  }
  return n;
}

/* The unsigned number (or quoted number) at s[j], 0 if none. */
static uint64_t json_uint_at(const char *s, size_t n, size_t j) {
  if (n > JSON_ID_SCAN) n = JSON_ID_SCAN;
  if (j < n && s[j] == '"') j++;
  uint64_t id = 0;
  int digits = 0;
  while (j < n && s[j] >= '0' && s[j] <= '9' && digits < 20) {
    id = id * 10 + (uint64_t)(s[j++] - '0');
    digits++;
  }
  return id;
}

static uint64_t json_request_id(const char *s, size_t n) {
  while (n && s[0] != '{') s++, n--;
  return json_uint_at(s, n, json_value_at(s, n, "requestId", "request_id"));
}

static void json_stream_update(cd_req *r, const char *s, size_t n) {
  while (n && s[0] != '{') s++, n--;
  if (n > JSON_ID_SCAN) n = JSON_ID_SCAN;
  size_t j = json_value_at(s, n, "streamUpdate", "stream_update");
  if (j >= n || s[j] != '{') return;
  r->stream_id = json_uint_at(s + j, n - j, json_value_at(s + j, n - j, "streamId", "stream_id"));
  r->sequence = json_uint_at(s + j, n - j, json_value_at(s + j, n - j, "sequence", "sequence"));
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
    if (json) json_stream_update(r, (const char *)body, len);
    else proto_stream_update(r, body, len);
    return 1;
  }
  r->request_id = ((Contactd__V1__Envelope *)m)->request_id;
  const Contactd__V1__Envelope *e = (const Contactd__V1__Envelope *)m;
  if (e->msg_case == CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE && e->stream_update) {
    r->stream_id = e->stream_update->stream_id;
    r->sequence = e->stream_update->sequence;
  }
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

static void input_charge(cd_server *s, uint64_t n);

/* A decoded request (or its decoding error) on the loop: what decoding
 * allocated is charged until the request is answered (cd_req_free). */
static void body_decoded(cd_req *r, int failed, const cd_status *st) {
  r->charged = r->budget.held;
  input_charge(r->conn->srv, r->charged);
  if (failed) {
    cd_req_fail(r, st);
    return;
  }
  /* A nonzero request id names one request in flight on its connection:
   * a second one before the first is answered would make their replies
   * indistinguishable. (0 is "no id": stream updates, fire and forget.) */
  cd_conn *c = r->conn;
  if (r->request_id != 0) {
    for (uint64_t q = c->base_seq; q < c->next_seq; q++) {
      const cd_slot *o = &c->ring[q % c->ring_cap];
      if (q != r->seq && o->state == CD_SLOT_WAITING && o->request_id == r->request_id) {
        cd_status dup;
        cd_status_set(&dup, CD_INVALID, "requestId",
                      "request_id %llu is already in flight on this connection (ids of requests not yet "
                      "answered must differ; 0 is never checked)",
                      (unsigned long long)r->request_id);
        cd_req_fail(r, &dup);
        return;
      }
    }
    c->ring[r->seq % c->ring_cap].request_id = r->request_id;
  }
  c->srv->proto->request(r);
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
  c->flags &= ~CD_CF_DECODING;
  if (c->state == CD_CONN_CLOSED) {
    cd_req_free(r); /* nobody to answer */
  } else {
    body_decoded(r, j->failed, &j->st);
  }
  cd__input_released(c->srv, j->charge);
  free(j);
  if (c->state != CD_CONN_CLOSED) {
    cd__input_resume(c);
    cd__conn_maybe_finish(c);
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
  c->flags |= CD_CF_DECODING;
  s->stats.decoded_off_loop++;
  cd__conn_stop_reading(c); /* the rest of this read is held by cd__input_process() */
  cd_pool_submit(s->codec, NULL, &j->job);
  return 1;
}

static void handle_body(cd_conn *c, const uint8_t *body, size_t len, int json) {
  uint64_t t0 = cd_stats_now_ns();
  uint64_t seq = cd__output_reserve(c, t0);
  cd_req *r = req_new(c, seq, t0);
  if (!r) {
    cd_status st;
    cd_status_set(&st, CD_EXHAUSTED, "", "out of memory");
    cd_output_reply_error(c, seq, 0, &st);
    return;
  }
  if (decode_off_loop(c, r, body, len, json)) return;
  cd_status st;
  int failed = decode_body(r, body, len, json, &st);
  body_decoded(r, failed, &st);
}

void cd__input_fatal(cd_conn *c, int code, const char *msg, const char *why, _Atomic uint64_t *counter) {
  if (counter) (*counter)++;
  if (cd__conn_inflight(c) >= c->ring_cap) { /* no slot left for the error: just hang up */
    cd_conn_close(c, msg);
    return;
  }
  uint64_t seq = cd__output_reserve(c, cd_stats_now_ns());
  cd_status st;
  cd_status_set(&st, code, "", "%s", msg);
  if (c->state == CD_CONN_PEER_DONE) c->flags |= CD_CF_NO_LINGER; /* nobody to linger for */
  if (c->state < CD_CONN_FAILED) c->state = CD_CONN_FAILED;
  c->fatal_why = why;
  cd__conn_stop_reading(c);
  cd_output_reply_error(c, seq, 0, &st);
  cd__conn_maybe_finish(c);
}

static void fatal_framing(cd_conn *c, int code, const char *msg) {
  cd__input_fatal(c, code, msg, "framing error", &c->srv->stats.disconnects_framing);
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
  cd__conn_stop_reading(c);
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

static void input_charge(cd_server *s, uint64_t n) {
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

void cd__input_released(cd_server *s, uint64_t n) {
  if (n) atomic_fetch_sub(&s->request_bytes, n);
  /* seq_cst with mem_wait's increment and its own wake-up: a connection
   * that queued just now is either seen here or sees this room itself */
  if (atomic_load(&s->mem_waiters)) kick_oldest(s);
}

/* The size a connection's next frame asks for. */
static uint64_t mem_need(const cd_conn *c) { return c->wire == CD_WIRE_JSON ? 1 : c->dec.body_len; }

static void mem_admit(cd_conn *c, uint64_t need) {
  c->frame_charge = need;
  c->flags |= CD_CF_ADMITTED;
  c->admit_ns = cd_stats_now_ns();
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
  c->flags &= ~CD_CF_ADMITTED;
  if (n) cd__input_released(c->srv, n);
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
  } else {
    cd__conn_stop_reading(c);
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
    cd__input_released(c->srv, c->line_charge);
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
    cd__input_resume(c); /* its kept input, then reading again */
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
  cd__input_released(c->srv, c->line_charge);
  c->line_charge = 0;
  CD_WARN("slow sender", "conn=%llu peer=%s %s", (unsigned long long)c->id, c->peer, msg);
  cd__input_fatal(c, CD_EXHAUSTED, msg, "slow sender", &c->srv->stats.disconnects_slow_sender);
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
  const uint64_t now = cd_stats_now_ns();
  for (cd_conn *c = lp->conns, *next; c; c = next) {
    next = c->next;
    if (!(c->flags & CD_CF_ADMITTED) || cd__conn_failed(c) || !(c->flags & CD_CF_READING) || c->held_len) continue;
    const uint64_t got = c->wire == CD_WIRE_JSON ? c->line_len : cd_frame_decoder_pending(&c->dec);
    const double took_s = (double)(now - c->admit_ns) * 1e-9;
    if (took_s > (double)l->frame_grace_ms * 1e-3 + (double)got / (double)l->frame_min_rate_bytes)
      slow_sender(c, got, took_s);
  }
}

void cd__input_process(cd_conn *c, const uint8_t *data, size_t n) {
  const unsigned nested = c->flags & CD_CF_PROCESSING;
  c->flags |= CD_CF_PROCESSING;
  size_t off = 0;
  while (off < n && !cd__conn_failed(c)) {
    if (cd__conn_inflight(c) >= c->ring_cap || (c->flags & CD_CF_DECODING)) {
      hold(c, data + off, n - off);
      break;
    }
    if (c->wire == CD_WIRE_UNKNOWN) c->wire = data[off] == '{' ? CD_WIRE_JSON : CD_WIRE_PROTO;
    if (c->wire == CD_WIRE_PROTO) {
      size_t used = 0, flen = 0;
      const uint8_t *frame = NULL;
      cd_frame_status fs = CD_FRAME_OK;
      if (!(c->flags & CD_CF_ADMITTED)) {
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
      if (!(c->flags & CD_CF_ADMITTED) && !mem_take(c)) { /* a new line */
        mem_pause(c, data + off, n - off);
        break;
      }
      const uint8_t *nl = memchr(data + off, '\n', n - off);
      size_t take = nl ? (size_t)(nl - (data + off)) : n - off;
      if (!(c->flags & CD_CF_LINE_OVER) && c->line_len + take > lim(c)->max_frame_bytes) {
        /* The line is too long: answer once, skip to its end, keep going. */
        c->flags |= CD_CF_LINE_OVER;
        c->line_len = 0;
        uint64_t seq = cd__output_reserve(c, cd_stats_now_ns());
        cd_status st;
        cd_status_set(&st, CD_EXHAUSTED, "", "JSON line longer than the limit of %llu bytes (max_frame_bytes)",
                      (unsigned long long)lim(c)->max_frame_bytes);
        cd_output_reply_error(c, seq, 0, &st);
      }
      if (c->flags & CD_CF_LINE_OVER) {
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
          input_charge(c->srv, nc - c->line_cap);
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
        c->flags &= ~CD_CF_LINE_OVER;
        json_line_done(c);
      }
    }
  }
  if (!nested) c->flags &= ~CD_CF_PROCESSING;
  if (!nested && c->state != CD_CONN_CLOSED) {
    /* Replies produced while processing may have freed room. */
    cd__output_flush(c);
  }
}

void cd__input_resume(cd_conn *c) {
  /* (a connection waiting for request_memory_bytes is resumed by mem_pump) */
  if (cd__conn_failed(c) || c->mem_waiting || (c->flags & CD_CF_DECODING)) return;
  if (c->held_len && cd__conn_inflight(c) < c->ring_cap) {
    uint8_t *h = c->held;
    size_t n = c->held_len;
    c->held = NULL;
    c->held_len = 0;
    cd__input_process(c, h, n);
    free(h);
  }
  if (c->state == CD_CONN_OPEN && !(c->flags & (CD_CF_READING | CD_CF_DECODING)) && !c->srv->draining &&
      c->held_len == 0 && !c->mem_waiting && cd__conn_inflight(c) < c->ring_cap) {
    cd__conn_start_reading(c);
  }
}

void cd__input_eof(cd_conn *c) {
  size_t pend = c->wire == CD_WIRE_PROTO ? cd_frame_decoder_pending(&c->dec) : 0;
  if (c->wire == CD_WIRE_JSON && c->line_len && !(c->flags & CD_CF_LINE_OVER)) {
    size_t ln = c->line_len;
    c->line_len = 0;
    const unsigned nested = c->flags & CD_CF_PROCESSING;
    c->flags |= CD_CF_PROCESSING;
    json_line(c, c->line, ln); /* a last line without its newline */
    json_line_done(c);
    if (!nested) c->flags &= ~CD_CF_PROCESSING;
    cd__output_flush(c);
  } else if (pend && !cd__conn_failed(c)) {
    char msg[160];
    snprintf(msg, sizeof msg, "truncated frame: the connection ended %zu bytes into an unfinished frame", pend);
    fatal_framing(c, CD_INVALID, msg);
  }
}

void cd__input_closing(cd_conn *c) {
  mem_unwait(c);
  mem_frame_done(c);
  cd__input_released(c->srv, c->line_charge);
  c->line_charge = 0;
}
