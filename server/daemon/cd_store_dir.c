/* cd_store_dir.c — the dir:PATH store: one file per key in one directory.
 * A write goes to a temporary name in the same directory, is fsync'd, then
 * linked to its key (link fails when the key exists: a second writer does
 * nothing, and a reader never sees a partial file) and the directory is
 * fsync'd so the new name survives a crash. A full disk (ENOSPC) or any
 * other error fails that one write; the temporary file is removed. A
 * delete unlinks the key and fsyncs the directory. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cd_store.h"

typedef struct dir_ctx {
  const cd_store_cfg *cfg;
  int dirfd; /* -1 until opened */
  unsigned seq;
} dir_ctx;

static void *dir_open(const void *cfg) {
  dir_ctx *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->cfg = cfg;
  c->dirfd = -1;
  return c;
}

static int ensure_dir(dir_ctx *c, char *why, size_t whylen) {
  if (c->dirfd >= 0) return 0;
  if (mkdir(c->cfg->path, 0750) != 0 && errno != EEXIST) {
    snprintf(why, whylen, "mkdir %s: %s", c->cfg->path, strerror(errno));
    return -1;
  }
  c->dirfd = open(c->cfg->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (c->dirfd < 0) {
    snprintf(why, whylen, "open %s: %s", c->cfg->path, strerror(errno));
    return -1;
  }
  return 0;
}

static cd_be_rc dir_get(void *ctx, const char *key, uint8_t **data, size_t *len, char *why, size_t whylen) {
  dir_ctx *c = ctx;
  if (ensure_dir(c, why, whylen)) return CD_BE_ERROR;
  int fd = openat(c->dirfd, key, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return CD_BE_MISS;
    snprintf(why, whylen, "open %s: %s", key, strerror(errno));
    return CD_BE_ERROR;
  }
  struct stat st;
  cd_be_rc rc = CD_BE_ERROR;
  uint8_t *b = NULL;
  if (fstat(fd, &st) != 0) {
    snprintf(why, whylen, "stat %s: %s", key, strerror(errno));
  } else if ((uint64_t)st.st_size > c->cfg->max_record_bytes) {
    /* a foreign file: too large to be ours; read as an empty (unverifiable) record */
    b = malloc(1);
    *len = 0;
    rc = b ? CD_BE_OK : CD_BE_ERROR;
  } else if (!(b = malloc((size_t)st.st_size + 1))) {
    snprintf(why, whylen, "out of memory for %lld bytes", (long long)st.st_size);
  } else {
    size_t got = 0;
    while (got < (size_t)st.st_size) {
      ssize_t k = read(fd, b + got, (size_t)st.st_size - got);
      if (k < 0 && errno == EINTR) continue;
      if (k <= 0) break;
      got += (size_t)k;
    }
    *len = got;
    rc = CD_BE_OK;
  }
  close(fd);
  if (rc == CD_BE_OK) *data = b;
  else free(b);
  return rc;
}

static int write_all(int fd, const uint8_t *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static cd_be_rc dir_put(void *ctx, const char *key, const uint8_t *data, size_t len, char *why, size_t whylen) {
  dir_ctx *c = ctx;
  if (ensure_dir(c, why, whylen)) return CD_BE_ERROR;
  if (faccessat(c->dirfd, key, F_OK, 0) == 0) return CD_BE_EXISTS;
  char tmp[160];
  snprintf(tmp, sizeof tmp, ".tmp.%ld.%u.%.64s", (long)getpid(), c->seq++, key + strlen(CD_STORE_KEY_PREFIX));
  int fd = openat(c->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
  if (fd < 0) {
    snprintf(why, whylen, "create %s/%s: %s", c->cfg->path, tmp, strerror(errno));
    return CD_BE_ERROR;
  }
  const char *step = "write";
  int bad = write_all(fd, data, len);
  if (!bad) {
    step = "fsync";
    bad = fsync(fd);
  }
  int err = errno;
  if (close(fd) != 0 && !bad) {
    step = "close";
    bad = -1;
    err = errno;
  }
  cd_be_rc rc = CD_BE_OK;
  if (!bad && linkat(c->dirfd, tmp, c->dirfd, key, 0) != 0) {
    if (errno == EEXIST) {
      rc = CD_BE_EXISTS;
    } else {
      step = "link";
      bad = -1;
      err = errno;
    }
  }
  unlinkat(c->dirfd, tmp, 0);
  if (bad) {
    snprintf(why, whylen, "%s %s/%s: %s", step, c->cfg->path, key, strerror(err));
    return CD_BE_ERROR;
  }
  if (rc == CD_BE_OK && fsync(c->dirfd) != 0) {
    snprintf(why, whylen, "fsync %s: %s", c->cfg->path, strerror(errno));
    return CD_BE_ERROR;
  }
  return rc;
}

static cd_be_rc dir_del(void *ctx, const char *key, char *why, size_t whylen) {
  dir_ctx *c = ctx;
  if (ensure_dir(c, why, whylen)) return CD_BE_ERROR;
  if (unlinkat(c->dirfd, key, 0) != 0) {
    if (errno == ENOENT) return CD_BE_MISS;
    snprintf(why, whylen, "unlink %s/%s: %s", c->cfg->path, key, strerror(errno));
    return CD_BE_ERROR;
  }
  if (fsync(c->dirfd) != 0) { /* the removal survives a crash */
    snprintf(why, whylen, "fsync %s: %s", c->cfg->path, strerror(errno));
    return CD_BE_ERROR;
  }
  return CD_BE_OK;
}

static void dir_close(void *ctx) {
  dir_ctx *c = ctx;
  if (c->dirfd >= 0) close(c->dirfd);
  free(c);
}

const cd_store_backend cd_store_dir_backend = {"dir", dir_open, dir_get, dir_put, dir_del, dir_close};
