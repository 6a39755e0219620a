/* data_dataset.c - the dataset front door: `--data` spec parsing, format
 * detection, option checks, cache allocation, and dispatch to the readers
 * (data_idx.c, data_cifar.c, data_folder.c). No decoding happens here. */
#include "data_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *gf_data_format_name(gf_data_format f) {
  switch (f) {
  case GF_DATA_AUTO: return "auto";
  case GF_DATA_IDX: return "idx";
  case GF_DATA_CIFAR10: return "cifar10";
  case GF_DATA_IMAGES: return "images";
  case GF_DATA_MNIST: return "mnist";
  case GF_DATA_FASHION_MNIST: return "fashion-mnist";
  }
  return "?";
}

gf_status gf_data_spec_parse(const char *spec, gf_data_options *opt,
                             gf_err *err) {
  if (!spec) return gf_fail(err, GF_EINVAL, "--data: no dataset given");
  static const struct {
    const char *prefix;
    gf_data_format f;
  } prefixes[] = {{"idx:", GF_DATA_IDX},
                  {"cifar10:", GF_DATA_CIFAR10},
                  {"images:", GF_DATA_IMAGES},
                  {"mnist:", GF_DATA_MNIST},
                  {"fashion-mnist:", GF_DATA_FASHION_MNIST}};
  opt->format = GF_DATA_AUTO;
  opt->path = spec;
  for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
    size_t l = strlen(prefixes[i].prefix);
    if (strncmp(spec, prefixes[i].prefix, l) == 0) {
      opt->format = prefixes[i].f;
      opt->path = spec + l;
      break;
    }
  }
  if (!*opt->path) {
    return gf_fail(err, GF_EINVAL, "--data '%s': no directory given", spec);
  }
  return GF_OK;
}

gf_status gf_data_check_geometry(const gf_data_options *opt, gf_err *err) {
  if (opt->channels != 1 && opt->channels != 3) {
    return gf_fail(err, GF_EINVAL, "data: %d channels requested; 1 or 3 supported",
                   opt->channels);
  }
  if (opt->height < 1 || opt->width < 1 || opt->height > GF_DATA_MAX_SIDE ||
      opt->width > GF_DATA_MAX_SIDE) {
    return gf_fail(err, GF_EINVAL, "data: image size %dx%d out of range (1..%d)",
                   opt->height, opt->width, GF_DATA_MAX_SIDE);
  }
  if (opt->fit != GF_DATA_FIT_RESIZE && opt->fit != GF_DATA_FIT_PAD) {
    return gf_fail(err, GF_EINVAL, "data: unknown fit %d", (int)opt->fit);
  }
  return GF_OK;
}

gf_status gf_data_alloc(gf_dataset *ds, uint64_t n, int with_labels,
                        const gf_data_options *opt, const char *name,
                        gf_err *err) {
  const uint64_t stride =
      (uint64_t)opt->channels * (uint64_t)opt->height * (uint64_t)opt->width;
  if (n == 0 || n > GF_DATA_MAX_IMAGES || stride > SIZE_MAX / n) {
    return gf_fail(err, GF_EINVAL, "%s: %llu images of %llu bytes do not fit in memory",
                   name, (unsigned long long)n, (unsigned long long)stride);
  }
  ds->pixels = malloc((size_t)(n * stride));
  ds->labels = with_labels ? malloc((size_t)n) : NULL;
  if (!ds->pixels || (with_labels && !ds->labels)) {
    free(ds->pixels);
    free(ds->labels);
    ds->pixels = ds->labels = NULL;
    return gf_fail(err, GF_ENOMEM, "%s: out of memory for %llu images (%llu bytes)",
                   name, (unsigned long long)n,
                   (unsigned long long)(n * stride));
  }
  ds->n = (int64_t)n;
  ds->c = opt->channels;
  ds->h = opt->height;
  ds->w = opt->width;
  return GF_OK;
}

gf_status gf_data_detect(const char *path, gf_data_format *out, gf_err *err) {
  struct stat st;
  if (stat(path, &st) != 0) {
    int e = errno;
    return gf_fail(err, e == ENOENT ? GF_ENOTFOUND : GF_EIO,
                   "%s: cannot open dataset directory: %s", path, strerror(e));
  }
  if (!S_ISDIR(st.st_mode)) {
    return gf_fail(err, GF_EINVAL,
                   "%s: not a directory (--data names the directory that "
                   "holds the dataset)",
                   path);
  }
  char tmp[GF_PATH_MAX];
  int idx = 0, cifar = 0;
  gf_status s = gf_data_idx_find(path, &idx, err);
  if (!s && !idx) s = gf_data_cifar_find(path, tmp, sizeof tmp, &cifar, err);
  if (s) return s;
  *out = idx ? GF_DATA_IDX : cifar ? GF_DATA_CIFAR10 : GF_DATA_IMAGES;
  return GF_OK;
}

gf_status gf_dataset_load(gf_dataset *ds, const gf_data_options *opt,
                          gf_err *err) {
  memset(ds, 0, sizeof *ds);
  if (!opt || !opt->path || !*opt->path) {
    return gf_fail(err, GF_EINVAL, "data: no dataset directory given");
  }
  gf_status st = gf_data_check_geometry(opt, err);
  if (st) return st;
  gf_data_format f = opt->format;
  gf_data_format detected;
  st = gf_data_detect(opt->path, &detected, err);
  if (st) return st;
  if (f == GF_DATA_AUTO) f = detected;
  switch (f) {
  case GF_DATA_IDX:
  case GF_DATA_MNIST:
  case GF_DATA_FASHION_MNIST:
    st = gf_data_load_idx_dir(ds, opt->path, opt, err);
    break;
  case GF_DATA_CIFAR10:
    st = gf_data_load_cifar_dir(ds, opt->path, opt, err);
    break;
  case GF_DATA_IMAGES:
    st = gf_data_load_images_dir(ds, opt->path, opt, err);
    if (st == GF_ENOTFOUND && opt->format == GF_DATA_AUTO && err) {
      char msg[sizeof err->msg];
      memcpy(msg, err->msg, sizeof msg);
      gf_fail(err, st,
              "%s; nor MNIST-format train-images-idx3-ubyte[.gz] or CIFAR-10 "
              "data_batch_1.bin",
              msg);
    }
    break;
  case GF_DATA_AUTO:
  default: return gf_fail(err, GF_EINVAL, "data: unknown format %d", (int)f);
  }
  if (!st) st = gf_data_class_names_finish(ds, opt->path, f, err);
  if (st) {
    gf_dataset_free(ds);
    return st;
  }
  ds->format = f;
  return GF_OK;
}

void gf_dataset_free(gf_dataset *ds) {
  if (!ds) return;
  free(ds->pixels);
  free(ds->labels);
  free(ds->class_names);
  memset(ds, 0, sizeof *ds);
}

size_t gf_dataset_bytes(const gf_dataset *ds) {
  if (!ds || !ds->pixels) return 0;
  size_t n = (size_t)ds->n;
  return n * (size_t)ds->c * (size_t)ds->h * (size_t)ds->w +
         (ds->labels ? n : 0);
}
