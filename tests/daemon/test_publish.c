/* test_publish.c — the table of published scenes (cd_publish.c): names,
 * versions, the result of the query started last wins, the least recently
 * published scene is forgotten when full, the notify hook; a pair's copy
 * fans polygons into triangles; scenes kept per tenant and read through
 * a visibility filter; the HTTP port's flags and config keys. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cd_config.h"
#include "cd_publish.h"

static cd_pub_snap *snap(const char *scene, uint64_t started) {
  cd_pub_snap *s = cd_publish_snap_new(scene, 1, 0, calloc(1, sizeof(cd_pub_pair *)));
  cr_assert_not_null(s);
  s->started_ns = started;
  return s;
}

Test(publish, scene_names) {
  cr_assert(cd_publish_name_ok("ball_on-floor.2"));
  cr_assert(!cd_publish_name_ok(""));
  cr_assert(!cd_publish_name_ok("a/b"));
  cr_assert(!cd_publish_name_ok("a b"));
  cr_assert(!cd_publish_name_ok("%41"));
  char n[CD_PUB_NAME_MAX + 2];
  memset(n, 'x', sizeof n);
  n[CD_PUB_NAME_MAX] = 0;
  cr_assert(cd_publish_name_ok(n));
  n[CD_PUB_NAME_MAX] = 'x';
  n[CD_PUB_NAME_MAX + 1] = 0;
  cr_assert(!cd_publish_name_ok(n));
}

static int notified;
static void on_notify(void *arg) { *(int *)arg += 1; }

Test(publish, latest_started_wins_and_versions_count) {
  cd_publish *t = cd_publish_create(4);
  cd_publish_set_notify(t, on_notify, &notified);
  notified = 0;
  cr_assert_null(cd_publish_get(t, "a", NULL, NULL));
  cd_publish_put(t, snap("a", 10));
  cd_publish_put(t, snap("a", 30));
  cd_publish_put(t, snap("a", 20)); /* finished after, started before: dropped */
  cd_pub_snap *s = cd_publish_get(t, "a", NULL, NULL);
  cr_assert_not_null(s);
  cr_assert_eq(s->started_ns, 30);
  cr_assert_eq(s->version, 2);
  cr_assert_eq(notified, 2);
  cd_publish_put(t, snap("a", 40)); /* s stays valid while referenced */
  cr_assert_eq(s->started_ns, 30);
  cd_publish_snap_unref(s);
  size_t n;
  char *j = cd_publish_list_json(t, &n, NULL, NULL);
  cr_assert_str_eq(j, "{\"scenes\":[{\"name\":\"a\",\"tenant\":\"\",\"version\":3,\"bodies\":1,\"pairs\":0}]}\n");
  cr_assert_eq(n, strlen(j));
  free(j);
  cd_publish_set_notify(t, NULL, NULL);
  cd_publish_put(t, snap("a", 50));
  cr_assert_eq(notified, 3, "no hook once removed");
  cd_publish_destroy(t);
}

static cd_pub_snap *tsnap(const char *tenant, const char *scene, uint64_t started, const char *geometry) {
  cd_pub_snap *s = snap(scene, started);
  snprintf(s->tenant, sizeof s->tenant, "%s", tenant);
  snprintf(s->bodies[0].geometry, sizeof s->bodies[0].geometry, "%s", geometry);
  return s;
}

/* A filter that sees one tenant (arg), or every tenant when arg is "*". */
static int sees(const char *tenant, const void *arg) {
  return strcmp(arg, "*") == 0 || strcmp(tenant, arg) == 0;
}

Test(publish, scenes_are_kept_per_tenant) {
  cd_publish *t = cd_publish_create(8);
  cd_publish_put(t, tsnap("lab-a", "s", 1, "ga"));
  cd_publish_put(t, tsnap("lab-b", "s", 2, "gb"));
  cd_publish_put(t, tsnap("lab-b", "only-b", 3, "gb"));
  /* the later publication of another tenant did not replace lab-a's */
  cd_pub_snap *a = cd_publish_get(t, "s", sees, "lab-a"), *b = cd_publish_get(t, "s", sees, "lab-b");
  cr_assert(a && b && a != b);
  cr_assert_str_eq(a->tenant, "lab-a");
  cr_assert_eq(a->version, 1);
  cr_assert_str_eq(b->bodies[0].geometry, "gb");
  cd_publish_snap_unref(a);
  cd_publish_snap_unref(b);
  cr_assert_null(cd_publish_get(t, "only-b", sees, "lab-a"));
  /* every tenant: of two scenes named s, the one published last */
  cd_pub_snap *any = cd_publish_get(t, "s", sees, "*");
  cr_assert_str_eq(any->tenant, "lab-b");
  cd_publish_snap_unref(any);
  size_t n;
  char *j = cd_publish_list_json(t, &n, sees, "lab-a");
  cr_assert_str_eq(j, "{\"scenes\":[{\"name\":\"s\",\"tenant\":\"lab-a\",\"version\":1,\"bodies\":1,\"pairs\":0}]}\n");
  free(j);
  cr_assert(cd_publish_shows_geometry(t, "ga", sees, "lab-a"));
  cr_assert(!cd_publish_shows_geometry(t, "gb", sees, "lab-a"));
  cr_assert(cd_publish_shows_geometry(t, "gb", NULL, NULL));
  cd_publish_destroy(t);
}

