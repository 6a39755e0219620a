/* test_swd.c - the sliced Wasserstein distance (gf/swd.h): level sizes and
 * metric names, every bad shape and config as an error, SWD(A, A) == 0
 * exactly, determinism across thread counts, symmetry, monotone growth
 * under more noise / blur / brightness shift, agreement with a plain
 * double-precision reference written here from the definition (2-D
 * convolutions, qsort), a check that the comparison with the reference can
 * fail, and the real Fashion-MNIST training set (real vs real, vs uniform
 * noise, vs a blurred copy), with timings.
 *
 * Fashion-MNIST comes from the Debian package dataset-fashion-mnist
 * (/usr/share/datasets/fashion-mnist, or argv[1]); the test FAILS without
 * it. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "check.h"
#include "gf/philox.h"
#include "gf/swd.h"

#define FMNIST_DIR "/usr/share/datasets/fashion-mnist"

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static gf_swd_images f32_set(const float *data, int64_t n, int c, int s) {
  gf_swd_images im = {.data = data, .pixel = GF_SWD_F32, .n = n, .c = c,
                      .h = s, .w = s};
  return im;
}

static gf_swd_images u8_set(const uint8_t *data, int64_t n, int c, int s) {
  gf_swd_images im = {.data = data, .pixel = GF_SWD_U8, .n = n, .c = c,
                      .h = s, .w = s};
  return im;
}

static void uniform(uint64_t seed, uint32_t purpose, float *out, size_t n) {
  gf_philox_stream s = {.key = {(uint32_t)seed, (uint32_t)(seed >> 32)},
                        .ctr_hi = {purpose, 0}, .offset = 0};
  gf_philox_uniform(&s, out, n);
}

/* n images of side s, c channels, from one distribution: each image the sum
 * of 3 Gaussian blobs of random centre, width and sign plus N(0, 0.02^2)
 * noise, clipped to [-1, 1]. Image i depends only on (seed, i), so disjoint
 * index ranges are independent draws. */
static float *blobs(uint64_t seed, int64_t first, int64_t n, int c, int s) {
  float *img = malloc((size_t)n * c * s * s * sizeof *img);
  REQUIRE(img);
  for (int64_t i = 0; i < n; i++) {
    float u[12];
    gf_philox_stream ps = {.key = {(uint32_t)seed, 7}, .ctr_hi = {1, 0},
                           .offset = (uint64_t)(first + i) * 12};
    gf_philox_uniform(&ps, u, 12);
    float noise[3 * 64 * 64];
    gf_philox_stream ns = {.key = {(uint32_t)seed, 7}, .ctr_hi = {2, 0},
                           .offset = (uint64_t)(first + i) * 3 * 64 * 64};
    gf_philox_normal(&ns, noise, (size_t)c * s * s, 0.f, 0.02f);
    for (int k = 0; k < c; k++)
      for (int y = 0; y < s; y++)
        for (int x = 0; x < s; x++) {
          double v = -0.6;
          for (int b = 0; b < 3; b++) {
            double cx = u[4 * b] * s, cy = u[4 * b + 1] * s;
            double r = 1.5 + 0.2 * s * u[4 * b + 2];
            double amp = (b == 2 ? -0.6 : 1.0) * (0.5 + u[4 * b + 3]);
            if (k == 1) amp *= 0.7;
            if (k == 2) amp *= 0.4;
            v += amp * exp(-((x - cx) * (x - cx) + (y - cy) * (y - cy)) /
                           (2 * r * r));
          }
          v += noise[(k * s + y) * s + x];
          img[((i * c + k) * s + y) * s + x] =
              (float)(v < -1 ? -1 : v > 1 ? 1 : v);
        }
  }
  return img;
}

