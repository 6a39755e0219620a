/* train_images.c - MLflow image artifacts (train_images.h): the names
 * log_image gives them, the random uuid in those names, Pillow's bicubic
 * resize and the WebP preview (libwebp). Not for: grids, uploads. */
#include "train_images.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <webp/encode.h>

#include "gf/text.h"

/* log_image's check: ^[a-zA-Z0-9_\-./ ]+$ */
static int key_char_ok(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
         (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.' ||
         ch == '/' || ch == ' ';
}

gf_status gf_image_names_make(const char *key, int64_t step,
                              int64_t timestamp_ms, const char *uuid,
                              gf_image_names *out, gf_err *err) {
  out->png[0] = out->webp[0] = '\0';
  size_t kl = key ? strlen(key) : 0;
  if (kl == 0 || kl > GF_IMAGE_KEY_MAX)
    return gf_fail(err, GF_EINVAL, "image key: %zu characters (need 1..%d)",
                   kl, GF_IMAGE_KEY_MAX);
  for (size_t i = 0; i < kl; i++)
    if (!key_char_ok(key[i]))
      return gf_fail(err, GF_EINVAL, "image key '%s': character '%c' is not "
                     "one of alphanumerics, _ - . / and space", key, key[i]);
  if (step < 0 || timestamp_ms < 0)
    return gf_fail(err, GF_EINVAL, "image step %lld / timestamp %lld: "
                   "negative", (long long)step, (long long)timestamp_ms);
  if (!uuid || strlen(uuid) != GF_UUID_LEN ||
      strspn(uuid, "0123456789abcdef-") != GF_UUID_LEN)
    return gf_fail(err, GF_EINVAL, "image uuid '%s': not a uuid",
                   uuid ? uuid : "(null)");
  char sk[GF_IMAGE_KEY_MAX + 1];
  for (size_t i = 0; i <= kl; i++) sk[i] = key[i] == '/' ? '~' : key[i];
  /* 7 + 250 + 6 + 19 + 11 + 19 + 1 + 36 + 16 < GF_IMAGE_NAME_MAX */
  GF_TRY(gf_format(out->png, sizeof out->png, err, "image artifact name",
                   "images/%s+step+%lld+timestamp+%lld+%s.png", sk,
                   (long long)step, (long long)timestamp_ms, uuid));
  gf_status st = gf_format(out->webp, sizeof out->webp, err,
                           "image artifact name",
                           "images/%s+step+%lld+timestamp+%lld+%s"
                           "+compressed.webp", sk, (long long)step,
                           (long long)timestamp_ms, uuid);
  if (st != GF_OK) out->png[0] = '\0';
  return st;
}

void gf_image_compressed_size(int w, int h, int max_size, int *out_w,
                              int *out_h) {
  /* int(height * (new_width / width)) in doubles, as Python computes it */
  if (w > h) {
    *out_w = max_size;
    *out_h = (int)((double)h * ((double)max_size / (double)w));
  } else {
    *out_h = max_size;
    *out_w = (int)((double)w * ((double)max_size / (double)h));
  }
  if (*out_w < 1) *out_w = 1;
  if (*out_h < 1) *out_h = 1;
}

/* ---- Pillow's resample (libImaging/Resample.c), bicubic, 8 bits ------- */

#define PRECISION_BITS (32 - 8 - 2)

static double bicubic(double x) {
  const double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

static uint8_t clip8(int in) {
  if (in >= (1 << PRECISION_BITS)) {
    if (in >= (255 << PRECISION_BITS)) return 255;
    return (uint8_t)(in >> PRECISION_BITS);
  }
  return 0;
}

/* One axis: for each output index, the first input index, the count, and
 * ksize fixed-point weights. *bounds and *kk malloc'd here (caller frees);
 * returns ksize, 0 when out of memory. */
static int coeffs(int in_size, int out_size, int **bounds, int **kk) {
  double scale = (double)in_size / out_size, fscale = scale;
  if (fscale < 1.0) fscale = 1.0;
  double support = 2.0 * fscale; /* bicubic support 2 */
  int ksize = (int)ceil(support) * 2 + 1;
  double *k = malloc((size_t)ksize * sizeof *k);
  *bounds = malloc((size_t)out_size * 2 * sizeof **bounds);
  *kk = malloc((size_t)out_size * ksize * sizeof **kk);
  if (!k || !*bounds || !*kk) {
    free(k);
    free(*bounds);
    free(*kk);
    *bounds = *kk = NULL;
    return 0;
  }
  for (int xx = 0; xx < out_size; xx++) {
    double center = (xx + 0.5) * scale, ww = 0.0, ss = 1.0 / fscale;
    int xmin = (int)(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = (int)(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    int x = 0;
    for (; x < xmax; x++) {
      k[x] = bicubic((x + xmin - center + 0.5) * ss);
      ww += k[x];
    }
    for (x = 0; x < xmax; x++)
      if (ww != 0.0) k[x] /= ww;
    for (; x < ksize; x++) k[x] = 0;
    for (x = 0; x < ksize; x++) {
      double v = k[x] * (1 << PRECISION_BITS);
      (*kk)[(size_t)xx * ksize + x] = (int)(v < 0 ? -0.5 + v : 0.5 + v);
    }
    (*bounds)[xx * 2] = xmin;
    (*bounds)[xx * 2 + 1] = xmax;
  }
  free(k);
  return ksize;
}

/* Horizontal pass: w x h -> ow x h. */
static int pass_h(const uint8_t *in, int w, int h, int c, int ow,
                  uint8_t *out) {
  int *b, *kk;
  int ks = coeffs(w, ow, &b, &kk);
  if (!ks) return 0;
  for (int y = 0; y < h; y++)
    for (int xx = 0; xx < ow; xx++) {
      const int *k = kk + (size_t)xx * ks;
      for (int ch = 0; ch < c; ch++) {
        int ss = 1 << (PRECISION_BITS - 1);
        for (int x = 0; x < b[xx * 2 + 1]; x++)
          ss += in[((size_t)y * w + x + b[xx * 2]) * c + ch] * k[x];
        out[((size_t)y * ow + xx) * c + ch] = clip8(ss);
      }
    }
  free(b);
  free(kk);
  return 1;
}

/* Vertical pass: w x h -> w x oh. */
static int pass_v(const uint8_t *in, int w, int h, int c, int oh,
                  uint8_t *out) {
  int *b, *kk;
  int ks = coeffs(h, oh, &b, &kk);
  if (!ks) return 0;
  for (int yy = 0; yy < oh; yy++) {
    const int *k = kk + (size_t)yy * ks;
    for (int x = 0; x < w; x++)
      for (int ch = 0; ch < c; ch++) {
        int ss = 1 << (PRECISION_BITS - 1);
        for (int y = 0; y < b[yy * 2 + 1]; y++)
          ss += in[((size_t)(y + b[yy * 2]) * w + x) * c + ch] * k[y];
        out[((size_t)yy * w + x) * c + ch] = clip8(ss);
      }
  }
  free(b);
  free(kk);
  return 1;
}

gf_status gf_image_resize_bicubic(const uint8_t *src, int w, int h, int c,
                                  int out_w, int out_h, uint8_t **out,
                                  gf_err *err) {
  *out = NULL;
  if (w < 1 || h < 1 || out_w < 1 || out_h < 1 || (c != 1 && c != 3) ||
      w > 65535 || h > 65535 || out_w > 65535 || out_h > 65535)
    return gf_fail(err, GF_EINVAL, "resize: %dx%dx%d -> %dx%d (need sides "
                   "1..65535, 1 or 3 channels)", w, h, c, out_w, out_h);
  /* Pillow skips the pass of an axis whose size does not change. */
  uint8_t *mid = NULL, *res = malloc((size_t)out_w * out_h * c);
  if (!res) return gf_fail(err, GF_ENOMEM, "resize: out of memory");
  const uint8_t *cur = src;
  if (out_w != w) {
    if (out_h != h) mid = malloc((size_t)out_w * h * c);
    if ((out_h != h && !mid) ||
        !pass_h(src, w, h, c, out_w, out_h == h ? res : mid)) {
      free(mid);
      free(res);
      return gf_fail(err, GF_ENOMEM, "resize: out of memory");
    }
    cur = out_h == h ? res : mid;
  }
  if (out_h != h) {
    if (!pass_v(cur, out_w, h, c, out_h, res)) {
      free(mid);
      free(res);
      return gf_fail(err, GF_ENOMEM, "resize: out of memory");
    }
  } else if (out_w == w) {
    memcpy(res, src, (size_t)w * h * c);
  }
  free(mid);
  *out = res;
  return GF_OK;
}

gf_status gf_image_encode_webp(const uint8_t *pixels, int w, int h, int c,
                               float quality, uint8_t **webp,
                               size_t *webp_len, gf_err *err) {
  *webp = NULL;
  *webp_len = 0;
  if (w < 1 || h < 1 || w > WEBP_MAX_DIMENSION || h > WEBP_MAX_DIMENSION ||
      (c != 1 && c != 3) || !(quality >= 0.0f && quality <= 100.0f))
    return gf_fail(err, GF_EINVAL, "webp: %dx%dx%d at quality %g (need "
                   "sides 1..%d, 1 or 3 channels, quality 0..100)", w, h, c,
                   (double)quality, WEBP_MAX_DIMENSION);
  const uint8_t *rgb = pixels;
  uint8_t *expanded = NULL;
  if (c == 1) { /* Pillow saves mode L as RGB */
    expanded = malloc((size_t)w * h * 3);
    if (!expanded) return gf_fail(err, GF_ENOMEM, "webp: out of memory");
    for (size_t i = 0; i < (size_t)w * h; i++)
      expanded[3 * i] = expanded[3 * i + 1] = expanded[3 * i + 2] = pixels[i];
    rgb = expanded;
  }
  uint8_t *enc = NULL;
  size_t n = WebPEncodeRGB(rgb, w, h, w * 3, quality, &enc);
  free(expanded);
  if (n == 0 || !enc) {
    WebPFree(enc);
    return gf_fail(err, GF_EIO, "webp: libwebp could not encode %dx%d", w, h);
  }
  /* Hand back malloc'd memory, so the caller frees it like every other
   * encoder's output (libwebp's allocator is its own to pair). */
  *webp = malloc(n);
  if (!*webp) {
    WebPFree(enc);
    return gf_fail(err, GF_ENOMEM, "webp: out of memory");
  }
  memcpy(*webp, enc, n);
  WebPFree(enc);
  *webp_len = n;
  return GF_OK;
}

int gf_image_upscale_factor(int w, int h, int target) {
  int side = w > h ? w : h;
  if (side < 1 || target <= side) return 1;
  return target / side;
}

gf_status gf_image_upscale_nearest(const uint8_t *src, int w, int h, int c,
                                   int f, uint8_t **out, gf_err *err) {
  *out = NULL;
  if (w < 1 || h < 1 || c < 1 || c > 4 || f < 1 || w > GF_IMAGE_MAX_SIDE / f ||
      h > GF_IMAGE_MAX_SIDE / f)
    return gf_fail(err, GF_EINVAL, "upscale: %dx%dx%d by %d", w, h, c, f);
  size_t ow = (size_t)w * (size_t)f, oh = (size_t)h * (size_t)f;
  uint8_t *dst = malloc(ow * oh * (size_t)c);
  if (!dst) return gf_fail(err, GF_ENOMEM, "upscale: out of memory");
  for (size_t y = 0; y < oh; y++) {
    const uint8_t *row = src + (y / (size_t)f) * (size_t)w * (size_t)c;
    uint8_t *o = dst + y * ow * (size_t)c;
    for (size_t x = 0; x < ow; x++)
      memcpy(o + x * (size_t)c, row + (x / (size_t)f) * (size_t)c, (size_t)c);
  }
  *out = dst;
  return GF_OK;
}

gf_status gf_image_compressed_webp(const uint8_t *pixels, int w, int h, int c,
                                   uint8_t **webp, size_t *webp_len,
                                   gf_err *err) {
  *webp = NULL;
  *webp_len = 0;
  if (w < 1 || h < 1)
    return gf_fail(err, GF_EINVAL, "webp: %dx%d image", w, h);
  int ow, oh;
  gf_image_compressed_size(w, h, GF_IMAGE_COMPRESSED_SIZE, &ow, &oh);
  uint8_t *small = NULL;
  gf_status s = gf_image_resize_bicubic(pixels, w, h, c, ow, oh, &small, err);
  if (s != GF_OK) return s;
  s = gf_image_encode_webp(small, ow, oh, c, GF_IMAGE_WEBP_QUALITY, webp,
                           webp_len, err);
  free(small);
  return s;
}
