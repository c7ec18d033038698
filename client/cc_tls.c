/* cc_tls.c — TLS for the C client library through memory BIOs (see
 * cc_internal.h): the context made from cc_options, and one connection's
 * handshake, encryption and decryption as steps on bytes. No socket I/O
 * happens here: cc_wire.c moves the ciphertext with the same poll, send and
 * recv it uses for plaintext, so deadlines and broken connections behave
 * the same with and without TLS. */
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_internal.h"

/* OpenSSL's reason for the last failure (the queue is emptied). */
static void last_error(char *why, size_t n, const char *what) {
  unsigned long e = ERR_get_error(), next;
  while ((next = ERR_get_error()) != 0) e = next; /* the last is the most specific */
  char buf[256] = "unknown error";
  if (e) ERR_error_string_n(e, buf, sizeof buf);
  snprintf(why, n, "%s: %s", what, buf);
}

int cc_tls_setup(cc_client *c, char *why, size_t n) {
  const cc_options *o = &c->opt;
  if (!o->tls) return 0;
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) {
    last_error(why, n, "TLS: cannot make a context");
    return -1;
  }
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
  if (o->tls_ca_file ? SSL_CTX_load_verify_locations(ctx, o->tls_ca_file, NULL) != 1
                     : SSL_CTX_set_default_verify_paths(ctx) != 1) {
    last_error(why, n, o->tls_ca_file ? "TLS: cannot load the CA file" : "TLS: cannot load the system's CAs");
    if (o->tls_ca_file) {
      size_t l = strlen(why);
      snprintf(why + l, n - l, " (%s)", o->tls_ca_file);
    }
    SSL_CTX_free(ctx);
    return -1;
  }
  if (o->tls_cert_file || o->tls_key_file) {
    const char *cert = o->tls_cert_file, *key = o->tls_key_file ? o->tls_key_file : o->tls_cert_file;
    if (!cert) {
      snprintf(why, n, "TLS: a client key (%s) without a client certificate", key);
      SSL_CTX_free(ctx);
      return -1;
    }
    const char *what = NULL, *file = NULL;
    if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1) what = "cannot load the client certificate", file = cert;
    else if (SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) what = "cannot load the client key", file = key;
    else if (SSL_CTX_check_private_key(ctx) != 1) what = "the client key does not match the certificate", file = key;
    if (what) {
      char w[160];
      snprintf(w, sizeof w, "TLS: %s", what);
      last_error(why, n, w);
      size_t l = strlen(why);
      snprintf(why + l, n - l, " (%s)", file);
      SSL_CTX_free(ctx);
      return -1;
    }
  }
  c->tls_ctx = ctx;
  return 0;
}

void cc_tls_free(cc_client *c) {
  cc_tls_drop(c);
  SSL_CTX_free(c->tls_ctx);
  c->tls_ctx = NULL;
}

void cc_tls_drop(cc_client *c) {
  SSL_free(c->ssl); /* frees its BIOs too */
  c->ssl = NULL;
}

/* The host part of "host:port" or "[v6]:port" ("" = 127.0.0.1, as cc_wire_open). */
static void host_of(const char *addr, char *host, size_t n) {
  const char *colon = strrchr(addr, ':');
  size_t len = colon ? (size_t)(colon - addr) : strlen(addr);
  if (addr[0] == '[') {
    const char *e = strchr(addr, ']');
    addr++;
    len = e ? (size_t)(e - addr) : 0;
  }
  if (len >= n) len = n - 1;
  memcpy(host, addr, len);
  host[len] = 0;
  if (!host[0]) snprintf(host, n, "127.0.0.1");
}

