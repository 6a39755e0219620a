/* data_idx.c - the MNIST-format IDX reader: train-images-idx3-ubyte
 * (magic 0x00000803: N x rows x cols unsigned bytes) and
 * train-labels-idx1-ubyte (magic 0x00000801: N unsigned bytes), plain or
 * gzip, from a directory or from memory. Headers are checked against what
 * the source can hold before anything is allocated; the pixel data is read
 * straight into the dataset cache when the geometry already matches. */
#include "data_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IDX_IMAGES "train-images-idx3-ubyte"
#define IDX_LABELS "train-labels-idx1-ubyte"
/* Images converted per gzread when the geometry changes. */
#define IDX_CHUNK_BYTES (1u << 20)

typedef struct idx_header {
  uint32_t dims[3];
} idx_header;

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
         (uint32_t)p[3];
}

/* Reads and checks an IDX header of ubyte data with `ndims` dimensions; the
 * body must fit in what the source can still yield. */
static gf_status read_header(gf_src *s, int ndims, idx_header *h,
                             gf_err *err) {
  uint8_t magic[4];
  gf_status st = gf_src_read(s, magic, 4, "the IDX magic number", err);
  if (st) return st;
  const uint32_t want = 0x0800u | (uint32_t)ndims;
  if (magic[0] != 0 || magic[1] != 0) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: not an IDX file: magic number 0x%08x, expected "
                   "0x%08x",
                   s->name, be32(magic), want);
  }
  if (magic[2] != 0x08) {
    return gf_fail(err, GF_EUNSUPPORTED,
                   "%s: IDX data type 0x%02x is not supported (expected 0x08, "
                   "unsigned byte)",
                   s->name, magic[2]);
  }
  if (magic[3] != ndims) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: IDX file has %u dimensions, expected %d (magic "
                   "0x%08x, expected 0x%08x)",
                   s->name, magic[3], ndims, be32(magic), want);
  }
  uint8_t raw[12];
  st = gf_src_read(s, raw, 4u * (unsigned)ndims, "the IDX dimensions", err);
  if (st) return st;
  for (int k = 0; k < ndims; k++) h->dims[k] = be32(raw + 4 * k);
  return GF_OK;
}

/* Fails when `bytes` more cannot come out of s. */
static gf_status check_room(const gf_src *s, uint64_t bytes, const char *what,
                            gf_err *err) {
  uint64_t left = s->bound - s->consumed;
  if (bytes > left) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: truncated: the header declares %llu bytes of %s but "
                   "the file %s %llu",
                   s->name, (unsigned long long)bytes, what,
                   s->compressed ? "can hold at most" : "holds only",
                   (unsigned long long)left);
  }
  return GF_OK;
}

static gf_status read_images(gf_dataset *ds, gf_src *img, uint32_t rows,
                             uint32_t cols, const gf_data_options *opt,
                             gf_err *err) {
  const uint64_t n = (uint64_t)ds->n;
  if (opt->channels == 1 && rows == (uint32_t)opt->height &&
      cols == (uint32_t)opt->width) {
    return gf_src_read(img, ds->pixels, n * rows * cols, "image data", err);
  }
  const size_t one = (size_t)rows * cols;
  const size_t per = IDX_CHUNK_BYTES / one ? IDX_CHUNK_BYTES / one : 1;
  const size_t stride = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
  uint8_t *chunk = malloc(per * one);
  gf_img_scratch scratch = {0};
  if (!chunk) {
    return gf_fail(err, GF_ENOMEM, "%s: out of memory for a read buffer",
                   img->name);
  }
  gf_status st = GF_OK;
  for (uint64_t i = 0; i < n && !st; i += per) {
    size_t k = n - i < per ? (size_t)(n - i) : per;
    st = gf_src_read(img, chunk, (uint64_t)k * one, "image data", err);
    for (size_t j = 0; j < k && !st; j++) {
      gf_image im = {.px = chunk + j * one, .c = 1, .h = (int)rows,
                     .w = (int)cols};
      st = gf_img_convert(&im, opt, ds->pixels + (i + j) * stride, &scratch,
                          err);
    }
  }
  gf_img_scratch_free(&scratch);
  free(chunk);
  return st;
}

/* The reader proper, on two open sources. ds must be zeroed; on failure it
 * is left empty. */
