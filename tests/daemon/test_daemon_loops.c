/* test_daemon_loops.c — several event loops (--io-threads) against the real
 * contactd: a stream on one loop keeps being answered while a long
 * registration builds for a connection on another; SIGTERM with requests in
 * flight on every loop answers each of them and exits 0; 1,000 concurrent
 * clients for five rounds leave the daemon's memory where the second round
 * left it (the first settles the allocator); 64 clients that never read their replies are held to
 * output_memory_bytes together while a client that reads is still answered;
 * /metrics of 256 workers and 64 loops is served whole. Each test sets its
 * own loop count. */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cd_frame.h"
#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Per-loop connections from a Stats reply on fd; returns the loop count. */
static size_t loop_connections(int fd, uint64_t *conns, size_t cap) {
  Env *r = tc_stats(fd, 900, 10000);
  cr_assert(r, "a Stats reply");
  size_t n = r->stats_reply->n_loops;
  uint64_t sum = 0, req = 0;
  for (size_t i = 0; i < n; i++) {
    if (i < cap) conns[i] = r->stats_reply->loops[i]->connections;
    sum += r->stats_reply->loops[i]->connections;
    req += r->stats_reply->loops[i]->requests;
  }
  cr_expect_eq(sum, r->stats_reply->connections, "the loops' connections add up to the total");
  cr_expect_eq(req, r->stats_reply->requests, "the loops' requests add up to the total");
  contactd__v1__envelope__free_unpacked(r, NULL);
  return n;
}

/* Wait until the daemon has adopted n connections (connect() returns once
 * the kernel queued the connection; the daemon accepts it a moment later). */
static void wait_connections(int fd, uint64_t n) {
  for (int i = 0; i < 1000; i++) {
    Env *r = tc_stats(fd, 800 + (uint64_t)i, 10000);
    cr_assert(r, "a Stats reply");
    int ok = r->stats_reply->connections == n;
    contactd__v1__envelope__free_unpacked(r, NULL);
    if (ok) return;
    usleep(5000);
  }
  cr_assert_fail("the daemon never reached %llu connections", (unsigned long long)n);
}

