/* test_cd_units.c — the daemon's pieces in isolation: SHA-256 against FIPS
 * vectors, geometry ids (canonical, parameter-sensitive), the cache
 * (waiters, references, pins, LRU eviction within the budget), the broad
 * phase, mesh file parsers, the config file, the reply-size estimate and
 * the worker pool's result polling. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <uv.h>

#include "cd_broadphase.h"
#include "cd_cache.h"
#include "cd_config.h"
#include "cd_fmt.h"
#include "cd_geomspec.h"
#include "cd_hash.h"
#include "cd_log.h"
#include "cd_meshfile.h"
#include "cd_pool.h"
#include "cd_query.h"

static void sha_hex(const char *s, size_t n, char out[65]) {
  cd_sha256 h;
  cd_hash_sha256_init(&h);
  cd_hash_sha256_update(&h, s, n);
  uint8_t d[32];
  cd_hash_sha256_final(&h, d);
  cd_hash_hex(d, out);
}

Test(hash, fips_180_vectors) {
  char out[65];
  sha_hex("abc", 3, out);
  cr_expect_str_eq(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  sha_hex("", 0, out);
  cr_expect_str_eq(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  sha_hex(m, strlen(m), out);
  cr_expect_str_eq(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  /* fed in odd pieces: same digest */
  cd_sha256 h;
  cd_hash_sha256_init(&h);
  for (size_t i = 0; i < strlen(m); i += 7) cd_hash_sha256_update(&h, m + i, strlen(m) - i < 7 ? strlen(m) - i : 7);
  uint8_t d[32];
  cd_hash_sha256_final(&h, d);
  cd_hash_hex(d, out);
  cr_expect_str_eq(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* FIPS 180-2's long vector through cd_hash_sha256_update (the fastest
 * compression this CPU has); and each implementation on its own: the
 * portable one on the padded "abc" block, the SHA-extensions one (where the
 * CPU has it) against the portable one on 64 KiB of pseudo-random blocks. */
