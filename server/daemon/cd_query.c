/* cd_query.c — query input checks, splitting across the pool, and the
 * conversion of engine results to wire messages (on the workers). */
#include "cd_query.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cd_broadphase.h"
#include "cd_conn.h"
#include "cd_pool.h"
#include "cd_server.h"

typedef struct cd_qjob {
  cd_job job;
  cd_query *q;
  int64_t first, count;
  cd_budget out; /* wire messages of this job's results */
  cd_status err;
  int64_t err_pair;
} cd_qjob;

/* ---- input ------------------------------------------------------------- */

static int finite3(const Contactd__V1__Vec3 *v) {
  return !v || (isfinite(v->x) && isfinite(v->y) && isfinite(v->z));
}

int cd_pose_from_msg(const Contactd__V1__Pose *p, ce_pose *out, const char *field, const char *what,
                     cd_status *st) {
  ce_quat q = {1, 0, 0, 0};
  ce_vec3 x = {0, 0, 0};
  char f[192];
  if (p && p->position) {
    if (!finite3(p->position)) {
      snprintf(f, sizeof f, "%s.position", field);
      return cd_status_set(st, CD_INVALID, f, "%s: position (%g, %g, %g) is not finite", what, p->position->x,
                           p->position->y, p->position->z);
    }
    x = (ce_vec3){p->position->x, p->position->y, p->position->z};
  }
  if (p && p->orientation) {
    const Contactd__V1__Quat *o = p->orientation;
    snprintf(f, sizeof f, "%s.orientation", field);
    if (!(isfinite(o->w) && isfinite(o->x) && isfinite(o->y) && isfinite(o->z)))
      return cd_status_set(st, CD_INVALID, f, "%s: quaternion (%g, %g, %g, %g) is not finite", what, o->w, o->x,
                           o->y, o->z);
    double n = sqrt(o->w * o->w + o->x * o->x + o->y * o->y + o->z * o->z);
    if (!(fabs(n - 1) <= CD_QUAT_TOLERANCE))
      return cd_status_set(st, CD_INVALID, f,
                           "%s: quaternion norm %.6g is not within %g of 1 (quaternions are normalised only "
                           "when |q| is in [%g, %g])",
                           what, n, CD_QUAT_TOLERANCE, 1 - CD_QUAT_TOLERANCE, 1 + CD_QUAT_TOLERANCE);
    q = (ce_quat){o->w / n, o->x / n, o->y / n, o->z / n};
  }
  *out = ce_pose_from_quat(q, x);
  return 0;
}

int cd_velocity_from_msg(const Contactd__V1__SpatialVelocity *v, ce_spatial_velocity *out, const char *field,
                         const char *what, cd_status *st) {
  memset(out, 0, sizeof *out);
  if (!v) return 0;
  if (!finite3(v->angular) || !finite3(v->linear))
    return cd_status_set(st, CD_INVALID, field, "%s: spatial velocity is not finite", what);
  if (v->angular) out->w = (ce_vec3){v->angular->x, v->angular->y, v->angular->z};
  if (v->linear) out->v = (ce_vec3){v->linear->x, v->linear->y, v->linear->z};
  return 0;
}

static void body_name(const Contactd__V1__Body *b, char *out, size_t n) {
  if (b->name && b->name[0]) snprintf(out, n, "body %u (%.40s)", b->body_id, b->name);
  else snprintf(out, n, "body %u", b->body_id);
}

