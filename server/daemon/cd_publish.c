/* cd_publish.c — per-scene latest results (see cd_publish.h). */
#include "cd_publish.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "contactd.pb-c.h"

int cd_publish_name_ok(const char *name) {
  size_t n = strlen(name);
  if (n == 0 || n > CD_PUB_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    char ch = name[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
          ch == '-' || ch == '.'))
      return 0;
  }
  return 1;
}

void cd_publish_engine_options(ce_options *o) {
  o->want_surface = 1;
  o->want_patches = 1;
  o->want_face_contacts = 1;
}

static void v3(double out[3], ce_vec3 v) {
  out[0] = v.x;
  out[1] = v.y;
  out[2] = v.z;
}

/* PairResult.strain_energy, looked up by name in the descriptor so that this
 * file does not depend on the protocol having the field yet. */
static int wire_energy(const void *wire, double *out) {
  if (!wire) return 0;
  const ProtobufCFieldDescriptor *f =
      protobuf_c_message_descriptor_get_field_by_name(&contactd__v1__pair_result__descriptor, "strain_energy");
  if (!f || f->type != PROTOBUF_C_TYPE_DOUBLE || f->label == PROTOBUF_C_LABEL_REPEATED) return 0;
  memcpy(out, (const char *)wire + f->offset, sizeof *out);
  return 1;
}

/* The surface as triangles: each polygon fanned from its first vertex. */
static int copy_surface(cd_pub_pair *p, const ce_surface *s) {
  if (s->nf <= 0) return 0;
  int32_t ntri = 0;
  for (int32_t f = 0; f < s->nf; f++) {
    int32_t k = s->face_offsets[f + 1] - s->face_offsets[f];
    if (k >= 3) ntri += k - 2;
  }
  p->v = malloc((size_t)s->nv * 3 * sizeof *p->v);
  p->p = malloc((size_t)(s->nv ? s->nv : 1) * sizeof *p->p);
  p->tri = malloc((size_t)(ntri ? ntri : 1) * 3 * sizeof *p->tri);
  p->tri_patch = malloc((size_t)(ntri ? ntri : 1) * sizeof *p->tri_patch);
  if (!p->v || !p->p || !p->tri || !p->tri_patch) return -1;
  p->nv = s->nv;
  for (int32_t i = 0; i < s->nv; i++) {
    p->v[3 * i] = (float)s->vertices[i].x;
    p->v[3 * i + 1] = (float)s->vertices[i].y;
    p->v[3 * i + 2] = (float)s->vertices[i].z;
    p->p[i] = (float)s->pressure[i];
  }
  int32_t t = 0;
  for (int32_t f = 0; f < s->nf; f++) {
    const int32_t *fv = s->face_vertices + s->face_offsets[f];
    int32_t k = s->face_offsets[f + 1] - s->face_offsets[f];
    for (int32_t j = 1; j + 1 < k; j++, t++) {
      p->tri[3 * t] = fv[0];
      p->tri[3 * t + 1] = fv[j];
      p->tri[3 * t + 2] = fv[j + 1];
      p->tri_patch[t] = s->patch ? s->patch[f] : -1;
    }
  }
  p->ntri = ntri;
  return 0;
}

/* The reduced contacts, present when the query asked for them. */
static int copy_reduced(cd_pub_pair *p, const ce_result *r) {
  if (r->nreduced <= 0 || !r->reduced) return 0;
  if (!(p->reduced = calloc((size_t)r->nreduced, sizeof *p->reduced))) return -1;
  p->nreduced = r->nreduced;
  for (int32_t i = 0; i < r->nreduced; i++) {
    const ce_reduced_contact *c = &r->reduced[i];
    cd_pub_reduced *q = &p->reduced[i];
    q->patch = c->patch;
    v3(q->x, c->position);
    v3(q->n, c->normal);
    v3(q->force, c->force);
    v3(q->couple, c->couple);
    q->stiffness = c->stiffness;
    q->separation = c->separation;
  }
  return 0;
}

