/* test_data_mirror.c - x-flip augmentation of data.h (gf_data_order.mirror,
 * StyleGAN2-ADA's --mirror=1): the epoch size is doubled (and refused past
 * 2^31 - 1 images); every epoch shows every image exactly twice, once as
 * it is and once flipped left-right, as pixels and labels; a flipped sample
 * is its image reversed along W in every row of every channel (1 and 3
 * channels, non-square); the order is pinned to the golden permutation of
 * 2n, is the same for 1..5 ranks, by seek and by iteration, through the
 * loader thread; and an order without mirror is the order of before. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/data.h"

/* n images of c x h x w pseudo-random bytes (a fixed LCG: distinct images,
 * rows that are not palindromes), labels i % 7 or none. */
static void make_ds(gf_dataset *ds, uint32_t n, int c, int h, int w,
                    bool labels) {
  memset(ds, 0, sizeof *ds);
  const size_t stride = (size_t)c * h * w;
  ds->pixels = malloc(n * stride);
  ds->labels = labels ? malloc(n) : NULL;
  REQUIRE(ds->pixels && (!labels || ds->labels));
  uint32_t x = 2024u + (uint32_t)(c * 131 + h * 17 + w);
  for (size_t i = 0; i < n * stride; i++) {
    x = x * 1103515245u + 12345u;
    ds->pixels[i] = (uint8_t)(x >> 16);
  }
  for (uint32_t i = 0; labels && i < n; i++) ds->labels[i] = (uint8_t)(i % 7);
  ds->n = n;
  ds->c = c;
  ds->h = h;
  ds->w = w;
  ds->num_classes = labels ? 7 : 0;
}

static int is_perm(const uint32_t *p, uint32_t n) {
  uint8_t *seen = calloc(n, 1);
  int ok = seen != NULL;
  for (uint32_t i = 0; ok && i < n; i++) {
    if (p[i] >= n || seen[p[i]]) ok = 0;
    else seen[p[i]] = 1;
  }
  free(seen);
  return ok;
}

/* 1 when b is a reversed along W: b[k][y][x] == a[k][y][w-1-x] for every
 * channel k and row y (rows = c * h planar rows). */
static int is_xflip(const float *a, const float *b, int rows, int w) {
  for (int r = 0; r < rows; r++)
    for (int x = 0; x < w; x++)
      if (b[r * w + x] != a[r * w + (w - 1 - x)]) return 0;
  return 1;
}

/* The whole global batch of `step` straight from permutations of S
 * samples per epoch. */
static void global_batch(uint64_t seed, uint64_t step, uint64_t batch,
                         uint32_t S, uint32_t *out) {
  gf_err err = {0};
  uint32_t *perm = malloc(S * sizeof *perm);
  REQUIRE(perm);
  for (uint64_t j = 0; j < batch; j++) {
    uint64_t p = step * batch + j;
    REQUIRE(gf_data_permutation(seed, p / S, S, perm, &err) == GF_OK);
    out[j] = perm[p % S];
  }
  free(perm);
}

static void test_epoch_samples(void) {
  gf_err err = {0};
  uint64_t s = 0;
  CHECK(gf_data_epoch_samples(10, false, &s, &err) == GF_OK);
  CHECK_INT_EQ(s, 10);
  CHECK(gf_data_epoch_samples(10, true, &s, &err) == GF_OK);
  CHECK_INT_EQ(s, 20);
  CHECK(gf_data_epoch_samples(GF_DATA_MAX_IMAGES, true, &s, &err) == GF_OK);
  CHECK_INT_EQ(s, 0xfffffffeull); /* the largest index 2^32 - 3 fits */
  CHECK(gf_data_epoch_samples(1ull << 31, false, &s, &err) == GF_OK);
  CHECK_INT_EQ(s, 1ull << 31); /* without mirror: arithmetic as before */
  s = 7;
  CHECK(gf_data_epoch_samples(1ull << 31, true, &s, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "mirror") != NULL);
  CHECK_INT_EQ(s, 7); /* untouched on failure */

  /* An iterator refuses a dataset it cannot index, before allocating
   * (the pixels are never read: one byte stands for 2^31 images). */
  uint8_t byte = 0;
  gf_dataset huge;
  memset(&huge, 0, sizeof huge);
  huge.pixels = &byte;
  huge.n = (int64_t)1 << 31;
  huge.c = huge.h = huge.w = 1;
  gf_data_order o = {.seed = 1, .batch = 4, .world_size = 1, .rank = 0,
                     .mirror = true};
  gf_data_iter it;
  CHECK(gf_data_iter_init(&it, &huge, &o, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "images") != NULL);
  gf_data_iter_free(&it);
  gf_data_loader *ld = NULL;
  CHECK(gf_data_loader_start(&ld, &huge, &o, 0, 2, &err) == GF_EINVAL);
  CHECK(ld == NULL);
}

