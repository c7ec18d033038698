/* ce.h — contactd's contact engine: the public API.
 *
 * Prefix: ce_ ("contact engine"). No I/O, no globals. Geometry is immutable
 * once built and may be shared between threads; per-query scratch comes from
 * a caller-owned arena (one per worker thread).
 *
 * Frames and conventions (read once, they hold everywhere):
 *  - Doubles, SI units (m, Pa, s, N).
 *  - A pose X_WB maps a point expressed in body frame B to the world frame:
 *    p_W = R_WB p_B + p_WB.
 *  - A spatial velocity V_WB is (w, v): angular velocity of B and linear
 *    velocity of B's origin, both expressed in the world frame.
 *  - A wrench is (torque, force), expressed in the world frame, about the point
 *    that the field name states.
 *  - Contact normals point OUT OF body B and INTO body A: the pressure pushes
 *    A along +n and B along -n. A relative normal velocity
 *    vn = (v_A(x) - v_B(x)) . n  is positive when the bodies separate.
 *  - A half space's boundary is its frame's z = 0 plane; material lies at
 *    z <= 0 and the outward normal is +z.
 */
#ifndef CE_H
#define CE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- errors ----------------------------------------------------------- */

/* X-macro error table: name, message. */
#define CE_ERRNO_MAP(XX)                                                     \
  XX(OK, "success")                                                          \
  XX(EINVAL, "invalid argument")                                             \
  XX(ENONFINITE, "non-finite number")                                        \
  XX(EINVERTED, "inverted or zero-volume tetrahedron")                       \
  XX(EDEGENERATE, "degenerate element")                                      \
  XX(EOPEN, "mesh is not closed")                                            \
  XX(EEMPTY, "empty mesh")                                                   \
  XX(ERANGE, "index out of range")                                           \
  XX(EFIELD, "invalid pressure field")                                       \
  XX(ENOMEM, "out of memory")                                                \
  XX(EUNSUPPORTED, "unsupported geometry pair or file format")               \
  XX(ELIMIT, "size limit exceeded")                                          \
  XX(ECANCELED, "build cancelled")                                           \
  XX(EBYTES, "geometry larger than its memory limit")

typedef enum {
#define CE_XX_ENUM(name, msg) CE_##name,
  CE_ERRNO_MAP(CE_XX_ENUM)
#undef CE_XX_ENUM
  CE_ERRNO_COUNT
} ce_errno;

/* Error details. `message` names the offending element ("tet 17 has volume
 * -1e-9 (inverted)"). Always NUL terminated. */
typedef struct ce_error {
  ce_errno code;
  char message[256];
} ce_error;

const char *ce_strerror(ce_errno code); /* "invalid argument" */
const char *ce_errname(ce_errno code);  /* "EINVAL" */

/* ---- math types ------------------------------------------------------- */

typedef struct ce_vec3 { double x, y, z; } ce_vec3;
typedef struct ce_quat { double w, x, y, z; } ce_quat;
typedef struct ce_mat3 { double m[3][3]; } ce_mat3; /* row-major m[row][col] */
typedef struct ce_pose { ce_mat3 R; ce_vec3 p; } ce_pose;
typedef struct ce_spatial_velocity { ce_vec3 w, v; } ce_spatial_velocity;
typedef struct ce_wrench { ce_vec3 torque, force; } ce_wrench;

/* The pose with rotation from unit quaternion q (w first) and position p:
 * how a caller turns a wire pose into a ce_pose. */
ce_pose ce_pose_from_quat(ce_quat q, ce_vec3 p);

/* ---- materials and properties ----------------------------------------- */

typedef struct ce_material {
  double dissipation; /* Hunt-Crossley d, s/m, >= 0 */
  double friction;    /* Coulomb mu, >= 0 */
} ce_material;

typedef enum {
  CE_RIGID = 1,
  CE_COMPLIANT = 2,
} ce_compliance;

/* Progress of a long build: fraction in [0, 1] within a stage, and the
 * stage's name: "tetrahedralise", "field" and "finish" (surface builds),
 * "geometry" (any geometry build: checking the mesh, its faces, default
 * field and hierarchies; a Laplace field builds two geometries, so its
 * "geometry" stage runs twice). Called from the building thread, often
 * enough to double as the build's cancellation point: return 0 to go on,
 * nonzero to stop. The build then frees everything it allocated, leaves
 * its output NULL and fails with CE_ECANCELED ("... build cancelled"). Every
 * stage calls it every few ms of its work, counted in work done (PCG: ~4M
 * matrix and vector entries touched; a hierarchy: 65,536 elements fitted
 * and split), not in time, so the calls are deterministic. */
typedef int (*ce_progress_fn)(void *user, double fraction, const char *stage);

