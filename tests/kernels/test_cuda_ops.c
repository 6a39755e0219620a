/* test_cuda_ops.c - every op of the CUDA backend against its CPU twin
 * (label gpu; exits 77 where there is no GPU): linear, conv2d and
 * transposed conv2d (forward, backward, accumulate, out_pad), batch norm
 * (train 2-D/4-D, affine or not, running stats; infer; backward; the sync
 * BN pieces: backward sums with dx NULL and gf_batchnorm_bwd_dx), the four
 * activations, dropout (mask bit-identical to the CPU's Philox stream, at
 * an unaligned offset, p = 0 and 1), BCE-with-logits, Adam over steps with
 * weight decay, fill and copy; max / average pooling, bilinear resize and
 * channel concatenation at Inception-v3's sizes. Then: deterministic mode gives bit-identical
 * repeats, and TF32 mode stays within its own tolerance.
 * Tolerances (kt_cuda.c): f32 GEMM/conv/BN atol 1e-5 + rtol 1e-4
 * (summation order differs); element-wise atol 1e-6 + rtol 1e-5 (libm);
 * TF32 atol 2e-3 + rtol 1e-2. */
#include <stdlib.h>

#include "check.h"
#include "kt_cuda.h"
#include "kt_util.h"

static gf_ctx cpu, gpu;
static kt_rng rng = {12345};

/* A host tensor with random values in [-1, 1) and its device copy. */
typedef struct twin {
  gf_tensor h, d;
} twin;

static twin tw(int ndim, int64_t a, int64_t b, int64_t c, int64_t d,
               double lo, double hi) {
  twin t;
  t.h = kt_tensor(ndim, a, b, c, d);
  kt_fill(&t.h, &rng, lo, hi, 0.0);
  t.d = kt_to_dev(&t.h);
  return t;
}
static twin rnd(int ndim, int64_t a, int64_t b, int64_t c, int64_t d) {
  return tw(ndim, a, b, c, d, -1.0, 1.0);
}
static void twin_free(twin *t) {
  gf_tensor_free(&t->h);
  gf_tensor_free(&t->d);
}
/* Checks the device half against the host half. */
static void same(const char *label, twin *t, kt_tol tol) {
  CHECKF(kt_cmp_dev(label, &t->d, &t->h, tol) == 0, "%s", label);
}

static void test_linear(void) {
  gf_err e = {0};
  twin x = rnd(2, 37, 50, 1, 1), w = rnd(2, 29, 50, 1, 1);
  twin b = rnd(1, 29, 1, 1, 1), y = rnd(2, 37, 29, 1, 1);
  twin dy = rnd(2, 37, 29, 1, 1), dx = rnd(2, 37, 50, 1, 1);
  twin dw = rnd(2, 29, 50, 1, 1), db = rnd(1, 29, 1, 1, 1);
  REQUIRE(gf_linear_fwd(&cpu, &x.h, &w.h, &b.h, &y.h, &e) == GF_OK);
  CHECKF(gf_linear_fwd(&gpu, &x.d, &w.d, &b.d, &y.d, &e) == GF_OK, "%s", e.msg);
  same("linear y", &y, KT_TOL_F32);
  for (int acc = 0; acc < 2; acc++) {
    gf_accum a = acc ? GF_ACCUMULATE : GF_OVERWRITE;
    REQUIRE(gf_linear_bwd(&cpu, &x.h, &w.h, &dy.h, &dx.h, &dw.h, &db.h, a,
                          &e) == GF_OK);
    CHECKF(gf_linear_bwd(&gpu, &x.d, &w.d, &dy.d, &dx.d, &dw.d, &db.d, a,
                         &e) == GF_OK, "%s", e.msg);
    same("linear dx", &dx, KT_TOL_F32);
    same("linear dw", &dw, KT_TOL_F32);
    same("linear db", &db, KT_TOL_F32);
  }
  /* no bias, no dx */
  REQUIRE(gf_linear_fwd(&cpu, &x.h, &w.h, NULL, &y.h, &e) == GF_OK);
  CHECK(gf_linear_fwd(&gpu, &x.d, &w.d, NULL, &y.d, &e) == GF_OK);
  same("linear y nobias", &y, KT_TOL_F32);
  twin *all[] = {&x, &w, &b, &y, &dy, &dx, &dw, &db};
  for (size_t i = 0; i < 8; i++) twin_free(all[i]);
}

