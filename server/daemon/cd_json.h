/* cd_json.h — the proto3 canonical JSON mapping, derived generically from the
 * protobuf-c descriptors (nothing is written per message).
 *
 * JSON -> message accepts: lowerCamelCase field names and the original
 * snake_case names; 64-bit integers as strings or (up to 2^53) numbers;
 * 32-bit integers as numbers or strings; floats as numbers, numeric strings
 * or "NaN" / "Infinity" / "-Infinity"; enums by name or number; bytes as
 * standard or URL-safe base64, padded or not; null for "default". It rejects
 * unknown fields, duplicate fields, two members of one oneof, wrong types,
 * out-of-range numbers and trailing garbage, with an error whose field is
 * the lowerCamelCase path ("contactQuery.bodies[2].pose.position.x") and
 * whose message starts with it ("...x: expected a number, got a string").
 *
 * message -> JSON writes one line (no newline) with lowerCamelCase names,
 * omits fields at their proto3 default (except a set oneof member, which is
 * always written), writes 64-bit integers as strings, enums by name (the
 * number when unknown), bytes as padded standard base64 and non-finite
 * doubles as "NaN" / "Infinity" / "-Infinity".
 *
 * Memory: everything (cJSON's parse tree and printed text, the decoded
 * message) is allocated from the caller's cd_budget, so exceeding the budget
 * fails cleanly with RESOURCE_EXHAUSTED; reset the budget to free it all.
 * cJSON's allocator hooks are process-global: cd_json installs, once, hooks
 * that use the budget only inside cd_json calls on the calling thread and
 * plain malloc/free everywhere else, so other cJSON users are unaffected
 * (they must free cJSON_Print* output with cJSON_free or free as usual). */
#ifndef CD_JSON_H
#define CD_JSON_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "cd_budget.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Install the cJSON hooks (idempotent, thread-safe; also done by the first
 * cd_json call). Call it at startup before other threads use cJSON. */
void cd_json_global_init(void);

/* Parse text[0..len) (need not be NUL-terminated; surrounding whitespace is
 * allowed) as a message of type desc. Returns the message, allocated in b,
 * or NULL with *err filled (INVALID_ARGUMENT, or RESOURCE_EXHAUSTED when the
 * budget ran out). Strings must be valid UTF-8 without NUL (proto3 asks
 * for the first; a C string cannot carry the second). */
ProtobufCMessage *cd_json_decode(const ProtobufCMessageDescriptor *desc, const char *text,
                                 size_t len, cd_budget *b, cd_wire_error *err);

/* Write m as one line of JSON (NUL-terminated, no trailing newline),
 * allocated in b; *len (may be NULL) receives its length. NULL with *err
 * filled (RESOURCE_EXHAUSTED) when the budget ran out. */
char *cd_json_encode(const ProtobufCMessage *m, cd_budget *b, size_t *len, cd_wire_error *err);

/* The proto3 JSON name of a field name ("geometry_id" -> "geometryId") into
 * out[cap]; returns its length (truncated to cap - 1). */
size_t cd_json_name(const char *field_name, char *out, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* CD_JSON_H */
