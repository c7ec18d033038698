/* cd_query.c — scheduling a contact query: its pairs split across the
 * workers in jobs, each pair's result converted (cd_reply.c) within the
 * query's and the server's reply budgets, the first failure kept, the
 * reply handed to the transport once every job is done. */
#include "cd_query.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cd_proto.h"
#include "cd_fmt.h"
#include "cd_pool.h"
#include "cd_server.h"

typedef struct cd_qjob {
  cd_job job;
  cd_query *q;
  int64_t first, count;
  cd_budget out; /* wire messages of this job's results */
  size_t reserved; /* bytes of the reply budgets reserved for them */
  cd_status err;
  int64_t err_pair;
} cd_qjob;

/* Add `need` to *counter unless that would pass limit (0 = none); 0 on
 * success, else -1 with *held = what the counter held. */
static int reserve_bytes(atomic_size_t *counter, size_t need, size_t limit, size_t *held) {
  size_t cur = atomic_load_explicit(counter, memory_order_relaxed);
  do {
    *held = cur;
    if (limit && (need > limit || cur > limit - need)) return -1;
  } while (!atomic_compare_exchange_weak_explicit(counter, &cur, cur + need, memory_order_relaxed,
                                                  memory_order_relaxed));
  return 0;
}

/* Reserve `need` bytes of the query's reply budget (max_reply_bytes) and of
 * the server's (reply_memory_bytes, released by cd_query_free); 0 on
 * success, else 1 (the query's) or 2 (the server's) with *held = what that
 * budget held. */
static int reserve_reply(cd_query *q, size_t need, size_t *held) {
  const cd_limits *l = &q->srv->cfg.limits;
  if (reserve_bytes(&q->reply_bytes, need, (size_t)l->max_reply_bytes, held)) return 1;
  if (reserve_bytes(&q->srv->reply_bytes, need, (size_t)l->reply_memory_bytes, held)) {
    atomic_fetch_sub_explicit(&q->reply_bytes, need, memory_order_relaxed);
    return 2;
  }
  return 0;
}

/* Pair i's `need` bytes did not fit budget `over` (reserve_reply's code),
 * which held `held`: the query fails, and its other jobs stop. */
static void fail_over(cd_qjob *j, int over, size_t held, int64_t i, size_t need) {
  cd_query *q = j->q;
  const cd_qpair *pr = &q->pairs[i];
  atomic_store_explicit(&q->reply_over, 1, memory_order_relaxed);
  const cd_limits *l = &q->srv->cfg.limits;
  char b1[32], b2[32], b3[32];
  if (over == 1)
    cd_status_set(&j->err, CD_EXHAUSTED, "",
                  "reply would be over max_reply_bytes %s: the results converted so far take %s and pair "
                  "%lld (bodies %u and %u) needs %s more; ask for fewer pairs or less detail (no surfaces or "
                  "patches, polygons rather than triangles)",
                  cd_fmt_bytes(b1, sizeof b1, l->max_reply_bytes), cd_fmt_bytes(b2, sizeof b2, held), (long long)i,
                  q->bodies[pr->a].id, q->bodies[pr->b].id, cd_fmt_bytes(b3, sizeof b3, need));
  else
    cd_status_set(&j->err, CD_EXHAUSTED, "",
                  "server busy: the replies being built take %s of reply_memory_bytes %s and pair %lld "
                  "(bodies %u and %u) needs %s more; retry when fewer queries are in flight, or ask for "
                  "less detail",
                  cd_fmt_bytes(b2, sizeof b2, held), cd_fmt_bytes(b1, sizeof b1, l->reply_memory_bytes),
                  (long long)i, q->bodies[pr->a].id, q->bodies[pr->b].id, cd_fmt_bytes(b3, sizeof b3, need));
  j->err_pair = i;
}

