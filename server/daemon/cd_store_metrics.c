/* cd_store_metrics.c — the geometry store's part of /metrics. */
#include <stdarg.h>
#include <stdio.h>

#include "cd_fetch.h"
#include "cd_server.h"
#include "cd_store.h"

__attribute__((format(printf, 4, 5))) static void put(char *buf, size_t cap, size_t *n, const char *fmt, ...) {
  if (*n + 1 >= cap) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(buf + *n, cap - *n, fmt, ap);
  va_end(ap);
  if (k > 0) *n = *n + (size_t)k < cap ? *n + (size_t)k : cap - 1;
}

static void counter(char *buf, size_t cap, size_t *n, const char *name, const char *help, uint64_t v) {
  put(buf, cap, n, "# HELP contactd_store_%s %s\n# TYPE contactd_store_%s counter\ncontactd_store_%s %llu\n", name,
      help, name, name, (unsigned long long)v);
}

void cd_server_render_store_metrics(cd_server *s, char *buf, size_t cap, size_t *n) {
  cd_store_stats st;
  cd_store_get_stats(s->store, &st);
  put(buf, cap, n,
      "# HELP contactd_store_info the geometry store (label store: memory, dir:PATH, redis://..., unix:PATH)\n"
      "# TYPE contactd_store_info gauge\ncontactd_store_info{store=\"%s\"} 1\n",
      cd_store_describe(s->store));
  if (!s->store) return;
  put(buf, cap, n,
      "# HELP contactd_store_breaker_state circuit breaker: 0 closed, 1 open (failing fast), 2 half open (probing)\n"
      "# TYPE contactd_store_breaker_state gauge\ncontactd_store_breaker_state %d\n",
      (int)st.breaker);
  counter(buf, cap, n, "hits_total", "lookups that found a verified record", st.hits);
  counter(buf, cap, n, "misses_total", "lookups that found no record", st.misses);
  counter(buf, cap, n, "writes_total", "records written", st.writes);
  counter(buf, cap, n, "write_exists_total", "writes that found the record already stored", st.write_exists);
  counter(buf, cap, n, "write_drops_total", "writes dropped: store failing, breaker open or queue full",
          st.write_drops);
  counter(buf, cap, n, "verify_failures_total", "records read that did not verify (ignored)", st.verify_failures);
  counter(buf, cap, n, "errors_total", "store operations that failed", st.errors);
  counter(buf, cap, n, "loads_total", "geometries built from store records", cd_fetch_loads(s->fetch));
  counter(buf, cap, n, "ops_total", "store operations completed", st.ops);
  put(buf, cap, n,
      "# HELP contactd_store_latency_us_sum store operation time, microseconds\n"
      "# TYPE contactd_store_latency_us_sum counter\ncontactd_store_latency_us_sum %llu\n"
      "# HELP contactd_store_latency_us_max slowest store operation, microseconds\n"
      "# TYPE contactd_store_latency_us_max gauge\ncontactd_store_latency_us_max %llu\n",
      (unsigned long long)st.latency_us_sum, (unsigned long long)st.latency_us_max);
}
