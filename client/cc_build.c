/* cc_build.c — plain-struct conveniences: shapes → RegisterGeometry, bodies
 * → ContactQuery / OpenStream / StreamUpdate (see cc_client.h). Messages are
 * built on the stack or in one temporary heap block; nothing is kept. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cc_client.h"

static const char *const kind_names[] = {NULL,        "sphere",    "box",        "cylinder",
                                         "capsule",   "ellipsoid", "half-space", "mesh",
                                         "heightfield"};

const char *cc_shape_kind_name(cc_shape_kind k) {
  if ((int)k < 1 || (int)k > CC_SHAPE_HEIGHT_FIELD) return "unknown";
  return kind_names[k];
}

cc_shape_kind cc_shape_kind_parse(const char *s) {
  for (int k = 1; k <= CC_SHAPE_HEIGHT_FIELD; k++)
    if (strcmp(s, kind_names[k]) == 0) return (cc_shape_kind)k;
  if (strcmp(s, "halfspace") == 0 || strcmp(s, "half_space") == 0) return CC_SHAPE_HALF_SPACE;
  return (cc_shape_kind)0;
}

int cc_mesh_format_parse(const char *s) {
  static const char *const names[] = {"auto", "obj", "stl", "ply", "vtk", "msh"}; /* by MeshFormat value */
  for (int k = 0; s && k < (int)(sizeof names / sizeof names[0]); k++)
    if (strcmp(s, names[k]) == 0) return k;
  return -1;
}

static int bad(cc_error *err, const char *msg) {
  if (err) {
    memset(err, 0, sizeof *err);
    err->code = CC_EINVALID_ARGUMENT;
    snprintf(err->message, sizeof err->message, "%s", msg);
  }
  return CC_EINVALID_ARGUMENT;
}

