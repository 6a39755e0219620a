/* test_data_formats.c - the geometry rules of data.h on hand-computed
 * values (area resampling up and down, center crop, padding, luma,
 * gray -> RGB), the IDX reader on small files the test writes (memory,
 * plain and gzip directories, 1 and 3 channels), the CIFAR-10 reader (five
 * batches in cifar-10-batches-bin/), format detection and `--data` spec
 * parsing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "data_test_util.h"
#include "gf/data.h"
#include "gf/data_parse.h"

static gf_data_options geom(int c, int h, int w, gf_data_fit fit) {
  gf_data_options o = {.channels = c, .height = h, .width = w, .fit = fit};
  return o;
}

static void test_area_resampling(void) {
  gf_err err = {0};
  /* 2x2 -> 3x3 upscaling: 1-D rule [a, (a+b)/2, b]; the center is the mean
   * of all four, rounded to nearest. */
  uint8_t src[4] = {0, 100, 200, 40};
  gf_image im = {.px = src, .c = 1, .h = 2, .w = 2};
  uint8_t out[9];
  gf_data_options o = geom(1, 3, 3, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_image_convert(&im, &o, out, &err) == GF_OK);
  const uint8_t want_up[9] = {0, 50, 100, 100, 85, 70, 200, 120, 40};
  CHECK(memcmp(out, want_up, 9) == 0);

  /* 4x4 -> 2x2: each output is its 2x2 block's mean, rounded (half up). */
  uint8_t s4[16] = {10, 20, 0, 0,   30, 41, 0, 1,
                    255, 255, 7, 8, 255, 254, 9, 10};
  gf_image i4 = {.px = s4, .c = 1, .h = 4, .w = 4};
  uint8_t o4[4];
  o = geom(1, 2, 2, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_image_convert(&i4, &o, o4, &err) == GF_OK);
  CHECK_INT_EQ(o4[0], 25); /* 101 / 4 = 25.25 */
  CHECK_INT_EQ(o4[1], 0);  /* 1 / 4 = 0.25 */
  CHECK_INT_EQ(o4[2], 255); /* 1019 / 4 = 254.75 */
  CHECK_INT_EQ(o4[3], 9);  /* 34 / 4 = 8.5 -> 9 */

  /* 6 wide x 4 high -> 2x2: the central 4x4 (columns 1..4) is kept. */
  uint8_t s64[24];
  for (int y = 0; y < 4; y++) {
    for (int x = 0; x < 6; x++) s64[y * 6 + x] = (x == 0 || x == 5) ? 255 : (uint8_t)(y < 2 ? 40 : 80);
  }
  gf_image i64 = {.px = s64, .c = 1, .h = 4, .w = 6};
  CHECK(gf_data_image_convert(&i64, &o, o4, &err) == GF_OK);
  CHECK_INT_EQ(o4[0], 40);
  CHECK_INT_EQ(o4[1], 40);
  CHECK_INT_EQ(o4[2], 80);
  CHECK_INT_EQ(o4[3], 80);

  /* Tall 2 wide x 6 high -> 1x1 crop keeps rows 2..3 only. */
  uint8_t s26[12] = {0, 0, 0, 0, 100, 110, 120, 130, 255, 255, 255, 255};
  gf_image i26 = {.px = s26, .c = 1, .h = 6, .w = 2};
  uint8_t o1;
  o = geom(1, 1, 1, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_image_convert(&i26, &o, &o1, &err) == GF_OK);
  CHECK_INT_EQ(o1, 115);

  /* A constant image stays constant at any size. */
  uint8_t flat[35];
  memset(flat, 77, sizeof flat);
  gf_image iflat = {.px = flat, .c = 1, .h = 5, .w = 7};
  uint8_t oflat[13 * 11];
  o = geom(1, 13, 11, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_image_convert(&iflat, &o, oflat, &err) == GF_OK);
  int all77 = 1;
  for (size_t i = 0; i < sizeof oflat; i++) all77 &= oflat[i] == 77;
  CHECK(all77);
}

