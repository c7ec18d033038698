/* cd_addrs.c — see cd_addrs.h. A chained hash table over a fixed pool of
 * entries; a full pool reuses the entry that matters least (no open
 * connection, no failure in its window, not locked out; else the one whose
 * lock-out ended first). */
#include "cd_addrs.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ADDR_MAX 64

typedef struct entry {
  char addr[ADDR_MAX];
  uint64_t open;
  uint64_t fails;          /* within the window that began at window_ms */
  uint64_t window_ms;
  uint64_t locked_until_ms;
  struct entry *next;      /* bucket chain, or the free list */
} entry;

struct cd_addrs {
  cd_addrs_config cfg;
  pthread_mutex_t mu;
  entry *pool, *free_list, **bucket;
  size_t nbuckets;
  uint64_t now_ms; /* the latest time an authentication call gave */
  cd_addrs_stats st;
};

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

cd_addrs *cd_addrs_new(const cd_addrs_config *cfg) {
  cd_addrs *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->cfg = *cfg;
  if (t->cfg.max_entries < 16) t->cfg.max_entries = 16;
  t->nbuckets = 16;
  while (t->nbuckets < t->cfg.max_entries) t->nbuckets *= 2;
  t->pool = calloc(t->cfg.max_entries, sizeof *t->pool);
  t->bucket = calloc(t->nbuckets, sizeof *t->bucket);
  if (!t->pool || !t->bucket) {
    cd_addrs_free(t);
    return NULL;
  }
  for (size_t i = t->cfg.max_entries; i-- > 0;) {
    t->pool[i].next = t->free_list;
    t->free_list = &t->pool[i];
  }
  pthread_mutex_init(&t->mu, NULL);
  return t;
}

void cd_addrs_free(cd_addrs *t) {
  if (!t) return;
  if (t->pool && t->bucket) pthread_mutex_destroy(&t->mu);
  free(t->pool);
  free(t->bucket);
  free(t);
}

static entry **slot_of(cd_addrs *t, const char *addr) {
  entry **p = &t->bucket[hash(addr) & (t->nbuckets - 1)];
  while (*p && strcmp((*p)->addr, addr) != 0) p = &(*p)->next;
  return p;
}

/* Whether e remembers nothing that matters now. */
static int idle(const cd_addrs *t, const entry *e) {
  return e->open == 0 && e->locked_until_ms <= t->now_ms &&
         (e->fails == 0 || t->now_ms - e->window_ms >= t->cfg.fail_window_ms);
}

static void unlink_entry(cd_addrs *t, entry *e) {
  entry **p = slot_of(t, e->addr);
  if (*p == e) *p = e->next;
  memset(e, 0, sizeof *e);
  t->st.tracked--;
}

/* An entry to reuse when the pool is full, or NULL (every one has an open
 * connection). */
static entry *victim(cd_addrs *t) {
  entry *best = NULL;
  for (size_t i = 0; i < t->cfg.max_entries; i++) {
    entry *e = &t->pool[i];
    if (e->open) continue;
    if (idle(t, e)) return e;
    if (!best || e->locked_until_ms < best->locked_until_ms) best = e;
  }
  return best;
}

/* addr's entry, made when missing; NULL when it cannot be (an address too
 * long to be an IP address, or every entry holding open connections). */
static entry *lookup(cd_addrs *t, const char *addr) {
  if (strlen(addr) >= ADDR_MAX) return NULL;
  entry **p = slot_of(t, addr);
  if (*p) return *p;
  entry *e = t->free_list;
  if (e) t->free_list = e->next;
  else if ((e = victim(t))) unlink_entry(t, e);
  else return NULL;
  memset(e, 0, sizeof *e);
  snprintf(e->addr, sizeof e->addr, "%s", addr);
  p = slot_of(t, addr); /* the victim may have been in this chain */
  e->next = *p;
  *p = e;
  t->st.tracked++;
  return e;
}

/* Forget e when it remembers nothing. */
static void maybe_release(cd_addrs *t, entry *e) {
  if (!idle(t, e)) return;
  unlink_entry(t, e);
  e->next = t->free_list;
  t->free_list = e;
}

int cd_addrs_open(cd_addrs *t, const char *addr) {
  pthread_mutex_lock(&t->mu);
  int rc = 0;
  entry *e = lookup(t, addr);
  if (e && t->cfg.max_per_address && e->open >= t->cfg.max_per_address) {
    t->st.refused_per_address++;
    rc = -1;
  } else if (e) {
    e->open++;
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

void cd_addrs_close(cd_addrs *t, const char *addr) {
  pthread_mutex_lock(&t->mu);
  entry **p = strlen(addr) < ADDR_MAX ? slot_of(t, addr) : NULL;
  if (p && *p && (*p)->open) {
    (*p)->open--;
    maybe_release(t, *p);
  }
  pthread_mutex_unlock(&t->mu);
}

/* Failures older than the window no longer count. */
static void age(cd_addrs *t, entry *e, uint64_t now_ms) {
  if (e->fails && now_ms - e->window_ms >= t->cfg.fail_window_ms) e->fails = 0;
}

cd_auth_verdict cd_addrs_auth_check(cd_addrs *t, const char *addr, uint64_t now_ms, uint64_t *wait_ms) {
  pthread_mutex_lock(&t->mu);
  if (now_ms > t->now_ms) t->now_ms = now_ms;
  cd_auth_verdict v = CD_AUTH_GO;
  *wait_ms = 0;
  entry **p = strlen(addr) < ADDR_MAX ? slot_of(t, addr) : NULL;
  entry *e = p ? *p : NULL;
  if (e) {
    age(t, e, now_ms);
    if (e->locked_until_ms > now_ms) {
      v = CD_AUTH_LOCKED;
      *wait_ms = e->locked_until_ms - now_ms;
      t->st.auth_locked++;
    } else if (t->cfg.fail_max && e->fails * 2 >= t->cfg.fail_max && t->cfg.fail_delay_ms) {
      v = CD_AUTH_WAIT;
      *wait_ms = t->cfg.fail_delay_ms;
      t->st.auth_delayed++;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return v;
}

int cd_addrs_auth_failed(cd_addrs *t, const char *addr, uint64_t now_ms) {
  pthread_mutex_lock(&t->mu);
  if (now_ms > t->now_ms) t->now_ms = now_ms;
  t->st.auth_failures++;
  int locked = 0;
  entry *e = lookup(t, addr);
  if (e) {
    age(t, e, now_ms);
    if (!e->fails) e->window_ms = now_ms;
    e->fails++;
    if (t->cfg.fail_max && e->fails >= t->cfg.fail_max && e->locked_until_ms <= now_ms) {
      e->locked_until_ms = now_ms + t->cfg.lockout_ms;
      e->fails = 0; /* a new window once the lock-out ends */
      t->st.lockouts++;
      locked = 1;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return locked;
}

void cd_addrs_get_stats(cd_addrs *t, cd_addrs_stats *out) {
  pthread_mutex_lock(&t->mu);
  *out = t->st;
  pthread_mutex_unlock(&t->mu);
}
