/* test_ada_ops.c - the CPU ADA resampling ops (gf_pad_reflect_*,
 * gf_affine_sample_*, gf_color4_*; ops.h, "adaptive discriminator
 * augmentation") against PyTorch's numbers (golden/ada_ops.safetensors,
 * written by golden/make_ada_ops_golden.py; no Python needed here), at 1
 * and 4 threads, the adjoint identity, and the argument checks.
 *
 * Tolerances against PyTorch (each run prints the worst difference):
 * reflect padding forward and backward bit-exact (PyTorch's CPU backward
 * sums in dy's row-major order, as ops.h does); the resampling within
 * 2^-18 max|t| (PyTorch rounds the grid to f32 and forms the weights in
 * another order: about W 2^-24 of a coordinate, times the image's slope);
 * the colour matrix within 4 ulp of max|t| (bmm's summation order). Each
 * comparison is shown to fire: the golden with one element moved by
 * 2^-10 max|t| must miss. Cases above the threading threshold give the
 * same bits at 1 and 4 threads; <A x, g> = <x, A^T g> holds in double
 * within the rounding of the two results for the resampling (large case).
 * Argument 1: the golden file (default GF_ADA_OPS_GOLDEN from CMake). */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_ada.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_ADA_OPS_GOLDEN
#define GF_ADA_OPS_GOLDEN "ada_ops.safetensors"
#endif

static gf_tensor moved(const gf_tensor *t, size_t i, float s) {
  gf_tensor w = kt_clone(t);
  float *p = w.data, mx = 0.0f;
  for (int64_t k = 0; k < gf_tensor_numel(&w); k++) mx = fmaxf(mx, fabsf(p[k]));
  p[i] += s * 0x1p-10f * mx;
  return w;
}

/* got against want within srel max|t| (srel < 0: bit-exact), shown to
 * fire with one element moved. */
static void vs_torch(const char *what, const gf_tensor *got,
                     const gf_tensor *want, double srel) {
  double atol = srel < 0 ? -1.0 : 0.0, s = srel < 0 ? 0.0 : srel;
  KT_VS_TORCH(what, got, want, atol, 0.0, s, NULL);
  size_t n = (size_t)gf_tensor_numel(want);
  gf_tensor w = moved(want, n / 2, 1.0f);
  CHECKF(kt_misses(what, got, &w, atol, 0.0, s, NULL, false) == 1,
         "%s: a moved element went unnoticed", what);
  gf_tensor_free(&w);
}

static void test_golden(gf_ctx *c1, gf_ctx *c4, const gf_st_file *f,
                        const char *name, int op, double srel_y,
                        double srel_dx) {
  gf_tensor x = kt_gold_at(f, name, "x", 0);
  gf_tensor y = kt_gold_at(f, name, "y", 0);
  gf_tensor g = kt_gold_at(f, name, "g", 0);
  gf_tensor dx = kt_gold_at(f, name, "dx", 0);
  gf_tensor m = {0}, padt = {0};
  const int *pad = NULL;
  if (op == OP_REFLECT) {
    padt = kt_gold_at(f, name, "pad", KT_GOLD_I32);
    pad = padt.data;
  } else {
    m = kt_gold_at(f, name, "m", 0);
  }
  gf_tensor gy = kt_filled_like(&y, 12345.0f), gy4 = kt_filled_like(&y, 7.0f);
  gf_tensor gdx = kt_filled_like(&dx, 12345.0f);
  gf_tensor gdx4 = kt_filled_like(&dx, 7.0f);
  gf_err e = {0};
  CHECKF(kt_ada_run(c1, op, 0, pad, &m, &x, &gy, &e) == GF_OK, "%s", e.msg);
  CHECKF(kt_ada_run(c4, op, 0, pad, &m, &x, &gy4, &e) == GF_OK, "%s", e.msg);
  CHECKF(kt_ada_run(c1, op, 1, pad, &m, &g, &gdx, &e) == GF_OK, "%s", e.msg);
  CHECKF(kt_ada_run(c4, op, 1, pad, &m, &g, &gdx4, &e) == GF_OK, "%s", e.msg);
  CHECK(kt_same_bits(&gy, &gy4));
  CHECK(kt_same_bits(&gdx, &gdx4));
  char what[64];
  snprintf(what, sizeof what, "%s.y", name);
  vs_torch(what, &gy, &y, srel_y);
  snprintf(what, sizeof what, "%s.dx", name);
  vs_torch(what, &gdx, &dx, srel_dx);
  gf_tensor *all[] = {&x, &y, &g, &dx, &m, &padt, &gy, &gy4, &gdx, &gdx4};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    gf_tensor_free(all[k]);
}

static double dot(const gf_tensor *a, const gf_tensor *b, double *abs_sum) {
  const float *p = a->data, *q = b->data;
  double s = 0.0, t = 0.0;
  for (int64_t i = 0; i < gf_tensor_numel(a); i++) {
    s += (double)p[i] * q[i];
    t += fabs((double)p[i] * q[i]);
  }
  if (abs_sum) *abs_sum = t;
  return s;
}

