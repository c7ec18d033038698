/* test_daemon_load.c — 200 concurrent clients x 1,000 queries each against
 * the real contactd (as the suite runs it, and with more event loops than
 * cores): every reply arrives, in request order per client, and
 * carries exactly the force a single client computed for the same input
 * (the engine is deterministic). One thread drives all sockets with poll();
 * each client keeps a few queries in flight. */
#include <criterion/criterion.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "cd_frame.h"
#include "cd_test_client.h"

typedef Contactd__V1__Envelope Env;

#define CLIENTS 200
#define QUERIES 1000
#define WINDOW 4
#define VARIANTS 8

static char *sphere, *plane;

static void make_query(Env *e, Contactd__V1__ContactQuery *q, Contactd__V1__Body **bodies,
                       Contactd__V1__Body *b, Contactd__V1__Pose *p, Contactd__V1__Vec3 *v, Contactd__V1__Pair *pr,
                       Contactd__V1__Pair **prs, int variant, uint64_t id) {
  /* half the variants touch the plane (depths 2..8 mm), half are clear of it */
  double z = variant < VARIANTS / 2 ? 0.1 - 0.002 * (variant + 1) : 0.5 + variant;
  tc_body(&b[0], &p[0], &v[0], 1, sphere, 0.01 * variant, 0, z);
  tc_body(&b[1], &p[1], &v[1], 2, plane, 0, 0, 0);
  bodies[0] = &b[0];
  bodies[1] = &b[1];
  contactd__v1__pair__init(pr);
  pr->a = 1;
  pr->b = 2;
  prs[0] = pr;
  contactd__v1__contact_query__init(q);
  q->n_bodies = 2;
  q->bodies = bodies;
  q->n_pairs = 1;
  q->pairs = prs;
  contactd__v1__envelope__init(e);
  e->request_id = id;
  e->msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e->contact_query = q;
}

static uint8_t *encode(int variant, uint64_t id, size_t *len) {
  Env e;
  Contactd__V1__ContactQuery q;
  Contactd__V1__Body b[2], *bodies[2];
  Contactd__V1__Pose p[2];
  Contactd__V1__Vec3 v[2];
  Contactd__V1__Pair pr, *prs[1];
  make_query(&e, &q, bodies, b, p, v, &pr, prs, variant, id);
  size_t body;
  *len = cd_frame_size(&e.base, &body);
  uint8_t *out = malloc(*len);
  cd_frame_write(&e.base, body, out);
  return out;
}

typedef struct client {
  int fd;
  int sent, received;
  uint8_t *in;
  size_t in_len, in_cap;
} client;

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static int variant_of(int c, int i) { return (c + i) % VARIANTS; }

/* 200 clients x 1,000 queries on a daemon started with extra flags; with
 * loops > 1 also checks that the connections spread over every loop and
 * that the per-loop figures add up. */
