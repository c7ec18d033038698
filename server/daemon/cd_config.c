/* cd_config.c — defaults, JSON config file (cJSON) and flags. */
#include "cd_config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "cd_log.h"
#include "cd_store.h"
#include "cd_version.h"

void cd_config_default(cd_config *c) {
  memset(c, 0, sizeof *c);
  snprintf(c->listen, sizeof c->listen, "%s", CD_DEFAULT_LISTEN);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  c->workers = n > 0 ? (int)n : 1;
  c->http_port = -1;
  snprintf(c->http_address, sizeof c->http_address, "127.0.0.1");
  c->log_level = CD_LOG_INFO;
  c->shutdown_grace_s = 30;
  snprintf(c->store, sizeof c->store, "memory");
  c->tls_required = -1;
  c->unix_mode = 0660;
  cd_limits_default(&c->limits);
}

int cd_config_tls_required(const cd_config *c) {
  return c->tls_required < 0 ? c->tls_cert_file[0] != 0 : c->tls_required;
}

int cd_config_split_hostport(const char *s, char *host, size_t hostlen, int *port) {
  const char *colon;
  const char *h = s;
  size_t hl;
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (!close || close[1] != ':') return -1;
    h = s + 1;
    hl = (size_t)(close - h);
    colon = close + 1;
  } else {
    colon = strrchr(s, ':');
    if (!colon) return -1;
    hl = (size_t)(colon - s);
  }
  if (hl == 0 || hl >= hostlen) return -1;
  memcpy(host, h, hl);
  host[hl] = 0;
  char *end;
  errno = 0;
  long p = strtol(colon + 1, &end, 10);
  if (errno || *end || end == colon + 1 || p < 0 || p > 65535) return -1;
  *port = (int)p;
  return 0;
}

static int set_str(char *dst, size_t cap, const char *v, const char *what, char *err, size_t errlen) {
  if (strlen(v) >= cap) {
    snprintf(err, errlen, "%s: value too long (max %zu characters)", what, cap - 1);
    return -1;
  }
  snprintf(dst, cap, "%s", v);
  return 0;
}

static int set_listen(cd_config *c, const char *v, const char *what, char *err, size_t errlen) {
  if (strcmp(v, "") == 0 || strcmp(v, "none") == 0) {
    c->listen[0] = 0;
    return 0;
  }
  char host[256];
  int port;
  if (cd_config_split_hostport(v, host, sizeof host, &port) != 0) {
    snprintf(err, errlen, "%s: \"%s\" is not HOST:PORT", what, v);
    return -1;
  }
  return set_str(c->listen, sizeof c->listen, v, what, err, errlen);
}

/* The HTTP port's key; "metrics_port" is its older name, kept as an alias. */
static int is_http_port_key(const char *k) { return strcmp(k, "http_port") == 0 || strcmp(k, "metrics_port") == 0; }

/* A numeric IPv4 or IPv6 address (no names: nothing is resolved). */
static int set_http_address(cd_config *c, const char *v, const char *what, char *err, size_t errlen) {
  struct sockaddr_in a4;
  struct sockaddr_in6 a6;
  if (uv_ip4_addr(v, 0, &a4) != 0 && uv_ip6_addr(v, 0, &a6) != 0) {
    snprintf(err, errlen, "%s: \"%.80s\" is not a numeric IPv4 or IPv6 address", what, v);
    return -1;
  }
  return set_str(c->http_address, sizeof c->http_address, v, what, err, errlen);
}

static int set_store(cd_config *c, const char *v, const char *what, char *err, size_t errlen) {
  if (cd_store_check_uri(v, err, errlen)) return -1;
  return set_str(c->store, sizeof c->store, v, what, err, errlen);
}

/* The settings that are file paths, with their config keys and flags. */
typedef struct path_key {
  const char *key, *flag;
  size_t off, cap;
} path_key;
#define PATH_KEY(k, f) {#k, f, offsetof(cd_config, k), sizeof(((cd_config *)0)->k)}
static const path_key PATH_KEYS[] = {
    PATH_KEY(tls_cert_file, "--tls-cert"),       PATH_KEY(tls_key_file, "--tls-key"),
    PATH_KEY(tls_client_ca_file, "--tls-client-ca"), PATH_KEY(principals_file, "--principals"),
    PATH_KEY(metrics_token_file, "--metrics-token-file"),
};
#undef PATH_KEY
/* The settings that are true or false. */
typedef struct bool_key {
  const char *key, *flag;
  size_t off;
} bool_key;
static const bool_key BOOL_KEYS[] = {
    {"tls_required", "--tls-required", offsetof(cd_config, tls_required)},
    {"tls_allow_tls12", "--tls-allow-tls12", offsetof(cd_config, tls_allow_tls12)},
};
#define COUNT(a) (sizeof(a) / sizeof *(a))

