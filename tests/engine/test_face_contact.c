/* test_face_contact.c — per-face point contacts (Masterjohn et al. 2022, §IV) on hand-built
 * surfaces: the series combination of the gradients, exclusion of faces
 * whose compliant side's gradient does not point into it, k and phi0. */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "ce_test_util.h"

#define NF 6

typedef struct psurf {
  ce_surface s;
  int32_t off[NF + 1];
  ce_vec3 n[NF], c[NF], ga[NF], gb[NF];
  double area[NF], cp[NF];
} psurf;

/* Faces without vertices: the point pass only reads per-face data. */
static void ps_init(psurf *p, int nf) {
  memset(p, 0, sizeof *p);
  p->s.nf = nf;
  p->s.face_offsets = p->off;
  p->s.normal = p->n;
  p->s.centroid = p->c;
  p->s.area = p->area;
  p->s.centroid_pressure = p->cp;
  p->s.grad_a = p->ga;
  p->s.grad_b = p->gb;
}

Test(point, series_gradient_stiffness_and_distance) {
  psurf p;
  ps_init(&p, 1);
  ce_vec3 n = ce_normalize(ce_v3(1, 2, 2)); /* (1,2,2)/3 */
  p.n[0] = n;
  p.c[0] = ce_v3(0.1, -0.2, 0.3);
  p.area[0] = 2e-4;
  p.cp[0] = 3e4;
  /* gA = grad_a . n = 2e6, gB = -grad_b . n = 3e6, plus tangential parts */
  p.ga[0] = ce_add(ce_scale(n, 2e6), ce_v3(0, 1e5, -1e5));    /* (0,1,-1) is orthogonal to n */
  p.gb[0] = ce_add(ce_scale(n, -3e6), ce_v3(2e5, -1e5, 0)); /* (2,-1,0) too */
  ce_arena *ar = ce_arena_create(4096);
  ce_result r;
  memset(&r, 0, sizeof r);
  cr_assert_eq(ce_face_contacts_compute(&p.s, ar, &r), CE_OK);
  cr_assert_eq(r.nface_contacts, 1);
  cr_assert_eq(r.face_contacts_excluded, 0);
  const ce_face_contact *q = &r.face_contacts[0];
  double g = 2e6 * 3e6 / 5e6; /* 1.2e6 */
  cr_assert_eq(q->face, 0);
  cr_assert(fabs(q->g - g) < 1e-9 * g, "g %.17g", q->g);
  cr_assert(fabs(q->stiffness - g * 2e-4) < 1e-9 * g * 2e-4);
  cr_assert(fabs(q->phi0 - (-3e4 / g)) < 1e-12, "phi0 %.17g", q->phi0);
  cr_assert(q->phi0 < 0);
  cr_assert(fabs(q->pressure - 3e4) == 0 && q->area == 2e-4);
  cr_assert(ce_norm(ce_sub(q->position, p.c[0])) == 0 && ce_norm(ce_sub(q->normal, n)) == 0);
  ce_arena_destroy(ar);
}

Test(point, rigid_side_uses_the_other_gradient) {
  for (int side = 0; side < 2; side++) {
    psurf p;
    ps_init(&p, 1);
    p.n[0] = ce_v3(0, 0, 1);
    p.area[0] = 1e-3;
    p.cp[0] = 5e3;
    if (side == 0) { /* B rigid */
      p.ga[0] = ce_v3(0, 0, 4e5);
      p.s.grad_b = NULL;
    } else { /* A rigid */
      p.gb[0] = ce_v3(1e4, 0, -4e5);
      p.s.grad_a = NULL;
    }
    ce_arena *ar = ce_arena_create(4096);
    ce_result r;
    memset(&r, 0, sizeof r);
    cr_assert_eq(ce_face_contacts_compute(&p.s, ar, &r), CE_OK);
    cr_assert_eq(r.nface_contacts, 1);
    cr_assert(fabs(r.face_contacts[0].g - 4e5) < 1e-9 * 4e5);
    cr_assert(fabs(r.face_contacts[0].stiffness - 400) < 1e-9 * 400);
    cr_assert(fabs(r.face_contacts[0].phi0 + 5e3 / 4e5) < 1e-15);
    ce_arena_destroy(ar);
  }
}

/* Faces 1 (gA < 0), 2 (gB = 0: gradient tangential) and 4 (gB < 0) are
 * excluded and counted; face 3 has zero area: skipped, not
 * counted; faces 0 and 5 survive, in face order. */
Test(point, exclusion_counting) {
  psurf p;
  ps_init(&p, 6);
  for (int f = 0; f < 6; f++) {
    p.n[f] = ce_v3(0, 1, 0);
    p.area[f] = 1e-4 * (f + 1);
    p.cp[f] = 100.0 * (f + 1);
    p.ga[f] = ce_v3(0, 1e6, 0);
    p.gb[f] = ce_v3(0, -1e6, 0);
  }
  p.ga[1] = ce_v3(0, -1, 0);
  p.gb[2] = ce_v3(5, 0, 0);
  p.area[3] = 0;
  p.gb[4] = ce_v3(0, 2, 0);
  ce_arena *ar = ce_arena_create(4096);
  ce_result r;
  memset(&r, 0, sizeof r);
  cr_assert_eq(ce_face_contacts_compute(&p.s, ar, &r), CE_OK);
  cr_assert_eq(r.face_contacts_excluded, 3);
  cr_assert_eq(r.nface_contacts, 2);
  cr_assert_eq(r.face_contacts[0].face, 0);
  cr_assert_eq(r.face_contacts[1].face, 5);
  cr_assert(fabs(r.face_contacts[1].g - 5e5) < 1e-9 * 5e5);
  cr_assert(fabs(r.face_contacts[1].stiffness - 5e5 * 6e-4) < 1e-9 * 300);
  cr_assert(fabs(r.face_contacts[1].phi0 + 600 / 5e5) < 1e-15);
  ce_arena_destroy(ar);
}

Test(point, empty_surface) {
  psurf p;
  ps_init(&p, 0);
  ce_arena *ar = ce_arena_create(4096);
  ce_result r;
  memset(&r, 0, sizeof r);
  r.nface_contacts = 7;
  cr_assert_eq(ce_face_contacts_compute(&p.s, ar, &r), CE_OK);
  cr_assert_eq(r.nface_contacts, 0);
  cr_assert_eq(r.face_contacts_excluded, 0);
  ce_arena_destroy(ar);
}
