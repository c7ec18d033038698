/* cd_stream.c — open / update / close, latest-only dropping. */
#include "cd_stream.h"

#include <stdlib.h>
#include <string.h>

#include "cd_proto.h"
#include "cd_qcheck.h"
#include "cd_server.h"
#include "cd_tenants.h"

typedef Contactd__V1__Envelope Envelope;

static void stream_free(cd_stream *s) {
  cd_qparse_bodies_unpin(s->bodies, s->nbodies);
  free(s->bodies);
  free(s->pairs);
  free(s->exclude);
  cd_qparse_index_free(&s->index);
  cd_conn_unref(s->conn);
  free(s);
}

static void unlink_stream(cd_stream *s) {
  cd_stream **pp = &cd_conn_session(s->conn)->streams;
  while (*pp && *pp != s) pp = &(*pp)->next;
  if (*pp) *pp = s->next;
  cd_conn_server(s->conn)->stats.streams--;
}

static cd_stream *find(cd_conn *c, uint64_t id) {
  for (cd_stream *s = cd_conn_session(c)->streams; s; s = s->next)
    if (s->id == id) return s;
  return NULL;
}

static void fail(cd_req *r, int code, const char *field, const char *fmt, unsigned long long a) {
  cd_status st;
  cd_status_set(&st, code, field, fmt, a);
  cd_req_fail(r, &st);
}

void cd_stream_open(cd_req *r) {
  cd_conn *c = r->conn;
  cd_server *srv = cd_conn_server(c);
  const Contactd__V1__OpenStream *m = r->env->open_stream;
  cd_status st;
  uint64_t open = 0;
  for (cd_stream *s = cd_conn_session(c)->streams; s; s = s->next) open++;
  if (srv->cfg.limits.max_streams_per_conn == 0) {
    fail(r, CD_EXHAUSTED, "openStream", "streams are off on this server (max_streams_per_conn %llu)",
         (unsigned long long)srv->cfg.limits.max_streams_per_conn);
    return;
  }
  if (open >= srv->cfg.limits.max_streams_per_conn) {
    fail(r, CD_EXHAUSTED, "openStream", "this connection already has %llu open streams (max_streams_per_conn)",
         (unsigned long long)open);
    return;
  }
  if ((int)m->mode < 0 || (int)m->mode > 2) {
    fail(r, CD_INVALID, "openStream.mode", "unknown stream mode %llu", (unsigned long long)m->mode);
    return;
  }
  cd_stream *s = calloc(1, sizeof *s);
  if (!s) {
    fail(r, CD_EXHAUSTED, "openStream", "out of memory%.0llu", 0ULL);
    return;
  }
  s->conn = c;
  cd_conn_ref(c);
  if (cd_qparse_opts(m->options, "openStream.options", &s->opt, &st) ||
      cd_qparse_bodies(srv, cd_tenants_of(c), m->bodies, m->n_bodies, "openStream.bodies", &s->bodies, &st)) {
    stream_free(s);
    cd_req_fail(r, &st);
    return;
  }
  s->nbodies = (int32_t)m->n_bodies;
  if (cd_qparse_index_build(&s->index, s->bodies, s->nbodies)) {
    stream_free(s);
    cd_status_set(&st, CD_EXHAUSTED, "openStream.bodies", "out of memory");
    cd_req_fail(r, &st);
    return;
  }
  if (m->all_pairs) {
    s->all_pairs = 1;
    /* Check exclusions and margin once (the broad phase reruns per update). */
    cd_qpair *tmp;
    int64_t nt;
    if (cd_qparse_pairs_resolve(s->bodies, s->nbodies, NULL, 0, m->all_pairs, "openStream",
                          srv->cfg.limits.max_pairs_per_query, NULL, &tmp, &nt, &st)) {
      stream_free(s);
      cd_req_fail(r, &st);
      return;
    }
    free(tmp);
    s->margin = m->all_pairs->margin;
    s->nexclude = m->all_pairs->n_exclude;
    s->exclude = calloc(s->nexclude ? s->nexclude : 1, sizeof *s->exclude);
    if (!s->exclude) { /* the broad phase reads exclude[0..nexclude) */
      stream_free(s);
      cd_status_set(&st, CD_EXHAUSTED, "openStream.allPairs.exclude", "out of memory");
      cd_req_fail(r, &st);
      return;
    }
    for (size_t i = 0; i < s->nexclude; i++)
      s->exclude[i] = (cd_qpair){cd_qparse_index_find(&s->index, m->all_pairs->exclude[i]->a),
                                 cd_qparse_index_find(&s->index, m->all_pairs->exclude[i]->b), 0};
  } else if (cd_qparse_pairs_resolve(s->bodies, s->nbodies, m->pairs, m->n_pairs, NULL, "openStream",
                               srv->cfg.limits.max_pairs_per_query, NULL, &s->pairs, &s->npairs, &st)) {
    stream_free(s);
    cd_req_fail(r, &st);
    return;
  }
  s->latest_only = m->mode == CONTACTD__V1__STREAM_MODE__STREAM_MODE_LATEST_ONLY;
  s->id = ++cd_conn_session(c)->last_stream_id;
  s->open_request_id = r->request_id;
  s->next = cd_conn_session(c)->streams;
  cd_conn_session(c)->streams = s;
  srv->stats.streams++;
  Contactd__V1__OpenStreamReply rep = CONTACTD__V1__OPEN_STREAM_REPLY__INIT;
  rep.stream_id = s->id;
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM_REPLY;
  env.open_stream_reply = &rep;
  cd_req_reply(r, &env);
}

