/* cd_loop.h — the daemon's event loops (io_threads of them), each on its own
 * thread and owning the connections handed to it from accept to close.
 *
 * Loop 0 runs on the main thread: it holds the listeners, the signal
 * handlers, the shutdown timer and the metrics endpoint, accepts every
 * connection and hands each accepted descriptor to a loop (cd_conn_adopt).
 * A loop talks to another only through its inbox: a list of tasks
 * (cd_task) that its own thread runs after an uv_async_send.
 *
 * The loops run in parallel; there is no lock over a whole loop. Who owns
 * what:
 *  - A connection (cd_conn: its state and flags, input, reply ring, write
 *    queue and timers), its session (cd_session: geometry references,
 *    streams) and its requests belong to its loop's
 *    thread: only that thread touches them, without a lock. Exceptions:
 *    `refs` and `cancelled` are atomic (a build's worker and the build's
 *    loop hold and drop references to the connections waiting for it, and
 *    workers read `cancelled`); `mem_next` / `mem_waiting` are under the
 *    server's mem_mu; `out_pub` and `cut_state` are atomic (the
 *    output_memory_bytes scan of cd_outmem.c); `loop` and `id` never
 *    change; a loop's list of connections is changed under its conns_mu.
 *  - Work for another loop's connection is posted to that loop
 *    (cd_loop_post): a geometry build's waiters are answered on the loops
 *    that added them (cd_cache.h), request memory freed on one loop wakes
 *    the loop of the oldest waiting connection (its pump task), a shutdown
 *    posts a drain to each loop, the grace timer a close-all, the last
 *    connection gone a finish to loop 0.
 *  - Workers and the codec thread touch no loop state: a job's done() runs
 *    on the loop that submitted it (its sink, cd_pool.h).
 * What is shared has its own guard:
 *  - the geometry cache: its own recursive mutex (cd_cache_lock), never held
 *    while another lock below is taken except a build's j->mu and an inbox;
 *  - statistics (cd_stats): atomic counters; per-loop figures below:
 *    atomic, written by their loop (load also by loop 0 at a hand-off);
 *  - request_memory_bytes: atomic request_bytes (reserved with a
 *    compare-and-swap), the queue of waiting connections under mem_mu;
 *    reply_memory_bytes: atomic reply_bytes; output_memory_bytes: atomic
 *    totals, a connection to cut is claimed atomically and closed by a
 *    task on its loop (cd_outmem.c);
 *  - the connection count, next connection id, draining / finishing /
 *    finish_posted: atomics; listeners, signals, spare descriptors, the
 *    drain timer and the metrics endpoint: loop 0 only;
 *  - a loop's inbox: its mutex `mu`; the *_posted flags are atomic (one
 *    copy of a task in an inbox at a time);
 *  - a geometry build's list of waiting connections: the build's own mutex
 *    (cd_handlers.c).
 * Lock order: cache lock, then a build's mutex or mem_mu, then an inbox's
 * mutex; a loop's conns_mu is taken alone. None of them is held across a
 * wait for I/O. */
#ifndef CD_LOOP_H
#define CD_LOOP_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "cd_task.h"

typedef struct cd_server cd_server;
typedef struct cd_conn cd_conn;
typedef struct cd_sink cd_sink;

typedef struct cd_loop {
  cd_server *srv;
  int index;
  uv_loop_t *uv;
  uv_loop_t own;       /* loops 1..n-1: their libuv loop */
  uv_thread_t thread;  /* loops 1..n-1 */
  int started;         /* thread running */
  cd_sink *sink;       /* job completions for this loop's connections */
  uv_async_t wake;     /* inbox and adoptions */
  pthread_mutex_t mu;  /* inbox */
  cd_task *inbox_head, *inbox_tail;
  int closed;          /* wake handle closed: nothing more is posted */
  /* connections this loop owns (doubly linked): linked and unlinked by
   * this loop under conns_mu, which other loops take to read the list
   * (cd_outmem.c); this loop reads it without */
  cd_conn *conns;
  pthread_mutex_t conns_mu;
  /* request_memory_bytes on this loop (cd_input.c): the idle handle that
   * lets waiting connections in, and the slow-sender sweep */
  uv_idle_t mem_pump;
  uv_timer_t mem_sweep;
  /* per-loop figures, written by this loop (load also by loop 0 when it
   * hands a connection over), read by any (Stats, /metrics); load counts
   * the connections handed to the loop and not yet closed */
  _Atomic uint64_t connections, connections_total, requests, load;
  /* tasks other loops post to this one; *_posted: that task is in the inbox */
  cd_task pump_task, sweep_task, drain_task, grace_task, close_task;
  atomic_int pump_posted, sweep_posted;
  char *rbuf;          /* the loop's read buffer (cd_conn.c) and whether a read holds it */
  int rbuf_busy;
  /* the longest turn: time between two passes of the prepare phase less
   * the time spent waiting in the poll (uv_metrics_idle_time), i.e. the
   * callbacks one turn ran, and the most CPU time one turn took (the
   * thread's clock: on a busy machine the first also counts waiting for a
   * core); written by this loop, read by /metrics */
  uv_prepare_t turn;
  uint64_t turn_at_ns, turn_idle_ns, turn_cpu_ns;
  _Atomic uint64_t longest_turn_ns, longest_turn_cpu_ns;
  /* tls_handshake_turn_us (cd_conn.c): handshake work done since the
   * turn's poll began (reset by `turn`) or since hs_idle began; the
   * connections whose handshake bytes wait for a later turn, oldest first,
   * and the idle handle that takes them (initialised on first use) */
  uint64_t hs_spent_ns;
  cd_conn *hs_head, *hs_tail;
  uv_idle_t hs_idle;
  int hs_idle_init;
} cd_loop;

/* The loop of the calling thread (NULL on workers). */
cd_loop *cd_loop_current(void);
void cd_loop_set_current(cd_loop *l);

/* libuv closed descriptor fd on this loop's thread (uv_close of a
 * connection). libuv closes with a raw system call that ThreadSanitizer
 * does not see, so without this the accepting loop reusing the number for
 * a new connection is reported as a race with this loop's last use of it.
 * The close and this call, and the accepting loop's making of descriptors,
 * each hold cd_loop_fd_lock: otherwise the number can be reused between
 * the real close and the annotation. Both do nothing in other builds. */
void cd_loop_fd_closed(int fd);
void cd_loop_fd_lock(void);
void cd_loop_fd_unlock(void);

/* Initialise loop l on uv (loop 0: the main loop) or on its own libuv loop
 * (uv NULL); 0 on success. */
int cd_loop_init(cd_loop *l, cd_server *s, int index, uv_loop_t *uv);
/* Start the thread of a loop that has its own libuv loop. */
int cd_loop_start(cd_loop *l);
/* Run t->run(t) on l's thread (called from any thread). The
 * task must stay valid until it runs. Returns -1 when l no longer runs
 * tasks (then t is not run). */
int cd_loop_post(cd_loop *l, cd_task *t);
/* On l's thread: close its own handles (wake, pump, sweep, sink) so that
 * its loop runs out. */
void cd_loop_close(cd_loop *l);
/* Join the thread of l (after cd_loop_close ran on it). */
void cd_loop_join(cd_loop *l);
/* Release what the loop allocated (after its thread and loop are done). */
void cd_loop_free(cd_loop *l);

#endif
