/* cd_tls.c — see cd_tls.h. One SSL per connection between two memory BIOs:
 * `in` holds ciphertext fed from the socket, `out` ciphertext to write. */
#include "cd_tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cd_tls_ctx {
  atomic_int refs;
  SSL_CTX *ssl;
  int mutual;
};

struct cd_tls {
  cd_tls_ctx *ctx;
  SSL *ssl;
  BIO *in, *out;
  int done;       /* handshake finished */
  int failed;
  int saw_first;  /* the first byte was checked (plaintext on a TLS port) */
  char why[160];
  char subject[256];
};

/* OpenSSL's reason for the last error, its queue emptied. */
static void openssl_reason(char *buf, size_t cap) {
  unsigned long e = ERR_get_error(), last = e;
  while (e) {
    last = e;
    e = ERR_get_error();
  }
  const char *r = last ? ERR_reason_error_string(last) : NULL;
  snprintf(buf, cap, "%s", r ? r : "unknown error");
}

static int fail(char *err, size_t errlen, const char *what, const char *file) {
  char r[128];
  openssl_reason(r, sizeof r);
  snprintf(err, errlen, "tls: %s %s: %s", what, file, r);
  return -1;
}

static int load(SSL_CTX *s, const cd_tls_config *cfg, char *err, size_t errlen) {
  if (!cfg->cert_file || !cfg->cert_file[0] || !cfg->key_file || !cfg->key_file[0]) {
    snprintf(err, errlen, "tls: tls_cert_file and tls_key_file are both needed");
    return -1;
  }
  if (SSL_CTX_use_certificate_chain_file(s, cfg->cert_file) != 1)
    return fail(err, errlen, "cannot use the certificate in", cfg->cert_file);
  if (SSL_CTX_use_PrivateKey_file(s, cfg->key_file, SSL_FILETYPE_PEM) != 1)
    return fail(err, errlen, "cannot use the private key in", cfg->key_file);
  if (SSL_CTX_check_private_key(s) != 1)
    return fail(err, errlen, "the private key does not match the certificate:", cfg->key_file);
  if (cfg->client_ca_file && cfg->client_ca_file[0]) {
    if (SSL_CTX_load_verify_locations(s, cfg->client_ca_file, NULL) != 1)
      return fail(err, errlen, "cannot read the client CAs in", cfg->client_ca_file);
    STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(cfg->client_ca_file);
    if (!names) return fail(err, errlen, "no CA certificate in", cfg->client_ca_file);
    SSL_CTX_set_client_CA_list(s, names);
    SSL_CTX_set_verify(s, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
  }
  return 0;
}

cd_tls_ctx *cd_tls_ctx_new(const cd_tls_config *cfg, char *err, size_t errlen) {
  ERR_clear_error();
  SSL_CTX *s = SSL_CTX_new(TLS_server_method());
  cd_tls_ctx *c = s ? calloc(1, sizeof *c) : NULL;
  if (!c) {
    SSL_CTX_free(s);
    snprintf(err, errlen, "tls: out of memory");
    return NULL;
  }
  SSL_CTX_set_min_proto_version(s, cfg->allow_tls12 ? TLS1_2_VERSION : TLS1_3_VERSION);
  /* memory BIOs: a write may complete partly and resume with another buffer */
  SSL_CTX_set_mode(s, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_session_cache_mode(s, SSL_SESS_CACHE_SERVER);
  SSL_CTX_set_session_id_context(s, (const unsigned char *)"contactd", 8);
  if (load(s, cfg, err, errlen)) {
    SSL_CTX_free(s);
    free(c);
    return NULL;
  }
  atomic_init(&c->refs, 1);
  c->ssl = s;
  c->mutual = cfg->client_ca_file && cfg->client_ca_file[0];
  return c;
}

cd_tls_ctx *cd_tls_ctx_ref(cd_tls_ctx *c) {
  if (c) atomic_fetch_add(&c->refs, 1);
  return c;
}

void cd_tls_ctx_unref(cd_tls_ctx *c) {
  if (!c || atomic_fetch_sub(&c->refs, 1) != 1) return;
  SSL_CTX_free(c->ssl);
  free(c);
}

int cd_tls_ctx_mutual(const cd_tls_ctx *c) { return c->mutual; }

cd_tls *cd_tls_new(cd_tls_ctx *ctx) {
  cd_tls *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->ssl = SSL_new(ctx->ssl);
  t->in = BIO_new(BIO_s_mem());
  t->out = BIO_new(BIO_s_mem());
  if (!t->ssl || !t->in || !t->out) {
    SSL_free(t->ssl);
    BIO_free(t->in);
    BIO_free(t->out);
    free(t);
    return NULL;
  }
  /* an empty memory BIO answers "retry", not end of file */
  BIO_set_mem_eof_return(t->in, -1);
  BIO_set_mem_eof_return(t->out, -1);
  SSL_set_bio(t->ssl, t->in, t->out); /* the SSL owns both */
  SSL_set_accept_state(t->ssl);
  t->ctx = cd_tls_ctx_ref(ctx);
  return t;
}

void cd_tls_free(cd_tls *t) {
  if (!t) return;
  SSL_free(t->ssl);
  cd_tls_ctx_unref(t->ctx);
  free(t);
}

/* The handshake failed: name why, most specific first. */
static void handshake_failed(cd_tls *t) {
  long v = SSL_get_verify_result(t->ssl);
  char r[128];
  openssl_reason(r, sizeof r);
  if (t->ctx->mutual && v == X509_V_ERR_CERT_HAS_EXPIRED)
    snprintf(t->why, sizeof t->why, "client certificate expired");
  else if (t->ctx->mutual && v == X509_V_ERR_CERT_NOT_YET_VALID)
    snprintf(t->why, sizeof t->why, "client certificate not yet valid");
  else if (t->ctx->mutual && (v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY ||
                              v == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT || v == X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN ||
                              v == X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT || v == X509_V_ERR_CERT_SIGNATURE_FAILURE))
    snprintf(t->why, sizeof t->why, "client certificate from an unknown CA");
  else if (t->ctx->mutual && v != X509_V_OK)
    snprintf(t->why, sizeof t->why, "client certificate refused: %s", X509_verify_cert_error_string(v));
  else if (t->ctx->mutual && strstr(r, "peer did not return a certificate"))
    snprintf(t->why, sizeof t->why, "no client certificate");
  else
    snprintf(t->why, sizeof t->why, "TLS handshake failed: %s", r);
}

static void note_subject(cd_tls *t) {
  X509 *peer = SSL_get0_peer_certificate(t->ssl);
  if (!peer || SSL_get_verify_result(t->ssl) != X509_V_OK) return;
  BIO *b = BIO_new(BIO_s_mem());
  if (!b) return;
  if (X509_NAME_print_ex(b, X509_get_subject_name(peer), 0, XN_FLAG_RFC2253) >= 0) {
    int n = BIO_read(b, t->subject, (int)sizeof t->subject - 1);
    t->subject[n > 0 ? n : 0] = 0;
  }
  BIO_free(b);
}

cd_tls_status cd_tls_feed(cd_tls *t, const void *data, size_t n) {
  if (t->failed) return CD_TLS_FAILED;
  if (!n) return CD_TLS_OK;
  if (!t->saw_first) {
    t->saw_first = 1;
    /* every TLS connection opens with a handshake record (content type 22) */
    if (((const uint8_t *)data)[0] != 0x16) {
      t->failed = 1;
      snprintf(t->why, sizeof t->why, "not TLS (a plaintext client on a TLS port)");
      return CD_TLS_FAILED;
    }
  }
  if (BIO_write(t->in, data, (int)n) != (int)n) {
    t->failed = 1;
    snprintf(t->why, sizeof t->why, "out of memory");
    return CD_TLS_FAILED;
  }
  if (t->done) return CD_TLS_OK;
  ERR_clear_error();
  int rc = SSL_do_handshake(t->ssl);
  if (rc == 1) {
    t->done = 1;
    note_subject(t);
    return CD_TLS_OK;
  }
  int e = SSL_get_error(t->ssl, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return CD_TLS_OK;
  t->failed = 1;
  handshake_failed(t);
  return CD_TLS_FAILED;
}

size_t cd_tls_read(cd_tls *t, void *buf, size_t cap) {
  if (!t->done || t->failed || !cap) return 0;
  size_t got = 0;
  ERR_clear_error();
  if (SSL_read_ex(t->ssl, buf, cap, &got) == 1) return got;
  int e = SSL_get_error(t->ssl, 0);
  if (e == SSL_ERROR_ZERO_RETURN) {
    snprintf(t->why, sizeof t->why, "the peer closed TLS");
  } else if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
    char r[128];
    openssl_reason(r, sizeof r);
    t->failed = 1;
    snprintf(t->why, sizeof t->why, "TLS error: %s", r);
  }
  return 0;
}

cd_tls_status cd_tls_write(cd_tls *t, const void *data, size_t n) {
  if (t->failed || !t->done) return CD_TLS_FAILED;
  size_t done = 0;
  while (done < n) {
    size_t w = 0;
    ERR_clear_error();
    if (SSL_write_ex(t->ssl, (const char *)data + done, n - done, &w) != 1) {
      char r[128];
      openssl_reason(r, sizeof r);
      t->failed = 1;
      snprintf(t->why, sizeof t->why, "TLS error: %s", r);
      return CD_TLS_FAILED;
    }
    done += w;
  }
  return CD_TLS_OK;
}

void cd_tls_shutdown(cd_tls *t) {
  if (t->done && !t->failed) SSL_shutdown(t->ssl);
}

size_t cd_tls_out_pending(const cd_tls *t) { return BIO_ctrl_pending(t->out); }

size_t cd_tls_take(cd_tls *t, void *buf, size_t cap) {
  int n = BIO_read(t->out, buf, cap > (size_t)INT32_MAX ? INT32_MAX : (int)cap);
  return n > 0 ? (size_t)n : 0;
}

int cd_tls_handshake_done(const cd_tls *t) { return t->done; }
int cd_tls_failed(const cd_tls *t) { return t->failed; }
const char *cd_tls_why(const cd_tls *t) { return t->why[0] ? t->why : "no error"; }
const char *cd_tls_peer_subject(const cd_tls *t) { return t->subject; }
const char *cd_tls_version(const cd_tls *t) { return t->done ? SSL_get_version(t->ssl) : ""; }

int cd_tls_looks_like_hello(const uint8_t *p, size_t n) {
  /* a handshake record (22) of TLS 1.0 to 1.3's record version 3.x */
  return n >= 3 && p[0] == 0x16 && p[1] == 0x03 && p[2] <= 0x04;
}
