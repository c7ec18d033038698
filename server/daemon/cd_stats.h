/* cd_stats.h — server counters and the request latency histogram, shared
 * by every loop: each field is atomic (++ and += are atomic read-modify-
 * writes, plain reads atomic loads), so no lock guards them; a reader sees
 * each counter exact, not all of them at one instant. */
#ifndef CD_STATS_H
#define CD_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#define CD_LATENCY_BUCKETS 16
/* Upper bounds in µs of the first CD_LATENCY_BUCKETS - 1 buckets; the last
 * bucket is unbounded. */
extern const double cd_latency_bounds_us[CD_LATENCY_BUCKETS - 1];

typedef struct cd_stats {
  _Atomic uint64_t connections, connections_total, connections_rejected;
  _Atomic uint64_t requests, errors, pairs, streams;
  _Atomic uint64_t replies_over_limit; /* queries failed over max_reply_bytes or reply_memory_bytes */
  _Atomic uint64_t disconnects_slow_reader, disconnects_idle, disconnects_framing;
  _Atomic uint64_t disconnects_slow_sender; /* a frame held request memory, arriving too slowly */
  _Atomic uint64_t disconnects_output_memory; /* cut over output_memory_bytes (cd_outmem.c) */
  _Atomic uint64_t disconnects_hello_timeout; /* no (authenticated) first request within hello_timeout_ms */
  _Atomic uint64_t disconnects_tls;           /* TLS refused or failed: handshake, certificate, plaintext */
  _Atomic uint64_t tls_handshakes;            /* TLS handshakes completed */
  /* The HTTP port (cd_http.c): connections closed for not finishing their
   * request head within http_head_timeout_ms; requests answered 401 (no,
   * or a wrong, token); TLS handshakes it completed or refused. */
  _Atomic uint64_t http_head_timeouts, http_unauthorized, http_tls_handshakes, http_tls_failures;
  _Atomic uint64_t input_waits; /* a frame waited for request_memory_bytes */
  _Atomic uint64_t decoded_off_loop; /* request bodies decoded on the codec thread */
  _Atomic uint64_t encoded_off_loop; /* replies encoded on the codec thread */
  _Atomic uint64_t latency[CD_LATENCY_BUCKETS];
  _Atomic double latency_sum_us;
  uint64_t start_ns; /* set before the loops start */
} cd_stats;

void cd_stats_init(cd_stats *s);
void cd_stats_latency(cd_stats *s, double us);
/* Monotonic clock, ns. */
uint64_t cd_stats_now_ns(void);

#endif
