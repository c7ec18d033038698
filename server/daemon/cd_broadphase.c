/* cd_broadphase.c — sweep and prune over bounding spheres; half spaces and
 * terrains (one large box each, ce_heightfield_extent) tested against every
 * finite body. */
#include "cd_broadphase.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct span {
  double lo, hi;
  int32_t i;
} span;

static int span_cmp(const void *a, const void *b) {
  const span *p = a, *q = b;
  if (p->lo != q->lo) return p->lo < q->lo ? -1 : 1;
  return p->i - q->i;
}

typedef struct key {
  uint32_t a, b; /* body ids, a < b */
  int32_t ia, ib;
} key;

static int key_cmp(const void *x, const void *y) {
  const key *p = x, *q = y;
  if (p->a != q->a) return p->a < q->a ? -1 : 1;
  if (p->b != q->b) return p->b < q->b ? -1 : 1;
  return 0;
}

typedef struct acc {
  key *v;
  size_t n, cap;
  uint64_t max;
  int overflow;
} acc;

static int filters_pass(const cd_qbody *x, const cd_qbody *y) {
  return (x->group & y->mask) && (y->group & x->mask);
}

static void add(acc *a, const cd_qbody *b, int32_t i, int32_t j) {
  if (a->overflow) return;
  if (!filters_pass(&b[i], &b[j])) return;
  if (a->n >= a->max) {
    a->overflow = 1;
    return;
  }
  if (a->n == a->cap) {
    size_t nc = a->cap ? 2 * a->cap : 256;
    key *nv = realloc(a->v, nc * sizeof *nv);
    if (!nv) {
      a->overflow = 2;
      return;
    }
    a->v = nv;
    a->cap = nc;
  }
  key k;
  if (b[i].id < b[j].id) k = (key){b[i].id, b[j].id, i, j};
  else k = (key){b[j].id, b[i].id, j, i};
  a->v[a->n++] = k;
}

