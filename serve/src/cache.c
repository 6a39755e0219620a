/* cache.c - the download cache of ganflow-serve and `ganflow generate`:
 * CACHE/<name>/<version>/, fetched atomically through the tracking
 * library, and the one resolve -> fetch -> load sequence both use. See
 * gfs/slot.h. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gf/fs.h"
#include "gf/mlflow_status.h"
#include "gf/text.h"
#include "gfs/slot.h"

/* Name as one safe path component in out[GFS_NAME_MAX + 1]:
 * [A-Za-z0-9._-] kept, others '_'; a leading '.' becomes '_' (no ".",
 * "..", hidden names); "" becomes "_". A name longer than GFS_NAME_MAX is
 * GF_EINVAL: cutting it would let two names share an entry. */
static gf_status sanitize(const char *name, char out[GFS_NAME_MAX + 1],
                          gf_err *err) {
  size_t n = strlen(name);
  if (n > GFS_NAME_MAX)
    return gf_fail(err, GF_EINVAL, "model name too long for the cache (%zu "
                   "bytes, at most %d): %.64s...", n, GFS_NAME_MAX, name);
  for (size_t o = 0; o < n; o++) {
    char c = name[o];
    int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
             (c >= '0' && c <= '9') || c == '-' || c == '_' ||
             (c == '.' && o > 0);
    out[o] = ok ? c : '_';
  }
  out[n] = '\0';
  if (n == 0) {
    out[0] = '_';
    out[1] = '\0';
  }
  return GF_OK;
}

static int digits_only(const char *s) {
  if (!s || !*s || strlen(s) > GFS_VERSION_DIGITS_MAX) return 0;
  for (; *s; s++)
    if (*s < '0' || *s > '9') return 0;
  return 1;
}

gf_status gfs_cache_dir_check(const char *cache_dir, const char *what,
                              gf_err *err) {
  size_t n = cache_dir ? strlen(cache_dir) : 0;
  if (n == 0) return gf_fail(err, GF_EINVAL, "%s: empty", what);
  return gf_path_check(what, cache_dir, GFS_CACHE_ROOM, err);
}

gf_status gfs_model_resolve(mlflow_client *c, const char *uri,
                            gfs_model_ref *ref, gf_err *err) {
  memset(ref, 0, sizeof *ref);
  mlflow_model_version mv;
  mlflow_error me;
  memset(&mv, 0, sizeof mv);
  memset(&me, 0, sizeof me);
  if (mlflow_model_resolve(c, uri, &mv, &me) != MLFLOW_OK) {
    mlflow_model_version_free(&mv);
    return gf_fail_mlflow(err, &me, "resolve %s", uri);
  }
  const char *name = mv.name ? mv.name : "";
  const char *version = mv.version ? mv.version : "";
  int nn = snprintf(ref->name, sizeof ref->name, "%s", name);
  int nv = snprintf(ref->version, sizeof ref->version, "%s", version);
  gf_status st = GF_OK;
  if (!gf_fits(nn, sizeof ref->name))
    st = gf_fail(err, GF_EFORMAT, "resolve %s: the registry's model name is "
                 "too long (%zu bytes, at most %zu)", uri, strlen(name),
                 sizeof ref->name - 1);
  else if (!gf_fits(nv, sizeof ref->version))
    st = gf_fail(err, GF_EFORMAT, "resolve %s: the registry's version is too "
                 "long (%zu bytes, at most %zu): %.40s...", uri,
                 strlen(version), sizeof ref->version - 1, version);
  mlflow_model_version_free(&mv);
  if (st != GF_OK) memset(ref, 0, sizeof *ref);
  return st;
}

gf_status gfs_cache_fetch(mlflow_client *c, const char *cache_dir,
                          const char *name, const char *version, char *dir,
                          size_t cap, gf_err *err) {
  if (!digits_only(version))
    return gf_fail(err, GF_EFORMAT, "registry version '%s' is not a number",
                   version ? version : "(null)");
  char safe[GFS_NAME_MAX + 1], parent[GF_PATH_MAX];
  GF_TRY(sanitize(name, safe, err));
  gf_err e;
  if (gf_path_join(parent, sizeof parent, cache_dir, safe, &e) != GF_OK ||
      gf_path_join(dir, cap, parent, version, &e) != GF_OK)
    return gf_fail(err, GF_EINVAL, "cache entry of %s version %s: %s", name,
                   version, e.msg);
  struct stat sb;
  if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) return GF_OK;
  GF_TRY(gf_mkdir_p(parent, 0755, err));
  /* name <= GFS_NAME_MAX and version <= 18 digits: the URI fits. */
  char uri[GFS_NAME_MAX + 64];
  GF_TRY(gf_format(uri, sizeof uri, err, "model URI", "models:/%s/%s", name,
                   version));
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

gf_status gfs_cache_load(mlflow_client *c, const char *cache_dir,
                         const char *name, const char *version,
                         const gf_generator_opts *o, gf_generator **out,
                         gf_err *err) {
  *out = NULL;
  char dir[GF_PATH_MAX] = "";
  gf_status st = gfs_cache_fetch(c, cache_dir, name, version, dir, sizeof dir,
                                 err);
  if (st == GF_OK) st = gf_generator_load(dir, name, version, o, out, err);
  if (st == GF_EINTEGRITY || st == GF_EFORMAT || st == GF_EIO) {
    /* A damaged cache entry is fetched once more; a damaged upload fails
     * again and stays failed. dir is "" when the fetch failed before it
     * was known (the path did not fit): there is nothing to evict. */
    gf_err e2;
    if (dir[0] && gfs_cache_evict(dir, &e2) == GF_OK &&
        gfs_cache_fetch(c, cache_dir, name, version, dir, sizeof dir, &e2) ==
            GF_OK &&
        gf_generator_load(dir, name, version, o, out, &e2) == GF_OK)
      st = GF_OK;
    else if (dir[0])
      gfs_cache_evict(dir, &e2);
  }
  return st;
}
