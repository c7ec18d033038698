/* ce_reduce.c — a few point contacts per patch whose forces and moments
 * add up exactly to the patch's, for solvers that take point constraints.
 *
 * The patch's net wrench (for a surface of one patch, the pair's wrench
 * about the surface centroid, shifted). Face f carries the force F_f = fn_f n_f + ft_f
 * on A (fn_f the integral of the normal traction, ft_f of the friction
 * traction; ce_wrench.c) and the moment about the patch's centre of
 * pressure x* (ce_patch.c, Xie & Chakraborty)
 *   M_f = (fn_x_f - fn_f x*) x n_f + tt_f + (C - x*) x ft_f
 * (fn_x_f = integral of tn x, tt_f the friction moment about the surface
 * centroid C). The patch's net force and moment about x* are their sums;
 * summed over the patches they are the pair's wrench.
 *
 * The points (at most K). Point 0 is x*: the point about which the normal
 * tractions of a flat patch have no moment, so that K = 1 is the
 * equivalent contact point. Points 1 .. K-1 are the centroids of the faces
 * where the patch reaches furthest (its support) in K - 1 tangent
 * directions at equal angles (2 directions: 0 and 90 degrees, so that the
 * three points are not collinear), measured from t1, the major axis of the
 * faces' area distribution in the plane normal to the net normal force N
 * (the sign of t1 set by the distribution's third moment: the frame turns
 * with the bodies). A face chosen twice, or at x* itself, is one point.
 * Face centroids lie on the surface; x* is a convex combination of surface
 * points with weights tn >= 0, so every point lies in the patch's convex
 * hull (on a curved patch x* lies within the sagitta below the surface).
 *
 * The forces. Every face goes to its nearest point (its cluster); point i
 * gets F_i = sum of its cluster's F_f, so sum F_i is the net force. Their
 * moment about x* misses dM = M - sum (p_i - x*) x F_i (the clusters'
 * forces act spread over their faces, not at the points). The correction
 * d_i of least sum |d_i|^2 / w_i with sum d_i = 0 and sum r_i x d_i = dM,
 * weighted by w_i = the cluster's normal force (plus 1% of the mean: each
 * point's force changes in proportion to itself, so that a light point is
 * not pushed into pulling), follows from the Lagrange conditions:
 * d_i = w_i mu x r_i with r_i = p_i - (sum w_j p_j / sum w_j) (so that
 * sum w_i r_i = 0) and J mu = dM, J = sum w_i (|r_i|^2 I - r_i r_i^T) (the
 * inertia tensor of masses w_i at the points).
 * J is solved through its eigen-decomposition; directions whose eigenvalue
 * is below CE_REDUCE_RANK_TOL of the largest (all three for one point, the
 * line's direction for collinear points) cannot be reached by point forces:
 * what of dM lies there is reported as the couple of the patch's first
 * point, so force and moment match to rounding in every case.
 *
 * Per point: the normal is its cluster's normal-force-weighted mean normal
 * (N when the cluster is empty); the stiffness k = sum g A over the
 * cluster's faces with g = gA gB / (gA + gB) (Masterjohn et al. 2022, Eq.
 * for the per-face spring; ce_face_contact.c excludes the same faces, g <=
 * 0); the separation phi = -P / k with P = sum p(centroid) A, the integral
 * of the (linear) pressure over the cluster, i.e. its elastic normal force
 * (Hunt-Crossley dissipation and the correction are not part of it).
 *
 * What this gives up: on a strongly curved patch a cluster's faces have
 * different normals, and one point force replaces their fan of forces; the
 * correction keeps the wrench exact, but the points' forces then lean away
 * from their normals. When the surface's topology changes (a face appears
 * or vanishes) the net wrench stays continuous but a support point can
 * jump from one face centroid to another (by up to a face's size), and the
 * clusters' forces with it; a rotationally symmetric patch has no major
 * axis, and its frame is then taken from N alone. Every step runs in a
 * fixed order over the patch's faces, so results do not depend on threads. */
#include <math.h>
#include <string.h>

#include "ce_arena.h"
#include "ce_passes.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Eigenvalues of J below this fraction of the largest are taken as zero. */
#define CE_REDUCE_RANK_TOL 1e-10
/* A point's weight in the correction: its cluster's normal force plus this
 * fraction of the mean, so that a point with an empty cluster still takes
 * part. */
#define CE_REDUCE_WEIGHT_FLOOR 1e-2

/* A unit vector normal to unit n (Frisvad's branch on the sign of n.z is
 * avoided: the largest-component rule keeps it continuous away from ties). */
