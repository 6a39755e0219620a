/* gan.c - the G/D pair and the GAN training step of gf/gan.h. The order of
 * operations mirrors PyTorch's DCGAN example (examples/dcgan/main.py), so
 * the golden test (tests/model/golden/make_golden.py) can replay it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gan_dist.h"
#include "gf/augment.h"
#include "gf/comm.h"
#include "gf/gan.h"

void gf_gan_hparams_default(gf_gan_hparams *hp) {
  memset(hp, 0, sizeof *hp);
  gf_adam_params a = {2e-4, 0.5, 0.999, 1e-8, 0.0};
  hp->adam_g = a;
  hp->adam_d = a;
  hp->loss = GF_GAN_LOSS_BCE;
  hp->ema_decay = 0.0;
  hp->ema_rampup = 0.05;
  hp->r1_gamma = 0.0;
  hp->r1_every = 16;
}

static const char *const k_loss_names[] = {"bce", "hinge", "wgan"};

const char *gf_gan_loss_name(gf_gan_loss l) {
  return (int)l >= 0 && (int)l < 3 ? k_loss_names[l] : "?";
}

gf_status gf_gan_loss_parse(const char *s, gf_gan_loss *out, gf_err *err) {
  for (int i = 0; s && i < 3; i++)
    if (strcmp(s, k_loss_names[i]) == 0) {
      *out = (gf_gan_loss)i;
      return GF_OK;
    }
  return gf_fail(err, GF_EINVAL, "unknown loss '%s' (bce, hinge or wgan)", s ? s : "(null)");
}

double gf_gan_ema_beta(const gf_gan_hparams *hp, int64_t t) {
  if (!(hp->ema_decay > 0.0)) return 0.0;
  if (!(hp->ema_rampup > 0.0)) return hp->ema_decay;
  double h = log(0.5) / log(hp->ema_decay); /* half-life in G updates */
  double ht = (double)(t - 1) * hp->ema_rampup;
  if (ht < h) h = ht;
  return h > 0.0 ? pow(0.5, 1.0 / h) : 0.0;
}

static gf_status check_hparams(const gf_gan_hparams *hp, gf_err *err) {
  if ((int)hp->loss < 0 || (int)hp->loss > 2)
    return gf_fail(err, GF_EINVAL, "gan: unknown loss %d", (int)hp->loss);
  if (!(hp->ema_decay >= 0.0 && hp->ema_decay < 1.0))
    return gf_fail(err, GF_EINVAL, "gan: EMA decay %g outside [0, 1)", hp->ema_decay);
  if (!(hp->ema_rampup >= 0.0 && hp->ema_rampup <= 1e6))
    return gf_fail(err, GF_EINVAL, "gan: EMA ramp-up %g outside [0, 1e6]", hp->ema_rampup);
  if (!(hp->r1_gamma >= 0.0 && hp->r1_gamma <= 1e6))
    return gf_fail(err, GF_EINVAL, "gan: R1 gamma %g outside [0, 1e6]", hp->r1_gamma);
  if (hp->augment & ~(unsigned)GF_AUG_ALL)
    return gf_fail(err, GF_EINVAL, "gan: augmentation policy 0x%x has unknown bits", hp->augment);
  if (hp->r1_every < 1 || hp->r1_every > 1000000)
    return gf_fail(err, GF_EINVAL, "gan: R1 every %d steps outside [1, 10^6]", hp->r1_every);
  return GF_OK;
}

/* R1 needs a D whose samples do not interact: no batch norm. */
static gf_status check_r1(const gf_gan *gan, gf_err *err) {
  if (!(gan->hp.r1_gamma > 0.0)) return GF_OK;
  for (int i = 0; i < gan->d.n_tensors; i++)
    if (gan->d.tensors[i].kind == GF_PARAM_BN_RUNNING_MEAN)
      return gf_fail(err, GF_EINVAL, "gan: the R1 penalty needs a discriminator without "
                     "batch norm (it penalizes each image's gradient, which batch norm "
                     "couples across the batch); dcgan's D loses its batch norms with "
                     "spectral norm");
  return GF_OK;
}

static gf_status carve(gf_arena *a, int64_t n, float **p, gf_err *err) {
  gf_tensor t;
  GF_TRY(gf_arena_tensor(a, &t, GF_F32, 1, &n, err));
  *p = t.data;
  return GF_OK;
}

