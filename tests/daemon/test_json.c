/* proto3 JSON mapping (cd_json), derived from the protobuf-c descriptors. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cd_budget.h"
#include "cd_json.h"
#include "contactd.pb-c.h"

typedef Contactd__V1__Envelope Envelope;
#define ENV_DESC (&contactd__v1__envelope__descriptor)

static cd_budget B;
static void setup(void) { cd_budget_init(&B, 64 << 20); }
static void teardown(void) { cd_budget_destroy(&B); }
TestSuite(json, .init = setup, .fini = teardown);

static Envelope *decode(const char *s, cd_wire_error *err) {
  return (Envelope *)cd_json_decode(ENV_DESC, s, strlen(s), &B, err);
}

static const char *encode(const ProtobufCMessage *m) {
  cd_wire_error err;
  char *s = cd_json_encode(m, &B, NULL, &err);
  cr_assert_not_null(s, "%s", err.message);
  return s;
}

/* Decoding must fail with INVALID_ARGUMENT, the given field path and a
 * message containing `needle`. */
static void expect_error(const char *json, const char *field, const char *needle) {
  cd_wire_error err;
  Envelope *e = decode(json, &err);
  cr_assert_null(e, "accepted %s", json);
  cr_assert_eq(err.code, CD_WIRE_INVALID_ARGUMENT, "code %d for %s", err.code, json);
  cr_assert_str_eq(err.field, field, "path for %s: %s", json, err.message);
  cr_assert(strstr(err.message, needle), "message for %s: \"%s\" lacks \"%s\"", json, err.message,
            needle);
}

/* ---- a generic filler: every field of every message set to a non-default
 * value, walking the descriptors (so a new field is covered automatically) */

typedef struct filler {
  unsigned counter;
  unsigned seed;
} filler;

static ProtobufCMessage *fill(filler *F, const ProtobufCMessageDescriptor *d, int depth);

static void fill_value(filler *F, const ProtobufCFieldDescriptor *f, void *dst, int depth) {
  unsigned k = ++F->counter + F->seed * 31;
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32: *(int32_t *)dst = (k % 2 ? -1 : 1) * (int32_t)(k * 1000 + 7); break;
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32: *(uint32_t *)dst = k % 3 ? k : UINT32_MAX; break;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64: *(int64_t *)dst = k % 2 ? INT64_MIN + k : INT64_MAX - k; break;
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64: *(uint64_t *)dst = k % 2 ? UINT64_MAX - k : ((uint64_t)1 << 53) + k; break;
  case PROTOBUF_C_TYPE_FLOAT: *(float *)dst = 0.1f * (float)k; break;
  case PROTOBUF_C_TYPE_DOUBLE: {
    double v;
    switch (k % 7) {
    case 0: v = NAN; break;
    case 1: v = INFINITY; break;
    case 2: v = -INFINITY; break;
    case 3: v = -0.0; break;
    case 4: v = 1e-300 * k; break;
    default: v = 0.1 * k - 3.7; break;
    }
    *(double *)dst = v;
    break;
  }
  case PROTOBUF_C_TYPE_BOOL: *(protobuf_c_boolean *)dst = 1; break;
  case PROTOBUF_C_TYPE_ENUM: {
    const ProtobufCEnumDescriptor *ed = f->descriptor;
    *(int32_t *)dst = ed->values[1 + k % (ed->n_values - 1)].value;
    break;
  }
  case PROTOBUF_C_TYPE_STRING: {
    char *s = cd_budget_alloc(&B, 64);
    snprintf(s, 64, "s%u \"q\" \\ \n\t \xc3\xa9 \xe2\x82\xac", k);
    *(char **)dst = s;
    break;
  }
  case PROTOBUF_C_TYPE_BYTES: {
    ProtobufCBinaryData *bd = dst;
    bd->len = k % 5 + 1;
    bd->data = cd_budget_alloc(&B, bd->len);
    for (size_t i = 0; i < bd->len; i++) bd->data[i] = (uint8_t)(0xff - i * 37 - k);
    break;
  }
  case PROTOBUF_C_TYPE_MESSAGE:
    *(ProtobufCMessage **)dst = fill(F, f->descriptor, depth + 1);
    break;
  }
}

