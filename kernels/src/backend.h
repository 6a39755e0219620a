/* backend.h - the dispatch table a backend fills (private to kernels/).
 *
 * ops.c validates every argument (dtype, device, shapes, NULL rules) once for
 * all backends and then calls ctx->ops->fn. A backend therefore receives
 * well-formed tensors on its own device and only computes. A NULL entry means
 * the backend lacks the op (the call returns GF_EUNSUPPORTED). A new backend
 * adds one table and one case in ctx.c; callers do not change. The CUDA
 * backend's table comes from a module loaded at run time (cuda_module.h),
 * so this struct is part of that module's ABI. */
#ifndef GF_BACKEND_H
#define GF_BACKEND_H

#include "gf/ctx.h"
#include "gf/ops.h"

typedef struct gf_backend_ops {
  const char *name;
  /* Creates ctx->impl (ctx->nthreads, device fields already set). */
  gf_status (*init)(gf_ctx *ctx, gf_err *err);
  /* Releases ctx->impl; must accept impl == NULL. */
  void (*fini)(gf_ctx *ctx);
  void (*stats)(const gf_ctx *ctx, gf_ctx_stats *out);
  /* Waits until every op queued on ctx has finished; NULL for a backend
   * whose ops return finished (the CPU's). */
  gf_status (*sync)(gf_ctx *ctx, gf_err *err);

  gf_status (*linear_fwd)(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *b, gf_tensor *y, gf_err *err);
  gf_status (*linear_bwd)(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *dy, gf_tensor *dx, gf_tensor *dw,
                          gf_tensor *db, gf_accum accum, gf_err *err);
  gf_status (*conv2d_fwd)(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *b, const gf_conv_params *p,
                          gf_tensor *y, gf_err *err);
  gf_status (*conv2d_bwd)(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *w,
                          const gf_tensor *dy, const gf_conv_params *p,
                          gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                          gf_accum accum, gf_err *err);
  gf_status (*deconv2d_fwd)(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *b,
                            const gf_conv_params *p, gf_tensor *y,
                            gf_err *err);
  gf_status (*deconv2d_bwd)(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *w, const gf_tensor *dy,
                            const gf_conv_params *p, gf_tensor *dx,
                            gf_tensor *dw, gf_tensor *db, gf_accum accum,
                            gf_err *err);
  /* x is viewed as [N, C, S] with S = H*W (1 for BatchNorm1d). */
  gf_status (*bn_fwd_train)(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *gamma, const gf_tensor *beta,
                            gf_tensor *running_mean, gf_tensor *running_var,
                            const gf_bn_params *p, gf_tensor *y,
                            gf_tensor *save_mean, gf_tensor *save_var,
                            gf_err *err);
  gf_status (*bn_fwd_infer)(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *gamma, const gf_tensor *beta,
                            const gf_tensor *running_mean,
                            const gf_tensor *running_var, float eps,
                            gf_tensor *y, gf_err *err);
  gf_status (*bn_bwd)(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *gamma,
                      const gf_tensor *save_mean, const gf_tensor *save_var,
                      float eps, const gf_tensor *dy, gf_tensor *dx,
                      gf_tensor *dgamma, gf_tensor *dbeta, gf_accum accum,
                      gf_err *err);
  /* dx from global statistics and reduced sums (gf_batchnorm_bwd_dx);
   * gamma may be NULL, dx may be dy or x. */
  gf_status (*bn_bwd_dx)(gf_ctx *ctx, const gf_tensor *x,
                         const gf_tensor *gamma, const gf_tensor *mean,
                         const gf_tensor *var, float eps, const gf_tensor *dy,
                         const gf_tensor *sum_dy,
                         const gf_tensor *sum_dy_xhat, double count,
                         gf_tensor *dx, gf_err *err);

  /* Element-wise activations: kind selects the function, alpha is the
   * LeakyReLU slope (ignored by the others). fwd: y = f(x). bwd: `in` is
   * the forward input (relu, leaky) or output (tanh, sigmoid). */
  gf_status (*act_fwd)(gf_ctx *ctx, int kind, float alpha, const gf_tensor *x,
                       gf_tensor *y, gf_err *err);
  gf_status (*act_bwd)(gf_ctx *ctx, int kind, float alpha,
                       const gf_tensor *in, const gf_tensor *dy,
                       gf_tensor *dx, gf_err *err);
  /* Dropout: y = x * mask(s) / (1-p); the backward is the same map on dy. */
  gf_status (*dropout)(gf_ctx *ctx, const gf_tensor *x, float p,
                       const gf_philox_stream *s, gf_tensor *y, gf_err *err);
  gf_status (*bce_fwd)(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *t,
                       gf_tensor *loss, gf_err *err);
  gf_status (*bce_bwd)(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *t,
                       float dloss, gf_tensor *dx, gf_err *err);
  gf_status (*adam)(gf_ctx *ctx, const gf_adam_params *p, int64_t step,
                    gf_tensor *param, const gf_tensor *grad, gf_tensor *m,
                    gf_tensor *v, gf_err *err);
  /* Pooling, kind a GF_POOL_* value; y has gf_pool2d_out_shape's shape and
   * p was checked (pad <= kernel/2: every window holds an input cell). */
  gf_status (*pool_fwd)(gf_ctx *ctx, int kind, const gf_tensor *x,
                        const gf_pool_params *p, gf_tensor *y, gf_err *err);
  /* x [N,C,H,W] -> y [N,C,OH,OW], every size >= 1. */
  gf_status (*resize_bilinear)(gf_ctx *ctx, const gf_tensor *x, gf_tensor *y,
                               gf_err *err);
  /* dst[:, offset : offset + Cs] = src, both viewed as [N, C, S] with the
   * same N and S; no overlap. */
  gf_status (*copy_channels)(gf_ctx *ctx, const gf_tensor *src,
                             gf_tensor *dst, int64_t offset, gf_err *err);
  gf_status (*fill)(gf_ctx *ctx, gf_tensor *t, float value, gf_err *err);
  gf_status (*copy)(gf_ctx *ctx, const gf_tensor *src, gf_tensor *dst,
                    gf_err *err);
  /* The hinge loss, the mean and their gradient (ops.h); sign is +1 or
   * -1, x is non-empty, loss has 1 element; dx may be x. Sums follow
   * reduce_order.h. */
  gf_status (*hinge_fwd)(gf_ctx *ctx, const gf_tensor *x, float sign,
                         gf_tensor *loss, gf_err *err);
  gf_status (*hinge_bwd)(gf_ctx *ctx, const gf_tensor *x, float sign,
                         float dloss, gf_tensor *dx, gf_err *err);
  gf_status (*mean_fwd)(gf_ctx *ctx, const gf_tensor *x, gf_tensor *loss,
                        gf_err *err);
  /* avg = lerp(x, avg, w) element-wise (gf_lerp), w = the f32 beta in
   * [0,1]; same numel >= 1, avg may be x. */
  gf_status (*lerp)(gf_ctx *ctx, gf_tensor *avg, const gf_tensor *x, float w,
                    gf_err *err);
  /* Spectral normalization (ops.h) of w viewed as [R, K], R = shape[0];
   * u [R], v [K], sigma [1] by numel; no two tensors overlap, except dw
   * may be dw_sn (bwd; dw non-NULL). */
  gf_status (*spectral_norm_fwd)(gf_ctx *ctx, const gf_tensor *w,
                                 gf_tensor *u, gf_tensor *v, int n_iter,
                                 float eps, gf_tensor *sigma,
                                 gf_tensor *w_sn, gf_err *err);
  gf_status (*spectral_norm_bwd)(gf_ctx *ctx, const gf_tensor *w,
                                 const gf_tensor *u, const gf_tensor *v,
                                 const gf_tensor *sigma,
                                 const gf_tensor *dw_sn, gf_tensor *dw,
                                 gf_accum accum, gf_err *err);
  /* DiffAugment (gf_augment_fwd / _bwd): in and out [N,C,H,W] with N,
   * C, H, W >= 1, params [N, GF_AUG_NPARAMS], policy within GF_AUG_ALL;
   * out may be in (the same tensor), no other overlap. */
  gf_status (*augment_fwd)(gf_ctx *ctx, const gf_tensor *x,
                           const gf_tensor *params, unsigned policy,
                           gf_tensor *y, gf_err *err);
  gf_status (*augment_bwd)(gf_ctx *ctx, const gf_tensor *params,
                           unsigned policy, const gf_tensor *dy,
                           gf_tensor *dx, gf_err *err);
  /* Class conditioning (ops.h). labels: GF_I32 [N] on the ctx's device,
   * N <= INT32_MAX (values checked by ops.c only in host memory: a label
   * outside [0, K) must read and write nothing: its y row quiet NaN, its
   * dy row dropped); table / dtable [K, D], y / dy [N, D], no overlaps. */
  gf_status (*embedding_fwd)(gf_ctx *ctx, const gf_tensor *table,
                             const gf_tensor *labels, gf_tensor *y,
                             gf_err *err);
  gf_status (*embedding_bwd)(gf_ctx *ctx, const gf_tensor *labels,
                             const gf_tensor *dy, gf_tensor *dtable,
                             gf_accum accum, gf_err *err);
  /* x, y, dy, dx viewed as [P, S], P = numel(gain) = N*C >= 1; gain,
   * bias, dgain, dbias [P]; bias may be NULL; y may be x, dx may be dy;
   * at least one of dx, dgain, dbias non-NULL. */
  gf_status (*channel_affine_fwd)(gf_ctx *ctx, const gf_tensor *x,
                                  const gf_tensor *gain, const gf_tensor *bias,
                                  gf_tensor *y, gf_err *err);
  gf_status (*channel_affine_bwd)(gf_ctx *ctx, const gf_tensor *x,
                                  const gf_tensor *gain, const gf_tensor *dy,
                                  gf_tensor *dx, gf_tensor *dgain,
                                  gf_tensor *dbias, gf_err *err);
  /* a, b, da, db [N, D] with N >= 1; y, dy N elements; at least one of
   * da, db non-NULL. */
  gf_status (*rowdot_fwd)(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                          gf_tensor *y, gf_accum accum, gf_err *err);
  gf_status (*rowdot_bwd)(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                          const gf_tensor *dy, gf_tensor *da, gf_tensor *db,
                          gf_accum accum, gf_err *err);
  /* Residual networks (ops.h). Nearest 2x upsampling: x / dx [N,C,H,W],
   * y / dy [N,C,2H,2W]. Average-pool backward: p has kernel == stride,
   * pad 0, kernel dividing dx's H and W; dy [N,C,H/kh,W/kw]. Each has
   * numel >= 1 and no overlap between its input and its output. add: a,
   * b, y of the same numel >= 1; y is a or b (the same data) or overlaps
   * neither. */
  gf_status (*upsample_nearest2x_fwd)(gf_ctx *ctx, const gf_tensor *x,
                                      gf_tensor *y, gf_err *err);
  gf_status (*upsample_nearest2x_bwd)(gf_ctx *ctx, const gf_tensor *dy,
                                      gf_tensor *dx, gf_err *err);
  gf_status (*avgpool2d_bwd)(gf_ctx *ctx, const gf_tensor *dy,
                             const gf_pool_params *p, gf_tensor *dx,
                             gf_err *err);
  gf_status (*add)(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                   gf_tensor *y, gf_err *err);
  /* FIR resampling (ops.h): y = upfirdn2d(x, f, p), the forward's formula;
   * the backward is this with derived parameters (ops.c). x [N,C,H,W] with
   * N C >= 1 and H, W >= 1, f [fh,fw] non-empty, y
   * gf_upfirdn2d_out_shape(x, f, p) (both sides >= 1); p checked (factors
   * >= 1, flip 0 or 1); y overlaps neither x nor f. */
  gf_status (*upfirdn2d)(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *f,
                         const gf_fir_params *p, gf_tensor *y, gf_err *err);
  /* Modulated convolution (ops.h). Weight ops: w [Cout,Cin,kh,kw] with
   * every dim >= 1, s [N,Cin] with N >= 0, wmod / dwmod [N Cout,Cin,kh,kw],
   * dcoef [N,Cout]; demodulate 0 or 1; with 1, eps > 0 and dcoef given;
   * with 0, dcoef may be NULL (fwd) and is not read (bwd); bwd: dw or ds
   * non-NULL. Batched conv: x [N,Cin,H,W] and y / dy [N,Cout,OH,OW] with
   * N, Cout >= 1, wmod [N Cout,Cin,kh,kw], p checked (out_pad 0); bwd: dx
   * or dwmod non-NULL. No output overlaps an input or another output. */
  gf_status (*modconv_weight_fwd)(gf_ctx *ctx, const gf_tensor *w,
                                  const gf_tensor *s, int demodulate,
                                  float eps, gf_tensor *wmod,
                                  gf_tensor *dcoef, gf_err *err);
  gf_status (*modconv_weight_bwd)(gf_ctx *ctx, const gf_tensor *w,
                                  const gf_tensor *s, int demodulate,
                                  float eps, const gf_tensor *dcoef,
                                  const gf_tensor *dwmod, gf_tensor *dw,
                                  gf_tensor *ds, gf_accum accum, gf_err *err);
  gf_status (*conv2d_batched_fwd)(gf_ctx *ctx, const gf_tensor *x,
                                  const gf_tensor *wmod,
                                  const gf_conv_params *p, gf_tensor *y,
                                  gf_err *err);
  gf_status (*conv2d_batched_bwd)(gf_ctx *ctx, const gf_tensor *x,
                                  const gf_tensor *wmod, const gf_tensor *dy,
                                  const gf_conv_params *p, gf_tensor *dx,
                                  gf_tensor *dwmod, gf_err *err);
  /* StyleGAN2 layers (ops.h). bias_act: x, y, dy, dx viewed as [N, C, S]
   * (S = H*W, 1 for [N,C]) with N*C*S >= 1; b, db [C] (b may be NULL);
   * act a gf_bias_act_kind, alpha, gain and clamp as ops.h allows; y may
   * be x and dx may be dy; at least one of dx, db non-NULL. mbstd: x / dx
   * [N,C,H,W] with N, C, H, W >= 1, y / dy [N,C+F,H,W]; G = min(group_size,
   * N) divides N, F divides C; no overlap. noise_add: x, y, dy, dx
   * [N,C,H,W] with numel >= 1, noise [N,1,H,W], strength and dstrength
   * one element; y may be x, dx may be dy or NULL, dstrength may be NULL;
   * no other overlap. */
  gf_status (*bias_act_fwd)(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *b, int act, float alpha,
                            float gain, float clamp, gf_tensor *y,
                            gf_err *err);
  gf_status (*bias_act_bwd)(gf_ctx *ctx, const gf_tensor *y, int act,
                            float alpha, float gain, float clamp,
                            const gf_tensor *dy, gf_tensor *dx, gf_tensor *db,
                            gf_accum accum, gf_err *err);
  gf_status (*mbstd_fwd)(gf_ctx *ctx, const gf_tensor *x, int group_size,
                         int num_channels, gf_tensor *y, gf_err *err);
  gf_status (*mbstd_bwd)(gf_ctx *ctx, const gf_tensor *x, int group_size,
                         int num_channels, const gf_tensor *dy, gf_tensor *dx,
                         gf_err *err);
  gf_status (*noise_add_fwd)(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *noise, const gf_tensor *strength,
                             gf_tensor *y, gf_err *err);
  gf_status (*noise_add_bwd)(gf_ctx *ctx, const gf_tensor *noise,
                             const gf_tensor *dy, gf_tensor *dx,
                             gf_tensor *dstrength, gf_accum accum,
                             gf_err *err);
  /* ADA resampling (ops.h): reflect padding, per-sample affine bilinear
   * resampling and the 4x4 colour matrix, forward and transpose. Shapes,
   * pads (0 <= pad < side), C in {1, 3} and overlaps checked by ops.c;
   * every tensor non-empty. */
  gf_status (*pad_reflect_fwd)(gf_ctx *ctx, const gf_tensor *x,
                               const int pad[4], gf_tensor *y, gf_err *err);
  gf_status (*pad_reflect_bwd)(gf_ctx *ctx, const int pad[4],
                               const gf_tensor *dy, gf_tensor *dx,
                               gf_err *err);
  gf_status (*affine_sample_fwd)(gf_ctx *ctx, const gf_tensor *x,
                                 const gf_tensor *theta, gf_tensor *y,
                                 gf_err *err);
  gf_status (*affine_sample_bwd)(gf_ctx *ctx, const gf_tensor *theta,
                                 const gf_tensor *dy, gf_tensor *dx,
                                 gf_err *err);
  gf_status (*color4_fwd)(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *m,
                          gf_tensor *y, gf_err *err);
  gf_status (*color4_bwd)(gf_ctx *ctx, const gf_tensor *m, const gf_tensor *dy,
                          gf_tensor *dx, gf_err *err);
  /* mbstd tangents (ops.h): shapes as mbstd's, no overlap. */
  gf_status (*mbstd_jvp)(gf_ctx *ctx, const gf_tensor *x,
                         const gf_tensor *xdot, int group_size,
                         int num_channels, gf_tensor *ydot, gf_err *err);
  gf_status (*mbstd_bwd_jvp)(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *xdot, int group_size,
                             int num_channels, const gf_tensor *dy,
                             const gf_tensor *dydot, gf_tensor *dxdot,
                             gf_err *err);
  /* modulation tangents (ops.h): shapes checked, no overlap; wmoddot may
   * be NULL, gws / gwsdot both NULL or both given (then g, gdot too). */
  gf_status (*modconv_demod_jvp)(gf_ctx *ctx, const gf_tensor *w,
                                 const gf_tensor *s, const gf_tensor *sdot,
                                 const gf_tensor *dcoef, const gf_tensor *g,
                                 const gf_tensor *gdot, gf_tensor *wmoddot,
                                 gf_tensor *gws, gf_tensor *gwsdot,
                                 gf_err *err);
} gf_backend_ops;

/* Activation kinds for act_fwd / act_bwd. */
enum { GF_ACT_RELU = 0, GF_ACT_LEAKY_RELU, GF_ACT_TANH, GF_ACT_SIGMOID };
/* Pooling kinds for pool_fwd: max, average over kh*kw (count_include_pad),
 * average over the window's non-padding cells. */
enum { GF_POOL_MAX = 0, GF_POOL_AVG_INCLUDE_PAD, GF_POOL_AVG_EXCLUDE_PAD };

/* The CPU backend's table (cpu/cpu_ctx.c). */
/* The CPU backend's check for native bf16 (int8 0) or int8 (int8 1)
 * kernels (cpu_ctx.c), for gf_ctx_bf16_check and gf_ctx_int8_check. */
gf_status gf_cpu_lowp_check(int int8, gf_err *err);
extern const gf_backend_ops gf_cpu_backend_ops;
/* The CUDA backend's table lives in the CUDA backend module
 * (cuda/cuda_ctx.c, reached through cuda_module.h). */

#endif
