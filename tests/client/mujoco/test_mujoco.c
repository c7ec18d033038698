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

/* A box as an MJCF mesh (MuJoCo moves its vertices to the principal axes
 * and turns the geom frame to match) against a compliant plane, and the
 * same box given directly in its own frame. Coordinates are binary
 * fractions, so MuJoCo's float vertices hold them exactly. */
static const char *const MESH_XML =
    "<mujoco><asset><mesh name='blk' vertex='-0.0625 -0.03125 -0.015625  0.0625 -0.03125 -0.015625  0.0625 0.03125 "
    "-0.015625  -0.0625 0.03125 -0.015625  -0.0625 -0.03125 0.015625  0.0625 -0.03125 0.015625  0.0625 0.03125 "
    "0.015625  -0.0625 0.03125 0.015625'/></asset><worldbody>"
    "<geom name='floor' type='plane' size='2 2 0.1'/>"
    "<body name='b' pos='0.25 0.125 0.0146484375'><freejoint/><geom name='mesh' type='mesh' mesh='blk'/></body>"
    "</worldbody></mujoco>";

Test(mujoco, rigid_mesh_from_mjcf_equals_direct_trimesh, .init = up, .fini = down, .timeout = 120) {
  mjModel *m = tm_load(MESH_XML);
  mjData *d = mj_makeData(m);
  cmj_map *map = cmj_map_new();
  char why[300];
  cmj_props soft_floor = {.rigid = 0, .modulus = 1e6, .friction = 0.3, .slab = 0.5};
  cr_assert_eq(cmj_map_set(map, "floor", &soft_floor, why, sizeof why), 0, "%s", why);
  cr_assert_eq(cmj_map_set(map, "mesh", &HARD, why, sizeof why), 0, "%s", why);
  cmj *x = tm_attach(m, d, map, D.unix_addr);
  mj_forward(m, d);
  cc_client *c;
  cc_error e;
  cr_assert_eq(cc_connect(D.unix_addr, NULL, &c, &e), 0, "%s", e.message);
  /* the box in its own frame, 12 outward triangles */
  double a = 0.0625, b = 0.03125, h = 0.015625;
  double v[24] = {-a, -b, -h, a, -b, -h, a, b, -h, -a, b, -h, -a, -b, h, a, -b, h, a, b, h, -a, b, h};
  int32_t t[36] = {0, 2, 1, 0, 3, 2, 4, 5, 6, 4, 6, 7, 0, 1, 5, 0, 5, 4, 1, 2, 6, 1, 6, 5, 2, 3, 7, 2, 7, 6, 3, 0, 4, 3, 4, 7};
  Contactd__V1__RegisterGeometry r = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  Contactd__V1__TriMesh tm = CONTACTD__V1__TRI_MESH__INIT;
  Contactd__V1__Material mat = CONTACTD__V1__MATERIAL__INIT;
  tm.vertices = v, tm.n_vertices = 24, tm.triangles = t, tm.n_triangles = 36;
  r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH, r.tri_mesh = &tm;
  r.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  mat.friction = 0.3, r.material = &mat;
  Contactd__V1__RegisterReply *rep;
  cr_assert_eq(cc_register(c, &r, &rep, &e), 0, "%s", e.message);
  cc_shape hs = {.kind = CC_SHAPE_HALF_SPACE, .modulus = 1e6, .friction = 0.3, .slab = 0.5};
  char hid[CC_ID_MAX];
  cr_assert_eq(cc_register_shape(c, &hs, hid, NULL, &e), 0, "%s", e.message);
  int g = mj_name2id(m, mjOBJ_GEOM, "mesh");
  const double p[3] = {0.25, 0.125, 0.0146484375}, q[4] = {1, 0, 0, 0}, zero[3] = {0, 0, 0};
  /* the wrench about the geom origin: MuJoCo's mesh frame is centred on
   * the box's centre of mass, which is its own origin here */
  for (int k = 0; k < 3; k++) cr_assert_leq(fabs(d->geom_xpos[3 * g + k] - p[k]), 1e-15);
  compare(x, m, g, rep->geometry_id, p, q, hid, zero, q);
  cc_free(rep);
  cc_close(c);
  cmj_detach(x);
  cmj_map_free(map);
  mj_deleteData(d);
  mj_deleteModel(m);
}

