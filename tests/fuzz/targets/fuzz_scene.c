/* libFuzzer target: contactctl's scene-file parser (client/cc_scene.c)
 * and the query and stream messages it builds from a scene. Mesh files
 * named by a scene are read from a scratch directory that holds one small
 * OBJ; inputs holding '/' are skipped, so a scene can name no other file. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cc_scene.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_dir[256];

static const char cube_obj[] =
    "v 0 0 0\nv 1 0 0\nv 1 1 0\nv 0 1 0\nv 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\n"
    "f 1 4 3 2\nf 5 6 7 8\nf 1 2 6 5\nf 2 3 7 6\nf 3 4 8 7\nf 4 1 5 8\n";

static void remove_dir(void) {
  char p[sizeof g_dir + 16];
  snprintf(p, sizeof p, "%s/cube.obj", g_dir);
  unlink(p);
  rmdir(g_dir);
}

static void make_dir(void) {
  const char *tmp = getenv("TMPDIR"); /* tests/run.sh makes one for the run */
  snprintf(g_dir, sizeof g_dir, "%s/fuzz_scene.XXXXXX", tmp && *tmp ? tmp : P_tmpdir);
  if (!mkdtemp(g_dir)) abort();
  char p[sizeof g_dir + 16];
  snprintf(p, sizeof p, "%s/cube.obj", g_dir);
  FILE *f = fopen(p, "wb");
  if (!f) abort();
  fwrite(cube_obj, 1, sizeof cube_obj - 1, f);
  fclose(f);
  atexit(remove_dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!g_dir[0]) make_dir();
  if (memchr(data, '/', size)) return 0;
  char *text = malloc(size + 1);
  if (!text) return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  cc_scene s;
  char err[512];
  err[0] = '\0';
  if (cc_scene_parse(text, g_dir, &s, err, sizeof err) == 0) {
    cc_scene_msgs m;
    if (cc_scene_msgs_build(&s, NULL, NULL, 0, &m) == 0) cc_scene_msgs_free(&m);
    for (size_t i = 0; i < s.nbodies; i++) (void)cc_scene_body_name(&s, s.bodies[i].state.id);
    cc_scene_free(&s);
  } else if (!err[0]) {
    abort(); /* every failure names its path */
  }
  free(text);
  return 0;
}
