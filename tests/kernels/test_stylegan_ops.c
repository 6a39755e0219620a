/* test_stylegan_ops.c - the CPU StyleGAN2 layers (gf_bias_act_fwd / _bwd,
 * gf_mbstd_fwd / _bwd, gf_noise_add_fwd / _bwd) against PyTorch's numbers
 * (golden/stylegan_ops.safetensors, written by
 * golden/make_stylegan_ops_golden.py; no Python needed here), against
 * plain loops written here from the formulas of ops.h, at 1 and 4
 * threads, and their argument checks.
 *
 * Against PyTorch (each run prints the worst difference per quantity):
 *   bias_act y and dx (linear and leaky ReLU, with and without clamp, with
 *   and without bias, [N,C] and NCHW), noise y and dx     bit-exact
 *   bias_act db     |d| <= 2^-22 sum over its terms of |dx| (PyTorch sums
 *                   in f32, the op in double lanes)
 *   noise dstrength |d| <= 2^-22 sum |dy noise|
 *   mbstd y         x's channels bit-exact; the statistic within 2^-21 of
 *                   itself (8 ulp; PyTorch's f32 steps, the op's double)
 *   mbstd dx        |d| <= 2^-23 |dx| + 2^-21 max |dx - dy| of the case
 *                   (the statistic's term, in f32 through PyTorch's steps)
 * Each comparison is shown to fire: the golden moved by one ulp (bit-exact
 * ones) or by a few times the allowance (the others) in one element must
 * fail it.
 * Against the loops here: bit-exact (the sums in the lane order of
 * reduce_order.h, written as one loop per lane), at sizes above the
 * threading threshold (GF_PAR_MIN) and with planes and batches longer than
 * the 256 lanes, with the same bits at 1 and 4 threads; in place (y = x,
 * dx = dy), dx or db alone, GF_ACCUMULATE.
 * Argument checks: NULLs, activation and parameters, ranks and shapes,
 * group sizes and channel counts that do not divide, dtype, device,
 * overlaps (GF_EINVAL / GF_EUNSUPPORTED), empty batches (GF_OK, a zeroed
 * parameter gradient).
 * The mbstd tangents (gf_mbstd_jvp, gf_mbstd_bwd_jvp) against central
 * differences of a double model of the forward and backward: within 1e-5
 * of the largest tangent, 1 and 4 threads the same bits, a direction
 * 0.1% off shown to fail; their argument checks.
 * Argument 1: the golden file (default GF_STYLEGAN_OPS_GOLDEN, the source
 * tree's, from CMake). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_golden.h"
#include "kt_util.h"

#ifndef GF_STYLEGAN_OPS_GOLDEN
#define GF_STYLEGAN_OPS_GOLDEN "stylegan_ops.safetensors"
#endif

/* kt_misses's tolerance arguments for "any bit difference is a miss". */
#define EXACT -1.0, 0.0, 0.0, NULL
#define LANES 256 /* reduce_order.h's GF_RED_LANES */

/* ---- helpers ------------------------------------------------------------- */

static const char *label(char buf[64], const char *pre, const char *what) {
  int k = snprintf(buf, 64, "%s.%s", pre, what);
  REQUIRE(k > 0 && k < 64);
  return buf;
}

/* Within the per-element allowance tol against PyTorch, and the comparison
 * shown to fire: want with its largest-allowance element moved by four
 * allowances must miss. */
static void near_fires(const char *what, const gf_tensor *got,
                       const gf_tensor *want, const double *tol) {
  KT_VS_TORCH(what, got, want, 0.0, 0.0, 0.0, tol);
  gf_tensor w = kt_clone(want);
  float *p = w.data;
  size_t n = (size_t)gf_tensor_numel(&w), i = 0;
  for (size_t j = 1; j < n; j++)
    if (tol[j] > tol[i]) i = j;
  p[i] = (float)((double)p[i] + 4.0 * tol[i]);
  CHECKF(kt_misses(what, got, &w, 0.0, 0.0, 0.0, tol, false) == 1,
         "%s: a change of four allowances went unnoticed", what);
  gf_tensor_free(&w);
}

/* [N, C, S] of an [N,C] or [N,C,H,W] tensor. */
static void ncs(const gf_tensor *t, int64_t *N, int64_t *C, int64_t *S) {
  *N = t->shape[0];
  *C = t->shape[1];
  *S = t->ndim == 4 ? t->shape[2] * t->shape[3] : 1;
}

/* ---- the formulas of ops.h as plain loops -------------------------------- */

/* The lane sum of reduce_order.h over t[0..n), one loop per lane. */
static double ref_lanes(const double *t, int64_t n) {
  double p[LANES];
  for (int j = 0; j < LANES; j++) {
    p[j] = 0.0;
    for (int64_t i = j; i < n; i += LANES) p[j] += t[i];
  }
  for (int h = LANES / 2; h > 0; h >>= 1)
    for (int j = 0; j < h; j++) p[j] += p[j + h];
  return p[0];
}

typedef struct ba_params {
  int act;
  float alpha, gain, clamp;
} ba_params;

static void ref_ba_fwd(const float *x, const float *b, float *y, int64_t N,
                       int64_t C, int64_t S, ba_params q) {
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t s = 0; s < S; s++) {
        int64_t i = (n * C + c) * S + s;
        float t = x[i];
        if (b) t = t + b[c];
        if (q.act == GF_BIAS_ACT_LRELU && t <= 0.0f) t = t * q.alpha;
        t = t * q.gain;
        if (q.clamp >= 0.0f) t = fminf(fmaxf(t, -q.clamp), q.clamp);
        y[i] = t;
      }
}

/* dx and db (overwritten) of bias_act; dx may be dy. */
static void ref_ba_bwd(const float *y, const float *dy, float *dx, float *db,
                       int64_t N, int64_t C, int64_t S, ba_params q) {
  double *terms = kt_dzeros((size_t)(S > N ? S : N));
  double *P = kt_dzeros((size_t)(N * C));
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++) {
      for (int64_t s = 0; s < S; s++) {
        int64_t i = (n * C + c) * S + s;
        float g = dy[i];
        if (q.clamp >= 0.0f && !(fabsf(y[i]) < q.clamp)) g = 0.0f;
        g = g * q.gain;
        if (q.act == GF_BIAS_ACT_LRELU && !(y[i] > 0.0f)) g = g * q.alpha;
        dx[i] = g;
        terms[s] = g;
      }
      P[n * C + c] = ref_lanes(terms, S);
    }
  for (int64_t c = 0; c < C; c++) {
    for (int64_t n = 0; n < N; n++) terms[n] = P[n * C + c];
    db[c] = (float)ref_lanes(terms, N);
  }
  free(terms);
  free(P);
}

/* mu and sd of the G values x[(g M + m) C HW + off], g < G. */
static double ref_sd(const float *x, int64_t off, int64_t step, int64_t G,
                     double *mu) {
  double s = 0.0, s2 = 0.0;
  for (int64_t g = 0; g < G; g++) s += x[off + g * step];
  *mu = s / (double)G;
  for (int64_t g = 0; g < G; g++) {
    double d = x[off + g * step] - *mu;
    double sq = d * d;
    s2 += sq;
  }
  return sqrt(s2 / (double)G + 1e-8);
}

