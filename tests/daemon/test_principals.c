/* test_principals.c — the principals file (cd_principals.c): what it
 * accepts, each kind of mistake refused with a message naming the
 * principal and the key, and the look-ups by token, certificate subject
 * and Unix peer. */
#include <criterion/criterion.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cd_limits.h"
#include "cd_principals.h"

/* The hex SHA-256 of token, as an operator writes it into the file. */
static void sha256_hex(const char *token, char out[65]) {
  unsigned char h[32];
  unsigned n = 0;
  cr_assert(EVP_Digest(token, strlen(token), h, &n, EVP_sha256(), NULL));
  for (int i = 0; i < 32; i++) sprintf(out + 2 * i, "%02x", h[i]);
}

static cd_principals *parse(const char *text, char *err, size_t errlen) {
  err[0] = 0;
  return cd_principals_parse(text, strlen(text), err, errlen);
}

Test(principals, the_documented_example) {
  char robot[65], doc[1024], err[256];
  sha256_hex("robot-7-secret", robot);
  snprintf(doc, sizeof doc,
           "{\"_comment\": \"lab\", \"principals\": ["
           "{\"name\": \"robot-7\", \"token_sha256\": \"%s\", \"roles\": [\"query\"], \"tenant\": \"lab-a\"},"
           "{\"name\": \"sim-farm\", \"cert_subject\": \"CN=sim-farm\", \"roles\": [\"query\", \"register\"],"
           " \"tenant\": \"lab-b\"},"
           "{\"name\": \"ops\", \"uid\": 0, \"roles\": [\"admin\"], \"tenant\": \"*\"},"
           "{\"name\": \"group\", \"gid\": 1234, \"roles\": [\"query\"], \"tenant\": \"lab-a\"}]}",
           robot);
  cd_principals *s = parse(doc, err, sizeof err);
  cr_assert(s, "%s", err);
  cr_assert_eq(s->n, 4);

  const cd_principal *p = cd_principals_by_token(s, "robot-7-secret", 14);
  cr_assert(p);
  cr_expect_str_eq(p->name, "robot-7");
  cr_expect_str_eq(p->tenant, "lab-a");
  cr_expect_eq(p->roles, CD_ROLE_QUERY);
  cr_expect_null(cd_principals_by_token(s, "robot-7-secreT", 14), "one byte off");
  cr_expect_null(cd_principals_by_token(s, "robot-7-secret", 13), "a prefix");
  cr_expect_null(cd_principals_by_token(s, "", 0));

  p = cd_principals_by_subject(s, "CN=sim-farm");
  cr_assert(p);
  cr_expect_str_eq(p->name, "sim-farm");
  cr_expect_eq(p->roles, CD_ROLE_QUERY | CD_ROLE_REGISTER);
  cr_expect_null(cd_principals_by_subject(s, "CN=sim-farm2"));
  cr_expect_null(cd_principals_by_subject(s, ""));

  p = cd_principals_by_peer(s, 0, 999);
  cr_assert(p);
  cr_expect_str_eq(p->name, "ops");
  p = cd_principals_by_peer(s, 1000, 1234);
  cr_assert(p, "no uid matches: the gid does");
  cr_expect_str_eq(p->name, "group");
  cr_expect_null(cd_principals_by_peer(s, 1000, 1000));

  cr_expect(cd_principals_sees(cd_principals_by_peer(s, 0, 0), "lab-b"), "tenant * sees every tenant");
  cr_expect(cd_principals_sees(cd_principals_by_subject(s, "CN=sim-farm"), "lab-b"));
  cr_expect_not(cd_principals_sees(cd_principals_by_subject(s, "CN=sim-farm"), "lab-a"));
  cr_expect_str_eq(cd_principals_role_name(CD_ROLE_REGISTER), "register");
  cd_principals_unref(s);
}

Test(principals, references_keep_a_set_alive) {
  char err[256];
  cd_principals *s = parse("{\"principals\": [{\"name\": \"a\", \"uid\": 5, \"roles\": [\"query\"], "
                           "\"tenant\": \"t\"}]}",
                           err, sizeof err);
  cr_assert(s, "%s", err);
  cd_principals *held = cd_principals_ref(s);
  cd_principals_unref(s); /* the reload's swap */
  cr_expect_str_eq(cd_principals_by_peer(held, 5, 5)->name, "a", "still readable through the connection's reference");
  cd_principals_unref(held);
  cd_principals *none = parse("{\"principals\": []}", err, sizeof err);
  cr_assert(none, "an empty list is a valid file (nobody gets in): %s", err);
  cr_expect_null(cd_principals_by_token(none, "x", 1));
  cd_principals_unref(none);
}

