/* cuda_kernels.cu - the CUDA backend's own kernels: activations, dropout
 * (Philox-4x32-10, word for word the CPU stream of gf/philox.h), BCE with
 * logits, fused Adam, fill, bias add / bias gradient, the BN statistic
 * conversions and the sync-BN dx; see cuda_kernels.h for the launchers'
 * contracts.
 * Every reduction has a fixed order, so results do not vary between runs
 * (DESIGN §4.1). Elementwise kernels are grid-stride loops. */
#include <math.h>

#include "cuda_kernels.h"
#include "cuda_launch.cuh"

namespace {

/* Activation kinds, as GF_ACT_* in backend.h. */
enum { ACT_RELU = 0, ACT_LEAKY = 1, ACT_TANH = 2, ACT_SIGMOID = 3 };

__device__ __forceinline__ float sigmoid_f(float x) {
  if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
  float e = expf(x);
  return e / (1.0f + e);
}

/* The element-wise kernels take no __restrict__ on their input/output
 * pairs: the API lets y be x and dx be dy (each element is read before it
 * is written, by the same thread). */
__global__ void act_fwd_k(int kind, float alpha, const float *x, float *y,
                          int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float v = x[i];
    float r;
    switch (kind) {
    case ACT_RELU: r = v > 0.0f ? v : 0.0f; break;
    case ACT_LEAKY: r = v > 0.0f ? v : alpha * v; break;
    case ACT_TANH: r = tanhf(v); break;
    default: r = sigmoid_f(v); break;
    }
    y[i] = r;
  }
}

__global__ void act_bwd_k(int kind, float alpha, const float *a,
                          const float *g, float *o, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float gi = g[i], ai = a[i], r;
    switch (kind) {
    case ACT_RELU: r = ai > 0.0f ? gi : 0.0f; break;
    case ACT_LEAKY: r = ai > 0.0f ? gi : alpha * gi; break;
    case ACT_TANH: r = gi * (1.0f - ai * ai); break;
    default: r = gi * ai * (1.0f - ai); break;
    }
    o[i] = r;
  }
}

/* Philox-4x32-10 as kernels/src/philox.c. */
__device__ __forceinline__ void philox(uint32_t c[4], uint32_t k0,
                                       uint32_t k1) {
  for (int r = 0; r < 10; r++) {
    if (r > 0) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint32_t hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
    uint32_t hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
    uint32_t n0 = hi1 ^ c[1] ^ k0, n2 = hi0 ^ c[3] ^ k1;
    c[0] = n0;
    c[1] = lo1;
    c[2] = n2;
    c[3] = lo0;
  }
}

/* One thread per Philox block: words 4b .. 4b+3 of the stream cover the
 * elements i with offset + i in that range. */
__global__ void dropout_k(const float *x, float *y,
                          int64_t n, float p, float scale, uint32_t k0,
                          uint32_t k1, uint32_t h0, uint32_t h1,
                          uint64_t offset) {
  uint64_t first = offset >> 2;
  uint64_t last = (offset + (uint64_t)n - 1) >> 2;
  uint64_t nblk = last - first + 1;
  for (uint64_t b = blockIdx.x * (uint64_t)blockDim.x + threadIdx.x; b < nblk;
       b += (uint64_t)gridDim.x * blockDim.x) {
    uint64_t blk = first + b;
    uint32_t c[4] = {(uint32_t)blk, (uint32_t)(blk >> 32), h0, h1};
    philox(c, k0, k1);
    for (int lane = 0; lane < 4; lane++) {
      uint64_t w = blk * 4 + (uint64_t)lane;
      if (w < offset) continue;
      uint64_t i = w - offset;
      if (i >= (uint64_t)n) break;
      float u = (float)(c[lane] >> 8) * 0x1p-24f;
      y[i] = x[i] * (u >= p ? scale : 0.0f);
    }
  }
}

constexpr int kReduceThreads = 1024;

__global__ void bce_fwd_k(const float *__restrict__ x,
                          const float *__restrict__ t, int64_t n,
                          float *__restrict__ out) {
  __shared__ double part[kReduceThreads];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kReduceThreads) {
    double v = x[i], tv = t[i];
    s += (v > 0.0 ? v : 0.0) - v * tv + log1p(exp(-fabs(v)));
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kReduceThreads / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = (float)(part[0] / (double)n);
}

