/* cuda_kernels.h - launchers of the backend's own CUDA kernels
 * (cuda_kernels.cu), callable from C. Each launcher queues its kernel on
 * stream and returns cudaGetLastError() of the launch (cudaSuccess when
 * there was nothing to do); it never synchronizes. Pointers are device
 * pointers; n counts f32 elements. Not a public header. */
#ifndef GF_CUDA_KERNELS_H
#define GF_CUDA_KERNELS_H

#include <cuda_runtime_api.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* y = f(x), kind a GF_ACT_* value (backend.h). */
cudaError_t gf_cuk_act_fwd(cudaStream_t s, int kind, float alpha,
                           const float *x, float *y, int64_t n);
/* dx = f'(in) dy, in the forward input (relu, leaky) or output. */
cudaError_t gf_cuk_act_bwd(cudaStream_t s, int kind, float alpha,
                           const float *in, const float *dy, float *dx,
                           int64_t n);
/* y[i] = x[i] * (u_i >= p ? scale : 0), u_i the uniform of Philox word
 * offset + i under (key, ctr_hi): the same words as gf_philox_uniform. */
cudaError_t gf_cuk_dropout(cudaStream_t s, const float *x, float *y,
                           int64_t n, float p, float scale,
                           const uint32_t key[2], const uint32_t ctr_hi[2],
                           uint64_t offset);
/* out[0] = (float)(sum_i bce(x_i, t_i) / n), summed in double in a fixed
 * order (one block), so the value does not vary between runs. */
cudaError_t gf_cuk_bce_fwd(cudaStream_t s, const float *x, const float *t,
                           int64_t n, float *out);
/* dx = scale (sigmoid(x) - t). */
cudaError_t gf_cuk_bce_bwd(cudaStream_t s, const float *x, const float *t,
                           float scale, float *dx, int64_t n);

/* Scalars of one Adam update, formed on the host as torch.optim.Adam. */
typedef struct gf_cuk_adam_args {
  float b1, b2, omb1, omb2, step_size, bc2_sqrt, eps, wd;
} gf_cuk_adam_args;
cudaError_t gf_cuk_adam(cudaStream_t s, const gf_cuk_adam_args *a, float *w,
                        const float *g, float *m, float *v, int64_t n);
cudaError_t gf_cuk_fill(cudaStream_t s, float *t, float value, int64_t n);

/* y[n, c, s] += b[c] for y viewed as [N, C, S]. */
cudaError_t gf_cuk_bias_add(cudaStream_t s, float *y, const float *b,
                            int64_t N, int64_t C, int64_t S);
/* db[c] (+)= sum over n, s of dy[n, c, s], in a fixed order per channel. */
cudaError_t gf_cuk_bias_grad(cudaStream_t s, const float *dy, int64_t N,
                             int64_t C, int64_t S, float *db, int accumulate);
/* invstd[c] = 1 / sqrt(var[c] + eps). */
cudaError_t gf_cuk_bn_invstd(cudaStream_t s, const float *var, float eps,
                             float *invstd, int64_t C);
/* var[c] = max(1 / invstd[c]^2 - eps, 0): the biased variance back from
 * cuDNN's saved inverse standard deviation. */
cudaError_t gf_cuk_bn_var(cudaStream_t s, const float *invstd, float eps,
                          float *var, int64_t C);

/* Batch-norm dx from global statistics and reduced sums (sync BN), for x,
 * dy, dx viewed as [N, C, S], with the CPU backend's arithmetic: per
 * channel rstd = 1 / sqrtf(var + eps), a = gamma rstd (gamma NULL: 1),
 * mdy = sum_dy / count and k = rstd sum_dy_xhat / count (quotients in
 * double, rounded once), into coef (scratch of 3 C floats); then per
 * element dx = a (dy - mdy - (x - mean) k). dx may be dy or x. Two
 * launches; returns the first failure. */
cudaError_t gf_cuk_bn_bwd_dx(cudaStream_t s, const float *x, const float *dy,
                             const float *gamma, const float *mean,
                             const float *var, const float *sum_dy,
                             const float *sum_dy_xhat, float eps,
                             double count, int64_t N, int64_t C, int64_t S,
                             float *coef, float *dx);

/* ---- cuda_gan_ops.cu: the GAN ops, with the CPU backend's sums
 * (reduce_order.h) and roundings, so the results are its bits ---------- */
/* loss[0] = (float)(lane sum / n) of relu(1 + sign x) in f32 (hinge 1) or
 * of x (hinge 0); one block. */
cudaError_t gf_cuk_hinge_mean_fwd(cudaStream_t s, const float *x, int64_t n,
                                  int hinge, float sign, float *loss);
/* dx = sign (1 + sign x > 0 or NaN ? g : 0); dx may be x. */
cudaError_t gf_cuk_hinge_bwd(cudaStream_t s, const float *x, float sign,
                             float g, float *dx, int64_t n);
/* avg = fma(w, avg - x, x) for w < 0.5, else fma(w - 1, avg - x, avg);
 * avg may be x. */
cudaError_t gf_cuk_lerp(cudaStream_t s, float *avg, const float *x, float w,
                        int64_t n);
/* Bytes of scratch gf_cuk_sn_fwd needs for W [R, K]. */
size_t gf_cuk_sn_fwd_scratch(int64_t R, int64_t K);
/* Spectral normalization of W [R, K]: n_iter power iterations updating u
 * [R] and v [K], sigma[0] = u . W v, w_sn = W / sigma (sigma read on the
 * device). scratch: gf_cuk_sn_fwd_scratch bytes, 256-byte aligned. Up to
 * 4 n_iter + 3 launches; returns the first failure. */
cudaError_t gf_cuk_sn_fwd(cudaStream_t s, const float *w, float *u, float *v,
                          int64_t R, int64_t K, int n_iter, float eps,
                          float *sigma, float *w_sn, void *scratch);
/* Bytes of scratch gf_cuk_sn_bwd needs for R rows. */
size_t gf_cuk_sn_bwd_scratch(int64_t R);
/* dw (+)= g / sigma + (gs u_r) v_k, gs = -sum(g W) / sigma^2 (the CPU's
 * roundings); dw may be g. Three launches; returns the first failure. */
cudaError_t gf_cuk_sn_bwd(cudaStream_t s, const float *w, const float *u,
                          const float *v, const float *sigma, const float *g,
                          float *dw, int64_t R, int64_t K, int accumulate,
                          void *scratch);

#ifdef __cplusplus
}
#endif

#endif
