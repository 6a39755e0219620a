/* test_linear.c - gf_linear_fwd/bwd (CPU backend, oneDNN inner product)
 * against the nested-loop reference on several shapes (batch 1, odd sizes,
 * the mlp's 784 -> 256 layer), with and without bias, gradient accumulation,
 * NULL gradient outputs, and directional finite differences of dx, dw, db
 * on the f32 op. Tolerances: vs reference atol 1e-4 + rtol 1e-4 (inputs in
 * [-1,1], weights in [-0.1,0.1]); finite differences (h = 2^-7) atol 1e-3 +
 * rtol 1e-3. */
#include <stdlib.h>

#include "check.h"
#include "kt_util.h"
#include "ref_ops.h"

#define TOL_A 1e-4
#define TOL_R 1e-4

typedef struct fd_state {
  gf_ctx *ctx;
  gf_tensor *x, *w, *b, *y, *r;
} fd_state;

static double fd_loss(void *u) {
  fd_state *s = u;
  REQUIRE(gf_linear_fwd(s->ctx, s->x, s->w, s->b, s->y, NULL) == GF_OK);
  return kt_dot(s->y->data, s->r->data, (size_t)gf_tensor_numel(s->y));
}

static void run_case(gf_ctx *ctx, int N, int I, int O, int bias,
                     kt_rng *rng) {
  char lbl[64];
  snprintf(lbl, sizeof lbl, "linear N%d %d->%d b%d", N, I, O, bias);
  gf_tensor x = kt_tensor(2, N, I, 1, 1), w = kt_tensor(2, O, I, 1, 1);
  gf_tensor b = kt_tensor(1, O, 1, 1, 1), y = kt_tensor(2, N, O, 1, 1);
  gf_tensor dy = kt_tensor(2, N, O, 1, 1), dx = kt_tensor(2, N, I, 1, 1);
  gf_tensor dw = kt_tensor(2, O, I, 1, 1), db = kt_tensor(1, O, 1, 1, 1);
  kt_fill(&x, rng, -1, 1, 0);
  kt_fill(&w, rng, -0.1, 0.1, 0);
  kt_fill(&b, rng, -0.5, 0.5, 0);
  kt_fill(&dy, rng, -1, 1, 0);
  gf_tensor *bp = bias ? &b : NULL;
  double *xd = kt_dbl(&x), *wd = kt_dbl(&w), *bd = kt_dbl(&b),
         *dyd = kt_dbl(&dy);
  double *yr = kt_dzeros((size_t)N * O), *dxr = kt_dzeros((size_t)N * I),
         *dwr = kt_dzeros((size_t)O * I), *dbr = kt_dzeros((size_t)O);
  ref_linear_fwd(xd, wd, bias ? bd : NULL, yr, N, I, O);
  ref_linear_bwd(xd, wd, dyd, dxr, dwr, dbr, N, I, O);
  gf_err e = {0};
  CHECKF(gf_linear_fwd(ctx, &x, &w, bp, &y, &e) == GF_OK, "%s", e.msg);
  CHECKF(kt_compare(lbl, y.data, yr, (size_t)N * O, TOL_A, TOL_R) == 0,
         "%s fwd", lbl);
  kt_fill(&dw, rng, -9, 9, 0);
  CHECKF(gf_linear_bwd(ctx, &x, &w, &dy, &dx, &dw, &db, GF_OVERWRITE, &e) ==
             GF_OK, "%s", e.msg);
  CHECKF(kt_compare("dx", dx.data, dxr, (size_t)N * I, TOL_A, TOL_R) == 0,
         "%s dx", lbl);
  CHECKF(kt_compare("dw", dw.data, dwr, (size_t)O * I, TOL_A, TOL_R) == 0,
         "%s dw", lbl);
  CHECKF(kt_compare("db", db.data, dbr, (size_t)O, TOL_A, TOL_R) == 0,
         "%s db", lbl);
  /* accumulate */
  CHECK(gf_linear_bwd(ctx, &x, &w, &dy, NULL, &dw, &db, GF_ACCUMULATE, &e) ==
        GF_OK);
  for (int i = 0; i < O * I; i++) dwr[i] *= 2;
  for (int i = 0; i < O; i++) dbr[i] *= 2;
  CHECKF(kt_compare("dw+=", dw.data, dwr, (size_t)O * I, 2 * TOL_A, TOL_R) ==
             0, "%s dw accumulate", lbl);
  CHECKF(kt_compare("db+=", db.data, dbr, (size_t)O, 2 * TOL_A, TOL_R) == 0,
         "%s db accumulate", lbl);
  /* db alone, accumulating onto the doubled value */
  CHECK(gf_linear_bwd(ctx, &x, &w, &dy, NULL, NULL, &db, GF_ACCUMULATE, &e) ==
        GF_OK);
  for (int i = 0; i < O; i++) dbr[i] *= 1.5;
  CHECKF(kt_compare("db only", db.data, dbr, (size_t)O, 3 * TOL_A, TOL_R) ==
             0, "%s db only", lbl);

  /* finite differences on the f32 op */
  CHECK(gf_linear_bwd(ctx, &x, &w, &dy, &dx, &dw, bp ? &db : NULL,
                      GF_OVERWRITE, &e) == GF_OK);
  fd_state s = {ctx, &x, &w, bp, &y, &dy};
  size_t nmax = (size_t)(N * I > O * I ? N * I : O * I);
  float *dir = malloc(nmax * sizeof *dir);
  REQUIRE(dir);
  kt_rademacher(dir, (size_t)N * I, rng);
  double fd = kt_dir_fd(fd_loss, &s, x.data, dir, (size_t)N * I, 0.0078125);
  CHECKF(kt_fd_ok("fd dx", fd, kt_dot(dx.data, dir, (size_t)N * I), 1e-3,
                  1e-3), "%s", lbl);
  kt_rademacher(dir, (size_t)O * I, rng);
  fd = kt_dir_fd(fd_loss, &s, w.data, dir, (size_t)O * I, 0.0078125);
  CHECKF(kt_fd_ok("fd dw", fd, kt_dot(dw.data, dir, (size_t)O * I), 1e-3,
                  1e-3), "%s", lbl);
  if (bp) {
    kt_rademacher(dir, (size_t)O, rng);
    fd = kt_dir_fd(fd_loss, &s, b.data, dir, (size_t)O, 0.0078125);
    CHECKF(kt_fd_ok("fd db", fd, kt_dot(db.data, dir, (size_t)O), 1e-3,
                    1e-3), "%s", lbl);
  }
  free(dir);
  free(xd); free(wd); free(bd); free(dyd); free(yr); free(dxr); free(dwr);
  free(dbr);
  gf_tensor *all[] = {&x, &w, &b, &y, &dy, &dx, &dw, &db};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

static void test_errors(gf_ctx *ctx) {
  gf_tensor x = kt_tensor(2, 3, 5, 1, 1), w = kt_tensor(2, 4, 6, 1, 1);
  gf_tensor y = kt_tensor(2, 3, 4, 1, 1), b = kt_tensor(1, 5, 1, 1, 1);
  gf_err e = {0};
  CHECK(gf_linear_fwd(ctx, &x, &w, NULL, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "features") != NULL);
  gf_tensor_free(&w);
  w = kt_tensor(2, 4, 5, 1, 1);
  CHECK(gf_linear_fwd(ctx, &x, &w, &b, &y, &e) == GF_EINVAL); /* b is [5] */
  CHECK(gf_linear_fwd(ctx, &x, &w, NULL, &y, &e) == GF_OK);
  CHECK(gf_linear_bwd(ctx, &x, &w, &y, NULL, NULL, NULL, GF_OVERWRITE, &e) ==
        GF_OK); /* nothing wanted: a no-op */
  CHECK(gf_linear_bwd(ctx, &x, &w, &y, NULL, NULL, NULL, (gf_accum)7, &e) ==
        GF_EINVAL);
  CHECK(gf_linear_fwd(NULL, &x, &w, NULL, &y, &e) == GF_EINVAL);
  CHECK(gf_linear_fwd(ctx, &x, &w, NULL, NULL, &e) == GF_EINVAL);
  gf_tensor_free(&x); gf_tensor_free(&w); gf_tensor_free(&y);
  gf_tensor_free(&b);
}

int main(void) {
  gf_ctx ctx;
  kt_cpu_ctx(&ctx, 2);
  kt_rng rng = {777};
  run_case(&ctx, 4, 7, 5, 1, &rng);
  run_case(&ctx, 1, 3, 9, 1, &rng);   /* batch 1 */
  run_case(&ctx, 5, 13, 1, 1, &rng);  /* D's last layer: one logit */
  run_case(&ctx, 3, 11, 6, 0, &rng);  /* no bias */
  run_case(&ctx, 8, 784, 256, 1, &rng); /* mlp D first layer */
  test_errors(&ctx);
  gf_ctx_free(&ctx);
  return check_report();
}
