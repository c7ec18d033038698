/* bench_contact.c — contact query speed for sphere pairs.
 *
 * Cases, for each resolution hint (0.05, 0.026, 0.013, 0.0066 m):
 *   cc: compliant sphere R = 0.1 vs compliant sphere R = 0.1, centres 0.18 m
 *       apart (polygon surface + wrench through ce_contact, want_surface);
 *       also the tet-tet intersection alone (BVH traversal + polygons);
 *   cc-v: the cc pair with B moving: sliding at 0.1 m/s along y, approaching
 *       at 0.01 m/s and spinning at 0.2 rad/s about x (friction and
 *       dissipation act, so the wrench takes its quadrature path);
 *   cc-g: the cc pair with B turned by a generic rotation (about 51 degrees
 *       about (0.50, -0.75, 0.62)): the meshes no longer mirror each other,
 *       so polygons are clipped by both tets (more, smaller polygons);
 *   cc-e: the cc and cc-g pairs with and without the strain energy
 *       (ce_options.want_energy), runs alternating, cpu medians and their
 *       ratio;
 *   cr-e: the same for a compliant sphere against a rigid one (convex
 *       path, and the general closed-mesh path) and against a terrain;
 *   cr: compliant sphere R = 0.1 vs rigid sphere R = 0.1, same distance;
 *   reduce: the cc, cc-g and cr pairs queried for the wrench alone, with
 *       patches (want_patches) and with reduced contacts
 *       (ce_options.reduced_contacts) K = 4 and 8, runs alternating, cpu
 *       medians and their ratios to the plain query (K = 8 also to the
 *       query with patches, which reduction computes too);
 *   margin: the cc, cc-g and cr pairs with A (and B, if compliant) built
 *       with a margin of one hint: in contact (the same surface as without)
 *       and apart by half the margin (speculative: the inflated copies'
 *       surface), cpu medians against the plain query in contact; the
 *       same for the rigid sphere's surface tetrahedralised at the hint
 *       (ce_geometry_from_surface, a mesh's margin by face planes) against
 *       the rigid sphere (mesh-cr); first the CPU time and heap bytes the
 *       inflated copy adds to each build, and its split vertices and right
 *       prisms (ce_margin.c);
 *   cr-m: the cr pair with two more parts in the rigid mesh (three
 *       components): spheres R = 0.025 at -0.24 and R = 0.03 at +0.15
 *       along x of its frame, the first wholly inside the compliant sphere
 *       (centred 0.06 from its centre), the second clear of both.
 * Per hint first the CPU time of one build of each sphere (what a client
 * waits for when it registers one) and the heap bytes it holds (what it
 * takes of the daemon's cache). Prints per case: mesh sizes,
 * candidate pairs, polygons, candidates per polygon, median and p90
 * microseconds per query over >= 200 timed runs after a warm-up, and ns
 * per output polygon. Single thread; asserts nothing.
 *
 * Usage: bench_contact [runs [hint [case]]]   (default 300 runs, every hint
 *       (also hint 0)
 * and case; case = cc, cc-v, cc-g, cc-x, cc-e, cr-e, cr, cr-m, reduce, margin, jac or jac-pt, the
 * last the point-contact model's Jacobians of rigid primitives: spheres
 * and boxes (analytic MTD), ellipsoids and a cylinder on a box (GJK/EPA),
 * B moving). For profiling one case, e.g.
 *   valgrind --tool=callgrind --toggle-collect=ce_contact \
 *       bench_contact 10 0.0066 cc */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* internal headers: the bench times the intersectors and the surface
 * builder on their own, below the public ce_contact() */
#include "ce_geometry.h"
#include "ce_intersect.h"
#include "ce_mesh.h"
#include "ce_surface.h"
#include "bench_util.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* CPU time of this thread: on a shared machine it leaves out the time the
 * thread waits for a core (cache interference from neighbours remains). */
static double cpu_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

typedef struct stats {
  double median, p90;
} stats;

static stats summarize(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  stats s = {t[n / 2], t[(n * 9) / 10]};
  return s;
}

static ce_geometry *sphere(ce_compliance c, double hint) { return bench_sphere(c, 0.1, hint); }

