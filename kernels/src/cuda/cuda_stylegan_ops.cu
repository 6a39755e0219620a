/* cuda_stylegan_ops.cu - the CUDA backend's StyleGAN2 layer kernels: bias
 * + activation + gain + clamp and its gradient, the minibatch standard
 * deviation and its gradient, noise injection and its strength gradient;
 * see cuda_stylegan_ops.h for the launchers' contracts. Every element is
 * formed as the CPU backend forms it (cpu_stylegan_ops.c) with explicit
 * __f*_rn / __d*_rn intrinsics, so nvcc neither contracts nor reorders;
 * every sum is a lane sum of reduce_order.h (a block of GF_RED_LANES
 * threads, thread j the lane j, the tree of cuda_lanes.cuh), in the CPU's
 * order: the plane sums per plane into a double scratch row, then one block
 * per column of the lane sums over it; mbstd one block per group and slice.
 * Results are the CPU's bits. Deterministic: no atomics. No __restrict__
 * where an output may be an input (y = x, dx = dy). */
#include <stdint.h>

#include "../reduce_order.h"
#include "cuda_lanes.cuh"
#include "cuda_launch.cuh"
#include "cuda_stylegan_ops.h"

namespace {

constexpr int kLanes = GF_RED_LANES;

/* Blocks for one block per item (planes, channels, groups), the kernel
 * looping over the rest. */
unsigned item_blocks(int64_t n) {
  return n < 1 ? 1u : (unsigned)(n < kMaxBlocks ? n : kMaxBlocks);
}

/* ---- bias + activation + gain + clamp ----------------------------------- */

__device__ __forceinline__ float bias_act_y(float t, int lrelu, float alpha,
                                            float gain, float clamp) {
  float a = (lrelu && !(t > 0.0f)) ? __fmul_rn(t, alpha) : t;
  float v = __fmul_rn(a, gain);
  if (clamp >= 0.0f) v = v < -clamp ? -clamp : (v > clamp ? clamp : v);
  return v;
}

/* dx of one element from the forward output y and its gradient g. */
__device__ __forceinline__ float bias_act_dx(float y, float g, int lrelu,
                                             float alpha, float gain,
                                             float clamp) {
  float m = (clamp < 0.0f || fabsf(y) < clamp) ? g : 0.0f;
  float d = __fmul_rn(m, gain);
  if (lrelu && !(y > 0.0f)) d = __fmul_rn(d, alpha);
  return d;
}

__global__ void bias_act_fwd_k(const float *x, const float *__restrict__ b,
                               float *y, int64_t C, int64_t S, int64_t n,
                               int lrelu, float alpha, float gain,
                               float clamp) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float t = x[i];
    if (b) t = __fadd_rn(t, b[(i / S) % C]);
    y[i] = bias_act_y(t, lrelu, alpha, gain, clamp);
  }
}

/* dx element by element (when non-NULL) and, for planes of one element
 * ([N, C]: S = 1), the plane sums part[i] = 0 + dx[i]: a lane sum of one
 * term, the tree adding only zeros to it (when part is non-NULL). */
__global__ void bias_act_dx_k(const float *__restrict__ y, const float *dy,
                              float *dx, double *__restrict__ part, int64_t n,
                              int lrelu, float alpha, float gain, float clamp) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float d = bias_act_dx(y[i], dy[i], lrelu, alpha, gain, clamp);
    if (dx) dx[i] = d;
    if (part) part[i] = __dadd_rn(0.0, (double)d);
  }
}

/* One block of kLanes threads per plane p: dx (when non-NULL) and the
 * plane's lane sum of dx into part[p]. */