/* The flip of gf_data_fill, on 1- and 3-channel non-square data (and a
 * one-pixel-wide image, where flipping changes nothing). */
static void check_flip(int c, int h, int w, bool labels) {
  enum { N = 6 };
  gf_dataset ds;
  make_ds(&ds, N, c, h, w, labels);
  const int rows = c * h;
  const size_t stride = (size_t)rows * w;
  uint32_t idx[2 * N];
  for (uint32_t i = 0; i < 2 * N; i++) idx[i] = i;
  float *im = malloc(2 * N * stride * sizeof *im);
  int32_t lab[2 * N];
  REQUIRE(im);
  gf_data_fill(&ds, idx, 2 * N, im, lab);
  int bad_plain = 0, bad_flip = 0, bad_label = 0, sym = 0;
  for (uint32_t i = 0; i < N; i++) {
    const float *plain = im + i * stride, *flip = im + (N + i) * stride;
    for (size_t k = 0; k < stride; k++)
      bad_plain += plain[k] !=
                   ((float)ds.pixels[i * stride + k] - 127.5f) / 127.5f;
    bad_flip += !is_xflip(plain, flip, rows, w);
    /* The checker fires: the image as it is is not its own flip. */
    sym += is_xflip(plain, plain, rows, w);
    int32_t want = labels ? (int32_t)(i % 7) : -1;
    bad_label += lab[i] != want || lab[N + i] != want;
  }
  CHECKF(bad_plain == 0, "c=%d h=%d w=%d: %d pixels of plain samples", c, h,
         w, bad_plain);
  CHECKF(bad_flip == 0, "c=%d h=%d w=%d: %d flipped samples are not flips",
         c, h, w, bad_flip);
  CHECK_INT_EQ(bad_label, 0);
  if (w > 1) CHECK_INT_EQ(sym, 0);
  else CHECK_INT_EQ(sym, N); /* w = 1: the flip is the identity */

  /* Mixed and repeated indices fill each slot on its own; labels optional. */
  uint32_t mix[4] = {N + 2, 2, N + 2, N - 1};
  float *m = malloc(4 * stride * sizeof *m);
  REQUIRE(m);
  gf_data_fill(&ds, mix, 4, m, NULL);
  CHECK(memcmp(m, im + (N + 2) * stride, stride * sizeof *m) == 0);
  CHECK(memcmp(m + stride, im + 2 * stride, stride * sizeof *m) == 0);
  CHECK(memcmp(m + 2 * stride, im + (N + 2) * stride, stride * sizeof *m) == 0);
  CHECK(memcmp(m + 3 * stride, im + (N - 1) * stride, stride * sizeof *m) == 0);
  free(m);
  free(im);
  gf_dataset_free(&ds);
}

static void test_flip(void) {
  check_flip(1, 3, 7, true);
  check_flip(3, 4, 5, true);
  check_flip(3, 8, 8, false);
  check_flip(1, 2, 2, false);
  check_flip(3, 2, 1, true);
}

/* Every epoch of a mirror order is a permutation of the 2n samples, so
 * each image appears exactly twice: once as it is (s = i) and once flipped
 * (s = n + i) - checked on the indices and on the filled pixels. */
