/* bench_inception.c - the FID network's forward (gf/inception.h) in
 * images/s, from 8-bit images to pool3 features, at a few batch sizes and
 * input sizes, on the CPU (or a CUDA ctx); then the cost of one evaluation:
 * features of N generated images plus FID and KID against a reference set
 * of N (the reference's features are computed once and cached in a real
 * training run, so they are timed apart).
 *
 *   bench_inception [--device cpu|cuda] [--threads N] [--batch LIST]
 *                   [--size LIST] [--images N] [--eval LIST]
 * Defaults: cpu, every core, batches 1,8,32, sizes 28 (grey), 64 (RGB),
 * --images 64 per timing, evaluations at 2000 images. Prints one line per
 * measurement. The inputs are deterministic patterns: the speed of the
 * network does not depend on what it sees. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/clock.h"
#include "gf/ctx.h"
#include "gf/fid.h"
#include "gf/inception.h"
#include "gf/kid.h"
#include "gf/quality.h"

static int parse_list(const char *s, int *v, int cap) {
  int n = 0;
  while (*s && n < cap) {
    char *end;
    long x = strtol(s, &end, 10);
    if (end == s || x < 1 || x > 100000) return -1;
    v[n++] = (int)x;
    s = *end == ',' ? end + 1 : end;
    if (*end && *end != ',') return -1;
  }
  return n;
}

static uint8_t *pattern(int n, int c, int h, int w, int salt) {
  size_t per = (size_t)c * h * w;
  uint8_t *px = malloc((size_t)n * per);
  if (!px) return NULL;
  for (size_t i = 0; i < (size_t)n * per; i++)
    px[i] = (uint8_t)((i * 2654435761u + (size_t)salt * 40503u) >> 13);
  return px;
}

static int die(const char *what, const gf_err *e) {
  fprintf(stderr, "bench_inception: %s: %s\n", what, e->msg);
  return 1;
}

int main(int argc, char **argv) {
  gf_ctx_config cc = {GF_BACKEND_CPU, 0, 0, GF_CPU_LAYOUT_PLAIN};
  int batches[8] = {1, 8, 32}, nb = 3, sizes[8] = {28, 64}, ns = 2;
  int evals[8] = {2000}, ne = 1, images = 64;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) {
      fprintf(stderr, "bench_inception: %s needs a value\n", a);
      return 2;
    }
    i++;
    if (strcmp(a, "--device") == 0)
      cc.backend = strcmp(v, "cuda") == 0 ? GF_BACKEND_CUDA : GF_BACKEND_CPU;
    else if (strcmp(a, "--threads") == 0)
      cc.nthreads = atoi(v);
    else if (strcmp(a, "--batch") == 0)
      nb = parse_list(v, batches, 8);
    else if (strcmp(a, "--size") == 0)
      ns = parse_list(v, sizes, 8);
    else if (strcmp(a, "--eval") == 0)
      ne = parse_list(v, evals, 8);
    else if (strcmp(a, "--images") == 0)
      images = atoi(v);
    else {
      fprintf(stderr, "bench_inception: unknown flag %s\n", a);
      return 2;
    }
    if (nb < 1 || ns < 1 || ne < 0 || images < 1) {
      fprintf(stderr, "bench_inception: bad value for %s: %s\n", a, v);
      return 2;
    }
  }
  gf_ctx ctx;
  gf_err e;
  if (gf_ctx_init(&ctx, &cc, &e) != GF_OK) return die("ctx", &e);
  int maxb = 1;
  for (int i = 0; i < nb; i++) maxb = batches[i] > maxb ? batches[i] : maxb;
  gf_inception *net;
  double t0 = gf_mono_s();
  if (gf_inception_load(&ctx, NULL, NULL, maxb, &net, &e) != GF_OK)
    return die("load", &e);
  printf("# %s, %d threads, network loaded in %.2f s, %.0f MB\n",
         cc.backend == GF_BACKEND_CUDA ? "cuda" : "cpu", ctx.nthreads,
         gf_mono_s() - t0, gf_inception_device_bytes(net) / 1e6);
  float *feats = malloc((size_t)(images > 2000 ? images : 2000) *
                        GF_INCEPTION_DIM * sizeof *feats);
  if (!feats) return 1;
  for (int si = 0; si < ns; si++) {
    int side = sizes[si], c = side == 28 ? 1 : 3;
    uint8_t *px = pattern(images, c, side, side, si);
    for (int bi = 0; bi < nb; bi++) {
      int b = batches[bi];
      gf_inception_free(net);
      if (gf_inception_load(&ctx, NULL, NULL, b, &net, &e) != GF_OK)
        return die("load", &e);
      /* one warm-up batch: oneDNN builds its primitives */
      if (gf_inception_features_u8(net, px, b < images ? b : images, c, side,
                                   side, feats, &e) != GF_OK)
        return die("features", &e);
      double t = gf_mono_s();
      if (gf_inception_features_u8(net, px, images, c, side, side, feats,
                                   &e) != GF_OK)
        return die("features", &e);
      double dt = gf_mono_s() - t;
      printf("forward %dx%dx%d batch %2d: %7.2f images/s (%d images in "
             "%.2f s)\n", c, side, side, b, images / dt, images, dt);
      fflush(stdout);
    }
    free(px);
  }
  for (int ei = 0; ei < ne; ei++) {
    int n = evals[ei];
    float *f = realloc(feats, (size_t)n * GF_INCEPTION_DIM * sizeof *feats);
    if (!f) return 1;
    feats = f;
    uint8_t *real = pattern(n, 1, 28, 28, 7), *fake = pattern(n, 1, 28, 28, 9);
    gf_quality_ref ref;
    double t = gf_mono_s();
    if (gf_quality_ref_init(net, real, n, 1, 28, 28, "", &ref, NULL, 0,
                            &e) != GF_OK)
      return die("reference", &e);
    double tref = gf_mono_s() - t;
    t = gf_mono_s();
    if (gf_inception_features_u8(net, fake, n, 1, 28, 28, feats, &e) != GF_OK)
      return die("features", &e);
    double tf = gf_mono_s() - t;
    gf_quality q;
    t = gf_mono_s();
    if (gf_quality_of_features(&ref, feats, n, GF_QUALITY_FID, NULL, &q,
                               &e) != GF_OK)
      return die("fid", &e);
    double tfid = gf_mono_s() - t;
    t = gf_mono_s();
    if (gf_quality_of_features(&ref, feats, n, GF_QUALITY_KID, NULL, &q,
                               &e) != GF_OK)
      return die("kid", &e);
    double tkid = gf_mono_s() - t;
    printf("evaluation at %d images: features %.1f s, FID %.2f s, KID %.2f s"
           " (an evaluation %.1f s; the reference once: %.1f s)\n", n, tf,
           tfid, tkid, tf + tfid + tkid, tref);
    gf_quality_ref_free(&ref);
    free(real);
    free(fake);
  }
  free(feats);
  gf_inception_free(net);
  gf_ctx_free(&ctx);
  return 0;
}
