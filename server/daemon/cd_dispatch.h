/* cd_dispatch.h — the protocol's entry (cd_proto.h): each decoded request
 * goes to the handler of its message case, through one table. */
#ifndef CD_DISPATCH_H
#define CD_DISPATCH_H

#include "cd_proto.h"

/* The protocol the daemon serves: request -> cd_dispatch, closed ->
 * cd_session_close. */
extern const cd_proto cd_protocol;

/* Answer a decoded request (r->env set); takes ownership of r. */
void cd_dispatch(cd_req *r);

#endif
