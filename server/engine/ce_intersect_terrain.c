/* ce_intersect_terrain.c — contact with a heightfield terrain (the port-based DEM terrain paper).
 *
 * Compliant body M vs terrain N (ce_intersect_tet_terrain). The terrain is
 * rigid, so the contact surface is the part of the terrain's surface inside
 * M, with M's pressure on it (as for any rigid mesh). Only the terrain under
 * M's bounding box is touched:
 *  1. M's root box placed in N's frame gives a footprint rectangle and a
 *     lowest point; when that point is above the bound of the surface over
 *     the footprint (block ranges, ce_heightfield_bounds) there is no
 *     contact and nothing else is done.
 *  2. The footprint is sampled on a lattice fixed to the grid's cells: each
 *     cell is split into m = ceil(dx / h_M) parts along x (likewise y;
 *     1 <= m <= 64), h_M the edge of a regular tet of M's mean tet volume,
 *     so the triangles are no larger than M's tets and no grid sample is
 *     skipped (h_M / 2 gave the same force to 4e-5 in the bowl test at
 *     twice the cost); at most CE_TERRAIN_MAX_SAMPLES per axis (m shrinks, then
 *     whole cells are skipped, for a body much larger than its tets). The
 *     lattice depends only on the cells, never on the grid's origin or
 *     size, so the same terrain gives the same triangles. Each lattice cell
 *     gives two triangles with upward (outward) normals. The triangles'
 *     vertices are the smooth surface's points lowered by
 *     (zxx sx^2 + zyy sy^2 + zxy sx sy) / 12 (sx, sy the lattice steps):
 *     the mean gap between a quadratic surface and its linear interpolant
 *     on these triangles (1/24 of the sum over the 3 edges e of e'He), so
 *     the triangles carry no systematic offset on a curved terrain (chords
 *     of a bowl lie above it by ~ kappa s^2 / 12 on average, which was a
 *     0.24 % force bias for a sphere in that paper's bowl).
 *     Steps 1 and 2 are ce_terrain_sample (ce_energy.h): the strain energy
 *     integrates M's field below the same triangles.
 *  3. Each triangle that reaches M's box in height is run down M's BVH
 *     (separating axes: the node box's three axes and the triangle's
 *     normal) and clipped by each candidate tet by the compliant-rigid
 *     intersector's clipper (ce_clip_tri_tet in ce_intersect_rigid.c):
 *     cheap rejections, the half-open rule for a triangle lying in a shared
 *     tet face, the gradient rule; pressures from the tet's linear field.
 * Cost: proportional to the footprint's lattice cells and the tets near the
 * surface — independent of the grid's size. The terrain is one element
 * (element id 0, like a half space): the patch pass groups faces through
 * M's tet adjacency.
 *
 * Normals point out of N (the terrain) into M, so the pressure pushes M up. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "ce_passes.h"
#include "ce_energy.h"
#include "ce_arena.h"
#include "ce_bvh.h"
#include "ce_geometry.h"
#include "ce_internal.h"
#include "ce_intersect.h"
#include "ce_limits.h"
#include "ce_mesh.h"
#include "ce_point_contact.h"
#include "ce_surface.h"
#include "ce_terrain.h"

#define CE_TERRAIN_MAX_SAMPLES CE_LIMIT_TERRAIN_SAMPLES

/* Clip triangle tri (M frame, unit normal nrm) by tet t of M with the
 * compliant-rigid rules (ce_clip_tri_tet) and add the polygon. Two
 * differences from ce_intersect_tet_tri, kept on purpose: the lattice
 * triangles have no global vertex ids, so the polygon gets its own vertices
 * (no labels, no sharing between neighbouring polygons); and the terrain is
 * one element, so elem_n is 0 rather than the triangle's index. */
