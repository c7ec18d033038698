/* cd_handlers.c — answering hello, register / has / release geometry,
 * contact queries and stats (streams: cd_stream.c; which handler answers
 * which request: cd_dispatch.c). */
#include "cd_handlers.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cd_proto.h"
#include "cd_auth.h"
#include "cd_fetch.h"
#include "cd_geomspec.h"
#include "cd_log.h"
#include "cd_meshfile.h"
#include "cd_query.h"
#include "cd_server.h"
#include "cd_session.h"
#include "cd_store.h"
#include "cd_tenants.h"
#include "cd_version.h"

typedef Contactd__V1__Envelope Envelope;

static void fail(cd_req *r, int code, const char *field, const char *fmt, const char *arg) {
  cd_status st;
  cd_status_set(&st, code, field, fmt, arg);
  cd_req_fail(r, &st);
}

/* ---- hello ---------------------------------------------------------------- */

void cd_handlers_hello(cd_req *r) {
  const Contactd__V1__Hello *h = r->env->hello;
  cd_server *s = cd_conn_server(r->conn);
  const cd_limits *l = &s->cfg.limits;
  if (h->protocol_version > CD_PROTOCOL_VERSION) {
    cd_status st;
    cd_status_set(&st, CD_PRECONDITION, "hello.protocolVersion",
                  "protocol version %u is newer than this server's (%d)", h->protocol_version,
                  CD_PROTOCOL_VERSION);
    cd_req_fail(r, &st);
    return;
  }
  char q[160];
  CD_INFO("hello", "conn=%llu peer=%s client=%s", (unsigned long long)cd_conn_id(r->conn), cd_conn_peer(r->conn),
          cd_log_quote(q, sizeof q, h->client_name));
  Contactd__V1__Limits lm = CONTACTD__V1__LIMITS__INIT;
  lm.max_frame_bytes = l->max_frame_bytes;
  lm.max_bodies = (uint32_t)l->max_bodies_per_query;
  lm.max_pairs_per_query = (uint32_t)l->max_pairs_per_query;
  lm.max_in_flight = (uint32_t)l->max_inflight_per_conn;
  lm.max_output_bytes = l->max_output_bytes;
  lm.idle_timeout_ms = l->idle_timeout_ms;
  lm.max_connections = (uint32_t)l->max_connections;
  lm.max_streams = (uint32_t)l->max_streams_per_conn;
  lm.cache_budget_bytes = l->cache_bytes;
  lm.max_decode_bytes = l->decode_budget_bytes;
  lm.max_reply_bytes = l->max_reply_bytes;
  lm.reply_memory_bytes = l->reply_memory_bytes;
  lm.request_memory_bytes = l->request_memory_bytes;
  lm.frame_grace_ms = l->frame_grace_ms;
  lm.frame_min_rate_bytes = l->frame_min_rate_bytes;
  /* Every limit under its configuration name, from the one table. */
  Contactd__V1__NamedLimit named[CD_LIMITS_COUNT], *namedp[CD_LIMITS_COUNT];
  size_t nn = 0;
#define CD_XX_NAMED(field, def, min, unit_, desc)                        \
  contactd__v1__named_limit__init(&named[nn]);                          \
  named[nn].name = (char *)#field;                                         \
  named[nn].value = l->field;                                           \
  named[nn].unit = (char *)unit_;                                         \
  namedp[nn] = &named[nn];                                              \
  nn++;
  CD_LIMITS_MAP(CD_XX_NAMED)
#undef CD_XX_NAMED
  /* What this server accepts: fixed features, then one mesh_file:<format>
   * per format cd_meshfile parses, then http_port:N (when the HTTP port is
   * on, so a client can print the viewer's URL). */
  char http_cap[32], mesh_caps[8][24];
  char *caps[24];
  size_t nc = 0;
  static const char *const fixed[] = {"json", "streams", "latest_only", "all_pairs", "quaternion_tolerance:1e-3",
                                      "energy", "jacobian", "publish"};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) caps[nc++] = (char *)fixed[i];
  for (size_t i = 0; i < 8 && cd_meshfile_format_name(i); i++) {
    snprintf(mesh_caps[i], sizeof mesh_caps[i], "mesh_file:%s", cd_meshfile_format_name(i));
    caps[nc++] = mesh_caps[i];
  }
  if (s->http_port > 0) {
    snprintf(http_cap, sizeof http_cap, "http_port:%d", s->http_port);
    caps[nc++] = http_cap;
  }
  Contactd__V1__HelloReply hr = CONTACTD__V1__HELLO_REPLY__INIT;
  hr.server_version = CD_VERSION_STRING;
  hr.protocol_version = CD_PROTOCOL_VERSION;
  hr.limits = &lm;
  hr.n_config_limits = nn;
  hr.config_limits = namedp;
  hr.n_capabilities = nc;
  hr.capabilities = caps;
  hr.store = (char *)cd_store_describe(s->store);
  char *roles[3];
  cd_auth_describe(r->conn, &hr, roles, 3);
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY;
  env.hello_reply = &hr;
  cd_req_reply(r, &env);
}

