/* cd_pool.h — the worker pool: our own pthreads (not uv_queue_work, which
 * would starve libuv's file and DNS work), each with its own ce_arena.
 *
 * A job's run() executes on a worker; its done() then executes on the loop
 * thread that submitted it. Each loop has a sink: a completion queue and
 * an uv_async handle; workers hand a finished job to its submitter's sink
 * and wake that loop (uv_async_send coalesces wake-ups, so the loop drains
 * the whole queue each time). One pool serves every loop.
 *
 * Jobs wait in job queues (cd_jobq), one per client: the workers serve the
 * queues that hold jobs in turn, one job from each (round robin), so a
 * client with hundreds of jobs queued delays another client's next job by
 * at most the jobs already running, not by its whole backlog. Within one
 * queue jobs start in the order they were submitted.
 *
 * Heavy jobs (geometry builds, seconds each) may be limited to fewer
 * workers than the pool has, so that queries still find a worker while
 * builds run: a queue whose next job is heavy loses its turn while the
 * limit is reached, and the jobs behind it wait with it (their replies
 * would wait for its reply anyway: a connection's replies leave in request
 * order). */
#ifndef CD_POOL_H
#define CD_POOL_H

#include <stdint.h>
#include <uv.h>

#include "ce.h"

typedef struct cd_worker {
  int index;
  ce_arena *arena;       /* reset by the pool before each job */
} cd_worker;

typedef struct cd_job cd_job;
struct cd_job {
  void (*run)(cd_job *job, cd_worker *w); /* on a worker thread */
  void (*done)(cd_job *job);              /* on the loop thread */
  int heavy;                              /* counts against cd_pool_limit_heavy */
  int no_poll;                            /* long: submitting it starts no polling (cd_pool_poll_results) */
  cd_job *next;                           /* pool-private */
  struct cd_sink *sink;                   /* pool-private: where done() runs */
};

/* A loop's completion queue: each done() runs on its loop's thread, with
 * no lock held. Created and closed on the loop's thread. */
typedef struct cd_sink cd_sink;
cd_sink *cd_pool_sink_create(uv_loop_t *loop);
/* Jobs this thread submits (and, on a worker, posts) complete on s. */
void cd_pool_sink_set_current(cd_sink *s);
/* Run the done() of every finished job, then close the handles; s is freed
 * once they are closed. No job may be submitted to s afterwards. */
void cd_pool_sink_close(cd_sink *s);

/* One client's job queue, owned by the caller (embedded in its connection)
 * and zeroed before first use; it must stay in place until its last job has
 * started. The fields are the pool's, under its lock. */
typedef struct cd_jobq cd_jobq;
struct cd_jobq {
  cd_job *head, *tail; /* queued jobs, FIFO */
  cd_jobq *next;       /* in the pool's turn list while it holds jobs */
  int queued;          /* in the turn list */
};

typedef struct cd_pool cd_pool;

/* Start n workers; each arena may grow to arena_budget bytes (0 = no cap)
 * and starts with 1 MiB or the budget, the smaller. loop non-NULL: the pool
 * has a sink of its own there, used by threads that set none
 * (cd_pool_sink_set_current), and closed by cd_pool_destroy. */
cd_pool *cd_pool_create(uv_loop_t *loop, int n, size_t arena_budget);
/* At most k heavy jobs run at once (k >= 1; default: the pool's size).
 * Before the first submit. */
void cd_pool_limit_heavy(cd_pool *p, int k);
/* After each submit (of a job without no_poll), the loop polls for
 * results for up to `us` microseconds (or until no job is pending) instead
 * of sleeping in the kernel, yielding its core each iteration (0 = never,
 * the default). A
 * small job's result then reaches the loop without waking a sleeping core:
 * on a VM whose idle cores halt, each wake-up of a sleeping core costs tens
 * of microseconds. The cost is loop CPU for at most `us` per submit, for a
 * quick job only its duration. Loop thread. */
void cd_pool_poll_results(cd_pool *p, uint64_t us);
/* Queue a job on q (loop thread); q NULL = the pool's own queue, which
 * takes its turns like any client's. */
void cd_pool_submit(cd_pool *p, cd_jobq *q, cd_job *job);
/* Hand a job straight to the completion queue (any thread, typically a
 * worker inside run()): its done() runs on the loop, in FIFO order with the
 * jobs that finish after it; run is set to NULL and never called. Not
 * counted by cd_pool_pending. */
void cd_pool_post(cd_pool *p, cd_job *job);
/* Folding, for a group of jobs that completes as one (a query's jobs):
 * inside run(), on a worker, cd_pool_fold_done says this job has no done();
 * its completion is carried by the group's last job, which calls
 * cd_pool_unfold_done to be completed after all (its done() runs on the
 * loop and sees the whole group finished). The loop is then woken once
 * per group instead of once per job. Fold before the group's count goes
 * down: a folded job may be freed as soon as the group's done() has run,
 * and the pool does not touch it after run() returns. */
void cd_pool_fold_done(void);
void cd_pool_unfold_done(void);
/* Shutdown: ask long jobs (geometry builds) to stop early. Sets a flag that
 * jobs poll with cd_pool_cancelled() at their cancellation points; queued
 * jobs still run (and see the flag at once). Any thread; also set by
 * cd_pool_destroy. */
void cd_pool_cancel(cd_pool *p);
int cd_pool_cancelled(cd_pool *p);
/* Jobs submitted that have not finished running. */
uint64_t cd_pool_pending(const cd_pool *p);
int cd_pool_size(const cd_pool *p);
/* Name the pool's threads "<prefix>-<i>" (or "<prefix>" for a pool of
 * one), as top, ps -L and /proc/PID/task/TID/comm show them; 15 characters
 * at most. Any thread; a failure leaves the inherited name. */
void cd_pool_name(cd_pool *p, const char *prefix);
/* Busy fraction of worker i since the pool started. */
double cd_pool_utilisation(cd_pool *p, int i);
/* Stop the workers after the queue drains, join them; with a sink of its
 * own, run its remaining done() callbacks and close it (callers then run
 * the loop until handles close). Other sinks keep their finished jobs until
 * cd_pool_sink_close. */
void cd_pool_destroy(cd_pool *p);

#endif
