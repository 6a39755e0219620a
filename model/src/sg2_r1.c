/* sg2_r1.c - StyleGAN2-ADA's R1 penalty of D (gf_sg2_d_r1, gf/sg2_net.h)
 * and its parameter gradients, by forward-over-reverse differentiation
 * over the kernel ops.
 *
 * Notation: D's forward maps the image x to sum_n D(x_n, c_n); the first
 * backward (gf_sg2_d_bwd's, seed 1 per logit, no parameter gradient) keeps
 * every layer's dL/d(pre-activation) (its dy) and gives g = grad_x, the R1
 * gradient. P = (1/n) sum ||g||^2 (mean over samples of the per-sample
 * sums). Its gradient wrt a parameter theta is
 *   dP/dtheta = (2/n) (d^2 L / dtheta dx) g = (2/n) d/de grad_theta L(x + e g)
 * at e = 0: the directional derivative of the first backward's parameter
 * gradients along the image direction g. This file runs that derivative
 * (a tangent) through the forward and the backward, seeded with xdot =
 * s g, s = 2 scale / n, so every tangent, and every gradient written, is
 * scale dP/dtheta (everything below is linear in the seed).
 *
 * Per layer (pre = conv(in, W) + b, y = act(pre) with act leaky ReLU with
 * gain and clamp, piecewise linear: its slope, read off y by
 * gf_bias_act_bwd, is constant along the tangent):
 *   tangent forward   tpre = conv(tin, W) (no bias), ty = slope tpre
 *   tangent backward  tdpre = slope tdy, tdin = conv^T(W, tdpre),
 *                     dW = wgrad(tin, dpre) + wgrad(in, tdpre),
 *                     db = sum tdpre
 * (D's FIR down-sampling is linear: its tangent is the same filter). The
 * one layer with a second derivative is the minibatch stddev:
 * gf_mbstd_jvp gives its tangent forward and gf_mbstd_bwd_jvp the tangent
 * of its backward (the part through x included). Above it (conv, fc, out
 * and the projection, whose backward does not depend on x) every tdy is
 * 0: those layers get dW = wgrad(tin, dpre) and no bias gradient; the
 * projection's class embedding cmap = mapping(c) gets d/dcmap = tout
 * dlogit / sqrt(cmap_dim), run back through D's mapping. */
#include <math.h>
#include <stdlib.h>

#include "gf/ada.h"
#include "sg2_internal.h"

/* The down-sampling geometry of conv layer l (as sg2_conv_fwd's). */
static void conv_geom(const sg2_conv *l, gf_conv_params *cp,
                      gf_fir_params *fp) {
  *cp = (gf_conv_params){{1, 1}, {l->k / 2, l->k / 2}, {0, 0}};
  *fp = (gf_fir_params){{1, 1}, {1, 1}, {2, 2, 2, 2}, 0, 1.0f};
  if (l->down == 2) {
    if (l->k == 1) *fp = (gf_fir_params){{1, 1}, {2, 2}, {1, 1, 1, 1}, 0, 1.0f};
    else cp->stride[0] = cp->stride[1] = 2;
    cp->pad[0] = cp->pad[1] = 0;
  }
}

/* ty = the tangent of l's output along tx (the tangent of its input). */
static gf_status conv_tan_fwd(gf_sg2_net *net, gf_ctx *ctx, sg2_conv *l,
                              const gf_tensor *tx, int64_t n, gf_err *err) {
  gf_conv_params cp;
  gf_fir_params fp;
  conv_geom(l, &cp, &fp);
  gf_tensor ty = sg2_rows(&l->ty, n), y = sg2_rows(&l->y, n);
  const gf_tensor *in = tx;
  gf_tensor txf = sg2_rows(&l->txf, n);
  if (l->down == 2) {
    GF_TRY(gf_upfirdn2d_fwd(ctx, tx, &net->impl->filt, &fp, &txf, err));
    in = &txf;
  }
  GF_TRY(gf_conv2d_fwd(ctx, in, &l->ws, NULL, &cp, &ty, err));
  return gf_bias_act_bwd(ctx, &y, l->act, GF_SG2_LRELU_ALPHA, l->act_gain,
                         l->clamp, &ty, &ty, NULL, GF_OVERWRITE, err);
}

/* The tangent backward of l: x and tx its input and the input's tangent;
 * l->tdy holds the tangent of dL/dy (zero: it is 0, l->tdy unread);
 * tdx (may be NULL) gets the tangent of dL/dx. Parameter gradients are
 * written or added as accum says. */
