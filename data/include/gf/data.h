/* data.h - the training data of ganflow-train (DESIGN §2 `--data`, §4.1):
 * dataset readers, the per-epoch Philox permutation, step-positioned batch
 * iteration with rank slices, and a loader thread that prepares batches
 * ahead of the training step.
 *
 * A dataset is decoded ONCE into a compact uint8 cache of N images, each
 * C x H x W planar (the model's channels and size), plus one label byte per
 * image where the format has labels. Batches are made from the cache on
 * demand: uint8 v -> float (v - 127.5) / 127.5 in [-1, 1], NCHW.
 *
 * Formats (gf_data_format):
 *   IDX     MNIST-format files: DIR/train-images-idx3-ubyte[.gz] (magic
 *           0x00000803, N x rows x cols ubyte) and
 *           DIR/train-labels-idx1-ubyte[.gz] (magic 0x00000801, N ubyte).
 *           Plain or gzip (zlib). Both files must agree on N. Trailing bytes
 *           after the declared data are an error.
 *   CIFAR10 DIR/data_batch_1.bin ... data_batch_5.bin (all five), or the
 *           same inside DIR/cifar-10-batches-bin/. Records of 1 label byte
 *           (0..9) + 3072 bytes (32x32 R, G, B planes). A file whose size is
 *           not a multiple of 3073 is an error.
 *   IMAGES  PNG and JPEG files (by extension .png .jpg .jpeg, any case; the
 *           decoder is chosen by the file's magic bytes) found RECURSIVELY
 *           under DIR (at most GF_DATA_MAX_DEPTH levels; entries whose name
 *           starts with '.' are skipped; symbolic links to directories are
 *           not followed), in strcmp order of their relative paths. Other
 *           files are ignored. When every image lies in a first-level
 *           subdirectory, the label is the index of that subdirectory in
 *           sorted order (torchvision ImageFolder); otherwise no labels.
 *   MNIST, FASHION_MNIST
 *           IDX files (as IDX above) of a dataset the spec names
 *           ("mnist:DIR", "fashion-mnist:DIR"): 10 classes whatever labels
 *           occur (a label above 9 is an error), with that dataset's class
 *           names ("Class names" below). Never detected: the two share
 *           their file names and shapes, so only the spec can tell them
 *           apart.
 *   AUTO    IDX if DIR holds train-images-idx3-ubyte[.gz]; else CIFAR10 if
 *           DIR or DIR/cifar-10-batches-bin holds data_batch_1.bin; else
 *           IMAGES.
 *
 * Geometry, the same rule for every format (exact integer arithmetic, the
 * same bytes on every machine):
 *   1. Channels first: gray -> RGB replicates the plane; RGB -> gray is the
 *      BT.601 luma (77 R + 150 G + 29 B + 128) >> 8. Alpha is dropped (not
 *      composited); palettes are expanded; 16-bit samples keep the high
 *      byte; gray below 8 bits is scaled up to 8.
 *   2. GF_DATA_FIT_RESIZE (default): the largest centered rectangle of the
 *      target aspect ratio is cut from the source (offsets rounded down),
 *      then resampled to H x W by area averaging (box filter: each output
 *      pixel is the overlap-weighted mean of the source pixels it covers,
 *      rounded to nearest), which is also the upscaling rule. So
 *      Fashion-MNIST 28x28 for a 32x32 model is area-upscaled (as
 *      torchvision Resize would), and a 640x480 photo for 64x64 keeps its
 *      central 480x480 square.
 *      GF_DATA_FIT_PAD: no resampling: the source is centered on a black
 *      (0) canvas of H x W, cropped centrally where it is larger. So
 *      Fashion-MNIST for a 32x32 model gets a 2-pixel black border, as the
 *      LeNet papers padded MNIST.
 *   A source already C x H x W is copied untouched by either rule.
 *
 * Order (DESIGN §4.1, §4.6): the dataset is read as one endless stream of
 * epochs; epoch e visits every image once in the order of
 * gf_data_permutation(seed, e) (a pure function: indices sorted by 64-bit
 * Philox keys). Global step s of global batch size B takes stream positions
 * s*B ... s*B+B-1; position p is image perm(e)[p % N] with e = p / N. No
 * image is dropped, every batch is full, and a batch may span the end of an
 * epoch. Rank r of world size W takes positions [B*r/W, B*(r+1)/W) of each
 * global batch: disjoint, covering, and the global order does not depend on
 * W. A checkpoint needs only the step (gf_data_position_of_step).
 *
 * Mirror (gf_data_order.mirror; StyleGAN2-ADA's --mirror=1, x-flips): the
 * stream walks a doubled dataset of S = 2N SAMPLES per epoch. Sample index
 * s < N is image s as it is, s >= N is image s - N flipped left-right
 * (reversed along W, every row of every channel; the label unchanged).
 * Everything above holds with N replaced by S: epoch e is
 * gf_data_permutation(seed, e) over S indices, position p is sample
 * perm(e)[p % S] with e = p / S, and gf_data_position_of_step takes S. So
 * every epoch shows every image exactly twice, once as it is and once
 * flipped, and a step's samples are a pure function of (seed, step, global
 * batch, world, rank, mirror). Without mirror, S = N and sample = image:
 * the order is the one above, bit for bit. gf_data_epoch_samples gives S.
 *
 * Class names (gf_dataset.class_names; for `--cond`, the model config, the
 * MLmodel signature and the server's `class=NAME`): a dataset with labels
 * has exactly num_classes names, label k's at index k. Where they come
 * from, first match wins:
 *   1. DIR/classes.txt (GF_DATA_CLASSES_FILE, DIR the directory --data
 *      names), for any format: one name per line, label 0 first; UTF-8,
 *      an optional BOM, LF or CRLF line ends; empty lines only at the end
 *      (ignored); no name twice. Its count must be the dataset's classes:
 *      for IDX at least max label + 1 (the file then sets num_classes, so
 *      a subset missing the last classes keeps them), for every other
 *      format exactly num_classes. A dataset without labels and a
 *      classes.txt is an error: the file names classes nothing has.
 *   2. Built in: FASHION_MNIST "T-shirt/top", "Trouser", "Pullover",
 *      "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot";
 *      CIFAR10 the batch folder's batches.meta.txt when present (the
 *      CIFAR-10 tarball's, "airplane" ... "truck"; parsed and checked as
 *      classes.txt, 10 names); IMAGES the class subdirectories' names,
 *      exactly as on disk (bytes, no Unicode normalization).
 *   3. Else the decimal indices "0" ... "num_classes-1" (IDX, MNIST,
 *      CIFAR10 without batches.meta.txt).
 * Every name, from any source, passes gf_data_class_name_check: 1 ..
 * GF_DATA_CLASS_NAME_MAX bytes of UTF-8 without control characters (C0,
 * DEL, C1) or invisible format characters (U+00AD, U+200B-U+200F,
 * U+2028-U+202E, U+2060-U+2069, U+FEFF), no leading or trailing space,
 * none of the characters of
 * GF_DATA_CLASS_NAME_FORBIDDEN; a folder or file that breaks the rule is
 * refused naming the directory or line (for a folder, rename the
 * subdirectory or put a classes.txt beside it, which replaces the names).
 * So a name goes into a CSV or JSON field and a `class=` query value with
 * no escaping beyond JSON's and a space's (%20 or +); '/' (Fashion-MNIST's
 * "T-shirt/top"), spaces inside, apostrophes and non-ASCII letters are
 * kept. Names differing only in case are distinct.
 *
 * Errors follow gf/status.h: every failure is a gf_err whose message names
 * the file and what is wrong with it. Nothing here prints, exits or keeps
 * global state; libpng and libjpeg errors are caught per decode. */
