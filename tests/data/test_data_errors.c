/* test_data_errors.c - every data failure is a gf_err with the right status
 * whose message names the file and what is wrong with it, and leaves the
 * dataset empty: missing paths and files, wrong IDX magic / type / dims /
 * counts, truncation (plain and gzip), corrupt gzip, trailing bytes, CIFAR
 * sizes and labels, undecodable PNG/JPEG, empty folders, bad options. */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "check.h"
#include "data_test_util.h"
#include "gf/data.h"
#include "gf/data_parse.h"

static char *g_tmp; /* this test's temporary directory (test-only global) */
static int g_case;

/* A fresh subdirectory for one case; path into out. */
static void case_dir(char *out, size_t cap) {
  char name[32];
  snprintf(name, sizeof name, "case%02d", g_case++);
  tu_path(out, cap, g_tmp, name);
  REQUIRE(tu_mkdir(out) == 0);
}

static void put(const char *dir, const char *name, const void *b, size_t n,
                int gz) {
  char p[4096];
  tu_path(p, sizeof p, dir, name);
  REQUIRE((gz ? tu_write_gz(p, b, n) : tu_write(p, b, n)) == 0);
}

/* Loads dir with opt's geometry and checks the failure: status, the named
 * file (a substring of the message) and a phrase saying what is wrong. */
static void expect_fail_at(int line, const char *dir, gf_data_format fmt,
                           gf_status want, const char *file,
                           const char *phrase) {
  gf_err err = {0};
  gf_dataset ds;
  gf_data_options o = {.path = dir, .format = fmt, .channels = 1, .height = 8,
                       .width = 8};
  gf_status s = gf_dataset_load(&ds, &o, &err);
  CHECKF(s == want, "line %d: status %s, want %s (%s)", line,
         gf_status_name(s), gf_status_name(want), err.msg);
  CHECKF(s == GF_OK || err.code == s, "line %d: err.code not set", line);
  if (s == GF_OK) err.msg[0] = '\0';
  else fprintf(stderr, "  %s\n", err.msg); /* the messages users see */
  CHECKF(strstr(err.msg, file) != NULL, "line %d: \"%s\" does not name %s",
         line, err.msg, file);
  CHECKF(strstr(err.msg, phrase) != NULL, "line %d: \"%s\" lacks \"%s\"",
         line, err.msg, phrase);
  if (want == GF_OK) {
    CHECKF(ds.pixels != NULL && ds.n > 0, "line %d: nothing loaded", line);
  } else {
    CHECKF(ds.pixels == NULL && ds.labels == NULL && ds.n == 0,
           "line %d: dataset not left empty", line);
  }
  gf_dataset_free(&ds);
}
#define EXPECT_FAIL(dir, fmt, want, file, phrase) \
  expect_fail_at(__LINE__, dir, fmt, want, file, phrase)

/* A valid 3-image 8x8 IDX pair. */
static uint8_t *g_img, *g_lbl;
static size_t g_ilen, g_llen;

static void make_idx(void) {
  uint8_t px[3 * 64], lab[3] = {1, 2, 0};
  for (int i = 0; i < 3 * 64; i++) px[i] = (uint8_t)i;
  g_img = tu_idx_images(3, 8, 8, px, &g_ilen);
  g_lbl = tu_idx_labels(3, lab, &g_llen);
  REQUIRE(g_img && g_lbl);
}

/* An IDX case: images bytes (gz or not) with the valid labels. */
static void idx_case(char *dir, size_t cap, const uint8_t *img, size_t ilen,
                     int gz) {
  case_dir(dir, cap);
  put(dir, gz ? "train-images-idx3-ubyte.gz" : "train-images-idx3-ubyte", img,
      ilen, gz);
  put(dir, "train-labels-idx1-ubyte", g_lbl, g_llen, 0);
}

