/* cd_principals.c — see cd_principals.h. */
#include "cd_principals.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_limits.h"

static const struct {
  const char *name;
  unsigned bit;
} ROLES[] = {{"query", CD_ROLE_QUERY}, {"register", CD_ROLE_REGISTER}, {"admin", CD_ROLE_ADMIN}};

#define NROLES (sizeof ROLES / sizeof ROLES[0])

const char *cd_principals_role_name(unsigned role) {
  for (size_t i = 0; i < NROLES; i++)
    if (ROLES[i].bit == role) return ROLES[i].name;
  return "?";
}

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return -1;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A short name: 1 .. CD_PRINCIPAL_NAME_MAX-1 printable ASCII characters
 * (it appears in log lines and errors). */
static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n >= CD_PRINCIPAL_NAME_MAX) return 0;
  for (size_t i = 0; i < n; i++)
    if (s[i] <= ' ' || s[i] > '~' || s[i] == '"' || s[i] == '\\') return 0;
  return 1;
}

static int parse_id(const cJSON *v, const char *who, const char *key, char *err, size_t errlen) {
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 4294967294.0 ||
      v->valuedouble != floor(v->valuedouble))
    return fail(err, errlen, "principals: %s: %s must be an integer from 0 to 4294967294", who, key);
  return 0;
}

static int parse_roles(cd_principal *p, const cJSON *v, const char *who, char *err, size_t errlen) {
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) == 0)
    return fail(err, errlen, "principals: %s: roles must be a non-empty array of \"query\", \"register\", \"admin\"",
                who);
  const cJSON *r;
  cJSON_ArrayForEach(r, v) {
    unsigned bit = 0;
    for (size_t i = 0; cJSON_IsString(r) && i < NROLES; i++)
      if (strcmp(r->valuestring, ROLES[i].name) == 0) bit = ROLES[i].bit;
    if (!bit) {
      if (cJSON_IsString(r) && valid_name(r->valuestring))
        return fail(err, errlen, "principals: %s: unknown role \"%s\" (roles: query, register, admin)", who,
                    r->valuestring);
      return fail(err, errlen, "principals: %s: roles holds something other than query, register, admin", who);
    }
    p->roles |= bit;
  }
  return 0;
}

