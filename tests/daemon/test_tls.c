/* test_tls.c — the daemon's TLS through memory BIOs (cd_tls.c) against an
 * OpenSSL client, with certificates the test makes with the openssl CLI
 * (tests/common/make_certs.sh): real TLS 1.3 handshakes and records, mutual
 * TLS with a valid, a missing, a foreign and an expired client
 * certificate, a plaintext client, TLS 1.2 allowed or not, bad files, and a
 * connection that outlives its context (a reload). */
#include <criterion/criterion.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_tls.h"

#ifndef CONTACTD_SOURCE_DIR
#error "CONTACTD_SOURCE_DIR must name the source tree"
#endif

static char certs[512];

static void make_certs(void) {
  const char *tmp = getenv("TMPDIR");
  snprintf(certs, sizeof certs, "%s/tls-XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
  cr_assert(mkdtemp(certs));
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "sh %s/tests/common/make_certs.sh %s", CONTACTD_SOURCE_DIR, certs);
  cr_assert_eq(system(cmd), 0, "make_certs.sh");
}

static void remove_certs(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", certs);
  cr_expect_eq(system(cmd), 0);
}

TestSuite(tls, .init = make_certs, .fini = remove_certs);

static const char *file(const char *name) {
  static char buf[4][600];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", certs, name);
  return b;
}

static cd_tls_ctx *server_ctx(const char *ca, int tls12) {
  cd_tls_config cfg = {file("server.pem"), file("server.key"), ca ? file(ca) : NULL, tls12};
  char err[256];
  cd_tls_ctx *c = cd_tls_ctx_new(&cfg, err, sizeof err);
  cr_assert(c, "%s", err);
  return c;
}

/* An OpenSSL client over its own memory BIOs. */
typedef struct client {
  SSL_CTX *ctx;
  SSL *ssl;
  BIO *in, *out;
} client;

static void client_init(client *c, const char *cert, int max_version) {
  c->ctx = SSL_CTX_new(TLS_client_method());
  cr_assert(SSL_CTX_load_verify_locations(c->ctx, file("ca.pem"), NULL) == 1);
  SSL_CTX_set_verify(c->ctx, SSL_VERIFY_PEER, NULL);
  if (max_version) SSL_CTX_set_max_proto_version(c->ctx, max_version);
  if (cert) {
    char key[64];
    snprintf(key, sizeof key, "%.*s.key", (int)(strlen(cert) - 4), cert);
    cr_assert(SSL_CTX_use_certificate_file(c->ctx, file(cert), SSL_FILETYPE_PEM) == 1);
    cr_assert(SSL_CTX_use_PrivateKey_file(c->ctx, file(key), SSL_FILETYPE_PEM) == 1);
  }
  c->ssl = SSL_new(c->ctx);
  c->in = BIO_new(BIO_s_mem());
  c->out = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(c->in, -1);
  SSL_set_bio(c->ssl, c->in, c->out);
  SSL_set_connect_state(c->ssl);
  SSL_set_tlsext_host_name(c->ssl, "localhost");
  SSL_set1_host(c->ssl, "localhost");
}

static void client_free(client *c) {
  SSL_free(c->ssl);
  SSL_CTX_free(c->ctx);
}

/* Move bytes both ways until neither side has any; returns the server's
 * status at the end. */
static cd_tls_status pump(client *c, cd_tls *s) {
  cd_tls_status st = CD_TLS_OK;
  for (int round = 0; round < 50; round++) {
    SSL_do_handshake(c->ssl);
    char buf[16384];
    int moved = 0, n;
    while ((n = BIO_read(c->out, buf, sizeof buf)) > 0) {
      st = cd_tls_feed(s, buf, (size_t)n);
      moved = 1;
    }
    size_t m;
    while ((m = cd_tls_take(s, buf, sizeof buf)) > 0) {
      BIO_write(c->in, buf, (int)m);
      moved = 1;
    }
    if (!moved || st == CD_TLS_FAILED) break;
  }
  return st;
}

