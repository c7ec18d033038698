/* cc_scene.h — scene files (JSON) for contactctl and tests: geometries to
 * register, bodies, pairs, query options and optional stream frames. The
 * format is documented in client/README.md ("Scene files"). */
#ifndef CC_SCENE_H
#define CC_SCENE_H

#include <stddef.h>
#include <stdint.h>

#include "cc_client.h"

typedef struct cc_scene_geom {
  char *name;
  char id[CC_ID_MAX];  /* preset ("id" in the file) or filled by cc_scene_register */
  int preset;          /* the file gave "id": nothing to register */
  cc_shape shape;
  void *file_data;     /* mesh file bytes (owned) */
  char *file_path;
} cc_scene_geom;

typedef struct cc_scene_body {
  char *name;
  int geom;            /* index into geoms */
  cc_body state;       /* id, pose, velocity (geometry_id set by register) */
  int has_material, has_filter;
  double dissipation, friction;
  uint32_t group, mask;
} cc_scene_body;

typedef struct cc_scene {
  cc_scene_geom *geoms;
  size_t ngeoms;
  cc_scene_body *bodies;
  size_t nbodies;
  uint32_t (*pairs)[2];   /* explicit pairs (body ids), A then B */
  size_t npairs;
  int all_pairs;          /* broad phase */
  double margin;
  uint32_t (*exclude)[2];
  size_t nexclude;
  Contactd__V1__QueryOptions options;
  cc_body *frames;        /* nframes * nbodies full states, cumulative */
  size_t nframes;
} cc_scene;

/* Load a scene from a file ("-" = stdin). Mesh files named in it are read
 * relative to the scene file's directory. Returns 0, or -1 with a message
 * naming the offending JSON path in err. */
int cc_scene_load(const char *path, cc_scene *s, char *err, size_t errlen);
/* Parse from a string (base_dir for relative mesh paths, may be NULL). */
int cc_scene_parse(const char *json, const char *base_dir, cc_scene *s, char *err, size_t errlen);
void cc_scene_free(cc_scene *s);

/* Register every geometry (skipping presets) and set the bodies' geometry
 * ids. Called again on a new connection (to another replica, say), it
 * registers only the geometries that server does not hold
 * (cc_ensure_shapes). */
int cc_scene_register(cc_client *c, cc_scene *s, cc_error *err);

/* Body index of a name or decimal id ("-1" if none). */
int cc_scene_find_body(const cc_scene *s, const char *name_or_id);
/* Name of a body id ("?" if unknown). */
const char *cc_scene_body_name(const cc_scene *s, uint32_t id);

/* Messages over the scene (pointing into storage owned by *m; free with
 * cc_scene_msgs_free). states = nbodies states to use instead of the scene's
 * (NULL = the scene's). pairs_override / npairs_override replace the scene's
 * pairs when npairs_override > 0. */
typedef struct cc_scene_msgs {
  Contactd__V1__ContactQuery query;
  Contactd__V1__OpenStream open;
  Contactd__V1__AllPairs all;
  void *mem;
} cc_scene_msgs;
int cc_scene_msgs_build(const cc_scene *s, const cc_body *states, const uint32_t (*pairs_override)[2],
                        size_t npairs_override, cc_scene_msgs *m);
void cc_scene_msgs_free(cc_scene_msgs *m);

#endif
