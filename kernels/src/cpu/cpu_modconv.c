/* cpu_modconv.c - the CPU backend's weight ops of the modulated
 * convolution (ops.h, "modulated convolution"): modulation and
 * demodulation of the weights per sample, and their gradient. Plain C
 * loops with OpenMP threads, in exactly the arithmetic ops.h fixes, which
 * the CUDA twins (cuda_modconv.cu) share:
 *  - each row r = (n, o) of K = Cin kh kw weights, and each element of
 *    dw and ds, is formed by one thread from its own inputs, so the bits
 *    do not depend on the thread count;
 *  - the row sums (S, G) and ds's sums are lane sums in double as
 *    reduce_order.h defines them; dw's sum over the batch is a plain
 *    double sum in increasing n; each term is a product of two f32
 *    values, exact in double;
 *  - f32 arithmetic is one rounding per operation, one operation per
 *    statement (the build's ISO C mode turns FMA contraction off).
 * The batched convolution itself is oneDNN's (cpu_dnnl.c). Argument
 * checking happened in ops.c. */
#include <math.h>

#include "../reduce_order.h"
#include "cpu_backend.h"

#define LANES GF_RED_LANES

/* Rows above which the row loops use several threads (a row costs about
 * K multiply-adds plus the lane tree). */
#define ROWS_PAR_MIN 64

/* Combines the lane sums p[LANES] by the tree of reduce_order.h. */
static double lanes_tree(double *p) {
  for (int h = LANES / 2; h > 0; h >>= 1)
    for (int j = 0; j < h; j++) p[j] += p[j + h];
  return p[0];
}

/* ws[k] = w[k] * s[k / khw] for one row of K = Cin khw weights, and the
 * lane sum of ws[k]^2 in double. */
static double modulate_row(const float *w, const float *s, int64_t K,
                           int64_t khw, float *ws) {
  double p[LANES] = {0};
  for (int64_t k0 = 0; k0 < K; k0 += LANES) {
    int64_t len = K - k0 < LANES ? K - k0 : LANES;
    for (int64_t j = 0; j < len; j++) {
      float v = w[k0 + j] * s[(k0 + j) / khw];
      ws[k0 + j] = v;
      p[j] += (double)v * (double)v;
    }
  }
  return lanes_tree(p);
}

/* d = (float)(1 / sqrt(S + eps)), each double operation rounded once. */
static float demod_coef(double S, float eps) {
  double t = S + (double)eps;
  double r = sqrt(t);
  double q = 1.0 / r;
  return (float)q;
}

gf_status gf_cpu_modconv_weight_fwd(gf_ctx *ctx, const gf_tensor *w,
                                    const gf_tensor *s, int demodulate,
                                    float eps, gf_tensor *wmod,
                                    gf_tensor *dcoef, gf_err *err) {
  (void)err;
  int64_t Cout = w->shape[0], Cin = w->shape[1];
  int64_t khw = w->shape[2] * w->shape[3], K = Cin * khw;
  int64_t N = s->shape[0], rows = N * Cout;
  const float *W = w->data, *S = s->data;
  float *M = wmod->data, *D = dcoef ? (float *)dcoef->data : NULL;
  int nt = ctx->nthreads;
  int par = rows >= ROWS_PAR_MIN && rows * K >= GF_PAR_MIN;
#pragma omp parallel for num_threads(nt) if (par) schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    int64_t n = r / Cout, o = r - n * Cout;
    float *m = M + r * K;
    double sq = modulate_row(W + o * K, S + n * Cin, K, khw, m);
    float d = 1.0f;
    if (demodulate) {
      d = demod_coef(sq, eps);
      for (int64_t k = 0; k < K; k++) {
        float v = m[k] * d;
        m[k] = v;
      }
    }
    if (D) D[r] = d;
  }
  return GF_OK;
}

/* Demodulating: the gradient wrt ws of row r = (n, o) into gws (K
 * floats): gws = g d - ws c, c = (float)(((d d) d) G), G the lane sum of
 * g ws in double. */
static void ws_grad_row(const float *w, const float *s, const float *g, float d,
                        int64_t K, int64_t khw, float *gws) {
  double p[LANES] = {0};
  for (int64_t k0 = 0; k0 < K; k0 += LANES) {
    int64_t len = K - k0 < LANES ? K - k0 : LANES;
    for (int64_t j = 0; j < len; j++) {
      float v = w[k0 + j] * s[(k0 + j) / khw];
      p[j] += (double)g[k0 + j] * (double)v;
    }
  }
  double G = lanes_tree(p);
  double d2 = (double)d * (double)d;
  double d3 = d2 * (double)d;
  double cd = d3 * G;
  float c = (float)cd;
  for (int64_t k = 0; k < K; k++) {
    float v = w[k] * s[k / khw];
    float t1 = g[k] * d;
    float t2 = v * c;
    gws[k] = t1 - t2;
  }
}

