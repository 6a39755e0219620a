/* test_resample.c - the CPU residual-network ops (gf_upsample_nearest2x_fwd
 * / _bwd, gf_avgpool2d_bwd, gf_add, with gf_avgpool2d_fwd beside its
 * backward) against PyTorch's numbers (golden/resample.safetensors, written
 * by golden/make_resample_golden.py; no Python needed here), against plain
 * loops written here from the formulas of ops.h, at 1 and 4 threads, and
 * their argument checks.
 *
 * Against PyTorch (each run prints the worst difference per quantity):
 *   upsampling y and dx ([2,3,5,4] with blocks of -0 in dy, [1,2,7,7]),
 *   average-pool dx (2x2 on [2,3,8,6] with a -0 in dy, 2x3 on [1,2,4,9],
 *   global 7x7 and 4x4), add                                    bit-exact
 *   average-pool y            |d| <= 4 ulp of the window's mean of |x| (our
 *                             f32 window sums in another order than
 *                             PyTorch's)
 * Each bit-exact comparison is shown to fire: the golden perturbed by one
 * ulp in one element must fail it. A -0 gradient gives +0 in dx, as in
 * PyTorch (checked by the bit-exact comparisons and once more by name).
 * Against the loops here: bit-exact, at sizes above the threading threshold
 * (GF_PAR_MIN), with the same bits at 1 and 4 threads; in-place add (y = a,
 * y = b, y = a = b).
 * Argument checks: NULLs, wrong ranks and shapes, dtype, device, overlaps
 * (refused: GF_EINVAL), windows that overlap, pad or do not tile the input
 * (GF_EUNSUPPORTED, nothing written), empty tensors (GF_OK).
 * Argument 1: the golden file (default GF_RESAMPLE_GOLDEN, the source
 * tree's, from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_RESAMPLE_GOLDEN
#define GF_RESAMPLE_GOLDEN "resample.safetensors"
#endif

/* kt_misses's tolerance arguments for "any bit difference is a miss". */
#define EXACT -1.0, 0.0, 0.0, NULL

/* ---- helpers ------------------------------------------------------------- */

/* Non-overlapping kh x kw windows (kernel == stride, pad 0). */
static gf_pool_params win(int kh, int kw) {
  gf_pool_params p = {{kh, kw}, {kh, kw}, {0, 0}, 1};
  return p;
}

/* ---- the formulas of ops.h as plain loops -------------------------------- */

static void ref_up_fwd(const float *x, float *y, int64_t P, int64_t H,
                       int64_t W) {
  for (int64_t p = 0; p < P; p++)
    for (int64_t i = 0; i < 2 * H; i++)
      for (int64_t j = 0; j < 2 * W; j++)
        y[(p * 2 * H + i) * 2 * W + j] = x[(p * H + i / 2) * W + j / 2];
}

static void ref_up_bwd(const float *dy, float *dx, int64_t P, int64_t H,
                       int64_t W) {
  for (int64_t p = 0; p < P; p++)
    for (int64_t i = 0; i < H; i++)
      for (int64_t j = 0; j < W; j++) {
        const float *g = dy + (p * 2 * H + 2 * i) * 2 * W + 2 * j;
        float s = 0.0f;
        s += g[0];
        s += g[1];
        s += g[2 * W];
        s += g[2 * W + 1];
        dx[(p * H + i) * W + j] = s;
      }
}

static void ref_pool_bwd(const float *dy, float *dx, int64_t P, int64_t OH,
                         int64_t OW, int kh, int kw) {
  int64_t H = OH * kh, W = OW * kw;
  float k = (float)(kh * kw);
  for (int64_t p = 0; p < P; p++)
    for (int64_t i = 0; i < H; i++)
      for (int64_t j = 0; j < W; j++) {
        float q = dy[(p * OH + i / kh) * OW + j / kw] / k;
        dx[(p * H + i) * W + j] = 0.0f + q;
      }
}

