/* test_data_order.c - the data order of data.h: the Philox epoch
 * permutation (a permutation, different per epoch and seed, identical
 * across calls, pinned to golden values so it stays the same on every
 * machine and version), step <-> (epoch, offset), rank slices (disjoint,
 * covering, global order independent of the world size), resume by seek
 * (0..K-1 then K..2K equals 0..2K straight), and uint8 -> float filling. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/data.h"

/* A synthetic dataset of n 1x2x2 images: pixel k of image i = (i + k) % 256,
 * label i % 7 (or no labels). */
static void make_ds(gf_dataset *ds, uint32_t n, int labels) {
  memset(ds, 0, sizeof *ds);
  ds->pixels = malloc((size_t)n * 4);
  ds->labels = labels ? malloc(n) : NULL;
  REQUIRE(ds->pixels && (!labels || ds->labels));
  for (uint32_t i = 0; i < n; i++) {
    for (int k = 0; k < 4; k++) ds->pixels[i * 4 + k] = (uint8_t)((i + k) % 256);
    if (labels) ds->labels[i] = (uint8_t)(i % 7);
  }
  ds->n = n;
  ds->c = 1;
  ds->h = ds->w = 2;
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

static void test_permutation(void) {
  gf_err err = {0};
  enum { N = 1000 };
  static uint32_t a[N], b[N], c[N], d[N], e[N];
  CHECK(gf_data_permutation(7, 0, N, a, &err) == GF_OK);
  CHECK(gf_data_permutation(7, 0, N, b, &err) == GF_OK);
  CHECK(gf_data_permutation(7, 1, N, c, &err) == GF_OK);
  CHECK(gf_data_permutation(8, 0, N, d, &err) == GF_OK);
  CHECK(gf_data_permutation(7, (1ull << 32) - 1, N, e, &err) == GF_OK);
  CHECK(is_perm(a, N) && is_perm(c, N) && is_perm(d, N) && is_perm(e, N));
  /* The epoch is the stream's 32-bit step word: 2^32 epochs is the limit. */
  CHECK(gf_data_permutation(7, 1ull << 32, N, b, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "epoch") != NULL);
  CHECK(gf_data_permutation(7, 0, N, b, &err) == GF_OK);
  CHECK(memcmp(a, b, sizeof a) == 0);  /* pure function */
  CHECK(memcmp(a, c, sizeof a) != 0);  /* per epoch */
  CHECK(memcmp(a, d, sizeof a) != 0);  /* per seed */
  CHECK(memcmp(c, e, sizeof c) != 0);  /* all 32 epoch bits count */
  int fixed = 0; /* a shuffle, not the identity: ~1 fixed point expected */
  for (uint32_t i = 0; i < N; i++) fixed += a[i] == i;
  CHECK(fixed < 10);

  /* Golden values from an independent Python model of the permutation
   * (data_perm_reference.py 42 0 10, and 42 3 10): the permutation is part
   * of the resume contract (a checkpoint from one machine or version
   * continues on another). */
  uint32_t g[10];
  CHECK(gf_data_permutation(42, 0, 10, g, &err) == GF_OK);
  static const uint32_t golden0[10] = {8, 4, 3, 1, 0, 9, 2, 6, 7, 5};
  CHECK(memcmp(g, golden0, sizeof g) == 0);
  CHECK(gf_data_permutation(42, 3, 10, g, &err) == GF_OK);
  static const uint32_t golden3[10] = {1, 7, 9, 4, 8, 0, 3, 6, 5, 2};
  CHECK(memcmp(g, golden3, sizeof g) == 0);
  uint32_t one = 99;
  CHECK(gf_data_permutation(1, 5, 1, &one, &err) == GF_OK);
  CHECK_INT_EQ(one, 0);
}

static void test_positions(void) {
  gf_err err = {0};
  uint64_t e, o, s;
  CHECK(gf_data_position_of_step(0, 64, 60000, &e, &o, &err) == GF_OK);
  CHECK(e == 0 && o == 0);
  CHECK(gf_data_position_of_step(937, 64, 60000, &e, &o, &err) == GF_OK);
  CHECK(e == 0 && o == 59968); /* the batch that wraps into epoch 1 */
  CHECK(gf_data_position_of_step(938, 64, 60000, &e, &o, &err) == GF_OK);
  CHECK(e == 1 && o == 32);
  for (uint64_t step = 0; step < 5000; step += 37) {
    CHECK(gf_data_position_of_step(step, 48, 1000, &e, &o, &err) == GF_OK);
    CHECK(gf_data_step_of_position(e, o, 48, 1000, &s, &err) == GF_OK);
    CHECK_INT_EQ(s, step);
  }
  CHECK(gf_data_step_of_position(0, 5, 4, 10, &s, &err) == GF_EINVAL); /* mid-step */
  CHECK(gf_data_step_of_position(0, 10, 5, 10, &s, &err) == GF_EINVAL); /* offset >= n */
  CHECK(gf_data_position_of_step(UINT64_MAX / 2, 4, 10, &e, &o, &err) == GF_EINVAL);
  CHECK(gf_data_position_of_step(1, 0, 10, &e, &o, &err) == GF_EINVAL);
}

static void test_rank_slices(void) {
  gf_err err = {0};
  for (uint64_t batch = 1; batch <= 40; batch++) {
    for (int world = 1; world <= 8; world++) {
      uint64_t next = 0, lo = UINT64_MAX, hi = 0;
      for (int r = 0; r < world; r++) {
        uint64_t b, c;
        CHECK(gf_data_rank_slice(batch, world, r, &b, &c, &err) == GF_OK);
        CHECK_INT_EQ(b, next); /* contiguous: disjoint and gap-free */
        next = b + c;
        if (c < lo) lo = c;
        if (c > hi) hi = c;
      }
      CHECK_INT_EQ(next, batch); /* covering */
      CHECK(hi - lo <= 1);
    }
  }
  uint64_t b, c;
  CHECK(gf_data_rank_slice(8, 2, 2, &b, &c, &err) == GF_EINVAL);
  CHECK(gf_data_rank_slice(8, 0, 0, &b, &c, &err) == GF_EINVAL);
}

/* The whole global batch of `step` straight from the permutations. */
static void global_batch(uint64_t seed, uint64_t step, uint64_t batch,
                         uint32_t n, uint32_t *out) {
  gf_err err = {0};
  uint32_t *perm = malloc(n * sizeof *perm);
  REQUIRE(perm);
  for (uint64_t j = 0; j < batch; j++) {
    uint64_t p = step * batch + j;
    REQUIRE(gf_data_permutation(seed, p / n, n, perm, &err) == GF_OK);
    out[j] = perm[p % n];
  }
  free(perm);
}

static void test_iterator(void) {
  gf_err err = {0};
  gf_dataset ds;
  make_ds(&ds, 10, 1);
  uint32_t idx[64], want[64];

  /* Steps follow the epoch stream; each epoch visits every image once. */
  gf_data_iter it;
  gf_data_order ord = {.seed = 3, .batch = 4, .world_size = 1, .rank = 0};
  REQUIRE(gf_data_iter_init(&it, &ds, &ord, &err) == GF_OK);
  uint32_t stream[40];
  for (uint64_t s = 0; s < 10; s++) {
    uint64_t got;
    CHECK(gf_data_iter_next_indices(&it, idx, &got, &err) == GF_OK);
    CHECK_INT_EQ(got, s);
    global_batch(3, s, 4, 10, want);
    CHECK(memcmp(idx, want, 4 * sizeof *idx) == 0);
    memcpy(stream + s * 4, idx, 4 * sizeof *idx);
  }
  for (int e = 0; e < 4; e++) CHECK(is_perm(stream + e * 10, 10));
  gf_data_iter_free(&it);

  /* Resume: 0..K-1, a new iterator at K..2K, equals 0..2K straight. */
  enum { K = 23 };
  ord.batch = 7;
  static uint32_t straight[2 * K + 1][7], resumed[2 * K + 1][7];
  REQUIRE(gf_data_iter_init(&it, &ds, &ord, &err) == GF_OK);
  for (int s = 0; s <= 2 * K; s++) CHECK(gf_data_iter_next_indices(&it, straight[s], NULL, &err) == GF_OK);
  gf_data_iter_free(&it);
  REQUIRE(gf_data_iter_init(&it, &ds, &ord, &err) == GF_OK);
  for (int s = 0; s < K; s++) CHECK(gf_data_iter_next_indices(&it, resumed[s], NULL, &err) == GF_OK);
  gf_data_iter_free(&it);
  REQUIRE(gf_data_iter_init(&it, &ds, &ord, &err) == GF_OK);
  gf_data_iter_seek(&it, K);
  for (int s = K; s <= 2 * K; s++) CHECK(gf_data_iter_next_indices(&it, resumed[s], NULL, &err) == GF_OK);
  CHECK(memcmp(straight, resumed, sizeof straight) == 0);
  /* Seeking back and forth gives the same batches again. */
  gf_data_iter_seek(&it, 5);
  CHECK(gf_data_iter_next_indices(&it, idx, NULL, &err) == GF_OK);
  CHECK(memcmp(idx, straight[5], 7 * sizeof *idx) == 0);
  gf_data_iter_free(&it);
  gf_data_iter_free(&it); /* twice and NULL are fine */
  gf_data_iter_free(NULL);

  /* Ranks: the slices of W ranks, in rank order, are the W = 1 batch. */
  for (int world = 1; world <= 5; world++) {
    uint32_t joined[12];
    size_t have = 0;
    for (int r = 0; r < world; r++) {
      gf_data_order o = {.seed = 9, .batch = 12, .world_size = world, .rank = r};
      REQUIRE(gf_data_iter_init(&it, &ds, &o, &err) == GF_OK);
      gf_data_iter_seek(&it, 17);
      CHECK(gf_data_iter_next_indices(&it, idx, NULL, &err) == GF_OK);
      memcpy(joined + have, idx, it.count * sizeof *idx);
      have += it.count;
      gf_data_iter_free(&it);
    }
    CHECK_INT_EQ(have, 12);
    global_batch(9, 17, 12, 10, want);
    CHECK(memcmp(joined, want, sizeof joined) == 0);
  }

  /* A global batch larger than the dataset spans several epochs. */
  ord.batch = 25;
  REQUIRE(gf_data_iter_init(&it, &ds, &ord, &err) == GF_OK);
  gf_data_iter_seek(&it, 3);
  CHECK(gf_data_iter_next_indices(&it, idx, NULL, &err) == GF_OK);
  global_batch(3, 3, 25, 10, want);
  CHECK(memcmp(idx, want, 25 * sizeof *idx) == 0);
  gf_data_iter_free(&it);

  /* Orders that cannot work. */
  gf_data_order bad = {.seed = 1, .batch = 2, .world_size = 4, .rank = 0};
  CHECK(gf_data_iter_init(&it, &ds, &bad, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "world size") != NULL);
  bad.batch = 8;
  bad.rank = 4;
  CHECK(gf_data_iter_init(&it, &ds, &bad, &err) == GF_EINVAL);
  gf_data_iter_free(&it);
  gf_dataset_free(&ds);
}

static void test_fill(void) {
  gf_dataset ds;
  make_ds(&ds, 300, 1);
  uint32_t idx[3] = {0, 255, 12};
  float im[12];
  int32_t lab[3];
  gf_data_fill(&ds, idx, 3, im, lab);
  CHECK(im[0] == -1.0f);           /* pixel value 0 */
  CHECK(im[4] == 1.0f);            /* image 255, pixel 0 = 255 */
  CHECK(im[5] == -1.0f);           /* image 255, pixel 1 = 0 */
  CHECK(im[8] == (12.0f - 127.5f) / 127.5f);
  CHECK_INT_EQ(lab[0], 0);
  CHECK_INT_EQ(lab[1], 255 % 7);
  CHECK_INT_EQ(lab[2], 12 % 7);
  gf_dataset_free(&ds);
  make_ds(&ds, 5, 0);
  gf_data_fill(&ds, idx, 1, im, lab);
  CHECK_INT_EQ(lab[0], -1);
  gf_data_fill(&ds, idx, 1, im, NULL); /* labels not wanted */
  gf_dataset_free(&ds);
}

int main(void) {
  test_permutation();
  test_positions();
  test_rank_slices();
  test_iterator();
  test_fill();
  return check_report();
}
