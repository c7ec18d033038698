/* libFuzzer target: the engine's mesh-file parsers (ce_mesh_parse) on
 * untrusted bytes, as the daemon feeds them a RegisterGeometry's meshFile.
 *
 * Input: byte 0 picks the format (auto, VTK, MSH, OBJ, STL), byte 1 the
 * welding tolerance (none, exact duplicates, 1e-6, 1e-3); the rest is the
 * file. A parsed mesh is checked against the parser's promises: counts
 * that fit the arrays and indices inside the vertex range. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const double weld_tols[4] = {-1.0, 0.0, 1e-6, 1e-3};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  ce_mesh_format fmt = (ce_mesh_format)(data[0] % 5);
  double weld = weld_tols[data[1] % 4];
  ce_mesh_data m;
  ce_error err;
  ce_errno e = ce_mesh_parse(data + 2, size - 2, fmt, weld, &m, &err);
  if (e != CE_OK) {
    if (err.message[0] == '\0') abort(); /* every failure says why */
    return 0;
  }
  if (m.nv < 0 || m.ntri < 0 || m.ntet < 0) abort();
  for (int64_t i = 0; i < 3 * (int64_t)m.ntri; i++)
    if (m.tris[i] < 0 || m.tris[i] >= m.nv) abort();
  for (int64_t i = 0; i < 4 * (int64_t)m.ntet; i++)
    if (m.tets[i] < 0 || m.tets[i] >= m.nv) abort();
  volatile double sink = 0;
  for (int64_t i = 0; i < 3 * (int64_t)m.nv; i++) sink += m.vertices[i];
  (void)sink;
  ce_mesh_data_free(&m);
  return 0;
}
