/* cuda_bn.c - batch normalization on cuDNN (spatial mode: statistics per
 * channel over N*H*W; BatchNorm1d's [N,C] is seen as [N,C,1,1]), and the
 * sync-BN dx (gf_batchnorm_bwd_dx) on the backend's own kernel.
 * cuDNN keeps the inverse standard deviation where the gf_ API keeps the
 * biased variance (save_var): two small kernels convert between them.
 * gamma/beta NULL (affine=False) run with ones/zeros, and gradients the
 * caller does not want go to scratch, all carved from the ctx workspace. */
#include "cuda_backend.h"

/* Sets xd to x as NCHW and bd to the derived [1,C,1,1] descriptor; *C
 * receives the channel count. */
static gf_status bn_descs(gf_ctx *ctx, const gf_tensor *x, int64_t *C,
                          gf_err *err) {
  gf_cuda_state *s = gf_cu(ctx);
  int64_t n = x->shape[0], c = x->shape[1];
  int64_t h = x->ndim == 4 ? x->shape[2] : 1, w = x->ndim == 4 ? x->shape[3] : 1;
  if (n > INT32_MAX || c > INT32_MAX || h > INT32_MAX || w > INT32_MAX)
    return gf_fail(err, GF_EUNSUPPORTED, "cuda: batchnorm dims beyond int32");
  DNN_TRY(cudnnSetTensor4dDescriptor(s->xd, CUDNN_TENSOR_NCHW,
                                     CUDNN_DATA_FLOAT, (int)n, (int)c, (int)h,
                                     (int)w));
  DNN_TRY(cudnnDeriveBNTensorDescriptor(s->bd, s->xd, CUDNN_BATCHNORM_SPATIAL));
  *C = c;
  return GF_OK;
}

/* Carves n buffers of sizes[i] bytes from the workspace into ptr[i]. */
static gf_status carve(gf_ctx *ctx, const size_t *sizes, int n, void **ptr,
                       gf_err *err) {
  size_t off[8], total = 0;
  if (gf_cuda_ws_layout(sizes, n, off, &total) != 0)
    return gf_fail(err, GF_ENOMEM, "cuda: batchnorm scratch overflows");
  if (total == 0) { /* nothing to carve (affine, every output wanted) */
    for (int i = 0; i < n; i++) ptr[i] = NULL;
    return GF_OK;
  }
  void *base = NULL;
  GF_TRY(gf_cuda_ws(ctx, total, &base, err));
  for (int i = 0; i < n; i++) ptr[i] = sizes[i] ? (char *)base + off[i] : NULL;
  return GF_OK;
}

gf_status gf_cuda_bn_fwd_train(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *gamma, const gf_tensor *beta,
                               gf_tensor *running_mean,
                               gf_tensor *running_var, const gf_bn_params *p,
                               gf_tensor *y, gf_tensor *save_mean,
                               gf_tensor *save_var, gf_err *err) {
  CU_ENTER();
  gf_cuda_state *s = gf_cu(ctx);
  int64_t C = 0;
  GF_TRY(bn_descs(ctx, x, &C, err));
  size_t cb = (size_t)C * sizeof(float);
  size_t sizes[3] = {gamma ? 0 : cb, gamma ? 0 : cb, cb};
  void *buf[3] = {0};
  GF_TRY(carve(ctx, sizes, 3, buf, err));
  const void *scale = gamma ? gamma->data : buf[0];
  const void *bias = gamma ? beta->data : buf[1];
  if (!gamma) {
    CU_TRY(gf_cuk_fill(s->stream, buf[0], 1.0f, C));
    CU_TRY(gf_cuk_fill(s->stream, buf[1], 0.0f, C));
  }
  const float one = 1.0f, zero = 0.0f;
  DNN_TRY(cudnnBatchNormalizationForwardTraining(
      s->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, s->xd, x->data, s->xd,
      y->data, s->bd, scale, bias, (double)p->momentum,
      running_mean ? running_mean->data : NULL,
      running_var ? running_var->data : NULL, (double)p->eps,
      save_mean->data, buf[2]));
  CU_TRY(gf_cuk_bn_var(s->stream, buf[2], p->eps, save_var->data, C));
  return GF_OK;
}