/* An octal file mode such as "0660" for the Unix socket. */
static int set_unix_mode(cd_config *c, const char *v, const char *what, char *err, size_t errlen) {
  char *end;
  errno = 0;
  long m = strtol(v, &end, 8);
  if (errno || !*v || *end || m < 0 || m > 0777) {
    snprintf(err, errlen, "%s: \"%.20s\" is not an octal file mode such as 0660", what, v);
    return -1;
  }
  c->unix_mode = (int)m;
  return 0;
}

/* A security setting (a path, a switch or the Unix socket's mode) given in
 * the config file as key = it, or by flag f with value v (it NULL). Returns
 * 1 when handled, 0 when k/f names none of them, -1 on a bad value. */
static int set_security(cd_config *c, const char *k, const char *f, const cJSON *it, const char *v, char *err,
                        size_t errlen) {
  char what[64];
  for (size_t i = 0; i < COUNT(PATH_KEYS); i++) {
    const path_key *p = &PATH_KEYS[i];
    if (k ? strcmp(k, p->key) : strcmp(f, p->flag)) continue;
    snprintf(what, sizeof what, "%s%s", k ? "config: " : "", k ? k : f);
    if (it && !cJSON_IsString(it)) {
      snprintf(err, errlen, "%s must be a string (a file path)", what);
      return -1;
    }
    return set_str((char *)c + p->off, p->cap, it ? it->valuestring : v, what, err, errlen) ? -1 : 1;
  }
  for (size_t i = 0; i < COUNT(BOOL_KEYS); i++) {
    const bool_key *b = &BOOL_KEYS[i];
    if (k ? strcmp(k, b->key) : strcmp(f, b->flag)) continue;
    int *dst = (int *)((char *)c + b->off);
    if (it ? !cJSON_IsBool(it) : strcmp(v, "true") && strcmp(v, "false")) {
      snprintf(err, errlen, "%s%s must be true or false", k ? "config: " : "", k ? k : f);
      return -1;
    }
    *dst = it ? cJSON_IsTrue(it) : strcmp(v, "true") == 0;
    return 1;
  }
  if (k ? strcmp(k, "unix_mode") : strcmp(f, "--unix-mode")) return 0;
  if (it && !cJSON_IsString(it)) {
    snprintf(err, errlen, "config: unix_mode must be a string such as \"0660\" (octal)");
    return -1;
  }
  return set_unix_mode(c, it ? it->valuestring : v, k ? "config: unix_mode" : "--unix-mode", err, errlen) ? -1 : 1;
}

static int parse_int(const char *v, long lo, long hi, long *out) {
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end || end == v || x < lo || x > hi) return -1;
  *out = x;
  return 0;
}

