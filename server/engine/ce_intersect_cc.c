/* ce_intersect_cc.c — compliant–compliant contact: the equal-pressure
 * surface of two tetrahedral pressure fields (Elandt et al. 2019, Appendix
 * X-B; polygons as in Masterjohn et al. 2022).
 *
 * Inside one tet of M and one tet of N both pressures are linear, so the set
 * where they are equal is a plane:
 *     (gM - gN) . x + (cM - cN) = 0        (everything in M's frame).
 * The contact polygon of the pair is that plane sliced by tet M (a triangle
 * or quadrilateral) and clipped by tet N's four face half-spaces. Its unit
 * normal n = (gM - gN) / |gM - gN| points out of N into M: crossing the plane
 * along +n, M's pressure grows relative to N's, i.e. we move deeper into M.
 *
 * Gradient-direction rule: a pair's polygon is kept only when the normal
 * agrees with both pressure gradients to within 5*pi/8 —
 *     n . gM/|gM| > cos(5 pi/8)   and   -n . gN/|gN| > cos(5 pi/8).
 * Pressure increases into each body, so on a genuine contact surface gM
 * points along +n and gN along -n. Pairs that violate this (typically deep
 * tets whose fields happen to be equal, or skewed tets near the rim) would
 * produce normals pointing the wrong way; they are dropped and counted in
 * faces_dropped. A zero gradient imposes no constraint.
 *
 * Candidates come from the BVHs with pressure-range pruning; per pair the
 * kernel does the cheap rejections first (pressure ranges, the plane missing
 * tet M) before touching N's vertices, and uses only fixed-size stack arrays. */
#include <math.h>
#include <string.h>

#include "ce_internal.h"

#define CC_MAXV 16

/* Slices of a tet by a plane, indexed by the mask of vertices with f > 0:
 * the crossed edges in cyclic order (orientation is fixed afterwards). */
static const int8_t slice_n[16] = {0, 3, 3, 4, 3, 4, 4, 3, 3, 4, 4, 3, 4, 3, 3, 0};
static const int8_t slice_e[16][4][2] = {
    {{0, 0}, {0, 0}, {0, 0}, {0, 0}},
    {{0, 1}, {0, 2}, {0, 3}, {0, 0}},
    {{1, 0}, {1, 2}, {1, 3}, {0, 0}},
    {{0, 2}, {0, 3}, {1, 3}, {1, 2}},
    {{2, 0}, {2, 1}, {2, 3}, {0, 0}},
    {{0, 1}, {0, 3}, {2, 3}, {2, 1}},
    {{1, 0}, {1, 3}, {2, 3}, {2, 0}},
    {{3, 0}, {3, 1}, {3, 2}, {0, 0}},
    {{3, 0}, {3, 1}, {3, 2}, {0, 0}},
    {{0, 1}, {0, 2}, {3, 2}, {3, 1}},
    {{1, 0}, {1, 2}, {3, 2}, {3, 0}},
    {{2, 0}, {2, 1}, {2, 3}, {0, 0}},
    {{2, 0}, {2, 1}, {3, 1}, {3, 0}},
    {{1, 0}, {1, 2}, {1, 3}, {0, 0}},
    {{0, 1}, {0, 2}, {0, 3}, {0, 0}},
    {{0, 0}, {0, 0}, {0, 0}, {0, 0}},
};

/* Clip poly (n vertices) by the half-space s(x) = nk . (x - o) <= 0, into out.
 * Returns the new count (0 when nothing remains). */
static inline int clip_half(const ce_vec3 *poly, int n, ce_vec3 nk, ce_vec3 o, ce_vec3 *out) {
  double s[CC_MAXV];
  int nout = 0;
  for (int i = 0; i < n; i++) {
    s[i] = ce_dot(nk, ce_sub(poly[i], o));
    nout += s[i] > 0;
  }
  if (nout == 0) {
    memcpy(out, poly, (size_t)n * sizeof *poly);
    return n;
  }
  if (nout == n) return 0;
  int m = 0;
  for (int i = 0; i < n; i++) {
    int j = i + 1 == n ? 0 : i + 1;
    int in_i = s[i] <= 0, in_j = s[j] <= 0;
    if (in_i) out[m++] = poly[i];
    if (in_i != in_j) {
      double t = s[i] / (s[i] - s[j]);
      out[m++] = ce_axpy(poly[i], t, ce_sub(poly[j], poly[i]));
    }
  }
  return m;
}

/* The polygon of one tet pair, in M's frame. xm: tet M's vertices; yn: tet
 * N's vertices placed in M's frame (positively oriented); g, c0: the plane
 * g.x + c0 = 0 with g = gM - gN. Returns the vertex count (>= 3) written to
 * out, ordered counter-clockwise about g, or 0. tol: length below which two
 * vertices are merged; fills *area. */
