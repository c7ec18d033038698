/* cd_loop.c — event loop threads and their inboxes (ownership rules: cd_loop.h).
 *
 * How connections reach a loop: one accepting loop hands each accepted
 * descriptor to the loop with the fewest connections (cd_server.c), which
 * opens it with uv_tcp_open / uv_pipe_open. Chosen over SO_REUSEPORT
 * listeners because
 *   - the Unix socket has no SO_REUSEPORT spreading, so it needs a hand-off
 *     anyway, and one path for both listeners is simpler;
 *   - the kernel spreads SO_REUSEPORT connections by a hash of the peer's
 *     address and port, blind to how many connections each loop already
 *     has; long-lived client connections then pile up unevenly, where the
 *     hand-off picks the least-loaded loop every time;
 *   - with one listening socket, max_connections, the spare descriptors
 *     taken when memory runs out (cd_spare.c) and the shutdown (one
 *     listener to close, no connection left in a closed listener's accept
 *     queue) work as they did with one loop.
 * The cost is one accept, a dup and a wake-up of the owning loop per
 * connection, paid once per connection, not per request. */
#include "cd_loop.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#if defined(__SANITIZE_THREAD__)
/* the sanitizer runtime's close() hook (GCC ships no header declaring it) */
void __sanitizer_syscall_pre_impl_close(long fd);
#endif

#include "cd_log.h"
#include "cd_pool.h"
#include "cd_server.h"

static _Thread_local cd_loop *tls_loop;

cd_loop *cd_loop_current(void) { return tls_loop; }

void cd_loop_fd_closed(int fd) {
#if defined(__SANITIZE_THREAD__)
  __sanitizer_syscall_pre_impl_close((long)fd);
#else
  (void)fd;
#endif
}

#if defined(__SANITIZE_THREAD__)
static pthread_mutex_t fd_mu = PTHREAD_MUTEX_INITIALIZER;
void cd_loop_fd_lock(void) { pthread_mutex_lock(&fd_mu); }
void cd_loop_fd_unlock(void) { pthread_mutex_unlock(&fd_mu); }
#else
void cd_loop_fd_lock(void) {}
void cd_loop_fd_unlock(void) {}
#endif

void cd_loop_set_current(cd_loop *l) {
  tls_loop = l;
  cd_pool_sink_set_current(l ? l->sink : NULL);
}

static void on_wake(uv_async_t *h) {
  cd_loop *l = h->data;
  pthread_mutex_lock(&l->mu);
  cd_task *t = l->inbox_head;
  l->inbox_head = l->inbox_tail = NULL;
  pthread_mutex_unlock(&l->mu);
  while (t) {
    cd_task *next = t->next;
    t->run(t);
    t = next;
  }
}

int cd_loop_post(cd_loop *l, cd_task *t) {
  t->next = NULL;
  pthread_mutex_lock(&l->mu);
  if (l->closed) {
    pthread_mutex_unlock(&l->mu);
    return -1;
  }
  if (l->inbox_tail) l->inbox_tail->next = t;
  else l->inbox_head = t;
  l->inbox_tail = t;
  uv_async_send(&l->wake); /* under the lock: the handle is not closed meanwhile */
  pthread_mutex_unlock(&l->mu);
  return 0;
}

/* Before each poll: how long the turn that just ended worked. */
static void on_turn(uv_prepare_t *h) {
  cd_loop *l = h->data;
  uint64_t now = uv_hrtime(), idle = uv_metrics_idle_time(l->uv);
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  uint64_t cpu = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  if (l->turn_at_ns) {
    uint64_t busy = now - l->turn_at_ns - (idle - l->turn_idle_ns), used = cpu - l->turn_cpu_ns;
    if (busy > l->longest_turn_ns) l->longest_turn_ns = busy;
    if (used > l->longest_turn_cpu_ns) l->longest_turn_cpu_ns = used;
  }
  l->turn_at_ns = now;
  l->turn_idle_ns = idle;
  l->turn_cpu_ns = cpu;
  l->hs_spent_ns = 0; /* the poll's callbacks get a fresh handshake budget */
}

int cd_loop_init(cd_loop *l, cd_server *s, int index, uv_loop_t *uv) {
  l->srv = s;
  l->index = index;
  if (!uv) {
    if (uv_loop_init(&l->own) != 0) return -1;
    uv = &l->own;
  }
  l->uv = uv;
  pthread_mutex_init(&l->mu, NULL);
  pthread_mutex_init(&l->conns_mu, NULL);
  uv_async_init(uv, &l->wake, on_wake);
  l->wake.data = l;
  uv_idle_init(uv, &l->mem_pump);
  l->mem_pump.data = l;
  uv_timer_init(uv, &l->mem_sweep);
  l->mem_sweep.data = l;
  /* Three clock reads a turn (one a system call, ~0.2 us): cheap enough to keep on. */
  uv_loop_configure(uv, UV_METRICS_IDLE_TIME);
  uv_prepare_init(uv, &l->turn);
  l->turn.data = l;
  uv_prepare_start(&l->turn, on_turn);
  uv_unref((uv_handle_t *)&l->turn); /* never what keeps the loop running */
  l->sink = cd_pool_sink_create(uv);
  return l->sink ? 0 : -1;
}

static void loop_main(void *arg) {
  cd_loop *l = arg;
  char name[16]; /* loop 0 runs on the main thread, which keeps the process's name */
  snprintf(name, sizeof name, "cd-loop-%d", l->index);
  pthread_setname_np(pthread_self(), name);
  cd_loop_set_current(l);
  uv_run(l->uv, UV_RUN_DEFAULT);
}

int cd_loop_start(cd_loop *l) {
  if (uv_thread_create(&l->thread, loop_main, l) != 0) return -1;
  l->started = 1;
  return 0;
}

void cd_loop_close(cd_loop *l) {
  pthread_mutex_lock(&l->mu);
  l->closed = 1;
  cd_task *t = l->inbox_head;
  l->inbox_head = l->inbox_tail = NULL;
  pthread_mutex_unlock(&l->mu);
  while (t) { /* posted before the close: run them (an adoption closes its descriptor) */
    cd_task *next = t->next;
    t->run(t);
    t = next;
  }
  if (l->sink) cd_pool_sink_close(l->sink);
  l->sink = NULL;
  uv_close((uv_handle_t *)&l->wake, NULL);
  uv_close((uv_handle_t *)&l->mem_pump, NULL);
  uv_close((uv_handle_t *)&l->mem_sweep, NULL);
  uv_close((uv_handle_t *)&l->turn, NULL);
  if (l->hs_idle_init) uv_close((uv_handle_t *)&l->hs_idle, NULL); /* its queue left with its connections */
}

void cd_loop_join(cd_loop *l) {
  if (!l->started) return;
  uv_thread_join(&l->thread);
  l->started = 0;
  uv_loop_close(&l->own);
}

void cd_loop_free(cd_loop *l) {
  free(l->rbuf);
  l->rbuf = NULL;
  pthread_mutex_destroy(&l->mu);
  pthread_mutex_destroy(&l->conns_mu);
}
