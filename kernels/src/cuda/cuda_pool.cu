/* cuda_pool.cu - the CUDA backend's forward-only pooling and bilinear
 * resize kernels (inference of a feature extractor); see cuda_pool.h for
 * the launchers' contracts. One thread per output element in grid-stride
 * loops; each thread reads its own window, so there is no reduction order
 * across threads and results do not vary between runs. */
#include <math.h>

#include "cuda_launch.cuh"
#include "cuda_pool.h"

namespace {

/* Pooling kinds, as GF_POOL_* in backend.h. */
enum { POOL_MAX = 0, POOL_AVG_INCLUDE = 1, POOL_AVG_EXCLUDE = 2 };

/* PyTorch's max: a NaN wins. */
__device__ __forceinline__ float max_nan(float m, float v) {
  return (v > m || isnan(v)) ? v : m;
}

__global__ void pool_fwd_k(gf_cuk_pool_args a, const float *__restrict__ x,
                           float *__restrict__ y, int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t ow = i % a.OW, t = i / a.OW;
    int64_t oh = t % a.OH, pl = t / a.OH;
    int64_t h0 = oh * a.sh - a.ph, w0 = ow * a.sw - a.pw;
    int64_t hs = h0 < 0 ? 0 : h0, he = h0 + a.kh > a.H ? a.H : h0 + a.kh;
    int64_t ws = w0 < 0 ? 0 : w0, we = w0 + a.kw > a.W ? a.W : w0 + a.kw;
    const float *xp = x + pl * a.H * a.W;
    float acc = 0.0f;
    for (int64_t w = ws; w < we; w++) {
      /* the column's reduction first, as the CPU's vertical pass */
      float c = xp[hs * a.W + w];
      for (int64_t h = hs + 1; h < he; h++) {
        float v = xp[h * a.W + w];
        c = a.kind == POOL_MAX ? max_nan(c, v) : __fadd_rn(c, v);
      }
      if (w == ws)
        acc = c;
      else
        acc = a.kind == POOL_MAX ? max_nan(acc, c) : __fadd_rn(acc, c);
    }
    if (a.kind == POOL_AVG_INCLUDE)
      acc = __fdiv_rn(acc, (float)(a.kh * a.kw));
    else if (a.kind == POOL_AVG_EXCLUDE)
      acc = __fdiv_rn(acc, (float)((he - hs) * (we - ws)));
    y[i] = acc;
  }
}

/* TF1 legacy coordinate: s = i * (in / out) in float, clamped. */
__device__ __forceinline__ void tap(int64_t i, int64_t in, float scale,
                                    int64_t *i0, int64_t *i1, float *f) {
  float s = __fmul_rn((float)i, scale);
  float top = (float)(in - 1);
  s = s < 0.0f ? 0.0f : (s > top ? top : s);
  float fl = floorf(s);
  *i0 = (int64_t)fl;
  *i1 = *i0 + 1 < in ? *i0 + 1 : in - 1;
  *f = __fsub_rn(s, fl);
}

/* Products and sums rounded one by one (no FMA), as the CPU computes
 * gx * a + fx * b. */
__device__ __forceinline__ float lerp_rn(float g, float a, float f, float b) {
  return __fadd_rn(__fmul_rn(g, a), __fmul_rn(f, b));
}

__global__ void resize_bilinear_k(const float *__restrict__ x,
                                  float *__restrict__ y, int64_t H,
                                  int64_t W, int64_t OH, int64_t OW,
                                  float sy, float sx, int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t j = i % OW, t = i / OW;
    int64_t r = t % OH, pl = t / OH;
    int64_t y0, y1, x0, x1;
    float fy, fx;
    tap(r, H, sy, &y0, &y1, &fy);
    tap(j, W, sx, &x0, &x1, &fx);
    const float *p = x + pl * H * W;
    float gx = __fsub_rn(1.0f, fx), gy = __fsub_rn(1.0f, fy);
    float top = lerp_rn(gx, p[y0 * W + x0], fx, p[y0 * W + x1]);
    float bot = lerp_rn(gx, p[y1 * W + x0], fx, p[y1 * W + x1]);
    y[i] = lerp_rn(gy, top, fy, bot);
  }
}

}  // namespace

extern "C" {

cudaError_t gf_cuk_pool_fwd(cudaStream_t s, const gf_cuk_pool_args *a,
                            const float *x, float *y) {
  int64_t total = a->planes * a->OH * a->OW;
  if (total <= 0) return cudaSuccess;
  pool_fwd_k<<<blocks_for(total), kThreads, 0, s>>>(*a, x, y, total);
  return cudaGetLastError();
}

cudaError_t gf_cuk_resize_bilinear(cudaStream_t s, const float *x, float *y,
                                   int64_t planes, int64_t H, int64_t W,
                                   int64_t OH, int64_t OW) {
  int64_t total = planes * OH * OW;
  if (total <= 0) return cudaSuccess;
  /* the scales are formed on the host, in float, as the CPU forms them */
  float sy = (float)H / (float)OH, sx = (float)W / (float)OW;
  resize_bilinear_k<<<blocks_for(total), kThreads, 0, s>>>(x, y, H, W, OH, OW,
                                                           sy, sx, total);
  return cudaGetLastError();
}

}  // extern "C"