/* ---- register ------------------------------------------------------------- */

/* Cancelling a build. The engine calls the build's progress callback at its
 * cancellation points (ce_progress_fn); there the worker stops the build
 * when
 *  - the server is shutting down (cd_pool_cancel, set on SIGTERM/SIGINT): at
 *    once, not at the end of the grace period, because a geometry finished
 *    during the drain is useless: every later request is refused with
 *    UNAVAILABLE, and the cache dies with the process, so the client has to
 *    register it again with the next server anyway. Queries in flight, whose
 *    answers are useful, still finish;
 *  - or every connection waiting for it is closed. The cache deduplicates
 *    concurrent registrations of the same content (one build, many waiters),
 *    so the build belongs to all of them: the requester that started it
 *    disconnecting does not cancel it while another registration (on an
 *    open connection) waits for the same geometry.
 * A cancelled build's entry is failed like any failed build
 * (cd_cache_complete): every waiter gets the error, nothing is cached, other
 * entries are untouched. */
typedef enum { REG_RUNNING = 0, REG_CANCEL_SHUTDOWN, REG_CANCEL_GONE } reg_cancel;

typedef struct reg_job {
  cd_job job;
  cd_req *req;
  cd_server *srv; /* req's connection's */
  int stage; /* 0 = check the message and compute its id, 1 = build */
  int invalid; /* stage 0 found the message invalid (st says why) */
  char id[CD_HASH_HEX_LEN + 1];
  cd_cache_entry *entry;
  ce_geometry *geom;
  double radius;
  uint64_t build_us;
  cd_status st;
  uint64_t progress_ns; /* worker: when the last RegisterProgress was posted */
  int want_progress;
  reg_cancel cancel;    /* worker: why the build was stopped */
  /* Stage 1: the connections of the build's waiters (the owner's first), each
   * holding a reference so that the worker may read its `cancelled` flag;
   * appended on the loop, read on the worker, under mu. */
  pthread_mutex_t mu;
  cd_conn **conns;
  size_t nconns, capconns;
} reg_job;

/* Loop: one more connection waits for j's build. */
static int build_add_conn(reg_job *j, cd_conn *c) {
  pthread_mutex_lock(&j->mu);
  int rc = 0;
  if (j->nconns == j->capconns) {
    size_t cap = j->capconns ? 2 * j->capconns : 4;
    cd_conn **n = realloc(j->conns, cap * sizeof *n);
    if (n) {
      j->conns = n;
      j->capconns = cap;
    } else {
      rc = -1;
    }
  }
  if (!rc) {
    cd_conn_ref(c);
    j->conns[j->nconns++] = c;
  }
  pthread_mutex_unlock(&j->mu);
  return rc;
}

/* Loop, once the worker is done with j: drop the connection references. */
static void build_release_conns(reg_job *j) {
  for (size_t i = 0; i < j->nconns; i++) cd_conn_unref(j->conns[i]);
  free(j->conns);
  j->conns = NULL;
  j->nconns = j->capconns = 0;
  pthread_mutex_destroy(&j->mu);
}

