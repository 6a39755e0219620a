/* sg2_pl.c - StyleGAN2-ADA's path length regulariser of G (gf_sg2_g_pl,
 * gf/sg2_net.h) and its parameter gradients, by forward-over-reverse
 * differentiation over the kernel ops.
 *
 * Notation: L(ws, theta) = sum(img(ws) * pl_noise); the first backward
 * (gf_sg2_synthesis_bwd's, seeded with pl_noise, no parameter gradient)
 * keeps every layer's dL/dpre, dL/dwmod and dL/dstyles and gives pl_grads
 * = dL/dws [n, num_ws, w_dim]. The loss is a function of pl_grads:
 *   len_i = sqrt(mean_j sum_k pl_grads[i, j, k]^2)
 *   m = lerp(pl_mean, mean_i len_i, decay)      (not detached, as the
 *                                                official loss)
 *   loss = scale * mean_i (pl_weight (len_i - m)^2)
 * so with v = dloss/dpl_grads = c_i pl_grads[i] (c_i = dloss/dlen_i /
 * (num_ws len_i)) the gradient wrt any parameter or ws is
 *   d/de grad L(ws + e v)  at e = 0,
 * the directional derivative of the first backward along ws's direction
 * v: a tangent forward and a tangent backward through the synthesis
 * (the seed pl_noise is constant: the tangent of dL/dimg is 0). Per
 * modulated layer (styles = affine(w), wmod = modulate(w, styles) with
 * demodulation, y = act(conv(x, wmod) + noise + b)):
 *   tangent forward   tstyles = affine's linear part (twrow), twmod =
 *                     gf_modconv_demod_jvp (toRGB: w tstyles), ty =
 *                     slope (conv(tx, wmod) + conv(x, twmod))
 *   tangent backward  tdpre = slope tdy (db, dstrength its sums),
 *                     tdx = conv^T(wmod, tdpre) + conv^T(twmod, dpre),
 *                     tdwmod = wgrad(x, tdpre) + wgrad(tx, dpre),
 *                     gws / gwsdot = gf_modconv_demod_jvp, then dw and
 *                     tdstyles as gf_modconv_weight_bwd's sums of them,
 *                     the affine's bilinear weight gradient, tdwrow into
 *                     dloss/dws
 * and the mapping's gradients are gf_sg2_mapping_bwd of dloss/dws. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sg2_internal.h"

#define SQRT2_F 1.41421356237309504880f

/* l->twmod = the tangent of wmod along tstyles (affine.ty): demodulated,
 * gf_modconv_demod_jvp; toRGB, w tstyles. Recomputed by the tangent
 * backward (twmod is shared scratch). */
static gf_status twmod_of(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                          int64_t n, gf_err *err) {
  const gf_tensor *w = l->up == 2 ? &l->wf : sg2_val(net, l->w);
  gf_tensor ts = sg2_rows(&l->affine.ty, n), styles = sg2_rows(&l->affine.y, n),
            twm = sg2_rows(&l->twmod, n * l->cout),
            dcoef = sg2_rows(&l->dcoef, n);
  if (l->torgb)
    return gf_modconv_weight_fwd(ctx, w, &ts, 0, GF_SG2_DEMOD_EPS, &twm, NULL,
                                 err);
  return gf_modconv_demod_jvp(ctx, w, &styles, &ts, &dcoef, NULL, NULL, &twm,
                              NULL, NULL, err);
}

/* The tangent forward of layer l: tx the tangent of its input x (NULL:
 * 0, b4's const), tws the tangent of ws. */