/* conv (transposed = 0) or deconv (1) with x [n,ci,h,w], kernel k, p. */
static void conv_case(int transposed, int64_t n, int64_t ci, int64_t co,
                      int64_t h, int64_t w_, int kh, int kw,
                      gf_conv_params p) {
  gf_err e = {0};
  char lab[96];
  twin x = rnd(4, n, ci, h, w_);
  twin w = transposed ? rnd(4, ci, co, kh, kw) : rnd(4, co, ci, kh, kw);
  int64_t ys[4];
  REQUIRE((transposed ? gf_deconv2d_out_shape(&x.h, &w.h, &p, ys, &e)
                      : gf_conv2d_out_shape(&x.h, &w.h, &p, ys, &e)) ==
          GF_OK);
  twin b = rnd(1, co, 1, 1, 1), y = rnd(4, ys[0], ys[1], ys[2], ys[3]);
  twin dy = rnd(4, ys[0], ys[1], ys[2], ys[3]), dx = rnd(4, n, ci, h, w_);
  twin dw = transposed ? rnd(4, ci, co, kh, kw) : rnd(4, co, ci, kh, kw);
  twin db = rnd(1, co, 1, 1, 1);
  const char *nm = transposed ? "deconv" : "conv";
  gf_status sc, sg;
  sc = transposed ? gf_deconv2d_fwd(&cpu, &x.h, &w.h, &b.h, &p, &y.h, &e)
                  : gf_conv2d_fwd(&cpu, &x.h, &w.h, &b.h, &p, &y.h, &e);
  REQUIRE(sc == GF_OK);
  sg = transposed ? gf_deconv2d_fwd(&gpu, &x.d, &w.d, &b.d, &p, &y.d, &e)
                  : gf_conv2d_fwd(&gpu, &x.d, &w.d, &b.d, &p, &y.d, &e);
  CHECKF(sg == GF_OK, "%s", e.msg);
  snprintf(lab, sizeof lab, "%s y k%dx%d s%d p%d", nm, kh, kw, p.stride[0],
           p.pad[0]);
  same(lab, &y, KT_TOL_F32);
  for (int acc = 0; acc < 2; acc++) {
    gf_accum a = acc ? GF_ACCUMULATE : GF_OVERWRITE;
    sc = transposed ? gf_deconv2d_bwd(&cpu, &x.h, &w.h, &dy.h, &p, &dx.h,
                                      &dw.h, &db.h, a, &e)
                    : gf_conv2d_bwd(&cpu, &x.h, &w.h, &dy.h, &p, &dx.h,
                                    &dw.h, &db.h, a, &e);
    REQUIRE(sc == GF_OK);
    sg = transposed ? gf_deconv2d_bwd(&gpu, &x.d, &w.d, &dy.d, &p, &dx.d,
                                      &dw.d, &db.d, a, &e)
                    : gf_conv2d_bwd(&gpu, &x.d, &w.d, &dy.d, &p, &dx.d,
                                    &dw.d, &db.d, a, &e);
    CHECKF(sg == GF_OK, "%s", e.msg);
    snprintf(lab, sizeof lab, "%s dx acc%d", nm, acc);
    same(lab, &dx, KT_TOL_F32);
    snprintf(lab, sizeof lab, "%s dw acc%d", nm, acc);
    same(lab, &dw, KT_TOL_F32);
    snprintf(lab, sizeof lab, "%s db acc%d", nm, acc);
    same(lab, &db, KT_TOL_F32);
  }
  twin *all[] = {&x, &w, &b, &y, &dy, &dx, &dw, &db};
  for (size_t i = 0; i < 8; i++) twin_free(all[i]);
}

static void test_conv(void) {
  gf_conv_params p1 = {{2, 1}, {1, 2}, {0, 0}};
  conv_case(0, 4, 3, 8, 13, 11, 4, 3, p1);
  gf_conv_params dc = {{2, 2}, {1, 1}, {0, 0}}; /* DCGAN 4x4 s2 p1 */
  conv_case(0, 8, 16, 32, 14, 14, 4, 4, dc);
  conv_case(1, 8, 32, 16, 7, 7, 4, 4, dc);
  gf_conv_params g1 = {{1, 1}, {0, 0}, {0, 0}}; /* 1x1 -> 4x4 (DCGAN G in) */
  conv_case(1, 5, 20, 12, 1, 1, 4, 4, g1);
  gf_conv_params op = {{2, 2}, {1, 1}, {1, 1}}; /* out_pad */
  conv_case(1, 3, 6, 5, 5, 6, 3, 3, op);
}

