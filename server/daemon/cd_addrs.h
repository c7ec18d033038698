/* cd_addrs.h — what the daemon remembers about each source address: its
 * open connections (max_connections_per_address) and its failed
 * authentications (auth_fail_*), so that one address can neither fill
 * max_connections with silent connections nor guess tokens at full speed.
 *
 * Addresses are the peer's IP address as text, without the port ("::1",
 * "127.0.0.2"). The table is shared by every loop, under its own mutex
 * (taken once per accept, close and authentication, never while computing),
 * and bounded: an address with no open connection and no failure within
 * its window is forgotten first when the table is full. */
#ifndef CD_ADDRS_H
#define CD_ADDRS_H

#include <stddef.h>
#include <stdint.h>

typedef struct cd_addrs cd_addrs;

typedef struct cd_addrs_config {
  uint64_t max_per_address;  /* open connections per address; 0 = no cap */
  uint64_t fail_max;         /* failures within fail_window_ms that lock an address out */
  uint64_t fail_window_ms;   /* failures older than this are forgotten */
  uint64_t fail_delay_ms;    /* from fail_max / 2 failures on, each answer waits this long */
  uint64_t lockout_ms;       /* how long a locked-out address is refused */
  size_t max_entries;        /* addresses remembered at once */
} cd_addrs_config;

cd_addrs *cd_addrs_new(const cd_addrs_config *cfg);
void cd_addrs_free(cd_addrs *t);

/* A connection from addr opens: 0, or -1 when addr already has
 * max_per_address open (the caller refuses it; nothing is counted). */
int cd_addrs_open(cd_addrs *t, const char *addr);
/* A connection from addr that cd_addrs_open admitted closes. */
void cd_addrs_close(cd_addrs *t, const char *addr);

typedef enum {
  CD_AUTH_GO = 0,  /* check the credentials now */
  CD_AUTH_WAIT,    /* check them, but answer after *wait_ms (recent failures) */
  CD_AUTH_LOCKED,  /* refuse without checking: locked out for *wait_ms more */
} cd_auth_verdict;

/* Before checking credentials from addr at now_ms. */
cd_auth_verdict cd_addrs_auth_check(cd_addrs *t, const char *addr, uint64_t now_ms, uint64_t *wait_ms);
/* A failed authentication from addr at now_ms. Returns 1 when this failure
 * locked the address out (log it once), else 0. */
int cd_addrs_auth_failed(cd_addrs *t, const char *addr, uint64_t now_ms);

/* Totals since start, for /metrics. */
typedef struct cd_addrs_stats {
  uint64_t refused_per_address; /* connections refused by max_per_address */
  uint64_t auth_failures;
  uint64_t auth_delayed;
  uint64_t auth_locked;         /* attempts refused while locked out */
  uint64_t lockouts;            /* addresses locked out */
  uint64_t tracked;             /* addresses remembered now */
} cd_addrs_stats;
void cd_addrs_get_stats(cd_addrs *t, cd_addrs_stats *out);

#endif
