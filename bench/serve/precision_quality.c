/* precision_quality.c - the quality cost of bf16 (or, with --precision
 * int8, int8) inference: one model
 * directory loaded twice through gf/generator.h (GF_GEN_FP32 and
 * GF_GEN_BF16, CPU, one executor, one op thread), the same N latents (image
 * k = sample k of --seed, gf_generator_latents per_image 0) run through each,
 * and the two image sets compared with each other and with the data:
 *
 *   pixels   max and mean |bf16 - fp32| of the float images in [-1, 1]; the
 *            share of 8-bit pixels (gf_pixel_u8, the PNGs' quantisation)
 *            that differ, a histogram of the 8-bit differences and the
 *            largest one;
 *   SWD      (gf/swd.h, the trainer's metric, default configuration, seed
 *            --seed) of bf16 against fp32, and of each against the first N
 *            data images, for scale;
 *   FID/KID  (gf/quality.h; Inception-v3 from the default path on a CPU ctx
 *            with the plain layout) of fp32 and of bf16 against the first N
 *            data images (the reference ganflow-train --eval-metrics fid
 *            uses, read from or written to the feature cache), and of bf16
 *            against fp32;
 *   time     seconds each precision took to generate the N images (passes of
 *            up to --max-batch rows, 1 thread; load and probe not counted).
 *
 *   precision_quality --model-dir DIR [--n N (2000)] [--seed S (7)]
 *                     [--data SPEC (/usr/share/datasets/fashion-mnist)]
 *                     [--max-batch B (16)] [--metric-threads T (0: all)]
 *
 * Output: "key: value" lines on stdout (precision.sh turns them into
 * PRECISION.md's table); progress on stderr.
 * Not here: training, MLflow (precision.sh).
 * Exit status: 0 success, 1 error, 2 usage error, 3 bf16 refused here (the
 * reason on stderr). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/clock.h"
#include "gf/data.h"
#include "gf/fid.h"
#include "gf/generator.h"
#include "gf/image_grid.h"
#include "gf/inception.h"
#include "gf/kid.h"
#include "gf/quality.h"
#include "gf/swd.h"

#define ME "precision_quality"
#define DEFAULT_DATA "/usr/share/datasets/fashion-mnist"

typedef struct opts {
  const char *model_dir;
  const char *data;     /* --data SPEC, "[FORMAT:]PATH" as ganflow-train's */
  int n;                /* images per set, 2..100000 */
  uint64_t seed;        /* latents, SWD directions, KID subsets */
  int max_batch;        /* rows per generator pass, 1..4096 */
  int metric_threads;   /* Inception and SWD threads; 0 = every core */
  gf_gen_precision low; /* --precision: bf16 or int8, against fp32 */
} opts;

static void usage(FILE *out) {
  fprintf(out,
          "usage: " ME " --model-dir DIR [--n N] [--seed S] [--data SPEC]\n"
          "                         [--max-batch B] [--metric-threads T]\n"
          "                         [--precision bf16|int8]\n"
          "  Generates N images of one model directory in fp32 and in bf16\n"
          "  (--precision int8: in int8)\n"
          "  from the same latents and compares them: pixel agreement, SWD,\n"
          "  FID/KID against the data's first N images and against each\n"
          "  other, generation time per precision (1 thread).\n"
          "  --model-dir DIR      a verified MLflow model directory\n"
          "  --n N                images per set, 2..100000 (2000)\n"
          "  --seed S             image k is sample k of seed S (7)\n"
          "  --data SPEC          [idx:|cifar10:|images:]PATH, the FID\n"
          "                       reference's dataset (" DEFAULT_DATA ")\n"
          "  --max-batch B        rows per generator pass, 1..4096 (16)\n"
          "  --metric-threads T   Inception and SWD threads, 0 = all (0)\n"
          "  --precision P        the precision set against fp32 (bf16)\n"
          "  Exit status: 0 success, 1 error, 2 usage error, 3 the precision\n"
          "  is refused on this machine.\n");
}