/* One computation of a stream: a query over a snapshot of its state. */
typedef struct sq {
  cd_stream *s;
  uint64_t slot, sequence;
} sq;

static void start(cd_stream *s, uint64_t slot, uint64_t sequence, uint64_t t0);

static void sq_done(cd_query *q) {
  sq *x = q->user;
  cd_stream *s = x->s;
  cd_conn *c = s->conn;
  /* s->running still counts this computation while it is answered: the
   * reply may flush the connection and resume its held input, and a held
   * CloseStream (or a close of the connection) frees a stream only when
   * nothing runs; it is let go below instead. */
  if (q->err_pair >= 0) {
    cd_output_reply_stream_error(c, x->slot, s->open_request_id, s->id, x->sequence, &q->err);
  } else {
    cd_query_reply *y = cd_query_reply_new(q, s->open_request_id);
    if (!y) {
      cd_status st;
      cd_status_set(&st, CD_EXHAUSTED, "streamUpdate", "out of memory");
      cd_output_reply_stream_error(c, x->slot, s->open_request_id, s->id, x->sequence, &st);
      cd_query_free(q);
    } else {
      Contactd__V1__StreamResult *res = &y->msg.stream;
      contactd__v1__stream_result__init(res);
      res->stream_id = s->id;
      res->sequence = x->sequence;
      res->dropped_updates = s->dropped_since_result;
      s->dropped_since_result = 0;
      res->n_results = (size_t)q->npairs;
      res->results = q->results;
      res->compute_time_us = q->wall_us;
      y->env.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT;
      y->env.stream_result = res;
      cd_query_reply_send(y, c, x->slot);
      s->results++; /* (after: a close read inside the reply counts this one as running) */
    }
    q = NULL;
  }
  free(x);
  cd_query_free(q);
  s->running--;
  if (s->closed) {
    if (s->running == 0) stream_free(s);
    return;
  }
  if (s->has_next && s->running == 0) {
    s->has_next = 0;
    start(s, s->next_slot, s->next_sequence, s->next_t0);
  }
}

