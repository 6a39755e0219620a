/* fuzz_data_common.h - what the data fuzz targets share: the model
 * geometry picked by one input byte, and the invariants a loaded dataset or
 * decoded image must satisfy (broken ones trap, so the fuzzer reports
 * them). Test-only; static inline helpers used by every including target. */
#ifndef GF_FUZZ_DATA_COMMON_H
#define GF_FUZZ_DATA_COMMON_H

#include <stdint.h>
#include <stdlib.h>

#include "gf/data.h"
#include "gf/data_parse.h"

/* Channels from bit 0, fit from bit 1, size 1..40 from the rest. */
static inline gf_data_options fuzz_geometry(uint8_t b) {
  gf_data_options o = {0};
  o.channels = (b & 1) ? 3 : 1;
  o.fit = (b & 2) ? GF_DATA_FIT_PAD : GF_DATA_FIT_RESIZE;
  o.height = 1 + (b >> 2) % 40;
  o.width = 1 + (b >> 3) % 33;
  return o;
}

static inline void fuzz_check_dataset(const gf_dataset *ds,
                                      const gf_data_options *o) {
  if (ds->n < 1 || ds->c != o->channels || ds->h != o->height ||
      ds->w != o->width || !ds->pixels) {
    __builtin_trap();
  }
  volatile unsigned sum = 0;
  size_t bytes = (size_t)ds->n * (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
  for (size_t i = 0; i < bytes; i++) sum += ds->pixels[i];
  if (ds->labels) {
    for (int64_t i = 0; i < ds->n; i++) {
      if (ds->labels[i] >= ds->num_classes) __builtin_trap();
    }
    if (ds->num_classes > GF_DATA_MAX_CLASSES || !ds->class_names ||
        !ds->class_names_from) {
      __builtin_trap();
    }
    for (int k = 0; k < ds->num_classes; k++) {
      gf_err err;
      int got = -1;
      if (gf_data_class_name_check(ds->class_names[k], &err) != GF_OK ||
          gf_dataset_class_index(ds, ds->class_names[k], &got, &err) !=
              GF_OK ||
          got != k) {
        __builtin_trap();
      }
    }
  } else if (ds->num_classes != 0 || ds->class_names) {
    __builtin_trap();
  }
  (void)sum;
}

/* A decoded image must have a sane shape and convert to any geometry. */
static inline void fuzz_check_image(const gf_image *im, uint8_t geometry) {
  if ((im->c != 1 && im->c != 3) || im->w < 1 || im->h < 1 || !im->px) {
    __builtin_trap();
  }
  gf_data_options o = fuzz_geometry(geometry);
  uint8_t *dst = malloc((size_t)o.channels * o.height * o.width);
  if (!dst) return;
  gf_err err;
  if (gf_data_image_convert(im, &o, dst, &err) != GF_OK) __builtin_trap();
  free(dst);
}

#endif
