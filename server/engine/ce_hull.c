/* ce_hull.c — PLACEHOLDER: replaced by its owner; returns "not implemented". */
#include "ce_internal.h"
ce_errno ce_build_convex(const ce_shape *shape, const ce_props *props, ce_geometry **out,
                         ce_error *err) {
  (void)shape; (void)props; *out = NULL;
  return ce_fail(err, CE_EUNSUPPORTED, "convex: not implemented");
}
