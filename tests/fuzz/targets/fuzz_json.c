/* libFuzzer target: the proto3 JSON codec (cd_json.c) as a JSON
 * connection meets it. The input is one line of text: decoded as an
 * Envelope inside a decode budget, and what decodes is encoded again, as a
 * reply would be. The encoding must decode in turn and encode to the same
 * text (the mapping is its own inverse on what it writes). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cd_budget.h"
#include "cd_json.h"
#include "contactd.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BUDGET ((size_t)8 << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const ProtobufCMessageDescriptor *d = &contactd__v1__envelope__descriptor;
  cd_budget b;
  cd_budget_init(&b, BUDGET);
  cd_wire_error err;
  memset(&err, 0, sizeof err);
  ProtobufCMessage *m = cd_json_decode(d, (const char *)data, size, &b, &err);
  if (!m) {
    if (err.code != CD_WIRE_INVALID_ARGUMENT && err.code != CD_WIRE_RESOURCE_EXHAUSTED) abort();
    goto out;
  }
  size_t len1 = 0;
  char *t1 = cd_json_encode(m, &b, &len1, &err);
  if (!t1) {
    if (err.code != CD_WIRE_RESOURCE_EXHAUSTED) abort();
    goto out;
  }
  if (strlen(t1) != len1) abort();
  ProtobufCMessage *m2 = cd_json_decode(d, t1, len1, &b, &err);
  if (!m2) {
    if (err.code == CD_WIRE_RESOURCE_EXHAUSTED) goto out;
    abort(); /* the codec could not read what it wrote */
  }
  size_t len2 = 0;
  char *t2 = cd_json_encode(m2, &b, &len2, &err);
  if (!t2) goto out;
  if (len1 != len2 || memcmp(t1, t2, len1) != 0) abort();
out:
  cd_budget_destroy(&b);
  return 0;
}