static int parse_long(const char *s, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end = NULL;
  errno = 0;
  if (s[0] == '-') return -1;
  unsigned long long v = strtoull(s, &end, 0);
  if (errno != 0 || end == s || *end != '\0') return -1;
  *out = (uint64_t)v;
  return 0;
}

/* 0 on success; -1 after printing what was wrong; 1 for --help. */
static int parse_opts(int argc, char **argv, opts *o) {
  *o = (opts){.data = DEFAULT_DATA, .n = 2000, .seed = 7, .max_batch = 16,
              .low = GF_GEN_BF16};
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) return 1;
    const char *v = i + 1 < argc ? argv[++i] : NULL;
    if (!v) {
      fprintf(stderr, ME ": %s needs a value\n", f);
      return -1;
    }
    long x = 0;
    int bad = 0;
    if (strcmp(f, "--model-dir") == 0) o->model_dir = v;
    else if (strcmp(f, "--data") == 0) o->data = v;
    else if (strcmp(f, "--precision") == 0) {
      bad = strcmp(v, "bf16") != 0 && strcmp(v, "int8") != 0;
      o->low = strcmp(v, "int8") == 0 ? GF_GEN_INT8 : GF_GEN_BF16;
    }
    else if (strcmp(f, "--n") == 0) {
      bad = parse_long(v, 2, 100000, &x);
      o->n = (int)x;
    } else if (strcmp(f, "--seed") == 0) bad = parse_u64(v, &o->seed);
    else if (strcmp(f, "--max-batch") == 0) {
      bad = parse_long(v, 1, 4096, &x);
      o->max_batch = (int)x;
    } else if (strcmp(f, "--metric-threads") == 0) {
      bad = parse_long(v, 0, GF_SWD_MAX_THREADS, &x);
      o->metric_threads = (int)x;
    } else {
      fprintf(stderr, ME ": unknown flag %s\n", f);
      return -1;
    }
    if (bad) {
      fprintf(stderr, ME ": bad value for %s: '%s'\n", f, v);
      return -1;
    }
  }
  if (!o->model_dir || !o->model_dir[0]) {
    fprintf(stderr, ME ": --model-dir is required\n");
    return -1;
  }
  if (!o->data[0]) {
    fprintf(stderr, ME ": --data is empty\n");
    return -1;
  }
  return 0;
}

/* One precision's images: loads the model, draws the latents, runs them.
 * *images is malloc'd here (n * image_numel floats; the caller frees it),
 * *m is the loaded generator (the caller unrefs it). Returns 0, 1 on an
 * error, 3 when bf16 is refused (the reason printed). */
static int generate(const opts *o, gf_gen_precision p, gf_generator **m,
                    float **images, double *seconds) {
  gf_generator_opts mo = {.backend = GF_BACKEND_CPU, .n_exec = 1,
                          .threads = 1, .max_batch = o->max_batch,
                          .resident = NULL, .precision = p};
  gf_err err = {0};
  *m = NULL;
  *images = NULL;
  gf_status s = gf_generator_load(o->model_dir, "precision", "local", &mo, m,
                                  &err);
  if (s != GF_OK) {
    if (p != GF_GEN_FP32 && s == GF_EUNSUPPORTED) {
      fprintf(stderr, ME ": %s refused on this machine: %s\n",
              gf_gen_precision_name(p), err.msg);
      return 3;
    }
    fprintf(stderr, ME ": %s (%s): %s\n", o->model_dir,
            gf_gen_precision_name(p), err.msg);
    return 1;
  }
  size_t zn = (size_t)o->n * (size_t)(*m)->cfg.z_dim;
  float *z = malloc(zn * sizeof *z);
  *images = malloc((size_t)o->n * (*m)->image_numel * sizeof **images);
  if (!z || !*images) {
    free(z);
    fprintf(stderr, ME ": out of memory for %d images\n", o->n);
    return 1;
  }
  if (gf_generator_latents(*m, &o->seed, o->n, 0, z, &err) != GF_OK) {
    free(z);
    fprintf(stderr, ME ": latents: %s\n", err.msg);
    return 1;
  }
  double t0 = gf_mono_s();
  s = gf_generator_run(*m, 0, z, o->n, *images, &err);
  *seconds = gf_mono_s() - t0;
  free(z);
  if (s != GF_OK) {
    fprintf(stderr, ME ": %s forward: %s\n", gf_gen_precision_name(p),
            err.msg);
    return 1;
  }
  fprintf(stderr, ME ": %s: %d images in %.2f s\n", gf_gen_precision_name(p),
          o->n, *seconds);
  return 0;
}

