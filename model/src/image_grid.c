/* image_grid.c - sample grids and PNG encoding (gf/image_grid.h): tiling
 * float NCHW images into one 8-bit picture, and a deterministic libpng
 * encoder into memory whose errors are caught by a setjmp handler local to
 * each call (no global state). Not a PNG decoder. */
#include "gf/image_grid.h"

#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/atomic_file.h"

#define GF_GRID_MAX_PAD 1024 /* border pixels */

uint8_t gf_pixel_u8(float x) {
  if (!(x > -1.0f)) return 0; /* also NaN */
  if (x >= 1.0f) return 255;
  double v = ((double)x + 1.0) * 0.5 * 255.0;
  return (uint8_t)floor(v + 0.5);
}

gf_status gf_grid_to_rgb8(const float *images, int n, int c, int h, int w,
                          int nrow, int pad, uint8_t **out, int *out_w,
                          int *out_h, int *out_c, gf_err *err) {
  if (out) *out = NULL;
  if (!images || !out || !out_w || !out_h || !out_c)
    return gf_fail(err, GF_EINVAL, "grid: NULL argument");
  if (n < 1 || (c != 1 && c != 3) || h < 1 || w < 1 || nrow < 1 || pad < 0 ||
      pad > GF_GRID_MAX_PAD)
    return gf_fail(err, GF_EINVAL,
                   "grid: bad geometry n %d c %d h %d w %d nrow %d pad %d "
                   "(need n, h, w, nrow >= 1, c 1 or 3, pad 0..%d)",
                   n, c, h, w, nrow, pad, GF_GRID_MAX_PAD);
  int64_t cols = nrow < n ? nrow : n;
  int64_t rows = ((int64_t)n + nrow - 1) / nrow;
  int64_t gw = cols * ((int64_t)w + pad) + pad;
  int64_t gh = rows * ((int64_t)h + pad) + pad;
  if (gw > GF_GRID_MAX_SIDE || gh > GF_GRID_MAX_SIDE)
    return gf_fail(err, GF_EINVAL,
                   "grid: %lld x %lld pixels exceeds the %d-pixel limit",
                   (long long)gw, (long long)gh, GF_GRID_MAX_SIDE);
  size_t bytes = (size_t)gw * (size_t)gh * (size_t)c;
  uint8_t *px = calloc(bytes, 1); /* border = 0 */
  if (!px) return gf_fail(err, GF_ENOMEM, "grid: %zu bytes", bytes);
  size_t plane = (size_t)h * (size_t)w;
  for (int k = 0; k < n; k++) {
    int64_t x0 = (k % nrow) * ((int64_t)w + pad) + pad;
    int64_t y0 = (k / nrow) * ((int64_t)h + pad) + pad;
    const float *img = images + (size_t)k * (size_t)c * plane;
    for (int y = 0; y < h; y++) {
      uint8_t *row = px + ((size_t)(y0 + y) * (size_t)gw + (size_t)x0) * (size_t)c;
      for (int x = 0; x < w; x++)
        for (int ch = 0; ch < c; ch++)
          row[(size_t)x * (size_t)c + (size_t)ch] =
              gf_pixel_u8(img[(size_t)ch * plane + (size_t)y * (size_t)w + (size_t)x]);
    }
  }
  *out = px;
  *out_w = (int)gw;
  *out_h = (int)gh;
  *out_c = c;
  return GF_OK;
}

/* State of one encode, reached from libpng's callbacks through the io and
 * error pointers. buf grows by doubling; err holds libpng's error text. */
typedef struct png_sink {
  uint8_t *buf;   /* malloc'd, owned until handed to the caller */
  size_t len, cap;
  int oom;        /* an allocation of buf failed */
  gf_err err;     /* "png: libpng: <its last error>"; msg "" until one */
} png_sink;

static void sink_error(png_structp png, png_const_charp msg) {
  png_sink *s = png_get_error_ptr(png);
  if (s) gf_fail(&s->err, GF_EDEVICE, "png: libpng: %s", msg ? msg : "error");
  png_longjmp(png, 1);
}

static void sink_warning(png_structp png, png_const_charp msg) {
  (void)png;
  (void)msg; /* warnings are not errors; libraries do not print */
}