/* Box blur of radius r (mirrored borders) of every plane. */
static float *box_blur(const float *src, int64_t planes, int s, int r) {
  float *dst = malloc((size_t)planes * s * s * sizeof *dst);
  REQUIRE(dst);
  for (int64_t p = 0; p < planes; p++)
    for (int y = 0; y < s; y++)
      for (int x = 0; x < s; x++) {
        double acc = 0;
        for (int dy = -r; dy <= r; dy++)
          for (int dx = -r; dx <= r; dx++) {
            int yy = y + dy, xx = x + dx;
            yy = yy < 0 ? -yy : yy >= s ? 2 * s - 2 - yy : yy;
            xx = xx < 0 ? -xx : xx >= s ? 2 * s - 2 - xx : xx;
            acc += src[(p * s + yy) * s + xx];
          }
        dst[(p * s + y) * s + x] = (float)(acc / ((2 * r + 1) * (2 * r + 1)));
      }
  return dst;
}

static double swd_avg(const gf_swd_images *a, const gf_swd_images *b,
                      const gf_swd_config *cfg) {
  gf_swd_result r;
  gf_err err = {0};
  gf_status st = gf_swd(a, b, cfg, &r, &err);
  CHECKF(st == GF_OK, "%s", err.msg);
  return st == GF_OK ? r.avg : NAN;
}

/* ---- levels, names, errors ---------------------------------------------- */

static void test_levels(void) {
  int sz[GF_SWD_MAX_LEVELS];
  CHECK_INT_EQ(gf_swd_levels(28, 14, sz), 2);
  CHECK(sz[0] == 28 && sz[1] == 14);
  CHECK_INT_EQ(gf_swd_levels(32, 14, sz), 2);
  CHECK(sz[0] == 32 && sz[1] == 16);
  CHECK_INT_EQ(gf_swd_levels(64, 14, sz), 3);
  CHECK(sz[0] == 64 && sz[1] == 32 && sz[2] == 16);
  CHECK_INT_EQ(gf_swd_levels(64, 16, sz), 3);
  CHECK_INT_EQ(gf_swd_levels(28, 7, sz), 3);
  CHECK(sz[2] == 7);
  CHECK_INT_EQ(gf_swd_levels(29, 14, sz), 2); /* ceil(29 / 2) = 15 */
  CHECK(sz[1] == 15);
  CHECK_INT_EQ(gf_swd_levels(13, 14, sz), 0);
  CHECK_INT_EQ(gf_swd_levels(28, 6, sz), 0);
  gf_swd_config d = gf_swd_config_default();
  CHECK_INT_EQ(d.min_level, 14);
  CHECK_INT_EQ(d.patches_per_image, 32);
  CHECK_INT_EQ(d.dirs_per_repeat * d.repeats, 512);

  gf_swd_result r = {.levels = 2, .size = {28, 14}};
  char buf[32];
  CHECK_STR_EQ(gf_swd_metric_name(&r, 0, buf, sizeof buf), "swd/28");
  CHECK_STR_EQ(gf_swd_metric_name(&r, 1, buf, sizeof buf), "swd/14");
  CHECK_STR_EQ(gf_swd_metric_name(&r, -1, buf, sizeof buf), "swd/avg");
  CHECK(gf_swd_metric_name(&r, 2, buf, sizeof buf) == NULL);
  CHECK(gf_swd_metric_name(&r, 0, buf, 6) == NULL); /* "swd/28" needs 7 */
}

static void expect_einval(const gf_swd_images *a, const gf_swd_images *b,
                          const gf_swd_config *cfg, const char *what,
                          const char *needle) {
  gf_swd_result r;
  gf_err err = {0};
  gf_status st = gf_swd(a, b, cfg, &r, &err);
  CHECKF(st == GF_EINVAL, "%s: got %s", what, gf_status_name(st));
  CHECKF(err.code == GF_EINVAL && strstr(err.msg, needle), "%s: msg \"%s\"",
         what, err.msg);
}