/* Large random cases: 1 vs 4 threads the same bits, and the adjoint
 * identity (shown to fire with a wrong transpose: dx of another theta). */
static void test_large(gf_ctx *c1, gf_ctx *c4) {
  kt_rng r = {2026};
  gf_err e = {0};
  /* resampling [2,3,40,40] -> [2,3,96,96] */
  gf_tensor x = kt_tensor(4, 2, 3, 40, 40), th = kt_tensor(3, 2, 2, 3, 1);
  gf_tensor th2 = kt_tensor(3, 2, 2, 3, 1);
  kt_fill(&x, &r, -1.0, 1.0, 0.0);
  float *t = th.data;
  const float tv[12] = {0.9f, 0.3f, 0.05f, -0.25f, 1.1f, -0.1f,
                        1.2f, -0.7f, 0.2f, 0.6f, 0.8f, 0.3f};
  memcpy(t, tv, sizeof tv);
  memcpy(th2.data, tv, sizeof tv);
  ((float *)th2.data)[2] += 0.05f;
  gf_tensor y1 = kt_tensor(4, 2, 3, 96, 96), y4 = kt_tensor(4, 2, 3, 96, 96);
  gf_tensor g = kt_tensor(4, 2, 3, 96, 96);
  kt_fill(&g, &r, -1.0, 1.0, 0.0);
  gf_tensor d1 = kt_tensor(4, 2, 3, 40, 40), d4 = kt_tensor(4, 2, 3, 40, 40);
  gf_tensor dw = kt_tensor(4, 2, 3, 40, 40);
  CHECKF(gf_affine_sample_fwd(c1, &x, &th, &y1, &e) == GF_OK, "%s", e.msg);
  CHECKF(gf_affine_sample_fwd(c4, &x, &th, &y4, &e) == GF_OK, "%s", e.msg);
  CHECKF(gf_affine_sample_bwd(c1, &th, &g, &d1, &e) == GF_OK, "%s", e.msg);
  CHECKF(gf_affine_sample_bwd(c4, &th, &g, &d4, &e) == GF_OK, "%s", e.msg);
  CHECKF(gf_affine_sample_bwd(c1, &th2, &g, &dw, &e) == GF_OK, "%s", e.msg);
  CHECK(kt_same_bits(&y1, &y4));
  CHECK(kt_same_bits(&d1, &d4));
  double a1, a2, a3;
  double lhs = dot(&y1, &g, &a1), rhs = dot(&x, &d1, &a2);
  double wrong = dot(&x, &dw, &a3);
  double tol = 8 * 0x1p-24 * (a1 + a2);
  printf("sample adjoint <Ax,g> %.9g <x,A^T g> %.9g |d| %.3g tol %.3g "
         "(wrong theta: |d| %.3g)\n", lhs, rhs, fabs(lhs - rhs), tol,
         fabs(lhs - wrong));
  CHECK(fabs(lhs - rhs) <= tol);
  CHECK(fabs(lhs - wrong) > tol);
  /* reflect pad [2,3,64,64] pad (10,3,7,63) and colour [4,3,64,64] */
  gf_tensor px = kt_tensor(4, 2, 3, 64, 64);
  kt_fill(&px, &r, -1.0, 1.0, 0.0);
  const int pad[4] = {10, 3, 7, 63};
  gf_tensor py1 = kt_tensor(4, 2, 3, 134, 77), py4 = kt_tensor(4, 2, 3, 134, 77);
  gf_tensor pd1 = kt_tensor(4, 2, 3, 64, 64), pd4 = kt_tensor(4, 2, 3, 64, 64);
  CHECK(gf_pad_reflect_fwd(c1, &px, pad, &py1, &e) == GF_OK);
  CHECK(gf_pad_reflect_fwd(c4, &px, pad, &py4, &e) == GF_OK);
  CHECK(gf_pad_reflect_bwd(c1, pad, &py1, &pd1, &e) == GF_OK);
  CHECK(gf_pad_reflect_bwd(c4, pad, &py1, &pd4, &e) == GF_OK);
  CHECK(kt_same_bits(&py1, &py4));
  CHECK(kt_same_bits(&pd1, &pd4));
  double b1, b2;
  lhs = dot(&py1, &py1, &b1);
  rhs = dot(&px, &pd1, &b2);
  CHECKF(fabs(lhs - rhs) <= 1e-9 * b1, "reflect adjoint %.9g vs %.9g", lhs,
         rhs);
  gf_tensor cx = kt_tensor(4, 4, 3, 64, 64), cm = kt_tensor(3, 4, 4, 4, 1);
  kt_fill(&cx, &r, -1.0, 1.0, 0.0);
  kt_fill(&cm, &r, -1.0, 1.0, 0.0);
  gf_tensor cy1 = kt_tensor(4, 4, 3, 64, 64), cy4 = kt_tensor(4, 4, 3, 64, 64);
  gf_tensor cd1 = kt_tensor(4, 4, 3, 64, 64), cd4 = kt_tensor(4, 4, 3, 64, 64);
  CHECK(gf_color4_fwd(c1, &cx, &cm, &cy1, &e) == GF_OK);
  CHECK(gf_color4_fwd(c4, &cx, &cm, &cy4, &e) == GF_OK);
  CHECK(gf_color4_bwd(c1, &cm, &cx, &cd1, &e) == GF_OK);
  CHECK(gf_color4_bwd(c4, &cm, &cx, &cd4, &e) == GF_OK);
  CHECK(kt_same_bits(&cy1, &cy4));
  CHECK(kt_same_bits(&cd1, &cd4));
  gf_tensor *all[] = {&x,  &th,  &th2, &y1,  &y4,  &g,   &d1,  &d4,
                      &dw, &px,  &py1, &py4, &pd1, &pd4, &cx,  &cm,
                      &cy1, &cy4, &cd1, &cd4};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    gf_tensor_free(all[k]);
}