static int apply_limits_json(cd_limits *l, const cJSON *obj, char *err, size_t errlen) {
  const cJSON *it;
  cJSON_ArrayForEach(it, obj) {
    const char *k = it->string;
    if (k[0] == '_') continue;
    int found = 0;
#define CD_XX_SET(field, def, min, unit, desc)                                              \
  if (!found && strcmp(k, #field) == 0) {                                                   \
    found = 1;                                                                              \
    if (!cJSON_IsNumber(it) || !(it->valuedouble >= 0) || it->valuedouble > 9.0e15 ||       \
        it->valuedouble != floor(it->valuedouble)) {                                        \
      snprintf(err, errlen, "config: limits.%s must be a non-negative integer (%s)", k, unit); \
      return -1;                                                                            \
    }                                                                                       \
    if (it->valuedouble < (double)(min)) {                                                  \
      snprintf(err, errlen, "config: limits.%s is %.0f; it must be at least %llu (%s)", k,     \
               it->valuedouble, (unsigned long long)(min), desc);                           \
      return -1;                                                                            \
    }                                                                                       \
    l->field = (uint64_t)it->valuedouble;                                                   \
  }
    CD_LIMITS_MAP(CD_XX_SET)
#undef CD_XX_SET
    if (!found) {
      snprintf(err, errlen, "config: unknown key limits.%s", k);
      return -1;
    }
  }
  if (l->request_memory_bytes && l->request_memory_bytes < l->max_frame_bytes) {
    snprintf(err, errlen,
             "config: limits.request_memory_bytes (%llu) must be 0 (no limit) or at least limits.max_frame_bytes "
             "(%llu), or a largest frame could never be taken",
             (unsigned long long)l->request_memory_bytes, (unsigned long long)l->max_frame_bytes);
    return -1;
  }
  return 0;
}

int cd_config_apply_json(cd_config *c, const char *text, char *err, size_t errlen) {
  cJSON *root = cJSON_Parse(text);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    snprintf(err, errlen, "config: invalid JSON near \"%.20s\"", at ? at : "");
    return -1;
  }
  int rc = 0;
  if (!cJSON_IsObject(root)) {
    snprintf(err, errlen, "config: the top level must be an object");
    rc = -1;
    goto out;
  }
  const cJSON *it;
  cJSON_ArrayForEach(it, root) {
    const char *k = it->string;
    if (k[0] == '_') continue;
    int sec = set_security(c, k, NULL, it, NULL, err, errlen);
    if (sec < 0) {
      rc = -1;
      goto out;
    }
    if (sec) continue;
    if (strcmp(k, "http_address") == 0 || strcmp(k, "viewer_dir") == 0) {
      int addr = k[0] == 'h';
      if (!cJSON_IsString(it) ||
          (addr ? set_http_address(c, it->valuestring, "config: http_address", err, errlen)
                : set_str(c->viewer_dir, sizeof c->viewer_dir, it->valuestring, "config: viewer_dir", err, errlen))) {
        if (!cJSON_IsString(it)) snprintf(err, errlen, "config: %s must be a string", k);
        rc = -1;
        goto out;
      }
      continue;
    }
    if (strcmp(k, "listen") == 0 || strcmp(k, "unix") == 0 || strcmp(k, "log_level") == 0 ||
        strcmp(k, "store") == 0 || strcmp(k, "store_password_file") == 0) {
      if (!cJSON_IsString(it)) {
        snprintf(err, errlen, "config: %s must be a string", k);
        rc = -1;
        goto out;
      }
      const char *v = it->valuestring;
      if (strcmp(k, "listen") == 0) rc = set_listen(c, v, "config: listen", err, errlen);
      else if (strcmp(k, "unix") == 0) rc = set_str(c->unix_path, sizeof c->unix_path, v, "config: unix", err, errlen);
      else if (strcmp(k, "store") == 0) rc = set_store(c, v, "config: store", err, errlen);
      else if (strcmp(k, "store_password_file") == 0)
        rc = set_str(c->store_password_file, sizeof c->store_password_file, v, "config: store_password_file", err,
                     errlen);
      else {
        int lv = cd_log_parse_level(v);
        if (lv < 0) {
          snprintf(err, errlen, "config: log_level \"%s\" is not debug, info, warn or error", v);
          rc = -1;
        } else {
          c->log_level = lv;
        }
      }
      if (rc) goto out;
    } else if (strcmp(k, "workers") == 0 || is_http_port_key(k) ||
               strcmp(k, "shutdown_grace_s") == 0) {
      if (!cJSON_IsNumber(it)) {
        snprintf(err, errlen, "config: %s must be a number", k);
        rc = -1;
        goto out;
      }
      double v = it->valuedouble;
      if (strcmp(k, "workers") == 0) {
        if (!(v >= 1 && v <= 1024) || v != floor(v)) {
          snprintf(err, errlen, "config: workers must be an integer in [1, 1024]");
          rc = -1;
          goto out;
        }
        c->workers = (int)v;
      } else if (is_http_port_key(k)) {
        if (!(v >= -1 && v <= 65535) || v != floor(v)) {
          snprintf(err, errlen, "config: %s must be -1 (off) or a port in [0, 65535]", k);
          rc = -1;
          goto out;
        }
        c->http_port = (int)v;
      } else {
        if (!(v >= 0 && v <= 3600)) {
          snprintf(err, errlen, "config: shutdown_grace_s must be in [0, 3600]");
          rc = -1;
          goto out;
        }
        c->shutdown_grace_s = v;
      }
    } else if (strcmp(k, "limits") == 0) {
      if (!cJSON_IsObject(it)) {
        snprintf(err, errlen, "config: limits must be an object");
        rc = -1;
        goto out;
      }
      if ((rc = apply_limits_json(&c->limits, it, err, errlen)) != 0) goto out;
    } else {
      snprintf(err, errlen, "config: unknown key \"%s\"", k);
      rc = -1;
      goto out;
    }
  }
out:
  cJSON_Delete(root);
  return rc;
}

