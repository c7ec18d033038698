/* cmj_geom.c — MuJoCo geom types and sizes to contactd geometry.
 *
 * MuJoCo's geom_size holds half sizes where contactd takes full ones:
 *   sphere    size[0] = radius                  -> Sphere radius
 *   capsule   size[0] = radius, size[1] = half
 *             length of the segment             -> Capsule radius, length 2 size[1]
 *   ellipsoid size = semi-axes                  -> Ellipsoid a, b, c
 *   cylinder  size[0] = radius, size[1] = half
 *             height                            -> Cylinder radius, length 2 size[1]
 *   box       size = half edges                 -> Box edges 2 size
 *   plane     z <= 0 of the geom frame, infinite for collision -> HalfSpace
 *   mesh      vertices in the geom frame (MuJoCo moved them to the mesh's
 *             inertial frame and geom_pos/geom_quat with them) -> TriMesh
 *   hfield    hfield_size = (x, y, z_top, z_bottom): the grid spans
 *             [-x, x] x [-y, y], sample (r, c) at x = -x + 2x c/(ncol-1),
 *             y = -y + 2y r/(nrow-1), height z_top * data[r ncol + c]
 *             -> HeightField (rigid)
 * Capsule and cylinder axes are z in both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmj_geom.h"

static const char *type_name(int t) {
  switch (t) {
    case mjGEOM_PLANE: return "plane";
    case mjGEOM_HFIELD: return "hfield";
    case mjGEOM_SPHERE: return "sphere";
    case mjGEOM_CAPSULE: return "capsule";
    case mjGEOM_ELLIPSOID: return "ellipsoid";
    case mjGEOM_CYLINDER: return "cylinder";
    case mjGEOM_BOX: return "box";
    case mjGEOM_MESH: return "mesh";
    default: return "unknown";
  }
}

static int fail(char *why, size_t n, const cmj_geom_spec *s, int type, const char *what) {
  if (why && n) snprintf(why, n, "geom '%s' (%s): %s", s->name, type_name(type), what);
  return -1;
}

static int mesh_spec(const mjModel *m, int g, cmj_geom_spec *s, char *why, size_t n) {
  int id = m->geom_dataid[g];
  if (id < 0 || id >= m->nmesh) return fail(why, n, s, mjGEOM_MESH, "has no mesh");
  int v0 = m->mesh_vertadr[id], nv = m->mesh_vertnum[id], f0 = m->mesh_faceadr[id], nf = m->mesh_facenum[id];
  if (nv < 4 || nf < 4) return fail(why, n, s, mjGEOM_MESH, "a mesh needs at least 4 vertices and 4 faces");
  s->verts = malloc(3 * (size_t)nv * sizeof *s->verts);
  s->tris = malloc(3 * (size_t)nf * sizeof *s->tris);
  if (!s->verts || !s->tris) return fail(why, n, s, mjGEOM_MESH, "out of memory");
  for (int i = 0; i < 3 * nv; i++) s->verts[i] = (double)m->mesh_vert[3 * v0 + i];
  for (int i = 0; i < 3 * nf; i++) s->tris[i] = m->mesh_face[3 * f0 + i];
  s->nv = (size_t)nv;
  s->nt = (size_t)nf;
  s->trimesh = 1;
  return 0;
}

static int hfield_spec(const mjModel *m, int g, cmj_geom_spec *s, char *why, size_t n) {
  int id = m->geom_dataid[g];
  if (id < 0 || id >= m->nhfield) return fail(why, n, s, mjGEOM_HFIELD, "has no height field");
  if (!s->shape.rigid)
    return fail(why, n, s, mjGEOM_HFIELD, "must be mapped rigid: contactd's height fields are rigid terrain");
  const mjtNum *sz = m->hfield_size + 4 * id;
  int nr = m->hfield_nrow[id], nc = m->hfield_ncol[id];
  if (nr < 4 || nc < 4) return fail(why, n, s, mjGEOM_HFIELD, "contactd needs at least 4 x 4 samples");
  s->heights = malloc((size_t)nr * (size_t)nc * sizeof *s->heights);
  if (!s->heights) return fail(why, n, s, mjGEOM_HFIELD, "out of memory");
  const float *data = m->hfield_data + m->hfield_adr[id];
  for (int i = 0; i < nr * nc; i++) s->heights[i] = sz[2] * (double)data[i];
  s->shape.heights = s->heights;
  s->shape.nx = nc;
  s->shape.ny = nr;
  s->shape.dx = 2 * sz[0] / (nc - 1);
  s->shape.dy = 2 * sz[1] / (nr - 1);
  s->shape.origin[0] = -sz[0];
  s->shape.origin[1] = -sz[1];
  s->shape.origin[2] = 0;
  return 0;
}

int cmj_geom_spec_make(const mjModel *m, int g, const cmj_props *p, cmj_geom_spec *s, char *why, size_t n) {
  memset(s, 0, sizeof *s);
  const char *nm = mj_id2name(m, mjOBJ_GEOM, g);
  if (nm) snprintf(s->name, sizeof s->name, "%s", nm);
  else snprintf(s->name, sizeof s->name, "#%d", g);
  int type = m->geom_type[g];
  const mjtNum *sz = m->geom_size + 3 * g;
  cc_shape *c = &s->shape;
  c->rigid = p->rigid;
  c->modulus = p->modulus;
  c->dissipation = p->dissipation;
  c->friction = p->friction;
  c->hint = p->hint;
  c->slab = p->slab;
  c->name = s->name;
  int need = 0; /* size entries that must be > 0 */
  switch (type) {
    case mjGEOM_SPHERE: c->kind = CC_SHAPE_SPHERE, c->a = sz[0], need = 1; break;
    case mjGEOM_CAPSULE: c->kind = CC_SHAPE_CAPSULE, c->a = sz[0], c->b = 2 * sz[1], need = 2; break;
    case mjGEOM_ELLIPSOID: c->kind = CC_SHAPE_ELLIPSOID, c->a = sz[0], c->b = sz[1], c->c = sz[2], need = 3; break;
    case mjGEOM_CYLINDER: c->kind = CC_SHAPE_CYLINDER, c->a = sz[0], c->b = 2 * sz[1], need = 2; break;
    case mjGEOM_BOX: c->kind = CC_SHAPE_BOX, c->a = 2 * sz[0], c->b = 2 * sz[1], c->c = 2 * sz[2], need = 3; break;
    case mjGEOM_PLANE: c->kind = CC_SHAPE_HALF_SPACE; break;
    case mjGEOM_MESH: return mesh_spec(m, g, s, why, n);
    case mjGEOM_HFIELD: c->kind = CC_SHAPE_HEIGHT_FIELD; return hfield_spec(m, g, s, why, n);
    default: return fail(why, n, s, type, "contactd has no geometry for this geom type");
  }
  for (int i = 0; i < need; i++)
    if (!(sz[i] > 0)) return fail(why, n, s, type, "its size must be > 0");
  if (!p->rigid && type != mjGEOM_PLANE && !(p->hint > 0))
    return fail(why, n, s, type, "a compliant primitive needs a resolution hint > 0 (m)");
  return 0;
}