/* A compliant sphere on an MJCF height field whose samples are set in code
 * (MuJoCo 2.2 reads hfield data from files only), against the same heights
 * registered directly. */
Test(mujoco, hfield_from_mjcf_equals_direct_height_field, .init = up, .fini = down, .timeout = 120) {
  mjModel *m = tm_load("<mujoco><asset><hfield name='hf' nrow='6' ncol='8' size='0.35 0.25 0.1 0.05'/></asset>"
                       "<worldbody><geom name='ground' type='hfield' hfield='hf'/>"
                       "<body pos='0.02 -0.01 0.08'><freejoint/><geom name='ball' type='sphere' size='0.05'/></body>"
                       "</worldbody></mujoco>");
  int nr = 6, nc = 8;
  for (int i = 0; i < nr; i++)
    for (int j = 0; j < nc; j++) m->hfield_data[i * nc + j] = (float)(0.25 + 0.0625 * ((i + 2 * j) % 5));
  mjData *d = mj_makeData(m);
  cmj_map *map = cmj_map_new();
  char why[300];
  cr_assert_eq(cmj_map_set(map, "ground", &HARD, why, sizeof why), 0, "%s", why);
  cr_assert_eq(cmj_map_set(map, "ball", &SOFT, why, sizeof why), 0, "%s", why);
  cmj *x = tm_attach(m, d, map, D.unix_addr);
  mj_forward(m, d);
  double heights[48];
  for (int i = 0; i < 48; i++) heights[i] = 0.1 * (double)m->hfield_data[i];
  cc_shape hf = {.kind = CC_SHAPE_HEIGHT_FIELD, .rigid = 1, .friction = 0.3, .heights = heights, .nx = nc, .ny = nr,
                 .dx = 0.7 / 7, .dy = 0.5 / 5, .origin = {-0.35, -0.25, 0}};
  cc_client *c;
  cc_error e;
  char hid[CC_ID_MAX];
  cr_assert_eq(cc_connect(D.unix_addr, NULL, &c, &e), 0, "%s", e.message);
  cr_assert_eq(cc_register_shape(c, &hf, hid, NULL, &e), 0, "%s", e.message);
  int ground = mj_name2id(m, mjOBJ_GEOM, "ground"), ball = mj_name2id(m, mjOBJ_GEOM, "ball");
  cr_assert_str_eq(hid, cmj_geometry_id(x, ground));
  cc_close(c);
  const double p[3] = {0.02, -0.01, 0.08}, q[4] = {1, 0, 0, 0}, zero[3] = {0, 0, 0};
  compare(x, m, ball, cmj_geometry_id(x, ball), p, q, hid, zero, q);
  cmj_detach(x);
  cmj_map_free(map);
  mj_deleteData(d);
  mj_deleteModel(m);
}

static const char *const MIXED_XML =
    "<mujoco><option timestep='0.001' integrator='implicit'/><worldbody>"
    "<geom name='floor' type='plane' size='2 2 0.1'/>"
    "<body name='ball' pos='0 0 0.05'><freejoint/><geom name='ball' type='sphere' size='0.05' density='1000'/></body>"
    "<body name='crate' pos='0.5 0 0.06'><freejoint/><geom name='crate' type='box' size='0.05 0.05 0.05'/></body>"
    "<body name='ball2' pos='-0.5 0 0.05'><freejoint/><geom name='ball2' type='sphere' size='0.05' density='1000'/>"
    "  <body name='child' pos='0 0 0.2'><joint type='slide' axis='0 0 1'/><geom name='child' type='sphere' size='0.02'/></body>"
    "</body>"
    "<body name='ghost' pos='1 0 0.1'><freejoint/><geom name='ghost' type='sphere' size='0.05' contype='0' conaffinity='0'/></body>"
    "<body name='ex' pos='0 1 0.05'><freejoint/><geom name='ex' type='sphere' size='0.05'/></body>"
    "</worldbody><contact><exclude body1='ball' body2='ex'/>"
    "<pair geom1='ghost' geom2='floor'/><pair geom1='crate' geom2='floor'/></contact></mujoco>";

