/* A reply frame packed in pieces (cd_splice): records packed apart, in
 * parts of any size, and the rest of the envelope packed around them give
 * the bytes of packing the whole envelope, for random replies of both
 * kinds that carry results (ContactReply, StreamResult). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cd_budget.h"
#include "cd_frame.h"
#include "cd_splice.h"
#include "contactd.pb-c.h"

typedef Contactd__V1__Envelope Envelope;

/* ---- random messages, all allocated from one budget ---------------------- */

static uint64_t rng_state;
static uint64_t rnd(void) { /* xorshift64* */
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * UINT64_C(2685821657736338717);
}
static int coin(void) { return rnd() & 1; }
/* Zero often (proto3 leaves zero fields out), else small or huge. */
static uint64_t r_u64(void) {
  switch (rnd() % 4) {
    case 0: return 0;
    case 1: return rnd() % 200;
    case 2: return rnd() % 70000;
    default: return rnd();
  }
}
static uint32_t r_u32(void) { return (uint32_t)r_u64(); }
static int32_t r_i32(void) { return coin() ? (int32_t)(rnd() % 100) : -(int32_t)(rnd() % 100000); }
static double r_f64(void) {
  switch (rnd() % 4) {
    case 0: return 0.0;
    case 1: return (double)(int64_t)(rnd() % 2000 - 1000) / 7.0;
    case 2: return (double)(rnd() >> 11) * 0x1p-53 * 1e-9;
    default: return -(double)(rnd() >> 11) * 1e3;
  }
}

#define NEW(b, T, init)                              \
  ({                                                 \
    T *_p = cd_budget_alloc((b), sizeof(T));         \
    cr_assert(_p);                                   \
    T _i = init;                                     \
    *_p = _i;                                        \
    _p;                                              \
  })

static Contactd__V1__Vec3 *r_vec3(cd_budget *b) {
  if (rnd() % 8 == 0) return NULL;
  Contactd__V1__Vec3 *v = NEW(b, Contactd__V1__Vec3, CONTACTD__V1__VEC3__INIT);
  v->x = r_f64();
  v->y = r_f64();
  v->z = r_f64();
  return v;
}

static Contactd__V1__Wrench *r_wrench(cd_budget *b) {
  if (rnd() % 8 == 0) return NULL;
  Contactd__V1__Wrench *w = NEW(b, Contactd__V1__Wrench, CONTACTD__V1__WRENCH__INIT);
  w->torque = r_vec3(b);
  w->force = r_vec3(b);
  return w;
}

static Contactd__V1__Patch *r_patch(cd_budget *b) {
  Contactd__V1__Patch *p = NEW(b, Contactd__V1__Patch, CONTACTD__V1__PATCH__INIT);
  p->faces = r_u32();
  p->area = r_f64();
  p->normal_force = r_vec3(b);
  p->normal_force_magnitude = r_f64();
  p->point = r_vec3(b);
  p->strain_energy = r_f64();
  return p;
}

static double *r_doubles(cd_budget *b, size_t n) {
  double *d = cd_budget_alloc(b, (n ? n : 1) * sizeof *d);
  cr_assert(d);
  for (size_t i = 0; i < n; i++) d[i] = r_f64();
  return d;
}

static int32_t *r_ints(cd_budget *b, size_t n) {
  int32_t *d = cd_budget_alloc(b, (n ? n : 1) * sizeof *d);
  cr_assert(d);
  for (size_t i = 0; i < n; i++) d[i] = r_i32();
  return d;
}

static Contactd__V1__Surface *r_surface(cd_budget *b) {
  Contactd__V1__Surface *s = NEW(b, Contactd__V1__Surface, CONTACTD__V1__SURFACE__INIT);
  size_t nv = rnd() % 40, nf = rnd() % 20;
  s->n_vertices = 3 * nv;
  s->vertices = r_doubles(b, 3 * nv);
  s->n_pressure = nv;
  s->pressure = r_doubles(b, nv);
  s->n_face_offsets = nf ? nf + 1 : 0;
  s->face_offsets = r_ints(b, nf + 1);
  s->n_face_vertices = 3 * nf;
  s->face_vertices = r_ints(b, 3 * nf);
  s->n_areas = nf;
  s->areas = r_doubles(b, nf);
  if (coin()) {
    s->n_patch = nf;
    s->patch = r_ints(b, nf);
  }
  return s;
}

