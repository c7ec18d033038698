/* cd_json.c — proto3 JSON <-> protobuf-c messages, driven by descriptors;
 * see cd_json.h. */
#include "cd_json.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_utf8.h"

/* ---- cJSON allocation through the budget --------------------------------- */

/* The budget cJSON allocates from on this thread (only inside cd_json calls). */
static _Thread_local cd_budget *tl_budget;

static void *hook_malloc(size_t n) {
  cd_budget *b = tl_budget;
  return b ? cd_budget_alloc(b, n) : malloc(n);
}

static void hook_free(void *p) {
  if (tl_budget) return; /* arena memory: freed with the budget */
  free(p);
}

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;

static void install_hooks(void) {
  cJSON_Hooks h = {hook_malloc, hook_free};
  cJSON_InitHooks(&h);
}

void cd_json_global_init(void) { pthread_once(&hooks_once, install_hooks); }

/* ---- names and paths ---------------------------------------------------- */

size_t cd_json_name(const char *name, char *out, size_t cap) {
  size_t n = 0;
  int up = 0;
  if (cap == 0) return 0;
  for (; *name; name++) {
    if (*name == '_') {
      up = 1;
      continue;
    }
    char c = up ? (char)toupper((unsigned char)*name) : *name;
    up = 0;
    if (n + 1 < cap) out[n++] = c;
  }
  out[n] = 0;
  return n;
}

/* Does key equal the JSON name of field name? */
static int json_name_eq(const char *name, const char *key) {
  int up = 0;
  for (; *name; name++) {
    if (*name == '_') {
      up = 1;
      continue;
    }
    char c = up ? (char)toupper((unsigned char)*name) : *name;
    up = 0;
    if (*key++ != c) return 0;
  }
  return *key == 0;
}

typedef struct jctx {
  cd_budget *b;
  cd_wire_error *err;
  char path[256];
  size_t plen;
} jctx;

/* Append ".name" (or "name" at the root) to the path; with `camel`, the
 * JSON name of a field name. Returns the previous length for pop(). */
static size_t push_str(jctx *c, const char *name, int camel) {
  size_t saved = c->plen, n = c->plen, cap = sizeof c->path - 1;
  if (n && n < cap) c->path[n++] = '.';
  int up = 0;
  for (; *name && n < cap; name++) {
    if (camel && *name == '_') {
      up = 1;
      continue;
    }
    c->path[n++] = up ? (char)toupper((unsigned char)*name) : *name;
    up = 0;
  }
  c->path[n] = 0;
  c->plen = n;
  return saved;
}

static size_t push_name(jctx *c, const char *json_name) { return push_str(c, json_name, 0); }

static size_t push_field(jctx *c, const ProtobufCFieldDescriptor *f) {
  return push_str(c, f->name, 1);
}

/* Append "[i]". */
static void push_index(jctx *c, size_t i) {
  char tmp[24];
  size_t k = sizeof tmp;
  tmp[--k] = ']';
  do tmp[--k] = (char)('0' + i % 10), i /= 10;
  while (i);
  tmp[--k] = '[';
  size_t len = sizeof tmp - k;
  if (c->plen + len >= sizeof c->path) return;
  memcpy(c->path + c->plen, tmp + k, len);
  c->plen += len;
  c->path[c->plen] = 0;
}

static void pop(jctx *c, size_t saved) {
  c->plen = saved;
  c->path[saved] = 0;
}

static int fail(jctx *c, int code, const char *fmt, ...) {
  cd_wire_error *e = c->err;
  if (!e) return -1;
  e->code = code;
  c->path[c->plen] = 0;
  snprintf(e->field, sizeof e->field, "%s", c->path);
  size_t off = 0;
  if (c->plen) {
    int k = snprintf(e->message, sizeof e->message, "%s: ", c->path);
    off = k < 0 ? 0 : (size_t)k;
    if (off >= sizeof e->message) off = sizeof e->message - 1;
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e->message + off, sizeof e->message - off, fmt, ap);
  va_end(ap);
  return -1;
}

static int fail_budget(jctx *c) {
  if (cd_budget_nomem(c->b)) return fail(c, CD_WIRE_RESOURCE_EXHAUSTED, "out of memory decoding the message");
  return fail(c, CD_WIRE_RESOURCE_EXHAUSTED,
              "message exceeds the decode budget of %zu bytes", c->b->limit);
}