static void qjob_pairs(cd_qjob *j, cd_worker *w) {
  cd_query *q = j->q;
  /* The reservation bounds what the results use; the chunks themselves are
   * unbudgeted (0) so a pair's structs never fail half-way once reserved. */
  cd_budget_init(&j->out, 0);
  for (int64_t i = j->first; i < j->first + j->count; i++) {
    if (q->cancelled && atomic_load_explicit(q->cancelled, memory_order_relaxed)) {
      cd_status_set(&j->err, CD_UNAVAILABLE, "", "cancelled: the connection closed");
      j->err_pair = i;
      return;
    }
    /* Another job found the reply too large: the query has failed already. */
    if (atomic_load_explicit(&q->reply_over, memory_order_relaxed)) return;
    const cd_qpair *pr = &q->pairs[i];
    ce_arena_reset(w->arena);
    ce_result r;
    ce_error err;
    err.message[0] = 0;
    uint64_t t0 = cd_stats_now_ns();
    ce_options opt = q->opt.ce;
    if (pr->model) opt.model = (ce_contact_model)(pr->model - 1);
    ce_options eopt = opt; /* a published pair computes what the viewer draws too */
    if (q->pub) cd_publish_engine_options(&eopt);
    ce_errno e = ce_contact(&q->bodies[pr->a].body, &q->bodies[pr->b].body, &eopt, w->arena, &r, &err);
    uint64_t us = (cd_stats_now_ns() - t0) / 1000;
    if (e != CE_OK) {
      char hint[160] = "";
      if (e == CE_ENOMEM) /* the worker's arena: name the limit */
        snprintf(hint, sizeof hint,
                 " (a pair's scratch is bounded by worker_arena_bytes, %llu bytes: ask for less detail, or use "
                 "coarser geometry)",
                 (unsigned long long)q->srv->cfg.limits.worker_arena_bytes);
      cd_status_set(&j->err, cd_status_from_ce(e), "", "pair %lld (bodies %u and %u): %s%s", (long long)i,
                    q->bodies[pr->a].id, q->bodies[pr->b].id, err.message[0] ? err.message : ce_strerror(e), hint);
      j->err_pair = i;
      return;
    }
    size_t need = cd_reply_estimate(&r, &opt), held;
    int over = reserve_reply(q, need, &held);
    if (over) {
      fail_over(j, over, held, i, need);
      return;
    }
    j->reserved += need;
    if (!(q->results[i] = cd_reply_convert(&j->out, &opt, q->bodies[pr->a].id, q->bodies[pr->b].id, &r, us))) {
      cd_status_set(&j->err, CD_EXHAUSTED, "", "pair %lld: out of memory converting the result", (long long)i);
      j->err_pair = i;
      return;
    }
    if (q->pub) q->pub[i] = cd_publish_pair_new(q->bodies[pr->a].id, q->bodies[pr->b].id, &r, q->results[i]);
  }
}

/* The job's converted results packed as records of the reply's results
 * field (cd_splice.h) into q->parts[k], in pair order, and the messages let
 * go. What the packed bytes hold stays within what the pairs reserved (a
 * pair's estimate bounds its messages, and in practice its packed bytes);
 * should the bytes come out larger, the difference is reserved too, under
 * the same limits. */
static void qjob_pack(cd_qjob *j, int64_t k) {
  cd_query *q = j->q;
  size_t *body = malloc((size_t)j->count * sizeof *body), total = 0, held;
  if (!body) goto nomem;
  for (int64_t i = 0; i < j->count; i++)
    total += cd_splice_record_size(&q->results[j->first + i]->base, q->pack_field, &body[i]);
  if (total > j->reserved) {
    int over = reserve_reply(q, total - j->reserved, &held);
    if (over) {
      free(body);
      fail_over(j, over, held, j->first + j->count - 1, total - j->reserved);
      return;
    }
    j->reserved = total;
  }
  uint8_t *out = malloc(total ? total : 1);
  if (!out) {
    free(body);
    goto nomem;
  }
  size_t o = 0;
  for (int64_t i = 0; i < j->count; i++) {
    o += cd_splice_record_write(&q->results[j->first + i]->base, q->pack_field, body[i], out + o);
    q->results[j->first + i] = NULL;
  }
  free(body);
  q->parts[k] = (cd_splice_part){out, o};
  cd_budget_destroy(&j->out);
  return;
nomem:
  cd_status_set(&j->err, CD_EXHAUSTED, "", "pair %lld: out of memory packing the result", (long long)j->first);
  j->err_pair = j->first;
}

