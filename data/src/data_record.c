/* data_record.c - the dataset record (gf_dataset) at the bottom of gf_data:
 * the format names, the geometry check of the options, the allocation of
 * the uint8 cache a reader fills, its size and its release. The readers
 * (data_idx.c, data_cifar.c, data_folder.c), the class names
 * (data_classes.c), image conversion (data_image.c) and the front door
 * (data_dataset.c) all build on this file, and it on none of them. No
 * reading, decoding or dispatch happens here. */
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

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
