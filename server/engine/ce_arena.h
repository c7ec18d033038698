/* ce_arena.h — growable arrays whose storage comes from a query's arena
 * (ce_arena.c). */
#ifndef CE_ARENA_H
#define CE_ARENA_H

#include "ce_internal.h"

/* A growable array whose storage comes from an arena. Growth doubles the
 * capacity and copies; the old block stays in the arena until reset, so
 * the waste is bounded by the final size. */
typedef struct ce_buf {
  void *data;
  int64_t len, cap;
  size_t elem; /* element size in bytes */
} ce_buf;

void ce_buf_init(ce_buf *b, size_t elem);
/* Make room for `extra` more elements; CE_ENOMEM on arena exhaustion. */
ce_errno ce_buf_reserve(ce_arena *a, ce_buf *b, int64_t extra);
/* Pointer to a new zeroed element at the end, or NULL. */
void *ce_buf_push(ce_arena *a, ce_buf *b);
/* Allocate n zeroed elements of size elem from the arena (NULL on failure). */
void *ce_arena_calloc(ce_arena *a, size_t n, size_t elem);

#endif /* CE_ARENA_H */
