/* ce_patch.c — connected patches of a contact surface and their equivalent
 * contact points.
 *
 * Two faces belong to the same patch when they come from the same pair of
 * source elements (the triangles fanned from one polygon), when they share
 * one source element and their other source elements are neighbours in
 * their geometry (tet->adj across a face for compliant meshes, tri->adj
 * across an edge for rigid meshes; a half space is the single element 0 with
 * no neighbours), when both pairs of source elements are neighbours (needed
 * where element boundaries of A and B coincide, e.g. symmetric meshes, which
 * otherwise split one contact into sectors), or when they share a surface
 * vertex. A surface where every face shares a vertex with an earlier one
 * is one patch without more ado; otherwise faces are joined by
 * union-find, and an open-addressing hash maps (element_a, element_b) to
 * the first face with that pair (where at most a few faces are left
 * outside the largest set by the shared vertices, those scan the surface
 * instead). Both live in the arena. Patches are numbered in the order of
 * their first face, so the numbering depends only on the surface.
 *
 * Per patch: face count, area, normal force vector F = sum fn_f n_f (fn_f the
 * integral of the normal traction over face f, from the wrench pass), |F|,
 * and the equivalent contact point — the centre of pressure
 * x* = sum (integral tn x dA) / sum (integral tn dA) (Xie & Chakraborty): the point
 * about which the normal tractions have no moment component along the
 * normals. Its weights tn are >= 0, so it lies in the convex hull of the
 * patch. A patch with zero normal force uses its area centroid. r->total is
 * the same for the whole surface. */
#include <string.h>

#include "ce_arena.h"
#include "ce_geometry.h"
#include "ce_passes.h"

typedef struct pslot { int32_t a, b, face; } pslot; /* face < 0: empty */

typedef struct pmap {
  pslot *slot;
  uint64_t mask;
} pmap;

static uint64_t phash(int32_t a, int32_t b) {
  return ce_mix64(((uint64_t)(uint32_t)a << 32) | (uint32_t)b);
}

static pslot *pmap_find(const pmap *m, int32_t a, int32_t b) {
  uint64_t i = phash(a, b) & m->mask;
  for (;;) {
    pslot *s = &m->slot[i];
    if (s->face < 0 || (s->a == a && s->b == b)) return s;
    i = (i + 1) & m->mask;
  }
}

static int32_t uf_find(int32_t *parent, int32_t x) {
  while (parent[x] != x) {
    parent[x] = parent[parent[x]];
    x = parent[x];
  }
  return x;
}

/* The smaller root wins, so the forest depends only on the union order.
 * Returns 1 when two sets were joined. */
static int uf_union(int32_t *parent, int32_t x, int32_t y) {
  x = uf_find(parent, x);
  y = uf_find(parent, y);
  if (x == y) return 0;
  if (x < y) parent[y] = x;
  else parent[x] = y;
  return 1;
}

/* Neighbours of element e of geometry g: returns the count (0..4). */
static int neighbours(const ce_geometry *g, int32_t e, int32_t out[4]) {
  if (!g || g->is_halfspace || e < 0) return 0;
  if (g->tet.nt > 0) {
    if (e >= g->tet.nt || !g->tet.adj) return 0;
    for (int i = 0; i < 4; i++) out[i] = g->tet.adj[e][i];
    return 4;
  }
  if (g->tri.nf > 0) {
    if (e >= g->tri.nf || !g->tri.adj) return 0;
    for (int i = 0; i < 3; i++) out[i] = g->tri.adj[e][i];
    return 3;
  }
  return 0;
}

typedef struct pacc {
  int32_t faces;
  double area, fn;
  ce_vec3 ac, fnx, nf;
} pacc;

static inline __attribute__((always_inline)) void acc_add(pacc *p, const ce_surface *s, const ce_face_forces *ff, int32_t f) {
  double fn = (ff && ff->fn) ? ff->fn[f] : 0.0;
  p->faces++;
  p->area += s->area[f];
  p->ac = ce_axpy(p->ac, s->area[f], s->centroid[f]);
  p->fn += fn;
  if (ff && ff->fn_x) p->fnx = ce_add(p->fnx, ff->fn_x[f]);
  p->nf = ce_axpy(p->nf, fn, s->normal[f]);
}

static ce_patch acc_finish(const pacc *p) {
  ce_patch r;
  memset(&r, 0, sizeof r);
  r.faces = p->faces;
  r.area = p->area;
  r.normal_force = p->nf;
  r.normal_force_magnitude = ce_norm(p->nf);
  if (p->fn > 0) r.point = ce_scale(p->fnx, 1.0 / p->fn);
  else if (p->area > 0) r.point = ce_scale(p->ac, 1.0 / p->area);
  return r;
}

