/* test_client_tls.c — the C library over TLS with tokens, against the real
 * daemon with certificates made at run time (tests/common/make_certs.sh):
 * a TLS 1.3 query equals the same query in plaintext bit for bit, the
 * token comes from $CONTACTD_TOKEN_FILE (or $CONTACTD_TOKEN) and is sent
 * again after a restart of the daemon, a wrong token, an unknown CA and a
 * wrong server name are refused with errors that say so (and never hold
 * the token), a client certificate maps to its principal, and 100 clients
 * handshaking at once past the loop's handshake budget
 * (tls_handshake_turn_us) all get in. */
#include <criterion/criterion.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cc_client.h"
#include "td_proc.h"

#ifndef CONTACTD_BIN
#error "CONTACTD_BIN must name the contactd executable"
#endif
#ifndef CONTACTD_SOURCE_DIR
#error "CONTACTD_SOURCE_DIR must name the source tree"
#endif

static const char TOKEN[] = "7f3c1e0b-robot-7-token-for-the-tls-test";

static char g_dir[512];

static const char *path(const char *name) {
  static char buf[4][600];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", g_dir, name);
  return buf[k];
}

static void write_file(const char *p, const char *text, int mode) {
  FILE *f = fopen(p, "w");
  cr_assert(f, "cannot write %s", p);
  fputs(text, f);
  fclose(f);
  chmod(p, (mode_t)mode);
}

/* Certificates, a principals file with robot-7 (token, query and register)
 * and sim-farm (certificate subject, query), and the token file. */
static void setup(void) {
  snprintf(g_dir, sizeof g_dir, "%s/tls", td_own_dir());
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "sh '%s/tests/common/make_certs.sh' '%s'", CONTACTD_SOURCE_DIR, g_dir);
  cr_assert_eq(system(cmd), 0, "make_certs.sh failed");
  unsigned char h[SHA256_DIGEST_LENGTH];
  SHA256((const unsigned char *)TOKEN, strlen(TOKEN), h);
  char hex[65];
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
  char json[600];
  snprintf(json, sizeof json,
           "{\"principals\": [{\"name\": \"robot-7\", \"token_sha256\": \"%s\", \"roles\": [\"query\", \"register\"],"
           " \"tenant\": \"lab-a\"}, {\"name\": \"sim-farm\", \"cert_subject\": \"CN=sim-farm\", \"roles\": [\"query\"],"
           " \"tenant\": \"lab-b\"}]}\n",
           hex);
  write_file(path("principals.json"), json, 0600);
  char tok[128];
  snprintf(tok, sizeof tok, "%s\n", TOKEN);
  write_file(path("robot-7.token"), tok, 0600);
  write_file(path("wrong.token"), "not-the-token\n", 0600);
  unsetenv("CONTACTD_TOKEN");
  setenv("CONTACTD_TOKEN_FILE", path("robot-7.token"), 1);
}

TestSuite(client_tls, .init = setup, .timeout = 120);

enum { EITHER, MUTUAL, TLS_ONLY };

/* The daemon on 127.0.0.1:port: EITHER takes TLS and plaintext on the same
 * port (--tls-required false) so that one server answers both; MUTUAL adds
 * client certificates; TLS_ONLY refuses plaintext. */
static void start(td_proc *d, int mode) {
  const char *args[] = {"--tls-cert", path("server.pem"), "--tls-key", path("server.key"), "--principals",
                        path("principals.json"), "--tls-required", mode == TLS_ONLY ? "true" : "false",
                        mode == MUTUAL ? "--tls-client-ca" : NULL, path("ca.pem"), NULL};
  const char *why = NULL;
  cr_assert_eq(td_start(d, CONTACTD_BIN, args, &why), 0, "contactd: %s", why);
}

static cc_options tls_options(void) {
  cc_options o;
  cc_options_default(&o);
  o.tls = 1;
  o.tls_ca_file = path("ca.pem");
  o.timeout_ms = o.connect_timeout_ms = 10000;
  return o;
}

static cc_client *connect_ok(const char *addr, const cc_options *o) {
  cc_client *c = NULL;
  cc_error e;
  cr_assert_eq(cc_connect(addr, o, &c, &e), 0, "connect %s: %s: %s", addr, cc_code_name(e.code), e.message);
  return c;
}

typedef struct scene {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
} scene;