typedef struct ce_props {
  ce_compliance compliance;
  double modulus;        /* hydroelastic modulus E, Pa (> 0 if compliant) */
  double hint;           /* resolution hint: target edge length, m (> 0) */
  double slab_thickness; /* compliant half space only, m, in [1e-9, 1e9] */
  ce_material material;
  /* Not part of the geometry: the build's progress callback and
   * cancellation point (stage "geometry"; NULL: none), for every builder
   * that takes these props. */
  ce_progress_fn progress;
  void *progress_user;
  /* > 0: a tet or triangle mesh build fails with CE_EBYTES as soon as its
   * element counts show that the geometry would hold more heap bytes than
   * this (a lower bound is compared: the arrays and hierarchy nodes every
   * such geometry has), before the expensive part (0: no limit). */
  size_t max_bytes;
  /* Margin delta, m (>= 0; 0 = none): compliant geometries with a tet
   * mesh only (ce_geometry_from_shape but for half spaces,
   * ce_geometry_from_tetmesh, ce_geometry_from_tetmesh_field,
   * ce_geometry_from_surface; the rigid and terrain builders refuse one).
   * The geometry keeps its mesh and field for contact, and also holds a
   * copy inflated by delta: a layer of tets over its boundary (sphere,
   * capsule: along the radius; every other mesh: each boundary face plane
   * moved out by delta, ce_offset.c) whose field extends the boundary's,
   * zero on the original surface and negative in the layer. Pairs whose
   * bodies do not touch but whose inflated copies do are
   * CE_CONTACT_SPECULATIVE (ce_result.speculative, ce_margin.c). */
  double margin;
} ce_props;

/* ---- shapes ----------------------------------------------------------- */

typedef enum {
  CE_SHAPE_SPHERE = 1,    /* radius */
  CE_SHAPE_BOX,           /* size (full edge lengths) */
  CE_SHAPE_CYLINDER,      /* radius, length; axis = z */
  CE_SHAPE_CAPSULE,       /* radius, length of the medial segment; axis = z */
  CE_SHAPE_ELLIPSOID,     /* semi-axes a, b, c = size.x, size.y, size.z */
  CE_SHAPE_HALFSPACE,     /* boundary z = 0, material at z <= 0 */
  CE_SHAPE_CONVEX,        /* points (x,y,z triples), npoints */
  CE_SHAPE_TETMESH,       /* user tet mesh (ce_geometry_from_tetmesh) */
  CE_SHAPE_TRIMESH,       /* user surface mesh (ce_geometry_from_trimesh) */
  CE_SHAPE_HEIGHTFIELD,   /* terrain grid (ce_geometry_from_heightfield) */
} ce_shape_type;

typedef struct ce_shape {
  ce_shape_type type;
  double radius;
  double length;
  ce_vec3 size;
  const double *points; /* CE_SHAPE_CONVEX: 3*npoints doubles */
  int32_t npoints;
} ce_shape;

/* ---- geometry --------------------------------------------------------- */

typedef struct ce_geometry ce_geometry; /* opaque, immutable once built */

typedef struct ce_geometry_info {
  ce_shape_type shape;
  ce_compliance compliance;
  int is_halfspace;
  int32_t vertices;
  int32_t tetrahedra;   /* compliant meshes */
  int32_t triangles;    /* rigid meshes */
  int32_t bvh_nodes;
  double min_pressure, max_pressure; /* compliant */
  double volume;        /* meshes that enclose volume, else 0 */
  size_t bytes;         /* heap bytes held by the geometry */
} ce_geometry_info;

/* Build a primitive. Its dimensions (a compliant half space's slab) must
 * lie in [1e-9, 1e9] m and within a factor 1e9 of each other (an
 * ellipsoid's 1e4); a convex point set's coordinates within +-1e9 m,
 * spanning at least 1e-9 m (the engine's limits table, ce_limits.h).
 * On failure returns the error code, fills *err (may be NULL) and leaves
 * *out NULL. */
ce_errno ce_geometry_from_shape(const ce_shape *shape, const ce_props *props,
                                ce_geometry **out, ce_error *err);

/* Build a compliant geometry from a tet mesh. vertices: 3*nv doubles;
 * tets: 4*nt indices, positively oriented (det[v1-v0, v2-v0, v3-v0] > 0).
 * pressure: nv values (Pa), zero on the boundary and >= 0 elsewhere; NULL
 * means E times the normalised distance to the boundary. */
ce_errno ce_geometry_from_tetmesh(const double *vertices, int32_t nv,
                                  const int32_t *tets, int32_t nt,
                                  const double *pressure, const ce_props *props,
                                  ce_geometry **out, ce_error *err);

/* Build a rigid geometry from a triangle surface mesh with counter-clockwise
 * (outward) winding. `require_closed` rejects open meshes (CE_EOPEN). */
ce_errno ce_geometry_from_trimesh(const double *vertices, int32_t nv,
                                  const int32_t *tris, int32_t nf,
                                  int require_closed, const ce_props *props,
                                  ce_geometry **out, ce_error *err);

/* ce_geometry_from_trimesh plus a convex decomposition for point contact:
 * npieces pieces, piece i the convex hull of piece_npoints[i] points
 * (>= 4, not coplanar) taken in order from piece_points (x,y,z triples, the
 * mesh's frame). The point-contact model then collides piece by piece (one
 * contact per penetrating piece pair) instead of using the mesh's convex
 * hull; the hydroelastic model still uses the mesh. Errors name the piece
 * ("convex piece 2: ..."). npieces = 0 is ce_geometry_from_trimesh. */
