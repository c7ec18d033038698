/* ctl_query.c — contactctl query: contact of a scene, as a table or JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

const char *const QUERY_HELP =
    "usage: contactctl query SCENE.json|- [--json] [--detail wrench|patches|surface] [--energy]\n"
    "                         [--jacobian] [--reduce K]\n"
    "\n"
    "Register the scene's geometries, compute contact for its bodies and pairs, and\n"
    "print per pair: status, area, the wrench on A (about A's origin), the net\n"
    "normal force and the equivalent contact point of each patch. `-` reads the\n"
    "scene from stdin. The scene format is described in client/README.md.\n"
    "\n"
    "  --json          print the results as JSON\n"
    "  --detail LEVEL  override the scene's options.detail\n"
    "  --energy        also the strain energy of each pair and patch (J)\n"
    "  --jacobian      also the wrench Jacobians: d wrench_a / d (pose, velocity) of\n"
    "                  A and of B, four 6x6 matrices (rows torque, force; columns\n"
    "                  rotation, translation or angular, linear velocity; world frame)\n"
    "  --reduce K      also at most K point contacts per patch (1 to 64) whose forces\n"
    "                  and moments add up to the patch's: position, force on A,\n"
    "                  stiffness k and separation phi (k (-phi) = elastic force)\n";

static void print_vec(const Contactd__V1__Vec3 *v) {
  printf("(%11.4e, %11.4e, %11.4e)", v ? v->x : 0, v ? v->y : 0, v ? v->z : 0);
}

/* The four matrices, rows (torque x, y, z, force x, y, z). */
static void print_jacobian(const Contactd__V1__WrenchJacobian *j) {
  if (j->unavailable && j->unavailable[0]) {
    printf("  jacobian unavailable: %s\n", j->unavailable);
    return;
  }
  static const char *const cols[2] = {"rx, ry, rz [rad], px, py, pz [m]", "wx, wy, wz [rad/s], vx, vy, vz [m/s]"};
  const double *m[4];
  size_t n[4];
  ctl_jac_mats(j, m, n);
  for (int k = 0; k < 4; k++) {
    if (n[k] != 36) continue;
    printf("  %s  (rows tx, ty, tz [N m], fx, fy, fz [N]; columns %s)\n", CTL_JAC_NAMES[k], cols[k / 2]);
    for (int i = 0; i < 6; i++) {
      printf("   ");
      for (int c = 0; c < 6; c++) printf(" %12.5e", m[k][6 * i + c]);
      printf("\n");
    }
  }
}

static void print_table(const cc_scene *s, const Contactd__V1__ContactReply *rep, double rtt) {
  char sb[64];
  for (size_t i = 0; i < rep->n_results; i++) {
    const Contactd__V1__PairResult *r = rep->results[i];
    printf("pair %s (%u) / %s (%u): %s", cc_scene_body_name(s, r->a), r->a, cc_scene_body_name(s, r->b), r->b,
           ctl_status_name(r->status, sb, sizeof sb));
    if (r->status == CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE)
      printf(", %d faces, area %.6e m^2", r->total ? r->total->faces : 0, r->area);
    if (r->penetration) printf(", depth %.6e m", r->penetration->depth);
    if (r->speculative)
      printf(", separation %.6e m, stiffness at touch %.6e N/m", r->speculative->separation,
             r->speculative->stiffness);
    printf(", %llu us\n", (unsigned long long)r->compute_time_us);
    if (r->energy != CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_UNSPECIFIED)
      printf("  strain energy     [J]    %.6e (%s)\n", r->strain_energy, ctl_energy_name((int)r->energy));
    if (r->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_SURFACE &&
        r->status != CONTACTD__V1__CONTACT_STATUS__CONTACT_STATUS_POINT)
      continue;
    printf("  force on A        [N]    ");
    print_vec(r->wrench_a ? r->wrench_a->force : NULL);
    printf("\n  torque on A @A    [N m]  ");
    print_vec(r->wrench_a ? r->wrench_a->torque : NULL);
    printf("\n  torque on A @ctr  [N m]  ");
    print_vec(r->wrench_a_centroid ? r->wrench_a_centroid->torque : NULL);
    printf("\n  centroid          [m]    ");
    print_vec(r->centroid);
    if (r->total) {
      printf("\n  |normal force|    [N]    %.6e\n  equivalent point  [m]    ", r->total->normal_force_magnitude);
      print_vec(r->total->point);
    }
    printf("\n");
    for (size_t k = 0; k < r->n_patches; k++) {
      const Contactd__V1__Patch *p = r->patches[k];
      printf("  patch %-3zu %5d faces  area %.4e m^2  |Fn| %.4e N  point ", k, p->faces, p->area,
             p->normal_force_magnitude);
      print_vec(p->point);
      if (r->energy != CONTACTD__V1__ENERGY_STATUS__ENERGY_STATUS_UNSPECIFIED) printf("  U %.4e J", p->strain_energy);
      printf("\n");
    }
    if (r->n_point_contacts)
      printf("  %zu point contacts (%d faces excluded)\n", r->n_point_contacts, r->points_excluded);
    for (size_t k = 0; k < r->n_reduced_contacts; k++) {
      const Contactd__V1__ReducedContact *p = r->reduced_contacts[k];
      printf("  reduced %-3zu patch %-3d point ", k, p->patch);
      print_vec(p->position);
      printf("  force ");
      print_vec(p->force);
      printf("  k %.4e N/m  phi %.4e m\n", p->stiffness, p->separation);
    }
    if (r->jacobian) print_jacobian(r->jacobian);
  }
  printf("%zu pairs, server %llu us, round trip %.3f ms\n", rep->n_results,
         (unsigned long long)rep->compute_time_us, rtt * 1e3);
}

