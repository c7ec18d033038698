/* cd_query.h — a contact query as the daemon schedules it: its parsed
 * input (cd_qparse.h) split across the workers in jobs of a few pairs, the
 * per-pair results converted to wire messages on the worker (cd_reply.h)
 * within the reply budgets, and packed there for a protobuf reply
 * (cd_splice.h), and the reply handed to the transport. */
#ifndef CD_QUERY_H
#define CD_QUERY_H

#include <stdatomic.h>
#include <stdint.h>

#include "cd_budget.h"
#include "cd_limits.h"
#include "cd_pool.h"
#include "cd_qparse.h"
#include "cd_reply.h"
#include "cd_splice.h"
#include "cd_status.h"

typedef struct cd_conn cd_conn;

typedef struct cd_query cd_query;
typedef void (*cd_query_done_fn)(cd_query *q);

struct cd_query {
  cd_server *srv;
  cd_qbody *bodies; /* owned copy */
  int32_t nbodies;
  int owns_pins;    /* unpin the bodies' entries on free */
  cd_qpair *pairs;  /* owned */
  int64_t npairs;
  /* plan.on: pairs come from the broad phase, which cd_query_run runs on a
   * worker first (plan_job) and then splits its pairs into jobs */
  cd_qplan plan;
  cd_job plan_job;
  uint64_t candidate_pairs;
  cd_qopts opt;
  Contactd__V1__PairResult **results; /* npairs, filled by the jobs (unless packed: see below) */
  /* Nonzero for a protobuf reply: each job, on its worker, packs its
   * results as records of this field of the reply message (cd_splice.h)
   * into parts[its index] and lets the messages go (results[i] = NULL); the
   * reply is then the concatenation. 0: results are kept as messages and
   * the whole reply is encoded later (JSON). */
  uint32_t pack_field;
  cd_splice_part *parts; /* njobs when pack_field */
  struct cd_qjob *jobs;
  int64_t njobs;
  atomic_int_fast64_t jobs_left; /* counted down by the jobs on the workers: the last one completes the query */
  cd_status err;      /* first failure (lowest pair index) */
  int64_t err_pair;   /* -1 = none */
  uint64_t t0_ns, wall_us;
  cd_query_done_fn done; /* on the loop once every job finished */
  const atomic_int *cancelled; /* NULL, or set once nobody wants the answer (the connection closed) */
  struct cd_jobq *jobq;        /* the client's job queue (NULL = the pool's own) */
  void *user;
  /* Memory the converted results may take together (max_reply_bytes, 0 =
   * unlimited): each job reserves a pair's estimate (cd_reply_estimate)
   * before converting it, here and in the server's reply_bytes (all
   * queries in progress, reply_memory_bytes; given back by cd_query_free),
   * so the results never grow past either limit; the first job that cannot
   * reserve fails the query and the others stop. */
  atomic_size_t reply_bytes;
  atomic_int reply_over;
  cd_pub_pair **pub; /* published queries: each pair as a viewer sees it (cd_publish.h) */
  char tenant[CD_PUB_TENANT_MAX]; /* the asking principal's tenant, that of a published scene ("" = none) */
};

/* A query's reply (a ContactReply or a StreamResult carrying q->results),
 * kept with the query until the reply is encoded. */
typedef struct cd_query_reply {
  Contactd__V1__Envelope env;
  union {
    Contactd__V1__ContactReply contact;
    Contactd__V1__StreamResult stream;
  } msg;
  cd_query *q;
} cd_query_reply;
/* A reply holder for q, its envelope initialised with request_id (the
 * caller sets the message and its case); NULL when out of memory. */
cd_query_reply *cd_query_reply_new(cd_query *q, uint64_t request_id);
/* Send x->env as the reply of slot seq on c (cd_output_reply_large: encoded
 * off the loop when q's results are large; cd_output_reply_spliced when the
 * jobs packed them); x and its query are freed once the reply is encoded. */
void cd_query_reply_send(cd_query_reply *x, cd_conn *c, uint64_t seq);
/* Run q on the pool (q->done runs on the loop when finished; a failed
 * broad phase finishes it with err_pair 0). */
void cd_query_run(cd_query *q);
void cd_query_free(cd_query *q);

#endif