static void bn_case(int ndim, int affine, int running) {
  gf_err e = {0};
  int64_t N = 6, C = 5, H = ndim == 4 ? 7 : 1, W = ndim == 4 ? 3 : 1;
  twin x = ndim == 4 ? tw(4, N, C, H, W, -2, 3) : tw(2, N, C, 1, 1, -2, 3);
  twin y = ndim == 4 ? rnd(4, N, C, H, W) : rnd(2, N, C, 1, 1);
  twin dy = ndim == 4 ? rnd(4, N, C, H, W) : rnd(2, N, C, 1, 1);
  twin dx = ndim == 4 ? rnd(4, N, C, H, W) : rnd(2, N, C, 1, 1);
  twin g = tw(1, C, 1, 1, 1, 0.5, 1.5), be = rnd(1, C, 1, 1, 1);
  twin rm = rnd(1, C, 1, 1, 1), rv = tw(1, C, 1, 1, 1, 0.5, 2);
  twin sm = rnd(1, C, 1, 1, 1), sv = rnd(1, C, 1, 1, 1);
  twin dg = rnd(1, C, 1, 1, 1), db = rnd(1, C, 1, 1, 1);
  gf_bn_params p = {1e-5f, 0.1f};
  char lab[64];
  snprintf(lab, sizeof lab, "bn%dd affine%d running%d", ndim == 4 ? 2 : 1,
           affine, running);
  REQUIRE(gf_batchnorm_fwd_train(&cpu, &x.h, affine ? &g.h : NULL,
                                 affine ? &be.h : NULL, running ? &rm.h : NULL,
                                 running ? &rv.h : NULL, &p, &y.h, &sm.h,
                                 &sv.h, &e) == GF_OK);
  CHECKF(gf_batchnorm_fwd_train(&gpu, &x.d, affine ? &g.d : NULL,
                                affine ? &be.d : NULL, running ? &rm.d : NULL,
                                running ? &rv.d : NULL, &p, &y.d, &sm.d,
                                &sv.d, &e) == GF_OK, "%s: %s", lab, e.msg);
  same(lab, &y, KT_TOL_F32);
  same("bn save_mean", &sm, KT_TOL_F32);
  same("bn save_var", &sv, KT_TOL_F32);
  if (running) {
    same("bn running_mean", &rm, KT_TOL_F32);
    same("bn running_var", &rv, KT_TOL_F32);
  }
  for (int acc = 0; acc < 2; acc++) {
    gf_accum a = acc ? GF_ACCUMULATE : GF_OVERWRITE;
    REQUIRE(gf_batchnorm_bwd(&cpu, &x.h, affine ? &g.h : NULL, &sm.h, &sv.h,
                             p.eps, &dy.h, &dx.h, affine ? &dg.h : NULL,
                             affine ? &db.h : NULL, a, &e) == GF_OK);
    CHECKF(gf_batchnorm_bwd(&gpu, &x.d, affine ? &g.d : NULL, &sm.d, &sv.d,
                            p.eps, &dy.d, &dx.d, affine ? &dg.d : NULL,
                            affine ? &db.d : NULL, a, &e) == GF_OK, "%s: %s",
           lab, e.msg);
    same("bn dx", &dx, KT_TOL_F32);
    if (affine) {
      same("bn dgamma", &dg, KT_TOL_F32);
      same("bn dbeta", &db, KT_TOL_F32);
    }
  }
  REQUIRE(gf_batchnorm_fwd_infer(&cpu, &x.h, affine ? &g.h : NULL,
                                 affine ? &be.h : NULL, &rm.h, &rv.h, p.eps,
                                 &y.h, &e) == GF_OK);
  CHECKF(gf_batchnorm_fwd_infer(&gpu, &x.d, affine ? &g.d : NULL,
                                affine ? &be.d : NULL, &rm.d, &rv.d, p.eps,
                                &y.d, &e) == GF_OK, "%s", e.msg);
  same("bn infer y", &y, KT_TOL_F32);
  twin *all[] = {&x, &y, &dy, &dx, &g, &be, &rm, &rv, &sm, &sv, &dg, &db};
  for (size_t i = 0; i < 12; i++) twin_free(all[i]);
}

static void test_bn(void) {
  for (int nd = 2; nd <= 4; nd += 2)
    for (int aff = 0; aff < 2; aff++)
      for (int run = 0; run < 2; run++) bn_case(nd, aff, run);
}

/* Sync BN's pieces: gf_batchnorm_bwd with dx = NULL (the local sums, here
 * through cuDNN into scratch) and gf_batchnorm_bwd_dx from the same global
 * statistics and sums on both backends (the CPU's, copied to the device),
 * with count = 3 m as for three ranks, then again with dx in place of dy. */
