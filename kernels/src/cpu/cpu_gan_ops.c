/* cpu_gan_ops.c - the CPU backend's ops for the other GAN losses, the EMA
 * and spectral normalization: hinge loss (forward, backward), mean, lerp,
 * spectral normalization (power iteration, sigma, w / sigma; backward).
 * Plain C loops with OpenMP threads. Every sum follows reduce_order.h, the
 * order the CUDA backend uses too: results are the same bits at any thread
 * count and on either backend. Element-wise f32 arithmetic is written one
 * rounding per statement wherever contracting a * b + c into an FMA would
 * change the result (1 + sign x has an exact product; the build's ISO C
 * mode keeps GCC from contracting across statements), and lerp's FMA is
 * explicit. Not for the generic activations or BCE (cpu_eltwise.c). */
#include <math.h>
#include <string.h>

#include "../reduce_order.h"
#include "cpu_backend.h"

#define LANES GF_RED_LANES

/* Splits the loop that follows over nt threads when n is long (as
 * cpu_eltwise.c's PAR_FOR). */
/* clang-format off */
#define PAR_FOR \
  _Pragma("omp parallel for simd num_threads(nt) if (n >= GF_PAR_MIN) schedule(static)")
/* clang-format on */

/* relu(1 + sign x) in f32 (sign x is exact); NaN stays NaN as in PyTorch's
 * relu. */
static inline float hinge_term(float sign, float x) {
  float h = 1.0f + sign * x;
  return h < 0.0f ? 0.0f : h;
}

gf_status gf_cpu_hinge_fwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                           gf_tensor *loss, gf_err *err) {
  (void)ctx;
  (void)err;
  const float *xp = x->data;
  int64_t n = gf_tensor_numel(x);
  double p[LANES] = {0};
  for (int64_t i0 = 0; i0 < n; i0 += LANES) {
    int64_t len = n - i0 < LANES ? n - i0 : LANES;
    for (int64_t j = 0; j < len; j++)
      p[j] += (double)hinge_term(sign, xp[i0 + j]);
  }
  *(float *)loss->data = (float)(gf_cpu_lanes_tree(p) / (double)n);
  return GF_OK;
}

/* dx = sign (active ? g : 0), g = dloss / n rounded once: PyTorch's chain
 * (mean's gradient, relu's threshold_backward on its output, the sign of
 * 1 + sign x), with its -0 for sign -1 where inactive. Active means the
 * relu output is not <= 0 (NaN passes the gradient, as PyTorch). */
gf_status gf_cpu_hinge_bwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                           float dloss, gf_tensor *dx, gf_err *err) {
  (void)err;
  const float *xp = x->data;
  float *o = dx->data;
  int64_t n = gf_tensor_numel(x);
  float g = (float)((double)dloss / (double)n);
  int nt = ctx->nthreads;
  PAR_FOR
  for (int64_t i = 0; i < n; i++) {
    float h = hinge_term(sign, xp[i]);
    float gi = h <= 0.0f ? 0.0f : g;
    o[i] = sign * gi;
  }
  return GF_OK;
}

gf_status gf_cpu_mean_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *loss,
                          gf_err *err) {
  (void)ctx;
  (void)err;
  const float *xp = x->data;
  int64_t n = gf_tensor_numel(x);
  double p[LANES] = {0};
  for (int64_t i0 = 0; i0 < n; i0 += LANES) {
    int64_t len = n - i0 < LANES ? n - i0 : LANES;
    for (int64_t j = 0; j < len; j++) p[j] += (double)xp[i0 + j];
  }
  *(float *)loss->data = (float)(gf_cpu_lanes_tree(p) / (double)n);
  return GF_OK;
}

/* ---- lerp ------------------------------------------------------------------
 * a = fma(c, a - x, base) with (c, base) = (w, x) for w < 0.5, else
 * (w - 1, a): ATen's CPU lerp kernel (one rounding for the product and the
 * sum). With hardware FMA (every x86-64 CPU since 2013) the loop is built
 * for it and vectorizes; elsewhere libm's fmaf gives the same bits,
 * slowly. */

