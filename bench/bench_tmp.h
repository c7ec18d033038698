/* bench_tmp.h — where the daemon benchmarks write their logs, configs and
 * stores: under $TMPDIR, else the C library's default (P_tmpdir). */
#ifndef BENCH_TMP_H
#define BENCH_TMP_H

#include <stdio.h>
#include <stdlib.h>

static inline const char *bench_tmp_root(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? t : P_tmpdir;
}

#endif