static void test_epoch_coverage(void) {
  gf_err err = {0};
  enum { N = 10, B = 7, EPOCHS = 4, STEPS = (2 * N * EPOCHS) / B + 1 };
  gf_dataset ds;
  make_ds(&ds, N, 3, 4, 5, true);
  const size_t stride = 60;
  gf_data_order o = {.seed = 3, .batch = B, .world_size = 1, .rank = 0,
                     .mirror = true};
  gf_data_iter it;
  REQUIRE(gf_data_iter_init(&it, &ds, &o, &err) == GF_OK);
  CHECK_INT_EQ(it.samples, 2 * N);
  static uint32_t stream[STEPS * B];
  for (int s = 0; s < STEPS; s++)
    CHECK(gf_data_iter_next_indices(&it, stream + s * B, NULL, &err) == GF_OK);
  gf_data_iter_free(&it);

  /* The reference: the permutation of 2n per epoch (data.h "Mirror"). */
  static uint32_t want[STEPS * B];
  for (int s = 0; s < STEPS; s++) global_batch(3, (uint64_t)s, B, 2 * N, want + s * B);
  CHECK(memcmp(stream, want, sizeof want) == 0);

  /* Reference pixels of every image, as it is and flipped. */
  float *ref = malloc(N * stride * sizeof *ref);
  float *ep = malloc(2 * N * stride * sizeof *ep);
  int32_t lab[2 * N];
  uint32_t idx[N];
  REQUIRE(ref && ep);
  for (uint32_t i = 0; i < N; i++) idx[i] = i;
  gf_data_fill(&ds, idx, N, ref, NULL);
  for (int e = 0; e < EPOCHS; e++) {
    const uint32_t *p = stream + e * 2 * N;
    CHECK(is_perm(p, 2 * N));
    gf_data_fill(&ds, p, 2 * N, ep, lab);
    int plain[N] = {0}, flipped[N] = {0}, bad = 0;
    for (uint32_t j = 0; j < 2 * N; j++) {
      const float *got = ep + j * stride;
      int hits = 0;
      for (uint32_t i = 0; i < N; i++) {
        const float *r = ref + i * stride;
        if (memcmp(got, r, stride * sizeof *got) == 0) {
          plain[i]++;
          hits++;
          bad += p[j] != i || lab[j] != (int32_t)(i % 7);
        }
        if (is_xflip(r, got, 12, 5)) {
          flipped[i]++;
          hits++;
          bad += p[j] != N + i || lab[j] != (int32_t)(i % 7);
        }
      }
      bad += hits != 1; /* exactly one image, one way */
    }
    for (uint32_t i = 0; i < N; i++) bad += plain[i] != 1 || flipped[i] != 1;
    CHECKF(bad == 0, "epoch %d: %d misses", e, bad);
  }
  free(ref);
  free(ep);

  /* Golden: with mirror, n = 5 walks the permutation of 10 that
   * test_data_order.c pins (data_perm_reference.py 42 0 10): samples
   * 8, 4, 3, ... i.e. image 3 flipped, image 4 as it is, image 3, ... */
  gf_dataset small;
  make_ds(&small, 5, 1, 2, 2, false);
  gf_data_order g = {.seed = 42, .batch = 10, .world_size = 1, .rank = 0,
                     .mirror = true};
  REQUIRE(gf_data_iter_init(&it, &small, &g, &err) == GF_OK);
  uint32_t got[10];
  CHECK(gf_data_iter_next_indices(&it, got, NULL, &err) == GF_OK);
  static const uint32_t golden0[10] = {8, 4, 3, 1, 0, 9, 2, 6, 7, 5};
  CHECK(memcmp(got, golden0, sizeof got) == 0);
  gf_data_iter_free(&it);
  gf_dataset_free(&small);
  gf_dataset_free(&ds);
}

/* A rank's slice of step `step` as the loader fills it. */
static void rank_images(const gf_dataset *ds, gf_data_order o, uint64_t step,
                        float *images, uint32_t *idx, uint64_t *count) {
  gf_err err = {0};
  gf_data_loader *ld = NULL;
  REQUIRE(gf_data_loader_start(&ld, ds, &o, step, 2, &err) == GF_OK);
  const gf_batch *b = NULL;
  REQUIRE(gf_data_loader_next(ld, &b, &err) == GF_OK && b);
  CHECK_INT_EQ(b->step, step);
  const size_t stride = (size_t)ds->c * ds->h * ds->w;
  memcpy(images, b->images, b->n * stride * sizeof *images);
  memcpy(idx, b->indices, b->n * sizeof *idx);
  *count = b->n;
  gf_data_loader_free(ld);
}

