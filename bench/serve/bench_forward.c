/* bench_forward.c - the ganflow side of bench/serve/onnx/: times the
 * generator forward of one registered model directory through the public
 * API of gf/generator.h only (gf_generator_load, gf_generator_latents,
 * gf_generator_run), on the CPU backend (or --device cuda[:N]), one
 * executor, --threads op threads; so it measures whatever gf_generator_run does at the commit
 * built. It can also write the latents and images of a given seed, for
 * ort_forward.py to compare ONNX Runtime's images with.
 *
 *   bench_forward --model-dir DIR [--threads N (1)] [--batch "1 16"]
 *                 [--seconds S (2)] [--warmup-seconds S (0.3)]
 *                 [--seed S (7)] [--dump-n N (16)] [--dump-latents FILE]
 *                 [--dump-f32 FILE] [--dump-png FILE]
 *
 * Per batch size B (stdout, one line each):
 *   ganflow batch B: median X ms/pass, Y img/s (p10 P ms, p90 Q ms, K passes)
 * where a pass is one gf_generator_run of B latents (latents drawn once,
 * outside the timing), after warm-up passes for --warmup-seconds; passes
 * go on until --seconds have passed and at least 10 were timed.
 * Dumps: the --dump-n latents of --seed (image k is sample k of the seed,
 * gf_generator_latents with per_image 0) as raw little-endian float32
 * [N, z_dim]; their images from one gf_generator_run of N as float32 NCHW
 * [N, C, H, W] in [-1, 1]; the same images as a PNG grid.
 * Not here: ONNX Runtime (ort_forward.py), the table (run.sh).
 * Exit status: 0 success, 1 error, 2 usage error. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf/generator.h"

#define MAX_SIZES 16
#define MIN_PASSES 10

typedef struct opts {
  const char *model_dir;
  int threads;              /* op threads of the one executor, >= 1 */
  int cuda;                 /* --device cuda[:N]: 1, with device below */
  int precision;            /* --precision: a gf_gen_precision */
  int device;
  int batch[MAX_SIZES];     /* batch sizes to time, each 1..4096 */
  int n_batch;
  double seconds;           /* timed seconds per batch size, > 0 */
  double warmup_seconds;    /* untimed seconds per batch size, >= 0 */
  uint64_t seed;            /* latents of the timing and of the dumps */
  int dump_n;               /* images dumped, 1..4096 */
  const char *dump_latents; /* paths or NULL */
  const char *dump_f32;
  const char *dump_png;
} opts;

static void usage(FILE *out) {
  fprintf(out,
          "usage: bench_forward --model-dir DIR [--threads N] [--batch \"1 16\"]\n"
          "                     [--seconds S] [--warmup-seconds S] [--seed S]\n"
          "                     [--dump-n N] [--dump-latents FILE] "
          "[--dump-f32 FILE]\n"
          "                     [--dump-png FILE]\n"
          "  Times gf_generator_run (1 executor) of a verified MLflow\n"
          "  model directory at each batch size: median and p10/p90 ms per\n"
          "  pass over at least --seconds (2) after --warmup-seconds (0.3).\n"
          "  --threads N         op threads, 1..256 (1)\n"
          "  --device DEV        cpu or cuda[:N] (cpu)\n"
          "  --precision P       fp32, bf16 or int8 (fp32)\n"
          "  --batch LIST        batch sizes, space- or comma-separated, each\n"
          "                      1..4096, at most %d (\"1 16\")\n"
          "  --seed S            latents: image k is sample k of seed S (7)\n"
          "  --dump-n N          images the dumps hold, 1..4096 (16)\n"
          "  --dump-latents F    the dump's latents, float32 [N, z_dim]\n"
          "  --dump-f32 F        their images, float32 NCHW in [-1, 1]\n"
          "  --dump-png F        the same images as a PNG grid\n"
          "  Exit status: 0 success, 1 error, 2 usage error.\n",
          MAX_SIZES);
}