static void test_pad_and_channels(void) {
  gf_err err = {0};
  uint8_t src[4] = {1, 2, 3, 4};
  gf_image im = {.px = src, .c = 1, .h = 2, .w = 2};
  uint8_t out[16];
  gf_data_options o = geom(1, 4, 4, GF_DATA_FIT_PAD);
  CHECK(gf_data_image_convert(&im, &o, out, &err) == GF_OK);
  const uint8_t want[16] = {0, 0, 0, 0, 0, 1, 2, 0, 0, 3, 4, 0, 0, 0, 0, 0};
  CHECK(memcmp(out, want, 16) == 0);
  /* Larger than the canvas: cropped centrally. */
  uint8_t big[36];
  for (int i = 0; i < 36; i++) big[i] = (uint8_t)i;
  gf_image ib = {.px = big, .c = 1, .h = 6, .w = 6};
  uint8_t ob[4];
  o = geom(1, 2, 2, GF_DATA_FIT_PAD);
  CHECK(gf_data_image_convert(&ib, &o, ob, &err) == GF_OK);
  CHECK_INT_EQ(ob[0], 14);
  CHECK_INT_EQ(ob[1], 15);
  CHECK_INT_EQ(ob[2], 20);
  CHECK_INT_EQ(ob[3], 21);

  /* RGB -> gray: BT.601 luma with 8-bit weights. */
  uint8_t rgb[3 * 4] = {255, 0, 0, 200, /* R plane */
                        0, 255, 0, 100, /* G plane */
                        0, 0, 255, 50}; /* B plane */
  gf_image irgb = {.px = rgb, .c = 3, .h = 2, .w = 2};
  uint8_t g[4];
  o = geom(1, 2, 2, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_image_convert(&irgb, &o, g, &err) == GF_OK);
  CHECK_INT_EQ(g[0], (77 * 255 + 128) >> 8);
  CHECK_INT_EQ(g[1], (150 * 255 + 128) >> 8);
  CHECK_INT_EQ(g[2], (29 * 255 + 128) >> 8);
  CHECK_INT_EQ(g[3], (77 * 200 + 150 * 100 + 29 * 50 + 128) >> 8);

  /* gray -> RGB: three equal planes, resampled like the gray one. */
  gf_image ig = {.px = src, .c = 1, .h = 2, .w = 2};
  uint8_t o3[3 * 9], o1[9];
  o = geom(3, 3, 3, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_image_convert(&ig, &o, o3, &err) == GF_OK);
  o = geom(1, 3, 3, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_image_convert(&ig, &o, o1, &err) == GF_OK);
  CHECK(memcmp(o3, o1, 9) == 0 && memcmp(o3 + 9, o1, 9) == 0 &&
        memcmp(o3 + 18, o1, 9) == 0);

  /* Bad geometry is refused. */
  o = geom(2, 3, 3, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_image_convert(&ig, &o, o1, &err) == GF_EINVAL);
  o = geom(1, 0, 3, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_image_convert(&ig, &o, o1, &err) == GF_EINVAL);
}

/* 5 images of 4x4 whose pixels encode (image, position); labels 0..4. */
static void make_idx(uint8_t **img, size_t *ilen, uint8_t **lbl, size_t *llen) {
  uint8_t px[5 * 16], lab[5] = {3, 0, 4, 1, 2};
  for (int i = 0; i < 5 * 16; i++) px[i] = (uint8_t)(i * 3);
  *img = tu_idx_images(5, 4, 4, px, ilen);
  *lbl = tu_idx_labels(5, lab, llen);
}

