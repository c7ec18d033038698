/* cd_session.h — a connection's protocol state (cd_session in cd_proto.h):
 * the geometry its client registered or asked about, held so the cache
 * cannot evict it while the client may use it, and its streams
 * (cd_stream.h). Loop thread of the connection. */
#ifndef CD_SESSION_H
#define CD_SESSION_H

#include "cd_proto.h"

/* Hold e for c's session. Adding an id already held is a no-op. -1 when
 * out of memory (the session does not hold it then). */
int cd_session_hold_geometry(cd_conn *c, cd_cache_entry *e);
/* 1 if the session held e (and now does not). */
int cd_session_release_geometry(cd_conn *c, cd_cache_entry *e);
/* c is closing: its geometry references go (so the cache can evict) and
 * its streams close (freed once idle). */
void cd_session_close(cd_conn *c);

#endif