/* Which pairs go to contactd follows MuJoCo's filtering (masks, parent,
 * exclude, explicit pairs); MuJoCo keeps its own contact for the unmapped
 * crate, and a simulation carries both. */
Test(mujoco, mixed_scene_follows_mujoco_filtering, .init = up, .fini = down, .timeout = 120) {
  mjModel *m = tm_load(MIXED_XML);
  mjData *d = mj_makeData(m);
  cmj_map *map = cmj_map_new();
  char why[300];
  cmj_props soft = SOFT;
  soft.dissipation = 10;
  const char *mapped[] = {"ball", "ball2", "child", "ghost", "ex"};
  cr_assert_eq(cmj_map_set(map, "floor", &HARD, why, sizeof why), 0, "%s", why);
  for (int i = 0; i < 5; i++) cr_assert_eq(cmj_map_set(map, mapped[i], &soft, why, sizeof why), 0, "%s", why);
  cr_assert_eq(m->npair, 2);
  cmj *x = tm_attach(m, d, map, D.unix_addr);
  cr_assert_eq(m->npair, 1, "the ghost-floor <pair> must leave MuJoCo's list");
  int crate = mj_name2id(m, mjOBJ_GEOM, "crate"), ball = mj_name2id(m, mjOBJ_GEOM, "ball");
  int ghost = mj_name2id(m, mjOBJ_GEOM, "ghost");
  cr_assert(m->pair_geom1[0] == crate || m->pair_geom2[0] == crate, "the crate-floor <pair> stays MuJoCo's");
  const char *want[][2] = {{"ghost", "floor"}, {"floor", "ball"}, {"floor", "ball2"}, {"floor", "child"},
                           {"floor", "ex"},    {"ball", "ball2"},  {"ball", "child"},   {"ball2", "ex"},
                           {"child", "ex"}};
  int nw = (int)(sizeof want / sizeof want[0]);
  cr_assert_eq(cmj_npair(x), nw, "pairs: %d, want %d", cmj_npair(x), nw);
  for (int i = 0; i < nw; i++) {
    int a = mj_name2id(m, mjOBJ_GEOM, want[i][0]), b = mj_name2id(m, mjOBJ_GEOM, want[i][1]), found = 0;
    for (int k = 0; k < cmj_npair(x); k++) {
      int g1, g2;
      cmj_pair(x, k, &g1, &g2);
      found |= (g1 == a && g2 == b) || (g1 == b && g2 == a);
    }
    cr_assert(found, "pair %s-%s missing", want[i][0], want[i][1]);
  }
  cc_error e;
  for (int i = 0; i < 800; i++) cr_assert_eq(cmj_step(x, &e), 0, "%s", e.message);
  cr_assert_gt(d->ncon, 0, "MuJoCo's own contact must hold the crate");
  for (int i = 0; i < d->ncon; i++)
    cr_assert(d->contact[i].geom1 == crate || d->contact[i].geom2 == crate, "MuJoCo contact %d-%d between mapped geoms",
              d->contact[i].geom1, d->contact[i].geom2);
  cr_assert_leq(fabs(d->geom_xpos[3 * crate + 2] - 0.05), 2e-3, "crate z %g", d->geom_xpos[3 * crate + 2]);
  double f[3], t[3], mg = m->body_mass[m->geom_bodyid[ball]] * 9.81;
  cmj_geom_wrench(x, ball, f, t);
  cr_assert_leq(fabs(f[2] - mg), 0.02 * mg, "ball carried %g N of %g N", f[2], mg);
  cr_assert_gt(d->geom_xpos[3 * ghost + 2], 0.035, "the ghost (explicit pair) fell to %g", d->geom_xpos[3 * ghost + 2]);
  cmj_detach(x);
  cr_assert_eq(m->npair, 2, "detach restores the pair list");
  int found = 0;
  for (int i = 0; i < 2; i++) found += m->pair_geom1[i] == ghost || m->pair_geom2[i] == ghost;
  cr_assert_eq(found, 1, "detach restores the ghost-floor <pair>");
  cmj_map_free(map);
  mj_deleteData(d);
  mj_deleteModel(m);
}

