/* cd_security.c — see cd_security.h. */
#include "cd_security.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "cd_limits.h"
#include "cd_log.h"

/* A token file: its first line (without the line break), hashed; the
 * token itself is wiped. 0, or -1 with err naming the file and why. */
static int hash_token_file(const char *path, uint8_t out[32], char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
    return -1;
  }
  char buf[CD_TOKEN_MAX_BYTES + 2];
  size_t n = fread(buf, 1, sizeof buf, f);
  fclose(f);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r')) n--;
  unsigned hl = 0;
  int rc = 0;
  if (n == 0 || n > CD_TOKEN_MAX_BYTES || memchr(buf, '\n', n)) {
    snprintf(err, errlen, "%s must hold one token of 1 to %d bytes on its first line", path, CD_TOKEN_MAX_BYTES);
    rc = -1;
  } else if (!EVP_Digest(buf, n, out, &hl, EVP_sha256(), NULL)) {
    snprintf(err, errlen, "cannot hash the token in %s", path);
    rc = -1;
  }
  OPENSSL_cleanse(buf, sizeof buf);
  return rc;
}

/* Everything the config names, read now; on success the old ones are
 * swapped out (and released) under the lock. */
static int load(cd_security *sec, int first) {
  const cd_config *cfg = sec->cfg;
  char err[1200] = "";
  cd_tls_ctx *tls = NULL;
  cd_principals *pr = NULL;
  uint8_t mt[32];
  int ok = 1, mt_ok = 0;
  if (cfg->tls_cert_file[0] || cfg->tls_key_file[0]) {
    cd_tls_config tc = {cfg->tls_cert_file, cfg->tls_key_file, cfg->tls_client_ca_file, cfg->tls_allow_tls12};
    if (!(tls = cd_tls_ctx_new(&tc, err, sizeof err))) {
      ok = 0;
      CD_ERROR(first ? "cannot set up TLS" : "TLS reload failed: keeping the certificate in use", "error=\"%s\"",
               err);
    }
  } else if (cfg->tls_client_ca_file[0]) {
    ok = 0;
    CD_ERROR("tls_client_ca_file needs tls_cert_file and tls_key_file", NULL);
  }
  if (cfg->principals_file[0] && !(pr = cd_principals_load(cfg->principals_file, err, sizeof err))) {
    ok = 0;
    CD_ERROR(first ? "cannot read the principals" : "principals reload failed: keeping the principals in use",
             "error=\"%s\"", err);
  }
  if (cfg->metrics_token_file[0] && !(mt_ok = hash_token_file(cfg->metrics_token_file, mt, err, sizeof err) == 0)) {
    ok = 0;
    CD_ERROR(first ? "cannot read the metrics token" : "metrics token reload failed: keeping the token in use",
             "error=\"%s\"", err);
  }
  if (first && !ok) {
    cd_tls_ctx_unref(tls);
    cd_principals_unref(pr);
    return -1;
  }
  /* a reload takes what read well and keeps the rest */
  pthread_mutex_lock(&sec->mu);
  cd_tls_ctx *old_tls = NULL;
  cd_principals *old_pr = NULL;
  if (tls) {
    old_tls = sec->tls;
    sec->tls = tls;
  }
  if (pr) {
    old_pr = sec->principals;
    sec->principals = pr;
  }
  if (mt_ok) {
    memcpy(sec->metrics_token_sha256, mt, sizeof mt);
    sec->have_metrics_token = 1;
  }
  pthread_mutex_unlock(&sec->mu);
  OPENSSL_cleanse(mt, sizeof mt);
  cd_tls_ctx_unref(old_tls);
  cd_principals_unref(old_pr);
  return ok ? 0 : -1;
}

int cd_security_reload(cd_security *sec) {
  int rc = load(sec, 0);
  atomic_fetch_add(rc ? &sec->reload_failures : &sec->reloads, 1);
  pthread_mutex_lock(&sec->mu);
  size_t n = sec->principals ? sec->principals->n : 0;
  int tls = sec->tls != NULL;
  pthread_mutex_unlock(&sec->mu);
  if (!rc) CD_INFO("reloaded", "tls=%s principals=%zu", tls ? "on" : "off", n);
  return rc;
}