static size_t esize(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_DOUBLE: return 8;
  case PROTOBUF_C_TYPE_STRING:
  case PROTOBUF_C_TYPE_MESSAGE: return sizeof(void *);
  case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
  default: return 4;
  }
}

/* Fill d; in each oneof, set the member chosen by the seed. */
static ProtobufCMessage *fill(filler *F, const ProtobufCMessageDescriptor *d, int depth) {
  ProtobufCMessage *m = cd_budget_alloc(&B, d->sizeof_message);
  d->message_init(m);
  uint8_t *base = (uint8_t *)m;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      /* members of this oneof share quantifier_offset */
      unsigned members = 0, mine = 0;
      for (unsigned j = 0; j < d->n_fields; j++)
        if ((d->fields[j].flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            d->fields[j].quantifier_offset == f->quantifier_offset) {
          if (j == i) mine = members;
          members++;
        }
      if (mine != (F->seed + (unsigned)depth) % members) continue;
      *(uint32_t *)(base + f->quantifier_offset) = f->id;
      fill_value(F, f, base + f->offset, depth);
    } else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = 1 + (F->counter + F->seed) % 3;
      uint8_t *arr = cd_budget_calloc(&B, n, esize(f->type));
      for (size_t k = 0; k < n; k++) fill_value(F, f, arr + k * esize(f->type), depth);
      *(size_t *)(base + f->quantifier_offset) = n;
      *(void **)(base + f->offset) = arr;
    } else {
      fill_value(F, f, base + f->offset, depth);
    }
  }
  return m;
}

static uint8_t *pack(const ProtobufCMessage *m, size_t *len) {
  *len = protobuf_c_message_get_packed_size(m);
  uint8_t *p = cd_budget_alloc(&B, *len);
  cr_assert_eq(protobuf_c_message_pack(m, p), *len);
  return p;
}

/* message -> JSON -> message, compared by packed bytes, and JSON -> JSON. */
static void roundtrip(const ProtobufCMessage *m, const char *what) {
  size_t la, lb;
  uint8_t *pa = pack(m, &la);
  const char *js = encode(m);
  cr_assert_null(strchr(js, '\n'), "%s: JSON must be one line", what);
  cd_wire_error err;
  ProtobufCMessage *back = cd_json_decode(m->descriptor, js, strlen(js), &B, &err);
  cr_assert_not_null(back, "%s: %s\n%s", what, err.message, js);
  uint8_t *pb = pack(back, &lb);
  cr_assert_eq(la, lb, "%s: packed sizes %zu vs %zu\n%s", what, la, lb, js);
  cr_assert(memcmp(pa, pb, la) == 0, "%s: packed bytes differ\n%s", what, js);
  cr_assert_str_eq(encode(back), js, "%s", what);
  /* and it survives the binary path too */
  ProtobufCMessage *bin = protobuf_c_message_unpack(m->descriptor, cd_budget_allocator(&B), la, pa);
  cr_assert_not_null(bin, "%s: protobuf-c cannot unpack the packed original", what);
  cr_assert_str_eq(encode(bin), js, "%s\n%s\n%s", what, encode(bin), js);
}

Test(json, roundtrip_every_envelope_member) {
  const ProtobufCMessageDescriptor *d = ENV_DESC;
  int members = 0;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) continue;
    members++;
    for (unsigned seed = 0; seed < 12; seed++) {
      filler F = {0, seed};
      Envelope *e = cd_budget_alloc(&B, sizeof *e);
      contactd__v1__envelope__init(e);
      e->request_id = UINT64_MAX - seed;
      *(uint32_t *)((uint8_t *)e + f->quantifier_offset) = f->id;
      *(ProtobufCMessage **)((uint8_t *)e + f->offset) = fill(&F, f->descriptor, 0);
      char what[96];
      snprintf(what, sizeof what, "%s seed %u", f->name, seed);
      roundtrip(&e->base, what);
    }
    /* the member present with every field at its default */
    Envelope *e = cd_budget_alloc(&B, sizeof *e);
    contactd__v1__envelope__init(e);
    *(uint32_t *)((uint8_t *)e + f->quantifier_offset) = f->id;
    ProtobufCMessage *sub = cd_budget_alloc(&B, ((const ProtobufCMessageDescriptor *)f->descriptor)->sizeof_message);
    ((const ProtobufCMessageDescriptor *)f->descriptor)->message_init(sub);
    *(ProtobufCMessage **)((uint8_t *)e + f->offset) = sub;
    char name[64], expect[96];
    cd_json_name(f->name, name, sizeof name);
    snprintf(expect, sizeof expect, "{\"%s\":{}}", name);
    cr_assert_str_eq(encode(&e->base), expect);
    roundtrip(&e->base, f->name);
  }
  cr_assert_eq(members, 20);
}