static void test_paths(void) {
  char d[4096], p[4096];
  tu_path(d, sizeof d, g_tmp, "no-such-dir");
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_ENOTFOUND, "no-such-dir", "cannot open");
  case_dir(d, sizeof d);
  put(d, "file", "x", 1, 0);
  tu_path(p, sizeof p, d, "file");
  EXPECT_FAIL(p, GF_DATA_AUTO, GF_EINVAL, p, "not a directory");
  case_dir(d, sizeof d); /* empty */
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_ENOTFOUND, d, "no PNG or JPEG images");
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_ENOTFOUND, d, "train-images-idx3-ubyte");
  EXPECT_FAIL(d, GF_DATA_IMAGES, GF_ENOTFOUND, d, "no PNG or JPEG images");
  EXPECT_FAIL(d, GF_DATA_CIFAR10, GF_ENOTFOUND, d, "data_batch_1.bin");

  /* Bad options. */
  gf_err err = {0};
  gf_dataset ds;
  gf_data_options o = {.path = d, .channels = 2, .height = 8, .width = 8};
  CHECK(gf_dataset_load(&ds, &o, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "channels") != NULL);
  o.channels = 1;
  o.width = GF_DATA_MAX_SIDE + 1;
  CHECK(gf_dataset_load(&ds, &o, &err) == GF_EINVAL);
  o.width = 8;
  o.path = NULL;
  CHECK(gf_dataset_load(&ds, &o, &err) == GF_EINVAL);
}

