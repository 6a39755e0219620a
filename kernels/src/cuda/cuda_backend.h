/* cuda_backend.h - private state and helpers of the CUDA backend: the
 * stream, the cuBLAS and cuDNN handles and descriptors, the workspace and
 * the algorithm cache that live in each gf_ctx, the checks that turn CUDA,
 * cuBLAS and cuDNN errors into gf_status with file:line, and the op entry
 * points of cuda_*.c. Not a public header. No global state: every handle
 * belongs to one ctx. */
#ifndef GF_CUDA_BACKEND_H
#define GF_CUDA_BACKEND_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>
#include <stddef.h>

#include "../backend.h"
#include "cuda_kernels.h"
#include "cuda_plan.h"

typedef struct gf_cuda_state {
  cudaStream_t stream;         /* owned; blocking stream, so that the legacy
                                  default stream (cudaMemcpy of
                                  gf_tensor_copy) orders after its work */
  cublasHandle_t blas;         /* owned; bound to stream */
  cudnnHandle_t dnn;           /* owned; bound to stream */
  cudnnTensorDescriptor_t xd, yd, bd; /* owned; re-set by each op */
  cudnnFilterDescriptor_t wd;  /* owned */
  cudnnConvolutionDescriptor_t cd; /* owned */
  void *ws;                    /* owned device workspace of ws_cap bytes */
  size_t ws_cap;               /* grows by gf_cuda_ws_grow, never shrinks */
  size_t ws_max;               /* upper bound for one algorithm's workspace
                                  (a quarter of the device memory) */
  gf_cuda_algo_cache algos;    /* conv algorithm choices of this ctx */
} gf_cuda_state;

/* The backend's table (cuda_ctx.c), which the module's entry hands to
 * gf_kernels (cuda_module.c). */
extern const gf_backend_ops gf_cuda_backend_ops;

static inline gf_cuda_state *gf_cu(gf_ctx *ctx) {
  return (gf_cuda_state *)ctx->impl;
}

/* Each turns a failed call into GF_EDEVICE naming the call, file:line and
 * the library's message; GF_OK on success. */
gf_status gf_cuda_check(cudaError_t e, const char *call, const char *file,
                        int line, gf_err *err);
gf_status gf_cublas_check(cublasStatus_t s, const char *call,
                          const char *file, int line, gf_err *err);
gf_status gf_cudnn_check(cudnnStatus_t s, const char *call, const char *file,
                         int line, gf_err *err);
#define CU_TRY(call)                                                       \
  do {                                                                     \
    gf_status st_ = gf_cuda_check((call), #call, __FILE__, __LINE__, err); \
    if (st_) return st_;                                                   \
  } while (0)
#define BLAS_TRY(call)                                                     \
  do {                                                                     \
    gf_status st_ = gf_cublas_check((call), #call, __FILE__, __LINE__,     \
                                    err);                                  \
    if (st_) return st_;                                                   \
  } while (0)
#define DNN_TRY(call)                                                      \
  do {                                                                     \
    gf_status st_ = gf_cudnn_check((call), #call, __FILE__, __LINE__, err); \
    if (st_) return st_;                                                   \
  } while (0)

/* Makes ctx's device current for the calling thread; every op starts so. */
gf_status gf_cuda_enter(gf_ctx *ctx, gf_err *err);
/* In an op entry point (ctx and err in scope): gf_cuda_enter or return. */
#define CU_ENTER()                               \
  do {                                           \
    gf_status e_ = gf_cuda_enter(ctx, err);      \
    if (e_) return e_;                           \
  } while (0)

/* Returns the ctx's workspace grown to at least bytes (owned by the ctx,
 * valid until the next call; contents unspecified). Growing waits for the
 * stream before the old block is released. */
gf_status gf_cuda_ws(gf_ctx *ctx, size_t bytes, void **out, gf_err *err);

/* Op entry points (cuda_conv.c, cuda_bn.c, cuda_blas.c, cuda_eltwise.c,
 * cuda_pool_ops.c, cuda_gan.c); see backend.h for their contracts. */
gf_status gf_cuda_linear_fwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *w, const gf_tensor *b,
                             gf_tensor *y, gf_err *err);
gf_status gf_cuda_linear_bwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *w, const gf_tensor *dy,
                             gf_tensor *dx, gf_tensor *dw, gf_tensor *db,
                             gf_accum accum, gf_err *err);