static ce_errno clip_tri_tet(const ce_tetmesh *T, int32_t t, const ce_vec3 tri[3], ce_vec3 nrm, double eps,
                             ce_builder *b, ce_counters *c) {
  ce_vec3 Q[CE_CLIP_MAXV];
  int k = ce_clip_tri_tet(T, t, tri, nrm, eps, NULL, 0, Q, NULL, c);
  if (k < 3) return CE_OK;
  ce_vec3 g = T->grad[t];
  double p[CE_CLIP_MAXV];
  for (int i = 0; i < k; i++) p[i] = fmax(0.0, ce_dot(g, Q[i]) + T->offset[t]);
  ce_errno e = ce_builder_add_polygon(b, Q, p, k, nrm, g, ce_v3(0, 0, 0), t, 0);
  if (e == CE_OK) c->polygons++;
  return e;
}

/* Sample positions along one axis: grid units num/den with num = k * K
 * (den = m sub-samples per cell, or K cells per sample when the footprint is
 * too large), so the lattice is fixed to the grid's cells whatever the
 * grid's origin or size; cell index and local coordinate come from integers. */
typedef struct lattice {
  int n;
  double step; /* nominal spacing, m */
  int32_t *cell;
  double *s, *x;
} lattice;

/* Sample index range [i0, i1] of a sorted lattice axis whose cells cover
 * [lo, hi]; 0 when [lo, hi] misses the lattice. */
static int axis_range(const double *x, int n, double lo, double hi, int *i0, int *i1) {
  if (hi < x[0] || lo > x[n - 1]) return 0;
  int a = 0, b = n - 1;
  while (b - a > 1) { /* largest index with x <= lo */
    int mid = (a + b) / 2;
    if (x[mid] <= lo) a = mid;
    else b = mid;
  }
  if (x[b] <= lo) a = b;
  int c = a, d = n - 1;
  while (d - c > 1) { /* smallest index with x >= hi */
    int mid = (c + d) / 2;
    if (x[mid] >= hi) d = mid;
    else c = mid;
  }
  if (x[c] >= hi) d = c;
  *i0 = a;
  *i1 = d > a ? d : (a + 1 < n ? a + 1 : a);
  if (*i1 == *i0 && *i0 > 0) (*i0)--;
  return 1;
}

/* Does the box [lo, hi] (N frame) straddle the sampled surface over its
 * footprint (the triangulated surface lies between the samples' min and
 * max)? Fills the lattice cell range {i0, i1, j0, j1} (cells i0..i1-1). */
static int straddles(const lattice *lx, const lattice *ly, const double *zs, ce_vec3 lo, ce_vec3 hi, double eps,
                     int rg[4]) {
  int i0, i1, j0, j1;
  if (!axis_range(lx->x, lx->n, lo.x, hi.x, &i0, &i1) || !axis_range(ly->x, ly->n, lo.y, hi.y, &j0, &j1)) return 0;
  double zmin = INFINITY, zmax = -INFINITY;
  for (int j = j0; j <= j1; j++) {
    const double *row = zs + (size_t)j * lx->n;
    for (int i = i0; i <= i1; i++) {
      zmin = row[i] < zmin ? row[i] : zmin;
      zmax = row[i] > zmax ? row[i] : zmax;
    }
  }
  if (lo.z > zmax + eps || hi.z < zmin - eps) return 0;
  if (rg) {
    rg[0] = i0;
    rg[1] = i1;
    rg[2] = j0;
    rg[3] = j1;
  }
  return 1;
}

/* Edge of a regular tet with M's mean tet volume. */
static double mesh_resolution(const ce_geometry *m) {
  const ce_tetmesh *T = &m->tet;
  if (T->nt > 0 && m->volume > 0) return cbrt(6.0 * sqrt(2.0) * m->volume / T->nt);
  const ce_bvh_node *r = &m->bvh.nodes[0];
  double ext = 2 * fmax(r->half.x, fmax(r->half.y, r->half.z));
  return ext / cbrt(fmax(1.0, (double)T->nt));
}

