/* cd_session.c — a connection's geometry references and its streams' end. */
#include "cd_session.h"

#include <stdlib.h>

#include "cd_cache.h"
#include "cd_principals.h"
#include "cd_proto.h"
#include "cd_stream.h"

int cd_session_hold_geometry(cd_conn *c, cd_cache_entry *e) {
  cd_session *s = cd_conn_session(c);
  for (size_t i = 0; i < s->ngeoms; i++)
    if (s->geoms[i] == e) return 0;
  if (s->ngeoms == s->geoms_cap) {
    size_t nc = s->geoms_cap ? 2 * s->geoms_cap : 8;
    cd_cache_entry **ng = realloc(s->geoms, nc * sizeof *ng);
    if (!ng) return -1;
    s->geoms = ng;
    s->geoms_cap = nc;
  }
  s->geoms[s->ngeoms++] = e;
  cd_cache_ref(e);
  return 0;
}

int cd_session_release_geometry(cd_conn *c, cd_cache_entry *e) {
  cd_session *s = cd_conn_session(c);
  for (size_t i = 0; i < s->ngeoms; i++)
    if (s->geoms[i] == e) {
      s->geoms[i] = s->geoms[--s->ngeoms];
      cd_cache_unref(e);
      return 1;
    }
  return 0;
}

void cd_session_close(cd_conn *c) {
  cd_session *s = cd_conn_session(c);
  for (size_t i = 0; i < s->ngeoms; i++) cd_cache_unref(s->geoms[i]);
  s->ngeoms = 0;
  cd_stream_close_all(c);
  cd_principals_unref(s->principals);
  s->principals = NULL;
  s->principal = NULL;
}
