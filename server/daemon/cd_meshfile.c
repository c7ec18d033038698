/* cd_meshfile.c — OBJ, STL and legacy-VTK parsers into flat arrays. */
#include "cd_meshfile.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define F "registerGeometry.meshFile"

typedef struct dbuf { double *v; size_t n, cap; } dbuf;
typedef struct ibuf { int32_t *v; size_t n, cap; } ibuf;

static int dpush(dbuf *b, double x) {
  if (b->n == b->cap) {
    size_t nc = b->cap ? 2 * b->cap : 1024;
    double *nv = realloc(b->v, nc * sizeof *nv);
    if (!nv) return -1;
    b->v = nv;
    b->cap = nc;
  }
  b->v[b->n++] = x;
  return 0;
}

static int ipush(ibuf *b, int32_t x) {
  if (b->n == b->cap) {
    size_t nc = b->cap ? 2 * b->cap : 1024;
    int32_t *nv = realloc(b->v, nc * sizeof *nv);
    if (!nv) return -1;
    b->v = nv;
    b->cap = nc;
  }
  b->v[b->n++] = x;
  return 0;
}

void cd_mesh_free(cd_mesh *m) {
  free(m->vertices);
  free(m->elements);
  memset(m, 0, sizeof *m);
}

/* A line-by-line cursor over a byte buffer (no NUL terminator needed). */
typedef struct cursor {
  const char *p, *end;
  long line;
  char buf[4096];
} cursor;

static int next_line(cursor *c) {
  if (c->p >= c->end) return 0;
  const char *s = c->p;
  const char *e = memchr(s, '\n', (size_t)(c->end - s));
  if (!e) e = c->end;
  size_t n = (size_t)(e - s);
  if (n >= sizeof c->buf) n = sizeof c->buf - 1;
  memcpy(c->buf, s, n);
  c->buf[n] = 0;
  if (n && c->buf[n - 1] == '\r') c->buf[n - 1] = 0;
  c->p = e < c->end ? e + 1 : e;
  c->line++;
  return 1;
}

static int oom(cd_status *st) { return cd_status_set(st, CD_EXHAUSTED, F, "out of memory parsing the mesh"); }

static int parse_obj(cursor *c, const char *name, uint64_t maxe, dbuf *v, ibuf *el, cd_status *st) {
  while (next_line(c)) {
    char *s = c->buf;
    while (isspace((unsigned char)*s)) s++;
    if (s[0] == 'v' && s[1] == ' ') {
      double x, y, z;
      if (sscanf(s + 2, "%lf %lf %lf", &x, &y, &z) != 3)
        return cd_status_set(st, CD_INVALID, F, "%s line %ld: a vertex needs three numbers", name, c->line);
      if (dpush(v, x) || dpush(v, y) || dpush(v, z)) return oom(st);
    } else if (s[0] == 'f' && s[1] == ' ') {
      int32_t idx[64];
      int k = 0;
      char *t = s + 2;
      while (*t) {
        while (isspace((unsigned char)*t)) t++;
        if (!*t) break;
        char *endp;
        long i = strtol(t, &endp, 10);
        if (endp == t)
          return cd_status_set(st, CD_INVALID, F, "%s line %ld: bad face index", name, c->line);
        long nv = (long)(v->n / 3);
        if (i < 0) i = nv + i + 1;
        if (i < 1 || i > nv)
          return cd_status_set(st, CD_INVALID, F, "%s line %ld: face index %ld out of range (1..%ld)", name,
                               c->line, i, nv);
        if (k == 64) return cd_status_set(st, CD_INVALID, F, "%s line %ld: face with > 64 vertices", name, c->line);
        idx[k++] = (int32_t)(i - 1);
        t = endp;
        while (*t && !isspace((unsigned char)*t)) t++; /* skip /vt/vn */
      }
      if (k < 3) return cd_status_set(st, CD_INVALID, F, "%s line %ld: a face needs 3 vertices", name, c->line);
      for (int j = 1; j + 1 < k; j++)
        if (ipush(el, idx[0]) || ipush(el, idx[j]) || ipush(el, idx[j + 1])) return oom(st);
    }
    if (v->n / 3 > maxe || el->n / 3 > maxe)
      return cd_status_set(st, CD_EXHAUSTED, F, "%s: more than %llu elements (max_mesh_elements)", name,
                           (unsigned long long)maxe);
  }
  return 0;
}

typedef struct wv { double x, y, z; int32_t i; } wv;
static int wv_cmp(const void *a, const void *b) {
  const wv *p = a, *q = b;
  if (p->x != q->x) return p->x < q->x ? -1 : 1;
  if (p->y != q->y) return p->y < q->y ? -1 : 1;
  if (p->z != q->z) return p->z < q->z ? -1 : 1;
  return p->i - q->i;
}

