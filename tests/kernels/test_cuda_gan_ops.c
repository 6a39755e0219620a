/* test_cuda_gan_ops.c - the GAN ops on the CUDA backend (label gpu; exits 77
 * where there is no GPU): gf_hinge_fwd/bwd, gf_mean_fwd, gf_lerp,
 * gf_spectral_norm_fwd/bwd against the CPU twin and against PyTorch's
 * numbers (golden/gan_ops.safetensors, as test_gan_ops.c).
 * Against the CPU: bit for bit. Both backends take every sum in the order
 * of kernels/src/reduce_order.h and round every f32 operation alike (no FMA
 * contraction; lerp's FMA explicit on both), so any difference is a bug.
 * Against PyTorch: test_gan_ops.c's tolerances (hinge dx and lerp
 * bit-exact; losses 4 ulp; SN 1e-6 (|t| + max|t|), sigma 1e-6 |t|).
 * Cases: the goldens (hinge both signs with the kinks, mean, lerp at five
 * betas, SN on [8,4,3,3] and [5,7] at n_iter 0, 1, 3), then large ones:
 * hinge and mean over 100003 values, lerp over 3000017, SN on
 * [512, 256, 4, 4] at n_iter 1 and 0 with GF_ACCUMULATE and dw = dw_sn,
 * each repeated for identical bits; a host tensor on the CUDA ctx is
 * refused.
 * Argument 1: the golden file (default GF_GAN_OPS_GOLDEN, the source
 * tree's, from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_cuda.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_GAN_OPS_GOLDEN
#define GF_GAN_OPS_GOLDEN "gan_ops.safetensors"
#endif

#define SN_EPS 1e-12f

static gf_ctx cpu, gpu;
static kt_rng rng = {4242};

/* ---- golden -------------------------------------------------------------- */

static void test_hinge_mean_golden(const gf_st_file *f) {
  gf_tensor xh = kt_gold(f, "hinge.x", KT_GOLD_0D),
            dl = kt_gold(f, "hinge.dloss", KT_GOLD_0D);
  float dloss = *(float *)dl.data;
  kt_twin x = kt_twin_of(&xh);
  int64_t n = gf_tensor_numel(&xh);
  kt_twin loss = kt_twin_rnd(&rng, 1, 1, 1, 1, 1, 0, 1),
          dx = kt_twin_rnd(&rng, 1, n, 1, 1, 1, 0, 1);
  gf_err e = {0};
  for (int s = 0; s < 2; s++) {
    float sign = s ? 1.0f : -1.0f;
    char name[48];
    snprintf(name, sizeof name, "hinge.%s.loss", s ? "fake" : "real");
    gf_tensor tl = kt_gold(f, name, KT_GOLD_0D);
    snprintf(name, sizeof name, "hinge.%s.dx", s ? "fake" : "real");
    gf_tensor tdx = kt_gold(f, name, KT_GOLD_0D);
    REQUIRE(gf_hinge_fwd(&cpu, &x.h, sign, &loss.h, &e) == GF_OK);
    CHECKF(gf_hinge_fwd(&gpu, &x.d, sign, &loss.d, &e) == GF_OK, "%s", e.msg);
    KT_SAME("hinge loss", &loss);
    KT_VS_TORCH("hinge loss", &loss.d, &tl, 0.0, 4 * 0x1p-24, 0.0, NULL);
    REQUIRE(gf_hinge_bwd(&cpu, &x.h, sign, dloss, &dx.h, &e) == GF_OK);
    CHECKF(gf_hinge_bwd(&gpu, &x.d, sign, dloss, &dx.d, &e) == GF_OK, "%s",
           e.msg);
    KT_SAME("hinge dx", &dx);
    KT_VS_TORCH("hinge dx", &dx.d, &tdx, -1.0, 0.0, 0.0, NULL);
    /* in place on the device: dx = x */
    kt_twin y = kt_twin_of(&xh);
    CHECK(gf_hinge_bwd(&gpu, &y.d, sign, dloss, &y.d, &e) == GF_OK);
    KT_VS_TORCH("hinge dx in place", &y.d, &tdx, -1.0, 0.0, 0.0, NULL);
    kt_twin_free(&y);
    gf_tensor_free(&tl);
    gf_tensor_free(&tdx);
  }
  gf_tensor mx = kt_gold(f, "mean.x", KT_GOLD_0D),
            ml = kt_gold(f, "mean.loss", KT_GOLD_0D);
  kt_twin m = kt_twin_of(&mx);
  REQUIRE(gf_mean_fwd(&cpu, &m.h, &loss.h, &e) == GF_OK);
  CHECKF(gf_mean_fwd(&gpu, &m.d, &loss.d, &e) == GF_OK, "%s", e.msg);
  KT_SAME("mean loss", &loss);
  KT_VS_TORCH("mean loss", &loss.d, &ml, 0.0, 4 * 0x1p-24, 0.0, NULL);
  kt_twin_free(&m);
  kt_twin_free(&x);
  kt_twin_free(&loss);
  kt_twin_free(&dx);
  gf_tensor *all[] = {&xh, &dl, &mx, &ml};
  for (size_t i = 0; i < 4; i++) gf_tensor_free(all[i]);
}

