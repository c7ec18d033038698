/* cd_conn.h — one client connection: input framing (protobuf delimited, or
 * newline-delimited JSON when the first byte is '{'), the in-flight limit,
 * the reorder buffer that makes replies leave in request order even when
 * computed out of order, the output-bytes limit, the idle timer, and the
 * session's geometry references and streams. On the owning loop's thread,
 * without a lock (the exceptions are listed in cd_loop.h). */
#ifndef CD_CONN_H
#define CD_CONN_H

#include <stdatomic.h>
#include <stdint.h>
#include <uv.h>

#include "cd_budget.h"
#include "cd_cache.h"
#include "cd_frame.h"
#include "cd_pool.h"
#include "cd_status.h"
#include "cd_task.h"

typedef struct cd_server cd_server;
typedef struct cd_stream cd_stream;
typedef struct cd_conn cd_conn;

typedef enum { CD_SLOT_FREE = 0, CD_SLOT_WAITING, CD_SLOT_READY, CD_SLOT_SKIP } cd_slot_state;

typedef struct cd_slot {
  cd_slot_state state;
  char *data; /* encoded reply (frame or JSON line), malloc'd */
  size_t len;
  uint64_t t0_ns;
  int is_error;
} cd_slot;

typedef enum { CD_WIRE_UNKNOWN = 0, CD_WIRE_PROTO, CD_WIRE_JSON } cd_wire;

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
  int handles_open;   /* h and idle: closed asynchronously */
  int linked;         /* in the server's list and counted in stats.connections */
  atomic_int cancelled; /* set on close; read by workers: the connection's query jobs stop early */
  atomic_int refs;    /* 1 for the socket + one per request in progress (atomic: see cd_conn_ref) */
  int closing;        /* close requested: no more input or replies */
  int eof;            /* peer half-closed: finish, flush, then close */
  int fatal;          /* input cannot go on: close once queued replies flush */
  int rejected;       /* over max_connections: closed without lingering */
  int lingering;      /* fatal, replies written, write side shut: reading and dropping */
  uv_shutdown_t shut;
  const char *fatal_why; /* why, for the log: "framing error" or "slow sender" */
  int reading;
  int processing;     /* inside process(): flush must not resume input */
  int decoding;       /* a body is on the codec thread: input waits for it */
  cd_wire wire;
  cd_frame_decoder dec;
  /* JSON line assembly */
  char *line;
  size_t line_len, line_cap;
  int line_overflow;  /* current line exceeded the cap: skip to newline */
  /* input held back while the in-flight limit is reached, or while the next
   * frame waits for request_memory_bytes */
  uint8_t *held;
  size_t held_len;
  /* This connection's share of the server's request_bytes: the frame being
   * received (its announced length, taken before it is buffered; 1 for a
   * JSON line) and the JSON line buffer; `admitted` while that frame or
   * line is taken; `mem_waiting` while the next one waits in the server's
   * queue (mem_next). While any connection waits, one whose admitted frame
 * arrives slower than frame_grace_ms + bytes / frame_min_rate_bytes is
 * closed (the server's mem_sweep timer). */
  uint64_t frame_charge, line_charge;
  uint64_t admit_ns; /* when the frame being received was taken */
  int admitted, mem_waiting;
  cd_conn *mem_next;
  /* reorder ring: sequence numbers base .. next-1 are in flight */
  cd_slot *ring;
  uint64_t ring_cap, base_seq, next_seq;
  uint64_t out_bytes; /* reply bytes handed to uv_write whose callback has not run */
  struct cd_wreq *wq_head, *wq_tail; /* pending writes, oldest first (they complete in order) */
  /* output_memory_bytes (cd_outmem.c): out_closing: its out_bytes no
   * longer count (this loop); out_pub: out_bytes for the other loops;
   * cut_state: claimed for cutting, or closing (atomic); the task that cuts
   * it on this loop */
  int out_closing;
  _Atomic uint64_t out_pub, cut_state;
  cd_task cut_task;
  uint64_t requests;
  cd_budget scratch;  /* JSON encoding */
  cd_jobq jobs;       /* this client's jobs on the worker pool (served in turn with other clients') */
  /* session */
  cd_cache_entry **geoms;
  size_t ngeoms, geoms_cap;
  cd_stream *streams;
  uint64_t next_stream_id;
  cd_conn *prev, *next;
};

/* Open an accepted descriptor (TCP or pipe) as a connection of loop l, on
 * l's thread. -1 when there was no memory for it (the caller closes fd);
 * while the server drains, fd is closed here. */
int cd_conn_adopt(struct cd_loop *l, uv_os_sock_t fd, int is_tcp);

/* Reserve the next reply slot (called by the decoder for every frame). */
uint64_t cd_conn_reserve(cd_conn *c, uint64_t t0_ns);
/* Fill a slot with the reply envelope (encoded now) / an error / nothing. */
void cd_conn_reply(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env);
/* A reply that may be large: size_hint (bytes of its converted results) of
 * CD_ENCODE_OFF_LOOP_BYTES or more has it encoded on the codec thread.
 * env and all it points to stay valid until release(arg) runs on the loop:
 * at once when the reply is encoded here, else once it is encoded. */
void cd_conn_reply_large(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env, uint64_t size_hint,
                         void (*release)(void *arg), void *arg);
void cd_conn_reply_error(cd_conn *c, uint64_t seq, uint64_t request_id, const cd_status *st);
/* The error of a stream's computation: also names the stream and the
 * update's sequence number (request_id is the OpenStream's). */
void cd_conn_reply_stream_error(cd_conn *c, uint64_t seq, uint64_t request_id, uint64_t stream_id,
                                uint64_t sequence, const cd_status *st);
void cd_conn_skip(cd_conn *c, uint64_t seq);
/* An intermediate message (RegisterProgress) for the request in slot seq:
 * written at once when every earlier reply has been written (seq is the
 * oldest in flight), else dropped — progress is advisory and never
 * reorders replies. */
void cd_conn_progress(cd_conn *c, uint64_t seq, Contactd__V1__Envelope *env);

/* request_memory_bytes: a decoded request holding n bytes was answered (or
 * charged, with cd_conn_input_charge); a connection whose next frame waits
 * for room is let in from the loop's next turn. Loop thread only. */
void cd_conn_input_charge(cd_server *s, uint64_t n);
void cd_conn_input_released(cd_server *s, uint64_t n);

/* A request in progress holds a reference (the conn outlives it). */
void cd_conn_ref(cd_conn *c);
void cd_conn_unref(cd_conn *c);
/* The socket is closed or closing: results are dropped. */
static inline int cd_conn_gone(const cd_conn *c) { return c->closing; }

/* Close now (logged with reason). */
void cd_conn_close(cd_conn *c, const char *reason);
/* Shutdown: close once in-flight work is answered and flushed. */
void cd_conn_drain(cd_conn *c);

/* Session geometry references. Adding an id already held is a no-op.
 * -1 when out of memory (the session does not hold it then). */
int cd_conn_hold_geometry(cd_conn *c, cd_cache_entry *e);
/* 1 if the session held e (and now does not). */
int cd_conn_release_geometry(cd_conn *c, cd_cache_entry *e);

#endif