/* Worker: whether the build should stop now (see above); records why. */
static int build_cancelled(reg_job *j) {
  if (cd_pool_cancelled(j->srv->pool)) {
    j->cancel = REG_CANCEL_SHUTDOWN;
    return 1;
  }
  pthread_mutex_lock(&j->mu);
  int gone = j->nconns > 0;
  for (size_t i = 0; i < j->nconns && gone; i++)
    gone = atomic_load_explicit(cd_conn_cancel_flag(j->conns[i]), memory_order_relaxed);
  pthread_mutex_unlock(&j->mu);
  if (gone) j->cancel = REG_CANCEL_GONE;
  return gone;
}

/* RegisterProgress for a long build: posted by the worker through the pool's
 * completion queue, sent on the loop (the request lives until its build's
 * done(), which the FIFO queue runs after every progress posted before it). */
typedef struct progress_job {
  cd_job job;
  cd_req *req;
  double fraction;
  char stage[32];
} progress_job;

#define CD_PROGRESS_INTERVAL_NS 250000000ull /* at most 4 per second */

static void progress_done(cd_job *job) {
  progress_job *p = (progress_job *)job;
  cd_req *r = p->req;
  if (!cd_conn_gone(r->conn)) {
    Contactd__V1__RegisterProgress rp = CONTACTD__V1__REGISTER_PROGRESS__INIT;
    rp.fraction = p->fraction;
    rp.stage = p->stage;
    Envelope env = CONTACTD__V1__ENVELOPE__INIT;
    env.request_id = r->request_id;
    env.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS;
    env.register_progress = &rp;
    cd_output_progress(r->conn, r->seq, &env);
  }
  free(p);
}

/* The engine's progress callback: the build's cancellation point, and a
 * RegisterProgress when the request asked for them. */
static int on_build_progress(void *user, double fraction, const char *stage) {
  reg_job *j = user;
  if (build_cancelled(j)) return 1;
  if (!j->want_progress) return 0;
  uint64_t now = cd_stats_now_ns();
  if (j->progress_ns && now - j->progress_ns < CD_PROGRESS_INTERVAL_NS) return 0;
  j->progress_ns = now;
  progress_job *p = calloc(1, sizeof *p);
  if (!p) return 0;
  p->req = j->req;
  p->fraction = fraction < 0 ? 0 : (fraction > 1 ? 1 : fraction);
  snprintf(p->stage, sizeof p->stage, "%s", stage ? stage : "");
  p->job.done = progress_done;
  cd_pool_post(j->srv->pool, &p->job);
  return 0;
}

static void reply_registered(cd_req *r, cd_cache_entry *e, int already) {
  /* The session must hold the geometry before the client is told it may
   * use it: without the reference the cache could evict it. */
  if (!cd_conn_gone(r->conn) && cd_session_hold_geometry(r->conn, e) != 0) {
    fail(r, CD_EXHAUSTED, "registerGeometry", "%s", "out of memory holding the geometry for this session");
    return;
  }
  /* The registering tenant sees the id from now on; to a tenant that did
   * not, the geometry was not "already cached" (cd_tenants.h). */
  const char *tenant = cd_tenants_of(r->conn);
  if (tenant) {
    cd_server *s = cd_conn_server(r->conn);
    int added = cd_tenants_add(s->tenants, tenant, e->id);
    if (added < 0) {
      fail(r, CD_EXHAUSTED, "registerGeometry", "%s", "out of memory recording the tenant's geometry");
      return;
    }
    if (added) {
      already = 0;
      cd_store_put_seen(s->store, tenant, e->id);
    }
  }
  Contactd__V1__GeometryStats gs = CONTACTD__V1__GEOMETRY_STATS__INIT;
  gs.vertices = e->info.vertices;
  gs.tetrahedra = e->info.tetrahedra;
  gs.triangles = e->info.triangles;
  gs.bvh_nodes = e->info.bvh_nodes;
  gs.bytes = e->info.bytes;
  gs.build_time_us = already ? 0 : e->build_us;
  gs.min_pressure = e->info.min_pressure;
  gs.max_pressure = e->info.max_pressure;
  gs.volume = e->info.volume;
  Contactd__V1__RegisterReply rr = CONTACTD__V1__REGISTER_REPLY__INIT;
  rr.geometry_id = e->id;
  rr.already_cached = already;
  rr.stats = &gs;
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY;
  env.register_reply = &rr;
  cd_req_reply(r, &env);
}

