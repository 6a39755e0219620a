/* cuda_augment.c - the CUDA backend's DiffAugment (gf_augment_fwd / _bwd):
 * the call's shape and policy, scratch from the ctx workspace (gf_cuda_ws,
 * valid for the op's own queued launches) and the launches of
 * cuda_augment.cu on the ctx's stream. The params stay on the device,
 * where the kernels read them: no synchronization, no host copy. */
#include "cuda_augment.h"
#include "cuda_backend.h"

static gf_cuk_aug_args aug_args(const gf_tensor *t, unsigned policy) {
  gf_cuk_aug_args a = {
      .N = t->shape[0],
      .C = t->shape[1],
      .H = t->shape[2],
      .W = t->shape[3],
      .S0 = gf_augment_cutout_size(t->shape[2]),
      .S1 = gf_augment_cutout_size(t->shape[3]),
      .color = (policy & GF_AUG_COLOR) != 0,
      .trans = (policy & GF_AUG_TRANSLATION) != 0,
      .cut = (policy & GF_AUG_CUTOUT) != 0,
  };
  return a;
}

gf_status gf_cuda_augment_fwd(gf_ctx *ctx, const gf_tensor *x,
                              const gf_tensor *params, unsigned policy,
                              gf_tensor *y, gf_err *err) {
  CU_ENTER();
  gf_cuk_aug_args a = aug_args(x, policy);
  size_t bytes = gf_cuk_augment_scratch(&a, 0, x->data == y->data);
  void *scratch = NULL;
  if (bytes) GF_TRY(gf_cuda_ws(ctx, bytes, &scratch, err));
  CU_TRY(gf_cuk_augment_fwd(gf_cu(ctx)->stream, &a, x->data, params->data,
                            y->data, scratch));
  return GF_OK;
}

gf_status gf_cuda_augment_bwd(gf_ctx *ctx, const gf_tensor *params,
                              unsigned policy, const gf_tensor *dy,
                              gf_tensor *dx, gf_err *err) {
  CU_ENTER();
  gf_cuk_aug_args a = aug_args(dy, policy);
  size_t bytes = gf_cuk_augment_scratch(&a, 1, dy->data == dx->data);
  void *scratch = NULL;
  if (bytes) GF_TRY(gf_cuda_ws(ctx, bytes, &scratch, err));
  CU_TRY(gf_cuk_augment_bwd(gf_cu(ctx)->stream, &a, params->data, dy->data,
                            dx->data, scratch));
  return GF_OK;
}
