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
    } else {
      b->x = b->conv1.y;
    }
  }
  net->cmap_dim = c->c_dim > 0 ? gf_sg2_channels(c, 4) : 0;
  if (c->c_dim > 0)
    GF_TRY(sg2_mapping_build(net, a, &im->map, 0, c->c_dim, net->cmap_dim,
                             c->d_map_layers, 0, err));
  int64_t C = gf_sg2_channels(c, 4), F = c->mbstd_channels;
  const int64_t ms[4] = {mb, C + F, 4, 4}, ls[2] = {mb, 1};
  if (F > 0) GF_TRY(sg2_act(net, a, &im->mbstd, 4, ms, err));
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
