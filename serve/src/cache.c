/* cache.c - the download cache of ganflow-serve and `ganflow generate`:
 * CACHE/<name>/<version>/, fetched atomically through the tracking
 * library. See gfs/slot.h. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gf/mlflow_status.h"
#include "gfs/slot.h"

/* Name as one safe path component: [A-Za-z0-9._-] kept, others '_'; a
 * leading '.' becomes '_' (no ".", "..", hidden names). */
static void sanitize(const char *name, char *out, size_t cap) {
  size_t o = 0;
  for (const char *p = name; *p && o + 1 < cap; p++) {
    char c = *p;
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '-' || c == '_' ||
             (c == '.' && o > 0);
    out[o++] = ok ? c : '_';
  }
  out[o] = '\0';
  if (o == 0 && cap > 1) snprintf(out, cap, "_");
}

static int digits_only(const char *s) {
  if (!s || !*s || strlen(s) > 18) return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

static gf_status mkdir_p(const char *path, gf_err *err) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
    return gf_fail(err, GF_EINVAL, "path too long: %s", path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
      return gf_fail(err, GF_EIO, "mkdir %s: %s", tmp, strerror(errno));
    *p = '/';
  }
  if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
    return gf_fail(err, GF_EIO, "mkdir %s: %s", tmp, strerror(errno));
  return GF_OK;
}

gf_status gfs_cache_fetch(mlflow_client *c, const char *cache_dir,
                          const char *name, const char *version, char *dir,
                          size_t cap, gf_err *err) {
  if (!digits_only(version))
    return gf_fail(err, GF_EFORMAT, "registry version '%s' is not a number",
                   version ? version : "(null)");
  char safe[256], parent[4096];
  sanitize(name, safe, sizeof safe);
  if (snprintf(parent, sizeof parent, "%s/%s", cache_dir, safe) >=
          (int)sizeof parent ||
      snprintf(dir, cap, "%s/%s", parent, version) >= (int)cap)
    return gf_fail(err, GF_EINVAL, "cache path too long");
  struct stat sb;
  if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) return GF_OK;
  gf_status st = mkdir_p(parent, err);
  if (st != GF_OK) return st;
  char uri[1024];
  if (snprintf(uri, sizeof uri, "models:/%s/%s", name, version) >=
      (int)sizeof uri)
    return gf_fail(err, GF_EINVAL, "model name too long");
  mlflow_error me;
  memset(&me, 0, sizeof me);
  mlflow_status ms = mlflow_model_download(c, uri, dir, NULL, &me);
  if (ms != MLFLOW_OK) {
    /* A concurrent fetch of the same version may have won the rename. */
    if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) return GF_OK;
    return gf_fail_mlflow(err, &me, "download %s", uri);
  }
  return GF_OK;
}

static int rm_entry(const char *path, const struct stat *sb, int flag,
                    struct FTW *ftw) {
  (void)sb;
  (void)flag;
  (void)ftw;
  return remove(path);
}

gf_status gfs_cache_evict(const char *dir, gf_err *err) {
  if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0 && errno != ENOENT)
    return gf_fail(err, GF_EIO, "remove %s: %s", dir, strerror(errno));
  return GF_OK;
}
