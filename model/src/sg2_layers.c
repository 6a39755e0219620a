/* sg2_layers.c - the layers of the StyleGAN2 networks over the kernel ops:
 * the equalized-learning-rate fully connected layer, D's conv layer (with
 * FIR down-sampling), normalize_2nd_moment, and the modulated synthesis
 * layer (toRGB included). See gf/sg2_net.h for the arithmetic. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gf/text.h"
#include "sg2_internal.h"

#define SQRT2 1.41421356237309504880f

/* ---- fully connected ---------------------------------------------------- */

gf_status sg2_fc_build(gf_sg2_net *net, sg2_alloc *a, sg2_fc *l,
                       const char *name, int64_t in, int64_t out, int act,
                       float lr_mul, gf_err *err) {
  memset(l, 0, sizeof *l);
  l->in = in;
  l->out = out;
  l->act = act;
  l->wgain = (float)(lr_mul / sqrt((double)in));
  l->bgain = lr_mul;
  l->act_gain = act == GF_BIAS_ACT_LRELU ? SQRT2 : 1.0f;
  const int64_t ws[2] = {out, in}, bs[1] = {out}, b2[2] = {1, out};
  const int64_t ys[2] = {net->max_batch, out};
  GF_TRY(sg2_add_param(net, a, true, GF_PARAM_WEIGHT, 2, ws, &l->w, err,
                       "%s.weight", name));
  GF_TRY(sg2_add_param(net, a, true, GF_PARAM_BIAS, 1, bs, &l->b, err,
                       "%s.bias", name));
  GF_TRY(sg2_act(net, a, &l->ws, 2, ws, err));
  GF_TRY(sg2_act(net, a, &l->bs, 2, b2, err));
  GF_TRY(sg2_dact(net, a, &l->dy, 2, ys, err));
  GF_TRY(sg2_dact(net, a, &l->dws, 2, ws, err));
  GF_TRY(sg2_dact(net, a, &l->dbs, 2, b2, err));
  GF_TRY(sg2_dact(net, a, &l->ty, 2, ys, err));
  GF_TRY(sg2_dact(net, a, &l->tdy, 2, ys, err));
  return sg2_act(net, a, &l->y, 2, ys, err);
}

gf_status sg2_fc_fwd(gf_sg2_net *net, gf_ctx *ctx, sg2_fc *l,
                     const gf_tensor *x, int64_t n, gf_err *err) {
  GF_TRY(gf_bias_act_fwd(ctx, sg2_val(net, l->w), NULL, GF_BIAS_ACT_LINEAR,
                         0.0f, l->wgain, -1.0f, &l->ws, err));
  const int64_t b1[1] = {l->out}, b2[2] = {1, l->out};
  gf_tensor b = *sg2_val(net, l->b);
  if (l->bgain != 1.0f) {
    gf_tensor braw = sg2_as(&b, 2, b2);
    GF_TRY(gf_bias_act_fwd(ctx, &braw, NULL, GF_BIAS_ACT_LINEAR, 0.0f,
                           l->bgain, -1.0f, &l->bs, err));
    b = sg2_as(&l->bs, 1, b1);
  }
  gf_tensor y = sg2_rows(&l->y, n);
  if (l->act == GF_BIAS_ACT_LINEAR)
    return gf_linear_fwd(ctx, x, &l->ws, &b, &y, err); /* addmm */
  GF_TRY(gf_linear_fwd(ctx, x, &l->ws, NULL, &y, err));
  return gf_bias_act_fwd(ctx, &y, &b, l->act, GF_SG2_LRELU_ALPHA, l->act_gain,
                         -1.0f, &y, err);
}

/* ---- D's conv layer ------------------------------------------------------ */

