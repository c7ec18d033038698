/* cd_auth.h — who a connection is and what it may do, when the server has
 * principals (cd_principals.h, docs/security.md). Every request passes the
 * gate before it is dispatched:
 *  - authentication: a connection is its principal from its verified
 *    client certificate (mutual TLS), from its Unix-socket peer's uid or
 *    gid, or from the token of a Hello. Until then every request but Hello
 *    is answered UNAUTHENTICATED. A wrong token is counted against the
 *    peer's address (cd_addrs.h): past half of auth_fail_max the answer
 *    waits auth_fail_delay_ms, at auth_fail_max the address is locked out
 *    for auth_lockout_ms (refused without its token being checked);
 *  - roles: a request outside the principal's roles is answered
 *    PERMISSION_DENIED naming the role it needs.
 * Without principals every request passes, as before. */
#ifndef CD_AUTH_H
#define CD_AUTH_H

#include "cd_proto.h"

/* 1 when r was answered here (refused, or a failed Hello), 0 when it goes
 * on to its handler. */
int cd_auth_gate(cd_req *r);

/* Fill a HelloReply's principal, tenant and roles for r's connection
 * (roles from a static table; nothing to free). */
void cd_auth_describe(cd_conn *c, Contactd__V1__HelloReply *hr, char **roles, size_t cap);

#endif
