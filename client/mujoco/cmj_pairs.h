/* cmj_pairs.h — which mapped geoms MuJoCo would collide (internal to
 * contactd_mujoco). */
#ifndef CMJ_PAIRS_H
#define CMJ_PAIRS_H

#include "cmj.h"

/* MuJoCo's dynamic-pair rule (mj_collision with its default filter): 1 when
 * geoms g1 and g2 would be collided, 0 when their bodies are welded
 * together, one body is the other's parent (unless mjDSBL_FILTERPARENT, or
 * either is welded to the world), an <exclude> names the body pair, or
 * neither contype matches the other's conaffinity. */
int cmj_pairs_dynamic(const mjModel *m, int g1, int g2);

/* The saved <pair> list of a model, for restoring. */
typedef struct cmj_pairs_saved {
  int npair;
  void *block; /* copies of the pair_* arrays */
} cmj_pairs_saved;

/* The pairs of mapped geoms (is_mapped[g] != 0) MuJoCo would collide under
 * m->opt.collision: dynamic pairs (g1 < g2) and the <pair> elements between
 * mapped geoms, each once. The <pair> elements between mapped geoms are
 * taken out of m's pair list (the rest keep their order), the original
 * list saved in *saved. *out (malloc'd, 2 geom ids each) and *n; 0, or -1
 * when out of memory. */
int cmj_pairs_find(mjModel *m, const char *is_mapped, int (**out)[2], int *n, cmj_pairs_saved *saved);
/* Put the saved pair list back and free it. */
void cmj_pairs_restore(mjModel *m, cmj_pairs_saved *saved);

#endif