static void ref_mbstd_fwd(const float *x, float *y, int64_t N, int64_t C,
                          int64_t HW, int64_t G, int64_t F) {
  int64_t M = N / G, cF = C / F, K = cF * HW, CY = C + F;
  double *sd = kt_dzeros((size_t)K);
  for (int64_t n = 0; n < N; n++)
    memcpy(y + n * CY * HW, x + n * C * HW, (size_t)(C * HW) * sizeof(float));
  for (int64_t m = 0; m < M; m++)
    for (int64_t f = 0; f < F; f++) {
      for (int64_t k = 0; k < K; k++) {
        double mu;
        sd[k] = ref_sd(x, (m * C + f * cF) * HW + k, M * C * HW, G, &mu);
      }
      float stat = (float)(ref_lanes(sd, K) / (double)K);
      for (int64_t g = 0; g < G; g++)
        for (int64_t p = 0; p < HW; p++)
          y[((g * M + m) * CY + C + f) * HW + p] = stat;
    }
  free(sd);
}

static void ref_mbstd_bwd(const float *x, const float *dy, float *dx, int64_t N,
                          int64_t C, int64_t HW, int64_t G, int64_t F) {
  int64_t M = N / G, cF = C / F, K = cF * HW, CY = C + F;
  double *t = kt_dzeros((size_t)(G * HW));
  for (int64_t m = 0; m < M; m++)
    for (int64_t f = 0; f < F; f++) {
      for (int64_t g = 0; g < G; g++)
        for (int64_t p = 0; p < HW; p++)
          t[g * HW + p] = dy[((g * M + m) * CY + C + f) * HW + p];
      double D = ref_lanes(t, G * HW);
      for (int64_t c = f * cF; c < (f + 1) * cF; c++)
        for (int64_t p = 0; p < HW; p++) {
          double mu;
          double sd = ref_sd(x, (m * C + c) * HW + p, M * C * HW, G, &mu);
          for (int64_t g = 0; g < G; g++) {
            int64_t n = g * M + m;
            double u = x[(n * C + c) * HW + p] - mu;
            double term = D / (double)(G * K) * u / sd;
            dx[(n * C + c) * HW + p] = (float)(dy[(n * CY + c) * HW + p] +
                                               term);
          }
        }
    }
  free(t);
}

static void ref_noise_fwd(const float *x, const float *z, float s, float *y,
                          int64_t N, int64_t C, int64_t HW) {
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++)
      for (int64_t p = 0; p < HW; p++) {
        float t = z[n * HW + p] * s;
        y[(n * C + c) * HW + p] = x[(n * C + c) * HW + p] + t;
      }
}

static float ref_noise_ds(const float *dy, const float *z, int64_t N, int64_t C,
                          int64_t HW) {
  double *t = kt_dzeros((size_t)HW), *P = kt_dzeros((size_t)(N * C));
  for (int64_t n = 0; n < N; n++)
    for (int64_t c = 0; c < C; c++) {
      for (int64_t p = 0; p < HW; p++)
        t[p] = (double)dy[(n * C + c) * HW + p] * (double)z[n * HW + p];
      P[n * C + c] = ref_lanes(t, HW);
    }
  float r = (float)ref_lanes(P, N * C);
  free(t);
  free(P);
  return r;
}

/* ---- against PyTorch ----------------------------------------------------- */

static ba_params ba_params_of(const gf_tensor *p) {
  const float *v = p->data;
  ba_params q = {(int)v[0], v[1], v[2], v[3]};
  return q;
}

static void test_ba_golden(gf_ctx *ctx, const gf_st_file *f, const char *pre,
                           bool bias) {
  char lb[64];
  gf_tensor x = kt_gold_at(f, pre, "x", 0), dy = kt_gold_at(f, pre, "dy", 0);
  gf_tensor ty = kt_gold_at(f, pre, "y", 0), tdx = kt_gold_at(f, pre, "dx", 0);
  gf_tensor pt = kt_gold_at(f, pre, "p", 0);
  gf_tensor b = {0}, tdb = {0};
  if (bias) {
    b = kt_gold_at(f, pre, "b", 0);
    tdb = kt_gold_at(f, pre, "db", 0);
  }
  const gf_tensor *bp = bias ? &b : NULL;
  ba_params q = ba_params_of(&pt);
  int64_t N, C, S;
  ncs(&x, &N, &C, &S);
  gf_err e = {0};
  gf_tensor y = kt_garbage_like(&ty);
  CHECKF(gf_bias_act_fwd(ctx, &x, bp, q.act, q.alpha, q.gain, q.clamp, &y,
                         &e) == GF_OK,
         "%s", e.msg);
  KT_EXACT_FIRES(label(lb, pre, "y"), &y, &ty);
  gf_tensor xi = kt_clone(&x); /* in place: y = x */
  CHECKF(gf_bias_act_fwd(ctx, &xi, bp, q.act, q.alpha, q.gain, q.clamp, &xi,
                         &e) == GF_OK,
         "%s", e.msg);
  CHECK(kt_same_bits(&xi, &ty));

  gf_tensor dx = kt_garbage_like(&tdx), db = {0};
  if (bias) db = kt_garbage_like(&tdb);
  CHECKF(gf_bias_act_bwd(ctx, &ty, q.act, q.alpha, q.gain, q.clamp, &dy, &dx,
                         bias ? &db : NULL, GF_OVERWRITE, &e) == GF_OK,
         "%s", e.msg);
  KT_EXACT_FIRES(label(lb, pre, "dx"), &dx, &tdx);
  if (bias) {
    /* allowance: 2^-22 of the channel's sum of |dx| */
    double *tol = kt_dzeros((size_t)C);
    const float *d = tdx.data;
    for (int64_t i = 0; i < N * C * S; i++)
      tol[(i / S) % C] += fabs((double)d[i]) * 0x1p-22;
    near_fires(label(lb, pre, "db"), &db, &tdb, tol);
    free(tol);
    /* the loops: dx and db bit for bit */
    gf_tensor rdx = kt_clone(&tdx), rdb = kt_clone(&tdb);
    ref_ba_bwd(ty.data, dy.data, rdx.data, rdb.data, N, C, S, q);
    CHECK(kt_same_bits(&dx, &rdx) && kt_same_bits(&db, &rdb));
    /* db alone, accumulated onto db0 in f32 */
    gf_tensor acc = kt_clone(&tdb), want = kt_clone(&tdb);
    float *a = acc.data, *w = want.data;
    const float *r = rdb.data;
    for (int64_t c = 0; c < C; c++) {
      a[c] = 0.25f * (float)c - 1.0f;
      w[c] = a[c] + r[c];
    }
    CHECKF(gf_bias_act_bwd(ctx, &ty, q.act, q.alpha, q.gain, q.clamp, &dy, NULL,
                           &acc, GF_ACCUMULATE, &e) == GF_OK,
           "%s", e.msg);
    CHECK(kt_same_bits(&acc, &want));
    /* in place: dx = dy, with db */
    gf_tensor g2 = kt_clone(&dy), db2 = kt_garbage_like(&tdb);
    CHECKF(gf_bias_act_bwd(ctx, &ty, q.act, q.alpha, q.gain, q.clamp, &g2, &g2,
                           &db2, GF_OVERWRITE, &e) == GF_OK,
           "%s", e.msg);
    CHECK(kt_same_bits(&g2, &tdx) && kt_same_bits(&db2, &rdb));
    gf_tensor *all[] = {&rdx, &rdb, &acc, &want, &g2, &db2};
    for (size_t i = 0; i < 6; i++) gf_tensor_free(all[i]);
  }
  gf_tensor *all[] = {&x, &dy, &ty, &tdx, &pt, &b, &tdb, &y, &xi, &dx, &db};
  for (size_t i = 0; i < 11; i++) gf_tensor_free(all[i]);
}

