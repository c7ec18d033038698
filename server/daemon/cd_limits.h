/* cd_limits.h — every limit the daemon enforces, in one place.
 *
 * Each row: C field, config-file key (inside "limits"), default, minimum,
 * unit, what it bounds. The config file overrides a default (cd_config.c);
 * nothing else in the daemon hard-codes a limit. The same table is
 * reported to clients in the Hello reply and in --help, so documentation
 * cannot drift.
 *
 * Memory bound per connection is roughly
 *   max_frame_bytes (input buffer) + decode_budget_bytes (one decoded frame)
 *   + max_output_bytes (queued replies)
 *   + 2 * max_reply_bytes per reply being built (its converted results, then
 *     its encoded frame; 3x for JSON, whose text is copied once)
 * where the converted results of all replies being built, on every
 * connection together, stay under reply_memory_bytes (so many in-flight
 * queries, on one connection or many, cannot each take max_reply_bytes),
 * and the input side of all connections together (frames being received,
 * and the decoded requests waiting for or in their computation) stays
 * under request_memory_bytes, give or take one decoded frame: a frame is
 * taken only when its announced length fits what is left (a JSON line,
 * whose length is unknown up front, when anything is left), first come
 * first served, and the connection's reading pauses until then (so a
 * frame announced but not sent cannot hold that room for ever: while
 * others wait, a frame being received must arrive within frame_grace_ms
 * plus its bytes so far at frame_min_rate_bytes, or its connection is
 * closed with an error);
 * and the queued replies of all connections together (what each holds under
 * max_output_bytes) stay under output_memory_bytes: past it the connections
 * holding the most are closed first (cd_outmem.c);
 * and the cache is bounded by cache_bytes (unreferenced entries are evicted
 * least-recently-used first). The HTTP port holds at most max_http_heads
 * connections reading their request head (a 4 KiB buffer and, with TLS, a
 * handshake's state each) for at most http_head_timeout_ms, and at most
 * max_metrics_connections being answered (a /metrics response of at most
 * max_metrics_bytes), besides health probes, whose answers are a few
 * bytes written at once; each for at most
 * metrics_timeout_ms (an event stream, once its request is read, for as
 * long as its viewer stays, at most max_viewers of them, each holding one
 * update being written, a kernel send buffer of viewer_send_buffer_bytes
 * and no queue); published scenes hold one result
 * each, at most max_published_scenes of them. */
#ifndef CD_LIMITS_H
#define CD_LIMITS_H

#include <stdint.h>

#include "ce.h" /* CE_DEFAULT_MAX_TETS: the engine's own bound, max_mesh_elements' default */

#define CD_MIB (UINT64_C(1) << 20)

/* XX(field, default, minimum, unit, description). A value below its
 * minimum is refused when the config is read (a zero that would refuse
 * every request of a kind, such as max_bodies_per_query 0, is a typo, not
 * a setting); where 0 is allowed the description says what it means. */