static void test_idx(void) {
  gf_err err = {0};
  uint8_t *img, *lbl;
  size_t ilen, llen;
  make_idx(&img, &ilen, &lbl, &llen);
  REQUIRE(img && lbl);

  gf_dataset ds;
  gf_data_options o = geom(1, 4, 4, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_idx_load_mem(&ds, img, ilen, "img", lbl, llen, "lbl", &o, &err) == GF_OK);
  CHECK_INT_EQ(ds.n, 5);
  CHECK_INT_EQ(ds.num_classes, 5);
  CHECK(memcmp(ds.pixels, img + 16, 80) == 0);
  CHECK_INT_EQ(ds.labels[0], 3);
  CHECK_INT_EQ(ds.labels[2], 4);
  gf_dataset_free(&ds);

  /* 3 channels at 2x2: each plane the 2x2 block means of the gray image. */
  o = geom(3, 2, 2, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_idx_load_mem(&ds, img, ilen, "img", lbl, llen, "lbl", &o, &err) == GF_OK);
  CHECK_INT_EQ(ds.c, 3);
  for (int i = 0; i < 5; i++) {
    const uint8_t *g = img + 16 + i * 16;
    const uint8_t *d = ds.pixels + i * 12;
    for (int k = 0; k < 3; k++) {
      int tl = (g[0] + g[1] + g[4] + g[5] + 2) / 4;
      int br = (g[10] + g[11] + g[14] + g[15] + 2) / 4;
      CHECK_INT_EQ(d[k * 4 + 0], tl);
      CHECK_INT_EQ(d[k * 4 + 3], br);
    }
  }
  gf_dataset_free(&ds);

  /* The same files in directories: plain, gzip, and mixed. */
  char *tmp = tu_tmpdir("idx");
  REQUIRE(tmp);
  char dir[3][4096], p[4096];
  const char *sub[3] = {"plain", "gz", "mixed"};
  for (int k = 0; k < 3; k++) {
    tu_path(dir[k], sizeof dir[k], tmp, sub[k]);
    REQUIRE(tu_mkdir(dir[k]) == 0);
    tu_path(p, sizeof p, dir[k], k == 0 ? "train-images-idx3-ubyte" : "train-images-idx3-ubyte.gz");
    REQUIRE((k == 0 ? tu_write(p, img, ilen) : tu_write_gz(p, img, ilen)) == 0);
    tu_path(p, sizeof p, dir[k], k == 1 ? "train-labels-idx1-ubyte.gz" : "train-labels-idx1-ubyte");
    REQUIRE((k == 1 ? tu_write_gz(p, lbl, llen) : tu_write(p, lbl, llen)) == 0);
  }
  for (int k = 0; k < 3; k++) {
    gf_data_format f = GF_DATA_AUTO;
    CHECK(gf_data_detect(dir[k], &f, &err) == GF_OK);
    CHECK(f == GF_DATA_IDX);
    o = geom(1, 4, 4, GF_DATA_FIT_RESIZE);
    o.path = dir[k];
    gf_status s = gf_dataset_load(&ds, &o, &err);
    CHECKF(s == GF_OK, "%s: %s", sub[k], err.msg);
    if (s == GF_OK) {
      CHECK_INT_EQ(ds.n, 5);
      CHECK(memcmp(ds.pixels, img + 16, 80) == 0);
      CHECK(memcmp(ds.labels, lbl + 8, 5) == 0);
      CHECK_STR_EQ(ds.source, dir[k]);
      CHECK(ds.format == GF_DATA_IDX);
    }
    gf_dataset_free(&ds);
  }
  tu_rmtree(tmp);
  free(tmp);
  free(img);
  free(lbl);
}

/* One CIFAR record: label, and R, G, B planes of constant r, g, b with one
 * marker pixel (0, 0) = label in every plane. */
static void cifar_record(uint8_t *rec, int label, int r, int g, int b) {
  rec[0] = (uint8_t)label;
  memset(rec + 1, r, 1024);
  memset(rec + 1 + 1024, g, 1024);
  memset(rec + 1 + 2048, b, 1024);
  rec[1] = rec[1 + 1024] = rec[1 + 2048] = (uint8_t)label;
}

