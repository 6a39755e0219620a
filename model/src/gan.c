/* gan.c - the G/D pair and the GAN training step of gf/gan.h. The order of
 * operations mirrors PyTorch's DCGAN example (examples/dcgan/main.py), so
 * the golden test (tests/model/golden/make_golden.py) can replay it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gan_dist.h"
#include "gf/comm.h"
#include "gf/gan.h"

void gf_gan_hparams_default(gf_gan_hparams *hp) {
  gf_adam_params a = {2e-4, 0.5, 0.999, 1e-8, 0.0};
  hp->adam_g = a;
  hp->adam_d = a;
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
  gan->max_batch = max_batch;
  GF_TRY(gf_net_init(&gan->g, ctx, cfg, GF_NET_G, max_batch, true, err));
  GF_TRY(gf_net_init(&gan->d, ctx, cfg, GF_NET_D, max_batch, true, err));
  int64_t mb = max_batch;
  int64_t img = (int64_t)cfg->image_channels * cfg->image_height * cfg->image_width;
  size_t bytes = gf_arena_slot_bytes((size_t)(mb * cfg->z_dim) * 4) +
                 3 * gf_arena_slot_bytes((size_t)mb * 4) +
                 gf_arena_slot_bytes((size_t)(mb * img) * 4) + gf_arena_slot_bytes(4);
  GF_TRY(gf_arena_init_on(&gan->scratch, ctx->device, ctx->device_index, bytes, err));
  GF_TRY(carve(&gan->scratch, mb * cfg->z_dim, &gan->z, err));
  GF_TRY(carve(&gan->scratch, mb, &gan->ones, err));
  GF_TRY(carve(&gan->scratch, mb, &gan->zeros, err));
  GF_TRY(carve(&gan->scratch, mb, &gan->dlogit, err));
  GF_TRY(carve(&gan->scratch, mb * img, &gan->dfake, err));
  GF_TRY(carve(&gan->scratch, 1, &gan->loss, err));
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
  gf_arena_free(&gan->scratch);
  free(gan->host);
  memset(gan, 0, sizeof *gan);
}

gf_status gf_gan_init_params(gf_gan *gan, uint64_t seed, gf_err *err) {
  if (!gan || !gan->g.layers) return gf_fail(err, GF_ESTATE, "gan: not built");
  GF_TRY(gf_net_init_params(&gan->g, seed, err));
  GF_TRY(gf_net_init_params(&gan->d, seed, err));
  gan->adam_step_g = gan->adam_step_d = 0;
  return GF_OK;
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
  dst->adam_step_g = src->adam_step_g;
  dst->adam_step_d = src->adam_step_d;
  return GF_OK;
}

size_t gf_gan_arena_bytes(const gf_gan *gan) {
  if (!gan) return 0;
  return gf_net_arena_bytes(&gan->g) + gf_net_arena_bytes(&gan->d) + gan->scratch.cap;
}

/* A view of n values at data on ctx's device. */
static gf_status dview(gf_tensor *t, const gf_ctx *ctx, float *data, int ndim,
                       const int64_t *shape, gf_err *err) {
  GF_TRY(gf_tensor_view(t, data, GF_F32, ctx->device, ndim, shape, err));
  t->device_index = ctx->device_index;
  return GF_OK;
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

static bool pow2(int v) { return v > 0 && (v & (v - 1)) == 0; }

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
    if (!pow2(d->micro) || !pow2(world))
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

gf_status gf_gan_step(gf_gan *gan, gf_ctx *ctx, const gf_tensor *real, const gf_tensor *z,
                      uint64_t seed, int64_t step, int64_t sample0, gf_gan_stats *stats,
                      gf_err *err) {
  if (!gan || !gan->g.layers || !ctx || !real || real->ndim < 1)
    return gf_fail(err, GF_EINVAL, "gan: NULL argument or gan not built");
  int64_t n = real->shape[0];
  if (n < 2 || n > gan->max_batch)
    return gf_fail(err, GF_EINVAL, "gan: batch %lld outside [2, %d]", (long long)n, gan->max_batch);
  if (sample0 < 0) return gf_fail(err, GF_EINVAL, "gan: first sample %lld < 0", (long long)sample0);
  const gf_gan_dist *dist = &gan->dist;
  int kn = dist->micro > 1 ? dist->micro : 1;
  int64_t m = n / kn;
  if (m * kn != n || m < 2)
    return gf_fail(err, GF_EINVAL, "gan: a slice of %lld samples does not cut into %d "
                   "micro-batches of at least 2", (long long)n, kn);
  int world = dist->comm ? gf_comm_world(dist->comm) : 1;
  bool exact = dist->exact;
  /* Each micro-batch's mean loss counts 1/(micro-batches x ranks); the
   * all-reduce sums. One rank, one batch: exactly 1. */
  float dl = 1.0f / (float)((int64_t)kn * world);
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

  gf_tensor ones, zeros, dlogit, dfake_all, fake, logits;
  GF_TRY(vec(&ones, ctx, gan->ones, m, err));
  GF_TRY(vec(&zeros, ctx, gan->zeros, m, err));
  GF_TRY(vec(&dlogit, ctx, gan->dlogit, m, err));
  int64_t img[4] = {m, gan->cfg.image_channels, gan->cfg.image_height, gan->cfg.image_width};
  GF_TRY(dview(&dfake_all, ctx, gan->dfake, 4, img, err));
  double v;

  /* D step: per micro-batch, fake = G(z) (G's activations stay put for
   * its backward when there is one micro-batch), then real with label 1
   * and fake (detached) with label 0; the D gradients add up. */
  for (int k = 0; k < kn; k++) {
    int64_t s0 = sample0 + k * m;
    gf_tensor zk = rows(&zt, k, m), rk = rows(real, k, m);
    GF_TRY(gf_net_forward(&gan->g, ctx, &zk, GF_MODE_TRAIN, seed, step, s0, 0, &fake, err));
    if (exact) gf_bn_log_record(gan->sync_g, k, 0);
    GF_TRY(gf_net_forward(&gan->d, ctx, &rk, GF_MODE_TRAIN, seed, step, s0, 0, &logits, err));
    if (exact) gf_bn_log_record(gan->sync_d, k, 0);
    GF_TRY(bce(gan, ctx, &logits, &ones, dl, &dlogit, &v, err));
    s.loss_d_real += v;
    GF_TRY(mean_sigmoid(gan, &logits, &v, err));
    s.d_real += v;
    gf_accum first = (k == 0 || exact) ? GF_OVERWRITE : GF_ACCUMULATE;
    GF_TRY(gf_net_backward(&gan->d, ctx, &dlogit, NULL, true, first, err));
    GF_TRY(gf_net_forward(&gan->d, ctx, &fake, GF_MODE_TRAIN, seed, step, s0, 1, &logits, err));
    if (exact) gf_bn_log_record(gan->sync_d, k, 1);
    GF_TRY(bce(gan, ctx, &logits, &zeros, dl, &dlogit, &v, err));
    s.loss_d_fake += v;
    GF_TRY(mean_sigmoid(gan, &logits, &v, err));
    s.d_fake += v;
    if (k == kn - 1 && gan->sync_d && gan->sync_d->comm && !exact) gf_grad_sync_arm(gan->sync_d);
    GF_TRY(gf_net_backward(&gan->d, ctx, &dlogit, NULL, true, GF_ACCUMULATE, err));
    if (exact) GF_TRY(gf_grad_tree_add(gan->sync_d, k, kn, err));
  }
  GF_TRY(seam(gan->sync_d, exact, err));
  GF_TRY(gf_net_adam(&gan->d, ctx, &gan->hp.adam_d, gan->adam_step_d + 1, err));
  gan->adam_step_d++;

  /* G step: fake through the updated D with label 1, back into G. With
   * several micro-batches G's forward is run again (same bits; running
   * statistics left alone: they were updated in the D step). */
  for (int k = 0; k < kn; k++) {
    int64_t s0 = sample0 + k * m;
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
    GF_TRY(gf_net_forward(&gan->d, ctx, &fake, GF_MODE_TRAIN, seed, step, s0, 2, &logits, err));
    if (exact) gf_bn_log_record(gan->sync_d, k, 2);
    GF_TRY(bce(gan, ctx, &logits, &ones, dl, &dlogit, &v, err));
    s.loss_g += v;
    GF_TRY(mean_sigmoid(gan, &logits, &v, err));
    s.d_fake_after += v;
    GF_TRY(gf_net_backward(&gan->d, ctx, &dlogit, &dfake_all, false, GF_OVERWRITE, err));
    if (k == kn - 1 && gan->sync_g && gan->sync_g->comm && !exact) gf_grad_sync_arm(gan->sync_g);
    gf_accum first = (k == 0 || exact) ? GF_OVERWRITE : GF_ACCUMULATE;
    GF_TRY(gf_net_backward(&gan->g, ctx, &dfake_all, NULL, true, first, err));
    if (exact) GF_TRY(gf_grad_tree_add(gan->sync_g, k, kn, err));
  }
  GF_TRY(seam(gan->sync_g, exact, err));
  GF_TRY(gf_net_adam(&gan->g, ctx, &gan->hp.adam_g, gan->adam_step_g + 1, err));
  gan->adam_step_g++;
  if (exact) {
    GF_TRY(gf_bn_log_replay(gan->sync_g, err));
    GF_TRY(gf_bn_log_replay(gan->sync_d, err));
  }

  if (stats) {
    double inv = 1.0 / kn;
    s.loss_d_real *= inv, s.loss_d_fake *= inv, s.loss_g *= inv;
    s.d_real *= inv, s.d_fake *= inv, s.d_fake_after *= inv;
    s.loss_d = s.loss_d_real + s.loss_d_fake;
    *stats = s;
  }
  return GF_OK;
}
