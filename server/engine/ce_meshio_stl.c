/* ce_meshio_stl.c — STL surfaces, binary (little-endian, 50 bytes a
 * triangle) and ASCII (solid / facet / outer loop / vertex). */
#include "ce_meshio_reader.h"

static float rd_f32le(const unsigned char *p) {
  uint32_t u = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

ce_errno ce_mesh_parse_stl_binary(const unsigned char *b, size_t n, ce_mesh_data *m, ce_error *err) {
  if (n < 84) return ce_fail(err, CE_EINVAL, "STL byte offset %zu: expected an 84-byte header, file has %zu bytes", n, n);
  uint32_t nf = (uint32_t)b[80] | (uint32_t)b[81] << 8 | (uint32_t)b[82] << 16 | (uint32_t)b[83] << 24;
  if (nf == 0) return ce_fail(err, CE_EEMPTY, "STL byte offset 80: triangle count is 0");
  if (nf > CE_LIMIT_MESH_COUNT / 3)
    return ce_fail(err, CE_ELIMIT, "STL byte offset 80: %u triangles exceed the limit %d", nf, CE_LIMIT_MESH_COUNT / 3);
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

ce_errno ce_mesh_parse_stl_ascii(rd *r, ce_mesh_data *m) {
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
      if (V.len / 3 >= CE_LIMIT_MESH_COUNT) {
        e = rd_fail(r, CE_ELIMIT, "more than %d vertices", CE_LIMIT_MESH_COUNT);
        goto done;
      }
      for (int c = 0; c < 3; c++) {
        double x = 0;
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
