/* cc_test_daemon.c — see cc_test_daemon.h. */
#include "cc_test_daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef CONTACTD_BIN
#error "CONTACTD_BIN must name the contactd executable"
#endif

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static char *read_log(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  size_t cap = 1 << 16, n = 0, k;
  char *b = malloc(cap);
  while (b && (k = fread(b + n, 1, cap - n - 1, f)) > 0) {
    n += k;
    if (n + 1 >= cap) {
      char *nb = realloc(b, cap *= 2);
      if (!nb) break;
      b = nb;
    }
  }
  if (b) b[n] = 0;
  fclose(f);
  return b;
}

int cc_test_daemon_start(cc_test_daemon *d) {
  memset(d, 0, sizeof *d);
  snprintf(d->dir, sizeof d->dir, "/tmp/cc-test-XXXXXX");
  if (!mkdtemp(d->dir)) return -1;
  snprintf(d->unix_path, sizeof d->unix_path, "%s/contactd.sock", d->dir);
  snprintf(d->log_path, sizeof d->log_path, "%s/contactd.log", d->dir);
  snprintf(d->unix_addr, sizeof d->unix_addr, "unix:%s", d->unix_path);
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    int fd = open(d->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) {
      dup2(fd, 2);
      close(fd);
    }
    execl(CONTACTD_BIN, CONTACTD_BIN, "--listen", "127.0.0.1:0", "--unix", d->unix_path, "--workers", "2",
          (char *)NULL);
    _exit(127);
  }
  d->pid = pid;
  long t0 = now_ms();
  while (now_ms() - t0 < 20000) {
    char *b = read_log(d->log_path);
    if (b) {
      char *p = strstr(b, "msg=\"listening\" tcp=");
      if (p && (p = strstr(p, "port="))) d->port = atoi(p + 5);
      int ready = strstr(b, "msg=\"ready\"") != NULL;
      free(b);
      if (ready && d->port > 0) {
        snprintf(d->tcp_addr, sizeof d->tcp_addr, "127.0.0.1:%d", d->port);
        return 0;
      }
    }
    int st;
    if (waitpid(pid, &st, WNOHANG) == pid) return -1;
    usleep(10000);
  }
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return -1;
}

int cc_test_daemon_stop(cc_test_daemon *d) {
  if (d->pid <= 0) return -1;
  kill(d->pid, SIGTERM);
  int st = 0;
  long t0 = now_ms();
  for (;;) {
    pid_t r = waitpid(d->pid, &st, WNOHANG);
    if (r == d->pid) break;
    if (now_ms() - t0 > 30000) {
      kill(d->pid, SIGKILL);
      waitpid(d->pid, &st, 0);
      break;
    }
    usleep(5000);
  }
  d->pid = 0;
  unlink(d->log_path);
  unlink(d->unix_path);
  rmdir(d->dir);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