/* The rigid mesh of the cr-m case: a sphere R = 0.1 at the origin and
 * spheres R = 0.025 at (-0.24, 0, 0) and R = 0.03 at (0.15, 0, 0), as one
 * mesh. */
static ce_geometry *rigid_parts(double hint) {
  const double rad[3] = {0.1, 0.025, 0.03}, cx[3] = {0, -0.24, 0.15};
  ce_geometry *part[3] = {NULL, NULL, NULL}, *g = NULL;
  int32_t nv = 0, nf = 0;
  for (int k = 0; k < 3; k++) {
    if (!(part[k] = bench_sphere(CE_RIGID, rad[k], hint))) goto done;
    nv += part[k]->tri.nv;
    nf += part[k]->tri.nf;
  }
  double *v = malloc(sizeof(double) * 3 * (size_t)nv);
  int32_t *t = malloc(sizeof(int32_t) * 3 * (size_t)nf);
  if (v && t) {
    int32_t bv = 0, bf = 0;
    for (int k = 0; k < 3; k++) {
      const ce_trimesh *m = &part[k]->tri;
      for (int32_t i = 0; i < m->nv; i++) {
        v[3 * (bv + i)] = m->v[i].x + cx[k];
        v[3 * (bv + i) + 1] = m->v[i].y;
        v[3 * (bv + i) + 2] = m->v[i].z;
      }
      for (int32_t f = 0; f < m->nf; f++)
        for (int j = 0; j < 3; j++) t[3 * (bf + f) + j] = m->tri[f][j] + bv;
      bv += m->nv;
      bf += m->nf;
    }
    ce_props pr = bench_props(CE_RIGID, hint);
    ce_error err;
    if (ce_geometry_from_trimesh(v, nv, t, nf, 1, &pr, &g, &err) != CE_OK)
      fprintf(stderr, "rigid parts (hint %g): %s\n", hint, err.message);
  }
  free(v);
  free(t);
done:
  for (int k = 0; k < 3; k++) ce_geometry_free(part[k]);
  return g;
}

static ce_body body_at(const ce_geometry *g, double x) {
  ce_body b;
  memset(&b, 0, sizeof b);
  b.geometry = g;
  b.X_WB = ce_pose_identity();
  b.X_WB.p = ce_v3(x, 0, 0);
  b.material.dissipation = 1.0;
  b.material.friction = 0.5;
  return b;
}

/* moving: 1 = B slides, approaches and spins; 2 = B at rest, turned. */
static void run_contact(const char *name, double hint, const ce_geometry *ga, const ce_geometry *gb, int moving,
                        int runs, ce_arena *arena, double *t, double *tc) {
  ce_body a = body_at(ga, 0), b = body_at(gb, 0.18);
  if (moving == 2) {
    ce_quat q = {0.9, 0.2, -0.3, 0.25}; /* normalised below */
    double l = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    q.w /= l;
    q.x /= l;
    q.y /= l;
    q.z /= l;
    b.X_WB = ce_pose_from_quat(q, ce_v3(0.18, 0, 0));
  } else if (moving) {
    b.V_WB.v = ce_v3(-0.01, 0.1, 0);
    b.V_WB.w = ce_v3(0.2, 0, 0);
  }
  ce_options opt;
  ce_options_default(&opt);
  opt.want_surface = 1;
  ce_result r;
  ce_error err;
  for (int i = 0; i < 20; i++) { /* warm-up: the arena settles on one chunk */
    ce_arena_reset(arena);
    if (ce_contact(&a, &b, &opt, arena, &r, &err) != CE_OK) {
      printf("%-4s hint %.4f: ce_contact failed: %s\n", name, hint, err.message);
      return;
    }
  }
  for (int i = 0; i < runs; i++) {
    ce_arena_reset(arena);
    double c0 = cpu_us(), t0 = now_us();
    ce_contact(&a, &b, &opt, arena, &r, &err);
    t[i] = now_us() - t0;
    tc[i] = cpu_us() - c0;
  }
  ce_geometry_info ia, ib;
  ce_geometry_get_info(ga, &ia);
  ce_geometry_get_info(gb, &ib);
  stats s = summarize(t, runs), sc = summarize(tc, runs);
  printf("%-4s hint %.4f  tets %6d+%-6d tris %5d  cand %6lld  poly %5lld  verts %5d  cand/poly %5.2f  area %.5f m2  "
         "fx %9.3f N | wall median %8.1f us p90 %8.1f us %6.0f ns/poly | cpu median %8.1f us p90 %8.1f us %6.0f "
         "ns/poly\n",
         name, hint, ia.tetrahedra, ib.tetrahedra, ia.triangles + ib.triangles, (long long)r.candidate_pairs,
         (long long)r.polygons, r.surface.nv, r.polygons ? (double)r.candidate_pairs / (double)r.polygons : 0.0, r.area,
         r.wrench_a.force.x, s.median, s.p90, r.polygons ? 1e3 * s.median / (double)r.polygons : 0.0, sc.median,
         sc.p90, r.polygons ? 1e3 * sc.median / (double)r.polygons : 0.0);
}

