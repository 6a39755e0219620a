/* test_data_images.c - the image-folder reader on PNGs the test writes with
 * libpng (gray, gray+alpha, RGB, RGBA, palette, 1-bit, 16-bit, interlaced,
 * other sizes) and JPEGs written with libjpeg (gray, RGB, progressive):
 * exact pixels after the channel and fit rules, file order (sorted
 * relative paths, recursive, hidden and non-image files skipped),
 * ImageFolder labels from subdirectories, and the memory decoders. */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data_test_util.h"
#include "gf/data.h"
#include "gf/data_parse.h"

#define S 8 /* model size of the folder tests */

static void write_png(const char *dir, const char *name, int w, int h,
                      int color, int depth, const uint16_t *samples,
                      const uint8_t *plte, int n_plte, int interlace) {
  size_t len;
  uint8_t *b = tu_png(w, h, color, depth, samples, plte, n_plte, interlace, &len);
  REQUIRE(b);
  char p[4096];
  tu_path(p, sizeof p, dir, name);
  REQUIRE(tu_write(p, b, len) == 0);
  free(b);
}

static void write_jpeg(const char *dir, const char *name, int w, int h, int c,
                       const uint8_t *px, int progressive) {
  size_t len;
  uint8_t *b = tu_jpeg(w, h, c, px, 95, progressive, &len);
  REQUIRE(b);
  char p[4096];
  tu_path(p, sizeof p, dir, name);
  REQUIRE(tu_write(p, b, len) == 0);
  free(b);
}

/* The three planes of image i of ds at (x, y). */
static void rgb_at(const gf_dataset *ds, int i, int x, int y, int out[3]) {
  const uint8_t *im = ds->pixels + (size_t)i * 3 * S * S;
  for (int k = 0; k < 3; k++) out[k] = im[k * S * S + y * S + x];
}

static int r_of(int x, int y) { return x * 30 + y; }
static int g_of(int x, int y) { return 255 - y * 20 - x; }
static int b_of(int x, int y) { return (x * y * 7) % 256; }

