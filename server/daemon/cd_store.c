/* cd_store.c — the store's threads, request queue, per-loop completions,
 * circuit breaker and statistics (the backends are cd_store_dir.c and
 * cd_store_redis.c; the record format is cd_store_record.c). */
#include "cd_store.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cd_log.h"

typedef struct cd_mailbox cd_mailbox;

/* OP_GET / OP_PUT: registration records; OP_SEEN_*: a tenant's visibility
 * marker (looked up like a record, written and deleted in order by one
 * thread). */
typedef enum { OP_GET = 1, OP_PUT = 2, OP_SEEN_GET = 3, OP_SEEN_PUT = 4, OP_SEEN_DEL = 5 } op_kind;

/* One operation. A lookup is owned by two parties, the store thread and the
 * loop (its deadline timer), each dropping its reference when done; the
 * later frees it. */
typedef struct cd_store_op {
  op_kind kind;
  char id[72];
  char key[CD_STORE_KEY_MAX];
  uint64_t deadline_ns; /* lookups: answered UNAVAILABLE past it */
  /* put */
  uint8_t *record;
  size_t len;
  /* get */
  cd_store_get_fn cb;
  void *arg;
  cd_mailbox *mb;
  uv_timer_t timer;
  int answered; /* loop thread */
  atomic_int refs;
  cd_store_result res;
  Contactd__V1__RegisterGeometry *msg;
  struct cd_store_op *next;
} cd_store_op;

struct cd_mailbox {
  cd_store *store;
  uv_loop_t *loop;
  uv_async_t async;
  pthread_mutex_t mu;
  cd_store_op *head, *tail; /* completed lookups */
  int closed;
  cd_mailbox *next;
};

struct cd_store {
  char uri[CD_STORE_URI_MAX];
  cd_store_cfg cfg;
  const cd_store_backend *be;
  cd_limits limits;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  cd_store_op *head, *tail; /* queued operations */
  cd_store_op *mhead, *mtail; /* queued marker writes: the first store thread's, in order */
  atomic_int next_thread;
  uint64_t queued_puts, queued_bytes; /* writes waiting, and their records' bytes */
  int stop;
  pthread_t *threads;
  int nthreads;
  cd_mailbox *mailboxes;
  /* breaker and stats, under mu */
  cd_breaker_state breaker;
  uint64_t failures_in_row, opened_ns;
  int probing;
  cd_store_stats st;
};

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *cd_store_breaker_name(cd_breaker_state b) {
  return b == CD_BREAKER_OPEN ? "open" : b == CD_BREAKER_HALF_OPEN ? "half_open" : "closed";
}

/* ---- URIs --------------------------------------------------------------- */

static int parse_uri(const char *uri, cd_store_cfg *c, char *err, size_t errlen) {
  memset(c, 0, sizeof *c);
  if (strncmp(uri, "dir:", 4) == 0 || strncmp(uri, "unix:", 5) == 0) {
    int dir = uri[0] == 'd';
    const char *p = uri + (dir ? 4 : 5);
    if (!p[0]) {
      snprintf(err, errlen, "store \"%s\": the path is empty", uri);
      return -1;
    }
    if (strlen(p) >= (dir ? sizeof c->path - 90 : 108)) {
      snprintf(err, errlen, "store \"%s\": the path is too long", uri);
      return -1;
    }
    c->kind = dir ? 1 : 3;
    snprintf(c->path, sizeof c->path, "%s", p);
    return 0;
  }
  if (strncmp(uri, "redis://", 8) == 0) {
    const char *h = uri + 8;
    if (strchr(h, '@')) {
      snprintf(err, errlen,
               "store \"%s\": no credentials in the URI (it shows in process lists); use store_password_file or "
               "CONTACTD_STORE_PASSWORD",
               uri);
      return -1;
    }
    const char *colon = strrchr(h, ':'), *slash = strchr(h, '/');
    if (!colon || (slash && colon > slash) || colon == h || (size_t)(colon - h) >= sizeof c->host) {
      snprintf(err, errlen, "store \"%s\": expected redis://HOST:PORT[/DB]", uri);
      return -1;
    }
    memcpy(c->host, h, (size_t)(colon - h));
    char *end;
    errno = 0;
    long port = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || port < 1 || port > 65535 || (*end && *end != '/')) {
      snprintf(err, errlen, "store \"%s\": the port must be in [1, 65535]", uri);
      return -1;
    }
    long db = 0;
    if (*end == '/') {
      const char *d = end + 1;
      db = strtol(d, &end, 10);
      if (end == d || *end || db < 0 || db > 1000000) {
        snprintf(err, errlen, "store \"%s\": the database must be a number >= 0", uri);
        return -1;
      }
    }
    c->kind = 2;
    c->port = (int)port;
    c->db = (int)db;
    return 0;
  }
  snprintf(err, errlen, "store \"%s\" is not memory, dir:PATH, redis://HOST:PORT[/DB] or unix:PATH", uri);
  return -1;
}

