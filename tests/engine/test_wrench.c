/* test_wrench.c — ce_wrench_compute on hand-built contact surfaces: exact
 * quadrature for linear pressure, polygon vs centroid fan, Hunt–Crossley
 * dissipation, regularised Coulomb friction, spin, Newton's third law. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ce_test_util.h"

#define MAXV 8192
#define MAXF 4096

/* A hand-built surface with fixed storage. */
typedef struct hsurf {
  ce_surface s;
  ce_vec3 v[MAXV];
  double p[MAXV];
  int32_t off[MAXF + 1];
  int32_t fv[MAXV * 2];
  ce_vec3 n[MAXF];
  double area[MAXF];
  ce_vec3 c[MAXF];
  double cp[MAXF];
  ce_vec3 ga[MAXF], gb[MAXF];
  int32_t nfv;
} hsurf;

static hsurf *hs_new(void) {
  hsurf *h = calloc(1, sizeof *h);
  cr_assert(h);
  h->s.vertices = h->v;
  h->s.pressure = h->p;
  h->s.face_offsets = h->off;
  h->s.face_vertices = h->fv;
  h->s.normal = h->n;
  h->s.area = h->area;
  h->s.centroid = h->c;
  h->s.centroid_pressure = h->cp;
  h->s.grad_a = h->ga;
  h->s.grad_b = h->gb;
  return h;
}

/* Add a planar convex polygon (counter-clockwise about n) whose pressure is
 * the linear function p(x) = p0 + g . x. Area, centroid and centroid pressure
 * are computed here (area centroid by triangle decomposition). */
static void hs_poly(hsurf *h, const ce_vec3 *x, int m, ce_vec3 n, double p0, ce_vec3 g) {
  int32_t f = h->s.nf;
  double A = 0;
  ce_vec3 ac = ce_v3(0, 0, 0);
  for (int i = 1; i + 1 < m; i++) {
    double t = 0.5 * ce_dot(ce_cross(ce_sub(x[i], x[0]), ce_sub(x[i + 1], x[0])), n);
    A += t;
    ac = ce_axpy(ac, t / 3, ce_add(x[0], ce_add(x[i], x[i + 1])));
  }
  h->off[f] = h->nfv;
  for (int i = 0; i < m; i++) {
    int32_t id = h->s.nv++;
    h->v[id] = x[i];
    h->p[id] = p0 + ce_dot(g, x[i]);
    h->fv[h->nfv++] = id;
  }
  h->off[f + 1] = h->nfv;
  h->n[f] = n;
  h->area[f] = A;
  h->c[f] = ce_scale(ac, 1 / A);
  h->cp[f] = p0 + ce_dot(g, h->c[f]);
  h->s.nf++;
}

/* Add polygon x as its fan of triangles around the centroid. */
static void hs_fan(hsurf *h, const ce_vec3 *x, int m, ce_vec3 n, double p0, ce_vec3 g) {
  hsurf *tmp = hs_new();
  hs_poly(tmp, x, m, n, p0, g);
  ce_vec3 c = tmp->c[0];
  free(tmp);
  for (int i = 0; i < m; i++) {
    ce_vec3 t[3] = {c, x[i], x[(i + 1) % m]};
    hs_poly(h, t, 3, n, p0, g);
  }
}

static ce_body body_at(ce_vec3 o) {
  ce_body b;
  memset(&b, 0, sizeof b);
  b.X_WB = ce_pose_identity();
  b.X_WB.p = o;
  return b;
}

static void compute(const hsurf *h, const ce_body *a, const ce_body *b, double d, double mu,
                    double vs, ce_result *r, ce_face_forces *ff, ce_arena *ar) {
  memset(r, 0, sizeof *r);
  ce_material m;
  memset(&m, 0, sizeof m);
  m.dissipation = d;
  m.friction = mu;
  ce_face_forces dummy;
  cr_assert_eq(ce_wrench_compute(&h->s, a, b, &m, vs, NULL, ar, r, ff ? ff : &dummy), CE_OK);
}

static double wdiff(ce_wrench x, ce_wrench y) {
  return fmax(ce_norm(ce_sub(x.force, y.force)), ce_norm(ce_sub(x.torque, y.torque)));
}
static double wnorm(ce_wrench x) { return fmax(ce_norm(x.force), ce_norm(x.torque)); }

static const ce_vec3 SQ[4] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}};

/* Unit square z = 0, p = a + b x + c y, normal +z:
 *   F = a + b/2 + c/2,  Int x p = a/2 + b/3 + c/4,  Int y p = a/2 + b/4 + c/3,
 *   torque about the origin = (Int y p, -Int x p, 0),
 *   about the centre (1/2, 1/2, 0) = (c/12, -b/12, 0). */