__global__ void bias_act_plane_k(const float *__restrict__ y, const float *dy,
                                 float *dx, double *__restrict__ part,
                                 int64_t planes, int64_t S, int lrelu,
                                 float alpha, float gain, float clamp) {
  __shared__ double l[kLanes];
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const float *yr = y + p * S, *gr = dy + p * S;
    float *o = dx ? dx + p * S : nullptr;
    double acc = 0.0;
    for (int64_t s = threadIdx.x; s < S; s += kLanes) {
      float d = bias_act_dx(yr[s], gr[s], lrelu, alpha, gain, clamp);
      if (o) o[s] = d;
      acc = __dadd_rn(acc, (double)d);
    }
    l[threadIdx.x] = acc;
    double sum = lanes_tree(l);
    if (threadIdx.x == 0) part[p] = sum;
  }
}

/* One block of kLanes threads per column c of part [R, cols]: out[c] (+)=
 * the lane sum over r of part[r, c], rounded to f32 once. */
__global__ void column_sum_k(const double *__restrict__ part, int64_t R,
                             int64_t cols, float *__restrict__ out,
                             int accumulate) {
  __shared__ double l[kLanes];
  for (int64_t c = blockIdx.x; c < cols; c += gridDim.x) {
    double acc = 0.0;
    for (int64_t r = threadIdx.x; r < R; r += kLanes)
      acc = __dadd_rn(acc, part[r * cols + c]);
    l[threadIdx.x] = acc;
    double sum = lanes_tree(l);
    if (threadIdx.x == 0) {
      float v = (float)sum;
      out[c] = accumulate ? __fadd_rn(out[c], v) : v;
    }
  }
}

/* ---- minibatch standard deviation --------------------------------------- */

/* sd of the G values x[off + g step] (and their mean in *mu), as ops.h
 * defines them. */
__device__ double mbstd_sd(const float *__restrict__ x, int64_t off,
                           int64_t step, int64_t G, double *mu) {
  double s = 0.0;
  for (int64_t g = 0; g < G; g++) s = __dadd_rn(s, (double)x[off + g * step]);
  double m = __ddiv_rn(s, (double)G);
  double s2 = 0.0;
  for (int64_t g = 0; g < G; g++) {
    double t = __dsub_rn((double)x[off + g * step], m);
    s2 = __dadd_rn(s2, __dmul_rn(t, t));
  }
  double var = __ddiv_rn(s2, (double)G);
  *mu = m;
  return __dsqrt_rn(__dadd_rn(var, 1e-8));
}

/* y[n, c, p] = x[n, c, p] for c < C, i over x's n = N C HW elements. */
__global__ void mbstd_copy_k(const float *__restrict__ x, float *__restrict__ y,
                             int64_t CHW, int64_t CYHW, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t s = i / CHW;
    y[s * CYHW + (i - s * CHW)] = x[i];
  }
}

/* sd of an element (mbstd_sd) and its tangent along xd: *sdd, the means of
 * x and xd over the group in *mu, *mud (the CPU's order and roundings). */
__device__ double mbstd_sd_dot(const float *__restrict__ x,
                               const float *__restrict__ xd, int64_t off,
                               int64_t step, int64_t G, double *mu,
                               double *mud, double *sdd) {
  double sd = mbstd_sd(x, off, step, G, mu);
  double s = 0.0;
  for (int64_t g = 0; g < G; g++) s = __dadd_rn(s, (double)xd[off + g * step]);
  *mud = __ddiv_rn(s, (double)G);
  double a = 0.0;
  for (int64_t g = 0; g < G; g++) {
    double u = __dsub_rn((double)x[off + g * step], *mu);
    double ud = __dsub_rn((double)xd[off + g * step], *mud);
    a = __dadd_rn(a, __dmul_rn(u, ud));
  }
  *sdd = __ddiv_rn(__ddiv_rn(a, (double)G), sd);
  return sd;
}

/* The block's threads write (float)(S / K) into channel C + f of the G
 * samples of group m. */
__device__ void mbstd_put(float *__restrict__ y, double S, int64_t m,
                          int64_t f, int64_t M, int64_t C, int64_t HW,
                          int64_t G, int64_t F) {
  int64_t K = (C / F) * HW, CY = C + F;
  float stat = (float)__ddiv_rn(S, (double)K);
  for (int64_t q = threadIdx.x; q < G * HW; q += kLanes) {
    int64_t g = q / HW, p = q - g * HW;
    y[((g * M + m) * CY + C + f) * HW + p] = stat;
  }
}

