/* net_r1.c - the R1 gradient penalty of a discriminator (gf_net_r1, gf/net.h;
 * Mescheder et al. 2018, StyleGAN's lazy R1) by double backpropagation over
 * the kernels library ops: a train-mode forward, a backward that keeps the
 * gradient wrt every layer's output, and a reverse-mode sweep over that
 * backward, which runs forward through the layers. Its scratch, which the
 * net owns, is net_r1_scratch.c. Not here: when and how often the GAN step
 * calls it (gan.c), its loss scaling.
 *
 * Notation: layer i maps a_i to a_{i+1} (a_0 = x, a_L = D(x)); g_i = dD/da_i
 * summed over samples (g_L = 1 per sample), so g_0 = grad_x D. The backward
 * is linear in g: g_i = J_i^T g_{i+1}, J_i = W_i (linear, conv; the SN-
 * normalized weight where the layer has spectral norm), diag(s(a_i)) (leaky
 * relu, relu: s piecewise constant, derivative 0 almost everywhere) or
 * diag(mask) / (1 - p) (dropout). P = (1/n) sum ||g_0||^2. The adjoint of
 * g_i in P is gbar_i: gbar_0 = dP/dg_0 = (2/n) g_0, gbar_{i+1} = J_i gbar_i
 * (the layer's forward map without bias), and a weight layer adds
 * dP/dW_i = the weight gradient of its op with input gbar_i and output
 * gradient g_{i+1}; biases get nothing (g does not depend on them), nor do
 * the activations a_i (s has derivative 0). With spectral norm that is the
 * gradient wrt w_sn, taken to weight_orig by gf_spectral_norm_bwd with the
 * forward's u, v, sigma (constants, as in the forward).
 *
 * Scaling without a scaling op: every g is linear in the backward's seed
 * and every parameter gradient is bilinear in (gbar, g). The seed is
 * k = 2^e (exact: every g is then exactly k times its value, barring
 * overflow) and gbar_0 = m (k g_0) with m = c / k^2 in (1/4, 1] applied by
 * gf_lerp towards a zero tensor ((1 - beta) x with one rounding), so the
 * gradients carry m k^2 = c = 2 scale / n, and P is the sum of squares
 * divided by n k^2 (exact in double).
 *
 * Residual blocks (the resnet's D): a block's input s feeds its first
 * layer and its shortcut; the backward adds the shortcut's J_sc^T g to the
 * gradient wrt s (as gf_net_backward does), and the sweep keeps gbar_s and
 * adds J_sc gbar_s at the block's add (upsampling and average pooling are
 * linear: their J is their forward; the shortcut's 1x1 convolution adds
 * its dP/dW with input its part of gbar). Blocks must not nest.
 * Class projection (conditional D): the logit's <embed[y], h> makes
 * g_{L-1} = W^T g_L + embed[y] g_L, so embed[y] is a weight whose dP/de_y
 * is the sum over the class's samples of g_L gbar_{L-1}. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "net_layers.h"
#include "net_r1_scratch.h"

/* A view on the net's device of n samples of per-sample shape s. */
static gf_status view(const gf_net *net, gf_tensor *t, const float *data, int64_t n, int ndim,
                      const int64_t *s, gf_err *err) {
  int64_t shape[GF_MAX_DIMS] = {n, 1, 1, 1};
  for (int i = 0; i < ndim; i++) shape[i + 1] = s[i];
  GF_TRY(gf_tensor_view(t, (void *)data, GF_F32, net->acts.device, ndim + 1, shape, err));
  t->device_index = net->acts.device_index;
  return GF_OK;
}
/* A view of shape[ndim] at data on the net's device. */
static gf_status flat(const gf_net *net, gf_tensor *t, const float *data, int ndim,
                      const int64_t *shape, gf_err *err) {
  GF_TRY(gf_tensor_view(t, (void *)data, GF_F32, net->acts.device, ndim, shape, err));
  t->device_index = net->acts.device_index;
  return GF_OK;
}