Test(wrench, unit_square_linear_pressure_exact) {
  const double pa = 1000, pb = 300, pc = -200;
  ce_arena *ar = ce_arena_create(1 << 16);
  for (int rep = 0; rep < 2; rep++) {
    hsurf *h = hs_new();
    if (rep == 0) {
      hs_poly(h, SQ, 4, ce_v3(0, 0, 1), pa, ce_v3(pb, pc, 0));
    } else { /* as two triangles */
      ce_vec3 t1[3] = {SQ[0], SQ[1], SQ[2]}, t2[3] = {SQ[0], SQ[2], SQ[3]};
      hs_poly(h, t1, 3, ce_v3(0, 0, 1), pa, ce_v3(pb, pc, 0));
      hs_poly(h, t2, 3, ce_v3(0, 0, 1), pa, ce_v3(pb, pc, 0));
    }
    ce_body A = body_at(ce_v3(0, 0, 0)), B = body_at(ce_v3(2, -1, 3));
    ce_result r;
    ce_face_forces ff;
    compute(h, &A, &B, 0, 0, 1e-4, &r, &ff, ar);
    double F = pa + pb / 2 + pc / 2, Ix = pa / 2 + pb / 3 + pc / 4, Iy = pa / 2 + pb / 4 + pc / 3;
    cr_assert(fabs(r.area - 1) < 1e-15);
    cr_assert(ce_norm(ce_sub(r.centroid, ce_v3(0.5, 0.5, 0))) < 1e-15);
    cr_assert(ce_norm(ce_sub(r.wrench_a.force, ce_v3(0, 0, F))) < 1e-12 * F, "Fz %.17g vs %.17g",
              r.wrench_a.force.z, F);
    cr_assert(ce_norm(ce_sub(r.wrench_a.torque, ce_v3(Iy, -Ix, 0))) < 1e-12 * F, "tau (%.17g %.17g)",
              r.wrench_a.torque.x, r.wrench_a.torque.y);
    cr_assert(ce_norm(ce_sub(r.wrench_a_centroid.torque, ce_v3(pc / 12, -pb / 12, 0))) < 1e-12 * F);
    /* wrench on B about B's origin: -F at the centre of pressure */
    ce_vec3 cop = ce_v3(Ix / F, Iy / F, 0);
    ce_vec3 tb = ce_cross(ce_sub(cop, B.X_WB.p), ce_v3(0, 0, -F));
    cr_assert(ce_norm(ce_sub(r.wrench_b.force, ce_v3(0, 0, -F))) < 1e-12 * F);
    cr_assert(ce_norm(ce_sub(r.wrench_b.torque, tb)) < 1e-12 * F * 4);
    /* per-face forces for the patch pass and the total patch */
    double fn = 0;
    ce_vec3 fx = ce_v3(0, 0, 0);
    for (int f = 0; f < h->s.nf; f++) {
      fn += ff.fn[f];
      fx = ce_add(fx, ff.fn_x[f]);
    }
    cr_assert(fabs(fn - F) < 1e-12 * F);
    cr_assert(ce_norm(ce_sub(fx, ce_v3(Ix, Iy, 0))) < 1e-12 * F);
    cr_assert(fabs(r.total.normal_force_magnitude - F) < 1e-12 * F);
    cr_assert(ce_norm(ce_sub(r.total.point, cop)) < 1e-12);
    cr_assert_eq(r.total.faces, h->s.nf);
    free(h);
    ce_arena_reset(ar);
  }
  ce_arena_destroy(ar);
}

/* A random convex polygon (points on an ellipse, increasing angles) in a
 * random plane through o; returns its normal. */
static ce_vec3 rand_polygon(uint64_t *st, int m, ce_vec3 o, double rad, ce_vec3 *x) {
  ce_quat q = ce_test_rand_quat(st);
  ce_vec3 e1 = ce_quat_rotate(q, ce_v3(1, 0, 0)), e2 = ce_quat_rotate(q, ce_v3(0, 1, 0));
  double ang[16];
  for (int i = 0; i < m; i++) ang[i] = 2 * M_PI * (i + 0.8 * ce_test_rand(st)) / m;
  double ax = rad * (0.5 + ce_test_rand(st)), ay = rad * (0.5 + ce_test_rand(st));
  for (int i = 0; i < m; i++)
    x[i] = ce_add(o, ce_add(ce_scale(e1, ax * cos(ang[i])), ce_scale(e2, ay * sin(ang[i]))));
  return ce_cross(e1, e2);
}