gf_status gf_cpu_modconv_weight_bwd(gf_ctx *ctx, const gf_tensor *w,
                                    const gf_tensor *s, int demodulate,
                                    float eps, const gf_tensor *dcoef,
                                    const gf_tensor *dwmod, gf_tensor *dw,
                                    gf_tensor *ds, gf_accum accum,
                                    gf_err *err) {
  (void)eps; /* d comes from dcoef */
  int64_t Cout = w->shape[0], Cin = w->shape[1];
  int64_t khw = w->shape[2] * w->shape[3], K = Cin * khw;
  int64_t N = s->shape[0], rows = N * Cout;
  const float *W = w->data, *S = s->data, *G = dwmod->data;
  int nt = ctx->nthreads;
  int par = rows >= ROWS_PAR_MIN && rows * K >= GF_PAR_MIN;
  /* gws: the gradient wrt ws, [N Cout, K]; dwmod itself when not
   * demodulating */
  const float *GW = G;
  if (demodulate && rows > 0) {
    float *t = gf_cpu_tmp(ctx, (size_t)(rows * K), err);
    if (!t) return err ? err->code : GF_ENOMEM;
    const float *Dc = dcoef->data;
#pragma omp parallel for num_threads(nt) if (par) schedule(static)
    for (int64_t r = 0; r < rows; r++) {
      int64_t n = r / Cout, o = r - n * Cout;
      ws_grad_row(W + o * K, S + n * Cin, G + r * K, Dc[r], K, khw, t + r * K);
    }
    GW = t;
  }
  if (dw) {
    float *DW = dw->data;
    int64_t total = Cout * K;
    int acc = accum == GF_ACCUMULATE;
#pragma omp parallel for num_threads(nt) if (total * N >= GF_PAR_MIN) \
    schedule(static)
    for (int64_t e = 0; e < total; e++) {
      int64_t i = (e % K) / khw;
      double sum = 0.0;
      for (int64_t n = 0; n < N; n++)
        sum += (double)GW[n * total + e] * (double)S[n * Cin + i];
      float v = (float)sum;
      DW[e] = acc ? DW[e] + v : v;
    }
  }
  if (ds) {
    float *DS = ds->data;
    int64_t items = N * Cin, J = Cout * khw;
    int par_i = items >= ROWS_PAR_MIN && items * J >= GF_PAR_MIN;
#pragma omp parallel for num_threads(nt) if (par_i) schedule(static)
    for (int64_t q = 0; q < items; q++) {
      int64_t n = q / Cin, i = q - n * Cin;
      /* term j = (o, ab): gws[n, o, i, ab] w[o, i, ab] */
      const float *gr = GW + n * Cout * K + i * khw, *wr = W + i * khw;
      double p[LANES] = {0};
      for (int64_t j0 = 0; j0 < J; j0 += LANES) {
        int64_t len = J - j0 < LANES ? J - j0 : LANES;
        for (int64_t j = 0; j < len; j++) {
          int64_t o = (j0 + j) / khw, ab = (j0 + j) - o * khw;
          p[j] += (double)gr[o * K + ab] * (double)wr[o * K + ab];
        }
      }
      DS[q] = (float)lanes_tree(p);
    }
  }
  return GF_OK;
}

/* ---- the demodulated modulation's tangents (gf_modconv_demod_jvp) ----- */

/* One row r = (n, o): ws, wsdot, the sums and the outputs of ops.h (any of
 * the outputs NULL: not formed). gr / gdr: the row of g / gdot. */
static void demod_jvp_row(const float *wr, const float *sr, const float *sdr,
                          float d32, int64_t K, int64_t khw, const float *gr,
                          const float *gdr, float *wmd, float *gw,
                          float *gwd) {
  double d = d32, A = 0.0, G = 0.0, Gd = 0.0;
  for (int64_t k = 0; k < K; k++) {
    int64_t i = k / khw;
    double ws = (double)(wr[k] * sr[i]), wsd = (double)wr[k] * (double)sdr[i];
    A += ws * wsd;
    if (gr) {
      G += (double)gr[k] * ws;
      Gd += (double)gdr[k] * ws + (double)gr[k] * wsd;
    }
  }
  double d3 = d * d * d, dd = -d3 * A;
  double c = d3 * G, cd = 3.0 * d * d * dd * G + d3 * Gd;
  for (int64_t k = 0; k < K; k++) {
    int64_t i = k / khw;
    double ws = (double)(wr[k] * sr[i]), wsd = (double)wr[k] * (double)sdr[i];
    if (wmd) wmd[k] = (float)(wsd * d + ws * dd);
    if (gr) {
      double g = gr[k], gd = gdr[k];
      gw[k] = (float)(g * d - ws * c);
      gwd[k] = (float)(gd * d + g * dd - wsd * c - ws * cd);
    }
  }
}

gf_status gf_cpu_modconv_demod_jvp(gf_ctx *ctx, const gf_tensor *w,
                                   const gf_tensor *s, const gf_tensor *sdot,
                                   const gf_tensor *dcoef, const gf_tensor *g,
                                   const gf_tensor *gdot, gf_tensor *wmoddot,
                                   gf_tensor *gws, gf_tensor *gwsdot,
                                   gf_err *err) {
  (void)err;
  int64_t Cout = w->shape[0], Cin = w->shape[1];
  int64_t khw = w->shape[2] * w->shape[3], K = Cin * khw;
  int64_t rows = s->shape[0] * Cout;
  const float *W = w->data, *S = s->data, *SD = sdot->data,
              *Dc = dcoef->data;
  const float *Gp = gws ? g->data : NULL, *GD = gws ? gdot->data : NULL;
  float *WMD = wmoddot ? wmoddot->data : NULL, *GW = gws ? gws->data : NULL,
        *GWD = gws ? gwsdot->data : NULL;
  int nt = ctx->nthreads;
  int par = rows >= ROWS_PAR_MIN && rows * K >= GF_PAR_MIN;
#pragma omp parallel for num_threads(nt) if (par) schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    int64_t n = r / Cout, o = r - n * Cout;
    demod_jvp_row(W + o * K, S + n * Cin, SD + n * Cin, Dc[r], K, khw,
                  Gp ? Gp + r * K : NULL, GD ? GD + r * K : NULL,
                  WMD ? WMD + r * K : NULL, GW ? GW + r * K : NULL,
                  GWD ? GWD + r * K : NULL);
  }
  return GF_OK;
}
