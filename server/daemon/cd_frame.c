/* cd_frame.c — delimited framing; see cd_frame.h. */
#include "cd_frame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_wirecheck.h"

/* A reassembly buffer larger than this is released between frames (a
 * socket read's size: smaller ones are kept for the next split frame). */
#define CD_FRAME_KEEP_BYTES ((size_t)64 << 10)

size_t cd_frame_varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    n++;
  }
  return n;
}

size_t cd_frame_varint_encode(uint64_t v, uint8_t *out) {
  size_t n = 0;
  while (v >= 0x80) {
    out[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  out[n++] = (uint8_t)v;
  return n;
}

int cd_frame_varint_decode(const uint8_t *p, size_t n, uint64_t *v) {
  uint64_t r = 0;
  for (size_t i = 0; i < CD_VARINT_MAX; i++) {
    if (i >= n) return 0;
    uint8_t b = p[i];
    if (i == CD_VARINT_MAX - 1 && b > 1) return -1; /* bits beyond 64 */
    r |= (uint64_t)(b & 0x7f) << (7 * i);
    if (!(b & 0x80)) {
      *v = r;
      return (int)(i + 1);
    }
  }
  return -1; /* 10 bytes, all with the continuation bit */
}

size_t cd_frame_size(const ProtobufCMessage *m, size_t *body_len) {
  size_t len = protobuf_c_message_get_packed_size(m);
  if (body_len) *body_len = len;
  return cd_frame_varint_size(len) + len;
}

size_t cd_frame_write(const ProtobufCMessage *m, size_t body_len, uint8_t *out) {
  size_t h = cd_frame_varint_encode(body_len, out);
  size_t w = protobuf_c_message_pack(m, out + h);
  return h + w;
}

void cd_frame_decoder_init(cd_frame_decoder *d, size_t cap) {
  memset(d, 0, sizeof *d);
  d->cap = cap ? cap : CD_FRAME_DEFAULT_CAP;
}

void cd_frame_decoder_free(cd_frame_decoder *d) {
  free(d->buf);
  d->buf = NULL;
  d->buf_len = d->buf_cap = 0;
}

size_t cd_frame_decoder_pending(const cd_frame_decoder *d) {
  return d->hdr_len + (d->have_len ? cd_frame_varint_size(d->body_len) + d->buf_len : 0);
}

/* Make room for `want` bytes of body in d->buf; grows geometrically but never
 * past the frame's length. */
static int reserve(cd_frame_decoder *d, size_t want) {
  if (want <= d->buf_cap) return 0;
  size_t c = d->buf_cap ? d->buf_cap : 4096;
  while (c < want) c = c > SIZE_MAX / 2 ? want : c * 2;
  if (c > d->body_len) c = d->body_len;
  if (c < want) c = want;
  uint8_t *nb = realloc(d->buf, c);
  if (!nb) return -1;
  d->buf = nb;
  d->buf_cap = c;
  return 0;
}

void cd_frame_decoder_done(cd_frame_decoder *d) {
  if (!d->have_len && d->buf_cap > CD_FRAME_KEEP_BYTES) cd_frame_decoder_free(d);
}

uint8_t *cd_frame_decoder_take(cd_frame_decoder *d, const uint8_t *frame) {
  if (!frame || frame != d->buf) return NULL;
  uint8_t *b = d->buf;
  d->buf = NULL;
  d->buf_len = d->buf_cap = 0;
  return b;
}

cd_frame_status cd_frame_decoder_header(cd_frame_decoder *d, const uint8_t *data, size_t n, size_t *consumed) {
  size_t pos = 0;
  *consumed = 0;
  if (d->error) return (cd_frame_status)d->error;
  if (d->have_len) return CD_FRAME_OK;
  /* The previous frame's lifetime ended with this call. */
  cd_frame_decoder_done(d);
  uint64_t len = 0;
  int r;
  if (d->hdr_len == 0) {
    /* Fast path: the whole prefix is in data. */
    r = cd_frame_varint_decode(data, n, &len);
    if (r > 0) pos = (size_t)r;
  } else {
    r = 0;
  }
  if (r == 0) {
    /* Accumulate the prefix byte by byte in d->hdr. */
    while (pos < n) {
      d->hdr[d->hdr_len++] = data[pos++];
      r = cd_frame_varint_decode(d->hdr, d->hdr_len, &len);
      if (r != 0) break;
      if (d->hdr_len == CD_VARINT_MAX) {
        r = -1;
        break;
      }
    }
    if (r == 0) {
      *consumed = pos;
      return CD_FRAME_NEED_MORE;
    }
  }
  *consumed = pos;
  if (r < 0) {
    d->error = CD_FRAME_BAD_VARINT;
    return CD_FRAME_BAD_VARINT;
  }
  d->hdr_len = 0;
  if (len > d->cap) {
    d->announced = len;
    d->error = CD_FRAME_TOO_LARGE;
    return CD_FRAME_TOO_LARGE;
  }
  d->have_len = 1;
  d->body_len = (size_t)len;
  d->buf_len = 0;
  return CD_FRAME_OK;
}

cd_frame_status cd_frame_decoder_feed(cd_frame_decoder *d, const uint8_t *data, size_t n,
                                      size_t *consumed, const uint8_t **frame,
                                      size_t *frame_len) {
  size_t pos = 0;
  *frame = NULL;
  *frame_len = 0;
  cd_frame_status hs = cd_frame_decoder_header(d, data, n, &pos);
  *consumed = pos;
  if (hs != CD_FRAME_OK) return hs;

  size_t avail = n - pos;
  if (d->buf_len == 0 && avail >= d->body_len) {
    /* Zero copy: the whole body is in data. */
    *frame = data + pos;
    *frame_len = d->body_len;
    *consumed = pos + d->body_len;
    d->have_len = 0;
    return CD_FRAME_OK;
  }
  size_t take = d->body_len - d->buf_len;
  if (take > avail) take = avail;
  if (take) {
    if (reserve(d, d->buf_len + take) < 0) {
      d->error = CD_FRAME_NOMEM;
      *consumed = pos;
      return CD_FRAME_NOMEM;
    }
    memcpy(d->buf + d->buf_len, data + pos, take);
    d->buf_len += take;
    pos += take;
  }
  *consumed = pos;
  if (d->buf_len < d->body_len) return CD_FRAME_NEED_MORE;
  *frame = d->buf;
  *frame_len = d->body_len;
  d->have_len = 0;
  d->buf_len = 0; /* the buffer's content stays valid until the next feed */
  return CD_FRAME_OK;
}

ProtobufCMessage *cd_frame_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *body,
                                  size_t len, cd_budget *b, cd_wire_error *err) {
  int was = b->exhausted;
  b->exhausted = 0;
  ProtobufCMessage *m = protobuf_c_message_unpack(desc, &b->allocator, len, body);
  int ex = b->exhausted;
  b->exhausted = was || ex;
  if (m) {
    if (err) err->code = CD_WIRE_OK, err->field[0] = 0, err->message[0] = 0;
    return m;
  }
  if (err) {
    err->field[0] = 0;
    if (ex) {
      err->code = CD_WIRE_RESOURCE_EXHAUSTED;
      if (cd_budget_nomem(b))
        snprintf(err->message, sizeof err->message, "out of memory decoding the %zu-byte %s", len, desc->name);
      else
        snprintf(err->message, sizeof err->message,
                 "decoding the %zu-byte %s needs more than the decode budget of %zu bytes", len,
                 desc->name, b->limit);
    } else {
      err->code = CD_WIRE_INVALID_ARGUMENT;
      char why[200];
      if (cd_wirecheck_diagnose(desc, body, len, err->field, sizeof err->field, why, sizeof why) == 0)
        snprintf(err->message, sizeof err->message, "the %zu-byte frame is not a valid %s (malformed protobuf)",
                 len, desc->name);
      else
        snprintf(err->message, sizeof err->message, "the %zu-byte frame is not a valid %s: %s%s%s", len,
                 desc->name, err->field, err->field[0] ? ": " : "", why);
    }
  }
  return NULL;
}

const char *cd_frame_strerror(cd_frame_status s) {
  switch (s) {
  case CD_FRAME_NEED_MORE: return "need more bytes";
  case CD_FRAME_OK: return "ok";
  case CD_FRAME_TOO_LARGE: return "frame length exceeds the cap";
  case CD_FRAME_BAD_VARINT: return "malformed frame length prefix (varint longer than 10 bytes)";
  case CD_FRAME_NOMEM: return "out of memory reassembling a frame";
  }
  return "unknown framing status";
}
