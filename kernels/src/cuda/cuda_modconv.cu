/* cuda_modconv.cu - the CUDA backend's weight kernels of the modulated
 * convolution: modulation and demodulation, the gradient wrt the modulated
 * weights before demodulation, and the weight and style gradients; see
 * cuda_modconv.h for the launchers' contracts. Each row (n, o) and each
 * element of ds is one block of GF_RED_LANES threads summing in
 * reduce_order.h's lanes (cuda_lanes.cuh's tree); each element of dw one
 * thread summing over n in order. Every f32 and double operation that is
 * not a plain sum of exact products is an explicit __f*_rn / __d*_rn
 * intrinsic, so the results are the CPU's (cpu_modconv.c) bits.
 * Deterministic: no atomics. */
#include <stdint.h>

#include "cuda_lanes.cuh"
#include "cuda_launch.cuh"
#include "cuda_modconv.h"

namespace {

constexpr int kLanes = GF_RED_LANES;

/* One block per item (row, (n, i)), the kernel looping over the rest. */
unsigned blocks_per_row(int64_t n) {
  int64_t b = n > (1 << 20) ? (1 << 20) : n;
  return b < 1 ? 1u : (unsigned)b;
}

/* d = (float)(1 / sqrt(S + eps)), each double operation rounded once. */
__device__ float demod_coef(double S, float eps) {
  double t = __dadd_rn(S, (double)eps);
  return __double2float_rn(__ddiv_rn(1.0, __dsqrt_rn(t)));
}

__global__ void weight_fwd_k(const float *__restrict__ w,
                             const float *__restrict__ st,
                             float *__restrict__ wmod,
                             float *__restrict__ dcoef, int64_t rows,
                             int64_t Cout, int64_t Cin, int64_t khw,
                             int demodulate, float eps) {
  __shared__ double p[kLanes];
  int64_t K = Cin * khw;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t n = r / Cout, o = r - n * Cout;
    const float *wr = w + o * K, *sr = st + n * Cin;
    float *m = wmod + r * K;
    double acc = 0.0;
    for (int64_t k = threadIdx.x; k < K; k += kLanes) {
      float v = __fmul_rn(wr[k], sr[k / khw]);
      m[k] = v;
      acc = __dadd_rn(acc, __dmul_rn((double)v, (double)v));
    }
    float d = 1.0f;
    if (demodulate) { /* the same for the whole block */
      p[threadIdx.x] = acc;
      d = demod_coef(lanes_tree(p), eps);
      for (int64_t k = threadIdx.x; k < K; k += kLanes)
        m[k] = __fmul_rn(m[k], d); /* this thread's own m[k] */
    }
    if (dcoef && threadIdx.x == 0) dcoef[r] = d;
  }
}

__global__ void ws_grad_k(const float *__restrict__ w,
                          const float *__restrict__ st,
                          const float *__restrict__ dcoef,
                          const float *__restrict__ g, float *__restrict__ gws,
                          int64_t rows, int64_t Cout, int64_t Cin,
                          int64_t khw) {
  __shared__ double p[kLanes];
  int64_t K = Cin * khw;
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    int64_t n = r / Cout, o = r - n * Cout;
    const float *wr = w + o * K, *sr = st + n * Cin, *gr = g + r * K;
    double acc = 0.0;
    for (int64_t k = threadIdx.x; k < K; k += kLanes) {
      float v = __fmul_rn(wr[k], sr[k / khw]);
      acc = __dadd_rn(acc, __dmul_rn((double)gr[k], (double)v));
    }
    p[threadIdx.x] = acc;
    double G = lanes_tree(p);
    float d = dcoef[r];
    double dd = (double)d;
    float c = __double2float_rn(__dmul_rn(__dmul_rn(__dmul_rn(dd, dd), dd), G));
    float *out = gws + r * K;
    for (int64_t k = threadIdx.x; k < K; k += kLanes) {
      float v = __fmul_rn(wr[k], sr[k / khw]);
      out[k] = __fsub_rn(__fmul_rn(gr[k], d), __fmul_rn(v, c));
    }
  }
}