static gf_status conv_tan_bwd(gf_sg2_net *net, gf_ctx *ctx, sg2_conv *l,
                              const gf_tensor *x, const gf_tensor *tx,
                              bool zero, int64_t n, gf_tensor *tdx,
                              gf_accum accum, gf_err *err) {
  gf_conv_params cp;
  gf_fir_params fp;
  conv_geom(l, &cp, &fp);
  gf_tensor y = sg2_rows(&l->y, n), dy = sg2_rows(&l->dy, n),
            tdy = sg2_rows(&l->tdy, n), xf = sg2_rows(&l->xf, n),
            txf = sg2_rows(&l->txf, n), dxf = sg2_rows(&l->dxf, n);
  const gf_tensor *in = l->down == 2 ? &xf : x, *tin = l->down == 2 ? &txf : tx;
  gf_tensor *gb = l->b >= 0 ? &net->tensors[l->b].grad : NULL;
  if (zero) {
    if (gb && accum == GF_OVERWRITE) GF_TRY(gf_fill(ctx, gb, 0.0f, err));
    GF_TRY(gf_conv2d_bwd(ctx, tin, &l->ws, &dy, &cp, NULL, &l->dws, NULL,
                         GF_OVERWRITE, err));
    if (tdx) GF_TRY(gf_fill(ctx, tdx, 0.0f, err));
  } else {
    GF_TRY(gf_bias_act_bwd(ctx, &y, l->act, GF_SG2_LRELU_ALPHA, l->act_gain,
                           l->clamp, &tdy, &tdy, gb, accum, err));
    gf_tensor *dconv = tdx && l->down == 2 ? &dxf : tdx;
    GF_TRY(gf_conv2d_bwd(ctx, in, &l->ws, &tdy, &cp, dconv, &l->dws, NULL,
                         GF_OVERWRITE, err));
    GF_TRY(gf_conv2d_bwd(ctx, tin, &l->ws, &dy, &cp, NULL, &l->dws, NULL,
                         GF_ACCUMULATE, err));
    if (tdx && l->down == 2)
      GF_TRY(gf_upfirdn2d_bwd(ctx, &net->impl->filt, &fp, &dxf, tdx, err));
  }
  return sg2_scale_into(ctx, &l->dws, l->wgain, &net->tensors[l->w].grad, accum,
                        err);
}

/* ty = the tangent of fc layer l's output along tx. */
static gf_status fc_tan_fwd(gf_ctx *ctx, sg2_fc *l, const gf_tensor *tx,
                            int64_t n, gf_err *err) {
  gf_tensor ty = sg2_rows(&l->ty, n), y = sg2_rows(&l->y, n);
  GF_TRY(gf_linear_fwd(ctx, tx, &l->ws, NULL, &ty, err));
  if (l->act == GF_BIAS_ACT_LINEAR) return GF_OK; /* act_gain 1 */
  return gf_bias_act_bwd(ctx, &y, l->act, GF_SG2_LRELU_ALPHA, l->act_gain,
                         -1.0f, &ty, &ty, NULL, GF_OVERWRITE, err);
}

/* The tangent backward of an fc layer above mbstd (its tdy is 0): dW =
 * wgrad(tx, dpre), no bias gradient. */
static gf_status fc_tan_bwd_top(gf_sg2_net *net, gf_ctx *ctx, sg2_fc *l,
                                const gf_tensor *tx, int64_t n, gf_accum accum,
                                gf_err *err) {
  gf_tensor dy = sg2_rows(&l->dy, n);
  GF_TRY(gf_linear_bwd(ctx, tx, &l->ws, &dy, NULL, &l->dws, NULL, GF_OVERWRITE,
                       err));
  gf_tensor *gb = &net->tensors[l->b].grad;
  if (accum == GF_OVERWRITE) GF_TRY(gf_fill(ctx, gb, 0.0f, err));
  return sg2_scale_into(ctx, &l->dws, l->wgain, &net->tensors[l->w].grad, accum,
                        err);
}

