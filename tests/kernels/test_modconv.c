/* test_modconv.c - the CPU modulated-convolution ops (gf_modconv_weight_fwd
 * / _bwd, gf_conv2d_batched_fwd / _bwd) against PyTorch's numbers
 * (golden/modconv.safetensors, written by golden/make_modconv_golden.py;
 * no Python needed here), against plain loops written here from the
 * formulas of ops.h, at 1 and 4 threads, and their argument checks.
 *
 * gf_modconv_demod_jvp (the demodulated modulation's tangents) against
 * central differences of a double model: within 1e-5 of each quantity's
 * max, 1 and 4 threads the same bits, a direction 0.1% off shown to fail,
 * argument checks.
 * Against PyTorch (f32 on both sides; each run prints the worst difference
 * per quantity; cases syn3: 3x3 pad 1 demodulated on 8x8, rgb1: 1x1 pad 0
 * not demodulated on 8x8, rect: 3x2 pad (1,0) demodulated on 6x10; N = 3,
 * Cin = 5, Cout = 4, eps = 1e-8):
 *   wmod, dcoef       |d| <= 8 ulp of |t| (our d is 1/sqrt of a double sum
 *                     rounded once; PyTorch's an f32 sum, sqrt and division)
 *   rgb1's wmod       bit-exact (one f32 product on both sides), dcoef = 1
 *   y, dx, dwmod      |d| <= 2^-20 max|t| (oneDNN's f32 sums in another
 *                     order than PyTorch's, ~50 terms)
 *   dw, ds            |d| <= 2^-20 max|t| (our double sums vs PyTorch's
 *                     autograd in f32; the demodulation's ws c term is a
 *                     difference of nearly equal terms)
 * each from PyTorch's own inputs for that op (its wmod into the
 * convolution, its dwmod into the weight backward), and y once more end to
 * end from our wmod. Each comparison is shown to fire: the golden moved by
 * twice its tolerance in one element must fail it (one ulp for the
 * bit-exact one). A demodulated wmod has rows of unit norm (within 2^-20).
 * Against the loops here (the formulas of ops.h, the lane sums of
 * reduce_order.h): the weight ops bit-exact, at a size above the threading
 * threshold, with the same bits at 1 and 4 threads, with and without
 * demodulation, GF_ACCUMULATE = the old dw plus the overwritten one, and a
 * directional finite-difference check of dw and ds (h = 2^-7, atol 1e-3 +
 * rtol 1e-3). The batched convolution against a double per-sample
 * reference (ref_ops.c) at atol 1e-4 + rtol 1e-4 (inputs in [-1, 1],
 * weights in [-0.5, 0.5]), at 1 and 4 threads (test_conv.c asserts no bit
 * equality across thread counts for oneDNN's convolution, and neither does
 * this: it prints whether they agree), with stride 2, 1x1, N = 1.
 * Argument checks: NULL rules, ranks and shapes (Cin of s vs w, N of s vs
 * wmod, N of x vs wmod, Cout of y), demodulate and eps, dtype
 * (GF_EUNSUPPORTED), device, overlaps (GF_EINVAL), empty batches (GF_OK),
 * frozen inference (GF_EUNSUPPORTED).
 * Argument 1: the golden file (default GF_MODCONV_GOLDEN, the source
 * tree's, from CMake). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kt_golden.h"
#include "kt_modconv.h"
#include "kt_util.h"
#include "ref_ops.h"

#ifndef GF_MODCONV_GOLDEN
#define GF_MODCONV_GOLDEN "modconv.safetensors"
#endif

/* kt_misses's tolerance arguments (atol, rtol, srel). */
#define EXACT -1.0, 0.0, 0.0
#define TOL_WMOD 0.0, 8 * 0x1p-24, 0.0
#define TOL_CONV 0.0, 0.0, 0x1p-20
#define TOL_WGRAD 0.0, 0.0, 0x1p-20
/* against the double conv reference, as test_conv.c */
#define REF_A 1e-4
#define REF_R 1e-4
#define FD_H 0.0078125
#define FD_A 1e-3
#define FD_R 1e-3
#define LANES 256 /* reduce_order.h's GF_RED_LANES */

/* ---- helpers ------------------------------------------------------------- */

/* An owned tensor of t's shape holding a value no op here produces (the
 * ops must overwrite every element). */
#define JUNK(t) kt_garbage_like(t)

/* got against PyTorch's want within (atol, rtol, srel), and the comparison
 * shown to fire: want moved by twice the tolerance in one element (one ulp
 * when atol < 0: bit-exact) must miss exactly there. */
static void vs_torch_fires(const char *what, const gf_tensor *got,
                           const gf_tensor *want, double atol, double rtol,
                           double srel) {
  KT_VS_TORCH(what, got, want, atol, rtol, srel, NULL);
  gf_tensor w = kt_clone(want);
  float *p = w.data;
  const float *g = got->data;
  size_t n = (size_t)gf_tensor_numel(&w), i = n / 2;
  double tmax = 0.0;
  for (size_t k = 0; k < n; k++) tmax = fmax(tmax, fabs((double)p[k]));
  if (atol < 0) {
    p[i] = nextafterf(g[i], INFINITY);
  } else {
    double tol = atol + rtol * fabs((double)g[i]) + srel * tmax;
    p[i] = (float)((double)g[i] + 2.0 * tol + 1e-30);
  }
  CHECKF(kt_misses(what, got, &w, atol, rtol, srel, NULL, false) == 1,
         "%s: a change of twice the tolerance went unnoticed", what);
  gf_tensor_free(&w);
}

/* ---- the formulas of ops.h as plain loops -------------------------------- */

/* reduce_order.h's lane sum of t[0..n): lane j adds t[j], t[j + L], ...
 * from 0.0, then p[j] += p[j + h] for h = L/2 .. 1. */
static double lane_sum(const double *t, int64_t n) {
  double p[LANES];
  for (int j = 0; j < LANES; j++) {
    p[j] = 0.0;
    for (int64_t k = j; k < n; k += LANES) p[j] += t[k];
  }
  for (int h = LANES / 2; h >= 1; h /= 2)
    for (int j = 0; j < h; j++) p[j] += p[j + h];
  return p[0];
}

typedef struct mc_dims {
  int64_t N, Cin, Cout, kh, kw;
} mc_dims;

static mc_dims dims_of(const gf_tensor *w, const gf_tensor *s) {
  mc_dims d = {s->shape[0], w->shape[1], w->shape[0], w->shape[2], w->shape[3]};
  return d;
}

