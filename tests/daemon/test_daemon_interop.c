/* test_daemon_interop.c — runs interop_test.py (Debian's python3-protobuf
 * with the module stock `protoc --python_out` generated into the installed
 * Python client) against the real
 * contactd over TCP and over the Unix socket: same numbers as the C path,
 * bit for bit across protobuf and JSON. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "cd_test_client.h"

#if defined(CONTACTD_PYTHON) && defined(CONTACTD_INTEROP_SCRIPT)
/* CONTACTD_PYTHON: the venv's python, where contactd_client is installed
 * with its generated contactd_pb2 (ctest fixture python_client). */
static void run_interop(const char *address) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "%s %s %s", CONTACTD_PYTHON, CONTACTD_INTEROP_SCRIPT, address);
  int st = system(cmd);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "interop_test.py %s exit status %d", address,
            WIFEXITED(st) ? WEXITSTATUS(st) : -1);
}

Test(interop, python_protobuf_client_over_tcp_and_unix) {
  tc_daemon d;
  tc_start(&d, NULL);
  char addr[400];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", d.port);
  run_interop(addr);
  snprintf(addr, sizeof addr, "unix:%s", d.unix_path);
  run_interop(addr);
  cr_expect_eq(tc_stop(&d), 0);
}
#else
Test(interop, skipped_without_protoc) { cr_skip_test("protoc or interop_test.py missing"); }
#endif
