/* cd_store_metrics.c — the geometry store's part of /metrics. */
#include "cd_fetch.h"
#include "cd_fmt.h"
#include "cd_server.h"
#include "cd_store.h"

static void counter(cd_fmt_buf *o, const char *name, const char *help, uint64_t v) {
  cd_fmt_append(o, "# HELP contactd_store_%s %s\n# TYPE contactd_store_%s counter\ncontactd_store_%s %llu\n", name,
                help, name, name, (unsigned long long)v);
}

void cd_store_metrics_render(cd_server *s, cd_fmt_buf *o) {
  cd_store_stats st;
  cd_store_get_stats(s->store, &st);
  cd_fmt_append(o,
      "# HELP contactd_store_info the geometry store (label store: memory, dir:PATH, redis://..., unix:PATH)\n"
      "# TYPE contactd_store_info gauge\ncontactd_store_info{store=\"%s\"} 1\n",
      cd_store_describe(s->store));
  if (!s->store) return;
  cd_fmt_append(o,
      "# HELP contactd_store_breaker_state circuit breaker: 0 closed, 1 open (failing fast), 2 half open (probing)\n"
      "# TYPE contactd_store_breaker_state gauge\ncontactd_store_breaker_state %d\n",
      (int)st.breaker);
  counter(o, "hits_total", "lookups that found a verified record", st.hits);
  counter(o, "misses_total", "lookups that found no record", st.misses);
  counter(o, "writes_total", "records written", st.writes);
  counter(o, "write_exists_total", "writes that found the record already stored", st.write_exists);
  counter(o, "write_drops_total", "writes dropped: store failing, breaker open or queue full",
          st.write_drops);
  counter(o, "verify_failures_total", "records read that did not verify (ignored)", st.verify_failures);
  counter(o, "errors_total", "store operations that failed", st.errors);
  counter(o, "loads_total", "geometries built from store records", cd_fetch_loads(s->fetch));
  counter(o, "ops_total", "store operations completed", st.ops);
  cd_fmt_append(o,
                "# HELP contactd_store_seen_total tenants' visibility markers: found, not found, written or deleted\n"
                "# TYPE contactd_store_seen_total counter\n"
                "contactd_store_seen_total{result=\"hit\"} %llu\ncontactd_store_seen_total{result=\"miss\"} %llu\n"
                "contactd_store_seen_total{result=\"written\"} %llu\n",
                (unsigned long long)st.seen_hits, (unsigned long long)st.seen_misses,
                (unsigned long long)st.seen_writes);
  cd_fmt_append(o,
                "# HELP contactd_store_latency_us_sum store operation time, microseconds\n"
                "# TYPE contactd_store_latency_us_sum counter\ncontactd_store_latency_us_sum %llu\n"
                "# HELP contactd_store_latency_us_max slowest store operation, microseconds\n"
                "# TYPE contactd_store_latency_us_max gauge\ncontactd_store_latency_us_max %llu\n",
                (unsigned long long)st.latency_us_sum, (unsigned long long)st.latency_us_max);
}