/* ws = w s for row (n, o), element k. */
static float ws_at(const float *w, const float *s, mc_dims d, int64_t n,
                   int64_t o, int64_t k) {
  int64_t K = d.Cin * d.kh * d.kw;
  return w[o * K + k] * s[n * d.Cin + k / (d.kh * d.kw)];
}

static void ref_weight_fwd(const gf_tensor *w, const gf_tensor *s, int demod,
                           float eps, float *wmod, float *dcoef) {
  mc_dims d = dims_of(w, s);
  int64_t K = d.Cin * d.kh * d.kw;
  double *t = malloc(sizeof(double) * (size_t)K);
  REQUIRE(t);
  for (int64_t n = 0; n < d.N; n++)
    for (int64_t o = 0; o < d.Cout; o++) {
      for (int64_t k = 0; k < K; k++) {
        double v = ws_at(w->data, s->data, d, n, o, k);
        t[k] = v * v;
      }
      float c = 1.0f;
      if (demod) c = (float)(1.0 / sqrt(lane_sum(t, K) + (double)eps));
      for (int64_t k = 0; k < K; k++) {
        float v = ws_at(w->data, s->data, d, n, o, k);
        wmod[(n * d.Cout + o) * K + k] = demod ? v * c : v;
      }
      dcoef[n * d.Cout + o] = c;
    }
  free(t);
}

/* dw (overwritten) and ds from g = dwmod, as ops.h writes them. */
static void ref_weight_bwd(const gf_tensor *w, const gf_tensor *s, int demod,
                           const float *dcoef, const float *g, float *dw,
                           float *ds) {
  mc_dims d = dims_of(w, s);
  int64_t khw = d.kh * d.kw, K = d.Cin * khw;
  const float *W = w->data, *S = s->data;
  size_t nb = (size_t)(d.N * d.Cout * K);
  float *gws = malloc(sizeof(float) * (nb ? nb : 1));
  double *t = malloc(sizeof(double) *
                     (size_t)(K > d.Cout * khw ? K : d.Cout * khw));
  REQUIRE(gws && t);
  for (int64_t n = 0; n < d.N; n++)
    for (int64_t o = 0; o < d.Cout; o++) {
      const float *gr = g + (n * d.Cout + o) * K;
      float *out = gws + (n * d.Cout + o) * K;
      if (!demod) {
        memcpy(out, gr, sizeof(float) * (size_t)K);
        continue;
      }
      for (int64_t k = 0; k < K; k++)
        t[k] = (double)gr[k] * (double)ws_at(W, S, d, n, o, k);
      double G = lane_sum(t, K), dd = dcoef[n * d.Cout + o];
      float c = (float)(((dd * dd) * dd) * G), dc = (float)dd;
      for (int64_t k = 0; k < K; k++) {
        float a = gr[k] * dc, b = ws_at(W, S, d, n, o, k) * c;
        out[k] = a - b;
      }
    }
  for (int64_t o = 0; o < d.Cout; o++)
    for (int64_t k = 0; k < K; k++) {
      double sum = 0.0;
      for (int64_t n = 0; n < d.N; n++)
        sum += (double)gws[(n * d.Cout + o) * K + k] *
               (double)S[n * d.Cin + k / khw];
      dw[o * K + k] = (float)sum;
    }
  for (int64_t n = 0; n < d.N; n++)
    for (int64_t i = 0; i < d.Cin; i++) {
      for (int64_t o = 0; o < d.Cout; o++)
        for (int64_t ab = 0; ab < khw; ab++)
          t[o * khw + ab] = (double)gws[(n * d.Cout + o) * K + i * khw + ab] *
                            (double)W[o * K + i * khw + ab];
      ds[n * d.Cin + i] = (float)lane_sum(t, d.Cout * khw);
    }
  free(gws);
  free(t);
}

/* ---- against PyTorch ----------------------------------------------------- */

