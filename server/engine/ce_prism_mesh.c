/* ce_prism_mesh.c — compliant and rigid meshes of the box and the cylinder
 * (a regular n-gon prism), for ce_primitive_mesh (ce_primitive.c explains
 * their pressure field p = E d / H).
 *
 * Medial-axis meshes: the solid is cut into one convex region per face (the
 * points closer to that face than to any other); in its region the distance
 * to the boundary is the distance to that face, a linear function. Every
 * region is given by its boundary polygons; a polygon shared by two regions
 * is triangulated once (fanned around its centroid when it has more than 3
 * vertices) and both regions use those triangles, so the mesh conforms. Each
 * region is then coned from an interior point (the mean of its polygon
 * triangles' vertices). Vertices are deduplicated by exact position, so
 * polygons that degenerate (a cube's roofs become triangles) lose their
 * repeated corners. The pressure at each vertex is E d(x) / H from its
 * position.
 *
 * All arrays are malloc'd; tets are oriented by the sign of their
 * determinant after construction (ce_prim_orient_tets). */
#include "ce_primitive.h"
#include "ce_limits.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXEL CE_LIMIT_PRIMITIVE_ELEMENTS

/* ---- medial-axis mesh builder ---------------------------------------------- */

typedef double (*field_fn)(const void *ctx, ce_vec3 x);

typedef struct mmb {
  ce_vec3 *v;
  double *p;
  int32_t nv, capv;
  int32_t *hash;
  int32_t hcap; /* power of two, > 2 nv */
  int32_t (*tri)[3];
  int32_t ntri, captri;
  int32_t *poly_off; /* polygon i's triangles: poly_off[i] .. poly_off[i+1] */
  int32_t npoly, cappoly;
  int32_t (*tet)[4];
  int32_t nt, capt;
  field_fn field;
  const void *ctx;
  int oom;
} mmb;

static int grow(void **p, int32_t *cap, int32_t need, size_t elem) {
  if (need <= *cap) return 1;
  int32_t c = *cap ? *cap : 64;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * elem);
  if (!q) return 0;
  *p = q;
  *cap = c;
  return 1;
}

static uint64_t vbits(double d) {
  uint64_t u;
  if (d == 0) d = 0; /* -0 -> +0 */
  memcpy(&u, &d, sizeof u);
  return u;
}

static uint64_t vhash(ce_vec3 x) {
  return ce_mix64(vbits(x.x) ^ ce_mix64(vbits(x.y) ^ ce_mix64(vbits(x.z))));
}

static int mmb_rehash(mmb *b, int32_t cap) {
  int32_t *h = malloc((size_t)cap * sizeof *h);
  if (!h) return 0;
  for (int32_t i = 0; i < cap; ++i) h[i] = -1;
  for (int32_t i = 0; i < b->nv; ++i) {
    uint64_t s = vhash(b->v[i]) & (uint64_t)(cap - 1);
    while (h[s] != -1) s = (s + 1) & (uint64_t)(cap - 1);
    h[s] = i;
  }
  free(b->hash);
  b->hash = h;
  b->hcap = cap;
  return 1;
}

static int32_t mmb_vertex(mmb *b, ce_vec3 x, int boundary) {
  if (b->oom) return 0;
  if (2 * (b->nv + 1) >= b->hcap && !mmb_rehash(b, b->hcap ? 2 * b->hcap : 256)) {
    b->oom = 1;
    return 0;
  }
  uint64_t s = vhash(x) & (uint64_t)(b->hcap - 1);
  while (b->hash[s] != -1) {
    ce_vec3 y = b->v[b->hash[s]];
    if (y.x == x.x && y.y == x.y && y.z == x.z) return b->hash[s];
    s = (s + 1) & (uint64_t)(b->hcap - 1);
  }
  if (b->nv == b->capv) {
    int32_t c = b->capv ? 2 * b->capv : 256;
    ce_vec3 *nv = realloc(b->v, (size_t)c * sizeof *nv);
    if (nv) b->v = nv;
    double *np = nv ? realloc(b->p, (size_t)c * sizeof *np) : NULL;
    if (np) b->p = np;
    if (!nv || !np) { b->oom = 1; return 0; }
    b->capv = c;
  }
  b->v[b->nv] = x;
  b->p[b->nv] = boundary ? 0.0 : b->field(b->ctx, x);
  b->hash[s] = b->nv;
  return b->nv++;
}

static void mmb_tri(mmb *b, int32_t a, int32_t c, int32_t d) {
  if (b->oom) return;
  if (!grow((void **)&b->tri, &b->captri, b->ntri + 1, sizeof *b->tri)) { b->oom = 1; return; }
  b->tri[b->ntri][0] = a;
  b->tri[b->ntri][1] = c;
  b->tri[b->ntri][2] = d;
  ++b->ntri;
}

