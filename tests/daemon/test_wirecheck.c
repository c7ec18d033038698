/* test_wirecheck.c — cd_wirecheck.c: the string check over an Envelope's
 * encoding (UTF-8, and the NUL a decoded C string hides), and the
 * diagnosis of encodings protobuf-c refuses, each named by its JSON path
 * and byte offset. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cd_frame.h"
#include "cd_wirecheck.h"
#include "contactd.pb-c.h"

#define ENV (&contactd__v1__envelope__descriptor)

/* Encodes e and turns every 'X' byte of the encoding into a NUL. */
static uint8_t *pack_with_nuls(const Contactd__V1__Envelope *e, size_t *len) {
  *len = contactd__v1__envelope__get_packed_size(e);
  uint8_t *buf = malloc(*len + 16);
  contactd__v1__envelope__pack(e, buf);
  for (size_t i = 0; i < *len; i++)
    if (buf[i] == 'X') buf[i] = 0;
  return buf;
}

Test(wirecheck, strings_sees_what_a_c_string_hides) {
  Contactd__V1__Body b0 = CONTACTD__V1__BODY__INIT, b1 = CONTACTD__V1__BODY__INIT, *bodies[2] = {&b0, &b1};
  b0.geometry_id = "fine";
  b1.geometry_id = "abcXdef";
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = 2;
  q.bodies = bodies;
  Contactd__V1__Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  e.request_id = 7;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  size_t len;
  uint8_t *buf = pack_with_nuls(&e, &len);
  /* decoded, the id is silently "abc": only the encoding shows the NUL */
  Contactd__V1__Envelope *d = contactd__v1__envelope__unpack(NULL, len, buf);
  cr_assert(d);
  cr_expect_str_eq(d->contact_query->bodies[1]->geometry_id, "abc");
  contactd__v1__envelope__free_unpacked(d, NULL);
  cd_wire_error err;
  memset(&err, 0, sizeof err);
  cr_assert_eq(cd_wirecheck_strings(ENV, buf, len, &err), -1);
  cr_expect_eq(err.code, CD_WIRE_INVALID_ARGUMENT);
  cr_expect_str_eq(err.field, "contactQuery.bodies[1].geometryId");
  cr_expect(strstr(err.message, "holds a NUL character (byte 3 of 7)"), "%s", err.message);
  free(buf);
  /* the first fault of a string is named: here the NUL before the bad byte
   * the decoded walk never sees */
  b1.geometry_id = "aXb\xFF";
  buf = pack_with_nuls(&e, &len);
  cr_assert_eq(cd_wirecheck_strings(ENV, buf, len, &err), -1);
  cr_expect(strstr(err.message, "holds a NUL character (byte 1 of 4)"), "%s", err.message);
  free(buf);
  b1.geometry_id = "bad\xFF";
  buf = pack_with_nuls(&e, &len);
  cr_assert_eq(cd_wirecheck_strings(ENV, buf, len, &err), -1);
  cr_expect_str_eq(err.field, "contactQuery.bodies[1].geometryId");
  cr_expect(strstr(err.message, "not valid UTF-8 (byte 3 of 4)"), "%s", err.message);
  free(buf);
  /* clean strings pass; an unknown field's bytes are not a string of ours */
  b1.geometry_id = "fine too";
  buf = pack_with_nuls(&e, &len);
  cr_expect_eq(cd_wirecheck_strings(ENV, buf, len, &err), 0);
  const uint8_t unknown[] = {0xC2, 0x3E, 0x03, 'a', 0, 0xFF}; /* field 1000, length 3 */
  memcpy(buf + len, unknown, sizeof unknown);
  cr_expect_eq(cd_wirecheck_strings(ENV, buf, len + sizeof unknown, &err), 0);
  free(buf);
  /* repeated strings are indexed */
  char *ids[3] = {"a", "b", "cXd"};
  Contactd__V1__HasGeometry h = CONTACTD__V1__HAS_GEOMETRY__INIT;
  h.n_geometry_ids = 3;
  h.geometry_ids = ids;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
  e.has_geometry = &h;
  buf = pack_with_nuls(&e, &len);
  cr_assert_eq(cd_wirecheck_strings(ENV, buf, len, &err), -1);
  cr_expect_str_eq(err.field, "hasGeometry.geometryIds[2]");
  free(buf);
}

