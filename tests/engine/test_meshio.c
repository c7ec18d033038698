/* test_meshio.c — mesh file parsers (ce_meshio.c): golden files of every
 * format (tests/engine/data), round trips through writers in this file,
 * positioned error messages, hostile counts, and a deterministic fuzz pass
 * (truncations and byte mutations) that must never crash. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

/* ---- helpers ---------------------------------------------------------------- */


typedef struct buf {
  char *s;
  size_t n, cap;
} buf;
static void put(buf *b, const void *p, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->s = realloc(b->s, b->cap);
    cr_assert(b->s);
  }
  memcpy(b->s + b->n, p, n);
  b->n += n;
  b->s[b->n] = 0;
}
static void putf(buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void putf(buf *b, const char *fmt, ...) {
  char tmp[512];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  put(b, tmp, (size_t)k);
}
static void put_be32(buf *b, uint32_t u) {
  unsigned char c[4] = {(unsigned char)(u >> 24), (unsigned char)(u >> 16), (unsigned char)(u >> 8), (unsigned char)u};
  put(b, c, 4);
}
static void put_be64d(buf *b, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  put_be32(b, (uint32_t)(u >> 32));
  put_be32(b, (uint32_t)u);
}
static void put_le32(buf *b, uint32_t u) {
  unsigned char c[4] = {(unsigned char)u, (unsigned char)(u >> 8), (unsigned char)(u >> 16), (unsigned char)(u >> 24)};
  put(b, c, 4);
}
static void put_lef(buf *b, float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  put_le32(b, u);
}

/* writers */
static buf write_vtk(const double *v, int32_t nv, const int32_t *t, int32_t nt, int binary) {
  buf b = {0, 0, 0};
  putf(&b, "# vtk DataFile Version 3.0\nround trip\n%s\nDATASET UNSTRUCTURED_GRID\nPOINTS %d double\n",
       binary ? "BINARY" : "ASCII", (int)nv);
  for (int32_t i = 0; i < 3 * nv; i++)
    if (binary) put_be64d(&b, v[i]);
    else putf(&b, "%.17g%s", v[i], i % 3 == 2 ? "\n" : " ");
  if (binary) putf(&b, "\n");
  putf(&b, "CELLS %d %d\n", (int)nt, (int)(5 * nt));
  for (int32_t q = 0; q < nt; q++) {
    if (binary) {
      put_be32(&b, 4);
      for (int r = 0; r < 4; r++) put_be32(&b, (uint32_t)t[4 * q + r]);
    } else {
      putf(&b, "4 %d %d %d %d\n", (int)t[4 * q], (int)t[4 * q + 1], (int)t[4 * q + 2], (int)t[4 * q + 3]);
    }
  }
  if (binary) putf(&b, "\n");
  putf(&b, "CELL_TYPES %d\n", (int)nt);
  for (int32_t q = 0; q < nt; q++)
    if (binary) put_be32(&b, 10);
    else putf(&b, "10\n");
  return b;
}

/* VTK 5.1 layout: OFFSETS / CONNECTIVITY (int64) */
static buf write_vtk51(const double *v, int32_t nv, const int32_t *t, int32_t nt, int binary) {
  buf b = {0, 0, 0};
  putf(&b, "# vtk DataFile Version 5.1\nvtk output\n%s\nDATASET UNSTRUCTURED_GRID\nPOINTS %d double\n",
       binary ? "BINARY" : "ASCII", (int)nv);
  for (int32_t i = 0; i < 3 * nv; i++)
    if (binary) put_be64d(&b, v[i]);
    else putf(&b, "%.17g%s", v[i], i % 3 == 2 ? "\n" : " ");
  if (binary) putf(&b, "\n");
  putf(&b, "CELLS %d %d\nOFFSETS vtktypeint64\n", (int)nt + 1, (int)(4 * nt));
  for (int32_t q = 0; q <= nt; q++)
    if (binary) {
      put_be32(&b, 0);
      put_be32(&b, (uint32_t)(4 * q));
    } else {
      putf(&b, "%d\n", (int)(4 * q));
    }
  if (binary) putf(&b, "\n");
  putf(&b, "CONNECTIVITY vtktypeint64\n");
  for (int32_t k = 0; k < 4 * nt; k++)
    if (binary) {
      put_be32(&b, 0);
      put_be32(&b, (uint32_t)t[k]);
    } else {
      putf(&b, "%d%s", (int)t[k], k % 4 == 3 ? "\n" : " ");
    }
  if (binary) putf(&b, "\n");
  putf(&b, "CELL_TYPES %d\n", (int)nt);
  for (int32_t q = 0; q < nt; q++)
    if (binary) put_be32(&b, 10);
    else putf(&b, "10\n");
  return b;
}

/* MSH 2.2 (v4 = 0) or 4.1, ASCII or binary (little-endian, 8-byte size_t;
 * 2.2 binary writes its tets as one element header block). */
static void put_le64(buf *b, uint64_t u) {
  put_le32(b, (uint32_t)u);
  put_le32(b, (uint32_t)(u >> 32));
}
static void put_le64d(buf *b, double d) {
  uint64_t u;
  memcpy(&u, &d, 8);
  put_le64(b, u);
}
static buf write_msh(const double *v, int32_t nv, const int32_t *t, int32_t nt, int v4, int binary) {
  buf b = {0, 0, 0};
  putf(&b, "$MeshFormat\n%s %d 8\n", v4 ? "4.1" : "2.2", binary);
  if (binary) {
    put_le32(&b, 1);
    putf(&b, "\n");
  }
  putf(&b, "$EndMeshFormat\n$Nodes\n");
  if (v4 && binary) {
    put_le64(&b, 1), put_le64(&b, (uint64_t)nv), put_le64(&b, 1), put_le64(&b, (uint64_t)nv);
    put_le32(&b, 3), put_le32(&b, 1), put_le32(&b, 0), put_le64(&b, (uint64_t)nv);
    for (int32_t i = 0; i < nv; i++) put_le64(&b, (uint64_t)i + 1);
    for (int32_t i = 0; i < 3 * nv; i++) put_le64d(&b, v[i]);
    putf(&b, "\n");
  } else if (v4) {
    putf(&b, "1 %d 1 %d\n3 1 0 %d\n", (int)nv, (int)nv, (int)nv);
    for (int32_t i = 0; i < nv; i++) putf(&b, "%d\n", (int)i + 1);
    for (int32_t i = 0; i < nv; i++) putf(&b, "%.17g %.17g %.17g\n", v[3 * i], v[3 * i + 1], v[3 * i + 2]);
  } else {
    putf(&b, "%d\n", (int)nv);
    for (int32_t i = 0; i < nv; i++) {
      if (!binary) {
        putf(&b, "%d %.17g %.17g %.17g\n", (int)i + 1, v[3 * i], v[3 * i + 1], v[3 * i + 2]);
        continue;
      }
      put_le32(&b, (uint32_t)i + 1);
      for (int k = 0; k < 3; k++) put_le64d(&b, v[3 * i + k]);
    }
    if (binary) putf(&b, "\n");
  }
  putf(&b, "$EndNodes\n$Elements\n");
  if (v4 && binary) {
    put_le64(&b, 1), put_le64(&b, (uint64_t)nt), put_le64(&b, 1), put_le64(&b, (uint64_t)nt);
    put_le32(&b, 3), put_le32(&b, 1), put_le32(&b, 4), put_le64(&b, (uint64_t)nt);
  } else if (v4) {
    putf(&b, "1 %d 1 %d\n3 1 4 %d\n", (int)nt, (int)nt, (int)nt);
  } else {
    putf(&b, "%d\n", (int)nt);
    if (binary) put_le32(&b, 4), put_le32(&b, (uint32_t)nt), put_le32(&b, 2);
  }
  for (int32_t q = 0; q < nt; q++) {
    if (binary) {
      if (v4) put_le64(&b, (uint64_t)q + 1);
      else put_le32(&b, (uint32_t)q + 1), put_le32(&b, 0), put_le32(&b, 1);
      for (int r = 0; r < 4; r++) {
        if (v4) put_le64(&b, (uint64_t)t[4 * q + r] + 1);
        else put_le32(&b, (uint32_t)t[4 * q + r] + 1);
      }
      continue;
    }
    if (v4) putf(&b, "%d", (int)q + 1);
    else putf(&b, "%d 4 2 0 1", (int)q + 1);
    for (int r = 0; r < 4; r++) putf(&b, " %d", (int)t[4 * q + r] + 1);
    putf(&b, "\n");
  }
  if (binary) putf(&b, "\n");
  putf(&b, "$EndElements\n");
  return b;
}

static buf write_stl(const double *v, const int32_t *t, int32_t nf, int binary) {
  buf b = {0, 0, 0};
  if (binary) {
    char h[80];
    memset(h, ' ', sizeof h);
    memcpy(h, "round trip", 10);
    put(&b, h, 80);
    put_le32(&b, (uint32_t)nf);
    for (int32_t f = 0; f < nf; f++) {
      for (int k = 0; k < 3; k++) put_lef(&b, 0);
      for (int k = 0; k < 9; k++) put_lef(&b, (float)v[3 * t[3 * f + k / 3] + k % 3]);
      put(&b, "\0\0", 2);
    }
  } else {
    putf(&b, "solid rt\n");
    for (int32_t f = 0; f < nf; f++) {
      putf(&b, "facet normal 0 0 1\nouter loop\n");
      for (int k = 0; k < 3; k++)
        putf(&b, "vertex %.17g %.17g %.17g\n", v[3 * t[3 * f + k]], v[3 * t[3 * f + k] + 1], v[3 * t[3 * f + k] + 2]);
      putf(&b, "endloop\nendfacet\n");
    }
    putf(&b, "endsolid rt\n");
  }
  return b;
}

static void parse_ok(const char *bytes, size_t len, ce_mesh_format f, ce_mesh_data *m) {
  ce_error err;
  memset(&err, 0, sizeof err);
  ce_errno e = ce_mesh_parse(bytes, len, f, 0, m, &err);
  cr_assert_eq(e, CE_OK, "parse failed: %s", err.message);
}

static void parse_err(const char *text, ce_mesh_format f, ce_errno want, const char *needle) {
  ce_mesh_data m;
  ce_error err;
  memset(&err, 0, sizeof err);
  ce_errno e = ce_mesh_parse(text, strlen(text), f, 0, &m, &err);
  cr_assert_eq(e, want, "want %s got %s: %s", ce_errname(want), ce_errname(e), err.message);
  cr_assert(strstr(err.message, needle), "message '%s' lacks '%s'", err.message, needle);
  cr_assert_eq(m.nv, 0);
  cr_assert_null(m.vertices);
}

/* ---- golden files -------------------------------------------------------------- */

static const double kP[5][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {1, 1, 1}};
static const int32_t kT[2][4] = {{0, 1, 2, 3}, {1, 2, 3, 4}};

static void check_two_tets(const ce_mesh_data *m, int skipped) {
  cr_assert_eq(m->nv, 5);
  cr_assert_eq(m->ntet, 2);
  cr_assert_eq(m->ntri, 0);
  cr_assert_eq(m->skipped_cells, skipped);
  for (int i = 0; i < 5; i++)
    for (int k = 0; k < 3; k++) cr_assert_eq(m->vertices[3 * i + k], kP[i][k], "vertex %d", i);
  for (int q = 0; q < 2; q++)
    for (int r = 0; r < 4; r++) cr_assert_eq(m->tets[4 * q + r], kT[q][r]);
  /* and they make a valid geometry */
  ce_props props = ce_test_props(CE_COMPLIANT, 1e6, 0.1);
  ce_geometry *g = NULL;
  cr_assert_eq(ce_geometry_from_tetmesh(m->vertices, m->nv, m->tets, m->ntet, (double[5]){0, 0, 0, 0, 0}, &props, &g, NULL),
               CE_OK);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert(ce_test_close(info.volume, 1.0 / 6 + 1.0 / 3, 1e-12, 0));
  ce_geometry_free(g);
}

Test(meshio, golden_vtk_ascii_and_binary) {
  const char *files[3] = {"two_tets.vtk", "two_tets_binary.vtk", "two_tets_v51.vtk"};
  for (int k = 0; k < 3; k++) {
    size_t n;
    char *b = ce_test_read_data(files[k], &n);
    ce_mesh_data m;
    parse_ok(b, n, CE_MESH_AUTO, &m);
    cr_assert_eq(m.format, CE_MESH_VTK);
    check_two_tets(&m, 1);
    ce_mesh_data_free(&m);
    free(b);
  }
}

Test(meshio, golden_msh_22_and_41) {
  /* the binary files: 4.1 little-endian with a binary $Entities section,
   * 2.2 big-endian (the int 1 tells the order), each with the ASCII
   * file's nodes, tets and skipped point/triangle elements */
  const char *files[4] = {"two_tets_v22.msh", "two_tets_v41.msh", "two_tets_v22_binary.msh", "two_tets_v41_binary.msh"};
  const int skipped[4] = {2, 1, 2, 1};
  for (int k = 0; k < 4; k++) {
    size_t n;
    char *b = ce_test_read_data(files[k], &n);
    ce_mesh_data m;
    parse_ok(b, n, CE_MESH_AUTO, &m);
    cr_assert_eq(m.format, CE_MESH_MSH);
    check_two_tets(&m, skipped[k]);
    ce_mesh_data_free(&m);
    free(b);
  }
}

static void check_cube(const ce_mesh_data *m) {
  cr_assert_eq(m->nv, 8);
  cr_assert_eq(m->ntri, 12);
  ce_props props = ce_test_props(CE_RIGID, 0, 0.1);
  ce_geometry *g = NULL;
  ce_error err;
  cr_assert_eq(ce_geometry_from_trimesh(m->vertices, m->nv, m->tris, m->ntri, 1, &props, &g, &err), CE_OK, "%s",
               err.message);
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  cr_assert(ce_test_close(info.volume, 1.0, 1e-12, 0), "volume %g", info.volume);
  ce_geometry_free(g);
}

Test(meshio, golden_obj_and_stl) {
  const char *files[3] = {"cube.obj", "cube_ascii.stl", "cube_binary.stl"};
  const ce_mesh_format fmt[3] = {CE_MESH_OBJ, CE_MESH_STL, CE_MESH_STL};
  const int welded[3] = {0, 28, 28}; /* STL: 36 corners welded into 8 */
  for (int k = 0; k < 3; k++) {
    size_t n;
    char *b = ce_test_read_data(files[k], &n);
    ce_mesh_data m;
    parse_ok(b, n, CE_MESH_AUTO, &m);
    cr_assert_eq(m.format, fmt[k], "%s", files[k]);
    cr_assert_eq(m.welded, welded[k], "%s welded %d", files[k], m.welded);
    check_cube(&m);
    ce_mesh_data_free(&m);
    free(b);
  }
}

Test(meshio, weld_tolerance_is_stated) {
  /* two triangles whose shared corners differ by 1e-7 */
  const char *obj = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 1.0000001 0 0\nv 0 1.0000001 0\nv 1 1 0\nf 1 2 3\nf 4 6 5\n";
  ce_mesh_data m;
  cr_assert_eq(ce_mesh_parse(obj, strlen(obj), CE_MESH_OBJ, 0, &m, NULL), CE_OK);
  cr_assert_eq(m.nv, 6); /* exact only */
  ce_mesh_data_free(&m);
  cr_assert_eq(ce_mesh_parse(obj, strlen(obj), CE_MESH_OBJ, 1e-6, &m, NULL), CE_OK);
  cr_assert_eq(m.nv, 4);
  cr_assert_eq(m.welded, 2);
  cr_assert_eq(m.tris[3], 1); /* second triangle now uses the first's vertices */
  cr_assert_eq(m.tris[5], 2);
  ce_mesh_data_free(&m);
  cr_assert_eq(ce_mesh_parse(obj, strlen(obj), CE_MESH_OBJ, -1, &m, NULL), CE_OK);
  cr_assert_eq(m.nv, 6);
  ce_mesh_data_free(&m);
  /* a weld that collapses a triangle drops it and says so */
  const char *thin = "v 0 0 0\nv 1 0 0\nv 1 1e-9 0\nv 0 1 0\nf 1 2 3\nf 1 2 4\n";
  cr_assert_eq(ce_mesh_parse(thin, strlen(thin), CE_MESH_OBJ, 1e-6, &m, NULL), CE_OK);
  cr_assert_eq(m.ntri, 1);
  cr_assert_eq(m.dropped_faces, 1);
  ce_mesh_data_free(&m);
}

/* ---- round trips -------------------------------------------------------------- */

Test(meshio, round_trip_tet_formats) {
  size_t len;
  char *obj = ce_test_obj_sphere(1, 8, 16, &len);
  ce_mesh_data s;
  parse_ok(obj, len, CE_MESH_OBJ, &s);
  double *v;
  int32_t *t, nv, nt;
  ce_surface_build_options o;
  ce_surface_build_options_default(&o);
  o.edge_length = 0.5;
  ce_error err;
  cr_assert_eq(ce_tetrahedralize_surface(s.vertices, s.nv, s.tris, s.ntri, &o, &v, &nv, &t, &nt, NULL, &err), CE_OK,
               "%s", err.message);
  cr_assert_gt(nt, 50);
  /* VTK ASCII and binary, MSH 2.2 and 4.1 ASCII, VTK 5.1 ASCII and
   * binary, MSH 2.2 and 4.1 binary */
  for (int k = 0; k < 8; k++) {
    buf b = k < 2   ? write_vtk(v, nv, t, nt, k)
            : k < 4 ? write_msh(v, nv, t, nt, k - 2, 0)
            : k < 6 ? write_vtk51(v, nv, t, nt, k - 4)
                    : write_msh(v, nv, t, nt, k - 6, 1);
    ce_mesh_data m;
    parse_ok(b.s, b.n, CE_MESH_AUTO, &m);
    cr_assert_eq(m.format, k < 2 || (k >= 4 && k < 6) ? CE_MESH_VTK : CE_MESH_MSH);
    cr_assert_eq(m.nv, nv, "format %d", k);
    cr_assert_eq(m.ntet, nt);
    cr_assert_eq(memcmp(m.vertices, v, (size_t)nv * 3 * sizeof *v), 0, "format %d: coordinates differ", k);
    cr_assert_eq(memcmp(m.tets, t, (size_t)nt * 4 * sizeof *t), 0, "format %d: tets differ", k);
    ce_mesh_data_free(&m);
    free(b.s);
  }
  free(v);
  free(t);
  ce_mesh_data_free(&s);
  free(obj);
}

Test(meshio, round_trip_surface_formats) {
  size_t len;
  char *obj = ce_test_obj_torus(1, 0.3, 24, 12, &len);
  ce_mesh_data s;
  parse_ok(obj, len, CE_MESH_OBJ, &s);
  cr_assert_eq(s.nv, 24 * 12);
  cr_assert_eq(s.ntri, 2 * 24 * 12);
  for (int k = 0; k < 2; k++) {
    buf b = write_stl(s.vertices, s.tris, s.ntri, k);
    ce_mesh_data m;
    parse_ok(b.s, b.n, CE_MESH_AUTO, &m);
    cr_assert_eq(m.format, CE_MESH_STL);
    cr_assert_eq(m.nv, s.nv, "stl %d: %d vertices after welding", k, m.nv);
    cr_assert_eq(m.ntri, s.ntri);
    for (int32_t f = 0; f < s.ntri; f++)
      for (int j = 0; j < 3; j++)
        for (int c = 0; c < 3; c++) {
          double a = s.vertices[3 * s.tris[3 * f + j] + c], bb = m.vertices[3 * m.tris[3 * f + j] + c];
          cr_assert(fabs(a - bb) <= (k ? 1e-7 : 0), "stl %d face %d", k, (int)f);
        }
    ce_mesh_data_free(&m);
    free(b.s);
  }
  ce_mesh_data_free(&s);
  free(obj);
}

/* ---- errors name the position ---------------------------------------------------- */

Test(meshio, errors_name_positions) {
  parse_err("v 0 0 0\nv 1 0 0\nv 0 1 0\n\nf 1 2 9\n", CE_MESH_OBJ, CE_ERANGE, "OBJ line 5");
  parse_err("v 0 0 0\nv 1 0 x\n", CE_MESH_OBJ, CE_EINVAL, "OBJ line 2: expected vertex z");
  parse_err("v 0 0 nan\n", CE_MESH_OBJ, CE_ENONFINITE, "line 1");
  parse_err("v 0 0 0\nf 1 1\n", CE_MESH_OBJ, CE_EINVAL, "at least 3");
  parse_err("# nothing\n", CE_MESH_OBJ, CE_EEMPTY, "expected vertices");
  /* a PLY file (ASCII or binary) is named as such when the format is sniffed */
  parse_err("ply\nformat ascii 1.0\nelement vertex 3\nend_header\n", CE_MESH_AUTO, CE_EUNSUPPORTED,
            "PLY files are not supported");
  parse_err("ply\r\nformat binary_little_endian 1.0\r\n", CE_MESH_AUTO, CE_EUNSUPPORTED, "use OBJ, STL, VTK or MSH");
  parse_err("solid x\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nendloop\n", CE_MESH_STL, CE_EINVAL,
            "STL line 6: expected 'vertex'");
  parse_err("# vtk DataFile Version 3.0\nt\nASCII\nDATASET POLYDATA\n", CE_MESH_VTK, CE_EINVAL,
            "VTK line 4: expected 'UNSTRUCTURED_GRID'");
  parse_err("# vtk DataFile Version 3.0\nt\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 4 float\n0 0 0\n1 0 0\n0 1 0\n0 0 1\n"
            "CELLS 1 5\n4 0 1 2 7\nCELL_TYPES 1\n10\n",
            CE_MESH_VTK, CE_ERANGE, "cell 0 point 3 index 7");
  parse_err("$MeshFormat\n3.0 0 8\n$EndMeshFormat\n", CE_MESH_MSH, CE_EINVAL, "MSH line 2: expected format version");
  parse_err("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n1\n1 0 0 0\n$EndNodes\n$Elements\n1\n1 4 0 1 1 1 2\n$EndElements\n",
            CE_MESH_MSH, CE_ERANGE, "MSH line 10: element 1 refers to node 2");
  /* hostile counts are checked against the bytes left before allocating */
  parse_err("# vtk DataFile Version 3.0\nt\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 200000000 float\n0 0 0\n", CE_MESH_VTK,
            CE_EINVAL, "only");
  parse_err("# vtk DataFile Version 3.0\nt\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 99999999999 float\n", CE_MESH_VTK,
            CE_ELIMIT, "VTK line 5");
  parse_err("$MeshFormat\n2.2 0 8\n$EndMeshFormat\n$Nodes\n100000000\n1 0 0 0\n", CE_MESH_MSH, CE_EINVAL, "MSH line 5");
  /* binary STL whose count promises more than the file holds */
  {
    buf b = {0, 0, 0};
    char h[80];
    memset(h, 'x', sizeof h);
    put(&b, h, 80);
    put_le32(&b, 0x7fffffff);
    put(&b, h, 50);
    ce_mesh_data m;
    ce_error err;
    cr_assert_eq(ce_mesh_parse(b.s, b.n, CE_MESH_STL, 0, &m, &err), CE_ELIMIT);
    cr_assert(strstr(err.message, "byte offset 80"), "%s", err.message);
    b.n = 84;
    put_le32(&b, 0);
    b.s[80] = 3;
    b.s[81] = b.s[82] = b.s[83] = 0;
    cr_assert_eq(ce_mesh_parse(b.s, 84 + 50 * 2, CE_MESH_STL, 0, &m, &err), CE_EINVAL);
    cr_assert(strstr(err.message, "byte offset"), "%s", err.message);
    free(b.s);
  }
  /* binary MSH: a byte-order int that is neither 1 nor 1 byte-swapped, a
   * count that promises more nodes than the bytes hold, a cut inside the
   * elements, an element type without a fixed node count */
  {
    size_t n;
    char *b = ce_test_read_data("two_tets_v41_binary.msh", &n);
    ce_mesh_data m;
    ce_error err;
    char *c = malloc(n);
    memcpy(c, b, n);
    c[20] = 2; /* the int 1 after "4.1 1 8\n" */
    cr_assert_eq(ce_mesh_parse(c, n, CE_MESH_MSH, 0, &m, &err), CE_EINVAL);
    cr_assert(strstr(err.message, "MSH byte offset 24: expected the binary int 1 (byte order), found 0x00000002"), "%s",
              err.message);
    memcpy(c, b, n);
    const char *nodes = memmem(c, n, "$Nodes\n", 7);
    cr_assert(nodes);
    c[nodes - c + 7 + 8] = 100; /* node count 5 -> 100 */
    cr_assert_eq(ce_mesh_parse(c, n, CE_MESH_MSH, 0, &m, &err), CE_EINVAL);
    cr_assert(strstr(err.message, "node count 100 needs at least 3200 bytes"), "%s", err.message);
    cr_assert_eq(ce_mesh_parse(b, n - 30, CE_MESH_MSH, 0, &m, &err), CE_EINVAL);
    cr_assert(strstr(err.message, "MSH byte offset"), "%s", err.message);
    memcpy(c, b, n);
    const char *els = memmem(c, n, "$Elements\n", 10);
    cr_assert(els);
    c[els - c + 10 + 32 + 8] = 99; /* the first block's type 2 -> 99 */
    cr_assert_eq(ce_mesh_parse(c, n, CE_MESH_MSH, 0, &m, &err), CE_EINVAL);
    cr_assert(strstr(err.message, "element type 99 has no fixed node count"), "%s", err.message);
    free(c);
    free(b);
  }
  /* binary VTK cut inside the points */
  {
    size_t n;
    char *b = ce_test_read_data("two_tets_binary.vtk", &n);
    ce_mesh_data m;
    ce_error err;
    cr_assert_eq(ce_mesh_parse(b, 150, CE_MESH_VTK, 0, &m, &err), CE_EINVAL);
    cr_assert(strstr(err.message, "VTK byte offset"), "%s", err.message);
    free(b);
  }
}

/* ---- fuzz: truncations and mutations never crash ------------------------------------ */

static int positioned(const char *msg) {
  return strstr(msg, "line ") || strstr(msg, "byte offset") || strstr(msg, "cell ") || strstr(msg, "MSH: node tag");
}

Test(meshio, fuzz_truncated_and_mutated) {
  const char *files[10] = {"two_tets.vtk",    "two_tets_binary.vtk", "two_tets_v22.msh",        "two_tets_v41.msh",
                           "two_tets_v51.vtk", "cube.obj",            "cube_ascii.stl",          "cube_binary.stl",
                           "two_tets_v22_binary.msh", "two_tets_v41_binary.msh"};
  static const char junk[] = {'0', '9', '-', '.', ' ', '\n', '$', 'e', '/', 'x', (char)0xff, 0, '#', 'f', 'v'};
  uint64_t seed = 0x5eedf00dULL;
  int errors = 0, oks = 0;
  for (int k = 0; k < 10; k++) {
    size_t n;
    char *b = ce_test_read_data(files[k], &n);
    /* every truncation */
    for (size_t cut = 0; cut < n; cut++) {
      ce_mesh_data m;
      ce_error err;
      memset(&err, 0, sizeof err);
      ce_errno e = ce_mesh_parse(b, cut, CE_MESH_AUTO, 0, &m, &err);
      if (e == CE_OK) {
        oks++;
        for (int32_t i = 0; i < 4 * m.ntet; i++) cr_assert(m.tets[i] >= 0 && m.tets[i] < m.nv);
        for (int32_t i = 0; i < 3 * m.ntri; i++) cr_assert(m.tris[i] >= 0 && m.tris[i] < m.nv);
        ce_mesh_data_free(&m);
      } else {
        errors++;
        cr_assert(e == CE_EEMPTY || positioned(err.message), "%s cut at %zu: unpositioned error '%s'", files[k], cut,
                  err.message);
      }
    }
    /* 300 mutants of 1-3 bytes each */
    char *c = malloc(n);
    for (int r = 0; r < 300; r++) {
      memcpy(c, b, n);
      int nm = 1 + (int)(ce_test_rand(&seed) * 3);
      for (int j = 0; j < nm; j++) {
        size_t at = (size_t)(ce_test_rand(&seed) * (double)n);
        c[at] = ce_test_rand(&seed) < 0.7 ? junk[(int)(ce_test_rand(&seed) * sizeof junk)]
                                          : (char)(int)(ce_test_rand(&seed) * 256);
      }
      ce_mesh_data m;
      ce_error err;
      memset(&err, 0, sizeof err);
      ce_errno e = ce_mesh_parse(c, n, CE_MESH_AUTO, 0, &m, &err);
      if (e == CE_OK) {
        oks++;
        for (int32_t i = 0; i < 4 * m.ntet; i++) cr_assert(m.tets[i] >= 0 && m.tets[i] < m.nv);
        for (int32_t i = 0; i < 3 * m.ntri; i++) cr_assert(m.tris[i] >= 0 && m.tris[i] < m.nv);
        for (int32_t i = 0; i < 3 * m.nv; i++) cr_assert(isfinite(m.vertices[i]));
        ce_mesh_data_free(&m);
      } else {
        errors++;
        cr_assert(strlen(err.message) > 0);
      }
    }
    free(c);
    free(b);
  }
  cr_assert_gt(errors, 1000);
  cr_assert_gt(oks, 10);
}

/* Welding is O(n log n) whatever the layout: a flat plate in the plane
 * x = 0 (every vertex with the same x) welds at tol 0 and tol > 0; with
 * jittered duplicates, tol decides. */
Test(meshio, weld_flat_plate) {
  const int n = 150;
  int32_t nv = (n + 1) * (n + 1), nf = 2 * n * n;
  double *v = malloc((size_t)nv * 3 * sizeof *v);
  int32_t *t = malloc((size_t)nf * 3 * sizeof *t);
  for (int i = 0; i <= n; i++)
    for (int j = 0; j <= n; j++) {
      int32_t id = i * (n + 1) + j;
      v[3 * id] = 0;
      v[3 * id + 1] = 0.01 * i;
      v[3 * id + 2] = 0.01 * j;
    }
  int32_t f = 0;
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      int32_t a = i * (n + 1) + j, b = a + 1, c = a + n + 1, d = c + 1;
      t[3 * f] = a, t[3 * f + 1] = c, t[3 * f + 2] = d, f++;
      t[3 * f] = a, t[3 * f + 1] = d, t[3 * f + 2] = b, f++;
    }
  buf b = write_stl(v, t, nf, 1);
  double tols[2] = {0, 1e-4};
  for (int k = 0; k < 2; k++) {
    ce_mesh_data m;
    ce_error err;
    cr_assert_eq(ce_mesh_parse(b.s, b.n, CE_MESH_STL, tols[k], &m, &err), CE_OK, "%s", err.message);
    cr_assert_eq(m.nv, nv, "tol %g: %d vertices", tols[k], m.nv);
    cr_assert_eq(m.ntri, nf);
    cr_assert_eq(m.welded, 3 * nf - nv);
    ce_mesh_data_free(&m);
  }
  /* tol larger than the spacing merges neighbours: fewer vertices, dropped faces */
  ce_mesh_data m;
  cr_assert_eq(ce_mesh_parse(b.s, b.n, CE_MESH_STL, 0.015, &m, NULL), CE_OK);
  cr_assert_lt(m.nv, nv / 2);
  cr_assert_gt(m.dropped_faces, 0);
  ce_mesh_data_free(&m);
  free(b.s);
  free(v);
  free(t);
}
