/* test_webauth.c — who a request on the HTTP port is (cd_webauth.c):
 * header and bearer parsing, ?token= exchanged for a session (a cookie
 * holding a random id, never the token), sessions expiring, replaced when
 * the table is full and ended when their principal's token changes,
 * wrong credentials counted against the address, and what a principal
 * sees. The clock is the caller's, so expiry is tested without waiting. */
#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_security.h"
#include "cd_webauth.h"

static void sha256_hex(const char *token, char out[65]) {
  unsigned char h[32];
  unsigned n = 0;
  cr_assert(EVP_Digest(token, strlen(token), h, &n, EVP_sha256(), NULL));
  for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", h[i]);
}

/* Principals robot-a (lab-a) with token ta and ops (admin, *) with "ops-token". */
static cd_principals *principals(const char *ta) {
  char a[65], o[65], doc[1024], err[256];
  sha256_hex(ta, a);
  sha256_hex("ops-token", o);
  snprintf(doc, sizeof doc,
           "{\"principals\": [{\"name\": \"robot-a\", \"token_sha256\": \"%s\", \"roles\": [\"query\"], "
           "\"tenant\": \"lab-a\"}, {\"name\": \"ops\", \"token_sha256\": \"%s\", \"roles\": [\"admin\"], "
           "\"tenant\": \"*\"}]}",
           a, o);
  cd_principals *p = cd_principals_parse(doc, strlen(doc), err, sizeof err);
  cr_assert(p, "%s", err);
  return p;
}

static cd_security sec;

static void setup(void) {
  memset(&sec, 0, sizeof sec);
  pthread_mutex_init(&sec.mu, NULL);
  cd_addrs_config ac = {.fail_max = 4, .fail_window_ms = 60000, .fail_delay_ms = 0, .lockout_ms = 60000,
                        .max_entries = 16};
  sec.addrs = cd_addrs_new(&ac);
  sec.principals = principals("token-a");
}

static void teardown(void) {
  cd_principals_unref(sec.principals);
  cd_addrs_free(sec.addrs);
  pthread_mutex_destroy(&sec.mu);
}

typedef struct outcome {
  cd_webauth_result r;
  cd_principal who;
  char cookie[256];
  int fresh;
  const char *why;
  uint64_t wait;
} outcome;

static outcome check(cd_webauth *w, const char *headers, const char *query, const char *host, uint64_t now) {
  outcome o;
  memset(&o, 0, sizeof o);
  cd_webauth_in in = {headers, query, host, 0, now};
  o.r = cd_webauth_check(w, &sec, &in, &o.who, o.cookie, sizeof o.cookie, &o.fresh, &o.why, &o.wait);
  return o;
}

/* "Cookie: cd_session=<id>\r\n\r\n" from a Set-Cookie line. */
static void cookie_header(const char *set_cookie, char *out, size_t cap) {
  const char *v = strstr(set_cookie, "cd_session=");
  cr_assert(v);
  const char *semi = strchr(v, ';');
  snprintf(out, cap, "Host: x\r\nCookie: theme=dark; %.*s\r\n\r\n", (int)(semi - v), v);
}

Test(webauth, headers_and_bearer) {
  const char *h = "Host: a\r\nauthorization:   Bearer  tok en  \r\nX: y\r\n\r\nAuthorization: Bearer body\r\n";
  size_t n = 0;
  const char *v = cd_webauth_header(h, "Authorization", &n);
  cr_assert(v);
  cr_assert_eq(n, strlen("Bearer  tok en"));
  v = cd_webauth_bearer(h, &n);
  cr_assert(v && n == 6 && strncmp(v, "tok en", n) == 0, "%.*s", (int)n, v);
  cr_assert_null(cd_webauth_header(h, "Authorizatio", &n));
  cr_assert_null(cd_webauth_bearer("Authorization: Basic Zm9v\r\n\r\n", &n));
  /* nothing after the blank line is a header */
  cr_assert_null(cd_webauth_header("Host: a\r\n\r\nCookie: x=1\r\n", "Cookie", &n));
}

