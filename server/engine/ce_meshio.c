/* ce_meshio.c — mesh files from bytes in memory: VTK legacy
 * unstructured grids (ASCII and big-endian BINARY; 4.2 count-prefixed cell
 * lists or 5.1 OFFSETS/CONNECTIVITY), Gmsh MSH 2.2 and 4.1
 * (ASCII and binary; tets), Wavefront OBJ and STL (ASCII and binary) surfaces, with
 * vertex welding at a stated tolerance.
 *
 * Hostile input: every count read from the file is checked against the
 * bytes that remain before any array is sized by it (an ASCII number takes
 * at least 2 bytes with its separator; a binary one its exact width), and
 * against CE_MESHIO_MAX (2^28). Indices are range checked, coordinates must
 * be finite. Errors say "<format> line L: expected X, found 'tok'" or
 * "<format> byte offset B: ...". No file I/O, no globals. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_internal.h"
#include "ce_limits.h"

#define CE_MESHIO_MAX CE_LIMIT_MESH_COUNT
#define TOKMAX 96

typedef struct rd {
  const char *s;
  size_t n, pos;
  int64_t line; /* 1-based line of pos */
  const char *fmt;
  ce_error *err;
} rd;

static void rd_init(rd *r, const void *b, size_t n, const char *fmt, ce_error *err) {
  r->s = (const char *)b;
  r->n = n;
  r->pos = 0;
  r->line = 1;
  r->fmt = fmt;
  r->err = err;
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'; }

/* Skip whitespace (newlines too). */
static void rd_skip_ws(rd *r) {
  while (r->pos < r->n && is_space(r->s[r->pos])) {
    if (r->s[r->pos] == '\n') r->line++;
    r->pos++;
  }
}
/* Skip blanks on the current line only. */
static void rd_skip_blank(rd *r) {
  while (r->pos < r->n && (r->s[r->pos] == ' ' || r->s[r->pos] == '\t' || r->s[r->pos] == '\r')) r->pos++;
}
static int rd_eol(rd *r) {
  rd_skip_blank(r);
  return r->pos >= r->n || r->s[r->pos] == '\n';
}
static void rd_next_line(rd *r) {
  while (r->pos < r->n && r->s[r->pos] != '\n') r->pos++;
  if (r->pos < r->n) {
    r->pos++;
    r->line++;
  }
}
static size_t rd_left(const rd *r) { return r->n - r->pos; }

/* Next whitespace-separated token into buf (NUL terminated); 0 at end of
 * input. Tokens longer than TOKMAX - 1 are cut (the parse then fails). */
static int rd_token(rd *r, char *buf) {
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
static int rd_token_line(rd *r, char *buf) {
  rd_skip_blank(r);
  if (r->pos >= r->n || r->s[r->pos] == '\n') {
    buf[0] = 0;
    return 0;
  }
  return rd_token(r, buf);
}

static ce_errno rd_fail(rd *r, ce_errno code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static ce_errno rd_fail(rd *r, ce_errno code, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return ce_fail(r->err, code, "%s line %lld: %s", r->fmt, (long long)r->line, msg);
}

static ce_errno rd_double(rd *r, int line_only, const char *what, double *out) {
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

static ce_errno rd_long(rd *r, int line_only, const char *what, long long lo, long long hi, long long *out) {
  char t[TOKMAX];
  int ok = line_only ? rd_token_line(r, t) : rd_token(r, t);
  if (!ok) return rd_fail(r, CE_EINVAL, "expected %s, found %s", what, r->pos >= r->n ? "end of file" : "end of line");
  char *end;
  long long x = strtoll(t, &end, 10);
  if (*end || end == t) return rd_fail(r, CE_EINVAL, "expected %s (an integer), found '%.40s'", what, t);
  if (x < lo || x > hi)
    return rd_fail(r, lo == 0 && hi == CE_MESHIO_MAX ? CE_ELIMIT : CE_ERANGE, "%s %lld is out of range [%lld, %lld]",
                   what, x, lo, hi);
  *out = x;
  return CE_OK;
}

static int tok_is(const char *t, const char *w) { return strcmp(t, w) == 0; }

/* A count read from the file: at most CE_MESHIO_MAX and at most what the
 * remaining bytes can hold at `bytes_each` bytes per item. */
static ce_errno rd_count(rd *r, const char *what, double bytes_each, long long *out) {
  long long n = 0;
  ce_errno e = rd_long(r, 0, what, 0, CE_MESHIO_MAX, &n);
  if (e) return e;
  if ((double)n * bytes_each > (double)rd_left(r) + 1)
    return rd_fail(r, CE_EINVAL, "%s %lld needs at least %.0f bytes but only %zu remain (truncated?)", what, n,
                   (double)n * bytes_each, rd_left(r));
  *out = n;
  return CE_OK;
}

/* ---- growable int/double arrays (heap; bounded by the input size) ----- */

typedef struct dyn {
  void *d;
  size_t len, cap, elem;
} dyn;

static int dyn_push(dyn *a, const void *x) {
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

static void out_clear(ce_mesh_data *m) { memset(m, 0, sizeof *m); }

void ce_mesh_data_free(ce_mesh_data *m) {
  if (!m) return;
  free(m->vertices);
  free(m->tris);
  free(m->tets);
  out_clear(m);
}

/* ---- welding ------------------------------------------------------------ */

/* Vertices keyed by their cell of a grid of spacing tol (tol > 0) or by
 * their exact coordinates (tol = 0); sorted by (key, index). */
typedef struct wkey {
  double c[3];
  int32_t i;
} wkey;

static int wkey_cmp(const void *pa, const void *pb) {
  const wkey *a = pa, *b = pb;
  for (int k = 0; k < 3; k++) {
    if (a->c[k] < b->c[k]) return -1;
    if (a->c[k] > b->c[k]) return 1;
  }
  return (a->i > b->i) - (a->i < b->i);
}

/* First position in k[0..n) whose key is >= c (index ignored). */
static int32_t wkey_lower(const wkey *k, int32_t n, const double c[3]) {
  int32_t lo = 0, hi = n;
  wkey probe = {{c[0], c[1], c[2]}, INT32_MIN};
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (wkey_cmp(&k[mid], &probe) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Merge each vertex into the first (lowest index) vertex within tol (max
 * norm) that is itself kept; compact; remap triangles and drop the ones
 * that became degenerate. Deterministic; O(n log n): with tol > 0 only the
 * 27 grid cells around a kept vertex are searched, and all the vertices of
 * one cell lie within tol of each other, so every cell yields at most one
 * kept vertex of its own. */
static ce_errno weld(ce_mesh_data *m, double tol, ce_error *err) {
  int32_t nv = m->nv;
  if (nv == 0) return CE_OK;
  wkey *k = malloc((size_t)nv * sizeof *k);
  int32_t *rep = malloc((size_t)nv * sizeof *rep);
  if (!k || !rep) {
    free(k);
    free(rep);
    return ce_fail(err, CE_ENOMEM, "weld: out of memory for %d vertices", (int)nv);
  }
  const double *v = m->vertices;
  /* a tolerance below ~10 ulp of the coordinates means exact duplicates
   * (and keeps the cell numbers finite and exact) */
  double big = 0;
  for (int64_t q = 0; q < 3 * (int64_t)nv; q++) big = fmax(big, fabs(v[q]));
  if (tol > 0 && big / tol > 1e15) tol = 0;
  for (int32_t i = 0; i < nv; i++) {
    for (int c = 0; c < 3; c++) {
      double x = v[3 * (size_t)i + c];
      k[i].c[c] = tol > 0 ? floor(x / tol) : x;
    }
    k[i].i = i;
    rep[i] = -1;
  }
  qsort(k, (size_t)nv, sizeof *k, wkey_cmp);
  /* position of each vertex in the sorted order */
  int32_t *where = malloc((size_t)nv * sizeof *where);
  if (!where) {
    free(k);
    free(rep);
    return ce_fail(err, CE_ENOMEM, "weld: out of memory for %d vertices", (int)nv);
  }
  for (int32_t a = 0; a < nv; a++) where[k[a].i] = a;
  for (int32_t i = 0; i < nv; i++) {
    if (rep[i] >= 0) continue;
    rep[i] = i;
    const wkey *ki = &k[where[i]];
    if (!(tol > 0)) {
      for (int32_t b = where[i] + 1; b < nv && wkey_cmp(&(wkey){{ki->c[0], ki->c[1], ki->c[2]}, INT32_MAX}, &k[b]) > 0;
           b++)
        if (rep[k[b].i] < 0) rep[k[b].i] = i;
      continue;
    }
    for (int dx = -1; dx <= 1; dx++)
      for (int dy = -1; dy <= 1; dy++)
        for (int dz = -1; dz <= 1; dz++) {
          double c[3] = {ki->c[0] + dx, ki->c[1] + dy, ki->c[2] + dz};
          for (int32_t b = wkey_lower(k, nv, c); b < nv && k[b].c[0] == c[0] && k[b].c[1] == c[1] && k[b].c[2] == c[2];
               b++) {
            int32_t j = k[b].i;
            if (rep[j] >= 0 || j < i) continue;
            if (fabs(v[3 * (size_t)j] - v[3 * (size_t)i]) <= tol && fabs(v[3 * (size_t)j + 1] - v[3 * (size_t)i + 1]) <= tol &&
                fabs(v[3 * (size_t)j + 2] - v[3 * (size_t)i + 2]) <= tol)
              rep[j] = i;
          }
        }
  }
  free(where);
  /* representatives keep their order; new index = rank among them */
  int32_t *newi = (int32_t *)k; /* reuse: nv int32 fit in nv wkeys */
  int32_t cnt = 0;
  for (int32_t i = 0; i < nv; i++)
    if (rep[i] == i) {
      newi[i] = cnt;
      memmove(&m->vertices[3 * (size_t)cnt], &m->vertices[3 * (size_t)i], 3 * sizeof(double));
      cnt++;
    }
  for (int32_t i = 0; i < nv; i++)
    if (rep[i] != i) newi[i] = newi[rep[i]];
  int32_t nf = 0;
  for (int32_t f = 0; f < m->ntri; f++) {
    int32_t a = newi[m->tris[3 * (size_t)f]], b = newi[m->tris[3 * (size_t)f + 1]],
            c = newi[m->tris[3 * (size_t)f + 2]];
    if (a == b || b == c || a == c) {
      m->dropped_faces++;
      continue;
    }
    m->tris[3 * (size_t)nf] = a;
    m->tris[3 * (size_t)nf + 1] = b;
    m->tris[3 * (size_t)nf + 2] = c;
    nf++;
  }
  m->welded += nv - cnt;
  m->nv = cnt;
  m->ntri = nf;
  free(k);
  free(rep);
  return CE_OK;
}

/* ---- OBJ ---------------------------------------------------------------- */

static ce_errno obj_index(rd *r, const char *t, int64_t nv, int32_t *out) {
  char *end;
  long long x = strtoll(t, &end, 10);
  if (end == t || (*end && *end != '/'))
    return rd_fail(r, CE_EINVAL, "expected a vertex index (i, i/t, i//n or i/t/n), found '%.40s'", t);
  if (x < 0) x = nv + x + 1; /* relative: -1 = the last vertex so far */
  if (x < 1 || x > nv)
    return rd_fail(r, CE_ERANGE, "vertex index '%.40s' out of range [1, %lld] (vertices so far)", t, (long long)nv);
  *out = (int32_t)(x - 1);
  return CE_OK;
}

static ce_errno parse_obj(rd *r, ce_mesh_data *m) {
  dyn V = {0, 0, 0, sizeof(double)}, F = {0, 0, 0, sizeof(int32_t)}, P = {0, 0, 0, sizeof(int32_t)};
  ce_errno e = CE_OK;
  char t[TOKMAX];
  while (r->pos < r->n) {
    rd_skip_blank(r);
    if (!rd_token_line(r, t) || t[0] == '#') {
      rd_next_line(r);
      continue;
    }
    if (tok_is(t, "v")) {
      if (V.len / 3 >= CE_MESHIO_MAX) {
        e = rd_fail(r, CE_ELIMIT, "more than %d vertices", CE_MESHIO_MAX);
        goto done;
      }
      for (int k = 0; k < 3; k++) {
        double x;
        static const char *const nm[3] = {"vertex x", "vertex y", "vertex z"};
        if ((e = rd_double(r, 1, nm[k], &x))) goto done;
        if (!dyn_push(&V, &x)) goto nomem;
      }
    } else if (tok_is(t, "f")) {
      P.len = 0;
      while (rd_token_line(r, t)) {
        int32_t idx = 0;
        if ((e = obj_index(r, t, (int64_t)(V.len / 3), &idx))) goto done;
        if (!dyn_push(&P, &idx)) goto nomem;
      }
      if (P.len < 3) {
        e = rd_fail(r, CE_EINVAL, "expected a face with at least 3 vertices, found %zu", P.len);
        goto done;
      }
      const int32_t *p = P.d;
      for (size_t k = 1; k + 1 < P.len; k++) {
        if (F.len / 3 >= CE_MESHIO_MAX) {
          e = rd_fail(r, CE_ELIMIT, "more than %d triangles", CE_MESHIO_MAX);
          goto done;
        }
        if (!dyn_push(&F, &p[0]) || !dyn_push(&F, &p[k]) || !dyn_push(&F, &p[k + 1])) goto nomem;
      }
    }
    rd_next_line(r); /* vt, vn, o, g, s, usemtl, ... and trailing tokens ignored */
  }
  if (V.len == 0 || F.len == 0) {
    e = rd_fail(r, CE_EEMPTY, "expected vertices ('v') and faces ('f'), found %zu and %zu", V.len / 3, F.len / 3);
    goto done;
  }
  m->nv = (int32_t)(V.len / 3);
  m->ntri = (int32_t)(F.len / 3);
  m->vertices = V.d;
  m->tris = F.d;
  V.d = F.d = NULL;
  goto done;
nomem:
  e = ce_fail(r->err, CE_ENOMEM, "OBJ: out of memory");
done:
  free(V.d);
  free(F.d);
  free(P.d);
  return e;
}

/* ---- STL ---------------------------------------------------------------- */

static float rd_f32le(const unsigned char *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static ce_errno parse_stl_binary(const unsigned char *b, size_t n, ce_mesh_data *m, ce_error *err) {
  if (n < 84) return ce_fail(err, CE_EINVAL, "STL byte offset %zu: expected an 84-byte header, file has %zu bytes", n, n);
  uint32_t nf = (uint32_t)b[80] | (uint32_t)b[81] << 8 | (uint32_t)b[82] << 16 | (uint32_t)b[83] << 24;
  if (nf == 0) return ce_fail(err, CE_EEMPTY, "STL byte offset 80: triangle count is 0");
  if (nf > CE_MESHIO_MAX / 3)
    return ce_fail(err, CE_ELIMIT, "STL byte offset 80: %u triangles exceed the limit %d", nf, CE_MESHIO_MAX / 3);
  if ((uint64_t)nf * 50 > n - 84)
    return ce_fail(err, CE_EINVAL, "STL byte offset %zu: expected %u triangles of 50 bytes (%llu bytes), file ends (truncated)",
                   n, nf, (unsigned long long)nf * 50);
  m->vertices = malloc((size_t)nf * 9 * sizeof(double));
  m->tris = malloc((size_t)nf * 3 * sizeof(int32_t));
  if (!m->vertices || !m->tris) return ce_fail(err, CE_ENOMEM, "STL: out of memory for %u triangles", nf);
  for (uint32_t f = 0; f < nf; f++) {
    const unsigned char *p = b + 84 + (size_t)f * 50 + 12;
    for (int k = 0; k < 9; k++) {
      double x = rd_f32le(p + 4 * k);
      if (!isfinite(x))
        return ce_fail(err, CE_ENONFINITE, "STL byte offset %zu: triangle %u vertex %d coordinate is not finite",
                       (size_t)(p + 4 * k - b), f, k / 3);
      m->vertices[9 * (size_t)f + k] = x;
    }
    for (int k = 0; k < 3; k++) m->tris[3 * (size_t)f + k] = (int32_t)(3 * f + k);
  }
  m->nv = (int32_t)(3 * nf);
  m->ntri = (int32_t)nf;
  return CE_OK;
}

static ce_errno rd_expect(rd *r, const char *w, const char *ctx) {
  char t[TOKMAX];
  if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected '%s' %s, found end of file", w, ctx);
  if (!tok_is(t, w)) return rd_fail(r, CE_EINVAL, "expected '%s' %s, found '%.40s'", w, ctx, t);
  return CE_OK;
}

static ce_errno parse_stl_ascii(rd *r, ce_mesh_data *m) {
  dyn V = {0, 0, 0, sizeof(double)};
  ce_errno e;
  char t[TOKMAX];
  if ((e = rd_expect(r, "solid", "at the start"))) return e;
  rd_next_line(r);
  for (;;) {
    if (!rd_token(r, t)) {
      e = rd_fail(r, CE_EINVAL, "expected 'facet' or 'endsolid', found end of file");
      goto done;
    }
    if (tok_is(t, "endsolid")) break;
    if (!tok_is(t, "facet")) {
      e = rd_fail(r, CE_EINVAL, "expected 'facet' or 'endsolid', found '%.40s'", t);
      goto done;
    }
    rd_next_line(r); /* normal ignored: the winding defines it */
    if ((e = rd_expect(r, "outer", "(outer loop)")) || (e = rd_expect(r, "loop", "(outer loop)"))) goto done;
    for (int k = 0; k < 3; k++) {
      if ((e = rd_expect(r, "vertex", "(3 per facet)"))) goto done;
      if (V.len / 3 >= CE_MESHIO_MAX) {
        e = rd_fail(r, CE_ELIMIT, "more than %d vertices", CE_MESHIO_MAX);
        goto done;
      }
      for (int c = 0; c < 3; c++) {
        double x;
        if ((e = rd_double(r, 1, "a vertex coordinate", &x))) goto done;
        if (!dyn_push(&V, &x)) {
          e = ce_fail(r->err, CE_ENOMEM, "STL: out of memory");
          goto done;
        }
      }
    }
    if ((e = rd_expect(r, "endloop", "after 3 vertices")) || (e = rd_expect(r, "endfacet", "after endloop"))) goto done;
  }
  if (V.len == 0) {
    e = rd_fail(r, CE_EEMPTY, "expected at least one facet");
    goto done;
  }
  size_t nf = V.len / 9;
  m->tris = malloc(nf * 3 * sizeof(int32_t));
  if (!m->tris) {
    e = ce_fail(r->err, CE_ENOMEM, "STL: out of memory");
    goto done;
  }
  for (size_t i = 0; i < nf * 3; i++) m->tris[i] = (int32_t)i;
  m->nv = (int32_t)(nf * 3);
  m->ntri = (int32_t)nf;
  m->vertices = V.d;
  V.d = NULL;
done:
  free(V.d);
  return e;
}

/* ---- VTK legacy --------------------------------------------------------- */

static uint32_t be32(const unsigned char *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static double be_f32(const unsigned char *p) {
  uint32_t u = be32(p);
  float f;
  memcpy(&f, &u, 4);
  return f;
}
static double be_f64(const unsigned char *p) {
  uint64_t u = (uint64_t)be32(p) << 32 | be32(p + 4);
  double d;
  memcpy(&d, &u, 8);
  return d;
}

/* Binary blocks start after the newline that ends the keyword line. */
static ce_errno vtk_binary_start(rd *r, size_t need, const char *what) {
  rd_next_line(r);
  if (rd_left(r) < need)
    return ce_fail(r->err, CE_EINVAL, "VTK byte offset %zu: expected %zu bytes of %s, only %zu remain (truncated)",
                   r->pos, need, what, rd_left(r));
  return CE_OK;
}

/* VTK 5.1 "<KEY> vtktypeint64|vtktypeint32" then n integers in [0, 2^28]
 * (ASCII, or big-endian binary of the stated width). */
static ce_errno vtk_int_array(rd *r, int binary, const char *key, long long n, int32_t **out) {
  char t[TOKMAX];
  ce_errno e;
  *out = NULL;
  if ((e = rd_expect(r, key, "(VTK 5.1 cell arrays)"))) return e;
  if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected the %s type, found end of file", key);
  int w;
  if (tok_is(t, "vtktypeint64")) w = 8;
  else if (tok_is(t, "vtktypeint32")) w = 4;
  else return rd_fail(r, CE_EINVAL, "expected %s type vtktypeint64 or vtktypeint32, found '%.40s'", key, t);
  if ((double)n * (binary ? w : 2) > (double)rd_left(r) + 1)
    return rd_fail(r, CE_EINVAL, "%lld %s entries need at least %.0f bytes but only %zu remain (truncated?)", n, key,
                   (double)n * (binary ? w : 2), rd_left(r));
  int32_t *a = malloc((size_t)(n > 0 ? n : 1) * sizeof *a);
  if (!a) return ce_fail(r->err, CE_ENOMEM, "VTK: out of memory for %lld %s entries", n, key);
  if (binary) {
    if ((e = vtk_binary_start(r, (size_t)n * (size_t)w, key))) {
      free(a);
      return e;
    }
    for (long long i = 0; i < n; i++) {
      const unsigned char *p = (const unsigned char *)r->s + r->pos;
      uint64_t u = w == 8 ? (uint64_t)be32(p) << 32 | be32(p + 4) : be32(p);
      if (u > (uint64_t)CE_MESHIO_MAX) {
        free(a);
        return ce_fail(r->err, CE_ERANGE, "VTK byte offset %zu: %s entry %llu out of range", r->pos, key,
                       (unsigned long long)u);
      }
      a[i] = (int32_t)u;
      r->pos += (size_t)w;
    }
  } else {
    for (long long i = 0; i < n; i++) {
      long long x = 0;
      if ((e = rd_long(r, 0, key, 0, CE_MESHIO_MAX, &x))) {
        free(a);
        return e;
      }
      a[i] = (int32_t)x;
    }
  }
  *out = a;
  return CE_OK;
}

static ce_errno parse_vtk(rd *r, ce_mesh_data *m) {
  ce_errno e;
  char t[TOKMAX];
  int32_t *cells = NULL, *types = NULL;
  long long np = 0, nc = 0, size = 0;
  int binary;
  if (!(r->n >= 5 && memcmp(r->s, "# vtk", 5) == 0)) return rd_fail(r, CE_EINVAL, "expected '# vtk DataFile Version ...'");
  rd_next_line(r);
  rd_next_line(r); /* title */
  if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected ASCII or BINARY, found end of file");
  if (tok_is(t, "ASCII"))
    binary = 0;
  else if (tok_is(t, "BINARY"))
    binary = 1;
  else
    return rd_fail(r, CE_EINVAL, "expected ASCII or BINARY, found '%.40s'", t);
  if ((e = rd_expect(r, "DATASET", "after the file type"))) return e;
  if (!rd_token(r, t) || !tok_is(t, "UNSTRUCTURED_GRID"))
    return rd_fail(r, CE_EINVAL, "expected 'UNSTRUCTURED_GRID' (only unstructured grids hold tets), found '%.40s'", t);
  /* POINTS n type */
  for (;;) {
    if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected 'POINTS', found end of file");
    if (tok_is(t, "POINTS")) break;
    if (tok_is(t, "FIELD") || tok_is(t, "METADATA"))
      return rd_fail(r, CE_EINVAL, "expected 'POINTS', found '%.40s' (not supported before POINTS)", t);
    return rd_fail(r, CE_EINVAL, "expected 'POINTS', found '%.40s'", t);
  }
  if ((e = rd_count(r, "point count", binary ? 12 : 6, &np))) return e;
  if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected the point data type, found end of file");
  int w;
  if (tok_is(t, "float"))
    w = 4;
  else if (tok_is(t, "double"))
    w = 8;
  else
    return rd_fail(r, CE_EINVAL, "expected point type 'float' or 'double', found '%.40s'", t);
  m->vertices = malloc((size_t)(np > 0 ? np : 1) * 3 * sizeof(double));
  if (!m->vertices) return ce_fail(r->err, CE_ENOMEM, "VTK: out of memory for %lld points", np);
  if (binary) {
    if ((e = vtk_binary_start(r, (size_t)np * 3 * w, "point coordinates"))) return e;
    for (long long i = 0; i < 3 * np; i++) {
      const unsigned char *p = (const unsigned char *)r->s + r->pos;
      double x = w == 4 ? be_f32(p) : be_f64(p);
      if (!isfinite(x))
        return ce_fail(r->err, CE_ENONFINITE, "VTK byte offset %zu: point %lld coordinate %lld is not finite", r->pos,
                       i / 3, i % 3);
      m->vertices[i] = x;
      r->pos += (size_t)w;
    }
  } else {
    for (long long i = 0; i < 3 * np; i++)
      if ((e = rd_double(r, 0, "a point coordinate", &m->vertices[i]))) return e;
  }
  m->nv = (int32_t)np;
  /* CELLS n size */
  if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected 'CELLS', found end of file");
  if (!tok_is(t, "CELLS")) return rd_fail(r, CE_EINVAL, "expected 'CELLS', found '%.40s'", t);
  if ((e = rd_count(r, "cell count", binary ? 8 : 4, &nc))) return e;
  if ((e = rd_count(r, "cell list size", binary ? 4 : 2, &size))) return e;
  {
    rd peek = *r;
    rd_skip_ws(&peek);
    if (rd_left(&peek) >= 7 && memcmp(peek.s + peek.pos, "OFFSETS", 7) == 0) {
      /* VTK 5.1: CELLS <noffsets> <nconnectivity>, OFFSETS, CONNECTIVITY;
       * rewritten here into the legacy count-prefixed lists */
      long long nof = nc, ncon = size;
      if (nof < 1) return rd_fail(r, CE_EINVAL, "expected at least 1 offset, found %lld", nof);
      int32_t *of = NULL, *con = NULL;
      if ((e = vtk_int_array(r, binary, "OFFSETS", nof, &of))) return e;
      if ((e = vtk_int_array(r, binary, "CONNECTIVITY", ncon, &con))) {
        free(of);
        return e;
      }
      if (of[0] != 0 || of[nof - 1] != ncon) {
        e = rd_fail(r, CE_EINVAL, "expected offsets from 0 to %lld, found %d to %d", ncon, (int)of[0], (int)of[nof - 1]);
        free(of);
        free(con);
        return e;
      }
      for (long long c = 0; c + 1 < nof; c++)
        if (of[c + 1] < of[c]) {
          e = rd_fail(r, CE_EINVAL, "offset %lld (%d) is smaller than offset %lld (%d)", c + 1, (int)of[c + 1], c,
                      (int)of[c]);
          free(of);
          free(con);
          return e;
        }
      nc = nof - 1;
      size = ncon + nc;
      cells = malloc((size_t)(size > 0 ? size : 1) * sizeof *cells);
      if (!cells) {
        free(of);
        free(con);
        return ce_fail(r->err, CE_ENOMEM, "VTK: out of memory for %lld cell entries", size);
      }
      long long at = 0;
      for (long long c = 0; c < nc; c++) {
        cells[at++] = of[c + 1] - of[c];
        for (int32_t k = of[c]; k < of[c + 1]; k++) cells[at++] = con[k];
      }
      free(of);
      free(con);
      goto cell_types;
    }
  }
  if (size < nc) return rd_fail(r, CE_EINVAL, "cell list size %lld is smaller than the cell count %lld", size, nc);
  cells = malloc((size_t)(size > 0 ? size : 1) * sizeof *cells);
  if (!cells) return ce_fail(r->err, CE_ENOMEM, "VTK: out of memory for %lld cell entries", size);
  if (binary) {
    if ((e = vtk_binary_start(r, (size_t)size * 4, "cell lists"))) goto done;
    for (long long i = 0; i < size; i++) {
      uint32_t u = be32((const unsigned char *)r->s + r->pos);
      if (u > (uint32_t)CE_MESHIO_MAX) {
        e = ce_fail(r->err, CE_ERANGE, "VTK byte offset %zu: cell list entry %u out of range", r->pos, u);
        goto done;
      }
      cells[i] = (int32_t)u;
      r->pos += 4;
    }
  } else {
    for (long long i = 0; i < size; i++) {
      long long x = 0;
      if ((e = rd_long(r, 0, "a cell list entry", 0, CE_MESHIO_MAX, &x))) goto done;
      cells[i] = (int32_t)x;
    }
  }
cell_types:
  if (!rd_token(r, t)) {
    e = rd_fail(r, CE_EINVAL, "expected 'CELL_TYPES', found end of file");
    goto done;
  }
  if (!tok_is(t, "CELL_TYPES")) {
    e = rd_fail(r, CE_EINVAL, "expected 'CELL_TYPES', found '%.40s'", t);
    goto done;
  }
  long long nct;
  if ((e = rd_long(r, 0, "cell type count", 0, CE_MESHIO_MAX, &nct))) goto done;
  if (nct != nc) {
    e = rd_fail(r, CE_EINVAL, "expected %lld cell types (one per cell), found %lld", nc, nct);
    goto done;
  }
  types = malloc((size_t)(nc > 0 ? nc : 1) * sizeof *types);
  if (!types) {
    e = ce_fail(r->err, CE_ENOMEM, "VTK: out of memory");
    goto done;
  }
  if (binary) {
    if ((e = vtk_binary_start(r, (size_t)nc * 4, "cell types"))) goto done;
    for (long long i = 0; i < nc; i++) {
      types[i] = (int32_t)be32((const unsigned char *)r->s + r->pos);
      r->pos += 4;
    }
  } else {
    for (long long i = 0; i < nc; i++) {
      long long x = 0;
      if ((e = rd_long(r, 0, "a cell type", 0, 1000, &x))) goto done;
      types[i] = (int32_t)x;
    }
  }
  /* walk the cell lists */
  long long ntet = 0, at = 0;
  for (long long c = 0; c < nc; c++) {
    if (at >= size) {
      e = ce_fail(r->err, CE_EINVAL, "VTK: cell %lld starts past the cell list size %lld", c, size);
      goto done;
    }
    long long k = cells[at];
    if (at + 1 + k > size) {
      e = ce_fail(r->err, CE_EINVAL, "VTK: cell %lld has %lld points, past the cell list size %lld", c, k, size);
      goto done;
    }
    if (types[c] == 10) {
      if (k != 4) {
        e = ce_fail(r->err, CE_EINVAL, "VTK: cell %lld is a tetra (type 10) with %lld points, expected 4", c, k);
        goto done;
      }
      ntet++;
    } else {
      m->skipped_cells++;
    }
    at += 1 + k;
  }
  if (ntet == 0) {
    e = ce_fail(r->err, CE_EEMPTY, "VTK: no tetrahedra (cell type 10) among %lld cells", nc);
    goto done;
  }
  m->tets = malloc((size_t)ntet * 4 * sizeof(int32_t));
  if (!m->tets) {
    e = ce_fail(r->err, CE_ENOMEM, "VTK: out of memory for %lld tets", ntet);
    goto done;
  }
  at = 0;
  long long tcount = 0;
  for (long long c = 0; c < nc; c++) {
    long long k = cells[at];
    if (types[c] == 10)
      for (int j = 0; j < 4; j++) {
        int32_t ix = cells[at + 1 + j];
        if (ix < 0 || ix >= np) {
          e = ce_fail(r->err, CE_ERANGE, "VTK: cell %lld point %d index %d out of range [0, %lld)", c, j, (int)ix, np);
          goto done;
        }
        m->tets[4 * tcount + j] = ix;
      }
    if (types[c] == 10) tcount++;
    at += 1 + k;
  }
  m->ntet = (int32_t)ntet;
done:
  free(cells);
  free(types);
  return e;
}

/* ---- Gmsh MSH ------------------------------------------------------------ */

typedef struct idmap {
  int64_t id;
  int32_t index;
} idmap;

static int idmap_cmp(const void *pa, const void *pb) {
  const idmap *a = pa, *b = pb;
  return (a->id > b->id) - (a->id < b->id);
}
static int32_t idmap_find(const idmap *m, int32_t n, int64_t id) {
  int32_t lo = 0, hi = n - 1;
  while (lo <= hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (m[mid].id == id) return m[mid].index;
    if (m[mid].id < id) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

/* How an MSH file stores its numbers: ASCII tokens (file type 0), or
 * binary (file type 1): ints of 4 bytes, size_t of `dsize` bytes (4 or 8)
 * and doubles of 8, in the writer's byte order, which the int 1 written
 * after the format line tells (swap: the reverse of ours). Binary errors
 * name the byte offset. */
typedef struct msh_io {
  int bin, swap, dsize;
} msh_io;

static ce_errno msh_fail(rd *r, const msh_io *f, ce_errno code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static ce_errno msh_fail(rd *r, const msh_io *f, ce_errno code, const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (f->bin) return ce_fail(r->err, code, "MSH byte offset %zu: %s", r->pos, msg);
  return ce_fail(r->err, code, "MSH line %lld: %s", (long long)r->line, msg);
}

/* The next `w` binary bytes as an unsigned integer in the file's order. */
static int msh_raw(rd *r, const msh_io *f, int w, uint64_t *out) {
  if (rd_left(r) < (size_t)w) return 0;
  const unsigned char *p = (const unsigned char *)r->s + r->pos;
  uint64_t v = 0;
  int little = 1;
  little = *(const unsigned char *)&little; /* our own order */
  if (f->swap) little = !little;
  for (int i = 0; i < w; i++) v |= (uint64_t)p[little ? i : w - 1 - i] << (8 * i);
  r->pos += (size_t)w;
  *out = v;
  return 1;
}

/* An integer in [lo, hi]: a token on the current line (line_only) or
 * anywhere, or a binary int (w = 4) or size_t (w = 0: dsize). */
static ce_errno msh_long(rd *r, const msh_io *f, int line_only, int w, const char *what, long long lo, long long hi,
                         long long *out) {
  if (!f->bin) return rd_long(r, line_only, what, lo, hi, out);
  uint64_t u;
  int width = w ? w : f->dsize;
  if (!msh_raw(r, f, width, &u)) return msh_fail(r, f, CE_EINVAL, "expected %s, found end of file (truncated)", what);
  long long x;
  if (width == 4) x = (int32_t)(uint32_t)u; /* ints are signed, size_t values fit */
  else if (u > (uint64_t)INT64_MAX) return msh_fail(r, f, CE_ERANGE, "%s %llu is out of range", what, (unsigned long long)u);
  else x = (long long)u;
  if (x < lo || x > hi)
    return msh_fail(r, f, lo == 0 && hi == CE_MESHIO_MAX ? CE_ELIMIT : CE_ERANGE, "%s %lld is out of range [%lld, %lld]",
                    what, x, lo, hi);
  *out = x;
  return CE_OK;
}

/* A v4 node or element block's header: its entity dimension and tag, then
 * `third` in [lo3, hi3] (the parametric flag, the element type) into *v3
 * and its count in [0, most] into *count. whose ("a node block's", "an
 * element block's") and the field names make the messages. */
static ce_errno msh_block_head(rd *r, const msh_io *f, const char *whose, const char *third, long long lo3,
                               long long hi3, long long *v3, const char *count_name, long long most,
                               long long *count) {
  char what[4][64];
  snprintf(what[0], sizeof what[0], "%s entity dimension", whose);
  snprintf(what[1], sizeof what[1], "%s entity tag", whose);
  snprintf(what[2], sizeof what[2], "%s %s", whose, third);
  snprintf(what[3], sizeof what[3], "%s %s", whose, count_name);
  long long dim, tag;
  ce_errno e;
  if ((e = msh_long(r, f, 0, 4, what[0], 0, 3, &dim)) ||
      (e = msh_long(r, f, 0, 4, what[1], INT32_MIN, INT32_MAX, &tag)) ||
      (e = msh_long(r, f, 0, 4, what[2], lo3, hi3, v3)) || (e = msh_long(r, f, 0, 0, what[3], 0, most, count)))
    return e;
  return CE_OK;
}

static ce_errno msh_double(rd *r, const msh_io *f, const char *what, double *out) {
  if (!f->bin) return rd_double(r, 0, what, out);
  uint64_t u;
  if (!msh_raw(r, f, 8, &u)) return msh_fail(r, f, CE_EINVAL, "expected %s, found end of file (truncated)", what);
  double x;
  memcpy(&x, &u, sizeof x);
  if (!isfinite(x)) return msh_fail(r, f, CE_ENONFINITE, "%s is not finite", what);
  *out = x;
  return CE_OK;
}

/* A count, checked like rd_count: each item takes at least `ascii_bytes`
 * (ASCII) or `bin_bytes` (binary) of what remains. */
static ce_errno msh_count(rd *r, const msh_io *f, int w, const char *what, double ascii_bytes, double bin_bytes,
                          long long *out) {
  if (!f->bin) return rd_count(r, what, ascii_bytes, out);
  long long n = 0;
  ce_errno e = msh_long(r, f, 0, w, what, 0, CE_MESHIO_MAX, &n);
  if (e) return e;
  if ((double)n * bin_bytes > (double)rd_left(r))
    return msh_fail(r, f, CE_EINVAL, "%s %lld needs at least %.0f bytes but only %zu remain (truncated?)", what, n,
                    (double)n * bin_bytes, rd_left(r));
  *out = n;
  return CE_OK;
}

/* Nodes of each Gmsh element type (1..31): a binary file gives no line
 * ends, so an element of a type that is skipped is stepped over by its
 * node count. 0 = not a fixed-size type. */
static const int8_t msh_type_nodes[32] = {0,  2,  3, 4, 4,  8,  6,  5,  3,  6,  9,  10, 27, 18, 14, 1,
                                          8,  20, 15, 13, 9, 10, 12, 15, 15, 21, 4,  5,  6,  20, 35, 56};

/* Skips to the line after `name` ("$Nodes"), stepping over other sections
 * by their "$End..." line (found by search, since a binary section's bytes
 * are not tokens). */
static ce_errno msh_seek_section(rd *r, const char *name) {
  char t[TOKMAX];
  for (;;) {
    if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected section '%s', found end of file", name);
    if (tok_is(t, name)) {
      rd_next_line(r);
      return CE_OK;
    }
    if (t[0] == '$' && strncmp(t, "$End", 4) != 0) {
      /* skip another section */
      char end[TOKMAX + 8];
      snprintf(end, sizeof end, "\n$End%s", t + 1);
      size_t k = strlen(end);
      const char *hit = NULL;
      for (size_t i = r->pos; i + k <= r->n && !hit; i++)
        if (r->s[i] == '\n' && memcmp(r->s + i, end, k) == 0) hit = r->s + i;
      if (!hit) return rd_fail(r, CE_EINVAL, "expected '%s', found end of file", end + 1);
      for (const char *c = r->s + r->pos; c < hit; c++) r->line += *c == '\n';
      r->pos = (size_t)(hit - r->s) + k;
    }
  }
}

/* The 4 node tags of tet element `id` (read as msh_long reads them, w = 4
 * or 0), mapped to vertex indices and appended to T. */
static ce_errno msh_tet(rd *r, const msh_io *f, int line_only, int w, long long id, const idmap *ids, long long nn,
                        dyn *T) {
  for (int j = 0; j < 4; j++) {
    long long nid;
    ce_errno e = msh_long(r, f, line_only, w, "a tet node tag", 0, w == 4 ? INT32_MAX : INT64_MAX, &nid);
    if (e) return e;
    int32_t ix = idmap_find(ids, (int32_t)nn, nid);
    if (ix < 0) return msh_fail(r, f, CE_ERANGE, "element %lld refers to node %lld, which is not defined", id, nid);
    if (T->len / 4 >= CE_MESHIO_MAX) return msh_fail(r, f, CE_ELIMIT, "more than %d tets", CE_MESHIO_MAX);
    if (!dyn_push(T, &ix)) return ce_fail(r->err, CE_ENOMEM, "MSH: out of memory");
  }
  return CE_OK;
}

/* After a binary block: the newline that ends it. */
static void msh_end_binary(rd *r, const msh_io *f) {
  if (f->bin) rd_skip_ws(r);
}

static ce_errno parse_msh(rd *r, ce_mesh_data *m) {
  ce_errno e;
  idmap *ids = NULL;
  dyn T = {0, 0, 0, sizeof(int32_t)};
  msh_io f = {0, 0, 8};
  if ((e = rd_expect(r, "$MeshFormat", "at the start"))) return e;
  double ver;
  if ((e = rd_double(r, 0, "the format version", &ver))) return e;
  long long ftype, dsize;
  if ((e = rd_long(r, 0, "the file type", 0, 1, &ftype))) return e;
  if ((e = rd_long(r, 0, "the data size", 0, 64, &dsize))) return e;
  int v4;
  if (ver >= 2.0 && ver < 3.0) v4 = 0;
  else if (ver >= 4.0 && ver < 5.0) v4 = 1;
  else return rd_fail(r, CE_EINVAL, "expected format version 2.2 or 4.1, found %g", ver);
  if (ftype == 1) {
    if (dsize != 4 && dsize != 8)
      return rd_fail(r, CE_EINVAL, "expected data size 4 or 8 (bytes of size_t) in a binary file, found %lld", dsize);
    rd_next_line(r);
    f.dsize = (int)dsize;
    f.bin = 1;
    uint64_t one;
    if (!msh_raw(r, &f, 4, &one)) return msh_fail(r, &f, CE_EINVAL, "expected the binary int 1, found end of file");
    if (one != 1) {
      f.swap = 1;
      if (one != UINT64_C(0x01000000))
        return msh_fail(r, &f, CE_EINVAL, "expected the binary int 1 (byte order), found 0x%08llx",
                        (unsigned long long)one);
    }
    f.bin = 0; /* the section keywords are text */
  }
  if ((e = rd_expect(r, "$EndMeshFormat", "after the format line"))) return e;
  if ((e = msh_seek_section(r, "$Nodes"))) return e;
  const int bin = ftype == 1;
  /* the binary bytes of a node: 4.1 a tag and 3 doubles, 2.2 an int and 3 */
  const double node_bin = v4 ? 24.0 + (double)f.dsize : 28.0;
  long long nn, nblocks = 1;
  f.bin = bin && v4; /* 2.2 binary gives its counts as text */
  if (v4) {
    if ((e = msh_count(r, &f, 0, "entity block count", 8, 16.0, &nblocks))) return e;
    if ((e = msh_count(r, &f, 0, "node count", 8, node_bin, &nn))) return e;
    long long dummy;
    if ((e = msh_long(r, &f, 0, 0, "the min node tag", 0, INT64_MAX, &dummy)) ||
        (e = msh_long(r, &f, 0, 0, "the max node tag", 0, INT64_MAX, &dummy)))
      return e;
  } else if ((e = msh_count(r, &f, 0, "node count", 8, node_bin, &nn)))
    return e;
  if (bin && !v4) rd_next_line(r);
  f.bin = bin;
  m->vertices = malloc((size_t)(nn > 0 ? nn : 1) * 3 * sizeof(double));
  ids = malloc((size_t)(nn > 0 ? nn : 1) * sizeof *ids);
  if (!m->vertices || !ids) {
    e = ce_fail(r->err, CE_ENOMEM, "MSH: out of memory for %lld nodes", nn);
    goto done;
  }
  long long got = 0;
  for (long long b = 0; b < nblocks; b++) {
    long long inb = nn, param = 0;
    if (v4) {
      if ((e = msh_block_head(r, &f, "a node block's", "parametric flag", 0, 1, &param, "node count", nn - got, &inb)))
        goto done;
      if (param) {
        e = msh_fail(r, &f, CE_EINVAL, "expected non-parametric nodes (parametric 0), found 1");
        goto done;
      }
      for (long long i = 0; i < inb; i++) {
        long long id;
        if ((e = msh_long(r, &f, 0, 0, "a node tag", 1, INT64_MAX, &id))) goto done;
        ids[got + i].id = id;
        ids[got + i].index = (int32_t)(got + i);
      }
    }
    for (long long i = 0; i < inb; i++) {
      long long k = got + i;
      if (!v4) {
        long long id;
        if ((e = msh_long(r, &f, 0, 4, "a node number", 1, INT64_MAX, &id))) goto done;
        ids[k].id = id;
        ids[k].index = (int32_t)k;
      }
      for (int c = 0; c < 3; c++)
        if ((e = msh_double(r, &f, "a node coordinate", &m->vertices[3 * k + c]))) goto done;
    }
    got += inb;
  }
  msh_end_binary(r, &f);
  f.bin = 0;
  if (got != nn) {
    e = rd_fail(r, CE_EINVAL, "expected %lld nodes in the blocks, found %lld", nn, got);
    goto done;
  }
  if ((e = rd_expect(r, "$EndNodes", "after the nodes"))) goto done;
  m->nv = (int32_t)nn;
  qsort(ids, (size_t)nn, sizeof *ids, idmap_cmp);
  for (long long i = 1; i < nn; i++)
    if (ids[i].id == ids[i - 1].id) {
      e = ce_fail(r->err, CE_EINVAL, "MSH: node tag %lld appears twice", (long long)ids[i].id);
      goto done;
    }
  if ((e = msh_seek_section(r, "$Elements"))) goto done;
  long long ne;
  nblocks = 1;
  /* the fewest binary bytes of an element: a tag and one node */
  const double elem_bin = v4 ? 2.0 * f.dsize : 8.0;
  f.bin = bin && v4;
  if (v4) {
    long long dummy;
    if ((e = msh_count(r, &f, 0, "entity block count", 8, 16.0, &nblocks)) ||
        (e = msh_count(r, &f, 0, "element count", 4, elem_bin, &ne)) ||
        (e = msh_long(r, &f, 0, 0, "the min element tag", 0, INT64_MAX, &dummy)) ||
        (e = msh_long(r, &f, 0, 0, "the max element tag", 0, INT64_MAX, &dummy)))
      goto done;
  } else if ((e = msh_count(r, &f, 0, "element count", 6, elem_bin, &ne)))
    goto done;
  f.bin = bin;
  if (!v4 && bin) {
    /* 2.2 binary: header (type, count, tag count) then that many
     * elements of ints: number, tags, nodes */
    rd_next_line(r);
    long long seen = 0;
    while (seen < ne) {
      long long type, cnt, ntags;
      if ((e = msh_long(r, &f, 0, 4, "an element header's type", 1, 31, &type)) ||
          (e = msh_long(r, &f, 0, 4, "an element header's element count", 1, ne - seen, &cnt)) ||
          (e = msh_long(r, &f, 0, 4, "an element header's tag count", 0, 64, &ntags)))
        goto done;
      const int nodes = msh_type_nodes[type];
      if (!nodes) {
        e = msh_fail(r, &f, CE_EINVAL, "element type %lld has no fixed node count", type);
        goto done;
      }
      const size_t per = (size_t)(1 + ntags + nodes) * 4;
      if ((double)cnt * (double)per > (double)rd_left(r)) {
        e = msh_fail(r, &f, CE_EINVAL, "%lld elements of %zu bytes need more than the %zu bytes that remain (truncated?)",
                     cnt, per, rd_left(r));
        goto done;
      }
      for (long long i = 0; i < cnt; i++) {
        long long id, x;
        if ((e = msh_long(r, &f, 0, 4, "an element number", 0, INT32_MAX, &id))) goto done;
        if (type != 4) {
          r->pos += per - 4;
          m->skipped_cells++;
          continue;
        }
        for (long long k = 0; k < ntags; k++)
          if ((e = msh_long(r, &f, 0, 4, "an element tag value", INT32_MIN, INT32_MAX, &x))) goto done;
        if ((e = msh_tet(r, &f, 0, 4, id, ids, nn, &T))) goto done;
      }
      seen += cnt;
    }
  } else {
    long long seen = 0;
    for (long long b = 0; b < nblocks; b++) {
      long long inb = ne, btype = -1;
      if (v4) {
        if ((e = msh_block_head(r, &f, "an element block's", "element type", 1, 1000, &btype, "element count",
                                ne - seen, &inb)))
          goto done;
      }
      if (bin) {
        const int nodes = btype < 32 ? msh_type_nodes[btype] : 0;
        if (!nodes) {
          e = msh_fail(r, &f, CE_EINVAL, "element type %lld has no fixed node count", btype);
          goto done;
        }
        if (btype != 4) { /* step over the block */
          const double bytes = (double)inb * (1.0 + nodes) * f.dsize;
          if (bytes > (double)rd_left(r)) {
            e = msh_fail(r, &f, CE_EINVAL, "a block of %lld elements of type %lld needs %.0f bytes, only %zu remain",
                         inb, btype, bytes, rd_left(r));
            goto done;
          }
          r->pos += (size_t)bytes;
          m->skipped_cells += inb;
          seen += inb;
          continue;
        }
      } else {
        rd_next_line(r);
      }
      for (long long i = 0; i < inb; i++) {
        long long id, type = btype;
        if ((e = msh_long(r, &f, 0, 0, "an element tag", 0, INT64_MAX, &id))) goto done;
        if (!v4) {
          long long ntags, tag;
          if ((e = rd_long(r, 1, "an element type", 1, 1000, &type)) ||
              (e = rd_long(r, 1, "a tag count", 0, 64, &ntags)))
            goto done;
          for (long long k = 0; k < ntags; k++)
            if ((e = rd_long(r, 1, "an element tag value", INT64_MIN, INT64_MAX, &tag))) goto done;
        }
        if (type == 4) {
          if ((e = msh_tet(r, &f, 1, 0, id, ids, nn, &T))) goto done;
          if (!bin && !rd_eol(r)) {
            e = rd_fail(r, CE_EINVAL, "expected end of line after the 4 nodes of tet element %lld", id);
            goto done;
          }
        } else {
          m->skipped_cells++;
        }
        if (!bin) rd_next_line(r);
      }
      seen += inb;
    }
    if (seen != ne) {
      e = msh_fail(r, &f, CE_EINVAL, "expected %lld elements in the blocks, found %lld", ne, seen);
      goto done;
    }
  }
  msh_end_binary(r, &f);
  f.bin = 0;
  if ((e = rd_expect(r, "$EndElements", "after the elements"))) goto done;
  if (T.len == 0) {
    e = ce_fail(r->err, CE_EEMPTY, "MSH: no tetrahedra (element type 4) among %lld elements", ne);
    goto done;
  }
  m->ntet = (int32_t)(T.len / 4);
  m->tets = T.d;
  T.d = NULL;
done:
  free(ids);
  free(T.d);
  return e;
}

/* ---- entry -------------------------------------------------------------- */

static int stl_size_matches(const unsigned char *b, size_t n) {
  if (n < 84) return 0;
  uint32_t nf = (uint32_t)b[80] | (uint32_t)b[81] << 8 | (uint32_t)b[82] << 16 | (uint32_t)b[83] << 24;
  return (uint64_t)nf * 50 + 84 == n;
}

static int stl_is_binary(const unsigned char *b, size_t n) {
  if (n < 84) return !(n >= 5 && memcmp(b, "solid", 5) == 0);
  uint32_t nf = (uint32_t)b[80] | (uint32_t)b[81] << 8 | (uint32_t)b[82] << 16 | (uint32_t)b[83] << 24;
  if ((uint64_t)nf * 50 + 84 == n) return 1;
  return !(memcmp(b, "solid", 5) == 0);
}

ce_errno ce_mesh_parse(const void *bytes, size_t len, ce_mesh_format format, double weld_tol, ce_mesh_data *out,
                       ce_error *err) {
  if (!out) return ce_fail(err, CE_EINVAL, "mesh parse: out is NULL");
  out_clear(out);
  if (!bytes && len > 0) return ce_fail(err, CE_EINVAL, "mesh parse: bytes is NULL");
  if (len == 0) return ce_fail(err, CE_EEMPTY, "mesh parse: no bytes");
  if (isnan(weld_tol)) return ce_fail(err, CE_EINVAL, "mesh parse: weld tolerance is NaN");
  const unsigned char *b = bytes;
  size_t skip = 0;
  while (skip < len && skip < 4096 && is_space((char)b[skip])) skip++;
  if (format == CE_MESH_AUTO) {
    if (len - skip >= 5 && memcmp(b + skip, "# vtk", 5) == 0) format = CE_MESH_VTK;
    else if (len - skip >= 11 && memcmp(b + skip, "$MeshFormat", 11) == 0) format = CE_MESH_MSH;
    /* PLY's magic line: said so, rather than an OBJ error about its lines */
    else if (len - skip >= 4 && memcmp(b + skip, "ply", 3) == 0 && is_space((char)b[skip + 3]))
      return ce_fail(err, CE_EUNSUPPORTED, "PLY files are not supported (use OBJ, STL, VTK or MSH)");
    else if (stl_size_matches(b, len) || (len - skip >= 6 && memcmp(b + skip, "solid", 5) == 0 && is_space((char)b[skip + 5])))
      format = CE_MESH_STL;
    else format = CE_MESH_OBJ;
  }
  rd r;
  ce_errno e;
  switch (format) {
    case CE_MESH_VTK:
      rd_init(&r, b, len, "VTK", err);
      e = parse_vtk(&r, out);
      break;
    case CE_MESH_MSH:
      rd_init(&r, b, len, "MSH", err);
      e = parse_msh(&r, out);
      break;
    case CE_MESH_OBJ:
      rd_init(&r, b, len, "OBJ", err);
      e = parse_obj(&r, out);
      if (!e && weld_tol >= 0) e = weld(out, weld_tol, err);
      break;
    case CE_MESH_STL:
      if (stl_is_binary(b, len)) {
        e = parse_stl_binary(b, len, out, err);
      } else {
        rd_init(&r, b, len, "STL", err);
        e = parse_stl_ascii(&r, out);
      }
      if (!e) e = weld(out, weld_tol > 0 ? weld_tol : 0, err);
      break;
    default:
      return ce_fail(err, CE_EINVAL, "mesh parse: unknown format %d", (int)format);
  }
  if (e) {
    ce_mesh_data_free(out);
    return e;
  }
  out->format = format;
  return CE_OK;
}
