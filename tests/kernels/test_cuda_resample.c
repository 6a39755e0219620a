/* test_cuda_resample.c - the residual-network ops on the CUDA backend
 * (label gpu; exits 77 where there is no GPU): gf_upsample_nearest2x_fwd /
 * _bwd, gf_avgpool2d_bwd and gf_add against the CPU twin, bit for bit, and
 * against PyTorch's numbers (golden/resample.safetensors, as
 * test_resample.c: all bit-exact). Both backends form each output element
 * from its own inputs with the same f32 operations in the same order (the
 * upsampling gradient's four terms added into +0 row by row, the pooling
 * gradient's one division then + 0, one rounding for add), so any
 * difference is a bug.
 * Cases, each run twice for identical bits: upsampling on [2,3,5,4],
 * [1,1,1,1], [3,5,33,17], [4,64,16,16] and [16,128,32,32] (8M outputs:
 * several grid-stride rounds); the pooling gradient with 2x2 windows on
 * [2,3,8,6] and [16,128,64,64], 3x2 on [2,5,12,18], and global windows
 * 8x8 on [64,256,8,8], 4x4 on [8,512,4,4], 7x7 on [4,3,7,7]; add on 1,
 * 1000 and 2^20 + 3 elements, also in place (y = a, y = b, y = a = b).
 * The upstream gradients hold -0 every 7th element (+0 in dx on both
 * backends, as in PyTorch). No NaN or infinity: their NaN payloads differ
 * between the CPU and the GPU without either being wrong. A host tensor on
 * the CUDA ctx is refused.
 * Argument 1: the golden file (default GF_RESAMPLE_GOLDEN, the source
 * tree's, from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_cuda.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_RESAMPLE_GOLDEN
#define GF_RESAMPLE_GOLDEN "resample.safetensors"
#endif

/* kt_misses's tolerance arguments for "any bit difference is a miss". */
#define EXACT -1.0, 0.0, 0.0, NULL

static gf_ctx cpu, gpu;
static kt_rng rng = {6262};

static gf_pool_params win(int kh, int kw) {
  gf_pool_params p = {{kh, kw}, {kh, kw}, {0, 0}, 1};
  return p;
}

/* ---- golden -------------------------------------------------------------- */

static kt_twin tw_gold(const gf_st_file *f, const char *pre, const char *sfx) {
  gf_tensor g = kt_gold_at(f, pre, sfx, 0);
  kt_twin t = kt_twin_of(&g);
  gf_tensor_free(&g);
  return t;
}

/* out's device half against golden pre.sfx (bit-exact) and against its
 * host half (the CPU's result, bit-exact). */
static void vs_torch_and_cpu(const gf_st_file *f, const char *pre,
                             const char *sfx, const kt_twin *out) {
  kt_twin want = tw_gold(f, pre, sfx);
  char label[48];
  int k = snprintf(label, sizeof label, "%s.%s", pre, sfx);
  REQUIRE(k > 0 && k < (int)sizeof label);
  KT_VS_TORCH(label, &out->d, &want.h, EXACT);
  KT_SAME(label, out);
  kt_twin_free(&want);
}

static void test_upsample_golden(const gf_st_file *f, const char *pre) {
  kt_twin x = tw_gold(f, pre, "x"), g = tw_gold(f, pre, "g");
  kt_twin y = tw_gold(f, pre, "y"), dx = tw_gold(f, pre, "dx");
  gf_tensor zy = kt_tensor(4, y.h.shape[0], y.h.shape[1], y.h.shape[2],
                           y.h.shape[3]);
  gf_tensor zx = kt_tensor(4, x.h.shape[0], x.h.shape[1], x.h.shape[2],
                           x.h.shape[3]);
  kt_twin_set(&y, &zy); /* outputs start as zeros on both sides */
  kt_twin_set(&dx, &zx);
  gf_err e = {0};
  REQUIRE(gf_upsample_nearest2x_fwd(&cpu, &x.h, &y.h, &e) == GF_OK);
  CHECKF(gf_upsample_nearest2x_fwd(&gpu, &x.d, &y.d, &e) == GF_OK, "%s", e.msg);
  vs_torch_and_cpu(f, pre, "y", &y);
  REQUIRE(gf_upsample_nearest2x_bwd(&cpu, &g.h, &dx.h, &e) == GF_OK);
  CHECKF(gf_upsample_nearest2x_bwd(&gpu, &g.d, &dx.d, &e) == GF_OK, "%s",
         e.msg);
  vs_torch_and_cpu(f, pre, "dx", &dx);
  kt_twin *tws[] = {&x, &g, &y, &dx};
  for (size_t i = 0; i < 4; i++) kt_twin_free(tws[i]);
  gf_tensor_free(&zy);
  gf_tensor_free(&zx);
}

