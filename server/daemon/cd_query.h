/* cd_query.h — a contact query as the daemon runs it: bodies resolved to
 * pinned cache entries with checked poses, pairs (explicit or from the broad
 * phase), options; split across the workers in jobs of a few pairs; the
 * per-pair results converted to wire messages on the worker. */
#ifndef CD_QUERY_H
#define CD_QUERY_H

#include <stdatomic.h>
#include <stdint.h>

#include "cd_budget.h"
#include "cd_cache.h"
#include "cd_limits.h"
#include "cd_publish.h"
#include "cd_status.h"
#include "ce.h"

typedef struct cd_server cd_server;
typedef struct cd_conn cd_conn;

typedef struct cd_qbody {
  uint32_t id;            /* client body id */
  cd_cache_entry *entry;  /* pinned by whoever owns the array */
  ce_body body;
  uint32_t group, mask;   /* collision filter (all ones when absent) */
} cd_qbody;

typedef struct cd_qpair {
  int32_t a, b;  /* indices into the bodies */
  int32_t model; /* 0 = the query's contact model, else ce_contact_model + 1 */
} cd_qpair;

typedef struct cd_qopts {
  ce_options ce;
  char publish[CD_PUB_NAME_MAX + 1]; /* QueryOptions.publish; "" = not published */
} cd_qopts;

typedef struct cd_query cd_query;
typedef void (*cd_query_done_fn)(cd_query *q);

struct cd_query {
  cd_server *srv;
  cd_qbody *bodies; /* owned copy */
  int32_t nbodies;
  int owns_pins;    /* unpin the bodies' entries on free */
  cd_qpair *pairs;  /* owned */
  int64_t npairs;
  uint64_t candidate_pairs;
  cd_qopts opt;
  Contactd__V1__PairResult **results; /* npairs, filled by the jobs */
  struct cd_qjob *jobs;
  int64_t njobs, jobs_left;
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
};

/* Upper bound on the bytes cd_reply_convert takes from its budget for one
 * engine result under options o (from the counts alone: nothing is
 * allocated). */
size_t cd_reply_estimate(const ce_result *r, const ce_options *o);
/* The wire message of one pair's result, allocated in b (NULL when b runs
 * out). a and b_id are the client's body ids. */
Contactd__V1__PairResult *cd_reply_convert(cd_budget *b, const ce_options *o, uint32_t a, uint32_t b_id,
                                           const ce_result *r, uint64_t us);
/* "812.0 MiB", "12.5 KiB", "100 bytes" into out[n]; returns out. */
const char *cd_fmt_bytes(char *out, size_t n, uint64_t bytes);

/* Parse and check bodies (field: "contactQuery.bodies"): unique ids,
 * registered READY geometry (NOT_FOUND otherwise), finite poses, the
 * quaternion rule, finite velocities, valid material overrides. Pins each
 * body's entry (undo with cd_qbodies_unpin). */
int cd_qbodies_parse(cd_server *s, Contactd__V1__Body **in, size_t n, const char *field, cd_qbody **out,
                     cd_status *st);
void cd_qbodies_unpin(cd_qbody *b, int32_t n);
/* Body id -> index in b via a sorted copy (n log n to build, log n per
 * lookup), so lookups on untrusted counts never go quadratic. */
typedef struct {
  uint32_t id;
  int32_t i;
} cd_qindex_ent;
typedef struct {
  cd_qindex_ent *e;
  int32_t n;
} cd_qindex;
/* 0, or -1 when out of memory (x is then empty and safe to free). */
int cd_qindex_build(cd_qindex *x, const cd_qbody *b, int32_t nb);
/* Index of body id, or -1. */
int32_t cd_qindex_find(const cd_qindex *x, uint32_t id);
void cd_qindex_free(cd_qindex *x);

/* Pose / velocity from the wire with the checks above; `what` names the
 * body in messages. */
int cd_pose_from_msg(const Contactd__V1__Pose *p, ce_pose *out, const char *field, const char *what,
                     cd_status *st);
int cd_velocity_from_msg(const Contactd__V1__SpatialVelocity *v, ce_spatial_velocity *out, const char *field,
                         const char *what, cd_status *st);

/* ce_contact_model for a wire ContactModel, or -1 if unknown. */
int cd_model_from_wire(int m);

/* Options (field: "contactQuery.options"). */
int cd_qopts_parse(const Contactd__V1__QueryOptions *o, const char *field, cd_qopts *out, cd_status *st);

/* Explicit pairs by body id → index pairs (checked); or, when all is
 * non-NULL, the broad phase. */
int cd_qpairs_resolve(const cd_qbody *b, int32_t nb, Contactd__V1__Pair **pairs, size_t npairs,
                      const Contactd__V1__AllPairs *all, const char *field, uint64_t max_pairs, cd_qpair **out,
                      int64_t *nout, cd_status *st);

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
/* Send x->env as the reply of slot seq on c (cd_conn_reply_large: encoded
 * off the loop when q's results are large); x and its query are freed once
 * the reply is encoded. */
void cd_query_reply_send(cd_query_reply *x, cd_conn *c, uint64_t seq);
/* Run q on the pool (q->done runs on the loop when finished). */
void cd_query_run(cd_query *q);
void cd_query_free(cd_query *q);

#endif
