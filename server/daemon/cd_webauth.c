/* cd_webauth.c — see cd_webauth.h. */
#include "cd_webauth.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cd_limits.h"
#include "cd_log.h"
#include "cd_security.h"

#define COOKIE_NAME "cd_session"
#define SID_BYTES 32

typedef struct wsession {
  int used;
  uint8_t sid_sha256[32];   /* of the id the browser holds; the id itself is not kept */
  uint8_t token_sha256[32]; /* the token it was opened with: finds its principal on each request */
  uint64_t expires_ms;
} wsession;

struct cd_webauth {
  wsession *s;
  size_t cap;
  uint64_t ttl_ms;
};

cd_webauth *cd_webauth_new(uint64_t max_sessions, uint64_t ttl_ms) {
  cd_webauth *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  w->cap = (size_t)(max_sessions ? max_sessions : 1);
  w->s = calloc(w->cap, sizeof *w->s);
  if (!w->s) {
    free(w);
    return NULL;
  }
  w->ttl_ms = ttl_ms;
  return w;
}

void cd_webauth_free(cd_webauth *w) {
  if (!w) return;
  OPENSSL_cleanse(w->s, w->cap * sizeof *w->s);
  free(w->s);
  free(w);
}

int cd_webauth_sees(const cd_principal *p, const char *tenant) {
  return p && ((p->roles & CD_ROLE_ADMIN) || cd_principals_sees(p, tenant));
}

/* ---- parsing ---------------------------------------------------------------- */

const char *cd_webauth_header(const char *h, const char *name, size_t *len) {
  size_t nl = strlen(name);
  for (const char *line = h; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
    if (*line == '\r' || *line == '\n') break; /* the blank line ends the head */
    if (strncasecmp(line, name, nl) != 0 || line[nl] != ':') continue;
    const char *v = line + nl + 1, *end = v;
    while (*end && *end != '\r' && *end != '\n') end++;
    while (v < end && (*v == ' ' || *v == '\t')) v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t')) end--;
    *len = (size_t)(end - v);
    return v;
  }
  return NULL;
}

const char *cd_webauth_bearer(const char *headers, size_t *len) {
  size_t n;
  const char *v = cd_webauth_header(headers, "Authorization", &n);
  if (!v || n < 7 || strncasecmp(v, "Bearer ", 7) != 0) return NULL;
  v += 7;
  n -= 7;
  while (n && *v == ' ') v++, n--;
  *len = n;
  return n ? v : NULL;
}

