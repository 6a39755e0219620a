/* cuda_fir.h - the launcher of the upfirdn2d kernel (cuda_fir.cu),
 * callable from C: FIR resampling (ops.h, "FIR resampling"), which the
 * CUDA backend's forward and backward both use (the backward with the
 * parameters ops.c derives). It queues one kernel on stream (one thread
 * per output element, grid-stride; no atomics, no scratch) and returns
 * cudaGetLastError() of the launch (cudaSuccess when there is nothing to
 * do); it does not synchronize. Pointers are device pointers to dense f32
 * data. The result is the CPU backend's (cpu_fir.c) bits: the same taps
 * (fir_taps.h) in the same order, each an explicit __fmaf_rn, the gain one
 * __fmul_rn. Not a public header. */
#ifndef GF_CUDA_FIR_H
#define GF_CUDA_FIR_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The geometry of one upfirdn2d: x [planes, H, W], f [fh, fw], y
 * [planes, OH, OW], as ops.h and gf_fir_params define them (checked by
 * ops.c: factors >= 1, flip 0 or 1, OH and OW its output shape). */
typedef struct gf_cuk_fir {
  int64_t planes, H, W, OH, OW;
  int fh, fw;
  int up[2], down[2]; /* [y, x] */
  int pad[4];         /* [x0, x1, y0, y1] */
  int flip;
  float gain;
} gf_cuk_fir;

/* y = upfirdn2d(x, f, g); y overlaps neither x nor f. */
cudaError_t gf_cuk_upfirdn2d(cudaStream_t s, const float *x, const float *f,
                             float *y, gf_cuk_fir g);

#ifdef __cplusplus
}
#endif

#endif
