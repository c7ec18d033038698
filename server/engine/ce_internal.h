/* ce_internal.h — the basics every engine file shares: the public API,
 * the math, and the error helper. Each subsystem's declarations live in a
 * header of its own (ce_arena.h, ce_mesh.h, ce_bvh.h, ce_geometry.h,
 * ce_walk.h, ce_surface.h, ce_intersect.h, ce_passes.h, ce_jacobian.h,
 * ce_point_contact.h, ce_terrain.h, ...). Not installed: only ce.h is
 * public. */
#ifndef CE_INTERNAL_H
#define CE_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "ce.h"
#include "ce_math.h"

/* The engine allocates with the C library's malloc, calloc and realloc
 * and checks every one: tests/engine/test_alloc_failure.c links it with
 * -Wl,--wrap to make them fail on request (tests/common/td_faults.c). */

/* Fill *err (may be NULL) with code and a printf-style message; returns code. */
ce_errno ce_fail(ce_error *err, ce_errno code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* CE_INTERNAL_H */
