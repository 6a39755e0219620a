/* data_jpeg.c - JPEG decoding from memory with libjpeg into a planar
 * gf_image of 1 (gray) or 3 (RGB) channels. libjpeg's error_exit is
 * replaced, per decode, by a longjmp into this call; its warnings (corrupt
 * or truncated data, after which libjpeg would carry on with gray fill) are
 * collected and turned into an error, so no garbage image gets through.
 * No global state, nothing printed. */
#include "data_internal.h"

#include <assert.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

/* The error manager of one decode. pub must stay first: libjpeg hands out a
 * pointer to it and the handlers cast back. */
typedef struct jpeg_ctx {
  struct jpeg_error_mgr pub;
  jmp_buf jb;
  char msg[JMSG_LENGTH_MAX];
  int warnings;
} jpeg_ctx;

static void on_jpeg_error_exit(j_common_ptr cinfo) {
  jpeg_ctx *c = (jpeg_ctx *)cinfo->err;
  c->pub.format_message(cinfo, c->msg);
  longjmp(c->jb, 1);
}

/* msg_level -1 is a warning (corrupt data); higher levels are trace
 * messages, which are dropped. */
static void on_jpeg_emit(j_common_ptr cinfo, int msg_level) {
  jpeg_ctx *c = (jpeg_ctx *)cinfo->err;
  if (msg_level < 0) {
    if (c->warnings == 0) c->pub.format_message(cinfo, c->msg);
    c->warnings++;
    c->pub.num_warnings++;
  }
}

static void on_jpeg_output(j_common_ptr cinfo) { (void)cinfo; }

/* Our own reason into c->msg: fixed words and numbers, which fit
 * JMSG_LENGTH_MAX (200) by far. */
static void jpeg_note(jpeg_ctx *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void jpeg_note(jpeg_ctx *c, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(c->msg, sizeof c->msg, fmt, ap);
  va_end(ap);
  assert(gf_fits(n, sizeof c->msg));
  (void)n;
}

gf_status gf_data_jpeg_decode(const uint8_t *buf, size_t len, const char *name,
                              gf_image *out, gf_err *err) {
  memset(out, 0, sizeof *out);
  struct jpeg_decompress_struct cinfo;
  memset(&cinfo, 0, sizeof cinfo);
  jpeg_ctx ctx;
  memset(&ctx, 0, sizeof ctx);
  cinfo.err = jpeg_std_error(&ctx.pub);
  ctx.pub.error_exit = on_jpeg_error_exit;
  ctx.pub.emit_message = on_jpeg_emit;
  ctx.pub.output_message = on_jpeg_output;
  /* Written after setjmp and read after longjmp: volatile. */
  uint8_t *volatile pixels = NULL;
  uint8_t *volatile planar = NULL;
  gf_status volatile status = GF_EFORMAT;
  if (setjmp(ctx.jb)) {
    jpeg_destroy_decompress(&cinfo);
    free(pixels);
    free(planar);
    if (status == GF_ENOMEM) {
      return gf_fail(err, GF_ENOMEM, "%s: out of memory decoding JPEG", name);
    }
    if (status == GF_EUNSUPPORTED) {
      return gf_fail(err, GF_EUNSUPPORTED, "%s: unsupported JPEG: %s", name,
                     ctx.msg);
    }
    return gf_fail(err, GF_EFORMAT, "%s: invalid JPEG: %s", name, ctx.msg);
  }
  jpeg_create_decompress(&cinfo);
  cinfo.mem->max_memory_to_use = 512L * 1024 * 1024;
  jpeg_mem_src(&cinfo, buf, (unsigned long)len);
  (void)jpeg_read_header(&cinfo, TRUE);
  if ((uint64_t)cinfo.image_width * cinfo.image_height > GF_DATA_MAX_PIXELS ||
      cinfo.image_width > GF_DATA_MAX_SIDE ||
      cinfo.image_height > GF_DATA_MAX_SIDE) {
    jpeg_note(&ctx, "%ux%u is larger than supported",
              (unsigned)cinfo.image_width, (unsigned)cinfo.image_height);
    longjmp(ctx.jb, 1);
  }
  if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
    status = GF_EUNSUPPORTED;
    jpeg_note(&ctx, "CMYK/YCCK color is not supported");
    longjmp(ctx.jb, 1);
  }
  cinfo.out_color_space =
      cinfo.jpeg_color_space == JCS_GRAYSCALE ? JCS_GRAYSCALE : JCS_RGB;
  (void)jpeg_start_decompress(&cinfo);
  const int c = cinfo.output_components;
  const size_t w = cinfo.output_width, h = cinfo.output_height;
  if ((c != 1 && c != 3) || w == 0 || h == 0) {
    jpeg_note(&ctx, "unexpected output layout (%d components)", c);
    longjmp(ctx.jb, 1);
  }
  status = GF_ENOMEM;
  pixels = malloc(w * h * (size_t)c);
  if (!pixels) {
    jpeg_note(&ctx, "out of memory");
    longjmp(ctx.jb, 1);
  }
  status = GF_EFORMAT;
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = pixels + (size_t)cinfo.output_scanline * w * (size_t)c;
    if (jpeg_read_scanlines(&cinfo, &row, 1) != 1) {
      jpeg_note(&ctx, "decoder stopped at row %u",
                (unsigned)cinfo.output_scanline);
      longjmp(ctx.jb, 1);
    }
  }
  (void)jpeg_finish_decompress(&cinfo);
  if (ctx.warnings) longjmp(ctx.jb, 1); /* corrupt data: ctx.msg says how */

  gf_image im = {.c = c, .h = (int)h, .w = (int)w};
  if (c == 1) {
    im.px = pixels;
    pixels = NULL;
  } else {
    status = GF_ENOMEM;
    planar = malloc(w * h * 3);
    if (!planar) {
      jpeg_note(&ctx, "out of memory");
      longjmp(ctx.jb, 1);
    }
    const size_t plane = w * h;
    const uint8_t *p = pixels;
    for (size_t i = 0; i < plane; i++) {
      planar[i] = p[3 * i];
      planar[plane + i] = p[3 * i + 1];
      planar[2 * plane + i] = p[3 * i + 2];
    }
    im.px = planar;
    planar = NULL;
  }
  free(pixels);
  jpeg_destroy_decompress(&cinfo);
  *out = im;
  return GF_OK;
}