/* R1 needs every layer's backward to be linear in its output gradient with
 * a coefficient that is piecewise constant in the activations. */
static gf_status r1_supported(const gf_net *net, gf_err *err) {
  int last_add = -1;
  for (int i = 0; i < net->n_layers; i++) {
    const gf_layer *l = &net->layers[i];
    switch (l->kind) {
    case GF_L_LINEAR:
    case GF_L_CONV:
    case GF_L_RELU:
    case GF_L_LRELU:
    case GF_L_DROPOUT:
    case GF_L_UPSAMPLE:
    case GF_L_AVGPOOL: break;
    case GF_L_RESADD:
      if (l->skip_from <= last_add)
        return gf_fail(err, GF_EUNSUPPORTED, "net r1: the residual block ending at layer %d "
                       "nests in or overlaps the one ending at %d", i, last_add);
      last_add = i;
      break;
    case GF_L_BN:
      return gf_fail(err, GF_EUNSUPPORTED,
                     "net r1: layer %d is batch norm in train mode, which couples the samples "
                     "whose input gradients R1 penalizes one by one (a D for R1 has no batch "
                     "norm: dcgan with spectral_norm, or mlp)",
                     i);
    case GF_L_TANH:
      return gf_fail(err, GF_EUNSUPPORTED,
                     "net r1: layer %d is tanh, whose derivative is not piecewise constant "
                     "(the double backward handles linear, convolution, relu, leaky relu and "
                     "dropout layers)",
                     i);
    default:
      return gf_fail(err, GF_EUNSUPPORTED,
                     "net r1: layer %d (%s) is not supported (linear, convolution, relu, leaky "
                     "relu, dropout, upsampling, average pooling and residual add layers are)",
                     i, gf_layer_ops_of(l->kind)->name);
    }
  }
  return GF_OK;
}

/* The weight layer l's forward used: the parameter, or with spectral norm
 * w_sn (in acts, from that forward). */
static gf_status used_weight(const gf_net *net, const gf_layer *l, gf_tensor *w, gf_err *err) {
  const gf_tensor *p = &net->tensors[l->p_w].value;
  if (l->p_u < 0) {
    *w = *p;
    return GF_OK;
  }
  return flat(net, w, l->w_sn, p->ndim, p->shape, err);
}

/* g_i for i = L-1 .. 0 from the seed g_L = k: the layers' own backward
 * functions with no parameter gradients, each writing its dx into r->g[i]
 * (in place for element-wise layers). */
static gf_status r1_backward(gf_net *net, struct gf_net_r1 *r, gf_ctx *ctx, int64_t n, float k,
                             gf_err *err) {
  int L = net->n_layers;
  const gf_layer *last = &net->layers[L - 1];
  gf_tensor seed;
  GF_TRY(view(net, &seed, r->g[L], n, last->out_ndim, last->out, err));
  GF_TRY(gf_fill(ctx, &seed, k, err));
  for (int i = L - 1; i >= 0; i--) {
    gf_layer *l = &net->layers[i];
    gf_layer_io io;
    memset(&io, 0, sizeof io);
    const float *xbuf = i == 0 ? net->fwd_in.data : net->layers[i - 1].act;
    GF_TRY(view(net, &io.x, xbuf, n, l->in_ndim, l->in, err));
    GF_TRY(view(net, &io.y, l->act, n, l->out_ndim, l->out, err));
    GF_TRY(view(net, &io.dy, r->g[i + 1], n, l->out_ndim, l->out, err));
    GF_TRY(view(net, &io.dx, r->g[i], n, l->in_ndim, l->in, err));
    GF_TRY(gf_layer_ops_of(l->kind)->bwd(net, l, ctx, &io, false, GF_OVERWRITE, err));
    if (net->p_embed >= 0 && i == L - 1) /* + embed[y] g_L */
      GF_TRY(gf_net_projection_bwd(net, l, ctx, &io, false, GF_OVERWRITE, err));
    GF_TRY(gf_net_add_skip_grads(net, ctx, i, &io.dx, err));
  }
  return GF_OK;
}

