/* cd_server.h — the daemon's shared state and its event loops (cd_loop.h):
 * TCP and Unix listeners, accept with a connection limit and the hand-off of
 * each connection to a loop, the worker pool, the geometry cache,
 * statistics, the metrics endpoint and graceful shutdown of every loop.
 * Which thread may touch which field: see the ownership rules in cd_loop.h. */
#ifndef CD_SERVER_H
#define CD_SERVER_H

#include <stdatomic.h>

#include <uv.h>

#include "cd_cache.h"
#include "cd_config.h"
#include "cd_loop.h"
#include "cd_pool.h"
#include "cd_proto.h"
#include "cd_security.h"
#include "cd_spare.h"
#include "cd_stats.h"

typedef struct cd_conn cd_conn;
typedef struct cd_http cd_http;
typedef struct cd_store cd_store;
typedef struct cd_fetch cd_fetch;

typedef struct cd_server {
  uv_loop_t *loop;     /* loop 0's: listeners, signals, metrics */
  cd_loop *loops;      /* io_threads of them; loops[0] runs on the main thread */
  int nloops;
  cd_config cfg;
  cd_pool *pool;
  cd_pool *codec;      /* one thread decoding large requests, encoding large replies (cd_input.c, cd_output.c) */
  cd_cache *cache;
  cd_store *store;     /* NULL = memory only (cd_store.h) */
  cd_fetch *fetch;     /* store lookups in flight (cd_fetch.h) */
  struct cd_tenants *tenants; /* which tenant sees which geometry id (cd_tenants.h) */
  cd_stats stats;
  cd_security sec;     /* TLS, principals, per-address accounting, SIGHUP reloads (cd_security.h) */
  cd_http *http;       /* the HTTP port (cd_http.c), or NULL */
  int http_port;       /* the HTTP port as bound (0 = off) */
  struct cd_publish *publish;  /* latest result of each published scene (any thread) */
  struct cd_viewers *viewers;  /* the viewer's routes and event streams (HTTP loop) */
  uv_tcp_t tcp;
  uv_pipe_t unix_sock;
  int have_tcp, have_unix;
  int tcp_port;        /* bound port (resolves --listen HOST:0) */
  uv_signal_t sigterm, sigint;
  uv_timer_t drain_timer;
  /* Converted results held by the queries in progress, all connections
   * (reserved by worker threads, bounded by reply_memory_bytes). */
  atomic_size_t reply_bytes;
  /* The input side, all connections (cd_input.c):
   * frames admitted and being received plus decoded requests not yet
   * answered, bounded by request_memory_bytes; its high-water mark; the
   * connections whose next frame waits for room, oldest first; the idle
   * handle that admits them once room is freed (outside any callback that
   * freed it, so one connection's input is never processed inside
   * another's); the timer that, while any connection waits, closes the
   * connections whose admitted frame arrives too slowly (frame_grace_ms,
   * frame_min_rate_bytes). */
  _Atomic uint64_t request_bytes, request_bytes_peak;
  pthread_mutex_t mem_mu;           /* the queue below and each queued connection's mem_next / mem_waiting */
  cd_conn *mem_wait_head, *mem_wait_tail;
  atomic_int mem_waiters;           /* its length (written under mem_mu, read anywhere) */
  _Atomic uint64_t next_conn_id;
  cd_spare spare_tcp, spare_unix; /* loop 0: take the connections we have no memory for */
  atomic_int draining;  /* SIGTERM/SIGINT seen: not accepting (written on loop 0) */
  atomic_int finishing; /* every connection is gone: the loops are closing (loop 0) */
  atomic_int finish_posted; /* another loop asked loop 0 to finish */
  _Atomic uint64_t conn_peak; /* most connections open since the heap was last trimmed */
  /* Connections admitted and counted against max_connections. A refused
   * one (per address, or over the cap) gives its seat back at once rather
   * than when its close completes, so that a burst of refusals, all
   * accepted in one turn and closing together, cannot fill the seats of
   * the clients that arrive behind it (stats.connections counts every
   * open socket, refused or not). */
  _Atomic uint64_t seated;
  /* output_memory_bytes (cd_outmem.c): its value (set before the loops
   * start); the reply bytes queued on every connection; those of closing
   * connections (on their way out); those of connections another loop
   * has asked to cut and that are not closing yet. Atomic. */
  uint64_t output_budget;
  _Atomic uint64_t output_bytes, output_cutting, output_cut_pending;
  int exit_code;        /* loop 0 */
  /* The protocol the connections hand their requests to (cd_proto.h). */
  const cd_proto *proto;
  /* Called by the transport on a connection's loop when a connection has
   * ended (was_open: it had been opened and counted) or was handed to a
   * loop and never opened; it is already unlinked and uncounted. The server
   * sits above its connections: this is how they report back up. */
  void (*conn_ended)(struct cd_server *s, int was_open);
} cd_server;

/* Bind listeners, start the pool; 0 on success (errors are logged). Each
 * connection's requests go to proto. */
int cd_server_init(cd_server *s, uv_loop_t *loop, const cd_config *cfg, const cd_proto *proto);
/* Stop accepting, let in-flight work finish and replies flush, then close
 * everything (the loop then runs out of handles). Idempotent. */
void cd_server_shutdown(cd_server *s, const char *reason);
/* Release what init allocated (after the main loop has returned): joins the
 * other loops' threads. */
void cd_server_free(cd_server *s);

/* The loop a new connection goes to: the one with the fewest (loop 0). */
cd_loop *cd_server_pick_loop(cd_server *s);
/* While draining: finish once no connection is open or on its way. */
void cd_server_check_drained(cd_server *s);

/* Each loop's figures for a StatsReply, allocated from b; returns how many
 * (0 when b has no room). */
struct cd_budget;
struct Contactd__V1__LoopStats;
size_t cd_server_loop_stats(cd_server *s, struct cd_budget *b, struct Contactd__V1__LoopStats ***out);


#endif
