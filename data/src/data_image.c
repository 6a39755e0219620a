/* data_image.c - the geometry step shared by every reader: channel
 * conversion (gray <-> RGB), then either center crop + area resampling
 * (GF_DATA_FIT_RESIZE) or centering on a black canvas (GF_DATA_FIT_PAD),
 * from a decoded planar image into one slot of the dataset cache. Integer
 * arithmetic only, so the cache is the same bytes on every machine. Also the
 * magic-byte dispatch between the PNG and JPEG decoders. */
#include "data_internal.h"

#include <stdlib.h>
#include <string.h>

void gf_image_free(gf_image *im) {
  if (!im) return;
  free(im->px);
  memset(im, 0, sizeof *im);
}

void gf_img_scratch_free(gf_img_scratch *s) {
  if (!s) return;
  free(s->plane);
  free(s->rows);
  free(s->acc);
  memset(s, 0, sizeof *s);
}

/* Makes *buf hold at least n elements of elem bytes (grow-only). */
static int grow(void **buf, size_t *cap, size_t n, size_t elem) {
  if (n <= *cap) return 1;
  void *p = realloc(*buf, n * elem);
  if (!p) return 0;
  *buf = p;
  *cap = n;
  return 1;
}

/* Area resampling of the crop [x0, x0+cw) x [y0, y0+ch) of a plane (row
 * stride sw) to dw x dh. In the common coordinate where source pixel j
 * spans [j*D, (j+1)*D) and output pixel i spans [i*S, (i+1)*S) (S source
 * extent, D output extent), output i is the overlap-weighted sum of the
 * source pixels it meets; the weights of one output sum to S, so a 2-D
 * output is sum / (cw * ch), rounded to nearest. */
static gf_status area_resample(const uint8_t *src, int sw, int x0, int y0,
                               int cw, int ch, uint8_t *dst, int dw, int dh,
                               gf_img_scratch *s, gf_err *err) {
  if (!grow((void **)&s->rows, &s->rows_cap, (size_t)ch * (size_t)dw,
            sizeof *s->rows) ||
      !grow((void **)&s->acc, &s->acc_cap, (size_t)dw, sizeof *s->acc)) {
    return gf_fail(err, GF_ENOMEM, "out of memory resampling a %dx%d image",
                   cw, ch);
  }
  const uint64_t S = (uint64_t)cw, D = (uint64_t)dw;
  for (int y = 0; y < ch; y++) {
    const uint8_t *row = src + (size_t)(y0 + y) * (size_t)sw + (size_t)x0;
    uint32_t *out = s->rows + (size_t)y * (size_t)dw;
    for (uint64_t i = 0; i < D; i++) {
      uint64_t lo = i * S, hi = (i + 1) * S; /* output extent */
      uint64_t j0 = lo / D, j1 = (hi - 1) / D;
      uint32_t sum = 0;
      for (uint64_t j = j0; j <= j1; j++) {
        uint64_t a = j * D > lo ? j * D : lo;
        uint64_t b = (j + 1) * D < hi ? (j + 1) * D : hi;
        sum += (uint32_t)(b - a) * row[j];
      }
      out[i] = sum;
    }
  }
  const uint64_t SV = (uint64_t)ch, DV = (uint64_t)dh;
  const uint64_t div = S * SV;
  for (uint64_t o = 0; o < DV; o++) {
    uint64_t lo = o * SV, hi = (o + 1) * SV;
    uint64_t r0 = lo / DV, r1 = (hi - 1) / DV;
    memset(s->acc, 0, (size_t)dw * sizeof *s->acc);
    for (uint64_t r = r0; r <= r1; r++) {
      uint64_t a = r * DV > lo ? r * DV : lo;
      uint64_t b = (r + 1) * DV < hi ? (r + 1) * DV : hi;
      uint64_t w = b - a;
      const uint32_t *in = s->rows + r * (uint64_t)dw;
      for (int i = 0; i < dw; i++) s->acc[i] += w * in[i];
    }
    uint8_t *out = dst + o * (uint64_t)dw;
    for (int i = 0; i < dw; i++) {
      out[i] = (uint8_t)((s->acc[i] + div / 2) / div);
    }
  }
  return GF_OK;
}

/* Centers a sw x sh plane on a black dw x dh canvas, cropping centrally
 * where the source is larger. */
static void pad_plane(const uint8_t *src, int sw, int sh, uint8_t *dst, int dw,
                      int dh) {
  memset(dst, 0, (size_t)dw * (size_t)dh);
  int sx = sw > dw ? (sw - dw) / 2 : 0, dx = sw > dw ? 0 : (dw - sw) / 2;
  int sy = sh > dh ? (sh - dh) / 2 : 0, dy = sh > dh ? 0 : (dh - sh) / 2;
  int nx = sw > dw ? dw : sw, ny = sh > dh ? dh : sh;
  for (int y = 0; y < ny; y++) {
    memcpy(dst + (size_t)(dy + y) * (size_t)dw + (size_t)dx,
           src + (size_t)(sy + y) * (size_t)sw + (size_t)sx, (size_t)nx);
  }
}