#define CD_LIMITS_MAP(XX)                                                                  \
  XX(max_frame_bytes, 256 * CD_MIB, 16, "bytes",                                           \
     "largest Envelope (or JSON line) accepted; checked before allocating")                \
  XX(decode_budget_bytes, 256 * CD_MIB, 0, "bytes",                                        \
     "heap that decoding one frame may allocate (protobuf-c allocates per struct); "       \
     "0 = no limit")                                                                       \
  XX(max_bodies_per_query, 10000, 1, "bodies", "bodies in one ContactQuery or OpenStream") \
  XX(max_pairs_per_query, 1000000, 1, "pairs",                                             \
     "explicit pairs, or broad-phase candidates, in one query")                            \
  XX(max_inflight_per_conn, 256, 1, "requests",                                            \
     "requests read but not yet answered on one connection; reading pauses beyond it")    \
  XX(max_output_bytes, 256 * CD_MIB, 0, "bytes",                                           \
     "reply bytes one connection's socket has not taken, beyond the oldest reply; a "      \
     "client that stops reading is dropped (0 = at the first reply queued behind another)") \
  XX(max_reply_bytes, 256 * CD_MIB, 0, "bytes",                                            \
     "memory building one reply may take: its converted results, and its encoding; "      \
     "0 = no limit")                                                                       \
  XX(reply_memory_bytes, 1024 * CD_MIB, 0, "bytes",                                        \
     "converted results of all replies being built, server-wide; a query past it fails; " \
     "0 = no limit")                                                                       \
  XX(request_memory_bytes, 1024 * CD_MIB, 0, "bytes",                                      \
     "frames being received plus decoded requests not yet answered, server-wide; a "     \
     "connection's next frame waits (reading pauses) until it fits; 0 = no limit, "        \
     "else at least max_frame_bytes")                                                      \
  XX(frame_grace_ms, 5000, 0, "ms",                                                        \
     "while frames wait for request_memory_bytes, one being received may take this long " \
     "plus its bytes so far at frame_min_rate_bytes, or its connection is closed")        \
  XX(frame_min_rate_bytes, 65536, 0, "bytes/s",                                            \
     "the slowest a frame holding request memory may arrive while others wait (0 = any)")  \
  XX(idle_timeout_ms, 300000, 0, "ms",                                                     \
     "a connection with no traffic and no work is closed (0 = never)")                     \
  XX(linger_ms, 2000, 0, "ms",                                                             \
     "after an error that ends a connection, what the client still sends is read and "     \
     "dropped for up to this long, so the error reply is not lost to a TCP reset "         \
     "(0 = close at once)")                                                                \
  XX(max_connections, 1024, 1, "connections", "open client connections (TCP + Unix)")     \
  XX(max_streams_per_conn, 64, 0, "streams", "open streams on one connection (0 = no streams)") \
  XX(cache_bytes, 1024 * CD_MIB, 1, "bytes",                                               \
     "geometry cache budget; unreferenced entries are evicted LRU beyond it")             \
  XX(max_mesh_elements, CE_DEFAULT_MAX_TETS, 1, "elements",                                \
     "vertices, tets or triangles in one geometry (estimated for primitives)")            \
  XX(worker_arena_bytes, 1024 * CD_MIB, 0, "bytes",                                        \
     "scratch one worker may use for a query (0 = no limit)")                              \
  XX(pairs_per_job, 8, 1, "pairs", "a query with more pairs is split into jobs of this size") \
  XX(build_workers, 0, 0, "workers",                                                       \
     "workers that may build registered geometry at once; 0 = all but one, so that "       \
     "queries always find a worker while geometry builds")                                \
  XX(result_poll_us, 100, 0, "us",                                                         \
     "after handing a job to a worker the loop polls for its result this long (yielding "  \
     "its core) before it sleeps, so a small query's reply need not wait for a sleeping "  \
     "core to wake; costs at most this much loop CPU per job (0 = sleep at once); a "      \
     "query of several jobs is not polled for")                                            \
  XX(max_metrics_connections, 16, 0, "connections",                                        \
     "connections of the HTTP port being answered at once, past their request head "      \
     "(/metrics, the viewer, its event streams); more get 503; /healthz and /readyz are "  \
     "answered beyond it (0 = no limit)")                                                  \
  XX(max_http_heads, 256, 1, "connections",                                                \
     "connections of the HTTP port still sending their request head (or TLS handshake); "  \
     "one more closes the oldest of them")                                                 \
  XX(http_head_timeout_ms, 5000, 1, "ms",                                                  \
     "an HTTP connection must finish its TLS handshake and request head within this long " \
     "of connecting, or it is closed")                                                     \
  XX(max_metrics_bytes, 4 * CD_MIB, 65536, "bytes",                                        \
     "largest /metrics exposition (it grows with workers and io_threads: 1024 workers and " \
     "256 loops take about 90 KiB); past it GET /metrics is answered 500, never "        \
     "truncated")                                                                          \
  XX(metrics_timeout_ms, 10000, 0, "ms",                                                   \
     "a connection of the HTTP port is closed this long after it opened, answered or not " \
     "(an event stream, once its request is read, stays; 0 = never)")                       \
  XX(max_viewers, 8, 0, "viewers",                                                         \
     "open viewer event streams on the HTTP port, each also one of its connections "       \
     "(0 = no event streams)")                                                             \
  XX(viewer_max_rate_hz, 30, 1, "updates/s",                                               \
     "most scene updates sent to one viewer per second; a viewer holds at most one "       \
     "pending update, replaced by a newer one")                                            \
  XX(viewer_max_geometry_bytes, 64 * CD_MIB, 1024, "bytes",                                \
     "largest boundary-mesh response of GET /v1/geometry/<id>/surface (413 beyond)")       \
  XX(viewer_sessions, 1024, 1, "sessions",                                                 \
     "viewer sessions (a ?token= exchanged for a cookie, with principals set); one more "  \
     "replaces the one closest to expiring")                                               \
  XX(viewer_session_ttl_ms, 43200000, 1000, "ms", "how long a viewer session lasts")       \
  XX(max_published_scenes, 64, 1, "scenes",                                                \
     "scenes whose latest result is kept for viewers; publishing one more forgets the "    \
     "scene published least recently")                                                     \
  XX(store_connect_timeout_ms, 1000, 1, "ms",                                              \
     "connecting to the geometry store (Redis) gives up after this long")                  \
  XX(store_timeout_ms, 1000, 1, "ms",                                                      \
     "one store operation; a request waiting for the store is answered by then (NOT_FOUND " \
     "saying the store is unavailable when it has not answered)")                         \
  XX(store_threads, 4, 1, "threads", "store threads, each with its own store connection")  \
  XX(store_write_queue, 4096, 1, "writes",                                                 \
     "store writes waiting for a store thread (their records together also within "        \
     "cache_bytes); more are dropped (and counted)")                                      \
  XX(store_breaker_failures, 3, 1, "failures",                                             \
     "store failures in a row that open the circuit breaker (operations then fail fast)")   \
  XX(store_breaker_open_ms, 2000, 1, "ms",                                                 \
     "an open breaker lets one probe through after this long; its success closes it")                                        \
  XX(io_threads, 0, 0, "loops",                                                            \
     "event loops serving connections, each on its own thread; a connection stays on "     \
     "one from accept to close; 0 = half the online cores, at least 2 (1 on one core), "  \
     "at most 8 "                                                                          \
     "(docs/scaling.md)")                                                                  \
  XX(output_memory_bytes, 0, 0, "bytes",                                                   \
     "reply bytes queued on all connections together; past it the connections holding "    \
     "the most are closed first (clients that read hold next to none); 0 = an eighth of "  \
     "the machine's memory, at least 64 MiB")                                              \
  XX(viewer_send_buffer_bytes, 65536, 4096, "bytes",                                       \
     "kernel send buffer of a viewer's event stream (SO_SNDBUF; the kernel doubles it): "  \
     "a viewer that stops reading stops being sent updates once it is full, instead of "   \
     "when the kernel's own buffer, up to megabytes, is")                                  \
  XX(hello_timeout_ms, 10000, 0, "ms",                                                     \
     "a new connection must finish its TLS handshake and its first request (an "          \
     "authenticated Hello when principals are set) within this long, or it is closed; "    \
     "then idle_timeout_ms applies (0 = no deadline)")                                     \
  XX(tls_handshake_turn_us, 2000, 0, "us",                                                  \
     "TLS handshake work one turn of an event loop does before it leaves the other "       \
     "handshakes' bytes for its next turns, so that many clients connecting at once do "   \
     "not stall the loop's open connections (0 = no bound)")                               \
  XX(max_connections_per_address, 64, 0, "connections",                                    \
     "open TCP connections from one source address (0 = no cap)")                          \
  XX(per_address_exempt_loopback, 1, 0, "flag",                                            \
     "1: loopback addresses are exempt from max_connections_per_address (the Unix "        \
     "socket always is)")                                                                  \
  XX(auth_fail_max, 10, 1, "failures",                                                     \
     "failed authentications from one address within auth_fail_window_ms that lock it "    \
     "out for auth_lockout_ms; from half of them on, each answer waits auth_fail_delay_ms") \
  XX(auth_fail_window_ms, 60000, 1, "ms", "how long a failed authentication is remembered") \
  XX(auth_fail_delay_ms, 1000, 0, "ms",                                                    \
     "the wait before answering an address with recent failures (0 = none)")               \
  XX(auth_lockout_ms, 300000, 1, "ms",                                                     \
     "how long a locked-out address is refused without its credentials being checked")     \
  XX(refusal_log_window_ms, 10000, 1, "ms",                                                \
     "refusals of one kind (per-address cap, lock-outs, the HTTP port's) are counted "    \
     "always and logged at most once per this window")                                    \
  XX(tenant_visible_max, 262144, 1, "pairs",                                               \
     "(tenant, geometry id) pairs whose visibility the server remembers (about 150 bytes "  \
     "each); past it the oldest is forgotten here and asked of the store again (without "  \
     "a store, that tenant registers the geometry again)")                                 \
  XX(tenant_recheck_ms, 10000, 0, "ms",                                                    \
     "with a store, a tenant's visibility of an id not confirmed by the store for this "   \
     "long is confirmed again when next used (answered meanwhile), so a release on "       \
     "another replica reaches this one within it (0 = never)")

