/* cd_fetch.c — see cd_fetch.h. One store lookup per id and event loop at a
 * time (later requests of that loop for the same id join it), one build per
 * id (the cache's PENDING entry and its waiters, shared with registrations).
 *
 * Threads: a request, its lookups and their waiters belong to the request's
 * loop: a lookup is asked from that loop and answered on it (the store
 * delivers to the loop that asked), so it only ever settles requests of its
 * own loop. The list of lookups in flight is shared by the loops (its
 * mutex); a cache sequence that must be one step for the other loops (find
 * then begin, wait or pin) holds the cache lock. */
#include "cd_fetch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cd_geomspec.h"
#include "cd_proto.h"
#include "cd_loop.h"
#include "cd_log.h"
#include "cd_principals.h"
#include "cd_server.h"
#include "cd_store.h"
#include "cd_tenants.h"

/* A request held back until each of its ids is settled. */
typedef struct fetch_req {
  cd_req *r;
  int pending;     /* ids not settled yet (+1 while they are being counted) */
  int unavailable; /* an id stayed unknown because the store failed */
  char unavailable_id[CD_HASH_HEX_LEN + 1];
  cd_cache_entry **pinned;
  size_t npinned, cappinned;
} fetch_req;

/* One id of one request waiting for a lookup or a build. */
typedef struct fetch_wait {
  fetch_req *f;
  struct fetch_wait *next;
} fetch_wait;

/* A store lookup in flight: of a registration, or (tenant set) of that
 * tenant's visibility marker for the id. */
typedef struct lookup {
  char id[CD_HASH_HEX_LEN + 1];
  char tenant[CD_PRINCIPAL_NAME_MAX]; /* "" = the registration */
  int recheck;    /* confirming a pair the tenant sees (cd_tenants_check) */
  uint64_t stamp; /* its stamp */
  cd_server *srv;
  uv_loop_t *loop; /* the loop that asked, and is answered */
  fetch_wait *waiters;
  struct lookup *next;
} lookup;

struct cd_fetch {
  pthread_mutex_t mu; /* lookups */
  lookup *lookups;
  _Atomic uint64_t loads;
};

/* A build from a store record (a worker job). */
typedef struct load_job {
  cd_job job;
  cd_server *srv;
  cd_cache_entry *entry;
  Contactd__V1__RegisterGeometry *msg;
  ce_geometry *geom;
  double radius;
  uint64_t build_us;
  cd_status st;
} load_job;

cd_fetch *cd_fetch_create(void) {
  cd_fetch *f = calloc(1, sizeof(cd_fetch));
  if (f) pthread_mutex_init(&f->mu, NULL);
  return f;
}

void cd_fetch_destroy(cd_fetch *f) {
  if (!f) return;
  pthread_mutex_destroy(&f->mu);
  free(f);
}

uint64_t cd_fetch_loads(cd_fetch *f) { return f ? atomic_load(&f->loads) : 0; }

static int is_id(const char *s) {
  size_t n = 0;
  for (; s[n]; n++)
    if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return 0;
  return n == CD_HASH_HEX_LEN;
}

/* ---- finishing a request ------------------------------------------------ */

static void unavailable_field(const cd_req *r, const char *id, char *f, size_t n) {
  const Contactd__V1__Envelope *e = r->env;
  Contactd__V1__Body **b = NULL;
  size_t nb = 0;
  const char *what = "contactQuery.bodies";
  if (e->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY) {
    b = e->contact_query->bodies;
    nb = e->contact_query->n_bodies;
  } else if (e->msg_case == CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM) {
    b = e->open_stream->bodies;
    nb = e->open_stream->n_bodies;
    what = "openStream.bodies";
  }
  snprintf(f, n, "%s", what);
  for (size_t i = 0; i < nb; i++)
    if (strcmp(b[i]->geometry_id, id) == 0) {
      snprintf(f, n, "%s[%zu].geometryId", what, i);
      return;
    }
}