/* STL lists corners per triangle: weld identical coordinates. */
static int weld(dbuf *v, ibuf *el, cd_status *st) {
  size_t n = v->n / 3;
  wv *w = malloc((n ? n : 1) * sizeof *w);
  int32_t *map = malloc((n ? n : 1) * sizeof *map);
  double *out = malloc((n ? n : 1) * 3 * sizeof *out);
  if (!w || !map || !out) {
    free(w);
    free(map);
    free(out);
    return oom(st);
  }
  for (size_t i = 0; i < n; i++) w[i] = (wv){v->v[3 * i], v->v[3 * i + 1], v->v[3 * i + 2], (int32_t)i};
  qsort(w, n, sizeof *w, wv_cmp);
  size_t u = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == 0 || w[i].x != w[i - 1].x || w[i].y != w[i - 1].y || w[i].z != w[i - 1].z) {
      out[3 * u] = w[i].x;
      out[3 * u + 1] = w[i].y;
      out[3 * u + 2] = w[i].z;
      u++;
    }
    map[w[i].i] = (int32_t)(u - 1);
  }
  for (size_t i = 0; i < el->n; i++) el->v[i] = map[el->v[i]];
  free(v->v);
  v->v = out;
  v->n = 3 * u;
  v->cap = 3 * n;
  free(w);
  free(map);
  return 0;
}

static int parse_stl_binary(const uint8_t *d, size_t len, const char *name, uint64_t maxe, dbuf *v, ibuf *el,
                            cd_status *st) {
  uint32_t nf;
  memcpy(&nf, d + 80, 4);
  if ((uint64_t)nf > maxe)
    return cd_status_set(st, CD_EXHAUSTED, F, "%s: %u triangles exceed max_mesh_elements", name, nf);
  if (len < 84 + (size_t)nf * 50)
    return cd_status_set(st, CD_INVALID, F, "%s: binary STL truncated (%u triangles need %zu bytes, have %zu)",
                         name, nf, 84 + (size_t)nf * 50, len);
  for (uint32_t f = 0; f < nf; f++) {
    const uint8_t *t = d + 84 + (size_t)f * 50 + 12;
    for (int k = 0; k < 9; k++) {
      float x;
      memcpy(&x, t + 4 * k, 4);
      if (dpush(v, x)) return oom(st);
    }
    for (int k = 0; k < 3; k++)
      if (ipush(el, (int32_t)(3 * f + (uint32_t)k))) return oom(st);
  }
  return weld(v, el, st);
}

static int parse_stl_ascii(cursor *c, const char *name, uint64_t maxe, dbuf *v, ibuf *el, cd_status *st) {
  int corners = 0;
  while (next_line(c)) {
    char *s = c->buf;
    while (isspace((unsigned char)*s)) s++;
    if (strncmp(s, "vertex", 6) == 0) {
      double x, y, z;
      if (sscanf(s + 6, "%lf %lf %lf", &x, &y, &z) != 3)
        return cd_status_set(st, CD_INVALID, F, "%s line %ld: a vertex needs three numbers", name, c->line);
      if (dpush(v, x) || dpush(v, y) || dpush(v, z) || ipush(el, (int32_t)(v->n / 3 - 1))) return oom(st);
      corners++;
    } else if (strncmp(s, "endfacet", 8) == 0) {
      if (corners != 3)
        return cd_status_set(st, CD_INVALID, F, "%s line %ld: facet with %d vertices (STL needs 3)", name, c->line,
                             corners);
      corners = 0;
    }
    if (el->n / 3 > maxe)
      return cd_status_set(st, CD_EXHAUSTED, F, "%s: more than %llu triangles (max_mesh_elements)", name,
                           (unsigned long long)maxe);
  }
  return weld(v, el, st);
}

/* Legacy VTK ASCII unstructured grid: POINTS n type / CELLS n size /
 * CELL_TYPES n (10 = tetra). Only tetrahedra are accepted. */
