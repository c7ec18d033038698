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
};

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
  free(c);
}

cd_cache_entry *cd_cache_find(cd_cache *c, const char *id) {
  for (cd_cache_entry *e = c->buckets[bucket_of(c, id)]; e; e = e->next)
    if (strcmp(e->id, id) == 0) {
      e->last_use = ++c->tick;
      lru_touch(c, e);
      return e;
    }
  return NULL;
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
  snprintf(e->id, sizeof e->id, "%s", id);
  e->state = CD_ENTRY_PENDING;
  e->bound_radius = bound_radius;
  e->cache = c;
  e->last_use = ++c->tick;
  size_t b = bucket_of(c, id);
  e->next = c->buckets[b];
  c->buckets[b] = e;
  c->st.entries++;
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
  cd_waiter **pp = &e->waiters;
  while (*pp) pp = &(*pp)->next;
  *pp = w;
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

/* A waiter answered on its own loop (under the protocol lock there). */
static void run_waiter(cd_task *t) {
  cd_waiter *w = (cd_waiter *)t;
  cd_cache_entry *e = w->e;
  w->fn(w->arg, e, w->code, w->code ? w->msg : NULL);
  const int code = w->code;
  free(w);
  if (!code) cd_cache_unpin(e);
  else if (--e->remote == 0) entry_free(e);
}

static int post_waiter(cd_cache *c, cd_waiter *w, cd_cache_entry *e, int code, const char *message) {
  w->e = e;
  w->code = code;
  snprintf(w->msg, sizeof w->msg, "%s", code && message ? message : "");
  w->task.run = run_waiter;
  if (code) e->remote++;
  else e->pins++;
  if (c->post(w->owner, &w->task) == 0) return 0;
  if (code) e->remote--;
  else e->pins--;
  return -1;
}

void cd_cache_complete(cd_cache *c, cd_cache_entry *e, ce_geometry *g, uint64_t build_us, int code,
                       const char *message) {
  /* The message is copied first: the waiter that started the build may own
   * it (its job's status) and free it before the other waiters read it. */
  char msg[768];
  if (!g) {
    snprintf(msg, sizeof msg, "%s", message ? message : "geometry build failed");
    message = msg;
  }
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
  /* Waiters may take references or pins; keep the entry alive meanwhile. */
  cd_waiter *w = e->waiters;
  e->waiters = NULL;
  if (code) unlink_entry(c, e);
  e->pins++;
  lru_remove(c, e);
  void *here = c->current ? c->current() : NULL;
  while (w) {
    cd_waiter *n = w->next;
    if (w->owner != here && post_waiter(c, w, e, code, message) == 0) {
      w = n;
      continue;
    }
    w->fn(w->arg, e, code, code ? message : NULL);
    free(w);
    w = n;
  }
  e->pins--;
  if (code) {
    if (!e->remote) entry_free(e);
  } else {
    lru_touch(c, e);
    evict(c, NULL);
  }
}

void cd_cache_note_hit(cd_cache *c) { c->st.hits++; }

void cd_cache_ref(cd_cache_entry *e) {
  e->refs++;
  e->last_use = ++e->cache->tick;
  lru_remove(e->cache, e);
}

void cd_cache_unref(cd_cache_entry *e) {
  if (--e->refs == 0 && e->pins == 0) {
    lru_touch(e->cache, e);
    evict(e->cache, NULL);
  }
}

void cd_cache_pin(cd_cache_entry *e) {
  e->pins++;
  e->last_use = ++e->cache->tick;
  lru_remove(e->cache, e);
}

void cd_cache_unpin(cd_cache_entry *e) {
  if (--e->pins == 0 && e->refs == 0) {
    lru_touch(e->cache, e);
    evict(e->cache, NULL);
  }
}

void cd_cache_get_stats(const cd_cache *c, cd_cache_stats *s) { *s = c->st; }