static void test_mbstd_golden(gf_ctx *ctx, const gf_st_file *f,
                              const char *pre) {
  char lb[64];
  gf_tensor x = kt_gold_at(f, pre, "x", 0), dy = kt_gold_at(f, pre, "dy", 0);
  gf_tensor ty = kt_gold_at(f, pre, "y", 0), tdx = kt_gold_at(f, pre, "dx", 0);
  gf_tensor pt = kt_gold_at(f, pre, "p", 0);
  const float *pv = pt.data;
  int gs = (int)pv[0], nf = (int)pv[1];
  int64_t N = x.shape[0], C = x.shape[1], HW = x.shape[2] * x.shape[3];
  int64_t G = gs < N ? gs : N, CY = C + nf;
  gf_err e = {0};
  gf_tensor y = kt_garbage_like(&ty);
  CHECKF(gf_mbstd_fwd(ctx, &x, gs, nf, &y, &e) == GF_OK, "%s", e.msg);
  /* x's channels exact (allowance 0), the statistic within 2^-21 of it */
  double *tol = kt_dzeros((size_t)(N * CY * HW));
  const float *t = ty.data;
  for (int64_t i = 0; i < N * CY * HW; i++)
    if ((i / HW) % CY >= C) tol[i] = fabs((double)t[i]) * 0x1p-21;
  near_fires(label(lb, pre, "y"), &y, &ty, tol);
  gf_tensor ry = kt_clone(&ty);
  ref_mbstd_fwd(x.data, ry.data, N, C, HW, G, nf);
  CHECK(kt_same_bits(&y, &ry));

  gf_tensor dx = kt_garbage_like(&tdx);
  CHECKF(gf_mbstd_bwd(ctx, &x, gs, nf, &dy, &dx, &e) == GF_OK, "%s", e.msg);
  /* 2^-23 |dx| + 2^-21 max |dx - dy| */
  double tmax = 0.0;
  const float *td = tdx.data, *g = dy.data;
  for (int64_t n = 0; n < N; n++)
    for (int64_t i = 0; i < C * HW; i++)
      tmax = fmax(tmax, fabs((double)td[n * C * HW + i] -
                             (double)g[n * CY * HW + i]));
  double *tol2 = kt_dzeros((size_t)(N * C * HW));
  for (int64_t i = 0; i < N * C * HW; i++)
    tol2[i] = fabs((double)td[i]) * 0x1p-23 + tmax * 0x1p-21;
  near_fires(label(lb, pre, "dx"), &dx, &tdx, tol2);
  gf_tensor rdx = kt_clone(&tdx);
  ref_mbstd_bwd(x.data, dy.data, rdx.data, N, C, HW, G, nf);
  CHECK(kt_same_bits(&dx, &rdx));
  free(tol);
  free(tol2);
  gf_tensor *all[] = {&x, &dy, &ty, &tdx, &pt, &y, &ry, &dx, &rdx};
  for (size_t i = 0; i < 9; i++) gf_tensor_free(all[i]);
}

static void test_noise_golden(gf_ctx *ctx, const gf_st_file *f,
                              const char *pre) {
  char lb[64];
  gf_tensor x = kt_gold_at(f, pre, "x", 0), z = kt_gold_at(f, pre, "noise", 0);
  gf_tensor s = kt_gold_at(f, pre, "strength", 0),
            dy = kt_gold_at(f, pre, "dy", 0);
  gf_tensor ty = kt_gold_at(f, pre, "y", 0), tdx = kt_gold_at(f, pre, "dx", 0);
  gf_tensor tds = kt_gold_at(f, pre, "dstrength", 0);
  int64_t N = x.shape[0], C = x.shape[1], HW = x.shape[2] * x.shape[3];
  gf_err e = {0};
  gf_tensor y = kt_garbage_like(&ty);
  CHECKF(gf_noise_add_fwd(ctx, &x, &z, &s, &y, &e) == GF_OK, "%s", e.msg);
  KT_EXACT_FIRES(label(lb, pre, "y"), &y, &ty);
  gf_tensor xi = kt_clone(&x); /* in place */
  CHECKF(gf_noise_add_fwd(ctx, &xi, &z, &s, &xi, &e) == GF_OK, "%s", e.msg);
  CHECK(kt_same_bits(&xi, &ty));

  gf_tensor dx = kt_garbage_like(&tdx), ds = kt_garbage_like(&tds);
  CHECKF(gf_noise_add_bwd(ctx, &z, &dy, &dx, &ds, GF_OVERWRITE, &e) == GF_OK,
         "%s", e.msg);
  KT_EXACT_FIRES(label(lb, pre, "dx"), &dx, &tdx);
  double tol = 0.0;
  const float *g = dy.data, *zz = z.data;
  for (int64_t i = 0; i < N * C * HW; i++)
    tol += fabs((double)g[i] * (double)zz[(i / (C * HW)) * HW + i % HW]);
  tol *= 0x1p-22;
  near_fires(label(lb, pre, "dstrength"), &ds, &tds, &tol);
  float want = ref_noise_ds(dy.data, z.data, N, C, HW);
  CHECK(memcmp(ds.data, &want, sizeof want) == 0);
  /* accumulate, dx = dy (nothing to copy) and dx NULL */
  *(float *)ds.data = 0.5f;
  gf_tensor g2 = kt_clone(&dy);
  CHECKF(gf_noise_add_bwd(ctx, &z, &g2, &g2, &ds, GF_ACCUMULATE, &e) == GF_OK,
         "%s", e.msg);
  float acc = 0.5f + want;
  CHECK(memcmp(ds.data, &acc, sizeof acc) == 0 && kt_same_bits(&g2, &dy));
  CHECK(gf_noise_add_bwd(ctx, &z, &dy, NULL, &ds, GF_OVERWRITE, &e) == GF_OK);
  CHECK(memcmp(ds.data, &want, sizeof want) == 0);
  gf_tensor dx2 = kt_garbage_like(&tdx); /* dx alone: a copy */
  CHECK(gf_noise_add_bwd(ctx, &z, &dy, &dx2, NULL, GF_OVERWRITE, &e) == GF_OK);
  CHECK(kt_same_bits(&dx2, &dy));
  gf_tensor *all[] = {&x, &z,  &s,  &dy, &ty, &tdx, &tds,
                      &y, &xi, &dx, &ds, &g2, &dx2};
  for (size_t i = 0; i < 13; i++) gf_tensor_free(all[i]);
}

/* ---- against the loops, 1 and 4 threads ---------------------------------- */

