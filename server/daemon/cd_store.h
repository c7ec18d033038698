/* cd_store.h — the geometry store behind the in-memory cache: a disposable,
 * content-addressed copy of every successful registration, shared across
 * restarts (dir:PATH) or replicas (redis://HOST:PORT[/DB], unix:PATH).
 *
 * What is stored, under "contactd:v1:spec:<id>" (one file per key in a
 * directory, one string per key in Redis): a header (magic, format version,
 * kind, payload length) and the RegisterGeometry message as packed protobuf,
 * with its name and want_progress cleared. A record is trusted only after
 * it decodes, passes the registration checks and its canonical id
 * (cd_geomspec_id) equals the key's; anything else counts as a verify
 * failure and reads as missing.
 *
 * Threads: store I/O runs on the store's own threads, one blocking backend
 * context (a Redis connection, a directory handle) each. The event loops
 * never wait on it: a lookup's answer comes back on the loop that asked,
 * through that loop's uv_async handle, within store_timeout_ms of the ask
 * (a deadline timer on that loop answers UNAVAILABLE if the store has not).
 * Writes are fire-and-forget and dropped (and counted) when the queue is
 * full or the store is failing.
 *
 * Circuit breaker: store_breaker_failures failures in a row open it; while
 * open, operations fail at once; after store_breaker_open_ms one operation
 * probes the store (half open) and its success closes the breaker. Each
 * change is logged once. */
#ifndef CD_STORE_H
#define CD_STORE_H

#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "cd_limits.h"
#include "contactd.pb-c.h"

typedef struct cd_store cd_store;

typedef enum {
  CD_STORE_HIT = 0,         /* found and verified */
  CD_STORE_MISS = 1,        /* not stored (or stored but failed verification) */
  CD_STORE_UNAVAILABLE = 2, /* the store failed, timed out or its breaker is open */
} cd_store_result;

typedef enum { CD_BREAKER_CLOSED = 0, CD_BREAKER_OPEN = 1, CD_BREAKER_HALF_OPEN = 2 } cd_breaker_state;

typedef struct cd_store_stats {
  uint64_t hits, misses, writes, write_exists, write_drops, verify_failures, errors;
  uint64_t seen_hits, seen_misses, seen_writes; /* tenants' visibility markers: found, not found, written or deleted */
  uint64_t ops, latency_us_sum, latency_us_max; /* completed backend operations */
  cd_breaker_state breaker;
} cd_store_stats;

/* Store settings (cd_config): the URI and the password file; the timeouts
 * and sizes are limits (cd_limits.h). */
#define CD_STORE_URI_MAX 512
#define CD_STORE_PATH_MAX 256

/* Check a store URI ("memory", "dir:PATH", "redis://HOST:PORT[/DB]",
 * "unix:PATH"): 0, or -1 with a message naming what is wrong. */
int cd_store_check_uri(const char *uri, char *err, size_t errlen);

/* A store for uri (NULL for "memory": no store). The password, for Redis,
 * comes from password_file when set, else from CONTACTD_STORE_PASSWORD.
 * Starts the store threads; nothing connects yet (the first operation
 * does, so a store that is down at startup costs no startup time).
 * *failed is set when the store could not be created (err says why). */
cd_store *cd_store_create(const char *uri, const char *password_file, const cd_limits *l, int *failed, char *err,
                          size_t errlen);
/* Join the threads after they have written what is queued (each write
 * bounded by the timeouts; an open breaker drops the rest) and free
 * everything. Every loop must be detached. */
void cd_store_destroy(cd_store *s);
/* The URI as reported (no password): "memory" when s is NULL. */
const char *cd_store_describe(const cd_store *s);
/* Close this loop's completion handle; on that loop's thread, at shutdown.
 * Lookups still in flight are answered by their deadline timers. */
void cd_store_detach_loop(cd_store *s, uv_loop_t *loop);

/* Look the registration of `id` up (on `loop`'s thread). cb runs exactly
 * once on that loop, within store_timeout_ms: on a hit `msg` is the
 * verified registration, owned by the callee (free it with
 * contactd__v1__register_geometry__free_unpacked(msg, NULL)). Returns -1
 * (cb never runs) only when out of memory. */
typedef void (*cd_store_get_fn)(void *arg, cd_store_result res, Contactd__V1__RegisterGeometry *msg);
int cd_store_get_spec(cd_store *s, uv_loop_t *loop, const char *id, cd_store_get_fn cb, void *arg);