gf_status sg2_conv_build(gf_sg2_net *net, sg2_alloc *a, sg2_conv *l,
                         const char *name, int64_t cin, int64_t cout, int k,
                         int down, int res, bool bias, int act, float gain,
                         float conv_clamp, gf_err *err) {
  memset(l, 0, sizeof *l);
  l->cin = cin;
  l->cout = cout;
  l->k = k;
  l->down = down;
  l->res = res;
  l->wgain = (float)(1.0 / sqrt((double)(cin * k * k)));
  l->act = act;
  l->act_gain = (act == GF_BIAS_ACT_LRELU ? SQRT2 : 1.0f) * gain;
  l->clamp = conv_clamp > 0.0f ? conv_clamp * gain : -1.0f;
  l->b = -1;
  const int64_t ws[4] = {cout, cin, k, k}, bs[1] = {cout};
  GF_TRY(sg2_add_param(net, a, true, GF_PARAM_WEIGHT, 4, ws, &l->w, err,
                       "%s.weight", name));
  if (bias)
    GF_TRY(sg2_add_param(net, a, true, GF_PARAM_BIAS, 1, bs, &l->b, err,
                         "%s.bias", name));
  GF_TRY(sg2_act(net, a, &l->ws, 4, ws, err));
  int mb = net->max_batch;
  if (down == 2) {
    /* k 3: filtered, pads 2 (side res + 1); k 1: filtered with down 2 */
    int side = k == 3 ? res + 1 : res / 2;
    const int64_t xs[4] = {mb, cin, side, side};
    GF_TRY(sg2_act(net, a, &l->xf, 4, xs, err));
    GF_TRY(sg2_dact(net, a, &l->dxf, 4, xs, err));
    GF_TRY(sg2_dact(net, a, &l->txf, 4, xs, err));
  }
  const int64_t ys[4] = {mb, cout, res / down, res / down};
  GF_TRY(sg2_dact(net, a, &l->dy, 4, ys, err));
  GF_TRY(sg2_dact(net, a, &l->ty, 4, ys, err));
  GF_TRY(sg2_dact(net, a, &l->tdy, 4, ys, err));
  GF_TRY(sg2_dact(net, a, &l->dws, 4, ws, err));
  return sg2_act(net, a, &l->y, 4, ys, err);
}

gf_status sg2_conv_fwd(gf_sg2_net *net, gf_ctx *ctx, sg2_conv *l,
                       const gf_tensor *x, int64_t n, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  GF_TRY(gf_bias_act_fwd(ctx, sg2_val(net, l->w), NULL, GF_BIAS_ACT_LINEAR,
                         0.0f, l->wgain, -1.0f, &l->ws, err));
  gf_tensor y = sg2_rows(&l->y, n);
  gf_conv_params cp = {{1, 1}, {l->k / 2, l->k / 2}, {0, 0}};
  const gf_tensor *in = x;
  gf_tensor xf = sg2_rows(&l->xf, n);
  if (l->down == 2) {
    gf_fir_params fp = {{1, 1}, {1, 1}, {2, 2, 2, 2}, 0, 1.0f};
    if (l->k == 1) {
      fp = (gf_fir_params){{1, 1}, {2, 2}, {1, 1, 1, 1}, 0, 1.0f};
    } else {
      cp.stride[0] = cp.stride[1] = 2;
    }
    cp.pad[0] = cp.pad[1] = 0;
    GF_TRY(gf_upfirdn2d_fwd(ctx, x, &im->filt, &fp, &xf, err));
    in = &xf;
  }
  GF_TRY(gf_conv2d_fwd(ctx, in, &l->ws, NULL, &cp, &y, err));
  return gf_bias_act_fwd(ctx, &y, l->b >= 0 ? sg2_val(net, l->b) : NULL,
                         l->act, GF_SG2_LRELU_ALPHA, l->act_gain, l->clamp,
                         &y, err);
}

/* ---- normalize_2nd_moment ---------------------------------------------- */