/* What the strain energy costs: the query (as run_contact, B at rest,
 * turned for cc-g) with and without want_energy, alternating run by run so
 * that both see the same machine; CPU medians and their ratio. */
static void time_energy(const char *name, double hint, const ce_body *pa, const ce_body *pb, int runs,
                        ce_arena *arena, double *t, double *te);

static void run_energy(const char *name, double hint, const ce_geometry *ga, const ce_geometry *gb, int turned,
                       int runs, ce_arena *arena, double *t, double *te) {
  ce_body a = body_at(ga, 0), b = body_at(gb, 0.18);
  if (turned) {
    ce_quat q = {0.9, 0.2, -0.3, 0.25};
    double l = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    b.X_WB = ce_pose_from_quat((ce_quat){q.w / l, q.x / l, q.y / l, q.z / l}, ce_v3(0.18, 0, 0));
  }
  time_energy(name, hint, &a, &b, runs, arena, t, te);
}

static void time_energy(const char *name, double hint, const ce_body *pa, const ce_body *pb, int runs,
                        ce_arena *arena, double *t, double *te) {
  const ce_body a = *pa, b = *pb;
  ce_options opt, opte;
  ce_options_default(&opt);
  opt.want_surface = 1;
  opte = opt;
  opte.want_energy = 1;
  ce_result r;
  ce_error err;
  double U = 0;
  for (int i = 0; i < 2 * runs + 20; i++) {
    int e = i & 1;
    ce_arena_reset(arena);
    double c0 = cpu_us();
    if (ce_contact(&a, &b, e ? &opte : &opt, arena, &r, &err) != CE_OK) {
      printf("%-4s hint %.4f: ce_contact failed: %s\n", name, hint, err.message);
      return;
    }
    double dt = cpu_us() - c0;
    if (e) U = r.strain_energy;
    if (i >= 20) (e ? te : t)[(i - 20) / 2] = dt;
  }
  stats s = summarize(t, runs), se = summarize(te, runs);
  printf("%-4s hint %.4f  energy %.6e J | cpu median plain %8.1f us, with energy %8.1f us, ratio %.3f\n", name,
         hint, U, s.median, se.median, se.median / s.median);
}

/* What reduced contacts cost: the query for the wrench alone, with
 * patches, and with K = 4 and K = 8 points per patch, taking turns run by
 * run so that all four see the same machine; CPU medians and their
 * ratios. B turned as in cc-g when `turned`. */