static ce_vec3 any_perp(ce_vec3 n) {
  ce_vec3 a = fabs(n.x) <= fabs(n.y) && fabs(n.x) <= fabs(n.z) ? ce_v3(1, 0, 0)
              : fabs(n.y) <= fabs(n.z)                         ? ce_v3(0, 1, 0)
                                                               : ce_v3(0, 0, 1);
  return ce_normalize(ce_cross(n, a));
}

/* Symmetric 3x3 eigen-decomposition by cyclic Jacobi rotations: J = V diag(w) V^T,
 * eigenvector k in column k of V. */
static void sym_eig3(double A[3][3], double w[3], double V[3][3]) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) V[i][j] = i == j;
  for (int sweep = 0; sweep < 32; sweep++) {
    double off = fabs(A[0][1]) + fabs(A[0][2]) + fabs(A[1][2]);
    double scale = fabs(A[0][0]) + fabs(A[1][1]) + fabs(A[2][2]);
    if (!(off > 1e-300) || off <= 1e-18 * scale) break;
    for (int p = 0; p < 2; p++)
      for (int q = p + 1; q < 3; q++) {
        if (A[p][q] == 0) continue;
        double th = (A[q][q] - A[p][p]) / (2 * A[p][q]);
        double t = (th >= 0 ? 1.0 : -1.0) / (fabs(th) + sqrt(th * th + 1));
        double c = 1 / sqrt(t * t + 1), s = t * c;
        for (int k = 0; k < 3; k++) { /* A <- A G (columns p, q) */
          double akp = A[k][p], akq = A[k][q];
          A[k][p] = c * akp - s * akq;
          A[k][q] = s * akp + c * akq;
        }
        for (int k = 0; k < 3; k++) { /* A <- G^T A (rows p, q) */
          double apk = A[p][k], aqk = A[q][k];
          A[p][k] = c * apk - s * aqk;
          A[q][k] = s * apk + c * aqk;
        }
        for (int k = 0; k < 3; k++) {
          double vkp = V[k][p], vkq = V[k][q];
          V[k][p] = c * vkp - s * vkq;
          V[k][q] = s * vkp + c * vkq;
        }
      }
  }
  for (int i = 0; i < 3; i++) w[i] = A[i][i];
}

/* One cluster's sums. */
typedef struct rcluster {
  ce_vec3 pos, force, nsum;
  double fn, k, elastic; /* fn: the sum of the faces' normal force */
} rcluster;

/* Per patch: its faces (indices in face order; NULL: all faces, the only
 * patch), centre of pressure x*, normal N, the basis (u, v) of the plane
 * normal to N, and the sums of the first pass: net force F and moment M
 * about x*, the faces' area moments about x* in (u, v) (second: cxx, cxy,
 * cyy; third: m30 = sum A x^3, m21 = sum A x^2 y, ...). */
typedef struct rpatch {
  const int32_t *faces;
  int32_t nf;
  ce_vec3 xs, N, u, v, F, M;
  double area, cxx, cxy, cyy, m30, m21, m12, m03;
} rpatch;

static inline int32_t pface(const rpatch *P, int32_t i) { return P->faces ? P->faces[i] : i; }

/* The wrench pass's per-face sums; fr's arrays may be NULL (no friction). */
typedef struct rfaces {
  const ce_face_forces *ff;
  const ce_face_friction *fr;
} rfaces;

static inline ce_vec3 face_force(const rfaces *q, const ce_surface *s, int32_t f) {
  ce_vec3 F = ce_scale(s->normal[f], q->ff->fn[f]);
  return q->fr->ft ? ce_add(F, q->fr->ft[f]) : F;
}

/* Face f's moment about xs: (fn_x - fn xs) x n + tt + (C - xs) x ft. */
static inline ce_vec3 face_moment(const rfaces *q, const ce_surface *s, int32_t f, ce_vec3 xs, ce_vec3 C) {
  ce_vec3 M = ce_cross(ce_axpy(q->ff->fn_x[f], -q->ff->fn[f], xs), s->normal[f]);
  if (q->fr->ft) M = ce_add(M, ce_add(q->fr->tt[f], ce_cross(ce_sub(C, xs), q->fr->ft[f])));
  return M;
}

/* The per-face spring stiffness g A (Masterjohn et al. 2022; 0 where a
 * compliant side's gradient does not increase into it, as in
 * ce_face_contact.c). */
static inline double face_stiffness(const ce_surface *s, int32_t f) {
  ce_vec3 n = s->normal[f];
  double gA = s->grad_a ? ce_dot(s->grad_a[f], n) : INFINITY;
  double gB = s->grad_b ? -ce_dot(s->grad_b[f], n) : INFINITY;
  if (!(gA > 0) || !(gB > 0) || (isinf(gA) && isinf(gB))) return 0;
  double g = isinf(gA) ? gB : isinf(gB) ? gA : gA * gB / (gA + gB);
  return s->area[f] > 0 ? g * s->area[f] : 0;
}