int cd_store_check_uri(const char *uri, char *err, size_t errlen) {
  if (strcmp(uri, "memory") == 0) return 0;
  cd_store_cfg c;
  return parse_uri(uri, &c, err, errlen);
}

static int read_password(const char *file, char *out, size_t cap, char *err, size_t errlen) {
  if (file && file[0]) {
    FILE *f = fopen(file, "r");
    if (!f) {
      snprintf(err, errlen, "store_password_file %s: %s", file, strerror(errno));
      return -1;
    }
    size_t n = fread(out, 1, cap - 1, f);
    fclose(f);
    out[n] = 0;
  } else {
    const char *e = getenv("CONTACTD_STORE_PASSWORD");
    snprintf(out, cap, "%s", e ? e : "");
  }
  size_t n = strlen(out);
  while (n && (out[n - 1] == '\n' || out[n - 1] == '\r')) out[--n] = 0;
  return 0;
}

/* ---- breaker (under s->mu) -------------------------------------------- */

/* Whether an operation may go to the backend now; sets *probe when it is
 * the half-open probe. */
static int breaker_admit(cd_store *s, uint64_t now, int *probe) {
  *probe = 0;
  if (s->breaker == CD_BREAKER_CLOSED) return 1;
  if (s->breaker == CD_BREAKER_OPEN && now - s->opened_ns >= s->limits.store_breaker_open_ms * 1000000ull &&
      !s->probing) {
    s->breaker = CD_BREAKER_HALF_OPEN;
    s->probing = 1;
    *probe = 1;
    CD_INFO("store circuit half open: probing", "store=%s", s->uri);
    return 1;
  }
  return 0;
}

static void breaker_result(cd_store *s, int ok, int probe, const char *why) {
  if (probe) s->probing = 0;
  if (ok) {
    s->failures_in_row = 0;
    if (s->breaker != CD_BREAKER_CLOSED) {
      s->breaker = CD_BREAKER_CLOSED;
      CD_INFO("store circuit closed: the store answers again", "store=%s", s->uri);
    }
    return;
  }
  s->failures_in_row++;
  if (probe || (s->breaker == CD_BREAKER_CLOSED && s->failures_in_row >= s->limits.store_breaker_failures)) {
    if (s->breaker == CD_BREAKER_CLOSED)
      CD_WARN("store circuit open: store operations fail fast until a probe succeeds", "store=%s error=\"%s\"",
              s->uri, why);
    s->breaker = CD_BREAKER_OPEN;
    s->opened_ns = now_ns();
  }
}

/* ---- completions on the loop ---------------------------------------- */

static void op_unref(cd_store_op *op) {
  if (atomic_fetch_sub(&op->refs, 1) != 1) return;
  if (op->msg) contactd__v1__register_geometry__free_unpacked(op->msg, NULL);
  free(op->record);
  free(op);
}

static void on_timer_closed(uv_handle_t *h) { op_unref(h->data); }

/* Answer a lookup once (loop thread). */
static void op_answer(cd_store_op *op, cd_store_result res) {
  if (op->answered) return;
  op->answered = 1;
  Contactd__V1__RegisterGeometry *m = NULL;
  if (res == CD_STORE_HIT) {
    m = op->msg;
    op->msg = NULL;
  }
  uv_timer_stop(&op->timer);
  uv_close((uv_handle_t *)&op->timer, on_timer_closed);
  op->cb(op->arg, res, m);
}