static void test_golden(gf_ctx *ctx, const gf_st_file *f, const char *pre) {
  gf_tensor t[MC_NT];
  for (int i = 0; i < MC_NT; i++)
    t[i] = kt_gold_at(f, pre, kt_mc_names[i], 0);
  kt_mc_cfg c = kt_mc_cfg_of(t[MC_CFG].data);
  int demod = c.demod;
  gf_conv_params p = c.p;
  float eps = c.eps;
  char lbl[64];
  gf_err e = {0};
#define LBL(what) kt_label(lbl, sizeof lbl, pre, what)

  /* weights */
  gf_tensor wm = JUNK(&t[MC_WMOD]), dc = JUNK(&t[MC_DCOEF]);
  CHECKF(gf_modconv_weight_fwd(ctx, &t[MC_W], &t[MC_S], demod, eps, &wm, &dc,
                               &e) == GF_OK,
         "%s: %s", pre, e.msg);
  if (demod) {
    vs_torch_fires(LBL("wmod"), &wm, &t[MC_WMOD], TOL_WMOD);
    vs_torch_fires(LBL("dcoef"), &dc, &t[MC_DCOEF], TOL_WMOD);
    /* rows of unit norm */
    int64_t rows = wm.shape[0], K = gf_tensor_numel(&wm) / rows;
    const float *m = wm.data;
    double worst = 0.0;
    for (int64_t r = 0; r < rows; r++) {
      double q = 0.0;
      for (int64_t k = 0; k < K; k++) q += (double)m[r * K + k] * m[r * K + k];
      worst = fmax(worst, fabs(sqrt(q) - 1.0));
    }
    CHECKF(worst <= 0x1p-20, "%s: a demodulated row's norm is 1 +- %g", pre,
           worst);
  } else {
    vs_torch_fires(LBL("wmod"), &wm, &t[MC_WMOD], EXACT);
    vs_torch_fires(LBL("dcoef"), &dc, &t[MC_DCOEF], EXACT);
  }

  /* the convolution, from PyTorch's wmod; end to end from ours */
  gf_tensor y = JUNK(&t[MC_Y]);
  CHECKF(gf_conv2d_batched_fwd(ctx, &t[MC_X], &t[MC_WMOD], &p, &y, &e) == GF_OK,
         "%s: %s", pre, e.msg);
  vs_torch_fires(LBL("y"), &y, &t[MC_Y], TOL_CONV);
  CHECKF(gf_conv2d_batched_fwd(ctx, &t[MC_X], &wm, &p, &y, &e) == GF_OK,
         "%s: %s", pre, e.msg);
  KT_VS_TORCH(LBL("y end to end"), &y, &t[MC_Y], TOL_CONV, NULL);
  gf_tensor dx = JUNK(&t[MC_DX]), dwm = JUNK(&t[MC_DWMOD]);
  CHECKF(gf_conv2d_batched_bwd(ctx, &t[MC_X], &t[MC_WMOD], &t[MC_G], &p, &dx,
                               &dwm, &e) == GF_OK,
         "%s: %s", pre, e.msg);
  vs_torch_fires(LBL("dx"), &dx, &t[MC_DX], TOL_CONV);
  vs_torch_fires(LBL("dwmod"), &dwm, &t[MC_DWMOD], TOL_CONV);
  /* either output alone gives the same bits */
  gf_tensor dx1 = JUNK(&dx), dwm1 = JUNK(&dwm);
  CHECK(gf_conv2d_batched_bwd(ctx, &t[MC_X], &t[MC_WMOD], &t[MC_G], &p, &dx1,
                              NULL, &e) == GF_OK);
  CHECK(gf_conv2d_batched_bwd(ctx, &t[MC_X], &t[MC_WMOD], &t[MC_G], &p, NULL,
                              &dwm1, &e) == GF_OK);
  CHECK(kt_same_bits(&dx1, &dx) && kt_same_bits(&dwm1, &dwm));

  /* the weight gradients, from PyTorch's dwmod */
  gf_tensor dw = JUNK(&t[MC_DW]), ds = JUNK(&t[MC_DS]);
  CHECKF(gf_modconv_weight_bwd(ctx, &t[MC_W], &t[MC_S], demod, eps, &dc,
                               &t[MC_DWMOD], &dw, &ds, GF_OVERWRITE,
                               &e) == GF_OK,
         "%s: %s", pre, e.msg);
  vs_torch_fires(LBL("dw"), &dw, &t[MC_DW], TOL_WGRAD);
  vs_torch_fires(LBL("ds"), &ds, &t[MC_DS], TOL_WGRAD);
  /* accumulate: old + new, one f32 add (here 2 dw, exact) */
  gf_tensor dw2 = kt_clone(&dw), want2 = kt_clone(&dw);
  float *w2 = want2.data;
  for (int64_t i = 0; i < gf_tensor_numel(&want2); i++) w2[i] = 2.0f * w2[i];
  CHECK(gf_modconv_weight_bwd(ctx, &t[MC_W], &t[MC_S], demod, eps, &dc,
                              &t[MC_DWMOD], &dw2, NULL, GF_ACCUMULATE,
                              &e) == GF_OK);
  CHECKF(kt_same_bits(&dw2, &want2), "%s: dw accumulate", pre);
  /* ds alone */
  gf_tensor ds1 = JUNK(&ds);
  CHECK(gf_modconv_weight_bwd(ctx, &t[MC_W], &t[MC_S], demod, eps, &dc,
                              &t[MC_DWMOD], NULL, &ds1, GF_OVERWRITE,
                              &e) == GF_OK);
  CHECK(kt_same_bits(&ds1, &ds));
#undef LBL
  gf_tensor *all[] = {&wm,   &dc, &y,  &dx,  &dwm,   &dx1,
                      &dwm1, &dw, &ds, &dw2, &want2, &ds1};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
  for (int i = 0; i < MC_NT; i++) gf_tensor_free(&t[i]);
}

/* ---- the weight ops against the loops, 1 and 4 threads ------------------- */

static void test_weight_large(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng,
                              int demod) {
  /* rows 8 * 32 = 256 of K = 576 (not a multiple of the lanes): threaded */
  int64_t N = 8, Cin = 64, Cout = 32, kh = 3, kw = 3;
  float eps = 1e-8f;
  gf_tensor w = kt_tensor(4, Cout, Cin, kh, kw), s = kt_tensor(2, N, Cin, 1, 1);
  kt_fill(&w, rng, -1.0, 1.0, 0.0);
  kt_fill(&s, rng, 0.2, 2.0, 0.0);
  gf_tensor wm1 = kt_tensor(4, N * Cout, Cin, kh, kw), wm4 = kt_clone(&wm1);
  gf_tensor rwm = kt_clone(&wm1), g = kt_clone(&wm1);
  gf_tensor dc1 = kt_tensor(2, N, Cout, 1, 1), dc4 = kt_clone(&dc1);
  gf_tensor rdc = kt_clone(&dc1);
  kt_fill(&g, rng, -1.0, 1.0, 0.0);
  gf_err e = {0};
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, demod, eps, &wm1, &dc1, &e) ==
        GF_OK);
  CHECK(gf_modconv_weight_fwd(ctx4, &w, &s, demod, eps, &wm4, &dc4, &e) ==
        GF_OK);
  ref_weight_fwd(&w, &s, demod, eps, rwm.data, rdc.data);
  CHECKF(kt_same_bits(&wm1, &rwm) && kt_same_bits(&wm4, &rwm),
         "demod %d: wmod vs the loops, 1 / 4 threads", demod);
  CHECKF(kt_same_bits(&dc1, &rdc) && kt_same_bits(&dc4, &rdc),
         "demod %d: dcoef vs the loops", demod);

  gf_tensor dw1 = kt_clone(&w), dw4 = kt_clone(&w), rdw = kt_clone(&w);
  gf_tensor ds1 = kt_clone(&s), ds4 = kt_clone(&s), rds = kt_clone(&s);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, demod, eps, &dc1, &g, &dw1, &ds1,
                              GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_modconv_weight_bwd(ctx4, &w, &s, demod, eps, &dc1, &g, &dw4, &ds4,
                              GF_OVERWRITE, &e) == GF_OK);
  ref_weight_bwd(&w, &s, demod, rdc.data, g.data, rdw.data, rds.data);
  CHECKF(kt_same_bits(&dw1, &rdw) && kt_same_bits(&dw4, &rdw),
         "demod %d: dw vs the loops, 1 / 4 threads", demod);
  CHECKF(kt_same_bits(&ds1, &rds) && kt_same_bits(&ds4, &rds),
         "demod %d: ds vs the loops, 1 / 4 threads", demod);
  /* accumulate onto an old dw: old + new, one f32 add each */
  gf_tensor old = kt_clone(&w);
  kt_fill(&old, rng, -1.0, 1.0, 0.0);
  gf_tensor acc = kt_clone(&old), want = kt_clone(&old);
  float *wp = want.data;
  const float *rp = rdw.data;
  for (int64_t i = 0; i < gf_tensor_numel(&want); i++) wp[i] = wp[i] + rp[i];
  CHECK(gf_modconv_weight_bwd(ctx4, &w, &s, demod, eps, &dc1, &g, &acc, NULL,
                              GF_ACCUMULATE, &e) == GF_OK);
  CHECKF(kt_same_bits(&acc, &want), "demod %d: dw accumulate", demod);
  /* the loops' check fires: one ulp off in ds */
  float *rq = rds.data;
  rq[7] = nextafterf(rq[7], INFINITY);
  CHECK(!kt_same_bits(&ds1, &rds));
  gf_tensor *all[] = {&w,   &s,   &wm1, &wm4, &rwm, &g,   &dc1, &dc4, &rdc,
                      &dw1, &dw4, &rdw, &ds1, &ds4, &rds, &old, &acc, &want};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