static void test_pool_golden(const gf_st_file *f, const char *pre, int kh,
                             int kw) {
  kt_twin g = tw_gold(f, pre, "g"), dx = tw_gold(f, pre, "x");
  gf_tensor z = kt_tensor(4, dx.h.shape[0], dx.h.shape[1], dx.h.shape[2],
                          dx.h.shape[3]);
  kt_twin_set(&dx, &z);
  gf_pool_params p = win(kh, kw);
  gf_err e = {0};
  REQUIRE(gf_avgpool2d_bwd(&cpu, &g.h, &p, &dx.h, &e) == GF_OK);
  CHECKF(gf_avgpool2d_bwd(&gpu, &g.d, &p, &dx.d, &e) == GF_OK, "%s", e.msg);
  vs_torch_and_cpu(f, pre, "dx", &dx);
  kt_twin_free(&g);
  kt_twin_free(&dx);
  gf_tensor_free(&z);
}

static void test_add_golden(const gf_st_file *f) {
  kt_twin a = tw_gold(f, "add", "a"), b = tw_gold(f, "add", "b");
  kt_twin y = tw_gold(f, "add", "a"); /* overwritten */
  gf_err e = {0};
  REQUIRE(gf_add(&cpu, &a.h, &b.h, &y.h, &e) == GF_OK);
  CHECKF(gf_add(&gpu, &a.d, &b.d, &y.d, &e) == GF_OK, "%s", e.msg);
  vs_torch_and_cpu(f, "add", "y", &y);
  kt_twin_free(&a);
  kt_twin_free(&b);
  kt_twin_free(&y);
}

/* ---- random cases against the CPU ---------------------------------------- */

static void upsample_case(int64_t N, int64_t C, int64_t H, int64_t W) {
  kt_twin x = kt_twin_rnd(&rng, 4, N, C, H, W, -2, 2);
  kt_twin dy = kt_twin_rnd(&rng, 4, N, C, 2 * H, 2 * W, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, 4, N, C, 2 * H, 2 * W, 5, 6);
  kt_twin dx = kt_twin_rnd(&rng, 4, N, C, H, W, 5, 6);
  kt_twin_neg_zero_every(&dy, 7);
  gf_err e = {0};
  REQUIRE(gf_upsample_nearest2x_fwd(&cpu, &x.h, &y.h, &e) == GF_OK);
  REQUIRE(gf_upsample_nearest2x_bwd(&cpu, &dy.h, &dx.h, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_upsample_nearest2x_fwd(&gpu, &x.d, &y.d, &e) == GF_OK, "%s",
           e.msg);
    KT_SAME("upsample y", &y);
    CHECKF(gf_upsample_nearest2x_bwd(&gpu, &dy.d, &dx.d, &e) == GF_OK, "%s",
           e.msg);
    KT_SAME("upsample dx", &dx);
  }
  kt_twin *tws[] = {&x, &dy, &y, &dx};
  for (size_t i = 0; i < 4; i++) kt_twin_free(tws[i]);
}

static void pool_case(int64_t N, int64_t C, int64_t H, int64_t W, int kh,
                      int kw) {
  gf_pool_params p = win(kh, kw);
  kt_twin dy = kt_twin_rnd(&rng, 4, N, C, H / kh, W / kw, -3, 3);
  kt_twin dx = kt_twin_rnd(&rng, 4, N, C, H, W, 5, 6);
  kt_twin_neg_zero_every(&dy, 7);
  gf_err e = {0};
  REQUIRE(gf_avgpool2d_bwd(&cpu, &dy.h, &p, &dx.h, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_avgpool2d_bwd(&gpu, &dy.d, &p, &dx.d, &e) == GF_OK, "%s", e.msg);
    KT_SAME("avgpool dx", &dx);
  }
  kt_twin_free(&dy);
  kt_twin_free(&dx);
}