static void rand_twist(uint64_t *st, ce_spatial_velocity *V, double sw, double sv) {
  V->w = ce_v3(sw * (2 * ce_test_rand(st) - 1), sw * (2 * ce_test_rand(st) - 1), sw * (2 * ce_test_rand(st) - 1));
  V->v = ce_v3(sv * (2 * ce_test_rand(st) - 1), sv * (2 * ce_test_rand(st) - 1), sv * (2 * ce_test_rand(st) - 1));
}

/* Without dissipation and friction the quadrature is exact for linear
 * pressure, so a polygon and its centroid fan give the same wrench. With
 * dissipation (traction kept positive) the normal traction p (1 - d vn) is
 * quadratic: the force is still exact in both, the moment (cubic) only close;
 * with friction both are close (the fan refines the quadrature). */
Test(wrench, polygon_equals_centroid_fan) {
  uint64_t st = 99;
  ce_arena *ar = ce_arena_create(1 << 16);
  for (int trial = 0; trial < 50; trial++) {
    hsurf *hp = hs_new(), *ht = hs_new();
    for (int k = 0; k < 3; k++) {
      ce_vec3 x[8];
      int m = 3 + (int)(ce_test_rand(&st) * 6);
      ce_vec3 o = ce_v3(0.1 * ce_test_rand(&st), 0.1 * ce_test_rand(&st), 0.1 * ce_test_rand(&st));
      ce_vec3 n = rand_polygon(&st, m, o, 0.02, x);
      ce_vec3 g = ce_scale(ce_v3(ce_test_rand(&st) - .5, ce_test_rand(&st) - .5, ce_test_rand(&st) - .5), 1e6);
      double p0 = 5e4 - ce_dot(g, o);
      hs_poly(hp, x, m, n, p0, g);
      hs_fan(ht, x, m, n, p0, g);
    }
    ce_body A = body_at(ce_v3(0.05, 0.2, -0.1)), B = body_at(ce_v3(-0.3, 0.1, 0.2));
    /* |v| <= 0.5 + 2*0.5 so d vn < 1 with d = 0.5: the traction stays positive */
    rand_twist(&st, &A.V_WB, 1, 0.25);
    rand_twist(&st, &B.V_WB, 1, 0.25);
    double dm[3][2] = {{0, 0}, {0.5, 0}, {0.5, 0.6}};
    for (int k = 0; k < 3; k++) {
      ce_result rp, rt;
      compute(hp, &A, &B, dm[k][0], dm[k][1], 1e-3, &rp, NULL, ar);
      compute(ht, &A, &B, dm[k][0], dm[k][1], 1e-3, &rt, NULL, ar);
      double fs = ce_norm(rp.wrench_a.force), ts = wnorm(rp.wrench_a_centroid);
      cr_assert(fs > 0);
      double ef = ce_norm(ce_sub(rp.wrench_a.force, rt.wrench_a.force));
      double et = ce_norm(ce_sub(rp.wrench_a_centroid.torque, rt.wrench_a_centroid.torque));
      if (k == 0) {
        cr_assert(ef <= 1e-12 * fs && et <= 1e-12 * ts, "trial %d: %.3g %.3g", trial, ef / fs, et / ts);
        cr_assert(wdiff(rp.wrench_a, rt.wrench_a) <= 1e-12 * wnorm(rp.wrench_a));
        cr_assert(wdiff(rp.wrench_b, rt.wrench_b) <= 1e-12 * wnorm(rp.wrench_b));
      } else if (k == 1) {
        cr_assert(ef <= 1e-12 * fs, "trial %d: force %.3g", trial, ef / fs);
        cr_assert(et <= 1e-3 * ts, "trial %d: torque %.3g", trial, et / ts);
      } else {
        cr_assert(ef <= 1e-2 * fs && et <= 1e-2 * ts, "trial %d: %.3g %.3g", trial, ef / fs, et / ts);
      }
      cr_assert(fabs(rp.area - rt.area) <= 1e-14 * rp.area);
    }
    free(hp);
    free(ht);
    ce_arena_reset(ar);
  }
  ce_arena_destroy(ar);
}

/* The closed forms used without relative motion (vertex-0 fan, signed
 * areas) against the quadrature, which is exact for a linear pressure: a
 * sliding velocity in the face's plane (vn = 0, so tn = p) with dissipation
 * and no friction takes the quadrature path with the same tractions. The
 * same polygon listed clockwise about its normal gives the same wrench. */
