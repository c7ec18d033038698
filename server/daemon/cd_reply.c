/* cd_reply.c — engine results to wire messages (on the workers): the
 * conversion of one pair's ce_result to a PairResult, and the exact bound
 * on the memory it takes (so a query's replies can be budgeted before they
 * are built). */
#include "cd_reply.h"

#include <string.h>


/* Every conversion allocation goes through cd_budget_alloc, which rounds up
 * to 16 bytes and takes at least 16; cd_reply_estimate adds the same sizes,
 * so it is exact for the structs below (and an upper bound by design). */
static size_t CD_RA(size_t n) { return ((n ? n : 1) + 15) & ~(size_t)15; }

#define NEW(a, T, init)                                  \
  ({                                                     \
    T *_p = cd_budget_alloc((a), sizeof(T));             \
    if (_p) {                                            \
      T _i = init;                                       \
      *_p = _i;                                          \
    }                                                    \
    _p;                                                  \
  })

static Contactd__V1__Vec3 *vec3(cd_budget *a, ce_vec3 v) {
  Contactd__V1__Vec3 *m = NEW(a, Contactd__V1__Vec3, CONTACTD__V1__VEC3__INIT);
  if (m) {
    m->x = v.x;
    m->y = v.y;
    m->z = v.z;
  }
  return m;
}

static Contactd__V1__Wrench *wrench(cd_budget *a, const ce_wrench *w) {
  Contactd__V1__Wrench *m = NEW(a, Contactd__V1__Wrench, CONTACTD__V1__WRENCH__INIT);
  if (m) {
    m->torque = vec3(a, w->torque);
    m->force = vec3(a, w->force);
    if (!m->torque || !m->force) return NULL;
  }
  return m;
}

static Contactd__V1__Patch *patch(cd_budget *a, const ce_patch *p) {
  Contactd__V1__Patch *m = NEW(a, Contactd__V1__Patch, CONTACTD__V1__PATCH__INIT);
  if (m) {
    m->faces = p->faces;
    m->area = p->area;
    m->normal_force = vec3(a, p->normal_force);
    m->normal_force_magnitude = p->normal_force_magnitude;
    m->point = vec3(a, p->point);
    m->strain_energy = p->strain_energy;
    if (!m->normal_force || !m->point) return NULL;
  }
  return m;
}

static double *flat3(cd_budget *a, const ce_vec3 *v, int32_t n) {
  double *d = cd_budget_alloc(a, (size_t)(n ? n : 1) * 3 * sizeof *d);
  if (d)
    for (int32_t i = 0; i < n; i++) {
      d[3 * i] = v[i].x;
      d[3 * i + 1] = v[i].y;
      d[3 * i + 2] = v[i].z;
    }
  return d;
}

static void *adup(cd_budget *a, const void *src, size_t bytes) {
  void *d = cd_budget_alloc(a, bytes ? bytes : 1);
  if (d && bytes) memcpy(d, src, bytes);
  return d;
}

static int want_surface(const ce_result *r, const ce_options *o) { return o->want_surface && r->surface.nf > 0; }
static int want_patches(const ce_result *r, const ce_options *o) { return o->want_patches && r->npatches > 0; }
static int want_face_contacts(const ce_result *r, const ce_options *o) { return o->want_face_contacts && r->nface_contacts > 0; }
static int want_reduced(const ce_result *r, const ce_options *o) { return o->reduced_contacts > 0 && r->nreduced > 0; }
static int is_speculative(const ce_result *r) { return r->status == CE_CONTACT_SPECULATIVE; }
static int has_penetration(const ce_result *r) { return r->model == CE_MODEL_POINT && r->status == CE_CONTACT_POINT; }

static int want_jacobian(const ce_result *r, const ce_options *o) {
  return o->want_jacobian && r->jacobian_status != CE_JACOBIAN_NOT_REQUESTED;
}