static void bn_sync_case(int ndim, int affine) {
  gf_err e = {0};
  int64_t N = 6, C = 5, H = ndim == 4 ? 7 : 1, W = ndim == 4 ? 3 : 1;
  twin x = ndim == 4 ? tw(4, N, C, H, W, -2, 3) : tw(2, N, C, 1, 1, -2, 3);
  twin y = ndim == 4 ? rnd(4, N, C, H, W) : rnd(2, N, C, 1, 1);
  twin dy = ndim == 4 ? rnd(4, N, C, H, W) : rnd(2, N, C, 1, 1);
  twin dx = ndim == 4 ? rnd(4, N, C, H, W) : rnd(2, N, C, 1, 1);
  twin g = tw(1, C, 1, 1, 1, 0.5, 1.5), be = rnd(1, C, 1, 1, 1);
  twin one = tw(1, C, 1, 1, 1, 1, 1);
  twin sm = rnd(1, C, 1, 1, 1), sv = rnd(1, C, 1, 1, 1);
  twin sdx = rnd(1, C, 1, 1, 1), sdy = rnd(1, C, 1, 1, 1);
  gf_bn_params p = {1e-5f, 0.1f};
  char lab[64];
  snprintf(lab, sizeof lab, "bn sync %dd affine%d", ndim == 4 ? 2 : 1, affine);
  twin *gs = affine ? &g : &one; /* the sums need a gamma: ones */
  REQUIRE(gf_batchnorm_fwd_train(&cpu, &x.h, affine ? &g.h : NULL,
                                 affine ? &be.h : NULL, NULL, NULL, &p, &y.h,
                                 &sm.h, &sv.h, &e) == GF_OK);
  gf_tensor_free(&sm.d);
  gf_tensor_free(&sv.d);
  sm.d = kt_to_dev(&sm.h);
  sv.d = kt_to_dev(&sv.h);
  REQUIRE(gf_batchnorm_bwd(&cpu, &x.h, &gs->h, &sm.h, &sv.h, p.eps, &dy.h,
                           NULL, &sdx.h, &sdy.h, GF_OVERWRITE, &e) == GF_OK);
  CHECKF(gf_batchnorm_bwd(&gpu, &x.d, &gs->d, &sm.d, &sv.d, p.eps, &dy.d,
                          NULL, &sdx.d, &sdy.d, GF_OVERWRITE, &e) == GF_OK,
         "%s: %s", lab, e.msg);
  same("bn sync sum_dy_xhat (dx NULL)", &sdx, KT_TOL_F32);
  same("bn sync sum_dy (dx NULL)", &sdy, KT_TOL_F32);
  gf_tensor_free(&sdx.d);
  gf_tensor_free(&sdy.d);
  sdx.d = kt_to_dev(&sdx.h);
  sdy.d = kt_to_dev(&sdy.h);
  double count = 3.0 * (double)(N * H * W);
  REQUIRE(gf_batchnorm_bwd_dx(&cpu, &x.h, affine ? &g.h : NULL, &sm.h, &sv.h,
                              p.eps, &dy.h, &sdy.h, &sdx.h, count, &dx.h,
                              &e) == GF_OK);
  CHECKF(gf_batchnorm_bwd_dx(&gpu, &x.d, affine ? &g.d : NULL, &sm.d, &sv.d,
                             p.eps, &dy.d, &sdy.d, &sdx.d, count, &dx.d,
                             &e) == GF_OK, "%s: %s", lab, e.msg);
  /* the same f32 arithmetic on the same inputs; only FMA contraction may
   * differ (one rounding of the product term) */
  same(lab, &dx, KT_TOL_F32_ELT);
  CHECKF(gf_batchnorm_bwd_dx(&gpu, &x.d, affine ? &g.d : NULL, &sm.d, &sv.d,
                             p.eps, &dy.d, &sdy.d, &sdx.d, count, &dy.d,
                             &e) == GF_OK, "%s: %s", lab, e.msg);
  CHECKF(kt_cmp_dev("bn sync dx in dy", &dy.d, &dx.h, KT_TOL_F32_ELT) == 0,
         "%s: dx in place of dy", lab);
  twin *all[] = {&x, &y, &dy, &dx, &g, &be, &one, &sm, &sv, &sdx, &sdy};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) twin_free(all[i]);
}

static void test_bn_sync(void) {
  for (int nd = 2; nd <= 4; nd += 2)
    for (int aff = 0; aff < 2; aff++) bn_sync_case(nd, aff);
}