static void test_errors(void) {
  float *img = blobs(1, 0, 4, 3, 28);
  gf_swd_images a = f32_set(img, 4, 1, 28), b = a;
  gf_swd_config cfg = gf_swd_config_default();
  cfg.patches_per_image = 2;
  cfg.dirs_per_repeat = 4;
  cfg.repeats = 1;
  CHECK(!isnan(swd_avg(&a, &b, &cfg))); /* the baseline is accepted */

  gf_swd_images x = a;
  x.c = 2;
  expect_einval(&x, &b, &cfg, "2 channels", "channels");
  x = a;
  x.w = 27;
  expect_einval(&x, &b, &cfg, "non-square", "square");
  x = a;
  x.h = x.w = 12;
  expect_einval(&x, &b, &cfg, "too small", "12 x 12");
  x = a;
  x.n = 0;
  expect_einval(&x, &b, &cfg, "no images", "0 images");
  x = a;
  x.data = NULL;
  expect_einval(&a, &x, &cfg, "no data", "set B has no pixel data");
  x = a;
  x.pixel = (gf_swd_pixel)7;
  expect_einval(&x, &b, &cfg, "pixel type", "pixel type");
  x = a;
  x.n = 3;
  expect_einval(&a, &x, &cfg, "different n", "sets differ");
  x = a;
  x.c = 3;
  expect_einval(&a, &x, &cfg, "different c", "sets differ");
  x = a;
  x.h = x.w = 14;
  expect_einval(&a, &x, &cfg, "different size", "sets differ");
  expect_einval(NULL, &b, &cfg, "NULL set", "set A is NULL");

  gf_swd_config bad = cfg;
  bad.patches_per_image = 0;
  expect_einval(&a, &b, &bad, "patches", "patches_per_image");
  bad = cfg;
  bad.repeats = 0;
  expect_einval(&a, &b, &bad, "repeats", "directions");
  bad = cfg;
  bad.min_level = 6;
  expect_einval(&a, &b, &bad, "min_level", "min_level");
  bad = cfg;
  bad.threads = -1;
  expect_einval(&a, &b, &bad, "threads", "threads");
  bad = cfg;
  bad.norm = (gf_swd_norm)9;
  expect_einval(&a, &b, &bad, "norm", "normalization");

  gf_swd_result r;
  gf_err err = {0};
  CHECK(gf_swd(&a, &b, &cfg, NULL, &err) == GF_EINVAL);
  CHECK(gf_swd(&a, &b, &cfg, NULL, NULL) == GF_EINVAL); /* NULL err is fine */

  /* A non-finite pixel in the third image of B. */
  float *nan_img = malloc(4 * 28 * 28 * sizeof *nan_img);
  REQUIRE(nan_img);
  memcpy(nan_img, img, 4 * 28 * 28 * sizeof *nan_img);
  nan_img[2 * 28 * 28 + 100] = NAN;
  x = f32_set(nan_img, 4, 1, 28);
  expect_einval(&a, &x, &cfg, "NaN", "image 2 of set B has a non-finite");
  nan_img[2 * 28 * 28 + 100] = INFINITY;
  expect_einval(&x, &a, &cfg, "Inf", "image 2 of set A has a non-finite");
  CHECK(gf_swd(&a, &x, &cfg, &r, NULL) == GF_EINVAL);
  free(nan_img);
  free(img);
}

/* ---- properties --------------------------------------------------------- */

