/* cuda_cond.cu - the CUDA backend's class-conditioning kernels: embedding
 * lookup and gradient, per-sample per-channel affine and gradient, row-wise
 * dot product and gradient; see cuda_cond.h for the launchers' contracts.
 * Every sum is taken in the CPU backend's order (cpu_cond.c): the
 * embedding gradient in f32 over the matching samples in increasing n, the
 * others as reduce_order.h's lane sums in double; every f32 operation is
 * an explicit __f*_rn intrinsic, so nvcc contracts nothing into an FMA.
 * Results are the CPU's bits. Deterministic: no atomics. No __restrict__
 * where the API lets an output be an input (y = x, dx = dy). */
#include <stdint.h>

#include "../reduce_order.h"
#include "cuda_cond.h"
#include "cuda_launch.cuh"

namespace {

constexpr int kLanes = GF_RED_LANES;
constexpr int kEmbCols = 128; /* threads (columns) of an embedding block */
constexpr int kEmbWarps = kEmbCols / 32;
static_assert((kLanes & (kLanes - 1)) == 0, "lanes: a power of two");
static_assert(kEmbCols % 32 == 0, "whole warps");

/* Blocks for one block per item (rows, planes), the kernel looping over
 * the rest. */
unsigned blocks_per_item(int64_t n) {
  int64_t b = n > (1 << 20) ? (1 << 20) : n;
  return b < 1 ? 1u : (unsigned)b;
}

/* The tree of reduce_order.h over p[kLanes] and, when q is non-NULL,
 * q[kLanes] (shared), run by a block of kLanes threads that each stored
 * their lane and did NOT yet sync; leaves the sums in p[0] and q[0] and
 * syncs (the caller reads them, then syncs again before reusing p, q). */
__device__ void lanes_tree(double *p, double *q) {
  __syncthreads();
  for (int h = kLanes / 2; h > 0; h >>= 1) {
    if ((int)threadIdx.x < h) {
      p[threadIdx.x] += p[threadIdx.x + h];
      if (q) q[threadIdx.x] += q[threadIdx.x + h];
    }
    __syncthreads();
  }
}

__global__ void embedding_fwd_k(const float *__restrict__ T,
                                const int32_t *__restrict__ L,
                                float *__restrict__ y, int64_t K, int64_t D,
                                int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t r = i / D, d = i - r * D;
    int64_t k = L[r];
    y[i] = (k >= 0 && k < K) ? T[k * D + d] : __int_as_float(0x7fc00000);
  }
}

/* Block (k, column block) of kEmbCols threads; thread t owns column
 * d0 + t of each column block d0 it visits. The labels are taken in chunks
 * of kEmbCols: each thread tests one, the block compacts the matching n
 * into list[] in increasing order (warp ballots, then the warps in order),
 * and every thread adds dy[n, d] for the listed n, in order, to its f32
 * sum. */
__global__ void embedding_bwd_k(const int32_t *__restrict__ L,
                                const float *__restrict__ dy,
                                float *__restrict__ G, int64_t K, int64_t D,
                                int64_t N, int accumulate) {
  __shared__ int32_t list[kEmbCols];
  __shared__ int wcount[kEmbWarps];
  int t = threadIdx.x, lane = t & 31, w = t >> 5;
  for (int64_t k = blockIdx.x; k < K; k += gridDim.x) {
    for (int64_t d0 = (int64_t)blockIdx.y * kEmbCols; d0 < D;
         d0 += (int64_t)gridDim.y * kEmbCols) {
      int64_t d = d0 + t;
      float s = 0.0f;
      for (int64_t n0 = 0; n0 < N; n0 += kEmbCols) {
        int64_t n = n0 + t;
        bool hit = n < N && (int64_t)L[n] == k;
        unsigned m = __ballot_sync(0xffffffffu, hit);
        if (lane == 0) wcount[w] = __popc(m);
        __syncthreads();
        int base = 0, total = 0;
        for (int i = 0; i < kEmbWarps; i++) {
          if (i < w) base += wcount[i];
          total += wcount[i];
        }
        if (hit) list[base + __popc(m & ((1u << lane) - 1u))] = (int32_t)n;
        __syncthreads();
        if (d < D)
          for (int i = 0; i < total; i++)
            s = __fadd_rn(s, dy[(int64_t)list[i] * D + d]);
        __syncthreads();
      }
      if (d < D) {
        int64_t o = k * D + d;
        G[o] = accumulate ? __fadd_rn(G[o], s) : s;
      }
    }
  }
}

__global__ void channel_affine_fwd_k(const float *x,
                                     const float *__restrict__ g,
                                     const float *__restrict__ b, float *y,
                                     int64_t S, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t p = i / S;
    float t = __fmul_rn(x[i], g[p]);
    y[i] = b ? __fadd_rn(t, b[p]) : t;
  }
}

/* One block of kLanes threads per plane: lane j adds the terms j, j + L,
 * ... of the plane in order; dx written by the thread that read dy. */
