/* cd_log.h — structured logs on stderr, one line per event (logfmt):
 *   ts=2026-01-01T00:00:00.123Z level=info msg="listening" tcp=127.0.0.1:7411
 * Thread-safe: each line leaves in a single write(2). */
#ifndef CD_LOG_H
#define CD_LOG_H

typedef enum { CD_LOG_DEBUG = 0, CD_LOG_INFO, CD_LOG_WARN, CD_LOG_ERROR } cd_log_level;

/* Lines below `level` are dropped (default: info). */
void cd_log_set_level(cd_log_level level);
/* Parse "debug" / "info" / "warn" / "error"; -1 if unknown. */
int cd_log_parse_level(const char *s);

/* `msg` is quoted for you; `kv` is a printf format producing the
 * key=value pairs (may be NULL). String values that may hold spaces should be
 * passed through cd_log_quote. */
void cd_log(cd_log_level level, const char *msg, const char *kv, ...)
    __attribute__((format(printf, 3, 4)));

/* Quote s for a logfmt value into buf (always NUL-terminated and valid
 * UTF-8: a byte that starts no valid sequence becomes '?'); returns buf. */
const char *cd_log_quote(char *buf, unsigned size, const char *s);

#define CD_INFO(msg, ...) cd_log(CD_LOG_INFO, msg, __VA_ARGS__)
#define CD_WARN(msg, ...) cd_log(CD_LOG_WARN, msg, __VA_ARGS__)
#define CD_ERROR(msg, ...) cd_log(CD_LOG_ERROR, msg, __VA_ARGS__)
#define CD_DEBUG(msg, ...) cd_log(CD_LOG_DEBUG, msg, __VA_ARGS__)

#endif
