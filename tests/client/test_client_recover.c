/* test_client_recover.c — the C library surviving the server, with real
 * processes: contactd killed with SIGKILL mid-stream and restarted on the
 * same port (with a dir: store, and without one, where the client sends its
 * geometry again), three replicas on one redis-server with the client's
 * replica killed, and 200 clients through a restart. Every result after the
 * break must equal, bit for bit, the one for the same poses before it. */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cc_client.h"
#include "cc_test_daemon.h"
#include "td_redis.h"

#ifndef CONTACTD_BIN
#error "CONTACTD_BIN must name the contactd executable"
#endif
#define REDIS_BIN "/usr/bin/redis-server"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* A directory for this run under $TMPDIR. */
static void make_tmp(char *dir, size_t n, const char *tag) {
  const char *t = getenv("TMPDIR");
  snprintf(dir, n, "%s/cc_recover_%s_XXXXXX", t && *t ? t : P_tmpdir, tag);
  cr_assert(mkdtemp(dir), "mkdtemp %s", dir);
}

static void remove_tree(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_expect_eq(system(cmd), 0);
}

static void start(td_proc *d, const char *const *extra) {
  const char *why = NULL;
  cr_assert_eq(td_start(d, CONTACTD_BIN, extra, &why), 0, "contactd: %s", why);
}

/* ---- what recovery told the caller ---------------------------------------- */

typedef struct events {
  atomic_int reconnected, reregistered, reopened;
  atomic_size_t registered;
} events;

static void on_event(void *user, const cc_event *ev) {
  events *e = user;
  if (ev->kind == CC_EVENT_RECONNECTED) e->reconnected++;
  if (ev->kind == CC_EVENT_REREGISTERED) {
    e->reregistered++;
    e->registered += ev->registered;
  }
  if (ev->kind == CC_EVENT_STREAM_REOPENED) e->reopened++;
}

static cc_client *connect_to(const char *addr, int retry_queries, events *ev) {
  cc_options o;
  cc_options_default(&o);
  o.retry_queries = retry_queries;
  o.timeout_ms = 20000;
  cc_client *c = NULL;
  cc_error e;
  cr_assert_eq(cc_connect(addr, &o, &c, &e), 0, "connect %s: %s", addr, e.message);
  if (ev) cc_set_event(c, on_event, ev);
  return c;
}

/* ---- the scene: a compliant ball (body 1) over a rigid floor (body 2) ---- */

typedef struct scene {
  char ball[CC_ID_MAX], floor[CC_ID_MAX];
} scene;

static void register_scene(cc_client *c, scene *s, double radius) {
  cc_shape b = {.kind = CC_SHAPE_SPHERE, .a = radius, .modulus = 1e5, .hint = 0.0125};
  cc_shape f = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1};
  cc_error e;
  cr_assert_eq(cc_register_shape(c, &b, s->ball, NULL, &e), 0, "register ball: %s", e.message);
  cr_assert_eq(cc_register_shape(c, &f, s->floor, NULL, &e), 0, "register floor: %s", e.message);
}

/* Pose k of a cycle of 40: the ball sinking 0.2 mm to 4 mm into the floor. */
static void bodies_at(const scene *s, uint64_t k, double radius, cc_body b[2]) {
  memset(b, 0, 2 * sizeof *b);
  b[0].id = 1;
  b[0].geometry_id = s->ball;
  b[0].p[0] = 0.001 * (double)(k % 40 % 7);
  b[0].p[2] = radius - 0.0002 - 0.0001 * (double)(k % 40);
  b[1].id = 2;
  b[1].geometry_id = s->floor;
}

static const uint32_t PAIR[1][2] = {{1, 2}};

/* The numbers a result is compared by: force and torque on A, area. */
typedef struct answer {
  double v[7];
} answer;

/* 0, or -1 when the result has no wrench (threads cannot assert). */
static int get_answer(const Contactd__V1__PairResult *r, answer *a) {
  memset(a, 0, sizeof *a);
  if (!r || !r->wrench_a || !r->wrench_a->force || !r->wrench_a->torque) return -1;
  a->v[0] = r->wrench_a->force->x, a->v[1] = r->wrench_a->force->y, a->v[2] = r->wrench_a->force->z;
  a->v[3] = r->wrench_a->torque->x, a->v[4] = r->wrench_a->torque->y, a->v[5] = r->wrench_a->torque->z;
  a->v[6] = r->area;
  return 0;
}