/* ---- finite differences of the weight op --------------------------------- */

typedef struct fd_state {
  gf_ctx *ctx;
  gf_tensor *w, *s, *wm, *dc, *r;
} fd_state;

/* sum r .* wmod(w, s), demodulated. */
static double fd_loss(void *u) {
  fd_state *f = u;
  gf_err e;
  REQUIRE(gf_modconv_weight_fwd(f->ctx, f->w, f->s, 1, 1e-8f, f->wm, f->dc,
                                &e) == GF_OK);
  return kt_dot(f->wm->data, f->r->data, (size_t)gf_tensor_numel(f->wm));
}

static void test_weight_fd(gf_ctx *ctx, kt_rng *rng) {
  int64_t N = 2, Cin = 3, Cout = 4, kh = 3, kw = 2;
  gf_tensor w = kt_tensor(4, Cout, Cin, kh, kw), s = kt_tensor(2, N, Cin, 1, 1);
  gf_tensor wm = kt_tensor(4, N * Cout, Cin, kh, kw), r = kt_clone(&wm);
  gf_tensor dc = kt_tensor(2, N, Cout, 1, 1);
  kt_fill(&w, rng, -1.0, 1.0, 0.0);
  kt_fill(&s, rng, 0.5, 1.5, 0.0);
  kt_fill(&r, rng, -1.0, 1.0, 0.0);
  gf_tensor dw = kt_clone(&w), ds = kt_clone(&s);
  gf_err e = {0};
  REQUIRE(gf_modconv_weight_fwd(ctx, &w, &s, 1, 1e-8f, &wm, &dc, &e) == GF_OK);
  REQUIRE(gf_modconv_weight_bwd(ctx, &w, &s, 1, 1e-8f, &dc, &r, &dw, &ds,
                                GF_OVERWRITE, &e) == GF_OK);
  gf_tensor dc2 = kt_clone(&dc); /* the loss's own */
  fd_state st = {ctx, &w, &s, &wm, &dc2, &r};
  size_t nw = (size_t)gf_tensor_numel(&w), ns = (size_t)gf_tensor_numel(&s);
  float *dir = malloc(sizeof(float) * nw);
  REQUIRE(dir);
  kt_rademacher(dir, nw, rng);
  double fd = kt_dir_fd(fd_loss, &st, w.data, dir, nw, FD_H);
  CHECK(kt_fd_ok("fd dw", fd, kt_dot(dw.data, dir, nw), FD_A, FD_R));
  kt_rademacher(dir, ns, rng);
  fd = kt_dir_fd(fd_loss, &st, s.data, dir, ns, FD_H);
  CHECK(kt_fd_ok("fd ds", fd, kt_dot(ds.data, dir, ns), FD_A, FD_R));
  free(dir);
  gf_tensor *all[] = {&w, &s, &wm, &r, &dc, &dc2, &dw, &ds};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

/* ---- the batched convolution against the double reference --------------- */

typedef struct bconv_case {
  int N, Cin, H, W, Cout, kh, kw, sh, sw, ph, pw;
} bconv_case;

static void run_bconv(gf_ctx *ctx, gf_ctx *ctx4, const bconv_case *c,
                      kt_rng *rng) {
  char lbl[128];
  snprintf(lbl, sizeof lbl,
           "batched N%d Cin%d %dx%d Cout%d k%dx%d s%d,%d "
           "p%d,%d",
           c->N, c->Cin, c->H, c->W, c->Cout, c->kh, c->kw, c->sh, c->sw, c->ph,
           c->pw);
  ref_conv g1 = {1,     c->Cin, c->H,  c->W, c->Cout, c->kh, c->kw, c->sh,
                 c->sw, c->ph,  c->pw, 0,    0,       0,     0};
  ref_conv_out(&g1);
  gf_conv_params p = {{c->sh, c->sw}, {c->ph, c->pw}, {0, 0}};
  gf_tensor x = kt_tensor(4, c->N, c->Cin, c->H, c->W);
  gf_tensor wm = kt_tensor(4, (int64_t)c->N * c->Cout, c->Cin, c->kh, c->kw);
  gf_tensor y = kt_tensor(4, c->N, c->Cout, g1.OH, g1.OW), y4 = kt_clone(&y);
  gf_tensor dy = kt_clone(&y), dx = kt_clone(&x), dx4 = kt_clone(&x);
  gf_tensor dwm = kt_clone(&wm), dwm4 = kt_clone(&wm);
  kt_fill(&x, rng, -1, 1, 0);
  kt_fill(&wm, rng, -0.5, 0.5, 0);
  kt_fill(&dy, rng, -1, 1, 0);
  size_t nx = (size_t)gf_tensor_numel(&x), nw = (size_t)gf_tensor_numel(&wm);
  size_t ny = (size_t)gf_tensor_numel(&y);
  size_t sx = nx / c->N, sw = nw / c->N, sy = ny / c->N; /* per sample */
  double *xd = kt_dbl(&x), *wd = kt_dbl(&wm), *dyd = kt_dbl(&dy);
  double *yr = kt_dzeros(ny), *dxr = kt_dzeros(nx), *dwr = kt_dzeros(nw);
  double *dbr = kt_dzeros((size_t)c->Cout);
  for (int n = 0; n < c->N; n++) {
    ref_conv2d_fwd(&g1, xd + n * sx, wd + n * sw, NULL, yr + n * sy);
    ref_conv2d_bwd(&g1, xd + n * sx, wd + n * sw, dyd + n * sy, dxr + n * sx,
                   dwr + n * sw, dbr);
  }
  gf_err e = {0};
  CHECKF(gf_conv2d_batched_fwd(ctx, &x, &wm, &p, &y, &e) == GF_OK, "%s: %s",
         lbl, e.msg);
  CHECKF(gf_conv2d_batched_fwd(ctx4, &x, &wm, &p, &y4, &e) == GF_OK, "%s: %s",
         lbl, e.msg);
  CHECKF(kt_compare("y", y.data, yr, ny, REF_A, REF_R) == 0 &&
             kt_compare("y 4 threads", y4.data, yr, ny, REF_A, REF_R) == 0,
         "%s: forward", lbl);
  kt_fill(&dx, rng, -9, 9, 0); /* garbage: overwritten */
  kt_fill(&dwm, rng, -9, 9, 0);
  CHECKF(gf_conv2d_batched_bwd(ctx, &x, &wm, &dy, &p, &dx, &dwm, &e) == GF_OK,
         "%s: %s", lbl, e.msg);
  CHECKF(gf_conv2d_batched_bwd(ctx4, &x, &wm, &dy, &p, &dx4, &dwm4, &e) ==
             GF_OK,
         "%s: %s", lbl, e.msg);
  CHECKF(kt_compare("dx", dx.data, dxr, nx, REF_A, REF_R) == 0 &&
             kt_compare("dx 4 threads", dx4.data, dxr, nx, REF_A, REF_R) == 0,
         "%s: dx", lbl);
  CHECKF(kt_compare("dwmod", dwm.data, dwr, nw, REF_A, REF_R) == 0 &&
             kt_compare("dwmod 4 threads", dwm4.data, dwr, nw, REF_A, REF_R) ==
                 0,
         "%s: dwmod", lbl);
  printf("%s: 1 vs 4 threads: y %s, dx %s, dwmod %s\n", lbl,
         kt_same_bits(&y, &y4) ? "same bits" : "differ",
         kt_same_bits(&dx, &dx4) ? "same bits" : "differ",
         kt_same_bits(&dwm, &dwm4) ? "same bits" : "differ");
  /* the reference comparison fires */
  yr[ny / 2] += 4 * (REF_A + REF_R * fabs(yr[ny / 2]));
  CHECKF(kt_compare("y (moved)", y.data, yr, ny, REF_A, REF_R) == 1,
         "%s: a moved reference went unnoticed", lbl);
  free(xd);
  free(wd);
  free(dyd);
  free(yr);
  free(dxr);
  free(dwr);
  free(dbr);
  gf_tensor *all[] = {&x, &wm, &y, &y4, &dy, &dx, &dx4, &dwm, &dwm4};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

static const bconv_case bconv_cases[] = {
    /* N Cin H W Cout kh kw sh sw ph pw */
    {4, 8, 9, 7, 6, 3, 3, 1, 1, 1, 1},     /* synthesis layer, odd sizes */
    {3, 4, 8, 8, 5, 3, 3, 2, 2, 1, 1},     /* stride 2 */
    {5, 6, 4, 4, 3, 1, 1, 1, 1, 0, 0},     /* toRGB */
    {1, 3, 6, 5, 2, 3, 2, 1, 1, 1, 0},     /* N = 1 (a plain convolution) */
    {2, 16, 16, 16, 16, 3, 3, 1, 1, 1, 1}, /* oneDNN's blocked layouts */
};

/* ---- argument errors ----------------------------------------------------- */

static void test_weight_errors(gf_ctx *ctx) {
  gf_err e = {0};
  gf_tensor w = kt_tensor(4, 4, 5, 3, 3), s = kt_tensor(2, 3, 5, 1, 1);
  gf_tensor wm = kt_tensor(4, 12, 5, 3, 3), dc = kt_tensor(2, 3, 4, 1, 1);
  gf_tensor wm13 = kt_tensor(4, 13, 5, 3, 3), dc33 = kt_tensor(2, 3, 3, 1, 1);
  gf_tensor s4 = kt_tensor(2, 3, 4, 1, 1), s3d = kt_tensor(3, 3, 5, 1, 1);
  gf_tensor w0 = kt_tensor(4, 4, 5, 0, 3), s2 = kt_tensor(2, 2, 5, 1, 1);
  const float eps = 1e-8f;
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 1, eps, &wm, &dc, &e) == GF_OK);
  CHECK(gf_modconv_weight_fwd(NULL, &w, &s, 1, eps, &wm, &dc, &e) == GF_EINVAL);
  CHECK(gf_modconv_weight_fwd(ctx, NULL, &s, 1, eps, &wm, &dc, &e) ==
        GF_EINVAL);
  CHECK(gf_modconv_weight_fwd(ctx, &w, NULL, 1, eps, &wm, &dc, &e) ==
        GF_EINVAL);
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 1, eps, NULL, &dc, &e) == GF_EINVAL);
  /* dcoef: required when demodulating, optional otherwise (then 1) */
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 1, eps, &wm, NULL, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "dcoef is NULL") != NULL);
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 0, eps, &wm, NULL, &e) == GF_OK);
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 0, 0.0f, &wm, &dc, &e) == GF_OK);
  bool ones = true;
  for (int i = 0; i < 12; i++) ones &= ((const float *)dc.data)[i] == 1.0f;
  CHECK(ones);
  /* demodulate and eps */
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 2, eps, &wm, &dc, &e) == GF_EINVAL);
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 1, 0.0f, &wm, &dc, &e) == GF_EINVAL);
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 1, NAN, &wm, &dc, &e) == GF_EINVAL);
  /* shapes: Cin of s vs w, N of s vs wmod and dcoef, ranks, empty dims */
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s4, 1, eps, &wm, &dc, &e) == GF_EINVAL);
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s3d, 1, eps, &wm, &dc, &e) ==
        GF_EINVAL);
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 1, eps, &wm13, &dc, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "wmod has shape [13,5,3,3], expected [12,5,3,3]") !=
        NULL);
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s2, 1, eps, &wm, &dc, &e) ==
        GF_EINVAL); /* s for N = 2, wmod for N = 3 */
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 1, eps, &wm, &dc33, &e) ==
        GF_EINVAL);
  CHECK(gf_modconv_weight_fwd(ctx, &w0, &s, 1, eps, &wm, &dc, &e) == GF_EINVAL);
  /* dtype and device */
  gf_tensor f16 = w;
  f16.dtype = GF_F16;
  CHECK(gf_modconv_weight_fwd(ctx, &f16, &s, 1, eps, &wm, &dc, &e) ==
        GF_EUNSUPPORTED);
  gf_tensor sdev = s;
  sdev.device = GF_DEV_CUDA;
  CHECK(gf_modconv_weight_fwd(ctx, &w, &sdev, 1, eps, &wm, &dc, &e) ==
        GF_EINVAL);
  /* overlaps: wmod over w, dcoef over s, dcoef inside wmod */
  gf_tensor big = kt_tensor(1, 1000, 1, 1, 1);
  gf_tensor wv = kt_view_at(&big, 0, 4, (int64_t[]){4, 5, 3, 3});
  gf_tensor wmv = kt_view_at(&big, 100, 4, (int64_t[]){12, 5, 3, 3});
  CHECK(gf_modconv_weight_fwd(ctx, &wv, &s, 1, eps, &wmv, &dc, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "wmod overlaps w") != NULL);
  gf_tensor dcv = kt_view_at(&s, 2, 2, (int64_t[]){3, 4});
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 1, eps, &wm, &dcv, &e) == GF_EINVAL);
  gf_tensor dcin = kt_view_at(&wm, 5, 2, (int64_t[]){3, 4});
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s, 1, eps, &wm, &dcin, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps") != NULL);
  /* empty batch */
  gf_tensor s0 = kt_tensor(2, 0, 5, 1, 1), wm0 = kt_tensor(4, 0, 5, 3, 3);
  gf_tensor dc0 = kt_tensor(2, 0, 4, 1, 1);
  CHECK(gf_modconv_weight_fwd(ctx, &w, &s0, 1, eps, &wm0, &dc0, &e) == GF_OK);

  /* backward */
  gf_tensor dw = kt_clone(&w), ds = kt_clone(&s), g = kt_clone(&wm);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &g, &dw, &ds,
                              GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &g, NULL, NULL,
                              GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, NULL, &g, &dw, &ds,
                              GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 0, eps, NULL, &g, &dw, &ds,
                              GF_OVERWRITE, &e) == GF_OK);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, NULL, &dw, &ds,
                              GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &wm13, &dw, &ds,
                              GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc33, &g, &dw, &ds,
                              GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &g, &wm, &ds,
                              GF_OVERWRITE, &e) == GF_EINVAL); /* dw shape */
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &g, &dw, &s4,
                              GF_OVERWRITE, &e) == GF_EINVAL); /* ds shape */
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &g, &dw, &ds,
                              (gf_accum)7, &e) == GF_EINVAL);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s2, 1, eps, &dc, &g, &dw, &ds,
                              GF_OVERWRITE, &e) == GF_EINVAL);
  gf_tensor gdev = g;
  gdev.device = GF_DEV_CUDA;
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &gdev, &dw, &ds,
                              GF_OVERWRITE, &e) == GF_EINVAL);
  gf_tensor g16 = g;
  g16.dtype = GF_BF16;
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &g16, &dw, &ds,
                              GF_OVERWRITE, &e) == GF_EUNSUPPORTED);
  /* overlaps: dw inside dwmod, ds = s, dw over ds */
  gf_tensor dwin = kt_view_at(&g, 0, 4, (int64_t[]){4, 5, 3, 3});
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &g, &dwin, &ds,
                              GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "dw overlaps dwmod") != NULL);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &g, &dw, &s,
                              GF_OVERWRITE, &e) == GF_EINVAL);
  gf_tensor dsv = kt_view_at(&big, 10, 2, (int64_t[]){3, 5});
  gf_tensor dwv = kt_view_at(&big, 0, 4, (int64_t[]){4, 5, 3, 3});
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s, 1, eps, &dc, &g, &dwv, &dsv,
                              GF_OVERWRITE, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "dw overlaps ds") != NULL);
  /* empty batch: dw = 0 (overwrite), unchanged (accumulate) */
  gf_tensor g0 = kt_tensor(4, 0, 5, 3, 3);
  kt_rng r = {9};
  kt_fill(&dw, &r, 1.0, 2.0, 0.0);
  gf_tensor before = kt_clone(&dw);
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s0, 1, eps, &dc0, &g0, &dw, NULL,
                              GF_ACCUMULATE, &e) == GF_OK);
  CHECK(kt_same_bits(&dw, &before));
  CHECK(gf_modconv_weight_bwd(ctx, &w, &s0, 1, eps, &dc0, &g0, &dw, NULL,
                              GF_OVERWRITE, &e) == GF_OK);
  bool zero = true;
  for (int64_t i = 0; i < gf_tensor_numel(&dw); i++)
    zero &= ((const float *)dw.data)[i] == 0.0f;
  CHECK(zero);
  gf_tensor *all[] = {&w,   &s,  &wm, &dc,  &wm13,  &dc33, &s4,
                      &s3d, &w0, &s2, &big, &s0,    &wm0,  &dc0,
                      &dw,  &ds, &g,  &g0,  &before};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

