/* ce_meshio.c — mesh files from bytes in memory: VTK legacy
 * unstructured grids (ASCII and big-endian BINARY; 4.2 count-prefixed cell
 * lists or 5.1 OFFSETS/CONNECTIVITY), Gmsh MSH 2.2 and 4.1
 * (ASCII and binary; tets), Wavefront OBJ and STL (ASCII and binary) surfaces, with
 * vertex welding at a stated tolerance.
 *
 * Hostile input: every count read from the file is checked against the
 * bytes that remain before any array is sized by it (an ASCII number takes
 * at least 2 bytes with its separator; a binary one its exact width), and
 * against CE_LIMIT_MESH_COUNT (2^28). Indices are range checked, coordinates must
 * be finite. Errors say "<format> line L: expected X, found 'tok'" or
 * "<format> byte offset B: ...". No file I/O, no globals.
 *
 * This file picks the format, welds surfaces and frees; each format is
 * parsed in its own file (ce_meshio_obj.c, ce_meshio_stl.c, ce_meshio_vtk.c,
 * ce_meshio_msh.c) over the reader in ce_meshio_reader.h. */
#include "ce_meshio_reader.h"

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
      e = ce_mesh_parse_vtk(&r, out);
      break;
    case CE_MESH_MSH:
      rd_init(&r, b, len, "MSH", err);
      e = ce_mesh_parse_msh(&r, out);
      break;
    case CE_MESH_OBJ:
      rd_init(&r, b, len, "OBJ", err);
      e = ce_mesh_parse_obj(&r, out);
      if (!e && weld_tol >= 0) e = weld(out, weld_tol, err);
      break;
    case CE_MESH_STL:
      if (stl_is_binary(b, len)) {
        e = ce_mesh_parse_stl_binary(b, len, out, err);
      } else {
        rd_init(&r, b, len, "STL", err);
        e = ce_mesh_parse_stl_ascii(&r, out);
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