__global__ void bce_bwd_k(const float *x, const float *t, float scale,
                          float *dx, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    dx[i] = scale * (sigmoid_f(x[i]) - t[i]);
}

__global__ void adam_k(gf_cuk_adam_args a, float *__restrict__ w,
                       const float *__restrict__ g, float *__restrict__ m,
                       float *__restrict__ v, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float wi = w[i];
    float gi = a.wd != 0.0f ? g[i] + a.wd * wi : g[i];
    float mi = m[i] * a.b1 + a.omb1 * gi;
    float vi = v[i] * a.b2 + a.omb2 * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float denom = sqrtf(vi) / a.bc2_sqrt + a.eps;
    w[i] = wi - a.step_size * (mi / denom);
  }
}

__global__ void fill_k(float *__restrict__ t, float value, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    t[i] = value;
}

__global__ void bias_add_k(float *__restrict__ y, const float *__restrict__ b,
                           int64_t C, int64_t S, int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x)
    y[i] += b[(i / S) % C];
}

/* One block per channel; thread j sums elements j, j + blockDim, ... of the
 * channel's N*S values, then a fixed tree combines the partial sums. */
__global__ void bias_grad_k(const float *__restrict__ dy, int64_t N,
                            int64_t C, int64_t S, float *__restrict__ db,
                            int accumulate) {
  __shared__ float part[kThreads];
  int64_t c = blockIdx.x;
  int64_t m = N * S;
  float s = 0.0f;
  for (int64_t j = threadIdx.x; j < m; j += kThreads) {
    int64_t nn = j / S, ss = j % S;
    s += dy[(nn * C + c) * S + ss];
  }
  part[threadIdx.x] = s;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if ((int)threadIdx.x < w) part[threadIdx.x] += part[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) db[c] = accumulate ? db[c] + part[0] : part[0];
}

__global__ void bn_invstd_k(const float *__restrict__ var, float eps,
                            float *__restrict__ inv, int64_t C) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C;
       c += (int64_t)gridDim.x * blockDim.x)
    inv[c] = 1.0f / sqrtf(var[c] + eps);
}

__global__ void bn_var_k(const float *__restrict__ inv, float eps,
                         float *__restrict__ var, int64_t C) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C;
       c += (int64_t)gridDim.x * blockDim.x) {
    double d = (double)inv[c];
    double v = 1.0 / (d * d) - (double)eps;
    var[c] = v > 0.0 ? (float)v : 0.0f;
  }
}

/* Per channel: coef[c] = gamma rstd, coef[C + c] = sum_dy / count,
 * coef[2C + c] = rstd sum_dy_xhat / count, formed as gf_cpu_bn_bwd_dx
 * forms them. */
__global__ void bn_bwd_dx_coef_k(const float *__restrict__ gamma,
                                 const float *__restrict__ var,
                                 const float *__restrict__ sum_dy,
                                 const float *__restrict__ sum_dy_xhat,
                                 float eps, double count, int64_t C,
                                 float *__restrict__ coef) {
  for (int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; c < C;
       c += (int64_t)gridDim.x * blockDim.x) {
    float rstd = 1.0f / sqrtf(var[c] + eps);
    coef[c] = (gamma ? gamma[c] : 1.0f) * rstd;
    coef[C + c] = (float)((double)sum_dy[c] / count);
    coef[2 * C + c] = (float)((double)rstd * (double)sum_dy_xhat[c] / count);
  }
}

/* No __restrict__ on x, dy, dx: dx may be either input. */
__global__ void bn_bwd_dx_k(const float *x, const float *dy,
                            const float *__restrict__ mean,
                            const float *__restrict__ coef, int64_t C,
                            int64_t S, float *dx, int64_t total) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < total;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t c = (i / S) % C;
    float xv = x[i], gv = dy[i];
    dx[i] = coef[c] * (gv - coef[C + c] - (xv - mean[c]) * coef[2 * C + c]);
  }
}

}  // namespace

