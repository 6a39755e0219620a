/* test_inception_batch.c - the FID network's features do not depend on how
 * a set is cut into chunks, nor on its activations having been released:
 *
 *   1. gf_inception_batch_for: twice the CPU threads rounded up to a power
 *      of two, within [GF_INCEPTION_MIN_CPU_BATCH, max_batch]; max_batch on
 *      CUDA;
 *   2. on a CPU ctx of 2 threads, 8 Fashion-MNIST test images in one chunk
 *      of 8 and in chunks of gf_inception_batch_for (4) give the same
 *      bits; so do 12 images in chunks of 8 + 4 and of 4 (the trainer's
 *      FID features at --fid-images 100 are chunks of 32, 32, 32, 4 at
 *      max_batch 32, chunks of 4 at its batch);
 *   3. gf_inception_release frees the activations (the network then holds
 *      its weights alone) and the next features call, which allocates them
 *      again, gives the same bits.
 *
 * usage: test_inception_batch. FAILS when the network file or
 * Fashion-MNIST is missing: deploy/install-deps.sh installs both. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fashion_images.h"
#include "gf/ctx.h"
#include "gf/inception.h"

#define DIM GF_INCEPTION_DIM
#define N 12

static void test_batch_for(void) {
  gf_ctx c;
  memset(&c, 0, sizeof c);
  c.backend = GF_BACKEND_CPU;
  static const int threads[] = {1, 2, 3, 4, 5, 8, 9, 16, 64};
  static const int want[] = {4, 4, 8, 8, 16, 16, 32, 32, 32};
  for (int i = 0; i < 9; i++) {
    c.nthreads = threads[i];
    int b = gf_inception_batch_for(&c, 32);
    CHECKF(b == want[i], "%d threads: batch %d, want %d", threads[i], b,
           want[i]);
  }
  c.nthreads = 2;
  CHECK(gf_inception_batch_for(&c, 2) == 2);
  CHECK(gf_inception_batch_for(&c, 0) == 1);
  c.backend = GF_BACKEND_CUDA;
  CHECK(gf_inception_batch_for(&c, 32) == 32);
  CHECK(gf_inception_batch_for(NULL, 16) == 16);
}

/* Features of px[0, n) through a network loaded for chunks of max_batch. */
static float *features(gf_ctx *ctx, int max_batch, const uint8_t *px, int n,
                       size_t *bytes_loaded) {
  gf_inception *net = NULL;
  gf_err e;
  gf_status s = gf_inception_load(ctx, NULL, NULL, max_batch, &net, &e);
  CHECKF(s == GF_OK, "load: %s", e.msg);
  if (s != GF_OK) return NULL;
  if (bytes_loaded) *bytes_loaded = gf_inception_device_bytes(net);
  float *f = malloc((size_t)n * DIM * sizeof *f);
  REQUIRE(f);
  s = gf_inception_features_u8(net, px, n, 1, 28, 28, f, &e);
  CHECKF(s == GF_OK, "features: %s", e.msg);
  gf_inception_free(net);
  return f;
}

static void same_bits(const float *a, const float *b, int n,
                      const char *what) {
  if (!a || !b) return;
  int first = -1;
  for (int i = 0; i < n * DIM && first < 0; i++)
    if (memcmp(&a[i], &b[i], sizeof *a) != 0) first = i;
  CHECKF(first < 0, "%s: feature %d of image %d is %.9g, not %.9g", what,
         first % DIM, first / DIM, first < 0 ? 0.0 : (double)b[first],
         first < 0 ? 0.0 : (double)a[first]);
}

int main(void) {
  test_batch_for();
  uint8_t *px = tu_fashion_test_images(N);
  if (!px) return 1;
  gf_ctx_config cc = {GF_BACKEND_CPU, 2, 0, GF_CPU_LAYOUT_PLAIN};
  gf_ctx ctx;
  gf_err e;
  REQUIRE(gf_ctx_init(&ctx, &cc, &e) == GF_OK);
  int b = gf_inception_batch_for(&ctx, 8);
  CHECK(b == 4);

  /* 2. one chunk of 8 against two of 4; 8 + 4 against three of 4 */
  size_t bytes8 = 0, bytes4 = 0;
  float *f8 = features(&ctx, 8, px, 8, &bytes8);
  float *f4 = features(&ctx, b, px, 8, &bytes4);
  same_bits(f8, f4, 8, "8 images, chunks of 8 against chunks of 4");
  CHECKF(bytes4 < bytes8, "network at batch 4: %zu bytes, at 8: %zu", bytes4,
         bytes8);
  free(f8);
  free(f4);
  f8 = features(&ctx, 8, px, N, NULL);
  f4 = features(&ctx, b, px, N, NULL);
  same_bits(f8, f4, N, "12 images, chunks of 8 + 4 against chunks of 4");
  free(f8);

  /* 3. released activations, made again */
  gf_inception *net = NULL;
  REQUIRE(gf_inception_load(&ctx, NULL, NULL, b, &net, &e) == GF_OK);
  size_t held = gf_inception_device_bytes(net);
  gf_inception_release(net);
  size_t weights = gf_inception_device_bytes(net);
  fprintf(stderr, "network at batch %d: %.1f MiB, %.1f MiB released\n", b,
          held / 1048576.0, weights / 1048576.0);
  CHECKF(weights < held && weights > (80u << 20) && weights < (86u << 20),
         "released: %zu bytes of %zu held (want the weights, 83 MiB)",
         weights, held);
  gf_inception_release(net); /* twice is fine */
  float *fr = malloc((size_t)N * DIM * sizeof *fr);
  REQUIRE(fr);
  CHECKF(gf_inception_features_u8(net, px, N, 1, 28, 28, fr, &e) == GF_OK,
         "%s", e.msg);
  CHECK(gf_inception_device_bytes(net) >= held); /* and its input chunk */
  same_bits(f4, fr, N, "after gf_inception_release");
  gf_inception_free(net);
  gf_inception_release(NULL);
  free(fr);
  free(f4);
  free(px);
  gf_ctx_free(&ctx);
  return check_report();
}
