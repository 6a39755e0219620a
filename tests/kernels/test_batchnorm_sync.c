/* test_batchnorm_sync.c - gf_batchnorm_bwd_dx, the backward of batch norm
 * whose statistics span ranks (sync BN), on the CPU backend, for
 * BatchNorm1d ([N,C]) and BatchNorm2d (NCHW), affine and not:
 *  (a) one rank: with the sums of gf_batchnorm_bwd(dx = NULL) and
 *      count = N*H*W it gives gf_batchnorm_bwd's dx; dx may be dy;
 *  (b) two simulated ranks: the batch split in two (unequal) parts, local
 *      statistics from gf_batchnorm_fwd_train, combined with Chan's formula
 *      in double, each part normalized with gf_batchnorm_fwd_infer (global
 *      statistics), local sums from gf_batchnorm_bwd(dx = NULL) with the
 *      global statistics, added as an all-reduce would, then
 *      gf_batchnorm_bwd_dx per part: the concatenated y and dx equal the
 *      fused full-batch op's, and the summed sums its dgamma / dbeta;
 *  (c) argument validation (NULLs, shapes, count < 1, partial overlap).
 * Tolerances (the worst errors are printed per case; seen: one rank
 * <= 1.2e-7, two ranks <= 2.4e-7, sums <= 3.8e-6):
 *  - one rank vs the fused dx: atol 1e-6 + rtol 1e-5. Same statistics and
 *    the very same sums (one oneDNN primitive), so only the element-wise
 *    rounding differs (oneDNN folds the constants in another order); the
 *    terms of dx are O(1) here (|dy| <= 1, rstd ~ 0.7, gamma <= 1.5) and a
 *    few f32 ulps of them is ~2e-7; atol covers the elements where dx
 *    cancels to ~0. dgamma/dbeta from dx = NULL vs with dx: atol 1e-6 +
 *    rtol 1e-6 (the same primitive; bit-identical in practice);
 *  - two ranks vs the fused op (y and dx): atol 4e-6 + rtol 1e-5. The
 *    global mean and var are combined in double from f32 per-part
 *    statistics and rounded once, where oneDNN reduces the whole batch in
 *    f32: they differ by a few ulps (~1e-7 relative), which moves xhat and
 *    rstd by as much, i.e. dx by a few ulps of its O(1) terms; the sums
 *    (added in another order) enter divided by count;
 *  - summed dgamma/dbeta vs the fused op's: atol 5e-5 + rtol 1e-5, sums of
 *    up to 1024 O(1) f32 terms in another order (worst case ~ m ulp);
 *  - vs the double reference (ref_bn_bwd): atol 1e-4 + rtol 1e-4, as in
 *    test_batchnorm.c.
 * Proof that the checks fire (STYLE habit 4): two cases also run the op
 * with the sign of the xhat term flipped (sum_dy_xhat negated) and expect
 * misses; flipping a sign inside gf_cpu_bn_bwd_dx instead fails 24 checks
 * (tried once by hand when the op was added). */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_util.h"
#include "ref_ops.h"

#define EPS 1e-5f

#define TOL1_A 1e-6 /* one rank vs fused */
#define TOL1_R 1e-5
#define TOL2_A 4e-6 /* two ranks vs fused */
#define TOL2_R 1e-5
#define TOLS_A 5e-5 /* summed dgamma / dbeta vs fused */
#define TOLS_R 1e-5
#define TOLR_A 1e-4 /* vs the double reference */
#define TOLR_R 1e-4

/* A zeroed [n,C] or [n,C,H,W] tensor (H == 0: BatchNorm1d). */
static gf_tensor bn_tensor(int64_t n, int64_t C, int64_t H, int64_t W) {
  return H ? kt_tensor(4, n, C, H, W) : kt_tensor(2, n, C, 1, 1);
}