/* Each mistake, and a fragment its message must hold. */
Test(principals, mistakes_are_named) {
  char hash[65];
  sha256_hex("t", hash);
  static char docs[16][512];
  const char *expect[16];
  int n = 0;
#define CASE(msg, ...) (snprintf(docs[n], sizeof docs[n], __VA_ARGS__), expect[n++] = (msg))
  CASE("not valid JSON", "{\"principals\": [");
  CASE("must be an object {", "[1, 2]");
  CASE("unknown key \"principal\" at the top", "{\"principal\": []}");
  CASE("\"principals\" must be an array", "{\"principals\": {}}");
  CASE("principal 0 must be an object", "{\"principals\": [3]}");
  CASE("principal 0: name must be", "{\"principals\": [{\"uid\": 1, \"roles\": [\"query\"], \"tenant\": \"t\"}]}");
  CASE("principal 0 (\"a\"): tenant is missing", "{\"principals\": [{\"name\": \"a\", \"uid\": 1, \"roles\": [\"query\"]}]}");
  CASE("principal 0 (\"a\"): roles is missing", "{\"principals\": [{\"name\": \"a\", \"uid\": 1, \"tenant\": \"t\"}]}");
  CASE("principal 0 (\"a\"): unknown role \"root\"",
       "{\"principals\": [{\"name\": \"a\", \"uid\": 1, \"roles\": [\"root\"], \"tenant\": \"t\"}]}");
  CASE("principal 0 (\"a\"): no way to recognise it",
       "{\"principals\": [{\"name\": \"a\", \"roles\": [\"query\"], \"tenant\": \"t\"}]}");
  CASE("principal 0 (\"a\"): token_sha256 must be 64 hexadecimal digits",
       "{\"principals\": [{\"name\": \"a\", \"token_sha256\": \"abc\", \"roles\": [\"query\"], \"tenant\": \"t\"}]}");
  CASE("principal 0 (\"a\"): uid must be an integer",
       "{\"principals\": [{\"name\": \"a\", \"uid\": -1, \"roles\": [\"query\"], \"tenant\": \"t\"}]}");
  CASE("principal 0 (\"a\"): unknown key \"tokn\"",
       "{\"principals\": [{\"name\": \"a\", \"tokn\": \"x\", \"roles\": [\"query\"], \"tenant\": \"t\"}]}");
  CASE("principal 1 (\"b\") has the same token_sha256 as principal 0 (\"a\")",
       "{\"principals\": [{\"name\": \"a\", \"token_sha256\": \"%s\", \"roles\": [\"query\"], \"tenant\": \"t\"},"
       "{\"name\": \"b\", \"token_sha256\": \"%s\", \"roles\": [\"query\"], \"tenant\": \"u\"}]}",
       hash, hash);
  CASE("principal 1 (\"a\") has the same name as principal 0 (\"a\")",
       "{\"principals\": [{\"name\": \"a\", \"uid\": 1, \"roles\": [\"query\"], \"tenant\": \"t\"},"
       "{\"name\": \"a\", \"uid\": 2, \"roles\": [\"query\"], \"tenant\": \"t\"}]}");
#undef CASE
  for (int i = 0; i < n; i++) {
    char err[512];
    cd_principals *s = parse(docs[i], err, sizeof err);
    cr_expect_null(s, "case %d is refused", i);
    cd_principals_unref(s);
    cr_expect(strstr(err, expect[i]), "case %d: \"%s\" in \"%s\"", i, expect[i], err);
    cr_expect_null(strstr(err, hash), "case %d: the hash is not echoed: %s", i, err);
  }
}

Test(principals, files) {
  char err[512], path[512], *dir = getenv("TMPDIR");
  snprintf(path, sizeof path, "%s/principals-%d.json", dir && *dir ? dir : P_tmpdir, (int)getpid());
  cr_expect_null(cd_principals_load(path, err, sizeof err));
  cr_expect(strstr(err, "cannot open") && strstr(err, path), "%s", err);
  FILE *f = fopen(path, "w");
  cr_assert(f);
  fprintf(f, "{\"principals\": [{\"name\": \"a\", \"uid\": 7, \"roles\": [\"query\"], \"tenant\": \"t\"}]}");
  fclose(f);
  cd_principals *s = cd_principals_load(path, err, sizeof err);
  cr_assert(s, "%s", err);
  cd_principals_unref(s);
  f = fopen(path, "w");
  cr_assert(f);
  for (uint64_t i = 0; i <= CD_PRINCIPALS_FILE_MAX; i += 64) fprintf(f, "%63s\n", "");
  fclose(f);
  cr_expect_null(cd_principals_load(path, err, sizeof err));
  cr_expect(strstr(err, "is over"), "%s", err);
  unlink(path);
}
