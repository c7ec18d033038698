/* cd_pool.c — worker threads, job queues served in turn (mutex + condition
 * variable) and per-loop completion queues (sinks) drained on their loop
 * after uv_async_send. */
#include "cd_pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "cd_log.h"

typedef struct worker_slot {
  cd_worker w;
  pthread_t thread;
  struct cd_pool *pool;
  _Atomic uint64_t busy_ns;
} worker_slot;

struct cd_sink {
  uv_async_t async;
  uv_idle_t poller;   /* active while the loop polls for results */
  pthread_mutex_t mu;
  cd_job *head, *tail; /* finished jobs, FIFO */
  uint64_t pending;   /* submitted here, done() not run yet; loop thread only */
  atomic_int_fast64_t folded; /* jobs folded (cd_pool_fold_done): taken off pending by drain() */
  uint64_t poll_ns;   /* the last submit's pool's polling window */
  uint64_t submit_ns; /* the last submit, while polling */
  int open_handles;   /* while closing */
};

struct cd_pool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  cd_jobq own;                 /* jobs submitted without a queue */
  cd_jobq *turn_head, *turn_tail; /* queues holding jobs, next to serve first */
  int heavy_max, heavy_running;   /* heavy jobs allowed at once, running now */
  int stopping;
  atomic_int cancelled; /* cd_pool_cancel: read by workers at any time */
  int n;
  worker_slot *slots;
  cd_sink *home;      /* the pool's own sink (cd_pool_create with a loop) */
  atomic_uint_fast64_t running; /* submitted, not finished running */
  uint64_t poll_ns;   /* cd_pool_poll_results */
  uint64_t start_ns;
};

/* The calling thread's sink: a loop's, or on a worker the sink of the job it
 * runs (so that a job's posts complete where the job does). */
static _Thread_local cd_sink *tls_sink;
/* Set by cd_pool_fold_done during the job running on this worker. */
static _Thread_local int tls_folded;

void cd_pool_sink_set_current(cd_sink *s) { tls_sink = s; }

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Appends a finished (or posted) job to its sink and wakes that loop,
 * which runs its completion in drain(). Any thread. */
static void done_push(cd_job *job) {
  cd_sink *s = job->sink;
  job->next = NULL;
  pthread_mutex_lock(&s->mu);
  if (s->tail) s->tail->next = job;
  else s->head = job;
  s->tail = job;
  pthread_mutex_unlock(&s->mu);
  uv_async_send(&s->async);
}

/* The next job to start (p->mu held): the first job of the first queue in
 * the turn list whose first job may run now (a heavy one only below the
 * heavy limit); that queue then goes to the back of the list, or leaves it
 * when empty, and the queues it passed keep their places. NULL when no
 * queued job may run. */
static cd_job *take(cd_pool *p) {
  cd_jobq *prev = NULL, *q = p->turn_head;
  while (q && q->head->heavy && p->heavy_running >= p->heavy_max) {
    prev = q;
    q = q->next;
  }
  if (!q) return NULL;
  cd_job *job = q->head;
  if (job->heavy) p->heavy_running++;
  q->head = job->next;
  if (!q->head) q->tail = NULL;
  if (prev) prev->next = q->next;
  else p->turn_head = q->next;
  if (p->turn_tail == q) p->turn_tail = prev;
  q->next = NULL;
  q->queued = q->head != NULL;
  if (q->queued) {
    if (p->turn_tail) p->turn_tail->next = q;
    else p->turn_head = q;
    p->turn_tail = q;
  }
  return job;
}