Test(hash, million_a_and_each_implementation) {
  char *a = malloc(1000000), out[65];
  memset(a, 'a', 1000000);
  sha_hex(a, 1000000, out);
  cr_expect_str_eq(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  free(a);
  static const uint32_t H0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  uint8_t abc[64] = {'a', 'b', 'c', 0x80};
  abc[63] = 24; /* the message length in bits, big-endian */
  uint32_t h[8];
  memcpy(h, H0, sizeof h);
  cr_assert_eq(cd_hash_sha256_blocks_with(CD_SHA256_PORTABLE, h, abc, 1), 0);
  cr_expect_eq(h[0], 0xba7816bfu);
  cr_expect_eq(h[7], 0xf20015adu);
  uint8_t *r = malloc(65536);
  uint64_t x = 88172645463325252ull;
  for (size_t i = 0; i < 65536; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    r[i] = (uint8_t)(x >> 24);
  }
  uint32_t hp[8], hn[8];
  memcpy(hp, H0, sizeof hp);
  memcpy(hn, H0, sizeof hn);
  cd_hash_sha256_blocks_with(CD_SHA256_PORTABLE, hp, r, 1024);
  if (cd_hash_sha256_blocks_with(CD_SHA256_SHANI, hn, r, 1024) == 0)
    cr_expect_arr_eq(hn, hp, sizeof hp, "SHA extensions and portable C agree");
  else
    cr_log_info("this CPU has no SHA extensions: only the portable compression was checked");
  free(r);
}

/* The bulk double encoder hashes exactly what one call per value would:
 * -0 folded into 0, every NaN into one, across its 4 KiB chunks. */
Test(hash, bulk_doubles_hash_like_one_by_one) {
  enum { N = 1500 };
  double *v = malloc(N * sizeof *v);
  for (int i = 0; i < N; i++) v[i] = (i % 7 == 0) ? -0.0 : (i % 11 == 0) ? -NAN : (i - 700) * 1e-3 + 1e-310 * i;
  v[3] = INFINITY;
  cd_sha256 a, b;
  cd_hash_sha256_init(&a);
  cd_hash_sha256_init(&b);
  for (int i = 0; i < N; i++) cd_hash_sha256_f64(&a, v[i]);
  cd_hash_sha256_f64s(&b, v, N);
  uint8_t da[32], db[32];
  cd_hash_sha256_final(&a, da);
  cd_hash_sha256_final(&b, db);
  cr_expect_arr_eq(da, db, 32);
  for (int i = 0; i < N; i++) v[i] = v[i] == 0 ? 0.0 : isnan(v[i]) ? NAN : v[i];
  cd_hash_sha256_init(&b);
  cd_hash_sha256_f64s(&b, v, N);
  cd_hash_sha256_final(&b, db);
  cr_expect_arr_eq(da, db, 32, "-0 and 0, and any two NaNs, hash alike");
  free(v);
}

static void sphere_msg(Contactd__V1__RegisterGeometry *r, Contactd__V1__Sphere *s, double radius, double E) {
  contactd__v1__register_geometry__init(r);
  contactd__v1__sphere__init(s);
  s->radius = radius;
  r->shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_SPHERE;
  r->sphere = s;
  r->compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_COMPLIANT;
  r->modulus = E;
  r->resolution_hint = 0.05;
}

Test(geomspec, ids_depend_on_content_not_on_names) {
  Contactd__V1__RegisterGeometry a, b;
  Contactd__V1__Sphere sa, sb;
  sphere_msg(&a, &sa, 0.1, 1e6);
  sphere_msg(&b, &sb, 0.1, 1e6);
  b.name = "a label";
  b.want_progress = 1;
  char ia[65], ib[65];
  cd_geomspec_id(&a, ia);
  cd_geomspec_id(&b, ib);
  cr_expect_str_eq(ia, ib, "names and progress do not change the id");
  sb.radius = -0.0 + 0.1000000001;
  cd_geomspec_id(&b, ib);
  cr_expect_str_neq(ia, ib, "the radius does");
  sb.radius = 0.1;
  b.modulus = 2e6;
  cd_geomspec_id(&b, ib);
  cr_expect_str_neq(ia, ib, "the modulus does");
  b.modulus = 1e6;
  Contactd__V1__Material m = CONTACTD__V1__MATERIAL__INIT;
  m.friction = 0.5;
  b.material = &m;
  cd_geomspec_id(&b, ib);
  cr_expect_str_neq(ia, ib, "the material does");
  /* a rigid geometry ignores the modulus */
  a.compliance = b.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  b.material = NULL;
  b.modulus = 5;
  a.modulus = 7;
  cd_geomspec_id(&a, ia);
  cd_geomspec_id(&b, ib);
  cr_expect_str_eq(ia, ib);
}

Test(geomspec, checks_name_the_field) {
  cd_limits l;
  cd_limits_default(&l);
  cd_status st;
  Contactd__V1__RegisterGeometry r;
  Contactd__V1__Sphere s;
  sphere_msg(&r, &s, -1, 1e6);
  cr_expect_eq(cd_geomspec_check(&r, &l, &st), CD_INVALID);
  cr_expect_str_eq(st.field, "registerGeometry.sphere.radius");
  sphere_msg(&r, &s, 0.1, 0);
  cr_expect_eq(cd_geomspec_check(&r, &l, &st), CD_INVALID);
  cr_expect_str_eq(st.field, "registerGeometry.modulus");
  sphere_msg(&r, &s, 0.1, 5e-324); /* subnormal: its default point stiffness would be 0 */
  cr_expect_eq(cd_geomspec_check(&r, &l, &st), CD_INVALID);
  cr_expect_str_eq(st.field, "registerGeometry.modulus");
  cr_expect(strstr(st.message, "not subnormal"), "%s", st.message);
  sphere_msg(&r, &s, 1.0, 1e6);
  r.resolution_hint = 1e-5; /* ~8e15 elements */
  cr_expect_eq(cd_geomspec_check(&r, &l, &st), CD_EXHAUSTED);
  cr_expect(strstr(st.message, "max_mesh_elements"), "%s", st.message);
  Contactd__V1__TetMesh m = CONTACTD__V1__TET_MESH__INIT;
  double v[7] = {0};
  m.n_vertices = 7;
  m.vertices = v;
  r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TET_MESH;
  r.tet_mesh = &m;
  cr_expect_eq(cd_geomspec_check(&r, &l, &st), CD_INVALID);
  cr_expect(strstr(st.message, "not a multiple of 3"), "%s", st.message);
  /* too many convex pieces is a limit (RESOURCE_EXHAUSTED), not a bad argument */
  Contactd__V1__TriMesh t = CONTACTD__V1__TRI_MESH__INIT;
  double tv[9] = {0, 0, 0, 1, 0, 0, 0, 1, 0};
  int32_t tt[3] = {0, 1, 2};
  t.n_vertices = 9;
  t.vertices = tv;
  t.n_triangles = 3;
  t.triangles = tt;
  t.n_convex_pieces = (size_t)l.max_mesh_elements + 1;
  r.shape_case = CONTACTD__V1__REGISTER_GEOMETRY__SHAPE_TRI_MESH;
  r.tri_mesh = &t;
  r.compliance = CONTACTD__V1__COMPLIANCE__COMPLIANCE_RIGID;
  cr_expect_eq(cd_geomspec_check(&r, &l, &st), CD_EXHAUSTED);
  cr_expect_str_eq(st.field, "registerGeometry.triMesh.convexPieces");
}

/* ---- cache ---------------------------------------------------------- */

static ce_geometry *halfspace(void) {
  ce_shape s = {0};
  s.type = CE_SHAPE_HALFSPACE;
  ce_props p = {0};
  p.compliance = CE_RIGID;
  p.modulus = INFINITY;
  p.hint = 1;
  ce_geometry *g = NULL;
  cr_assert_eq(ce_geometry_from_shape(&s, &p, &g, NULL), CE_OK);
  return g;
}

typedef struct seen {
  int calls, code;
  cd_cache_entry *e;
} seen;

static void waiter(void *arg, cd_cache_entry *e, int code, const char *msg) {
  (void)msg;
  seen *s = arg;
  s->calls++;
  s->code = code;
  s->e = code ? NULL : e;
  if (!code) cd_cache_ref(e);
}

Test(cache, one_build_many_waiters) {
  cd_cache *c = cd_cache_create(1 << 20);
  cd_cache_entry *e = cd_cache_begin(c, "aa", 1.0);
  cr_expect_eq(cd_cache_find(c, "aa"), e);
  seen a = {0}, b = {0};
  cd_cache_add_waiter(e, waiter, &a);
  cd_cache_add_waiter(e, waiter, &b);
  cd_cache_complete(c, e, halfspace(), 5, 0, NULL);
  cr_expect_eq(a.calls, 1);
  cr_expect_eq(b.calls, 1);
  cr_expect_eq(a.code, 0);
  cr_expect_eq(e->state, CD_ENTRY_READY);
  cr_expect_eq(e->refs, 2);
  cd_cache_stats st;
  cd_cache_get_stats(c, &st);
  cr_expect_eq(st.builds, 1);
  cr_expect_eq(st.entries, 1);
  cr_expect_gt(st.bytes, 0);
  cd_cache_destroy(c);
}

Test(cache, failed_build_tells_every_waiter_and_leaves_nothing) {
  cd_cache *c = cd_cache_create(1 << 20);
  cd_cache_entry *e = cd_cache_begin(c, "bb", 1.0);
  seen a = {0}, b = {0};
  cd_cache_add_waiter(e, waiter, &a);
  cd_cache_add_waiter(e, waiter, &b);
  cd_cache_complete(c, e, NULL, 0, 3, "tet 4 is inverted");
  cr_expect_eq(a.code, 3);
  cr_expect_eq(b.code, 3);
  cr_expect_null(cd_cache_find(c, "bb"));
  cd_cache_stats st;
  cd_cache_get_stats(c, &st);
  cr_expect_eq(st.entries, 0);
  cr_expect_eq(st.failures, 1);
  cd_cache_destroy(c);
}

/* What one half-space geometry counts in the cache's budget. */
static uint64_t halfspace_bytes(void) {
  ce_geometry *probe = halfspace();
  ce_geometry_info gi;
  ce_geometry_get_info(probe, &gi);
  ce_geometry_free(probe);
  return gi.bytes;
}

/* A READY entry for id that nobody references. */
static cd_cache_entry *add_ready(cd_cache *c, const char *id) {
  cd_cache_entry *e = cd_cache_begin(c, id, 1.0);
  cr_assert_not_null(e);
  cd_cache_complete(c, e, halfspace(), 1, 0, NULL);
  return e;
}

Test(cache, lru_eviction_spares_referenced_and_pinned_entries) {
  const uint64_t bytes = halfspace_bytes();
  cd_cache *c = cd_cache_create(3 * bytes); /* room for three */
  const char *ids[4] = {"01", "02", "03", "04"};
  cd_cache_entry *e[4];
  for (int i = 0; i < 3; i++) e[i] = add_ready(c, ids[i]);
  cd_cache_ref(e[0]); /* a session holds 01 */
  cd_cache_pin(e[1]); /* a query uses 02 */
  cd_cache_find(c, "03");
  /* a fourth entry: the only evictable one (03) goes, though used last */
  e[3] = add_ready(c, ids[3]);
  cr_expect_not_null(cd_cache_find(c, "01"));
  cr_expect_not_null(cd_cache_find(c, "02"));
  cr_expect_null(cd_cache_find(c, "03"));
  cr_expect_not_null(cd_cache_find(c, "04"));
  cd_cache_stats st;
  cd_cache_get_stats(c, &st);
  cr_expect_eq(st.evictions, 1);
  cr_expect_eq(st.entries, 3);
  cr_expect_leq(st.bytes, 3 * bytes);
  /* dropping the reference and the pin does not evict while within budget */
  cd_cache_unref(e[0]);
  cd_cache_unpin(e[1]);
  cd_cache_get_stats(c, &st);
  cr_expect_eq(st.entries, 3);
  cd_cache_destroy(c);
}

Test(cache, eviction_takes_the_least_recently_used_first) {
  const uint64_t bytes = halfspace_bytes();
  cd_cache *c = cd_cache_create(3 * bytes); /* room for three */
  const char *ids[5] = {"01", "02", "03", "04", "05"};
  cd_cache_entry *e[5];
  for (int i = 0; i < 3; i++) e[i] = add_ready(c, ids[i]);
  /* a lookup makes 01 the most recent: 02 goes first */
  cr_assert_not_null(cd_cache_find(c, "01"));
  e[3] = add_ready(c, ids[3]);
  cr_expect_null(cd_cache_find(c, "02"));
  /* a query using 03 (pinned, then released) makes it the most recent, and
   * the lookups above left 01 before 04: 01 goes next */
  cd_cache_pin(e[2]);
  cd_cache_unpin(e[2]);
  e[4] = add_ready(c, ids[4]);
  cr_expect_null(cd_cache_find(c, "01"));
  cr_expect_not_null(cd_cache_find(c, "03"));
  cr_expect_not_null(cd_cache_find(c, "04"));
  cr_expect_not_null(cd_cache_find(c, "05"));
  cd_cache_stats st;
  cd_cache_get_stats(c, &st);
  cr_expect_eq(st.evictions, 2);
  cr_expect_eq(st.entries, 3);
  cd_cache_destroy(c);
}

Test(cache, many_entries_evict_in_insertion_order) {
  const uint64_t bytes = halfspace_bytes();
  enum { KEEP = 5000, ALL = 12000 };
  cd_cache *c = cd_cache_create((uint64_t)KEEP * bytes);
  char id[16];
  for (int i = 0; i < ALL; i++) {
    snprintf(id, sizeof id, "%08x", (unsigned)i * 2654435761u); /* spread over the buckets */
    add_ready(c, id);
  }
  cd_cache_stats st;
  cd_cache_get_stats(c, &st);
  cr_expect_eq(st.entries, KEEP);
  cr_expect_eq(st.evictions, ALL - KEEP);
  for (int i = 0; i < ALL; i++) {
    snprintf(id, sizeof id, "%08x", (unsigned)i * 2654435761u);
    if (i < ALL - KEEP) cr_expect_null(cd_cache_find(c, id), "entry %d should be gone", i);
    else cr_expect_not_null(cd_cache_find(c, id), "entry %d should be kept", i);
  }
  cd_cache_destroy(c);
}

/* ---- broad phase ------------------------------------------------------ */

Test(broadphase, spheres_filters_exclusions_half_spaces) {
  cd_cache_entry ball = {0}, ground = {0};
  ball.bound_radius = 0.5;
  ground.bound_radius = INFINITY;
  cd_qbody b[5];
  memset(b, 0, sizeof b);
  double x[4] = {0, 0.9, 1.8, 5.0};
  for (int i = 0; i < 4; i++) {
    b[i].id = 10 - (uint32_t)i; /* ids descend, so pairs must be re-ordered */
    b[i].entry = &ball;
    b[i].body.X_WB = (ce_pose){{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}, {x[i], 0, 1.0}};
    b[i].group = b[i].mask = 0xffffffffu;
  }
  b[4].id = 1;
  b[4].entry = &ground;
  b[4].body.X_WB = (ce_pose){{{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}}}, {0, 0, 0.6}};
  b[4].group = b[4].mask = 0xffffffffu;
  cd_qpair *out;
  int64_t n;
  cd_status st;
  cr_assert_eq(cd_broadphase(b, 5, 0, NULL, 0, 100, "q", &out, &n, &st), 0);
  /* 10-9, 9-8 overlap; every ball's sphere reaches below z = 0.6 */
  cr_assert_eq(n, 6);
  uint32_t want[6][2] = {{1, 7}, {1, 8}, {1, 9}, {1, 10}, {8, 9}, {9, 10}};
  for (int i = 0; i < 6; i++) {
    cr_expect_eq(b[out[i].a].id, want[i][0], "pair %d", i);
    cr_expect_eq(b[out[i].b].id, want[i][1], "pair %d", i);
  }
  free(out);
  /* filters: ball 9 collides with nobody; exclusions drop 1-10 */
  b[1].mask = 0;
  cd_qpair ex = {4, 0, 0};
  cr_assert_eq(cd_broadphase(b, 5, 0, &ex, 1, 100, "q", &out, &n, &st), 0);
  cr_expect_eq(n, 2); /* 1-7, 1-8 */
  free(out);
  /* limit */
  b[1].mask = 0xffffffffu;
  cr_expect_eq(cd_broadphase(b, 5, 0, NULL, 0, 3, "q", &out, &n, &st), CD_EXHAUSTED);
  cr_expect(strstr(st.message, "max_pairs_per_query"));
}

