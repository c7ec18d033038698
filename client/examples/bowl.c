/* bowl — the DEM terrain paper's validation as a remote simulator: a
 * compliant ball bounces in the bowl z = 0.2 x^2 + 0.2 y^2, once against
 * the bowl sampled as a digital elevation map at spacing 1 m (a heightField terrain,
 * reconstructed by contactd from smooth local patches) and once against an
 * analytic reference (the same bowl as a fine rigid triangle mesh, spacing
 * --fine). The ball starts with some rotation and is disturbed by a
 * velocity impulse at t = 2.2 s so that it bounces around the whole bowl.
 * Prints the largest difference of the ball's position between the two
 * simulations (that paper's Fig. 5b: "only minor numerical differences").
 *
 * Ball: radius 0.25 m, 1 kg (solid sphere inertia), modulus 1e5 Pa
 * (static depth ~6 mm), Hunt-Crossley dissipation 0.5 s/m, friction 0.3,
 * resolution hint 0.05 m. Bowl: x, y in [-4, 4] m. Integrator: symplectic
 * Euler, dt = 1 ms (the contact's natural frequency ~60 rad/s), attitude by
 * the exact rotation of each step. Both runs use identical ball meshes,
 * initial states and steps: differences come from the surfaces only.
 *
 * Usage: bowl [--addr A] [--time T] [--fine H] [--check TOL] [--trace]
 * Exit status 1 if --check is given and the largest position difference
 * exceeds TOL (m). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_client.h"

static const double R = 0.25, MASS = 1.0, G = 9.81, E = 1e5, HINT = 0.05, L = 4.0, T_KICK = 2.2;

static double bowl_z(double x, double y) { return 0.2 * x * x + 0.2 * y * y; }

static int reg(cc_client *c, Contactd__V1__RegisterGeometry *rg, char id[CC_ID_MAX], const char *what) {
  cc_error err;
  Contactd__V1__RegisterReply *r = NULL;
  if (cc_register(c, rg, &r, &err)) {
    fprintf(stderr, "bowl: register %s: %s\n", what, err.message);
    return -1;
  }
  snprintf(id, CC_ID_MAX, "%s", r->geometry_id);
  cc_free(r);
  return 0;
}

static int reg_ball(cc_client *c, char id[CC_ID_MAX]) {
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  Contactd__V1__Sphere s = CONTACTD__V1__SPHERE__INIT;
  Contactd__V1__Material m = CONTACTD__V1__MATERIAL__INIT;
  s.radius = R;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  rg.sphere = &s;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rg.modulus = E;
  rg.resolution_hint = HINT;
  m.dissipation = 0.5;
  m.friction = 0.3;
  rg.material = &m;
  rg.name = "ball";
  return reg(c, &rg, id, "ball");
}

/* The DEM: samples at spacing 1 on [-L, L]^2. */
static int reg_dem(cc_client *c, char id[CC_ID_MAX]) {
  int n = (int)(2 * L) + 1;
  double *h = malloc((size_t)(n * n) * sizeof *h);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) h[j * n + i] = bowl_z(-L + i, -L + j);
  Contactd__V1__HeightField hf = CONTACTD__V1__HEIGHT_FIELD__INIT;
  Contactd__V1__Vec3 o = CONTACTD__V1__VEC3__INIT;
  o.x = o.y = -L;
  hf.heights = h;
  hf.n_heights = (size_t)(n * n);
  hf.nx = hf.ny = n;
  hf.dx = hf.dy = 1;
  hf.origin = &o;
  hf.continuity = CONTACTD__V1__CONTINUITY__CONTINUITY_C1;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD;
  rg.height_field = &hf;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rg.name = "bowl DEM";
  int rc = reg(c, &rg, id, "DEM");
  free(h);
  return rc;
}