ce_errno ce_geometry_from_trimesh_pieces(const double *vertices, int32_t nv,
                                         const int32_t *tris, int32_t nf,
                                         int require_closed,
                                         const double *piece_points,
                                         const int32_t *piece_npoints,
                                         int32_t npieces, const ce_props *props,
                                         ce_geometry **out, ce_error *err);

/* Build a rigid terrain from a digital elevation map (the port-based DEM terrain paper): heights
 * z[j * nx + i] (nx * ny float64) at (origin.x + i dx, origin.y + j dy),
 * raised by origin.z, in the geometry frame; material below the surface,
 * outward normal up. The surface is reconstructed on demand from local
 * patches: continuity 1 = bicubic (C1), 2 = biquintic (C2); nothing is
 * meshed (memory ~ 8 bytes per sample). Outside the grid's rectangle there
 * is no terrain. Needs >= 4 x 4 samples within +-1e9 m (with origin.z)
 * and spacings in [1e-9, 1e9] m (the range of primitive dimensions);
 * props->compliance must be CE_RIGID. Compliant bodies touch it
 * hydroelastically; rigid bodies by point contact (ce_heightfield.c). */
ce_errno ce_geometry_from_heightfield(const double *heights, int32_t nx, int32_t ny, double dx,
                                      double dy, ce_vec3 origin, int continuity,
                                      const ce_props *props, ce_geometry **out,
                                      ce_error *err);

/* The reconstructed terrain surface z = F(x, y) at one point, geometry
 * frame: height, derivatives, Gauss frame (tangent_x = f_u / |f_u| with
 * f_u = (1, 0, dz/dx), normal = f_u x f_v / |.| pointing up, tangent_y =
 * normal x tangent_x) and curvatures with respect to the upward normal
 * (positive for a bowl). */
typedef struct ce_heightfield_point {
  double height;
  double dz_dx, dz_dy;
  double d2z_dx2, d2z_dxdy, d2z_dy2;
  ce_vec3 normal, tangent_x, tangent_y;
  double mean_curvature, gaussian_curvature;
  double k1, k2;           /* principal curvatures, k1 >= k2 */
  int32_t cell_i, cell_j;  /* the patch: cell [x_i, x_i+1] x [y_j, y_j+1] */
} ce_heightfield_point;

/* CE_ERANGE outside the grid's rectangle, CE_EINVAL for a non-terrain. */
ce_errno ce_heightfield_eval(const ce_geometry *g, double x, double y,
                             ce_heightfield_point *out, ce_error *err);

/* A box (geometry frame) holding the whole reconstructed surface: the
 * grid's rectangle in x, y and a bound of the surface's heights in z (the
 * samples' range widened for the patches' overshoot). For broad phases:
 * the terrain is one large body. CE_EINVAL for a non-terrain. */
ce_errno ce_heightfield_extent(const ce_geometry *g, ce_vec3 *lo, ce_vec3 *hi,
                               ce_error *err);

void ce_geometry_free(ce_geometry *g);
void ce_geometry_get_info(const ce_geometry *g, ce_geometry_info *info);

/* The boundary of a geometry as triangles in its own frame, for drawing:
 * a rigid mesh's triangles; a tet mesh's faces without a neighbour, wound
 * outward, with only the vertices they use; a terrain sampled on a grid of
 * CE_BOUNDARY_TERRAIN_SAMPLES per side. A half space has none (CE_EINVAL:
 * its boundary is the plane z = 0). Arrays are malloc'd; free with
 * ce_boundary_free. */
#define CE_BOUNDARY_TERRAIN_SAMPLES 129
typedef struct ce_boundary {
  int32_t nv, nt;
  double *v;    /* 3 nv coordinates */
  int32_t *tri; /* 3 nt vertex indices, counter-clockwise seen from outside */
} ce_boundary;
ce_errno ce_geometry_boundary(const ce_geometry *g, ce_boundary *out, ce_error *err);
void ce_boundary_free(ce_boundary *b);

/* ---- arena ------------------------------------------------------------ */

/* A bump allocator for per-query scratch. Not thread-safe: one per worker.
 * ce_arena_reset() keeps the memory for the next query. */
typedef struct ce_arena ce_arena;
ce_arena *ce_arena_create(size_t initial_bytes);
void ce_arena_destroy(ce_arena *a);
void ce_arena_reset(ce_arena *a);
/* 16-byte aligned; NULL when the arena's byte budget is exhausted. */
void *ce_arena_alloc(ce_arena *a, size_t bytes);
/* Largest byte budget the arena may hold (0 = unlimited). */
void ce_arena_set_budget(ce_arena *a, size_t max_bytes);
size_t ce_arena_used(const ce_arena *a);

/* ---- contact query ---------------------------------------------------- */