gf_status gf_gan_init(gf_gan *gan, gf_ctx *ctx, const gf_model_config *cfg,
                      const gf_gan_hparams *hp, int max_batch, gf_err *err) {
  if (!gan) return gf_fail(err, GF_EINVAL, "gan: NULL");
  memset(gan, 0, sizeof *gan);
  if (!ctx || !cfg) return gf_fail(err, GF_EINVAL, "gan: NULL ctx or config");
  if (max_batch < 2)
    return gf_fail(err, GF_EINVAL, "gan: max_batch %d < 2 (batch norm needs 2 samples)", max_batch);
  gan->cfg = *cfg;
  if (hp) gan->hp = *hp;
  else gf_gan_hparams_default(&gan->hp);
  GF_TRY(check_hparams(&gan->hp, err));
  gan->max_batch = max_batch;
  GF_TRY(gf_net_init(&gan->g, ctx, cfg, GF_NET_G, max_batch, true, err));
  GF_TRY(gf_net_init(&gan->d, ctx, cfg, GF_NET_D, max_batch, true, err));
  GF_TRY(check_r1(gan, err));
  if (gan->hp.ema_decay > 0.0)
    GF_TRY(gf_net_init(&gan->g_ema, ctx, cfg, GF_NET_G, max_batch, false, err));
  int64_t mb = max_batch;
  int64_t img = (int64_t)cfg->image_channels * cfg->image_height * cfg->image_width;
  bool aug = gan->hp.augment != 0;
  size_t bytes = gf_arena_slot_bytes((size_t)(mb * cfg->z_dim) * 4) +
                 3 * gf_arena_slot_bytes((size_t)mb * 4) +
                 gf_arena_slot_bytes((size_t)(mb * img) * 4) + gf_arena_slot_bytes(4);
  if (aug)
    bytes += gf_arena_slot_bytes((size_t)(mb * img) * 4) +
             gf_arena_slot_bytes((size_t)(mb * GF_AUG_NPARAMS) * 4);
  bool cond = cfg->num_classes > 0;
  if (cond) bytes += 2 * gf_arena_slot_bytes((size_t)mb * 4);
  GF_TRY(gf_arena_init_on(&gan->scratch, ctx->device, ctx->device_index, bytes, err));
  GF_TRY(carve(&gan->scratch, mb * cfg->z_dim, &gan->z, err));
  GF_TRY(carve(&gan->scratch, mb, &gan->ones, err));
  GF_TRY(carve(&gan->scratch, mb, &gan->zeros, err));
  GF_TRY(carve(&gan->scratch, mb, &gan->dlogit, err));
  GF_TRY(carve(&gan->scratch, mb * img, &gan->dfake, err));
  GF_TRY(carve(&gan->scratch, 1, &gan->loss, err));
  if (aug) {
    GF_TRY(carve(&gan->scratch, mb * img, &gan->aug, err));
    GF_TRY(carve(&gan->scratch, mb * GF_AUG_NPARAMS, &gan->aug_params, err));
    gan->aug_host = malloc((size_t)(mb * GF_AUG_NPARAMS) * sizeof(float));
    if (!gan->aug_host) return gf_fail(err, GF_ENOMEM, "gan: out of memory");
  }
  if (cond) {
    gf_tensor t;
    GF_TRY(gf_arena_tensor(&gan->scratch, &t, GF_I32, 1, &mb, err));
    gan->real_labels = t.data;
    GF_TRY(gf_arena_tensor(&gan->scratch, &t, GF_I32, 1, &mb, err));
    gan->fake_labels = t.data;
    gan->labels_host = malloc((size_t)mb * sizeof(int32_t));
    if (!gan->labels_host) return gf_fail(err, GF_ENOMEM, "gan: out of memory");
  }
  if (ctx->device == GF_DEV_CPU) {
    for (int64_t i = 0; i < mb; i++) gan->ones[i] = 1.0f; /* zeros: arena is zeroed */
    return GF_OK;
  }
  gan->host = malloc((size_t)(mb + 1) * sizeof(float));
  if (!gan->host) return gf_fail(err, GF_ENOMEM, "gan: out of memory");
  gf_tensor ones;
  GF_TRY(gf_tensor_view(&ones, gan->ones, GF_F32, ctx->device, 1, &mb, err));
  ones.device_index = ctx->device_index;
  GF_TRY(gf_fill(ctx, &ones, 1.0f, err));
  return gf_ctx_sync(ctx, err);
}

void gf_gan_free(gf_gan *gan) {
  if (!gan) return;
  gf_grad_sync_free(gan->sync_g);
  gf_grad_sync_free(gan->sync_d);
  gf_net_free(&gan->g);
  gf_net_free(&gan->d);
  gf_net_free(&gan->g_ema);
  gf_arena_free(&gan->scratch);
  free(gan->host);
  free(gan->aug_host);
  free(gan->labels_host);
  memset(gan, 0, sizeof *gan);
}

static gf_status copy_arena(gf_arena *dst, const gf_arena *src, gf_err *err) {
  if (dst->used != src->used)
    return gf_fail(err, GF_EINVAL, "gan: arenas of %zu and %zu bytes (other configs?)",
                   dst->used, src->used);
  if (src->used == 0) return GF_OK;
  gf_tensor d, s;
  GF_TRY(gf_arena_view_all(dst, &d, err));
  GF_TRY(gf_arena_view_all(src, &s, err));
  d.device_index = dst->device_index;
  s.device_index = src->device_index;
  return gf_tensor_copy(&d, &s, err);
}