static int parse_token_hash(cd_principal *p, const cJSON *v, const char *who, char *err, size_t errlen) {
  /* the hash is not the secret, but it is not echoed either */
  if (!cJSON_IsString(v) || strlen(v->valuestring) != 64)
    return fail(err, errlen, "principals: %s: token_sha256 must be 64 hexadecimal digits (the SHA-256 of the token)",
                who);
  for (int i = 0; i < 32; i++) {
    int hi = hexval(v->valuestring[2 * i]), lo = hexval(v->valuestring[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return fail(err, errlen, "principals: %s: token_sha256 must be 64 hexadecimal digits (found another character)",
                  who);
    p->token_sha256[i] = (uint8_t)(hi << 4 | lo);
  }
  p->has_token = 1;
  return 0;
}

/* One member of a principal object. */
static int parse_member(cd_principal *p, const cJSON *it, const char *who, char *err, size_t errlen) {
  const char *k = it->string;
  if (k[0] == '_') return 0; /* a comment */
  if (strcmp(k, "name") == 0) return 0; /* read first, by the caller */
  if (strcmp(k, "tenant") == 0) {
    if (!cJSON_IsString(it) || !valid_name(it->valuestring))
      return fail(err, errlen, "principals: %s: tenant must be a name of 1 to %d printable characters, or \"*\"", who,
                  CD_PRINCIPAL_NAME_MAX - 1);
    snprintf(p->tenant, sizeof p->tenant, "%s", it->valuestring);
    return 0;
  }
  if (strcmp(k, "roles") == 0) return parse_roles(p, it, who, err, errlen);
  if (strcmp(k, "token_sha256") == 0) return parse_token_hash(p, it, who, err, errlen);
  if (strcmp(k, "cert_subject") == 0) {
    if (!cJSON_IsString(it) || !it->valuestring[0] || strlen(it->valuestring) >= CD_PRINCIPAL_SUBJECT_MAX)
      return fail(err, errlen, "principals: %s: cert_subject must be a non-empty string under %d characters", who,
                  CD_PRINCIPAL_SUBJECT_MAX);
    snprintf(p->cert_subject, sizeof p->cert_subject, "%s", it->valuestring);
    return 0;
  }
  if (strcmp(k, "uid") == 0 || strcmp(k, "gid") == 0) {
    if (parse_id(it, who, k, err, errlen)) return -1;
    if (k[0] == 'u') {
      p->uid = (uid_t)it->valuedouble;
      p->has_uid = 1;
    } else {
      p->gid = (gid_t)it->valuedouble;
      p->has_gid = 1;
    }
    return 0;
  }
  return fail(err, errlen,
              "principals: %s: unknown key \"%.40s\" (keys: name, tenant, roles, token_sha256, cert_subject, uid, gid)",
              who, k);
}

static int parse_principal(cd_principal *p, const cJSON *o, size_t index, char *err, size_t errlen) {
  char who[CD_PRINCIPAL_NAME_MAX + 40];
  snprintf(who, sizeof who, "principal %zu", index);
  if (!cJSON_IsObject(o)) return fail(err, errlen, "principals: %s must be an object", who);
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
  if (!cJSON_IsString(name) || !valid_name(name->valuestring))
    return fail(err, errlen, "principals: %s: name must be a string of 1 to %d printable characters", who,
                CD_PRINCIPAL_NAME_MAX - 1);
  snprintf(p->name, sizeof p->name, "%s", name->valuestring);
  snprintf(who, sizeof who, "principal %zu (\"%s\")", index, p->name);
  const cJSON *it;
  cJSON_ArrayForEach(it, o) if (parse_member(p, it, who, err, errlen)) return -1;
  if (!p->tenant[0]) return fail(err, errlen, "principals: %s: tenant is missing", who);
  if (!p->roles) return fail(err, errlen, "principals: %s: roles is missing", who);
  if (!p->has_token && !p->cert_subject[0] && !p->has_uid && !p->has_gid)
    return fail(err, errlen, "principals: %s: no way to recognise it: give token_sha256, cert_subject, uid or gid",
                who);
  return 0;
}

/* Two principals recognised by the same thing would make the answer depend
 * on their order. */
static int check_unique(const cd_principals *s, char *err, size_t errlen) {
  for (size_t i = 0; i < s->n; i++) {
    const cd_principal *a = &s->p[i];
    for (size_t j = 0; j < i; j++) {
      const cd_principal *b = &s->p[j];
      const char *what = NULL;
      if (strcmp(a->name, b->name) == 0) what = "name";
      else if (a->has_token && b->has_token && memcmp(a->token_sha256, b->token_sha256, 32) == 0)
        what = "token_sha256";
      else if (a->cert_subject[0] && strcmp(a->cert_subject, b->cert_subject) == 0) what = "cert_subject";
      else if (a->has_uid && b->has_uid && a->uid == b->uid) what = "uid";
      else if (a->has_gid && b->has_gid && a->gid == b->gid) what = "gid";
      if (what)
        return fail(err, errlen, "principals: principal %zu (\"%s\") has the same %s as principal %zu (\"%s\")", i,
                    a->name, what, j, b->name);
    }
  }
  return 0;
}

static cd_principals *parse_root(const cJSON *root, char *err, size_t errlen) {
  if (!cJSON_IsObject(root)) {
    fail(err, errlen, "principals: the document must be an object {\"principals\": [...]}");
    return NULL;
  }
  const cJSON *list = NULL, *it;
  cJSON_ArrayForEach(it, root) {
    if (strcmp(it->string, "principals") == 0) list = it;
    else if (it->string[0] != '_') {
      fail(err, errlen, "principals: unknown key \"%.40s\" at the top (keys: principals)", it->string);
      return NULL;
    }
  }
  if (!cJSON_IsArray(list)) {
    fail(err, errlen, "principals: \"principals\" must be an array");
    return NULL;
  }
  size_t n = (size_t)cJSON_GetArraySize(list);
  if (n > CD_PRINCIPALS_MAX) {
    fail(err, errlen, "principals: %zu principals (at most %d)", n, CD_PRINCIPALS_MAX);
    return NULL;
  }
  cd_principals *s = calloc(1, sizeof *s);
  if (!s || (n && !(s->p = calloc(n, sizeof *s->p)))) {
    free(s);
    fail(err, errlen, "principals: out of memory");
    return NULL;
  }
  atomic_init(&s->refs, 1);
  cJSON_ArrayForEach(it, list) {
    if (parse_principal(&s->p[s->n], it, s->n, err, errlen)) break;
    s->n++;
  }
  if (s->n < n || check_unique(s, err, errlen)) {
    cd_principals_unref(s);
    return NULL;
  }
  return s;
}

cd_principals *cd_principals_parse(const char *text, size_t len, char *err, size_t errlen) {
  cJSON *root = cJSON_ParseWithLength(text, len);
  if (!root) {
    const char *at = cJSON_GetErrorPtr();
    size_t off = at && at >= text && at <= text + len ? (size_t)(at - text) : 0;
    fail(err, errlen, "principals: not valid JSON (near byte %zu)", off);
    return NULL;
  }
  cd_principals *s = parse_root(root, err, errlen);
  cJSON_Delete(root);
  return s;
}

cd_principals *cd_principals_load(const char *path, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fail(err, errlen, "principals: cannot open %s: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = CD_PRINCIPALS_FILE_MAX + 1;
  char *buf = malloc(cap);
  size_t n = buf ? fread(buf, 1, cap, f) : 0;
  int bad = ferror(f);
  fclose(f);
  cd_principals *s = NULL;
  if (!buf) fail(err, errlen, "principals: out of memory reading %s", path);
  else if (bad) fail(err, errlen, "principals: cannot read %s", path);
  else if (n == cap) fail(err, errlen, "principals: %s is over %llu bytes", path,
                          (unsigned long long)CD_PRINCIPALS_FILE_MAX);
  else s = cd_principals_parse(buf, n, err, errlen);
  free(buf);
  return s;
}

cd_principals *cd_principals_ref(cd_principals *s) {
  if (s) atomic_fetch_add(&s->refs, 1);
  return s;
}

void cd_principals_unref(cd_principals *s) {
  if (!s || atomic_fetch_sub(&s->refs, 1) != 1) return;
  if (s->p) OPENSSL_cleanse(s->p, s->n * sizeof *s->p);
  free(s->p);
  free(s);
}

const cd_principal *cd_principals_by_token(const cd_principals *s, const void *token, size_t len) {
  if (!s || len == 0 || len > CD_TOKEN_MAX_BYTES) return NULL;
  uint8_t h[32];
  unsigned hl = 0;
  if (!EVP_Digest(token, len, h, &hl, EVP_sha256(), NULL) || hl != sizeof h) return NULL;
  /* every principal is compared, whichever matches, so the time taken does
   * not tell how far down the list the token is */
  const cd_principal *found = NULL;
  for (size_t i = 0; i < s->n; i++) {
    int eq = s->p[i].has_token & (CRYPTO_memcmp(s->p[i].token_sha256, h, sizeof h) == 0);
    if (eq) found = &s->p[i];
  }
  OPENSSL_cleanse(h, sizeof h);
  return found;
}

const cd_principal *cd_principals_by_subject(const cd_principals *s, const char *subject) {
  if (!s || !subject || !subject[0]) return NULL;
  for (size_t i = 0; i < s->n; i++)
    if (s->p[i].cert_subject[0] && strcmp(s->p[i].cert_subject, subject) == 0) return &s->p[i];
  return NULL;
}

const cd_principal *cd_principals_by_peer(const cd_principals *s, uid_t uid, gid_t gid) {
  if (!s) return NULL;
  for (size_t i = 0; i < s->n; i++)
    if (s->p[i].has_uid && s->p[i].uid == uid) return &s->p[i];
  for (size_t i = 0; i < s->n; i++)
    if (s->p[i].has_gid && s->p[i].gid == gid) return &s->p[i];
  return NULL;
}

int cd_principals_sees(const cd_principal *p, const char *tenant) {
  return p && tenant && (strcmp(p->tenant, CD_TENANT_ALL) == 0 || strcmp(p->tenant, tenant) == 0);
}