static answer answer_of(const Contactd__V1__PairResult *r) {
  answer a;
  cr_assert_eq(get_answer(r, &a), 0, "result has no wrench");
  return a;
}

static int same(const answer *a, const answer *b) { return memcmp(a, b, sizeof *a) == 0; }

/* ---- one stream through a SIGKILL and a restart --------------------------- */

enum { CYCLE = 40 };

typedef struct streamer {
  cc_client *c;
  scene s;
  uint64_t sid, upto;
  answer ref[CYCLE]; /* the first cycle's results, by pose */
  int checked, notices;
  char why[600]; /* the first failure (stream_until may run on a thread) */
} streamer;

static int send_pose(streamer *st, uint64_t seq) {
  cc_body b[2];
  bodies_at(&st->s, seq, 0.05, b);
  cc_error e;
  int rc = cc_stream_send(st->c, st->sid, seq, b, 1, &e);
  if (rc) snprintf(st->why, sizeof st->why, "update %llu: %s", (unsigned long long)seq, e.message);
  return rc;
}

/* Receive until the result for st->upto; a reopen notice makes it send
 * every update after the last answered one again. Results of the second
 * cycle on must equal the first's. Failures go to st->why. */
static void *stream_until(void *arg) {
  streamer *st = arg;
  for (;;) {
    Contactd__V1__StreamResult *r = NULL;
    cc_error e;
    int rc = cc_stream_recv(st->c, 30000, &r, &e);
    if (rc) {
      if (!e.retryable || !e.reopened || e.remote || e.stream_id != st->sid) {
        snprintf(st->why, sizeof st->why, "recv: %s (code %d, stream %llu)", e.message, rc,
                 (unsigned long long)e.stream_id);
        return NULL;
      }
      st->notices++;
      for (uint64_t k = e.sequence + 1; k <= st->upto; k++)
        if (send_pose(st, k)) return NULL;
      continue;
    }
    answer a;
    uint64_t seq = r->sequence;
    int bad = r->stream_id != st->sid || r->n_results != 1 || get_answer(r->results[0], &a);
    cc_free(r);
    if (bad) {
      snprintf(st->why, sizeof st->why, "result %llu: wrong stream id or no wrench", (unsigned long long)seq);
      return NULL;
    }
    if (seq <= CYCLE) st->ref[seq - 1] = a;
    else if (!same(&a, &st->ref[(seq - 1) % CYCLE])) {
      snprintf(st->why, sizeof st->why, "result %llu differs from the same pose before the break",
               (unsigned long long)seq);
      return NULL;
    } else {
      st->checked++;
    }
    if (seq == st->upto) return NULL;
  }
}

static void run_until(streamer *st, uint64_t upto) {
  st->upto = upto;
  stream_until(st);
  cr_assert_eq(st->why[0], 0, "%s", st->why);
}

static void send_range(streamer *st, uint64_t from, uint64_t to) {
  for (uint64_t k = from; k <= to; k++) cr_assert_eq(send_pose(st, k), 0, "%s", st->why);
}

static void stream_open(streamer *st) {
  cc_body b[2];
  bodies_at(&st->s, 1, 0.05, b);
  Contactd__V1__QueryOptions opt = CONTACTD__V1__QUERY_OPTIONS__INIT;
  opt.detail = CONTACTD__V1__DETAIL__DETAIL_WRENCH;
  cc_error e;
  cr_assert_eq(cc_stream_open_bodies(st->c, b, 2, PAIR, 1, &opt, 0, &st->sid, &e), 0, "open: %s", e.message);
}

/* Cycle 1 and half of cycle 2 answered, 5 more sent, then the daemon is
 * killed; the client waits in cc_stream_recv (on a thread) while the daemon
 * restarts 300 ms later on the same port; the stream must finish cycle 2
 * with the same results. */
