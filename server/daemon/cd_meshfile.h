/* cd_meshfile.h — mesh files sent in RegisterGeometry.meshFile: Wavefront
 * OBJ and STL (ASCII or binary) surfaces, legacy-VTK (ASCII or binary) and
 * Gmsh MSH 2.2 / 4.1 tetrahedra, all parsed by the engine (ce_mesh_parse).
 * PLY is answered with UNIMPLEMENTED. */
#ifndef CD_MESHFILE_H
#define CD_MESHFILE_H

#include <stddef.h>
#include <stdint.h>

#include "cd_status.h"

typedef struct cd_mesh {
  double *vertices;   /* 3 * nv */
  int32_t nv;
  int32_t *elements;  /* per_element * ne */
  int32_t ne;
  int per_element;    /* 3 = triangles, 4 = tetrahedra */
} cd_mesh;

/* format: Contactd__V1__MeshFormat (0 = detect). Errors name the file, the
 * line or byte offset, and reach the client as registerGeometry.meshFile.data. */
int cd_meshfile_parse(const uint8_t *data, size_t len, int format, const char *name, uint64_t max_elements,
                      cd_mesh *out, cd_status *st);
void cd_meshfile_free(cd_mesh *m);
/* The i-th accepted format's short name ("obj", "stl", "vtk", "msh"), NULL
 * past the last: the capabilities "mesh_file:<name>" of the Hello reply. */
const char *cd_meshfile_format_name(size_t i);

#endif
