/* td_proc.c — see td_proc.h. */
#include "td_proc.h"

#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

char *td_read_log(const td_proc *d) {
  FILE *f = fopen(d->log_path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0, k;
  char *b = malloc(cap);
  while (b && (k = fread(b + n, 1, cap - n - 1, f)) > 0) {
    n += k;
    if (n + 1 >= cap) {
      char *nb = realloc(b, cap *= 2);
      if (!nb) free(b);
      b = nb;
    }
  }
  if (b) b[n] = 0;
  fclose(f);
  return b;
}

const char *td_tmp_root(void) {
  const char *t = getenv("TMPDIR");
  return t && *t ? t : P_tmpdir;
}

int td_mkdtemp(char *buf, size_t cap, const char *prefix) {
  int n = snprintf(buf, cap, "%s/%sXXXXXX", td_tmp_root(), prefix);
  if (n < 0 || (size_t)n >= cap) return -1;
  return mkdtemp(buf) ? 0 : -1;
}

static char own_dir[256];
static pid_t own_pid;

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
  (void)st, (void)type, (void)ftw;
  remove(path);
  return 0;
}

static void remove_own_dir(void) {
  /* only the process that made it (a forked child inherits the handler) */
  if (own_pid == getpid() && own_dir[0]) nftw(own_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *td_own_dir(void) {
  if (own_pid != getpid()) {
    if (td_mkdtemp(own_dir, sizeof own_dir, "td-") != 0) {
      fprintf(stderr, "td: cannot make a directory under %s\n", td_tmp_root());
      abort();
    }
    if (!own_pid) atexit(remove_own_dir);
    own_pid = getpid();
  }
  return own_dir;
}

static void remove_dir(td_proc *d) {
  unlink(d->log_path);
  unlink(d->unix_path);
  rmdir(d->dir);
}

/* Run bin in d's directory, listening on `listen`, and wait until it is
 * ready (td_start's second half; td_restart's whole). */
static int spawn(td_proc *d, const char *bin, const char *listen, const char *const *extra, const char **why) {
  /* CONTACTD_TEST_BIN replaces the contactd under test (not other
   * binaries, such as the fault-injecting one): tests/run.sh points it at a
   * ThreadSanitizer build of the daemon, whose exit status (66) fails the
   * test on any report. */
  const char *over = getenv("CONTACTD_TEST_BIN"), *base = strrchr(bin, '/');
  if (over && *over && strcmp(base ? base + 1 : bin, "contactd") == 0) bin = over;
  const char *argv[64];
  int n = 0;
  argv[n++] = bin;
  argv[n++] = "--listen";
  argv[n++] = listen;
  argv[n++] = "--unix";
  argv[n++] = d->unix_path;
  argv[n++] = "--workers";
  argv[n++] = "2";
  /* The event loop count the whole suite runs with (ctest runs the daemon
   * tests with 1 and with 4); a test's own --io-threads comes later and
   * wins. */
  const char *io = getenv("CONTACTD_TEST_IO_THREADS");
  if (io && *io) {
    argv[n++] = "--io-threads";
    argv[n++] = io;
  }
  for (int i = 0; extra && extra[i] && n < 63; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid < 0) {
    *why = "fork failed";
    rmdir(d->dir);
    return -1;
  }
  if (pid == 0) {
    /* Never outlive the test (a crashed test must not leave a daemon
     * holding ctest's output pipe open). */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int fd = open(d->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 2);
      dup2(fd, 1);
      close(fd);
    }
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  d->pid = pid;
  d->port = 0;
  long t0 = now_ms();
  while (now_ms() - t0 < 20000) {
    char *b = td_read_log(d);
    if (b) {
      char *p = strstr(b, "msg=\"listening\" tcp=");
      if (p && (p = strstr(p, "port="))) d->port = atoi(p + 5);
      char *m = strstr(b, "metrics_port=");
      if (m) d->metrics_port = atoi(m + 13);
      int ready = strstr(b, "msg=\"ready\"") != NULL;
      free(b);
      if (ready && d->port > 0) return 0;
    }
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) {
      *why = "contactd exited during startup";
      d->pid = 0;
      d->startup_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      char *log = td_read_log(d);
      if (log) { /* the end of it, where the reason is */
        size_t n = strlen(log), keep = sizeof d->startup_log - 1;
        memcpy(d->startup_log, log + (n > keep ? n - keep : 0), n > keep ? keep : n);
        free(log);
      }
      remove_dir(d);
      return -1;
    }
    usleep(10000);
  }
  *why = "contactd did not become ready within 20 s";
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  d->pid = 0;
  remove_dir(d);
  return -1;
}

int td_start(td_proc *d, const char *bin, const char *const *extra, const char **why) {
  memset(d, 0, sizeof *d);
  if (td_mkdtemp(d->dir, sizeof d->dir, "contactd-test-") != 0) {
    *why = "mkdtemp failed";
    return -1;
  }
  snprintf(d->unix_path, sizeof d->unix_path, "%s/contactd.sock", d->dir);
  snprintf(d->log_path, sizeof d->log_path, "%s/contactd.log", d->dir);
  return spawn(d, bin, "127.0.0.1:0", extra, why);
}

int td_alive(const td_proc *d) {
  int st;
  return d->pid > 0 && waitpid(d->pid, &st, WNOHANG) == 0;
}

int td_stop(td_proc *d, int show_log) {
  if (d->pid <= 0) { /* killed (td_kill): only the directory is left */
    remove_dir(d);
    return -1;
  }
  kill(d->pid, SIGTERM);
  int st = 0, code = -1;
  long t0 = now_ms();
  for (;;) {
    pid_t r = waitpid(d->pid, &st, WNOHANG);
    if (r == d->pid) break;
    if (now_ms() - t0 > 60000) {
      kill(d->pid, SIGKILL);
      waitpid(d->pid, &st, 0);
      code = 255;
      break;
    }
    usleep(5000);
  }
  d->pid = 0;
  if (code < 0) code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  if (show_log && (code != 0 || getenv("TC_SHOW_LOG"))) { /* the daemon's side of a failure */
    char *b = td_read_log(d);
    if (b) fprintf(stderr, "---- contactd log (exit %d) ----\n%s---- end of log ----\n", code, b);
    free(b);
  }
  remove_dir(d);
  return code;
}

int td_kill(td_proc *d) {
  if (d->pid <= 0) return -1;
  kill(d->pid, SIGKILL);
  int st = 0;
  waitpid(d->pid, &st, 0);
  d->pid = 0;
  return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

int td_restart(td_proc *d, const char *bin, const char *const *extra, const char **why) {
  if (d->pid > 0) td_kill(d);
  char listen[32];
  snprintf(listen, sizeof listen, "127.0.0.1:%d", d->port);
  int port = d->port;
  if (spawn(d, bin, listen, extra, why) != 0) return -1;
  if (d->port != port) {
    *why = "contactd restarted on another port";
    td_stop(d, 0);
    return -1;
  }
  return 0;
}