static void kill_mid_stream(td_proc *d, const char *const *extra, events *ev, streamer *st) {
  send_range(st, 1, CYCLE + 20);
  run_until(st, CYCLE + 20);
  send_range(st, CYCLE + 21, CYCLE + 25);
  cr_assert_eq(td_kill(d), 128 + SIGKILL);
  double t0 = now_s();
  st->upto = CYCLE + 25;
  pthread_t th;
  cr_assert_eq(pthread_create(&th, NULL, stream_until, st), 0);
  usleep(300000);
  const char *why = NULL;
  int restarted = td_restart(d, CONTACTD_BIN, extra, &why);
  pthread_join(th, NULL);
  cr_assert_eq(restarted, 0, "restart: %s", why);
  cr_assert_eq(st->why[0], 0, "%s", st->why);
  double dt = now_s() - t0;
  send_range(st, CYCLE + 26, 2 * CYCLE);
  run_until(st, 2 * CYCLE);
  cr_assert_eq(st->notices, 1, "one reopen notice (got %d)", st->notices);
  cr_assert_eq(ev->reopened, 1);
  cr_assert_geq(ev->reconnected, 1);
  cr_assert_eq(st->checked, CYCLE, "every result of cycle 2 checked (%d)", st->checked);
  cc_error e;
  cr_assert_eq(cc_stream_close(st->c, st->sid, NULL, &e), 0, "close: %s", e.message);
  fprintf(stderr, "recover: kill -9 to the stream's last result %.3f s (restart after 300 ms)\n", dt);
}

Test(recover, stream_resumes_after_kill9_with_dir_store, .timeout = 60) {
  char dir[512], uri[600];
  make_tmp(dir, sizeof dir, "store");
  snprintf(uri, sizeof uri, "dir:%s", dir);
  const char *extra[] = {"--store", uri, NULL};
  td_proc d;
  start(&d, extra);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  events ev = {0};
  streamer st = {.c = connect_to(addr, 0, &ev)};
  register_scene(st.c, &st.s, 0.05);
  /* The store writes after the replies: wait for both records. */
  int stored = 0;
  for (int i = 0; i < 500 && stored < 2; i++) {
    char f[2][800];
    snprintf(f[0], sizeof f[0], "%s/contactd:v1:spec:%s", dir, st.s.ball);
    snprintf(f[1], sizeof f[1], "%s/contactd:v1:spec:%s", dir, st.s.floor);
    stored = (access(f[0], F_OK) == 0) + (access(f[1], F_OK) == 0);
    if (stored < 2) usleep(10000);
  }
  cr_assert_eq(stored, 2, "the dir: store holds both geometries");
  stream_open(&st);
  kill_mid_stream(&d, extra, &ev, &st);
  cr_assert_eq(ev.reregistered, 0, "the dir: store kept the geometry: nothing sent again");
  cc_close(st.c);
  cr_assert_eq(td_stop(&d, 1), 0);
  remove_tree(dir);
}

Test(recover, stream_resumes_after_kill9_without_store, .timeout = 60) {
  td_proc d;
  start(&d, NULL);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  events ev = {0};
  streamer st = {.c = connect_to(addr, 0, &ev)};
  register_scene(st.c, &st.s, 0.05);
  stream_open(&st);
  kill_mid_stream(&d, NULL, &ev, &st);
  cr_assert_eq(ev.reregistered, 1);
  cr_assert_eq(ev.registered, 2, "ball and floor sent again (%zu)", (size_t)ev.registered);
  cc_close(st.c);
  cr_assert_eq(td_stop(&d, 1), 0);
}

/* A query in flight at the break fails retryable (not a server error); the
 * next one reconnects, re-registers and answers as before; with
 * retry_queries the lost one is sent again by the library. */
