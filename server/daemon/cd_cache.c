/* cd_cache.c — content-addressed geometry cache: hash table of entries,
 * pending builds with waiters, reference counts, byte budget, LRU eviction.
 *
 * Eviction order: the evictable entries (READY, no reference, no pin) sit
 * on one doubly linked list, least recently used at the head. An entry
 * joins at the tail when it becomes evictable (its last reference or pin
 * dropped, or its build completed unused) and moves to the tail when it is
 * looked up; it leaves the list when it is referenced, pinned or removed.
 * Evicting is then taking the head: O(1) per victim, where a scan of every
 * bucket made each release over budget cost O(entries). */
#include "cd_cache.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_log.h"
#include "cd_status.h"


typedef struct cd_waiter {
  cd_task task; /* answered on its own loop: first, so the task is the waiter */
  cd_cache_waiter_fn fn;
  void *arg;
  void *owner;  /* the loop that added it */
  cd_cache_entry *e;
  int code;
  char msg[768];
  struct cd_waiter *next;
} cd_waiter;

struct cd_cache {
  cd_cache_entry **buckets;
  size_t nbuckets;
  cd_cache_entry *lru_head, *lru_tail; /* evictable entries, oldest first */
  uint64_t budget;
  uint64_t tick;
  cd_cache_stats st;
  void *(*current)(void);
  int (*post)(void *loop, cd_task *t);
  pthread_mutex_t mu; /* everything above and every entry's bookkeeping (recursive) */
};

void cd_cache_lock(cd_cache *c) { pthread_mutex_lock(&c->mu); }
void cd_cache_unlock(cd_cache *c) { pthread_mutex_unlock(&c->mu); }

void cd_cache_set_exec(cd_cache *c, void *(*current)(void), int (*post)(void *loop, cd_task *t)) {
  c->current = current;
  c->post = post;
}

static size_t bucket_of(const cd_cache *c, const char *id) {
  /* ids are hex SHA-256: the first 16 digits are uniformly distributed. */
  uint64_t h = 0;
  for (int i = 0; i < 16 && id[i]; i++) h = h * 16 + (uint64_t)(id[i] <= '9' ? id[i] - '0' : id[i] - 'a' + 10);
  return (size_t)(h & (c->nbuckets - 1));
}

static int evictable(const cd_cache_entry *e) {
  return e->state == CD_ENTRY_READY && e->refs == 0 && e->pins == 0;
}

static void lru_remove(cd_cache *c, cd_cache_entry *e) {
  if (!e->in_lru) return;
  if (e->lru_prev) e->lru_prev->lru_next = e->lru_next;
  else c->lru_head = e->lru_next;
  if (e->lru_next) e->lru_next->lru_prev = e->lru_prev;
  else c->lru_tail = e->lru_prev;
  e->lru_prev = e->lru_next = NULL;
  e->in_lru = 0;
}

/* After a use of e: on the list at the tail (most recent) when evictable,
 * off it otherwise. */
static void lru_touch(cd_cache *c, cd_cache_entry *e) {
  lru_remove(c, e);
  if (!evictable(e)) return;
  e->lru_prev = c->lru_tail;
  e->lru_next = NULL;
  if (c->lru_tail) c->lru_tail->lru_next = e;
  else c->lru_head = e;
  c->lru_tail = e;
  e->in_lru = 1;
}

cd_cache *cd_cache_create(uint64_t budget_bytes) {
  cd_cache *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->nbuckets = 4096;
  c->buckets = calloc(c->nbuckets, sizeof *c->buckets);
  if (!c->buckets) {
    free(c);
    return NULL;
  }
  c->budget = budget_bytes;
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&c->mu, &a);
  pthread_mutexattr_destroy(&a);
  return c;
}

static void entry_free(cd_cache_entry *e) {
  for (cd_waiter *w = e->waiters, *n; w; w = n) {
    n = w->next;
    free(w);
  }
  if (e->geometry) ce_geometry_free(e->geometry);
  free(e);
}