/* A polygon (vertex ids in cyclic order); returns its id. */
static int32_t mmb_polygon(mmb *b, const int32_t *ids, int k, int boundary) {
  if (b->oom) return 0;
  if (!grow((void **)&b->poly_off, &b->cappoly, b->npoly + 2, sizeof *b->poly_off)) {
    b->oom = 1;
    return 0;
  }
  if (b->npoly == 0) b->poly_off[0] = 0;
  int32_t ubuf[64], *u = k <= 64 ? ubuf : malloc((size_t)k * sizeof *u);
  if (!u) { b->oom = 1; return 0; }
  int nu = 0;
  for (int i = 0; i < k; ++i)
    if (nu == 0 || ids[i] != u[nu - 1]) u[nu++] = ids[i];
  while (nu > 1 && u[nu - 1] == u[0]) --nu;
  if (nu == 3) {
    mmb_tri(b, u[0], u[1], u[2]);
  } else if (nu > 3) {
    /* fan around the area centroid: a strip with many vertices along one
     * long side keeps its fan triangles' heights at half the strip width
     * (the vertex average would sit close to the crowded side) */
    ce_vec3 c = ce_v3(0, 0, 0), ac = ce_v3(0, 0, 0), o = b->v[u[0]];
    double at = 0;
    for (int i = 0; i < nu; ++i) c = ce_add(c, b->v[u[i]]);
    for (int i = 1; i + 1 < nu; ++i) {
      ce_vec3 p1 = b->v[u[i]], p2 = b->v[u[i + 1]];
      double ar = ce_norm(ce_cross(ce_sub(p1, o), ce_sub(p2, o)));
      at += ar;
      ac = ce_axpy(ac, ar / 3.0, ce_add(o, ce_add(p1, p2)));
    }
    c = at > 0 ? ce_scale(ac, 1.0 / at) : ce_scale(c, 1.0 / nu);
    int32_t ci = mmb_vertex(b, c, boundary);
    for (int i = 0; i < nu; ++i) mmb_tri(b, ci, u[i], u[(i + 1) % nu]);
  }
  if (u != ubuf) free(u);
  b->poly_off[b->npoly + 1] = b->ntri;
  return b->npoly++;
}

/* A region bounded by the given polygons: cone them from an interior point. */
static void mmb_region(mmb *b, const int32_t *polys, int k) {
  if (b->oom) return;
  ce_vec3 c = ce_v3(0, 0, 0);
  int64_t cnt = 0;
  for (int i = 0; i < k; ++i)
    for (int32_t t = b->poly_off[polys[i]]; t < b->poly_off[polys[i] + 1]; ++t)
      for (int j = 0; j < 3; ++j) {
        c = ce_add(c, b->v[b->tri[t][j]]);
        ++cnt;
      }
  if (cnt == 0) return;
  int32_t ci = mmb_vertex(b, ce_scale(c, 1.0 / (double)cnt), 0);
  for (int i = 0; i < k; ++i)
    for (int32_t t = b->poly_off[polys[i]]; t < b->poly_off[polys[i] + 1]; ++t) {
      if (b->oom) return;
      if (!grow((void **)&b->tet, &b->capt, b->nt + 1, sizeof *b->tet)) { b->oom = 1; return; }
      int32_t *q = b->tet[b->nt];
      q[0] = b->tri[t][0];
      q[1] = b->tri[t][1];
      q[2] = b->tri[t][2];
      q[3] = ci;
      ++b->nt;
    }
}

static ce_errno mmb_finish(mmb *b, ce_rawmesh *m, const char *name, ce_error *err) {
  free(b->hash);
  free(b->tri);
  free(b->poly_off);
  if (b->oom) {
    free(b->v); free(b->p); free(b->tet);
    return ce_prim_oom(err, name);
  }
  m->v = b->v; m->p = b->p; m->nv = b->nv;
  m->tet = b->tet; m->nt = b->nt;
  ce_prim_orient_tets(m->v, m->tet, m->nt);
  return CE_OK;
}

static void mmb_tet(mmb *b, int32_t a, int32_t c, int32_t d, int32_t e) {
  if (b->oom) return;
  if (!grow((void **)&b->tet, &b->capt, b->nt + 1, sizeof *b->tet)) { b->oom = 1; return; }
  int32_t *q = b->tet[b->nt++];
  q[0] = a; q[1] = c; q[2] = d; q[3] = e;
}

/* Split the prism p[0..2] (bottom) / p[3..5] (top, p[i+3] above p[i]) into
 * 3 tets whose quad faces are cut through their smallest vertex index, so
 * neighbouring prisms agree (Dompierre et al. 1999). */
static void mmb_prism(mmb *b, const int32_t p[6]) {
  int im = 0;
  for (int i = 1; i < 6; ++i)
    if (p[i] < p[im]) im = i;
  int32_t q[6];
  for (int k = 0; k < 3; ++k) {
    int c = (im % 3 + k) % 3;
    q[k] = im >= 3 ? p[c + 3] : p[c];
    q[k + 3] = im >= 3 ? p[c] : p[c + 3];
  }
  int32_t m15 = q[1] < q[5] ? q[1] : q[5], m24 = q[2] < q[4] ? q[2] : q[4];
  if (m15 < m24) {
    mmb_tet(b, q[0], q[1], q[2], q[5]);
    mmb_tet(b, q[0], q[1], q[5], q[4]);
  } else {
    mmb_tet(b, q[0], q[1], q[2], q[4]);
    mmb_tet(b, q[0], q[4], q[2], q[5]);
  }
  mmb_tet(b, q[0], q[4], q[5], q[3]);
}

/* A quadrilateral face (cyclic a b c d) as two triangles split along the
 * diagonal through its smallest vertex index: the face mmb_prism gives a
 * prism's quad, so regions that share it conform. Returns the polygon. */
static int32_t mmb_quad(mmb *b, const int32_t q[4]) {
  if (b->oom) return 0;
  if (!grow((void **)&b->poly_off, &b->cappoly, b->npoly + 2, sizeof *b->poly_off)) {
    b->oom = 1;
    return 0;
  }
  if (b->npoly == 0) b->poly_off[0] = 0;
  int im = 0;
  for (int i = 1; i < 4; ++i)
    if (q[i] < q[im]) im = i;
  mmb_tri(b, q[im], q[(im + 1) % 4], q[(im + 2) % 4]);
  mmb_tri(b, q[im], q[(im + 2) % 4], q[(im + 3) % 4]);
  b->poly_off[b->npoly + 1] = b->ntri;
  return b->npoly++;
}

