/* td_redis.h — a redis-server of a test's own: on a free loopback port, in
 * a fresh directory under $TMPDIR (td_mkdtemp), saving nothing. Shared by
 * the store and tenant tests (tests/daemon) and the client's replica test
 * (tests/client), which wrap it in their own assertions. */
#ifndef TD_REDIS_H
#define TD_REDIS_H

#include <sys/types.h>

typedef struct td_redis {
  pid_t pid; /* 0 when not running */
  int port;
  char dir[256];
  char uri[64]; /* redis://127.0.0.1:PORT */
} td_redis;

/* A loopback TCP port nothing listens on now. */
int td_free_port(void);
/* 1 when a redis-server on port answers PING. */
int td_redis_ping(int port);
/* Start redis-server (the binary at bin) in a fresh directory on a free
 * port, with the extra arguments (NULL-terminated, may be NULL), and wait
 * up to 5 s until it answers PING (with --requirepass: until it answers at
 * all). 0, or -1 with *why saying what failed. */
int td_redis_start(td_redis *r, const char *bin, const char *const *extra, const char **why);
/* Start it again on r's port and directory (after td_redis_kill). */
int td_redis_run(td_redis *r, const char *bin, const char *const *extra, const char **why);
/* SIGCONT (it may be stopped), then sig; wait for it. */
void td_redis_kill(td_redis *r, int sig);
/* SIGTERM it if it runs, and remove its directory. */
void td_redis_stop(td_redis *r);

#endif