/* The slices of W ranks, in rank order, are the one-rank batch, as
 * indices and as the loader's pixels (flips included), for 1..5 ranks and
 * steps inside an epoch, across an epoch's end, and in later epochs. */
static void test_ranks(void) {
  gf_err err = {0};
  enum { N = 9, B = 12 };
  gf_dataset ds;
  make_ds(&ds, N, 3, 4, 5, true);
  const size_t stride = 60;
  static float one[B * 60], joined[B * 60], part[B * 60];
  uint32_t one_idx[B], joined_idx[B], part_idx[B], want[B];
  static const uint64_t steps[] = {0, 1, 2, 7, 31};
  for (size_t si = 0; si < sizeof steps / sizeof *steps; si++) {
    uint64_t cnt;
    gf_data_order o = {.seed = 9, .batch = B, .world_size = 1, .rank = 0,
                       .mirror = true};
    rank_images(&ds, o, steps[si], one, one_idx, &cnt);
    CHECK_INT_EQ(cnt, B);
    global_batch(9, steps[si], B, 2 * N, want);
    CHECK(memcmp(one_idx, want, sizeof want) == 0);
    int flips = 0;
    for (int j = 0; j < B; j++) flips += one_idx[j] >= N;
    if (steps[si] == 31) CHECK(flips > 0 && flips < B); /* both halves */
    for (int world = 2; world <= 5; world++) {
      size_t have = 0;
      for (int r = 0; r < world; r++) {
        o.world_size = world;
        o.rank = r;
        rank_images(&ds, o, steps[si], part, part_idx, &cnt);
        REQUIRE(have + cnt <= B);
        memcpy(joined + have * stride, part, cnt * stride * sizeof *part);
        memcpy(joined_idx + have, part_idx, cnt * sizeof *part_idx);
        have += cnt;
      }
      CHECK_INT_EQ(have, B);
      CHECKF(memcmp(joined_idx, one_idx, sizeof one_idx) == 0,
             "step %llu, %d ranks: indices", (unsigned long long)steps[si],
             world);
      CHECKF(memcmp(joined, one, sizeof one) == 0,
             "step %llu, %d ranks: pixels", (unsigned long long)steps[si],
             world);
    }
  }
  (void)err;
  gf_dataset_free(&ds);
}

/* Seek = iterate: 0..2K straight equals 0..K-1 then a new iterator sought
 * to K; the loader started at any step hands out the iterator's batches,
 * flipped pixels included; positions of the doubled epoch round-trip. */