void cd_cache_destroy(cd_cache *c) {
  if (!c) return;
  for (size_t i = 0; i < c->nbuckets; i++)
    for (cd_cache_entry *e = c->buckets[i], *n; e; e = n) {
      n = e->next;
      entry_free(e);
    }
  free(c->buckets);
  pthread_mutex_destroy(&c->mu);
  free(c);
}

cd_cache_entry *cd_cache_find(cd_cache *c, const char *id) {
  cd_cache_entry *e;
  cd_cache_lock(c);
  for (e = c->buckets[bucket_of(c, id)]; e; e = e->next)
    if (strcmp(e->id, id) == 0) {
      e->last_use = ++c->tick;
      lru_touch(c, e);
      break;
    }
  cd_cache_unlock(c);
  return e;
}

static void unlink_entry(cd_cache *c, cd_cache_entry *e) {
  cd_cache_entry **pp = &c->buckets[bucket_of(c, e->id)];
  while (*pp && *pp != e) pp = &(*pp)->next;
  if (*pp) *pp = e->next;
  lru_remove(c, e);
  c->st.entries--;
  if (e->state == CD_ENTRY_READY) c->st.bytes -= e->info.bytes;
}

cd_cache_entry *cd_cache_begin(cd_cache *c, const char *id, double bound_radius) {
  cd_cache_entry *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  cd_cache_lock(c);
  snprintf(e->id, sizeof e->id, "%s", id);
  e->state = CD_ENTRY_PENDING;
  e->bound_radius = bound_radius;
  e->cache = c;
  e->last_use = ++c->tick;
  size_t b = bucket_of(c, id);
  e->next = c->buckets[b];
  c->buckets[b] = e;
  c->st.entries++;
  cd_cache_unlock(c);
  return e;
}

int cd_cache_add_waiter(cd_cache_entry *e, cd_cache_waiter_fn fn, void *arg) {
  cd_waiter *w = malloc(sizeof *w);
  if (!w) return -1;
  w->fn = fn;
  w->arg = arg;
  w->owner = e->cache->current ? e->cache->current() : NULL;
  /* Append, so waiters are answered in arrival order. */
  w->next = NULL;
  cd_cache_lock(e->cache);
  cd_waiter **pp = &e->waiters;
  while (*pp) pp = &(*pp)->next;
  *pp = w;
  cd_cache_unlock(e->cache);
  return 0;
}


/* Evict LRU evictable entries (never `keep`) while over budget. */
static void evict(cd_cache *c, const cd_cache_entry *keep) {
  while (c->st.bytes > c->budget) {
    cd_cache_entry *victim = c->lru_head;
    if (victim == keep) victim = victim->lru_next;
    if (!victim) return;
    CD_DEBUG("cache evict", "geometry=%s bytes=%zu", victim->id, victim->info.bytes);
    unlink_entry(c, victim);
    c->st.evictions++;
    entry_free(victim);
  }
}

/* A waiter answered on its loop; the entry was kept for it (a pin, or,
 * failed, a count in `remote`) by complete_locked. */
static void run_waiter(cd_task *t) {
  cd_waiter *w = (cd_waiter *)t;
  cd_cache_entry *e = w->e;
  cd_cache *c = e->cache;
  w->fn(w->arg, e, w->code, w->code ? w->msg : NULL);
  const int code = w->code;
  free(w);
  if (!code) {
    cd_cache_unpin(e);
    return;
  }
  cd_cache_lock(c);
  const int last = --e->remote == 0;
  cd_cache_unlock(c);
  if (last) entry_free(e);
}

/* The bookkeeping of cd_cache_complete (cache lock held): the entry's new
 * state, and every waiter detached and prepared to be answered outside the
 * lock, each keeping the entry alive until it has run. Returns the waiters. */