/* The tangent forward from timg (D's input's tangent). */
static gf_status tan_fwd(gf_sg2_net *net, gf_ctx *ctx, gf_tensor timg,
                         int64_t n, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  const gf_sg2_config *cf = &net->cfg;
  gf_tensor tx;
  for (int k = 0; k < im->nblocks; k++) {
    sg2_dblock *b = &im->db[k];
    if (b->cin == 0) {
      GF_TRY(conv_tan_fwd(net, ctx, &b->fromrgb, &timg, n, err));
      tx = sg2_rows(&b->fromrgb.ty, n);
    }
    GF_TRY(conv_tan_fwd(net, ctx, &b->conv0, &tx, n, err));
    gf_tensor th = sg2_rows(&b->conv0.ty, n);
    GF_TRY(conv_tan_fwd(net, ctx, &b->conv1, &th, n, err));
    if (cf->d_resnet) {
      GF_TRY(conv_tan_fwd(net, ctx, &b->skip, &tx, n, err));
      gf_tensor s = sg2_rows(&b->skip.ty, n), r = sg2_rows(&b->conv1.ty, n),
                out = sg2_rows(&b->tx, n);
      GF_TRY(gf_add(ctx, &s, &r, &out, err));
    }
    tx = sg2_rows(&b->tx, n);
  }
  if (cf->mbstd_channels > 0) {
    const sg2_dblock *lb = &im->db[im->nblocks - 1];
    gf_tensor x = sg2_rows(&lb->x, n), ty = sg2_rows(&im->tmbstd, n);
    GF_TRY(gf_mbstd_jvp(ctx, &x, &tx, cf->mbstd_group, cf->mbstd_channels, &ty,
                        err));
    tx = ty;
  }
  GF_TRY(conv_tan_fwd(net, ctx, &im->econv, &tx, n, err));
  const int64_t fl[2] = {n, im->econv.cout * 16};
  gf_tensor tflat = sg2_as(&im->econv.ty, 2, fl);
  GF_TRY(fc_tan_fwd(ctx, &im->efc, &tflat, n, err));
  gf_tensor th = sg2_rows(&im->efc.ty, n);
  return fc_tan_fwd(ctx, &im->eout, &th, n, err);
}

/* The tangent backward: every parameter gradient (timg as tan_fwd's). */
static gf_status tan_bwd(gf_sg2_net *net, gf_ctx *ctx, gf_tensor timg,
                         int64_t n, gf_accum accum, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  const gf_sg2_config *cf = &net->cfg;
  if (net->cmap_dim > 0) {
    /* d/dcmap's tangent: tout dlg (dlg = dlogit / sqrt(cmap_dim)) */
    sg2_mapping *m = &im->map;
    gf_tensor tout = sg2_rows(&im->eout.ty, n), dlg = sg2_rows(&im->dlg, n),
              cm = sg2_rows(&m->fc[m->n_layers - 1].y, n),
              dcm = sg2_rows(&m->fc[m->n_layers - 1].dy, n);
    GF_TRY(gf_rowdot_bwd(ctx, &tout, &cm, &dlg, NULL, &dcm, GF_OVERWRITE, err));
    GF_TRY(sg2_mapping_back(net, ctx, m, &m->c_in, n, accum, err));
  }
  gf_tensor th = sg2_rows(&im->efc.ty, n);
  GF_TRY(fc_tan_bwd_top(net, ctx, &im->eout, &th, n, accum, err));
  const int64_t fl[2] = {n, im->econv.cout * 16};
  gf_tensor tflat = sg2_as(&im->econv.ty, 2, fl);
  GF_TRY(fc_tan_bwd_top(net, ctx, &im->efc, &tflat, n, accum, err));
  const sg2_dblock *lb = &im->db[im->nblocks - 1];
  gf_tensor x = sg2_rows(&lb->x, n), tx = sg2_rows(&lb->tx, n),
            tdx = sg2_rows(&lb->tdx, n);
  if (cf->mbstd_channels > 0) {
    gf_tensor ms = sg2_rows(&im->mbstd, n), tms = sg2_rows(&im->tmbstd, n),
              dms = sg2_rows(&im->dmbstd, n), tdms = sg2_rows(&im->tdmbstd, n);
    GF_TRY(conv_tan_bwd(net, ctx, &im->econv, &ms, &tms, true, n, &tdms, accum,
                        err));
    GF_TRY(gf_mbstd_bwd_jvp(ctx, &x, &tx, cf->mbstd_group, cf->mbstd_channels,
                            &dms, &tdms, &tdx, err));
  } else {
    /* without mbstd D is piecewise linear: nothing below gets a tangent
     * gradient (tdx 0) */
    GF_TRY(
        conv_tan_bwd(net, ctx, &im->econv, &x, &tx, true, n, &tdx, accum, err));
  }
  for (int k = im->nblocks - 1; k >= 0; k--) {
    sg2_dblock *b = &im->db[k];
    gf_tensor td = sg2_rows(&b->tdx, n), td1 = sg2_rows(&b->conv1.tdy, n),
              h0 = sg2_rows(&b->conv0.y, n), th0 = sg2_rows(&b->conv0.ty, n),
              td0 = sg2_rows(&b->conv0.tdy, n), t0 = sg2_rows(&b->dt0, n),
              t1 = sg2_rows(&b->dt1, n);
    gf_tensor xin = b->cin == 0 ? sg2_rows(&b->fromrgb.y, n)
                                : sg2_rows(&im->db[k - 1].x, n),
              txin = b->cin == 0 ? sg2_rows(&b->fromrgb.ty, n)
                                 : sg2_rows(&im->db[k - 1].tx, n);
    GF_TRY(gf_copy(ctx, &td, &td1, err));
    GF_TRY(conv_tan_bwd(net, ctx, &b->conv1, &h0, &th0, false, n, &td0, accum,
                        err));
    GF_TRY(conv_tan_bwd(net, ctx, &b->conv0, &xin, &txin, false, n, &t0, accum,
                        err));
    if (cf->d_resnet) {
      gf_tensor ts = sg2_rows(&b->skip.tdy, n);
      GF_TRY(gf_copy(ctx, &td, &ts, err));
      GF_TRY(conv_tan_bwd(net, ctx, &b->skip, &xin, &txin, false, n, &t1, accum,
                          err));
      GF_TRY(gf_add(ctx, &t0, &t1, &t0, err));
    }
    gf_tensor tdin = b->cin == 0 ? sg2_rows(&b->fromrgb.tdy, n)
                                 : sg2_rows(&im->db[k - 1].tdx, n);
    GF_TRY(gf_copy(ctx, &t0, &tdin, err));
    if (b->cin == 0)
      GF_TRY(conv_tan_bwd(net, ctx, &b->fromrgb, &im->img_in, &timg, false, n,
                          NULL, accum, err));
  }
  return GF_OK;
}