static void test_identity_and_determinism(void) {
  const int n = 64, s = 32;
  float *img = blobs(2, 0, n, 3, s);
  gf_swd_config cfg = gf_swd_config_default();
  cfg.seed = 42;
  gf_swd_result r;
  gf_err err = {0};
  for (int c = 1; c <= 3; c += 2) {
    gf_swd_images a = f32_set(img, n, c, s);
    REQUIRE(gf_swd(&a, &a, &cfg, &r, &err) == GF_OK);
    CHECK_INT_EQ(r.levels, 2);
    CHECK(r.size[0] == 32 && r.size[1] == 16);
    CHECK(r.swd[0] == 0.0 && r.swd[1] == 0.0 && r.avg == 0.0);
  }

  /* uint8 pixels map exactly as the data loader maps them. */
  uint8_t *u8 = malloc((size_t)n * s * s);
  float *as_f = malloc((size_t)n * s * s * sizeof *as_f);
  REQUIRE(u8 && as_f);
  for (int64_t q = 0; q < (int64_t)n * s * s; q++) {
    u8[q] = (uint8_t)lrintf((img[q] + 1.f) * 127.5f);
    as_f[q] = ((float)u8[q] - 127.5f) / 127.5f;
  }
  gf_swd_images au = u8_set(u8, n, 1, s), af = f32_set(as_f, n, 1, s);
  REQUIRE(gf_swd(&au, &af, &cfg, &r, &err) == GF_OK);
  CHECK(r.avg == 0.0);

  /* Bit-identical for any thread count; a new seed moves the estimate. */
  float *other = blobs(2, n, n, 3, s);
  gf_swd_images a = f32_set(img, n, 3, s), b = f32_set(other, n, 3, s);
  gf_swd_result r1, rt;
  cfg.threads = 1;
  REQUIRE(gf_swd(&a, &b, &cfg, &r1, &err) == GF_OK);
  CHECK(r1.avg > 0.0);
  for (int t = 2; t <= 5; t += 3) {
    cfg.threads = t;
    REQUIRE(gf_swd(&a, &b, &cfg, &rt, &err) == GF_OK);
    CHECKF(memcmp(&r1, &rt, sizeof r1) == 0, "threads=%d changed the result", t);
  }
  cfg.threads = 0;
  REQUIRE(gf_swd(&a, &b, &cfg, &rt, &err) == GF_OK);
  CHECK(memcmp(&r1, &rt, sizeof r1) == 0);
  cfg.seed = 43;
  REQUIRE(gf_swd(&a, &b, &cfg, &rt, &err) == GF_OK);
  CHECK(rt.avg != r1.avg);
  CHECK(fabs(rt.avg - r1.avg) < 0.5 * r1.avg); /* same figure, new draws */

  /* Symmetric within rounding (only the order of the joint sums moves). */
  cfg.seed = 42;
  REQUIRE(gf_swd(&b, &a, &cfg, &rt, &err) == GF_OK);
  for (int l = 0; l < r1.levels; l++)
    CHECK_NEAR(rt.swd[l], r1.swd[l], 1e-4 * r1.swd[l]);
  free(u8);
  free(as_f);
  free(other);
  free(img);
}

/* Two disjoint halves of one distribution are close; more noise, more blur
 * and a larger brightness shift of the second set each move it further. */
static void test_monotone(void) {
  const int n = 300, s = 28;
  const int64_t px = (int64_t)n * s * s;
  float *a_img = blobs(3, 0, n, 1, s);
  float *b_img = blobs(3, n, n, 1, s);
  gf_swd_images a = f32_set(a_img, n, 1, s), b = f32_set(b_img, n, 1, s);
  gf_swd_config cfg = gf_swd_config_default();
  cfg.threads = 2;
  double base = swd_avg(&a, &b, &cfg);
  printf("swd synthetic: halves %.2f\n", base);

  float *work = malloc((size_t)px * sizeof *work);
  float *u = malloc((size_t)px * sizeof *u);
  REQUIRE(work && u);
  uniform(9, 3, u, (size_t)px);

  double prev = base;
  const float noise[4] = {0.05f, 0.1f, 0.2f, 0.4f};
  for (int k = 0; k < 4; k++) {
    for (int64_t q = 0; q < px; q++)
      work[q] = b_img[q] + noise[k] * (2.f * u[q] - 1.f) * 1.7320508f;
    double v = swd_avg(&a, &(gf_swd_images){.data = work, .pixel = GF_SWD_F32,
                                            .n = n, .c = 1, .h = s, .w = s},
                       &cfg);
    printf("swd synthetic: noise %.2f -> %.2f\n", (double)noise[k], v);
    CHECKF(v > prev, "noise %.2f: %.3f not above %.3f", (double)noise[k], v,
           prev);
    prev = v;
  }
  prev = base;
  for (int r = 1; r <= 3; r++) {
    float *bl = box_blur(b_img, n, s, r);
    gf_swd_images bb = f32_set(bl, n, 1, s);
    double v = swd_avg(&a, &bb, &cfg);
    printf("swd synthetic: blur radius %d -> %.2f\n", r, v);
    CHECKF(v > prev, "blur %d: %.3f not above %.3f", r, v, prev);
    prev = v;
    free(bl);
  }
  prev = base;
  const float shift[3] = {0.1f, 0.2f, 0.4f};
  for (int k = 0; k < 3; k++) {
    for (int64_t q = 0; q < px; q++) work[q] = b_img[q] + shift[k];
    gf_swd_images bs = f32_set(work, n, 1, s);
    double v = swd_avg(&a, &bs, &cfg);
    printf("swd synthetic: shift %.1f -> %.2f\n", (double)shift[k], v);
    CHECKF(v > prev, "shift %.1f: %.3f not above %.3f", (double)shift[k], v,
           prev);
    prev = v;
    if (k == 2) {
      /* Karras's per-set normalization cannot see a pure shift. */
      gf_swd_config ps = cfg;
      ps.norm = GF_SWD_NORM_PER_SET;
      double vp = swd_avg(&a, &bs, &ps), bp = swd_avg(&a, &b, &ps);
      printf("swd synthetic: per-set norm: shift 0.4 %.2f, halves %.2f\n", vp, bp);
      CHECK_NEAR(vp, bp, 1e-3 * bp + 1e-9);
    }
  }
  CHECKF(base * 3 < prev, "halves %.3f vs shift 0.4 %.3f", base, prev);
  free(work);
  free(u);
  free(a_img);
  free(b_img);
}