extern "C" {

cudaError_t gf_cuk_act_fwd(cudaStream_t s, int kind, float alpha,
                           const float *x, float *y, int64_t n) {
  if (n <= 0) return cudaSuccess;
  act_fwd_k<<<blocks_for(n), kThreads, 0, s>>>(kind, alpha, x, y, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_act_bwd(cudaStream_t s, int kind, float alpha,
                           const float *in, const float *dy, float *dx,
                           int64_t n) {
  if (n <= 0) return cudaSuccess;
  act_bwd_k<<<blocks_for(n), kThreads, 0, s>>>(kind, alpha, in, dy, dx, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_dropout(cudaStream_t s, const float *x, float *y,
                           int64_t n, float p, float scale,
                           const uint32_t key[2], const uint32_t ctr_hi[2],
                           uint64_t offset) {
  if (n <= 0) return cudaSuccess;
  int64_t nblk = (int64_t)((offset + (uint64_t)n - 1) >> 2) -
                 (int64_t)(offset >> 2) + 1;
  dropout_k<<<blocks_for(nblk), kThreads, 0, s>>>(
      x, y, n, p, scale, key[0], key[1], ctr_hi[0], ctr_hi[1], offset);
  return cudaGetLastError();
}

cudaError_t gf_cuk_bce_fwd(cudaStream_t s, const float *x, const float *t,
                           int64_t n, float *out) {
  if (n <= 0) return cudaSuccess;
  bce_fwd_k<<<1, kReduceThreads, 0, s>>>(x, t, n, out);
  return cudaGetLastError();
}

cudaError_t gf_cuk_bce_bwd(cudaStream_t s, const float *x, const float *t,
                           float scale, float *dx, int64_t n) {
  if (n <= 0) return cudaSuccess;
  bce_bwd_k<<<blocks_for(n), kThreads, 0, s>>>(x, t, scale, dx, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_adam(cudaStream_t s, const gf_cuk_adam_args *a, float *w,
                        const float *g, float *m, float *v, int64_t n) {
  if (n <= 0) return cudaSuccess;
  adam_k<<<blocks_for(n), kThreads, 0, s>>>(*a, w, g, m, v, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_fill(cudaStream_t s, float *t, float value, int64_t n) {
  if (n <= 0) return cudaSuccess;
  fill_k<<<blocks_for(n), kThreads, 0, s>>>(t, value, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_bias_add(cudaStream_t s, float *y, const float *b,
                            int64_t N, int64_t C, int64_t S) {
  int64_t total = N * C * S;
  if (total <= 0) return cudaSuccess;
  bias_add_k<<<blocks_for(total), kThreads, 0, s>>>(y, b, C, S, total);
  return cudaGetLastError();
}

cudaError_t gf_cuk_bias_grad(cudaStream_t s, const float *dy, int64_t N,
                             int64_t C, int64_t S, float *db,
                             int accumulate) {
  if (C <= 0) return cudaSuccess;
  bias_grad_k<<<(unsigned)C, kThreads, 0, s>>>(dy, N, C, S, db, accumulate);
  return cudaGetLastError();
}

cudaError_t gf_cuk_bn_invstd(cudaStream_t s, const float *var, float eps,
                             float *invstd, int64_t C) {
  if (C <= 0) return cudaSuccess;
  bn_invstd_k<<<blocks_for(C), kThreads, 0, s>>>(var, eps, invstd, C);
  return cudaGetLastError();
}

cudaError_t gf_cuk_bn_var(cudaStream_t s, const float *invstd, float eps,
                          float *var, int64_t C) {
  if (C <= 0) return cudaSuccess;
  bn_var_k<<<blocks_for(C), kThreads, 0, s>>>(invstd, eps, var, C);
  return cudaGetLastError();
}

cudaError_t gf_cuk_bn_bwd_dx(cudaStream_t s, const float *x, const float *dy,
                             const float *gamma, const float *mean,
                             const float *var, const float *sum_dy,
                             const float *sum_dy_xhat, float eps,
                             double count, int64_t N, int64_t C, int64_t S,
                             float *coef, float *dx) {
  int64_t total = N * C * S;
  if (total <= 0) return cudaSuccess;
  bn_bwd_dx_coef_k<<<blocks_for(C), kThreads, 0, s>>>(
      gamma, var, sum_dy, sum_dy_xhat, eps, count, C, coef);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  bn_bwd_dx_k<<<blocks_for(total), kThreads, 0, s>>>(x, dy, mean, coef, C, S,
                                                      dx, total);
  return cudaGetLastError();
}

}  // extern "C"
