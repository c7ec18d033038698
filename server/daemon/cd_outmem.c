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
 * Threads (the rules of cd_loop.h): the totals are atomic. A connection's
 * out_bytes and CD_CF_OUT_CLOSING belong to its loop; other loops see its queued
 * bytes through out_pub, and find connections through each loop's list
 * under that loop's conns_mu. A connection on another loop is never closed
 * from here: cut_state claims it once (compare-and-swap), its bytes count
 * in output_cut_pending, and a task closes it on its own loop.
 *
 * Two-way with cd_conn.c: cutting a connection is
 * closing it (cd_conn_close, with a reference held meanwhile), and a
 * connection that closes for any other reason tells this file that its
 * queued bytes are on their way out (cd_outmem_closing). */
#include "cd_outmem.h"

#include <stddef.h>
#include <unistd.h>

#include "cd__conn.h"
#include "cd_log.h"
#include "cd_loop.h"
#include "cd_server.h"

#define CUT_CLOSING UINT64_MAX /* cut_state of a closing connection */

uint64_t cd_outmem_default(void) {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  uint64_t mem = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : (uint64_t)4 << 30;
  uint64_t b = mem / 8;
  return b < ((uint64_t)64 << 20) ? (uint64_t)64 << 20 : b;
}

void cd_outmem_queued(cd_server *s, cd_conn *c, uint64_t n) {
  atomic_fetch_add(&s->output_bytes, n);
  if (c->flags & CD_CF_OUT_CLOSING) atomic_fetch_add(&s->output_cutting, n);
  atomic_store_explicit(&c->out_pub, c->out_bytes, memory_order_relaxed);
}

void cd_outmem_done(cd_server *s, cd_conn *c, uint64_t n) {
  atomic_fetch_sub(&s->output_bytes, n);
  if (c->flags & CD_CF_OUT_CLOSING) atomic_fetch_sub(&s->output_cutting, n);
  atomic_store_explicit(&c->out_pub, c->out_bytes, memory_order_relaxed);
}

void cd_outmem_closing(cd_server *s, cd_conn *c) {
  const uint64_t claimed = atomic_exchange(&c->cut_state, CUT_CLOSING);
  if (claimed && claimed != CUT_CLOSING) atomic_fetch_sub(&s->output_cut_pending, claimed - 1);
  if (c->flags & CD_CF_OUT_CLOSING) return;
  c->flags |= CD_CF_OUT_CLOSING;
  atomic_fetch_add(&s->output_cutting, c->out_bytes);
}

/* On c's loop. */
static void cut_now(cd_conn *c) {
  char q[96];
  CD_WARN("output memory over budget: disconnecting the connection with the most unread replies",
          "conn=%llu peer=%s queued_bytes=%llu output_bytes=%llu output_memory_bytes=%llu", (unsigned long long)c->id,
          cd_log_quote(q, sizeof q, c->peer), (unsigned long long)c->out_bytes,
          (unsigned long long)atomic_load(&c->srv->output_bytes), (unsigned long long)c->srv->output_budget);
  if (!cd_conn_gone(c)) cd_conn_close(c, "output_memory_bytes: the connection holding the most unread replies is cut");
}

static void run_cut(cd_task *t) {
  cd_conn *c = (cd_conn *)((char *)t - offsetof(cd_conn, cut_task));
  cut_now(c);
  cd_conn_unref(c);
}

/* The open connection holding the most queued bytes that nobody is cutting
 * yet, with a reference (NULL when none holds any). */
static cd_conn *find_worst(cd_server *s) {
  cd_conn *worst = NULL;
  uint64_t most = 0;
  for (int i = 0; i < s->nloops; i++) {
    cd_loop *l = &s->loops[i];
    pthread_mutex_lock(&l->conns_mu);
    for (cd_conn *c = l->conns; c; c = c->next) {
      const uint64_t b = atomic_load_explicit(&c->out_pub, memory_order_relaxed);
      if (b <= most || atomic_load(&c->cut_state)) continue;
      cd_conn_ref(c); /* linked, so its socket's reference still holds it */
      if (worst) cd_conn_unref(worst);
      worst = c;
      most = b;
    }
    pthread_mutex_unlock(&l->conns_mu);
  }
  return worst;
}

/* Claim c (referenced) for cutting, count its bytes as going, close it on
 * its loop. 0 when another loop or its own close claimed it first. */
static int cut(cd_server *s, cd_conn *c) {
  const uint64_t n = atomic_load_explicit(&c->out_pub, memory_order_relaxed);
  uint64_t free_state = 0;
  atomic_fetch_add(&s->output_cut_pending, n); /* before the claim: cd_outmem_closing may give it back at once */
  if (!atomic_compare_exchange_strong(&c->cut_state, &free_state, n + 1)) {
    atomic_fetch_sub(&s->output_cut_pending, n);
    cd_conn_unref(c);
    return 0;
  }
  s->stats.disconnects_output_memory++;
  if (c->loop == cd_loop_current()) {
    cut_now(c);
    cd_conn_unref(c);
    return 1;
  }
  c->cut_task.run = run_cut;
  if (cd_loop_post(c->loop, &c->cut_task) != 0) cd_conn_unref(c); /* its loop is closing it anyway */
  return 1;
}

static int over_budget(cd_server *s) {
  const uint64_t held = atomic_load(&s->output_bytes);
  const uint64_t going = atomic_load(&s->output_cutting) + atomic_load(&s->output_cut_pending);
  return held > going && held - going > s->output_budget;
}

void cd_outmem_check(cd_server *s) {
  if (!s->output_budget) return;
  while (over_budget(s)) {
    cd_conn *worst = find_worst(s);
    if (!worst) return;
    cut(s, worst);
  }
}