static void test_seek(void) {
  gf_err err = {0};
  enum { N = 11, B = 6, K = 19 };
  gf_dataset ds;
  make_ds(&ds, N, 1, 3, 7, true);
  gf_data_order o = {.seed = 77, .batch = B, .world_size = 3, .rank = 1,
                     .mirror = true};
  gf_data_iter it;
  static uint32_t straight[2 * K + 1][B], resumed[2 * K + 1][B];
  REQUIRE(gf_data_iter_init(&it, &ds, &o, &err) == GF_OK);
  const uint64_t cnt = it.count;
  for (int s = 0; s <= 2 * K; s++)
    CHECK(gf_data_iter_next_indices(&it, straight[s], NULL, &err) == GF_OK);
  gf_data_iter_free(&it);
  REQUIRE(gf_data_iter_init(&it, &ds, &o, &err) == GF_OK);
  for (int s = 0; s < K; s++)
    CHECK(gf_data_iter_next_indices(&it, resumed[s], NULL, &err) == GF_OK);
  gf_data_iter_free(&it);
  REQUIRE(gf_data_iter_init(&it, &ds, &o, &err) == GF_OK);
  gf_data_iter_seek(&it, K);
  for (int s = K; s <= 2 * K; s++) {
    uint64_t got;
    CHECK(gf_data_iter_next_indices(&it, resumed[s], &got, &err) == GF_OK);
    CHECK_INT_EQ(got, s);
  }
  CHECK(memcmp(straight, resumed, sizeof straight) == 0);
  gf_data_iter_seek(&it, 3); /* back again */
  CHECK(gf_data_iter_next_indices(&it, resumed[0], NULL, &err) == GF_OK);
  CHECK(memcmp(resumed[0], straight[3], cnt * sizeof **straight) == 0);
  gf_data_iter_free(&it);

  /* The loader from step K: indices, pixels and labels of the iterator. */
  const size_t stride = 21;
  float im[B * 21];
  int32_t lab[B];
  gf_data_loader *ld = NULL;
  REQUIRE(gf_data_loader_start(&ld, &ds, &o, K, 3, &err) == GF_OK);
  int mismatches = 0;
  for (int s = K; s <= 2 * K; s++) {
    const gf_batch *b = NULL;
    CHECK(gf_data_loader_next(ld, &b, &err) == GF_OK);
    REQUIRE(b);
    gf_data_fill(&ds, straight[s], cnt, im, lab);
    mismatches += b->step != (uint64_t)s || b->n != cnt ||
                  memcmp(b->indices, straight[s], cnt * sizeof **straight) != 0 ||
                  memcmp(b->images, im, cnt * stride * sizeof *im) != 0 ||
                  memcmp(b->labels, lab, cnt * sizeof *lab) != 0;
  }
  CHECK_INT_EQ(mismatches, 0);
  gf_data_loader_free(ld);

  /* Checkpoint positions over the doubled epoch. */
  uint64_t S, e, off, step;
  CHECK(gf_data_epoch_samples(N, true, &S, &err) == GF_OK);
  CHECK(gf_data_position_of_step(K, B, S, &e, &off, &err) == GF_OK);
  CHECK(e == (uint64_t)(K * B) / S && off == (uint64_t)(K * B) % S);
  CHECK(gf_data_step_of_position(e, off, B, S, &step, &err) == GF_OK);
  CHECK_INT_EQ(step, K);
  gf_dataset_free(&ds);
}

/* Without mirror nothing changes: the order's mirror = false (also when
 * left out of an initializer) is the stream of permutations of n, image
 * indices only, filled as before. */
static void test_mirror_off(void) {
  gf_err err = {0};
  enum { N = 10, B = 4 };
  gf_dataset ds;
  make_ds(&ds, N, 3, 4, 5, true);
  /* As the existing callers write it, mirror left out. */
  gf_data_order plain = {.seed = 3, .batch = B, .world_size = 1, .rank = 0};
  CHECK(plain.mirror == false);
  gf_data_order off = {.seed = 3, .batch = B, .world_size = 1, .rank = 0,
                       .mirror = false};
  gf_data_order on = off;
  on.mirror = true;
  gf_data_iter a, b, c;
  REQUIRE(gf_data_iter_init(&a, &ds, &plain, &err) == GF_OK);
  REQUIRE(gf_data_iter_init(&b, &ds, &off, &err) == GF_OK);
  REQUIRE(gf_data_iter_init(&c, &ds, &on, &err) == GF_OK);
  CHECK_INT_EQ(a.samples, N);
  uint32_t ia[B], ib[B], ic[B], want[B];
  int differs = 0, big = 0;
  for (uint64_t s = 0; s < 12; s++) {
    CHECK(gf_data_iter_next_indices(&a, ia, NULL, &err) == GF_OK);
    CHECK(gf_data_iter_next_indices(&b, ib, NULL, &err) == GF_OK);
    CHECK(gf_data_iter_next_indices(&c, ic, NULL, &err) == GF_OK);
    global_batch(3, s, B, N, want);
    CHECK(memcmp(ia, want, sizeof want) == 0);
    CHECK(memcmp(ib, want, sizeof want) == 0);
    differs += memcmp(ic, want, sizeof want) != 0;
    for (int j = 0; j < B; j++) big += ia[j] >= N;
  }
  CHECK_INT_EQ(big, 0);
  CHECK(differs > 0); /* mirror is another order */
  gf_data_iter_free(&a);
  gf_data_iter_free(&b);
  gf_data_iter_free(&c);
  gf_dataset_free(&ds);
}

int main(void) {
  test_epoch_samples();
  test_flip();
  test_epoch_coverage();
  test_ranks();
  test_seek();
  test_mirror_off();
  return check_report();
}
