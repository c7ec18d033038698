/* cd_metrics.c — the Prometheus text exposition of the server's state for
 * GET /metrics (served by cd_http.c): totals, per-loop figures, the
 * store's part (cd_store_metrics.c), worker utilisation and the latency
 * histogram, into a buffer that grows up to max_metrics_bytes. */
#include "cd_metrics.h"

#include <stdlib.h>

#include "cd_fmt.h"
#include "cd_server.h"
#include "cd_store.h"


static void metric(cd_fmt_buf *o, const char *name, const char *type, const char *help, double v) {
  cd_fmt_append(o, "# HELP contactd_%s %s\n# TYPE contactd_%s %s\ncontactd_%s %.17g\n", name, help, name, type, name,
                v);
}

static void render_loops(cd_fmt_buf *o, cd_server *s) {
  cd_fmt_append(o, "# HELP contactd_loop_connections open client connections on each event loop\n"
                "# TYPE contactd_loop_connections gauge\n");
  for (int i = 0; i < s->nloops; i++)
    cd_fmt_append(o, "contactd_loop_connections{loop=\"%d\"} %llu\n", i, (unsigned long long)s->loops[i].connections);
  cd_fmt_append(o, "# HELP contactd_loop_connections_total connections each event loop has taken\n"
                "# TYPE contactd_loop_connections_total counter\n");
  for (int i = 0; i < s->nloops; i++)
    cd_fmt_append(o, "contactd_loop_connections_total{loop=\"%d\"} %llu\n", i,
                  (unsigned long long)s->loops[i].connections_total);
  cd_fmt_append(o, "# HELP contactd_loop_requests_total requests received on each event loop\n"
                "# TYPE contactd_loop_requests_total counter\n");
  for (int i = 0; i < s->nloops; i++)
    cd_fmt_append(o, "contactd_loop_requests_total{loop=\"%d\"} %llu\n", i, (unsigned long long)s->loops[i].requests);
  cd_fmt_append(o, "# HELP contactd_loop_longest_turn_seconds the longest time one turn of each event loop spent "
                "running callbacks (not waiting), since start\n"
                "# TYPE contactd_loop_longest_turn_seconds gauge\n");
  for (int i = 0; i < s->nloops; i++)
    cd_fmt_append(o, "contactd_loop_longest_turn_seconds{loop=\"%d\"} %.6f\n", i,
                  1e-9 * (double)s->loops[i].longest_turn_ns);
  cd_fmt_append(o, "# HELP contactd_loop_longest_turn_cpu_seconds the most CPU time one turn of each event loop "
                "took, since start\n"
                "# TYPE contactd_loop_longest_turn_cpu_seconds gauge\n");
  for (int i = 0; i < s->nloops; i++)
    cd_fmt_append(o, "contactd_loop_longest_turn_cpu_seconds{loop=\"%d\"} %.6f\n", i,
                  1e-9 * (double)s->loops[i].longest_turn_cpu_ns);
}


static void render_security(cd_fmt_buf *o, cd_server *s) {
  cd_security *sec = &s->sec;
  cd_addrs_stats as = {0};
  if (sec->addrs) cd_addrs_get_stats(sec->addrs, &as);
  cd_fmt_append(o, "# HELP contactd_refused_total connections and authentications refused, by reason\n"
                "# TYPE contactd_refused_total counter\n"
                "contactd_refused_total{reason=\"per_address\"} %llu\n"
                "contactd_refused_total{reason=\"locked_out\"} %llu\n"
                "contactd_refused_total{reason=\"http_connections\"} %llu\n",
                (unsigned long long)sec->refused[CD_REFUSED_PER_ADDRESS],
                (unsigned long long)sec->refused[CD_REFUSED_LOCKED_OUT],
                (unsigned long long)sec->refused[CD_REFUSED_HTTP]);
  metric(o, "auth_failures_total", "counter", "failed authentications (wrong or unknown token)",
         (double)as.auth_failures);
  metric(o, "auth_delayed_total", "counter", "authentications answered after auth_fail_delay_ms",
         (double)as.auth_delayed);
  metric(o, "auth_lockouts_total", "counter", "addresses locked out after auth_fail_max failures",
         (double)as.lockouts);
  const cd_stats *st = &s->stats;
  metric(o, "http_head_timeouts_total", "counter",
         "HTTP connections closed without a complete request head within http_head_timeout_ms",
         (double)st->http_head_timeouts);
  metric(o, "http_unauthorized_total", "counter", "HTTP requests answered 401 (no token, or a wrong one)",
         (double)st->http_unauthorized);
  metric(o, "http_tls_handshakes_total", "counter", "TLS handshakes completed on the HTTP port",
         (double)st->http_tls_handshakes);
  metric(o, "http_tls_failures_total", "counter", "HTTP connections refused for their TLS (or plaintext on a TLS port)",
         (double)st->http_tls_failures);
  metric(o, "tracked_addresses", "gauge", "source addresses remembered for per-address limits", (double)as.tracked);
  metric(o, "reloads_total", "counter", "SIGHUP reloads that took every file", (double)sec->reloads);
  metric(o, "reload_failures_total", "counter", "SIGHUP reloads that kept something old", (double)sec->reload_failures);
}