/* Snap a medial offset to zero when it is round-off relative to the size. */
static double snap(double d, double size) { return d < 1e-9 * size ? 0.0 : d; }

/* The axes ordered by half size, largest first (ax), the sorted half sizes
 * a >= b >= c, and the medial rectangle's half sizes mx = a - c, my = b - c
 * (snapped to 0 when round-off). */
static void sort_axes(const double hs[3], int ax[3], double *a, double *b, double *c, double *mx, double *my) {
  ax[0] = 0, ax[1] = 1, ax[2] = 2;
  for (int i = 0; i < 3; ++i)
    for (int j = i + 1; j < 3; ++j)
      if (hs[ax[j]] > hs[ax[i]]) { int s = ax[i]; ax[i] = ax[j]; ax[j] = s; }
  *a = hs[ax[0]], *b = hs[ax[1]], *c = hs[ax[2]];
  *mx = snap(*a - *c, *a), *my = snap(*b - *c, *a);
}

typedef struct box_ctx { double h[3], E, H; } box_ctx;

static double box_field(const void *ctx, ce_vec3 x) {
  const box_ctx *c = ctx;
  double d = fmin(c->h[0] - fabs(x.x), fmin(c->h[1] - fabs(x.y), c->h[2] - fabs(x.z)));
  return d <= 0 ? 0.0 : c->E * d / c->H;
}

/* A vertex given in the sorted frame (X, Y, Z along axes ax[0..2]). */
static int32_t box_vertex(mmb *b, const int ax[3], double X, double Y, double Z, int bd) {
  double q[3];
  q[ax[0]] = X;
  q[ax[1]] = Y;
  q[ax[2]] = Z;
  return mmb_vertex(b, ce_v3(q[0], q[1], q[2]), bd);
}


/* Unrefined box mesh (fallback for boxes too flat to refine): box with half sizes h[3]. Work in a frame whose axes are sorted by half
 * size (a >= b >= c along X, Y, Z): the medial set is the rectangle
 * |X| <= a - c, |Y| <= b - c in Z = 0; the Z faces own frustums down to it,
 * the X and Y faces wedges up to its edges. */
static ce_errno box_tets(const double hs[3], double E, ce_rawmesh *m, ce_error *err) {
  int ax[3];
  double a, b, c, mx, my;
  sort_axes(hs, ax, &a, &b, &c, &mx, &my);
  box_ctx ctx = {{hs[0], hs[1], hs[2]}, E, c};
  mmb B;
  memset(&B, 0, sizeof B);
  B.field = box_field;
  B.ctx = &ctx;
  int32_t C[2][2][2], M[2][2];
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 2; ++j) {
      for (int k = 0; k < 2; ++k)
        C[i][j][k] = box_vertex(&B, ax, i ? a : -a, j ? b : -b, k ? c : -c, 1);
      M[i][j] = box_vertex(&B, ax, i ? mx : -mx, j ? my : -my, 0.0, 0);
    }
  int32_t faceX[2], faceY[2], faceZ[2], rXZ[2][2], rYZ[2][2], rXY[2][2], mid;
  for (int s = 0; s < 2; ++s) {
    int32_t fz[4] = {C[0][0][s], C[1][0][s], C[1][1][s], C[0][1][s]};
    int32_t fx[4] = {C[s][0][0], C[s][1][0], C[s][1][1], C[s][0][1]};
    int32_t fy[4] = {C[0][s][0], C[1][s][0], C[1][s][1], C[0][s][1]};
    faceZ[s] = mmb_polygon(&B, fz, 4, 1);
    faceX[s] = mmb_polygon(&B, fx, 4, 1);
    faceY[s] = mmb_polygon(&B, fy, 4, 1);
  }
  for (int s = 0; s < 2; ++s)
    for (int t = 0; t < 2; ++t) {
      int32_t xz[4] = {C[s][0][t], C[s][1][t], M[s][1], M[s][0]};
      int32_t yz[4] = {C[0][s][t], C[1][s][t], M[1][s], M[0][s]};
      int32_t xy[3] = {C[s][t][0], C[s][t][1], M[s][t]};
      rXZ[s][t] = mmb_polygon(&B, xz, 4, 0);
      rYZ[s][t] = mmb_polygon(&B, yz, 4, 0);
      rXY[s][t] = mmb_polygon(&B, xy, 3, 0);
    }
  int32_t md[4] = {M[0][0], M[1][0], M[1][1], M[0][1]};
  mid = mmb_polygon(&B, md, 4, 0);
  for (int s = 0; s < 2; ++s) {
    int32_t rz[6] = {faceZ[s], rXZ[0][s], rXZ[1][s], rYZ[0][s], rYZ[1][s], mid};
    int32_t rx[5] = {faceX[s], rXZ[s][0], rXZ[s][1], rXY[s][0], rXY[s][1]};
    int32_t ry[5] = {faceY[s], rYZ[s][0], rYZ[s][1], rXY[0][s], rXY[1][s]};
    mmb_region(&B, rz, 6);
    mmb_region(&B, rx, 5);
    mmb_region(&B, ry, 5);
  }
  return mmb_finish(&B, m, "box", err);
}

