/* ctl_common.c — contactctl: options, errors, argument parsing, connecting
 * and setting up a scene (see ctl.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl.h"

double ctl_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int ctl_usage(const char *fmt, const char *arg) {
  fprintf(stderr, "contactctl: ");
  fprintf(stderr, fmt, arg);
  fprintf(stderr, " (try --help)\n");
  return EX_USAGE;
}

int ctl_report(const char *what, const cc_error *e) {
  fprintf(stderr, "contactctl: %s: %s: %s%s%s\n", what, cc_code_name(e->code), e->message,
          e->field[0] && !strstr(e->message, e->field) ? " [" : "", e->field[0] && !strstr(e->message, e->field) ? e->field : "");
  if (e->field[0] && !strstr(e->message, e->field)) fprintf(stderr, "]\n");
  return e->remote ? EX_SERVER : EX_CONN;
}

int ctl_parse_double(const char *s, double *v) {
  char *end;
  errno = 0;
  *v = strtod(s, &end);
  return *s && !*end && !errno ? 0 : -1;
}

int ctl_parse_long(const char *s, long *v) {
  char *end;
  errno = 0;
  *v = strtol(s, &end, 10);
  return *s && !*end && !errno ? 0 : -1;
}

int ctl_parse_triple(const char *s, double v[3]) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", s);
  char *save = NULL, *tok = strtok_r(buf, ",", &save);
  for (int i = 0; i < 3; i++) {
    if (!tok || ctl_parse_double(tok, &v[i])) return -1;
    tok = strtok_r(NULL, ",", &save);
  }
  return tok ? -1 : 0;
}

int ctl_common_flag(int argc, char **argv, int *i, common *co) {
  const char *f = argv[*i];
  if (strcmp(f, "--addr") == 0 || strcmp(f, "--timeout") == 0) {
    if (*i + 1 >= argc) return -ctl_usage("%s needs a value", f);
    const char *v = argv[++*i];
    if (f[2] == 'a') co->addr = v;
    else {
      long t;
      if (ctl_parse_long(v, &t) || t <= 0 || t > 86400000) return -ctl_usage("--timeout: \"%s\" is not a positive number of ms", v);
      co->timeout_ms = (int)t;
    }
    return 1;
  }
  if (strncmp(f, "--addr=", 7) == 0) {
    co->addr = f + 7;
    return 1;
  }
  if (strcmp(f, "--json") == 0) {
    co->json = 1;
    return 1;
  }
  return 0;
}

int ctl_connect_or_report(const common *co, cc_client **c) {
  cc_options o;
  cc_options_default(&o);
  if (co->timeout_ms > 0) o.connect_timeout_ms = o.timeout_ms = co->timeout_ms;
  o.retry_queries = 1; /* every query contactctl sends is idempotent */
  cc_error e;
  const char *addr = co->addr ? co->addr : cc_default_addr();
  if (cc_connect(addr, &o, c, &e)) {
    fprintf(stderr, "contactctl: cannot connect to %s: %s\n", addr, e.message);
    return e.code == CC_EINVALID_ARGUMENT ? EX_USAGE : EX_CONN;
  }
  return 0;
}

static const char *enum_short(const ProtobufCEnumDescriptor *d, int v, const char *prefix, char *buf,
                              size_t n) {
  const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(d, v);
  if (!ev) {
    snprintf(buf, n, "%d", v);
    return buf;
  }
  const char *s = ev->name;
  size_t pl = strlen(prefix);
  if (strncmp(s, prefix, pl) == 0) s += pl;
  size_t i = 0;
  for (; s[i] && i + 1 < n; i++) buf[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] + 32 : s[i]);
  buf[i] = 0;
  return buf;
}

const char *ctl_status_name(int v, char *buf, size_t n) {
  return enum_short(&contactd__v1__contact_status__descriptor, v, "CONTACT_STATUS_", buf, n);
}

int ctl_scene_connect(const common *co, cc_scene *s, cc_client **c) {
  int rc = ctl_connect_or_report(co, c);
  if (rc) {
    cc_scene_free(s);
    return rc;
  }
  cc_error e;
  if (cc_scene_register(*c, s, &e)) {
    rc = ctl_report("register", &e);
    cc_close(*c);
    cc_scene_free(s);
    return rc;
  }
  return 0;
}

/* The viewer's URL for the scene: the server's HTTP port (from its Hello
 * capabilities) on the host contactctl connected to. */
static void print_view_url(const common *co, cc_client *c) {
  Contactd__V1__HelloReply *hr = NULL;
  cc_error e;
  int port = 0;
  if (cc_hello(c, "contactctl", &hr, &e) == 0) {
    for (size_t i = 0; i < hr->n_capabilities; i++)
      if (strncmp(hr->capabilities[i], "http_port:", 10) == 0) port = atoi(hr->capabilities[i] + 10);
    cc_free(hr);
  }
  const char *addr = co->addr ? co->addr : cc_default_addr();
  char host[128] = "127.0.0.1";
  const char *colon = strrchr(addr, ':');
  if (strncmp(addr, "unix:", 5) != 0 && colon && colon > addr && (size_t)(colon - addr) < sizeof host)
    snprintf(host, sizeof host, "%.*s", (int)(colon - addr), addr);
  char url[256];
  if (port > 0) snprintf(url, sizeof url, "http://%s:%d/#%s", host, port, co->publish);
  else snprintf(url, sizeof url, "(the server's HTTP port is off: start contactd with --http-port)");
  if (co->json) printf("{\"view_url\": \"%s\", \"scene\": \"%s\"}\n", url, co->publish);
  else printf("viewer: %s\n", url);
  fflush(stdout);
}

int ctl_scene_setup(const char *path, const common *co, cc_scene *s, cc_client **c) {
  char err[1024];
  if (cc_scene_load(path, s, err, sizeof err)) {
    fprintf(stderr, "contactctl: %s\n", err);
    return EX_INPUT;
  }
  int rc = ctl_scene_connect(co, s, c);
  if (!rc && co->publish[0]) {
    s->options.publish = (char *)co->publish; /* borrowed: co outlives the scene */
    print_view_url(co, *c);
  }
  return rc;
}
