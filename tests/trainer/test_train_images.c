/* test_train_images.c - sample grids as MLflow images
 * (trainer/src/train_images.h), unit level:
 *   - artifact names exactly as MlflowClient.log_image(key=, step=) writes
 *     them, split back the way the MLflow UI parses them; key checks
 *   - compress_image_size's target size
 *   - the bicubic resize against Pillow's values
 *     (image_resize_reference.py), and the check proven to fire
 *   - the WebP preview decoded back with libwebp: size and pixels close to
 *     the resized image, far from a different one. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <webp/decode.h>

#include "check.h"
#include "train_images.h"

/* Splits name (no "images/" prefix, no extension) on '+' as the UI does:
 * key, "step", S, "timestamp", T, uuid[, "compressed"]. */
static int split_plus(char *name, char **parts, int max) {
  int n = 0;
  for (char *p = strtok(name, "+"); p && n < max; p = strtok(NULL, "+"))
    parts[n++] = p;
  return n;
}

static void test_names(void) {
  gf_image_names nm;
  gf_err err;
  const char *u = "0f8e5a2c-1b3d-4e6f-8a9b-0c1d2e3f4a5b";
  REQUIRE(gf_image_names_make("samples", 30, 1700000000123LL, u, &nm, &err) ==
          GF_OK);
  CHECK_STR_EQ(nm.png, "images/samples+step+30+timestamp+1700000000123+"
               "0f8e5a2c-1b3d-4e6f-8a9b-0c1d2e3f4a5b.png");
  CHECK_STR_EQ(nm.webp, "images/samples+step+30+timestamp+1700000000123+"
               "0f8e5a2c-1b3d-4e6f-8a9b-0c1d2e3f4a5b+compressed.webp");

  /* The UI's parse: strip the extension, split on '+'. */
  char buf[GF_IMAGE_NAME_MAX], *parts[8];
  snprintf(buf, sizeof buf, "%s", nm.webp + strlen("images/"));
  *strrchr(buf, '.') = '\0';
  int n = split_plus(buf, parts, 8);
  REQUIRE(n == 7);
  CHECK_STR_EQ(parts[0], "samples");
  CHECK_STR_EQ(parts[1], "step");
  CHECK_STR_EQ(parts[2], "30");
  CHECK_STR_EQ(parts[3], "timestamp");
  CHECK_STR_EQ(parts[4], "1700000000123");
  CHECK_STR_EQ(parts[5], u);
  CHECK_STR_EQ(parts[6], "compressed");

  /* '/' becomes '~' (no subdirectory); spaces, dots, dashes stay. */
  REQUIRE(gf_image_names_make("gan/samples 1.x-y", 0, 0, u, &nm, &err) ==
          GF_OK);
  CHECK(strncmp(nm.png, "images/gan~samples 1.x-y+step+0+timestamp+0+",
                44) == 0);
  CHECK(strchr(nm.png + 7, '/') == NULL);

  /* What log_image refuses, and malformed arguments. */
  const char *bad_keys[] = {"", "a:b", "a+b", "a%b", "caf\xc3\xa9", "a\nb"};
  for (size_t i = 0; i < sizeof bad_keys / sizeof *bad_keys; i++)
    CHECKF(gf_image_names_make(bad_keys[i], 1, 1, u, &nm, &err) == GF_EINVAL,
           "key %zu accepted", i);
  char longkey[GF_IMAGE_KEY_MAX + 2];
  memset(longkey, 'k', sizeof longkey - 1);
  longkey[sizeof longkey - 1] = '\0';
  CHECK(gf_image_names_make(longkey, 1, 1, u, &nm, &err) == GF_EINVAL);
  longkey[GF_IMAGE_KEY_MAX] = '\0'; /* the longest accepted key fits */
  CHECK(gf_image_names_make(longkey, INT64_MAX, INT64_MAX, u, &nm, &err) ==
        GF_OK);
  CHECK(strstr(nm.webp, "+compressed.webp") != NULL);
  CHECK(gf_image_names_make("s", -1, 1, u, &nm, &err) == GF_EINVAL);
  CHECK(gf_image_names_make("s", 1, -1, u, &nm, &err) == GF_EINVAL);
  CHECK(gf_image_names_make("s", 1, 1, "not-a-uuid", &nm, &err) == GF_EINVAL);
  CHECK(gf_image_names_make("s", 1, 1, NULL, &nm, &err) == GF_EINVAL);
}

