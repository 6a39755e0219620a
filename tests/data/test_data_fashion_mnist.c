/* test_data_fashion_mnist.c - the IDX reader on the real Fashion-MNIST
 * training set of the Debian package dataset-fashion-mnist
 * (/usr/share/datasets/fashion-mnist, or argv[1]): counts, geometry,
 * classes, pixel and label values picked once with Python's gzip + struct,
 * the same bytes from a plain (gunzipped) copy, the 32x32 variants dcgan-32
 * uses, the memory the cache costs, and the class names (the indices as
 * plain IDX, Fashion-MNIST's own under fashion-mnist:). A missing directory FAILS: the
 * install script installs the package. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "data_test_util.h"
#include "gf/data.h"

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

/* Values read with:
 *   im = gzip.open(d + 'train-images-idx3-ubyte.gz').read()[16:]
 *   lb = gzip.open(d + 'train-labels-idx1-ubyte.gz').read()[8:] */
typedef struct known {
  int index, label;
  long sum;        /* sum of the 784 pixels */
  int px[3][2];    /* (offset in the image, value) */
  int center;      /* pixel at row 14, column 14 */
} known;

static const known KNOWN[] = {
    {0, 9, 76247, {{96, 1}, {99, 13}, {100, 73}}, 217},
    {1, 0, 84598, {{5, 1}, {10, 41}, {11, 188}}, 204},
    {12345, 8, 97611, {{85, 5}, {86, 118}, {87, 107}}, 193},
    {59999, 5, 16684, {{236, 1}, {238, 1}, {239, 71}}, 0},
};

static void check_known(const gf_dataset *ds) {
  for (size_t k = 0; k < sizeof KNOWN / sizeof KNOWN[0]; k++) {
    const known *e = &KNOWN[k];
    const uint8_t *im = ds->pixels + (size_t)e->index * 784;
    long sum = 0;
    for (int i = 0; i < 784; i++) sum += im[i];
    CHECK_INT_EQ(sum, e->sum);
    CHECK_INT_EQ(ds->labels[e->index], e->label);
    for (int j = 0; j < 3; j++) CHECK_INT_EQ(im[e->px[j][0]], e->px[j][1]);
    CHECK_INT_EQ(im[14 * 28 + 14], e->center);
  }
}

