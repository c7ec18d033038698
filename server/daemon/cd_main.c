/* cd_main.c — contactd: parse the configuration, run the loop until
 * SIGTERM/SIGINT (stop accepting, finish in-flight work, flush, exit 0). */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cd_config.h"
#include "cd_dispatch.h"
#include "cd_log.h"
#include "cd_server.h"

int main(int argc, char **argv) {
  cd_config cfg;
  cd_config_default(&cfg);
  char err[512];
  int rc = cd_config_from_args(&cfg, argc, argv, err, sizeof err);
  if (rc == 1) return 0;
  if (rc < 0) {
    fprintf(stderr, "contactd: %s\n", err);
    return 2;
  }
  cd_log_set_level((cd_log_level)cfg.log_level);
  signal(SIGPIPE, SIG_IGN);
  uv_loop_t loop;
  uv_loop_init(&loop);
  cd_server srv;
  int ok = cd_server_init(&srv, &loop, &cfg, &cd_protocol) == 0;
  if (!ok) cd_server_shutdown(&srv, "startup failed");
  uv_run(&loop, UV_RUN_DEFAULT);
  cd_server_free(&srv);
  uv_loop_close(&loop);
  return ok ? 0 : 1;
}