static void register_scene(cc_client *c, scene *s) {
  cc_shape b = {.kind = CC_SHAPE_SPHERE, .a = 0.05, .modulus = 1e5, .hint = 0.0125};
  cc_shape f = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1};
  cc_error e;
  cr_assert_eq(cc_register_shape(c, &b, s->ball, NULL, &e), 0, "register ball: %s", e.message);
  cr_assert_eq(cc_register_shape(c, &f, s->floor, NULL, &e), 0, "register floor: %s", e.message);
}

/* Force, torque and area of the ball 2 mm into the floor. */
static void query(cc_client *c, const scene *s, double out[7]) {
  cc_body b[2];
  memset(b, 0, sizeof b);
  b[0].id = 1, b[0].geometry_id = s->ball, b[0].p[2] = 0.048;
  b[1].id = 2, b[1].geometry_id = s->floor;
  static const uint32_t pair[1][2] = {{1, 2}};
  Contactd__V1__ContactReply *r = NULL;
  cc_error e;
  cr_assert_eq(cc_query_bodies(c, b, 2, pair, 1, NULL, &r, &e), 0, "query: %s: %s", cc_code_name(e.code), e.message);
  cr_assert_eq(r->n_results, 1);
  const Contactd__V1__PairResult *p = r->results[0];
  cr_assert(p->wrench_a && p->wrench_a->force && p->wrench_a->torque, "no wrench");
  double v[7] = {p->wrench_a->force->x,  p->wrench_a->force->y,  p->wrench_a->force->z, p->wrench_a->torque->x,
                 p->wrench_a->torque->y, p->wrench_a->torque->z, p->area};
  memcpy(out, v, sizeof v);
  cc_free(r);
}

static void hello_principal(cc_client *c, const char *want) {
  Contactd__V1__HelloReply *h = NULL;
  cc_error e;
  cr_assert_eq(cc_hello(c, "test_client_tls", &h, &e), 0, "hello: %s", e.message);
  cr_expect_str_eq(h->principal, want);
  cc_free(h);
}

Test(client_tls, query_over_tls_equals_plaintext) {
  td_proc d;
  start(&d, EITHER);
  char addr[64], name_addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  snprintf(name_addr, sizeof name_addr, "localhost:%d", d.port);
  cc_options plain;
  cc_options_default(&plain); /* the token still comes from $CONTACTD_TOKEN_FILE */
  cc_options tls = tls_options();
  cc_client *p = connect_ok(addr, &plain), *t = connect_ok(addr, &tls), *n = connect_ok(name_addr, &tls);
  hello_principal(t, "robot-7");
  scene s;
  register_scene(t, &s);
  double a[7], b[7], c[7];
  query(p, &s, a);
  query(t, &s, b);
  query(n, &s, c);
  cr_expect(a[2] > 0, "the ball presses on the floor (fz = %g)", a[2]);
  cr_expect_eq(memcmp(a, b, sizeof a), 0, "TLS and plaintext answers differ");
  cr_expect_eq(memcmp(a, c, sizeof a), 0, "TLS by host name and plaintext answers differ");
  cc_close(p);
  cc_close(t);
  cc_close(n);
  char *log = td_read_log(&d);
  cr_assert(log);
  cr_expect(!strstr(log, TOKEN), "the daemon's log holds the token");
  free(log);
  cr_expect_eq(td_stop(&d, 1), 0);
}

Test(client_tls, token_from_the_environment_variable) {
  td_proc d;
  start(&d, EITHER);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  unsetenv("CONTACTD_TOKEN_FILE");
  setenv("CONTACTD_TOKEN", TOKEN, 1);
  cc_options o = tls_options();
  cc_client *c = connect_ok(addr, &o);
  hello_principal(c, "robot-7");
  cc_close(c);
  unsetenv("CONTACTD_TOKEN"); /* no token at all: a Hello answers, a query is refused */
  c = connect_ok(addr, &o);
  Contactd__V1__StatsReply *st = NULL;
  cc_error e;
  cr_expect_eq(cc_stats(c, &st, &e), CC_EUNAUTHENTICATED, "stats without a token: %s", e.message);
  cc_close(c);
  cr_expect_eq(td_stop(&d, 1), 0);
}