/* The lerp loops with FMA as the fused multiply-add, expanded in the
 * function that is built for it (the OpenMP region is outlined there). */
#define LERP_LOOP(FMA)                                  \
  do {                                                  \
    if (w < 0.5f) {                                     \
      PAR_FOR                                           \
      for (int64_t i = 0; i < n; i++) {                 \
        float xi = x[i];                                \
        float d = a[i] - xi;                            \
        a[i] = FMA(w, d, xi);                           \
      }                                                 \
    } else {                                            \
      float c = w - 1.0f; /* exact for w in [0.5, 1] */ \
      PAR_FOR                                           \
      for (int64_t i = 0; i < n; i++) {                 \
        float ai = a[i];                                \
        float d = ai - x[i];                            \
        a[i] = FMA(c, d, ai);                           \
      }                                                 \
    }                                                   \
  } while (0)

#if (defined(__x86_64__) || defined(__i386__)) && \
    (defined(__GNUC__) || defined(__clang__))
#define GF_LERP_FMA_TARGET 1
__attribute__((target("fma"))) static void lerp_hw(float *a, const float *x,
                                                   int64_t n, float w, int nt) {
  LERP_LOOP(__builtin_fmaf);
}
#endif

static void lerp_libm(float *a, const float *x, int64_t n, float w, int nt) {
  LERP_LOOP(fmaf);
}

gf_status gf_cpu_lerp(gf_ctx *ctx, gf_tensor *avg, const gf_tensor *x, float w,
                      gf_err *err) {
  (void)err;
  int64_t n = gf_tensor_numel(avg);
#ifdef GF_LERP_FMA_TARGET
  if (__builtin_cpu_supports("fma")) {
    lerp_hw(avg->data, x->data, n, w, ctx->nthreads);
    return GF_OK;
  }
#endif
  lerp_libm(avg->data, x->data, n, w, ctx->nthreads);
  return GF_OK;
}

/* ---- spectral normalization ------------------------------------------------
 * W [R, K] row-major. Scratch (gf_cpu_tmp): acc and part, K doubles each,
 * then wv, R floats. */

/* Columns per task of W^T u (a multiple of the cache line). */
#define SN_COLS 512

/* t = W^T u into out[K] (f32), each column summed as reduce_order.h says. */
static void sn_wt_u(const gf_ctx *ctx, const float *W, const float *u,
                    int64_t R, int64_t K, double *acc, double *part,
                    float *out) {
  int nt = ctx->nthreads;
  int64_t ntask = (K + SN_COLS - 1) / SN_COLS;
#pragma omp parallel for num_threads(nt) if (R * K >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t t = 0; t < ntask; t++) {
    int64_t k0 = t * SN_COLS, k1 = k0 + SN_COLS < K ? k0 + SN_COLS : K;
    for (int64_t k = k0; k < k1; k++) acc[k] = 0.0;
    for (int64_t r0 = 0; r0 < R; r0 += GF_SN_ROW_CHUNK) {
      int64_t r1 = r0 + GF_SN_ROW_CHUNK < R ? r0 + GF_SN_ROW_CHUNK : R;
      for (int64_t k = k0; k < k1; k++) part[k] = 0.0;
      for (int64_t r = r0; r < r1; r++) {
        const float *row = W + r * K;
        double ur = u[r];
        for (int64_t k = k0; k < k1; k++) part[k] += (double)row[k] * ur;
      }
      for (int64_t k = k0; k < k1; k++) acc[k] += part[k];
    }
    for (int64_t k = k0; k < k1; k++) out[k] = (float)acc[k];
  }
}

/* out[r] = (W v)[r] (f32), each row a lane sum. */
static void sn_w_v(const gf_ctx *ctx, const float *W, const float *v, int64_t R,
                   int64_t K, float *out) {
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (R * K >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t r = 0; r < R; r++) {
    out[r] = (float)gf_cpu_lane_dot(W + r * K, v, K);
  }
}