/* Two doubles at once (GCC/Clang vector extension: SSE2 on x86-64, NEON
 * on arm64); lane arithmetic is the scalar IEEE arithmetic. */
typedef double rv2d __attribute__((vector_size(16)));
typedef long long rv2i __attribute__((vector_size(16)));

/* The first pass, over all faces in order: each patch's sums (rpatch), and
 * each face centroid's coordinates (x, y) in its patch's (u, v) plane
 * about x* into xy[2 f], xy[2 f + 1]. The moments are summed over runs of
 * consecutive faces of one patch in locals (a surface of one patch is one
 * run), then added to the patch: the area and sum A x y, A x^2 and A y^2,
 * A x^3 and A x^2 y, A y^2 x and A y^3 in lane pairs (the scalar
 * products and sums, two at once). With several patches each patch's
 * force and moment are summed here too (one patch has the pair's). */
static void patch_sums(const ce_surface *s, const rfaces *ff, ce_vec3 C, rpatch *P, double *xy, int several) {
  const rv2d zero = {0, 0};
  rv2d m02 = zero, m13 = zero, m45 = zero, m67 = zero;
  int32_t cur = s->nf > 0 ? s->patch[0] : 0;
  rv2d UX = {P[cur].u.x, P[cur].v.x}, UY = {P[cur].u.y, P[cur].v.y}, UZ = {P[cur].u.z, P[cur].v.z};
  ce_vec3 xs = P[cur].xs; /* in locals: the stores to xy may alias P */
  for (int32_t f = 0; f < s->nf; f++) {
    if (several && s->patch[f] != cur) {
      rpatch *o = &P[cur];
      o->area += m02[0], o->cxx += m13[0], o->cxy += m02[1], o->cyy += m13[1];
      o->m30 += m45[0], o->m21 += m45[1], o->m12 += m67[0], o->m03 += m67[1];
      m02 = m13 = m45 = m67 = zero;
      cur = s->patch[f];
      UX = (rv2d){P[cur].u.x, P[cur].v.x}, UY = (rv2d){P[cur].u.y, P[cur].v.y};
      UZ = (rv2d){P[cur].u.z, P[cur].v.z};
      xs = P[cur].xs;
    }
    rpatch *p = &P[cur];
    if (several) {
      p->F = ce_add(p->F, face_force(ff, s, f));
      p->M = ce_add(p->M, face_moment(ff, s, f, p->xs, C));
    }
    const ce_vec3 r = ce_sub(s->centroid[f], xs);
    const double A = s->area[f];
    const rv2d XY = (rv2d){r.x, r.x} * UX + (rv2d){r.y, r.y} * UY + (rv2d){r.z, r.z} * UZ; /* (r.u, r.v) */
    memcpy(&xy[2 * f], &XY, sizeof XY);
    const rv2d AXY = (rv2d){A, A} * XY, SQ = AXY * XY; /* (A x, A y), (A x x, A y y) */
    m02 += (rv2d){A, AXY[0] * XY[1]};
    m13 += SQ;
    m45 += (rv2d){SQ[0], SQ[0]} * XY;
    m67 += (rv2d){SQ[1], SQ[1]} * XY;
  }
  if (s->nf > 0) {
    rpatch *o = &P[cur];
    o->area += m02[0], o->cxx += m13[0], o->cxy += m02[1], o->cyy += m13[1];
    o->m30 += m45[0], o->m21 += m45[1], o->m12 += m67[0], o->m03 += m67[1];
  }
}

/* The tangent frame of a patch as the direction (c, sn) of t1 in (u, v)
 * (t1 = c u + sn v, t2 = N x t1 = c v - sn u): the major axis of its
 * faces' area distribution about x* in the plane normal to N, pointing to
 * the side where the distribution is skewed. Where the principal second
 * moments agree to rounding t1 = u; where the skew is below CE_REDUCE_SKEW
 * the axis keeps the sign atan2 gives it rather than flip with rounding.
 * (Taking u wherever the moments agree within 25% was tried: on square
 * patches it left light points pulling at 3% of the patch's force, against
 * 0.02% with the major axis, and points jumped no less on a rolling disc.) */
#define CE_REDUCE_ISOTROPIC 1e-9
#define CE_REDUCE_SKEW 0.1
static void patch_frame(const rpatch *P, double *c, double *sn) {
  const double tr = P->cxx + P->cyy, an = hypot(P->cxx - P->cyy, 2 * P->cxy);
  *c = 1;
  *sn = 0;
  if (!(tr > 0) || !(an > CE_REDUCE_ISOTROPIC * tr)) return;
  double th = 0.5 * atan2(2 * P->cxy, P->cxx - P->cyy), a = cos(th), b = sin(th);
  /* sum A (a x + b y)^3 against (sum A (a x + b y)^2)^(3/2) / sqrt(sum A) */
  double m3 = a * a * a * P->m30 + 3 * a * a * b * P->m21 + 3 * a * b * b * P->m12 + b * b * b * P->m03;
  double m2 = 0.5 * (tr + an);
  if (fabs(m3) * sqrt(P->area) > CE_REDUCE_SKEW * m2 * sqrt(m2) && m3 < 0) a = -a, b = -b;
  *c = a;
  *sn = b;
}

