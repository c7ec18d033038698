/* cd_dispatch.c — request kind -> handler. A request is refused while the
 * server drains, may first wait for geometry from the store (cd_fetch.h),
 * then goes to the handler its message case names in the table below; an
 * envelope carrying no request, or a reply, is answered with INVALID. */
#include "cd_dispatch.h"

#include "cd_proto.h"
#include "cd_auth.h"
#include "cd_fetch.h"
#include "cd_handlers.h"
#include "cd_server.h"
#include "cd_session.h"
#include "cd_stream.h"

typedef void (*handler_fn)(cd_req *r);

/* Indexed by the envelope's message case (a field number): the requests. */
static const handler_fn handlers[] = {
    [CONTACTD__V1__ENVELOPE__MSG_HELLO] = cd_handlers_hello,
    [CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY] = cd_handlers_register,
    [CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY] = cd_handlers_has,
    [CONTACTD__V1__ENVELOPE__MSG_RELEASE_GEOMETRY] = cd_handlers_release,
    [CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY] = cd_handlers_query,
    [CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM] = cd_stream_open,
    [CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE] = cd_stream_update,
    [CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM] = cd_stream_close,
    [CONTACTD__V1__ENVELOPE__MSG_STATS] = cd_handlers_stats,
};

/* The replies a client may send by mistake, by their JSON names. */
static const char *const reply_names[] = {
    [CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY] = "helloReply",
    [CONTACTD__V1__ENVELOPE__MSG_REGISTER_REPLY] = "registerReply",
    [CONTACTD__V1__ENVELOPE__MSG_REGISTER_PROGRESS] = "registerProgress",
    [CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY_REPLY] = "hasGeometryReply",
    [CONTACTD__V1__ENVELOPE__MSG_RELEASE_REPLY] = "releaseReply",
    [CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY] = "contactReply",
    [CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM_REPLY] = "openStreamReply",
    [CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT] = "streamResult",
    [CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM_REPLY] = "closeStreamReply",
    [CONTACTD__V1__ENVELOPE__MSG_STATS_REPLY] = "statsReply",
    [CONTACTD__V1__ENVELOPE__MSG_ERROR] = "error",
};

#define COUNT(a) (sizeof(a) / sizeof *(a))

const cd_proto cd_protocol = {.request = cd_dispatch, .closed = cd_session_close};

static void not_a_request(cd_req *r) {
  const Contactd__V1__Envelope *e = r->env;
  const unsigned mc = (unsigned)e->msg_case;
  cd_status st;
  if (e->msg_case == CONTACTD__V1__ENVELOPE__MSG__NOT_SET) {
    if (e->base.n_unknown_fields)
      cd_status_set(&st, CD_INVALID, "msg",
                    "the envelope carries no request this server knows (unknown field number %u)",
                    e->base.unknown_fields[0].tag);
    else
      cd_status_set(&st, CD_INVALID, "msg", "the envelope carries no request");
  } else {
    const char *n = mc < COUNT(reply_names) ? reply_names[mc] : NULL;
    cd_status_set(&st, CD_INVALID, n ? n : "msg", "%s is a reply, not a request", n ? n : "this message");
  }
  cd_req_fail(r, &st);
}

void cd_dispatch(cd_req *r) {
  if (cd_conn_server(r->conn)->draining) {
    cd_status st;
    cd_status_set(&st, CD_UNAVAILABLE, "", "%s", "the server is shutting down");
    cd_req_fail(r, &st);
    return;
  }
  if (cd_auth_gate(r)) return;       /* who it is, and whether it may (cd_auth.h) */
  if (cd_fetch_intercept(r)) return; /* ids to look up in the store first */
  const unsigned mc = (unsigned)r->env->msg_case;
  const handler_fn h = mc < COUNT(handlers) ? handlers[mc] : NULL;
  if (h) h(r);
  else not_a_request(r);
}