gf_status gf_cuda_bn_fwd_infer(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *gamma, const gf_tensor *beta,
                               const gf_tensor *running_mean,
                               const gf_tensor *running_var, float eps,
                               gf_tensor *y, gf_err *err) {
  CU_ENTER();
  gf_cuda_state *s = gf_cu(ctx);
  int64_t C = 0;
  GF_TRY(bn_descs(ctx, x, &C, err));
  size_t cb = (size_t)C * sizeof(float);
  size_t sizes[2] = {gamma ? 0 : cb, gamma ? 0 : cb};
  void *buf[2] = {0};
  GF_TRY(carve(ctx, sizes, 2, buf, err));
  const void *scale = gamma ? gamma->data : buf[0];
  const void *bias = gamma ? beta->data : buf[1];
  if (!gamma) {
    CU_TRY(gf_cuk_fill(s->stream, buf[0], 1.0f, C));
    CU_TRY(gf_cuk_fill(s->stream, buf[1], 0.0f, C));
  }
  const float one = 1.0f, zero = 0.0f;
  DNN_TRY(cudnnBatchNormalizationForwardInference(
      s->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, s->xd, x->data, s->xd,
      y->data, s->bd, scale, bias, running_mean->data, running_var->data,
      (double)eps));
  return GF_OK;
}

gf_status gf_cuda_bn_bwd(gf_ctx *ctx, const gf_tensor *x,
                         const gf_tensor *gamma, const gf_tensor *save_mean,
                         const gf_tensor *save_var, float eps,
                         const gf_tensor *dy, gf_tensor *dx,
                         gf_tensor *dgamma, gf_tensor *dbeta, gf_accum accum,
                         gf_err *err) {
  CU_ENTER();
  gf_cuda_state *s = gf_cu(ctx);
  int64_t C = 0;
  GF_TRY(bn_descs(ctx, x, &C, err));
  size_t cb = (size_t)C * sizeof(float);
  size_t sizes[5] = {gamma ? 0 : cb, cb, dgamma ? 0 : cb, dbeta ? 0 : cb,
                     dx ? 0 : gf_tensor_nbytes(x)};
  void *buf[5] = {0};
  GF_TRY(carve(ctx, sizes, 5, buf, err));
  if (!gamma) CU_TRY(gf_cuk_fill(s->stream, buf[0], 1.0f, C));
  CU_TRY(gf_cuk_bn_invstd(s->stream, save_var->data, eps, buf[1], C));
  const float one = 1.0f, zero = 0.0f;
  const float *beta_p = accum == GF_ACCUMULATE ? &one : &zero;
  DNN_TRY(cudnnBatchNormalizationBackward(
      s->dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, beta_p, s->xd,
      x->data, s->xd, dy->data, s->xd, dx ? dx->data : buf[4], s->bd,
      gamma ? gamma->data : buf[0], dgamma ? dgamma->data : buf[2],
      dbeta ? dbeta->data : buf[3], (double)eps, save_mean->data, buf[1]));
  return GF_OK;
}

/* Not cuDNN: its backward recomputes the sums from the local batch, where
 * sync BN has them reduced over ranks. The per-channel coefficients (3 C
 * floats) live in the ctx workspace until the kernel has read them: the
 * workspace is only reused by later ops on the same stream. */
gf_status gf_cuda_bn_bwd_dx(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *gamma, const gf_tensor *mean,
                            const gf_tensor *var, float eps,
                            const gf_tensor *dy, const gf_tensor *sum_dy,
                            const gf_tensor *sum_dy_xhat, double count,
                            gf_tensor *dx, gf_err *err) {
  CU_ENTER();
  gf_cuda_state *s = gf_cu(ctx);
  int64_t N = x->shape[0], C = x->shape[1];
  int64_t S = x->ndim == 4 ? x->shape[2] * x->shape[3] : 1;
  if (N * C * S == 0) return GF_OK;
  size_t sizes[1] = {3 * (size_t)C * sizeof(float)};
  void *buf[1] = {0};
  GF_TRY(carve(ctx, sizes, 1, buf, err));
  CU_TRY(gf_cuk_bn_bwd_dx(s->stream, x->data, dy->data,
                          gamma ? gamma->data : NULL, mean->data, var->data,
                          sum_dy->data, sum_dy_xhat->data, eps, count, N, C,
                          S, buf[0], dx->data));
  return GF_OK;
}