Test(recover, lost_query_is_retryable_and_the_next_reregisters, .timeout = 60) {
  td_proc d;
  start(&d, NULL);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  events ev = {0};
  cc_client *c = connect_to(addr, 0, &ev);
  scene s;
  register_scene(c, &s, 0.05);
  cc_body b[2];
  bodies_at(&s, 3, 0.05, b);
  Contactd__V1__ContactReply *rep;
  cc_error e;
  cr_assert_eq(cc_query_bodies(c, b, 2, PAIR, 1, NULL, &rep, &e), 0, "%s", e.message);
  answer ref = answer_of(rep->results[0]);
  cc_free(rep);
  const char *why = NULL;
  cr_assert_eq(td_restart(&d, CONTACTD_BIN, NULL, &why), 0, "restart: %s", why);
  int rc = cc_query_bodies(c, b, 2, PAIR, 1, NULL, &rep, &e);
  cr_assert_eq(rc, CC_EUNAVAILABLE, "rc %d: %s", rc, e.message);
  cr_assert(e.retryable && !e.remote && !e.reopened, "%s", e.message);
  cr_assert_eq(cc_query_bodies(c, b, 2, PAIR, 1, NULL, &rep, &e), 0, "after the restart: %s", e.message);
  answer a = answer_of(rep->results[0]);
  cc_free(rep);
  cr_assert(same(&a, &ref));
  cr_assert_eq(ev.registered, 2);
  cc_close(c);
  /* retry_queries: the caller never sees the break. */
  memset(&ev, 0, sizeof ev);
  c = connect_to(addr, 1, &ev);
  register_scene(c, &s, 0.05);
  cr_assert_eq(td_restart(&d, CONTACTD_BIN, NULL, &why), 0, "restart: %s", why);
  cr_assert_eq(cc_query_bodies(c, b, 2, PAIR, 1, NULL, &rep, &e), 0, "retried: %s", e.message);
  a = answer_of(rep->results[0]);
  cc_free(rep);
  cr_assert(same(&a, &ref));
  cr_assert_eq(ev.reconnected, 1);
  cr_assert_eq(ev.registered, 2);
  cc_close(c);
  cr_assert_eq(td_stop(&d, 1), 0);
}

Test(recover, address_lists, .timeout = 30) {
  td_proc d;
  start(&d, NULL);
  char list[200];
  /* port 1 refuses; the list goes on to the daemon */
  snprintf(list, sizeof list, "127.0.0.1:1, 127.0.0.1:%d", d.port);
  setenv("CONTACTD_ADDR", list, 1);
  cc_client *c = NULL;
  cc_error e;
  cr_assert_eq(cc_connect(NULL, NULL, &c, &e), 0, "$CONTACTD_ADDR list: %s", e.message);
  char want[64];
  snprintf(want, sizeof want, "127.0.0.1:%d", d.port);
  cr_assert_str_eq(cc_addr(c), want);
  cr_assert_eq(cc_hello(c, "list", NULL, &e), 0, "%s", e.message);
  cc_close(c);
  unsetenv("CONTACTD_ADDR");
  cr_assert_eq(cc_connect("127.0.0.1:1,,x", NULL, &c, &e), CC_EINVALID_ARGUMENT);
  cr_assert(strstr(e.message, "empty address at position 2"), "%s", e.message);
  cr_assert_eq(cc_connect("127.0.0.1:1,unix:/nonexistent/c.sock", NULL, &c, &e), CC_EUNAVAILABLE);
  cr_assert(strstr(e.message, "none of the 2 addresses answered"), "%s", e.message);
  cr_assert_eq(td_stop(&d, 1), 0);
}

/* Against a daemon that is gone for good: the call in flight fails
 * retryable, the next one retries with backoff and gives up after
 * reconnect_timeout_ms with a retryable error naming the attempts. */
Test(recover, reconnect_backs_off_and_gives_up, .timeout = 30) {
  td_proc d;
  start(&d, NULL);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  cc_options o;
  cc_options_default(&o);
  o.reconnect_timeout_ms = 400;
  cc_client *c = NULL;
  cc_error e;
  cr_assert_eq(cc_connect(addr, &o, &c, &e), 0, "%s", e.message);
  cr_assert_eq(td_stop(&d, 1), 0);
  cr_assert_eq(cc_hello(c, "gone", NULL, &e), CC_EUNAVAILABLE);
  cr_assert(e.retryable && !e.remote, "%s", e.message);
  double t0 = now_s();
  cr_assert_eq(cc_hello(c, "gone", NULL, &e), CC_EUNAVAILABLE);
  double dt = now_s() - t0;
  cr_assert(e.retryable && !e.remote, "%s", e.message);
  int attempts = 0;
  const char *p = strstr(e.message, "within 400 ms (");
  cr_assert(p && sscanf(p, "within 400 ms (%d attempts)", &attempts) == 1, "%s", e.message);
  /* waits of 25-50, 50-100, 100-200 ms, then the rest: 4 or 5 attempts */
  cr_assert(attempts >= 3 && attempts <= 6, "%d attempts in %.3f s", attempts, dt);
  cr_assert(dt >= 0.39 && dt < 1.5, "gave up after %.3f s", dt);
  fprintf(stderr, "recover: gave up after %.3f s, %d attempts\n", dt, attempts);
  cc_close(c);
}

