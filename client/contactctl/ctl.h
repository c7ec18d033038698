/* ctl.h — what the parts of contactctl share: the exit codes, the common
 * options, argument parsing, connecting, scene set-up and JSON output.
 * One command per file (ctl_<command>.c, entry point cmd_<command>);
 * contactctl.c holds main and the command table. */
#ifndef CONTACTCTL_CTL_H
#define CONTACTCTL_CTL_H

#include <cjson/cJSON.h>
#include <stddef.h>

#include "cc_client.h"
#include "cc_scene.h"

/* Exit codes (see MAIN_HELP in contactctl.c). */
enum { EX_OK = 0, EX_SERVER = 1, EX_USAGE = 2, EX_CONN = 3, EX_INPUT = 4, EX_NEGATIVE = 5 };

/* A stage that returns an exit code, or CTL_GO_ON to let the command go on. */
enum { CTL_GO_ON = -1 };

/* ---- common options (ctl_common.c) ---------------------------------------- */

typedef struct common {
  const char *addr;
  int timeout_ms;
  int json;
  char publish[65]; /* view: the scene name a query or stream publishes under ("" = none) */
} common;

double ctl_now_s(void);
/* Prints "contactctl: <fmt with arg> (try --help)"; returns EX_USAGE. */
int ctl_usage(const char *fmt, const char *arg);
/* Prints a client error; returns EX_SERVER (the server's answer) or EX_CONN. */
int ctl_report(const char *what, const cc_error *e);
int ctl_parse_double(const char *s, double *v);
int ctl_parse_long(const char *s, long *v);
int ctl_parse_triple(const char *s, double v[3]);
/* Common flag at argv[*i]: 1 = consumed, 0 = not common, < 0 = exit code. */
int ctl_common_flag(int argc, char **argv, int *i, common *co);
int ctl_connect_or_report(const common *co, cc_client **c);
const char *ctl_status_name(int v, char *buf, size_t n);

/* Connect and register a loaded scene (freed on failure). */
int ctl_scene_connect(const common *co, cc_scene *s, cc_client **c);
/* Load + connect + register; with co->publish set, also print the viewer URL. */
int ctl_scene_setup(const char *path, const common *co, cc_scene *s, cc_client **c);

/* ---- JSON output (ctl_json.c) --------------------------------------------- */

/* A double as the shortest decimal that reads back exactly. */
cJSON *ctl_jnum(double v);
/* Add a number to an object, as ctl_jnum writes it: every number contactctl
 * prints as JSON goes through here (never cJSON_AddNumberToObject). */
void ctl_jadd(cJSON *o, const char *key, double v);
cJSON *ctl_jarray(const double *a, size_t n);
const char *ctl_energy_name(int e);
/* A WrenchJacobian's four 6x6 matrices, in the order of CTL_JAC_NAMES. */
extern const char *const CTL_JAC_NAMES[4];
void ctl_jac_mats(const Contactd__V1__WrenchJacobian *j, const double *m[4], size_t n[4]);
cJSON *ctl_jpair(const cc_scene *s, const Contactd__V1__PairResult *r);
/* Prints the object on one line and deletes it. */
void ctl_print_json(cJSON *o);

/* ---- the commands: help text and entry point ------------------------------ */

extern const char *const PING_HELP, *const STATS_HELP, *const REGISTER_HELP, *const HAS_HELP,
    *const QUERY_HELP, *const STREAM_HELP, *const EXPORT_HELP, *const VIEW_HELP;
int cmd_ping(int argc, char **argv, common *co);
int cmd_stats(int argc, char **argv, common *co);
int cmd_register(int argc, char **argv, common *co);
int cmd_has(int argc, char **argv, common *co);
int cmd_query(int argc, char **argv, common *co);
int cmd_stream(int argc, char **argv, common *co);
int cmd_export(int argc, char **argv, common *co);
int cmd_view(int argc, char **argv, common *co);

#endif