/* ---- mesh files -------------------------------------------------------- */

Test(query, body_index_finds_ids_in_any_order) {
  cd_qbody b[4];
  memset(b, 0, sizeof b);
  uint32_t ids[4] = {70, 3, 4000000000u, 9};
  for (int i = 0; i < 4; i++) b[i].id = ids[i];
  cd_qindex x;
  cr_assert_eq(cd_qparse_index_build(&x, b, 4), 0);
  for (int i = 0; i < 4; i++) cr_expect_eq(cd_qparse_index_find(&x, ids[i]), i, "id %u", ids[i]);
  cr_expect_eq(cd_qparse_index_find(&x, 8), -1);
  cr_expect_eq(cd_qparse_index_find(&x, 0), -1);
  cd_qparse_index_free(&x);
  cr_assert_eq(cd_qparse_index_build(&x, b, 0), 0);
  cr_expect_eq(cd_qparse_index_find(&x, 3), -1, "empty index");
  cd_qparse_index_free(&x);
}

Test(meshfile, obj_stl_vtk) {
  cd_mesh m;
  cd_status st;
  const char *obj = "# tetrahedron\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 2 3 4\nf 1 4/1/1 3\n";
  cr_assert_eq(cd_meshfile_parse((const uint8_t *)obj, strlen(obj), 0, "t.obj", 1000, &m, &st), 0, "%s",
               st.message);
  cr_expect_eq(m.nv, 4);
  cr_expect_eq(m.ne, 4);
  cr_expect_eq(m.per_element, 3);
  cr_expect_eq(m.elements[1], 2);
  cd_meshfile_free(&m);
  const char *stl = "solid t\nfacet normal 0 0 -1\nouter loop\nvertex 0 0 0\nvertex 0 1 0\nvertex 1 0 0\nendloop\n"
                    "endfacet\nfacet normal 0 -1 0\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 0 1\nendloop\n"
                    "endfacet\nendsolid t\n";
  cr_assert_eq(cd_meshfile_parse((const uint8_t *)stl, strlen(stl), 0, "t.stl", 1000, &m, &st), 0, "%s",
               st.message);
  cr_expect_eq(m.ne, 2);
  cr_expect_eq(m.nv, 4, "corners shared by facets are welded");
  cd_meshfile_free(&m);
  const char *vtk = "# vtk DataFile Version 3.0\ntet\nASCII\nDATASET UNSTRUCTURED_GRID\nPOINTS 4 double\n"
                    "0 0 0 1 0 0\n0 1 0 0 0 1\nCELLS 1 5\n4 0 1 2 3\nCELL_TYPES 1\n10\n";
  cr_assert_eq(cd_meshfile_parse((const uint8_t *)vtk, strlen(vtk), 0, "t.vtk", 1000, &m, &st), 0, "%s",
               st.message);
  cr_expect_eq(m.per_element, 4);
  cr_expect_eq(m.nv, 4);
  cr_expect_eq(m.ne, 1);
  cd_meshfile_free(&m);
  const char *bad = "v 0 0 0\nf 1 2 3\n";
  cr_expect_eq(cd_meshfile_parse((const uint8_t *)bad, strlen(bad), 1, "bad.obj", 1000, &m, &st), CD_INVALID);
  cr_expect(strstr(st.message, "bad.obj: OBJ line 2"), "%s", st.message);
  /* PLY, named or found by its magic line: UNIMPLEMENTED, said in words */
  const char *ply = "ply\nformat ascii 1.0\nelement vertex 3\n";
  cr_expect_eq(cd_meshfile_parse((const uint8_t *)ply, strlen(ply), CONTACTD__V1__MESH_FORMAT__MESH_FORMAT_PLY, "m.ply",
                                 1000, &m, &st),
               CD_UNIMPLEMENTED);
  cr_expect(strstr(st.message, "m.ply: PLY files are not supported"), "%s", st.message);
  cr_expect_eq(cd_meshfile_parse((const uint8_t *)ply, strlen(ply), 0, "m.ply", 1000, &m, &st), CD_UNIMPLEMENTED);
  cr_expect(strstr(st.message, "m.ply: PLY files are not supported"), "%s", st.message);
}