static void add_case(int64_t n) {
  kt_twin a = kt_twin_rnd(&rng, 1, n, 1, 1, 1, -1, 1);
  kt_twin b = kt_twin_rnd(&rng, 1, n, 1, 1, 1, -1e-3, 1e-3);
  kt_twin y = kt_twin_rnd(&rng, 1, n, 1, 1, 1, 5, 6);
  kt_twin_neg_zero_every(&a, 7);
  kt_twin_neg_zero_every(&b, 7); /* -0 + -0 = -0 at every 7th */
  gf_err e = {0};
  REQUIRE(gf_add(&cpu, &a.h, &b.h, &y.h, &e) == GF_OK);
  for (int rep = 0; rep < 2; rep++) {
    CHECKF(gf_add(&gpu, &a.d, &b.d, &y.d, &e) == GF_OK, "%s", e.msg);
    KT_SAME("add y", &y);
  }
  /* in place on the device: y = a, y = b, y = a = b */
  kt_twin a2 = kt_twin_of(&a.h), b2 = kt_twin_of(&b.h);
  CHECK(gf_add(&gpu, &a2.d, &b.d, &a2.d, &e) == GF_OK);
  CHECK(gf_add(&gpu, &a.d, &b2.d, &b2.d, &e) == GF_OK);
  CHECK(kt_diff_bytes(&a2.d, &y.h) == 0 && kt_diff_bytes(&b2.d, &y.h) == 0);
  REQUIRE(gf_add(&cpu, &a.h, &a.h, &a2.h, &e) == GF_OK); /* 2a on the CPU */
  CHECK(gf_add(&gpu, &a.d, &a.d, &a.d, &e) == GF_OK);
  CHECK(kt_diff_bytes(&a.d, &a2.h) == 0);
  kt_twin *tws[] = {&a, &b, &y, &a2, &b2};
  for (size_t i = 0; i < 5; i++) kt_twin_free(tws[i]);
}

static void test_host_refused(void) {
  kt_twin a = kt_twin_rnd(&rng, 4, 1, 2, 3, 4, -1, 1);
  kt_twin y = kt_twin_rnd(&rng, 4, 1, 2, 6, 8, -1, 1);
  gf_pool_params p = win(3, 4);
  kt_twin g = kt_twin_rnd(&rng, 4, 1, 2, 1, 1, -1, 1);
  gf_err e = {0};
  CHECK(gf_add(&gpu, &a.h, &a.d, &a.d, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_fwd(&gpu, &a.d, &y.h, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_bwd(&gpu, &y.h, &a.d, &e) == GF_EINVAL);
  CHECK(gf_avgpool2d_bwd(&gpu, &g.h, &p, &a.d, &e) == GF_EINVAL);
  CHECK(gf_avgpool2d_bwd(&gpu, &g.d, &p, &a.d, &e) == GF_OK);
  kt_twin *tws[] = {&a, &y, &g};
  for (size_t i = 0; i < 3; i++) kt_twin_free(tws[i]);
}

int main(int argc, char **argv) {
  kt_cuda_ctx_or_skip(&gpu);
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_RESAMPLE_GOLDEN);
  kt_cpu_ctx(&cpu, 4);
  test_upsample_golden(&f, "up1");
  test_upsample_golden(&f, "up2");
  test_pool_golden(&f, "pool2", 2, 2);
  test_pool_golden(&f, "pool23", 2, 3);
  test_pool_golden(&f, "pool7", 7, 7);
  test_pool_golden(&f, "pool4", 4, 4);
  test_add_golden(&f);
  upsample_case(2, 3, 5, 4);
  upsample_case(1, 1, 1, 1);
  upsample_case(3, 5, 33, 17);
  upsample_case(4, 64, 16, 16);
  upsample_case(16, 128, 32, 32);
  pool_case(2, 3, 8, 6, 2, 2);
  pool_case(16, 128, 64, 64, 2, 2);
  pool_case(2, 5, 12, 18, 3, 2);
  pool_case(64, 256, 8, 8, 8, 8);
  pool_case(8, 512, 4, 4, 4, 4);
  pool_case(4, 3, 7, 7, 7, 7);
  add_case(1);
  add_case(1000);
  add_case((1 << 20) + 3);
  test_host_refused();
  gf_ctx_free(&cpu);
  gf_ctx_free(&gpu);
  gf_st_file_free(&f);
  return check_report();
}
