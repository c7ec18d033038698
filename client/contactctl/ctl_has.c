/* ctl_has.c — contactctl has: which geometry ids the server holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

const char *const HAS_HELP =
    "usage: contactctl has ID... [--json]\n"
    "\n"
    "Print `present` or `missing` for each geometry id. Exit code 5 if any is missing.\n";

int cmd_has(int argc, char **argv, common *co) {
  const char **ids = calloc((size_t)argc + 1, sizeof *ids);
  size_t n = 0;
  for (int i = 0; i < argc; i++) {
    int r = ctl_common_flag(argc, argv, &i, co);
    if (r < 0) {
      free(ids);
      return -r;
    }
    if (r) continue;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(HAS_HELP, stdout);
      free(ids);
      return EX_OK;
    }
    if (argv[i][0] == '-') {
      free(ids);
      return ctl_usage("has: unknown option \"%s\"", argv[i]);
    }
    ids[n++] = argv[i];
  }
  if (!n) {
    free(ids);
    return ctl_usage("has: give at least one geometry id%s", "");
  }
  cc_client *c;
  int rc = ctl_connect_or_report(co, &c);
  if (rc) {
    free(ids);
    return rc;
  }
  Contactd__V1__HasGeometryReply *rep;
  cc_error e;
  if (cc_has(c, ids, n, &rep, &e)) {
    free(ids);
    cc_close(c);
    return ctl_report("has", &e);
  }
  cJSON *o = co->json ? cJSON_CreateObject() : NULL;
  cJSON *pres = o ? cJSON_AddArrayToObject(o, "present") : NULL;
  cJSON *miss = o ? cJSON_AddArrayToObject(o, "missing") : NULL;
  for (size_t i = 0; i < n; i++) {
    int missing = 0;
    for (size_t k = 0; k < rep->n_missing; k++) missing |= strcmp(rep->missing[k], ids[i]) == 0;
    if (o) cJSON_AddItemToArray(missing ? miss : pres, cJSON_CreateString(ids[i]));
    else printf("%s %s\n", ids[i], missing ? "missing" : "present");
  }
  if (o) ctl_print_json(o);
  rc = rep->n_missing ? EX_NEGATIVE : EX_OK;
  cc_free(rep);
  free(ids);
  cc_close(c);
  return rc;
}