Test(json, hello_example_exact) {
  const char *s = "{\"requestId\":\"1\",\"hello\":{\"clientName\":\"me\"}}";
  cd_wire_error err;
  Envelope *e = decode(s, &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->request_id, 1);
  cr_assert_eq(e->msg_case, CONTACTD__V1__ENVELOPE__MSG_HELLO);
  cr_assert_str_eq(e->hello->client_name, "me");
  cr_assert_eq(e->hello->protocol_version, 0);
  cr_assert_str_eq(encode(&e->base), s);
}

Test(json, original_field_names_and_whitespace) {
  cd_wire_error err;
  Envelope *e = decode(" {\"request_id\": 5,\n \"contact_query\": {\"bodies\": [{\"body_id\": 3, "
                       "\"geometryId\": \"ab\"}], \"all_pairs\": {}}}\n",
                       &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->request_id, 5);
  cr_assert_eq(e->contact_query->n_bodies, 1);
  cr_assert_eq(e->contact_query->bodies[0]->body_id, 3);
  cr_assert_str_eq(e->contact_query->bodies[0]->geometry_id, "ab");
  cr_assert_not_null(e->contact_query->all_pairs); /* presence of an empty message */
  cr_assert_str_eq(encode(&e->base), "{\"requestId\":\"5\",\"contactQuery\":{\"bodies\":[{\"bodyId\":3,"
                                     "\"geometryId\":\"ab\"}],\"allPairs\":{}}}");
}

Test(json, not_nul_terminated_input) {
  const char buf[] = "{\"requestId\":\"2\",\"stats\":{}}XXXX";
  cd_wire_error err;
  Envelope *e = (Envelope *)cd_json_decode(ENV_DESC, buf, sizeof buf - 5, &B, &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->request_id, 2);
  cr_assert_eq(e->msg_case, CONTACTD__V1__ENVELOPE__MSG_STATS);
}

Test(json, nan_infinity_strings) {
  cd_wire_error err;
  Envelope *e = decode("{\"contactReply\":{\"results\":[{\"area\":\"NaN\",\"combinedModulus\":\"Infinity\","
                       "\"centroid\":{\"x\":\"-Infinity\",\"y\":\"1.5\",\"z\":-2.5e-3}}]}}",
                       &err);
  cr_assert_not_null(e, "%s", err.message);
  Contactd__V1__PairResult *r = e->contact_reply->results[0];
  cr_assert(isnan(r->area));
  cr_assert(isinf(r->combined_modulus) && r->combined_modulus > 0);
  cr_assert(isinf(r->centroid->x) && r->centroid->x < 0);
  cr_assert_eq(r->centroid->y, 1.5);
  cr_assert_eq(r->centroid->z, -2.5e-3);
  cr_assert_str_eq(encode(&e->base),
                   "{\"contactReply\":{\"results\":[{\"area\":\"NaN\",\"centroid\":{\"x\":\"-Infinity\","
                   "\"y\":1.5,\"z\":-0.0025},\"combinedModulus\":\"Infinity\"}]}}");
  expect_error("{\"contactReply\":{\"results\":[{\"area\":\"nan\"}]}}", "contactReply.results[0].area",
               "expected a number, got \"nan\"");
  expect_error("{\"contactReply\":{\"results\":[{\"area\":\"1.5x\"}]}}", "contactReply.results[0].area",
               "expected a number");
}

