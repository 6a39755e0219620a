/* net_layers.c - forward and backward of each layer kind of gf_net, one
 * small function pair per kind over the kernels library ops. The driver
 * (net.c) builds the views (gf_layer_io); this file only calls ops. */
#include <stddef.h>
#include <string.h>

#include "net_layers.h"

static gf_tensor *pval(gf_net *net, int i) {
  return i < 0 ? NULL : &net->tensors[i].value;
}
/* The gradient of parameter i when wanted, else NULL. */
static gf_tensor *pgrad(gf_net *net, int i, bool want) {
  return (!want || i < 0) ? NULL : &net->tensors[i].grad;
}
static gf_tensor *dx_or_null(gf_layer_io *io) {
  return io->dx.data ? &io->dx : NULL;
}

/* ---- spectral norm of a layer's weight (D with cfg.spectral_norm) -------- */
static gf_status acts_view(gf_net *net, gf_tensor *t, float *data, int ndim,
                           const int64_t *shape, gf_err *err) {
  GF_TRY(gf_tensor_view(t, data, GF_F32, net->acts.device, ndim, shape, err));
  t->device_index = net->acts.device_index;
  return GF_OK;
}
/* Views of the normalized weight and sigma of SN layer l. */
static gf_status sn_views(gf_net *net, gf_layer *l, gf_tensor *w_sn,
                          gf_tensor *sigma, gf_err *err) {
  const gf_tensor *w = pval(net, l->p_w);
  int64_t one = 1;
  GF_TRY(acts_view(net, w_sn, l->w_sn, w->ndim, w->shape, err));
  return acts_view(net, sigma, l->sigma, 1, &one, err);
}
/* The weight a forward uses: the parameter, or with spectral norm
 * weight_orig / sigma, formed now from u and v as they are (no power
 * iteration: gf_net_sn_iterate runs those), into *w (a view into acts). */
static gf_status fwd_weight(gf_net *net, gf_layer *l, gf_ctx *ctx,
                            gf_tensor *w, gf_err *err) {
  if (l->p_u < 0) {
    *w = *pval(net, l->p_w);
    return GF_OK;
  }
  gf_tensor sigma;
  GF_TRY(sn_views(net, l, w, &sigma, err));
  return gf_spectral_norm_fwd(ctx, pval(net, l->p_w), pval(net, l->p_u),
                              pval(net, l->p_v), 0, GF_SN_EPS, &sigma, w,
                              err);
}
/* The weight the last forward used, and where its gradient goes: the
 * parameter's gradient, or SN's scratch (then sn_finish folds it into the
 * parameter's gradient). *dw.data NULL when no gradient is wanted. */
static gf_status bwd_weight(gf_net *net, gf_layer *l, bool pg, gf_tensor *w,
                            gf_tensor *dw, gf_err *err) {
  memset(dw, 0, sizeof *dw);
  if (l->p_u < 0) {
    *w = *pval(net, l->p_w);
    if (pg) *dw = *pgrad(net, l->p_w, true);
    return GF_OK;
  }
  gf_tensor sigma;
  GF_TRY(sn_views(net, l, w, &sigma, err));
  if (pg) GF_TRY(acts_view(net, dw, net->sn_dw, w->ndim, w->shape, err));
  return GF_OK;
}
/* SN layers: the gradient wrt weight_orig from the one wrt w_sn. */
static gf_status sn_finish(gf_net *net, gf_layer *l, gf_ctx *ctx, bool pg,
                           const gf_tensor *dw_sn, gf_accum accum,
                           gf_err *err) {
  if (l->p_u < 0 || !pg) return GF_OK;
  gf_tensor w_sn, sigma;
  GF_TRY(sn_views(net, l, &w_sn, &sigma, err));
  return gf_spectral_norm_bwd(ctx, pval(net, l->p_w), pval(net, l->p_u),
                              pval(net, l->p_v), &sigma, dw_sn,
                              pgrad(net, l->p_w, true), accum, err);
}
/* With SN the weight's gradient is written whole into the scratch and
 * then added or written by sn_finish; else as the caller asked. */
static gf_accum wacc(const gf_layer *l, gf_accum accum) {
  return l->p_u < 0 ? accum : GF_OVERWRITE;
}

/* ---- linear ------------------------------------------------------------- */
/* A linear whose output is seen as [C, H, W] (gf_nb_linear_map): the
 * ops take y and dy as [n, C*H*W]. */
