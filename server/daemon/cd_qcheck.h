/* cd_qcheck.h — checks of a query's wire input (cd_qcheck.c). Each fills
 * *st naming field and returns its code on failure, else 0. */
#ifndef CD_QCHECK_H
#define CD_QCHECK_H

#include "cd_status.h"
#include "ce.h"

/* Where one body's input lies: element `index` of the list `list`
 * ("contactQuery.bodies"), the body's id and name (NULL or "": none). Only
 * a failed check formats it into text, so checking a body that is fine
 * costs no formatting. */
typedef struct cd_qwhere {
  const char *list;
  size_t index;
  uint32_t body_id;
  const char *name;
} cd_qwhere;
/* "<list>[<index>].<member>" into out[n]. */
void cd_qcheck_where_field(const cd_qwhere *w, const char *member, char *out, size_t n);
/* The body as messages name it, "body 7" or "body 7 (gripper)", into out[n]. */
void cd_qcheck_where_body(const cd_qwhere *w, char *out, size_t n);

/* Pose / velocity from the wire with the checks above; a failure names
 * the body and its field (<list>[<index>].pose..., .velocity). */
int cd_qcheck_pose_from_msg(const Contactd__V1__Pose *p, ce_pose *out, const cd_qwhere *w, cd_status *st);
int cd_qcheck_velocity_from_msg(const Contactd__V1__SpatialVelocity *v, ce_spatial_velocity *out, const cd_qwhere *w,
                         cd_status *st);

/* ce_contact_model for a wire ContactModel, or -1 if unknown. */
int cd_qcheck_model_from_wire(int m);

#endif
