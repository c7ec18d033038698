/* test_daemon_lifecycle.c — operation of the real contactd: flags and the
 * config file (flags win), --help/--version, a bad flag, graceful SIGTERM
 * with work in flight, the idle timeout and the connection limit. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

static int run(const char *args, char *out, size_t cap) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "%s %s 2>&1", CONTACTD_BIN, args);
  FILE *p = popen(cmd, "r");
  cr_assert(p);
  size_t n = fread(out, 1, cap - 1, p);
  out[n] = 0;
  int st = pclose(p);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

Test(lifecycle, help_version_and_bad_flags) {
  char out[16384];
  cr_expect_eq(run("--help", out, sizeof out), 0);
  cr_expect(strstr(out, "--listen HOST:PORT") && strstr(out, "max_frame_bytes"), "%s", out);
  cr_expect(strstr(out, "normalised"), "the quaternion rule is documented: %s", out);
  cr_expect_eq(run("--version", out, sizeof out), 0);
  cr_expect(strstr(out, "contactd 0.1.0"), "%s", out);
  cr_expect_eq(run("--frobnicate 1", out, sizeof out), 2);
  cr_expect(strstr(out, "unknown flag"), "%s", out);
  cr_expect_eq(run("--workers zero", out, sizeof out), 2);
  cr_expect_eq(run("--config /nonexistent.json", out, sizeof out), 2);
  FILE *f = fopen("/tmp/contactd-test-bad.json", "w");
  fprintf(f, "{\"limits\": {\"max_fram_bytes\": 5}}");
  fclose(f);
  cr_expect_eq(run("--config /tmp/contactd-test-bad.json", out, sizeof out), 2);
  cr_expect(strstr(out, "unknown key limits.max_fram_bytes"), "typos are caught: %s", out);
}

Test(lifecycle, flags_override_the_config_file) {
  FILE *f = fopen("/tmp/contactd-test-cfg.json", "w");
  fprintf(f, "{\"_comment\": \"x\", \"workers\": 3, \"limits\": {\"max_inflight_per_conn\": 17, "
             "\"max_frame_bytes\": 1000}}");
  fclose(f);
  const char *extra[] = {"--config", "/tmp/contactd-test-cfg.json", "--workers", "1", NULL};
  tc_daemon d;
  tc_start(&d, extra);
  cr_expect_eq(tc_log_count(&d, "workers=1"), 1, "the flag wins over the file");
  int fd = tc_connect_tcp(d.port);
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 1;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  e.hello = &h;
  Env *r = tc_call(fd, &e, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  cr_expect_eq(r->hello_reply->limits->max_in_flight, 17, "the file overrides the default");
  cr_expect_eq(r->hello_reply->limits->max_frame_bytes, 1000);
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(fd);
  cr_expect_eq(tc_stop(&d), 0);
}

Test(lifecycle, sigterm_finishes_in_flight_work_then_exits_zero) {
  tc_daemon d;
  tc_start(&d, NULL);
  int fd = tc_connect_tcp(d.port);
  char *s = tc_register_sphere(fd, 1, 0.1, 1e6, 0.015), *p = tc_register_halfspace(fd, 2, 0, 0);
  cr_assert(s && p);
  /* a few slow queries in flight, then SIGTERM */
  tc_pair_query pq;
  tc_pair_query_init(&pq, 0, s, 0.02, p, 0, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
  Env e = pq.env;
  for (uint64_t i = 0; i < 4; i++) {
    e.request_id = 10 + i;
    tc_send(fd, &e);
  }
  usleep(20000);
  kill(d.pid, SIGTERM);
  for (uint64_t i = 0; i < 4; i++) {
    Env *r = tc_recv(fd, 30000);
    cr_assert(r, "in-flight query %llu is answered during shutdown", (unsigned long long)i);
    cr_expect_eq(r->request_id, 10 + i);
    cr_expect(r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY ||
                  (r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR &&
                   r->error->code == CONTACTD__V1__ERROR_CODE__UNAVAILABLE),
              "a reply, or UNAVAILABLE for one read after the signal");
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  cr_expect(tc_wait_closed(fd, 30000), "the server closes the connection once flushed");
  cr_expect_geq(tc_connect_tcp(d.port), -1);
  cr_expect_eq(tc_stop(&d), 0, "exit status 0 after SIGTERM");
  close(fd);
  free(s);
  free(p);
}

/* The grace timer must close EVERY remaining connection, not just the first
 * one in the list (cd_conn_close does not unlink; on_handle_closed does). */
Test(lifecycle, shutdown_grace_closes_every_busy_connection) {
  FILE *f = fopen("/tmp/contactd-test-grace.json", "w");
  fprintf(f, "{\"workers\": 1, \"shutdown_grace_s\": 0}");
  fclose(f);
  const char *extra[] = {"--config", "/tmp/contactd-test-grace.json", NULL};
  tc_daemon d;
  tc_start(&d, extra);
  int fds[2];
  char *geo[2][2];
  for (int k = 0; k < 2; k++) {
    fds[k] = tc_connect_tcp(d.port);
    geo[k][0] = tc_register_sphere(fds[k], 1, 0.1, 1e6, 0.01);
    geo[k][1] = tc_register_halfspace(fds[k], 2, 0, 0);
    cr_assert(geo[k][0] && geo[k][1]);
  }
  /* both connections get queued work (one worker), so neither is quiet */
  for (int k = 0; k < 2; k++) {
    tc_pair_query pq;
    tc_pair_query_init(&pq, 0, geo[k][0], 0.02, geo[k][1], 0, CONTACTD__V1__DETAIL__DETAIL_SURFACE);
    Env e = pq.env;
    for (uint64_t i = 0; i < 16; i++) {
      e.request_id = 10 + i;
      tc_send(fds[k], &e);
    }
  }
  usleep(20000);
  kill(d.pid, SIGTERM);
  for (int k = 0; k < 2; k++) cr_expect(tc_wait_closed(fds[k], 5000), "connection %d is closed", k);
  cr_expect_eq(tc_log_count(&d, "reason=\"shutdown grace period over\""), 2,
               "the grace timer closes both busy connections");
  cr_expect_eq(tc_stop(&d), 0, "exit status 0 after the grace period");
  for (int k = 0; k < 2; k++) {
    close(fds[k]);
    free(geo[k][0]);
    free(geo[k][1]);
  }
}

Test(lifecycle, idle_connections_are_closed) {
  FILE *f = fopen("/tmp/contactd-test-idle.json", "w");
  fprintf(f, "{\"limits\": {\"idle_timeout_ms\": 200}}");
  fclose(f);
  const char *extra[] = {"--config", "/tmp/contactd-test-idle.json", NULL};
  tc_daemon d;
  tc_start(&d, extra);
  int fd = tc_connect_tcp(d.port);
  cr_expect(tc_wait_closed(fd, 5000), "closed after 200 ms of silence");
  cr_expect_eq(tc_log_count(&d, "reason=\"idle timeout\""), 1);
  close(fd);
  cr_expect_eq(tc_stop(&d), 0);
}

Test(lifecycle, connections_beyond_the_limit_get_unavailable) {
  FILE *f = fopen("/tmp/contactd-test-maxconn.json", "w");
  fprintf(f, "{\"limits\": {\"max_connections\": 2}}");
  fclose(f);
  const char *extra[] = {"--config", "/tmp/contactd-test-maxconn.json", NULL};
  tc_daemon d;
  tc_start(&d, extra);
  Contactd__V1__Stats s = CONTACTD__V1__STATS__INIT;
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 3;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_STATS;
  e.stats = &s;
  /* one at a time, so that the third is the one over the limit */
  int a = tc_connect_tcp(d.port);
  Env *r = tc_call(a, &e, 5000);
  cr_assert(r);
  contactd__v1__envelope__free_unpacked(r, NULL);
  int b = tc_connect_unix(d.unix_path);
  r = tc_call(b, &e, 5000);
  cr_assert(r);
  contactd__v1__envelope__free_unpacked(r, NULL);
  int c = tc_connect_tcp(d.port);
  r = tc_recv(c, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR);
  cr_expect_eq(r->error->code, CONTACTD__V1__ERROR_CODE__UNAVAILABLE);
  cr_expect(strstr(r->error->message, "max_connections"), "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  cr_expect(tc_wait_closed(c, 5000));
  close(c);
  /* the first two still work */
  r = tc_call(b, &e, 5000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY);
  cr_expect_eq(r->stats_reply->connections, 2);
  contactd__v1__envelope__free_unpacked(r, NULL);
  close(a);
  close(b);
  cr_expect_eq(tc_stop(&d), 0);
}

Test(lifecycle, the_example_config_is_valid) {
  /* deploy/contactd.example.json as shipped, with the sockets moved to the
   * test's own places (flags override the file). */
  tc_daemon d;
  const char *extra[] = {"--config", CONTACTD_SOURCE_DIR "/deploy/contactd.example.json", "--metrics-port", "0",
                         NULL};
  tc_start(&d, extra);
  cr_expect_eq(tc_log_count(&d, "workers=2"), 1);
  cr_expect_eq(tc_stop(&d), 0);
}
