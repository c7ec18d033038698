/* ce_jacobian6.c — the dual-number wrench evaluation with 6 partials (one
 * body's pose; ce_jacobian_eval.inc explains it; ce_jacobian.c uses it). */
#define CE_DUAL_N 6
#define CE_JAC_EVAL ce_jacobian_eval6
#include "ce_jacobian_eval.inc"
