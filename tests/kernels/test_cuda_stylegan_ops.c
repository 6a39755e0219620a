/* test_cuda_stylegan_ops.c - the StyleGAN2 layers on the CUDA backend
 * (label gpu; exits 77 where there is no GPU): gf_bias_act_fwd / _bwd,
 * gf_mbstd_fwd / _bwd and gf_noise_add_fwd / _bwd against the CPU twin,
 * bit for bit, and against PyTorch's numbers (golden/stylegan_ops
 * .safetensors): bias_act y and dx, noise y and dx bit-exact as in
 * test_stylegan_ops.c; the sums (db, mbstd, dstrength), which that test
 * compares with PyTorch within their tolerances, here the CPU's bits. Both
 * backends form each element with the same f32 / double operations in the
 * same order and take every sum in reduce_order.h's lanes, so any
 * difference is a bug; the bit comparison is shown to fire once (a one-ulp
 * change in the CPU's result must be seen).
 * Cases, each run twice for identical bits: bias_act on [N,C] [4096, 512]
 * and [300, 7] (more samples than lanes), NCHW [32, 512, 4, 4],
 * [16, 64, 64, 64] and [4, 3, 256, 256] (planes longer than the lanes, few
 * channels), linear and leaky ReLU, with and without clamp and bias, dx and
 * db together, alone, accumulated, in place (y = x, dx = dy); mbstd on
 * [32, 512, 4, 4] G 4 F 1 (StyleGAN2's), [16, 256, 8, 8] G 4 F 2,
 * [6, 8, 20, 20] group_size 8 > N, [1024, 16, 4, 4] G 4 (256 groups) and
 * [2, 300, 17, 3] F 3, each with its tangents (gf_mbstd_jvp, gf_mbstd_bwd_jvp,
 * R1's second order); noise on [16, 512, 8, 8], [4, 32, 128, 128] and
 * [1, 1, 1, 1] with the strength on the device, dstrength overwritten and
 * accumulated, dx copied or in place. The upstream gradients hold -0 every
 * 7th element. A host tensor on the CUDA ctx is refused.
 * Argument 1: the golden file (default GF_STYLEGAN_OPS_GOLDEN, the source
 * tree's, from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_cuda.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_STYLEGAN_OPS_GOLDEN
#define GF_STYLEGAN_OPS_GOLDEN "stylegan_ops.safetensors"
#endif

/* kt_misses's tolerance arguments for "any bit difference is a miss". */
#define EXACT -1.0, 0.0, 0.0, NULL

static gf_ctx cpu, gpu;
static kt_rng rng = {7117};

static kt_twin tw_gold(const gf_st_file *f, const char *pre, const char *sfx) {
  gf_tensor g = kt_gold_at(f, pre, sfx, 0);
  kt_twin t = kt_twin_of(&g);
  gf_tensor_free(&g);
  return t;
}

/* out's device half against golden pre.sfx (bit-exact). */
static void vs_torch(const gf_st_file *f, const char *pre, const char *sfx,
                     const kt_twin *out) {
  kt_twin want = tw_gold(f, pre, sfx);
  char lb[64];
  int k = snprintf(lb, sizeof lb, "%s.%s (cuda)", pre, sfx);
  REQUIRE(k > 0 && k < (int)sizeof lb);
  KT_VS_TORCH(lb, &out->d, &want.h, EXACT);
  kt_twin_free(&want);
}

/* An all-zero twin of t's shape (an output both sides overwrite). */
static kt_twin tw_zero_like(const gf_tensor *t) {
  gf_tensor z = kt_tensor(t->ndim, t->shape[0], t->ndim > 1 ? t->shape[1] : 1,
                          t->ndim > 2 ? t->shape[2] : 1,
                          t->ndim > 3 ? t->shape[3] : 1);
  kt_twin w = kt_twin_of(&z);
  gf_tensor_free(&z);
  return w;
}

/* ---- golden -------------------------------------------------------------- */