gf_status gf_cuda_conv2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *w, const gf_tensor *b,
                             const gf_conv_params *p, gf_tensor *y,
                             gf_err *err);
gf_status gf_cuda_conv2d_bwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *w, const gf_tensor *dy,
                             const gf_conv_params *p, gf_tensor *dx,
                             gf_tensor *dw, gf_tensor *db, gf_accum accum,
                             gf_err *err);
gf_status gf_cuda_deconv2d_fwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *w, const gf_tensor *b,
                               const gf_conv_params *p, gf_tensor *y,
                               gf_err *err);
gf_status gf_cuda_deconv2d_bwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *w, const gf_tensor *dy,
                               const gf_conv_params *p, gf_tensor *dx,
                               gf_tensor *dw, gf_tensor *db, gf_accum accum,
                               gf_err *err);
gf_status gf_cuda_bn_fwd_train(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *gamma, const gf_tensor *beta,
                               gf_tensor *running_mean,
                               gf_tensor *running_var, const gf_bn_params *p,
                               gf_tensor *y, gf_tensor *save_mean,
                               gf_tensor *save_var, gf_err *err);
gf_status gf_cuda_bn_fwd_infer(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *gamma, const gf_tensor *beta,
                               const gf_tensor *running_mean,
                               const gf_tensor *running_var, float eps,
                               gf_tensor *y, gf_err *err);
gf_status gf_cuda_bn_bwd(gf_ctx *ctx, const gf_tensor *x,
                         const gf_tensor *gamma, const gf_tensor *save_mean,
                         const gf_tensor *save_var, float eps,
                         const gf_tensor *dy, gf_tensor *dx,
                         gf_tensor *dgamma, gf_tensor *dbeta, gf_accum accum,
                         gf_err *err);
gf_status gf_cuda_bn_bwd_dx(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *gamma, const gf_tensor *mean,
                            const gf_tensor *var, float eps,
                            const gf_tensor *dy, const gf_tensor *sum_dy,
                            const gf_tensor *sum_dy_xhat, double count,
                            gf_tensor *dx, gf_err *err);
gf_status gf_cuda_act_fwd(gf_ctx *ctx, int kind, float alpha,
                          const gf_tensor *x, gf_tensor *y, gf_err *err);
gf_status gf_cuda_act_bwd(gf_ctx *ctx, int kind, float alpha,
                          const gf_tensor *in, const gf_tensor *dy,
                          gf_tensor *dx, gf_err *err);
gf_status gf_cuda_dropout(gf_ctx *ctx, const gf_tensor *x, float p,
                          const gf_philox_stream *s, gf_tensor *y,
                          gf_err *err);
gf_status gf_cuda_bce_fwd(gf_ctx *ctx, const gf_tensor *x,
                          const gf_tensor *t, gf_tensor *loss, gf_err *err);
gf_status gf_cuda_bce_bwd(gf_ctx *ctx, const gf_tensor *x,
                          const gf_tensor *t, float dloss, gf_tensor *dx,
                          gf_err *err);
gf_status gf_cuda_adam(gf_ctx *ctx, const gf_adam_params *p, int64_t step,
                       gf_tensor *param, const gf_tensor *grad, gf_tensor *m,
                       gf_tensor *v, gf_err *err);
gf_status gf_cuda_pool_fwd(gf_ctx *ctx, int kind, const gf_tensor *x,
                           const gf_pool_params *p, gf_tensor *y,
                           gf_err *err);
gf_status gf_cuda_resize_bilinear(gf_ctx *ctx, const gf_tensor *x,
                                  gf_tensor *y, gf_err *err);
gf_status gf_cuda_copy_channels(gf_ctx *ctx, const gf_tensor *src,
                                gf_tensor *dst, int64_t offset, gf_err *err);
