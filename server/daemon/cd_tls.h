/* cd_tls.h — TLS for the daemon's TCP connections with OpenSSL 3, through
 * memory BIOs: the transport reads ciphertext from the socket and feeds it
 * in, takes out plaintext for the framing, hands in reply bytes and takes
 * out ciphertext to write. Nothing here touches a socket or a loop, so a
 * handshake costs its loop only the cryptography of the bytes that have
 * arrived, never a wait.
 *
 * A context (certificate, key, optional client CA for mutual TLS, TLS 1.3
 * only unless TLS 1.2 is allowed) is reference counted: a SIGHUP reload
 * makes a new one for new connections while each open connection keeps the
 * one it began with. */
#ifndef CD_TLS_H
#define CD_TLS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cd_tls_config {
  const char *cert_file;      /* PEM certificate chain */
  const char *key_file;       /* PEM private key */
  const char *client_ca_file; /* PEM CAs; set = client certificates required and verified; NULL/"" = none */
  int allow_tls12;            /* TLS 1.2 too (default: 1.3 only) */
} cd_tls_config;

typedef struct cd_tls_ctx cd_tls_ctx;

/* A server context from cfg, or NULL with err saying which file and why
 * (never the key's contents). */
cd_tls_ctx *cd_tls_ctx_new(const cd_tls_config *cfg, char *err, size_t errlen);
cd_tls_ctx *cd_tls_ctx_ref(cd_tls_ctx *c);
void cd_tls_ctx_unref(cd_tls_ctx *c);
/* Whether the context verifies client certificates (mutual TLS). */
int cd_tls_ctx_mutual(const cd_tls_ctx *c);

typedef struct cd_tls cd_tls;

/* One server-side connection on ctx (which it holds a reference to). */
cd_tls *cd_tls_new(cd_tls_ctx *ctx);
void cd_tls_free(cd_tls *t);

typedef enum {
  CD_TLS_OK = 0,  /* go on */
  CD_TLS_CLOSED,  /* the peer sent close_notify: no more input */
  CD_TLS_FAILED,  /* the connection cannot go on: cd_tls_why says why */
} cd_tls_status;

/* Ciphertext from the socket: runs the handshake as far as these bytes
 * allow, then decrypts what it can. Plaintext is then read with
 * cd_tls_read; ciphertext to send (handshake replies, alerts) is waiting
 * in cd_tls_out. */
cd_tls_status cd_tls_feed(cd_tls *t, const void *data, size_t n);
/* Decrypted bytes, at most cap: the count, 0 when none are ready. */
size_t cd_tls_read(cd_tls *t, void *buf, size_t cap);
/* Encrypt n reply bytes (only once the handshake is done); the ciphertext
 * waits in cd_tls_out. CD_TLS_FAILED if they cannot be. */
cd_tls_status cd_tls_write(cd_tls *t, const void *data, size_t n);
/* Start a close_notify (the ciphertext waits in cd_tls_out). */
void cd_tls_shutdown(cd_tls *t);
/* Ciphertext waiting to be sent: its length; cd_tls_take copies up to cap
 * of it out and drops it. */
size_t cd_tls_out_pending(const cd_tls *t);
size_t cd_tls_take(cd_tls *t, void *buf, size_t cap);

int cd_tls_handshake_done(const cd_tls *t);
/* Whether the connection failed (a bad record after the handshake too). */
int cd_tls_failed(const cd_tls *t);
/* Why the connection failed, for the log: "not TLS (a plaintext client on
 * a TLS port)", "client certificate expired", "no client certificate",
 * "client certificate from an unknown CA", or OpenSSL's own reason. */
const char *cd_tls_why(const cd_tls *t);
/* After a mutual-TLS handshake: the verified client certificate's subject
 * in RFC 2253 form ("CN=sim-farm"), or "" when there is none. */
const char *cd_tls_peer_subject(const cd_tls *t);
/* "TLSv1.3" or "TLSv1.2", once the handshake is done. */
const char *cd_tls_version(const cd_tls *t);

/* Whether the first bytes a plaintext port received look like a TLS
 * ClientHello (a TLS client on a plaintext port): n >= 3 bytes needed. */
int cd_tls_looks_like_hello(const uint8_t *p, size_t n);

#endif
