/* cd_cache.h — the geometry cache shared by every connection.
 *
 * Entries are content-addressed (id = SHA-256 of the canonical input, see
 * cd_geomspec.c), reference-counted by the sessions that registered them and
 * pinned by the queries and streams that use them. READY entries that nobody
 * references or pins are evicted least-recently-used first once the cache
 * holds more than its byte budget. A registration of content that is being
 * built attaches to the PENDING entry as a waiter: one build, many replies.
 *
 * Shared by every loop, guarded by its own (recursive) mutex: each call
 * below takes it. An entry's bookkeeping (state, refs, pins, waiters, LRU
 * links, `build`, `remote`) changes only under it. What an entry describes
 * (geometry, info, material, point_stiffness, bound_radius, id) is written
 * before anyone else can see the entry (begin, under the lock the caller
 * holds) or at completion, and never changes once READY: a loop that holds a
 * reference or pin, and a worker running a query that pinned it, read it
 * without the lock. A caller that reads `state` or `build`, or must find an
 * entry and then reference or pin it before another loop may evict it, holds
 * cd_cache_lock across that sequence. Waiters are answered outside the lock,
 * each on the loop that added it (see cd_cache_set_exec). */
#ifndef CD_CACHE_H
#define CD_CACHE_H

#include <stdint.h>

#include "cd_hash.h"
#include "cd_task.h"
#include "ce.h"

typedef enum { CD_ENTRY_PENDING = 1, CD_ENTRY_READY = 2 } cd_entry_state;

typedef struct cd_cache_entry cd_cache_entry;
typedef struct cd_cache cd_cache;

/* Called on the loop when a PENDING entry completes. On failure `e` is about
 * to be removed (do not keep it) and code/message describe why (code is a
 * gRPC canonical code number). */
typedef void (*cd_cache_waiter_fn)(void *arg, cd_cache_entry *e, int code, const char *message);

struct cd_cache_entry {
  char id[CD_HASH_HEX_LEN + 1];
  cd_entry_state state;
  ce_geometry *geometry; /* READY */
  ce_geometry_info info;
  ce_material material;  /* registered surface material */
  double point_stiffness; /* N/m for the point-contact model; 0 = engine default */
  double bound_radius;   /* bounding sphere about the body origin; INFINITY = half space */
  uint64_t build_us;
  int64_t refs;          /* sessions holding a reference */
  int64_t pins;          /* queries / streams / builds using it now */
  uint64_t last_use;     /* LRU tick */
  struct cd_waiter *waiters;
  void *build;           /* PENDING: the running build's state (cd_handlers.c), else NULL */
  cd_cache_entry *next;  /* hash chain */
  cd_cache_entry *lru_prev, *lru_next; /* eviction list (cd_cache.c) */
  int in_lru;
  int remote;            /* a failed entry: waiters of other loops not yet answered */
  cd_cache *cache;
};

typedef struct cd_cache_stats {
  uint64_t entries, bytes, builds, hits, evictions, failures;
} cd_cache_stats;

cd_cache *cd_cache_create(uint64_t budget_bytes);
/* The cache's mutex (recursive), for a sequence of calls that must be one
 * step for the other loops (see above). Never held while waiting for I/O. */
void cd_cache_lock(cd_cache *c);
void cd_cache_unlock(cd_cache *c);
/* Frees every entry (at shutdown: nothing may still use them). */
void cd_cache_destroy(cd_cache *c);

/* Where waiters are answered: current() names the calling thread's loop
 * (recorded when a waiter is added); a waiter added on another loop than
 * the one completing the entry is handed to its own with post(loop, task),
 * the entry pinned (or, failed, kept) until it has run. Without it every
 * waiter is answered in cd_cache_complete. */
void cd_cache_set_exec(cd_cache *c, void *(*current)(void), int (*post)(void *loop, cd_task *t));

cd_cache_entry *cd_cache_find(cd_cache *c, const char *id);
/* Create a PENDING entry for id (which must not exist). */
cd_cache_entry *cd_cache_begin(cd_cache *c, const char *id, double bound_radius);
int cd_cache_add_waiter(cd_cache_entry *e, cd_cache_waiter_fn fn, void *arg);
/* Finish a PENDING entry: geometry != NULL makes it READY (waiters get code
 * 0), otherwise every waiter gets (code, message) and the entry is freed.
 * A READY entry that does not fit the budget even after evicting everything
 * evictable is also failed with RESOURCE_EXHAUSTED. */
void cd_cache_complete(cd_cache *c, cd_cache_entry *e, ce_geometry *g, uint64_t build_us, int code,
                       const char *message);
/* A registration answered from the cache. */
void cd_cache_note_hit(cd_cache *c);

void cd_cache_ref(cd_cache_entry *e);
void cd_cache_unref(cd_cache_entry *e);
void cd_cache_pin(cd_cache_entry *e);
void cd_cache_unpin(cd_cache_entry *e);

void cd_cache_get_stats(cd_cache *c, cd_cache_stats *s);

#endif
