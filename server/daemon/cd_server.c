/* cd_server.c — listeners, accept, graceful shutdown. */
#include "cd_server.h"

#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cd__conn.h"
#include "cd_fetch.h"
#include "cd_json.h"
#include "cd_log.h"
#include "cd_http.h"
#include "cd_publish.h"
#include "cd_viewer.h"
#include "cd_store.h"
#include "cd_tenants.h"
#include "cd_outmem.h"

static void on_tmp_closed(uv_handle_t *h) { free(h); }

/* Accept on loop 0 and hand the descriptor to the least-loaded loop
 * (cd_loop.c says why a hand-off and not SO_REUSEPORT listeners). */
static void on_conn(uv_stream_t *ls, int status, int is_tcp) {
  cd_server *s = ls->data;
  if (status < 0) {
    CD_WARN("accept failed", "error=\"%s\"", uv_strerror(status));
    return;
  }
  if (atomic_load(&s->draining)) return;
  union {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } *tmp = malloc(sizeof *tmp);
  uv_os_fd_t fd = -1;
  if (tmp) {
    if (is_tcp) uv_tcp_init(s->loop, &tmp->tcp);
    else uv_pipe_init(s->loop, &tmp->pipe, 0);
    cd_loop_fd_lock(); /* (ThreadSanitizer builds: see cd_loop.h) */
    if (uv_accept(ls, (uv_stream_t *)tmp) == 0 && uv_fileno((uv_handle_t *)tmp, &fd) == 0) fd = dup(fd);
    else fd = -1;
    uv_close((uv_handle_t *)tmp, on_tmp_closed);
    cd_loop_fd_unlock();
    if (fd < 0) return; /* the peer went away, or no descriptor for the copy */
  }
  cd_loop *l = cd_server_pick_loop(s);
  atomic_fetch_add(&l->load, 1); /* before the hand-off: its loop may close it at once */
  if (!tmp || cd_conn_adopt(l, fd, is_tcp) != 0) {
    atomic_fetch_sub(&l->load, 1);
    CD_WARN("connection refused: out of memory for its state", "listener=%s", is_tcp ? "tcp" : "unix");
    if (fd >= 0) close(fd);
    else cd_spare_take(is_tcp ? &s->spare_tcp : &s->spare_unix);
  }
}

static void on_tcp_conn(uv_stream_t *ls, int status) { on_conn(ls, status, 1); }

static void on_unix_conn(uv_stream_t *ls, int status) { on_conn(ls, status, 0); }

cd_loop *cd_server_pick_loop(cd_server *s) {
  cd_loop *best = &s->loops[0];
  uint64_t least = atomic_load_explicit(&best->load, memory_order_relaxed);
  for (int i = 1; i < s->nloops; i++) {
    const uint64_t n = atomic_load_explicit(&s->loops[i].load, memory_order_relaxed);
    if (n < least) {
      least = n;
      best = &s->loops[i];
    }
  }
  return best;
}