/* ---- the double-precision reference ------------------------------------- */

static int ref_mirror(int i, int s) { return i < 0 ? -i : i >= s ? 2 * s - 2 - i : i; }

/* 2-D convolution with the 5x5 kernel outer([1,4,6,4,1]) / 256 * gain. */
static void ref_conv(const double *src, int s, double gain, double *dst) {
  static const double k[5] = {1, 4, 6, 4, 1};
  for (int y = 0; y < s; y++)
    for (int x = 0; x < s; x++) {
      double acc = 0;
      for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
          acc += k[i] * k[j] / 256.0 * gain *
                 src[ref_mirror(y + i - 2, s) * s + ref_mirror(x + j - 2, s)];
      dst[y * s + x] = acc;
    }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* SWD of two float sets from the header's definition, in double, with
 * plain loops. `per_set` picks the normalization. */
static void ref_swd(const float *sets[2], int n, int c, int s,
                    const gf_swd_config *cfg, int per_set, gf_swd_result *out) {
  int sizes[GF_SWD_MAX_LEVELS];
  int levels = gf_swd_levels(s, cfg->min_level, sizes);
  int P = cfg->patches_per_image, D = 49 * c, m = n * P;
  int R = cfg->repeats * cfg->dirs_per_repeat;
  double *desc[2] = {malloc(sizeof(double) * m * D), malloc(sizeof(double) * m * D)};
  double *g = malloc(sizeof(double) * s * s), *blur = malloc(sizeof(double) * s * s);
  double *next = malloc(sizeof(double) * s * s), *band = malloc(sizeof(double) * s * s);
  double *proj[2] = {malloc(sizeof(double) * m), malloc(sizeof(double) * m)};
  float *dirs = malloc(sizeof(float) * R * D);
  REQUIRE(desc[0] && desc[1] && g && blur && next && band && proj[0] && proj[1] && dirs);
  out->levels = levels;
  out->avg = 0;
  for (int l = 0; l < levels; l++) {
    int sl = sizes[l];
    out->size[l] = sl;
    for (int set = 0; set < 2; set++)
      for (int i = 0; i < n; i++)
        for (int k = 0; k < c; k++) {
          int cur = s;
          for (int q = 0; q < s * s; q++) g[q] = sets[set][(i * c + k) * s * s + q];
          for (int q = 0; q < l; q++) { /* Gaussian of level l */
            ref_conv(g, cur, 1.0, blur);
            int t = (cur + 1) / 2;
            for (int y = 0; y < t; y++)
              for (int x = 0; x < t; x++) g[y * t + x] = blur[2 * y * cur + 2 * x];
            cur = t;
          }
          for (int q = 0; q < sl * sl; q++) band[q] = g[q];
          if (l < levels - 1) {
            ref_conv(g, sl, 1.0, blur);
            int t = (sl + 1) / 2;
            for (int q = 0; q < sl * sl; q++) next[q] = 0;
            for (int y = 0; y < t; y++)
              for (int x = 0; x < t; x++) next[2 * y * sl + 2 * x] = blur[2 * y * sl + 2 * x];
            ref_conv(next, sl, 4.0, blur);
            for (int q = 0; q < sl * sl; q++) band[q] -= blur[q];
          }
          for (int p = 0; p < P; p++) {
            uint32_t w[2];
            gf_philox_stream ps = {
                .key = {(uint32_t)cfg->seed, (uint32_t)(cfg->seed >> 32)},
                .ctr_hi = {6u | (0x100u + (uint32_t)l) << 8, 0},
                .offset = 2 * ((uint64_t)i * P + p)};
            gf_philox_u32(&ps, w, 2);
            int x0 = (int)(w[0] % (uint32_t)(sl - 6));
            int y0 = (int)(w[1] % (uint32_t)(sl - 6));
            for (int dy = 0; dy < 7; dy++)
              for (int dx = 0; dx < 7; dx++)
                desc[set][(i * P + p) * D + (k * 7 + dy) * 7 + dx] =
                    band[(y0 + dy) * sl + x0 + dx];
          }
        }
    for (int k = 0; k < c; k++) {
      for (int set = 0; set < 2; set++) {
        if (!per_set && set == 1) break;
        double sum = 0, ss = 0, cnt = 0;
        for (int t = per_set ? set : 0; t <= (per_set ? set : 1); t++)
          for (int q = 0; q < m; q++)
            for (int d = 49 * k; d < 49 * (k + 1); d++) { sum += desc[t][q * D + d]; cnt++; }
        double mu = sum / cnt;
        for (int t = per_set ? set : 0; t <= (per_set ? set : 1); t++)
          for (int q = 0; q < m; q++)
            for (int d = 49 * k; d < 49 * (k + 1); d++)
              ss += (desc[t][q * D + d] - mu) * (desc[t][q * D + d] - mu);
        double sd = sqrt(ss / cnt);
        if (sd == 0) sd = 1;
        for (int t = per_set ? set : 0; t <= (per_set ? set : 1); t++)
          for (int q = 0; q < m; q++)
            for (int d = 49 * k; d < 49 * (k + 1); d++)
              desc[t][q * D + d] = (desc[t][q * D + d] - mu) / sd;
      }
    }
    gf_philox_stream ds = {
        .key = {(uint32_t)cfg->seed, (uint32_t)(cfg->seed >> 32)},
        .ctr_hi = {6u | (0x200u + (uint32_t)l) << 8, 0}, .offset = 0};
    gf_philox_normal(&ds, dirs, (size_t)R * D, 0.f, 1.f);
    double total = 0;
    for (int r = 0; r < R; r++) {
      double norm = 0;
      for (int d = 0; d < D; d++) norm += (double)dirs[r * D + d] * dirs[r * D + d];
      norm = sqrt(norm);
      for (int set = 0; set < 2; set++) {
        for (int q = 0; q < m; q++) {
          double acc = 0;
          for (int d = 0; d < D; d++) acc += dirs[r * D + d] / norm * desc[set][q * D + d];
          proj[set][q] = acc;
        }
        qsort(proj[set], (size_t)m, sizeof(double), cmp_double);
      }
      double sum = 0;
      for (int q = 0; q < m; q++) sum += fabs(proj[0][q] - proj[1][q]);
      total += sum / m;
    }
    out->swd[l] = total / R * 1e3;
    out->avg += out->swd[l] / levels;
  }
  free(desc[0]); free(desc[1]); free(g); free(blur); free(next); free(band);
  free(proj[0]); free(proj[1]); free(dirs);
}

static int close_to_ref(const gf_swd_result *got, const gf_swd_result *ref) {
  if (got->levels != ref->levels) return 0;
  for (int l = 0; l < ref->levels; l++)
    if (got->size[l] != ref->size[l] ||
        fabs(got->swd[l] - ref->swd[l]) > 1e-4 * ref->swd[l] + 1e-6)
      return 0;
  return fabs(got->avg - ref->avg) <= 1e-4 * ref->avg + 1e-6;
}

static void test_reference(void) {
  /* Gray 28 x 28 with three levels (28, 14, 7), joint and per-set; RGB
   * 16 x 16 (16, 8). Small enough for the plain loops. */
  struct { int n, c, s, min_level, P, dirs, rep; uint64_t seed; } cases[] = {
      {6, 1, 28, 7, 5, 9, 2, 11},   /* 18 directions: 2 blocks of 8 + 2 */
      {5, 3, 16, 8, 4, 11, 1, 0x123456789abcdefULL}, /* 8 + 3 */
  };
  for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
    int n = cases[t].n, c = cases[t].c, s = cases[t].s;
    float *a = blobs(100 + t, 0, n, c, s), *b = blobs(100 + t, n, n, c, s);
    for (int q = 0; q < n * c * s * s; q += 7) b[q] = -b[q]; /* differ more */
    gf_swd_config cfg = gf_swd_config_default();
    cfg.min_level = cases[t].min_level;
    cfg.patches_per_image = cases[t].P;
    cfg.dirs_per_repeat = cases[t].dirs;
    cfg.repeats = cases[t].rep;
    cfg.seed = cases[t].seed;
    cfg.threads = 2;
    for (int per_set = 0; per_set <= 1; per_set++) {
      cfg.norm = per_set ? GF_SWD_NORM_PER_SET : GF_SWD_NORM_JOINT;
      gf_swd_images ia = f32_set(a, n, c, s), ib = f32_set(b, n, c, s);
      gf_swd_result got, ref, wrong;
      gf_err err = {0};
      REQUIRE(gf_swd(&ia, &ib, &cfg, &got, &err) == GF_OK);
      const float *sets[2] = {a, b};
      ref_swd(sets, n, c, s, &cfg, per_set, &ref);
      for (int l = 0; l < ref.levels; l++)
        printf("swd reference case %zu norm %d level %d: %.6f vs %.6f\n", t,
               per_set, ref.size[l], got.swd[l], ref.swd[l]);
      CHECKF(close_to_ref(&got, &ref), "case %zu norm %d", t, per_set);
      CHECK(ref.avg > 0);
      /* The comparison can fail: the reference with the other
       * normalization is a different figure. */
      ref_swd(sets, n, c, s, &cfg, !per_set, &wrong);
      CHECKF(!close_to_ref(&got, &wrong), "case %zu: norms indistinguishable",
             t);
    }
    free(a);
    free(b);
  }
}

