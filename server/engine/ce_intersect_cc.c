/* ce_intersect_cc.c — PLACEHOLDER: replaced by its owner; returns "not implemented". */
#include "ce_internal.h"

ce_errno ce_intersect_tet_tet(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                              ce_builder *b, ce_counters *c) {
  (void)m; (void)n; (void)X_MN; (void)b; (void)c;
  return CE_EUNSUPPORTED;
}
