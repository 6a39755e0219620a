/* test_cuda_modconv.c - the modulated-convolution ops on the CUDA backend
 * (label gpu; exits 77 where there is no GPU): gf_modconv_weight_fwd /
 * _bwd against the CPU twin bit for bit (both backends sum in
 * reduce_order.h's lanes and n order and round each f32 / double operation
 * once, as ops.h fixes), and gf_conv2d_batched_fwd / _bwd (cuDNN, a group
 * count of N) against the CPU's oneDNN within a tolerance; both against
 * PyTorch's numbers (golden/modconv.safetensors, as test_modconv.c).
 *
 * Tolerances:
 *   weight ops vs the CPU          bit-exact (wmod, dcoef, dw, ds, dw
 *                                  accumulated), every case run twice
 *   wmod, dcoef vs PyTorch         |d| <= 8 ulp of |t| (toRGB: bit-exact)
 *   dw, ds vs PyTorch              |d| <= 2^-20 max|t|
 *   batched conv y, dx, dwmod vs the CPU and vs PyTorch
 *                                  |d| <= 2^-16 max|t| (f32 sums in
 *                                  cuDNN's order or algorithm, TF32 off:
 *                                  FMA math, as kt_cuda.h's f32 rule)
 * Cases: the three goldens; the weight ops on N 16 x Cin 512 x Cout 512
 * 3x3 (StyleGAN2's widest layers, 8192 rows of 4608), 8 x 256 x 256 3x3,
 * toRGB 16 x 512 x 3 1x1 without demodulation, K = 600 (not a multiple of
 * the lanes), K = 27 (below them) and an empty batch (dw = 0); the
 * batched conv on 4 x 64 x 64 16x16 3x3, 16 x 128 x 128 8x8, toRGB 8 x 32
 * x 3 32x32 1x1, stride 2, N = 1; a plain gf_conv2d after a grouped one on
 * the same ctx (the cuDNN descriptor is the ctx's: its group count must
 * go back to 1). Host tensors on the CUDA ctx are refused. Both kinds of
 * comparison with the CPU are shown to fire (a one-ulp change of wmod,
 * y moved by four times its tolerance).
 * Argument 1: the golden file (default GF_MODCONV_GOLDEN, the source
 * tree's, from CMake). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_cuda.h"
#include "kt_golden.h"
#include "kt_modconv.h"
#include "kt_util.h"

#ifndef GF_MODCONV_GOLDEN
#define GF_MODCONV_GOLDEN "modconv.safetensors"
#endif

/* kt_misses's tolerance arguments (atol, rtol, srel). */
#define EXACT -1.0, 0.0, 0.0
#define TOL_WMOD 0.0, 8 * 0x1p-24, 0.0
#define TOL_WGRAD 0.0, 0.0, 0x1p-20
#define TOL_CUDA_CONV 0.0, 0.0, 0x1p-16

static gf_ctx cpu, gpu;
static kt_rng rng = {7171};

/* The device half of t against its host half (the CPU's result) within
 * the tolerance, as a check of this test. */
#define VS_CPU(label, t, ...)                                             \
  do {                                                                    \
    size_t bad_ = kt_misses((label), &(t)->d, &(t)->h, __VA_ARGS__, NULL, \
                            true);                                        \
    CHECKF(bad_ == 0,                                                     \
           "%s: %zu elements differ from the CPU beyond the "             \
           "tolerance",                                                   \
           (label), bad_);                                                \
  } while (0)

static kt_twin tw_gold(const gf_st_file *f, const char *pre, const char *sfx) {
  gf_tensor g = kt_gold_at(f, pre, sfx, 0);
  kt_twin t = kt_twin_of(&g);
  gf_tensor_free(&g);
  return t;
}

/* An owned twin of t's shape, both halves 12345 (ops must overwrite). */
static kt_twin tw_junk(const gf_tensor *t) {
  gf_tensor j = kt_garbage_like(t);
  kt_twin r = kt_twin_of(&j);
  gf_tensor_free(&j);
  return r;
}

/* The comparisons with the CPU fire: a host half one ulp off in one
 * element (bit-exact wm) or moved by four times the tolerance (y). */