#ifndef GF_DATA_H
#define GF_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gf/class_name.h"
#include "gf/fs.h"
#include "gf/status.h"

/* Limits on what a reader accepts from a file. */
#define GF_DATA_MAX_SIDE 16384      /* source width/height, and model size */
#define GF_DATA_MAX_IMAGES 0x7fffffffu /* images in a dataset (indices fit u32) */
#define GF_DATA_MAX_DEPTH 16        /* directory levels of an image folder */
/* Room a dataset directory must leave in a path of GF_PATH_MAX bytes for
 * the names the readers join to it, '/' included: the longest is
 * "/cifar-10-batches-bin/data_batch_1.bin" (38 bytes); the rest is margin.
 * The relative paths of an image folder are the folder's own: each is
 * checked as it is found, and one that does not fit is an error naming
 * it. */
#define GF_DATA_DIR_ROOM 64
/* Class names ("Class names" above). */
#define GF_DATA_MAX_CLASSES 256      /* labels are one byte */
/* The rule itself is gf_base's (gf/class_name.h), shared with model/. */
#define GF_DATA_CLASS_NAME_MAX GF_CLASS_NAME_MAX /* bytes, NUL excluded */
#define GF_DATA_CLASS_NAME_FORBIDDEN GF_CLASS_NAME_FORBIDDEN
#define GF_DATA_CLASSES_FILE "classes.txt" /* in the --data directory */
#define GF_DATA_CLASSES_FILE_MAX 65536     /* bytes of a class-name file */

