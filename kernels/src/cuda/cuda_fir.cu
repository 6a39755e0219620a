/* cuda_fir.cu - the CUDA backend's upfirdn2d kernel (FIR resampling; see
 * cuda_fir.h for the launcher's contract). One thread per output element
 * (grid-stride loop), each forming its element from its own inputs exactly
 * as the CPU backend (cpu_fir.c) does: acc from +0.0f, the taps that land
 * on samples of the upsampled input (fir_taps.h, shared with the CPU) in
 * row-major window order, each added by __fmaf_rn, then one __fmul_rn by
 * the gain. The intrinsics are single IEEE operations nvcc neither
 * contracts nor reorders, so no -fmad flag is needed for this file.
 * Deterministic: no atomics, no shared-memory reduction. */
#include <stdint.h>

#include "../fir_taps.h"
#include "cuda_fir.h"
#include "cuda_launch.cuh"

namespace {

/* i over y's n = planes OH OW elements. */
__global__ void upfirdn2d_k(const float *__restrict__ x,
                            const float *__restrict__ f, float *__restrict__ y,
                            gf_cuk_fir g, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * blockDim.x) {
    int64_t row = i / g.OW, oj = i - row * g.OW; /* row: plane, output row */
    int64_t plane = row / g.OH, oi = row - plane * g.OH;
    const float *xp = x + plane * g.H * g.W;
    gf_fir_taps ty = gf_fir_axis_taps(oi, g.H, g.up[0], g.down[0], g.pad[2],
                                      g.fh);
    gf_fir_taps tx = gf_fir_axis_taps(oj, g.W, g.up[1], g.down[1], g.pad[0],
                                      g.fw);
    float acc = 0.0f;
    int64_t sr = ty.src0;
    for (int64_t p = ty.first; p < ty.end; p += g.up[0], sr++) {
      const float *xrow = xp + sr * g.W;
      /* window row p's weights: f's row p (flip 1), else row fh-1-p read
       * backwards */
      const float *fr = g.flip ? f + p * g.fw : f + (g.fh - 1 - p) * g.fw;
      int64_t sc = tx.src0;
      for (int64_t q = tx.first; q < tx.end; q += g.up[1], sc++) {
        float w = g.flip ? fr[q] : fr[g.fw - 1 - q];
        acc = __fmaf_rn(xrow[sc], w, acc);
      }
    }
    y[i] = __fmul_rn(acc, g.gain);
  }
}

}  // namespace

extern "C" {

cudaError_t gf_cuk_upfirdn2d(cudaStream_t s, const float *x, const float *f,
                             float *y, gf_cuk_fir g) {
  int64_t n = g.planes * g.OH * g.OW;
  if (n <= 0) return cudaSuccess;
  upfirdn2d_k<<<blocks_for(n), kThreads, 0, s>>>(x, f, y, g, n);
  return cudaGetLastError();
}

}  // extern "C"
