/* test_utf8.c — cd_utf8.c: the validator against the classes of invalid
 * UTF-8, the in-place repair, and the walk over an Envelope's encoding
 * that names the first bad string by its JSON path. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cd_utf8.h"
#include "contactd.pb-c.h"

static size_t vp(const char *s) { return cd_utf8_valid_prefix(s, strlen(s)); }

Test(utf8, valid_prefix) {
  cr_expect_eq(vp(""), 0);
  cr_expect_eq(vp("plain ascii"), 11);
  cr_expect_eq(vp("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"), 14, "2, 3 and 4-byte forms");
  cr_expect_eq(vp("ab\xC0\x80"), 2, "overlong NUL");
  cr_expect_eq(vp("ab\xE0\x80\xAF"), 2, "overlong 3-byte");
  cr_expect_eq(vp("ab\xF0\x80\x80\xAF"), 2, "overlong 4-byte");
  cr_expect_eq(vp("ab\xED\xA0\x80"), 2, "a surrogate");
  cr_expect_eq(vp("ab\xF4\x90\x80\x80"), 2, "above U+10FFFF");
  cr_expect_eq(vp("ab\xF5\x80\x80\x80"), 2, "F5 never starts a sequence");
  cr_expect_eq(vp("ab\x80"), 2, "a lone continuation byte");
  cr_expect_eq(vp("ab\xC3"), 2, "cut before its continuation");
  cr_expect_eq(vp("ab\xE2\x82"), 2, "cut inside a 3-byte form");
  cr_expect_eq(vp("\xF4\x8F\xBF\xBF"), 4, "U+10FFFF itself");
  cr_expect_eq(vp("\xEF\xBF\xBF"), 3, "U+FFFF");
}

Test(utf8, repair_replaces_bad_bytes_in_place) {
  char s[] = "x\xC3\xA9y\xFF\xFEz\xE2\x82";
  cr_expect_eq(cd_utf8_repair(s), 4);
  cr_expect_str_eq(s, "x\xC3\xA9y??z??");
  char t[] = "ok \xF0\x9F\x98\x80";
  cr_expect_eq(cd_utf8_repair(t), 0);
  cr_expect_str_eq(t, "ok \xF0\x9F\x98\x80");
}

/* Encodes e and turns every 'X' byte of the encoding into a NUL. */
static uint8_t *pack_with_nuls(const Contactd__V1__Envelope *e, size_t *len) {
  *len = contactd__v1__envelope__get_packed_size(e);
  uint8_t *buf = malloc(*len + 16);
  contactd__v1__envelope__pack(e, buf);
  for (size_t i = 0; i < *len; i++)
    if (buf[i] == 'X') buf[i] = 0;
  return buf;
}

Test(utf8, check_wire_sees_what_a_c_string_hides) {
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
  cr_assert_eq(cd_utf8_check_wire(&contactd__v1__envelope__descriptor, buf, len, &err), -1);
  cr_expect_eq(err.code, CD_WIRE_INVALID_ARGUMENT);
  cr_expect_str_eq(err.field, "contactQuery.bodies[1].geometryId");
  cr_expect(strstr(err.message, "holds a NUL character (byte 3 of 7)"), "%s", err.message);
  free(buf);
  /* the first fault of a string is named: here the NUL before the bad byte
   * the decoded walk never sees */
  b1.geometry_id = "aXb\xFF";
  buf = pack_with_nuls(&e, &len);
  cr_assert_eq(cd_utf8_check_wire(&contactd__v1__envelope__descriptor, buf, len, &err), -1);
  cr_expect(strstr(err.message, "holds a NUL character (byte 1 of 4)"), "%s", err.message);
  free(buf);
  b1.geometry_id = "bad\xFF";
  buf = pack_with_nuls(&e, &len);
  cr_assert_eq(cd_utf8_check_wire(&contactd__v1__envelope__descriptor, buf, len, &err), -1);
  cr_expect_str_eq(err.field, "contactQuery.bodies[1].geometryId");
  cr_expect(strstr(err.message, "not valid UTF-8 (byte 3 of 4)"), "%s", err.message);
  free(buf);
  /* clean strings pass; an unknown field's bytes are not a string of ours */
  b1.geometry_id = "fine too";
  buf = pack_with_nuls(&e, &len);
  cr_expect_eq(cd_utf8_check_wire(&contactd__v1__envelope__descriptor, buf, len, &err), 0);
  const uint8_t unknown[] = {0xC2, 0x3E, 0x03, 'a', 0, 0xFF}; /* field 1000, length 3 */
  memcpy(buf + len, unknown, sizeof unknown);
  cr_expect_eq(cd_utf8_check_wire(&contactd__v1__envelope__descriptor, buf, len + sizeof unknown, &err), 0);
  free(buf);
  /* repeated strings are indexed */
  char *ids[3] = {"a", "b", "cXd"};
  Contactd__V1__HasGeometry h = CONTACTD__V1__HAS_GEOMETRY__INIT;
  h.n_geometry_ids = 3;
  h.geometry_ids = ids;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HAS_GEOMETRY;
  e.has_geometry = &h;
  buf = pack_with_nuls(&e, &len);
  cr_assert_eq(cd_utf8_check_wire(&contactd__v1__envelope__descriptor, buf, len, &err), -1);
  cr_expect_str_eq(err.field, "hasGeometry.geometryIds[2]");
  free(buf);
}
