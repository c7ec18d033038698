/* cd_stats.c — counters and latency histogram. */
#include "cd_stats.h"

#include <string.h>
#include <time.h>

const double cd_latency_bounds_us[CD_LATENCY_BUCKETS - 1] = {
    25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1000000, 10000000};

uint64_t cd_stats_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void cd_stats_init(cd_stats *s) {
  memset(s, 0, sizeof *s);
  s->start_ns = cd_stats_now_ns();
}

void cd_stats_latency(cd_stats *s, double us) {
  int i = 0;
  while (i < CD_LATENCY_BUCKETS - 1 && us > cd_latency_bounds_us[i]) i++;
  s->latency[i]++;
  /* a compare-and-swap loop: `+=` on an atomic double would need libatomic */
  double sum = atomic_load_explicit(&s->latency_sum_us, memory_order_relaxed);
  while (!atomic_compare_exchange_weak_explicit(&s->latency_sum_us, &sum, sum + us, memory_order_relaxed,
                                                memory_order_relaxed)) {
  }
}