static void finish(fetch_req *f) {
  cd_req *r = f->r;
  int has = r->env->msg_case == CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
  if (f->unavailable && !has) {
    cd_cache *c = cd_conn_server(r->conn)->cache;
    cd_cache_lock(c);
    cd_cache_entry *e = cd_cache_find(c, f->unavailable_id);
    int ready = e && e->state == CD_ENTRY_READY &&
                cd_tenants_sees(cd_conn_server(r->conn)->tenants, cd_tenants_of(r->conn), f->unavailable_id);
    cd_cache_unlock(c);
    if (!ready) {
      char field[192];
      unavailable_field(r, f->unavailable_id, field, sizeof field);
      cd_status st;
      cd_status_set(&st, CD_NOT_FOUND, field,
                    "geometry \"%s\" is not registered on this server and the geometry store (%s) is unavailable: "
                    "register it again (retry later to use the store)",
                    f->unavailable_id, cd_store_describe(cd_conn_server(r->conn)->store));
      cd_req_fail(r, &st);
      r = NULL;
    }
  }
  if (r) {
    r->store_checked = 1;
    /* handled as if it had just arrived: through the protocol's entry, which
     * sees store_checked and does not send it here again. The geometry
     * found is pinned here: it cannot be evicted in between. */
    cd_conn_server(r->conn)->proto->request(r);
  }
  for (size_t i = 0; i < f->npinned; i++) cd_cache_unpin(f->pinned[i]);
  free(f->pinned);
  free(f);
}

static void settle_one(fetch_req *f) {
  if (--f->pending == 0) finish(f);
}

static void on_entry(void *arg, cd_cache_entry *e, int code, const char *message) {
  (void)message;
  fetch_wait *w = arg;
  fetch_req *f = w->f;
  free(w);
  if (!code) {
    if (f->npinned == f->cappinned) {
      size_t cap = f->cappinned ? 2 * f->cappinned : 4;
      cd_cache_entry **n = realloc(f->pinned, cap * sizeof *n);
      if (n) {
        f->pinned = n;
        f->cappinned = cap;
      }
    }
    if (f->npinned < f->cappinned) {
      cd_cache_pin(e);
      f->pinned[f->npinned++] = e;
    }
  }
  settle_one(f);
}

/* ---- building a store hit ------------------------------------------------ */

static int load_progress(void *user, double fraction, const char *stage) {
  (void)fraction;
  (void)stage;
  load_job *j = user;
  return cd_pool_cancelled(j->srv->pool);
}

static void load_run(cd_job *job, cd_worker *w) {
  (void)w;
  load_job *j = (load_job *)job;
  uint64_t t0 = cd_stats_now_ns();
  int rc = cd_pool_cancelled(j->srv->pool)
               ? cd_status_set(&j->st, CD_UNAVAILABLE, "", "the server is shutting down")
               : cd_geomspec_build_progress(j->msg, &j->srv->cfg.limits, load_progress, j, &j->geom, &j->radius,
                                            &j->st);
  if (rc) j->geom = NULL;
  j->build_us = (cd_stats_now_ns() - t0) / 1000;
}

static void load_done(cd_job *job) {
  load_job *j = (load_job *)job;
  cd_server *s = j->srv;
  cd_cache_entry *e = j->entry;
  if (j->geom) {
    e->bound_radius = j->radius; /* (PENDING: nobody reads it before completion) */
    atomic_fetch_add(&s->fetch->loads, 1);
    CD_INFO("geometry built from the store", "geometry=%s build_us=%llu", e->id, (unsigned long long)j->build_us);
  } else {
    CD_WARN("geometry from the store failed to build", "geometry=%s error=\"%s\"", e->id, j->st.message);
  }
  contactd__v1__register_geometry__free_unpacked(j->msg, NULL);
  cd_cache_complete(s->cache, e, j->geom, j->build_us, j->geom ? 0 : (j->st.code ? j->st.code : CD_INTERNAL),
                    j->st.message);
  free(j);
}

/* Start building the stored registration m of a new PENDING entry e (takes m). */
static void start_load(cd_server *s, cd_cache_entry *e, Contactd__V1__RegisterGeometry *m) {
  if (m->material) e->material = (ce_material){m->material->dissipation, m->material->friction};
  if (m->point_stiffness) e->point_stiffness = m->point_stiffness->value;
  load_job *j = calloc(1, sizeof *j);
  if (!j) {
    contactd__v1__register_geometry__free_unpacked(m, NULL);
    cd_cache_complete(s->cache, e, NULL, 0, CD_EXHAUSTED, "out of memory");
    return;
  }
  j->srv = s;
  j->entry = e;
  j->msg = m;
  j->job.run = load_run;
  j->job.done = load_done;
  j->job.heavy = 1;
  cd_pool_submit(s->pool, NULL, &j->job);
}

/* ---- lookups ------------------------------------------------------------- */

static void consider(fetch_req *f, cd_server *s, uv_loop_t *loop, const char *id, const char *tenant);

static void unavailable(fetch_req *f, const char *id) {
  if (f->unavailable) return;
  f->unavailable = 1;
  snprintf(f->unavailable_id, sizeof f->unavailable_id, "%s", id);
}

