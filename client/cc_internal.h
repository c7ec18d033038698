/* cc_internal.h — what the parts of the C client library share (not
 * installed). Three layers, each calling only the ones below it:
 *   cc_client.c   the public calls (cc_client.h): recovery around each call;
 *   cc_recover.c  address lists, reconnecting with backoff, the kept
 *                 registrations and streams, and re-registering and
 *                 reopening them on a new connection;
 *   cc_wire.c     the client object, sockets, framing, one raw call, the
 *                 queue of stream results, errors.
 * cc_build.c (plain structs into messages) uses the public calls only. */
#ifndef CC_INTERNAL_H
#define CC_INTERNAL_H

#include "cc_client.h"

typedef Contactd__V1__Envelope Envelope;

/* Request ids of stream updates carry this bit, so that an Error for an
 * update is told apart from a late reply to an abandoned call. */
#define CC_STREAM_RID_BIT (1ULL << 63)

/* A queued stream result or stream Error (env), or a notice that a stream
 * was reopened on a new connection (env NULL, notice set). */
typedef struct cc_queued {
  Envelope *env;
  cc_error *notice;
  struct cc_queued *next;
} cc_queued;

/* A stream this client opened: kept until it is closed, to reopen it on a
 * new connection. */
typedef struct cc_open_stream {
  uint64_t stream_id; /* the caller's id: the first server's, kept across reopens */
  uint64_t server_id; /* the id on the current connection */
  uint64_t open_rid;  /* request id of the OpenStream on the current connection */
  uint64_t last_seq;  /* sequence of the last result handed to the caller */
  uint64_t sent_seq;  /* sequence of the last update sent */
  uint8_t *open_msg;  /* the OpenStream, packed */
  size_t open_len;
} cc_open_stream;

/* A registration this client made, kept (packed) to send again when a
 * server answers NOT_FOUND for its id. */
typedef struct cc_kept_reg {
  char id[CC_ID_MAX];
  uint8_t *msg;
  size_t len;
} cc_kept_reg;

struct cc_client {
  int fd;
  int timeout_ms;
  size_t max_frame;
  cc_options opt;
  char **addrs; /* the address list, tried in turn */
  size_t naddrs, cur;
  uint64_t next_rid;        /* ordinary calls */
  uint64_t next_stream_rid; /* updates (with CC_STREAM_RID_BIT) */
  uint8_t *rbuf;            /* received, not yet decoded */
  size_t rlen, rcap;
  uint8_t *wbuf;
  size_t wcap;
  cc_queued *qhead, *qtail; /* stream results / stream errors / reopen notices */
  cc_open_stream *streams;
  size_t nstreams, cstreams;
  cc_kept_reg *regs; /* oldest first */
  size_t nregs, cregs, reg_bytes;
  int broken;   /* framing lost or peer closed */
  unsigned rng;  /* backoff jitter */
  cc_progress_fn progress; /* RegisterProgress of the awaited request */
  void *progress_user;
  cc_event_fn event;
  void *event_user;
};

/* ---- cc_wire.c ------------------------------------------------------------ */

/* Fill *err (may be NULL) as raised by the client; returns code. */
int cc_wire_fail(cc_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The connection broke: fail with CC_EUNAVAILABLE, retryable. */
int cc_wire_lost(cc_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int cc_wire_ok(cc_error *err);
/* A server's Error as the caller's error; returns its code. */
int cc_wire_remote(cc_error *err, const Contactd__V1__Error *e);
int64_t cc_wire_now_ms(void);
/* Open a socket to one address ("host:port", "[v6]:port", "unix:/path"). */
int cc_wire_open(const char *addr, int timeout_ms, int *out_fd, cc_error *err);
/* Drop the socket and whatever partial frame was read; the queue stays. */
void cc_wire_drop(cc_client *c);
int cc_wire_send(cc_client *c, const Envelope *env, cc_error *err);
/* One request and its reply (no recovery); see cc_call. */
int cc_wire_call(cc_client *c, Envelope *req, Envelope **reply, cc_error *err);
/* Receive one envelope before deadline (ms since the monotonic epoch, < 0 =
 * forever). Stream results and errors get the caller's stream ids. */
int cc_wire_recv(cc_client *c, int64_t deadline, Envelope **out, cc_error *err);
int cc_wire_is_stream_rid(const cc_client *c, uint64_t rid);
/* The kept stream with this caller's id, or NULL. */
cc_open_stream *cc_wire_stream(cc_client *c, uint64_t stream_id);
void cc_wire_enqueue(cc_client *c, Envelope *env, cc_error *notice);
void cc_wire_free_queue(cc_client *c);

/* ---- cc_recover.c --------------------------------------------------------- */

/* Split a comma-separated address list into c->addrs. */
int cc_recover_set_addrs(cc_client *c, const char *list, cc_error *err);
void cc_recover_free(cc_client *c);
/* Connect to the first address of the list that answers, trying each once
 * from c->cur; 0 or the last address's error. */
int cc_recover_connect_once(cc_client *c, cc_error *err);
/* After a break: reconnect with capped exponential backoff and jitter, then
 * reopen every kept stream (re-registering geometry the new server lacks)
 * and tell the caller (event callback, and a notice per stream for
 * cc_stream_recv). 0, or CC_EUNAVAILABLE (retryable) when it gave up. */
int cc_recover_reconnect(cc_client *c, cc_error *err);
/* Keep a successful registration (bounded; the oldest go first). */
void cc_recover_keep_reg(cc_client *c, const Contactd__V1__RegisterGeometry *req, const char *id);
/* Register again the kept geometries these bodies name (the server lacks
 * them or is still building them); *sent (may be NULL) counts them. */
int cc_recover_reregister(cc_client *c, Contactd__V1__Body *const *bodies, size_t n, size_t *sent,
                          cc_error *err);
/* Keep an opened stream (the caller's id is returned in *stream_id). */
int cc_recover_keep_stream(cc_client *c, const Contactd__V1__OpenStream *m, uint64_t server_id,
                           uint64_t open_rid, uint64_t *stream_id, cc_error *err);
void cc_recover_forget_stream(cc_client *c, uint64_t stream_id);

#endif
