/* example.h — what the MuJoCo examples share: the command line, loading an
 * MJCF with its contact map, attaching, and the printed checks. Header-only
 * (static inline) so each example stays one translation unit. */
#ifndef CMJ_EXAMPLE_H
#define CMJ_EXAMPLE_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmj.h"

#define EX_VS 1e-4 /* stiction tolerance of regularised friction, m/s (the server default) */

typedef struct ex_args {
  const char *addr;    /* --addr (NULL = the default address) */
  const char *mjcf;    /* --mjcf FILE */
  const char *map;     /* --map FILE (NULL = MuJoCo's own contact only) */
  const char *publish; /* --publish NAME */
  double time;         /* --time T, s (0 = the example's default) */
  int every;           /* --every N: print every N-th step (0 = only the summary) */
  double param;        /* --param X: the example's parameter (e.g. the incline angle, deg) */
  double dt;           /* --dt DT: time step, s (0 = the MJCF's) */
  int implicit;        /* --implicit 1: contact implicit in cmj_step */
  double vs;           /* --vs V: stiction tolerance, m/s (default EX_VS) */
} ex_args;

static inline int ex_parse(int argc, char **argv, ex_args *a) {
  memset(a, 0, sizeof *a);
  a->param = NAN;
  for (int i = 1; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (!strcmp(k, "--addr")) a->addr = v;
    else if (!strcmp(k, "--mjcf")) a->mjcf = v;
    else if (!strcmp(k, "--map")) a->map = !strcmp(v, "none") ? NULL : v;
    else if (!strcmp(k, "--publish")) a->publish = v;
    else if (!strcmp(k, "--time")) a->time = atof(v);
    else if (!strcmp(k, "--every")) a->every = atoi(v);
    else if (!strcmp(k, "--param")) a->param = atof(v);
    else if (!strcmp(k, "--dt")) a->dt = atof(v);
    else if (!strcmp(k, "--implicit")) a->implicit = atoi(v);
    else if (!strcmp(k, "--vs")) a->vs = atof(v);
    else {
      fprintf(stderr, "unknown option %s\n", k);
      return 2;
    }
  }
  if (argc % 2 == 0 || !a->mjcf) {
    fprintf(stderr, "usage: %s --mjcf FILE [--map FILE|none] [--addr ADDR] [--publish NAME] [--time T] [--every N] [--param X] [--dt DT] [--implicit 0|1] [--vs V]\n",
            argv[0]);
    return 2;
  }
  return 0;
}

static inline double ex_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Load the MJCF (and, with a map, attach contactd). *x stays NULL without a
 * map. Returns 0 or prints why and returns 1. */
static inline int ex_load(const ex_args *a, mjModel **m, mjData **d, cmj **x) {
  char why[1000] = "";
  *x = NULL;
  *m = mj_loadXML(a->mjcf, NULL, why, sizeof why);
  if (!*m) {
    fprintf(stderr, "%s: %s\n", a->mjcf, why);
    return 1;
  }
  if (a->dt > 0) (*m)->opt.timestep = a->dt;
  *d = mj_makeData(*m);
  if (!a->map) return 0;
  cmj_map *map = cmj_map_new();
  if (!map || cmj_map_load(map, a->map, why, sizeof why)) {
    fprintf(stderr, "%s\n", why);
    cmj_map_free(map);
    return 1;
  }
  cmj_options o;
  cmj_options_default(&o);
  o.addr = a->addr;
  o.publish = a->publish;
  o.stiction_tolerance = a->vs > 0 ? a->vs : EX_VS;
  o.implicit = a->implicit;
  cc_error err;
  int rc = cmj_attach(*m, *d, map, NULL, &o, x, &err);
  cmj_map_free(map);
  if (rc) {
    fprintf(stderr, "attach: %s: %s\n", cc_code_name(rc), err.message);
    return 1;
  }
  return 0;
}

/* One step: through cmj when attached (an error ends the run), else mj_step. */
static inline int ex_step(mjModel *m, mjData *d, cmj *x) {
  if (!x) {
    mj_step(m, d);
    return 0;
  }
  cc_error err;
  int rc = cmj_step(x, &err);
  if (rc) fprintf(stderr, "step: %s\n", err.message);
  return rc;
}

static inline void ex_unload(mjModel *m, mjData *d, cmj *x) {
  cmj_detach(x);
  mj_deleteData(d);
  mj_deleteModel(m);
}

/* Print "check NAME: ok|FAIL (...)"; returns 1 when it failed. */
static inline int ex_check(const char *name, int ok, const char *detail) {
  printf("check %s: %s (%s)\n", name, ok ? "ok" : "FAIL", detail);
  return !ok;
}

static inline int ex_geom(const mjModel *m, const char *name) {
  int g = mj_name2id(m, mjOBJ_GEOM, name);
  if (g < 0) fprintf(stderr, "the model has no geom '%s'\n", name);
  return g;
}

#endif
