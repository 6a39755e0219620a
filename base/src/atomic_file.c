/* atomic_file.c - temp file + fsync + rename + directory fsync; see
 * gf/atomic_file.h. */
#include "gf/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char k_tmp_suffix[] = ".tmp.XXXXXX";

gf_status gf_atomic_open(gf_atomic_file *af, const char *path, gf_err *err) {
  af->fp = NULL;
  af->tmp_path = NULL;
  af->final_path = NULL;
  if (!path || !*path) return gf_fail(err, GF_EINVAL, "atomic write: empty path");
  size_t n = strlen(path);
  af->final_path = strdup(path);
  af->tmp_path = malloc(n + sizeof k_tmp_suffix);
  if (!af->final_path || !af->tmp_path) {
    gf_atomic_abort(af);
    return gf_fail(err, GF_ENOMEM, "atomic write: out of memory");
  }
  memcpy(af->tmp_path, path, n);
  memcpy(af->tmp_path + n, k_tmp_suffix, sizeof k_tmp_suffix);
  int fd = mkstemp(af->tmp_path);
  if (fd < 0) {
    int e = errno;
    free(af->tmp_path);
    af->tmp_path = NULL;
    gf_atomic_abort(af);
    return gf_fail(err, GF_EIO, "atomic write: cannot create temporary for %s: %s",
                   path, strerror(e));
  }
  if (fchmod(fd, 0644) != 0 || !(af->fp = fdopen(fd, "wb"))) {
    int e = errno;
    if (!af->fp) close(fd);
    gf_atomic_abort(af);
    return gf_fail(err, GF_EIO, "atomic write: cannot open temporary for %s: %s",
                   path, strerror(e));
  }
  return GF_OK;
}

gf_status gf_fsync_parent_dir(const char *path, gf_err *err) {
  const char *slash = strrchr(path, '/');
  char *dir;
  if (!slash) {
    dir = strdup(".");
  } else if (slash == path) {
    dir = strdup("/");
  } else {
    dir = strndup(path, (size_t)(slash - path));
  }
  if (!dir) return gf_fail(err, GF_ENOMEM, "fsync dir: out of memory");
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0) {
    gf_status st = gf_fail(err, GF_EIO, "fsync dir: cannot open %s: %s", dir,
                           strerror(errno));
    free(dir);
    return st;
  }
  gf_status st = GF_OK;
  if (fsync(fd) != 0 && errno != EINVAL)
    st = gf_fail(err, GF_EIO, "fsync dir: %s: %s", dir, strerror(errno));
  close(fd);
  free(dir);
  return st;
}

gf_status gf_atomic_commit(gf_atomic_file *af, gf_err *err) {
  if (!af->fp) return gf_fail(err, GF_ESTATE, "atomic write: not open");
  const char *what = NULL;
  int e = 0;
  if (ferror(af->fp)) {
    what = "write";
    e = EIO;
  } else if (fflush(af->fp) != 0) {
    what = "fflush";
    e = errno;
  } else if (fsync(fileno(af->fp)) != 0) {
    what = "fsync";
    e = errno;
  }
  int rc = fclose(af->fp);
  af->fp = NULL;
  if (!what && rc != 0) {
    what = "fclose";
    e = errno;
  }
  if (!what && rename(af->tmp_path, af->final_path) != 0) {
    what = "rename";
    e = errno;
  }
  if (what) {
    gf_status st = gf_fail(err, GF_EIO, "atomic write: %s of %s failed: %s",
                           what, af->final_path, strerror(e));
    gf_atomic_abort(af);
    return st;
  }
  free(af->tmp_path);
  af->tmp_path = NULL;
  gf_status st = gf_fsync_parent_dir(af->final_path, err);
  free(af->final_path);
  af->final_path = NULL;
  return st;
}

void gf_atomic_abort(gf_atomic_file *af) {
  if (!af) return;
  if (af->fp) fclose(af->fp);
  if (af->tmp_path) unlink(af->tmp_path);
  free(af->tmp_path);
  free(af->final_path);
  af->fp = NULL;
  af->tmp_path = NULL;
  af->final_path = NULL;
}

gf_status gf_atomic_write_file(const char *path, const void *data, size_t len,
                               gf_err *err) {
  gf_atomic_file af;
  gf_status st = gf_atomic_open(&af, path, err);
  if (st != GF_OK) return st;
  if (len && fwrite(data, 1, len, af.fp) != len) {
    st = gf_fail(err, GF_EIO, "atomic write: short write to %s", path);
    gf_atomic_abort(&af);
    return st;
  }
  return gf_atomic_commit(&af, err);
}