static void run_reduce(const char *name, double hint, const ce_geometry *ga, const ce_geometry *gb, int turned,
                       int runs, ce_arena *arena) {
  ce_body a = body_at(ga, 0), b = body_at(gb, 0.18);
  if (turned) {
    ce_quat q = {0.9, 0.2, -0.3, 0.25};
    double l = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    b.X_WB = ce_pose_from_quat((ce_quat){q.w / l, q.x / l, q.y / l, q.z / l}, ce_v3(0.18, 0, 0));
  }
  enum { NC = 4 };
  ce_options opt[NC];
  for (int k = 0; k < NC; k++) ce_options_default(&opt[k]);
  opt[1].reduced_contacts = 4;
  opt[2].reduced_contacts = 8;
  opt[3].want_patches = 1;
  double *t[NC];
  for (int k = 0; k < NC; k++) t[k] = malloc(sizeof(double) * (size_t)runs);
  ce_result r;
  ce_error err;
  int32_t np[NC] = {0, 0, 0, 0};
  int ok = t[0] && t[1] && t[2] && t[3];
  for (int i = 0; ok && i < NC * runs + 40; i++) {
    int k = i % NC;
    ce_arena_reset(arena);
    double c0 = cpu_us();
    if (ce_contact(&a, &b, &opt[k], arena, &r, &err) != CE_OK) {
      printf("%-4s hint %.4f: ce_contact failed: %s\n", name, hint, err.message);
      ok = 0;
      break;
    }
    double dt = cpu_us() - c0;
    np[k] = r.nreduced;
    if (i >= 40) t[k][(i - 40) / NC] = dt;
  }
  if (ok) {
    stats s0 = summarize(t[0], runs), s4 = summarize(t[1], runs), s8 = summarize(t[2], runs),
          sp = summarize(t[3], runs);
    printf("reduce %-4s hint %.4f  poly %5lld | cpu median plain %8.1f us, K=4 (%d points) %8.1f us ratio %.3f, "
           "K=8 (%d points) %8.1f us ratio %.3f | with patches %8.1f us, K=8 over it %.3f\n",
           name, hint, (long long)r.polygons, s0.median, (int)np[1], s4.median, s4.median / s0.median, (int)np[2],
           s8.median, s8.median / s0.median, sp.median, s8.median / sp.median);
  }
  for (int k = 0; k < NC; k++) free(t[k]);
}

/* One CPU-timed median of `runs` queries of (a, b). */
static double median_query(const ce_body *a, const ce_body *b, int runs, ce_arena *arena, double *t,
                           ce_result *r) {
  ce_options opt;
  ce_options_default(&opt);
  ce_error err;
  for (int i = 0; i < runs + 10; i++) {
    ce_arena_reset(arena);
    double c0 = cpu_us();
    if (ce_contact(a, b, &opt, arena, r, &err) != CE_OK) {
      printf("margin: ce_contact failed: %s\n", err.message);
      return -1;
    }
    if (i >= 10) t[i - 10] = cpu_us() - c0;
  }
  return summarize(t, runs).median;
}

/* What a margin costs (case margin): A and B (compliant) with a margin of
 * one hint, in contact and half a margin apart. */
static void run_margin(const char *name, double hint, const ce_geometry *ga, const ce_geometry *gb,
                       const ce_geometry *gam, const ce_geometry *gbm, int turned, int runs, ce_arena *arena,
                       double *t) {
  ce_body a = body_at(ga, 0), b = body_at(gb, 0.18), am = body_at(gam, 0), bm = body_at(gbm, 0.18);
  if (turned) {
    ce_quat q = {0.9, 0.2, -0.3, 0.25};
    double l = sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    b.X_WB = bm.X_WB = ce_pose_from_quat((ce_quat){q.w / l, q.x / l, q.y / l, q.z / l}, ce_v3(0.18, 0, 0));
  }
  ce_result r;
  double plain = median_query(&a, &b, runs, arena, t, &r), with = median_query(&am, &bm, runs, arena, t, &r);
  int in_contact = r.status == CE_CONTACT_SURFACE;
  /* half a margin apart (both compliant: the margins add up) */
  bm.X_WB.p.x = 0.2 + 0.5 * hint;
  double apart = median_query(&am, &bm, runs, arena, t, &r);
  printf("margin %-4s hint %.4f | cpu median in contact: plain %8.1f us, with margins %8.1f us ratio %.3f (%s) | "
         "apart by half a margin: %8.1f us (%s, separation %.3g m, %d faces)\n",
         name, hint, plain, with, with / plain, in_contact ? "surface" : "NOT IN CONTACT", apart,
         r.status == CE_CONTACT_SPECULATIVE ? "speculative" : "NOT SPECULATIVE", r.speculative.separation,
         (int)r.speculative.faces);
}

