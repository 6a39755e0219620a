/* cuda_augment.h - launchers of the DiffAugment kernels (cuda_augment.cu),
 * callable from C. Each queues its kernels (and, where the op runs in
 * place, a device-to-device copy) on stream and returns the first failure
 * (cudaSuccess when there was nothing to do); none synchronizes. Pointers
 * are device pointers: dense NCHW f32 data and the params rows
 * [N, GF_AUG_NPARAMS]. Not a public header. */
#ifndef GF_CUDA_AUGMENT_H
#define GF_CUDA_AUGMENT_H

#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One call's shape and policy (checked by ops.c). */
typedef struct gf_cuk_aug_args {
  int64_t N, C, H, W;    /* N, C, H, W >= 1 */
  int64_t S0, S1;        /* cutout sizes, gf_augment_cutout_size(H), (W) */
  int color, trans, cut; /* the policy's bits, 0 or 1 each */
} gf_cuk_aug_args;

/* Bytes of scratch the forward (bwd 0) or transpose (bwd 1) needs; inplace
 * when out is in. */
size_t gf_cuk_augment_scratch(const gf_cuk_aug_args *a, int bwd, int inplace);
/* y = augment(x) (gf_augment_fwd), the CPU backend's bits: colour by one
 * block of GF_RED_LANES threads per sample (the sample sum in the lanes of
 * reduce_order.h), then translation and cutout one thread per element.
 * y may be x. scratch: gf_cuk_augment_scratch bytes (NULL when 0). */
cudaError_t gf_cuk_augment_fwd(cudaStream_t s, const gf_cuk_aug_args *a,
                               const float *x, const float *params, float *y,
                               void *scratch);
/* dx = augment^T(dy) (gf_augment_bwd), the CPU backend's bits; dx may be
 * dy. */
cudaError_t gf_cuk_augment_bwd(cudaStream_t s, const gf_cuk_aug_args *a,
                               const float *params, const float *dy, float *dx,
                               void *scratch);

#ifdef __cplusplus
}
#endif

#endif