cd_pub_pair *cd_publish_pair_new(uint32_t a, uint32_t b, const ce_result *r, const void *wire) {
  cd_pub_pair *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->a = a;
  p->b = b;
  p->status = (int)r->status;
  v3(p->force, r->wrench_a.force);
  v3(p->point, r->total.point);
  p->area = r->area;
  p->faces = r->total.faces;
  p->has_energy = wire_energy(wire, &p->energy);
  if (copy_surface(p, &r->surface)) goto fail;
  if (r->npatches > 0) {
    if (!(p->patches = calloc((size_t)r->npatches, sizeof *p->patches))) goto fail;
    p->npatches = r->npatches;
    for (int32_t i = 0; i < r->npatches; i++) {
      v3(p->patches[i].point, r->patches[i].point);
      v3(p->patches[i].force, r->patches[i].normal_force);
      p->patches[i].area = r->patches[i].area;
      p->patches[i].faces = r->patches[i].faces;
    }
  }
  if (r->nface_contacts > 0) {
    if (!(p->points = calloc((size_t)r->nface_contacts, sizeof *p->points))) goto fail;
    p->npoints = r->nface_contacts;
    for (int32_t i = 0; i < r->nface_contacts; i++) {
      v3(p->points[i].x, r->face_contacts[i].position);
      v3(p->points[i].n, r->face_contacts[i].normal);
      p->points[i].pressure = r->face_contacts[i].pressure;
      p->points[i].area = r->face_contacts[i].area;
    }
  }
  if (copy_reduced(p, r)) goto fail;
  p->has_speculative = r->status == CE_CONTACT_SPECULATIVE;
  if (p->has_speculative) p->speculative = r->speculative;
  return p;
fail:
  cd_publish_pair_free(p);
  return NULL;
}

void cd_publish_pair_free(cd_pub_pair *p) {
  if (!p) return;
  free(p->v);
  free(p->p);
  free(p->tri);
  free(p->tri_patch);
  free(p->patches);
  free(p->points);
  free(p->reduced);
  free(p);
}

cd_pub_snap *cd_publish_snap_new(const char *scene, int32_t nbodies, int64_t npairs, cd_pub_pair **pairs) {
  cd_pub_snap *s = calloc(1, sizeof *s);
  if (s) s->bodies = calloc((size_t)(nbodies > 0 ? nbodies : 1), sizeof *s->bodies);
  if (!s || !s->bodies) {
    free(s);
    return NULL;
  }
  atomic_init(&s->refs, 1);
  snprintf(s->scene, sizeof s->scene, "%s", scene);
  s->nbodies = nbodies;
  s->npairs = npairs;
  s->pairs = pairs;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  s->wall_s = (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
  return s;
}

void cd_publish_snap_ref(cd_pub_snap *s) { atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed); }

void cd_publish_snap_unref(cd_pub_snap *s) {
  if (!s || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1) return;
  for (int64_t i = 0; i < s->npairs; i++) cd_publish_pair_free(s->pairs[i]);
  free(s->pairs);
  free(s->bodies);
  free(s->json);
  free(s);
}

/* ---- the table ------------------------------------------------------------ */

typedef struct scene {
  char name[CD_PUB_NAME_MAX + 1];
  char tenant[CD_PUB_TENANT_MAX];
  cd_pub_snap *latest;
  uint64_t version;
  uint64_t tick; /* when last published: the smallest is forgotten first */
} scene;

struct cd_publish {
  pthread_mutex_t mu;
  scene *scenes;
  size_t n, cap;
  uint64_t tick;
  void (*notify)(void *);
  void *notify_arg;
};

cd_publish *cd_publish_create(uint64_t max_scenes) {
  cd_publish *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->cap = (size_t)(max_scenes ? max_scenes : 1);
  t->scenes = calloc(t->cap, sizeof *t->scenes);
  if (!t->scenes) {
    free(t);
    return NULL;
  }
  pthread_mutex_init(&t->mu, NULL);
  return t;
}

void cd_publish_destroy(cd_publish *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n; i++) cd_publish_snap_unref(t->scenes[i].latest);
  pthread_mutex_destroy(&t->mu);
  free(t->scenes);
  free(t);
}

static scene *find(cd_publish *t, const char *tenant, const char *name) {
  for (size_t i = 0; i < t->n; i++)
    if (strcmp(t->scenes[i].name, name) == 0 && strcmp(t->scenes[i].tenant, tenant) == 0) return &t->scenes[i];
  return NULL;
}

