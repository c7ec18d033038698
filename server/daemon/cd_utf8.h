/* cd_utf8.h — UTF-8 on the wire. protobuf `string` fields must hold valid
 * UTF-8 (conforming decoders, Python's among them, reject a message that
 * does not), and protobuf-c checks nothing. So every string of a binary
 * request is checked on its encoding (cd_json_decode checks JSON's), and
 * every error text the server
 * sends, which may quote client bytes (a mesh file's token) or be cut
 * mid-character by a printf precision, is repaired before it is sent. */
#ifndef CD_UTF8_H
#define CD_UTF8_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "cd_budget.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Length of the longest valid UTF-8 prefix of s[0..n): n when all of it is
 * valid (no overlong forms, surrogates or code points above U+10FFFF). */
size_t cd_utf8_valid_prefix(const char *s, size_t n);

/* Make the NUL-terminated s valid UTF-8 in place: every byte that does not
 * start a valid sequence becomes '?'. Returns the number replaced. */
size_t cd_utf8_repair(char *s);

/* Check every string field of the protobuf encoding data[0..len) of a
 * message d that has decoded, recursively: 0 when each is valid UTF-8
 * without NUL (protobuf-c would cut a decoded string at a NUL, so only the
 * encoding shows it); else -1 with *err INVALID_ARGUMENT naming the first
 * bad field by its JSON path (registerGeometry.name,
 * contactQuery.bodies[3].geometryId) and the byte offset. Unknown fields are
 * skipped. */
int cd_utf8_check_wire(const ProtobufCMessageDescriptor *d, const uint8_t *data, size_t len, cd_wire_error *err);

#ifdef __cplusplus
}
#endif

#endif