static const char *json_type_name(const cJSON *v) {
  if (cJSON_IsNull(v)) return "null";
  if (cJSON_IsBool(v)) return "a boolean";
  if (cJSON_IsNumber(v)) return "a number";
  if (cJSON_IsString(v)) return "a string";
  if (cJSON_IsArray(v)) return "an array";
  if (cJSON_IsObject(v)) return "an object";
  return "an invalid value";
}

/* ---- UTF-8 -------------------------------------------------------------- */

/* s with every invalid byte replaced by U+FFFD (for output). */
static char *utf8_sanitize(cd_budget *b, const char *s, size_t n) {
  char *o = cd_budget_alloc(b, 3 * n + 1);
  if (!o) return NULL;
  size_t i = 0, j = 0;
  while (i < n) {
    const size_t k = cd_utf8_valid_prefix(s + i, n - i);
    memcpy(o + j, s + i, k);
    i += k, j += k;
    if (i < n) {
      memcpy(o + j, "\xef\xbf\xbd", 3);
      i++, j += 3;
    }
  }
  o[j] = 0;
  return o;
}

/* ---- base64 ------------------------------------------------------------- */

static const char b64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_val(unsigned char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return ch - 'a' + 26;
  if (ch >= '0' && ch <= '9') return ch - '0' + 52;
  if (ch == '+' || ch == '-') return 62;
  if (ch == '/' || ch == '_') return 63;
  return -1;
}

/* Decode standard or URL-safe base64, with or without padding. Returns 0, or
 * -1 with *bad_at the offending offset. */
static int b64_decode(const char *s, size_t n, uint8_t *out, size_t *out_len, size_t *bad_at) {
  while (n && s[n - 1] == '=') n--; /* padding (at most two) */
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < n; i++) {
    int v = b64_val((unsigned char)s[i]);
    if (v < 0) {
      *bad_at = i;
      return -1;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (uint8_t)(acc >> bits);
    }
  }
  if (n % 4 == 1) {
    *bad_at = n - 1;
    return -1;
  }
  *out_len = o;
  return 0;
}

static char *b64_encode(cd_budget *b, const uint8_t *p, size_t n) {
  size_t olen = 4 * ((n + 2) / 3);
  char *o = cd_budget_alloc(b, olen + 1);
  if (!o) return NULL;
  size_t j = 0, i = 0;
  for (; i + 2 < n; i += 3) {
    uint32_t v = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
    o[j++] = b64_std[v >> 18];
    o[j++] = b64_std[(v >> 12) & 63];
    o[j++] = b64_std[(v >> 6) & 63];
    o[j++] = b64_std[v & 63];
  }
  if (i < n) {
    uint32_t v = (uint32_t)p[i] << 16;
    if (i + 1 < n) v |= (uint32_t)p[i + 1] << 8;
    o[j++] = b64_std[v >> 18];
    o[j++] = b64_std[(v >> 12) & 63];
    o[j++] = i + 1 < n ? b64_std[(v >> 6) & 63] : '=';
    o[j++] = '=';
  }
  o[j] = 0;
  return o;
}

/* ---- JSON -> message: scalars --------------------------------------------- */

#define TWO53 9007199254740992.0

/* A JSON number or string holding an integer in [lo, hi] (signed). */
static int get_signed(jctx *c, const cJSON *v, int64_t lo, int64_t hi, int is64, int64_t *out) {
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (!isfinite(d) || d != trunc(d))
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an integer, got %.17g", d);
    if (is64 && fabs(d) > TWO53)
      return fail(c, CD_WIRE_INVALID_ARGUMENT,
                  "64-bit integer %.17g beyond 2^53 must be written as a string", d);
    if (d < (double)lo || d > (double)hi)
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "integer %.17g out of range", d);
    *out = (int64_t)d;
    return 0;
  }
  if (cJSON_IsString(v)) {
    const char *s = v->valuestring;
    char *end;
    if (!*s || isspace((unsigned char)*s) || *s == '+')
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an integer, got \"%.40s\"", s);
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (*end) return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an integer, got \"%.40s\"", s);
    if (errno == ERANGE || x < lo || x > hi)
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "integer \"%.40s\" out of range", s);
    *out = x;
    return 0;
  }
  return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an integer, got %s", json_type_name(v));
}