/* A view of rows [n0, n0 + n) of full (contiguous, batch-major). */
static gf_tensor rows(const gf_tensor *full, int64_t n0, int64_t n) {
  gf_tensor v;
  int64_t shape[4];
  memcpy(shape, full->shape, sizeof shape);
  shape[0] = n;
  size_t row = (size_t)(gf_tensor_numel(full) / full->shape[0]);
  REQUIRE(gf_tensor_view(&v, (float *)full->data + (size_t)n0 * row, GF_F32,
                         GF_DEV_CPU, full->ndim, shape, NULL) == GF_OK);
  return v;
}

/* Largest |got - want| over n, for the printed error figures. */
static double worst(const float *got, const float *want, size_t n) {
  double w = 0.0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)got[i] - (double)want[i]);
    if (!(d <= w)) w = d; /* NaN sticks */
  }
  return w;
}

/* N0 rows go to rank 0, N - N0 to rank 1; prove: also check that a dx
 * broken on purpose fails the comparison. */
static void run_case(gf_ctx *ctx, int64_t N, int64_t N0, int64_t C, int64_t H,
                     int64_t W, int affine, int prove, kt_rng *rng) {
  char lbl[80];
  int64_t S = H ? H * W : 1, m = N * S;
  snprintf(lbl, sizeof lbl, "bn%dd N%lld(%lld+%lld) C%lld S%lld affine%d",
           H ? 2 : 1, (long long)N, (long long)N0, (long long)(N - N0),
           (long long)C, (long long)S, affine);
  size_t n = (size_t)(N * C * S), cn = (size_t)C;
  gf_tensor x = bn_tensor(N, C, H, W), dy = bn_tensor(N, C, H, W);
  gf_tensor y = bn_tensor(N, C, H, W), dx = bn_tensor(N, C, H, W);
  gf_tensor y2 = bn_tensor(N, C, H, W), dx1 = bn_tensor(N, C, H, W);
  gf_tensor dx2 = bn_tensor(N, C, H, W), al = bn_tensor(N, C, H, W);
  gf_tensor g = kt_tensor(1, C, 1, 1, 1), b = kt_tensor(1, C, 1, 1, 1);
  gf_tensor ones = kt_tensor(1, C, 1, 1, 1);
  gf_tensor sm = kt_tensor(1, C, 1, 1, 1), sv = kt_tensor(1, C, 1, 1, 1);
  gf_tensor dg = kt_tensor(1, C, 1, 1, 1), db = kt_tensor(1, C, 1, 1, 1);
  gf_tensor sdx = kt_tensor(1, C, 1, 1, 1), sdy = kt_tensor(1, C, 1, 1, 1);
  gf_tensor gm = kt_tensor(1, C, 1, 1, 1), gv = kt_tensor(1, C, 1, 1, 1);
  gf_tensor lm[2], lv[2], ldx[2], ldy[2];
  for (int r = 0; r < 2; r++) {
    lm[r] = kt_tensor(1, C, 1, 1, 1);
    lv[r] = kt_tensor(1, C, 1, 1, 1);
    ldx[r] = kt_tensor(1, C, 1, 1, 1);
    ldy[r] = kt_tensor(1, C, 1, 1, 1);
  }
  kt_fill(&x, rng, -2, 3, 0);
  kt_fill(&dy, rng, -1, 1, 0);
  kt_fill(&g, rng, 0.5, 1.5, 0);
  kt_fill(&b, rng, -0.5, 0.5, 0);
  for (size_t c = 0; c < cn; c++) ((float *)ones.data)[c] = 1.0f;
  gf_tensor *gp = affine ? &g : NULL, *bp = affine ? &b : NULL;
  /* the sums do not depend on gamma: affine=False passes ones */
  gf_tensor *gs = affine ? &g : &ones;
  gf_bn_params p = {EPS, 0.1f};
  gf_err e = {0};

  /* the double reference and the fused full-batch op */
  double *xd = kt_dbl(&x), *dyd = kt_dbl(&dy), *gd = kt_dbl(&g);
  double *dxr = kt_dzeros(n), *dgr = kt_dzeros(cn), *dbr = kt_dzeros(cn);
  ref_bn_bwd(xd, affine ? gd : NULL, dyd, (int)N, (int)C, (int)S, EPS, dxr,
             dgr, dbr);
  REQUIRE(gf_batchnorm_fwd_train(ctx, &x, gp, bp, NULL, NULL, &p, &y, &sm,
                                 &sv, &e) == GF_OK);
  REQUIRE(gf_batchnorm_bwd(ctx, &x, gs, &sm, &sv, EPS, &dy, &dx, &dg, &db,
                           GF_OVERWRITE, &e) == GF_OK);
  if (!affine) /* the fused dx of affine=False itself, gamma NULL */
    REQUIRE(gf_batchnorm_bwd(ctx, &x, NULL, &sm, &sv, EPS, &dy, &dx, NULL,
                             NULL, GF_OVERWRITE, &e) == GF_OK);

  /* (a) one rank: sums from dx = NULL, then dx from them */
  CHECKF(gf_batchnorm_bwd(ctx, &x, gs, &sm, &sv, EPS, &dy, NULL, &sdx, &sdy,
                          GF_OVERWRITE, &e) == GF_OK, "%s: %s", lbl, e.msg);
  double *dgd = kt_dbl(&dg), *dbd = kt_dbl(&db);
  CHECKF(kt_compare("sum_dy_xhat (dx NULL)", sdx.data, dgd, cn, 1e-6,
                    1e-6) == 0, "%s", lbl);
  CHECKF(kt_compare("sum_dy (dx NULL)", sdy.data, dbd, cn, 1e-6, 1e-6) == 0,
         "%s", lbl);
  CHECKF(gf_batchnorm_bwd_dx(ctx, &x, gp, &sm, &sv, EPS, &dy, &sdy, &sdx,
                             (double)m, &dx1, &e) == GF_OK, "%s: %s", lbl,
         e.msg);
  double *dxd = kt_dbl(&dx);
  CHECKF(kt_compare("dx 1 rank", dx1.data, dxd, n, TOL1_A, TOL1_R) == 0,
         "%s: one rank vs fused", lbl);
  CHECKF(kt_compare("dx 1 rank vs ref", dx1.data, dxr, n, TOLR_A, TOLR_R) ==
             0, "%s", lbl);
  double w1 = worst(dx1.data, dx.data, n);
  if (prove) { /* the checks fire: the xhat term's sign flipped on purpose */
    for (size_t c = 0; c < cn; c++) ((float *)al.data)[c] = 0.0f;
    gf_tensor neg = kt_tensor(1, C, 1, 1, 1);
    for (size_t c = 0; c < cn; c++)
      ((float *)neg.data)[c] = -((float *)sdx.data)[c];
    REQUIRE(gf_batchnorm_bwd_dx(ctx, &x, gp, &sm, &sv, EPS, &dy, &sdy, &neg,
                                (double)m, &al, &e) == GF_OK);
    CHECKF(kt_compare("dx, sign flipped on purpose (misses expected)",
                      al.data, dxd, n, TOL2_A, TOL2_R) > 0,
           "%s: a broken dx passed the check", lbl);
    gf_tensor_free(&neg);
  }
  /* dx in place of dy: the same bits */
  memcpy(al.data, dy.data, gf_tensor_nbytes(&dy));
  CHECKF(gf_batchnorm_bwd_dx(ctx, &x, gp, &sm, &sv, EPS, &al, &sdy, &sdx,
                             (double)m, &al, &e) == GF_OK, "%s: %s", lbl,
         e.msg);
  CHECKF(memcmp(al.data, dx1.data, gf_tensor_nbytes(&al)) == 0,
         "%s: dx aliasing dy differs", lbl);

  /* (b) two ranks: rows [0, N0) and [N0, N) */
  int64_t nr[2] = {N0, N - N0}, off[2] = {0, N0};
  gf_tensor xr[2], dyr[2], yr[2], dxr2[2];
  for (int r = 0; r < 2; r++) {
    xr[r] = rows(&x, off[r], nr[r]);
    dyr[r] = rows(&dy, off[r], nr[r]);
    yr[r] = rows(&y2, off[r], nr[r]);
    dxr2[r] = rows(&dx2, off[r], nr[r]);
    CHECKF(gf_batchnorm_fwd_train(ctx, &xr[r], gp, bp, NULL, NULL, &p, &yr[r],
                                  &lm[r], &lv[r], &e) == GF_OK, "%s: %s", lbl,
           e.msg);
  }
  /* Chan: mean = sum n_r mean_r / n;
   * M2 = sum n_r var_r + sum n_r (mean_r - mean)^2; var = M2 / n */
  for (size_t c = 0; c < cn; c++) {
    double mu = 0.0, m2 = 0.0;
    for (int r = 0; r < 2; r++)
      mu += (double)(nr[r] * S) * ((float *)lm[r].data)[c];
    mu /= (double)m;
    for (int r = 0; r < 2; r++) {
      double d = ((float *)lm[r].data)[c] - mu, nn = (double)(nr[r] * S);
      m2 += nn * ((float *)lv[r].data)[c] + nn * d * d;
    }
    ((float *)gm.data)[c] = (float)mu;
    ((float *)gv.data)[c] = (float)(m2 / (double)m);
  }
  for (int r = 0; r < 2; r++) {
    CHECKF(gf_batchnorm_fwd_infer(ctx, &xr[r], gp, bp, &gm, &gv, EPS, &yr[r],
                                  &e) == GF_OK, "%s: %s", lbl, e.msg);
    CHECKF(gf_batchnorm_bwd(ctx, &xr[r], gs, &gm, &gv, EPS, &dyr[r], NULL,
                            &ldx[r], &ldy[r], GF_OVERWRITE, &e) == GF_OK,
           "%s: %s", lbl, e.msg);
  }
  for (size_t c = 0; c < cn; c++) { /* the all-reduce */
    ((float *)sdx.data)[c] = ((float *)ldx[0].data)[c] +
                             ((float *)ldx[1].data)[c];
    ((float *)sdy.data)[c] = ((float *)ldy[0].data)[c] +
                             ((float *)ldy[1].data)[c];
  }
  for (int r = 0; r < 2; r++)
    CHECKF(gf_batchnorm_bwd_dx(ctx, &xr[r], gp, &gm, &gv, EPS, &dyr[r], &sdy,
                               &sdx, (double)m, &dxr2[r], &e) == GF_OK,
           "%s: %s", lbl, e.msg);
  double *yd = kt_dbl(&y);
  CHECKF(kt_compare("y 2 ranks", y2.data, yd, n, TOL2_A, TOL2_R) == 0,
         "%s: forward, two ranks vs fused", lbl);
  CHECKF(kt_compare("dx 2 ranks", dx2.data, dxd, n, TOL2_A, TOL2_R) == 0,
         "%s: two ranks vs fused", lbl);
  CHECKF(kt_compare("dx 2 ranks vs ref", dx2.data, dxr, n, TOLR_A, TOLR_R) ==
             0, "%s", lbl);
  CHECKF(kt_compare("dgamma 2 ranks", sdx.data, dgd, cn, TOLS_A, TOLS_R) == 0,
         "%s: summed sum_dy_xhat vs fused dgamma", lbl);
  CHECKF(kt_compare("dbeta 2 ranks", sdy.data, dbd, cn, TOLS_A, TOLS_R) == 0,
         "%s: summed sum_dy vs fused dbeta", lbl);
  fprintf(stderr, "%s: worst |dx - fused| one rank %.3g, two ranks %.3g; "
          "|dgamma| %.3g, |dbeta| %.3g\n", lbl, w1,
          worst(dx2.data, dx.data, n), worst(sdx.data, dg.data, cn),
          worst(sdy.data, db.data, cn));

  double *all_d[] = {xd, dyd, gd, dxr, dgr, dbr, dgd, dbd, dxd, yd};
  for (size_t i = 0; i < sizeof all_d / sizeof *all_d; i++) free(all_d[i]);
  gf_tensor *all[] = {&x,   &dy,  &y,   &dx, &y2, &dx1, &dx2, &al, &g,
                      &b,   &ones, &sm, &sv, &dg, &db,  &sdx, &sdy, &gm,
                      &gv};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
  for (int r = 0; r < 2; r++) {
    gf_tensor *t[] = {&lm[r], &lv[r], &ldx[r], &ldy[r],
                      &xr[r], &dyr[r], &yr[r], &dxr2[r]};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) gf_tensor_free(t[i]);
  }
}

