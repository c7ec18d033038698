/* cd_fmt.h — numbers for people: byte counts in log lines and error
 * messages; and text built by printf pieces into a growing buffer. */
#ifndef CD_FMT_H
#define CD_FMT_H

#include <stddef.h>
#include <stdint.h>

/* "812.0 MiB", "12.5 KiB", "100 bytes" into out[n]; returns out. */
const char *cd_fmt_bytes(char *out, size_t n, uint64_t bytes);

/* A text that grows (doubling) as pieces are appended, never past max bytes
 * (its terminating NUL aside). A piece that would pass max, or that memory
 * cannot hold, is not appended and marks the text (over, nomem); pieces
 * after it are ignored, so a marked text is never a truncated one taken
 * for whole. Start with cd_fmt_buf_init; b (NULL until the first piece) is
 * malloc'd, the owner frees it. */
typedef struct cd_fmt_buf {
  char *b;
  size_t n, cap, max;
  int over, nomem;
} cd_fmt_buf;

void cd_fmt_buf_init(cd_fmt_buf *o, size_t max);
__attribute__((format(printf, 2, 3))) void cd_fmt_append(cd_fmt_buf *o, const char *fmt, ...);

#endif