/* Whole number in [lo, hi], the whole string. */
static int parse_int(const char *s, long lo, long hi, long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

static int parse_double(const char *s, double lo, double hi, double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (errno != 0 || end == s || *end != '\0' || !(v >= lo && v <= hi))
    return -1;
  *out = v;
  return 0;
}

/* "1 16" or "1,16" into o->batch; -1 on an empty, bad or too long list. */
static int parse_batches(const char *s, opts *o) {
  o->n_batch = 0;
  const char *p = s;
  while (*p) {
    while (*p == ' ' || *p == ',') p++;
    if (!*p) break;
    char tok[32];
    size_t n = strcspn(p, " ,");
    if (n >= sizeof tok || o->n_batch == MAX_SIZES) return -1;
    memcpy(tok, p, n);
    tok[n] = '\0';
    long v;
    if (parse_int(tok, 1, 4096, &v) != 0) return -1;
    o->batch[o->n_batch++] = (int)v;
    p += n;
  }
  return o->n_batch > 0 ? 0 : -1;
}

/* 0 on success; -1 after printing what was wrong; 1 for --help. */
static int parse_opts(int argc, char **argv, opts *o) {
  *o = (opts){.threads = 1, .batch = {1, 16}, .n_batch = 2, .seconds = 2.0,
              .warmup_seconds = 0.3, .seed = 7, .dump_n = 16};
  for (int i = 1; i < argc; i++) {
    const char *f = argv[i];
    if (strcmp(f, "--help") == 0 || strcmp(f, "-h") == 0) return 1;
    const char *v = i + 1 < argc ? argv[++i] : NULL;
    if (!v) {
      fprintf(stderr, "bench_forward: %s needs a value\n", f);
      return -1;
    }
    long x = 0;
    int bad = 0;
    if (strcmp(f, "--model-dir") == 0) o->model_dir = v;
    else if (strcmp(f, "--dump-latents") == 0) o->dump_latents = v;
    else if (strcmp(f, "--dump-f32") == 0) o->dump_f32 = v;
    else if (strcmp(f, "--dump-png") == 0) o->dump_png = v;
    else if (strcmp(f, "--batch") == 0) bad = parse_batches(v, o);
    else if (strcmp(f, "--precision") == 0) {
      bad = strcmp(v, "fp32") != 0 && strcmp(v, "bf16") != 0 &&
            strcmp(v, "int8") != 0;
      o->precision = strcmp(v, "bf16") == 0   ? GF_GEN_BF16
                     : strcmp(v, "int8") == 0 ? GF_GEN_INT8
                                              : GF_GEN_FP32;
    } else if (strcmp(f, "--device") == 0) {
      if (strcmp(v, "cpu") == 0) o->cuda = 0;
      else if (strcmp(v, "cuda") == 0) o->cuda = 1, o->device = 0;
      else if (strncmp(v, "cuda:", 5) == 0) {
        bad = parse_int(v + 5, 0, 255, &x);
        o->cuda = 1;
        o->device = (int)x;
      } else bad = 1;
    }
    else if (strcmp(f, "--seconds") == 0)
      bad = parse_double(v, 0.001, 3600, &o->seconds);
    else if (strcmp(f, "--warmup-seconds") == 0)
      bad = parse_double(v, 0, 3600, &o->warmup_seconds);
    else if (strcmp(f, "--threads") == 0) {
      bad = parse_int(v, 1, 256, &x);
      o->threads = (int)x;
    } else if (strcmp(f, "--dump-n") == 0) {
      bad = parse_int(v, 1, 4096, &x);
      o->dump_n = (int)x;
    } else if (strcmp(f, "--seed") == 0) {
      char *end = NULL;
      errno = 0;
      unsigned long long s = strtoull(v, &end, 10);
      bad = errno != 0 || end == v || *end != '\0' || v[0] == '-';
      o->seed = (uint64_t)s;
    } else {
      fprintf(stderr, "bench_forward: unknown flag %s\n", f);
      return -1;
    }
    if (bad) {
      fprintf(stderr, "bench_forward: %s: bad value '%s'\n", f, v);
      return -1;
    }
  }
  if (!o->model_dir) {
    fprintf(stderr, "bench_forward: --model-dir is required\n");
    return -1;
  }
  return 0;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* q-quantile of sorted v[0..n) (nearest rank, n >= 1). */
static double quantile(const double *v, size_t n, double q) {
  size_t k = (size_t)(q * (double)(n - 1) + 0.5);
  return v[k < n ? k : n - 1];
}

/* Writes len bytes to path (replacing it); 0 or -1 after printing why. */
static int write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  if (!f) {
    fprintf(stderr, "bench_forward: %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t w = fwrite(data, 1, len, f);
  int bad = w != len || ferror(f);
  if (fclose(f) != 0) bad = 1;
  if (bad) {
    fprintf(stderr, "bench_forward: %s: write failed\n", path);
    return -1;
  }
  return 0;
}

/* Times batch b: z holds at least b latents, img room for b images.
 * Returns 0, or -1 after printing the error. */
static int time_batch(gf_generator *m, const opts *o, int b, const float *z,
                      float *img) {
  gf_err err = {0};
  double t_end = now_s() + o->warmup_seconds;
  int warm = 0;
  do {
    if (gf_generator_run(m, 0, z, b, img, &err) != GF_OK) goto fail;
    warm++;
  } while (now_s() < t_end || warm < 2);
  size_t cap = 1024, n = 0;
  double *t = malloc(cap * sizeof *t);
  if (!t) {
    fprintf(stderr, "bench_forward: out of memory\n");
    return -1;
  }
  double start = now_s();
  for (;;) {
    double t0 = now_s();
    if (gf_generator_run(m, 0, z, b, img, &err) != GF_OK) {
      free(t);
      goto fail;
    }
    double t1 = now_s();
    if (n == cap) {
      double *t2 = realloc(t, 2 * cap * sizeof *t);
      if (!t2) {
        free(t);
        fprintf(stderr, "bench_forward: out of memory\n");
        return -1;
      }
      t = t2;
      cap *= 2;
    }
    t[n++] = (t1 - t0) * 1e3;
    if (t1 - start >= o->seconds && n >= MIN_PASSES) break;
  }
  qsort(t, n, sizeof *t, cmp_double);
  double med = quantile(t, n, 0.5);
  printf("ganflow batch %d: median %.4f ms/pass, %.1f img/s "
         "(p10 %.4f ms, p90 %.4f ms, %zu passes, %d threads)\n",
         b, med, (double)b * 1e3 / med, quantile(t, n, 0.1),
         quantile(t, n, 0.9), n, o->threads);
  fflush(stdout);
  free(t);
  return 0;
fail:
  fprintf(stderr, "bench_forward: batch %d: %s\n", b, err.msg);
  return -1;
}

/* The dumps of o (those asked for); 0 or -1 after printing the error. */
static int dump(gf_generator *m, const opts *o, const float *z, float *img) {
  gf_err err = {0};
  size_t zn = (size_t)o->dump_n * (size_t)m->cfg.z_dim;
  size_t in = (size_t)o->dump_n * m->image_numel;
  if (o->dump_latents && write_file(o->dump_latents, z, zn * sizeof *z) != 0)
    return -1;
  if (!o->dump_f32 && !o->dump_png) return 0;
  if (gf_generator_run(m, 0, z, o->dump_n, img, &err) != GF_OK) {
    fprintf(stderr, "bench_forward: dump: %s\n", err.msg);
    return -1;
  }
  if (o->dump_f32 && write_file(o->dump_f32, img, in * sizeof *img) != 0)
    return -1;
  if (o->dump_png) {
    uint8_t *png = NULL;
    size_t len = 0;
    if (gf_generator_png(m, img, o->dump_n, &png, &len, &err) != GF_OK) {
      fprintf(stderr, "bench_forward: --dump-png: %s\n", err.msg);
      return -1;
    }
    int rc = write_file(o->dump_png, png, len);
    free(png);
    if (rc != 0) return -1;
  }
  return 0;
}

int main(int argc, char **argv) {
  opts o;
  int pr = parse_opts(argc, argv, &o);
  if (pr != 0) {
    usage(pr > 0 ? stdout : stderr);
    return pr > 0 ? 0 : 2;
  }
  int max_batch = o.dump_n;
  for (int i = 0; i < o.n_batch; i++)
    if (o.batch[i] > max_batch) max_batch = o.batch[i];
  gf_generator_opts mo = {.backend = o.cuda ? GF_BACKEND_CUDA
                                            : GF_BACKEND_CPU,
                          .device_index = o.device,
                          .n_exec = 1, .threads = o.threads,
                          .max_batch = max_batch, .resident = NULL,
                          .precision = (gf_gen_precision)o.precision};
  gf_err err = {0};
  gf_generator *m = NULL;
  if (gf_generator_load(o.model_dir, "bench", "local", &mo, &m, &err) !=
      GF_OK) {
    fprintf(stderr, "bench_forward: %s: %s\n", o.model_dir, err.msg);
    return 1;
  }
  const gf_model_config *c = &m->cfg;
  printf("# model %s: %s %dx%dx%d, z_dim %d, ngf %d; %s %s, 1 executor, "
         "%d threads, max batch %d\n",
         o.model_dir, gf_arch_name(c->architecture), c->image_height,
         c->image_width, c->image_channels, c->z_dim, c->ngf,
         o.cuda ? "CUDA" : "CPU", gf_gen_precision_name(m->precision),
         o.threads, max_batch);
  printf("# batch-invariant rows (load probe): %s%s%s\n",
         m->batch_invariant ? "yes" : "no", m->batch_invariant ? "" : ": ",
         m->batch_invariant ? "" : m->invariance_note);
  int rc = 0;
  float *z = malloc((size_t)max_batch * (size_t)c->z_dim * sizeof *z);
  float *img = malloc((size_t)max_batch * m->image_numel * sizeof *img);
  if (!z || !img) {
    fprintf(stderr, "bench_forward: out of memory\n");
    rc = 1;
  } else if (gf_generator_latents(m, &o.seed, max_batch, 0, z, &err) !=
             GF_OK) {
    fprintf(stderr, "bench_forward: latents: %s\n", err.msg);
    rc = 1;
  }
  if (rc == 0 && dump(m, &o, z, img) != 0) rc = 1;
  for (int i = 0; rc == 0 && i < o.n_batch; i++)
    if (time_batch(m, &o, o.batch[i], z, img) != 0) rc = 1;
  free(img);
  free(z);
  gf_generator_unref(m);
  return rc;
}
