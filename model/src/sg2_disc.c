/* sg2_disc.c - D: the blocks from img_resolution down to 8 ('resnet':
 * fromRGB at the top block, conv0, conv1 with 2x FIR down-sampling, the
 * 1x1 down-sampling skip, both branches at gain sqrt(0.5); 'orig' when
 * d_resnet is 0: no skip, gain 1), the 4x4 epilogue (minibatch stddev,
 * conv, fc, out) and the projection conditioning on cmap = mapping(c). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gf/text.h"
#include "sg2_internal.h"

#define SQRT_HALF 0.70710678118654752440f

gf_status sg2_disc_build(gf_sg2_net *net, sg2_alloc *a, gf_err *err) {
  gf_sg2_impl *im = net->impl;
  const gf_sg2_config *c = &net->cfg;
  int mb = net->max_batch, R = c->img_resolution;
  float clamp = c->conv_clamp;
  int lrelu = GF_BIAS_ACT_LRELU;
  float g1 = c->d_resnet ? SQRT_HALF : 1.0f;
  im->nblocks = 0;
  for (int res = R; res >= 8; res /= 2) {
    sg2_dblock *b = &im->db[im->nblocks++];
    memset(b, 0, sizeof *b);
    b->res = res;
    b->cin = res < R ? gf_sg2_channels(c, res) : 0;
    b->ctmp = gf_sg2_channels(c, res);
    b->cout = gf_sg2_channels(c, res / 2);
    char nm[32];
    if (b->cin == 0) {
      GF_FORMAT_FITS(nm, sizeof nm, "b%d.fromrgb", res);
      GF_TRY(sg2_conv_build(net, a, &b->fromrgb, nm, c->img_channels, b->ctmp,
                            1, 1, res, true, lrelu, 1.0f, clamp, err));
    }
    GF_FORMAT_FITS(nm, sizeof nm, "b%d.conv0", res);
    GF_TRY(sg2_conv_build(net, a, &b->conv0, nm, b->ctmp, b->ctmp, 3, 1, res,
                          true, lrelu, 1.0f, clamp, err));
    GF_FORMAT_FITS(nm, sizeof nm, "b%d.conv1", res);
    GF_TRY(sg2_conv_build(net, a, &b->conv1, nm, b->ctmp, b->cout, 3, 2, res,
                          true, lrelu, g1, clamp, err));
    if (c->d_resnet) {
      GF_FORMAT_FITS(nm, sizeof nm, "b%d.skip", res);
      GF_TRY(sg2_conv_build(net, a, &b->skip, nm, b->ctmp, b->cout, 1, 2, res,
                            false, GF_BIAS_ACT_LINEAR, SQRT_HALF, 0.0f, err));
      const int64_t xs[4] = {mb, b->cout, res / 2, res / 2};
      GF_TRY(sg2_act(net, a, &b->x, 4, xs, err));
      GF_TRY(sg2_dact(net, a, &b->tx, 4, xs, err));
    } else {
      b->x = b->conv1.y;
      b->tx = b->conv1.ty;
    }
    const int64_t xs[4] = {mb, b->cout, res / 2, res / 2},
                  ts[4] = {mb, b->ctmp, res, res};
    GF_TRY(sg2_dact(net, a, &b->dx, 4, xs, err));
    GF_TRY(sg2_dact(net, a, &b->dt0, 4, ts, err));
    GF_TRY(sg2_dact(net, a, &b->dt1, 4, ts, err));
    GF_TRY(sg2_dact(net, a, &b->tdx, 4, xs, err));
  }
  net->cmap_dim = c->c_dim > 0 ? gf_sg2_channels(c, 4) : 0;
  if (c->c_dim > 0)
    GF_TRY(sg2_mapping_build(net, a, &im->map, 0, c->c_dim, net->cmap_dim,
                             c->d_map_layers, 0, err));
  int64_t C = gf_sg2_channels(c, 4), F = c->mbstd_channels;
  const int64_t ms[4] = {mb, C + F, 4, 4}, ls[2] = {mb, 1};
  if (F > 0) GF_TRY(sg2_act(net, a, &im->mbstd, 4, ms, err));
  GF_TRY(sg2_dact(net, a, &im->dmbstd, 4, ms, err));
  GF_TRY(sg2_dact(net, a, &im->dlg, 2, ls, err));
  if (F > 0) GF_TRY(sg2_dact(net, a, &im->tmbstd, 4, ms, err));
  GF_TRY(sg2_dact(net, a, &im->tdmbstd, 4, ms, err));
  const int64_t is[4] = {mb, c->img_channels, R, R};
  GF_TRY(sg2_dact(net, a, &im->r1_g, 4, is, err));
  GF_TRY(sg2_dact(net, a, &im->r1_t, 4, is, err));
  GF_TRY(sg2_dact(net, a, &im->r1_pen, 2, ls, err));
  GF_TRY(sg2_conv_build(net, a, &im->econv, "b4.conv", C + F, C, 3, 1, 4, true,
                        lrelu, 1.0f, clamp, err));
  GF_TRY(sg2_fc_build(net, a, &im->efc, "b4.fc", C * 16, C, lrelu, 1.0f, err));
  GF_TRY(sg2_fc_build(net, a, &im->eout, "b4.out", C,
                      net->cmap_dim ? net->cmap_dim : 1, GF_BIAS_ACT_LINEAR,
                      1.0f, err));
  return sg2_act(net, a, &im->logits, 2, ls, err);
}

gf_status gf_sg2_d_fwd(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *img,
                       const gf_tensor *c, gf_net_mode mode,
                       gf_tensor *logits, gf_err *err) {
  if (!net || !net->impl || !ctx || !img)
    return gf_fail(err, GF_EINVAL, "gf_sg2_d_fwd: NULL argument");
  if (net->role != GF_SG2_D)
    return gf_fail(err, GF_EINVAL, "gf_sg2_d_fwd: not a discriminator");
  gf_sg2_impl *im = net->impl;
  const gf_sg2_config *cf = &net->cfg;
  int64_t n = img->shape[0], R = cf->img_resolution;
  if (img->ndim != 4 || n < 1 || n > net->max_batch ||
      img->shape[1] != cf->img_channels || img->shape[2] != R ||
      img->shape[3] != R)
    return gf_fail(err, GF_EINVAL, "gf_sg2_d_fwd: img must be [1..%d, %d, "
                   "%lld, %lld]", net->max_batch, cf->img_channels,
                   (long long)R, (long long)R);
  int64_t G = cf->mbstd_group < n ? cf->mbstd_group : n;
  if (cf->mbstd_channels > 0 && n % G != 0)
    return gf_fail(err, GF_EINVAL, "gf_sg2_d_fwd: batch %lld is not a "
                   "multiple of the mbstd group %lld", (long long)n,
                   (long long)G);
  gf_tensor x;
  im->img_in = *img;
  for (int k = 0; k < im->nblocks; k++) {
    sg2_dblock *b = &im->db[k];
    if (b->cin == 0) {
      GF_TRY(sg2_conv_fwd(net, ctx, &b->fromrgb, img, n, err));
      x = sg2_rows(&b->fromrgb.y, n);
    }
    GF_TRY(sg2_conv_fwd(net, ctx, &b->conv0, &x, n, err));
    gf_tensor h = sg2_rows(&b->conv0.y, n);
    GF_TRY(sg2_conv_fwd(net, ctx, &b->conv1, &h, n, err));
    if (cf->d_resnet) {
      GF_TRY(sg2_conv_fwd(net, ctx, &b->skip, &x, n, err));
      gf_tensor s = sg2_rows(&b->skip.y, n), r = sg2_rows(&b->conv1.y, n),
                out = sg2_rows(&b->x, n);
      GF_TRY(gf_add(ctx, &s, &r, &out, err));
    }
    x = sg2_rows(&b->x, n);
  }
  if (cf->mbstd_channels > 0) {
    gf_tensor y = sg2_rows(&im->mbstd, n);
    GF_TRY(gf_mbstd_fwd(ctx, &x, cf->mbstd_group, cf->mbstd_channels, &y,
                        err));
    x = y;
  }
  GF_TRY(sg2_conv_fwd(net, ctx, &im->econv, &x, n, err));
  int64_t C = im->econv.cout;
  const int64_t fl[2] = {n, C * 16};
  gf_tensor flat = sg2_as(&im->econv.y, 2, fl);
  GF_TRY(sg2_fc_fwd(net, ctx, &im->efc, &flat, n, err));
  gf_tensor h = sg2_rows(&im->efc.y, n);
  GF_TRY(sg2_fc_fwd(net, ctx, &im->eout, &h, n, err));
  gf_tensor out = sg2_rows(&im->eout.y, n);
  if (net->cmap_dim > 0) {
    const gf_tensor *cmap;
    GF_TRY(sg2_mapping_run(net, ctx, &im->map, NULL, c, n, &cmap, err));
    gf_tensor cm = sg2_rows(cmap, n), lg = sg2_rows(&im->logits, n);
    GF_TRY(gf_rowdot_fwd(ctx, &out, &cm, &lg, GF_OVERWRITE, err));
    GF_TRY(gf_bias_act_fwd(ctx, &lg, NULL, GF_BIAS_ACT_LINEAR, 0.0f,
                           (float)(1.0 / sqrt((double)net->cmap_dim)), -1.0f,
                           &lg, err));
    out = lg;
  }
  im->d_batch = (int)n;
  net->fwd_mode = mode;
  net->fwd_batch = (int)n;
  *logits = out;
  return GF_OK;
}

gf_status gf_sg2_d_block(const gf_sg2_net *net, int res, gf_tensor *x,
                         gf_err *err) {
  if (!net || !net->impl || net->role != GF_SG2_D)
    return gf_fail(err, GF_EINVAL, "gf_sg2_d_block: not a discriminator");
  const gf_sg2_impl *im = net->impl;
  if (im->d_batch < 1)
    return gf_fail(err, GF_ESTATE, "gf_sg2_d_block: no forward yet");
  for (int k = 0; k < im->nblocks; k++)
    if (im->db[k].res == res) {
      *x = sg2_rows(&im->db[k].x, im->d_batch);
      return GF_OK;
    }
  return gf_fail(err, GF_EINVAL, "gf_sg2_d_block: no block at %d px", res);
}

gf_status gf_sg2_d_bwd(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *dlogits,
                       gf_tensor *dimg, gf_accum accum, gf_err *err) {
  if (!net || !net->impl || !ctx || !dlogits || net->role != GF_SG2_D)
    return gf_fail(err, GF_EINVAL, "gf_sg2_d_bwd: NULL argument or not a "
                   "discriminator");
  gf_sg2_impl *im = net->impl;
  const gf_sg2_config *cf = &net->cfg;
  if (!net->training)
    return gf_fail(err, GF_ESTATE, "gf_sg2_d_bwd: not built for training");
  int64_t n = im->d_batch;
  if (n < 1) return gf_fail(err, GF_ESTATE, "gf_sg2_d_bwd: no forward");
  if (gf_tensor_numel(dlogits) != n || dlogits->device != net->device)
    return gf_fail(err, GF_EINVAL, "gf_sg2_d_bwd: dlogits must hold %lld "
                   "values on the net's device", (long long)n);
  if (dimg && (!gf_tensor_same_shape(dimg, &im->img_in) ||
               dimg->device != net->device))
    return gf_fail(err, GF_EINVAL, "gf_sg2_d_bwd: dimg must have the "
                   "forward's img shape, on the net's device");
  const int64_t l2[2] = {n, 1};
  gf_tensor dl = sg2_as(dlogits, 2, l2), dout = sg2_rows(&im->eout.dy, n);
  if (net->cmap_dim > 0) {
    sg2_mapping *m = &im->map;
    gf_tensor lg = sg2_rows(&im->logits, n), dlg = sg2_rows(&im->dlg, n),
              out = sg2_rows(&im->eout.y, n),
              cm = sg2_rows(&m->fc[m->n_layers - 1].y, n),
              dcm = sg2_rows(&m->fc[m->n_layers - 1].dy, n);
    GF_TRY(gf_bias_act_bwd(ctx, &lg, GF_BIAS_ACT_LINEAR, 0.0f,
                           (float)(1.0 / sqrt((double)net->cmap_dim)), -1.0f,
                           &dl, &dlg, NULL, GF_OVERWRITE, err));
    GF_TRY(gf_rowdot_bwd(ctx, &out, &cm, &dlg, &dout, &dcm, GF_OVERWRITE,
                         err));
    if (!im->no_pgrads)
      GF_TRY(sg2_mapping_back(net, ctx, m, &m->c_in, n, accum, err));
  } else {
    GF_TRY(gf_copy(ctx, &dl, &dout, err));
  }
  gf_tensor h = sg2_rows(&im->efc.y, n), dh = sg2_rows(&im->efc.dy, n);
  GF_TRY(sg2_fc_bwd(net, ctx, &im->eout, &h, n, &dh, accum, err));
  int64_t C = im->econv.cout;
  const int64_t fl[2] = {n, C * 16};
  gf_tensor flat = sg2_as(&im->econv.y, 2, fl),
            dflat = sg2_as(&im->econv.dy, 2, fl);
  GF_TRY(sg2_fc_bwd(net, ctx, &im->efc, &flat, n, &dflat, accum, err));
  const sg2_dblock *lb = &im->db[im->nblocks - 1];
  gf_tensor x = sg2_rows(&lb->x, n), dx = sg2_rows(&lb->dx, n);
  if (cf->mbstd_channels > 0) {
    gf_tensor ms = sg2_rows(&im->mbstd, n), dms = sg2_rows(&im->dmbstd, n);
    GF_TRY(sg2_conv_bwd(net, ctx, &im->econv, &ms, n, &dms, accum, err));
    GF_TRY(gf_mbstd_bwd(ctx, &x, cf->mbstd_group, cf->mbstd_channels, &dms,
                        &dx, err));
  } else {
    GF_TRY(sg2_conv_bwd(net, ctx, &im->econv, &x, n, &dx, accum, err));
  }
  for (int k = im->nblocks - 1; k >= 0; k--) {
    sg2_dblock *b = &im->db[k];
    gf_tensor d = sg2_rows(&b->dx, n), d1 = sg2_rows(&b->conv1.dy, n),
              h0 = sg2_rows(&b->conv0.y, n), d0 = sg2_rows(&b->conv0.dy, n),
              t0 = sg2_rows(&b->dt0, n), t1 = sg2_rows(&b->dt1, n);
    gf_tensor xin = b->cin == 0 ? sg2_rows(&b->fromrgb.y, n)
                                : sg2_rows(&im->db[k - 1].x, n);
    GF_TRY(gf_copy(ctx, &d, &d1, err));
    GF_TRY(sg2_conv_bwd(net, ctx, &b->conv1, &h0, n, &d0, accum, err));
    GF_TRY(sg2_conv_bwd(net, ctx, &b->conv0, &xin, n, &t0, accum, err));
    if (cf->d_resnet) {
      gf_tensor ds = sg2_rows(&b->skip.dy, n);
      GF_TRY(gf_copy(ctx, &d, &ds, err));
      GF_TRY(sg2_conv_bwd(net, ctx, &b->skip, &xin, n, &t1, accum, err));
      GF_TRY(gf_add(ctx, &t0, &t1, &t0, err));
    }
    /* dL/d(block input): the previous block's dx, or fromrgb's dy */
    gf_tensor din = b->cin == 0 ? sg2_rows(&b->fromrgb.dy, n)
                                : sg2_rows(&im->db[k - 1].dx, n);
    GF_TRY(gf_copy(ctx, &t0, &din, err));
    if (b->cin == 0)
      GF_TRY(sg2_conv_bwd(net, ctx, &b->fromrgb, &im->img_in, n, dimg, accum,
                          err));
  }
  return GF_OK;
}