static gf_status slayer_tan_fwd(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                                const gf_tensor *x, const gf_tensor *tx,
                                const gf_tensor *tws, int64_t n, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  gf_tensor twrow = sg2_rows(&l->twrow, n);
  GF_TRY(sg2_ws_row(net, ctx, l, tws, &twrow, n, false, err));
  gf_tensor ts = sg2_rows(&l->affine.ty, n);
  GF_TRY(gf_linear_fwd(ctx, &twrow, &l->affine.ws, NULL, &ts, err));
  if (l->torgb)
    GF_TRY(gf_bias_act_fwd(ctx, &ts, NULL, GF_BIAS_ACT_LINEAR, 0.0f,
                           (float)(1.0 / sqrt((double)l->cin)), -1.0f, &ts,
                           err));
  GF_TRY(twmod_of(net, ctx, l, n, err));
  gf_tensor twm = sg2_rows(&l->twmod, n * l->cout),
            wmod = sg2_rows(&l->wmod, n * l->cout);
  gf_conv_params cp = {{1, 1}, {l->k / 2, l->k / 2}, {0, 0}};
  const gf_tensor *in = x, *tin = tx;
  gf_tensor xu = sg2_rows(&l->xu, n), txu = sg2_rows(&l->txu, n);
  if (l->up == 2) {
    cp.pad[0] = cp.pad[1] = 0;
    in = &xu;
    if (tx) {
      gf_fir_params fp = {{2, 2}, {1, 1}, {3, 2, 3, 2}, 0, 4.0f};
      GF_TRY(gf_upfirdn2d_fwd(ctx, tx, &im->filt, &fp, &txu, err));
      tin = &txu;
    }
  }
  gf_tensor ty = sg2_rows(&l->ty, n), tmp = sg2_rows(&l->tmp_y, n),
            y = sg2_rows(&l->y, n);
  GF_TRY(gf_conv2d_batched_fwd(ctx, in, &twm, &cp, &ty, err));
  if (tin) {
    GF_TRY(gf_conv2d_batched_fwd(ctx, tin, &wmod, &cp, &tmp, err));
    GF_TRY(gf_add(ctx, &ty, &tmp, &ty, err));
  }
  return gf_bias_act_bwd(ctx, &y,
                         l->torgb ? GF_BIAS_ACT_LINEAR : GF_BIAS_ACT_LRELU,
                         GF_SG2_LRELU_ALPHA, l->torgb ? 1.0f : SQRT2_F,
                         l->clamp, &ty, &ty, NULL, GF_OVERWRITE, err);
}

/* The affine layer's tangent backward: tdstyles in affine.tdy; dstyles
 * (affine.dy) and wrow of the first pass; tdwrow out. */
static gf_status affine_tan_bwd(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                                int64_t n, gf_accum accum, gf_err *err) {
  sg2_fc *a = &l->affine;
  gf_tensor wrow = sg2_rows(&l->wrow, n), twrow = sg2_rows(&l->twrow, n),
            dy = sg2_rows(&a->dy, n), tdy = sg2_rows(&a->tdy, n),
            tdwrow = sg2_rows(&l->tdwrow, n);
  const int64_t b1[1] = {a->out};
  gf_tensor dbs = sg2_as(&a->dbs, 1, b1);
  GF_TRY(gf_linear_bwd(ctx, &wrow, &a->ws, &tdy, &tdwrow, &a->dws, &dbs,
                       GF_OVERWRITE, err));
  GF_TRY(gf_linear_bwd(ctx, &twrow, &a->ws, &dy, NULL, &a->dws, NULL,
                       GF_ACCUMULATE, err));
  GF_TRY(sg2_scale_into(ctx, &a->dws, a->wgain, &net->tensors[a->w].grad, accum,
                        err));
  return sg2_scale_into(ctx, &dbs, a->bgain, &net->tensors[a->b].grad, accum,
                        err);
}

/* The tangent backward of layer l: l->tdy holds the tangent of dL/dy;
 * x, tx as slayer_tan_fwd's; tdx (may be NULL) gets the tangent of dL/dx;
 * the tangent of dL/dws is added to tdws. */
