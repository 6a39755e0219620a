/* bench_kernels.c - forward+backward time of each kernels op at the DCGAN
 * layer shapes (batch 64) on the CPU backend, as GFLOP/s next to this
 * machine's oneDNN SGEMM rate; element-wise ops and batch norm as GB/s.
 *
 * Shapes (see bench/kernels/README.md):
 *   dcgan64: G 100 -> 512x4x4 (k4 s1 p0) -> 256x8x8 -> 128x16x16 -> 64x32x32
 *            -> 3x64x64 (k4 s2 p1), BN + ReLU between, tanh at the end;
 *            D 3x64x64 -> 64x32x32 -> 128x16x16 -> 256x8x8 -> 512x4x4
 *            (k4 s2 p1) -> 1x1x1 (k4 s1 p0), LeakyReLU 0.2, BN from layer 2.
 *   dcgan28: G 100 -> 256x7x7 (k7 s1 p0) -> 128x14x14 -> 1x28x28 (k4 s2 p1);
 *            D 1x28x28 -> 64x14x14 -> 128x7x7 (k4 s2 p1) -> 1x1x1 (k7 s1 p0).
 * Usage: bench_kernels [--threads N] [--batch N] [--min-time SECONDS]
 * Not a test: it prints figures and exits 0 unless an op fails. */
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gf/clock.h"
#include "gf/kernels.h"

static double g_min_time = 0.5;

/* Median seconds per call of fn over repetitions lasting >= g_min_time
 * (at least 3), after one warm-up call. */
typedef int (*bench_fn)(void *u);
static double time_it(bench_fn fn, void *u) {
  if (fn(u)) return -1;
  double t[64];
  int n = 0;
  double start = gf_mono_s();
  while (n < 64 && (n < 3 || gf_mono_s() - start < g_min_time)) {
    double t0 = gf_mono_s();
    if (fn(u)) return -1;
    t[n++] = gf_mono_s() - t0;
  }
  for (int i = 1; i < n; i++) /* insertion sort */
    for (int j = i; j > 0 && t[j] < t[j - 1]; j--) {
      double tmp = t[j];
      t[j] = t[j - 1];
      t[j - 1] = tmp;
    }
  return t[n / 2];
}

/* An owned tensor of ndim dims filled with small pseudo-random values. */
static gf_tensor mkn(int ndim, int64_t a, int64_t b, int64_t c, int64_t d) {
  int64_t s[4] = {a, b, c, d};
  gf_tensor t;
  gf_err e;
  if (gf_tensor_init(&t, GF_F32, GF_DEV_CPU, ndim, s, &e)) {
    fprintf(stderr, "bench: %s\n", e.msg);
    exit(1);
  }
  float *p = t.data;
  uint32_t x = 12345u;
  for (int64_t i = 0; i < gf_tensor_numel(&t); i++) {
    x = x * 1664525u + 1013904223u;
    p[i] = ((float)(x >> 8) * 0x1p-24f - 0.5f) * 0.1f;
  }
  return t;
}
static gf_tensor mk(int64_t a, int64_t b, int64_t c, int64_t d) {
  return mkn(4, a, b, c, d);
}

/* ---- SGEMM ---------------------------------------------------------------- */
typedef struct { int n; float *a, *b, *c; } gemm_u;
static int gemm_run(void *u) {
  gemm_u *g = u;
  return dnnl_sgemm('N', 'N', g->n, g->n, g->n, 1.0f, g->a, g->n, g->b, g->n,
                    0.0f, g->c, g->n) != dnnl_success;
}

/* ---- conv / deconv ---------------------------------------------------------- */
typedef struct {
  gf_ctx *ctx;
  int tr;
  gf_tensor x, w, y, dx, dw;
  gf_conv_params p;
  gf_err e;
} conv_u;
static int conv_f(void *u) {
  conv_u *c = u;
  return c->tr ? gf_deconv2d_fwd(c->ctx, &c->x, &c->w, NULL, &c->p, &c->y, &c->e)
               : gf_conv2d_fwd(c->ctx, &c->x, &c->w, NULL, &c->p, &c->y, &c->e);
}
static int conv_b(void *u) {
  conv_u *c = u;
  return c->tr ? gf_deconv2d_bwd(c->ctx, &c->x, &c->w, &c->y, &c->p, &c->dx,
                                 &c->dw, NULL, GF_OVERWRITE, &c->e)
               : gf_conv2d_bwd(c->ctx, &c->x, &c->w, &c->y, &c->p, &c->dx,
                               &c->dw, NULL, GF_OVERWRITE, &c->e);
}