static void fires(const kt_twin *wm, const kt_twin *y) {
  gf_tensor h = kt_clone(&wm->h);
  float *p = h.data;
  size_t i = (size_t)gf_tensor_numel(&h) / 2;
  p[i] = nextafterf(p[i], INFINITY);
  CHECKF(kt_diff_bytes(&wm->d, &h) != 0, "a one-ulp change went unnoticed");
  gf_tensor_free(&h);
  h = kt_clone(&y->h);
  p = h.data;
  i = (size_t)gf_tensor_numel(&h) / 2;
  double tmax = 0.0;
  for (int64_t k = 0; k < gf_tensor_numel(&h); k++)
    tmax = fmax(tmax, fabs((double)p[k]));
  p[i] = (float)((double)p[i] + 4.0 * 0x1p-16 * tmax);
  CHECKF(kt_misses("y moved", &y->d, &h, TOL_CUDA_CONV, NULL, false) == 1,
         "a change of four times the tolerance went unnoticed");
  gf_tensor_free(&h);
}

/* ---- golden -------------------------------------------------------------- */

static void test_golden(const gf_st_file *f, const char *pre) {
  kt_twin t[MC_NT];
  for (int i = 0; i < MC_NT; i++) t[i] = tw_gold(f, pre, kt_mc_names[i]);
  kt_mc_cfg c = kt_mc_cfg_of(t[MC_CFG].h.data);
  int demod = c.demod;
  gf_conv_params p = c.p;
  float eps = c.eps;
  char lbl[64];
  gf_err e = {0};

  kt_twin wm = tw_junk(&t[MC_WMOD].h), dc = tw_junk(&t[MC_DCOEF].h);
  REQUIRE(gf_modconv_weight_fwd(&cpu, &t[MC_W].h, &t[MC_S].h, demod, eps, &wm.h,
                                &dc.h, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_modconv_weight_fwd(&gpu, &t[MC_W].d, &t[MC_S].d, demod, eps,
                                 &wm.d, &dc.d, &e) == GF_OK,
           "%s: %s", pre, e.msg);
    KT_SAME(kt_label(lbl, sizeof lbl, pre, "wmod"), &wm);
    KT_SAME(kt_label(lbl, sizeof lbl, pre, "dcoef"), &dc);
  }
  if (demod) {
    KT_VS_TORCH(kt_label(lbl, sizeof lbl, pre, "wmod"), &wm.d, &t[MC_WMOD].h,
                TOL_WMOD, NULL);
    KT_VS_TORCH(kt_label(lbl, sizeof lbl, pre, "dcoef"), &dc.d, &t[MC_DCOEF].h,
                TOL_WMOD, NULL);
  } else {
    KT_VS_TORCH(kt_label(lbl, sizeof lbl, pre, "wmod"), &wm.d, &t[MC_WMOD].h,
                EXACT, NULL);
  }

  /* the convolution from PyTorch's wmod */
  kt_twin y = tw_junk(&t[MC_Y].h), dx = tw_junk(&t[MC_DX].h);
  kt_twin dwm = tw_junk(&t[MC_DWMOD].h);
  REQUIRE(gf_conv2d_batched_fwd(&cpu, &t[MC_X].h, &t[MC_WMOD].h, &p, &y.h,
                                &e) == GF_OK);
  CHECKF(gf_conv2d_batched_fwd(&gpu, &t[MC_X].d, &t[MC_WMOD].d, &p, &y.d, &e) ==
             GF_OK,
         "%s: %s", pre, e.msg);
  VS_CPU(kt_label(lbl, sizeof lbl, pre, "y vs CPU"), &y, TOL_CUDA_CONV);
  KT_VS_TORCH(kt_label(lbl, sizeof lbl, pre, "y"), &y.d, &t[MC_Y].h,
              TOL_CUDA_CONV, NULL);
  REQUIRE(gf_conv2d_batched_bwd(&cpu, &t[MC_X].h, &t[MC_WMOD].h, &t[MC_G].h, &p,
                                &dx.h, &dwm.h, &e) == GF_OK);
  CHECKF(gf_conv2d_batched_bwd(&gpu, &t[MC_X].d, &t[MC_WMOD].d, &t[MC_G].d, &p,
                               &dx.d, &dwm.d, &e) == GF_OK,
         "%s: %s", pre, e.msg);
  VS_CPU(kt_label(lbl, sizeof lbl, pre, "dx vs CPU"), &dx, TOL_CUDA_CONV);
  VS_CPU(kt_label(lbl, sizeof lbl, pre, "dwmod vs CPU"), &dwm, TOL_CUDA_CONV);
  KT_VS_TORCH(kt_label(lbl, sizeof lbl, pre, "dx"), &dx.d, &t[MC_DX].h,
              TOL_CUDA_CONV, NULL);
  KT_VS_TORCH(kt_label(lbl, sizeof lbl, pre, "dwmod"), &dwm.d, &t[MC_DWMOD].h,
              TOL_CUDA_CONV, NULL);

  /* the weight gradients from PyTorch's dwmod (dcoef: the same bits) */
  kt_twin dw = tw_junk(&t[MC_DW].h), ds = tw_junk(&t[MC_DS].h);
  REQUIRE(gf_modconv_weight_bwd(&cpu, &t[MC_W].h, &t[MC_S].h, demod, eps, &dc.h,
                                &t[MC_DWMOD].h, &dw.h, &ds.h, GF_OVERWRITE,
                                &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_modconv_weight_bwd(&gpu, &t[MC_W].d, &t[MC_S].d, demod, eps,
                                 &dc.d, &t[MC_DWMOD].d, &dw.d, &ds.d,
                                 GF_OVERWRITE, &e) == GF_OK,
           "%s: %s", pre, e.msg);
    KT_SAME(kt_label(lbl, sizeof lbl, pre, "dw"), &dw);
    KT_SAME(kt_label(lbl, sizeof lbl, pre, "ds"), &ds);
  }
  KT_VS_TORCH(kt_label(lbl, sizeof lbl, pre, "dw"), &dw.d, &t[MC_DW].h,
              TOL_WGRAD, NULL);
  KT_VS_TORCH(kt_label(lbl, sizeof lbl, pre, "ds"), &ds.d, &t[MC_DS].h,
              TOL_WGRAD, NULL);
  fires(&wm, &y);
  kt_twin *tws[] = {&wm, &dc, &y, &dx, &dwm, &dw, &ds};
  for (size_t i = 0; i < sizeof tws / sizeof *tws; i++) kt_twin_free(tws[i]);
  for (int i = 0; i < MC_NT; i++) kt_twin_free(&t[i]);
}