static int get_unsigned(jctx *c, const cJSON *v, uint64_t hi, int is64, uint64_t *out) {
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (!isfinite(d) || d != trunc(d))
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an integer, got %.17g", d);
    if (is64 && d > TWO53)
      return fail(c, CD_WIRE_INVALID_ARGUMENT,
                  "64-bit integer %.17g beyond 2^53 must be written as a string", d);
    if (d < 0 || d > (double)hi)
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "integer %.17g out of range", d);
    *out = (uint64_t)d;
    return 0;
  }
  if (cJSON_IsString(v)) {
    const char *s = v->valuestring;
    char *end;
    if (!*s || !isdigit((unsigned char)*s))
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an unsigned integer, got \"%.40s\"", s);
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (*end)
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an unsigned integer, got \"%.40s\"", s);
    if (errno == ERANGE || x > hi)
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "integer \"%.40s\" out of range", s);
    *out = x;
    return 0;
  }
  return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an unsigned integer, got %s",
              json_type_name(v));
}

static int get_double(jctx *c, const cJSON *v, double *out) {
  if (cJSON_IsNumber(v)) {
    *out = v->valuedouble;
    return 0;
  }
  if (cJSON_IsString(v)) {
    const char *s = v->valuestring;
    if (!strcmp(s, "NaN")) *out = NAN;
    else if (!strcmp(s, "Infinity")) *out = INFINITY;
    else if (!strcmp(s, "-Infinity")) *out = -INFINITY;
    else {
      char *end;
      if (!*s || isspace((unsigned char)*s))
        return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected a number, got \"%.40s\"", s);
      double d = strtod(s, &end);
      if (*end || isnan(d) || isinf(d)) /* only the spellings above for those */
        return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected a number, got \"%.40s\"", s);
      *out = d;
    }
    return 0;
  }
  return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected a number, got %s", json_type_name(v));
}

/* ---- JSON -> message: fields ---------------------------------------------- */

static size_t elem_size(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
  case PROTOBUF_C_TYPE_ENUM: return 4;
  case PROTOBUF_C_TYPE_FLOAT: return sizeof(float);
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64: return 8;
  case PROTOBUF_C_TYPE_DOUBLE: return sizeof(double);
  case PROTOBUF_C_TYPE_BOOL: return sizeof(protobuf_c_boolean);
  case PROTOBUF_C_TYPE_STRING: return sizeof(char *);
  case PROTOBUF_C_TYPE_BYTES: return sizeof(ProtobufCBinaryData);
  case PROTOBUF_C_TYPE_MESSAGE: return sizeof(ProtobufCMessage *);
  }
  return 0;
}

static int parse_message(jctx *c, const ProtobufCMessageDescriptor *d, const cJSON *obj,
                         ProtobufCMessage **out);

