/* cd_qcheck.h — checks of a query's wire input (cd_qcheck.c). Each fills
 * *st naming field and returns its code on failure, else 0. */
#ifndef CD_QCHECK_H
#define CD_QCHECK_H

#include "cd_status.h"
#include "ce.h"

/* Pose / velocity from the wire with the checks above; `what` names the
 * body in messages. */
int cd_pose_from_msg(const Contactd__V1__Pose *p, ce_pose *out, const char *field, const char *what,
                     cd_status *st);
int cd_velocity_from_msg(const Contactd__V1__SpatialVelocity *v, ce_spatial_velocity *out, const char *field,
                         const char *what, cd_status *st);

/* ce_contact_model for a wire ContactModel, or -1 if unknown. */
int cd_model_from_wire(int m);

#endif
