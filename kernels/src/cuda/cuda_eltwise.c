/* cuda_eltwise.c - the CUDA backend's element-wise ops, loss and optimizer:
 * host-side scalars and launches of the kernels in cuda_kernels.cu on the
 * ctx's stream. No synchronization: results are ready for the next op on
 * the same stream, and for the host after gf_ctx_sync / gf_tensor_copy. */
#include <math.h>

#include "cuda_backend.h"

gf_status gf_cuda_act_fwd(gf_ctx *ctx, int kind, float alpha,
                          const gf_tensor *x, gf_tensor *y, gf_err *err) {
  if (kind < GF_ACT_RELU || kind > GF_ACT_SIGMOID)
    return gf_fail(err, GF_EINVAL, "cuda: unknown activation %d", kind);
  CU_ENTER();
  CU_TRY(gf_cuk_act_fwd(gf_cu(ctx)->stream, kind, alpha, x->data, y->data,
                        gf_tensor_numel(x)));
  return GF_OK;
}

gf_status gf_cuda_act_bwd(gf_ctx *ctx, int kind, float alpha,
                          const gf_tensor *in, const gf_tensor *dy,
                          gf_tensor *dx, gf_err *err) {
  if (kind < GF_ACT_RELU || kind > GF_ACT_SIGMOID)
    return gf_fail(err, GF_EINVAL, "cuda: unknown activation %d", kind);
  CU_ENTER();
  CU_TRY(gf_cuk_act_bwd(gf_cu(ctx)->stream, kind, alpha, in->data, dy->data,
                        dx->data, gf_tensor_numel(in)));
  return GF_OK;
}

gf_status gf_cuda_dropout(gf_ctx *ctx, const gf_tensor *x, float p,
                          const gf_philox_stream *s, gf_tensor *y,
                          gf_err *err) {
  CU_ENTER();
  cudaStream_t st = gf_cu(ctx)->stream;
  int64_t n = gf_tensor_numel(x);
  if (p >= 1.0f) {
    CU_TRY(cudaMemsetAsync(y->data, 0, (size_t)n * sizeof(float), st));
    return GF_OK;
  }
  float scale = (float)(1.0 / (1.0 - (double)p)); /* as the CPU backend */
  CU_TRY(gf_cuk_dropout(st, x->data, y->data, n, p, scale, s->key, s->ctr_hi,
                        s->offset));
  return GF_OK;
}

gf_status gf_cuda_bce_fwd(gf_ctx *ctx, const gf_tensor *x,
                          const gf_tensor *t, gf_tensor *loss, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_bce_fwd(gf_cu(ctx)->stream, x->data, t->data,
                        gf_tensor_numel(x), loss->data));
  return GF_OK;
}

gf_status gf_cuda_bce_bwd(gf_ctx *ctx, const gf_tensor *x,
                          const gf_tensor *t, float dloss, gf_tensor *dx,
                          gf_err *err) {
  CU_ENTER();
  int64_t n = gf_tensor_numel(x);
  float scale = (float)((double)dloss / (double)n);
  CU_TRY(gf_cuk_bce_bwd(gf_cu(ctx)->stream, x->data, t->data, scale,
                        dx->data, n));
  return GF_OK;
}

gf_status gf_cuda_adam(gf_ctx *ctx, const gf_adam_params *p, int64_t step,
                       gf_tensor *param, const gf_tensor *grad, gf_tensor *m,
                       gf_tensor *v, gf_err *err) {
  CU_ENTER();
  /* Scalars as torch.optim.Adam forms them (double, rounded once). */
  double bc1 = 1.0 - pow(p->beta1, (double)step);
  double bc2 = 1.0 - pow(p->beta2, (double)step);
  gf_cuk_adam_args a = {
      .b1 = (float)p->beta1,
      .b2 = (float)p->beta2,
      .omb1 = (float)(1.0 - p->beta1),
      .omb2 = (float)(1.0 - p->beta2),
      .step_size = (float)(p->lr / bc1),
      .bc2_sqrt = (float)sqrt(bc2),
      .eps = (float)p->eps,
      .wd = (float)p->weight_decay,
  };
  CU_TRY(gf_cuk_adam(gf_cu(ctx)->stream, &a, param->data, grad->data,
                     m->data, v->data, gf_tensor_numel(param)));
  return GF_OK;
}

gf_status gf_cuda_fill(gf_ctx *ctx, gf_tensor *t, float value, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_fill(gf_cu(ctx)->stream, t->data, value,
                     gf_tensor_numel(t)));
  return GF_OK;
}

gf_status gf_cuda_copy(gf_ctx *ctx, const gf_tensor *src, gf_tensor *dst,
                       gf_err *err) {
  CU_ENTER();
  size_t nb = gf_tensor_nbytes(src);
  if (src->data == dst->data || nb == 0) return GF_OK;
  CU_TRY(cudaMemcpyAsync(dst->data, src->data, nb, cudaMemcpyDeviceToDevice,
                         gf_cu(ctx)->stream));
  return GF_OK;
}