/* The four matrices (36 values each), or only the reason they are missing. */
static Contactd__V1__WrenchJacobian *jacobian(cd_budget *a, const ce_result *r) {
  Contactd__V1__WrenchJacobian *m = NEW(a, Contactd__V1__WrenchJacobian, CONTACTD__V1__WRENCH_JACOBIAN__INIT);
  if (!m) return NULL;
  if (r->jacobian_status != CE_JACOBIAN_OK || !r->jacobian) {
    const char *why = r->jacobian_note ? r->jacobian_note : "no Jacobian for this pair";
    m->unavailable = adup(a, why, strlen(why) + 1);
    return m->unavailable ? m : NULL;
  }
  const ce_jacobian *J = r->jacobian;
  m->n_d_pose_a = m->n_d_pose_b = m->n_d_velocity_a = m->n_d_velocity_b = 36;
  m->d_pose_a = adup(a, J->d_pose_a, sizeof J->d_pose_a);
  m->d_pose_b = adup(a, J->d_pose_b, sizeof J->d_pose_b);
  m->d_velocity_a = adup(a, J->d_velocity_a, sizeof J->d_velocity_a);
  m->d_velocity_b = adup(a, J->d_velocity_b, sizeof J->d_velocity_b);
  if (!m->d_pose_a || !m->d_pose_b || !m->d_velocity_a || !m->d_velocity_b) return NULL;
  return m;
}

static Contactd__V1__Surface *surface(cd_budget *a, const ce_surface *s) {
  Contactd__V1__Surface *m = NEW(a, Contactd__V1__Surface, CONTACTD__V1__SURFACE__INIT);
  if (!m) return NULL;
  int32_t nv = s->nv, nf = s->nf;
  int32_t nfv = nf ? s->face_offsets[nf] : 0;
  m->n_vertices = (size_t)nv * 3;
  m->vertices = flat3(a, s->vertices, nv);
  m->n_pressure = (size_t)nv;
  m->pressure = adup(a, s->pressure, (size_t)nv * sizeof(double));
  m->n_face_offsets = nf ? (size_t)nf + 1 : 0;
  m->face_offsets = adup(a, s->face_offsets, m->n_face_offsets * sizeof(int32_t));
  m->n_face_vertices = (size_t)nfv;
  m->face_vertices = adup(a, s->face_vertices, (size_t)nfv * sizeof(int32_t));
  m->n_normals = (size_t)nf * 3;
  m->normals = flat3(a, s->normal, nf);
  m->n_areas = (size_t)nf;
  m->areas = adup(a, s->area, (size_t)nf * sizeof(double));
  m->n_centroids = (size_t)nf * 3;
  m->centroids = flat3(a, s->centroid, nf);
  m->n_centroid_pressure = (size_t)nf;
  m->centroid_pressure = adup(a, s->centroid_pressure, (size_t)nf * sizeof(double));
  if (s->patch) {
    m->n_patch = (size_t)nf;
    m->patch = adup(a, s->patch, (size_t)nf * sizeof(int32_t));
  }
  if (!m->vertices || !m->pressure || !m->face_offsets || !m->face_vertices || !m->normals || !m->areas ||
      !m->centroids || !m->centroid_pressure || (s->patch && !m->patch))
    return NULL;
  return m;
}

/* The reduced contacts (ReducedContact), 0 or -1 when out of budget. */
static int reduced(cd_budget *a, const ce_result *r, Contactd__V1__PairResult *m) {
  m->reduced_contacts = cd_budget_alloc(a, (size_t)r->nreduced * sizeof *m->reduced_contacts);
  if (!m->reduced_contacts) return -1;
  m->n_reduced_contacts = (size_t)r->nreduced;
  for (int32_t i = 0; i < r->nreduced; i++) {
    const ce_reduced_contact *p = &r->reduced[i];
    Contactd__V1__ReducedContact *rc = NEW(a, Contactd__V1__ReducedContact, CONTACTD__V1__REDUCED_CONTACT__INIT);
    if (!rc) return -1;
    rc->patch = p->patch;
    rc->position = vec3(a, p->position);
    rc->normal = vec3(a, p->normal);
    rc->force = vec3(a, p->force);
    rc->couple = vec3(a, p->couple);
    rc->stiffness = p->stiffness;
    rc->dissipation = p->dissipation;
    rc->separation = p->separation;
    if (!rc->position || !rc->normal || !rc->force || !rc->couple) return -1;
    m->reduced_contacts[i] = rc;
  }
  return 0;
}