static void test_compressed_size(void) {
  int w, h;
  gf_image_compressed_size(242, 242, 256, &w, &h); /* 8x8 of 28 px: up */
  CHECK(w == 256 && h == 256);
  gf_image_compressed_size(530, 530, 256, &w, &h); /* 8x8 of 64 px: down */
  CHECK(w == 256 && h == 256);
  gf_image_compressed_size(530, 266, 256, &w, &h); /* int(266 * 256/530) */
  CHECK(w == 256 && h == 128);
  gf_image_compressed_size(100, 300, 256, &w, &h); /* int(100 * 256/300) */
  CHECK(w == 85 && h == 256);
  gf_image_compressed_size(1000, 1, 256, &w, &h);
  CHECK(w == 256 && h == 1);
}

static int max_diff(const uint8_t *a, const uint8_t *b, size_t n) {
  int m = 0;
  for (size_t i = 0; i < n; i++) {
    int d = abs((int)a[i] - (int)b[i]);
    if (d > m) m = d;
  }
  return m;
}

static void test_resize(void) {
  gf_err err;
  uint8_t *out = NULL;
  /* Golden values: tests/trainer/image_resize_reference.py (Pillow 13). */
  uint8_t up_in[15];
  for (int y = 0; y < 3; y++)
    for (int x = 0; x < 5; x++) up_in[y * 5 + x] = (uint8_t)((x * 37 + y * 91) % 256);
  static const uint8_t up_ref[32] = {
      0,   8,   34,  57,  81,  104, 130, 146, 49,  63, 90,
      126, 155, 178, 204, 220, 128, 149, 167, 124, 117, 144,
      171, 187, 184, 213, 216, 53,  0,   25,  52,  68};
  REQUIRE(gf_image_resize_bicubic(up_in, 5, 3, 1, 8, 4, &out, &err) == GF_OK);
  CHECKF(max_diff(out, up_ref, 32) == 0, "upscale differs from Pillow by %d",
         max_diff(out, up_ref, 32));
  /* The check fires: the same comparison against a shifted reference. */
  uint8_t wrong[32];
  memcpy(wrong, up_ref, 32);
  wrong[5] ^= 4;
  CHECK(max_diff(out, wrong, 32) != 0);
  free(out);

  uint8_t down_in[81];
  for (int y = 0; y < 9; y++)
    for (int x = 0; x < 9; x++)
      down_in[y * 9 + x] = (uint8_t)((x * x * 7 + y * 29) % 256);
  static const uint8_t down_ref[16] = {24,  83,  158, 154, 87,  149, 115, 128,
                                       162, 164, 90,  124, 207, 85,  130, 111};
  REQUIRE(gf_image_resize_bicubic(down_in, 9, 9, 1, 4, 4, &out, &err) ==
          GF_OK);
  CHECKF(max_diff(out, down_ref, 16) == 0,
         "downscale differs from Pillow by %d", max_diff(out, down_ref, 16));
  free(out);

  uint8_t rgb_in[4 * 6 * 3]; /* 6 wide, 4 tall -> 3 wide, 7 tall */
  for (int y = 0; y < 4; y++)
    for (int x = 0; x < 6; x++) {
      uint8_t *p = rgb_in + (y * 6 + x) * 3;
      p[0] = (uint8_t)((x * 50) % 256);
      p[1] = (uint8_t)((y * 60) % 256);
      p[2] = (uint8_t)(((x + y) * 30) % 256);
    }
  static const uint8_t rgb_ref[63] = {
      27,  0,   14,  125, 0,   73,  223, 0,   132, 27,  16,  24,  125,
      16,  83,  223, 16,  142, 27,  55,  44,  125, 55,  103, 223, 55,
      162, 27,  90,  61,  125, 90,  120, 223, 90,  179, 27,  125, 78,
      125, 125, 137, 223, 125, 196, 27,  164, 98,  125, 164, 157, 223,
      164, 216, 27,  185, 108, 125, 185, 167, 223, 185, 226};
  REQUIRE(gf_image_resize_bicubic(rgb_in, 6, 4, 3, 3, 7, &out, &err) ==
          GF_OK);
  CHECKF(max_diff(out, rgb_ref, 63) == 0, "RGB resize differs from Pillow "
         "by %d", max_diff(out, rgb_ref, 63));
  free(out);

  /* Same size: a copy. Bad arguments: refused, *out NULL. */
  REQUIRE(gf_image_resize_bicubic(down_in, 9, 9, 1, 9, 9, &out, &err) ==
          GF_OK);
  CHECK(memcmp(out, down_in, 81) == 0);
  free(out);
  out = (uint8_t *)1;
  CHECK(gf_image_resize_bicubic(down_in, 9, 9, 2, 4, 4, &out, &err) ==
        GF_EINVAL);
  CHECK(out == NULL);
  CHECK(gf_image_resize_bicubic(down_in, 9, 9, 1, 0, 4, &out, &err) ==
        GF_EINVAL);
}