static int pair_polygon(const ce_vec3 xm[4], const ce_vec3 yn[4], ce_vec3 g, double c0, double tol,
                        ce_vec3 *out, double *area) {
  double f[4];
  int mask = 0;
  for (int k = 0; k < 4; k++) {
    f[k] = ce_dot(g, xm[k]) + c0;
    mask |= (f[k] > 0) << k;
  }
  int n = slice_n[mask];
  if (n == 0) return 0;
  ce_vec3 A[CC_MAXV], B[CC_MAXV];
  for (int i = 0; i < n; i++) {
    int a = slice_e[mask][i][0], b = slice_e[mask][i][1];
    double t = f[a] / (f[a] - f[b]);
    A[i] = ce_axpy(xm[a], t, ce_sub(xm[b], xm[a]));
  }
  /* Orient counter-clockwise about g. */
  ce_vec3 av = n == 3 ? ce_cross(ce_sub(A[1], A[0]), ce_sub(A[2], A[0]))
                      : ce_cross(ce_sub(A[2], A[0]), ce_sub(A[3], A[1]));
  if (ce_dot(av, g) < 0) {
    ce_vec3 t = A[0];
    A[0] = A[n - 1];
    A[n - 1] = t;
    if (n == 4) {
      t = A[1];
      A[1] = A[2];
      A[2] = t;
    }
  }
  /* Clip by N's faces: face opposite vertex k, outward normal. */
  ce_vec3 e1 = ce_sub(yn[1], yn[0]), e2 = ce_sub(yn[2], yn[0]), e3 = ce_sub(yn[3], yn[0]);
  ce_vec3 nf[4] = {ce_cross(ce_sub(yn[2], yn[1]), ce_sub(yn[3], yn[1])), ce_cross(e3, e2),
                   ce_cross(e1, e3), ce_cross(e2, e1)};
  ce_vec3 *cur = A, *nxt = B;
  for (int k = 0; k < 4 && n > 0; k++) {
    n = clip_half(cur, n, nf[k], k == 0 ? yn[1] : yn[0], nxt);
    ce_vec3 *t = cur;
    cur = nxt;
    nxt = t;
  }
  if (n < 3) return 0;
  /* Remove near-duplicate consecutive vertices. */
  double tol2 = tol * tol;
  int m = 0;
  for (int i = 0; i < n; i++) {
    if (m > 0 && ce_norm2(ce_sub(cur[i], out[m - 1])) <= tol2) continue;
    out[m++] = cur[i];
  }
  while (m > 1 && ce_norm2(ce_sub(out[m - 1], out[0])) <= tol2) m--;
  if (m < 3) return 0;
  ce_vec3 s = ce_v3(0, 0, 0);
  for (int i = 1; i + 1 < m; i++) s = ce_add(s, ce_cross(ce_sub(out[i], out[0]), ce_sub(out[i + 1], out[0])));
  double gn = ce_norm(g);
  *area = 0.5 * ce_dot(s, g) / gn;
  if (!(*area > tol2)) return 0;
  return m;
}

ce_errno ce_intersect_tet_tet(const ce_geometry *m, const ce_geometry *n, const ce_pose *X_MN,
                              ce_builder *b, ce_counters *c) {
  ce_buf cand;
  ce_buf_init(&cand, sizeof(ce_pair));
  ce_errno e = ce_bvh_collide(&m->bvh, &n->bvh, X_MN, 1, b->arena, &cand);
  if (e != CE_OK) return e;
  c->candidate_pairs += cand.len;
  const ce_tetmesh *TM = &m->tet, *TN = &n->tet;
  const ce_mat3 *R = &X_MN->R;
  const ce_vec3 t = X_MN->p;
  double scale = m->scale > 0 ? m->scale : 1.0;
  const double tol = 1e-11 * scale;
  const ce_pair *pairs = cand.data;
  for (int64_t q = 0; q < cand.len; q++) {
    int32_t i = pairs[q].a, j = pairs[q].b;
    if (TM->prange[i][1] < TN->prange[j][0] || TN->prange[j][1] < TM->prange[i][0]) continue;
    const int32_t *tm = TM->tet[i];
    ce_vec3 xm[4] = {TM->v[tm[0]], TM->v[tm[1]], TM->v[tm[2]], TM->v[tm[3]]};
    ce_vec3 gM = TM->grad[i];
    ce_vec3 gN = ce_mat3_mul_vec(R, TN->grad[j]);
    double cM = TM->offset[i], cN = TN->offset[j] - ce_dot(gN, t);
    ce_vec3 g = ce_sub(gM, gN);
    double c0 = cM - cN;
    /* Cheap rejection: the plane misses tet M. */
    double f0 = ce_dot(g, xm[0]) + c0, f1 = ce_dot(g, xm[1]) + c0, f2 = ce_dot(g, xm[2]) + c0,
           f3 = ce_dot(g, xm[3]) + c0;
    if ((f0 > 0 && f1 > 0 && f2 > 0 && f3 > 0) || (f0 <= 0 && f1 <= 0 && f2 <= 0 && f3 <= 0)) continue;
    double gg = ce_norm2(g);
    if (!(gg > 1e-24 * (ce_norm2(gM) + ce_norm2(gN)))) continue; /* parallel equal fields */
    const int32_t *tn = TN->tet[j];
    ce_vec3 yn[4];
    for (int k = 0; k < 4; k++) yn[k] = ce_add(ce_mat3_mul_vec(R, TN->v[tn[k]]), t);
    ce_vec3 poly[CC_MAXV];
    double area;
    int nv = pair_polygon(xm, yn, g, c0, tol, poly, &area);
    if (nv == 0) continue;
    ce_vec3 nrm = ce_scale(g, 1.0 / sqrt(gg));
    double lm = ce_norm(gM), ln = ce_norm(gN);
    int ok_m = lm == 0 || ce_dot(nrm, gM) > CE_GRADIENT_COS_LIMIT * lm;
    int ok_n = ln == 0 || -ce_dot(nrm, gN) > CE_GRADIENT_COS_LIMIT * ln;
    if (!ok_m || !ok_n) {
      c->faces_dropped++;
      continue;
    }
    double p[CC_MAXV];
    for (int k = 0; k < nv; k++) p[k] = ce_dot(gM, poly[k]) + cM;
    if ((e = ce_builder_add_polygon(b, poly, p, nv, nrm, gM, gN, i, j)) != CE_OK) return e;
    c->polygons++;
  }
  return CE_OK;
}
