/* ce_face_contact.c — one compliant point contact per contact-surface face, the
 * velocity-level approximation of Masterjohn et al. 2022 (§IV).
 *
 * For face f with area A, centroid c, normal n (out of B into A) and
 * centroid pressure p0, each compliant side's pressure changes along the
 * normal at the rate
 *   gA =  grad_a . n   (A's pressure grows going into A, i.e. along +n)
 *   gB = -grad_b . n   (B's pressure grows going into B, along -n)
 * A rigid side has g = +inf. If the bodies approach by a distance delta
 * along n, the equal-pressure surface moves so that both pressures rise by
 * the same amount, g delta with the series combination
 *   g = gA gB / (gA + gB)      (g = gA if B is rigid, gB if A is rigid),
 * so the face behaves as a linear spring of stiffness k = g A whose force
 * vanishes at the signed distance phi0 = -p0/g (negative in contact).
 * Faces where a compliant side's g <= 0 (the field does not increase into
 * that body along the normal) have no such spring: they are excluded and
 * counted in r->face_contacts_excluded. Faces of zero area carry no stiffness and
 * are skipped without being counted. */
#include <math.h>

#include "ce_arena.h"
#include "ce_passes.h"

ce_errno ce_face_contacts_compute(const ce_surface *s, ce_arena *arena, ce_result *r) {
  r->nface_contacts = 0;
  r->face_contacts = NULL;
  r->face_contacts_excluded = 0;
  int32_t nf = s ? s->nf : 0;
  if (nf <= 0) return CE_OK;
  ce_face_contact *pts = ce_arena_calloc(arena, (size_t)nf, sizeof *pts);
  if (!pts) return CE_ENOMEM;
  int32_t np = 0, excluded = 0;
  for (int32_t f = 0; f < nf; f++) {
    ce_vec3 n = s->normal[f];
    double gA = s->grad_a ? ce_dot(s->grad_a[f], n) : INFINITY;
    double gB = s->grad_b ? -ce_dot(s->grad_b[f], n) : INFINITY;
    if (!(gA > 0) || !(gB > 0)) { /* also catches NaN */
      excluded++;
      continue;
    }
    double g;
    if (isinf(gA) && isinf(gB)) {
      excluded++; /* two rigid sides: no stiffness to speak of */
      continue;
    } else if (isinf(gA)) {
      g = gB;
    } else if (isinf(gB)) {
      g = gA;
    } else {
      g = gA * gB / (gA + gB);
    }
    double A = s->area[f];
    if (!(A > 0)) continue;
    ce_face_contact *pc = &pts[np++];
    pc->face = f;
    pc->position = s->centroid[f];
    pc->normal = n;
    pc->area = A;
    pc->pressure = s->centroid_pressure[f];
    pc->g = g;
    pc->stiffness = g * A;
    pc->phi0 = -pc->pressure / g;
  }
  r->face_contacts = pts;
  r->nface_contacts = np;
  r->face_contacts_excluded = excluded;
  return CE_OK;
}
