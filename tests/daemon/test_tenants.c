/* test_tenants.c — the (tenant, id) visibility table (cd_tenants.c): what
 * a tenant sees after adds and removes, a NULL tenant seeing everything,
 * the oldest pairs forgotten at the bound, growth past its first buckets;
 * and what one lookup costs (printed). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cd_tenants.h"

static void id_of(unsigned k, char id[65]) {
  for (int i = 0; i < 64; i++) id[i] = "0123456789abcdef"[(k >> ((i % 8) * 4)) & 15];
  id[64] = 0;
}

Test(tenants_table, add_sees_remove) {
  cd_tenants *t = cd_tenants_create(100);
  cr_assert(t);
  char id[65], other[65];
  id_of(1, id);
  id_of(2, other);
  cr_expect(cd_tenants_sees(t, NULL, id), "no tenant: every id");
  cr_expect(!cd_tenants_sees(t, "lab-a", id));
  cr_expect_eq(cd_tenants_add(t, "lab-a", id), 1);
  cr_expect_eq(cd_tenants_add(t, "lab-a", id), 0, "already seen");
  cr_expect(cd_tenants_sees(t, "lab-a", id));
  cr_expect(!cd_tenants_sees(t, "lab-b", id), "another tenant does not");
  cr_expect(!cd_tenants_sees(t, "lab-a", other), "another id is not");
  cr_expect(!cd_tenants_sees(t, "lab-", id), "a prefix of the tenant is another tenant");
  cr_expect_eq(cd_tenants_add(t, "lab-b", id), 1);
  cr_expect_eq(cd_tenants_count(t), 2);
  cr_expect_eq(cd_tenants_remove(t, "lab-b", id), 1);
  cr_expect_eq(cd_tenants_remove(t, "lab-b", id), 0);
  cr_expect(cd_tenants_sees(t, "lab-a", id), "a release by B leaves A's visibility");
  cr_expect(!cd_tenants_sees(t, "lab-b", id));
  cr_expect_eq(cd_tenants_add(t, NULL, id), 0, "no tenant: nothing recorded");
  cr_expect_eq(cd_tenants_count(t), 1);
  cd_tenants_destroy(t);
}

Test(tenants_table, oldest_forgotten_at_the_bound) {
  cd_tenants *t = cd_tenants_create(3000);
  char id[65];
  for (unsigned k = 0; k < 5000; k++) {
    id_of(k, id);
    cr_assert_eq(cd_tenants_add(t, k % 2 ? "lab-a" : "lab-b", id), 1);
  }
  cr_expect_eq(cd_tenants_count(t), 3000);
  int oldest = 0, newest = 0;
  for (unsigned k = 0; k < 5000; k++) {
    id_of(k, id);
    int s = cd_tenants_sees(t, k % 2 ? "lab-a" : "lab-b", id);
    if (k < 2000) oldest += s;
    else newest += s;
  }
  cr_expect_eq(oldest, 0, "the 2,000 oldest are forgotten");
  cr_expect_eq(newest, 3000, "the 3,000 newest are kept (through the table's growth)");
  /* a removal in the middle keeps the order of the rest */
  id_of(2500, id);
  cr_expect_eq(cd_tenants_remove(t, "lab-b", id), 1);
  id_of(5000, id);
  cr_expect_eq(cd_tenants_add(t, "lab-b", id), 1);
  id_of(2000, id);
  cr_expect(cd_tenants_sees(t, "lab-b", id), "room was made by the removal: nothing forgotten");
  cd_tenants_destroy(t);
}

Test(tenants_table, cost_of_a_lookup) {
  cd_tenants *t = cd_tenants_create(262144);
  char id[65];
  for (unsigned k = 0; k < 100000; k++) {
    id_of(k, id);
    cd_tenants_add(t, "lab-a", id);
  }
  struct timespec a, b;
  int n = 1000000, hits = 0;
  id_of(4242, id);
  clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < n; i++) hits += cd_tenants_sees(t, i % 2 ? "lab-a" : "lab-b", id);
  clock_gettime(CLOCK_MONOTONIC, &b);
  double ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n;
  cr_expect_eq(hits, n / 2);
  printf("tenants: one visibility lookup among 100,000 pairs: %.0f ns\n", ns);
  cd_tenants_destroy(t);
}
