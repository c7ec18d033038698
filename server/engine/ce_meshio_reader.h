/* ce_meshio_reader.h — the reader shared by the mesh file parsers (internal to
 * ce_meshio*.c): a cursor over the bytes that counts lines, tokens, numbers
 * and counts checked against the bytes that remain, errors that name the
 * format and the line, and growable arrays. ce_mesh_parse (ce_meshio.c)
 * picks the format and welds; each format has its own file. */
#ifndef CE_MESHIO_READER_H
#define CE_MESHIO_READER_H

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_internal.h"
#include "ce_limits.h"

/* Longest token read (longer ones are cut and then fail to parse). */
#define TOKMAX 96

typedef struct rd {
  const char *s;
  size_t n, pos;
  int64_t line; /* 1-based line of pos */
  const char *fmt;
  ce_error *err;
} rd;

static inline void rd_init(rd *r, const void *b, size_t n, const char *fmt, ce_error *err) {
  r->s = (const char *)b;
  r->n = n;
  r->pos = 0;
  r->line = 1;
  r->fmt = fmt;
  r->err = err;
}

static inline int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

/* Skip whitespace (newlines too). */
static inline void rd_skip_ws(rd *r) {
  while (r->pos < r->n && is_space(r->s[r->pos])) {
    if (r->s[r->pos] == '\n') r->line++;
    r->pos++;
  }
}
/* Skip blanks on the current line only. */
static inline void rd_skip_blank(rd *r) {
  while (r->pos < r->n && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' || r->s[r->pos] == '\r')) r->pos++;
}
static inline int rd_eol(rd *r) {
  rd_skip_blank(r);
  return r->pos >= r->n || r->s[r->pos] == '\n';
}
static inline void rd_next_line(rd *r) {
  while (r->pos < r->n && r->s[r->pos] != '\n') r->pos++;
  if (r->pos < r->n) {
    r->pos++;
    r->line++;
  }
}
static inline size_t rd_left(const rd *r) { return r->n - r->pos; }

/* Next whitespace-separated token into buf (NUL terminated); 0 at end of
 * input. Tokens longer than TOKMAX - 1 are cut (the parse then fails). */
static inline int rd_token(rd *r, char *buf) {
  rd_skip_ws(r);
  size_t k = 0;
  while (r->pos < r->n && !is_space(r->s[r->pos])) {
    if (k < TOKMAX - 1) buf[k++] = r->s[r->pos];
    r->pos++;
  }
  buf[k] = 0;
  return k > 0;
}
/* Same, on the current line only. */
static inline int rd_token_line(rd *r, char *buf) {
  rd_skip_blank(r);
  if (r->pos >= r->n || r->s[r->pos] == '\n') {
    buf[0] = 0;
    return 0;
  }
  return rd_token(r, buf);
}

static inline ce_errno rd_fail(rd *r, ce_errno code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline ce_errno rd_fail(rd *r, ce_errno code, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ce_fail(r->err, code, "%s line %lld: %s", r->fmt, (long long)r->line, msg);
}

static inline ce_errno rd_double(rd *r, int line_only, const char *what, double *out) {
  char t[TOKMAX];
  int ok = line_only ? rd_token_line(r, t) : rd_token(r, t);
  if (!ok) return rd_fail(r, CE_EINVAL, "expected %s, found %s", what, r->pos >= r->n ? "end of file" : "end of line");
  char *end;
  double x = strtod(t, &end);
  if (*end) return rd_fail(r, CE_EINVAL, "expected %s (a number), found '%.40s'", what, t);
  if (!isfinite(x)) return rd_fail(r, CE_ENONFINITE, "%s is not finite ('%.40s')", what, t);
  *out = x;
  return CE_OK;
}

static inline ce_errno rd_long(rd *r, int line_only, const char *what, long long lo, long long hi, long long *out) {
  char t[TOKMAX];
  int ok = line_only ? rd_token_line(r, t) : rd_token(r, t);
  if (!ok) return rd_fail(r, CE_EINVAL, "expected %s, found %s", what, r->pos >= r->n ? "end of file" : "end of line");
  char *end;
  long long x = strtoll(t, &end, 10);
  if (*end || end == t) return rd_fail(r, CE_EINVAL, "expected %s (an integer), found '%.40s'", what, t);
  if (x < lo || x > hi)
    return rd_fail(r, lo == 0 && hi == CE_LIMIT_MESH_COUNT ? CE_ELIMIT : CE_ERANGE, "%s %lld is out of range [%lld, %lld]",
                   what, x, lo, hi);
  *out = x;
  return CE_OK;
}

static inline int tok_is(const char *t, const char *w) { return strcmp(t, w) == 0; }

/* A count read from the file: at most CE_LIMIT_MESH_COUNT and at most what the
 * remaining bytes can hold at `bytes_each` bytes per item. */
static inline ce_errno rd_count(rd *r, const char *what, double bytes_each, long long *out) {
  long long n = 0;
  ce_errno e = rd_long(r, 0, what, 0, CE_LIMIT_MESH_COUNT, &n);
  if (e) return e;
  if ((double)n * bytes_each > (double)rd_left(r) + 1)
    return rd_fail(r, CE_EINVAL, "%s %lld needs at least %.0f bytes but only %zu remain (truncated?)", what, n,
                   (double)n * bytes_each, rd_left(r));
  *out = n;
  return CE_OK;
}

static inline ce_errno rd_expect(rd *r, const char *w, const char *ctx) {
  char t[TOKMAX];
  if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected '%s' %s, found end of file", w, ctx);
  if (!tok_is(t, w)) return rd_fail(r, CE_EINVAL, "expected '%s' %s, found '%.40s'", w, ctx, t);
  return CE_OK;
}

/* ---- growable int/double arrays (heap; bounded by the input size) ----- */

typedef struct dyn {
  void *d;
  size_t len, cap, elem;
} dyn;

static inline int dyn_push(dyn *a, const void *x) {
  if (a->len == a->cap) {
    size_t nc = a->cap ? a->cap * 2 : 64;
    void *nd = realloc(a->d, nc * a->elem);
    if (!nd) return 0;
    a->d = nd;
    a->cap = nc;
  }
  memcpy((char *)a->d + a->len * a->elem, x, a->elem);
  a->len++;
  return 1;
}

/* The parsers, one per format, each filling m from the reader (binary STL
 * from the bytes) and leaving what it allocated in m on failure. */
ce_errno ce_mesh_parse_obj(rd *r, ce_mesh_data *m);
ce_errno ce_mesh_parse_stl_binary(const unsigned char *b, size_t n, ce_mesh_data *m, ce_error *err);
ce_errno ce_mesh_parse_stl_ascii(rd *r, ce_mesh_data *m);
ce_errno ce_mesh_parse_vtk(rd *r, ce_mesh_data *m);
ce_errno ce_mesh_parse_msh(rd *r, ce_mesh_data *m);

#endif /* CE_MESHIO_READER_H */
