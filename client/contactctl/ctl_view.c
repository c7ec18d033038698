/* ctl_view.c — contactctl view: query or stream, published for the browser viewer. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

const char *const VIEW_HELP =
    "usage: contactctl view SCENE.json|- [--name NAME] [--stream [--rate HZ] [--count N] [--latest]]\n"
    "                       [--json] [--detail LEVEL]\n"
    "\n"
    "Like query (or, with --stream, like stream), with the result published under a\n"
    "scene name so that the viewer page on the server's HTTP port (contactd\n"
    "--http-port) shows it; prints the page's URL first. The server keeps the latest\n"
    "result of each published scene after the command ends.\n"
    "\n"
    "  --name NAME  scene name (default: the file's name without extension)\n"
    "  --stream     stream the scene's frames (options as for stream)\n";

/* query or stream with QueryOptions.publish set (scene_setup). */
int cmd_view(int argc, char **argv, common *co) {
  int stream = 0;
  const char *name = NULL, *path = NULL;
  char **rest = calloc((size_t)argc + 1, sizeof *rest);
  int nrest = 0;
  if (!rest) return EX_INPUT;
  for (int i = 0; i < argc; i++) {
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      free(rest);
      fputs(VIEW_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(argv[i], "--stream") == 0) stream = 1;
    else if (strcmp(argv[i], "--name") == 0 && i + 1 < argc) name = argv[++i];
    else {
      if (!path && (argv[i][0] != '-' || strcmp(argv[i], "-") == 0)) path = argv[i];
      rest[nrest++] = argv[i];
    }
  }
  if (!name && path) { /* the file's name without directory and extension */
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strcspn(b, ".");
    snprintf(co->publish, sizeof co->publish, "%.*s", (int)(n < 64 ? n : 64), b);
    for (char *p = co->publish; *p; p++)
      if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_') *p = '_';
    if (!co->publish[0] || strcmp(path, "-") == 0) snprintf(co->publish, sizeof co->publish, "scene");
  } else if (name) {
    snprintf(co->publish, sizeof co->publish, "%s", name);
  }
  int rc = stream ? cmd_stream(nrest, rest, co) : cmd_query(nrest, rest, co);
  free(rest);
  return rc;
}