static void run_load(const char *const *extra, int loops) {
  tc_daemon d;
  tc_start(&d, extra);
  int setup = tc_connect_tcp(d.port);
  sphere = tc_register_sphere(setup, 1, 0.1, 1e6, 0.05);
  plane = tc_register_halfspace(setup, 2, 0, 0);
  cr_assert(sphere && plane);
  double expect[VARIANTS];
  for (int k = 0; k < VARIANTS; k++) {
    size_t n;
    uint8_t *f = encode(k, 10 + (uint64_t)k, &n);
    tc_send_raw(setup, f, n);
    free(f);
    Env *r = tc_recv(setup, 10000);
    cr_assert(r && r->msg_case == CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY);
    expect[k] = r->contact_reply->results[0]->wrench_a->force->z;
    contactd__v1__envelope__free_unpacked(r, NULL);
  }
  cr_assert_gt(expect[0], 0.0);
  cr_assert_eq(expect[VARIANTS - 1], 0.0);

  client *cl = calloc(CLIENTS, sizeof *cl);
  struct pollfd *pf = calloc(CLIENTS, sizeof *pf);
  for (int c = 0; c < CLIENTS; c++) {
    cl[c].fd = c % 2 ? tc_connect_unix(d.unix_path) : tc_connect_tcp(d.port);
    cr_assert_geq(cl[c].fd, 0, "client %d connects", c);
    cl[c].in_cap = 1 << 16;
    cl[c].in = malloc(cl[c].in_cap);
  }
  long t0 = now_ms();
  int done = 0;
  long errors = 0;
  while (done < CLIENTS && now_ms() - t0 < 600000) {
    for (int c = 0; c < CLIENTS; c++) {
      client *k = &cl[c];
      while (k->sent < QUERIES && k->sent - k->received < WINDOW) {
        size_t n;
        uint8_t *f = encode(variant_of(c, k->sent), (uint64_t)c * 1000000 + (uint64_t)k->sent, &n);
        cr_assert_eq(tc_send_raw(k->fd, f, n), 0);
        free(f);
        k->sent++;
      }
      pf[c].fd = k->received < QUERIES ? k->fd : -1;
      pf[c].events = POLLIN;
      pf[c].revents = 0;
    }
    int nr = poll(pf, CLIENTS, 1000);
    if (nr < 0 && errno == EINTR) continue;
    cr_assert_geq(nr, 0);
    for (int c = 0; c < CLIENTS; c++) {
      if (!(pf[c].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      client *k = &cl[c];
      if (k->in_cap - k->in_len < 8192) k->in = realloc(k->in, k->in_cap *= 2);
      ssize_t got = recv(k->fd, k->in + k->in_len, k->in_cap - k->in_len, 0);
      cr_assert_gt(got, 0, "client %d: connection lost after %d replies", c, k->received);
      k->in_len += (size_t)got;
      size_t off = 0;
      for (;;) {
        uint64_t len;
        int h = cd_frame_varint_decode(k->in + off, k->in_len - off, &len);
        if (h <= 0 || k->in_len - off - (size_t)h < len) break;
        Env *r = contactd__v1__envelope__unpack(NULL, len, k->in + off + h);
        off += (size_t)h + len;
        cr_assert(r);
        uint64_t want = (uint64_t)c * 1000000 + (uint64_t)k->received;
        if (r->request_id != want || r->msg_case != CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY ||
            r->contact_reply->n_results != 1 ||
            r->contact_reply->results[0]->wrench_a->force->z != expect[variant_of(c, k->received)]) {
          errors++;
          if (errors < 5)
            cr_log_error("client %d reply %d: id %llu (want %llu), case %d", c, k->received,
                         (unsigned long long)r->request_id, (unsigned long long)want, r->msg_case);
        }
        contactd__v1__envelope__free_unpacked(r, NULL);
        if (++k->received == QUERIES) done++;
      }
      memmove(k->in, k->in + off, k->in_len - off);
      k->in_len -= off;
    }
  }
  long ms = now_ms() - t0;
  cr_expect_eq(done, CLIENTS, "every client got all %d replies (%d done after %ld ms)", QUERIES, done, ms);
  cr_expect_eq(errors, 0, "every reply correct and in order");
  cr_log_info("%d clients x %d queries in %ld ms (%.0f queries/s)", CLIENTS, QUERIES, ms,
              CLIENTS * (double)QUERIES * 1000.0 / (double)(ms ? ms : 1));
  Env *r = tc_stats(setup, 99, 10000);
  cr_assert(r);
  cr_expect_eq(r->stats_reply->connections, CLIENTS + 1);
  cr_expect_eq(r->stats_reply->pairs, (uint64_t)CLIENTS * QUERIES + VARIANTS);
  cr_expect_eq(r->stats_reply->errors, 0);
  if (loops > 1) {
    cr_expect_eq(r->stats_reply->n_loops, (size_t)loops);
    uint64_t conns = 0, reqs = 0;
    for (size_t i = 0; i < r->stats_reply->n_loops; i++) {
      const Contactd__V1__LoopStats *ls = r->stats_reply->loops[i];
      cr_log_info("loop %zu: %llu connections, %llu requests", i, (unsigned long long)ls->connections,
                  (unsigned long long)ls->requests);
      /* handed to the least-loaded loop: an even spread */
      cr_expect_geq(ls->connections, (CLIENTS + 1) / (uint64_t)loops, "loop %zu holds its share", i);
      cr_expect_geq(ls->requests, (uint64_t)QUERIES * (CLIENTS / (uint64_t)loops - 1), "loop %zu serves", i);
      conns += ls->connections;
      reqs += ls->requests;
    }
    cr_expect_eq(conns, r->stats_reply->connections, "per-loop connections add up");
    cr_expect_eq(reqs, r->stats_reply->requests, "per-loop requests add up");
  }
  contactd__v1__envelope__free_unpacked(r, NULL);
  for (int c = 0; c < CLIENTS; c++) {
    close(cl[c].fd);
    free(cl[c].in);
  }
  free(cl);
  free(pf);
  close(setup);
  free(sphere);
  free(plane);
  cr_expect_eq(tc_stop(&d), 0);
}

Test(load, two_hundred_clients_thousand_queries_each, .timeout = 900) { run_load(NULL, 1); }

/* More event loops than cores (at least 4): the same answers, in order,
 * and every loop takes its share of the connections. */
Test(load, more_loops_than_cores, .timeout = 900) {
  long cores = sysconf(_SC_NPROCESSORS_ONLN);
  int loops = cores > 1 ? 2 * (int)cores : 4;
  if (loops < 4) loops = 4;
  char n[16];
  snprintf(n, sizeof n, "%d", loops);
  const char *extra[] = {"--io-threads", n, NULL};
  run_load(extra, loops);
}