gf_status sg2_norm_build(gf_sg2_net *net, sg2_alloc *a, sg2_norm *l,
                         int64_t d, gf_err *err) {
  memset(l, 0, sizeof *l);
  l->d = d;
  int mb = net->max_batch;
  const int64_t wc[4] = {1, d, 1, 1}, wm[4] = {mb, d, 1, 1}, dc[2] = {mb, 1},
                ys[2] = {mb, d};
  GF_TRY(sg2_act(net, a, &l->wc, 4, wc, err));
  GF_TRY(sg2_act(net, a, &l->wmod, 4, wm, err));
  GF_TRY(sg2_act(net, a, &l->dcoef, 2, dc, err));
  GF_TRY(sg2_dact(net, a, &l->g, 4, wm, err));
  return sg2_act(net, a, &l->y, 2, ys, err);
}

gf_status sg2_norm_consts(gf_ctx *ctx, sg2_norm *l, gf_err *err) {
  if (l->d == 0) return GF_OK;
  return gf_fill(ctx, &l->wc, (float)(1.0 / sqrt((double)l->d)), err);
}

gf_status sg2_norm_fwd(gf_ctx *ctx, sg2_norm *l, const gf_tensor *x,
                       int64_t n, gf_err *err) {
  gf_tensor wmod = sg2_rows(&l->wmod, n), dcoef = sg2_rows(&l->dcoef, n);
  /* S = sum (x / sqrt(d))^2 = mean(x^2): dcoef = rsqrt(mean + eps) */
  GF_TRY(gf_modconv_weight_fwd(ctx, &l->wc, x, 1, GF_SG2_DEMOD_EPS, &wmod,
                               &dcoef, err));
  const int64_t s4[4] = {n, 1, l->d, 1};
  gf_tensor x4 = sg2_as(x, 4, s4), y4 = sg2_as(&l->y, 4, s4);
  return gf_channel_affine_fwd(ctx, &x4, &dcoef, NULL, &y4, err);
}

/* ---- modulated synthesis layer and toRGB ---------------------------------- */

gf_status sg2_slayer_build(gf_sg2_net *net, sg2_alloc *a, sg2_slayer *l,
                           const char *name, int64_t cin, int64_t cout,
                           int res, int up, bool torgb, int w_index,
                           int layer_no, gf_err *err) {
  memset(l, 0, sizeof *l);
  const gf_sg2_config *c = &net->cfg;
  l->cin = cin;
  l->cout = cout;
  l->k = torgb ? 1 : 3;
  l->up = up;
  l->res = res;
  l->torgb = torgb;
  l->w_index = w_index;
  l->layer_no = layer_no;
  l->clamp = c->conv_clamp > 0.0f ? c->conv_clamp : -1.0f;
  l->noise_const = l->noise_strength = -1;
  int mb = net->max_batch, k = l->k;
  const int64_t ws[4] = {cout, cin, k, k}, bs[1] = {cout}, one[1] = {1},
                nc[2] = {res, res};
  GF_TRY(sg2_add_param(net, a, true, GF_PARAM_WEIGHT, 4, ws, &l->w, err,
                       "%s.weight", name));
  if (!torgb)
    GF_TRY(sg2_add_param(net, a, true, GF_PARAM_BIAS, 1, one,
                         &l->noise_strength, err, "%s.noise_strength",
                         name));
  GF_TRY(sg2_add_param(net, a, true, GF_PARAM_BIAS, 1, bs, &l->b, err,
                       "%s.bias", name));
  if (!torgb)
    GF_TRY(sg2_add_param(net, a, false, GF_PARAM_BIAS, 2, nc,
                         &l->noise_const, err, "%s.noise_const", name));
  char an[GF_PARAM_NAME_MAX];
  GF_FORMAT_FITS(an, sizeof an, "%s.affine", name);
  GF_TRY(sg2_fc_build(net, a, &l->affine, an, c->w_dim, cin,
                      GF_BIAS_ACT_LINEAR, 1.0f, err));
  const int64_t wr[2] = {mb, c->w_dim}, wm[4] = {(int64_t)mb * cout, cin, k, k},
                dc[2] = {mb, cout}, ns[4] = {mb, 1, res, res},
                ys[4] = {mb, cout, res, res};
  GF_TRY(sg2_act(net, a, &l->wrow, 2, wr, err));
  GF_TRY(sg2_act(net, a, &l->wmod, 4, wm, err));
  GF_TRY(sg2_act(net, a, &l->dcoef, 2, dc, err));
  if (up == 2) {
    const int64_t xs[4] = {mb, cin, res + 2, res + 2};
    GF_TRY(sg2_act(net, a, &l->wf, 4, ws, err));
    GF_TRY(sg2_act(net, a, &l->xu, 4, xs, err));
    GF_TRY(sg2_dact(net, a, &l->dxu, 4, xs, err));
    GF_TRY(sg2_dact(net, a, &l->dwf, 4, ws, err));
    GF_TRY(sg2_dact(net, a, &l->dwback, 4, ws, err));
  }
  if (!torgb) GF_TRY(sg2_act(net, a, &l->noise, 4, ns, err));
  /* path length's tangents that live from the tangent forward to the
   * backward (the transient ones are views of shared scratch,
   * sg2_synthesis.c) */
  GF_TRY(sg2_dact(net, a, &l->ty, 4, ys, err));
  GF_TRY(sg2_dact(net, a, &l->tdy, 4, ys, err));
  GF_TRY(sg2_dact(net, a, &l->twrow, 2, wr, err));
  if (up == 2) {
    const int64_t xs[4] = {mb, cin, res + 2, res + 2};
    GF_TRY(sg2_dact(net, a, &l->txu, 4, xs, err));
  }
  GF_TRY(sg2_dact(net, a, &l->dy, 4, ys, err));
  GF_TRY(sg2_dact(net, a, &l->dwmod, 4, wm, err));
  GF_TRY(sg2_dact(net, a, &l->dwrow, 2, wr, err));
  return sg2_act(net, a, &l->y, 4, ys, err);
}

