/* cd_utf8.c — UTF-8 validation of requests and repair of error texts. */
#include "cd_utf8.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>


/* Bytes of the valid sequence starting at s[0..n), or 0. */
static size_t seq_len(const unsigned char *s, size_t n) {
  const unsigned c = s[0];
  if (c < 0x80) return 1;
  size_t k;
  uint32_t cp, min;
  if (c >= 0xC2 && c <= 0xDF) k = 2, cp = c & 0x1F, min = 0x80;
  else if (c >= 0xE0 && c <= 0xEF) k = 3, cp = c & 0x0F, min = 0x800;
  else if (c >= 0xF0 && c <= 0xF4) k = 4, cp = c & 0x07, min = 0x10000;
  else return 0; /* a continuation byte, C0/C1 (overlong), F5..FF */
  if (n < k) return 0;
  for (size_t i = 1; i < k; i++) {
    if ((s[i] & 0xC0) != 0x80) return 0;
    cp = cp << 6 | (s[i] & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return k;
}

size_t cd_utf8_valid_prefix(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    if (u[i] < 0x80) { /* ASCII runs: the usual case */
      i++;
      continue;
    }
    size_t k = seq_len(u + i, n - i);
    if (!k) return i;
    i += k;
  }
  return n;
}

size_t cd_utf8_repair(char *s) {
  size_t n = strlen(s), bad = 0, i = 0;
  while (i < n) {
    size_t k = seq_len((const unsigned char *)s + i, n - i);
    if (k) {
      i += k;
    } else {
      s[i++] = '?';
      bad++;
    }
  }
  return bad;
}