Test(wrench, closed_forms_match_quadrature_and_ignore_orientation) {
  uint64_t st = 7;
  ce_arena *ar = ce_arena_create(1 << 16);
  for (int trial = 0; trial < 40; trial++) {
    ce_vec3 x[8], y[8];
    int m = 3 + (int)(ce_test_rand(&st) * 6);
    ce_vec3 o = ce_v3(0.1 * ce_test_rand(&st), 0.1 * ce_test_rand(&st), 0.1 * ce_test_rand(&st));
    ce_vec3 n = rand_polygon(&st, m, o, 0.02, x);
    for (int i = 0; i < m; i++) y[i] = x[m - 1 - i];
    ce_vec3 g = ce_scale(ce_v3(ce_test_rand(&st) - .5, ce_test_rand(&st) - .5, ce_test_rand(&st) - .5), 1e6);
    double p0 = 5e4 - ce_dot(g, o);
    hsurf *h = hs_new(), *hr = hs_new();
    hs_poly(h, x, m, n, p0, g);
    hs_poly(hr, y, m, n, p0, g);
    hr->area[0] = h->area[0]; /* hs_poly's signed area is negative for y */
    ce_body A = body_at(ce_v3(0.05, 0.2, -0.1)), B = body_at(ce_v3(-0.3, 0.1, 0.2));
    ce_result r0, rr, rq;
    ce_face_forces f0, fq;
    compute(h, &A, &B, 0, 0, 1e-3, &r0, &f0, ar);
    compute(hr, &A, &B, 0, 0, 1e-3, &rr, NULL, ar);
    /* slide A in the face's plane */
    ce_vec3 t = ce_normalize(ce_cross(n, ce_v3(ce_test_rand(&st), ce_test_rand(&st), ce_test_rand(&st))));
    A.V_WB.v = ce_scale(t, 0.3);
    compute(h, &A, &B, 0.5, 0, 1e-3, &rq, &fq, ar);
    double sc = wnorm(r0.wrench_a);
    cr_assert(sc > 0);
    cr_assert(wdiff(r0.wrench_a, rr.wrench_a) <= 1e-13 * sc, "trial %d: reversed %.3g", trial,
              wdiff(r0.wrench_a, rr.wrench_a) / sc);
    cr_assert(wdiff(r0.wrench_a, rq.wrench_a) <= 1e-12 * sc, "trial %d: quadrature %.3g", trial,
              wdiff(r0.wrench_a, rq.wrench_a) / sc);
    cr_assert(wdiff(r0.wrench_b, rq.wrench_b) <= 1e-12 * wnorm(r0.wrench_b));
    cr_assert(fabs(f0.fn[0] - fq.fn[0]) <= 1e-12 * fabs(f0.fn[0]));
    cr_assert(ce_norm(ce_sub(f0.fn_x[0], fq.fn_x[0])) <= 1e-12 * ce_norm(f0.fn_x[0]));
    free(h);
    free(hr);
    ce_arena_reset(ar);
  }
  ce_arena_destroy(ar);
}

/* A vertex lying on a straight edge (as clipping leaves where a clip plane
 * contains an edge) or a near-duplicate vertex does not change the polygon,
 * so it must not change the wrench, even with dissipation and friction
 * (which the quadrature does not integrate exactly). */
Test(wrench, redundant_vertices_do_not_change_the_wrench) {
  uint64_t st = 11;
  ce_arena *ar = ce_arena_create(1 << 16);
  for (int trial = 0; trial < 40; trial++) {
    ce_vec3 x[8], y[12];
    int m = 3 + (int)(ce_test_rand(&st) * 5);
    ce_vec3 n = rand_polygon(&st, m, ce_v3(0.02, -0.01, 0.03), 0.01, x);
    ce_vec3 g = ce_scale(ce_v3(ce_test_rand(&st) - .5, ce_test_rand(&st) - .5, ce_test_rand(&st) - .5), 1e6);
    double p0 = 3e4 - ce_dot(g, ce_v3(0.02, -0.01, 0.03));
    /* y: x with a point inserted on edge 0 (at a random fraction) and a
     * near-duplicate (1e-16 m away, a few ulps) of vertex 2 */
    int k = 0;
    double t = 0.05 + 0.9 * ce_test_rand(&st);
    for (int i = 0; i < m; i++) {
      y[k++] = x[i];
      if (i == 0) y[k++] = ce_axpy(x[0], t, ce_sub(x[1], x[0]));
      if (i == 2) y[k++] = ce_axpy(x[2], 1e-16, ce_normalize(ce_sub(x[(i + 1) % m], x[2])));
    }
    hsurf *h1 = hs_new(), *h2 = hs_new();
    hs_poly(h1, x, m, n, p0, g);
    hs_poly(h2, y, k, n, p0, g);
    h2->c[0] = h1->c[0]; /* same polygon, same centroid */
    h2->cp[0] = h1->cp[0];
    ce_body A = body_at(ce_v3(0.05, 0.2, -0.1)), B = body_at(ce_v3(-0.3, 0.1, 0.2));
    rand_twist(&st, &A.V_WB, 3, 0.2);
    rand_twist(&st, &B.V_WB, 3, 0.2);
    ce_result r1, r2;
    compute(h1, &A, &B, 0.5, 0.6, 1e-3, &r1, NULL, ar);
    compute(h2, &A, &B, 0.5, 0.6, 1e-3, &r2, NULL, ar);
    double sc = ce_norm(r1.wrench_a_centroid.force) * 0.01 + ce_norm(r1.wrench_a_centroid.torque);
    double e = ce_norm(ce_sub(r1.wrench_a_centroid.force, r2.wrench_a_centroid.force)) * 0.01 +
               ce_norm(ce_sub(r1.wrench_a_centroid.torque, r2.wrench_a_centroid.torque));
    cr_assert(e <= 1e-13 * sc, "trial %d: %.3g", trial, e / sc);
    free(h1);
    free(h2);
    ce_arena_reset(ar);
  }
  ce_arena_destroy(ar);
}