/* ---- log ---------------------------------------------------------------- */

/* A quoted value is valid UTF-8 whatever it quotes: client bytes (a binary
 * mesh file's token in an error) and a character cut by the buffer's end
 * become '?'; valid text passes unchanged. */
Test(log, quote_is_valid_utf8) {
  char q[64];
  cr_expect_str_eq(cd_log_quote(q, sizeof q, "found '$Eo\xD7\x8E\xFF\x80x'"), "\"found '$Eo\xD7\x8E??x'\"");
  cr_expect_str_eq(cd_log_quote(q, sizeof q, "caf\xC3\xA9 \"q\""), "\"caf\xC3\xA9 \\\"q\\\"\"");
  cr_expect_str_eq(cd_log_quote(q, 9, "abcd\xC3\xA9"), "\"abcd?\"", "a character cut at the end");
}

/* ---- config ------------------------------------------------------------ */

Test(config, json_overrides_defaults_and_rejects_typos) {
  cd_config c;
  cd_config_default(&c);
  char err[256];
  cr_assert_eq(cd_config_apply_json(&c, "{\"_c\":1,\"listen\":\"[::1]:9000\",\"workers\":3,"
                                        "\"limits\":{\"cache_bytes\":1000,\"_x\":\"y\"}}",
                                    err, sizeof err),
               0, "%s", err);
  cr_expect_str_eq(c.listen, "[::1]:9000");
  cr_expect_eq(c.workers, 3);
  cr_expect_eq(c.limits.cache_bytes, 1000);
  cr_expect_eq(c.limits.max_frame_bytes, 256u << 20, "untouched limits keep their defaults");
  char host[64];
  int port;
  cr_expect_eq(cd_config_split_hostport(c.listen, host, sizeof host, &port), 0);
  cr_expect_str_eq(host, "::1");
  cr_expect_eq(port, 9000);
  cr_expect_eq(cd_config_apply_json(&c, "{\"workers\": 0}", err, sizeof err), -1);
  cr_expect_eq(cd_config_apply_json(&c, "{\"limits\": {\"max_frame_bytes\": -1}}", err, sizeof err), -1);
  cr_expect_eq(cd_config_apply_json(&c, "{\"listn\": \"x\"}", err, sizeof err), -1);
  cr_expect(strstr(err, "unknown key \"listn\""), "%s", err);
  cr_expect_eq(cd_config_apply_json(&c, "{", err, sizeof err), -1);
}