/* A grid-like test picture: dark 2-pixel lines every 30 pixels, smooth
 * gradients inside the tiles (as generated samples are), shifted by
 * phase pixels. */
static uint8_t *make_grid(int side, int c, int phase) {
  uint8_t *p = malloc((size_t)side * side * c);
  REQUIRE(p);
  for (int y = 0; y < side; y++)
    for (int x = 0; x < side; x++)
      for (int ch = 0; ch < c; ch++) {
        int lx = (x + phase) % 30, ly = y % 30;
        int v = (x % 30 < 2 || ly < 2) ? 0 : 40 + lx * 4 + ly * 2 + ch * 20;
        p[((size_t)y * side + x) * c + ch] = (uint8_t)v;
      }
  return p;
}

static double mean_abs(const uint8_t *a, const uint8_t *b, size_t n) {
  double s = 0;
  for (size_t i = 0; i < n; i++) s += abs((int)a[i] - (int)b[i]);
  return s / (double)n;
}

static void check_webp(int side, int c) {
  gf_err err;
  uint8_t *grid = make_grid(side, c, 0);
  uint8_t *webp = NULL;
  size_t len = 0;
  REQUIRE(gf_image_compressed_webp(grid, side, side, c, &webp, &len, &err) ==
          GF_OK);
  CHECK(len > 12 && memcmp(webp, "RIFF", 4) == 0 &&
        memcmp(webp + 8, "WEBP", 4) == 0);
  int w = 0, h = 0;
  uint8_t *dec = WebPDecodeRGB(webp, len, &w, &h);
  REQUIRE(dec);
  CHECK(w == GF_IMAGE_COMPRESSED_SIZE && h == GF_IMAGE_COMPRESSED_SIZE);

  /* What the encoder was given: the resized picture, as RGB. */
  uint8_t *small = NULL;
  REQUIRE(gf_image_resize_bicubic(grid, side, side, c, w, h, &small, &err) ==
          GF_OK);
  size_t n = (size_t)w * h;
  uint8_t *want = malloc(n * 3);
  REQUIRE(want);
  for (size_t i = 0; i < n; i++)
    for (int ch = 0; ch < 3; ch++)
      want[i * 3 + ch] = small[i * c + (c == 3 ? ch : 0)];
  double d = mean_abs(dec, want, n * 3);
  CHECKF(d < 8.0, "%dx%dx%d: decoded WebP is %.2f off on average", side,
         side, c, d);
  /* ... and the comparison tells pictures apart (it can fail). */
  uint8_t *other = make_grid(side, c, 15), *osmall = NULL;
  REQUIRE(gf_image_resize_bicubic(other, side, side, c, w, h, &osmall, &err) ==
          GF_OK);
  for (size_t i = 0; i < n; i++)
    for (int ch = 0; ch < 3; ch++)
      want[i * 3 + ch] = osmall[i * c + (c == 3 ? ch : 0)];
  double d_other = mean_abs(dec, want, n * 3);
  CHECKF(d_other > 3 * d && d_other > 10.0, "%dx%dx%d: a different picture "
         "is only %.2f off (own %.2f)", side, side, c, d_other, d);
  if (c == 1) /* gray stays gray */
    CHECK(max_diff(dec, dec + 1, 1) <= 3);
  fprintf(stderr, "webp %dx%dx%d -> %dx%d: %zu bytes, mean |diff| %.2f "
          "(other picture %.2f)\n", side, side, c, w, h, len, d, d_other);
  WebPFree(dec);
  free(grid);
  free(webp);
  free(small);
  free(other);
  free(osmall);
  free(want);
}