/* Per output of an average pooling of x: 4 ulp of the window's mean |x|. */
static double *pool_tol(const gf_tensor *x, int kh, int kw) {
  int64_t P = x->shape[0] * x->shape[1], H = x->shape[2], W = x->shape[3];
  int64_t OH = H / kh, OW = W / kw;
  double *t = kt_dzeros((size_t)(P * OH * OW));
  const float *X = x->data;
  for (int64_t p = 0; p < P; p++)
    for (int64_t i = 0; i < H; i++)
      for (int64_t j = 0; j < W; j++)
        t[(p * OH + i / kh) * OW + j / kw] +=
            fabs((double)X[(p * H + i) * W + j]) * 4 * 0x1p-24 / (kh * kw);
  return t;
}

/* ---- against PyTorch ----------------------------------------------------- */

/* The golden names pre.x, pre.y, pre.g, pre.dx. */
static void golden_names(const char *pre, char nm[4][32]) {
  const char *sfx[4] = {"x", "y", "g", "dx"};
  for (int i = 0; i < 4; i++) {
    int k = snprintf(nm[i], sizeof nm[i], "%s.%s", pre, sfx[i]);
    REQUIRE(k > 0 && k < (int)sizeof nm[i]);
  }
}

static void test_upsample_golden(gf_ctx *ctx, const gf_st_file *f,
                                 const char *pre) {
  char nm[4][32];
  golden_names(pre, nm);
  gf_tensor x = kt_gold(f, nm[0], 0), ty = kt_gold(f, nm[1], 0);
  gf_tensor g = kt_gold(f, nm[2], 0), tdx = kt_gold(f, nm[3], 0);
  gf_tensor y = kt_garbage_like(&ty), dx = kt_garbage_like(&tdx);
  gf_err e = {0};
  CHECKF(gf_upsample_nearest2x_fwd(ctx, &x, &y, &e) == GF_OK, "%s", e.msg);
  KT_EXACT_FIRES(nm[1], &y, &ty);
  CHECKF(gf_upsample_nearest2x_bwd(ctx, &g, &dx, &e) == GF_OK, "%s", e.msg);
  KT_EXACT_FIRES(nm[3], &dx, &tdx);
  if (strcmp(pre, "up1") == 0) { /* g's block [0,0,0:2,0:2] is all -0 */
    float d0 = ((const float *)dx.data)[0];
    CHECKF(d0 == 0.0f && !signbit(d0), "%s: four -0 sum to %g, not +0", pre,
           (double)d0);
  }
  gf_tensor *all[] = {&x, &ty, &g, &tdx, &y, &dx};
  for (size_t i = 0; i < 6; i++) gf_tensor_free(all[i]);
}

static void test_pool_golden(gf_ctx *ctx, const gf_st_file *f, const char *pre,
                             int kh, int kw) {
  char nm[4][32];
  golden_names(pre, nm);
  gf_tensor x = kt_gold(f, nm[0], 0), ty = kt_gold(f, nm[1], 0);
  gf_tensor g = kt_gold(f, nm[2], 0), tdx = kt_gold(f, nm[3], 0);
  gf_tensor y = kt_garbage_like(&ty), dx = kt_garbage_like(&tdx);
  gf_pool_params p = win(kh, kw);
  gf_err e = {0};
  CHECKF(gf_avgpool2d_fwd(ctx, &x, &p, &y, &e) == GF_OK, "%s", e.msg);
  double *tol = pool_tol(&x, kh, kw);
  KT_VS_TORCH(nm[1], &y, &ty, 0.0, 0.0, 0.0, tol);
  free(tol);
  CHECKF(gf_avgpool2d_bwd(ctx, &g, &p, &dx, &e) == GF_OK, "%s", e.msg);
  KT_EXACT_FIRES(nm[3], &dx, &tdx);
  /* without padding count_include_pad changes nothing */
  p.count_include_pad = 0;
  gf_tensor dx0 = kt_garbage_like(&tdx);
  CHECKF(gf_avgpool2d_bwd(ctx, &g, &p, &dx0, &e) == GF_OK, "%s", e.msg);
  CHECK(kt_same_bits(&dx0, &tdx));
  if (strcmp(pre, "pool2") == 0) { /* g[0,0,0,0] is -0 */
    const float *d = dx.data;
    int64_t W = dx.shape[3];
    bool pos = true;
    for (int a = 0; a < 2; a++)
      for (int b = 0; b < 2; b++)
        pos &= d[a * W + b] == 0.0f && !signbit(d[a * W + b]);
    CHECKF(pos, "%s: a -0 gradient does not give +0", pre);
  }
  gf_tensor *all[] = {&x, &ty, &g, &tdx, &y, &dx, &dx0};
  for (size_t i = 0; i < 7; i++) gf_tensor_free(all[i]);
}