/* Box with half sizes hs[3], refined by the hint and still exact. Work in
 * a frame whose axes are sorted by half size (a >= b >= c along X, Y, Z):
 * the medial set is the rectangle |X| <= a - c, |Y| <= b - c in Z = 0 plus
 * 45-degree sheets; the Z faces own frustums down to the rectangle, the X
 * and Y faces wedges up to its edges. In the sorted frame, the
 * slab |X| <= a - c never has an X face nearest, so there the partition is
 * the cross-section's (Y, Z) partition extruded along X: the Z faces own
 * trapezoids down to the medial segment |Y| <= b - c, Z = 0, the Y faces
 * own triangles. The cross-section is triangulated with the medial segment
 * cut every ~h (strips between it and the Z edges), and the slab is cut
 * every ~h along X into triangular prisms (split by the smallest-index
 * rule). Beyond |X| = a - c each end holds the X region and the ends of
 * the Z and Y regions, coned from interior points; their faces at
 * |X| = a - c are the cross-section's triangles, so the pieces conform. */
typedef struct yz { double y, z; } yz;

static int32_t box_g(mmb *B, const int ax[3], double x, yz q) {
  return box_vertex(B, ax, x, q.y, q.z, 0);
}

static ce_errno box_sliced_tets(const double hs[3], double E, double h, ce_rawmesh *m,
                                ce_error *err) {
  int ax[3];
  double a, b, c, mx, my;
  sort_axes(hs, ax, &a, &b, &c, &mx, &my);
  /* (the 1e-9 keeps a round-off excess, 15.000000000000002, from adding a slice) */
  double Jd = mx > 0 ? fmax(1.0, ceil(2.0 * mx / h - 1e-9)) : 0.0;
  double Kd = my > 0 ? fmax(1.0, ceil(2.0 * my / h - 1e-9)) : 0.0;
  double count = 3.0 * Jd * (4.0 * Kd + 6.0) + 20.0 * Kd + 100.0;
  if (!(count <= MAXEL))
    return ce_fail(err, CE_ELIMIT,
                   "box size %g x %g x %g with hint %g needs about %.3g tets, over the limit "
                   "of %d",
                   2 * hs[0], 2 * hs[1], 2 * hs[2], h, count, MAXEL);
  int32_t J = (int32_t)Jd, K = (int32_t)Kd;
  box_ctx ctx = {{hs[0], hs[1], hs[2]}, E, c};
  mmb B;
  memset(&B, 0, sizeof B);
  B.field = box_field;
  B.ctx = &ctx;
  /* cross-section triangles, tagged 0 = Z+, 1 = Z-, 2 = Y+, 3 = Y- */
  int32_t nt2 = 4 * K + 6;
  yz(*t2)[3] = malloc((size_t)nt2 * sizeof *t2);
  int *tag = malloc((size_t)nt2 * sizeof *tag);
  yz *mk = malloc((size_t)(K + 1) * sizeof *mk);
  int32_t *poly = malloc((size_t)(4 * K + 16) * sizeof *poly);
  if (!t2 || !tag || !mk || !poly) {
    free(t2); free(tag); free(mk); free(poly);
    return ce_prim_oom(err, "box");
  }
  for (int32_t k = 0; k <= K; ++k) mk[k] = (yz){k == K ? my : (K ? -my + 2.0 * my * k / K : 0.0), 0.0};
  int32_t n2 = 0;
#define T2(P, Q, R, TAG) (t2[n2][0] = (P), t2[n2][1] = (Q), t2[n2][2] = (R), tag[n2++] = (TAG))
  for (int sz = 0; sz < 2; ++sz) {
    double zc = sz ? -c : c;
    for (int32_t k = 0; k < K; ++k) {
      yz t0 = {mk[k].y, zc}, t1 = {mk[k + 1].y, zc};
      T2(mk[k], mk[k + 1], t1, sz);
      T2(mk[k], t1, t0, sz);
    }
    yz c0 = {-b, zc}, c1 = {b, zc}, tf = {mk[0].y, zc}, tl = {mk[K].y, zc};
    T2(c0, tf, mk[0], sz);
    T2(tl, c1, mk[K], sz);
  }
  T2(((yz){b, c}), ((yz){b, -c}), mk[K], 2);
  T2(((yz){-b, -c}), ((yz){-b, c}), mk[0], 3);
#undef T2
  /* the slab |X| <= mx */
  for (int32_t j = 0; j < J && !B.oom; ++j) {
    double x0 = -mx + 2.0 * mx * j / J, x1 = j + 1 == J ? mx : -mx + 2.0 * mx * (j + 1) / J;
    for (int32_t i = 0; i < n2; ++i) {
      int32_t pr[6];
      for (int q = 0; q < 3; ++q) {
        pr[q] = box_g(&B, ax, x0, t2[i][q]);
        pr[q + 3] = box_g(&B, ax, x1, t2[i][q]);
      }
      mmb_prism(&B, pr);
    }
  }
  /* the two ends */
  for (int sx = 0; sx < 2 && !B.oom; ++sx) {
    double X0 = sx ? mx : -mx, X1 = sx ? a : -a;
    int32_t cs[4][64], ncs[4] = {0, 0, 0, 0}; /* Y tags hold one triangle */
    int32_t *csz[2] = {malloc((size_t)(2 * K + 3) * sizeof(int32_t)),
                       malloc((size_t)(2 * K + 3) * sizeof(int32_t))};
    if (!csz[0] || !csz[1]) {
      free(csz[0]); free(csz[1]);
      B.oom = 1;
      break;
    }
    int32_t ncsz[2] = {0, 0};
    for (int32_t i = 0; i < n2; ++i) {
      int32_t id3[3];
      for (int q = 0; q < 3; ++q) id3[q] = box_g(&B, ax, X0, t2[i][q]);
      int32_t pid = mmb_polygon(&B, id3, 3, 0);
      if (tag[i] < 2) csz[tag[i]][ncsz[tag[i]]++] = pid;
      else cs[tag[i]][ncs[tag[i]]++] = pid;
    }
    int32_t roofXZ[2], roofYZ[2][2], faceY[2], roofXY[2], faceX;
    for (int sz = 0; sz < 2; ++sz) {
      double zc = sz ? -c : c;
      yz c0 = {-b, zc}, c1 = {b, zc};
      int32_t k = 0;
      poly[k++] = box_g(&B, ax, X0, c0);
      for (int32_t q = 0; q <= K; ++q) poly[k++] = box_g(&B, ax, X0, (yz){mk[q].y, zc});
      poly[k++] = box_g(&B, ax, X0, c1);
      poly[k++] = box_g(&B, ax, X1, c1);
      poly[k++] = box_g(&B, ax, X1, c0);
      int32_t faceZ = mmb_polygon(&B, poly, k, 1);
      k = 0;
      poly[k++] = box_g(&B, ax, X1, c0);
      poly[k++] = box_g(&B, ax, X1, c1);
      for (int32_t q = K; q >= 0; --q) poly[k++] = box_g(&B, ax, X0, mk[q]);
      roofXZ[sz] = mmb_polygon(&B, poly, k, 0);
      for (int sy = 0; sy < 2; ++sy) {
        yz cc = {sy ? -b : b, zc};
        int32_t tri[3] = {box_g(&B, ax, X0, cc), box_g(&B, ax, X1, cc),
                          box_g(&B, ax, X0, sy ? mk[0] : mk[K])};
        roofYZ[sy][sz] = mmb_polygon(&B, tri, 3, 0);
      }
      /* the Z end region needs faceZ now; the roofs are complete below */
      csz[sz][ncsz[sz]++] = faceZ;
    }
    for (int sy = 0; sy < 2; ++sy) {
      double yc = sy ? -b : b;
      yz lo = {yc, -c}, hi = {yc, c};
      int32_t q4[4] = {box_g(&B, ax, X0, lo), box_g(&B, ax, X1, lo), box_g(&B, ax, X1, hi),
                       box_g(&B, ax, X0, hi)};
      faceY[sy] = mmb_polygon(&B, q4, 4, 1);
      int32_t tri[3] = {box_g(&B, ax, X1, hi), box_g(&B, ax, X1, lo),
                        box_g(&B, ax, X0, sy ? mk[0] : mk[K])};
      roofXY[sy] = mmb_polygon(&B, tri, 3, 0);
    }
    {
      int32_t q4[4] = {box_g(&B, ax, X1, (yz){-b, -c}), box_g(&B, ax, X1, (yz){b, -c}),
                       box_g(&B, ax, X1, (yz){b, c}), box_g(&B, ax, X1, (yz){-b, c})};
      faceX = mmb_polygon(&B, q4, 4, 1);
    }
    for (int sz = 0; sz < 2; ++sz) {
      int32_t k = 0;
      for (int32_t i = 0; i < ncsz[sz]; ++i) poly[k++] = csz[sz][i];
      poly[k++] = roofXZ[sz];
      poly[k++] = roofYZ[0][sz];
      poly[k++] = roofYZ[1][sz];
      mmb_region(&B, poly, k);
    }
    for (int sy = 0; sy < 2; ++sy) {
      int32_t r[5] = {cs[2 + sy][0], faceY[sy], roofXY[sy], roofYZ[sy][0], roofYZ[sy][1]};
      mmb_region(&B, r, 5);
    }
    int32_t rx[5] = {faceX, roofXZ[0], roofXZ[1], roofXY[0], roofXY[1]};
    mmb_region(&B, rx, 5);
    free(csz[0]);
    free(csz[1]);
  }
  free(t2); free(tag); free(mk); free(poly);
  return mmb_finish(&B, m, "box", err);
}