static gf_status flat_out(gf_layer_io *io, const gf_layer *l, gf_err *err) {
  if (l->out_ndim == 1) return GF_OK;
  int64_t s[2] = {io->y.shape[0], l->out_numel};
  GF_TRY(gf_tensor_reshape_view(&io->y, &io->y, 2, s, err));
  if (io->dy.data) GF_TRY(gf_tensor_reshape_view(&io->dy, &io->dy, 2, s, err));
  return GF_OK;
}
static gf_status linear_fwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                            gf_layer_io *io, gf_net_mode mode,
                            const gf_philox_stream *drop, gf_err *err) {
  (void)mode;
  (void)drop;
  gf_tensor w;
  GF_TRY(fwd_weight(net, l, ctx, &w, err));
  GF_TRY(flat_out(io, l, err));
  return gf_linear_fwd(ctx, &io->x, &w, pval(net, l->p_b), &io->y, err);
}
static gf_status linear_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                            gf_layer_io *io, bool pg, gf_accum accum,
                            gf_err *err) {
  GF_TRY(flat_out(io, l, err));
  gf_tensor w, dw;
  GF_TRY(bwd_weight(net, l, pg, &w, &dw, err));
  if (l->p_u >= 0 && pg) { /* bias (+)= as asked; weight via the scratch */
    GF_TRY(gf_linear_bwd(ctx, &io->x, &w, &io->dy, dx_or_null(io), &dw, NULL,
                         GF_OVERWRITE, err));
    if (l->p_b >= 0)
      GF_TRY(gf_linear_bwd(ctx, &io->x, &w, &io->dy, NULL, NULL,
                           pgrad(net, l->p_b, pg), accum, err));
    return sn_finish(net, l, ctx, pg, &dw, accum, err);
  }
  return gf_linear_bwd(ctx, &io->x, &w, &io->dy, dx_or_null(io),
                       dw.data ? &dw : NULL, pgrad(net, l->p_b, pg), accum,
                       err);
}

/* ---- convolution and transposed convolution (no bias) ------------------- */
/* Layer l's convolution (its weight, params and kind; a GF_L_RESADD's is
 * its shortcut's 1x1 convolution) of x into y. */
static gf_status conv_on(gf_net *net, gf_layer *l, gf_ctx *ctx, const gf_tensor *x,
                         gf_tensor *y, gf_err *err) {
  gf_tensor w;
  GF_TRY(fwd_weight(net, l, ctx, &w, err));
  if (l->kind == GF_L_DECONV) return gf_deconv2d_fwd(ctx, x, &w, NULL, &l->conv, y, err);
  return gf_conv2d_fwd(ctx, x, &w, NULL, &l->conv, y, err);
}
/* Its backward: dx (NULL: not wanted) and, with pg, the weight's gradient. */
static gf_status conv_bwd_on(gf_net *net, gf_layer *l, gf_ctx *ctx, const gf_tensor *x,
                             const gf_tensor *dy, gf_tensor *dx, bool pg, gf_accum accum,
                             gf_err *err) {
  gf_tensor w, dw;
  GF_TRY(bwd_weight(net, l, pg, &w, &dw, err));
  gf_tensor *dwp = dw.data ? &dw : NULL;
  if (l->kind == GF_L_DECONV)
    GF_TRY(gf_deconv2d_bwd(ctx, x, &w, dy, &l->conv, dx, dwp, NULL, wacc(l, accum), err));
  else
    GF_TRY(gf_conv2d_bwd(ctx, x, &w, dy, &l->conv, dx, dwp, NULL, wacc(l, accum), err));
  return sn_finish(net, l, ctx, pg, &dw, accum, err);
}
static gf_status conv_fwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                          gf_layer_io *io, gf_net_mode mode,
                          const gf_philox_stream *drop, gf_err *err) {
  (void)mode;
  (void)drop;
  return conv_on(net, l, ctx, &io->x, &io->y, err);
}
static gf_status conv_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                          gf_layer_io *io, bool pg, gf_accum accum,
                          gf_err *err) {
  return conv_bwd_on(net, l, ctx, &io->x, &io->dy, dx_or_null(io), pg, accum, err);
}

