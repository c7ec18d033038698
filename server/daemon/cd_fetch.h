/* cd_fetch.h — geometry that is not in memory, fetched from the store
 * before a request that names it is answered.
 *
 * A ContactQuery, OpenStream or HasGeometry naming an id the cache does not
 * hold READY is held back while the store is asked (off the loop,
 * cd_store.h). So is one naming an id that the connection's tenant is not
 * known here to see (cd_tenants.h): the tenant's marker is asked for
 * first, and found, the tenant sees the id and its geometry is looked at
 * as above; not found, the id is left unseen (the handler answers as for
 * an unknown id). A hit is built on the workers as a PENDING cache entry, so
 * every request (and registration) wanting that id waits for the one
 * build. Once each of its ids is settled the request is handled as if it
 * had just arrived: ids found are in the cache (pinned until then), ids
 * not found answer NOT_FOUND as before. When the store failed for an id a
 * query or stream needs, the request gets NOT_FOUND saying the store is
 * unavailable and to register the geometry again (within
 * store_timeout_ms). Replies keep their request order (the reply ring).
 * Loop thread, like the cache. */
#ifndef CD_FETCH_H
#define CD_FETCH_H

#include <stdint.h>

typedef struct cd_req cd_req;
typedef struct cd_server cd_server;
typedef struct cd_fetch cd_fetch;

cd_fetch *cd_fetch_create(void);
void cd_fetch_destroy(cd_fetch *f);
/* Geometries built from store records since the start. */
uint64_t cd_fetch_loads(cd_fetch *f);

/* Take r when it names geometry the store may hold (1: r is handled
 * later, through the server's protocol entry, cd_proto.h), else 0
 * (handle it now). */
int cd_fetch_intercept(cd_req *r);

#endif
