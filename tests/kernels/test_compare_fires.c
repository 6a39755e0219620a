/* test_compare_fires.c - proves that the checks of the other tests can fail
 * (STYLE.md habit 4): a reference broken on purpose (conv with the wrong
 * padding; a one-element perturbation of 1e-3; a NaN) must make kt_compare
 * report misses against the CPU op, a gradient scaled by 1.01 must fail the
 * finite-difference check, and kt_compare must pass the unbroken case (so
 * the misses come from the breakage, not from a checker that always fails). */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "kt_util.h"
#include "ref_ops.h"

typedef struct fd_state {
  gf_ctx *ctx;
  gf_tensor *x, *w, *y, *r;
  gf_conv_params p;
} fd_state;

static double loss(void *u) {
  fd_state *s = u;
  REQUIRE(gf_conv2d_fwd(s->ctx, s->x, s->w, NULL, &s->p, s->y, NULL) == GF_OK);
  return kt_dot(s->y->data, s->r->data, (size_t)gf_tensor_numel(s->y));
}

int main(void) {
  gf_ctx ctx;
  kt_cpu_ctx(&ctx, 2);
  kt_rng rng = {5};
  ref_conv g = {2, 3, 6, 6, 4, 3, 3, 1, 1, 1, 1, 0, 0, 0, 0};
  ref_conv_out(&g);
  gf_tensor x = kt_tensor(4, 2, 3, 6, 6), w = kt_tensor(4, 4, 3, 3, 3);
  gf_tensor y = kt_tensor(4, 2, 4, 6, 6), r = kt_tensor(4, 2, 4, 6, 6);
  gf_tensor dw = kt_tensor(4, 4, 3, 3, 3);
  kt_fill(&x, &rng, -1, 1, 0);
  kt_fill(&w, &rng, -0.5, 0.5, 0);
  kt_fill(&r, &rng, -1, 1, 0);
  gf_conv_params p = {{1, 1}, {1, 1}, {0, 0}};
  REQUIRE(gf_conv2d_fwd(&ctx, &x, &w, NULL, &p, &y, NULL) == GF_OK);
  size_t ny = (size_t)gf_tensor_numel(&y);
  double *xd = kt_dbl(&x), *wd = kt_dbl(&w), *yr = kt_dzeros(ny);
  ref_conv2d_fwd(&g, xd, wd, NULL, yr);
  CHECK(kt_compare("intact", y.data, yr, ny, 1e-4, 1e-4) == 0);

  fprintf(stderr, "--- the misses printed below are expected ---\n");
  /* 1. a reference with the wrong padding: most outputs differ */
  ref_conv gb = g;
  gb.ph = 0; /* geometry of the output kept, padding wrong */
  double *yb = kt_dzeros(ny);
  ref_conv2d_fwd(&gb, xd, wd, NULL, yb);
  CHECK(kt_compare("broken padding", y.data, yb, ny, 1e-4, 1e-4) > ny / 10);
  /* 2. one element off by 1e-3: exactly one miss */
  memcpy(yb, yr, ny * sizeof *yb);
  yb[17] += 1e-3;
  CHECK_INT_EQ(kt_compare("one element", y.data, yb, ny, 1e-4, 1e-4), 1);
  /* 3. a NaN in the reference is a miss, not a silent pass */
  yb[17] = NAN;
  CHECK_INT_EQ(kt_compare("nan", y.data, yb, ny, 1e-4, 1e-4), 1);
  /* 4. a gradient 1% off fails the finite-difference check */
  REQUIRE(gf_conv2d_bwd(&ctx, &x, &w, &r, &p, NULL, &dw, NULL, GF_OVERWRITE,
                        NULL) == GF_OK);
  size_t nw = (size_t)gf_tensor_numel(&w);
  float *dir = malloc(nw * sizeof *dir);
  REQUIRE(dir);
  kt_rademacher(dir, nw, &rng);
  fd_state s = {&ctx, &x, &w, &y, &r, p};
  double fd = kt_dir_fd(loss, &s, w.data, dir, nw, 0.0078125);
  double an = kt_dot(dw.data, dir, nw);
  CHECK(kt_fd_ok("intact gradient", fd, an, 1e-3, 1e-3));
  CHECK(!kt_fd_ok("gradient x 1.01", fd, an * 1.01, 1e-3, 1e-3));
  fprintf(stderr, "--- end of expected misses ---\n");
  free(dir); free(xd); free(wd); free(yr); free(yb);
  gf_tensor *all[] = {&x, &w, &y, &r, &dw};
  for (size_t i = 0; i < 5; i++) gf_tensor_free(all[i]);
  gf_ctx_free(&ctx);
  return check_report();
}
