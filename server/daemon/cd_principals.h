/* cd_principals.h — who may connect: the principals file (config key
 * principals_file, flag --principals), each principal with a name, one
 * tenant, its roles, and how it is recognised: the SHA-256 of a token sent
 * in Hello, a client certificate's subject (mutual TLS), or the uid or gid
 * of a Unix-socket peer (SO_PEERCRED, PostgreSQL's "peer" method).
 *
 *   {"principals": [{"name": "robot-7", "token_sha256": "<64 hex>",
 *                    "roles": ["query"], "tenant": "lab-a"}, ...]}
 *
 * A loaded set is immutable and reference counted: a SIGHUP reload builds a
 * new one and swaps it in, while connections authenticated under the old
 * one keep it until they close. Tokens are hashed with OpenSSL and the
 * hashes compared in constant time (CRYPTO_memcmp, every principal
 * visited); no function here logs or returns a token or its hash. */
#ifndef CD_PRINCIPALS_H
#define CD_PRINCIPALS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Roles, each granting what it names (a principal lists every role it has):
 *   query:    Hello, HasGeometry, ContactQuery, streams;
 *   register: RegisterGeometry and ReleaseGeometry;
 *   admin:    Stats of every tenant and the viewer of every tenant. */
enum {
  CD_ROLE_QUERY = 1u << 0,
  CD_ROLE_REGISTER = 1u << 1,
  CD_ROLE_ADMIN = 1u << 2,
};

#define CD_PRINCIPAL_NAME_MAX 64
#define CD_PRINCIPAL_SUBJECT_MAX 256
/* The tenant of a principal that sees every tenant. */
#define CD_TENANT_ALL "*"

typedef struct cd_principal {
  char name[CD_PRINCIPAL_NAME_MAX];
  char tenant[CD_PRINCIPAL_NAME_MAX];
  unsigned roles; /* CD_ROLE_* */
  int has_token;
  uint8_t token_sha256[32];
  char cert_subject[CD_PRINCIPAL_SUBJECT_MAX]; /* "" = none; as OpenSSL prints it, e.g. "CN=sim-farm" */
  int has_uid, has_gid;
  uid_t uid;
  gid_t gid;
} cd_principal;

typedef struct cd_principals {
  atomic_int refs;
  size_t n;
  cd_principal *p;
} cd_principals;

/* Parse a principals document (len bytes, not NUL-terminated). Returns the
 * set (refs 1), or NULL with err naming what was wrong: the principal (by
 * index and name), the key and the rule it breaks. */
cd_principals *cd_principals_parse(const char *text, size_t len, char *err, size_t errlen);
/* Read and parse the file at path (at most CD_PRINCIPALS_FILE_MAX bytes). */
cd_principals *cd_principals_load(const char *path, char *err, size_t errlen);

cd_principals *cd_principals_ref(cd_principals *s);
void cd_principals_unref(cd_principals *s);

/* The principal whose token_sha256 is SHA-256(token), or NULL. Takes the
 * same time whichever principal matches, or none. */
const cd_principal *cd_principals_by_token(const cd_principals *s, const void *token, size_t len);
/* The principal with this certificate subject, or NULL. */
const cd_principal *cd_principals_by_subject(const cd_principals *s, const char *subject);
/* A Unix-socket peer: the principal with its uid, else one with its gid,
 * else NULL. */
const cd_principal *cd_principals_by_peer(const cd_principals *s, uid_t uid, gid_t gid);

/* Whether p may see tenant t's geometry and scenes. */
int cd_principals_sees(const cd_principal *p, const char *tenant);
/* "query", "register" or "admin" for one CD_ROLE_* bit. */
const char *cd_principals_role_name(unsigned role);

#endif
