/* td_faults.c — allocation failures on request, for the tests.
 *
 * A program linked with this file and -Wl,--wrap=malloc,--wrap=calloc,
 * --wrap=realloc (the CMake function contactd_link_faults) sends every
 * allocation made by its own objects and static libraries (daemon, wire
 * codecs with their decode budget and cJSON hooks, contact engine) here
 * first. The shared libraries (libuv, libprotobuf-c, libcjson, libccd,
 * libc, criterion) keep the real functions: libuv aborts on some failed
 * allocations by design, and these tests are about our code's error
 * paths, not theirs. Two users:
 *
 * In process (tests/engine/test_alloc_failure.c): td_faults_fail_from(k)
 * makes the calling thread's allocation k and every one after it fail,
 * as an exhausted heap would (td_faults.h). Other threads are untouched.
 * The test's own allocations in that window (making its inputs) go
 * between td_faults_pause and td_faults_resume: neither counted nor failed
 * (SQLite's benign-malloc regions).
 *
 * A whole contactd (contactd_faults, tests/daemon/test_daemon_faults.c):
 * CONTACTD_FAULTS in the environment says which allocations fail:
 *   start:K   allocation K (numbered from 0 at process start, over all
 *             threads) and every one after it: a heap exhausted during
 *             startup, SQLite's persistent mode;
 *   once:K    allocation K alone: a transient failure;
 *   serve:N:S while armed, about one allocation in N, chosen by a hash of
 *             its number and the seed S: transient failures while serving.
 * SIGUSR1 arms and writes "faults: armed"; SIGUSR2 disarms and writes
 * "faults: F of A allocations failed" (the ones made while armed) to
 * stderr, so a test can check that its window really failed some. The
 * kernel may run the two handlers at once on different threads, so a
 * disarm sent before the "armed" line can be undone by the arm: a caller
 * waits for each line before sending the next signal. The first failure of start:K or once:K
 * writes "faults: allocation K failed". Everything in the handlers is
 * async-signal-safe (atomics and write). */
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "td_faults.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static enum { OFF, START, ONCE, SERVE } mode = OFF;
static uint64_t start_k, one_in = 1, seed;
static atomic_uint_fast64_t count;          /* allocations so far (START) or while armed (SERVE) */
static atomic_uint_fast64_t failed;         /* failures injected while armed */
static atomic_int armed, reported;

/* In-process mode: the calling thread's own countdown. */
static _Thread_local long thread_fail_from = -1; /* allocation number that fails first; < 0: none */
static _Thread_local long thread_count;          /* allocations since td_faults_fail_from */
static _Thread_local int thread_paused;          /* td_faults_pause .. td_faults_resume */

void td_faults_fail_from(long k) {
  thread_fail_from = k;
  thread_count = 0;
}

long td_faults_count(void) { return thread_count; }

void td_faults_pause(void) { thread_paused = 1; }

void td_faults_resume(void) { thread_paused = 0; }

/* A line on stderr with no stdio: text pieces and numbers, in order. */
typedef struct line {
  char b[160];
  size_t n;
} line;

static void put_s(line *l, const char *s) {
  size_t k = strlen(s);
  if (k > sizeof l->b - 1 - l->n) k = sizeof l->b - 1 - l->n;
  memcpy(l->b + l->n, s, k);
  l->n += k;
}

static void put_u(line *l, uint64_t v) {
  char t[24];
  size_t n = 0;
  do t[n++] = (char)('0' + v % 10); while ((v /= 10) > 0);
  while (n > 0 && l->n < sizeof l->b - 1) l->b[l->n++] = t[--n];
}

static void put_end(line *l) {
  l->b[l->n++] = '\n';
  ssize_t w = write(2, l->b, l->n);
  (void)w;
}

static uint64_t mix(uint64_t z) { /* splitmix64's finaliser */
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* Whether this allocation is to fail. */
static int fails(void) {
  if (thread_paused) return 0;
  if (thread_fail_from >= 0) return thread_count++ >= thread_fail_from;
  if (mode == START || mode == ONCE) {
    uint64_t k = atomic_fetch_add(&count, 1);
    if (k < start_k || (mode == ONCE && k > start_k)) return 0;
    if (!atomic_exchange(&reported, 1)) {
      line l = {.n = 0};
      put_s(&l, "faults: allocation ");
      put_u(&l, k);
      put_s(&l, " failed");
      put_end(&l);
    }
    return 1;
  }
  if (mode == SERVE && atomic_load_explicit(&armed, memory_order_relaxed)) {
    uint64_t k = atomic_fetch_add(&count, 1);
    if (mix(k ^ seed) % one_in != 0) return 0;
    atomic_fetch_add(&failed, 1);
    return 1;
  }
  return 0;
}

void *__wrap_malloc(size_t n) { return fails() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return fails() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return fails() ? NULL : __real_realloc(p, n); }

static void on_arm(int sig) {
  (void)sig;
  atomic_store(&count, 0);
  atomic_store(&failed, 0);
  atomic_store(&armed, 1);
  line l = {.n = 0};
  put_s(&l, "faults: armed");
  put_end(&l);
}

static void on_disarm(int sig) {
  (void)sig;
  atomic_store(&armed, 0);
  line l = {.n = 0};
  put_s(&l, "faults: ");
  put_u(&l, atomic_load(&failed));
  put_s(&l, " of ");
  put_u(&l, atomic_load(&count));
  put_s(&l, " allocations failed");
  put_end(&l);
}

__attribute__((constructor)) static void faults_init(void) {
  const char *s = getenv("CONTACTD_FAULTS");
  if (!s) return;
  char *end;
  if (!strncmp(s, "start:", 6) || !strncmp(s, "once:", 5)) {
    mode = s[0] == 's' ? START : ONCE;
    start_k = strtoull(strchr(s, ':') + 1, &end, 10);
  } else if (!strncmp(s, "serve:", 6)) {
    one_in = strtoull(s + 6, &end, 10);
    seed = *end == ':' ? strtoull(end + 1, &end, 10) : 0;
    if (one_in == 0) one_in = 1;
    mode = SERVE;
    struct sigaction a;
    memset(&a, 0, sizeof a);
    sigemptyset(&a.sa_mask);
    a.sa_flags = SA_RESTART;
    a.sa_handler = on_arm;
    sigaction(SIGUSR1, &a, NULL);
    a.sa_handler = on_disarm;
    sigaction(SIGUSR2, &a, NULL);
  } else {
    line l = {.n = 0};
    put_s(&l, "faults: CONTACTD_FAULTS is none of start:K, once:K, serve:N:S");
    put_end(&l);
    _exit(2);
  }
}