size_t cd_reply_estimate(const ce_result *r, const ce_options *o) {
  const size_t v3 = CD_RA(sizeof(Contactd__V1__Vec3));
  const size_t wr = CD_RA(sizeof(Contactd__V1__Wrench)) + 2 * v3;
  const size_t pa = CD_RA(sizeof(Contactd__V1__Patch)) + 2 * v3;
  size_t n = CD_RA(sizeof(Contactd__V1__PairResult)) + 3 * wr + v3 + pa + CD_RA(sizeof(Contactd__V1__Material));
  if (has_penetration(r)) n += CD_RA(sizeof(Contactd__V1__Penetration)) + 3 * v3;
  if (is_speculative(r)) n += CD_RA(sizeof(Contactd__V1__Speculative)) + 2 * v3;
  if (want_jacobian(r, o))
    n += CD_RA(sizeof(Contactd__V1__WrenchJacobian)) + 4 * CD_RA(36 * sizeof(double)) +
         CD_RA(r->jacobian_note ? strlen(r->jacobian_note) + 1 : 32);
  if (want_patches(r, o)) n += CD_RA((size_t)r->npatches * sizeof(void *)) + (size_t)r->npatches * pa;
  if (want_surface(r, o)) {
    const ce_surface *s = &r->surface;
    size_t nv = (size_t)s->nv, nf = (size_t)s->nf, nfv = (size_t)s->face_offsets[s->nf];
    n += CD_RA(sizeof(Contactd__V1__Surface)) + CD_RA(nv * 3 * sizeof(double)) + CD_RA(nv * sizeof(double)) +
         CD_RA((nf + 1) * sizeof(int32_t)) + CD_RA(nfv * sizeof(int32_t)) + 2 * CD_RA(nf * 3 * sizeof(double)) +
         2 * CD_RA(nf * sizeof(double)) + (s->patch ? CD_RA(nf * sizeof(int32_t)) : 0);
  }
  if (want_face_contacts(r, o))
    n += CD_RA((size_t)r->nface_contacts * sizeof(void *)) +
         (size_t)r->nface_contacts * (CD_RA(sizeof(Contactd__V1__PointContact)) + 2 * v3);
  if (want_reduced(r, o))
    n += CD_RA((size_t)r->nreduced * sizeof(void *)) +
         (size_t)r->nreduced * (CD_RA(sizeof(Contactd__V1__ReducedContact)) + 4 * v3);
  return n;
}