static gf_status slayer_tan_bwd(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                                const gf_tensor *x, const gf_tensor *tx,
                                int64_t n, gf_tensor *tdx, gf_tensor *tdws,
                                gf_accum accum, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  gf_tensor y = sg2_rows(&l->y, n), dy = sg2_rows(&l->dy, n),
            tdy = sg2_rows(&l->tdy, n);
  GF_TRY(gf_bias_act_bwd(ctx, &y,
                         l->torgb ? GF_BIAS_ACT_LINEAR : GF_BIAS_ACT_LRELU,
                         GF_SG2_LRELU_ALPHA, l->torgb ? 1.0f : SQRT2_F,
                         l->clamp, &tdy, &tdy, &net->tensors[l->b].grad, accum,
                         err));
  if (l->noise_used) {
    gf_tensor nz = sg2_rows(&l->noise, n);
    GF_TRY(gf_noise_add_bwd(ctx, &nz, &tdy, &tdy,
                            &net->tensors[l->noise_strength].grad, accum, err));
  } else if (!l->torgb && accum == GF_OVERWRITE) {
    GF_TRY(gf_fill(ctx, &net->tensors[l->noise_strength].grad, 0.0f, err));
  }
  GF_TRY(twmod_of(net, ctx, l, n, err));
  gf_conv_params cp = {{1, 1}, {l->k / 2, l->k / 2}, {0, 0}};
  gf_tensor wmod = sg2_rows(&l->wmod, n * l->cout),
            twm = sg2_rows(&l->twmod, n * l->cout),
            tdwm = sg2_rows(&l->tdwmod, n * l->cout),
            tmpw = sg2_rows(&l->tmp_wm, n * l->cout);
  const gf_tensor *in = x, *tin = tx;
  gf_tensor xu = sg2_rows(&l->xu, n), txu = sg2_rows(&l->txu, n),
            tdxu = sg2_rows(&l->tdxu, n), tmpdx = sg2_rows(&l->tmp_dx, n);
  gf_tensor *tdin = tdx;
  if (l->up == 2) {
    cp.pad[0] = cp.pad[1] = 0;
    in = &xu;
    tin = tx ? &txu : NULL;
    tdin = tdx ? &tdxu : NULL;
  }
  /* tdx = conv^T(wmod, tdpre) + conv^T(twmod, dpre); tdwmod =
   * wgrad(x, tdpre) + wgrad(tx, dpre) */
  GF_TRY(gf_conv2d_batched_bwd(ctx, in, &wmod, &tdy, &cp, tdin, &tdwm, err));
  gf_tensor tmpdx_v = sg2_as(&tmpdx, 4, in->shape);
  GF_TRY(gf_conv2d_batched_bwd(ctx, tin ? tin : in, &twm, &dy, &cp,
                               tdin ? &tmpdx_v : NULL, tin ? &tmpw : NULL,
                               err));
  if (tdin) GF_TRY(gf_add(ctx, tdin, &tmpdx_v, tdin, err));
  if (tin) GF_TRY(gf_add(ctx, &tdwm, &tmpw, &tdwm, err));
  if (l->up == 2 && tdx) {
    gf_fir_params fp = {{2, 2}, {1, 1}, {3, 2, 3, 2}, 0, 4.0f};
    GF_TRY(gf_upfirdn2d_bwd(ctx, &im->filt, &fp, &tdxu, tdx, err));
  }
  /* the modulation: gws and its tangent, then dw (+ its s-tangent part)
   * and tdstyles as sums without demodulation */
  gf_tensor styles = sg2_rows(&l->affine.y, n), ts = sg2_rows(&l->affine.ty, n),
            tds = sg2_rows(&l->affine.tdy, n), dcoef = sg2_rows(&l->dcoef, n),
            dwm = sg2_rows(&l->dwmod, n * l->cout);
  gf_tensor gws = dwm, gwsd = tdwm;
  const gf_tensor *w = l->up == 2 ? &l->wf : sg2_val(net, l->w);
  if (!l->torgb) {
    gws = sg2_rows(&l->gws, n * l->cout);
    gwsd = sg2_rows(&l->gwsdot, n * l->cout);
    GF_TRY(gf_modconv_demod_jvp(ctx, w, &styles, &ts, &dcoef, &dwm, &tdwm, NULL,
                                &gws, &gwsd, err));
  }
  gf_tensor *gw = l->up == 2 ? &l->dwf : &net->tensors[l->w].grad;
  gf_accum a0 = l->up == 2 ? GF_OVERWRITE : accum;
  GF_TRY(gf_modconv_weight_bwd(ctx, w, &styles, 0, GF_SG2_DEMOD_EPS, NULL,
                               &gwsd, gw, &tds, a0, err));
  GF_TRY(gf_modconv_weight_bwd(ctx, w, &ts, 0, GF_SG2_DEMOD_EPS, NULL, &gws, gw,
                               NULL, GF_ACCUMULATE, err));
  if (l->up == 2) GF_TRY(sg2_flip_into(net, ctx, l, &l->dwf, accum, err));
  if (l->torgb)
    GF_TRY(gf_bias_act_fwd(ctx, &tds, NULL, GF_BIAS_ACT_LINEAR, 0.0f,
                           (float)(1.0 / sqrt((double)l->cin)), -1.0f, &tds,
                           err));
  GF_TRY(affine_tan_bwd(net, ctx, l, n, accum, err));
  gf_tensor tdwrow = sg2_rows(&l->tdwrow, n);
  return sg2_ws_row(net, ctx, l, tdws, &tdwrow, n, true, err);
}