static void test_act(void) {
  gf_err e = {0};
  int64_t n = 70001;
  twin x = tw(1, n, 1, 1, 1, -4, 4), y = rnd(1, n, 1, 1, 1);
  twin dy = rnd(1, n, 1, 1, 1), dx = rnd(1, n, 1, 1, 1);
  const char *nm[] = {"relu", "leaky", "tanh", "sigmoid"};
  for (int k = 0; k < 4; k++) {
    gf_status a, b;
    switch (k) {
    case 0:
      a = gf_relu_fwd(&cpu, &x.h, &y.h, &e);
      b = gf_relu_fwd(&gpu, &x.d, &y.d, &e);
      break;
    case 1:
      a = gf_leaky_relu_fwd(&cpu, &x.h, 0.2f, &y.h, &e);
      b = gf_leaky_relu_fwd(&gpu, &x.d, 0.2f, &y.d, &e);
      break;
    case 2:
      a = gf_tanh_fwd(&cpu, &x.h, &y.h, &e);
      b = gf_tanh_fwd(&gpu, &x.d, &y.d, &e);
      break;
    default:
      a = gf_sigmoid_fwd(&cpu, &x.h, &y.h, &e);
      b = gf_sigmoid_fwd(&gpu, &x.d, &y.d, &e);
    }
    REQUIRE(a == GF_OK);
    CHECKF(b == GF_OK, "%s: %s", nm[k], e.msg);
    same(nm[k], &y, KT_TOL_F32_ELT);
    /* backward: relu/leaky take x, tanh/sigmoid take y (the CPU's y) */
    gf_tensor yd = kt_to_dev(&y.h);
    switch (k) {
    case 0:
      a = gf_relu_bwd(&cpu, &x.h, &dy.h, &dx.h, &e);
      b = gf_relu_bwd(&gpu, &x.d, &dy.d, &dx.d, &e);
      break;
    case 1:
      a = gf_leaky_relu_bwd(&cpu, &x.h, 0.2f, &dy.h, &dx.h, &e);
      b = gf_leaky_relu_bwd(&gpu, &x.d, 0.2f, &dy.d, &dx.d, &e);
      break;
    case 2:
      a = gf_tanh_bwd(&cpu, &y.h, &dy.h, &dx.h, &e);
      b = gf_tanh_bwd(&gpu, &yd, &dy.d, &dx.d, &e);
      break;
    default:
      a = gf_sigmoid_bwd(&cpu, &y.h, &dy.h, &dx.h, &e);
      b = gf_sigmoid_bwd(&gpu, &yd, &dy.d, &dx.d, &e);
    }
    gf_tensor_free(&yd);
    REQUIRE(a == GF_OK);
    CHECKF(b == GF_OK, "%s bwd: %s", nm[k], e.msg);
    same(nm[k], &dx, KT_TOL_F32_ELT);
  }
  twin_free(&x);
  twin_free(&y);
  twin_free(&dy);
  twin_free(&dx);
}

static void test_dropout(void) {
  gf_err e = {0};
  const float ps[] = {0.3f, 0.0f, 1.0f, 0.5f};
  const uint64_t offs[] = {5, 0, 3, 1ull << 33};
  for (int i = 0; i < 4; i++) {
    int64_t n = 1001 + i;
    twin x = rnd(1, n, 1, 1, 1), y = rnd(1, n, 1, 1, 1);
    gf_philox_stream s = {{0xdeadbeefu, 7u}, {3u, 11u}, offs[i]};
    REQUIRE(gf_dropout_fwd(&cpu, &x.h, ps[i], &s, &y.h, &e) == GF_OK);
    CHECKF(gf_dropout_fwd(&gpu, &x.d, ps[i], &s, &y.d, &e) == GF_OK, "%s",
           e.msg);
    CHECKF(kt_diff_bytes(&y.d, &y.h) == 0,
           "dropout p %.1f offset %llu: not bit-identical", ps[i],
           (unsigned long long)offs[i]);
    REQUIRE(gf_dropout_bwd(&cpu, &x.h, ps[i], &s, &y.h, &e) == GF_OK);
    CHECK(gf_dropout_bwd(&gpu, &x.d, ps[i], &s, &y.d, &e) == GF_OK);
    CHECK(kt_diff_bytes(&y.d, &y.h) == 0);
    twin_free(&x);
    twin_free(&y);
  }
}

