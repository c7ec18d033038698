/* cd_handlers.h — the handlers of the requests other than streams: hello,
 * register / has / release geometry, contact query, stats (cd_dispatch.c
 * picks one by the request's message case). Cheap requests are answered
 * on the loop; builds and queries run on the workers and answer when they
 * finish (the transport keeps replies in order). Each takes ownership of
 * r and answers it exactly once. */
#ifndef CD_HANDLERS_H
#define CD_HANDLERS_H

#include "cd_proto.h"

void cd_handlers_hello(cd_req *r);
void cd_handlers_register(cd_req *r);
void cd_handlers_has(cd_req *r);
void cd_handlers_release(cd_req *r);
void cd_handlers_query(cd_req *r);
void cd_handlers_stats(cd_req *r);

#endif
