/* cpu_stylegan_ops.c - the CPU backend's StyleGAN2 layers (ops.h,
 * "StyleGAN2 layers"): the fused bias + activation + gain + clamp and its
 * gradient, the minibatch standard deviation and its gradient, noise
 * injection and its gradient. Plain C loops with OpenMP threads; every
 * result is the same bits at any thread count and the same bits as the
 * CUDA twins (cuda_stylegan_ops.cu):
 *  - element-wise f32 arithmetic is one rounding per operation, one
 *    operation per statement (the build's ISO C mode turns FMA contraction
 *    off; clang would only fuse within one expression);
 *  - the plane sums (bias_act's db, noise's dstrength) take each plane's
 *    lane sum (reduce_order.h) into a double scratch row P, the threads
 *    splitting the planes, then the lane sums over P in the order ops.h
 *    states;
 *  - mbstd's statistics are double, one rounding per operation, a group and
 *    slice per task (no sum crosses tasks).
 * Argument checking happened in ops.c (shapes, parameters, overlaps, empty
 * tensors). */
#include <math.h>
#include <string.h>

#include "../reduce_order.h"
#include "cpu_backend.h"

#define LANES GF_RED_LANES

/* r rounded to f32, stored into *out or added to it in f32. */
static void put_sum(float *out, double r, int accumulate) {
  float v = (float)r;
  *out = accumulate ? *out + v : v;
}

/* ---- bias + activation + gain + clamp ----------------------------------- */

gf_status gf_cpu_bias_act_fwd(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *b, int act, float alpha,
                              float gain, float clamp, gf_tensor *y,
                              gf_err *err) {
  (void)err;
  int64_t N = x->shape[0], C = x->shape[1];
  int64_t S = gf_tensor_numel(x) / (N * C), P = N * C;
  const float *X = x->data, *B = b ? b->data : NULL;
  float *Y = y->data;
  int lrelu = act == GF_BIAS_ACT_LRELU, clamped = clamp >= 0.0f;
  float lo = -clamp;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (P * S >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t p = 0; p < P; p++) {
    float bc = B ? B[p % C] : 0.0f;
    const float *xr = X + p * S;
    float *yr = Y + p * S;
    for (int64_t s = 0; s < S; s++) {
      float t = B ? xr[s] + bc : xr[s];
      float a = t;
      if (lrelu && !(t > 0.0f)) a = t * alpha;
      float v = a * gain;
      if (clamped) v = v < lo ? lo : (v > clamp ? clamp : v);
      yr[s] = v;
    }
  }
  return GF_OK;
}

/* dx of one element from the forward output y and its gradient g. */
static float bias_act_dx(float y, float g, int lrelu, float alpha, float gain,
                         float clamp) {
  float m = (clamp < 0.0f || fabsf(y) < clamp) ? g : 0.0f;
  float d = m * gain;
  if (lrelu && !(y > 0.0f)) d = d * alpha;
  return d;
}

/* Per plane p = (n, c): dx element by element (dx may be dy: each element
 * is read before it is written) and, with db, the plane's lane sum into
 * Ps[p]; then per channel the lane sum over n of Ps[n C + c]. */
gf_status gf_cpu_bias_act_bwd(gf_ctx *ctx, const gf_tensor *y, int act,
                              float alpha, float gain, float clamp,
                              const gf_tensor *dy, gf_tensor *dx, gf_tensor *db,
                              gf_accum accum, gf_err *err) {
  int64_t N = y->shape[0], C = y->shape[1];
  int64_t S = gf_tensor_numel(y) / (N * C), P = N * C;
  const float *Yv = y->data, *G = dy->data;
  float *DX = dx ? dx->data : NULL;
  double *Ps = NULL;
  if (db) {
    _Static_assert(GF_ALIGN % sizeof(double) == 0, "scratch alignment");
    float *tmp = gf_cpu_tmp(ctx, (size_t)P * 2, err);
    if (!tmp) return err ? err->code : GF_ENOMEM;
    Ps = (double *)(void *)tmp;
  }
  int lrelu = act == GF_BIAS_ACT_LRELU;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (P * S >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t p = 0; p < P; p++) {
    const float *yr = Yv + p * S, *gr = G + p * S;
    float *o = DX ? DX + p * S : NULL;
    double l[LANES] = {0};
    for (int64_t i0 = 0; i0 < S; i0 += LANES) {
      int64_t len = S - i0 < LANES ? S - i0 : LANES;
      for (int64_t j = 0; j < len; j++) {
        float d = bias_act_dx(yr[i0 + j], gr[i0 + j], lrelu, alpha, gain,
                              clamp);
        if (o) o[i0 + j] = d;
        l[j] += (double)d;
      }
    }
    if (Ps) Ps[p] = gf_cpu_lanes_tree(l);
  }
  if (db) {
    float *D = db->data;
    int acc = accum == GF_ACCUMULATE;
#pragma omp parallel for num_threads(nt) if (P >= GF_PAR_MIN) schedule(static)
    for (int64_t c = 0; c < C; c++)
      put_sum(D + c, gf_cpu_lane_sum_d(Ps + c, N, C), acc);
  }
  return GF_OK;
}

