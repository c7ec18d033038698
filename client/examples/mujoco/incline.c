/* incline.c — a compliant box on a rigid plane tilted by --param degrees
 * (default 25), mu = 0.3, MuJoCo integrating and contactd giving contact
 * (incline.xml, incline.contact.json).
 *
 * With tan(theta) > mu the box slides, and its acceleration along the
 * slope between t = 0.2 s and the end must be g (sin theta - mu cos theta)
 * within 1%. With tan(theta) < mu it sticks, up to the creep of regularised
 * friction, -mu (2/pi) atan(|vt|/vs) N (Elandt et al. 2019, Eq. 7): the
 * friction force balances m g sin(theta) at the creep speed
 *   v = vs tan(pi tan(theta) / (2 mu)),
 * which the mean speed from t = 0.5 s to the end must match within 5%.
 * Friction is an explicit force in MuJoCo's step (mjcb_passive), so the
 * stick case needs dt < pi vs / (mu g) (about 1e-4 s here; docs/mujoco.md):
 * run it with --dt 5e-5, or at 1 ms with --implicit 1 (cmj_step with the
 * contact implicit). */
#include "example.h"

int main(int argc, char **argv) {
  ex_args a;
  if (ex_parse(argc, argv, &a)) return 2;
  mjModel *m;
  mjData *d;
  cmj *x;
  if (ex_load(&a, &m, &d, &x)) return 1;
  int box = ex_geom(m, "box"), floor = ex_geom(m, "floor");
  if (box < 0 || floor < 0 || !x) return 1;
  double th = (isnan(a.param) ? 25 : a.param) * M_PI / 180, T = a.time > 0 ? a.time : 1.0;
  double g = -m->opt.gravity[2], hz = m->geom_size[3 * box + 2];
  double mu = 0.3; /* both sides 0.3 (incline.contact.json), so the combined mu is 0.3 */
  double down[3] = {cos(th), 0, -sin(th)}, n[3] = {sin(th), 0, cos(th)};
  /* tilt the plane about y, and set the box on it, touching */
  m->geom_quat[4 * floor + 0] = cos(th / 2), m->geom_quat[4 * floor + 2] = sin(th / 2);
  m->geom_sameframe[floor] = 0; /* no longer the world frame: kinematics must use geom_quat */
  for (int i = 0; i < 3; i++) d->qpos[i] = n[i] * hz;
  d->qpos[3] = cos(th / 2), d->qpos[4] = 0, d->qpos[5] = sin(th / 2), d->qpos[6] = 0;
  long steps = lround(T / m->opt.timestep);
  double v1 = NAN, t1 = 0, s1 = 0, t0 = ex_now();
  double tw = tan(th) > mu ? 0.2 : 0.5; /* start of the measuring window */
  for (long i = 0; i < steps; i++) {
    if (ex_step(m, d, x)) return 1;
    double v = d->qvel[0] * down[0] + d->qvel[2] * down[2], s = d->qpos[0] * down[0] + d->qpos[2] * down[2];
    if (isnan(v1) && d->time >= tw - 1e-9) v1 = v, t1 = d->time, s1 = s;
    if (a.every && i % a.every == 0) printf("t %.3f s %.7e v %.7e\n", d->time, s, v);
  }
  double wall = ex_now() - t0, f[3], tq[3];
  cmj_geom_wrench(x, box, f, tq);
  if (a.every) printf("incline: contact force along the slope %.6f N, normal %.6f N; m g sin %.6f, m g cos %.6f; w %g %g %g\n",
         f[0] * down[0] + f[2] * down[2], f[0] * n[0] + f[2] * n[2], m->body_mass[1] * g * sin(th),
         m->body_mass[1] * g * cos(th), d->qvel[3], d->qvel[4], d->qvel[5]);
  if (a.every) printf("incline: ncon %d, qfrc_constraint %g %g %g, qfrc_passive %g %g %g, qacc %g %g %g\n", d->ncon, d->qfrc_constraint[0], d->qfrc_constraint[1], d->qfrc_constraint[2], d->qfrc_passive[0], d->qfrc_passive[1], d->qfrc_passive[2], d->qacc[0], d->qacc[1], d->qacc[2]);
  double v = d->qvel[0] * down[0] + d->qvel[2] * down[2], s = d->qpos[0] * down[0] + d->qpos[2] * down[2];
  char det[300];
  int bad;
  if (tan(th) > mu) {
    double acc = (v - v1) / (d->time - t1), want = g * (sin(th) - mu * cos(th));
    printf("incline %.1f deg: acceleration %.6f m/s^2, g (sin - mu cos) = %.6f m/s^2\n", th * 180 / M_PI, acc, want);
    snprintf(det, sizeof det, "|a - g (sin - mu cos)| / that = %.2e <= 0.01", fabs(acc - want) / want);
    bad = ex_check("slide", fabs(acc - want) <= 0.01 * want, det);
  } else {
    double creep = (s - s1) / (d->time - t1), want = EX_VS * tan(M_PI * tan(th) / (2 * mu));
    printf("incline %.1f deg: creep %.4e m/s = %.3f vs; regularised friction's balance %.4e m/s; moved %.3e m in "
           "%.2f s (vs t = %.3e m)\n",
           th * 180 / M_PI, creep, creep / EX_VS, want, s, d->time, EX_VS * d->time);
    snprintf(det, sizeof det, "|creep - vs tan(pi tan / (2 mu))| / that = %.2e <= 0.05", fabs(creep - want) / want);
    bad = ex_check("creep", fabs(creep - want) <= 0.05 * want, det);
  }
  cmj_stats st;
  cmj_get_stats(x, &st);
  printf("incline: %ld steps in %.3f s = %.0f steps/s\n", steps, wall, steps / wall);
  snprintf(det, sizeof det, "%ld evaluations, %ld without contact", st.evaluations, st.failed);
  bad |= ex_check("evaluations", st.failed == 0 && st.evaluations >= steps, det);
  ex_unload(m, d, x);
  return bad;
}