typedef struct cd_limits {
#define CD_XX_FIELD(field, def, min, unit, desc) uint64_t field;
  CD_LIMITS_MAP(CD_XX_FIELD)
#undef CD_XX_FIELD
} cd_limits;

/* The number of rows of the table. */
#define CD_XX_COUNT(field, def, min, unit, desc) +1
enum { CD_LIMITS_COUNT = 0 CD_LIMITS_MAP(CD_XX_COUNT) };
#undef CD_XX_COUNT

/* Fill *l with the defaults above. */
static inline void cd_limits_default(cd_limits *l) {
#define CD_XX_DEF(field, def, min, unit, desc) l->field = (uint64_t)(def);
  CD_LIMITS_MAP(CD_XX_DEF)
#undef CD_XX_DEF
}

/* Quaternion rule (also stated in the Hello reply): a pose quaternion q is
 * rejected with INVALID_ARGUMENT naming the body when |q| is outside
 * [1 - CD_QUAT_TOLERANCE, 1 + CD_QUAT_TOLERANCE]; otherwise it is normalised.
 * Non-finite pose or velocity components are INVALID_ARGUMENT. */
#define CD_QUAT_TOLERANCE 1e-3

/* Where work runs, not limits. Request bodies (frames or JSON lines) of at
 * least CD_DECODE_OFF_LOOP_BYTES are decoded on the server's codec thread
 * rather than on the loop, so one large upload (a 4096^2 heightfield
 * decodes for ~100 ms) does not hold up every other connection; its own
 * connection reads nothing more until the body is decoded, so its requests
 * are still taken in order. Replies whose converted results reach
 * CD_ENCODE_OFF_LOOP_BYTES are encoded there too (JSON: ~60 ms per MB). */
