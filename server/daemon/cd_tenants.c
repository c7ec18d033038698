/* cd_tenants.c — see cd_tenants.h. A chained hash table of (tenant, id)
 * pairs, doubled as it fills, with the pairs also on a list oldest first
 * so that the oldest goes when tenant_visible_max is reached. */
#include "cd_tenants.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cd_hash.h"
#include "cd_principals.h"
#include "cd_proto.h"

typedef struct pair {
  struct pair *chain;        /* hash bucket */
  struct pair *older, *newer; /* insertion order */
  uint64_t h;
  uint64_t stamp_ns; /* added or last confirmed */
  char id[CD_HASH_HEX_LEN + 1];
  char tenant[]; /* NUL-terminated */
} pair;

struct cd_tenants {
  pthread_mutex_t mu;
  pair **buckets;
  size_t nbuckets; /* a power of two */
  uint64_t n, max;
  pair *oldest, *newest;
};

cd_tenants *cd_tenants_create(uint64_t max_pairs) {
  cd_tenants *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->nbuckets = 1024;
  t->buckets = calloc(t->nbuckets, sizeof *t->buckets);
  if (!t->buckets) {
    free(t);
    return NULL;
  }
  t->max = max_pairs;
  pthread_mutex_init(&t->mu, NULL);
  return t;
}

void cd_tenants_destroy(cd_tenants *t) {
  if (!t) return;
  for (pair *p = t->oldest, *n; p; p = n) {
    n = p->newer;
    free(p);
  }
  free(t->buckets);
  pthread_mutex_destroy(&t->mu);
  free(t);
}

const char *cd_tenants_of(cd_conn *c) {
  const cd_principal *p = cd_conn_session(c)->principal;
  if (!p || strcmp(p->tenant, CD_TENANT_ALL) == 0) return NULL;
  return p->tenant;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* FNV-1a over tenant, a NUL, and id. */
static uint64_t hash(const char *tenant, const char *id) {
  uint64_t h = 1469598103934665603ull;
  for (const char *s = tenant;; s++) {
    h = (h ^ (unsigned char)*s) * 1099511628211ull;
    if (!*s) break;
  }
  for (const char *s = id; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* The link pointing at the pair (tenant, id), or at the NULL ending its bucket. */
static pair **find(cd_tenants *t, uint64_t h, const char *tenant, const char *id) {
  pair **pp = &t->buckets[h & (t->nbuckets - 1)];
  while (*pp && ((*pp)->h != h || strcmp((*pp)->id, id) != 0 || strcmp((*pp)->tenant, tenant) != 0))
    pp = &(*pp)->chain;
  return pp;
}

static void unlink_pair(cd_tenants *t, pair **pp) {
  pair *p = *pp;
  *pp = p->chain;
  if (p->older) p->older->newer = p->newer;
  else t->oldest = p->newer;
  if (p->newer) p->newer->older = p->older;
  else t->newest = p->older;
  t->n--;
  free(p);
}

static void grow(cd_tenants *t) {
  size_t nb = t->nbuckets * 2;
  pair **b = calloc(nb, sizeof *b);
  if (!b) return; /* longer chains, still correct */
  for (size_t i = 0; i < t->nbuckets; i++)
    for (pair *p = t->buckets[i], *n; p; p = n) {
      n = p->chain;
      p->chain = b[p->h & (nb - 1)];
      b[p->h & (nb - 1)] = p;
    }
  free(t->buckets);
  t->buckets = b;
  t->nbuckets = nb;
}

int cd_tenants_sees(cd_tenants *t, const char *tenant, const char *id) {
  if (!tenant) return 1;
  if (!t) return 0;
  uint64_t h = hash(tenant, id);
  pthread_mutex_lock(&t->mu);
  int seen = *find(t, h, tenant, id) != NULL;
  pthread_mutex_unlock(&t->mu);
  return seen;
}

int cd_tenants_add(cd_tenants *t, const char *tenant, const char *id) {
  if (!tenant) return 0;
  if (!t) return -1;
  uint64_t h = hash(tenant, id);
  size_t tl = strlen(tenant);
  int rc = 0;
  pthread_mutex_lock(&t->mu);
  uint64_t now = now_ns();
  pair **pp = find(t, h, tenant, id);
  if (*pp) {
    (*pp)->stamp_ns = now;
  } else {
    pair *p = malloc(sizeof *p + tl + 1);
    if (!p) {
      rc = -1;
    } else {
      p->h = h;
      p->stamp_ns = now;
      snprintf(p->id, sizeof p->id, "%s", id);
      memcpy(p->tenant, tenant, tl + 1);
      p->chain = NULL;
      *pp = p;
      p->older = t->newest;
      p->newer = NULL;
      if (t->newest) t->newest->newer = p;
      else t->oldest = p;
      t->newest = p;
      t->n++;
      rc = 1;
      while (t->n > t->max && t->oldest != p) unlink_pair(t, find(t, t->oldest->h, t->oldest->tenant, t->oldest->id));
      if (t->n > 2 * t->nbuckets) grow(t);
    }
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

int cd_tenants_remove(cd_tenants *t, const char *tenant, const char *id) {
  if (!tenant || !t) return 0;
  uint64_t h = hash(tenant, id);
  pthread_mutex_lock(&t->mu);
  pair **pp = find(t, h, tenant, id);
  int had = *pp != NULL;
  if (had) unlink_pair(t, pp);
  pthread_mutex_unlock(&t->mu);
  return had;
}

int cd_tenants_check(cd_tenants *t, const char *tenant, const char *id, uint64_t recheck_ms, uint64_t *stamp) {
  if (!tenant) return 1;
  if (!t) return 0;
  uint64_t h = hash(tenant, id);
  pthread_mutex_lock(&t->mu);
  pair *p = *find(t, h, tenant, id);
  int rc = p ? 1 : 0;
  if (p && recheck_ms) {
    uint64_t now = now_ns();
    if (now - p->stamp_ns > recheck_ms * 1000000ull) {
      p->stamp_ns = now;
      *stamp = now;
      rc = 2;
    }
  }
  pthread_mutex_unlock(&t->mu);
  return rc;
}

void cd_tenants_forget(cd_tenants *t, const char *tenant, const char *id, uint64_t stamp) {
  if (!tenant || !t) return;
  uint64_t h = hash(tenant, id);
  pthread_mutex_lock(&t->mu);
  pair **pp = find(t, h, tenant, id);
  if (*pp && (*pp)->stamp_ns == stamp) unlink_pair(t, pp);
  pthread_mutex_unlock(&t->mu);
}

uint64_t cd_tenants_count(cd_tenants *t) {
  if (!t) return 0;
  pthread_mutex_lock(&t->mu);
  uint64_t n = t->n;
  pthread_mutex_unlock(&t->mu);
  return n;
}
