/* cd_store_record.c — what the store holds for one geometry: a 24-byte
 * header (the magic "CDSTORE1", format version, kind, payload length, all
 * little-endian) and the RegisterGeometry as packed protobuf. The canonical
 * id encoding (cd_geomspec_id) is a one-way digest input, not a format that
 * decodes back into a registration, so the registration itself is stored
 * and its id recomputed through that same encoding on every read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_geomspec.h"
#include "cd_store.h"

#define REC_MAGIC "CDSTORE1"
#define REC_VERSION 1u
#define REC_KIND_SPEC 1u
#define REC_HEADER 24

static void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--) v = v << 8 | p[i];
  return v;
}
static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
  return v;
}

uint8_t *cd_store_record_encode(const Contactd__V1__RegisterGeometry *m, size_t *len) {
  /* the name and the progress flag do not change the geometry (nor its id) */
  Contactd__V1__RegisterGeometry c = *m;
  c.name = (char *)protobuf_c_empty_string;
  c.want_progress = 0;
  size_t n = contactd__v1__register_geometry__get_packed_size(&c);
  uint8_t *b = malloc(REC_HEADER + n);
  if (!b) return NULL;
  memcpy(b, REC_MAGIC, 8);
  put_u32(b + 8, REC_VERSION);
  put_u32(b + 12, REC_KIND_SPEC);
  put_u64(b + 16, n);
  contactd__v1__register_geometry__pack(&c, b + REC_HEADER);
  *len = REC_HEADER + n;
  return b;
}

Contactd__V1__RegisterGeometry *cd_store_record_decode(const uint8_t *data, size_t len, const char *id,
                                                       const cd_limits *l, char *why, size_t whylen) {
  if (len < REC_HEADER || memcmp(data, REC_MAGIC, 8) != 0) {
    snprintf(why, whylen, "not a contactd store record (bad magic)");
    return NULL;
  }
  if (get_u32(data + 8) != REC_VERSION || get_u32(data + 12) != REC_KIND_SPEC) {
    snprintf(why, whylen, "record format %u kind %u is not this server's (%u, %u)", get_u32(data + 8),
             get_u32(data + 12), REC_VERSION, REC_KIND_SPEC);
    return NULL;
  }
  if (get_u64(data + 16) != len - REC_HEADER) {
    snprintf(why, whylen, "payload is %zu bytes, header says %llu (truncated?)", len - REC_HEADER,
             (unsigned long long)get_u64(data + 16));
    return NULL;
  }
  Contactd__V1__RegisterGeometry *m = contactd__v1__register_geometry__unpack(NULL, len - REC_HEADER,
                                                                             data + REC_HEADER);
  if (!m) {
    snprintf(why, whylen, "payload does not decode as a RegisterGeometry");
    return NULL;
  }
  cd_status st;
  memset(&st, 0, sizeof st);
  if (cd_geomspec_check(m, l, &st)) {
    snprintf(why, whylen, "registration is invalid here: %s: %s", st.field, st.message);
    contactd__v1__register_geometry__free_unpacked(m, NULL);
    return NULL;
  }
  char got[CD_HASH_HEX_LEN + 1];
  cd_geomspec_id(m, got);
  if (strcmp(got, id) != 0) {
    snprintf(why, whylen, "content hashes to %.16s..., not to its key", got);
    contactd__v1__register_geometry__free_unpacked(m, NULL);
    return NULL;
  }
  return m;
}
