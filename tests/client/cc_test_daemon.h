/* cc_test_daemon.h — start the real contactd binary for client tests: TCP on
 * an ephemeral port plus a Unix socket in a fresh temporary directory. */
#ifndef CC_TEST_DAEMON_H
#define CC_TEST_DAEMON_H

#include "td_proc.h"

typedef struct cc_test_daemon {
  td_proc proc;        /* pid, port, unix_path, ... (tests/common/td_proc.h) */
  char tcp_addr[64];   /* "127.0.0.1:PORT" */
  char unix_addr[320]; /* "unix:/path" */
} cc_test_daemon;

/* Start contactd (path from CONTACTD_BIN) with --workers 2 and wait until it
 * logs "ready"; returns 0, or -1 after saying why on stderr. */
int cc_test_daemon_start(cc_test_daemon *d);
/* SIGTERM, wait, remove the directory; returns the exit status. */
int cc_test_daemon_stop(cc_test_daemon *d);

#endif
