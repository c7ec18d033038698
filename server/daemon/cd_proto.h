/* cd_proto.h — the seam between the daemon's two layers.
 *
 * Transport (cd_conn.c, cd_input.c, cd_output.c, cd_req.c, cd_outmem.c;
 * cd_server.c and cd_loop.c above them; the connection's structure is in
 * their private header, cd__conn.h): sockets, reading, framing (protobuf delimited or JSON lines),
 * request memory admission, decoding, the reply ring that keeps replies in
 * request order, encoding, the write queue, timeouts and closing.
 * Protocol (cd_dispatch.c, cd_handlers.c, cd_stream.c, cd_session.c and the
 * query files): what each request means and what answers it.
 *
 * They meet here and nowhere else:
 *  - transport -> protocol: cd_proto, a table of two functions the server
 *    is given at start-up. The transport calls `request` with each decoded
 *    request and `closed` when a connection goes; it never calls a protocol
 *    function by name.
 *  - protocol -> transport: the reply functions below, and cd_conn_ref /
 *    cd_conn_unref / cd_conn_gone for work that outlives the call. To the
 *    protocol a connection is an opaque handle: it reads the connection's
 *    identity through the accessors below (server, loop, id, peer, wire,
 *    cancel flag, job queue) and owns its session, but never sees its
 *    handles, ring or buffers (tests/docs/check_layout.py keeps the
 *    protocol's files from including cd__conn.h).
 * Every function here runs on the loop that owns the connection. */
#ifndef CD_PROTO_H
#define CD_PROTO_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "cd_budget.h"
#include "cd_splice.h"
#include "cd_status.h"
#include "contactd.pb-c.h"

typedef struct cd_conn cd_conn;
typedef struct cd_server cd_server;
typedef struct cd_loop cd_loop;
typedef struct cd_jobq cd_jobq;
typedef struct cd_cache_entry cd_cache_entry;
typedef struct cd_stream cd_stream;

/* One decoded request, as it crosses the seam. Made by the transport
 * (cd_input.c), owned by the protocol from `request` until it answers with
 * cd_req_reply / cd_req_fail or lets go with cd_req_free (cd_req.c). */
typedef struct cd_req {
  cd_conn *conn;       /* referenced while the request lives */
  uint64_t seq;        /* reply slot */
  uint64_t request_id;
  uint64_t t0_ns;
  cd_budget budget;    /* holds the decoded envelope */
  uint64_t charged;    /* of it, counted in request_memory_bytes until freed */
  Contactd__V1__Envelope *env;
  int store_checked;   /* its ids were looked up in the store (cd_fetch.c) */
  /* A StreamUpdate's stream and sequence (0 for other requests), read from
   * the frame even when it fails to decode where they can be: every error
   * answering it names them (cd_req_fail), so a client matches the error to
   * its update whatever request id the update carried. */
  uint64_t stream_id, sequence;
} cd_req;

/* A connection's protocol state (cd_session.c): the geometry it holds and
 * its streams. Embedded in the connection (cd_conn_session), zeroed at
 * accept; the transport never reads it. */
typedef struct cd_session {
  cd_cache_entry **geoms;
  size_t ngeoms, geoms_cap;
  cd_stream *streams;
  uint64_t last_stream_id; /* ids are handed out in order from 1 */
  /* Authentication (cd_auth.c), when principals are set: who the
   * connection is, from the principals it was recognised under (held). */
  const struct cd_principal *principal;
  struct cd_principals *principals;
  int auth_waiting; /* a failed Hello's answer is being delayed */
} cd_session;

/* transport -> protocol */
typedef struct cd_proto {
  void (*request)(cd_req *r); /* answer r (a decoding error is answered by the transport) */
  void (*closed)(cd_conn *c); /* c is closing: drop its session */
} cd_proto;

