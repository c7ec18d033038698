/* ce_meshio_obj.c — Wavefront OBJ surfaces (v and f lines; polygons fanned
 * into triangles; negative indices count back from the last vertex). */
#include "ce_meshio_reader.h"

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

ce_errno ce_mesh_parse_obj(rd *r, ce_mesh_data *m) {
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
      if (V.len / 3 >= CE_LIMIT_MESH_COUNT) {
        e = rd_fail(r, CE_ELIMIT, "more than %d vertices", CE_LIMIT_MESH_COUNT);
        goto done;
      }
      for (int k = 0; k < 3; k++) {
        double x = 0;
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
        if (F.len / 3 >= CE_LIMIT_MESH_COUNT) {
          e = rd_fail(r, CE_ELIMIT, "more than %d triangles", CE_LIMIT_MESH_COUNT);
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