static int make_lattice(lattice *L, const ce_heightfield *h, int axis, double x0, double x1, double d, double a,
                        double target, ce_arena *arena) {
  L->n = 0;
  L->cell = ce_arena_alloc(arena, (CE_TERRAIN_MAX_SAMPLES + 3) * sizeof(int32_t));
  L->s = ce_arena_alloc(arena, (CE_TERRAIN_MAX_SAMPLES + 3) * sizeof(double));
  L->x = ce_arena_alloc(arena, (CE_TERRAIN_MAX_SAMPLES + 3) * sizeof(double));
  if (!L->cell || !L->s || !L->x) return 0;
  double ax, ay, bx, by;
  ce_heightfield_domain(h, &ax, &ay, &bx, &by);
  int64_t ncell = (int64_t)llround(((axis == 0 ? bx : by) - a) / d); /* cells along the axis */
  if (!(x1 >= x0)) return 1;
  double den_d = ceil(d / target);
  int64_t den = den_d < 1 ? 1 : (den_d > 64 ? 64 : (int64_t)den_d), K = 1;
  double u0 = (x0 - a) / d, u1 = (x1 - a) / d;
  if ((u1 - u0) * den / K > CE_TERRAIN_MAX_SAMPLES) {
    if (den > 1) den = (int64_t)floor(CE_TERRAIN_MAX_SAMPLES / (u1 - u0));
    if (den < 1) den = 1;
    if (den == 1) K = (int64_t)ceil((u1 - u0) / CE_TERRAIN_MAX_SAMPLES);
  }
  L->step = d * (double)K / (double)den;
  int64_t k0 = (int64_t)floor(u0 * den / K), last = ncell * den;
  for (int64_t k = k0; L->n < CE_TERRAIN_MAX_SAMPLES + 3; k++) {
    int64_t num = k * K;
    if (num < 0) num = 0;
    if (num > last) num = last;
    if (L->n > 0 && num <= (int64_t)L->s[L->n - 1]) break; /* s holds num until the end */
    L->s[L->n] = (double)num;
    L->n++;
    if ((double)num / den >= u1 || num == last) break;
  }
  for (int q = 0; q < L->n; q++) {
    int64_t num = (int64_t)L->s[q];
    int64_t c = num / den, r = num % den;
    double s = (double)r / den;
    if (c >= ncell) { c = ncell - 1; s = 1.0; }
    L->cell[q] = (int32_t)c;
    L->s[q] = s;
    L->x[q] = a + ((double)c + s) * d;
  }
  return 1;
}

ce_errno ce_terrain_sample(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, ce_arena *arena,
                           ce_terrain_lattice *L) {
  memset(L, 0, sizeof *L);
  const ce_heightfield *h = ce_geometry_heightfield(n);
  if (!h || m->bvh.nnodes == 0 || m->tet.nt == 0) return CE_OK;
  ce_pose X_NM = ce_pose_inverse(X_MN);
  /* 1. footprint of M's root box in N's frame */
  const ce_bvh_node *root = &m->bvh.nodes[0];
  ce_vec3 lo = ce_v3(INFINITY, INFINITY, INFINITY), hi = ce_neg(lo);
  for (int k = 0; k < 8; k++) {
    ce_vec3 q = root->center;
    const double s[3] = {(k & 1) ? 1 : -1, (k & 2) ? 1 : -1, (k & 4) ? 1 : -1};
    const double hh[3] = {root->half.x, root->half.y, root->half.z};
    for (int a = 0; a < 3; a++)
      q = ce_axpy(q, s[a] * hh[a], ce_v3(root->axes.m[0][a], root->axes.m[1][a], root->axes.m[2][a]));
    q = ce_pose_apply(&X_NM, q);
    lo = ce_v3(fmin(lo.x, q.x), fmin(lo.y, q.y), fmin(lo.z, q.z));
    hi = ce_v3(fmax(hi.x, q.x), fmax(hi.y, q.y), fmax(hi.z, q.z));
  }
  double zlo, zhi;
  if (!ce_heightfield_bounds(h, lo.x, lo.y, hi.x, hi.y, &zlo, &zhi)) return CE_OK;
  if (lo.z > zhi) return CE_OK;
  /* 2. lattice over the footprint (clipped to the grid) */
  double ax, ay, bx, by, dx, dy;
  ce_heightfield_domain(h, &ax, &ay, &bx, &by);
  ce_heightfield_spacing(h, &dx, &dy);
  double x0 = fmax(lo.x, ax), x1 = fmin(hi.x, bx), y0 = fmax(lo.y, ay), y1 = fmin(hi.y, by);
  double target = mesh_resolution(m);
  lattice lx, ly;
  if (!make_lattice(&lx, h, 0, x0, x1, dx, ax, target, arena) ||
      !make_lattice(&ly, h, 1, y0, y1, dy, ay, target, arena))
    return CE_ENOMEM;
  const int nxs = lx.n, nys = ly.n;
  if (nxs < 2 || nys < 2) return CE_OK;
  /* samples on the smooth surface: N frame (z) and M frame (points) */
  double *zs = ce_arena_alloc(arena, (size_t)nxs * (size_t)nys * sizeof(double));
  ce_vec3 *pm = ce_arena_alloc(arena, (size_t)nxs * (size_t)nys * sizeof(ce_vec3));
  if (!zs || !pm) return CE_ENOMEM;
  const double sx = lx.step, sy = ly.step;
  for (int j = 0; j < nys; j++)
    for (int i = 0; i < nxs; i++) {
      ce_hf_jet J;
      ce_heightfield_patch_jet(h, lx.cell[i], ly.cell[j], lx.s[i], ly.s[j], &J);
      /* lowered by the mean gap between the triangles and a quadratic
       * surface (see the file comment) */
      double z = J.z - (J.zxx * sx * sx + J.zyy * sy * sy + J.zxy * sx * sy) / 12.0;
      zs[j * nxs + i] = z;
      pm[j * nxs + i] = ce_pose_apply(X_MN, ce_v3(lx.x[i], ly.x[j], z));
    }
  L->nx = nxs;
  L->ny = nys;
  L->x = lx.x;
  L->y = ly.x;
  L->z = zs;
  L->pm = pm;
  return CE_OK;
}