/* ---- batch norm ------------------------------------------------------------ */
static gf_status bn_stat_views(gf_net *net, gf_layer *l, gf_tensor *mean,
                               gf_tensor *var, gf_err *err) {
  int64_t c = l->out[0];
  GF_TRY(gf_tensor_view(mean, l->save_mean, GF_F32, net->acts.device, 1, &c,
                        err));
  mean->device_index = net->acts.device_index;
  GF_TRY(gf_tensor_view(var, l->save_var, GF_F32, net->acts.device, 1, &c, err));
  var->device_index = net->acts.device_index;
  return GF_OK;
}
/* A view of n rows of `per` floats at data on the net's device. */
static gf_status rows_view(gf_net *net, gf_tensor *t, float *data, int64_t n,
                           int64_t per, gf_err *err) {
  int64_t s2[2] = {n, per};
  return acts_view(net, t, data, 2, s2, err);
}

/* A conditional BN's per-sample gain and bias [n, C] from the shared
 * embedding's rows (net->cond_e): two linears. */
static gf_status cbn_gain_bias(gf_net *net, gf_layer *l, gf_ctx *ctx, int64_t n,
                               gf_tensor *gain, gf_tensor *bias, gf_err *err) {
  gf_tensor e;
  int64_t c = l->out[0];
  GF_TRY(rows_view(net, &e, net->cond_e, n, GF_COND_EMBED_DIM, err));
  GF_TRY(rows_view(net, gain, l->cgain, n, c, err));
  GF_TRY(rows_view(net, bias, l->cbias, n, c, err));
  GF_TRY(gf_linear_fwd(ctx, &e, pval(net, l->p_gw), pval(net, l->p_gb), gain, err));
  return gf_linear_fwd(ctx, &e, pval(net, l->p_bw), pval(net, l->p_bb), bias, err);
}

static gf_status bn_fwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                        gf_layer_io *io, gf_net_mode mode,
                        const gf_philox_stream *drop, gf_err *err) {
  (void)drop;
  bool cond = l->p_gw >= 0;
  gf_layer_io bio = *io; /* conditional: the BN's output is xhat */
  if (cond) GF_TRY(acts_view(net, &bio.y, l->xhat, io->y.ndim, io->y.shape, err));
  gf_status st;
  if (mode == GF_MODE_INFER) {
    st = gf_batchnorm_fwd_infer(ctx, &io->x, pval(net, l->p_gamma),
                                pval(net, l->p_beta), pval(net, l->p_rmean),
                                pval(net, l->p_rvar), GF_BN_EPS, &bio.y, err);
  } else if (net->bn_comm) {
    st = gf_syncbn_fwd(net, l, ctx, &bio, err);
  } else {
    gf_tensor mean, var;
    GF_TRY(bn_stat_views(net, l, &mean, &var, err));
    gf_bn_params p = {GF_BN_EPS, GF_BN_MOMENTUM};
    bool upd = !net->bn_frozen;
    st = gf_batchnorm_fwd_train(ctx, &io->x, pval(net, l->p_gamma),
                                pval(net, l->p_beta),
                                upd ? pval(net, l->p_rmean) : NULL,
                                upd ? pval(net, l->p_rvar) : NULL, &p, &bio.y,
                                &mean, &var, err);
  }
  if (st != GF_OK || !cond) return st;
  gf_tensor gain, bias;
  GF_TRY(cbn_gain_bias(net, l, ctx, io->x.shape[0], &gain, &bias, err));
  return gf_channel_affine_fwd(ctx, &bio.y, &gain, &bias, &io->y, err);
}

/* A conditional BN's backward through its gain and bias: dxhat into
 * net->cond_dx (returned in *dxhat), and with param_grads the linears'
 * and the shared embedding's gradients. */
