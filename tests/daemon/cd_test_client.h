/* cd_test_client.h — integration-test harness: start the real contactd
 * binary on an ephemeral port (plus a Unix socket), and a small blocking
 * client speaking delimited protobuf or newline-delimited JSON. */
#ifndef CD_TEST_CLIENT_H
#define CD_TEST_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "contactd.pb-c.h"
#include "td_proc.h"

/* The daemon process (tests/common/td_proc.h): pid, port, metrics_port,
 * dir, unix_path, log_path. */
typedef td_proc tc_daemon;

/* Start contactd with --listen 127.0.0.1:0 --unix DIR/contactd.sock
 * --workers 2 and extra flags (NULL-terminated); waits until it is ready.
 * Aborts the test on failure. */
void tc_start(tc_daemon *d, const char *const *extra);
/* One daemon (tc_start with no extra flags) and one TCP connection to it,
 * tc_suite_fd, for a whole suite: give tc_suite_up and tc_suite_down as
 * the suite's .init and .fini. */
extern tc_daemon tc_suite_daemon;
extern int tc_suite_fd;
void tc_suite_up(void);
void tc_suite_down(void);
/* Write a config file `name` holding `json` in this process's own
 * directory (td_own_dir); returns its path (valid until the next call of
 * either function), for --config. Aborts when it cannot be written. */
const char *tc_config_file(const char *name, const char *json);
/* The same, holding {"limits": {limits}} (limits: the object's members,
 * JSON). */
const char *tc_limits_file(const char *name, const char *limits);
/* SIGTERM and wait: returns the exit status (or 128 + signal). */
int tc_stop(tc_daemon *d);
/* 1 if the process is still running. */
int tc_alive(tc_daemon *d);
/* Count lines of the daemon's log containing needle. */
int tc_log_count(tc_daemon *d, const char *needle);

int tc_connect_tcp(int port);
int tc_connect_unix(const char *path);

/* Protobuf framing. */
int tc_send(int fd, const Contactd__V1__Envelope *env);
int tc_send_raw(int fd, const void *data, size_t n);
/* Frame n envelopes into one buffer and send it with one write, so the server
 * reads them together. */
int tc_send_burst(int fd, const Contactd__V1__Envelope *env, int n);
/* NULL on EOF, error or timeout (ms). Free with contactd__v1__envelope__free_unpacked. */
Contactd__V1__Envelope *tc_recv(int fd, int timeout_ms);
/* The next frame's body as it came (malloc'd, *n bytes); NULL as tc_recv. */
uint8_t *tc_recv_frame(int fd, int timeout_ms, size_t *n);
/* 1 if the peer closed the connection within timeout_ms (reads and drops data). */
int tc_wait_closed(int fd, int timeout_ms);

/* JSON lines: send one line (newline added), receive one line (malloc'd). */
int tc_send_line(int fd, const char *json);
char *tc_recv_line(int fd, int timeout_ms);

/* Conveniences (protobuf): each sends one request and returns its reply. */
Contactd__V1__Envelope *tc_call(int fd, Contactd__V1__Envelope *req, int timeout_ms);
/* A Stats request → its reply, or NULL (nothing, another kind of reply, or
 * another request id). The caller frees it. */
Contactd__V1__Envelope *tc_stats(int fd, uint64_t request_id, int timeout_ms);
/* A RegisterGeometry for a compliant sphere, in the caller's rg and s. */
void tc_sphere_spec(Contactd__V1__RegisterGeometry *rg, Contactd__V1__Sphere *s, double radius, double modulus,
                    double hint);
/* Register a compliant sphere (radius, modulus, hint) → geometry id (malloc'd). */
char *tc_register_sphere(int fd, uint64_t request_id, double radius, double modulus, double hint);
/* Register a rigid half space → id. */
char *tc_register_halfspace(int fd, uint64_t request_id, int compliant, double modulus);
/* Open a stream → its id (ids start at 1), 0 when the reply is not an
 * OpenStreamReply echoing request_id (printed to stderr). */
uint64_t tc_open_stream(int fd, Contactd__V1__OpenStream *os, uint64_t request_id, int timeout_ms);
/* Open a stream of two bodies, 1 (geometry ga at (0, 0, za)) and 2 (gb at
 * (0, 0, zb)), and their pair, with options o (may be NULL) and mode (0:
 * the default) → its id, as tc_open_stream. */
uint64_t tc_open_pair_stream(int fd, const char *ga, double za, const char *gb, double zb,
                             Contactd__V1__QueryOptions *o, int mode, uint64_t request_id, int timeout_ms);
/* Send one StreamUpdate (sequence seq) that moves body body_id of stream sid
 * to (0, 0, z), unturned; 0 when sent. */
int tc_send_stream_update_z(int fd, uint64_t request_id, uint64_t sid, uint64_t seq, uint32_t body_id, double z);

/* Authentication (principals): the hex SHA-256 of a token, made with the
 * openssl CLI as an operator would for a principals file; a Hello with a
 * token (NULL: none) → its reply (free it); 0 when a Hello with token
 * authenticates fd as principal `name`, else -1. */
void tc_token_sha256_hex(const char *token, char out[65]);
Contactd__V1__Envelope *tc_hello(int fd, const char *token);
int tc_login(int fd, const char *token, const char *name);

/* Fill a body (id, geometry, position) in the caller's storage. */
void tc_body(Contactd__V1__Body *b, Contactd__V1__Pose *pose, Contactd__V1__Vec3 *pos, uint32_t id,
             const char *geometry_id, double x, double y, double z);

/* A ContactQuery envelope for two bodies (ids 1 and 2, geometries ga and gb,
 * unrotated at za and zb on the z axis) and the pair (1, 2), with the given
 * detail (0 = server default). All storage lives in the struct: keep it alive
 * while q->env is sent. */
typedef struct tc_pair_query {
  Contactd__V1__Body b[2], *bodies[2];
  Contactd__V1__Pose pose[2];
  Contactd__V1__Vec3 pos[2];
  Contactd__V1__Pair pair, *pairs[1];
  Contactd__V1__QueryOptions options;
  Contactd__V1__ContactQuery query;
  Contactd__V1__Envelope env;
} tc_pair_query;
void tc_pair_query_init(tc_pair_query *q, uint64_t request_id, const char *ga, double za, const char *gb,
                        double zb, Contactd__V1__Detail detail);

/* Check a Prometheus text exposition (text[0..n)) with `promtool check
 * metrics` (Debian's prometheus package): 0 when it parses and lints clean,
 * else -1 with promtool's findings (or why it could not run: promtool
 * missing fails, naming the package) in why. One lint finding is let
 * through: the latency metrics' names end in their unit, _us
 * (contactd_request_latency_us, contactd_store_latency_us_*), which
 * promtool calls an abbreviated unit; renaming them would break every
 * dashboard that reads them. */
int tc_promtool_check(const char *text, size_t n, char *why, size_t whylen);

#endif
