/* cuda_resample.h - launchers of the residual-network kernels
 * (cuda_resample.cu), callable from C: nearest 2x upsampling and its
 * gradient, the gradient of average pooling over non-overlapping windows,
 * and the element-wise add. Each queues one kernel on stream (one thread
 * per output element, grid-stride; no atomics, no scratch) and returns
 * cudaGetLastError() of the launch (cudaSuccess when there is nothing to
 * do); none synchronizes. Pointers are device pointers to dense f32 data.
 * Every result is the CPU backend's (cpu_resample.c) bits: the same terms
 * in the same order, each f32 operation an explicit __f*_rn intrinsic
 * (nothing contracted or folded). Not a public header. */
#ifndef GF_CUDA_RESAMPLE_H
#define GF_CUDA_RESAMPLE_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[p, i, j] = x[p, i / 2, j / 2] for x [planes, H, W] and y
 * [planes, 2H, 2W]; no overlap. */
cudaError_t gf_cuk_upsample_nearest2x_fwd(cudaStream_t s, const float *x,
                                          float *y, int64_t planes, int64_t H,
                                          int64_t W);
/* dx[p, i, j] = (((0 + dy[2i, 2j]) + dy[2i, 2j+1]) + dy[2i+1, 2j])
 * + dy[2i+1, 2j+1] of plane p, dx [planes, H, W], dy [planes, 2H, 2W]; no
 * overlap. */
cudaError_t gf_cuk_upsample_nearest2x_bwd(cudaStream_t s, const float *dy,
                                          float *dx, int64_t planes, int64_t H,
                                          int64_t W);
/* dx[p, i, j] = 0 + dy[p, i / kh, j / kw] / (float)(kh kw) for dx
 * [planes, OH kh, OW kw] and dy [planes, OH, OW]; no overlap. */
cudaError_t gf_cuk_avgpool2d_bwd(cudaStream_t s, const float *dy, float *dx,
                                 int64_t planes, int64_t OH, int64_t OW, int kh,
                                 int kw);
/* y[i] = a[i] + b[i], i < n; y may be a and / or b. */
cudaError_t gf_cuk_add(cudaStream_t s, const float *a, const float *b, float *y,
                       int64_t n);

#ifdef __cplusplus
}
#endif

#endif