int cc_tls_begin(cc_client *c, const char *addr, char *why, size_t n) {
  cc_tls_drop(c);
  SSL *ssl = SSL_new(c->tls_ctx);
  BIO *in = BIO_new(BIO_s_mem()), *out = BIO_new(BIO_s_mem());
  if (!ssl || !in || !out) {
    SSL_free(ssl);
    BIO_free(in);
    BIO_free(out);
    last_error(why, n, "TLS: out of memory");
    return -1;
  }
  SSL_set_bio(ssl, in, out);
  SSL_set_connect_state(ssl);
  char host[256];
  if (c->opt.tls_server_name) snprintf(host, sizeof host, "%s", c->opt.tls_server_name);
  else host_of(addr, host, sizeof host);
  unsigned char ip[16];
  int is_ip = inet_pton(AF_INET, host, ip) == 1 || inet_pton(AF_INET6, host, ip) == 1;
  /* An IP address is checked against the certificate's IP names and sent
   * without SNI (RFC 6066 allows only host names there). */
  int ok = is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) == 1
                 : SSL_set_tlsext_host_name(ssl, host) == 1 && SSL_set1_host(ssl, host) == 1;
  if (!ok) {
    SSL_free(ssl);
    last_error(why, n, "TLS: cannot set the server name to verify");
    return -1;
  }
  c->ssl = ssl;
  c->tls_in = in;
  c->tls_out = out;
  return 0;
}

/* After a failed step: why, with the certificate's verdict when that was it. */
static int failed(cc_client *c, int rc, const char *stage, char *why, size_t n) {
  int e = SSL_get_error(c->ssl, rc);
  if (e == SSL_ERROR_ZERO_RETURN) {
    snprintf(why, n, "the server closed the TLS session");
    return CC_EUNAVAILABLE;
  }
  long v = SSL_get_verify_result(c->ssl);
  if (v != X509_V_OK) {
    ERR_clear_error();
    snprintf(why, n, "TLS %s: the server's certificate is not trusted: %s", stage,
             X509_verify_cert_error_string(v));
    return CC_EUNAUTHENTICATED;
  }
  /* The server's alert about this client's certificate (mutual TLS): no
   * reconnection will mend it. */
  int r = ERR_GET_REASON(ERR_peek_last_error());
  int refused = r == SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED || r == SSL_R_SSLV3_ALERT_BAD_CERTIFICATE ||
                r == SSL_R_TLSV1_ALERT_UNKNOWN_CA || r == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED ||
                r == SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED || r == SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN ||
                r == SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE || r == SSL_R_TLSV1_ALERT_ACCESS_DENIED;
  char w[96];
  snprintf(w, sizeof w, refused ? "TLS %s: the server refused this client's certificate" : "TLS %s failed", stage);
  last_error(why, n, w);
  return refused ? CC_EUNAUTHENTICATED : CC_EUNAVAILABLE;
}

int cc_tls_handshake(cc_client *c, char *why, size_t n) {
  ERR_clear_error();
  int rc = SSL_do_handshake(c->ssl);
  if (rc == 1) return 1;
  int e = SSL_get_error(c->ssl, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
  return -failed(c, rc, "handshake", why, n);
}

int cc_tls_encrypt(cc_client *c, const void *buf, size_t len, char *why, size_t n) {
  ERR_clear_error();
  size_t w = 0;
  /* A memory BIO takes everything: SSL_write only fails on a broken session. */
  int rc = SSL_write_ex(c->ssl, buf, len, &w);
  if (rc == 1 && w == len) return 0;
  return -failed(c, rc, "write", why, n);
}

size_t cc_tls_outgoing(cc_client *c, const uint8_t **p) {
  char *data = NULL;
  long len = BIO_get_mem_data(c->tls_out, &data);
  *p = (const uint8_t *)data;
  return len > 0 ? (size_t)len : 0;
}

void cc_tls_sent(cc_client *c, size_t len) {
  char sink[4096];
  while (len) {
    int k = BIO_read(c->tls_out, sink, (int)(len < sizeof sink ? len : sizeof sink));
    if (k <= 0) break;
    len -= (size_t)k;
  }
}

int cc_tls_incoming(cc_client *c, const void *buf, size_t len) {
  return BIO_write(c->tls_in, buf, (int)len) == (int)len ? 0 : -1;
}

int cc_tls_decrypt(cc_client *c, void *buf, size_t cap, size_t *got, char *why, size_t n) {
  ERR_clear_error();
  *got = 0;
  int rc = SSL_read_ex(c->ssl, buf, cap, got);
  if (rc == 1) return 1;
  int e = SSL_get_error(c->ssl, rc);
  if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) return 0;
  return -failed(c, rc, "read", why, n);
}