#define CD_DECODE_OFF_LOOP_BYTES (UINT64_C(1) << 20)
#define CD_ENCODE_OFF_LOOP_BYTES (UINT64_C(256) << 10)
/* The broad phase of an all-pairs query (or stream update) with at least
 * CD_BROADPHASE_OFF_LOOP_BODIES bodies runs on a worker, in the query's
 * turn, before its pairs are split into jobs (500 bodies: ~0.1 ms the loop
 * would otherwise spend per query); a smaller one runs at once on the loop,
 * where it costs less than the hand-off. */
#define CD_BROADPHASE_OFF_LOOP_BODIES 64

/* Authentication (cd_principals.c): the principals file is read whole, at
 * most CD_PRINCIPALS_FILE_MAX bytes, with at most CD_PRINCIPALS_MAX
 * principals; a token longer than CD_TOKEN_MAX_BYTES is refused before it
 * is hashed. */
#define CD_PRINCIPALS_FILE_MAX (UINT64_C(4) << 20)
#define CD_PRINCIPALS_MAX 65536
#define CD_TOKEN_MAX_BYTES 4096

/* Every listener's accept backlog. A burst of connections (hundreds of
 * slow request heads, a fleet reconnecting after a restart) waits in it
 * while the loop is busy or not scheduled; when it is full the kernel
 * drops SYNs, and an honest client (a health probe) then waits out TCP's
 * 1 s retransmission. Linux caps it at net.core.somaxconn (4096 by
 * default since 5.4). */
#define CD_LISTEN_BACKLOG 4096

#define CD_PROTOCOL_VERSION 1

#endif /* CD_LIMITS_H */
