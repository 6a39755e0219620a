/* image_set.c - image sets at their native size (gf/image_set.h): a folder
 * of PNG/JPEG files decoded by the dataset decoders (gf/data_parse.h)
 * without the trainer's resize, or an IDX / CIFAR-10 dataset read at its
 * own geometry. Not the trainer's folder loader (gf/data.h), which fits
 * every image to the model's size. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gf/data.h"
#include "gf/fs.h"
#include "gf/image_set.h"
#include "gf/text.h"

void gf_img_set_free(gf_img_set *set) {
  if (!set) return;
  free(set->pixels);
  for (int64_t i = 0; set->items && i < set->n; i++)
    gf_image_free(&set->items[i]);
  free(set->items);
  memset(set, 0, sizeof *set);
}

void gf_img_put_planes(const gf_image *im, int c, uint8_t *dst) {
  size_t plane = (size_t)im->h * (size_t)im->w;
  for (int k = 0; k < c; k++)
    memcpy(dst + (size_t)k * plane, im->px + (size_t)(im->c == 1 ? 0 : k) *
           plane, plane);
}

/* When every item has one h x w, moves them into set->pixels (3 planes if
 * any is colour) and frees the items. */
static gf_status pack_if_uniform(gf_img_set *set, gf_err *err) {
  int h = set->items[0].h, w = set->items[0].w, c = 1;
  for (int64_t i = 0; i < set->n; i++) {
    if (set->items[i].h != h || set->items[i].w != w) return GF_OK;
    if (set->items[i].c == 3) c = 3;
  }
  size_t stride = (size_t)c * (size_t)h * (size_t)w;
  uint8_t *px = malloc(stride * (size_t)set->n);
  if (!px)
    return gf_fail(err, GF_ENOMEM, "out of memory for %lld images of %dx%d",
                   (long long)set->n, w, h);
  for (int64_t i = 0; i < set->n; i++) {
    gf_img_put_planes(&set->items[i], c, px + (size_t)i * stride);
    gf_image_free(&set->items[i]);
  }
  free(set->items);
  set->items = NULL;
  set->pixels = px;
  set->uniform = true;
  set->c = c;
  set->h = h;
  set->w = w;
  return GF_OK;
}

static gf_status load_folder(const char *path, gf_img_set *set, gf_err *err) {
  char **paths = NULL;
  size_t n = 0;
  gf_status st = gf_data_image_paths(path, &paths, &n, &set->skipped, err);
  if (st == GF_OK && n == 0)
    st = gf_fail(err, GF_ENOTFOUND, "%s: no PNG or JPEG images (.png, .jpg, "
                 ".jpeg) in the folder or below it%s", path,
                 set->skipped ? "; other files are not read" : "");
  if (st == GF_OK) {
    set->items = calloc(n, sizeof *set->items);
    if (!set->items) st = gf_fail(err, GF_ENOMEM, "%s: out of memory", path);
  }
  for (size_t i = 0; st == GF_OK && i < n; i++) {
    char full[GF_PATH_MAX];
    uint8_t *buf = NULL;
    size_t len = 0;
    st = gf_format(full, sizeof full, err, "image path", "%s/%s", path,
                   paths[i]);
    if (st == GF_OK) st = gf_data_read_file(full, &buf, &len, err);
    if (st == GF_OK)
      st = gf_data_image_decode(buf, len, full, &set->items[i], err);
    free(buf);
    if (st == GF_OK) set->n = (int64_t)i + 1;
  }
  gf_data_image_paths_free(paths, n);
  if (st == GF_OK) {
    st = gf_format(set->kind, sizeof set->kind, err, "set kind", "folder");
    if (st == GF_OK) st = pack_if_uniform(set, err);
  }
  return st;
}

/* An IDX or CIFAR-10 dataset at its native geometry: IDX is grey (the
 * first load guesses 28x28 and is redone at the file's size when that
 * differs), CIFAR-10 is 3x32x32. */
static gf_status load_dataset(const char *path, gf_data_format f,
                              gf_img_set *set, gf_err *err) {
  gf_data_options o = {path, f, GF_DATA_FIT_PAD, f == GF_DATA_IDX ? 1 : 3,
                       f == GF_DATA_IDX ? 28 : 32, f == GF_DATA_IDX ? 28 : 32};
  gf_dataset ds;
  GF_TRY(gf_dataset_load(&ds, &o, err));
  if (ds.src_h != ds.h || ds.src_w != ds.w) {
    o.height = ds.src_h;
    o.width = ds.src_w;
    gf_dataset_free(&ds);
    GF_TRY(gf_dataset_load(&ds, &o, err));
  }
  set->n = ds.n;
  set->uniform = true;
  set->pixels = ds.pixels; /* taken over */
  set->c = ds.c;
  set->h = ds.h;
  set->w = ds.w;
  ds.pixels = NULL;
  gf_dataset_free(&ds);
  return gf_format(set->kind, sizeof set->kind, err, "set kind", "%s",
                   gf_data_format_name(f));
}

gf_status gf_img_set_load(const char *path, gf_img_set *set, gf_err *err) {
  memset(set, 0, sizeof *set);
  if (!path || !*path) return gf_fail(err, GF_EINVAL, "no image path given");
  struct stat sb;
  if (stat(path, &sb) != 0)
    return gf_fail(err, errno == ENOENT ? GF_ENOTFOUND : GF_EIO, "%s: %s",
                   path, strerror(errno));
  if (!S_ISDIR(sb.st_mode))
    return gf_fail(err, GF_EINVAL, "%s: not a directory (give a folder of "
                   "PNG/JPEG images or a dataset directory)", path);
  gf_data_format f;
  GF_TRY(gf_data_detect(path, &f, err));
  gf_status st = f == GF_DATA_IMAGES ? load_folder(path, set, err)
                                     : load_dataset(path, f, set, err);
  if (st != GF_OK) gf_img_set_free(set);
  return st;
}
