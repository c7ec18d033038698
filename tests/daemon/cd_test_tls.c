/* cd_test_tls.c — see cd_test_tls.h. */
#include "cd_test_tls.h"

#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "td_proc.h"

#ifndef CONTACTD_SOURCE_DIR
#error "CONTACTD_SOURCE_DIR must name the source tree"
#endif

static char cert_dir[300];

const char *tc_make_certs(void) {
  if (td_mkdtemp(cert_dir, sizeof cert_dir, "certs-") != 0) cr_assert_fail("cannot make a directory for certificates");
  char cmd[800];
  snprintf(cmd, sizeof cmd, "sh %s/tests/common/make_certs.sh %s", CONTACTD_SOURCE_DIR, cert_dir);
  cr_assert_eq(system(cmd), 0, "tests/common/make_certs.sh failed");
  return cert_dir;
}

const char *tc_cert(const char *name) {
  static char buf[4][400];
  static int k;
  char *b = buf[k++ % 4];
  snprintf(b, sizeof buf[0], "%s/%s", cert_dir, name);
  return b;
}

int tc_connect_tcp_from(const char *source, int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return -1;
  struct sockaddr_in a = {.sin_family = AF_INET};
  if (source) {
    inet_pton(AF_INET, source, &a.sin_addr);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
      close(fd);
      return -1;
    }
  }
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

typedef struct bridge {
  SSL_CTX *ctx;
  SSL *ssl;
  int tcp, inner; /* inner: the bridge's end of the socket pair */
  pthread_t thread;
} bridge;

/* Whether an SSL call that returned rc may simply be retried once the
 * socket is ready (the socket is non-blocking in the bridge). */
static int retry(SSL *ssl, int rc, int *want_write) {
  int e = SSL_get_error(ssl, rc);
  *want_write = e == SSL_ERROR_WANT_WRITE;
  return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

static int ssl_write_all(bridge *b, const char *p, size_t n) {
  while (n) {
    size_t w = 0;
    int rc = SSL_write_ex(b->ssl, p, n, &w), ww;
    if (rc == 1) {
      p += w;
      n -= w;
      continue;
    }
    if (!retry(b->ssl, rc, &ww)) return -1;
    struct pollfd q = {b->tcp, (short)(ww ? POLLOUT : POLLIN), 0};
    poll(&q, 1, 1000);
  }
  return 0;
}

/* Carry bytes both ways until either side ends. The TCP side is
 * non-blocking: a read that finds only session tickets, or half a record,
 * must not keep the bridge from the harness's next request. */
static void *pump(void *arg) {
  bridge *b = arg;
  char buf[16384];
  fcntl(b->tcp, F_SETFL, fcntl(b->tcp, F_GETFL) | O_NONBLOCK);
  for (;;) {
    if (SSL_pending(b->ssl) == 0) {
      struct pollfd p[2] = {{b->tcp, POLLIN, 0}, {b->inner, POLLIN, 0}};
      if (poll(p, 2, -1) < 0) break;
      if (p[1].revents) {
        ssize_t n = read(b->inner, buf, sizeof buf);
        if (n <= 0 || ssl_write_all(b, buf, (size_t)n)) break;
      }
      if (!p[0].revents) continue;
    }
    size_t n = 0;
    int rc = SSL_read_ex(b->ssl, buf, sizeof buf, &n), ww;
    if (rc != 1) {
      if (retry(b->ssl, rc, &ww)) continue;
      break;
    }
    for (size_t off = 0; off < n;) {
      ssize_t w = write(b->inner, buf + off, n - off);
      if (w <= 0) goto out;
      off += (size_t)w;
    }
  }
out:
  shutdown(b->inner, SHUT_RDWR);
  return NULL;
}

static SSL_CTX *client_ctx(const tc_tls_opts *o, char *err, size_t errlen) {
  SSL_CTX *c = SSL_CTX_new(TLS_client_method());
  if (!c) return NULL;
  SSL_CTX_set_verify(c, SSL_VERIFY_PEER, NULL);
  if (SSL_CTX_load_verify_locations(c, o && o->ca ? o->ca : tc_cert("ca.pem"), NULL) != 1)
    snprintf(err, errlen, "cannot load the CA");
  if (o && o->tls12_only) SSL_CTX_set_max_proto_version(c, TLS1_2_VERSION);
  if (o && o->cert && (SSL_CTX_use_certificate_file(c, o->cert, SSL_FILETYPE_PEM) != 1 ||
                       SSL_CTX_use_PrivateKey_file(c, o->key, SSL_FILETYPE_PEM) != 1))
    snprintf(err, errlen, "cannot load the client certificate");
  return c;
}

static void note_server(tc_tls *t, SSL *ssl) {
  snprintf(t->version, sizeof t->version, "%s", SSL_get_version(ssl));
  X509 *x = SSL_get1_peer_certificate(ssl);
  if (!x) return;
  X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, t->server_cn, sizeof t->server_cn);
  unsigned n = 0;
  X509_digest(x, EVP_sha256(), t->server_sha256, &n);
  X509_free(x);
}

