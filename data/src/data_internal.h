/* data_internal.h - shared pieces of the data readers (data/src/data_*.c):
 * byte sources (a plain or gzip file through zlib, or a memory buffer), the
 * reusable scratch of the image geometry step, and dataset allocation.
 * Private to gf_trainer; the public API is gf/data.h and gf/data_parse.h. */
#ifndef GF_DATA_INTERNAL_H
#define GF_DATA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

#include "gf/data.h"
#include "gf/data_parse.h"
#include "gf/fs.h"
#include "gf/status.h"
#include "gf/text.h"

/* ---- byte sources (data_src.c) ----------------------------------------- */

/* Where a reader's bytes come from. A file goes through gzopen, which reads
 * gzip and plain files alike (gzdirect tells which). Invariant: consumed <=
 * bound; `bound` is an upper limit on the bytes the source can yield in
 * all: exact for memory and plain files, 1032 x the compressed size for a
 * gzip file (deflate's largest ratio), so a header can be checked against
 * it before anything is allocated. */
typedef struct gf_src {
  const char *name;      /* borrowed; named in every error */
  gzFile gz;             /* owned; NULL for a memory source */
  const uint8_t *mem;    /* borrowed memory source */
  size_t mem_len;
  uint64_t consumed;     /* bytes handed out so far */
  uint64_t bound;        /* see above */
  uint64_t file_size;    /* size on disk (memory: mem_len) */
  int compressed;        /* 1 when a gzip stream is being inflated */
} gf_src;

/* Opens path (kept borrowed as the name). GF_ENOTFOUND when it does not
 * exist, GF_EIO for other open errors. On success the caller closes it with
 * gf_src_close. */
gf_status gf_src_open_file(gf_src *s, const char *path, gf_err *err);
/* A source over buf[0..len) (borrowed); never fails. */
void gf_src_open_mem(gf_src *s, const char *name, const uint8_t *buf,
                     size_t len);
/* Reads exactly n bytes into buf. GF_EFORMAT "NAME: truncated: ..." naming
 * `what` when the source ends early; GF_EFORMAT "NAME: gzip error: ..." for
 * a corrupt stream; GF_EIO for read errors. */
gf_status gf_src_read(gf_src *s, void *buf, uint64_t n, const char *what,
                      gf_err *err);
/* GF_EFORMAT naming the file when bytes follow what was read (or the gzip
 * stream is corrupt after them, e.g. a bad CRC). */
gf_status gf_src_expect_end(gf_src *s, gf_err *err);
/* Closes the file; safe on a memory source and after a failed open. */
void gf_src_close(gf_src *s);

/* ---- geometry (data_image.c) ------------------------------------------ */

/* Grow-only buffers reused across the images of one load; owned by the
 * loading function, released with gf_img_scratch_free. */
typedef struct gf_img_scratch {
  uint8_t *plane;     /* a luma plane or a decoded row buffer */
  size_t plane_cap;
  uint32_t *rows;     /* horizontal pass: crop rows x output width */
  size_t rows_cap;
  uint64_t *acc;      /* vertical pass: one output row of sums */
  size_t acc_cap;
} gf_img_scratch;

void gf_img_scratch_free(gf_img_scratch *s);

/* gf_data_image_convert with caller-kept scratch (no allocation once the
 * scratch is large enough). */
gf_status gf_img_convert(const gf_image *src, const gf_data_options *opt,
                         uint8_t *dst, gf_img_scratch *s, gf_err *err);

/* ---- the dataset record (data_record.c) ------------------------------ */

/* GF_EINVAL unless channels is 1 or 3 and height, width are in
 * 1..GF_DATA_MAX_SIDE. */
gf_status gf_data_check_geometry(const gf_data_options *opt, gf_err *err);

/* Allocates ds->pixels for n images of opt's geometry (and ds->labels when
 * with_labels) and fills the geometry fields; ds must be zeroed. name is
 * the file named if the size overflows or malloc fails. */
gf_status gf_data_alloc(gf_dataset *ds, uint64_t n, int with_labels,
                        const gf_data_options *opt, const char *name,
                        gf_err *err);

/* ---- the readers (data_idx.c, data_cifar.c, data_folder.c) ----------- */

/* Readers behind gf_dataset_load, on a directory (dir is the folder that
 * holds the files, as detected). */
gf_status gf_data_load_idx_dir(gf_dataset *ds, const char *dir,
                               const gf_data_options *opt, gf_err *err);
gf_status gf_data_load_cifar_dir(gf_dataset *ds, const char *dir,
                                 const gf_data_options *opt, gf_err *err);
gf_status gf_data_load_images_dir(gf_dataset *ds, const char *dir,
                                  const gf_data_options *opt, gf_err *err);

/* ---- class names (data_classes.c) ------------------------------------ */

/* *out = one allocation (the caller's: free(*out), or gf_dataset_free once
 * it is a dataset's class_names) holding n pointers, then the n strings
 * names[k][0..lens[k]) each NUL-terminated (lens NULL: strlen). Copies;
 * checks nothing but 1 <= n <= GF_DATA_MAX_CLASSES. `what` is named in
 * errors. */
gf_status gf_data_names_make(int n, const char *const *names,
                             const size_t *lens, char ***out,
                             const char *what, gf_err *err);
/* The same for the names "0" ... "n-1". */
gf_status gf_data_names_indices(int n, char ***out, const char *what,
                                gf_err *err);
/* The last step of gf_dataset_load: gives a loaded dataset (format f, as
 * the spec named it or detection found it; read from the --data directory
 * dir) its names by data.h's "Class names" rules, replacing the reader's
 * defaults, and checks an image folder's. On failure ds is unchanged
 * apart from names already replaced; the caller frees it. */
gf_status gf_data_class_names_finish(gf_dataset *ds, const char *dir,
                                     gf_data_format f, gf_err *err);

/* Finds the CIFAR-10 batch folder under dir (dir itself or
 * dir/cifar-10-batches-bin): *found = 1 and the folder in out[out_len], or
 * *found = 0 when neither holds data_batch_1.bin. GF_EINVAL naming the
 * path when it does not fit (GF_PATH_MAX, out_len). */
gf_status gf_data_cifar_find(const char *dir, char *out, size_t out_len,
                             int *found, gf_err *err);
/* *found = 1 when dir holds train-images-idx3-ubyte or
 * train-images-idx3-ubyte.gz, else 0. GF_EINVAL naming the path when it
 * does not fit in GF_PATH_MAX. */
gf_status gf_data_idx_find(const char *dir, int *found, gf_err *err);

#endif