static double g_sgemm = 0;
static double g_tot_flop = 0, g_tot_time = 0;

static void row(const char *name, const char *shape, double tf, double tb,
                double flop_f, double bytes) {
  double t = tf + tb;
  if (flop_f > 0) {
    double gf = 3 * flop_f / t * 1e-9; /* bwd = data + weights = 2x fwd */
    g_tot_flop += 3 * flop_f;
    g_tot_time += t;
    printf("  %-14s %-26s %9.3f %9.3f %9.1f GFLOP/s %5.0f%%\n", name, shape,
           tf * 1e3, tb * 1e3, gf, 100 * gf / g_sgemm);
  } else {
    g_tot_time += t;
    printf("  %-14s %-26s %9.3f %9.3f %9.1f GB/s\n", name, shape, tf * 1e3,
           tb * 1e3, bytes / t * 1e-9);
  }
}

static void bench_conv(gf_ctx *ctx, int tr, int N, int Cin, int H, int Cout,
                       int k, int s, int p) {
  conv_u c;
  memset(&c, 0, sizeof c);
  c.ctx = ctx;
  c.tr = tr;
  c.p = (gf_conv_params){{s, s}, {p, p}, {0, 0}};
  c.x = mk(N, Cin, H, H);
  c.w = tr ? mk(Cin, Cout, k, k) : mk(Cout, Cin, k, k);
  int64_t o[4];
  if ((tr ? gf_deconv2d_out_shape : gf_conv2d_out_shape)(&c.x, &c.w, &c.p, o,
                                                         &c.e)) {
    fprintf(stderr, "bench: %s\n", c.e.msg);
    exit(1);
  }
  c.y = mk(o[0], o[1], o[2], o[3]);
  c.dx = mk(N, Cin, H, H);
  c.dw = tr ? mk(Cin, Cout, k, k) : mk(Cout, Cin, k, k);
  double tf = time_it(conv_f, &c), tb = time_it(conv_b, &c);
  if (tf < 0 || tb < 0) {
    fprintf(stderr, "bench: %s\n", c.e.msg);
    exit(1);
  }
  /* MACs: every input pixel meets every kernel tap (deconv) or every
   * output pixel does (conv) */
  double macs = tr ? (double)N * Cin * H * H * Cout * k * k
                   : (double)N * Cout * o[2] * o[3] * Cin * k * k;
  char shape[64];
  snprintf(shape, sizeof shape, "%dx%dx%d->%dx%lldx%lld k%ds%dp%d", Cin, H, H,
           Cout, (long long)o[2], (long long)o[3], k, s, p);
  row(tr ? "deconv" : "conv", shape, tf, tb, 2 * macs, 0);
  gf_tensor_free(&c.x); gf_tensor_free(&c.w); gf_tensor_free(&c.y);
  gf_tensor_free(&c.dx); gf_tensor_free(&c.dw);
}

/* ---- batch norm + activation ---------------------------------------------- */
typedef struct {
  gf_ctx *ctx;
  int act; /* 0 relu, 1 leaky, 2 tanh, 3 sigmoid */
  gf_tensor x, y, dy, dx, g, b, dg, db, rm, rv, sm, sv;
  gf_err e;
} ew_u;
static int bn_f(void *u) {
  ew_u *w = u;
  gf_bn_params p = {1e-5f, 0.1f};
  return gf_batchnorm_fwd_train(w->ctx, &w->x, &w->g, &w->b, &w->rm, &w->rv,
                                &p, &w->y, &w->sm, &w->sv, &w->e);
}
static int bn_b(void *u) {
  ew_u *w = u;
  return gf_batchnorm_bwd(w->ctx, &w->x, &w->g, &w->sm, &w->sv, 1e-5f, &w->dy,
                          &w->dx, &w->dg, &w->db, GF_OVERWRITE, &w->e);
}
static int act_f(void *u) {
  ew_u *w = u;
  switch (w->act) {
  case 0: return gf_relu_fwd(w->ctx, &w->x, &w->y, &w->e);
  case 1: return gf_leaky_relu_fwd(w->ctx, &w->x, 0.2f, &w->y, &w->e);
  default: return gf_tanh_fwd(w->ctx, &w->x, &w->y, &w->e);
  }
}
static int act_b(void *u) {
  ew_u *w = u;
  switch (w->act) {
  case 0: return gf_relu_bwd(w->ctx, &w->x, &w->dy, &w->dx, &w->e);
  case 1: return gf_leaky_relu_bwd(w->ctx, &w->x, 0.2f, &w->dy, &w->dx, &w->e);
  default: return gf_tanh_bwd(w->ctx, &w->y, &w->dy, &w->dx, &w->e);
  }
}