int cc_register_shape(cc_client *c, const cc_shape *s, char id[CC_ID_MAX],
                      Contactd__V1__RegisterReply **out, cc_error *err) {
  Contactd__V1__RegisterGeometry r = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  Contactd__V1__Sphere sp = CONTACTD__V1__SPHERE__INIT;
  Contactd__V1__Box bx = CONTACTD__V1__BOX__INIT;
  Contactd__V1__Vec3 size = CONTACTD__V1__VEC3__INIT;
  Contactd__V1__Cylinder cy = CONTACTD__V1__CYLINDER__INIT;
  Contactd__V1__Capsule ca = CONTACTD__V1__CAPSULE__INIT;
  Contactd__V1__Ellipsoid el = CONTACTD__V1__ELLIPSOID__INIT;
  Contactd__V1__HalfSpace hs = CONTACTD__V1__HALF_SPACE__INIT;
  Contactd__V1__MeshFile mf = CONTACTD__V1__MESH_FILE__INIT;
  Contactd__V1__DoubleValue slab = CONTACTD__V1__DOUBLE_VALUE__INIT;
  Contactd__V1__Material mat = CONTACTD__V1__MATERIAL__INIT;
  Contactd__V1__HeightField hf = CONTACTD__V1__HEIGHT_FIELD__INIT;
  Contactd__V1__Vec3 origin = CONTACTD__V1__VEC3__INIT;
  Contactd__V1__SurfaceOptions so = CONTACTD__V1__SURFACE_OPTIONS__INIT;
  switch (s->kind) {
    case CC_SHAPE_SPHERE:
      sp.radius = s->a;
      r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
      r.sphere = &sp;
      break;
    case CC_SHAPE_BOX:
      size.x = s->a;
      size.y = s->b;
      size.z = s->c;
      bx.size = &size;
      r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_BOX;
      r.box = &bx;
      break;
    case CC_SHAPE_CYLINDER:
      cy.radius = s->a;
      cy.length = s->b;
      r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CYLINDER;
      r.cylinder = &cy;
      break;
    case CC_SHAPE_CAPSULE:
      ca.radius = s->a;
      ca.length = s->b;
      r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CAPSULE;
      r.capsule = &ca;
      break;
    case CC_SHAPE_ELLIPSOID:
      el.a = s->a;
      el.b = s->b;
      el.c = s->c;
      r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_ELLIPSOID;
      r.ellipsoid = &el;
      break;
    case CC_SHAPE_HALF_SPACE:
      r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE;
      r.half_space = &hs;
      break;
    case CC_SHAPE_MESH_FILE:
      if (!s->data && s->size) return bad(err, "mesh file: data is NULL");
      mf.data.data = (uint8_t *)s->data;
      mf.data.len = s->size;
      mf.format = (Contactd__V1__MeshFormat)s->format;
      mf.name = (char *)(s->name ? s->name : "");
      r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE;
      r.mesh_file = &mf;
      if (!s->rigid && (s->edge_length > 0 || s->field || s->core_depth > 0 || s->hull_if_open)) {
        so.edge_length = s->edge_length;
        so.field = (Contactd__V1__FieldKind)s->field;
        so.core_depth = s->core_depth;
        so.use_convex_hull_if_open = s->hull_if_open ? 1 : 0;
        r.surface = &so;
      }
      break;
    case CC_SHAPE_HEIGHT_FIELD:
      if (!s->heights || s->nx <= 0 || s->ny <= 0) return bad(err, "heightfield: no heights");
      hf.heights = (double *)s->heights;
      hf.n_heights = (size_t)s->nx * (size_t)s->ny;
      hf.nx = s->nx;
      hf.ny = s->ny;
      hf.dx = s->dx;
      hf.dy = s->dy;
      origin.x = s->origin[0];
      origin.y = s->origin[1];
      origin.z = s->origin[2];
      hf.origin = &origin;
      hf.continuity = s->continuity == 2 ? CONTACTD__V1__CONTINUITY__CONTINUITY_C2 : CONTACTD__V1__CONTINUITY__CONTINUITY_C1;
      r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD;
      r.height_field = &hf;
      break;
    default:
      return bad(err, "unknown shape kind");
  }
  r.compliance = s->rigid ? CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID
                          : CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  r.modulus = s->rigid ? 0 : s->modulus;
  r.resolution_hint = s->hint;
  if (s->slab > 0) {
    slab.value = s->slab;
    r.slab_thickness = &slab;
  }
  if (s->dissipation != 0 || s->friction != 0) {
    mat.dissipation = s->dissipation;
    mat.friction = s->friction;
    r.material = &mat;
  }
  r.margin = s->margin;
  if (s->name && s->kind != CC_SHAPE_MESH_FILE) r.name = (char *)s->name;
  r.want_progress = s->want_progress ? 1 : 0;
  Contactd__V1__RegisterReply *rep = NULL;
  int rc = cc_register(c, &r, &rep, err);
  if (rc) return rc;
  if (id) snprintf(id, CC_ID_MAX, "%s", rep->geometry_id ? rep->geometry_id : "");
  if (out) *out = rep;
  else cc_free(rep);
  return 0;
}

/* Uses cc_has and cc_register_shape only: the calls stay one-way, from this
 * file into cc_client.c. */
int cc_ensure_shapes(cc_client *c, const cc_shape *const *shapes, char *const *ids, size_t n, size_t *registered,
                     cc_error *err) {
  if (registered) *registered = 0;
  const char **known = calloc(n ? n : 1, sizeof *known);
  if (!known) {
    if (err) {
      memset(err, 0, sizeof *err);
      err->code = CC_ERESOURCE_EXHAUSTED;
      snprintf(err->message, sizeof err->message, "out of memory");
    }
    return CC_ERESOURCE_EXHAUSTED;
  }
  size_t nk = 0;
  for (size_t i = 0; i < n; i++)
    if (ids[i][0]) known[nk++] = ids[i];
  Contactd__V1__HasGeometryReply *h = NULL;
  int rc = nk ? cc_has(c, known, nk, &h, err) : 0;
  free(known);
  for (size_t i = 0; !rc && i < n; i++) {
    int need = !ids[i][0];
    for (size_t k = 0; h && !need && k < h->n_missing; k++) need = strcmp(h->missing[k], ids[i]) == 0;
    if (!need) continue;
    rc = cc_register_shape(c, shapes[i], ids[i], NULL, err);
    if (!rc && registered) ++*registered;
    if (rc && err && shapes[i]->name) { /* which one, for a scene of many */
      char m[sizeof err->message];
      snprintf(m, sizeof m, "%s", err->message);
      snprintf(err->message, sizeof err->message, "geometry \"%.64s\": %.400s", shapes[i]->name, m);
    }
  }
  if (h) cc_free(h);
  return rc;
}

