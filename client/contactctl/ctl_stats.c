/* ctl_stats.c — contactctl stats: the server's statistics. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

const char *const STATS_HELP =
    "usage: contactctl stats [--json]\n"
    "\n"
    "Print the server's statistics: connections, requests, pairs, errors, streams,\n"
    "cache entries/bytes/builds/hits/evictions, worker utilisation and the request\n"
    "latency histogram (with estimated p50/p99).\n";

static double hist_quantile(const Contactd__V1__StatsReply *s, double q) {
  uint64_t total = 0;
  for (size_t i = 0; i < s->n_latency; i++) total += s->latency[i]->count;
  if (!total) return 0;
  double target = q * (double)total, acc = 0;
  for (size_t i = 0; i < s->n_latency; i++) {
    acc += (double)s->latency[i]->count;
    if (acc >= target) return s->latency[i]->upper_bound_us;
  }
  return s->latency[s->n_latency - 1]->upper_bound_us;
}

int cmd_stats(int argc, char **argv, common *co) {
  for (int i = 0; i < argc; i++) {
    int r = ctl_common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(STATS_HELP, stdout);
      return EX_OK;
    }
    return ctl_usage("stats: unexpected argument \"%s\"", argv[i]);
  }
  cc_client *c;
  int rc = ctl_connect_or_report(co, &c);
  if (rc) return rc;
  Contactd__V1__StatsReply *s;
  cc_error e;
  if (cc_stats(c, &s, &e)) {
    cc_close(c);
    return ctl_report("stats", &e);
  }
  double p50 = hist_quantile(s, 0.5), p99 = hist_quantile(s, 0.99);
  if (co->json) {
    cJSON *o = cJSON_CreateObject();
    ctl_jadd(o, "connections", (double)s->connections);
    ctl_jadd(o, "connections_total", (double)s->connections_total);
    ctl_jadd(o, "requests", (double)s->requests);
    ctl_jadd(o, "pairs", (double)s->pairs);
    ctl_jadd(o, "errors", (double)s->errors);
    ctl_jadd(o, "streams", (double)s->streams);
    ctl_jadd(o, "cache_entries", (double)s->cache_entries);
    ctl_jadd(o, "cache_bytes", (double)s->cache_bytes);
    ctl_jadd(o, "cache_builds", (double)s->cache_builds);
    ctl_jadd(o, "cache_hits", (double)s->cache_hits);
    ctl_jadd(o, "cache_evictions", (double)s->cache_evictions);
    ctl_jadd(o, "uptime_s", s->uptime_s);
    cJSON_AddItemToObject(o, "worker_utilisation", ctl_jarray(s->worker_utilisation, s->n_worker_utilisation));
    cJSON *h = cJSON_AddArrayToObject(o, "latency");
    for (size_t i = 0; i < s->n_latency; i++) {
      cJSON *b = cJSON_CreateObject();
      ctl_jadd(b, "upper_bound_us", s->latency[i]->upper_bound_us);
      ctl_jadd(b, "count", (double)s->latency[i]->count);
      cJSON_AddItemToArray(h, b);
    }
    if (!isinf(p50)) ctl_jadd(o, "latency_p50_us_at_most", p50);
    if (!isinf(p99)) ctl_jadd(o, "latency_p99_us_at_most", p99);
    ctl_print_json(o);
  } else {
    printf("uptime            %.1f s\n", s->uptime_s);
    printf("connections       %llu open, %llu total\n", (unsigned long long)s->connections,
           (unsigned long long)s->connections_total);
    printf("requests          %llu (%llu errors)\n", (unsigned long long)s->requests, (unsigned long long)s->errors);
    printf("pairs computed    %llu\n", (unsigned long long)s->pairs);
    printf("streams open      %llu\n", (unsigned long long)s->streams);
    printf("cache             %llu entries, %.3f MiB, %llu builds, %llu hits, %llu evictions\n",
           (unsigned long long)s->cache_entries, (double)s->cache_bytes / 1048576.0,
           (unsigned long long)s->cache_builds, (unsigned long long)s->cache_hits,
           (unsigned long long)s->cache_evictions);
    printf("workers           ");
    for (size_t i = 0; i < s->n_worker_utilisation; i++) printf("%s%.1f%%", i ? " " : "", 100 * s->worker_utilisation[i]);
    printf("%s\n", s->n_worker_utilisation ? " busy" : "-");
    printf("latency           p50 <= %g us, p99 <= %g us\n", p50, p99);
    for (size_t i = 0; i < s->n_latency; i++)
      if (s->latency[i]->count)
        printf("  <= %-12g us  %llu\n", s->latency[i]->upper_bound_us, (unsigned long long)s->latency[i]->count);
  }
  cc_free(s);
  cc_close(c);
  return EX_OK;
}