/* The tangent forward of the synthesis along tws. */
static gf_status synth_tan_fwd(gf_sg2_net *net, gf_ctx *ctx,
                               const gf_tensor *tws, int64_t n, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  gf_tensor x, tx, tprev;
  for (int k = 0; k < im->nblocks; k++) {
    sg2_gblock *b = &im->gb[k];
    if (k == 0) {
      x = sg2_rows(&b->x0, n);
      GF_TRY(slayer_tan_fwd(net, ctx, &b->conv1, &x, NULL, tws, n, err));
    } else {
      GF_TRY(slayer_tan_fwd(net, ctx, &b->conv0, &x, &tx, tws, n, err));
      gf_tensor h = sg2_rows(&b->conv0.y, n), th = sg2_rows(&b->conv0.ty, n);
      GF_TRY(slayer_tan_fwd(net, ctx, &b->conv1, &h, &th, tws, n, err));
    }
    x = sg2_rows(&b->conv1.y, n);
    tx = sg2_rows(&b->conv1.ty, n);
    GF_TRY(slayer_tan_fwd(net, ctx, &b->torgb, &x, &tx, tws, n, err));
    if (k > 0) {
      gf_fir_params fp = {{2, 2}, {1, 1}, {2, 1, 2, 1}, 0, 4.0f};
      gf_tensor up = sg2_rows(&b->img_up, n), ty = sg2_rows(&b->torgb.ty, n),
                out = sg2_rows(&b->timg, n);
      GF_TRY(gf_upfirdn2d_fwd(ctx, &tprev, &im->filt, &fp, &up, err));
      GF_TRY(gf_add(ctx, &up, &ty, &out, err));
    }
    tprev = sg2_rows(&b->timg, n);
  }
  return GF_OK;
}

/* The tangent backward of the synthesis (dL/dimg's tangent is 0): every
 * synthesis parameter's gradient; tdws gets dloss/dws. */