static ce_errno union_shared_vertices(const ce_surface *s, const ce_face_forces *ff, int32_t *parent,
                                      ce_arena *arena, int32_t *sets, pacc *tot);
static ce_errno union_elements(const ce_surface *s, const ce_geometry *ga, const ce_geometry *gb, int32_t *parent,
                               ce_arena *arena, int32_t *sets);
static ce_errno label_patches(ce_surface *s, const ce_face_forces *ff, ce_arena *arena, int32_t *parent,
                              const pacc *tot, ce_result *r);
static ce_errno one_patch(ce_surface *s, ce_arena *arena, const pacc *tot, ce_result *r);

/* Whether every face after the first shares a vertex with an earlier face:
 * then each face is joined to an earlier one, and so (by induction) to face
 * 0, and the surface is one patch. The intersectors emit neighbouring
 * polygons one after another, so a connected surface usually passes; a
 * face that does not stops the scan. seen[v] marks the vertices of earlier
 * faces (seen[nv] takes the marks of out-of-range indices); no branch
 * depends on the data but the stop. */
static int chained(const ce_surface *s, uint8_t *seen) {
  const uint32_t nv = (uint32_t)s->nv;
  memset(seen, 0, (size_t)nv + 1);
  for (int32_t f = 0; f < s->nf; f++) {
    int any = f == 0;
    for (int32_t i = s->face_offsets[f]; i < s->face_offsets[f + 1]; i++) {
      const uint32_t v = (uint32_t)s->face_vertices[i], ok = v < nv;
      any |= seen[ok ? v : nv] & ok;
    }
    if (!any) return 0;
    for (int32_t i = s->face_offsets[f]; i < s->face_offsets[f + 1]; i++) {
      const uint32_t v = (uint32_t)s->face_vertices[i];
      seen[v < nv ? v : nv] = 1;
    }
  }
  return 1;
}

ce_errno ce_patches_compute(ce_surface *s, const ce_geometry *ga, const ce_geometry *gb,
                            const ce_face_forces *ff, ce_arena *arena, ce_result *r) {
  const int32_t nf = s->nf;
  ce_errno e;
  r->npatches = 0;
  r->patches = NULL;
  memset(&r->total, 0, sizeof r->total);
  if (nf <= 0) return CE_OK;

  pacc tot;
  memset(&tot, 0, sizeof tot);
  const int summed = ff && ff->sums; /* the wrench pass's sums: the same additions */
  if (summed) {
    tot.faces = nf;
    tot.area = ff->area;
    tot.ac = ff->area_centroid;
    tot.fn = ff->fn_sum;
    tot.fnx = ff->fn_x_sum;
    tot.nf = ff->fn_n;
  }
  uint8_t *seen = ce_arena_alloc(arena, (size_t)(s->nv > 0 ? s->nv : 0) + 1);
  if (!seen) return CE_ENOMEM;
  if (chained(s, seen)) {
    for (int32_t f = 0; !summed && f < nf; f++) acc_add(&tot, s, ff, f);
    return one_patch(s, arena, &tot, r);
  }
  /* The patches are the connected components of the relations below, so
   * the order of the passes does not change them (nor their numbering,
   * by first face). The vertex pass is linear and usually joins the whole
   * surface; once one component is left the element passes (~25 hash
   * probes per face) cannot change anything and are skipped, and
   * otherwise only the faces outside its largest component probe (every
   * relation is symmetric, so a link between two components is found from
   * a face of the smaller one); where they leave one component, that is
   * the patch. */
  int32_t *parent = ce_arena_alloc(arena, (size_t)nf * sizeof(int32_t));
  if (!parent) return CE_ENOMEM;
  for (int32_t f = 0; f < nf; f++) parent[f] = f;
  int32_t sets = nf;
  if ((e = union_shared_vertices(s, ff, parent, arena, &sets, summed ? NULL : &tot)) != CE_OK) return e;
  if (sets == 1) return one_patch(s, arena, &tot, r);
  if ((e = union_elements(s, ga, gb, parent, arena, &sets)) != CE_OK) return e;
  if (sets == 1) return one_patch(s, arena, &tot, r);
  return label_patches(s, ff, arena, parent, &tot, r);
}

