/* cd_wirecheck.c — walks over a protobuf encoding: string checks and the
 * diagnosis of a malformed message. */
#include "cd_wirecheck.h"

#include <stdio.h>
#include <string.h>

#include "cd_json.h"
#include "cd_utf8.h"

/* The fields being read, outermost first, as the walk goes down; their
 * JSON path is written out only when something is found (formatting it at
 * every field cost a small query's decode more than the decode itself);
 * base is the offset of the current message within the whole encoding. */
#define WALK_MAX_DEPTH 64 /* deeper frames are counted, not named (the path is cut anyway) */

typedef struct frame {
  const char *name;
  long index; /* -1: not repeated */
} frame;

typedef struct walk {
  char path[256];
  frame st[WALK_MAX_DEPTH];
  size_t depth, base;
  char *why;
  size_t wcap;
} walk;

static size_t push(walk *w, const char *name, long index) {
  const size_t at = w->depth;
  if (at < WALK_MAX_DEPTH) w->st[at] = (frame){name, index};
  w->depth = at + 1;
  return at;
}

static void pop(walk *w, size_t at) { w->depth = at; }

/* w->path: the fields from the outermost to the one being read. */
static void render(walk *w) {
  size_t len = 0;
  w->path[0] = 0;
  for (size_t i = 0; i < w->depth && i < WALK_MAX_DEPTH; i++) {
    char seg[128];
    cd_json_name(w->st[i].name, seg, sizeof seg);
    int k = w->st[i].index >= 0
                ? snprintf(w->path + len, sizeof w->path - len, "%s%s[%ld]", len ? "." : "", seg, w->st[i].index)
                : snprintf(w->path + len, sizeof w->path - len, "%s%s", len ? "." : "", seg);
    if (k > 0) len = len + (size_t)k < sizeof w->path ? len + (size_t)k : sizeof w->path - 1;
  }
}

static int found(walk *w, const char *fmt, unsigned long long a, unsigned long long b) {
  render(w);
  snprintf(w->why, w->wcap, fmt, a, b);
  return -1;
}

/* A varint at p[*at..n): 0, or -1 when it is cut off or longer than 10 bytes. */
static int varint(const uint8_t *p, size_t n, size_t *at, uint64_t *v) {
  *v = 0;
  for (unsigned shift = 0; shift < 70 && *at < n; shift += 7) {
    const uint8_t b = p[(*at)++];
    if (shift < 64) *v |= (uint64_t)(b & 0x7F) << shift;
    if (!(b & 0x80)) return 0;
  }
  return -1;
}

/* The wire type a field's values are written with (a repeated number may
 * also come packed, as a length-delimited run). */
static unsigned wire_type_of(const ProtobufCFieldDescriptor *f) {
  switch (f->type) {
  case PROTOBUF_C_TYPE_DOUBLE:
  case PROTOBUF_C_TYPE_FIXED64:
  case PROTOBUF_C_TYPE_SFIXED64: return 1;
  case PROTOBUF_C_TYPE_FLOAT:
  case PROTOBUF_C_TYPE_FIXED32:
  case PROTOBUF_C_TYPE_SFIXED32: return 5;
  case PROTOBUF_C_TYPE_STRING:
  case PROTOBUF_C_TYPE_BYTES:
  case PROTOBUF_C_TYPE_MESSAGE: return 2;
  default: return 0;
  }
}

#define WALK_MAX_FIELDS 64 /* repeated fields are indexed among a message's first 64 */

/* One message's encoding p[0..n). mode 0: check strings (w->why gets the
 * message); mode 1: diagnose the first malformation. -1 when found. */