static ce_geometry *margin_sphere(double hint, double margin) {
  ce_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.type = CE_SHAPE_SPHERE;
  sh.radius = 0.1;
  ce_props pr = bench_props(CE_COMPLIANT, hint);
  pr.margin = margin;
  ce_geometry *g = NULL;
  ce_error err;
  if (ce_geometry_from_shape(&sh, &pr, &g, &err) != CE_OK) printf("margin sphere: %s\n", err.message);
  return g;
}

/* The rigid sphere's surface tetrahedralised at the hint, with a margin. */
static ce_geometry *margin_mesh(const ce_geometry *rigid, double hint, double margin) {
  const ce_trimesh *m = &rigid->tri;
  ce_props pr = bench_props(CE_COMPLIANT, hint);
  pr.margin = margin;
  ce_geometry *g = NULL;
  ce_error err;
  if (ce_geometry_from_surface((const double *)m->v, m->nv, (const int32_t *)m->tri, m->nf, &pr, NULL, &g, NULL,
                               &err) != CE_OK)
    printf("margin mesh: %s\n", err.message);
  return g;
}

/* The CPU time and bytes a margin adds to build(hint, margin). */
static ce_geometry *margin_build(const char *what, ce_geometry *(*build)(const ce_geometry *, double, double),
                                 const ce_geometry *arg, double hint) {
  double c0 = cpu_us();
  ce_geometry *g0 = build(arg, hint, 0);
  double c1 = cpu_us();
  ce_geometry *g1 = build(arg, hint, hint);
  double c2 = cpu_us();
  if (g0 && g1)
    printf("margin build %-6s hint %.4f | %7d tets %8.1f ms, with the margin +%7.1f ms +%6.2f MB (%d layer tets, %d "
           "copies, %d split vertices, %d right prisms)\n",
           what, hint, (int)g0->tet.nt, (c1 - c0) / 1e3, (c2 - c1 - (c1 - c0)) / 1e3,
           (double)(g1->bytes - g0->bytes) / 1e6, (int)(g1->inflated->tet.nt - g1->tet.nt),
           (int)(g1->inflated->tet.nv - g1->tet.nv), (int)g1->margin_split, (int)g1->margin_right);
  ce_geometry_free(g0);
  return g1;
}

static ce_geometry *build_sphere(const ce_geometry *unused, double hint, double margin) {
  (void)unused;
  return margin_sphere(hint, margin);
}

/* The strain energy against rigid meshes and a terrain (cr-e): the
 * compliant sphere A against the rigid sphere B (centres 0.18 m apart), B's
 * mesh through the convex path and, its convexity flag cleared, through
 * the general closed-mesh path (signed prisms); then A pressed 0.01 m into
 * a wavy terrain (z = 0.02 sin(3x) cos(2y), 64 x 64 samples 0.02 m apart). */
static void run_energy_rigid(double hint, const ce_geometry *c1, ce_geometry *r1, int runs, ce_arena *arena,
                             double *t, double *te) {
  ce_body a = body_at(c1, 0), b = body_at(r1, 0.18);
  time_energy("cr-e (convex)", hint, &a, &b, runs, arena, t, te);
  r1->convex = 0;
  time_energy("cr-e (general)", hint, &a, &b, runs, arena, t, te);
  r1->convex = 1;
  enum { N = 64 };
  double *z = malloc(sizeof(double) * N * N);
  if (!z) return;
  const double dx = 0.02, x0 = -0.63;
  for (int j = 0; j < N; j++)
    for (int i = 0; i < N; i++) z[j * N + i] = 0.02 * sin(3 * (x0 + i * dx)) * cos(2 * (x0 + j * dx));
  ce_props pr;
  memset(&pr, 0, sizeof pr);
  pr.compliance = CE_RIGID;
  pr.hint = 0.1;
  ce_geometry *tg = NULL;
  ce_error err;
  if (ce_geometry_from_heightfield(z, N, N, dx, dx, ce_v3(x0, x0, 0), 1, &pr, &tg, &err) == CE_OK) {
    ce_body at = body_at(c1, 0), bt = body_at(tg, 0);
    at.X_WB.p = ce_v3(0, 0, 0.09);
    time_energy("ct-e (terrain)", hint, &at, &bt, runs, arena, t, te);
  } else {
    printf("ct-e: terrain: %s\n", err.message);
  }
  ce_geometry_free(tg);
  free(z);
}

