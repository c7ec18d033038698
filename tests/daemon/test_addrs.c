/* test_addrs.c — per-address accounting (cd_addrs.c): the connection cap
 * per address, the delay and lock-out after failed authentications, the
 * window that forgets them, and a table that stays bounded under many
 * addresses and consistent under several threads. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>

#include "cd_addrs.h"

static cd_addrs_config cfg(void) {
  return (cd_addrs_config){.max_per_address = 3, .fail_max = 6, .fail_window_ms = 1000, .fail_delay_ms = 250,
                           .lockout_ms = 5000, .max_entries = 64};
}

Test(addrs, connections_per_address) {
  cd_addrs_config c = cfg();
  cd_addrs *t = cd_addrs_new(&c);
  cr_assert(t);
  for (int i = 0; i < 3; i++) cr_expect_eq(cd_addrs_open(t, "10.0.0.1"), 0);
  cr_expect_eq(cd_addrs_open(t, "10.0.0.1"), -1, "the fourth from one address is refused");
  cr_expect_eq(cd_addrs_open(t, "10.0.0.2"), 0, "another address is not");
  cd_addrs_close(t, "10.0.0.1");
  cr_expect_eq(cd_addrs_open(t, "10.0.0.1"), 0, "a close makes room");
  cd_addrs_stats st;
  cd_addrs_get_stats(t, &st);
  cr_expect_eq(st.refused_per_address, 1);
  cr_expect_eq(st.tracked, 2);
  for (int i = 0; i < 3; i++) cd_addrs_close(t, "10.0.0.1");
  cd_addrs_close(t, "10.0.0.2");
  cd_addrs_close(t, "10.0.0.9"); /* never opened: ignored */
  cd_addrs_get_stats(t, &st);
  cr_expect_eq(st.tracked, 0, "addresses with nothing to remember are forgotten");
  c.max_per_address = 0;
  cd_addrs *u = cd_addrs_new(&c);
  for (int i = 0; i < 100; i++) cr_expect_eq(cd_addrs_open(u, "::1"), 0, "0 = no cap");
  cd_addrs_free(u);
  cd_addrs_free(t);
}

Test(addrs, failures_delay_then_lock_out) {
  cd_addrs_config c = cfg();
  cd_addrs *t = cd_addrs_new(&c);
  uint64_t wait = 7, now = 100000;
  cr_expect_eq(cd_addrs_auth_check(t, "10.0.0.1", now, &wait), CD_AUTH_GO);
  cr_expect_eq(wait, 0);
  for (int i = 0; i < 2; i++) cr_expect_eq(cd_addrs_auth_failed(t, "10.0.0.1", now + i), 0);
  cr_expect_eq(cd_addrs_auth_check(t, "10.0.0.1", now + 2, &wait), CD_AUTH_GO, "2 of 6: not yet delayed");
  cr_expect_eq(cd_addrs_auth_failed(t, "10.0.0.1", now + 3), 0);
  cr_expect_eq(cd_addrs_auth_check(t, "10.0.0.1", now + 4, &wait), CD_AUTH_WAIT, "3 of 6: delayed");
  cr_expect_eq(wait, 250);
  cr_expect_eq(cd_addrs_auth_check(t, "10.0.0.2", now + 4, &wait), CD_AUTH_GO, "another address is not");
  cr_expect_eq(cd_addrs_auth_failed(t, "10.0.0.1", now + 5), 0);
  cr_expect_eq(cd_addrs_auth_failed(t, "10.0.0.1", now + 6), 0);
  cr_expect_eq(cd_addrs_auth_failed(t, "10.0.0.1", now + 7), 1, "the sixth locks it out, said once");
  cr_expect_eq(cd_addrs_auth_check(t, "10.0.0.1", now + 8, &wait), CD_AUTH_LOCKED);
  cr_expect_eq(wait, 4999);
  cr_expect_eq(cd_addrs_auth_failed(t, "10.0.0.1", now + 9), 0, "failures while locked do not lock again");
  cr_expect_eq(cd_addrs_auth_check(t, "10.0.0.1", now + 5008, &wait), CD_AUTH_GO, "the lock-out ends");
  cd_addrs_stats st;
  cd_addrs_get_stats(t, &st);
  cr_expect_eq(st.auth_failures, 7);
  cr_expect_eq(st.lockouts, 1);
  cr_expect_eq(st.auth_locked, 1);
  cr_expect_eq(st.auth_delayed, 1);
  cd_addrs_free(t);
}

