/* ce_energy.c — the strain energy of a hydroelastic contact.
 *
 * The pressure field model is conservative (Elandt et al. 2019, Eq. 1 and
 * their appendix X-A): the energy stored in a contact is the integral of
 * each body's field over the part of the overlap it is displaced from,
 *
 *     U = integral over A n B of min(p_A, p_B) dV,
 *
 * which is Eq. 1 for both bodies: the equal-pressure surface splits the
 * overlap, and each side holds the field of the body that is softer there.
 * A rigid body has no field of its own (infinite pressure), so against it
 * U = integral over A n B of p_A dV; a compliant half space uses its slab
 * field p = (E / s) * depth, as the contact surface does. The elastic
 * (dissipation- and friction-free) wrench is minus the gradient of U with
 * respect to the relative pose.
 *
 * Every field is linear on each tet, so U is computed exactly, element by
 * element, in M's frame (M: the compliant mesh the surface is built in):
 *
 *  tet – tet        every pair of overlapping tets from the hierarchies
 *                   (not only those the traced surface visits: tets wholly
 *                   on one side of the equal-pressure surface hold energy
 *                   too): tet a clipped by tet b's four face planes, split
 *                   by the plane p_A = p_B, and each side's linear field
 *                   integrated (volume times the mean of the vertex values
 *                   of each tet of the clipped polytope).
 *  tet – half space the tets meeting the half space, clipped by its plane;
 *                   a compliant half space's slab field splits them as a
 *                   tet's would.
 *  tet – rigid mesh a convex closed mesh: each tet met by the mesh's
 *                   surface is clipped by the planes of the triangles near
 *                   it (for a convex body that is exactly the tet's part
 *                   inside it); tets wholly inside are found by a flood
 *                   fill across tet faces from those. Any other closed
 *                   mesh: the signed prism decomposition (below), each
 *                   tet clipped by the prisms under the triangles above
 *                   it. An open rigid mesh bounds no solid:
 *                   CE_ENERGY_UNAVAILABLE.
 *  half space – rigid mesh  the divergence theorem: with F = (0, 0, -k z^2 / 2)
 *                   (div F = k (-z) = p), U is the flux of F through the
 *                   rigid mesh's surface below the boundary plane (F = 0 on
 *                   the plane itself), a closed form per clipped triangle.
 *                   Any closed mesh, convex or not; an open one is
 *                   CE_ENERGY_UNAVAILABLE.
 *  tet – terrain    the mesh's part below the sampled lattice triangles
 *                   the contact surface is built from (the same ones), as
 *                   the union of the prisms below them.
 *
 * Patches: each element of the body the energy is integrated over (M's tets,
 * or the rigid mesh's triangles for a half space – rigid mesh pair) takes
 * the patch of the first surface face built from it; an element in the
 * overlap with no face of its own takes the patch of the nearest such
 * element across element faces (breadth first, in element order); energy of
 * elements that reach no face is in the pair's total only.
 *
 * Determinism: candidates come from the hierarchies in their fixed order and
 * are summed in it, so the energy does not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ce_arena.h"
#include "ce_bvh.h"
#include "ce_geometry.h"
#include "ce_intersect.h"
#include "ce_mesh.h"
#include "ce_passes.h"
#include "ce_energy.h"

/* ---- convex polytopes as lists of tets ----------------------------------- */

typedef struct etet { ce_vec3 v[4]; } etet;

static inline ce_vec3 cut(ce_vec3 p, double sp, ce_vec3 q, double sq) {
  return ce_axpy(p, sp / (sp - sq), ce_sub(q, p));
}

static inline int push_tet(ce_arena *a, ce_buf *out, ce_vec3 p0, ce_vec3 p1, ce_vec3 p2, ce_vec3 p3) {
  etet *t = out->len < out->cap ? (etet *)out->data + out->len++ : ce_buf_push(a, out);
  if (!t) return -1;
  t->v[0] = p0;
  t->v[1] = p1;
  t->v[2] = p2;
  t->v[3] = p3;
  return 0;
}

/* The prism with triangles (P0, P1, P2) and (Q0, Q1, Q2), Pi joined to Qi
 * by its edges and planar quadrilateral sides, as three tets (consistent
 * diagonals P0-Q1, P1-Q2, P0-Q2). */
static int push_prism(ce_arena *a, ce_buf *out, ce_vec3 p0, ce_vec3 p1, ce_vec3 p2, ce_vec3 q0, ce_vec3 q1,
                      ce_vec3 q2) {
  if (push_tet(a, out, p0, p1, p2, q2) || push_tet(a, out, p0, p1, q1, q2) || push_tet(a, out, p0, q0, q1, q2))
    return -1;
  return 0;
}

/* The part of tet t where n.x - d <= 0, appended to out as up to 3 tets. */
static int clip_one(ce_arena *a, const etet *t, ce_vec3 n, double d, ce_buf *out) {
  double s[4];
  int in[4], nin = 0, outv[4], nout = 0;
  for (int i = 0; i < 4; i++) {
    s[i] = ce_dot(n, t->v[i]) - d;
    if (s[i] <= 0) in[nin++] = i;
    else outv[nout++] = i;
  }
  const ce_vec3 *v = t->v;
  switch (nin) {
    case 4: return push_tet(a, out, v[0], v[1], v[2], v[3]);
    case 0: return 0;
    case 1: {
      int i = in[0];
      return push_tet(a, out, v[i], cut(v[i], s[i], v[outv[0]], s[outv[0]]), cut(v[i], s[i], v[outv[1]], s[outv[1]]),
                      cut(v[i], s[i], v[outv[2]], s[outv[2]]));
    }
    case 3: {
      int o = outv[0];
      ce_vec3 p0 = v[in[0]], p1 = v[in[1]], p2 = v[in[2]];
      return push_prism(a, out, p0, p1, p2, cut(p0, s[in[0]], v[o], s[o]), cut(p1, s[in[1]], v[o], s[o]),
                        cut(p2, s[in[2]], v[o], s[o]));
    }
    default: { /* two in (i, j), two out (k, l) */
      int i = in[0], j = in[1], k = outv[0], l = outv[1];
      return push_prism(a, out, v[i], cut(v[i], s[i], v[k], s[k]), cut(v[i], s[i], v[l], s[l]), v[j],
                        cut(v[j], s[j], v[k], s[k]), cut(v[j], s[j], v[l], s[l]));
    }
  }
}

