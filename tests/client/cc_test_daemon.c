/* cc_test_daemon.c — see cc_test_daemon.h. */
#include "cc_test_daemon.h"

#include <stdio.h>
#include <string.h>

#ifndef CONTACTD_BIN
#error "CONTACTD_BIN must name the contactd executable"
#endif

int cc_test_daemon_start(cc_test_daemon *d) {
  memset(d, 0, sizeof *d);
  const char *why = NULL;
  if (td_start(&d->proc, CONTACTD_BIN, NULL, &why) != 0) {
    fprintf(stderr, "cc_test_daemon: %s\n", why);
    return -1;
  }
  snprintf(d->tcp_addr, sizeof d->tcp_addr, "127.0.0.1:%d", d->proc.port);
  snprintf(d->unix_addr, sizeof d->unix_addr, "unix:%s", d->proc.unix_path);
  return 0;
}

int cc_test_daemon_stop(cc_test_daemon *d) { return td_stop(&d->proc, 0); }
