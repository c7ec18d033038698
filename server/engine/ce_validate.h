/* ce_validate.h — checks of geometry inputs (ce_validate.c). */
#ifndef CE_VALIDATE_H
#define CE_VALIDATE_H

#include "ce_internal.h"

/* The range of a primitive's dimensions (radius, length, sizes, semi-axes,
 * a compliant half space's slab thickness), in metres: a nanometre to a million kilometres. Far outside it the cubes
 * and products of lengths in a mesh's volumes and fields leave double
 * precision (a sphere of radius 1e-110 or 1e200 has tets of zero or
 * infinite volume), so such a shape fails with CE_EINVAL naming the
 * dimension rather than an element of a mesh the caller never made. */
#define CE_PRIMITIVE_MIN_LENGTH 1e-9
#define CE_PRIMITIVE_MAX_LENGTH 1e9

/* Whether x lies in that range (NaN does not). */
static inline int ce_length_in_range(double x) { return x >= CE_PRIMITIVE_MIN_LENGTH && x <= CE_PRIMITIVE_MAX_LENGTH; }

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
