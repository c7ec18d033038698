/* Delimited framing (cd_frame) and the decode budget (cd_budget). */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cd_budget.h"
#include "cd_frame.h"
#include "contactd.pb-c.h"

typedef Contactd__V1__Envelope Envelope;

/* ---- varints --------------------------------------------------------- */

Test(frame, varint_edges) {
  const struct {
    uint64_t v;
    size_t n;
  } cases[] = {{0, 1},
               {1, 1},
               {127, 1},
               {128, 2},
               {300, 2},
               {16383, 2},
               {16384, 3},
               {UINT32_MAX, 5},
               {(uint64_t)1 << 56, 9},
               {((uint64_t)1 << 63) - 1, 9},
               {(uint64_t)1 << 63, 10},
               {UINT64_MAX, 10}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    uint8_t buf[CD_VARINT_MAX];
    cr_assert_eq(cd_frame_varint_size(cases[i].v), cases[i].n, "size of %llu",
                 (unsigned long long)cases[i].v);
    size_t w = cd_frame_varint_encode(cases[i].v, buf);
    cr_assert_eq(w, cases[i].n);
    uint64_t back = 0;
    cr_assert_eq(cd_frame_varint_decode(buf, w, &back), (int)w);
    cr_assert_eq(back, cases[i].v);
    /* every proper prefix is incomplete */
    for (size_t k = 0; k < w; k++) cr_assert_eq(cd_frame_varint_decode(buf, k, &back), 0);
  }
  uint8_t b300[2];
  cd_frame_varint_encode(300, b300);
  cr_assert(b300[0] == 0xac && b300[1] == 0x02);
}