Test(json, doubles_roundtrip_exactly) {
  const double vals[] = {0.1, 1.0 / 3.0, 6.02214076e23, -1e-310, 5e-324, 1.7976931348623157e308};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
    Contactd__V1__Vec3 v = CONTACTD__V1__VEC3__INIT;
    v.x = vals[i];
    const char *js = encode(&v.base);
    cd_wire_error err;
    Contactd__V1__Vec3 *b =
        (Contactd__V1__Vec3 *)cd_json_decode(&contactd__v1__vec3__descriptor, js, strlen(js), &B, &err);
    cr_assert_not_null(b, "%s", err.message);
    cr_assert(memcmp(&b->x, &vals[i], sizeof(double)) == 0, "%.17g -> %s -> %.17g", vals[i], js, b->x);
  }
}

Test(json, base64_bytes) {
  cd_wire_error err;
  Envelope *e = decode("{\"registerGeometry\":{\"meshFile\":{\"data\":\"AAEC/w==\",\"format\":\"MESH_FORMAT_STL\"}}}", &err);
  cr_assert_not_null(e, "%s", err.message);
  Contactd__V1__MeshFile *mf = e->register_geometry->mesh_file;
  cr_assert_eq(mf->data.len, 4);
  cr_assert(mf->data.data[0] == 0 && mf->data.data[1] == 1 && mf->data.data[2] == 2 && mf->data.data[3] == 0xff);
  cr_assert_eq(mf->format, CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_STL);
  cr_assert_str_eq(encode(&e->base),
                   "{\"registerGeometry\":{\"meshFile\":{\"data\":\"AAEC/w==\",\"format\":\"MESH_FORMAT_STL\"}}}");
  /* URL-safe alphabet, no padding */
  e = decode("{\"registerGeometry\":{\"meshFile\":{\"data\":\"AAEC_w\"}}}", &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->register_geometry->mesh_file->data.len, 4);
  cr_assert_eq(e->register_geometry->mesh_file->data.data[3], 0xff);
  /* 1, 2 and 3 trailing bytes */
  const char *enc[] = {"QQ==", "QUI=", "QUJD"};
  for (int i = 0; i < 3; i++) {
    char js[128];
    snprintf(js, sizeof js, "{\"registerGeometry\":{\"meshFile\":{\"data\":\"%s\"}}}", enc[i]);
    e = decode(js, &err);
    cr_assert_not_null(e);
    cr_assert_eq(e->register_geometry->mesh_file->data.len, (size_t)i + 1);
    cr_assert_eq(memcmp(e->register_geometry->mesh_file->data.data, "ABC", (size_t)i + 1), 0);
    cr_assert_str_eq(encode(&e->base), js);
  }
  expect_error("{\"registerGeometry\":{\"meshFile\":{\"data\":\"AA$C\"}}}",
               "registerGeometry.meshFile.data", "invalid base64 at character 2");
  expect_error("{\"registerGeometry\":{\"meshFile\":{\"data\":\"AAAAA\"}}}",
               "registerGeometry.meshFile.data", "invalid base64");
}

Test(json, int64_as_strings) {
  cd_wire_error err;
  Envelope *e = decode("{\"requestId\":\"18446744073709551615\"}", &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->request_id, UINT64_MAX);
  cr_assert_str_eq(encode(&e->base), "{\"requestId\":\"18446744073709551615\"}");
  e = decode("{\"requestId\":42}", &err); /* numbers accepted too */
  cr_assert_not_null(e);
  cr_assert_eq(e->request_id, 42);
  e = decode("{\"contactReply\":{\"results\":[{\"candidatePairs\":\"-9223372036854775808\"}]}}", &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->contact_reply->results[0]->candidate_pairs, INT64_MIN);
  expect_error("{\"requestId\":\"18446744073709551616\"}", "requestId", "out of range");
  expect_error("{\"requestId\":\"-1\"}", "requestId", "expected an unsigned integer");
  expect_error("{\"requestId\":1e17}", "requestId", "must be written as a string");
  expect_error("{\"requestId\":1.5}", "requestId", "expected an integer");
  expect_error("{\"requestId\":\"12 \"}", "requestId", "expected an unsigned integer");
  /* 32-bit: range-checked */
  expect_error("{\"contactQuery\":{\"bodies\":[{\"bodyId\":4294967296}]}}", "contactQuery.bodies[0].bodyId",
               "out of range");
  e = decode("{\"contactQuery\":{\"bodies\":[{\"bodyId\":\"4294967295\"}]}}", &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->contact_query->bodies[0]->body_id, UINT32_MAX);
}