/* Smallest 6 V / (longest edge)^3 over the tets (1.41 for a regular tet). */
static double min_tet_shape(const ce_rawmesh *m) {
  double q = INFINITY;
  for (int32_t t = 0; t < m->nt; ++t) {
    const ce_vec3 *x[4] = {&m->v[m->tet[t][0]], &m->v[m->tet[t][1]], &m->v[m->tet[t][2]],
                           &m->v[m->tet[t][3]]};
    double l2 = 0;
    for (int i = 0; i < 4; ++i)
      for (int j = i + 1; j < 4; ++j) l2 = fmax(l2, ce_norm2(ce_sub(*x[i], *x[j])));
    q = fmin(q, ce_prim_det3(*x[0], *x[1], *x[2], *x[3]) / (l2 * sqrt(l2)));
  }
  return q;
}

/* The refined box, unless the box is so flat (thickness / size below about
 * 1e-5) that the refined pieces would be near-degenerate: then the 104-tet
 * medial mesh, whose field is exact too. */
ce_errno ce_box_compliant(const double hs[3], double E, double h, ce_rawmesh *m,
                              ce_error *err) {
  ce_errno e = box_sliced_tets(hs, E, h, m, err);
  if (e || min_tet_shape(m) > 1e-9) return e;
  ce_rawmesh_free(m);
  return box_tets(hs, E, m, err);
}

typedef struct cyl_ctx { int32_t n; double R, rho, l, E, H; } cyl_ctx;

/* Distance to the nearest face of the regular n-gon prism (vertices at
 * angles 2 pi i / n on the circle of radius R, half length l). */