static void test_bce(void) {
  gf_err e = {0};
  int64_t n = 3001;
  twin x = tw(2, n, 1, 1, 1, -30, 30), t = tw(2, n, 1, 1, 1, 0, 1);
  twin l = rnd(1, 1, 1, 1, 1), dx = rnd(2, n, 1, 1, 1);
  REQUIRE(gf_bce_logits_fwd(&cpu, &x.h, &t.h, &l.h, &e) == GF_OK);
  CHECKF(gf_bce_logits_fwd(&gpu, &x.d, &t.d, &l.d, &e) == GF_OK, "%s", e.msg);
  same("bce loss", &l, KT_TOL_F32_ELT);
  REQUIRE(gf_bce_logits_bwd(&cpu, &x.h, &t.h, 0.7f, &dx.h, &e) == GF_OK);
  CHECKF(gf_bce_logits_bwd(&gpu, &x.d, &t.d, 0.7f, &dx.d, &e) == GF_OK, "%s",
         e.msg);
  same("bce dx", &dx, KT_TOL_F32_ELT);
  twin_free(&x);
  twin_free(&t);
  twin_free(&l);
  twin_free(&dx);
}

static void test_adam(void) {
  gf_err e = {0};
  int64_t n = 4099;
  twin w = rnd(1, n, 1, 1, 1), g = rnd(1, n, 1, 1, 1);
  twin m = tw(1, n, 1, 1, 1, 0, 0), v = tw(1, n, 1, 1, 1, 0, 0);
  gf_adam_params p = {2e-4, 0.5, 0.999, 1e-8, 0.01};
  for (int64_t step = 1; step <= 5; step++) {
    REQUIRE(gf_adam_step(&cpu, &p, step, &w.h, &g.h, &m.h, &v.h, &e) == GF_OK);
    CHECKF(gf_adam_step(&gpu, &p, step, &w.d, &g.d, &m.d, &v.d, &e) == GF_OK,
           "%s", e.msg);
  }
  same("adam w", &w, KT_TOL_F32_ELT);
  same("adam m", &m, KT_TOL_F32_ELT);
  same("adam v", &v, KT_TOL_F32_ELT);
  twin_free(&w);
  twin_free(&g);
  twin_free(&m);
  twin_free(&v);
}

static void test_fill_copy(void) {
  gf_err e = {0};
  twin a = rnd(2, 33, 7, 1, 1), b = rnd(1, 231, 1, 1, 1);
  REQUIRE(gf_fill(&cpu, &a.h, 0.625f, &e) == GF_OK);
  CHECKF(gf_fill(&gpu, &a.d, 0.625f, &e) == GF_OK, "%s", e.msg);
  CHECK(kt_diff_bytes(&a.d, &a.h) == 0);
  kt_fill(&a.h, &rng, -1, 1, 0);
  gf_tensor_free(&a.d);
  a.d = kt_to_dev(&a.h);
  REQUIRE(gf_copy(&cpu, &a.h, &b.h, &e) == GF_OK);
  CHECKF(gf_copy(&gpu, &a.d, &b.d, &e) == GF_OK, "%s", e.msg);
  CHECK(kt_diff_bytes(&b.d, &b.h) == 0);
  /* a host tensor is refused by the CUDA ctx, not dereferenced */
  CHECK(gf_fill(&gpu, &a.h, 1.0f, &e) == GF_EINVAL);
  twin_free(&a);
  twin_free(&b);
}

/* Pooling, bilinear resize and channel concatenation against the CPU:
 * max pooling and the channel copy bit-identical; average pooling (oneDNN
 * sums in its own order on the CPU) and resize (same float formula, no FMA
 * on either side) within the element-wise tolerance. */
static void pool_case(int64_t n, int64_t c, int64_t h, int64_t w,
                      gf_pool_params p) {
  gf_err e = {0};
  char lab[96];
  twin x = rnd(4, n, c, h, w);
  int64_t ys[4];
  REQUIRE(gf_pool2d_out_shape(&x.h, &p, ys, &e) == GF_OK);
  twin y = rnd(4, ys[0], ys[1], ys[2], ys[3]);
  REQUIRE(gf_maxpool2d_fwd(&cpu, &x.h, &p, &y.h, &e) == GF_OK);
  CHECKF(gf_maxpool2d_fwd(&gpu, &x.d, &p, &y.d, &e) == GF_OK, "%s", e.msg);
  CHECKF(kt_diff_bytes(&y.d, &y.h) == 0, "maxpool [%lld,%lld,%lld,%lld] k%d "
         "s%d p%d: not bit-identical", (long long)n, (long long)c,
         (long long)h, (long long)w, p.kernel[0], p.stride[0], p.pad[0]);
  for (int inc = 0; inc < 2; inc++) {
    p.count_include_pad = inc;
    REQUIRE(gf_avgpool2d_fwd(&cpu, &x.h, &p, &y.h, &e) == GF_OK);
    CHECKF(gf_avgpool2d_fwd(&gpu, &x.d, &p, &y.d, &e) == GF_OK, "%s", e.msg);
    snprintf(lab, sizeof lab, "avgpool [%lld,%lld,%lld,%lld] k%d s%d p%d "
             "include_pad %d", (long long)n, (long long)c, (long long)h,
             (long long)w, p.kernel[0], p.stride[0], p.pad[0], inc);
    same(lab, &y, KT_TOL_F32_ELT);
  }
  twin_free(&x);
  twin_free(&y);
}

