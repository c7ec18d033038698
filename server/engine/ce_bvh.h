/* ce_bvh.h — bounding volume hierarchies over a mesh's elements: build
 * (ce_bvh_build.c) and traversals (ce_bvh_query.c). */
#ifndef CE_BVH_H
#define CE_BVH_H

#include "ce_arena.h"
#include "ce_progress.h"

/* Elements per leaf at most: triangles of a triangle hierarchy, tets of a
 * tet hierarchy (median splits leave between half of that and that). The
 * nodes and seed cylinders were most of a mesh's memory with leaves of 1
 * tet or 2 triangles; with these a compliant mesh holds ~370 bytes per tet
 * instead of ~650 and a rigid one ~310 per triangle instead of ~500. The
 * surface walk, the hot path of a mesh query, does not read the tet
 * hierarchy, and the seed search's leaf test takes triangles two at a
 * time, so queries are no slower than with the smaller leaves (measured
 * with bench_contact). */
#define CE_BVH_TRI_LEAF 8
#define CE_BVH_TET_LEAF 4

/* Vertex slots of the hierarchy build's gather scratch (ce_bvh_build.c): a node's
 * fits run over its element vertices gathered into x, y, z, p arrays (32
 * bytes a vertex, 2 MiB in all); a node with more vertices is fitted a
 * chunk at a time, regathered for each of its three passes, with the same
 * results. The whole root gathered at once was 128 bytes a tet and set the
 * build's peak (docs/architecture.md: builds). With 2^14 slots the extra
 * gathers made builds of 204,800 tets ~3% slower; with 2^16, no slower
 * than the noise. */
#define CE_BVH_GATHER (1 << 16)

/* One node: an oriented box in the geometry frame (centre, half extents
 * along the columns of `axes`), the range of pressure inside it (compliant
 * meshes; [0, 0] otherwise), and either two children or a run of elements. */
typedef struct ce_bvh_node {
  ce_vec3 center;
  ce_vec3 half;
  ce_mat3 axes;           /* columns: box axes in the geometry frame */
  double pmin, pmax;
  int32_t left, right;    /* children; left == -1 for a leaf */
  int32_t first, count;   /* leaf: elements order[first .. first + count) */
} ce_bvh_node;

typedef struct ce_bvh {
  int32_t nnodes;
  ce_bvh_node *nodes;     /* nodes[0] is the root */
  int32_t nelem;
  int32_t *order;         /* element indices, leaf runs contiguous */
  /* Tet meshes with pressures: per node a linear bound of the pressure over
   * the node's tets, |p(x) - (g . x + c)| <= e, stored {gx, gy, gz, c, e};
   * lets ce_bvh_collide prune node pairs by their equal-pressure slab.
   * NULL otherwise. */
  double (*field)[5];
  /* Tet meshes: a hierarchy over the boundary faces (its elements index
   * bnd_face), the faces' vertices and their tets; seeds surface tracing
   * in ce_intersect_tet_tet. NULL otherwise. */
  struct ce_bvh *bnd;
  int32_t (*bnd_face)[3];
  int32_t *bnd_tet;
  /* Boundary hierarchies (the `bnd` of a tet mesh) only, else NULL; used by
   * ce_bvh_collide_surfaces. disk: entry 0 above the root, then one per
   * internal node (in node order), each with cylinders around the node's
   * children. tri[q]: the triangle order[q] (leaf runs contiguous, so a
   * leaf's are adjacent). */
  struct ce_bvh_disk *disk;
  struct ce_bvh_tri *tri;
} ce_bvh;

/* Cylinders around the surface patches (the triangles) of an internal
 * node's two children, side by side: lane 0 the left child, lane
 * 1 the right one, so one entry answers a node pair's child tests two at a
 * time. A cylinder's points x satisfy |n . (x - c)| <= h,
 * |(x - c) - (n . (x - c)) n| <= rho and |x - c| <= r (n unit: the box's
 * thinnest axis). Entry 0 sits above the root: lane 0 (and, unused, lane
 * 1) the root's. ref[k]: child k on the traversal stack, its entry when it
 * is internal, else ~(2 e + k) for this entry e; a leaf child's triangles
 * are tri[first[k] .. first[k] + count[k]) (count 0 for internal ones).
 * 16-byte aligned, as every lane pair: the traversal loads them as one. */
typedef struct ce_bvh_disk {
  _Alignas(16) double cx[2];
  double cy[2], cz[2];
  double nx[2], ny[2], nz[2];
  double h[2], rho[2], r[2];
  int32_t ref[2];
  int32_t first[2], count[2];
} ce_bvh_disk;

/* A boundary triangle: vertices, plane (unit normal n, or 0 when
 * degenerate; n . x = d on the plane) and a sphere around it (centre c,
 * the centroid, and radius r). */
