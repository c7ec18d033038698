/* ce_surface.c — PLACEHOLDER: replaced by its owner; returns "not implemented". */
#include "ce_internal.h"

ce_errno ce_builder_init(ce_builder *b, ce_arena *arena) { (void)b; (void)arena; return CE_EUNSUPPORTED; }
int32_t ce_builder_add_vertex(ce_builder *b, ce_vec3 x, double p) { (void)b; (void)x; (void)p; return -1; }
ce_errno ce_builder_add_face(ce_builder *b, const int32_t *ids, int n, ce_vec3 normal,
                             ce_vec3 grad_m, ce_vec3 grad_n, int32_t elem_m, int32_t elem_n) {
  (void)b; (void)ids; (void)n; (void)normal; (void)grad_m; (void)grad_n; (void)elem_m; (void)elem_n;
  return CE_EUNSUPPORTED;
}
ce_errno ce_builder_add_polygon(ce_builder *b, const ce_vec3 *x, const double *p, int n,
                                ce_vec3 normal, ce_vec3 grad_m, ce_vec3 grad_n,
                                int32_t elem_m, int32_t elem_n) {
  (void)b; (void)x; (void)p; (void)n; (void)normal; (void)grad_m; (void)grad_n; (void)elem_m; (void)elem_n;
  return CE_EUNSUPPORTED;
}
ce_errno ce_builder_finish(ce_builder *b, const ce_pose *X_WM, int m_is_a, int m_compliant,
                           int n_compliant, ce_representation rep, ce_surface *out) {
  (void)b; (void)X_WM; (void)m_is_a; (void)m_compliant; (void)n_compliant; (void)rep; (void)out;
  return CE_EUNSUPPORTED;
}