/* The query with and without wrench Jacobians (want_jacobian), timed in
 * alternation on the same bodies (CPU time), and their ratio. moving as in
 * run_contact (1: B slides, approaches and spins). */
static void run_jacobian(const char *name, double hint, const ce_geometry *ga, const ce_geometry *gb, int moving,
                         int runs, ce_arena *arena, double *t, double *tc) {
  ce_body a = body_at(ga, 0), b = body_at(gb, 0.18);
  if (moving == 2) {
    ce_quat q = ce_quat_normalize((ce_quat){0.9, 0.2, -0.3, 0.25});
    b.X_WB = ce_pose_from_quat(q, ce_v3(0.18, 0, 0));
  } else if (moving) {
    b.V_WB.v = ce_v3(-0.01, 0.1, 0);
    b.V_WB.w = ce_v3(0.2, 0, 0);
  }
  ce_options plain, jac;
  ce_options_default(&plain);
  jac = plain;
  jac.want_jacobian = 1;
  ce_result r;
  ce_error err;
  for (int i = 0; i < 20; i++) {
    ce_arena_reset(arena);
    if (ce_contact(&a, &b, &jac, arena, &r, &err) != CE_OK || r.jacobian_status != CE_JACOBIAN_OK) {
      printf("%-5s hint %.4f: Jacobian query failed: %s\n", name, hint,
             r.jacobian_note ? r.jacobian_note : err.message);
      return;
    }
  }
  const double kzz = r.jacobian->d_pose_a[35];
  for (int i = 0; i < runs; i++) {
    ce_arena_reset(arena);
    double c0 = cpu_us();
    ce_contact(&a, &b, &plain, arena, &r, &err);
    t[i] = cpu_us() - c0;
    ce_arena_reset(arena);
    c0 = cpu_us();
    ce_contact(&a, &b, &jac, arena, &r, &err);
    tc[i] = cpu_us() - c0;
  }
  stats s = summarize(t, runs), sj = summarize(tc, runs);
  printf("%-5s hint %.4f  jacobians: poly %5lld  plain cpu median %8.1f us | with jacobians %8.1f us (p90 %8.1f) | "
         "ratio %.2f  (dfx/dpx of A %.4g N/m)\n",
         name, hint, (long long)r.polygons, s.median, sj.median, sj.p90, sj.median / s.median,
         r.jacobian ? r.jacobian->d_pose_a[21] : kzz);
}

/* A rigid primitive of size about 0.2 m for the point-contact cases. */
static ce_geometry *rigid_shape(ce_shape_type type) {
  ce_shape s;
  memset(&s, 0, sizeof s);
  s.type = type;
  s.radius = 0.1;
  s.length = 0.1;
  s.size = type == CE_SHAPE_ELLIPSOID ? ce_v3(0.1, 0.09, 0.08) : ce_v3(0.2, 0.18, 0.16);
  ce_props pr;
  memset(&pr, 0, sizeof pr);
  pr.compliance = CE_RIGID;
  pr.hint = 0.05;
  ce_geometry *g = NULL;
  ce_error err;
  return ce_geometry_from_shape(&s, &pr, &g, &err) == CE_OK ? g : NULL;
}

/* Point contact with and without Jacobians (B sliding, approaching and
 * spinning), per pair kind. */
static void run_point_jacobians(int runs, ce_arena *arena, double *t, double *tc) {
  static const struct {
    const char *name;
    ce_shape_type a, b;
  } cases[] = {{"pt-ss", CE_SHAPE_SPHERE, CE_SHAPE_SPHERE},
               {"pt-bb", CE_SHAPE_BOX, CE_SHAPE_BOX},
               {"pt-ee", CE_SHAPE_ELLIPSOID, CE_SHAPE_ELLIPSOID},
               {"pt-cb", CE_SHAPE_CYLINDER, CE_SHAPE_BOX}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ce_geometry *ga = rigid_shape(cases[i].a), *gb = rigid_shape(cases[i].b);
    if (ga && gb) run_jacobian(cases[i].name, 0, ga, gb, 1, runs, arena, t, tc);
    ce_geometry_free(ga);
    ce_geometry_free(gb);
  }
}