static void test_ba_golden(const gf_st_file *f, const char *pre, bool bias) {
  kt_twin x = tw_gold(f, pre, "x"), dy = tw_gold(f, pre, "dy");
  kt_twin p = tw_gold(f, pre, "p"), b = {0};
  if (bias) b = tw_gold(f, pre, "b");
  const float *pv = p.h.data;
  int act = (int)pv[0];
  float alpha = pv[1], gain = pv[2], clamp = pv[3];
  kt_twin y = tw_zero_like(&x.h), dx = tw_zero_like(&x.h), db = {0};
  if (bias) db = tw_zero_like(&b.h);
  gf_err e = {0};
  REQUIRE(gf_bias_act_fwd(&cpu, &x.h, bias ? &b.h : NULL, act, alpha, gain,
                          clamp, &y.h, &e) == GF_OK);
  CHECKF(gf_bias_act_fwd(&gpu, &x.d, bias ? &b.d : NULL, act, alpha, gain,
                         clamp, &y.d, &e) == GF_OK,
         "%s", e.msg);
  vs_torch(f, pre, "y", &y);
  KT_SAME("bias_act y", &y);
  REQUIRE(gf_bias_act_bwd(&cpu, &y.h, act, alpha, gain, clamp, &dy.h, &dx.h,
                          bias ? &db.h : NULL, GF_OVERWRITE, &e) == GF_OK);
  CHECKF(gf_bias_act_bwd(&gpu, &y.d, act, alpha, gain, clamp, &dy.d, &dx.d,
                         bias ? &db.d : NULL, GF_OVERWRITE, &e) == GF_OK,
         "%s", e.msg);
  vs_torch(f, pre, "dx", &dx);
  KT_SAME("bias_act dx", &dx);
  if (bias) KT_SAME("bias_act db", &db);
  kt_twin *tws[] = {&x, &dy, &p, &b, &y, &dx, &db};
  for (size_t i = 0; i < 7; i++) kt_twin_free(tws[i]);
}

static void test_mbstd_golden(const gf_st_file *f, const char *pre) {
  kt_twin x = tw_gold(f, pre, "x"), dy = tw_gold(f, pre, "dy");
  kt_twin p = tw_gold(f, pre, "p");
  const float *pv = p.h.data;
  int gs = (int)pv[0], nf = (int)pv[1];
  kt_twin y = tw_zero_like(&dy.h), dx = tw_zero_like(&x.h);
  gf_err e = {0};
  REQUIRE(gf_mbstd_fwd(&cpu, &x.h, gs, nf, &y.h, &e) == GF_OK);
  CHECKF(gf_mbstd_fwd(&gpu, &x.d, gs, nf, &y.d, &e) == GF_OK, "%s", e.msg);
  KT_SAME("mbstd y", &y);
  REQUIRE(gf_mbstd_bwd(&cpu, &x.h, gs, nf, &dy.h, &dx.h, &e) == GF_OK);
  CHECKF(gf_mbstd_bwd(&gpu, &x.d, gs, nf, &dy.d, &dx.d, &e) == GF_OK, "%s",
         e.msg);
  KT_SAME("mbstd dx", &dx);
  kt_twin *tws[] = {&x, &dy, &p, &y, &dx};
  for (size_t i = 0; i < 5; i++) kt_twin_free(tws[i]);
}

static void test_noise_golden(const gf_st_file *f, const char *pre) {
  kt_twin x = tw_gold(f, pre, "x"), z = tw_gold(f, pre, "noise");
  kt_twin s = tw_gold(f, pre, "strength"), dy = tw_gold(f, pre, "dy");
  kt_twin y = tw_zero_like(&x.h), dx = tw_zero_like(&x.h);
  kt_twin ds = tw_zero_like(&s.h);
  gf_err e = {0};
  REQUIRE(gf_noise_add_fwd(&cpu, &x.h, &z.h, &s.h, &y.h, &e) == GF_OK);
  CHECKF(gf_noise_add_fwd(&gpu, &x.d, &z.d, &s.d, &y.d, &e) == GF_OK, "%s",
         e.msg);
  vs_torch(f, pre, "y", &y);
  KT_SAME("noise y", &y);
  REQUIRE(gf_noise_add_bwd(&cpu, &z.h, &dy.h, &dx.h, &ds.h, GF_OVERWRITE, &e) ==
          GF_OK);
  CHECKF(gf_noise_add_bwd(&gpu, &z.d, &dy.d, &dx.d, &ds.d, GF_OVERWRITE, &e) ==
             GF_OK,
         "%s", e.msg);
  vs_torch(f, pre, "dx", &dx);
  KT_SAME("noise dx", &dx);
  KT_SAME("noise dstrength", &ds);
  kt_twin *tws[] = {&x, &z, &s, &dy, &y, &dx, &ds};
  for (size_t i = 0; i < 7; i++) kt_twin_free(tws[i]);
}

/* The bit comparison fires: the CPU half of t moved by one ulp in one
 * element must differ from the device half. */