void cmj_geom_spec_free(cmj_geom_spec *s) {
  free(s->verts);
  free(s->tris);
  free(s->heights);
  s->verts = NULL, s->tris = NULL, s->heights = NULL;
}

static int register_trimesh(cc_client *c, const cmj_geom_spec *s, char id[CC_ID_MAX], cc_error *err) {
  Contactd__V1__RegisterGeometry r = CONTACTD__V1__REGISTER_GEOMETRY__INIT;
  Contactd__V1__TriMesh tm = CONTACTD__V1__TRI_MESH__INIT;
  Contactd__V1__Material mat = CONTACTD__V1__MATERIAL__INIT;
  tm.vertices = s->verts;
  tm.n_vertices = 3 * s->nv;
  tm.triangles = s->tris;
  tm.n_triangles = 3 * s->nt;
  r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH;
  r.tri_mesh = &tm;
  r.compliance = s->shape.rigid ? CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID
                                : CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  r.modulus = s->shape.rigid ? 0 : s->shape.modulus;
  r.resolution_hint = s->shape.hint;
  if (s->shape.dissipation != 0 || s->shape.friction != 0) {
    mat.dissipation = s->shape.dissipation;
    mat.friction = s->shape.friction;
    r.material = &mat;
  }
  r.name = (char *)s->name;
  Contactd__V1__RegisterReply *rep = NULL;
  int rc = cc_register(c, &r, &rep, err);
  if (rc) return rc;
  snprintf(id, CC_ID_MAX, "%s", rep->geometry_id ? rep->geometry_id : "");
  cc_free(rep);
  return 0;
}

int cmj_geom_register(cc_client *c, const cmj_geom_spec *s, char id[CC_ID_MAX], cc_error *err) {
  int rc = s->trimesh ? register_trimesh(c, s, id, err) : cc_register_shape(c, &s->shape, id, NULL, err);
  if (rc && err && rc != CC_EUNAVAILABLE && rc != CC_EDEADLINE_EXCEEDED) {
    char msg[sizeof s->name + sizeof err->message + 8];
    snprintf(msg, sizeof msg, "geom '%s': %s", s->name, err->message);
    snprintf(err->message, sizeof err->message, "%.*s", (int)sizeof err->message - 1, msg);
  }
  return rc;
}
