/* libFuzzer target: the terrain builder (ce_geometry_from_heightfield)
 * from bytes read as its inputs, then the reconstructed surface (C1 or C2
 * patches) evaluated at points across and beyond the grid.
 *
 * Input layout: nx, ny (one byte each, 0..63 after masking), continuity
 * (one byte), dx, dy, origin x, y, z (float64 each), then the heights
 * (float64, x fastest; missing ones are 0), then float64 pairs used as
 * evaluation points. Doubles are taken as they come: NaN, infinities and
 * huge values included. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ce.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct reader {
  const uint8_t *p;
  size_t n;
} reader;

static double rd_double(reader *r) {
  double v = 0;
  if (r->n >= sizeof v) {
    memcpy(&v, r->p, sizeof v);
    r->p += sizeof v, r->n -= sizeof v;
  } else {
    r->n = 0;
  }
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 3) return 0;
  int32_t nx = data[0] & 63, ny = data[1] & 63;
  int continuity = data[2] % 4; /* 1, 2 valid; 0, 3 must be refused */
  reader r = {data + 3, size - 3};
  double dx = rd_double(&r), dy = rd_double(&r);
  ce_vec3 origin = {rd_double(&r), rd_double(&r), rd_double(&r)};
  size_t count = (size_t)nx * (size_t)ny;
  double *h = calloc(count ? count : 1, sizeof *h);
  if (!h) return 0;
  for (size_t i = 0; i < count; i++) h[i] = rd_double(&r);
  ce_props props;
  memset(&props, 0, sizeof props);
  props.compliance = CE_RIGID;
  props.modulus = INFINITY;
  props.hint = 0.1;
  ce_geometry *g = NULL;
  ce_error err;
  ce_errno e = ce_geometry_from_heightfield(h, nx, ny, dx, dy, origin, continuity, &props, &g, &err);
  free(h);
  if (e != CE_OK) {
    if (g || !err.message[0]) abort();
    return 0;
  }
  ce_vec3 lo, hi;
  if (ce_heightfield_extent(g, &lo, &hi, &err) == CE_OK) {
    /* Points spread over the extent and a margin around it. */
    for (int k = 0; k < 16; k++) {
      double u = rd_double(&r), v = rd_double(&r);
      if (!isfinite(u) || !isfinite(v)) u = (k % 4) / 3.0, v = (k / 4) / 3.0;
      u = fmod(fabs(u), 1.5) - 0.25, v = fmod(fabs(v), 1.5) - 0.25;
      ce_heightfield_point pt;
      (void)ce_heightfield_eval(g, lo.x + u * (hi.x - lo.x), lo.y + v * (hi.y - lo.y), &pt, &err);
    }
  }
  ce_geometry_info info;
  ce_geometry_get_info(g, &info);
  ce_geometry_free(g);
  return 0;
}