/* protocol -> transport: a connection, as the protocol sees it (cd_conn.c). */
cd_server *cd_conn_server(const cd_conn *c);
cd_loop *cd_conn_loop(const cd_conn *c); /* the loop that owns it */
uint64_t cd_conn_id(const cd_conn *c);
const char *cd_conn_peer(const cd_conn *c); /* "host:port", or the socket path */
/* It speaks protobuf frames (so its replies may be packed by the workers,
 * cd_splice.h), not JSON lines. */
int cd_conn_is_proto(const cd_conn *c);
/* Set when it closes; read by the workers: its query jobs stop early. */
const atomic_int *cd_conn_cancel_flag(const cd_conn *c);
/* Its jobs' queue on the worker pool (served in turn with other clients'). */
cd_jobq *cd_conn_jobs(cd_conn *c);
cd_session *cd_conn_session(cd_conn *c);
/* A request in progress holds a reference (the connection outlives it). */
void cd_conn_ref(cd_conn *c);
void cd_conn_unref(cd_conn *c);
/* The socket is closed or closing: results are dropped. */
int cd_conn_gone(const cd_conn *c);
/* Who is at the other end: the peer's address without its port ("unix" on
 * the Unix socket); the verified client certificate's subject after a
 * mutual-TLS handshake ("" otherwise); a Unix-socket peer's uid and gid
 * (SO_PEERCRED; -1 on TCP). */
const char *cd_conn_host(const cd_conn *c);
const char *cd_conn_tls_subject(const cd_conn *c);
int cd_conn_peer_cred(const cd_conn *c, uid_t *uid, gid_t *gid);
/* The connection has said what it must (its first request; its
 * authentication when principals are set): hello_timeout_ms no longer
 * applies, idle_timeout_ms does. */
void cd_conn_greet(cd_conn *c);

/* protocol -> transport: answer a request (cd_req.c). */
/* Answer r with env (its request_id set here) / with an error, and free r.
 * The error of a StreamUpdate also names its stream and sequence. */
void cd_req_reply(cd_req *r, Contactd__V1__Envelope *env);
void cd_req_fail(cd_req *r, const cd_status *st);
/* Let r go without answering (its slot is answered some other way). */
void cd_req_free(cd_req *r);

/* protocol -> transport: fill a reply slot (cd_output.c). */
/* Fill reply slot seq of c with env (encoded now) / an error / nothing. */
void cd_output_reply(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env);
void cd_output_reply_error(cd_conn *c, uint64_t seq, uint64_t request_id, const cd_status *st);
/* The error of a stream's computation: also names the stream and the
 * update's sequence number (request_id is the OpenStream's). */
void cd_output_reply_stream_error(cd_conn *c, uint64_t seq, uint64_t request_id, uint64_t stream_id,
                                  uint64_t sequence, const cd_status *st);
void cd_output_skip(cd_conn *c, uint64_t seq);
/* A reply that may be large: size_hint (bytes of its converted results) of
 * CD_ENCODE_OFF_LOOP_BYTES or more has it encoded on the codec thread.
 * env and all it points to stay valid until release(arg) runs on the loop:
 * at once when the reply is encoded here, else once it is encoded. */
void cd_output_reply_large(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env, uint64_t size_hint,
                           void (*release)(void *arg), void *arg);
/* The same for a protobuf reply whose repeated field `field` of inner
 * (env's message, which leaves that field empty) was packed apart into
 * parts, in order (cd_splice.h): the frame is that concatenation with the
 * rest of env packed around it, byte for byte what packing the whole env
 * gives, and it is held to max_reply_bytes as an encoded one is. env,
 * inner and parts stay valid until release(arg). */
void cd_output_reply_spliced(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env, const ProtobufCMessage *inner,
                             uint32_t field, const cd_splice_part *parts, size_t nparts, uint64_t size_hint,
                             void (*release)(void *arg), void *arg);
/* An intermediate message (RegisterProgress) for the request in slot seq:
 * written at once when every earlier reply has been written (seq is the
 * oldest in flight), else dropped — progress is advisory and never
 * reorders replies. */
void cd_output_progress(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env);

#endif
