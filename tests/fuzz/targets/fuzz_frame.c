/* libFuzzer target: the protobuf side of the wire, as a connection meets
 * it. The input is a byte stream cut into reads of varying size (byte 0
 * seeds the cut points); the incremental frame decoder (cd_frame.c) turns
 * it into frames, each frame is unpacked as an Envelope inside a decode
 * budget, and then checked as the daemon checks it: strings of a decoded
 * message (cd_wirecheck_strings), or the reason a frame did not decode
 * (cd_wirecheck_diagnose). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cd_budget.h"
#include "cd_frame.h"
#include "cd_wirecheck.h"
#include "contactd.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FRAME_CAP ((size_t)1 << 20)   /* max_frame_bytes for this target */
#define BUDGET ((size_t)4 << 20)      /* decode_budget_bytes */

static void check_frame(const uint8_t *body, size_t len, cd_budget *b) {
  const ProtobufCMessageDescriptor *d = &contactd__v1__envelope__descriptor;
  cd_wire_error err;
  memset(&err, 0, sizeof err);
  ProtobufCMessage *m = cd_frame_unpack(d, body, len, b, &err);
  if (m) {
    cd_wire_error serr;
    memset(&serr, 0, sizeof serr);
    if (cd_wirecheck_strings(d, body, len, &serr) != 0 && serr.code != CD_WIRE_INVALID_ARGUMENT) abort();
  } else {
    if (err.code != CD_WIRE_INVALID_ARGUMENT && err.code != CD_WIRE_RESOURCE_EXHAUSTED) abort();
    char field[256], why[512];
    cd_wirecheck_diagnose(d, body, len, field, sizeof field, why, sizeof why);
    if (!memchr(field, '\0', sizeof field) || !memchr(why, '\0', sizeof why)) abort();
  }
  cd_budget_reset(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint32_t cut = data[0] * 2654435761u + 1;
  data++, size--;
  cd_frame_decoder dec;
  cd_frame_decoder_init(&dec, FRAME_CAP);
  cd_budget b;
  cd_budget_init(&b, BUDGET);
  size_t off = 0;
  while (off < size) {
    cut = cut * 1103515245u + 12345u;
    size_t n = 1 + (cut >> 16) % 64;
    if (n > size - off) n = size - off;
    /* Feed the read through the decoder, frame by frame, as cd_conn does. */
    const uint8_t *p = data + off;
    size_t left = n;
    while (left > 0) {
      size_t used = 0;
      const uint8_t *frame = NULL;
      size_t flen = 0;
      cd_frame_status st = cd_frame_decoder_feed(&dec, p, left, &used, &frame, &flen);
      if (used > left) abort();
      p += used, left -= used;
      if (st == CD_FRAME_OK) {
        check_frame(frame, flen, &b);
        cd_frame_decoder_done(&dec);
      } else if (st == CD_FRAME_NEED_MORE) {
        if (left != 0) abort();
      } else {
        goto out; /* framing lost: the connection would be closed */
      }
    }
    off += n;
  }
out:
  (void)cd_frame_decoder_pending(&dec);
  cd_frame_decoder_free(&dec);
  cd_budget_destroy(&b);
  return 0;
}
