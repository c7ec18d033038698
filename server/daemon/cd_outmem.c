/* cd_outmem.c — output_memory_bytes: one bound for the reply bytes queued on
 * every connection together (handed to libuv, write callback not run yet),
 * as Redis 7 bounds its clients' output buffers with maxmemory-clients.
 *
 * max_output_bytes bounds each connection alone; with max_connections
 * clients that each stop reading just short of it, the daemon would still
 * hold max_connections times that. Past output_memory_bytes the connection
 * holding the most queued reply bytes is closed, then the next, until the
 * rest fits. A client that reads holds at most the replies of one loop turn,
 * so the ones cut are those that stopped reading. The bytes of connections
 * already being cut are not counted again: their memory goes as their
 * writes are cancelled.
 *
 * Under the protocol lock; a connection on another loop is closed there (a
 * task holding a reference). */
#include "cd_outmem.h"

#include <stddef.h>
#include <unistd.h>

#include "cd_conn.h"
#include "cd_log.h"
#include "cd_loop.h"
#include "cd_server.h"

uint64_t cd_outmem_default(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t mem = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)4 << 30;
  uint64_t b = mem / 8;
  return b < ((uint64_t)64 << 20) ? (uint64_t)64 << 20 : b;
}

void cd_outmem_queued(cd_server *s, uint64_t n) { s->output_bytes += n; }

void cd_outmem_done(cd_server *s, cd_conn *c, uint64_t n) {
  s->output_bytes -= n;
  if (c->out_cut) s->output_cutting -= n;
}

void cd_outmem_closing(cd_server *s, cd_conn *c) {
  if (c->out_cut) return;
  c->out_cut = 1;
  s->output_cutting += c->out_bytes;
}

static void run_cut(cd_task *t) {
  cd_conn *c = (cd_conn *)((char *)t - offsetof(cd_conn, cut_task));
  if (!c->closing) cd_conn_close(c, "output_memory_bytes: the connection holding the most unread replies is cut");
  cd_conn_unref(c);
}

static void cut(cd_server *s, cd_conn *c) {
  char q[96];
  s->stats.disconnects_output_memory++;
  CD_WARN("output memory over budget: disconnecting the connection with the most unread replies",
          "conn=%llu peer=%s queued_bytes=%llu output_bytes=%llu output_memory_bytes=%llu", (unsigned long long)c->id,
          cd_log_quote(q, sizeof q, c->peer), (unsigned long long)c->out_bytes,
          (unsigned long long)s->output_bytes, (unsigned long long)s->output_budget);
  cd_outmem_closing(s, c); /* counted as going from now */
  if (c->loop == cd_loop_current()) {
    cd_conn_close(c, "output_memory_bytes: the connection holding the most unread replies is cut");
    return;
  }
  cd_conn_ref(c);
  c->cut_task.run = run_cut;
  if (cd_loop_post(c->loop, &c->cut_task) != 0) cd_conn_unref(c);
}

void cd_outmem_check(cd_server *s) {
  while (s->output_budget && s->output_bytes - s->output_cutting > s->output_budget) {
    cd_conn *worst = NULL;
    for (int i = 0; i < s->nloops; i++)
      for (cd_conn *c = s->loops[i].conns; c; c = c->next)
        if (!c->closing && !c->out_cut && c->out_bytes && (!worst || c->out_bytes > worst->out_bytes)) worst = c;
    if (!worst) return;
    cut(s, worst);
  }
}