/* A registration that found the content being built by someone else. */
static void on_joined_build(void *arg, cd_cache_entry *e, int code, const char *message) {
  cd_req *r = arg;
  if (code) {
    cd_status st;
    cd_status_set(&st, code, "registerGeometry", "%s", message);
    cd_req_fail(r, &st);
    return;
  }
  cd_cache_note_hit(e->cache);
  reply_registered(r, e, 1);
}

/* The registration whose content was new: it started the build (arg is its
 * job, freed here, so that a build error keeps its field path). */
static void on_own_build(void *arg, cd_cache_entry *e, int code, const char *message) {
  reg_job *j = arg;
  cd_req *r = j->req;
  if (code) {
    cd_status st;
    if (j->st.code == code) st = j->st; /* the build's own error, field and message as set */
    else cd_status_set(&st, code, "registerGeometry", "%s", message);
    free(j);
    cd_req_fail(r, &st);
    return;
  }
  free(j);
  reply_registered(r, e, 0);
}

static void reg_run(cd_job *job, cd_worker *w) {
  (void)w;
  reg_job *j = (reg_job *)job;
  const cd_register_msg *m = j->req->env->register_geometry;
  if (j->stage == 0) {
    /* here, not on the loop: a 4096^2 heightfield takes ~20 ms to check */
    if (cd_geomspec_check(m, &j->srv->cfg.limits, &j->st)) j->invalid = 1;
    else cd_geomspec_id(m, j->id);
    return;
  }
  uint64_t t0 = cd_stats_now_ns();
  j->want_progress = m->want_progress;
  /* a queued build whose waiters all left (or the server is stopping) does
   * not start; a running one stops at its next progress point (every build
   * has them, ~60 ms apart at most for a 200k-tet primitive) */
  int rc = build_cancelled(j) ? -1
                              : cd_geomspec_build_progress(m, &j->srv->cfg.limits, on_build_progress, j,
                                                           &j->geom, &j->radius, &j->st);
  j->build_us = (cd_stats_now_ns() - t0) / 1000;
  if (rc) j->geom = NULL;
  else cd_store_put_spec(j->srv->store, j->id, m); /* queued; packed here, off the loop */
  if (rc && j->cancel == REG_CANCEL_SHUTDOWN)
    cd_status_set(&j->st, CD_UNAVAILABLE, "registerGeometry", "the server is shutting down: geometry build cancelled");
  else if (rc && j->cancel == REG_CANCEL_GONE)
    cd_status_set(&j->st, CONTACTD__V1__ERROR_CODE__CANCELLED, "registerGeometry",
                  "geometry build cancelled: every connection waiting for it is closed");
}

static void reg_lookup(reg_job *j, cd_req *r);
static void reg_start_build(reg_job *j, cd_req *r);
static void reg_finish_build(reg_job *j, cd_req *r);

static void reg_done(cd_job *job) {
  reg_job *j = (reg_job *)job;
  cd_req *r = j->req;
  if (j->stage == 0) {
    if (j->invalid) {
      cd_status st = j->st;
      free(j);
      cd_req_fail(r, &st);
      return;
    }
    reg_lookup(j, r);
    return;
  }
  reg_finish_build(j, r);
}

/* Stage 0 done: answer from the cache, join the build in progress, or start
 * one. The cache lock makes finding the entry and referencing it, or joining
 * its build, or creating it, one step for the other loops. */
static void reg_lookup(reg_job *j, cd_req *r) {
  cd_server *s = cd_conn_server(r->conn);
  cd_cache_lock(s->cache);
  cd_cache_entry *e = cd_cache_find(s->cache, j->id);
  if (e && e->state == CD_ENTRY_READY) {
    cd_cache_note_hit(s->cache);
    free(j);
    reply_registered(r, e, 1); /* references it before the lock lets another loop evict it */
    cd_cache_unlock(s->cache);
    return;
  }
  if (e) { /* pending: one build, many replies */
    free(j);
    /* counted first: the build must not be cancelled under a waiter (a build
     * whose worker is done has no `build` left to cancel) */
    if ((e->build && build_add_conn(e->build, r->conn)) || cd_cache_add_waiter(e, on_joined_build, r))
      fail(r, CD_EXHAUSTED, "registerGeometry", "%s", "out of memory");
    cd_cache_unlock(s->cache);
    return;
  }
  reg_start_build(j, r);
  cd_cache_unlock(s->cache);
}