static int walk_message(walk *w, const ProtobufCMessageDescriptor *d, const uint8_t *p, size_t n, int mode) {
  /* seen[i]: elements of repeated field i so far, valid where bit i of
   * used is set (a message has few fields set: not zeroing all 64 spares a
   * 512-byte memset per message walked, thousands per scene query) */
  size_t seen[WALK_MAX_FIELDS], at = 0;
  uint64_t used = 0;
  while (at < n) {
    const size_t key_at = at;
    uint64_t key, len;
    if (varint(p, n, &at, &key)) return mode ? found(w, "truncated field key at byte %llu%.0llu", w->base + key_at, 0) : 0;
    const unsigned wt = (unsigned)(key & 7);
    const uint64_t number = key >> 3;
    const ProtobufCFieldDescriptor *f =
        number && number <= UINT32_MAX ? protobuf_c_message_descriptor_get_field(d, (unsigned)number) : NULL;
    long index = -1;
    if (f && f->label == PROTOBUF_C_LABEL_REPEATED) {
      const size_t i = (size_t)(f - d->fields);
      if (i < WALK_MAX_FIELDS && !(used >> i & 1)) {
        used |= UINT64_C(1) << i;
        seen[i] = 0;
      }
      index = i < WALK_MAX_FIELDS ? (long)seen[i]++ : -1;
    }
    const size_t back = f ? push(w, f->name, index) : w->depth;
    if (mode) {
      if (number == 0) return found(w, "field number 0 at byte %llu%.0llu", w->base + key_at, 0);
      if (wt == 3 || wt == 4 || wt > 5)
        return found(w, "unsupported wire type %llu at byte %llu", wt, w->base + key_at);
      const unsigned want = f ? wire_type_of(f) : wt;
      const int packed = f && f->label == PROTOBUF_C_LABEL_REPEATED && want != 2 && wt == 2;
      if (wt != want && !packed)
        return found(w, "wire type %llu, but the field is written with wire type %llu", wt, want);
    }
    const size_t value_at = at;
    if (wt == 0) {
      if (varint(p, n, &at, &len)) return mode ? found(w, "truncated varint at byte %llu%.0llu", w->base + value_at, 0) : 0;
    } else if (wt == 1 || wt == 5) {
      const size_t k = wt == 1 ? 8 : 4;
      if (n - at < k)
        return mode ? found(w, "%llu-byte value at byte %llu runs past the end of its message", k, w->base + value_at)
                    : 0;
      at += k;
    } else if (wt == 2) {
      if (varint(p, n, &at, &len)) return mode ? found(w, "truncated length at byte %llu%.0llu", w->base + value_at, 0) : 0;
      if (len > n - at) {
        if (!mode) return 0;
        char tail[64];
        snprintf(tail, sizeof tail, " (%zu bytes left)", n - at);
        found(w, "length %llu at byte %llu runs past the end of its message", len, w->base + value_at);
        strncat(w->why, tail, w->wcap - strlen(w->why) - 1);
        return -1;
      }
      const uint8_t *v = p + at;
      const size_t vat = at;
      at += (size_t)len;
      if (f && f->type == PROTOBUF_C_TYPE_MESSAGE) {
        const size_t base = w->base;
        w->base = base + vat;
        const int rc = walk_message(w, f->descriptor, v, (size_t)len, mode);
        w->base = base;
        if (rc) return rc;
      } else if (f && f->type == PROTOBUF_C_TYPE_STRING && !mode) {
        const size_t ok = cd_utf8_valid_prefix((const char *)v, (size_t)len);
        const char *nul = memchr(v, 0, ok);
        if (nul) return found(w, "holds a NUL character (byte %llu of %llu)", (unsigned long long)(nul - (const char *)v), len);
        if (ok < len) return found(w, "not valid UTF-8 (byte %llu of %llu)", ok, len);
      }
    } else {
      return 0; /* (mode 0 only: the decoder accepted it) */
    }
    pop(w, back);
  }
  return 0;
}

static void walk_init(walk *w, char *why, size_t wcap) {
  w->path[0] = 0;
  w->depth = w->base = 0;
  w->why = why;
  w->wcap = wcap;
}

int cd_wirecheck_strings(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
                         cd_wire_error *err) {
  walk w;
  char why[200];
  walk_init(&w, why, sizeof why);
  if (walk_message(&w, d, data, len, 0) == 0) return 0;
  err->code = CD_WIRE_INVALID_ARGUMENT;
  snprintf(err->field, sizeof err->field, "%s", w.path);
  snprintf(err->message, sizeof err->message, "%s: %s", w.path, why);
  return -1;
}

int cd_wirecheck_diagnose(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len, char *field,
                          size_t fcap, char *why, size_t wcap) {
  walk w;
  walk_init(&w, why, wcap);
  if (walk_message(&w, d, data, len, 1) == 0) return 0;
  snprintf(field, fcap, "%s", w.path);
  return -1;
}