static void *worker_main(void *arg) {
  worker_slot *s = arg;
  cd_pool *p = s->pool;
  for (;;) {
    pthread_mutex_lock(&p->mu);
    cd_job *job;
    /* a stopping pool still drains its queues, heavy jobs included */
    while (!(job = take(p)) && !(p->stopping && !p->turn_head)) pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
    if (!job) break; /* stopping and drained */
    const int heavy = job->heavy; /* job is not ours once done_push has it */

    uint64_t t0 = now_ns();
    ce_arena_reset(s->w.arena);
    tls_sink = job->sink;
    tls_folded = 0;
    job->run(job, &s->w); /* a folded job may be freed by now: not read again */
    tls_sink = NULL;
    ce_arena_reset(s->w.arena);
    atomic_fetch_add(&s->busy_ns, now_ns() - t0);
    atomic_fetch_sub_explicit(&p->running, 1, memory_order_relaxed);

    if (!tls_folded) done_push(job);
    if (heavy) { /* a heavy job that waited for this one may start */
      pthread_mutex_lock(&p->mu);
      p->heavy_running--;
      const int waiting = p->turn_head != NULL;
      pthread_mutex_unlock(&p->mu);
      if (waiting) pthread_cond_signal(&p->cv); /* after unlocking, as in cd_pool_submit */
    }
  }
  return NULL;
}

static void drain(cd_sink *s) {
  for (;;) {
    pthread_mutex_lock(&s->mu);
    cd_job *j = s->head;
    s->head = s->tail = NULL;
    pthread_mutex_unlock(&s->mu);
    /* Folded jobs are counted before the job that carries their completion
     * is pushed, so they are off pending by the time its done() runs. A job
     * folded and then unfolded (it carries its group) may be taken off here
     * and put back by the next drain, before its own done(): pending is one
     * short meanwhile, never below zero (that job is still counted). */
    s->pending -= (uint64_t)atomic_exchange_explicit(&s->folded, 0, memory_order_acquire);
    if (!j) return;
    while (j) {
      cd_job *next = j->next;
      if (j->run) s->pending--; /* posted jobs (run == NULL) were never submitted */
      j->done(j);
      j = next;
    }
  }
}

static void on_async(uv_async_t *h) { drain(h->data); }

/* Each loop iteration while polling: an active idle handle makes the loop
 * poll its sockets without blocking. The core is yielded each time, so a
 * worker or client thread woken on it runs at once. */
static void on_poll(uv_idle_t *h) {
  cd_sink *s = h->data;
  if (!s->pending || now_ns() - s->submit_ns > s->poll_ns) uv_idle_stop(h);
  else sched_yield();
}

cd_sink *cd_pool_sink_create(uv_loop_t *loop) {
  cd_sink *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  pthread_mutex_init(&s->mu, NULL);
  uv_async_init(loop, &s->async, on_async);
  s->async.data = s;
  uv_idle_init(loop, &s->poller);
  s->poller.data = s;
  return s;
}

/* The sink is freed when both its handles have closed (libuv does not
 * promise an order). */
static void on_sink_closed(uv_handle_t *h) {
  cd_sink *s = h->data;
  if (--s->open_handles) return;
  pthread_mutex_destroy(&s->mu);
  free(s);
}

void cd_pool_sink_close(cd_sink *s) {
  drain(s);
  if (tls_sink == s) tls_sink = NULL;
  s->open_handles = 2;
  uv_close((uv_handle_t *)&s->poller, on_sink_closed);
  uv_close((uv_handle_t *)&s->async, on_sink_closed);
}

cd_pool *cd_pool_create(uv_loop_t *loop, int n, size_t arena_budget) {
  /* Everything that can fail comes before the handles and threads, so a
   * failure has only memory to give back. */
  cd_pool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->slots = calloc((size_t)n, sizeof *p->slots);
  /* a first chunk of 1 MiB, or the whole budget when that is smaller */
  const size_t first = arena_budget && arena_budget < (1u << 20) ? arena_budget : (1u << 20);
  for (int i = 0; p->slots && i < n; i++) {
    if ((p->slots[i].w.arena = ce_arena_create(first)) != NULL) continue;
    while (i-- > 0) ce_arena_destroy(p->slots[i].w.arena);
    free(p->slots);
    p->slots = NULL;
  }
  if (p->slots && loop && !(p->home = cd_pool_sink_create(loop))) {
    for (int i = 0; i < n; i++) ce_arena_destroy(p->slots[i].w.arena);
    free(p->slots);
    p->slots = NULL;
  }
  if (!p->slots) {
    free(p);
    return NULL;
  }
  p->n = n;
  p->heavy_max = n;
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->cv, NULL);
  p->start_ns = now_ns();
  for (int i = 0; i < n; i++) {
    worker_slot *s = &p->slots[i];
    s->pool = p;
    s->w.index = i;
    ce_arena_set_budget(s->w.arena, arena_budget);
    if (pthread_create(&s->thread, NULL, worker_main, s) != 0) {
      CD_ERROR("cannot start worker thread", "worker=%d", i);
      abort();
    }
  }
  return p;
}