typedef struct ce_body {
  const ce_geometry *geometry;
  ce_pose X_WB;
  ce_spatial_velocity V_WB;
  ce_material material; /* normally the geometry's; a query may override */
  /* Point-contact stiffness k, N/m (>= 0; 0 = the default below). Lives in the
   * body (not ce_material, whose positional initialisers it would break):
   * the caller keeps it per geometry like the material. Used only by the
   * point-contact model (ce_point_contact.c), where the pair's
   * stiffness is k = k1 k2 / (k1 + k2). Default per geometry:
   *   compliant:  k = E V^(1/3)          (modulus times a size; V = volume)
   *   rigid:      k = 2 rho g V / delta  (rho = 1000 kg/m^3, g = 9.81 m/s^2,
   *               delta = 1e-3 m: two such bodies pressed by the weight of
   *               one sink by the penetration allowance delta, as Drake's
   *               heuristic; a body on a rigid half space sinks delta/2)
   *   half space: infinite (the other side's stiffness is the pair's). */
  double point_stiffness;
} ce_body;

typedef enum {
  CE_REPRESENTATION_POLYGON = 0,  /* convex polygons (Masterjohn et al. 2022) */
  CE_REPRESENTATION_TRIANGLE = 1, /* polygons fanned around centroids (000) */
} ce_representation;

/* Contact model of a query (Drake's documentation, Modeling Compliant Contact).
 *  HYDROELASTIC_WITH_FALLBACK (default): hydroelastic where a pair has a
 *    hydroelastic model (one side compliant), compliant point contact for
 *    rigid-rigid and every other unsupported pair;
 *  HYDROELASTIC: hydroelastic only, unsupported pairs stay UNSUPPORTED;
 *  POINT: compliant point contact for every pair.
 * Two half spaces never touch in a defined way: always UNSUPPORTED. */
typedef enum {
  CE_MODEL_HYDROELASTIC_WITH_FALLBACK = 0,
  CE_MODEL_HYDROELASTIC = 1,
  CE_MODEL_POINT = 2,
} ce_contact_model;

typedef struct ce_options {
  ce_representation representation;
  int want_surface; /* fill result.surface */
  int want_patches; /* fill result.patches (equivalent contact points) */
  int want_face_contacts; /* fill result.face_contacts (one point contact per face) */
  double stiction_tolerance; /* v_s, m/s; <= 0 means the default 1e-4 */
  ce_contact_model model;    /* default (0): hydroelastic with fallback */
  /* Fill result.strain_energy, result.energy and each patch's strain_energy
   * (ce_energy.c). Off: those stay zero and nothing else changes. */
  int want_energy;
  int want_jacobian; /* fill result.jacobian (see "wrench Jacobians" below) */
  /* K > 0: fill result.reduced with at most K point contacts per patch
   * whose forces and moments add up to the patch's (ce_reduced_contact;
   * also fills result.patches). 0 = off; at most CE_REDUCE_MAX_POINTS. */
  int32_t reduced_contacts;
} ce_options;

#define CE_REDUCE_MAX_POINTS 64

void ce_options_default(ce_options *o);

/* Contact surface in the world frame. Arrays live in the query's arena.
 * Faces are convex polygons (or triangles); face f's vertex indices are
 * face_vertices[face_offsets[f] .. face_offsets[f+1]). Neighbouring faces
 * share a vertex where the construction names it by mesh features, so
 * every surface is one connected mesh: compliant–rigid, mesh–half-space
 * and half-space–mesh always; compliant–compliant too, except that a
 * point within ~1e-13 of the scale of a mesh feature it is not on (where
 * the plane runs through mesh vertices or along edges, as between aligned
 * boxes) may be made twice, the copies equal to rounding. The triangle
 * representation shares each polygon's edge vertices between its fan. */
typedef struct ce_surface {
  int32_t nv, nf;
  ce_vec3 *vertices;
  double *pressure;        /* per vertex, Pa */
  int32_t *face_offsets;   /* nf + 1 */
  int32_t *face_vertices;
  ce_vec3 *normal;         /* per face, unit, out of B into A */
  double *area;            /* per face */
  ce_vec3 *centroid;       /* per face (area centroid) */
  double *centroid_pressure; /* per face, pressure at the centroid */
  ce_vec3 *grad_a, *grad_b;  /* per face pressure gradient of A / B, world;
                                NULL for a rigid side */
  int32_t *element_a, *element_b; /* source element per face (tet/triangle
                                     index; 0 for a half space) */
  int32_t *patch;          /* per face patch index (when patches computed) */
} ce_surface;

/* Net normal force, area and equivalent contact point of one patch (or of
 * the whole surface). */
typedef struct ce_patch {
  int32_t faces;
  double area;
  ce_vec3 normal_force;   /* sum of normal tractions (with dissipation), N */
  double normal_force_magnitude;
  ce_vec3 point;          /* equivalent contact point (centre of pressure) */
  double strain_energy;   /* J, when energy is requested (ce_result.energy) */
} ce_patch;