Test(client_tls, refusals_say_why) {
  td_proc d;
  start(&d, EITHER);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  cc_client *c = NULL;
  cc_error e;
  /* A wrong token: the server's UNAUTHENTICATED, naming the file, not the token. */
  cc_options o = tls_options();
  o.token_file = path("wrong.token");
  cr_assert_eq(cc_connect(addr, &o, &c, &e), CC_EUNAUTHENTICATED, "wrong token: %s", e.message);
  cr_expect(e.remote);
  cr_expect(strstr(e.message, "wrong.token") && strstr(e.message, "matches no principal"), "%s", e.message);
  cr_expect(!strstr(e.message, "not-the-token"), "the error holds the token: %s", e.message);
  /* A server certificate from a CA the client does not trust. */
  o = tls_options();
  o.tls_ca_file = path("rogue-ca.pem");
  cr_assert_eq(cc_connect(addr, &o, &c, &e), CC_EUNAUTHENTICATED, "unknown CA: %s", e.message);
  cr_expect(strstr(e.message, "not trusted"), "%s", e.message);
  /* A name the certificate does not carry. */
  o = tls_options();
  o.tls_server_name = "contactd.elsewhere";
  cr_assert_eq(cc_connect(addr, &o, &c, &e), CC_EUNAUTHENTICATED, "wrong name: %s", e.message);
  cr_expect(strstr(e.message, "hostname mismatch"), "%s", e.message);
  /* A missing CA file, before any connection. */
  o = tls_options();
  o.tls_ca_file = path("no-such-ca.pem");
  cr_assert_eq(cc_connect(addr, &o, &c, &e), CC_EINVALID_ARGUMENT, "missing CA file: %s", e.message);
  cr_expect(strstr(e.message, "no-such-ca.pem"), "%s", e.message);
  /* The daemon is still up and serves the right token. */
  o = tls_options();
  c = connect_ok(addr, &o);
  hello_principal(c, "robot-7");
  cc_close(c);
  cr_expect_eq(td_stop(&d, 1), 0);
}

Test(client_tls, client_certificate_maps_to_its_principal) {
  td_proc d;
  start(&d, MUTUAL);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  unsetenv("CONTACTD_TOKEN_FILE"); /* known by the certificate alone */
  cc_options o = tls_options();
  o.tls_cert_file = path("client.pem");
  o.tls_key_file = path("client.key");
  cc_client *c = connect_ok(addr, &o);
  hello_principal(c, "sim-farm");
  Contactd__V1__StatsReply *st = NULL;
  cc_error e;
  cr_expect_eq(cc_stats(c, &st, &e), CC_EPERMISSION_DENIED, "stats needs admin: %s", e.message);
  cc_close(c);
  /* No certificate, one from another CA, an expired one: the server's
   * refusal (an alert after TLS 1.3's handshake) is UNAUTHENTICATED,
   * saying so, and reconnecting gives up at once instead of retrying. */
  const char *bad[][2] = {{NULL, NULL}, {"rogue.pem", "rogue.key"}, {"expired.pem", "expired.key"}};
  for (int k = 0; k < 3; k++) {
    o = tls_options();
    o.tls_cert_file = bad[k][0] ? path(bad[k][0]) : NULL;
    o.tls_key_file = bad[k][1] ? path(bad[k][1]) : NULL;
    o.reconnect_timeout_ms = 20000;
    c = NULL;
    int rc = cc_connect(addr, &o, &c, &e);
    if (rc == 0) { /* the alert comes with the first read: the first call fails */
      Contactd__V1__HelloReply *h = NULL;
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      rc = cc_hello(c, "refused", &h, &e);
      clock_gettime(CLOCK_MONOTONIC, &b);
      cc_free(h);
      if (rc == CC_EUNAVAILABLE && e.retryable) /* the break is seen; the next call reconnects and gives up */
        rc = cc_hello(c, "refused", NULL, &e);
      clock_gettime(CLOCK_MONOTONIC, &b);
      cr_expect_lt((double)(b.tv_sec - a.tv_sec), 10.0, "case %d: gave up at once, not after the reconnect timeout", k);
      cc_close(c);
    }
    cr_expect_eq(rc, CC_EUNAUTHENTICATED, "case %d: %s: %s", k, cc_code_name(rc), e.message);
    cr_expect(strstr(e.message, "refused this client's certificate"), "case %d: %s", k, e.message);
  }
  cr_expect_eq(td_stop(&d, 1), 0);
}