gf_status gf_gan_init_params(gf_gan *gan, uint64_t seed, gf_err *err) {
  if (!gan || !gan->g.layers) return gf_fail(err, GF_ESTATE, "gan: not built");
  GF_TRY(gf_net_init_params(&gan->g, seed, err));
  GF_TRY(gf_net_init_params(&gan->d, seed, err));
  gan->adam_step_g = gan->adam_step_d = 0;
  gan->last_n = 0;
  if (!gan->g_ema.layers) return GF_OK;
  /* The EMA starts as a copy of G (the first update copies it anyway). */
  GF_TRY(copy_arena(&gan->g_ema.params, &gan->g.params, err));
  return copy_arena(&gan->g_ema.bn_stats, &gan->g.bn_stats, err);
}

gf_status gf_gan_copy_state(gf_gan *dst, const gf_gan *src, gf_err *err) {
  if (!dst || !src || !dst->g.layers || !src->g.layers)
    return gf_fail(err, GF_EINVAL, "gan: copy between unbuilt GANs");
  const gf_net *sn[2] = {&src->g, &src->d};
  gf_net *dn[2] = {&dst->g, &dst->d};
  for (int i = 0; i < 2; i++) {
    GF_TRY(copy_arena(&dn[i]->params, &sn[i]->params, err));
    GF_TRY(copy_arena(&dn[i]->grads, &sn[i]->grads, err));
    GF_TRY(copy_arena(&dn[i]->adam_m, &sn[i]->adam_m, err));
    GF_TRY(copy_arena(&dn[i]->adam_v, &sn[i]->adam_v, err));
    GF_TRY(copy_arena(&dn[i]->bn_stats, &sn[i]->bn_stats, err));
  }
  if (!dst->g_ema.layers != !src->g_ema.layers)
    return gf_fail(err, GF_EINVAL, "gan: copy between GANs with and without an EMA generator");
  if (src->g_ema.layers) {
    GF_TRY(copy_arena(&dst->g_ema.params, &src->g_ema.params, err));
    GF_TRY(copy_arena(&dst->g_ema.bn_stats, &src->g_ema.bn_stats, err));
  }
  dst->adam_step_g = src->adam_step_g;
  dst->adam_step_d = src->adam_step_d;
  return GF_OK;
}

gf_net *gf_gan_generator(gf_gan *gan, bool raw) {
  return gan->g_ema.layers && !raw ? &gan->g_ema : &gan->g;
}

const gf_net *gf_gan_generator_const(const gf_gan *gan, bool raw) {
  return gan->g_ema.layers && !raw ? &gan->g_ema : &gan->g;
}

size_t gf_gan_arena_bytes(const gf_gan *gan) {
  if (!gan) return 0;
  return gf_net_arena_bytes(&gan->g) + gf_net_arena_bytes(&gan->d) +
         gf_net_arena_bytes(&gan->g_ema) + gan->scratch.cap;
}

/* A view of n values at data on ctx's device. */
static gf_status tview(gf_tensor *t, const gf_ctx *ctx, void *data, gf_dtype dtype, int ndim,
                       const int64_t *shape, gf_err *err) {
  GF_TRY(gf_tensor_view(t, data, dtype, ctx->device, ndim, shape, err));
  t->device_index = ctx->device_index;
  return GF_OK;
}

static gf_status dview(gf_tensor *t, const gf_ctx *ctx, float *data, int ndim,
                       const int64_t *shape, gf_err *err) {
  return tview(t, ctx, data, GF_F32, ndim, shape, err);
}

static gf_status vec(gf_tensor *t, const gf_ctx *ctx, float *data, int64_t n, gf_err *err) {
  int64_t shape[2] = {n, 1};
  return dview(t, ctx, data, 2, shape, err);
}

/* Host-readable values of t: t's own data on the CPU, else a copy into
 * gan->host (which holds max_batch + 1 floats). */
static gf_status host_of(gf_gan *gan, const gf_tensor *t, const float **out, gf_err *err) {
  if (t->device == GF_DEV_CPU) {
    *out = t->data;
    return GF_OK;
  }
  gf_tensor h;
  GF_TRY(gf_tensor_view(&h, gan->host, GF_F32, GF_DEV_CPU, t->ndim, t->shape, err));
  GF_TRY(gf_tensor_copy(&h, t, err));
  *out = gan->host;
  return GF_OK;
}

static gf_status mean_sigmoid(gf_gan *gan, const gf_tensor *logits, double *out, gf_err *err) {
  const float *x;
  GF_TRY(host_of(gan, logits, &x, err));
  int64_t n = gf_tensor_numel(logits);
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += 1.0 / (1.0 + exp(-(double)x[i]));
  *out = s / (double)n;
  return GF_OK;
}

/* BCE-with-logits of logits against target: the loss into *loss, its
 * gradient (dloss 1) into dlogit. */
