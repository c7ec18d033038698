/* cd_viewer.h — the viewer on the HTTP port: the page and its assets at /,
 * the published scenes (/v1/scenes, /v1/scenes/<name>), their updates as
 * server-sent events (/v1/scenes/<name>/events) and geometry boundary
 * meshes (/v1/geometry/<id>/surface). HTTP loop only, except the hook that
 * cd_publish calls after a publication (uv_async_send, any thread) and the
 * encoding of updates, which runs on the server's codec thread, once per
 * snapshot for all the viewers of its scene (the HTTP loop also serves
 * query connections).
 *
 * Each event stream holds at most one update being written and remembers
 * only the version it last sent: when its write completes (and at most
 * viewer_max_rate_hz times a second) it is sent the scene's latest version
 * if that is newer. Versions published meanwhile are never queued, so a
 * viewer that stops reading holds one update's bytes, and publishing never
 * waits for a viewer. */
#ifndef CD_VIEWER_H
#define CD_VIEWER_H

#include "cd_http.h"

typedef struct cd_viewers cd_viewers;

cd_viewers *cd_viewer_start(cd_server *s);
/* After the HTTP port's connections are closed: stop the hook and timers. */
void cd_viewer_stop(cd_viewers *v);
/* The assets directory in use, or "(none)". */
const char *cd_viewer_assets_dir(const cd_viewers *v);
/* Answer req on c if the path is the viewer's; 0 if not (the caller 404s). */
int cd_viewer_route(cd_viewers *v, cd_http_conn *c, const cd_http_req *req);

#endif