static Contactd__V1__WrenchJacobian *r_jacobian(cd_budget *b) {
  Contactd__V1__WrenchJacobian *j = NEW(b, Contactd__V1__WrenchJacobian, CONTACTD__V1__WRENCH_JACOBIAN__INIT);
  if (coin()) {
    j->unavailable = cd_budget_strndup(b, "no Jacobian for this pair", 25);
    return j;
  }
  j->n_d_pose_a = j->n_d_pose_b = j->n_d_velocity_a = j->n_d_velocity_b = 36;
  j->d_pose_a = r_doubles(b, 36);
  j->d_pose_b = r_doubles(b, 36);
  j->d_velocity_a = r_doubles(b, 36);
  j->d_velocity_b = r_doubles(b, 36);
  return j;
}

static Contactd__V1__PairResult *r_pair(cd_budget *b) {
  Contactd__V1__PairResult *m = NEW(b, Contactd__V1__PairResult, CONTACTD__V1__PAIR_RESULT__INIT);
  m->a = r_u32();
  m->b = r_u32();
  m->status = (Contactd__V1__ContactStatus)(rnd() % 5);
  m->model = (Contactd__V1__ContactModel)(rnd() % 4);
  m->wrench_a = r_wrench(b);
  m->wrench_b = r_wrench(b);
  m->wrench_a_centroid = r_wrench(b);
  m->area = r_f64();
  m->centroid = r_vec3(b);
  m->total = coin() ? r_patch(b) : NULL;
  if (coin()) {
    m->n_patches = rnd() % 4;
    m->patches = cd_budget_alloc(b, (m->n_patches + 1) * sizeof *m->patches);
    for (size_t i = 0; i < m->n_patches; i++) m->patches[i] = r_patch(b);
  }
  if (rnd() % 3 == 0) m->surface = r_surface(b);
  if (rnd() % 3 == 0) m->jacobian = r_jacobian(b);
  if (rnd() % 3 == 0) {
    Contactd__V1__Penetration *p = NEW(b, Contactd__V1__Penetration, CONTACTD__V1__PENETRATION__INIT);
    p->depth = r_f64();
    p->normal = r_vec3(b);
    p->witness_a = r_vec3(b);
    p->hull_a = coin();
    p->pieces_b = r_u32();
    p->contacts = r_u32();
    m->penetration = p;
  }
  m->points_excluded = r_u32();
  m->candidate_pairs = r_u64();
  m->polygons = r_u64();
  m->faces_dropped = r_u64();
  m->compute_time_us = r_u64();
  m->combined_modulus = r_f64();
  m->strain_energy = r_f64();
  m->energy = (Contactd__V1__EnergyStatus)(rnd() % 4);
  if (coin()) {
    m->combined_material = NEW(b, Contactd__V1__Material, CONTACTD__V1__MATERIAL__INIT);
    m->combined_material->friction = r_f64();
  }
  return m;
}

/* ---- the check ------------------------------------------------------------- */

/* The frame of env (results are the reply's n results) packed whole, and
 * packed with the results as records in parts of random sizes: the same
 * bytes, which decode back to the same message. */