static void sink_write(png_structp png, png_bytep data, size_t len) {
  png_sink *s = png_get_io_ptr(png);
  if (len > s->cap - s->len) {
    size_t cap = s->cap ? s->cap : 4096;
    while (len > cap - s->len) {
      if (cap > SIZE_MAX / 2) {
        s->oom = 1;
        png_error(png, "PNG too large");
      }
      cap *= 2;
    }
    uint8_t *nb = realloc(s->buf, cap);
    if (!nb) {
      s->oom = 1;
      png_error(png, "out of memory");
    }
    s->buf = nb;
    s->cap = cap;
  }
  memcpy(s->buf + s->len, data, len);
  s->len += len;
}

static void sink_flush(png_structp png) { (void)png; }

gf_status gf_png_encode(const uint8_t *pixels, int w, int h, int c,
                        uint8_t **png, size_t *png_len, gf_err *err) {
  if (png) *png = NULL;
  if (png_len) *png_len = 0;
  if (!pixels || !png || !png_len)
    return gf_fail(err, GF_EINVAL, "png: NULL argument");
  if (w < 1 || h < 1 || w > GF_GRID_MAX_SIDE || h > GF_GRID_MAX_SIDE ||
      (c != 1 && c != 3))
    return gf_fail(err, GF_EINVAL,
                   "png: bad image %d x %d x %d (sides 1..%d, 1 or 3 channels)",
                   w, h, c, GF_GRID_MAX_SIDE);
  /* The sink lives on the heap: it changes between setjmp and a longjmp,
   * which an automatic object may not (C11 7.13.2.1). pp and info are set
   * before setjmp and never after. */
  png_sink *sink = calloc(1, sizeof *sink);
  if (!sink) return gf_fail(err, GF_ENOMEM, "png: encoder state");
  png_structp pp = png_create_write_struct(PNG_LIBPNG_VER_STRING, sink,
                                           sink_error, sink_warning);
  if (!pp) {
    free(sink);
    return gf_fail(err, GF_ENOMEM, "png: png_create_write_struct failed");
  }
  png_infop info = png_create_info_struct(pp);
  if (!info) {
    png_destroy_write_struct(&pp, NULL);
    free(sink);
    return gf_fail(err, GF_ENOMEM, "png: png_create_info_struct failed");
  }
  if (setjmp(png_jmpbuf(pp))) {
    png_destroy_write_struct(&pp, &info);
    gf_status code = sink->oom ? GF_ENOMEM : GF_EDEVICE;
    if (!sink->err.msg[0]) gf_fail(&sink->err, code, "png: libpng: error");
    sink->err.code = code;
    if (err) *err = sink->err;
    free(sink->buf);
    free(sink);
    return code;
  }
  png_set_write_fn(pp, sink, sink_write, sink_flush);
  /* Fixed settings, so the same pixels give the same bytes. */
  png_set_compression_level(pp, 6);
  png_set_filter(pp, PNG_FILTER_TYPE_BASE, PNG_ALL_FILTERS);
  png_set_IHDR(pp, info, (png_uint_32)w, (png_uint_32)h, 8,
               c == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_BASE,
               PNG_FILTER_TYPE_BASE);
  png_write_info(pp, info);
  size_t stride = (size_t)w * (size_t)c;
  for (int y = 0; y < h; y++)
    png_write_row(pp, (png_const_bytep)(pixels + (size_t)y * stride));
  png_write_end(pp, NULL);
  png_destroy_write_struct(&pp, &info);
  *png = sink->buf;
  *png_len = sink->len;
  free(sink);
  return GF_OK;
}

gf_status gf_png_write_grid(const char *path, const float *images, int n,
                            int c, int h, int w, int nrow, gf_err *err) {
  if (!path || !*path) return gf_fail(err, GF_EINVAL, "png: empty path");
  uint8_t *px = NULL, *png = NULL;
  size_t png_len = 0;
  int gw = 0, gh = 0, gc = 0;
  gf_status st = gf_grid_to_rgb8(images, n, c, h, w, nrow, GF_GRID_DEFAULT_PAD,
                                 &px, &gw, &gh, &gc, err);
  if (st == GF_OK) st = gf_png_encode(px, gw, gh, gc, &png, &png_len, err);
  free(px);
  if (st == GF_OK) st = gf_atomic_write_file(path, png, png_len, err);
  free(png);
  return st;
}