static void test_idx(void) {
  char d[4096];
  uint8_t *b = malloc(g_ilen + 16);
  REQUIRE(b);

  /* Labels missing. */
  case_dir(d, sizeof d);
  put(d, "train-images-idx3-ubyte", g_img, g_ilen, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_ENOTFOUND, "train-labels-idx1-ubyte", "missing");

  /* Wrong magic: not IDX at all, and a label file where images belong. */
  memcpy(b, g_img, g_ilen);
  memcpy(b, "GIF8", 4);
  idx_case(d, sizeof d, b, g_ilen, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte", "not an IDX file");
  idx_case(d, sizeof d, g_lbl, g_llen, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte", "expected 3");

  /* Unsupported element type (0x0D, float). */
  memcpy(b, g_img, g_ilen);
  b[2] = 0x0D;
  idx_case(d, sizeof d, b, g_ilen, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EUNSUPPORTED, "train-images-idx3-ubyte", "data type 0x0d");

  /* Dims that overflow, zero images. */
  memcpy(b, g_img, g_ilen);
  memset(b + 8, 0xff, 8);
  idx_case(d, sizeof d, b, g_ilen, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte", "out of range");
  memcpy(b, g_img, g_ilen);
  memset(b + 4, 0, 4);
  idx_case(d, sizeof d, b, g_ilen, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte", "no images");

  /* Image/label count mismatch: names the label file and both counts. */
  case_dir(d, sizeof d);
  put(d, "train-images-idx3-ubyte", g_img, g_ilen, 0);
  uint8_t lab4[4] = {0, 1, 2, 3};
  size_t l4len;
  uint8_t *l4 = tu_idx_labels(4, lab4, &l4len);
  put(d, "train-labels-idx1-ubyte.gz", l4, l4len, 1);
  free(l4);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-labels-idx1-ubyte.gz", "4 labels, but");

  /* Truncated plain file: caught from the header, before allocating. */
  idx_case(d, sizeof d, g_img, g_ilen - 10, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte", "truncated");
  idx_case(d, sizeof d, g_img, 10, 0); /* inside the header */
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte", "truncated");
  /* Truncated content inside a well-formed gzip stream. */
  idx_case(d, sizeof d, g_img, g_ilen - 10, 1);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte.gz", "truncated");
  /* A gzip header claiming far more than the file can inflate to. */
  memcpy(b, g_img, g_ilen);
  b[4] = 0x7f; /* ~2^31 images */
  idx_case(d, sizeof d, b, g_ilen, 1);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte.gz", "can hold at most");

  /* Trailing bytes, plain and gzip, images and labels. */
  memcpy(b, g_img, g_ilen);
  b[g_ilen] = 7;
  idx_case(d, sizeof d, b, g_ilen + 1, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte", "trailing");
  idx_case(d, sizeof d, b, g_ilen + 1, 1);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte.gz", "trailing");
  case_dir(d, sizeof d);
  put(d, "train-images-idx3-ubyte", g_img, g_ilen, 0);
  uint8_t lb[16];
  memcpy(lb, g_lbl, g_llen);
  lb[g_llen] = 1;
  put(d, "train-labels-idx1-ubyte", lb, g_llen + 1, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-labels-idx1-ubyte", "trailing");

  /* Broken gzip: cut short, and a flipped byte in the deflate data. */
  char p[4096];
  size_t glen;
  idx_case(d, sizeof d, g_img, g_ilen, 1);
  tu_path(p, sizeof p, d, "train-images-idx3-ubyte.gz");
  uint8_t *gz = tu_read(p, &glen);
  REQUIRE(gz && glen > 30);
  REQUIRE(tu_write(p, gz, glen - 12) == 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte.gz", "gzip");
  for (size_t i = 12; i < glen - 8; i++) gz[i] ^= 0x55;
  REQUIRE(tu_write(p, gz, glen) == 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte.gz", "gzip");
  free(gz);
  /* Intact deflate data but a wrong CRC in the trailer. */
  idx_case(d, sizeof d, g_img, g_ilen, 1);
  tu_path(p, sizeof p, d, "train-images-idx3-ubyte.gz");
  gz = tu_read(p, &glen);
  REQUIRE(gz);
  gz[glen - 8] ^= 1;
  REQUIRE(tu_write(p, gz, glen) == 0);
  free(gz);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "train-images-idx3-ubyte.gz", "gzip error");

  /* The memory parser on an empty buffer. */
  gf_err err = {0};
  gf_dataset ds;
  gf_data_options o = {.channels = 1, .height = 8, .width = 8};
  CHECK(gf_data_idx_load_mem(&ds, g_img, 0, "empty-img", g_lbl, g_llen, "l", &o, &err) == GF_EFORMAT);
  CHECK(strstr(err.msg, "empty-img: truncated") != NULL);
  free(b);
}

static void cifar_files(const char *dir, int skip, const uint8_t *rec,
                        size_t rec_len) {
  for (int f = 1; f <= 5; f++) {
    if (f == skip) continue;
    char name[32];
    snprintf(name, sizeof name, "data_batch_%d.bin", f);
    put(dir, name, rec, rec_len, 0);
  }
}

static void test_cifar(void) {
  char d[4096];
  uint8_t *rec = calloc(3, 3073);
  REQUIRE(rec);
  case_dir(d, sizeof d);
  cifar_files(d, 3, rec, 3073);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_ENOTFOUND, "data_batch_3.bin", "missing");
  put(d, "data_batch_3.bin", rec, 2 * 3073 + 5, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "data_batch_3.bin", "not a multiple of 3073");
  put(d, "data_batch_3.bin", rec, 0, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "data_batch_3.bin", "empty");
  put(d, "data_batch_3.bin", rec, 3073, 1);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "data_batch_3.bin", "gzip-compressed");
  rec[3073] = 10; /* record 1 */
  put(d, "data_batch_3.bin", rec, 2 * 3073, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "data_batch_3.bin", "record 1 has label 10");
  rec[3073] = 9;
  put(d, "data_batch_3.bin", rec, 2 * 3073, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_OK, "", ""); /* repaired: loads */

  gf_err err = {0};
  gf_dataset ds;
  gf_data_options o = {.channels = 3, .height = 32, .width = 32};
  CHECK(gf_data_cifar_load_mem(&ds, rec, 3072, "mem.bin", &o, &err) == GF_EFORMAT);
  CHECK(strstr(err.msg, "mem.bin: size 3072") != NULL);
  free(rec);
}

static uint8_t *good_png(size_t *len) {
  uint16_t sm[64];
  for (int i = 0; i < 64; i++) sm[i] = (uint16_t)(i * 3);
  uint8_t *b = tu_png(8, 8, PNG_COLOR_TYPE_GRAY, 8, sm, NULL, 0, 0, len);
  REQUIRE(b);
  return b;
}

static void test_images(void) {
  char d[4096];
  size_t plen, jlen;
  uint8_t *png = good_png(&plen);
  uint8_t jpx[64 * 64];
  for (int i = 0; i < 64 * 64; i++) jpx[i] = (uint8_t)(i * 7);
  uint8_t *jpg = tu_jpeg(64, 64, 1, jpx, 90, 0, &jlen);
  REQUIRE(jpg);

  /* One good file first: the error names the bad one. */
  case_dir(d, sizeof d);
  put(d, "a_good.png", png, plen, 0);
  put(d, "b_cut.png", png, plen / 2, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "b_cut.png", "invalid PNG");

  /* A flipped byte in the image data: libpng's CRC check. */
  uint8_t *bad = malloc(plen);
  REQUIRE(bad);
  memcpy(bad, png, plen);
  bad[plen - 20] ^= 0x40; /* inside IDAT (IEND is the last 12 bytes) */
  case_dir(d, sizeof d);
  put(d, "crc.png", bad, plen, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "crc.png", "invalid PNG");

  /* Width over the limit, with a correct IHDR CRC. */
  memcpy(bad, png, plen);
  bad[16] = 0x00;
  bad[17] = 0x01; /* width 65536 + 8 */
  uLong crc = crc32(0L, bad + 12, 17);
  bad[29] = (uint8_t)(crc >> 24);
  bad[30] = (uint8_t)(crc >> 16);
  bad[31] = (uint8_t)(crc >> 8);
  bad[32] = (uint8_t)crc;
  case_dir(d, sizeof d);
  put(d, "huge.png", bad, plen, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "huge.png", "width exceeds");
  free(bad);

  /* Truncated JPEG: libjpeg would fill with gray and warn; an error here. */
  case_dir(d, sizeof d);
  put(d, "cut.jpg", jpg, jlen / 2, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "cut.jpg", "invalid JPEG");
  case_dir(d, sizeof d);
  put(d, "head.jpeg", jpg, 20, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "head.jpeg", "invalid JPEG");

  /* Not an image at all, and an empty file. */
  case_dir(d, sizeof d);
  put(d, "text.jpg", "hello, world", 12, 0);
  EXPECT_FAIL(d, GF_DATA_AUTO, GF_EFORMAT, "text.jpg", "not a PNG or JPEG");
  case_dir(d, sizeof d);
  put(d, "empty.png", "", 0, 0);
  EXPECT_FAIL(d, GF_DATA_IMAGES, GF_EFORMAT, "empty.png", "not a PNG or JPEG");

  /* The memory decoders directly. */
  gf_err err = {0};
  gf_image im;
  CHECK(gf_data_png_decode(png, 7, "p7", &im, &err) == GF_EFORMAT);
  CHECK(strstr(err.msg, "p7: invalid PNG") != NULL);
  CHECK(im.px == NULL);
  CHECK(gf_data_jpeg_decode(jpg, 0, "j0", &im, &err) == GF_EFORMAT);
  CHECK(strstr(err.msg, "j0: invalid JPEG") != NULL);
  CHECK(gf_data_jpeg_decode(png, plen, "pj", &im, &err) == GF_EFORMAT);
  free(png);
  free(jpg);
}

int main(void) {
  g_tmp = tu_tmpdir("errors");
  REQUIRE(g_tmp);
  make_idx();
  test_paths();
  test_idx();
  test_cifar();
  test_images();
  free(g_img);
  free(g_lbl);
  tu_rmtree(g_tmp);
  free(g_tmp);
  return check_report();
}
