/* ctl_ping.c — contactctl ping: handshake, server version, round trip. */
#include <stdio.h>
#include <string.h>

#include "ctl.h"

const char *const PING_HELP =
    "usage: contactctl ping [--count N] [--json]\n"
    "\n"
    "Send Hello and print the server's version, protocol and the round trip time.\n";

int cmd_ping(int argc, char **argv, common *co) {
  long count = 1;
  for (int i = 0; i < argc; i++) {
    int r = ctl_common_flag(argc, argv, &i, co);
    if (r < 0) return -r;
    if (r) continue;
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
      fputs(PING_HELP, stdout);
      return EX_OK;
    }
    if (strcmp(argv[i], "--count") == 0 && i + 1 < argc) {
      if (ctl_parse_long(argv[++i], &count) || count < 1) return ctl_usage("--count: \"%s\" is not a positive integer", argv[i]);
      continue;
    }
    return ctl_usage("ping: unexpected argument \"%s\"", argv[i]);
  }
  cc_client *c;
  int rc = ctl_connect_or_report(co, &c);
  if (rc) return rc;
  double best = 1e300, sum = 0;
  Contactd__V1__HelloReply *hr = NULL;
  cc_error e;
  for (long k = 0; k < count; k++) {
    cc_free(hr);
    hr = NULL;
    double t0 = ctl_now_s();
    if (cc_hello(c, "contactctl", &hr, &e)) {
      cc_close(c);
      return ctl_report("ping", &e);
    }
    double dt = ctl_now_s() - t0;
    sum += dt;
    if (dt < best) best = dt;
  }
  if (co->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "server_version", hr->server_version);
    ctl_jadd(o, "protocol_version", hr->protocol_version);
    cJSON_AddStringToObject(o, "store", hr->store ? hr->store : "");
    ctl_jadd(o, "round_trip_ms_min", best * 1e3);
    ctl_jadd(o, "round_trip_ms_mean", sum / (double)count * 1e3);
    cJSON *caps = cJSON_AddArrayToObject(o, "capabilities");
    for (size_t i = 0; i < hr->n_capabilities; i++) cJSON_AddItemToArray(caps, cJSON_CreateString(hr->capabilities[i]));
    ctl_print_json(o);
  } else {
    printf("pong: contactd %s, protocol %u, round trip %.3f ms", hr->server_version, hr->protocol_version,
           best * 1e3);
    if (count > 1) printf(" (min of %ld, mean %.3f ms)", count, sum / (double)count * 1e3);
    printf("\n");
  }
  cc_free(hr);
  cc_close(c);
  return EX_OK;
}
