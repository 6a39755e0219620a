/* sg2_layers_bwd.c - the backward of the StyleGAN2 layers of
 * sg2_layers.c, over the kernel ops, from what their forward kept. The
 * equalized learning rate's gains come back as PyTorch's autograd applies
 * them: dL/dweight = dL/d(scaled weight) * gain, one f32 rounding. */
#include <math.h>
#include <string.h>

#include "sg2_internal.h"

#define SQRT2 1.41421356237309504880f

gf_status sg2_scale_into(gf_ctx *ctx, gf_tensor *src, float gain,
                         gf_tensor *dst, gf_accum accum, gf_err *err) {
  const int64_t s2[2] = {1, gf_tensor_numel(dst)};
  gf_tensor s = sg2_as(src, 2, s2), d = sg2_as(dst, 2, s2);
  if (accum == GF_OVERWRITE) {
    if (gain == 1.0f) return gf_copy(ctx, &s, &d, err);
    return gf_bias_act_fwd(ctx, &s, NULL, GF_BIAS_ACT_LINEAR, 0.0f, gain,
                           -1.0f, &d, err);
  }
  if (gain != 1.0f)
    GF_TRY(gf_bias_act_fwd(ctx, &s, NULL, GF_BIAS_ACT_LINEAR, 0.0f, gain,
                           -1.0f, &s, err));
  return gf_add(ctx, &d, &s, &d, err);
}

gf_status sg2_fc_bwd(gf_sg2_net *net, gf_ctx *ctx, sg2_fc *l,
                     const gf_tensor *x, int64_t n, gf_tensor *dx,
                     gf_accum accum, gf_err *err) {
  gf_tensor dy = sg2_rows(&l->dy, n), y = sg2_rows(&l->y, n);
  const int64_t b1[1] = {l->out};
  gf_tensor dbs = sg2_as(&l->dbs, 1, b1);
  if (net->impl->no_pgrads) {
    if (l->act != GF_BIAS_ACT_LINEAR)
      GF_TRY(gf_bias_act_bwd(ctx, &y, l->act, GF_SG2_LRELU_ALPHA, l->act_gain,
                             -1.0f, &dy, &dy, NULL, GF_OVERWRITE, err));
    if (!dx) return GF_OK;
    return gf_linear_bwd(ctx, x, &l->ws, &dy, dx, NULL, NULL, GF_OVERWRITE,
                         err);
  }
  if (l->act != GF_BIAS_ACT_LINEAR) {
    GF_TRY(gf_bias_act_bwd(ctx, &y, l->act, GF_SG2_LRELU_ALPHA, l->act_gain,
                           -1.0f, &dy, &dy, &dbs, GF_OVERWRITE, err));
    GF_TRY(gf_linear_bwd(ctx, x, &l->ws, &dy, dx, &l->dws, NULL,
                         GF_OVERWRITE, err));
  } else {
    GF_TRY(gf_linear_bwd(ctx, x, &l->ws, &dy, dx, &l->dws, &dbs, GF_OVERWRITE,
                         err));
  }
  gf_param *w = &net->tensors[l->w], *b = &net->tensors[l->b];
  GF_TRY(sg2_scale_into(ctx, &l->dws, l->wgain, &w->grad, accum, err));
  return sg2_scale_into(ctx, &dbs, l->bgain, &b->grad, accum, err);
}

gf_status sg2_conv_bwd(gf_sg2_net *net, gf_ctx *ctx, sg2_conv *l,
                       const gf_tensor *x, int64_t n, gf_tensor *dx,
                       gf_accum accum, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  gf_tensor dy = sg2_rows(&l->dy, n), y = sg2_rows(&l->y, n);
  bool pg = !im->no_pgrads;
  gf_tensor *db = l->b >= 0 && pg ? &net->tensors[l->b].grad : NULL;
  GF_TRY(gf_bias_act_bwd(ctx, &y, l->act, GF_SG2_LRELU_ALPHA, l->act_gain,
                         l->clamp, &dy, &dy, db, accum, err));
  gf_conv_params cp = {{1, 1}, {l->k / 2, l->k / 2}, {0, 0}};
  gf_fir_params fp = {{1, 1}, {1, 1}, {2, 2, 2, 2}, 0, 1.0f};
  const gf_tensor *in = x;
  gf_tensor xf = sg2_rows(&l->xf, n), dxf = sg2_rows(&l->dxf, n);
  gf_tensor *dconv = dx;
  if (l->down == 2) {
    if (l->k == 1) fp = (gf_fir_params){{1, 1}, {2, 2}, {1, 1, 1, 1}, 0, 1.0f};
    else cp.stride[0] = cp.stride[1] = 2;
    cp.pad[0] = cp.pad[1] = 0;
    in = &xf;
    dconv = dx ? &dxf : NULL;
  }
  if (pg || dconv)
    GF_TRY(gf_conv2d_bwd(ctx, in, &l->ws, &dy, &cp, dconv,
                         pg ? &l->dws : NULL, NULL, GF_OVERWRITE, err));
  if (l->down == 2 && dx)
    GF_TRY(gf_upfirdn2d_bwd(ctx, &im->filt, &fp, &dxf, dx, err));
  if (!pg) return GF_OK;
  return sg2_scale_into(ctx, &l->dws, l->wgain, &net->tensors[l->w].grad, accum,
                    err);
}

