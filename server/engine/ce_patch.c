/* ce_patch.c — PLACEHOLDER: replaced by its owner; returns "not implemented". */
#include "ce_internal.h"

ce_errno ce_patches_compute(ce_surface *s, const ce_geometry *ga, const ce_geometry *gb,
                            const ce_face_forces *ff, ce_arena *arena, ce_result *r) {
  (void)s; (void)ga; (void)gb; (void)ff; (void)arena; (void)r;
  return CE_EUNSUPPORTED;
}