char *cd_metrics_render(cd_server *s, size_t *len, int *over) {
  cd_fmt_buf o;
  cd_fmt_buf_init(&o, s->cfg.limits.max_metrics_bytes);
  cd_cache_stats cs;
  cd_cache_get_stats(s->cache, &cs);
  const cd_stats *st = &s->stats;
  metric(&o, "up", "gauge", "1 while serving, 0 while shutting down", s->draining ? 0 : 1);
  metric(&o, "uptime_seconds", "gauge", "seconds since start", (double)(cd_stats_now_ns() - st->start_ns) * 1e-9);
  metric(&o, "connections", "gauge", "open client connections", (double)st->connections);
  metric(&o, "connections_total", "counter", "connections accepted", (double)st->connections_total);
  metric(&o, "connections_rejected_total", "counter", "connections refused over max_connections",
         (double)st->connections_rejected);
  metric(&o, "io_threads", "gauge", "event loops serving connections", (double)s->nloops);
  render_loops(&o, s);
  cd_fmt_append(&o, "# HELP contactd_disconnects_total connections closed by the server\n"
                "# TYPE contactd_disconnects_total counter\n"
                "contactd_disconnects_total{reason=\"slow_reader\"} %llu\n"
                "contactd_disconnects_total{reason=\"idle\"} %llu\n"
                "contactd_disconnects_total{reason=\"framing\"} %llu\n"
                "contactd_disconnects_total{reason=\"slow_sender\"} %llu\n"
                "contactd_disconnects_total{reason=\"output_memory\"} %llu\n"
                "contactd_disconnects_total{reason=\"hello_timeout\"} %llu\n"
                "contactd_disconnects_total{reason=\"tls\"} %llu\n",
                (unsigned long long)st->disconnects_slow_reader, (unsigned long long)st->disconnects_idle,
                (unsigned long long)st->disconnects_framing, (unsigned long long)st->disconnects_slow_sender,
                (unsigned long long)st->disconnects_output_memory,
                (unsigned long long)st->disconnects_hello_timeout, (unsigned long long)st->disconnects_tls);
  metric(&o, "tls_handshakes_total", "counter", "TLS handshakes completed", (double)st->tls_handshakes);
  render_security(&o, s);
  metric(&o, "requests_total", "counter", "requests received", (double)st->requests);
  metric(&o, "errors_total", "counter", "requests answered with an Error", (double)st->errors);
  metric(&o, "pairs_total", "counter", "body pairs computed", (double)st->pairs);
  metric(&o, "replies_over_limit_total", "counter",
         "requests failed because their reply would pass max_reply_bytes or reply_memory_bytes",
         (double)st->replies_over_limit);
  metric(&o, "reply_bytes", "gauge", "converted results held by the replies being built (reply_memory_bytes)",
         (double)atomic_load_explicit(&s->reply_bytes, memory_order_relaxed));
  metric(&o, "output_bytes", "gauge", "reply bytes queued on all connections (output_memory_bytes)",
         (double)s->output_bytes);
  metric(&o, "request_bytes", "gauge",
         "frames being received and decoded requests not yet answered (request_memory_bytes)",
         (double)s->request_bytes);
  metric(&o, "request_bytes_peak", "gauge", "highest request_bytes since the start", (double)s->request_bytes_peak);
  metric(&o, "input_waits_total", "counter", "times a connection's next frame waited for request_memory_bytes",
         (double)st->input_waits);
  metric(&o, "decoded_off_loop_total", "counter",
         "request bodies large enough to be decoded on the codec thread, not the loop",
         (double)st->decoded_off_loop);
  metric(&o, "encoded_off_loop_total", "counter", "replies large enough to be encoded on the codec thread",
         (double)st->encoded_off_loop);
  metric(&o, "streams", "gauge", "open streams", (double)st->streams);
  metric(&o, "cache_entries", "gauge", "geometries in the cache", (double)cs.entries);
  metric(&o, "cache_bytes", "gauge", "bytes held by cached geometries", (double)cs.bytes);
  metric(&o, "cache_budget_bytes", "gauge", "cache byte budget", (double)s->cfg.limits.cache_bytes);
  metric(&o, "cache_builds_total", "counter", "geometries built", (double)cs.builds);
  metric(&o, "cache_hits_total", "counter", "registrations answered from the cache", (double)cs.hits);
  metric(&o, "cache_evictions_total", "counter", "geometries evicted", (double)cs.evictions);
  cd_store_metrics_render(s, &o);
  metric(&o, "jobs_pending", "gauge", "jobs queued or running on the workers",
         s->pool ? (double)cd_pool_pending(s->pool) : 0);
  cd_fmt_append(&o, "# HELP contactd_worker_utilisation busy fraction of each worker since start\n"
                "# TYPE contactd_worker_utilisation gauge\n");
  for (int i = 0; s->pool && i < cd_pool_size(s->pool); i++)
    cd_fmt_append(&o, "contactd_worker_utilisation{worker=\"%d\"} %.6f\n", i, cd_pool_utilisation(s->pool, i));
  cd_fmt_append(&o, "# HELP contactd_request_latency_us request latency, receive to reply queued, microseconds\n"
                "# TYPE contactd_request_latency_us histogram\n");
  uint64_t cum = 0;
  for (int i = 0; i < CD_LATENCY_BUCKETS; i++) {
    cum += st->latency[i];
    if (i < CD_LATENCY_BUCKETS - 1)
      cd_fmt_append(&o, "contactd_request_latency_us_bucket{le=\"%g\"} %llu\n", cd_latency_bounds_us[i],
                    (unsigned long long)cum);
    else
      cd_fmt_append(&o, "contactd_request_latency_us_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
  }
  cd_fmt_append(&o, "contactd_request_latency_us_sum %.17g\ncontactd_request_latency_us_count %llu\n",
                st->latency_sum_us,
                (unsigned long long)cum);
  *over = o.over;
  if (o.over || o.nomem || !o.b) {
    free(o.b);
    return NULL;
  }
  *len = o.n;
  return o.b;
}
