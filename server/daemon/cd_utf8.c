/* cd_utf8.c — UTF-8 validation of requests and repair of error texts. */
#include "cd_utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cd_json.h"

/* Bytes of the valid sequence starting at s[0..n), or 0. */
static size_t seq_len(const unsigned char *s, size_t n) {
  const unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t k;
  uint32_t cp, min;
  if (c >= 0xC2 && c <= 0xDF) k = 2, cp = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) k = 3, cp = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) k = 4, cp = c & 0x07, min = 0x10000;
  else return 0; /* a continuation byte, C0/C1 (overlong), F5..FF */
  if (n < k) return 0;
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return k;
}

size_t cd_utf8_valid_prefix(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    if (u[i] < 0x80) { /* ASCII runs: the usual case */
      i++;
      continue;
    }
    size_t k = seq_len(u + i, n - i);
    if (!k) return i;
    i += k;
  }
  return n;
}

size_t cd_utf8_repair(char *s) {
  size_t n = strlen(s), bad = 0, i = 0;
  while (i < n) {
    size_t k = seq_len((const unsigned char *)s + i, n - i);
    if (k) {
      i += k;
    } else {
      s[i++] = '?';
      bad++;
    }
  }
  return bad;
}

/* The JSON path of the field being checked, built as the walk goes down. */
typedef struct walk {
  char path[256];
  size_t len;
  cd_wire_error *err;
} walk;

static size_t push(walk *w, const char *name, long index) {
  const size_t at = w->len;
  char seg[128];
  cd_json_name(name, seg, sizeof seg);
  int k = index >= 0 ? snprintf(w->path + at, sizeof w->path - at, "%s%s[%ld]", at ? "." : "", seg, index)
                     : snprintf(w->path + at, sizeof w->path - at, "%s%s", at ? "." : "", seg);
  if (k > 0) w->len = at + (size_t)k < sizeof w->path ? at + (size_t)k : sizeof w->path - 1;
  return at;
}

/* s[0..n) as one string field's value: valid UTF-8 without U+0000 (a C
 * string, as protobuf-c hands strings over, would end at the NUL). */
static int check_bytes(walk *w, const char *s, size_t n, const char *name, long index) {
  const size_t ok = cd_utf8_valid_prefix(s, n);
  const char *nul = memchr(s, 0, ok);
  if (ok == n && !nul) return 0;
  push(w, name, index);
  w->err->code = CD_WIRE_INVALID_ARGUMENT;
  snprintf(w->err->field, sizeof w->err->field, "%s", w->path);
  if (nul)
    snprintf(w->err->message, sizeof w->err->message, "%s: holds a NUL character (byte %zu of %zu)", w->path,
             (size_t)(nul - s), n);
  else
    snprintf(w->err->message, sizeof w->err->message, "%s: not valid UTF-8 (byte %zu of %zu)", w->path, ok, n);
  return -1;
}


/* ---- the protobuf encoding ------------------------------------------------ */

static int varint(const uint8_t *p, size_t n, size_t *at, uint64_t *v) {
  *v = 0;
  for (unsigned shift = 0; shift < 64 && *at < n; shift += 7) {
    const uint8_t b = p[(*at)++];
    *v |= (uint64_t)(b & 0x7F) << shift;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

#define WIRE_MAX_FIELDS 64 /* repeated fields are indexed among the first 64 of a message */

static int check_wire(walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n) {
  size_t seen[WIRE_MAX_FIELDS] = {0}, at = 0;
  while (at < n) {
    uint64_t key, len;
    if (varint(p, n, &at, &key)) return 0; /* the decoder accepted it: nothing more to check */
    switch (key & 7) {
    case 0:
      if (varint(p, n, &at, &len)) return 0;
      continue;
    case 1:
      at += 8;
      continue;
    case 5:
      at += 4;
      continue;
    case 2:
      break;
    default:
      return 0;
    }
    if (varint(p, n, &at, &len) || len > n - at) return 0;
    const uint8_t *v = p + at;
    at += (size_t)len;
    const uint64_t number = key >> 3;
    const ProtobufCFieldDescriptor *f =
        number <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)number) : NULL;
    if (!f || (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)) continue;
    long index = -1;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      const size_t i = (size_t)(f - d->fields);
      index = i < WIRE_MAX_FIELDS ? (long)seen[i]++ : -1;
    }
    if (f->type == PROTOBUF_C_TYPE_STRING) {
      if (check_bytes(w, (const char *)v, (size_t)len, f->name, index)) return -1;
      continue;
    }
    const size_t back = push(w, f->name, index);
    if (check_wire(w, f->descriptor, v, (size_t)len)) return -1;
    w->len = back;
    w->path[back] = 0;
  }
  return 0;
}

int cd_utf8_check_wire(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len, cd_wire_error *err) {
  walk w;
  w.path[0] = 0;
  w.len = 0;
  w.err = err;
  return check_wire(&w, d, data, len);
}