/* The lane-wise larger of h and b, b where they are equal (or h is NaN):
 * h > b ? h : b. */
static inline rv2d lane_max(rv2d h, rv2d b) {
#if defined(__SSE2__)
  return _mm_max_pd(h, b);
#else
  const rv2i gt = h > b;
  return (rv2d)(((rv2i)h & gt) | ((rv2i)b & ~gt));
#endif
}

/* The lane-wise smaller of h and b, b where they are equal (or h is NaN):
 * h < b ? h : b. */
static inline rv2d lane_min(rv2d h, rv2d b) {
#if defined(__SSE2__)
  return _mm_min_pd(h, b);
#else
  const rv2i lt = h < b;
  return (rv2d)(((rv2i)h & lt) | ((rv2i)b & ~lt));
#endif
}

/* The support scan in G pairs of directions (G <= 4, a constant where
 * inlined, so that the pairs' running maxima stay in registers): for
 * direction j the first face (in patch order, which is face order) of the
 * largest du[j] x + dv[j] y, as the scalar scan below finds it, into
 * arg[j] (-1: none). Faces at even and odd places in the patch run as two
 * scans, merged at the end (the larger; the first face on ties), so that
 * consecutive faces do not wait on each other's comparison. */
#define CE_REDUCE_LANE_PAIRS 4
static inline __attribute__((always_inline)) void support_lanes(const rpatch *P, const double *xy, const int G,
                                                                const double *du, const double *dv, int32_t *arg) {
  /* A: the face of the maximum so far, as a double (faces come in
   * increasing order, so a new maximum's face is the larger: A = max(A, f
   * where h > B, else 0)); B = -inf at the end: no face */
  rv2d DU[CE_REDUCE_LANE_PAIRS], DV[CE_REDUCE_LANE_PAIRS], B[2][CE_REDUCE_LANE_PAIRS], A[2][CE_REDUCE_LANE_PAIRS];
  for (int g = 0; g < G; g++) {
    DU[g] = (rv2d){du[2 * g], du[2 * g + 1]};
    DV[g] = (rv2d){dv[2 * g], dv[2 * g + 1]};
    for (int e = 0; e < 2; e++) {
      B[e][g] = (rv2d){-INFINITY, -INFINITY};
      A[e][g] = (rv2d){0, 0};
    }
  }
  int32_t i = 0;
  for (; i + 1 < P->nf; i += 2)
    for (int e = 0; e < 2; e++) {
      const int32_t f = pface(P, i + e);
      const rv2d X = {xy[2 * f], xy[2 * f]}, Y = {xy[2 * f + 1], xy[2 * f + 1]}, F = {f, f};
      for (int g = 0; g < G; g++) {
        const rv2d h = DU[g] * X + DV[g] * Y;
        const rv2i gt = h > B[e][g];
        B[e][g] = lane_max(h, B[e][g]);
        A[e][g] = lane_max((rv2d)((rv2i)F & gt), A[e][g]);
      }
    }
  if (i < P->nf) {
    const int32_t f = pface(P, i);
    const rv2d X = {xy[2 * f], xy[2 * f]}, Y = {xy[2 * f + 1], xy[2 * f + 1]}, F = {f, f};
    for (int g = 0; g < G; g++) {
      const rv2d h = DU[g] * X + DV[g] * Y;
      const rv2i gt = h > B[0][g];
      B[0][g] = lane_max(h, B[0][g]);
      A[0][g] = lane_max((rv2d)((rv2i)F & gt), A[0][g]);
    }
  }
  for (int g = 0; g < G; g++)
    for (int l = 0; l < 2; l++) {
      const double b0 = B[0][g][l], b1 = B[1][g][l];
      const int32_t a0 = b0 > -INFINITY ? (int32_t)A[0][g][l] : -1, a1 = b1 > -INFINITY ? (int32_t)A[1][g][l] : -1;
      arg[2 * g + l] = a1 >= 0 && (b1 > b0 || (b1 == b0 && (a0 < 0 || a1 < a0))) ? a1 : a0;
    }
}

/* For each of the nd directions the first face of the patch where it
 * reaches furthest, into arg. */