/* A tenant's marker was looked up: found, the tenant sees the id from now
 * on and each waiting request goes on to the geometry itself; not found,
 * the id stays unseen (its requests are answered as for an id not cached);
 * the store failing, as for a registration the store failed to give. */
static void on_seen(lookup *lk, cd_store_result res) {
  cd_server *s = lk->srv;
  if (res == CD_STORE_HIT) cd_tenants_add(s->tenants, lk->tenant, lk->id);
  else if (res == CD_STORE_MISS && lk->recheck) cd_tenants_forget(s->tenants, lk->tenant, lk->id, lk->stamp);
  for (fetch_wait *w = lk->waiters, *n; w; w = n) {
    n = w->next;
    fetch_req *f = w->f;
    free(w);
    if (res == CD_STORE_HIT) consider(f, s, lk->loop, lk->id, NULL);
    else if (res == CD_STORE_UNAVAILABLE) unavailable(f, lk->id);
    settle_one(f);
  }
  free(lk);
}

static void on_lookup(void *arg, cd_store_result res, Contactd__V1__RegisterGeometry *m) {
  lookup *lk = arg;
  cd_server *s = lk->srv;
  pthread_mutex_lock(&s->fetch->mu);
  lookup **pp = &s->fetch->lookups;
  while (*pp && *pp != lk) pp = &(*pp)->next;
  if (*pp) *pp = lk->next;
  pthread_mutex_unlock(&s->fetch->mu);
  if (lk->tenant[0]) {
    on_seen(lk, res);
    return;
  }
  /* the cache may have the id by now (a registration, or another loop's
   * lookup): prefer it. Under the cache lock: find, begin, and pin or wait,
   * so that no other loop evicts the entry in between; the requests are
   * settled after it (settling one may run its handler). */
  cd_cache_lock(s->cache);
  cd_cache_entry *e = cd_cache_find(s->cache, lk->id);
  if (!e && res == CD_STORE_HIT && s->pool && !s->draining) {
    e = cd_cache_begin(s->cache, lk->id, 0);
    if (e) {
      start_load(s, e, m); /* e stays PENDING: its build runs on a worker */
      m = NULL;
    }
  }
  int ready = e && e->state == CD_ENTRY_READY;
  if (ready) cd_cache_pin(e); /* until each waiting request has pinned it */
  fetch_wait *now = NULL;
  for (fetch_wait *w = lk->waiters, *n; w; w = n) {
    n = w->next;
    if (!ready && e && cd_cache_add_waiter(e, on_entry, w) == 0) continue; /* settled by the build */
    w->next = now;
    now = w;
  }
  cd_cache_unlock(s->cache);
  if (m) contactd__v1__register_geometry__free_unpacked(m, NULL);
  for (fetch_wait *w = now, *n; w; w = n) {
    n = w->next;
    fetch_req *f = w->f;
    if (ready) {
      on_entry(w, e, 0, NULL);
      continue;
    }
    if (res == CD_STORE_UNAVAILABLE) unavailable(f, lk->id);
    free(w);
    settle_one(f);
  }
  if (ready) cd_cache_unpin(e);
  free(lk);
}

/* f waits for id's registration (tenant NULL) or tenant's marker for it:
 * join a lookup in flight or start one. */
static void want(fetch_req *f, cd_server *s, uv_loop_t *loop, const char *id, const char *tenant) {
  if (!tenant) tenant = "";
  fetch_wait *w = calloc(1, sizeof *w);
  if (!w) return;
  w->f = f;
  pthread_mutex_lock(&s->fetch->mu);
  lookup *lk = s->fetch->lookups;
  while (lk && (lk->loop != loop || strcmp(lk->id, id) != 0 || strcmp(lk->tenant, tenant) != 0)) lk = lk->next;
  if (!lk) {
    lk = calloc(1, sizeof *lk);
    if (lk) {
      snprintf(lk->id, sizeof lk->id, "%s", id);
      snprintf(lk->tenant, sizeof lk->tenant, "%s", tenant);
      lk->srv = s;
      lk->loop = loop;
    }
    /* (answered later, on this loop: never from inside this call) */
    if (!lk || (tenant[0] ? cd_store_get_seen(s->store, loop, tenant, id, on_lookup, lk)
                          : cd_store_get_spec(s->store, loop, id, on_lookup, lk)) != 0) {
      pthread_mutex_unlock(&s->fetch->mu);
      free(lk);
      free(w);
      unavailable(f, id);
      return;
    }
    lk->next = s->fetch->lookups;
    s->fetch->lookups = lk;
  }
  /* waiters are only touched on this loop (here and in on_lookup) */
  pthread_mutex_unlock(&s->fetch->mu);
  w->next = lk->waiters;
  lk->waiters = w;
  f->pending++;
}

