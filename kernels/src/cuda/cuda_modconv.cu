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

/* gf_modconv_demod_jvp: one thread per row (n, o), the CPU's sequential
 * double sums and operation order (cpu_modconv.c's demod_jvp_row). */
__global__ void demod_jvp_k(const float *__restrict__ w,
                            const float *__restrict__ st,
                            const float *__restrict__ sd,
                            const float *__restrict__ dcoef,
                            const float *__restrict__ g,
                            const float *__restrict__ gd,
                            float *__restrict__ wmd, float *__restrict__ gw,
                            float *__restrict__ gwd, int64_t rows,
                            int64_t Cout, int64_t Cin, int64_t khw) {
  int64_t K = Cin * khw;
  for (int64_t r = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; r < rows;
       r += (int64_t)gridDim.x * blockDim.x) {
    int64_t n = r / Cout, o = r - n * Cout;
    const float *wr = w + o * K, *sr = st + n * Cin, *sdr = sd + n * Cin;
    const float *gr = g ? g + r * K : nullptr, *gdr = g ? gd + r * K : nullptr;
    double d = (double)dcoef[r], A = 0.0, G = 0.0, Gd = 0.0;
    for (int64_t k = 0; k < K; k++) {
      int64_t i = k / khw;
      double ws = (double)__fmul_rn(wr[k], sr[i]);
      double wsd = __dmul_rn((double)wr[k], (double)sdr[i]);
      A = __dadd_rn(A, __dmul_rn(ws, wsd));
      if (gr) {
        G = __dadd_rn(G, __dmul_rn((double)gr[k], ws));
        Gd = __dadd_rn(Gd, __dadd_rn(__dmul_rn((double)gdr[k], ws),
                                     __dmul_rn((double)gr[k], wsd)));
      }
    }
    double d3 = __dmul_rn(__dmul_rn(d, d), d), dd = __dmul_rn(-d3, A);
    double c = __dmul_rn(d3, G);
    double cd = __dadd_rn(
        __dmul_rn(__dmul_rn(__dmul_rn(__dmul_rn(3.0, d), d), dd), G),
        __dmul_rn(d3, Gd));
    for (int64_t k = 0; k < K; k++) {
      int64_t i = k / khw;
      double ws = (double)__fmul_rn(wr[k], sr[i]);
      double wsd = __dmul_rn((double)wr[k], (double)sdr[i]);
      if (wmd)
        wmd[r * K + k] = __double2float_rn(
            __dadd_rn(__dmul_rn(wsd, d), __dmul_rn(ws, dd)));
      if (gr) {
        double gv = gr[k], gdv = gdr[k];
        gw[r * K + k] = __double2float_rn(
            __dsub_rn(__dmul_rn(gv, d), __dmul_rn(ws, c)));
        double t = __dadd_rn(__dmul_rn(gdv, d), __dmul_rn(gv, dd));
        t = __dsub_rn(t, __dmul_rn(wsd, c));
        t = __dsub_rn(t, __dmul_rn(ws, cd));
        gwd[r * K + k] = __double2float_rn(t);
      }
    }
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

cudaError_t gf_cuk_modconv_demod_jvp(cudaStream_t s, const float *w,
                                     const float *st, const float *sd,
                                     const float *dcoef, const float *g,
                                     const float *gd, float *wmd, float *gw,
                                     float *gwd, int64_t N, int64_t Cout,
                                     int64_t Cin, int64_t khw) {
  int64_t rows = N * Cout;
  if (rows <= 0) return cudaSuccess;
  demod_jvp_k<<<blocks_for(rows), kThreads, 0, s>>>(
      w, st, sd, dcoef, g, gd, wmd, gw, gwd, rows, Cout, Cin, khw);
  return cudaGetLastError();
}

}  // extern "C"