/* *penalty = the mean over samples of ||g_n||^2 (pen: n values of
 * scratch on the device). */
static gf_status penalties(gf_ctx *ctx, const gf_tensor *g, gf_tensor pen,
                           float *penalty, gf_err *err) {
  int64_t n = g->shape[0];
  const int64_t g2[2] = {n, gf_tensor_numel(g) / n};
  gf_tensor gf = sg2_as(g, 2, g2);
  GF_TRY(gf_rowdot_fwd(ctx, &gf, &gf, &pen, GF_OVERWRITE, err));
  float *host = malloc((size_t)n * sizeof *host);
  if (!host) return gf_fail(err, GF_ENOMEM, "gf_sg2_d_r1: penalties");
  gf_tensor h;
  gf_status st = gf_tensor_view(&h, host, GF_F32, GF_DEV_CPU, 2, pen.shape,
                                err);
  if (st == GF_OK) st = gf_tensor_copy(&h, &pen, err);
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += (double)host[i];
  free(host);
  GF_TRY(st);
  *penalty = (float)(s / (double)n);
  return GF_OK;
}

gf_status gf_sg2_d_r1(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *img,
                      const gf_tensor *c, struct gf_ada *aug, float scale,
                      gf_accum accum, float *penalty, gf_err *err) {
  if (!net || !net->impl || !ctx || !img || net->role != GF_SG2_D)
    return gf_fail(err, GF_EINVAL,
                   "gf_sg2_d_r1: NULL argument or not a "
                   "discriminator");
  if (!net->training)
    return gf_fail(err, GF_ESTATE, "gf_sg2_d_r1: not built for training");
  if (!isfinite(scale))
    return gf_fail(err, GF_EINVAL, "gf_sg2_d_r1: scale %g is not finite",
                   (double)scale);
  gf_sg2_impl *im = net->impl;
  gf_tensor lg;
  GF_TRY(gf_sg2_d_fwd(net, ctx, img, c, GF_MODE_TRAIN, &lg, err));
  int64_t n = im->d_batch;
  /* the first backward: gd = grad_img sum(D), every layer's dy kept; g =
   * gd, or with augmentation its gradient wrt the reals, A^T gd */
  gf_tensor ones = sg2_rows(&im->r1_pen, n), gd = sg2_rows(&im->r1_g, n),
            t = sg2_rows(&im->r1_t, n);
  GF_TRY(gf_fill(ctx, &ones, 1.0f, err));
  im->no_pgrads = true;
  gf_status st = gf_sg2_d_bwd(net, ctx, &ones, &gd, GF_OVERWRITE, err);
  im->no_pgrads = false;
  GF_TRY(st);
  gf_tensor g = gd;
  if (aug) {
    GF_TRY(gf_ada_bwd(aug, &gd, &t, err));
    g = t;
  }
  if (penalty)
    GF_TRY(penalties(ctx, &g, sg2_rows(&im->r1_pen, n), penalty, err));
  /* the tangent seed s g, s = 2 scale / n (in place), through the
   * augmentation's linear part when there is one */
  GF_TRY(gf_bias_act_fwd(ctx, &g, NULL, GF_BIAS_ACT_LINEAR, 0.0f,
                         (float)(2.0 * (double)scale / (double)n), -1.0f, &t,
                         err));
  gf_tensor timg = t;
  if (aug) {
    GF_TRY(gf_ada_jvp(aug, &t, &gd, err));
    timg = gd;
  }
  GF_TRY(tan_fwd(net, ctx, timg, n, err));
  return tan_bwd(net, ctx, timg, n, accum, err);
}
