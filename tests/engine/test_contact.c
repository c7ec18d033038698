/* test_contact.c — ce_contact()'s own checks of its input (ce_contact.c):
 * every bad body, option or argument is refused with its code and a message
 * naming the body and what was wrong, the result is left cleared, and the
 * next good query is answered as if nothing had happened (the engine keeps
 * no state between queries). The physics of good queries is in
 * test_physics.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ce_test_util.h"

/* A compliant ball resting 1 cm deep on a rigid floor, and an arena. */
typedef struct ball_on_floor {
  ce_geometry *ball, *floor;
  ce_body A, B;
  ce_arena *arena;
} ball_on_floor;

static ball_on_floor ball_on_floor_make(void) {
  ball_on_floor f;
  f.arena = ce_arena_create(1 << 20);
  f.ball = ce_test_shape(CE_SHAPE_SPHERE, CE_COMPLIANT, 0.05, ce_v3(0, 0, 0), 0.02);
  f.floor = ce_test_shape(CE_SHAPE_HALFSPACE, CE_RIGID, 0, ce_v3(0, 0, 0), 1.0);
  cr_assert(f.arena && f.ball && f.floor);
  f.A = ce_test_body(f.ball, ce_quat_identity(), ce_v3(0, 0, 0.04));
  f.B = ce_test_body(f.floor, ce_quat_identity(), ce_v3(0, 0, 0));
  return f;
}

static void ball_on_floor_free(ball_on_floor *f) {
  ce_geometry_free(f->ball);
  ce_geometry_free(f->floor);
  ce_arena_destroy(f->arena);
}

typedef struct bad_case {
  const char *what;
  int side;                /* 0: body A is bad, 1: body B */
  void (*spoil)(ce_body *);
  ce_errno code;
  const char *message;
} bad_case;

static void no_geometry(ce_body *b) { b->geometry = NULL; }
static void nan_rotation(ce_body *b) { b->X_WB.R.m[1][2] = NAN; }
static void inf_position(ce_body *b) { b->X_WB.p.y = INFINITY; }
static void scaled_rotation(ce_body *b) {
  for (int i = 0; i < 3; i++) b->X_WB.R.m[i][0] *= 1.01;
}
static void reflection(ce_body *b) {
  for (int i = 0; i < 3; i++) b->X_WB.R.m[i][2] = -b->X_WB.R.m[i][2];
}
static void nan_velocity(ce_body *b) { b->V_WB.w.x = NAN; }
static void inf_velocity(ce_body *b) { b->V_WB.v.z = -INFINITY; }
static void negative_dissipation(ce_body *b) { b->material.dissipation = -1; }
static void inf_dissipation(ce_body *b) { b->material.dissipation = INFINITY; }
static void nan_friction(ce_body *b) { b->material.friction = NAN; }