Test(webauth, bearer_and_missing, .init = setup, .fini = teardown) {
  cd_webauth *w = cd_webauth_new(4, 1000);
  outcome o = check(w, "Host: x\r\n\r\n", NULL, "10.0.0.1", 1);
  cr_assert_eq(o.r, CD_WEBAUTH_MISSING);
  cr_assert_str_eq(o.why, "no token");
  o = check(w, "Authorization: Bearer token-a\r\n\r\n", NULL, "10.0.0.1", 1);
  cr_assert_eq(o.r, CD_WEBAUTH_OK, "%s", o.why);
  cr_assert_str_eq(o.who.name, "robot-a");
  cr_assert_eq(o.fresh, 0);
  cr_assert_str_eq(o.cookie, "");
  o = check(w, "Authorization: Bearer token-b\r\n\r\n", NULL, "10.0.0.1", 1);
  cr_assert_eq(o.r, CD_WEBAUTH_BAD);
  cr_assert_str_eq(o.why, "unknown token");
  cd_webauth_free(w);
}

Test(webauth, query_token_opens_a_session_that_expires, .init = setup, .fini = teardown) {
  cd_webauth *w = cd_webauth_new(4, 1000);
  /* percent-encoded: "token a" is "token%20a" (and the other parameters are ignored) */
  cd_principals_unref(sec.principals);
  sec.principals = principals("token a");
  outcome o = check(w, "Host: x\r\n\r\n", "x=1&token=token%20a&y=2", "10.0.0.1", 100);
  cr_assert_eq(o.r, CD_WEBAUTH_OK, "%s", o.why);
  cr_assert_eq(o.fresh, 1);
  cr_assert(strstr(o.cookie, "HttpOnly") && strstr(o.cookie, "SameSite=Strict") && strstr(o.cookie, "Max-Age=1;"),
            "%s", o.cookie);
  cr_assert_null(strstr(o.cookie, "token"), "the cookie holds no token: %s", o.cookie);
  char hdr[512];
  cookie_header(o.cookie, hdr, sizeof hdr);
  o = check(w, hdr, NULL, "10.0.0.1", 1099);
  cr_assert_eq(o.r, CD_WEBAUTH_OK, "%s", o.why);
  cr_assert_str_eq(o.who.tenant, "lab-a");
  cr_assert_eq(o.fresh, 0);
  o = check(w, hdr, NULL, "10.0.0.1", 1100);
  cr_assert_eq(o.r, CD_WEBAUTH_BAD, "expired at 100 + 1000 ms");
  cr_assert_str_eq(o.why, "unknown or expired session");
  o = check(w, "Host: x\r\n\r\n", "token=%2", "10.0.0.2", 1);
  cr_assert_eq(o.r, CD_WEBAUTH_BAD);
  cr_assert_str_eq(o.why, "malformed token");
  cd_webauth_free(w);
}

Test(webauth, a_full_table_replaces_the_session_closest_to_expiring, .init = setup, .fini = teardown) {
  cd_webauth *w = cd_webauth_new(2, 1000);
  char h1[512], h2[512], h3[512];
  outcome o = check(w, "\r\n", "token=token-a", "10.0.0.1", 10);
  cookie_header(o.cookie, h1, sizeof h1);
  o = check(w, "\r\n", "token=ops-token", "10.0.0.1", 20);
  cookie_header(o.cookie, h2, sizeof h2);
  o = check(w, "\r\n", "token=token-a", "10.0.0.1", 30);
  cookie_header(o.cookie, h3, sizeof h3);
  cr_assert_eq(check(w, h1, NULL, "10.0.0.1", 40).r, CD_WEBAUTH_BAD, "the oldest went");
  o = check(w, h2, NULL, "10.0.0.1", 40);
  cr_assert_eq(o.r, CD_WEBAUTH_OK);
  cr_assert_str_eq(o.who.name, "ops");
  cr_assert_eq(check(w, h3, NULL, "10.0.0.1", 40).r, CD_WEBAUTH_OK);
  cd_webauth_free(w);
}