/* Skip RegisterProgress messages; 1 in *progress when any came. */
static Env *recv_final(int fd, int timeout_ms, int *progress) {
  for (;;) {
    Env *r = tc_recv(fd, timeout_ms);
    if (!r || r->msg_case != CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS) return r;
    if (progress) *progress = 1;
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
}

/* A compliant ellipsoid of ~1M tets: a build of several seconds. */
static void long_build(Env *env, Contactd__V1__RegisterGeometry *rg, Contactd__V1__Ellipsoid *el) {
  contactd__v1__ellipsoid__init(el);
  el->a = 0.3;
  el->b = 0.2;
  el->c = 0.14;
  contactd__v1__register_geometry__init(rg);
  rg->shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_ELLIPSOID;
  rg->ellipsoid = el;
  rg->compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg->modulus = 1e6;
  rg->resolution_hint = 0.0066;
  rg->want_progress = 1;
  contactd__v1__envelope__init(env);
  env->request_id = 500;
  env->msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  env->register_geometry = rg;
}

Test(loops, stream_and_large_registration_on_different_loops_progress_together, .timeout = 300) {
  tc_daemon d;
  const char *extra[] = {"--io-threads", "2", NULL};
  tc_start(&d, extra);
  int a = tc_connect_tcp(d.port); /* loop 0: the stream */
  char *sphere = tc_register_sphere(a, 1, 0.1, 1e6, 0.05), *plane = tc_register_halfspace(a, 2, 0, 0);
  cr_assert(sphere && plane);
  int b = tc_connect_tcp(d.port); /* the least-loaded loop: loop 1 */
  wait_connections(a, 2);
  uint64_t conns[2] = {0, 0};
  cr_assert_eq(loop_connections(a, conns, 2), 2, "two loops");
  cr_expect(conns[0] == 1 && conns[1] == 1, "one connection on each loop (%llu, %llu)", (unsigned long long)conns[0],
            (unsigned long long)conns[1]);

  Env reg;
  Contactd__V1__RegisterGeometry rg;
  Contactd__V1__Ellipsoid el;
  long_build(&reg, &rg, &el);
  cr_assert_eq(tc_send(b, &reg), 0);

  uint64_t sid = tc_open_pair_stream(a, sphere, 0.095, plane, 0, NULL, CONTACTD__V1__STREAM_MODE__STREAM_MODE_QUEUE_ALL, 3,
                                     10000);
  cr_assert_neq(sid, 0, "the stream opens");

  /* 100 updates, each answered, while the registration builds */
  int progress = 0;
  double t0 = now_s();
  for (uint64_t k = 1; k <= 100; k++) {
    Contactd__V1__Vec3 pos = CONTACTD__V1__VEC3__INIT;
    pos.z = 0.099 - 0.00002 * (double)k;
    Contactd__V1__Pose pose = CONTACTD__V1__POSE__INIT;
    pose.position = &pos;
    Contactd__V1__BodyState bs = CONTACTD__V1__BODY_STATE__INIT, *bsp[1] = {&bs};
    bs.body_id = 1;
    bs.pose = &pose;
    Contactd__V1__StreamUpdate u = CONTACTD__V1__STREAM_UPDATE__INIT;
    u.stream_id = sid;
    u.sequence = k;
    u.n_bodies = 1;
    u.bodies = bsp;
    Env e = CONTACTD__V1__ENVELOPE__INIT;
    e.request_id = 10 + k;
    e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE;
    e.stream_update = &u;
    Env *r = tc_call(a, &e, 10000);
    cr_assert(r, "update %llu is answered", (unsigned long long)k);
    cr_assert_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT, "update %llu", (unsigned long long)k);
    contactd__v1__envelope__free_unpacked(r, NULL);
    /* the registration's progress arrives meanwhile on the other loop */
    struct pollfd pf = {b, POLLIN, 0};
    if (poll(&pf, 1, 0) > 0) {
      Env *p = tc_recv(b, 1000);
      cr_assert(p, "the registering connection is still open");
      cr_assert_eq(p->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS,
                   "only progress while the stream runs (the build takes seconds)");
      progress = 1;
      contactd__v1__envelope__free_unpacked(p, NULL);
    }
  }
  double stream_s = now_s() - t0;
  Env *r = recv_final(b, 120000, &progress);
  double build_s = now_s() - t0;
  cr_assert(r, "the registration is answered");
  cr_expect_eq(r->msg_case, CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY);
  contactd__v1__envelope__free_unpacked(r, NULL);
  cr_expect(progress, "RegisterProgress reached the registering client");
  cr_expect_lt(stream_s, build_s, "the stream's 100 updates (%.2f s) finished before the build (%.2f s)", stream_s,
               build_s);
  cr_log_info("100 stream updates in %.2f s while a registration built for %.2f s on the other loop", stream_s,
              build_s);
  close(a);
  close(b);
  free(sphere);
  free(plane);
  cr_expect_eq(tc_stop(&d), 0);
}

#define PER_LOOP 2
#define LOOPS 4
#define INFLIGHT 4

