/* ce_walk.c — pieces shared by the intersectors that trace a contact
 * surface from seeds instead of testing every candidate pair
 * (ce_intersect_cc.c for two tet meshes, ce_intersect_rigid.c for a tet
 * mesh and a rigid triangle mesh):
 *  - ce_pairset: the visited set of element pairs, open addressing on the
 *    pair key in the query's arena (the inline lookups are in
 *    ce_walk.h);
 *  - ce_elemcache: per-query data of N's elements (placed triangles),
 *    made once per element (the inline lookup is in ce_walk.h);
 *  - ce_vcache: shared surface vertices, found by the mesh features a
 *    point lies on (the inline lookup is in ce_walk.h). */
#include <math.h>

#include "ce_walk.h"
#include "ce_arena.h"
#include "ce_bvh.h"
#include "ce_geometry.h"

ce_errno ce_pairset_init(ce_arena *a, ce_pairset *s, int64_t want) {
  int64_t cap = 1024;
  while (cap < 2 * want) cap *= 2;
  s->key = ce_arena_calloc(a, (size_t)cap, sizeof *s->key);
  if (!s->key) return CE_ENOMEM;
  s->cap = cap;
  s->len = 0;
  return CE_OK;
}

ce_errno ce_pairset_grow(ce_arena *a, ce_pairset *s) {
  ce_pairset t;
  /* four times the capacity: a walk that outgrows the first guess
   * usually outgrows it several times over (the generic finest cc pose
   * doubled twice), and each rehash is a pass over every key */
  ce_errno e = ce_pairset_init(a, &t, 2 * s->cap);
  if (e != CE_OK) return e;
  for (int64_t k = 0; k < s->cap; k++) {
    uint64_t kk = s->key[k];
    if (!kk) continue;
    uint64_t h = ce_pairset_hash(kk) & (uint64_t)(t.cap - 1);
    while (t.key[h]) h = (h + 1) & (uint64_t)(t.cap - 1);
    t.key[h] = kk;
    t.len++;
  }
  *s = t;
  return CE_OK;
}

/* The map resized to 2^bits slots, its keys rehashed. */
static ce_errno elemcache_rehash(ce_arena *a, ce_elemcache *c, int bits) {
  size_t cap = (size_t)1 << bits;
  int32_t *key = ce_arena_calloc(a, cap, sizeof *key);
  int32_t *val = ce_arena_alloc(a, cap * sizeof *val);
  if (!key || !val) return CE_ENOMEM;
  if (c->key)
    for (size_t k = 0; k < ((size_t)1 << c->bits); k++) {
      if (!c->key[k]) continue;
      uint32_t h = ((uint32_t)(c->key[k] - 1) * 2654435761u) >> (32 - bits);
      while (key[h]) h = (h + 1) & (uint32_t)(cap - 1);
      key[h] = c->key[k];
      val[h] = c->val[k];
    }
  c->key = key;
  c->val = val;
  c->bits = bits;
  return CE_OK;
}

ce_errno ce_elemcache_init(ce_arena *a, ce_elemcache *c, size_t elem, int bits, int64_t room) {
  c->key = c->val = NULL;
  c->bits = 0;
  ce_buf_init(&c->items, elem);
  if (elemcache_rehash(a, c, bits) != CE_OK) return CE_ENOMEM;
  return room > 0 ? ce_buf_reserve(a, &c->items, room) : CE_OK;
}

ce_errno ce_elemcache_reserve(ce_arena *a, ce_elemcache *c, int64_t map_want, int64_t room) {
  int bits = c->bits;
  while (((int64_t)1 << bits) < 2 * map_want && bits < 30) bits++;
  if (bits > c->bits && elemcache_rehash(a, c, bits) != CE_OK) return CE_ENOMEM;
  return ce_buf_reserve(a, &c->items, room);
}

ce_errno ce_elemcache_grow(ce_arena *a, ce_elemcache *c) {
  return c->bits < 30 ? elemcache_rehash(a, c, c->bits + 1) : CE_ELIMIT;
}

int ce_tets_contain(const ce_geometry *g, ce_vec3 x, double eps, ce_arena *a, ce_buf *near, ce_errno *e) {
  near->len = 0;
  if ((*e = ce_bvh_near_points(&g->bvh, &x, 1, eps, a, near)) != CE_OK) return 0;
  for (int64_t k = 0; k < near->len; k++) {
    const double(*fp)[4] = g->tet.fplane[((const int32_t *)near->data)[k]];
    int in = 1;
    for (int i = 0; i < 4 && in; i++) in = fp[0][i] * x.x + fp[1][i] * x.y + fp[2][i] * x.z - fp[3][i] <= eps;
    if (in) return 1;
  }
  return 0;
}

/* ---- shared surface vertices -------------------------------------------- */

static ce_errno vcache_alloc(ce_vcache *c, uint64_t cap) {
  c->slot = ce_arena_alloc(c->arena, cap * sizeof(ce_vslot));
  if (!c->slot) return CE_ENOMEM;
  for (uint64_t i = 0; i < cap; i++) {
    c->slot[i].id = -1;
    c->slot[i].mark = 0;
  }
  c->mask = cap - 1;
  return CE_OK;
}

ce_errno ce_vcache_init(ce_vcache *c, ce_arena *a, int64_t expected) {
  uint64_t cap = 64;
  while ((int64_t)cap < expected * 2) cap <<= 1;
  c->arena = a;
  c->count = 0;
  c->mark = 0;
  return vcache_alloc(c, cap);
}

ce_errno ce_vcache_grow(ce_vcache *c, int64_t extra) {
  ce_vslot *old = c->slot;
  uint64_t oldcap = c->mask + 1, cap = oldcap;
  while ((uint64_t)(c->count + extra) * 2 > cap) cap <<= 1;
  if (vcache_alloc(c, cap) != CE_OK) return CE_ENOMEM;
  for (uint64_t i = 0; i < oldcap; i++)
    if (old[i].id >= 0) *ce_vcache_find(c, old[i].key) = old[i];
  return CE_OK;
}