/* A new geometry (cache lock held): its PENDING entry and the build job. */
static void reg_start_build(reg_job *j, cd_req *r) {
  cd_server *s = cd_conn_server(r->conn);
  const cd_register_msg *m = r->env->register_geometry;
  /* shutting down: no new builds (see above). The pool is gone once the
   * server finishes: a registration whose checks were still queued then has
   * its done() run as the loops close, with no pool to build on. */
  if (!s->pool || cd_pool_cancelled(s->pool)) {
    free(j);
    fail(r, CD_UNAVAILABLE, "registerGeometry", "%s", "the server is shutting down");
    return;
  }
  cd_cache_entry *e = cd_cache_begin(s->cache, j->id, 0);
  if (!e) {
    free(j);
    fail(r, CD_EXHAUSTED, "registerGeometry", "%s", "out of memory");
    return;
  }
  if (m->material) e->material = (ce_material){m->material->dissipation, m->material->friction};
  if (m->point_stiffness) e->point_stiffness = m->point_stiffness->value;
  pthread_mutex_init(&j->mu, NULL);
  if (build_add_conn(j, r->conn) || cd_cache_add_waiter(e, on_own_build, j)) {
    cd_cache_complete(s->cache, e, NULL, 0, CD_EXHAUSTED, "out of memory");
    build_release_conns(j);
    free(j);
    fail(r, CD_EXHAUSTED, "registerGeometry", "%s", "out of memory");
    return;
  }
  e->build = j;
  j->entry = e;
  j->stage = 1;
  /* A build takes seconds: at most build_workers of them run at once. The
   * checks and the hash before it (stage 0) are not limited, so that a
   * registration of geometry already cached or being built is answered
   * without waiting for other builds. */
  j->job.heavy = 1;
  cd_pool_submit(s->pool, cd_conn_jobs(r->conn), &j->job);
}

/* Stage 1 done (the build's loop): the entry completes, every waiter is
 * answered on its own loop. */
static void reg_finish_build(reg_job *j, cd_req *r) {
  cd_server *s = cd_conn_server(r->conn);
  const cd_register_msg *m = r->env->register_geometry;
  cd_cache_entry *e = j->entry;
  cd_cache_lock(s->cache); /* a registration on another loop may be joining */
  e->build = NULL;
  if (j->geom) e->bound_radius = j->radius;
  cd_cache_unlock(s->cache);
  build_release_conns(j); /* the waiters' requests hold their connections from here */
  char q[300];
  if (j->geom) {
    CD_INFO("geometry built", "geometry=%s name=%s build_us=%llu", e->id, cd_log_quote(q, sizeof q, m->name),
            (unsigned long long)j->build_us);
  } else {
    CD_INFO("geometry build failed", "geometry=%s error=%s", e->id, cd_log_quote(q, sizeof q, j->st.message));
  }
  /* This request is the first waiter (on_own_build, which frees j), answered
   * like the rest. */
  cd_cache_complete(s->cache, e, j->geom, j->build_us, j->geom ? 0 : (j->st.code ? j->st.code : CD_INTERNAL),
                    j->st.message);
}

void cd_handlers_register(cd_req *r) {
  reg_job *j = calloc(1, sizeof *j);
  if (!j) {
    fail(r, CD_EXHAUSTED, "registerGeometry", "%s", "out of memory");
    return;
  }
  j->job.run = reg_run;
  j->job.done = reg_done;
  j->req = r;
  j->srv = cd_conn_server(r->conn);
  cd_pool_submit(cd_conn_server(r->conn)->pool, cd_conn_jobs(r->conn), &j->job);
}

/* ---- has / release ---------------------------------------------------- */

static int is_geometry_id(const char *s) {
  size_t n = 0;
  for (; s[n]; n++)
    if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return 0;
  return n == CD_HASH_HEX_LEN;
}