static gf_status cbn_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx, gf_layer_io *io,
                         bool pg, gf_accum accum, gf_tensor *dxhat, gf_err *err) {
  int64_t n = io->x.shape[0], c = l->out[0];
  gf_tensor xhat, gain, bias, dg, db;
  GF_TRY(acts_view(net, &xhat, l->xhat, io->y.ndim, io->y.shape, err));
  GF_TRY(acts_view(net, dxhat, net->cond_dx, io->y.ndim, io->y.shape, err));
  GF_TRY(rows_view(net, &gain, l->cgain, n, c, err));
  GF_TRY(rows_view(net, &bias, l->cbias, n, c, err));
  GF_TRY(rows_view(net, &dg, net->cond_dg, n, c, err));
  GF_TRY(rows_view(net, &db, net->cond_db, n, c, err));
  GF_TRY(gf_channel_affine_bwd(ctx, &xhat, &gain, &io->dy, dxhat, pg ? &dg : NULL,
                               pg ? &db : NULL, err));
  if (!pg) return GF_OK;
  gf_tensor e, de;
  GF_TRY(rows_view(net, &e, net->cond_e, n, GF_COND_EMBED_DIM, err));
  GF_TRY(rows_view(net, &de, net->cond_de, n, GF_COND_EMBED_DIM, err));
  gf_tensor *table = pgrad(net, net->p_embed, true);
  const int pw[2] = {l->p_gw, l->p_bw}, pb[2] = {l->p_gb, l->p_bb};
  gf_tensor *d[2] = {&dg, &db};
  for (int k = 0; k < 2; k++) {
    GF_TRY(gf_linear_bwd(ctx, &e, pval(net, pw[k]), d[k], &de, pgrad(net, pw[k], true),
                         pgrad(net, pb[k], true), accum, err));
    GF_TRY(gf_embedding_bwd(ctx, &net->labels, &de, table,
                            net->cond_first ? accum : GF_ACCUMULATE, err));
    net->cond_first = false;
  }
  return GF_OK;
}

static gf_status bn_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                        gf_layer_io *io, bool pg, gf_accum accum,
                        gf_err *err) {
  gf_layer_io bio = *io;
  if (l->p_gw >= 0) GF_TRY(cbn_bwd(net, l, ctx, io, pg, accum, &bio.dy, err));
  if (net->bn_comm) return gf_syncbn_bwd(net, l, ctx, &bio, pg, accum, err);
  gf_tensor mean, var;
  GF_TRY(bn_stat_views(net, l, &mean, &var, err));
  return gf_batchnorm_bwd(ctx, &bio.x, pval(net, l->p_gamma), &mean, &var,
                          GF_BN_EPS, &bio.dy, dx_or_null(&bio),
                          pgrad(net, l->p_gamma, pg),
                          pgrad(net, l->p_beta, pg), accum, err);
}

gf_status gf_net_projection_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                                gf_layer_io *io, bool pg, gf_accum accum,
                                gf_err *err) {
  int64_t n = io->x.shape[0], f = l->in_numel;
  gf_tensor e, h, dy;
  int64_t ys[2] = {n, 1};
  GF_TRY(rows_view(net, &e, net->cond_e, n, f, err));
  GF_TRY(rows_view(net, &h, (float *)io->x.data, n, f, err));
  GF_TRY(gf_tensor_reshape_view(&dy, &io->dy, 2, ys, err));
  if (io->dx.data) {
    gf_tensor dh;
    GF_TRY(rows_view(net, &dh, (float *)io->dx.data, n, f, err));
    GF_TRY(gf_rowdot_bwd(ctx, &e, &h, &dy, NULL, &dh, GF_ACCUMULATE, err));
  }
  if (!pg) return GF_OK;
  gf_tensor de;
  GF_TRY(rows_view(net, &de, net->cond_de, n, f, err));
  GF_TRY(gf_rowdot_bwd(ctx, &e, &h, &dy, &de, NULL, GF_OVERWRITE, err));
  return gf_embedding_bwd(ctx, &net->labels, &de, pgrad(net, net->p_embed, true), accum, err);
}

/* ---- element-wise, in place ------------------------------------------------ */
static gf_status act_fwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                         gf_layer_io *io, gf_net_mode mode,
                         const gf_philox_stream *drop, gf_err *err) {
  (void)net;
  switch (l->kind) {
  case GF_L_RELU: return gf_relu_fwd(ctx, &io->x, &io->y, err);
  case GF_L_LRELU: return gf_leaky_relu_fwd(ctx, &io->x, l->slope, &io->y, err);
  case GF_L_TANH: return gf_tanh_fwd(ctx, &io->x, &io->y, err);
  case GF_L_DROPOUT:
    l->drop_applied = mode == GF_MODE_TRAIN && l->drop_p > 0.0f;
    if (!l->drop_applied)
      return io->x.data == io->y.data ? GF_OK : gf_copy(ctx, &io->x, &io->y, err);
    l->drop_stream = *drop;
    return gf_dropout_fwd(ctx, &io->x, l->drop_p, drop, &io->y, err);
  default: return gf_fail(err, GF_EINVAL, "net: layer kind %d is not element-wise", (int)l->kind);
  }
}
/* io->x holds the buffer after the whole forward (see gf_layer.in_place):
 * for relu / leaky relu its sign equals the input's sign wherever the
 * incoming gradient can be non-zero, for tanh it is the output. */
