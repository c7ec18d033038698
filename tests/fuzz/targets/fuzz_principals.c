/* libFuzzer target: the principals file parser (cd_principals.c), as an
 * operator's file (or a broken one) meets it. Whatever the input, parsing
 * either succeeds with a set whose every principal is well formed and can
 * be looked up, or fails with a message; tokens derived from the input are
 * looked up too. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cd_principals.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[512];
  err[0] = 0;
  cd_principals *s = cd_principals_parse((const char *)data, size, err, sizeof err);
  if (!s) {
    if (!err[0] || !memchr(err, 0, sizeof err)) abort(); /* a refusal always says why */
    return 0;
  }
  for (size_t i = 0; i < s->n; i++) {
    const cd_principal *p = &s->p[i];
    if (!p->name[0] || !p->tenant[0] || !p->roles) abort();
    if (!p->has_token && !p->cert_subject[0] && !p->has_uid && !p->has_gid) abort();
    if (p->cert_subject[0] && cd_principals_by_subject(s, p->cert_subject) != p) abort();
  }
  (void)cd_principals_by_token(s, data, size);
  (void)cd_principals_by_peer(s, (uid_t)size, (gid_t)size);
  cd_principals_unref(s);
  return 0;
}
