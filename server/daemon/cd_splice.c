/* cd_splice.c — a reply frame packed in pieces around records packed
 * elsewhere (see cd_splice.h for why the bytes are the same). */
#include "cd_splice.h"

#include <stdlib.h>
#include <string.h>

#include "cd_frame.h"

enum { WIRE_VARINT = 0, WIRE_64BIT = 1, WIRE_LEN = 2, WIRE_32BIT = 5 };

static uint64_t tag_of(uint32_t field, int wire) { return (uint64_t)field << 3 | (uint64_t)wire; }

size_t cd_splice_record_size(const ProtobufCMessage *m, uint32_t field, size_t *body) {
  size_t n = protobuf_c_message_get_packed_size(m);
  *body = n;
  return cd_frame_varint_size(tag_of(field, WIRE_LEN)) + cd_frame_varint_size(n) + n;
}

size_t cd_splice_record_write(const ProtobufCMessage *m, uint32_t field, size_t body, uint8_t *out) {
  size_t h = cd_frame_varint_encode(tag_of(field, WIRE_LEN), out);
  h += cd_frame_varint_encode(body, out + h);
  return h + protobuf_c_message_pack(m, out + h);
}

/* Offset in the packed message p[0..n) of its first record numbered above
 * `field` (n when none is): where the records of `field` belong. */
static size_t split_at(const uint8_t *p, size_t n, uint32_t field) {
  size_t o = 0;
  while (o < n) {
    uint64_t tag, v;
    int k = cd_frame_varint_decode(p + o, n - o, &tag);
    if (k <= 0) return n; /* protobuf-c wrote it: not reached */
    if (tag >> 3 > field) return o;
    size_t r = o + (size_t)k;
    switch ((int)(tag & 7)) {
      case WIRE_VARINT:
        k = cd_frame_varint_decode(p + r, n - r, &v);
        r += k > 0 ? (size_t)k : n;
        break;
      case WIRE_64BIT: r += 8; break;
      case WIRE_32BIT: r += 4; break;
      case WIRE_LEN:
        k = cd_frame_varint_decode(p + r, n - r, &v);
        r += k > 0 && v <= n ? (size_t)k + (size_t)v : n;
        break;
      default: return n; /* groups: proto3 has none */
    }
    o = r;
  }
  return n;
}

static uint8_t *packed(const ProtobufCMessage *m, size_t *n) {
  *n = protobuf_c_message_get_packed_size(m);
  uint8_t *b = malloc(*n ? *n : 1);
  if (b) protobuf_c_message_pack(m, b);
  return b;
}

int cd_splice_frame(const Contactd__V1__Envelope *env, const ProtobufCMessage *inner, uint32_t field, size_t nrec,
                    cd_splice *sp) {
  memset(sp, 0, sizeof *sp);
  /* the envelope without its message, and the message without the records */
  Contactd__V1__Envelope bare = *env;
  bare.msg_case = CONTACTD__V1__ENVELOPE__MSG__NOT_SET;
  const uint32_t msg_field = (uint32_t)env->msg_case; /* protobuf-c numbers a oneof's cases by field */
  size_t ne, ni;
  uint8_t *e = packed(&bare.base, &ne), *in = packed(inner, &ni);
  if (!e || !in) {
    free(e);
    free(in);
    return -1;
  }
  size_t es = split_at(e, ne, msg_field), is = split_at(in, ni, field);
  const size_t inner_len = ni + nrec;
  const uint64_t msg_tag = tag_of(msg_field, WIRE_LEN);
  const size_t env_len = ne + cd_frame_varint_size(msg_tag) + cd_frame_varint_size(inner_len) + inner_len;
  sp->nhead = cd_frame_varint_size(env_len) + es + cd_frame_varint_size(msg_tag) + cd_frame_varint_size(inner_len) + is;
  sp->ntail = (ni - is) + (ne - es);
  sp->head = malloc(sp->nhead);
  sp->tail = malloc(sp->ntail ? sp->ntail : 1);
  if (!sp->head || !sp->tail) {
    free(e);
    free(in);
    cd_splice_free(sp);
    return -1;
  }
  uint8_t *h = sp->head;
  h += cd_frame_varint_encode(env_len, h);
  memcpy(h, e, es);
  h += es;
  h += cd_frame_varint_encode(msg_tag, h);
  h += cd_frame_varint_encode(inner_len, h);
  memcpy(h, in, is);
  memcpy(sp->tail, in + is, ni - is);
  memcpy(sp->tail + (ni - is), e + es, ne - es);
  sp->total = sp->nhead + nrec + sp->ntail;
  free(e);
  free(in);
  return 0;
}

void cd_splice_free(cd_splice *sp) {
  free(sp->head);
  free(sp->tail);
  sp->head = sp->tail = NULL;
  sp->nhead = sp->ntail = sp->total = 0;
}

uint32_t cd_splice_field(const ProtobufCMessageDescriptor *d, const char *name) {
  const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, name);
  return f ? f->id : 0;
}
