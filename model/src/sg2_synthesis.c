/* sg2_synthesis.c - G: the synthesis network ('skip': const 4x4 input,
 * per block conv0 (up 2) / conv1 and a toRGB whose image adds to the
 * previous block's up-sampled image) and the G build (synthesis, then
 * mapping, the official state_dict order). */
#include <stdio.h>
#include <string.h>

#include "gf/text.h"
#include "sg2_internal.h"

/* The layers of the synthesis, in build order (NULL past the end). */
static sg2_slayer *layer_at(gf_sg2_impl *im, int i) {
  int k = i / 3, j = i % 3;
  if (k >= im->nblocks) return NULL;
  sg2_gblock *b = &im->gb[k];
  return j == 0 ? &b->conv0 : j == 1 ? &b->conv1 : &b->torgb;
}

/* Path length's transient tangents (one layer's backward at a time): one
 * scratch of each kind sized for the largest layer, each layer's views
 * into it. */
static gf_status share_scratch(gf_sg2_net *net, sg2_alloc *a, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  int64_t mb = net->max_batch, mwm = 0, my = 0, mx = 0;
  for (int i = 0; layer_at(im, i); i++) {
    sg2_slayer *l = layer_at(im, i);
    if (l->cout == 0) continue; /* b4 has no conv0 */
    int64_t side = l->up == 2 ? l->res + 2 : l->res;
    int64_t wm = mb * l->cout * l->cin * l->k * l->k,
            y = mb * l->cout * l->res * l->res, x = mb * l->cin * side * side;
    mwm = wm > mwm ? wm : mwm;
    my = y > my ? y : my;
    mx = x > mx ? x : mx;
  }
  const int64_t swm[1] = {mwm}, sy[1] = {my}, sx[1] = {mx},
                sr[2] = {mb, net->cfg.w_dim};
  for (int i = 0; i < 5; i++)
    GF_TRY(sg2_dact(net, a, &im->pl_swm[i], 1, swm, err));
  GF_TRY(sg2_dact(net, a, &im->pl_sy, 1, sy, err));
  for (int i = 0; i < 2; i++)
    GF_TRY(sg2_dact(net, a, &im->pl_sx[i], 1, sx, err));
  GF_TRY(sg2_dact(net, a, &im->pl_swr, 2, sr, err));
  for (int i = 0; layer_at(im, i); i++) {
    sg2_slayer *l = layer_at(im, i);
    if (l->cout == 0) continue;
    int64_t side = l->up == 2 ? l->res + 2 : l->res;
    const int64_t wm[4] = {mb * l->cout, l->cin, l->k, l->k},
                  ys[4] = {mb, l->cout, l->res, l->res},
                  xs[4] = {mb, l->cin, side, side};
    l->tdwmod = sg2_as(&im->pl_swm[0], 4, wm);
    l->gws = sg2_as(&im->pl_swm[1], 4, wm);
    l->gwsdot = sg2_as(&im->pl_swm[2], 4, wm);
    l->tmp_wm = sg2_as(&im->pl_swm[3], 4, wm);
    l->twmod = sg2_as(&im->pl_swm[4], 4, wm);
    l->tmp_y = sg2_as(&im->pl_sy, 4, ys);
    l->tmp_dx = sg2_as(&im->pl_sx[0], 4, xs);
    l->tdxu = sg2_as(&im->pl_sx[1], 4, xs);
    l->tdwrow = im->pl_swr;
  }
  return GF_OK;
}