/* Replaces the polytope in *cur by its part where n.x <= d (tmp: scratch
 * of the same kind; the two are swapped). */
static int clip_list(ce_arena *a, ce_buf *cur, ce_buf *tmp, ce_vec3 n, double d) {
  tmp->len = 0;
  for (int64_t i = 0; i < cur->len; i++)
    if (clip_one(a, (const etet *)cur->data + i, n, d, tmp)) return -1;
  ce_buf s = *cur;
  *cur = *tmp;
  *tmp = s;
  return 0;
}

/* A linear field g . x + c (g = 0, c = INFINITY: rigid, no field). */
typedef struct efield { ce_vec3 g; double c; } efield;

static inline double tet_vol(const etet *t) {
  ce_vec3 a = ce_sub(t->v[1], t->v[0]), b = ce_sub(t->v[2], t->v[0]), c = ce_sub(t->v[3], t->v[0]);
  return fabs(ce_dot(a, ce_cross(b, c))) / 6.0;
}

/* Integral of f over tet t: volume times the mean of its vertex values. */
static inline double tet_integral(const etet *t, efield f) {
  double s = 0;
  for (int i = 0; i < 4; i++) s += ce_dot(f.g, t->v[i]) + f.c;
  return tet_vol(t) * 0.25 * s;
}

/* Integral of min(fa, fb) over the polytope *cur (fb rigid: of fa). Per
 * tet t cut by the plane fa = fb, one side is one tet and the other three
 * (or both three), so only one side is clipped:
 *     integral over t of min(fa, fb) = integral over t of fb
 *         + integral over t n {fa <= fb} of (fa - fb),
 * or the same with a and b swapped, whichever clips the smaller piece. */
static int integrate_min(ce_arena *a, const ce_buf *cur, efield fa, efield fb, ce_buf *tmp, double *sum) {
  double u = 0;
  if (isinf(fb.c)) {
    for (int64_t i = 0; i < cur->len; i++) u += tet_integral((const etet *)cur->data + i, fa);
    *sum += u;
    return 0;
  }
  /* fa - fb = (ga - gb) . x + (ca - cb) <= 0 holds fa, the rest fb */
  ce_vec3 dg = ce_sub(fa.g, fb.g);
  double dc = fb.c - fa.c;
  for (int64_t i = 0; i < cur->len; i++) {
    const etet *t = (const etet *)cur->data + i;
    int nin = 0;
    for (int k = 0; k < 4; k++) nin += ce_dot(dg, t->v[k]) - dc <= 0;
    if (nin == 4 || nin == 0) {
      u += tet_integral(t, nin ? fa : fb);
      continue;
    }
    /* base: the whole tet's field of the side not clipped; piece: the other */
    const int a_piece = nin != 3;
    efield base = a_piece ? fb : fa, diff = {ce_sub(fa.g, fb.g), fa.c - fb.c};
    if (!a_piece) diff = (efield){ce_neg(diff.g), -diff.c};
    u += tet_integral(t, base);
    tmp->len = 0;
    if (clip_one(a, t, a_piece ? dg : ce_neg(dg), a_piece ? dc : -dc, tmp)) return -1;
    for (int64_t j = 0; j < tmp->len; j++) u += tet_integral((const etet *)tmp->data + j, diff);
  }
  *sum += u;
  return 0;
}

/* ---- per-query state ----------------------------------------------------- */

typedef struct equery {
  ce_arena *a;
  ce_buf cur, tmp, tmp2; /* etet */
  double *elem_u;        /* per element of the integrated body (patches), or NULL */
  unsigned char *touched;
  double total;
} equery;

static ce_errno eq_init(equery *q, ce_arena *a, int32_t nelem, int want_elems) {
  memset(q, 0, sizeof *q);
  q->a = a;
  ce_buf_init(&q->cur, sizeof(etet));
  ce_buf_init(&q->tmp, sizeof(etet));
  ce_buf_init(&q->tmp2, sizeof(etet));
  if (ce_buf_reserve(a, &q->cur, 32) || ce_buf_reserve(a, &q->tmp, 32) || ce_buf_reserve(a, &q->tmp2, 32))
    return CE_ENOMEM;
  if (want_elems && nelem > 0) {
    q->elem_u = ce_arena_calloc(a, (size_t)nelem, sizeof(double));
    q->touched = ce_arena_calloc(a, (size_t)nelem, 1);
    if (!q->elem_u || !q->touched) return CE_ENOMEM;
  }
  return CE_OK;
}

static inline void eq_add(equery *q, int32_t elem, double u) {
  q->total += u;
  if (q->elem_u) {
    q->elem_u[elem] += u;
    q->touched[elem] = 1;
  }
}

static inline int set_tet(equery *q, const ce_vec3 x[4]) {
  q->cur.len = 0;
  return push_tet(q->a, &q->cur, x[0], x[1], x[2], x[3]);
}

static inline efield tet_field(const ce_tetmesh *T, int32_t t) {
  efield f = {T->grad[t], T->offset[t]};
  return f;
}

static inline void tet_vertices(const ce_tetmesh *T, int32_t t, ce_vec3 x[4]) {
  for (int i = 0; i < 4; i++) x[i] = T->v[T->tet[t][i]];
}

/* ---- tet – tet ------------------------------------------------------------ */

/* One candidate pair: tet a of M placed in N's frame (xa, its field fa)
 * against tet b of N. Most candidates from the hierarchies' boxes do not
 * overlap: a face plane of b with all of xa outside rejects them before
 * any clipping, and a tet wholly inside b is not clipped. Where one field
 * is below the other on the whole pair (their ranges over the two tets do
 * not cross), the equal-pressure split is skipped. */