/* ---- minibatch standard deviation --------------------------------------- */

/* The group / slice geometry of an mbstd call (ops.h). */
typedef struct mbstd_dims {
  int64_t N, C, HW, G, M, F, cF, K;
} mbstd_dims;

static mbstd_dims mbstd_of(const gf_tensor *x, int group_size,
                           int num_channels) {
  mbstd_dims d;
  d.N = x->shape[0];
  d.C = x->shape[1];
  d.HW = x->shape[2] * x->shape[3];
  d.G = group_size < d.N ? group_size : d.N;
  d.M = d.N / d.G;
  d.F = num_channels;
  d.cF = d.C / d.F;
  d.K = d.cF * d.HW;
  return d;
}

/* mu and sd of element k of slice f of group m: the G values x[gM+m, c, p]
 * (c = f cF + k / HW, p = k % HW), as ops.h defines them. *base gets the
 * offset of the element in sample m (sample gM+m adds g M C HW). */
static double mbstd_sd(const float *X, const mbstd_dims *d, int64_t m,
                       int64_t f, int64_t k, double *mu_out, int64_t *base) {
  int64_t c = f * d->cF + k / d->HW, px = k % d->HW;
  int64_t off = (m * d->C + c) * d->HW + px, step = d->M * d->C * d->HW;
  double s = 0.0;
  for (int64_t g = 0; g < d->G; g++) s += (double)X[off + g * step];
  double mu = s / (double)d->G;
  double s2 = 0.0;
  for (int64_t g = 0; g < d->G; g++) {
    double t = (double)X[off + g * step] - mu;
    double sq = t * t;
    s2 = s2 + sq;
  }
  double var = s2 / (double)d->G;
  double ve = var + 1e-8;
  *mu_out = mu;
  *base = off;
  return sqrt(ve);
}

/* The tangent of element k's sd along xdot: *sddot, with the means of x
 * and xdot over the group in *mu, *mud; returns sd. */
static double mbstd_sd_dot(const float *X, const float *XD,
                           const mbstd_dims *d, int64_t m, int64_t f,
                           int64_t k, double *mu, double *mud, double *sddot,
                           int64_t *base) {
  double sd = mbstd_sd(X, d, m, f, k, mu, base);
  int64_t step = d->M * d->C * d->HW;
  double s = 0.0;
  for (int64_t g = 0; g < d->G; g++) s += (double)XD[*base + g * step];
  *mud = s / (double)d->G;
  double a = 0.0;
  for (int64_t g = 0; g < d->G; g++) {
    double u = (double)X[*base + g * step] - *mu;
    double ud = (double)XD[*base + g * step] - *mud;
    a = a + u * ud;
  }
  *sddot = (a / (double)d->G) / sd;
  return sd;
}

/* (float)(S / K) into channel C + f of the G samples of group m of y. */
static void mbstd_put(float *Y, const mbstd_dims *d, int64_t m, int64_t f,
                      double S) {
  float stat = (float)(S / (double)d->K);
  int64_t CY = d->C + d->F;
  for (int64_t g = 0; g < d->G; g++) {
    float *o = Y + ((g * d->M + m) * CY + d->C + f) * d->HW;
    for (int64_t p = 0; p < d->HW; p++) o[p] = stat;
  }
}