ce_errno ce_intersect_tet_terrain(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                                  ce_builder *b, ce_counters *c) {
  ce_arena *arena = b->arena;
  ce_terrain_lattice L;
  ce_errno e = ce_terrain_sample(m, n, X_MN, arena, &L);
  if (e != CE_OK || L.nx < 2) return e;
  ce_pose X_NM = ce_pose_inverse(X_MN);
  const int nxs = L.nx;
  const double *zs = L.z;
  const ce_vec3 *pm = L.pm;
  const lattice lx = {L.nx, 0, NULL, NULL, L.x}, ly = {L.ny, 0, NULL, NULL, L.y};
  /* 3. M's BVH down to the tets whose box straddles the sampled surface over
   * the box's footprint; each such tet is clipped against the triangles of
   * the lattice cells under it. */
  const double eps = 64 * DBL_EPSILON * fmax(m->scale, 1e-300);
  const ce_bvh *bvh = &m->bvh;
  const ce_tetmesh *T = &m->tet;
  ce_buf stack;
  ce_buf_init(&stack, sizeof(int32_t));
  if (ce_buf_reserve(arena, &stack, 64) != CE_OK) return CE_ENOMEM;
  ((int32_t *)stack.data)[stack.len++] = 0;
  while (stack.len > 0) {
    int32_t id = ((int32_t *)stack.data)[--stack.len];
    const ce_bvh_node *nd = &bvh->nodes[id];
    /* the node's box as an axis-aligned box in N's frame */
    ce_vec3 cn = ce_pose_apply(&X_NM, nd->center), ext = ce_v3(0, 0, 0);
    const double hh[3] = {nd->half.x, nd->half.y, nd->half.z};
    for (int k = 0; k < 3; k++) {
      ce_vec3 axn = ce_pose_rotate(&X_NM, ce_v3(nd->axes.m[0][k], nd->axes.m[1][k], nd->axes.m[2][k]));
      ext = ce_v3(ext.x + hh[k] * fabs(axn.x), ext.y + hh[k] * fabs(axn.y), ext.z + hh[k] * fabs(axn.z));
    }
    if (!straddles(&lx, &ly, zs, ce_sub(cn, ext), ce_add(cn, ext), eps, NULL)) continue;
    if (nd->left >= 0) {
      if (ce_buf_reserve(arena, &stack, 2) != CE_OK) return CE_ENOMEM;
      int32_t *st = (int32_t *)stack.data + stack.len;
      st[0] = nd->right;
      st[1] = nd->left;
      stack.len += 2;
      continue;
    }
    for (int32_t q = nd->first; q < nd->first + nd->count; q++) {
      int32_t t = bvh->order[q];
      ce_vec3 tlo = ce_v3(INFINITY, INFINITY, INFINITY), thi = ce_neg(tlo);
      for (int k = 0; k < 4; k++) {
        ce_vec3 x = ce_pose_apply(&X_NM, T->v[T->tet[t][k]]);
        tlo = ce_v3(fmin(tlo.x, x.x), fmin(tlo.y, x.y), fmin(tlo.z, x.z));
        thi = ce_v3(fmax(thi.x, x.x), fmax(thi.y, x.y), fmax(thi.z, x.z));
      }
      int rg[4];
      if (!straddles(&lx, &ly, zs, tlo, thi, eps, rg)) continue;
      for (int j = rg[2]; j < rg[3]; j++)
        for (int i = rg[0]; i < rg[1]; i++) {
          int32_t v00 = j * nxs + i, v10 = v00 + 1, v01 = v00 + nxs, v11 = v01 + 1;
          const int32_t tris[2][3] = {{v00, v10, v11}, {v00, v11, v01}};
          for (int w = 0; w < 2; w++) {
            const int32_t *tv = tris[w];
            double zlo3 = fmin(zs[tv[0]], fmin(zs[tv[1]], zs[tv[2]]));
            double zhi3 = fmax(zs[tv[0]], fmax(zs[tv[1]], zs[tv[2]]));
            if (zhi3 < tlo.z - eps || zlo3 > thi.z + eps) continue;
            ce_vec3 tri[3] = {pm[tv[0]], pm[tv[1]], pm[tv[2]]};
            ce_vec3 nrm = ce_normalize(ce_cross(ce_sub(tri[1], tri[0]), ce_sub(tri[2], tri[0])));
            if (ce_norm2(nrm) == 0) continue;
            c->candidate_pairs++;
            if ((e = clip_tri_tet(T, t, tri, nrm, eps, b, c)) != CE_OK) return e;
          }
        }
    }
  }
  return CE_OK;
}

