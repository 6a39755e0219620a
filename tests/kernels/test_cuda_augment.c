/* test_cuda_augment.c - DiffAugment on the CUDA backend (label gpu; exits 77
 * where there is no GPU): gf_augment_fwd / gf_augment_bwd against the CPU
 * twin and against PyTorch's numbers (golden/augment.safetensors, as
 * test_augment.c).
 * Against the CPU: bit for bit. Both backends sum a pixel's channels in f32
 * in channel order and a sample in the double lanes of
 * kernels/src/reduce_order.h, and round every f32 operation alike (no FMA
 * contraction), so any difference is a bug.
 * Against PyTorch: test_augment.c's tolerances (geometry bit-exact; colour
 * y 2^-22 max|t|, dx 2^-20 max|t|).
 * Cases: the goldens (4 x 1 x 28 x 28, 2 x 3 x 32 x 32, 4 x 2 x 13 x 17;
 * each policy, translation + cutout, all), then params from
 * gf_augment_draw on 64 x 3 x 64 x 64 (every policy, y = x and dx = dy on
 * the device, repeated for identical bits), 2 x 5 x 33 x 47 and one
 * 1 x 3 x 128 x 96 sample (more pixels than a block has lanes); host
 * tensors on the CUDA ctx are refused.
 * Argument 1: the golden file (default GF_AUGMENT_GOLDEN, the source
 * tree's, from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gf/augment.h"
#include "kt_cuda.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_AUGMENT_GOLDEN
#define GF_AUGMENT_GOLDEN "augment.safetensors"
#endif

#define TOL_Y 0x1p-22
#define TOL_DX 0x1p-20

static gf_ctx cpu, gpu;
static kt_rng rng = {5150};

/* A twin of uniform values in [-1, 1). */
static kt_twin tw_rnd(int64_t a, int64_t b, int64_t c, int64_t d) {
  return kt_twin_rnd(&rng, 4, a, b, c, d, -1.0, 1.0);
}

static void test_golden(const gf_st_file *f, const char *k, const unsigned *pol,
                        int npol) {
  char name[64];
#define GOLD(...) \
  (snprintf(name, sizeof name, __VA_ARGS__), kt_gold(f, name, 0))
  gf_tensor xh = GOLD("%s.x", k), gh = GOLD("%s.g", k);
  gf_tensor ph = GOLD("%s.params", k);
  kt_twin x = kt_twin_of(&xh), g = kt_twin_of(&gh), prm = kt_twin_of(&ph);
  kt_twin y = kt_twin_of(&xh), dx = kt_twin_of(&xh);
  for (int i = 0; i < npol; i++) {
    unsigned p = pol[i];
    bool color = p & GF_AUG_COLOR;
    gf_err e = {0};
    REQUIRE(gf_augment_fwd(&cpu, &x.h, &prm.h, p, &y.h, &e) == GF_OK);
    CHECKF(gf_augment_fwd(&gpu, &x.d, &prm.d, p, &y.d, &e) == GF_OK, "%s",
           e.msg);
    REQUIRE(gf_augment_bwd(&cpu, &prm.h, p, &g.h, &dx.h, &e) == GF_OK);
    CHECKF(gf_augment_bwd(&gpu, &prm.d, p, &g.d, &dx.d, &e) == GF_OK, "%s",
           e.msg);
    char what[48];
    snprintf(what, sizeof what, "%s policy %u y", k, p);
    KT_SAME(what, &y);
    gf_tensor t = GOLD("%s.p%u.y", k, p);
    KT_VS_TORCH(what, &y.d, &t, color ? 0.0 : -1.0, 0.0, color ? TOL_Y : 0.0,
                NULL);
    gf_tensor_free(&t);
    snprintf(what, sizeof what, "%s policy %u dx", k, p);
    KT_SAME(what, &dx);
    t = GOLD("%s.p%u.dx", k, p);
    KT_VS_TORCH(what, &dx.d, &t, color ? 0.0 : -1.0, 0.0, color ? TOL_DX : 0.0,
                NULL);
    gf_tensor_free(&t);
  }
  kt_twin *tws[] = {&x, &g, &prm, &y, &dx};
  for (size_t i = 0; i < 5; i++) kt_twin_free(tws[i]);
  gf_tensor *all[] = {&xh, &gh, &ph};
  for (size_t i = 0; i < 3; i++) gf_tensor_free(all[i]);
#undef GOLD
}

/* Every policy on drawn params: forward and transpose against the CPU,
 * out of place, in place on the device, and repeated. */