static gf_status synth_tan_bwd(gf_sg2_net *net, gf_ctx *ctx, gf_tensor *tdws,
                               int64_t n, gf_accum accum, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  GF_TRY(gf_fill(ctx, tdws, 0.0f, err));
  gf_tensor tdi = sg2_rows(&im->gb[im->nblocks - 1].tdimg, n);
  GF_TRY(gf_fill(ctx, &tdi, 0.0f, err));
  for (int k = im->nblocks - 1; k >= 0; k--) {
    sg2_gblock *b = &im->gb[k];
    if (k > 0) {
      gf_fir_params fp = {{2, 2}, {1, 1}, {2, 1, 2, 1}, 0, 4.0f};
      gf_tensor prev = sg2_rows(&im->gb[k - 1].tdimg, n);
      GF_TRY(gf_upfirdn2d_bwd(ctx, &im->filt, &fp, &tdi, &prev, err));
    }
    gf_tensor tty = sg2_rows(&b->torgb.tdy, n), x1 = sg2_rows(&b->conv1.y, n),
              tx1 = sg2_rows(&b->conv1.ty, n), td1 = sg2_rows(&b->conv1.tdy, n);
    GF_TRY(gf_copy(ctx, &tdi, &tty, err));
    GF_TRY(slayer_tan_bwd(net, ctx, &b->torgb, &x1, &tx1, n, &td1, tdws, accum,
                          err));
    if (k < im->nblocks - 1) {
      gf_tensor nx = sg2_rows(&im->gb[k + 1].tdxin, n);
      GF_TRY(gf_add(ctx, &td1, &nx, &td1, err));
    }
    if (k == 0) {
      gf_tensor x0 = sg2_rows(&b->x0, n), tdx0 = sg2_rows(&b->tdx0, n);
      GF_TRY(slayer_tan_bwd(net, ctx, &b->conv1, &x0, NULL, n, &tdx0, tdws,
                            accum, err));
      const int64_t s2[2] = {n, b->cout * 16}, c2[2] = {1, b->cout * 16};
      gf_tensor d2 = sg2_as(&tdx0, 2, s2),
                gc = sg2_as(&net->tensors[b->p_const].grad, 2, c2),
                z = sg2_rows(&im->map.zeros_i32, n);
      GF_TRY(gf_embedding_bwd(ctx, &z, &d2, &gc, accum, err));
    } else {
      gf_tensor h = sg2_rows(&b->conv0.y, n), th = sg2_rows(&b->conv0.ty, n),
                td0 = sg2_rows(&b->conv0.tdy, n),
                xin = sg2_rows(&im->gb[k - 1].conv1.y, n),
                txin = sg2_rows(&im->gb[k - 1].conv1.ty, n),
                tdxin = sg2_rows(&b->tdxin, n);
      GF_TRY(slayer_tan_bwd(net, ctx, &b->conv1, &h, &th, n, &td0, tdws, accum,
                            err));
      GF_TRY(slayer_tan_bwd(net, ctx, &b->conv0, &xin, &txin, n, &tdxin, tdws,
                            accum, err));
      tdi = sg2_rows(&im->gb[k - 1].tdimg, n);
    }
  }
  return GF_OK;
}

/* Host copy of n floats of t. */
static gf_status to_host(const gf_tensor *t, float *h, gf_err *err) {
  gf_tensor v;
  GF_TRY(gf_tensor_view(&v, h, GF_F32, GF_DEV_CPU, t->ndim, t->shape, err));
  return gf_tensor_copy(&v, t, err);
}

float gf_sg2_pl_mean_next(float pl_mean, float decay, double mean_length) {
  return (float)((double)pl_mean +
                 (double)decay * (mean_length - (double)pl_mean));
}

