/* test_batchnorm.c - gf_batchnorm_* (CPU backend, oneDNN batch norm) for
 * BatchNorm1d ([N,C]) and BatchNorm2d (NCHW) against the nested-loop
 * reference: training forward (batch mean, biased variance), the running
 * statistics update with momentum and the UNBIASED variance as PyTorch does,
 * inference with running statistics, affine and non-affine, backward through
 * the batch statistics (dx, dgamma, dbeta) with accumulation, and directional
 * finite differences of the f32 backward. Also a hand-computed PyTorch value
 * for the running variance. Tolerances: vs reference atol 1e-4 + rtol 1e-4;
 * running stats 1e-6 relative; finite differences (h = 2^-7) atol 2e-3 +
 * rtol 2e-3 (the normalization is non-linear). */
#include <stdlib.h>

#include "check.h"
#include "kt_util.h"
#include "ref_ops.h"

#define TOL_A 1e-4
#define TOL_R 1e-4

typedef struct fd_state {
  gf_ctx *ctx;
  gf_tensor *x, *g, *b, *y, *r, *sm, *sv;
  gf_bn_params p;
} fd_state;

static double fd_loss(void *u) {
  fd_state *s = u;
  REQUIRE(gf_batchnorm_fwd_train(s->ctx, s->x, s->g, s->b, NULL, NULL, &s->p,
                                 s->y, s->sm, s->sv, NULL) == GF_OK);
  return kt_dot(s->y->data, s->r->data, (size_t)gf_tensor_numel(s->y));
}

