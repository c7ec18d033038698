/* test_mujoco.c — contactd_mujoco (client/mujoco/cmj.h) against a real
 * contactd: each geom type registered from an MJCF gives the contact of
 * the same geometry registered and queried directly, the wrench reaches
 * qfrc_passive about the right point, MuJoCo's filtering is followed and
 * its own contact kept for unmapped geoms, the map's errors name what is
 * wrong. The daemon restart tests are in test_mujoco_restart.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_test_daemon.h"
#include "cmj.h"
#include "tm_util.h"

static cc_test_daemon D;
static void up(void) { cr_assert_eq(cc_test_daemon_start(&D), 0, "contactd did not start"); }
static void down(void) { cr_assert_eq(cc_test_daemon_stop(&D), 0, "contactd exit status"); }

static const cmj_props SOFT = {.rigid = 0, .modulus = 1e5, .dissipation = 0, .friction = 0.3, .hint = 0.01};
static const cmj_props HARD = {.rigid = 1, .friction = 0.3};

/* Register s directly, query geometry `id` at pose (p, q) against geometry
 * `other` at (po, qo) with the pair in the order (A = first) the
 * attachment used, and compare the wrench on it with what the attachment
 * computed for geom g in its latest evaluation, to 1e-12 relative. */
static void compare(cmj *x, mjModel *m, int g, const char *id, const double p[3], const double q[4], const char *other,
                    const double po[3], const double qo[4]) {
  cc_client *c;
  cc_error e;
  cr_assert_eq(cc_connect(D.unix_addr, NULL, &c, &e), 0, "%s", e.message);
  cc_body b[2] = {{.id = 1, .geometry_id = id}, {.id = 2, .geometry_id = other}};
  memcpy(b[0].p, p, sizeof b[0].p), memcpy(b[0].q, q, sizeof b[0].q);
  memcpy(b[1].p, po, sizeof b[1].p), memcpy(b[1].q, qo, sizeof b[1].q);
  int g1, g2, geom_is_a = 0;
  for (int i = 0; i < cmj_npair(x); i++) {
    cmj_pair(x, i, &g1, &g2);
    if (g1 == g || g2 == g) geom_is_a = g1 == g;
  }
  const uint32_t pr[1][2] = {{geom_is_a ? 1 : 2, geom_is_a ? 2 : 1}};
  Contactd__V1__ContactReply *rep;
  cr_assert_eq(cc_query_bodies(c, b, 2, pr, 1, NULL, &rep, &e), 0, "%s", e.message);
  const Contactd__V1__PairResult *r = rep->results[0];
  const Contactd__V1__Wrench *w = geom_is_a ? r->wrench_a : r->wrench_b;
  double f[3], t[3];
  cr_assert_eq(cmj_geom_wrench(x, g, f, t), 1, "geom %s does not touch", mj_id2name(m, mjOBJ_GEOM, g));
  double want[6] = {w->force->x, w->force->y, w->force->z, w->torque->x, w->torque->y, w->torque->z};
  double got[6] = {f[0], f[1], f[2], t[0], t[1], t[2]};
  double scale = fabs(want[0]) + fabs(want[1]) + fabs(want[2]);
  cr_assert_gt(scale, 0.1, "geom %s: force %g N too small to compare", mj_id2name(m, mjOBJ_GEOM, g), scale);
  for (int k = 0; k < 6; k++)
    cr_assert_leq(fabs(got[k] - want[k]), 1e-12 * scale, "geom %s component %d: from MJCF %.17g, direct %.17g",
                  mj_id2name(m, mjOBJ_GEOM, g), k, got[k], want[k]);
  cc_free(rep);
  cc_close(c);
}

static const char *const PRIMS_XML =
    "<mujoco><worldbody>"
    "<geom name='floor' type='plane' size='2 2 0.1'/>"
    "<body name='b0' pos='0 0 0.048'><freejoint/><geom name='sphere' type='sphere' size='0.05'/></body>"
    "<body name='b1' pos='0.5 0 0.027' quat='0.9238795325112867 0.3826834323650898 0 0'><freejoint/>"
    "  <geom name='capsule' type='capsule' size='0.03 0.04' quat='0.7071067811865476 0 0.7071067811865476 0'/></body>"
    "<body name='b2' pos='1 0 0.028'><freejoint/><geom name='ellipsoid' type='ellipsoid' size='0.06 0.04 0.03'/></body>"
    "<body name='b3' pos='0 0.5 0.037' quat='0.7071067811865476 0.7071067811865476 0 0'><freejoint/>"
    "  <geom name='cylinder' type='cylinder' size='0.04 0.05'/></body>"
    "<body name='b4' pos='0.5 0.5 0.05'><freejoint/>"
    "  <geom name='box' type='box' size='0.05 0.04 0.03' pos='0.01 0.02 -0.0225' quat='0.9961946980917455 0 0 0.08715574274765817'/></body>"
    "</worldbody></mujoco>";