static gf_status bce(gf_gan *gan, gf_ctx *ctx, const gf_tensor *logits,
                     const gf_tensor *target, float dloss, gf_tensor *dlogit,
                     double *loss, gf_err *err) {
  gf_tensor l;
  int64_t one = 1;
  GF_TRY(dview(&l, ctx, gan->loss, 1, &one, err));
  GF_TRY(gf_bce_logits_fwd(ctx, logits, target, &l, err));
  GF_TRY(gf_bce_logits_bwd(ctx, logits, target, dloss, dlogit, err));
  const float *v;
  GF_TRY(host_of(gan, &l, &v, err));
  *loss = v[0];
  return GF_OK;
}

gf_status gf_gan_distribute(gf_gan *gan, gf_ctx *ctx, const gf_gan_dist *d, gf_err *err) {
  if (!gan || !gan->g.layers || !ctx) return gf_fail(err, GF_EINVAL, "gan: NULL argument");
  gf_grad_sync_free(gan->sync_g);
  gf_grad_sync_free(gan->sync_d);
  gan->sync_g = gan->sync_d = NULL;
  memset(&gan->dist, 0, sizeof gan->dist);
  gan->dist.micro = 1;
  gan->g.bn_frozen = gan->d.bn_frozen = false;
  GF_TRY(gf_net_set_sync_bn(&gan->g, ctx, NULL, err));
  GF_TRY(gf_net_set_sync_bn(&gan->d, ctx, NULL, err));
  if (!d) return GF_OK;
  if (d->micro < 1 || d->micro > gan->max_batch / 2)
    return gf_fail(err, GF_EINVAL, "gan: %d micro-batches of a batch of at most %d", d->micro,
                   gan->max_batch);
  int world = d->comm ? gf_comm_world(d->comm) : 1;
  if (d->exact) {
    if (d->sync_bn)
      return gf_fail(err, GF_EINVAL, "gan: exact mode keeps batch-norm statistics per "
                     "micro-batch; it does not combine with sync BN");
    if (!gf_pow2(d->micro) || !gf_pow2(world))
      return gf_fail(err, GF_EINVAL, "gan: exact mode needs power-of-two micro-batches per "
                     "rank (%d) and ranks (%d)", d->micro, world);
    if (ctx->device != GF_DEV_CPU)
      return gf_fail(err, GF_EUNSUPPORTED, "gan: exact mode runs on the CPU backend only");
  }
  if (d->comm || d->exact) {
    GF_TRY(gf_grad_sync_new(&gan->sync_g, &gan->g, d->comm, d, world, err));
    GF_TRY(gf_grad_sync_new(&gan->sync_d, &gan->d, d->comm, d, world, err));
  }
  if (d->sync_bn && d->comm) {
    GF_TRY(gf_net_set_sync_bn(&gan->g, ctx, d->comm, err));
    GF_TRY(gf_net_set_sync_bn(&gan->d, ctx, d->comm, err));
  }
  gan->g.bn_frozen = gan->d.bn_frozen = d->exact;
  gan->dist = *d;
  return GF_OK;
}

void gf_gan_sync_stats_get(const gf_gan *gan, gf_gan_sync_stats *out) {
  memset(out, 0, sizeof *out);
  const gf_grad_sync *ss[2] = {gan->sync_g, gan->sync_d};
  for (int i = 0; i < 2; i++) {
    if (!ss[i]) continue;
    out->steps += ss[i]->stats.steps;
    out->allreduce_s += ss[i]->stats.allreduce_s;
    out->exposed_s += ss[i]->stats.exposed_s;
    out->bytes += ss[i]->stats.bytes;
    out->buckets += ss[i]->stats.buckets;
  }
}

void gf_gan_sync_stats_reset(gf_gan *gan) {
  if (gan->sync_g) memset(&gan->sync_g->stats, 0, sizeof gan->sync_g->stats);
  if (gan->sync_d) memset(&gan->sync_d->stats, 0, sizeof gan->sync_d->stats);
}

/* The seam before an Adam update: the all-reduce of the network's
 * gradient (its buckets may have started during the backward). */
static gf_status seam(gf_grad_sync *s, bool exact, gf_err *err) {
  if (!s || !s->comm) return GF_OK;
  if (exact) gf_grad_sync_arm(s); /* nothing started yet: all at once */
  return gf_grad_sync_finish(s, err);
}

/* Rows [k*m, (k+1)*m) of a [n, ...] tensor view t. */
static gf_tensor rows(const gf_tensor *t, int64_t k, int64_t m) {
  gf_tensor r = *t;
  int64_t per = gf_tensor_numel(t) / t->shape[0];
  r.data = (float *)t->data + k * m * per;
  r.shape[0] = m;
  r.owns = false;
  return r;
}

/* DiffAugment (hp.augment): draws pass `pass`'s params of the n samples
 * from sample0 and applies them to x into gan->aug, *out a view of it
 * shaped as x; *params a view of the draws. Without a policy, *out = *x. */
