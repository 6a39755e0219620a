/* bench_cuda.c - time of one full GAN training step (gf_gan_step: G
 * forward, D forward+backward on a real and a fake batch, Adam on D, D
 * forward+backward into G, G backward, Adam on G) on the CUDA backend, for
 * one network and batch per process. Each timed step ends with
 * gf_ctx_sync, so the median is wall time of finished work; the step's own
 * read-backs (losses, D outputs) are included, as in ganflow-train.
 * Prints one line; run.sh adds TFLOP/s from the FLOP count of
 * torch_cuda.py --flops-only and runs PyTorch beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf/clock.h"
#include "gf/gan.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int usage(void) {
  fprintf(stderr, "usage: bench_cuda --model dcgan28|dcgan32|dcgan64|mlp [--batch N] "
                  "[--steps N] [--device N] [--tf32] [--deterministic]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *model = NULL;
  int batch = 64, steps = 50, dev = 0, tf32 = 0, det = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tf32")) tf32 = 1;
    else if (!strcmp(argv[i], "--deterministic")) det = 1;
    else if (i + 1 >= argc) return usage();
    else if (!strcmp(argv[i], "--model")) model = argv[++i];
    else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--device")) dev = atoi(argv[++i]);
    else return usage();
  }
  if (!model || batch < 2 || steps < 1) return usage();
  gf_model_config c;
  if (!strcmp(model, "mlp")) {
    gf_model_config_default(&c, GF_ARCH_MLP);
    c.z_dim = 50;
  } else if (!strncmp(model, "dcgan", 5)) {
    gf_model_config_default(&c, GF_ARCH_DCGAN);
    int size = atoi(model + 5);
    c.image_height = c.image_width = size;
    c.image_channels = size == 28 ? 1 : 3; /* as bench/model and torch_cuda.py */
  } else {
    return usage();
  }
  gf_err err = {0};
  gf_ctx ctx;
  gf_ctx_config cc = {GF_BACKEND_CUDA, 1, dev, GF_CPU_LAYOUT_AUTO};
  if (gf_ctx_init(&ctx, &cc, &err) != GF_OK) {
    fprintf(stderr, "ctx: %s\n", err.msg);
    return 1;
  }
  ctx.allow_tf32 = tf32;
  ctx.deterministic = det;
  gf_gan gan;
  gf_tensor host, real;
  memset(&real, 0, sizeof real);
  int64_t rs[4] = {batch, c.image_channels, c.image_height, c.image_width};
  int rc = 1;
  if (gf_gan_init(&gan, &ctx, &c, NULL, batch, &err) != GF_OK ||
      gf_gan_init_params(&gan, 1, &err) != GF_OK ||
      gf_tensor_init(&host, GF_F32, GF_DEV_CPU, 4, rs, &err) != GF_OK) {
    fprintf(stderr, "setup: %s\n", err.msg);
    goto out;
  }
  float *hp = host.data;
  for (int64_t i = 0; i < gf_tensor_numel(&host); i++)
    hp[i] = (float)((i * 7919) % 255) / 127.5f - 1.0f;
  if (gf_tensor_init_on(&real, GF_F32, GF_DEV_CUDA, dev, 4, rs, &err) != GF_OK ||
      gf_tensor_copy(&real, &host, &err) != GF_OK) {
    fprintf(stderr, "batch: %s\n", err.msg);
    goto out;
  }
  double *t = calloc((size_t)steps, sizeof *t);
  gf_gan_stats s = {0};
  rc = 0;
  for (int i = -3; i < steps && rc == 0; i++) { /* 3 warm-up steps (algorithms, workspace) */
    double t0 = gf_mono_s();
    if (gf_gan_step(&gan, &ctx, &real, NULL, 7, i + 3, 0, &s, &err) != GF_OK ||
        gf_ctx_sync(&ctx, &err) != GF_OK) {
      fprintf(stderr, "step: %s\n", err.msg);
      rc = 1;
    }
    if (i >= 0) t[i] = gf_mono_s() - t0;
  }
  if (rc == 0) {
    qsort(t, (size_t)steps, sizeof *t, cmp_double);
    double med = t[steps / 2];
    gf_ctx_stats cs = gf_ctx_get_stats(&ctx);
    printf("%-8s batch %3d%s%s: step %8.3f ms median (min %.3f, max %.3f, %d steps), "
           "%9.1f img/s; workspace %.1f MiB; algos %zu; loss_d %.3f loss_g %.3f\n",
           model, batch, tf32 ? " tf32" : " fp32", det ? " det" : "", 1e3 * med, 1e3 * t[0],
           1e3 * t[steps - 1], steps, batch / med, cs.scratch_bytes / 1048576.0,
           cs.cached_primitives, s.loss_d, s.loss_g);
  }
  free(t);
out:
  gf_tensor_free(&real);
  gf_tensor_free(&host);
  gf_gan_free(&gan);
  gf_ctx_free(&ctx);
  return rc;
}