int cd_broadphase(const cd_qbody *b, int32_t n, double margin, const cd_qpair *exclude, size_t nexclude,
                  uint64_t max_pairs, const char *field, cd_qpair **out, int64_t *nout, cd_status *st) {
  *out = NULL;
  *nout = 0;
  acc a = {NULL, 0, 0, max_pairs, 0};
  span *s = malloc((n ? (size_t)n : 1) * sizeof *s);
  int32_t *hs = malloc((n ? (size_t)n : 1) * sizeof *hs);
  int32_t *ts = malloc((n ? (size_t)n : 1) * sizeof *ts);
  if (!s || !hs || !ts) {
    free(s);
    free(hs);
    free(ts);
    return cd_status_set(st, CD_EXHAUSTED, field, "out of memory");
  }
  int32_t ns = 0, nh = 0, nt = 0;
  for (int32_t i = 0; i < n; i++) {
    if (b[i].entry->info.shape == CE_SHAPE_HEIGHTFIELD) {
      ts[nt++] = i;
      continue;
    }
    double r = b[i].entry->bound_radius;
    if (isinf(r)) {
      hs[nh++] = i;
      continue;
    }
    double x = b[i].body.X_WB.p.x;
    s[ns++] = (span){x - r - margin, x + r + margin, i};
  }
  qsort(s, (size_t)ns, sizeof *s, span_cmp);
  for (int32_t k = 0; k < ns && !a.overflow; k++) {
    const cd_qbody *p = &b[s[k].i];
    double rp = p->entry->bound_radius + margin;
    for (int32_t m = k + 1; m < ns && s[m].lo <= s[k].hi; m++) {
      const cd_qbody *q = &b[s[m].i];
      double dy = p->body.X_WB.p.y - q->body.X_WB.p.y, dz = p->body.X_WB.p.z - q->body.X_WB.p.z;
      double dx = p->body.X_WB.p.x - q->body.X_WB.p.x;
      double rr = rp + q->entry->bound_radius;
      if (dx * dx + dy * dy + dz * dz <= rr * rr) add(&a, b, s[k].i, s[m].i);
    }
  }
  /* Half spaces: body i touches when its sphere reaches below the plane. */
  for (int32_t h = 0; h < nh && !a.overflow; h++) {
    const ce_pose *X = &b[hs[h]].body.X_WB;
    ce_vec3 nrm = {X->R.m[0][2], X->R.m[1][2], X->R.m[2][2]};
    for (int32_t k = 0; k < ns; k++) {
      const cd_qbody *q = &b[s[k].i];
      double d = nrm.x * (q->body.X_WB.p.x - X->p.x) + nrm.y * (q->body.X_WB.p.y - X->p.y) +
                 nrm.z * (q->body.X_WB.p.z - X->p.z);
      if (d - q->entry->bound_radius <= margin) add(&a, b, hs[h], s[k].i);
    }
  }
  /* Terrains: body k touches when its sphere reaches the box holding the
   * whole reconstructed surface (terrain frame); far above costs nothing. */
  for (int32_t t = 0; t < nt && !a.overflow; t++) {
    const cd_qbody *tb = &b[ts[t]];
    ce_vec3 lo, hi;
    ce_error err;
    if (ce_heightfield_extent(tb->entry->geometry, &lo, &hi, &err) != CE_OK) continue;
    const ce_pose *X = &tb->body.X_WB;
    for (int32_t k = 0; k < ns; k++) {
      const cd_qbody *q = &b[s[k].i];
      double w[3] = {q->body.X_WB.p.x - X->p.x, q->body.X_WB.p.y - X->p.y, q->body.X_WB.p.z - X->p.z};
      double l[3], blo[3] = {lo.x, lo.y, lo.z}, bhi[3] = {hi.x, hi.y, hi.z}, d2 = 0;
      for (int c = 0; c < 3; c++) {
        l[c] = X->R.m[0][c] * w[0] + X->R.m[1][c] * w[1] + X->R.m[2][c] * w[2]; /* R^T w */
        double e = l[c] < blo[c] ? blo[c] - l[c] : (l[c] > bhi[c] ? l[c] - bhi[c] : 0);
        d2 += e * e;
      }
      double rr = q->entry->bound_radius + margin;
      if (d2 <= rr * rr) add(&a, b, ts[t], s[k].i);
    }
  }
  free(s);
  free(hs);
  free(ts);
  if (a.overflow) {
    free(a.v);
    if (a.overflow == 2) return cd_status_set(st, CD_EXHAUSTED, field, "out of memory");
    return cd_status_set(st, CD_EXHAUSTED, field,
                         "the broad phase found more than %llu candidate pairs (max_pairs_per_query)",
                         (unsigned long long)max_pairs);
  }
  if (a.n) qsort(a.v, a.n, sizeof *a.v, key_cmp);
  /* exclusions, as sorted keys */
  key *ex = malloc((nexclude ? nexclude : 1) * sizeof *ex);
  cd_qpair *o = malloc((a.n ? a.n : 1) * sizeof *o);
  if (!ex || !o) {
    free(ex);
    free(o);
    free(a.v);
    return cd_status_set(st, CD_EXHAUSTED, field, "out of memory");
  }
  for (size_t i = 0; i < nexclude; i++) {
    uint32_t x = b[exclude[i].a].id, y = b[exclude[i].b].id;
    ex[i] = x < y ? (key){x, y, 0, 0} : (key){y, x, 0, 0};
  }
  qsort(ex, nexclude, sizeof *ex, key_cmp);
  size_t m = 0;
  for (size_t i = 0; i < a.n; i++) {
    if (nexclude && bsearch(&a.v[i], ex, nexclude, sizeof *ex, key_cmp)) continue;
    o[m++] = (cd_qpair){a.v[i].ia, a.v[i].ib, 0};
  }
  free(ex);
  free(a.v);
  *out = o;
  *nout = (int64_t)m;
  return 0;
}
