/* cd_spare.c — see cd_spare.h. */
#include "cd_spare.h"

#include <string.h>

void cd_spare_init(cd_spare *s, uv_stream_t *listener, int is_tcp) {
  memset(s, 0, sizeof *s);
  s->listener = listener;
  s->is_tcp = is_tcp;
}

static void on_spare_closed(uv_handle_t *h) {
  cd_spare *s = h->data;
  s->busy = 0;
  if (s->waiting) {
    s->waiting = 0;
    cd_spare_take(s);
    if (s->busy) return;
  }
  if (s->on_idle) s->on_idle(s->arg);
}

void cd_spare_take(cd_spare *s) {
  if (uv_is_closing((uv_handle_t *)s->listener)) return;
  if (s->busy) {
    s->waiting = 1;
    return;
  }
  uv_handle_t *h = (uv_handle_t *)&s->h;
  if (s->is_tcp) uv_tcp_init(s->listener->loop, &s->h.tcp);
  else uv_pipe_init(s->listener->loop, &s->h.pipe, 0);
  h->data = s;
  s->busy = 1;
  uv_accept(s->listener, (uv_stream_t *)h);
  uv_close(h, on_spare_closed);
}