gf_status gf_cuda_fill(gf_ctx *ctx, gf_tensor *t, float value, gf_err *err);
gf_status gf_cuda_copy(gf_ctx *ctx, const gf_tensor *src, gf_tensor *dst,
                       gf_err *err);
/* cuda_gan.c */
gf_status gf_cuda_hinge_fwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                            gf_tensor *loss, gf_err *err);
gf_status gf_cuda_hinge_bwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                            float dloss, gf_tensor *dx, gf_err *err);
gf_status gf_cuda_mean_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *loss,
                           gf_err *err);
gf_status gf_cuda_lerp(gf_ctx *ctx, gf_tensor *avg, const gf_tensor *x,
                       float w, gf_err *err);
gf_status gf_cuda_spectral_norm_fwd(gf_ctx *ctx, const gf_tensor *w,
                                    gf_tensor *u, gf_tensor *v, int n_iter,
                                    float eps, gf_tensor *sigma,
                                    gf_tensor *w_sn, gf_err *err);
gf_status gf_cuda_spectral_norm_bwd(gf_ctx *ctx, const gf_tensor *w,
                                    const gf_tensor *u, const gf_tensor *v,
                                    const gf_tensor *sigma,
                                    const gf_tensor *dw_sn, gf_tensor *dw,
                                    gf_accum accum, gf_err *err);
/* cuda_augment.c */
gf_status gf_cuda_augment_fwd(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *params, unsigned policy,
                              gf_tensor *y, gf_err *err);
gf_status gf_cuda_augment_bwd(gf_ctx *ctx, const gf_tensor *params,
                              unsigned policy, const gf_tensor *dy,
                              gf_tensor *dx, gf_err *err);
/* cuda_cond.c */
gf_status gf_cuda_embedding_fwd(gf_ctx *ctx, const gf_tensor *table,
                                const gf_tensor *labels, gf_tensor *y,
                                gf_err *err);
gf_status gf_cuda_embedding_bwd(gf_ctx *ctx, const gf_tensor *labels,
                                const gf_tensor *dy, gf_tensor *dtable,
                                gf_accum accum, gf_err *err);
gf_status gf_cuda_channel_affine_fwd(gf_ctx *ctx, const gf_tensor *x,
                                     const gf_tensor *gain,
                                     const gf_tensor *bias, gf_tensor *y,
                                     gf_err *err);
gf_status gf_cuda_channel_affine_bwd(gf_ctx *ctx, const gf_tensor *x,
                                     const gf_tensor *gain, const gf_tensor *dy,
                                     gf_tensor *dx, gf_tensor *dgain,
                                     gf_tensor *dbias, gf_err *err);
gf_status gf_cuda_rowdot_fwd(gf_ctx *ctx, const gf_tensor *a,
                             const gf_tensor *b, gf_tensor *y, gf_accum accum,
                             gf_err *err);
gf_status gf_cuda_rowdot_bwd(gf_ctx *ctx, const gf_tensor *a,
                             const gf_tensor *b, const gf_tensor *dy,
                             gf_tensor *da, gf_tensor *db, gf_accum accum,
                             gf_err *err);
/* cuda_resample.c */
gf_status gf_cuda_upsample_nearest2x_fwd(gf_ctx *ctx, const gf_tensor *x,
                                         gf_tensor *y, gf_err *err);
gf_status gf_cuda_upsample_nearest2x_bwd(gf_ctx *ctx, const gf_tensor *dy,
                                         gf_tensor *dx, gf_err *err);
gf_status gf_cuda_avgpool2d_bwd(gf_ctx *ctx, const gf_tensor *dy,
                                const gf_pool_params *p, gf_tensor *dx,
                                gf_err *err);
gf_status gf_cuda_add(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                      gf_tensor *y, gf_err *err);
/* cuda_fir.c */
gf_status gf_cuda_upfirdn2d(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *f, const gf_fir_params *p,
                            gf_tensor *y, gf_err *err);