static void test_bconv_errors(gf_ctx *ctx) {
  gf_err e = {0};
  gf_conv_params p = {{1, 1}, {1, 1}, {0, 0}};
  gf_tensor x = kt_tensor(4, 3, 5, 8, 8), wm = kt_tensor(4, 12, 5, 3, 3);
  gf_tensor y = kt_tensor(4, 3, 4, 8, 8), dx = kt_clone(&x);
  gf_tensor dwm = kt_clone(&wm);
  gf_tensor wm8 = kt_tensor(4, 8, 5, 3, 3);   /* N = 2 rows */
  gf_tensor wm4c = kt_tensor(4, 12, 4, 3, 3); /* Cin 4 */
  gf_tensor y7 = kt_tensor(4, 3, 4, 7, 8), y2 = kt_tensor(4, 2, 4, 8, 8);
  gf_tensor y3d = kt_tensor(3, 3, 4, 64, 1);
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm, &p, &y, &e) == GF_OK);
  CHECK(gf_conv2d_batched_fwd(NULL, &x, &wm, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_conv2d_batched_fwd(ctx, NULL, &wm, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_conv2d_batched_fwd(ctx, &x, NULL, &p, &y, &e) == GF_EINVAL);
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm, NULL, &y, &e) == GF_EINVAL);
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm, &p, NULL, &e) == GF_EINVAL);
  /* N of x vs wmod; Cin; output shape and rank; N of y */
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm8, &p, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "wmod has 8 rows, expected N Cout = 3 x 4") != NULL);
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm4c, &p, &y, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "channels") != NULL);
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm, &p, &y7, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "expected [3,4,8,8]") != NULL);
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm, &p, &y2, &e) == GF_EINVAL);
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm, &p, &y3d, &e) == GF_EINVAL);
  /* params: out_pad, stride */
  gf_conv_params pb = p;
  pb.out_pad[0] = 1;
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm, &pb, &y, &e) == GF_EINVAL);
  pb = p;
  pb.stride[1] = 0;
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wm, &pb, &y, &e) == GF_EINVAL);
  /* dtype, device */
  gf_tensor x16 = x;
  x16.dtype = GF_F16;
  CHECK(gf_conv2d_batched_fwd(ctx, &x16, &wm, &p, &y, &e) == GF_EUNSUPPORTED);
  gf_tensor wdev = wm;
  wdev.device = GF_DEV_CUDA;
  CHECK(gf_conv2d_batched_fwd(ctx, &x, &wdev, &p, &y, &e) == GF_EINVAL);
  /* y over x */
  gf_tensor big = kt_tensor(1, 4000, 1, 1, 1);
  gf_tensor xv = kt_view_at(&big, 0, 4, (int64_t[]){3, 5, 8, 8});
  gf_tensor yv = kt_view_at(&big, 900, 4, (int64_t[]){3, 4, 8, 8});
  CHECK(gf_conv2d_batched_fwd(ctx, &xv, &wm, &p, &yv, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "y overlaps x") != NULL);
  /* backward */
  CHECK(gf_conv2d_batched_bwd(ctx, &x, &wm, &y, &p, &dx, &dwm, &e) == GF_OK);
  CHECK(gf_conv2d_batched_bwd(ctx, &x, &wm, &y, &p, NULL, NULL, &e) == GF_OK);
  CHECK(gf_conv2d_batched_bwd(ctx, &x, &wm, NULL, &p, &dx, &dwm, &e) ==
        GF_EINVAL);
  CHECK(gf_conv2d_batched_bwd(ctx, &x, &wm, &y7, &p, &dx, &dwm, &e) ==
        GF_EINVAL);
  CHECK(gf_conv2d_batched_bwd(ctx, &x, &wm8, &y, &p, &dx, &dwm, &e) ==
        GF_EINVAL);
  CHECK(gf_conv2d_batched_bwd(ctx, &x, &wm, &y, &p, &y, &dwm, &e) ==
        GF_EINVAL); /* dx shape */
  CHECK(gf_conv2d_batched_bwd(ctx, &x, &wm, &y, &p, &dx, &wm8, &e) ==
        GF_EINVAL); /* dwmod shape */
  CHECK(gf_conv2d_batched_bwd(ctx, &x, &wm, &y, &p, &dx, &wm, &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "dwmod overlaps wmod") != NULL);
  gf_tensor dxv = kt_view_at(&big, 0, 4, (int64_t[]){3, 5, 8, 8});
  gf_tensor dwv = kt_view_at(&big, 950, 4, (int64_t[]){12, 5, 3, 3});
  CHECK(gf_conv2d_batched_bwd(ctx, &x, &wm, &y, &p, &dxv, &dwv, &e) ==
        GF_EINVAL);
  CHECK(strstr(e.msg, "dx overlaps dwmod") != NULL);
  /* empty batch */
  gf_tensor x0 = kt_tensor(4, 0, 5, 8, 8), wm0 = kt_tensor(4, 0, 5, 3, 3);
  gf_tensor y0 = kt_tensor(4, 0, 4, 8, 8);
  CHECK(gf_conv2d_batched_fwd(ctx, &x0, &wm0, &p, &y0, &e) == GF_OK);
  CHECK(gf_conv2d_batched_bwd(ctx, &x0, &wm0, &y0, &p, &x0, &wm0, &e) == GF_OK);
  gf_tensor *all[] = {&x,  &wm, &y,   &dx,  &dwm, &wm8, &wm4c,
                      &y7, &y2, &y3d, &big, &x0,  &wm0, &y0};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