static gf_status idx_load(gf_dataset *ds, gf_src *img, gf_src *lbl,
                          const gf_data_options *opt, gf_err *err) {
  gf_status st = gf_data_check_geometry(opt, err);
  if (st) return st;
  idx_header hi = {0}, hl = {0};
  st = read_header(img, 3, &hi, err);
  if (st) return st;
  const uint32_t n = hi.dims[0], rows = hi.dims[1], cols = hi.dims[2];
  if (n == 0) {
    return gf_fail(err, GF_EFORMAT, "%s: holds no images (count 0)", img->name);
  }
  if (n > GF_DATA_MAX_IMAGES) {
    return gf_fail(err, GF_EUNSUPPORTED,
                   "%s: %u images is more than the %u supported", img->name, n,
                   GF_DATA_MAX_IMAGES);
  }
  if (rows == 0 || cols == 0 || rows > GF_DATA_MAX_SIDE ||
      cols > GF_DATA_MAX_SIDE || (uint64_t)rows * cols > GF_DATA_MAX_PIXELS) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: image size %ux%u is out of range (each side "
                   "1..%d)",
                   img->name, rows, cols, GF_DATA_MAX_SIDE);
  }
  st = check_room(img, (uint64_t)n * rows * cols, "image data", err);
  if (st) return st;
  st = read_header(lbl, 1, &hl, err);
  if (st) return st;
  if (hl.dims[0] != n) {
    return gf_fail(err, GF_EFORMAT, "%s: %u labels, but %s holds %u images",
                   lbl->name, hl.dims[0], img->name, n);
  }
  st = check_room(lbl, n, "labels", err);
  if (st) return st;

  st = gf_data_alloc(ds, n, 1, opt, img->name, err);
  if (!st) st = read_images(ds, img, rows, cols, opt, err);
  if (!st) st = gf_src_expect_end(img, err);
  if (!st) st = gf_src_read(lbl, ds->labels, n, "labels", err);
  if (!st) st = gf_src_expect_end(lbl, err);
  if (st) {
    gf_dataset_free(ds);
    return st;
  }
  uint8_t max = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (ds->labels[i] > max) max = ds->labels[i];
  }
  ds->num_classes = max + 1;
  st = gf_data_names_indices(ds->num_classes, &ds->class_names, lbl->name,
                             err);
  if (st) {
    gf_dataset_free(ds);
    return st;
  }
  ds->class_names_from = "indices";
  ds->src_c = 1;
  ds->src_h = (int)rows;
  ds->src_w = (int)cols;
  ds->format = GF_DATA_IDX;
  return GF_OK;
}

gf_status gf_data_idx_load_mem(gf_dataset *ds, const uint8_t *img,
                               size_t img_len, const char *img_name,
                               const uint8_t *lbl, size_t lbl_len,
                               const char *lbl_name,
                               const gf_data_options *opt, gf_err *err) {
  memset(ds, 0, sizeof *ds);
  gf_src si, sl;
  gf_src_open_mem(&si, img_name, img, img_len);
  gf_src_open_mem(&sl, lbl_name, lbl, lbl_len);
  gf_status st = idx_load(ds, &si, &sl, opt, err);
  if (!st) st = gf_format(ds->source, sizeof ds->source, err, "dataset name",
                          "%s", img_name);
  if (st) gf_dataset_free(ds);
  return st;
}

/* Writes dir/base or dir/base.gz (the plain file preferred) to
 * out[GF_PATH_MAX] and sets *found; *found = 0 when neither exists.
 * GF_EINVAL naming the path when it does not fit. */
static gf_status find_file(const char *dir, const char *base,
                           char out[GF_PATH_MAX], int *found, gf_err *err) {
  static const char *const ext[] = {"", ".gz"};
  struct stat st;
  *found = 0;
  for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
    GF_TRY(gf_format(out, GF_PATH_MAX, err, "IDX file path", "%s/%s%s", dir,
                     base, ext[i]));
    if (stat(out, &st) == 0) {
      *found = 1;
      return GF_OK;
    }
  }
  return GF_OK;
}

gf_status gf_data_idx_find(const char *dir, int *found, gf_err *err) {
  char path[GF_PATH_MAX];
  return find_file(dir, IDX_IMAGES, path, found, err);
}

gf_status gf_data_load_idx_dir(gf_dataset *ds, const char *dir,
                               const gf_data_options *opt, gf_err *err) {
  memset(ds, 0, sizeof *ds);
  char ipath[GF_PATH_MAX], lpath[GF_PATH_MAX];
  int found;
  gf_status st = find_file(dir, IDX_IMAGES, ipath, &found, err);
  if (st) return st;
  if (!found) {
    return gf_fail(err, GF_ENOTFOUND,
                   "%s: no " IDX_IMAGES " or " IDX_IMAGES ".gz in this "
                   "directory",
                   dir);
  }
  if ((st = find_file(dir, IDX_LABELS, lpath, &found, err)) != GF_OK)
    return st;
  if (!found) {
    return gf_fail(err, GF_ENOTFOUND,
                   "%s/" IDX_LABELS "[.gz]: missing (the labels of %s)", dir,
                   ipath);
  }
  gf_src si, sl;
  st = gf_src_open_file(&si, ipath, err);
  if (st) return st;
  st = gf_src_open_file(&sl, lpath, err);
  if (st) {
    gf_src_close(&si);
    return st;
  }
  st = idx_load(ds, &si, &sl, opt, err);
  gf_src_close(&si);
  gf_src_close(&sl);
  if (!st) st = gf_format(ds->source, sizeof ds->source, err, "dataset path",
                          "%s", dir);
  if (st) gf_dataset_free(ds);
  return st;
}