/* Approach along the normal at |vn|: every traction scales by (1 + d |vn|);
 * separating at vn: by (1 - d vn), and to zero once d vn >= 1. */
Test(wrench, hunt_crossley_scaling) {
  ce_arena *ar = ce_arena_create(1 << 16);
  hsurf *h = hs_new();
  hs_poly(h, SQ, 4, ce_v3(0, 0, 1), 2000, ce_v3(500, -300, 0));
  ce_body A = body_at(ce_v3(0, 0, 0.01)), B = body_at(ce_v3(0, 0, -1));
  ce_result r0, r;
  const double d = 0.8;
  compute(h, &A, &B, d, 0, 1e-4, &r0, NULL, ar);
  double F0 = r0.wrench_a.force.z;
  cr_assert(fabs(F0 - (2000 + 250 - 150)) < 1e-9);
  double speeds[] = {-0.5, -0.1, 0.2, 0.9, 1.25, 3.0};
  for (int i = 0; i < 6; i++) {
    double vn = speeds[i];
    A.V_WB.v = ce_v3(0, 0, vn / 2);
    B.V_WB.v = ce_v3(0, 0, -vn / 2);
    compute(h, &A, &B, d, 0, 1e-4, &r, NULL, ar);
    double s = fmax(0, 1 - d * vn);
    cr_assert(fabs(r.wrench_a.force.z - s * F0) <= 1e-12 * F0, "vn %g: %.17g vs %.17g", vn,
              r.wrench_a.force.z, s * F0);
    cr_assert(ce_norm(ce_sub(r.wrench_a.torque, ce_scale(r0.wrench_a.torque, s))) <= 1e-12 * F0);
    cr_assert(fabs(r.wrench_a.force.x) + fabs(r.wrench_a.force.y) == 0);
    if (d * vn >= 1) cr_assert(wnorm(r.wrench_a) == 0 && wnorm(r.wrench_b) == 0);
  }
  free(h);
  ce_arena_destroy(ar);
}

/* Uniform sliding at speed v along x: friction = mu (2/pi) atan(v/vs) Fn
 * against the slip (on A, which moves +x relative to B: along -x). */
Test(wrench, sliding_friction_regularised_coulomb) {
  ce_arena *ar = ce_arena_create(1 << 16);
  hsurf *h = hs_new();
  hs_poly(h, SQ, 4, ce_v3(0, 0, 1), 3000, ce_v3(100, 200, 0));
  const double mu = 0.4, vs = 1e-4;
  double Fn = 3000 + 50 + 100;
  double speeds[] = {0, 1e-12, 1e-8, 3e-6, 1e-4, 2.5e-4, 0.01, 3};
  for (int i = 0; i < 8; i++) {
    double v = speeds[i];
    ce_body A = body_at(ce_v3(0.3, 0.1, 0.2)), B = body_at(ce_v3(0, 0, -1));
    /* split the slip between both bodies, in a direction in the plane */
    ce_vec3 dir = ce_normalize(ce_v3(3, -4, 0));
    A.V_WB.v = ce_scale(dir, 0.25 * v);
    B.V_WB.v = ce_scale(dir, -0.75 * v);
    ce_result r;
    compute(h, &A, &B, 0, mu, vs, &r, NULL, ar);
    double ft = mu * (2 / M_PI) * atan(v / vs) * Fn;
    ce_vec3 expect = ce_axpy(ce_v3(0, 0, Fn), -ft, dir);
    cr_assert(ce_vec3_isfinite(r.wrench_a.force) && ce_vec3_isfinite(r.wrench_a.torque));
    cr_assert(ce_norm(ce_sub(r.wrench_a.force, expect)) <= 1e-12 * Fn, "v %g: |err| %.3g", v,
              ce_norm(ce_sub(r.wrench_a.force, expect)));
    /* Uniform slip: the friction traction is proportional to the pressure,
     * so it acts at the centre of pressure c (Int x p / F, in the plane z=0);
     * the torque about A's origin is (c - o_A) x F. */
    ce_vec3 cop = ce_v3((1500 + 100.0 / 3 + 50) / Fn, (1500 + 25 + 200.0 / 3) / Fn, 0);
    ce_vec3 tau = ce_cross(ce_sub(cop, A.X_WB.p), expect);
    cr_assert(ce_norm(ce_sub(r.wrench_a.torque, tau)) <= 1e-12 * Fn);
  }
  /* small-slip behaviour is linear: friction / v -> mu (2/pi) Fn / vs */
  ce_body A = body_at(ce_v3(0, 0, 0)), B = body_at(ce_v3(0, 0, 0));
  A.V_WB.v = ce_v3(1e-10, 0, 0);
  ce_result r;
  compute(h, &A, &B, 0, mu, vs, &r, NULL, ar);
  cr_assert(fabs(-r.wrench_a.force.x / 1e-10 - mu * (2 / M_PI) * Fn / vs) <= 1e-9 * mu * Fn / vs);
  free(h);
  ce_arena_destroy(ar);
}