/* The diagnosis of b[0..n): 0 (nothing found) or -1 with field and why. */
static int diag(const uint8_t *b, size_t n, char *field, char *why) {
  return cd_wirecheck_diagnose(ENV, b, n, field, 256, why, 200);
}

Test(wirecheck, diagnose_names_the_malformation) {
  char field[256], why[200];
  /* a ContactQuery (Envelope field 11) with one Body (field 1) whose
   * geometryId (field 2) claims 9 bytes but has 3 */
  const uint8_t cut[] = {0x08, 0x07, 0x5A, 0x07, 0x0A, 0x05, 0x12, 0x09, 'a', 'b', 'c'};
  cr_assert_eq(diag(cut, sizeof cut, field, why), -1);
  cr_expect_str_eq(field, "contactQuery.bodies[0].geometryId");
  cr_expect_str_eq(why, "length 9 at byte 7 runs past the end of its message (3 bytes left)");
  /* the same, with protobuf-c: the frame's error carries the diagnosis */
  cd_budget b;
  cd_budget_init(&b, 1 << 20);
  cd_wire_error err;
  cr_assert_null(cd_frame_unpack(ENV, cut, sizeof cut, &b, &err));
  cr_expect_eq(err.code, CD_WIRE_INVALID_ARGUMENT);
  cr_expect_str_eq(err.field, "contactQuery.bodies[0].geometryId");
  cr_expect(strstr(err.message, "not a valid contactd.v1.Envelope: contactQuery.bodies[0].geometryId: length 9"), "%s",
            err.message);
  cd_budget_destroy(&b);
  /* requestId (a varint) sent as a fixed64 */
  const uint8_t wt[] = {0x09, 1, 2, 3, 4, 5, 6, 7, 8};
  cr_assert_eq(diag(wt, sizeof wt, field, why), -1);
  cr_expect_str_eq(field, "requestId");
  cr_expect_str_eq(why, "wire type 1, but the field is written with wire type 0");
  /* a varint cut off, a key cut off, field 0, a group */
  const uint8_t v[] = {0x08, 0x80, 0x80};
  cr_assert_eq(diag(v, sizeof v, field, why), -1);
  cr_expect_str_eq(why, "truncated varint at byte 1");
  const uint8_t k[] = {0x08, 0x01, 0x80};
  cr_assert_eq(diag(k, sizeof k, field, why), -1);
  cr_expect_str_eq(field, "");
  cr_expect_str_eq(why, "truncated field key at byte 2");
  const uint8_t z[] = {0x02, 0x00};
  cr_assert_eq(diag(z, sizeof z, field, why), -1);
  cr_expect_str_eq(why, "field number 0 at byte 0");
  const uint8_t g[] = {0x08, 0x01, 0xC3, 0x3E};
  cr_assert_eq(diag(g, sizeof g, field, why), -1);
  cr_expect_str_eq(why, "unsupported wire type 3 at byte 2");
  /* a packed repeated number is fine, and so is a valid Envelope */
  Contactd__V1__Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  Contactd__V1__Body body = CONTACTD__V1__BODY__INIT, *bodies[1] = {&body};
  body.geometry_id = "abc";
  Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
  q.n_bodies = 1;
  q.bodies = bodies;
  e.request_id = 7;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_CONTACT_QUERY;
  e.contact_query = &q;
  uint8_t buf[256];
  size_t n = contactd__v1__envelope__pack(&e, buf);
  cr_expect_eq(diag(buf, n, field, why), 0);
  /* every truncation of it is found, with protobuf-c refusing it too */
  for (size_t cutn = 1; cutn < n; cutn++) {
    Contactd__V1__Envelope *d = contactd__v1__envelope__unpack(NULL, cutn, buf);
    if (d) {
      contactd__v1__envelope__free_unpacked(d, NULL);
      continue; /* a cut at a field boundary is a shorter valid message */
    }
    cr_expect_eq(diag(buf, cutn, field, why), -1, "cut at %zu: protobuf-c refuses, the walk finds why", cutn);
  }
}
