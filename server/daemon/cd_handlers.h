/* cd_handlers.h — one decoded request and the code that answers each kind:
 * hello, register / has / release geometry, contact query, streams, stats.
 * Cheap requests are answered on the loop; builds and queries run on the
 * workers and answer when they finish (cd_conn keeps replies in order). */
#ifndef CD_HANDLERS_H
#define CD_HANDLERS_H

#include <stdint.h>

#include "cd_budget.h"
#include "cd_conn.h"
#include "cd_status.h"

typedef struct cd_req {
  cd_conn *conn;       /* referenced while the request lives */
  uint64_t seq;        /* reply slot */
  uint64_t request_id;
  uint64_t t0_ns;
  cd_budget budget;    /* holds the decoded envelope */
  uint64_t charged;    /* of it, counted in request_memory_bytes until freed */
  Contactd__V1__Envelope *env;
  int store_checked;   /* its ids were looked up in the store (cd_fetch.c) */
} cd_req;

/* New request on c for slot seq; its budget is the configured decode budget. */
cd_req *cd_req_new(cd_conn *c, uint64_t seq, uint64_t t0_ns);
void cd_req_free(cd_req *r);
/* Answer r with an error and free it. */
void cd_req_fail(cd_req *r, const cd_status *st);
/* Answer r with env and free it. */
void cd_req_reply(cd_req *r, Contactd__V1__Envelope *env);

/* Dispatch a decoded request (r->env set); takes ownership of r. */
void cd_handle(cd_req *r);

#endif
