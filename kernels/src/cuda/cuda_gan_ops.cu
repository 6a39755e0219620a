/* cuda_gan_ops.cu - the CUDA backend's kernels for the other GAN losses,
 * the EMA and spectral normalization: hinge loss and mean (one block),
 * the hinge gradient, lerp, and spectral normalization's power iteration,
 * sigma, w / sigma and backward; see cuda_kernels.h for the launchers'
 * contracts. Every sum follows reduce_order.h, the order of the CPU
 * backend (cpu_gan_ops.c), and every f32 operation is the CPU's with the
 * same rounding (explicit __f*_rn intrinsics, so that nvcc contracts
 * nothing into an FMA; lerp's FMA is explicit on both sides): results are
 * the CPU's bits. No __restrict__ where the API lets an output be an
 * input (dx = x, avg = x, dw = dw_sn). */
#include <math.h>

#include "../reduce_order.h"
#include "cuda_kernels.h"
#include "cuda_lanes.cuh"
#include "cuda_launch.cuh"

namespace {

constexpr int kLanes = GF_RED_LANES;
constexpr int kRowChunk = GF_SN_ROW_CHUNK;

/* relu(1 + sign x) in f32, as cpu_gan_ops.c's hinge_term. */
__device__ __forceinline__ float hinge_term(float sign, float x) {
  float h = __fadd_rn(1.0f, __fmul_rn(sign, x));
  return h < 0.0f ? 0.0f : h;
}

/* One block of kLanes threads: out[0] = lane sum / n of hinge terms
 * (hinge != 0) or of x. */
__global__ void hinge_mean_fwd_k(const float *__restrict__ x, int64_t n,
                                 int hinge, float sign,
                                 float *__restrict__ out) {
  __shared__ double p[kLanes];
  double s = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kLanes) {
    float v = x[i];
    s += (double)(hinge ? hinge_term(sign, v) : v);
  }
  p[threadIdx.x] = s;
  double t = lanes_tree(p);
  if (threadIdx.x == 0) out[0] = (float)(t / (double)n);
}

__global__ void hinge_bwd_k(const float *x, float sign, float g, float *dx,
                            int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float h = hinge_term(sign, x[i]);
    dx[i] = __fmul_rn(sign, h <= 0.0f ? 0.0f : g);
  }
}

/* a = fma(c, a - x, small ? x : a), c = w or w - 1 (see gf_cuk_lerp). */
__global__ void lerp_k(float *a, const float *x, float c, int small,
                       int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float ai = a[i], xi = x[i];
    float d = __fsub_rn(ai, xi);
    a[i] = __fmaf_rn(c, d, small ? xi : ai);
  }
}

/* ---- spectral normalization: W [R, K] row-major ------------------------- */

/* part[c, k] = sum over the rows r of chunk c (blockIdx.y), in order, of
 * W[r, k] u[r]; one thread per column k. */
__global__ void sn_wt_u_part_k(const float *__restrict__ W,
                               const float *__restrict__ u, int64_t R,
                               int64_t K, double *__restrict__ part) {
  int64_t k = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (k >= K) return;
  int64_t r0 = (int64_t)blockIdx.y * kRowChunk;
  int64_t r1 = r0 + kRowChunk < R ? r0 + kRowChunk : R;
  double s = 0.0;
  for (int64_t r = r0; r < r1; r++) s += (double)W[r * K + k] * (double)u[r];
  part[(int64_t)blockIdx.y * K + k] = s;
}

/* One block of kLanes threads: v[k] = (f32)(sum over chunks of part[c, k]),
 * then v /= max(|v|, eps). */
__global__ void sn_norm_v_k(const double *__restrict__ part, int64_t nchunk,
                            int64_t K, float eps, float *__restrict__ v) {
  __shared__ double p[kLanes];
  double s = 0.0;
  for (int64_t k = threadIdx.x; k < K; k += kLanes) {
    double acc = 0.0;
    for (int64_t c = 0; c < nchunk; c++) acc += part[c * K + k];
    float t = (float)acc;
    v[k] = t;
    s += (double)t * (double)t;
  }
  p[threadIdx.x] = s;
  float nrm = (float)sqrt(lanes_tree(p));
  float den = nrm < eps ? eps : nrm;
  for (int64_t k = threadIdx.x; k < K; k += kLanes) v[k] = __fdiv_rn(v[k], den);
}