static int tet_pair(equery *q, const ce_vec3 xa[4], const double pla[4][4], efield fa, const double pa[2],
                    const ce_tetmesh *TN, int32_t b, double *u) {
  const double(*fp)[4] = TN->fplane[b];
  int cutf[4], ncut = 0;
  for (int f = 0; f < 4; f++) {
    int nout = 0;
    for (int i = 0; i < 4; i++) nout += fp[0][f] * xa[i].x + fp[1][f] * xa[i].y + fp[2][f] * xa[i].z - fp[3][f] > 0;
    if (nout == 4) return 0;
    if (nout > 0) cutf[ncut++] = f;
  }
  /* and the other way round: b's vertices outside a face of a */
  int cuta[4], ncuta = 0;
  ce_vec3 xb[4];
  for (int i = 0; i < 4; i++) xb[i] = TN->v[TN->tet[b][i]];
  for (int f = 0; f < 4; f++) {
    int nout = 0;
    for (int i = 0; i < 4; i++) nout += pla[f][0] * xb[i].x + pla[f][1] * xb[i].y + pla[f][2] * xb[i].z - pla[f][3] > 0;
    if (nout == 4) return 0;
    if (nout > 0) cuta[ncuta++] = f;
  }
  /* a n b: the tet cut by fewer of the other's face planes, clipped by
   * them (fewer pieces; b wholly inside a is not clipped at all) */
  if (ncuta < ncut) {
    if (set_tet(q, xb)) return -1;
    for (int k = 0; k < ncuta && q->cur.len > 0; k++) {
      int f = cuta[k];
      if (clip_list(q->a, &q->cur, &q->tmp, ce_v3(pla[f][0], pla[f][1], pla[f][2]), pla[f][3])) return -1;
    }
  } else {
    if (set_tet(q, xa)) return -1;
    for (int k = 0; k < ncut && q->cur.len > 0; k++) {
      int f = cutf[k];
      if (clip_list(q->a, &q->cur, &q->tmp, ce_v3(fp[0][f], fp[1][f], fp[2][f]), fp[3][f])) return -1;
    }
  }
  if (q->cur.len == 0) return 0;
  efield fb = {TN->grad[b], TN->offset[b]};
  const double *pb = TN->prange[b];
  if (pa[1] <= pb[0] || pb[1] <= pa[0]) { /* one field lies below the other throughout */
    efield f = pa[1] <= pb[0] ? fa : fb;
    for (int64_t i = 0; i < q->cur.len; i++) *u += tet_integral((const etet *)q->cur.data + i, f);
    return 0;
  }
  return integrate_min(q->a, &q->cur, fa, fb, &q->tmp, u);
}

/* Pairs in N's frame, where N's tets, face planes and fields are stored;
 * the integrals do not depend on the frame. */
static ce_errno energy_tet_tet(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, equery *q) {
  ce_buf pairs;
  ce_buf_init(&pairs, sizeof(ce_pair));
  ce_errno e = ce_bvh_collide(&m->bvh, &n->bvh, X_MN, 0, q->a, &pairs);
  if (e != CE_OK) return e;
  const ce_tetmesh *TM = &m->tet, *TN = &n->tet;
  const ce_pose X_NM = ce_pose_inverse(X_MN);
  int32_t placed = -1;
  ce_vec3 xa[4] = {{0, 0, 0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 0}};
  double pla[4][4] = {{0}}; /* a's face planes in N's frame, one row (n, d) per face */
  efield fa = {ce_v3(0, 0, 0), 0};
  for (int64_t k = 0; k < pairs.len; k++) {
    const ce_pair *p = (const ce_pair *)pairs.data + k;
    if (p->a != placed) { /* a leaf pair lists one tet of M against several of N */
      placed = p->a;
      for (int i = 0; i < 4; i++) xa[i] = ce_pose_apply(&X_NM, TM->v[TM->tet[p->a][i]]);
      /* M's field in N's frame: p(y) = gM . (R_MN y + p_MN) + cM */
      fa.g = ce_pose_rotate(&X_NM, TM->grad[p->a]);
      fa.c = TM->offset[p->a] + ce_dot(TM->grad[p->a], X_MN->p);
      const double(*fm)[4] = TM->fplane[p->a];
      for (int f = 0; f < 4; f++) {
        ce_vec3 nn = ce_pose_rotate(&X_NM, ce_v3(fm[0][f], fm[1][f], fm[2][f]));
        pla[f][0] = nn.x;
        pla[f][1] = nn.y;
        pla[f][2] = nn.z;
        pla[f][3] = fm[3][f] + ce_dot(nn, X_NM.p);
      }
    }
    double u = 0;
    if (tet_pair(q, xa, (const double(*)[4])pla, fa, TM->prange[p->a], TN, p->b, &u)) return CE_ENOMEM;
    if (u != 0) eq_add(q, p->a, u);
  }
  return CE_OK;
}

/* ---- tet – half space ------------------------------------------------------ */

static ce_errno energy_tet_halfspace(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, equery *q) {
  ce_vec3 nz = ce_v3(X_MN->R.m[0][2], X_MN->R.m[1][2], X_MN->R.m[2][2]);
  double d = ce_dot(nz, X_MN->p);
  ce_buf tets;
  ce_buf_init(&tets, sizeof(int32_t));
  ce_errno e = ce_bvh_collide_plane(&m->bvh, nz, d, 0, q->a, &tets);
  if (e != CE_OK) return e;
  efield fn = {ce_v3(0, 0, 0), INFINITY};
  if (n->compliance == CE_COMPLIANT) { /* p_N = kN (d - nz . x) */
    double kN = n->modulus / n->slab_thickness;
    fn.g = ce_scale(nz, -kN);
    fn.c = kN * d;
  }
  const ce_tetmesh *T = &m->tet;
  for (int64_t k = 0; k < tets.len; k++) {
    int32_t t = ((const int32_t *)tets.data)[k];
    ce_vec3 x[4];
    tet_vertices(T, t, x);
    if (set_tet(q, x) || clip_list(q->a, &q->cur, &q->tmp, nz, d)) return CE_ENOMEM;
    if (q->cur.len == 0) continue;
    double u = 0;
    if (integrate_min(q->a, &q->cur, tet_field(T, t), fn, &q->tmp, &u)) return CE_ENOMEM;
    eq_add(q, t, u);
  }
  return CE_OK;
}

