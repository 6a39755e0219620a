/* net_build.c - the layer builder of gf_net (net_layers.h): each gf_nb_*
 * call appends one layer after the current last one, takes its input shape
 * from it and registers the layer's parameters (names, shapes, kinds);
 * net.c sizes and carves the arenas afterwards. */
#include <string.h>

#include "gf/text.h"
#include "net_layers.h"

/* ---- builder --------------------------------------------------------------- */

/* Per-sample shape of the current last output (the net input when empty). */
static void prev_shape(const gf_net *net, int *ndim, int64_t s[3]) {
  if (net->n_layers == 0) {
    *ndim = net->in_ndim;
    memcpy(s, net->in_shape, sizeof net->in_shape);
  } else {
    const gf_layer *l = &net->layers[net->n_layers - 1];
    *ndim = l->out_ndim;
    memcpy(s, l->out, sizeof l->out);
  }
}

static int64_t numel_of(int ndim, const int64_t *s) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= s[i];
  return n;
}

static gf_status new_layer(gf_net *net, gf_layer_kind kind, gf_layer **out,
                           gf_err *err) {
  if (net->n_layers >= GF_NET_MAX_LAYERS)
    return gf_fail(err, GF_EINVAL, "net: more than %d layers", GF_NET_MAX_LAYERS);
  gf_layer *l = &net->layers[net->n_layers];
  memset(l, 0, sizeof *l);
  l->kind = kind;
  l->p_w = l->p_b = l->p_gamma = l->p_beta = l->p_rmean = l->p_rvar = -1;
  l->p_u = l->p_v = -1;
  l->p_gw = l->p_gb = l->p_bw = l->p_bb = -1;
  prev_shape(net, &l->in_ndim, l->in);
  *out = l;
  return GF_OK;
}

/* Registers tensor "<g|d>.<module>.<suffix>" (module "main.<n_layers>",
 * the layer being added, when NULL); net.c carves its memory later. */
gf_status gf_nb_tensor(gf_net *net, const char *module, const char *suffix, gf_param_kind kind,
                       int ndim, const int64_t *shape, int *index, gf_err *err) {
  if (net->n_tensors >= GF_NET_MAX_TENSORS)
    return gf_fail(err, GF_EINVAL, "net: more than %d tensors", GF_NET_MAX_TENSORS);
  gf_param *p = &net->tensors[net->n_tensors];
  memset(p, 0, sizeof *p);
  char r = net->role == GF_NET_G ? 'g' : 'd';
  if (module)
    GF_TRY(gf_format(p->name, sizeof p->name, err, "net: parameter name", "%c.%s.%s", r,
                     module, suffix));
  else
    GF_TRY(gf_format(p->name, sizeof p->name, err, "net: parameter name", "%c.main.%d.%s", r,
                     net->n_layers, suffix));
  p->kind = kind;
  p->trainable = kind != GF_PARAM_BN_RUNNING_MEAN && kind != GF_PARAM_BN_RUNNING_VAR &&
                 kind != GF_PARAM_SN_U && kind != GF_PARAM_SN_V;
  p->value.ndim = ndim;
  for (int i = 0; i < GF_MAX_DIMS; i++) p->value.shape[i] = i < ndim ? shape[i] : 1;
  if (p->trainable) net->n_trainable += numel_of(ndim, shape);
  else net->n_bn_stats += numel_of(ndim, shape);
  *index = net->n_tensors++;
  return GF_OK;
}

static gf_status add_tensor(gf_net *net, const char *suffix, gf_param_kind kind,
                            int ndim, const int64_t *shape, int *index,
                            gf_err *err) {
  return gf_nb_tensor(net, NULL, suffix, kind, ndim, shape, index, err);
}

/* Registers the weight of layer l: "weight", or with spectral norm (a D
 * of a config with spectral_norm) "weight_orig" and its vectors. */
static gf_status add_weight(gf_net *net, gf_layer *l, int ndim, const int64_t *ws,
                            int64_t fan_in, int64_t fan_out, gf_err *err) {
  bool sn = net->role == GF_NET_D && net->cfg.spectral_norm;
  GF_TRY(add_tensor(net, sn ? "weight_orig" : "weight", GF_PARAM_WEIGHT, ndim, ws, &l->p_w, err));
  net->tensors[l->p_w].fan_in = fan_in;
  net->tensors[l->p_w].fan_out = fan_out;
  if (!sn) return GF_OK;
  int64_t r = ws[0], k = numel_of(ndim, ws) / ws[0];
  GF_TRY(add_tensor(net, "weight_u", GF_PARAM_SN_U, 1, &r, &l->p_u, err));
  return add_tensor(net, "weight_v", GF_PARAM_SN_V, 1, &k, &l->p_v, err);
}

