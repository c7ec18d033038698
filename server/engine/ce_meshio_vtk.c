/* ce_meshio_vtk.c — VTK legacy unstructured grids: ASCII and big-endian
 * BINARY; 4.2 count-prefixed cell lists or 5.1 OFFSETS/CONNECTIVITY; the
 * tets (cell type 10) are kept, other cells counted as skipped. */
#include "ce_meshio_reader.h"

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
      if (u > (uint64_t)CE_LIMIT_MESH_COUNT) {
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
      if ((e = rd_long(r, 0, key, 0, CE_LIMIT_MESH_COUNT, &x))) {
        free(a);
        return e;
      }
      a[i] = (int32_t)x;
    }
  }
  *out = a;
  return CE_OK;
}

/* The header (version line, title, ASCII or BINARY, DATASET
 * UNSTRUCTURED_GRID) and POINTS: m's vertices, *np of them. */
static ce_errno vtk_points(rd *r, ce_mesh_data *m, int *binary_out, long long *np_out) {
  ce_errno e;
  char t[TOKMAX];
  long long np = 0;
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
  *binary_out = binary;
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
  *np_out = np;
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
  return CE_OK;
}

/* VTK 5.1: CELLS <noffsets> <nconnectivity> (in *nc, *size), OFFSETS,
 * CONNECTIVITY; rewritten into the legacy count-prefixed lists (*cells,
 * *nc cells in *size entries). */
static ce_errno vtk_offsets(rd *r, int binary, long long *nc, long long *size, int32_t **cells_out) {
  ce_errno e;
  long long nof = *nc, ncon = *size;
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
  *nc = nof - 1;
  *size = ncon + *nc;
  int32_t *cells = *cells_out = malloc((size_t)(*size > 0 ? *size : 1) * sizeof *cells);
  if (!cells) {
    free(of);
    free(con);
    return ce_fail(r->err, CE_ENOMEM, "VTK: out of memory for %lld cell entries", *size);
  }
  long long at = 0;
  for (long long c = 0; c < *nc; c++) {
    cells[at++] = of[c + 1] - of[c];
    for (int32_t k = of[c]; k < of[c + 1]; k++) cells[at++] = con[k];
  }
  free(of);
  free(con);
  return CE_OK;
}

/* CELLS n size and the cell lists, each its point count then its points:
 * *nc cells in *size entries at *cells (which the caller frees, also on
 * failure). */
static ce_errno vtk_cells(rd *r, int binary, long long *nc, long long *size, int32_t **cells_out) {
  ce_errno e;
  char t[TOKMAX];
  if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected 'CELLS', found end of file");
  if (!tok_is(t, "CELLS")) return rd_fail(r, CE_EINVAL, "expected 'CELLS', found '%.40s'", t);
  if ((e = rd_count(r, "cell count", binary ? 8 : 4, nc))) return e;
  if ((e = rd_count(r, "cell list size", binary ? 4 : 2, size))) return e;
  rd peek = *r;
  rd_skip_ws(&peek);
  if (rd_left(&peek) >= 7 && memcmp(peek.s + peek.pos, "OFFSETS", 7) == 0)
    return vtk_offsets(r, binary, nc, size, cells_out);
  if (*size < *nc) return rd_fail(r, CE_EINVAL, "cell list size %lld is smaller than the cell count %lld", *size, *nc);
  int32_t *cells = *cells_out = malloc((size_t)(*size > 0 ? *size : 1) * sizeof *cells);
  if (!cells) return ce_fail(r->err, CE_ENOMEM, "VTK: out of memory for %lld cell entries", *size);
  if (binary) {
    if ((e = vtk_binary_start(r, (size_t)*size * 4, "cell lists"))) return e;
    for (long long i = 0; i < *size; i++) {
      uint32_t u = be32((const unsigned char *)r->s + r->pos);
      if (u > (uint32_t)CE_LIMIT_MESH_COUNT)
        return ce_fail(r->err, CE_ERANGE, "VTK byte offset %zu: cell list entry %u out of range", r->pos, u);
      cells[i] = (int32_t)u;
      r->pos += 4;
    }
  } else {
    for (long long i = 0; i < *size; i++) {
      long long x = 0;
      if ((e = rd_long(r, 0, "a cell list entry", 0, CE_LIMIT_MESH_COUNT, &x))) return e;
      cells[i] = (int32_t)x;
    }
  }
  return CE_OK;
}

