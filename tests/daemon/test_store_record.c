/* test_store_record.c — the store's record format and URIs (units): a
 * record decodes only when it is ours, whole, valid here and hashes to its
 * key; every other byte string is refused with a reason. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cd_geomspec.h"
#include "cd_store.h"

static Contactd__V1__RegisterGeometry RG;
static Contactd__V1__Sphere SPH;
static cd_limits L;
static char ID[CD_HASH_HEX_LEN + 1];

static void setup(void) {
  contactd__v1__register_geometry__init(&RG);
  contactd__v1__sphere__init(&SPH);
  SPH.radius = 0.1;
  RG.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  RG.sphere = &SPH;
  RG.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  RG.modulus = 1e6;
  RG.resolution_hint = 0.02;
  RG.name = "ball";
  RG.want_progress = 1;
  cd_limits_default(&L);
  cd_geomspec_id(&RG, ID);
}

TestSuite(store_record, .init = setup);

Test(store_record, round_trip_keeps_the_geometry_drops_the_name) {
  size_t n = 0;
  uint8_t *b = cd_store_record_encode(&RG, &n);
  cr_assert(b && n > 24);
  char why[256] = "";
  Contactd__V1__RegisterGeometry *m = cd_store_record_decode(b, n, ID, &L, why, sizeof why);
  cr_assert(m, "%s", why);
  char id[CD_HASH_HEX_LEN + 1];
  cd_geomspec_id(m, id);
  cr_expect_str_eq(id, ID);
  cr_expect_str_eq(m->name, "");
  cr_expect_eq(m->want_progress, 0);
  contactd__v1__register_geometry__free_unpacked(m, NULL);
  free(b);
}

static void refused(uint8_t *b, size_t n, const char *id, const char *reason) {
  char why[256] = "";
  Contactd__V1__RegisterGeometry *m = cd_store_record_decode(b, n, id, &L, why, sizeof why);
  cr_expect_null(m, "refused: %s", reason);
  if (m) contactd__v1__register_geometry__free_unpacked(m, NULL);
  cr_expect(strstr(why, reason), "reason \"%s\" in \"%s\"", reason, why);
}

Test(store_record, anything_else_is_refused_with_a_reason) {
  size_t n = 0;
  uint8_t *b = cd_store_record_encode(&RG, &n);
  refused(b, n, "0000000000000000000000000000000000000000000000000000000000000000", "not to its key");
  refused(b, n - 1, ID, "truncated");
  refused(b, 10, ID, "bad magic");
  b[8] = 2;
  refused(b, n, ID, "format 2");
  b[8] = 1;
  b[0] ^= 1;
  refused(b, n, ID, "bad magic");
  b[0] ^= 1;
  memset(b + 24, 0xff, n - 24);
  refused(b, n, ID, "does not decode");
  free(b);
  SPH.radius = -1; /* a record of a registration this server refuses */
  cd_geomspec_id(&RG, ID);
  b = cd_store_record_encode(&RG, &n);
  refused(b, n, ID, "invalid here");
  free(b);
}

Test(store_record, uris) {
  char err[256];
  static const char *good[] = {"memory", "dir:/var/lib/contactd", "redis://127.0.0.1:6379",
                               "redis://redis.default.svc:6380/2", "unix:/run/redis.sock"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    cr_expect_eq(cd_store_check_uri(good[i], err, sizeof err), 0, "%s: %s", good[i], err);
  static const char *bad[] = {"", "dir:", "unix:", "redis://h", "redis://:1", "redis://h:99999", "redis://h:1/x",
                              "redis://u:p@h:1", "http://h"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    cr_expect_neq(cd_store_check_uri(bad[i], err, sizeof err), 0, "%s is refused", bad[i]);
}