Contactd__V1__PairResult *cd_reply_convert(cd_budget *a, const ce_options *o, uint32_t id_a, uint32_t id_b,
                                           const ce_result *r, uint64_t us) {
  Contactd__V1__PairResult *m = NEW(a, Contactd__V1__PairResult, CONTACTD__V1__PAIR_RESULT__INIT);
  if (!m) return NULL;
  m->a = id_a;
  m->b = id_b;
  switch (r->status) {
    case CE_CONTACT_SURFACE: m->status = CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE; break;
    case CE_CONTACT_UNSUPPORTED: m->status = CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_UNSUPPORTED; break;
    case CE_CONTACT_POINT: m->status = CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT; break;
    case CE_CONTACT_SPECULATIVE: m->status = CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SPECULATIVE; break;
    default: m->status = CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_NONE; break;
  }
  switch (r->model) {
    case CE_MODEL_HYDROELASTIC: m->model = CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_HYDROELASTIC; break;
    case CE_MODEL_POINT: m->model = CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT; break;
    default: m->model = CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_HYDROELASTIC_WITH_FALLBACK; break;
  }
  if (has_penetration(r)) {
    Contactd__V1__Penetration *pen = NEW(a, Contactd__V1__Penetration, CONTACTD__V1__PENETRATION__INIT);
    if (!pen) return NULL;
    pen->depth = r->point.depth;
    pen->normal = vec3(a, r->point.normal);
    pen->witness_a = vec3(a, r->point.witness_a);
    pen->witness_b = vec3(a, r->point.witness_b);
    if (!pen->normal || !pen->witness_a || !pen->witness_b) return NULL;
    pen->hull_a = r->point.hull_a != 0;
    pen->hull_b = r->point.hull_b != 0;
    pen->pieces_a = r->point.pieces_a;
    pen->pieces_b = r->point.pieces_b;
    pen->contacts = r->point.pieces_a > 0 || r->point.pieces_b > 0 ? r->point.contacts : 1;
    m->penetration = pen;
  }
  m->wrench_a = wrench(a, &r->wrench_a);
  m->wrench_b = wrench(a, &r->wrench_b);
  m->wrench_a_centroid = wrench(a, &r->wrench_a_centroid);
  m->area = r->area;
  m->centroid = vec3(a, r->centroid);
  m->total = patch(a, &r->total);
  if (!m->wrench_a || !m->wrench_b || !m->wrench_a_centroid || !m->centroid || !m->total) return NULL;
  if (want_patches(r, o)) {
    m->patches = cd_budget_alloc(a, (size_t)r->npatches * sizeof *m->patches);
    if (!m->patches) return NULL;
    m->n_patches = (size_t)r->npatches;
    for (int32_t i = 0; i < r->npatches; i++)
      if (!(m->patches[i] = patch(a, &r->patches[i]))) return NULL;
  }
  if (want_surface(r, o) && !(m->surface = surface(a, &r->surface))) return NULL;
  if (want_jacobian(r, o) && !(m->jacobian = jacobian(a, r))) return NULL;
  if (want_face_contacts(r, o)) {
    m->point_contacts = cd_budget_alloc(a, (size_t)r->nface_contacts * sizeof *m->point_contacts);
    if (!m->point_contacts) return NULL;
    m->n_point_contacts = (size_t)r->nface_contacts;
    for (int32_t i = 0; i < r->nface_contacts; i++) {
      const ce_face_contact *p = &r->face_contacts[i];
      Contactd__V1__PointContact *pc = NEW(a, Contactd__V1__PointContact, CONTACTD__V1__POINT_CONTACT__INIT);
      if (!pc) return NULL;
      pc->face = p->face;
      pc->position = vec3(a, p->position);
      pc->normal = vec3(a, p->normal);
      pc->area = p->area;
      pc->pressure = p->pressure;
      pc->g = p->g;
      pc->stiffness = p->stiffness;
      pc->phi0 = p->phi0;
      if (!pc->position || !pc->normal) return NULL;
      m->point_contacts[i] = pc;
    }
  }
  if (want_reduced(r, o) && reduced(a, r, m) != 0) return NULL;
  if (is_speculative(r)) {
    Contactd__V1__Speculative *sp = NEW(a, Contactd__V1__Speculative, CONTACTD__V1__SPECULATIVE__INIT);
    if (!sp) return NULL;
    sp->separation = r->speculative.separation;
    sp->normal = vec3(a, r->speculative.normal);
    sp->point = vec3(a, r->speculative.point);
    sp->stiffness = r->speculative.stiffness;
    sp->faces = r->speculative.faces;
    if (!sp->normal || !sp->point) return NULL;
    m->speculative = sp;
  }
  m->points_excluded = r->face_contacts_excluded;
  m->candidate_pairs = r->candidate_pairs;
  m->polygons = r->polygons;
  m->faces_dropped = r->faces_dropped;
  m->compute_time_us = us;
  m->combined_modulus = r->combined_modulus;
  m->strain_energy = r->strain_energy;
  _Static_assert((int)CE_ENERGY_EXACT == CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_EXACT &&
                     (int)CE_ENERGY_FORCE_LAW == CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_FORCE_LAW &&
                     (int)CE_ENERGY_UNAVAILABLE == CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_UNAVAILABLE,
                 "engine and wire energy statuses share their numbering");
  m->energy = (Contactd__V1__EnergyStatus)r->energy;
  Contactd__V1__Material *mat = NEW(a, Contactd__V1__Material, CONTACTD__V1__MATERIAL__INIT);
  if (!mat) return NULL;
  mat->dissipation = r->combined_material.dissipation;
  mat->friction = r->combined_material.friction;
  m->combined_material = mat;
  return m;
}
