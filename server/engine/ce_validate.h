/* ce_validate.h — checks of geometry inputs (ce_validate.c). */
#ifndef CE_VALIDATE_H
#define CE_VALIDATE_H

#include "ce_internal.h"
#include "ce_limits.h"

/* Whether x lies in [CE_LIMIT_MIN_LENGTH, CE_LIMIT_MAX_LENGTH] (NaN does not). */
static inline int ce_length_in_range(double x) { return x >= CE_LIMIT_MIN_LENGTH && x <= CE_LIMIT_MAX_LENGTH; }

/* CE_OK, or CE_EINVAL naming "<shape> <field>": not finite and > 0, or
 * outside the range. */
ce_errno ce_check_length(const char *shape, const char *field, double x, ce_error *err);

/* Check the properties every geometry shares: compliance is CE_RIGID or
 * CE_COMPLIANT; a compliant modulus is finite and > 0; material values are
 * finite and >= 0; with need_hint, the hint is finite and > 0; with
 * need_slab, the slab thickness is finite and > 0. */
ce_errno ce_props_check(const ce_props *props, int need_hint, int need_slab,
                        ce_error *err);
/* CE_OK, or CE_EINVAL "<shape> <field> must be finite and > 0". */
ce_errno ce_check_dim(const char *shape, const char *field, double x, ce_error *err);

#endif /* CE_VALIDATE_H */
