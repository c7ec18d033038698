/* cd_meshfile.c — mesh files from RegisterGeometry.meshFile, parsed by the
 * engine (ce_mesh_parse: VTK, MSH, OBJ, STL); the daemon only maps formats,
 * limits and errors. */
#include "cd_meshfile.h"

#include <stdlib.h>
#include <string.h>

#include "contactd.pb-c.h"
#include "ce.h"

#define F "registerGeometry.meshFile"

void cd_meshfile_free(cd_mesh *m) {
  free(m->vertices);
  free(m->elements);
  memset(m, 0, sizeof *m);
}

/* The formats accepted: the wire's, the engine's, the capability's name
 * (HelloReply's "mesh_file:<name>" list is made from this table). */
static const struct {
  int wire;
  ce_mesh_format cf;
  const char *name;
} formats[] = {
    {CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_OBJ, CE_MESH_OBJ, "obj"},
    {CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_STL, CE_MESH_STL, "stl"},
    {CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_VTK, CE_MESH_VTK, "vtk"},
    {CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_MSH, CE_MESH_MSH, "msh"},
};

const char *cd_meshfile_format_name(size_t i) {
  return i < sizeof formats / sizeof *formats ? formats[i].name : NULL;
}

int cd_meshfile_parse(const uint8_t *data, size_t len, int format, const char *name, uint64_t maxe, cd_mesh *out,
                      cd_status *st) {
  memset(out, 0, sizeof *out);
  if (!name || !*name) name = "mesh file";
  ce_mesh_format cf = CE_MESH_AUTO;
  int known = format == CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_UNSPECIFIED;
  for (size_t i = 0; !known && i < sizeof formats / sizeof *formats; i++)
    if (formats[i].wire == format) {
      cf = formats[i].cf;
      known = 1;
    }
  if (format == CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_PLY)
    return cd_status_set(st, CD_UNIMPLEMENTED, F ".format", "%s: PLY files are not supported (use OBJ, STL, VTK or MSH)",
                         name);
  if (!known) return cd_status_set(st, CD_INVALID, F ".format", "unknown format %d", format);
  ce_mesh_data m;
  ce_error err;
  memset(&err, 0, sizeof err);
  ce_errno e = ce_mesh_parse(data, len, cf, 0.0, &m, &err);
  if (e != CE_OK)
    return cd_status_set(st, cd_status_from_ce(e), F ".data", "%s: %s", name,
                         err.message[0] ? err.message : ce_strerror(e));
  int tets = m.ntet > 0;
  int32_t ne = tets ? m.ntet : m.ntri;
  if (m.nv == 0 || ne == 0) {
    ce_mesh_data_free(&m);
    return cd_status_set(st, CD_INVALID, F ".data", "%s: no vertices or no %s", name, tets ? "tetrahedra" : "faces");
  }
  if ((uint64_t)ne > maxe || (uint64_t)m.nv > maxe) {
    ce_mesh_data_free(&m);
    return cd_status_set(st, CD_EXHAUSTED, F ".data", "%s: %d vertices / %d elements exceed the limit of %llu (max_mesh_elements)",
                         name, (int)m.nv, (int)ne, (unsigned long long)maxe);
  }
  out->vertices = m.vertices;
  out->nv = m.nv;
  out->elements = tets ? m.tets : m.tris;
  out->ne = ne;
  out->per_element = tets ? 4 : 3;
  if (tets) free(m.tris);
  else free(m.tets);
  return 0;
}
