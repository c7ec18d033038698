/* cd_fmt.h — numbers for people: byte counts in log lines and error
 * messages. */
#ifndef CD_FMT_H
#define CD_FMT_H

#include <stddef.h>
#include <stdint.h>

/* "812.0 MiB", "12.5 KiB", "100 bytes" into out[n]; returns out. */
const char *cd_fmt_bytes(char *out, size_t n, uint64_t bytes);

#endif
