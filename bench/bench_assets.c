/* bench_assets.c — mesh assets: parse, tetrahedralise and field time
 * for a 50k-triangle surface (a torus, major radius 1, minor 0.4, 250 x 100
 * quads split in two) at a few edge lengths; Laplace (PCG) against the
 * distance field. Prints numbers, asserts nothing.
 * Usage: bench_assets [edge_length ...]   (default 0.05 0.035) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ce.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}
static double cpu(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static char *torus_obj(int nu, int nv, size_t *len) {
  size_t cap = (size_t)nu * nv * 120 + 64, n = 0;
  char *s = malloc(cap);
  if (!s) exit(1);
  for (int i = 0; i < nu; i++)
    for (int j = 0; j < nv; j++) {
      double u = 2 * M_PI * i / nu, v = 2 * M_PI * j / nv;
      n += (size_t)snprintf(s + n, cap - n, "v %.9f %.9f %.9f\n", (1 + 0.4 * cos(v)) * cos(u),
                            (1 + 0.4 * cos(v)) * sin(u), 0.4 * sin(v));
    }
#define TI(i, j) (1 + ((i) % nu) * nv + ((j) % nv))
  for (int i = 0; i < nu; i++)
    for (int j = 0; j < nv; j++)
      n += (size_t)snprintf(s + n, cap - n, "f %d %d %d\nf %d %d %d\n", TI(i, j), TI(i + 1, j), TI(i + 1, j + 1),
                            TI(i, j), TI(i + 1, j + 1), TI(i, j + 1));
#undef TI
  *len = n;
  return s;
}

int main(int argc, char **argv) {
  double sizes[8] = {0.05, 0.035};
  int ns = 2;
  if (argc > 1) {
    ns = 0;
    for (int i = 1; i < argc && ns < 8; i++) sizes[ns++] = atof(argv[i]);
  }
  size_t len;
  char *obj = torus_obj(250, 100, &len);
  ce_mesh_data m;
  ce_error err;
  double t0 = now();
  if (ce_mesh_parse(obj, len, CE_MESH_OBJ, 0, &m, &err)) {
    fprintf(stderr, "parse: %s\n", err.message);
    return 1;
  }
  printf("bench_assets: torus R=1 r=0.4, %d triangles, %d vertices; OBJ %.1f MB parsed in %.1f ms\n", m.ntri, m.nv,
         (double)len / 1e6, 1e3 * (now() - t0));
  printf("%8s %9s %8s %7s %9s %10s | %9s %6s %9s | %9s | %9s\n", "edge", "tets", "verts", "mindih", "vol_err",
         "tet_ms", "laplace_ms", "iters", "residual", "dist_ms", "total_ms");
  for (int k = 0; k < ns; k++) {
    ce_surface_build_options o;
    ce_surface_build_options_default(&o);
    o.edge_length = sizes[k];
    double *v;
    int32_t *t, nv, nt;
    ce_surface_build_report rep;
    double c0 = cpu();
    if (ce_tetrahedralize_surface(m.vertices, m.nv, m.tris, m.ntri, &o, &v, &nv, &t, &nt, &rep, &err)) {
      fprintf(stderr, "tetrahedralise: %s\n", err.message);
      return 1;
    }
    double ttet = cpu() - c0;
    ce_props props;
    memset(&props, 0, sizeof props);
    props.compliance = CE_COMPLIANT;
    props.modulus = 1e5;
    props.hint = sizes[k];
    ce_field_options fo;
    memset(&fo, 0, sizeof fo);
    ce_field_report fr;
    ce_geometry *g = NULL;
    c0 = cpu();
    fo.kind = CE_FIELD_LAPLACE;
    if (ce_geometry_from_tetmesh_field(v, nv, t, nt, &fo, &props, &g, &fr, &err)) {
      fprintf(stderr, "laplace: %s\n", err.message);
      return 1;
    }
    double tlap = cpu() - c0;
    ce_geometry_free(g);
    c0 = cpu();
    fo.kind = CE_FIELD_DISTANCE;
    if (ce_geometry_from_tetmesh_field(v, nv, t, nt, &fo, &props, &g, NULL, &err)) {
      fprintf(stderr, "distance: %s\n", err.message);
      return 1;
    }
    double tdist = cpu() - c0;
    ce_geometry_free(g);
    c0 = cpu();
    if (ce_geometry_from_surface(m.vertices, m.nv, m.tris, m.ntri, &props, &o, &g, NULL, &err)) {
      fprintf(stderr, "surface: %s\n", err.message);
      return 1;
    }
    double ttot = cpu() - c0;
    ce_geometry_free(g);
    printf("%8.3f %9d %8d %7.1f %+9.4f %10.1f | %9.1f %6d %9.1e | %9.1f | %9.1f\n", sizes[k], nt, nv,
           rep.min_dihedral_deg, rep.volume_error, 1e3 * ttet, 1e3 * tlap, fr.iterations, fr.residual, 1e3 * tdist,
           1e3 * ttot);
    free(v);
    free(t);
  }
  printf("(times are thread CPU ms; laplace_ms and dist_ms include building the geometry: validation, BVH;\n"
         " laplace_ms also builds a temporary distance-field geometry for the depths)\n");
  ce_mesh_data_free(&m);
  free(obj);
  return 0;
}
