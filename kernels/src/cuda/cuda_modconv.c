/* cuda_modconv.c - the CUDA backend's weight ops of the modulated
 * convolution (ops.h): launches of the kernels in cuda_modconv.cu on the
 * ctx's stream. The backward keeps the gradient wrt the modulated weights
 * before demodulation (gws, [N Cout, K]) in the ctx's workspace; without
 * demodulation that gradient is dwmod itself. No synchronization. The
 * batched convolution is cuDNN's (cuda_conv.c). */
#include "cuda_modconv.h"
#include "cuda_backend.h"

gf_status gf_cuda_modconv_weight_fwd(gf_ctx *ctx, const gf_tensor *w,
                                     const gf_tensor *s, int demodulate,
                                     float eps, gf_tensor *wmod,
                                     gf_tensor *dcoef, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_modconv_weight_fwd(gf_cu(ctx)->stream, w->data, s->data,
                                   wmod->data, dcoef ? dcoef->data : NULL,
                                   s->shape[0], w->shape[0], w->shape[1],
                                   w->shape[2] * w->shape[3], demodulate, eps));
  return GF_OK;
}

gf_status gf_cuda_modconv_weight_bwd(gf_ctx *ctx, const gf_tensor *w,
                                     const gf_tensor *s, int demodulate,
                                     float eps, const gf_tensor *dcoef,
                                     const gf_tensor *dwmod, gf_tensor *dw,
                                     gf_tensor *ds, gf_accum accum,
                                     gf_err *err) {
  (void)eps; /* d comes from dcoef */
  CU_ENTER();
  cudaStream_t st = gf_cu(ctx)->stream;
  int64_t N = s->shape[0], Cout = w->shape[0], Cin = w->shape[1];
  int64_t khw = w->shape[2] * w->shape[3];
  const float *gws = dwmod->data;
  if (demodulate && N > 0) {
    void *buf = NULL;
    GF_TRY(gf_cuda_ws(ctx, gf_tensor_nbytes(dwmod), &buf, err));
    CU_TRY(gf_cuk_modconv_ws_grad(st, w->data, s->data, dcoef->data,
                                  dwmod->data, buf, N, Cout, Cin, khw));
    gws = buf;
  }
  CU_TRY(gf_cuk_modconv_weight_grads(st, w->data, s->data, gws,
                                     dw ? dw->data : NULL, ds ? ds->data : NULL,
                                     N, Cout, Cin, khw,
                                     accum == GF_ACCUMULATE));
  return GF_OK;
}

gf_status gf_cuda_modconv_demod_jvp(gf_ctx *ctx, const gf_tensor *w,
                                    const gf_tensor *s, const gf_tensor *sdot,
                                    const gf_tensor *dcoef, const gf_tensor *g,
                                    const gf_tensor *gdot, gf_tensor *wmoddot,
                                    gf_tensor *gws, gf_tensor *gwsdot,
                                    gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_modconv_demod_jvp(
      gf_cu(ctx)->stream, w->data, s->data, sdot->data, dcoef->data,
      gws ? g->data : NULL, gws ? gdot->data : NULL,
      wmoddot ? wmoddot->data : NULL, gws ? gws->data : NULL,
      gws ? gwsdot->data : NULL, s->shape[0], w->shape[0], w->shape[1],
      w->shape[2] * w->shape[3]));
  return GF_OK;
}
