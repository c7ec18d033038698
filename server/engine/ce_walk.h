/* ce_walk.h — what the intersectors that trace a surface from seeds
 * share: visited pairs, the walk queue, per-query element caches, shared
 * surface vertices and the point-in-tets test (ce_walk.c). */
#ifndef CE_WALK_H
#define CE_WALK_H

#include "ce_arena.h"
#include "ce_bvh.h"

/* Visited element pairs: open addressing, key ((i << 32) | j) + 1, 0 empty,
 * at most half full; arena memory. */
typedef struct ce_pairset {
  uint64_t *key;
  int64_t cap, len;
} ce_pairset;

/* An empty set with room for `want` pairs. */
ce_errno ce_pairset_init(ce_arena *a, ce_pairset *s, int64_t want);
/* Quadruples the capacity (rehashing). */
ce_errno ce_pairset_grow(ce_arena *a, ce_pairset *s);

static inline uint64_t ce_pairset_hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

static inline uint64_t ce_pairset_key(int32_t i, int32_t j) {
  return (((uint64_t)(uint32_t)i << 32) | (uint32_t)j) + 1;
}

static inline int ce_pairset_has(const ce_pairset *s, int32_t i, int32_t j) {
  const uint64_t key = ce_pairset_key(i, j), mask = (uint64_t)(s->cap - 1);
  for (uint64_t h = ce_pairset_hash(key) & mask; s->key[h]; h = (h + 1) & mask)
    if (s->key[h] == key) return 1;
  return 0;
}

/* Inserts (i, j); *added = 1 when it was new. */
static inline ce_errno ce_pairset_add(ce_arena *a, ce_pairset *s, int32_t i, int32_t j, int *added) {
  if (2 * (s->len + 1) > s->cap) {
    ce_errno e = ce_pairset_grow(a, s);
    if (e != CE_OK) return e;
  }
  const uint64_t key = ce_pairset_key(i, j), mask = (uint64_t)(s->cap - 1);
  uint64_t h = ce_pairset_hash(key) & mask;
  for (; s->key[h]; h = (h + 1) & mask)
    if (s->key[h] == key) {
      *added = 0;
      return CE_OK;
    }
  s->key[h] = key;
  s->len++;
  *added = 1;
  return CE_OK;
}

/* Appends (i, j) to the walk's queue (elem ce_pair) unless already seen. */
static inline ce_errno ce_walk_push(ce_arena *a, ce_pairset *s, ce_buf *queue, int32_t i, int32_t j) {
  int added;
  ce_errno e = ce_pairset_add(a, s, i, j, &added);
  if (e != CE_OK || !added) return e;
  ce_pair *p;
  if (queue->len < queue->cap) p = (ce_pair *)queue->data + queue->len++;
  else if (!(p = ce_buf_push(a, queue))) return CE_ENOMEM;
  p->a = i;
  p->b = j;
  return CE_OK;
}

/* Shared surface vertices: a key of up to six mesh indices naming the mesh
 * features a point is the intersection of (each intersector documents its
 * keys), mapped to the builder vertex made for it, so that the polygons of
 * neighbouring element pairs reuse one vertex. Open addressing in the
 * arena, at most half full; lookups are by key only, so the table's layout
 * never affects the surface. */
/* Six indices, or three words (the cache hashes and compares the words;
 * an intersector fills whichever view suits it, the same one always). */
typedef union ce_vkey {
  int32_t k[6];
  uint64_t w[3];
} ce_vkey;
/* id < 0: empty. mark: the cache's mark when the slot was last set or
 * used (callers that bump ce_vcache.mark per polygon tell a vertex that
 * would repeat within one polygon by mark == the current mark). */
typedef struct ce_vslot { ce_vkey key; int32_t id; uint32_t mark; } ce_vslot;
typedef struct ce_vcache {
  ce_arena *arena;
  ce_vslot *slot;
  uint64_t mask;
  int64_t count;
  uint32_t mark;
} ce_vcache;

/* An empty cache with room for `expected` keys. */
ce_errno ce_vcache_init(ce_vcache *c, ce_arena *a, int64_t expected);
/* Room for `extra` more insertions: at once when the table has it (inline,
 * asked once per polygon), else ce_vcache_grow rehashes into a bigger one. */
ce_errno ce_vcache_grow(ce_vcache *c, int64_t extra);
static inline ce_errno ce_vcache_reserve(ce_vcache *c, int64_t extra) {
  return (uint64_t)(c->count + extra) * 2 <= c->mask + 1 ? CE_OK : ce_vcache_grow(c, extra);
}