/* dP/dW of weight layer l (input gbar, shape of its input; output gradient
 * g_{i+1}) added to its gradient, through spectral norm when it has it. */
static gf_status r1_weight_grad(gf_net *net, struct gf_net_r1 *r, gf_ctx *ctx, gf_layer *l,
                                const gf_tensor *gbar, const gf_tensor *gout, gf_err *err) {
  gf_param *p = &net->tensors[l->p_w];
  gf_tensor w, dw;
  GF_TRY(used_weight(net, l, &w, err));
  bool sn = l->p_u >= 0;
  if (sn) GF_TRY(flat(net, &dw, r->dw, p->value.ndim, p->value.shape, err));
  else dw = p->grad;
  gf_accum acc = sn ? GF_OVERWRITE : GF_ACCUMULATE;
  if (l->kind == GF_L_LINEAR) GF_TRY(gf_linear_bwd(ctx, gbar, &w, gout, NULL, &dw, NULL, acc, err));
  else GF_TRY(gf_conv2d_bwd(ctx, gbar, &w, gout, &l->conv, NULL, &dw, NULL, acc, err));
  if (!sn) return GF_OK;
  gf_tensor sigma;
  int64_t one = 1;
  GF_TRY(flat(net, &sigma, l->sigma, 1, &one, err));
  return gf_spectral_norm_bwd(ctx, &p->value, &net->tensors[l->p_u].value,
                              &net->tensors[l->p_v].value, &sigma, &dw, &p->grad, GF_ACCUMULATE,
                              err);
}

/* The projection's dP/dembed: the rows g_L[n] gbar_{L-1}[n] (in the
 * net's conditioning scratch) added to the rows of the samples' classes. */
static gf_status r1_embed_grad(gf_net *net, struct gf_net_r1 *r, gf_ctx *ctx, int64_t n,
                               const gf_tensor *gbar, gf_err *err) {
  int64_t f = net->layers[net->n_layers - 1].in_numel, rs[2] = {n, f}, ys[2] = {n, 1};
  gf_tensor b, gl, rows;
  GF_TRY(flat(net, &b, gbar->data, 2, rs, err));
  GF_TRY(flat(net, &gl, r->g[net->n_layers], 2, ys, err));
  GF_TRY(flat(net, &rows, net->cond_de, 2, rs, err));
  GF_TRY(gf_rowdot_bwd(ctx, &b, &b, &gl, &rows, NULL, GF_OVERWRITE, err));
  return gf_embedding_bwd(ctx, &net->labels, &rows, &net->tensors[net->p_embed].grad,
                          GF_ACCUMULATE, err);
}

/* A residual add in the sweep: gbar += J_sc gbar_s (gbar_s in r->save),
 * and the shortcut convolution's dP/dW (output gradient g_{i+1}, or for
 * conv-then-pool the pool's backward of it, which the backward left in
 * the layer's sc_dmid). */
static gf_status r1_resadd(gf_net *net, struct gf_net_r1 *r, gf_ctx *ctx, gf_layer *l, int i,
                           int64_t n, gf_tensor *in, gf_err *err) {
  int64_t s3[3], m3[3];
  gf_resadd_shapes(net, l, s3, m3);
  gf_tensor sv, mid, sco, gout, w;
  GF_TRY(view(net, &sv, r->save, n, 3, s3, err));
  if (l->sc == GF_SC_IDENTITY) return gf_add(ctx, in, &sv, in, err);
  GF_TRY(view(net, &mid, r->mid, n, 3, m3, err));
  GF_TRY(view(net, &sco, r->sco, n, l->out_ndim, l->out, err));
  GF_TRY(used_weight(net, l, &w, err));
  gf_pool_params p2 = gf_net_pool(2);
  if (l->sc == GF_SC_CONV_POOL) {
    GF_TRY(view(net, &gout, l->sc_dmid, n, 3, m3, err));
    GF_TRY(r1_weight_grad(net, r, ctx, l, &sv, &gout, err));
    GF_TRY(gf_conv2d_fwd(ctx, &sv, &w, NULL, &l->conv, &mid, err));
    GF_TRY(gf_avgpool2d_fwd(ctx, &mid, &p2, &sco, err));
  } else {
    if (l->sc == GF_SC_UP_CONV) GF_TRY(gf_upsample_nearest2x_fwd(ctx, &sv, &mid, err));
    else GF_TRY(gf_avgpool2d_fwd(ctx, &sv, &p2, &mid, err));
    GF_TRY(view(net, &gout, r->g[i + 1], n, l->out_ndim, l->out, err));
    GF_TRY(r1_weight_grad(net, r, ctx, l, &mid, &gout, err));
    GF_TRY(gf_conv2d_fwd(ctx, &mid, &w, NULL, &l->conv, &sco, err));
  }
  return gf_add(ctx, in, &sco, in, err);
}