static const double kBetas[5] = {0.0, 0.3, 0.5, 0.999, 1.0};

static void test_lerp_golden(const gf_st_file *f) {
  gf_tensor avg0 = kt_gold(f, "lerp.avg", KT_GOLD_0D),
            xh = kt_gold(f, "lerp.x", KT_GOLD_0D);
  kt_twin x = kt_twin_of(&xh), a = kt_twin_of(&avg0);
  for (int i = 0; i < 5; i++) {
    char name[32];
    snprintf(name, sizeof name, "lerp.out%d", i);
    gf_tensor want = kt_gold(f, name, KT_GOLD_0D);
    kt_twin_set(&a, &avg0);
    gf_err e = {0};
    REQUIRE(gf_lerp(&cpu, &a.h, &x.h, kBetas[i], &e) == GF_OK);
    CHECKF(gf_lerp(&gpu, &a.d, &x.d, kBetas[i], &e) == GF_OK, "%s", e.msg);
    KT_SAME("lerp", &a);
    KT_VS_TORCH("lerp", &a.d, &want, -1.0, 0.0, 0.0, NULL);
    gf_tensor_free(&want);
  }
  kt_twin_free(&x);
  kt_twin_free(&a);
  gf_tensor_free(&avg0);
  gf_tensor_free(&xh);
}

static void test_sn_golden(const gf_st_file *f, const char *cs, int n_iters,
                           const int *iters) {
  char name[64];
#define GOLD(...) \
  (snprintf(name, sizeof name, __VA_ARGS__), kt_gold(f, name, KT_GOLD_0D))
  gf_tensor wh = GOLD("sn.%s.w", cs), u0 = GOLD("sn.%s.u0", cs);
  gf_tensor v0 = GOLD("sn.%s.v0", cs), gh = GOLD("sn.%s.g", cs);
  kt_twin w = kt_twin_of(&wh), g = kt_twin_of(&gh), u = kt_twin_of(&u0),
          v = kt_twin_of(&v0);
  kt_twin sigma = kt_twin_rnd(&rng, 1, 1, 1, 1, 1, 0, 1),
          w_sn = kt_twin_of(&wh), dw = kt_twin_of(&wh);
  for (int ii = 0; ii < n_iters; ii++) {
    int it = iters[ii];
    kt_twin_set(&u, &u0);
    kt_twin_set(&v, &v0);
    gf_err e = {0};
    REQUIRE(gf_spectral_norm_fwd(&cpu, &w.h, &u.h, &v.h, it, SN_EPS, &sigma.h,
                                 &w_sn.h, &e) == GF_OK);
    CHECKF(gf_spectral_norm_fwd(&gpu, &w.d, &u.d, &v.d, it, SN_EPS, &sigma.d,
                                &w_sn.d, &e) == GF_OK,
           "%s", e.msg);
    REQUIRE(gf_spectral_norm_bwd(&cpu, &w.h, &u.h, &v.h, &sigma.h, &g.h, &dw.h,
                                 GF_OVERWRITE, &e) == GF_OK);
    CHECKF(gf_spectral_norm_bwd(&gpu, &w.d, &u.d, &v.d, &sigma.d, &g.d, &dw.d,
                                GF_OVERWRITE, &e) == GF_OK,
           "%s", e.msg);
    const char *part[5] = {"u", "v", "sigma", "w_sn", "dw"};
    kt_twin *got[5] = {&u, &v, &sigma, &w_sn, &dw};
    for (int q = 0; q < 5; q++) {
      char what[48];
      snprintf(what, sizeof what, "sn %s it%d %s", cs, it, part[q]);
      KT_SAME(what, got[q]);
      gf_tensor t = GOLD("sn.%s.it%d.%s", cs, it, part[q]);
      KT_VS_TORCH(what, &got[q]->d, &t, 0.0, 1e-6, q == 2 ? 0.0 : 1e-6, NULL);
      gf_tensor_free(&t);
    }
  }
  kt_twin *tws[] = {&w, &g, &u, &v, &sigma, &w_sn, &dw};
  for (size_t i = 0; i < 7; i++) kt_twin_free(tws[i]);
  gf_tensor *all[] = {&wh, &u0, &v0, &gh};
  for (size_t i = 0; i < 4; i++) gf_tensor_free(all[i]);
#undef GOLD
}

