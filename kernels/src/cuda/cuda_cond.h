/* cuda_cond.h - launchers of the class-conditioning kernels
 * (cuda_cond.cu), callable from C: the embedding lookup and its gradient,
 * the per-sample per-channel affine and its gradient, the row-wise dot
 * product and its gradient. Each queues its kernels on stream and returns
 * cudaGetLastError() of the launch (cudaSuccess when there was nothing to
 * do); none synchronizes, none needs scratch. Pointers are device pointers
 * to dense f32 data (labels: int32). Every result is the CPU backend's
 * (cpu_cond.c) bits: the same sums in the same order, the same f32
 * roundings (explicit __f*_rn intrinsics: nothing is contracted into an
 * FMA). Not a public header. */
#ifndef GF_CUDA_COND_H
#define GF_CUDA_COND_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y[n, :] = table[labels[n], :] for table [K, D], y [N, D]; a label
 * outside [0, K) reads nothing and gives a row of quiet NaN (0x7fc00000). */
cudaError_t gf_cuk_embedding_fwd(cudaStream_t s, const float *table,
                                 const int32_t *labels, float *y, int64_t K,
                                 int64_t D, int64_t N);
/* dtable[k, d] = (accumulate ? dtable[k, d] + t : t), t the f32 sum from
 * 0.0f of dy[n, d] over the n with labels[n] == k, in increasing n; a
 * label outside [0, K) matches no row. One block per (k, column block):
 * the block compacts the matching n in order (ballots), then each thread
 * walks them for its column. N, K <= INT32_MAX. */
cudaError_t gf_cuk_embedding_bwd(cudaStream_t s, const int32_t *labels,
                                 const float *dy, float *dtable, int64_t K,
                                 int64_t D, int64_t N, int accumulate);
/* y[p, s] = x[p, s] gain[p] (+ bias[p] when bias is non-NULL), p over
 * planes = N C, s over S; two roundings (product, then sum). y may be x. */
cudaError_t gf_cuk_channel_affine_fwd(cudaStream_t s, const float *x,
                                      const float *gain, const float *bias,
                                      float *y, int64_t planes, int64_t S);
/* dx[p, s] = dy[p, s] gain[p] (dx may be dy; NULL: skipped); dgain[p] and
 * dbias[p] (each NULL: skipped) the lane sums (reduce_order.h) of dy x and
 * of dy over the plane, rounded to f32 once. One block per plane. */
cudaError_t gf_cuk_channel_affine_bwd(cudaStream_t s, const float *x,
                                      const float *gain, const float *dy,
                                      float *dx, float *dgain, float *dbias,
                                      int64_t planes, int64_t S);
/* y[n] = (accumulate ? y[n] + r : r), r the lane sum over d of
 * a[n, d] b[n, d] rounded to f32; one block per row. */
cudaError_t gf_cuk_rowdot_fwd(cudaStream_t s, const float *a, const float *b,
                              float *y, int64_t N, int64_t D, int accumulate);
/* out[n, d] = (accumulate ? out[n, d] + t : t), t = dy[n] v[n, d]. */
cudaError_t gf_cuk_rowdot_grad(cudaStream_t s, const float *dy, const float *v,
                               float *out, int64_t N, int64_t D,
                               int accumulate);

#ifdef __cplusplus
}
#endif

#endif