/* Every way a config file or a flag can be wrong is refused with a message
 * that names the key or flag and what it must be; nothing half-applied is
 * used (cd_main exits with it). */
Test(config, each_bad_setting_is_named) {
  static const struct {
    const char *json, *needle;
  } bad_json[] = {
      {"[1, 2]", "the top level must be an object"},
      {"{\"listen\": 7411}", "listen must be a string"},
      {"{\"listen\": \"localhost\"}", "\"localhost\" is not HOST:PORT"},
      {"{\"listen\": \"[::1]7411\"}", "is not HOST:PORT"},
      {"{\"listen\": \"h:70000\"}", "is not HOST:PORT"},
      {"{\"unix\": false}", "unix must be a string"},
      {"{\"log_level\": \"loud\"}", "log_level \"loud\" is not debug, info, warn or error"},
      {"{\"workers\": \"2\"}", "workers must be a number"},
      {"{\"workers\": 1.5}", "workers must be an integer in [1, 1024]"},
      {"{\"workers\": 2000}", "workers must be an integer in [1, 1024]"},
      {"{\"metrics_port\": -2}", "metrics_port must be -1 (off) or a port"},
      {"{\"shutdown_grace_s\": 4000}", "shutdown_grace_s must be in [0, 3600]"},
      {"{\"limits\": 5}", "limits must be an object"},
      {"{\"limits\": {\"cache_bytes\": \"1G\"}}", "limits.cache_bytes must be a non-negative integer (bytes)"},
      {"{\"limits\": {\"cache_bytes\": 1.5}}", "limits.cache_bytes must be a non-negative integer"},
      {"{\"limits\": {\"cache_bytes\": 1e300}}", "limits.cache_bytes must be a non-negative integer"},
      {"{\"limits\": {\"cache_byte\": 1}}", "unknown key limits.cache_byte"},
      {"{\"limits\": {\"max_frame_bytes\": 15}}", "limits.max_frame_bytes is 15; it must be at least 16"},
      {"{\"limits\": {\"max_bodies_per_query\": 0}}", "limits.max_bodies_per_query is 0; it must be at least 1"},
      {"{\"limits\": {\"max_pairs_per_query\": 0}}", "limits.max_pairs_per_query is 0; it must be at least 1"},
      {"{\"limits\": {\"max_inflight_per_conn\": 0}}", "limits.max_inflight_per_conn is 0"},
      {"{\"limits\": {\"max_connections\": 0}}", "limits.max_connections is 0"},
      {"{\"limits\": {\"cache_bytes\": 0}}", "limits.cache_bytes is 0; it must be at least 1"},
      {"{\"limits\": {\"max_mesh_elements\": 0}}", "limits.max_mesh_elements is 0"},
      {"{\"limits\": {\"pairs_per_job\": 0}}", "limits.pairs_per_job is 0"},
      {"{\"limits\": {\"max_frame_bytes\": 1000, \"request_memory_bytes\": 999}}",
       "limits.request_memory_bytes (999) must be 0 (no limit) or at least limits.max_frame_bytes (1000)"},
      {"{\"limits\": {\"cache_bytes\": 1}", "invalid JSON"},
  };
  char err[512];
  for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
    cd_config c;
    cd_config_default(&c);
    err[0] = 0;
    cr_expect_eq(cd_config_apply_json(&c, bad_json[i].json, err, sizeof err), -1, "%s is refused", bad_json[i].json);
    cr_expect(strstr(err, bad_json[i].needle), "%s: \"%s\" names \"%s\"", bad_json[i].json, err, bad_json[i].needle);
  }
  /* zeros that mean something are taken as such */
  cd_config c;
  cd_config_default(&c);
  cr_expect_eq(cd_config_apply_json(&c,
                                    "{\"limits\": {\"max_reply_bytes\": 0, \"idle_timeout_ms\": 0, "
                                    "\"max_streams_per_conn\": 0, \"request_memory_bytes\": 0, \"build_workers\": 0}}",
                                    err, sizeof err),
               0, "%s", err);
  cr_expect_eq(c.limits.max_reply_bytes, 0);
  cr_expect_eq(c.limits.max_streams_per_conn, 0);

  static const struct {
    const char *argv[4], *needle;
  } bad_args[] = {
      {{"contactd", "--workers", "0", NULL}, "--workers: \"0\" is not an integer in [1, 1024]"},
      {{"contactd", "--workers", "2x", NULL}, "--workers: \"2x\" is not an integer"},
      {{"contactd", "--metrics-port", "65536", NULL}, "--metrics-port: \"65536\" is not -1 or a port"},
      {{"contactd", "--log-level", "loud", NULL}, "--log-level: \"loud\" is not debug, info, warn or error"},
      {{"contactd", "--listen", "nohost", NULL}, "--listen: \"nohost\" is not HOST:PORT"},
      {{"contactd", "--verbose", "1", NULL}, "unknown flag: --verbose"},
      {{"contactd", "--workers", NULL, NULL}, "unknown flag or missing value: --workers"},
      {{"contactd", "--config", NULL, NULL}, "--config needs a FILE"},
      {{"contactd", "--config", "/nonexistent/contactd.json", NULL}, "cannot open /nonexistent/contactd.json"},
      {{"contactd", "--config", "/", NULL}, "cannot read /: Is a directory"},
  };
  for (size_t i = 0; i < sizeof bad_args / sizeof bad_args[0]; i++) {
    int argc = 0;
    while (bad_args[i].argv[argc]) argc++;
    cd_config_default(&c);
    cr_expect_eq(cd_config_from_args(&c, argc, (char **)bad_args[i].argv, err, sizeof err), -1, "%s %s is refused",
                 bad_args[i].argv[1], bad_args[i].argv[2] ? bad_args[i].argv[2] : "");
    cr_expect(strstr(err, bad_args[i].needle), "\"%s\" names \"%s\"", err, bad_args[i].needle);
  }
}

