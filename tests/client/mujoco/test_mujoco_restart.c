/* test_mujoco_restart.c — contactd killed (SIGKILL) and started again on
 * the same Unix socket in the middle of a MuJoCo simulation: the outage is
 * reported, the library reconnects and registers again, and no step runs
 * without contact (a short outage is bridged inside the step; a long one
 * fails the step, which is then not taken). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmj.h"
#include "tm_util.h"

#ifndef CONTACTD_BIN
#error "CONTACTD_BIN must name the contactd executable"
#endif

typedef struct daemon_at {
  char dir[300], sock[360], addr[370], log[360];
  pid_t pid;
} daemon_at;

/* Start contactd on d->sock after delay_ms (in the child, so the caller
 * goes on); with wait, return only once it accepts connections. */
static void start(daemon_at *d, int delay_ms, int wait) {
  d->pid = fork();
  cr_assert_geq(d->pid, 0, "fork");
  if (d->pid == 0) {
    struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
    int fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) dup2(fd, 2), dup2(fd, 1);
    execl(CONTACTD_BIN, CONTACTD_BIN, "--listen", "none", "--unix", d->sock, "--workers", "2", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; wait && i < 2000; i++) {
    cc_client *c;
    cc_error e;
    cc_options o;
    cc_options_default(&o);
    o.connect_timeout_ms = 200;
    if (cc_connect(d->addr, &o, &c, &e) == 0) {
      cc_close(c);
      return;
    }
    usleep(5000);
  }
  cr_assert(!wait, "contactd did not come up on %s", d->sock);
}

static void kill_daemon(daemon_at *d) {
  kill(d->pid, SIGKILL);
  waitpid(d->pid, NULL, 0);
  unlink(d->sock);
}

static void stop(daemon_at *d) {
  kill(d->pid, SIGTERM);
  int st;
  waitpid(d->pid, &st, 0);
}

typedef struct events {
  int n[4];
  char last[4][600];
} events;

static void on_event(void *user, cmj_event ev, const char *msg) {
  events *e = user;
  if (ev >= 1 && ev <= 3) {
    e->n[ev]++;
    snprintf(e->last[ev], sizeof e->last[ev], "%s", msg);
  }
}

static const char *const BALL_XML =
    "<mujoco><option timestep='0.001' integrator='implicit'/><worldbody>"
    "<geom name='floor' type='plane' size='1 1 0.1'/>"
    "<body pos='0 0 0.0458'><freejoint/><geom name='ball' type='sphere' size='0.05' density='1000'/></body>"
    "</worldbody></mujoco>";

static cmj *attach_ball(daemon_at *D, mjModel **m, mjData **d, events *ev, int outage_ms) {
  snprintf(D->dir, sizeof D->dir, "%s", td_own_dir());
  snprintf(D->sock, sizeof D->sock, "%s/contactd.sock", D->dir);
  snprintf(D->addr, sizeof D->addr, "unix:%s", D->sock);
  snprintf(D->log, sizeof D->log, "%s/contactd.log", D->dir);
  start(D, 0, 1);
  *m = tm_load(BALL_XML);
  *d = mj_makeData(*m);
  cmj_map *map = cmj_map_new();
  char why[300];
  cr_assert_eq(cmj_map_parse(map,
                             "{\"geoms\": {\"ball\": {\"compliance\": \"compliant\", \"modulus\": 1e5, \"dissipation\": 10, "
                             "\"hint\": 0.005}, \"floor\": {\"compliance\": \"rigid\"}}}",
                             why, sizeof why),
               0, "%s", why);
  cmj_options o;
  cmj_options_default(&o);
  o.addr = D->addr;
  o.on_event = on_event;
  o.user = ev;
  o.outage_timeout_ms = outage_ms;
  cmj *x;
  cc_error e;
  cr_assert_eq(cmj_attach(*m, *d, map, NULL, &o, &x, &e), 0, "attach: %s", e.message);
  cmj_map_free(map);
  return x;
}