static int parse_vtk(cursor *c, const char *name, uint64_t maxe, dbuf *v, ibuf *el, cd_status *st) {
  int binary = 0;
  while (next_line(c)) {
    char *s = c->buf;
    if (strncmp(s, "BINARY", 6) == 0) binary = 1;
    if (binary) return cd_status_set(st, CD_UNIMPLEMENTED, F, "%s: binary VTK is not supported (use ASCII)", name);
    long n = 0, size = 0;
    if (sscanf(s, "POINTS %ld", &n) == 1) {
      if (n < 0 || (uint64_t)n > maxe)
        return cd_status_set(st, CD_EXHAUSTED, F, "%s line %ld: %ld points", name, c->line, n);
      long need = 3 * n;
      while (need > 0 && next_line(c)) {
        char *t = c->buf, *e;
        for (;;) {
          double x = strtod(t, &e);
          if (e == t) break;
          if (dpush(v, x)) return oom(st);
          need--;
          t = e;
        }
      }
      if (need > 0) return cd_status_set(st, CD_INVALID, F, "%s: POINTS section truncated", name);
    } else if (sscanf(s, "CELLS %ld %ld", &n, &size) == 2) {
      if (n < 0 || (uint64_t)n > maxe)
        return cd_status_set(st, CD_EXHAUSTED, F, "%s line %ld: %ld cells", name, c->line, n);
      long cells = 0;
      while (cells < n && next_line(c)) {
        long k, a[4];
        if (sscanf(c->buf, "%ld %ld %ld %ld %ld", &k, &a[0], &a[1], &a[2], &a[3]) != 5 || k != 4)
          return cd_status_set(st, CD_INVALID, F, "%s line %ld: cell %ld is not a tetrahedron (4 indices)", name,
                               c->line, cells);
        for (int j = 0; j < 4; j++) {
          if (a[j] < 0 || a[j] >= (long)(v->n / 3))
            return cd_status_set(st, CD_INVALID, F, "%s line %ld: cell %ld index %ld out of range", name, c->line,
                                 cells, a[j]);
          if (ipush(el, (int32_t)a[j])) return oom(st);
        }
        cells++;
      }
      if (cells < n) return cd_status_set(st, CD_INVALID, F, "%s: CELLS section truncated", name);
    }
  }
  if (v->n == 0 || el->n == 0) return cd_status_set(st, CD_INVALID, F, "%s: no POINTS or no CELLS", name);
  return 0;
}

int cd_meshfile_parse(const uint8_t *data, size_t len, int format, const char *name, uint64_t maxe,
                      cd_mesh *out, cd_status *st) {
  memset(out, 0, sizeof *out);
  if (!name || !*name) name = "mesh file";
  if (format == CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_UNSPECIFIED) {
    if (len >= 5 && memcmp(data, "solid", 5) == 0) format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_STL;
    else if (len >= 4 && memcmp(data, "ply", 3) == 0) format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_PLY;
    else if (len >= 22 && memcmp(data, "# vtk DataFile Version", 22) == 0)
      format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_VTK;
    else if (len >= 11 && memcmp(data, "$MeshFormat", 11) == 0) format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_MSH;
    else if (len >= 84) {
      uint32_t nf;
      memcpy(&nf, data + 80, 4);
      format = (84 + (size_t)nf * 50 == len) ? CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_STL
                                             : CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_OBJ;
    } else {
      format = CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_OBJ;
    }
  }
  cursor *c = malloc(sizeof *c);
  if (!c) return oom(st);
  c->p = (const char *)data;
  c->end = (const char *)data + len;
  c->line = 0;
  dbuf v = {0};
  ibuf el = {0};
  int rc, per = 3;
  switch (format) {
    case CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_OBJ: rc = parse_obj(c, name, maxe, &v, &el, st); break;
    case CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_STL:
      if (len >= 84 && !(len >= 5 && memcmp(data, "solid", 5) == 0 && memchr(data, '\n', len < 256 ? len : 256)))
        rc = parse_stl_binary(data, len, name, maxe, &v, &el, st);
      else
        rc = parse_stl_ascii(c, name, maxe, &v, &el, st);
      break;
    case CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_VTK:
      per = 4;
      rc = parse_vtk(c, name, maxe, &v, &el, st);
      break;
    case CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_PLY:
    case CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_MSH:
      rc = cd_status_set(st, CD_UNIMPLEMENTED, "registerGeometry.meshFile.format",
                         "%s: PLY and Gmsh files are not supported yet (use OBJ, STL or VTK)", name);
      break;
    default:
      rc = cd_status_set(st, CD_INVALID, "registerGeometry.meshFile.format", "unknown format %d", format);
      break;
  }
  free(c);
  if (!rc && (v.n == 0 || el.n == 0)) rc = cd_status_set(st, CD_INVALID, F, "%s: no vertices or no faces", name);
  if (rc) {
    free(v.v);
    free(el.v);
    return rc;
  }
  out->vertices = v.v;
  out->nv = (int32_t)(v.n / 3);
  out->elements = el.v;
  out->ne = (int32_t)(el.n / (size_t)per);
  out->per_element = per;
  return 0;
}
