/* cd_splice.h — a reply frame packed in pieces (cd_splice.c): the records
 * of one repeated field packed apart (each query job packs its own pairs on
 * its worker) and the rest of the message packed around them, giving the
 * same bytes as packing the whole message at once.
 *
 * Protobuf's wire form of a message is the concatenation of its field
 * records (tag, then value; a sub-message's value is its length and its
 * packed bytes), and protobuf-c writes them in field-number order, the
 * elements of a repeated field one after another. So a message is
 *     pack(fields numbered below F) + the records of F + pack(fields above F)
 * and the length prefix of the message that holds it grows by the records'
 * size. Any thread: touches only its arguments. */
#ifndef CD_SPLICE_H
#define CD_SPLICE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "contactd.pb-c.h"

/* Bytes of the record of field number `field` holding sub-message m (its
 * tag, its length, m packed); *body receives m's packed size. */
size_t cd_splice_record_size(const ProtobufCMessage *m, uint32_t field, size_t *body);
/* Write that record (body as cd_splice_record_size gave it) to out, which
 * holds at least its size; returns the bytes written. */
size_t cd_splice_record_write(const ProtobufCMessage *m, uint32_t field, size_t body, uint8_t *out);

/* Bytes packed apart: one query job's records. */
typedef struct cd_splice_part {
  uint8_t *p;
  size_t n;
} cd_splice_part;

/* A delimited frame (cd_frame.h) of an envelope as head + records + tail. */
typedef struct cd_splice {
  uint8_t *head; /* malloc'd: the frame's length prefix up to the records */
  size_t nhead;
  uint8_t *tail; /* malloc'd: what follows the records */
  size_t ntail;
  size_t total; /* nhead + the records' bytes + ntail: the frame's size */
} cd_splice;

/* The pieces of the frame of env, whose message (the oneof env->msg_case
 * names) is `inner`, with `nrec` bytes of records of inner's field number
 * `field` (written apart with cd_splice_record_write, in order) in place of
 * that field, which inner leaves empty. 0 on success, -1 when out of
 * memory. */
int cd_splice_frame(const Contactd__V1__Envelope *env, const ProtobufCMessage *inner, uint32_t field, size_t nrec,
                    cd_splice *sp);
void cd_splice_free(cd_splice *sp);

/* The number of field `name` of message type d (0 when it has none). */
uint32_t cd_splice_field(const ProtobufCMessageDescriptor *d, const char *name);

#endif
