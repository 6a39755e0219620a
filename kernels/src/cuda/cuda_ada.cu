/* cuda_ada.cu - the CUDA backend's ADA resampling kernels (see cuda_ada.h
 * for the launchers' contract). The forwards and the reflect backward are
 * one thread per output element (grid-stride), forming the element exactly
 * as the CPU backend (cpu_ada.c) does with ada_math.h's shared arithmetic.
 * The resampling's backward is one thread per (n, c) plane scattering
 * dy in row-major order, as the CPU's per-plane loop: deterministic, no
 * atomics (slow for large planes; ADA runs it once per G step). */
#include <stdint.h>

#include "../ada_math.h"
#include "cuda_ada.h"
#include "cuda_launch.cuh"

namespace {

__global__ void pad_fwd_k(const float *__restrict__ x, float *__restrict__ y,
                          gf_cuk_ada g, int64_t n) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t row = e / g.OW, j = e - row * g.OW;
    int64_t plane = row / g.OH, i = row - plane * g.OH;
    int64_t si = gf_ada_reflect(i - g.pad[2], g.H);
    int64_t sj = gf_ada_reflect(j - g.pad[0], g.W);
    y[e] = x[(plane * g.H + si) * g.W + sj];
  }
}

__global__ void pad_bwd_k(const float *__restrict__ dy, float *__restrict__ dx,
                          gf_cuk_ada g, int64_t n) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t row = e / g.W, w = e - row * g.W;
    int64_t plane = row / g.H, h = row - plane * g.H;
    int64_t si[3], sj[3];
    int ni = gf_ada_reflect_srcs(h, g.H, g.pad[2], g.pad[3], si);
    int nj = gf_ada_reflect_srcs(w, g.W, g.pad[0], g.pad[1], sj);
    const float *gp = dy + plane * g.OH * g.OW;
    float acc = 0.0f;
    for (int a = 0; a < ni; a++)
      for (int b = 0; b < nj; b++)
        acc = __fadd_rn(acc, gp[si[a] * g.OW + sj[b]]);
    dx[e] = acc;
  }
}

__global__ void sample_fwd_k(const float *__restrict__ x,
                             const float *__restrict__ theta,
                             float *__restrict__ y, gf_cuk_ada g, int64_t n) {
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t row = e / g.OW, j = e - row * g.OW;
    int64_t plane = row / g.OH, i = row - plane * g.OH;
    int64_t s = plane / g.C;
    const float *xp = x + plane * g.H * g.W;
    gf_ada_tap tp = gf_ada_bilinear(theta + s * 6, i, j, g.OH, g.OW, g.H, g.W);
    float acc = 0.0f;
    for (int k = 0; k < 4; k++) {
      int64_t cx = tp.x0 + (k & 1), cy = tp.y0 + (k >> 1);
      if (cx >= 0 && cx < g.W && cy >= 0 && cy < g.H)
        acc = __fmaf_rn(xp[cy * g.W + cx], tp.w[k], acc);
    }
    y[e] = acc;
  }
}

__global__ void sample_bwd_k(const float *__restrict__ theta,
                             const float *__restrict__ dy,
                             float *__restrict__ dx, gf_cuk_ada g) {
  for (int64_t plane = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
       plane < g.planes; plane += (int64_t)gridDim.x * blockDim.x) {
    int64_t s = plane / g.C;
    float *dp = dx + plane * g.H * g.W;
    const float *gp = dy + plane * g.OH * g.OW;
    for (int64_t k = 0; k < g.H * g.W; k++) dp[k] = 0.0f;
    for (int64_t i = 0; i < g.OH; i++)
      for (int64_t j = 0; j < g.OW; j++) {
        gf_ada_tap tp =
            gf_ada_bilinear(theta + s * 6, i, j, g.OH, g.OW, g.H, g.W);
        float v = gp[i * g.OW + j];
        for (int k = 0; k < 4; k++) {
          int64_t cx = tp.x0 + (k & 1), cy = tp.y0 + (k >> 1);
          if (cx >= 0 && cx < g.W && cy >= 0 && cy < g.H)
            dp[cy * g.W + cx] = __fmaf_rn(v, tp.w[k], dp[cy * g.W + cx]);
        }
      }
  }
}

