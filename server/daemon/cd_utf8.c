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

static int check_string(walk *w, const char *s, const char *name, long index) {
  if (!s) return 0;
  const size_t n = strlen(s), ok = cd_utf8_valid_prefix(s, n);
  if (ok == n) return 0;
  push(w, name, index);
  w->err->code = CD_WIRE_INVALID_ARGUMENT;
  snprintf(w->err->field, sizeof w->err->field, "%s", w->path);
  snprintf(w->err->message, sizeof w->err->message, "%s: not valid UTF-8 (byte %zu of %zu)", w->path, ok, n);
  return -1;
}

static int check(walk *w, const ProtobufCMessage *m);

static int check_message(walk *w, const ProtobufCMessage *m, const char *name, long index) {
  if (!m) return 0;
  const size_t at = push(w, name, index);
  const int rc = check(w, m);
  if (rc == 0) {
    w->len = at;
    w->path[at] = 0;
  }
  return rc;
}

static int check(walk *w, const ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  const char *base = (const char *)m;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      const uint32_t which = *(const uint32_t *)(base + f->quantifier_offset);
      if (which != f->id) continue;
    }
    const void *member = base + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      const size_t count = *(const size_t *)(base + f->quantifier_offset);
      for (size_t k = 0; k < count; k++) {
        const void *e = (*(void *const *)member == NULL) ? NULL : ((void *const *)*(void *const *)member)[k];
        const int rc = f->type == PROTOBUF_C_TYPE_STRING ? check_string(w, e, f->name, (long)k)
                                                         : check_message(w, e, f->name, (long)k);
        if (rc) return rc;
      }
    } else {
      const void *e = *(void *const *)member;
      const int rc =
          f->type == PROTOBUF_C_TYPE_STRING ? check_string(w, e, f->name, -1) : check_message(w, e, f->name, -1);
      if (rc) return rc;
    }
  }
  return 0;
}

int cd_utf8_check_message(const ProtobufCMessage *m, cd_wire_error *err) {
  walk w;
  w.path[0] = 0;
  w.len = 0;
  w.err = err;
  return check(&w, m);
}
