/* fs.c - mkdir -p and path joins; see gf/fs.h. */
#include "gf/fs.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gf/text.h"

/* Creates one level; an existing directory is fine. */
static gf_status make_level(const char *path, mode_t mode, gf_err *err) {
  if (mkdir(path, mode) == 0) return GF_OK;
  int e = errno;
  struct stat sb;
  if (e == EEXIST) {
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode)) return GF_OK;
    return gf_fail(err, GF_EIO, "cannot create directory %s: it exists and is "
                   "not a directory", path);
  }
  return gf_fail(err, GF_EIO, "cannot create directory %s: %s", path,
                 strerror(e));
}

gf_status gf_mkdir_p(const char *path, mode_t mode, gf_err *err) {
  if (!path || !*path)
    return gf_fail(err, GF_EINVAL, "cannot create a directory: empty path");
  char buf[GF_PATH_MAX];
  GF_TRY(gf_format(buf, sizeof buf, err, "directory path", "%s", path));
  /* Each prefix that ends before a '/' (skipping the root and runs of '/'),
   * then the whole path. */
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/' || p[-1] == '/') continue;
    *p = '\0';
    gf_status st = make_level(buf, mode, err);
    *p = '/';
    if (st != GF_OK) return st;
  }
  return make_level(buf, mode, err);
}

gf_status gf_path_check(const char *what, const char *path, size_t room,
                        gf_err *err) {
  size_t n = strlen(path);
  if (room < GF_PATH_MAX && n < GF_PATH_MAX - room) return GF_OK;
  size_t most = room < GF_PATH_MAX ? GF_PATH_MAX - 1 - room : 0;
  return gf_fail(err, GF_EINVAL, "%s too long (%zu bytes, at most %zu%s): "
                 "%.64s...", what, n, most,
                 room ? ", to leave room for the names joined to it" : "",
                 path);
}

/* Whether a '/' goes between dir and name. */
static int needs_slash(const char *dir) {
  size_t n = strlen(dir);
  return n > 0 && dir[n - 1] != '/';
}

gf_status gf_path_join(char *buf, size_t cap, const char *dir,
                       const char *name, gf_err *err) {
  return gf_format(buf, cap, err, "path", "%s%s%s", dir,
                   needs_slash(dir) ? "/" : "", name);
}

char *gf_path_join_alloc(const char *dir, const char *name) {
  size_t a = strlen(dir), b = strlen(name);
  int slash = needs_slash(dir);
  char *p = malloc(a + (size_t)slash + b + 1);
  if (!p) return NULL;
  memcpy(p, dir, a);
  if (slash) p[a] = '/';
  memcpy(p + a + (size_t)slash, name, b + 1);
  return p;
}

static void rm_tree_depth(const char *dir, int depth) {
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  char path[GF_PATH_MAX];
  while ((de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
      continue;
    /* A name too long to reach stays (and so does its folder): never a cut
     * path, which could name something else. */
    if (gf_path_join(path, sizeof path, dir, de->d_name, NULL) != GF_OK)
      continue;
    struct stat sb;
    /* lstat: a link is removed, never followed */
    if (depth < 8 && lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
      rm_tree_depth(path, depth + 1);
    else
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

void gf_rm_tree(const char *dir) { rm_tree_depth(dir, 0); }
