/* ball.c — a compliant ball settles on a rigid plane under MuJoCo with its
 * contact from contactd (ball.xml, ball.contact.json).
 *
 * Checks, after --time seconds (default 1.5):
 *  - the contact force carries the weight: |Fz - m g| <= 1e-3 m g;
 *  - the rest depth d = R - z solves the closed form of the linear sphere
 *    field p = E (1 - r/R) (Elandt et al. 2019, the pressure field model)
 *    sliced by the plane, F(d) = pi E d^2 (1 - 2 d / (3 R)), to 1%:
 *    |F(d) - m g| <= 0.01 m g.
 * Prints the steps per second and the share of the time spent waiting for
 * contactd. */
#include "example.h"

int main(int argc, char **argv) {
  ex_args a;
  if (ex_parse(argc, argv, &a)) return 2;
  mjModel *m;
  mjData *d;
  cmj *x;
  if (ex_load(&a, &m, &d, &x)) return 1;
  int g = ex_geom(m, "ball");
  if (g < 0 || !x) return 1;
  double T = a.time > 0 ? a.time : 1.5, R = m->geom_size[3 * g];
  double mg = m->body_mass[m->geom_bodyid[g]] * -m->opt.gravity[2];
  /* E from the same map the ball was registered with */
  char why[512];
  cmj_map *map = cmj_map_new();
  if (cmj_map_load(map, a.map, why, sizeof why)) return fprintf(stderr, "%s\n", why), 1;
  double E = cmj_map_get(map, "ball")->modulus;
  cmj_map_free(map);
  long steps = lround(T / m->opt.timestep);
  double t0 = ex_now(), f[3], tq[3];
  for (long i = 0; i < steps; i++) {
    if (ex_step(m, d, x)) return 1;
    if (a.every && i % a.every == 0) {
      cmj_geom_wrench(x, g, f, tq);
      printf("t %.3f z %.7f Fz %.6f\n", d->time, d->geom_xpos[3 * g + 2], f[2]);
    }
  }
  double wall = ex_now() - t0;
  mj_forward(m, d); /* one more evaluation at the final state */
  cmj_geom_wrench(x, g, f, tq);
  double depth = R - d->geom_xpos[3 * g + 2];
  double closed = M_PI * E * depth * depth * (1 - 2 * depth / (3 * R));
  cmj_stats st;
  cmj_get_stats(x, &st);
  const Contactd__V1__ContactReply *rep = cmj_last_reply(x);
  printf("ball: server time of the last query %lu us, %zu pair(s)\n", (unsigned long)rep->compute_time_us,
         rep->n_results);
  printf("ball: m g %.6f N, Fz %.6f N, depth %.6e m, closed-form force at that depth %.6f N\n", mg, f[2], depth,
         closed);
  printf("ball: %ld steps in %.3f s = %.0f steps/s; waiting for contactd %.1f%% of the run, %.1f us per query\n",
         steps, wall, steps / wall, 100 * st.wait_s / wall, 1e6 * st.wait_s / (double)st.evaluations);
  char det[200];
  int bad = 0;
  snprintf(det, sizeof det, "|Fz - m g| / m g = %.2e <= 1e-3", fabs(f[2] - mg) / mg);
  bad |= ex_check("force", fabs(f[2] - mg) <= 1e-3 * mg, det);
  snprintf(det, sizeof det, "|F(d) - m g| / m g = %.2e <= 0.01", fabs(closed - mg) / mg);
  bad |= ex_check("depth", fabs(closed - mg) <= 0.01 * mg, det);
  snprintf(det, sizeof det, "%ld evaluations, %ld without contact", st.evaluations, st.failed);
  bad |= ex_check("evaluations", st.failed == 0 && st.evaluations >= steps, det);
  ex_unload(m, d, x);
  return bad;
}