/* ---- Fashion-MNIST ------------------------------------------------------ */

/* The first `want` images of DIR/train-images-idx3-ubyte.gz; NULL (and a
 * failed check) when missing or malformed. */
static uint8_t *read_fmnist(const char *dir, int want) {
  char path[4096];
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  gzFile f = gzopen(path, "rb");
  CHECKF(f != NULL,
         "%s is missing: install the Debian package dataset-fashion-mnist", path);
  if (!f) return NULL;
  unsigned char h[16];
  int ok = gzread(f, h, 16) == 16;
  uint32_t magic = ok ? (uint32_t)h[0] << 24 | h[1] << 16 | h[2] << 8 | h[3] : 0;
  uint32_t cnt = (uint32_t)h[4] << 24 | h[5] << 16 | h[6] << 8 | h[7];
  CHECKF(ok && magic == 0x803 && h[11] == 28 && h[15] == 28 && cnt >= (uint32_t)want,
         "%s: not an IDX file of >= %d 28x28 images", path, want);
  uint8_t *px = NULL;
  if (ok && magic == 0x803 && cnt >= (uint32_t)want) {
    px = malloc((size_t)want * 784);
    REQUIRE(px);
    if (gzread(f, px, (unsigned)want * 784) != want * 784) {
      CHECKF(0, "%s: truncated", path);
      free(px);
      px = NULL;
    }
  }
  gzclose(f);
  return px;
}