Test(loops, sigterm_answers_what_is_in_flight_on_every_loop, .timeout = 300) {
  tc_daemon d;
  const char *extra[] = {"--io-threads", "4", NULL};
  tc_start(&d, extra);
  int setup = tc_connect_tcp(d.port);
  char *sphere = tc_register_sphere(setup, 1, 0.1, 1e6, 0.015), *plane = tc_register_halfspace(setup, 2, 0, 0);
  cr_assert(sphere && plane);
  int fds[LOOPS * PER_LOOP];
  for (int i = 0; i < LOOPS * PER_LOOP; i++) {
    fds[i] = i % 2 ? tc_connect_unix(d.unix_path) : tc_connect_tcp(d.port);
    cr_assert_geq(fds[i], 0);
  }
  wait_connections(setup, 1 + LOOPS * PER_LOOP);
  uint64_t conns[LOOPS];
  cr_assert_eq(loop_connections(setup, conns, LOOPS), LOOPS);
  for (int l = 0; l < LOOPS; l++)
    cr_expect_geq(conns[l], PER_LOOP, "loop %d holds %llu connections", l, (unsigned long long)conns[l]);
  /* surface queries (slow enough to be in flight) on every connection */
  tc_pair_query pq;
  tc_pair_query_init(&pq, 0, sphere, 0.09, plane, 0, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
  for (int i = 0; i < LOOPS * PER_LOOP; i++)
    for (int k = 0; k < INFLIGHT; k++) {
      pq.env.request_id = 100 * (uint64_t)i + (uint64_t)k;
      cr_assert_eq(tc_send(fds[i], &pq.env), 0);
    }
  usleep(20000);
  kill(d.pid, SIGTERM);
  int answered = 0, replies = 0;
  for (int i = 0; i < LOOPS * PER_LOOP; i++) {
    for (int k = 0; k < INFLIGHT; k++) {
      Env *r = tc_recv(fds[i], 30000);
      cr_assert(r, "connection %d: request %d is answered during shutdown", i, k);
      cr_expect_eq(r->request_id, 100 * (uint64_t)i + (uint64_t)k, "in order");
      cr_expect(r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY ||
                    (r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR &&
                     r->error->code == CONTACTD__V1__ERROR_CODE__UNAVAILABLE),
                "a reply, or UNAVAILABLE for one read after the signal");
      replies += r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY;
      answered++;
      contactd__v1__envelope__free_unpacked(r, NULL);
    }
    cr_expect(tc_wait_closed(fds[i], 30000), "connection %d is closed once flushed", i);
    close(fds[i]);
  }
  cr_log_info("%d requests answered during shutdown (%d with results)", answered, replies);
  cr_expect_eq(tc_stop(&d), 0, "exit status 0 after SIGTERM");
  close(setup);
  free(sphere);
  free(plane);
}

/* Whether the daemon's resident set says anything about its own memory:
 * not under a sanitizer (AddressSanitizer keeps freed blocks in quarantine,
 * ThreadSanitizer adds its shadow; tests/run.sh points CONTACTD_TEST_BIN at
 * a ThreadSanitizer build). The traffic still runs and RSS is printed. */
static int rss_meaningful(void) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return 0;
#else
  const char *bin = getenv("CONTACTD_TEST_BIN");
  return !(bin && *bin);
#endif
}

/* Resident set of pid, bytes (/proc/pid/status VmRSS). */
static double rss_bytes(int pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", pid);
  FILE *f = fopen(path, "r");
  cr_assert(f);
  double kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %lf kB", &kb) == 1) break;
  fclose(f);
  return kb * 1024;
}

/* Round 0 settles the allocator (how many connections one accept turn
 * takes varies, and with it how far round 0's heap grows); round 1 is the
 * baseline, and every later round stays within 10 % of it: a leak of
 * 700 bytes per connection would add 0.7 MiB a round to about 8 MiB. */
#define ROUNDS 5
#define ROUND_CLIENTS 1000
#define ROUND_QUERIES 5

/* One round: ROUND_CLIENTS connect at once, each pipelines ROUND_QUERIES
 * wrench queries, reads every reply and closes. Returns the errors seen. */
static int round_of_clients(int port, const char *sphere, const char *plane) {
  int *fds = calloc(ROUND_CLIENTS, sizeof *fds);
  int errors = 0;
  for (int c = 0; c < ROUND_CLIENTS; c++) {
    fds[c] = tc_connect_tcp(port);
    cr_assert_geq(fds[c], 0, "client %d connects", c);
  }
  tc_pair_query pq;
  tc_pair_query_init(&pq, 0, sphere, 0.095, plane, 0, 0);
  for (int c = 0; c < ROUND_CLIENTS; c++)
    for (int k = 0; k < ROUND_QUERIES; k++) {
      pq.env.request_id = (uint64_t)k + 1;
      cr_assert_eq(tc_send(fds[c], &pq.env), 0);
    }
  for (int c = 0; c < ROUND_CLIENTS; c++) {
    for (int k = 0; k < ROUND_QUERIES; k++) {
      Env *r = tc_recv(fds[c], 60000);
      if (!r || r->msg_case != CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY || r->request_id != (uint64_t)k + 1) errors++;
      if (r) contactd__v1__envelope__free_unpacked(r, NULL);
    }
    close(fds[c]);
  }
  free(fds);
  return errors;
}