/* ---- compliant half space – rigid mesh ------------------------------------ */

/* Flux of F = (0, 0, -k z^2 / 2) through triangle x (M's frame, oriented by
 * its winding) clipped to z <= 0: over each fan triangle, the integral of
 * z^2 times the signed area projected on the xy plane, exact for the
 * quadratic (A/6)(z0^2 + z1^2 + z2^2 + z0 z1 + z1 z2 + z2 z0). */
static double halfspace_flux(const ce_vec3 x[3], double k) {
  ce_vec3 poly[4];
  int np = 0;
  for (int i = 0; i < 3; i++) {
    int j = (i + 1) % 3;
    double za = x[i].z, zb = x[j].z;
    if (za <= 0) poly[np++] = x[i];
    if ((za < 0 && zb > 0) || (za > 0 && zb < 0)) {
      ce_vec3 c = cut(x[i], za, x[j], zb);
      c.z = 0;
      poly[np++] = c;
    }
  }
  double u = 0;
  for (int i = 1; i + 1 < np; i++) {
    ce_vec3 a = poly[0], b = poly[i], c = poly[i + 1];
    double az = 0.5 * ((b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x));
    double zz = a.z * a.z + b.z * b.z + c.z * c.z + a.z * b.z + b.z * c.z + c.z * a.z;
    u += az * zz / 6.0;
  }
  return -0.5 * k * u;
}

static ce_errno energy_halfspace_tri(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, equery *q) {
  ce_pose X_NM = ce_pose_inverse(X_MN);
  ce_vec3 nN = ce_v3(X_NM.R.m[0][2], X_NM.R.m[1][2], X_NM.R.m[2][2]);
  double dN = ce_dot(nN, X_NM.p);
  ce_buf tris;
  ce_buf_init(&tris, sizeof(int32_t));
  ce_errno e = ce_bvh_collide_plane(&n->bvh, nN, dN, 0, q->a, &tris);
  if (e != CE_OK) return e;
  const ce_trimesh *S = &n->tri;
  const double k = m->modulus / m->slab_thickness;
  for (int64_t i = 0; i < tris.len; i++) {
    int32_t f = ((const int32_t *)tris.data)[i];
    ce_vec3 x[3];
    for (int j = 0; j < 3; j++) x[j] = ce_pose_apply(X_MN, S->v[S->tri[f][j]]);
    eq_add(q, f, halfspace_flux(x, k));
  }
  return CE_OK;
}

/* ---- tet – convex rigid mesh ---------------------------------------------- */

static int cmp_pair(const void *x, const void *y) {
  const ce_pair *a = x, *b = y;
  if (a->a != b->a) return a->a < b->a ? -1 : 1;
  return a->b < b->b ? -1 : (a->b > b->b);
}

/* A rigid triangle's outward plane in M's frame (n . x <= d inside N). */
typedef struct eplane { ce_vec3 n; double d; } eplane;

static eplane tri_plane(const ce_trimesh *S, const ce_pose *X_MN, int32_t f) {
  eplane p;
  p.n = ce_pose_rotate(X_MN, S->normal[f]);
  p.d = ce_dot(p.n, ce_pose_apply(X_MN, S->v[S->tri[f][0]]));
  return p;
}

/* Whether triangle f (M's frame) meets tet x: the triangle clipped by the
 * tet's face planes keeps at least one point. */
static int tri_meets_tet(const ce_vec3 tri[3], const double fp[4][4]) {
  ce_vec3 a[CE_CLIP_MAXV], b[CE_CLIP_MAXV];
  int na = 3;
  for (int i = 0; i < 3; i++) a[i] = tri[i];
  for (int f = 0; f < 4 && na > 0; f++) {
    ce_vec3 n = ce_v3(fp[0][f], fp[1][f], fp[2][f]);
    int nb = 0;
    for (int i = 0; i < na && nb < CE_CLIP_MAXV - 1; i++) {
      int j = (i + 1) % na;
      double si = ce_dot(n, a[i]) - fp[3][f], sj = ce_dot(n, a[j]) - fp[3][f];
      if (si <= 0) b[nb++] = a[i];
      if ((si < 0 && sj > 0) || (si > 0 && sj < 0)) b[nb++] = cut(a[i], si, a[j], sj);
    }
    na = nb;
    memcpy(a, b, (size_t)nb * sizeof(ce_vec3));
  }
  return na > 0;
}

/* Whether point x (M's frame) lies in the convex closed mesh N. */
static int inside_convex(const ce_trimesh *S, const ce_pose *X_MN, ce_vec3 x) {
  ce_vec3 y = ce_pose_apply_inverse(X_MN, x);
  for (int32_t f = 0; f < S->nf; f++)
    if (ce_dot(S->normal[f], ce_sub(y, S->v[S->tri[f][0]])) > 0) return 0;
  return 1;
}

/* Per tet of M: 0 unknown, 1 met by N's surface, 2 wholly inside N. */
enum { T_UNKNOWN = 0, T_SURFACE = 1, T_INSIDE = 2 };

/* Flood the tets wholly inside N from tet `seed` (already marked inside)
 * across faces to tets not met by N's surface. */
static ce_errno flood_inside(const ce_tetmesh *T, int32_t seed, unsigned char *mark, ce_buf *stack, equery *q) {
  stack->len = 0;
  int32_t *s = ce_buf_push(q->a, stack);
  if (!s) return CE_ENOMEM;
  *s = seed;
  while (stack->len > 0) {
    int32_t t = ((int32_t *)stack->data)[--stack->len];
    ce_vec3 x[4];
    tet_vertices(T, t, x);
    if (set_tet(q, x)) return CE_ENOMEM;
    eq_add(q, t, tet_integral((const etet *)q->cur.data, tet_field(T, t)));
    for (int k = 0; k < 4; k++) {
      int32_t u = T->adj[t][k];
      if (u < 0 || mark[u] != T_UNKNOWN) continue;
      mark[u] = T_INSIDE;
      if (!(s = ce_buf_push(q->a, stack))) return CE_ENOMEM;
      *s = u;
    }
  }
  return CE_OK;
}