static void test_fashion_mnist(const char *dir) {
  const int n = 2000, s = 28;
  const size_t px_n = (size_t)n * 784;
  uint8_t *px = read_fmnist(dir, 2 * n);
  if (!px) return;
  const uint8_t *pb = px + px_n;
  gf_swd_images real_a = u8_set(px, n, 1, s), real_b = u8_set(pb, n, 1, s);

  /* Uniform noise images, and B blurred (3 x 3 box, as floats). */
  uint8_t *noise = malloc(px_n);
  float *u = malloc(px_n * sizeof *u), *bf = malloc(px_n * sizeof *bf);
  REQUIRE(noise && u && bf);
  uniform(77, 5, u, px_n);
  for (size_t q = 0; q < px_n; q++) {
    noise[q] = (uint8_t)(u[q] * 256.f);
    bf[q] = ((float)pb[q] - 127.5f) / 127.5f;
  }
  float *blurred = box_blur(bf, n, s, 1);
  gf_swd_images noise_set = u8_set(noise, n, 1, s);
  gf_swd_images blur_set = f32_set(blurred, n, 1, s);

  gf_swd_config cfg = gf_swd_config_default();
  gf_swd_result rr, rn, rb;
  gf_err err = {0};
  double t0 = now_s();
#ifndef __SANITIZE_ADDRESS__ /* a timing only, and slow under ASan */
  cfg.threads = 1;
  REQUIRE(gf_swd(&real_a, &real_b, &cfg, &rr, &err) == GF_OK);
#endif
  double t1 = now_s();
  cfg.threads = 2;
  REQUIRE(gf_swd(&real_a, &real_b, &cfg, &rr, &err) == GF_OK);
  double t2 = now_s();
  REQUIRE(gf_swd(&real_a, &noise_set, &cfg, &rn, &err) == GF_OK);
  REQUIRE(gf_swd(&real_a, &blur_set, &cfg, &rb, &err) == GF_OK);
  printf("swd fashion-mnist 2x%d: time %.3f s (1 thread), %.3f s (2 threads)\n",
         n, t1 - t0, t2 - t1);
  const char *what[3] = {"real vs real", "real vs noise", "real vs blur"};
  const gf_swd_result *res[3] = {&rr, &rn, &rb};
  for (int k = 0; k < 3; k++) {
    printf("swd fashion-mnist %-13s:", what[k]);
    for (int l = 0; l < res[k]->levels; l++)
      printf(" swd/%d %.2f", res[k]->size[l], res[k]->swd[l]);
    printf(" swd/avg %.2f\n", res[k]->avg);
  }
  CHECK_INT_EQ(rr.levels, 2);
  CHECK(rr.size[0] == 28 && rr.size[1] == 14);
  CHECK(rr.avg > 0);
  CHECKF(rr.avg * 10 < rn.avg, "real %.2f vs noise %.2f", rr.avg, rn.avg);
  CHECKF(rr.avg * 5 < rb.avg, "real %.2f vs blur %.2f", rr.avg, rb.avg);
  for (int l = 0; l < rr.levels; l++) CHECK(rr.swd[l] < rn.swd[l]);
  CHECK(rr.swd[0] * 5 < rb.swd[0]); /* blur shows at the finest level */
  free(blurred);
  free(bf);
  free(u);
  free(noise);
  free(px);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : FMNIST_DIR;
  test_levels();
  test_errors();
  test_identity_and_determinism();
  test_reference();
  test_monotone();
  test_fashion_mnist(dir);
  return check_report();
}