int tc_tls_connect(tc_tls *t, int port, const tc_tls_opts *o) {
  signal(SIGPIPE, SIG_IGN); /* the bridge writes to sockets the daemon may close */
  memset(t, 0, sizeof *t);
  t->fd = -1;
  bridge *b = calloc(1, sizeof *b);
  cr_assert(b);
  b->ctx = client_ctx(o, t->error, sizeof t->error);
  b->tcp = tc_connect_tcp_from(o ? o->source : NULL, port);
  cr_assert(b->ctx && !t->error[0] && b->tcp >= 0, "%s", t->error[0] ? t->error : "connect failed");
  b->ssl = SSL_new(b->ctx);
  SSL_set_fd(b->ssl, b->tcp);
  SSL_set_tlsext_host_name(b->ssl, "localhost");
  SSL_set1_host(b->ssl, "localhost");
  ERR_clear_error();
  int rc = SSL_connect(b->ssl);
  /* TLS 1.3: the client's handshake ends before the server has checked its
   * certificate; a refusal arrives as an alert where session tickets would */
  if (rc == 1 && o && o->cert) {
    char probe;
    struct pollfd p = {b->tcp, POLLIN, 0};
    int fl = fcntl(b->tcp, F_GETFL);
    fcntl(b->tcp, F_SETFL, fl | O_NONBLOCK);
    if (poll(&p, 1, 1000) == 1) {
      int k = SSL_peek(b->ssl, &probe, 1);
      if (k <= 0 && SSL_get_error(b->ssl, k) != SSL_ERROR_WANT_READ) rc = -1;
    }
    fcntl(b->tcp, F_SETFL, fl);
  }
  if (rc != 1) {
    unsigned long e = ERR_get_error();
    snprintf(t->error, sizeof t->error, "TLS handshake failed: %s",
             e ? ERR_reason_error_string(e) : "the server closed the connection");
    SSL_free(b->ssl);
    SSL_CTX_free(b->ctx);
    close(b->tcp);
    free(b);
    return -1;
  }
  note_server(t, b->ssl);
  int sp[2];
  cr_assert(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
  b->inner = sp[1];
  t->fd = sp[0];
  t->priv = b;
  cr_assert(pthread_create(&b->thread, NULL, pump, b) == 0);
  return 0;
}

void tc_tls_close(tc_tls *t) {
  bridge *b = t->priv;
  if (!b) return;
  if (t->fd >= 0) shutdown(t->fd, SHUT_RDWR);
  shutdown(b->tcp, SHUT_RDWR);
  pthread_join(b->thread, NULL);
  if (t->fd >= 0) close(t->fd);
  close(b->inner);
  SSL_free(b->ssl);
  SSL_CTX_free(b->ctx);
  close(b->tcp);
  free(b);
  t->priv = NULL;
  t->fd = -1;
}
