/* cuda_backend.c - the CUDA backend as gf_ctx sees it: its state made
 * (stream, cuBLAS and cuDNN handles, descriptors) and freed, its counters,
 * its sync, and its dispatch table, the one place that names the functions
 * of every file of the backend. */
#include <stdlib.h>
#include <string.h>

#include "cuda_backend.h"
#include "cuda_mem.h"

static void cu_fini(gf_ctx *ctx) {
  gf_cuda_state *s = gf_cu(ctx);
  if (!s) return;
  (void)cudaSetDevice(ctx->device_index);
  if (s->stream) (void)cudaStreamSynchronize(s->stream);
  if (s->ws) (void)cudaFree(s->ws);
  if (s->xd) (void)cudnnDestroyTensorDescriptor(s->xd);
  if (s->yd) (void)cudnnDestroyTensorDescriptor(s->yd);
  if (s->bd) (void)cudnnDestroyTensorDescriptor(s->bd);
  if (s->wd) (void)cudnnDestroyFilterDescriptor(s->wd);
  if (s->cd) (void)cudnnDestroyConvolutionDescriptor(s->cd);
  if (s->dnn) (void)cudnnDestroy(s->dnn);
  if (s->blas) (void)cublasDestroy(s->blas);
  if (s->stream) (void)cudaStreamDestroy(s->stream);
  free(s);
  ctx->impl = NULL;
}

static gf_status cu_init_state(gf_ctx *ctx, gf_cuda_state *s, gf_err *err) {
  CU_TRY(cudaSetDevice(ctx->device_index));
  CU_TRY(cudaStreamCreate(&s->stream));
  BLAS_TRY(cublasCreate(&s->blas));
  BLAS_TRY(cublasSetStream(s->blas, s->stream));
  DNN_TRY(cudnnCreate(&s->dnn));
  DNN_TRY(cudnnSetStream(s->dnn, s->stream));
  DNN_TRY(cudnnCreateTensorDescriptor(&s->xd));
  DNN_TRY(cudnnCreateTensorDescriptor(&s->yd));
  DNN_TRY(cudnnCreateTensorDescriptor(&s->bd));
  DNN_TRY(cudnnCreateFilterDescriptor(&s->wd));
  DNN_TRY(cudnnCreateConvolutionDescriptor(&s->cd));
  size_t free_b = 0, total_b = 0;
  CU_TRY(cudaMemGetInfo(&free_b, &total_b));
  s->ws_max = total_b / 4;
  return GF_OK;
}

static gf_status cu_init(gf_ctx *ctx, gf_err *err) {
  gf_status st = gf_cuda_probe(ctx->device_index, NULL, err);
  if (st) return st;
  gf_cuda_state *s = calloc(1, sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "cuda: cannot allocate ctx state");
  ctx->impl = s;
  st = cu_init_state(ctx, s, err);
  if (st) cu_fini(ctx); /* ctx.c does not call fini after a failed init */
  return st;
}

static void cu_stats(const gf_ctx *ctx, gf_ctx_stats *out) {
  const gf_cuda_state *s = ctx->impl;
  if (!s) return;
  out->primitives_created = s->algos.misses;
  out->primitive_hits = s->algos.hits;
  out->cached_primitives = (size_t)s->algos.n;
  out->scratch_bytes = s->ws_cap;
}

static gf_status cu_sync(gf_ctx *ctx, gf_err *err) {
  CU_TRY(cudaStreamSynchronize(gf_cu(ctx)->stream));
  return GF_OK;
}

const gf_backend_ops gf_cuda_backend_ops = {
    .name = "cuda",
    .init = cu_init,
    .fini = cu_fini,
    .stats = cu_stats,
    .sync = cu_sync,
    .linear_fwd = gf_cuda_linear_fwd,
    .linear_bwd = gf_cuda_linear_bwd,
    .conv2d_fwd = gf_cuda_conv2d_fwd,
    .conv2d_bwd = gf_cuda_conv2d_bwd,
    .deconv2d_fwd = gf_cuda_deconv2d_fwd,
    .deconv2d_bwd = gf_cuda_deconv2d_bwd,
    .bn_fwd_train = gf_cuda_bn_fwd_train,
    .bn_fwd_infer = gf_cuda_bn_fwd_infer,
    .bn_bwd = gf_cuda_bn_bwd,
    .bn_bwd_dx = gf_cuda_bn_bwd_dx,
    .act_fwd = gf_cuda_act_fwd,
    .act_bwd = gf_cuda_act_bwd,
    .dropout = gf_cuda_dropout,
    .bce_fwd = gf_cuda_bce_fwd,
    .bce_bwd = gf_cuda_bce_bwd,
    .adam = gf_cuda_adam,
    .pool_fwd = gf_cuda_pool_fwd,
    .resize_bilinear = gf_cuda_resize_bilinear,
    .copy_channels = gf_cuda_copy_channels,
    .fill = gf_cuda_fill,
    .copy = gf_cuda_copy,
    .hinge_fwd = gf_cuda_hinge_fwd,
    .hinge_bwd = gf_cuda_hinge_bwd,
    .mean_fwd = gf_cuda_mean_fwd,
    .lerp = gf_cuda_lerp,
    .spectral_norm_fwd = gf_cuda_spectral_norm_fwd,
    .spectral_norm_bwd = gf_cuda_spectral_norm_bwd,
    .augment_fwd = gf_cuda_augment_fwd,
    .augment_bwd = gf_cuda_augment_bwd,
    .embedding_fwd = gf_cuda_embedding_fwd,
    .embedding_bwd = gf_cuda_embedding_bwd,
    .channel_affine_fwd = gf_cuda_channel_affine_fwd,
    .channel_affine_bwd = gf_cuda_channel_affine_bwd,
    .rowdot_fwd = gf_cuda_rowdot_fwd,
    .rowdot_bwd = gf_cuda_rowdot_bwd,
    .upsample_nearest2x_fwd = gf_cuda_upsample_nearest2x_fwd,
    .upsample_nearest2x_bwd = gf_cuda_upsample_nearest2x_bwd,
    .avgpool2d_bwd = gf_cuda_avgpool2d_bwd,
    .add = gf_cuda_add,
    .upfirdn2d = gf_cuda_upfirdn2d,
    .modconv_weight_fwd = gf_cuda_modconv_weight_fwd,
    .modconv_weight_bwd = gf_cuda_modconv_weight_bwd,
    .conv2d_batched_fwd = gf_cuda_conv2d_batched_fwd,
    .conv2d_batched_bwd = gf_cuda_conv2d_batched_bwd,
    .bias_act_fwd = gf_cuda_bias_act_fwd,
    .bias_act_bwd = gf_cuda_bias_act_bwd,
    .mbstd_fwd = gf_cuda_mbstd_fwd,
    .mbstd_bwd = gf_cuda_mbstd_bwd,
    .mbstd_jvp = gf_cuda_mbstd_jvp,
    .mbstd_bwd_jvp = gf_cuda_mbstd_bwd_jvp,
    .modconv_demod_jvp = gf_cuda_modconv_demod_jvp,
    .noise_add_fwd = gf_cuda_noise_add_fwd,
    .noise_add_bwd = gf_cuda_noise_add_bwd,
    .pad_reflect_fwd = gf_cuda_pad_reflect_fwd,
    .pad_reflect_bwd = gf_cuda_pad_reflect_bwd,
    .affine_sample_fwd = gf_cuda_affine_sample_fwd,
    .affine_sample_bwd = gf_cuda_affine_sample_bwd,
    .color4_fwd = gf_cuda_color4_fwd,
    .color4_bwd = gf_cuda_color4_bwd,
};