gf_status gf_nb_linear(gf_net *net, int64_t out_features, bool bias, gf_err *err) {
  gf_layer *l = NULL;
  GF_TRY(new_layer(net, GF_L_LINEAR, &l, err));
  int64_t in = numel_of(l->in_ndim, l->in);
  l->in_ndim = 1;
  l->in[0] = in;
  l->in[1] = l->in[2] = 1;
  l->out_ndim = 1;
  l->out[0] = out_features;
  l->out[1] = l->out[2] = 1;
  int64_t ws[2] = {out_features, in};
  GF_TRY(add_weight(net, l, 2, ws, in, out_features, err));
  if (bias) GF_TRY(add_tensor(net, "bias", GF_PARAM_BIAS, 1, &out_features, &l->p_b, err));
  net->n_layers++;
  return GF_OK;
}

gf_status gf_nb_conv(gf_net *net, bool transposed, int64_t cout, int k,
                     int stride, int pad, gf_err *err) {
  gf_layer *l = NULL;
  GF_TRY(new_layer(net, transposed ? GF_L_DECONV : GF_L_CONV, &l, err));
  if (l->in_ndim == 1) { /* a vector (z) seen as [F, 1, 1] */
    l->in[1] = l->in[2] = 1;
  }
  l->in_ndim = 3;
  int64_t cin = l->in[0], h = l->in[1], w = l->in[2];
  int64_t oh, ow;
  if (transposed) {
    oh = (h - 1) * stride - 2 * pad + k;
    ow = (w - 1) * stride - 2 * pad + k;
  } else {
    oh = (h + 2 * pad - k) / stride + 1;
    ow = (w + 2 * pad - k) / stride + 1;
  }
  if (oh < 1 || ow < 1)
    return gf_fail(err, GF_EINVAL, "net: layer %d: %lldx%lld input too small for a %dx%d kernel",
                   net->n_layers, (long long)h, (long long)w, k, k);
  l->out_ndim = 3;
  l->out[0] = cout;
  l->out[1] = oh;
  l->out[2] = ow;
  l->conv = (gf_conv_params){{stride, stride}, {pad, pad}, {0, 0}};
  int64_t ws[4] = {transposed ? cin : cout, transposed ? cout : cin, k, k};
  if (transposed && net->role == GF_NET_D && net->cfg.spectral_norm)
    return gf_fail(err, GF_EUNSUPPORTED, "net: spectral norm of a transposed convolution");
  GF_TRY(add_weight(net, l, 4, ws, cin * k * k, cout * k * k, err));
  net->n_layers++;
  return GF_OK;
}

gf_status gf_nb_bn(gf_net *net, gf_err *err) {
  gf_layer *l = NULL;
  GF_TRY(new_layer(net, GF_L_BN, &l, err));
  l->out_ndim = l->in_ndim;
  memcpy(l->out, l->in, sizeof l->in);
  int64_t c = l->in[0];
  if (net->role == GF_NET_G && net->cfg.num_classes > 0) {
    /* conditional: BN without affine, gain and bias from the embedding */
    int64_t ws[2] = {c, GF_COND_EMBED_DIM};
    GF_TRY(add_tensor(net, "gain.weight", GF_PARAM_WEIGHT, 2, ws, &l->p_gw, err));
    GF_TRY(add_tensor(net, "gain.bias", GF_PARAM_CBN_GAIN_BIAS, 1, &c, &l->p_gb, err));
    GF_TRY(add_tensor(net, "bias.weight", GF_PARAM_WEIGHT, 2, ws, &l->p_bw, err));
    GF_TRY(add_tensor(net, "bias.bias", GF_PARAM_BIAS, 1, &c, &l->p_bb, err));
    for (int i = 0; i < 2; i++) {
      gf_param *w = &net->tensors[i ? l->p_bw : l->p_gw];
      w->fan_in = GF_COND_EMBED_DIM;
      w->fan_out = c;
    }
  } else {
    GF_TRY(add_tensor(net, "weight", GF_PARAM_BN_WEIGHT, 1, &c, &l->p_gamma, err));
    GF_TRY(add_tensor(net, "bias", GF_PARAM_BN_BIAS, 1, &c, &l->p_beta, err));
  }
  GF_TRY(add_tensor(net, "running_mean", GF_PARAM_BN_RUNNING_MEAN, 1, &c, &l->p_rmean, err));
  GF_TRY(add_tensor(net, "running_var", GF_PARAM_BN_RUNNING_VAR, 1, &c, &l->p_rvar, err));
  net->n_layers++;
  return GF_OK;
}

gf_status gf_nb_act(gf_net *net, gf_layer_kind kind, float arg, gf_err *err) {
  if (kind != GF_L_RELU && kind != GF_L_LRELU && kind != GF_L_TANH && kind != GF_L_DROPOUT)
    return gf_fail(err, GF_EINVAL, "net: kind %d is not element-wise", (int)kind);
  if (net->n_layers == 0)
    return gf_fail(err, GF_EINVAL, "net: an element-wise layer cannot come first");
  gf_layer *l = NULL;
  GF_TRY(new_layer(net, kind, &l, err));
  l->out_ndim = l->in_ndim;
  memcpy(l->out, l->in, sizeof l->in);
  l->in_place = true;
  if (kind == GF_L_LRELU) l->slope = arg;
  if (kind == GF_L_DROPOUT) l->drop_p = arg;
  net->n_layers++;
  return GF_OK;
}