static void on_signal(uv_signal_t *h, int signum) {
  cd_server *s = h->data;
  if (s->draining) CD_INFO("already shutting down", "signal=%s", signum == SIGTERM ? "SIGTERM" : "SIGINT");
  else cd_server_shutdown(s, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

static void run_close(cd_task *t) {
  cd_loop *l = (cd_loop *)((char *)t - offsetof(cd_loop, close_task));
  cd_store_detach_loop(l->srv->store, l->uv); /* store answers still queued for this loop are given now */
  cd_loop_close(l);
}

/* Loop 0, once every loop's connections are gone: stop the pools (their
 * remaining completions run on their loops as these close), then close
 * every loop's own handles; the loops then run out. */
static void finish(cd_server *s) {
  if (atomic_exchange(&s->finishing, 1)) return;
  /* first: a decoded request's done() may still hand work to the pool */
  if (s->codec) {
    cd_pool_destroy(s->codec);
    s->codec = NULL;
  }
  if (s->pool) {
    cd_pool_destroy(s->pool); /* runs what is queued; its completions wait in the loops' sinks */
    s->pool = NULL;
  }
  if (s->http) {
    cd_http_stop(s->http); /* closes the viewers' event streams too */
    s->http = NULL;
  }
  cd_viewer_stop(s->viewers);
  s->viewers = NULL;
  cd_store_detach_loop(s->store, s->loop);
  if (!uv_is_closing((uv_handle_t *)&s->drain_timer)) uv_close((uv_handle_t *)&s->drain_timer, NULL);
  /* The workers are joined. Block further SIGTERM/SIGINT before closing
   * their handles (which restores the default, fatal action), so a repeated
   * signal cannot turn a clean exit into 143. */
  sigset_t block;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, NULL);
  cd_security_stop(&s->sec);
  if (!uv_is_closing((uv_handle_t *)&s->sigterm)) uv_close((uv_handle_t *)&s->sigterm, NULL);
  if (!uv_is_closing((uv_handle_t *)&s->sigint)) uv_close((uv_handle_t *)&s->sigint, NULL);
  for (int i = 1; i < s->nloops; i++) {
    s->loops[i].close_task.run = run_close;
    cd_loop_post(&s->loops[i], &s->loops[i].close_task);
  }
  if (s->nloops) cd_loop_close(&s->loops[0]);
  CD_INFO("stopped", "requests=%llu pairs=%llu", (unsigned long long)s->stats.requests,
          (unsigned long long)s->stats.pairs);
}

static void run_finish(cd_task *t) {
  cd_loop *l = (cd_loop *)((char *)t - offsetof(cd_loop, drain_task));
  finish(l->srv);
}

/* Every loop's connections gone while draining: finish on loop 0. */
static void maybe_finish_all(cd_server *s) {
  if (!s->draining || s->finishing || s->stats.connections) return;
  for (int i = 0; i < s->nloops; i++)
    if (s->loops[i].load) return; /* a connection on its way to a loop */
  cd_loop *l0 = &s->loops[0];
  if (cd_loop_current() == l0 || !cd_loop_current()) {
    finish(s);
  } else if (!atomic_exchange(&s->finish_posted, 1)) { /* once: a task is in one inbox at a time */
    l0->drain_task.run = run_finish; /* loop 0's own drain task ran long ago */
    cd_loop_post(l0, &l0->drain_task);
  }
}

static void run_grace_over(cd_task *t) {
  cd_loop *l = (cd_loop *)((char *)t - offsetof(cd_loop, grace_task));
  cd_conn_close_all(l, "shutdown grace period over");
}

static void on_drain_timeout(uv_timer_t *t) {
  cd_server *s = t->data;
  CD_WARN("shutdown grace period over: closing the remaining connections", "grace_s=%g",
          s->cfg.shutdown_grace_s);
  for (int i = 0; i < s->nloops; i++) {
    cd_loop *l = &s->loops[i];
    l->grace_task.run = run_grace_over;
    if (i == 0) run_grace_over(&l->grace_task);
    else cd_loop_post(l, &l->grace_task);
  }
}

/* A burst of connections has ended (a quarter of its peak is left): give
 * the heap's free pages back to the system. The allocator keeps what a
 * burst freed (in as many arenas as threads allocated from), so without
 * this the resident set stays at the largest burst's, and creeps up as
 * later bursts land in other arenas. A few trims per burst, each a walk of
 * the free lists. */
static void trim_after_burst(cd_server *s) {
  const uint64_t now = atomic_load_explicit(&s->stats.connections, memory_order_relaxed);
  uint64_t peak = atomic_load_explicit(&s->conn_peak, memory_order_relaxed);
  while (now > peak && !atomic_compare_exchange_weak(&s->conn_peak, &peak, now)) {
  }
  if (peak < 64 || now > peak / 4) return;
  /* one loop trims per burst's end (the others see the peak lowered) */
  if (!atomic_compare_exchange_strong(&s->conn_peak, &peak, now)) return;
  malloc_trim(0);
}

/* The transport's report that a connection has ended (was_open: it had
 * been open and counted) or was handed to a loop and never opened; the
 * connection is already unlinked and uncounted. */
static void conn_ended(cd_server *s, int was_open) {
  if (was_open) trim_after_burst(s);
  maybe_finish_all(s);
}

void cd_server_check_drained(cd_server *s) { maybe_finish_all(s); }

static void run_drain(cd_task *t) {
  cd_loop *l = (cd_loop *)((char *)t - offsetof(cd_loop, drain_task));
  cd_conn_drain_all(l);
  maybe_finish_all(l->srv);
}

void cd_server_shutdown(cd_server *s, const char *reason) {
  if (atomic_exchange(&s->draining, 1)) return;
  CD_INFO("shutting down: no new connections, finishing in-flight work", "reason=%s connections=%llu loops=%d",
          reason, (unsigned long long)s->stats.connections, s->nloops);
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
  /* Each loop drains its own connections (loop 0 now, in this call). */
  for (int i = 1; i < s->nloops; i++) {
    s->loops[i].drain_task.run = run_drain;
    if (cd_loop_post(&s->loops[i], &s->loops[i].drain_task) != 0) continue;
  }
  if (s->nloops) run_drain(&s->loops[0].drain_task);
  else finish(s);
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
    rc = uv_listen((uv_stream_t *)&s->tcp, CD_LISTEN_BACKLOG, on_tcp_conn);
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
  /* created with no permission for others; unix_mode is then set (the peer's
   * uid and gid are checked too when principals are set) */
  mode_t old = umask(0777 & ~(mode_t)s->cfg.unix_mode);
  uv_pipe_init(s->loop, &s->unix_sock, 0);
  s->unix_sock.data = s;
  s->have_unix = 1;
  cd_spare_init(&s->spare_unix, (uv_stream_t *)&s->unix_sock, 0);
  int rc = uv_pipe_bind(&s->unix_sock, s->cfg.unix_path);
  umask(old);
  if (!rc && chmod(s->cfg.unix_path, (mode_t)s->cfg.unix_mode) != 0) rc = uv_translate_sys_error(errno);
  if (!rc) rc = uv_listen((uv_stream_t *)&s->unix_sock, CD_LISTEN_BACKLOG, on_unix_conn);
  if (rc) {
    CD_ERROR("cannot listen", "unix=%s error=\"%s\"", s->cfg.unix_path, uv_strerror(rc));
    return -1;
  }
  CD_INFO("listening", "unix=%s", s->cfg.unix_path);
  return 0;
}

/* Like Redis's protected mode, but a warning: a TCP listener on an address
 * other than loopback with neither TLS nor principals lets anyone who can
 * reach it register, query and read (docs/security.md says why this warns
 * rather than refuses). */
static void warn_if_exposed(cd_server *s) {
  char host[256];
  int port;
  if (cd_config_split_hostport(s->cfg.listen, host, sizeof host, &port)) return;
  int loopback = strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 || strcmp(host, "::1") == 0;
  if (loopback || s->sec.tls || cd_security_auth_on(&s->sec)) return;
  CD_WARN("listening beyond loopback with neither TLS nor principals: anyone who reaches the port may register, "
          "query and read; set tls_cert_file and principals_file (docs/security.md)",
          "listen=%s", s->cfg.listen);
}

/* io_threads, or by default half the online cores but at least 2 where
 * there are 2, and at most 8: on 16 cores 8 loops served the most small
 * queries (16 fewer: the loops compete with the workers for the cores); on
 * 2 cores 2 loops served more than 1 (docs/scaling.md). */
static int loops_wanted(const cd_config *cfg) {
  uint64_t n = cfg->limits.io_threads;
  if (n == 0) {
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    n = cores >= 4 ? (uint64_t)cores / 2 : cores >= 2 ? 2 : 1;
    if (n > 8) n = 8;
  }
  return n > 256 ? 256 : (int)n;
}

/* The cache answers a waiter on the loop that registered it. */
static void *cache_current(void) { return cd_loop_current(); }
static int cache_post(void *owner, cd_task *t) { return cd_loop_post(owner, t); }

static int init_loops(cd_server *s, uv_loop_t *loop) {
  int want = loops_wanted(&s->cfg);
  s->loops = calloc((size_t)want, sizeof *s->loops);
  if (!s->loops) return -1;
  for (int i = 0; i < want; i++) {
    cd_loop *l = &s->loops[i];
    if (i > 0 && uv_loop_init(&l->own) != 0) return -1;
    s->nloops = i + 1;
    if (cd_loop_init(l, s, i, i == 0 ? loop : &l->own) != 0) return -1;
  }
  cd_loop_set_current(&s->loops[0]);
  return 0;
}

static int server_init(cd_server *s, uv_loop_t *loop, const cd_config *cfg, const cd_proto *proto);

/* SIGTERM, SIGINT and SIGHUP reach the main thread only: every thread started here
 * (workers, loops) inherits a mask that blocks them. Otherwise a repeated
 * signal after the main thread blocked them for a clean exit (finish) would
 * take another thread's default, fatal action. */
int cd_server_init(cd_server *s, uv_loop_t *loop, const cd_config *cfg, const cd_proto *proto) {
  sigset_t block, old;
  sigemptyset(&block);
  sigaddset(&block, SIGTERM);
  sigaddset(&block, SIGINT);
  sigaddset(&block, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &block, &old);
  int rc = server_init(s, loop, cfg, proto);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return rc;
}

static int server_init(cd_server *s, uv_loop_t *loop, const cd_config *cfg, const cd_proto *proto) {
  memset(s, 0, sizeof *s);
  s->loop = loop;
  s->cfg = *cfg;
  s->proto = proto;
  s->conn_ended = conn_ended;
  cd_stats_init(&s->stats);
  pthread_mutex_init(&s->mem_mu, NULL);
  cd_json_global_init();
  s->output_budget = cfg->limits.output_memory_bytes ? cfg->limits.output_memory_bytes : cd_outmem_default();
  /* The handles first (none of these allocates): whatever fails below,
   * cd_server_shutdown then finds every handle it closes initialised. */
  uv_timer_init(loop, &s->drain_timer);
  s->drain_timer.data = s;
  uv_signal_init(loop, &s->sigterm);
  uv_signal_init(loop, &s->sigint);
  s->sigterm.data = s->sigint.data = s;
  uv_signal_start(&s->sigterm, on_signal, SIGTERM);
  uv_signal_start(&s->sigint, on_signal, SIGINT);
  if (init_loops(s, loop) != 0) {
    CD_ERROR("out of memory at startup", NULL);
    return -1;
  }
  if (cd_security_init(&s->sec, &s->cfg, loop) != 0) return -1;
  s->cache = cd_cache_create(cfg->limits.cache_bytes);
  s->publish = cd_publish_create(cfg->limits.max_published_scenes);
  s->pool = cd_pool_create(NULL, cfg->workers, cfg->limits.worker_arena_bytes);
  /* (its scratch arena is never used, so the smallest: decoding allocates
   * from each request's budget, encoding from its own) */
  s->codec = cd_pool_create(NULL, 1, 4096);
  if (!s->cache || !s->pool || !s->codec || !s->publish) {
    CD_ERROR("out of memory at startup", NULL);
    return -1;
  }
  cd_pool_name(s->pool, "cd-worker");
  cd_pool_name(s->codec, "cd-codec");
  cd_cache_set_exec(s->cache, cache_current, cache_post);
  char serr[512] = "";
  int sfail = 0;
  s->store = cd_store_create(cfg->store, cfg->store_password_file, &cfg->limits, &sfail, serr, sizeof serr);
  s->fetch = cd_fetch_create();
  s->tenants = cd_tenants_create(cfg->limits.tenant_visible_max);
  if (sfail || !s->fetch || !s->tenants) {
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
  warn_if_exposed(s);
  if (cfg->unix_path[0] && bind_unix(s)) return -1;
  if (cfg->http_port >= 0) {
    int bound = 0;
    s->viewers = cd_viewer_start(s);
    if (!s->viewers) {
      CD_ERROR("out of memory starting the viewer", NULL);
      return -1;
    }
    s->http = cd_http_start(s, cfg->http_address, cfg->http_port, &bound);
    if (!s->http) return -1;
    s->http_port = bound;
    CD_INFO("metrics listening", "http=%s metrics_port=%d http_port=%d viewer=%s https=%s viewer_auth=%s",
            cfg->http_address, bound, bound, cd_viewer_assets_dir(s->viewers), s->sec.tls ? "on" : "off",
            cd_security_auth_on(&s->sec) ? "principals" : "off");
  }
  for (int i = 1; i < s->nloops; i++)
    if (cd_loop_start(&s->loops[i]) != 0) {
      CD_ERROR("cannot start an event loop thread", "loop=%d", i);
      return -1;
    }
  CD_INFO("ready", "workers=%d io_threads=%d output_memory_bytes=%llu version=%s", cfg->workers, s->nloops,
          (unsigned long long)s->output_budget, "contactd.v1");
  return 0;
}

void cd_server_free(cd_server *s) {
  for (int i = 1; i < s->nloops; i++) {
    cd_loop *l = &s->loops[i];
    if (l->started) {
      cd_loop_join(l);
    } else { /* startup failed before its thread: run its close here */
      uv_run(&l->own, UV_RUN_DEFAULT);
      uv_loop_close(&l->own);
    }
  }
  for (int i = 0; i < s->nloops; i++) cd_loop_free(&s->loops[i]);
  free(s->loops);
  s->loops = NULL;
  s->nloops = 0;
  cd_store_destroy(s->store);
  s->store = NULL;
  cd_fetch_destroy(s->fetch);
  s->fetch = NULL;
  cd_tenants_destroy(s->tenants);
  s->tenants = NULL;
  cd_cache_destroy(s->cache);
  s->cache = NULL;
  cd_publish_destroy(s->publish);
  s->publish = NULL;
  pthread_mutex_destroy(&s->mem_mu);
  cd_security_free(&s->sec);
}

size_t cd_server_loop_stats(cd_server *s, cd_budget *b, Contactd__V1__LoopStats ***out) {
  Contactd__V1__LoopStats *ls = cd_budget_calloc(b, (size_t)s->nloops, sizeof *ls);
  Contactd__V1__LoopStats **lp = cd_budget_calloc(b, (size_t)s->nloops, sizeof *lp);
  *out = NULL;
  if (!ls || !lp) return 0;
  for (int i = 0; i < s->nloops; i++) {
    contactd__v1__loop_stats__init(&ls[i]);
    ls[i].connections = s->loops[i].connections;
    ls[i].connections_total = s->loops[i].connections_total;
    ls[i].requests = s->loops[i].requests;
    lp[i] = &ls[i];
  }
  *out = lp;
  return (size_t)s->nloops;
}