/* Pixel agreement of b against a (count floats each). */
static void print_pixels(const float *a, const float *b, size_t count,
                         const char *low) {
  double max_abs = 0, sum_abs = 0;
  size_t differ = 0, hist[4] = {0}; /* 8-bit |diff| 1, 2, 3..4, >= 5 */
  int max_u8 = 0;
  for (size_t i = 0; i < count; i++) {
    double d = fabs((double)b[i] - (double)a[i]);
    if (d > max_abs) max_abs = d;
    sum_abs += d;
    int du = abs((int)gf_pixel_u8(b[i]) - (int)gf_pixel_u8(a[i]));
    if (du == 0) continue;
    differ++;
    hist[du == 1 ? 0 : du == 2 ? 1 : du <= 4 ? 2 : 3]++;
    if (du > max_u8) max_u8 = du;
  }
  printf("pixels compared: %zu\n", count);
  printf("float max |%s-fp32|: %.6g\n", low, max_abs);
  printf("float mean |%s-fp32|: %.6g\n", low, sum_abs / (double)count);
  printf("u8 pixels differing: %zu (%.4f%%)\n", differ,
         100.0 * (double)differ / (double)count);
  printf("u8 |diff| 1/2/3-4/5+: %zu/%zu/%zu/%zu\n", hist[0], hist[1],
         hist[2], hist[3]);
  printf("u8 max |diff|: %d\n", max_u8);
}

/* SWD of b against a; a may be uint8 (the data) or float. 0 or 1. */
static int print_swd(const char *label, const gf_swd_images *a,
                     const gf_swd_images *b, const opts *o) {
  gf_swd_config cfg = gf_swd_config_default();
  cfg.seed = o->seed;
  cfg.threads = o->metric_threads;
  gf_swd_result r;
  gf_err err = {0};
  if (gf_swd(a, b, &cfg, &r, &err) != GF_OK) {
    fprintf(stderr, ME ": SWD %s: %s\n", label, err.msg);
    return 1;
  }
  printf("swd %s: avg %.4f", label, r.avg);
  for (int l = 0; l < r.levels; l++)
    printf(", %d %.4f", r.size[l], r.swd[l]);
  printf("\n");
  return 0;
}

/* The Inception half: reference from the data, features of both sets,
 * FID/KID of each against the reference and of bf16 against fp32. 0 or 1.
 * Everything allocated here is freed here. */