/* One tet met by N's surface: clipped by the planes of its candidate
 * triangles cand[0..nc), then integrated; its neighbours not met by the
 * surface are classified by their shared face's centroid and flooded. */
static ce_errno surface_tet(const ce_tetmesh *T, int32_t t, const eplane *pl, int nc, unsigned char *mark,
                            ce_buf *stack, equery *q) {
  ce_vec3 x[4];
  tet_vertices(T, t, x);
  if (set_tet(q, x)) return CE_ENOMEM;
  for (int i = 0; i < nc && q->cur.len > 0; i++)
    if (clip_list(q->a, &q->cur, &q->tmp, pl[i].n, pl[i].d)) return CE_ENOMEM;
  double u = 0;
  efield rigid = {ce_v3(0, 0, 0), INFINITY};
  if (integrate_min(q->a, &q->cur, tet_field(T, t), rigid, &q->tmp, &u)) return CE_ENOMEM;
  eq_add(q, t, u);
  for (int k = 0; k < 4; k++) {
    int32_t nb = T->adj[t][k];
    if (nb < 0 || mark[nb] != T_UNKNOWN) continue;
    ce_vec3 c = ce_scale(ce_add(ce_add(x[(k + 1) % 4], x[(k + 2) % 4]), x[(k + 3) % 4]), 1.0 / 3.0);
    int in = 1;
    for (int i = 0; i < nc && in; i++) in = ce_dot(pl[i].n, c) - pl[i].d <= 0;
    if (!in) continue;
    mark[nb] = T_INSIDE;
    ce_errno e = flood_inside(T, nb, mark, stack, q);
    if (e != CE_OK) return e;
  }
  return CE_OK;
}

static ce_errno energy_tet_convex(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, equery *q) {
  const ce_tetmesh *T = &m->tet;
  const ce_trimesh *S = &n->tri;
  ce_buf pairs, stack, planes;
  ce_buf_init(&pairs, sizeof(ce_pair));
  ce_buf_init(&stack, sizeof(int32_t));
  ce_buf_init(&planes, sizeof(eplane));
  ce_errno e = ce_bvh_collide(&m->bvh, &n->bvh, X_MN, 0, q->a, &pairs);
  if (e != CE_OK) return e;
  unsigned char *mark = ce_arena_calloc(q->a, (size_t)T->nt, 1);
  if (!mark) return CE_ENOMEM;
  ce_pair *P = pairs.data;
  if (pairs.len > 1) qsort(P, (size_t)pairs.len, sizeof *P, cmp_pair);
  /* pass 1: the tets N's surface meets */
  for (int64_t i = 0, j; i < pairs.len; i = j) {
    int32_t t = P[i].a;
    for (j = i; j < pairs.len && P[j].a == t; j++) {}
    ce_vec3 x[4];
    tet_vertices(T, t, x);
    int met = 0;
    for (int64_t k = i; k < j && !met; k++) {
      ce_vec3 tri[3];
      for (int r = 0; r < 3; r++) tri[r] = ce_pose_apply(X_MN, S->v[S->tri[P[k].b][r]]);
      met = tri_meets_tet(tri, T->fplane[t]);
    }
    if (met) mark[t] = T_SURFACE;
  }
  /* pass 2: clip them; flood the tets wholly inside from their neighbours */
  for (int64_t i = 0, j; i < pairs.len; i = j) {
    int32_t t = P[i].a;
    for (j = i; j < pairs.len && P[j].a == t; j++) {}
    if (mark[t] != T_SURFACE) continue;
    planes.len = 0;
    if (ce_buf_reserve(q->a, &planes, j - i) != CE_OK) return CE_ENOMEM;
    eplane *pl = planes.data;
    for (int64_t k = i; k < j; k++) pl[k - i] = tri_plane(S, X_MN, P[k].b);
    if ((e = surface_tet(T, t, pl, (int)(j - i), mark, &stack, q)) != CE_OK) return e;
  }
  /* components of M that N's surface does not reach: wholly inside or out */
  unsigned char *reached = ce_arena_calloc(q->a, (size_t)(T->ncomp > 0 ? T->ncomp : 1), 1);
  if (!reached) return CE_ENOMEM;
  for (int32_t t = 0; t < T->nt; t++)
    if (mark[t] != T_UNKNOWN) reached[T->ncomp > 1 ? T->comp[t] : 0] = 1;
  for (int32_t c = 0; c < T->ncomp; c++) {
    int32_t t0 = T->ncomp == 1 ? 0 : T->comp_first[c];
    if (reached[c]) continue;
    ce_vec3 x[4];
    tet_vertices(T, t0, x);
    ce_vec3 cen = ce_scale(ce_add(ce_add(x[0], x[1]), ce_add(x[2], x[3])), 0.25);
    if (!inside_convex(S, X_MN, cen)) continue;
    mark[t0] = T_INSIDE;
    if ((e = flood_inside(T, t0, mark, &stack, q)) != CE_OK) return e;
  }
  return CE_OK;
}

/* ---- tet – closed rigid mesh or terrain: signed prisms --------------------- */

/* The solid of a closed, outward-wound mesh is, up to a set of measure
 * zero, the signed sum of the vertical prisms below its triangles: the
 * upward ray from a point inside crosses the surface leaving the solid once
 * more than entering it, a triangle being left through where its normal
 * points up (n_z > 0, sign +1) and entered where it points down (sign -1);
 * triangles seen edge on (n_z = 0) bound no prism. So, in N's frame with
 * up = +z,
 *
 *     integral over M n N of p = sum over triangles t of sign_t times
 *                                integral over M n prism_t of p,
 *
 * each term a tet clipped by four planes (the three vertical planes
 * through t's footprint edges and t's own plane). A terrain's solid under
 * its sampled surface is the union of the prisms below the lattice
 * triangles, all with sign +1. */

