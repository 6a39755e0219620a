/* test_cuda_r1.c - gf_net_r1 (the R1 penalty by double backprop) on the
 * CUDA backend against the same call on the CPU (label gpu; exits 77 where
 * there is no GPU or no CUDA backend), for mlp with dropout (masks keyed by
 * step, pass 3 and global samples from 5), mlp with spectral norm, and
 * dcgan-28 and dcgan-64x64x3 with spectral norm. Both nets hold the same
 * bits (parameters made on the host, u and v after 3 power iterations on
 * the CPU, copied over) and the same real batch. Checked:
 *   P                  |d| <= 1e-4 |P_cpu|
 *   each weight grad   L2 of the difference <= 1e-5 of the CPU's L2;
 *                      entries |d| <= 1e-4 rms + 1e-4 |t|
 * (measured on an H200: P within 1e-5, gradients 5e-7 of their L2, entries
 * within 0.02 of their tolerance)
 *   bias grads         the 0.25 they held before (R1 adds exactly 0)
 * (f32 on both sides; the sums run in other orders: cuDNN/cuBLAS against
 * oneDNN.) Then under ctx->deterministic two CUDA nets give bit-identical P
 * and gradients, and a second call on one adds exactly the same gradient
 * again. Each line printed gives the worst error seen. With argument
 * "--time" it also times, on each backend, gf_net_r1 against one train
 * forward + backward (param grads) of a dcgan-64x64x3 D with spectral norm
 * (ndf 64, batch 64): printed, not checked. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "gf/net.h"
#include "kt_cuda.h"
#include "kt_util.h"

/* A device view of a host-side arena layout: the used bytes of arena d. */
static gf_tensor arena_dev(const gf_arena *a) {
  gf_tensor v;
  gf_err e = {0};
  REQUIRE(gf_arena_view_all(a, &v, &e) == GF_OK);
  v.device_index = a->device_index;
  return v;
}
/* dst (device) = src (host), the used bytes of both arenas (same layout). */
static void arena_to_dev(gf_arena *dst, const gf_arena *src) {
  REQUIRE(dst->used == src->used);
  if (!src->used) return;
  gf_tensor d = arena_dev(dst), h = arena_dev(src);
  gf_err e = {0};
  REQUIRE(gf_tensor_copy(&d, &h, &e) == GF_OK);
}
static float *arena_host(const gf_arena *a) {
  float *h = malloc(a->used + 4);
  REQUIRE(h);
  gf_tensor d = arena_dev(a), ht;
  gf_err e = {0};
  REQUIRE(gf_tensor_view(&ht, h, GF_F32, GF_DEV_CPU, 1, d.shape, &e) == GF_OK);
  REQUIRE(gf_tensor_copy(&ht, &d, &e) == GF_OK);
  return h;
}

static void prefill_bias(gf_net *net, gf_ctx *ctx) {
  gf_err e = {0};
  for (int t = 0; t < net->n_tensors; t++)
    if (net->tensors[t].kind == GF_PARAM_BIAS)
      REQUIRE(gf_fill(ctx, &net->tensors[t].grad, 0.25f, &e) == GF_OK);
}