static gf_status act_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                         gf_layer_io *io, bool pg, gf_accum accum,
                         gf_err *err) {
  (void)net;
  (void)pg;
  (void)accum;
  if (!io->dx.data) return GF_OK;
  switch (l->kind) {
  case GF_L_RELU: return gf_relu_bwd(ctx, &io->x, &io->dy, &io->dx, err);
  case GF_L_LRELU:
    return gf_leaky_relu_bwd(ctx, &io->x, l->slope, &io->dy, &io->dx, err);
  case GF_L_TANH: return gf_tanh_bwd(ctx, &io->x, &io->dy, &io->dx, err);
  case GF_L_DROPOUT:
    if (!l->drop_applied)
      return io->dy.data == io->dx.data ? GF_OK
                                        : gf_copy(ctx, &io->dy, &io->dx, err);
    return gf_dropout_bwd(ctx, &io->dy, l->drop_p, &l->drop_stream, &io->dx,
                          err);
  default: return gf_fail(err, GF_EINVAL, "net: layer kind %d is not element-wise", (int)l->kind);
  }
}

/* ---- upsampling, average pooling ----------------------------------------- */
static gf_status resample_fwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                              gf_layer_io *io, gf_net_mode mode,
                              const gf_philox_stream *drop, gf_err *err) {
  (void)net;
  (void)mode;
  (void)drop;
  if (l->kind == GF_L_UPSAMPLE) return gf_upsample_nearest2x_fwd(ctx, &io->x, &io->y, err);
  gf_pool_params p = gf_net_pool(l->pool_k);
  return gf_avgpool2d_fwd(ctx, &io->x, &p, &io->y, err);
}
static gf_status resample_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                              gf_layer_io *io, bool pg, gf_accum accum,
                              gf_err *err) {
  (void)net;
  (void)pg;
  (void)accum;
  if (!io->dx.data) return GF_OK;
  if (l->kind == GF_L_UPSAMPLE) return gf_upsample_nearest2x_bwd(ctx, &io->dy, &io->dx, err);
  gf_pool_params p = gf_net_pool(l->pool_k);
  return gf_avgpool2d_bwd(ctx, &io->dy, &p, &io->dx, err);
}

/* ---- residual add ------------------------------------------------------------ */
/* Views of a residual block's input s (the input of layer skip_from, as
 * the forward left it), its shortcut's intermediate and their gradients,
 * for n samples. */
typedef struct res_views {
  gf_tensor s, mid, out, dmid, ds;
} res_views;
void gf_resadd_shapes(const gf_net *net, const gf_layer *l, int64_t s[3], int64_t m[3]) {
  memcpy(s, net->layers[l->skip_from].in, 3 * sizeof *s);
  memcpy(m, s, 3 * sizeof *m);
  if (l->sc == GF_SC_UP_CONV) m[1] *= 2, m[2] *= 2;
  else if (l->sc == GF_SC_POOL_CONV) m[1] /= 2, m[2] /= 2;
  else if (l->sc == GF_SC_CONV_POOL) m[0] = l->out[0];
}
static gf_status res_views_of(gf_net *net, gf_layer *l, int64_t n, res_views *v,
                              gf_err *err) {
  memset(v, 0, sizeof *v);
  const float *sd = l->skip_from == 0 ? net->fwd_in.data : net->layers[l->skip_from - 1].act;
  int64_t s3[3], m3[3];
  gf_resadd_shapes(net, l, s3, m3);
  int64_t ss[4] = {n, s3[0], s3[1], s3[2]};
  GF_TRY(acts_view(net, &v->s, (float *)sd, 4, ss, err));
  if (l->skip_grad) GF_TRY(acts_view(net, &v->ds, l->skip_grad, 4, ss, err));
  if (l->sc == GF_SC_IDENTITY) return GF_OK;
  int64_t ms[4] = {n, m3[0], m3[1], m3[2]};
  int64_t os[4] = {n, l->out[0], l->out[1], l->out[2]};
  GF_TRY(acts_view(net, &v->mid, l->sc_mid, 4, ms, err));
  GF_TRY(acts_view(net, &v->out, l->sc_out, 4, os, err));
  if (l->sc_dmid) GF_TRY(acts_view(net, &v->dmid, l->sc_dmid, 4, ms, err));
  return GF_OK;
}
static gf_status resadd_fwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                            gf_layer_io *io, gf_net_mode mode,
                            const gf_philox_stream *drop, gf_err *err) {
  (void)mode;
  (void)drop;
  res_views v;
  GF_TRY(res_views_of(net, l, io->x.shape[0], &v, err));
  gf_pool_params p2 = gf_net_pool(2);
  switch (l->sc) {
  case GF_SC_IDENTITY: return gf_add(ctx, &io->x, &v.s, &io->y, err);
  case GF_SC_UP_CONV:
    GF_TRY(gf_upsample_nearest2x_fwd(ctx, &v.s, &v.mid, err));
    GF_TRY(conv_on(net, l, ctx, &v.mid, &v.out, err));
    break;
  case GF_SC_POOL_CONV:
    GF_TRY(gf_avgpool2d_fwd(ctx, &v.s, &p2, &v.mid, err));
    GF_TRY(conv_on(net, l, ctx, &v.mid, &v.out, err));
    break;
  case GF_SC_CONV_POOL:
    GF_TRY(conv_on(net, l, ctx, &v.s, &v.mid, err));
    GF_TRY(gf_avgpool2d_fwd(ctx, &v.mid, &p2, &v.out, err));
    break;
  }
  return gf_add(ctx, &io->x, &v.out, &io->y, err);
}
/* The main path's gradient passes through (dx = dy: in place, one buffer);
 * the shortcut's goes into skip_grad, which the driver adds to the
 * gradient wrt the block's input when the backward gets there. */
