/* td_proc.h — the real contactd binary as a child process of a test: one
 * daemon per call on an ephemeral TCP port plus a Unix socket in a fresh
 * temporary directory, its stdout and stderr in a log file there. Shared by
 * the daemon tests (tests/daemon/cd_test_client.c) and the client tests
 * (tests/client/cc_test_daemon.c), which wrap it in their own styles.
 *
 * Every file a test writes goes under $TMPDIR: tests/run.sh points it at
 * a directory made for the run and removes that at the end, so no test
 * names a fixed path and nothing an earlier run left can make one pass. */
#ifndef TD_PROC_H
#define TD_PROC_H

#include <stddef.h>
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

/* The directory tests write under: $TMPDIR, else the C library's default
 * (P_tmpdir). */
const char *td_tmp_root(void);
/* mkdtemp of <td_tmp_root()>/<prefix>XXXXXX into buf (cap bytes): 0, or
 * -1 when it does not fit or cannot be made. */
int td_mkdtemp(char *buf, size_t cap, const char *prefix);
/* A directory of this process's own under td_tmp_root(), made on first use
 * (again after a fork: criterion runs each test in a child), removed with
 * what is in it when the process exits. Aborts when it cannot be made. */
const char *td_own_dir(void);

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