/* gf_mbstd_fwd (XD NULL: y from x) and gf_mbstd_jvp (ydot from x and
 * XD): x's channels (XD's for the tangent) copied, then per group and
 * slice the lane sum of the sd's (their tangents). */
static void mbstd_stats(gf_ctx *ctx, const float *X, const float *XD,
                        float *Y, const mbstd_dims *dp) {
  mbstd_dims d = *dp;
  const float *S = XD ? XD : X;
  int64_t CY = d.C + d.F, n_items = d.M * d.F;
  int nt = ctx->nthreads;
  /* channels 0..C-1: copies, a sample per task */
#pragma omp parallel for num_threads(nt) if (d.N * d.C * d.HW >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t n = 0; n < d.N; n++) {
    memcpy(Y + n * CY * d.HW, S + n * d.C * d.HW,
           (size_t)(d.C * d.HW) * sizeof(float));
  }
  /* channel C + f: a group and slice per task */
#pragma omp parallel for num_threads(nt) if (d.N * d.C * d.HW >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t it = 0; it < n_items; it++) {
    int64_t m = it / d.F, f = it % d.F;
    double l[LANES] = {0};
    for (int64_t k0 = 0; k0 < d.K; k0 += LANES) {
      int64_t len = d.K - k0 < LANES ? d.K - k0 : LANES;
      for (int64_t j = 0; j < len; j++) {
        double mu, mud, sdd;
        int64_t base;
        if (!XD) {
          l[j] += mbstd_sd(X, &d, m, f, k0 + j, &mu, &base);
        } else {
          mbstd_sd_dot(X, XD, &d, m, f, k0 + j, &mu, &mud, &sdd, &base);
          l[j] += sdd;
        }
      }
    }
    mbstd_put(Y, &d, m, f, gf_cpu_lanes_tree(l));
  }
}

gf_status gf_cpu_mbstd_fwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                           int num_channels, gf_tensor *y, gf_err *err) {
  (void)err;
  mbstd_dims d = mbstd_of(x, group_size, num_channels);
  mbstd_stats(ctx, x->data, NULL, y->data, &d);
  return GF_OK;
}

/* The lane sum over (g, p) of channel C + f of group m of dy, / (G K). */
static double mbstd_q(const float *GY, const mbstd_dims *d, int64_t m,
                      int64_t f) {
  int64_t CY = d->C + d->F, T = d->G * d->HW;
  double l[LANES] = {0};
  for (int64_t k0 = 0; k0 < T; k0 += LANES) {
    int64_t len = T - k0 < LANES ? T - k0 : LANES;
    for (int64_t j = 0; j < len; j++) {
      int64_t k = k0 + j, g = k / d->HW, p = k % d->HW;
      l[j] += (double)GY[((g * d->M + m) * CY + d->C + f) * d->HW + p];
    }
  }
  return gf_cpu_lanes_tree(l) / (double)(d->G * d->K);
}

gf_status gf_cpu_mbstd_bwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                           int num_channels, const gf_tensor *dy, gf_tensor *dx,
                           gf_err *err) {
  (void)err;
  mbstd_dims d = mbstd_of(x, group_size, num_channels);
  const float *X = x->data, *GY = dy->data;
  float *DX = dx->data;
  int64_t CY = d.C + d.F, n_items = d.M * d.F;
  int64_t step = d.M * d.C * d.HW; /* from sample gM+m to (g+1)M+m in x */
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (d.N * d.C * d.HW >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t it = 0; it < n_items; it++) {
    int64_t m = it / d.F, f = it % d.F;
    double q = mbstd_q(GY, &d, m, f); /* D / (G K) */
    for (int64_t k = 0; k < d.K; k++) {
      double mu;
      int64_t base;
      double sd = mbstd_sd(X, &d, m, f, k, &mu, &base);
      int64_t c = f * d.cF + k / d.HW, p = k % d.HW;
      for (int64_t g = 0; g < d.G; g++) {
        int64_t n = g * d.M + m;
        double u = (double)X[base + g * step] - mu;
        double t = q * u;
        double t2 = t / sd;
        double s = (double)GY[(n * CY + c) * d.HW + p] + t2;
        DX[base + g * step] = (float)s;
      }
    }
  }
  return GF_OK;
}

