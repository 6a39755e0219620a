/* test_image_grid.c - gf/image_grid.h: grid geometry (n not a multiple of
 * nrow, nrow > n), pixel mapping and clamping (out of range, NaN, inf),
 * PNG bytes decoded back with libpng (gray and RGB), deterministic bytes,
 * the atomic file writer, bad arguments. */
#include <math.h>
#include <png.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/image_grid.h"
#include "file_util.h"

/* Decodes png (libpng's simplified API) into a malloc'd buffer of w*h*c
 * bytes in the file's own format; returns NULL on failure. */
static uint8_t *decode(const uint8_t *png, size_t len, int *w, int *h, int *c,
                       int *bit_depth, int *color_type) {
  png_image img;
  memset(&img, 0, sizeof img);
  img.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&img, png, len)) return NULL;
  /* The header fields, read directly: 8-bit gray or RGB expected. */
  REQUIRE(len > 33);
  *bit_depth = png[24];
  *color_type = png[25];
  *c = (img.format & PNG_FORMAT_FLAG_COLOR) ? 3 : 1;
  img.format = *c == 3 ? PNG_FORMAT_RGB : PNG_FORMAT_GRAY;
  *w = (int)img.width;
  *h = (int)img.height;
  uint8_t *buf = malloc(PNG_IMAGE_SIZE(img));
  REQUIRE(buf != NULL);
  if (!png_image_finish_read(&img, NULL, buf, 0, NULL)) {
    free(buf);
    return NULL;
  }
  return buf;
}

/* 1 when the NUL-terminated s occurs in the len bytes at p. */
static int has_bytes(const uint8_t *p, size_t len, const char *s) {
  size_t n = strlen(s);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(p + i, s, n) == 0) return 1;
  return 0;
}

/* Reference mapping, written independently of the library's. */
static uint8_t ref_u8(float x) {
  if (isnan(x)) return 0;
  if (x < -1.0f) x = -1.0f;
  if (x > 1.0f) x = 1.0f;
  return (uint8_t)lround(((double)x + 1.0) / 2.0 * 255.0);
}

