/* cd_spare.h — a listener's spare handle, for the connection we cannot
 * serve because there is no memory for its state.
 *
 * libuv watches a listener again only after uv_accept: a connection left
 * pending stops all accepting on that listener, for good. The spare
 * accepts it and closes it at once, allocating nothing. While the spare is
 * closing, the next such connection waits for it (the listener is not
 * watched meanwhile, so at most one waits). */
#ifndef CD_SPARE_H
#define CD_SPARE_H

#include <uv.h>

typedef struct cd_spare {
  union {
    uv_tcp_t tcp;
    uv_pipe_t pipe;
  } h;
  uv_stream_t *listener;
  int is_tcp;
  int busy;    /* h is closing */
  int waiting; /* a connection waits for h */
  /* Called when h has closed and nothing waits (an owner that is being
   * freed must wait for this while busy). May be NULL. */
  void (*on_idle)(void *arg);
  void *arg;
} cd_spare;

/* For `listener` (a uv_tcp_t when is_tcp, else a uv_pipe_t). */
void cd_spare_init(cd_spare *s, uv_stream_t *listener, int is_tcp);
/* Accept the pending connection and close it (or let it wait for the
 * spare). Nothing happens once the listener is closing. */
void cd_spare_take(cd_spare *s);

#endif