static void test_add_golden(gf_ctx *ctx, const gf_st_file *f) {
  gf_tensor a = kt_gold(f, "add.a", 0), b = kt_gold(f, "add.b", 0);
  gf_tensor ty = kt_gold(f, "add.y", 0);
  gf_tensor y = kt_garbage_like(&ty);
  gf_err e = {0};
  CHECKF(gf_add(ctx, &a, &b, &y, &e) == GF_OK, "%s", e.msg);
  KT_EXACT_FIRES("add.y", &y, &ty);
  /* in place: y = a, then y = b */
  gf_tensor ya = kt_clone(&a), yb = kt_clone(&b);
  CHECKF(gf_add(ctx, &ya, &b, &ya, &e) == GF_OK, "%s", e.msg);
  KT_VS_TORCH("add.y in place (y = a)", &ya, &ty, EXACT);
  CHECKF(gf_add(ctx, &a, &yb, &yb, &e) == GF_OK, "%s", e.msg);
  KT_VS_TORCH("add.y in place (y = b)", &yb, &ty, EXACT);
  /* y = a = b: 2a, exact */
  gf_tensor aa = kt_clone(&a);
  CHECKF(gf_add(ctx, &aa, &aa, &aa, &e) == GF_OK, "%s", e.msg);
  const float *ap = a.data, *aap = aa.data;
  bool twice = true;
  for (int64_t i = 0; i < gf_tensor_numel(&a); i++)
    twice &= aap[i] == 2.0f * ap[i];
  CHECK(twice);
  /* shapes may differ: [3,4,5] + [60] into [12,5] */
  gf_tensor b1, y2 = kt_tensor(2, 12, 5, 1, 1);
  int64_t n60 = 60;
  REQUIRE(gf_tensor_reshape_view(&b1, &b, 1, &n60, &e) == GF_OK);
  CHECKF(gf_add(ctx, &a, &b1, &y2, &e) == GF_OK, "%s", e.msg);
  CHECK(memcmp(y2.data, ty.data, gf_tensor_nbytes(&ty)) == 0);
  gf_tensor *all[] = {&a, &b, &ty, &y, &ya, &yb, &aa, &y2};
  for (size_t i = 0; i < 8; i++) gf_tensor_free(all[i]);
}

/* ---- against the loops, 1 and 4 threads ---------------------------------- */

static void test_upsample_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t shapes[3][4] = {{4, 16, 33, 20}, {1, 1, 1, 1}, {2, 64, 16, 16}};
  for (int c = 0; c < 3; c++) {
    int64_t N = shapes[c][0], C = shapes[c][1], H = shapes[c][2],
            W = shapes[c][3];
    gf_tensor x = kt_tensor(4, N, C, H, W), dx = kt_tensor(4, N, C, H, W);
    gf_tensor dx4 = kt_tensor(4, N, C, H, W), rdx = kt_tensor(4, N, C, H, W);
    gf_tensor y = kt_tensor(4, N, C, 2 * H, 2 * W);
    gf_tensor y4 = kt_tensor(4, N, C, 2 * H, 2 * W);
    gf_tensor ry = kt_tensor(4, N, C, 2 * H, 2 * W);
    gf_tensor dy = kt_tensor(4, N, C, 2 * H, 2 * W);
    kt_fill(&x, rng, -2.0, 2.0, 0.0);
    kt_fill(&dy, rng, -1.0, 1.0, 0.0);
    kt_neg_zero_every(&dy, 7);
    float *d = dy.data;
    if (gf_tensor_numel(&dy) >= 8) /* a block of four -0 */
      d[0] = d[1] = d[2 * W] = d[2 * W + 1] = -0.0f;
    gf_err e = {0};
    CHECK(gf_upsample_nearest2x_fwd(ctx, &x, &y, &e) == GF_OK);
    CHECK(gf_upsample_nearest2x_fwd(ctx4, &x, &y4, &e) == GF_OK);
    ref_up_fwd(x.data, ry.data, N * C, H, W);
    CHECK(kt_same_bits(&y, &ry) && kt_same_bits(&y4, &ry));
    CHECK(gf_upsample_nearest2x_bwd(ctx, &dy, &dx, &e) == GF_OK);
    CHECK(gf_upsample_nearest2x_bwd(ctx4, &dy, &dx4, &e) == GF_OK);
    ref_up_bwd(dy.data, rdx.data, N * C, H, W);
    CHECK(kt_same_bits(&dx, &rdx) && kt_same_bits(&dx4, &rdx));
    if (gf_tensor_numel(&dy) >= 8) CHECK(!signbit(((float *)dx.data)[0]));
    gf_tensor *all[] = {&x, &dx, &dx4, &rdx, &y, &y4, &ry, &dy};
    for (size_t i = 0; i < 8; i++) gf_tensor_free(all[i]);
  }
}