static double cyl_distance(const cyl_ctx *c, ce_vec3 x) {
  double dz = c->l - fabs(x.z);
  double rr = hypot(x.x, x.y);
  if (rr == 0) return fmin(dz, c->rho);
  double w = 2.0 * M_PI / c->n;
  double phi = atan2(x.y, x.x);
  int64_t i0 = (int64_t)floor(phi / w); /* side i0 spans angles [i0 w, (i0+1) w] */
  double best = -INFINITY;
  for (int64_t i = i0 - 1; i <= i0 + 1; ++i) {
    double al = (double)i * w + 0.5 * w;
    best = fmax(best, x.x * cos(al) + x.y * sin(al));
  }
  return fmin(dz, c->rho - best);
}

static double cyl_field(const void *ctx, ce_vec3 x) {
  const cyl_ctx *c = ctx;
  double d = cyl_distance(c, x);
  return d <= 0 ? 0.0 : c->E * d / c->H;
}

/* Long prism (l >= rho): the side faces own wedges reaching the axis segment
 * |z| <= zo = l - rho, the caps own pyramids with apexes at its ends. Each
 * side wedge is cut into m slices of height ~h along |z| <= zo (triangular
 * prisms O_j P_i,j P_i+1,j, split by the smallest-index rule) plus a
 * pyramid at each end (apex at the segment's end, base the outer face
 * above |z| = zo); each cap region is coned from its apex over the cap,
 * cut into K rings of n sectors (the field there depends on z alone, so
 * any cut keeps it exact; the rings give the cap a resolution across its
 * radius, as contact on a flat end needs; K is chosen by the caller). */
/* z of slice boundary j of m along the axis segment |z| <= zo (the last
 * exactly zo; one slice at z = 0 when m is 0). */
static double long_slice_z(int32_t j, int32_t m, double zo) {
  return j == m ? zo : (m ? -zo + 2.0 * zo * j / m : 0.0);
}

static ce_errno cylinder_long_tets(double R, double L, int32_t n, int32_t m, int32_t K, double E,
                                   ce_rawmesh *out, ce_error *err) {
  double l = 0.5 * L, rho = R * cos(M_PI / n);
  double zo = snap(l - rho, l);
  if (zo == 0) m = 0;
  cyl_ctx ctx = {n, R, rho, l, E, fmin(rho, l)};
  mmb B;
  memset(&B, 0, sizeof B);
  B.field = cyl_field;
  B.ctx = &ctx;
  int64_t np = (int64_t)(m + 1) * n;
  int32_t *P = malloc((size_t)np * sizeof *P), *O = malloc((size_t)(m + 1) * sizeof *O);
  int32_t *Vp = malloc((size_t)n * sizeof *Vp), *Vm = malloc((size_t)n * sizeof *Vm);
  if (!P || !O || !Vp || !Vm) {
    free(P); free(O); free(Vp); free(Vm);
    return ce_prim_oom(err, "cylinder");
  }
  /* (positions are computed, never read back from B.v: after a failed
   * allocation mmb_vertex returns 0 and B.v may still be NULL) */
  for (int32_t j = 0; j <= m; ++j) O[j] = mmb_vertex(&B, ce_v3(0, 0, long_slice_z(j, m, zo)), 0);
  for (int32_t i = 0; i < n; ++i) {
    double th = 2.0 * M_PI * i / n, x = R * cos(th), y = R * sin(th);
    Vp[i] = mmb_vertex(&B, ce_v3(x, y, l), 1);
    Vm[i] = mmb_vertex(&B, ce_v3(x, y, -l), 1);
    for (int32_t j = 0; j <= m; ++j) P[(int64_t)j * n + i] = mmb_vertex(&B, ce_v3(x, y, long_slice_z(j, m, zo)), 1);
  }
  for (int32_t i = 0; i < n && !B.oom; ++i) {
    int32_t k = (i + 1) % n;
    for (int32_t j = 0; j < m; ++j) {
      int32_t pr[6] = {O[j], P[(int64_t)j * n + i], P[(int64_t)j * n + k],
                       O[j + 1], P[(int64_t)(j + 1) * n + i], P[(int64_t)(j + 1) * n + k]};
      mmb_prism(&B, pr);
    }
    /* end pyramids: apex O, base (P_i, P_k, V_k, V_i) split along P_i - V_k */
    int32_t ot = O[m], pi = P[(int64_t)m * n + i], pk = P[(int64_t)m * n + k];
    mmb_tet(&B, ot, pi, pk, Vp[k]);
    mmb_tet(&B, ot, pi, Vp[k], Vp[i]);
    int32_t ob = O[0], qi = P[i], qk = P[k];
    mmb_tet(&B, ob, qi, qk, Vm[k]);
    mmb_tet(&B, ob, qi, Vm[k], Vm[i]);
    /* caps: from the apex, the ring pieces of sector (i, k) of the cap */
    for (int s = 0; s < 2; ++s) {
      double z = s ? -l : l;
      int32_t apex = s ? ob : ot;
      const double thi = 2.0 * M_PI * i / n, thk = 2.0 * M_PI * k / n;
      const ce_vec3 a = ce_v3(R * cos(thi), R * sin(thi), z), c = ce_v3(R * cos(thk), R * sin(thk), z);
      int32_t in_i = mmb_vertex(&B, ce_v3(0, 0, z), 1), in_k = in_i;
      for (int32_t r = 1; r <= K && !B.oom; ++r) {
        double f = (double)r / K;
        int32_t out_i = r == K ? (s ? Vm[i] : Vp[i]) : mmb_vertex(&B, ce_v3(f * a.x, f * a.y, z), 1);
        int32_t out_k = r == K ? (s ? Vm[k] : Vp[k]) : mmb_vertex(&B, ce_v3(f * c.x, f * c.y, z), 1);
        if (r == 1) {
          mmb_tet(&B, apex, in_i, out_i, out_k);
        } else {
          mmb_tet(&B, apex, in_i, in_k, out_k);
          mmb_tet(&B, apex, in_i, out_k, out_i);
        }
        in_i = out_i;
        in_k = out_k;
      }
    }
  }
  free(P); free(O); free(Vp); free(Vm);
  return mmb_finish(&B, out, "cylinder", err);
}

