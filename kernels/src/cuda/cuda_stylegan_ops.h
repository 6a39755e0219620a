/* cuda_stylegan_ops.h - launchers of the StyleGAN2 layer kernels
 * (cuda_stylegan_ops.cu), callable from C: bias + activation + gain +
 * clamp and its gradient, the minibatch standard deviation and its
 * gradient, noise injection's strength gradient. Each queues its kernels
 * on stream and returns cudaGetLastError() of the last launch (cudaSuccess
 * when there is nothing to do); none synchronizes, none reads anything
 * back to the host. Pointers are device pointers to dense f32 data (the
 * scratch: doubles). Every result is the CPU backend's
 * (cpu_stylegan_ops.c) bits: the same terms in the same order, each f32
 * and double operation an explicit __f*_rn / __d*_rn intrinsic (nothing
 * contracted into an FMA), the lane sums of reduce_order.h. Not a public
 * header. */
#ifndef GF_CUDA_STYLEGAN_OPS_H
#define GF_CUDA_STYLEGAN_OPS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = clamp(act(x + b[c]) * gain) over x, y [planes = N C, S], c = plane %
 * C, as ops.h's gf_bias_act_fwd; b may be NULL; y may be x. */
cudaError_t gf_cuk_bias_act_fwd(cudaStream_t s, const float *x, const float *b,
                                float *y, int64_t planes, int64_t C, int64_t S,
                                int lrelu, float alpha, float gain,
                                float clamp);
/* dx of gf_bias_act_bwd over [planes = N C, S] (dx may be dy) and, when db
 * is non-NULL, db[c] (+)= its plane sum: scratch holds planes doubles (the
 * plane lane sums, then the lane sum over n per channel). dx may be NULL
 * when db is not. */
cudaError_t gf_cuk_bias_act_bwd(cudaStream_t s, const float *y, const float *dy,
                                float *dx, float *db, double *scratch,
                                int64_t N, int64_t C, int64_t S, int lrelu,
                                float alpha, float gain, float clamp,
                                int accumulate);
/* gf_mbstd_fwd on x [N, C, HW], y [N, C + F, HW], G dividing N, F dividing
 * C. */
cudaError_t gf_cuk_mbstd_fwd(cudaStream_t s, const float *x, float *y,
                             int64_t N, int64_t C, int64_t HW, int64_t G,
                             int64_t F);
/* gf_mbstd_bwd: dx [N, C, HW] from x and dy [N, C + F, HW]. */
cudaError_t gf_cuk_mbstd_bwd(cudaStream_t s, const float *x, const float *dy,
                             float *dx, int64_t N, int64_t C, int64_t HW,
                             int64_t G, int64_t F);
/* gf_mbstd_jvp: ydot [N, C + F, HW] from x, xd [N, C, HW]. */
cudaError_t gf_cuk_mbstd_jvp(cudaStream_t s, const float *x, const float *xd,
                             float *y, int64_t N, int64_t C, int64_t HW,
                             int64_t G, int64_t F);
/* gf_mbstd_bwd_jvp: dx [N, C, HW] from x, xd, dy, dyd [N, C + F, HW]. */
cudaError_t gf_cuk_mbstd_bwd_jvp(cudaStream_t s, const float *x,
                                 const float *xd, const float *dy,
                                 const float *dyd, float *dx, int64_t N,
                                 int64_t C, int64_t HW, int64_t G, int64_t F);
/* y = x + noise[n] * strength[0] over x, y [N, C, HW], noise [N, HW];
 * y may be x. */
cudaError_t gf_cuk_noise_add_fwd(cudaStream_t s, const float *x,
                                 const float *noise, const float *strength,
                                 float *y, int64_t N, int64_t C, int64_t HW);
/* dstrength[0] (+)= the plane sum of dy * noise over dy [N, C, HW], noise
 * [N, HW]; scratch holds N C doubles. */
cudaError_t gf_cuk_noise_strength_grad(cudaStream_t s, const float *dy,
                                       const float *noise, float *dstrength,
                                       double *scratch, int64_t N, int64_t C,
                                       int64_t HW, int accumulate);

#ifdef __cplusplus
}
#endif

#endif
