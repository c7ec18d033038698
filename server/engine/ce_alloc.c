/* ce_alloc.c — allocation-failure injection for tests.
 *
 * The engine allocates with ce_malloc, ce_calloc and ce_realloc
 * (ce_internal.h). In the library those are the C library's functions and
 * this file holds nothing. The test library contactengine_faults compiles
 * the engine with CE_FAULT_INJECTION, and then they are the functions below:
 * from the allocation a test names on, every allocation of the calling
 * thread fails, as an exhausted heap would fail them. The state is per
 * thread and exists only in that library, so the engine proper keeps its
 * rule of no globals. */
#include "ce_internal.h"

#ifdef CE_FAULT_INJECTION
#include <stdlib.h>

static _Thread_local long fail_from = -1; /* allocation number that fails first; < 0: none */
static _Thread_local long count;          /* allocations since ce_fault_fail_from */

void ce_fault_fail_from(long k) {
  fail_from = k;
  count = 0;
}

long ce_fault_count(void) { return count; }

/* Whether this allocation is to fail (counts it either way). */
static int fails(void) { return fail_from >= 0 && count++ >= fail_from; }

void *ce_malloc(size_t n) {
  if (fails()) return NULL;
  return malloc(n);
}

void *ce_calloc(size_t n, size_t size) {
  if (fails()) return NULL;
  return calloc(n, size);
}

void *ce_realloc(void *p, size_t n) {
  if (fails()) return NULL;
  return realloc(p, n);
}
#else
typedef int ce_alloc_unused; /* (ISO C wants something in a file) */
#endif
