/* test_daemon_auth.c — who may connect and what each may do, against the
 * real daemon: tokens in Hello and the roles of a principals file (every
 * request kind without a token, with a wrong one and with one lacking the
 * role), failed authentications throttled per address while a client from
 * another address is served, the hello deadline, the per-address cap under
 * 1,100 silent connections, and Unix-socket peers known by their uid. */
#include <criterion/criterion.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cd_test_client.h"
#include "cd_test_tls.h"

typedef Contactd__V1__Envelope Env;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A principals file: robot (query, lab-a), sim (query and register,
 * lab-b), ops (admin, every tenant), and this test's own uid on the Unix
 * socket (admin). */
static const char *principals_file(void) {
  char robot[65], sim[65], ops[65], doc[2048];
  tc_token_sha256_hex("robot-token", robot);
  tc_token_sha256_hex("sim-token", sim);
  tc_token_sha256_hex("ops-token", ops);
  snprintf(doc, sizeof doc,
           "{\"principals\": ["
           "{\"name\": \"robot-7\", \"token_sha256\": \"%s\", \"roles\": [\"query\"], \"tenant\": \"lab-a\"},"
           "{\"name\": \"sim\", \"token_sha256\": \"%s\", \"roles\": [\"query\", \"register\"], \"tenant\": \"lab-b\"},"
           "{\"name\": \"ops\", \"token_sha256\": \"%s\", \"roles\": [\"admin\"], \"tenant\": \"*\"},"
           "{\"name\": \"me\", \"uid\": %u, \"roles\": [\"admin\", \"query\"], \"tenant\": \"*\"}]}",
           robot, sim, ops, (unsigned)getuid());
  return tc_config_file("principals.json", doc);
}

static int code_of(const Env *e) { return e && e->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? e->error->code : 0; }

static void start_auth(tc_daemon *d, const char *limits) {
  const char *pf = principals_file();
  char pcopy[512];
  snprintf(pcopy, sizeof pcopy, "%s", pf);
  const char *extra[] = {"--principals", pcopy, "--config", tc_limits_file("auth.json", limits), NULL};
  tc_start(d, extra);
}

