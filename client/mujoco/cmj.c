/* cmj.c — contactd_mujoco: attach, the MuJoCo callbacks, one query per
 * evaluation, reconnection (cmj.h says what and why). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cmj.h"
#include "cmj_geom.h"
#include "cmj_implicit.h"
#include "cmj_pairs.h"

struct cmj {
  mjModel *m;
  mjData *d;
  cc_client *c;
  cmj_options opt;
  char addr[256], publish[128];
  int ng;              /* mapped geoms */
  int *geom;           /* [ng] MuJoCo geom ids */
  char *is_mapped;     /* [m->ngeom] */
  cmj_geom_spec *spec; /* [ng] */
  char (*id)[CC_ID_MAX];
  int np;
  int (*pair)[2];       /* geom ids */
  uint32_t (*bpair)[2]; /* body ids (index + 1) */
  cc_body *bodies;      /* [ng] */
  cmj_pairs_saved saved;
  Contactd__V1__ContactReply *last;
  cmj_stats st;
  cmj *next;
};

/* Every attachment, found from MuJoCo's global callbacks by model. */
static cmj *attached;
static mjfGeneric prev_passive;
static mjfConFilt prev_filter;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int set_err(cc_error *err, int code, const char *msg) {
  if (err) {
    memset(err, 0, sizeof *err);
    err->code = code;
    snprintf(err->message, sizeof err->message, "%s", msg);
  }
  return code;
}

void cmj_options_default(cmj_options *o) {
  memset(o, 0, sizeof *o);
  o->timeout_ms = 5000;
  o->outage_timeout_ms = 10000;
}

static void event(cmj *x, cmj_event ev, const char *msg) {
  if (x->opt.on_event) x->opt.on_event(x->opt.user, ev, msg);
  else fprintf(stderr, "contactd_mujoco: %s\n", msg);
}

static cmj *find(const mjModel *m) {
  for (cmj *x = attached; x; x = x->next)
    if (x->m == m) return x;
  return NULL;
}

/* ---- registration and connection ---------------------------------------- */

static int register_all(cmj *x, cc_error *err) {
  for (int i = 0; i < x->ng; i++) {
    int rc = cmj_geom_register(x->c, &x->spec[i], x->id[i], err);
    if (rc) return rc;
    x->st.registrations++;
    x->bodies[i].geometry_id = x->id[i];
  }
  return 0;
}

static int connect_and_register(cmj *x, cc_error *err) {
  cc_options co;
  cc_options_default(&co);
  co.timeout_ms = x->opt.timeout_ms;
  co.connect_timeout_ms = x->opt.timeout_ms;
  cc_close(x->c);
  x->c = NULL;
  int rc = cc_connect(x->addr, &co, &x->c, err);
  if (!rc) rc = register_all(x, err);
  return rc;
}

static int unreachable(int rc) { return rc == CC_EUNAVAILABLE || rc == CC_EDEADLINE_EXCEEDED; }

/* Reconnect with backoff until outage_timeout_ms has passed. */
static int reconnect(cmj *x, const cc_error *cause, cc_error *err) {
  char msg[1200];
  x->st.outages++;
  snprintf(msg, sizeof msg, "contactd at %s unreachable (%s: %s); reconnecting for up to %d ms", x->addr,
           cc_code_name(cause->code), cause->message, x->opt.outage_timeout_ms);
  event(x, CMJ_EVENT_OUTAGE, msg);
  double t0 = now(), wait = 0.01;
  int rc;
  for (;;) {
    rc = connect_and_register(x, err);
    if (!rc || !unreachable(rc)) break;
    if (now() - t0 + wait > 1e-3 * x->opt.outage_timeout_ms) break;
    struct timespec ts = {(time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9)};
    nanosleep(&ts, NULL);
    wait = wait * 2 < 0.5 ? wait * 2 : 0.5;
  }
  if (rc) return rc;
  x->st.reconnects++;
  snprintf(msg, sizeof msg, "reconnected to contactd at %s after %.3f s; %d geometries registered again", x->addr,
           now() - t0, x->ng);
  event(x, CMJ_EVENT_RECONNECTED, msg);
  return 0;
}

/* ---- one evaluation ------------------------------------------------------ */

