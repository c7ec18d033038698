/* ce_error.c — names and messages of the CE_ERRNO_MAP table. */
#include <stdarg.h>
#include <stdio.h>

#include "ce_internal.h"

const char *ce_strerror(ce_errno code) {
  switch (code) {
#define CE_XX_MSG(name, msg) \
  case CE_##name:            \
    return msg;
    CE_ERRNO_MAP(CE_XX_MSG)
#undef CE_XX_MSG
    default:
      return "unknown error";
  }
}

const char *ce_errname(ce_errno code) {
  switch (code) {
#define CE_XX_NAME(name, msg) \
  case CE_##name:             \
    return "CE_" #name;
    CE_ERRNO_MAP(CE_XX_NAME)
#undef CE_XX_NAME
    default:
      return "CE_UNKNOWN";
  }
}

ce_errno ce_fail(ce_error *err, ce_errno code, const char *fmt, ...) {
  if (err) {
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return code;
}
