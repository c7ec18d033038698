/* cd_loop.h — the daemon's event loops (io_threads of them), each on its own
 * thread and owning the connections handed to it from accept to close.
 *
 * Loop 0 runs on the main thread: it holds the listeners, the signal
 * handlers and the metrics endpoint, accepts every connection and hands
 * each accepted descriptor to a loop (cd_loop_adopt). A loop talks to
 * another only through its inbox: a list of tasks (cd_task) that its own
 * thread runs after an uv_async_send.
 *
 * The protocol lock (cd_lock / cd_unlock) serialises what every loop shares:
 * the geometry cache and its builds' waiters, statistics, the request-memory
 * accounting and its queue of waiting connections, the session state that a
 * geometry build touches on other connections. Every libuv callback of the
 * daemon's own (connection input, write completions, timers, job
 * completions, tasks) takes it; what runs outside it is libuv's own work:
 * waiting for events, accepting, reading into the buffers, writes the
 * kernel did not take at once. The lock is recursive. */
#ifndef CD_LOOP_H
#define CD_LOOP_H

#include <pthread.h>
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
  /* connections this loop owns (doubly linked; protocol lock) */
  cd_conn *conns;
  /* request_memory_bytes on this loop (cd_conn.c): the idle handle that
   * lets waiting connections in, and the slow-sender sweep */
  uv_idle_t mem_pump;
  uv_timer_t mem_sweep;
  /* per-loop figures (protocol lock); load also counts connections
   * handed to the loop and not yet adopted */
  uint64_t connections, connections_total, requests, load;
  /* tasks other loops post to this one (protocol lock: *_posted) */
  cd_task pump_task, sweep_task, drain_task, grace_task, close_task;
  int pump_posted, sweep_posted;
  char *rbuf;          /* the loop's read buffer (cd_conn.c) and whether a read holds it */
  int rbuf_busy;
} cd_loop;

/* The loop of the calling thread (NULL on workers). */
cd_loop *cd_loop_current(void);
void cd_loop_set_current(cd_loop *l);

/* The protocol lock (see above). */
void cd_lock(void);
void cd_unlock(void);

/* Initialise loop l on uv (loop 0: the main loop) or on its own libuv loop
 * (uv NULL); 0 on success. */
int cd_loop_init(cd_loop *l, cd_server *s, int index, uv_loop_t *uv);
/* Start the thread of a loop that has its own libuv loop. */
int cd_loop_start(cd_loop *l);
/* Run t->run(t) on l's thread, under the protocol lock (any thread). The
 * task must stay valid until it runs. Returns -1 when l no longer runs
 * tasks (then t is not run). */
int cd_loop_post(cd_loop *l, cd_task *t);
/* Give an accepted descriptor to l (any thread). -1: l cannot take it. */
int cd_loop_adopt(cd_loop *l, uv_os_sock_t fd, int is_tcp);
/* On l's thread: close its own handles (wake, pump, sweep, sink) so that
 * its loop runs out. */
void cd_loop_close(cd_loop *l);
/* Join the thread of l (after cd_loop_close ran on it). */
void cd_loop_join(cd_loop *l);
/* Release what the loop allocated (after its thread and loop are done). */
void cd_loop_free(cd_loop *l);

#endif
