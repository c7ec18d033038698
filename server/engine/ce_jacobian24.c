/* ce_jacobian24.c — the dual-number wrench evaluation with 24 partials
 * (ce_jacobian_eval.inc explains it; ce_jacobian.c uses it). */
#define CE_DUAL_N 24
#define CE_JAC_EVAL ce_jacobian_eval24
#include "ce_jacobian_eval.inc"