static int quality(const opts *o, const gf_dataset *ds, const float *fp32,
                   const float *bf16, int c, int h, int w) {
  gf_ctx ctx;
  gf_ctx_config cc = {GF_BACKEND_CPU, o->metric_threads, 0,
                      GF_CPU_LAYOUT_PLAIN};
  gf_err err = {0};
  if (gf_ctx_init(&ctx, &cc, &err) != GF_OK) {
    fprintf(stderr, ME ": CPU ctx: %s\n", err.msg);
    return 1;
  }
  int rc = 1;
  gf_inception *net = NULL;
  gf_quality_ref ref = {0};
  gf_feat_moments ma = {0}, mb = {0};
  size_t fn = (size_t)o->n * GF_INCEPTION_DIM;
  float *fa = malloc(fn * sizeof *fa), *fb = malloc(fn * sizeof *fb);
  if (!fa || !fb) {
    fprintf(stderr, ME ": out of memory for features\n");
    goto done;
  }
  double t0 = gf_mono_s();
  if (gf_inception_load(&ctx, NULL, NULL, 32, &net, &err) != GF_OK) {
    fprintf(stderr, ME ": FID network: %s\n", err.msg);
    goto done;
  }
  char warn[1200] = "";
  if (gf_quality_ref_init(net, ds->pixels, o->n, c, h, w, NULL, &ref, warn,
                          sizeof warn, &err) != GF_OK) {
    fprintf(stderr, ME ": reference statistics: %s\n", err.msg);
    goto done;
  }
  if (warn[0]) fprintf(stderr, ME ": warning: %s\n", warn);
  fprintf(stderr, ME ": reference (first %d data images) %s in %.1f s\n",
          o->n, ref.from_cache ? "read from the cache" : "computed",
          gf_mono_s() - t0);
  t0 = gf_mono_s();
  if (gf_inception_features_f32(net, fp32, o->n, c, h, w, fa, &err) !=
          GF_OK ||
      gf_inception_features_f32(net, bf16, o->n, c, h, w, fb, &err) !=
          GF_OK) {
    fprintf(stderr, ME ": Inception features: %s\n", err.msg);
    goto done;
  }
  fprintf(stderr, ME ": features of both sets in %.1f s\n",
          gf_mono_s() - t0);
  gf_kid_config kc = gf_kid_config_default();
  kc.seed = o->seed;
  gf_quality qa, qb;
  if (gf_quality_of_features(&ref, fa, o->n, GF_QUALITY_FID | GF_QUALITY_KID,
                             &kc, &qa, &err) != GF_OK ||
      gf_quality_of_features(&ref, fb, o->n, GF_QUALITY_FID | GF_QUALITY_KID,
                             &kc, &qb, &err) != GF_OK) {
    fprintf(stderr, ME ": FID/KID against the data: %s\n", err.msg);
    goto done;
  }
  double fid_ab = NAN, kid_ab = NAN, kid_ab_std = NAN;
  if (gf_feat_moments_compute(fa, o->n, GF_INCEPTION_DIM, &ma, &err) !=
          GF_OK ||
      gf_feat_moments_compute(fb, o->n, GF_INCEPTION_DIM, &mb, &err) !=
          GF_OK ||
      gf_fid(&ma, &mb, &fid_ab, &err) != GF_OK ||
      gf_kid(fa, o->n, fb, o->n, GF_INCEPTION_DIM, &kc, &kid_ab, &kid_ab_std,
             &err) != GF_OK) {
    fprintf(stderr, ME ": FID/KID of %s against fp32: %s\n", gf_gen_precision_name(o->low),
            err.msg);
    goto done;
  }
  printf("fid reference: first %d images of %s, data sha256 %s\n", o->n,
         ds->source, ref.data_sha256);
  printf("fid fp32 vs data: %.4f\n", qa.fid);
  printf("fid %s vs data: %.4f\n", gf_gen_precision_name(o->low), qb.fid);
  printf("fid %s vs fp32: %.6f\n", gf_gen_precision_name(o->low), fid_ab);
  printf("kid fp32 vs data: %.6f +- %.6f\n", qa.kid, qa.kid_std);
  printf("kid %s vs data: %.6f +- %.6f\n", gf_gen_precision_name(o->low), qb.kid, qb.kid_std);
  printf("kid %s vs fp32: %.6f +- %.6f\n", gf_gen_precision_name(o->low), kid_ab, kid_ab_std);
  rc = 0;
done:
  gf_feat_moments_free(&ma);
  gf_feat_moments_free(&mb);
  gf_quality_ref_free(&ref);
  gf_inception_free(net);
  free(fa);
  free(fb);
  gf_ctx_free(&ctx);
  return rc;
}