static void on_sighup(uv_signal_t *h, int signum) {
  (void)signum;
  cd_security_reload(h->data);
}

int cd_security_init(cd_security *sec, const cd_config *cfg, uv_loop_t *loop) {
  memset(sec, 0, sizeof *sec);
  pthread_mutex_init(&sec->mu, NULL);
  sec->cfg = cfg;
  const cd_limits *l = &cfg->limits;
  cd_addrs_config ac = {.max_per_address = l->max_connections_per_address,
                        .fail_max = l->auth_fail_max,
                        .fail_window_ms = l->auth_fail_window_ms,
                        .fail_delay_ms = l->auth_fail_delay_ms,
                        .lockout_ms = l->auth_lockout_ms,
                        .max_entries = (size_t)(2 * l->max_connections + 1024)};
  sec->addrs = cd_addrs_new(&ac);
  if (!sec->addrs) {
    CD_ERROR("out of memory at startup", NULL);
    return -1;
  }
  sec->tls_required = cd_config_tls_required(cfg);
  if (sec->tls_required && !cfg->tls_cert_file[0]) {
    CD_ERROR("tls_required is true but no tls_cert_file is set", NULL);
    return -1;
  }
  if (load(sec, 1)) return -1;
  uv_signal_init(loop, &sec->sighup);
  sec->sighup.data = sec;
  uv_signal_start(&sec->sighup, on_sighup, SIGHUP);
  sec->sighup_started = 1;
  return 0;
}

void cd_security_stop(cd_security *sec) {
  if (!sec->sighup_started) return;
  sec->sighup_started = 0;
  uv_signal_stop(&sec->sighup);
  uv_close((uv_handle_t *)&sec->sighup, NULL);
}

void cd_security_free(cd_security *sec) {
  cd_tls_ctx_unref(sec->tls);
  cd_principals_unref(sec->principals);
  cd_addrs_free(sec->addrs);
  sec->tls = NULL;
  sec->principals = NULL;
  sec->addrs = NULL;
  OPENSSL_cleanse(sec->metrics_token_sha256, sizeof sec->metrics_token_sha256);
  pthread_mutex_destroy(&sec->mu);
}

cd_tls_ctx *cd_security_tls(cd_security *sec) {
  pthread_mutex_lock(&sec->mu);
  cd_tls_ctx *c = cd_tls_ctx_ref(sec->tls);
  pthread_mutex_unlock(&sec->mu);
  return c;
}

cd_principals *cd_security_principals(cd_security *sec) {
  pthread_mutex_lock(&sec->mu);
  cd_principals *p = cd_principals_ref(sec->principals);
  pthread_mutex_unlock(&sec->mu);
  return p;
}

int cd_security_auth_on(cd_security *sec) { return sec->cfg && sec->cfg->principals_file[0] != 0; }

int cd_security_metrics_token_ok(cd_security *sec, const char *token, size_t len) {
  pthread_mutex_lock(&sec->mu); /* a reload may be setting it */
  int need = sec->have_metrics_token;
  pthread_mutex_unlock(&sec->mu);
  if (!need) return 1;
  if (!token || !len || len > CD_TOKEN_MAX_BYTES) return 0;
  uint8_t h[32];
  unsigned hl = 0;
  if (!EVP_Digest(token, len, h, &hl, EVP_sha256(), NULL)) return 0;
  pthread_mutex_lock(&sec->mu);
  int ok = CRYPTO_memcmp(h, sec->metrics_token_sha256, sizeof h) == 0;
  pthread_mutex_unlock(&sec->mu);
  OPENSSL_cleanse(h, sizeof h);
  return ok;
}

uint64_t cd_security_refused(cd_security *sec, cd_refusal kind, uint64_t now_ms, uint64_t window_ms) {
  atomic_fetch_add(&sec->refused[kind], 1);
  atomic_fetch_add(&sec->logged_count[kind], 1);
  uint64_t last = atomic_load(&sec->logged_at_ms[kind]);
  if (last && now_ms - last < window_ms) return 0;
  if (!atomic_compare_exchange_strong(&sec->logged_at_ms[kind], &last, now_ms ? now_ms : 1)) return 0;
  return atomic_exchange(&sec->logged_count[kind], 0);
}
