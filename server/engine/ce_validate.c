/* ce_validate.c — the input checks every geometry build shares: its
 * properties (ce_props) and the dimensions of shapes, each error naming the
 * field. */
#include <math.h>

#include "ce_validate.h"
#include "ce_internal.h"
#include "ce_limits.h"

static ce_errno check_positive(const char *name, double x, ce_error *err) {
  if (!isfinite(x)) return ce_fail(err, CE_ENONFINITE, "%s must be finite and > 0 (got %g)", name, x);
  if (!(x > 0)) return ce_fail(err, CE_EINVAL, "%s must be finite and > 0 (got %g)", name, x);
  return CE_OK;
}

static ce_errno check_nonnegative(const char *name, double x, ce_error *err) {
  if (!isfinite(x)) return ce_fail(err, CE_ENONFINITE, "%s must be finite and >= 0 (got %g)", name, x);
  if (!(x >= 0)) return ce_fail(err, CE_EINVAL, "%s must be finite and >= 0 (got %g)", name, x);
  return CE_OK;
}

ce_errno ce_props_check(const ce_props *props, int need_hint, int need_slab, ce_error *err) {
  ce_errno e;
  if (!props) return ce_fail(err, CE_EINVAL, "props is NULL");
  if (props->compliance != CE_RIGID && props->compliance != CE_COMPLIANT)
    return ce_fail(err, CE_EINVAL, "compliance must be CE_RIGID (1) or CE_COMPLIANT (2) (got %d)",
                   (int)props->compliance);
  if (props->compliance == CE_COMPLIANT && (e = check_positive("modulus", props->modulus, err)) != CE_OK)
    return e;
  if ((e = check_nonnegative("dissipation", props->material.dissipation, err)) != CE_OK) return e;
  if ((e = check_nonnegative("friction", props->material.friction, err)) != CE_OK) return e;
  if (need_hint && (e = check_positive("hint", props->hint, err)) != CE_OK) return e;
  if (need_slab && (e = check_positive("slab thickness", props->slab_thickness, err)) != CE_OK) return e;
  /* the builders that take a margin (ce_margin_take) take it off the
   * props before building; every other one refuses it here */
  if (props->margin != 0)
    return ce_fail(err, CE_EINVAL,
                   "margin %g: only compliant geometries with a tet mesh take a margin (compliant primitives but the "
                   "half space, tet meshes, surface meshes), not this %s geometry",
                   props->margin, props->compliance == CE_COMPLIANT ? "compliant" : "rigid");
  return CE_OK;
}

ce_errno ce_check_dim(const char *shape, const char *field, double x, ce_error *err) {
  if (isfinite(x) && x > 0) return CE_OK;
  return ce_fail(err, CE_EINVAL, "%s %s must be finite and > 0 (got %g)", shape, field, x);
}

ce_errno ce_check_length(const char *shape, const char *field, double x, ce_error *err) {
  ce_errno e = ce_check_dim(shape, field, x, err);
  if (e || ce_length_in_range(x)) return e;
  return ce_fail(err, CE_EINVAL, "%s %s %g m is outside the range of primitive dimensions [%g, %g] m", shape,
                 field, x, CE_LIMIT_MIN_LENGTH, CE_LIMIT_MAX_LENGTH);
}
