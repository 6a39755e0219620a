/* net.c - gf_net (gf/net.h): sizing and carving of the arenas, and the
 * forward / backward / Adam drivers that walk the layer table. The layer
 * builder is in net_build.c, the per-kind arithmetic in net_layers.c;
 * which layers a network has is in net_mlp.c, net_dcgan.c and
 * net_resnet.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gf/text.h"
#include "net_layers.h"

/* Per-sample numel of dims s. */
static int64_t numel_of(int ndim, const int64_t *s) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= s[i];
  return n;
}

/* ---- arenas ------------------------------------------------------------------ */

static gf_status arena_init(gf_arena *a, gf_ctx *ctx, size_t bytes, gf_err *err) {
  if (bytes == 0) return GF_OK; /* stays zeroed: an empty arena */
  GF_TRY(gf_arena_init_on(a, ctx->device, ctx->device_index, bytes, err));
  return GF_OK;
}

static gf_status carve(gf_arena *a, gf_tensor *t, const gf_tensor *like, gf_err *err) {
  GF_TRY(gf_arena_tensor(a, t, GF_F32, like->ndim, like->shape, err));
  t->device_index = a->device_index;
  return GF_OK;
}

/* A flat carve of n floats; returns the pointer in *p. */
static gf_status carve_floats(gf_arena *a, int64_t n, float **p, gf_err *err) {
  gf_tensor t;
  GF_TRY(gf_arena_tensor(a, &t, GF_F32, 1, &n, err));
  *p = t.data;
  return GF_OK;
}

static size_t fbytes(int64_t n) { return gf_arena_slot_bytes((size_t)n * sizeof(float)); }

/* Width of a conditional net's embedding rows: G's shared embedding, D's
 * projection (the numel of its last layer's input); 0 unconditional. */
static int64_t cond_width(const gf_net *net) {
  if (net->p_embed < 0) return 0;
  return net->tensors[net->p_embed].value.shape[1];
}

/* Sizes every arena from the registered tensors and layers, allocates them
 * and carves the views. grads/adam_m/adam_v are carved in the same order
 * as params, so each has params' layout byte for byte. */
