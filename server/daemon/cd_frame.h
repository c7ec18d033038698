/* cd_frame.h — protobuf "delimited" framing: each message is preceded by its
 * length as a base-128 varint (what Java writeDelimitedTo, Go protodelim and
 * Python parse_length_prefixed read and write).
 *
 * The incremental decoder consumes bytes as they arrive from a socket and
 * yields complete frame bodies. The length is checked against the cap as
 * soon as its varint is complete, before anything is allocated, and the
 * buffer for a frame split across reads grows only with the bytes that have
 * actually arrived (a client announcing 64 MiB and sending 10 bytes costs 10
 * bytes). A frame that lies whole inside the caller's buffer is returned in
 * place (zero copy). */
#ifndef CD_FRAME_H
#define CD_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "cd_budget.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CD_FRAME_DEFAULT_CAP ((size_t)256 << 20) /* 256 MiB: cd_limits.h max_frame_bytes */
#define CD_VARINT_MAX 10                        /* bytes in the longest varint */

/* ---- varints ---------------------------------------------------------- */

/* Bytes the varint encoding of v takes (1..10). */
size_t cd_frame_varint_size(uint64_t v);
/* Write v to out (at least cd_frame_varint_size(v) bytes); returns bytes written. */
size_t cd_frame_varint_encode(uint64_t v, uint8_t *out);
/* Read a varint from p[0..n). Returns bytes consumed (1..10), 0 if p ends
 * before the varint does (need more bytes), -1 if malformed (more than 10
 * bytes, or a 10th byte carrying bits beyond 64). Non-minimal encodings
 * (e.g. 0x80 0x00) are accepted, as protobuf does. */
int cd_frame_varint_decode(const uint8_t *p, size_t n, uint64_t *v);

/* ---- encoder ---------------------------------------------------------- */

/* Total frame size (varint + body) of message m; *body_len (may be NULL)
 * receives the packed size of m alone. */
size_t cd_frame_size(const ProtobufCMessage *m, size_t *body_len);
/* Write the frame of m (body_len as returned by cd_frame_size) to out, which
 * holds at least cd_frame_size() bytes. Returns bytes written. */
size_t cd_frame_write(const ProtobufCMessage *m, size_t body_len, uint8_t *out);

/* ---- incremental decoder ---------------------------------------------- */

typedef enum cd_frame_status {
  CD_FRAME_NEED_MORE = 0,  /* all input consumed, no complete frame yet */
  CD_FRAME_OK = 1,         /* a complete frame is returned */
  CD_FRAME_TOO_LARGE = -1, /* announced length > cap (nothing allocated) */
  CD_FRAME_BAD_VARINT = -2,/* length prefix longer than 10 bytes / > 64 bits */
  CD_FRAME_NOMEM = -3,     /* could not grow the reassembly buffer */
} cd_frame_status;

typedef struct cd_frame_decoder {
  size_t cap;            /* largest body accepted */
  uint8_t hdr[CD_VARINT_MAX];
  size_t hdr_len;        /* bytes of a partial length prefix held in hdr */
  int have_len;          /* the current frame's length is known */
  size_t body_len;       /* the current frame's length */
  uint8_t *buf;          /* reassembly buffer for a frame split across feeds */
  size_t buf_len, buf_cap;
  int error;             /* sticky: a cd_frame_status < 0 */
  uint64_t announced;    /* the offending length after CD_FRAME_TOO_LARGE */
} cd_frame_decoder;

/* cap = 0 means CD_FRAME_DEFAULT_CAP. */
void cd_frame_decoder_init(cd_frame_decoder *d, size_t cap);
void cd_frame_decoder_free(cd_frame_decoder *d);

/* Consume input from data[0..n). Returns:
 *  CD_FRAME_OK: *frame / *frame_len hold one complete frame body, pointing
 *    either into data (zero copy) or into the decoder's buffer; valid until
 *    the next call on d or until data changes. *consumed bytes of data were
 *    used; call again with data + *consumed for the next frame.
 *  CD_FRAME_NEED_MORE: all n bytes consumed (*consumed == n); feed more.
 *  < 0: the stream is unusable (framing lost); errors are sticky. For
 *    CD_FRAME_TOO_LARGE, d->announced holds the announced length.
 * A zero-length frame is a valid (empty) message. */
cd_frame_status cd_frame_decoder_feed(cd_frame_decoder *d, const uint8_t *data, size_t n,
                                      size_t *consumed, const uint8_t **frame,
                                      size_t *frame_len);

/* Hand the caller the decoder's buffer when `frame`, just returned by
 * cd_frame_decoder_feed, lies in it: the caller then owns (and frees) the
 * bytes, and the decoder starts its next frame with a new buffer. NULL when
 * the frame was returned in place (it then lies in the caller's data). */
uint8_t *cd_frame_decoder_take(cd_frame_decoder *d, const uint8_t *frame);

/* The frame last returned by cd_frame_decoder_feed is done with: a
 * reassembly buffer larger than a socket read (64 KiB) is given back now,
 * so that a connection that goes quiet after a large frame keeps at most
 * that much. No-op while a frame is in progress. */
void cd_frame_decoder_done(cd_frame_decoder *d);

/* Only the length prefix of the next frame: CD_FRAME_OK once d->body_len
 * holds it (at once when it is already known; nothing of the body is
 * consumed), CD_FRAME_NEED_MORE when data ended inside the prefix (all of
 * it consumed), or an error as cd_frame_decoder_feed's. Lets the caller
 * decide whether to take a frame of that size before buffering it. */
cd_frame_status cd_frame_decoder_header(cd_frame_decoder *d, const uint8_t *data, size_t n, size_t *consumed);

/* Bytes of an unfinished frame (prefix and body) held by the decoder; nonzero
 * at end of stream means the peer sent a truncated frame. */
size_t cd_frame_decoder_pending(const cd_frame_decoder *d);

/* Unpack a frame body as a message of type desc with every allocation taken
 * from budget b. Returns NULL on failure with *err filled:
 * RESOURCE_EXHAUSTED when the budget ran out, INVALID_ARGUMENT when the bytes
 * are not a valid message. Free by resetting the budget. */
ProtobufCMessage *cd_frame_unpack(const ProtobufCMessageDescriptor *desc, const uint8_t *body,
                                  size_t len, cd_budget *b, cd_wire_error *err);

/* Human-readable text for a status, e.g. "frame length exceeds the cap". */
const char *cd_frame_strerror(cd_frame_status s);

#ifdef __cplusplus
}
#endif
#endif /* CD_FRAME_H */
