/* test_point_contact.c — compliant point contact (Drake's docs) through
 * ce_contact(): force law, combination rules, friction, wrenches, the model
 * selection of the dispatcher (hydroelastic, point, fallback), Newton's third
 * law, and a rigid box settling on a rigid half space under gravity. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

static ce_arena *arena;
static void setup(void) { arena = ce_arena_create(1 << 16); }
static void teardown(void) { ce_arena_destroy(arena); }

static ce_geometry *make(ce_shape s, ce_compliance c, double E, double hint) {
  ce_props p = ce_test_props(c, E, hint);
  ce_geometry *g = NULL;
  ce_error err;
  ce_errno e = ce_geometry_from_shape(&s, &p, &g, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  return g;
}
static ce_geometry *rsphere(double r) {
  ce_shape s = {.type = CE_SHAPE_SPHERE, .radius = r};
  return make(s, CE_RIGID, 0, r / 2);
}
static ce_geometry *rbox(double x, double y, double z) {
  ce_shape s = {.type = CE_SHAPE_BOX, .size = {x, y, z}};
  return make(s, CE_RIGID, 0, fmin(x, fmin(y, z)) / 2);
}
static ce_geometry *rhalf(void) {
  ce_shape s = {.type = CE_SHAPE_HALFSPACE};
  return make(s, CE_RIGID, 0, 1);
}

static ce_body body_at(const ce_geometry *g, double x, double y, double z) {
  return ce_test_body(g, ce_quat_identity(), ce_v3(x, y, z));
}

static ce_result query(const ce_body *a, const ce_body *b, ce_contact_model model) {
  ce_options o;
  ce_options_default(&o);
  o.model = model;
  o.want_patches = 1;
  ce_result r;
  ce_error err;
  ce_errno e = ce_contact(a, b, &o, arena, &r, &err);
  cr_assert_eq(e, CE_OK, "%s", err.message);
  return r;
}

#define VEC_NEAR(v, X, Y, Z, tol)                                                                   \
  cr_assert(fabs((v).x - (X)) <= (tol) && fabs((v).y - (Y)) <= (tol) && fabs((v).z - (Z)) <= (tol), \
            #v " = (%.12g, %.12g, %.12g), expected (%.12g, %.12g, %.12g)", (v).x, (v).y, (v).z,     \
            (double)(X), (double)(Y), (double)(Z))

/* Equal and opposite: both wrenches moved to one point cancel. */
static void check_third_law(const ce_result *r, const ce_body *a, const ce_body *b) {
  ce_vec3 O = ce_v3(0.3, -0.7, 1.1);
  ce_wrench wa = ce_wrench_shift(r->wrench_a, a->X_WB.p, O);
  ce_wrench wb = ce_wrench_shift(r->wrench_b, b->X_WB.p, O);
  double F = ce_norm(r->wrench_a.force) + 1e-300;
  cr_assert(ce_norm(ce_add(wa.force, wb.force)) <= 1e-12 * F);
  cr_assert(ce_norm(ce_add(wa.torque, wb.torque)) <= 1e-12 * F * 5);
}