static gf_status allocate(gf_net *net, gf_ctx *ctx, gf_err *err) {
  size_t pbytes = 0, sbytes = 0, abytes = 0;
  const gf_net *w = net->weights_of; /* NULL: the net's own parameters */
  int64_t maxn = numel_of(net->in_ndim, net->in_shape);
  for (int i = 0; i < net->n_tensors; i++) {
    gf_param *p = &net->tensors[i];
    size_t b = fbytes(gf_tensor_numel(&p->value));
    if (p->trainable) pbytes += b;
    else sbytes += b;
  }
  int64_t mb = net->max_batch, max_w = 0, max_c = 0;
  int64_t cond_dim = cond_width(net);
  for (int i = 0; i < net->n_layers; i++) {
    gf_layer *l = &net->layers[i];
    l->in_numel = numel_of(l->in_ndim, l->in);
    l->out_numel = numel_of(l->out_ndim, l->out);
    if (l->out_numel > maxn) maxn = l->out_numel;
    if (!l->in_place) abytes += fbytes(mb * l->out_numel);
    if (l->kind == GF_L_BN) abytes += 2 * fbytes(l->out[0]);
    if (l->p_gw >= 0) {
      abytes += fbytes(mb * l->out_numel) + 2 * fbytes(mb * l->out[0]);
      if (l->out[0] > max_c) max_c = l->out[0];
    }
    if (l->p_u >= 0) {
      int64_t wn = gf_tensor_numel(&net->tensors[l->p_w].value);
      abytes += fbytes(wn) + fbytes(1);
      if (wn > max_w) max_w = wn;
    }
    if (l->kind == GF_L_RESADD) {
      if (l->mid_numel > 0) abytes += fbytes(mb * l->mid_numel) + fbytes(mb * l->out_numel);
      if (net->training)
        abytes += fbytes(mb * l->skip_numel) + (l->mid_numel > 0 ? fbytes(mb * l->mid_numel) : 0);
    }
  }
  if (net->training && max_w > 0) abytes += fbytes(max_w);
  if (cond_dim > 0) {
    abytes += fbytes(mb * cond_dim); /* cond_e */
    if (net->training)
      abytes += fbytes(mb * maxn) + 2 * fbytes(mb * (max_c > 0 ? max_c : 1)) +
                fbytes(mb * cond_dim);
  }
  /* The backward's ping-pong buffers: only a net built for training gets
   * them (an inference net's forward never touches them, and at
   * max_batch 64 they are 40 % of a dcgan28 G's activations). */
  if (net->training) abytes += 2 * fbytes(mb * maxn);
  if (mb == 0) abytes = 0; /* weights alone: no activations */
  if (!w) {
    GF_TRY(arena_init(&net->params, ctx, pbytes, err));
    GF_TRY(arena_init(&net->bn_stats, ctx, sbytes, err));
  }
  GF_TRY(arena_init(&net->acts, ctx, abytes, err));
  /* an empty acts arena still names the net's device (check_io, view) */
  net->acts.device = ctx->device;
  net->acts.device_index = ctx->device_index;
  if (net->training) {
    GF_TRY(arena_init(&net->grads, ctx, pbytes, err));
    GF_TRY(arena_init(&net->adam_m, ctx, pbytes, err));
    GF_TRY(arena_init(&net->adam_v, ctx, pbytes, err));
  }
  for (int i = 0; i < net->n_tensors; i++) {
    gf_param *p = &net->tensors[i];
    gf_tensor shape = p->value;
    if (w) { /* a view of the other net's tensor (same layers, same shape) */
      p->value = w->tensors[i].value;
      p->value.owns = false;
      continue;
    }
    if (!p->trainable) {
      GF_TRY(carve(&net->bn_stats, &p->value, &shape, err));
      continue;
    }
    GF_TRY(carve(&net->params, &p->value, &shape, err));
    if (net->training) {
      GF_TRY(carve(&net->grads, &p->grad, &shape, err));
      GF_TRY(carve(&net->adam_m, &p->adam_m, &shape, err));
      GF_TRY(carve(&net->adam_v, &p->adam_v, &shape, err));
    }
  }
  if (mb == 0) return GF_OK;
  for (int i = 0; i < net->n_layers; i++) {
    gf_layer *l = &net->layers[i];
    if (l->in_place) l->act = net->layers[i - 1].act;
    else GF_TRY(carve_floats(&net->acts, mb * l->out_numel, &l->act, err));
    if (l->kind == GF_L_BN) {
      GF_TRY(carve_floats(&net->acts, l->out[0], &l->save_mean, err));
      GF_TRY(carve_floats(&net->acts, l->out[0], &l->save_var, err));
    }
    if (l->p_u >= 0) {
      GF_TRY(carve_floats(&net->acts, gf_tensor_numel(&net->tensors[l->p_w].value), &l->w_sn,
                          err));
      GF_TRY(carve_floats(&net->acts, 1, &l->sigma, err));
    }
    if (l->kind == GF_L_RESADD) {
      if (l->mid_numel > 0) {
        GF_TRY(carve_floats(&net->acts, mb * l->mid_numel, &l->sc_mid, err));
        GF_TRY(carve_floats(&net->acts, mb * l->out_numel, &l->sc_out, err));
      }
      if (net->training) {
        GF_TRY(carve_floats(&net->acts, mb * l->skip_numel, &l->skip_grad, err));
        if (l->mid_numel > 0)
          GF_TRY(carve_floats(&net->acts, mb * l->mid_numel, &l->sc_dmid, err));
      }
    }
    if (l->p_gw >= 0) {
      GF_TRY(carve_floats(&net->acts, mb * l->out_numel, &l->xhat, err));
      GF_TRY(carve_floats(&net->acts, mb * l->out[0], &l->cgain, err));
      GF_TRY(carve_floats(&net->acts, mb * l->out[0], &l->cbias, err));
    }
  }
  if (cond_dim > 0) {
    GF_TRY(carve_floats(&net->acts, mb * cond_dim, &net->cond_e, err));
    if (net->training) {
      GF_TRY(carve_floats(&net->acts, mb * maxn, &net->cond_dx, err));
      GF_TRY(carve_floats(&net->acts, mb * (max_c > 0 ? max_c : 1), &net->cond_dg, err));
      GF_TRY(carve_floats(&net->acts, mb * (max_c > 0 ? max_c : 1), &net->cond_db, err));
      GF_TRY(carve_floats(&net->acts, mb * cond_dim, &net->cond_de, err));
    }
  }
  if (net->training) {
    GF_TRY(carve_floats(&net->acts, mb * maxn, &net->dbuf[0], err));
    GF_TRY(carve_floats(&net->acts, mb * maxn, &net->dbuf[1], err));
    if (max_w > 0) GF_TRY(carve_floats(&net->acts, max_w, &net->sn_dw, err));
  }
  return GF_OK;
}

/* Running mean 0, running var 1 (PyTorch's reset_running_stats); spectral
 * norm vectors 0 until gf_net_init_params draws them. */
