/* box_on_plane — a check of point contact as a remote simulator: a
 * rigid box falls onto a rigid plane under gravity and comes to rest; the
 * contact force contactd returns must then equal the weight m g.
 *
 * Two rigid geometries have no hydroelastic contact: the daemon answers the
 * pair with point contact (status POINT, model POINT), fn = k x (1 + d xdot)+
 * (Drake's docs) with k the combined point stiffness of the two geometries.
 * The box (0.1 m cube, 1 kg) starts 1 cm above the plane, upright; only its
 * height is integrated (symplectic Euler, dt = 1e-4 s: sqrt(k/m) dt = 0.03).
 * Each geometry registers point stiffness 2e5 N/m (combined 1e5 N/m: static
 * depth m g / k = 98 um) and dissipation 50 s/m (near critical damping at
 * rest), so the box settles within a few tens of ms.
 *
 * Usage: box_on_plane [--addr A] [--time T] [--check TOL]
 * Prints the final force and its relative difference from m g, and the
 * final depth against m g / k; exit status 1 if --check is given and either
 * exceeds TOL, or if a reply in contact is not POINT / model POINT. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_client.h"

static const double SIDE = 0.1, MASS = 1.0, G = 9.81, K = 2e5, D = 50;

static int reg(cc_client *c, int box, char id[CC_ID_MAX], cc_error *err) {
  Contactd__V1__RegisterGeometry rg = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  Contactd__V1__Box b = CONTACTD__V1__BOX__INIT;
  Contactd__V1__Vec3 size = CONTACTD__V1__VEC3__INIT;
  Contactd__V1__HalfSpace hs = CONTACTD__V1__HALF_SPACE__INIT;
  Contactd__V1__Material mat = CONTACTD__V1__MATERIAL__INIT;
  Contactd__V1__DoubleValue k = CONTACTD__V1__DOUBLE_VALUE__INIT;
  if (box) {
    size.x = size.y = size.z = SIDE;
    b.size = &size;
    rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_BOX;
    rg.box = &b;
    rg.resolution_hint = SIDE / 4;
  } else {
    rg.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE;
    rg.half_space = &hs;
  }
  rg.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  mat.dissipation = D;
  rg.material = &mat;
  k.value = K;
  rg.point_stiffness = &k;
  rg.name = box ? "box" : "plane";
  Contactd__V1__RegisterReply *r = NULL;
  int rc = cc_register(c, &rg, &r, err);
  if (rc) return rc;
  snprintf(id, CC_ID_MAX, "%s", r->geometry_id);
  cc_free(r);
  return 0;
}

int main(int argc, char **argv) {
  const char *addr = NULL; /* cc_connect: $CONTACTD_ADDR, else the default */
  double T = 0.5, check = -1;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--addr") && i + 1 < argc) addr = argv[++i];
    else if (!strcmp(argv[i], "--time") && i + 1 < argc) T = atof(argv[++i]);
    else if (!strcmp(argv[i], "--check") && i + 1 < argc) check = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: box_on_plane [--addr A] [--time T] [--check TOL]\n");
      return 2;
    }
  }
  cc_client *c;
  cc_error err;
  cc_options ropt; /* through a server restart: a lost query is sent once more (queries are idempotent) */
  cc_options_default(&ropt);
  ropt.retry_queries = 1;
  if (cc_connect(addr, &ropt, &c, &err)) {
    fprintf(stderr, "box_on_plane: %s\n", err.message);
    return 1;
  }
  char box[CC_ID_MAX], plane[CC_ID_MAX];
  if (reg(c, 1, box, &err) || reg(c, 0, plane, &err)) {
    fprintf(stderr, "box_on_plane: register: %s\n", err.message);
    cc_close(c);
    return 1;
  }
  const double dt = 1e-4;
  double z = SIDE / 2 + 0.01, vz = 0, fz = 0;
  int steps = (int)(T / dt + 0.5), bad = 0;
  cc_body b[2];
  memset(b, 0, sizeof b);
  b[0].id = 1;
  b[0].geometry_id = box;
  b[1].id = 2;
  b[1].geometry_id = plane;
  uint32_t pair[1][2] = {{1, 2}};
  for (int s = 0; s < steps; s++) {
    b[0].p[2] = z;
    b[0].v[2] = vz;
    Contactd__V1__ContactReply *rep = NULL;
    if (cc_query_bodies(c, b, 2, pair, 1, NULL, &rep, &err)) {
      fprintf(stderr, "box_on_plane: query: %s\n", err.message);
      cc_close(c);
      return 1;
    }
    const Contactd__V1__PairResult *p = rep->results[0];
    fz = p->wrench_a && p->wrench_a->force ? p->wrench_a->force->z : 0;
    if (p->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_NONE &&
        (p->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT ||
         p->model != CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT)) {
      if (!bad) fprintf(stderr, "box_on_plane: step %d: status %d model %d (want POINT)\n", s, p->status, p->model);
      bad = 1;
    }
    cc_free(rep);
    vz += dt * (fz / MASS - G);
    z += dt * vz;
  }
  cc_close(c);
  double rel = (fz - MASS * G) / (MASS * G);
  /* the depth the combined stiffness k1 k2 / (k1 + k2) = K / 2 needs for m g */
  double depth = SIDE / 2 - z, depth0 = MASS * G / (K / 2), reld = (depth - depth0) / depth0;
  printf("box_on_plane: t = %.3f s, force %.6f N, m g = %.6f N, rel. diff %.2e; depth %.2f um, m g / k = %.2f um, "
         "rel. diff %.2e\n",
         T, fz, MASS * G, rel, depth * 1e6, depth0 * 1e6, reld);
  if (bad) return 1;
  if (check >= 0 && !(fabs(rel) <= check && fabs(reld) <= check)) {
    printf("box_on_plane: FAILED: |rel. diff| > %g\n", check);
    return 1;
  }
  return 0;
}
