/* ce_test_util.c — helpers shared by the engine's unit tests. */
#include <math.h>
#include <string.h>

#include "ce_test_util.h"

int ce_test_close(double a, double b, double rtol, double floor) {
  double s = fmax(fmax(fabs(a), fabs(b)), floor);
  return fabs(a - b) <= rtol * s;
}

ce_props ce_test_props(ce_compliance c, double modulus, double hint) {
  ce_props p;
  memset(&p, 0, sizeof p);
  p.compliance = c;
  p.modulus = modulus;
  p.hint = hint;
  p.slab_thickness = 0;
  return p;
}

ce_body ce_test_body(const ce_geometry *g, ce_quat q, ce_vec3 p) {
  ce_body b;
  memset(&b, 0, sizeof b);
  b.geometry = g;
  b.X_WB = ce_pose_from_quat(q, p);
  b.material = g ? g->material : (ce_material){0, 0};
  return b;
}

double ce_test_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) * (1.0 / 9007199254740992.0);
}

ce_quat ce_test_rand_quat(uint64_t *s) {
  double u1 = ce_test_rand(s), u2 = ce_test_rand(s), u3 = ce_test_rand(s);
  ce_quat q = {sqrt(1 - u1) * sin(2 * M_PI * u2), sqrt(1 - u1) * cos(2 * M_PI * u2),
               sqrt(u1) * sin(2 * M_PI * u3), sqrt(u1) * cos(2 * M_PI * u3)};
  return ce_quat_normalize(q);
}