static gf_status augment(gf_gan *gan, gf_ctx *ctx, const gf_tensor *x, uint64_t seed,
                         int64_t step, int pass, int64_t sample0, gf_tensor *out,
                         gf_tensor *params, gf_err *err) {
  if (!gan->hp.augment) {
    *out = *x;
    return GF_OK;
  }
  int64_t n = x->shape[0];
  const gf_model_config *c = &gan->cfg;
  GF_TRY(gf_augment_draw(gan->aug_host, n, c->image_height, c->image_width, gan->hp.augment,
                         seed, step, pass, sample0, err));
  int64_t ps[2] = {n, GF_AUG_NPARAMS};
  GF_TRY(dview(params, ctx, gan->aug_params, 2, ps, err));
  gf_tensor h;
  GF_TRY(gf_tensor_view(&h, gan->aug_host, GF_F32, GF_DEV_CPU, 2, ps, err));
  GF_TRY(gf_tensor_copy(params, &h, err));
  int64_t is[4] = {n, c->image_channels, c->image_height, c->image_width};
  GF_TRY(dview(out, ctx, gan->aug, 4, is, err));
  return gf_augment_fwd(ctx, x, params, gan->hp.augment, out, err);
}

/* A view of n labels at data on ctx's device. */
static gf_status lview(gf_tensor *t, const gf_ctx *ctx, int32_t *data, int64_t n, gf_err *err) {
  return tview(t, ctx, data, GF_I32, 1, &n, err);
}

void gf_gan_draw_labels(int32_t *out, int64_t n, int num_classes, uint64_t seed, int64_t step,
                        int64_t sample0) {
  gf_philox_stream s = gf_rng_sample_stream(seed, GF_RNG_LABEL, step, 0, sample0, 1);
  gf_philox_u32(&s, (uint32_t *)out, (size_t)n);
  for (int64_t i = 0; i < n; i++)
    out[i] = (int32_t)(((uint64_t)(uint32_t)out[i] * (uint64_t)num_classes) >> 32);
}

gf_status gf_gan_set_labels(gf_gan *gan, gf_ctx *ctx, const gf_tensor *labels, gf_err *err) {
  if (!gan || !gan->g.layers || !ctx || !labels) return gf_fail(err, GF_EINVAL, "gan: NULL argument");
  if (!gan->real_labels)
    return gf_fail(err, GF_EINVAL, "gan: labels for a model that is not class-conditional");
  if (labels->dtype != GF_I32 || labels->ndim != 1 || labels->shape[0] < 1 ||
      labels->shape[0] > gan->max_batch)
    return gf_fail(err, GF_EINVAL, "gan: labels must be [n] i32 with 1 <= n <= %d", gan->max_batch);
  if (labels->device == GF_DEV_CPU) GF_TRY(gf_labels_check(labels, gan->cfg.num_classes, err));
  gf_tensor dst;
  GF_TRY(lview(&dst, ctx, gan->real_labels, labels->shape[0], err));
  GF_TRY(gf_tensor_copy(&dst, labels, err));
  gan->real_labels_n = labels->shape[0];
  return GF_OK;
}

/* Class-conditional: the fake batch's labels of the D step (drawn) into
 * gan->fake_labels; checks the real ones are there. */
static gf_status step_labels(gf_gan *gan, gf_ctx *ctx, int64_t n, uint64_t seed, int64_t step,
                             int64_t sample0, gf_err *err) {
  if (!gan->real_labels) return GF_OK;
  if (gan->real_labels_n != n)
    return gf_fail(err, GF_ESTATE, "gan: a class-conditional D step of %lld images needs "
                   "their labels (gf_gan_set_labels)", (long long)n);
  gan->real_labels_n = 0; /* one D step each */
  gf_gan_draw_labels(gan->labels_host, n, gan->cfg.num_classes, seed, step, sample0);
  gf_tensor h, d;
  GF_TRY(gf_tensor_view(&h, gan->labels_host, GF_I32, GF_DEV_CPU, 1, &n, err));
  GF_TRY(lview(&d, ctx, gan->fake_labels, n, err));
  return gf_tensor_copy(&d, &h, err);
}

/* Class-conditional: net's labels = rows [k m, (k + 1) m) of buf. */
static gf_status net_labels(gf_net *net, const gf_ctx *ctx, int32_t *buf, int64_t k, int64_t m,
                            gf_err *err) {
  if (!buf) return GF_OK;
  gf_tensor t;
  GF_TRY(lview(&t, ctx, buf + k * m, m, err));
  return gf_net_set_labels(net, &t, err);
}

/* Checks a slice of n samples against gan and the micro-batch plan. */
static gf_status check_slice(const gf_gan *gan, int64_t n, int64_t sample0,
                             int64_t *m_out, gf_err *err) {
  if (n < 2 || n > gan->max_batch)
    return gf_fail(err, GF_EINVAL, "gan: batch %lld outside [2, %d]", (long long)n, gan->max_batch);
  if (sample0 < 0) return gf_fail(err, GF_EINVAL, "gan: first sample %lld < 0", (long long)sample0);
  int kn = gan->dist.micro > 1 ? gan->dist.micro : 1;
  int64_t m = n / kn;
  if (m * kn != n || m < 2)
    return gf_fail(err, GF_EINVAL, "gan: a slice of %lld samples does not cut into %d "
                   "micro-batches of at least 2", (long long)n, kn);
  *m_out = m;
  return GF_OK;
}