/* The ball rests on the floor: every step's contact carries most of its
 * weight, none is zero. */
static void step_with_contact(cmj *x, mjModel *m, mjData *d, int n) {
  int g = mj_name2id(m, mjOBJ_GEOM, "ball");
  double mg = m->body_mass[1] * 9.81, f[3], t[3];
  cc_error e;
  for (int i = 0; i < n; i++) {
    cr_assert_eq(cmj_step(x, &e), 0, "step at t = %g: %s", d->time, e.message);
    cmj_geom_wrench(x, g, f, t);
    cr_assert_gt(f[2], 0.5 * mg, "t = %g: contact force %g N of a weight of %g N", d->time, f[2], mg);
  }
}

Test(mujoco_restart, short_outage_is_bridged_inside_the_step, .timeout = 120) {
  daemon_at D;
  events ev = {0};
  mjModel *m;
  mjData *d;
  cmj *x = attach_ball(&D, &m, &d, &ev, 10000);
  step_with_contact(x, m, d, 300);
  kill_daemon(&D);
  start(&D, 300, 0); /* back in 0.3 s, while the next step waits */
  step_with_contact(x, m, d, 700);
  cmj_stats st;
  cmj_get_stats(x, &st);
  cr_assert_eq(ev.n[CMJ_EVENT_OUTAGE], 1, "outages reported: %d", ev.n[CMJ_EVENT_OUTAGE]);
  cr_assert_eq(ev.n[CMJ_EVENT_RECONNECTED], 1, "reconnections reported: %d", ev.n[CMJ_EVENT_RECONNECTED]);
  cr_assert_eq(ev.n[CMJ_EVENT_FAILED], 0, "failed: %s", ev.last[CMJ_EVENT_FAILED]);
  cr_assert_not_null(strstr(ev.last[CMJ_EVENT_OUTAGE], "unreachable"), "%s", ev.last[CMJ_EVENT_OUTAGE]);
  cr_assert_eq(st.failed, 0);
  cr_assert_eq(st.evaluations, 1000, "evaluations %ld", st.evaluations);
  cr_assert_eq(st.reconnects, 1);
  cr_assert_eq(st.registrations, 4, "2 geometries at attach, 2 again after the restart");
  cr_assert_leq(fabs(d->time - 1.0), 1e-9);
  cmj_detach(x);
  stop(&D);
  mj_deleteData(d);
  mj_deleteModel(m);
}

Test(mujoco_restart, long_outage_fails_the_step_which_is_not_taken, .timeout = 120) {
  daemon_at D;
  events ev = {0};
  mjModel *m;
  mjData *d;
  cmj *x = attach_ball(&D, &m, &d, &ev, 200);
  step_with_contact(x, m, d, 100);
  kill_daemon(&D);
  double t = d->time, z = d->qpos[2];
  cc_error e;
  for (int i = 0; i < 2; i++) {
    cr_assert_eq(cmj_step(x, &e), CC_EUNAVAILABLE, "a step without contactd must fail");
    cr_assert_not_null(strstr(e.message, "not taken"), "%s", e.message);
    cr_assert_eq(d->time, t, "the failed step must not advance time");
    cr_assert_eq(d->qpos[2], z, "the failed step must not move the ball");
  }
  cr_assert_eq(ev.n[CMJ_EVENT_FAILED], 2, "failed evaluations reported: %d", ev.n[CMJ_EVENT_FAILED]);
  cr_assert_geq(ev.n[CMJ_EVENT_OUTAGE], 2);
  start(&D, 0, 1);
  step_with_contact(x, m, d, 200);
  cmj_stats st;
  cmj_get_stats(x, &st);
  cr_assert_eq(st.failed, 2);
  cr_assert_eq(st.reconnects, 1);
  cr_assert_eq(ev.n[CMJ_EVENT_RECONNECTED], 1);
  cr_assert_leq(fabs(d->time - 0.3), 1e-9);
  cmj_detach(x);
  stop(&D);
  mj_deleteData(d);
  mj_deleteModel(m);
}
