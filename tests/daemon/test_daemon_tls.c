/* test_daemon_tls.c — TLS on the daemon's TCP listener with real
 * handshakes and certificates made at test time (tests/common/
 * make_certs.sh): a TLS 1.3 round trip giving the plaintext results, a
 * plaintext client on a TLS port and a TLS client on a plaintext port,
 * TLS 1.2 only when allowed, mutual TLS (a valid certificate maps to its
 * principal; none, a foreign CA's and an expired one are refused), and
 * SIGHUP reloading the certificate and principals under live connections.
 * Each refusal closes cleanly, is logged once with its reason, and leaves
 * the daemon serving. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_test_client.h"
#include "cd_test_tls.h"

typedef Contactd__V1__Envelope Env;

/* The number of log lines holding needle once it reaches want, or after
 * 10 s (a refusal is logged as the connection closes, a moment after the
 * client sees it). */
static int log_count_reaches(tc_daemon *d, const char *needle, int want) {
  int n = 0;
  for (int i = 0; i < 1000 && (n = tc_log_count(d, needle)) < want; i++) usleep(10000);
  return n;
}

static void certs(void) {
  signal(SIGPIPE, SIG_IGN); /* a refused client's write meets a closed socket */
  tc_make_certs();
}

TestSuite(tls, .init = certs);

static void start_tls(tc_daemon *d, const char *more_json) {
  char cfg[2048];
  snprintf(cfg, sizeof cfg, "{\"tls_cert_file\": \"%s\", \"tls_key_file\": \"%s\"%s}", tc_cert("server.pem"),
           tc_cert("server.key"), more_json ? more_json : "");
  const char *extra[] = {"--config", tc_config_file("tls.json", cfg), NULL};
  tc_start(d, extra);
}

/* The force on A of a sphere pressed into a half space, over fd. */
static double pressed_force(int fd) {
  char *s = tc_register_sphere(fd, 2, 0.1, 1e6, 0.02);
  char *h = tc_register_halfspace(fd, 3, 0, 0);
  cr_assert(s && h);
  tc_pair_query q;
  tc_pair_query_init(&q, 4, s, 0.095, h, 0, 0);
  Env *r = tc_call(fd, &q.env, 10000);
  cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY, "a ContactReply");
  cr_assert_eq(r->contact_reply->n_results, 1);
  double fz = r->contact_reply->results[0]->wrench_a->force->z;
  contactd__v1__envelope__free_unpacked(r, NULL);
  free(s);
  free(h);
  return fz;
}

Test(tls, a_query_over_tls13_equals_plaintext) {
  tc_daemon plain, d;
  tc_start(&plain, NULL);
  int pfd = tc_connect_tcp(plain.port);
  double want = pressed_force(pfd);
  close(pfd);
  cr_expect_eq(tc_stop(&plain), 0);
  start_tls(&d, NULL);
  tc_tls t;
  cr_assert_eq(tc_tls_connect(&t, d.port, NULL), 0, "%s", t.error);
  cr_expect_str_eq(t.version, "TLSv1.3");
  cr_expect_str_eq(t.server_cn, "localhost");
  double got = pressed_force(t.fd);
  cr_expect(got == want && got > 0, "the same force to the bit: %.17g vs %.17g", got, want);
  Env *s = tc_stats(t.fd, 9, 5000);
  cr_expect(s);
  if (s) contactd__v1__envelope__free_unpacked(s, NULL);
  tc_tls_close(&t);
  cr_expect_eq(tc_stop(&d), 0);
}

Test(tls, the_wrong_kind_of_client_is_closed_and_named) {
  tc_daemon d, plain;
  start_tls(&d, NULL);
  /* a plaintext client: its Stats is never answered, the connection closes */
  int fd = tc_connect_tcp(d.port);
  Env *s = tc_stats(fd, 1, 3000);
  cr_expect_null(s, "no plaintext reply on a TLS port");
  cr_expect(tc_wait_closed(fd, 3000));
  close(fd);
  cr_expect_eq(log_count_reaches(&d, "not TLS (a plaintext client on a TLS port)", 1), 1, "one line naming the reason");
  /* TLS 1.2 is refused unless allowed */
  tc_tls t;
  tc_tls_opts o12 = {.tls12_only = 1};
  cr_expect_eq(tc_tls_connect(&t, d.port, &o12), -1);
  cr_expect_eq(log_count_reaches(&d, "TLS handshake failed", 1), 1, "%s", t.error);
  /* still serving TLS */
  cr_assert_eq(tc_tls_connect(&t, d.port, NULL), 0, "%s", t.error);
  tc_tls_close(&t);
  cr_expect_eq(tc_stop(&d), 0);
  start_tls(&d, ", \"tls_allow_tls12\": true");
  cr_assert_eq(tc_tls_connect(&t, d.port, &o12), 0, "%s", t.error);
  cr_expect_str_eq(t.version, "TLSv1.2");
  cr_expect_gt(pressed_force(t.fd), 0);
  tc_tls_close(&t);
  cr_expect_eq(tc_stop(&d), 0);
  /* a TLS client on a plaintext port */
  tc_start(&plain, NULL);
  cr_expect_eq(tc_tls_connect(&t, plain.port, NULL), -1);
  cr_expect_eq(log_count_reaches(&plain, "a TLS client on a plaintext port", 1), 1);
  fd = tc_connect_tcp(plain.port);
  cr_expect_gt(pressed_force(fd), 0, "plaintext clients are served");
  close(fd);
  cr_expect_eq(tc_stop(&plain), 0);
}