static void on_event(void *user, const cc_event *ev) {
  if (ev->kind == CC_EVENT_RECONNECTED) ++*(int *)user;
}

Test(client_tls, reconnects_over_tls_after_a_restart) {
  td_proc d;
  start(&d, TLS_ONLY);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  cc_options o = tls_options();
  o.retry_queries = 1;
  cc_client *c = connect_ok(addr, &o);
  int reconnected = 0;
  cc_set_event(c, on_event, &reconnected);
  scene s;
  register_scene(c, &s);
  double before[7], after[7];
  query(c, &s, before);
  const char *args[] = {"--tls-cert", path("server.pem"), "--tls-key", path("server.key"), "--principals",
                        path("principals.json"), "--tls-required", "true", NULL};
  const char *why = NULL;
  cr_assert_eq(td_restart(&d, CONTACTD_BIN, args, &why), 0, "restart: %s", why);
  /* The new daemon has no geometry: the client reconnects with TLS, sends
   * its token again (or the registrations would be UNAUTHENTICATED) and
   * registers the ball and floor again. */
  query(c, &s, after);
  cr_expect_eq(reconnected, 1);
  cr_expect_eq(memcmp(before, after, sizeof before), 0, "the answer after the restart differs");
  hello_principal(c, "robot-7");
  cc_close(c);
  cr_expect_eq(td_stop(&d, 1), 0);
}

/* 100 clients connect at once to a daemon whose loop may spend 1 us a turn
 * on handshakes: nearly every handshake waits for a later turn
 * (cd_conn.c), and every one must still complete and be served. */
typedef struct crowd {
  const char *addr;
  const scene *s;
  pthread_barrier_t *go;
  atomic_int *ok;
  double want[7];
} crowd;

static void *crowd_client(void *arg) {
  crowd *k = arg;
  cc_options o = tls_options();
  pthread_barrier_wait(k->go);
  cc_client *c = NULL;
  cc_error e;
  if (cc_connect(k->addr, &o, &c, &e)) return NULL;
  cc_body b[2];
  memset(b, 0, sizeof b);
  b[0].id = 1, b[0].geometry_id = k->s->ball, b[0].p[2] = 0.048;
  b[1].id = 2, b[1].geometry_id = k->s->floor;
  static const uint32_t pair[1][2] = {{1, 2}};
  Contactd__V1__ContactReply *r = NULL;
  if (cc_query_bodies(c, b, 2, pair, 1, NULL, &r, &e) == 0 && r->n_results == 1 && r->results[0]->wrench_a &&
      r->results[0]->wrench_a->force && r->results[0]->wrench_a->force->z == k->want[2])
    atomic_fetch_add(k->ok, 1);
  cc_free(r);
  cc_close(c);
  return NULL;
}

Test(client_tls, handshakes_past_the_turn_budget_all_complete) {
  write_file(path("budget.json"), "{\"limits\": {\"tls_handshake_turn_us\": 1}}\n", 0600);
  const char *args[] = {"--config", path("budget.json"), "--io-threads", "1", "--tls-cert", path("server.pem"),
                        "--tls-key", path("server.key"), "--principals", path("principals.json"), NULL};
  td_proc d;
  const char *why = NULL;
  cr_assert_eq(td_start(&d, CONTACTD_BIN, args, &why), 0, "contactd: %s", why);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  cc_options o = tls_options();
  cc_client *c = connect_ok(addr, &o);
  scene s;
  register_scene(c, &s);
  enum { N = 100 };
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, N);
  atomic_int ok = 0;
  crowd k = {.addr = addr, .s = &s, .go = &go, .ok = &ok};
  query(c, &s, k.want);
  pthread_t th[N];
  for (int i = 0; i < N; i++) cr_assert_eq(pthread_create(&th[i], NULL, crowd_client, &k), 0);
  for (int i = 0; i < N; i++) pthread_join(th[i], NULL);
  pthread_barrier_destroy(&go);
  cr_expect_eq(atomic_load(&ok), N, "%d of %d clients got in and were answered", atomic_load(&ok), N);
  double again[7];
  query(c, &s, again); /* the connection opened before goes on */
  cc_close(c);
  cr_expect_eq(td_stop(&d, 1), 0);
}
