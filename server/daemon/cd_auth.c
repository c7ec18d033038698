/* cd_auth.c — see cd_auth.h. */
#include "cd_auth.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_log.h"
#include "cd_loop.h"
#include "cd_server.h"
#include "cd_stats.h"

/* The role each request needs (0: none, Hello). */
static unsigned role_needed(unsigned msg_case, const char **what) {
  switch (msg_case) {
  case CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY: *what = "hasGeometry"; return CD_ROLE_QUERY;
  case CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY: *what = "contactQuery"; return CD_ROLE_QUERY;
  case CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM: *what = "openStream"; return CD_ROLE_QUERY;
  case CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE: *what = "streamUpdate"; return CD_ROLE_QUERY;
  case CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM: *what = "closeStream"; return CD_ROLE_QUERY;
  case CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY: *what = "registerGeometry"; return CD_ROLE_REGISTER;
  case CONTACTD__V1__ENVELOPE__MSG_RELEASE_GEOMETRY: *what = "releaseGeometry"; return CD_ROLE_REGISTER;
  case CONTACTD__V1__ENVELOPE__MSG_STATS: *what = "stats"; return CD_ROLE_ADMIN;
  default: *what = "hello"; return 0;
  }
}

static uint64_t now_ms(void) { return cd_stats_now_ns() / 1000000; }

static void set_principal(cd_session *ss, cd_principals *set, const cd_principal *p) {
  cd_principals_unref(ss->principals);
  ss->principals = set; /* the reference taken by the caller */
  ss->principal = p;
}

/* A connection that did not send a token may be known by how it came:
 * its verified client certificate, or its Unix-socket peer. */
static void recognise(cd_conn *c, cd_session *ss, cd_security *sec) {
  const char *subject = cd_conn_tls_subject(c);
  uid_t uid;
  gid_t gid;
  int peer = cd_conn_peer_cred(c, &uid, &gid) == 0;
  if (!subject[0] && !peer) return;
  cd_principals *set = cd_security_principals(sec);
  const cd_principal *p = subject[0] ? cd_principals_by_subject(set, subject) : cd_principals_by_peer(set, uid, gid);
  if (!p) {
    cd_principals_unref(set);
    return;
  }
  set_principal(ss, set, p);
  CD_INFO("authenticated", "conn=%llu peer=%s principal=%s tenant=%s by=%s", (unsigned long long)cd_conn_id(c),
          cd_conn_peer(c), p->name, p->tenant, subject[0] ? "certificate" : "peer credentials");
}

/* A failed Hello answered after auth_fail_delay_ms. */
typedef struct delayed {
  uv_timer_t timer;
  cd_req *r;
  cd_status st;
} delayed;

static void on_delayed_closed(uv_handle_t *h) { free(h->data); }

static void on_delay(uv_timer_t *t) {
  delayed *d = t->data;
  cd_session *ss = cd_conn_session(d->r->conn);
  ss->auth_waiting = 0;
  cd_req_fail(d->r, &d->st);
  uv_close((uv_handle_t *)&d->timer, on_delayed_closed);
}

static void fail_later(cd_req *r, const cd_status *st, uint64_t wait_ms) {
  delayed *d = wait_ms ? malloc(sizeof *d) : NULL;
  if (!d) {
    cd_req_fail(r, st);
    return;
  }
  d->r = r;
  d->st = *st;
  uv_timer_init(cd_conn_loop(r->conn)->uv, &d->timer);
  d->timer.data = d;
  cd_conn_session(r->conn)->auth_waiting = 1;
  uv_timer_start(&d->timer, on_delay, wait_ms, 0);
}

/* A Hello with a token: authenticate, or refuse (and count the failure). 1
 * when r was answered here. */
