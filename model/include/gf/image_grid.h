/* image_grid.h - generator output to pictures: a batch of images (float
 * NCHW in [-1, 1], the tanh_-1_1 pixel normalization of model_config.h)
 * tiled into one grid, mapped to 8-bit pixels, and encoded as PNG with
 * libpng. Shared by the trainer (sample grids logged as MLflow artifacts)
 * and the server (PNG responses).
 *
 * Pixel mapping: v = round((x + 1) / 2 * 255) after clamping x to [-1, 1];
 * NaN maps to 0 (black), +inf to 255, -inf to 0. Border pixels are 0.
 * PNG bytes are deterministic: the same pixels give the same file (no tIME
 * or text chunks, fixed compression settings).
 *
 * Not here: decoding PNGs for training data (data/src/data_png.c). */
#ifndef GF_IMAGE_GRID_H
#define GF_IMAGE_GRID_H

#include <stddef.h>
#include <stdint.h>

#include "gf/status.h"

#define GF_GRID_DEFAULT_PAD 2 /* border pixels used by gf_png_write_grid */
#define GF_GRID_MAX_SIDE 16384 /* largest grid width or height, pixels */

/* Tiles n images (float NCHW, c 1 or 3, h, w >= 1) into rows of nrow
 * columns (the last row may be partial; nrow > n is allowed and gives one
 * row of n): grid width = cols * (w + pad) + pad, height = rows * (h + pad)
 * + pad, with cols = min(nrow, n), rows = ceil(n / nrow). Pixels are
 * interleaved (HWC), c channels, mapped as the file header says.
 * Memory: *out is malloc'd here (out_w * out_h * out_c bytes); the caller
 * frees it with free(). images is only read. On failure *out is NULL. */
/* One generator value to an 8-bit pixel, as every image ganflow writes:
 * clamp to [-1, 1] (NaN -> -1, so 0), then round((x + 1) / 2 * 255) with
 * halves rounded up. */
uint8_t gf_pixel_u8(float x);

gf_status gf_grid_to_rgb8(const float *images, int n, int c, int h, int w,
                          int nrow, int pad, uint8_t **out, int *out_w,
                          int *out_h, int *out_c, gf_err *err);

/* Encodes w x h pixels of c channels (1: 8-bit gray, 3: 8-bit RGB;
 * interleaved rows, no padding) as a PNG. libpng errors are caught by a
 * setjmp handler local to this call. Memory: *png is malloc'd here
 * (*png_len bytes); the caller frees it with free(). On failure *png is
 * NULL. */
gf_status gf_png_encode(const uint8_t *pixels, int w, int h, int c,
                        uint8_t **png, size_t *png_len, gf_err *err);

/* gf_grid_to_rgb8 (pad GF_GRID_DEFAULT_PAD) + gf_png_encode, written to
 * path atomically (gf/atomic_file.h): path holds the old file or the whole
 * new one. Allocates nothing that outlives the call. */
gf_status gf_png_write_grid(const char *path, const float *images, int n,
                            int c, int h, int w, int nrow, gf_err *err);

#endif