/* e over Cout K elements of dw. */
__global__ void dw_k(const float *__restrict__ gws,
                     const float *__restrict__ st, float *__restrict__ dw,
                     int64_t N, int64_t Cin, int64_t K, int64_t khw,
                     int64_t total, int accumulate) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < total;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t i = (e % K) / khw;
    double acc = 0.0;
    for (int64_t n = 0; n < N; n++)
      acc = __dadd_rn(acc, __dmul_rn((double)gws[n * total + e],
                                     (double)st[n * Cin + i]));
    float v = __double2float_rn(acc);
    dw[e] = accumulate ? __fadd_rn(dw[e], v) : v;
  }
}

/* One block per item q = (n, i). */
__global__ void ds_k(const float *__restrict__ gws, const float *__restrict__ w,
                     float *__restrict__ ds, int64_t items, int64_t Cout,
                     int64_t Cin, int64_t khw) {
  __shared__ double p[kLanes];
  int64_t K = Cin * khw, J = Cout * khw;
  for (int64_t q = blockIdx.x; q < items; q += gridDim.x) {
    int64_t n = q / Cin, i = q - n * Cin;
    const float *gr = gws + n * Cout * K + i * khw, *wr = w + i * khw;
    double acc = 0.0;
    for (int64_t j = threadIdx.x; j < J; j += kLanes) {
      int64_t o = j / khw, ab = j - o * khw;
      acc = __dadd_rn(acc, __dmul_rn((double)gr[o * K + ab],
                                     (double)wr[o * K + ab]));
    }
    p[threadIdx.x] = acc;
    double sum = lanes_tree(p);
    if (threadIdx.x == 0) ds[q] = __double2float_rn(sum);
  }
}

}  // namespace

extern "C" {

cudaError_t gf_cuk_modconv_weight_fwd(cudaStream_t s, const float *w,
                                      const float *st, float *wmod,
                                      float *dcoef, int64_t N, int64_t Cout,
                                      int64_t Cin, int64_t khw, int demodulate,
                                      float eps) {
  int64_t rows = N * Cout;
  if (rows <= 0) return cudaSuccess;
  weight_fwd_k<<<blocks_per_row(rows), kLanes, 0, s>>>(w, st, wmod, dcoef, rows,
                                                       Cout, Cin, khw,
                                                       demodulate, eps);
  return cudaGetLastError();
}

cudaError_t gf_cuk_modconv_ws_grad(cudaStream_t s, const float *w,
                                   const float *st, const float *dcoef,
                                   const float *dwmod, float *gws, int64_t N,
                                   int64_t Cout, int64_t Cin, int64_t khw) {
  int64_t rows = N * Cout;
  if (rows <= 0) return cudaSuccess;
  ws_grad_k<<<blocks_per_row(rows), kLanes, 0, s>>>(w, st, dcoef, dwmod, gws,
                                                    rows, Cout, Cin, khw);
  return cudaGetLastError();
}

cudaError_t gf_cuk_modconv_weight_grads(cudaStream_t s, const float *w,
                                        const float *st, const float *gws,
                                        float *dw, float *ds, int64_t N,
                                        int64_t Cout, int64_t Cin, int64_t khw,
                                        int accumulate) {
  int64_t K = Cin * khw, total = Cout * K;
  if (dw && total > 0) {
    dw_k<<<blocks_for(total), kThreads, 0, s>>>(gws, st, dw, N, Cin, K, khw,
                                                total, accumulate);
    cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return e;
  }
  int64_t items = N * Cin;
  if (ds && items > 0) {
    ds_k<<<blocks_per_row(items), kLanes, 0, s>>>(gws, w, ds, items, Cout, Cin,
                                                  khw);
    return cudaGetLastError();
  }
  return cudaSuccess;
}

}  // extern "C"
