/* cpu_eltwise.c - the CPU ops written as plain C loops (OpenMP threads,
 * loops the compiler vectorizes): activations, dropout, BCE-with-logits,
 * Adam, fill, copy and the batch-norm dx of sync BN (element-wise once the
 * per-channel sums are given). Each element's result depends only on its own
 * inputs, so results do not depend on the thread count (BCE sums serially). */
#include <math.h>
#include <string.h>

#include "cpu_backend.h"

/* Splits the loop that follows over ctx->nthreads threads when it is long;
 * the enclosing function names the thread count nt and the length n. */
#define PAR_FOR \
  _Pragma("omp parallel for simd num_threads(nt) if (n >= GF_PAR_MIN) schedule(static)")
/* The same without the simd request, for loops over a libm call no
 * compiler vectorizes (tanhf): clang warns when a simd request fails. */
#define PAR_FOR_SCALAR \
  _Pragma("omp parallel for num_threads(nt) if (n >= GF_PAR_MIN) schedule(static)")

static float sigmoidf_(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

gf_status gf_cpu_act_fwd(gf_ctx *ctx, int kind, float alpha,
                         const gf_tensor *x, gf_tensor *y, gf_err *err) {
  const float *xp = x->data;
  float *yp = y->data;
  int64_t n = gf_tensor_numel(x);
  int nt = ctx->nthreads;
  switch (kind) {
  case GF_ACT_RELU:
    PAR_FOR
    for (int64_t i = 0; i < n; i++) {
      float v = xp[i]; /* unconditional loads keep the loop vectorizable */
      yp[i] = v > 0.0f ? v : 0.0f;
    }
    return GF_OK;
  case GF_ACT_LEAKY_RELU:
    PAR_FOR
    for (int64_t i = 0; i < n; i++) {
      float v = xp[i]; /* unconditional loads keep it vectorizable */
      yp[i] = v > 0.0f ? v : alpha * v;
    }
    return GF_OK;
  case GF_ACT_TANH:
    PAR_FOR_SCALAR
    for (int64_t i = 0; i < n; i++) yp[i] = tanhf(xp[i]);
    return GF_OK;
  case GF_ACT_SIGMOID:
    PAR_FOR
    for (int64_t i = 0; i < n; i++) yp[i] = sigmoidf_(xp[i]);
    return GF_OK;
  }
  return gf_fail(err, GF_EINVAL, "cpu: unknown activation %d", kind);
}

gf_status gf_cpu_act_bwd(gf_ctx *ctx, int kind, float alpha,
                         const gf_tensor *in, const gf_tensor *dy,
                         gf_tensor *dx, gf_err *err) {
  const float *a = in->data, *g = dy->data;
  float *o = dx->data;
  int64_t n = gf_tensor_numel(in);
  int nt = ctx->nthreads;
  switch (kind) {
  case GF_ACT_RELU:
    PAR_FOR
    for (int64_t i = 0; i < n; i++) {
      float gi = g[i], ai = a[i];
      o[i] = ai > 0.0f ? gi : 0.0f;
    }
    return GF_OK;
  case GF_ACT_LEAKY_RELU:
    PAR_FOR
    for (int64_t i = 0; i < n; i++) {
      float gi = g[i], ai = a[i];
      o[i] = ai > 0.0f ? gi : alpha * gi;
    }
    return GF_OK;
  case GF_ACT_TANH:
    PAR_FOR
    for (int64_t i = 0; i < n; i++) o[i] = g[i] * (1.0f - a[i] * a[i]);
    return GF_OK;
  case GF_ACT_SIGMOID:
    PAR_FOR
    for (int64_t i = 0; i < n; i++) o[i] = g[i] * a[i] * (1.0f - a[i]);
    return GF_OK;
  }
  return gf_fail(err, GF_EINVAL, "cpu: unknown activation %d", kind);
}

#define DROPOUT_CHUNK 1024

gf_status gf_cpu_dropout(gf_ctx *ctx, const gf_tensor *x, float p,
                         const gf_philox_stream *s, gf_tensor *y,
                         gf_err *err) {
  (void)err;
  const float *xp = x->data;
  float *yp = y->data;
  int64_t n = gf_tensor_numel(x);
  if (p >= 1.0f) {
    memset(yp, 0, (size_t)n * sizeof(float));
    return GF_OK;
  }
  float scale = (float)(1.0 / (1.0 - (double)p));
  int64_t nchunks = (n + DROPOUT_CHUNK - 1) / DROPOUT_CHUNK;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (n >= GF_PAR_MIN) schedule(static)
  for (int64_t c = 0; c < nchunks; c++) {
    float u[DROPOUT_CHUNK];
    int64_t start = c * DROPOUT_CHUNK;
    int64_t len = n - start < DROPOUT_CHUNK ? n - start : DROPOUT_CHUNK;
    gf_philox_stream sc = *s;
    sc.offset = s->offset + (uint64_t)start;
    gf_philox_uniform(&sc, u, (size_t)len);
    for (int64_t i = 0; i < len; i++) {
      float v = xp[start + i];
      /* x * mask * scale as PyTorch (NaN * 0 stays NaN) */
      yp[start + i] = v * (u[i] >= p ? scale : 0.0f);
    }
  }
  return GF_OK;
}

gf_status gf_cpu_bce_fwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *t,
                         gf_tensor *loss, gf_err *err) {
  (void)ctx;
  (void)err;
  const float *xp = x->data, *tp = t->data;
  int64_t n = gf_tensor_numel(x);
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++) {
    double v = xp[i], tv = tp[i];
    sum += (v > 0.0 ? v : 0.0) - v * tv + log1p(exp(-fabs(v)));
  }
  *(float *)loss->data = (float)(sum / (double)n);
  return GF_OK;
}

