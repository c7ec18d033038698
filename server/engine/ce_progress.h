/* ce_progress.h — progress reports of a geometry build (ce_progress.c). */
#ifndef CE_PROGRESS_H
#define CE_PROGRESS_H

#include "ce_internal.h"

/* A geometry build's progress callback and cancellation point
 * (ce_props.progress), stage "geometry", with the fractions of one step
 * mapped into that step's share [lo, hi] of the whole build. fn NULL: no
 * reports. */
typedef struct ce_buildprog {
  ce_progress_fn fn;
  void *user;
  double lo, hi;
} ce_buildprog;

/* The whole build, [0, 1], of props' callback. */
ce_buildprog ce_buildprog_of(const ce_props *props);
/* The step [lo, hi] (fractions of p's share) of p; p may be NULL. */
ce_buildprog ce_buildprog_part(const ce_buildprog *p, double lo, double hi);
/* Report fraction f of p's share (p may be NULL): CE_ECANCELED ("geometry:
 * build cancelled") when the callback asks the build to stop. */
ce_errno ce_buildprog_report(const ce_buildprog *p, double f, ce_error *err);
/* props whose progress callback reports into *p (which must outlive the
 * build): for a step that is a whole build of its own (ce_pieces.c). */
ce_props ce_props_reporting_into(const ce_props *props, const ce_buildprog *p);

#endif /* CE_PROGRESS_H */