/* One value of field f from v into dst (an element of the field's type). */
static int parse_value(jctx *c, const ProtobufCFieldDescriptor *f, const cJSON *v, void *dst) {
  int64_t si;
  uint64_t ui;
  double dv;
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
    if (get_signed(c, v, INT32_MIN, INT32_MAX, 0, &si)) return -1;
    *(int32_t *)dst = (int32_t)si;
    return 0;
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32:
    if (get_unsigned(c, v, UINT32_MAX, 0, &ui)) return -1;
    *(uint32_t *)dst = (uint32_t)ui;
    return 0;
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
    if (get_signed(c, v, INT64_MIN, INT64_MAX, 1, &si)) return -1;
    *(int64_t *)dst = si;
    return 0;
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    if (get_unsigned(c, v, UINT64_MAX, 1, &ui)) return -1;
    *(uint64_t *)dst = ui;
    return 0;
  case PROTOBUF_C_TYPE_FLOAT:
    if (get_double(c, v, &dv)) return -1;
    if (isfinite(dv) && fabs(dv) > FLT_MAX)
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "%.17g is out of range for a float", dv);
    *(float *)dst = (float)dv;
    return 0;
  case PROTOBUF_C_TYPE_DOUBLE:
    if (get_double(c, v, &dv)) return -1;
    *(double *)dst = dv;
    return 0;
  case PROTOBUF_C_TYPE_BOOL:
    if (!cJSON_IsBool(v))
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected true or false, got %s",
                  json_type_name(v));
    *(protobuf_c_boolean *)dst = cJSON_IsTrue(v) ? 1 : 0;
    return 0;
  case PROTOBUF_C_TYPE_ENUM: {
    const ProtobufCEnumDescriptor *ed = f->descriptor;
    if (cJSON_IsString(v)) {
      const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value_by_name(ed, v->valuestring);
      if (!ev)
        return fail(c, CD_WIRE_INVALID_ARGUMENT, "unknown value \"%.60s\" of enum %s",
                    v->valuestring, ed->name);
      *(int32_t *)dst = ev->value;
      return 0;
    }
    if (cJSON_IsNumber(v)) {
      if (get_signed(c, v, INT32_MIN, INT32_MAX, 0, &si)) return -1;
      *(int32_t *)dst = (int32_t)si;
      return 0;
    }
    return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected a %s name, got %s", ed->name,
                json_type_name(v));
  }
  case PROTOBUF_C_TYPE_STRING: {
    if (!cJSON_IsString(v))
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected a string, got %s", json_type_name(v));
    size_t n = strlen(v->valuestring), ok = cd_utf8_valid_prefix(v->valuestring, n);
    if (ok < n) return fail(c, CD_WIRE_INVALID_ARGUMENT, "not valid UTF-8 (byte %zu of %zu)", ok, n);
    char *s = cd_budget_strndup(c->b, v->valuestring, n);
    if (!s) return fail_budget(c);
    *(char **)dst = s;
    return 0;
  }
  case PROTOBUF_C_TYPE_BYTES: {
    if (!cJSON_IsString(v))
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected a base64 string, got %s",
                  json_type_name(v));
    size_t n = strlen(v->valuestring), olen = 0, bad = 0;
    uint8_t *o = cd_budget_alloc(c->b, n / 4 * 3 + 3);
    if (!o) return fail_budget(c);
    if (b64_decode(v->valuestring, n, o, &olen, &bad))
      return fail(c, CD_WIRE_INVALID_ARGUMENT, "invalid base64 at character %zu", bad);
    ProtobufCBinaryData *bd = dst;
    bd->len = olen;
    bd->data = olen ? o : NULL;
    return 0;
  }
  case PROTOBUF_C_TYPE_MESSAGE:
    return parse_message(c, f->descriptor, v, (ProtobufCMessage **)dst);
  }
  return fail(c, CD_WIRE_INTERNAL, "unsupported field type %d", (int)f->type);
}

static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *d,
                                                  const char *key, unsigned *index) {
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (json_name_eq(f->name, key) || !strcmp(f->name, key)) {
      *index = i;
      return f;
    }
  }
  return NULL;
}