gf_status sg2_synthesis_build(gf_sg2_net *net, sg2_alloc *a, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  const gf_sg2_config *c = &net->cfg;
  int mb = net->max_batch, layer_no = 0;
  net->num_ws = gf_sg2_num_ws(c);
  im->nblocks = gf_sg2_log2_res(c) - 1;
  for (int k = 0; k < im->nblocks; k++) {
    sg2_gblock *b = &im->gb[k];
    memset(b, 0, sizeof *b);
    b->res = 4 << k;
    b->cin = k ? gf_sg2_channels(c, b->res / 2) : 0;
    b->cout = gf_sg2_channels(c, b->res);
    char nm[48];
    if (k == 0) {
      const int64_t cs[3] = {b->cout, 4, 4}, xs[4] = {mb, b->cout, 4, 4};
      GF_TRY(sg2_add_param(net, a, true, GF_PARAM_WEIGHT, 3, cs, &b->p_const,
                           err, "synthesis.b4.const"));
      GF_TRY(sg2_act(net, a, &b->x0, 4, xs, err));
    } else {
      GF_FORMAT_FITS(nm, sizeof nm, "synthesis.b%d.conv0", b->res);
      GF_TRY(sg2_slayer_build(net, a, &b->conv0, nm, b->cin, b->cout, b->res,
                              2, false, 2 * k - 1, layer_no++, err));
    }
    GF_FORMAT_FITS(nm, sizeof nm, "synthesis.b%d.conv1", b->res);
    GF_TRY(sg2_slayer_build(net, a, &b->conv1, nm, b->cout, b->cout, b->res,
                            1, false, 2 * k, layer_no++, err));
    GF_FORMAT_FITS(nm, sizeof nm, "synthesis.b%d.torgb", b->res);
    GF_TRY(sg2_slayer_build(net, a, &b->torgb, nm, b->cout, c->img_channels,
                            b->res, 1, true, 2 * k + 1, -1, err));
    const int64_t is[4] = {mb, c->img_channels, b->res, b->res};
    if (k > 0) {
      GF_TRY(sg2_act(net, a, &b->img_up, 4, is, err));
      GF_TRY(sg2_act(net, a, &b->img, 4, is, err));
      const int64_t xs[4] = {mb, b->cin, b->res / 2, b->res / 2};
      GF_TRY(sg2_dact(net, a, &b->dxin, 4, xs, err));
      GF_TRY(sg2_dact(net, a, &b->tdxin, 4, xs, err));
      GF_TRY(sg2_dact(net, a, &b->timg, 4, is, err));
    } else {
      b->img = b->torgb.y; /* b4's image is its toRGB's output */
      b->timg = b->torgb.ty;
      const int64_t xs[4] = {mb, b->cout, 4, 4};
      GF_TRY(sg2_dact(net, a, &b->dx0, 4, xs, err));
      GF_TRY(sg2_dact(net, a, &b->tdx0, 4, xs, err));
    }
    GF_TRY(sg2_dact(net, a, &b->tdimg, 4, is, err));
    if (k < im->nblocks - 1) GF_TRY(sg2_dact(net, a, &b->dimg, 4, is, err));
  }
  const int64_t dws[3] = {mb, net->num_ws, c->w_dim}, l2[2] = {mb, 1};
  GF_TRY(sg2_dact(net, a, &im->dws, 3, dws, err));
  GF_TRY(sg2_dact(net, a, &im->pl_v, 3, dws, err));
  GF_TRY(sg2_dact(net, a, &im->pl_tdws, 3, dws, err));
  GF_TRY(sg2_dact(net, a, &im->pl_len, 2, l2, err));
  GF_TRY(sg2_dact(net, a, &im->pl_c, 2, l2, err));
  GF_TRY(share_scratch(net, a, err));
  return sg2_mapping_build(net, a, &im->map, c->z_dim, c->c_dim, c->w_dim,
                           c->map_layers, net->num_ws, err);
}