/* Pure spin about the normal through the centre of a uniformly pressed
 * square: friction cancels (zero net force) but resists the spin with a
 * torque -mu p Int |r| dA (atan saturated). Int |r| dA over the unit square
 * about its centre = (sqrt 2 + asinh 1)/6 = 0.382597...; the 3-point rule on
 * one fan (4 triangles, points at distances sqrt(2)/4 and 1/2) reads
 * (sqrt(2)/2 + 1/2)/3 = 0.40237, a 40x40 grid of squares converges to the integral. */
Test(wrench, spin_gives_torque_not_force) {
  ce_arena *ar = ce_arena_create(1 << 20);
  const double p = 1e4, mu = 0.5, w = 20, vs = 1e-4;
  const double exact = (sqrt(2.0) + asinh(1.0)) / 6;
  int grids[] = {1, 40};
  for (int gi = 0; gi < 2; gi++) {
    int N = grids[gi];
    hsurf *h = hs_new();
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
        double x0 = (double)i / N, y0 = (double)j / N, e = 1.0 / N;
        ce_vec3 q[4] = {{x0, y0, 0}, {x0 + e, y0, 0}, {x0 + e, y0 + e, 0}, {x0, y0 + e, 0}};
        hs_poly(h, q, 4, ce_v3(0, 0, 1), p, ce_v3(0, 0, 0));
      }
    ce_body A = body_at(ce_v3(0.5, 0.5, 0.3)), B = body_at(ce_v3(0, 0, -1));
    A.V_WB.w = ce_v3(0, 0, w);
    ce_result r;
    compute(h, &A, &B, 0, mu, vs, &r, NULL, ar);
    cr_assert(fabs(r.wrench_a.force.x) < 1e-10 * p && fabs(r.wrench_a.force.y) < 1e-10 * p,
              "net friction (%.3g, %.3g)", r.wrench_a.force.x, r.wrench_a.force.y);
    cr_assert(fabs(r.wrench_a.force.z - p) < 1e-12 * p);
    double tz = r.wrench_a_centroid.torque.z;
    cr_assert(tz < 0, "spin torque opposes the spin");
    if (N == 1)
      cr_assert(fabs(-tz / (mu * p) - 0.40237) < 1e-4, "%.6f", -tz / (mu * p));
    else
      cr_assert(fabs(-tz / (mu * p) - exact) < 1e-3 * exact, "%.6f vs %.6f", -tz / (mu * p), exact);
    /* A's origin is on the spin axis: same torque about it */
    cr_assert(fabs(r.wrench_a.torque.z - tz) < 1e-12 * p);
    free(h);
    ce_arena_reset(ar);
  }
  ce_arena_destroy(ar);
}

/* Newton's third law: wrench on A plus wrench on B about any one point is
 * zero, for random surfaces, velocities, dissipation and friction. */