/* Per-face point-contact approximation (Masterjohn et al. 2022, section IV). */
typedef struct ce_face_contact {
  int32_t face;
  ce_vec3 position; /* face centroid */
  ce_vec3 normal;   /* out of B into A */
  double area;      /* A */
  double pressure;  /* p0 at the centroid */
  double g;         /* effective gradient gA gB/(gA+gB), Pa/m */
  double stiffness; /* k = g A, N/m */
  double phi0;      /* -p0/g, m (a signed distance, negative in contact) */
} ce_face_contact;

/* One point of a patch's reduced contact set (ce_options.reduced_contacts,
 * ce_reduce.c), for solvers that take point constraints. A patch of K
 * points: its centre of pressure and the centroids of the faces where the
 * patch reaches furthest in K - 1 tangent directions; every face goes to
 * its nearest point (in the plane normal to the patch's net normal force).
 * The forces are the clusters' forces, then adjusted by the least-squares
 * correction (each point's change weighted by its cluster's normal force)
 * with zero net force that makes the points' moments equal the patch's:
 * the points' forces sum to the patch's net force, and their moments
 * (position x force) plus `couple` to its net moment, to rounding. `couple` is nonzero only on a
 * patch's first point and only when its points are fewer than three or
 * collinear (K = 1, K = 2, one-face patches): the moment that forces at
 * those points cannot carry (for a flat patch, K = 1: the torsional moment
 * about the normal). Point-contact pairs give one point per contact. */
typedef struct ce_reduced_contact {
  int32_t patch;      /* index of the patch (ce_result.patches) */
  ce_vec3 position;   /* m, world */
  ce_vec3 normal;     /* unit, out of B into A: the cluster's force-weighted normal */
  ce_vec3 force;      /* on A, N (normal and tangential parts) */
  ce_vec3 couple;     /* pure moment on A carried with the point, N m (see above) */
  double stiffness;   /* k = sum of g A over the cluster's faces, N/m (Masterjohn et al. 2022) */
  double dissipation; /* Hunt-Crossley d of the pair, s/m */
  double separation;  /* phi, m: k (-phi) = the cluster's elastic normal force (integral of p) */
} ce_reduced_contact;

typedef enum {
  CE_CONTACT_NONE = 0,        /* no overlap */
  CE_CONTACT_SURFACE = 1,     /* a (non-empty) contact surface */
  CE_CONTACT_UNSUPPORTED = 2, /* no model for the pair (e.g. rigid-rigid under
                                 CE_MODEL_HYDROELASTIC, two half spaces) */
  CE_CONTACT_POINT = 3,       /* a point contact (penetration, point model) */
  CE_CONTACT_SPECULATIVE = 4, /* apart, but within the bodies' margins
                                 (ce_props.margin): zero force, and
                                 result.speculative says how far and how
                                 stiff the contact will be */
} ce_contact_status;

/* A speculative contact (ce_margin.c): the surface of the bodies' inflated
 * copies, all of it where the extended fields are negative (apart). Per
 * face f of it, with g_f = gA gB / (gA + gB) the effective gradient along
 * its normal (Masterjohn et al. 2022) and p its (negative) pressure, the
 * bodies must approach by -p / g_f for the fields to reach zero there. */
typedef struct ce_speculative {
  double separation; /* m, > 0: the least -p / g over the faces' corners */
  ce_vec3 normal;    /* unit, out of B into A: the normal of that face */
  ce_vec3 point;     /* m, world: that corner */
  double stiffness;  /* N/m: sum of g_f A_f over the speculative surface,
                        the per-face springs' stiffness at touch */
  int32_t faces;     /* faces of the speculative surface */
} ce_speculative;

/* The point-contact answer of a pair (model CE_MODEL_POINT): the minimum
 * translational distance (MTD) between the two (convex) shapes and the
 * force law fn = k x (1 + d xdot)+ of Drake's docs. Translating A by
 * depth * normal makes the shapes touch; then witness_a and witness_b
 * coincide (witness_b = witness_a + depth * normal). */
typedef struct ce_point_mtd {
  double depth;        /* penetration x, m (> 0 when the shapes overlap) */
  ce_vec3 normal;      /* unit, out of B into A */
  ce_vec3 witness_a;   /* deepest point of A (on A's surface, inside B) */
  ce_vec3 witness_b;   /* deepest point of B (on B's surface, inside A) */
  ce_vec3 point;       /* where the force acts: midpoint of the witnesses */
  double stiffness;    /* combined k, N/m */
  double dissipation;  /* combined d, s/m */
  double depth_rate;   /* xdot = -(v_A - v_B).n at the point, m/s */
  double normal_force; /* fn >= 0, N */
  ce_vec3 friction_force; /* regularised Coulomb force on A, N */
  int hull_a, hull_b;  /* 1: a non-convex mesh was replaced by its hull */
  /* > 0: that side's registered convex pieces (this many) were used instead
   * of its hull (ce_geometry_from_trimesh_pieces); then `contacts` counts
   * the penetrating piece pairs (each one contact, forces summed in the
   * wrenches and total) and the fields above describe the deepest. */
  int32_t pieces_a, pieces_b;
  int32_t contacts;
} ce_point_mtd;