gf_status gf_sg2_synthesis_fwd(gf_sg2_net *net, gf_ctx *ctx,
                               const gf_tensor *ws, gf_sg2_noise noise,
                               uint64_t seed, int64_t step, int64_t sample0,
                               gf_net_mode mode, gf_tensor *img,
                               gf_err *err) {
  if (!net || !net->impl || !ctx || !ws)
    return gf_fail(err, GF_EINVAL, "gf_sg2_synthesis_fwd: NULL argument");
  if (net->role != GF_SG2_G)
    return gf_fail(err, GF_EINVAL, "gf_sg2_synthesis_fwd: not a generator");
  gf_sg2_impl *im = net->impl;
  const gf_sg2_config *c = &net->cfg;
  int64_t n = ws->shape[0];
  if (ws->ndim != 3 || n < 1 || n > net->max_batch ||
      ws->shape[1] != net->num_ws || ws->shape[2] != c->w_dim ||
      ws->dtype != GF_F32 || ws->device != net->device)
    return gf_fail(err, GF_EINVAL, "gf_sg2_synthesis_fwd: ws must be f32 "
                   "[1..%d, %d, %d] on the net's device", net->max_batch,
                   net->num_ws, c->w_dim);
  if (noise != GF_SG2_NOISE_CONST && noise != GF_SG2_NOISE_RANDOM &&
      noise != GF_SG2_NOISE_NONE)
    return gf_fail(err, GF_EINVAL, "gf_sg2_synthesis_fwd: noise mode %d",
                   (int)noise);
  gf_tensor x, prev;
  for (int k = 0; k < im->nblocks; k++) {
    sg2_gblock *b = &im->gb[k];
    if (k == 0) {
      x = sg2_rows(&b->x0, n);
      const int64_t s1[1] = {b->cout * 16};
      gf_tensor src = sg2_as(sg2_val(net, b->p_const), 1, s1);
      for (int64_t i = 0; i < n; i++) {
        gf_tensor dst = sg2_as(&x, 1, s1);
        dst.data = (float *)x.data + i * s1[0];
        GF_TRY(gf_copy(ctx, &src, &dst, err));
      }
    } else {
      GF_TRY(sg2_slayer_fwd(net, ctx, &b->conv0, &x, ws, n, noise, seed,
                            step, sample0, err));
      x = sg2_rows(&b->conv0.y, n);
    }
    GF_TRY(sg2_slayer_fwd(net, ctx, &b->conv1, &x, ws, n, noise, seed, step,
                          sample0, err));
    x = sg2_rows(&b->conv1.y, n);
    GF_TRY(sg2_slayer_fwd(net, ctx, &b->torgb, &x, ws, n, noise, seed, step,
                          sample0, err));
    if (k > 0) {
      gf_fir_params fp = {{2, 2}, {1, 1}, {2, 1, 2, 1}, 0, 4.0f};
      gf_tensor up = sg2_rows(&b->img_up, n), y = sg2_rows(&b->torgb.y, n),
                out = sg2_rows(&b->img, n);
      GF_TRY(gf_upfirdn2d_fwd(ctx, &prev, &im->filt, &fp, &up, err));
      GF_TRY(gf_add(ctx, &up, &y, &out, err));
    }
    prev = sg2_rows(&b->img, n);
  }
  im->synth_batch = (int)n;
  net->fwd_mode = mode;
  net->fwd_batch = (int)n;
  *img = prev;
  return GF_OK;
}

gf_status gf_sg2_synthesis_block(const gf_sg2_net *net, int res, gf_tensor *x,
                                 gf_tensor *img, gf_err *err) {
  if (!net || !net->impl || net->role != GF_SG2_G)
    return gf_fail(err, GF_EINVAL, "gf_sg2_synthesis_block: not a generator");
  const gf_sg2_impl *im = net->impl;
  if (im->synth_batch < 1)
    return gf_fail(err, GF_ESTATE, "gf_sg2_synthesis_block: no forward yet");
  for (int k = 0; k < im->nblocks; k++) {
    const sg2_gblock *b = &im->gb[k];
    if (b->res != res) continue;
    if (x) *x = sg2_rows(&b->conv1.y, im->synth_batch);
    if (img) *img = sg2_rows(&b->img, im->synth_batch);
    return GF_OK;
  }
  return gf_fail(err, GF_EINVAL, "gf_sg2_synthesis_block: no block at %d px",
                 res);
}