Test(wrench, newton_third_law) {
  uint64_t st = 5;
  ce_arena *ar = ce_arena_create(1 << 16);
  for (int trial = 0; trial < 100; trial++) {
    hsurf *h = hs_new();
    for (int k = 0; k < 6; k++) {
      ce_vec3 x[8];
      int m = 3 + (int)(ce_test_rand(&st) * 5);
      ce_vec3 o = ce_v3(ce_test_rand(&st), ce_test_rand(&st), ce_test_rand(&st));
      ce_vec3 n = rand_polygon(&st, m, o, 0.1, x);
      hs_poly(h, x, m, n, 1e5, ce_scale(n, 1e3 * ce_test_rand(&st)));
    }
    ce_body A = body_at(ce_v3(3 * ce_test_rand(&st), -2, 1)), B = body_at(ce_v3(-1, 4 * ce_test_rand(&st), 2));
    rand_twist(&st, &A.V_WB, 1, 0.3);
    rand_twist(&st, &B.V_WB, 1, 0.3);
    ce_result r;
    compute(h, &A, &B, 2 * ce_test_rand(&st), ce_test_rand(&st), 1e-3, &r, NULL, ar);
    ce_vec3 Q = ce_v3(0.7, -0.2, 0.4);
    ce_wrench s = ce_wrench_add(ce_wrench_shift(r.wrench_a, A.X_WB.p, Q), ce_wrench_shift(r.wrench_b, B.X_WB.p, Q));
    double scale = wnorm(r.wrench_a) + wnorm(r.wrench_b);
    cr_assert(scale > 0);
    cr_assert(wnorm(s) <= 1e-12 * scale, "trial %d: %.3g", trial, wnorm(s) / scale);
    /* the centroid wrench shifted to A's origin is wrench_a */
    cr_assert(wdiff(ce_wrench_shift(r.wrench_a_centroid, r.centroid, A.X_WB.p), r.wrench_a) <= 1e-12 * scale);
    free(h);
    ce_arena_reset(ar);
  }
  ce_arena_destroy(ar);
}

Test(wrench, empty_surface_gives_zero) {
  ce_arena *ar = ce_arena_create(4096);
  hsurf *h = hs_new();
  ce_body A = body_at(ce_v3(1, 2, 3)), B = body_at(ce_v3(0, 0, 0));
  A.V_WB.v = ce_v3(1, 0, 0);
  ce_result r;
  ce_face_forces ff;
  compute(h, &A, &B, 1, 1, 1e-4, &r, &ff, ar);
  cr_assert(wnorm(r.wrench_a) == 0 && wnorm(r.wrench_b) == 0 && wnorm(r.wrench_a_centroid) == 0);
  cr_assert(r.area == 0 && r.total.faces == 0 && r.total.normal_force_magnitude == 0);
  free(h);
  ce_arena_destroy(ar);
}

/* Friction enabled but zero slip everywhere (rigidly co-moving bodies with a
 * common spin): finite, and the friction vanishes exactly. */
Test(wrench, zero_slip_is_finite) {
  ce_arena *ar = ce_arena_create(4096);
  hsurf *h = hs_new();
  hs_poly(h, SQ, 4, ce_v3(0, 0, 1), 1000, ce_v3(0, 0, 0));
  ce_body A = body_at(ce_v3(0.2, 0, 0)), B = body_at(ce_v3(0.2, 0, 0));
  A.V_WB.w = B.V_WB.w = ce_v3(0, 0, 3);
  A.V_WB.v = B.V_WB.v = ce_v3(1, 2, 0);
  ce_result r;
  compute(h, &A, &B, 1, 0.9, 1e-4, &r, NULL, ar);
  cr_assert(ce_vec3_isfinite(r.wrench_a.force) && ce_vec3_isfinite(r.wrench_a.torque));
  cr_assert(r.wrench_a.force.x == 0 && r.wrench_a.force.y == 0);
  cr_assert(fabs(r.wrench_a.force.z - 1000) < 1e-12 * 1000);
  free(h);
  ce_arena_destroy(ar);
}

/* Reference for the kinematic path: the rule as first written, point by
 * point: every face fanned around its centroid, each triangle integrated at
 * its three edge midpoints (weight area/3) with the relative velocity
 * vC + w x r evaluated at the point and libm's atan. Force and moment
 * about C on A. */
