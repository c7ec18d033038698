/* ce_test_util.c — helpers shared by the engine's unit tests. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ce_test_util.h"

int ce_test_close(double a, double b, double rtol, double floor) {
  double s = fmax(fmax(fabs(a), fabs(b)), floor);
  return fabs(a - b) <= rtol * s;
}

ce_props ce_test_props(ce_compliance c, double modulus, double hint) {
  ce_props p;
  memset(&p, 0, sizeof p);
  p.compliance = c;
  p.modulus = modulus;
  p.hint = hint;
  p.slab_thickness = 0;
  return p;
}

ce_body ce_test_body(const ce_geometry *g, ce_quat q, ce_vec3 p) {
  ce_body b;
  memset(&b, 0, sizeof b);
  b.geometry = g;
  b.X_WB = ce_pose_from_quat(q, p);
  b.material = g ? g->material : (ce_material){0, 0};
  return b;
}

ce_result ce_test_contact(const ce_body *a, const ce_body *b, const ce_options *o, ce_arena *arena) {
  ce_options def;
  if (!o) {
    ce_options_default(&def);
    o = &def;
  }
  ce_result r;
  ce_error err;
  ce_arena_reset(arena);
  cr_assert_eq(ce_contact(a, b, o, arena, &r, &err), CE_OK, "%s", err.message);
  return r;
}

double ce_test_rand(uint64_t *s) {
  uint64_t x = *s;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return (double)((x * 0x2545F4914F6CDD1DULL) >> 11) * (1.0 / 9007199254740992.0);
}

ce_quat ce_test_rand_quat(uint64_t *s) {
  double u1 = ce_test_rand(s), u2 = ce_test_rand(s), u3 = ce_test_rand(s);
  ce_quat q = {sqrt(1 - u1) * sin(2 * M_PI * u2), sqrt(1 - u1) * cos(2 * M_PI * u2),
               sqrt(u1) * sin(2 * M_PI * u3), sqrt(u1) * cos(2 * M_PI * u3)};
  return ce_quat_normalize(q);
}

ce_pose ce_test_rand_pose(uint64_t *state, double dmin, double dspan) {
  ce_quat q = ce_test_rand_quat(state);
  ce_vec3 dir = ce_quat_rotate(ce_test_rand_quat(state), ce_v3(1, 0, 0));
  double d = dmin + dspan * ce_test_rand(state);
  return ce_pose_from_quat(q, ce_scale(dir, d));
}

/* ---- OBJ text of test surfaces ------------------------------------------ */

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct tu_sbuf {
  char *s;
  size_t n, cap;
} tu_sbuf;