/* (c) the checks in ops.c, each with the message that names the culprit. */
static void test_validation(gf_ctx *ctx) {
  gf_tensor x = kt_tensor(4, 2, 3, 2, 2), dy = kt_tensor(4, 2, 3, 2, 2);
  gf_tensor dx = kt_tensor(4, 2, 3, 2, 2), bad = kt_tensor(4, 2, 4, 2, 2);
  gf_tensor g = kt_tensor(1, 3, 1, 1, 1), mu = kt_tensor(1, 3, 1, 1, 1);
  gf_tensor va = kt_tensor(1, 3, 1, 1, 1), s1 = kt_tensor(1, 3, 1, 1, 1);
  gf_tensor s2 = kt_tensor(1, 3, 1, 1, 1), c4 = kt_tensor(1, 4, 1, 1, 1);
  gf_tensor x3 = kt_tensor(3, 2, 3, 4, 1), big = kt_tensor(1, 25, 1, 1, 1);
  gf_err e = {0};
  double cnt = 8.0;
#define BWD_DX(X, G, M, V, EP, DY, S1, S2, CNT, DX)                          \
  gf_batchnorm_bwd_dx(ctx, X, G, M, V, EP, DY, S1, S2, CNT, DX, &e)
  /* the valid call, and gamma NULL */
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &s1, &s2, cnt, &dx) == GF_OK);
  CHECK(BWD_DX(&x, NULL, &mu, &va, EPS, &dy, &s1, &s2, cnt, &dx) == GF_OK);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &s1, &s2, 1.0, &dx) == GF_OK);
  /* dx may be dy or x */
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &s1, &s2, cnt, &dy) == GF_OK);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &s1, &s2, cnt, &x) == GF_OK);
  /* NULLs */
  CHECK(BWD_DX(NULL, &g, &mu, &va, EPS, &dy, &s1, &s2, cnt, &dx) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "x is NULL") != NULL);
  CHECK(BWD_DX(&x, &g, NULL, &va, EPS, &dy, &s1, &s2, cnt, &dx) == GF_EINVAL);
  CHECK(strstr(e.msg, "mean and var") != NULL);
  CHECK(BWD_DX(&x, &g, &mu, NULL, EPS, &dy, &s1, &s2, cnt, &dx) == GF_EINVAL);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, NULL, &s1, &s2, cnt, &dx) == GF_EINVAL);
  CHECK(strstr(e.msg, "dy is NULL") != NULL);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, NULL, &s2, cnt, &dx) == GF_EINVAL);
  CHECK(strstr(e.msg, "sum_dy and sum_dy_xhat") != NULL);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &s1, NULL, cnt, &dx) == GF_EINVAL);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &s1, &s2, cnt, NULL) == GF_EINVAL);
  CHECK(strstr(e.msg, "dx is NULL") != NULL);
  /* shapes */
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &bad, &s1, &s2, cnt, &dx) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "dy has shape") != NULL);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &s1, &s2, cnt, &bad) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "dx has shape") != NULL);
  CHECK(BWD_DX(&x, &c4, &mu, &va, EPS, &dy, &s1, &s2, cnt, &dx) == GF_EINVAL);
  CHECK(strstr(e.msg, "gamma has shape") != NULL);
  CHECK(BWD_DX(&x, &g, &mu, &c4, EPS, &dy, &s1, &s2, cnt, &dx) == GF_EINVAL);
  CHECK(strstr(e.msg, "var has shape") != NULL);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &c4, &s2, cnt, &dx) == GF_EINVAL);
  CHECK(strstr(e.msg, "sum_dy has shape") != NULL);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &s1, &c4, cnt, &dx) == GF_EINVAL);
  CHECK(strstr(e.msg, "sum_dy_xhat has shape") != NULL);
  CHECK(BWD_DX(&x3, &g, &mu, &va, EPS, &x3, &s1, &s2, cnt, &x3) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "[N,C] or [N,C,H,W]") != NULL);
  /* count and eps */
  const double counts[] = {0.0, 0.5, -8.0, NAN, INFINITY};
  for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
    CHECKF(BWD_DX(&x, &g, &mu, &va, EPS, &dy, &s1, &s2, counts[i], &dx) ==
               GF_EINVAL, "count %g", counts[i]);
    CHECK(strstr(e.msg, "count must be >= 1") != NULL);
  }
  CHECK(BWD_DX(&x, &g, &mu, &va, 0.0f, &dy, &s1, &s2, cnt, &dx) == GF_EINVAL);
  CHECK(strstr(e.msg, "eps") != NULL);
  /* dx overlapping dy by part only */
  gf_tensor sh;
  int64_t shape[4] = {2, 3, 2, 2};
  REQUIRE(gf_tensor_view(&sh, (float *)big.data + 1, GF_F32, GF_DEV_CPU, 4,
                         shape, NULL) == GF_OK);
  gf_tensor dyv;
  REQUIRE(gf_tensor_view(&dyv, big.data, GF_F32, GF_DEV_CPU, 4, shape,
                         NULL) == GF_OK);
  CHECK(BWD_DX(&x, &g, &mu, &va, EPS, &dyv, &s1, &s2, cnt, &sh) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps dy") != NULL);
  CHECK(BWD_DX(&dyv, &g, &mu, &va, EPS, &dy, &s1, &s2, cnt, &sh) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps x") != NULL);
#undef BWD_DX
  /* gf_batchnorm_bwd with dx = NULL and nothing else wanted: a no-op */
  CHECK(gf_batchnorm_bwd(ctx, &x, &g, &mu, &va, EPS, &dy, NULL, NULL, NULL,
                         GF_OVERWRITE, &e) == GF_OK);
  gf_tensor *all[] = {&x, &dy, &dx, &bad, &g, &mu, &va, &s1, &s2, &c4, &x3,
                      &big, &sh, &dyv};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

int main(void) {
  gf_ctx ctx;
  kt_cpu_ctx(&ctx, 2);
  kt_rng rng = {777};
  run_case(&ctx, 8, 4, 5, 0, 0, 1, 1, &rng);    /* BatchNorm1d */
  run_case(&ctx, 7, 3, 3, 0, 0, 0, 0, &rng);    /* 1d, not affine, 3 + 4 */
  run_case(&ctx, 64, 21, 16, 0, 0, 1, 0, &rng); /* 1d, uneven split */
  run_case(&ctx, 4, 2, 6, 5, 3, 1, 1, &rng);    /* BatchNorm2d, odd spatial */
  run_case(&ctx, 3, 1, 4, 4, 4, 0, 0, &rng);    /* 2d, not affine, 1 + 2 */
  run_case(&ctx, 16, 8, 8, 8, 8, 1, 0, &rng);   /* 2d, m = 1024 */
  test_validation(&ctx);
  gf_ctx_free(&ctx);
  return check_report();
}