/* Each micro-batch's mean loss counts 1/(micro-batches x ranks); the
 * all-reduce sums. One rank, one batch: exactly 1. */
static float loss_scale(const gf_gan *gan) {
  int kn = gan->dist.micro > 1 ? gan->dist.micro : 1;
  int world = gan->dist.comm ? gf_comm_world(gan->dist.comm) : 1;
  return 1.0f / (float)((int64_t)kn * world);
}

/* The loss of gf_gan_loss on one batch of D's logits and its gradient
 * (scaled by dl) into dlogit; *loss the loss, *dmean the mean of D(.) the
 * stats report. target 1: a real batch or G's step; 0: a fake batch of
 * the D step. gen: G's loss rather than D's. */
static gf_status d_loss(gf_gan *gan, gf_ctx *ctx, const gf_tensor *logits, int target, bool gen,
                        float dl, gf_tensor *dlogit, double *loss, double *dmean, gf_err *err) {
  gf_gan_loss kind = gan->hp.loss;
  if (kind == GF_GAN_LOSS_BCE) {
    gf_tensor t;
    GF_TRY(vec(&t, ctx, target ? gan->ones : gan->zeros, logits->shape[0], err));
    GF_TRY(bce(gan, ctx, logits, &t, dl, dlogit, loss, err));
    return mean_sigmoid(gan, logits, dmean, err);
  }
  gf_tensor l;
  int64_t one = 1;
  const float *v;
  GF_TRY(dview(&l, ctx, gan->loss, 1, &one, err));
  GF_TRY(gf_mean_fwd(ctx, logits, &l, err));
  GF_TRY(host_of(gan, &l, &v, err));
  *dmean = v[0];
  float sign = target ? -1.0f : 1.0f; /* real / G: -l; fake: +l */
  if (kind == GF_GAN_LOSS_HINGE && !gen) { /* relu(1 - l) real, relu(1 + l) fake */
    GF_TRY(gf_hinge_fwd(ctx, logits, sign, &l, err));
    GF_TRY(gf_hinge_bwd(ctx, logits, sign, dl, dlogit, err));
    GF_TRY(host_of(gan, &l, &v, err));
    *loss = v[0];
    return GF_OK;
  }
  /* sign * mean l: WGAN's D terms and both losses' G term */
  double n = (double)gf_tensor_numel(logits);
  GF_TRY(gf_fill(ctx, dlogit, (float)((double)sign * (double)dl / n), err));
  *loss = (double)sign * *dmean;
  return GF_OK;
}

