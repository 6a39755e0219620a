/* cuda_resample.c - the CUDA backend's residual-network ops (nearest 2x
 * upsampling and its gradient, the average-pooling gradient over
 * non-overlapping windows, the element-wise add): launches of the kernels
 * in cuda_resample.cu on the ctx's stream. No synchronization, no scratch;
 * ops.c checked the shapes, the windows and the overlaps. */
#include "cuda_resample.h"
#include "cuda_backend.h"

/* N C of an NCHW tensor. */
static int64_t planes_of(const gf_tensor *t) {
  return t->shape[0] * t->shape[1];
}

gf_status gf_cuda_upsample_nearest2x_fwd(gf_ctx *ctx, const gf_tensor *x,
                                         gf_tensor *y, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_upsample_nearest2x_fwd(gf_cu(ctx)->stream, x->data, y->data,
                                       planes_of(x), x->shape[2], x->shape[3]));
  return GF_OK;
}

gf_status gf_cuda_upsample_nearest2x_bwd(gf_ctx *ctx, const gf_tensor *dy,
                                         gf_tensor *dx, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_upsample_nearest2x_bwd(gf_cu(ctx)->stream, dy->data, dx->data,
                                       planes_of(dx), dx->shape[2],
                                       dx->shape[3]));
  return GF_OK;
}

gf_status gf_cuda_avgpool2d_bwd(gf_ctx *ctx, const gf_tensor *dy,
                                const gf_pool_params *p, gf_tensor *dx,
                                gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_avgpool2d_bwd(gf_cu(ctx)->stream, dy->data, dx->data,
                              planes_of(dy), dy->shape[2], dy->shape[3],
                              p->kernel[0], p->kernel[1]));
  return GF_OK;
}

gf_status gf_cuda_add(gf_ctx *ctx, const gf_tensor *a, const gf_tensor *b,
                      gf_tensor *y, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_add(gf_cu(ctx)->stream, a->data, b->data, y->data,
                    gf_tensor_numel(y)));
  return GF_OK;
}