/* ---- bodies --------------------------------------------------------------- */

/* Storage for n bodies' messages in one block. */
typedef struct body_msgs {
  Contactd__V1__Body body;
  Contactd__V1__BodyState state;
  Contactd__V1__Pose pose;
  Contactd__V1__Vec3 pos;
  Contactd__V1__Quat quat;
  Contactd__V1__SpatialVelocity vel;
  Contactd__V1__Vec3 w, v;
} body_msgs;

static void fill_state(body_msgs *m, const cc_body *b) {
  m->pos = (Contactd__V1__Vec3)CONTACTD__V1__VEC3__INIT;
  m->pos.x = b->p[0];
  m->pos.y = b->p[1];
  m->pos.z = b->p[2];
  m->pose = (Contactd__V1__Pose)CONTACTD__V1__POSE__INIT;
  m->pose.position = &m->pos;
  if (b->q[0] != 0 || b->q[1] != 0 || b->q[2] != 0 || b->q[3] != 0) {
    m->quat = (Contactd__V1__Quat)CONTACTD__V1__QUAT__INIT;
    m->quat.w = b->q[0];
    m->quat.x = b->q[1];
    m->quat.y = b->q[2];
    m->quat.z = b->q[3];
    m->pose.orientation = &m->quat;
  }
  m->w = (Contactd__V1__Vec3)CONTACTD__V1__VEC3__INIT;
  m->v = (Contactd__V1__Vec3)CONTACTD__V1__VEC3__INIT;
  m->w.x = b->w[0];
  m->w.y = b->w[1];
  m->w.z = b->w[2];
  m->v.x = b->v[0];
  m->v.y = b->v[1];
  m->v.z = b->v[2];
  m->vel = (Contactd__V1__SpatialVelocity)CONTACTD__V1__SPATIAL_VELOCITY__INIT;
  m->vel.angular = &m->w;
  m->vel.linear = &m->v;
}

typedef struct built {
  body_msgs *m;
  Contactd__V1__Body **bodies;
  Contactd__V1__BodyState **states;
  Contactd__V1__Pair *pair;
  Contactd__V1__Pair **pairs;
} built;

