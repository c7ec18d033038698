/* td_redis.c — see td_redis.h. */
#include "td_redis.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "td_proc.h"

int td_free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(0x7f000001)};
  socklen_t len = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
    if (fd >= 0) close(fd);
    return -1;
  }
  close(fd);
  return ntohs(a.sin_port);
}

/* What redis answers a PING with (its first bytes), "" when nothing. */
static void ping(int port, char *buf, size_t cap) {
  buf[0] = 0;
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(0x7f000001)};
  if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 && write(fd, "PING\r\n", 6) == 6) {
    ssize_t n = read(fd, buf, cap - 1);
    buf[n > 0 ? n : 0] = 0;
  }
  if (fd >= 0) close(fd);
}

int td_redis_ping(int port) {
  char buf[32];
  ping(port, buf, sizeof buf);
  return strncmp(buf, "+PONG", 5) == 0;
}

int td_redis_run(td_redis *r, const char *bin, const char *const *extra, const char **why) {
  char port[16], log[300];
  snprintf(port, sizeof port, "%d", r->port);
  snprintf(log, sizeof log, "%s/redis.log", r->dir);
  const char *argv[32] = {bin, "--port", port, "--bind", "127.0.0.1", "--dir", r->dir, "--save", "",
                          "--appendonly", "no", "--logfile", log};
  int n = 13;
  for (int i = 0; extra && extra[i] && n < 31; i++) argv[n++] = extra[i];
  argv[n] = NULL;
  r->pid = fork();
  if (r->pid < 0) {
    r->pid = 0;
    *why = "fork failed";
    return -1;
  }
  if (r->pid == 0) {
    execv(bin, (char *const *)argv);
    _exit(127);
  }
  for (int i = 0; i < 250; i++) { /* with a password, -NOAUTH also says it is up */
    char buf[32];
    ping(r->port, buf, sizeof buf);
    if (buf[0] == '+' || buf[0] == '-') return 0;
    usleep(20000);
  }
  *why = "redis-server did not answer within 5 s";
  return -1;
}

int td_redis_start(td_redis *r, const char *bin, const char *const *extra, const char **why) {
  memset(r, 0, sizeof *r);
  if (access(bin, X_OK) != 0) {
    *why = "redis-server is missing (deploy/deps.sh installs it)";
    return -1;
  }
  if (td_mkdtemp(r->dir, sizeof r->dir, "td_redis_") != 0 || (r->port = td_free_port()) < 0) {
    *why = "no directory or port for redis-server";
    return -1;
  }
  snprintf(r->uri, sizeof r->uri, "redis://127.0.0.1:%d", r->port);
  return td_redis_run(r, bin, extra, why);
}

void td_redis_kill(td_redis *r, int sig) {
  if (!r->pid) return;
  kill(r->pid, SIGCONT);
  kill(r->pid, sig);
  waitpid(r->pid, NULL, 0);
  r->pid = 0;
}

void td_redis_stop(td_redis *r) {
  td_redis_kill(r, SIGTERM);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", r->dir);
  if (system(cmd) != 0) fprintf(stderr, "td_redis: could not remove %s\n", r->dir);
}