gf_status gf_nb_act_copy(gf_net *net, gf_layer_kind kind, float arg, gf_err *err) {
  GF_TRY(gf_nb_act(net, kind, arg, err));
  if (kind == GF_L_TANH || kind == GF_L_DROPOUT) /* their backward reads y */
    return gf_fail(err, GF_EINVAL, "net: only relu / leaky relu layers can copy");
  net->layers[net->n_layers - 1].in_place = false;
  return GF_OK;
}

gf_status gf_nb_linear_map(gf_net *net, int64_t c, int64_t h, int64_t w, gf_err *err) {
  GF_TRY(gf_nb_linear(net, c * h * w, true, err));
  gf_layer *l = &net->layers[net->n_layers - 1];
  l->out_ndim = 3;
  l->out[0] = c;
  l->out[1] = h;
  l->out[2] = w;
  return GF_OK;
}

/* A new layer of kind over a [C,H,W] input (GF_EINVAL otherwise). */
static gf_status new_spatial(gf_net *net, gf_layer_kind kind, gf_layer **out, gf_err *err) {
  GF_TRY(new_layer(net, kind, out, err));
  if ((*out)->in_ndim != 3)
    return gf_fail(err, GF_EINVAL, "net: layer %d needs a [C, H, W] input", net->n_layers);
  (*out)->out_ndim = 3;
  memcpy((*out)->out, (*out)->in, sizeof (*out)->in);
  return GF_OK;
}

gf_status gf_nb_upsample(gf_net *net, gf_err *err) {
  gf_layer *l = NULL;
  GF_TRY(new_spatial(net, GF_L_UPSAMPLE, &l, err));
  l->out[1] *= 2;
  l->out[2] *= 2;
  net->n_layers++;
  return GF_OK;
}

gf_status gf_nb_avgpool(gf_net *net, int k, gf_err *err) {
  gf_layer *l = NULL;
  GF_TRY(new_spatial(net, GF_L_AVGPOOL, &l, err));
  if (k < 1 || l->in[1] % k || l->in[2] % k)
    return gf_fail(err, GF_EINVAL, "net: layer %d: a %dx%d pool of a %lldx%lld map", net->n_layers,
                   k, k, (long long)l->in[1], (long long)l->in[2]);
  l->pool_k = k;
  l->out[1] /= k;
  l->out[2] /= k;
  net->n_layers++;
  return GF_OK;
}

gf_status gf_nb_resadd(gf_net *net, int skip_from, gf_shortcut sc, gf_err *err) {
  if (skip_from < 0 || skip_from >= net->n_layers)
    return gf_fail(err, GF_EINVAL, "net: residual block start %d outside [0, %d)", skip_from,
                   net->n_layers);
  const gf_layer *first = &net->layers[skip_from];
  if (first->in_place) /* the only layer that reads the block's input */
    return gf_fail(err, GF_EINVAL, "net: layer %d would overwrite its residual block's input",
                   skip_from);
  int64_t s[3];
  memcpy(s, first->in, sizeof s);
  if (first->in_ndim != 3)
    return gf_fail(err, GF_EINVAL, "net: a residual block needs a [C, H, W] input");
  gf_layer *l = NULL;
  GF_TRY(new_spatial(net, GF_L_RESADD, &l, err));
  l->in_place = true;
  l->skip_from = skip_from;
  l->sc = sc;
  l->skip_numel = numel_of(3, s);
  int64_t mh = s[1], mw = s[2], mc = s[0]; /* the intermediate's shape */
  int64_t eh = s[1], ew = s[2];           /* the shortcut output's */
  switch (sc) {
  case GF_SC_IDENTITY: break;
  case GF_SC_UP_CONV: mh = eh = 2 * s[1]; mw = ew = 2 * s[2]; break;
  case GF_SC_POOL_CONV: mh = eh = s[1] / 2; mw = ew = s[2] / 2; break;
  case GF_SC_CONV_POOL: mc = l->out[0]; eh = s[1] / 2; ew = s[2] / 2; break;
  default: return gf_fail(err, GF_EINVAL, "net: unknown shortcut %d", (int)sc);
  }
  if (sc == GF_SC_IDENTITY && memcmp(s, l->in, sizeof s) != 0)
    return gf_fail(err, GF_EINVAL, "net: an identity shortcut needs the block's output shape");
  if (sc != GF_SC_IDENTITY && (eh != l->in[1] || ew != l->in[2]))
    return gf_fail(err, GF_EINVAL, "net: layer %d: the shortcut gives %lldx%lld, the block "
                   "%lldx%lld", net->n_layers, (long long)eh, (long long)ew,
                   (long long)l->in[1], (long long)l->in[2]);
  l->mid_numel = sc == GF_SC_IDENTITY ? 0 : mc * mh * mw;
  if (sc != GF_SC_IDENTITY) {
    int64_t ws[4] = {l->out[0], s[0], 1, 1};
    l->conv = (gf_conv_params){{1, 1}, {0, 0}, {0, 0}};
    GF_TRY(add_weight(net, l, 4, ws, s[0], l->out[0], err));
  }
  net->n_layers++;
  return GF_OK;
}