static void reset_bn_stats(gf_net *net) {
  for (int i = 0; i < net->n_tensors; i++) {
    gf_param *p = &net->tensors[i];
    if (p->trainable) continue;
    float v = p->kind == GF_PARAM_BN_RUNNING_VAR ? 1.0f : 0.0f;
    float *d = p->value.data;
    for (int64_t j = 0; j < gf_tensor_numel(&p->value); j++) d[j] = v;
  }
}

/* gf_net_init, or with weights (another built net of the same config and
 * role) gf_net_init_shared: the parameters are then views of its. */
static gf_status build(gf_net *net, gf_ctx *ctx, const gf_model_config *cfg,
                       gf_net_role role, int max_batch, bool training,
                       const gf_net *weights, gf_err *err) {
  if (!net) return gf_fail(err, GF_EINVAL, "net: NULL net");
  memset(net, 0, sizeof *net);
  if (!ctx || !ctx->ops || !cfg) return gf_fail(err, GF_EINVAL, "net: NULL ctx or config");
  GF_TRY(gf_model_config_validate(cfg, err));
  if (role != GF_NET_G && role != GF_NET_D)
    return gf_fail(err, GF_EINVAL, "net: unknown role %d", (int)role);
  /* 0: weights alone (gf_net_init_shared's source), never for training */
  if (max_batch < (training || weights ? 1 : 0) || max_batch > (1 << 20))
    return gf_fail(err, GF_EINVAL, "net: max_batch %d outside [%d, 2^20]", max_batch,
                   training || weights ? 1 : 0);
  net->cfg = *cfg;
  net->p_embed = -1;
  net->role = role;
  net->max_batch = max_batch;
  net->training = training;
  net->weights_of = weights;
  net->layers = calloc(GF_NET_MAX_LAYERS, sizeof *net->layers);
  if (!net->layers) return gf_fail(err, GF_ENOMEM, "net: out of memory");
  if (role == GF_NET_G) {
    net->in_ndim = 1;
    net->in_shape[0] = cfg->z_dim;
    net->in_shape[1] = net->in_shape[2] = 1;
  } else {
    net->in_ndim = 3;
    net->in_shape[0] = cfg->image_channels;
    net->in_shape[1] = cfg->image_height;
    net->in_shape[2] = cfg->image_width;
  }
  switch (cfg->architecture) {
  case GF_ARCH_MLP: GF_TRY(gf_mlp_build(net, err)); break;
  case GF_ARCH_DCGAN: GF_TRY(gf_dcgan_build(net, err)); break;
  case GF_ARCH_RESNET: GF_TRY(gf_resnet_build(net, err)); break;
  case GF_ARCH_STYLEGAN2:
    return gf_fail(err, GF_EUNSUPPORTED, "net: stylegan2 is not a gf_net (gf/sg2_net.h)");
  }
  if (net->n_layers == 0) return gf_fail(err, GF_EINVAL, "net: no layers");
  if (cfg->num_classes > 0) { /* the class embedding, after the layers */
    const gf_layer *lastl = &net->layers[net->n_layers - 1];
    int64_t es[2] = {cfg->num_classes,
                     role == GF_NET_G ? GF_COND_EMBED_DIM : numel_of(lastl->in_ndim, lastl->in)};
    GF_TRY(gf_nb_tensor(net, role == GF_NET_G ? "shared" : "embed", "weight", GF_PARAM_EMBED,
                        2, es, &net->p_embed, err));
  }
  const gf_layer *last = &net->layers[net->n_layers - 1];
  if (role == GF_NET_G) {
    net->out_ndim = 3;
    net->out_shape[0] = cfg->image_channels;
    net->out_shape[1] = cfg->image_height;
    net->out_shape[2] = cfg->image_width;
  } else {
    net->out_ndim = 1;
    net->out_shape[0] = 1;
    net->out_shape[1] = net->out_shape[2] = 1;
  }
  if (numel_of(last->out_ndim, last->out) != numel_of(net->out_ndim, net->out_shape))
    return gf_fail(err, GF_EINVAL, "net: the last layer yields %lld values per sample, not %lld",
                   (long long)numel_of(last->out_ndim, last->out),
                   (long long)numel_of(net->out_ndim, net->out_shape));
  if (weights && weights->n_tensors != net->n_tensors)
    return gf_fail(err, GF_EINVAL, "net: the weights' net has %d tensors, this one %d",
                   weights->n_tensors, net->n_tensors);
  GF_TRY(allocate(net, ctx, err));
  if (weights) return GF_OK; /* the other net's values, untouched */
  if (ctx->device == GF_DEV_CPU) {
    reset_bn_stats(net);
    return GF_OK;
  }
  for (int i = 0; i < net->n_tensors; i++) { /* device: the same values */
    gf_param *p = &net->tensors[i];
    if (!p->trainable)
      GF_TRY(gf_fill(ctx, &p->value, p->kind == GF_PARAM_BN_RUNNING_VAR ? 1.0f : 0.0f, err));
  }
  return gf_ctx_sync(ctx, err);
}