static void test_ba_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  /* N, C, H, W (H = 0: [N, C]); act, alpha, gain, clamp; bias */
  struct {
    int64_t N, C, H, W;
    ba_params q;
    bool bias;
  } cases[] = {
      {4, 16, 33, 20, {GF_BIAS_ACT_LRELU, 0.2f, 1.41421354f, 2.0f}, true},
      {8, 64, 9, 11, {GF_BIAS_ACT_LINEAR, 0.0f, 1.0f, -1.0f}, true},
      {1000, 40, 0, 0, {GF_BIAS_ACT_LRELU, 0.2f, 1.41421354f, -1.0f}, true},
      {300, 130, 0, 0, {GF_BIAS_ACT_LINEAR, 0.0f, 0.5f, 1.0f}, true},
      {2, 48, 20, 21, {GF_BIAS_ACT_LRELU, 0.0f, 2.0f, 256.0f}, false},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int64_t N = cases[k].N, C = cases[k].C, H = cases[k].H, W = cases[k].W;
    int64_t S = H ? H * W : 1;
    ba_params q = cases[k].q;
    int nd = H ? 4 : 2;
    gf_tensor x = kt_tensor(nd, N, C, H, W), b = kt_tensor(1, C, 1, 1, 1);
    gf_tensor y = kt_tensor(nd, N, C, H, W), y4 = kt_tensor(nd, N, C, H, W);
    gf_tensor ry = kt_tensor(nd, N, C, H, W), dy = kt_tensor(nd, N, C, H, W);
    gf_tensor dx = kt_tensor(nd, N, C, H, W), dx4 = kt_tensor(nd, N, C, H, W);
    gf_tensor rdx = kt_tensor(nd, N, C, H, W);
    gf_tensor db = kt_tensor(1, C, 1, 1, 1), db4 = kt_tensor(1, C, 1, 1, 1);
    gf_tensor rdb = kt_tensor(1, C, 1, 1, 1);
    kt_fill(&x, rng, -3.0, 3.0, 0.0);
    kt_fill(&b, rng, -1.0, 1.0, 0.0);
    kt_fill(&dy, rng, -1.0, 1.0, 0.0);
    kt_neg_zero_every(&dy, 13);
    const gf_tensor *bp = cases[k].bias ? &b : NULL;
    gf_err e = {0};
    CHECK(gf_bias_act_fwd(ctx, &x, bp, q.act, q.alpha, q.gain, q.clamp, &y,
                          &e) == GF_OK);
    CHECK(gf_bias_act_fwd(ctx4, &x, bp, q.act, q.alpha, q.gain, q.clamp, &y4,
                          &e) == GF_OK);
    ref_ba_fwd(x.data, bp ? b.data : NULL, ry.data, N, C, S, q);
    CHECKF(kt_same_bits(&y, &ry) && kt_same_bits(&y4, &ry),
           "bias_act fwd case %zu", k);
    CHECK(gf_bias_act_bwd(ctx, &y, q.act, q.alpha, q.gain, q.clamp, &dy, &dx,
                          &db, GF_OVERWRITE, &e) == GF_OK);
    CHECK(gf_bias_act_bwd(ctx4, &y, q.act, q.alpha, q.gain, q.clamp, &dy, &dx4,
                          &db4, GF_OVERWRITE, &e) == GF_OK);
    ref_ba_bwd(ry.data, dy.data, rdx.data, rdb.data, N, C, S, q);
    CHECKF(kt_same_bits(&dx, &rdx) && kt_same_bits(&dx4, &rdx) &&
               kt_same_bits(&db, &rdb) && kt_same_bits(&db4, &rdb),
           "bias_act bwd case %zu", k);
    /* dx alone: the same bits */
    gf_tensor dx1 = kt_tensor(nd, N, C, H, W);
    CHECK(gf_bias_act_bwd(ctx4, &y, q.act, q.alpha, q.gain, q.clamp, &dy, &dx1,
                          NULL, GF_OVERWRITE, &e) == GF_OK);
    CHECK(kt_same_bits(&dx1, &rdx));
    gf_tensor *all[] = {&x,   &b,   &y,  &y4,  &ry,  &dy, &dx,
                        &dx4, &rdx, &db, &db4, &rdb, &dx1};
    for (size_t i = 0; i < 13; i++) gf_tensor_free(all[i]);
  }
}

static void test_mbstd_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  /* N, C, H, W, group_size, F */
  int64_t cases[][6] = {{16, 32, 8, 8, 4, 1},
                        {12, 96, 5, 7, 3, 4},
                        {64, 48, 4, 4, 4, 2},
                        {6, 16, 20, 20, 8, 1}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int64_t N = cases[k][0], C = cases[k][1], H = cases[k][2], W = cases[k][3];
    int gs = (int)cases[k][4], nf = (int)cases[k][5];
    int64_t G = gs < N ? gs : N;
    gf_tensor x = kt_tensor(4, N, C, H, W), y = kt_tensor(4, N, C + nf, H, W);
    gf_tensor y4 = kt_tensor(4, N, C + nf, H, W);
    gf_tensor ry = kt_tensor(4, N, C + nf, H, W);
    gf_tensor dy = kt_tensor(4, N, C + nf, H, W);
    gf_tensor dx = kt_tensor(4, N, C, H, W), dx4 = kt_tensor(4, N, C, H, W);
    gf_tensor rdx = kt_tensor(4, N, C, H, W);
    kt_fill(&x, rng, -2.0, 3.0, 0.0);
    kt_fill(&dy, rng, -1.0, 1.0, 0.0);
    gf_err e = {0};
    CHECKF(gf_mbstd_fwd(ctx, &x, gs, nf, &y, &e) == GF_OK, "%s", e.msg);
    CHECK(gf_mbstd_fwd(ctx4, &x, gs, nf, &y4, &e) == GF_OK);
    ref_mbstd_fwd(x.data, ry.data, N, C, H * W, G, nf);
    CHECKF(kt_same_bits(&y, &ry) && kt_same_bits(&y4, &ry),
           "mbstd fwd case %zu", k);
    CHECK(gf_mbstd_bwd(ctx, &x, gs, nf, &dy, &dx, &e) == GF_OK);
    CHECK(gf_mbstd_bwd(ctx4, &x, gs, nf, &dy, &dx4, &e) == GF_OK);
    ref_mbstd_bwd(x.data, dy.data, rdx.data, N, C, H * W, G, nf);
    CHECKF(kt_same_bits(&dx, &rdx) && kt_same_bits(&dx4, &rdx),
           "mbstd bwd case %zu", k);
    gf_tensor *all[] = {&x, &y, &y4, &ry, &dy, &dx, &dx4, &rdx};
    for (size_t i = 0; i < 8; i++) gf_tensor_free(all[i]);
  }
}

static void test_noise_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t N = 8, C = 16, H = 24, W = 20, HW = H * W;
  gf_tensor x = kt_tensor(4, N, C, H, W), z = kt_tensor(4, N, 1, H, W);
  gf_tensor s = kt_tensor(1, 1, 1, 1, 1), y = kt_tensor(4, N, C, H, W);
  gf_tensor ry = kt_tensor(4, N, C, H, W), dy = kt_tensor(4, N, C, H, W);
  gf_tensor ds = kt_tensor(1, 1, 1, 1, 1), ds4 = kt_tensor(1, 1, 1, 1, 1);
  kt_fill(&x, rng, -2.0, 2.0, 0.0);
  kt_fill(&z, rng, -2.0, 2.0, 0.0);
  kt_fill(&dy, rng, -1.0, 1.0, 0.0);
  *(float *)s.data = -0.0625f;
  gf_err e = {0};
  ref_noise_fwd(x.data, z.data, -0.0625f, ry.data, N, C, HW);
  CHECK(gf_noise_add_fwd(ctx, &x, &z, &s, &y, &e) == GF_OK);
  CHECK(kt_same_bits(&y, &ry));
  CHECK(gf_noise_add_fwd(ctx4, &x, &z, &s, &x, &e) == GF_OK); /* in place */
  CHECK(kt_same_bits(&x, &ry));
  CHECK(gf_noise_add_bwd(ctx, &z, &dy, NULL, &ds, GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_noise_add_bwd(ctx4, &z, &dy, NULL, &ds4, GF_OVERWRITE, &e) == GF_OK);
  float want = ref_noise_ds(dy.data, z.data, N, C, HW);
  CHECK(memcmp(ds.data, &want, 4) == 0 && memcmp(ds4.data, &want, 4) == 0);
  gf_tensor *all[] = {&x, &z, &s, &y, &ry, &dy, &ds, &ds4};
  for (size_t i = 0; i < 8; i++) gf_tensor_free(all[i]);
}