/* The vertical plane through footprint edge (a, b) of a triangle (vertex
 * ids ia != ib), facing out of the footprint, whose orientation is sgn
 * (+1 counter-clockwise seen from above). Computed from the edge's lower
 * id, so the two triangles sharing the edge get exactly opposite planes
 * (or the same one, where the surface folds over) and their pieces tile. */
static eplane side_plane(ce_vec3 a, int32_t ia, ce_vec3 b, int32_t ib, double sgn) {
  const ce_vec3 lo = ia < ib ? a : b, hi = ia < ib ? b : a;
  const double ex = hi.x - lo.x, ey = hi.y - lo.y, s = ia < ib ? sgn : -sgn;
  eplane p;
  p.n = ce_v3(s * ey, -s * ex, 0);
  p.d = s * (ey * lo.x - ex * lo.y);
  return p;
}

/* Adds sign_t times the integral of f over tet x (N's frame) cut by the
 * prism below triangle p (vertex ids id). */
static int prism_tet(equery *q, const ce_vec3 x[4], efield f, const ce_vec3 p[3], const int32_t id[3], double *u) {
  const double area2 = (p[1].x - p[0].x) * (p[2].y - p[0].y) - (p[1].y - p[0].y) * (p[2].x - p[0].x);
  if (area2 == 0) return 0;
  const double sgn = area2 > 0 ? 1 : -1;
  eplane pl[4];
  for (int k = 0; k < 3; k++) pl[k] = side_plane(p[k], id[k], p[(k + 1) % 3], id[(k + 1) % 3], sgn);
  pl[3].n = ce_scale(ce_cross(ce_sub(p[1], p[0]), ce_sub(p[2], p[0])), sgn); /* up: keep below */
  pl[3].d = ce_dot(pl[3].n, p[0]);
  int cutp[4], nc = 0;
  for (int k = 0; k < 4; k++) {
    int nout = 0;
    for (int i = 0; i < 4; i++) nout += ce_dot(pl[k].n, x[i]) - pl[k].d > 0;
    if (nout == 4) return 0;
    if (nout > 0) cutp[nc++] = k;
  }
  if (set_tet(q, x)) return -1;
  for (int k = 0; k < nc && q->cur.len > 0; k++)
    if (clip_list(q->a, &q->cur, &q->tmp, pl[cutp[k]].n, pl[cutp[k]].d)) return -1;
  double v = 0;
  for (int64_t i = 0; i < q->cur.len; i++) v += tet_integral((const etet *)q->cur.data + i, f);
  *u += sgn * v;
  return 0;
}

/* Tet t of M placed in N's frame: its vertices and its field there,
 * p(y) = gM . (R_MN y + p_MN) + cM. */
static void place_tet(const ce_tetmesh *T, int32_t t, const ce_pose *X_MN, const ce_pose *X_NM, ce_vec3 x[4],
                      efield *f) {
  for (int i = 0; i < 4; i++) x[i] = ce_pose_apply(X_NM, T->v[T->tet[t][i]]);
  f->g = ce_pose_rotate(X_NM, T->grad[t]);
  f->c = T->offset[t] + ce_dot(T->grad[t], X_MN->p);
}

/* The axis-aligned box, in the frame X maps to (NULL: the node's own), of
 * a hierarchy node's oriented box. */
static void node_aabb(const ce_bvh_node *nd, const ce_pose *X, ce_vec3 *lo, ce_vec3 *hi) {
  ce_vec3 c = X ? ce_pose_apply(X, nd->center) : nd->center, ext = ce_v3(0, 0, 0);
  const double hh[3] = {nd->half.x, nd->half.y, nd->half.z};
  for (int k = 0; k < 3; k++) {
    ce_vec3 ax = ce_v3(nd->axes.m[0][k], nd->axes.m[1][k], nd->axes.m[2][k]);
    if (X) ax = ce_pose_rotate(X, ax);
    ext = ce_v3(ext.x + hh[k] * fabs(ax.x), ext.y + hh[k] * fabs(ax.y), ext.z + hh[k] * fabs(ax.z));
  }
  *lo = ce_sub(c, ext);
  *hi = ce_add(c, ext);
}

static void points_aabb(const ce_vec3 *x, int n, ce_vec3 *lo, ce_vec3 *hi) {
  *lo = *hi = x[0];
  for (int i = 1; i < n; i++) {
    *lo = ce_v3(fmin(lo->x, x[i].x), fmin(lo->y, x[i].y), fmin(lo->z, x[i].z));
    *hi = ce_v3(fmax(hi->x, x[i].x), fmax(hi->y, x[i].y), fmax(hi->z, x[i].z));
  }
}

/* Whether the prism below box (nlo, nhi) can reach box (mlo, mhi), and the
 * latter meets the box (blo, bhi) of the whole of N. */
static inline int column_meets(ce_vec3 mlo, ce_vec3 mhi, ce_vec3 nlo, ce_vec3 nhi, ce_vec3 blo, ce_vec3 bhi) {
  return mlo.x <= nhi.x && mhi.x >= nlo.x && mlo.y <= nhi.y && mhi.y >= nlo.y && mlo.z <= nhi.z &&
         mlo.x <= bhi.x && mhi.x >= blo.x && mlo.y <= bhi.y && mhi.y >= blo.y && mlo.z <= bhi.z && mhi.z >= blo.z;
}

/* The (tet of M, triangle of N) pairs whose prism can reach the tet, from
 * both hierarchies, N's frame. */