static ce_wrench reference_quadrature(const hsurf *h, const ce_body *a, const ce_body *b, double d, double mu,
                                      double vs, ce_vec3 C) {
  ce_vec3 vC = ce_sub(ce_velocity_at(&a->V_WB, a->X_WB.p, C), ce_velocity_at(&b->V_WB, b->X_WB.p, C));
  ce_vec3 w = ce_sub(a->V_WB.w, b->V_WB.w);
  ce_wrench out = {{0, 0, 0}, {0, 0, 0}};
  for (int32_t f = 0; f < h->s.nf; f++) {
    ce_vec3 n = h->n[f];
    int32_t o = h->off[f], m = h->off[f + 1] - o;
    for (int32_t i = 0; i < m; i++) {
      int32_t ia = h->fv[o + i], ib = h->fv[o + (i + 1) % m];
      ce_vec3 t[3] = {ce_sub(h->c[f], C), ce_sub(h->v[ia], C), ce_sub(h->v[ib], C)};
      double tp[3] = {h->cp[f], h->p[ia], h->p[ib]};
      double area = 0.5 * ce_norm(ce_cross(ce_sub(t[1], t[0]), ce_sub(t[2], t[0])));
      for (int e = 0; e < 3; e++) {
        ce_vec3 r = ce_scale(ce_add(t[e], t[(e + 1) % 3]), 0.5);
        double p = 0.5 * (tp[e] + tp[(e + 1) % 3]);
        ce_vec3 v = ce_add(vC, ce_cross(w, r));
        double vn = ce_dot(v, n);
        double tn = p * fmax(0.0, 1 - d * vn);
        ce_vec3 vt = ce_axpy(v, -vn, n);
        double sl = ce_norm(vt);
        ce_vec3 tr = ce_scale(n, tn);
        if (sl > 0) tr = ce_axpy(tr, -mu * (2 / M_PI) * atan(sl / vs) * tn / sl, vt);
        tr = ce_scale(tr, area / 3);
        out.force = ce_add(out.force, tr);
        out.torque = ce_add(out.torque, ce_cross(r, tr));
      }
    }
  }
  return out;
}

/* The kinematic path (shared spoke midpoints, per-vertex velocities,
 * series atan for fast slip) is the same quadrature as the reference up to
 * rounding, on random sliding scenes: slip from below the stiction
 * tolerance to 1000 of it, spins from none to fast, Hunt–Crossley clamps
 * active on parts of faces. Force error relative to |F|, moment error
 * relative to |tau| + |F| L (L the surface's size about C). */
Test(wrench, kinematic_path_matches_reference_quadrature) {
  uint64_t st = 2024;
  ce_arena *ar = ce_arena_create(1 << 16);
  double worst_f = 0, worst_t = 0;
  for (int trial = 0; trial < 200; trial++) {
    hsurf *h = hs_new();
    int nfaces = 1 + (int)(ce_test_rand(&st) * 8);
    for (int k = 0; k < nfaces; k++) {
      ce_vec3 x[8];
      int m = 3 + (int)(ce_test_rand(&st) * 6);
      ce_vec3 o = ce_v3(0.05 * ce_test_rand(&st), 0.05 * ce_test_rand(&st), 0.05 * ce_test_rand(&st));
      ce_vec3 n = rand_polygon(&st, m, o, 0.003 + 0.01 * ce_test_rand(&st), x);
      ce_vec3 g = ce_scale(ce_v3(ce_test_rand(&st) - .5, ce_test_rand(&st) - .5, ce_test_rand(&st) - .5), 1e6);
      hs_poly(h, x, m, n, 5e4 - ce_dot(g, o), g);
    }
    ce_body A = body_at(ce_v3(0.02, -0.1, 0.05)), B = body_at(ce_v3(-0.2, 0.1, 0.1));
    const double vs = 1e-4;
    double sv = vs * pow(10, -1 + 4.5 * ce_test_rand(&st)); /* 1e-5 .. 3e-1 m/s */
    double sw = trial % 4 == 0 ? 0 : pow(10, -3 + 4 * ce_test_rand(&st)); /* none, 1e-3 .. 10 rad/s */
    rand_twist(&st, &A.V_WB, sw, sv);
    rand_twist(&st, &B.V_WB, sw, sv);
    double d = trial % 3 == 0 ? 0 : 3 * ce_test_rand(&st) / fmax(sv, 1e-3); /* clamps on some faces */
    double mu = trial % 5 == 0 ? 0 : ce_test_rand(&st);
    ce_result r;
    compute(h, &A, &B, d, mu, vs, &r, NULL, ar);
    ce_wrench ref = reference_quadrature(h, &A, &B, d, mu, vs, r.centroid);
    double L = 0;
    for (int32_t i = 0; i < h->s.nv; i++) L = fmax(L, ce_norm(ce_sub(h->v[i], r.centroid)));
    double fs = ce_norm(ref.force), ts = ce_norm(ref.torque) + fs * L;
    if (!(fs > 0)) {
      cr_assert(wnorm(r.wrench_a_centroid) == 0);
    } else {
      double ef = ce_norm(ce_sub(r.wrench_a_centroid.force, ref.force)) / fs;
      double et = ce_norm(ce_sub(r.wrench_a_centroid.torque, ref.torque)) / ts;
      worst_f = fmax(worst_f, ef);
      worst_t = fmax(worst_t, et);
      cr_assert(ef <= 1e-12 && et <= 1e-12, "trial %d: force %.3g torque %.3g", trial, ef, et);
    }
    free(h);
    ce_arena_reset(ar);
  }
  cr_log_info("kinematic path vs reference quadrature: max relative force %.3g, torque %.3g", worst_f, worst_t);
  ce_arena_destroy(ar);
}