gf_status gf_net_init(gf_net *net, gf_ctx *ctx, const gf_model_config *cfg,
                      gf_net_role role, int max_batch, bool training, gf_err *err) {
  return build(net, ctx, cfg, role, max_batch, training, NULL, err);
}

gf_status gf_net_init_shared(gf_net *net, gf_ctx *ctx, const gf_net *weights, int max_batch,
                             gf_err *err) {
  if (net) memset(net, 0, sizeof *net);
  if (!weights || !weights->layers || !ctx)
    return gf_fail(err, GF_EINVAL, "net: NULL or unbuilt weights, or NULL ctx");
  if (weights->weights_of)
    return gf_fail(err, GF_EINVAL, "net: the weights' net shares another's: give that one");
  if (weights->acts.device != ctx->device || weights->acts.device_index != ctx->device_index)
    return gf_fail(err, GF_EINVAL, "net: the weights are not on the ctx's device");
  return build(net, ctx, &weights->cfg, weights->role, max_batch, false, weights, err);
}

void gf_net_free(gf_net *net) {
  if (!net) return;
  gf_arena_free(&net->params);
  gf_arena_free(&net->grads);
  gf_arena_free(&net->adam_m);
  gf_arena_free(&net->adam_v);
  gf_arena_free(&net->bn_stats);
  gf_arena_free(&net->acts);
  gf_net_sync_free(net->sync);
  gf_net_r1_free(net->r1);
  free(net->layers);
  memset(net, 0, sizeof *net);
}

static void zero_arena(gf_arena *a) {
  if (a->base) memset(a->base, 0, a->used);
}

/* A 1-D view of the used part of a (on its device), for whole-arena
 * copies. */
static gf_status arena_all(const gf_arena *a, gf_tensor *t, gf_err *err) {
  GF_TRY(gf_arena_view_all(a, t, err));
  t->device_index = a->device_index;
  return GF_OK;
}

static gf_status init_params_host(gf_net *net, uint64_t seed, gf_err *err);

/* Device nets: the same initialisation, run on host copies of the params
 * and bn_stats arenas (same layout), then copied over; grads and moments
 * are zeroed by copying zeros. Temporaries are freed before returning. */
static gf_status init_params_device(gf_net *net, uint64_t seed, gf_err *err) {
  size_t big = net->params.used;
  if (net->bn_stats.used > big) big = net->bn_stats.used;
  float *hp = calloc(1, net->params.used + 64), *hs = calloc(1, net->bn_stats.used + 64);
  float *zeros = calloc(1, big + 64);
  gf_param saved[GF_NET_MAX_TENSORS];
  memcpy(saved, net->tensors, sizeof saved);
  gf_status st = GF_OK;
  if (!hp || !hs || !zeros) st = gf_fail(err, GF_ENOMEM, "net: out of memory");
  for (int i = 0; st == GF_OK && i < net->n_tensors; i++) { /* point at host copies */
    gf_param *p = &net->tensors[i];
    gf_arena *a = p->trainable ? &net->params : &net->bn_stats;
    char *host = (char *)(p->trainable ? hp : hs);
    p->value.data = host + ((char *)p->value.data - (char *)a->base);
    p->value.device = GF_DEV_CPU;
    p->value.device_index = 0;
  }
  if (st == GF_OK) st = init_params_host(net, seed, err);
  memcpy(net->tensors, saved, sizeof saved);
  gf_arena *arenas[5] = {&net->params, &net->bn_stats, &net->grads, &net->adam_m, &net->adam_v};
  const float *src[5] = {hp, hs, zeros, zeros, zeros};
  for (int i = 0; st == GF_OK && i < 5; i++) {
    if (!arenas[i]->base || arenas[i]->used == 0) continue;
    gf_tensor d, h;
    st = arena_all(arenas[i], &d, err);
    if (st == GF_OK)
      st = gf_tensor_view(&h, (void *)src[i], GF_F32, GF_DEV_CPU, d.ndim, d.shape, err);
    if (st == GF_OK) st = gf_tensor_copy(&d, &h, err);
  }
  free(hp);
  free(hs);
  free(zeros);
  return st;
}

gf_status gf_net_init_params(gf_net *net, uint64_t seed, gf_err *err) {
  if (!net || !net->layers) return gf_fail(err, GF_EINVAL, "net: not built");
  if (net->weights_of)
    return gf_fail(err, GF_ESTATE, "net: its parameters are another net's (gf_net_init_shared)");
  net->fwd_batch = 0;
  if (net->params.base && net->params.device != GF_DEV_CPU)
    return init_params_device(net, seed, err);
  return init_params_host(net, seed, err);
}

