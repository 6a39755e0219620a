/* cuda_resample.cu - the CUDA backend's residual-network kernels: nearest
 * 2x upsampling and its gradient, the average-pooling gradient over
 * non-overlapping windows, the element-wise add; see cuda_resample.h for
 * the launchers' contracts. One thread per output element (grid-stride
 * loops), each forming its element from its own inputs in the CPU
 * backend's order (cpu_resample.c) with explicit __f*_rn intrinsics, so
 * nvcc neither contracts nor folds (0 + x stays an add: -0 becomes +0, as
 * in PyTorch). Deterministic: no atomics. No __restrict__ in add, whose
 * output may be an input. */
#include <stdint.h>

#include "cuda_launch.cuh"
#include "cuda_resample.h"

namespace {

/* i over y's n = planes 2H 2W elements; OW = 2W. */
__global__ void upsample2x_fwd_k(const float *__restrict__ x,
                                 float *__restrict__ y, int64_t H, int64_t W,
                                 int64_t n) {
  int64_t OW = 2 * W;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t row = i / OW, oj = i - row * OW; /* row: plane p, row oi */
    int64_t p = row / (2 * H), oi = row - p * (2 * H);
    y[i] = x[(p * H + (oi >> 1)) * W + (oj >> 1)];
  }
}

/* i over dx's n = planes H W elements. */
__global__ void upsample2x_bwd_k(const float *__restrict__ dy,
                                 float *__restrict__ dx, int64_t W, int64_t n) {
  int64_t OW = 2 * W;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i / W, j = i - r * W; /* r: a row of the stacked planes */
    const float *g0 = dy + 2 * r * OW + 2 * j, *g1 = g0 + OW;
    float s = __fadd_rn(0.0f, g0[0]);
    s = __fadd_rn(s, g0[1]);
    s = __fadd_rn(s, g1[0]);
    dx[i] = __fadd_rn(s, g1[1]);
  }
}

/* i over dx's n = planes (OH kh) (OW kw) elements. */
__global__ void avgpool2d_bwd_k(const float *__restrict__ dy,
                                float *__restrict__ dx, int64_t OW, int kh,
                                int kw, float div, int64_t n) {
  int64_t W = OW * kw;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i / W, j = i - r * W; /* r: a row of the stacked planes */
    float q = __fdiv_rn(dy[(r / kh) * OW + j / kw], div);
    dx[i] = __fadd_rn(0.0f, q);
  }
}

__global__ void add_k(const float *a, const float *b, float *y, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] = __fadd_rn(a[i], b[i]);
}

}  // namespace

extern "C" {

cudaError_t gf_cuk_upsample_nearest2x_fwd(cudaStream_t s, const float *x,
                                          float *y, int64_t planes, int64_t H,
                                          int64_t W) {
  int64_t n = planes * 4 * H * W;
  if (n <= 0) return cudaSuccess;
  upsample2x_fwd_k<<<blocks_for(n), kThreads, 0, s>>>(x, y, H, W, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_upsample_nearest2x_bwd(cudaStream_t s, const float *dy,
                                          float *dx, int64_t planes, int64_t H,
                                          int64_t W) {
  int64_t n = planes * H * W;
  if (n <= 0) return cudaSuccess;
  upsample2x_bwd_k<<<blocks_for(n), kThreads, 0, s>>>(dy, dx, W, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_avgpool2d_bwd(cudaStream_t s, const float *dy, float *dx,
                                 int64_t planes, int64_t OH, int64_t OW, int kh,
                                 int kw) {
  int64_t n = planes * OH * kh * OW * kw;
  if (n <= 0) return cudaSuccess;
  float div = (float)((int64_t)kh * kw);
  avgpool2d_bwd_k<<<blocks_for(n), kThreads, 0, s>>>(dy, dx, OW, kh, kw, div,
                                                     n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_add(cudaStream_t s, const float *a, const float *b, float *y,
                       int64_t n) {
  if (n <= 0) return cudaSuccess;
  add_k<<<blocks_for(n), kThreads, 0, s>>>(a, b, y, n);
  return cudaGetLastError();
}

}  // extern "C"
