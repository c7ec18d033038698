/* bench_util.c — shared pieces of the engine benchmarks (bench_util.h). */
#include "bench_util.h"

#include <stdio.h>
#include <string.h>

ce_props bench_props(ce_compliance c, double hint) {
  ce_props pr;
  memset(&pr, 0, sizeof pr);
  pr.compliance = c;
  pr.modulus = c == CE_COMPLIANT ? 1e6 : 0;
  pr.hint = hint;
  pr.material.dissipation = 1.0;
  pr.material.friction = 0.5;
  return pr;
}

ce_geometry *bench_sphere(ce_compliance c, double r, double hint) {
  ce_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.type = CE_SHAPE_SPHERE;
  sh.radius = r;
  ce_props pr = bench_props(c, hint);
  ce_geometry *g = NULL;
  ce_error err;
  if (ce_geometry_from_shape(&sh, &pr, &g, &err) != CE_OK) {
    fprintf(stderr, "sphere R %g (hint %g): %s\n", r, hint, err.message);
    return NULL;
  }
  return g;
}