/* Store the registration m under id unless it is stored already (any
 * thread: registrations call it on the worker that built the geometry, so
 * packing a large mesh never runs on a loop). Queued; never blocks on I/O. */
void cd_store_put_spec(cd_store *s, const char *id, const Contactd__V1__RegisterGeometry *m);

/* Per-tenant visibility (cd_tenants.h): the marker key
 * CD_STORE_SEEN_PREFIX "<tenant in hex>:<id>" exists while a tenant sees
 * an id (a file in dir:, a string in Redis), written when a principal of
 * the tenant registers the id and deleted when one releases it. */
#define CD_STORE_SEEN_PREFIX "contactd:v1:seen:"
/* Whether tenant's marker for id exists (on loop's thread): cb runs once on
 * that loop, within store_timeout_ms, with CD_STORE_HIT (msg NULL),
 * CD_STORE_MISS or CD_STORE_UNAVAILABLE. -1 (cb never runs) when out of
 * memory. */
int cd_store_get_seen(cd_store *s, uv_loop_t *loop, const char *tenant, const char *id, cd_store_get_fn cb,
                      void *arg);
/* Write (put) or delete (del) tenant's marker for id: queued like the
 * records, but all marker writes go out in the order they were asked (one
 * store thread takes them), so a release after a registration leaves no
 * marker behind. Never blocks on I/O. */
void cd_store_put_seen(cd_store *s, const char *tenant, const char *id);
void cd_store_del_seen(cd_store *s, const char *tenant, const char *id);

void cd_store_get_stats(cd_store *s, cd_store_stats *st);
const char *cd_store_breaker_name(cd_breaker_state b);

/* Record encoding, for the backends and tests. */
#define CD_STORE_KEY_PREFIX "contactd:v1:spec:"
/* The longest key: a marker's, with a tenant of CD_PRINCIPAL_NAME_MAX - 1
 * bytes in hex. */
#define CD_STORE_KEY_MAX 256
/* The record for m (malloc'd, *len bytes) or NULL when out of memory. */
uint8_t *cd_store_record_encode(const Contactd__V1__RegisterGeometry *m, size_t *len);
/* The registration in a record, if it is one and its id is `id`; NULL
 * otherwise (with why[] saying what failed). */
Contactd__V1__RegisterGeometry *cd_store_record_decode(const uint8_t *data, size_t len, const char *id,
                                                       const cd_limits *l, char *why, size_t whylen);

/* The store's part of the /metrics text (cd_store_metrics.c), appended to o
 * by cd_metrics_render. */
typedef struct cd_server cd_server;
typedef struct cd_fmt_buf cd_fmt_buf;
void cd_store_metrics_render(cd_server *s, cd_fmt_buf *o);

/* ---- backends (cd_store_dir.c, cd_store_redis.c) ---------------------- */

typedef enum { CD_BE_OK = 0, CD_BE_MISS = 1, CD_BE_EXISTS = 2, CD_BE_ERROR = -1 } cd_be_rc;

typedef struct cd_store_backend {
  const char *name;
  /* A per-thread context (connected lazily by get/put); NULL when out of memory. */
  void *(*open)(const void *cfg);
  /* Read key: CD_BE_OK with *data (malloc'd), CD_BE_MISS, or CD_BE_ERROR
   * (why[] says what failed; the context reconnects on its next use). */
  cd_be_rc (*get)(void *ctx, const char *key, uint8_t **data, size_t *len, char *why, size_t whylen);
  /* Write key unless it exists: CD_BE_OK, CD_BE_EXISTS or CD_BE_ERROR. */
  cd_be_rc (*put)(void *ctx, const char *key, const uint8_t *data, size_t len, char *why, size_t whylen);
  /* Delete key: CD_BE_OK, CD_BE_MISS (it did not exist) or CD_BE_ERROR. */
  cd_be_rc (*del)(void *ctx, const char *key, char *why, size_t whylen);
  void (*close)(void *ctx);
} cd_store_backend;

typedef struct cd_store_cfg {
  int kind; /* 1 = dir, 2 = redis TCP, 3 = redis Unix socket */
  char path[CD_STORE_PATH_MAX]; /* dir: the directory; unix: the socket */
  char host[256];
  int port, db;
  char password[256]; /* "" = no AUTH */
  uint64_t connect_timeout_ms, op_timeout_ms, max_record_bytes;
} cd_store_cfg;

extern const cd_store_backend cd_store_dir_backend;
extern const cd_store_backend cd_store_redis_backend;

#endif