/* ---- three replicas on one redis-server ----------------------------------- */

Test(recover, replica_killed_client_goes_on_to_another, .timeout = 60) {
  td_redis rd;
  const char *why = "";
  cr_assert_eq(td_redis_start(&rd, REDIS_BIN, NULL, &why), 0, "%s", why);
  const char *extra[] = {"--store", rd.uri, NULL};
  td_proc r[3];
  char list[200] = "";
  for (int i = 0; i < 3; i++) {
    start(&r[i], extra);
    snprintf(list + strlen(list), sizeof list - strlen(list), "%s127.0.0.1:%d", i ? "," : "", r[i].port);
  }
  events ev = {0};
  streamer st = {.c = connect_to(list, 1, &ev)};
  register_scene(st.c, &st.s, 0.05);
  stream_open(&st);
  send_range(&st, 1, CYCLE + 20);
  run_until(&st, CYCLE + 20);
  /* Which replica: the client's address; wait until the others see the
   * geometry through the store (its writes follow the replies). */
  int mine = -1;
  for (int i = 0; i < 3; i++) {
    char a[64];
    snprintf(a, sizeof a, "127.0.0.1:%d", r[i].port);
    if (strcmp(a, cc_addr(st.c)) == 0) mine = i;
  }
  cr_assert_eq(mine, 0, "the first address of the list answered");
  char other[64];
  snprintf(other, sizeof other, "127.0.0.1:%d", r[1].port);
  cc_client *probe = connect_to(other, 0, NULL);
  const char *ids[2] = {st.s.ball, st.s.floor};
  int held = 0;
  for (int i = 0; i < 200 && !held; i++) {
    Contactd__V1__HasGeometryReply *h;
    cc_error e;
    cr_assert_eq(cc_has(probe, ids, 2, &h, &e), 0, "%s", e.message);
    held = h->n_missing == 0;
    cc_free(h);
    if (!held) usleep(10000);
  }
  cc_close(probe);
  cr_assert(held, "replica 2 reads the geometry from redis");
  send_range(&st, CYCLE + 21, CYCLE + 25);
  char killed[64];
  snprintf(killed, sizeof killed, "%s", cc_addr(st.c));
  cr_assert_eq(td_kill(&r[mine]), 128 + SIGKILL);
  double t0 = now_s();
  run_until(&st, CYCLE + 25);
  send_range(&st, CYCLE + 26, 2 * CYCLE);
  run_until(&st, 2 * CYCLE);
  double dt = now_s() - t0;
  cr_assert_eq(st.notices, 1);
  cr_assert_eq(st.checked, CYCLE, "every result of cycle 2 checked (%d)", st.checked);
  cr_assert_str_neq(cc_addr(st.c), killed, "moved on to another replica");
  cr_assert_eq(ev.reregistered, 0, "the other replica had the geometry from redis");
  /* A query on the new replica, with the same answer as a fresh client's. */
  cc_body b[2];
  bodies_at(&st.s, 5, 0.05, b);
  Contactd__V1__ContactReply *rep;
  cc_error e;
  cr_assert_eq(cc_query_bodies(st.c, b, 2, PAIR, 1, NULL, &rep, &e), 0, "%s", e.message);
  answer a = answer_of(rep->results[0]);
  cc_free(rep);
  cr_assert(same(&a, &st.ref[4]));
  fprintf(stderr, "recover: replica killed, stream answered by %s %.3f s later\n", cc_addr(st.c), dt);
  cc_close(st.c);
  for (int i = 0; i < 3; i++)
    if (i != mine) cr_assert_eq(td_stop(&r[i], 1), 0);
  td_stop(&r[mine], 0); /* its directory */
  td_redis_stop(&rd);
}

/* ---- 200 clients through a restart ---------------------------------------- */

enum { NCLIENTS = 200, AFTER = 3 };

typedef struct many {
  const char *addr;
  atomic_int ready, phase; /* phase 1: the daemon was restarted */
  atomic_int wrong, failed, retryable, done;
} many;

typedef struct one {
  many *m;
  int k;
  char why[600];
} one;

