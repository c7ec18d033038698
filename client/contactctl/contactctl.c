/* contactctl — command line client for contactd (see client/README.md):
 * main and the command table; each command lives in ctl_<command>.c.
 *
 * Exit codes:
 *   0  success
 *   1  the server answered with an error (its code and message on stderr)
 *   2  usage error (bad command line)
 *   3  cannot reach the server (connect failed, connection lost, timeout)
 *   4  bad input file (scene or mesh file unreadable or invalid)
 *   5  negative answer: `has` found missing ids, `export` found no contact
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ctl.h"

#ifndef CONTACTCTL_VERSION
#define CONTACTCTL_VERSION CC_VERSION
#endif

static const char *const MAIN_HELP =
    "usage: contactctl [--addr ADDR] [--timeout MS] COMMAND [ARGS]\n"
    "\n"
    "Talk to a contactd server.\n"
    "\n"
    "commands:\n"
    "  ping                      handshake, print the server version and round trip\n"
    "  stats                     server statistics (connections, requests, cache, latency)\n"
    "  register SHAPE [OPTIONS]  register a geometry, print its id\n"
    "  has ID...                 which geometry ids the server holds\n"
    "  query SCENE.json          contact wrenches, areas and equivalent points of a scene\n"
    "  stream SCENE.json         stream a scene's frames, live view with latency summary\n"
    "  export SCENE.json         write a pair's contact surface (VTK or PLY) with pressure\n"
    "  view SCENE.json           publish a scene (or stream it) for the browser viewer\n"
    "  help [COMMAND]            this text, or a command's\n"
    "\n"
    "options (accepted before or after the command):\n"
    "  --addr ADDR     host:port, [v6addr]:port or unix:/path\n"
    "                  (default: $CONTACTD_ADDR, else " CC_DEFAULT_ADDR ")\n"
    "  --timeout MS    connect and per-reply timeout (default 60000)\n"
    "  --json          machine-readable output (where it applies)\n"
    CC_OPTIONS_FLAGS_HELP
    "  --help, -h      help;  --version  print the version\n"
    "\n"
    "exit codes: 0 ok, 1 server error, 2 usage, 3 cannot reach server or timeout,\n"
    "            4 bad input file, 5 negative answer (missing ids, no contact)\n";

typedef struct command {
  const char *name;
  int (*fn)(int, char **, common *);
  const char *const *help;
} command;

static const command COMMANDS[] = {
    {"ping", cmd_ping, &PING_HELP},       {"stats", cmd_stats, &STATS_HELP},
    {"register", cmd_register, &REGISTER_HELP}, {"has", cmd_has, &HAS_HELP},
    {"query", cmd_query, &QUERY_HELP},    {"stream", cmd_stream, &STREAM_HELP},
    {"export", cmd_export, &EXPORT_HELP}, {"view", cmd_view, &VIEW_HELP},
};
enum { NCOMMANDS = sizeof COMMANDS / sizeof *COMMANDS };

static const command *find_command(const char *name) {
  for (size_t k = 0; k < NCOMMANDS; k++)
    if (strcmp(name, COMMANDS[k].name) == 0) return &COMMANDS[k];
  return NULL;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  common co = {0};
  int i = 1;
  for (; i < argc; i++) {
    const char *f = argv[i];
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) {
      fputs(MAIN_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(f, "--version") == 0 || strcmp(f, "version") == 0) {
      printf("contactctl %s (protocol %d)\n", CONTACTCTL_VERSION, CC_PROTOCOL_VERSION);
      return EX_OK;
    }
    int r = ctl_common_flag(argc, argv, &i, &co);
    if (r < 0) return -r;
    if (r) continue;
    break;
  }
  if (i >= argc) {
    fputs(MAIN_HELP, stderr);
    return EX_USAGE;
  }
  const char *cmd = argv[i];
  if (strcmp(cmd, "help") == 0) {
    const command *h = i + 1 < argc ? find_command(argv[i + 1]) : NULL;
    if (i + 1 < argc && !h) return ctl_usage("help: unknown command \"%s\"", argv[i + 1]);
    fputs(h ? *h->help : MAIN_HELP, stdout);
    return EX_OK;
  }
  const command *c = find_command(cmd);
  if (c) return c->fn(argc - i - 1, argv + i + 1, &co);
  return ctl_usage("unknown command \"%s\"", cmd);
}