/* ---- argument errors ----------------------------------------------------- */

static void test_ba_errors(gf_ctx *ctx) {
  gf_err e = {0};
  const int L = GF_BIAS_ACT_LRELU, I = GF_BIAS_ACT_LINEAR;
  gf_tensor x = kt_tensor(4, 2, 3, 4, 5), y = kt_tensor(4, 2, 3, 4, 5);
  gf_tensor b = kt_tensor(1, 3, 1, 1, 1), b4 = kt_tensor(1, 4, 1, 1, 1);
  gf_tensor x3 = kt_tensor(3, 2, 3, 20, 1), y9 = kt_tensor(4, 2, 3, 4, 4);
  gf_tensor dx = kt_tensor(4, 2, 3, 4, 5), db = kt_tensor(1, 3, 1, 1, 1);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, 0.2f, 1.4f, 256.0f, &y, &e) == GF_OK);
  CHECK(gf_bias_act_fwd(ctx, &x, NULL, I, 0.0f, 1.0f, -1.0f, &y, &e) == GF_OK);
  CHECK(gf_bias_act_fwd(NULL, &x, &b, L, 0.2f, 1.4f, 1.0f, &y, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, NULL, &b, L, 0.2f, 1.4f, 1.0f, &y, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, 0.2f, 1.4f, 1.0f, NULL, &e) ==
        GF_EINVAL);
  /* parameters */
  CHECK(gf_bias_act_fwd(ctx, &x, &b, 2, 0.2f, 1.4f, 1.0f, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "unknown activation") != NULL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, 0.2f, 0.0f, 1.0f, &y, &e) == GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, 0.2f, -1.0f, 1.0f, &y, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, I, 0.2f, -1.0f, 1.0f, &y, &e) == GF_OK);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, I, 0.2f, INFINITY, 1.0f, &y, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, -0.2f, 1.4f, 1.0f, &y, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, NAN, 1.4f, 1.0f, &y, &e) == GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, I, NAN, 1.0f, 1.0f, &y, &e) == GF_OK);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, 0.2f, 1.4f, NAN, &y, &e) == GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, 0.2f, 1.4f, INFINITY, &y, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, 0.2f, 1.4f, -INFINITY, &y, &e) ==
        GF_OK);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, 0.2f, 1.4f, 0.0f, &y, &e) == GF_OK);
  /* shapes, dtype, device */
  CHECK(gf_bias_act_fwd(ctx, &x, &b4, L, 0.2f, 1.4f, 1.0f, &y, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &x3, &b, L, 0.2f, 1.4f, 1.0f, &x3, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "[N,C] or [N,C,H,W]") != NULL);
  CHECK(gf_bias_act_fwd(ctx, &x, &b, L, 0.2f, 1.4f, 1.0f, &y9, &e) ==
        GF_EINVAL);
  gf_tensor f16 = x;
  f16.dtype = GF_F16;
  CHECK(gf_bias_act_fwd(ctx, &f16, &b, L, 0.2f, 1.4f, 1.0f, &y, &e) ==
        GF_EUNSUPPORTED);
  gf_tensor bdev = b;
  bdev.device = GF_DEV_CUDA;
  CHECK(gf_bias_act_fwd(ctx, &x, &bdev, L, 0.2f, 1.4f, 1.0f, &y, &e) ==
        GF_EINVAL);
  /* overlaps: y partly over x, y over b */
  gf_tensor big = kt_tensor(1, 200, 1, 1, 1);
  gf_tensor v0 = kt_view_at(&big, 0, 2, (int64_t[]){4, 3});
  gf_tensor v1 = kt_view_at(&big, 1, 2, (int64_t[]){4, 3});
  gf_tensor vb = kt_view_at(&big, 5, 1, (int64_t[]){3});
  gf_tensor w0 = kt_view_at(&big, 100, 2, (int64_t[]){4, 3});
  CHECK(gf_bias_act_fwd(ctx, &v0, NULL, L, 0.2f, 1.4f, 1.0f, &v1, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "partly overlaps") != NULL);
  CHECK(gf_bias_act_fwd(ctx, &w0, &vb, L, 0.2f, 1.4f, 1.0f, &v0, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &v0, &vb, L, 0.2f, 1.4f, 1.0f, &v0, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_fwd(ctx, &v0, NULL, L, 0.2f, 1.4f, 1.0f, &v0, &e) == GF_OK);
  /* backward */
  CHECK(gf_bias_act_bwd(ctx, &y, L, 0.2f, 1.4f, 1.0f, &x, &dx, &db,
                        GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_bias_act_bwd(ctx, &y, L, 0.2f, 1.4f, 1.0f, &x, NULL, NULL,
                        GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_bias_act_bwd(ctx, &y, L, 0.2f, 1.4f, 1.0f, &x, &dx, &db, 2, &e) ==
        GF_EINVAL);
  CHECK(gf_bias_act_bwd(ctx, &y, 5, 0.2f, 1.4f, 1.0f, &x, &dx, &db,
                        GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_bias_act_bwd(ctx, &y, L, 0.2f, 1.4f, 1.0f, NULL, &dx, &db,
                        GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_bias_act_bwd(ctx, NULL, L, 0.2f, 1.4f, 1.0f, &x, &dx, &db,
                        GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_bias_act_bwd(ctx, &y, L, 0.2f, 1.4f, 1.0f, &x, &y9, &db,
                        GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_bias_act_bwd(ctx, &y, L, 0.2f, 1.4f, 1.0f, &x, &dx, &b4,
                        GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_bias_act_bwd(ctx, &y, L, 0.2f, 1.4f, 1.0f, &x, &y, &db, GF_OVERWRITE,
                        &e) == GF_EINVAL); /* dx = y */
  CHECK(strstr(e.msg, "dx overlaps y") != NULL);
  CHECK(gf_bias_act_bwd(ctx, &w0, L, 0.2f, 1.4f, 1.0f, &v0, &v1, NULL,
                        GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "partly overlaps dy") != NULL);
  CHECK(gf_bias_act_bwd(ctx, &w0, L, 0.2f, 1.4f, 1.0f, &v0, &v0, NULL,
                        GF_OVERWRITE, &e) == GF_OK); /* dx = dy */
  CHECK(gf_bias_act_bwd(ctx, &w0, L, 0.2f, 1.4f, 1.0f, &v1, NULL, &vb,
                        GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "db overlaps") != NULL);
  /* empty batch: nothing to compute, db zeroed (overwrite) or kept */
  gf_tensor x0 = kt_tensor(4, 0, 3, 4, 5), d0 = kt_tensor(4, 0, 3, 4, 5);
  CHECK(gf_bias_act_fwd(ctx, &x0, &b, L, 0.2f, 1.4f, 1.0f, &x0, &e) == GF_OK);
  float *dbp = db.data;
  dbp[0] = dbp[1] = dbp[2] = 7.0f;
  CHECK(gf_bias_act_bwd(ctx, &x0, L, 0.2f, 1.4f, 1.0f, &x0, &d0, &db,
                        GF_ACCUMULATE, &e) == GF_OK);
  CHECK(dbp[0] == 7.0f && dbp[2] == 7.0f);
  CHECK(gf_bias_act_bwd(ctx, &x0, L, 0.2f, 1.4f, 1.0f, &x0, &d0, &db,
                        GF_OVERWRITE, &e) == GF_OK);
  CHECK(dbp[0] == 0.0f && dbp[1] == 0.0f && dbp[2] == 0.0f);
  gf_tensor *all[] = {&x, &y, &b, &b4, &x3, &y9, &dx, &db, &big, &x0, &d0};
  for (size_t i = 0; i < 11; i++) gf_tensor_free(all[i]);
}

static void test_mbstd_errors(gf_ctx *ctx) {
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, 6, 4, 3, 3), y = kt_tensor(4, 6, 5, 3, 3);
  gf_tensor y2 = kt_tensor(4, 6, 6, 3, 3), dx = kt_tensor(4, 6, 4, 3, 3);
  CHECK(gf_mbstd_fwd(ctx, &x, 3, 1, &y, &e) == GF_OK);
  CHECK(gf_mbstd_fwd(ctx, &x, 6, 1, &y, &e) == GF_OK);
  CHECK(gf_mbstd_fwd(ctx, &x, 100, 1, &y, &e) == GF_OK); /* G = N = 6 */
  CHECK(gf_mbstd_fwd(ctx, &x, 2, 2, &y2, &e) == GF_OK);
  CHECK(gf_mbstd_fwd(ctx, &x, 4, 1, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "does not divide the batch") != NULL);
  CHECK(gf_mbstd_fwd(ctx, &x, 3, 3, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "does not divide the 4 channels") != NULL);
  CHECK(gf_mbstd_fwd(ctx, &x, 0, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_mbstd_fwd(ctx, &x, 3, 0, &y, &e) == GF_EINVAL);
  CHECK(gf_mbstd_fwd(ctx, &x, 3, 2, &y, &e) == GF_EINVAL); /* y needs C+2 */
  CHECK(strstr(e.msg, "expected [6,6,3,3]") != NULL);
  CHECK(gf_mbstd_fwd(NULL, &x, 3, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_mbstd_fwd(ctx, NULL, 3, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_mbstd_fwd(ctx, &x, 3, 1, NULL, &e) == GF_EINVAL);
  gf_tensor x2 = kt_tensor(2, 6, 36, 1, 1);
  CHECK(gf_mbstd_fwd(ctx, &x2, 3, 1, &y, &e) == GF_EINVAL);
  gf_tensor f16 = x;
  f16.dtype = GF_F16;
  CHECK(gf_mbstd_fwd(ctx, &f16, 3, 1, &y, &e) == GF_EUNSUPPORTED);
  gf_tensor big = kt_tensor(1, 600, 1, 1, 1);
  gf_tensor xv = kt_view_at(&big, 0, 4, (int64_t[]){6, 4, 3, 3});
  gf_tensor yv = kt_view_at(&big, 100, 4, (int64_t[]){6, 5, 3, 3});
  CHECK(gf_mbstd_fwd(ctx, &xv, 3, 1, &yv, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps") != NULL);
  /* backward */
  CHECK(gf_mbstd_bwd(ctx, &x, 3, 1, &y, &dx, &e) == GF_OK);
  CHECK(gf_mbstd_bwd(ctx, &x, 3, 1, &y2, &dx, &e) == GF_EINVAL);
  CHECK(gf_mbstd_bwd(ctx, &x, 3, 1, &y, &y, &e) == GF_EINVAL);
  CHECK(gf_mbstd_bwd(ctx, &x, 3, 1, &y, NULL, &e) == GF_EINVAL);
  CHECK(gf_mbstd_bwd(ctx, &x, 4, 1, &y, &dx, &e) == GF_EINVAL);
  CHECK(gf_mbstd_bwd(ctx, &x, 3, 1, &yv, &xv, &e) == GF_EINVAL);
  CHECK(gf_mbstd_bwd(ctx, &dx, 3, 1, &y, &dx, &e) == GF_EINVAL); /* dx = x */
  /* empty C, H or W: refused; empty batch: nothing to do */
  gf_tensor xc0 = kt_tensor(4, 6, 0, 3, 3), yc0 = kt_tensor(4, 6, 1, 3, 3);
  CHECK(gf_mbstd_fwd(ctx, &xc0, 3, 1, &yc0, &e) == GF_EINVAL);
  gf_tensor x0 = kt_tensor(4, 0, 4, 3, 3), y0 = kt_tensor(4, 0, 5, 3, 3);
  CHECK(gf_mbstd_fwd(ctx, &x0, 4, 1, &y0, &e) == GF_OK);
  gf_tensor dx0 = kt_tensor(4, 0, 4, 3, 3);
  CHECK(gf_mbstd_bwd(ctx, &x0, 4, 1, &y0, &dx0, &e) == GF_OK);
  gf_tensor *all[] = {&x, &y, &y2, &dx, &x2, &big, &xc0, &yc0, &x0, &y0, &dx0};
  for (size_t i = 0; i < 11; i++) gf_tensor_free(all[i]);
}

static void test_noise_errors(gf_ctx *ctx) {
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, 2, 3, 4, 5), z = kt_tensor(4, 2, 1, 4, 5);
  gf_tensor s = kt_tensor(1, 1, 1, 1, 1), y = kt_tensor(4, 2, 3, 4, 5);
  gf_tensor z3 = kt_tensor(4, 2, 3, 4, 5), z5 = kt_tensor(4, 2, 1, 5, 4);
  gf_tensor s2 = kt_tensor(1, 2, 1, 1, 1), s11 = kt_tensor(2, 1, 1, 1, 1);
  CHECK(gf_noise_add_fwd(ctx, &x, &z, &s, &y, &e) == GF_OK);
  CHECK(gf_noise_add_fwd(ctx, &x, &z, &s11, &y, &e) == GF_OK);
  CHECK(gf_noise_add_fwd(ctx, &x, &z, &s, &x, &e) == GF_OK);
  CHECK(gf_noise_add_fwd(NULL, &x, &z, &s, &y, &e) == GF_EINVAL);
  CHECK(gf_noise_add_fwd(ctx, NULL, &z, &s, &y, &e) == GF_EINVAL);
  CHECK(gf_noise_add_fwd(ctx, &x, NULL, &s, &y, &e) == GF_EINVAL);
  CHECK(gf_noise_add_fwd(ctx, &x, &z, NULL, &y, &e) == GF_EINVAL);
  CHECK(gf_noise_add_fwd(ctx, &x, &z, &s, NULL, &e) == GF_EINVAL);
  CHECK(gf_noise_add_fwd(ctx, &x, &z3, &s, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "expected [2,1,4,5]") != NULL);
  CHECK(gf_noise_add_fwd(ctx, &x, &z5, &s, &y, &e) == GF_EINVAL);
  CHECK(gf_noise_add_fwd(ctx, &x, &z, &s2, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "1 element") != NULL);
  CHECK(gf_noise_add_fwd(ctx, &x, &z, &s, &z3, &e) == GF_OK);
  CHECK(gf_noise_add_fwd(ctx, &x, &z, &s, &z5, &e) == GF_EINVAL);
  gf_tensor sdev = s;
  sdev.device = GF_DEV_CUDA;
  CHECK(gf_noise_add_fwd(ctx, &x, &z, &sdev, &y, &e) == GF_EINVAL);
  gf_tensor f16 = z;
  f16.dtype = GF_F16;
  CHECK(gf_noise_add_fwd(ctx, &x, &f16, &s, &y, &e) == GF_EUNSUPPORTED);
  gf_tensor big = kt_tensor(1, 400, 1, 1, 1);
  gf_tensor xv = kt_view_at(&big, 0, 4, (int64_t[]){2, 3, 4, 5});
  gf_tensor yv = kt_view_at(&big, 1, 4, (int64_t[]){2, 3, 4, 5});
  gf_tensor zv = kt_view_at(&big, 200, 4, (int64_t[]){2, 1, 4, 5});
  gf_tensor sv = kt_view_at(&big, 5, 1, (int64_t[]){1});
  gf_tensor yw = kt_view_at(&big, 190, 4, (int64_t[]){2, 3, 4, 5});
  CHECK(gf_noise_add_fwd(ctx, &xv, &zv, &s, &yv, &e) == GF_EINVAL);
  CHECK(gf_noise_add_fwd(ctx, &x, &zv, &s, &yw, &e) == GF_EINVAL);
  CHECK(gf_noise_add_fwd(ctx, &xv, &z, &sv, &xv, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps noise or strength") != NULL);
  CHECK(gf_noise_add_fwd(ctx, &xv, &zv, &s, &xv, &e) == GF_OK);
  /* backward */
  gf_tensor dx = kt_tensor(4, 2, 3, 4, 5), ds = kt_tensor(1, 1, 1, 1, 1);
  CHECK(gf_noise_add_bwd(ctx, &z, &y, &dx, &ds, GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_noise_add_bwd(ctx, &z, &y, NULL, NULL, GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_noise_add_bwd(ctx, &z, &y, &dx, &ds, 7, &e) == GF_EINVAL);
  CHECK(gf_noise_add_bwd(ctx, NULL, &y, &dx, &ds, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_noise_add_bwd(ctx, &z, NULL, &dx, &ds, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_noise_add_bwd(ctx, &z5, &y, &dx, &ds, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(gf_noise_add_bwd(ctx, &z, &y, &z5, &ds, GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_noise_add_bwd(ctx, &z, &y, &dx, &s2, GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_noise_add_bwd(ctx, &z, &xv, &yv, NULL, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "partly overlaps dy") != NULL);
  CHECK(gf_noise_add_bwd(ctx, &zv, &x, &yw, NULL, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "dx overlaps noise") != NULL);
  CHECK(gf_noise_add_bwd(ctx, &z, &xv, &xv, &sv, GF_OVERWRITE, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "dstrength overlaps") != NULL);
  CHECK(gf_noise_add_bwd(ctx, &z, &xv, &xv, &ds, GF_OVERWRITE, &e) == GF_OK);
  /* empty batch: dstrength zeroed (overwrite) or kept (accumulate) */
  gf_tensor x0 = kt_tensor(4, 0, 3, 4, 5), z0 = kt_tensor(4, 0, 1, 4, 5);
  CHECK(gf_noise_add_fwd(ctx, &x0, &z0, &s, &x0, &e) == GF_OK);
  *(float *)ds.data = 3.0f;
  CHECK(gf_noise_add_bwd(ctx, &z0, &x0, &x0, &ds, GF_ACCUMULATE, &e) == GF_OK);
  CHECK(*(float *)ds.data == 3.0f);
  CHECK(gf_noise_add_bwd(ctx, &z0, &x0, NULL, &ds, GF_OVERWRITE, &e) == GF_OK);
  CHECK(*(float *)ds.data == 0.0f);
  gf_tensor *all[] = {&x,   &z,   &s,  &y,  &z3, &z5, &s2,
                      &s11, &big, &dx, &ds, &x0, &z0};
  for (size_t i = 0; i < 13; i++) gf_tensor_free(all[i]);
}

/* ---- mbstd tangents: against central differences of a double model ---- */

/* The mbstd statistic of group m, slice f, and the backward's dx, in
 * double from double inputs (the formulas of ops.h without roundings). */
static double dbl_stat(const double *x, int64_t m, int64_t f, int64_t M,
                       int64_t C, int64_t HW, int64_t G, int64_t F) {
  int64_t cF = C / F, K = cF * HW;
  double s = 0;
  for (int64_t k = 0; k < K; k++) {
    int64_t off = (m * C + f * cF) * HW + k;
    double mu = 0, v = 0;
    for (int64_t g = 0; g < G; g++) mu += x[off + g * M * C * HW];
    mu /= (double)G;
    for (int64_t g = 0; g < G; g++) {
      double u = x[off + g * M * C * HW] - mu;
      v += u * u;
    }
    s += sqrt(v / (double)G + 1e-8);
  }
  return s / (double)K;
}

static void dbl_bwd(const double *x, const double *dy, double *dx, int64_t N,
                    int64_t C, int64_t HW, int64_t G, int64_t F) {
  int64_t M = N / G, cF = C / F, K = cF * HW, CY = C + F;
  for (int64_t m = 0; m < M; m++)
    for (int64_t f = 0; f < F; f++) {
      double D = 0;
      for (int64_t g = 0; g < G; g++)
        for (int64_t p = 0; p < HW; p++)
          D += dy[((g * M + m) * CY + C + f) * HW + p];
      for (int64_t k = 0; k < K; k++) {
        int64_t off = (m * C + f * cF) * HW + k, c = f * cF + k / HW,
                p = k % HW;
        double mu = 0, v = 0;
        for (int64_t g = 0; g < G; g++) mu += x[off + g * M * C * HW];
        mu /= (double)G;
        for (int64_t g = 0; g < G; g++) {
          double u = x[off + g * M * C * HW] - mu;
          v += u * u;
        }
        double sd = sqrt(v / (double)G + 1e-8);
        for (int64_t g = 0; g < G; g++) {
          int64_t n = g * M + m;
          dx[off + g * M * C * HW] =
              dy[(n * CY + c) * HW + p] +
              D / (double)(G * K) * (x[off + g * M * C * HW] - mu) / sd;
        }
      }
    }
}

/* gf_mbstd_jvp and gf_mbstd_bwd_jvp against central differences (step
 * 1e-5, double) of the double model along (xdot, dydot): |d| <= 1e-5
 * max|tangent| + 1e-6; 1 and 4 threads the same bits. Shown to fire: the
 * tangents are compared against a direction scaled by 1.001 too, which
 * must fail. */
static void test_mbstd_jvp(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t cases[][6] = {{4, 16, 4, 4, 2, 1}, {6, 8, 3, 5, 3, 2},
                        {16, 32, 4, 4, 4, 1}, {2, 300, 3, 3, 2, 3}};
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    int64_t N = cases[k][0], C = cases[k][1], H = cases[k][2], W = cases[k][3];
    int gs = (int)cases[k][4], nf = (int)cases[k][5];
    int64_t G = gs < N ? gs : N, HW = H * W, M = N / G, CY = C + nf;
    gf_tensor x = kt_tensor(4, N, C, H, W), xd = kt_tensor(4, N, C, H, W);
    gf_tensor dy = kt_tensor(4, N, CY, H, W), dyd = kt_tensor(4, N, CY, H, W);
    gf_tensor yd = kt_tensor(4, N, CY, H, W), yd4 = kt_tensor(4, N, CY, H, W);
    gf_tensor dxd = kt_tensor(4, N, C, H, W), dxd4 = kt_tensor(4, N, C, H, W);
    kt_fill(&x, rng, -2.0, 3.0, 0.0);
    kt_fill(&xd, rng, -1.0, 1.0, 0.0);
    kt_fill(&dy, rng, -1.0, 1.0, 0.0);
    kt_fill(&dyd, rng, -1.0, 1.0, 0.0);
    gf_err e = {0};
    CHECKF(gf_mbstd_jvp(ctx, &x, &xd, gs, nf, &yd, &e) == GF_OK, "%s", e.msg);
    CHECK(gf_mbstd_jvp(ctx4, &x, &xd, gs, nf, &yd4, &e) == GF_OK);
    CHECKF(kt_same_bits(&yd, &yd4), "mbstd jvp 1 vs 4 threads, case %zu", k);
    CHECKF(gf_mbstd_bwd_jvp(ctx, &x, &xd, gs, nf, &dy, &dyd, &dxd, &e) ==
           GF_OK, "%s", e.msg);
    CHECK(gf_mbstd_bwd_jvp(ctx4, &x, &xd, gs, nf, &dy, &dyd, &dxd4, &e) ==
          GF_OK);
    CHECKF(kt_same_bits(&dxd, &dxd4), "mbstd bwd jvp 1 vs 4 threads, case %zu",
           k);
    size_t nx = (size_t)(N * C * HW), ny = (size_t)(N * CY * HW);
    double *xp = kt_dzeros(nx), *xm = kt_dzeros(nx), *dyp = kt_dzeros(ny),
           *dym = kt_dzeros(ny), *bp = kt_dzeros(nx), *bm = kt_dzeros(nx);
    const float *X = x.data, *XD = xd.data, *DY = dy.data, *DYD = dyd.data;
    const double h = 1e-5;
    for (int fire = 0; fire < 2; fire++) {
      double sc = fire ? 1.001 : 1.0; /* the direction the FD runs along */
      for (size_t i = 0; i < nx; i++) {
        xp[i] = X[i] + h * sc * XD[i];
        xm[i] = X[i] - h * sc * XD[i];
      }
      for (size_t i = 0; i < ny; i++) {
        dyp[i] = DY[i] + h * sc * DYD[i];
        dym[i] = DY[i] - h * sc * DYD[i];
      }
      /* ydot: x's channels are xdot; the statistic's channel */
      long bad = 0;
      double tmax = 0;
      for (int64_t m = 0; m < M; m++)
        for (int64_t f = 0; f < nf; f++) {
          double fd = (dbl_stat(xp, m, f, M, C, HW, G, nf) -
                       dbl_stat(xm, m, f, M, C, HW, G, nf)) / (2 * h);
          double got = ((float *)yd.data)[(m * CY + C + f) * HW];
          if (fabs(fd) > tmax) tmax = fabs(fd);
          if (!(fabs(got - fd) <= 1e-5 * fabs(fd) + 1e-7)) bad++;
        }
      for (int64_t n = 0; n < N; n++)
        bad += memcmp((float *)yd.data + n * CY * HW, XD + n * C * HW,
                      (size_t)(C * HW) * sizeof(float)) != 0 && !fire;
      dbl_bwd(xp, dyp, bp, N, C, HW, G, nf);
      dbl_bwd(xm, dym, bm, N, C, HW, G, nf);
      double dmax = 0;
      for (size_t i = 0; i < nx; i++)
        if (fabs(bp[i] - bm[i]) / (2 * h) > dmax)
          dmax = fabs(bp[i] - bm[i]) / (2 * h);
      for (size_t i = 0; i < nx; i++) {
        double fd = (bp[i] - bm[i]) / (2 * h);
        double got = ((float *)dxd.data)[i];
        if (!(fabs(got - fd) <= 1e-5 * dmax + 1e-7)) bad++;
      }
      if (fire)
        CHECKF(bad > 0, "mbstd jvp case %zu: a direction 0.1%% off passes",
               k);
      else
        CHECKF(bad == 0, "mbstd jvp case %zu: %ld values off the finite "
               "differences", k, bad);
    }
    free(xp), free(xm), free(dyp), free(dym), free(bp), free(bm);
    gf_tensor *all[] = {&x, &xd, &dy, &dyd, &yd, &yd4, &dxd, &dxd4};
    for (size_t i = 0; i < 8; i++) gf_tensor_free(all[i]);
  }
  /* argument checks */
  gf_err e = {0};
  gf_tensor x = kt_tensor(4, 6, 4, 3, 3), y = kt_tensor(4, 6, 5, 3, 3);
  gf_tensor y2 = kt_tensor(4, 6, 6, 3, 3), dx = kt_tensor(4, 6, 4, 3, 3);
  gf_tensor xd = kt_tensor(4, 6, 4, 3, 3), dyd = kt_tensor(4, 6, 5, 3, 3);
  CHECK(gf_mbstd_jvp(ctx, &x, &xd, 3, 1, &y, &e) == GF_OK);
  CHECK(gf_mbstd_jvp(ctx, &x, &xd, 4, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_mbstd_jvp(ctx, &x, &xd, 3, 1, &y2, &e) == GF_EINVAL);
  CHECK(gf_mbstd_jvp(ctx, &x, &y, 3, 1, &y2, &e) == GF_EINVAL);
  CHECK(gf_mbstd_jvp(ctx, &x, NULL, 3, 1, &y, &e) == GF_EINVAL);
  CHECK(gf_mbstd_jvp(ctx, &x, &xd, 3, 1, &x, &e) == GF_EINVAL);
  CHECK(gf_mbstd_bwd_jvp(ctx, &x, &xd, 3, 1, &y, &dyd, &dx, &e) == GF_OK);
  CHECK(gf_mbstd_bwd_jvp(ctx, &x, &xd, 3, 1, &y, &y2, &dx, &e) == GF_EINVAL);
  CHECK(gf_mbstd_bwd_jvp(ctx, &x, &xd, 3, 1, &y, &dyd, &xd, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps") != NULL);
  CHECK(gf_mbstd_bwd_jvp(ctx, &x, &xd, 3, 1, &y, NULL, &dx, &e) ==
        GF_EINVAL);
  CHECK(gf_mbstd_bwd_jvp(ctx, &x, &xd, 3, 2, &y, &dyd, &dx, &e) ==
        GF_EINVAL);
  gf_tensor x0 = kt_tensor(4, 0, 4, 3, 3), y0 = kt_tensor(4, 0, 5, 3, 3);
  CHECK(gf_mbstd_jvp(ctx, &x0, &x0, 4, 1, &y0, &e) == GF_OK);
  gf_tensor *all[] = {&x, &y, &y2, &dx, &xd, &dyd, &x0, &y0};
  for (size_t i = 0; i < 8; i++) gf_tensor_free(all[i]);
}

int main(int argc, char **argv) {
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_STYLEGAN_OPS_GOLDEN);
  gf_ctx ctx, ctx4;
  kt_cpu_ctx(&ctx, 1);
  kt_cpu_ctx(&ctx4, 4);
  kt_rng rng = {20261207};
  test_ba_golden(&ctx, &f, "ba_lin2", true);
  test_ba_golden(&ctx4, &f, "ba_lrelu4", true);
  test_ba_golden(&ctx, &f, "ba_lrelu4c", true);
  test_ba_golden(&ctx4, &f, "ba_lin4c", true);
  test_ba_golden(&ctx, &f, "ba_lrelu2c", true);
  test_ba_golden(&ctx4, &f, "ba_nob4", false);
  test_mbstd_golden(&ctx, &f, "mb1");
  test_mbstd_golden(&ctx4, &f, "mb2");
  test_mbstd_golden(&ctx, &f, "mb3");
  test_mbstd_golden(&ctx4, &f, "mb4");
  test_noise_golden(&ctx, &f, "nz1");
  test_noise_golden(&ctx4, &f, "nz2");
  test_ba_large(&ctx, &ctx4, &rng);
  test_mbstd_large(&ctx, &ctx4, &rng);
  test_mbstd_jvp(&ctx, &ctx4, &rng);
  test_noise_large(&ctx, &ctx4, &rng);
  test_ba_errors(&ctx);
  test_mbstd_errors(&ctx);
  test_noise_errors(&ctx);
  gf_ctx_free(&ctx);
  gf_ctx_free(&ctx4);
  gf_st_file_free(&f);
  return check_report();
}
