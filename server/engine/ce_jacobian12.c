/* ce_jacobian12.c — the dual-number wrench evaluation with 12 partials
 * (ce_jacobian_eval.inc explains it; ce_jacobian.c uses it). */
#define CE_DUAL_N 12
#define CE_JAC_EVAL ce_jacobian_eval12
#include "ce_jacobian_eval.inc"