/* A ctx in frozen inference refuses the batched convolution. */
static void test_frozen_refused(void) {
  gf_ctx ctx;
  kt_cpu_ctx(&ctx, 1);
  ctx.frozen_batch = 4;
  gf_conv_params p = {{1, 1}, {0, 0}, {0, 0}};
  gf_tensor x = kt_tensor(4, 2, 3, 4, 4), wm = kt_tensor(4, 4, 3, 1, 1);
  gf_tensor y = kt_tensor(4, 2, 2, 4, 4);
  gf_err e = {0};
  CHECK(gf_conv2d_batched_fwd(&ctx, &x, &wm, &p, &y, &e) == GF_EUNSUPPORTED);
  CHECK(strstr(e.msg, "frozen") != NULL);
  gf_tensor_free(&x);
  gf_tensor_free(&wm);
  gf_tensor_free(&y);
  gf_ctx_free(&ctx);
}

/* ---- gf_modconv_demod_jvp against central differences of a double model */

/* The double model of one row r = (n, o): wmod[k] and gws[k] (ops.h) from
 * s (the row's sample) and g (the row). */
static void dbl_demod_row(const float *wr, const double *sr, const double *gr,
                          int64_t K, int64_t khw, double *wmod, double *gws) {
  double S = 0, G = 0;
  for (int64_t k = 0; k < K; k++) {
    double ws = wr[k] * sr[k / khw];
    S += ws * ws;
    G += gr[k] * ws;
  }
  double d = 1.0 / sqrt(S + 1e-8), c = d * d * d * G;
  for (int64_t k = 0; k < K; k++) {
    double ws = wr[k] * sr[k / khw];
    wmod[k] = ws * d;
    gws[k] = gr[k] * d - ws * c;
  }
}

