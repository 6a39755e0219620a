/* bench_model.c - time and peak memory of one full GAN training step
 * (gf_gan_step: G forward, D forward+backward on a real and a fake batch,
 * Adam on D, D forward+backward into G, G backward, Adam on G) for one
 * network per process, so that the RSS high-water mark (VmHWM) is that
 * network's. Prints one line per model; run.sh runs the set and the
 * PyTorch baseline (torch_baseline.py) beside it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "gf/clock.h"
#include "gf/gan.h"

static int usage(void) {
  fprintf(stderr, "usage: bench_model --model mlp|dcgan28|dcgan32|dcgan64 [--batch N] "
                  "[--threads N] [--steps N]\n");
  return 2;
}

int main(int argc, char **argv) {
  const char *model = NULL;
  int batch = 64, threads = 1, steps = 10;
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) return usage();
    if (!strcmp(argv[i], "--model")) model = argv[++i];
    else if (!strcmp(argv[i], "--batch")) batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--threads")) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--steps")) steps = atoi(argv[++i]);
    else return usage();
  }
  if (!model || batch < 2 || threads < 1 || steps < 1) return usage();
  gf_model_config c;
  if (!strcmp(model, "mlp")) {
    gf_model_config_default(&c, GF_ARCH_MLP);
    c.z_dim = 50; /* the paper's network */
  } else if (!strncmp(model, "dcgan", 5)) {
    gf_model_config_default(&c, GF_ARCH_DCGAN);
    int size = atoi(model + 5);
    c.image_height = c.image_width = size;
    c.image_channels = size == 64 ? 3 : 1; /* CIFAR/CelebA-like vs MNIST-like */
    if (size == 32) c.image_channels = 3;
  } else {
    return usage();
  }
  gf_err err = {0};
  gf_ctx ctx;
  gf_ctx_config cc = {GF_BACKEND_CPU, threads, 0, GF_CPU_LAYOUT_AUTO};
  if (gf_ctx_init(&ctx, &cc, &err) != GF_OK) {
    fprintf(stderr, "ctx: %s\n", err.msg);
    return 1;
  }
  gf_gan gan;
  if (gf_gan_init(&gan, &ctx, &c, NULL, batch, &err) != GF_OK ||
      gf_gan_init_params(&gan, 1, &err) != GF_OK) {
    fprintf(stderr, "gan: %s\n", err.msg);
    gf_gan_free(&gan);
    gf_ctx_free(&ctx);
    return 1;
  }
  gf_tensor real;
  int64_t rs[4] = {batch, c.image_channels, c.image_height, c.image_width};
  if (gf_tensor_init(&real, GF_F32, GF_DEV_CPU, 4, rs, &err) != GF_OK) {
    fprintf(stderr, "real: %s\n", err.msg);
    return 1;
  }
  float *rp = real.data;
  for (int64_t i = 0; i < gf_tensor_numel(&real); i++) rp[i] = (float)((i * 7919) % 255) / 127.5f - 1.0f;
  double *t = calloc((size_t)steps, sizeof *t);
  gf_gan_stats s = {0};
  int rc = 0;
  for (int i = -1; i < steps && rc == 0; i++) { /* step -1: warm-up (primitive cache) */
    double t0 = gf_mono_s();
    if (gf_gan_step(&gan, &ctx, &real, NULL, 7, i + 1, 0, &s, &err) != GF_OK) {
      fprintf(stderr, "step: %s\n", err.msg);
      rc = 1;
    }
    if (i >= 0) t[i] = gf_mono_s() - t0;
  }
  if (rc == 0) {
    qsort(t, (size_t)steps, sizeof *t, gf_bench_cmp_double);
    double med = t[steps / 2];
    printf("%-8s batch %3d threads %d: step %8.1f ms median (min %.1f, max %.1f, %d steps), "
           "%7.1f img/s; params G %lld D %lld; arenas %.1f MiB; VmHWM %.1f MiB; "
           "loss_d %.3f loss_g %.3f\n",
           model, batch, threads, 1e3 * med, 1e3 * t[0], 1e3 * t[steps - 1], steps, batch / med,
           (long long)gf_net_num_trainable(&gan.g), (long long)gf_net_num_trainable(&gan.d),
           gf_gan_arena_bytes(&gan) / 1048576.0, gf_bench_vm_hwm_kib() / 1024.0, s.loss_d, s.loss_g);
  }
  free(t);
  gf_tensor_free(&real);
  gf_gan_free(&gan);
  gf_ctx_free(&ctx);
  return rc;
}