/* Regular n-gon prism, medial-axis mesh. Long (l >= apothem rho): see
 * cylinder_long_tets. Flat (l < rho): the medial set includes the polygon W
 * of apothem rho - l in z = 0; the caps own frustums down to W, the sides
 * own wedges up to W's edges. The side regions are coned from interior
 * points. Each cap frustum is cut into n sectors and K rings (the cap's
 * rings scaled down onto W): a piece between two rings is two triangular
 * prisms (one at the centre), split by the smallest-index rule, which also
 * splits the roofs the side regions share. */
ce_errno ce_cylinder_tets(double R, double L, int32_t n, int32_t slices, int32_t K, double E,
                              ce_rawmesh *m, ce_error *err) {
  double l = 0.5 * L, rho = R * cos(M_PI / n);
  if (!(l < rho && snap(rho - l, rho) > 0)) return cylinder_long_tets(R, L, n, slices, K, E, m, err);
  cyl_ctx ctx = {n, R, rho, l, E, fmin(rho, l)};
  mmb B;
  memset(&B, 0, sizeof B);
  B.field = cyl_field;
  B.ctx = &ctx;
  int32_t *Vp = calloc((size_t)n, sizeof *Vp), *Vm = calloc((size_t)n, sizeof *Vm);
  int32_t *W = calloc((size_t)n, sizeof *W);
  int32_t *side = malloc((size_t)n * sizeof *side), *rad = malloc((size_t)n * sizeof *rad);
  int32_t *roofp = malloc((size_t)n * sizeof *roofp), *roofm = malloc((size_t)n * sizeof *roofm);
  ce_vec3 *ring = malloc((size_t)n * sizeof *ring);
  if (!Vp || !Vm || !W || !side || !rad || !roofp || !roofm || !ring) {
    free(Vp); free(Vm); free(W); free(side); free(rad); free(roofp); free(roofm);
    free(ring);
    return ce_prim_oom(err, "cylinder");
  }
  for (int32_t i = 0; i < n; ++i) {
    double th = 2.0 * M_PI * i / n;
    ring[i] = ce_v3(R * cos(th), R * sin(th), 0);
    Vp[i] = mmb_vertex(&B, ce_v3(ring[i].x, ring[i].y, l), 1);
    Vm[i] = mmb_vertex(&B, ce_v3(ring[i].x, ring[i].y, -l), 1);
  }
  double s = (rho - l) / rho;
  for (int32_t i = 0; i < n; ++i) W[i] = mmb_vertex(&B, ce_v3(ring[i].x * s, ring[i].y * s, 0), 0);
  for (int32_t i = 0; i < n; ++i) {
    int32_t j = (i + 1) % n;
    int32_t s4[4] = {Vm[i], Vm[j], Vp[j], Vp[i]};
    side[i] = mmb_polygon(&B, s4, 4, 1);
    int32_t q[3] = {Vp[i], Vm[i], W[i]};
    int32_t rp[4] = {Vp[i], Vp[j], W[j], W[i]}, rm[4] = {Vm[i], Vm[j], W[j], W[i]};
    rad[i] = mmb_polygon(&B, q, 3, 0);
    roofp[i] = mmb_quad(&B, rp);
    roofm[i] = mmb_quad(&B, rm);
  }
  for (int32_t i = 0; i < n && !B.oom; ++i) {
    int32_t r[5] = {side[i], rad[i], rad[(i + 1) % n], roofp[i], roofm[i]};
    mmb_region(&B, r, 5);
  }
  /* the cap frustums: ring r of sector (i, k) joins the cap's ring points
   * at radius r/K (z = +-l) to W's at the same fraction (z = 0) */
  int32_t O = mmb_vertex(&B, ce_v3(0, 0, 0), 0);
  for (int sgn = 0; sgn < 2 && !B.oom; ++sgn) {
    double zc = sgn ? -l : l;
    const int32_t *V = sgn ? Vm : Vp;
    int32_t C = mmb_vertex(&B, ce_v3(0, 0, zc), 1);
    for (int32_t i = 0; i < n && !B.oom; ++i) {
      int32_t k = (i + 1) % n;
      int32_t ti = C, tk = C, bi = O, bk = O; /* inner ring: top, bottom */
      for (int32_t r = 1; r <= K && !B.oom; ++r) {
        double f = (double)r / K;
        int32_t Ti = r == K ? V[i] : mmb_vertex(&B, ce_v3(f * ring[i].x, f * ring[i].y, zc), 1);
        int32_t Tk = r == K ? V[k] : mmb_vertex(&B, ce_v3(f * ring[k].x, f * ring[k].y, zc), 1);
        int32_t Bi = r == K ? W[i] : mmb_vertex(&B, ce_v3(f * s * ring[i].x, f * s * ring[i].y, 0), 0);
        int32_t Bk = r == K ? W[k] : mmb_vertex(&B, ce_v3(f * s * ring[k].x, f * s * ring[k].y, 0), 0);
        /* prisms: bottom (on W's plane) then top, p[j + 3] above p[j] */
        int32_t p1[6] = {bi, Bk, Bi, ti, Tk, Ti};
        mmb_prism(&B, p1);
        if (r > 1) {
          int32_t p2[6] = {bi, bk, Bk, ti, tk, Tk};
          mmb_prism(&B, p2);
        }
        ti = Ti, tk = Tk, bi = Bi, bk = Bk;
      }
    }
  }
  free(Vp); free(Vm); free(W); free(side); free(rad); free(roofp); free(roofm);
  free(ring);
  return mmb_finish(&B, m, "cylinder", err);
}

