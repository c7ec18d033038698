/* cd_server.h — the daemon's shared state and its libuv loop: TCP and Unix
 * listeners, accept with a connection limit, the worker pool, the geometry
 * cache, statistics, the metrics endpoint and graceful shutdown. */
#ifndef CD_SERVER_H
#define CD_SERVER_H

#include <stdatomic.h>

#include <uv.h>

#include "cd_cache.h"
#include "cd_config.h"
#include "cd_pool.h"
#include "cd_spare.h"
#include "cd_stats.h"

typedef struct cd_conn cd_conn;
typedef struct cd_metrics cd_metrics;
typedef struct cd_store cd_store;
typedef struct cd_fetch cd_fetch;

typedef struct cd_server {
  uv_loop_t *loop;
  cd_config cfg;
  cd_pool *pool;
  cd_pool *codec;      /* one thread decoding large requests, encoding large replies (cd_conn.c) */
  cd_cache *cache;
  cd_store *store;     /* NULL = memory only (cd_store.h) */
  cd_fetch *fetch;     /* store lookups in flight (cd_fetch.h) */
  cd_stats stats;
  cd_metrics *metrics;
  int http_port;       /* the HTTP port as bound (0 = off) */
  struct cd_publish *publish;  /* latest result of each published scene (any thread) */
  struct cd_viewers *viewers;  /* the viewer's routes and event streams (HTTP loop) */
  uv_tcp_t tcp;
  uv_pipe_t unix_sock;
  int have_tcp, have_unix;
  int tcp_port;        /* bound port (resolves --listen HOST:0) */
  uv_signal_t sigterm, sigint;
  uv_timer_t drain_timer;
  cd_conn *conns;      /* open connections (doubly linked) */
  /* Converted results held by the queries in progress, all connections
   * (reserved by worker threads, bounded by reply_memory_bytes). */
  atomic_size_t reply_bytes;
  /* The input side, all connections (loop thread only; cd_conn.c):
   * frames admitted and being received plus decoded requests not yet
   * answered, bounded by request_memory_bytes; its high-water mark; the
   * connections whose next frame waits for room, oldest first; the idle
   * handle that admits them once room is freed (outside any callback that
   * freed it, so one connection's input is never processed inside
   * another's); the timer that, while any connection waits, closes the
   * connections whose admitted frame arrives too slowly (frame_grace_ms,
   * frame_min_rate_bytes). */
  uint64_t request_bytes, request_bytes_peak;
  cd_conn *mem_wait_head, *mem_wait_tail;
  uv_idle_t mem_pump;
  uv_timer_t mem_sweep;
  uint64_t next_conn_id;
  cd_spare spare_tcp, spare_unix; /* take the connections we have no memory for */
  int draining;        /* SIGTERM/SIGINT seen: not accepting */
  int exit_code;
} cd_server;

/* Bind listeners, start the pool; 0 on success (errors are logged). */
int cd_server_init(cd_server *s, uv_loop_t *loop, const cd_config *cfg);
/* Stop accepting, let in-flight work finish and replies flush, then close
 * everything (the loop then runs out of handles). Idempotent. */
void cd_server_shutdown(cd_server *s, const char *reason);
/* Release what init allocated (after the loop has returned). */
void cd_server_free(cd_server *s);

/* Called by cd_conn when a connection is gone; may finish a shutdown. */
void cd_server_conn_closed(cd_server *s, cd_conn *c);

/* Prometheus text exposition of the server state into buf; returns length. */
size_t cd_server_render_metrics(cd_server *s, char *buf, size_t cap);
/* The store's part of it, appended at buf + *n (cd_store_metrics.c). */
void cd_server_render_store_metrics(cd_server *s, char *buf, size_t cap, size_t *n);

#endif
