/* cmj.h — contactd_mujoco: MuJoCo's contact between chosen geoms computed by
 * contactd (hydroelastic contact, docs/physics.md) over the wire.
 *
 *   mjModel *m = mj_loadXML("scene.xml", NULL, why, sizeof why);
 *   mjData *d = mj_makeData(m);
 *   cmj_map *map = cmj_map_new();
 *   cmj_map_load(map, "scene.contact.json", why, sizeof why);  // geom name -> properties
 *   cmj_options o;
 *   cmj_options_default(&o);
 *   o.addr = "unix:/run/contactd.sock";
 *   cmj *x;
 *   cc_error err;
 *   if (cmj_attach(m, d, map, NULL, &o, &x, &err)) { ...err.message... }
 *   while (...) if (cmj_step(x, &err)) { ...outage past o.outage_timeout_ms... }
 *   cmj_detach(x);
 *
 * What it does (docs/mujoco.md):
 *  - Each mapped geom is registered with contactd as the geometry of its
 *    MuJoCo type and size (sphere, capsule, ellipsoid, cylinder, box as
 *    primitives; plane as a half space; mesh as a rigid or compliant
 *    triangle mesh; hfield as a rigid height field) and becomes one contactd
 *    body whose frame is the geom frame.
 *  - The pairs of mapped geoms that MuJoCo would collide (contype and
 *    conaffinity, <exclude>, the parent filter, <pair>) are computed once at
 *    attach. MuJoCo's own contact for exactly those pairs is switched off:
 *    dynamic pairs through mjcb_contactfilter (which otherwise applies
 *    MuJoCo's bitmask rule, or the filter installed before), explicit
 *    <pair> elements by taking them out of m's pair list (restored by
 *    cmj_detach). Pairs with an unmapped geom keep MuJoCo's contact.
 *  - mjcb_passive: every evaluation of the dynamics (one per Euler or
 *    implicit step, four per RK4 step) sends one ContactQuery with every
 *    mapped geom's pose (geom_xpos, geom_xmat) and spatial velocity
 *    (mj_objectVelocity at the geom origin) and adds each returned wrench to
 *    qfrc_passive with mj_applyFT at the geom origin of its body: exactly
 *    the point contactd's wrench is taken about.
 *  - Failure: a query that fails because contactd is unreachable makes the
 *    library reconnect (backoff from 10 ms to 0.5 s) and register every
 *    geometry again, for up to outage_timeout_ms, inside the evaluation, so
 *    a step either gets its contact or is reported failed; each outage and
 *    reconnection is reported through on_event. A geometry the server lost
 *    (NOT_FOUND) is registered again on the same connection. An evaluation
 *    that still fails adds nothing and is counted; cmj_step then restores
 *    the state from before the step and returns the error.
 *
 * The callbacks are MuJoCo's globals: one attachment per mjModel (found by
 * its address), any number of models. Not thread-safe: attach, step and
 * detach from one thread. */
#ifndef CMJ_H
#define CMJ_H

#include <stddef.h>

#include <mujoco/mujoco.h>

#include "cc_client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Hydroelastic properties of one geom. */
typedef struct cmj_props {
  int rigid;          /* 1 = rigid, 0 = compliant */
  double modulus;     /* hydroelastic modulus E, Pa (compliant) */
  double dissipation; /* Hunt-Crossley d, s/m */
  double friction;    /* Coulomb mu */
  double hint;        /* resolution hint, m (compliant primitives; tet edge length of compliant meshes) */
  double slab;        /* compliant plane: slab thickness, m (0 = server default) */
} cmj_props;

/* geom name -> cmj_props. */
typedef struct cmj_map cmj_map;
cmj_map *cmj_map_new(void);
void cmj_map_free(cmj_map *mp);
/* Set (or replace) the properties of the geom called name; 0, or -1 with
 * the reason in why[n]. */
int cmj_map_set(cmj_map *mp, const char *name, const cmj_props *p, char *why, size_t n);
/* The properties of name, or NULL. */
const cmj_props *cmj_map_get(const cmj_map *mp, const char *name);
size_t cmj_map_count(const cmj_map *mp);
const char *cmj_map_name(const cmj_map *mp, size_t i);
/* JSON text: {"geoms": {"NAME": {"compliance": "rigid"|"compliant",
 * "modulus": Pa, "dissipation": s/m, "friction": mu, "hint": m,
 * "slab": m}, ...}}; unknown keys are errors. 0, or -1 with the reason. */