static void support(const rpatch *P, const double *xy, int32_t nd, double *du, double *dv, int32_t *arg) {
  if (nd & 1) du[nd] = dv[nd] = 0; /* a pair's unused lane */
  switch ((nd + 1) / 2) {
    case 1: support_lanes(P, xy, 1, du, dv, arg); return;
    case 2: support_lanes(P, xy, 2, du, dv, arg); return;
    case 3: support_lanes(P, xy, 3, du, dv, arg); return;
    case 4: support_lanes(P, xy, 4, du, dv, arg); return;
    default: break;
  }
  double best[CE_REDUCE_MAX_POINTS];
  for (int32_t j = 0; j < nd; j++) {
    best[j] = -INFINITY;
    arg[j] = -1;
  }
  for (int32_t i = 0; i < P->nf; i++) {
    int32_t f = pface(P, i);
    double x = xy[2 * f], y = xy[2 * f + 1];
    for (int32_t j = 0; j < nd; j++) {
      double h = du[j] * x + dv[j] * y;
      int gt = h > best[j];
      best[j] = gt ? h : best[j];
      arg[j] = gt ? f : arg[j];
    }
  }
}

/* cos and sin of the directions' angles a_j (j pi / 2 for nd = 2, j 2 pi /
 * nd otherwise) for nd <= 7 (K <= 8): the doubles cos(a_j) and sin(a_j)
 * give (a_j rounded as below), so that a patch's directions take no calls;
 * more directions call cos and sin. */
#define CE_REDUCE_TABLE_DIRS 7
static const double reduce_dirs[CE_REDUCE_TABLE_DIRS][CE_REDUCE_TABLE_DIRS][2] = {
    /* nd = 1 */ {{1.0, 0.0}},
    /* nd = 2 */ {{1.0, 0.0}, {6.123233995736766e-17, 1.0}},
    /* nd = 3 */ {{1.0, 0.0}, {-0.4999999999999998, 0.8660254037844387}, {-0.5000000000000004, -0.8660254037844384}},
    /* nd = 4 */ {{1.0, 0.0}, {6.123233995736766e-17, 1.0}, {-1.0, 1.2246467991473532e-16}, {-1.8369701987210297e-16, -1.0}},
    /* nd = 5 */ {{1.0, 0.0}, {0.30901699437494745, 0.9510565162951535}, {-0.8090169943749473, 0.5877852522924732}, {-0.8090169943749476, -0.587785252292473}, {0.30901699437494723, -0.9510565162951536}},
    /* nd = 6 */ {{1.0, 0.0}, {0.5000000000000001, 0.8660254037844386}, {-0.4999999999999998, 0.8660254037844387}, {-1.0, 1.2246467991473532e-16}, {-0.5000000000000004, -0.8660254037844384}, {0.49999999999999933, -0.866025403784439}},
    /* nd = 7 */ {{1.0, 0.0}, {0.6234898018587336, 0.7818314824680298}, {-0.22252093395631434, 0.9749279121818236}, {-0.900968867902419, 0.43388373911755823}, {-0.9009688679024191, -0.433883739117558}, {-0.2225209339563146, -0.9749279121818236}, {0.6234898018587334, -0.7818314824680299}},
};

/* The points of a patch (at most K, x* first) into pos, and their (x, y)
 * in (u, v) into pxy; returns their count. One pass over the faces finds
 * the support in every direction: direction j at angle a_j from t1 is
 * cos(a_j) t1 + sin(a_j) t2 = (c cos a_j - sn sin a_j) u + (sn cos a_j +
 * c sin a_j) v. */
static int32_t choose_points(const ce_surface *s, const rpatch *P, int32_t K, const double *xy, ce_vec3 *pos,
                             double *pxy) {
  int32_t m = 0;
  pxy[0] = pxy[1] = 0;
  pos[m++] = P->xs;
  if (K <= 1 || P->nf == 0) return m;
  double c, sn;
  patch_frame(P, &c, &sn);
  const int32_t nd = K - 1;
  double du[CE_REDUCE_MAX_POINTS + 1], dv[CE_REDUCE_MAX_POINTS + 1];
  int32_t arg[CE_REDUCE_MAX_POINTS + 1];
  for (int32_t j = 0; j < nd; j++) {
    double ca, sa;
    if (nd <= CE_REDUCE_TABLE_DIRS) {
      ca = reduce_dirs[nd - 1][j][0];
      sa = reduce_dirs[nd - 1][j][1];
    } else {
      double ang = nd == 2 ? j * (M_PI / 2) : j * (2 * M_PI / nd);
      ca = cos(ang);
      sa = sin(ang);
    }
    du[j] = c * ca - sn * sa;
    dv[j] = sn * ca + c * sa;
  }
  support(P, xy, nd, du, dv, arg);
  for (int32_t j = 0; j < nd; j++) {
    const int32_t f = arg[j];
    if (f < 0) continue;
    const ce_vec3 cf = s->centroid[f];
    int dup = cf.x == P->xs.x && cf.y == P->xs.y && cf.z == P->xs.z;
    for (int32_t q = 0; q < j && !dup; q++) dup = arg[q] == f;
    if (dup) continue;
    pxy[2 * m] = xy[2 * f];
    pxy[2 * m + 1] = xy[2 * f + 1];
    pos[m++] = cf;
  }
  return m;
}