static void resize_case(int64_t n, int64_t c, int64_t h, int64_t w,
                        int64_t oh, int64_t ow) {
  gf_err e = {0};
  char lab[96];
  twin x = rnd(4, n, c, h, w), y = rnd(4, n, c, oh, ow);
  REQUIRE(gf_resize_bilinear_fwd(&cpu, &x.h, &y.h, &e) == GF_OK);
  CHECKF(gf_resize_bilinear_fwd(&gpu, &x.d, &y.d, &e) == GF_OK, "%s", e.msg);
  snprintf(lab, sizeof lab, "resize %lldx%lld -> %lldx%lld", (long long)h,
           (long long)w, (long long)oh, (long long)ow);
  same(lab, &y, KT_TOL_F32_ELT);
  twin_free(&x);
  twin_free(&y);
}

static void test_pool_resize_concat(void) {
  gf_pool_params s2 = {{3, 3}, {2, 2}, {0, 0}, 1};
  gf_pool_params s1 = {{3, 3}, {1, 1}, {1, 1}, 1};
  gf_pool_params g8 = {{8, 8}, {8, 8}, {0, 0}, 1};
  gf_pool_params odd = {{3, 2}, {2, 1}, {1, 1}, 1};
  pool_case(2, 64, 147, 147, s2); /* the CPU's loops (simple_nchw) */
  pool_case(2, 192, 71, 71, s2);
  pool_case(3, 288, 10, 10, s2);  /* windows skip the last row: loops */
  pool_case(2, 1280, 8, 8, s1);
  pool_case(2, 192, 35, 35, s1);
  pool_case(2, 2048, 8, 8, g8);
  pool_case(3, 5, 7, 10, odd);
  resize_case(2, 3, 28, 28, 299, 299);
  resize_case(1, 3, 64, 64, 299, 299);
  resize_case(2, 3, 17, 13, 5, 4);
  resize_case(1, 2, 6, 7, 6, 7);
  resize_case(1, 1, 1, 1, 4, 3);
  /* copy_channels: pieces at offset 0, in the middle and last, 4-D and
   * 2-D; the other channels of dst keep their values */
  gf_err e = {0};
  twin d = rnd(4, 3, 2048, 8, 8);
  const int64_t cs[] = {384, 320, 192, 1152}, off[] = {0, 384, 704, 896};
  for (int i = 0; i < 4; i++) {
    twin s = rnd(4, 3, cs[i], 8, 8);
    REQUIRE(gf_copy_channels(&cpu, &s.h, &d.h, off[i], &e) == GF_OK);
    CHECKF(gf_copy_channels(&gpu, &s.d, &d.d, off[i], &e) == GF_OK, "%s",
           e.msg);
    twin_free(&s);
  }
  CHECKF(kt_diff_bytes(&d.d, &d.h) == 0, "copy_channels 4-D");
  twin d2 = rnd(2, 5, 9, 1, 1), s2d = rnd(2, 5, 3, 1, 1);
  REQUIRE(gf_copy_channels(&cpu, &s2d.h, &d2.h, 6, &e) == GF_OK);
  CHECKF(gf_copy_channels(&gpu, &s2d.d, &d2.d, 6, &e) == GF_OK, "%s", e.msg);
  CHECKF(kt_diff_bytes(&d2.d, &d2.h) == 0, "copy_channels 2-D");
  /* a bad offset is refused before the device is touched */
  CHECK(gf_copy_channels(&gpu, &s2d.d, &d2.d, 7, &e) == GF_EINVAL);
  twin_free(&d);
  twin_free(&d2);
  twin_free(&s2d);
}

