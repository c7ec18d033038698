/* cd_stream.h — streams: OpenStream fixes bodies, pairs and options;
 * StreamUpdate carries poses/velocities and a sequence number and is
 * answered by a StreamResult (request_id of the OpenStream). In latest-only
 * mode at most one update per stream is computing; a newer update replaces
 * the one waiting behind it, which is dropped (no reply) and counted. */
#ifndef CD_STREAM_H
#define CD_STREAM_H

#include "cd_proto.h"
#include "cd_query.h"

struct cd_stream {
  cd_conn *conn;
  uint64_t id;
  uint64_t open_request_id;
  cd_qbody *bodies; /* current state; entries pinned for the stream's life */
  int32_t nbodies;
  cd_qindex index;  /* body id -> index into bodies */
  cd_qpair *pairs;  /* explicit pairs (all_pairs == 0) */
  int64_t npairs;
  int all_pairs;
  double margin;
  cd_qpair *exclude;
  size_t nexclude;
  cd_qopts opt;
  int latest_only;
  uint64_t updates, results, dropped, dropped_since_result;
  uint64_t last_sequence;
  int have_sequence;
  int running;      /* queries in flight */
  int has_next;     /* latest-only: an update waiting to start */
  uint64_t next_slot, next_sequence, next_t0;
  int closed;
  cd_stream *next;
};

void cd_stream_open(cd_req *r);
void cd_stream_update(cd_req *r);
void cd_stream_close(cd_req *r);
/* The connection is going away: close every stream (freed when idle). */
void cd_stream_close_all(cd_conn *c);

#endif
