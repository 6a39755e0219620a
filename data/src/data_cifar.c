/* data_cifar.c - the CIFAR-10 binary reader: data_batch_1.bin ...
 * data_batch_5.bin, each a sequence of 3073-byte records (1 label byte 0..9,
 * then the 32x32 red, green and blue planes). All five files are required;
 * each file's size must be a non-zero multiple of 3073. From a directory
 * (or its cifar-10-batches-bin subfolder) or from one memory buffer. */
#include "data_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CIFAR_SIDE 32
#define CIFAR_PIXELS (3 * CIFAR_SIDE * CIFAR_SIDE)
#define CIFAR_RECORD (1 + CIFAR_PIXELS)
#define CIFAR_FILES 5
#define CIFAR_CLASSES 10
#define CIFAR_CHUNK 256 /* records per read */

/* Records in a source, checked from its size. */
static gf_status cifar_count(const gf_src *s, uint64_t *records, gf_err *err) {
  if (s->compressed) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: gzip-compressed; CIFAR-10 batches must be the plain "
                   ".bin files",
                   s->name);
  }
  if (s->file_size == 0) {
    return gf_fail(err, GF_EFORMAT, "%s: empty file (no CIFAR-10 records)",
                   s->name);
  }
  if (s->file_size % CIFAR_RECORD != 0) {
    return gf_fail(err, GF_EFORMAT,
                   "%s: size %llu is not a multiple of %d (1 label byte + "
                   "%d pixel bytes per CIFAR-10 record)",
                   s->name, (unsigned long long)s->file_size, CIFAR_RECORD,
                   CIFAR_PIXELS);
  }
  *records = s->file_size / CIFAR_RECORD;
  return GF_OK;
}

/* Reads `count` records of s into images first, first+1, ... of ds. buf
 * holds CIFAR_CHUNK records. */
static gf_status cifar_read(gf_dataset *ds, uint64_t first, gf_src *s,
                            uint64_t count, const gf_data_options *opt,
                            uint8_t *buf, gf_img_scratch *scratch,
                            gf_err *err) {
  const size_t stride = (size_t)ds->c * (size_t)ds->h * (size_t)ds->w;
  for (uint64_t r = 0; r < count; r += CIFAR_CHUNK) {
    uint64_t k = count - r < CIFAR_CHUNK ? count - r : CIFAR_CHUNK;
    gf_status st = gf_src_read(s, buf, k * CIFAR_RECORD, "CIFAR-10 records", err);
    if (st) return st;
    for (uint64_t j = 0; j < k; j++) {
      const uint8_t *rec = buf + j * CIFAR_RECORD;
      if (rec[0] >= CIFAR_CLASSES) {
        return gf_fail(err, GF_EFORMAT,
                       "%s: record %llu has label %u; CIFAR-10 labels are "
                       "0..9",
                       s->name, (unsigned long long)(r + j), rec[0]);
      }
      ds->labels[first + r + j] = rec[0];
      gf_image im = {.px = (uint8_t *)rec + 1, .c = 3, .h = CIFAR_SIDE,
                     .w = CIFAR_SIDE};
      st = gf_img_convert(&im, opt, ds->pixels + (first + r + j) * stride,
                          scratch, err);
      if (st) return st;
    }
  }
  return gf_src_expect_end(s, err);
}

