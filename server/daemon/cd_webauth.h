/* cd_webauth.h — who a request on the HTTP port is, when principals are
 * set (docs/security.md, "The HTTP port"). A request presents one of:
 *
 *   Authorization: Bearer <token>    a principal's token, on every request
 *                                    (scripts, curl);
 *   ?token=<token> in the URL        once: exchanged for a session, whose
 *                                    id the browser keeps in an HttpOnly,
 *                                    SameSite=Strict cookie (cd_session);
 *   Cookie: cd_session=<id>          that session.
 *
 * The cookie holds a random session id, never the token: the token is a
 * credential of the protocol port too (registering geometry, when its
 * principal may), long-lived and shared with scripts, while a session id
 * only opens the viewer, expires after viewer_session_ttl_ms, is forgotten
 * when the daemon restarts, and ends at once when its principal is removed
 * or its token changes (each request finds the principal again by the
 * token's hash in the principals in use). So a copied cookie, or a browser
 * profile left behind, never yields the token.
 *
 * Tokens, session ids and their hashes are compared in constant time
 * (CRYPTO_memcmp) and never logged. Failed tokens and unknown sessions
 * count as failed authentications of the source address (cd_addrs.h): a
 * locked-out address is refused without its credentials being checked.
 *
 * HTTP loop only (no locks): the session table belongs to the HTTP port. */
#ifndef CD_WEBAUTH_H
#define CD_WEBAUTH_H

#include <stddef.h>
#include <stdint.h>

#include "cd_principals.h"

typedef struct cd_security cd_security;
typedef struct cd_webauth cd_webauth;

/* A table of at most max_sessions sessions, each valid ttl_ms. */
cd_webauth *cd_webauth_new(uint64_t max_sessions, uint64_t ttl_ms);
void cd_webauth_free(cd_webauth *w);

typedef enum {
  CD_WEBAUTH_OK = 0,  /* *who is the principal */
  CD_WEBAUTH_MISSING, /* no credentials presented */
  CD_WEBAUTH_BAD,     /* a token or session that matches nothing (counted as a failure) */
  CD_WEBAUTH_LOCKED,  /* the address is locked out: not checked */
} cd_webauth_result;

typedef struct cd_webauth_in {
  const char *headers; /* the header lines after the request line, NUL-terminated */
  const char *query;   /* the URL's query string (after '?'), or NULL */
  const char *host;    /* the peer's address, for the failure count */
  int secure;          /* the connection is TLS: the cookie gets Secure */
  uint64_t now_ms;
} cd_webauth_in;

/* Who the request is. On CD_WEBAUTH_OK with a ?token= exchanged for a new
 * session, set_cookie receives the Set-Cookie header line (with its \r\n)
 * and *new_session is 1: the caller redirects to the URL without the token.
 * *why says what was wrong otherwise ("no token", "unknown token", ...; a
 * string literal). On CD_WEBAUTH_BAD, *wait_ms is how long the caller
 * holds its answer (auth_fail_delay_ms once the address has failed half
 * of auth_fail_max times, as on the protocol port), else 0. */
cd_webauth_result cd_webauth_check(cd_webauth *w, cd_security *sec, const cd_webauth_in *in, cd_principal *who,
                                   char *set_cookie, size_t cap, int *new_session, const char **why,
                                   uint64_t *wait_ms);

/* The value of header `name` (case-insensitive) in headers: its start
 * (leading blanks skipped) and *len (trailing blanks dropped), or NULL. */
const char *cd_webauth_header(const char *headers, const char *name, size_t *len);
/* A bearer token in an Authorization header value: its start and *len, or
 * NULL. */
const char *cd_webauth_bearer(const char *headers, size_t *len);

/* Whether p may see tenant's scenes: its own tenant, or every tenant with
 * tenant "*" or the admin role. */
int cd_webauth_sees(const cd_principal *p, const char *tenant);

#endif