/* Only the query's last job to finish reaches the loop (qjob_done); the
 * others fold their completion into it, so the loop is woken once per
 * query, not once per job. */
static void qjob_run(cd_job *job, cd_worker *w) {
  cd_qjob *j = (cd_qjob *)job;
  qjob_pairs(j, w);
  cd_query *q = j->q;
  if (q->pack_field && j->err_pair < 0 && !atomic_load_explicit(&q->reply_over, memory_order_relaxed))
    qjob_pack(j, j - q->jobs);
  /* folded before the count goes down: once it reaches zero the query (this
   * job with it) may be freed at any moment */
  cd_pool_fold_done();
  if (atomic_fetch_sub_explicit(&q->jobs_left, 1, memory_order_acq_rel) == 1) cd_pool_unfold_done();
}

/* A finished published query becomes its scene's latest snapshot. */
static void publish(cd_query *q) {
  cd_pub_snap *snap = cd_publish_snap_new(q->opt.publish, q->nbodies, q->npairs, q->pub);
  if (!snap) return; /* out of memory: the scene keeps its previous result */
  q->pub = NULL;     /* the snapshot has the pairs */
  snap->started_ns = q->t0_ns;
  snprintf(snap->tenant, sizeof snap->tenant, "%s", q->tenant);
  for (int32_t i = 0; i < q->nbodies; i++) {
    cd_pub_body *b = &snap->bodies[i];
    const ce_pose *X = &q->bodies[i].body.X_WB;
    b->id = q->bodies[i].id;
    if (q->bodies[i].entry) snprintf(b->geometry, sizeof b->geometry, "%s", q->bodies[i].entry->id);
    for (int k = 0; k < 9; k++) b->R[k] = X->R.m[k / 3][k % 3];
    b->p[0] = X->p.x;
    b->p[1] = X->p.y;
    b->p[2] = X->p.z;
  }
  cd_publish_put(q->srv->publish, snap);
}

/* On the loop, for the query's last job only: every job has finished. */
static void qjob_done(cd_job *job) {
  cd_query *q = ((cd_qjob *)job)->q;
  for (int64_t k = 0; k < q->njobs; k++) { /* the first failure: the lowest pair index */
    const cd_qjob *j = &q->jobs[k];
    if (j->err_pair >= 0 && (q->err_pair < 0 || j->err_pair < q->err_pair)) {
      q->err = j->err;
      q->err_pair = j->err_pair;
    }
  }
  q->wall_us = (cd_stats_now_ns() - q->t0_ns) / 1000;
  q->srv->stats.pairs += (uint64_t)q->npairs;
  if (atomic_load_explicit(&q->reply_over, memory_order_relaxed)) q->srv->stats.replies_over_limit++;
  if (q->pub && q->err_pair < 0) publish(q);
  q->done(q);
}

/* The query's pairs split into jobs and submitted (loop thread). */
static void schedule(cd_query *q) {
  uint64_t per = q->srv->cfg.limits.pairs_per_job;
  q->njobs = q->npairs ? (q->npairs + (int64_t)per - 1) / (int64_t)per : 0;
  q->results = calloc(q->npairs ? (size_t)q->npairs : 1, sizeof *q->results);
  q->jobs = calloc(q->njobs ? (size_t)q->njobs : 1, sizeof *q->jobs);
  if (q->pack_field) q->parts = calloc(q->njobs ? (size_t)q->njobs : 1, sizeof *q->parts);
  if (q->opt.publish[0] && q->srv->publish)
    q->pub = calloc(q->npairs ? (size_t)q->npairs : 1, sizeof *q->pub); /* NULL: not published */
  if (!q->results || !q->jobs || (q->pack_field && !q->parts)) {
    cd_status_set(&q->err, CD_EXHAUSTED, "", "out of memory");
    q->err_pair = 0;
    q->done(q);
    return;
  }
  if (q->njobs == 0) {
    if (q->pub) publish(q); /* the bodies' poses, no pairs */
    q->done(q);
    return;
  }
  atomic_store_explicit(&q->jobs_left, q->njobs, memory_order_relaxed);
  for (int64_t k = 0; k < q->njobs; k++) {
    cd_qjob *j = &q->jobs[k];
    j->job.run = qjob_run;
    j->job.done = qjob_done;
    j->q = q;
    j->first = k * (int64_t)per;
    j->count = q->npairs - j->first < (int64_t)per ? q->npairs - j->first : (int64_t)per;
    j->err_pair = -1;
    /* Polling (result_poll_us) pays for a small query's one job; a query
     * of several takes longer than the window, and the loop sleeps. */
    j->job.no_poll = q->njobs > 1;
    cd_pool_submit(q->srv->pool, q->jobq, &j->job);
  }
}

