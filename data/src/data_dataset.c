/* data_dataset.c - the dataset front door: `--data` spec parsing, format
 * detection, and dispatch to the readers (data_idx.c, data_cifar.c,
 * data_folder.c). The record the readers fill (its allocation, checks and
 * release) is data_record.c's. No decoding happens here. */
#include "data_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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