typedef struct ce_bvh_tri {
  ce_vec3 v[3];
  ce_vec3 n;
  double d;
  ce_vec3 c;
  double r;
} ce_bvh_tri;

typedef struct ce_pair { int32_t a, b; } ce_pair;

/* A triangle hierarchy's extras for ce_bvh_collide_surfaces (face: its
 * elements' vertex triples): per internal node the cylinders around its
 * children (ce_bvh_disk; entry 0 holds the root's), per element its
 * triangle in leaf order. Built for a tet mesh's boundary hierarchy and
 * for a rigid mesh's hierarchy. prog (may be NULL) as in ce_bvh_build. */
ce_errno ce_bvh_build_surface(ce_bvh *s, const int32_t (*face)[3], const ce_vec3 *v, const ce_buildprog *prog,
                               ce_error *err);
/* Build over nelem elements of k vertices each (k = 3 triangles, 4 tets).
 * `pressure` (per vertex, may be NULL) fills the nodes' pressure ranges.
 * prog (may be NULL) is reported every few ms of work (ce_bvh_build.c,
 * CE_BVH_PROGRESS_WORK); a stop there frees everything and fails with
 * CE_ECANCELED. */
ce_errno ce_bvh_build(ce_bvh *bvh, int32_t nelem, int k, const int32_t *elems,
                      const ce_vec3 *v, const double *pressure, const ce_buildprog *prog,
                      ce_error *err);
/* The same for a tet mesh whose boundary faces the caller knows: nb
 * entries (tet, k), the face opposite local vertex k (any order). Spares
 * the boundary hierarchy the sort of every face of every tet. */
ce_errno ce_bvh_build_tets(ce_bvh *bvh, int32_t nt, const int32_t *tets, const ce_vec3 *v, const double *pressure,
                           const int32_t (*bfaces)[2], int64_t nb, const ce_buildprog *prog, ce_error *err);
void ce_bvh_free(ce_bvh *bvh);
size_t ce_bvh_bytes(const ce_bvh *bvh);

/* All leaf element pairs (a from bvh_a, b from bvh_b) whose volumes overlap,
 * with B's geometry placed in A's frame by X_AB. With use_pressure, node
 * pairs whose pressure ranges do not overlap are pruned (they cannot hold an
 * equal-pressure surface). Pairs are appended to `out` (elem = ce_pair) in a
 * deterministic order. */
ce_errno ce_bvh_collide(const ce_bvh *bvh_a, const ce_bvh *bvh_b,
                        const ce_pose *X_AB, int use_pressure, ce_arena *arena,
                        ce_buf *out);

/* Seeds for tracing where two boundary surfaces cross: pairs (a, b) of
 * triangles of two triangle hierarchies with their surface extras (the
 * `bnd` of tet meshes, or a rigid mesh's own; B placed in A's frame by
 * X_AB) that meet. Every pair of ce_bvh_collide(a, b,
 * X_AB, 0, ...) whose triangles meet is included; a pair is left out only
 * when the spheres around the triangles are apart, or one triangle lies on
 * one side of the other's plane, or their intervals on the planes' common
 * line are apart, by more than a rounding margin (Moller's test,
 * ce_triangles_meet_planes, on the stored planes).
 * The traversal is ce_bvh_collide's, with each node's box replaced by a
 * cylinder around its triangles (ce_bvh_disk), much cheaper to test, and
 * a node pair tested before it is pushed. Appended to `out`
 * (elem = ce_pair, a and b index the hierarchies' elements: bnd_face, or
 * the rigid mesh's triangles) in a deterministic order.
 * Hierarchies without disks fall back to ce_bvh_collide(a, b, X_AB, 0, ...)
 * (every overlapping leaf pair, unfiltered). */
ce_errno ce_bvh_collide_surfaces(const ce_bvh *a, const ce_bvh *b,
                                 const ce_pose *X_AB, ce_arena *arena,
                                 ce_buf *out);

/* Elements of the leaves whose boxes, widened by tol, meet the box of the
 * points x[0..nx) (geometry frame) along each node's axes: every element
 * whose volume meets the points' convex hull is among them. Appended to
 * `out` (elem = int32_t) in traversal order. */
ce_errno ce_bvh_near_points(const ce_bvh *bvh, const ce_vec3 *x, int nx, double tol,
                            ce_arena *arena, ce_buf *out);

/* Elements whose volume meets the plane n.x = d (plane_only) or the half
 * space n.x <= d, in the geometry frame; appended to `out` (elem = int32_t). */
ce_errno ce_bvh_collide_plane(const ce_bvh *bvh, ce_vec3 n, double d,
                              int plane_only, ce_arena *arena, ce_buf *out);

#endif /* CE_BVH_H */