static int build(const cc_body *bodies, size_t n, const uint32_t (*pairs)[2], size_t npairs,
                 built *B, cc_error *err) {
  memset(B, 0, sizeof *B);
  B->m = calloc(n ? n : 1, sizeof *B->m);
  B->bodies = calloc(n ? n : 1, sizeof *B->bodies);
  B->states = calloc(n ? n : 1, sizeof *B->states);
  B->pair = calloc(npairs ? npairs : 1, sizeof *B->pair);
  B->pairs = calloc(npairs ? npairs : 1, sizeof *B->pairs);
  if (!B->m || !B->bodies || !B->states || !B->pair || !B->pairs) {
    if (err) {
      memset(err, 0, sizeof *err);
      err->code = CC_ERESOURCE_EXHAUSTED;
      snprintf(err->message, sizeof err->message, "out of memory");
    }
    return CC_ERESOURCE_EXHAUSTED;
  }
  for (size_t i = 0; i < n; i++) {
    body_msgs *m = &B->m[i];
    fill_state(m, &bodies[i]);
    m->body = (Contactd__V1__Body)CONTACTD__V1__BODY__INIT;
    m->body.body_id = bodies[i].id;
    m->body.geometry_id = (char *)(bodies[i].geometry_id ? bodies[i].geometry_id : "");
    m->body.pose = &m->pose;
    m->body.velocity = &m->vel;
    m->state = (Contactd__V1__BodyState)CONTACTD__V1__BODY_STATE__INIT;
    m->state.body_id = bodies[i].id;
    m->state.pose = &m->pose;
    m->state.velocity = &m->vel;
    B->bodies[i] = &m->body;
    B->states[i] = &m->state;
  }
  for (size_t i = 0; i < npairs; i++) {
    B->pair[i] = (Contactd__V1__Pair)CONTACTD__V1__PAIR__INIT;
    B->pair[i].a = pairs[i][0];
    B->pair[i].b = pairs[i][1];
    B->pairs[i] = &B->pair[i];
  }
  return 0;
}

static void unbuild(built *B) {
  free(B->m);
  free(B->bodies);
  free(B->states);
  free(B->pair);
  free(B->pairs);
}

int cc_query_bodies(cc_client *c, const cc_body *bodies, size_t n, const uint32_t (*pairs)[2],
                    size_t npairs, const Contactd__V1__QueryOptions *opt,
                    Contactd__V1__ContactReply **out, cc_error *err) {
  built B;
  int rc = build(bodies, n, pairs, npairs, &B, err);
  if (!rc) {
    Contactd__V1__ContactQuery q = CONTACTD__V1__CONTACT_QUERY__INIT;
    Contactd__V1__AllPairs all = CONTACTD__V1__ALL_PAIRS__INIT;
    q.n_bodies = n;
    q.bodies = B.bodies;
    if (npairs) {
      q.n_pairs = npairs;
      q.pairs = B.pairs;
    } else {
      q.all_pairs = &all;
    }
    q.options = (Contactd__V1__QueryOptions *)opt;
    rc = cc_query(c, &q, out, err);
  }
  unbuild(&B);
  return rc;
}

int cc_stream_open_bodies(cc_client *c, const cc_body *bodies, size_t n, const uint32_t (*pairs)[2],
                          size_t npairs, const Contactd__V1__QueryOptions *opt, int latest_only,
                          uint64_t *stream_id, cc_error *err) {
  built B;
  int rc = build(bodies, n, pairs, npairs, &B, err);
  if (!rc) {
    Contactd__V1__OpenStream o = CONTACTD__V1__OPEN_STREAM__INIT;
    Contactd__V1__AllPairs all = CONTACTD__V1__ALL_PAIRS__INIT;
    o.n_bodies = n;
    o.bodies = B.bodies;
    if (npairs) {
      o.n_pairs = npairs;
      o.pairs = B.pairs;
    } else {
      o.all_pairs = &all;
    }
    o.options = (Contactd__V1__QueryOptions *)opt;
    o.mode = latest_only ? CONTACTD__V1__STREAM_MODE__STREAM_MODE_LATEST_ONLY
                         : CONTACTD__V1__STREAM_MODE__STREAM_MODE_QUEUE_ALL;
    rc = cc_stream_open(c, &o, stream_id, err);
  }
  unbuild(&B);
  return rc;
}

int cc_stream_send(cc_client *c, uint64_t stream_id, uint64_t sequence, const cc_body *states,
                   size_t n, cc_error *err) {
  built B;
  int rc = build(states, n, NULL, 0, &B, err);
  if (!rc) {
    Contactd__V1__StreamUpdate u = CONTACTD__V1__STREAM_UPDATE__INIT;
    u.stream_id = stream_id;
    u.sequence = sequence;
    u.n_bodies = n;
    u.bodies = B.states;
    rc = cc_stream_update(c, &u, err);
  }
  unbuild(&B);
  return rc;
}