/* One block of kLanes threads per row r: out[r] = lane sum over k of
 * W[r, k] b[k] (row_b 0) or W[r, k] b[r, k] (row_b 1); f32 (OutT float) or
 * double. */
template <typename OutT>
__global__ void sn_row_dot_k(const float *__restrict__ W,
                             const float *__restrict__ b, int row_b, int64_t K,
                             OutT *__restrict__ out) {
  __shared__ double p[kLanes];
  int64_t r = blockIdx.x;
  const float *wr = W + r * K;
  const float *br = row_b ? b + r * K : b;
  double s = 0.0;
  for (int64_t k = threadIdx.x; k < K; k += kLanes)
    s += (double)wr[k] * (double)br[k];
  p[threadIdx.x] = s;
  double t = lanes_tree(p);
  if (threadIdx.x == 0) out[r] = (OutT)t;
}

/* One block of kLanes threads: with normalize, u = wv / max(|wv|, eps);
 * then sigma[0] = lane sum of u[r] wv[r]. */
__global__ void sn_u_sigma_k(const float *__restrict__ wv, int64_t R, float eps,
                             int normalize, float *__restrict__ u,
                             float *__restrict__ sigma) {
  __shared__ double p[kLanes];
  if (normalize) {
    double s = 0.0;
    for (int64_t r = threadIdx.x; r < R; r += kLanes)
      s += (double)wv[r] * (double)wv[r];
    p[threadIdx.x] = s;
    float nrm = (float)sqrt(lanes_tree(p));
    float den = nrm < eps ? eps : nrm;
    for (int64_t r = threadIdx.x; r < R; r += kLanes)
      u[r] = __fdiv_rn(wv[r], den);
  }
  double s = 0.0;
  for (int64_t r = threadIdx.x; r < R; r += kLanes)
    s += (double)u[r] * (double)wv[r];
  p[threadIdx.x] = s;
  double t = lanes_tree(p);
  if (threadIdx.x == 0) sigma[0] = (float)t;
}

__global__ void sn_scale_k(const float *__restrict__ w,
                           const float *__restrict__ sigma,
                           float *__restrict__ w_sn, int64_t n) {
  float s = sigma[0];
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x)
    w_sn[i] = __fdiv_rn(w[i], s);
}

/* One block of kLanes threads: gs[0] = (f32)(-(lane sum of rows) /
 * sigma^2), in double. */
__global__ void sn_gs_k(const double *__restrict__ rows, int64_t R,
                        const float *__restrict__ sigma,
                        float *__restrict__ gs) {
  __shared__ double p[kLanes];
  double s = 0.0;
  for (int64_t r = threadIdx.x; r < R; r += kLanes) s += rows[r];
  p[threadIdx.x] = s;
  double t = lanes_tree(p);
  if (threadIdx.x == 0) {
    double sd = (double)sigma[0];
    gs[0] = (float)(-t / (sd * sd));
  }
}

/* dw (+)= G / sigma + (gs u_r) v_k; G may be dw. */
__global__ void sn_bwd_k(const float *G, const float *__restrict__ u,
                         const float *__restrict__ v,
                         const float *__restrict__ sigma,
                         const float *__restrict__ gs, int64_t K, int64_t n,
                         int accumulate, float *dw) {
  float s = sigma[0], g = gs[0];
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i / K, k = i - r * K;
    float a = __fdiv_rn(G[i], s);
    float b = __fmul_rn(__fmul_rn(g, u[r]), v[k]);
    float d = __fadd_rn(a, b);
    dw[i] = accumulate ? __fadd_rn(dw[i], d) : d;
  }
}

/* Byte offsets of the scratch parts, each a multiple of 256. */
size_t round256(size_t b) { return (b + 255) / 256 * 256; }
int64_t n_chunks(int64_t R) { return (R + kRowChunk - 1) / kRowChunk; }

}  // namespace