gf_status gf_cpu_bce_bwd(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *t,
                         float dloss, gf_tensor *dx, gf_err *err) {
  (void)err;
  const float *xp = x->data, *tp = t->data;
  float *o = dx->data;
  int64_t n = gf_tensor_numel(x);
  float scale = (float)((double)dloss / (double)n);
  int nt = ctx->nthreads;
  PAR_FOR
  for (int64_t i = 0; i < n; i++) o[i] = scale * (sigmoidf_(xp[i]) - tp[i]);
  return GF_OK;
}

gf_status gf_cpu_adam(gf_ctx *ctx, const gf_adam_params *p, int64_t step,
                      gf_tensor *param, const gf_tensor *grad, gf_tensor *m,
                      gf_tensor *v, gf_err *err) {
  (void)err;
  float *w = param->data, *mp = m->data, *vp = v->data;
  const float *g = grad->data;
  int64_t n = gf_tensor_numel(param);
  /* Scalars as torch.optim.Adam forms them (Python floats, i.e. double). */
  double bc1 = 1.0 - pow(p->beta1, (double)step);
  double bc2 = 1.0 - pow(p->beta2, (double)step);
  const float b1 = (float)p->beta1, b2 = (float)p->beta2;
  const float omb1 = (float)(1.0 - p->beta1);
  const float omb2 = (float)(1.0 - p->beta2);
  const float step_size = (float)(p->lr / bc1);
  const float bc2_sqrt = (float)sqrt(bc2);
  const float eps = (float)p->eps, wd = (float)p->weight_decay;
  int nt = ctx->nthreads;
  if (wd != 0.0f) {
    PAR_FOR
    for (int64_t i = 0; i < n; i++) {
      float gi = g[i] + wd * w[i];
      float mi = mp[i] * b1 + omb1 * gi;
      float vi = vp[i] * b2 + omb2 * gi * gi;
      mp[i] = mi;
      vp[i] = vi;
      float denom = sqrtf(vi) / bc2_sqrt + eps;
      w[i] -= step_size * (mi / denom);
    }
    return GF_OK;
  }
  PAR_FOR
  for (int64_t i = 0; i < n; i++) {
    float gi = g[i];
    float mi = mp[i] * b1 + omb1 * gi;
    float vi = vp[i] * b2 + omb2 * gi * gi;
    mp[i] = mi;
    vp[i] = vi;
    float denom = sqrtf(vi) / bc2_sqrt + eps;
    w[i] -= step_size * (mi / denom);
  }
  return GF_OK;
}

gf_status gf_cpu_fill(gf_ctx *ctx, gf_tensor *t, float value, gf_err *err) {
  (void)err;
  float *o = t->data;
  int64_t n = gf_tensor_numel(t);
  int nt = ctx->nthreads;
  PAR_FOR
  for (int64_t i = 0; i < n; i++) o[i] = value;
  return GF_OK;
}

gf_status gf_cpu_copy(gf_ctx *ctx, const gf_tensor *src, gf_tensor *dst,
                      gf_err *err) {
  (void)ctx;
  (void)err;
  if (src->data != dst->data)
    memmove(dst->data, src->data, gf_tensor_nbytes(src));
  return GF_OK;
}

/* x, dy, dx viewed as [N, C, S]. Per channel, as the CUDA kernel
 * (bn_bwd_dx_coef_k) does it: rstd in float exactly as oneDNN's batch norm
 * forms it (1 / sqrtf(var + eps)), a = gamma rstd, and the two quotients
 * mdy = sum_dy / count, k = rstd sum_dy_xhat / count in double, rounded
 * once; then per element, in float, dx = a (dy - mdy - (x - mean) k). No
 * restrict: dx may be dy or x. */
gf_status gf_cpu_bn_bwd_dx(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *gamma, const gf_tensor *mean,
                           const gf_tensor *var, float eps,
                           const gf_tensor *dy, const gf_tensor *sum_dy,
                           const gf_tensor *sum_dy_xhat, double count,
                           gf_tensor *dx, gf_err *err) {
  (void)err;
  int64_t N = x->shape[0], C = x->shape[1];
  int64_t S = x->ndim == 4 ? x->shape[2] * x->shape[3] : 1;
  const float *xp = x->data, *gp = gamma ? gamma->data : NULL;
  const float *mp = mean->data, *vp = var->data, *g = dy->data;
  const float *sdy = sum_dy->data, *sdx = sum_dy_xhat->data;
  float *o = dx->data;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (N * C * S >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t c = 0; c < C; c++) {
    float rstd = 1.0f / sqrtf(vp[c] + eps);
    float a = (gp ? gp[c] : 1.0f) * rstd;
    float mdy = (float)((double)sdy[c] / count);
    float k = (float)((double)rstd * (double)sdx[c] / count);
    float mu = mp[c];
    for (int64_t n = 0; n < N; n++) {
      int64_t base = (n * C + c) * S;
      for (int64_t s = 0; s < S; s++) {
        float xv = xp[base + s], gv = g[base + s];
        o[base + s] = a * (gv - mdy - (xv - mu) * k);
      }
    }
  }
  return GF_OK;
}