static void *one_client(void *arg) {
  one *o = arg;
  many *m = o->m;
  cc_options opt;
  cc_options_default(&opt);
  opt.retry_queries = 1;
  opt.timeout_ms = 20000;
  cc_client *c = NULL;
  cc_error e;
  if (cc_connect(m->addr, &opt, &c, &e)) {
    snprintf(o->why, sizeof o->why, "connect: %s", e.message);
    m->failed++;
    m->ready++;
    m->done++;
    return NULL;
  }
  /* Four ball radii (four builds to redo after the restart) and 40 poses:
   * neighbours get different answers, so a crossed reply shows. */
  double radius = 0.05 + 0.0001 * (o->k % 4);
  cc_shape bs = {.kind = CC_SHAPE_SPHERE, .a = radius, .modulus = 1e5, .hint = 0.0125};
  cc_shape fs = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1};
  scene s;
  cc_body b[2];
  Contactd__V1__ContactReply *rep = NULL;
  answer ref;
  int rc = cc_register_shape(c, &bs, s.ball, NULL, &e);
  if (!rc) rc = cc_register_shape(c, &fs, s.floor, NULL, &e);
  bodies_at(&s, (uint64_t)o->k, radius, b);
  if (!rc) rc = cc_query_bodies(c, b, 2, PAIR, 1, NULL, &rep, &e);
  if (rc) {
    snprintf(o->why, sizeof o->why, "before the restart: %s", e.message);
    m->failed++;
    m->ready++;
    m->done++;
    cc_close(c);
    return NULL;
  }
  rc = get_answer(rep->results[0], &ref);
  cc_free(rep);
  m->ready++;
  if (rc) {
    snprintf(o->why, sizeof o->why, "no wrench");
    m->failed++;
    m->done++;
    cc_close(c);
    return NULL;
  }
  int after = 0;
  while (after < AFTER) { /* query until AFTER answers after the restart */
    int phase = m->phase;
    rc = cc_query_bodies(c, b, 2, PAIR, 1, NULL, &rep, &e);
    if (rc) {
      if (!e.retryable) {
        snprintf(o->why, sizeof o->why, "query: %s (code %d)", e.message, rc);
        m->failed++;
        break;
      }
      if (!m->retryable++) fprintf(stderr, "recover: a query lost twice: %s\n", e.message);
      continue;
    }
    answer a;
    int bad = get_answer(rep->results[0], &a);
    cc_free(rep);
    if (bad || !same(&a, &ref)) {
      m->wrong++;
      break;
    }
    after += phase;
    if (!phase) usleep(50000);
  }
  m->done++;
  cc_close(c);
  return NULL;
}

Test(recover, two_hundred_clients_through_a_restart, .timeout = 120) {
  td_proc d;
  start(&d, NULL);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  many m = {.addr = addr};
  static one o[NCLIENTS];
  pthread_t th[NCLIENTS];
  pthread_attr_t at;
  pthread_attr_init(&at);
  pthread_attr_setstacksize(&at, 256 << 10);
  double t0 = now_s();
  for (int k = 0; k < NCLIENTS; k++) {
    o[k] = (one){.m = &m, .k = k};
    cr_assert_eq(pthread_create(&th[k], &at, one_client, &o[k]), 0);
  }
  while (m.ready < NCLIENTS) usleep(5000);
  double t1 = now_s();
  const char *why = NULL;
  cr_assert_eq(td_kill(&d), 128 + SIGKILL);
  usleep(100000);
  m.phase = 1;
  cr_assert_eq(td_restart(&d, CONTACTD_BIN, NULL, &why), 0, "restart: %s", why);
  double t2 = now_s();
  for (int k = 0; k < NCLIENTS; k++) pthread_join(th[k], NULL);
  double t3 = now_s();
  for (int k = 0; k < NCLIENTS; k++) cr_expect_eq(o[k].why[0], 0, "client %d: %s", k, o[k].why);
  cr_assert_eq(m.failed, 0);
  cr_assert_eq(m.wrong, 0, "%d clients got a wrong answer", (int)m.wrong);
  cr_assert_eq(m.done, NCLIENTS);
  fprintf(stderr,
          "recover: %d clients ready in %.2f s; kill -9 + restart %.2f s; all %d answers each after it "
          "%.2f s later; %d queries lost twice (retryable)\n",
          NCLIENTS, t1 - t0, t2 - t1, AFTER, t3 - t2, (int)m.retryable);
  cr_assert_eq(td_stop(&d, 1), 0);
}