Test(tls, a_round_trip_over_tls13) {
  cd_tls_ctx *ctx = server_ctx(NULL, 0);
  cr_expect_not(cd_tls_ctx_mutual(ctx));
  cd_tls *s = cd_tls_new(ctx);
  client c;
  client_init(&c, NULL, 0);
  cr_assert_eq(pump(&c, s), CD_TLS_OK, "%s", cd_tls_why(s));
  cr_assert(cd_tls_handshake_done(s));
  cr_assert_eq(SSL_is_init_finished(c.ssl), 1, "the client verified the server against the test CA");
  cr_expect_str_eq(cd_tls_version(s), "TLSv1.3");
  cr_expect_str_eq(cd_tls_peer_subject(s), "", "no client certificate asked for");
  /* a request in, a reply out, each bigger than one record */
  static char big[40000], got[40000];
  for (size_t i = 0; i < sizeof big; i++) big[i] = (char)(i * 7);
  size_t w;
  cr_assert(SSL_write_ex(c.ssl, big, sizeof big, &w) == 1 && w == sizeof big);
  pump(&c, s);
  size_t n = 0, k;
  while ((k = cd_tls_read(s, got + n, sizeof got - n)) > 0) n += k;
  cr_expect_eq(n, sizeof big);
  cr_expect_eq(memcmp(got, big, sizeof big), 0);
  cr_assert_eq(cd_tls_write(s, big, sizeof big), CD_TLS_OK);
  cr_expect_gt(cd_tls_out_pending(s), sizeof big, "ciphertext waits to be written");
  pump(&c, s);
  n = 0;
  while (n < sizeof got && SSL_read_ex(c.ssl, got + n, sizeof got - n, &k) == 1) n += k;
  cr_expect_eq(n, sizeof big);
  cr_expect_eq(memcmp(got, big, sizeof big), 0);
  /* close_notify from the client */
  SSL_shutdown(c.ssl);
  pump(&c, s);
  char one;
  cr_expect_eq(cd_tls_read(s, &one, 1), 0);
  cd_tls_free(s);
  cd_tls_ctx_unref(ctx);
  client_free(&c);
}

Test(tls, a_plaintext_client_is_named) {
  cd_tls_ctx *ctx = server_ctx(NULL, 0);
  cd_tls *s = cd_tls_new(ctx);
  const uint8_t hello[] = {0x05, 0x0a, 0x03, 0x0a, 0x01, 0x31};
  cr_expect_eq(cd_tls_feed(s, hello, sizeof hello), CD_TLS_FAILED);
  cr_expect_str_eq(cd_tls_why(s), "not TLS (a plaintext client on a TLS port)");
  cr_expect_eq(cd_tls_feed(s, hello, sizeof hello), CD_TLS_FAILED, "and stays failed");
  cd_tls_free(s);
  s = cd_tls_new(ctx);
  cr_expect_eq(cd_tls_feed(s, "{\"hello\": {}}\n", 14), CD_TLS_FAILED, "JSON too");
  cd_tls_free(s);
  cd_tls_ctx_unref(ctx);
  cr_expect(cd_tls_looks_like_hello((const uint8_t *)"\x16\x03\x01", 3));
  cr_expect_not(cd_tls_looks_like_hello((const uint8_t *)"{\"h", 3));
  cr_expect_not(cd_tls_looks_like_hello(hello, 3));
}

/* The server's verdict on a client presenting cert (NULL: none). */
static void mutual(const char *cert, const char *why, const char *subject) {
  cd_tls_ctx *ctx = server_ctx("ca.pem", 0);
  cr_expect(cd_tls_ctx_mutual(ctx));
  cd_tls *s = cd_tls_new(ctx);
  client c;
  client_init(&c, cert, 0);
  cd_tls_status st = pump(&c, s);
  if (why) {
    cr_expect_eq(st, CD_TLS_FAILED, "%s refused", cert ? cert : "no certificate");
    cr_expect_str_eq(cd_tls_why(s), why);
    char one;
    size_t k;
    cr_expect_eq(SSL_read_ex(c.ssl, &one, 1, &k), 0, "the client got the server's alert");
    cr_expect_eq(SSL_get_error(c.ssl, 0), SSL_ERROR_SSL, "an alert, not a wait for more bytes");
    ERR_clear_error();
  } else {
    cr_expect_eq(st, CD_TLS_OK, "%s", cd_tls_why(s));
    cr_expect_str_eq(cd_tls_peer_subject(s), subject);
  }
  cd_tls_free(s);
  cd_tls_ctx_unref(ctx);
  client_free(&c);
}

