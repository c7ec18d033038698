/* ce_progress.c — a geometry build's progress reports and cancellation
 * point (ce_props.progress): each step of a build reports fractions of its
 * own share [lo, hi] of the whole, so the caller sees one rising fraction
 * in [0, 1] for stage "geometry". */
#include "ce_progress.h"
#include "ce_internal.h"

ce_buildprog ce_buildprog_of(const ce_props *props) {
  ce_buildprog p = {props ? props->progress : NULL, props ? props->progress_user : NULL, 0, 1};
  return p;
}

ce_buildprog ce_buildprog_part(const ce_buildprog *p, double lo, double hi) {
  if (!p) return (ce_buildprog){NULL, NULL, 0, 1};
  ce_buildprog q = *p;
  q.lo = p->lo + (p->hi - p->lo) * lo;
  q.hi = p->lo + (p->hi - p->lo) * hi;
  return q;
}

static int buildprog_forward(void *user, double f, const char *stage) {
  const ce_buildprog *p = user;
  return p->fn(p->user, p->lo + (p->hi - p->lo) * f, stage);
}

ce_props ce_props_reporting_into(const ce_props *props, const ce_buildprog *p) {
  ce_props q = *props;
  q.progress = p->fn ? buildprog_forward : NULL;
  q.progress_user = p->fn ? (void *)p : NULL;
  return q;
}

ce_errno ce_buildprog_report(const ce_buildprog *p, double f, ce_error *err) {
  if (p && p->fn && p->fn(p->user, p->lo + (p->hi - p->lo) * f, "geometry"))
    return ce_fail(err, CE_ECANCELED, "geometry: build cancelled");
  return CE_OK;
}
