/* cd_qparse.c — a query's wire input (bodies, options, pairs) parsed into
 * what the daemon runs: bodies resolved to pinned cache entries with
 * checked poses (cd_qcheck.c), options, pairs by index (explicit, or from
 * the broad phase), and the body-id index the pair lookups use. Every
 * failure names its field. */
#include "cd_qparse.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cd_broadphase.h"
#include "cd_qcheck.h"
#include "cd_server.h"

void cd_qparse_bodies_unpin(cd_qbody *b, int32_t n) {
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

int cd_qparse_index_build(cd_qindex *x, const cd_qbody *b, int32_t nb) {
  x->n = 0;
  x->e = malloc((nb > 0 ? (size_t)nb : 1) * sizeof *x->e);
  if (!x->e) return -1;
  for (int32_t i = 0; i < nb; i++) x->e[i] = (cd_qindex_ent){b[i].id, i};
  x->n = nb;
  qsort(x->e, (size_t)nb, sizeof *x->e, cmp_u32); /* id is the first member */
  return 0;
}

int32_t cd_qparse_index_find(const cd_qindex *x, uint32_t id) {
  cd_qindex_ent key = {id, 0};
  const cd_qindex_ent *f = x->n > 0 ? bsearch(&key, x->e, (size_t)x->n, sizeof *x->e, cmp_u32) : NULL;
  return f ? f->i : -1;
}

void cd_qparse_index_free(cd_qindex *x) {
  free(x->e);
  x->e = NULL;
  x->n = 0;
}

int cd_qparse_bodies(cd_server *s, Contactd__V1__Body **in, size_t n, const char *field, cd_qbody **out,
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
    const cd_qwhere w = {field, i, m->body_id, m->name};
    cd_qbody *q = &b[i];
    q->id = m->body_id;
    ids[i] = m->body_id;
    cd_cache_entry *e = cd_cache_find(s->cache, m->geometry_id);
    if (!e || e->state != CD_ENTRY_READY) {
      cd_qcheck_where_field(&w, "geometryId", f, sizeof f);
      cd_qcheck_where_body(&w, what, sizeof what);
      rc = cd_status_set(st, CD_NOT_FOUND, f, "%s: geometry \"%.64s\" is %s", what, m->geometry_id,
                         e ? "still being built" : "not registered");
      break;
    }
    q->body.geometry = e->geometry;
    q->body.point_stiffness = e->point_stiffness;
    if ((rc = cd_qcheck_pose_from_msg(m->pose, &q->body.X_WB, &w, st))) break;
    if ((rc = cd_qcheck_velocity_from_msg(m->velocity, &q->body.V_WB, &w, st))) break;
    /* The geometry's material unless overridden. */
    if (m->material) {
      if (!(isfinite(m->material->dissipation) && m->material->dissipation >= 0) ||
          !(isfinite(m->material->friction) && m->material->friction >= 0)) {
        cd_qcheck_where_field(&w, "material", f, sizeof f);
        cd_qcheck_where_body(&w, what, sizeof what);
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
    cd_qparse_bodies_unpin(b, (int32_t)n);
    free(b);
    return rc;
  }
  *out = b;
  return 0;
}

int cd_qparse_opts(const Contactd__V1__QueryOptions *o, const char *field, cd_qopts *out, cd_status *st) {
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
  out->ce.want_face_contacts = o->point_contacts ? 1 : 0;
  out->ce.want_jacobian = o->want_jacobian ? 1 : 0;
  if (!isfinite(o->stiction_tolerance)) {
    snprintf(f, sizeof f, "%s.stictionTolerance", field);
    return cd_status_set(st, CD_INVALID, f, "must be finite (got %g)", o->stiction_tolerance);
  }
  if (o->stiction_tolerance > 0) out->ce.stiction_tolerance = o->stiction_tolerance;
  int m = cd_qcheck_model_from_wire((int)o->contact_model);
  if (m < 0) {
    snprintf(f, sizeof f, "%s.contactModel", field);
    return cd_status_set(st, CD_INVALID, f, "unknown contact model %d", (int)o->contact_model);
  }
  out->ce.model = (ce_contact_model)m;
  out->ce.want_energy = o->want_energy ? 1 : 0;
  if (o->reduced_contacts > (uint32_t)CE_REDUCE_MAX_POINTS) {
    snprintf(f, sizeof f, "%s.reducedContacts", field);
    return cd_status_set(st, CD_INVALID, f, "at most %d points per patch (got %u; 0 = none)", CE_REDUCE_MAX_POINTS,
                         (unsigned)o->reduced_contacts);
  }
  out->ce.reduced_contacts = (int32_t)o->reduced_contacts;
  out->publish[0] = 0;
  if (o->publish && o->publish[0]) {
    if (!cd_publish_name_ok(o->publish)) {
      snprintf(f, sizeof f, "%s.publish", field);
      return cd_status_set(st, CD_INVALID, f,
                           "scene name \"%.80s\" must be 1 to %d characters of A-Z, a-z, 0-9, '_', '-' and '.'",
                           o->publish, CD_PUB_NAME_MAX);
    }
    snprintf(out->publish, sizeof out->publish, "%s", o->publish);
  }
  return 0;
}

int cd_qparse_plan_run(const cd_qplan *p, const cd_qbody *b, int32_t nb, cd_qpair **out, int64_t *nout, cd_status *st) {
  return cd_broadphase(b, nb, p->margin, p->exclude, p->nexclude, p->max_pairs, p->field, out, nout, st);
}

void cd_qparse_plan_free(cd_qplan *p) {
  free(p->exclude);
  p->exclude = NULL;
  p->on = 0;
}

int cd_qparse_pairs_resolve(const cd_qbody *b, int32_t nb, Contactd__V1__Pair **pairs, size_t npairs,
                      const Contactd__V1__AllPairs *all, const char *field, uint64_t max_pairs, cd_qplan *later,
                      cd_qpair **out, int64_t *nout, cd_status *st) {
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
    if (!ex || cd_qparse_index_build(&m, b, nb)) {
      free(ex);
      return cd_status_set(st, CD_EXHAUSTED, field, "out of memory");
    }
    for (size_t i = 0; i < all->n_exclude; i++) {
      int32_t ia = cd_qparse_index_find(&m, all->exclude[i]->a), ib = cd_qparse_index_find(&m, all->exclude[i]->b);
      if (ia < 0 || ib < 0) {
        free(ex);
        cd_qparse_index_free(&m);
        snprintf(f, sizeof f, "%s.allPairs.exclude[%zu]", field, i);
        return cd_status_set(st, CD_INVALID, f, "body %u is not in the query",
                             ia < 0 ? all->exclude[i]->a : all->exclude[i]->b);
      }
      ex[i] = (cd_qpair){ia, ib, 0};
    }
    cd_qparse_index_free(&m);
    cd_qplan plan = {1, all->margin, ex, all->n_exclude, max_pairs, ""};
    snprintf(plan.field, sizeof plan.field, "%s.allPairs", field);
    if (later && nb >= CD_BROADPHASE_OFF_LOOP_BODIES) {
      *later = plan;
      return 0;
    }
    int rc = cd_qparse_plan_run(&plan, b, nb, out, nout, st);
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
  if (cd_qparse_index_build(&m, b, nb)) {
    free(p);
    return cd_status_set(st, CD_EXHAUSTED, f, "out of memory");
  }
  for (size_t i = 0; i < npairs; i++) {
    const Contactd__V1__Pair *q = pairs[i];
    int model = cd_qcheck_model_from_wire((int)q->contact_model);
    if (model < 0) {
      free(p);
      cd_qparse_index_free(&m);
      snprintf(f, sizeof f, "%s.pairs[%zu].contactModel", field, i);
      return cd_status_set(st, CD_INVALID, f, "unknown contact model %d", (int)q->contact_model);
    }
    int32_t fa = cd_qparse_index_find(&m, q->a), fb = cd_qparse_index_find(&m, q->b);
    if (fa < 0 || fb < 0 || q->a == q->b) {
      free(p);
      cd_qparse_index_free(&m);
      snprintf(f, sizeof f, "%s.pairs[%zu]", field, i);
      if (q->a == q->b) return cd_status_set(st, CD_INVALID, f, "pairs body %u with itself", q->a);
      return cd_status_set(st, CD_INVALID, f, "body %u is not in the query", fa < 0 ? q->a : q->b);
    }
    p[i] = (cd_qpair){fa, fb,
                      q->contact_model == CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_UNSPECIFIED ? 0 : model + 1};
  }
  cd_qparse_index_free(&m);
  *out = p;
  *nout = (int64_t)npairs;
  return 0;
}