void cd_handlers_has(cd_req *r) {
  const Contactd__V1__HasGeometry *h = r->env->has_geometry;
  char **missing = cd_budget_calloc(&r->budget, h->n_geometry_ids ? h->n_geometry_ids : 1, sizeof(char *));
  if (!missing) {
    fail(r, CD_EXHAUSTED, "hasGeometry", "%s", "out of memory");
    return;
  }
  size_t n = 0;
  cd_server *s = cd_conn_server(r->conn);
  const char *tenant = cd_tenants_of(r->conn);
  cd_cache_lock(s->cache); /* `state` changes when a build completes on another loop */
  for (size_t i = 0; i < h->n_geometry_ids; i++) {
    cd_cache_entry *e = cd_cache_find(s->cache, h->geometry_ids[i]);
    if (!e || e->state != CD_ENTRY_READY || !cd_tenants_sees(s->tenants, tenant, h->geometry_ids[i]))
      missing[n++] = h->geometry_ids[i];
  }
  cd_cache_unlock(s->cache);
  Contactd__V1__HasGeometryReply hr = CONTACTD__V1__HAS_GEOMETRY_REPLY__INIT;
  hr.n_missing = n;
  hr.missing = missing;
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY_REPLY;
  env.has_geometry_reply = &hr;
  cd_req_reply(r, &env);
}

void cd_handlers_release(cd_req *r) {
  const Contactd__V1__ReleaseGeometry *h = r->env->release_geometry;
  size_t n = h->n_geometry_ids ? h->n_geometry_ids : 1;
  char **rel = cd_budget_calloc(&r->budget, n, sizeof(char *));
  char **unk = cd_budget_calloc(&r->budget, n, sizeof(char *));
  if (!rel || !unk) {
    fail(r, CD_EXHAUSTED, "releaseGeometry", "%s", "out of memory");
    return;
  }
  size_t nr = 0, nu = 0;
  cd_server *s = cd_conn_server(r->conn);
  const char *tenant = cd_tenants_of(r->conn);
  for (size_t i = 0; i < h->n_geometry_ids; i++) {
    const char *id = h->geometry_ids[i];
    cd_cache_entry *e = cd_cache_find(s->cache, id);
    int held = e && cd_session_release_geometry(r->conn, e);
    /* A principal's release ends its tenant's visibility of the id, here
     * and in the store (whose marker another replica may have written). */
    int seen = tenant && cd_tenants_remove(s->tenants, tenant, id);
    if (tenant && is_geometry_id(id)) cd_store_del_seen(s->store, tenant, id);
    if (held || seen) rel[nr++] = h->geometry_ids[i];
    else unk[nu++] = h->geometry_ids[i];
  }
  Contactd__V1__ReleaseReply rr = CONTACTD__V1__RELEASE_REPLY__INIT;
  rr.n_released = nr;
  rr.released = rel;
  rr.n_unknown = nu;
  rr.unknown = unk;
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_RELEASE_REPLY;
  env.release_reply = &rr;
  cd_req_reply(r, &env);
}

/* ---- query ---------------------------------------------------------------- */

static void query_done(cd_query *q) {
  cd_req *r = q->user;
  cd_query_reply *x = q->err_pair >= 0 ? NULL : cd_query_reply_new(q, r->request_id);
  if (!x) {
    if (q->err_pair >= 0) cd_req_fail(r, &q->err);
    else fail(r, CD_EXHAUSTED, "contactQuery", "%s", "out of memory");
    cd_query_free(q);
    return;
  }
  Contactd__V1__ContactReply *cr = &x->msg.contact;
  contactd__v1__contact_reply__init(cr);
  cr->n_results = (size_t)q->npairs;
  cr->results = q->results;
  cr->compute_time_us = q->wall_us;
  cr->candidate_pairs = q->candidate_pairs;
  x->env.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY;
  x->env.contact_reply = cr;
  cd_query_reply_send(x, r->conn, r->seq);
  cd_req_free(r);
}

