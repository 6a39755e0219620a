/* file.c - a whole file read into memory, bounded; see gf/file.h. */
#include "gf/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The first buffer of a file fstat calls empty (a /proc file, or one still
 * being written): enough for the small files that do that. */
#define FIRST_CAP 256

static gf_status fail_errno(gf_err *err, const char *path, int e) {
  return gf_fail(err, e == ENOENT ? GF_ENOTFOUND : GF_EIO, "%s: %s", path,
                 strerror(e));
}

gf_status gf_read_file(const char *path, size_t max, char **out, size_t *len,
                       gf_err *err) {
  *out = NULL;
  *len = 0;
  /* max + 1 bytes are read to see a file over max, and a NUL follows. */
  if (max > SIZE_MAX - 2) max = SIZE_MAX - 2;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fail_errno(err, path, errno);
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return fail_errno(err, path, e);
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return gf_fail(err, GF_EINVAL, "%s: not a regular file", path);
  }
  if (sb.st_size < 0 || (uint64_t)sb.st_size > max) {
    close(fd);
    return gf_fail(err, GF_EFORMAT, "%s: %lld bytes, more than the %zu allowed",
                   path, (long long)sb.st_size, max);
  }
  /* cap: the bytes the buffer takes before it grows, NUL aside; one more
   * than fstat's size, so that the end of the file is seen without a
   * second buffer. Never more than max + 1. */
  size_t cap = (size_t)sb.st_size + 1;
  if (cap < FIRST_CAP) cap = FIRST_CAP < max + 1 ? FIRST_CAP : max + 1;
  char *buf = malloc(cap + 1);
  if (!buf) {
    close(fd);
    return gf_fail(err, GF_ENOMEM, "%s: out of memory (%zu bytes)", path,
                   cap + 1);
  }
  size_t n = 0;
  for (;;) {
    if (n == cap) {
      if (n > max) break;
      size_t ncap = cap > (max + 1) / 2 ? max + 1 : cap * 2;
      char *grown = realloc(buf, ncap + 1);
      if (!grown) {
        free(buf);
        close(fd);
        return gf_fail(err, GF_ENOMEM, "%s: out of memory (%zu bytes)", path,
                       ncap + 1);
      }
      buf = grown;
      cap = ncap;
    }
    ssize_t r = read(fd, buf + n, cap - n);
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      free(buf);
      close(fd);
      return fail_errno(err, path, e);
    }
    if (r == 0) break;
    n += (size_t)r;
  }
  close(fd);
  if (n > max) {
    free(buf);
    return gf_fail(err, GF_EFORMAT, "%s: more than the %zu bytes allowed", path,
                   max);
  }
  buf[n] = '\0';
  *out = buf;
  *len = n;
  return GF_OK;
}
