/* cd_status.c — request failures. */
#include "cd_status.h"

#include <stdarg.h>
#include <string.h>

#include "ce.h"

int cd_status_set(cd_status *st, int code, const char *field, const char *fmt, ...) {
  st->code = code;
  snprintf(st->field, sizeof st->field, "%s", field ? field : "");
  char body[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(body, sizeof body, fmt, ap);
  va_end(ap);
  if (field && *field) snprintf(st->message, sizeof st->message, "%s: %s", field, body);
  else snprintf(st->message, sizeof st->message, "%s", body);
  return code;
}

int cd_status_from_ce(int ce_code) {
  switch ((ce_errno)ce_code) {
    case CE_OK: return 0;
    case CE_ENOMEM:
    case CE_ELIMIT:
    case CE_EBYTES: return CD_EXHAUSTED;
    case CE_EUNSUPPORTED: return CD_UNIMPLEMENTED;
    default: return CD_INVALID;
  }
}
