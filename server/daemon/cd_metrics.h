/* cd_metrics.h — the Prometheus text exposition of the server's state, the
 * body of GET /metrics on the HTTP port (cd_http.c). */
#ifndef CD_METRICS_H
#define CD_METRICS_H

#include <stddef.h>

typedef struct cd_server cd_server;

/* The exposition, malloc'd (the caller frees it), its length in *len. It
 * grows with --workers and --io-threads (a line per worker and three per
 * loop) and is held to max_metrics_bytes: NULL with *over set when it would
 * pass that, NULL with *over 0 when memory ran out. Never truncated. */
char *cd_metrics_render(cd_server *s, size_t *len, int *over);

#endif