static void test_cifar(void) {
  gf_err err = {0};
  char *tmp = tu_tmpdir("cifar");
  REQUIRE(tmp);
  char base[4096], p[4096];
  tu_path(base, sizeof base, tmp, "cifar-10-batches-bin");
  REQUIRE(tu_mkdir(base) == 0);
  const int counts[5] = {2, 1, 1, 1, 3};
  int label = 0;
  for (int f = 0; f < 5; f++) {
    uint8_t *buf = malloc((size_t)counts[f] * 3073);
    REQUIRE(buf);
    for (int k = 0; k < counts[f]; k++, label++) {
      cifar_record(buf + k * 3073, label % 10, 200, 100, 50 + label);
    }
    char name[64];
    snprintf(name, sizeof name, "data_batch_%d.bin", f + 1);
    tu_path(p, sizeof p, base, name);
    REQUIRE(tu_write(p, buf, (size_t)counts[f] * 3073) == 0);
    free(buf);
  }
  /* A test batch next to them is not training data. */
  tu_path(p, sizeof p, base, "test_batch.bin");
  REQUIRE(tu_write(p, "x", 1) == 0);

  gf_data_format f = GF_DATA_AUTO;
  CHECK(gf_data_detect(tmp, &f, &err) == GF_OK);
  CHECK(f == GF_DATA_CIFAR10);
  gf_dataset ds;
  gf_data_options o = geom(3, 32, 32, GF_DATA_FIT_RESIZE);
  o.path = tmp;
  gf_status s = gf_dataset_load(&ds, &o, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  CHECK_INT_EQ(ds.n, 8);
  CHECK_INT_EQ(ds.num_classes, 10);
  CHECK_INT_EQ(ds.src_c, 3);
  CHECK_STR_EQ(ds.source, base);
  for (int i = 0; i < 8; i++) {
    const uint8_t *im = ds.pixels + (size_t)i * 3072;
    CHECK_INT_EQ(ds.labels[i], i);
    CHECK_INT_EQ(im[0], i);           /* R marker */
    CHECK_INT_EQ(im[1], 200);         /* planar: R plane */
    CHECK_INT_EQ(im[1024 + 5], 100);  /* G plane */
    CHECK_INT_EQ(im[2048 + 5], 50 + i); /* B plane, record order kept */
  }
  gf_dataset_free(&ds);

  /* Gray 16x16: luma of the constant part; the marker is averaged away. */
  o = geom(1, 16, 16, GF_DATA_FIT_RESIZE);
  o.path = base; /* the batch folder itself works too */
  s = gf_dataset_load(&ds, &o, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  CHECK_INT_EQ(ds.n, 8);
  CHECK_INT_EQ(ds.pixels[255], (77 * 200 + 150 * 100 + 29 * 50 + 128) >> 8);
  gf_dataset_free(&ds);

  /* The memory parser reads one batch. */
  uint8_t two[2 * 3073];
  cifar_record(two, 7, 1, 2, 3);
  cifar_record(two + 3073, 9, 4, 5, 6);
  o = geom(3, 32, 32, GF_DATA_FIT_RESIZE);
  CHECK(gf_data_cifar_load_mem(&ds, two, sizeof two, "mem", &o, &err) == GF_OK);
  CHECK_INT_EQ(ds.n, 2);
  CHECK_INT_EQ(ds.labels[1], 9);
  CHECK_INT_EQ(ds.pixels[3072 + 2048 + 9], 6);
  gf_dataset_free(&ds);

  /* An explicit format that does not match the directory fails cleanly. */
  o.path = tmp;
  o.format = GF_DATA_IDX;
  s = gf_dataset_load(&ds, &o, &err);
  CHECK(s == GF_ENOTFOUND);
  CHECK(strstr(err.msg, "train-images-idx3-ubyte") != NULL);
  CHECK(ds.pixels == NULL);
  tu_rmtree(tmp);
  free(tmp);
}

static void test_spec(void) {
  gf_err err = {0};
  gf_data_options o = {0};
  CHECK(gf_data_spec_parse("/data/x", &o, &err) == GF_OK);
  CHECK(o.format == GF_DATA_AUTO);
  CHECK_STR_EQ(o.path, "/data/x");
  CHECK(gf_data_spec_parse("idx:/data/fm", &o, &err) == GF_OK);
  CHECK(o.format == GF_DATA_IDX);
  CHECK_STR_EQ(o.path, "/data/fm");
  CHECK(gf_data_spec_parse("cifar10:c", &o, &err) == GF_OK);
  CHECK(o.format == GF_DATA_CIFAR10);
  CHECK(gf_data_spec_parse("images:./pics", &o, &err) == GF_OK);
  CHECK(o.format == GF_DATA_IMAGES);
  CHECK_STR_EQ(o.path, "./pics");
  CHECK(gf_data_spec_parse("images:", &o, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "images:") != NULL);
  CHECK(gf_data_spec_parse("", &o, &err) == GF_EINVAL);
  CHECK_STR_EQ(gf_data_format_name(GF_DATA_CIFAR10), "cifar10");
  CHECK_STR_EQ(gf_data_format_name((gf_data_format)42), "?");
}

int main(void) {
  test_area_resampling();
  test_pad_and_channels();
  test_idx();
  test_cifar();
  test_spec();
  return check_report();
}