static cd_query *of_plan(cd_job *job) { return (cd_query *)((char *)job - offsetof(cd_query, plan_job)); }

static void plan_run(cd_job *job, cd_worker *w) {
  (void)w;
  cd_query *q = of_plan(job);
  if (cd_qparse_plan_run(&q->plan, q->bodies, q->nbodies, &q->pairs, &q->npairs, &q->err)) q->err_pair = 0;
}

static void plan_done(cd_job *job) {
  cd_query *q = of_plan(job);
  if (q->err_pair >= 0) {
    q->done(q);
    return;
  }
  q->candidate_pairs = (uint64_t)q->npairs;
  schedule(q);
}

void cd_query_run(cd_query *q) {
  q->t0_ns = cd_stats_now_ns();
  q->err_pair = -1;
  if (!q->plan.on) {
    schedule(q);
    return;
  }
  q->plan_job.run = plan_run;
  q->plan_job.done = plan_done;
  q->plan_job.no_poll = 1; /* jobs follow it: no reply is near */
  cd_pool_submit(q->srv->pool, q->jobq, &q->plan_job);
}

cd_query_reply *cd_query_reply_new(cd_query *q, uint64_t request_id) {
  cd_query_reply *x = malloc(sizeof *x);
  if (!x) return NULL;
  x->q = q;
  contactd__v1__envelope__init(&x->env);
  x->env.request_id = request_id;
  return x;
}

static void reply_release(void *holder) {
  cd_query_reply *x = holder;
  cd_query_free(x->q);
  free(x);
}

void cd_query_reply_send(cd_query_reply *x, cd_conn *c, uint64_t seq) {
  cd_query *q = x->q;
  uint64_t hint = atomic_load_explicit(&q->reply_bytes, memory_order_relaxed);
  if (!q->pack_field) {
    cd_output_reply_large(c, seq, &x->env, hint, reply_release, x);
    return;
  }
  /* the results are in q->parts: the message goes without them */
  ProtobufCMessage *inner;
  if (x->env.msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY) {
    x->msg.contact.n_results = 0;
    x->msg.contact.results = NULL;
    inner = &x->msg.contact.base;
  } else {
    x->msg.stream.n_results = 0;
    x->msg.stream.results = NULL;
    inner = &x->msg.stream.base;
  }
  cd_output_reply_spliced(c, seq, &x->env, inner, q->pack_field, q->parts, (size_t)q->njobs, hint, reply_release, x);
}

void cd_query_free(cd_query *q) {
  if (!q) return;
  /* the results go with the query: give their bytes back to the server */
  size_t held = atomic_load_explicit(&q->reply_bytes, memory_order_relaxed);
  if (held && q->srv) atomic_fetch_sub_explicit(&q->srv->reply_bytes, held, memory_order_relaxed);
  if (q->jobs)
    for (int64_t k = 0; k < q->njobs; k++) cd_budget_destroy(&q->jobs[k].out);
  free(q->jobs);
  if (q->parts)
    for (int64_t k = 0; k < q->njobs; k++) free(q->parts[k].p);
  free(q->parts);
  free(q->results);
  if (q->pub)
    for (int64_t i = 0; i < q->npairs; i++) cd_publish_pair_free(q->pub[i]);
  free(q->pub);
  cd_qparse_plan_free(&q->plan);
  if (q->owns_pins) cd_qparse_bodies_unpin(q->bodies, q->nbodies);
  free(q->bodies);
  free(q->pairs);
  free(q);
}