/* The analytic reference: the bowl triangulated at spacing hf (open, upward). */
static int reg_mesh(cc_client *c, double hf, char id[CC_ID_MAX]) {
  int n = (int)ceil(2 * L / hf) + 1;
  double h = 2 * L / (n - 1);
  double *v = malloc((size_t)(3 * n * n) * sizeof *v);
  int32_t *t = malloc((size_t)(6 * (n - 1) * (n - 1)) * sizeof *t);
  for (int j = 0; j < n; j++)
    for (int i = 0; i < n; i++) {
      double *p = v + 3 * (j * n + i);
      p[0] = -L + i * h;
      p[1] = -L + j * h;
      p[2] = bowl_z(p[0], p[1]);
    }
  size_t k = 0;
  for (int j = 0; j + 1 < n; j++)
    for (int i = 0; i + 1 < n; i++) {
      int32_t a = j * n + i, b = a + 1, cc = a + n + 1, d = a + n;
      int32_t tri[6] = {a, b, cc, a, cc, d};
      memcpy(t + k, tri, sizeof tri);
      k += 6;
    }
  Contactd__V1__TriMesh m = CONTACTD__V1__TRI_MESH__INIT;
  m.vertices = v;
  m.n_vertices = (size_t)(3 * n * n);
  m.triangles = t;
  m.n_triangles = k;
  m.allow_open = 1;
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH;
  rg.tri_mesh = &m;
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  rg.name = "bowl mesh";
  int rc = reg(c, &rg, id, "analytic bowl mesh");
  free(v);
  free(t);
  return rc;
}

typedef struct state {
  double p[3], v[3], w[3], q[4]; /* q = w, x, y, z */
} state;

/* q <- exp(w dt / 2) q (world angular velocity). */
static void rotate(double q[4], const double w[3], double dt) {
  double a = sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2]) * dt;
  if (a == 0) return;
  double s = sin(a / 2) / (a / dt), r[4] = {cos(a / 2), w[0] * s, w[1] * s, w[2] * s};
  double o[4] = {r[0] * q[0] - r[1] * q[1] - r[2] * q[2] - r[3] * q[3],
                 r[0] * q[1] + r[1] * q[0] + r[2] * q[3] - r[3] * q[2],
                 r[0] * q[2] - r[1] * q[3] + r[2] * q[0] + r[3] * q[1],
                 r[0] * q[3] + r[1] * q[2] - r[2] * q[1] + r[3] * q[0]};
  double nq = sqrt(o[0] * o[0] + o[1] * o[1] + o[2] * o[2] + o[3] * o[3]);
  for (int i = 0; i < 4; i++) q[i] = o[i] / nq;
}

static const char *g_publish = ""; /* --publish NAME: QueryOptions.publish */

/* One step against `bowl`; returns 0 or -1. */
static int step(cc_client *c, const char *ball, const char *bowl, state *s, double dt, int *contact) {
  cc_body b[2];
  memset(b, 0, sizeof b);
  b[0].id = 1;
  b[0].geometry_id = ball;
  memcpy(b[0].p, s->p, sizeof s->p);
  memcpy(b[0].q, s->q, sizeof s->q);
  memcpy(b[0].v, s->v, sizeof s->v);
  memcpy(b[0].w, s->w, sizeof s->w);
  b[1].id = 2;
  b[1].geometry_id = bowl;
  b[1].q[0] = 1;
  uint32_t pair[1][2] = {{1, 2}};
  Contactd__V1__ContactReply *rep = NULL;
  cc_error err;
  Contactd__V1__QueryOptions qo = CONTACTD__V1__QUERY_OPTIONS__INIT;
  qo.publish = (char *)g_publish; /* --publish: the viewer shows the run */
  if (cc_query_bodies(c, b, 2, pair, 1, g_publish[0] ? &qo : NULL, &rep, &err)) {
    fprintf(stderr, "bowl: query: %s\n", err.message);
    return -1;
  }
  double f[3] = {0, 0, 0}, tq[3] = {0, 0, 0};
  const Contactd__V1__PairResult *p = rep->results[0];
  if (p->wrench_a && p->wrench_a->force) {
    f[0] = p->wrench_a->force->x, f[1] = p->wrench_a->force->y, f[2] = p->wrench_a->force->z;
    if (p->wrench_a->torque)
      tq[0] = p->wrench_a->torque->x, tq[1] = p->wrench_a->torque->y, tq[2] = p->wrench_a->torque->z;
  }
  *contact = p->status == CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE;
  cc_free(rep);
  double I = 0.4 * MASS * R * R;
  f[2] -= MASS * G;
  for (int i = 0; i < 3; i++) {
    s->v[i] += dt * f[i] / MASS;
    s->w[i] += dt * tq[i] / I;
    s->p[i] += dt * s->v[i];
  }
  rotate(s->q, s->w, dt);
  return 0;
}