static void start(cd_stream *s, uint64_t slot, uint64_t sequence, uint64_t t0) {
  cd_server *srv = cd_conn_server(s->conn);
  cd_status st;
  cd_query *q = calloc(1, sizeof *q);
  sq *x = malloc(sizeof *x);
  if (q) q->bodies = malloc((size_t)(s->nbodies ? s->nbodies : 1) * sizeof *q->bodies);
  if (!q || !x || !q->bodies) {
    if (q) free(q->bodies);
    free(q);
    free(x);
    cd_status_set(&st, CD_EXHAUSTED, "streamUpdate", "out of memory");
    cd_output_reply_stream_error(s->conn, slot, s->open_request_id, s->id, sequence, &st);
    return;
  }
  (void)t0;
  memcpy(q->bodies, s->bodies, (size_t)s->nbodies * sizeof *q->bodies);
  q->nbodies = s->nbodies;
  q->srv = srv;
  q->opt = s->opt;
  q->owns_pins = 0; /* the stream holds the pins */
  x->s = s;
  x->slot = slot;
  x->sequence = sequence;
  q->user = x;
  q->done = sq_done;
  q->cancelled = cd_conn_cancel_flag(s->conn);
  q->jobq = cd_conn_jobs(s->conn);
  const cd_principal *who = cd_conn_session(s->conn)->principal;
  if (who) snprintf(q->tenant, sizeof q->tenant, "%s", who->tenant); /* a published scene is its tenant's */
  if (cd_conn_is_proto(s->conn)) /* the workers pack the results */
    q->pack_field = cd_splice_field(&contactd__v1__stream_result__descriptor, "results");
  int rc;
  if (s->all_pairs) {
    cd_qplan plan = {1, s->margin, NULL, s->nexclude, srv->cfg.limits.max_pairs_per_query, "streamUpdate"};
    if (s->nbodies >= CD_BROADPHASE_OFF_LOOP_BODIES) { /* on a worker (cd_query_run) */
      rc = 0;
      q->plan = plan;
      q->plan.exclude = malloc((s->nexclude ? s->nexclude : 1) * sizeof *s->exclude);
      if (!q->plan.exclude) rc = cd_status_set(&st, CD_EXHAUSTED, "streamUpdate", "out of memory");
      else memcpy(q->plan.exclude, s->exclude, s->nexclude * sizeof *s->exclude);
    } else {
      plan.exclude = s->exclude;
      rc = cd_qparse_plan_run(&plan, q->bodies, q->nbodies, &q->pairs, &q->npairs, &st);
    }
  } else {
    rc = 0;
    q->pairs = malloc((size_t)(s->npairs ? s->npairs : 1) * sizeof *q->pairs);
    if (!q->pairs) rc = cd_status_set(&st, CD_EXHAUSTED, "streamUpdate", "out of memory");
    else {
      memcpy(q->pairs, s->pairs, (size_t)s->npairs * sizeof *q->pairs);
      q->npairs = s->npairs;
    }
  }
  if (rc) {
    free(x);
    cd_query_free(q);
    cd_output_reply_stream_error(s->conn, slot, s->open_request_id, s->id, sequence, &st);
    return;
  }
  q->candidate_pairs = (uint64_t)q->npairs;
  s->running++;
  cd_query_run(q);
}