static void test_pool_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  /* N, C, H, W, kh, kw */
  int64_t cases[5][6] = {{8, 32, 16, 16, 2, 2},
                         {64, 256, 8, 8, 8, 8},
                         {16, 128, 4, 4, 4, 4},
                         {4, 9, 7, 7, 7, 7},
                         {2, 40, 12, 18, 3, 2}};
  for (int c = 0; c < 5; c++) {
    int64_t N = cases[c][0], C = cases[c][1], H = cases[c][2], W = cases[c][3];
    int kh = (int)cases[c][4], kw = (int)cases[c][5];
    gf_pool_params p = win(kh, kw);
    gf_tensor dy = kt_tensor(4, N, C, H / kh, W / kw);
    gf_tensor dx = kt_tensor(4, N, C, H, W), dx4 = kt_tensor(4, N, C, H, W);
    gf_tensor rdx = kt_tensor(4, N, C, H, W);
    kt_fill(&dy, rng, -3.0, 3.0, 0.0);
    kt_neg_zero_every(&dy, 7);
    kt_fill(&dx, rng, -1.0, 1.0, 0.0);
    gf_err e = {0};
    CHECKF(gf_avgpool2d_bwd(ctx, &dy, &p, &dx, &e) == GF_OK, "%s", e.msg);
    CHECKF(gf_avgpool2d_bwd(ctx4, &dy, &p, &dx4, &e) == GF_OK, "%s", e.msg);
    ref_pool_bwd(dy.data, rdx.data, N * C, H / kh, W / kw, kh, kw);
    CHECKF(kt_same_bits(&dx, &rdx) && kt_same_bits(&dx4, &rdx),
           "pool bwd %dx%d on [%lld,%lld,%lld,%lld]", kh, kw, (long long)N,
           (long long)C, (long long)H, (long long)W);
    CHECK(!signbit(((float *)dx.data)[0])); /* dy[0] is -0 */
    gf_tensor *all[] = {&dy, &dx, &dx4, &rdx};
    for (size_t i = 0; i < 4; i++) gf_tensor_free(all[i]);
  }
}

static void test_add_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t n = 100003;
  gf_tensor a = kt_tensor(1, n, 1, 1, 1), b = kt_tensor(1, n, 1, 1, 1);
  gf_tensor y = kt_tensor(1, n, 1, 1, 1), want = kt_tensor(1, n, 1, 1, 1);
  kt_fill(&a, rng, -1.0, 1.0, 0.0);
  kt_fill(&b, rng, -1e-3, 1e-3, 0.0);
  const float *ap = a.data, *bp = b.data;
  float *wp = want.data;
  for (int64_t i = 0; i < n; i++) wp[i] = ap[i] + bp[i];
  gf_err e = {0};
  CHECK(gf_add(ctx, &a, &b, &y, &e) == GF_OK);
  CHECK(kt_same_bits(&y, &want));
  gf_tensor a4 = kt_clone(&a), b4 = kt_clone(&b);
  CHECK(gf_add(ctx4, &a4, &b, &a4, &e) == GF_OK);
  CHECK(kt_same_bits(&a4, &want));
  CHECK(gf_add(ctx4, &a, &b4, &b4, &e) == GF_OK);
  CHECK(kt_same_bits(&b4, &want));
  gf_tensor *all[] = {&a, &b, &y, &want, &a4, &b4};
  for (size_t i = 0; i < 6; i++) gf_tensor_free(all[i]);
}

