/* ce_wrench.c — PLACEHOLDER: replaced by its owner; returns "not implemented". */
#include "ce_internal.h"

ce_errno ce_wrench_compute(const ce_surface *s, const ce_body *a, const ce_body *b,
                           const ce_material *combined, double stiction_tolerance,
                           ce_arena *arena, ce_result *r, ce_face_forces *ff) {
  (void)s; (void)a; (void)b; (void)combined; (void)stiction_tolerance; (void)arena; (void)r; (void)ff;
  return CE_EUNSUPPORTED;
}