/* Faces sharing a surface vertex (the intersectors share the vertices of
 * neighbouring polygons); *sets counts the components left. Runs before
 * any other union: face f is still alone when its turn comes (earlier
 * faces only joined sets holding earlier faces), so its root rf is carried
 * along instead of found again at every vertex; the smaller root wins, as
 * in uf_union. first[v] is any face of the set holding v's faces: moved to
 * the set's root on every visit, so that later finds start near it; a
 * vertex not seen before counts as already in f's set (rf is a root: the
 * find returns at once), which spares a branch the processor cannot
 * predict. The same pass sums the whole surface into *tot (face order, as
 * label_patches sums each patch) unless tot is NULL. */
static ce_errno union_shared_vertices(const ce_surface *s, const ce_face_forces *ff, int32_t *parent,
                                      ce_arena *arena, int32_t *sets, pacc *tot) {
  int32_t *first = s->nv > 0 ? ce_arena_alloc(arena, (size_t)s->nv * sizeof(int32_t)) : NULL;
  if (s->nv > 0 && !first) return CE_ENOMEM;
  for (int32_t v = 0; v < s->nv; v++) first[v] = -1;
  int32_t joined = 0;
  for (int32_t f = 0; f < s->nf; f++) {
    if (tot) acc_add(tot, s, ff, f);
    int32_t rf = f;
    for (int32_t i = s->face_offsets[f]; i < s->face_offsets[f + 1]; i++) {
      int32_t v = s->face_vertices[i];
      if (v < 0 || v >= s->nv) continue;
      int32_t g = first[v];
      int32_t rg = uf_find(parent, g < 0 ? rf : g);
      if (rg != rf) {
        if (rg < rf) {
          parent[rf] = rg;
          rf = rg;
        } else {
          parent[rg] = rf;
        }
        joined++;
      }
      first[v] = rf;
    }
  }
  *sets -= joined;
  return CE_OK;
}

/* Each face's root into root[f]; returns the root of the largest set
 * (which of several equal ones does not matter: the patches do not depend
 * on which faces probe), *outside: how many faces are not in it. */
static int32_t largest_root(int32_t *parent, int32_t nf, int32_t *root, ce_arena *arena, int32_t *outside) {
  int32_t *size = ce_arena_calloc(arena, (size_t)nf, sizeof *size);
  if (!size) return -1;
  int32_t best = 0, most = 0;
  for (int32_t f = 0; f < nf; f++) {
    const int32_t x = root[f] = uf_find(parent, f), n = ++size[x];
    best = n > most ? x : best;
    most = n > most ? n : most;
  }
  *outside = nf - most;
  return best;
}

/* Element e and its neighbours in g (the relations below pair every one of
 * A's with every one of B's); returns the count (1..5). */
static int element_set(const ce_geometry *g, int32_t e, int32_t out[5]) {
  int32_t nb[4];
  int k = neighbours(g, e, nb), n = 0;
  out[n++] = e;
  for (int i = 0; i < k; i++)
    if (nb[i] >= 0) out[n++] = nb[i];
  return n;
}

static int in_set(const int32_t *set, int n, int32_t e) {
  for (int i = 0; i < n; i++)
    if (set[i] == e) return 1;
  return 0;
}

/* At most this many faces outside the largest set look for their related
 * faces by scanning the surface (a few comparisons per face) instead of
 * through the hash map of every face's element pair. */
#define CE_PATCH_SCAN_FACES 4

/* Face f is related to face g when g's element of A is f's or one of its
 * neighbours, and g's element of B is f's or one of its neighbours: the
 * same pair, one shared and the other adjacent, or both adjacent. */
static int32_t union_scan(const ce_surface *s, const ce_geometry *ga, const ce_geometry *gb, int32_t *parent,
                          const int32_t *root, int32_t big) {
  int32_t face[CE_PATCH_SCAN_FACES], sa[CE_PATCH_SCAN_FACES][5], sb[CE_PATCH_SCAN_FACES][5];
  int na[CE_PATCH_SCAN_FACES], nb[CE_PATCH_SCAN_FACES], n = 0;
  for (int32_t f = 0; f < s->nf && n < CE_PATCH_SCAN_FACES; f++) {
    if (root[f] == big) continue;
    face[n] = f;
    na[n] = element_set(ga, s->element_a[f], sa[n]);
    nb[n] = element_set(gb, s->element_b[f], sb[n]);
    n++;
  }
  int32_t joined = 0;
  for (int32_t g = 0; g < s->nf; g++) {
    const int32_t ea = s->element_a[g], eb = s->element_b[g];
    for (int i = 0; i < n; i++)
      if (face[i] != g && in_set(sa[i], na[i], ea) && in_set(sb[i], nb[i], eb)) joined += uf_union(parent, face[i], g);
  }
  return joined;
}

/* Faces whose source elements are the same or neighbours (see the top of
 * the file); *sets counts the components left. */