/* How result.strain_energy was obtained (ce_options.want_energy).
 * The strain energy of a hydroelastic contact (Elandt et al. 2019, Eq. 1 for
 * both bodies) is U = integral over the overlap of min(p_A, p_B) dV; against
 * a rigid body, of the compliant side's field; its negative gradient with
 * respect to the relative pose is the elastic (dissipation- and
 * friction-free) wrench. */
typedef enum {
  CE_ENERGY_NONE = 0,        /* not requested */
  CE_ENERGY_EXACT = 1,       /* exact for the piecewise-linear fields */
  CE_ENERGY_FORCE_LAW = 2,   /* point contact: k x^2 / 2 per contact, the
                                potential of the elastic part fn = k x of
                                fn = k x (1 + d xdot)+ */
  CE_ENERGY_UNAVAILABLE = 3, /* not computed for this pair (reported 0,
                                result.energy_note says why): a mesh against
                                an open rigid mesh; unsupported pairs */
} ce_energy_status;
/* ---- wrench Jacobians ---------------------------------------------------
 * The derivatives of wrench_a (the wrench on A about A's origin, world
 * frame) with respect to the bodies' poses and spatial velocities, each a
 * 6x6 matrix stored row-major (entry [6 i + j] = d row_i / d column_j):
 *  - rows: (torque x, y, z, force x, y, z) of wrench_a;
 *  - pose columns of a body: a perturbation (dth, dp) in the world frame,
 *    ordered (dth x, y, z, dp x, y, z), applied as R <- exp([dth]x) R and
 *    p <- p + dp (the body turns about its own origin);
 *  - velocity columns of a body: its (w x, y, z, v x, y, z), world frame,
 *    v the velocity of its origin (ce_spatial_velocity).
 * They are the derivatives of what the engine computes (forward-mode
 * differentiation of the surface construction, its area and quadrature and
 * the traction law; ce_jacobian.c), not finite differences. Where a
 * perturbation would change the surface's topology (a vertex crossing an
 * element face) they are the one-sided derivative of the current topology.
 * The wrench depends on the poses only through the relative pose, up to the
 * frame it is expressed in and the point it is taken about, so
 *   d_pose_b[dp cols] = -d_pose_a[dp cols],
 *   d_pose_b[dth cols] = S - d_pose_a[dth cols] - d_pose_a[dp cols] [p_B - p_A]x
 *                        + sum over k = A, B of (d_velocity_k[w cols] [w_k]x
 *                                              + d_velocity_k[v cols] [v_k]x),
 * S = (-[torque]x; -[force]x): a common rotation turns the wrench, and the
 * velocities (world-frame vectors) must turn with the bodies for the
 * motion to be a change of frame ([u]x is the cross-product matrix,
 * [u]x v = u x v). The velocities: d_velocity_b[v cols] =
 * -d_velocity_a[v cols], d_velocity_b[w cols] = -d_velocity_a[w cols] -
 * d_velocity_a[v cols] [p_B - p_A]x (only the relative motion counts).
 * Worked example: a compliant sphere A (modulus E, radius R, centre at
 * height R - x above a rigid half space B, the world's z = 0 plane) is
 * pushed up by fz(x) = pi E (x^2 - 2 x^3 / (3R)) (the field p = E (R - r)/R
 * integrated over the disc the plane cuts); raising A lowers x, so the
 * normal stiffness entry d_pose_a[6 * 5 + 5] (d fz / d pz of A) is
 * -dfz/dx = -2 pi E x (1 - x/R) (a tessellated sphere: the derivative of
 * its own fz(x), close to this), and d_pose_b[6 * 5 + 5] is its negative.
 * Available for every hydroelastic pair in the polygon representation and
 * for the point-contact model (the MTD's closest features and the force
 * law differentiated; ce_point_jacobian.c), all zero when the bodies are
 * apart; unavailable, with jacobian_note saying why, for the triangle
 * representation, a surface with a corner on fewer than two independent
 * element planes, and a point contact whose normal is degenerate or lies at
 * a terrain's edge. */
typedef struct ce_jacobian {
  double d_pose_a[36], d_pose_b[36];
  double d_velocity_a[36], d_velocity_b[36];
} ce_jacobian;

typedef enum {
  CE_JACOBIAN_NOT_REQUESTED = 0,
  CE_JACOBIAN_OK = 1,          /* result.jacobian holds the four matrices */
  CE_JACOBIAN_UNAVAILABLE = 2, /* none for this pair: jacobian_note says why */
} ce_jacobian_status;