/* The intersection alone: BVH traversal + polygons into a builder. */
static void run_intersect(double hint, const ce_geometry *ga, const ce_geometry *gb, int runs, ce_arena *arena,
                          double *t) {
  /* CPU time throughout: this part compares algorithms. */
  ce_pose X = ce_pose_identity();
  X.p = ce_v3(0.18, 0, 0);
  ce_counters c = {0, 0, 0};
  for (int i = 0; i < runs + 20; i++) {
    ce_arena_reset(arena);
    ce_builder b;
    c.candidate_pairs = c.polygons = c.faces_dropped = 0;
    double t0 = cpu_us();
    ce_builder_init(&b, arena);
    if (ce_intersect_tet_tet(ga, gb, &X, &b, &c) != CE_OK) {
      printf("cc-x hint %.4f: intersection failed\n", hint);
      return;
    }
    if (i >= 20) t[i - 20] = cpu_us() - t0;
  }
  /* The reference without surface tracing (every BVH candidate pair). */
  int ra = runs < 30 ? runs : 30;
  double *tb = malloc(sizeof(double) * (size_t)ra);
  ce_counters ca = {0, 0, 0};
  for (int i = 0; i < ra; i++) {
    ce_arena_reset(arena);
    ce_builder b;
    ca.candidate_pairs = ca.polygons = ca.faces_dropped = 0;
    double t0 = cpu_us();
    ce_builder_init(&b, arena);
    ce_intersect_tet_tet_all(ga, gb, &X, &b, &ca);
    tb[i] = cpu_us() - t0;
  }
  stats s = summarize(t, runs), sb = summarize(tb, ra);
  printf("cc-x hint %.4f  intersection only (cpu): traced %lld pairs, median %8.1f us p90 %8.1f us %6.0f ns/poly | "
         "all BVH candidates %lld pairs, median %8.1f us | dropped %lld\n",
         hint, (long long)c.candidate_pairs, s.median, s.p90, c.polygons ? 1e3 * s.median / (double)c.polygons : 0.0,
         (long long)ca.candidate_pairs, sb.median, (long long)c.faces_dropped);
  free(tb);
}

