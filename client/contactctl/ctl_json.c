/* ctl_json.c — contactctl: results as JSON (--json). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

/* A double as the shortest decimal that reads back exactly (cJSON's own
 * printing only round-trips within a relative epsilon); non-finite values
 * as the strings "NaN", "Infinity", "-Infinity" (proto3 JSON). */
cJSON *ctl_jnum(double v) {
  if (isnan(v)) return cJSON_CreateString("NaN");
  if (isinf(v)) return cJSON_CreateString(v > 0 ? "Infinity" : "-Infinity");
  char buf[40];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  return cJSON_CreateRaw(buf);
}

void ctl_jadd(cJSON *o, const char *key, double v) { cJSON_AddItemToObject(o, key, ctl_jnum(v)); }

cJSON *ctl_jarray(const double *a, size_t n) {
  cJSON *arr = cJSON_CreateArray();
  for (size_t i = 0; i < n; i++) cJSON_AddItemToArray(arr, ctl_jnum(a[i]));
  return arr;
}

static cJSON *jvec(const Contactd__V1__Vec3 *v) {
  double a[3] = {v ? v->x : 0, v ? v->y : 0, v ? v->z : 0};
  return ctl_jarray(a, 3);
}

static cJSON *jwrench(const Contactd__V1__Wrench *w) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddItemToObject(o, "torque", jvec(w ? w->torque : NULL));
  cJSON_AddItemToObject(o, "force", jvec(w ? w->force : NULL));
  return o;
}

static cJSON *jpatch(const Contactd__V1__Patch *p) {
  cJSON *o = cJSON_CreateObject();
  ctl_jadd(o, "faces", p ? p->faces : 0);
  ctl_jadd(o, "area", p ? p->area : 0);
  cJSON_AddItemToObject(o, "normal_force", jvec(p ? p->normal_force : NULL));
  ctl_jadd(o, "normal_force_magnitude", p ? p->normal_force_magnitude : 0);
  cJSON_AddItemToObject(o, "point", jvec(p ? p->point : NULL));
  return o;
}

const char *ctl_energy_name(int e) {
  static const char *const n[] = {"unspecified", "exact", "force_law", "unavailable"};
  return e >= 0 && e < 4 ? n[e] : "unknown";
}

/* The strain energies (query --energy) into a pair's JSON object. */
static void add_energy(cJSON *o, const Contactd__V1__PairResult *r) {
  ctl_jadd(o, "strain_energy", r->strain_energy);
  cJSON_AddStringToObject(o, "energy", ctl_energy_name((int)r->energy));
  cJSON *t = cJSON_GetObjectItem(o, "total"), *ps = cJSON_GetObjectItem(o, "patches");
  if (t && r->total) ctl_jadd(t, "strain_energy", r->total->strain_energy);
  for (size_t i = 0; i < r->n_patches; i++)
    ctl_jadd(cJSON_GetArrayItem(ps, (int)i), "strain_energy", r->patches[i]->strain_energy);
}

/* A WrenchJacobian: four 6x6 matrices as arrays of rows, or the reason it
 * is unavailable. */
const char *const CTL_JAC_NAMES[4] = {"d_pose_a", "d_pose_b", "d_velocity_a", "d_velocity_b"};

void ctl_jac_mats(const Contactd__V1__WrenchJacobian *j, const double *m[4], size_t n[4]) {
  m[0] = j->d_pose_a;
  n[0] = j->n_d_pose_a;
  m[1] = j->d_pose_b;
  n[1] = j->n_d_pose_b;
  m[2] = j->d_velocity_a;
  n[2] = j->n_d_velocity_a;
  m[3] = j->d_velocity_b;
  n[3] = j->n_d_velocity_b;
}

/* PairResult.reduced_contacts as "reduced_contacts": [{patch, position, ...}]. */
static void add_reduced(cJSON *o, const Contactd__V1__PairResult *r) {
  cJSON *rc = cJSON_AddArrayToObject(o, "reduced_contacts");
  for (size_t i = 0; i < r->n_reduced_contacts; i++) {
    const Contactd__V1__ReducedContact *p = r->reduced_contacts[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "patch", p->patch);
    cJSON_AddItemToObject(e, "position", jvec(p->position));
    cJSON_AddItemToObject(e, "normal", jvec(p->normal));
    cJSON_AddItemToObject(e, "force", jvec(p->force));
    cJSON_AddItemToObject(e, "couple", jvec(p->couple));
    cJSON_AddNumberToObject(e, "stiffness", p->stiffness);
    cJSON_AddNumberToObject(e, "dissipation", p->dissipation);
    cJSON_AddNumberToObject(e, "separation", p->separation);
    cJSON_AddItemToArray(rc, e);
  }
}

