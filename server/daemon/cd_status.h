/* cd_status.h — a request's failure: gRPC canonical code, the offending
 * field's path (proto3 JSON names, e.g. "contactQuery.bodies[2].pose") and a
 * message naming the element. */
#ifndef CD_STATUS_H
#define CD_STATUS_H

#include <stdio.h>

#include "contactd.pb-c.h"

typedef struct cd_status {
  int code; /* Contactd__V1__ErrorCode; 0 = OK */
  char field[256];
  char message[768];
} cd_status;

#define CD_INVALID CONTACTD__V1__ERROR_CODE__INVALID_ARGUMENT
#define CD_NOT_FOUND CONTACTD__V1__ERROR_CODE__NOT_FOUND
#define CD_EXHAUSTED CONTACTD__V1__ERROR_CODE__RESOURCE_EXHAUSTED
#define CD_PRECONDITION CONTACTD__V1__ERROR_CODE__FAILED_PRECONDITION
#define CD_UNIMPLEMENTED CONTACTD__V1__ERROR_CODE__UNIMPLEMENTED
#define CD_INTERNAL CONTACTD__V1__ERROR_CODE__INTERNAL
#define CD_UNAVAILABLE CONTACTD__V1__ERROR_CODE__UNAVAILABLE

/* Fill *st; returns code. The message is prefixed with the field path. */
int cd_status_set(cd_status *st, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* gRPC code for an engine error. */
int cd_status_from_ce(int ce_code);

#endif
