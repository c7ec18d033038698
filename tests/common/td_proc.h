/* td_proc.h — the real contactd binary as a child process of a test: one
 * daemon per call on an ephemeral TCP port plus a Unix socket in a fresh
 * temporary directory, its stdout and stderr in a log file there. Shared by
 * the daemon tests (tests/daemon/cd_test_client.c) and the client tests
 * (tests/client/cc_test_daemon.c), which wrap it in their own styles. */
#ifndef TD_PROC_H
#define TD_PROC_H

#include <sys/types.h>

typedef struct td_proc {
  pid_t pid;
  int port;         /* TCP, from the daemon's "listening" log line */
  int metrics_port; /* 0 unless the daemon serves metrics */
  char dir[256];
  char unix_path[300];
  char log_path[300];
  /* When td_start fails because the daemon exited during startup: its exit
   * status (128 + signal when killed by one) and the end of its log. */
  int startup_status;
  char startup_log[4096];
} td_proc;

/* Start `bin` with --listen 127.0.0.1:0 --unix DIR/contactd.sock --workers
 * 2 and the extra arguments (NULL-terminated, may be NULL), and wait up to
 * 20 s until it logs "ready". The child is killed if the test process dies.
 * Returns 0, or -1 with *why naming what failed (the daemon is gone then;
 * startup_status and startup_log say how it ended if it exited). */
int td_start(td_proc *d, const char *bin, const char *const *extra, const char **why);
/* SIGTERM and wait (SIGKILL after 60 s: status 255). With show_log, a
 * nonzero exit (or TC_SHOW_LOG in the environment) prints the daemon's log
 * to stderr. Removes the directory; returns the exit status (128 + signal
 * when killed by one). */
int td_stop(td_proc *d, int show_log);
/* SIGKILL (a crash: no clean shutdown) and reap; the directory stays, for
 * td_restart. Returns the status (128 + 9). */
int td_kill(td_proc *d);
/* Kill the daemon if it runs, then start bin again in the same directory,
 * on the same TCP port and Unix socket, with these extra arguments; 0, or
 * -1 with *why (the directory is removed then). */
int td_restart(td_proc *d, const char *bin, const char *const *extra, const char **why);
/* 1 while the process runs. */
int td_alive(const td_proc *d);
/* The log so far (malloc'd, NUL-terminated), or NULL. */
char *td_read_log(const td_proc *d);

#endif
