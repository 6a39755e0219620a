/* test_data_loader.c - the loader thread: the batches it hands out (images,
 * labels, indices, steps) are those of the synchronous path (iterator +
 * gf_data_fill) for any start step, queue depth and rank; it shuts down
 * cleanly mid-epoch, with a full queue, or before the first batch (run
 * under the sanitizer build); bad arguments are refused; the data-wait
 * bookkeeping adds up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gf/data.h"

/* n images of 3x4x4 with pseudo-random bytes, labels i % 10. */
static void make_ds(gf_dataset *ds, uint32_t n) {
  memset(ds, 0, sizeof *ds);
  ds->c = 3;
  ds->h = ds->w = 4;
  ds->pixels = malloc((size_t)n * 48);
  ds->labels = malloc(n);
  REQUIRE(ds->pixels && ds->labels);
  uint32_t x = 12345;
  for (size_t i = 0; i < (size_t)n * 48; i++) {
    x = x * 1103515245u + 12345u;
    ds->pixels[i] = (uint8_t)(x >> 16);
  }
  for (uint32_t i = 0; i < n; i++) ds->labels[i] = (uint8_t)(i % 10);
  ds->n = n;
  ds->num_classes = 10;
}

/* Compares `steps` loader batches from first_step with the synchronous
 * path. */
static void compare(const gf_dataset *ds, gf_data_order ord, uint64_t first,
                    int depth, int steps) {
  gf_err err = {0};
  gf_data_loader *ld = NULL;
  REQUIRE(gf_data_loader_start(&ld, ds, &ord, first, depth, &err) == GF_OK);
  gf_data_iter it;
  REQUIRE(gf_data_iter_init(&it, ds, &ord, &err) == GF_OK);
  gf_data_iter_seek(&it, first);
  const size_t stride = (size_t)ds->c * ds->h * ds->w;
  uint32_t *idx = malloc(it.count * sizeof *idx);
  float *im = malloc(it.count * stride * sizeof *im);
  int32_t *lab = malloc(it.count * sizeof *lab);
  REQUIRE(idx && im && lab);
  double sum_wait = 0;
  int mismatches = 0;
  for (int s = 0; s < steps; s++) {
    const gf_batch *b = NULL;
    uint64_t step;
    CHECK(gf_data_loader_next(ld, &b, &err) == GF_OK);
    REQUIRE(b);
    CHECK(gf_data_iter_next_indices(&it, idx, &step, &err) == GF_OK);
    gf_data_fill(ds, idx, it.count, im, lab);
    mismatches += b->step != step || b->n != it.count || b->c != ds->c ||
                  memcmp(b->indices, idx, it.count * sizeof *idx) != 0 ||
                  memcmp(b->images, im, it.count * stride * sizeof *im) != 0 ||
                  memcmp(b->labels, lab, it.count * sizeof *lab) != 0;
    CHECK(b->wait_s >= 0);
    sum_wait += b->wait_s;
  }
  CHECK_INT_EQ(mismatches, 0);
  CHECK_NEAR(gf_data_loader_wait_seconds(ld), sum_wait, 1e-6);
  gf_data_loader_free(ld);
  gf_data_iter_free(&it);
  free(idx);
  free(im);
  free(lab);
}

static void test_same_batches(void) {
  gf_dataset ds;
  make_ds(&ds, 37);
  gf_data_order ord = {.seed = 11, .batch = 8, .world_size = 1, .rank = 0};
  compare(&ds, ord, 0, 2, 40);   /* several epochs, wrapping batches */
  compare(&ds, ord, 123, 4, 25); /* resumed at a later step */
  ord.world_size = 3;
  ord.rank = 2;
  compare(&ds, ord, 7, 3, 20);   /* one rank's slice */
  ord.batch = 100;               /* batches larger than the dataset */
  ord.world_size = 1;
  ord.rank = 0;
  compare(&ds, ord, 0, 8, 6);
  gf_dataset_free(&ds);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

static void test_shutdown(void) {
  gf_err err = {0};
  gf_dataset ds;
  make_ds(&ds, 500);
  gf_data_order ord = {.seed = 5, .batch = 64, .world_size = 1, .rank = 0};
  /* Stopped before any batch is taken, at once and with a full queue. */
  for (int k = 0; k < 20; k++) {
    gf_data_loader *ld = NULL;
    REQUIRE(gf_data_loader_start(&ld, &ds, &ord, (uint64_t)k, 2, &err) == GF_OK);
    if (k % 2) sleep_ms(2);
    gf_data_loader_free(ld);
  }
  /* Stopped mid-epoch while holding a batch and with batches queued. */
  gf_data_loader *ld = NULL;
  REQUIRE(gf_data_loader_start(&ld, &ds, &ord, 3, 3, &err) == GF_OK);
  const gf_batch *b = NULL;
  for (int s = 0; s < 4; s++) {
    CHECK(gf_data_loader_next(ld, &b, &err) == GF_OK);
    CHECK(b && b->step == 3u + (uint64_t)s);
  }
  sleep_ms(5);
  gf_data_loader_free(ld);
  gf_data_loader_free(NULL);
  gf_dataset_free(&ds);
}

static void test_bad_arguments(void) {
  gf_err err = {0};
  gf_dataset ds;
  make_ds(&ds, 10);
  gf_data_order ord = {.seed = 5, .batch = 4, .world_size = 1, .rank = 0};
  gf_data_loader *ld = (gf_data_loader *)&ds; /* must be reset to NULL */
  CHECK(gf_data_loader_start(&ld, &ds, &ord, 0, 1, &err) == GF_EINVAL);
  CHECK(ld == NULL);
  CHECK(gf_data_loader_start(&ld, &ds, &ord, 0, 9, &err) == GF_EINVAL);
  CHECK(strstr(err.msg, "depth") != NULL);
  ord.rank = 1;
  CHECK(gf_data_loader_start(&ld, &ds, &ord, 0, 2, &err) == GF_EINVAL);
  CHECK(ld == NULL);
  gf_dataset_free(&ds);
}

int main(void) {
  test_same_batches();
  test_shutdown();
  test_bad_arguments();
  return check_report();
}