static void test_flat_folder(void) {
  gf_err err = {0};
  char *dir = tu_tmpdir("images");
  REQUIRE(dir);
  uint16_t sm[16 * 16 * 4];

  /* a: 8-bit gray ramp. */
  for (int i = 0; i < S * S; i++) sm[i] = (uint16_t)(i * 4);
  write_png(dir, "a_gray.png", S, S, PNG_COLOR_TYPE_GRAY, 8, sm, NULL, 0, 0);
  /* b: RGB; c: the same with alpha (dropped); h: interlaced RGB. */
  for (int y = 0; y < S; y++) {
    for (int x = 0; x < S; x++) {
      uint16_t *p3 = sm + (y * S + x) * 3;
      p3[0] = (uint16_t)r_of(x, y);
      p3[1] = (uint16_t)g_of(x, y);
      p3[2] = (uint16_t)b_of(x, y);
    }
  }
  write_png(dir, "b_rgb.png", S, S, PNG_COLOR_TYPE_RGB, 8, sm, NULL, 0, 0);
  write_png(dir, "h_inter.png", S, S, PNG_COLOR_TYPE_RGB, 8, sm, NULL, 0, 1);
  for (int y = 0; y < S; y++) {
    for (int x = 0; x < S; x++) {
      uint16_t *p4 = sm + (y * S + x) * 4;
      p4[0] = (uint16_t)r_of(x, y);
      p4[1] = (uint16_t)g_of(x, y);
      p4[2] = (uint16_t)b_of(x, y);
      p4[3] = (uint16_t)(x * 36); /* alpha: must not matter */
    }
  }
  write_png(dir, "c_rgba.png", S, S, PNG_COLOR_TYPE_RGB_ALPHA, 8, sm, NULL, 0, 0);
  /* d: gray + alpha. */
  for (int i = 0; i < S * S; i++) {
    sm[2 * i] = (uint16_t)(250 - i);
    sm[2 * i + 1] = (uint16_t)(i % 7);
  }
  write_png(dir, "d_ga.png", S, S, PNG_COLOR_TYPE_GRAY_ALPHA, 8, sm, NULL, 0, 0);
  /* e: 4-bit palette of three colors, by column. */
  const uint8_t plte[9] = {10, 20, 30, 200, 150, 100, 0, 255, 0};
  for (int i = 0; i < S * S; i++) sm[i] = (uint16_t)((i % S) % 3);
  write_png(dir, "e_pal.png", S, S, PNG_COLOR_TYPE_PALETTE, 4, sm, plte, 3, 0);
  /* f: 16-bit RGB: the high byte is kept. */
  for (int i = 0; i < S * S * 3; i++) sm[i] = (uint16_t)(((i % 256) << 8) | 0xAB);
  write_png(dir, "f_16.png", S, S, PNG_COLOR_TYPE_RGB, 16, sm, NULL, 0, 0);
  /* g: 1-bit gray checkerboard -> 0 / 255. */
  for (int y = 0; y < S; y++) {
    for (int x = 0; x < S; x++) sm[y * S + x] = (uint16_t)((x + y) & 1);
  }
  write_png(dir, "g_1bit.png", S, S, PNG_COLOR_TYPE_GRAY, 1, sm, NULL, 0, 0);
  /* i: 16 wide x 8 high: the central 8 columns (4..11) are kept. */
  for (int y = 0; y < 8; y++) {
    for (int x = 0; x < 16; x++) sm[y * 16 + x] = (uint16_t)(x * 10 + y);
  }
  write_png(dir, "i_wide.png", 16, 8, PNG_COLOR_TYPE_GRAY, 8, sm, NULL, 0, 0);
  /* j: 16x16 -> 8x8: means of 2x2 blocks. */
  for (int i = 0; i < 256; i++) sm[i] = (uint16_t)((i * 37) % 256);
  write_png(dir, "j_big.png", 16, 16, PNG_COLOR_TYPE_GRAY, 8, sm, NULL, 0, 0);
  /* k, l, m: JPEGs of flat colors (lossy: compared with a tolerance). */
  uint8_t jp[S * S * 3];
  memset(jp, 128, sizeof jp);
  write_jpeg(dir, "k_gray.jpg", S, S, 1, jp, 0);
  for (int i = 0; i < S * S; i++) {
    jp[3 * i] = 200;
    jp[3 * i + 1] = 100;
    jp[3 * i + 2] = 50;
  }
  write_jpeg(dir, "l_rgb.JPEG", S, S, 3, jp, 0);
  write_jpeg(dir, "m_prog.jpg", S, S, 3, jp, 1);
  /* Skipped: hidden files, other extensions (garbage if they were read). */
  char p[4096];
  tu_path(p, sizeof p, dir, ".hidden.png");
  REQUIRE(tu_write(p, "garbage", 7) == 0);
  tu_path(p, sizeof p, dir, "README.txt");
  REQUIRE(tu_write(p, "garbage", 7) == 0);
  /* Recursive: a nested file sorts after the top-level ones ("sub/..."). */
  tu_path(p, sizeof p, dir, "sub");
  REQUIRE(tu_mkdir(p) == 0);
  for (int i = 0; i < S * S; i++) sm[i] = 99;
  write_png(p, "n_nested.PNG", S, S, PNG_COLOR_TYPE_GRAY, 8, sm, NULL, 0, 0);

  gf_data_format f;
  CHECK(gf_data_detect(dir, &f, &err) == GF_OK);
  CHECK(f == GF_DATA_IMAGES);
  gf_dataset ds;
  gf_data_options o = {.path = dir, .channels = 3, .height = S, .width = S};
  gf_status s = gf_dataset_load(&ds, &o, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  CHECK_INT_EQ(ds.n, 14);
  CHECK(ds.labels == NULL); /* top-level files: no classes */
  CHECK_INT_EQ(ds.num_classes, 0);
  CHECK_INT_EQ(ds.src_c, 1); /* the first file, a_gray.png */
  CHECK(ds.format == GF_DATA_IMAGES);

  int v[3], bad = 0;
  for (int y = 0; y < S; y++) {
    for (int x = 0; x < S; x++) {
      int i = y * S + x;
      rgb_at(&ds, 0, x, y, v); /* a: gray replicated */
      bad += v[0] != i * 4 || v[1] != i * 4 || v[2] != i * 4;
      for (int k = 1; k <= 2; k++) { /* b, c: RGB, alpha dropped */
        rgb_at(&ds, k, x, y, v);
        bad += v[0] != r_of(x, y) || v[1] != g_of(x, y) || v[2] != b_of(x, y);
      }
      rgb_at(&ds, 3, x, y, v); /* d: gray of gray+alpha */
      bad += v[0] != 250 - i || v[2] != 250 - i;
      rgb_at(&ds, 4, x, y, v); /* e: palette */
      const uint8_t *c = plte + 3 * (x % 3);
      bad += v[0] != c[0] || v[1] != c[1] || v[2] != c[2];
      rgb_at(&ds, 5, x, y, v); /* f: high bytes, interleaved samples */
      for (int k = 0; k < 3; k++) bad += v[k] != (i * 3 + k) % 256;
      rgb_at(&ds, 6, x, y, v); /* g: 1-bit */
      bad += v[0] != (((x + y) & 1) ? 255 : 0);
      rgb_at(&ds, 7, x, y, v); /* h: interlaced */
      bad += v[0] != r_of(x, y) || v[1] != g_of(x, y) || v[2] != b_of(x, y);
      rgb_at(&ds, 8, x, y, v); /* i: center crop */
      bad += v[0] != (x + 4) * 10 + y;
      rgb_at(&ds, 9, x, y, v); /* j: 2x2 block means */
      int sum = 0;
      for (int dy = 0; dy < 2; dy++) {
        for (int dx = 0; dx < 2; dx++) sum += ((2 * y + dy) * 16 + 2 * x + dx) * 37 % 256;
      }
      bad += v[1] != (sum + 2) / 4;
      rgb_at(&ds, 10, x, y, v); /* k: gray JPEG */
      bad += abs(v[0] - 128) > 2 || v[0] != v[2];
      for (int k = 11; k <= 12; k++) { /* l, m: RGB JPEGs */
        rgb_at(&ds, k, x, y, v);
        bad += abs(v[0] - 200) > 4 || abs(v[1] - 100) > 4 || abs(v[2] - 50) > 4;
      }
      rgb_at(&ds, 13, x, y, v); /* sub/n_nested.PNG */
      bad += v[0] != 99;
    }
  }
  CHECK_INT_EQ(bad, 0);
  gf_dataset_free(&ds);

  /* The same folder for a 1-channel model: RGB becomes luma. */
  o.channels = 1;
  s = gf_dataset_load(&ds, &o, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  CHECK_INT_EQ(ds.c, 1);
  const uint8_t *b1 = ds.pixels + 1 * S * S;
  CHECK_INT_EQ(b1[3 * S + 2], (77 * r_of(2, 3) + 150 * g_of(2, 3) + 29 * b_of(2, 3) + 128) >> 8);
  gf_dataset_free(&ds);

  /* The memory decoders agree with the folder path. */
  tu_path(p, sizeof p, dir, "b_rgb.png");
  size_t len;
  uint8_t *buf = tu_read(p, &len);
  REQUIRE(buf);
  gf_image im;
  CHECK(gf_data_png_decode(buf, len, "b", &im, &err) == GF_OK);
  CHECK(im.c == 3 && im.w == S && im.h == S);
  CHECK_INT_EQ(im.px[S * S + 2 * S + 5], g_of(5, 2));
  gf_image_free(&im);
  CHECK(gf_data_jpeg_decode(buf, len, "b", &im, &err) == GF_EFORMAT);
  CHECK(im.px == NULL);
  free(buf);
  tu_path(p, sizeof p, dir, "k_gray.jpg");
  buf = tu_read(p, &len);
  REQUIRE(buf);
  CHECK(gf_data_image_decode(buf, len, "k", &im, &err) == GF_OK);
  CHECK(im.c == 1 && im.w == S && im.h == S);
  gf_image_free(&im);
  gf_image_free(&im); /* twice and NULL are fine */
  gf_image_free(NULL);
  free(buf);

  tu_rmtree(dir);
  free(dir);
}

static void test_class_folders(void) {
  gf_err err = {0};
  char *dir = tu_tmpdir("classes");
  REQUIRE(dir);
  const char *classes[3] = {"dog", "bird", "cat"}; /* created unsorted */
  char p[4096];
  uint16_t sm[S * S];
  uint8_t jp[S * S];
  for (int k = 0; k < 3; k++) {
    tu_path(p, sizeof p, dir, classes[k]);
    REQUIRE(tu_mkdir(p) == 0);
    for (int i = 0; i < S * S; i++) sm[i] = (uint16_t)(10 * (k + 1));
    write_png(p, "1.png", S, S, PNG_COLOR_TYPE_GRAY, 8, sm, NULL, 0, 0);
    if (k == 2) {
      memset(jp, 64, sizeof jp);
      write_jpeg(p, "2.jpg", S, S, 1, jp, 0);
    }
  }
  gf_dataset ds;
  gf_data_options o = {.path = dir, .channels = 1, .height = 4, .width = 4};
  gf_status s = gf_dataset_load(&ds, &o, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  /* bird/1.png, cat/1.png, cat/2.jpg, dog/1.png */
  CHECK_INT_EQ(ds.n, 4);
  CHECK_INT_EQ(ds.num_classes, 3);
  REQUIRE(ds.labels);
  CHECK_INT_EQ(ds.labels[0], 0);
  CHECK_INT_EQ(ds.labels[1], 1);
  CHECK_INT_EQ(ds.labels[2], 1);
  CHECK_INT_EQ(ds.labels[3], 2);
  CHECK_INT_EQ(ds.pixels[0], 20);      /* bird was created second */
  CHECK_INT_EQ(ds.pixels[16], 30);     /* cat */
  CHECK(abs(ds.pixels[32] - 64) <= 2); /* cat/2.jpg */
  CHECK_INT_EQ(ds.pixels[48], 10);     /* dog */
  gf_dataset_free(&ds);
  tu_rmtree(dir);
  free(dir);
}

int main(void) {
  test_flat_folder();
  test_class_folders();
  return check_report();
}
