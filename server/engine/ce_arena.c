/* ce_arena.c — per-worker bump allocator for query scratch.
 *
 * Memory comes in chunks; a reset that finds more than one chunk frees them
 * and keeps a single chunk as large as their sum, so a worker that answers
 * similar queries settles on one chunk and stops calling malloc. */
#include <stdlib.h>
#include <string.h>

#include "ce_arena.h"

#define CE_ARENA_ALIGN 16

typedef struct ce_chunk {
  struct ce_chunk *next;
  size_t size, used;
  _Alignas(CE_ARENA_ALIGN) unsigned char data[];
} ce_chunk;

struct ce_arena {
  ce_chunk *head;    /* current chunk (most recent) */
  size_t total;      /* bytes held in all chunks */
  size_t used;       /* bytes handed out since the last reset */
  size_t budget;     /* 0 = unlimited */
  size_t min_chunk;
};

static ce_chunk *chunk_new(size_t size) {
  if (size > SIZE_MAX - sizeof(ce_chunk)) return NULL;
  ce_chunk *c = malloc(sizeof(ce_chunk) + size);
  if (!c) return NULL;
  c->next = NULL;
  c->size = size;
  c->used = 0;
  return c;
}

ce_arena *ce_arena_create(size_t initial_bytes) {
  ce_arena *a = calloc(1, sizeof *a);
  if (!a) return NULL;
  a->min_chunk = initial_bytes < 4096 ? 4096 : initial_bytes;
  a->head = chunk_new(a->min_chunk);
  if (!a->head) {
    free(a);
    return NULL;
  }
  a->total = a->min_chunk;
  return a;
}

void ce_arena_destroy(ce_arena *a) {
  if (!a) return;
  for (ce_chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void ce_arena_set_budget(ce_arena *a, size_t max_bytes) { a->budget = max_bytes; }

size_t ce_arena_used(const ce_arena *a) { return a->used; }

void ce_arena_reset(ce_arena *a) {
  if (a->head && a->head->next) {
    size_t total = a->total;
    for (ce_chunk *c = a->head, *n; c; c = n) {
      n = c->next;
      free(c);
    }
    if (a->budget && total > a->budget) total = a->budget;
    a->head = chunk_new(total);
    if (!a->head) {
      /* Fall back to the minimum; allocation failure surfaces later. */
      a->head = chunk_new(a->min_chunk);
      total = a->head ? a->min_chunk : 0;
    }
    a->total = total;
  }
  if (a->head) a->head->used = 0;
  a->used = 0;
}

void *ce_arena_alloc(ce_arena *a, size_t bytes) {
  size_t need = (bytes + (CE_ARENA_ALIGN - 1)) & ~(size_t)(CE_ARENA_ALIGN - 1);
  if (need < bytes) return NULL; /* overflow */
  if (a->budget && need > a->budget - a->used) return NULL; /* no wrap-around */
  ce_chunk *c = a->head;
  if (!c || c->size - c->used < need) {
    size_t size = a->total; /* geometric growth */
    if (size < need) size = need;
    if (size < a->min_chunk) size = a->min_chunk;
    ce_chunk *n = chunk_new(size);
    if (!n) return NULL;
    n->next = a->head;
    a->head = n;
    a->total += size;
    c = n;
  }
  void *p = c->data + c->used;
  c->used += need;
  a->used += need;
  return p;
}

void *ce_arena_calloc(ce_arena *a, size_t n, size_t elem) {
  if (elem && n > SIZE_MAX / elem) return NULL;
  void *p = ce_arena_alloc(a, n * elem);
  if (p) memset(p, 0, n * elem);
  return p;
}

void ce_buf_init(ce_buf *b, size_t elem) {
  b->data = NULL;
  b->len = b->cap = 0;
  b->elem = elem;
}

ce_errno ce_buf_reserve(ce_arena *a, ce_buf *b, int64_t extra) {
  if (b->len + extra <= b->cap) return CE_OK;
  int64_t cap = b->cap ? b->cap : 16;
  while (cap < b->len + extra) {
    if (cap > INT64_MAX / 2) return CE_ENOMEM;
    cap *= 2;
  }
  if (b->elem && (uint64_t)cap > SIZE_MAX / b->elem) return CE_ENOMEM;
  void *d = ce_arena_alloc(a, (size_t)cap * b->elem);
  if (!d) return CE_ENOMEM;
  if (b->len) memcpy(d, b->data, (size_t)b->len * b->elem);
  b->data = d;
  b->cap = cap;
  return CE_OK;
}

void *ce_buf_push(ce_arena *a, ce_buf *b) {
  if (ce_buf_reserve(a, b, 1) != CE_OK) return NULL;
  void *p = (unsigned char *)b->data + (size_t)b->len * b->elem;
  memset(p, 0, b->elem);
  b->len++;
  return p;
}