static char *read_file(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "config: cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) break;
    if (len + 1 >= cap) {
      if (cap > (16u << 20)) {
        snprintf(err, errlen, "config: %s is larger than 16 MiB", path);
        free(buf);
        buf = NULL;
        break;
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = nb;
      cap *= 2;
    }
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    if (n == 0) {
      if (ferror(f)) { /* a directory, say: fopen takes it, reading it fails */
        snprintf(err, errlen, "config: cannot read %s: %s", path, strerror(errno));
        free(buf);
        buf = NULL;
      }
      break;
    }
    len += n;
  }
  fclose(f);
  if (buf) buf[len] = 0;
  else if (!err[0]) snprintf(err, errlen, "config: out of memory reading %s", path);
  return buf;
}

void cd_config_print_help(const char *argv0) {
  printf("usage: %s [flags]\n\n"
         "contactd %s — hydroelastic contact server (protocol contactd.v1, version %d)\n\n"
         "flags (they override the config file, which overrides the defaults):\n"
         "  --listen HOST:PORT   TCP listener (default %s; \"none\" disables; port 0 = ephemeral,\n"
         "                       the bound port is logged)\n"
         "  --unix PATH          also listen on a Unix socket\n"
         "  --config FILE        JSON config file (see deploy/contactd.example.json)\n"
         "  --workers N          worker threads (default: online cores)\n"
         "  --io-threads N       event loops (limits.io_threads; default 0: half the cores, 2 to 8)\n"
         "  --http-port N        HTTP port: Prometheus /metrics, /healthz, /readyz and the viewer\n"
         "                       page at / (off by default; 0 = ephemeral; alias --metrics-port)\n"
         "  --http-address ADDR  address the HTTP port binds (default 127.0.0.1: anyone who can\n"
         "                       reach the port sees every published scene)\n"
         "  --viewer-dir DIR     viewer assets (default: the build's copy, else the installed one)\n"
         "  --log-level LEVEL    debug, info, warn or error (default info)\n"
         "  --store URI          where registered geometry outlives the process: memory (default),\n"
         "                       dir:PATH, redis://HOST:PORT[/DB] or unix:PATH (Redis socket)\n"
         "  --store-password-file FILE  Redis password (else $CONTACTD_STORE_PASSWORD; never a flag)\n"
         "  --store-connect-timeout-ms N, --store-timeout-ms N  (limits of the same names)\n"
         "  --tls-cert FILE, --tls-key FILE  TLS on the TCP listener and the HTTP port (PEM)\n"
         "  --tls-client-ca FILE  require client certificates from these CAs (mutual TLS)\n"
         "  --tls-required true|false  refuse plaintext TCP (default: true when a certificate is set)\n"
         "  --tls-allow-tls12 true|false  accept TLS 1.2 as well as 1.3 (default false)\n"
         "  --principals FILE    who may connect, with roles and tenants (authentication on;\n"
         "                       re-read on SIGHUP, as are the certificate and key)\n"
         "  --metrics-token-file FILE  /metrics needs this bearer token\n"
         "  --unix-mode MODE     the Unix socket's file mode (default 0660)\n"
         "  --help, --version\n\n"
         "limits (config file key \"limits\": {name: value}):\n",
         argv0, CD_VERSION_STRING, CD_PROTOCOL_VERSION, CD_DEFAULT_LISTEN);
  cd_limits d;
  cd_limits_default(&d);
#define CD_XX_HELP(field, def, min, unit, desc)                                               \
  printf("  %-22s %12llu %-11s %s", #field, (unsigned long long)d.field, unit, desc);          \
  if ((min) > 0) printf(" (at least %llu)", (unsigned long long)(min));                        \
  printf("\n");
  CD_LIMITS_MAP(CD_XX_HELP)
#undef CD_XX_HELP
  printf("\nPose quaternions must have |q| within 1 +- %g (INVALID_ARGUMENT otherwise); they are\n"
         "normalised before use. Non-finite poses or velocities are INVALID_ARGUMENT.\n",
         CD_QUAT_TOLERANCE);
}

int cd_config_from_args(cd_config *c, int argc, char **argv, char *err, size_t errlen) {
  err[0] = 0;
  /* Pass 1: --help/--version/--config, so that flags override the file. */
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      cd_config_print_help(argv[0]);
      return 1;
    }
    if (strcmp(argv[i], "--version") == 0) {
      printf("contactd %s (protocol contactd.v1 version %d)\n", CD_VERSION_STRING, CD_PROTOCOL_VERSION);
      return 1;
    }
  }
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--config") == 0) {
      if (i + 1 >= argc) {
        snprintf(err, errlen, "--config needs a FILE");
        return -1;
      }
      char *text = read_file(argv[i + 1], err, errlen);
      if (!text) return -1;
      int rc = cd_config_apply_json(c, text, err, errlen);
      free(text);
      if (rc) return -1;
      i++;
    }
  }
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    long x;
    if (strcmp(f, "--config") == 0) {
      i++;
      continue;
    }
    if (!v) {
      snprintf(err, errlen, "unknown flag or missing value: %s (try --help)", f);
      return -1;
    }
    int sec = set_security(c, NULL, f, NULL, v, err, errlen);
    if (sec < 0) return -1;
    if (sec) {
      i++;
      continue;
    }
    if (strcmp(f, "--listen") == 0) {
      if (set_listen(c, v, "--listen", err, errlen)) return -1;
    } else if (strcmp(f, "--unix") == 0) {
      if (set_str(c->unix_path, sizeof c->unix_path, v, "--unix", err, errlen)) return -1;
    } else if (strcmp(f, "--store") == 0) {
      if (set_store(c, v, "--store", err, errlen)) return -1;
    } else if (strcmp(f, "--store-password-file") == 0) {
      if (set_str(c->store_password_file, sizeof c->store_password_file, v, "--store-password-file", err, errlen))
        return -1;
    } else if (strcmp(f, "--store-connect-timeout-ms") == 0 || strcmp(f, "--store-timeout-ms") == 0) {
      if (parse_int(v, 1, 3600000, &x)) {
        snprintf(err, errlen, "%s: \"%s\" is not an integer in [1, 3600000] (ms)", f, v);
        return -1;
      }
      if (strcmp(f, "--store-connect-timeout-ms") == 0) c->limits.store_connect_timeout_ms = (uint64_t)x;
      else c->limits.store_timeout_ms = (uint64_t)x;
    } else if (strcmp(f, "--workers") == 0) {
      if (parse_int(v, 1, 1024, &x)) {
        snprintf(err, errlen, "--workers: \"%s\" is not an integer in [1, 1024]", v);
        return -1;
      }
      c->workers = (int)x;
    } else if (strcmp(f, "--io-threads") == 0) {
      if (parse_int(v, 0, 256, &x)) {
        snprintf(err, errlen, "--io-threads: \"%s\" is not an integer in [0, 256] (0 = from the core count)", v);
        return -1;
      }
      c->limits.io_threads = (uint64_t)x;
    } else if (strcmp(f, "--http-port") == 0 || strcmp(f, "--metrics-port") == 0) {
      if (parse_int(v, -1, 65535, &x)) {
        snprintf(err, errlen, "%s: \"%s\" is not -1 or a port in [0, 65535]", f, v);
        return -1;
      }
      c->http_port = (int)x;
    } else if (strcmp(f, "--http-address") == 0) {
      if (set_http_address(c, v, "--http-address", err, errlen)) return -1;
    } else if (strcmp(f, "--viewer-dir") == 0) {
      if (set_str(c->viewer_dir, sizeof c->viewer_dir, v, "--viewer-dir", err, errlen)) return -1;
    } else if (strcmp(f, "--log-level") == 0) {
      int lv = cd_log_parse_level(v);
      if (lv < 0) {
        snprintf(err, errlen, "--log-level: \"%s\" is not debug, info, warn or error", v);
        return -1;
      }
      c->log_level = lv;
    } else {
      snprintf(err, errlen, "unknown flag: %s (try --help)", f);
      return -1;
    }
    i++;
  }
  return 0;
}
