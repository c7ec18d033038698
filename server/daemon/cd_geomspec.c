/* cd_geomspec.c — RegisterGeometry: checks, canonical id, build. */
#include "cd_geomspec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_meshfile.h"

typedef Contactd__V1__RegisterGeometry R;

static int pos(double x) { return isfinite(x) && x > 0; }

static const char *shape_field(const R *r) {
  switch (r->shape_case) {
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE: return "registerGeometry.sphere";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_BOX: return "registerGeometry.box";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CYLINDER: return "registerGeometry.cylinder";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CAPSULE: return "registerGeometry.capsule";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_ELLIPSOID: return "registerGeometry.ellipsoid";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE: return "registerGeometry.halfSpace";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CONVEX: return "registerGeometry.convex";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TET_MESH: return "registerGeometry.tetMesh";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH: return "registerGeometry.triMesh";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE: return "registerGeometry.meshFile";
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD: return "registerGeometry.heightField";
    default: return "registerGeometry.shape";
  }
}

static int meshes_primitive(const R *r) {
  switch (r->shape_case) {
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_BOX:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CYLINDER:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CAPSULE:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_ELLIPSOID:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CONVEX: return 1;
    default: return 0;
  }
}

/* Fill a ce_shape (primitives only); also a bounding radius. */
static void to_shape(const R *r, ce_shape *s, double *radius) {
  memset(s, 0, sizeof *s);
  *radius = 0;
  switch (r->shape_case) {
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE:
      s->type = CE_SHAPE_SPHERE;
      s->radius = r->sphere->radius;
      *radius = s->radius;
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_BOX: {
      s->type = CE_SHAPE_BOX;
      const Contactd__V1__Vec3 *v = r->box->size;
      s->size = (ce_vec3){v ? v->x : 0, v ? v->y : 0, v ? v->z : 0};
      *radius = 0.5 * sqrt(s->size.x * s->size.x + s->size.y * s->size.y + s->size.z * s->size.z);
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CYLINDER:
      s->type = CE_SHAPE_CYLINDER;
      s->radius = r->cylinder->radius;
      s->length = r->cylinder->length;
      *radius = sqrt(s->radius * s->radius + 0.25 * s->length * s->length);
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CAPSULE:
      s->type = CE_SHAPE_CAPSULE;
      s->radius = r->capsule->radius;
      s->length = r->capsule->length;
      *radius = s->radius + 0.5 * s->length;
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_ELLIPSOID:
      s->type = CE_SHAPE_ELLIPSOID;
      s->size = (ce_vec3){r->ellipsoid->a, r->ellipsoid->b, r->ellipsoid->c};
      *radius = fmax(s->size.x, fmax(s->size.y, s->size.z));
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE:
      s->type = CE_SHAPE_HALFSPACE;
      *radius = INFINITY;
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CONVEX:
      s->type = CE_SHAPE_CONVEX;
      s->points = r->convex->points;
      s->npoints = (int32_t)(r->convex->n_points / 3);
      for (int32_t i = 0; i < s->npoints; i++) {
        const double *p = s->points + 3 * i;
        double d = sqrt(p[0] * p[0] + p[1] * p[1] + p[2] * p[2]);
        if (d > *radius) *radius = d;
      }
      break;
    default: break;
  }
}

static void to_props(const R *r, ce_props *p) {
  memset(p, 0, sizeof *p);
  p->compliance = r->compliance == CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT ? CE_COMPLIANT : CE_RIGID;
  p->modulus = p->compliance == CE_COMPLIANT ? r->modulus : INFINITY;
  p->hint = r->resolution_hint;
  p->slab_thickness = r->slab_thickness ? r->slab_thickness->value : CD_DEFAULT_SLAB_THICKNESS;
  p->margin = r->margin; /* check_props refused it where it cannot work */
  if (r->material) {
    p->material.dissipation = r->material->dissipation;
    p->material.friction = r->material->friction;
  }
}

static int check_array(size_t n, size_t k, uint64_t limit, const char *field, const char *what, cd_status *st) {
  if (n == 0) return cd_status_set(st, CD_INVALID, field, "no %s", what);
  if (n % k) return cd_status_set(st, CD_INVALID, field, "length %zu is not a multiple of %zu", n, k);
  if (n / k > limit || n / k > INT32_MAX)
    return cd_status_set(st, CD_EXHAUSTED, field, "%zu %s exceed the limit of %llu (max_mesh_elements)", n / k,
                         what, (unsigned long long)limit);
  return 0;
}

/* The checks of RegisterGeometry, stage by stage; each returns 0 or the
 * failure's code (with *st naming the field), and the first failure wins.
 * Stage 1: the properties every shape has. */
static int check_props(const R *r, cd_status *st) {
  if (r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE__NOT_SET)
    return cd_status_set(st, CD_INVALID, "registerGeometry.shape",
                         "no shape (set one of sphere, box, cylinder, capsule, ellipsoid, halfSpace, convex, "
                         "tetMesh, triMesh, meshFile, heightField)");
  if (r->compliance != CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID &&
      r->compliance != CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT)
    return cd_status_set(st, CD_INVALID, "registerGeometry.compliance",
                         "must be COMPLIANCE_RIGID or COMPLIANCE_COMPLIANT (got %d)", (int)r->compliance);
  const int compliant = r->compliance == CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  /* a subnormal modulus (5e-324 Pa) underflows everything derived from it,
   * the default point stiffness first */
  if (compliant && !(pos(r->modulus) && isnormal(r->modulus)))
    return cd_status_set(st, CD_INVALID, "registerGeometry.modulus",
                         "a compliant geometry needs a finite modulus > 0, not subnormal (got %g)", r->modulus);
  if (r->slab_thickness && !pos(r->slab_thickness->value))
    return cd_status_set(st, CD_INVALID, "registerGeometry.slabThickness", "must be finite and > 0 (got %g)",
                         r->slab_thickness->value);
  if (r->material) {
    if (!(isfinite(r->material->dissipation) && r->material->dissipation >= 0))
      return cd_status_set(st, CD_INVALID, "registerGeometry.material.dissipation",
                           "must be finite and >= 0 (got %g)", r->material->dissipation);
    if (!(isfinite(r->material->friction) && r->material->friction >= 0))
      return cd_status_set(st, CD_INVALID, "registerGeometry.material.friction", "must be finite and >= 0 (got %g)",
                           r->material->friction);
  }
  if (r->point_stiffness && !pos(r->point_stiffness->value))
    return cd_status_set(st, CD_INVALID, "registerGeometry.pointStiffness", "must be finite and > 0 (got %g)",
                         r->point_stiffness->value);
  if (!(isfinite(r->margin) && r->margin >= 0))
    return cd_status_set(st, CD_INVALID, "registerGeometry.margin", "must be finite and >= 0 (got %g)", r->margin);
  if (r->margin > 0) { /* the engine inflates every compliant tet mesh */
    int no_mesh = r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE ||
                  r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD;
    if (no_mesh || !compliant)
      return cd_status_set(st, CD_INVALID, "registerGeometry.margin",
                           "only compliant geometries with a tet mesh take a margin: compliant primitives but the half "
                           "space, tet meshes, surface meshes and mesh files (got %g on a %s %s%s)",
                           r->margin, compliant ? "compliant" : "rigid", shape_field(r) + strlen("registerGeometry."),
                           no_mesh && compliant ? ", which has no tet mesh to inflate" : "");
  }
  return 0;
}

/* Stage 2a: the primitives' dimensions. */
static int check_primitive(const R *r, cd_status *st) {
  const char *f = shape_field(r);
  char fld[160];
  switch (r->shape_case) {
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE:
      if (!pos(r->sphere->radius))
        return cd_status_set(st, CD_INVALID, "registerGeometry.sphere.radius", "must be finite and > 0 (got %g)",
                             r->sphere->radius);
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_BOX: {
      const Contactd__V1__Vec3 *v = r->box->size;
      if (!v || !pos(v->x) || !pos(v->y) || !pos(v->z))
        return cd_status_set(st, CD_INVALID, "registerGeometry.box.size",
                             "every edge length must be finite and > 0 (got %g, %g, %g)", v ? v->x : 0,
                             v ? v->y : 0, v ? v->z : 0);
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CYLINDER:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CAPSULE: {
      int cyl = r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CYLINDER;
      double rad = cyl ? r->cylinder->radius : r->capsule->radius;
      double len = cyl ? r->cylinder->length : r->capsule->length;
      if (!pos(rad)) {
        snprintf(fld, sizeof fld, "%s.radius", f);
        return cd_status_set(st, CD_INVALID, fld, "must be finite and > 0 (got %g)", rad);
      }
      if (!pos(len)) {
        snprintf(fld, sizeof fld, "%s.length", f);
        return cd_status_set(st, CD_INVALID, fld, "must be finite and > 0 (got %g)", len);
      }
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_ELLIPSOID:
      if (!pos(r->ellipsoid->a) || !pos(r->ellipsoid->b) || !pos(r->ellipsoid->c))
        return cd_status_set(st, CD_INVALID, "registerGeometry.ellipsoid",
                             "semi-axes must be finite and > 0 (got %g, %g, %g)", r->ellipsoid->a,
                             r->ellipsoid->b, r->ellipsoid->c);
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE: break;
    default: break;
  }
  return 0;
}

/* Stage 2b: explicit meshes and mesh files: array shapes and sizes. */
static int check_mesh(const R *r, const cd_limits *l, int compliant, cd_status *st) {
  switch (r->shape_case) {
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CONVEX: {
      int rc = check_array(r->convex->n_points, 3, l->max_mesh_elements, "registerGeometry.convex.points",
                           "points", st);
      if (rc) return rc;
      for (size_t i = 0; i < r->convex->n_points; i++)
        if (!isfinite(r->convex->points[i]))
          return cd_status_set(st, CD_INVALID, "registerGeometry.convex.points", "point %zu is not finite", i / 3);
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TET_MESH: {
      const Contactd__V1__TetMesh *m = r->tet_mesh;
      if (!compliant)
        return cd_status_set(st, CD_INVALID, "registerGeometry.compliance",
                             "a tetMesh is compliant; use triMesh for rigid geometry");
      int rc = check_array(m->n_vertices, 3, l->max_mesh_elements, "registerGeometry.tetMesh.vertices",
                           "vertices", st);
      if (!rc) rc = check_array(m->n_tets, 4, l->max_mesh_elements, "registerGeometry.tetMesh.tets", "tets", st);
      if (rc) return rc;
      if (m->pressure && m->pressure->n_values != m->n_vertices / 3)
        return cd_status_set(st, CD_INVALID, "registerGeometry.tetMesh.pressure",
                             "has %zu values for %zu vertices", m->pressure->n_values, m->n_vertices / 3);
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH: {
      const Contactd__V1__TriMesh *m = r->tri_mesh;
      int rc = check_array(m->n_vertices, 3, l->max_mesh_elements, "registerGeometry.triMesh.vertices",
                           "vertices", st);
      if (!rc)
        rc = check_array(m->n_triangles, 3, l->max_mesh_elements, "registerGeometry.triMesh.triangles",
                         "triangles", st);
      if (rc) return rc;
      if (m->n_convex_pieces > 0 && r->compliance == CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT)
        return cd_status_set(st, CD_INVALID, "registerGeometry.triMesh.convexPieces",
                             "convex pieces apply to rigid meshes (point contact) only");
      if (m->n_convex_pieces > (size_t)l->max_mesh_elements)
        return cd_status_set(st, CD_EXHAUSTED, "registerGeometry.triMesh.convexPieces",
                             "%zu pieces exceed the limit of %llu (max_mesh_elements)", m->n_convex_pieces,
                             (unsigned long long)l->max_mesh_elements);
      for (size_t i = 0; i < m->n_convex_pieces; i++) {
        char path[80];
        snprintf(path, sizeof path, "registerGeometry.triMesh.convexPieces[%zu].points", i);
        rc = check_array(m->convex_pieces[i]->n_points, 3, l->max_mesh_elements, path, "points", st);
        if (rc) return rc;
      }
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE:
      if (r->mesh_file->data.len == 0)
        return cd_status_set(st, CD_INVALID, "registerGeometry.meshFile.data", "is empty");
      if (r->mesh_file->format == CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_PLY)
        return cd_status_set(st, CD_UNIMPLEMENTED, "registerGeometry.meshFile.format",
                             "PLY files are not supported (use OBJ, STL, VTK or MSH)");
      if (r->mesh_file->format < 0 || r->mesh_file->format > CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_MSH)
        return cd_status_set(st, CD_INVALID, "registerGeometry.meshFile.format", "unknown format %d",
                             (int)r->mesh_file->format);
      break;
    default: break;
  }
  return 0;
}

/* Stage 2c: a height field's grid. */
static int check_height_field(const R *r, int compliant, cd_status *st) {
  const Contactd__V1__HeightField *h = r->height_field;
  if (compliant)
    return cd_status_set(st, CD_INVALID, "registerGeometry.compliance",
                         "a heightField is rigid (compliant bodies touch it hydroelastically)");
  if (h->nx < 4 || h->ny < 4)
    return cd_status_set(st, CD_INVALID, "registerGeometry.heightField.nx",
                         "needs at least 4 x 4 samples (got %d x %d)", (int)h->nx, (int)h->ny);
  if ((uint64_t)h->nx * (uint64_t)h->ny != (uint64_t)h->n_heights)
    return cd_status_set(st, CD_INVALID, "registerGeometry.heightField.heights",
                         "has %zu values for nx * ny = %d x %d", h->n_heights, (int)h->nx, (int)h->ny);
  if (!pos(h->dx) || !pos(h->dy))
    return cd_status_set(st, CD_INVALID, "registerGeometry.heightField.dx",
                         "spacings must be finite and > 0 (got dx %g, dy %g)", h->dx, h->dy);
  if (h->origin && !(isfinite(h->origin->x) && isfinite(h->origin->y) && isfinite(h->origin->z)))
    return cd_status_set(st, CD_INVALID, "registerGeometry.heightField.origin", "must be finite");
  if (h->continuity < 0 || h->continuity > CONTACTD__V1__CONTINUITY__CONTINUITY_C2)
    return cd_status_set(st, CD_INVALID, "registerGeometry.heightField.continuity",
                         "must be CONTINUITY_C1 or CONTINUITY_C2 (got %d)", (int)h->continuity);
  for (size_t i = 0; i < h->n_heights; i++)
    if (!isfinite(h->heights[i]))
      return cd_status_set(st, CD_INVALID, "registerGeometry.heightField.heights",
                           "height %zu (i %zu, j %zu) is not finite", i, i % (size_t)h->nx, i / (size_t)h->nx);
  return 0;
}

/* Stage 3: the options that depend on the shape: surface meshing, vertex
 * pressure, and the resolution of meshed primitives. */
static int check_options(const R *r, const cd_limits *l, int compliant, cd_status *st) {
  if (r->surface) {
    const Contactd__V1__SurfaceOptions *o = r->surface;
    if (!(isfinite(o->edge_length) && o->edge_length >= 0))
      return cd_status_set(st, CD_INVALID, "registerGeometry.surface.edgeLength", "must be finite and >= 0 (got %g)",
                           o->edge_length);
    if (!(isfinite(o->core_depth) && o->core_depth >= 0))
      return cd_status_set(st, CD_INVALID, "registerGeometry.surface.coreDepth", "must be finite and >= 0 (got %g)",
                           o->core_depth);
    if (o->field < 0 || o->field > CONTACTD__V1__FIELD_KIND__FIELD_KIND_DISTANCE)
      return cd_status_set(st, CD_INVALID, "registerGeometry.surface.field",
                           "must be FIELD_KIND_LAPLACE or FIELD_KIND_DISTANCE (got %d)", (int)o->field);
  }
  if (compliant && (r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH ||
                    r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE)) {
    double el = r->surface && r->surface->edge_length > 0 ? r->surface->edge_length : r->resolution_hint;
    if (r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH && !pos(el))
      return cd_status_set(st, CD_INVALID, "registerGeometry.surface.edgeLength",
                           "a compliant triMesh is tetrahedralised: give surface.edgeLength or resolutionHint > 0");
  }
  if (r->vertex_pressure) {
    if (r->shape_case != CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE || !compliant)
      return cd_status_set(st, CD_INVALID, "registerGeometry.vertexPressure",
                           "only for a compliant tetrahedral meshFile (a tetMesh has its own pressure)");
    for (size_t i = 0; i < r->vertex_pressure->n_values; i++)
      if (!(isfinite(r->vertex_pressure->values[i]) && r->vertex_pressure->values[i] >= 0))
        return cd_status_set(st, CD_INVALID, "registerGeometry.vertexPressure",
                             "value %zu is %g (must be finite and >= 0)", i, r->vertex_pressure->values[i]);
  }
  if (meshes_primitive(r) && r->shape_case != CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CONVEX) {
    if (!pos(r->resolution_hint))
      return cd_status_set(st, CD_INVALID, "registerGeometry.resolutionHint",
                           "primitives need a finite resolution hint > 0 (target edge length, m; got %g)",
                           r->resolution_hint);
    ce_shape s;
    double radius;
    to_shape(r, &s, &radius);
    double cells = pow(2 * radius / r->resolution_hint, compliant ? 3 : 2);
    if (cells > (double)l->max_mesh_elements)
      return cd_status_set(st, CD_EXHAUSTED, "registerGeometry.resolutionHint",
                           "%g for a shape of radius %g needs about %.3g elements (max_mesh_elements %llu)",
                           r->resolution_hint, radius, cells, (unsigned long long)l->max_mesh_elements);
  }
  return 0;
}

int cd_geomspec_check(const R *r, const cd_limits *l, cd_status *st) {
  int rc = check_props(r, st);
  if (rc) return rc;
  const int compliant = r->compliance == CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  rc = r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD ? check_height_field(r, compliant, st)
                                                                           : check_primitive(r, st);
  if (!rc) rc = check_mesh(r, l, compliant, st);
  if (!rc) rc = check_options(r, l, compliant, st);
  return rc;
}

static void hash_doubles(cd_sha256 *h, const double *v, size_t n) {
  cd_hash_sha256_u64(h, n);
  cd_hash_sha256_f64s(h, v, n);
}

static void hash_ints(cd_sha256 *h, const int32_t *v, size_t n) {
  cd_hash_sha256_u64(h, n);
  for (size_t i = 0; i < n; i++) cd_hash_sha256_u64(h, (uint64_t)(int64_t)v[i]);
}

/* A compliant surface (triMesh, or a meshFile that may hold one): built by
 * tetrahedralisation. For a meshFile the format decides at build time; the
 * options are hashed whenever they could apply. */
static int uses_surface_build(const R *r) {
  if (r->compliance != CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT) return 0;
  if (r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH) return 1;
  if (r->shape_case != CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE) return 0;
  int f = r->mesh_file->format;
  return f != CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_VTK && f != CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_MSH;
}

static void to_surface_options(const R *r, ce_surface_build_options *o) {
  ce_surface_build_options_default(o);
  o->edge_length = r->surface && r->surface->edge_length > 0 ? r->surface->edge_length : r->resolution_hint;
  o->field = r->surface && r->surface->field == CONTACTD__V1__FIELD_KIND__FIELD_KIND_DISTANCE ? CE_FIELD_DISTANCE
                                                                                          : CE_FIELD_LAPLACE;
  o->core_depth = r->surface ? r->surface->core_depth : 0;
  o->use_hull_if_open = r->surface && r->surface->use_convex_hull_if_open;
}

void cd_geomspec_id(const R *r, char id[CD_HASH_HEX_LEN + 1]) {
  cd_sha256 h;
  cd_hash_sha256_init(&h);
  static const char tag[] = "contactd.geometry.v1";
  cd_hash_sha256_bytes(&h, tag, sizeof tag - 1);
  cd_hash_sha256_u64(&h, (uint64_t)r->shape_case);
  ce_props p;
  to_props(r, &p);
  cd_hash_sha256_u64(&h, (uint64_t)p.compliance);
  cd_hash_sha256_f64(&h, p.compliance == CE_COMPLIANT ? p.modulus : 0);
  cd_hash_sha256_f64(&h, meshes_primitive(r) ? p.hint : 0);
  cd_hash_sha256_f64(&h, r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HALF_SPACE ? p.slab_thickness : 0);
  cd_hash_sha256_f64(&h, p.material.dissipation);
  cd_hash_sha256_f64(&h, p.material.friction);
  cd_hash_sha256_f64(&h, r->point_stiffness ? r->point_stiffness->value : 0);
  switch (r->shape_case) {
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_BOX:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CYLINDER:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CAPSULE:
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_ELLIPSOID: {
      ce_shape s;
      double radius;
      to_shape(r, &s, &radius);
      double v[5] = {s.radius, s.length, s.size.x, s.size.y, s.size.z};
      hash_doubles(&h, v, 5);
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_CONVEX:
      hash_doubles(&h, r->convex->points, r->convex->n_points);
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TET_MESH:
      hash_doubles(&h, r->tet_mesh->vertices, r->tet_mesh->n_vertices);
      hash_ints(&h, r->tet_mesh->tets, r->tet_mesh->n_tets);
      cd_hash_sha256_u64(&h, r->tet_mesh->pressure != NULL);
      if (r->tet_mesh->pressure) hash_doubles(&h, r->tet_mesh->pressure->values, r->tet_mesh->pressure->n_values);
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH:
      hash_doubles(&h, r->tri_mesh->vertices, r->tri_mesh->n_vertices);
      hash_ints(&h, r->tri_mesh->triangles, r->tri_mesh->n_triangles);
      cd_hash_sha256_u64(&h, r->tri_mesh->allow_open ? 1 : 0);
      if (r->tri_mesh->n_convex_pieces > 0) { /* absent pieces keep the old hashes */
        cd_hash_sha256_u64(&h, (uint64_t)r->tri_mesh->n_convex_pieces);
        for (size_t i = 0; i < r->tri_mesh->n_convex_pieces; i++) {
          cd_hash_sha256_u64(&h, (uint64_t)r->tri_mesh->convex_pieces[i]->n_points);
          hash_doubles(&h, r->tri_mesh->convex_pieces[i]->points, r->tri_mesh->convex_pieces[i]->n_points);
        }
      }
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE:
      cd_hash_sha256_u64(&h, (uint64_t)r->mesh_file->format);
      cd_hash_sha256_bytes(&h, r->mesh_file->data.data, r->mesh_file->data.len);
      break;
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD: {
      const Contactd__V1__HeightField *hf = r->height_field;
      double v[6] = {hf->dx, hf->dy, hf->origin ? hf->origin->x : 0, hf->origin ? hf->origin->y : 0,
                     hf->origin ? hf->origin->z : 0, 0};
      cd_hash_sha256_u64(&h, (uint64_t)hf->nx);
      cd_hash_sha256_u64(&h, (uint64_t)hf->ny);
      cd_hash_sha256_u64(&h, hf->continuity == CONTACTD__V1__CONTINUITY__CONTINUITY_C2 ? 2 : 1);
      hash_doubles(&h, v, 5);
      hash_doubles(&h, hf->heights, hf->n_heights);
      break;
    }
    default: break;
  }
  /* Options that only exist for some inputs enter the hash only when they
   * apply, so ids of everything else stay what they were. */
  if (r->margin > 0) {
    static const char mtag[] = "margin";
    cd_hash_sha256_bytes(&h, mtag, sizeof mtag - 1);
    cd_hash_sha256_f64(&h, r->margin);
  }
  if (uses_surface_build(r) || (r->surface && r->shape_case == CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE)) {
    ce_surface_build_options o;
    to_surface_options(r, &o);
    static const char stag[] = "surface";
    cd_hash_sha256_bytes(&h, stag, sizeof stag - 1);
    cd_hash_sha256_f64(&h, o.edge_length);
    cd_hash_sha256_u64(&h, (uint64_t)o.field);
    cd_hash_sha256_f64(&h, o.core_depth);
    cd_hash_sha256_u64(&h, (uint64_t)o.use_hull_if_open);
  }
  if (r->vertex_pressure) {
    static const char ptag[] = "vertexPressure";
    cd_hash_sha256_bytes(&h, ptag, sizeof ptag - 1);
    hash_doubles(&h, r->vertex_pressure->values, r->vertex_pressure->n_values);
  }
  uint8_t d[32];
  cd_hash_sha256_final(&h, d);
  cd_hash_hex(d, id);
}

static double max_norm(const double *v, size_t nv) {
  double m = 0;
  for (size_t i = 0; i < nv; i++) {
    double d = sqrt(v[3 * i] * v[3 * i] + v[3 * i + 1] * v[3 * i + 1] + v[3 * i + 2] * v[3 * i + 2]);
    if (d > m) m = d;
  }
  return m;
}

/* A rigid TriMesh with convex pieces: the pieces' points concatenated for
 * ce_geometry_from_trimesh_pieces (counts checked by cd_geomspec_check). */
static ce_errno trimesh_pieces(const Contactd__V1__TriMesh *m, const ce_props *p, ce_geometry **out, ce_error *err) {
  size_t total = 0;
  for (size_t i = 0; i < m->n_convex_pieces; i++) total += m->convex_pieces[i]->n_points;
  double *pts = malloc(total * sizeof *pts);
  int32_t *np = malloc(m->n_convex_pieces * sizeof *np);
  ce_errno e = CE_ENOMEM;
  if (!pts || !np) {
    err->code = CE_ENOMEM;
    snprintf(err->message, sizeof err->message, "out of memory for %zu convex piece coordinates", total);
  } else {
    size_t off = 0;
    for (size_t i = 0; i < m->n_convex_pieces; i++) {
      memcpy(pts + off, m->convex_pieces[i]->points, m->convex_pieces[i]->n_points * sizeof *pts);
      off += m->convex_pieces[i]->n_points;
      np[i] = (int32_t)(m->convex_pieces[i]->n_points / 3);
    }
    e = ce_geometry_from_trimesh_pieces(m->vertices, (int32_t)(m->n_vertices / 3), m->triangles,
                                        (int32_t)(m->n_triangles / 3), !m->allow_open, pts, np,
                                        (int32_t)m->n_convex_pieces, p, out, err);
  }
  free(pts);
  free(np);
  return e;
}

static int from_ce(cd_status *st, const char *field, ce_errno e, const ce_error *err) {
  return cd_status_set(st, cd_status_from_ce(e), field, "%s", err->message[0] ? err->message : ce_strerror(e));
}

int cd_geomspec_build(const R *r, const cd_limits *l, ce_geometry **out, double *bound_radius, cd_status *st) {
  return cd_geomspec_build_progress(r, l, NULL, NULL, out, bound_radius, st);
}

/* A closed surface for compliant use: tetrahedralise it. */
static ce_errno build_surface(const R *r, const cd_limits *l, const double *v, int32_t nv, const int32_t *tris,
                              int32_t nf, const ce_props *p, ce_progress_fn progress, void *user, ce_geometry **out,
                              ce_error *err) {
  ce_surface_build_options o;
  to_surface_options(r, &o);
  o.max_tets = l->max_mesh_elements < INT32_MAX ? (int32_t)l->max_mesh_elements : INT32_MAX;
  o.progress = progress;
  o.progress_user = user;
  return ce_geometry_from_surface(v, nv, tris, nf, p, &o, out, NULL, err);
}

int cd_geomspec_build_progress(const R *r, const cd_limits *l, ce_progress_fn progress, void *user,
                               ce_geometry **out, double *bound_radius, cd_status *st) {
  ce_props p;
  to_props(r, &p);
  /* every build reports, and stops, through the caller's callback */
  p.progress = progress;
  p.progress_user = user;
  /* a mesh larger than the whole cache could never be kept: refuse it as
   * soon as its counts show it rather than after building it */
  p.max_bytes = (size_t)l->cache_bytes;
  ce_error err;
  memset(&err, 0, sizeof err);
  ce_errno e;
  *out = NULL;
  const char *f = shape_field(r);
  switch (r->shape_case) {
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TET_MESH: {
      const Contactd__V1__TetMesh *m = r->tet_mesh;
      *bound_radius = max_norm(m->vertices, m->n_vertices / 3);
      e = ce_geometry_from_tetmesh(m->vertices, (int32_t)(m->n_vertices / 3), m->tets, (int32_t)(m->n_tets / 4),
                                   m->pressure ? m->pressure->values : NULL, &p, out, &err);
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH: {
      const Contactd__V1__TriMesh *m = r->tri_mesh;
      *bound_radius = max_norm(m->vertices, m->n_vertices / 3);
      if (p.compliance == CE_COMPLIANT)
        e = build_surface(r, l, m->vertices, (int32_t)(m->n_vertices / 3), m->triangles,
                          (int32_t)(m->n_triangles / 3), &p, progress, user, out, &err);
      else if (m->n_convex_pieces == 0)
        e = ce_geometry_from_trimesh(m->vertices, (int32_t)(m->n_vertices / 3), m->triangles,
                                     (int32_t)(m->n_triangles / 3), !m->allow_open, &p, out, &err);
      else {
        for (size_t i = 0; i < m->n_convex_pieces; i++) /* the broad phase must see every piece */
          *bound_radius = fmax(*bound_radius, max_norm(m->convex_pieces[i]->points, m->convex_pieces[i]->n_points / 3));
        e = trimesh_pieces(m, &p, out, &err);
      }
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_MESH_FILE: {
      cd_mesh mesh;
      int rc = cd_meshfile_parse(r->mesh_file->data.data, r->mesh_file->data.len, (int)r->mesh_file->format,
                                 r->mesh_file->name, l->max_mesh_elements, &mesh, st);
      if (rc) return rc;
      int compliant = p.compliance == CE_COMPLIANT;
      if (!compliant && mesh.per_element == 4) {
        cd_meshfile_free(&mesh);
        return cd_status_set(st, CD_INVALID, "registerGeometry.meshFile",
                             "a rigid geometry needs a surface mesh file (OBJ or STL), not tetrahedra");
      }
      if (r->vertex_pressure && (mesh.per_element != 4 || r->vertex_pressure->n_values != (size_t)mesh.nv)) {
        cd_status_set(st, CD_INVALID, "registerGeometry.vertexPressure",
                      mesh.per_element != 4 ? "only for a tetrahedral mesh file (VTK or MSH)"
                                            : "has %zu values for %d vertices",
                      r->vertex_pressure->n_values, (int)mesh.nv);
        cd_meshfile_free(&mesh);
        return st->code;
      }
      *bound_radius = max_norm(mesh.vertices, (size_t)mesh.nv);
      if (compliant && mesh.per_element == 4) {
        ce_field_options fo;
        memset(&fo, 0, sizeof fo);
        fo.kind = r->vertex_pressure ? CE_FIELD_USER : CE_FIELD_DISTANCE;
        fo.user_field = r->vertex_pressure ? r->vertex_pressure->values : NULL;
        if (!r->vertex_pressure && r->surface) {
          fo.kind = r->surface->field == CONTACTD__V1__FIELD_KIND__FIELD_KIND_LAPLACE ? CE_FIELD_LAPLACE
                                                                                     : CE_FIELD_DISTANCE;
          fo.core_depth = r->surface->core_depth;
        }
        fo.progress = progress;
        fo.progress_user = user;
        e = ce_geometry_from_tetmesh_field(mesh.vertices, mesh.nv, mesh.elements, mesh.ne, &fo, &p, out, NULL,
                                           &err);
      } else if (compliant) {
        e = build_surface(r, l, mesh.vertices, mesh.nv, mesh.elements, mesh.ne, &p, progress, user, out, &err);
      } else {
        e = ce_geometry_from_trimesh(mesh.vertices, mesh.nv, mesh.elements, mesh.ne, 1, &p, out, &err);
      }
      cd_meshfile_free(&mesh);
      break;
    }
    case CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_HEIGHT_FIELD: {
      const Contactd__V1__HeightField *h = r->height_field;
      ce_vec3 o = h->origin ? (ce_vec3){h->origin->x, h->origin->y, h->origin->z} : (ce_vec3){0, 0, 0};
      e = ce_geometry_from_heightfield(h->heights, h->nx, h->ny, h->dx, h->dy, o,
                                       h->continuity == CONTACTD__V1__CONTINUITY__CONTINUITY_C2 ? 2 : 1, &p, out,
                                       &err);
      *bound_radius = 0;
      if (e == CE_OK) {
        ce_vec3 lo, hi;
        if (ce_heightfield_extent(*out, &lo, &hi, &err) == CE_OK) {
          double c[24];
          for (int k = 0; k < 8; k++) {
            c[3 * k] = k & 1 ? hi.x : lo.x;
            c[3 * k + 1] = k & 2 ? hi.y : lo.y;
            c[3 * k + 2] = k & 4 ? hi.z : lo.z;
          }
          *bound_radius = max_norm(c, 8);
        }
      }
      break;
    }
    default: {
      ce_shape s;
      to_shape(r, &s, bound_radius);
      e = ce_geometry_from_shape(&s, &p, out, &err);
      break;
    }
  }
  *bound_radius += r->margin; /* the broad phase sees the inflated copy */
  if (e != CE_OK) {
    if (*out) ce_geometry_free(*out);
    *out = NULL;
    if (e == CE_EBYTES)
      return cd_status_set(st, CD_EXHAUSTED, f,
                           "%s (cache_bytes: a geometry larger than the whole cache cannot be kept; use a coarser "
                           "resolution or raise cache_bytes)",
                           err.message);
    /* a margin the mesh cannot take: the error names the margin's field */
    return from_ce(st, r->margin > 0 && strncmp(err.message, "margin", 6) == 0 ? "registerGeometry.margin" : f, e,
                   &err);
  }
  return 0;
}