int main(int argc, char **argv) {
  int runs = argc > 1 ? atoi(argv[1]) : 300;
  if (runs < 10) runs = 10;
  double hints[] = {0.05, 0.026, 0.013, 0.0066};
  size_t nh = sizeof hints / sizeof hints[0];
  if (argc > 2 && atof(argv[2]) != 0) { /* 0: all four hints */
    hints[0] = atof(argv[2]);
    nh = 1;
  }
  const char *only = argc > 3 ? argv[3] : NULL;
  int do_cc = !only || !strcmp(only, "cc"), do_v = !only || !strcmp(only, "cc-v"), do_x = !only || !strcmp(only, "cc-x"), do_cr = !only || !strcmp(only, "cr");
  int do_g = !only || !strcmp(only, "cc-g"), do_crm = !only || !strcmp(only, "cr-m");
  int do_e = !only || !strcmp(only, "cc-e"), do_re = !only || !strcmp(only, "cr-e");
  int do_j = !only || !strcmp(only, "jac"), do_red = !only || !strcmp(only, "reduce");
  int do_mar = !only || !strcmp(only, "margin");
  if (only && !strcmp(only, "jac-pt")) nh = 0;
  ce_arena *arena = ce_arena_create(1 << 20);
  double *t = malloc(sizeof(double) * (size_t)runs), *tc = malloc(sizeof(double) * (size_t)runs);
  if (!only || !strcmp(only, "jac-pt")) run_point_jacobians(runs, arena, t, tc);
  printf("bench_contact: spheres R = 0.1 m, centres 0.18 m apart, %d timed runs per case\n", runs);
  for (size_t h = 0; h < nh; h++) {
    /* one build of each kind timed (CPU): the geometry a client registers */
    double b0 = cpu_us();
    ce_geometry *c1 = sphere(CE_COMPLIANT, hints[h]);
    double b1 = cpu_us();
    ce_geometry *c2 =
        (do_cc || do_v || do_g || do_x || do_e || do_j || do_red || do_mar) ? sphere(CE_COMPLIANT, hints[h]) : NULL;
    double b2 = cpu_us();
    ce_geometry *r1 = (do_cr || do_re || do_red || do_mar) ? sphere(CE_RIGID, hints[h]) : NULL;
    double b3 = cpu_us();
    if (c1) {
      ce_geometry_info ic;
      ce_geometry_get_info(c1, &ic);
      printf("build hint %.4f  compliant sphere %6d tets %8.1f ms %6.1f MB (%3.0f B/tet)", hints[h],
             (int)ic.tetrahedra, (b1 - b0) / 1e3, ic.bytes / 1e6, (double)ic.bytes / (double)ic.tetrahedra);
      if (r1) {
        ce_geometry_info ir;
        ce_geometry_get_info(r1, &ir);
        printf(" | rigid sphere %5d tris %6.1f ms %5.2f MB", (int)ir.triangles, (b3 - b2) / 1e3, ir.bytes / 1e6);
      }
      printf("\n");
    }
    if (c1 && c2) {
      if (do_cc) run_contact("cc", hints[h], c1, c2, 0, runs, arena, t, tc);
      if (do_v) run_contact("cc-v", hints[h], c1, c2, 1, runs, arena, t, tc);
      if (do_g) run_contact("cc-g", hints[h], c1, c2, 2, runs, arena, t, tc);
      if (do_x) run_intersect(hints[h], c1, c2, runs, arena, t);
      if (do_e) {
        run_energy("cc-e", hints[h], c1, c2, 0, runs, arena, t, tc);
        run_energy("cc-ge", hints[h], c1, c2, 1, runs, arena, t, tc);
      }
      if (do_j) run_jacobian("cc", hints[h], c1, c2, 0, runs, arena, t, tc);
      if (do_j) run_jacobian("cc-g", hints[h], c1, c2, 2, runs, arena, t, tc);
      if (do_j) run_jacobian("cc-v", hints[h], c1, c2, 1, runs, arena, t, tc);
    }
    if (c1 && r1 && do_cr) run_contact("cr", hints[h], c1, r1, 0, runs, arena, t, tc);
    if (c1 && r1 && do_re) run_energy_rigid(hints[h], c1, r1, runs, arena, t, tc);
    if (c1 && c2 && do_red) {
      run_reduce("cc", hints[h], c1, c2, 0, runs, arena);
      run_reduce("cc-g", hints[h], c1, c2, 1, runs, arena);
    }
    if (c1 && r1 && do_red) run_reduce("cr", hints[h], c1, r1, 0, runs, arena);
    if (c1 && c2 && r1 && do_mar) {
      ce_geometry *m1 = margin_build("sphere", build_sphere, NULL, hints[h]), *m2 = margin_sphere(hints[h], hints[h]);
      ce_geometry *mm = margin_build("mesh", margin_mesh, r1, hints[h]), *m0 = margin_mesh(r1, hints[h], 0);
      if (m1 && m2) {
        run_margin("cc", hints[h], c1, c2, m1, m2, 0, runs, arena, t);
        run_margin("cc-g", hints[h], c1, c2, m1, m2, 1, runs, arena, t);
        run_margin("cr", hints[h], c1, r1, m1, r1, 0, runs, arena, t);
      }
      if (mm && m0) run_margin("mesh-cr", hints[h], m0, r1, mm, r1, 0, runs, arena, t);
      ce_geometry_free(m1);
      ce_geometry_free(m2);
      ce_geometry_free(mm);
      ce_geometry_free(m0);
    }
    ce_geometry *rm = do_crm ? rigid_parts(hints[h]) : NULL;
    if (c1 && rm) run_contact("cr-m", hints[h], c1, rm, 0, runs, arena, t, tc);
    ce_geometry_free(rm);
    ce_geometry_free(c1);
    ce_geometry_free(c2);
    ce_geometry_free(r1);
  }
  free(t);
  free(tc);
  ce_arena_destroy(arena);
  return 0;
}
