/* cd_config.h — the daemon's configuration: built-in defaults, then a JSON
 * config file (--config), then command-line flags, each overriding the last. */
#ifndef CD_CONFIG_H
#define CD_CONFIG_H

#include <stddef.h>

#include "cd_limits.h"

typedef struct cd_config {
  char listen[256];    /* "HOST:PORT" for TCP; "" = no TCP listener */
  char unix_path[108]; /* Unix socket path; "" = none */
  int workers;         /* worker threads; default: online cores */
  int http_port;       /* the HTTP port (--http-port, alias --metrics-port): /metrics, health, the
                          viewer; -1 = off, 0 = ephemeral */
  char http_address[64]; /* address the HTTP port binds (default loopback) */
  char viewer_dir[512];  /* viewer assets; "" = the build's, else the installed copy */
  int log_level;       /* cd_log_level */
  double shutdown_grace_s; /* longest wait for in-flight work on SIGTERM */
  char store[512];     /* "memory", "dir:PATH", "redis://HOST:PORT[/DB]", "unix:PATH" (cd_store.h) */
  char store_password_file[256]; /* Redis password; else CONTACTD_STORE_PASSWORD */
  /* TLS on the TCP listener and the HTTP port, and who may connect
   * (docs/security.md). Paths; "" = not set. */
  char tls_cert_file[512];
  char tls_key_file[512];
  char tls_client_ca_file[512]; /* set: client certificates required and verified (mutual TLS) */
  int tls_required;             /* plaintext TCP refused; -1 = default: on when a certificate is set */
  int tls_allow_tls12;          /* TLS 1.2 as well as 1.3 */
  char principals_file[512];    /* set: authentication on (cd_principals.h) */
  char metrics_token_file[512]; /* set: /metrics needs this bearer token */
  int unix_mode;                /* the Unix socket's file mode (default 0660) */
  cd_limits limits;
} cd_config;

#define CD_DEFAULT_LISTEN "127.0.0.1:7411"

void cd_config_default(cd_config *c);

/* Returns 0 to run, 1 when --help/--version was printed (exit 0), -1 on a
 * bad flag or config file (message in err). */
int cd_config_from_args(cd_config *c, int argc, char **argv, char *err, size_t errlen);

/* Apply a JSON config document (keys beginning with '_' are comments;
 * unknown keys are errors so that typos do not pass silently). */
int cd_config_apply_json(cd_config *c, const char *text, char *err, size_t errlen);

/* Whether the TCP listener refuses plaintext (tls_required, resolved). */
int cd_config_tls_required(const cd_config *c);

/* Split "HOST:PORT" ("[::1]:7411" for IPv6). 0 on success. */
int cd_config_split_hostport(const char *s, char *host, size_t hostlen, int *port);

void cd_config_print_help(const char *argv0);

#endif