Test(loops, thousand_clients_five_rounds_keep_memory_flat, .timeout = 600) {
  struct rlimit rl;
  cr_assert_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
  if (rl.rlim_cur < 2 * ROUND_CLIENTS + 64 && rl.rlim_max >= 2 * ROUND_CLIENTS + 64) {
    rl.rlim_cur = 2 * ROUND_CLIENTS + 64; /* the daemon inherits it */
    cr_assert_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
  }
  cr_assert_geq(rl.rlim_cur, 2 * ROUND_CLIENTS + 64, "descriptors for 1,000 clients and the daemon's ends");
  tc_daemon d;
  const char *extra[] = {"--io-threads", "4", NULL};
  tc_start(&d, extra);
  int setup = tc_connect_tcp(d.port);
  char *sphere = tc_register_sphere(setup, 1, 0.1, 1e6, 0.05), *plane = tc_register_halfspace(setup, 2, 0, 0);
  cr_assert(sphere && plane);
  double rss[ROUNDS];
  for (int round = 0; round < ROUNDS; round++) {
    double t0 = now_s();
    int errors = round_of_clients(d.port, sphere, plane);
    cr_expect_eq(errors, 0, "round %d: every reply correct", round);
    /* the daemon has seen every close once Stats counts one connection */
    Env *r = NULL;
    for (int i = 0; i < 500; i++) {
      r = tc_stats(setup, 1000 + (uint64_t)i, 10000);
      cr_assert(r);
      int settled = r->stats_reply->connections == 1;
      contactd__v1__envelope__free_unpacked(r, NULL);
      if (settled) break;
      usleep(10000);
    }
    rss[round] = rss_bytes(d.pid);
    cr_log_info("round %d: %d clients x %d queries in %.2f s, daemon RSS %.1f MiB", round, ROUND_CLIENTS,
                ROUND_QUERIES, now_s() - t0, rss[round] / 1048576);
  }
  if (!rss_meaningful()) cr_log_info("RSS not compared: the daemon runs under a sanitizer");
  for (int round = 2; round < ROUNDS && rss_meaningful(); round++)
    cr_expect_leq(rss[round], rss[1] * 1.10, "round %d RSS %.1f MiB within 10%% of round 1's %.1f MiB", round,
                  rss[round] / 1048576, rss[1] / 1048576);
  Env *r = tc_stats(setup, 2000, 10000);
  cr_assert(r);
  cr_expect_eq(r->stats_reply->errors, 0, "no request failed");
  cr_expect_eq(r->stats_reply->connections_total, 1 + ROUNDS * (uint64_t)ROUND_CLIENTS);
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(setup);
  free(sphere);
  free(plane);
  cr_expect_eq(tc_stop(&d), 0);
}

/* ---- output_memory_bytes ------------------------------------------------- */

#define FLOODERS 64
#define FLOOD_QUERIES 64
#define OUTPUT_BUDGET (32u << 20)
#define REPLY_BUDGET (16u << 20)

