/* ce_point.c — PLACEHOLDER: replaced by its owner; returns "not implemented". */
#include "ce_internal.h"

ce_errno ce_points_compute(const ce_surface *s, ce_arena *arena, ce_result *r) {
  (void)s; (void)arena; (void)r;
  return CE_EUNSUPPORTED;
}