Test(webauth, a_changed_token_ends_its_sessions, .init = setup, .fini = teardown) {
  cd_webauth *w = cd_webauth_new(4, 100000);
  char h[512];
  outcome o = check(w, "\r\n", "token=token-a", "10.0.0.1", 1);
  cookie_header(o.cookie, h, sizeof h);
  cr_assert_eq(check(w, h, NULL, "10.0.0.1", 2).r, CD_WEBAUTH_OK);
  cd_principals_unref(sec.principals); /* what a reload with robot-a's new token does */
  sec.principals = principals("token-a2");
  cr_assert_eq(check(w, h, NULL, "10.0.0.1", 3).r, CD_WEBAUTH_BAD);
  cd_webauth_free(w);
}

Test(webauth, wrong_credentials_lock_the_address_out, .init = setup, .fini = teardown) {
  cd_webauth *w = cd_webauth_new(4, 1000);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(check(w, "Authorization: Bearer nope\r\n\r\n", NULL, "10.0.0.9", 10).r, CD_WEBAUTH_BAD);
  outcome o = check(w, "Authorization: Bearer token-a\r\n\r\n", NULL, "10.0.0.9", 11);
  cr_assert_eq(o.r, CD_WEBAUTH_LOCKED, "not checked while locked out");
  cr_assert_eq(check(w, "Authorization: Bearer token-a\r\n\r\n", NULL, "10.0.0.8", 11).r, CD_WEBAUTH_OK,
               "another address is not");
  cd_webauth_free(w);
}

/* From half of fail_max failures on, a failure's answer is held for
 * fail_delay_ms (as the protocol port's); a success never is. */
Test(webauth, failures_past_half_are_answered_late, .init = setup, .fini = teardown) {
  cd_addrs_free(sec.addrs);
  cd_addrs_config ac = {.fail_max = 4, .fail_window_ms = 60000, .fail_delay_ms = 250, .lockout_ms = 60000,
                        .max_entries = 16};
  sec.addrs = cd_addrs_new(&ac);
  cd_webauth *w = cd_webauth_new(4, 1000);
  const uint64_t want[3] = {0, 0, 250};
  for (int i = 0; i < 3; i++) {
    outcome o = check(w, "Authorization: Bearer nope\r\n\r\n", NULL, "10.0.0.7", 10);
    cr_assert_eq(o.r, CD_WEBAUTH_BAD);
    cr_expect_eq(o.wait, want[i], "failure %d held %llu ms", i + 1, (unsigned long long)o.wait);
  }
  outcome ok = check(w, "Authorization: Bearer token-a\r\n\r\n", NULL, "10.0.0.7", 11);
  cr_assert_eq(ok.r, CD_WEBAUTH_OK);
  cr_expect_eq(ok.wait, 0, "a success is answered at once");
  cr_expect_eq(check(w, "Authorization: Bearer nope\r\n\r\n", NULL, "10.0.0.7", 12).r, CD_WEBAUTH_BAD);
  cr_expect_eq(check(w, "Authorization: Bearer token-a\r\n\r\n", NULL, "10.0.0.7", 13).r, CD_WEBAUTH_LOCKED);
  cd_webauth_free(w);
}

Test(webauth, who_sees_what) {
  cd_principal a = {.name = "robot-a", .tenant = "lab-a", .roles = CD_ROLE_QUERY};
  cd_principal all = {.name = "viewer", .tenant = "*", .roles = CD_ROLE_QUERY};
  cd_principal admin = {.name = "ops", .tenant = "lab-b", .roles = CD_ROLE_ADMIN};
  cr_assert(cd_webauth_sees(&a, "lab-a"));
  cr_assert(!cd_webauth_sees(&a, "lab-b"));
  cr_assert(!cd_webauth_sees(&a, ""));
  cr_assert(cd_webauth_sees(&all, "lab-b"));
  cr_assert(cd_webauth_sees(&admin, "lab-a"));
  cr_assert(!cd_webauth_sees(NULL, "lab-a"));
}