/* max_reply_bytes reserves cd_reply_estimate() before converting a pair, so
 * the estimate must cover what cd_reply_convert() takes (it is exact). */
Test(reply, estimate_matches_what_conversion_allocates) {
  ce_vec3 vtx[5] = {{0, 0, 0}, {1, 0, 0}, {1, 1, 0}, {0, 1, 0}, {2, 0, 0}};
  double pv[5] = {1, 2, 3, 4, 5};
  int32_t off[3] = {0, 4, 7}, fv[7] = {0, 1, 2, 3, 1, 4, 2};
  ce_vec3 nrm[2] = {{0, 0, 1}, {0, 0, 1}}, cen[2] = {{0.5, 0.5, 0}, {1.3, 0.3, 0}};
  double area[2] = {1, 0.5}, cp[2] = {2.5, 3};
  int32_t patch_of[2] = {0, 1};
  ce_patch patches[2];
  memset(patches, 0, sizeof patches);
  ce_face_contact pts[3];
  memset(pts, 0, sizeof pts);
  ce_result r;
  memset(&r, 0, sizeof r);
  r.status = CE_CONTACT_SURFACE;
  r.model = CE_MODEL_HYDROELASTIC;
  r.surface = (ce_surface){.nv = 5, .nf = 2, .vertices = vtx, .pressure = pv, .face_offsets = off,
                           .face_vertices = fv, .normal = nrm, .area = area, .centroid = cen,
                           .centroid_pressure = cp, .patch = patch_of};
  r.npatches = 2;
  r.patches = patches;
  r.nface_contacts = 3;
  r.face_contacts = pts;
  for (int mask = 0; mask < 16; mask++) {
    ce_options o;
    ce_options_default(&o);
    o.want_surface = mask & 1;
    o.want_patches = (mask >> 1) & 1;
    o.want_face_contacts = (mask >> 2) & 1;
    r.model = mask & 8 ? CE_MODEL_POINT : CE_MODEL_HYDROELASTIC;
    r.status = mask & 8 ? CE_CONTACT_POINT : CE_CONTACT_SURFACE;
    cd_budget b;
    cd_budget_init(&b, 0);
    size_t est = cd_reply_estimate(&r, &o);
    Contactd__V1__PairResult *m = cd_reply_convert(&b, &o, 7, 9, &r, 3);
    cr_assert(m);
    cr_expect_eq(b.used, est, "options %d: converted %zu bytes, estimated %zu", mask, b.used, est);
    cr_expect_eq(m->a, 7);
    cr_expect_eq(m->surface != NULL, (mask & 1) != 0);
    cr_expect_eq(m->penetration != NULL, (mask & 8) != 0);
    cd_budget_destroy(&b);
    /* A budget one allocation short fails cleanly. */
    cd_budget_init(&b, est / 2);
    cr_expect_null(cd_reply_convert(&b, &o, 7, 9, &r, 3));
    cr_expect(cd_budget_exhausted(&b));
    cd_budget_destroy(&b);
  }
  char t[32];
  cr_expect_str_eq(cd_fmt_bytes(t, sizeof t, 812 * CD_MIB), "812.0 MiB");
  cr_expect_str_eq(cd_fmt_bytes(t, sizeof t, 32768), "32.0 KiB");
  cr_expect_str_eq(cd_fmt_bytes(t, sizeof t, 100), "100 bytes");
}

