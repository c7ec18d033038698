/* cd_fmt.c — byte counts for people; a growing text buffer. */
#include "cd_fmt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cd_limits.h"

const char *cd_fmt_bytes(char *out, size_t n, uint64_t bytes) {
  if (bytes >= CD_MIB) snprintf(out, n, "%.1f MiB", (double)bytes / (double)CD_MIB);
  else if (bytes >= 1024) snprintf(out, n, "%.1f KiB", (double)bytes / 1024.0);
  else snprintf(out, n, "%llu bytes", (unsigned long long)bytes);
  return out;
}

void cd_fmt_buf_init(cd_fmt_buf *o, size_t max) { *o = (cd_fmt_buf){.max = max}; }

void cd_fmt_append(cd_fmt_buf *o, const char *fmt, ...) {
  if (o->over || o->nomem) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(o->b ? o->b + o->n : NULL, o->b ? o->cap - o->n : 0, fmt, ap);
  va_end(ap);
  if (k < 0 || o->n + (size_t)k > o->max) {
    if (k < 0) o->nomem = 1;
    else o->over = 1;
    if (o->b) o->b[o->n] = 0; /* what vsnprintf wrote past the text is not part of it */
    return;
  }
  if (o->n + (size_t)k < o->cap) { /* it fitted */
    o->n += (size_t)k;
    return;
  }
  size_t cap = o->cap ? o->cap : 4096;
  while (cap <= o->n + (size_t)k) cap *= 2;
  if (cap > o->max + 1) cap = o->max + 1;
  char *b = realloc(o->b, cap);
  if (!b) {
    o->nomem = 1;
    return;
  }
  o->b = b;
  o->cap = cap;
  va_start(ap, fmt);
  vsnprintf(o->b + o->n, o->cap - o->n, fmt, ap);
  va_end(ap);
  o->n += (size_t)k;
}