static int parse_message(jctx *c, const ProtobufCMessageDescriptor *d, const cJSON *obj,
                         ProtobufCMessage **out) {
  if (!cJSON_IsObject(obj))
    return fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an object (%s), got %s", d->name,
                json_type_name(obj));
  ProtobufCMessage *m = cd_budget_alloc(c->b, d->sizeof_message);
  uint8_t *seen = cd_budget_calloc(c->b, d->n_fields ? d->n_fields : 1, 1);
  if (!m || !seen) return fail_budget(c);
  d->message_init(m);
  uint8_t *base = (uint8_t *)m;

  for (const cJSON *it = obj->child; it; it = it->next) {
    unsigned idx = 0;
    const char *key = it->string ? it->string : "";
    const ProtobufCFieldDescriptor *f = find_field(d, key, &idx);
    if (!f) {
      size_t s = push_name(c, key);
      fail(c, CD_WIRE_INVALID_ARGUMENT, "unknown field \"%.60s\" of %s", key, d->name);
      pop(c, s);
      return -1;
    }
    size_t saved = push_field(c, f);
    if (seen[idx]) {
      fail(c, CD_WIRE_INVALID_ARGUMENT, "field given twice");
      pop(c, saved);
      return -1;
    }
    seen[idx] = 1;
    if (cJSON_IsNull(it)) { /* null = the default */
      pop(c, saved);
      continue;
    }
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      uint32_t *oc = (uint32_t *)(base + f->quantifier_offset);
      if (*oc && *oc != f->id) {
        const ProtobufCFieldDescriptor *other = protobuf_c_message_descriptor_get_field(d, *oc);
        char on[128];
        cd_json_name(other ? other->name : "?", on, sizeof on);
        fail(c, CD_WIRE_INVALID_ARGUMENT, "only one of a oneof may be set (\"%s\" is set too)",
             on);
        pop(c, saved);
        return -1;
      }
      *oc = f->id;
    }
    int rc = 0;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      if (!cJSON_IsArray(it)) {
        fail(c, CD_WIRE_INVALID_ARGUMENT, "expected an array, got %s", json_type_name(it));
        pop(c, saved);
        return -1;
      }
      size_t n = 0;
      for (const cJSON *e = it->child; e; e = e->next) n++;
      size_t es = elem_size(f->type);
      uint8_t *arr = n ? cd_budget_calloc(c->b, n, es) : NULL;
      if (n && !arr) {
        pop(c, saved);
        return fail_budget(c);
      }
      size_t i = 0;
      for (const cJSON *e = it->child; e && !rc; e = e->next, i++) {
        size_t s2 = c->plen;
        push_index(c, i);
        if (cJSON_IsNull(e))
          rc = fail(c, CD_WIRE_INVALID_ARGUMENT, "null is not allowed in an array");
        else
          rc = parse_value(c, f, e, arr + i * es);
        if (!rc) pop(c, s2);
      }
      *(size_t *)(base + f->quantifier_offset) = n;
      *(void **)(base + f->offset) = arr;
    } else {
      rc = parse_value(c, f, it, base + f->offset);
      if (!rc && f->label == PROTOBUF_C_LABEL_OPTIONAL &&
          !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && f->type != PROTOBUF_C_TYPE_MESSAGE &&
          f->type != PROTOBUF_C_TYPE_STRING)
        *(protobuf_c_boolean *)(base + f->quantifier_offset) = 1;
    }
    if (rc) return -1; /* keep the path of the failure */
    pop(c, saved);
  }
  *out = m;
  return 0;
}

/* Offset of the first NUL inside a string of the valid JSON text t[0..n),
 * escaped (\u0000) or raw, or n. cJSON keeps it, and the C string it hands
 * over would end there. */
static size_t string_nul(const char *t, size_t n) {
  int in = 0;
  for (size_t i = 0; i < n; i++) {
    if (!in) {
      in = t[i] == '"';
    } else if (t[i] == '"') {
      in = 0;
    } else if (t[i] == 0) {
      return i;
    } else if (t[i] == '\\') {
      if (n - i >= 6 && !memcmp(t + i + 1, "u0000", 5)) return i;
      i++; /* the escaped character */
    }
  }
  return n;
}

ProtobufCMessage *cd_json_decode(const ProtobufCMessageDescriptor *desc, const char *text,
                                 size_t len, cd_budget *b, cd_wire_error *err) {
  cd_json_global_init();
  jctx c = {.b = b, .err = err};
  c.path[0] = 0;
  if (err) err->code = CD_WIRE_OK, err->field[0] = 0, err->message[0] = 0;

  cd_budget *prev = tl_budget;
  int was = b->exhausted;
  b->exhausted = 0;
  tl_budget = b;
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  tl_budget = prev;
  ProtobufCMessage *m = NULL;
  if (!root) {
    if (b->exhausted) {
      fail_budget(&c);
    } else {
      size_t at = end && end >= text ? (size_t)(end - text) : 0;
      size_t line = 1, col = 1;
      for (size_t i = 0; i < at && i < len; i++) {
        if (text[i] == '\n') line++, col = 1;
        else col++;
      }
      fail(&c, CD_WIRE_INVALID_ARGUMENT, "invalid JSON at byte %zu (line %zu, column %zu)", at,
           line, col);
    }
    goto out;
  }
  for (size_t i = (size_t)(end - text); i < len; i++) {
    if (!isspace((unsigned char)text[i])) {
      fail(&c, CD_WIRE_INVALID_ARGUMENT, "invalid JSON: unexpected characters after the value at byte %zu", i);
      goto out;
    }
  }
  size_t nul = string_nul(text, (size_t)(end - text));
  if (nul < (size_t)(end - text)) {
    fail(&c, CD_WIRE_INVALID_ARGUMENT, "a string holds a NUL character (\\u0000) at byte %zu", nul);
    goto out;
  }
  if (parse_message(&c, desc, root, &m)) m = NULL;
out:
  b->exhausted = was || b->exhausted;
  return m; /* the cJSON tree stays in the budget; freed with it */
}

