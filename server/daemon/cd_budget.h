/* cd_budget.h — a byte-budgeted arena and the ProtobufCAllocator over it.
 *
 * protobuf-c allocates one heap block per struct, string, bytes field and
 * repeated array while unpacking, so a small hostile frame (e.g. a million
 * empty sub-messages, 2 bytes each on the wire) can make decode allocate far
 * more than the frame's size. Decoding through a cd_budget bounds that: every
 * allocation comes from the arena, the arena never holds more than `limit`
 * bytes of chunks, and an allocation that would exceed it fails (unpack then
 * returns NULL and cd_budget_exhausted() says why). Nothing is freed
 * individually; cd_budget_reset() / cd_budget_destroy() free everything at
 * once, so never call protobuf_c_message_free_unpacked() on arena messages
 * (it is harmless, but pointless).
 *
 * Not thread-safe: one budget per connection or per decode. */
#ifndef CD_BUDGET_H
#define CD_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cd_budget_chunk cd_budget_chunk;

typedef struct cd_budget {
  ProtobufCAllocator allocator; /* hand &b->allocator to protobuf-c */
  size_t limit;                 /* most bytes of chunks held (0 = unlimited) */
  size_t held;                  /* bytes of chunks held now */
  size_t used;                  /* bytes handed out since the last reset */
  size_t peak;                  /* largest `held` ever */
  int exhausted;                /* an allocation failed since the last reset */
  int nomem;                    /* ... and one of them because the heap refused */
  cd_budget_chunk *chunks;      /* newest first */
} cd_budget;

/* A budget of `limit` bytes (0 = unlimited). Allocates nothing yet. */
void cd_budget_init(cd_budget *b, size_t limit);
/* Free every chunk but keep the newest one (if it fits the budget) for
 * reuse; clears `exhausted` and `used`. Invalidates every pointer handed out. */
void cd_budget_reset(cd_budget *b);
/* Free everything. The budget may be re-initialised afterwards. */
void cd_budget_destroy(cd_budget *b);
/* Change the limit (takes effect on the next allocation). */
void cd_budget_set_limit(cd_budget *b, size_t limit);

/* 16-byte aligned, uninitialised; NULL (and `exhausted` set) when the budget
 * would be exceeded, or when the heap refuses (`nomem` set too).
 * cd_budget_alloc(b, 0) returns a valid unique pointer. */
void *cd_budget_alloc(cd_budget *b, size_t n);
/* Zeroed allocation of n * size bytes (overflow-checked). */
void *cd_budget_calloc(cd_budget *b, size_t n, size_t size);
/* A NUL-terminated copy of s[0..n). */
char *cd_budget_strndup(cd_budget *b, const char *s, size_t n);

static inline ProtobufCAllocator *cd_budget_allocator(cd_budget *b) { return &b->allocator; }
static inline int cd_budget_exhausted(const cd_budget *b) { return b->exhausted; }
/* Why a failed allocation failed, for messages: "out of memory" when the
 * heap refused one since the last reset, else "over the budget" wording
 * chosen by the caller. */
static inline int cd_budget_nomem(const cd_budget *b) { return b->nomem; }

/* Error filled by the wire codecs (cd_frame, cd_json): a gRPC canonical code
 * (the numbers of contactd.v1.ErrorCode), the path of the offending field in
 * lowerCamelCase JSON notation ("contactQuery.bodies[2].pose.position.x",
 * empty when the whole input is at fault) and a message that starts with
 * that path. Both strings are always NUL-terminated (truncated if long). */
enum {
  CD_WIRE_OK = 0,
  CD_WIRE_INVALID_ARGUMENT = 3,
  CD_WIRE_RESOURCE_EXHAUSTED = 8,
  CD_WIRE_INTERNAL = 13,
};
typedef struct cd_wire_error {
  int code;
  char field[256];
  char message[512];
} cd_wire_error;

#ifdef __cplusplus
}
#endif
#endif /* CD_BUDGET_H */
