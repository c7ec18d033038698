/* bench_util.h — what the engine benchmarks build alike: their material
 * and their spheres. */
#ifndef BENCH_UTIL_H
#define BENCH_UTIL_H

#include "ce.h"

/* The benches' material: E = 1e6 Pa when compliant, d = 1 s/m, mu = 0.5. */
ce_props bench_props(ce_compliance c, double hint);

/* A sphere of radius r at the origin with bench_props; NULL (the reason
 * printed to stderr) on failure. */
ce_geometry *bench_sphere(ce_compliance c, double r, double hint);

#endif
