/* libFuzzer target: the convex point-set builder (CE_SHAPE_CONVEX through
 * ce_geometry_from_shape: quickhull, then a rigid surface or a compliant
 * tet mesh) from bytes read as its points.
 *
 * Input layout: byte 0 bit 0 picks compliant, bits 1-3 the resolution
 * hint as a fraction of the points' extent (1/2 .. 1/9); the rest is
 * float64 triples, at most 512 points. Doubles are taken as they come:
 * NaN, infinities, huge and duplicate points included. A compliant build
 * is capped in bytes, as the daemon caps it with cache_bytes. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_POINTS 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int compliant = data[0] & 1;
  int div = 2 + ((data[0] >> 1) & 7);
  size_t np = (size - 1) / 24;
  if (np > MAX_POINTS) np = MAX_POINTS;
  double *pts = malloc((np ? np : 1) * 3 * sizeof *pts);
  if (!pts) return 0;
  memcpy(pts, data + 1, np * 24);
  double lo = INFINITY, hi = -INFINITY;
  for (size_t i = 0; i < 3 * np; i++)
    if (isfinite(pts[i])) lo = fmin(lo, pts[i]), hi = fmax(hi, pts[i]);
  double extent = hi > lo ? hi - lo : 1.0;
  ce_shape shape;
  memset(&shape, 0, sizeof shape);
  shape.type = CE_SHAPE_CONVEX;
  shape.points = pts;
  shape.npoints = (int32_t)np;
  ce_props props;
  memset(&props, 0, sizeof props);
  props.compliance = compliant ? CE_COMPLIANT : CE_RIGID;
  props.modulus = compliant ? 1e6 : INFINITY;
  props.hint = extent / div;
  props.max_bytes = (size_t)16 << 20;
  ce_geometry *g = NULL;
  ce_error err;
  ce_errno e = ce_geometry_from_shape(&shape, &props, &g, &err);
  free(pts);
  if (e != CE_OK) {
    if (g || !err.message[0]) abort();
    return 0;
  }
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  if (info.vertices < 4) abort(); /* a hull of a solid has at least 4 */
  ce_geometry_free(g);
  return 0;
}