/* One block of kLanes threads per item (m, f): the lane sum of the K sd's
 * (xd non-NULL: their tangents along xd, gf_mbstd_jvp) of slice f of group
 * m, stat = sum / K, then stat into channel C + f of the G samples of the
 * group. */
__global__ void mbstd_stat_k(const float *__restrict__ x,
                             const float *__restrict__ xd,
                             float *__restrict__ y, int64_t M, int64_t C,
                             int64_t HW, int64_t G, int64_t F) {
  __shared__ double l[kLanes];
  int64_t cF = C / F, K = cF * HW, step = M * C * HW;
  for (int64_t it = blockIdx.x; it < M * F; it += gridDim.x) {
    int64_t m = it / F, f = it - m * F;
    double acc = 0.0;
    for (int64_t k = threadIdx.x; k < K; k += kLanes) {
      double mu;
      int64_t off = (m * C + f * cF) * HW + k; /* c = f cF + k / HW */
      if (xd) {
        double mud, sdd;
        mbstd_sd_dot(x, xd, off, step, G, &mu, &mud, &sdd);
        acc = __dadd_rn(acc, sdd);
      } else {
        acc = __dadd_rn(acc, mbstd_sd(x, off, step, G, &mu));
      }
    }
    l[threadIdx.x] = acc;
    mbstd_put(y, lanes_tree(l), m, f, M, C, HW, G, F);
  }
}

/* The lane sum over (g, p) of channel C + f of group m of dy, / (G K);
 * every thread of the block gets it. */
__device__ double mbstd_q(const float *__restrict__ dy, double *l, int64_t m,
                          int64_t f, int64_t M, int64_t C, int64_t HW,
                          int64_t G, int64_t F) {
  int64_t CY = C + F, K = (C / F) * HW;
  double acc = 0.0;
  for (int64_t q = threadIdx.x; q < G * HW; q += kLanes) {
    int64_t g = q / HW, p = q - g * HW;
    acc = __dadd_rn(acc, (double)dy[((g * M + m) * CY + C + f) * HW + p]);
  }
  l[threadIdx.x] = acc;
  double r = __ddiv_rn(lanes_tree(l), (double)(G * K));
  __syncthreads();
  return r;
}

/* One block of kLanes threads per item (m, f): D, the lane sum over (g, p)
 * of dy[gM+m, C+f, p], then every dx element of slice f of group m. */
__global__ void mbstd_bwd_k(const float *__restrict__ x,
                            const float *__restrict__ dy,
                            float *__restrict__ dx, int64_t M, int64_t C,
                            int64_t HW, int64_t G, int64_t F) {
  __shared__ double l[kLanes];
  int64_t cF = C / F, K = cF * HW, CY = C + F, step = M * C * HW;
  for (int64_t it = blockIdx.x; it < M * F; it += gridDim.x) {
    int64_t m = it / F, f = it - m * F;
    double coef = mbstd_q(dy, l, m, f, M, C, HW, G, F);
    for (int64_t k = threadIdx.x; k < K; k += kLanes) {
      double mu;
      int64_t off = (m * C + f * cF) * HW + k;
      double sd = mbstd_sd(x, off, step, G, &mu);
      int64_t c = f * cF + k / HW, p = k % HW;
      for (int64_t g = 0; g < G; g++) {
        int64_t n = g * M + m;
        double u = __dsub_rn((double)x[off + g * step], mu);
        double t = __ddiv_rn(__dmul_rn(coef, u), sd);
        double s = __dadd_rn((double)dy[(n * CY + c) * HW + p], t);
        dx[off + g * step] = (float)s;
      }
    }
  }
}