static void test_drawn(int64_t N, int64_t C, int64_t H, int64_t W) {
  char label[80];
  kt_twin x = tw_rnd(N, C, H, W), g = tw_rnd(N, C, H, W);
  kt_twin y = tw_rnd(N, C, H, W), dx = tw_rnd(N, C, H, W);
  kt_twin io = tw_rnd(N, C, H, W);
  gf_tensor ph = kt_tensor(2, N, GF_AUG_NPARAMS, 1, 1);
  REQUIRE(gf_augment_draw(ph.data, N, (int)H, (int)W, GF_AUG_ALL, 2024, 17, 1,
                          0, NULL) == GF_OK);
  kt_twin prm = kt_twin_of(&ph);
  gf_err e = {0};
  for (unsigned p = 0; p <= GF_AUG_ALL; p++) {
    REQUIRE(gf_augment_fwd(&cpu, &x.h, &prm.h, p, &y.h, &e) == GF_OK);
    for (int rep = 0; rep < 2; rep++) {
      CHECKF(gf_augment_fwd(&gpu, &x.d, &prm.d, p, &y.d, &e) == GF_OK, "%s",
             e.msg);
      snprintf(label, sizeof label, "%lldx%lldx%lldx%lld policy %u y",
               (long long)N, (long long)C, (long long)H, (long long)W, p);
      KT_SAME(label, &y);
    }
    /* y = x on the device */
    gf_err ce = {0};
    REQUIRE(gf_tensor_copy(&io.d, &x.h, &ce) == GF_OK);
    CHECK(gf_augment_fwd(&gpu, &io.d, &prm.d, p, &io.d, &e) == GF_OK);
    CHECKF(kt_diff_bytes(&io.d, &y.h) == 0, "policy %u: y = x differs", p);
    REQUIRE(gf_augment_bwd(&cpu, &prm.h, p, &g.h, &dx.h, &e) == GF_OK);
    for (int rep = 0; rep < 2; rep++) {
      CHECKF(gf_augment_bwd(&gpu, &prm.d, p, &g.d, &dx.d, &e) == GF_OK, "%s",
             e.msg);
      snprintf(label, sizeof label, "%lldx%lldx%lldx%lld policy %u dx",
               (long long)N, (long long)C, (long long)H, (long long)W, p);
      KT_SAME(label, &dx);
    }
    REQUIRE(gf_tensor_copy(&io.d, &g.h, &ce) == GF_OK);
    CHECK(gf_augment_bwd(&gpu, &prm.d, p, &io.d, &io.d, &e) == GF_OK);
    CHECKF(kt_diff_bytes(&io.d, &dx.h) == 0, "policy %u: dx = dy differs", p);
  }
  kt_twin *tws[] = {&x, &g, &y, &dx, &io, &prm};
  for (size_t i = 0; i < 6; i++) kt_twin_free(tws[i]);
  gf_tensor_free(&ph);
}

static void test_refused(void) {
  kt_twin x = tw_rnd(2, 3, 4, 5), y = tw_rnd(2, 3, 4, 5);
  gf_tensor ph = kt_tensor(2, 2, GF_AUG_NPARAMS, 1, 1);
  kt_twin prm = kt_twin_of(&ph);
  gf_err e = {0};
  CHECK(gf_augment_fwd(&gpu, &x.d, &prm.d, GF_AUG_ALL, &y.d, &e) == GF_OK);
  CHECK(gf_augment_fwd(&gpu, &x.h, &prm.d, GF_AUG_ALL, &y.d, &e) == GF_EINVAL);
  CHECK(gf_augment_fwd(&gpu, &x.d, &prm.h, GF_AUG_ALL, &y.d, &e) == GF_EINVAL);
  CHECK(gf_augment_bwd(&gpu, &prm.d, GF_AUG_ALL, &x.d, &y.h, &e) == GF_EINVAL);
  kt_twin *tws[] = {&x, &y, &prm};
  for (size_t i = 0; i < 3; i++) kt_twin_free(tws[i]);
  gf_tensor_free(&ph);
}

int main(int argc, char **argv) {
  kt_cuda_ctx_or_skip(&gpu);
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_AUGMENT_GOLDEN);
  kt_cpu_ctx(&cpu, 2);
  static const unsigned pol5[] = {1, 2, 4, 6, 7}, pol4[] = {1, 2, 4, 7};
  test_golden(&f, "c1_28", pol5, 5);
  test_golden(&f, "c3_32", pol4, 4);
  test_golden(&f, "c2_13x17", pol5, 5);
  test_drawn(64, 3, 64, 64);
  test_drawn(2, 5, 33, 47);
  test_drawn(1, 3, 128, 96);
  test_refused();
  gf_err se = {0};
  CHECKF(gf_ctx_sync(&gpu, &se) == GF_OK, "%s", se.msg);
  gf_ctx_free(&gpu);
  gf_ctx_free(&cpu);
  gf_st_file_free(&f);
  return check_report();
}