static void run(gf_ctx *cpu, gf_ctx *gpu, const gf_model_config *c, int n, float scale,
                int64_t sample0, int pass, const char *what) {
  gf_err e = {0};
  gf_net h, d, d2;
  REQUIRE(gf_net_init(&h, cpu, c, GF_NET_D, n, true, &e) == GF_OK);
  gf_status st = gf_net_init(&d, gpu, c, GF_NET_D, n, true, &e);
  CHECKF(st == GF_OK, "%s: %s", what, e.msg);
  REQUIRE(st == GF_OK);
  REQUIRE(gf_net_init(&d2, gpu, c, GF_NET_D, n, true, &e) == GF_OK);
  REQUIRE(gf_net_init_params(&h, 7, &e) == GF_OK);
  for (int i = 0; i < 3; i++) REQUIRE(gf_net_sn_iterate(&h, cpu, &e) == GF_OK);
  gf_net *devs[2] = {&d, &d2};
  for (int k = 0; k < 2; k++) {
    arena_to_dev(&devs[k]->params, &h.params);
    arena_to_dev(&devs[k]->bn_stats, &h.bn_stats);
    prefill_bias(devs[k], gpu);
  }
  prefill_bias(&h, cpu);
  gf_tensor x;
  int64_t xs[4] = {n, c->image_channels, c->image_height, c->image_width};
  REQUIRE(gf_tensor_init(&x, GF_F32, GF_DEV_CPU, 4, xs, &e) == GF_OK);
  kt_rng r = {42};
  kt_fill(&x, &r, -1.0, 1.0, 0.0);
  gf_tensor xd = kt_to_dev(&x);

  double ph = -1, pd = -1, pd2 = -1;
  REQUIRE(gf_net_r1(&h, cpu, &x, scale, 99, 4, sample0, pass, &ph, &e) == GF_OK);
  gpu->deterministic = 1;
  st = gf_net_r1(&d, gpu, &xd, scale, 99, 4, sample0, pass, &pd, &e);
  CHECKF(st == GF_OK, "%s: %s", what, e.msg);
  REQUIRE(st == GF_OK);
  REQUIRE(gf_net_r1(&d2, gpu, &xd, scale, 99, 4, sample0, pass, &pd2, &e) == GF_OK);

  double prel = fabs(pd - ph) / fabs(ph);
  CHECKF(prel <= 1e-4, "%s: P cuda %.9g cpu %.9g", what, pd, ph);
  CHECKF(pd == pd2, "%s: deterministic P differs: %.17g vs %.17g", what, pd, pd2);
  float *gd = arena_host(&d.grads), *gd2 = arena_host(&d2.grads);
  CHECKF(memcmp(gd, gd2, d.grads.used) == 0, "%s: deterministic gradients differ", what);
  double worst_l2 = 0, worst_el = 0;
  for (int t = 0; t < h.n_tensors; t++) {
    const gf_param *p = &h.tensors[t];
    if (!p->trainable) continue;
    size_t off = (size_t)((const char *)p->grad.data - (const char *)h.grads.base) / 4;
    size_t m = (size_t)gf_tensor_numel(&p->grad);
    const float *gh = p->grad.data, *g = gd + off;
    if (p->kind == GF_PARAM_BIAS) {
      size_t bad = 0;
      for (size_t i = 0; i < m; i++) bad += gh[i] != 0.25f || g[i] != 0.25f;
      CHECKF(bad == 0, "%s %s: %zu bias gradients changed", what, p->name, bad);
      continue;
    }
    double l2 = 0, dl2 = 0;
    for (size_t i = 0; i < m; i++) {
      double dd = g[i] - (double)gh[i];
      l2 += (double)gh[i] * gh[i], dl2 += dd * dd;
    }
    l2 = sqrt(l2);
    dl2 = sqrt(dl2);
    double rms = l2 / sqrt((double)m), rl2 = dl2 / l2;
    CHECKF(l2 > 0 && rl2 <= 1e-5, "%s %s: |cuda - cpu| = %.3g of L2 %.3g", what, p->name, rl2, l2);
    if (rl2 > worst_l2) worst_l2 = rl2;
    size_t bad = 0;
    for (size_t i = 0; i < m; i++) {
      double tol = 1e-4 * rms + 1e-4 * fabs(gh[i]), dd = fabs(g[i] - (double)gh[i]);
      if (dd / tol > worst_el) worst_el = dd / tol;
      bad += !(dd <= tol);
    }
    CHECKF(bad == 0, "%s %s: %zu of %zu entries off", what, p->name, bad, m);
  }
  /* a second call adds the same again (deterministic: exactly) */
  REQUIRE(gf_net_r1(&d, gpu, &xd, scale, 99, 4, sample0, pass, NULL, &e) == GF_OK);
  gpu->deterministic = 0;
  float *gd3 = arena_host(&d.grads);
  size_t bad = 0;
  for (int t = 0; t < h.n_tensors; t++) {
    const gf_param *p = &h.tensors[t];
    if (!p->trainable || p->kind == GF_PARAM_BIAS) continue;
    size_t off = (size_t)((const char *)p->grad.data - (const char *)h.grads.base) / 4;
    for (size_t i = 0; i < (size_t)gf_tensor_numel(&p->grad); i++)
      bad += gd3[off + i] != 2.0f * gd[off + i];
  }
  CHECKF(bad == 0, "%s: second call: %zu entries not exactly doubled", what, bad);
  printf("%s: P cuda %.9g cpu %.9g (rel %.3g); worst grad |d|/L2 %.3g, entry |d|/tol %.3g\n", what,
         pd, ph, prel, worst_l2, worst_el);
  free(gd);
  free(gd2);
  free(gd3);
  gf_tensor_free(&xd);
  gf_tensor_free(&x);
  gf_net_free(&h);
  gf_net_free(&d);
  gf_net_free(&d2);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Milliseconds per gf_net_r1 and per forward + backward on ctx. */
static void time_one(gf_ctx *ctx, const char *what, int reps) {
  gf_err e = {0};
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  c.image_height = c.image_width = 64;
  c.image_channels = 3;
  c.ndf = 64;
  c.spectral_norm = 1;
  int n = 64;
  gf_net d;
  REQUIRE(gf_net_init(&d, ctx, &c, GF_NET_D, n, true, &e) == GF_OK);
  REQUIRE(gf_net_init_params(&d, 7, &e) == GF_OK);
  gf_tensor xh, x, y, dy;
  int64_t xs[4] = {n, 3, 64, 64}, ys[2] = {n, 1};
  REQUIRE(gf_tensor_init(&xh, GF_F32, GF_DEV_CPU, 4, xs, &e) == GF_OK);
  kt_rng r = {1};
  kt_fill(&xh, &r, -1.0, 1.0, 0.0);
  REQUIRE(gf_tensor_init(&x, GF_F32, ctx->device, 4, xs, &e) == GF_OK);
  REQUIRE(gf_tensor_copy(&x, &xh, &e) == GF_OK);
  REQUIRE(gf_tensor_init(&dy, GF_F32, ctx->device, 2, ys, &e) == GF_OK);
  REQUIRE(gf_fill(ctx, &dy, 1.0f / n, &e) == GF_OK);
  double ms[2];
  for (int k = 0; k < 2; k++) {
    double t0 = 0;
    for (int i = 0; i <= reps; i++) { /* i = 0: warm-up */
      if (i == 1) {
        REQUIRE(gf_ctx_sync(ctx, &e) == GF_OK);
        t0 = now_s();
      }
      double pen;
      if (k == 0) {
        REQUIRE(gf_net_r1(&d, ctx, &x, 1.0f, 1, i, 0, 3, &pen, &e) == GF_OK);
      } else {
        REQUIRE(gf_net_forward(&d, ctx, &x, GF_MODE_TRAIN, 1, i, 0, 0, &y, &e) == GF_OK);
        REQUIRE(gf_net_backward(&d, ctx, &dy, NULL, true, GF_ACCUMULATE, &e) == GF_OK);
      }
    }
    REQUIRE(gf_ctx_sync(ctx, &e) == GF_OK);
    ms[k] = 1e3 * (now_s() - t0) / reps;
  }
  printf("time %s dcgan64x3 SN ndf 64 batch 64: gf_net_r1 %.3f ms, forward + backward %.3f ms "
         "(ratio %.2f)\n",
         what, ms[0], ms[1], ms[0] / ms[1]);
  gf_tensor_free(&xh);
  gf_tensor_free(&x);
  gf_tensor_free(&dy);
  gf_net_free(&d);
}

int main(int argc, char **argv) {
  gf_ctx gpu, cpu;
  kt_cuda_ctx_or_skip(&gpu);
  gf_err e = {0};
  gf_ctx_config cc = {GF_BACKEND_CPU, 2, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&cpu, &cc, &e) == GF_OK);
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_MLP);
  run(&cpu, &gpu, &c, 16, 2.0f, 5, 3, "mlp, dropout");
  c.spectral_norm = 1;
  run(&cpu, &gpu, &c, 16, 0.5f, 0, 0, "mlp SN");
  gf_model_config_default(&c, GF_ARCH_DCGAN);
  c.image_height = c.image_width = 28;
  c.image_channels = 1;
  c.ndf = 32;
  c.spectral_norm = 1;
  run(&cpu, &gpu, &c, 16, 10.0f, 0, 3, "dcgan28 SN");
  c.image_height = c.image_width = 64;
  c.image_channels = 3;
  c.ndf = 16;
  run(&cpu, &gpu, &c, 8, 40.0f, 8, 3, "dcgan64x3 SN");
  /* the resnet's D: residual blocks (written, not yet run on a GPU) */
  gf_model_config_default(&c, GF_ARCH_RESNET);
  c.ndf = 16;
  c.spectral_norm = 1;
  run(&cpu, &gpu, &c, 8, 10.0f, 0, 3, "resnet32x3 SN");
  if (argc > 1 && strcmp(argv[1], "--time") == 0) {
    time_one(&gpu, "cuda", 50);
    gpu.allow_tf32 = 1;
    time_one(&gpu, "cuda tf32", 50);
    gpu.allow_tf32 = 0;
    time_one(&cpu, "cpu (2 threads)", 3);
  }
  gf_ctx_free(&gpu);
  gf_ctx_free(&cpu);
  return check_report();
}
