/* cd_security.h — the server's TLS context, its principals and its
 * per-address accounting (docs/security.md), and their reload on SIGHUP:
 * a new certificate, key and principals file are read and swapped in for
 * new connections and authentications; connections already open keep the
 * context and principals they began with. A reload that fails keeps what
 * was there and logs why.
 *
 * Shared by every loop: the current context and principals are read under
 * the mutex (a reference taken, then the lock let go); the per-address
 * table has its own lock (cd_addrs.h); the refusal counters are atomic. */
#ifndef CD_SECURITY_H
#define CD_SECURITY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "cd_addrs.h"
#include "cd_config.h"
#include "cd_principals.h"
#include "cd_tls.h"

/* Kinds of refusal, each logged at most once per refusal_log_window_ms. */
typedef enum {
  CD_REFUSED_PER_ADDRESS = 0, /* max_connections_per_address */
  CD_REFUSED_LOCKED_OUT,      /* an address locked out after failed authentications */
  CD_REFUSED_HTTP,            /* the HTTP port's connection limit */
  CD_REFUSED_KINDS
} cd_refusal;

typedef struct cd_security {
  pthread_mutex_t mu;
  cd_tls_ctx *tls;            /* current context; NULL = no TLS */
  cd_principals *principals;  /* current principals; NULL = authentication off */
  cd_addrs *addrs;
  int tls_required;           /* plaintext TCP refused */
  int have_metrics_token;
  uint8_t metrics_token_sha256[32];
  uv_signal_t sighup;
  int sighup_started;
  const cd_config *cfg;
  _Atomic uint64_t refused[CD_REFUSED_KINDS];  /* since start */
  _Atomic uint64_t logged_at_ms[CD_REFUSED_KINDS], logged_count[CD_REFUSED_KINDS];
  _Atomic uint64_t reloads, reload_failures;
} cd_security;

/* Read the certificate, key and principals the config names and start the
 * SIGHUP handler on loop; 0, or -1 with the reason logged. cfg must
 * outlive sec. */
int cd_security_init(cd_security *sec, const cd_config *cfg, uv_loop_t *loop);
/* Stop the SIGHUP handler (on loop's thread, before the loop closes). */
void cd_security_stop(cd_security *sec);
void cd_security_free(cd_security *sec);
/* Read the files again now (what SIGHUP does); 0 when all were taken. */
int cd_security_reload(cd_security *sec);

/* The current TLS context / principals, referenced (the caller unrefs),
 * or NULL when there is none. */
cd_tls_ctx *cd_security_tls(cd_security *sec);
cd_principals *cd_security_principals(cd_security *sec);
int cd_security_auth_on(cd_security *sec);

/* Whether a bearer token presented for /metrics is the configured one
 * (constant time); 1 when /metrics needs no token. */
int cd_security_metrics_token_ok(cd_security *sec, const char *token, size_t len);

/* Count one refusal of a kind; returns how many went unlogged including
 * this one when it is time to log them (at most once per window), else
 * 0. */
uint64_t cd_security_refused(cd_security *sec, cd_refusal kind, uint64_t now_ms, uint64_t window_ms);

#endif
