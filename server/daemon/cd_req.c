/* cd_req.c — a decoded request's end: answered (its reply goes to its slot
 * in the connection's output, cd_output.c) or let go, when its decoded
 * message's memory goes back to request_memory_bytes (cd_input.c) and the
 * connection loses the reference the request held. The protocol's way to
 * answer (cd_proto.h); the input uses it too, for a body that failed to
 * decode.
 *
 * Two-way with cd_input.c: the input makes each request and
 * answers those that fail to decode here; a request's end gives its memory
 * back to the input's admission (cd__input_released). */
#include <stdlib.h>

#include "cd__conn.h"

void cd_req_free(cd_req *r) {
  if (!r) return;
  cd__input_released(r->conn->srv, r->charged);
  cd_budget_destroy(&r->budget);
  cd_conn_unref(r->conn);
  free(r);
}

void cd_req_fail(cd_req *r, const cd_status *st) {
  cd_output_reply_stream_error(r->conn, r->seq, r->request_id, r->stream_id, r->sequence, st);
  cd_req_free(r);
}

void cd_req_reply(cd_req *r, Contactd__V1__Envelope *env) {
  env->request_id = r->request_id;
  cd_output_reply(r->conn, r->seq, env);
  cd_req_free(r);
}