/* The expected registration of each primitive, from the MJCF's numbers
 * with MuJoCo's half sizes doubled where contactd takes full ones. */
static const struct {
  const char *geom;
  cc_shape s;
} PRIMS[] = {
    {"sphere", {.kind = CC_SHAPE_SPHERE, .a = 0.05}},
    {"capsule", {.kind = CC_SHAPE_CAPSULE, .a = 0.03, .b = 0.08}},
    {"ellipsoid", {.kind = CC_SHAPE_ELLIPSOID, .a = 0.06, .b = 0.04, .c = 0.03}},
    {"cylinder", {.kind = CC_SHAPE_CYLINDER, .a = 0.04, .b = 0.1}},
    {"box", {.kind = CC_SHAPE_BOX, .a = 0.1, .b = 0.08, .c = 0.06}},
};

Test(mujoco, primitives_from_mjcf_equal_direct_registration, .init = up, .fini = down, .timeout = 120) {
  mjModel *m = tm_load(PRIMS_XML);
  mjData *d = mj_makeData(m);
  cmj_map *map = cmj_map_new();
  char why[300];
  cr_assert_eq(cmj_map_set(map, "floor", &HARD, why, sizeof why), 0, "%s", why);
  for (size_t i = 0; i < sizeof PRIMS / sizeof PRIMS[0]; i++)
    cr_assert_eq(cmj_map_set(map, PRIMS[i].geom, &SOFT, why, sizeof why), 0, "%s", why);
  cmj *x = tm_attach(m, d, map, D.unix_addr);
  mj_forward(m, d);
  cc_client *c;
  cc_error e;
  cr_assert_eq(cc_connect(D.unix_addr, NULL, &c, &e), 0, "%s", e.message);
  cc_shape hs = {.kind = CC_SHAPE_HALF_SPACE, .rigid = 1, .friction = 0.3};
  char hid[CC_ID_MAX], id[CC_ID_MAX];
  cr_assert_eq(cc_register_shape(c, &hs, hid, NULL, &e), 0, "%s", e.message);
  cr_assert_str_eq(hid, cmj_geometry_id(x, mj_name2id(m, mjOBJ_GEOM, "floor")));
  const double zero[3] = {0, 0, 0}, ident[4] = {1, 0, 0, 0};
  for (size_t i = 0; i < sizeof PRIMS / sizeof PRIMS[0]; i++) {
    cc_shape s = PRIMS[i].s;
    s.modulus = SOFT.modulus, s.hint = SOFT.hint, s.friction = SOFT.friction;
    cr_assert_eq(cc_register_shape(c, &s, id, NULL, &e), 0, "%s", e.message);
    int g = mj_name2id(m, mjOBJ_GEOM, PRIMS[i].geom), b = m->geom_bodyid[g];
    cr_assert_str_eq(id, cmj_geometry_id(x, g), "%s: the MJCF's registration differs", PRIMS[i].geom);
    /* the geom's world pose composed here from the MJCF's numbers */
    double p[3], q[4];
    tm_compose(m->body_pos + 3 * b, m->body_quat + 4 * b, m->geom_pos + 3 * g, m->geom_quat + 4 * g, p, q);
    compare(x, m, g, id, p, q, hid, zero, ident);
  }
  cc_close(c);
  /* the box's wrench reaches its free joint about the body origin, the
   * torque of the force at the geom origin included */
  int g = mj_name2id(m, mjOBJ_GEOM, "box"), b = m->geom_bodyid[g], dof = m->jnt_dofadr[m->body_jntadr[b]];
  double f[3], t[3], r[3], tb[3], tw[3];
  cmj_geom_wrench(x, g, f, t);
  for (int k = 0; k < 3; k++) r[k] = d->geom_xpos[3 * g + k] - d->xpos[3 * b + k];
  tm_cross(r, f, tw);
  for (int k = 0; k < 3; k++) tw[k] += t[k];
  for (int k = 0; k < 3; k++) tb[k] = d->xmat[9 * b + k] * tw[0] + d->xmat[9 * b + 3 + k] * tw[1] + d->xmat[9 * b + 6 + k] * tw[2];
  for (int k = 0; k < 3; k++) {
    cr_assert_leq(fabs(d->qfrc_passive[dof + k] - f[k]), 1e-12 * (1 + fabs(f[k])), "force %d", k);
    cr_assert_leq(fabs(d->qfrc_passive[dof + 3 + k] - tb[k]), 1e-12 * (1 + fabs(tb[k])), "torque %d", k);
  }
  cr_assert_gt(fabs(tb[0]) + fabs(tb[1]) + fabs(tb[2]), 1e-4, "the offset box must feel a torque");
  cmj_detach(x);
  cmj_map_free(map);
  mj_deleteData(d);
  mj_deleteModel(m);
}