/* The weighted minimum-norm correction (see the top of the file): adds
 * d_i to each cluster's force; returns the part of dM that the points
 * cannot carry. */
static ce_vec3 correct_moments(rcluster *c, int32_t m, ce_vec3 xs, ce_vec3 M) {
  ce_vec3 have = ce_v3(0, 0, 0), mean = ce_v3(0, 0, 0);
  double wt[CE_REDUCE_MAX_POINTS], fsum = 0, wsum = 0;
  for (int32_t i = 0; i < m; i++) {
    have = ce_add(have, ce_cross(ce_sub(c[i].pos, xs), c[i].force));
    fsum += fmax(c[i].fn, 0);
  }
  for (int32_t i = 0; i < m; i++) {
    wt[i] = fsum > 0 ? fmax(c[i].fn, 0) + CE_REDUCE_WEIGHT_FLOOR * fsum / m : 1;
    wsum += wt[i];
    mean = ce_axpy(mean, wt[i], c[i].pos);
  }
  ce_vec3 dM = ce_sub(M, have);
  mean = ce_scale(mean, 1.0 / wsum);
  double J[3][3] = {{0}}, w[3], V[3][3], D2 = 0;
  for (int32_t i = 0; i < m; i++) {
    ce_vec3 r = ce_sub(c[i].pos, mean);
    double rr[3] = {r.x, r.y, r.z}, r2 = ce_norm2(r);
    D2 = fmax(D2, r2);
    for (int a = 0; a < 3; a++)
      for (int b = 0; b < 3; b++) J[a][b] += wt[i] * ((a == b ? r2 : 0) - rr[a] * rr[b]);
  }
  sym_eig3(J, w, V);
  /* the scale of J's eigenvalues: all weight at the furthest point (one
   * point, or coincident ones: none can be trusted) */
  const double scale = m > 1 ? wsum * D2 : 0;
  ce_vec3 mu = ce_v3(0, 0, 0);
  int rank = 0;
  for (int k = 0; k < 3; k++) {
    if (!(scale > 0) || !(w[k] > CE_REDUCE_RANK_TOL * scale)) continue;
    ce_vec3 e = ce_v3(V[0][k], V[1][k], V[2][k]);
    mu = ce_axpy(mu, ce_dot(e, dM) / w[k], e);
    rank++;
  }
  for (int32_t i = 0; i < m; i++)
    c[i].force = ce_add(c[i].force, ce_scale(ce_cross(mu, ce_sub(c[i].pos, mean)), wt[i]));
  if (rank == 3) return ce_v3(0, 0, 0);
  ce_vec3 now = ce_v3(0, 0, 0);
  for (int32_t i = 0; i < m; i++) now = ce_add(now, ce_cross(ce_sub(c[i].pos, xs), c[i].force));
  return ce_sub(M, now);
}

/* The nearest of points 0 .. W - 1 (W = 2, 4 or 8, a constant where
 * inlined) to a face at (x, y): the least h_i = pp_i + px_i x + py_i y
 * (|p_i|^2 - 2 (x, y).p_i), the first such on ties. Lane pairs hold
 * points (2 g, 2 g + 1); pair g + 1 replaces pair g lane by lane only where
 * strictly nearer, halving the pairs until one is left, so that each lane
 * holds the first nearest of its points (the even, the odd) and the lanes'
 * comparisons do not wait on each other. Points past m are padded with pp
 * = +inf (never nearer); point 0 (x*) has pp = px = py = 0. Same choice as
 * the scalar scan in cluster_faces for finite coordinates. */
static inline __attribute__((always_inline)) int32_t nearest_lanes(const rv2d *PP, const rv2d *PX, const rv2d *PY,
                                                                   const int W, double x, double y) {
  const rv2d X = {x, x}, Y = {y, y};
  rv2d H[4];
  rv2i I[4];
  for (int g = 0; g < W / 2; g++) {
    H[g] = PP[g] + PX[g] * X + PY[g] * Y;
    I[g] = (rv2i){2 * g, 2 * g + 1};
  }
  for (int w = W / 2; w > 1; w /= 2)
    for (int g = 0; g < w / 2; g++) {
      const rv2i lt = H[2 * g + 1] < H[2 * g];
      H[g] = lane_min(H[2 * g + 1], H[2 * g]);
      I[g] = I[2 * g] + ((I[2 * g + 1] - I[2 * g]) & lt);
    }
  const double h0 = H[0][0], h1 = H[0][1];
  return (int32_t)(h1 < h0 || (h1 == h0 && I[0][1] < I[0][0]) ? I[0][1] : I[0][0]);
}

