/* data_src.c - byte sources for the data readers: a file through zlib's
 * gzread (gzip or plain, told apart by zlib) or a memory buffer. Every short
 * read, zlib error and trailing byte becomes a gf_err naming the source.
 * Not a general I/O layer: reads are sequential and exact. */
#include "data_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* deflate cannot expand more than 1032:1 (zlib FAQ); headroom for the gzip
 * header and trailer. */
#define GZ_MAX_RATIO 1032u
#define GZ_CHUNK (1u << 30)

gf_status gf_src_open_file(gf_src *s, const char *path, gf_err *err) {
  memset(s, 0, sizeof *s);
  s->name = path;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return gf_fail(err, e == ENOENT ? GF_ENOTFOUND : GF_EIO,
                   "%s: cannot open: %s", path, strerror(e));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return gf_fail(err, GF_EIO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return gf_fail(err, GF_EIO, "%s: not a regular file", path);
  }
  gzFile gz = gzdopen(fd, "rb");
  if (!gz) {
    close(fd);
    return gf_fail(err, GF_ENOMEM, "%s: cannot set up zlib reading", path);
  }
  (void)gzbuffer(gz, 1u << 17);
  s->gz = gz;
  s->file_size = (uint64_t)st.st_size;
  s->compressed = !gzdirect(gz);
  if (s->compressed) {
    s->bound = s->file_size > UINT64_MAX / GZ_MAX_RATIO
                   ? UINT64_MAX
                   : s->file_size * GZ_MAX_RATIO;
  } else {
    s->bound = s->file_size;
  }
  return GF_OK;
}

void gf_src_open_mem(gf_src *s, const char *name, const uint8_t *buf,
                     size_t len) {
  memset(s, 0, sizeof *s);
  s->name = name;
  s->mem = buf;
  s->mem_len = len;
  s->file_size = len;
  s->bound = len;
}

/* zlib's message without the "<fd:N>: " prefix gzdopen streams get (the
 * file's name is already in our message). */
static const char *gz_message(gzFile gz, int *errnum) {
  const char *msg = gzerror(gz, errnum);
  if (msg && strncmp(msg, "<fd:", 4) == 0) {
    const char *p = strstr(msg, ": ");
    if (p) msg = p + 2;
  }
  return msg;
}

/* The error zlib recorded on s->gz, as a gf_err; GF_OK when there is none. */
static gf_status gz_failure(gf_src *s, uint64_t want, uint64_t got,
                            const char *what, gf_err *err) {
  int errnum = Z_OK;
  const char *msg = gz_message(s->gz, &errnum);
  if (errnum == Z_ERRNO) {
    return gf_fail(err, GF_EIO, "%s: read error in %s: %s", s->name, what,
                   strerror(errno));
  }
  if (errnum == Z_BUF_ERROR) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: truncated gzip stream (%s) after %llu of the %llu "
                   "bytes of %s",
                   s->name, msg ? msg : "unexpected end of file",
                   (unsigned long long)got, (unsigned long long)want, what);
  }
  if (errnum != Z_OK && errnum != Z_STREAM_END) {
    return gf_fail(err, GF_EFORMAT, "%s: gzip error in %s: %s", s->name, what,
                   msg ? msg : "unknown");
  }
  return GF_OK;
}

gf_status gf_src_read(gf_src *s, void *buf, uint64_t n, const char *what,
                      gf_err *err) {
  if (!s->gz) {
    uint64_t left = s->mem_len - s->consumed;
    if (n > left) {
      return gf_fail(err, GF_EFORMAT,
                     "%s: truncated: expected %llu bytes of %s, only %llu "
                     "left",
                     s->name, (unsigned long long)n, what,
                     (unsigned long long)left);
    }
    if (n) memcpy(buf, s->mem + s->consumed, (size_t)n);
    s->consumed += n;
    return GF_OK;
  }
  uint8_t *p = buf;
  uint64_t got = 0;
  while (got < n) {
    uint64_t want = n - got;
    unsigned chunk = want > GZ_CHUNK ? GZ_CHUNK : (unsigned)want;
    int r = gzread(s->gz, p + got, chunk);
    if (r < 0) {
      gf_status st = gz_failure(s, n, got, what, err);
      return st ? st
                : gf_fail(err, GF_EIO, "%s: read error in %s", s->name, what);
    }
    if (r == 0) {
      gf_status st = gz_failure(s, n, got, what, err);
      if (st) return st;
      return gf_fail(err, GF_EFORMAT,
                     "%s: truncated: expected %llu bytes of %s, got %llu",
                     s->name, (unsigned long long)n, what,
                     (unsigned long long)got);
    }
    got += (uint64_t)r;
  }
  s->consumed += n;
  return GF_OK;
}

gf_status gf_src_expect_end(gf_src *s, gf_err *err) {
  if (!s->gz) {
    if (s->consumed != s->mem_len) {
      return gf_fail(err, GF_EFORMAT,
                     "%s: %llu unexpected trailing bytes after the %llu bytes "
                     "the header declares",
                     s->name, (unsigned long long)(s->mem_len - s->consumed),
                     (unsigned long long)s->consumed);
    }
    return GF_OK;
  }
  uint8_t b;
  int r = gzread(s->gz, &b, 1);
  if (r == 1) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: unexpected trailing bytes after the %llu bytes the "
                   "header declares",
                   s->name, (unsigned long long)s->consumed);
  }
  gf_status st = gz_failure(s, s->consumed, s->consumed, "the end of the data",
                            err);
  if (st) return st;
  if (r < 0) return gf_fail(err, GF_EIO, "%s: read error at the end", s->name);
  return GF_OK;
}

void gf_src_close(gf_src *s) {
  if (s && s->gz) {
    gzclose_r(s->gz);
    s->gz = NULL;
  }
}