int main(int argc, char **argv) {
  opts o;
  int pr = parse_opts(argc, argv, &o);
  if (pr != 0) {
    usage(pr > 0 ? stdout : stderr);
    return pr > 0 ? 0 : 2;
  }
  gf_generator *m32 = NULL, *m16 = NULL;
  float *img32 = NULL, *img16 = NULL;
  gf_dataset ds = {0};
  double t32 = 0, t16 = 0;
  int rc = generate(&o, GF_GEN_FP32, &m32, &img32, &t32);
  if (rc == 0) rc = generate(&o, o.low, &m16, &img16, &t16);
  const char *low = gf_gen_precision_name(o.low);
  if (rc != 0) goto done;
  const gf_model_config *c = &m32->cfg;
  rc = 1;
  if (c->image_channels != 1 && c->image_channels != 3) {
    fprintf(stderr, ME ": images of %d channels; SWD and the FID network "
            "take 1 or 3\n", c->image_channels);
    goto done;
  }

  gf_data_options dopt = {0};
  gf_err err = {0};
  if (gf_data_spec_parse(o.data, &dopt, &err) != GF_OK) {
    fprintf(stderr, ME ": --data: %s\n", err.msg);
    rc = 2;
    goto done;
  }
  dopt.fit = GF_DATA_FIT_RESIZE; /* as ganflow-train loads it */
  dopt.channels = c->image_channels;
  dopt.height = c->image_height;
  dopt.width = c->image_width;
  if (gf_dataset_load(&ds, &dopt, &err) != GF_OK) {
    fprintf(stderr, ME ": --data %s: %s\n", o.data, err.msg);
    goto done;
  }
  if (ds.n < o.n) {
    fprintf(stderr, ME ": --data %s holds %lld images, fewer than --n %d\n",
            o.data, (long long)ds.n, o.n);
    goto done;
  }

  printf("model: %s (%s %dx%dx%d, z_dim %d)\n", o.model_dir,
         gf_arch_name(c->architecture), c->image_channels, c->image_height,
         c->image_width, c->z_dim);
  printf("images: %d per set, image k = sample k of seed %llu\n", o.n,
         (unsigned long long)o.seed);
  printf("batch-invariant (load probe): fp32 %s, %s %s\n",
         m32->batch_invariant ? "yes" : "no", low,
         m16->batch_invariant ? "yes" : "no");
  printf("generate fp32: %.3f s (%.1f img/s, 1 thread, passes of <= %d)\n",
         t32, o.n / t32, o.max_batch);
  printf("generate %s: %.3f s (%.1f img/s, 1 thread, passes of <= %d)\n",
         low, t16, o.n / t16, o.max_batch);
  print_pixels(img32, img16, (size_t)o.n * m32->image_numel, low);
  fflush(stdout);

  gf_swd_images s32 = {img32, GF_SWD_F32, o.n, c->image_channels,
                       c->image_height, c->image_width};
  gf_swd_images s16 = s32;
  s16.data = img16;
  gf_swd_images sdata = s32;
  sdata.data = ds.pixels;
  sdata.pixel = GF_SWD_U8;
  int i8 = o.low == GF_GEN_INT8;
  const char *l1 = i8 ? "int8 vs fp32" : "bf16 vs fp32";
  const char *l2 = i8 ? "int8 vs data" : "bf16 vs data";
  if (print_swd(l1, &s32, &s16, &o) != 0 ||
      print_swd("fp32 vs data", &sdata, &s32, &o) != 0 ||
      print_swd(l2, &sdata, &s16, &o) != 0)
    goto done;
  fflush(stdout);

  rc = quality(&o, &ds, img32, img16, c->image_channels, c->image_height,
               c->image_width);
done:
  gf_dataset_free(&ds);
  free(img32);
  free(img16);
  gf_generator_unref(m32);
  gf_generator_unref(m16);
  return rc;
}