static void on_deadline(uv_timer_t *t) {
  cd_store_op *op = t->data;
  op_answer(op, CD_STORE_UNAVAILABLE);
}

static void on_async(uv_async_t *a) {
  cd_mailbox *mb = a->data;
  pthread_mutex_lock(&mb->mu);
  cd_store_op *op = mb->head;
  mb->head = mb->tail = NULL;
  pthread_mutex_unlock(&mb->mu);
  while (op) {
    cd_store_op *n = op->next;
    op_answer(op, op->res);
    op_unref(op);
    op = n;
  }
}

static cd_mailbox *mailbox_for(cd_store *s, uv_loop_t *loop) {
  pthread_mutex_lock(&s->mu);
  cd_mailbox *mb = s->mailboxes;
  while (mb && mb->loop != loop) mb = mb->next;
  if (!mb && (mb = calloc(1, sizeof *mb))) {
    mb->store = s;
    mb->loop = loop;
    pthread_mutex_init(&mb->mu, NULL);
    uv_async_init(loop, &mb->async, on_async);
    mb->async.data = mb;
    uv_unref((uv_handle_t *)&mb->async); /* lookups in flight hold the loop by their timers */
    mb->next = s->mailboxes;
    s->mailboxes = mb;
  }
  pthread_mutex_unlock(&s->mu);
  return mb && !mb->closed ? mb : NULL;
}

void cd_store_detach_loop(cd_store *s, uv_loop_t *loop) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  cd_mailbox *mb = s->mailboxes;
  while (mb && mb->loop != loop) mb = mb->next;
  pthread_mutex_unlock(&s->mu);
  if (!mb || mb->closed) return;
  on_async(&mb->async); /* what has arrived is answered now */
  pthread_mutex_lock(&mb->mu);
  mb->closed = 1;
  pthread_mutex_unlock(&mb->mu);
  uv_close((uv_handle_t *)&mb->async, NULL);
}

/* Store thread: hand a finished lookup to its loop (or drop it there when
 * that loop is gone: its timer answered). */
static void deliver(cd_store_op *op) {
  cd_mailbox *mb = op->mb;
  pthread_mutex_lock(&mb->mu);
  int closed = mb->closed;
  if (!closed) {
    op->next = NULL;
    if (mb->tail) mb->tail->next = op;
    else mb->head = op;
    mb->tail = op;
    uv_async_send(&mb->async);
  }
  pthread_mutex_unlock(&mb->mu);
  if (closed) op_unref(op);
}

/* ---- the store threads ---------------------------------------------------- */

static void note_latency(cd_store *s, uint64_t t0) {
  uint64_t us = (now_ns() - t0) / 1000;
  s->st.ops++;
  s->st.latency_us_sum += us;
  if (us > s->st.latency_us_max) s->st.latency_us_max = us;
}

static void run_get(cd_store *s, void *ctx, cd_store_op *op) {
  uint64_t t0 = now_ns();
  int probe = 0;
  pthread_mutex_lock(&s->mu);
  int admit = t0 < op->deadline_ns && breaker_admit(s, t0, &probe);
  pthread_mutex_unlock(&s->mu);
  if (!admit) {
    op->res = CD_STORE_UNAVAILABLE;
    deliver(op);
    return;
  }
  char why[256] = "";
  uint8_t *data = NULL;
  size_t len = 0;
  cd_be_rc rc = s->be->get(ctx, op->key, &data, &len, why, sizeof why);
  Contactd__V1__RegisterGeometry *m = NULL;
  char vwhy[256] = "";
  if (rc == CD_BE_OK && op->kind == OP_GET) m = cd_store_record_decode(data, len, op->id, &s->limits, vwhy, sizeof vwhy);
  free(data);
  pthread_mutex_lock(&s->mu);
  note_latency(s, t0);
  breaker_result(s, rc != CD_BE_ERROR, probe, why);
  if (rc == CD_BE_ERROR) s->st.errors++;
  else if (op->kind == OP_SEEN_GET && rc == CD_BE_OK) s->st.seen_hits++;
  else if (op->kind == OP_SEEN_GET) s->st.seen_misses++;
  else if (rc == CD_BE_OK && m) s->st.hits++;
  else if (rc == CD_BE_OK) s->st.verify_failures++;
  else s->st.misses++;
  pthread_mutex_unlock(&s->mu);
  if (op->kind == OP_SEEN_GET) {
    if (rc == CD_BE_ERROR) CD_DEBUG("store read failed", "marker=seen geometry=%s error=\"%s\"", op->id, why);
    op->res = rc == CD_BE_ERROR ? CD_STORE_UNAVAILABLE : rc == CD_BE_OK ? CD_STORE_HIT : CD_STORE_MISS;
    deliver(op);
    return;
  }
  if (rc == CD_BE_ERROR)
    CD_DEBUG("store read failed", "geometry=%s error=\"%s\"", op->id, why);
  else if (rc == CD_BE_OK && !m)
    CD_WARN("store entry ignored: it does not verify", "geometry=%s why=\"%s\"", op->id, vwhy);
  op->msg = m;
  op->res = rc == CD_BE_ERROR ? CD_STORE_UNAVAILABLE : m ? CD_STORE_HIT : CD_STORE_MISS;
  deliver(op);
}