static void check_counts(const gf_dataset *ds) {
  CHECK_INT_EQ(ds->n, 60000);
  CHECK_INT_EQ(ds->c, 1);
  CHECK_INT_EQ(ds->h, 28);
  CHECK_INT_EQ(ds->w, 28);
  CHECK_INT_EQ(ds->src_h, 28);
  CHECK_INT_EQ(ds->src_w, 28);
  CHECK_INT_EQ(ds->num_classes, 10);
  CHECK(ds->format == GF_DATA_IDX);
  long per_class[10] = {0};
  for (int64_t i = 0; i < ds->n; i++) per_class[ds->labels[i]]++;
  for (int c = 0; c < 10; c++) CHECK_INT_EQ(per_class[c], 6000);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : FMNIST_DIR;
  struct stat st;
  if (stat(dir, &st) != 0) {
    fprintf(stderr,
            "%s is missing: install the Debian package dataset-fashion-mnist "
            "(deploy/install-deps.sh does)\n",
            dir);
    return 1;
  }
  gf_err err = {0};
  gf_dataset ds;
  long rss0 = tu_rss_kib(0);
  gf_data_options opt = {.path = dir, .channels = 1, .height = 28, .width = 28};
  gf_status s = gf_dataset_load(&ds, &opt, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  long rss1 = tu_rss_kib(0), hwm1 = tu_rss_kib(1);
  check_counts(&ds);
  check_known(&ds);
  CHECK_INT_EQ(gf_dataset_bytes(&ds), 60000u * 784u + 60000u);
  /* The cache is the only big allocation: the peak while loading stays
   * within the cache (47 MB) plus a few MB of zlib and read buffers. */
  fprintf(stderr, "Fashion-MNIST 28x28x1: cache %zu bytes, RSS %ld -> %ld KiB "
          "(peak %ld KiB)\n", gf_dataset_bytes(&ds), rss0, rss1, hwm1);
  if (rss0 > 0 && hwm1 > 0) CHECK(hwm1 - rss0 < 47040 + 60 + 16 * 1024);

  /* A plain (gunzipped) copy gives the same bytes. */
  char *tmp = tu_tmpdir("fmnist");
  REQUIRE(tmp);
  const char *names[2] = {"train-images-idx3-ubyte", "train-labels-idx1-ubyte"};
  for (int k = 0; k < 2; k++) {
    char src[4096], dst[4096];
    snprintf(src, sizeof src, "%s/%s.gz", dir, names[k]);
    tu_path(dst, sizeof dst, tmp, names[k]);
    size_t len;
    uint8_t *b = tu_read_gz(src, &len);
    REQUIRE(b);
    REQUIRE(tu_write(dst, b, len) == 0);
    free(b);
  }
  gf_dataset plain;
  gf_data_options popt = opt;
  popt.path = tmp;
  s = gf_dataset_load(&plain, &popt, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  check_counts(&plain);
  CHECK(memcmp(plain.pixels, ds.pixels, 60000u * 784u) == 0);
  CHECK(memcmp(plain.labels, ds.labels, 60000u) == 0);
  gf_dataset_free(&plain);

  /* Class names: IDX cannot tell MNIST from Fashion-MNIST, so the indices;
   * the fashion-mnist: spec gives the dataset's names. */
  REQUIRE(ds.class_names);
  for (int k = 0; k < 10; k++) {
    char want[4];
    snprintf(want, sizeof want, "%d", k);
    CHECK_STR_EQ(ds.class_names[k], want);
  }
  char spec[4200];
  snprintf(spec, sizeof spec, "fashion-mnist:%s", tmp);
  gf_data_options fopt = popt;
  REQUIRE(gf_data_spec_parse(spec, &fopt, &err) == GF_OK);
  s = gf_dataset_load(&plain, &fopt, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  CHECK(plain.format == GF_DATA_FASHION_MNIST);
  CHECK_INT_EQ(plain.num_classes, 10);
  CHECK(memcmp(plain.labels, ds.labels, 60000u) == 0);
  CHECK_STR_EQ(plain.class_names[plain.labels[0]], "Ankle boot"); /* 9 */
  CHECK_STR_EQ(plain.class_names[plain.labels[1]], "T-shirt/top"); /* 0 */
  CHECK_STR_EQ(plain.class_names[plain.labels[12345]], "Bag");   /* 8 */
  CHECK_STR_EQ(plain.class_names[plain.labels[59999]], "Sandal"); /* 5 */
  int sneaker = -1;
  CHECK(gf_dataset_class_index(&plain, "Sneaker", &sneaker, &err) == GF_OK);
  CHECK_INT_EQ(sneaker, 7);
  gf_dataset_free(&plain);

  /* dcgan-32: padded, the image sits at (2, 2) on black. */
  gf_data_options pad = popt;
  pad.height = pad.width = 32;
  pad.fit = GF_DATA_FIT_PAD;
  s = gf_dataset_load(&plain, &pad, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  CHECK_INT_EQ(plain.n, 60000);
  CHECK_INT_EQ(plain.h, 32);
  int pad_ok = 1;
  for (int64_t i = 0; i < plain.n; i += 997) {
    const uint8_t *a = plain.pixels + (size_t)i * 1024;
    const uint8_t *b = ds.pixels + (size_t)i * 784;
    for (int y = 0; y < 32; y++) {
      for (int x = 0; x < 32; x++) {
        int in = y >= 2 && y < 30 && x >= 2 && x < 30;
        int want = in ? b[(y - 2) * 28 + (x - 2)] : 0;
        if (a[y * 32 + x] != want) pad_ok = 0;
      }
    }
  }
  CHECK(pad_ok);
  gf_dataset_free(&plain);

  /* dcgan-32 resized: area upscaling keeps the mean intensity (the sum
   * grows by (32/28)^2 up to rounding). */
  gf_data_options rs = popt;
  rs.height = rs.width = 32;
  s = gf_dataset_load(&plain, &rs, &err);
  REQUIRE(s == GF_OK || (fprintf(stderr, "%s\n", err.msg), 0));
  for (size_t k = 0; k < sizeof KNOWN / sizeof KNOWN[0]; k++) {
    const uint8_t *a = plain.pixels + (size_t)KNOWN[k].index * 1024;
    long sum = 0;
    for (int i = 0; i < 1024; i++) sum += a[i];
    double want = (double)KNOWN[k].sum * 1024.0 / 784.0;
    CHECK_NEAR(sum, want, 0.01 * want + 600);
  }
  gf_dataset_free(&plain);

  tu_rmtree(tmp);
  free(tmp);
  gf_dataset_free(&ds);
  gf_dataset_free(&ds); /* free of an emptied dataset is fine */
  gf_dataset_free(NULL);
  return check_report();
}