static void run_case(gf_ctx *ctx, int N, int C, int H, int W, int affine,
                     kt_rng *rng) {
  char lbl[64];
  int ndim = H ? 4 : 2, S = H ? H * W : 1;
  snprintf(lbl, sizeof lbl, "bn%dd N%d C%d S%d affine%d", H ? 2 : 1, N, C, S,
           affine);
  size_t n = (size_t)N * C * S;
  gf_tensor x = H ? kt_tensor(4, N, C, H, W) : kt_tensor(2, N, C, 1, 1);
  gf_tensor y = H ? kt_tensor(4, N, C, H, W) : kt_tensor(2, N, C, 1, 1);
  gf_tensor dy = H ? kt_tensor(4, N, C, H, W) : kt_tensor(2, N, C, 1, 1);
  gf_tensor dx = H ? kt_tensor(4, N, C, H, W) : kt_tensor(2, N, C, 1, 1);
  gf_tensor g = kt_tensor(1, C, 1, 1, 1), b = kt_tensor(1, C, 1, 1, 1);
  gf_tensor dg = kt_tensor(1, C, 1, 1, 1), dbt = kt_tensor(1, C, 1, 1, 1);
  gf_tensor rm = kt_tensor(1, C, 1, 1, 1), rv = kt_tensor(1, C, 1, 1, 1);
  gf_tensor sm = kt_tensor(1, C, 1, 1, 1), sv = kt_tensor(1, C, 1, 1, 1);
  (void)ndim;
  kt_fill(&x, rng, -2, 3, 0);
  kt_fill(&g, rng, 0.5, 1.5, 0);
  kt_fill(&b, rng, -0.5, 0.5, 0);
  kt_fill(&dy, rng, -1, 1, 0);
  kt_fill(&rm, rng, -0.1, 0.1, 0);
  kt_fill(&rv, rng, 0.9, 1.1, 0);
  gf_tensor *gp = affine ? &g : NULL, *bp = affine ? &b : NULL;
  double *xd = kt_dbl(&x), *gd = kt_dbl(&g), *bd = kt_dbl(&b),
         *dyd = kt_dbl(&dy), *rmd = kt_dbl(&rm), *rvd = kt_dbl(&rv);
  double *yr = kt_dzeros(n), *mr = kt_dzeros((size_t)C),
         *vr = kt_dzeros((size_t)C), *dxr = kt_dzeros(n),
         *dgr = kt_dzeros((size_t)C), *dbr = kt_dzeros((size_t)C);
  gf_bn_params p = {1e-5f, 0.1f};
  ref_bn_fwd_train(xd, affine ? gd : NULL, affine ? bd : NULL, N, C, S, 1e-5,
                   yr, mr, vr);
  ref_bn_update_running(rmd, rvd, mr, vr, C, N * S, 0.1);
  ref_bn_bwd(xd, affine ? gd : NULL, dyd, N, C, S, 1e-5, dxr, dgr, dbr);

  gf_err e = {0};
  CHECKF(gf_batchnorm_fwd_train(ctx, &x, gp, bp, &rm, &rv, &p, &y, &sm, &sv,
                                &e) == GF_OK, "%s: %s", lbl, e.msg);
  CHECKF(kt_compare("y", y.data, yr, n, TOL_A, TOL_R) == 0, "%s fwd", lbl);
  CHECKF(kt_compare("mean", sm.data, mr, (size_t)C, 1e-5, 1e-5) == 0, "%s",
         lbl);
  CHECKF(kt_compare("var", sv.data, vr, (size_t)C, 1e-5, 1e-5) == 0, "%s",
         lbl);
  CHECKF(kt_compare("running_mean", rm.data, rmd, (size_t)C, 1e-6, 1e-5) == 0,
         "%s", lbl);
  CHECKF(kt_compare("running_var", rv.data, rvd, (size_t)C, 1e-6, 1e-5) == 0,
         "%s", lbl);

  /* inference with the (updated) running statistics */
  double *yi = kt_dzeros(n);
  double *rmf = kt_dbl(&rm), *rvf = kt_dbl(&rv);
  ref_bn_fwd_infer(xd, affine ? gd : NULL, affine ? bd : NULL, rmf, rvf, N, C,
                   S, 1e-5, yi);
  CHECKF(gf_batchnorm_fwd_infer(ctx, &x, gp, bp, &rm, &rv, 1e-5f, &y, &e) ==
             GF_OK, "%s: %s", lbl, e.msg);
  CHECKF(kt_compare("y infer", y.data, yi, n, TOL_A, TOL_R) == 0, "%s infer",
         lbl);

  /* backward */
  kt_fill(&dg, rng, -9, 9, 0);
  CHECKF(gf_batchnorm_bwd(ctx, &x, gp, &sm, &sv, 1e-5f, &dy, &dx,
                          affine ? &dg : NULL, affine ? &dbt : NULL,
                          GF_OVERWRITE, &e) == GF_OK, "%s: %s", lbl, e.msg);
  CHECKF(kt_compare("dx", dx.data, dxr, n, TOL_A, TOL_R) == 0, "%s dx", lbl);
  if (affine) {
    CHECKF(kt_compare("dgamma", dg.data, dgr, (size_t)C, TOL_A, TOL_R) == 0,
           "%s dgamma", lbl);
    CHECKF(kt_compare("dbeta", dbt.data, dbr, (size_t)C, TOL_A, TOL_R) == 0,
           "%s dbeta", lbl);
    CHECK(gf_batchnorm_bwd(ctx, &x, gp, &sm, &sv, 1e-5f, &dy, NULL, &dg, &dbt,
                           GF_ACCUMULATE, &e) == GF_OK);
    for (int c = 0; c < C; c++) dgr[c] *= 2, dbr[c] *= 2;
    CHECKF(kt_compare("dgamma+=", dg.data, dgr, (size_t)C, 2 * TOL_A,
                      TOL_R) == 0, "%s dgamma accumulate", lbl);
    CHECKF(kt_compare("dbeta+=", dbt.data, dbr, (size_t)C, 2 * TOL_A,
                      TOL_R) == 0, "%s dbeta accumulate", lbl);
    CHECK(gf_batchnorm_bwd(ctx, &x, gp, &sm, &sv, 1e-5f, &dy, &dx, &dg, &dbt,
                           GF_OVERWRITE, &e) == GF_OK);
  }

  /* finite differences on the f32 op (batch statistics recomputed) */
  fd_state s = {ctx, &x, gp, bp, &y, &dy, &sm, &sv, p};
  float *dir = malloc(n * sizeof *dir);
  REQUIRE(dir);
  kt_rademacher(dir, n, rng);
  double fd = kt_dir_fd(fd_loss, &s, x.data, dir, n, 0.0078125);
  CHECKF(kt_fd_ok("fd dx", fd, kt_dot(dx.data, dir, n), 2e-3, 2e-3), "%s",
         lbl);
  if (affine) {
    kt_rademacher(dir, (size_t)C, rng);
    fd = kt_dir_fd(fd_loss, &s, g.data, dir, (size_t)C, 0.0078125);
    CHECKF(kt_fd_ok("fd dgamma", fd, kt_dot(dg.data, dir, (size_t)C), 2e-3,
                    2e-3), "%s", lbl);
    kt_rademacher(dir, (size_t)C, rng);
    fd = kt_dir_fd(fd_loss, &s, b.data, dir, (size_t)C, 0.0078125);
    CHECKF(kt_fd_ok("fd dbeta", fd, kt_dot(dbt.data, dir, (size_t)C), 2e-3,
                    2e-3), "%s", lbl);
  }
  free(dir);
  double *all_d[] = {xd, gd, bd, dyd, rmd, rvd, yr, mr, vr, dxr, dgr, dbr,
                     yi, rmf, rvf};
  for (size_t i = 0; i < sizeof all_d / sizeof *all_d; i++) free(all_d[i]);
  gf_tensor *all[] = {&x, &y, &dy, &dx, &g, &b, &dg, &dbt, &rm, &rv, &sm, &sv};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

/* PyTorch, by hand: BatchNorm1d(1, momentum=0.1) on x = [1, 2, 3, 4] from
 * running stats (0, 1): mean 2.5, biased var 1.25, unbiased 5/3;
 * running_mean 0.25, running_var 0.9 + 0.1 * 5/3 = 1.0666667. */
static void test_running_by_hand(gf_ctx *ctx) {
  gf_tensor x = kt_tensor(2, 4, 1, 1, 1), y = kt_tensor(2, 4, 1, 1, 1);
  gf_tensor rm = kt_tensor(1, 1, 1, 1, 1), rv = kt_tensor(1, 1, 1, 1, 1);
  gf_tensor sm = kt_tensor(1, 1, 1, 1, 1), sv = kt_tensor(1, 1, 1, 1, 1);
  float *xp = x.data;
  for (int i = 0; i < 4; i++) xp[i] = (float)(i + 1);
  ((float *)rv.data)[0] = 1.0f;
  gf_bn_params p = {1e-5f, 0.1f};
  CHECK(gf_batchnorm_fwd_train(ctx, &x, NULL, NULL, &rm, &rv, &p, &y, &sm,
                               &sv, NULL) == GF_OK);
  CHECK_NEAR(((float *)sm.data)[0], 2.5, 1e-6);
  CHECK_NEAR(((float *)sv.data)[0], 1.25, 1e-6);
  CHECK_NEAR(((float *)rm.data)[0], 0.25, 1e-7);
  CHECK_NEAR(((float *)rv.data)[0], 0.9 + 0.1 * 5.0 / 3.0, 1e-6);
  CHECK_NEAR(((float *)y.data)[0], -1.5 / sqrt(1.25 + 1e-5), 1e-5);
  /* one value per channel is refused, as PyTorch refuses it */
  gf_tensor x1 = kt_tensor(2, 1, 1, 1, 1), y1 = kt_tensor(2, 1, 1, 1, 1);
  gf_err e = {0};
  CHECK(gf_batchnorm_fwd_train(ctx, &x1, NULL, NULL, &rm, &rv, &p, &y1, &sm,
                               &sv, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "more than 1 value") != NULL);
  gf_tensor *all[] = {&x, &y, &rm, &rv, &sm, &sv, &x1, &y1};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

int main(void) {
  gf_ctx ctx;
  kt_cpu_ctx(&ctx, 2);
  kt_rng rng = {4242};
  run_case(&ctx, 8, 5, 0, 0, 1, &rng);   /* BatchNorm1d */
  run_case(&ctx, 3, 7, 0, 0, 0, &rng);   /* 1d, not affine, odd */
  run_case(&ctx, 2, 3, 5, 7, 1, &rng);   /* BatchNorm2d, odd spatial */
  run_case(&ctx, 1, 4, 3, 3, 1, &rng);   /* batch 1 */
  run_case(&ctx, 4, 16, 4, 4, 0, &rng);  /* 2d, not affine */
  test_running_by_hand(&ctx);
  gf_ctx_free(&ctx);
  return check_report();
}