/* max(|a|, eps) for a[n], |a| = sqrt of the lane sum of squares rounded
 * to f32 (NaN stays NaN, as clamp_min). */
static float sn_denom(const float *a, int64_t n, float eps) {
  float nrm = (float)sqrt(gf_cpu_lane_dot(a, a, n));
  return nrm < eps ? eps : nrm;
}

gf_status gf_cpu_spectral_norm_fwd(gf_ctx *ctx, const gf_tensor *w,
                                   gf_tensor *u, gf_tensor *v, int n_iter,
                                   float eps, gf_tensor *sigma, gf_tensor *w_sn,
                                   gf_err *err) {
  int64_t R = w->shape[0], K = gf_tensor_numel(w) / R;
  float *tmp = gf_cpu_tmp(ctx, (size_t)(4 * K + R), err);
  if (!tmp) return err ? err->code : GF_ENOMEM;
  double *acc = (double *)(void *)tmp, *part = acc + K;
  float *wv = (float *)(void *)(part + K);
  const float *W = w->data;
  float *up = u->data, *vp = v->data;
  for (int it = 0; it < n_iter; it++) {
    sn_wt_u(ctx, W, up, R, K, acc, part, vp);
    float dv = sn_denom(vp, K, eps);
    for (int64_t k = 0; k < K; k++) vp[k] = vp[k] / dv;
    sn_w_v(ctx, W, vp, R, K, wv);
    float du = sn_denom(wv, R, eps);
    for (int64_t r = 0; r < R; r++) up[r] = wv[r] / du;
  }
  if (n_iter == 0) sn_w_v(ctx, W, vp, R, K, wv);
  /* sigma = u . (W v), W v of the final v (the last iteration's) */
  float s = (float)gf_cpu_lane_dot(up, wv, R);
  *(float *)sigma->data = s;
  float *o = w_sn->data;
  int64_t n = R * K;
  int nt = ctx->nthreads;
  PAR_FOR
  for (int64_t i = 0; i < n; i++) o[i] = W[i] / s;
  return GF_OK;
}

/* dw (+)= G / sigma + (gs u_r) v_k, gs = -sum(G W) / sigma^2 (the gradient
 * of sigma): the lane sum of each row, then a lane sum over the rows, the
 * quotient in double rounded once; each element then as PyTorch's autograd
 * rounds it (div, mul, ger, add). dw may be dw_sn: every G is read by the
 * reduction before the element loop writes. */
gf_status gf_cpu_spectral_norm_bwd(gf_ctx *ctx, const gf_tensor *w,
                                   const gf_tensor *u, const gf_tensor *v,
                                   const gf_tensor *sigma,
                                   const gf_tensor *dw_sn, gf_tensor *dw,
                                   gf_accum accum, gf_err *err) {
  int64_t R = w->shape[0], K = gf_tensor_numel(w) / R;
  float *tmp = gf_cpu_tmp(ctx, (size_t)(2 * R), err);
  if (!tmp) return err ? err->code : GF_ENOMEM;
  double *rows = (double *)(void *)tmp;
  const float *W = w->data, *G = dw_sn->data;
  const float *up = u->data, *vp = v->data;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (R * K >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t r = 0; r < R; r++)
    rows[r] = gf_cpu_lane_dot(G + r * K, W + r * K, K);
  float s = *(const float *)sigma->data;
  double sd = (double)s;
  float gs = (float)(-gf_cpu_lane_sum_d(rows, R, 1) / (sd * sd));
  float *o = dw->data;
  int acc = accum == GF_ACCUMULATE;
#pragma omp parallel for num_threads(nt) if (R * K >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t r = 0; r < R; r++) {
    float gu = gs * up[r];
    const float *gr = G + r * K;
    float *orow = o + r * K;
    for (int64_t k = 0; k < K; k++) {
      float a = gr[k] / s;
      float b = gu * vp[k];
      float d = a + b;
      orow[k] = acc ? orow[k] + d : d;
    }
  }
  return GF_OK;
}
