/* cd__conn.h — one client connection, the transport's private header
 * (cd_proto.h is where the transport meets the protocol, which sees a
 * connection only as an opaque handle and the accessors declared there).
 * Private to: cd_conn.c cd_input.c cd_output.c cd_req.c cd_outmem.c cd_server.c
 * (tests/docs/check_layout.py keeps every other file from including it).
 * What the server (cd_server.c) and cd_outmem.c do with a connection keeps
 * cd_conn_ names (adopt, drain, close); what the connection's own files
 * share starts with cd__. Four files hold a connection's code:
 *  - cd_conn.c: the lifecycle: accept, the state below, the idle and linger
 *    timers, reading from the socket, closing and freeing; the accessors the
 *    protocol reads a connection through;
 *  - cd_input.c: input: framing (protobuf delimited, or newline-delimited
 *    JSON when the first byte is '{'), the in-flight limit, request memory
 *    admission (request_memory_bytes, slow senders), decoding on the loop or
 *    the codec thread, and the hand-off of each request to the protocol;
 *  - cd_output.c: output: the reorder ring that makes replies leave in
 *    request order even when computed out of order, encoding (on the codec
 *    thread when large), the write queue and the output-bytes limit;
 *  - cd_req.c: a request's end (answered or let go).
 * On the owning loop's thread, without a lock (the exceptions are listed in
 * cd_loop.h). The files call each other: they are one layer, split by
 * concept, over one structure. */
#ifndef CD__CONN_H
#define CD__CONN_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "cd_budget.h"
#include "cd_frame.h"
#include "cd_pool.h"
#include "cd_proto.h"
#include "cd_task.h"

typedef struct cd_server cd_server;

typedef enum { CD_SLOT_FREE = 0, CD_SLOT_WAITING, CD_SLOT_READY, CD_SLOT_SKIP } cd_slot_state;

typedef struct cd_slot {
  cd_slot_state state;
  char *data; /* encoded reply (frame or JSON line), malloc'd */
  size_t len;
  uint64_t t0_ns;
  uint64_t request_id; /* its request's, once decoded (0: none, or not decoded) */
  int is_error;
} cd_slot;

typedef enum { CD_WIRE_UNKNOWN = 0, CD_WIRE_PROTO, CD_WIRE_JSON } cd_wire;

/* The lifecycle of a connection (transitions: cd_conn.c). */
typedef enum {
  CD_CONN_OPEN = 0,   /* reading requests, answering them */
  CD_CONN_PEER_DONE,  /* the peer half-closed: answer what is in flight, flush, close */
  CD_CONN_FAILED,     /* input cannot go on: close (or linger) once queued replies flush */
  CD_CONN_LINGERING,  /* failed, replies written, write side shut: reading and dropping */
  CD_CONN_CLOSED,     /* closing: handles closing, no more input or replies */
} cd_conn_state;

/* Flags: what the connection is doing now, within its state. */
enum {
  CD_CF_LINKED = 1u << 0,     /* in its loop's list and counted in stats.connections */
  CD_CF_NO_LINGER = 1u << 1,  /* a failure closes without lingering (peer gone, or a refused connection) */
  CD_CF_READING = 1u << 2,    /* uv_read_start is on */
  CD_CF_PROCESSING = 1u << 3, /* inside the input's frame loop: a flush must not resume input */
  CD_CF_DECODING = 1u << 4,   /* a body is on the codec thread: input waits for it */
  CD_CF_LINE_OVER = 1u << 5,  /* the JSON line being read is over the cap: skip to its newline */
  CD_CF_ADMITTED = 1u << 6,   /* the frame (or line) being received holds request memory */
  CD_CF_OUT_CLOSING = 1u << 7, /* its out_bytes no longer count in output_memory_bytes (cd_outmem.c) */
  CD_CF_SEATED = 1u << 8,     /* holds one of max_connections' seats (cd_server.seated) */
};