static inline uint64_t ce_vkey_hash(const ce_vkey *k) {
  /* one multiply per word, then a finalising mix: the indices are small
   * integers, so the multiplies spread them over the word */
  uint64_t h = k->w[0] * 0x9E3779B97F4A7C15ULL ^ k->w[1] * 0xC2B2AE3D27D4EB4FULL ^ k->w[2] * 0x165667B19E3779F9ULL;
  h ^= h >> 32;
  h *= 0x94D049BB133111EBULL;
  h ^= h >> 29;
  return h;
}

static inline int ce_vkey_eq(const ce_vkey *a, const ce_vkey *b) {
  return a->w[0] == b->w[0] && a->w[1] == b->w[1] && a->w[2] == b->w[2];
}

/* The slot for key: either holding it, or the empty slot where it belongs
 * (ce_vcache_reserve keeps a free slot). */
static inline ce_vslot *ce_vcache_find(ce_vcache *c, ce_vkey k) {
  uint64_t i = ce_vkey_hash(&k) & c->mask;
  for (;;) {
    ce_vslot *s = &c->slot[i];
    if (s->id < 0 || ce_vkey_eq(&s->key, &k)) return s;
    i = (i + 1) & c->mask;
  }
}

/* Fills the empty slot s (from ce_vcache_find) with key k -> vertex id. */
static inline void ce_vcache_set(ce_vcache *c, ce_vslot *s, ce_vkey k, int32_t id) {
  s->key = k;
  s->id = id;
  s->mark = c->mark;
  c->count++;
}

/* Per-query data derived from elements of N (a rigid triangle placed in
 * M's frame, which meets several tets), made the first time a pair needs
 * it: entries in `items` (a ce_buf of the caller's struct), found by
 * element id through an open-addressing map (keys id + 1, 0 empty; 2^bits
 * slots, at most half full). A map rather than an array over N keeps a
 * query's cost independent of N's size. Arena memory. */
typedef struct ce_elemcache {
  int32_t *key, *val;
  int bits;
  ce_buf items;
} ce_elemcache;

/* An empty cache of `elem`-byte entries: a map of 2^bits slots (zeroed)
 * and room for `room` entries. */
ce_errno ce_elemcache_init(ce_arena *a, ce_elemcache *c, size_t elem, int bits, int64_t room);
/* At least 2 * map_want slots (rehashed) and room for `room` more entries. */
ce_errno ce_elemcache_reserve(ce_arena *a, ce_elemcache *c, int64_t map_want, int64_t room);
/* Doubles the map (rehashing). */
ce_errno ce_elemcache_grow(ce_arena *a, ce_elemcache *c);

/* Whether x (g's frame) lies in some tet of g, within eps of its faces
 * (located through g's hierarchy; near is scratch). On arena exhaustion
 * returns 0 with *e = CE_ENOMEM, else *e = CE_OK. Surface tracing asks it
 * whether a piece no seed reached lies inside the compliant body. */
int ce_tets_contain(const ce_geometry *g, ce_vec3 x, double eps, ce_arena *a, ce_buf *near, ce_errno *e);

/* The entry for element id: *fresh = 1 when it was just added (the caller
 * fills it), 0 when it is the one made before. NULL when the arena is
 * exhausted. elem: the entry size given to ce_elemcache_init, passed again
 * as a constant so the address arithmetic folds. */
static inline void *ce_elemcache_get(ce_arena *a, ce_elemcache *c, int32_t id, size_t elem, int *fresh) {
  const uint32_t mask = ((uint32_t)1 << c->bits) - 1;
  uint32_t h = ((uint32_t)id * 2654435761u) >> (32 - c->bits);
  for (; c->key[h]; h = (h + 1) & mask)
    if (c->key[h] == id + 1) {
      *fresh = 0;
      return (char *)c->items.data + (size_t)c->val[h] * elem;
    }
  if (c->items.len >= INT32_MAX / 2) return NULL;
  if (2 * (c->items.len + 1) > (int64_t)mask + 1)
    return ce_elemcache_grow(a, c) == CE_OK ? ce_elemcache_get(a, c, id, elem, fresh) : NULL;
  void *e;
  if (c->items.len < c->items.cap) e = (char *)c->items.data + (size_t)c->items.len++ * elem;
  else if (!(e = ce_buf_push(a, &c->items))) return NULL;
  c->key[h] = id + 1;
  c->val[h] = (int32_t)(c->items.len - 1);
  *fresh = 1;
  return e;
}

#endif /* CE_WALK_H */