__global__ void mbstd_bwd_jvp_k(const float *__restrict__ x,
                                const float *__restrict__ xd,
                                const float *__restrict__ dy,
                                const float *__restrict__ dyd,
                                float *__restrict__ dx, int64_t M, int64_t C,
                                int64_t HW, int64_t G, int64_t F) {
  __shared__ double l[kLanes];
  int64_t cF = C / F, K = cF * HW, CY = C + F, step = M * C * HW;
  for (int64_t it = blockIdx.x; it < M * F; it += gridDim.x) {
    int64_t m = it / F, f = it - m * F;
    double q = mbstd_q(dy, l, m, f, M, C, HW, G, F);
    double qd = mbstd_q(dyd, l, m, f, M, C, HW, G, F);
    for (int64_t k = threadIdx.x; k < K; k += kLanes) {
      double mu, mud, sdd;
      int64_t off = (m * C + f * cF) * HW + k;
      double sd = mbstd_sd_dot(x, xd, off, step, G, &mu, &mud, &sdd);
      int64_t c = f * cF + k / HW, p = k % HW;
      for (int64_t g = 0; g < G; g++) {
        int64_t n = g * M + m;
        double u = __dsub_rn((double)x[off + g * step], mu);
        double ud = __dsub_rn((double)xd[off + g * step], mud);
        double t = __dadd_rn(__dmul_rn(qd, u), __dmul_rn(q, ud));
        double t2 = __ddiv_rn(__dmul_rn(__dmul_rn(q, u), sdd), sd);
        double r = __ddiv_rn(__dsub_rn(t, t2), sd);
        dx[off + g * step] =
            (float)__dadd_rn((double)dyd[(n * CY + c) * HW + p], r);
      }
    }
  }
}

/* ---- noise injection ---------------------------------------------------- */

__global__ void noise_add_fwd_k(const float *x, const float *__restrict__ z,
                                const float *__restrict__ strength, float *y,
                                int64_t CHW, int64_t HW, int64_t n) {
  float st = strength[0];
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t s = i / CHW;
    float t = __fmul_rn(z[s * HW + i % HW], st);
    y[i] = __fadd_rn(x[i], t);
  }
}

/* One block of kLanes threads per plane p = (n, c): the lane sum of
 * dy * noise[n] over the plane into part[p] (the products exact in
 * double). */
__global__ void noise_plane_k(const float *__restrict__ dy,
                              const float *__restrict__ z,
                              double *__restrict__ part, int64_t planes,
                              int64_t C, int64_t HW) {
  __shared__ double l[kLanes];
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const float *gr = dy + p * HW, *zr = z + (p / C) * HW;
    double acc = 0.0;
    for (int64_t s = threadIdx.x; s < HW; s += kLanes)
      acc = __dadd_rn(acc, __dmul_rn((double)gr[s], (double)zr[s]));
    l[threadIdx.x] = acc;
    double sum = lanes_tree(l);
    if (threadIdx.x == 0) part[p] = sum;
  }
}

}  // namespace

extern "C" {

cudaError_t gf_cuk_bias_act_fwd(cudaStream_t s, const float *x, const float *b,
                                float *y, int64_t planes, int64_t C, int64_t S,
                                int lrelu, float alpha, float gain,
                                float clamp) {
  int64_t n = planes * S;
  if (n <= 0) return cudaSuccess;
  bias_act_fwd_k<<<blocks_for(n), kThreads, 0, s>>>(x, b, y, C, S, n, lrelu,
                                                    alpha, gain, clamp);
  return cudaGetLastError();
}

cudaError_t gf_cuk_bias_act_bwd(cudaStream_t s, const float *y, const float *dy,
                                float *dx, float *db, double *scratch,
                                int64_t N, int64_t C, int64_t S, int lrelu,
                                float alpha, float gain, float clamp,
                                int accumulate) {
  int64_t planes = N * C, n = planes * S;
  if (n <= 0 || (!dx && !db)) return cudaSuccess;
  if (!db || S == 1) /* no plane sums, or planes of one element */
    bias_act_dx_k<<<blocks_for(n), kThreads, 0, s>>>(y, dy, dx,
                                                     db ? scratch : nullptr, n,
                                                     lrelu, alpha, gain, clamp);
  else
    bias_act_plane_k<<<item_blocks(planes), kLanes, 0, s>>>(y, dy, dx, scratch,
                                                            planes, S, lrelu,
                                                            alpha, gain, clamp);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess || !db) return e;
  column_sum_k<<<item_blocks(C), kLanes, 0, s>>>(scratch, N, C, db, accumulate);
  return cudaGetLastError();
}