/* ---- the weight ops against the CPU, bit for bit ------------------------- */

static void weight_case(int64_t N, int64_t Cin, int64_t Cout, int64_t kh,
                        int64_t kw, int demod) {
  char lbl[96];
  int k = snprintf(lbl, sizeof lbl,
                   "weights N%lld Cin%lld Cout%lld %lldx%lld "
                   "demod %d",
                   (long long)N, (long long)Cin, (long long)Cout, (long long)kh,
                   (long long)kw, demod);
  REQUIRE(k > 0 && k < (int)sizeof lbl);
  float eps = 1e-8f;
  kt_twin w = kt_twin_rnd(&rng, 4, Cout, Cin, kh, kw, -1, 1);
  kt_twin s = kt_twin_rnd(&rng, 2, N, Cin, 1, 1, 0.2, 2);
  kt_twin wm = kt_twin_rnd(&rng, 4, N * Cout, Cin, kh, kw, 5, 6);
  kt_twin g = kt_twin_rnd(&rng, 4, N * Cout, Cin, kh, kw, -1, 1);
  kt_twin dc = kt_twin_rnd(&rng, 2, N, Cout, 1, 1, 5, 6);
  kt_twin dw = kt_twin_rnd(&rng, 4, Cout, Cin, kh, kw, -1, 1);
  kt_twin ds = kt_twin_rnd(&rng, 2, N, Cin, 1, 1, 5, 6);
  gf_err e = {0};
  if (N > 0) {
    REQUIRE(gf_modconv_weight_fwd(&cpu, &w.h, &s.h, demod, eps, &wm.h, &dc.h,
                                  &e) == GF_OK);
    for (int rep = 0; rep < 2; rep++) {
      CHECKF(gf_modconv_weight_fwd(&gpu, &w.d, &s.d, demod, eps, &wm.d, &dc.d,
                                   &e) == GF_OK,
             "%s: %s", lbl, e.msg);
      KT_SAME(lbl, &wm);
      KT_SAME(lbl, &dc);
    }
  }
  /* accumulate onto the old dw (equal on both sides), then overwrite */
  REQUIRE(gf_modconv_weight_bwd(&cpu, &w.h, &s.h, demod, eps, &dc.h, &g.h,
                                &dw.h, &ds.h, GF_ACCUMULATE, &e) == GF_OK);
  CHECKF(gf_modconv_weight_bwd(&gpu, &w.d, &s.d, demod, eps, &dc.d, &g.d, &dw.d,
                               &ds.d, GF_ACCUMULATE, &e) == GF_OK,
         "%s: %s", lbl, e.msg);
  KT_SAME(lbl, &dw);
  KT_SAME(lbl, &ds);
  REQUIRE(gf_modconv_weight_bwd(&cpu, &w.h, &s.h, demod, eps, &dc.h, &g.h,
                                &dw.h, &ds.h, GF_OVERWRITE, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_modconv_weight_bwd(&gpu, &w.d, &s.d, demod, eps, &dc.d, &g.d,
                                 &dw.d, &ds.d, GF_OVERWRITE, &e) == GF_OK,
           "%s: %s", lbl, e.msg);
    KT_SAME(lbl, &dw);
    KT_SAME(lbl, &ds);
  }
  /* the demodulated tangents (gf_modconv_demod_jvp) */
  kt_twin sd = kt_twin_rnd(&rng, 2, N, Cin, 1, 1, -1, 1);
  kt_twin gd = kt_twin_rnd(&rng, 4, N * Cout, Cin, kh, kw, -1, 1);
  kt_twin wmd = kt_twin_rnd(&rng, 4, N * Cout, Cin, kh, kw, 5, 6);
  kt_twin gw = kt_twin_rnd(&rng, 4, N * Cout, Cin, kh, kw, 5, 6);
  kt_twin gwd = kt_twin_rnd(&rng, 4, N * Cout, Cin, kh, kw, 5, 6);
  if (demod && N > 0) {
    REQUIRE(gf_modconv_demod_jvp(&cpu, &w.h, &s.h, &sd.h, &dc.h, &g.h, &gd.h,
                                 &wmd.h, &gw.h, &gwd.h, &e) == GF_OK);
    for (int rep = 0; rep < 2; rep++) {
      CHECKF(gf_modconv_demod_jvp(&gpu, &w.d, &s.d, &sd.d, &dc.d, &g.d, &gd.d,
                                  &wmd.d, &gw.d, &gwd.d, &e) == GF_OK,
             "%s: %s", lbl, e.msg);
      KT_SAME(lbl, &wmd);
      KT_SAME(lbl, &gw);
      KT_SAME(lbl, &gwd);
    }
  }
  kt_twin *tws[] = {&w, &s, &wm, &g, &dc, &dw, &ds, &sd, &gd, &wmd, &gw, &gwd};
  for (size_t i = 0; i < sizeof tws / sizeof *tws; i++) kt_twin_free(tws[i]);
}