Test(contact, each_bad_body_is_named) {
  static const bad_case cases[] = {
      {"no geometry", 0, no_geometry, CE_EINVAL, "body A: no geometry"},
      {"NaN rotation", 1, nan_rotation, CE_ENONFINITE, "body B: rotation entry (1,2) is not finite"},
      {"infinite position", 0, inf_position, CE_ENONFINITE, "body A: position is not finite"},
      {"scaled rotation", 1, scaled_rotation, CE_EINVAL, "body B: rotation is not orthonormal"},
      {"reflection", 0, reflection, CE_EINVAL, "body A: rotation is a reflection (det < 0)"},
      {"NaN angular velocity", 1, nan_velocity, CE_ENONFINITE, "body B: spatial velocity is not finite"},
      {"infinite linear velocity", 0, inf_velocity, CE_ENONFINITE, "body A: spatial velocity is not finite"},
      {"negative dissipation", 1, negative_dissipation, CE_EINVAL, "body B: dissipation -1 must be finite and >= 0"},
      {"infinite dissipation", 0, inf_dissipation, CE_EINVAL, "body A: dissipation inf must be finite and >= 0"},
      {"NaN friction", 1, nan_friction, CE_EINVAL, "body B: friction nan must be finite and >= 0"},
  };
  ball_on_floor f = ball_on_floor_make();
  ce_arena *ar = f.arena;
  const ce_body A0 = f.A, B0 = f.B;
  ce_result good;
  ce_error err;
  cr_assert_eq(ce_contact(&A0, &B0, NULL, ar, &good, &err), CE_OK, "%s", err.message);
  cr_assert_eq(good.status, CE_CONTACT_SURFACE);
  const double fz = good.wrench_a.force.z;
  cr_assert_gt(fz, 0);
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    ce_body A = A0, B = B0;
    cases[k].spoil(cases[k].side ? &B : &A);
    ce_result r;
    memset(&r, 0x5a, sizeof r);
    memset(&err, 0, sizeof err);
    ce_errno e = ce_contact(&A, &B, NULL, ar, &r, &err);
    cr_expect_eq(e, cases[k].code, "%s: %s, want %s", cases[k].what, ce_errname(e), ce_errname(cases[k].code));
    cr_expect_eq(err.code, cases[k].code, "%s: the error carries its code", cases[k].what);
    cr_expect(strstr(err.message, cases[k].message), "%s: \"%s\" names \"%s\"", cases[k].what, err.message,
              cases[k].message);
    cr_expect_eq(r.status, 0, "%s: the result is cleared", cases[k].what);
    cr_expect_eq(r.surface.nf, 0, "%s: no surface", cases[k].what);
    /* nothing is left behind: the good query gives the same force */
    ce_arena_reset(ar);
    cr_assert_eq(ce_contact(&A0, &B0, NULL, ar, &good, &err), CE_OK, "%s", err.message);
    cr_expect_eq(good.wrench_a.force.z, fz, "%s: the next good query is unchanged", cases[k].what);
  }
  ball_on_floor_free(&f);
}

Test(contact, bad_options_and_arguments_are_named) {
  ball_on_floor f = ball_on_floor_make();
  ce_arena *ar = f.arena;
  const ce_body A = f.A, B = f.B;
  ce_result r;
  ce_error err;
  ce_options o;

  ce_options_default(&o);
  o.representation = (ce_representation)7;
  cr_expect_eq(ce_contact(&A, &B, &o, ar, &r, &err), CE_EINVAL);
  cr_expect(strstr(err.message, "options: representation 7 is neither polygon (0) nor triangle (1)"), "%s",
            err.message);

  ce_options_default(&o);
  o.stiction_tolerance = INFINITY;
  cr_expect_eq(ce_contact(&A, &B, &o, ar, &r, &err), CE_EINVAL);
  cr_expect(strstr(err.message, "options: stiction tolerance is not finite"), "%s", err.message);

  ce_options_default(&o);
  o.model = (ce_contact_model)9;
  cr_expect_eq(ce_contact(&A, &B, &o, ar, &r, &err), CE_EINVAL);
  cr_expect(strstr(err.message, "options: contact model 9 is not"), "%s", err.message);

  cr_expect_eq(ce_contact(&A, &B, NULL, NULL, &r, &err), CE_EINVAL);
  cr_expect(strstr(err.message, "result and arena are required"), "%s", err.message);
  cr_expect_eq(ce_contact(&A, &B, NULL, ar, NULL, &err), CE_EINVAL);
  cr_expect_eq(ce_contact(NULL, &B, NULL, ar, &r, &err), CE_EINVAL);
  cr_expect(strstr(err.message, "body A: no geometry"), "%s", err.message);

  /* a zero (or negative) stiction tolerance means the default, not an error */
  ce_options_default(&o);
  o.stiction_tolerance = 0;
  cr_expect_eq(ce_contact(&A, &B, &o, ar, &r, &err), CE_OK, "%s", err.message);

  /* the error names are one table: every code has its own name and text,
   * and a number outside it says so */
  for (int c = 0; c < CE_ERRNO_COUNT; c++) {
    cr_expect_str_neq(ce_errname((ce_errno)c), "CE_UNKNOWN", "code %d has a name", c);
    cr_expect_str_neq(ce_strerror((ce_errno)c), "unknown error", "code %d has a text", c);
  }
  cr_expect_str_eq(ce_errname(CE_ERRNO_COUNT), "CE_UNKNOWN");
  cr_expect_str_eq(ce_strerror(CE_ERRNO_COUNT), "unknown error");
  ball_on_floor_free(&f);
}
