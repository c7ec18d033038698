/* grasp.c — a two-finger gripper closes on a rigid cylinder (0 to 0.4 s),
 * lifts it by 10 cm (0.4 to 1.0 s) and holds it (to --time, default 3 s);
 * grasp.xml, with the pads' contact from contactd (grasp.contact.json) or,
 * with --map none, MuJoCo's own contact.
 *
 * Checks: the cylinder is lifted with the hand (at least 8 cm) and, with
 * contactd, while held from t = 1 s to the end it slips by less than 1 mm
 * relative to the hand (MuJoCo's own soft contact is printed, not checked:
 * at its default solver settings it creeps, docs/mujoco.md). With contactd the step takes the contact implicitly (--implicit 1,
 * the default here): regularised friction with vs = 1e-4 m/s is far too
 * stiff for an explicit force at dt = 1 ms (docs/mujoco.md). */
#include "example.h"

int main(int argc, char **argv) {
  ex_args a;
  if (ex_parse(argc, argv, &a)) return 2;
  int given = 0; /* implicit contact unless --implicit 0 is given */
  for (int i = 1; i + 1 < argc; i++) given |= !strcmp(argv[i], "--implicit");
  if (!given) a.implicit = 1;
  mjModel *m;
  mjData *d;
  cmj *x;
  if (ex_load(&a, &m, &d, &x)) return 1;
  int obj = ex_geom(m, "obj"), palm = ex_geom(m, "palm");
  if (obj < 0 || palm < 0) return 1;
  double T = a.time > 0 ? a.time : 3.0, rel0 = NAN, z0 = d->geom_xpos[3 * obj + 2];
  long steps = lround(T / m->opt.timestep);
  double t0 = ex_now();
  for (long i = 0; i < steps; i++) {
    double t = d->time;
    d->ctrl[1] = d->ctrl[2] = 0.03; /* fingers: target 1.5 cm past the cylinder's surface */
    d->ctrl[0] = t < 0.4 ? 0 : t < 1.0 ? 0.1 * (t - 0.4) / 0.6 : 0.1;
    if (ex_step(m, d, x)) return 1;
    double rel = d->geom_xpos[3 * obj + 2] - d->geom_xpos[3 * palm + 2];
    if (isnan(rel0) && d->time >= 1.0 - 1e-9) rel0 = rel;
    if (a.every && i % a.every == 0)
      printf("t %.3f hand %.6f obj %.6f rel %.6f fingers %.6f %.6f\n", d->time, d->qpos[7], d->geom_xpos[3 * obj + 2],
             rel, d->qpos[8], d->qpos[9]);
  }
  double wall = ex_now() - t0;
  double lift = d->geom_xpos[3 * obj + 2] - z0;
  double slip = d->geom_xpos[3 * obj + 2] - d->geom_xpos[3 * palm + 2] - rel0;
  printf("grasp (%s): lifted %.6f m; slip while held %.3e m over %.1f s; fingers at %.6f, %.6f m\n",
         x ? "contactd" : "MuJoCo's contact", lift, slip, T - 1.0, d->qpos[8], d->qpos[9]);
  printf("grasp: %ld steps in %.3f s = %.0f steps/s\n", steps, wall, steps / wall);
  char det[200];
  int bad = 0;
  snprintf(det, sizeof det, "lifted %.4f m >= 0.08 m", lift);
  bad |= ex_check("lifted", lift >= 0.08, det);
  if (x) {
    snprintf(det, sizeof det, "|slip| = %.3e m < 1e-3 m", fabs(slip));
    bad |= ex_check("held", fabs(slip) < 1e-3, det);
    cmj_stats st;
    cmj_get_stats(x, &st);
    printf("grasp: waiting for contactd %.1f%% of the run, %.1f us per query\n", 100 * st.wait_s / wall,
           1e6 * st.wait_s / (double)st.evaluations);
    snprintf(det, sizeof det, "%ld evaluations, %ld without contact", st.evaluations, st.failed);
    bad |= ex_check("evaluations", st.failed == 0 && st.evaluations >= steps, det);
  }
  ex_unload(m, d, x);
  return bad;
}