/* ---- the batched convolution against the CPU ----------------------------- */

static void conv_case(int64_t N, int64_t Cin, int64_t Cout, int64_t H,
                      int64_t W, int k, int stride, int pad) {
  char lbl[96];
  int n = snprintf(lbl, sizeof lbl,
                   "batched conv N%lld Cin%lld Cout%lld "
                   "%lldx%lld k%d s%d p%d",
                   (long long)N, (long long)Cin, (long long)Cout, (long long)H,
                   (long long)W, k, stride, pad);
  REQUIRE(n > 0 && n < (int)sizeof lbl);
  gf_conv_params p = {{stride, stride}, {pad, pad}, {0, 0}};
  int64_t OH = (H + 2 * pad - k) / stride + 1,
          OW = (W + 2 * pad - k) / stride + 1;
  kt_twin x = kt_twin_rnd(&rng, 4, N, Cin, H, W, -1, 1);
  kt_twin wm = kt_twin_rnd(&rng, 4, N * Cout, Cin, k, k, -0.5, 0.5);
  kt_twin dy = kt_twin_rnd(&rng, 4, N, Cout, OH, OW, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, 4, N, Cout, OH, OW, 5, 6);
  kt_twin dx = kt_twin_rnd(&rng, 4, N, Cin, H, W, 5, 6);
  kt_twin dwm = kt_twin_rnd(&rng, 4, N * Cout, Cin, k, k, 5, 6);
  gf_err e = {0};
  REQUIRE(gf_conv2d_batched_fwd(&cpu, &x.h, &wm.h, &p, &y.h, &e) == GF_OK);
  REQUIRE(gf_conv2d_batched_bwd(&cpu, &x.h, &wm.h, &dy.h, &p, &dx.h, &dwm.h,
                                &e) == GF_OK);
  CHECKF(gf_conv2d_batched_fwd(&gpu, &x.d, &wm.d, &p, &y.d, &e) == GF_OK,
         "%s: %s", lbl, e.msg);
  CHECKF(gf_conv2d_batched_bwd(&gpu, &x.d, &wm.d, &dy.d, &p, &dx.d, &dwm.d,
                               &e) == GF_OK,
         "%s: %s", lbl, e.msg);
  VS_CPU(lbl, &y, TOL_CUDA_CONV);
  VS_CPU(lbl, &dx, TOL_CUDA_CONV);
  VS_CPU(lbl, &dwm, TOL_CUDA_CONV);
  kt_twin *tws[] = {&x, &wm, &dy, &y, &dx, &dwm};
  for (size_t i = 0; i < sizeof tws / sizeof *tws; i++) kt_twin_free(tws[i]);
}