void cd_pool_name(cd_pool *p, const char *prefix) {
  for (int i = 0; i < p->n; i++) {
    char name[16];
    if (p->n == 1) snprintf(name, sizeof name, "%s", prefix);
    else snprintf(name, sizeof name, "%s-%d", prefix, i);
    pthread_setname_np(p->slots[i].thread, name);
  }
}

void cd_pool_limit_heavy(cd_pool *p, int k) { p->heavy_max = k < 1 ? 1 : k; }

void cd_pool_poll_results(cd_pool *p, uint64_t us) { p->poll_ns = us * 1000; }

static cd_sink *sink_of(cd_pool *p) { return tls_sink ? tls_sink : p->home; }

void cd_pool_submit(cd_pool *p, cd_jobq *q, cd_job *job) {
  if (!q) q = &p->own;
  job->next = NULL;
  cd_sink *s = job->sink = sink_of(p);
  s->pending++;
  atomic_fetch_add_explicit(&p->running, 1, memory_order_relaxed);
  if (p->poll_ns && !job->no_poll) {
    s->poll_ns = p->poll_ns;
    s->submit_ns = now_ns();
    uv_idle_start(&s->poller, on_poll); /* no-op when already polling */
  }
  pthread_mutex_lock(&p->mu);
  if (q->tail) q->tail->next = job;
  else q->head = job;
  q->tail = job;
  if (!q->queued) { /* its first turn comes after the queues already waiting */
    q->queued = 1;
    q->next = NULL;
    if (p->turn_tail) p->turn_tail->next = q;
    else p->turn_head = q;
    p->turn_tail = q;
  }
  pthread_mutex_unlock(&p->mu);
  /* Signalled after unlocking: a worker woken while the lock is still held
   * would only block again on the mutex (two more futex calls and a second
   * wakeup per job, a large share of a small query's round trip when daemon
   * and client share a core). No wakeup is lost: a worker not yet
   * waiting sees the job when it takes the lock. */
  pthread_cond_signal(&p->cv);
}

void cd_pool_post(cd_pool *p, cd_job *job) {
  job->run = NULL;
  job->sink = sink_of(p);
  done_push(job);
}

void cd_pool_fold_done(void) {
  tls_folded = 1;
  atomic_fetch_add_explicit(&tls_sink->folded, 1, memory_order_release);
}

void cd_pool_unfold_done(void) {
  tls_folded = 0;
  atomic_fetch_sub_explicit(&tls_sink->folded, 1, memory_order_release);
}

void cd_pool_cancel(cd_pool *p) { atomic_store_explicit(&p->cancelled, 1, memory_order_relaxed); }

int cd_pool_cancelled(cd_pool *p) { return atomic_load_explicit(&p->cancelled, memory_order_relaxed); }

uint64_t cd_pool_pending(const cd_pool *p) {
  return atomic_load_explicit(&((cd_pool *)p)->running, memory_order_relaxed);
}
int cd_pool_size(const cd_pool *p) { return p->n; }

double cd_pool_utilisation(cd_pool *p, int i) {
  if (i < 0 || i >= p->n) return 0;
  uint64_t wall = now_ns() - p->start_ns;
  if (!wall) return 0;
  double u = (double)atomic_load(&p->slots[i].busy_ns) / (double)wall;
  return u > 1 ? 1 : u;
}

void cd_pool_destroy(cd_pool *p) {
  cd_pool_cancel(p); /* nobody is left to take a build's result: do not wait for it */
  pthread_mutex_lock(&p->mu);
  p->stopping = 1;
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < p->n; i++) {
    pthread_join(p->slots[i].thread, NULL);
    ce_arena_destroy(p->slots[i].w.arena);
  }
  pthread_mutex_destroy(&p->mu);
  pthread_cond_destroy(&p->cv);
  if (p->home) cd_pool_sink_close(p->home);
  free(p->slots);
  free(p);
}