static void run_put(cd_store *s, void *ctx, cd_store_op *op) {
  uint64_t t0 = now_ns();
  int probe = 0;
  pthread_mutex_lock(&s->mu);
  int admit = breaker_admit(s, t0, &probe);
  if (!admit) s->st.write_drops++;
  pthread_mutex_unlock(&s->mu);
  if (!admit) return;
  char why[256] = "";
  cd_be_rc rc = op->kind == OP_SEEN_DEL ? s->be->del(ctx, op->key, why, sizeof why)
                                        : s->be->put(ctx, op->key, op->record, op->len, why, sizeof why);
  pthread_mutex_lock(&s->mu);
  note_latency(s, t0);
  breaker_result(s, rc != CD_BE_ERROR, probe, why);
  if (op->kind != OP_PUT) {
    if (rc == CD_BE_ERROR) {
      s->st.errors++;
      s->st.write_drops++;
    } else {
      s->st.seen_writes++;
    }
  } else if (rc == CD_BE_OK) s->st.writes++;
  else if (rc == CD_BE_EXISTS) s->st.write_exists++;
  else {
    s->st.errors++;
    s->st.write_drops++;
  }
  pthread_mutex_unlock(&s->mu);
  if (rc == CD_BE_ERROR && op->kind != OP_PUT)
    CD_WARN("store write failed: a tenant's visibility of the geometry is kept here only", "geometry=%s error=\"%s\"",
            op->id, why);
  else if (rc == CD_BE_ERROR)
    CD_WARN("store write failed: the geometry stays registered here only", "geometry=%s error=\"%s\"", op->id, why);
}

/* The next operation for a store thread (under s->mu): the first thread
 * takes the marker writes first, in order; every thread the rest. */
static cd_store_op *dequeue(cd_store *s, int first) {
  cd_store_op *op = first ? s->mhead : NULL;
  if (op) {
    s->mhead = op->next;
    if (!s->mhead) s->mtail = NULL;
  } else if ((op = s->head)) {
    s->head = op->next;
    if (!s->head) s->tail = NULL;
  }
  return op;
}

static void *store_thread(void *arg) {
  cd_store *s = arg;
  int first = atomic_fetch_add(&s->next_thread, 1) == 0;
  void *ctx = s->be->open(&s->cfg);
  for (;;) {
    pthread_mutex_lock(&s->mu);
    while (!s->head && !(first && s->mhead) && !s->stop) pthread_cond_wait(&s->cv, &s->mu);
    cd_store_op *op = dequeue(s, first);
    if (op) {
      if (op->kind != OP_GET && op->kind != OP_SEEN_GET) {
        s->queued_puts--;
        s->queued_bytes -= op->len;
      }
    }
    int stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    if (!op) break;
    /* Shutting down: lookups are answered at once, writes still go out (a
     * registration just before a restart is kept; a failing store opens
     * the breaker after a few timeouts and the rest are dropped). */
    int lookup = op->kind == OP_GET || op->kind == OP_SEEN_GET;
    if (!ctx || (stop && lookup)) {
      if (lookup) {
        op->res = CD_STORE_UNAVAILABLE;
        deliver(op);
      } else {
        op_unref(op);
      }
      continue;
    }
    if (lookup) {
      run_get(s, ctx, op);
    } else {
      run_put(s, ctx, op);
      op_unref(op);
    }
  }
  if (ctx) s->be->close(ctx);
  return NULL;
}