/* ---- any other body vs terrain: compliant point contact ------------------------
 *
 * The body P is reduced to features, each a centre c with a radius rho
 * (terrain frame): a sphere is its centre and radius; a capsule is the point
 * of its medial segment closest to the surface (9 samples, then golden
 * section) with its radius; a box is its 8 corners (rho = 0); any other
 * shape is its mesh's surface vertices (rigid: all vertices; compliant: the
 * vertices with zero pressure, i.e. on the boundary). For each feature the
 * closest point of the smooth surface is found by Newton's method from the
 * nearest grid sample (ce_heightfield_closest); depth x = rho - signed
 * distance, normal = the Gauss frame's normal there (near the grid's edge
 * the distance and normal may be to the vertical wall under the rim, see
 * ce_heightfield_closest), and the force acts at
 * the midpoint of the witnesses (surface point and deepest point of P).
 *
 * Force law (Drake's docs, as ce_point_contact.c): fn = k x (1 + d xdot)+ with
 * k = P's point stiffness (the body's, else ce_point_stiffness_default) and
 * d = P's dissipation — the terrain is infinitely stiff, like a half space;
 * friction -mu (2/pi) atan(|vt|/vs) fn vt/|vt|. With several features in
 * contact (box corners, vertices) contact i carries the weight
 * x_i / sum_j x_j, so the total stiffness stays k (k x for equal depths) and
 * stays continuous as a corner enters. Cost: the features and a few Newton
 * steps each; a body whose bounding sphere is above the bound of the terrain
 * over its footprint stops after the block ranges. */

typedef struct tfeat {
  ce_vec3 c;
  double rho;
} tfeat;

typedef struct tcontact {
  double depth;
  ce_vec3 n, p_surf, p_body; /* terrain frame, n up out of the terrain */
} tcontact;

static int feature_contact(const ce_heightfield *h, ce_vec3 c, double rho, tcontact *out) {
  ce_hf_closest cp;
  if (!ce_heightfield_closest(h, c, rho, &cp)) return 0;
  double x = rho - cp.distance;
  if (!(x > 0)) return 0;
  out->depth = x;
  out->n = cp.normal;
  out->p_surf = cp.point;
  out->p_body = ce_axpy(cp.point, -x, cp.normal);
  return 1;
}