/* Face f's sums added to cluster k (without friction the normal sum is
 * the force's, set once at the end). */
static inline __attribute__((always_inline)) void cluster_add(rcluster *k, const ce_surface *s, const rfaces *ff,
                                                               int32_t f, int friction) {
  k->force = ce_add(k->force, face_force(ff, s, f));
  if (friction) k->nsum = ce_axpy(k->nsum, ff->ff->fn[f], s->normal[f]);
  k->fn += ff->ff->fn[f];
  k->k += face_stiffness(s, f);
  k->elastic += s->centroid_pressure[f] * s->area[f];
}

/* The faces of a patch to the nearest of W points (see nearest_lanes). */
static inline __attribute__((always_inline)) void cluster_lanes(const ce_surface *s, const rfaces *ff,
                                                                 const rpatch *P, const double *xy, const double *pp,
                                                                 const double *px, const double *py, const int W,
                                                                 int friction, rcluster *c) {
  rv2d PP[4], PX[4], PY[4];
  for (int g = 0; g < W / 2; g++) {
    PP[g] = (rv2d){pp[2 * g], pp[2 * g + 1]};
    PX[g] = (rv2d){px[2 * g], px[2 * g + 1]};
    PY[g] = (rv2d){py[2 * g], py[2 * g + 1]};
  }
  PP[0][0] = PX[0][0] = PY[0][0] = 0;
  for (int32_t q = 0; q < P->nf; q++) {
    const int32_t f = pface(P, q);
    cluster_add(&c[nearest_lanes(PP, PX, PY, W, xy[2 * f], xy[2 * f + 1])], s, ff, f, friction);
  }
}

/* Each face to the point nearest in the plane normal to N (the least
 * |p_i|^2 - 2 (x, y).p_i; point 0, x*, is the origin: 0, and the first
 * nearest on ties), its sums to the point's cluster in face order.
 * Without friction a face's force is fn n, so the clusters' force sums
 * are also their normal sums (the same products, added in the same
 * order). */
static void cluster_faces(const ce_surface *s, const rfaces *ff, const rpatch *P, const double *xy,
                          const double *pxy, int32_t m, rcluster *c) {
  double px[CE_REDUCE_MAX_POINTS], py[CE_REDUCE_MAX_POINTS], pp[CE_REDUCE_MAX_POINTS];
  for (int32_t i = 0; i < (m > 8 ? m : 8); i++) { /* padded to the lanes' 8 */
    px[i] = i < m ? -2 * pxy[2 * i] : 0;
    py[i] = i < m ? -2 * pxy[2 * i + 1] : 0;
    pp[i] = i < m ? pxy[2 * i] * pxy[2 * i] + pxy[2 * i + 1] * pxy[2 * i + 1] : INFINITY;
  }
  const int fric = ff->fr->ft != NULL;
  if (m <= 8) {
    const int W = m <= 2 ? 2 : m <= 4 ? 4 : 8;
    if (W == 2) fric ? cluster_lanes(s, ff, P, xy, pp, px, py, 2, 1, c) : cluster_lanes(s, ff, P, xy, pp, px, py, 2, 0, c);
    if (W == 4) fric ? cluster_lanes(s, ff, P, xy, pp, px, py, 4, 1, c) : cluster_lanes(s, ff, P, xy, pp, px, py, 4, 0, c);
    if (W == 8) fric ? cluster_lanes(s, ff, P, xy, pp, px, py, 8, 1, c) : cluster_lanes(s, ff, P, xy, pp, px, py, 8, 0, c);
  } else {
    for (int32_t q = 0; q < P->nf; q++) {
      int32_t f = pface(P, q), best = 0;
      const double x = xy[2 * f], y = xy[2 * f + 1];
      double bd = 0;
      for (int32_t i = 1; i < m; i++) {
        double h = pp[i] + px[i] * x + py[i] * y;
        int lt = h < bd;
        bd = lt ? h : bd;
        best = lt ? i : best;
      }
      cluster_add(&c[best], s, ff, f, fric);
    }
  }
  if (!fric)
    for (int32_t i = 0; i < m; i++) c[i].nsum = c[i].force;
}