/* Whether a residual block begins at layer i. */
static bool block_starts(const gf_net *net, int i) {
  for (int r = i + 1; r < net->n_layers; r++)
    if (net->layers[r].kind == GF_L_RESADD && net->layers[r].skip_from == i) return true;
  return false;
}

/* The sweep: gbar_0 = m g[0] (g[0] seeded by k), then forward through the
 * layers, adding each weight layer's dP/dW. */
static gf_status r1_sweep(gf_net *net, struct gf_net_r1 *r, gf_ctx *ctx, int64_t n, double m,
                          gf_err *err) {
  int L = net->n_layers, cur = 0;
  const gf_layer *first = &net->layers[0];
  gf_tensor g0, gbar;
  GF_TRY(view(net, &g0, r->g[0], n, first->in_ndim, first->in, err));
  GF_TRY(view(net, &gbar, r->gbar[0], n, first->in_ndim, first->in, err));
  GF_TRY(gf_fill(ctx, &gbar, 0.0f, err));
  GF_TRY(gf_lerp(ctx, &gbar, &g0, 1.0 - m, err)); /* (1 - beta) g0 + beta 0 */
  for (int i = 0; i < L; i++) {
    gf_layer *l = &net->layers[i];
    gf_tensor in, out, gout;
    GF_TRY(view(net, &in, r->gbar[cur], n, l->in_ndim, l->in, err));
    if (block_starts(net, i)) { /* gbar_s, for the block's shortcut */
      gf_tensor sv;
      GF_TRY(view(net, &sv, r->save, n, l->in_ndim, l->in, err));
      GF_TRY(gf_copy(ctx, &in, &sv, err));
    }
    switch (l->kind) {
    case GF_L_LINEAR:
    case GF_L_CONV: {
      GF_TRY(view(net, &gout, r->g[i + 1], n, l->out_ndim, l->out, err));
      GF_TRY(r1_weight_grad(net, r, ctx, l, &in, &gout, err));
      if (i == L - 1 && net->p_embed >= 0) GF_TRY(r1_embed_grad(net, r, ctx, n, &in, err));
      if (i == L - 1) break; /* gbar_L is not needed */
      gf_tensor w;
      GF_TRY(used_weight(net, l, &w, err));
      GF_TRY(view(net, &out, r->gbar[1 - cur], n, l->out_ndim, l->out, err));
      if (l->kind == GF_L_LINEAR) GF_TRY(gf_linear_fwd(ctx, &in, &w, NULL, &out, err));
      else GF_TRY(gf_conv2d_fwd(ctx, &in, &w, NULL, &l->conv, &out, err));
      cur = 1 - cur;
      break;
    }
    case GF_L_RELU:
    case GF_L_LRELU: { /* s(a_i) gbar_i, from the buffer's signs */
      gf_tensor a;
      GF_TRY(view(net, &a, net->layers[i - 1].act, n, l->in_ndim, l->in, err));
      if (l->kind == GF_L_RELU) GF_TRY(gf_relu_bwd(ctx, &a, &in, &in, err));
      else GF_TRY(gf_leaky_relu_bwd(ctx, &a, l->slope, &in, &in, err));
      break;
    }
    case GF_L_DROPOUT: /* the forward's mask, / (1 - p) */
      if (l->drop_applied) GF_TRY(gf_dropout_fwd(ctx, &in, l->drop_p, &l->drop_stream, &in, err));
      break;
    case GF_L_UPSAMPLE:
    case GF_L_AVGPOOL: { /* linear maps: J gbar is their forward */
      GF_TRY(view(net, &out, r->gbar[1 - cur], n, l->out_ndim, l->out, err));
      if (l->kind == GF_L_UPSAMPLE) GF_TRY(gf_upsample_nearest2x_fwd(ctx, &in, &out, err));
      else {
        gf_pool_params pp = gf_net_pool(l->pool_k);
        GF_TRY(gf_avgpool2d_fwd(ctx, &in, &pp, &out, err));
      }
      cur = 1 - cur;
      break;
    }
    case GF_L_RESADD: GF_TRY(r1_resadd(net, r, ctx, l, i, n, &in, err)); break;
    default: return gf_fail(err, GF_EUNSUPPORTED, "net r1: layer %d not supported", i);
    }
  }
  return GF_OK;
}

