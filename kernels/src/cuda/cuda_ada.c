/* cuda_ada.c - the CUDA backend's ADA resampling ops: one launch each of
 * the kernels in cuda_ada.cu on the ctx's stream. No synchronization, no
 * scratch; ops.c checked the shapes, pads and overlaps. */
#include "cuda_ada.h"
#include "cuda_backend.h"

/* The geometry of in (x or dx, [N,C,H,W]) and out (y or dy). */
static gf_cuk_ada geom(const gf_tensor *in, const gf_tensor *out,
                       const int pad[4]) {
  gf_cuk_ada g = {
      .planes = in->shape[0] * in->shape[1],
      .C = in->shape[1],
      .H = in->shape[2],
      .W = in->shape[3],
      .OH = out->shape[2],
      .OW = out->shape[3],
      .pad = {0, 0, 0, 0},
  };
  if (pad)
    for (int k = 0; k < 4; k++) g.pad[k] = pad[k];
  return g;
}

gf_status gf_cuda_pad_reflect_fwd(gf_ctx *ctx, const gf_tensor *x,
                                  const int pad[4], gf_tensor *y,
                                  gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_pad_reflect_fwd(gf_cu(ctx)->stream, x->data, y->data,
                                geom(x, y, pad)));
  return GF_OK;
}

gf_status gf_cuda_pad_reflect_bwd(gf_ctx *ctx, const int pad[4],
                                  const gf_tensor *dy, gf_tensor *dx,
                                  gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_pad_reflect_bwd(gf_cu(ctx)->stream, dy->data, dx->data,
                                geom(dx, dy, pad)));
  return GF_OK;
}

gf_status gf_cuda_affine_sample_fwd(gf_ctx *ctx, const gf_tensor *x,
                                    const gf_tensor *theta, gf_tensor *y,
                                    gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_affine_sample_fwd(gf_cu(ctx)->stream, x->data, theta->data,
                                  y->data, geom(x, y, NULL)));
  return GF_OK;
}

gf_status gf_cuda_affine_sample_bwd(gf_ctx *ctx, const gf_tensor *theta,
                                    const gf_tensor *dy, gf_tensor *dx,
                                    gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_affine_sample_bwd(gf_cu(ctx)->stream, theta->data, dy->data,
                                  dx->data, geom(dx, dy, NULL)));
  return GF_OK;
}

gf_status gf_cuda_color4_fwd(gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *m, gf_tensor *y, gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_color4_fwd(gf_cu(ctx)->stream, x->data, m->data, y->data,
                           geom(x, y, NULL)));
  return GF_OK;
}

gf_status gf_cuda_color4_bwd(gf_ctx *ctx, const gf_tensor *m,
                             const gf_tensor *dy, gf_tensor *dx,
                             gf_err *err) {
  CU_ENTER();
  CU_TRY(gf_cuk_color4_bwd(gf_cu(ctx)->stream, m->data, dy->data, dx->data,
                           geom(dy, dx, NULL)));
  return GF_OK;
}