static gf_status resadd_bwd(gf_net *net, gf_layer *l, gf_ctx *ctx,
                            gf_layer_io *io, bool pg, gf_accum accum,
                            gf_err *err) {
  if (io->dx.data && io->dx.data != io->dy.data) GF_TRY(gf_copy(ctx, &io->dy, &io->dx, err));
  res_views v;
  GF_TRY(res_views_of(net, l, io->dy.shape[0], &v, err));
  gf_pool_params p2 = gf_net_pool(2);
  switch (l->sc) {
  case GF_SC_IDENTITY: return gf_copy(ctx, &io->dy, &v.ds, err);
  case GF_SC_UP_CONV:
    GF_TRY(conv_bwd_on(net, l, ctx, &v.mid, &io->dy, &v.dmid, pg, accum, err));
    return gf_upsample_nearest2x_bwd(ctx, &v.dmid, &v.ds, err);
  case GF_SC_POOL_CONV:
    GF_TRY(conv_bwd_on(net, l, ctx, &v.mid, &io->dy, &v.dmid, pg, accum, err));
    return gf_avgpool2d_bwd(ctx, &v.dmid, &p2, &v.ds, err);
  case GF_SC_CONV_POOL:
    GF_TRY(gf_avgpool2d_bwd(ctx, &io->dy, &p2, &v.dmid, err));
    return conv_bwd_on(net, l, ctx, &v.s, &v.dmid, &v.ds, pg, accum, err);
  }
  return gf_fail(err, GF_EINVAL, "net: unknown shortcut %d", (int)l->sc);
}

static const gf_layer_ops k_ops[GF_L_KIND_COUNT] = {
    [GF_L_LINEAR] = {"linear", linear_fwd, linear_bwd},
    [GF_L_CONV] = {"conv", conv_fwd, conv_bwd},
    [GF_L_DECONV] = {"deconv", conv_fwd, conv_bwd},
    [GF_L_BN] = {"batchnorm", bn_fwd, bn_bwd},
    [GF_L_RELU] = {"relu", act_fwd, act_bwd},
    [GF_L_LRELU] = {"leaky_relu", act_fwd, act_bwd},
    [GF_L_TANH] = {"tanh", act_fwd, act_bwd},
    [GF_L_DROPOUT] = {"dropout", act_fwd, act_bwd},
    [GF_L_UPSAMPLE] = {"upsample", resample_fwd, resample_bwd},
    [GF_L_AVGPOOL] = {"avgpool", resample_fwd, resample_bwd},
    [GF_L_RESADD] = {"residual_add", resadd_fwd, resadd_bwd},
};

const gf_layer_ops *gf_layer_ops_of(gf_layer_kind kind) {
  return (kind >= 0 && kind < GF_L_KIND_COUNT) ? &k_ops[kind] : NULL;
}