/* One plane through the fit rule of data.h. */
static gf_status fit_plane(const uint8_t *src, int sw, int sh, uint8_t *dst,
                           const gf_data_options *opt, gf_img_scratch *s,
                           gf_err *err) {
  const int dw = opt->width, dh = opt->height;
  if (sw == dw && sh == dh) {
    memcpy(dst, src, (size_t)dw * (size_t)dh);
    return GF_OK;
  }
  if (opt->fit == GF_DATA_FIT_PAD) {
    pad_plane(src, sw, sh, dst, dw, dh);
    return GF_OK;
  }
  /* The largest centered crop of the target aspect ratio dw:dh. */
  uint64_t cw, ch;
  if ((uint64_t)sw * (uint64_t)dh >= (uint64_t)sh * (uint64_t)dw) {
    ch = (uint64_t)sh;
    cw = (2 * (uint64_t)sh * (uint64_t)dw + (uint64_t)dh) / (2 * (uint64_t)dh);
    if (cw < 1) cw = 1;
    if (cw > (uint64_t)sw) cw = (uint64_t)sw;
  } else {
    cw = (uint64_t)sw;
    ch = (2 * (uint64_t)sw * (uint64_t)dh + (uint64_t)dw) / (2 * (uint64_t)dw);
    if (ch < 1) ch = 1;
    if (ch > (uint64_t)sh) ch = (uint64_t)sh;
  }
  int x0 = (int)(((uint64_t)sw - cw) / 2), y0 = (int)(((uint64_t)sh - ch) / 2);
  return area_resample(src, sw, x0, y0, (int)cw, (int)ch, dst, dw, dh, s, err);
}

gf_status gf_img_convert(const gf_image *src, const gf_data_options *opt,
                         uint8_t *dst, gf_img_scratch *s, gf_err *err) {
  if (!src->px || (src->c != 1 && src->c != 3) || src->w < 1 || src->h < 1 ||
      src->w > GF_DATA_MAX_SIDE || src->h > GF_DATA_MAX_SIDE) {
    return gf_fail(err, GF_EINVAL, "cannot convert a %dx%dx%d image", src->w,
                   src->h, src->c);
  }
  gf_status st = gf_data_check_geometry(opt, err);
  if (st) return st;
  const size_t splane = (size_t)src->w * (size_t)src->h;
  const size_t dplane = (size_t)opt->width * (size_t)opt->height;
  if (src->c == opt->channels) {
    for (int k = 0; k < src->c; k++) {
      st = fit_plane(src->px + (size_t)k * splane, src->w, src->h,
                     dst + (size_t)k * dplane, opt, s, err);
      if (st) return st;
    }
    return GF_OK;
  }
  if (src->c == 1) { /* gray -> RGB: resampling commutes with replication */
    st = fit_plane(src->px, src->w, src->h, dst, opt, s, err);
    if (st) return st;
    memcpy(dst + dplane, dst, dplane);
    memcpy(dst + 2 * dplane, dst, dplane);
    return GF_OK;
  }
  /* RGB -> gray: BT.601 luma with weights summing to 256. */
  if (!grow((void **)&s->plane, &s->plane_cap, splane, 1)) {
    return gf_fail(err, GF_ENOMEM, "out of memory converting a %dx%d image",
                   src->w, src->h);
  }
  const uint8_t *r = src->px, *g = r + splane, *b = g + splane;
  for (size_t i = 0; i < splane; i++) {
    s->plane[i] = (uint8_t)((77u * r[i] + 150u * g[i] + 29u * b[i] + 128u) >> 8);
  }
  return fit_plane(s->plane, src->w, src->h, dst, opt, s, err);
}

gf_status gf_data_image_convert(const gf_image *src, const gf_data_options *opt,
                                uint8_t *dst, gf_err *err) {
  gf_img_scratch s = {0};
  gf_status st = gf_img_convert(src, opt, dst, &s, err);
  gf_img_scratch_free(&s);
  return st;
}

gf_status gf_data_image_decode(const uint8_t *buf, size_t len,
                               const char *name, gf_image *out, gf_err *err) {
  static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a,
                                       '\n'};
  memset(out, 0, sizeof *out);
  if (len >= 8 && memcmp(buf, png_magic, 8) == 0) {
    return gf_data_png_decode(buf, len, name, out, err);
  }
  if (len >= 3 && buf[0] == 0xff && buf[1] == 0xd8 && buf[2] == 0xff) {
    return gf_data_jpeg_decode(buf, len, name, out, err);
  }
  return gf_fail(err, GF_EFORMAT,
                 "%s: not a PNG or JPEG file (%zu bytes, unknown signature)",
                 name, len);
}
