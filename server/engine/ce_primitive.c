/* ce_primitive.c — PLACEHOLDER: replaced by its owner; returns "not implemented". */
#include "ce_internal.h"

ce_errno ce_geometry_from_shape(const ce_shape *shape, const ce_props *props,
                                ce_geometry **out, ce_error *err) {
  (void)shape; (void)props; *out = NULL;
  return ce_fail(err, CE_EUNSUPPORTED, "primitives: not implemented");
}