static void check_one(cd_budget *b, int stream) {
  size_t n = rnd() % 3 == 0 ? 0 : rnd() % 30;
  Contactd__V1__PairResult **res = cd_budget_alloc(b, (n + 1) * sizeof *res);
  for (size_t i = 0; i < n; i++) res[i] = r_pair(b);
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  env.request_id = r_u64();
  Contactd__V1__ContactReply cr = CONTACTD__V1__CONTACT_REPLY__INIT;
  Contactd__V1__StreamResult sr = CONTACTD__V1__STREAM_RESULT__INIT;
  ProtobufCMessage *inner;
  uint32_t field;
  if (stream) {
    sr.stream_id = r_u64();
    sr.sequence = r_u64();
    sr.dropped_updates = r_u64();
    sr.compute_time_us = r_u64();
    sr.n_results = n;
    sr.results = res;
    env.msg_case = CONTACTD__V1__ENVELOPE__MSG_STREAM_RESULT;
    env.stream_result = &sr;
    inner = &sr.base;
    field = cd_splice_field(&contactd__v1__stream_result__descriptor, "results");
  } else {
    cr.compute_time_us = r_u64();
    cr.candidate_pairs = r_u64();
    cr.n_results = n;
    cr.results = res;
    env.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY;
    env.contact_reply = &cr;
    inner = &cr.base;
    field = cd_splice_field(&contactd__v1__contact_reply__descriptor, "results");
  }
  cr_assert_neq(field, 0);
  size_t body, whole_n = cd_frame_size(&env.base, &body);
  uint8_t *whole = malloc(whole_n);
  cr_assert_eq(cd_frame_write(&env.base, body, whole), whole_n);

  /* the records, in parts of 0 to 5 results (a job may pack none) */
  cd_splice_part parts[64];
  size_t nparts = 0, nrec = 0;
  for (size_t i = 0; i < n || nparts == 0;) {
    size_t take = rnd() % 6;
    if (take > n - i) take = n - i;
    size_t tot = 0, bodies[8];
    for (size_t k = 0; k < take; k++) tot += cd_splice_record_size(&res[i + k]->base, field, &bodies[k]);
    uint8_t *p = malloc(tot ? tot : 1), *o = p;
    for (size_t k = 0; k < take; k++) o += cd_splice_record_write(&res[i + k]->base, field, bodies[k], o);
    cr_assert_eq((size_t)(o - p), tot);
    cr_assert_lt(nparts, 64);
    parts[nparts++] = (cd_splice_part){p, tot};
    nrec += tot;
    i += take;
  }
  /* the rest of the message without them */
  if (stream) sr.n_results = 0;
  else cr.n_results = 0;
  cd_splice sp;
  cr_assert_eq(cd_splice_frame(&env, inner, field, nrec, &sp), 0);
  cr_assert_eq(sp.total, whole_n, "frame of %zu results: %zu bytes spliced, %zu whole", n, sp.total, whole_n);
  uint8_t *spliced = malloc(sp.total), *o = spliced;
  memcpy(o, sp.head, sp.nhead);
  o += sp.nhead;
  for (size_t k = 0; k < nparts; k++) {
    memcpy(o, parts[k].p, parts[k].n);
    o += parts[k].n;
    free(parts[k].p);
  }
  memcpy(o, sp.tail, sp.ntail);
  cr_assert_eq(memcmp(spliced, whole, whole_n), 0, "%zu results (%s): the same bytes", n,
               stream ? "StreamResult" : "ContactReply");

  /* decoded back: the same message */
  uint64_t len;
  int h = cd_frame_varint_decode(spliced, sp.total, &len);
  cr_assert_gt(h, 0);
  cr_assert_eq((size_t)h + len, sp.total);
  Envelope *back = contactd__v1__envelope__unpack(NULL, len, spliced + h);
  cr_assert(back);
  cr_assert_eq(back->request_id, env.request_id);
  cr_assert_eq(back->msg_case, env.msg_case);
  size_t nb = stream ? back->stream_result->n_results : back->contact_reply->n_results;
  Contactd__V1__PairResult **rb = stream ? back->stream_result->results : back->contact_reply->results;
  cr_assert_eq(nb, n);
  for (size_t i = 0; i < n; i++) {
    cr_assert_eq(rb[i]->a, res[i]->a);
    cr_assert_eq(rb[i]->b, res[i]->b);
    cr_assert_eq(rb[i]->compute_time_us, res[i]->compute_time_us);
    cr_assert_eq(rb[i]->n_patches, res[i]->n_patches);
    cr_assert_eq(!rb[i]->surface, !res[i]->surface);
  }
  if (stream) {
    cr_assert_eq(back->stream_result->sequence, sr.sequence);
    cr_assert_eq(back->stream_result->compute_time_us, sr.compute_time_us);
  } else {
    cr_assert_eq(back->contact_reply->candidate_pairs, cr.candidate_pairs);
  }
  contactd__v1__envelope__free_unpacked(back, NULL);
  cd_splice_free(&sp);
  free(spliced);
  free(whole);
}

Test(splice, random_replies_pack_to_the_same_bytes_as_whole_ones) {
  rng_state = UINT64_C(0x9e3779b97f4a7c15);
  cd_budget b;
  cd_budget_init(&b, 0);
  for (int k = 0; k < 600; k++) {
    check_one(&b, k % 2);
    cd_budget_reset(&b);
  }
  cd_budget_destroy(&b);
}

/* A message whose every field is zero packs to nothing but the records. */
Test(splice, empty_reply) {
  Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  Contactd__V1__ContactReply cr = CONTACTD__V1__CONTACT_REPLY__INIT;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_REPLY;
  env.contact_reply = &cr;
  cd_splice sp;
  cr_assert_eq(cd_splice_frame(&env, &cr.base, 1, 0, &sp), 0);
  size_t body, n = cd_frame_size(&env.base, &body);
  uint8_t whole[16];
  cd_frame_write(&env.base, body, whole);
  cr_assert_eq(sp.total, n);
  cr_assert_eq(sp.nhead, n);
  cr_assert_eq(memcmp(sp.head, whole, n), 0);
  cd_splice_free(&sp);
}
