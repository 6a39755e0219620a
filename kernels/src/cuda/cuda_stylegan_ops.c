/* cuda_stylegan_ops.c - the CUDA backend's StyleGAN2 layers (bias +
 * activation + gain + clamp, minibatch standard deviation, noise
 * injection): launches of the kernels in cuda_stylegan_ops.cu on the ctx's
 * stream. No synchronization and no device-to-host copy (noise's strength
 * is read by the kernel); the plane sums' scratch (N C doubles) is the
 * ctx's workspace (gf_cuda_ws), valid for the op's own queued launches.
 * ops.c checked the shapes, the parameters and the overlaps. */
#include "cuda_stylegan_ops.h"
#include "cuda_backend.h"

/* [N, C, S] of an [N,C] or [N,C,H,W] tensor. */
static void ncs_of(const gf_tensor *t, int64_t *N, int64_t *C, int64_t *S) {
  *N = t->shape[0];
  *C = t->shape[1];
  *S = t->ndim == 4 ? t->shape[2] * t->shape[3] : 1;
}

gf_status gf_cuda_bias_act_fwd(gf_ctx *ctx, const gf_tensor *x,
                               const gf_tensor *b, int act, float alpha,
                               float gain, float clamp, gf_tensor *y,
                               gf_err *err) {
  CU_ENTER();
  int64_t N, C, S;
  ncs_of(x, &N, &C, &S);
  CU_TRY(gf_cuk_bias_act_fwd(gf_cu(ctx)->stream, x->data, b ? b->data : NULL,
                             y->data, N * C, C, S, act == GF_BIAS_ACT_LRELU,
                             alpha, gain, clamp));
  return GF_OK;
}

gf_status gf_cuda_bias_act_bwd(gf_ctx *ctx, const gf_tensor *y, int act,
                               float alpha, float gain, float clamp,
                               const gf_tensor *dy, gf_tensor *dx,
                               gf_tensor *db, gf_accum accum, gf_err *err) {
  CU_ENTER();
  int64_t N, C, S;
  ncs_of(y, &N, &C, &S);
  void *scratch = NULL;
  if (db)
    GF_TRY(gf_cuda_ws(ctx, (size_t)(N * C) * sizeof(double), &scratch, err));
  CU_TRY(gf_cuk_bias_act_bwd(gf_cu(ctx)->stream, y->data, dy->data,
                             dx ? dx->data : NULL, db ? db->data : NULL,
                             scratch, N, C, S, act == GF_BIAS_ACT_LRELU, alpha,
                             gain, clamp, accum == GF_ACCUMULATE));
  return GF_OK;
}

/* G = min(group_size, N), as ops.c checked it. */
static int64_t group_of(const gf_tensor *x, int group_size) {
  return group_size < x->shape[0] ? group_size : x->shape[0];
}

gf_status gf_cuda_mbstd_fwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                            int num_channels, gf_tensor *y, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_mbstd_fwd(gf_cu(ctx)->stream, x->data, y->data, x->shape[0],
                          x->shape[1], x->shape[2] * x->shape[3],
                          group_of(x, group_size), num_channels));
  return GF_OK;
}

gf_status gf_cuda_mbstd_bwd(gf_ctx *ctx, const gf_tensor *x, int group_size,
                            int num_channels, const gf_tensor *dy,
                            gf_tensor *dx, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_mbstd_bwd(gf_cu(ctx)->stream, x->data, dy->data, dx->data,
                          x->shape[0], x->shape[1], x->shape[2] * x->shape[3],
                          group_of(x, group_size), num_channels));
  return GF_OK;
}

gf_status gf_cuda_mbstd_jvp(gf_ctx *ctx, const gf_tensor *x,
                            const gf_tensor *xdot, int group_size,
                            int num_channels, gf_tensor *ydot, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_mbstd_jvp(gf_cu(ctx)->stream, x->data, xdot->data, ydot->data,
                          x->shape[0], x->shape[1], x->shape[2] * x->shape[3],
                          group_of(x, group_size), num_channels));
  return GF_OK;
}

gf_status gf_cuda_mbstd_bwd_jvp(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *xdot, int group_size,
                                int num_channels, const gf_tensor *dy,
                                const gf_tensor *dydot, gf_tensor *dxdot,
                                gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_mbstd_bwd_jvp(gf_cu(ctx)->stream, x->data, xdot->data,
                              dy->data, dydot->data, dxdot->data, x->shape[0],
                              x->shape[1], x->shape[2] * x->shape[3],
                              group_of(x, group_size), num_channels));
  return GF_OK;
}

gf_status gf_cuda_noise_add_fwd(gf_ctx *ctx, const gf_tensor *x,
                                const gf_tensor *noise,
                                const gf_tensor *strength, gf_tensor *y,
                                gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_noise_add_fwd(gf_cu(ctx)->stream, x->data, noise->data,
                              strength->data, y->data, x->shape[0], x->shape[1],
                              x->shape[2] * x->shape[3]));
  return GF_OK;
}

gf_status gf_cuda_noise_add_bwd(gf_ctx *ctx, const gf_tensor *noise,
                                const gf_tensor *dy, gf_tensor *dx,
                                gf_tensor *dstrength, gf_accum accum,
                                gf_err *err) {
  CU_ENTER();
  if (dstrength) {
    int64_t N = dy->shape[0], C = dy->shape[1];
    void *scratch = NULL;
    GF_TRY(gf_cuda_ws(ctx, (size_t)(N * C) * sizeof(double), &scratch, err));
    CU_TRY(gf_cuk_noise_strength_grad(gf_cu(ctx)->stream, dy->data, noise->data,
                                      dstrength->data, scratch, N, C,
                                      dy->shape[2] * dy->shape[3],
                                      accum == GF_ACCUMULATE));
  }
  if (dx && dx->data != dy->data) return gf_cuda_copy(ctx, dy, dx, err);
  return GF_OK;
}