static void test_geometry_and_pixels(int c) {
  const int n = 5, h = 3, w = 4, nrow = 2, pad = 2;
  size_t per = (size_t)c * h * w;
  float *img = malloc(sizeof(float) * n * per);
  REQUIRE(img != NULL);
  for (size_t i = 0; i < n * per; i++)
    img[i] = (float)((int)(i * 37 % 201) - 100) / 100.0f; /* -1..1 */
  uint8_t *px = NULL;
  int gw = 0, gh = 0, gc = 0;
  gf_err err;
  REQUIRE(gf_grid_to_rgb8(img, n, c, h, w, nrow, pad, &px, &gw, &gh, &gc,
                          &err) == GF_OK);
  /* 5 images, 2 per row: 2 columns, 3 rows, the last one half empty. */
  CHECK_INT_EQ(gw, 2 * (w + pad) + pad);
  CHECK_INT_EQ(gh, 3 * (h + pad) + pad);
  CHECK_INT_EQ(gc, c);
  int mismatches = 0, border_nonzero = 0;
  for (int y = 0; y < gh; y++) {
    for (int x = 0; x < gw; x++) {
      int col = (x - pad) / (w + pad), row = (y - pad) / (h + pad);
      int ix = (x - pad) % (w + pad), iy = (y - pad) % (h + pad);
      int k = row * nrow + col;
      int inside = x >= pad && y >= pad && ix < w && iy < h && k < n;
      for (int ch = 0; ch < c; ch++) {
        uint8_t got = px[((size_t)y * gw + x) * c + ch];
        if (!inside) {
          border_nonzero += got != 0;
          continue;
        }
        float v = img[(size_t)k * per + (size_t)ch * h * w + (size_t)iy * w + ix];
        mismatches += got != ref_u8(v);
      }
    }
  }
  CHECK_INT_EQ(mismatches, 0);
  CHECK_INT_EQ(border_nonzero, 0);

  /* Encode, decode with libpng, compare every pixel. */
  uint8_t *png = NULL;
  size_t png_len = 0;
  REQUIRE(gf_png_encode(px, gw, gh, gc, &png, &png_len, &err) == GF_OK);
  CHECK(png_len > 8 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
  int dw = 0, dh = 0, dc = 0, depth = 0, ctype = -1;
  uint8_t *dec = decode(png, png_len, &dw, &dh, &dc, &depth, &ctype);
  REQUIRE(dec != NULL);
  CHECK_INT_EQ(dw, gw);
  CHECK_INT_EQ(dh, gh);
  CHECK_INT_EQ(dc, c);
  CHECK_INT_EQ(depth, 8);
  CHECK_INT_EQ(ctype, c == 1 ? PNG_COLOR_TYPE_GRAY : PNG_COLOR_TYPE_RGB);
  CHECK(memcmp(dec, px, (size_t)gw * gh * c) == 0);
  CHECK(!has_bytes(png, png_len, "tIME"));

  /* Same input, same bytes (a second grid and a second encode). */
  uint8_t *px2 = NULL, *png2 = NULL;
  size_t png2_len = 0;
  int w2, h2, c2;
  REQUIRE(gf_grid_to_rgb8(img, n, c, h, w, nrow, pad, &px2, &w2, &h2, &c2,
                          &err) == GF_OK);
  REQUIRE(gf_png_encode(px2, w2, h2, c2, &png2, &png2_len, &err) == GF_OK);
  CHECK(png2_len == png_len && memcmp(png, png2, png_len) == 0);
  /* ...and a different input gives different bytes (the check can fail). */
  px2[(size_t)(pad * gw + pad) * c] ^= 0xff;
  free(png2);
  REQUIRE(gf_png_encode(px2, w2, h2, c2, &png2, &png2_len, &err) == GF_OK);
  CHECK(!(png2_len == png_len && memcmp(png, png2, png_len) == 0));

  free(png2);
  free(px2);
  free(dec);
  free(png);
  free(px);
  free(img);
}

static void test_clamping(void) {
  const float vals[] = {-5.0f,   -1.0f, -0.999f, 0.0f,  0.5f,
                        1.0f,    7.0f,  NAN,     -NAN,  INFINITY,
                        -INFINITY, 1e-7f, -1e30f, 1e30f, 0.00196f};
  const uint8_t want[] = {0, 0, 0, 128, 191, 255, 255, 0, 0, 255, 0, 128, 0,
                          255, 128};
  const int n = (int)(sizeof vals / sizeof vals[0]);
  uint8_t *px = NULL;
  int gw, gh, gc;
  gf_err err;
  /* Each value its own 1x1 image, one row, no border. */
  REQUIRE(gf_grid_to_rgb8(vals, n, 1, 1, 1, n, 0, &px, &gw, &gh, &gc, &err) ==
          GF_OK);
  CHECK_INT_EQ(gw, n);
  CHECK_INT_EQ(gh, 1);
  for (int i = 0; i < n; i++)
    CHECKF(px[i] == want[i], "value %d (%g): %d != %d", i, (double)vals[i],
           px[i], want[i]);
  free(px);
  /* nrow > n: one row of n images. */
  REQUIRE(gf_grid_to_rgb8(vals, 3, 1, 1, 1, 10, 1, &px, &gw, &gh, &gc, &err) ==
          GF_OK);
  CHECK_INT_EQ(gw, 3 * 2 + 1);
  CHECK_INT_EQ(gh, 3);
  free(px);
}

static void test_bad_args(void) {
  float img[12] = {0};
  uint8_t *px = (uint8_t *)img; /* must be reset to NULL on failure */
  int gw, gh, gc;
  gf_err err;
  CHECK(gf_grid_to_rgb8(NULL, 1, 1, 2, 2, 1, 0, &px, &gw, &gh, &gc, &err) ==
        GF_EINVAL);
  CHECK(px == NULL);
  CHECK(gf_grid_to_rgb8(img, 0, 1, 2, 2, 1, 0, &px, &gw, &gh, &gc, &err) ==
        GF_EINVAL);
  CHECK(gf_grid_to_rgb8(img, 1, 2, 2, 2, 1, 0, &px, &gw, &gh, &gc, &err) ==
        GF_EINVAL);
  CHECK(gf_grid_to_rgb8(img, 1, 4, 1, 1, 1, 0, &px, &gw, &gh, &gc, &err) ==
        GF_EINVAL);
  CHECK(gf_grid_to_rgb8(img, 1, 1, 0, 2, 1, 0, &px, &gw, &gh, &gc, &err) ==
        GF_EINVAL);
  CHECK(gf_grid_to_rgb8(img, 1, 1, 2, 2, 0, 0, &px, &gw, &gh, &gc, &err) ==
        GF_EINVAL);
  CHECK(gf_grid_to_rgb8(img, 1, 1, 2, 2, 1, -1, &px, &gw, &gh, &gc, &err) ==
        GF_EINVAL);
  CHECK(strstr(err.msg, "pad") != NULL);
  CHECK(gf_grid_to_rgb8(img, 1, 1, 2, 2, 1, 0, NULL, &gw, &gh, &gc, &err) ==
        GF_EINVAL);
  /* Too large a grid is refused before any allocation or read. */
  CHECK(gf_grid_to_rgb8(img, 1, 1, 1, 20000, 1, 0, &px, &gw, &gh, &gc, &err) ==
        GF_EINVAL);
  CHECK(gf_grid_to_rgb8(img, 100000, 1, 1, 1, 100000, 0, &px, &gw, &gh, &gc,
                        &err) == GF_EINVAL);
  CHECK(px == NULL);

  uint8_t pix[4] = {0};
  uint8_t *png = pix;
  size_t len = 7;
  CHECK(gf_png_encode(NULL, 1, 1, 1, &png, &len, &err) == GF_EINVAL);
  CHECK(png == NULL && len == 0);
  CHECK(gf_png_encode(pix, 0, 1, 1, &png, &len, &err) == GF_EINVAL);
  CHECK(gf_png_encode(pix, 1, 1, 2, &png, &len, &err) == GF_EINVAL);
  CHECK(gf_png_encode(pix, 1, 1, 1, NULL, &len, &err) == GF_EINVAL);
  CHECK(gf_png_write_grid(NULL, img, 1, 1, 2, 2, 1, &err) == GF_EINVAL);
  CHECK(gf_png_write_grid("", img, 1, 1, 2, 2, 1, &err) == GF_EINVAL);
  CHECK(gf_png_write_grid("/nonexistent-dir-gf/x.png", img, 1, 1, 2, 2, 1,
                          &err) == GF_EIO);
}

static void test_write_file(void) {
  char dir[512], path[600];
  tu_mkdtemp(dir, sizeof dir);
  snprintf(path, sizeof path, "%s/grid.png", dir);
  const int n = 3, c = 3, h = 5, w = 5;
  float img[3 * 3 * 5 * 5];
  for (size_t i = 0; i < sizeof img / sizeof img[0]; i++)
    img[i] = sinf((float)i);
  gf_err err;
  REQUIRE(gf_png_write_grid(path, img, n, c, h, w, 2, &err) == GF_OK);
  size_t len = 0;
  unsigned char *file = tu_read(path, &len);
  /* The file holds exactly what the in-memory pipeline makes. */
  uint8_t *px = NULL, *png = NULL;
  size_t png_len = 0;
  int gw, gh, gc;
  REQUIRE(gf_grid_to_rgb8(img, n, c, h, w, 2, GF_GRID_DEFAULT_PAD, &px, &gw,
                          &gh, &gc, &err) == GF_OK);
  REQUIRE(gf_png_encode(px, gw, gh, gc, &png, &png_len, &err) == GF_OK);
  CHECK(len == png_len && memcmp(file, png, len) == 0);
  CHECK_INT_EQ(tu_count_names(dir, ".tmp"), 0);
  /* Replacing keeps one file. */
  REQUIRE(gf_png_write_grid(path, img, 1, c, h, w, 1, &err) == GF_OK);
  CHECK_INT_EQ(tu_count_names(dir, "grid"), 1);
  free(png);
  free(px);
  free(file);
  tu_rmdir(dir);
}

int main(void) {
  test_geometry_and_pixels(1);
  test_geometry_and_pixels(3);
  test_clamping();
  test_bad_args();
  test_write_file();
  return check_report();
}