/* ---- message -> JSON ------------------------------------------------------ */

static cJSON *emit_message(jctx *c, const ProtobufCMessage *m);

/* A JSON number written by us: cJSON prints doubles with 15 significant
 * digits whenever that is within an epsilon of the value, which does not
 * round-trip exactly. Use %.15g when it parses back to the same value (short
 * output for human-sized numbers like 0.1), else %.17g, which always does.
 * (%.16g is not tried: one more printf per computed value costs more than
 * the byte it saves.) */
static cJSON *raw_double(double d) {
  char num[40];
  snprintf(num, sizeof num, "%.15g", d);
  if (strtod(num, NULL) != d) snprintf(num, sizeof num, "%.17g", d);
  return cJSON_CreateRaw(num);
}

/* Decimal text of v (negative when neg) into the end of buf[32]; returns
 * its start. */
static const char *fmt_u64(char buf[32], uint64_t v, int neg) {
  char *p = buf + 31;
  *p = 0;
  do *--p = (char)('0' + v % 10), v /= 10;
  while (v);
  if (neg) *--p = '-';
  return p;
}

static const char *fmt_i64(char buf[32], int64_t v) {
  return v < 0 ? fmt_u64(buf, (uint64_t)0 - (uint64_t)v, 1) : fmt_u64(buf, (uint64_t)v, 0);
}

static cJSON *emit_value(jctx *c, const ProtobufCFieldDescriptor *f, const void *src) {
  char num[32];
  switch (f->type) {
  case PROTOBUF_C_TYPE_INT32:
  case PROTOBUF_C_TYPE_SINT32:
  case PROTOBUF_C_TYPE_SFIXED32:
    return cJSON_CreateRaw(fmt_i64(num, *(const int32_t *)src));
  case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_FIXED32: return cJSON_CreateRaw(fmt_u64(num, *(const uint32_t *)src, 0));
  case PROTOBUF_C_TYPE_INT64:
  case PROTOBUF_C_TYPE_SINT64:
  case PROTOBUF_C_TYPE_SFIXED64:
    return cJSON_CreateString(fmt_i64(num, *(const int64_t *)src));
  case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_FIXED64:
    return cJSON_CreateString(fmt_u64(num, *(const uint64_t *)src, 0));
  case PROTOBUF_C_TYPE_FLOAT:
  case PROTOBUF_C_TYPE_DOUBLE: {
    double d = f->type == PROTOBUF_C_TYPE_FLOAT ? (double)*(const float *)src
                                                : *(const double *)src;
    if (isnan(d)) return cJSON_CreateString("NaN");
    if (isinf(d)) return cJSON_CreateString(d > 0 ? "Infinity" : "-Infinity");
    return raw_double(d);
  }
  case PROTOBUF_C_TYPE_BOOL: return cJSON_CreateBool(*(const protobuf_c_boolean *)src);
  case PROTOBUF_C_TYPE_ENUM: {
    int32_t v = *(const int32_t *)src;
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
    if (ev) return cJSON_CreateStringReference(ev->name);
    return cJSON_CreateRaw(fmt_i64(num, v));
  }
  case PROTOBUF_C_TYPE_STRING: {
    const char *s = *(char *const *)src;
    if (!s) s = "";
    size_t n = strlen(s);
    if (cd_utf8_valid_prefix(s, n) < n) { /* (requests are checked, error texts repaired) keep the JSON valid */
      s = utf8_sanitize(c->b, s, n);
      if (!s) return NULL;
    }
    return cJSON_CreateString(s);
  }
  case PROTOBUF_C_TYPE_BYTES: {
    const ProtobufCBinaryData *bd = src;
    char *s = b64_encode(c->b, bd->data, bd->len);
    return s ? cJSON_CreateStringReference(s) : NULL;
  }
  case PROTOBUF_C_TYPE_MESSAGE: {
    const ProtobufCMessage *sub = *(ProtobufCMessage *const *)src;
    if (!sub) return cJSON_CreateObject(); /* repeated NULL element: empty */
    return emit_message(c, sub);
  }
  }
  return NULL;
}