extern "C" {

cudaError_t gf_cuk_hinge_mean_fwd(cudaStream_t s, const float *x, int64_t n,
                                  int hinge, float sign, float *loss) {
  if (n <= 0) return cudaSuccess;
  hinge_mean_fwd_k<<<1, kLanes, 0, s>>>(x, n, hinge, sign, loss);
  return cudaGetLastError();
}

cudaError_t gf_cuk_hinge_bwd(cudaStream_t s, const float *x, float sign,
                             float g, float *dx, int64_t n) {
  if (n <= 0) return cudaSuccess;
  hinge_bwd_k<<<blocks_for(n), kThreads, 0, s>>>(x, sign, g, dx, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_lerp(cudaStream_t s, float *avg, const float *x, float w,
                        int64_t n) {
  if (n <= 0) return cudaSuccess;
  int small = w < 0.5f;
  float c = small ? w : w - 1.0f; /* exact for w in [0.5, 1] */
  lerp_k<<<blocks_for(n), kThreads, 0, s>>>(avg, x, c, small, n);
  return cudaGetLastError();
}

size_t gf_cuk_sn_fwd_scratch(int64_t R, int64_t K) {
  return round256((size_t)n_chunks(R) * (size_t)K * sizeof(double)) +
         round256((size_t)R * sizeof(float));
}

cudaError_t gf_cuk_sn_fwd(cudaStream_t s, const float *w, float *u, float *v,
                          int64_t R, int64_t K, int n_iter, float eps,
                          float *sigma, float *w_sn, void *scratch) {
  if (R <= 0 || K <= 0) return cudaSuccess;
  int64_t nc = n_chunks(R);
  double *part = (double *)scratch;
  float *wv = (float *)((char *)scratch +
                        round256((size_t)nc * (size_t)K * sizeof(double)));
  dim3 grid((unsigned)((K + kThreads - 1) / kThreads), (unsigned)nc);
  cudaError_t e = cudaSuccess;
  for (int it = 0; it < n_iter && e == cudaSuccess; it++) {
    sn_wt_u_part_k<<<grid, kThreads, 0, s>>>(w, u, R, K, part);
    if ((e = cudaGetLastError()) != cudaSuccess) break;
    sn_norm_v_k<<<1, kLanes, 0, s>>>(part, nc, K, eps, v);
    if ((e = cudaGetLastError()) != cudaSuccess) break;
    sn_row_dot_k<float><<<(unsigned)R, kLanes, 0, s>>>(w, v, 0, K, wv);
    if ((e = cudaGetLastError()) != cudaSuccess) break;
    sn_u_sigma_k<<<1, kLanes, 0, s>>>(wv, R, eps, 1, u, sigma);
    e = cudaGetLastError();
  }
  if (e != cudaSuccess) return e;
  if (n_iter == 0) {
    sn_row_dot_k<float><<<(unsigned)R, kLanes, 0, s>>>(w, v, 0, K, wv);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    sn_u_sigma_k<<<1, kLanes, 0, s>>>(wv, R, eps, 0, u, sigma);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
  }
  int64_t n = R * K;
  sn_scale_k<<<blocks_for(n), kThreads, 0, s>>>(w, sigma, w_sn, n);
  return cudaGetLastError();
}

size_t gf_cuk_sn_bwd_scratch(int64_t R) {
  return round256((size_t)R * sizeof(double)) + round256(sizeof(float));
}

cudaError_t gf_cuk_sn_bwd(cudaStream_t s, const float *w, const float *u,
                          const float *v, const float *sigma, const float *g,
                          float *dw, int64_t R, int64_t K, int accumulate,
                          void *scratch) {
  if (R <= 0 || K <= 0) return cudaSuccess;
  double *rows = (double *)scratch;
  float *gs = (float *)((char *)scratch + round256((size_t)R * sizeof(double)));
  sn_row_dot_k<double><<<(unsigned)R, kLanes, 0, s>>>(w, g, 1, K, rows);
  cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return e;
  sn_gs_k<<<1, kLanes, 0, s>>>(rows, R, sigma, gs);
  if ((e = cudaGetLastError()) != cudaSuccess) return e;
  int64_t n = R * K;
  sn_bwd_k<<<blocks_for(n), kThreads, 0, s>>>(g, u, v, sigma, gs, K, n,
                                              accumulate, dw);
  return cudaGetLastError();
}

}  // extern "C"