/* ---- large cases --------------------------------------------------------- */

static void test_large_eltwise(void) {
  gf_err e = {0};
  int64_t n = 100003;
  kt_twin x = kt_twin_rnd(&rng, 1, n, 1, 1, 1, -3.0, 3.0),
          dx = kt_twin_rnd(&rng, 1, n, 1, 1, 1, 0, 1);
  kt_twin loss = kt_twin_rnd(&rng, 1, 1, 1, 1, 1, 0, 1);
  for (int s = 0; s < 2; s++) {
    float sign = s ? 1.0f : -1.0f;
    REQUIRE(gf_hinge_fwd(&cpu, &x.h, sign, &loss.h, &e) == GF_OK);
    for (int rep = 0; rep < 2; rep++) {
      CHECKF(gf_hinge_fwd(&gpu, &x.d, sign, &loss.d, &e) == GF_OK, "%s", e.msg);
      KT_SAME("hinge large loss", &loss);
    }
    REQUIRE(gf_hinge_bwd(&cpu, &x.h, sign, 0.5f, &dx.h, &e) == GF_OK);
    CHECKF(gf_hinge_bwd(&gpu, &x.d, sign, 0.5f, &dx.d, &e) == GF_OK, "%s",
           e.msg);
    KT_SAME("hinge large dx", &dx);
  }
  REQUIRE(gf_mean_fwd(&cpu, &x.h, &loss.h, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_mean_fwd(&gpu, &x.d, &loss.d, &e) == GF_OK, "%s", e.msg);
    KT_SAME("mean large", &loss);
  }
  /* lerp over 3M values: a generator's parameter arena */
  int64_t m = 3000017;
  kt_twin a = kt_twin_rnd(&rng, 1, m, 1, 1, 1, -1.0, 1.0),
          p = kt_twin_rnd(&rng, 1, m, 1, 1, 1, -1.0, 1.0);
  for (int i = 0; i < 5; i++) {
    REQUIRE(gf_lerp(&cpu, &a.h, &p.h, kBetas[i], &e) == GF_OK);
    CHECKF(gf_lerp(&gpu, &a.d, &p.d, kBetas[i], &e) == GF_OK, "%s", e.msg);
    KT_SAME("lerp large", &a);
  }
  kt_twin *all[] = {&x, &dx, &loss, &a, &p};
  for (size_t i = 0; i < 5; i++) kt_twin_free(all[i]);
}

