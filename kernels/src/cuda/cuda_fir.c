/* cuda_fir.c - the CUDA backend's FIR resampling (upfirdn2d): one launch of
 * the kernel in cuda_fir.cu on the ctx's stream, for the forward and (with
 * the parameters ops.c derives) the backward. No synchronization, no
 * scratch; ops.c checked the shapes, the parameters and the overlaps. */
#include "cuda_fir.h"
#include "cuda_backend.h"

gf_status gf_cuda_upfirdn2d(gf_ctx *ctx, const gf_tensor *x, const gf_tensor *f,
                            const gf_fir_params *p, gf_tensor *y, gf_err *err) {
  CU_ENTER();
  gf_cuk_fir g = {
      .planes = x->shape[0] * x->shape[1],
      .H = x->shape[2],
      .W = x->shape[3],
      .OH = y->shape[2],
      .OW = y->shape[3],
      .fh = (int)f->shape[0],
      .fw = (int)f->shape[1],
      .up = {p->up[0], p->up[1]},
      .down = {p->down[0], p->down[1]},
      .pad = {p->pad[0], p->pad[1], p->pad[2], p->pad[3]},
      .flip = p->flip,
      .gain = p->gain,
  };
  CU_TRY(gf_cuk_upfirdn2d(gf_cu(ctx)->stream, x->data, f->data, y->data, g));
  return GF_OK;
}