static void test_same_fires(void) {
  kt_twin t = kt_twin_rnd(&rng, 1, 1000, 1, 1, 1, -1, 1);
  CHECK(kt_diff_bytes(&t.d, &t.h) == 0);
  float *p = t.h.data;
  p[500] = nextafterf(p[500], INFINITY);
  CHECK(kt_diff_bytes(&t.d, &t.h) > 0);
  kt_twin_free(&t);
}

/* ---- random cases against the CPU ---------------------------------------- */

static void ba_case(int64_t N, int64_t C, int64_t H, int64_t W, int act,
                    float alpha, float gain, float clamp, bool bias) {
  int nd = H ? 4 : 2;
  kt_twin x = kt_twin_rnd(&rng, nd, N, C, H, W, -3, 3);
  kt_twin b = kt_twin_rnd(&rng, 1, C, 1, 1, 1, -1, 1);
  kt_twin dy = kt_twin_rnd(&rng, nd, N, C, H, W, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, nd, N, C, H, W, 5, 6);
  kt_twin dx = kt_twin_rnd(&rng, nd, N, C, H, W, 5, 6);
  kt_twin db = kt_twin_rnd(&rng, 1, C, 1, 1, 1, -1, 1);
  kt_twin_neg_zero_every(&dy, 7);
  const gf_tensor *bh = bias ? &b.h : NULL, *bd = bias ? &b.d : NULL;
  gf_err e = {0};
  REQUIRE(gf_bias_act_fwd(&cpu, &x.h, bh, act, alpha, gain, clamp, &y.h, &e) ==
          GF_OK);
  REQUIRE(gf_bias_act_bwd(&cpu, &y.h, act, alpha, gain, clamp, &dy.h, &dx.h,
                          &db.h, GF_ACCUMULATE, &e) == GF_OK);
  gf_tensor db0h = kt_to_host(&db.d); /* the accumulation's start */
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_bias_act_fwd(&gpu, &x.d, bd, act, alpha, gain, clamp, &y.d, &e) ==
               GF_OK,
           "%s", e.msg);
    KT_SAME("bias_act y", &y);
    kt_twin dba = kt_twin_of(&db0h);
    CHECKF(gf_bias_act_bwd(&gpu, &y.d, act, alpha, gain, clamp, &dy.d, &dx.d,
                           &dba.d, GF_ACCUMULATE, &e) == GF_OK,
           "%s", e.msg);
    KT_SAME("bias_act dx", &dx);
    CHECK(kt_diff_bytes(&dba.d, &db.h) == 0);
    kt_twin_free(&dba);
  }
  /* db alone (overwrite), dx alone, then both in place (dx = dy) */
  kt_twin dbo = kt_twin_of(&db.h), dxo = kt_twin_of(&dx.h);
  REQUIRE(gf_bias_act_bwd(&cpu, &y.h, act, alpha, gain, clamp, &dy.h, NULL,
                          &dbo.h, GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_bias_act_bwd(&gpu, &y.d, act, alpha, gain, clamp, &dy.d, NULL,
                        &dbo.d, GF_OVERWRITE, &e) == GF_OK);
  KT_SAME("bias_act db alone", &dbo);
  CHECK(gf_bias_act_bwd(&gpu, &y.d, act, alpha, gain, clamp, &dy.d, &dxo.d,
                        NULL, GF_OVERWRITE, &e) == GF_OK);
  CHECK(kt_diff_bytes(&dxo.d, &dx.h) == 0);
  CHECK(gf_bias_act_bwd(&gpu, &y.d, act, alpha, gain, clamp, &dy.d, &dy.d,
                        &dbo.d, GF_OVERWRITE, &e) == GF_OK);
  CHECK(kt_diff_bytes(&dy.d, &dx.h) == 0 && kt_diff_bytes(&dbo.d, &dbo.h) == 0);
  /* y = x in place */
  CHECK(gf_bias_act_fwd(&gpu, &x.d, bd, act, alpha, gain, clamp, &x.d, &e) ==
        GF_OK);
  CHECK(kt_diff_bytes(&x.d, &y.h) == 0);
  gf_tensor_free(&db0h);
  kt_twin *tws[] = {&x, &b, &dy, &y, &dx, &db, &dbo, &dxo};
  for (size_t i = 0; i < 8; i++) kt_twin_free(tws[i]);
}

