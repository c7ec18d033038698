/* cd_hash.h — SHA-256 (FIPS 180-4), used to content-address geometries:
 * a geometry id is the lowercase hex SHA-256 of its canonical encoding. */
#ifndef CD_HASH_H
#define CD_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct cd_sha256 {
  uint32_t h[8];
  uint64_t len; /* bytes hashed so far */
  uint8_t buf[64];
  size_t nbuf;
} cd_sha256;

void cd_hash_sha256_init(cd_sha256 *s);
void cd_hash_sha256_update(cd_sha256 *s, const void *data, size_t n);
void cd_hash_sha256_final(cd_sha256 *s, uint8_t out[32]);

/* Canonical encoders for hashing: fixed-width little-endian values; doubles
 * with -0 folded to +0 and every NaN folded to one pattern. */
void cd_hash_sha256_u64(cd_sha256 *s, uint64_t v);
void cd_hash_sha256_f64(cd_sha256 *s, double v);
/* n doubles as cd_hash_sha256_f64 each would hash them (same bytes), in bulk. */
void cd_hash_sha256_f64s(cd_sha256 *s, const double *v, size_t n);
/* Length-prefixed byte string. */
void cd_hash_sha256_bytes(cd_sha256 *s, const void *data, size_t n);

/* 64 lowercase hex digits + NUL. */
#define CD_HASH_HEX_LEN 64
void cd_hash_hex(const uint8_t digest[32], char out[CD_HASH_HEX_LEN + 1]);

/* For tests: run n 64-byte blocks through one implementation of the
 * compression function; -1 when this build or CPU lacks it. cd_hash_sha256_update
 * uses the SHA extensions where the CPU has them, else portable C. */
enum { CD_SHA256_PORTABLE = 0, CD_SHA256_SHANI = 1 };
int cd_hash_sha256_blocks_with(int impl, uint32_t h[8], const void *data, size_t n);

#endif