void cd_qbodies_unpin(cd_qbody *b, int32_t n) {
  cd_cache *c = NULL;
  for (int32_t i = 0; i < n; i++)
    if (b[i].entry) {
      if (!c) cd_cache_lock(c = b[i].entry->cache); /* once for all of them, not once each */
      cd_cache_unpin(b[i].entry);
      b[i].entry = NULL;
    }
  if (c) cd_cache_unlock(c);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int cd_qindex_build(cd_qindex *x, const cd_qbody *b, int32_t nb) {
  x->n = 0;
  x->e = malloc((nb > 0 ? (size_t)nb : 1) * sizeof *x->e);
  if (!x->e) return -1;
  for (int32_t i = 0; i < nb; i++) x->e[i] = (cd_qindex_ent){b[i].id, i};
  x->n = nb;
  qsort(x->e, (size_t)nb, sizeof *x->e, cmp_u32); /* id is the first member */
  return 0;
}

int32_t cd_qindex_find(const cd_qindex *x, uint32_t id) {
  cd_qindex_ent key = {id, 0};
  const cd_qindex_ent *f = x->n > 0 ? bsearch(&key, x->e, (size_t)x->n, sizeof *x->e, cmp_u32) : NULL;
  return f ? f->i : -1;
}

void cd_qindex_free(cd_qindex *x) {
  free(x->e);
  x->e = NULL;
  x->n = 0;
}

int cd_qbodies_parse(cd_server *s, Contactd__V1__Body **in, size_t n, const char *field, cd_qbody **out,
                     cd_status *st) {
  const cd_limits *l = &s->cfg.limits;
  *out = NULL;
  if (n > l->max_bodies_per_query)
    return cd_status_set(st, CD_EXHAUSTED, field, "%zu bodies exceed the limit of %llu (max_bodies_per_query)", n,
                         (unsigned long long)l->max_bodies_per_query);
  cd_qbody *b = calloc(n ? n : 1, sizeof *b);
  uint32_t *ids = malloc((n ? n : 1) * sizeof *ids);
  if (!b || !ids) {
    free(b);
    free(ids);
    return cd_status_set(st, CD_EXHAUSTED, field, "out of memory");
  }
  char f[192], what[96];
  int rc = 0;
  size_t i;
  /* Finding each entry and pinning it is one step for the other loops (one
   * could evict an unpinned entry, or complete a pending one, in between). */
  cd_cache_lock(s->cache);
  for (i = 0; i < n; i++) {
    const Contactd__V1__Body *m = in[i];
    body_name(m, what, sizeof what);
    cd_qbody *q = &b[i];
    q->id = m->body_id;
    ids[i] = m->body_id;
    snprintf(f, sizeof f, "%s[%zu].geometryId", field, i);
    cd_cache_entry *e = cd_cache_find(s->cache, m->geometry_id);
    if (!e || e->state != CD_ENTRY_READY) {
      rc = cd_status_set(st, CD_NOT_FOUND, f, "%s: geometry \"%.64s\" is %s", what, m->geometry_id,
                         e ? "still being built" : "not registered");
      break;
    }
    q->body.geometry = e->geometry;
    q->body.point_stiffness = e->point_stiffness;
    snprintf(f, sizeof f, "%s[%zu].pose", field, i);
    if ((rc = cd_pose_from_msg(m->pose, &q->body.X_WB, f, what, st))) break;
    snprintf(f, sizeof f, "%s[%zu].velocity", field, i);
    if ((rc = cd_velocity_from_msg(m->velocity, &q->body.V_WB, f, what, st))) break;
    /* The geometry's material unless overridden. */
    if (m->material) {
      snprintf(f, sizeof f, "%s[%zu].material", field, i);
      if (!(isfinite(m->material->dissipation) && m->material->dissipation >= 0) ||
          !(isfinite(m->material->friction) && m->material->friction >= 0)) {
        rc = cd_status_set(st, CD_INVALID, f, "%s: dissipation %g and friction %g must be finite and >= 0", what,
                           m->material->dissipation, m->material->friction);
        break;
      }
      q->body.material = (ce_material){m->material->dissipation, m->material->friction};
    } else {
      q->body.material = e->material;
    }
    q->group = m->filter ? m->filter->group : 0xffffffffu;
    q->mask = m->filter ? m->filter->mask : 0xffffffffu;
    q->entry = e;
    cd_cache_pin(e);
  }
  cd_cache_unlock(s->cache);
  if (!rc && n > 1) {
    qsort(ids, n, sizeof *ids, cmp_u32);
    for (size_t k = 1; k < n; k++)
      if (ids[k] == ids[k - 1]) {
        rc = cd_status_set(st, CD_INVALID, field, "body id %u appears more than once", ids[k]);
        break;
      }
  }
  free(ids);
  if (rc) {
    cd_qbodies_unpin(b, (int32_t)n);
    free(b);
    return rc;
  }
  *out = b;
  return 0;
}

int cd_model_from_wire(int m) {
  switch (m) {
    case CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_UNSPECIFIED:
    case CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_HYDROELASTIC_WITH_FALLBACK:
      return CE_MODEL_HYDROELASTIC_WITH_FALLBACK;
    case CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_HYDROELASTIC: return CE_MODEL_HYDROELASTIC;
    case CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT: return CE_MODEL_POINT;
    default: return -1;
  }
}

int cd_qopts_parse(const Contactd__V1__QueryOptions *o, const char *field, cd_qopts *out, cd_status *st) {
  ce_options_default(&out->ce);
  out->publish[0] = 0;
  if (!o) return 0;
  char f[160];
  switch (o->representation) {
    case CONTACTD__V1__REPRESENTATION__REPRESENTATION_UNSPECIFIED:
    case CONTACTD__V1__REPRESENTATION__REPRESENTATION_POLYGON:
      out->ce.representation = CE_REPRESENTATION_POLYGON;
      break;
    case CONTACTD__V1__REPRESENTATION__REPRESENTATION_TRIANGLE:
      out->ce.representation = CE_REPRESENTATION_TRIANGLE;
      break;
    default:
      snprintf(f, sizeof f, "%s.representation", field);
      return cd_status_set(st, CD_INVALID, f, "unknown representation %d", (int)o->representation);
  }
  switch (o->detail) {
    case CONTACTD__V1__DETAIL__DETAIL_UNSPECIFIED:
    case CONTACTD__V1__DETAIL__DETAIL_WRENCH: break;
    case CONTACTD__V1__DETAIL__DETAIL_SURFACE: out->ce.want_surface = 1; /* fall through */
    case CONTACTD__V1__DETAIL__DETAIL_PATCHES: out->ce.want_patches = 1; break;
    default:
      snprintf(f, sizeof f, "%s.detail", field);
      return cd_status_set(st, CD_INVALID, f, "unknown detail %d", (int)o->detail);
  }
  out->ce.want_points = o->point_contacts ? 1 : 0;
  out->ce.want_jacobian = o->want_jacobian ? 1 : 0;
  if (!isfinite(o->stiction_tolerance)) {
    snprintf(f, sizeof f, "%s.stictionTolerance", field);
    return cd_status_set(st, CD_INVALID, f, "must be finite (got %g)", o->stiction_tolerance);
  }
  if (o->stiction_tolerance > 0) out->ce.stiction_tolerance = o->stiction_tolerance;
  int m = cd_model_from_wire((int)o->contact_model);
  if (m < 0) {
    snprintf(f, sizeof f, "%s.contactModel", field);
    return cd_status_set(st, CD_INVALID, f, "unknown contact model %d", (int)o->contact_model);
  }
  out->ce.model = (ce_contact_model)m;
  out->ce.want_energy = o->want_energy ? 1 : 0;
  out->publish[0] = 0;
  if (o->publish && o->publish[0]) {
    if (!cd_pub_name_ok(o->publish)) {
      snprintf(f, sizeof f, "%s.publish", field);
      return cd_status_set(st, CD_INVALID, f,
                           "scene name \"%.80s\" must be 1 to %d characters of A-Z, a-z, 0-9, '_', '-' and '.'",
                           o->publish, CD_PUB_NAME_MAX);
    }
    snprintf(out->publish, sizeof out->publish, "%s", o->publish);
  }
  return 0;
}

int cd_qpairs_resolve(const cd_qbody *b, int32_t nb, Contactd__V1__Pair **pairs, size_t npairs,
                      const Contactd__V1__AllPairs *all, const char *field, uint64_t max_pairs, cd_qpair **out,
                      int64_t *nout, cd_status *st) {
  char f[192];
  *out = NULL;
  *nout = 0;
  if (all && npairs) {
    snprintf(f, sizeof f, "%s.pairs", field);
    return cd_status_set(st, CD_INVALID, f, "give either pairs or allPairs, not both");
  }
  if (all) {
    if (!(isfinite(all->margin) && all->margin >= 0)) {
      snprintf(f, sizeof f, "%s.allPairs.margin", field);
      return cd_status_set(st, CD_INVALID, f, "must be finite and >= 0 (got %g)", all->margin);
    }
    cd_qindex m;
    cd_qpair *ex = calloc(all->n_exclude ? all->n_exclude : 1, sizeof *ex);
    if (!ex || cd_qindex_build(&m, b, nb)) {
      free(ex);
      return cd_status_set(st, CD_EXHAUSTED, field, "out of memory");
    }
    for (size_t i = 0; i < all->n_exclude; i++) {
      int32_t ia = cd_qindex_find(&m, all->exclude[i]->a), ib = cd_qindex_find(&m, all->exclude[i]->b);
      if (ia < 0 || ib < 0) {
        free(ex);
        cd_qindex_free(&m);
        snprintf(f, sizeof f, "%s.allPairs.exclude[%zu]", field, i);
        return cd_status_set(st, CD_INVALID, f, "body %u is not in the query",
                             ia < 0 ? all->exclude[i]->a : all->exclude[i]->b);
      }
      ex[i] = (cd_qpair){ia, ib, 0};
    }
    cd_qindex_free(&m);
    snprintf(f, sizeof f, "%s.allPairs", field);
    int rc = cd_broadphase(b, nb, all->margin, ex, all->n_exclude, max_pairs, f, out, nout, st);
    free(ex);
    return rc;
  }
  snprintf(f, sizeof f, "%s.pairs", field);
  if (npairs > max_pairs)
    return cd_status_set(st, CD_EXHAUSTED, f, "%zu pairs exceed the limit of %llu (max_pairs_per_query)", npairs,
                         (unsigned long long)max_pairs);
  cd_qpair *p = calloc(npairs ? npairs : 1, sizeof *p);
  if (!p) return cd_status_set(st, CD_EXHAUSTED, f, "out of memory");
  cd_qindex m;
  if (cd_qindex_build(&m, b, nb)) {
    free(p);
    return cd_status_set(st, CD_EXHAUSTED, f, "out of memory");
  }
  for (size_t i = 0; i < npairs; i++) {
    const Contactd__V1__Pair *q = pairs[i];
    int model = cd_model_from_wire((int)q->contact_model);
    if (model < 0) {
      free(p);
      cd_qindex_free(&m);
      snprintf(f, sizeof f, "%s.pairs[%zu].contactModel", field, i);
      return cd_status_set(st, CD_INVALID, f, "unknown contact model %d", (int)q->contact_model);
    }
    int32_t fa = cd_qindex_find(&m, q->a), fb = cd_qindex_find(&m, q->b);
    if (fa < 0 || fb < 0 || q->a == q->b) {
      free(p);
      cd_qindex_free(&m);
      snprintf(f, sizeof f, "%s.pairs[%zu]", field, i);
      if (q->a == q->b) return cd_status_set(st, CD_INVALID, f, "pairs body %u with itself", q->a);
      return cd_status_set(st, CD_INVALID, f, "body %u is not in the query", fa < 0 ? q->a : q->b);
    }
    p[i] = (cd_qpair){fa, fb,
                      q->contact_model == CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_UNSPECIFIED ? 0 : model + 1};
  }
  cd_qindex_free(&m);
  *out = p;
  *nout = (int64_t)npairs;
  return 0;
}

/* ---- results to wire messages (worker) ---------------------------------- */

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
static int want_points(const ce_result *r, const ce_options *o) { return o->want_points && r->npoints > 0; }
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

size_t cd_reply_estimate(const ce_result *r, const ce_options *o) {
  const size_t v3 = CD_RA(sizeof(Contactd__V1__Vec3));
  const size_t wr = CD_RA(sizeof(Contactd__V1__Wrench)) + 2 * v3;
  const size_t pa = CD_RA(sizeof(Contactd__V1__Patch)) + 2 * v3;
  size_t n = CD_RA(sizeof(Contactd__V1__PairResult)) + 3 * wr + v3 + pa + CD_RA(sizeof(Contactd__V1__Material));
  if (has_penetration(r)) n += CD_RA(sizeof(Contactd__V1__Penetration)) + 3 * v3;
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
  if (want_points(r, o))
    n += CD_RA((size_t)r->npoints * sizeof(void *)) +
         (size_t)r->npoints * (CD_RA(sizeof(Contactd__V1__PointContact)) + 2 * v3);
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
  if (want_points(r, o)) {
    m->point_contacts = cd_budget_alloc(a, (size_t)r->npoints * sizeof *m->point_contacts);
    if (!m->point_contacts) return NULL;
    m->n_point_contacts = (size_t)r->npoints;
    for (int32_t i = 0; i < r->npoints; i++) {
      const ce_point_contact *p = &r->points[i];
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
  m->points_excluded = r->points_excluded;
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

const char *cd_fmt_bytes(char *out, size_t n, uint64_t bytes) {
  if (bytes >= CD_MIB) snprintf(out, n, "%.1f MiB", (double)bytes / (double)CD_MIB);
  else if (bytes >= 1024) snprintf(out, n, "%.1f KiB", (double)bytes / 1024.0);
  else snprintf(out, n, "%llu bytes", (unsigned long long)bytes);
  return out;
}

/* Add `need` to *counter unless that would pass limit (0 = none); 0 on
 * success, else -1 with *held = what the counter held. */
static int reserve_bytes(atomic_size_t *counter, size_t need, size_t limit, size_t *held) {
  size_t cur = atomic_load_explicit(counter, memory_order_relaxed);
  do {
    *held = cur;
    if (limit && (need > limit || cur > limit - need)) return -1;
  } while (!atomic_compare_exchange_weak_explicit(counter, &cur, cur + need, memory_order_relaxed,
                                                  memory_order_relaxed));
  return 0;
}

/* Reserve `need` bytes of the query's reply budget (max_reply_bytes) and of
 * the server's (reply_memory_bytes, released by cd_query_free); 0 on
 * success, else 1 (the query's) or 2 (the server's) with *held = what that
 * budget held. */
static int reserve_reply(cd_query *q, size_t need, size_t *held) {
  const cd_limits *l = &q->srv->cfg.limits;
  if (reserve_bytes(&q->reply_bytes, need, (size_t)l->max_reply_bytes, held)) return 1;
  if (reserve_bytes(&q->srv->reply_bytes, need, (size_t)l->reply_memory_bytes, held)) {
    atomic_fetch_sub_explicit(&q->reply_bytes, need, memory_order_relaxed);
    return 2;
  }
  return 0;
}

static void qjob_run(cd_job *job, cd_worker *w) {
  cd_qjob *j = (cd_qjob *)job;
  cd_query *q = j->q;
  /* The reservation bounds what the results use; the chunks themselves are
   * unbudgeted (0) so a pair's structs never fail half-way once reserved. */
  cd_budget_init(&j->out, 0);
  for (int64_t i = j->first; i < j->first + j->count; i++) {
    if (q->cancelled && atomic_load_explicit(q->cancelled, memory_order_relaxed)) {
      cd_status_set(&j->err, CD_UNAVAILABLE, "", "cancelled: the connection closed");
      j->err_pair = i;
      return;
    }
    /* Another job found the reply too large: the query has failed already. */
    if (atomic_load_explicit(&q->reply_over, memory_order_relaxed)) return;
    const cd_qpair *pr = &q->pairs[i];
    ce_arena_reset(w->arena);
    ce_result r;
    ce_error err;
    err.message[0] = 0;
    uint64_t t0 = cd_now_ns();
    ce_options opt = q->opt.ce;
    if (pr->model) opt.model = (ce_contact_model)(pr->model - 1);
    ce_options eopt = opt; /* a published pair computes what the viewer draws too */
    if (q->pub) cd_pub_engine_options(&eopt);
    ce_errno e = ce_contact(&q->bodies[pr->a].body, &q->bodies[pr->b].body, &eopt, w->arena, &r, &err);
    uint64_t us = (cd_now_ns() - t0) / 1000;
    if (e != CE_OK) {
      char hint[160] = "";
      if (e == CE_ENOMEM) /* the worker's arena: name the limit */
        snprintf(hint, sizeof hint,
                 " (a pair's scratch is bounded by worker_arena_bytes, %llu bytes: ask for less detail, or use "
                 "coarser geometry)",
                 (unsigned long long)q->srv->cfg.limits.worker_arena_bytes);
      cd_status_set(&j->err, cd_status_from_ce(e), "", "pair %lld (bodies %u and %u): %s%s", (long long)i,
                    q->bodies[pr->a].id, q->bodies[pr->b].id, err.message[0] ? err.message : ce_strerror(e), hint);
      j->err_pair = i;
      return;
    }
    size_t need = cd_reply_estimate(&r, &opt), held;
    int over = reserve_reply(q, need, &held);
    if (over) {
      atomic_store_explicit(&q->reply_over, 1, memory_order_relaxed);
      const cd_limits *l = &q->srv->cfg.limits;
      char b1[32], b2[32], b3[32];
      if (over == 1)
        cd_status_set(&j->err, CD_EXHAUSTED, "",
                      "reply would be over max_reply_bytes %s: the results converted so far take %s and pair "
                      "%lld (bodies %u and %u) needs %s more; ask for fewer pairs or less detail (no surfaces or "
                      "patches, polygons rather than triangles)",
                      cd_fmt_bytes(b1, sizeof b1, l->max_reply_bytes), cd_fmt_bytes(b2, sizeof b2, held),
                      (long long)i, q->bodies[pr->a].id, q->bodies[pr->b].id, cd_fmt_bytes(b3, sizeof b3, need));
      else
        cd_status_set(&j->err, CD_EXHAUSTED, "",
                      "server busy: the replies being built take %s of reply_memory_bytes %s and pair %lld "
                      "(bodies %u and %u) needs %s more; retry when fewer queries are in flight, or ask for "
                      "less detail",
                      cd_fmt_bytes(b2, sizeof b2, held), cd_fmt_bytes(b1, sizeof b1, l->reply_memory_bytes),
                      (long long)i, q->bodies[pr->a].id, q->bodies[pr->b].id, cd_fmt_bytes(b3, sizeof b3, need));
      j->err_pair = i;
      return;
    }
    if (!(q->results[i] = cd_reply_convert(&j->out, &opt, q->bodies[pr->a].id, q->bodies[pr->b].id, &r, us))) {
      cd_status_set(&j->err, CD_EXHAUSTED, "", "pair %lld: out of memory converting the result", (long long)i);
      j->err_pair = i;
      return;
    }
    if (q->pub) q->pub[i] = cd_pub_pair_new(q->bodies[pr->a].id, q->bodies[pr->b].id, &r, q->results[i]);
  }
}

/* A finished published query becomes its scene's latest snapshot. */
static void publish(cd_query *q) {
  cd_pub_snap *snap = cd_pub_snap_new(q->opt.publish, q->nbodies, q->npairs, q->pub);
  if (!snap) return; /* out of memory: the scene keeps its previous result */
  q->pub = NULL;     /* the snapshot has the pairs */
  snap->started_ns = q->t0_ns;
  for (int32_t i = 0; i < q->nbodies; i++) {
    cd_pub_body *b = &snap->bodies[i];
    const ce_pose *X = &q->bodies[i].body.X_WB;
    b->id = q->bodies[i].id;
    if (q->bodies[i].entry) snprintf(b->geometry, sizeof b->geometry, "%s", q->bodies[i].entry->id);
    for (int k = 0; k < 9; k++) b->R[k] = X->R.m[k / 3][k % 3];
    b->p[0] = X->p.x;
    b->p[1] = X->p.y;
    b->p[2] = X->p.z;
  }
  cd_publish_put(q->srv->publish, snap);
}

static void qjob_done(cd_job *job) {
  cd_qjob *j = (cd_qjob *)job;
  cd_query *q = j->q;
  if (j->err_pair >= 0 && (q->err_pair < 0 || j->err_pair < q->err_pair)) {
    q->err = j->err;
    q->err_pair = j->err_pair;
  }
  if (--q->jobs_left == 0) {
    q->wall_us = (cd_now_ns() - q->t0_ns) / 1000;
    q->srv->stats.pairs += (uint64_t)q->npairs;
    if (atomic_load_explicit(&q->reply_over, memory_order_relaxed)) q->srv->stats.replies_over_limit++;
    if (q->pub && q->err_pair < 0) publish(q);
    q->done(q);
  }
}

void cd_query_run(cd_query *q) {
  uint64_t per = q->srv->cfg.limits.pairs_per_job;
  q->t0_ns = cd_now_ns();
  q->err_pair = -1;
  q->njobs = q->npairs ? (q->npairs + (int64_t)per - 1) / (int64_t)per : 0;
  q->results = calloc(q->npairs ? (size_t)q->npairs : 1, sizeof *q->results);
  q->jobs = calloc(q->njobs ? (size_t)q->njobs : 1, sizeof *q->jobs);
  if (q->opt.publish[0] && q->srv->publish)
    q->pub = calloc(q->npairs ? (size_t)q->npairs : 1, sizeof *q->pub); /* NULL: not published */
  if (!q->results || !q->jobs) {
    cd_status_set(&q->err, CD_EXHAUSTED, "", "out of memory");
    q->err_pair = 0;
    q->done(q);
    return;
  }
  if (q->njobs == 0) {
    if (q->pub) publish(q); /* the bodies' poses, no pairs */
    q->done(q);
    return;
  }
  q->jobs_left = q->njobs;
  for (int64_t k = 0; k < q->njobs; k++) {
    cd_qjob *j = &q->jobs[k];
    j->job.run = qjob_run;
    j->job.done = qjob_done;
    j->q = q;
    j->first = k * (int64_t)per;
    j->count = q->npairs - j->first < (int64_t)per ? q->npairs - j->first : (int64_t)per;
    j->err_pair = -1;
    cd_pool_submit(q->srv->pool, q->jobq, &j->job);
  }
}

cd_query_reply *cd_query_reply_new(cd_query *q, uint64_t request_id) {
  cd_query_reply *x = malloc(sizeof *x);
  if (!x) return NULL;
  x->q = q;
  contactd__v1__envelope__init(&x->env);
  x->env.request_id = request_id;
  return x;
}

static void reply_release(void *holder) {
  cd_query_reply *x = holder;
  cd_query_free(x->q);
  free(x);
}

void cd_query_reply_send(cd_query_reply *x, cd_conn *c, uint64_t seq) {
  cd_conn_reply_large(c, seq, &x->env, atomic_load_explicit(&x->q->reply_bytes, memory_order_relaxed), reply_release,
                      x);
}

void cd_query_free(cd_query *q) {
  if (!q) return;
  /* the results go with the query: give their bytes back to the server */
  size_t held = atomic_load_explicit(&q->reply_bytes, memory_order_relaxed);
  if (held && q->srv) atomic_fetch_sub_explicit(&q->srv->reply_bytes, held, memory_order_relaxed);
  if (q->jobs)
    for (int64_t k = 0; k < q->njobs; k++) cd_budget_destroy(&q->jobs[k].out);
  free(q->jobs);
  free(q->results);
  if (q->pub)
    for (int64_t i = 0; i < q->npairs; i++) cd_pub_pair_free(q->pub[i]);
  free(q->pub);
  if (q->owns_pins) cd_qbodies_unpin(q->bodies, q->nbodies);
  free(q->bodies);
  free(q->pairs);
  free(q);
}
