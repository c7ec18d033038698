/* cd_log.c — logfmt lines on stderr. */
#include "cd_log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cd_utf8.h"

static atomic_int g_level = CD_LOG_INFO;
static const char *const kNames[] = {"debug", "info", "warn", "error"};

void cd_log_set_level(cd_log_level level) { atomic_store(&g_level, (int)level); }

int cd_log_parse_level(const char *s) {
  for (int i = 0; i < 4; i++)
    if (strcmp(s, kNames[i]) == 0) return i;
  return -1;
}

const char *cd_log_quote(char *buf, unsigned size, const char *s) {
  unsigned n = 0;
  if (size < 3) {
    if (size) buf[0] = 0;
    return buf;
  }
  buf[n++] = '"';
  for (; s && *s && n + 3 < size; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') {
      buf[n++] = '\\';
      buf[n++] = (char)c;
    } else if (c < 0x20) {
      buf[n++] = ' ';
    } else {
      buf[n++] = (char)c;
    }
  }
  buf[n++] = '"';
  buf[n] = 0;
  cd_utf8_repair(buf); /* client bytes (a mesh file's token), or a character cut at the end */
  return buf;
}

void cd_log(cd_log_level level, const char *msg, const char *kv, ...) {
  if ((int)level < atomic_load(&g_level)) return;
  char line[2048];
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  struct tm tm;
  gmtime_r(&ts.tv_sec, &tm);
  char q[512];
  int n = snprintf(line, sizeof line, "ts=%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ level=%s msg=%s",
                   tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                   ts.tv_nsec / 1000000, kNames[level], cd_log_quote(q, sizeof q, msg));
  if (n < 0) return;
  if ((size_t)n >= sizeof line - 2) n = (int)sizeof line - 2;
  if (kv && *kv) {
    line[n++] = ' ';
    va_list ap;
    va_start(ap, kv);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, kv, ap);
    va_end(ap);
    if (m > 0) n += m;
    if ((size_t)n >= sizeof line - 1) n = (int)sizeof line - 2;
  }
  line[n++] = '\n';
  ssize_t w = write(STDERR_FILENO, line, (size_t)n);
  (void)w;
}