static int hello_token(cd_req *r, cd_session *ss, cd_security *sec, const cd_limits *l) {
  cd_conn *c = r->conn;
  const char *host = cd_conn_host(c);
  const char *token = r->env->hello->token;
  cd_status st;
  uint64_t wait = 0;
  cd_auth_verdict v = cd_addrs_auth_check(sec->addrs, host, now_ms(), &wait);
  if (v == CD_AUTH_LOCKED) {
    uint64_t n = cd_security_refused(sec, CD_REFUSED_LOCKED_OUT, now_ms(), l->refusal_log_window_ms);
    if (n) CD_WARN("authentications refused: address locked out", "address=%s refused=%llu", host,
                   (unsigned long long)n);
    cd_status_set(&st, CONTACTD__V1__ERROR_CODE__UNAUTHENTICATED, "hello.token",
                  "too many failed authentications from %s: refused for %llu s more", host,
                  (unsigned long long)((wait + 999) / 1000));
    cd_req_fail(r, &st);
    return 1;
  }
  cd_principals *set = cd_security_principals(sec);
  const cd_principal *p = cd_principals_by_token(set, token, strlen(token));
  if (p) {
    set_principal(ss, set, p);
    CD_INFO("authenticated", "conn=%llu peer=%s principal=%s tenant=%s by=token", (unsigned long long)cd_conn_id(c),
            cd_conn_peer(c), p->name, p->tenant);
    return 0;
  }
  cd_principals_unref(set);
  if (cd_addrs_auth_failed(sec->addrs, host, now_ms()))
    CD_WARN("address locked out after failed authentications", "address=%s failures=%llu lockout_ms=%llu", host,
            (unsigned long long)l->auth_fail_max, (unsigned long long)l->auth_lockout_ms);
  cd_status_set(&st, CONTACTD__V1__ERROR_CODE__UNAUTHENTICATED, "hello.token",
                "the token matches no principal");
  fail_later(r, &st, v == CD_AUTH_WAIT ? wait : 0);
  return 1;
}

int cd_auth_gate(cd_req *r) {
  cd_conn *c = r->conn;
  cd_server *s = cd_conn_server(c);
  cd_security *sec = &s->sec;
  if (!cd_security_auth_on(sec)) {
    cd_conn_greet(c);
    return 0;
  }
  cd_session *ss = cd_conn_session(c);
  const unsigned mc = (unsigned)r->env->msg_case;
  cd_status st;
  if (ss->auth_waiting) { /* a Hello's failure is still being delayed: no second guess meanwhile */
    cd_status_set(&st, CONTACTD__V1__ERROR_CODE__UNAUTHENTICATED, "",
                  "an authentication is pending on this connection");
    cd_req_fail(r, &st);
    return 1;
  }
  if (!ss->principal) recognise(c, ss, sec);
  if (mc == CONTACTD__V1__ENVELOPE__MSG_HELLO && r->env->hello->token && r->env->hello->token[0] &&
      hello_token(r, ss, sec, &s->cfg.limits))
    return 1;
  const char *what;
  unsigned need = role_needed(mc, &what);
  if (!ss->principal) {
    if (!need) return 0; /* a Hello without a token: answered, but not authenticated */
    cd_status_set(&st, CONTACTD__V1__ERROR_CODE__UNAUTHENTICATED, "",
                  "%s before authentication: send Hello with a token (or connect with a client certificate "
                  "or as a known Unix user)",
                  what);
    cd_req_fail(r, &st);
    return 1;
  }
  cd_conn_greet(c);
  if (need && !(ss->principal->roles & need)) {
    cd_status_set(&st, CONTACTD__V1__ERROR_CODE__PERMISSION_DENIED, what,
                  "%s needs the %s role, which principal \"%s\" does not have", what, cd_principals_role_name(need),
                  ss->principal->name);
    cd_req_fail(r, &st);
    return 1;
  }
  return 0;
}

void cd_auth_describe(cd_conn *c, Contactd__V1__HelloReply *hr, char **roles, size_t cap) {
  const cd_principal *p = cd_conn_session(c)->principal;
  if (!p) return;
  hr->principal = (char *)p->name;
  hr->tenant = (char *)p->tenant;
  static const unsigned bits[] = {CD_ROLE_QUERY, CD_ROLE_REGISTER, CD_ROLE_ADMIN};
  size_t n = 0;
  for (size_t i = 0; i < sizeof bits / sizeof *bits && n < cap; i++)
    if (p->roles & bits[i]) roles[n++] = (char *)cd_principals_role_name(bits[i]);
  hr->roles = roles;
  hr->n_roles = n;
}