/* One patch's points into out (room for K); returns their count. */
static int32_t reduce_patch(const ce_surface *s, const rfaces *ff, const rpatch *P, int32_t K, double d,
                            int32_t patch, const double *xy, rcluster *c, ce_reduced_contact *out) {
  ce_vec3 pos[CE_REDUCE_MAX_POINTS];
  double pxy[2 * CE_REDUCE_MAX_POINTS];
  int32_t m = choose_points(s, P, K, xy, pos, pxy);
  for (int32_t i = 0; i < m; i++) {
    memset(&c[i], 0, sizeof c[i]);
    c[i].pos = pos[i];
  }
  cluster_faces(s, ff, P, xy, pxy, m, c);
  ce_vec3 couple = correct_moments(c, m, P->xs, P->M);
  for (int32_t i = 0; i < m; i++) {
    ce_reduced_contact *o = &out[i];
    memset(o, 0, sizeof *o);
    o->patch = patch;
    o->position = c[i].pos;
    o->normal = ce_norm2(c[i].nsum) > 0 ? ce_normalize(c[i].nsum) : P->N;
    o->force = c[i].force;
    o->couple = i == 0 ? couple : ce_v3(0, 0, 0);
    o->stiffness = c[i].k;
    o->dissipation = d;
    o->separation = c[i].k > 0 ? -c[i].elastic / c[i].k : 0;
  }
  return m;
}

/* The faces grouped by patch, in face order (a counting sort); one patch
 * needs none. */
static ce_errno group_faces(const ce_surface *s, rpatch *P, int32_t np, ce_arena *arena) {
  const int32_t nf = s->nf;
  if (np == 1) {
    P[0].faces = NULL;
    P[0].nf = nf;
    return CE_OK;
  }
  int32_t *start = ce_arena_calloc(arena, (size_t)np + 1, sizeof *start);
  int32_t *order = ce_arena_alloc(arena, (size_t)nf * sizeof *order);
  if (!start || !order) return CE_ENOMEM;
  for (int32_t f = 0; f < nf; f++) start[s->patch[f] + 1]++;
  for (int32_t i = 0; i < np; i++) start[i + 1] += start[i];
  for (int32_t f = 0; f < nf; f++) order[start[s->patch[f]]++] = f;
  for (int32_t i = np; i > 0; i--) start[i] = start[i - 1];
  start[0] = 0;
  for (int32_t i = 0; i < np; i++) {
    P[i].faces = order + start[i];
    P[i].nf = start[i + 1] - start[i];
  }
  return CE_OK;
}

ce_errno ce_reduce_compute(const ce_surface *s, const ce_face_forces *fforces, const ce_face_friction *fr, int32_t K,
                           double d, ce_arena *arena, ce_result *r) {
  const ce_face_friction none = {NULL, NULL};
  const rfaces q = {fforces, fr ? fr : &none};
  r->nreduced = 0;
  r->reduced = NULL;
  const int32_t nf = s->nf, np = r->npatches;
  if (nf <= 0 || np <= 0 || K <= 0 || !fforces->fn) return CE_OK;
  if (K > CE_REDUCE_MAX_POINTS) K = CE_REDUCE_MAX_POINTS;
  rpatch *P = ce_arena_calloc(arena, (size_t)np, sizeof *P);
  double *xy = ce_arena_alloc(arena, 2 * (size_t)nf * sizeof *xy);
  r->reduced = ce_arena_alloc(arena, (size_t)np * (size_t)K * sizeof *r->reduced);
  if (!P || !xy || !r->reduced || group_faces(s, P, np, arena) != CE_OK) return CE_ENOMEM;
  for (int32_t i = 0; i < np; i++) {
    rpatch *p = &P[i];
    p->xs = r->patches[i].point;
    ce_vec3 nfv = r->patches[i].normal_force;
    p->N = ce_norm2(nfv) > 0 ? ce_normalize(nfv) : s->normal[pface(p, 0)];
    p->u = any_perp(p->N);
    p->v = ce_cross(p->N, p->u);
  }
  /* one patch: its wrench is the pair's (the wrench pass summed the same
   * face forces and moments about the surface centroid) */
  patch_sums(s, &q, r->centroid, P, xy, np > 1);
  if (np == 1) {
    P[0].F = r->wrench_a_centroid.force;
    P[0].M = ce_sub(r->wrench_a_centroid.torque, ce_cross(ce_sub(P[0].xs, r->centroid), P[0].F));
  }
  rcluster c[CE_REDUCE_MAX_POINTS];
  int32_t n = 0;
  for (int32_t i = 0; i < np; i++) n += reduce_patch(s, &q, &P[i], K, d, i, xy, c, r->reduced + n);
  r->nreduced = n;
  return CE_OK;
}

ce_reduced_contact ce_reduce_point(int32_t patch, ce_vec3 pt, ce_vec3 n, double fn, ce_vec3 ft, double k, double d,
                                   double depth) {
  ce_reduced_contact o;
  memset(&o, 0, sizeof o);
  o.patch = patch;
  o.position = pt;
  o.normal = n;
  o.force = ce_axpy(ft, fn, n);
  o.stiffness = k;
  o.dissipation = d;
  o.separation = -depth;
  return o;
}