Test(publish, full_table_forgets_the_least_recently_published) {
  cd_publish *t = cd_publish_create(2);
  cd_publish_put(t, snap("a", 1));
  cd_publish_put(t, snap("b", 2));
  cd_publish_put(t, snap("a", 3)); /* a is now the most recent */
  cd_publish_put(t, snap("c", 4)); /* forgets b */
  cd_pub_snap *a = cd_publish_get(t, "a", NULL, NULL), *b = cd_publish_get(t, "b", NULL, NULL);
  cd_pub_snap *c = cd_publish_get(t, "c", NULL, NULL);
  cr_assert_not_null(a);
  cr_assert_null(b);
  cr_assert_not_null(c);
  cr_assert_eq(c->version, 1);
  cd_publish_snap_unref(a);
  cd_publish_snap_unref(c);
  cd_publish_destroy(t);
}

Test(publish, pair_copy_fans_polygons) {
  /* a quad and a triangle sharing an edge, pressures 0..4 */
  ce_vec3 v[5] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {2, 0, 0}};
  double p[5] = {0, 1, 2, 3, 4};
  int32_t off[3] = {0, 4, 7}, fv[7] = {0, 1, 2, 3, 1, 4, 2}, patch[2] = {0, 1};
  ce_result r;
  memset(&r, 0, sizeof r);
  r.status = CE_CONTACT_SURFACE;
  r.wrench_a.force = (ce_vec3){1, 2, 3};
  r.total.point = (ce_vec3){0.5, 0.5, 0};
  r.total.faces = 2;
  r.area = 1.5;
  r.surface = (ce_surface){.nv = 5, .nf = 2, .vertices = v, .pressure = p, .face_offsets = off,
                           .face_vertices = fv, .patch = patch};
  cd_pub_pair *q = cd_publish_pair_new(7, 9, &r, NULL);
  cr_assert_not_null(q);
  cr_assert_eq(q->a, 7);
  cr_assert_eq(q->faces, 2);
  cr_assert_eq(q->ntri, 3);
  int32_t want[9] = {0, 1, 2, 0, 2, 3, 1, 4, 2};
  cr_assert_arr_eq(q->tri, want, sizeof want);
  cr_assert_eq(q->tri_patch[0], 0);
  cr_assert_eq(q->tri_patch[2], 1);
  cr_assert_float_eq(q->p[4], 4.0f, 0);
  cr_assert_float_eq(q->force[2], 3.0, 0);
  cr_assert_eq(q->has_energy, 0);
  cd_publish_pair_free(q);
}

static int parse(cd_config *c, const char **argv, char *err) {
  int argc = 0;
  while (argv[argc]) argc++;
  cd_config_default(c);
  return cd_config_from_args(c, argc, (char **)argv, err, 256);
}

Test(publish, http_port_flags_and_keys) {
  cd_config c;
  char err[256];
  const char *a1[] = {"contactd", "--http-port", "9000", NULL};
  cr_assert_eq(parse(&c, a1, err), 0);
  cr_assert_eq(c.http_port, 9000);
  cr_assert_str_eq(c.http_address, "127.0.0.1", "loopback unless configured");
  const char *a2[] = {"contactd", "--metrics-port", "9001", "--http-address", "::1", NULL};
  cr_assert_eq(parse(&c, a2, err), 0);
  cr_assert_eq(c.http_port, 9001);
  cr_assert_str_eq(c.http_address, "::1");
  const char *a3[] = {"contactd", "--http-address", "localhost", NULL};
  cr_assert_eq(parse(&c, a3, err), -1);
  cr_assert_not_null(strstr(err, "--http-address"), "%s", err);
  const char *a4[] = {"contactd", "--http-port", "70000", NULL};
  cr_assert_eq(parse(&c, a4, err), -1);
  cr_assert_not_null(strstr(err, "--http-port"), "%s", err);
  cd_config_default(&c);
  cr_assert_eq(cd_config_apply_json(&c, "{\"http_port\": 5, \"http_address\": \"0.0.0.0\"}", err, 256), 0, "%s", err);
  cr_assert_eq(c.http_port, 5);
  cr_assert_str_eq(c.http_address, "0.0.0.0");
  cr_assert_eq(cd_config_apply_json(&c, "{\"metrics_port\": 6}", err, 256), 0, "%s", err);
  cr_assert_eq(c.http_port, 6);
  cr_assert_eq(cd_config_apply_json(&c, "{\"http_address\": 5}", err, 256), -1);
  cr_assert_not_null(strstr(err, "http_address must be a string"), "%s", err);
  cr_assert_eq(cd_config_apply_json(&c, "{\"limits\": {\"viewer_max_rate_hz\": 0}}", err, 256), -1);
  cr_assert_not_null(strstr(err, "viewer_max_rate_hz"), "%s", err);
}