/* SN of a [512, 256, 4, 4] conv weight (K = 4096). */
static void test_large_sn(void) {
  gf_err e = {0};
  int64_t R = 512, K = 4096;
  kt_twin w = kt_twin_rnd(&rng, 4, R, 256, 4, 4, -0.05, 0.05);
  kt_twin g = kt_twin_rnd(&rng, 4, R, 256, 4, 4, -1.0, 1.0);
  kt_twin u = kt_twin_rnd(&rng, 1, R, 1, 1, 1, -1.0, 1.0),
          v = kt_twin_rnd(&rng, 1, K, 1, 1, 1, -1, 1);
  kt_twin sigma = kt_twin_rnd(&rng, 1, 1, 1, 1, 1, 0, 1);
  kt_twin w_sn = kt_twin_rnd(&rng, 4, R, 256, 4, 4, 0, 1),
          dw = kt_twin_rnd(&rng, 4, R, 256, 4, 4, -1, 1);
  for (int pass = 0; pass < 3; pass++) {
    int it = pass == 2 ? 0 : 1; /* two training calls, then inference */
    REQUIRE(gf_spectral_norm_fwd(&cpu, &w.h, &u.h, &v.h, it, SN_EPS, &sigma.h,
                                 &w_sn.h, &e) == GF_OK);
    CHECKF(gf_spectral_norm_fwd(&gpu, &w.d, &u.d, &v.d, it, SN_EPS, &sigma.d,
                                &w_sn.d, &e) == GF_OK,
           "%s", e.msg);
    KT_SAME("sn large u", &u);
    KT_SAME("sn large v", &v);
    KT_SAME("sn large sigma", &sigma);
    KT_SAME("sn large w_sn", &w_sn);
    /* accumulate into the random dw, then overwrite */
    gf_accum acc = pass == 0 ? GF_ACCUMULATE : GF_OVERWRITE;
    REQUIRE(gf_spectral_norm_bwd(&cpu, &w.h, &u.h, &v.h, &sigma.h, &g.h, &dw.h,
                                 acc, &e) == GF_OK);
    CHECKF(gf_spectral_norm_bwd(&gpu, &w.d, &u.d, &v.d, &sigma.d, &g.d, &dw.d,
                                acc, &e) == GF_OK,
           "%s", e.msg);
    KT_SAME(acc ? "sn large dw accumulate" : "sn large dw", &dw);
  }
  /* dw = dw_sn on the device equals the separate result */
  kt_twin gg = kt_twin_of(&g.h);
  CHECK(gf_spectral_norm_bwd(&gpu, &w.d, &u.d, &v.d, &sigma.d, &gg.d, &gg.d,
                             GF_OVERWRITE, &e) == GF_OK);
  CHECK(kt_diff_bytes(&gg.d, &dw.h) == 0);
  /* a host tensor is not on the CUDA ctx's device */
  CHECK(gf_spectral_norm_fwd(&gpu, &w.h, &u.d, &v.d, 1, SN_EPS, &sigma.d,
                             &w_sn.d, &e) == GF_EINVAL);
  CHECK(gf_lerp(&gpu, &w_sn.d, &w.h, 0.5, &e) == GF_EINVAL);
  kt_twin *all[] = {&w, &g, &u, &v, &sigma, &w_sn, &dw, &gg};
  for (size_t i = 0; i < 8; i++) kt_twin_free(all[i]);
}

int main(int argc, char **argv) {
  kt_cuda_ctx_or_skip(&gpu);
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_GAN_OPS_GOLDEN);
  kt_cpu_ctx(&cpu, 2);
  test_hinge_mean_golden(&f);
  test_lerp_golden(&f);
  static const int conv_it[] = {0, 1}, lin_it[] = {0, 1, 3};
  test_sn_golden(&f, "conv", 2, conv_it);
  test_sn_golden(&f, "linear", 3, lin_it);
  test_large_eltwise();
  test_large_sn();
  gf_err se = {0};
  CHECKF(gf_ctx_sync(&gpu, &se) == GF_OK, "%s", se.msg);
  gf_ctx_free(&gpu);
  gf_ctx_free(&cpu);
  gf_st_file_free(&f);
  return check_report();
}
