/* cd_store_redis.c — the Redis store (redis://HOST:PORT[/DB], unix:PATH):
 * one blocking hiredis connection per store thread, connected on first use
 * within store_connect_timeout_ms, every command bounded by
 * store_timeout_ms (redisSetTimeout). After any error the connection is
 * dropped and the next operation reconnects (AUTH, SELECT). Writes are
 * SET key value NX: the first writer stores, a second does nothing;
 * deletes are DEL. */
#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "cd_store.h"

typedef struct redis_ctx {
  const cd_store_cfg *cfg;
  redisContext *rc;
} redis_ctx;

static struct timeval tv_ms(uint64_t ms) {
  struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
  return tv;
}

static void *redis_open(const void *cfg) {
  redis_ctx *c = calloc(1, sizeof *c);
  if (c) c->cfg = cfg;
  return c;
}

static void drop(redis_ctx *c) {
  if (c->rc) redisFree(c->rc);
  c->rc = NULL;
}

/* A command's reply, or NULL with why[] set (the connection is dropped). */
static redisReply *command(redis_ctx *c, int argc, const char **argv, const size_t *lens, char *why, size_t whylen) {
  redisReply *r = redisCommandArgv(c->rc, argc, argv, lens);
  if (!r) {
    snprintf(why, whylen, "%s: %s", argv[0], c->rc->errstr[0] ? c->rc->errstr : "no reply");
    drop(c);
    return NULL;
  }
  if (r->type == REDIS_REPLY_ERROR) {
    snprintf(why, whylen, "%s: %s", argv[0], r->str ? r->str : "error");
    freeReplyObject(r);
    drop(c); /* a server refusing commands (loading, auth) gets a fresh connection next time */
    return NULL;
  }
  return r;
}

static int ensure(redis_ctx *c, char *why, size_t whylen) {
  if (c->rc) return 0;
  const cd_store_cfg *k = c->cfg;
  c->rc = k->kind == 3 ? redisConnectUnixWithTimeout(k->path, tv_ms(k->connect_timeout_ms))
                       : redisConnectWithTimeout(k->host, k->port, tv_ms(k->connect_timeout_ms));
  if (!c->rc || c->rc->err) {
    snprintf(why, whylen, "connect: %s", c->rc ? c->rc->errstr : "out of memory");
    drop(c);
    return -1;
  }
  if (redisSetTimeout(c->rc, tv_ms(k->op_timeout_ms)) != REDIS_OK) {
    snprintf(why, whylen, "cannot set the socket timeout");
    drop(c);
    return -1;
  }
  if (k->password[0]) {
    const char *argv[2] = {"AUTH", k->password};
    size_t lens[2] = {4, strlen(k->password)};
    redisReply *r = command(c, 2, argv, lens, why, whylen);
    if (!r) return -1;
    freeReplyObject(r);
  }
  if (k->db) {
    char db[16];
    snprintf(db, sizeof db, "%d", k->db);
    const char *argv[2] = {"SELECT", db};
    size_t lens[2] = {6, strlen(db)};
    redisReply *r = command(c, 2, argv, lens, why, whylen);
    if (!r) return -1;
    freeReplyObject(r);
  }
  return 0;
}

static cd_be_rc redis_get(void *ctx, const char *key, uint8_t **data, size_t *len, char *why, size_t whylen) {
  redis_ctx *c = ctx;
  if (ensure(c, why, whylen)) return CD_BE_ERROR;
  const char *argv[2] = {"GET", key};
  size_t lens[2] = {3, strlen(key)};
  redisReply *r = command(c, 2, argv, lens, why, whylen);
  if (!r) return CD_BE_ERROR;
  cd_be_rc rc = CD_BE_MISS;
  if (r->type == REDIS_REPLY_STRING) {
    /* a value larger than any record we write is foreign: read as empty */
    size_t n = (uint64_t)r->len > c->cfg->max_record_bytes ? 0 : r->len;
    *data = malloc(n ? n : 1);
    if (*data) {
      memcpy(*data, r->str, n);
      *len = n;
      rc = CD_BE_OK;
    } else {
      snprintf(why, whylen, "out of memory for %zu bytes", r->len);
      rc = CD_BE_ERROR;
    }
  } else if (r->type != REDIS_REPLY_NIL) {
    snprintf(why, whylen, "GET: unexpected reply type %d", r->type);
    rc = CD_BE_ERROR;
  }
  freeReplyObject(r);
  return rc;
}

static cd_be_rc redis_put(void *ctx, const char *key, const uint8_t *data, size_t len, char *why, size_t whylen) {
  redis_ctx *c = ctx;
  if (ensure(c, why, whylen)) return CD_BE_ERROR;
  const char *argv[4] = {"SET", key, (const char *)data, "NX"};
  size_t lens[4] = {3, strlen(key), len, 2};
  redisReply *r = command(c, 4, argv, lens, why, whylen);
  if (!r) return CD_BE_ERROR;
  cd_be_rc rc = r->type == REDIS_REPLY_NIL ? CD_BE_EXISTS : CD_BE_OK;
  freeReplyObject(r);
  return rc;
}

static cd_be_rc redis_del(void *ctx, const char *key, char *why, size_t whylen) {
  redis_ctx *c = ctx;
  if (ensure(c, why, whylen)) return CD_BE_ERROR;
  const char *argv[2] = {"DEL", key};
  size_t lens[2] = {3, strlen(key)};
  redisReply *r = command(c, 2, argv, lens, why, whylen);
  if (!r) return CD_BE_ERROR;
  cd_be_rc rc = r->type == REDIS_REPLY_INTEGER && r->integer > 0 ? CD_BE_OK : CD_BE_MISS;
  freeReplyObject(r);
  return rc;
}

static void redis_close(void *ctx) {
  redis_ctx *c = ctx;
  drop(c);
  free(c);
}

const cd_store_backend cd_store_redis_backend = {"redis", redis_open, redis_get, redis_put, redis_del, redis_close};