/* Signed distance of the segment point e(u) to the surface (large if off the grid). */
static double seg_distance(const ce_heightfield *h, ce_vec3 e0, ce_vec3 e1, double rho, double u) {
  ce_hf_closest cp;
  if (!ce_heightfield_closest(h, ce_axpy(e0, u, ce_sub(e1, e0)), rho, &cp)) return INFINITY;
  return cp.distance;
}

/* A capsule's feature: the point of its medial segment (terrain frame)
 * closest to the surface, from 9 samples and then golden section, with
 * the capsule's radius; its contact, if any, onto cons. */
static ce_errno capsule_contact(const ce_heightfield *h, const ce_pose *X_TP, const ce_shape *sp, ce_arena *arena,
                                ce_buf *cons) {
  tcontact tc;
  ce_vec3 e0 = ce_pose_apply(X_TP, ce_v3(0, 0, -0.5 * sp->length));
  ce_vec3 e1 = ce_pose_apply(X_TP, ce_v3(0, 0, 0.5 * sp->length));
  const int ns = 8;
  double best = INFINITY, ub = 0;
  for (int i = 0; i <= ns; i++) {
    double u = (double)i / ns, dd = seg_distance(h, e0, e1, sp->radius, u);
    if (dd < best) {
      best = dd;
      ub = u;
    }
  }
  if (isfinite(best)) {
    /* golden section on [ub - 1/ns, ub + 1/ns] */
    double lo = fmax(0.0, ub - 1.0 / ns), hi = fmin(1.0, ub + 1.0 / ns);
    const double gr = 0.5 * (sqrt(5.0) - 1);
    double u1 = hi - gr * (hi - lo), u2 = lo + gr * (hi - lo);
    double f1 = seg_distance(h, e0, e1, sp->radius, u1), f2 = seg_distance(h, e0, e1, sp->radius, u2);
    for (int it = 0; it < 40; it++) {
      if (f1 < f2) {
        hi = u2;
        u2 = u1;
        f2 = f1;
        u1 = hi - gr * (hi - lo);
        f1 = seg_distance(h, e0, e1, sp->radius, u1);
      } else {
        lo = u1;
        u1 = u2;
        f1 = f2;
        u2 = lo + gr * (hi - lo);
        f2 = seg_distance(h, e0, e1, sp->radius, u2);
      }
    }
    double u = f1 < f2 ? u1 : u2;
    if (fmin(f1, f2) > best) u = ub;
    if (feature_contact(h, ce_axpy(e0, u, ce_sub(e1, e0)), sp->radius, &tc)) {
      tcontact *q = ce_buf_push(arena, cons);
      if (!q) return CE_ENOMEM;
      *q = tc;
    }
  }
  return CE_OK;
}

/* P's contacts with the terrain (terrain frame) onto cons: a sphere's
 * centre, a capsule's closest segment point, else the box's corners or the
 * mesh's surface vertices below zhi (the terrain's bound over P's
 * footprint). */