Test(addrs, the_window_forgets) {
  cd_addrs_config c = cfg();
  cd_addrs *t = cd_addrs_new(&c);
  uint64_t wait, now = 5000;
  for (int i = 0; i < 5; i++) cd_addrs_auth_failed(t, "a", now);
  cr_expect_eq(cd_addrs_auth_check(t, "a", now, &wait), CD_AUTH_WAIT);
  cr_expect_eq(cd_addrs_auth_check(t, "a", now + 1000, &wait), CD_AUTH_GO, "a window later they are forgotten");
  cr_expect_eq(cd_addrs_auth_failed(t, "a", now + 1001), 0, "one failure in a new window does not lock");
  cd_addrs_free(t);
}

Test(addrs, bounded_under_many_addresses) {
  cd_addrs_config c = cfg();
  c.max_entries = 16;
  cd_addrs *t = cd_addrs_new(&c);
  char a[64];
  for (int i = 0; i < 10; i++) {
    snprintf(a, sizeof a, "10.1.0.%d", i);
    cr_expect_eq(cd_addrs_open(t, a), 0);
  }
  for (int i = 0; i < 5000; i++) { /* an attacker with many addresses */
    snprintf(a, sizeof a, "10.2.%d.%d", i / 250, i % 250);
    cd_addrs_auth_failed(t, a, 1000 + (uint64_t)i);
  }
  cd_addrs_stats st;
  cd_addrs_get_stats(t, &st);
  cr_expect_leq(st.tracked, 16);
  for (int i = 0; i < 10; i++) { /* the open connections were never forgotten */
    snprintf(a, sizeof a, "10.1.0.%d", i);
    cr_expect_eq(cd_addrs_open(t, a), 0);
    cr_expect_eq(cd_addrs_open(t, a), 0);
    cr_expect_eq(cd_addrs_open(t, a), -1, "%s holds 3", a);
  }
  char longaddr[200];
  memset(longaddr, 'x', sizeof longaddr - 1);
  longaddr[sizeof longaddr - 1] = 0;
  cr_expect_eq(cd_addrs_open(t, longaddr), 0, "not an IP address: not tracked, not refused");
  cd_addrs_close(t, longaddr);
  cd_addrs_free(t);
}

static cd_addrs *shared;

static void *churn(void *arg) {
  char a[32];
  snprintf(a, sizeof a, "10.3.0.%d", (int)(intptr_t)arg % 2);
  for (int i = 0; i < 20000; i++) {
    if (cd_addrs_open(shared, a) == 0) cd_addrs_close(shared, a);
    if (i % 100 == 0) cd_addrs_auth_failed(shared, a, (uint64_t)i);
  }
  return NULL;
}

Test(addrs, threads) {
  cd_addrs_config c = cfg();
  c.max_per_address = 4;
  shared = cd_addrs_new(&c);
  pthread_t th[4];
  for (intptr_t i = 0; i < 4; i++) pthread_create(&th[i], NULL, churn, (void *)i);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int k = 0; k < 2; k++) {
    char a[32];
    snprintf(a, sizeof a, "10.3.0.%d", k);
    for (int i = 0; i < 4; i++) cr_expect_eq(cd_addrs_open(shared, a), 0, "every open was closed");
    cr_expect_eq(cd_addrs_open(shared, a), -1);
  }
  cd_addrs_stats st;
  cd_addrs_get_stats(shared, &st);
  cr_expect_eq(st.auth_failures, 4 * 200);
  cd_addrs_free(shared);
}