Test(json, enums_by_name_and_number) {
  cd_wire_error err;
  Envelope *e = decode("{\"registerGeometry\":{\"sphere\":{\"radius\":0.05},\"compliance\":\"COMPLIANCE_COMPLIANT\"}}", &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->register_geometry->compliance, CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT);
  cr_assert_eq(e->register_geometry->shape_case, CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE);
  cr_assert_eq(e->register_geometry->sphere->radius, 0.05);
  e = decode("{\"error\":{\"code\":8,\"message\":\"x\"}}", &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->error->code, CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED);
  cr_assert_str_eq(encode(&e->base), "{\"error\":{\"code\":\"RESOURCE_EXHAUSTED\",\"message\":\"x\"}}");
  expect_error("{\"registerGeometry\":{\"compliance\":\"SQUISHY\"}}", "registerGeometry.compliance",
               "unknown value \"SQUISHY\" of enum contactd.v1.Compliance");
  expect_error("{\"registerGeometry\":{\"compliance\":true}}", "registerGeometry.compliance",
               "expected a contactd.v1.Compliance name, got a boolean");
}

Test(json, unknown_field_named) {
  expect_error("{\"hello\":{\"clientNam\":\"x\"}}", "hello.clientNam",
               "unknown field \"clientNam\" of contactd.v1.Hello");
  expect_error("{\"requestId\":\"1\",\"bogus\":1}", "bogus", "unknown field \"bogus\"");
  /* snake_case lookups do not accept arbitrary case variants */
  expect_error("{\"RequestId\":\"1\"}", "RequestId", "unknown field");
}

Test(json, wrong_type_names_the_path) {
  expect_error("{\"contactQuery\":{\"bodies\":[{},{},{\"pose\":{\"position\":{\"x\":true}}}]}}",
               "contactQuery.bodies[2].pose.position.x", "expected a number, got a boolean");
  cd_wire_error err;
  decode("{\"contactQuery\":{\"bodies\":[{},{},{\"pose\":{\"position\":{\"x\":true}}}]}}", &err);
  cr_assert_str_eq(err.message, "contactQuery.bodies[2].pose.position.x: expected a number, got a boolean");
  expect_error("{\"contactQuery\":{\"bodies\":{}}}", "contactQuery.bodies", "expected an array, got an object");
  expect_error("{\"contactQuery\":{\"bodies\":[1]}}", "contactQuery.bodies[0]",
               "expected an object (contactd.v1.Body), got a number");
  expect_error("{\"contactQuery\":{\"bodies\":[null]}}", "contactQuery.bodies[0]", "null is not allowed");
  expect_error("{\"hello\":{\"clientName\":7}}", "hello.clientName", "expected a string, got a number");
  expect_error("{\"registerGeometry\":{\"wantProgress\":1}}", "registerGeometry.wantProgress",
               "expected true or false");
  expect_error("[1,2]", "", "expected an object (contactd.v1.Envelope), got an array");
}

Test(json, oneof_and_duplicates) {
  expect_error("{\"hello\":{},\"stats\":{}}", "stats", "only one of a oneof may be set (\"hello\" is set too)");
  expect_error("{\"requestId\":\"1\",\"request_id\":\"2\"}", "requestId", "field given twice");
  expect_error("{\"registerGeometry\":{\"sphere\":{},\"box\":{}}}", "registerGeometry.box", "only one of a oneof");
}

Test(json, null_means_default) {
  cd_wire_error err;
  Envelope *e = decode("{\"requestId\":null,\"hello\":{\"clientName\":null}}", &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->request_id, 0);
  cr_assert_str_eq(e->hello->client_name, "");
  cr_assert_str_eq(encode(&e->base), "{\"hello\":{}}");
}

Test(json, invalid_json) {
  expect_error("{\"hello\":", "", "invalid JSON at byte");
  expect_error("{\"hello\":{}} x", "", "unexpected characters after the value at byte 13");
  expect_error("", "", "invalid JSON");
  expect_error("{'a':1}", "", "invalid JSON at byte 2 (line 1, column 3)");
  expect_error("{\n\"a\":01x}", "", "line 2");
}

