/* cuda_gan.c - the CUDA backend's GAN ops (hinge loss, mean, lerp,
 * spectral normalization): host-side scalars and scratch, and launches of
 * the kernels in cuda_gan_ops.cu on the ctx's stream. No synchronization
 * and no device-to-host copy: sigma stays on the device, where w / sigma
 * and the backward read it. Scratch comes from the ctx workspace
 * (gf_cuda_ws), valid for the op's own queued launches. */
#include "cuda_backend.h"

gf_status gf_cuda_hinge_fwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                            gf_tensor *loss, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_hinge_mean_fwd(gf_cu(ctx)->stream, x->data, gf_tensor_numel(x),
                               1, sign, loss->data));
  return GF_OK;
}

gf_status gf_cuda_hinge_bwd(gf_ctx *ctx, const gf_tensor *x, float sign,
                            float dloss, gf_tensor *dx, gf_err *err) {
  CU_ENTER();
  int64_t n = gf_tensor_numel(x);
  float g = (float)((double)dloss / (double)n); /* as the CPU backend */
  CU_TRY(gf_cuk_hinge_bwd(gf_cu(ctx)->stream, x->data, sign, g, dx->data, n));
  return GF_OK;
}

gf_status gf_cuda_mean_fwd(gf_ctx *ctx, const gf_tensor *x, gf_tensor *loss,
                           gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_hinge_mean_fwd(gf_cu(ctx)->stream, x->data, gf_tensor_numel(x),
                               0, 0.0f, loss->data));
  return GF_OK;
}

gf_status gf_cuda_lerp(gf_ctx *ctx, gf_tensor *avg, const gf_tensor *x, float w,
                       gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_lerp(gf_cu(ctx)->stream, avg->data, x->data, w,
                     gf_tensor_numel(avg)));
  return GF_OK;
}

gf_status gf_cuda_spectral_norm_fwd(gf_ctx *ctx, const gf_tensor *w,
                                    gf_tensor *u, gf_tensor *v, int n_iter,
                                    float eps, gf_tensor *sigma,
                                    gf_tensor *w_sn, gf_err *err) {
  CU_ENTER();
  int64_t R = w->shape[0], K = gf_tensor_numel(w) / R;
  void *scratch = NULL;
  GF_TRY(gf_cuda_ws(ctx, gf_cuk_sn_fwd_scratch(R, K), &scratch, err));
  CU_TRY(gf_cuk_sn_fwd(gf_cu(ctx)->stream, w->data, u->data, v->data, R, K,
                       n_iter, eps, sigma->data, w_sn->data, scratch));
  return GF_OK;
}

gf_status gf_cuda_spectral_norm_bwd(gf_ctx *ctx, const gf_tensor *w,
                                    const gf_tensor *u, const gf_tensor *v,
                                    const gf_tensor *sigma,
                                    const gf_tensor *dw_sn, gf_tensor *dw,
                                    gf_accum accum, gf_err *err) {
  CU_ENTER();
  int64_t R = w->shape[0], K = gf_tensor_numel(w) / R;
  void *scratch = NULL;
  GF_TRY(gf_cuda_ws(ctx, gf_cuk_sn_bwd_scratch(R), &scratch, err));
  CU_TRY(gf_cuk_sn_bwd(gf_cu(ctx)->stream, w->data, u->data, v->data,
                       sigma->data, dw_sn->data, dw->data, R, K,
                       accum == GF_ACCUMULATE, scratch));
  return GF_OK;
}