/* Spectral norm vectors: u and v each N(0, 1) from stream (seed, INIT_D,
 * 0, tensor index), normalized (in double, rounded once), as
 * torch.nn.utils.spectral_norm draws them (normalize(randn)). */
static void sn_init(gf_net *net, uint64_t seed) {
  for (int t = 0; t < net->n_tensors; t++) {
    gf_param *p = &net->tensors[t];
    if (p->kind != GF_PARAM_SN_U && p->kind != GF_PARAM_SN_V) continue;
    float *d = p->value.data;
    int64_t n = gf_tensor_numel(&p->value);
    gf_philox_stream s = gf_rng_stream(seed, GF_RNG_INIT_D, 0, (uint32_t)t);
    gf_philox_normal(&s, d, (size_t)n, 0.0f, 1.0f);
    double ss = 0.0;
    for (int64_t i = 0; i < n; i++) ss += (double)d[i] * d[i];
    double nrm = sqrt(ss);
    if (nrm < 1e-12) nrm = 1e-12;
    for (int64_t i = 0; i < n; i++) d[i] = (float)(d[i] / nrm);
  }
}

/* Class conditioning: G's shared embedding N(0, 1) (nn.Embedding's
 * default), D's projection N(0, 0.02) (DCGAN's scale), each from stream
 * (seed, INIT_G / INIT_D, 0, tensor index); a conditional BN's gain bias 1
 * (its gain starts as BigGAN's 1 + gain(y) with the linear's bias at 0).
 * The gain and bias linears' weights are weights: the network's init. */
static void cond_init(gf_net *net, uint64_t seed) {
  for (int t = 0; t < net->n_tensors; t++) {
    gf_param *p = &net->tensors[t];
    float *d = p->value.data;
    size_t n = (size_t)gf_tensor_numel(&p->value);
    if (p->kind == GF_PARAM_CBN_GAIN_BIAS) {
      for (size_t i = 0; i < n; i++) d[i] = 1.0f;
    } else if (p->kind == GF_PARAM_EMBED) {
      bool g = net->role == GF_NET_G;
      gf_philox_stream st = gf_rng_stream(seed, g ? GF_RNG_INIT_G : GF_RNG_INIT_D, 0,
                                          (uint32_t)t);
      gf_philox_normal(&st, d, n, 0.0f, g ? 1.0f : 0.02f);
    }
  }
}

/* Initialisation into host memory (the tensors' data is host memory). */
static gf_status init_params_host(gf_net *net, uint64_t seed, gf_err *err) {
  if (net->params.device == GF_DEV_CPU) { /* device nets: zeroed copies */
    zero_arena(&net->params);
    zero_arena(&net->grads);
    zero_arena(&net->adam_m);
    zero_arena(&net->adam_v);
  }
  reset_bn_stats(net);
  net->fwd_batch = 0;
  switch (net->cfg.architecture) {
  case GF_ARCH_MLP: GF_TRY(gf_mlp_init_params(net, seed, err)); break;
  case GF_ARCH_DCGAN: GF_TRY(gf_dcgan_init_params(net, seed, err)); break;
  case GF_ARCH_RESNET: GF_TRY(gf_resnet_init_params(net, seed, err)); break;
  case GF_ARCH_STYLEGAN2:
    return gf_fail(err, GF_EUNSUPPORTED, "net: stylegan2 is not a gf_net (gf/sg2_net.h)");
  }
  sn_init(net, seed);
  cond_init(net, seed);
  return GF_OK;
}

gf_status gf_net_set_labels(gf_net *net, const gf_tensor *labels, gf_err *err) {
  if (!net || !net->layers || !labels) return gf_fail(err, GF_EINVAL, "net: NULL argument");
  if (net->p_embed < 0)
    return gf_fail(err, GF_EINVAL, "net: labels for a net that is not class-conditional");
  if (labels->dtype != GF_I32 || labels->ndim != 1 || labels->shape[0] < 1 ||
      labels->shape[0] > net->max_batch)
    return gf_fail(err, GF_EINVAL, "net: labels must be [n] i32 with 1 <= n <= %d",
                   net->max_batch);
  if (labels->device != net->acts.device || labels->device_index != net->acts.device_index)
    return gf_fail(err, GF_EINVAL, "net: labels are not on the net's device");
  if (labels->device == GF_DEV_CPU)
    GF_TRY(gf_labels_check(labels, net->cfg.num_classes, err));
  net->labels = *labels;
  net->labels.owns = false;
  return GF_OK;
}