Test(json, budget_exhaustion) {
  /* 20000 numbers: ~100 KB of text, far beyond a 64 KiB budget once parsed */
  size_t n = 20000, cap = n * 6 + 100;
  char *js = malloc(cap);
  size_t o = (size_t)snprintf(js, cap, "{\"registerGeometry\":{\"convex\":{\"points\":[");
  for (size_t i = 0; i < n; i++) o += (size_t)snprintf(js + o, cap - o, i ? ",%zu" : "%zu", i % 10);
  o += (size_t)snprintf(js + o, cap - o, "]}}}");
  cd_budget small;
  cd_budget_init(&small, 64 << 10);
  cd_wire_error err;
  cr_assert_null(cd_json_decode(ENV_DESC, js, o, &small, &err));
  cr_assert_eq(err.code, CD_WIRE_RESOURCE_EXHAUSTED);
  cr_assert(strstr(err.message, "exceeds the decode budget of 65536 bytes"), "%s", err.message);
  cr_assert_leq(small.peak, 64 << 10);
  /* the same text fits a larger budget */
  cd_budget_reset(&small);
  cd_budget_set_limit(&small, 16 << 20);
  Envelope *e = (Envelope *)cd_json_decode(ENV_DESC, js, o, &small, &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->register_geometry->convex->n_points, n);
  cr_assert_eq(e->register_geometry->convex->points[n - 1], (double)((n - 1) % 10));
  /* encoding into a too-small budget fails cleanly too */
  cd_budget tiny;
  cd_budget_init(&tiny, 8 << 10);
  cr_assert_null(cd_json_encode(&e->base, &tiny, NULL, &err));
  cr_assert_eq(err.code, CD_WIRE_RESOURCE_EXHAUSTED);
  cr_assert_leq(tiny.peak, 8 << 10);
  cd_budget_destroy(&tiny);
  cd_budget_destroy(&small);
  free(js);
}

Test(json, other_cjson_users_unaffected) {
  /* after cd_json installed its hooks, plain cJSON use with malloc/free
   * semantics outside cd_json calls keeps working (ASan checks the frees) */
  cd_json_global_init();
  Contactd__V1__Stats st = CONTACTD__V1__STATS__INIT;
  char *p = cd_json_encode(&st.base, &B, NULL, NULL);
  cr_assert_str_eq(p, "{}");
  cJSON *root = cJSON_Parse("{\"a\":[1,2,3],\"b\":\"text\"}");
  cr_assert_not_null(root);
  char *printed = cJSON_PrintUnformatted(root);
  cr_assert_str_eq(printed, "{\"a\":[1,2,3],\"b\":\"text\"}");
  free(printed); /* plain free works: outside cd_json the hooks use malloc */
  cJSON_Delete(root);
  char name[32];
  cr_assert_eq(cd_json_name("worker_utilisation", name, sizeof name), 17);
  cr_assert_str_eq(name, "workerUtilisation");
}

