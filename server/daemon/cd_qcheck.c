/* cd_qcheck.c — checks of a query's wire input: finite positions,
 * quaternions within the tolerance of unit length, finite velocities,
 * known contact models. */
#include "cd_qcheck.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cd_limits.h"

static int finite3(const Contactd__V1__Vec3 *v) {
  return !v || (isfinite(v->x) && isfinite(v->y) && isfinite(v->z));
}

void cd_qcheck_where_field(const cd_qwhere *w, const char *member, char *out, size_t n) {
  snprintf(out, n, "%s[%zu].%s", w->list, w->index, member);
}

void cd_qcheck_where_body(const cd_qwhere *w, char *out, size_t n) {
  if (w->name && w->name[0]) snprintf(out, n, "body %u (%.40s)", w->body_id, w->name);
  else snprintf(out, n, "body %u", w->body_id);
}

int cd_qcheck_pose_from_msg(const Contactd__V1__Pose *p, ce_pose *out, const cd_qwhere *w, cd_status *st) {
  ce_quat q = {1, 0, 0, 0};
  ce_vec3 x = {0, 0, 0};
  char f[192], what[96];
  if (p && p->position) {
    if (!finite3(p->position)) {
      cd_qcheck_where_field(w, "pose.position", f, sizeof f);
      cd_qcheck_where_body(w, what, sizeof what);
      return cd_status_set(st, CD_INVALID, f, "%s: position (%g, %g, %g) is not finite", what, p->position->x,
                           p->position->y, p->position->z);
    }
    x = (ce_vec3){p->position->x, p->position->y, p->position->z};
  }
  if (p && p->orientation) {
    const Contactd__V1__Quat *o = p->orientation;
    if (!(isfinite(o->w) && isfinite(o->x) && isfinite(o->y) && isfinite(o->z))) {
      cd_qcheck_where_field(w, "pose.orientation", f, sizeof f);
      cd_qcheck_where_body(w, what, sizeof what);
      return cd_status_set(st, CD_INVALID, f, "%s: quaternion (%g, %g, %g, %g) is not finite", what, o->w, o->x,
                           o->y, o->z);
    }
    double n = sqrt(o->w * o->w + o->x * o->x + o->y * o->y + o->z * o->z);
    if (!(fabs(n - 1) <= CD_QUAT_TOLERANCE)) {
      cd_qcheck_where_field(w, "pose.orientation", f, sizeof f);
      cd_qcheck_where_body(w, what, sizeof what);
      return cd_status_set(st, CD_INVALID, f,
                           "%s: quaternion norm %.6g is not within %g of 1 (quaternions are normalised only "
                           "when |q| is in [%g, %g])",
                           what, n, CD_QUAT_TOLERANCE, 1 - CD_QUAT_TOLERANCE, 1 + CD_QUAT_TOLERANCE);
    }
    q = (ce_quat){o->w / n, o->x / n, o->y / n, o->z / n};
  }
  *out = ce_pose_from_quat(q, x);
  return 0;
}

int cd_qcheck_velocity_from_msg(const Contactd__V1__SpatialVelocity *v, ce_spatial_velocity *out, const cd_qwhere *w,
                         cd_status *st) {
  memset(out, 0, sizeof *out);
  if (!v) return 0;
  if (!finite3(v->angular) || !finite3(v->linear)) {
    char f[192], what[96];
    cd_qcheck_where_field(w, "velocity", f, sizeof f);
    cd_qcheck_where_body(w, what, sizeof what);
    return cd_status_set(st, CD_INVALID, f, "%s: spatial velocity is not finite", what);
  }
  if (v->angular) out->w = (ce_vec3){v->angular->x, v->angular->y, v->angular->z};
  if (v->linear) out->v = (ce_vec3){v->linear->x, v->linear->y, v->linear->z};
  return 0;
}

int cd_qcheck_model_from_wire(int m) {
  switch (m) {
    case CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_UNSPECIFIED:
    case CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_HYDROELASTIC_WITH_FALLBACK:
      return CE_MODEL_HYDROELASTIC_WITH_FALLBACK;
    case CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_HYDROELASTIC: return CE_MODEL_HYDROELASTIC;
    case CONTACTD__V1__CONTACT_MODEL__CONTACT_MODEL_POINT: return CE_MODEL_POINT;
    default: return -1;
  }
}