/* Stiffness set per body; combined k = ka kb / (ka + kb). */
Test(point_contact, sphere_sphere_force, .init = setup, .fini = teardown) {
  ce_geometry *ga = rsphere(1), *gb = rsphere(0.5);
  ce_body a = body_at(ga, 0, 0, 1.2), b = body_at(gb, 0, 0, 0);
  a.point_stiffness = 1e5;
  b.point_stiffness = 3e5;
  ce_result r = query(&a, &b, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert_eq(r.model, CE_MODEL_POINT);
  cr_assert_float_eq(r.point.stiffness, 7.5e4, 1e-9);
  cr_assert_float_eq(r.point.depth, 0.3, 1e-14);
  double fn = 7.5e4 * 0.3; /* 22500 N */
  cr_assert_float_eq(r.point.normal_force, fn, 1e-8);
  VEC_NEAR(r.point.normal, 0, 0, 1, 0);
  VEC_NEAR(r.point.point, 0, 0, 0.35, 1e-14); /* midpoint of 0.2 and 0.5 */
  VEC_NEAR(r.wrench_a.force, 0, 0, fn, 1e-8);
  VEC_NEAR(r.wrench_b.force, 0, 0, -fn, 1e-8);
  VEC_NEAR(r.wrench_a_centroid.torque, 0, 0, 0, 0);
  VEC_NEAR(r.total.point, 0, 0, 0.35, 1e-14);
  cr_assert_float_eq(r.total.normal_force_magnitude, fn, 1e-8);
  cr_assert_eq(r.npatches, 1);
  cr_assert_float_eq(r.patches[0].normal_force.z, fn, 1e-8);
  check_third_law(&r, &a, &b);
  ce_geometry_free(ga);
  ce_geometry_free(gb);
}

/* Hunt–Crossley dissipation with the stiffness-weighted combination
 * d = kb/(ka+kb) da + ka/(ka+kb) db, and regularised Coulomb friction. */
Test(point_contact, dissipation_and_friction, .init = setup, .fini = teardown) {
  ce_geometry *ga = rsphere(1), *gb = rsphere(0.5);
  ce_body a = body_at(ga, 0, 0, 1.2), b = body_at(gb, 0, 0, 0);
  a.point_stiffness = 1e5;
  b.point_stiffness = 3e5;
  a.material.dissipation = 2;
  b.material.dissipation = 4;
  a.V_WB.v = ce_v3(0, 0, -1); /* approaching at 1 m/s: xdot = +1 */
  ce_result r = query(&a, &b, CE_MODEL_POINT);
  cr_assert_float_eq(r.point.dissipation, (3e5 * 2 + 1e5 * 4) / 4e5, 1e-12); /* 2.5 s/m */
  cr_assert_float_eq(r.point.depth_rate, 1.0, 1e-14);
  cr_assert_float_eq(r.point.normal_force, 22500 * 3.5, 1e-7);
  /* separating fast enough: (1 + d xdot)+ clips the force to zero */
  a.V_WB.v = ce_v3(0, 0, 0.5);
  r = query(&a, &b, CE_MODEL_POINT);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert_float_eq(r.point.normal_force, 0, 0);
  /* sliding along +x at 0.01 m/s with mu = 0.5 each (combined 0.5) */
  a.V_WB.v = ce_v3(0.01, 0, 0);
  a.material.friction = b.material.friction = 0.5;
  a.material.dissipation = b.material.dissipation = 0;
  r = query(&a, &b, CE_MODEL_POINT);
  double ft = 0.5 * (2 / M_PI) * atan(0.01 / 1e-4) * 22500;
  VEC_NEAR(r.point.friction_force, -ft, 0, 0, 1e-8);
  VEC_NEAR(r.wrench_a.force, -ft, 0, 22500, 1e-8);
  /* friction at the contact point (0, 0, 0.35) gives torques about the origins */
  VEC_NEAR(r.wrench_a.torque, 0, ft * (1.2 - 0.35), 0, 1e-8);
  VEC_NEAR(r.wrench_b.torque, 0, ft * 0.35, 0, 1e-8);
  check_third_law(&r, &a, &b);
  /* bad stiffness: a clear error */
  a.point_stiffness = -1;
  ce_options o;
  ce_options_default(&o);
  ce_error err;
  cr_assert_eq(ce_contact(&a, &b, &o, arena, &r, &err), CE_EINVAL);
  cr_assert(strstr(err.message, "point stiffness") != NULL, "%s", err.message);
  ce_geometry_free(ga);
  ce_geometry_free(gb);
}

/* Default stiffness of a rigid body: 2 rho g V / delta (ce.h). */
Test(point_contact, default_stiffness, .init = setup, .fini = teardown) {
  ce_geometry *bx = rbox(1, 1, 1), *h = rhalf();
  double k1 = 2 * 1000 * 9.81 * 1.0 / 1e-3;
  cr_assert_float_eq(ce_point_stiffness_default(bx), k1, 1e-6);
  cr_assert(isinf(ce_point_stiffness_default(h)));
  ce_shape cs = {.type = CE_SHAPE_SPHERE, .radius = 0.1};
  ce_geometry *soft = make(cs, CE_COMPLIANT, 1e6, 0.05);
  cr_assert_float_eq(ce_point_stiffness_default(soft), 1e6 * cbrt(4.0 / 3.0 * M_PI * 1e-3), 1e-6);
  /* two unit boxes: k = k1 / 2, face contact 0.1 deep */
  ce_body a = body_at(bx, 0, 0, 0.9), b = body_at(bx, 0, 0, 0);
  ce_result r = query(&a, &b, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  cr_assert_float_eq(r.point.stiffness, k1 / 2, 1e-6);
  cr_assert_float_eq(r.point.normal_force, k1 / 2 * 0.1, 1e-5);
  /* box on a rigid half space: the box's own stiffness and dissipation */
  ce_body hb = body_at(h, 0, 0, 0);
  hb.material.dissipation = 7;
  a.material.dissipation = 3;
  a.X_WB.p = ce_v3(0, 0, 0.45);
  r = query(&a, &hb, CE_MODEL_POINT);
  cr_assert_float_eq(r.point.stiffness, k1, 1e-6);
  cr_assert_float_eq(r.point.dissipation, 3, 0);
  cr_assert_float_eq(r.point.normal_force, k1 * 0.05, 1e-5);
  VEC_NEAR(r.point.point, 0, 0, -0.025, 1e-14);
  ce_geometry_free(bx);
  ce_geometry_free(h);
  ce_geometry_free(soft);
}

/* Box-box face, edge and corner contacts: depth, normal, force and the
 * torque of the force about each body's origin. */
Test(point_contact, box_box_contacts, .init = setup, .fini = teardown) {
  ce_geometry *ga = rbox(1, 1, 1), *gb = rbox(4, 4, 1);
  const double k = 1e6;
  struct {
    ce_vec3 axis;
    double angle, reach, depth;
  } cases[3] = {
      {{1, 0, 0}, 0, 0.5, 0.1},                                      /* face */
      {{1, 0, 0}, M_PI / 4, sqrt(0.5), 0.05},                        /* edge */
      {{1, -1, 0}, 0.9553166181245093, 0.5 * sqrt(3.0), 0.02},       /* corner */
  };
  for (int c = 0; c < 3; c++) {
    ce_body a = ce_test_body(ga, ce_quat_from_axis_angle(cases[c].axis, cases[c].angle),
                             ce_v3(0.4, -0.3, 0.5 + cases[c].reach - cases[c].depth));
    ce_body b = body_at(gb, 0, 0, 0);
    a.point_stiffness = b.point_stiffness = 2 * k;
    ce_result r = query(&a, &b, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
    cr_assert_eq(r.status, CE_CONTACT_POINT, "case %d", c);
    cr_assert(fabs(r.point.depth - cases[c].depth) < 1e-12, "case %d: depth %.15g", c, r.point.depth);
    VEC_NEAR(r.point.normal, 0, 0, 1, 1e-12);
    double fn = k * cases[c].depth;
    cr_assert(fabs(r.point.normal_force - fn) < 1e-6 * fn, "case %d", c);
    /* the force acts on the vertical line through A's centre */
    VEC_NEAR(r.point.point, 0.4, -0.3, 0.5 - 0.5 * cases[c].depth, 1e-12);
    VEC_NEAR(r.wrench_a.torque, 0, 0, 0, 1e-6);
    VEC_NEAR(r.wrench_b.torque, -(-0.3) * fn, 0.4 * fn, 0, 1e-6); /* (P - 0) x (0, 0, -fn) */
    check_third_law(&r, &a, &b);
  }
  ce_geometry_free(ga);
  ce_geometry_free(gb);
}

Test(point_contact, capsule_capsule_force, .init = setup, .fini = teardown) {
  ce_shape cs = {.type = CE_SHAPE_CAPSULE, .radius = 0.5, .length = 2};
  ce_geometry *g = make(cs, CE_RIGID, 0, 0.25);
  ce_body a = ce_test_body(g, ce_quat_from_axis_angle(ce_v3(0, 1, 0), M_PI / 2), ce_v3(0.3, 0.2, 0.9));
  ce_body b = ce_test_body(g, ce_quat_from_axis_angle(ce_v3(1, 0, 0), M_PI / 2), ce_v3(0, 0, 0));
  a.point_stiffness = 4e4;
  b.point_stiffness = 4e4;
  ce_result r = query(&a, &b, CE_MODEL_POINT);
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert_float_eq(r.point.depth, 0.1, 1e-14);
  VEC_NEAR(r.point.normal, 0, 0, 1, 1e-15);
  VEC_NEAR(r.point.point, 0, 0.2, 0.45, 1e-14);
  cr_assert_float_eq(r.point.normal_force, 2e4 * 0.1, 1e-9);
  /* torque on A about its origin: (P - oA) x F = (-0.3, 0, -0.45) x (0, 0, 2000) */
  VEC_NEAR(r.wrench_a.torque, 0, 0.3 * 2000, 0, 1e-9);
  check_third_law(&r, &a, &b);
  ce_geometry_free(g);
}

/* One mixed query set: every pair answered, each with the right model. */
Test(point_contact, mixed_models, .init = setup, .fini = teardown) {
  ce_shape ss = {.type = CE_SHAPE_SPHERE, .radius = 0.1};
  ce_geometry *soft = make(ss, CE_COMPLIANT, 1e6, 0.03), *hard = rsphere(0.1), *bx = rbox(1, 1, 0.2),
              *h = rhalf();
  ce_body cs = body_at(soft, 0, 0, 0.19), rs = body_at(hard, 0, 0, 0.19), rb = body_at(bx, 0, 0, 0),
          hs = body_at(h, 0, 0, 0.1), hs2 = body_at(h, 0, 0, -0.2), soft2 = body_at(soft, 0, 0, 0.28);
  struct {
    const ce_body *a, *b;
    ce_contact_model model;
    ce_contact_status status;
    ce_contact_model used;
  } cases[] = {
      {&cs, &rb, CE_MODEL_HYDROELASTIC_WITH_FALLBACK, CE_CONTACT_SURFACE, CE_MODEL_HYDROELASTIC},
      {&soft2, &cs, CE_MODEL_HYDROELASTIC_WITH_FALLBACK, CE_CONTACT_SURFACE, CE_MODEL_HYDROELASTIC},
      {&rs, &rb, CE_MODEL_HYDROELASTIC_WITH_FALLBACK, CE_CONTACT_POINT, CE_MODEL_POINT},
      {&rs, &hs, CE_MODEL_HYDROELASTIC_WITH_FALLBACK, CE_CONTACT_POINT, CE_MODEL_POINT},
      {&rb, &hs2, CE_MODEL_HYDROELASTIC_WITH_FALLBACK, CE_CONTACT_NONE, CE_MODEL_POINT},
      {&rb, &hs, CE_MODEL_HYDROELASTIC_WITH_FALLBACK, CE_CONTACT_POINT, CE_MODEL_POINT},
      {&rs, &rb, CE_MODEL_HYDROELASTIC, CE_CONTACT_UNSUPPORTED, CE_MODEL_HYDROELASTIC},
      {&cs, &rb, CE_MODEL_HYDROELASTIC, CE_CONTACT_SURFACE, CE_MODEL_HYDROELASTIC},
      {&cs, &rb, CE_MODEL_POINT, CE_CONTACT_POINT, CE_MODEL_POINT},
      {&hs, &hs, CE_MODEL_HYDROELASTIC_WITH_FALLBACK, CE_CONTACT_UNSUPPORTED, CE_MODEL_HYDROELASTIC},
      {&hs, &hs, CE_MODEL_POINT, CE_CONTACT_UNSUPPORTED, CE_MODEL_POINT},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ce_arena_reset(arena);
    ce_result r = query(cases[i].a, cases[i].b, cases[i].model);
    cr_assert_eq(r.status, cases[i].status, "case %zu: status %d", i, (int)r.status);
    cr_assert_eq(r.model, cases[i].used, "case %zu: model %d", i, (int)r.model);
    if (r.status == CE_CONTACT_SURFACE || r.status == CE_CONTACT_POINT) {
      cr_assert(r.wrench_a.force.z > 0, "case %zu: A is pushed up (%g)", i, r.wrench_a.force.z);
      check_third_law(&r, cases[i].a, cases[i].b);
    }
  }
  /* the rigid sphere sits 0.01 deep in the box (top at 0.1) */
  ce_result r = query(&rs, &rb, CE_MODEL_HYDROELASTIC_WITH_FALLBACK);
  cr_assert_float_eq(r.point.depth, 0.01, 1e-14);
  /* the compliant sphere's point answer uses the same MTD */
  r = query(&cs, &rb, CE_MODEL_POINT);
  cr_assert_float_eq(r.point.depth, 0.01, 1e-14);
  /* an unknown model is an error */
  ce_options o;
  ce_options_default(&o);
  o.model = (ce_contact_model)7;
  ce_error err;
  cr_assert_eq(ce_contact(&rs, &rb, &o, arena, &r, &err), CE_EINVAL);
  ce_geometry_free(soft);
  ce_geometry_free(hard);
  ce_geometry_free(bx);
  ce_geometry_free(h);
}

/* Newton's third law over random poses, velocities, friction and
 * dissipation, box and capsule pairs. */
Test(point_contact, third_law_random, .init = setup, .fini = teardown) {
  ce_shape cs = {.type = CE_SHAPE_CAPSULE, .radius = 0.2, .length = 0.6};
  ce_geometry *g[2] = {rbox(0.5, 0.4, 0.3), make(cs, CE_RIGID, 0, 0.1)};
  uint64_t seed = 11;
  int hits = 0;
  for (int k = 0; k < 200; k++) {
    ce_arena_reset(arena);
    const ce_geometry *ga = g[k & 1], *gb = g[(k >> 1) & 1];
    ce_body a = ce_test_body(ga, ce_test_rand_quat(&seed),
                             ce_v3(ce_test_rand(&seed) - 0.5, ce_test_rand(&seed) - 0.5, ce_test_rand(&seed) - 0.5));
    ce_body b = ce_test_body(gb, ce_test_rand_quat(&seed), ce_v3(0, 0, 0));
    a.V_WB.v = ce_v3(ce_test_rand(&seed) - 0.5, ce_test_rand(&seed) - 0.5, ce_test_rand(&seed) - 0.5);
    a.V_WB.w = ce_v3(ce_test_rand(&seed) - 0.5, 0, ce_test_rand(&seed) - 0.5);
    a.material.friction = b.material.friction = 0.6;
    a.material.dissipation = 1;
    ce_result r = query(&a, &b, CE_MODEL_POINT);
    if (r.status != CE_CONTACT_POINT) continue;
    hits++;
    check_third_law(&r, &a, &b);
    /* witness relation and the force's direction */
    ce_vec3 d = ce_sub(r.point.witness_b, r.point.witness_a);
    cr_assert(ce_norm(ce_axpy(d, -r.point.depth, r.point.normal)) < 1e-9 * (1 + r.point.depth), "pose %d", k);
    cr_assert(ce_dot(r.wrench_a.force, r.point.normal) >= -1e-9 * (1 + r.point.normal_force));
  }
  cr_assert(hits > 50, "only %d overlapping poses", hits);
  ce_geometry_free(g[0]);
  ce_geometry_free(g[1]);
}

/* A rigid 1 kg box (0.1 m cube, the default density 1000 kg/m^3) dropped
 * flat from 5 cm onto a rigid half space, integrated with semi-implicit
 * Euler (dt = 1e-4 s, 6000 steps, rotation included): it settles and the
 * normal force equals m g to 1%; the penetration is half the default
 * allowance, 0.5 mm. (A tilted or sliding box rocks between edges/corners
 * with a single contact point: a known limit of point contact (Drake's docs).) */
Test(point_contact, box_settles_on_halfspace, .init = setup, .fini = teardown) {
  ce_geometry *bx = rbox(0.1, 0.1, 0.1), *h = rhalf();
  const double m = 1.0, g = 9.81, I = m * (0.01 + 0.01) / 12, dt = 1e-4;
  ce_body box = ce_test_body(bx, ce_quat_identity(), ce_v3(0, 0, 0.1));
  ce_body ground = body_at(h, 0, 0, 0);
  box.material.dissipation = 20;
  box.material.friction = ground.material.friction = 0.5;
  ce_quat q = ce_quat_identity();
  ce_options o;
  ce_options_default(&o);
  o.stiction_tolerance = 1e-3;
  ce_result r;
  ce_error err;
  for (int step = 0; step < 6000; step++) {
    ce_arena_reset(arena);
    cr_assert_eq(ce_contact(&box, &ground, &o, arena, &r, &err), CE_OK, "%s", err.message);
    ce_vec3 F = r.wrench_a.force;
    F.z -= m * g;
    box.V_WB.v = ce_axpy(box.V_WB.v, dt / m, F);
    box.V_WB.w = ce_axpy(box.V_WB.w, dt / I, r.wrench_a.torque); /* cube: I scalar, no gyroscopic term */
    box.X_WB.p = ce_axpy(box.X_WB.p, dt, box.V_WB.v);
    double wn = ce_norm(box.V_WB.w);
    if (wn > 0) q = ce_quat_normalize(ce_quat_mul(ce_quat_from_axis_angle(box.V_WB.w, wn * dt), q));
    box.X_WB.R = ce_quat_to_mat3(q);
    if (getenv("POINT_TRACE") && step % 200 == 0)
      fprintf(stderr, "%d z %.6g vz %.3g vx %.3g w %.3g %.3g %.3g fn %.4g depth %.4g P %.4g %.4g\n", step, box.X_WB.p.z,
              box.V_WB.v.z, box.V_WB.v.x, box.V_WB.w.x, box.V_WB.w.y, box.V_WB.w.z, r.point.normal_force,
              r.point.depth, r.point.point.x - box.X_WB.p.x, r.point.point.y - box.X_WB.p.y);
  }
  cr_assert_eq(r.status, CE_CONTACT_POINT);
  cr_assert(fabs(r.point.normal_force - m * g) < 0.01 * m * g, "settled normal force %.6g N, m g = %.6g N",
            r.point.normal_force, m * g);
  cr_assert(fabs(r.wrench_a.force.z - m * g) < 0.01 * m * g);
  cr_assert(fabs(r.point.depth - 5e-4) < 0.01 * 5e-4, "penetration %.6g m", r.point.depth);
  cr_assert(ce_norm(box.V_WB.v) < 1e-3, "still moving at %g m/s", ce_norm(box.V_WB.v));
  ce_geometry_free(bx);
  ce_geometry_free(h);
}
