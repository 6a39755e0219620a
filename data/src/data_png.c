/* data_png.c - PNG decoding from memory with libpng into a planar gf_image
 * of 1 (gray) or 3 (RGB) channels: palettes expanded, gray below 8 bits
 * scaled up, 16-bit samples reduced to their high byte, alpha dropped,
 * interlacing undone. libpng's errors are caught by a setjmp/longjmp handler
 * set up for each decode, with the message kept in that decode's context;
 * the first warning is kept to explain an error (libpng reports the reason
 * for "Invalid IHDR data" as a warning) and otherwise ignored. No global
 * state. */
#include "data_internal.h"

#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One decode: the input cursor and libpng's last error message. */
typedef struct png_ctx {
  const uint8_t *buf;
  size_t len, pos;
  char msg[256];  /* the error */
  char warn[160]; /* the first warning, often the reason for the error */
} png_ctx;

/* Copies libpng's text into dst[cap] (cap > 4); one too long for it keeps
 * its start and ends in "..." so that the cut shows. */
static void keep_text(char *dst, size_t cap, const char *src) {
  int n = snprintf(dst, cap, "%s", src);
  if (!gf_fits(n, cap)) memcpy(dst + cap - 4, "...", 4);
}

static void on_png_error(png_structp png, png_const_charp msg) {
  png_ctx *c = png_get_error_ptr(png);
  keep_text(c->msg, sizeof c->msg, msg ? msg : "libpng error");
  png_longjmp(png, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg) {
  png_ctx *c = png_get_error_ptr(png);
  if (!c->warn[0]) keep_text(c->warn, sizeof c->warn, msg ? msg : "?");
}

static void on_png_read(png_structp png, png_bytep out, size_t n) {
  png_ctx *c = png_get_io_ptr(png);
  if (n > c->len - c->pos) png_error(png, "truncated file (unexpected end of data)");
  memcpy(out, c->buf + c->pos, n);
  c->pos += n;
}

gf_status gf_data_png_decode(const uint8_t *buf, size_t len, const char *name,
                             gf_image *out, gf_err *err) {
  memset(out, 0, sizeof *out);
  png_ctx ctx = {.buf = buf, .len = len};
  png_structp png =
      png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, on_png_error,
                             on_png_warning);
  if (!png) return gf_fail(err, GF_ENOMEM, "%s: cannot set up libpng", name);
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, NULL, NULL);
    return gf_fail(err, GF_ENOMEM, "%s: cannot set up libpng", name);
  }
  /* Written after setjmp and read after longjmp: volatile. */
  uint8_t *volatile pixels = NULL;
  png_bytep *volatile rows = NULL;
  gf_status volatile status = GF_EFORMAT;
  if (setjmp(png_jmpbuf(png))) {
    free(pixels);
    free(rows);
    png_destroy_read_struct(&png, &info, NULL);
    if (status == GF_ENOMEM) {
      return gf_fail(err, GF_ENOMEM, "%s: out of memory decoding PNG", name);
    }
    return gf_fail(err, GF_EFORMAT, "%s: invalid PNG: %s%s%s%s", name, ctx.msg,
                   ctx.warn[0] ? " (libpng warning: " : "", ctx.warn,
                   ctx.warn[0] ? ")" : "");
  }
  png_set_read_fn(png, &ctx, on_png_read);
  png_set_user_limits(png, GF_DATA_MAX_SIDE, GF_DATA_MAX_SIDE);
  png_read_info(png, info);

  png_uint_32 w = 0, h = 0;
  int depth = 0, color = 0, interlace = 0;
  png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, NULL, NULL);
  if ((uint64_t)w * h > GF_DATA_MAX_PIXELS) {
    png_error(png, "image has too many pixels");
  }
  if (depth == 16) png_set_strip_16(png);
  if (color == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) {
    png_set_expand_gray_1_2_4_to_8(png);
  }
  if (color & PNG_COLOR_MASK_ALPHA) png_set_strip_alpha(png);
  (void)png_set_interlace_handling(png);
  png_read_update_info(png, info);

  const int c = png_get_channels(png, info);
  if ((c != 1 && c != 3) || png_get_bit_depth(png, info) != 8 ||
      png_get_rowbytes(png, info) != (size_t)w * (size_t)c) {
    png_error(png, "unexpected layout after transforms");
  }
  const size_t plane = (size_t)w * h;
  status = GF_ENOMEM;
  pixels = malloc(plane * (size_t)c);
  rows = malloc((size_t)h * sizeof *rows);
  if (!pixels || !rows) png_error(png, "out of memory");
  status = GF_EFORMAT;
  for (png_uint_32 y = 0; y < h; y++) rows[y] = pixels + (size_t)y * w * c;
  png_read_image(png, rows);
  png_read_end(png, NULL);

  gf_image im = {.c = c, .h = (int)h, .w = (int)w};
  if (c == 1) {
    im.px = pixels;
    pixels = NULL;
  } else {
    im.px = malloc(plane * 3);
    if (!im.px) {
      free(pixels);
      free(rows);
      png_destroy_read_struct(&png, &info, NULL);
      return gf_fail(err, GF_ENOMEM, "%s: out of memory decoding PNG", name);
    }
    const uint8_t *p = pixels;
    for (size_t i = 0; i < plane; i++) {
      im.px[i] = p[3 * i];
      im.px[plane + i] = p[3 * i + 1];
      im.px[2 * plane + i] = p[3 * i + 2];
    }
  }
  free(pixels);
  free(rows);
  png_destroy_read_struct(&png, &info, NULL);
  *out = im;
  return GF_OK;
}