static ce_errno column_pairs(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_NM, ce_arena *a,
                             ce_buf *out) {
  const ce_bvh *BM = &m->bvh, *BN = &n->bvh;
  const ce_tetmesh *T = &m->tet;
  const ce_trimesh *S = &n->tri;
  if (BM->nnodes == 0 || BN->nnodes == 0) return CE_OK;
  ce_vec3 blo, bhi;
  node_aabb(&BN->nodes[0], NULL, &blo, &bhi);
  ce_buf stack;
  ce_buf_init(&stack, sizeof(ce_pair));
  ce_pair *top = ce_buf_push(a, &stack);
  if (!top) return CE_ENOMEM;
  top->a = top->b = 0;
  while (stack.len > 0) {
    const ce_pair nd = ((const ce_pair *)stack.data)[--stack.len];
    const ce_bvh_node *na = &BM->nodes[nd.a], *nb = &BN->nodes[nd.b];
    ce_vec3 alo, ahi, nlo, nhi;
    node_aabb(na, X_NM, &alo, &ahi);
    node_aabb(nb, NULL, &nlo, &nhi);
    if (!column_meets(alo, ahi, nlo, nhi, blo, bhi)) continue;
    if (na->left < 0 && nb->left < 0) {
      for (int32_t i = na->first; i < na->first + na->count; i++) {
        int32_t t = BM->order[i];
        ce_vec3 x[4], tlo, thi;
        for (int k = 0; k < 4; k++) x[k] = ce_pose_apply(X_NM, T->v[T->tet[t][k]]);
        points_aabb(x, 4, &tlo, &thi);
        for (int32_t j = nb->first; j < nb->first + nb->count; j++) {
          int32_t f = BN->order[j];
          ce_vec3 y[3] = {S->v[S->tri[f][0]], S->v[S->tri[f][1]], S->v[S->tri[f][2]]}, flo, fhi;
          points_aabb(y, 3, &flo, &fhi);
          if (!column_meets(tlo, thi, flo, fhi, blo, bhi)) continue;
          ce_pair *p = ce_buf_push(a, out);
          if (!p) return CE_ENOMEM;
          p->a = t;
          p->b = f;
        }
      }
      continue;
    }
    /* split the node with children and the larger box */
    const double va = na->half.x * na->half.y * na->half.z, vb = nb->half.x * nb->half.y * nb->half.z;
    const int split_a = nb->left < 0 || (na->left >= 0 && va >= vb);
    if (ce_buf_reserve(a, &stack, 2) != CE_OK) return CE_ENOMEM;
    ce_pair *s = (ce_pair *)stack.data + stack.len;
    s[0] = split_a ? (ce_pair){na->right, nd.b} : (ce_pair){nd.a, nb->right};
    s[1] = split_a ? (ce_pair){na->left, nd.b} : (ce_pair){nd.a, nb->left};
    stack.len += 2;
  }
  return CE_OK;
}

/* A compliant mesh against a closed rigid mesh, convex or not. */
static ce_errno energy_tet_closed(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, equery *q) {
  const ce_pose X_NM = ce_pose_inverse(X_MN);
  ce_buf pairs;
  ce_buf_init(&pairs, sizeof(ce_pair));
  ce_errno e = column_pairs(m, n, &X_NM, q->a, &pairs);
  if (e != CE_OK) return e;
  ce_pair *P = pairs.data;
  if (pairs.len > 1) qsort(P, (size_t)pairs.len, sizeof *P, cmp_pair);
  const ce_trimesh *S = &n->tri;
  for (int64_t i = 0, j; i < pairs.len; i = j) {
    const int32_t t = P[i].a;
    for (j = i; j < pairs.len && P[j].a == t; j++) {}
    ce_vec3 x[4];
    efield f;
    place_tet(&m->tet, t, X_MN, &X_NM, x, &f);
    double u = 0;
    for (int64_t k = i; k < j; k++) {
      const int32_t *id = S->tri[P[k].b];
      const ce_vec3 p[3] = {S->v[id[0]], S->v[id[1]], S->v[id[2]]};
      if (prism_tet(q, x, f, p, id, &u)) return CE_ENOMEM;
    }
    if (u != 0) eq_add(q, t, u);
  }
  return CE_OK;
}

/* Lattice cells [c0, c1) of sorted samples x[0..n) that meet [lo, hi]; 0
 * when none. */
static int lattice_cells(const double *x, int n, double lo, double hi, int *c0, int *c1) {
  if (hi < x[0] || lo > x[n - 1]) return 0;
  int a = 0, b = n - 1; /* the last sample <= lo (or 0) */
  while (b - a > 1) {
    int mid = (a + b) / 2;
    if (x[mid] <= lo) a = mid;
    else b = mid;
  }
  int c = a, d = n - 1; /* the first sample >= hi (or n - 1) */
  while (d - c > 1) {
    int mid = (c + d) / 2;
    if (x[mid] >= hi) d = mid;
    else c = mid;
  }
  *c0 = a;
  *c1 = d > a ? d : a + 1;
  return *c1 <= n - 1;
}

/* Tet t (N's frame) against the prisms below the lattice triangles under
 * its footprint. */
static int terrain_tet(equery *q, const ce_terrain_lattice *L, const ce_vec3 x[4], efield f, double *u) {
  ce_vec3 lo, hi;
  points_aabb(x, 4, &lo, &hi);
  int i0, i1, j0, j1;
  if (!lattice_cells(L->x, L->nx, lo.x, hi.x, &i0, &i1) || !lattice_cells(L->y, L->ny, lo.y, hi.y, &j0, &j1))
    return 0;
  for (int j = j0; j < j1; j++)
    for (int i = i0; i < i1; i++) {
      const int32_t s00 = j * L->nx + i, s10 = s00 + 1, s01 = s00 + L->nx, s11 = s01 + 1;
      const int32_t tris[2][3] = {{s00, s10, s11}, {s00, s11, s01}};
      for (int w = 0; w < 2; w++) {
        const int32_t *id = tris[w];
        ce_vec3 p[3];
        for (int k = 0; k < 3; k++) p[k] = ce_v3(L->x[id[k] % L->nx], L->y[id[k] / L->nx], L->z[id[k]]);
        if (fmax(p[0].z, fmax(p[1].z, p[2].z)) < lo.z) continue; /* the tet is above it */
        if (prism_tet(q, x, f, p, id, u)) return -1;
      }
    }
  return 0;
}

/* A compliant mesh against a terrain: its part below the sampled surface
 * the contact surface is built from. */