gf_status gf_net_r1(gf_net *net, gf_ctx *ctx, const gf_tensor *x, float scale, uint64_t seed,
                    int64_t step, int64_t sample0, int pass, double *penalty, gf_err *err) {
  if (!net || !net->layers || !ctx || !x) return gf_fail(err, GF_EINVAL, "net r1: NULL argument");
  if (!net->training)
    return gf_fail(err, GF_ESTATE, "net r1: built for inference (no gradient arenas)");
  if (!(scale >= 0.0f) || isinf(scale))
    return gf_fail(err, GF_EINVAL, "net r1: scale %g must be finite and >= 0", (double)scale);
  if (net->out_ndim != 1 || net->out_shape[0] != 1)
    return gf_fail(err, GF_EUNSUPPORTED, "net r1: needs one output per sample (a discriminator)");
  if (ctx->device != net->acts.device)
    return gf_fail(err, GF_EINVAL, "net r1: ctx is not on the net's device");
  GF_TRY(r1_supported(net, err));
  if (!net->r1) GF_TRY(gf_net_r1_alloc(net, &net->r1, err));
  struct gf_net_r1 *r = net->r1;
  gf_tensor y;
  GF_TRY(gf_net_forward(net, ctx, x, GF_MODE_TRAIN, seed, step, sample0, pass, &y, err));
  int64_t n = net->fwd_batch;
  /* c = k^2 m, k = 2^e >= 1, m in (1/4, 1] (c <= 1: k = 1, m = c). */
  double c = 2.0 * (double)scale / (double)n, k = 1.0;
  while (c / (k * k) > 1.0) k *= 2.0;
  double m = c / (k * k);
  GF_TRY(r1_backward(net, r, ctx, n, (float)k, err));
  if (c > 0.0) GF_TRY(r1_sweep(net, r, ctx, n, m, err));
  if (!penalty) return GF_OK;
  /* sum g_0^2 as the weight gradient of a [1, 1] linear layer whose input
   * and output gradient are g_0 viewed [M, 1] */
  int64_t mflat[2] = {n * net->layers[0].in_numel, 1}, one[2] = {1, 1};
  gf_tensor g0, w1, dot, hdot;
  GF_TRY(flat(net, &g0, r->g[0], 2, mflat, err));
  GF_TRY(flat(net, &w1, r->one, 2, one, err));
  GF_TRY(flat(net, &dot, r->dot, 2, one, err));
  GF_TRY(gf_linear_bwd(ctx, &g0, &w1, &g0, NULL, &dot, NULL, GF_OVERWRITE, err));
  float h = 0.0f;
  GF_TRY(gf_tensor_view(&hdot, &h, GF_F32, GF_DEV_CPU, 2, one, err));
  GF_TRY(gf_tensor_copy(&hdot, &dot, err));
  *penalty = (double)h / ((double)n * k * k);
  return GF_OK;
}