__global__ void channel_affine_bwd_k(const float *__restrict__ x,
                                     const float *__restrict__ g,
                                     const float *dy, float *dx,
                                     float *__restrict__ dgain,
                                     float *__restrict__ dbias, int64_t planes,
                                     int64_t S) {
  __shared__ double pg[kLanes], pb[kLanes];
  bool sums = dgain || dbias;
  for (int64_t p = blockIdx.x; p < planes; p += gridDim.x) {
    const float *xr = x + p * S, *gr = dy + p * S;
    float *o = dx ? dx + p * S : nullptr;
    float gp = g[p];
    double sg = 0.0, sb = 0.0;
    for (int64_t s = threadIdx.x; s < S; s += kLanes) {
      float v = gr[s];
      if (sums) {
        sg += (double)v * (double)xr[s];
        sb += (double)v;
      }
      if (o) o[s] = __fmul_rn(v, gp);
    }
    if (!sums) continue;
    pg[threadIdx.x] = sg;
    pb[threadIdx.x] = sb;
    lanes_tree(pg, pb);
    if (threadIdx.x == 0) {
      if (dgain) dgain[p] = (float)pg[0];
      if (dbias) dbias[p] = (float)pb[0];
    }
    __syncthreads();
  }
}

/* One block of kLanes threads per row. */
__global__ void rowdot_fwd_k(const float *__restrict__ a,
                             const float *__restrict__ b, float *__restrict__ y,
                             int64_t N, int64_t D, int accumulate) {
  __shared__ double p[kLanes];
  for (int64_t n = blockIdx.x; n < N; n += gridDim.x) {
    const float *ar = a + n * D, *br = b + n * D;
    double s = 0.0;
    for (int64_t d = threadIdx.x; d < D; d += kLanes)
      s += (double)ar[d] * (double)br[d];
    p[threadIdx.x] = s;
    lanes_tree(p, nullptr);
    if (threadIdx.x == 0) {
      float r = (float)p[0];
      y[n] = accumulate ? __fadd_rn(y[n], r) : r;
    }
    __syncthreads();
  }
}

__global__ void rowdot_grad_k(const float *__restrict__ dy,
                              const float *__restrict__ v,
                              float *__restrict__ out, int64_t D, int64_t n,
                              int accumulate) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    float t = __fmul_rn(dy[i / D], v[i]);
    out[i] = accumulate ? __fadd_rn(out[i], t) : t;
  }
}

}  // namespace

extern "C" {

cudaError_t gf_cuk_embedding_fwd(cudaStream_t s, const float *table,
                                 const int32_t *labels, float *y, int64_t K,
                                 int64_t D, int64_t N) {
  int64_t n = N * D;
  if (n <= 0) return cudaSuccess;
  embedding_fwd_k<<<blocks_for(n), kThreads, 0, s>>>(table, labels, y, K, D, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_embedding_bwd(cudaStream_t s, const int32_t *labels,
                                 const float *dy, float *dtable, int64_t K,
                                 int64_t D, int64_t N, int accumulate) {
  if (K <= 0 || D <= 0) return cudaSuccess;
  int64_t cb = (D + kEmbCols - 1) / kEmbCols;
  dim3 grid(blocks_per_item(K), (unsigned)(cb > 65535 ? 65535 : cb));
  embedding_bwd_k<<<grid, kEmbCols, 0, s>>>(labels, dy, dtable, K, D, N,
                                            accumulate);
  return cudaGetLastError();
}

cudaError_t gf_cuk_channel_affine_fwd(cudaStream_t s, const float *x,
                                      const float *gain, const float *bias,
                                      float *y, int64_t planes, int64_t S) {
  int64_t n = planes * S;
  if (n <= 0) return cudaSuccess;
  channel_affine_fwd_k<<<blocks_for(n), kThreads, 0, s>>>(x, gain, bias, y, S,
                                                          n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_channel_affine_bwd(cudaStream_t s, const float *x,
                                      const float *gain, const float *dy,
                                      float *dx, float *dgain, float *dbias,
                                      int64_t planes, int64_t S) {
  if (planes <= 0 || (!dx && !dgain && !dbias)) return cudaSuccess;
  channel_affine_bwd_k<<<blocks_per_item(planes), kLanes, 0, s>>>(x, gain, dy,
                                                                  dx, dgain,
                                                                  dbias, planes,
                                                                  S);
  return cudaGetLastError();
}

cudaError_t gf_cuk_rowdot_fwd(cudaStream_t s, const float *a, const float *b,
                              float *y, int64_t N, int64_t D, int accumulate) {
  if (N <= 0) return cudaSuccess;
  rowdot_fwd_k<<<blocks_per_item(N), kLanes, 0, s>>>(a, b, y, N, D, accumulate);
  return cudaGetLastError();
}

cudaError_t gf_cuk_rowdot_grad(cudaStream_t s, const float *dy, const float *v,
                               float *out, int64_t N, int64_t D,
                               int accumulate) {
  int64_t n = N * D;
  if (n <= 0) return cudaSuccess;
  rowdot_grad_k<<<blocks_for(n), kThreads, 0, s>>>(dy, v, out, D, n,
                                                   accumulate);
  return cudaGetLastError();
}

}  // extern "C"