gf_status gf_sg2_g_pl(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *ws,
                      const gf_tensor *pl_noise, const gf_sg2_pl_args *args,
                      gf_accum accum, gf_sg2_pl_out *out, gf_err *err) {
  if (!net || !net->impl || !ctx || !ws || !pl_noise || !args ||
      net->role != GF_SG2_G)
    return gf_fail(err, GF_EINVAL,
                   "gf_sg2_g_pl: NULL argument or not a "
                   "generator");
  float pl_mean = args->pl_mean, decay = args->decay, weight = args->weight,
        scale = args->scale;
  if (!net->training)
    return gf_fail(err, GF_ESTATE, "gf_sg2_g_pl: not built for training");
  if (!isfinite(pl_mean) || !isfinite(decay) || !isfinite(weight) ||
      !isfinite(scale))
    return gf_fail(err, GF_EINVAL,
                   "gf_sg2_g_pl: pl_mean, decay, weight and "
                   "scale must be finite");
  gf_sg2_impl *im = net->impl;
  gf_tensor img;
  GF_TRY(gf_sg2_synthesis_fwd(net, ctx, ws, args->noise, args->seed, args->step,
                              args->sample0, GF_MODE_TRAIN, &img, err));
  int64_t n = im->synth_batch;
  gf_tensor pg;
  im->no_pgrads = true;
  gf_status st = gf_sg2_synthesis_bwd(net, ctx, pl_noise, GF_OVERWRITE, &pg,
                                      err);
  im->no_pgrads = false;
  GF_TRY(st);
  /* lengths and the loss's coefficients on the host (n values) */
  int64_t D = net->num_ws * net->cfg.w_dim;
  const int64_t g2[2] = {n, D};
  gf_tensor pf = sg2_as(&pg, 2, g2), len = sg2_rows(&im->pl_len, n),
            cf = sg2_rows(&im->pl_c, n);
  GF_TRY(gf_rowdot_fwd(ctx, &pf, &pf, &len, GF_OVERWRITE, err));
  double *L = malloc((size_t)n * sizeof *L);
  float *h = malloc((size_t)n * sizeof *h);
  if (!L || !h) {
    free(L);
    free(h);
    return gf_fail(err, GF_ENOMEM, "gf_sg2_g_pl: lengths");
  }
  st = to_host(&len, h, err);
  double mean = 0.0, pen = 0.0, dev = 0.0;
  for (int64_t i = 0; i < n && st == GF_OK; i++) {
    L[i] = sqrt((double)h[i] / (double)net->num_ws);
    mean += L[i];
  }
  mean /= (double)n;
  double m = (double)pl_mean + (double)decay * (mean - (double)pl_mean);
  if (args->lengths_only) {
    if (out) {
      out->penalty = 0.0f;
      out->pl_mean = gf_sg2_pl_mean_next(pl_mean, decay, mean);
      out->mean_length = mean;
    }
    free(L);
    free(h);
    return st;
  }
  for (int64_t i = 0; i < n; i++) {
    pen += (L[i] - m) * (L[i] - m);
    dev += L[i] - m;
  }
  for (int64_t i = 0; i < n; i++) {
    double dl = 2.0 * (double)scale * (double)weight / (double)n *
                ((L[i] - m) - (double)decay / (double)n * dev);
    h[i] = L[i] > 0.0 ? (float)(dl / ((double)net->num_ws * L[i])) : 0.0f;
  }
  if (st == GF_OK) {
    gf_tensor hv;
    st = gf_tensor_view(&hv, h, GF_F32, GF_DEV_CPU, 2, cf.shape, err);
    if (st == GF_OK) st = gf_tensor_copy(&cf, &hv, err);
  }
  if (out) {
    out->penalty = (float)(pen / (double)n);
    out->pl_mean = gf_sg2_pl_mean_next(pl_mean, decay, mean);
    out->mean_length = mean;
  }
  free(L);
  free(h);
  GF_TRY(st);
  /* the seed v = c_i pl_grads[i] (pl_grads copied: the tangent backward
   * reuses the first backward's dws buffer), then the tangents */
  gf_tensor v = sg2_rows(&im->pl_v, n), vf = sg2_as(&v, 2, g2),
            tdws = sg2_rows(&im->pl_tdws, n);
  GF_TRY(gf_rowdot_bwd(ctx, &pf, &pf, &cf, &vf, NULL, GF_OVERWRITE, err));
  GF_TRY(synth_tan_fwd(net, ctx, &v, n, err));
  GF_TRY(synth_tan_bwd(net, ctx, &tdws, n, accum, err));
  if (args->dws_out) return gf_tensor_copy(args->dws_out, &tdws, err);
  return gf_sg2_mapping_bwd(net, ctx, &tdws, accum, err);
}