/* Confirm with the store that tenant still sees id (a release on another
 * replica deletes the marker), the request that found it due going on at
 * once: a lookup no request waits for, unless one for the same marker is
 * in flight already. */
static void recheck(cd_server *s, uv_loop_t *loop, const char *tenant, const char *id, uint64_t stamp) {
  pthread_mutex_lock(&s->fetch->mu);
  lookup *lk = s->fetch->lookups;
  while (lk && (lk->loop != loop || strcmp(lk->id, id) != 0 || strcmp(lk->tenant, tenant) != 0)) lk = lk->next;
  if (!lk && (lk = calloc(1, sizeof *lk))) {
    snprintf(lk->id, sizeof lk->id, "%s", id);
    snprintf(lk->tenant, sizeof lk->tenant, "%s", tenant);
    lk->srv = s;
    lk->loop = loop;
    lk->recheck = 1;
    lk->stamp = stamp;
    if (cd_store_get_seen(s->store, loop, tenant, id, on_lookup, lk) == 0) {
      lk->next = s->fetch->lookups;
      s->fetch->lookups = lk;
    } else {
      free(lk);
    }
  }
  pthread_mutex_unlock(&s->fetch->mu);
}

/* f names id: settle what it needs first. A tenant that does not see id
 * asks the store for its marker (the same lookup whether or not the cache
 * holds the id: an id only another tenant sees costs what an unknown one
 * does); an id the cache does not hold is looked up, one being built is
 * waited for. */
static void consider(fetch_req *f, cd_server *s, uv_loop_t *loop, const char *id, const char *tenant) {
  if (!is_id(id)) return; /* not an id: the handler says so */
  if (tenant) {
    uint64_t stamp = 0;
    int seen = cd_tenants_check(s->tenants, tenant, id, s->cfg.limits.tenant_recheck_ms, &stamp);
    if (!seen) {
      want(f, s, loop, id, tenant);
      return;
    }
    if (seen == 2) recheck(s, loop, tenant, id, stamp);
  }
  cd_cache_lock(s->cache);
  cd_cache_entry *e = cd_cache_find(s->cache, id);
  if (e && e->state == CD_ENTRY_PENDING) { /* being built: wait for it */
    fetch_wait *w = calloc(1, sizeof *w);
    if (w) w->f = f;
    if (w && cd_cache_add_waiter(e, on_entry, w) == 0) f->pending++;
    else free(w);
  }
  cd_cache_unlock(s->cache);
  if (!e) want(f, s, loop, id, NULL);
}

int cd_fetch_intercept(cd_req *r) {
  cd_server *s = cd_conn_server(r->conn);
  if (!s->store || r->store_checked) return 0;
  const Contactd__V1__Envelope *e = r->env;
  Contactd__V1__Body **b = NULL;
  size_t nb = 0;
  char **ids = NULL;
  size_t nids = 0;
  switch (e->msg_case) {
    case CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY:
      b = e->contact_query->bodies;
      nb = e->contact_query->n_bodies;
      break;
    case CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM:
      b = e->open_stream->bodies;
      nb = e->open_stream->n_bodies;
      break;
    case CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY:
      ids = e->has_geometry->geometry_ids;
      nids = e->has_geometry->n_geometry_ids;
      break;
    default: return 0;
  }
  /* (the handler enforces max_bodies_per_query; a longer list is refused there) */
  if (nb > s->cfg.limits.max_bodies_per_query || nids > s->cfg.limits.max_bodies_per_query) return 0;
  fetch_req *f = calloc(1, sizeof *f);
  if (!f) return 0;
  f->r = r;
  f->pending = 1;
  uv_loop_t *loop = cd_conn_loop(r->conn)->uv;
  const char *tenant = cd_tenants_of(r->conn);
  const char *prev = NULL;
  for (size_t i = 0; i < nb + nids; i++) {
    const char *id = i < nb ? b[i]->geometry_id : ids[i - nb];
    if (prev && strcmp(prev, id) == 0) continue; /* runs of one id (many bodies of one shape) */
    prev = id;
    consider(f, s, loop, id, tenant);
  }
  if (f->pending == 1 && !f->unavailable) {
    free(f);
    return 0;
  }
  settle_one(f);
  return 1;
}