static void fill_bodies(cmj *x, const mjModel *m, mjData *d) {
  for (int i = 0; i < x->ng; i++) {
    int g = x->geom[i];
    cc_body *b = &x->bodies[i];
    mjtNum vel[6];
    memcpy(b->p, d->geom_xpos + 3 * g, sizeof b->p);
    mju_mat2Quat(b->q, d->geom_xmat + 9 * g);
    mj_objectVelocity(m, d, mjOBJ_GEOM, g, vel, 0); /* (rot, lin) at the geom origin, world axes */
    memcpy(b->w, vel, sizeof b->w);
    memcpy(b->v, vel + 3, sizeof b->v);
  }
}

static int query(cmj *x, cc_error *err) {
  Contactd__V1__QueryOptions qo = CONTACTD__V1__QUERY_OPTIONS__INIT;
  qo.detail = CONTACTD__V1__DETAIL__DETAIL_WRENCH;
  qo.stiction_tolerance = x->opt.stiction_tolerance;
  qo.publish = x->publish;
  qo.want_jacobian = x->opt.implicit ? 1 : 0;
  Contactd__V1__ContactReply *rep = NULL;
  double t0 = now();
  int rc = cc_query_bodies(x->c, x->bodies, (size_t)x->ng, (const uint32_t(*)[2])x->bpair, (size_t)x->np, &qo, &rep,
                           err);
  x->st.wait_s += now() - t0;
  if (rc) return rc;
  cc_free(x->last);
  x->last = rep;
  return 0;
}

static void apply(cmj *x, const mjModel *m, mjData *d) {
  const Contactd__V1__ContactReply *r = x->last;
  for (size_t k = 0; k < r->n_results; k++) {
    const Contactd__V1__PairResult *p = r->results[k];
    if (p->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE &&
        p->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT)
      continue;
    const Contactd__V1__Wrench *w[2] = {p->wrench_a, p->wrench_b};
    uint32_t id[2] = {p->a, p->b};
    for (int s = 0; s < 2; s++) {
      if (!w[s] || !w[s]->force || !w[s]->torque || id[s] < 1 || id[s] > (uint32_t)x->ng) continue;
      int g = x->geom[id[s] - 1], body = m->geom_bodyid[g];
      if (body == 0) continue; /* the world does not move */
      mjtNum f[3] = {w[s]->force->x, w[s]->force->y, w[s]->force->z};
      mjtNum t[3] = {w[s]->torque->x, w[s]->torque->y, w[s]->torque->z};
      /* contactd's wrench is about the body (geom) origin: force at that point */
      mj_applyFT(m, d, f, t, d->geom_xpos + 3 * g, body, d->qfrc_passive);
    }
  }
}

static void evaluate(cmj *x, const mjModel *m, mjData *d) {
  if (m->opt.disableflags & mjDSBL_CONTACT || x->np == 0) return;
  double t0 = now();
  cc_error err;
  memset(&err, 0, sizeof err);
  fill_bodies(x, m, d);
  int rc = x->c ? query(x, &err) : set_err(&err, CC_EUNAVAILABLE, "not connected");
  if (rc == CC_ENOT_FOUND) { /* the server lost a geometry: register again, once */
    if (!(rc = register_all(x, &err))) rc = query(x, &err);
  }
  if (unreachable(rc)) {
    cc_error cause = err;
    if (!(rc = reconnect(x, &cause, &err))) rc = query(x, &err);
  }
  if (rc) {
    char msg[900];
    x->st.failed++;
    snprintf(msg, sizeof msg, "no contact for this evaluation (t = %.6f s): %s: %s", d->time, cc_code_name(rc),
             err.message);
    event(x, CMJ_EVENT_FAILED, msg);
  } else {
    x->st.evaluations++;
    apply(x, m, d);
  }
  x->st.eval_s += now() - t0;
}

static void passive_cb(const mjModel *m, mjData *d) {
  if (prev_passive) prev_passive(m, d);
  cmj *x = find(m);
  if (x) evaluate(x, m, d);
}

/* 1 = MuJoCo must not collide g1 and g2. */
static int filter_cb(const mjModel *m, mjData *d, int g1, int g2) {
  cmj *x = find(m);
  if (x && x->is_mapped[g1] && x->is_mapped[g2]) return 1;
  if (prev_filter) return prev_filter(m, d, g1, g2);
  int ct1 = m->geom_contype[g1], ca1 = m->geom_conaffinity[g1];
  int ct2 = m->geom_contype[g2], ca2 = m->geom_conaffinity[g2];
  return !(ct1 & ca2) && !(ct2 & ca1);
}

/* ---- attach ---------------------------------------------------------------- */