static cd_waiter *complete_locked(cd_cache *c, cd_cache_entry *e, ce_geometry *g, uint64_t build_us, int *codep,
                                  const char *message) {
  int code = *codep;
  char msg[768];
  if (g) {
    e->geometry = g;
    ce_geometry_get_info(g, &e->info);
    e->build_us = build_us;
    e->state = CD_ENTRY_READY;
    c->st.bytes += e->info.bytes;
    c->st.builds++;
    lru_touch(c, e);
    evict(c, e);
    if (c->st.bytes > c->budget) {
      snprintf(msg, sizeof msg,
               "geometry needs %zu bytes but cache_bytes is %llu and the rest is held by geometries in use "
               "(registered by open sessions or pinned by queries)",
               e->info.bytes, (unsigned long long)c->budget);
      code = CD_EXHAUSTED;
      message = msg;
    } else {
      code = 0;
    }
  } else {
    c->st.failures++;
  }
  cd_waiter *w = e->waiters;
  e->waiters = NULL;
  if (code) unlink_entry(c, e);
  lru_remove(c, e);
  /* held by cd_cache_complete until every waiter is dispatched */
  if (code) e->remote++;
  else e->pins++;
  *codep = code;
  for (cd_waiter *x = w; x; x = x->next) {
    x->e = e;
    x->code = code;
    snprintf(x->msg, sizeof x->msg, "%s", code && message ? message : "");
    x->task.run = run_waiter;
    if (code) e->remote++;
    else e->pins++;
  }
  return w;
}

void cd_cache_complete(cd_cache *c, cd_cache_entry *e, ce_geometry *g, uint64_t build_us, int code,
                       const char *message) {
  /* The message is copied (into each waiter) under the lock first: the
   * waiter that started the build may own it (its job's status) and free it
   * before the other waiters read it. */
  if (!g && !message) message = "geometry build failed";
  cd_cache_lock(c);
  cd_waiter *w = complete_locked(c, e, g, build_us, &code, message);
  cd_cache_unlock(c);
  /* Answered outside the cache lock, each on the loop that added it. */
  void *here = c->current ? c->current() : NULL;
  while (w) {
    cd_waiter *n = w->next;
    if (w->owner == here || !c->post || c->post(w->owner, &w->task) != 0) run_waiter(&w->task);
    w = n;
  }
  if (!code) {
    cd_cache_unpin(e); /* evictable again once nobody took it */
    return;
  }
  cd_cache_lock(c);
  const int last = --e->remote == 0;
  cd_cache_unlock(c);
  if (last) entry_free(e);
}

void cd_cache_note_hit(cd_cache *c) {
  cd_cache_lock(c);
  c->st.hits++;
  cd_cache_unlock(c);
}

void cd_cache_ref(cd_cache_entry *e) {
  cd_cache *c = e->cache;
  cd_cache_lock(c);
  e->refs++;
  e->last_use = ++c->tick;
  lru_remove(c, e);
  cd_cache_unlock(c);
}

void cd_cache_unref(cd_cache_entry *e) {
  cd_cache *c = e->cache;
  cd_cache_lock(c);
  if (--e->refs == 0 && e->pins == 0) {
    lru_touch(c, e);
    evict(c, NULL);
  }
  cd_cache_unlock(c);
}

void cd_cache_pin(cd_cache_entry *e) {
  cd_cache *c = e->cache;
  cd_cache_lock(c);
  e->pins++;
  e->last_use = ++c->tick;
  lru_remove(c, e);
  cd_cache_unlock(c);
}

void cd_cache_unpin(cd_cache_entry *e) {
  cd_cache *c = e->cache;
  cd_cache_lock(c);
  if (--e->pins == 0 && e->refs == 0) {
    lru_touch(c, e);
    evict(c, NULL);
  }
  cd_cache_unlock(c);
}

void cd_cache_get_stats(cd_cache *c, cd_cache_stats *s) {
  cd_cache_lock(c);
  *s = c->st;
  cd_cache_unlock(c);
}