static void test_webp(void) {
  check_webp(242, 1); /* mlp / Fashion-MNIST grid: scaled up */
  check_webp(530, 3); /* 64x64 RGB dcgan grid: scaled down */
  gf_err err;
  uint8_t px[3] = {0}, *webp = (uint8_t *)1;
  size_t len = 1;
  CHECK(gf_image_encode_webp(px, 1, 1, 2, 80.0f, &webp, &len, &err) ==
        GF_EINVAL);
  CHECK(webp == NULL && len == 0);
  CHECK(gf_image_encode_webp(px, 20000, 1, 1, 80.0f, &webp, &len, &err) ==
        GF_EINVAL);
  CHECK(gf_image_encode_webp(px, 1, 1, 3, 101.0f, &webp, &len, &err) ==
        GF_EINVAL);
  REQUIRE(gf_image_encode_webp(px, 1, 1, 3, 80.0f, &webp, &len, &err) ==
          GF_OK);
  free(webp);
}

/* Nearest-neighbour upscaling of small sample grids. */
static void test_upscale(void) {
  CHECK_INT_EQ(gf_image_upscale_factor(242, 242, 1024), 4);  /* 8x8 of 28 px */
  CHECK_INT_EQ(gf_image_upscale_factor(274, 274, 1024), 3);  /* of 32 px */
  CHECK_INT_EQ(gf_image_upscale_factor(530, 530, 1024), 1);  /* of 64 px */
  CHECK_INT_EQ(gf_image_upscale_factor(1024, 10, 1024), 1);
  CHECK_INT_EQ(gf_image_upscale_factor(10, 300, 1024), 3);   /* the longer side */
  uint8_t src[2 * 3 * 3];
  for (int i = 0; i < (int)sizeof src; i++) src[i] = (uint8_t)(i * 7);
  uint8_t *out = NULL;
  gf_err err = {0};
  REQUIRE(gf_image_upscale_nearest(src, 3, 2, 3, 4, &out, &err) == GF_OK);
  int bad = 0;
  for (int y = 0; y < 8; y++)
    for (int x = 0; x < 12; x++)
      for (int ch = 0; ch < 3; ch++)
        bad += out[(y * 12 + x) * 3 + ch] != src[((y / 4) * 3 + x / 4) * 3 + ch];
  CHECK_INT_EQ(bad, 0);
  free(out);
  REQUIRE(gf_image_upscale_nearest(src, 3, 2, 3, 1, &out, &err) == GF_OK);
  CHECK(memcmp(out, src, sizeof src) == 0);
  free(out);
  CHECK(gf_image_upscale_nearest(src, 3, 2, 3, 0, &out, &err) == GF_EINVAL && !out);
  CHECK(gf_image_upscale_nearest(src, 0, 2, 3, 2, &out, &err) == GF_EINVAL && !out);
  CHECK(gf_image_upscale_nearest(src, 9000, 2, 1, 2, &out, &err) == GF_EINVAL && !out);
}

int main(void) {
  test_names();
  test_compressed_size();
  test_resize();
  test_webp();
  test_upscale();
  return check_report();
}