/* Is a singular proto3 field at its default (and therefore omitted)? */
static int is_default(const ProtobufCFieldDescriptor *f, const void *src) {
  switch (f->type) {
  case PROTOBUF_C_TYPE_STRING: {
    const char *s = *(char *const *)src;
    return !s || !*s;
  }
  case PROTOBUF_C_TYPE_BYTES: return ((const ProtobufCBinaryData *)src)->len == 0;
  case PROTOBUF_C_TYPE_MESSAGE: return *(ProtobufCMessage *const *)src == NULL;
  /* 0 and -0 are both omitted, as protobuf-c's packer omits them, so the
   * JSON and binary forms of a message carry the same fields */
  case PROTOBUF_C_TYPE_FLOAT: return *(const float *)src == 0;
  case PROTOBUF_C_TYPE_DOUBLE: return *(const double *)src == 0;
  default: {
    /* integers, enums, bools */
    static const uint8_t zero[8];
    return memcmp(src, zero, elem_size(f->type)) == 0;
  }
  }
}

static cJSON *emit_message(jctx *c, const ProtobufCMessage *m) {
  const ProtobufCMessageDescriptor *d = m->descriptor;
  const uint8_t *base = (const uint8_t *)m;
  cJSON *obj = cJSON_CreateObject();
  if (!obj) return NULL;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    const void *src = base + f->offset;
    cJSON *item = NULL;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
      if (*(const uint32_t *)(base + f->quantifier_offset) != f->id) continue;
      if (f->type == PROTOBUF_C_TYPE_MESSAGE && !*(ProtobufCMessage *const *)src)
        item = cJSON_CreateObject();
      else
        item = emit_value(c, f, src);
    } else if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)(base + f->quantifier_offset);
      if (!n) continue;
      const uint8_t *arr = *(const uint8_t *const *)src;
      size_t es = elem_size(f->type);
      item = cJSON_CreateArray();
      if (!item) return NULL;
      cJSON *last = NULL;
      for (size_t k = 0; k < n; k++) {
        cJSON *e = emit_value(c, f, arr + k * es);
        if (!e) return NULL;
        /* append in O(1) (cJSON_AddItemToArray walks the list) */
        if (!last) {
          item->child = e;
        } else {
          last->next = e;
          e->prev = last;
        }
        item->child->prev = e;
        last = e;
      }
    } else {
      if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_MESSAGE &&
          f->type != PROTOBUF_C_TYPE_STRING) {
        if (!*(const protobuf_c_boolean *)(base + f->quantifier_offset)) continue;
      } else if (is_default(f, src)) {
        continue;
      }
      item = emit_value(c, f, src);
    }
    if (!item) return NULL;
    size_t fl = strlen(f->name);
    char *key = cd_budget_alloc(c->b, fl + 1);
    if (key) cd_json_name(f->name, key, fl + 1);
    if (!key || !cJSON_AddItemToObjectCS(obj, key, item)) return NULL;
  }
  return obj;
}

char *cd_json_encode(const ProtobufCMessage *m, cd_budget *b, size_t *len, cd_wire_error *err) {
  cd_json_global_init();
  jctx c = {.b = b, .err = err};
  c.path[0] = 0;
  if (err) err->code = CD_WIRE_OK, err->field[0] = 0, err->message[0] = 0;
  cd_budget *prev = tl_budget;
  tl_budget = b;
  char *out = NULL;
  cJSON *root = emit_message(&c, m);
  if (root) out = cJSON_PrintUnformatted(root);
  tl_budget = prev;
  if (!out) {
    if (err) {
      err->code = CD_WIRE_RESOURCE_EXHAUSTED;
      err->field[0] = 0;
      if (cd_budget_nomem(b) || !b->limit)
        snprintf(err->message, sizeof err->message, "out of memory encoding %s as JSON", m->descriptor->name);
      else
        snprintf(err->message, sizeof err->message, "encoding %s as JSON exceeds the budget of %zu bytes",
                 m->descriptor->name, b->limit);
    }
    return NULL;
  }
  if (len) *len = strlen(out);
  return out;
}