static void bench_bn_act(gf_ctx *ctx, int N, int C, int H, int bn, int act) {
  ew_u w;
  memset(&w, 0, sizeof w);
  w.ctx = ctx;
  w.act = act;
  w.x = mk(N, C, H, H); w.y = mk(N, C, H, H);
  w.dy = mk(N, C, H, H); w.dx = mk(N, C, H, H);
  gf_tensor *pc[] = {&w.g, &w.b, &w.dg, &w.db, &w.rm, &w.rv, &w.sm, &w.sv};
  for (int i = 0; i < 8; i++) *pc[i] = mkn(1, C, 1, 1, 1);
  float *rv = w.rv.data;
  for (int i = 0; i < C; i++) rv[i] = 1.0f;
  double bytes = 4.0 * N * C * H * H;
  char shape[64];
  snprintf(shape, sizeof shape, "%dx%dx%d", C, H, H);
  if (bn) {
    double tf = time_it(bn_f, &w), tb = time_it(bn_b, &w);
    if (tf < 0 || tb < 0) {
      fprintf(stderr, "bench: %s\n", w.e.msg);
      exit(1);
    }
    /* fwd reads x twice (stats, normalize) + writes y; bwd reads x, dy twice
     * and writes dx */
    row("batchnorm", shape, tf, tb, 0, bytes * 8);
  }
  double tf = time_it(act_f, &w), tb = time_it(act_b, &w);
  if (tf < 0 || tb < 0) {
    fprintf(stderr, "bench: %s\n", w.e.msg);
    exit(1);
  }
  static const char *an[] = {"relu", "leaky_relu", "tanh"};
  row(an[act], shape, tf, tb, 0, bytes * 5);
  gf_tensor *own[] = {&w.x, &w.y, &w.dy, &w.dx};
  for (int i = 0; i < 4; i++) gf_tensor_free(own[i]);
  for (int i = 0; i < 8; i++) gf_tensor_free(pc[i]);
}

/* ---- Adam over a parameter arena ------------------------------------------- */
typedef struct {
  gf_ctx *ctx;
  gf_tensor p, g, m, v;
  int64_t step;
  gf_err e;
} adam_u;
static int adam_run(void *u) {
  adam_u *a = u;
  gf_adam_params hp = {2e-4, 0.5, 0.999, 1e-8, 0.0};
  return gf_adam_step(a->ctx, &hp, ++a->step, &a->p, &a->g, &a->m, &a->v,
                      &a->e);
}

static void bench_net(gf_ctx *ctx, int N, int size) {
  g_tot_flop = g_tot_time = 0;
  printf("\n%s, batch %d (times in ms: fwd, bwd = dx + dW)\n",
         size == 64 ? "dcgan64 (64x64x3, nz 100, ngf = ndf = 64)"
                    : "dcgan28 (28x28x1, nz 100, ngf = ndf = 64)", N);
  printf("  %-14s %-26s %9s %9s %s\n", "op", "shape", "fwd", "bwd",
         "fwd+bwd rate, % of SGEMM");
  if (size == 64) {
    bench_conv(ctx, 1, N, 100, 1, 512, 4, 1, 0);
    bench_bn_act(ctx, N, 512, 4, 1, 0);
    bench_conv(ctx, 1, N, 512, 4, 256, 4, 2, 1);
    bench_bn_act(ctx, N, 256, 8, 1, 0);
    bench_conv(ctx, 1, N, 256, 8, 128, 4, 2, 1);
    bench_bn_act(ctx, N, 128, 16, 1, 0);
    bench_conv(ctx, 1, N, 128, 16, 64, 4, 2, 1);
    bench_bn_act(ctx, N, 64, 32, 1, 0);
    bench_conv(ctx, 1, N, 64, 32, 3, 4, 2, 1);
    bench_bn_act(ctx, N, 3, 64, 0, 2);
    bench_conv(ctx, 0, N, 3, 64, 64, 4, 2, 1);
    bench_bn_act(ctx, N, 64, 32, 0, 1);
    bench_conv(ctx, 0, N, 64, 32, 128, 4, 2, 1);
    bench_bn_act(ctx, N, 128, 16, 1, 1);
    bench_conv(ctx, 0, N, 128, 16, 256, 4, 2, 1);
    bench_bn_act(ctx, N, 256, 8, 1, 1);
    bench_conv(ctx, 0, N, 256, 8, 512, 4, 2, 1);
    bench_bn_act(ctx, N, 512, 4, 1, 1);
    bench_conv(ctx, 0, N, 512, 4, 1, 4, 1, 0);
  } else {
    bench_conv(ctx, 1, N, 100, 1, 256, 7, 1, 0);
    bench_bn_act(ctx, N, 256, 7, 1, 0);
    bench_conv(ctx, 1, N, 256, 7, 128, 4, 2, 1);
    bench_bn_act(ctx, N, 128, 14, 1, 0);
    bench_conv(ctx, 1, N, 128, 14, 1, 4, 2, 1);
    bench_bn_act(ctx, N, 1, 28, 0, 2);
    bench_conv(ctx, 0, N, 1, 28, 64, 4, 2, 1);
    bench_bn_act(ctx, N, 64, 14, 0, 1);
    bench_conv(ctx, 0, N, 64, 14, 128, 4, 2, 1);
    bench_bn_act(ctx, N, 128, 7, 1, 1);
    bench_conv(ctx, 0, N, 128, 7, 1, 7, 1, 0);
  }
  printf("  all layers: %.1f ms fwd+bwd; convolutions %.1f GFLOP at %.1f "
         "GFLOP/s overall\n", g_tot_time * 1e3, g_tot_flop * 1e-9,
         g_tot_flop / g_tot_time * 1e-9);
}