static void enqueue(cd_store *s, cd_store_op *op) {
  op->next = NULL;
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  pthread_cond_signal(&s->cv);
}

/* The marker key of (tenant, id): the tenant in hex, so that any name is
 * a safe file name and key. */
static void seen_key(char *key, size_t cap, const char *tenant, const char *id) {
  static const char hx[] = "0123456789abcdef";
  size_t n = (size_t)snprintf(key, cap, "%s", CD_STORE_SEEN_PREFIX);
  for (const unsigned char *t = (const unsigned char *)tenant; *t && n + 3 < cap; t++) {
    key[n++] = hx[*t >> 4];
    key[n++] = hx[*t & 15];
  }
  snprintf(key + n, cap - n, ":%s", id);
}

static int lookup(cd_store *s, uv_loop_t *loop, op_kind kind, const char *tenant, const char *id, cd_store_get_fn cb,
                  void *arg) {
  cd_mailbox *mb = mailbox_for(s, loop);
  cd_store_op *op = mb ? calloc(1, sizeof *op) : NULL;
  if (!op) return -1;
  op->kind = kind;
  snprintf(op->id, sizeof op->id, "%s", id);
  if (kind == OP_SEEN_GET) seen_key(op->key, sizeof op->key, tenant, id);
  else snprintf(op->key, sizeof op->key, "%s%s", CD_STORE_KEY_PREFIX, id);
  op->cb = cb;
  op->arg = arg;
  op->mb = mb;
  atomic_init(&op->refs, 2);
  op->deadline_ns = now_ns() + s->limits.store_timeout_ms * 1000000ull;
  uv_timer_init(loop, &op->timer);
  op->timer.data = op;
  uv_timer_start(&op->timer, on_deadline, s->limits.store_timeout_ms, 0);
  pthread_mutex_lock(&s->mu);
  enqueue(s, op);
  pthread_mutex_unlock(&s->mu);
  return 0;
}

int cd_store_get_spec(cd_store *s, uv_loop_t *loop, const char *id, cd_store_get_fn cb, void *arg) {
  return lookup(s, loop, OP_GET, NULL, id, cb, arg);
}

int cd_store_get_seen(cd_store *s, uv_loop_t *loop, const char *tenant, const char *id, cd_store_get_fn cb,
                      void *arg) {
  return lookup(s, loop, OP_SEEN_GET, tenant, id, cb, arg);
}

static void mark(cd_store *s, op_kind kind, const char *tenant, const char *id) {
  if (!s) return;
  cd_store_op *op = calloc(1, sizeof *op);
  if (op && kind == OP_SEEN_PUT) op->record = (uint8_t *)strdup("1");
  pthread_mutex_lock(&s->mu);
  int full = !op || (kind == OP_SEEN_PUT && !op->record) || s->queued_puts >= s->limits.store_write_queue ||
             s->breaker == CD_BREAKER_OPEN;
  if (full) {
    s->st.write_drops++;
  } else {
    op->kind = kind;
    op->len = op->record ? 1 : 0;
    snprintf(op->id, sizeof op->id, "%s", id);
    seen_key(op->key, sizeof op->key, tenant, id);
    atomic_init(&op->refs, 1);
    op->next = NULL;
    if (s->mtail) s->mtail->next = op;
    else s->mhead = op;
    s->mtail = op;
    s->queued_puts++;
    s->queued_bytes += op->len;
    pthread_cond_broadcast(&s->cv); /* the first thread must wake, whichever else does */
  }
  pthread_mutex_unlock(&s->mu);
  if (full && op) {
    free(op->record);
    free(op);
  }
}

void cd_store_put_seen(cd_store *s, const char *tenant, const char *id) { mark(s, OP_SEEN_PUT, tenant, id); }
void cd_store_del_seen(cd_store *s, const char *tenant, const char *id) { mark(s, OP_SEEN_DEL, tenant, id); }