/* The value of cookie_name in the Cookie header, or NULL. */
static const char *cookie(const char *headers, size_t *len) {
  size_t n;
  const char *v = cd_webauth_header(headers, "Cookie", &n), *end = v ? v + n : NULL;
  size_t cl = sizeof COOKIE_NAME - 1;
  for (const char *p = v; p && p < end;) {
    while (p < end && (*p == ' ' || *p == ';')) p++;
    const char *semi = memchr(p, ';', (size_t)(end - p));
    const char *e = semi ? semi : end;
    if ((size_t)(e - p) > cl && strncmp(p, COOKIE_NAME "=", cl + 1) == 0) {
      *len = (size_t)(e - p) - cl - 1;
      return p + cl + 1;
    }
    p = e;
  }
  return NULL;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  c = tolower(c);
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* token=... in a query string, percent-decoded into out: its length, or
 * -1 when absent (-2 when too long or badly encoded). */
static long query_token(const char *q, char *out, size_t cap) {
  for (const char *p = q; p && *p;) {
    const char *amp = strchr(p, '&'), *e = amp ? amp : p + strlen(p);
    if (strncmp(p, "token=", 6) == 0) {
      size_t n = 0;
      for (const char *s = p + 6; s < e; s++) {
        int c = (unsigned char)*s;
        if (c == '%') {
          if (e - s < 3 || hexval(s[1]) < 0 || hexval(s[2]) < 0) return -2;
          c = hexval(s[1]) * 16 + hexval(s[2]);
          s += 2;
        } else if (c == '+') {
          c = ' ';
        }
        if (n + 1 >= cap) return -2;
        out[n++] = (char)c;
      }
      out[n] = 0;
      return (long)n;
    }
    p = amp ? amp + 1 : NULL;
  }
  return -1;
}

/* ---- sessions ----------------------------------------------------------------- */

static int sha256(const void *p, size_t n, uint8_t out[32]) {
  unsigned hl = 0;
  return EVP_Digest(p, n, out, &hl, EVP_sha256(), NULL) && hl == 32 ? 0 : -1;
}

/* The principal whose token hashes to h in the principals in use, or NULL;
 * every principal is compared, whichever matches. */
static const cd_principal *by_token_hash(const cd_principals *set, const uint8_t h[32]) {
  const cd_principal *found = NULL;
  for (size_t i = 0; set && i < set->n; i++)
    if (set->p[i].has_token & (CRYPTO_memcmp(set->p[i].token_sha256, h, 32) == 0)) found = &set->p[i];
  return found;
}

/* The live session whose id hashes to h, or NULL (expired ones are dropped
 * on the way; every slot is compared). */
static wsession *find_session(cd_webauth *w, const uint8_t h[32], uint64_t now) {
  wsession *found = NULL;
  for (size_t i = 0; i < w->cap; i++) {
    wsession *s = &w->s[i];
    if (!s->used) continue;
    if (s->expires_ms <= now) {
      OPENSSL_cleanse(s, sizeof *s);
      continue;
    }
    if (CRYPTO_memcmp(s->sid_sha256, h, 32) == 0) found = s;
  }
  return found;
}

/* A new session for a token with hash th: its id in hex into sid (65
 * bytes); 0, or -1 when no random bytes could be had. When the table is
 * full, the session closest to expiring is replaced. */
static int open_session(cd_webauth *w, const uint8_t th[32], uint64_t now, char sid[2 * SID_BYTES + 1]) {
  uint8_t raw[SID_BYTES];
  if (RAND_bytes(raw, sizeof raw) != 1) return -1;
  for (int i = 0; i < SID_BYTES; i++) snprintf(sid + 2 * i, 3, "%02x", raw[i]);
  OPENSSL_cleanse(raw, sizeof raw);
  wsession *slot = NULL;
  for (size_t i = 0; i < w->cap && !slot; i++)
    if (!w->s[i].used || w->s[i].expires_ms <= now) slot = &w->s[i];
  if (!slot) {
    slot = &w->s[0];
    for (size_t i = 1; i < w->cap; i++)
      if (w->s[i].expires_ms < slot->expires_ms) slot = &w->s[i];
  }
  if (sha256(sid, 2 * SID_BYTES, slot->sid_sha256)) return -1;
  memcpy(slot->token_sha256, th, 32);
  slot->expires_ms = now + w->ttl_ms;
  slot->used = 1;
  return 0;
}

/* ---- the check ---------------------------------------------------------------- */

/* What the request presents: a token (bearer, else ?token=) into tok, or
 * a session id into sid. */
typedef struct presented {
  char tok[CD_TOKEN_MAX_BYTES + 1];
  size_t tok_len;
  int from_query;
  const char *sid;
  size_t sid_len;
  int malformed;
} presented;

static void what_is_presented(const cd_webauth_in *in, presented *p) {
  size_t n = 0;
  const char *b = cd_webauth_bearer(in->headers, &n);
  if (b) {
    if (n > CD_TOKEN_MAX_BYTES) {
      p->malformed = 1;
      return;
    }
    memcpy(p->tok, b, n);
    p->tok_len = n;
    return;
  }
  long q = in->query ? query_token(in->query, p->tok, sizeof p->tok) : -1;
  if (q == -2 || q == 0) {
    p->malformed = 1;
    return;
  }
  if (q > 0) {
    p->tok_len = (size_t)q;
    p->from_query = 1;
    return;
  }
  p->sid = cookie(in->headers, &p->sid_len);
}

/* The principal for what p presents (set_cookie filled for a ?token=). */
static const cd_principal *resolve(cd_webauth *w, const cd_principals *set, const cd_webauth_in *in, presented *p,
                                   char *set_cookie, size_t cap, int *new_session, const char **why) {
  uint8_t h[32];
  if (p->tok_len) {
    const cd_principal *who = cd_principals_by_token(set, p->tok, p->tok_len);
    if (!who) {
      *why = "unknown token";
      return NULL;
    }
    if (!p->from_query) return who;
    char sid[2 * SID_BYTES + 1];
    if (sha256(p->tok, p->tok_len, h) || open_session(w, h, in->now_ms, sid)) {
      *why = "cannot open a session";
      return NULL;
    }
    snprintf(set_cookie, cap, "Set-Cookie: " COOKIE_NAME "=%s; Path=/; Max-Age=%llu; HttpOnly; SameSite=Strict%s\r\n",
             sid, (unsigned long long)(w->ttl_ms / 1000), in->secure ? "; Secure" : "");
    OPENSSL_cleanse(sid, sizeof sid);
    OPENSSL_cleanse(h, sizeof h);
    *new_session = 1;
    return who;
  }
  if (sha256(p->sid, p->sid_len, h)) {
    *why = "cannot hash the session id";
    return NULL;
  }
  wsession *s = find_session(w, h, in->now_ms);
  const cd_principal *who = s ? by_token_hash(set, s->token_sha256) : NULL;
  if (s && !who) { /* its principal was removed or its token changed */
    OPENSSL_cleanse(s, sizeof *s);
  }
  OPENSSL_cleanse(h, sizeof h);
  if (!who) *why = "unknown or expired session";
  return who;
}

cd_webauth_result cd_webauth_check(cd_webauth *w, cd_security *sec, const cd_webauth_in *in, cd_principal *who,
                                   char *set_cookie, size_t cap, int *new_session, const char **why,
                                   uint64_t *wait_ms) {
  *new_session = 0;
  *wait_ms = 0;
  set_cookie[0] = 0;
  presented *p = calloc(1, sizeof *p);
  if (!p) {
    *why = "out of memory";
    return CD_WEBAUTH_BAD;
  }
  what_is_presented(in, p);
  cd_webauth_result rc;
  uint64_t wait = 0;
  if (!p->malformed && !p->tok_len && !p->sid) {
    *why = "no token";
    rc = CD_WEBAUTH_MISSING;
  } else if (cd_addrs_auth_check(sec->addrs, in->host, in->now_ms, &wait) == CD_AUTH_LOCKED) {
    *why = "too many failed authentications from this address";
    rc = CD_WEBAUTH_LOCKED;
  } else if (p->malformed) {
    *why = "malformed token";
    rc = CD_WEBAUTH_BAD;
  } else {
    cd_principals *set = cd_security_principals(sec);
    const cd_principal *pr = resolve(w, set, in, p, set_cookie, cap, new_session, why);
    if (pr) *who = *pr;
    cd_principals_unref(set);
    rc = pr ? CD_WEBAUTH_OK : CD_WEBAUTH_BAD;
  }
  if (rc == CD_WEBAUTH_BAD && cd_addrs_auth_failed(sec->addrs, in->host, in->now_ms))
    CD_WARN("address locked out after failed authentications", "address=%s port=http", in->host);
  if (rc == CD_WEBAUTH_BAD) *wait_ms = wait; /* cd_addrs_auth_check's CD_AUTH_WAIT (0 for CD_AUTH_GO) */
  OPENSSL_cleanse(p, sizeof *p);
  free(p);
  return rc;
}