/* ---- argument errors ----------------------------------------------------- */

static void test_upsample_errors(gf_ctx *ctx) {
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, 2, 3, 4, 5), y = kt_tensor(4, 2, 3, 8, 10);
  gf_tensor y9 = kt_tensor(4, 2, 3, 8, 9), y3 = kt_tensor(3, 6, 8, 10, 1);
  gf_tensor x3 = kt_tensor(3, 6, 4, 5, 1);
  CHECK(gf_upsample_nearest2x_fwd(ctx, &x, &y, &e) == GF_OK);
  CHECK(gf_upsample_nearest2x_fwd(NULL, &x, &y, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_fwd(ctx, NULL, &y, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_fwd(ctx, &x, NULL, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_fwd(ctx, &x, &y9, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "expected [2,3,8,10]") != NULL);
  CHECK(gf_upsample_nearest2x_fwd(ctx, &x, &y3, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_fwd(ctx, &x3, &y, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_fwd(ctx, &y, &x, &e) == GF_EINVAL);
  gf_tensor f16 = x;
  f16.dtype = GF_F16;
  CHECK(gf_upsample_nearest2x_fwd(ctx, &f16, &y, &e) == GF_EUNSUPPORTED);
  gf_tensor xdev = x;
  xdev.device = GF_DEV_CUDA;
  CHECK(gf_upsample_nearest2x_fwd(ctx, &xdev, &y, &e) == GF_EINVAL);
  /* y over x: x [1,1,2,2] is y's elements 3..6 */
  gf_tensor xs = kt_view_at(&y, 3, 4, (int64_t[]){1, 1, 2, 2});
  gf_tensor ys = kt_view_at(&y, 0, 4, (int64_t[]){1, 1, 4, 4});
  CHECK(gf_upsample_nearest2x_fwd(ctx, &xs, &ys, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps") != NULL);
  /* empty: nothing to do */
  gf_tensor x0 = kt_tensor(4, 0, 3, 4, 5), y0 = kt_tensor(4, 0, 3, 8, 10);
  CHECK(gf_upsample_nearest2x_fwd(ctx, &x0, &y0, &e) == GF_OK);
  CHECK(gf_upsample_nearest2x_bwd(ctx, &y0, &x0, &e) == GF_OK);
  /* backward */
  CHECK(gf_upsample_nearest2x_bwd(ctx, &y, &x, &e) == GF_OK);
  CHECK(gf_upsample_nearest2x_bwd(ctx, &y9, &x, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_bwd(ctx, &x, &y, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_bwd(ctx, &y, &x3, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_bwd(ctx, NULL, &x, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_bwd(ctx, &y, NULL, &e) == GF_EINVAL);
  CHECK(gf_upsample_nearest2x_bwd(ctx, &ys, &xs, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps") != NULL);
  gf_tensor *all[] = {&x, &y, &y9, &y3, &x3, &x0, &y0};
  for (size_t i = 0; i < 7; i++) gf_tensor_free(all[i]);
}

static void test_pool_errors(gf_ctx *ctx) {
  gf_err e = {0};
  gf_tensor dx = kt_tensor(4, 2, 3, 8, 6), dy = kt_tensor(4, 2, 3, 4, 3);
  gf_tensor dy43 = kt_tensor(4, 2, 3, 4, 4), dx7 = kt_tensor(4, 2, 3, 7, 6);
  gf_tensor dy3 = kt_tensor(3, 6, 4, 3, 1), g1 = kt_tensor(4, 2, 3, 1, 1);
  gf_pool_params p = win(2, 2);
  CHECK(gf_avgpool2d_bwd(ctx, &dy, &p, &dx, &e) == GF_OK);
  CHECK(gf_avgpool2d_bwd(NULL, &dy, &p, &dx, &e) == GF_EINVAL);
  CHECK(gf_avgpool2d_bwd(ctx, NULL, &p, &dx, &e) == GF_EINVAL);
  CHECK(gf_avgpool2d_bwd(ctx, &dy, NULL, &dx, &e) == GF_EINVAL);
  CHECK(gf_avgpool2d_bwd(ctx, &dy, &p, NULL, &e) == GF_EINVAL);
  CHECK(gf_avgpool2d_bwd(ctx, &dy43, &p, &dx, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "expected [2,3,4,3]") != NULL);
  CHECK(gf_avgpool2d_bwd(ctx, &dy3, &p, &dx, &e) == GF_EINVAL);
  CHECK(gf_avgpool2d_bwd(ctx, &dy, &p, &dy3, &e) == GF_EINVAL);
  /* global 8x6 window */
  gf_pool_params pg = win(8, 6);
  CHECK(gf_avgpool2d_bwd(ctx, &g1, &pg, &dx, &e) == GF_OK);
  /* windows that overlap, pad or do not tile: unsupported, dx untouched */
  kt_rng r = {77};
  kt_fill(&dx, &r, -1.0, 1.0, 0.0);
  gf_tensor dx_before = kt_clone(&dx);
  gf_pool_params bad[4] = {{{3, 3}, {2, 2}, {0, 0}, 1},  /* overlapping */
                           {{2, 2}, {1, 1}, {0, 0}, 1},  /* stride < kernel */
                           {{2, 2}, {2, 2}, {1, 1}, 1},  /* padding */
                           {{2, 2}, {3, 2}, {0, 0}, 1}}; /* gaps */
  for (int i = 0; i < 4; i++) {
    int64_t os[4];
    REQUIRE(gf_pool2d_out_shape(&dx, &bad[i], os, &e) == GF_OK);
    gf_tensor dyb = kt_tensor(4, os[0], os[1], os[2], os[3]);
    CHECKF(gf_avgpool2d_bwd(ctx, &dyb, &bad[i], &dx, &e) == GF_EUNSUPPORTED,
           "case %d", i);
    CHECKF(strstr(e.msg, "non-overlapping") != NULL, "case %d: %s", i, e.msg);
    gf_tensor_free(&dyb);
  }
  gf_tensor dy7 = kt_tensor(4, 2, 3, 3, 3); /* floor(7 / 2) = 3 */
  CHECK(gf_avgpool2d_bwd(ctx, &dy7, &p, &dx7, &e) == GF_EUNSUPPORTED);
  CHECK(strstr(e.msg, "7x6") != NULL);
  CHECK(kt_same_bits(&dx, &dx_before));
  /* parameters pooling refuses anyway, and a window larger than dx */
  gf_pool_params p0 = win(0, 2), pc = win(2, 2), pbig = win(16, 2);
  pc.count_include_pad = 2;
  CHECK(gf_avgpool2d_bwd(ctx, &dy, &p0, &dx, &e) == GF_EINVAL);
  CHECK(gf_avgpool2d_bwd(ctx, &dy, &pc, &dx, &e) == GF_EINVAL);
  CHECK(gf_avgpool2d_bwd(ctx, &dy, &pbig, &dx, &e) == GF_EINVAL);
  /* overlap of dx and dy */
  gf_tensor dyo = kt_view_at(&dx, 5, 4, (int64_t[]){2, 3, 4, 3});
  CHECK(gf_avgpool2d_bwd(ctx, &dyo, &p, &dx, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps") != NULL);
  gf_tensor f16 = dy;
  f16.dtype = GF_F16;
  CHECK(gf_avgpool2d_bwd(ctx, &f16, &p, &dx, &e) == GF_EUNSUPPORTED);
  /* empty batch */
  gf_tensor dx0 = kt_tensor(4, 0, 3, 8, 6), dy0 = kt_tensor(4, 0, 3, 4, 3);
  CHECK(gf_avgpool2d_bwd(ctx, &dy0, &p, &dx0, &e) == GF_OK);
  gf_tensor *all[] = {&dx, &dy,        &dy43, &dx7, &dy3,
                      &g1, &dx_before, &dy7,  &dx0, &dy0};
  for (size_t i = 0; i < 10; i++) gf_tensor_free(all[i]);
}

static void test_add_errors(gf_ctx *ctx) {
  gf_err e = {0};
  gf_tensor a = kt_tensor(2, 4, 6, 1, 1), b = kt_tensor(2, 4, 6, 1, 1);
  gf_tensor y = kt_tensor(2, 4, 6, 1, 1), y25 = kt_tensor(1, 25, 1, 1, 1);
  gf_tensor big = kt_tensor(1, 30, 1, 1, 1);
  CHECK(gf_add(ctx, &a, &b, &y, &e) == GF_OK);
  CHECK(gf_add(NULL, &a, &b, &y, &e) == GF_EINVAL);
  CHECK(gf_add(ctx, NULL, &b, &y, &e) == GF_EINVAL);
  CHECK(gf_add(ctx, &a, NULL, &y, &e) == GF_EINVAL);
  CHECK(gf_add(ctx, &a, &b, NULL, &e) == GF_EINVAL);
  CHECK(gf_add(ctx, &a, &b, &y25, &e) == GF_EINVAL);
  CHECK(gf_add(ctx, &y25, &b, &y, &e) == GF_EINVAL);
  CHECK(gf_add(ctx, &a, &y25, &y, &e) == GF_EINVAL);
  gf_tensor f16 = b;
  f16.dtype = GF_F16;
  CHECK(gf_add(ctx, &a, &f16, &y, &e) == GF_EUNSUPPORTED);
  gf_tensor ydev = y;
  ydev.device = GF_DEV_CUDA;
  CHECK(gf_add(ctx, &a, &b, &ydev, &e) == GF_EINVAL);
  /* partial overlaps of y with a or b; a and b may overlap each other */
  gf_tensor v0 = kt_view_at(&big, 0, 1, (int64_t[]){24});
  gf_tensor v1 = kt_view_at(&big, 1, 1, (int64_t[]){24});
  gf_tensor v6 = kt_view_at(&big, 6, 1, (int64_t[]){24});
  CHECK(gf_add(ctx, &v0, &b, &v1, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "partly overlaps a") != NULL);
  CHECK(gf_add(ctx, &a, &v6, &v0, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "partly overlaps b") != NULL);
  CHECK(gf_add(ctx, &v0, &v1, &y, &e) == GF_OK);
  CHECK(gf_add(ctx, &v0, &v1, &v0, &e) == GF_EINVAL); /* y = a, overlaps b */
  CHECK(gf_add(ctx, &v1, &v1, &v1, &e) == GF_OK);
  /* empty */
  gf_tensor z = kt_tensor(1, 0, 1, 1, 1);
  CHECK(gf_add(ctx, &z, &z, &z, &e) == GF_OK);
  gf_tensor *all[] = {&a, &b, &y, &y25, &big, &z};
  for (size_t i = 0; i < 6; i++) gf_tensor_free(all[i]);
}

int main(int argc, char **argv) {
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_RESAMPLE_GOLDEN);
  gf_ctx ctx, ctx4;
  kt_cpu_ctx(&ctx, 1);
  kt_cpu_ctx(&ctx4, 4);
  kt_rng rng = {4242};
  test_upsample_golden(&ctx, &f, "up1");
  test_upsample_golden(&ctx4, &f, "up2");
  test_pool_golden(&ctx, &f, "pool2", 2, 2);
  test_pool_golden(&ctx, &f, "pool23", 2, 3);
  test_pool_golden(&ctx4, &f, "pool7", 7, 7);
  test_pool_golden(&ctx4, &f, "pool4", 4, 4);
  test_add_golden(&ctx, &f);
  test_upsample_large(&ctx, &ctx4, &rng);
  test_pool_large(&ctx, &ctx4, &rng);
  test_add_large(&ctx, &ctx4, &rng);
  test_upsample_errors(&ctx);
  test_pool_errors(&ctx);
  test_add_errors(&ctx);
  gf_ctx_free(&ctx);
  gf_ctx_free(&ctx4);
  gf_st_file_free(&f);
  return check_report();
}
