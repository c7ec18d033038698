/* cmj_geom.h — a MuJoCo geom as a contactd geometry (internal to
 * contactd_mujoco). */
#ifndef CMJ_GEOM_H
#define CMJ_GEOM_H

#include "cmj.h"

/* What is registered for one geom, kept so that it can be registered again
 * after a reconnection. */
typedef struct cmj_geom_spec {
  cc_shape shape;    /* primitives, half space, height field */
  int trimesh;       /* 1 = a mesh geom: registered as a TriMesh */
  double *verts;     /* mesh: 3 nv coordinates, geom frame (owned) */
  int32_t *tris;     /* mesh: 3 nt indices (owned) */
  size_t nv, nt;
  double *heights;   /* hfield: nx ny heights (owned) */
  char name[128];    /* the geom's name, for messages */
} cmj_geom_spec;

/* Build the spec of geom g of m with properties p: 0, or -1 with a message
 * naming the geom in why[n] (unsupported type or size). */
int cmj_geom_spec_make(const mjModel *m, int g, const cmj_props *p, cmj_geom_spec *s, char *why, size_t n);
void cmj_geom_spec_free(cmj_geom_spec *s);
/* Register it; id[CC_ID_MAX] gets the geometry id. A server error names the
 * geom in err->message. */
int cmj_geom_register(cc_client *c, const cmj_geom_spec *s, char id[CC_ID_MAX], cc_error *err);

#endif
