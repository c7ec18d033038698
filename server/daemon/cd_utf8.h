/* cd_utf8.h — UTF-8 validation. protobuf `string` fields must hold valid
 * UTF-8: a binary request's strings are checked on its encoding
 * (cd_wirecheck), a JSON request's as they are converted (cd_json), and
 * every error text the server sends, which may quote client bytes (a mesh
 * file's token) or be cut mid-character by a printf precision, is repaired
 * before it is sent. */
#ifndef CD_UTF8_H
#define CD_UTF8_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Length of the longest valid UTF-8 prefix of s[0..n): n when all of it is
 * valid (no overlong forms, surrogates or code points above U+10FFFF). */
size_t cd_utf8_valid_prefix(const char *s, size_t n);

/* Make the NUL-terminated s valid UTF-8 in place: every byte that does not
 * start a valid sequence becomes '?'. Returns the number replaced. */
size_t cd_utf8_repair(char *s);

#ifdef __cplusplus
}
#endif

#endif