gf_status gf_gan_d_step(gf_gan *gan, gf_ctx *ctx, const gf_tensor *real, const gf_tensor *z,
                        uint64_t seed, int64_t step, int64_t sample0, gf_gan_stats *stats,
                        gf_err *err) {
  if (!gan || !gan->g.layers || !ctx || !real || real->ndim < 1)
    return gf_fail(err, GF_EINVAL, "gan: NULL argument or gan not built");
  int64_t n = real->shape[0], m = 0;
  GF_TRY(check_slice(gan, n, sample0, &m, err));
  gan->last_n = 0; /* no G step on a half-done D step */
  const gf_gan_dist *dist = &gan->dist;
  int kn = dist->micro > 1 ? dist->micro : 1;
  bool exact = dist->exact;
  float dl = loss_scale(gan);
  gf_gan_stats s;
  memset(&s, 0, sizeof s);

  /* Latents of the whole slice. */
  gf_tensor zt;
  int64_t zs[2] = {n, gan->cfg.z_dim};
  GF_TRY(dview(&zt, ctx, gan->z, 2, zs, err));
  if (z) {
    if (!z->data || z->dtype != GF_F32 || gf_tensor_numel(z) != n * gan->cfg.z_dim)
      return gf_fail(err, GF_EINVAL, "gan: z must hold %lld x %d f32 values", (long long)n,
                     gan->cfg.z_dim);
    if (z->device == ctx->device && z->device_index == ctx->device_index)
      GF_TRY(gf_copy(ctx, z, &zt, err));
    else
      GF_TRY(gf_tensor_copy(&zt, z, err));
  } else {
    GF_TRY(gf_latent_sample(&zt, seed, GF_RNG_LATENT, step, sample0, err));
  }
  GF_TRY(step_labels(gan, ctx, n, seed, step, sample0, err));

  gf_tensor dlogit, fake, logits;
  GF_TRY(vec(&dlogit, ctx, gan->dlogit, m, err));
  double v, dm;
  /* Lazy R1 (StyleGAN2): in D updates whose key is a multiple of r1_every,
   * weighted by r1_every; per micro-batch its mean, scaled as the losses. */
  bool r1 = gan->hp.r1_gamma > 0.0 && step % gan->hp.r1_every == 0;
  float r1_scale = (float)(gan->hp.r1_gamma / 2.0 * gan->hp.r1_every * (double)dl);

  /* One power iteration of D's spectral norms for these weights. */
  GF_TRY(gf_net_sn_iterate(&gan->d, ctx, err));
  /* Per micro-batch, fake = G(z) (G's activations stay put for its
   * backward when there is one micro-batch), then real with label 1 and
   * fake (detached) with label 0; the D gradients add up. */
  for (int k = 0; k < kn; k++) {
    int64_t s0 = sample0 + k * m;
    gf_tensor zk = rows(&zt, k, m), rk = rows(real, k, m);
    GF_TRY(net_labels(&gan->g, ctx, gan->fake_labels, k, m, err));
    GF_TRY(gf_net_forward(&gan->g, ctx, &zk, GF_MODE_TRAIN, seed, step, s0, 0, &fake, err));
    if (exact) gf_bn_log_record(gan->sync_g, k, 0);
    gf_tensor xa, pa; /* D sees the augmented batches (hp.augment) */
    GF_TRY(augment(gan, ctx, &rk, seed, step, 0, s0, &xa, &pa, err));
    GF_TRY(net_labels(&gan->d, ctx, gan->real_labels, k, m, err));
    GF_TRY(gf_net_forward(&gan->d, ctx, &xa, GF_MODE_TRAIN, seed, step, s0, 0, &logits, err));
    if (exact) gf_bn_log_record(gan->sync_d, k, 0);
    GF_TRY(d_loss(gan, ctx, &logits, 1, false, dl, &dlogit, &v, &dm, err));
    s.loss_d_real += v;
    s.d_real += dm;
    gf_accum first = (k == 0 || exact) ? GF_OVERWRITE : GF_ACCUMULATE;
    GF_TRY(gf_net_backward(&gan->d, ctx, &dlogit, NULL, true, first, err));
    if (r1) { /* before the last backward arms the all-reduce */
      GF_TRY(gf_net_r1(&gan->d, ctx, &xa, r1_scale, seed, step, s0, 3, &v, err));
      s.r1 += v;
    }
    GF_TRY(augment(gan, ctx, &fake, seed, step, 1, s0, &xa, &pa, err));
    GF_TRY(net_labels(&gan->d, ctx, gan->fake_labels, k, m, err));
    GF_TRY(gf_net_forward(&gan->d, ctx, &xa, GF_MODE_TRAIN, seed, step, s0, 1, &logits, err));
    if (exact) gf_bn_log_record(gan->sync_d, k, 1);
    GF_TRY(d_loss(gan, ctx, &logits, 0, false, dl, &dlogit, &v, &dm, err));
    s.loss_d_fake += v;
    s.d_fake += dm;
    if (k == kn - 1 && gan->sync_d && gan->sync_d->comm && !exact) gf_grad_sync_arm(gan->sync_d);
    GF_TRY(gf_net_backward(&gan->d, ctx, &dlogit, NULL, true, GF_ACCUMULATE, err));
    if (exact) GF_TRY(gf_grad_tree_add(gan->sync_d, k, kn, err));
  }
  GF_TRY(seam(gan->sync_d, exact, err));
  GF_TRY(gf_net_adam(&gan->d, ctx, &gan->hp.adam_d, gan->adam_step_d + 1, err));
  gan->adam_step_d++;
  if (exact) {
    GF_TRY(gf_bn_log_replay(gan->sync_g, 0, 1, err));
    GF_TRY(gf_bn_log_replay(gan->sync_d, 0, 2, err));
  }
  gan->last_n = n;
  gan->last_sample0 = sample0;
  if (stats) {
    double inv = 1.0 / kn;
    memset(stats, 0, sizeof *stats);
    stats->loss_d_real = s.loss_d_real * inv;
    stats->loss_d_fake = s.loss_d_fake * inv;
    stats->d_real = s.d_real * inv;
    stats->d_fake = s.d_fake * inv;
    stats->loss_d = stats->loss_d_real + stats->loss_d_fake;
    stats->r1 = s.r1 * inv;
    stats->r1_done = r1;
  }
  return GF_OK;
}

/* The EMA generator's update after G update t. */
static gf_status ema_update(gf_gan *gan, gf_ctx *ctx, int64_t t, gf_err *err) {
  if (!gan->g_ema.layers) return GF_OK;
  double beta = gf_gan_ema_beta(&gan->hp, t);
  gf_arena *src[2] = {&gan->g.params, &gan->g.bn_stats};
  gf_arena *dst[2] = {&gan->g_ema.params, &gan->g_ema.bn_stats};
  for (int i = 0; i < 2; i++) {
    if (!src[i]->base || src[i]->used == 0) continue;
    gf_tensor a, x;
    GF_TRY(gf_arena_view_all(dst[i], &a, err));
    GF_TRY(gf_arena_view_all(src[i], &x, err));
    a.device_index = dst[i]->device_index;
    x.device_index = src[i]->device_index;
    GF_TRY(gf_lerp(ctx, &a, &x, beta, err));
  }
  return GF_OK;
}