static ce_errno energy_tet_terrain(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, equery *q) {
  ce_terrain_lattice L;
  ce_errno e = ce_terrain_sample(m, n, X_MN, q->a, &L);
  if (e != CE_OK || L.nx < 2 || L.ny < 2) return e;
  const ce_pose X_NM = ce_pose_inverse(X_MN);
  double zmax = -INFINITY;
  for (int64_t i = 0; i < (int64_t)L.nx * L.ny; i++) zmax = fmax(zmax, L.z[i]);
  const ce_bvh *bvh = &m->bvh;
  ce_buf stack;
  ce_buf_init(&stack, sizeof(int32_t));
  int32_t *s = ce_buf_push(q->a, &stack);
  if (!s) return CE_ENOMEM;
  *s = 0;
  while (stack.len > 0) {
    const ce_bvh_node *nd = &bvh->nodes[((int32_t *)stack.data)[--stack.len]];
    ce_vec3 lo, hi;
    node_aabb(nd, &X_NM, &lo, &hi);
    if (lo.z > zmax || hi.x < L.x[0] || lo.x > L.x[L.nx - 1] || hi.y < L.y[0] || lo.y > L.y[L.ny - 1]) continue;
    if (nd->left >= 0) {
      if (ce_buf_reserve(q->a, &stack, 2) != CE_OK) return CE_ENOMEM;
      int32_t *st = (int32_t *)stack.data + stack.len;
      st[0] = nd->right;
      st[1] = nd->left;
      stack.len += 2;
      continue;
    }
    for (int32_t k = nd->first; k < nd->first + nd->count; k++) {
      const int32_t t = bvh->order[k];
      ce_vec3 x[4];
      efield f;
      place_tet(&m->tet, t, X_MN, &X_NM, x, &f);
      double u = 0;
      if (terrain_tet(q, &L, x, f, &u)) return CE_ENOMEM;
      if (u != 0) eq_add(q, t, u);
    }
  }
  return CE_OK;
}

/* ---- patches ---------------------------------------------------------------- */

/* Energy per patch from per-element energies (see the file comment).
 * elem_of_face: each face's element of the integrated body; adj: element
 * neighbours, stride entries per element. */
static ce_errno assign_patches(const equery *q, const ce_surface *s, const int32_t *elem_of_face, int32_t nelem,
                               const int32_t *adj, int stride, ce_arena *a, ce_result *r) {
  int32_t *label = ce_arena_alloc(a, (size_t)nelem * sizeof(int32_t));
  int32_t *queue = ce_arena_alloc(a, (size_t)nelem * sizeof(int32_t));
  if (!label || !queue) return CE_ENOMEM;
  for (int32_t i = 0; i < nelem; i++) label[i] = -1;
  for (int32_t f = 0; f < s->nf; f++) {
    int32_t el = elem_of_face[f];
    if (el >= 0 && el < nelem && label[el] < 0) label[el] = s->patch[f];
  }
  int64_t head = 0, tail = 0;
  for (int32_t i = 0; i < nelem; i++)
    if (label[i] >= 0) queue[tail++] = i;
  while (head < tail) {
    int32_t t = queue[head++];
    for (int k = 0; k < stride; k++) {
      int32_t u = adj[(int64_t)t * stride + k];
      if (u < 0 || label[u] >= 0 || !q->touched[u]) continue;
      label[u] = label[t];
      queue[tail++] = u;
    }
  }
  for (int32_t i = 0; i < nelem; i++)
    if (q->touched[i] && label[i] >= 0 && label[i] < r->npatches) r->patches[label[i]].strain_energy += q->elem_u[i];
  return CE_OK;
}

/* ---- entry ------------------------------------------------------------------ */

ce_errno ce_energy_compute(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN, int m_is_a,
                           int want_patches, ce_arena *arena, ce_result *r) {
  r->strain_energy = 0;
  r->total.strain_energy = 0;
  const int hs_tri = m->is_halfspace; /* compliant half space – rigid mesh */
  const int terrain = n->hf != NULL;
  const int tet_tri = !terrain && !m->is_halfspace && !n->is_halfspace && n->compliance == CE_RIGID;
  if (terrain && m->is_halfspace) {
    r->energy = CE_ENERGY_UNAVAILABLE;
    r->energy_note = "a half space against a terrain has no contact model";
    return CE_OK;
  }
  if ((hs_tri || tet_tri) && !(n->volume > 0)) {
    r->energy = CE_ENERGY_UNAVAILABLE;
    r->energy_note = "the rigid mesh is open (an edge with one triangle), so it bounds no solid to integrate over";
    return CE_OK;
  }
  const int32_t nelem = hs_tri ? n->tri.nf : m->tet.nt;
  const int per_patch = want_patches && r->npatches > 0;
  equery q;
  ce_errno e = eq_init(&q, arena, nelem, per_patch);
  if (e != CE_OK) return e;
  if (hs_tri) e = energy_halfspace_tri(m, n, X_MN, &q);
  else if (n->is_halfspace) e = energy_tet_halfspace(m, n, X_MN, &q);
  else if (terrain) e = energy_tet_terrain(m, n, X_MN, &q);
  else if (tet_tri) e = n->convex ? energy_tet_convex(m, n, X_MN, &q) : energy_tet_closed(m, n, X_MN, &q);
  else e = energy_tet_tet(m, n, X_MN, &q);
  if (e != CE_OK) return e;
  r->energy = CE_ENERGY_EXACT;
  r->strain_energy = q.total;
  r->total.strain_energy = q.total;
  if (!per_patch || !r->surface.patch) return CE_OK;
  /* the integrated body's element of each face, in the (A, B) order */
  const int32_t *ef = hs_tri ? (m_is_a ? r->surface.element_b : r->surface.element_a)
                             : (m_is_a ? r->surface.element_a : r->surface.element_b);
  const int32_t *adj = hs_tri ? &n->tri.adj[0][0] : &m->tet.adj[0][0];
  return assign_patches(&q, &r->surface, ef, nelem, adj, hs_tri ? 3 : 4, arena, r);
}