void cd_store_put_spec(cd_store *s, const char *id, const Contactd__V1__RegisterGeometry *m) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  int full = s->queued_puts >= s->limits.store_write_queue || s->breaker == CD_BREAKER_OPEN;
  if (full) s->st.write_drops++;
  pthread_mutex_unlock(&s->mu);
  if (full) return;
  cd_store_op *op = calloc(1, sizeof *op);
  if (op) op->record = cd_store_record_encode(m, &op->len);
  if (!op || !op->record) {
    free(op);
    pthread_mutex_lock(&s->mu);
    s->st.write_drops++;
    pthread_mutex_unlock(&s->mu);
    return;
  }
  op->kind = OP_PUT;
  snprintf(op->id, sizeof op->id, "%s", id);
  snprintf(op->key, sizeof op->key, "%s%s", CD_STORE_KEY_PREFIX, id);
  atomic_init(&op->refs, 1);
  pthread_mutex_lock(&s->mu);
  /* the records waiting hold copies of their registrations: at most
   * cache_bytes of them */
  full = s->queued_bytes + op->len > s->limits.cache_bytes;
  if (full) {
    s->st.write_drops++;
  } else {
    s->queued_puts++;
    s->queued_bytes += op->len;
    enqueue(s, op);
  }
  pthread_mutex_unlock(&s->mu);
  if (full) op_unref(op);
}

void cd_store_get_stats(cd_store *s, cd_store_stats *st) {
  memset(st, 0, sizeof *st);
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  *st = s->st;
  st->breaker = s->breaker;
  pthread_mutex_unlock(&s->mu);
}

const char *cd_store_describe(const cd_store *s) { return s ? s->uri : "memory"; }

cd_store *cd_store_create(const char *uri, const char *password_file, const cd_limits *l, int *failed, char *err,
                          size_t errlen) {
  *failed = 0;
  if (!uri[0] || strcmp(uri, "memory") == 0) return NULL;
  *failed = 1;
  cd_store *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory for the store");
    return NULL;
  }
  snprintf(s->uri, sizeof s->uri, "%s", uri);
  s->limits = *l;
  if (parse_uri(uri, &s->cfg, err, errlen) ||
      (s->cfg.kind != 1 && read_password(password_file, s->cfg.password, sizeof s->cfg.password, err, errlen))) {
    free(s);
    return NULL;
  }
  s->cfg.connect_timeout_ms = l->store_connect_timeout_ms;
  s->cfg.op_timeout_ms = l->store_timeout_ms;
  s->cfg.max_record_bytes = l->max_frame_bytes + 64;
  s->be = s->cfg.kind == 1 ? &cd_store_dir_backend : &cd_store_redis_backend;
  pthread_mutex_init(&s->mu, NULL);
  pthread_cond_init(&s->cv, NULL);
  s->threads = calloc(l->store_threads, sizeof *s->threads);
  for (uint64_t i = 0; s->threads && i < l->store_threads; i++) {
    if (pthread_create(&s->threads[i], NULL, store_thread, s)) break;
    char name[16];
    snprintf(name, sizeof name, "cd-store-%u", (unsigned)(i % 1000));
    pthread_setname_np(s->threads[i], name);
    s->nthreads++;
  }
  if (s->nthreads == 0) {
    snprintf(err, errlen, "cannot start the store threads");
    cd_store_destroy(s);
    return NULL;
  }
  *failed = 0;
  CD_INFO("store", "store=%s threads=%d timeout_ms=%llu", s->uri, s->nthreads,
          (unsigned long long)l->store_timeout_ms);
  return s;
}

void cd_store_destroy(cd_store *s) {
  if (!s) return;
  pthread_mutex_lock(&s->mu);
  s->stop = 1;
  pthread_cond_broadcast(&s->cv);
  pthread_mutex_unlock(&s->mu);
  for (int i = 0; i < s->nthreads; i++) pthread_join(s->threads[i], NULL);
  free(s->threads);
  for (cd_mailbox *mb = s->mailboxes, *n; mb; mb = n) {
    n = mb->next;
    pthread_mutex_destroy(&mb->mu);
    free(mb);
  }
  pthread_cond_destroy(&s->cv);
  pthread_mutex_destroy(&s->mu);
  memset(s->cfg.password, 0, sizeof s->cfg.password);
  free(s);
}