/* ---- rigid box and cylinder surfaces -------------------------------------- */

/* Box surface: each face a grid of cells of size about h (the cell counts
 * per axis are shared by the faces meeting at an edge, so the surface is
 * closed), every cell fanned into 4 triangles around its centre. */
ce_errno ce_box_surface(const double hs[3], double h, ce_rawmesh *m, ce_error *err) {
  double nd[3];
  for (int i = 0; i < 3; ++i) nd[i] = fmax(1.0, ceil(2.0 * hs[i] / h));
  double cells = 2.0 * (nd[0] * nd[1] + nd[1] * nd[2] + nd[0] * nd[2]);
  if (4.0 * cells > MAXEL)
    return ce_fail(err, CE_ELIMIT,
                   "box size %g x %g x %g with hint %g needs %.3g triangles, over the "
                   "limit of %d",
                   2 * hs[0], 2 * hs[1], 2 * hs[2], h, 4.0 * cells, MAXEL);
  int32_t N[3] = {(int32_t)nd[0], (int32_t)nd[1], (int32_t)nd[2]};
  mmb B;
  memset(&B, 0, sizeof B); /* vertices deduplicated by position; no field */
  for (int axis = 0; axis < 3; ++axis) {
    int u = (axis + 1) % 3, w = (axis + 2) % 3;
    for (int side = 0; side < 2; ++side)
      for (int32_t i = 0; i < N[u] && !B.oom; ++i)
        for (int32_t j = 0; j < N[w]; ++j) {
          int32_t c4[4];
          static const int32_t du[4] = {0, 1, 1, 0}, dw[4] = {0, 0, 1, 1};
          ce_vec3 c = ce_v3(0, 0, 0);
          for (int q = 0; q < 4; ++q) {
            int32_t g[3];
            double x[3];
            g[axis] = side ? N[axis] : 0;
            g[u] = i + du[q];
            g[w] = j + dw[q];
            for (int k = 0; k < 3; ++k)
              x[k] = g[k] == N[k] ? hs[k] : -hs[k] + 2.0 * hs[k] * g[k] / N[k];
            ce_vec3 xv = ce_v3(x[0], x[1], x[2]);
            c4[q] = mmb_vertex(&B, xv, 1);
            c = ce_add(c, xv);
          }
          int32_t ci = mmb_vertex(&B, ce_scale(c, 0.25), 1);
          for (int q = 0; q < 4; ++q) mmb_tri(&B, ci, c4[q], c4[(q + 1) % 4]);
        }
  }
  free(B.hash);
  free(B.poly_off);
  free(B.p);
  if (B.oom) {
    free(B.v);
    free(B.tri);
    return ce_prim_oom(err, "box");
  }
  m->v = B.v;
  m->nv = B.nv;
  m->tri = B.tri;
  m->nf = B.ntri;
  ce_prim_orient_tris_outward(m->v, m->tri, m->nf, 0.0);
  return CE_OK;
}

/* Cylinder surface: regular n-gon rings every ~h along the length (side
 * quads split in 2), caps fanned around their centres. */
ce_errno ce_cylinder_surface(double R, double L, double h, int32_t n, ce_rawmesh *m,
                                 ce_error *err) {
  double mbd = fmax(1.0, ceil(L / h));
  double count = 2.0 * n * mbd + 2.0 * n;
  if (count > MAXEL)
    return ce_fail(err, CE_ELIMIT,
                   "cylinder radius %g length %g with hint %g needs %.3g triangles, over "
                   "the limit of %d",
                   R, L, h, count, MAXEL);
  int32_t mb = (int32_t)mbd, nf = (int32_t)count, nv = n * (mb + 1) + 2;
  m->v = malloc((size_t)nv * sizeof *m->v);
  m->tri = malloc((size_t)nf * sizeof *m->tri);
  if (!m->v || !m->tri) {
    ce_rawmesh_free(m);
    return ce_prim_oom(err, "cylinder");
  }
  double l = 0.5 * L;
  for (int32_t r = 0; r <= mb; ++r) {
    double z = r == mb ? -l : l - L * r / mb;
    for (int32_t k = 0; k < n; ++k) {
      double th = 2.0 * M_PI * k / n;
      m->v[r * n + k] = ce_v3(R * cos(th), R * sin(th), z);
    }
  }
  int32_t ct = n * (mb + 1), cb = ct + 1;
  m->v[ct] = ce_v3(0, 0, l);
  m->v[cb] = ce_v3(0, 0, -l);
  int32_t t = 0;
  for (int32_t k = 0; k < n; ++k) {
    int32_t k1 = (k + 1) % n;
    m->tri[t][0] = ct; m->tri[t][1] = k; m->tri[t][2] = k1; ++t;
    m->tri[t][0] = cb; m->tri[t][1] = mb * n + k1; m->tri[t][2] = mb * n + k; ++t;
    for (int32_t r = 0; r < mb; ++r) {
      int32_t a = r * n + k, b = r * n + k1, c = a + n, d = b + n;
      m->tri[t][0] = a; m->tri[t][1] = c; m->tri[t][2] = d; ++t;
      m->tri[t][0] = a; m->tri[t][1] = d; m->tri[t][2] = b; ++t;
    }
  }
  m->nv = nv;
  m->nf = t;
  ce_prim_orient_tris_outward(m->v, m->tri, m->nf, 0.0);
  return CE_OK;
}