Test(tls, mutual_tls) {
  mutual("client.pem", NULL, "CN=sim-farm");
  mutual(NULL, "no client certificate", NULL);
  mutual("rogue.pem", "client certificate from an unknown CA", NULL);
  mutual("expired.pem", "client certificate expired", NULL);
}

Test(tls, tls12_only_when_allowed) {
  for (int allow = 0; allow <= 1; allow++) {
    cd_tls_ctx *ctx = server_ctx(NULL, allow);
    cd_tls *s = cd_tls_new(ctx);
    client c;
    client_init(&c, NULL, TLS1_2_VERSION);
    cd_tls_status st = pump(&c, s);
    if (allow) {
      cr_expect_eq(st, CD_TLS_OK, "%s", cd_tls_why(s));
      cr_expect_str_eq(cd_tls_version(s), "TLSv1.2");
    } else {
      cr_expect_eq(st, CD_TLS_FAILED);
      cr_expect(strstr(cd_tls_why(s), "TLS handshake failed"), "%s", cd_tls_why(s));
    }
    cd_tls_free(s);
    cd_tls_ctx_unref(ctx);
    client_free(&c);
  }
}

Test(tls, bad_files_are_named) {
  char err[256];
  cd_tls_config cfg = {file("missing.pem"), file("server.key"), NULL, 0};
  cr_expect_null(cd_tls_ctx_new(&cfg, err, sizeof err));
  cr_expect(strstr(err, "cannot use the certificate in") && strstr(err, "missing.pem"), "%s", err);
  cd_tls_config mismatch = {file("server.pem"), file("server2.key"), NULL, 0};
  cr_expect_null(cd_tls_ctx_new(&mismatch, err, sizeof err));
  cr_expect(strstr(err, "server2.key"), "%s", err);
  cr_expect_null(strstr(err, "PRIVATE KEY"), "never the key itself: %s", err);
  cd_tls_config noca = {file("server.pem"), file("server.key"), file("nothing.pem"), 0};
  cr_expect_null(cd_tls_ctx_new(&noca, err, sizeof err));
  cr_expect(strstr(err, "client CAs") && strstr(err, "nothing.pem"), "%s", err);
  cd_tls_config none = {NULL, NULL, NULL, 0};
  cr_expect_null(cd_tls_ctx_new(&none, err, sizeof err));
  cr_expect(strstr(err, "tls_cert_file and tls_key_file"), "%s", err);
}

Test(tls, a_connection_outlives_its_context) {
  cd_tls_ctx *old = server_ctx(NULL, 0);
  cd_tls *s = cd_tls_new(old);
  cd_tls_ctx_unref(old); /* a reload swapped in another */
  cd_tls_config cfg = {file("server2.pem"), file("server2.key"), NULL, 0};
  char err[256];
  cd_tls_ctx *fresh = cd_tls_ctx_new(&cfg, err, sizeof err);
  cr_assert(fresh, "%s", err);
  client c;
  client_init(&c, NULL, 0);
  cr_expect_eq(pump(&c, s), CD_TLS_OK, "%s", cd_tls_why(s));
  X509 *seen = SSL_get1_peer_certificate(c.ssl);
  cr_assert(seen);
  FILE *f = fopen(file("server.pem"), "r");
  X509 *first = PEM_read_X509(f, NULL, NULL, NULL);
  fclose(f);
  cr_expect_eq(X509_cmp(seen, first), 0, "the old certificate, for the connection made before the reload");
  X509_free(seen);
  X509_free(first);
  cd_tls_free(s);
  cd_tls_ctx_unref(fresh);
  client_free(&c);
}
