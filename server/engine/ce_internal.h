/* ce_internal.h — the engine's internal data structures, shared by its
 * files. Not installed; nothing outside server/engine includes it except the
 * engine's unit tests. */
#ifndef CE_INTERNAL_H
#define CE_INTERNAL_H

#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "ce.h"
#include "ce_math.h"

/* The engine allocates with the C library's malloc, calloc and realloc
 * and checks every one: tests/engine/test_alloc_failure.c links it with
 * -Wl,--wrap to make them fail on request (tests/common/td_faults.c). */

/* Fill *err (may be NULL) with code and a printf-style message; returns code. */
ce_errno ce_fail(ce_error *err, ce_errno code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A geometry build's progress callback and cancellation point
 * (ce_props.progress), stage "geometry", with the fractions of one step
 * mapped into that step's share [lo, hi] of the whole build. fn NULL: no
 * reports. (ce_geometry.c) */
typedef struct ce_buildprog {
  ce_progress_fn fn;
  void *user;
  double lo, hi;
} ce_buildprog;

/* The whole build, [0, 1], of props' callback. */
ce_buildprog ce_buildprog_of(const ce_props *props);
/* The step [lo, hi] (fractions of p's share) of p; p may be NULL. */
ce_buildprog ce_buildprog_part(const ce_buildprog *p, double lo, double hi);
/* Report fraction f of p's share (p may be NULL): CE_ECANCELED ("geometry:
 * build cancelled") when the callback asks the build to stop. */
ce_errno ce_buildprog_report(const ce_buildprog *p, double f, ce_error *err);
/* props whose progress callback reports into *p (which must outlive the
 * build): for a step that is a whole build of its own (ce_pieces.c). */
ce_props ce_props_reporting_into(const ce_props *props, const ce_buildprog *p);

/* ---- growable arrays living in an arena (ce_arena.c) ------------------ */

/* A growable array whose storage comes from an arena. Growth doubles the
 * capacity and copies; the old block stays in the arena until reset, so
 * the waste is bounded by the final size. */
typedef struct ce_buf {
  void *data;
  int64_t len, cap;
  size_t elem; /* element size in bytes */
} ce_buf;

void ce_buf_init(ce_buf *b, size_t elem);
/* Make room for `extra` more elements; CE_ENOMEM on arena exhaustion. */
ce_errno ce_buf_reserve(ce_arena *a, ce_buf *b, int64_t extra);
/* Pointer to a new zeroed element at the end, or NULL. */
void *ce_buf_push(ce_arena *a, ce_buf *b);
/* Allocate n zeroed elements of size elem from the arena (NULL on failure). */
void *ce_arena_calloc(ce_arena *a, size_t n, size_t elem);

/* ---- meshes ------------------------------------------------------------ */

/* Linear field on one tet: p(x) = grad . x + offset (geometry frame). */
typedef struct ce_tetmesh {
  int32_t nv, nt;
  ce_vec3 *v;             /* nv vertices, geometry frame */
  double *p;              /* nv pressures, Pa */
  int32_t (*tet)[4];      /* nt tets, positively oriented */
  ce_vec3 *grad;          /* nt pressure gradients, Pa/m */
  double *offset;         /* nt field offsets */
  double (*prange)[2];    /* nt [min, max] pressure over the tet */
  int32_t (*adj)[4];      /* neighbour across the face opposite vertex i; -1 */
  /* nt face planes, [row][face k] with rows nx, ny, nz, d: face k (opposite
   * vertex k) has outward unit normal n and x is inside it when
   * n . x <= d. Rows of four let an intersector test all faces at once. */
  double (*fplane)[4][4];
  /* Connected components across shared faces (built with adj): ncomp;
   * comp[t] of tet t (NULL when ncomp == 1) and comp_first[c], the lowest
   * tet of component c. Surface tracing tests a component no seed reached
   * for lying wholly inside the other body. */
  int32_t ncomp;
  int32_t *comp;
  int32_t *comp_first;
} ce_tetmesh;

typedef struct ce_trimesh {
  int32_t nv, nf;
  ce_vec3 *v;             /* nv vertices, geometry frame */
  int32_t (*tri)[3];      /* nf triangles, counter-clockwise seen from outside */
  ce_vec3 *normal;        /* nf unit outward normals */
  double *area;           /* nf areas */
  int32_t (*adj)[3];      /* neighbour across edge (i, i+1 mod 3); -1 if open */
  int32_t ncomp;          /* connected components across shared edges (0: not counted) */
  /* The components (built with ncomp; NULL for temporary meshes): comp[f]
   * of triangle f, numbered in the order of their lowest triangle; the
   * triangles of component c, ascending, are comp_tris[comp_off[c] ..
   * comp_off[c + 1]). Lets surface tracing test a component the walk never
   * reached for lying wholly inside the compliant body. */
  int32_t *comp;          /* nf */
  int32_t *comp_off;      /* ncomp + 1 */
  int32_t *comp_tris;     /* nf */
} ce_trimesh;

/* ---- bounding volume hierarchy (ce_bvh.c) ------------------------------ */

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

/* Vertex slots of the hierarchy build's gather scratch (ce_bvh.c): a node's
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

/* ---- surface tracing helpers (ce_walk.c) -------------------------------- */

/* Visited element pairs: open addressing, key ((i << 32) | j) + 1, 0 empty,
 * at most half full; arena memory. */
typedef struct ce_pairset {
  uint64_t *key;
  int64_t cap, len;
} ce_pairset;

/* An empty set with room for `want` pairs. */
ce_errno ce_pairset_init(ce_arena *a, ce_pairset *s, int64_t want);
/* Quadruples the capacity (rehashing). */
ce_errno ce_pairset_grow(ce_arena *a, ce_pairset *s);

static inline uint64_t ce_pairset_hash(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

static inline uint64_t ce_pairset_key(int32_t i, int32_t j) {
  return (((uint64_t)(uint32_t)i << 32) | (uint32_t)j) + 1;
}

static inline int ce_pairset_has(const ce_pairset *s, int32_t i, int32_t j) {
  const uint64_t key = ce_pairset_key(i, j), mask = (uint64_t)(s->cap - 1);
  for (uint64_t h = ce_pairset_hash(key) & mask; s->key[h]; h = (h + 1) & mask)
    if (s->key[h] == key) return 1;
  return 0;
}

/* Inserts (i, j); *added = 1 when it was new. */
static inline ce_errno ce_pairset_add(ce_arena *a, ce_pairset *s, int32_t i, int32_t j, int *added) {
  if (2 * (s->len + 1) > s->cap) {
    ce_errno e = ce_pairset_grow(a, s);
    if (e != CE_OK) return e;
  }
  const uint64_t key = ce_pairset_key(i, j), mask = (uint64_t)(s->cap - 1);
  uint64_t h = ce_pairset_hash(key) & mask;
  for (; s->key[h]; h = (h + 1) & mask)
    if (s->key[h] == key) {
      *added = 0;
      return CE_OK;
    }
  s->key[h] = key;
  s->len++;
  *added = 1;
  return CE_OK;
}

/* Appends (i, j) to the walk's queue (elem ce_pair) unless already seen. */
static inline ce_errno ce_walk_push(ce_arena *a, ce_pairset *s, ce_buf *queue, int32_t i, int32_t j) {
  int added;
  ce_errno e = ce_pairset_add(a, s, i, j, &added);
  if (e != CE_OK || !added) return e;
  ce_pair *p;
  if (queue->len < queue->cap) p = (ce_pair *)queue->data + queue->len++;
  else if (!(p = ce_buf_push(a, queue))) return CE_ENOMEM;
  p->a = i;
  p->b = j;
  return CE_OK;
}

/* Shared surface vertices: a key of up to six mesh indices naming the mesh
 * features a point is the intersection of (each intersector documents its
 * keys), mapped to the builder vertex made for it, so that the polygons of
 * neighbouring element pairs reuse one vertex. Open addressing in the
 * arena, at most half full; lookups are by key only, so the table's layout
 * never affects the surface. */
/* Six indices, or three words (the cache hashes and compares the words;
 * an intersector fills whichever view suits it, the same one always). */
typedef union ce_vkey {
  int32_t k[6];
  uint64_t w[3];
} ce_vkey;
/* id < 0: empty. mark: the cache's mark when the slot was last set or
 * used (callers that bump ce_vcache.mark per polygon tell a vertex that
 * would repeat within one polygon by mark == the current mark). */
typedef struct ce_vslot { ce_vkey key; int32_t id; uint32_t mark; } ce_vslot;
typedef struct ce_vcache {
  ce_arena *arena;
  ce_vslot *slot;
  uint64_t mask;
  int64_t count;
  uint32_t mark;
} ce_vcache;

/* An empty cache with room for `expected` keys. */
ce_errno ce_vcache_init(ce_vcache *c, ce_arena *a, int64_t expected);
/* Room for `extra` more insertions: at once when the table has it (inline,
 * asked once per polygon), else ce_vcache_grow rehashes into a bigger one. */
ce_errno ce_vcache_grow(ce_vcache *c, int64_t extra);
static inline ce_errno ce_vcache_reserve(ce_vcache *c, int64_t extra) {
  return (uint64_t)(c->count + extra) * 2 <= c->mask + 1 ? CE_OK : ce_vcache_grow(c, extra);
}

static inline uint64_t ce_vkey_hash(const ce_vkey *k) {
  /* one multiply per word, then a finalising mix: the indices are small
   * integers, so the multiplies spread them over the word */
  uint64_t h = k->w[0] * 0x9E3779B97F4A7C15ULL ^ k->w[1] * 0xC2B2AE3D27D4EB4FULL ^ k->w[2] * 0x165667B19E3779F9ULL;
  h ^= h >> 32;
  h *= 0x94D049BB133111EBULL;
  h ^= h >> 29;
  return h;
}

static inline int ce_vkey_eq(const ce_vkey *a, const ce_vkey *b) {
  return a->w[0] == b->w[0] && a->w[1] == b->w[1] && a->w[2] == b->w[2];
}

/* The slot for key: either holding it, or the empty slot where it belongs
 * (ce_vcache_reserve keeps a free slot). */
static inline ce_vslot *ce_vcache_find(ce_vcache *c, ce_vkey k) {
  uint64_t i = ce_vkey_hash(&k) & c->mask;
  for (;;) {
    ce_vslot *s = &c->slot[i];
    if (s->id < 0 || ce_vkey_eq(&s->key, &k)) return s;
    i = (i + 1) & c->mask;
  }
}

/* Fills the empty slot s (from ce_vcache_find) with key k -> vertex id. */
static inline void ce_vcache_set(ce_vcache *c, ce_vslot *s, ce_vkey k, int32_t id) {
  s->key = k;
  s->id = id;
  s->mark = c->mark;
  c->count++;
}

/* Per-query data derived from elements of N (a rigid triangle placed in
 * M's frame, which meets several tets), made the first time a pair needs
 * it: entries in `items` (a ce_buf of the caller's struct), found by
 * element id through an open-addressing map (keys id + 1, 0 empty; 2^bits
 * slots, at most half full). A map rather than an array over N keeps a
 * query's cost independent of N's size. Arena memory. */
typedef struct ce_elemcache {
  int32_t *key, *val;
  int bits;
  ce_buf items;
} ce_elemcache;

/* An empty cache of `elem`-byte entries: a map of 2^bits slots (zeroed)
 * and room for `room` entries. */
ce_errno ce_elemcache_init(ce_arena *a, ce_elemcache *c, size_t elem, int bits, int64_t room);
/* At least 2 * map_want slots (rehashed) and room for `room` more entries. */
ce_errno ce_elemcache_reserve(ce_arena *a, ce_elemcache *c, int64_t map_want, int64_t room);
/* Doubles the map (rehashing). */
ce_errno ce_elemcache_grow(ce_arena *a, ce_elemcache *c);

/* Whether x (g's frame) lies in some tet of g, within eps of its faces
 * (located through g's hierarchy; near is scratch). On arena exhaustion
 * returns 0 with *e = CE_ENOMEM, else *e = CE_OK. Surface tracing asks it
 * whether a piece no seed reached lies inside the compliant body. */
int ce_tets_contain(const ce_geometry *g, ce_vec3 x, double eps, ce_arena *a, ce_buf *near, ce_errno *e);

/* The entry for element id: *fresh = 1 when it was just added (the caller
 * fills it), 0 when it is the one made before. NULL when the arena is
 * exhausted. elem: the entry size given to ce_elemcache_init, passed again
 * as a constant so the address arithmetic folds. */
static inline void *ce_elemcache_get(ce_arena *a, ce_elemcache *c, int32_t id, size_t elem, int *fresh) {
  const uint32_t mask = ((uint32_t)1 << c->bits) - 1;
  uint32_t h = ((uint32_t)id * 2654435761u) >> (32 - c->bits);
  for (; c->key[h]; h = (h + 1) & mask)
    if (c->key[h] == id + 1) {
      *fresh = 0;
      return (char *)c->items.data + (size_t)c->val[h] * elem;
    }
  if (c->items.len >= INT32_MAX / 2) return NULL;
  if (2 * (c->items.len + 1) > (int64_t)mask + 1)
    return ce_elemcache_grow(a, c) == CE_OK ? ce_elemcache_get(a, c, id, elem, fresh) : NULL;
  void *e;
  if (c->items.len < c->items.cap) e = (char *)c->items.data + (size_t)c->items.len++ * elem;
  else if (!(e = ce_buf_push(a, &c->items))) return NULL;
  c->key[h] = id + 1;
  c->val[h] = (int32_t)(c->items.len - 1);
  *fresh = 1;
  return e;
}

/* Whether triangles x and y (one frame) meet: Moller's test with a margin
 * tol (a length) that only lets more through; coplanar or degenerate
 * triangles count as meeting. */
int ce_triangles_meet(const ce_vec3 x[3], const ce_vec3 y[3], double tol);

/* Its second half, for callers that know both planes and have already
 * checked that neither triangle lies strictly on one side of the other's
 * plane: normals na, nb (any length) and the signed distances dx[k] of x[k]
 * to y's plane and dy[k] of y[k] to x's plane (scaled alike per triangle). */
int ce_triangles_meet_planes(const ce_vec3 x[3], ce_vec3 na, const double dx[3], const ce_vec3 y[3], ce_vec3 nb,
                             const double dy[3], double tol);

/* A triangle hierarchy's extras for ce_bvh_collide_surfaces (face: its
 * elements' vertex triples): per internal node the cylinders around its
 * children (ce_bvh_disk; entry 0 holds the root's), per element its
 * triangle in leaf order. Built for a tet mesh's boundary hierarchy and
 * for a rigid mesh's hierarchy. prog (may be NULL) as in ce_bvh_build. */
ce_errno ce_bvh_build_surface(ce_bvh *s, const int32_t (*face)[3], const ce_vec3 *v, const ce_buildprog *prog,
                               ce_error *err);
/* Build over nelem elements of k vertices each (k = 3 triangles, 4 tets).
 * `pressure` (per vertex, may be NULL) fills the nodes' pressure ranges.
 * prog (may be NULL) is reported every few ms of work (ce_bvh.c,
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

/* ---- geometry ---------------------------------------------------------- */

struct ce_geometry {
  ce_shape_type shape;
  ce_compliance compliance;
  int is_halfspace;
  double modulus;          /* compliant: E; rigid: INFINITY */
  double slab_thickness;   /* compliant half space */
  ce_material material;
  ce_tetmesh tet;          /* compliant meshes (nt > 0) */
  ce_trimesh tri;          /* rigid meshes (nf > 0) */
  ce_bvh bvh;              /* over tets (compliant) or triangles (rigid) */
  double volume;
  double scale;            /* largest |vertex| in the geometry frame (>0) */
  int convex;              /* meshes: 1 when the mesh bounds a convex body
                            * (checked once at build, ce_geometry.c) */
  size_t bytes;
  struct ce_heightfield *hf; /* CE_SHAPE_HEIGHTFIELD only (ce_heightfield.c) */
  /* The primitive's analytic parameters (type, radius, length, size) as
   * given to ce_geometry_from_shape (points = NULL, npoints kept); type 0
   * for meshes and geometries built otherwise. The point-contact model
   * (ce_mtd.c) uses them for exact shapes instead of the tessellation. */
  ce_shape shape_params;
  /* Optional convex decomposition of a rigid mesh (ce_pieces.c): npieces
   * rigid CE_SHAPE_CONVEX geometries in this geometry's frame, owned (freed
   * by ce_geometry_free). The point-contact model uses them instead of the
   * mesh's hull. */
  struct ce_geometry **pieces;
  int32_t npieces;
};

/* Take ownership of malloc'd arrays (v, tets, p) and finish a compliant
 * geometry: validate (finite, positive volumes, field >= 0), compute per-tet
 * gradients/offsets/ranges, adjacency, BVH. On failure frees the arrays.
 * prog: these steps' share of the build's progress (ce_buildprog_of(props)
 * when they are the whole build; NULL: no reports). */
ce_errno ce_geometry_finish_tetmesh(ce_shape_type shape, const ce_props *props,
                                    const ce_buildprog *prog, ce_vec3 *v, int32_t nv,
                                    int32_t (*tets)[4], int32_t nt, double *p,
                                    ce_geometry **out, ce_error *err);
/* Same for rigid triangle meshes (arrays malloc'd, ownership taken). */
ce_errno ce_geometry_finish_trimesh(ce_shape_type shape, const ce_props *props,
                                    const ce_buildprog *prog, ce_vec3 *v, int32_t nv,
                                    int32_t (*tris)[3], int32_t nf, int require_closed,
                                    ce_geometry **out, ce_error *err);

/* The linear function taking value p[i] at x[i] (i = 0..3) on a tet of
 * nonzero volume: returns its gradient and sets *offset so that
 * p(x) = grad . x + offset (ce_geometry.c). */
ce_vec3 ce_tet_linear_field(const ce_vec3 x[4], const double p[4], double *offset);
/* The face planes of a positively oriented tet in ce_tetmesh.fplane's
 * layout (outward unit normals; a zero-area face gets a zero normal). */
void ce_tet_face_planes(const ce_vec3 x[4], double fplane[4][4]);

/* Check the properties every geometry shares: compliance is CE_RIGID or
 * CE_COMPLIANT; a compliant modulus is finite and > 0; material values are
 * finite and >= 0; with need_hint, the hint is finite and > 0; with
 * need_slab, the slab thickness is finite and > 0 (ce_geometry.c). */
ce_errno ce_props_check(const ce_props *props, int need_hint, int need_slab,
                        ce_error *err);
/* A half space (rigid, or compliant with a slab thickness) (ce_geometry.c). */
ce_errno ce_build_halfspace(const ce_props *props, ce_geometry **out,
                            ce_error *err);
/* A convex point set: compliant = hull tetrahedralised from the centroid
 * (field E at the centroid, 0 on the hull); rigid = hull triangles
 * (ce_hull.c). */
ce_errno ce_build_convex(const ce_shape *shape, const ce_props *props,
                         ce_geometry **out, ce_error *err);

/* ---- contact surface builder (ce_surface.c) ---------------------------- */

/* Collects polygons in the frame of the compliant geometry M while an
 * intersector runs. Normals point out of N into M. */
typedef struct ce_builder {
  ce_arena *arena;
  ce_buf v;          /* ce_vec3 */
  ce_buf p;          /* double */
  ce_buf face_off;   /* int32_t, starts with 0 */
  ce_buf face_vert;  /* int32_t */
  ce_buf normal;     /* ce_vec3 per face */
  ce_buf grad_m;     /* ce_vec3 per face */
  ce_buf grad_n;     /* ce_vec3 per face (zero when N is rigid) */
  ce_buf elem_m;     /* int32_t per face */
  ce_buf elem_n;     /* int32_t per face */
} ce_builder;

ce_errno ce_builder_init(ce_builder *b, ce_arena *arena);

/* Corners of one face at most. */
#define CE_MAX_POLY 16

/* Returns the new vertex id, or -1 on arena exhaustion. */
static inline int32_t ce_builder_add_vertex(ce_builder *b, ce_vec3 x, double p) {
  if (b->v.len >= INT32_MAX) return -1;
  if ((b->v.len >= b->v.cap || b->p.len >= b->p.cap) &&
      (ce_buf_reserve(b->arena, &b->v, 1) != CE_OK || ce_buf_reserve(b->arena, &b->p, 1) != CE_OK))
    return -1;
  int32_t id = (int32_t)b->v.len;
  ((ce_vec3 *)b->v.data)[b->v.len++] = x;
  ((double *)b->p.data)[b->p.len++] = p;
  return id;
}

/* Room for nv new vertices and one face of n corners in every array (the
 * per-face arrays grow together; all are checked inline first, since this
 * runs once per output polygon). */
static inline ce_errno ce_builder_face_room(ce_builder *b, int nv, int n) {
  int room = b->v.len + nv <= b->v.cap && b->p.len + nv <= b->p.cap && b->face_vert.len + n <= b->face_vert.cap &&
             b->face_off.len < b->face_off.cap && b->normal.len < b->normal.cap && b->grad_m.len < b->grad_m.cap &&
             b->grad_n.len < b->grad_n.cap && b->elem_m.len < b->elem_m.cap && b->elem_n.len < b->elem_n.cap;
  if (room) return CE_OK;
  ce_arena *a = b->arena;
  if ((nv > 0 && (ce_buf_reserve(a, &b->v, nv) != CE_OK || ce_buf_reserve(a, &b->p, nv) != CE_OK)) ||
      ce_buf_reserve(a, &b->face_vert, n) != CE_OK || ce_buf_reserve(a, &b->face_off, 1) != CE_OK ||
      ce_buf_reserve(a, &b->normal, 1) != CE_OK || ce_buf_reserve(a, &b->grad_m, 1) != CE_OK ||
      ce_buf_reserve(a, &b->grad_n, 1) != CE_OK || ce_buf_reserve(a, &b->elem_m, 1) != CE_OK ||
      ce_buf_reserve(a, &b->elem_n, 1) != CE_OK)
    return CE_ENOMEM;
  return CE_OK;
}

/* The per-face record of a face whose corners were just appended to
 * face_vert (room checked by ce_builder_face_room). */
static inline void ce_builder_face_record(ce_builder *b, ce_vec3 normal, ce_vec3 grad_m, ce_vec3 grad_n,
                                          int32_t elem_m, int32_t elem_n) {
  ((int32_t *)b->face_off.data)[b->face_off.len++] = (int32_t)b->face_vert.len;
  ((ce_vec3 *)b->normal.data)[b->normal.len++] = normal;
  ((ce_vec3 *)b->grad_m.data)[b->grad_m.len++] = grad_m;
  ((ce_vec3 *)b->grad_n.data)[b->grad_n.len++] = grad_n;
  ((int32_t *)b->elem_m.data)[b->elem_m.len++] = elem_m;
  ((int32_t *)b->elem_n.data)[b->elem_n.len++] = elem_n;
}

/* A face from existing vertex ids (convex, counter-clockwise about normal).
 * Inline: the surface walks add one per output polygon. */
static inline ce_errno ce_builder_add_face(ce_builder *b, const int32_t *ids, int n, ce_vec3 normal,
                                           ce_vec3 grad_m, ce_vec3 grad_n, int32_t elem_m, int32_t elem_n) {
  if (n < 3 || n > CE_MAX_POLY) return CE_EINVAL;
  for (int i = 0; i < n; i++)
    if (ids[i] < 0 || ids[i] >= b->v.len) return CE_ERANGE;
  if (b->face_vert.len + n > INT32_MAX) return CE_ELIMIT;
  if (ce_builder_face_room(b, 0, n) != CE_OK) return CE_ENOMEM;
  memcpy((int32_t *)b->face_vert.data + b->face_vert.len, ids, (size_t)n * sizeof(int32_t));
  b->face_vert.len += n;
  ce_builder_face_record(b, normal, grad_m, grad_n, elem_m, elem_n);
  return CE_OK;
}

/* A face with its own new vertices. */
ce_errno ce_builder_add_polygon(ce_builder *b, const ce_vec3 *x, const double *p,
                                int n, ce_vec3 normal, ce_vec3 grad_m,
                                ce_vec3 grad_n, int32_t elem_m, int32_t elem_n);
/* Room for nv more vertices and nf more faces of nc corners in all, in
 * every array (arena bumps, untouched until used). */
ce_errno ce_builder_reserve(ce_builder *b, int64_t nv, int64_t nf, int64_t nc);
/* Where the builder stands, and going back there (an intersector that gives
 * up on a strategy drops what it added). */
typedef struct ce_builder_mark {
  int64_t v, face, corner;
} ce_builder_mark;
ce_builder_mark ce_builder_tell(const ce_builder *b);
void ce_builder_rewind(ce_builder *b, ce_builder_mark m);

/* Per-face pressure moments of a built surface: fn = the integral of the
 * pressure over the face (N) and cp = where that force acts (the integral
 * of p x over fn, world frame; the area centroid when fn = 0). Exact for a
 * pressure linear over each face. */
typedef struct ce_face_moments {
  double *fn;
  ce_vec3 *cp;
} ce_face_moments;

/* Turn the builder into a world-frame surface for the (A, B) order of the
 * query: X_WM places M; `m_is_a` says whether M is body A (otherwise normals
 * are flipped and the per-face m/n arrays are swapped into a/b).
 * `n_compliant` says whether N has a pressure gradient. Computes area,
 * centroid and centroid pressure per face; fans polygons into triangles
 * around their centroids for CE_REPRESENTATION_TRIANGLE. With pm != NULL
 * and the polygon representation, also the faces' pressure moments (arena
 * arrays; computed in the same pass as the area, for the wrench pass);
 * otherwise pm->fn = pm->cp = NULL. */
ce_errno ce_builder_finish(ce_builder *b, const ce_pose *X_WM, int m_is_a,
                           int m_compliant, int n_compliant,
                           ce_representation rep, ce_surface *out,
                           ce_face_moments *pm);

/* ---- intersectors (surfaces in M's frame) ------------------------------ */

typedef struct ce_counters {
  int64_t candidate_pairs;
  int64_t polygons;
  int64_t faces_dropped;
} ce_counters;

/* Gradient-direction rule: cos of the largest accepted angle between a face
 * normal and a compliant side's pressure gradient (5*pi/8, as Drake). */
#define CE_GRADIENT_COS_LIMIT (-0.38268343236508978) /* cos(5 pi / 8) */

/* compliant mesh M vs compliant mesh N (ce_intersect_cc.c) */
ce_errno ce_intersect_tet_tet(const ce_geometry *m, const ce_geometry *n,
                              const ce_pose *X_MN, ce_builder *b,
                              ce_counters *c);
/* The same from every pressure-pruned BVH candidate pair, without surface
 * tracing (the reference the traced result is tested against). */
ce_errno ce_intersect_tet_tet_all(const ce_geometry *m, const ce_geometry *n,
                                  const ce_pose *X_MN, ce_builder *b,
                                  ce_counters *c);
/* compliant mesh M vs rigid mesh N (ce_intersect_rigid.c) */
ce_errno ce_intersect_tet_tri(const ce_geometry *m, const ce_geometry *n,
                              const ce_pose *X_MN, ce_builder *b,
                              ce_counters *c);
/* The same from every BVH candidate pair, without surface tracing. */
ce_errno ce_intersect_tet_tri_all(const ce_geometry *m, const ce_geometry *n,
                                  const ce_pose *X_MN, ce_builder *b,
                                  ce_counters *c);
/* One rigid triangle tri (M's frame, unit normal nrm) clipped by tet t of
 * M, with the rules of ce_intersect_tet_tri (ce_intersect_rigid.c): cheap
 * rejections, the half-open rule for a triangle in a shared tet face,
 * Sutherland–Hodgman by the 4 face planes, near-duplicate vertices (within
 * eps) removed, zero-area polygons dropped, then the gradient rule (a
 * polygon failing it counts in c->faces_dropped). Returns the polygon's
 * vertex count k >= 3 in out[0..k) (room for CE_CLIP_MAXV), else 0.
 * labels != NULL also labels each vertex with the mesh features it lies on
 * (tri_v = the triangle's global vertex ids, tri_id its index), for vertex
 * sharing; labels == NULL (tri_v, tri_id unused) gives positions only. */
#define CE_CLIP_MAXV 16
int ce_clip_tri_tet(const ce_tetmesh *T, int32_t t, const ce_vec3 tri[3], ce_vec3 nrm, double eps,
                    const int32_t tri_v[3], int32_t tri_id, ce_vec3 *out, ce_vkey *labels, ce_counters *c);
/* compliant mesh M vs rigid half space N */
ce_errno ce_intersect_tet_halfspace(const ce_geometry *m, const ce_geometry *n,
                                    const ce_pose *X_MN, ce_builder *b,
                                    ce_counters *c);
/* compliant half space M vs rigid mesh N */
ce_errno ce_intersect_halfspace_tri(const ce_geometry *m, const ce_geometry *n,
                                    const ce_pose *X_MN, ce_builder *b,
                                    ce_counters *c);

/* ---- wrench, point contacts, patches ------------------------------------ */

/* Per-face quantities the wrench pass leaves for the patch pass. */
typedef struct ce_face_forces {
  double *fn;        /* per face: integral of the normal traction, N */
  ce_vec3 *fn_x;     /* per face: integral of (normal traction * x), N m */
} ce_face_forces;

/* Integrate tractions over the surface (ce_wrench.c). Fills the result's
 * wrenches, area, centroid; fills *ff (arena) for the patch pass. pm (may
 * be NULL, or hold NULL arrays): the surface's pressure moments from
 * ce_builder_finish, used instead of integrating again wherever a face's
 * tractions are its pressure times constants (no relative rotation, or
 * d = mu = 0). */
ce_errno ce_wrench_compute(const ce_surface *s, const ce_body *a,
                           const ce_body *b, const ce_material *combined,
                           double stiction_tolerance,
                           const ce_face_moments *pm, ce_arena *arena,
                           ce_result *r, ce_face_forces *ff);
/* Per-face point contacts (ce_point.c). */
ce_errno ce_points_compute(const ce_surface *s, ce_arena *arena, ce_result *r);
/* Patches and equivalent contact points (ce_patch.c). */
ce_errno ce_patches_compute(ce_surface *s, const ce_geometry *ga,
                            const ce_geometry *gb, const ce_face_forces *ff,
                            ce_arena *arena, ce_result *r);

/* Strain energy of a hydroelastic pair (ce_energy.c), M and N as for the
 * intersectors (X_MN places N in M's frame): fills r->strain_energy,
 * r->total.strain_energy and r->energy, and with want_patches each patch's
 * strain_energy (after ce_patches_compute, from r->surface's patch and
 * element arrays). */
ce_errno ce_energy_compute(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, int m_is_a,
                           int want_patches, ce_arena *arena, ce_result *r);
/* The corners of face polygon ids[0..m) as the wrench pass integrates it
 * (collinear vertices dropped; ce_wrench.c): their ids in out (room for 64)
 * and their count, or -1 when every vertex is a corner. */
int32_t ce_wrench_corners(const ce_vec3 *v, const int32_t *ids, int32_t m, int32_t *out);

/* ---- wrench Jacobians (ce_jacobian.c, ce_jacobian_eval.inc) ------------- */

typedef enum {
  CE_JAC_TET_TET = 1,    /* compliant mesh - compliant mesh */
  CE_JAC_TET_TRI,        /* compliant mesh - rigid mesh */
  CE_JAC_TET_HALFSPACE,  /* compliant mesh - half space (rigid or compliant) */
  CE_JAC_HALFSPACE_TRI,  /* compliant half space - rigid mesh */
  CE_JAC_TET_TERRAIN,    /* compliant mesh - terrain */
} ce_jac_pair;

/* A built surface (polygon representation) and what its wrench depends on.
 * slot_pose[k] / slot_vel[k]: index of the first of the 6 partials of body
 * k's (A = 0, B = 1) pose (dth, dp) / velocity (w, v); -1: held fixed. */
typedef struct ce_jac_input {
  const ce_surface *s;
  const ce_body *a, *b;
  int m_is_a;
  ce_jac_pair kind;
  double d, mu, vs;
  int slot_pose[2], slot_vel[2];
  /* tractions p n (the wrench pass's closed forms: no relative motion, or
   * d = mu = 0) instead of the quadrature of the full traction law */
  int closed_form;
} ce_jac_input;

/* wrench_a (torque, force) re-evaluated in val and its partials in der;
 * CE_EUNSUPPORTED (with *why) when a face cannot be rebuilt. */
ce_errno ce_jacobian_eval12(const ce_jac_input *in, double val[6], double der[6][12], const char **why);
ce_errno ce_jacobian_eval24(const ce_jac_input *in, double val[6], double der[6][24], const char **why);
ce_errno ce_jacobian_eval6(const ce_jac_input *in, double val[6], double der[6][6], const char **why);

/* The four Jacobians of a hydroelastic result (fills r->jacobian*): one
 * evaluation with 12 partials (the pose of M's partner N and A's
 * velocity), the other two matrices from the relative-pose identities. */
ce_errno ce_jacobian_hydro(const ce_jac_input *in, ce_representation rep, ce_arena *arena, ce_result *r);
/* The same with all 24 partials evaluated (no identities used): a check of
 * the identities for tests. */
ce_errno ce_jacobian_hydro_full(const ce_jac_input *in, ce_arena *arena, ce_result *r);

/* ---- compliant point contact (ce_mtd.c, ce_point_contact.c) ------------ */

/* atan(s)/s for s >= 0, smooth through 0 (regularised Coulomb friction
 * -mu (2/pi) atan(|vt|/vs) fn vt/|vt| = -mu (2/pi) atan_over_x fn vt/vs):
 * the Taylor series 1 - s^2/3 + s^4/5 below s = 1e-3 (the first omitted
 * term, s^6/7, is below 1.5e-19), the direct quotient above. Used by the
 * hydroelastic wrench and by point contact, so both regularise alike. */
static inline double ce_atan_over_x(double s) {
  if (s < 1e-3) {
    double s2 = s * s;
    return 1.0 - s2 * (1.0 / 3.0 - s2 * (1.0 / 5.0));
  }
  return atan(s) / s;
}

/* Minimum translational distance between two convex shapes in the world.
 * overlap = 0: the shapes do not overlap (depth 0, other fields zero).
 * Otherwise depth > 0, normal unit out of B into A, witness_b = witness_a +
 * depth * normal, hull_a/hull_b = 1 when a non-convex mesh was replaced by
 * the convex hull of its vertices. */
typedef struct ce_mtd {
  int overlap;
  double depth;
  ce_vec3 normal, witness_a, witness_b;
  int hull_a, hull_b;
} ce_mtd;

/* CE_EUNSUPPORTED for two half spaces; CE_ENOMEM if GJK/EPA runs out of
 * memory. */
ce_errno ce_mtd_compute(const ce_geometry *ga, const ce_pose *X_WA,
                        const ce_geometry *gb, const ce_pose *X_WB,
                        ce_mtd *out, ce_error *err);
/* The default point stiffness of a geometry, N/m (see ce_material in ce.h);
 * INFINITY for half spaces. */
double ce_point_stiffness_default(const ce_geometry *g);
/* The volume of a geometry for the default stiffness: analytic for
 * primitives, the mesh's volume otherwise (scale^3 when unknown). */
double ce_point_volume(const ce_geometry *g);
/* The whole point-contact answer of a pair (MTD, force law, friction,
 * wrenches, total patch; one patch when want_patches). Fills r->status
 * (CE_CONTACT_POINT or CE_CONTACT_NONE), r->model = CE_MODEL_POINT,
 * r->point and r->combined_material. */
ce_errno ce_point_contact_compute(const ce_body *a, const ce_body *b,
                                  double stiction_tolerance, int want_patches,
                                  ce_arena *arena, ce_result *r, ce_error *err);

/* Point contact when a or b has convex pieces (ce_pieces.c): the point
 * contact of every piece pair (a piece or the whole shape per side, each
 * side keeping its whole body's stiffness), one contact per penetrating
 * pair; wrenches summed, r->point the deepest pair with pieces_a/b and
 * contacts set; one patch per contact when want_patches. */
ce_errno ce_point_contact_pieces(const ce_body *a, const ce_body *b,
                                 double stiction_tolerance, int want_patches,
                                 ce_arena *arena, ce_result *r, ce_error *err);

/* Shared by ce_point_contact_compute and ce_terrain_point_contact
 * (ce_point_contact.c). ce_point_model_init: *mu = combined friction,
 * *vs = the stiction tolerance (1e-4 m/s when <= 0); fills r->model,
 * r->combined_material and r->point.stiffness / dissipation from k, d.
 * ce_point_force: at point pt with normal n (out of B into A), returns
 * fn = kx (1 + d xdot)+ (kx = stiffness times depth, xdot = -v.n) and sets
 * *xdot and the regularised Coulomb friction *ft. */
void ce_point_model_init(const ce_body *a, const ce_body *b, double k, double d, double stiction_tolerance,
                         ce_result *r, double *mu, double *vs);
double ce_point_force(const ce_body *a, const ce_body *b, ce_vec3 pt, ce_vec3 n, double kx, double d, double mu,
                      double vs, double *xdot, ce_vec3 *ft);

/* ---- terrain (ce_heightfield.c, ce_intersect_terrain.c) ------------------ */

typedef struct ce_heightfield ce_heightfield;

/* Height and derivatives of the reconstructed surface at (x, y). */
typedef struct ce_hf_jet {
  double z, zx, zy, zxx, zxy, zyy;
  int32_t cell_i, cell_j;
} ce_hf_jet;

/* The closest point of the surface to c (Newton from the nearest sample). */
typedef struct ce_hf_closest {
  ce_vec3 point, normal; /* on the surface; unit upward normal there */
  double distance;       /* signed: > 0 when c is above the surface */
  int iterations;
  ce_hf_jet jet;
} ce_hf_closest;

void ce_heightfield_free(ce_heightfield *h);
size_t ce_heightfield_bytes(const ce_heightfield *h);
int64_t ce_heightfield_samples(const ce_heightfield *h); /* nx * ny */
const ce_heightfield *ce_geometry_heightfield(const ce_geometry *g);
void ce_heightfield_domain(const ce_heightfield *h, double *x0, double *y0, double *x1, double *y1);
void ce_heightfield_spacing(const ce_heightfield *h, double *dx, double *dy);
/* 0 (jet zeroed) outside the grid's rectangle. */
int ce_heightfield_jet(const ce_heightfield *h, double x, double y, ce_hf_jet *out);
/* Patch (i, j) (0 <= i <= nx-2, 0 <= j <= ny-2) at local (s, t) in [0, 1]^2. */
void ce_heightfield_patch_jet(const ce_heightfield *h, int32_t i, int32_t j, double s, double t, ce_hf_jet *out);
ce_vec3 ce_hf_jet_normal(const ce_hf_jet *j);
/* Bounds of the surface over the rectangle (clipped to the grid); 0 when
 * the rectangle misses the grid. Cost ~ the rectangle's area / 256 cells. */
int ce_heightfield_bounds(const ce_heightfield *h, double x0, double y0, double x1, double y1, double *zlo,
                          double *zhi);
/* Bounds of the whole surface. */
void ce_heightfield_range(const ce_heightfield *h, double *zlo, double *zhi);
/* Closest point to c, starting from the nearest sample within `radius` (plus
 * a spacing) of c's footprint; 0 when c's footprint is farther than radius
 * from the grid. */
int ce_heightfield_closest(const ce_heightfield *h, ce_vec3 c, double radius, ce_hf_closest *out);

/* compliant mesh M vs terrain N: terrain sampled into rigid triangles under
 * M's bounding box, clipped by M's tets. */
ce_errno ce_intersect_tet_terrain(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                                  ce_builder *b, ce_counters *c);
/* Rigid (or any non-terrain) body vs terrain by compliant point contact:
 * fills the result's status, wrenches, total and (want_patches) one patch
 * per contact point. */
ce_errno ce_terrain_point_contact(const ce_body *a, const ce_body *b, double stiction_tolerance,
                                  int want_patches, ce_arena *arena, ce_result *r, ce_error *err);


/* ---- assets (ce_tetrahedralize.c, ce_closed_surface.c, ce_laplace.c) ----- */

/* The point of triangle abc closest to p. */
ce_vec3 ce_closest_point_triangle(ce_vec3 p, ce_vec3 a, ce_vec3 b, ce_vec3 c);

/* The tetrahedraliser's input surface (ce_closed_surface.c). CE_OK for a
 * closed 2-manifold with consistent winding (every edge used once in each
 * direction), else CE_EOPEN / CE_EDEGENERATE naming the edge. */
ce_errno ce_surface_check_closed(const int32_t (*t)[3], int32_t nf, ce_error *err);
/* Signed volume enclosed by the triangles (positive for outward winding). */
double ce_surface_enclosed_volume(const ce_vec3 *v, const int32_t (*t)[3], int32_t nf);

/* An AABB tree over the triangles (median splits on the longest axis,
 * leaves of <= 4 triangles; node 0 is the root). */
typedef struct ce_tri_tree_node {
  double lo[3], hi[3];
  int32_t left, right; /* left < 0: leaf over order[first .. first+count) */
  int32_t first, count;
} ce_tri_tree_node;

typedef struct ce_tri_tree {
  ce_tri_tree_node *n;
  int32_t nn;
  int32_t *order;
  const ce_vec3 *v;
  const int32_t (*t)[3];
} ce_tri_tree;

/* A crossing of a vertical line with the surface at height z; sign +1
 * where the triangle faces up (counter-clockwise seen from +z). */
typedef struct ce_ray_crossing {
  double z;
  int sign;
} ce_ray_crossing;

/* Builds T over triangles t of vertices v (both borrowed; malloc'd nodes). */
ce_errno ce_tri_tree_build(ce_tri_tree *T, const ce_vec3 *v, const int32_t (*t)[3], int32_t nf, ce_error *err);
void ce_tri_tree_free(ce_tri_tree *T);
/* Closest surface point to p into *out; returns the squared distance.
 * stack: T->nn + 1 entries of scratch. */
double ce_tri_tree_closest(const ce_tri_tree *T, ce_vec3 p, ce_vec3 *out, int32_t *stack);
/* All crossings of the vertical line through (px, py), unsorted, into the
 * growable *buf (*cap entries; realloc'd), their number into *count;
 * CE_ENOMEM (no message) when *buf cannot grow. */
ce_errno ce_tri_tree_vertical(const ce_tri_tree *T, double px, double py, int32_t *stack, ce_ray_crossing **buf,
                              int32_t *cap, int32_t *count);
/* qsort order of crossings: by z, then sign. */
int ce_ray_crossing_cmp(const void *pa, const void *pb);

#endif /* CE_INTERNAL_H */
