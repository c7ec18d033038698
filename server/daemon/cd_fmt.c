/* cd_fmt.c — byte counts for people. */
#include "cd_fmt.h"

#include <stdio.h>

#include "cd_limits.h"

const char *cd_fmt_bytes(char *out, size_t n, uint64_t bytes) {
  if (bytes >= CD_MIB) snprintf(out, n, "%.1f MiB", (double)bytes / (double)CD_MIB);
  else if (bytes >= 1024) snprintf(out, n, "%.1f KiB", (double)bytes / 1024.0);
  else snprintf(out, n, "%llu bytes", (unsigned long long)bytes);
  return out;
}