void cd_handlers_query(cd_req *r) {
  cd_server *s = cd_conn_server(r->conn);
  const Contactd__V1__ContactQuery *m = r->env->contact_query;
  cd_status st;
  cd_query *q = calloc(1, sizeof *q);
  if (!q) {
    fail(r, CD_EXHAUSTED, "contactQuery", "%s", "out of memory");
    return;
  }
  q->srv = s;
  q->owns_pins = 1;
  q->user = r;
  q->done = query_done;
  q->cancelled = cd_conn_cancel_flag(r->conn);
  q->jobq = cd_conn_jobs(r->conn);
  const cd_principal *who = cd_conn_session(r->conn)->principal;
  if (who) snprintf(q->tenant, sizeof q->tenant, "%s", who->tenant); /* a published scene is its tenant's */
  if (cd_conn_is_proto(r->conn)) /* the workers pack the results */
    q->pack_field = cd_splice_field(&contactd__v1__contact_reply__descriptor, "results");
  if (cd_qparse_opts(m->options, "contactQuery.options", &q->opt, &st) ||
      cd_qparse_bodies(s, cd_tenants_of(r->conn), m->bodies, m->n_bodies, "contactQuery.bodies", &q->bodies, &st)) {
    cd_query_free(q);
    cd_req_fail(r, &st);
    return;
  }
  q->nbodies = (int32_t)m->n_bodies;
  if (cd_qparse_pairs_resolve(q->bodies, q->nbodies, m->pairs, m->n_pairs, m->all_pairs, "contactQuery",
                        s->cfg.limits.max_pairs_per_query, &q->plan, &q->pairs, &q->npairs, &st)) {
    cd_query_free(q);
    cd_req_fail(r, &st);
    return;
  }
  q->candidate_pairs = (uint64_t)q->npairs;
  cd_query_run(q);
}

/* ---- stats ---------------------------------------------------------------- */

void cd_handlers_stats(cd_req *r) {
  cd_server *s = cd_conn_server(r->conn);
  cd_cache_stats cs;
  cd_cache_get_stats(s->cache, &cs);
  Contactd__V1__StatsReply sr = CONTACTD__V1__STATS_REPLY__INIT;
  sr.connections = s->stats.connections;
  sr.connections_total = s->stats.connections_total;
  sr.requests = s->stats.requests;
  sr.pairs = s->stats.pairs;
  sr.errors = s->stats.errors;
  sr.streams = s->stats.streams;
  sr.cache_entries = cs.entries;
  sr.cache_bytes = cs.bytes;
  sr.cache_builds = cs.builds;
  sr.cache_hits = cs.hits;
  sr.cache_evictions = cs.evictions;
  cd_store_stats ss;
  cd_store_get_stats(s->store, &ss);
  sr.store_hits = ss.hits;
  sr.store_misses = ss.misses;
  sr.store_writes = ss.writes;
  sr.store_write_drops = ss.write_drops;
  sr.store_verify_failures = ss.verify_failures;
  sr.store_errors = ss.errors;
  sr.store_loads = cd_fetch_loads(s->fetch);
  sr.store_breaker = (char *)(s->store ? cd_store_breaker_name(ss.breaker) : "");
  sr.uptime_s = (double)(cd_stats_now_ns() - s->stats.start_ns) * 1e-9;
  Contactd__V1__LatencyBucket b[CD_LATENCY_BUCKETS], *bp[CD_LATENCY_BUCKETS];
  for (int i = 0; i < CD_LATENCY_BUCKETS; i++) {
    contactd__v1__latency_bucket__init(&b[i]);
    b[i].upper_bound_us = i < CD_LATENCY_BUCKETS - 1 ? cd_latency_bounds_us[i] : INFINITY;
    b[i].count = s->stats.latency[i];
    bp[i] = &b[i];
  }
  sr.n_latency = CD_LATENCY_BUCKETS;
  sr.latency = bp;
  int nw = cd_pool_size(s->pool);
  double *u = cd_budget_calloc(&r->budget, (size_t)nw, sizeof *u);
  if (u) {
    for (int i = 0; i < nw; i++) u[i] = cd_pool_utilisation(s->pool, i);
    sr.n_worker_utilisation = (size_t)nw;
    sr.worker_utilisation = u;
  }
  sr.n_loops = cd_server_loop_stats(s, &r->budget, &sr.loops);
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY;
  env.stats_reply = &sr;
  cd_req_reply(r, &env);
}