static void mbstd_case(int64_t N, int64_t C, int64_t H, int64_t W, int gs,
                       int nf) {
  kt_twin x = kt_twin_rnd(&rng, 4, N, C, H, W, -2, 3);
  kt_twin dy = kt_twin_rnd(&rng, 4, N, C + nf, H, W, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, 4, N, C + nf, H, W, 5, 6);
  kt_twin dx = kt_twin_rnd(&rng, 4, N, C, H, W, 5, 6);
  kt_twin_neg_zero_every(&dy, 7);
  gf_err e = {0};
  REQUIRE(gf_mbstd_fwd(&cpu, &x.h, gs, nf, &y.h, &e) == GF_OK);
  REQUIRE(gf_mbstd_bwd(&cpu, &x.h, gs, nf, &dy.h, &dx.h, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_mbstd_fwd(&gpu, &x.d, gs, nf, &y.d, &e) == GF_OK, "%s", e.msg);
    KT_SAME("mbstd y", &y);
    CHECKF(gf_mbstd_bwd(&gpu, &x.d, gs, nf, &dy.d, &dx.d, &e) == GF_OK, "%s",
           e.msg);
    KT_SAME("mbstd dx", &dx);
  }
  /* the tangents (R1's second order) */
  kt_twin xd = kt_twin_rnd(&rng, 4, N, C, H, W, -1, 1);
  kt_twin dyd = kt_twin_rnd(&rng, 4, N, C + nf, H, W, -1, 1);
  kt_twin yd = kt_twin_rnd(&rng, 4, N, C + nf, H, W, 5, 6);
  kt_twin dxd = kt_twin_rnd(&rng, 4, N, C, H, W, 5, 6);
  REQUIRE(gf_mbstd_jvp(&cpu, &x.h, &xd.h, gs, nf, &yd.h, &e) == GF_OK);
  REQUIRE(gf_mbstd_bwd_jvp(&cpu, &x.h, &xd.h, gs, nf, &dy.h, &dyd.h, &dxd.h,
                           &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_mbstd_jvp(&gpu, &x.d, &xd.d, gs, nf, &yd.d, &e) == GF_OK, "%s",
           e.msg);
    KT_SAME("mbstd jvp", &yd);
    CHECKF(gf_mbstd_bwd_jvp(&gpu, &x.d, &xd.d, gs, nf, &dy.d, &dyd.d, &dxd.d,
                            &e) == GF_OK, "%s", e.msg);
    KT_SAME("mbstd bwd jvp", &dxd);
  }
  kt_twin *tws[] = {&x, &dy, &y, &dx, &xd, &dyd, &yd, &dxd};
  for (size_t i = 0; i < 8; i++) kt_twin_free(tws[i]);
}

static void noise_case(int64_t N, int64_t C, int64_t H, int64_t W) {
  kt_twin x = kt_twin_rnd(&rng, 4, N, C, H, W, -2, 2);
  kt_twin z = kt_twin_rnd(&rng, 4, N, 1, H, W, -2, 2);
  kt_twin s = kt_twin_rnd(&rng, 1, 1, 1, 1, 1, -0.5, 0.5);
  kt_twin dy = kt_twin_rnd(&rng, 4, N, C, H, W, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, 4, N, C, H, W, 5, 6);
  kt_twin dx = kt_twin_rnd(&rng, 4, N, C, H, W, 5, 6);
  kt_twin ds = kt_twin_rnd(&rng, 1, 1, 1, 1, 1, -1, 1);
  kt_twin_neg_zero_every(&dy, 7);
  gf_err e = {0};
  REQUIRE(gf_noise_add_fwd(&cpu, &x.h, &z.h, &s.h, &y.h, &e) == GF_OK);
  gf_tensor ds0 = kt_clone(&ds.h);
  REQUIRE(gf_noise_add_bwd(&cpu, &z.h, &dy.h, &dx.h, &ds.h, GF_ACCUMULATE,
                           &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_noise_add_fwd(&gpu, &x.d, &z.d, &s.d, &y.d, &e) == GF_OK, "%s",
           e.msg);
    KT_SAME("noise y", &y);
    kt_twin dsa = kt_twin_of(&ds0);
    CHECKF(gf_noise_add_bwd(&gpu, &z.d, &dy.d, &dx.d, &dsa.d, GF_ACCUMULATE,
                            &e) == GF_OK,
           "%s", e.msg);
    KT_SAME("noise dx", &dx);
    CHECK(kt_diff_bytes(&dsa.d, &ds.h) == 0);
    kt_twin_free(&dsa);
  }
  /* overwrite, dx = dy (nothing to copy); y = x in place */
  kt_twin dso = kt_twin_of(&ds0);
  REQUIRE(gf_noise_add_bwd(&cpu, &z.h, &dy.h, NULL, &dso.h, GF_OVERWRITE, &e) ==
          GF_OK);
  CHECK(gf_noise_add_bwd(&gpu, &z.d, &dy.d, &dy.d, &dso.d, GF_OVERWRITE, &e) ==
        GF_OK);
  KT_SAME("noise dstrength", &dso);
  CHECK(gf_noise_add_fwd(&gpu, &x.d, &z.d, &s.d, &x.d, &e) == GF_OK);
  CHECK(kt_diff_bytes(&x.d, &y.h) == 0);
  gf_tensor_free(&ds0);
  kt_twin *tws[] = {&x, &z, &s, &dy, &y, &dx, &ds, &dso};
  for (size_t i = 0; i < 8; i++) kt_twin_free(tws[i]);
}