gf_status gf_net_sn_iterate(gf_net *net, gf_ctx *ctx, gf_err *err) {
  if (!net || !net->layers || !ctx) return gf_fail(err, GF_EINVAL, "net: NULL argument");
  if (net->max_batch == 0)
    return gf_fail(err, GF_ESTATE, "net: weights alone (max_batch 0) keep no normalized weights");
  for (int i = 0; i < net->n_layers; i++) {
    gf_layer *l = &net->layers[i];
    if (l->p_u < 0) continue;
    gf_tensor ws, sg;
    int64_t one = 1;
    const gf_tensor *w = &net->tensors[l->p_w].value;
    GF_TRY(gf_tensor_view(&ws, l->w_sn, GF_F32, net->acts.device, w->ndim, w->shape, err));
    GF_TRY(gf_tensor_view(&sg, l->sigma, GF_F32, net->acts.device, 1, &one, err));
    ws.device_index = sg.device_index = net->acts.device_index;
    GF_TRY(gf_spectral_norm_fwd(ctx, w, &net->tensors[l->p_u].value,
                                &net->tensors[l->p_v].value, 1, GF_SN_EPS, &sg, &ws, err));
  }
  return GF_OK;
}

gf_param *gf_net_find(gf_net *net, const char *name) {
  if (!net || !name) return NULL;
  for (int i = 0; i < net->n_tensors; i++)
    if (strcmp(net->tensors[i].name, name) == 0) return &net->tensors[i];
  return NULL;
}

/* ---- forward / backward ------------------------------------------------------ */

/* A view of n samples of per-sample shape s at data. */
static gf_status view(const gf_net *net, gf_tensor *t, const float *data, int n,
                      int ndim, const int64_t *s, gf_err *err) {
  int64_t shape[GF_MAX_DIMS] = {n, 1, 1, 1};
  for (int i = 0; i < ndim; i++) shape[i + 1] = s[i];
  GF_TRY(gf_tensor_view(t, (void *)data, GF_F32, net->acts.device, ndim + 1, shape, err));
  t->device_index = net->acts.device_index;
  return GF_OK;
}

static gf_status check_io(const gf_net *net, const gf_tensor *t, const char *what,
                          int64_t per_sample, int64_t n, gf_err *err) {
  if (!t || !t->data) return gf_fail(err, GF_EINVAL, "net: %s is NULL or empty", what);
  if (t->dtype != GF_F32) return gf_fail(err, GF_EUNSUPPORTED, "net: %s is not f32", what);
  if (t->device != net->acts.device || t->device_index != net->acts.device_index)
    return gf_fail(err, GF_EINVAL, "net: %s is not on the net's device", what);
  if (gf_tensor_numel(t) != per_sample * n)
    return gf_fail(err, GF_EINVAL, "net: %s has %lld values, expected %lld x %lld", what,
                   (long long)gf_tensor_numel(t), (long long)n, (long long)per_sample);
  return GF_OK;
}