typedef struct cd_conn cd_conn;
struct cd_conn {
  cd_server *srv;
  struct cd_loop *loop; /* the loop that owns it: every handle and callback of it runs there */
  uint64_t id;
  char peer[80];
  union {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } h;
  uv_timer_t idle;
  cd_conn_state state;
  unsigned flags;     /* CD_CF_* */
  int handles_open;   /* h and idle: closed asynchronously */
  atomic_int cancelled; /* set on close; read by workers: the connection's query jobs stop early */
  atomic_int refs;    /* 1 for the socket + one per request in progress (atomic: see cd_conn_ref) */
  uv_shutdown_t shut;
  const char *fatal_why; /* why it failed, for the log: "framing error" or "slow sender" */
  cd_wire wire;
  cd_frame_decoder dec;
  /* JSON line assembly */
  char *line;
  size_t line_len, line_cap;
  /* input held back while the in-flight limit is reached, or while the next
   * frame waits for request_memory_bytes */
  uint8_t *held;
  size_t held_len;
  /* This connection's share of the server's request_bytes: the frame being
   * received (its announced length, taken before it is buffered; 1 for a
   * JSON line) and the JSON line buffer; CD_CF_ADMITTED while that frame or
   * line is taken; `mem_waiting` while the next one waits in the server's
   * queue (mem_next; both under the server's mem_mu). While any connection
   * waits, one whose admitted frame arrives slower than frame_grace_ms +
   * bytes / frame_min_rate_bytes is closed (the loop's mem_sweep timer). */
  uint64_t frame_charge, line_charge;
  uint64_t admit_ns; /* when the frame being received was taken */
  int mem_waiting;
  cd_conn *mem_next;
  /* reorder ring: sequence numbers base .. next-1 are in flight */
  cd_slot *ring;
  uint64_t ring_cap, base_seq, next_seq;
  uint64_t out_bytes; /* reply bytes handed to uv_write whose callback has not run */
  struct cd_wreq *wq_head, *wq_tail; /* pending writes, oldest first (they complete in order) */
  /* output_memory_bytes (cd_outmem.c): out_pub: out_bytes for the other
   * loops; cut_state: claimed for cutting, or closing (atomic); the task
   * that cuts it on this loop */
  _Atomic uint64_t out_pub, cut_state;
  cd_task cut_task;
  uint64_t requests;
  cd_budget scratch;  /* JSON encoding */
  cd_jobq jobs;       /* this client's jobs on the worker pool (served in turn with other clients') */
  cd_session session; /* the protocol's (cd_proto.h: cd_conn_session) */
  /* TLS (cd_tls.h): tls_ctx is the listener's context taken at accept
   * (NULL: no TLS on this connection); the first bytes decide (`sniffed`)
   * whether tls, the session, is made: always when TLS is required, else
   * only for a ClientHello. */
  struct cd_tls_ctx *tls_ctx;
  struct cd_tls *tls;
  int sniffed;
  /* hello_timeout_ms: until the protocol calls cd_conn_greet (its first
   * request, or its authentication when principals are set) the idle timer
   * is this deadline, and traffic does not push it back */
  int greeted;
  char host[64];      /* the peer's address without its port ("unix" on the Unix socket) */
  int counted;        /* host is counted in max_connections_per_address (cd_addrs.h) */
  int has_cred;       /* a Unix-socket peer: its uid and gid (SO_PEERCRED) */
  uid_t uid;
  gid_t gid;
  /* tls_handshake_turn_us: handshake bytes received while the loop's
   * budget was spent, kept for a later turn (hs_queued: on the loop's
   * hs_head list, through hs_next) */
  uint8_t *hs_buf;
  size_t hs_len;
  int hs_queued;
  cd_conn *hs_next;
  cd_conn *prev, *next;
};

/* Give an accepted descriptor (TCP or pipe) to loop l, from any thread:
 * it is opened as a connection on l's thread. -1 when l cannot take it
 * (the caller closes fd). */
int cd_conn_adopt(struct cd_loop *l, uv_os_sock_t fd, int is_tcp);

/* Close now (logged with reason). */
void cd_conn_close(cd_conn *c, const char *reason);
/* Shutdown: close once in-flight work is answered and flushed. */
void cd_conn_drain(cd_conn *c);
/* Every connection of loop l (on its thread): drain / close now. */
void cd_conn_drain_all(struct cd_loop *l);
void cd_conn_close_all(struct cd_loop *l, const char *reason);

/* request_memory_bytes: a decoded request holding n bytes was answered
 * (cd_req_free); a connection whose next frame waits for room is let in
 * from the loop's next turn. Loop thread only. */
void cd__input_released(cd_server *s, uint64_t n);

/* ---- within the transport (cd_conn.c, cd_input.c, cd_output.c, cd_req.c) -- */

static inline int cd__conn_failed(const cd_conn *c) { return c->state >= CD_CONN_FAILED; }
static inline uint64_t cd__conn_inflight(const cd_conn *c) { return c->next_seq - c->base_seq; }

/* cd_conn.c */
/* Close when its state says it is done (everything answered and written). */
void cd__conn_maybe_finish(cd_conn *c);
void cd__conn_start_reading(cd_conn *c);
void cd__conn_stop_reading(cd_conn *c);

/* cd_input.c */
/* Frame and handle n bytes of input. */
void cd__input_process(cd_conn *c, const uint8_t *data, size_t n);
/* The peer half-closed: a last JSON line without its newline is handled,
 * an unfinished frame is an error. */
void cd__input_eof(cd_conn *c);
/* Handle held input, and read again, when the in-flight limit and request
 * memory allow. */
void cd__input_resume(cd_conn *c);
/* Answer msg and close once the replies before it are written: the input
 * cannot go on (framing lost, a frame arriving too slowly, a refused
 * connection). why is the close reason logged, *counter its statistic. */
void cd__input_fatal(cd_conn *c, int code, const char *msg, const char *why, _Atomic uint64_t *counter);
/* c closes: its share of request_memory_bytes goes back. */
void cd__input_closing(cd_conn *c);

/* cd_output.c */
/* Write the TLS session's waiting ciphertext (handshake replies, alerts). */
void cd__output_tls_flush(cd_conn *c);
/* Reserve the next reply slot (for every frame). */
uint64_t cd__output_reserve(cd_conn *c, uint64_t t0_ns);
/* Write the replies that are next in order; resume input when room freed. */
void cd__output_flush(cd_conn *c);
/* Reply bytes libuv has not yet handed to the kernel. */
uint64_t cd__output_unsent(cd_conn *c);

#endif
