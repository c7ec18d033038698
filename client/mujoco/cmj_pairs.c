/* cmj_pairs.c — MuJoCo's collision filtering, reproduced for the mapped
 * geoms, and the removal of their <pair> elements from the model.
 *
 * MuJoCo 2.2 calls mjcb_contactfilter only for dynamic pairs (those the
 * broad phase finds); an explicit <pair> is collided whatever the filter
 * says. So dynamic pairs between mapped geoms are switched off by the
 * filter (cmj.c) and explicit ones by taking them out of m->pair_*. */
#include <stdlib.h>
#include <string.h>

#include "cmj_pairs.h"

int cmj_pairs_dynamic(const mjModel *m, int g1, int g2) {
  int b1 = m->geom_bodyid[g1], b2 = m->geom_bodyid[g2];
  int w1 = m->body_weldid[b1], w2 = m->body_weldid[b2];
  if (w1 == w2) return 0;
  if (!(m->opt.disableflags & mjDSBL_FILTERPARENT) && w1 != 0 && w2 != 0) {
    int p1 = m->body_weldid[m->body_parentid[w1]], p2 = m->body_weldid[m->body_parentid[w2]];
    if (w1 == p2 || w2 == p1) return 0;
  }
  int lo = b1 < b2 ? b1 : b2, hi = b1 < b2 ? b2 : b1;
  int sig = ((lo + 1) << 16) + hi + 1;
  for (int i = 0; i < m->nexclude; i++)
    if (m->exclude_signature[i] == sig) return 0;
  int ct1 = m->geom_contype[g1], ca1 = m->geom_conaffinity[g1];
  int ct2 = m->geom_contype[g2], ca2 = m->geom_conaffinity[g2];
  return (ct1 & ca2) || (ct2 & ca1);
}

/* The pair_* arrays: pointer, element size, elements per pair. */
typedef struct field {
  void *p;
  size_t size, per;
} field;

static int fields(mjModel *m, field f[9]) {
  field all[9] = {
      {m->pair_dim, sizeof(int), 1},           {m->pair_geom1, sizeof(int), 1},
      {m->pair_geom2, sizeof(int), 1},         {m->pair_signature, sizeof(int), 1},
      {m->pair_solref, sizeof(mjtNum), mjNREF}, {m->pair_solimp, sizeof(mjtNum), mjNIMP},
      {m->pair_margin, sizeof(mjtNum), 1},     {m->pair_gap, sizeof(mjtNum), 1},
      {m->pair_friction, sizeof(mjtNum), 5},
  };
  memcpy(f, all, sizeof all);
  return 9;
}

static int save(mjModel *m, cmj_pairs_saved *s) {
  field f[9];
  int nf = fields(m, f);
  size_t bytes = 0;
  for (int i = 0; i < nf; i++) bytes += f[i].size * f[i].per * (size_t)m->npair;
  s->npair = m->npair;
  s->block = malloc(bytes ? bytes : 1);
  if (!s->block) return -1;
  char *b = s->block;
  for (int i = 0; i < nf; i++) {
    size_t k = f[i].size * f[i].per * (size_t)m->npair;
    if (k) memcpy(b, f[i].p, k);
    b += k;
  }
  return 0;
}

void cmj_pairs_restore(mjModel *m, cmj_pairs_saved *s) {
  if (!s->block) return;
  field f[9];
  int nf = fields(m, f);
  m->npair = s->npair;
  const char *b = s->block;
  for (int i = 0; i < nf; i++) {
    size_t k = f[i].size * f[i].per * (size_t)m->npair;
    if (k) memcpy(f[i].p, b, k);
    b += k;
  }
  free(s->block);
  s->block = NULL;
}

/* Drop pair i of m's list, keeping the order of the rest. */
static void drop_pair(mjModel *m, int i) {
  field f[9];
  int nf = fields(m, f);
  for (int j = 0; j < nf; j++) {
    size_t e = f[j].size * f[j].per;
    char *p = f[j].p;
    memmove(p + e * (size_t)i, p + e * (size_t)(i + 1), e * (size_t)(m->npair - i - 1));
  }
  m->npair--;
}

static int add(int (**out)[2], int *n, int *cap, int g1, int g2) {
  for (int i = 0; i < *n; i++)
    if (((*out)[i][0] == g1 && (*out)[i][1] == g2) || ((*out)[i][0] == g2 && (*out)[i][1] == g1)) return 0;
  if (*n == *cap) {
    int c = *cap ? 2 * *cap : 16;
    int(*p)[2] = realloc(*out, (size_t)c * sizeof *p);
    if (!p) return -1;
    *out = p;
    *cap = c;
  }
  (*out)[*n][0] = g1;
  (*out)[*n][1] = g2;
  (*n)++;
  return 0;
}

int cmj_pairs_find(mjModel *m, const char *is_mapped, int (**out)[2], int *n, cmj_pairs_saved *saved) {
  int cap = 0;
  *out = NULL;
  *n = 0;
  memset(saved, 0, sizeof *saved);
  if (save(m, saved)) return -1;
  int use_pairs = m->opt.collision != mjCOL_DYNAMIC, use_dynamic = m->opt.collision != mjCOL_PAIR;
  for (int i = 0; i < m->npair;) {
    int g1 = m->pair_geom1[i], g2 = m->pair_geom2[i];
    if (!is_mapped[g1] || !is_mapped[g2]) {
      i++;
      continue;
    }
    if (use_pairs && add(out, n, &cap, g1, g2)) return -1;
    drop_pair(m, i);
  }
  for (int g1 = 0; use_dynamic && g1 < m->ngeom; g1++)
    for (int g2 = g1 + 1; is_mapped[g1] && g2 < m->ngeom; g2++)
      if (is_mapped[g2] && cmj_pairs_dynamic(m, g1, g2) && add(out, n, &cap, g1, g2)) return -1;
  return 0;
}