static cJSON *jjacobian(const Contactd__V1__WrenchJacobian *j) {
  cJSON *o = cJSON_CreateObject();
  if (j->unavailable && j->unavailable[0]) cJSON_AddStringToObject(o, "unavailable", j->unavailable);
  const double *m[4];
  size_t n[4];
  ctl_jac_mats(j, m, n);
  for (int k = 0; k < 4; k++) {
    if (n[k] != 36) continue;
    cJSON *rows = cJSON_AddArrayToObject(o, CTL_JAC_NAMES[k]);
    for (int i = 0; i < 6; i++) cJSON_AddItemToArray(rows, cJSON_CreateDoubleArray(m[k] + 6 * i, 6));
  }
  return o;
}

cJSON *ctl_jpair(const cc_scene *s, const Contactd__V1__PairResult *r) {
  char sb[64];
  cJSON *o = cJSON_CreateObject();
  ctl_jadd(o, "a", r->a);
  ctl_jadd(o, "b", r->b);
  if (s) {
    cJSON_AddStringToObject(o, "a_name", cc_scene_body_name(s, r->a));
    cJSON_AddStringToObject(o, "b_name", cc_scene_body_name(s, r->b));
  }
  cJSON_AddStringToObject(o, "status", ctl_status_name(r->status, sb, sizeof sb));
  ctl_jadd(o, "area", r->area);
  cJSON_AddItemToObject(o, "centroid", jvec(r->centroid));
  cJSON_AddItemToObject(o, "wrench_a", jwrench(r->wrench_a));
  cJSON_AddItemToObject(o, "wrench_b", jwrench(r->wrench_b));
  cJSON_AddItemToObject(o, "wrench_a_centroid", jwrench(r->wrench_a_centroid));
  cJSON_AddItemToObject(o, "total", jpatch(r->total));
  cJSON *ps = cJSON_AddArrayToObject(o, "patches");
  for (size_t i = 0; i < r->n_patches; i++) cJSON_AddItemToArray(ps, jpatch(r->patches[i]));
  if (r->n_point_contacts) {
    cJSON *pc = cJSON_AddArrayToObject(o, "point_contacts");
    for (size_t i = 0; i < r->n_point_contacts; i++) {
      const Contactd__V1__PointContact *p = r->point_contacts[i];
      cJSON *e = cJSON_CreateObject();
      ctl_jadd(e, "face", p->face);
      cJSON_AddItemToObject(e, "position", jvec(p->position));
      cJSON_AddItemToObject(e, "normal", jvec(p->normal));
      ctl_jadd(e, "area", p->area);
      ctl_jadd(e, "pressure", p->pressure);
      ctl_jadd(e, "g", p->g);
      ctl_jadd(e, "stiffness", p->stiffness);
      ctl_jadd(e, "phi0", p->phi0);
      cJSON_AddItemToArray(pc, e);
    }
  }
  if (r->n_reduced_contacts) add_reduced(o, r);
  if (r->speculative) {
    cJSON *e = cJSON_AddObjectToObject(o, "speculative");
    cJSON_AddNumberToObject(e, "separation", r->speculative->separation);
    cJSON_AddItemToObject(e, "normal", jvec(r->speculative->normal));
    cJSON_AddItemToObject(e, "point", jvec(r->speculative->point));
    cJSON_AddNumberToObject(e, "stiffness", r->speculative->stiffness);
    cJSON_AddNumberToObject(e, "faces", r->speculative->faces);
  }
  if (r->penetration) {
    cJSON *e = cJSON_AddObjectToObject(o, "penetration");
    ctl_jadd(e, "depth", r->penetration->depth);
    cJSON_AddItemToObject(e, "normal", jvec(r->penetration->normal));
  }
  if (r->energy != CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_UNSPECIFIED) add_energy(o, r);
  if (r->jacobian) cJSON_AddItemToObject(o, "jacobian", jjacobian(r->jacobian));
  ctl_jadd(o, "faces", r->total ? r->total->faces : 0);
  ctl_jadd(o, "compute_time_us", (double)r->compute_time_us);
  return o;
}

void ctl_print_json(cJSON *o) {
  char *t = cJSON_PrintUnformatted(o);
  if (t) {
    puts(t);
    free(t);
  }
  cJSON_Delete(o);
}