/* The layer's noise for n samples into l->noise. */
static gf_status make_noise(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                            int64_t n, gf_sg2_noise mode, uint64_t seed,
                            int64_t step, int64_t sample0, gf_err *err) {
  gf_tensor noise = sg2_rows(&l->noise, n);
  int64_t hw = (int64_t)l->res * l->res;
  if (mode == GF_SG2_NOISE_CONST) {
    const int64_t s1[1] = {hw};
    gf_tensor src = sg2_as(sg2_val(net, l->noise_const), 1, s1);
    for (int64_t i = 0; i < n; i++) {
      gf_tensor dst = sg2_as(&noise, 1, s1);
      dst.data = (float *)noise.data + i * hw;
      GF_TRY(gf_copy(ctx, &src, &dst, err));
    }
    return GF_OK;
  }
  gf_philox_stream s = gf_rng_sample_stream(seed, GF_RNG_SG2_NOISE, step,
                                            (uint32_t)l->layer_no, sample0,
                                            hw);
  size_t k = (size_t)(n * hw);
  if (noise.device == GF_DEV_CPU) {
    gf_philox_normal(&s, noise.data, k, 0.0f, 1.0f);
    return GF_OK;
  }
  gf_sg2_impl *im = net->impl;
  if (k > im->host_noise_n)
    return gf_fail(err, GF_EINVAL, "sg2: noise of %zu values > staging %zu",
                   k, im->host_noise_n);
  gf_philox_normal(&s, im->host_noise, k, 0.0f, 1.0f);
  gf_tensor h;
  GF_TRY(gf_tensor_view(&h, im->host_noise, GF_F32, GF_DEV_CPU, noise.ndim,
                        noise.shape, err));
  return gf_tensor_copy(&noise, &h, err);
}

