/* cuda_pool.h - launchers of the pooling, bilinear-resize kernels
 * (cuda_pool.cu), callable from C. Each queues its kernel on stream and
 * returns cudaGetLastError() of the launch (cudaSuccess when there was
 * nothing to do); none synchronizes. Pointers are device pointers to
 * dense NCHW f32 data. Not a public header. */
#ifndef GF_CUDA_POOL_H
#define GF_CUDA_POOL_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Window geometry of one pooling call (the checked gf_pool_params). */
typedef struct gf_cuk_pool_args {
  int kind;              /* a GF_POOL_* value (backend.h) */
  int kh, kw, sh, sw, ph, pw;
  int64_t planes;        /* N * C */
  int64_t H, W, OH, OW;
} gf_cuk_pool_args;

/* y = pool(x), one thread per output; the window is reduced down each
 * column, then across the columns (the order of the CPU backend's loops),
 * sums in f32, divided by the count. Max is exact; averages may differ
 * from oneDNN's in the last bit. */
cudaError_t gf_cuk_pool_fwd(cudaStream_t s, const gf_cuk_pool_args *a,
                            const float *x, float *y);
/* y [planes, OH, OW] = TF1 legacy resize_bilinear of x [planes, H, W],
 * coordinates and interpolation in float as gf_cpu_resize_bilinear, with
 * no FMA contraction (the same roundings as the CPU). */
cudaError_t gf_cuk_resize_bilinear(cudaStream_t s, const float *x, float *y,
                                   int64_t planes, int64_t H, int64_t W,
                                   int64_t OH, int64_t OW);

#ifdef __cplusplus
}
#endif

#endif