gf_status gf_sg2_synthesis_bwd(gf_sg2_net *net, gf_ctx *ctx,
                               const gf_tensor *dimg, gf_accum accum,
                               gf_tensor *dws, gf_err *err) {
  if (!net || !net->impl || !ctx || !dimg || net->role != GF_SG2_G)
    return gf_fail(err, GF_EINVAL, "gf_sg2_synthesis_bwd: NULL argument or "
                   "not a generator");
  gf_sg2_impl *im = net->impl;
  if (!net->training)
    return gf_fail(err, GF_ESTATE, "gf_sg2_synthesis_bwd: not built for "
                   "training");
  int64_t n = im->synth_batch;
  if (n < 1)
    return gf_fail(err, GF_ESTATE, "gf_sg2_synthesis_bwd: no forward");
  const sg2_gblock *last = &im->gb[im->nblocks - 1];
  gf_tensor want = sg2_rows(&last->img, n);
  if (!gf_tensor_same_shape(dimg, &want) || dimg->device != net->device)
    return gf_fail(err, GF_EINVAL, "gf_sg2_synthesis_bwd: dimg must have "
                   "the image's shape, on the net's device");
  gf_tensor dw = sg2_rows(&im->dws, n);
  GF_TRY(gf_fill(ctx, &dw, 0.0f, err));
  gf_tensor di = *dimg;
  for (int k = im->nblocks - 1; k >= 0; k--) {
    sg2_gblock *b = &im->gb[k];
    gf_tensor x0 = sg2_rows(&b->x0, n), dx0 = sg2_rows(&b->dx0, n);
    /* the image path: dL/d(previous image) first, then toRGB */
    if (k > 0) {
      gf_fir_params fp = {{2, 2}, {1, 1}, {2, 1, 2, 1}, 0, 4.0f};
      gf_tensor prev = sg2_rows(&im->gb[k - 1].dimg, n);
      GF_TRY(gf_upfirdn2d_bwd(ctx, &im->filt, &fp, &di, &prev, err));
    }
    gf_tensor tdy = sg2_rows(&b->torgb.dy, n), x1 = sg2_rows(&b->conv1.y, n),
              d1 = sg2_rows(&b->conv1.dy, n);
    GF_TRY(gf_copy(ctx, &di, &tdy, err));
    GF_TRY(sg2_slayer_bwd(net, ctx, &b->torgb, &x1, n, &d1, &dw, accum, err));
    if (k < im->nblocks - 1) {
      gf_tensor nx = sg2_rows(&im->gb[k + 1].dxin, n);
      GF_TRY(gf_add(ctx, &d1, &nx, &d1, err));
    }
    if (k == 0) {
      GF_TRY(sg2_slayer_bwd(net, ctx, &b->conv1, &x0, n, &dx0, &dw, accum,
                            err));
      /* dL/dconst: the sum over the batch */
      const int64_t s2[2] = {n, b->cout * 16}, c2[2] = {1, b->cout * 16};
      gf_tensor d2 = sg2_as(&dx0, 2, s2),
                gc = sg2_as(&net->tensors[b->p_const].grad, 2, c2),
                z = sg2_rows(&im->map.zeros_i32, n);
      if (!im->no_pgrads)
        GF_TRY(gf_embedding_bwd(ctx, &z, &d2, &gc, accum, err));
    } else {
      gf_tensor x = sg2_rows(&b->conv0.y, n), d0 = sg2_rows(&b->conv0.dy, n),
                xin = sg2_rows(&im->gb[k - 1].conv1.y, n),
                dxin = sg2_rows(&b->dxin, n);
      GF_TRY(sg2_slayer_bwd(net, ctx, &b->conv1, &x, n, &d0, &dw, accum,
                            err));
      GF_TRY(sg2_slayer_bwd(net, ctx, &b->conv0, &xin, n, &dxin, &dw, accum,
                            err));
      di = sg2_rows(&im->gb[k - 1].dimg, n);
    }
  }
  if (dws) *dws = dw;
  return GF_OK;
}