Test(json, utf8_checked) {
  /* raw invalid bytes in a JSON string: rejected with the path */
  expect_error("{\"hello\":{\"clientName\":\"a\xff\"}}", "hello.clientName", "not valid UTF-8 (byte 1 of 2)");
  expect_error("{\"hello\":{\"clientName\":\"\xed\xa0\x80\"}}", "hello.clientName", "not valid UTF-8"); /* surrogate */
  expect_error("{\"hello\":{\"clientName\":\"\xc0\xaf\"}}", "hello.clientName", "not valid UTF-8"); /* overlong */
  cd_wire_error err;
  Envelope *e = decode("{\"hello\":{\"clientName\":\"\\u00e9\xe2\x82\xac\\ud83d\\ude00\"}}", &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_str_eq(e->hello->client_name, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");

  /* a NUL, escaped or raw, would end the C string: refused with its byte */
  expect_error("{\"hello\":{\"clientName\":\"ab\\u0000cd\"}}", "", "NUL character (\\u0000) at byte 26");
  const char raw[] = "{\"hello\":{\"clientName\":\"ab\0cd\"}}";
  e = (Envelope *)cd_json_decode(ENV_DESC, raw, sizeof raw - 1, &B, &err);
  cr_assert_null(e);
  cr_expect(strstr(err.message, "at byte 26"), "%s", err.message);
  /* an escaped backslash before u0000 is six plain characters */
  e = decode("{\"hello\":{\"clientName\":\"ab\\\\u0000\"}}", &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_str_eq(e->hello->client_name, "ab\\u0000");

  /* a binary client's invalid string: JSON output stays valid UTF-8 */
  Contactd__V1__Envelope env = CONTACTD__V1__ENVELOPE__INIT;
  Contactd__V1__HasGeometry hg = CONTACTD__V1__HAS_GEOMETRY__INIT;
  char *ids[2] = {"ok", "b\xffz"};
  hg.n_geometry_ids = 2;
  hg.geometry_ids = ids;
  env.msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
  env.has_geometry = &hg;
  cr_assert_str_eq(encode(&env.base), "{\"hasGeometry\":{\"geometryIds\":[\"ok\",\"b\xef\xbf\xbdz\"]}}");
}

/* Deterministic mutation fuzz: byte flips, truncations and insertions of
 * valid requests never crash and always either decode or fail with
 * INVALID_ARGUMENT / RESOURCE_EXHAUSTED and a message; whatever decodes
 * re-encodes and decodes again. */
Test(json, mutations_fail_cleanly) {
  const char *seeds[] = {
      "{\"requestId\":\"1\",\"hello\":{\"clientName\":\"me\",\"protocolVersion\":1}}",
      "{\"requestId\":\"7\",\"contactQuery\":{\"bodies\":[{\"bodyId\":1,\"geometryId\":\"ab\",\"pose\":{\"position\":"
      "{\"x\":0.1,\"y\":\"NaN\",\"z\":-1e-3},\"orientation\":{\"w\":1}}},{\"bodyId\":2}],\"pairs\":[{\"a\":1,\"b\":2}],"
      "\"options\":{\"detail\":\"DETAIL_SURFACE\",\"pointContacts\":true}}}",
      "{\"registerGeometry\":{\"tetMesh\":{\"vertices\":[0,0,0,1,0,0,0,1,0,0,0,1],\"tets\":[0,1,2,3],"
      "\"pressure\":{\"values\":[0,0,0,1e5]}},\"compliance\":\"COMPLIANCE_COMPLIANT\",\"modulus\":1e5}}",
      "{\"registerGeometry\":{\"meshFile\":{\"data\":\"c29saWQgeAo=\",\"format\":1}}}",
  };
  const char alphabet[] = "{}[]\",:0123456789.eE-+ntrufalsNIy\\\x80\xff aZ";
  uint32_t rng = 2463534242u;
  int decoded = 0, failed = 0;
  cd_budget b;
  cd_budget_init(&b, 1 << 20);
  char buf[1024];
  for (int it = 0; it < 4000; it++) {
    const char *s = seeds[it % 4];
    size_t n = strlen(s);
    memcpy(buf, s, n);
    int edits = 1 + it % 3;
    for (int k = 0; k < edits; k++) {
      rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
      size_t pos = rng % n;
      int op = (rng >> 8) % 3;
      char ch = alphabet[(rng >> 12) % (sizeof alphabet - 1)];
      if (op == 0) buf[pos] = ch;
      else if (op == 1) n = pos; /* truncate */
      else if (n + 1 < sizeof buf) {
        memmove(buf + pos + 1, buf + pos, n - pos);
        buf[pos] = ch;
        n++;
      }
      if (n == 0) break;
    }
    cd_wire_error err;
    cd_budget_reset(&b);
    ProtobufCMessage *m = cd_json_decode(ENV_DESC, buf, n, &b, &err);
    if (m) {
      decoded++;
      char *js = cd_json_encode(m, &b, NULL, &err);
      cr_assert_not_null(js);
      cr_assert_not_null(cd_json_decode(ENV_DESC, js, strlen(js), &b, &err), "%s: %s", js, err.message);
    } else {
      failed++;
      cr_assert(err.code == CD_WIRE_INVALID_ARGUMENT || err.code == CD_WIRE_RESOURCE_EXHAUSTED);
      cr_assert_gt(strlen(err.message), 10);
    }
  }
  cd_budget_destroy(&b);
  cr_assert_gt(failed, 2000, "%d failed", failed);
  cr_assert_gt(decoded, 10, "%d decoded", decoded);
}