/* CELL_TYPES: one type per cell, nc of them, at *types (which the caller
 * frees, also on failure). */
static ce_errno vtk_cell_types(rd *r, int binary, long long nc, int32_t **types_out) {
  ce_errno e;
  char t[TOKMAX];
  if (!rd_token(r, t)) return rd_fail(r, CE_EINVAL, "expected 'CELL_TYPES', found end of file");
  if (!tok_is(t, "CELL_TYPES")) return rd_fail(r, CE_EINVAL, "expected 'CELL_TYPES', found '%.40s'", t);
  long long nct = 0;
  if ((e = rd_long(r, 0, "cell type count", 0, CE_LIMIT_MESH_COUNT, &nct))) return e;
  if (nct != nc) return rd_fail(r, CE_EINVAL, "expected %lld cell types (one per cell), found %lld", nc, nct);
  int32_t *types = *types_out = malloc((size_t)(nc > 0 ? nc : 1) * sizeof *types);
  if (!types) return ce_fail(r->err, CE_ENOMEM, "VTK: out of memory");
  if (binary) {
    if ((e = vtk_binary_start(r, (size_t)nc * 4, "cell types"))) return e;
    for (long long i = 0; i < nc; i++) {
      types[i] = (int32_t)be32((const unsigned char *)r->s + r->pos);
      r->pos += 4;
    }
  } else {
    for (long long i = 0; i < nc; i++) {
      long long x = 0;
      if ((e = rd_long(r, 0, "a cell type", 0, 1000, &x))) return e;
      types[i] = (int32_t)x;
    }
  }
  return CE_OK;
}

/* The tets (type 10) among the nc cells: checked, counted, then copied
 * into m; other cells counted as skipped. */
static ce_errno vtk_tets(rd *r, ce_mesh_data *m, const int32_t *cells, const int32_t *types, long long nc,
                         long long size, long long np) {
  /* walk the cell lists */
  long long ntet = 0, at = 0;
  for (long long c = 0; c < nc; c++) {
    if (at >= size) return ce_fail(r->err, CE_EINVAL, "VTK: cell %lld starts past the cell list size %lld", c, size);
    long long k = cells[at];
    if (at + 1 + k > size)
      return ce_fail(r->err, CE_EINVAL, "VTK: cell %lld has %lld points, past the cell list size %lld", c, k, size);
    if (types[c] == 10) {
      if (k != 4)
        return ce_fail(r->err, CE_EINVAL, "VTK: cell %lld is a tetra (type 10) with %lld points, expected 4", c, k);
      ntet++;
    } else {
      m->skipped_cells++;
    }
    at += 1 + k;
  }
  if (ntet == 0) return ce_fail(r->err, CE_EEMPTY, "VTK: no tetrahedra (cell type 10) among %lld cells", nc);
  m->tets = malloc((size_t)ntet * 4 * sizeof(int32_t));
  if (!m->tets) return ce_fail(r->err, CE_ENOMEM, "VTK: out of memory for %lld tets", ntet);
  at = 0;
  long long tcount = 0;
  for (long long c = 0; c < nc; c++) {
    long long k = cells[at];
    if (types[c] == 10)
      for (int j = 0; j < 4; j++) {
        int32_t ix = cells[at + 1 + j];
        if (ix < 0 || ix >= np)
          return ce_fail(r->err, CE_ERANGE, "VTK: cell %lld point %d index %d out of range [0, %lld)", c, j, (int)ix,
                         np);
        m->tets[4 * tcount + j] = ix;
      }
    if (types[c] == 10) tcount++;
    at += 1 + k;
  }
  m->ntet = (int32_t)ntet;
  return CE_OK;
}

ce_errno ce_mesh_parse_vtk(rd *r, ce_mesh_data *m) {
  int32_t *cells = NULL, *types = NULL;
  long long np = 0, nc = 0, size = 0;
  int binary = 0;
  ce_errno e;
  if (!(e = vtk_points(r, m, &binary, &np)) && !(e = vtk_cells(r, binary, &nc, &size, &cells)) &&
      !(e = vtk_cell_types(r, binary, nc, &types)))
    e = vtk_tets(r, m, cells, types, nc, size, np);
  free(cells);
  free(types);
  return e;
}
