/* cd_server.c — listeners, accept, graceful shutdown, metrics rendering. */
#include "cd_server.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cd_conn.h"
#include "cd_fetch.h"
#include "cd_json.h"
#include "cd_log.h"
#include "cd_metrics.h"
#include "cd_publish.h"
#include "cd_viewer.h"
#include "cd_store.h"

static void on_conn(uv_stream_t *ls, int status, int is_tcp) {
  cd_server *s = ls->data;
  if (status < 0) {
    CD_WARN("accept failed", "error=\"%s\"", uv_strerror(status));
    return;
  }
  if (s->draining) return;
  if (cd_conn_accept(s, ls, is_tcp) != 0) {
    CD_WARN("connection refused: out of memory for its state", "listener=%s", is_tcp ? "tcp" : "unix");
    cd_spare_take(is_tcp ? &s->spare_tcp : &s->spare_unix);
  }
}

static void on_tcp_conn(uv_stream_t *ls, int status) { on_conn(ls, status, 1); }

static void on_unix_conn(uv_stream_t *ls, int status) { on_conn(ls, status, 0); }

static void on_signal(uv_signal_t *h, int signum) {
  cd_server *s = h->data;
  if (s->draining) {
    CD_INFO("already shutting down", "signal=%s", signum == SIGTERM ? "SIGTERM" : "SIGINT");
    return;
  }
  cd_server_shutdown(s, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void finish(cd_server *s) {
  /* first: a decoded request's done() may still hand work to the pool */
  if (s->codec) {
    cd_pool_destroy(s->codec);
    s->codec = NULL;
  }
  if (s->pool) {
    cd_pool_destroy(s->pool); /* runs what is queued, then closes its handle */
    s->pool = NULL;
  }
  if (s->metrics) {
    cd_metrics_stop(s->metrics); /* closes the viewers' event streams too */
    s->metrics = NULL;
  }
  cd_viewer_stop(s->viewers);
  s->viewers = NULL;
  cd_store_detach_loop(s->store, s->loop);
  if (!uv_is_closing((uv_handle_t *)&s->drain_timer)) uv_close((uv_handle_t *)&s->drain_timer, NULL);
  if (!uv_is_closing((uv_handle_t *)&s->mem_pump)) uv_close((uv_handle_t *)&s->mem_pump, NULL);
  if (!uv_is_closing((uv_handle_t *)&s->mem_sweep)) uv_close((uv_handle_t *)&s->mem_sweep, NULL);
  /* The workers are joined: this is the only thread. Block further
   * SIGTERM/SIGINT before closing their handles (which restores the default,
   * fatal action), so a repeated signal cannot turn a clean exit into 143. */
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  pthread_sigmask(SIG_BLOCK, &block, NULL);
  if (!uv_is_closing((uv_handle_t *)&s->sigterm)) uv_close((uv_handle_t *)&s->sigterm, NULL);
  if (!uv_is_closing((uv_handle_t *)&s->sigint)) uv_close((uv_handle_t *)&s->sigint, NULL);
  CD_INFO("stopped", "requests=%llu pairs=%llu", (unsigned long long)s->stats.requests,
          (unsigned long long)s->stats.pairs);
}

static void on_drain_timeout(uv_timer_t *t) {
  cd_server *s = t->data;
  CD_WARN("shutdown grace period over: closing the remaining connections", "grace_s=%g",
          s->cfg.shutdown_grace_s);
  /* cd_conn_close does not unlink (on_handle_closed does, later), so walk the
   * list with a saved next pointer and close every connection still open. */
  for (cd_conn *c = s->conns, *next; c; c = next) {
    next = c->next;
    if (!c->closing) cd_conn_close(c, "shutdown grace period over");
  }
}

void cd_server_conn_closed(cd_server *s, cd_conn *c) {
  if (c->prev) c->prev->next = c->next;
  else if (s->conns == c) s->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  s->stats.connections--;
  if (s->draining && !s->conns) finish(s);
}

void cd_server_shutdown(cd_server *s, const char *reason) {
  if (s->draining) return;
  s->draining = 1;
  CD_INFO("shutting down: no new connections, finishing in-flight work", "reason=%s connections=%llu", reason,
          (unsigned long long)s->stats.connections);
  if (s->have_tcp) uv_close((uv_handle_t *)&s->tcp, NULL);
  if (s->have_unix) {
    uv_close((uv_handle_t *)&s->unix_sock, NULL);
    unlink(s->cfg.unix_path);
  }
  /* Signal handlers stay installed (a repeated SIGTERM is logged, not fatal)
   * but no longer keep the loop alive. */
  uv_unref((uv_handle_t *)&s->sigterm);
  uv_unref((uv_handle_t *)&s->sigint);
  /* Geometry builds stop at their next cancellation point, their requesters
   * get UNAVAILABLE (a geometry built now could not be used: cd_handlers.c);
   * without this a long build kept the process alive until it ended. */
  if (s->pool) cd_pool_cancel(s->pool);
  uv_timer_start(&s->drain_timer, on_drain_timeout, (uint64_t)(s->cfg.shutdown_grace_s * 1000), 0);
  uv_unref((uv_handle_t *)&s->drain_timer);
  for (cd_conn *c = s->conns, *n; c; c = n) {
    n = c->next;
    cd_conn_drain(c);
  }
  if (!s->conns) finish(s);
}

static int bind_tcp(cd_server *s) {
  char host[256];
  int port;
  if (cd_config_split_hostport(s->cfg.listen, host, sizeof host, &port)) {
    CD_ERROR("bad listen address", "listen=%s", s->cfg.listen);
    return -1;
  }
  struct sockaddr_storage addr;
  int rc = strchr(host, ':') ? uv_ip6_addr(host, port, (struct sockaddr_in6 *)&addr)
                             : uv_ip4_addr(host, port, (struct sockaddr_in *)&addr);
  if (rc) {
    CD_ERROR("bad listen address", "listen=%s error=\"%s\"", s->cfg.listen, uv_strerror(rc));
    return -1;
  }
  uv_tcp_init(s->loop, &s->tcp);
  s->tcp.data = s;
  s->have_tcp = 1;
  cd_spare_init(&s->spare_tcp, (uv_stream_t *)&s->tcp, 1);
  if ((rc = uv_tcp_bind(&s->tcp, (struct sockaddr *)&addr, 0)) == 0)
    rc = uv_listen((uv_stream_t *)&s->tcp, 511, on_tcp_conn);
  if (rc) {
    CD_ERROR("cannot listen", "listen=%s error=\"%s\"", s->cfg.listen, uv_strerror(rc));
    return -1;
  }
  struct sockaddr_storage ss;
  int len = sizeof ss;
  uv_tcp_getsockname(&s->tcp, (struct sockaddr *)&ss, &len);
  s->tcp_port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
  CD_INFO("listening", "tcp=%s port=%d", host, s->tcp_port);
  return 0;
}

static int bind_unix(cd_server *s) {
  struct stat st;
  /* A stale socket from a previous run is replaced; any other file is not. */
  if (lstat(s->cfg.unix_path, &st) == 0 && S_ISSOCK(st.st_mode)) unlink(s->cfg.unix_path);
  uv_pipe_init(s->loop, &s->unix_sock, 0);
  s->unix_sock.data = s;
  s->have_unix = 1;
  cd_spare_init(&s->spare_unix, (uv_stream_t *)&s->unix_sock, 0);
  int rc = uv_pipe_bind(&s->unix_sock, s->cfg.unix_path);
  if (!rc) rc = uv_listen((uv_stream_t *)&s->unix_sock, 511, on_unix_conn);
  if (rc) {
    CD_ERROR("cannot listen", "unix=%s error=\"%s\"", s->cfg.unix_path, uv_strerror(rc));
    return -1;
  }
  CD_INFO("listening", "unix=%s", s->cfg.unix_path);
  return 0;
}

int cd_server_init(cd_server *s, uv_loop_t *loop, const cd_config *cfg) {
  memset(s, 0, sizeof *s);
  s->loop = loop;
  s->cfg = *cfg;
  cd_stats_init(&s->stats);
  cd_json_global_init();
  /* The handles first (none of these allocates): whatever fails below,
   * cd_server_shutdown then finds every handle it closes initialised. */
  uv_timer_init(loop, &s->drain_timer);
  s->drain_timer.data = s;
  uv_idle_init(loop, &s->mem_pump);
  s->mem_pump.data = s;
  uv_timer_init(loop, &s->mem_sweep);
  s->mem_sweep.data = s;
  uv_signal_init(loop, &s->sigterm);
  uv_signal_init(loop, &s->sigint);
  s->sigterm.data = s->sigint.data = s;
  uv_signal_start(&s->sigterm, on_signal, SIGTERM);
  uv_signal_start(&s->sigint, on_signal, SIGINT);
  s->cache = cd_cache_create(cfg->limits.cache_bytes);
  s->publish = cd_publish_create(cfg->limits.max_published_scenes);
  s->pool = cd_pool_create(loop, cfg->workers, cfg->limits.worker_arena_bytes);
  /* (its scratch arena is never used, so the smallest: decoding allocates
   * from each request's budget, encoding from its own) */
  s->codec = cd_pool_create(loop, 1, 4096);
  if (!s->cache || !s->pool || !s->codec || !s->publish) {
    CD_ERROR("out of memory at startup", NULL);
    return -1;
  }
  char serr[512] = "";
  int sfail = 0;
  s->store = cd_store_create(cfg->store, cfg->store_password_file, &cfg->limits, &sfail, serr, sizeof serr);
  s->fetch = cd_fetch_create();
  if (sfail || !s->fetch) {
    CD_ERROR("cannot set up the geometry store", "error=\"%s\"", sfail ? serr : "out of memory");
    return -1;
  }
  uint64_t bw = cfg->limits.build_workers;
  if (bw == 0) bw = cfg->workers > 1 ? (uint64_t)cfg->workers - 1 : 1;
  cd_pool_limit_heavy(s->pool, bw < (uint64_t)cfg->workers ? (int)bw : cfg->workers);
  cd_pool_poll_results(s->pool, cfg->limits.result_poll_us);
  if (!cfg->listen[0] && !cfg->unix_path[0]) {
    CD_ERROR("nothing to listen on: give --listen or --unix", NULL);
    return -1;
  }
  if (cfg->listen[0] && bind_tcp(s)) return -1;
  if (cfg->unix_path[0] && bind_unix(s)) return -1;
  if (cfg->metrics_port >= 0) {
    int bound = 0;
    s->viewers = cd_viewer_start(s);
    if (!s->viewers) {
      CD_ERROR("out of memory starting the viewer", NULL);
      return -1;
    }
    s->metrics = cd_metrics_start(s, cfg->http_address, cfg->metrics_port, &bound);
    if (!s->metrics) return -1;
    s->http_port = bound;
    CD_INFO("metrics listening", "http=%s metrics_port=%d http_port=%d viewer=%s", cfg->http_address, bound, bound,
            cd_viewer_assets_dir(s->viewers));
  }
  CD_INFO("ready", "workers=%d version=%s", cfg->workers, "contactd.v1");
  return 0;
}

void cd_server_free(cd_server *s) {
  cd_store_destroy(s->store);
  s->store = NULL;
  cd_fetch_destroy(s->fetch);
  s->fetch = NULL;
  cd_cache_destroy(s->cache);
  s->cache = NULL;
  cd_publish_destroy(s->publish);
  s->publish = NULL;
}

/* ---- metrics ------------------------------------------------------------ */

typedef struct out {
  char *b;
  size_t n, cap;
} out;

__attribute__((format(printf, 2, 3))) static void put(out *o, const char *fmt, ...) {
  if (o->n >= o->cap) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(o->b + o->n, o->cap - o->n, fmt, ap);
  va_end(ap);
  if (k > 0) o->n = o->n + (size_t)k < o->cap ? o->n + (size_t)k : o->cap - 1;
}

static void metric(out *o, const char *name, const char *type, const char *help, double v) {
  put(o, "# HELP contactd_%s %s\n# TYPE contactd_%s %s\ncontactd_%s %.17g\n", name, help, name, type, name, v);
}

size_t cd_server_render_metrics(cd_server *s, char *buf, size_t cap) {
  out o = {buf, 0, cap};
  cd_cache_stats cs;
  cd_cache_get_stats(s->cache, &cs);
  const cd_stats *st = &s->stats;
  metric(&o, "up", "gauge", "1 while serving, 0 while shutting down", s->draining ? 0 : 1);
  metric(&o, "uptime_seconds", "gauge", "seconds since start", (double)(cd_now_ns() - st->start_ns) * 1e-9);
  metric(&o, "connections", "gauge", "open client connections", (double)st->connections);
  metric(&o, "connections_total", "counter", "connections accepted", (double)st->connections_total);
  metric(&o, "connections_rejected_total", "counter", "connections refused over max_connections",
         (double)st->connections_rejected);
  put(&o, "# HELP contactd_disconnects_total connections closed by the server\n"
          "# TYPE contactd_disconnects_total counter\n"
          "contactd_disconnects_total{reason=\"slow_reader\"} %llu\n"
          "contactd_disconnects_total{reason=\"idle\"} %llu\n"
          "contactd_disconnects_total{reason=\"framing\"} %llu\n"
          "contactd_disconnects_total{reason=\"slow_sender\"} %llu\n",
      (unsigned long long)st->disconnects_slow_reader, (unsigned long long)st->disconnects_idle,
      (unsigned long long)st->disconnects_framing, (unsigned long long)st->disconnects_slow_sender);
  metric(&o, "requests_total", "counter", "requests received", (double)st->requests);
  metric(&o, "errors_total", "counter", "requests answered with an Error", (double)st->errors);
  metric(&o, "pairs_total", "counter", "body pairs computed", (double)st->pairs);
  metric(&o, "replies_over_limit_total", "counter",
         "requests failed because their reply would pass max_reply_bytes or reply_memory_bytes",
         (double)st->replies_over_limit);
  metric(&o, "reply_bytes", "gauge", "converted results held by the replies being built (reply_memory_bytes)",
         (double)atomic_load_explicit(&s->reply_bytes, memory_order_relaxed));
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
  cd_server_render_store_metrics(s, buf, cap, &o.n);
  metric(&o, "jobs_pending", "gauge", "jobs queued or running on the workers",
         s->pool ? (double)cd_pool_pending(s->pool) : 0);
  put(&o, "# HELP contactd_worker_utilisation busy fraction of each worker since start\n"
          "# TYPE contactd_worker_utilisation gauge\n");
  for (int i = 0; s->pool && i < cd_pool_size(s->pool); i++)
    put(&o, "contactd_worker_utilisation{worker=\"%d\"} %.6f\n", i, cd_pool_utilisation(s->pool, i));
  put(&o, "# HELP contactd_request_latency_us request latency, receive to reply queued, microseconds\n"
          "# TYPE contactd_request_latency_us histogram\n");
  uint64_t cum = 0;
  for (int i = 0; i < CD_LATENCY_BUCKETS; i++) {
    cum += st->latency[i];
    if (i < CD_LATENCY_BUCKETS - 1)
      put(&o, "contactd_request_latency_us_bucket{le=\"%g\"} %llu\n", cd_latency_bounds_us[i],
          (unsigned long long)cum);
    else
      put(&o, "contactd_request_latency_us_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
  }
  put(&o, "contactd_request_latency_us_sum %.17g\ncontactd_request_latency_us_count %llu\n", st->latency_sum_us,
      (unsigned long long)cum);
  return o.n;
}