void cd_stream_update(cd_req *r) {
  cd_conn *c = r->conn;
  const Contactd__V1__StreamUpdate *m = r->env->stream_update;
  cd_stream *s = find(c, m->stream_id);
  if (!s) {
    if (m->stream_id > 0 && m->stream_id <= cd_conn_session(c)->last_stream_id)
      fail(r, CD_PRECONDITION, "streamUpdate.streamId", "stream %llu is closed", (unsigned long long)m->stream_id);
    else
      fail(r, CD_NOT_FOUND, "streamUpdate.streamId", "stream %llu was never opened on this connection",
           (unsigned long long)m->stream_id);
    return;
  }
  if (s->have_sequence && m->sequence <= s->last_sequence) {
    cd_status st;
    cd_status_set(&st, CD_INVALID, "streamUpdate.sequence",
                  "sequence %llu is not greater than the previous %llu (stream %llu)",
                  (unsigned long long)m->sequence, (unsigned long long)s->last_sequence,
                  (unsigned long long)s->id);
    cd_req_fail(r, &st);
    return;
  }
  /* Check every state first, then apply: a bad update changes nothing. */
  ce_pose *poses = malloc((m->n_bodies ? m->n_bodies : 1) * sizeof *poses);
  ce_spatial_velocity *vels = malloc((m->n_bodies ? m->n_bodies : 1) * sizeof *vels);
  int32_t *idx = malloc((m->n_bodies ? m->n_bodies : 1) * sizeof *idx);
  cd_status st;
  int rc = 0;
  if (!poses || !vels || !idx) rc = cd_status_set(&st, CD_EXHAUSTED, "streamUpdate", "out of memory");
  for (size_t i = 0; !rc && i < m->n_bodies; i++) {
    const Contactd__V1__BodyState *b = m->bodies[i];
    const cd_qwhere w = {"streamUpdate.bodies", i, b->body_id, NULL};
    idx[i] = cd_qparse_index_find(&s->index, b->body_id);
    if (idx[i] < 0) {
      char f[128];
      cd_qcheck_where_field(&w, "bodyId", f, sizeof f);
      rc = cd_status_set(&st, CD_INVALID, f, "body %u is not in stream %llu", b->body_id,
                         (unsigned long long)s->id);
      break;
    }
    poses[i] = s->bodies[idx[i]].body.X_WB;
    if (b->pose && (rc = cd_qcheck_pose_from_msg(b->pose, &poses[i], &w, &st))) break;
    vels[i] = s->bodies[idx[i]].body.V_WB;
    if (b->velocity && (rc = cd_qcheck_velocity_from_msg(b->velocity, &vels[i], &w, &st))) break;
  }
  if (!rc)
    for (size_t i = 0; i < m->n_bodies; i++) {
      s->bodies[idx[i]].body.X_WB = poses[i];
      s->bodies[idx[i]].body.V_WB = vels[i];
    }
  free(poses);
  free(vels);
  free(idx);
  if (rc) {
    cd_req_fail(r, &st);
    return;
  }
  s->updates++;
  s->last_sequence = m->sequence;
  s->have_sequence = 1;
  uint64_t slot = r->seq, t0 = r->t0_ns, sequence = m->sequence;
  cd_req_free(r); /* the state is copied; the reply goes to `slot` */
  if (s->latest_only && s->running > 0) {
    int overtaken = s->has_next; /* the waiting update never started */
    uint64_t overtaken_slot = s->next_slot;
    if (overtaken) {
      s->dropped++;
      s->dropped_since_result++;
    }
    s->has_next = 1;
    s->next_slot = slot;
    s->next_sequence = sequence;
    s->next_t0 = t0;
    if (overtaken) cd_output_skip(c, overtaken_slot); /* last: its flush may close the connection */
    return;
  }
  start(s, slot, sequence, t0);
}

void cd_stream_close(cd_req *r) {
  cd_conn *c = r->conn;
  uint64_t id = r->env->close_stream->stream_id;
  cd_stream *s = find(c, id);
  if (!s) {
    if (id > 0 && id <= cd_conn_session(c)->last_stream_id)
      fail(r, CD_PRECONDITION, "closeStream.streamId", "stream %llu is already closed", (unsigned long long)id);
    else
      fail(r, CD_NOT_FOUND, "closeStream.streamId", "stream %llu was never opened on this connection",
           (unsigned long long)id);
    return;
  }
  int skip = s->has_next; /* dropped: the stream closes before it starts */
  uint64_t skip_slot = s->next_slot;
  if (skip) {
    s->has_next = 0;
    s->dropped++;
  }
  Contactd__V1__CloseStreamReply rep = CONTACTD__V1__CLOSE_STREAM_REPLY__INIT;
  rep.stream_id = s->id;
  rep.updates = s->updates;
  rep.results = s->results + (uint64_t)s->running; /* running ones answer before this reply */
  rep.dropped_updates = s->dropped;
  unlink_stream(s);
  s->closed = 1;
  if (s->running == 0) stream_free(s);
  /* Only now: skipping a slot flushes replies, and a flush may close the
   * connection (slow reader), which closes its remaining streams. */
  if (skip) cd_output_skip(c, skip_slot);
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM_REPLY;
  env.close_stream_reply = &rep;
  cd_req_reply(r, &env);
}

void cd_stream_close_all(cd_conn *c) {
  while (cd_conn_session(c)->streams) {
    cd_stream *s = cd_conn_session(c)->streams;
    unlink_stream(s);
    s->closed = 1;
    s->has_next = 0;
    if (s->running == 0) stream_free(s);
  }
}