gf_status gf_cpu_mbstd_jvp(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *xdot, int group_size,
                           int num_channels, gf_tensor *ydot, gf_err *err) {
  (void)err;
  mbstd_dims d = mbstd_of(x, group_size, num_channels);
  mbstd_stats(ctx, x->data, xdot->data, ydot->data, &d);
  return GF_OK;
}

gf_status gf_cpu_mbstd_bwd_jvp(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *xdot, int group_size,
                               int num_channels, const gf_tensor *dy,
                               const gf_tensor *dydot, gf_tensor *dxdot,
                               gf_err *err) {
  mbstd_dims d = mbstd_of(x, group_size, num_channels);
  const float *X = x->data, *XD = xdot->data, *GY = dy->data,
              *GYD = dydot->data;
  float *DX = dxdot->data;
  int64_t CY = d.C + d.F, n_items = d.M * d.F;
  int64_t step = d.M * d.C * d.HW;
  (void)err;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (d.N * d.C * d.HW >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t it = 0; it < n_items; it++) {
    int64_t m = it / d.F, f = it % d.F;
    double q = mbstd_q(GY, &d, m, f), qd = mbstd_q(GYD, &d, m, f);
    for (int64_t k = 0; k < d.K; k++) {
      double sdd, mu, mud;
      int64_t base;
      double sd = mbstd_sd_dot(X, XD, &d, m, f, k, &mu, &mud, &sdd, &base);
      int64_t c = f * d.cF + k / d.HW, p = k % d.HW;
      for (int64_t g = 0; g < d.G; g++) {
        int64_t n = g * d.M + m;
        double u = (double)X[base + g * step] - mu;
        double ud = (double)XD[base + g * step] - mud;
        double t = qd * u + q * ud;
        double t2 = ((q * u) * sdd) / sd;
        double r = (t - t2) / sd;
        DX[base + g * step] = (float)((double)GYD[(n * CY + c) * d.HW + p] + r);
      }
    }
  }
  return GF_OK;
}

/* ---- noise injection ---------------------------------------------------- */

gf_status gf_cpu_noise_add_fwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *noise,
                               const gf_tensor *strength, gf_tensor *y,
                               gf_err *err) {
  (void)err;
  int64_t N = x->shape[0], C = x->shape[1];
  int64_t HW = x->shape[2] * x->shape[3], P = N * C;
  const float *X = x->data, *Z = noise->data;
  float st = *(const float *)strength->data;
  float *Y = y->data;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (P * HW >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t p = 0; p < P; p++) {
    const float *xr = X + p * HW, *zr = Z + (p / C) * HW;
    float *yr = Y + p * HW;
    for (int64_t s = 0; s < HW; s++) {
      float t = zr[s] * st;
      yr[s] = xr[s] + t;
    }
  }
  return GF_OK;
}

gf_status gf_cpu_noise_add_bwd(gf_ctx *ctx, const gf_tensor *noise,
                               const gf_tensor *dy, gf_tensor *dx,
                               gf_tensor *dstrength, gf_accum accum,
                               gf_err *err) {
  if (dstrength) {
    int64_t N = dy->shape[0], C = dy->shape[1];
    int64_t HW = dy->shape[2] * dy->shape[3], P = N * C;
    const float *G = dy->data, *Z = noise->data;
    float *tmp = gf_cpu_tmp(ctx, (size_t)P * 2, err);
    if (!tmp) return err ? err->code : GF_ENOMEM;
    double *Ps = (double *)(void *)tmp;
    int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (P * HW >= GF_PAR_MIN) \
    schedule(static)
    for (int64_t p = 0; p < P; p++)
      Ps[p] = gf_cpu_lane_dot(G + p * HW, Z + (p / C) * HW, HW);
    put_sum(dstrength->data, gf_cpu_lane_sum_d(Ps, P, 1),
            accum == GF_ACCUMULATE);
  }
  if (dx && dx->data != dy->data) return gf_cpu_copy(ctx, dy, dx, err);
  return GF_OK;
}
