/* cd_http.h — the HTTP port (cd_http.c): a minimal HTTP/1.0 responder on
 * the loop. GET /metrics (Prometheus text format, cd_metrics.c; its own
 * bearer token when metrics_token_file is set), /healthz (liveness: the
 * loop answers) and /readyz (readiness: 503 while shutting down) there;
 * the viewer's paths in cd_viewer.c, which with principals set need a
 * principal (cd_webauth.h: 401 without). One request per connection: a
 * malformed request line is 400, one over 4 KiB 431, a method other than
 * GET 405, an unknown path 404. With a TLS certificate set the port
 * speaks HTTPS with it (plaintext too only when tls_required is false).
 *
 * Not easily held down: a connection must finish its TLS handshake and
 * request head within http_head_timeout_ms of connecting; at most
 * max_http_heads are reading their heads, and one more closes the one
 * that has taken longest; past its head a request counts against
 * max_metrics_connections (more get 503), except the probes, which are
 * always answered; refusals are counted (contactd_refused_total) and
 * logged once per refusal_log_window_ms. Each connection is closed
 * metrics_timeout_ms after it was accepted, answered or not, except an
 * event stream once its request is read.
 *
 * Below the server's start and stop, one connection as the routes that live
 * elsewhere (cd_viewer.c) see it. A request is answered once
 * (cd_http_respond: the connection closes when the response is written), or
 * turned into an event stream
 * (cd_http_stream_start): the deadline stops, the connection stays open
 * until the client goes or the server stops, and at most one buffer is
 * being written at a time (cd_http_send refuses a second), so a client
 * that stops reading holds one buffer, never a queue; its socket's kernel
 * send buffer is viewer_send_buffer_bytes, so that such a client's writes
 * stop completing after a few updates. */
#ifndef CD_HTTP_H
#define CD_HTTP_H

#include <stddef.h>

#include "cd_principals.h"

typedef struct cd_server cd_server;
typedef struct cd_http cd_http;
typedef struct cd_http_conn cd_http_conn;

/* Listen on host:port (port 0 = ephemeral; *bound receives the port). */
cd_http *cd_http_start(cd_server *s, const char *host, int port, int *bound);
/* Stop listening and close open connections (the viewers' event streams
 * too). */
void cd_http_stop(cd_http *h);

/* The request as parsed: method and path (query string cut off), and who
 * it is: its principal with principals set (what it may see: its tenant's
 * scenes, every tenant's with tenant "*" or the admin role), else NULL
 * (everything). */
typedef struct cd_http_req {
  const char *method;
  const char *path;
  const cd_principal *principal;
} cd_http_req;

cd_server *cd_http_server(const cd_http_conn *c);

/* Answer with body (copied) and close once it is written. Extra headers
 * (each ending in \r\n) may be NULL. */
void cd_http_respond(cd_http_conn *c, int code, const char *ctype, const char *extra_headers, const void *body,
                     size_t len);
/* The same with a malloc'd body the connection takes over. */
void cd_http_respond_owned(cd_http_conn *c, int code, const char *ctype, char *body, size_t len);
/* A plain-text answer whose body is a string literal, its length counted
 * by the compiler. */
#define CD_HTTP_RESPOND_TEXT(c, code, extra_headers, literal) \
  cd_http_respond((c), (code), "text/plain", (extra_headers), "" literal, sizeof(literal) - 1)

/* Turn the connection into an event stream: writes the response head
 * (200, text/event-stream), stops the deadline, keeps reading only to see
 * the client go. on_sent(arg) runs after each write completes; on_close(arg)
 * once when the connection starts closing (after it, no more callbacks and
 * c must not be used). 0, or -1 when it could not start (c is closed). */
int cd_http_stream_start(cd_http_conn *c, void (*on_sent)(void *), void (*on_close)(void *), void *arg);
/* Write buf (malloc'd, taken over; freed once written or on close). -1 if a
 * write is already in flight or the connection is closing (buf is freed). */
int cd_http_send(cd_http_conn *c, char *buf, size_t len);
int cd_http_busy(const cd_http_conn *c);
void cd_http_close(cd_http_conn *c);

#endif