gf_status sg2_ws_row(gf_sg2_net *net, gf_ctx *ctx, const sg2_slayer *l,
                     const gf_tensor *ws, const gf_tensor *row, int64_t n,
                     bool add_back, gf_err *err) {
  int64_t wd = net->cfg.w_dim, nws = net->num_ws;
  const int64_t s1[1] = {wd};
  for (int64_t i = 0; i < n; i++) {
    gf_tensor a = sg2_as(ws, 1, s1), r = sg2_as(row, 1, s1);
    a.data = (float *)ws->data + (i * nws + l->w_index) * wd;
    r.data = (float *)row->data + i * wd;
    GF_TRY(add_back ? gf_add(ctx, &a, &r, &a, err) : gf_copy(ctx, &a, &r, err));
  }
  return GF_OK;
}

gf_status sg2_slayer_fwd(gf_sg2_net *net, gf_ctx *ctx, sg2_slayer *l,
                         const gf_tensor *x, const gf_tensor *ws, int64_t n,
                         gf_sg2_noise noise, uint64_t seed, int64_t step,
                         int64_t sample0, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  gf_tensor wrow = sg2_rows(&l->wrow, n);
  GF_TRY(sg2_ws_row(net, ctx, l, ws, &wrow, n, false, err));
  GF_TRY(sg2_fc_fwd(net, ctx, &l->affine, &wrow, n, err));
  gf_tensor styles = sg2_rows(&l->affine.y, n);
  if (l->torgb)
    GF_TRY(gf_bias_act_fwd(ctx, &styles, NULL, GF_BIAS_ACT_LINEAR, 0.0f,
                           (float)(1.0 / sqrt((double)l->cin)), -1.0f,
                           &styles, err));
  const gf_tensor *w = sg2_val(net, l->w);
  if (l->up == 2) {
    /* conv0 as upfirdn2d then a true convolution: the flipped weight */
    const int64_t s2[2] = {l->cout * l->cin, 9};
    gf_tensor w2 = sg2_as(w, 2, s2), wf2 = sg2_as(&l->wf, 2, s2);
    GF_TRY(gf_linear_fwd(ctx, &w2, &im->perm, NULL, &wf2, err));
    w = &l->wf;
  }
  gf_tensor wmod = sg2_rows(&l->wmod, n * l->cout);
  gf_tensor dcoef = sg2_rows(&l->dcoef, n);
  GF_TRY(gf_modconv_weight_fwd(ctx, w, &styles, !l->torgb, GF_SG2_DEMOD_EPS,
                               &wmod, l->torgb ? NULL : &dcoef, err));
  gf_tensor y = sg2_rows(&l->y, n);
  gf_conv_params cp = {{1, 1}, {l->k / 2, l->k / 2}, {0, 0}};
  if (l->up == 2) {
    gf_fir_params fp = {{2, 2}, {1, 1}, {3, 2, 3, 2}, 0, 4.0f};
    gf_tensor xu = sg2_rows(&l->xu, n);
    GF_TRY(gf_upfirdn2d_fwd(ctx, x, &im->filt, &fp, &xu, err));
    cp.pad[0] = cp.pad[1] = 0;
    GF_TRY(gf_conv2d_batched_fwd(ctx, &xu, &wmod, &cp, &y, err));
  } else {
    GF_TRY(gf_conv2d_batched_fwd(ctx, x, &wmod, &cp, &y, err));
  }
  l->noise_used = !l->torgb && noise != GF_SG2_NOISE_NONE;
  if (l->noise_used) {
    GF_TRY(make_noise(net, ctx, l, n, noise, seed, step, sample0, err));
    gf_tensor nz = sg2_rows(&l->noise, n);
    GF_TRY(gf_noise_add_fwd(ctx, &y, &nz, sg2_val(net, l->noise_strength),
                            &y, err));
  }
  return gf_bias_act_fwd(ctx, &y, sg2_val(net, l->b),
                         l->torgb ? GF_BIAS_ACT_LINEAR : GF_BIAS_ACT_LRELU,
                         GF_SG2_LRELU_ALPHA, l->torgb ? 1.0f : SQRT2,
                         l->clamp, &y, err);
}