static int visible(const scene *sc, cd_publish_sees sees, const void *arg) {
  return sc->latest && (!sees || sees(sc->tenant, arg));
}

void cd_publish_put(cd_publish *t, cd_pub_snap *snap) {
  cd_pub_snap *old = NULL;
  pthread_mutex_lock(&t->mu);
  scene *sc = find(t, snap->tenant, snap->scene);
  if (!sc) {
    if (t->n < t->cap) {
      sc = &t->scenes[t->n++];
    } else { /* forget the scene published least recently */
      sc = &t->scenes[0];
      for (size_t i = 1; i < t->n; i++)
        if (t->scenes[i].tick < sc->tick) sc = &t->scenes[i];
      old = sc->latest;
    }
    memset(sc, 0, sizeof *sc);
    snprintf(sc->name, sizeof sc->name, "%s", snap->scene);
    snprintf(sc->tenant, sizeof sc->tenant, "%s", snap->tenant);
  } else if (sc->latest && snap->started_ns < sc->latest->started_ns) {
    pthread_mutex_unlock(&t->mu); /* overtaken by a query that started later */
    cd_publish_snap_unref(snap);
    return;
  } else {
    old = sc->latest;
  }
  snap->version = ++sc->version;
  sc->latest = snap;
  sc->tick = ++t->tick;
  /* under the lock, so that once cd_publish_set_notify(NULL) returns the hook
   * is never called again (it only signals: uv_async_send) */
  if (t->notify) t->notify(t->notify_arg);
  pthread_mutex_unlock(&t->mu);
  cd_publish_snap_unref(old); /* outside the lock: it may free a large surface */
}

cd_pub_snap *cd_publish_get(cd_publish *t, const char *name, cd_publish_sees sees, const void *arg) {
  pthread_mutex_lock(&t->mu);
  scene *sc = NULL;
  for (size_t i = 0; i < t->n; i++) {
    scene *c = &t->scenes[i];
    if (strcmp(c->name, name) == 0 && visible(c, sees, arg) && (!sc || c->tick > sc->tick)) sc = c;
  }
  cd_pub_snap *s = sc ? sc->latest : NULL;
  if (s) cd_publish_snap_ref(s);
  pthread_mutex_unlock(&t->mu);
  return s;
}

char *cd_publish_list_json(cd_publish *t, size_t *len, cd_publish_sees sees, const void *arg) {
  pthread_mutex_lock(&t->mu);
  size_t cap = 64 + t->n * (CD_PUB_NAME_MAX + CD_PUB_TENANT_MAX + 112);
  char *out = malloc(cap);
  size_t n = 0;
  if (out) {
    n += (size_t)snprintf(out + n, cap - n, "{\"scenes\":[");
    for (size_t i = 0, k = 0; i < t->n; i++) {
      const scene *sc = &t->scenes[i];
      if (!visible(sc, sees, arg)) continue;
      n += (size_t)snprintf(out + n, cap - n,
                            "%s{\"name\":\"%s\",\"tenant\":\"%s\",\"version\":%llu,\"bodies\":%d,\"pairs\":%lld}",
                            k++ ? "," : "", sc->name, sc->tenant, (unsigned long long)sc->version,
                            sc->latest ? (int)sc->latest->nbodies : 0,
                            sc->latest ? (long long)sc->latest->npairs : 0LL);
    }
    n += (size_t)snprintf(out + n, cap - n, "]}\n");
  }
  pthread_mutex_unlock(&t->mu);
  *len = n;
  return out;
}

int cd_publish_shows_geometry(cd_publish *t, const char *id, cd_publish_sees sees, const void *arg) {
  int found = 0;
  pthread_mutex_lock(&t->mu);
  for (size_t i = 0; i < t->n && !found; i++) {
    const scene *sc = &t->scenes[i];
    if (!visible(sc, sees, arg)) continue;
    for (int32_t b = 0; b < sc->latest->nbodies && !found; b++) found = strcmp(sc->latest->bodies[b].geometry, id) == 0;
  }
  pthread_mutex_unlock(&t->mu);
  return found;
}

void cd_publish_set_notify(cd_publish *t, void (*fn)(void *), void *arg) {
  pthread_mutex_lock(&t->mu);
  t->notify = fn;
  t->notify_arg = arg;
  pthread_mutex_unlock(&t->mu);
}
