/* test_utf8.c — cd_utf8.c: the validator against the classes of invalid
 * UTF-8 and the in-place repair. */
#include <criterion/criterion.h>
#include <string.h>

#include "cd_utf8.h"

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
