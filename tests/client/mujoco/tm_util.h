/* tm_util.h — what the contactd_mujoco tests share: an MJCF from a string
 * (written under the test's own directory), attaching, pose algebra. */
#ifndef TM_UTIL_H
#define TM_UTIL_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "cmj.h"
#include "td_proc.h"

static inline mjModel *tm_load(const char *xml) {
  static int n;
  char path[512], why[1000] = "";
  snprintf(path, sizeof path, "%s/model%d.xml", td_own_dir(), n++);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  fputs(xml, f);
  fclose(f);
  mjModel *m = mj_loadXML(path, NULL, why, sizeof why);
  cr_assert_not_null(m, "MJCF: %s", why);
  return m;
}

static inline cmj *tm_attach(mjModel *m, mjData *d, const cmj_map *map, const char *addr) {
  cmj_options o;
  cmj_options_default(&o);
  o.addr = addr;
  cmj *x;
  cc_error e;
  int rc = cmj_attach(m, d, map, NULL, &o, &x, &e);
  cr_assert_eq(rc, 0, "attach: %s", e.message);
  return x;
}

static inline void tm_cross(const double a[3], const double b[3], double o[3]) {
  o[0] = a[1] * b[2] - a[2] * b[1];
  o[1] = a[2] * b[0] - a[0] * b[2];
  o[2] = a[0] * b[1] - a[1] * b[0];
}

/* q = a b (w, x, y, z) */
static inline void tm_qmul(const double a[4], const double b[4], double q[4]) {
  q[0] = a[0] * b[0] - a[1] * b[1] - a[2] * b[2] - a[3] * b[3];
  q[1] = a[0] * b[1] + a[1] * b[0] + a[2] * b[3] - a[3] * b[2];
  q[2] = a[0] * b[2] - a[1] * b[3] + a[2] * b[0] + a[3] * b[1];
  q[3] = a[0] * b[3] + a[1] * b[2] - a[2] * b[1] + a[3] * b[0];
}

/* o = rotation of q applied to v */
static inline void tm_qrot(const double q[4], const double v[3], double o[3]) {
  double u[3] = {q[1], q[2], q[3]}, t[3], c[3];
  tm_cross(u, v, t);
  for (int k = 0; k < 3; k++) t[k] *= 2;
  tm_cross(u, t, c);
  for (int k = 0; k < 3; k++) o[k] = v[k] + q[0] * t[k] + c[k];
}

/* World pose of a frame at (gp, gq) in a body at (bp, bq). */
static inline void tm_compose(const double bp[3], const double bq[4], const double gp[3], const double gq[4],
                              double p[3], double q[4]) {
  tm_qrot(bq, gp, p);
  for (int k = 0; k < 3; k++) p[k] += bp[k];
  tm_qmul(bq, gq, q);
}

#endif