typedef enum gf_data_format {
  GF_DATA_AUTO = 0,
  GF_DATA_IDX,
  GF_DATA_CIFAR10,
  GF_DATA_IMAGES,
  GF_DATA_MNIST,         /* IDX files, 10 classes "0" ... "9" */
  GF_DATA_FASHION_MNIST, /* IDX files, 10 classes, Fashion-MNIST's names */
} gf_data_format;

typedef enum gf_data_fit {
  GF_DATA_FIT_RESIZE = 0, /* center crop to the aspect ratio, area resample */
  GF_DATA_FIT_PAD,        /* center on black, crop where larger; no resample */
} gf_data_fit;

/* Static name ("idx", "cifar10", "images", "mnist", "fashion-mnist",
 * "auto"), the spec's FORMAT; "?" if out of range. */
const char *gf_data_format_name(gf_data_format f);

/* What to load. path is borrowed for the duration of gf_dataset_load. */
typedef struct gf_data_options {
  const char *path;      /* the dataset directory */
  gf_data_format format; /* GF_DATA_AUTO detects it from the directory */
  gf_data_fit fit;
  int channels;          /* 1 or 3: the model's image channels */
  int height, width;     /* the model's image size, 1..GF_DATA_MAX_SIDE */
} gf_data_options;

/* Parses a `--data` SPEC: "[FORMAT:]PATH" with FORMAT one of idx, cifar10,
 * images, mnist, fashion-mnist (lower case; auto when absent, so a
 * directory whose name starts with one of them and ':' needs "./"). Sets
 * opt->format and opt->path; opt->path points INTO spec (borrowed: spec
 * must outlive its use). GF_EINVAL naming the spec for an empty path. */
gf_status gf_data_spec_parse(const char *spec, gf_data_options *opt,
                             gf_err *err);

/* The decoded dataset. Invariants: pixels holds n * c * h * w bytes, image i
 * at pixels + i * c * h * w, planar (plane k = channel k: R, G, B or gray);
 * labels is NULL or holds n bytes each < num_classes; num_classes is 0
 * exactly when labels is NULL, else 1..GF_DATA_MAX_CLASSES; class_names is
 * NULL exactly when labels is NULL, else num_classes distinct names that
 * pass gf_data_class_name_check. */
typedef struct gf_dataset {
  uint8_t *pixels;        /* owned; n * c * h * w */
  uint8_t *labels;        /* owned; n, or NULL when the format has none */
  int64_t n;              /* images, 1..GF_DATA_MAX_IMAGES */
  int c, h, w;            /* equal to the options' channels, height, width */
  int num_classes;        /* 0 when labels == NULL; else max label + 1,
                             10 for CIFAR10, MNIST and FASHION_MNIST, the
                             subdirectories for IMAGES, or the lines of an
                             IDX dataset's classes.txt */
  char **class_names;     /* owned; NULL when labels == NULL, else
                             num_classes NUL-terminated UTF-8 names, label
                             k's at [k]. ONE allocation (the pointer array,
                             then the strings it points into): only
                             gf_dataset_free (or one free()) releases it */
  const char *class_names_from; /* static: where the names came from,
                             "classes.txt", "batches.meta.txt",
                             "fashion-mnist", "directories" or "indices";
                             NULL when labels == NULL */
  int src_c, src_h, src_w; /* native geometry of the first image (IDX,
                             CIFAR10: all images; IMAGES: the first file) */
  gf_data_format format;  /* the format read (never AUTO): the spec's
                             when it named one, else the detected one */
  char source[GF_PATH_MAX]; /* the directory the files were read from */
} gf_dataset;

/* Detects the format of opt->path (GF_DATA_AUTO rule above) without loading
 * it. GF_ENOTFOUND naming the directory when it is missing or holds nothing
 * usable. */
gf_status gf_data_detect(const char *path, gf_data_format *out, gf_err *err);

/* Loads a dataset into *ds (caller-owned struct, overwritten). On success
 * ds owns pixels, labels and class_names: release them with
 * gf_dataset_free. On failure *ds is left empty (safe to gf_dataset_free)
 * and err names the file (for a class name, the file and line or the
 * subdirectory). */
gf_status gf_dataset_load(gf_dataset *ds, const gf_data_options *opt,
                          gf_err *err);

