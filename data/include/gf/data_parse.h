/* data_parse.h - the data readers on memory buffers: the same parsers
 * gf_dataset_load runs on files, callable on bytes for tests and fuzz
 * targets (tests/fuzz/fuzz_data_*.c). Nothing here touches the file system.
 *
 * `name` in each call is only used in error messages, where a file path
 * would be. Geometry (channels, size, fit) comes from the gf_data_options
 * argument, whose path and format are ignored. */
#ifndef GF_DATA_PARSE_H
#define GF_DATA_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "gf/data.h"
#include "gf/status.h"

/* Most pixels (width x height) a PNG or JPEG may declare. */
#define GF_DATA_MAX_PIXELS (1u << 26)

/* A decoded image: c planes (1: gray, 3: R, G, B) of h rows of w bytes.
 * px holds c * h * w bytes and is owned by the struct. */
typedef struct gf_image {
  uint8_t *px;
  int c, h, w;
} gf_image;

/* Frees px and zeroes the struct; NULL is fine. */
void gf_image_free(gf_image *im);

/* Decodes a PNG (any color type and bit depth; see data.h for how alpha,
 * palettes and 16-bit samples are reduced) into *out (caller-owned struct;
 * on success it owns out->px, release with gf_image_free; on failure *out is
 * empty). GF_EFORMAT naming `name` for anything libpng rejects, including
 * truncation and CRC errors in critical chunks. libpng errors are caught
 * with setjmp/longjmp in this call; no global state. */
gf_status gf_data_png_decode(const uint8_t *buf, size_t len, const char *name,
                             gf_image *out, gf_err *err);

/* Decodes a baseline or progressive JPEG (gray or YCbCr/RGB) into *out, as
 * gf_data_png_decode. Libjpeg's "corrupt data" warnings (after which it
 * would fill the image with gray) are errors here. CMYK/YCCK JPEGs are
 * GF_EUNSUPPORTED. */
gf_status gf_data_jpeg_decode(const uint8_t *buf, size_t len, const char *name,
                              gf_image *out, gf_err *err);

/* Decodes a PNG or JPEG chosen by the magic bytes; GF_EFORMAT naming `name`
 * when it is neither. */
gf_status gf_data_image_decode(const uint8_t *buf, size_t len,
                               const char *name, gf_image *out, gf_err *err);

/* Converts one decoded image to the cache geometry of data.h (channels,
 * then fit) into dst (c * h * w bytes of opt's geometry, caller-owned).
 * Allocates scratch freed before returning. */
gf_status gf_data_image_convert(const gf_image *src, const gf_data_options *opt,
                                uint8_t *dst, gf_err *err);

/* The image files (.png, .jpg, .jpeg, any case) under root, recursively,
 * as the image-folder reader finds them: hidden entries skipped, directory
 * links not followed, nesting deeper than GF_DATA_MAX_DEPTH refused, a path
 * longer than GF_PATH_MAX an error naming it. *paths receives n paths
 * relative to root in strcmp order (n may be 0); the caller owns the array
 * and its strings and frees them with gf_data_image_paths_free. *skipped
 * (skipped may be NULL) receives how many other regular files there were. */
gf_status gf_data_image_paths(const char *root, char ***paths, size_t *n,
                              int64_t *skipped, gf_err *err);
void gf_data_image_paths_free(char **paths, size_t n);
/* Reads a whole file of at most 256 MiB (one image) into *buf, which the
 * caller frees; errors name the path. */
gf_status gf_data_read_file(const char *path, uint8_t **buf, size_t *len,
                            gf_err *err);

/* Loads an IDX image file and its IDX label file from memory into *ds, as
 * gf_dataset_load does from files (ds->source is set to img_name). No
 * class-name file is read: the names are the indices "0" ... */
gf_status gf_data_idx_load_mem(gf_dataset *ds, const uint8_t *img,
                               size_t img_len, const char *img_name,
                               const uint8_t *lbl, size_t lbl_len,
                               const char *lbl_name,
                               const gf_data_options *opt, gf_err *err);

/* Loads CIFAR-10 records from one memory buffer (the contents of one
 * data_batch_N.bin) into *ds; class names "0" ... "9". */
gf_status gf_data_cifar_load_mem(gf_dataset *ds, const uint8_t *buf,
                                 size_t len, const char *name,
                                 const gf_data_options *opt, gf_err *err);

/* Parses a class-name file (classes.txt, CIFAR-10's batches.meta.txt; the
 * rules are data.h's "Class names") from buf[0..len): *names receives *n
 * (1..GF_DATA_MAX_CLASSES) names in line order, each passing
 * gf_data_class_name_check, none twice. *names is ONE allocation owned by
 * the caller (the pointer array, then the strings): release it with
 * free(*names). On failure *names is NULL, *n is 0, and err (GF_EFORMAT)
 * names `name` and the line. The count is not checked against a dataset
 * here; gf_dataset_load does that. */
gf_status gf_data_class_names_parse(const uint8_t *buf, size_t len,
                                    const char *name, char ***names, int *n,
                                    gf_err *err);

#endif