Test(tls, mutual_tls_maps_certificates_to_principals) {
  tc_daemon d;
  const char *pf = tc_config_file("principals.json",
                                  "{\"principals\": [{\"name\": \"sim-farm\", \"cert_subject\": \"CN=sim-farm\", "
                                  "\"roles\": [\"query\", \"register\"], \"tenant\": \"lab-b\"}]}");
  char more[1024];
  snprintf(more, sizeof more, ", \"tls_client_ca_file\": \"%s\", \"principals_file\": \"%s\"", tc_cert("ca.pem"), pf);
  start_tls(&d, more);
  struct {
    const char *cert, *key, *reason;
  } refused[] = {{NULL, NULL, "no client certificate"},
                 {"rogue.pem", "rogue.key", "client certificate from an unknown CA"},
                 {"expired.pem", "expired.key", "client certificate expired"}};
  tc_tls t;
  for (size_t i = 0; i < 3; i++) {
    char cert[400] = "", key[400] = "";
    if (refused[i].cert) {
      snprintf(cert, sizeof cert, "%s", tc_cert(refused[i].cert));
      snprintf(key, sizeof key, "%s", tc_cert(refused[i].key));
    }
    tc_tls_opts o = {.cert = refused[i].cert ? cert : NULL, .key = refused[i].cert ? key : NULL};
    /* without a certificate the client's handshake may end first (TLS 1.3) */
    if (tc_tls_connect(&t, d.port, &o) == 0) {
      cr_expect_null(tc_stats(t.fd, 1, 3000), "%s: nothing answered", refused[i].reason);
      tc_tls_close(&t);
    }
    cr_expect_eq(log_count_reaches(&d, refused[i].reason, 1), 1, "logged once: %s", refused[i].reason);
  }
  char cert[400], key[400];
  snprintf(cert, sizeof cert, "%s", tc_cert("client.pem"));
  snprintf(key, sizeof key, "%s", tc_cert("client.key"));
  tc_tls_opts ok = {.cert = cert, .key = key};
  cr_assert_eq(tc_tls_connect(&t, d.port, &ok), 0, "%s", t.error);
  cr_expect_gt(pressed_force(t.fd), 0, "the certificate's principal may register and query, no token needed");
  cr_expect_null(tc_stats(t.fd, 1, 3000), "stats needs admin, which sim-farm lacks");
  tc_tls_close(&t);
  cr_expect_eq(tc_log_count(&d, "principal=sim-farm tenant=lab-b by=certificate"), 1);
  cr_expect_eq(tc_stop(&d), 0);
}

static void copy(const char *from, const char *to) {
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cp %s %s", from, to);
  cr_assert_eq(system(cmd), 0);
}

Test(tls, sighup_reloads_the_certificate_under_live_connections) {
  char cert[400], key[400];
  snprintf(cert, sizeof cert, "%s", tc_cert("live.pem"));
  snprintf(key, sizeof key, "%s", tc_cert("live.key"));
  copy(tc_cert("server.pem"), cert);
  copy(tc_cert("server.key"), key);
  char cfg[1024];
  snprintf(cfg, sizeof cfg, "{\"tls_cert_file\": \"%s\", \"tls_key_file\": \"%s\"}", cert, key);
  tc_daemon d;
  const char *extra[] = {"--config", tc_config_file("live.json", cfg), NULL};
  tc_start(&d, extra);
  tc_tls before, after, broken;
  cr_assert_eq(tc_tls_connect(&before, d.port, NULL), 0, "%s", before.error);
  copy(tc_cert("server2.pem"), cert);
  copy(tc_cert("server2.key"), key);
  kill(d.pid, SIGHUP);
  for (int i = 0; i < 200 && tc_log_count(&d, "msg=\"reloaded\"") < 1; i++) usleep(10000);
  cr_assert_eq(tc_log_count(&d, "msg=\"reloaded\""), 1);
  cr_expect_gt(pressed_force(before.fd), 0, "the connection made before the reload goes on");
  cr_assert_eq(tc_tls_connect(&after, d.port, NULL), 0, "%s", after.error);
  cr_expect_neq(memcmp(before.server_sha256, after.server_sha256, 32), 0, "new connections get the new certificate");
  /* a broken key: the reload fails, says why, and keeps the new pair */
  FILE *f = fopen(key, "w");
  fputs("not a key\n", f);
  fclose(f);
  kill(d.pid, SIGHUP);
  for (int i = 0; i < 200 && tc_log_count(&d, "TLS reload failed") < 1; i++) usleep(10000);
  cr_expect_eq(tc_log_count(&d, "TLS reload failed: keeping the certificate in use"), 1);
  cr_assert_eq(tc_tls_connect(&broken, d.port, NULL), 0, "%s", broken.error);
  cr_expect_eq(memcmp(broken.server_sha256, after.server_sha256, 32), 0, "still the last good certificate");
  cr_expect_gt(pressed_force(broken.fd), 0);
  tc_tls_close(&before);
  tc_tls_close(&after);
  tc_tls_close(&broken);
  cr_expect_eq(tc_stop(&d), 0);
}