gf_status sg2_norm_bwd(gf_ctx *ctx, sg2_norm *l, const gf_tensor *x,
                       const gf_tensor *dy, int64_t n, gf_tensor *dx,
                       gf_err *err) {
  /* y = x d(x) = sqrt(D) wmod: the modulation op's backward from
   * dL/dwmod = dL/dy sqrt(D) */
  gf_tensor g = sg2_rows(&l->g, n), dcoef = sg2_rows(&l->dcoef, n);
  gf_tensor g2 = sg2_as(&g, 2, dy->shape);
  GF_TRY(gf_bias_act_fwd(ctx, dy, NULL, GF_BIAS_ACT_LINEAR, 0.0f,
                         (float)sqrt((double)l->d), -1.0f, &g2, err));
  return gf_modconv_weight_bwd(ctx, &l->wc, x, 1, GF_SG2_DEMOD_EPS, &dcoef,
                               &g, NULL, dx, GF_OVERWRITE, err);
}

gf_status sg2_flip_into(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                        const gf_tensor *dwf, gf_accum accum, gf_err *err) {
  const int64_t s2[2] = {l->cout * l->cin, 9};
  gf_tensor f2 = sg2_as(dwf, 2, s2), b2 = sg2_as(&l->dwback, 2, s2);
  GF_TRY(gf_linear_fwd(ctx, &f2, &net->impl->perm, NULL, &b2, err));
  return sg2_scale_into(ctx, &l->dwback, 1.0f, &net->tensors[l->w].grad,
                        accum, err);
}

gf_status sg2_slayer_bwd(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                         const gf_tensor *x, int64_t n, gf_tensor *dx,
                         gf_tensor *dws, gf_accum accum, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  gf_tensor dy = sg2_rows(&l->dy, n), y = sg2_rows(&l->y, n);
  bool pg = !im->no_pgrads;
  GF_TRY(gf_bias_act_bwd(ctx, &y,
                         l->torgb ? GF_BIAS_ACT_LINEAR : GF_BIAS_ACT_LRELU,
                         GF_SG2_LRELU_ALPHA, l->torgb ? 1.0f : SQRT2,
                         l->clamp, &dy, &dy,
                         pg ? &net->tensors[l->b].grad : NULL, accum, err));
  if (l->noise_used && pg) {
    gf_tensor nz = sg2_rows(&l->noise, n);
    GF_TRY(gf_noise_add_bwd(ctx, &nz, &dy, &dy,
                            &net->tensors[l->noise_strength].grad, accum,
                            err));
  }
  gf_tensor wmod = sg2_rows(&l->wmod, n * l->cout),
            dwmod = sg2_rows(&l->dwmod, n * l->cout);
  gf_conv_params cp = {{1, 1}, {l->k / 2, l->k / 2}, {0, 0}};
  if (l->up == 2) {
    gf_tensor xu = sg2_rows(&l->xu, n), dxu = sg2_rows(&l->dxu, n);
    cp.pad[0] = cp.pad[1] = 0;
    GF_TRY(gf_conv2d_batched_bwd(ctx, &xu, &wmod, &dy, &cp, dx ? &dxu : NULL,
                                 &dwmod, err));
    gf_fir_params fp = {{2, 2}, {1, 1}, {3, 2, 3, 2}, 0, 4.0f};
    if (dx) GF_TRY(gf_upfirdn2d_bwd(ctx, &im->filt, &fp, &dxu, dx, err));
  } else {
    GF_TRY(gf_conv2d_batched_bwd(ctx, x, &wmod, &dy, &cp, dx, &dwmod, err));
  }
  gf_tensor styles = sg2_rows(&l->affine.y, n),
            dstyles = sg2_rows(&l->affine.dy, n),
            dcoef = sg2_rows(&l->dcoef, n);
  gf_tensor *gw = pg ? &net->tensors[l->w].grad : NULL;
  if (l->up == 2) {
    GF_TRY(gf_modconv_weight_bwd(ctx, &l->wf, &styles, 1, GF_SG2_DEMOD_EPS,
                                 &dcoef, &dwmod, pg ? &l->dwf : NULL,
                                 &dstyles, GF_OVERWRITE, err));
    /* the flip is its own inverse */
    if (pg) GF_TRY(sg2_flip_into(net, ctx, l, &l->dwf, accum, err));
  } else {
    GF_TRY(gf_modconv_weight_bwd(ctx, sg2_val(net, l->w), &styles,
                                 !l->torgb, GF_SG2_DEMOD_EPS,
                                 l->torgb ? NULL : &dcoef, &dwmod, gw,
                                 &dstyles, accum, err));
  }
  if (l->torgb)
    GF_TRY(gf_bias_act_fwd(ctx, &dstyles, NULL, GF_BIAS_ACT_LINEAR, 0.0f,
                           (float)(1.0 / sqrt((double)l->cin)), -1.0f,
                           &dstyles, err));
  gf_tensor wrow = sg2_rows(&l->wrow, n), dwrow = sg2_rows(&l->dwrow, n);
  GF_TRY(sg2_fc_bwd(net, ctx, &l->affine, &wrow, n, &dwrow, accum, err));
  return sg2_ws_row(net, ctx, l, dws, &dwrow, n, true, err);
}