/* wmoddot, gws and gwsdot against the model (step 1e-6 along (sdot,
 * gdot)): within 1e-5 of each quantity's max; 1 and 4 threads the same
 * bits; a direction 0.1% off must fail; argument checks. */
static void test_demod_jvp(gf_ctx *ctx, gf_ctx *ctx4, kt_rng *rng) {
  int64_t N = 3, Cout = 4, Cin = 5, kh = 3, kw = 3, khw = kh * kw,
          K = Cin * khw, rows = N * Cout;
  gf_tensor w = kt_tensor(4, Cout, Cin, kh, kw), s = kt_tensor(2, N, Cin, 1, 1);
  gf_tensor sd = kt_tensor(2, N, Cin, 1, 1), dc = kt_tensor(2, N, Cout, 1, 1);
  gf_tensor wm = kt_tensor(4, N * Cout, Cin, kh, kw);
  gf_tensor g = kt_tensor(4, N * Cout, Cin, kh, kw),
            gd = kt_tensor(4, N * Cout, Cin, kh, kw),
            wmd = kt_tensor(4, N * Cout, Cin, kh, kw),
            gw = kt_tensor(4, N * Cout, Cin, kh, kw),
            gwd = kt_tensor(4, N * Cout, Cin, kh, kw),
            wmd4 = kt_tensor(4, N * Cout, Cin, kh, kw),
            gw4 = kt_tensor(4, N * Cout, Cin, kh, kw),
            gwd4 = kt_tensor(4, N * Cout, Cin, kh, kw);
  kt_fill(&w, rng, -1.0, 1.0, 0.0);
  kt_fill(&s, rng, 0.5, 1.5, 0.0);
  kt_fill(&sd, rng, -1.0, 1.0, 0.0);
  kt_fill(&g, rng, -1.0, 1.0, 0.0);
  kt_fill(&gd, rng, -1.0, 1.0, 0.0);
  gf_err e = {0};
  REQUIRE(gf_modconv_weight_fwd(ctx, &w, &s, 1, 1e-8f, &wm, &dc, &e) ==
          GF_OK);
  CHECKF(gf_modconv_demod_jvp(ctx, &w, &s, &sd, &dc, &g, &gd, &wmd, &gw, &gwd,
                              &e) == GF_OK, "%s", e.msg);
  CHECK(gf_modconv_demod_jvp(ctx4, &w, &s, &sd, &dc, &g, &gd, &wmd4, &gw4,
                             &gwd4, &e) == GF_OK);
  CHECK(kt_same_bits(&wmd, &wmd4) && kt_same_bits(&gw, &gw4) &&
        kt_same_bits(&gwd, &gwd4));
  const float *W = w.data, *S = s.data, *SD = sd.data, *Gv = g.data,
              *GD = gd.data;
  double h = 1e-6, *sp = kt_dzeros((size_t)Cin), *sm = kt_dzeros((size_t)Cin),
         *gp = kt_dzeros((size_t)K), *gm = kt_dzeros((size_t)K),
         *a = kt_dzeros((size_t)K), *b = kt_dzeros((size_t)K),
         *c = kt_dzeros((size_t)K), *d = kt_dzeros((size_t)K),
         *s0 = kt_dzeros((size_t)Cin), *w0 = kt_dzeros((size_t)K),
         *g0 = kt_dzeros((size_t)K);
  for (int fire = 0; fire < 2; fire++) {
    double sc = fire ? 1.001 : 1.0, m1 = 0, m2 = 0, m3 = 0, e1 = 0, e2 = 0,
           e3 = 0;
    for (int64_t r = 0; r < rows; r++) {
      int64_t n = r / Cout, o = r - n * Cout;
      for (int64_t i = 0; i < Cin; i++) {
        s0[i] = S[n * Cin + i];
        sp[i] = s0[i] + h * sc * SD[n * Cin + i];
        sm[i] = s0[i] - h * sc * SD[n * Cin + i];
      }
      for (int64_t k = 0; k < K; k++) {
        g0[k] = Gv[r * K + k];
        gp[k] = g0[k] + h * sc * GD[r * K + k];
        gm[k] = g0[k] - h * sc * GD[r * K + k];
      }
      dbl_demod_row(W + o * K, sp, gp, K, khw, a, b);
      dbl_demod_row(W + o * K, sm, gm, K, khw, c, d);
      dbl_demod_row(W + o * K, s0, g0, K, khw, w0, g0);
      for (int64_t k = 0; k < K; k++) {
        double t1 = (a[k] - c[k]) / (2 * h), t3 = (b[k] - d[k]) / (2 * h);
        double v1 = ((float *)wmd.data)[r * K + k],
               v2 = ((float *)gw.data)[r * K + k],
               v3 = ((float *)gwd.data)[r * K + k];
        m1 = fmax(m1, fabs(t1)), m2 = fmax(m2, fabs(g0[k])),
        m3 = fmax(m3, fabs(t3));
        e1 = fmax(e1, fabs(v1 - t1)), e2 = fmax(e2, fabs(v2 - g0[k])),
        e3 = fmax(e3, fabs(v3 - t3));
      }
    }
    if (!fire) {
      printf("demod jvp: wmoddot %.3g, gws %.3g, gwsdot %.3g of max\n",
             e1 / m1, e2 / m2, e3 / m3);
      CHECKF(e1 <= 1e-5 * m1 && e2 <= 1e-5 * m2 && e3 <= 1e-5 * m3,
             "demod jvp off the finite differences: %.3g %.3g %.3g", e1 / m1,
             e2 / m2, e3 / m3);
    } else {
      CHECKF(e1 > 1e-5 * m1 && e3 > 1e-5 * m3, "demod jvp: a direction "
             "0.1%% off passes");
    }
  }
  free(sp), free(sm), free(gp), free(gm), free(a), free(b), free(c), free(d);
  free(s0), free(w0), free(g0);
  /* arguments */
  CHECK(gf_modconv_demod_jvp(ctx, &w, &s, &sd, &dc, &g, &gd, &wmd, &gw, NULL,
                             &e) == GF_EINVAL);
  CHECK(gf_modconv_demod_jvp(ctx, &w, &s, &sd, &dc, &g, &gd, &g, NULL, NULL,
                             &e) == GF_OK); /* g not read without gws */
  CHECK(gf_modconv_demod_jvp(ctx, &w, &s, &sd, &dc, &g, &gd, &wmd, &g, &gwd,
                             &e) == GF_EINVAL);
  CHECK(strstr(e.msg, "overlaps") != NULL);
  CHECK(gf_modconv_demod_jvp(ctx, &w, &s, &s, &dc, NULL, NULL, &wmd, NULL,
                             NULL, &e) == GF_OK);
  CHECK(gf_modconv_demod_jvp(ctx, &w, &s, &wmd, &dc, NULL, NULL, &wmd, NULL,
                             NULL, &e) == GF_EINVAL);
  CHECK(gf_modconv_demod_jvp(ctx, &w, &s, &sd, &s, NULL, NULL, &wmd, NULL,
                             NULL, &e) == GF_EINVAL);
  gf_tensor *all[] = {&w, &s, &sd, &dc, &wm, &g, &gd, &wmd, &gw, &gwd, &wmd4,
                      &gw4, &gwd4};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++) gf_tensor_free(all[i]);
}

int main(int argc, char **argv) {
  gf_st_file f;
  kt_gold_open(&f, argc > 1 ? argv[1] : GF_MODCONV_GOLDEN);
  gf_ctx ctx, ctx4;
  kt_cpu_ctx(&ctx, 1);
  kt_cpu_ctx(&ctx4, 4);
  kt_rng rng = {20261207};
  test_golden(&ctx, &f, "syn3");
  test_golden(&ctx4, &f, "syn3");
  test_golden(&ctx, &f, "rgb1");
  test_golden(&ctx4, &f, "rect");
  test_weight_large(&ctx, &ctx4, &rng, 1);
  test_weight_large(&ctx, &ctx4, &rng, 0);
  test_weight_fd(&ctx, &rng);
  test_demod_jvp(&ctx, &ctx4, &rng);
  for (size_t i = 0; i < sizeof bconv_cases / sizeof *bconv_cases; i++)
    run_bconv(&ctx, &ctx4, &bconv_cases[i], &rng);
  test_weight_errors(&ctx);
  test_bconv_errors(&ctx);
  test_frozen_refused();
  gf_ctx_free(&ctx);
  gf_ctx_free(&ctx4);
  gf_st_file_free(&f);
  return check_report();
}
