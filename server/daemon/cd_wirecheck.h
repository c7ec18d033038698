/* cd_wirecheck.h — what protobuf-c does not tell about a protobuf
 * encoding. Its unpack takes strings as C strings without checking them,
 * and says only "no" to a malformed message. These walks read the encoding
 * itself, with the message descriptors, and name what they find by its
 * JSON path (contactQuery.bodies[3].geometryId) and byte offset. */
#ifndef CD_WIRECHECK_H
#define CD_WIRECHECK_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "cd_budget.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Check every string field of data[0..len), an encoding of a message d
 * that has decoded, recursively: 0 when each is valid UTF-8 (proto3's rule;
 * conforming decoders, Python's among them, reject a message that breaks
 * it) without NUL (a decoded C string would end there); else -1 with *err
 * INVALID_ARGUMENT naming the first bad field and the byte within it.
 * Unknown fields are skipped. */
int cd_wirecheck_strings(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len,
                         cd_wire_error *err);

/* Find why data[0..len) is not a valid encoding of d: a truncated key,
 * varint or value, a length past the end of its message, an unsupported
 * wire type (groups, 6, 7), field number 0, or a known field with the
 * wrong wire type. Returns -1 with field[fcap] (the JSON path of the field,
 * "" at top level) and why[wcap] ("length 200 at byte 57 runs past the end
 * of its message (12 bytes left)"), or 0 when the walk finds nothing. */
int cd_wirecheck_diagnose(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len, char *field,
                          size_t fcap, char *why, size_t wcap);

#ifdef __cplusplus
}
#endif

#endif