/* Deterministic mode: the same backward twice gives the same bits. */
static void test_deterministic(void) {
  gf_err e = {0};
  gpu.deterministic = 1;
  gf_conv_params p = {{2, 2}, {1, 1}, {0, 0}};
  twin x = rnd(4, 64, 64, 16, 16), w = rnd(4, 128, 64, 4, 4);
  twin dy = rnd(4, 64, 128, 8, 8), dw = rnd(4, 128, 64, 4, 4);
  twin dx = rnd(4, 64, 64, 16, 16), dw2 = rnd(4, 128, 64, 4, 4);
  gf_tensor first = kt_tensor(4, 128, 64, 4, 4);
  gf_tensor first2 = kt_tensor(4, 128, 64, 4, 4);
  gf_tensor firstx = kt_tensor(4, 64, 64, 16, 16);
  for (int rep = 0; rep < 3; rep++) {
    CHECKF(gf_conv2d_bwd(&gpu, &x.d, &w.d, &dy.d, &p, &dx.d, &dw.d, NULL,
                         GF_OVERWRITE, &e) == GF_OK, "%s", e.msg);
    /* the transposed conv of dy back to x's shape: its weight gradient */
    CHECKF(gf_deconv2d_bwd(&gpu, &dy.d, &w.d, &x.d, &p, NULL, &dw2.d, NULL,
                           GF_OVERWRITE, &e) == GF_OK, "%s", e.msg);
    if (rep == 0) {
      gf_tensor h = kt_to_host(&dw.d), hx = kt_to_host(&dx.d);
      gf_tensor h2 = kt_to_host(&dw2.d);
      memcpy(first.data, h.data, gf_tensor_nbytes(&h));
      memcpy(firstx.data, hx.data, gf_tensor_nbytes(&hx));
      memcpy(first2.data, h2.data, gf_tensor_nbytes(&h2));
      gf_tensor_free(&h);
      gf_tensor_free(&hx);
      gf_tensor_free(&h2);
    } else {
      CHECKF(kt_diff_bytes(&dw.d, &first) == 0, "conv dw rep %d differs", rep);
      CHECKF(kt_diff_bytes(&dx.d, &firstx) == 0, "conv dx rep %d differs",
             rep);
      CHECKF(kt_diff_bytes(&dw2.d, &first2) == 0, "deconv dw rep %d differs",
             rep);
    }
  }
  gf_tensor_free(&first);
  gf_tensor_free(&firstx);
  gf_tensor_free(&first2);
  gpu.deterministic = 0;
  twin *all[] = {&x, &w, &dy, &dw, &dx, &dw2};
  for (size_t i = 0; i < 6; i++) twin_free(all[i]);
}

/* TF32 tensor-core math: within the TF32 tolerance of the f32 CPU. */
static void test_tf32(void) {
  gf_err e = {0};
  gpu.allow_tf32 = 1;
  gf_conv_params p = {{2, 2}, {1, 1}, {0, 0}};
  twin x = rnd(4, 32, 64, 16, 16), w = rnd(4, 128, 64, 4, 4);
  twin y = rnd(4, 32, 128, 8, 8);
  twin lx = rnd(2, 64, 256, 1, 1), lw = rnd(2, 128, 256, 1, 1);
  twin ly = rnd(2, 64, 128, 1, 1);
  REQUIRE(gf_conv2d_fwd(&cpu, &x.h, &w.h, NULL, &p, &y.h, &e) == GF_OK);
  CHECKF(gf_conv2d_fwd(&gpu, &x.d, &w.d, NULL, &p, &y.d, &e) == GF_OK, "%s",
         e.msg);
  /* sums of 1024 products of values in [-1, 1]: scale the tolerance */
  kt_tol t = {KT_TOL_TF32.atol * 16, KT_TOL_TF32.rtol};
  same("tf32 conv", &y, t);
  REQUIRE(gf_linear_fwd(&cpu, &lx.h, &lw.h, NULL, &ly.h, &e) == GF_OK);
  CHECKF(gf_linear_fwd(&gpu, &lx.d, &lw.d, NULL, &ly.d, &e) == GF_OK, "%s",
         e.msg);
  same("tf32 linear", &ly, t);
  gpu.allow_tf32 = 0;
  twin *all[] = {&x, &w, &y, &lx, &lw, &ly};
  for (size_t i = 0; i < 6; i++) twin_free(all[i]);
}

int main(void) {
  kt_cuda_ctx_or_skip(&gpu);
  gf_err e = {0};
  gf_ctx_config cc = {GF_BACKEND_CPU, 2, 0, GF_CPU_LAYOUT_AUTO};
  REQUIRE(gf_ctx_init(&cpu, &cc, &e) == GF_OK);
  test_linear();
  test_conv();
  test_bn();
  test_bn_sync();
  test_act();
  test_dropout();
  test_bce();
  test_adam();
  test_fill_copy();
  test_pool_resize_concat();
  test_deterministic();
  test_tf32();
  gf_err se = {0};
  CHECKF(gf_ctx_sync(&gpu, &se) == GF_OK, "%s", se.msg);
  gf_ctx_stats st = gf_ctx_get_stats(&gpu);
  CHECK(st.cached_primitives > 0 && st.primitive_hits > 0);
  gf_ctx_free(&gpu);
  gf_ctx_free(&cpu);
  return check_report();
}
