/* data_folder.c - the image-folder reader: every .png/.jpg/.jpeg file under
 * a directory (recursive, hidden entries skipped, directory symlinks not
 * followed), in strcmp order of the relative paths, decoded one at a time
 * and converted into the dataset cache. Labels follow torchvision's
 * ImageFolder when every image sits in a first-level subdirectory. */
#include "data_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#define MAX_FILE_BYTES (256u * 1024u * 1024u)

/* The relative paths found so far; owned strings. */
typedef struct path_list {
  char **v;
  size_t n, cap;
} path_list;

void gf_data_image_paths_free(char **paths, size_t n) {
  for (size_t i = 0; i < n; i++) free(paths[i]);
  free(paths);
}

static int has_image_ext(const char *name) {
  const char *dot = strrchr(name, '.');
  return dot && (strcasecmp(dot, ".png") == 0 || strcasecmp(dot, ".jpg") == 0 ||
                 strcasecmp(dot, ".jpeg") == 0);
}

/* Adds the image files under root/rel (rel "" for root itself); counts the
 * other regular files in *skipped. A path that does not fit in GF_PATH_MAX
 * is an error naming it, never skipped. */
static gf_status walk(const char *root, const char *rel, int depth,
                      path_list *out, int64_t *skipped, gf_err *err) {
  char dir[GF_PATH_MAX];
  GF_TRY(gf_format(dir, sizeof dir, err, "image folder path", "%s%s%s", root,
                   *rel ? "/" : "", rel));
  DIR *d = opendir(dir);
  if (!d) {
    return gf_fail(err, errno == ENOENT ? GF_ENOTFOUND : GF_EIO,
                   "%s: cannot open directory: %s", dir, strerror(errno));
  }
  gf_status st = GF_OK;
  struct dirent *e;
  while (!st && (e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char relpath[GF_PATH_MAX], full[GF_PATH_MAX];
    int m = snprintf(relpath, sizeof relpath, "%s%s%s", rel, *rel ? "/" : "",
                     e->d_name);
    int k = gf_fits(m, sizeof relpath)
                ? snprintf(full, sizeof full, "%s/%s", root, relpath)
                : -1;
    if (!gf_fits(k, sizeof full)) {
      st = gf_fail(err, GF_EINVAL, "%s/%s: path too long (at most %d "
                   "characters)", dir, e->d_name, GF_PATH_MAX - 1);
      break;
    }
    struct stat ls;
    if (lstat(full, &ls) != 0) continue; /* vanished: not ours to report */
    if (S_ISDIR(ls.st_mode)) {
      if (depth + 1 >= GF_DATA_MAX_DEPTH) {
        st = gf_fail(err, GF_EUNSUPPORTED,
                     "%s: directory nesting deeper than %d levels", full,
                     GF_DATA_MAX_DEPTH);
      } else {
        st = walk(root, relpath, depth + 1, out, skipped, err);
      }
      continue;
    }
    struct stat fs;
    if (stat(full, &fs) != 0 || !S_ISREG(fs.st_mode)) continue;
    if (!has_image_ext(e->d_name)) {
      (*skipped)++;
      continue;
    }
    if (out->n == out->cap) {
      size_t cap = out->cap ? out->cap * 2 : 256;
      char **v = realloc(out->v, cap * sizeof *v);
      if (!v) {
        st = gf_fail(err, GF_ENOMEM, "%s: out of memory listing images", dir);
        break;
      }
      out->v = v;
      out->cap = cap;
    }
    out->v[out->n] = strdup(relpath);
    if (!out->v[out->n]) {
      st = gf_fail(err, GF_ENOMEM, "%s: out of memory listing images", dir);
      break;
    }
    out->n++;
  }
  closedir(d);
  return st;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

gf_status gf_data_image_paths(const char *root, char ***paths, size_t *n,
                              int64_t *skipped, gf_err *err) {
  *paths = NULL;
  *n = 0;
  path_list l = {0};
  int64_t other = 0;
  gf_status st = walk(root, "", 0, &l, &other, err);
  if (st) {
    gf_data_image_paths_free(l.v, l.n);
    return st;
  }
  if (l.n) qsort(l.v, l.n, sizeof *l.v, cmp_str);
  *paths = l.v;
  *n = l.n;
  if (skipped) *skipped = other;
  return GF_OK;
}

/* Length of the first path component of rel, or 0 when rel has none (the
 * file lies at the top level). */
static size_t class_len(const char *rel) {
  const char *slash = strchr(rel, '/');
  return slash ? (size_t)(slash - rel) : 0;
}

/* Labels by first-level subdirectory (sorted names), or none; the
 * subdirectories' names as they are (gf_dataset_load checks them) become
 * ds->class_names. files is sorted, so each class's files are
 * contiguous. */
static gf_status assign_labels(gf_dataset *ds, const path_list *files,
                               const char *root, gf_err *err) {
  for (size_t i = 0; i < files->n; i++) {
    if (class_len(files->v[i]) == 0) return GF_OK; /* unlabeled folder */
  }
  const char *names[GF_DATA_MAX_CLASSES];
  size_t lens[GF_DATA_MAX_CLASSES];
  int nc = 0;
  for (size_t i = 0; i < files->n; i++) {
    size_t l = class_len(files->v[i]);
    if (nc > 0 && lens[nc - 1] == l && memcmp(names[nc - 1], files->v[i], l) == 0) {
      continue;
    }
    if (nc == GF_DATA_MAX_CLASSES) {
      return gf_fail(err, GF_EUNSUPPORTED,
                     "%s: more than %d class subdirectories", root,
                     GF_DATA_MAX_CLASSES);
    }
    names[nc] = files->v[i];
    lens[nc] = l;
    nc++;
  }
  /* Rank of each group's name among all names. */
  int rank[GF_DATA_MAX_CLASSES];
  for (int a = 0; a < nc; a++) {
    rank[a] = 0;
    for (int b = 0; b < nc; b++) {
      size_t l = lens[a] < lens[b] ? lens[a] : lens[b];
      int c = memcmp(names[b], names[a], l);
      if (c < 0 || (c == 0 && lens[b] < lens[a])) rank[a]++;
    }
  }
  const char *sorted[GF_DATA_MAX_CLASSES];
  size_t sorted_len[GF_DATA_MAX_CLASSES];
  for (int a = 0; a < nc; a++) {
    sorted[rank[a]] = names[a];
    sorted_len[rank[a]] = lens[a];
  }
  GF_TRY(gf_data_names_make(nc, sorted, sorted_len, &ds->class_names, root,
                            err));
  ds->class_names_from = "directories";
  ds->labels = malloc(files->n);
  if (!ds->labels) {
    return gf_fail(err, GF_ENOMEM, "%s: out of memory for labels", root);
  }
  int g = 0;
  for (size_t i = 0; i < files->n; i++) {
    size_t l = class_len(files->v[i]);
    if (!(lens[g] == l && memcmp(names[g], files->v[i], l) == 0)) g++;
    ds->labels[i] = (uint8_t)rank[g];
  }
  ds->num_classes = nc;
  return GF_OK;
}

gf_status gf_data_read_file(const char *path, uint8_t **buf, size_t *len,
                            gf_err *err) {
  *buf = NULL;
  *len = 0;
  FILE *f = fopen(path, "rb");
  if (!f) {
    return gf_fail(err, errno == ENOENT ? GF_ENOTFOUND : GF_EIO,
                   "%s: cannot open: %s", path, strerror(errno));
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0) {
    int e = errno;
    fclose(f);
    return gf_fail(err, GF_EIO, "%s: cannot stat: %s", path, strerror(e));
  }
  if ((uint64_t)st.st_size > MAX_FILE_BYTES) {
    fclose(f);
    return gf_fail(err, GF_EUNSUPPORTED, "%s: %lld bytes is larger than the %u "
                   "supported for one image", path, (long long)st.st_size,
                   MAX_FILE_BYTES);
  }
  size_t n = (size_t)st.st_size;
  uint8_t *b = malloc(n ? n : 1);
  if (!b) {
    fclose(f);
    return gf_fail(err, GF_ENOMEM, "%s: out of memory reading", path);
  }
  if (fread(b, 1, n, f) != n) {
    int e = ferror(f);
    fclose(f);
    free(b);
    return gf_fail(err, GF_EIO, "%s: %s", path,
                   e ? "read error" : "file shrank while being read");
  }
  fclose(f);
  *buf = b;
  *len = n;
  return GF_OK;
}

gf_status gf_data_load_images_dir(gf_dataset *ds, const char *dir,
                                  const gf_data_options *opt, gf_err *err) {
  memset(ds, 0, sizeof *ds);
  gf_status st = gf_data_check_geometry(opt, err);
  if (st) return st;
  path_list files = {0};
  st = gf_data_image_paths(dir, &files.v, &files.n, NULL, err);
  files.cap = files.n;
  if (!st && files.n == 0) {
    st = gf_fail(err, GF_ENOTFOUND,
                 "%s: no PNG or JPEG images (.png, .jpg, .jpeg) found in it "
                 "or its subdirectories",
                 dir);
  }
  if (!st && files.n > GF_DATA_MAX_IMAGES) {
    st = gf_fail(err, GF_EUNSUPPORTED, "%s: more than %u images", dir,
                 GF_DATA_MAX_IMAGES);
  }
  if (st) {
    gf_data_image_paths_free(files.v, files.n);
    return st;
  }
  st = gf_data_alloc(ds, files.n, 0, opt, dir, err);
  if (!st) st = assign_labels(ds, &files, dir, err);
  const size_t stride = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
  gf_img_scratch scratch = {0};
  for (size_t i = 0; i < files.n && !st; i++) {
    char full[GF_PATH_MAX]; /* as walk made it, so it fits */
    st = gf_format(full, sizeof full, err, "image path", "%s/%s", dir,
                   files.v[i]);
    if (st) break;
    uint8_t *buf;
    size_t len;
    st = gf_data_read_file(full, &buf, &len, err);
    if (st) break;
    gf_image im;
    st = gf_data_image_decode(buf, len, full, &im, err);
    free(buf);
    if (st) break;
    if (i == 0) {
      ds->src_c = im.c;
      ds->src_h = im.h;
      ds->src_w = im.w;
    }
    st = gf_img_convert(&im, opt, ds->pixels + i * stride, &scratch, err);
    gf_image_free(&im);
  }
  gf_img_scratch_free(&scratch);
  gf_data_image_paths_free(files.v, files.n);
  if (st) {
    gf_dataset_free(ds);
    return st;
  }
  ds->format = GF_DATA_IMAGES;
  st = gf_format(ds->source, sizeof ds->source, err, "dataset path", "%s",
                 dir);
  if (st) gf_dataset_free(ds);
  return st;
}