Test(frame, varint_malformed_and_nonminimal) {
  uint64_t v = 0;
  uint8_t eleven[11];
  memset(eleven, 0xff, sizeof eleven);
  cr_assert_eq(cd_frame_varint_decode(eleven, 11, &v), -1); /* continuation on byte 10 */
  uint8_t over[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
  cr_assert_eq(cd_frame_varint_decode(over, 10, &v), -1); /* bit 64 set */
  uint8_t max[10] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  cr_assert_eq(cd_frame_varint_decode(max, 10, &v), 10);
  cr_assert_eq(v, UINT64_MAX);
  uint8_t padded[3] = {0x81, 0x80, 0x00}; /* 1, written in 3 bytes */
  cr_assert_eq(cd_frame_varint_decode(padded, 3, &v), 3);
  cr_assert_eq(v, 1);
}

/* ---- helpers ------------------------------------------------------------ */

/* Encode an Envelope with request_id id and a hello whose client name has
 * name_len bytes; returns a malloc'd frame. */
static uint8_t *make_frame(uint64_t id, size_t name_len, size_t *len) {
  Envelope e = CONTACTD__V1__ENVELOPE__INIT;
  Contactd__V1__Hello h = CONTACTD__V1__HELLO__INIT;
  char *name = malloc(name_len + 1);
  for (size_t i = 0; i < name_len; i++) name[i] = (char)('a' + i % 26);
  name[name_len] = 0;
  h.client_name = name;
  h.protocol_version = 1;
  e.request_id = id;
  e.msg_case = CONTACTD__V1__ENVELOPE__MSG_HELLO;
  e.hello = &h;
  size_t body = 0;
  *len = cd_frame_size(&e.base, &body);
  uint8_t *out = malloc(*len);
  cr_assert_eq(cd_frame_write(&e.base, body, out), *len);
  free(name);
  return out;
}

/* Check a decoded frame body is the Envelope make_frame(id, name_len). */
static void check_body(const uint8_t *body, size_t len, uint64_t id, size_t name_len) {
  cd_budget b;
  cd_budget_init(&b, 1 << 20);
  cd_wire_error err;
  Envelope *e = (Envelope *)cd_frame_unpack(&contactd__v1__envelope__descriptor, body, len, &b,
                                            &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->request_id, id);
  cr_assert_eq(e->msg_case, CONTACTD__V1__ENVELOPE__MSG_HELLO);
  cr_assert_eq(strlen(e->hello->client_name), name_len);
  cd_budget_destroy(&b);
}

/* ---- encoder / decoder ---------------------------------------------------- */

Test(frame, whole_frame_is_zero_copy) {
  size_t n;
  uint8_t *f = make_frame(7, 20, &n);
  cr_assert_eq(f[0], n - 1); /* 1-byte prefix = body length */
  cd_frame_decoder d;
  cd_frame_decoder_init(&d, 0);
  cr_assert_eq(d.cap, CD_FRAME_DEFAULT_CAP);
  size_t used;
  const uint8_t *body;
  size_t blen;
  cr_assert_eq(cd_frame_decoder_feed(&d, f, n, &used, &body, &blen), CD_FRAME_OK);
  cr_assert_eq(used, n);
  cr_assert_eq(body, f + 1, "frame must point into the input");
  cr_assert_eq(blen, n - 1);
  cr_assert_null(d.buf, "no copy for a contiguous frame");
  check_body(body, blen, 7, 20);
  cr_assert_eq(cd_frame_decoder_pending(&d), 0);
  cd_frame_decoder_free(&d);
  free(f);
}

/* Three frames (empty, small, 5000-byte name => 2-byte prefix) back to back,
 * fed in chunks of `step` bytes (0 = pseudo-random sizes). */
static void split_feed(size_t step) {
  size_t n1, n2, n3;
  uint8_t *f2 = make_frame(2, 3, &n2);
  uint8_t *f3 = make_frame(3, 5000, &n3);
  uint8_t empty[1] = {0};
  n1 = 1;
  size_t total = n1 + n2 + n3;
  uint8_t *all = malloc(total);
  memcpy(all, empty, n1);
  memcpy(all + n1, f2, n2);
  memcpy(all + n1 + n2, f3, n3);
  cd_frame_decoder d;
  cd_frame_decoder_init(&d, 1 << 20);
  size_t pos = 0, frames = 0;
  uint32_t rng = 12345;
  while (pos < total) {
    size_t chunk = step;
    if (!chunk) {
      rng = rng * 1103515245u + 12345u;
      chunk = 1 + (rng >> 16) % 700;
    }
    if (chunk > total - pos) chunk = total - pos;
    const uint8_t *p = all + pos;
    size_t left = chunk;
    for (;;) {
      size_t used;
      const uint8_t *body;
      size_t blen;
      cd_frame_status s = cd_frame_decoder_feed(&d, p, left, &used, &body, &blen);
      cr_assert(s >= 0, "status %d", s);
      p += used;
      left -= used;
      if (s == CD_FRAME_NEED_MORE) {
        cr_assert_eq(left, 0);
        break;
      }
      frames++;
      if (frames == 1) cr_assert_eq(blen, 0);
      if (frames == 2) check_body(body, blen, 2, 3);
      if (frames == 3) check_body(body, blen, 3, 5000);
      if (!left) break;
    }
    pos += chunk;
  }
  cr_assert_eq(frames, 3);
  cr_assert_eq(cd_frame_decoder_pending(&d), 0);
  cd_frame_decoder_free(&d);
  free(all);
  free(f2);
  free(f3);
}

Test(frame, split_byte_by_byte) { split_feed(1); }
Test(frame, split_random_chunks) { split_feed(0); }
Test(frame, split_in_one_buffer) { split_feed(1 << 20); }

Test(frame, over_cap_rejected_before_allocation) {
  cd_frame_decoder d;
  cd_frame_decoder_init(&d, 100);
  uint8_t hdr[CD_VARINT_MAX];
  size_t h = cd_frame_varint_encode((uint64_t)1 << 30, hdr);
  /* prefix arrives byte by byte */
  size_t used;
  const uint8_t *body;
  size_t blen;
  for (size_t i = 0; i + 1 < h; i++)
    cr_assert_eq(cd_frame_decoder_feed(&d, hdr + i, 1, &used, &body, &blen), CD_FRAME_NEED_MORE);
  cr_assert_eq(cd_frame_decoder_feed(&d, hdr + h - 1, 1, &used, &body, &blen), CD_FRAME_TOO_LARGE);
  cr_assert_eq(d.announced, (uint64_t)1 << 30);
  cr_assert_null(d.buf);
  cr_assert_eq(d.buf_cap, 0);
  /* sticky */
  uint8_t more[4] = {1, 2, 3, 4};
  cr_assert_eq(cd_frame_decoder_feed(&d, more, 4, &used, &body, &blen), CD_FRAME_TOO_LARGE);
  cr_assert_eq(used, 0);
  cd_frame_decoder_free(&d);

  /* exactly the cap is accepted, cap + 1 is not */
  cd_frame_decoder_init(&d, 100);
  uint8_t f[102] = {100};
  cr_assert_eq(cd_frame_decoder_feed(&d, f, 101, &used, &body, &blen), CD_FRAME_OK);
  cr_assert_eq(blen, 100);
  f[0] = 101;
  cr_assert_eq(cd_frame_decoder_feed(&d, f, 102, &used, &body, &blen), CD_FRAME_TOO_LARGE);
  cr_assert_eq(d.announced, 101);
  cd_frame_decoder_free(&d);
}

Test(frame, bad_varint_prefix) {
  cd_frame_decoder d;
  cd_frame_decoder_init(&d, 0);
  uint8_t junk[12];
  memset(junk, 0xff, sizeof junk);
  size_t used;
  const uint8_t *body;
  size_t blen;
  /* whole */
  cr_assert_eq(cd_frame_decoder_feed(&d, junk, 12, &used, &body, &blen), CD_FRAME_BAD_VARINT);
  cd_frame_decoder_free(&d);
  /* byte by byte: 9 bytes wait, the 10th fails */
  cd_frame_decoder_init(&d, 0);
  for (int i = 0; i < 9; i++)
    cr_assert_eq(cd_frame_decoder_feed(&d, junk, 1, &used, &body, &blen), CD_FRAME_NEED_MORE);
  cr_assert_eq(cd_frame_decoder_feed(&d, junk, 1, &used, &body, &blen), CD_FRAME_BAD_VARINT);
  cr_assert_str_eq(cd_frame_strerror(CD_FRAME_BAD_VARINT),
                   "malformed frame length prefix (varint longer than 10 bytes)");
  cd_frame_decoder_free(&d);
}

Test(frame, truncated_frame_is_pending) {
  size_t n;
  uint8_t *f = make_frame(9, 300, &n); /* 2-byte prefix */
  cd_frame_decoder d;
  cd_frame_decoder_init(&d, 0);
  size_t used;
  const uint8_t *body;
  size_t blen;
  cr_assert_eq(cd_frame_decoder_pending(&d), 0);
  cr_assert_eq(cd_frame_decoder_feed(&d, f, 1, &used, &body, &blen), CD_FRAME_NEED_MORE);
  cr_assert_eq(cd_frame_decoder_pending(&d), 1); /* half a prefix */
  cr_assert_eq(cd_frame_decoder_feed(&d, f + 1, n / 2, &used, &body, &blen), CD_FRAME_NEED_MORE);
  cr_assert_eq(cd_frame_decoder_pending(&d), 1 + n / 2);
  cr_assert_eq(cd_frame_decoder_feed(&d, f + 1 + n / 2, n - 1 - n / 2, &used, &body, &blen),
               CD_FRAME_OK);
  check_body(body, blen, 9, 300);
  cr_assert_eq(cd_frame_decoder_pending(&d), 0);
  cd_frame_decoder_free(&d);
  free(f);
}

/* A reassembled frame's buffer can be handed over (the caller frees it)
 * and the next frame is reassembled in a new one; a frame returned in
 * place cannot. */
Test(frame, reassembled_buffer_is_taken) {
  size_t n1, n2;
  uint8_t *f1 = make_frame(1, 3000, &n1), *f2 = make_frame(2, 40, &n2);
  uint8_t *all = malloc(n1 + n2);
  memcpy(all, f1, n1);
  memcpy(all + n1, f2, n2);
  cd_frame_decoder d;
  cd_frame_decoder_init(&d, 0);
  size_t used;
  const uint8_t *body;
  size_t blen;
  cr_assert_eq(cd_frame_decoder_feed(&d, all, 100, &used, &body, &blen), CD_FRAME_NEED_MORE);
  cr_assert_eq(cd_frame_decoder_feed(&d, all + 100, n1 + n2 - 100, &used, &body, &blen), CD_FRAME_OK);
  cr_assert_eq(body, d.buf, "split across feeds: reassembled");
  uint8_t *taken = cd_frame_decoder_take(&d, body);
  cr_assert_eq(taken, body);
  cr_assert_null(d.buf);
  size_t off = 100 + used;
  cr_assert_eq(cd_frame_decoder_feed(&d, all + off, n1 + n2 - off, &used, &body, &blen), CD_FRAME_OK);
  cr_assert_eq(body, all + off + 1, "the next frame is returned in place");
  cr_assert_null(cd_frame_decoder_take(&d, body), "a frame in the caller's data is not the decoder's");
  check_body(body, blen, 2, 40);
  check_body(taken, n1 - 2, 1, 3000); /* still valid: the caller's now */
  free(taken);
  cd_frame_decoder_free(&d);
  free(all);
  free(f1);
  free(f2);
}

/* Once a reassembled frame is done with, a buffer larger than a socket
 * read goes at once (an idle connection keeps nothing of a 200 KB frame);
 * a small one stays for the next split frame; a frame still arriving keeps
 * its buffer. */
Test(frame, done_gives_back_a_large_buffer_only) {
  size_t n1, n2;
  uint8_t *f1 = make_frame(1, 200000, &n1), *f2 = make_frame(2, 10000, &n2);
  cd_frame_decoder d;
  cd_frame_decoder_init(&d, 0);
  size_t used;
  const uint8_t *body;
  size_t blen;
  cr_assert_eq(cd_frame_decoder_feed(&d, f1, n1 / 2, &used, &body, &blen), CD_FRAME_NEED_MORE);
  const size_t mid = d.buf_cap;
  cd_frame_decoder_done(&d);
  cr_assert_eq(d.buf_cap, mid, "mid-frame: kept");
  cr_assert_eq(cd_frame_decoder_feed(&d, f1 + n1 / 2, n1 - n1 / 2, &used, &body, &blen), CD_FRAME_OK);
  cr_assert_eq(body, d.buf);
  check_body(body, blen, 1, 200000);
  cd_frame_decoder_done(&d);
  cr_assert_null(d.buf, "a 200 KB buffer is given back");
  cr_assert_eq(d.buf_cap, 0);
  cr_assert_eq(cd_frame_decoder_feed(&d, f2, 100, &used, &body, &blen), CD_FRAME_NEED_MORE);
  cr_assert_eq(cd_frame_decoder_feed(&d, f2 + 100, n2 - 100, &used, &body, &blen), CD_FRAME_OK);
  check_body(body, blen, 2, 10000);
  const uint8_t *small = d.buf;
  cd_frame_decoder_done(&d);
  cr_assert_eq(d.buf, small, "a 10 KB buffer is kept for the next split frame");
  cr_assert_eq(cd_frame_decoder_pending(&d), 0);
  cd_frame_decoder_free(&d);
  free(f1);
  free(f2);
}

Test(frame, reassembly_grows_with_arrived_bytes) {
  cd_frame_decoder d;
  cd_frame_decoder_init(&d, 0);
  uint8_t hdr[CD_VARINT_MAX + 10] = {0};
  size_t h = cd_frame_varint_encode(32u << 20, hdr); /* announces 32 MiB */
  size_t used;
  const uint8_t *body;
  size_t blen;
  cr_assert_eq(cd_frame_decoder_feed(&d, hdr, h + 10, &used, &body, &blen), CD_FRAME_NEED_MORE);
  cr_assert_eq(used, h + 10);
  cr_assert_leq(d.buf_cap, 4096, "buffer %zu for 10 arrived bytes", d.buf_cap);
  cd_frame_decoder_free(&d);
}

/* ---- unpack with a budget ------------------------------------------------ */

Test(frame, unpack_garbage_is_invalid_argument) {
  cd_budget b;
  cd_budget_init(&b, 1 << 20);
  cd_wire_error err;
  uint8_t junk[] = {0x0a, 0x7f, 0x01}; /* field 1 length-delimited, 127 bytes, truncated */
  cr_assert_null(cd_frame_unpack(&contactd__v1__envelope__descriptor, junk, sizeof junk, &b, &err));
  cr_assert_eq(err.code, CD_WIRE_INVALID_ARGUMENT);
  cr_assert(strstr(err.message, "not a valid contactd.v1.Envelope"), "%s", err.message);
  cd_budget_destroy(&b);
}

/* A ContactQuery of n empty bodies: 2 wire bytes per body, ~100 decoded. */
static uint8_t *many_bodies(size_t n, size_t *len) {
  size_t inner = 2 * n;
  size_t cq = 1 + cd_frame_varint_size(inner) + inner; /* Envelope field 11 */
  uint8_t *p = malloc(cq);
  size_t o = 0;
  p[o++] = (11 << 3) | 2;
  o += cd_frame_varint_encode(inner, p + o);
  for (size_t i = 0; i < n; i++) {
    p[o++] = (1 << 3) | 2; /* ContactQuery.bodies */
    p[o++] = 0;
  }
  *len = o;
  return p;
}

Test(frame, unpack_budget_bounds_decode_memory) {
  size_t len;
  uint8_t *p = many_bodies(100000, &len);
  cr_assert_lt(len, 210000);
  cd_budget b;
  cd_budget_init(&b, 2 << 20); /* 10x the frame, but far below what decode wants */
  cd_wire_error err;
  cr_assert_null(cd_frame_unpack(&contactd__v1__envelope__descriptor, p, len, &b, &err));
  cr_assert_eq(err.code, CD_WIRE_RESOURCE_EXHAUSTED);
  cr_assert(strstr(err.message, "decode budget"), "%s", err.message);
  cr_assert_leq(b.peak, (size_t)2 << 20, "held %zu", b.peak);
  cr_assert(cd_budget_exhausted(&b));

  /* with room it decodes, and a reset frees it all for the next frame */
  cd_budget_reset(&b);
  cd_budget_set_limit(&b, 64 << 20);
  Envelope *e = (Envelope *)cd_frame_unpack(&contactd__v1__envelope__descriptor, p, len, &b, &err);
  cr_assert_not_null(e, "%s", err.message);
  cr_assert_eq(e->contact_query->n_bodies, 100000);
  cr_assert_eq(e->contact_query->bodies[99999]->body_id, 0);
  cr_assert_gt(b.used, 100000 * sizeof(Contactd__V1__Body), "decode used %zu", b.used);
  cr_assert_leq(b.peak, (size_t)64 << 20);
  cd_budget_destroy(&b);
  free(p);
}

Test(budget, alignment_limit_and_reset) {
  cd_budget b;
  cd_budget_init(&b, 10000);
  for (int i = 1; i < 50; i++) {
    uint8_t *p = cd_budget_alloc(&b, (size_t)i);
    cr_assert_not_null(p);
    cr_assert_eq((uintptr_t)p % 16, 0);
    memset(p, 0xab, (size_t)i);
  }
  cr_assert_leq(b.held, 10000);
  cr_assert_null(cd_budget_alloc(&b, 20000));
  cr_assert(cd_budget_exhausted(&b));
  /* smaller allocations still work after a failed big one */
  cr_assert_not_null(cd_budget_alloc(&b, 64));
  /* fill to the limit: never more than 10000 bytes held */
  while (cd_budget_alloc(&b, 1000)) {
  }
  cr_assert_leq(b.held, 10000);
  cd_budget_reset(&b);
  cr_assert_eq(cd_budget_exhausted(&b), 0);
  cr_assert_eq(b.used, 0);
  uint32_t *z = cd_budget_calloc(&b, 100, sizeof(uint32_t));
  cr_assert_not_null(z);
  for (int i = 0; i < 100; i++) cr_assert_eq(z[i], 0);
  cr_assert_null(cd_budget_calloc(&b, SIZE_MAX / 2, 4)); /* overflow */
  char *s = cd_budget_strndup(&b, "hello world", 5);
  cr_assert_str_eq(s, "hello");
  cd_budget_destroy(&b);
  cr_assert_eq(b.held, 0);
}

Test(budget, protobuf_allocator_roundtrip) {
  cd_budget b;
  cd_budget_init(&b, 0); /* unlimited */
  size_t n;
  uint8_t *f = make_frame(11, 100, &n);
  Envelope *e = contactd__v1__envelope__unpack(cd_budget_allocator(&b), n - 1, f + 1);
  cr_assert_not_null(e);
  cr_assert_eq(e->request_id, 11);
  cr_assert_gt(b.used, sizeof(Envelope));
  /* free_unpacked through the arena allocator is a harmless no-op */
  contactd__v1__envelope__free_unpacked(e, cd_budget_allocator(&b));
  cd_budget_destroy(&b);
  free(f);
}

/* Random bytes through the decoder and the budgeted unpack: never a crash,
 * never more than the budget, every outcome a defined status. */
Test(frame, random_bytes_fail_cleanly) {
  uint32_t rng = 88172645u;
  cd_budget b;
  cd_budget_init(&b, 256 << 10);
  int frames = 0, unpacked = 0, rejected = 0, stream_errors = 0;
  for (int it = 0; it < 300; it++) {
    uint8_t data[512];
    for (size_t i = 0; i < sizeof data; i++) {
      rng ^= rng << 13, rng ^= rng >> 17, rng ^= rng << 5;
      data[i] = (uint8_t)rng;
      if (i % 40 == 0) data[i] = (uint8_t)(rng % 60); /* plausible small lengths */
    }
    cd_frame_decoder d;
    cd_frame_decoder_init(&d, 1000);
    size_t pos = 0;
    while (pos < sizeof data) {
      size_t used;
      const uint8_t *body;
      size_t blen;
      cd_frame_status s = cd_frame_decoder_feed(&d, data + pos, sizeof data - pos, &used, &body, &blen);
      pos += used;
      if (s < 0) {
        stream_errors++;
        cr_assert(s == CD_FRAME_TOO_LARGE || s == CD_FRAME_BAD_VARINT);
        break;
      }
      if (s == CD_FRAME_NEED_MORE) break;
      frames++;
      cr_assert_leq(blen, 1000);
      cd_wire_error err;
      cd_budget_reset(&b);
      if (cd_frame_unpack(&contactd__v1__envelope__descriptor, body, blen, &b, &err)) unpacked++;
      else {
        rejected++;
        cr_assert(err.code == CD_WIRE_INVALID_ARGUMENT || err.code == CD_WIRE_RESOURCE_EXHAUSTED);
      }
      cr_assert_leq(b.held, 256 << 10);
    }
    cd_frame_decoder_free(&d);
  }
  cd_budget_destroy(&b);
  cr_assert_gt(frames, 300, "%d frames", frames);
  cr_assert_gt(rejected, 100, "%d rejected", rejected);
  cr_assert_gt(unpacked, 10, "%d unpacked", unpacked);
  cr_assert_gt(stream_errors, 10, "%d stream errors", stream_errors);
}