static void attach_fails(const char *xml, const char *json, const char *expect) {
  mjModel *m = tm_load(xml);
  mjData *d = mj_makeData(m);
  cmj_map *map = cmj_map_new();
  char why[300];
  cr_assert_eq(cmj_map_parse(map, json, why, sizeof why), 0, "%s", why);
  cmj_options o;
  cmj_options_default(&o);
  char addr[400];
  snprintf(addr, sizeof addr, "unix:%s/none.sock", td_own_dir());
  o.addr = addr;
  cmj *x = NULL;
  cc_error e;
  cr_assert_eq(cmj_attach(m, d, map, NULL, &o, &x, &e), CC_EINVALID_ARGUMENT, "attach: %s", e.message);
  cr_assert_null(x);
  cr_assert_not_null(strstr(e.message, expect), "'%s' does not say '%s'", e.message, expect);
  cmj_map_free(map);
  mj_deleteData(d);
  mj_deleteModel(m);
}

Test(mujoco, bad_maps_and_geoms_name_what_is_wrong) {
  cmj_map *map = cmj_map_new();
  char why[300];
  cr_assert_eq(cmj_map_parse(map, "{\"geoms\": {\"a\": {\"compliance\": \"soft\"}}}", why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "geoms.a.compliance"), "%s", why);
  cr_assert_eq(cmj_map_parse(map, "{\"geoms\": {\"a\": {\"compliance\": \"rigid\", \"mu\": 1}}}", why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "geoms.a.mu: unknown key"), "%s", why);
  cr_assert_eq(cmj_map_parse(map, "{\"geoms\": {\"a\": {\"compliance\": \"compliant\"}}}", why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "geom 'a': a compliant geom needs a modulus"), "%s", why);
  cr_assert_eq(cmj_map_parse(map, "{\"geom\": {}}", why, sizeof why), -1);
  cr_assert_eq(cmj_map_parse(map, "{\"geoms\": {\"a\": {\"compliance\": \"rigid\"", why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "not valid JSON"), "%s", why);
  cr_assert_eq(cmj_map_load(map, "no-such-map.json", why, sizeof why), -1);
  cr_assert_not_null(strstr(why, "no-such-map.json"), "%s", why);
  cmj_map_free(map);
  const char *ball = "<mujoco><worldbody><geom name='floor' type='plane' size='1 1 1'/>"
                     "<body><freejoint/><geom name='ball' type='sphere' size='0.05'/></body></worldbody></mujoco>";
  attach_fails(ball, "{\"geoms\": {\"bal\": {\"compliance\": \"rigid\"}}}", "no geom named 'bal'");
  mjModel *m = tm_load(ball);
  mjData *d = mj_makeData(m);
  cmj_map *ok = cmj_map_new();
  cr_assert_eq(cmj_map_parse(ok, "{\"geoms\": {\"ball\": {\"compliance\": \"rigid\"}}}", why, sizeof why), 0, "%s", why);
  cmj_options o;
  cmj_options_default(&o);
  o.publish = "my scene";
  cmj *x = NULL;
  cc_error e;
  cr_assert_eq(cmj_attach(m, d, ok, NULL, &o, &x, &e), CC_EINVALID_ARGUMENT);
  cr_assert_not_null(strstr(e.message, "cmj_options.publish"), "%s", e.message);
  cmj_map_free(ok);
  mj_deleteData(d);
  mj_deleteModel(m);
  attach_fails(ball, "{\"geoms\": {\"ball\": {\"compliance\": \"compliant\", \"modulus\": 1e5}}}",
               "geom 'ball' (sphere): a compliant primitive needs a resolution hint");
  attach_fails("<mujoco><asset><hfield name='hf' nrow='4' ncol='4' size='1 1 0.1 0.1'/></asset><worldbody>"
               "<geom name='terrain' type='hfield' hfield='hf'/></worldbody></mujoco>",
               "{\"geoms\": {\"terrain\": {\"compliance\": \"compliant\", \"modulus\": 1e5, \"hint\": 0.1}}}",
               "geom 'terrain' (hfield): must be mapped rigid");
}