cudaError_t gf_cuk_mbstd_fwd(cudaStream_t s, const float *x, float *y,
                             int64_t N, int64_t C, int64_t HW, int64_t G,
                             int64_t F) {
  int64_t n = N * C * HW;
  if (n <= 0) return cudaSuccess;
  mbstd_copy_k<<<blocks_for(n), kThreads, 0, s>>>(x, y, C * HW, (C + F) * HW,
                                                  n);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  int64_t M = N / G;
  mbstd_stat_k<<<item_blocks(M * F), kLanes, 0, s>>>(x, nullptr, y, M, C, HW,
                                                     G, F);
  return cudaGetLastError();
}

cudaError_t gf_cuk_mbstd_bwd(cudaStream_t s, const float *x, const float *dy,
                             float *dx, int64_t N, int64_t C, int64_t HW,
                             int64_t G, int64_t F) {
  if (N * C * HW <= 0) return cudaSuccess;
  int64_t M = N / G;
  mbstd_bwd_k<<<item_blocks(M * F), kLanes, 0, s>>>(x, dy, dx, M, C, HW, G, F);
  return cudaGetLastError();
}

cudaError_t gf_cuk_mbstd_jvp(cudaStream_t s, const float *x, const float *xd,
                             float *y, int64_t N, int64_t C, int64_t HW,
                             int64_t G, int64_t F) {
  int64_t n = N * C * HW;
  if (n <= 0) return cudaSuccess;
  mbstd_copy_k<<<blocks_for(n), kThreads, 0, s>>>(xd, y, C * HW, (C + F) * HW,
                                                  n);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  int64_t M = N / G;
  mbstd_stat_k<<<item_blocks(M * F), kLanes, 0, s>>>(x, xd, y, M, C, HW, G,
                                                     F);
  return cudaGetLastError();
}

cudaError_t gf_cuk_mbstd_bwd_jvp(cudaStream_t s, const float *x,
                                 const float *xd, const float *dy,
                                 const float *dyd, float *dx, int64_t N,
                                 int64_t C, int64_t HW, int64_t G, int64_t F) {
  if (N * C * HW <= 0) return cudaSuccess;
  int64_t M = N / G;
  mbstd_bwd_jvp_k<<<item_blocks(M * F), kLanes, 0, s>>>(x, xd, dy, dyd, dx, M,
                                                        C, HW, G, F);
  return cudaGetLastError();
}

cudaError_t gf_cuk_noise_add_fwd(cudaStream_t s, const float *x,
                                 const float *noise, const float *strength,
                                 float *y, int64_t N, int64_t C, int64_t HW) {
  int64_t n = N * C * HW;
  if (n <= 0) return cudaSuccess;
  noise_add_fwd_k<<<blocks_for(n), kThreads, 0, s>>>(x, noise, strength, y,
                                                     C * HW, HW, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_noise_strength_grad(cudaStream_t s, const float *dy,
                                       const float *noise, float *dstrength,
                                       double *scratch, int64_t N, int64_t C,
                                       int64_t HW, int accumulate) {
  int64_t planes = N * C;
  if (planes * HW <= 0) return cudaSuccess;
  noise_plane_k<<<item_blocks(planes), kLanes, 0, s>>>(dy, noise, scratch,
                                                       planes, C, HW);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  column_sum_k<<<1, kLanes, 0, s>>>(scratch, planes, 1, dstrength, accumulate);
  return cudaGetLastError();
}

}  // extern "C"