/* A plain convolution after a grouped one on the same ctx. */
static void test_conv_after_grouped(void) {
  conv_case(4, 8, 6, 10, 10, 3, 1, 1); /* leaves the group count at 4 */
  gf_conv_params p = {{1, 1}, {1, 1}, {0, 0}};
  kt_twin x = kt_twin_rnd(&rng, 4, 4, 8, 10, 10, -1, 1);
  kt_twin w = kt_twin_rnd(&rng, 4, 6, 8, 3, 3, -0.5, 0.5);
  kt_twin y = kt_twin_rnd(&rng, 4, 4, 6, 10, 10, 5, 6);
  gf_err e = {0};
  REQUIRE(gf_conv2d_fwd(&cpu, &x.h, &w.h, NULL, &p, &y.h, &e) == GF_OK);
  CHECKF(gf_conv2d_fwd(&gpu, &x.d, &w.d, NULL, &p, &y.d, &e) == GF_OK, "%s",
         e.msg);
  VS_CPU("plain conv after a grouped one", &y, TOL_CUDA_CONV);
  kt_twin_free(&x);
  kt_twin_free(&w);
  kt_twin_free(&y);
}

static void test_host_refused(void) {
  kt_twin w = kt_twin_rnd(&rng, 4, 4, 5, 3, 3, -1, 1);
  kt_twin s = kt_twin_rnd(&rng, 2, 3, 5, 1, 1, -1, 1);
  kt_twin wm = kt_twin_rnd(&rng, 4, 12, 5, 3, 3, -1, 1);
  kt_twin dc = kt_twin_rnd(&rng, 2, 3, 4, 1, 1, -1, 1);
  kt_twin x = kt_twin_rnd(&rng, 4, 3, 5, 8, 8, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, 4, 3, 4, 8, 8, -1, 1);
  gf_conv_params p = {{1, 1}, {1, 1}, {0, 0}};
  gf_err e = {0};
  CHECK(gf_modconv_weight_fwd(&gpu, &w.h, &s.d, 1, 1e-8f, &wm.d, &dc.d, &e) ==
        GF_EINVAL);
  CHECK(gf_modconv_weight_bwd(&gpu, &w.d, &s.d, 1, 1e-8f, &dc.d, &wm.d, &w.h,
                              NULL, GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_conv2d_batched_fwd(&gpu, &x.d, &wm.h, &p, &y.d, &e) == GF_EINVAL);
  CHECK(gf_conv2d_batched_bwd(&gpu, &x.d, &wm.d, &y.d, &p, &x.h, NULL, &e) ==
        GF_EINVAL);
  kt_twin *tws[] = {&w, &s, &wm, &dc, &x, &y};
  for (size_t i = 0; i < sizeof tws / sizeof *tws; i++) kt_twin_free(tws[i]);
}

int main(int argc, char **argv) {
  kt_cuda_ctx_or_skip(&gpu);
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_MODCONV_GOLDEN);
  kt_cpu_ctx(&cpu, 4);
  test_golden(&f, "syn3");
  test_golden(&f, "rgb1");
  test_golden(&f, "rect");
  weight_case(16, 512, 512, 3, 3, 1);
  weight_case(8, 256, 256, 3, 3, 1);
  weight_case(16, 512, 3, 1, 1, 0);
  weight_case(4, 600, 5, 1, 1, 1);
  weight_case(3, 3, 7, 3, 3, 1);
  weight_case(0, 5, 4, 3, 3, 1);
  conv_case(4, 64, 64, 16, 16, 3, 1, 1);
  conv_case(16, 128, 128, 8, 8, 3, 1, 1);
  conv_case(8, 32, 3, 32, 32, 1, 1, 0);
  conv_case(3, 5, 4, 8, 8, 3, 2, 1);
  conv_case(1, 8, 8, 9, 7, 3, 1, 1);
  test_conv_after_grouped();
  test_host_refused();
  gf_ctx_free(&cpu);
  gf_ctx_free(&gpu);
  gf_st_file_free(&f);
  return check_report();
}