static ce_errno union_elements(const ce_surface *s, const ce_geometry *ga, const ce_geometry *gb, int32_t *parent,
                               ce_arena *arena, int32_t *sets) {
  const int32_t nf = s->nf;
  int32_t outside = nf;
  int32_t *root = ce_arena_alloc(arena, (size_t)nf * sizeof *root);
  const int32_t big = root ? largest_root(parent, nf, root, arena, &outside) : -1;
  if (big < 0) return CE_ENOMEM;
  if (outside <= CE_PATCH_SCAN_FACES) {
    *sets -= union_scan(s, ga, gb, parent, root, big);
    return CE_OK;
  }
  uint64_t cap = 16;
  while (cap < 2 * (uint64_t)nf) cap <<= 1;
  pmap map = {ce_arena_alloc(arena, cap * sizeof(pslot)), cap - 1};
  if (!map.slot) return CE_ENOMEM;
  for (uint64_t i = 0; i < cap; i++) map.slot[i].face = -1;

  /* faces with the same element pair */
  int32_t joined = 0;
  for (int32_t f = 0; f < nf; f++) {
    pslot *sl = pmap_find(&map, s->element_a[f], s->element_b[f]);
    if (sl->face < 0) {
      sl->a = s->element_a[f];
      sl->b = s->element_b[f];
      sl->face = f;
    } else {
      joined += uf_union(parent, sl->face, f);
    }
  }
  /* one element shared, the other adjacent */
  for (int32_t f = 0; f < nf; f++) {
    if (root[f] == big) continue;
    int32_t ea = s->element_a[f], eb = s->element_b[f], nb[4];
    int k = neighbours(gb, eb, nb);
    for (int i = 0; i < k; i++) {
      if (nb[i] < 0) continue;
      pslot *sl = pmap_find(&map, ea, nb[i]);
      if (sl->face >= 0) joined += uf_union(parent, sl->face, f);
    }
    int32_t na[4];
    int ka = neighbours(ga, ea, na);
    for (int i = 0; i < ka; i++) {
      if (na[i] < 0) continue;
      pslot *sl = pmap_find(&map, na[i], eb);
      if (sl->face >= 0) joined += uf_union(parent, sl->face, f);
      /* both adjacent: where a boundary between A's elements coincides
       * with one between B's (symmetric meshes, a rigid edge lying in a tet
       * face), the faces on either side share neither element */
      for (int j = 0; j < k; j++) {
        if (nb[j] < 0) continue;
        sl = pmap_find(&map, na[i], nb[j]);
        if (sl->face >= 0) joined += uf_union(parent, sl->face, f);
      }
    }
  }
  *sets -= joined;
  return CE_OK;
}

/* The whole surface is one patch: its sums are the total's *tot (the
 * patch's would be the same additions in the same order). */
static ce_errno one_patch(ce_surface *s, ce_arena *arena, const pacc *tot, ce_result *r) {
  r->patches = ce_arena_calloc(arena, 1, sizeof(ce_patch));
  if (!r->patches) return CE_ENOMEM;
  memset(s->patch, 0, (size_t)s->nf * sizeof *s->patch);
  r->total = acc_finish(tot);
  r->patches[0] = r->total;
  r->npatches = 1;
  return CE_OK;
}

/* Number the patches in order of their first face and sum them. */
static ce_errno label_patches(ce_surface *s, const ce_face_forces *ff, ce_arena *arena, int32_t *parent,
                              const pacc *tot, ce_result *r) {
  const int32_t nf = s->nf;
  /* number the patches in order of their first face; reuse parent's roots */
  int32_t *label = ce_arena_alloc(arena, (size_t)nf * sizeof(int32_t));
  if (!label) return CE_ENOMEM;
  for (int32_t f = 0; f < nf; f++) label[f] = -1;
  int32_t np = 0;
  for (int32_t f = 0; f < nf; f++) {
    int32_t root = uf_find(parent, f);
    if (label[root] < 0) label[root] = np++;
    s->patch[f] = label[root];
  }
  pacc *acc = ce_arena_calloc(arena, (size_t)np, sizeof(pacc));
  r->patches = ce_arena_calloc(arena, (size_t)np, sizeof(ce_patch));
  if (!acc || !r->patches) return CE_ENOMEM;
  for (int32_t f = 0; f < nf; f++) acc_add(&acc[s->patch[f]], s, ff, f);
  for (int32_t i = 0; i < np; i++) r->patches[i] = acc_finish(&acc[i]);
  r->npatches = np;
  r->total = acc_finish(tot);
  return CE_OK;
}
