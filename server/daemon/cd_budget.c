/* cd_budget.c — byte-budgeted arena; see cd_budget.h. */
#include "cd_budget.h"

#include <stdlib.h>
#include <string.h>

#define CD_ALIGN 16u
#define CD_CHUNK_MIN ((size_t)4096)
#define CD_CHUNK_GROW_MAX ((size_t)8 << 20) /* growth stops doubling here */

struct cd_budget_chunk {
  cd_budget_chunk *next;
  size_t size; /* usable bytes after the header */
  size_t pos;
  /* keeps the data 16-byte aligned after the header */
  _Alignas(16) unsigned char data[];
};

static size_t align_up(size_t n) { return (n + (CD_ALIGN - 1)) & ~(size_t)(CD_ALIGN - 1); }

static void *pc_alloc(void *ud, size_t n) { return cd_budget_alloc((cd_budget *)ud, n); }
static void pc_free(void *ud, void *p) {
  (void)ud;
  (void)p; /* freed all at once by reset/destroy */
}

void cd_budget_init(cd_budget *b, size_t limit) {
  memset(b, 0, sizeof *b);
  b->limit = limit;
  b->allocator.alloc = pc_alloc;
  b->allocator.free = pc_free;
  b->allocator.allocator_data = b;
}

void cd_budget_set_limit(cd_budget *b, size_t limit) { b->limit = limit; }

static void free_chain(cd_budget_chunk *c) {
  while (c) {
    cd_budget_chunk *n = c->next;
    free(c);
    c = n;
  }
}

void cd_budget_reset(cd_budget *b) {
  cd_budget_chunk *keep = b->chunks;
  if (keep) {
    free_chain(keep->next);
    keep->next = NULL;
    keep->pos = 0;
    b->held = sizeof *keep + keep->size;
    if (b->limit && b->held > b->limit) {
      free(keep);
      keep = NULL;
      b->held = 0;
    }
  }
  b->chunks = keep;
  b->used = 0;
  b->exhausted = b->nomem = 0;
}

void cd_budget_destroy(cd_budget *b) {
  free_chain(b->chunks);
  b->chunks = NULL;
  b->held = 0;
  b->used = 0;
  b->exhausted = b->nomem = 0;
}

void *cd_budget_alloc(cd_budget *b, size_t n) {
  size_t need = align_up(n ? n : 1);
  if (need < n) { /* overflow */
    b->exhausted = 1;
    return NULL;
  }
  cd_budget_chunk *c = b->chunks;
  if (c && c->size - c->pos >= need) {
    void *p = c->data + c->pos;
    c->pos += need;
    b->used += need;
    return p;
  }
  /* New chunk: double the previous one (bounded), at least `need`, and never
   * past the budget. */
  size_t size = c ? c->size * 2 : CD_CHUNK_MIN;
  if (size > CD_CHUNK_GROW_MAX) size = CD_CHUNK_GROW_MAX;
  if (size < need) size = need;
  size_t hdr = sizeof(cd_budget_chunk);
  if (b->limit) {
    if (b->held >= b->limit || b->limit - b->held < hdr + need) {
      b->exhausted = 1;
      return NULL;
    }
    size_t room = b->limit - b->held - hdr;
    if (size > room) size = room & ~(size_t)(CD_ALIGN - 1);
    if (size < need) {
      b->exhausted = 1;
      return NULL;
    }
  }
  if (size > SIZE_MAX - hdr) {
    b->exhausted = 1;
    return NULL;
  }
  cd_budget_chunk *nc = malloc(hdr + size);
  if (!nc) {
    b->exhausted = b->nomem = 1;
    return NULL;
  }
  nc->size = size;
  nc->pos = need;
  /* A large one-off allocation goes behind the current chunk so the
   * current chunk's free space stays usable. */
  if (c && need > c->size && c->size - c->pos >= CD_ALIGN * 4) {
    nc->next = c->next;
    c->next = nc;
  } else {
    nc->next = c;
    b->chunks = nc;
  }
  b->held += hdr + size;
  if (b->held > b->peak) b->peak = b->held;
  b->used += need;
  return nc->data;
}

void *cd_budget_calloc(cd_budget *b, size_t n, size_t size) {
  if (size && n > SIZE_MAX / size) {
    b->exhausted = 1;
    return NULL;
  }
  void *p = cd_budget_alloc(b, n * size);
  if (p) memset(p, 0, n * size);
  return p;
}

char *cd_budget_strndup(cd_budget *b, const char *s, size_t n) {
  if (n == SIZE_MAX) {
    b->exhausted = 1;
    return NULL;
  }
  char *p = cd_budget_alloc(b, n + 1);
  if (!p) return NULL;
  if (n) memcpy(p, s, n);
  p[n] = 0;
  return p;
}