/* e over the N * S pixels (S = H W); C 1 or 3. bwd 0: the forward (in x,
 * out y); 1: the transpose (in dy, out dx). */
__global__ void color_k(const float *__restrict__ in,
                        const float *__restrict__ m, float *__restrict__ out,
                        gf_cuk_ada g, int64_t n, int bwd) {
  int64_t S = g.H * g.W;
  for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < n;
       e += (int64_t)gridDim.x * blockDim.x) {
    int64_t s = e / S, k = e - s * S;
    const float *mn = m + s * 16;
    const float *xn = in + s * g.C * S;
    float *yn = out + s * g.C * S;
    if (g.C == 1) {
      float sc, t;
      gf_ada_luma_coef(mn, &sc, &t);
      float p = __fmul_rn(xn[k], sc);
      yn[k] = bwd ? p : __fadd_rn(p, t);
      continue;
    }
    float v0 = xn[k], v1 = xn[S + k], v2 = xn[2 * S + k];
    for (int c = 0; c < 3; c++)
      yn[c * S + k] = bwd ? gf_ada_dot3(mn + c, 4, v0, v1, v2)
                          : __fadd_rn(gf_ada_dot3(mn + 4 * c, 1, v0, v1, v2),
                                      mn[4 * c + 3]);
  }
}

}  // namespace

extern "C" {

cudaError_t gf_cuk_pad_reflect_fwd(cudaStream_t s, const float *x, float *y,
                                   gf_cuk_ada g) {
  int64_t n = g.planes * g.OH * g.OW;
  if (n <= 0) return cudaSuccess;
  pad_fwd_k<<<blocks_for(n), kThreads, 0, s>>>(x, y, g, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_pad_reflect_bwd(cudaStream_t s, const float *dy, float *dx,
                                   gf_cuk_ada g) {
  int64_t n = g.planes * g.H * g.W;
  if (n <= 0) return cudaSuccess;
  pad_bwd_k<<<blocks_for(n), kThreads, 0, s>>>(dy, dx, g, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_affine_sample_fwd(cudaStream_t s, const float *x,
                                     const float *theta, float *y,
                                     gf_cuk_ada g) {
  int64_t n = g.planes * g.OH * g.OW;
  if (n <= 0) return cudaSuccess;
  sample_fwd_k<<<blocks_for(n), kThreads, 0, s>>>(x, theta, y, g, n);
  return cudaGetLastError();
}

cudaError_t gf_cuk_affine_sample_bwd(cudaStream_t s, const float *theta,
                                     const float *dy, float *dx,
                                     gf_cuk_ada g) {
  if (g.planes <= 0) return cudaSuccess;
  /* one thread per plane: small blocks so the planes spread over the SMs */
  unsigned blocks = (unsigned)((g.planes + 31) / 32);
  sample_bwd_k<<<blocks, 32, 0, s>>>(theta, dy, dx, g);
  return cudaGetLastError();
}

cudaError_t gf_cuk_color4_fwd(cudaStream_t s, const float *x, const float *m,
                              float *y, gf_cuk_ada g) {
  int64_t n = (g.planes / g.C) * g.H * g.W;
  if (n <= 0) return cudaSuccess;
  color_k<<<blocks_for(n), kThreads, 0, s>>>(x, m, y, g, n, 0);
  return cudaGetLastError();
}

cudaError_t gf_cuk_color4_bwd(cudaStream_t s, const float *m, const float *dy,
                              float *dx, gf_cuk_ada g) {
  int64_t n = (g.planes / g.C) * g.H * g.W;
  if (n <= 0) return cudaSuccess;
  color_k<<<blocks_for(n), kThreads, 0, s>>>(dy, m, dx, g, n, 1);
  return cudaGetLastError();
}

}  // extern "C"