static ce_errno terrain_contacts(const ce_heightfield *h, const ce_geometry *gp, const ce_pose *X_TP, double zhi,
                                 ce_arena *arena, ce_buf *cons) {
  const ce_shape *sp = &gp->shape_params;
  if (sp->type == CE_SHAPE_SPHERE) {
    tcontact tc;
    if (feature_contact(h, X_TP->p, sp->radius, &tc)) {
      tcontact *q = ce_buf_push(arena, cons);
      if (!q) return CE_ENOMEM;
      *q = tc;
    }
    return CE_OK;
  }
  if (sp->type == CE_SHAPE_CAPSULE) return capsule_contact(h, X_TP, sp, arena, cons);
  ce_buf feats;
  ce_buf_init(&feats, sizeof(tfeat));
  tcontact tc;
  if (sp->type == CE_SHAPE_BOX) {
    for (int c = 0; c < 8; c++) {
      tfeat *f = ce_buf_push(arena, &feats);
      if (!f) return CE_ENOMEM;
      f->c = ce_pose_apply(X_TP, ce_v3((c & 1 ? 0.5 : -0.5) * sp->size.x, (c & 2 ? 0.5 : -0.5) * sp->size.y,
                                       (c & 4 ? 0.5 : -0.5) * sp->size.z));
    }
  } else if (gp->tri.nf > 0) {
    for (int32_t i = 0; i < gp->tri.nv; i++) {
      tfeat *f = ce_buf_push(arena, &feats);
      if (!f) return CE_ENOMEM;
      f->c = ce_pose_apply(X_TP, gp->tri.v[i]);
    }
  } else {
    for (int32_t i = 0; i < gp->tet.nv; i++) {
      if (gp->tet.p && gp->tet.p[i] != 0) continue;
      tfeat *f = ce_buf_push(arena, &feats);
      if (!f) return CE_ENOMEM;
      f->c = ce_pose_apply(X_TP, gp->tet.v[i]);
    }
  }
  for (int64_t i = 0; i < feats.len; i++) {
    const tfeat *f = (const tfeat *)feats.data + i;
    /* a vertex above every possible surface height cannot touch */
    if (f->c.z > zhi) continue;
    if (feature_contact(h, f->c, 0.0, &tc)) {
      tcontact *q = ce_buf_push(arena, cons);
      if (!q) return CE_ENOMEM;
      *q = tc;
    }
  }
  return CE_OK;
}

/* The contacts' forces into r: world frame, normals out of B into A,
 * contact i weighted by its share of the summed depth (see above); the
 * deepest one gives r->point. */
static ce_errno terrain_forces(const ce_body *a, const ce_body *b, int terrain_is_a, double k, double d, double mu,
                               double vs, const ce_buf *cons, int want_patches, int32_t reduce, ce_arena *arena,
                               ce_result *r) {
  const ce_body *T = terrain_is_a ? a : b;
  const int64_t nc = cons->len;
  const tcontact *C = cons->data;
  double sumx = 0;
  int64_t deepest = 0;
  for (int64_t i = 0; i < nc; i++) {
    sumx += C[i].depth;
    if (C[i].depth > C[deepest].depth) deepest = i;
  }
  if (want_patches) {
    r->patches = ce_arena_calloc(arena, (size_t)nc, sizeof(ce_patch));
    if (!r->patches) return CE_ENOMEM;
    r->npatches = (int32_t)nc;
  }
  if (reduce > 0) {
    r->reduced = ce_arena_calloc(arena, (size_t)nc, sizeof(ce_reduced_contact));
    if (!r->reduced) return CE_ENOMEM;
    r->nreduced = (int32_t)nc;
  }
  const double sgn = terrain_is_a ? -1.0 : 1.0;
  ce_vec3 F = ce_v3(0, 0, 0), Ta = ce_v3(0, 0, 0), Tb = ce_v3(0, 0, 0), FN = ce_v3(0, 0, 0), Px = ce_v3(0, 0, 0);
  double fsum = 0;
  for (int64_t i = 0; i < nc; i++) {
    ce_vec3 n = ce_scale(ce_pose_rotate(&T->X_WB, C[i].n), sgn);
    ce_vec3 ps = ce_pose_apply(&T->X_WB, C[i].p_surf), pb = ce_pose_apply(&T->X_WB, C[i].p_body);
    ce_vec3 pt = ce_scale(ce_add(ps, pb), 0.5);
    double w = C[i].depth / sumx, xdot;
    ce_vec3 ft;
    double fn = ce_point_force(a, b, pt, n, k * w * C[i].depth, d, mu, vs, &xdot, &ft);
    ce_vec3 f = ce_add(ce_scale(n, fn), ft);
    F = ce_add(F, f);
    Ta = ce_add(Ta, ce_cross(ce_sub(pt, a->X_WB.p), f));
    Tb = ce_add(Tb, ce_cross(ce_sub(pt, b->X_WB.p), ce_neg(f)));
    FN = ce_axpy(FN, fn, n);
    Px = ce_axpy(Px, fn, pt);
    fsum += fn;
    /* the elastic part of contact i's law, its stiffness k w_i taken as
     * fixed (the weights make the sum of the laws non-conservative) */
    double ui = 0.5 * k * w * C[i].depth * C[i].depth;
    r->strain_energy += ui;
    if (want_patches) {
      ce_patch *pa = &r->patches[i];
      pa->faces = 0;
      pa->area = 0;
      pa->normal_force = ce_scale(n, fn);
      pa->normal_force_magnitude = fn;
      pa->point = pt;
      pa->strain_energy = ui;
    }
    /* contact i is a spring k w_i: its elastic force k w_i depth_i */
    if (reduce > 0) r->reduced[i] = ce_reduce_point((int32_t)i, pt, n, fn, ft, k * w, d, C[i].depth);
    if (i == deepest) {
      ce_point_mtd *m = &r->point;
      m->depth = C[i].depth;
      m->normal = n;
      m->witness_a = terrain_is_a ? ps : pb;
      m->witness_b = terrain_is_a ? pb : ps;
      m->point = pt;
      m->depth_rate = xdot;
      m->normal_force = fn;
      m->friction_force = ft;
      r->centroid = pt;
    }
  }
  if (fsum > 0) r->centroid = ce_scale(Px, 1.0 / fsum);
  r->status = CE_CONTACT_POINT;
  r->wrench_a.force = F;
  r->wrench_a.torque = Ta;
  r->wrench_b.force = ce_neg(F);
  r->wrench_b.torque = Tb;
  r->wrench_a_centroid = ce_wrench_shift(r->wrench_a, a->X_WB.p, r->centroid);
  r->total.faces = 0;
  r->total.area = 0;
  r->total.normal_force = FN;
  r->total.normal_force_magnitude = ce_norm(FN);
  r->total.point = r->centroid;
  r->total.strain_energy = r->strain_energy;
  return CE_OK;
}