/* One request of each kind, refused or not: the error code it got (0: a reply). */
static int ask(int fd, unsigned kind, const char *gid) {
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 100 + kind;
  char *ids[1] = {(char *)gid};
  Contactd__V1__HasGeometry has = CONTACTD__V1__HAS_GEOMETRY__INIT;
  Contactd__V1__ReleaseGeometry rel = CONTACTD__V1__RELEASE_GEOMETRY__INIT;
  Contactd__V1__RegisterGeometry rg;
  Contactd__V1__Sphere sp;
  Contactd__V1__OpenStream os = CONTACTD__V1__OPEN_STREAM__INIT;
  Contactd__V1__StreamUpdate su = CONTACTD__V1__STREAM_UPDATE__INIT;
  Contactd__V1__CloseStream cs = CONTACTD__V1__CLOSE_STREAM__INIT;
  Contactd__V1__Stats st = CONTACTD__V1__STATS__INIT;
  tc_pair_query q;
  has.n_geometry_ids = rel.n_geometry_ids = 1;
  has.geometry_ids = rel.geometry_ids = ids;
  su.stream_id = cs.stream_id = 1;
  su.sequence = 1;
  e.msg_case = kind;
  switch (kind) {
  case CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY: tc_sphere_spec(&rg, &sp, 0.1, 1e6, 0.05); e.register_geometry = &rg; break;
  case CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY: e.has_geometry = &has; break;
  case CONTACTD__V1__ENVELOPE__MSG_RELEASE_GEOMETRY: e.release_geometry = &rel; break;
  case CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY:
    tc_pair_query_init(&q, e.request_id, gid, 0.09, gid, -0.09, 0);
    e = q.env;
    break;
  case CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM: e.open_stream = &os; break;
  case CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE: e.stream_update = &su; break;
  case CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM: e.close_stream = &cs; break;
  default: e.stats = &st; break;
  }
  Env *r = tc_call(fd, &e, 10000);
  cr_assert(r, "a reply to request kind %u", kind);
  int code = code_of(r);
  if (code == CONTACTD__V1__ERROR_CODE__PERMISSION_DENIED || code == CONTACTD__V1__ERROR_CODE__UNAUTHENTICATED)
    cr_expect_null(strstr(r->error->message, "-token"), "no token in an error: %s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  return code;
}

static const unsigned KINDS[] = {
    CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY, CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY,
    CONTACTD__V1__ENVELOPE__MSG_RELEASE_GEOMETRY,  CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY,
    CONTACTD__V1__ENVELOPE__MSG_OPEN_STREAM,       CONTACTD__V1__ENVELOPE__MSG_STREAM_UPDATE,
    CONTACTD__V1__ENVELOPE__MSG_CLOSE_STREAM,      CONTACTD__V1__ENVELOPE__MSG_STATS};
#define NKINDS (sizeof KINDS / sizeof *KINDS)

Test(auth, every_request_without_a_token_a_wrong_one_or_the_wrong_role, .timeout = 120) {
  tc_daemon d;
  start_auth(&d, "\"auth_fail_max\": 1000");
  int sim = tc_connect_tcp(d.port);
  cr_assert_eq(tc_login(sim, "sim-token", "sim"), 0);
  char *g = tc_register_sphere(sim, 2, 0.1, 1e6, 0.05);
  cr_assert(g);
  const int UNAUTH = CONTACTD__V1__ERROR_CODE__UNAUTHENTICATED, DENIED = CONTACTD__V1__ERROR_CODE__PERMISSION_DENIED;

  int none = tc_connect_tcp(d.port);
  Env *h = tc_hello(none, NULL);
  cr_assert(h && h->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY, "Hello without a token is answered");
  cr_expect_str_eq(h->hello_reply->principal, "", "but does not authenticate");
  contactd__v1__envelope__free_unpacked(h, NULL);
  int wrong = tc_connect_tcp(d.port);
  h = tc_hello(wrong, "robot-tokem");
  cr_expect_eq(code_of(h), UNAUTH, "a wrong token");
  cr_expect(h && strstr(h->error->message, "matches no principal"), "the reason is named");
  contactd__v1__envelope__free_unpacked(h, NULL);
  for (size_t i = 0; i < NKINDS; i++) {
    cr_expect_eq(ask(none, KINDS[i], g), UNAUTH, "kind %u without a token", KINDS[i]);
    cr_expect_eq(ask(wrong, KINDS[i], g), UNAUTH, "kind %u after a wrong token", KINDS[i]);
  }
  /* robot has query only; ops has admin only */
  int robot = tc_connect_tcp(d.port), ops = tc_connect_tcp(d.port);
  cr_assert_eq(tc_login(robot, "robot-token", "robot-7"), 0);
  cr_assert_eq(tc_login(ops, "ops-token", "ops"), 0);
  for (size_t i = 0; i < NKINDS; i++) {
    unsigned k = KINDS[i];
    int reg = k == CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY || k == CONTACTD__V1__ENVELOPE__MSG_RELEASE_GEOMETRY;
    int admin = k == CONTACTD__V1__ENVELOPE__MSG_STATS;
    int rc = ask(robot, k, g);
    if (reg || admin) cr_expect_eq(rc, DENIED, "robot: kind %u", k);
    else cr_expect_neq(rc, DENIED, "robot may: kind %u", k);
    rc = ask(ops, k, g);
    if (admin) cr_expect_eq(rc, 0, "ops: stats");
    else cr_expect_eq(rc, DENIED, "ops: kind %u", k);
  }
  /* the role is named */
  Contactd__V1__RegisterGeometry rg;
  Contactd__V1__Sphere sp;
  tc_sphere_spec(&rg, &sp, 0.2, 1e6, 0.05);
  Env e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 9;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_REGISTER_GEOMETRY;
  e.register_geometry = &rg;
  Env *r = tc_call(robot, &e, 10000);
  cr_assert_eq(code_of(r), DENIED);
  cr_expect(strstr(r->error->message, "registerGeometry needs the register role") &&
                strstr(r->error->message, "robot-7"),
            "%s", r->error->message);
  contactd__v1__envelope__free_unpacked(r, NULL);
  /* the daemon is up and the authenticated client unaffected */
  cr_expect_eq(ask(sim, CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY, g), 0);
  char *log = td_read_log(&d);
  cr_expect_null(strstr(log, "robot-token"), "no token in the log");
  cr_expect_null(strstr(log, "sim-token"), "no token in the log");
  free(log);
  for (int *fd = (int[]){sim, none, wrong, robot, ops, -1}; *fd >= 0; fd++) close(*fd);
  free(g);
  cr_expect_eq(tc_stop(&d), 0);
}

/* 1,000 wrong tokens from one address: delayed, then locked out, while a
 * client from another loopback address is served as before. */
Test(auth, failed_authentications_are_throttled_per_address, .timeout = 180) {
  tc_daemon d;
  start_auth(&d, "\"auth_fail_max\": 10, \"auth_fail_delay_ms\": 100, \"auth_lockout_ms\": 60000");
  int good = tc_connect_tcp_from("127.0.0.2", d.port);
  cr_assert(good >= 0, "127.0.0.2 is a loopback address on Linux");
  cr_assert_eq(tc_login(good, "sim-token", "sim"), 0);
  char *g = tc_register_sphere(good, 2, 0.1, 1e6, 0.05);
  int attacker = tc_connect_tcp(d.port);
  int locked = 0, delayed = 0;
  double worst_good = 0, took[1000];
  for (int i = 0; i < 1000; i++) {
    double t0 = now_ms();
    Env *r = tc_hello(attacker, "guess");
    cr_assert_eq(code_of(r), CONTACTD__V1__ERROR_CODE__UNAUTHENTICATED, "attempt %d", i);
    if (strstr(r->error->message, "too many failed authentications")) locked++;
    took[i] = now_ms() - t0;
    if (took[i] >= 90) delayed++;
    contactd__v1__envelope__free_unpacked(r, NULL);
    if (i % 10 == 0) {
      double q0 = now_ms();
      cr_assert_eq(ask(good, CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY, g), 0, "the good client is served");
      if (now_ms() - q0 > worst_good) worst_good = now_ms() - q0;
    }
  }
  printf("auth throttling: 1000 wrong tokens: %d delayed, %d refused locked out; the other address's slowest "
         "query %.2f ms\n", delayed, locked, worst_good);
  /* attempts 6 to 10 come after 5 failures: each answer waits the delay (a
   * lower bound; a loaded machine may slow any answer, so no upper one) */
  for (int i = 5; i < 10; i++) cr_expect_geq(took[i], 95, "attempt %d waited auth_fail_delay_ms (%.1f ms)", i + 1, took[i]);
  cr_expect_eq(locked, 990, "the tenth locks the address out");
  cr_expect_eq(tc_login(attacker, "sim-token", "sim"), -1, "even the right token, while locked out");
  cr_expect_eq(tc_log_count(&d, "address locked out after failed authentications"), 1, "logged once");
  cr_expect_eq(tc_log_count(&d, "authentications refused: address locked out"), 1, "once per window");
  close(attacker);
  close(good);
  free(g);
  cr_expect_eq(tc_stop(&d), 0);
}

/* 1,100 connections from one address that say nothing: the per-address cap
 * refuses all but 64 at once, the hello deadline closes those, and a client
 * from another address gets in meanwhile. The daemon is stopped (SIGSTOP)
 * while they and the other client connect, as a loop that is descheduled
 * on a loaded machine: all of them wait in the listen backlog and are
 * accepted in one turn, so the 1,036 refused are still closing when the
 * other client is admitted (a refusal gives its max_connections seat back
 * at once). */
Test(auth, silent_connections_cannot_lock_others_out, .timeout = 180) {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
  setrlimit(RLIMIT_NOFILE, &rl);
  cr_assert_geq(rl.rlim_cur, 1200, "room for 1,100 descriptors");
  tc_daemon d;
  start_auth(&d, "\"hello_timeout_ms\": 1000, \"per_address_exempt_loopback\": 0, \"max_connections_per_address\": 64");
  static int silent[1100];
  cr_assert_eq(kill(d.pid, SIGSTOP), 0);
  for (int i = 0; i < 1100; i++) {
    silent[i] = tc_connect_tcp(d.port);
    if (silent[i] < 0) kill(d.pid, SIGCONT);
    cr_assert(silent[i] >= 0, "connection %d", i);
  }
  double t0 = now_ms();
  int good = tc_connect_tcp_from("127.0.0.2", d.port);
  cr_assert_eq(kill(d.pid, SIGCONT), 0);
  cr_assert(good >= 0, "another address connects");
  Contactd__V1__Envelope *hr = tc_hello(good, "sim-token");
  cr_assert(hr && hr->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY,
            "another address gets in (got %s: %s)", !hr ? "nothing" : hr->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR ? "an error" : "another reply",
            hr && hr->msg_case == CONTACTD__V1__ENVELOPE__MSG_ERROR && hr->error->message ? hr->error->message : "");
  contactd__v1__envelope__free_unpacked(hr, NULL);
  char *g = tc_register_sphere(good, 2, 0.1, 1e6, 0.05);
  cr_assert_eq(ask(good, CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY, g), 0);
  double took = now_ms() - t0;
  printf("1,100 silent connections from 127.0.0.1: another address connected, authenticated, registered and "
         "queried in %.1f ms\n", took);
  cr_expect_lt(took, 2000, "served at once, not after a deadline (%.1f ms)", took);
  usleep(1500 * 1000); /* past hello_timeout_ms */
  int closed = 0;
  for (int i = 0; i < 1100; i++) closed += tc_wait_closed(silent[i], 2000);
  cr_expect_eq(closed, 1100, "every silent connection is gone");
  cr_expect_eq(ask(good, CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY, g), 0, "the authenticated one stays");
  cr_expect_eq(tc_log_count(&d, "connections refused: too many from one address"), 1, "logged once per window");
  /* 64 at a time are let in; each batch goes at its deadline, making room
   * for the next of those still connecting */
  int deadline = tc_log_count(&d, "no authenticated Hello within hello_timeout_ms");
  int refused = tc_log_count(&d, "reason=\"too many connections from one address\"");
  printf("1,100 silent connections: %d closed at the hello deadline, %d refused at once\n", deadline, refused);
  cr_expect_geq(deadline, 64);
  cr_expect_eq(deadline + refused, 1100);
  for (int i = 0; i < 1100; i++) close(silent[i]);
  close(good);
  free(g);
  cr_expect_eq(tc_stop(&d), 0);
}

Test(auth, the_hello_deadline_without_principals) {
  tc_daemon d;
  const char *extra[] = {"--config", tc_limits_file("deadline.json", "\"hello_timeout_ms\": 300"), NULL};
  tc_start(&d, extra);
  int quiet = tc_connect_tcp(d.port), talks = tc_connect_tcp(d.port);
  Env *h = tc_hello(talks, NULL);
  cr_assert(h && h->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY);
  contactd__v1__envelope__free_unpacked(h, NULL);
  cr_expect(tc_wait_closed(quiet, 3000), "a connection that says nothing is closed");
  usleep(400 * 1000);
  Env *s = tc_stats(talks, 7, 5000);
  cr_expect(s, "one that spoke is under idle_timeout_ms instead");
  if (s) contactd__v1__envelope__free_unpacked(s, NULL);
  cr_expect_eq(tc_log_count(&d, "no request within hello_timeout_ms (300 ms)"), 1);
  close(quiet);
  close(talks);
  cr_expect_eq(tc_stop(&d), 0);
}

Test(auth, unix_socket_peers_by_uid_and_its_mode) {
  tc_daemon d;
  start_auth(&d, "\"auth_fail_max\": 10");
  struct stat st;
  cr_assert_eq(stat(d.unix_path, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0660, "unix_mode's default");
  int fd = tc_connect_unix(d.unix_path);
  Env *s = tc_stats(fd, 3, 5000);
  cr_expect(s, "this uid is principal \"me\" (admin) without a token");
  if (s) contactd__v1__envelope__free_unpacked(s, NULL);
  Env *h = tc_hello(fd, NULL);
  cr_expect(h && h->msg_case == CONTACTD__V1__ENVELOPE__MSG_HELLO_REPLY && strcmp(h->hello_reply->principal, "me") == 0);
  if (h) contactd__v1__envelope__free_unpacked(h, NULL);
  close(fd);
  cr_expect_eq(tc_stop(&d), 0);
  const char *extra[] = {"--unix-mode", "0600", NULL};
  tc_start(&d, extra);
  cr_assert_eq(stat(d.unix_path, &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0600);
  cr_expect_eq(tc_stop(&d), 0);
}