int main(int argc, char **argv) {
  int threads = 0, batch = 64;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc) batch = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--min-time") && i + 1 < argc)
      g_min_time = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: %s [--threads N] [--batch N] [--min-time S]\n",
              argv[0]);
      return 2;
    }
  }
  gf_ctx ctx;
  gf_err e;
  gf_ctx_config cfg = {GF_BACKEND_CPU, threads, 0, GF_CPU_LAYOUT_AUTO};
  if (gf_ctx_init(&ctx, &cfg, &e)) {
    fprintf(stderr, "bench: %s\n", e.msg);
    return 1;
  }
  printf("ganflow kernels benchmark: CPU backend, %d threads, oneDNN %d.%d.%d\n",
         ctx.nthreads, dnnl_version()->major, dnnl_version()->minor,
         dnnl_version()->patch);
  gemm_u g = {1024, NULL, NULL, NULL};
  gf_tensor ga = mk(1, 1, 1024, 1024), gb = mk(1, 1, 1024, 1024),
            gc = mk(1, 1, 1024, 1024);
  g.a = ga.data; g.b = gb.data; g.c = gc.data;
  /* dnnl_sgemm runs on OpenMP's current thread count: match the ctx's */
  omp_set_num_threads(ctx.nthreads);
  double t = time_it(gemm_run, &g);
  g_sgemm = 2.0 * 1024 * 1024 * 1024 / t * 1e-9;
  printf("SGEMM 1024^3 (dnnl_sgemm): %.2f ms, %.1f GFLOP/s\n", t * 1e3,
         g_sgemm);
  gf_tensor_free(&ga); gf_tensor_free(&gb); gf_tensor_free(&gc);

  bench_net(&ctx, batch, 28);
  bench_net(&ctx, batch, 64);

  /* Adam over the dcgan64 generator's 3,576,704 parameters */
  adam_u a;
  memset(&a, 0, sizeof a);
  a.ctx = &ctx;
  a.p = mk(1, 1, 1, 3576704); a.g = mk(1, 1, 1, 3576704);
  a.m = mk(1, 1, 1, 3576704); a.v = mk(1, 1, 1, 3576704);
  double ta = time_it(adam_run, &a);
  if (ta < 0) {
    fprintf(stderr, "bench: %s\n", a.e.msg);
    return 1;
  }
  printf("\nadam step over 3,576,704 parameters: %.3f ms, %.1f GB/s\n",
         ta * 1e3, 7 * 4.0 * 3576704 / ta * 1e-9);
  gf_tensor_free(&a.p); gf_tensor_free(&a.g); gf_tensor_free(&a.m);
  gf_tensor_free(&a.v);
  gf_ctx_stats st = gf_ctx_get_stats(&ctx);
  printf("primitives created %llu, cache hits %llu, scratch %.1f MiB\n",
         (unsigned long long)st.primitives_created,
         (unsigned long long)st.primitive_hits,
         (double)st.scratch_bytes / (1 << 20));
  gf_ctx_free(&ctx);
  return 0;
}