static void test_args(gf_ctx *c) {
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, 2, 3, 4, 5), y = kt_tensor(4, 2, 3, 8, 9);
  gf_tensor th = kt_tensor(3, 2, 2, 3, 1), m = kt_tensor(3, 2, 4, 4, 1);
  gf_tensor x2 = kt_tensor(4, 2, 2, 4, 5), y2 = kt_tensor(4, 2, 2, 4, 5);
  gf_tensor cy = kt_tensor(4, 2, 3, 4, 5);
  const int ok[4] = {2, 2, 2, 2}, big[4] = {5, 2, 2, 2}, neg[4] = {2, 2, -1, 5};
  CHECK(gf_pad_reflect_fwd(c, &x, ok, &y, &e) == GF_OK);
  CHECK(gf_pad_reflect_fwd(c, &x, big, &y, &e) == GF_EINVAL);
  CHECK(gf_pad_reflect_fwd(c, &x, neg, &y, &e) == GF_EINVAL);
  CHECK(gf_pad_reflect_fwd(c, &x, NULL, &y, &e) == GF_EINVAL);
  CHECK(gf_pad_reflect_bwd(c, ok, &y, &x, &e) == GF_OK);
  CHECK(gf_pad_reflect_bwd(c, ok, &x, &y, &e) == GF_EINVAL); /* shapes */
  CHECK(gf_affine_sample_fwd(c, &x, &th, &y, &e) == GF_OK);
  CHECK(gf_affine_sample_fwd(c, &x, &m, &y, &e) == GF_EINVAL); /* theta */
  CHECK(gf_affine_sample_fwd(c, &x, &th, &x2, &e) == GF_EINVAL); /* C */
  CHECK(gf_affine_sample_bwd(c, &th, &y, &x, &e) == GF_OK);
  gf_tensor xv = kt_view_at(&x, 0, 4, x.shape);
  CHECK(gf_affine_sample_fwd(c, &x, &th, &xv, &e) == GF_EINVAL); /* overlap */
  CHECK(gf_color4_fwd(c, &x, &m, &cy, &e) == GF_OK);
  CHECK(gf_color4_fwd(c, &x2, &m, &y2, &e) == GF_EINVAL); /* 2 channels */
  CHECK(gf_color4_fwd(c, &x, &th, &cy, &e) == GF_EINVAL); /* m shape */
  CHECK(gf_color4_fwd(c, &x, &m, &xv, &e) == GF_EINVAL);  /* overlap */
  CHECK(gf_color4_bwd(c, &m, &cy, &x, &e) == GF_OK);
  gf_tensor *all[] = {&x, &y, &th, &m, &x2, &y2, &cy};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    gf_tensor_free(all[k]);
}

int main(int argc, char **argv) {
  const char *path = argc > 1 ? argv[1] : GF_ADA_OPS_GOLDEN;
  gf_ctx c1, c4;
  kt_cpu_ctx(&c1, 1);
  kt_cpu_ctx(&c4, 4);
  gf_st_file f;
  kt_gold_open(&f, path);
  test_golden(&c1, &c4, &f, "reflect", OP_REFLECT, -1.0, -1.0);
  test_golden(&c1, &c4, &f, "reflect1", OP_REFLECT, -1.0, -1.0);
  test_golden(&c1, &c4, &f, "sample", OP_SAMPLE, 0x1p-18, 0x1p-18);
  test_golden(&c1, &c4, &f, "sample_up", OP_SAMPLE, 0x1p-18, 0x1p-18);
  test_golden(&c1, &c4, &f, "color3", OP_COLOR, 0x1p-22, 0x1p-22);
  test_golden(&c1, &c4, &f, "color1", OP_COLOR, 0x1p-22, 0x1p-22);
  test_large(&c1, &c4);
  test_args(&c1);
  gf_st_file_free(&f);
  gf_ctx_free(&c1);
  gf_ctx_free(&c4);
  return check_report();
}