/* cuda_modconv.c (the weight ops) and cuda_conv.c (the batched conv) */
gf_status gf_cuda_modconv_weight_fwd(gf_ctx *ctx, const gf_tensor *w,
                                     const gf_tensor *s, int demodulate,
                                     float eps, gf_tensor *wmod,
                                     gf_tensor *dcoef, gf_err *err);
gf_status gf_cuda_modconv_weight_bwd(gf_ctx *ctx, const gf_tensor *w,
                                     const gf_tensor *s, int demodulate,
                                     float eps, const gf_tensor *dcoef,
                                     const gf_tensor *dwmod, gf_tensor *dw,
                                     gf_tensor *ds, gf_accum accum,
                                     gf_err *err);
gf_status gf_cuda_conv2d_batched_fwd(gf_ctx *ctx, const gf_tensor *x,
                                     const gf_tensor *wmod,
                                     const gf_conv_params *p, gf_tensor *y,
                                     gf_err *err);
gf_status gf_cuda_conv2d_batched_bwd(gf_ctx *ctx, const gf_tensor *x,
                                     const gf_tensor *wmod,
                                     const gf_tensor *dy,
                                     const gf_conv_params *p, gf_tensor *dx,
                                     gf_tensor *dwmod, gf_err *err);
/* cuda_stylegan_ops.c */
gf_status gf_cuda_bias_act_fwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *b, int act, float alpha,
                               float gain, float clamp, gf_tensor *y,
                               gf_err *err);
gf_status gf_cuda_bias_act_bwd(gf_ctx *ctx, const gf_tensor *y, int act,
                               float alpha, float gain, float clamp,
                               const gf_tensor *dy, gf_tensor *dx,
                               gf_tensor *db, gf_accum accum, gf_err *err);
gf_status gf_cuda_mbstd_fwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                            int num_channels, gf_tensor *y, gf_err *err);
gf_status gf_cuda_mbstd_bwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                            int num_channels, const gf_tensor *dy,
                            gf_tensor *dx, gf_err *err);
gf_status gf_cuda_mbstd_jvp(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *xdot, int group_size, int num_channels,
                            gf_tensor *ydot, gf_err *err);
gf_status gf_cuda_mbstd_bwd_jvp(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *xdot, int group_size,
                                int num_channels, const gf_tensor *dy,
                                const gf_tensor *dydot, gf_tensor *dxdot, gf_err *err);
gf_status gf_cuda_modconv_demod_jvp(gf_ctx *ctx, const gf_tensor *w,
    const gf_tensor *s, const gf_tensor *sdot, const gf_tensor *dcoef,
    const gf_tensor *g, const gf_tensor *gdot, gf_tensor *wmoddot,
    gf_tensor *gws, gf_tensor *gwsdot, gf_err *err);
gf_status gf_cuda_noise_add_fwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *noise,
                                const gf_tensor *strength, gf_tensor *y,
                                gf_err *err);
gf_status gf_cuda_noise_add_bwd(gf_ctx *ctx, const gf_tensor *noise,
                                const gf_tensor *dy, gf_tensor *dx,
                                gf_tensor *dstrength, gf_accum accum,
                                gf_err *err);

/* cuda_ada.c */
gf_status gf_cuda_pad_reflect_fwd(gf_ctx *ctx, const gf_tensor *x,
                                 const int pad[4], gf_tensor *y, gf_err *err);
gf_status gf_cuda_pad_reflect_bwd(gf_ctx *ctx, const int pad[4],
                                 const gf_tensor *dy, gf_tensor *dx,
                                 gf_err *err);
gf_status gf_cuda_affine_sample_fwd(gf_ctx *ctx, const gf_tensor *x,
                                   const gf_tensor *theta, gf_tensor *y,
                                   gf_err *err);
gf_status gf_cuda_affine_sample_bwd(gf_ctx *ctx, const gf_tensor *theta,
                                   const gf_tensor *dy, gf_tensor *dx,
                                   gf_err *err);
gf_status gf_cuda_color4_fwd(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *m, gf_tensor *y, gf_err *err);
gf_status gf_cuda_color4_bwd(gf_ctx *ctx, const gf_tensor *m,
                            const gf_tensor *dy, gf_tensor *dx, gf_err *err);

#endif