gf_status gf_gan_g_step(gf_gan *gan, gf_ctx *ctx, uint64_t seed, int64_t step,
                        gf_gan_stats *stats, gf_err *err) {
  if (!gan || !gan->g.layers || !ctx)
    return gf_fail(err, GF_EINVAL, "gan: NULL argument or gan not built");
  if (gan->last_n < 2)
    return gf_fail(err, GF_ESTATE, "gan: a G step needs a D step before it");
  int64_t n = gan->last_n, sample0 = gan->last_sample0, m = 0;
  GF_TRY(check_slice(gan, n, sample0, &m, err));
  gan->last_n = 0;
  const gf_gan_dist *dist = &gan->dist;
  int kn = dist->micro > 1 ? dist->micro : 1;
  bool exact = dist->exact;
  float dl = loss_scale(gan);
  gf_tensor zt, dlogit, dfake_all, fake, logits;
  int64_t zs[2] = {n, gan->cfg.z_dim};
  GF_TRY(dview(&zt, ctx, gan->z, 2, zs, err));
  GF_TRY(vec(&dlogit, ctx, gan->dlogit, m, err));
  int64_t img[4] = {m, gan->cfg.image_channels, gan->cfg.image_height, gan->cfg.image_width};
  GF_TRY(dview(&dfake_all, ctx, gan->dfake, 4, img, err));
  double loss_g = 0.0, after = 0.0, v, dm;

  /* D's weights changed in the D step: one power iteration for them. */
  GF_TRY(gf_net_sn_iterate(&gan->d, ctx, err));
  /* fake through the updated D with label 1, back into G. With several
   * micro-batches G's forward is run again (same bits; running
   * statistics left alone: they were updated in the D step). */
  for (int k = 0; k < kn; k++) {
    int64_t s0 = sample0 + k * m;
    GF_TRY(net_labels(&gan->g, ctx, gan->fake_labels, k, m, err));
    GF_TRY(net_labels(&gan->d, ctx, gan->fake_labels, k, m, err));
    if (kn > 1) {
      gf_tensor zk = rows(&zt, k, m);
      bool frozen = gan->g.bn_frozen;
      gan->g.bn_frozen = true;
      gf_status st = gf_net_forward(&gan->g, ctx, &zk, GF_MODE_TRAIN, seed, step, s0, 0, &fake,
                                    err);
      gan->g.bn_frozen = frozen;
      if (st != GF_OK) return st;
    } else {
      GF_TRY(gf_net_output(&gan->g, &fake, err));
    }
    gf_tensor xa, pa;
    GF_TRY(augment(gan, ctx, &fake, seed, step, 2, s0, &xa, &pa, err));
    GF_TRY(gf_net_forward(&gan->d, ctx, &xa, GF_MODE_TRAIN, seed, step, s0, 2, &logits, err));
    if (exact) gf_bn_log_record(gan->sync_d, k, 2);
    GF_TRY(d_loss(gan, ctx, &logits, 1, true, dl, &dlogit, &v, &dm, err));
    loss_g += v;
    after += dm;
    GF_TRY(gf_net_backward(&gan->d, ctx, &dlogit, &dfake_all, false, GF_OVERWRITE, err));
    if (gan->hp.augment) /* back through the augmentation to G's output */
      GF_TRY(gf_augment_bwd(ctx, &pa, gan->hp.augment, &dfake_all, &dfake_all, err));
    if (k == kn - 1 && gan->sync_g && gan->sync_g->comm && !exact) gf_grad_sync_arm(gan->sync_g);
    gf_accum first = (k == 0 || exact) ? GF_OVERWRITE : GF_ACCUMULATE;
    GF_TRY(gf_net_backward(&gan->g, ctx, &dfake_all, NULL, true, first, err));
    if (exact) GF_TRY(gf_grad_tree_add(gan->sync_g, k, kn, err));
  }
  GF_TRY(seam(gan->sync_g, exact, err));
  GF_TRY(gf_net_adam(&gan->g, ctx, &gan->hp.adam_g, gan->adam_step_g + 1, err));
  gan->adam_step_g++;
  if (exact) GF_TRY(gf_bn_log_replay(gan->sync_d, 2, 3, err));
  GF_TRY(ema_update(gan, ctx, gan->adam_step_g, err));
  if (stats) {
    stats->loss_g = loss_g / kn;
    stats->d_fake_after = after / kn;
  }
  return GF_OK;
}

gf_status gf_gan_step(gf_gan *gan, gf_ctx *ctx, const gf_tensor *real, const gf_tensor *z,
                      uint64_t seed, int64_t step, int64_t sample0, gf_gan_stats *stats,
                      gf_err *err) {
  GF_TRY(gf_gan_d_step(gan, ctx, real, z, seed, step, sample0, stats, err));
  return gf_gan_g_step(gan, ctx, seed, step, stats, err);
}