/* The pool's result polling, seen through the loop's idle time (time
 * blocked in the kernel waiting for events): while the loop polls it is
 * never blocked. A job sleeps `ms`; the loop runs until its done() and then
 * 30 ms more; returns the loop's idle milliseconds. */
typedef struct sleep_job {
  cd_job job;
  int ms, done;
} sleep_job;

static void sleep_run(cd_job *j, cd_worker *w) {
  (void)w;
  struct timespec t = {0, (long)((sleep_job *)j)->ms * 1000000L};
  nanosleep(&t, NULL);
}

static void sleep_done(cd_job *j) { ((sleep_job *)j)->done = 1; }

static void timer_fired(uv_timer_t *t) { *(int *)t->data = 1; }
static void timer_closed(uv_handle_t *h) { *(int *)h->data = 2; }

/* The loop run for the next 30 ms (a timer): the ms of them it spent idle
 * (blocked in the kernel) rather than polling. */
static double idle_ms_over_30ms(uv_loop_t *loop) {
  uint64_t idle0 = uv_metrics_idle_time(loop);
  uv_timer_t t;
  int state = 0;
  uv_timer_init(loop, &t);
  t.data = &state;
  uv_timer_start(&t, timer_fired, 30, 0);
  while (!state) uv_run(loop, UV_RUN_ONCE);
  double ms = (double)(uv_metrics_idle_time(loop) - idle0) * 1e-6;
  uv_close((uv_handle_t *)&t, timer_closed);
  while (state != 2) uv_run(loop, UV_RUN_ONCE); /* closing: does not block */
  return ms;
}

static double idle_ms_around_job(uint64_t poll_us, int job_ms, double *idle_after_ms) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_loop_configure(&loop, UV_METRICS_IDLE_TIME);
  cd_pool *p = cd_pool_create(&loop, 1, 1 << 20);
  cd_pool_poll_results(p, poll_us);
  sleep_job j = {.job = {.run = sleep_run, .done = sleep_done}, .ms = job_ms};
  uint64_t idle0 = uv_metrics_idle_time(&loop);
  cd_pool_submit(p, NULL, &j.job);
  while (!j.done) uv_run(&loop, UV_RUN_ONCE);
  uint64_t idle1 = uv_metrics_idle_time(&loop);
  *idle_after_ms = idle_ms_over_30ms(&loop);
  cd_pool_destroy(p);
  uv_run(&loop, UV_RUN_DEFAULT); /* the pool's handles close */
  cr_assert_eq(uv_loop_close(&loop), 0);
  return (double)(idle1 - idle0) * 1e-6;
}