static void tu_printf(tu_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tu_printf(tu_sbuf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  if (b->n + (size_t)k + 1 > b->cap) {
    size_t nc = (b->n + (size_t)k + 1) * 2;
    char *ns = realloc(b->s, nc);
    if (!ns) abort();
    b->s = ns;
    b->cap = nc;
  }
  va_start(ap, fmt);
  vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
  va_end(ap);
  b->n += (size_t)k;
}

char *ce_test_obj_sphere(double R, int nlat, int nlon, size_t *len) {
  tu_sbuf b = {0, 0, 0};
  tu_printf(&b, "# UV sphere R=%g\nv 0 0 %.17g\n", R, R);
  for (int i = 1; i < nlat; i++)
    for (int j = 0; j < nlon; j++) {
      double th = M_PI * i / nlat, ph = 2 * M_PI * j / nlon;
      tu_printf(&b, "v %.17g %.17g %.17g\n", R * sin(th) * cos(ph), R * sin(th) * sin(ph), R * cos(th));
    }
  tu_printf(&b, "v 0 0 %.17g\n", -R);
  int last = 2 + (nlat - 1) * nlon;
#define TU_ID(i, j) (2 + ((i) - 1) * nlon + ((j) % nlon))
  for (int j = 0; j < nlon; j++) tu_printf(&b, "f 1 %d %d\n", TU_ID(1, j), TU_ID(1, j + 1));
  for (int i = 1; i < nlat - 1; i++)
    for (int j = 0; j < nlon; j++)
      tu_printf(&b, "f %d %d %d %d\n", TU_ID(i, j), TU_ID(i + 1, j), TU_ID(i + 1, j + 1), TU_ID(i, j + 1));
  for (int j = 0; j < nlon; j++) tu_printf(&b, "f %d %d %d\n", last, TU_ID(nlat - 1, j + 1), TU_ID(nlat - 1, j));
#undef TU_ID
  *len = b.n;
  return b.s;
}

char *ce_test_obj_torus(double R, double r, int nu, int nv, size_t *len) {
  tu_sbuf b = {0, 0, 0};
  for (int i = 0; i < nu; i++)
    for (int j = 0; j < nv; j++) {
      double u = 2 * M_PI * i / nu, v = 2 * M_PI * j / nv;
      tu_printf(&b, "v %.17g %.17g %.17g\n", (R + r * cos(v)) * cos(u), (R + r * cos(v)) * sin(u), r * sin(v));
    }
#define TU_TI(i, j) (1 + ((i) % nu) * nv + ((j) % nv))
  for (int i = 0; i < nu; i++)
    for (int j = 0; j < nv; j++) {
      tu_printf(&b, "f %d %d %d\n", TU_TI(i, j), TU_TI(i + 1, j), TU_TI(i + 1, j + 1));
      tu_printf(&b, "f %d %d %d\n", TU_TI(i, j), TU_TI(i + 1, j + 1), TU_TI(i, j + 1));
    }
#undef TU_TI
  *len = b.n;
  return b.s;
}

char *ce_test_obj_lblock(double h, size_t *len) {
  static const double P[6][2] = {{0, 0}, {2, 0}, {2, 1}, {1, 1}, {1, 2}, {0, 2}};
  static const int fan[4][3] = {{4, 5, 6}, {4, 6, 1}, {4, 1, 2}, {4, 2, 3}};
  tu_sbuf b = {0, 0, 0};
  for (int k = 0; k < 2; k++)
    for (int i = 0; i < 6; i++) tu_printf(&b, "v %g %g %.17g\n", P[i][0], P[i][1], k * h);
  for (int f = 0; f < 4; f++) {
    tu_printf(&b, "f %d %d %d\n", fan[f][0] + 6, fan[f][1] + 6, fan[f][2] + 6);
    tu_printf(&b, "f %d %d %d\n", fan[f][0], fan[f][2], fan[f][1]);
  }
  for (int i = 0; i < 6; i++) {
    int a = i + 1, c = (i + 1) % 6 + 1;
    tu_printf(&b, "f %d %d %d %d\n", a, c, c + 6, a + 6);
  }
  *len = b.n;
  return b.s;
}

ce_geometry *ce_test_shape(ce_shape_type type, ce_compliance c, double radius, ce_vec3 size, double hint) {
  ce_shape sh;
  memset(&sh, 0, sizeof sh);
  sh.type = type;
  sh.radius = radius;
  sh.size = size;
  sh.length = 0.1;
  ce_props pr = ce_test_props(c, c == CE_COMPLIANT ? 1e6 : 0, hint);
  ce_geometry *g = NULL;
  ce_error err;
  if (ce_geometry_from_shape(&sh, &pr, &g, &err) != CE_OK) {
    fprintf(stderr, "ce_test_shape: %s\n", err.message);
    return NULL;
  }
  return g;
}

static int cmp_key(const void *x, const void *y) {
  const int64_t *a = x, *b = y;
  return *a < *b ? -1 : (*a > *b);
}

int64_t *ce_test_face_keys(const ce_builder *b) {
  int64_t nf = b->elem_m.len;
  int64_t *k = malloc(sizeof(int64_t) * (size_t)(nf + 1));
  if (!k) return NULL;
  for (int64_t f = 0; f < nf; f++)
    k[f] = ((int64_t)((const int32_t *)b->elem_m.data)[f] << 32) | (uint32_t)((const int32_t *)b->elem_n.data)[f];
  if (nf > 0) qsort(k, (size_t)nf, sizeof *k, cmp_key);
  return k;
}

double ce_test_builder_area(const ce_builder *b) {
  const int32_t *off = b->face_off.data, *fv = b->face_vert.data;
  const ce_vec3 *v = b->v.data, *nrm = b->normal.data;
  double a = 0;
  for (int64_t f = 0; f < b->normal.len; f++) {
    ce_vec3 s = ce_v3(0, 0, 0), x0 = v[fv[off[f]]];
    for (int k = off[f] + 1; k + 1 < off[f + 1]; k++)
      s = ce_add(s, ce_cross(ce_sub(v[fv[k]], x0), ce_sub(v[fv[k + 1]], x0)));
    a += 0.5 * ce_dot(s, nrm[f]);
  }
  return a;
}

void ce_test_tet_adjacency(ce_tetmesh *m) {
  if (!m->adj) m->adj = malloc(sizeof *m->adj * (size_t)(m->nt > 0 ? m->nt : 1));
  cr_assert_not_null(m->adj);
  for (int32_t t = 0; t < m->nt; t++)
    for (int i = 0; i < 4; i++) {
      m->adj[t][i] = -1;
      /* face opposite i: the other three vertices */
      for (int32_t u = 0; u < m->nt; u++) {
        if (u == t) continue;
        int shared = 0;
        for (int j = 0; j < 4; j++) {
          if (j == i) continue;
          for (int l = 0; l < 4; l++) shared += m->tet[u][l] == m->tet[t][j];
        }
        if (shared == 3) m->adj[t][i] = u;
      }
    }
}

void ce_test_kuhn_cube(int N, double jitter, uint64_t seed, double **v, int32_t *nv, int32_t **t, int32_t *nt) {
  static const int perm[6][3] = {{0, 1, 2}, {0, 2, 1}, {1, 0, 2}, {1, 2, 0}, {2, 0, 1}, {2, 1, 0}};
  *nv = (N + 1) * (N + 1) * (N + 1);
  *nt = 6 * N * N * N;
  *v = malloc((size_t)*nv * 3 * sizeof **v);
  *t = malloc((size_t)*nt * 4 * sizeof **t);
  for (int k = 0; k <= N; k++)
    for (int j = 0; j <= N; j++)
      for (int i = 0; i <= N; i++) {
        int id = i + (N + 1) * (j + (N + 1) * k);
        int interior = i > 0 && i < N && j > 0 && j < N && k > 0 && k < N;
        double *x = *v + 3 * id;
        x[0] = (double)i / N + (interior ? jitter * (2 * ce_test_rand(&seed) - 1) : 0);
        x[1] = (double)j / N + (interior ? jitter * (2 * ce_test_rand(&seed) - 1) : 0);
        x[2] = (double)k / N + (interior ? jitter * (2 * ce_test_rand(&seed) - 1) : 0);
      }
  int m = 0;
  for (int k = 0; k < N; k++)
    for (int j = 0; j < N; j++)
      for (int i = 0; i < N; i++)
        for (int q = 0; q < 6; q++) {
          int c[3] = {i, j, k};
          int32_t *ids = *t + 4 * m++;
          ids[0] = i + (N + 1) * (j + (N + 1) * k);
          for (int r = 0; r < 3; r++) {
            c[perm[q][r]]++;
            ids[r + 1] = c[0] + (N + 1) * (c[1] + (N + 1) * c[2]);
          }
          if (q == 1 || q == 2 || q == 5) { /* odd permutations are negatively oriented */
            int32_t s = ids[1];
            ids[1] = ids[2];
            ids[2] = s;
          }
        }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

int64_t ce_test_euler(int64_t nv, int64_t nf, const int32_t *off, const int32_t *fv, int64_t *bad) {
  const int64_t nh = nf > 0 ? off[nf] : 0;
  uint64_t *h = malloc(sizeof *h * (size_t)(nh + 1));
  cr_assert_not_null(h);
  for (int64_t f = 0, q = 0; f < nf; f++)
    for (int32_t k = off[f]; k < off[f + 1]; k++) {
      uint32_t a = (uint32_t)fv[k], b = (uint32_t)fv[k + 1 < off[f + 1] ? k + 1 : off[f]];
      h[q++] = (uint64_t)a << 32 | b;
    }
  qsort(h, (size_t)nh, sizeof *h, cmp_u64);
  int64_t twinned = 0, repeats = 0;
  for (int64_t q = 0; q < nh; q++) {
    if (q > 0 && h[q] == h[q - 1]) repeats++;
    uint64_t rev = h[q] << 32 | h[q] >> 32;
    twinned += bsearch(&rev, h, (size_t)nh, sizeof *h, cmp_u64) != NULL;
  }
  free(h);
  if (bad) *bad = repeats;
  /* a twinned half-edge shares its edge with its twin: edges = (half-edges
   * + untwinned ones) / 2 */
  return nv - (nh + (nh - twinned)) / 2 + nf;
}

ce_counters ce_test_compare_traced(ce_test_intersector all, ce_test_intersector traced, const ce_geometry *m,
                                   const ce_geometry *n, const ce_pose *X, ce_arena *arena, const char *what) {
  ce_arena_reset(arena);
  ce_builder b1, b2;
  cr_assert_eq(ce_builder_init(&b1, arena), CE_OK);
  cr_assert_eq(ce_builder_init(&b2, arena), CE_OK);
  ce_counters c1 = {0, 0, 0}, c2 = {0, 0, 0};
  cr_assert_eq(all(m, n, X, &b1, &c1), CE_OK);
  cr_assert_eq(traced(m, n, X, &b2, &c2), CE_OK);
  cr_assert_eq(c1.polygons, c2.polygons, "%s: %lld polygons from all pairs, %lld traced", what,
               (long long)c1.polygons, (long long)c2.polygons);
  cr_assert_eq(c1.faces_dropped, c2.faces_dropped, "%s: dropped %lld vs %lld", what, (long long)c1.faces_dropped,
               (long long)c2.faces_dropped);
  double a1 = ce_test_builder_area(&b1), a2 = ce_test_builder_area(&b2);
  cr_assert(fabs(a1 - a2) <= 1e-12 * fabs(a1) + 1e-18, "%s: area %.17g vs %.17g", what, a1, a2);
  int64_t nf = b1.normal.len;
  int64_t *k1 = ce_test_face_keys(&b1), *k2 = ce_test_face_keys(&b2);
  cr_assert(nf == 0 || memcmp(k1, k2, sizeof(int64_t) * (size_t)nf) == 0, "%s: different source pairs", what);
  free(k1);
  free(k2);
  return c1;
}

void ce_test_fibonacci_sphere(int32_t n, double R, ce_vec3 c, double *out) {
  for (int32_t k = 0; k < n; k++) {
    const double z = 1 - (2 * k + 1.0) / n, r = sqrt(1 - z * z), a = 2.399963229728653 * k; /* golden angle */
    out[3 * k] = c.x + R * r * cos(a);
    out[3 * k + 1] = c.y + R * r * sin(a);
    out[3 * k + 2] = c.z + R * z;
  }
}

int ce_test_stop_at(void *user, double f, const char *stage) {
  ce_test_stopper *s = user;
  cr_assert_str_eq(stage, "geometry");
  cr_assert(f >= s->last && f <= 1, "fraction %.17g after %.17g", f, s->last);
  if (s->k > 0 && s->calls >= s->k) s->after_stop++;
  s->calls++;
  s->last = f;
  return s->k > 0 && s->calls == s->k;
}

char *ce_test_read_data(const char *name, size_t *len) {
  char path[1024];
  const char *f = __FILE__;
  const char *slash = strrchr(f, '/');
  int dir = slash ? (int)(slash - f) : 0;
  snprintf(path, sizeof path, "%.*s%sdata/%s", dir, f, slash ? "/" : "", name);
  FILE *fp = fopen(path, "rb");
  cr_assert(fp, "cannot open %s", path);
  fseek(fp, 0, SEEK_END);
  long n = ftell(fp);
  fseek(fp, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  cr_assert(b);
  cr_assert_eq(fread(b, 1, (size_t)n, fp), (size_t)n);
  fclose(fp);
  b[n] = 0;
  *len = (size_t)n;
  return b;
}