int main(int argc, char **argv) {
  const char *addr = NULL; /* cc_connect: $CONTACTD_ADDR, else the default */
  double T = 25, fine = 0.05, check = -1;
  int trace = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--addr") && i + 1 < argc) addr = argv[++i];
    else if (!strcmp(argv[i], "--time") && i + 1 < argc) T = atof(argv[++i]);
    else if (!strcmp(argv[i], "--fine") && i + 1 < argc) fine = atof(argv[++i]);
    else if (!strcmp(argv[i], "--check") && i + 1 < argc) check = atof(argv[++i]);
    else if (!strcmp(argv[i], "--trace")) trace = 1;
    else if (!strcmp(argv[i], "--publish") && i + 1 < argc) g_publish = argv[++i];
    else {
      fprintf(stderr, "usage: bowl [--addr A] [--time T] [--fine H] [--check TOL] [--trace] [--publish NAME]\n");
      return 2;
    }
  }
  cc_client *c;
  cc_error err;
  cc_options opt;
  cc_options_default(&opt);
  opt.timeout_ms = 120000;
  opt.retry_queries = 1; /* through a server restart: a lost query is sent once more */
  if (cc_connect(addr, &opt, &c, &err)) {
    fprintf(stderr, "bowl: %s\n", err.message);
    return 1;
  }
  char ball[CC_ID_MAX], dem[CC_ID_MAX], mesh[CC_ID_MAX];
  if (reg_ball(c, ball) || reg_dem(c, dem) || reg_mesh(c, fine, mesh)) {
    cc_close(c);
    return 1;
  }
  const double dt = 1e-3;
  state a = {{1.0, 0.5, 0}, {0, 0, 0}, {2, -3, 0}, {1, 0, 0, 0}};
  a.p[2] = bowl_z(a.p[0], a.p[1]) + R + 0.2;
  state b = a;
  int steps = (int)(T / dt + 0.5), kick = (int)(T_KICK / dt + 0.5), ca = 0, cb = 0, contacts = 0;
  double maxd = 0, tmax = 0;
  for (int k = 0; k < steps; k++) {
    if (k == kick) { /* the disturbance: a horizontal impulse of 1.5 N s */
      a.v[1] += 1.5 / MASS;
      b.v[1] += 1.5 / MASS;
    }
    if (step(c, ball, dem, &a, dt, &ca) || step(c, ball, mesh, &b, dt, &cb)) {
      cc_close(c);
      return 1;
    }
    contacts += ca;
    double d = sqrt((a.p[0] - b.p[0]) * (a.p[0] - b.p[0]) + (a.p[1] - b.p[1]) * (a.p[1] - b.p[1]) +
                    (a.p[2] - b.p[2]) * (a.p[2] - b.p[2]));
    if (d > maxd) maxd = d, tmax = (k + 1) * dt;
    if (trace && (k + 1) % 100 == 0)
      printf("t %.3f dem (%.4f %.4f %.4f) mesh (%.4f %.4f %.4f) diff %.2e\n", (k + 1) * dt, a.p[0], a.p[1], a.p[2],
             b.p[0], b.p[1], b.p[2], d);
  }
  cc_close(c);
  printf("bowl: %.2f s (%d steps, in contact in %d), DEM (spacing 1 m) vs analytic bowl (mesh spacing %g m): "
         "largest position difference %.3e m at t = %.3f s; final DEM (%.4f, %.4f, %.4f)\n",
         T, steps, contacts, fine, maxd, tmax, a.p[0], a.p[1], a.p[2]);
  if (contacts == 0) {
    printf("bowl: FAILED: the ball never touched the bowl\n");
    return 1;
  }
  if (check >= 0 && !(maxd <= check)) {
    printf("bowl: FAILED: largest difference %.3e m > %g m\n", maxd, check);
    return 1;
  }
  return 0;
}
