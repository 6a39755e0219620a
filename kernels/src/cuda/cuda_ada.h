/* cuda_ada.h - the launchers of the ADA resampling kernels (cuda_ada.cu),
 * callable from C: reflect padding, per-sample affine bilinear resampling
 * and the 4x4 colour matrix, forward and transpose (ops.h, "adaptive
 * discriminator augmentation"). Each queues one kernel on stream and
 * returns cudaGetLastError() of the launch (cudaSuccess when there is
 * nothing to do); none synchronizes. Pointers are device pointers to dense
 * f32 data; ops.c checked shapes, pads and overlaps. The results are the
 * CPU backend's (cpu_ada.c) bits: the same per-element arithmetic
 * (ada_math.h) in the same order. Not a public header. */
#ifndef GF_CUDA_ADA_H
#define GF_CUDA_ADA_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* planes = N C; an input plane H x W, an output plane OH x OW; C the
 * channels per sample (the resampling's theta and the colour matrix are
 * per sample n = plane / C). */
typedef struct gf_cuk_ada {
  int64_t planes, C, H, W, OH, OW;
  int pad[4]; /* reflect pads [x0, x1, y0, y1] */
} gf_cuk_ada;

/* y [planes, OH, OW] = reflect pad of x [planes, H, W]. */
cudaError_t gf_cuk_pad_reflect_fwd(cudaStream_t s, const float *x, float *y,
                                   gf_cuk_ada g);
/* dx [planes, H, W] from dy [planes, OH, OW] (one gather per element). */
cudaError_t gf_cuk_pad_reflect_bwd(cudaStream_t s, const float *dy, float *dx,
                                   gf_cuk_ada g);
/* y [planes, OH, OW] = affine bilinear resampling of x [planes, H, W] by
 * theta [N, 2, 3]. */
cudaError_t gf_cuk_affine_sample_fwd(cudaStream_t s, const float *x,
                                     const float *theta, float *y,
                                     gf_cuk_ada g);
/* dx [planes, H, W] from dy [planes, OH, OW]: one thread per plane
 * scattering in row-major order (deterministic). */
cudaError_t gf_cuk_affine_sample_bwd(cudaStream_t s, const float *theta,
                                     const float *dy, float *dx, gf_cuk_ada g);
/* y = the colour matrix m [N, 4, 4] applied to x [N, C, H W] (C 1 or 3;
 * H W in g.H * g.W); bwd: its transpose. */
cudaError_t gf_cuk_color4_fwd(cudaStream_t s, const float *x, const float *m,
                              float *y, gf_cuk_ada g);
cudaError_t gf_cuk_color4_bwd(cudaStream_t s, const float *m, const float *dy,
                              float *dx, gf_cuk_ada g);

#ifdef __cplusplus
}
#endif

#endif