static void test_host_refused(void) {
  kt_twin x = kt_twin_rnd(&rng, 4, 2, 3, 4, 4, -1, 1);
  kt_twin z = kt_twin_rnd(&rng, 4, 2, 1, 4, 4, -1, 1);
  kt_twin s = kt_twin_rnd(&rng, 1, 1, 1, 1, 1, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, 4, 2, 4, 4, 4, -1, 1);
  gf_err e = {0};
  CHECK(gf_bias_act_fwd(&gpu, &x.h, NULL, GF_BIAS_ACT_LINEAR, 0.0f, 1.0f, -1.0f,
                        &x.d, &e) == GF_EINVAL);
  CHECK(gf_noise_add_fwd(&gpu, &x.d, &z.d, &s.h, &x.d, &e) == GF_EINVAL);
  CHECK(gf_noise_add_bwd(&gpu, &z.d, &x.d, NULL, &s.h, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_mbstd_fwd(&gpu, &x.d, 2, 1, &y.h, &e) == GF_EINVAL);
  CHECK(gf_mbstd_fwd(&gpu, &x.d, 2, 1, &y.d, &e) == GF_OK);
  kt_twin *tws[] = {&x, &z, &s, &y};
  for (size_t i = 0; i < 4; i++) kt_twin_free(tws[i]);
}

int main(int argc, char **argv) {
  kt_cuda_ctx_or_skip(&gpu);
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_STYLEGAN_OPS_GOLDEN);
  kt_cpu_ctx(&cpu, 4);
  const int L = GF_BIAS_ACT_LRELU, I = GF_BIAS_ACT_LINEAR;
  const float rt2 = 1.41421354f; /* sqrt(2) in f32 */
  test_same_fires();
  test_ba_golden(&f, "ba_lin2", true);
  test_ba_golden(&f, "ba_lrelu4", true);
  test_ba_golden(&f, "ba_lrelu4c", true);
  test_ba_golden(&f, "ba_lin4c", true);
  test_ba_golden(&f, "ba_lrelu2c", true);
  test_ba_golden(&f, "ba_nob4", false);
  test_mbstd_golden(&f, "mb1");
  test_mbstd_golden(&f, "mb2");
  test_mbstd_golden(&f, "mb3");
  test_mbstd_golden(&f, "mb4");
  test_noise_golden(&f, "nz1");
  test_noise_golden(&f, "nz2");
  ba_case(4096, 512, 0, 0, L, 0.2f, rt2, -1.0f, true);
  ba_case(300, 7, 0, 0, I, 0.0f, 1.0f, 1.0f, true);
  ba_case(32, 512, 4, 4, L, 0.2f, rt2, 2.0f, true);
  ba_case(16, 64, 64, 64, L, 0.2f, rt2, 256.0f, false);
  ba_case(4, 3, 256, 256, I, 0.0f, 1.0f, 2.5f, true);
  mbstd_case(32, 512, 4, 4, 4, 1);
  mbstd_case(16, 256, 8, 8, 4, 2);
  mbstd_case(6, 8, 20, 20, 8, 1);
  mbstd_case(1024, 16, 4, 4, 4, 1);
  mbstd_case(2, 300, 17, 3, 2, 3);
  noise_case(16, 512, 8, 8);
  noise_case(4, 32, 128, 128);
  noise_case(1, 1, 1, 1);
  test_host_refused();
  gf_ctx_free(&cpu);
  gf_ctx_free(&gpu);
  gf_st_file_free(&f);
  return check_report();
}