typedef struct ce_result {
  ce_contact_status status;
  /* Net wrench on A about A's origin and on B about B's origin, and on A
   * about the surface centroid; world frame. */
  ce_wrench wrench_a, wrench_b, wrench_a_centroid;
  double area;
  ce_vec3 centroid;      /* area-weighted centroid of the whole surface */
  ce_patch total;        /* the whole surface as one patch */
  int32_t npatches;
  ce_patch *patches;
  int32_t nface_contacts;
  ce_face_contact *face_contacts;
  int32_t face_contacts_excluded; /* faces with gA <= 0 or gB <= 0 */
  ce_surface surface;      /* filled when want_surface (nf = 0 otherwise) */
  /* counters */
  int64_t candidate_pairs; /* leaf element pairs from the BVH traversal */
  int64_t polygons;        /* element pairs that produced a polygon */
  int64_t faces_dropped;   /* polygons dropped by the gradient rule */
  double combined_modulus;     /* E* (series), Pa; inf if both rigid */
  ce_material combined_material;
  /* Which model produced this result: CE_MODEL_HYDROELASTIC or
   * CE_MODEL_POINT (never the fallback value); for CE_CONTACT_UNSUPPORTED
   * the model that was asked for and has no answer for the pair. */
  ce_contact_model model;
  ce_point_mtd point;          /* filled when model == CE_MODEL_POINT */
  /* Strain energy of the pair, J (also in total.strain_energy), and how it
   * was obtained; zero and CE_ENERGY_NONE unless options.want_energy. */
  double strain_energy;
  ce_energy_status energy;
  const char *energy_note;     /* static text: why it is unavailable, or NULL */
  /* Filled when options.want_jacobian (arena memory; NULL otherwise or
   * when unavailable). */
  ce_jacobian_status jacobian_status;
  ce_jacobian *jacobian;
  const char *jacobian_note;   /* static text: why it is unavailable */
  /* Filled when options.reduced_contacts > 0 (arena memory): the points of
   * patch 0, then of patch 1, ... */
  int32_t nreduced;
  ce_reduced_contact *reduced;
  /* Filled when status is CE_CONTACT_SPECULATIVE (wrenches zero). */
  ce_speculative speculative;
} ce_result;

/* Compute the contact between bodies a and b. All result arrays live in
 * `arena`; they stay valid until the arena is reset. Returns CE_OK with
 * result->status CE_CONTACT_UNSUPPORTED for pairs without a hydroelastic
 * model; an error code only for bad input, arena exhaustion, or a wrench
 * that overflows double precision (CE_ENONFINITE: extreme materials or
 * speeds). */
ce_errno ce_contact(const ce_body *a, const ce_body *b, const ce_options *opt,
                    ce_arena *arena, ce_result *result, ce_error *err);

/* Material combination laws (Drake, Modeling Compliant Contact). E = INFINITY means rigid. */
double ce_combine_modulus(double ea, double eb);
double ce_combine_dissipation(double ea, double da, double eb, double db);
double ce_combine_friction(double mua, double mub);


/* ---- mesh files and compliant geometry from assets -------------------- */

/* Mesh file formats (ce_meshio.c). Parsing works on bytes in memory; the
 * engine never opens files. */
typedef enum {
  CE_MESH_AUTO = 0, /* sniff: "# vtk", "$MeshFormat", binary/ASCII STL, else OBJ (PLY: CE_EUNSUPPORTED) */
  CE_MESH_VTK = 1,  /* VTK legacy UNSTRUCTURED_GRID 4.2 or 5.1, ASCII or BINARY (big-endian) */
  CE_MESH_MSH = 2,  /* Gmsh MSH 2.2 or 4.1, ASCII or binary */
  CE_MESH_OBJ = 3,  /* Wavefront OBJ (v, f; polygons fanned) */
  CE_MESH_STL = 4,  /* STL ASCII or binary */
} ce_mesh_format;

/* A parsed mesh: malloc'd flat arrays, free with ce_mesh_data_free. Tet
 * formats (VTK, MSH) fill tets (cells of other types are skipped and
 * counted); surface formats (OBJ, STL) fill tris. Tets are as in the file
 * (ce_geometry_from_tetmesh wants them positively oriented). */
typedef struct ce_mesh_data {
  ce_mesh_format format;   /* the format actually parsed */
  int32_t nv, ntri, ntet;
  double *vertices;        /* 3 * nv */
  int32_t *tris;           /* 3 * ntri */
  int32_t *tets;           /* 4 * ntet */
  int32_t skipped_cells;   /* cells of other types (VTK, MSH) */
  int32_t welded;          /* vertices merged into others by welding */
  int32_t dropped_faces;   /* faces that welding made degenerate */
} ce_mesh_data;

/* Parse `len` bytes. weld_tol: surface formats merge vertices closer than
 * weld_tol in every coordinate (max-norm; 0 = exact duplicates only; < 0 =
 * no welding). STL is always welded (at max(weld_tol, 0)). Errors name the
 * line (text) or byte offset (binary) and what was expected; counts are
 * checked against the bytes left before anything is allocated; at most
 * 2^28 vertices or cells (CE_ELIMIT). On error *out is zeroed. */
ce_errno ce_mesh_parse(const void *bytes, size_t len, ce_mesh_format format, double weld_tol,
                       ce_mesh_data *out, ce_error *err);
void ce_mesh_data_free(ce_mesh_data *m);

