/* ce_material.c — combination laws for a contacting pair (Drake's documentation, Modeling Compliant Contact).
 * A rigid side has modulus INFINITY. */
#include <math.h>

#include "ce_internal.h"

/* Series combination E* = Ea Eb / (Ea + Eb); a rigid side leaves the other. */
double ce_combine_modulus(double ea, double eb) {
  if (isinf(ea) && isinf(eb)) return INFINITY;
  if (isinf(ea)) return eb;
  if (isinf(eb)) return ea;
  return ea * eb / (ea + eb);
}

/* d = Eb/(Ea+Eb) da + Ea/(Ea+Eb) db: the softer side's dissipation dominates,
 * and a rigid side contributes nothing. */
double ce_combine_dissipation(double ea, double da, double eb, double db) {
  if (isinf(ea) && isinf(eb)) return 0.5 * (da + db);
  if (isinf(ea)) return db;
  if (isinf(eb)) return da;
  return (eb * da + ea * db) / (ea + eb);
}

/* mu = 2 mua mub / (mua + mub); zero when either side is frictionless. */
double ce_combine_friction(double mua, double mub) {
  if (mua + mub <= 0) return 0;
  return 2 * mua * mub / (mua + mub);
}