/* Frees what ds owns and zeroes it; NULL and empty datasets are fine. */
void gf_dataset_free(gf_dataset *ds);

/* Bytes held by the dataset's cache (pixels + labels). */
size_t gf_dataset_bytes(const gf_dataset *ds);

/* GF_OK when name is a valid class name ("Class names" above), else
 * GF_EINVAL with err saying what is wrong ("'a,b': contains ','"), the name
 * quoted with control and non-UTF-8 bytes as \xNN. Callers add where the
 * name came from. name must be non-NULL and NUL-terminated. */
gf_status gf_data_class_name_check(const char *name, gf_err *err);

/* The label of a class given by name or index, for `--class`-style
 * arguments and `class=` (out non-NULL): *out = k when name_or_index equals
 * ds->class_names[k] exactly (bytes, case-sensitive), else when it is a
 * decimal index written without sign, spaces or leading zeros ("0", "7",
 * "12") below num_classes. A name wins over an index of the same
 * spelling (an image folder whose subdirectories are "1" ... "10" has
 * "10" at index 1). Errors (*out = -1): GF_EINVAL when the dataset has no
 * labels or the argument is empty; GF_ENOTFOUND naming the argument and
 * the classes, with a hint when a name matches but for ASCII case.
 * Allocates nothing. */
gf_status gf_dataset_class_index(const gf_dataset *ds,
                                 const char *name_or_index, int *out,
                                 gf_err *err);

/* ---- order: permutation, positions, rank slices ---------------------- */

/* perm[0..n-1] = the order of epoch `epoch` under `seed`: a permutation of
 * 0..n-1 (n: samples per epoch, gf_data_epoch_samples), a pure function of
 * (seed, epoch, n), drawn from
 * gf_rng_stream(seed, GF_RNG_DATA_PERM, epoch, 0, 0); epoch < 2^32 (else
 * GF_EINVAL). Allocates scratch of n * 16 bytes, freed before returning;
 * perm is caller-owned. */
gf_status gf_data_permutation(uint64_t seed, uint64_t epoch, uint32_t n,
                              uint32_t *perm, gf_err *err);

/* Samples per epoch of the stream over a dataset of n images: n, or 2n
 * with mirror ("Mirror" above). GF_EINVAL naming the limit with mirror when
 * n > GF_DATA_MAX_IMAGES (2^31 - 1): sample indices are uint32 and the
 * permutation's size is a uint32. Without mirror, *samples = n for any n. */
gf_status gf_data_epoch_samples(uint64_t n, bool mirror, uint64_t *samples,
                                gf_err *err);

/* Position of the first sample of global step `step`: epoch and offset in
 * that epoch, for an epoch of n SAMPLES (gf_data_epoch_samples: the
 * dataset's images, doubled with mirror) and a global batch of `batch`.
 * GF_EINVAL if n or batch is 0 or step * batch overflows. */
gf_status gf_data_position_of_step(uint64_t step, uint64_t batch, uint64_t n,
                                   uint64_t *epoch, uint64_t *offset,
                                   gf_err *err);
/* The inverse: the step whose first sample is at (epoch, offset).
 * GF_EINVAL if the position is not the start of a step (the position
 * epoch * n + offset is not a multiple of batch) or offset >= n. */
gf_status gf_data_step_of_position(uint64_t epoch, uint64_t offset,
                                   uint64_t batch, uint64_t n, uint64_t *step,
                                   gf_err *err);

/* Rank `rank`'s slice of a global batch: [*begin, *begin + *count) with
 * *begin = batch * rank / world. Slices of ranks 0..world-1 are disjoint and
 * cover 0..batch-1; they differ in size by at most one. */
gf_status gf_data_rank_slice(uint64_t batch, int world, int rank,
                             uint64_t *begin, uint64_t *count, gf_err *err);

/* How a run walks the data: the same for every rank except `rank`. */
typedef struct gf_data_order {
  uint64_t seed;       /* the run's --seed */
  uint64_t batch;      /* the GLOBAL batch (all ranks together), >= 1 */
  int world_size;      /* ranks, >= 1 */
  int rank;            /* 0 .. world_size - 1 */
  bool mirror;         /* x-flip augmentation: epochs of 2n samples, the
                          second n flipped ("Mirror" above); false: n */
} gf_data_order;

/* A step-positioned iterator over one rank's slices. It borrows the dataset
 * (which must outlive it) and owns two cached epoch permutations (8 * S
 * bytes) and sort scratch (16 * S bytes), S = it->samples, allocated by
 * init so that iterating never allocates. */
