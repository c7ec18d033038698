/* cd_test_tls.h — a TLS client for the daemon tests that the rest of the
 * harness can use unchanged: tc_tls_connect returns a plaintext descriptor
 * (one end of a socket pair) and a thread carries its bytes over a real
 * TLS connection (OpenSSL) to the daemon, so tc_send, tc_recv, tc_call and
 * the other helpers of cd_test_client.h speak through TLS. Also: the test
 * certificates (tests/common/make_certs.sh) and a TCP connection from a
 * chosen loopback source address. */
#ifndef CD_TEST_TLS_H
#define CD_TEST_TLS_H

#include <stddef.h>

/* Make the test certificates in a fresh directory under $TMPDIR; returns
 * it (static). Aborts the test when make_certs.sh fails. */
const char *tc_make_certs(void);
/* DIR/name in static storage (four slots, reused in turn). */
const char *tc_cert(const char *name);

typedef struct tc_tls_opts {
  const char *ca;        /* CA file to verify the server with (NULL: the test CA) */
  const char *cert, *key; /* client certificate and key (NULL: none) */
  int tls12_only;        /* offer only TLS 1.2 */
  const char *source;    /* source address, e.g. "127.0.0.2" (NULL: any) */
} tc_tls_opts;

typedef struct tc_tls {
  int fd;                /* the plaintext end for the harness; -1 when the handshake failed */
  char error[256];       /* why it failed */
  char version[16];      /* "TLSv1.3" */
  char server_cn[128];   /* the server certificate's subject as seen */
  unsigned char server_sha256[32]; /* its fingerprint */
  void *priv;
} tc_tls;

/* Connect to 127.0.0.1:port with TLS: 0 with t->fd ready, or -1 with
 * t->error saying why (the handshake failed or the server closed). */
int tc_tls_connect(tc_tls *t, int port, const tc_tls_opts *o);
/* Close the plaintext end and join the thread. */
void tc_tls_close(tc_tls *t);

/* A plain TCP connection to 127.0.0.1:port from source (e.g. "127.0.0.2"). */
int tc_connect_tcp_from(const char *source, int port);

#endif