static int parse_detail(const char *v, int *d) {
  static const char *const dets[] = {"default", "wrench", "patches", "surface"};
  for (int i = 0; i < 4; i++)
    if (strcmp(v, dets[i]) == 0) {
      *d = i;
      return 0;
    }
  return -1;
}

int cmd_query(int argc, char **argv, common *co) {
  const char *path = NULL;
  int detail = -1, energy = 0, jacobian = 0, reduce = 0;
  for (int i = 0; i < argc; i++) {
    int r = ctl_common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(QUERY_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(argv[i], "--detail") == 0 && i + 1 < argc) {
      if (parse_detail(argv[++i], &detail)) return ctl_usage("query: --detail \"%s\" is not wrench, patches or surface", argv[i]);
      continue;
    }
    if (strcmp(argv[i], "--energy") == 0) {
      energy = 1;
      continue;
    }
    if (strcmp(argv[i], "--reduce") == 0 && i + 1 < argc) {
      char *end;
      long k = strtol(argv[++i], &end, 10);
      if (*end || end == argv[i] || k < 1 || k > 64)
        return ctl_usage("query: --reduce \"%s\" is not an integer in [1, 64]", argv[i]);
      reduce = (int)k;
      continue;
    }
    if (strcmp(argv[i], "--jacobian") == 0) {
      jacobian = 1;
      continue;
    }
    if ((argv[i][0] != '-' || strcmp(argv[i], "-") == 0) && !path) {
      path = argv[i];
      continue;
    }
    return ctl_usage("query: unexpected argument \"%s\"", argv[i]);
  }
  if (!path) return ctl_usage("query: missing SCENE.json (or - for stdin)%s", "");
  cc_scene s;
  cc_client *c;
  int rc = ctl_scene_setup(path, co, &s, &c);
  if (rc) return rc;
  if (detail >= 0) s.options.detail = (Contactd__V1__Detail)detail;
  if (energy) s.options.want_energy = 1;
  if (jacobian) s.options.want_jacobian = 1;
  if (reduce) s.options.reduced_contacts = (uint32_t)reduce;
  cc_scene_msgs m;
  if (cc_scene_msgs_build(&s, NULL, NULL, 0, &m)) {
    fprintf(stderr, "contactctl: out of memory\n");
    cc_close(c);
    cc_scene_free(&s);
    return EX_INPUT;
  }
  Contactd__V1__ContactReply *rep;
  cc_error e;
  double t0 = ctl_now_s();
  rc = cc_query(c, &m.query, &rep, &e);
  double rtt = ctl_now_s() - t0;
  if (rc) {
    rc = ctl_report("query", &e);
  } else {
    if (co->json) {
      cJSON *o = cJSON_CreateObject();
      cJSON *ps = cJSON_AddArrayToObject(o, "pairs");
      for (size_t i = 0; i < rep->n_results; i++) cJSON_AddItemToArray(ps, ctl_jpair(&s, rep->results[i]));
      ctl_jadd(o, "compute_time_us", (double)rep->compute_time_us);
      ctl_jadd(o, "candidate_pairs", (double)rep->candidate_pairs);
      ctl_jadd(o, "round_trip_us", rtt * 1e6);
      ctl_print_json(o);
    } else {
      print_table(&s, rep, rtt);
    }
    cc_free(rep);
  }
  cc_scene_msgs_free(&m);
  cc_close(c);
  cc_scene_free(&s);
  return rc;
}
