/* cpu_resample.c - the CPU backend's ops of residual networks (ops.h,
 * "residual networks"): nearest 2x upsampling and its gradient, the
 * gradient of average pooling over non-overlapping windows, and the
 * element-wise add. Plain C loops with OpenMP threads (no oneDNN). Every
 * output element is computed from its own inputs by the same f32
 * operations in the same order as PyTorch's CPU kernels and the CUDA twins
 * (cuda_resample.cu), so the bits do not depend on the thread count:
 *  - the upsampling gradient adds its four terms into +0.0f, top row
 *    left to right, then the bottom row (PyTorch's zeroed grad_input, its
 *    output pixels walked row by row);
 *  - the pooling gradient is one division by kh*kw, added to +0.0f;
 *  - one f32 rounding per operation (the build's ISO C mode turns FMA
 *    contraction off, and x + 0.0f is not folded without -ffast-math).
 * The loops split whole rows of the stacked planes (N C H rows) over the
 * threads. Argument checking happened in ops.c (shapes, no overlap,
 * windows that tile the input). Not for the forward pooling (cpu_pool.c). */
#include <string.h>

#include "cpu_backend.h"

gf_status gf_cpu_upsample_nearest2x_fwd(gf_ctx *ctx, const gf_tensor *x,
                                        gf_tensor *y, gf_err *err) {
  (void)err;
  int64_t H = x->shape[2], W = x->shape[3];
  int64_t rows = x->shape[0] * x->shape[1] * H; /* input rows, all planes */
  const float *X = x->data;
  float *Y = y->data;
  int nt = ctx->nthreads;
  /* Input row r (plane r / H, row r % H) gives output rows 2r and 2r + 1
   * of the stacked planes: output plane p's row 2i is stacked row
   * 2 (p H + i). */
#pragma omp parallel for num_threads(nt) if (rows * W >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    const float *xr = X + r * W;
    float *y0 = Y + 2 * r * (2 * W);
    for (int64_t j = 0; j < W; j++) {
      float v = xr[j];
      y0[2 * j] = v;
      y0[2 * j + 1] = v;
    }
    memcpy(y0 + 2 * W, y0, (size_t)(2 * W) * sizeof(float));
  }
  return GF_OK;
}

gf_status gf_cpu_upsample_nearest2x_bwd(gf_ctx *ctx, const gf_tensor *dy,
                                        gf_tensor *dx, gf_err *err) {
  (void)err;
  int64_t H = dx->shape[2], W = dx->shape[3];
  int64_t rows = dx->shape[0] * dx->shape[1] * H; /* dx rows, all planes */
  const float *G = dy->data;
  float *D = dx->data;
  int nt = ctx->nthreads;
#pragma omp parallel for num_threads(nt) if (rows * W >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t r = 0; r < rows; r++) {
    const float *g0 = G + 2 * r * (2 * W), *g1 = g0 + 2 * W;
    float *o = D + r * W;
    for (int64_t j = 0; j < W; j++) {
      float s = 0.0f + g0[2 * j];
      s = s + g0[2 * j + 1];
      s = s + g1[2 * j];
      o[j] = s + g1[2 * j + 1];
    }
  }
  return GF_OK;
}

gf_status gf_cpu_avgpool2d_bwd(gf_ctx *ctx, const gf_tensor *dy,
                               const gf_pool_params *p, gf_tensor *dx,
                               gf_err *err) {
  (void)err;
  int kh = p->kernel[0], kw = p->kernel[1];
  int64_t OH = dy->shape[2], OW = dy->shape[3], W = dx->shape[3];
  int64_t orows = dy->shape[0] * dy->shape[1] * OH; /* dy rows, all planes */
  const float *G = dy->data;
  float *D = dx->data;
  int64_t n = orows * kh * W; /* dx's numel */
  float div = (float)((int64_t)kh * kw);
  int nt = ctx->nthreads;
  /* dy row r covers dx rows r kh .. r kh + kh - 1 of the stacked planes
   * (dx's H = OH kh). The first is formed, the others copied. */
#pragma omp parallel for num_threads(nt) if (n >= GF_PAR_MIN) schedule(static)
  for (int64_t r = 0; r < orows; r++) {
    const float *gr = G + r * OW;
    float *o = D + r * kh * W;
    for (int64_t ow = 0; ow < OW; ow++) {
      float q = gr[ow] / div;
      q = 0.0f + q;
      for (int b = 0; b < kw; b++) o[ow * kw + b] = q;
    }
    for (int a = 1; a < kh; a++)
      memcpy(o + a * W, o, (size_t)W * sizeof(float));
  }
  return GF_OK;
}

gf_status gf_cpu_add(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                     gf_tensor *y, gf_err *err) {
  (void)err;
  int64_t n = gf_tensor_numel(y);
  const float *A = a->data, *B = b->data;
  float *Y = y->data; /* may be A or B: each element read, then written */
  int nt = ctx->nthreads;
#pragma omp parallel for simd num_threads(nt) if (n >= GF_PAR_MIN) \
    schedule(static)
  for (int64_t i = 0; i < n; i++) Y[i] = A[i] + B[i];
  return GF_OK;
}