typedef struct gf_data_iter {
  const gf_dataset *ds;   /* borrowed */
  gf_data_order order;
  uint64_t samples;       /* per epoch: ds->n, or 2 * ds->n with mirror */
  uint64_t begin, count;  /* this rank's slice of every global batch */
  uint64_t step;          /* the next step gf_data_iter_next produces */
  uint32_t *perm[2];      /* owned; samples each; epoch perm_epoch[k] */
  uint64_t perm_epoch[2]; /* UINT64_MAX: slot empty */
  int perm_lru;           /* slot to replace next */
  void *scratch;          /* owned; sort keys for a permutation */
} gf_data_iter;

/* Checks the order against the dataset (world/rank in range, the global
 * batch at least world_size so no rank gets an empty slice, at most
 * GF_DATA_MAX_IMAGES images, which mirror can double) and allocates the
 * caches. Positioned at step 0. On failure *it is empty (gf_data_iter_free
 * is safe). */
gf_status gf_data_iter_init(gf_data_iter *it, const gf_dataset *ds,
                            const gf_data_order *order, gf_err *err);
/* Frees what it owns; NULL is fine. */
void gf_data_iter_free(gf_data_iter *it);
/* Positions the iterator so the next batch is global step `step`. */
void gf_data_iter_seek(gf_data_iter *it, uint64_t step);

/* One rank's batch: idx[0..count-1] = SAMPLE indices of this rank's slice
 * of step it->step, then advances: each in [0, it->samples), i.e. an image
 * index < ds->n without mirror, and with mirror s >= ds->n meaning image
 * s - ds->n flipped (gf_data_fill makes the pixels). idx is caller-owned
 * (it->count entries). *step_out (if non-NULL) gets the step produced. */
gf_status gf_data_iter_next_indices(gf_data_iter *it, uint32_t *idx,
                                    uint64_t *step_out, gf_err *err);

/* Converts samples idx[0..count-1] to float NCHW in [-1, 1] into images
 * (count * c * h * w floats, caller-owned) and, when labels is non-NULL,
 * their labels (-1 when the dataset has none). Sample indices must be
 * < 2 * ds->n: s < ds->n is image s; s >= ds->n is image s - ds->n flipped
 * left-right with the label of that image (what a mirror order hands out;
 * an order without mirror hands out image indices only, so it fills as
 * before). */
void gf_data_fill(const gf_dataset *ds, const uint32_t *idx, uint64_t count,
                  float *images, int32_t *labels);

/* ---- loader thread ---------------------------------------------------- */

/* A prepared batch, owned by the loader. */
typedef struct gf_batch {
  uint64_t step;       /* global step this slice belongs to */
  uint64_t n;          /* images in this rank's slice */
  int c, h, w;
  float *images;       /* n * c * h * w, NCHW, in [-1, 1] */
  int32_t *labels;     /* n; -1 each when the dataset has no labels */
  uint32_t *indices;   /* n sample indices (gf_data_iter_next_indices):
                          image indices, and with mirror s >= ds->n for
                          image s - ds->n flipped */
  double wait_s;       /* seconds gf_data_loader_next blocked for it */
} gf_batch;

typedef struct gf_data_loader gf_data_loader; /* opaque */

/* Starts a thread that prepares this rank's batches for steps first_step,
 * first_step + 1, ... into a bounded queue of `depth` (2..8) batches, in
 * the order's stream (mirror included: the flipped samples are filled
 * flipped). The loader borrows ds (it must outlive the loader) and copies
 * order. *out is owned by the caller: stop it with gf_data_loader_free. */
gf_status gf_data_loader_start(gf_data_loader **out, const gf_dataset *ds,
                               const gf_data_order *order, uint64_t first_step,
                               int depth, gf_err *err);

/* Hands out the next batch in step order, blocking until it is ready. The
 * batch stays valid (owned by the loader) until the next call of
 * gf_data_loader_next or gf_data_loader_free; the call recycles the batch
 * handed out before it. */
gf_status gf_data_loader_next(gf_data_loader *ld, const gf_batch **batch,
                              gf_err *err);

/* Total seconds gf_data_loader_next has blocked so far ("data wait"); safe
 * to read from any thread (a resource monitor's sampler). */
double gf_data_loader_wait_seconds(const gf_data_loader *ld);

/* Stops the thread (mid-epoch is fine: it finishes the batch it is filling
 * and exits), joins it and frees everything. NULL is fine. */
void gf_data_loader_free(gf_data_loader *ld);

#endif