Test(loops, output_memory_bounds_unread_replies_of_all_connections, .timeout = 600) {
  char limits[256];
  snprintf(limits, sizeof limits,
           "\"output_memory_bytes\": %u, \"reply_memory_bytes\": %u, \"max_inflight_per_conn\": %d", OUTPUT_BUDGET,
           REPLY_BUDGET, FLOOD_QUERIES);
  const char *path = tc_limits_file("output-memory.json", limits);
  const char *extra[] = {"--config", path, "--io-threads", "2", NULL};
  tc_daemon d;
  tc_start(&d, extra);
  int good = tc_connect_tcp(d.port);
  char *sphere = tc_register_sphere(good, 1, 0.1, 1e6, 0.006), *plane = tc_register_halfspace(good, 2, 0, 0);
  cr_assert(sphere && plane);
  tc_pair_query big, small;
  tc_pair_query_init(&big, 0, sphere, 0.09, plane, 0, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
  tc_pair_query_init(&small, 0, sphere, 0.095, plane, 0, CONTACTD__V1__DETAIL__DETAIL_WRENCH);
  Env *r = tc_call(good, &big.env, 30000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
  size_t reply = contactd__v1__envelope__get_packed_size(r);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* warm: the working set of a reading client, the scratch of a surface
   * query on each worker included (two at once, so that both workers take
   * one), which the flood's queries reuse */
  for (int k = 0; k < 4; k++) {
    for (int j = 0; j < 2; j++) {
      big.env.request_id = 100 + 2 * (uint64_t)k + (uint64_t)j;
      cr_assert_eq(tc_send(good, &big.env), 0);
    }
    for (int j = 0; j < 2; j++) {
      r = tc_recv(good, 30000);
      cr_assert(r);
      contactd__v1__envelope__free_unpacked(r, NULL);
    }
  }
  for (int k = 0; k < 20; k++) {
    r = tc_call(good, &small.env, 10000);
    cr_assert(r);
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  const double work = rss_bytes(d.pid);

  int fl[FLOODERS], tiny = 4096;
  for (int c = 0; c < FLOODERS; c++) {
    fl[c] = tc_connect_tcp(d.port);
    cr_assert_geq(fl[c], 0);
    setsockopt(fl[c], SOL_SOCKET, SO_RCVBUF, &tiny, sizeof tiny);
  }
  for (int c = 0; c < FLOODERS; c++)
    for (int k = 0; k < FLOOD_QUERIES; k++) {
      big.env.request_id = 1000 + (uint64_t)k;
      tc_send(fl[c], &big.env); /* (a cut connection refuses the rest) */
    }
  /* the well-behaved client keeps asking, and reading, meanwhile */
  enum { ASKS = 300 };
  double lat[ASKS], peak = work;
  int answered = 0;
  for (int k = 0; k < ASKS; k++) {
    small.env.request_id = 5000 + (uint64_t)k;
    double t0 = now_s();
    r = tc_call(good, &small.env, 30000);
    lat[k] = now_s() - t0;
    if (r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY && r->request_id == 5000 + (uint64_t)k)
      answered++;
    if (r) contactd__v1__envelope__free_unpacked(r, NULL);
    double rs = rss_bytes(d.pid);
    if (rs > peak) peak = rs;
  }
  for (int k = 0; k < 100; k++) { /* until the flood has been produced */
    double rs = rss_bytes(d.pid);
    if (rs > peak) peak = rs;
    usleep(20000);
  }
  for (int i = 1; i < ASKS; i++) /* sort the latencies */
    for (int j = i; j > 0 && lat[j] < lat[j - 1]; j--) {
      double t = lat[j];
      lat[j] = lat[j - 1];
      lat[j - 1] = t;
    }
  int cut = tc_log_count(&d, "output memory over budget");
  cr_log_info("%d clients x %d unread surface replies of %zu bytes (%.0f MiB asked for): %d connections cut; "
              "daemon RSS peak %.1f MiB = working set %.1f MiB + %.1f MiB (output_memory_bytes %.0f MiB, "
              "reply_memory_bytes %.0f MiB); the reading client: %d of %d answered, p50 %.2f ms, p99 %.2f ms",
              FLOODERS, FLOOD_QUERIES, reply, (double)FLOODERS * FLOOD_QUERIES * (double)reply / 1048576, cut,
              peak / 1048576, work / 1048576, (peak - work) / 1048576, OUTPUT_BUDGET / 1048576.0,
              REPLY_BUDGET / 1048576.0, answered, ASKS, lat[ASKS / 2] * 1e3, lat[ASKS * 99 / 100] * 1e3);
  cr_expect_eq(answered, ASKS, "the client that reads is answered every time, never cut");
  cr_expect_gt(cut, 0, "connections that do not read are cut");
  /* replies being built hold their converted results (reply_memory_bytes)
   * and then their encoding, as much again (cd_limits.h); the allowance is
   * the allocator's: over the working set the peak measured 64.7-77.2 MiB
   * (median 67.8, 15 runs) on a 2-core machine, against 1,266 MiB of
   * replies asked for. How full the reply budget gets depends on how fast
   * the workers build replies before the connections are cut: 0.73 ms
   * surface queries peaked at 8.3 MiB of it, 0.50 ms ones at 12.3 MiB. */
  if (rss_meaningful())
    cr_expect_lt(peak, work + OUTPUT_BUDGET + 2.0 * REPLY_BUDGET + (24u << 20),
                 "RSS peak %.1f MiB stays under the working set %.1f MiB + output_memory_bytes + 2 x "
                 "reply_memory_bytes (+24 MiB)",
                 peak / 1048576, work / 1048576);
  for (int c = 0; c < FLOODERS; c++) close(fl[c]);
  close(good);
  free(sphere);
  free(plane);
  cr_expect_eq(tc_stop(&d), 0);
}

/* GET /metrics on port, the whole response (malloc'd, NUL-terminated). */
static char *http_get_all(int port, const char *path, size_t *len) {
  int fd = tc_connect_tcp(port);
  char req[256];
  snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
  tc_send_raw(fd, req, strlen(req));
  size_t n = 0, cap = 65536;
  char *buf = malloc(cap);
  cr_assert(buf);
  for (;;) {
    if (n + 1 == cap) cr_assert(buf = realloc(buf, cap *= 2));
    ssize_t k = read(fd, buf + n, cap - 1 - n);
    if (k <= 0) break;
    n += (size_t)k;
  }
  buf[n] = 0;
  close(fd);
  *len = n;
  return buf;
}

/* With 256 workers and 64 loops the /metrics text (a line per worker, three
 * per loop) is served whole: its Content-Length is what arrives, it ends
 * with the latency histogram's last line, it holds the last worker's and
 * the last loop's lines, and promtool accepts it. */
Test(loops, metrics_of_many_workers_and_loops_are_complete, .timeout = 120) {
  tc_daemon d;
  const char *extra[] = {"--http-port", "0", "--workers", "256", "--io-threads", "64", NULL};
  tc_start(&d, extra);
  cr_assert_gt(d.metrics_port, 0);
  size_t n = 0;
  char *resp = http_get_all(d.metrics_port, "/metrics", &n);
  cr_assert(strncmp(resp, "HTTP/1.0 200 OK\r\n", 17) == 0, "%.200s", resp);
  char *body = strstr(resp, "\r\n\r\n");
  cr_assert(body);
  body += 4;
  size_t blen = n - (size_t)(body - resp);
  const char *cl = strstr(resp, "Content-Length: ");
  cr_assert(cl && cl < body);
  cr_assert_eq(strtoull(cl + 16, NULL, 10), blen);
  cr_assert_gt(blen, 16384, "the exposition of 256 workers and 64 loops passes the old 16 KiB");
  cr_assert(strstr(body, "contactd_worker_utilisation{worker=\"255\"} "));
  cr_assert(!strstr(body, "contactd_worker_utilisation{worker=\"256\"}"));
  cr_assert(strstr(body, "contactd_loop_connections{loop=\"63\"} "));
  cr_assert(strstr(body, "contactd_loop_requests_total{loop=\"63\"} "));
  const char *last = strstr(body, "\ncontactd_request_latency_us_count ");
  cr_assert(last, "no latency count line: the text was cut");
  const char *end = strchr(last + 1, '\n');
  cr_assert(end && end[1] == 0, "the histogram's count is not the last line");
  char why[9000];
  cr_assert_eq(tc_promtool_check(body, blen, why, sizeof why), 0, "%s", why);
  free(resp);
  cr_expect_eq(tc_stop(&d), 0);
}