/* Pressure field kinds for tet meshes built from assets (ce_laplace.c). */
typedef enum {
  CE_FIELD_LAPLACE = 0,  /* harmonic: 0 on the boundary, 1 on the core */
  CE_FIELD_DISTANCE = 1, /* normalised distance to the boundary */
  CE_FIELD_USER = 2,     /* per-vertex values given by the caller (Pa) */
} ce_field_kind;

typedef struct ce_field_options {
  ce_field_kind kind;
  /* LAPLACE: the core (eps = 1) is the vertices whose distance to the
   * boundary is >= core_depth (m); core_depth <= 0 means the deepest
   * vertices: depth >= 0.75 x the largest depth (a band, so that ring-like
   * cores such as a torus's are whole). */
  double core_depth;
  const double *user_field; /* USER: nv pressures, Pa */
  double tolerance;         /* PCG relative residual; <= 0: 1e-10 */
  ce_progress_fn progress;
  void *progress_user;
} ce_field_options;

typedef struct ce_field_report {
  int32_t core_vertices, boundary_vertices;
  int32_t iterations;   /* PCG iterations (LAPLACE) */
  double residual;      /* final relative residual (LAPLACE) */
} ce_field_report;

/* Laplace field of a tet mesh: eps (nv values) = 0 on the boundary
 * vertices, 1 on the core, harmonic (linear FEM, Jacobi-preconditioned CG)
 * elsewhere. Unused vertices get 0. */
ce_errno ce_tetmesh_laplace(const double *vertices, int32_t nv, const int32_t *tets, int32_t nt,
                            const ce_field_options *opt, double *eps, ce_field_report *rep,
                            ce_error *err);

/* ce_geometry_from_tetmesh with a chosen field: p = E eps (LAPLACE), the
 * distance field (DISTANCE) or the user's values (USER, checked: finite,
 * >= 0, zero on the boundary). */
ce_errno ce_geometry_from_tetmesh_field(const double *vertices, int32_t nv, const int32_t *tets,
                                        int32_t nt, const ce_field_options *field,
                                        const ce_props *props, ce_geometry **out,
                                        ce_field_report *rep, ce_error *err);

/* Compliant geometry from a closed triangle surface (ce_tetrahedralize.c). */
/* The most tets a tetrahedralisation makes unless max_tets says otherwise. */
#define CE_DEFAULT_MAX_TETS 4000000
typedef struct ce_surface_build_options {
  double edge_length;    /* target tet edge length, m; <= 0: props->hint */
  ce_field_kind field;   /* LAPLACE (default) or DISTANCE */
  double core_depth;     /* LAPLACE core, as in ce_field_options */
  int use_hull_if_open;  /* open / non-manifold surface: use its convex hull */
  int32_t max_tets;      /* <= 0: CE_DEFAULT_MAX_TETS (CE_ELIMIT beyond) */
  ce_progress_fn progress;
  void *progress_user;
} ce_surface_build_options;

typedef struct ce_surface_build_report {
  int32_t tets, vertices;
  double min_dihedral_deg;  /* smallest dihedral angle of any tet */
  double max_dihedral_deg;
  double volume;            /* of the tet mesh */
  double surface_volume;    /* enclosed by the input surface */
  double volume_error;      /* (volume - surface_volume) / surface_volume */
  int used_hull;            /* 1: the surface was open; its hull was used */
  ce_field_report field;
} ce_surface_build_report;

void ce_surface_build_options_default(ce_surface_build_options *o);

/* Tetrahedralise a closed, possibly non-convex surface (outward winding) on
 * a body-centred cubic lattice of spacing ~edge_length, cut by the
 * surface (winding-number inside test), boundary vertices warped onto it
 * under a dihedral-angle guard (every tet keeps its smallest dihedral angle
 * >= CE_TETRAHEDRALIZE_MIN_DIHEDRAL_DEG). An open, non-manifold or
 * self-intersecting surface fails with CE_EOPEN / CE_EDEGENERATE unless
 * use_hull_if_open. props->compliance must be CE_COMPLIANT. rep may be
 * NULL. */
#define CE_TETRAHEDRALIZE_MIN_DIHEDRAL_DEG 10.0
ce_errno ce_geometry_from_surface(const double *vertices, int32_t nv, const int32_t *tris,
                                  int32_t nf, const ce_props *props,
                                  const ce_surface_build_options *opt, ce_geometry **out,
                                  ce_surface_build_report *rep, ce_error *err);

/* The tet mesh alone (malloc'd *out_vertices 3*nv, *out_tets 4*nt;
 * positively oriented), for tests and tools. */
ce_errno ce_tetrahedralize_surface(const double *vertices, int32_t nv, const int32_t *tris,
                                   int32_t nf, const ce_surface_build_options *opt,
                                   double **out_vertices, int32_t *out_nv, int32_t **out_tets,
                                   int32_t *out_nt, ce_surface_build_report *rep, ce_error *err);

#ifdef __cplusplus
}
#endif
#endif /* CE_H */