/* Loads from open sources; ds zeroed on entry, empty on failure. */
static gf_status cifar_load(gf_dataset *ds, gf_src *srcs, int nsrc,
                            const gf_data_options *opt, gf_err *err) {
  gf_status st = gf_data_check_geometry(opt, err);
  if (st) return st;
  uint64_t counts[CIFAR_FILES] = {0}, total = 0;
  for (int f = 0; f < nsrc; f++) {
    st = cifar_count(&srcs[f], &counts[f], err);
    if (st) return st;
    total += counts[f];
  }
  if (total > GF_DATA_MAX_IMAGES) {
    return gf_fail(err, GF_EUNSUPPORTED, "%s: %llu records are more than the %u supported",
                   srcs[0].name, (unsigned long long)total, GF_DATA_MAX_IMAGES);
  }
  st = gf_data_alloc(ds, total, 1, opt, srcs[0].name, err);
  if (st) return st;
  uint8_t *buf = malloc((size_t)CIFAR_CHUNK * CIFAR_RECORD);
  if (!buf) {
    gf_dataset_free(ds);
    return gf_fail(err, GF_ENOMEM, "%s: out of memory for a read buffer",
                   srcs[0].name);
  }
  gf_img_scratch scratch = {0};
  uint64_t first = 0;
  for (int f = 0; f < nsrc && !st; f++) {
    st = cifar_read(ds, first, &srcs[f], counts[f], opt, buf, &scratch, err);
    first += counts[f];
  }
  gf_img_scratch_free(&scratch);
  free(buf);
  if (!st) {
    st = gf_data_names_indices(CIFAR_CLASSES, &ds->class_names, srcs[0].name,
                               err);
  }
  if (st) {
    gf_dataset_free(ds);
    return st;
  }
  ds->class_names_from = "indices";
  ds->num_classes = CIFAR_CLASSES;
  ds->src_c = 3;
  ds->src_h = CIFAR_SIDE;
  ds->src_w = CIFAR_SIDE;
  ds->format = GF_DATA_CIFAR10;
  return GF_OK;
}

gf_status gf_data_cifar_load_mem(gf_dataset *ds, const uint8_t *buf,
                                 size_t len, const char *name,
                                 const gf_data_options *opt, gf_err *err) {
  memset(ds, 0, sizeof *ds);
  gf_src s;
  gf_src_open_mem(&s, name, buf, len);
  gf_status st = cifar_load(ds, &s, 1, opt, err);
  if (!st) st = gf_format(ds->source, sizeof ds->source, err, "dataset name",
                          "%s", name);
  if (st) gf_dataset_free(ds);
  return st;
}

gf_status gf_data_cifar_find(const char *dir, char *out, size_t out_len,
                             int *found, gf_err *err) {
  static const char *const sub[] = {"", "cifar-10-batches-bin"};
  *found = 0;
  for (size_t i = 0; i < sizeof sub / sizeof sub[0]; i++) {
    char base[GF_PATH_MAX], probe[GF_PATH_MAX];
    struct stat st;
    GF_TRY(gf_format(base, sizeof base, err, "CIFAR-10 folder path", "%s%s%s",
                     dir, *sub[i] ? "/" : "", sub[i]));
    GF_TRY(gf_format(probe, sizeof probe, err, "CIFAR-10 file path",
                     "%s/data_batch_1.bin", base));
    if (stat(probe, &st) == 0) {
      *found = 1;
      return gf_format(out, out_len, err, "CIFAR-10 folder path", "%s", base);
    }
  }
  return GF_OK;
}

gf_status gf_data_load_cifar_dir(gf_dataset *ds, const char *dir,
                                 const gf_data_options *opt, gf_err *err) {
  memset(ds, 0, sizeof *ds);
  char base[GF_PATH_MAX];
  int found;
  gf_status st = gf_data_cifar_find(dir, base, sizeof base, &found, err);
  if (st) return st;
  if (!found) {
    return gf_fail(err, GF_ENOTFOUND,
                   "%s: no data_batch_1.bin here or in cifar-10-batches-bin/",
                   dir);
  }
  char paths[CIFAR_FILES][GF_PATH_MAX];
  gf_src srcs[CIFAR_FILES];
  memset(srcs, 0, sizeof srcs);
  int opened = 0;
  for (; opened < CIFAR_FILES; opened++) {
    st = gf_format(paths[opened], sizeof paths[opened], err,
                   "CIFAR-10 file path", "%s/data_batch_%d.bin", base,
                   opened + 1);
    if (st) break;
    st = gf_src_open_file(&srcs[opened], paths[opened], err);
    if (st == GF_ENOTFOUND) {
      st = gf_fail(err, GF_ENOTFOUND,
                   "%s: missing (CIFAR-10 needs data_batch_1.bin ... "
                   "data_batch_5.bin)",
                   paths[opened]);
    }
    if (st) break;
  }
  if (!st) st = cifar_load(ds, srcs, CIFAR_FILES, opt, err);
  for (int f = 0; f < opened; f++) gf_src_close(&srcs[f]);
  if (!st) st = gf_format(ds->source, sizeof ds->source, err, "dataset path",
                          "%s", base);
  if (st) gf_dataset_free(ds);
  return st;
}
