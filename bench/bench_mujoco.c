/* bench_mujoco.c — MuJoCo on contactd (client/mujoco/cmj.h): steps per
 * second and the share of a step spent waiting for contactd (prints
 * numbers, asserts nothing).
 *
 *  - the grasp scene (client/examples/mujoco/grasp.xml): contactd over TCP
 *    loopback and over the Unix socket, with the contact implicit (as the
 *    example runs it: wrench Jacobians every evaluation) and explicit, and
 *    the same MJCF on MuJoCo's own contact;
 *  - the ball scene (ball.xml, implicit integrator, dt = 1 ms) over both
 *    transports, and with RK4 (four evaluations, so four round trips, per
 *    step).
 *
 * Starts the real daemon (argv[1]) with 2 workers on an ephemeral TCP port
 * and a Unix socket in a directory made under $TMPDIR; argv[2] is the
 * examples' directory. */
#include "bench_tmp.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>

#include "cmj.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct scene {
  const char *name, *xml, *map;
  int grasp; /* drive the gripper as grasp.c does */
} scene;

typedef struct result {
  double steps_per_s, wait_share, queries_per_step, us_per_query;
} result;

/* Run `steps` steps of s; addr NULL = MuJoCo's own contact. */
static result run(const char *dir, const scene *s, const char *addr, int implicit, int rk4, long steps) {
  char xml[1024], map_path[1024], why[1000] = "";
  snprintf(xml, sizeof xml, "%s/%s", dir, s->xml);
  snprintf(map_path, sizeof map_path, "%s/%s", dir, s->map);
  mjModel *m = mj_loadXML(xml, NULL, why, sizeof why);
  if (!m) fprintf(stderr, "bench: %s: %s\n", xml, why), exit(1);
  if (rk4) m->opt.integrator = mjINT_RK4;
  mjData *d = mj_makeData(m);
  cmj *x = NULL;
  if (addr) {
    cmj_map *map = cmj_map_new();
    if (cmj_map_load(map, map_path, why, sizeof why)) fprintf(stderr, "bench: %s\n", why), exit(1);
    cmj_options o;
    cmj_options_default(&o);
    o.addr = addr;
    o.implicit = implicit;
    cc_error e;
    if (cmj_attach(m, d, map, NULL, &o, &x, &e)) fprintf(stderr, "bench: attach: %s\n", e.message), exit(1);
    cmj_map_free(map);
  }
  double t0 = now();
  for (long i = 0; i < steps; i++) {
    if (s->grasp) {
      double t = d->time;
      d->ctrl[1] = d->ctrl[2] = 0.03;
      d->ctrl[0] = t < 0.4 ? 0 : t < 1.0 ? 0.1 * (t - 0.4) / 0.6 : 0.1;
    }
    cc_error e;
    if (x && cmj_step(x, &e)) fprintf(stderr, "bench: %s\n", e.message), exit(1);
    if (!x) mj_step(m, d);
  }
  double wall = now() - t0;
  result r = {steps / wall, 0, 0, 0};
  if (x) {
    cmj_stats st;
    cmj_get_stats(x, &st);
    r.wait_share = st.wait_s / wall;
    r.queries_per_step = (double)st.evaluations / (double)steps;
    r.us_per_query = 1e6 * st.wait_s / (double)st.evaluations;
  }
  cmj_detach(x);
  mj_deleteData(d);
  mj_deleteModel(m);
  return r;
}

static void row(const char *what, result r) {
  if (r.queries_per_step > 0)
    printf("  %-44s %9.0f steps/s   waiting %5.1f%%   %4.1f queries/step   %8.1f us/query\n", what, r.steps_per_s,
           100 * r.wait_share, r.queries_per_step, r.us_per_query);
  else
    printf("  %-44s %9.0f steps/s\n", what, r.steps_per_s);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s CONTACTD EXAMPLES_DIR [GRASP_STEPS]\n", argv[0]);
    return 2;
  }
  const char *bin = argv[1], *dir = argv[2];
  long gsteps = argc > 3 ? atol(argv[3]) : 1000;
  char tmp[512], sock[600], unix_addr[620], log[600], tcp[64] = "";
  snprintf(tmp, sizeof tmp, "%s/bench_mujoco_XXXXXX", bench_tmp_root());
  if (!mkdtemp(tmp)) return perror("mkdtemp"), 1;
  snprintf(sock, sizeof sock, "%s/contactd.sock", tmp);
  snprintf(unix_addr, sizeof unix_addr, "unix:%s", sock);
  snprintf(log, sizeof log, "%s/contactd.log", tmp);
  pid_t pid = fork();
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    execl(bin, bin, "--listen", "127.0.0.1:0", "--unix", sock, "--workers", "2", (char *)NULL);
    _exit(127);
  }
  for (int i = 0; i < 1000 && !tcp[0]; i++) { /* the daemon logs its port, then "ready" */
    usleep(10000);
    FILE *f = fopen(log, "r");
    char line[512];
    int port = 0, ready = 0;
    while (f && fgets(line, sizeof line, f)) {
      char *c = strstr(line, "msg=\"listening\" tcp=");
      if (c && (c = strstr(c, "port="))) port = atoi(c + 5);
      ready |= strstr(line, "msg=\"ready\"") != NULL;
    }
    if (f) fclose(f);
    if (port && ready) snprintf(tcp, sizeof tcp, "127.0.0.1:%d", port);
  }
  if (!tcp[0]) return fprintf(stderr, "bench: contactd did not start (%s)\n", log), 1;
  const scene grasp = {"grasp", "grasp.xml", "grasp.contact.json", 1}, ball = {"ball", "ball.xml", "ball.contact.json", 0};
  printf("grasp scene (2 compliant pads, rigid cylinder; 3 contactd pairs), %ld steps of 1 ms from rest:\n", gsteps);
  row("contactd, Unix socket, implicit contact", run(dir, &grasp, unix_addr, 1, 0, gsteps));
  row("contactd, TCP loopback, implicit contact", run(dir, &grasp, tcp, 1, 0, gsteps));
  row("contactd, Unix socket, explicit contact", run(dir, &grasp, unix_addr, 0, 0, gsteps));
  row("contactd, TCP loopback, explicit contact", run(dir, &grasp, tcp, 0, 0, gsteps));
  row("MuJoCo's own contact", run(dir, &grasp, NULL, 0, 0, gsteps));
  printf("ball scene (compliant ball on a rigid plane), 1500 steps of 1 ms:\n");
  row("contactd, Unix socket, implicit integrator", run(dir, &ball, unix_addr, 0, 0, 1500));
  row("contactd, TCP loopback, implicit integrator", run(dir, &ball, tcp, 0, 0, 1500));
  row("contactd, Unix socket, RK4", run(dir, &ball, unix_addr, 0, 1, 1500));
  row("contactd, Unix socket, implicit contact (cmj)", run(dir, &ball, unix_addr, 1, 0, 1500));
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
  unlink(log);
  rmdir(tmp);
  return 0;
}