Test(pool, the_loop_polls_for_a_result_only_within_the_window) {
  double after;
  /* a window longer than the job: the loop never blocks until the result
   * is in, and blocks again as soon as nothing is pending */
  double idle = idle_ms_around_job(1000000, 40, &after);
  cr_expect_lt(idle, 10, "polled for 40 ms, yet %.1f ms idle", idle);
  cr_expect_gt(after, 20, "nothing pending, yet only %.1f of 30 ms idle", after);
  /* a 1 ms window: the loop sleeps for the rest of a 40 ms job */
  idle = idle_ms_around_job(1000, 40, &after);
  cr_expect_gt(idle, 25, "window 1 ms, job 40 ms, yet only %.1f ms idle", idle);
  /* no polling at all */
  idle = idle_ms_around_job(0, 40, &after);
  cr_expect_gt(idle, 25, "no polling, yet only %.1f of 40 ms idle", idle);
  cr_expect_gt(after, 20, "no polling, yet only %.1f of 30 ms idle", after);
}

/* Folding: a group of jobs whose last one carries the group's completion.
 * Every job folds before counting down; the one that brings the count to
 * zero unfolds, so done() runs once, after every job ran. The pool's count
 * of pending jobs must come back to zero: with a long polling window the
 * loop then blocks again (idle) instead of polling on. */
typedef struct fold_group {
  atomic_int left, ran, done_calls, all_ran_at_done;
} fold_group;

typedef struct fold_job {
  cd_job job;
  fold_group *g;
} fold_job;

static void fold_run(cd_job *j, cd_worker *w) {
  (void)w;
  fold_group *g = ((fold_job *)j)->g;
  atomic_fetch_add(&g->ran, 1);
  cd_pool_fold_done();
  if (atomic_fetch_sub(&g->left, 1) == 1) cd_pool_unfold_done();
}

static void fold_done(cd_job *j) {
  fold_group *g = ((fold_job *)j)->g;
  atomic_fetch_add(&g->done_calls, 1);
  atomic_store(&g->all_ran_at_done, atomic_load(&g->ran));
}

Test(pool, a_folded_group_completes_once_after_all_its_jobs) {
  enum { GROUPS = 20, N = 64 };
  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_loop_configure(&loop, UV_METRICS_IDLE_TIME);
  cd_pool *p = cd_pool_create(&loop, 3, 1 << 20);
  cd_pool_poll_results(p, 10000000); /* 10 s: only a count back at zero stops the polling */
  static fold_group g[GROUPS];
  static fold_job jobs[GROUPS][N];
  for (int k = 0; k < GROUPS; k++) {
    atomic_store(&g[k].left, N);
    for (int i = 0; i < N; i++) {
      jobs[k][i] = (fold_job){.job = {.run = fold_run, .done = fold_done}, .g = &g[k]};
      cd_pool_submit(p, NULL, &jobs[k][i].job);
    }
  }
  for (int k = 0; k < GROUPS; k++)
    while (!atomic_load(&g[k].done_calls)) uv_run(&loop, UV_RUN_ONCE);
  double idle_ms = idle_ms_over_30ms(&loop);
  for (int k = 0; k < GROUPS; k++) {
    cr_expect_eq(atomic_load(&g[k].done_calls), 1, "group %d: done() ran %d times", k, atomic_load(&g[k].done_calls));
    cr_expect_eq(atomic_load(&g[k].all_ran_at_done), N, "group %d: done() ran after %d of %d jobs", k,
                 atomic_load(&g[k].all_ran_at_done), N);
  }
  cr_expect_gt(idle_ms, 20, "every group completed, yet the loop polled on (%.1f of 30 ms idle)", idle_ms);
  cd_pool_destroy(p);
  uv_run(&loop, UV_RUN_DEFAULT);
  cr_assert_eq(uv_loop_close(&loop), 0);
}

/* The /metrics text's buffer grows past its first 4 KiB without losing a
 * byte, and a piece that would pass its cap marks it instead of being cut:
 * it and every later piece are left out. */
Test(fmt, growing_text_never_truncates) {
  cd_fmt_buf o;
  cd_fmt_buf_init(&o, 100000);
  for (int i = 0; i < 2000; i++) cd_fmt_append(&o, "line{n=\"%d\"} %d\n", i, i);
  cr_assert(!o.over && !o.nomem);
  cr_assert_gt(o.n, 4096);
  cr_assert_eq(strlen(o.b), o.n);
  cr_assert(strstr(o.b, "line{n=\"0\"} 0\nline{n=\"1\"} 1\n") == o.b);
  cr_assert_str_eq(o.b + o.n - strlen("line{n=\"1999\"} 1999\n"), "line{n=\"1999\"} 1999\n");
  free(o.b);

  cd_fmt_buf_init(&o, 10);
  cd_fmt_append(&o, "%s", "0123456789"); /* exactly the cap */
  cr_assert(!o.over);
  cr_assert_eq(o.n, 10);
  cd_fmt_append(&o, "%s", "x"); /* one byte over */
  cr_assert(o.over);
  cd_fmt_append(&o, "%s", ""); /* ignored once marked */
  cr_assert_eq(o.n, 10);
  cr_assert_str_eq(o.b, "0123456789");
  free(o.b);
}
