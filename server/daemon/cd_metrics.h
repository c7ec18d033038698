/* cd_metrics.h — the HTTP port: a minimal HTTP/1.0 responder on the loop.
 * GET /metrics (Prometheus text format), /healthz (liveness: the loop
 * answers) and /readyz (readiness: 503 while shutting down) here; the
 * viewer's paths in cd_viewer.c (cd_http.h is what it sees of a
 * connection). One request per connection: a malformed request line is
 * 400, one over 4 KiB 431, a method other than GET 405, an unknown path
 * 404. At most max_metrics_connections are open at once (more are closed
 * on accept), and each is closed metrics_timeout_ms after it was accepted,
 * answered or not, except an event stream once its request is read. */
#ifndef CD_METRICS_H
#define CD_METRICS_H

#include <uv.h>

typedef struct cd_server cd_server;
typedef struct cd_metrics cd_metrics;

/* Listen on host:port (port 0 = ephemeral; *bound receives the port). */
cd_metrics *cd_metrics_start(cd_server *s, const char *host, int port, int *bound);
/* Stop listening and close open metric connections. */
void cd_metrics_stop(cd_metrics *m);

/* Prometheus text exposition of the server state into buf; returns length
 * (cd_metrics_text.c). */
size_t cd_metrics_render(cd_server *s, char *buf, size_t cap);

#endif