static int build(cmj *x, const cmj_map *map, cc_error *err) {
  mjModel *m = x->m;
  char why[512];
  for (size_t i = 0; i < cmj_map_count(map); i++)
    if (mj_name2id(m, mjOBJ_GEOM, cmj_map_name(map, i)) < 0) {
      snprintf(why, sizeof why, "contact map: the model has no geom named '%s'", cmj_map_name(map, i));
      return set_err(err, CC_EINVALID_ARGUMENT, why);
    }
  x->is_mapped = calloc((size_t)m->ngeom + 1, 1);
  x->geom = calloc((size_t)m->ngeom + 1, sizeof *x->geom);
  x->spec = calloc((size_t)m->ngeom + 1, sizeof *x->spec);
  x->id = calloc((size_t)m->ngeom + 1, sizeof *x->id);
  x->bodies = calloc((size_t)m->ngeom + 1, sizeof *x->bodies);
  if (!x->is_mapped || !x->geom || !x->spec || !x->id || !x->bodies) return set_err(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  for (int g = 0; g < m->ngeom; g++) {
    const cmj_props *p = cmj_map_get(map, mj_id2name(m, mjOBJ_GEOM, g));
    if (!p) continue;
    if (cmj_geom_spec_make(m, g, p, &x->spec[x->ng], why, sizeof why)) {
      cmj_geom_spec_free(&x->spec[x->ng]);
      return set_err(err, CC_EINVALID_ARGUMENT, why);
    }
    x->bodies[x->ng].id = (uint32_t)x->ng + 1;
    x->geom[x->ng++] = g;
    x->is_mapped[g] = 1;
  }
  if (cmj_pairs_find(m, x->is_mapped, &x->pair, &x->np, &x->saved)) return set_err(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  x->bpair = calloc((size_t)x->np + 1, sizeof *x->bpair);
  if (!x->bpair) return set_err(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  for (int k = 0; k < x->np; k++)
    for (int s = 0; s < 2; s++)
      for (int i = 0; i < x->ng; i++)
        if (x->geom[i] == x->pair[k][s]) x->bpair[k][s] = (uint32_t)i + 1;
  return 0;
}

static void destroy(cmj *x) {
  if (x->saved.block) cmj_pairs_restore(x->m, &x->saved);
  for (int i = 0; i < x->ng; i++) cmj_geom_spec_free(&x->spec[i]);
  free(x->spec);
  free(x->geom);
  free(x->is_mapped);
  free(x->id);
  free(x->bodies);
  free(x->pair);
  free(x->bpair);
  cc_free(x->last);
  cc_close(x->c);
  free(x);
}

int cmj_attach(mjModel *m, mjData *d, const cmj_map *map, cc_client *client, const cmj_options *opt, cmj **out,
               cc_error *err) {
  *out = NULL;
  if (!m || !d || !map) {
    cc_close(client);
    return set_err(err, CC_EINVALID_ARGUMENT, "cmj_attach: model, data and map are required");
  }
  if (find(m)) {
    cc_close(client);
    return set_err(err, CC_EALREADY_EXISTS, "cmj_attach: this model is attached already");
  }
  cmj *x = calloc(1, sizeof *x);
  if (!x) {
    cc_close(client);
    return set_err(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  }
  x->m = m, x->d = d, x->c = client;
  if (opt) x->opt = *opt;
  else cmj_options_default(&x->opt);
  if (x->opt.timeout_ms == 0) x->opt.timeout_ms = 5000;
  if (x->opt.outage_timeout_ms <= 0) x->opt.outage_timeout_ms = 10000;
  snprintf(x->addr, sizeof x->addr, "%s", x->opt.addr ? x->opt.addr : cc_default_addr());
  snprintf(x->publish, sizeof x->publish, "%s", x->opt.publish ? x->opt.publish : "");
  x->opt.addr = x->addr;
  size_t np = strlen(x->publish);
  if (x->opt.publish && (np < 1 || np > 64 || strspn(x->publish, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") != np)) {
    destroy(x);
    return set_err(err, CC_EINVALID_ARGUMENT, "cmj_options.publish: 1 to 64 characters of A-Z, a-z, 0-9, '_', '-', '.'");
  }
  int rc = build(x, map, err);
  if (!rc) rc = x->c ? register_all(x, err) : connect_and_register(x, err);
  if (rc) {
    destroy(x);
    return rc;
  }
  if (!attached) {
    prev_passive = mjcb_passive;
    prev_filter = mjcb_contactfilter;
    mjcb_passive = passive_cb;
    mjcb_contactfilter = filter_cb;
  }
  x->next = attached;
  attached = x;
  *out = x;
  return 0;
}

void cmj_detach(cmj *x) {
  if (!x) return;
  for (cmj **p = &attached; *p; p = &(*p)->next)
    if (*p == x) {
      *p = x->next;
      break;
    }
  if (!attached) {
    mjcb_passive = prev_passive;
    mjcb_contactfilter = prev_filter;
    prev_passive = NULL;
    prev_filter = NULL;
  }
  destroy(x);
}

/* ---- stepping and results -------------------------------------------------- */

int cmj_step(cmj *x, cc_error *err) {
  mjModel *m = x->m;
  mjData *d = x->d;
  size_t nq = (size_t)m->nq, nv = (size_t)m->nv, na = (size_t)m->na;
  mjtNum *save = malloc((1 + nq + nv + na + nv) * sizeof *save);
  if (!save) return set_err(err, CC_ERESOURCE_EXHAUSTED, "out of memory");
  save[0] = d->time;
  memcpy(save + 1, d->qpos, nq * sizeof *save);
  memcpy(save + 1 + nq, d->qvel, nv * sizeof *save);
  memcpy(save + 1 + nq + nv, d->act, na * sizeof *save);
  memcpy(save + 1 + nq + nv + na, d->qacc_warmstart, nv * sizeof *save);
  long failed = x->st.failed;
  char why[200] = "";
  int bad = 0;
  if (x->opt.implicit) {
    mj_forward(m, d);
    bad = x->st.failed != failed || cmj_implicit_step(m, d, x->last, x->geom, x->ng, why, sizeof why);
  } else {
    mj_step(m, d);
    bad = x->st.failed != failed;
  }
  int rc = 0;
  if (bad) {
    d->time = save[0];
    memcpy(d->qpos, save + 1, nq * sizeof *save);
    memcpy(d->qvel, save + 1 + nq, nv * sizeof *save);
    memcpy(d->act, save + 1 + nq + nv, na * sizeof *save);
    memcpy(d->qacc_warmstart, save + 1 + nq + nv + na, nv * sizeof *save);
    char msg[400];
    snprintf(msg, sizeof msg, "step at t = %.6f s not taken: %s (state restored)", d->time,
             why[0] ? why : "contactd gave no contact");
    rc = set_err(err, CC_EUNAVAILABLE, msg);
  }
  free(save);
  return rc;
}

void cmj_get_stats(const cmj *x, cmj_stats *s) { *s = x->st; }
int cmj_ngeom(const cmj *x) { return x->ng; }
int cmj_geom(const cmj *x, int i) { return i >= 0 && i < x->ng ? x->geom[i] : -1; }
int cmj_npair(const cmj *x) { return x->np; }

void cmj_pair(const cmj *x, int i, int *g1, int *g2) {
  *g1 = i >= 0 && i < x->np ? x->pair[i][0] : -1;
  *g2 = i >= 0 && i < x->np ? x->pair[i][1] : -1;
}

const char *cmj_geometry_id(const cmj *x, int g) {
  for (int i = 0; i < x->ng; i++)
    if (x->geom[i] == g) return x->id[i];
  return NULL;
}

const Contactd__V1__ContactReply *cmj_last_reply(const cmj *x) { return x->last; }

int cmj_geom_wrench(const cmj *x, int g, double force[3], double torque[3]) {
  int touching = 0;
  memset(force, 0, 3 * sizeof *force);
  memset(torque, 0, 3 * sizeof *torque);
  if (!x->last) return 0;
  for (size_t k = 0; k < x->last->n_results; k++) {
    const Contactd__V1__PairResult *p = x->last->results[k];
    if (p->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE &&
        p->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT)
      continue;
    const Contactd__V1__Wrench *w = NULL;
    if (p->a >= 1 && p->a <= (uint32_t)x->ng && x->geom[p->a - 1] == g) w = p->wrench_a;
    else if (p->b >= 1 && p->b <= (uint32_t)x->ng && x->geom[p->b - 1] == g) w = p->wrench_b;
    if (!w || !w->force || !w->torque) continue;
    touching++;
    force[0] += w->force->x, force[1] += w->force->y, force[2] += w->force->z;
    torque[0] += w->torque->x, torque[1] += w->torque->y, torque[2] += w->torque->z;
  }
  return touching;
}
