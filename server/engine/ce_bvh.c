/* ce_bvh.c — PLACEHOLDER: replaced by its owner; returns "not implemented". */
#include "ce_internal.h"

ce_errno ce_bvh_build(ce_bvh *bvh, int32_t nelem, int k, const int32_t *elems,
                      const ce_vec3 *v, const double *pressure, ce_error *err) {
  (void)nelem; (void)k; (void)elems; (void)v; (void)pressure;
  bvh->nnodes = 0; bvh->nodes = NULL; bvh->nelem = 0; bvh->order = NULL;
  return ce_fail(err, CE_EUNSUPPORTED, "bvh: not implemented");
}
void ce_bvh_free(ce_bvh *bvh) { (void)bvh; }
size_t ce_bvh_bytes(const ce_bvh *bvh) { (void)bvh; return 0; }
ce_errno ce_bvh_collide(const ce_bvh *bvh_a, const ce_bvh *bvh_b, const ce_pose *X_AB,
                        int use_pressure, ce_arena *arena, ce_buf *out) {
  (void)bvh_a; (void)bvh_b; (void)X_AB; (void)use_pressure; (void)arena; (void)out;
  return CE_EUNSUPPORTED;
}
ce_errno ce_bvh_collide_plane(const ce_bvh *bvh, ce_vec3 n, double d, int plane_only,
                              ce_arena *arena, ce_buf *out) {
  (void)bvh; (void)n; (void)d; (void)plane_only; (void)arena; (void)out;
  return CE_EUNSUPPORTED;
}