gf_status gf_net_forward(gf_net *net, gf_ctx *ctx, const gf_tensor *x, gf_net_mode mode,
                         uint64_t seed, int64_t step, int64_t sample0, int pass, gf_tensor *y,
                         gf_err *err) {
  if (!net || !net->layers || !ctx || !y) return gf_fail(err, GF_EINVAL, "net: NULL argument");
  if (mode != GF_MODE_TRAIN && mode != GF_MODE_INFER)
    return gf_fail(err, GF_EINVAL, "net: unknown mode %d", (int)mode);
  if (!x || x->ndim < 1) return gf_fail(err, GF_EINVAL, "net: input is NULL");
  int64_t n = x->shape[0];
  if (net->max_batch == 0)
    return gf_fail(err, GF_ESTATE, "net: weights alone (max_batch 0) run no forward");
  if (n < 1 || n > net->max_batch)
    return gf_fail(err, GF_EINVAL, "net: batch %lld outside [1, %d]", (long long)n, net->max_batch);
  if (pass < 0 || pass >= (int)(GF_RNG_SUB_MAX / 64))
    return gf_fail(err, GF_EINVAL, "net: pass %d out of range", pass);
  if (sample0 < 0)
    return gf_fail(err, GF_EINVAL, "net: first sample index %lld < 0", (long long)sample0);
  GF_TRY(check_io(net, x, "input", numel_of(net->in_ndim, net->in_shape), n, err));
  net->fwd_batch = 0; /* invalid until this forward completes */
  if (net->p_embed >= 0 && (!net->labels.data || net->labels.shape[0] != n))
    return gf_fail(err, GF_ESTATE, "net: a class-conditional forward of %lld samples "
                   "without their labels (gf_net_set_labels)", (long long)n);
  gf_tensor erows; /* the class embedding's rows of the batch */
  if (net->p_embed >= 0) {
    int64_t es[2] = {n, net->tensors[net->p_embed].value.shape[1]};
    GF_TRY(gf_tensor_view(&erows, net->cond_e, GF_F32, net->acts.device, 2, es, err));
    erows.device_index = net->acts.device_index;
    GF_TRY(gf_embedding_fwd(ctx, &net->tensors[net->p_embed].value, &net->labels, &erows, err));
  }
  const gf_layer *first = &net->layers[0];
  GF_TRY(view(net, &net->fwd_in, x->data, (int)n, first->in_ndim, first->in, err));
  const float *cur = x->data;
  for (int i = 0; i < net->n_layers; i++) {
    gf_layer *l = &net->layers[i];
    gf_layer_io io;
    memset(&io, 0, sizeof io);
    GF_TRY(view(net, &io.x, cur, (int)n, l->in_ndim, l->in, err));
    float *ybuf = l->in_place ? (float *)cur : l->act;
    GF_TRY(view(net, &io.y, ybuf, (int)n, l->out_ndim, l->out, err));
    gf_philox_stream drop = gf_rng_sample_stream(seed, GF_RNG_DROPOUT, step,
                                                 (uint32_t)(pass * 64 + i),
                                                 sample0, l->in_numel);
    gf_status st = gf_layer_ops_of(l->kind)->fwd(net, l, ctx, &io, mode, &drop, err);
    if (st != GF_OK) return st;
    if (net->p_embed >= 0 && net->role == GF_NET_D && i == net->n_layers - 1) {
      /* the projection: logit += <embed[y], h>, h this layer's input */
      gf_tensor h, yv;
      int64_t hs[2] = {n, l->in_numel}, ys[2] = {n, 1};
      GF_TRY(gf_tensor_reshape_view(&h, &io.x, 2, hs, err));
      GF_TRY(gf_tensor_reshape_view(&yv, &io.y, 2, ys, err));
      GF_TRY(gf_rowdot_fwd(ctx, &erows, &h, &yv, GF_ACCUMULATE, err));
    }
    cur = ybuf;
  }
  GF_TRY(view(net, y, cur, (int)n, net->out_ndim, net->out_shape, err));
  if (net->role == GF_NET_D) { /* [n, 1] */
    y->ndim = 2;
    y->shape[2] = y->shape[3] = 1;
  }
  net->fwd_batch = (int)n;
  net->fwd_mode = mode;
  return GF_OK;
}

gf_status gf_net_output(const gf_net *net, gf_tensor *y, gf_err *err) {
  if (!net || !net->layers || !y) return gf_fail(err, GF_EINVAL, "net: NULL argument");
  if (net->fwd_batch < 1) return gf_fail(err, GF_ESTATE, "net: no forward yet");
  GF_TRY(view(net, y, net->layers[net->n_layers - 1].act, net->fwd_batch, net->out_ndim,
              net->out_shape, err));
  if (net->role == GF_NET_D) {
    y->ndim = 2;
    y->shape[2] = y->shape[3] = 1;
  }
  return GF_OK;
}

gf_status gf_net_add_skip_grads(gf_net *net, gf_ctx *ctx, int i, gf_tensor *dx, gf_err *err) {
  for (int r = i + 1; r < net->n_layers; r++) {
    const gf_layer *l = &net->layers[r];
    if (l->kind != GF_L_RESADD || l->skip_from != i) continue;
    gf_tensor g;
    GF_TRY(gf_tensor_reshape_view(&g, dx, dx->ndim, dx->shape, err));
    g.data = l->skip_grad;
    GF_TRY(gf_add(ctx, dx, &g, dx, err));
  }
  return GF_OK;
}