int cmj_map_parse(cmj_map *mp, const char *json, char *why, size_t n);
/* The same from a file. */
int cmj_map_load(cmj_map *mp, const char *path, char *why, size_t n);

typedef enum cmj_event {
  CMJ_EVENT_OUTAGE = 1,   /* a query failed: contactd unreachable; reconnecting */
  CMJ_EVENT_RECONNECTED,  /* connected again and every geometry registered again */
  CMJ_EVENT_FAILED,       /* an evaluation got no contact (message says why) */
} cmj_event;
typedef void (*cmj_event_fn)(void *user, cmj_event ev, const char *message);

typedef struct cmj_options {
  const char *addr;          /* contactd address (connect and reconnect); NULL = cc_default_addr() */
  const char *publish;       /* viewer scene name (docs/viewer.md); NULL = not published */
  double stiction_tolerance; /* regularised friction v_s, m/s; 0 = server default (1e-4) */
  int timeout_ms;            /* per reply; default 5000 */
  int outage_timeout_ms;     /* how long one evaluation keeps reconnecting; default 10000 */
  int implicit;              /* 1 = cmj_step takes contact implicitly (wrench Jacobians; see cmj_step) */
  cmj_event_fn on_event;     /* may be NULL (then events go to stderr) */
  void *user;
} cmj_options;

void cmj_options_default(cmj_options *o);

typedef struct cmj cmj;

/* Attach contactd to m and d. client: a connection the library takes over
 * (closed by cmj_detach, replaced on reconnect), or NULL to connect to
 * opt->addr. Every map entry must name a geom of m. Fails with a message
 * naming the geom for a type or size contactd cannot take. m's pair list
 * loses the <pair> elements between mapped geoms until cmj_detach. */
int cmj_attach(mjModel *m, mjData *d, const cmj_map *map, cc_client *client, const cmj_options *opt,
               cmj **out, cc_error *err);
/* Detach: callbacks and m's pairs restored, connection closed (NULL is fine). */
void cmj_detach(cmj *x);

/* One time step. Default: mj_step(m, d) with the model's integrator, the
 * contact an explicit force. With opt->implicit: mj_forward, whose query
 * also asks for the wrench Jacobians, then a semi-implicit Euler step with
 * the contact force linearised in the new velocity and position
 * (cmj_implicit.c): no step-size bound from the contact's damping, friction
 * regularisation or stiffness; the model's integrator setting is not used.
 * When an evaluation got no contact, d's state (time, qpos, qvel, act,
 * warm start) is put back as before the step and the error returned (the
 * step can be retried). */
int cmj_step(cmj *x, cc_error *err);

typedef struct cmj_stats {
  long evaluations;   /* queries answered */
  long failed;        /* evaluations that got no contact */
  long outages;       /* times contactd was found unreachable */
  long reconnects;    /* successful reconnections */
  long registrations; /* geometry registrations sent (attach included) */
  double wait_s;      /* wall time inside the queries (request to reply) */
  double eval_s;      /* wall time inside the callback (poses, query, wrenches) */
} cmj_stats;
void cmj_get_stats(const cmj *x, cmj_stats *s);

/* Mapped geoms: count, and the MuJoCo geom id of the i-th (its contactd
 * body id is i + 1). */
int cmj_ngeom(const cmj *x);
int cmj_geom(const cmj *x, int i);
/* The contactd geometry id of geom g, or NULL when g is not mapped. */
const char *cmj_geometry_id(const cmj *x, int g);
/* The pairs sent each evaluation, as MuJoCo geom ids. */
int cmj_npair(const cmj *x);
void cmj_pair(const cmj *x, int i, int *g1, int *g2);
/* The reply of the latest evaluation (NULL before the first): its
 * PairResult.a and .b are body ids (cmj_geom(x, id - 1)). */
const Contactd__V1__ContactReply *cmj_last_reply(const cmj *x);
/* Sum of the contact forces on geom g (world, N) and their torque about the
 * geom origin in the latest evaluation; returns the number of touching pairs. */
int cmj_geom_wrench(const cmj *x, int g, double force[3], double torque[3]);

#ifdef __cplusplus
}
#endif
#endif /* CMJ_H */