ce_errno ce_terrain_point_contact(const ce_body *a, const ce_body *b, double stiction_tolerance,
                                  int want_patches, int32_t reduce, ce_arena *arena, ce_result *r,
                                  ce_error *err) {
  const int terrain_is_a = a->geometry->hf != NULL;
  const ce_body *T = terrain_is_a ? a : b, *P = terrain_is_a ? b : a;
  const ce_geometry *gp = P->geometry;
  const ce_heightfield *h = ce_geometry_heightfield(T->geometry);
  if (!h || gp->hf || gp->is_halfspace) {
    r->status = CE_CONTACT_UNSUPPORTED;
    return CE_OK;
  }
  double kp = P->point_stiffness;
  if (!isfinite(kp) || !(kp >= 0))
    return ce_fail(err, CE_EINVAL, "body %s: point stiffness %g must be finite and >= 0", terrain_is_a ? "B" : "A",
                   kp);
  double k = kp > 0 ? kp : ce_point_stiffness_default(gp);
  if (!(k > 0) || !isfinite(k))
    return ce_fail(err, CE_EINVAL, "body %s: point stiffness %g is not positive and finite", terrain_is_a ? "B" : "A",
                   k);
  double d = P->material.dissipation;
  double mu, vs;
  ce_point_model_init(a, b, k, d, stiction_tolerance, r, &mu, &vs);
  r->status = CE_CONTACT_NONE;

  /* P in the terrain's frame; early out on P's bounding sphere */
  ce_pose X_TW = ce_pose_inverse(&T->X_WB);
  ce_pose X_TP = ce_pose_compose(&X_TW, &P->X_WB);
  double R = gp->scale;
  double zlo, zhi;
  ce_vec3 o = X_TP.p;
  if (!ce_heightfield_bounds(h, o.x - R, o.y - R, o.x + R, o.y + R, &zlo, &zhi) || o.z - R > zhi) return CE_OK;

  /* features */
  ce_buf cons;
  ce_buf_init(&cons, sizeof(tcontact));
  ce_errno e = terrain_contacts(h, gp, &X_TP, zhi, arena, &cons);
  if (e != CE_OK) return e;
  if (cons.len == 0) return CE_OK;
  return terrain_forces(a, b, terrain_is_a, k, d, mu, vs, &cons, want_patches, reduce, arena, r);
}