gf_status gf_net_backward(gf_net *net, gf_ctx *ctx, const gf_tensor *dy, gf_tensor *dx,
                          bool param_grads, gf_accum accum, gf_err *err) {
  if (!net || !net->layers || !ctx) return gf_fail(err, GF_EINVAL, "net: NULL argument");
  if (net->fwd_batch < 1 || net->fwd_mode != GF_MODE_TRAIN)
    return gf_fail(err, GF_ESTATE, "net: backward needs a completed train-mode forward");
  if (!net->training)
    return gf_fail(err, GF_ESTATE, "net: built for inference (no gradient "
                   "arenas or backward buffers)");
  int n = net->fwd_batch;
  GF_TRY(check_io(net, dy, "dy", numel_of(net->out_ndim, net->out_shape), n, err));
  if (dx) GF_TRY(check_io(net, dx, "dx", numel_of(net->in_ndim, net->in_shape), n, err));
  const float *cur = dy->data;
  bool cur_is_callers = true;
  net->cond_first = true;
  for (int i = net->n_layers - 1; i >= 0; i--) {
    gf_layer *l = &net->layers[i];
    gf_layer_io io;
    memset(&io, 0, sizeof io);
    const float *xbuf = i == 0 ? net->fwd_in.data : net->layers[i - 1].act;
    float *dxbuf;
    if (i == 0) dxbuf = dx ? dx->data : NULL;
    else if (l->in_place && !cur_is_callers) dxbuf = (float *)cur;
    else dxbuf = cur == net->dbuf[0] ? net->dbuf[1] : net->dbuf[0];
    GF_TRY(view(net, &io.x, xbuf, n, l->in_ndim, l->in, err));
    GF_TRY(view(net, &io.y, l->act, n, l->out_ndim, l->out, err));
    GF_TRY(view(net, &io.dy, cur, n, l->out_ndim, l->out, err));
    if (dxbuf) GF_TRY(view(net, &io.dx, dxbuf, n, l->in_ndim, l->in, err));
    gf_status st = gf_layer_ops_of(l->kind)->bwd(net, l, ctx, &io, param_grads, accum, err);
    if (st != GF_OK) return st;
    if (net->p_embed >= 0 && net->role == GF_NET_D && i == net->n_layers - 1)
      GF_TRY(gf_net_projection_bwd(net, l, ctx, &io, param_grads, accum, err));
    if (dxbuf) GF_TRY(gf_net_add_skip_grads(net, ctx, i, &io.dx, err));
    if (param_grads && net->grad_hook)
      GF_TRY(net->grad_hook(net->grad_hook_user, net, i, err));
    cur = dxbuf;
    cur_is_callers = false;
  }
  return GF_OK;
}

gf_status gf_net_adam(gf_net *net, gf_ctx *ctx, const gf_adam_params *p, int64_t step,
                      gf_err *err) {
  if (!net || !net->training || !p) return gf_fail(err, GF_ESTATE, "net: not built for training");
  if (step < 1) return gf_fail(err, GF_EINVAL, "net: Adam step %lld must be >= 1", (long long)step);
  gf_tensor w, g, m, v;
  GF_TRY(gf_arena_view_all(&net->params, &w, err));
  GF_TRY(gf_arena_view_all(&net->grads, &g, err));
  GF_TRY(gf_arena_view_all(&net->adam_m, &m, err));
  GF_TRY(gf_arena_view_all(&net->adam_v, &v, err));
  w.device_index = g.device_index = m.device_index = v.device_index = net->params.device_index;
  return gf_adam_step(ctx, p, step, &w, &g, &m, &v, err);
}

int64_t gf_net_num_trainable(const gf_net *net) { return net ? net->n_trainable : 0; }
int64_t gf_net_num_bn_stats(const gf_net *net) { return net ? net->n_bn_stats : 0; }

size_t gf_net_arena_bytes(const gf_net *net) {
  if (!net) return 0;
  return net->params.cap + net->grads.cap + net->adam_m.cap + net->adam_v.cap +
         net->bn_stats.cap + net->acts.cap;
}

gf_status gf_latent_sample(gf_tensor *z, uint64_t seed, gf_rng_purpose purpose, int64_t step,
                           int64_t sample0, gf_err *err) {
  if (!z || !z->data || z->dtype != GF_F32)
    return gf_fail(err, GF_EINVAL, "latent: z must be a non-empty f32 tensor");
  if (z->ndim < 1 || z->shape[0] < 1 || sample0 < 0)
    return gf_fail(err, GF_EINVAL, "latent: z needs a sample axis and sample0 >= 0");
  size_t n = (size_t)gf_tensor_numel(z);
  gf_philox_stream s = gf_rng_sample_stream(seed, purpose, step, 0, sample0,
                                            (int64_t)n / z->shape[0]);
  if (z->device == GF_DEV_CPU) {
    gf_philox_normal(&s, z->data, n, 0.0f, 1.0f);
    return GF_OK;
  }
  /* device z: drawn on the host (the same values), then copied */
  float *h = malloc(n * sizeof(float));
  if (!h) return gf_fail(err, GF_ENOMEM, "latent: out of memory");
  gf_philox_normal(&s, h, n, 0.0f, 1.0f);
  gf_tensor ht;
  gf_status st = gf_tensor_view(&ht, h, GF_F32, GF_DEV_CPU, z->ndim, z->shape, err);
  if (st == GF_OK) st = gf_tensor_copy(z, &ht, err);
  free(h);
  return st;
}
