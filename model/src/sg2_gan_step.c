/* sg2_gan_step.c - one StyleGAN2-ADA training iteration (gf/sg2_gan.h):
 * the draws, run_G with style mixing, run_D through the augmentation, the
 * softplus losses' gradients, the phases, Adam with the lazy correction,
 * the EMA and the p controller. */
#include <math.h>
#include <string.h>

#include "gf/ops.h"
#include "gf/rng.h"
#include "sg2_gan_internal.h"

/* Rows r0 .. r0 + n - 1 of t (a contiguous view). */
gf_tensor sg2g_rows(const gf_tensor *t, int64_t r0, int64_t n) {
  gf_tensor v = *t;
  if (!t->data || t->shape[0] < 1) return v; /* absent (c with c_dim 0) */
  size_t row = gf_tensor_nbytes(t) / (size_t)t->shape[0];
  v.data = (char *)t->data + (size_t)r0 * row;
  v.shape[0] = n;
  v.owns = false;
  return v;
}

/* The first n rows of dst (scratch) = rows r0.. of src (any device). */
gf_status sg2g_take_rows(gf_tensor *dst, const gf_tensor *src, int64_t r0,
                           int64_t n, gf_tensor *out, gf_err *err) {
  *out = sg2g_rows(dst, 0, n);
  gf_tensor s = sg2g_rows(src, r0, n);
  return gf_tensor_copy(out, &s, err);
}

/* dst (any device) = the host floats h (dst's numel). */
gf_status sg2g_put(gf_tensor *dst, const float *h, gf_err *err) {
  gf_tensor v;
  GF_TRY(gf_tensor_view(&v, (void *)h, GF_F32, GF_DEV_CPU, dst->ndim,
                        dst->shape, err));
  return gf_tensor_copy(dst, &v, err);
}

gf_status sg2g_get(float *h, const gf_tensor *src, gf_err *err) {
  gf_tensor v;
  GF_TRY(gf_tensor_view(&v, h, GF_F32, GF_DEV_CPU, src->ndim, src->shape,
                        err));
  return gf_tensor_copy(&v, src, err);
}

/* z (second: the mixing latents) of rows sample0 .. + n of phase. */
gf_status sg2g_latents(gf_sg2_gan *gan, const gf_sg2_step_in *in,
                         uint64_t seed, int phase, int second,
                         int64_t sample0, int64_t n, gf_tensor *out,
                         gf_err *err) {
  gf_sg2_gan_scratch *s = gan->s;
  int64_t zd = gan->cfg.z_dim;
  *out = sg2g_rows(second ? &s->z2 : &s->z, 0, n);
  const gf_sg2_draws *d = in->draws;
  const float *given = d ? (second ? d->z2[phase] : d->z[phase]) : NULL;
  int64_t g0 = gan->dist.sample_base + sample0; /* the global sample */
  if (given) return sg2g_put(out, given + g0 * zd, err);
  gf_philox_stream st = gf_rng_sample_stream(
      seed, GF_RNG_SG2_LATENT, gan->step, (uint32_t)(2 * phase + second),
      g0, zd);
  gf_philox_normal(&st, s->hz, (size_t)(n * zd), 0.0f, 1.0f);
  return sg2g_put(out, s->hz, err);
}

/* The phase's cut-off: num_ws when no mixing happens. */
int sg2g_cutoff(const gf_sg2_gan *gan, const gf_sg2_step_in *in,
                     uint64_t seed, int phase) {
  int nws = gf_sg2_num_ws(&gan->cfg);
  if (gan->hp.style_mixing <= 0.0f) return nws;
  if (in->draws && in->draws->cutoff[phase] > 0) {
    int c = in->draws->cutoff[phase];
    return c > nws ? nws : c;
  }
  gf_philox_stream st = gf_rng_stream(seed, GF_RNG_SG2_MIX, gan->step,
                                      (uint32_t)phase);
  uint32_t w[2];
  gf_philox_u32(&st, w, 2);
  float u = (float)(w[0] >> 8) * (1.0f / 16777216.0f);
  int cut = 1 + (int)(w[1] % (uint32_t)(nws - 1));
  return u < gan->hp.style_mixing ? cut : nws;
}

/* c rows of phase (or of the reals) into the c scratch; NULL for c_dim 0. */
gf_status sg2g_labels(gf_sg2_gan *gan, const gf_tensor *src, int64_t r0,
                        int64_t n, gf_tensor *out, const gf_tensor **cp,
                        gf_err *err) {
  *cp = NULL;
  if (gan->cfg.c_dim == 0) return GF_OK;
  if (!src)
    return gf_fail(err, GF_EINVAL, "sg2 gan: c_dim %d needs labels",
                   gan->cfg.c_dim);
  GF_TRY(sg2g_take_rows(&gan->s->c, src, r0, n, out, err));
  *cp = out;
  return GF_OK;
}

/* The mapping half of the official run_G for rows sample0 .. + n: ws (a
 * view of the mapping's output) = mapping(z of zphase, c of zphase), its
 * columns from cutoff on replaced by mapping(z2 of phase, c) when mixing
 * (z2 drawn whatever the cut-off, as the official code runs it; w_avg
 * updated from z's forward only). The mapping's last forward is z's. */
gf_status sg2g_run_ws(gf_sg2_gan *gan, gf_ctx *ctx, const gf_sg2_step_in *in,
                      uint64_t seed, int phase, int zphase, int64_t sample0,
                      int64_t n, int cutoff, gf_tensor *ws, gf_err *err) {
  gf_sg2_gan_scratch *s = gan->s;
  gf_tensor z, z2, cv, ws2;
  const gf_tensor *c;
  GF_TRY(sg2g_labels(gan, in->gen_c[zphase], sample0, n, &cv, &c, err));
  bool mixing = gan->hp.style_mixing > 0.0f;
  int nws = gf_sg2_num_ws(&gan->cfg);
  int64_t wd = gan->cfg.w_dim;
  if (mixing) {
    GF_TRY(sg2g_latents(gan, in, seed, phase, 1, sample0, n, &z2, err));
    GF_TRY(gf_sg2_mapping_fwd(&gan->g, ctx, &z2, c, 1.0f, 0, GF_MODE_TRAIN,
                              ws, err));
    ws2 = sg2g_rows(&s->ws2, 0, n);
    GF_TRY(gf_tensor_copy(&ws2, ws, err));
  }
  GF_TRY(sg2g_latents(gan, in, seed, zphase, 0, sample0, n, &z, err));
  GF_TRY(gf_sg2_mapping_fwd(&gan->g, ctx, &z, c, 1.0f, 0, GF_MODE_TRAIN, ws,
                            err));
  GF_TRY(sg2g_w_avg(gan, ctx, err));
  if (mixing && cutoff < nws) {
    for (int64_t i = 0; i < n; i++) {
      const int64_t len[1] = {(int64_t)(nws - cutoff) * wd};
      size_t off = (size_t)((i * nws + cutoff) * wd) * sizeof(float);
      gf_tensor a, b;
      GF_TRY(gf_tensor_view(&a, (char *)ws->data + off, GF_F32, ws->device,
                            1, len, err));
      GF_TRY(gf_tensor_view(&b, (char *)ws2.data + off, GF_F32, ws2.device,
                            1, len, err));
      a.device_index = ws->device_index;
      b.device_index = ws2.device_index;
      GF_TRY(gf_tensor_copy(&a, &b, err));
    }
  }
  return GF_OK;
}

/* The official run_G for rows sample0 .. + n: img is a view of G's image. */
static gf_status run_g(gf_sg2_gan *gan, gf_ctx *ctx, const gf_sg2_step_in *in,
                       uint64_t seed, int phase, int64_t sample0, int64_t n,
                       int cutoff, gf_tensor *img, gf_err *err) {
  gf_tensor ws;
  GF_TRY(sg2g_run_ws(gan, ctx, in, seed, phase, phase, sample0, n, cutoff,
                     &ws, err));
  return gf_sg2_synthesis_fwd(&gan->g, ctx, &ws, gan->hp.noise, seed,
                              gan->step * 4 + phase,
                              gan->dist.sample_base + sample0, GF_MODE_TRAIN,
                              img, err);
}

/* Zeroes columns [w0, w1) of each of the n rows of t [n, num_ws, w_dim]. */
static gf_status zero_ws(gf_ctx *ctx, gf_tensor *t, int64_t n, int nws,
                         int64_t wd, int w0, int w1, gf_err *err) {
  if (w1 <= w0) return GF_OK;
  for (int64_t i = 0; i < n; i++) {
    const int64_t len[1] = {(int64_t)(w1 - w0) * wd};
    gf_tensor v;
    size_t off = (size_t)((i * nws + w0) * wd) * sizeof(float);
    GF_TRY(gf_tensor_view(&v, (char *)t->data + off, GF_F32, t->device, 1,
                          len, err));
    v.device_index = t->device_index;
    GF_TRY(gf_fill(ctx, &v, 0.0f, err));
  }
  return GF_OK;
}

/* The backward of sg2g_run_ws from dws (its columns are overwritten) into
 * the mapping's parameter gradients. */
gf_status sg2g_back_ws(gf_sg2_gan *gan, gf_ctx *ctx, gf_tensor *dws,
                       int64_t n, int cutoff, gf_accum accum, gf_err *err) {
  gf_sg2_gan_scratch *s = gan->s;
  int nws = gf_sg2_num_ws(&gan->cfg);
  int64_t wd = gan->cfg.w_dim;
  bool mixed = gan->hp.style_mixing > 0.0f && cutoff < nws;
  gf_tensor dws2 = sg2g_rows(&s->dws2, 0, n);
  if (mixed) {
    GF_TRY(gf_tensor_copy(&dws2, dws, err));
    GF_TRY(zero_ws(ctx, dws, n, nws, wd, cutoff, nws, err));
    GF_TRY(zero_ws(ctx, &dws2, n, nws, wd, 0, cutoff, err));
  }
  GF_TRY(gf_sg2_mapping_bwd(&gan->g, ctx, dws, accum, err));
  if (!mixed) return GF_OK;
  /* the mixing latents' mapping again (its forward was overwritten) */
  gf_tensor z2 = sg2g_rows(&s->z2, 0, n), cv = sg2g_rows(&s->c, 0, n), ws;
  const gf_tensor *c = gan->cfg.c_dim > 0 ? &cv : NULL;
  GF_TRY(gf_sg2_mapping_fwd(&gan->g, ctx, &z2, c, 1.0f, 0, GF_MODE_TRAIN,
                            &ws, err));
  return gf_sg2_mapping_bwd(&gan->g, ctx, &dws2, GF_ACCUMULATE, err);
}

/* The backward of run_g from dimg into G's parameter gradients. */
static gf_status back_g(gf_sg2_gan *gan, gf_ctx *ctx, const gf_tensor *dimg,
                        int64_t n, int cutoff, gf_accum accum, gf_err *err) {
  gf_tensor dws;
  GF_TRY(gf_sg2_synthesis_bwd(&gan->g, ctx, dimg, accum, &dws, err));
  return sg2g_back_ws(gan, ctx, &dws, n, cutoff, accum, err);
}

/* D's input for img: img itself, or aug(img) (the pass's ADA draws) in
 * s->aug. */
gf_status sg2g_augment(gf_sg2_gan *gan, const gf_sg2_step_in *in,
                       const gf_tensor *img, uint64_t seed, int pass,
                       int64_t sample0, int64_t n, const gf_tensor **x,
                       gf_err *err) {
  gf_sg2_gan_scratch *s = gan->s;
  *x = img;
  if (!gan->hp.augment) return GF_OK;
  const float *given = in->draws ? in->draws->ada[pass] : NULL;
  const float *pr = s->hada;
  int64_t g0 = gan->dist.sample_base + sample0; /* the global sample */
  if (given)
    pr = given + g0 * GF_ADA_NPARAMS;
  else
    GF_TRY(gf_ada_draw(s->hada, n, seed, gan->step, pass, g0, err));
  s->aug_view = sg2g_rows(&s->aug, 0, n);
  GF_TRY(gf_ada_fwd(&gan->ada, img, pr, gan->ctl.p, &s->aug_view, err));
  *x = &s->aug_view;
  return GF_OK;
}

/* The official run_D: logits of aug(img) into s->hlogits. */
static gf_status run_d(gf_sg2_gan *gan, gf_ctx *ctx, const gf_sg2_step_in *in,
                       const gf_tensor *img, const gf_tensor *c, uint64_t seed,
                       int pass, int64_t sample0, int64_t n, gf_err *err) {
  const gf_tensor *x;
  gf_tensor logits;
  GF_TRY(sg2g_augment(gan, in, img, seed, pass, sample0, n, &x, err));
  GF_TRY(gf_sg2_d_fwd(&gan->d, ctx, x, c, GF_MODE_TRAIN, &logits, err));
  return sg2g_get(gan->s->hlogits, &logits, err);
}

/* loss = sum softplus(sgn x) over the round's logits; hdlogits = the
 * gradient of mean(softplus(sgn x)) gain, as PyTorch's autograd forms it
 * (mean: g = gain / n in f32; softplus backward, threshold 20). */
static double softplus_loss(gf_sg2_gan_scratch *s, int64_t n, float sgn,
                            float gain) {
  float g = gain / (float)n;
  double sum = 0.0;
  for (int64_t i = 0; i < n; i++) {
    float x = sgn * s->hlogits[i];
    float z = expf(x);
    sum += x > 20.0f ? (double)x : (double)log1pf(z);
    float d = x > 20.0f ? g : g * z / (z + 1.0f);
    s->hdlogits[i] = sgn * d;
  }
  return sum;
}

/* D's backward from s->hdlogits; dimg (may be NULL) receives dL/dimg of
 * run_d's img (through the augmentation). */
static gf_status back_d(gf_sg2_gan *gan, gf_ctx *ctx, int64_t n,
                        gf_tensor *dimg, gf_accum accum, gf_err *err) {
  gf_sg2_gan_scratch *s = gan->s;
  gf_tensor dl = sg2g_rows(&s->dlogits, 0, n), daug = sg2g_rows(&s->daug, 0, n);
  GF_TRY(sg2g_put(&dl, s->hdlogits, err));
  gf_tensor *dx = dimg ? (gan->hp.augment ? &daug : dimg) : NULL;
  GF_TRY(gf_sg2_d_bwd(&gan->d, ctx, &dl, dx, accum, err));
  if (dimg && gan->hp.augment) GF_TRY(gf_ada_bwd(&gan->ada, &daug, dimg, err));
  return GF_OK;
}

/* The lazy-regularization correction c = k / (k + 1): lr c, betas ** c. */
gf_adam_params gf_sg2_gan_adam(const gf_sg2_gan_hp *hp, gf_sg2_role role) {
  int k = role == GF_SG2_G ? hp->g_reg_interval : hp->d_reg_interval;
  double lr = role == GF_SG2_G ? hp->lr_g : hp->lr_d;
  gf_adam_params a = {lr, hp->beta1, hp->beta2, hp->eps, 0.0};
  if (k > 0) {
    double c = (double)k / (double)(k + 1);
    a.lr = lr * c;
    a.beta1 = pow(hp->beta1, c);
    a.beta2 = pow(hp->beta2, c);
  }
  return a;
}

static gf_status adam(gf_sg2_gan *gan, gf_ctx *ctx, gf_sg2_net *net,
                      int64_t *count, gf_err *err) {
  gf_adam_params p = gf_sg2_gan_adam(&gan->hp, net->role);
  gf_tensor w, g, m, v;
  GF_TRY(gf_arena_view_all(&net->params, &w, err));
  GF_TRY(gf_arena_view_all(&net->grads, &g, err));
  GF_TRY(gf_arena_view_all(&net->adam_m, &m, err));
  GF_TRY(gf_arena_view_all(&net->adam_v, &v, err));
  w.device_index = g.device_index = m.device_index = v.device_index =
      net->params.device_index;
  GF_TRY(gf_adam_step(ctx, &p, *count + 1, &w, &g, &m, &v, err));
  (*count)++;
  return GF_OK;
}

/* D's logits of aug(G(z, c)) of phase ph, rows s0 .. + n, into
 * s->hlogits (run_G, then run_D with the phase's labels). */
static gf_status fake_logits(gf_sg2_gan *gan, gf_ctx *ctx,
                             const gf_sg2_step_in *in, uint64_t seed, int ph,
                             int pass, int cutoff, int64_t s0, int64_t n,
                             gf_err *err) {
  gf_tensor img, cv;
  const gf_tensor *c;
  GF_TRY(run_g(gan, ctx, in, seed, ph, s0, n, cutoff, &img, err));
  GF_TRY(sg2g_labels(gan, in->gen_c[ph], s0, n, &cv, &c, err));
  return run_d(gan, ctx, in, &img, c, seed, pass, s0, n, err);
}

static gf_status phase_gmain(gf_sg2_gan *gan, gf_ctx *ctx,
                             const gf_sg2_step_in *in, uint64_t seed,
                             bool gboth, gf_err *err) {
  const int ph = GF_SG2_PHASE_GMAIN;
  int cutoff = sg2g_cutoff(gan, in, seed, ph);
  int64_t n = gan->max_batch;
  for (int r = 0; r < sg2g_rounds(gan); r++) {
    int64_t s0 = r * n;
    double *st = gan->s->stats + (size_t)r * SG2G_NSTAT;
    gf_tensor dimg = sg2g_rows(&gan->s->dimg, 0, n);
    GF_TRY(fake_logits(gan, ctx, in, seed, ph, GF_SG2_PASS_GMAIN_FAKE, cutoff,
                       s0, n, err));
    st[SG2G_LOSS_G] = softplus_loss(gan->s, n, -1.0f, 1.0f);
    GF_TRY(back_d(gan, ctx, n, &dimg, GF_OVERWRITE, err));
    GF_TRY(back_g(gan, ctx, &dimg, n, cutoff, sg2g_round_accum(gan, r), err));
    if (gboth)
      GF_TRY(gan->greg(gan, ctx, in, s0, n, 1.0f, GF_ACCUMULATE, err));
    sg2g_round_done(gan, &gan->g, r);
  }
  GF_TRY(sg2g_reduce(gan, &gan->g, err));
  return adam(gan, ctx, &gan->g, &gan->adam_step_g, err);
}

static gf_status phase_dmain(gf_sg2_gan *gan, gf_ctx *ctx,
                             const gf_sg2_step_in *in, uint64_t seed,
                             bool dboth, gf_err *err) {
  const int ph = GF_SG2_PHASE_DMAIN;
  int cutoff = sg2g_cutoff(gan, in, seed, ph);
  int64_t n = gan->max_batch;
  if (!in->real)
    return gf_fail(err, GF_EINVAL, "sg2 gan: no real batch");
  for (int r = 0; r < sg2g_rounds(gan); r++) {
    int64_t s0 = r * n;
    double *st = gan->s->stats + (size_t)r * SG2G_NSTAT, sf = 0.0, sr = 0.0;
    gf_tensor cv, real;
    const gf_tensor *c;
    GF_TRY(fake_logits(gan, ctx, in, seed, ph, GF_SG2_PASS_DMAIN_FAKE, cutoff,
                       s0, n, err));
    for (int64_t i = 0; i < n; i++) sf += gan->s->hlogits[i];
    st[SG2G_SCORE_F] = sf;
    st[SG2G_LOSS_DF] = softplus_loss(gan->s, n, 1.0f, 1.0f);
    GF_TRY(back_d(gan, ctx, n, NULL, sg2g_round_accum(gan, r), err));
    GF_TRY(sg2g_take_rows(&gan->s->real, in->real, s0, n, &real, err));
    GF_TRY(sg2g_labels(gan, in->real_c, s0, n, &cv, &c, err));
    GF_TRY(run_d(gan, ctx, in, &real, c, seed, GF_SG2_PASS_DMAIN_REAL, s0, n,
                 err));
    for (int64_t i = 0; i < n; i++) {
      float x = gan->s->hlogits[i];
      sr += x;
      gan->sign_sum += x > 0.0f ? 1.0 : x < 0.0f ? -1.0 : 0.0;
    }
    gan->sign_count += n;
    st[SG2G_SCORE_R] = sr;
    st[SG2G_LOSS_DR] = softplus_loss(gan->s, n, -1.0f, 1.0f);
    GF_TRY(back_d(gan, ctx, n, NULL, GF_ACCUMULATE, err));
    if (dboth)
      GF_TRY(gan->dreg(gan, ctx, in, s0, n, 1.0f, GF_ACCUMULATE, err));
    sg2g_round_done(gan, &gan->d, r);
  }
  GF_TRY(sg2g_reduce(gan, &gan->d, err));
  return adam(gan, ctx, &gan->d, &gan->adam_step_d, err);
}

/* A lazy regularization phase: the hook per round, then Adam. */
static gf_status phase_reg(gf_sg2_gan *gan, gf_ctx *ctx,
                           const gf_sg2_step_in *in, gf_sg2_reg_fn fn,
                           int interval, gf_sg2_net *net, int64_t *count,
                           gf_err *err) {
  int64_t n = gan->max_batch;
  for (int r = 0; r < sg2g_rounds(gan); r++) {
    GF_TRY(fn(gan, ctx, in, r * n, n, (float)interval,
              sg2g_round_accum(gan, r), err));
    sg2g_round_done(gan, net, r);
  }
  GF_TRY(sg2g_reduce(gan, net, err));
  return adam(gan, ctx, net, count, err);
}

static gf_status ema(gf_sg2_gan *gan, gf_ctx *ctx, gf_err *err) {
  double nimg = gan->hp.ema_kimg * 1000.0;
  if (gan->hp.ema_rampup > 0) {
    double ramp = (double)gan->cur_nimg * gan->hp.ema_rampup;
    if (ramp < nimg) nimg = ramp;
  }
  double batch = (double)gan->batch * gan->world; /* the global batch */
  double beta = pow(0.5, batch / (nimg > 1e-8 ? nimg : 1e-8));
  gf_tensor a, x;
  GF_TRY(gf_arena_view_all(&gan->g_ema.params, &a, err));
  GF_TRY(gf_arena_view_all(&gan->g.params, &x, err));
  a.device_index = gan->g_ema.params.device_index;
  x.device_index = gan->g.params.device_index;
  GF_TRY(gf_lerp(ctx, &a, &x, beta, err));
  GF_TRY(gf_arena_view_all(&gan->g_ema.buffers, &a, err));
  GF_TRY(gf_arena_view_all(&gan->g.buffers, &x, err));
  a.device_index = gan->g_ema.buffers.device_index;
  x.device_index = gan->g.buffers.device_index;
  return gf_tensor_copy(&a, &x, err);
}

static gf_status check_in(const gf_sg2_gan *gan, const gf_sg2_step_in *in,
                          gf_err *err) {
  const gf_sg2_config *c = &gan->cfg;
  const gf_tensor *r = in->real;
  if (r && (r->dtype != GF_F32 || r->ndim != 4 || r->shape[0] != gan->batch ||
            r->shape[1] != c->img_channels ||
            r->shape[2] != c->img_resolution ||
            r->shape[3] != c->img_resolution))
    return gf_fail(err, GF_EINVAL, "sg2 gan: real must be f32 [%d, %d, %d, "
                   "%d]", gan->batch, c->img_channels, c->img_resolution,
                   c->img_resolution);
  const gf_tensor *cs[5] = {in->real_c, in->gen_c[0], in->gen_c[1],
                            in->gen_c[2], in->gen_c[3]};
  for (int i = 0; i < 5; i++)
    if (c->c_dim > 0 && cs[i] &&
        (cs[i]->dtype != GF_F32 || cs[i]->ndim != 2 ||
         cs[i]->shape[0] != gan->batch || cs[i]->shape[1] != c->c_dim))
      return gf_fail(err, GF_EINVAL, "sg2 gan: labels must be f32 [%d, %d]",
                     gan->batch, c->c_dim);
  return GF_OK;
}

gf_status gf_sg2_gan_step(gf_sg2_gan *gan, gf_ctx *ctx,
                          const gf_sg2_step_in *in, uint64_t seed,
                          gf_sg2_step_out *out, gf_err *err) {
  if (!gan || !gan->s || !ctx || !in)
    return gf_fail(err, GF_EINVAL, "sg2 gan: NULL argument or gan not built");
  GF_TRY(check_in(gan, in, err));
  const gf_sg2_gan_hp *hp = &gan->hp;
  if (out) memset(out, 0, sizeof *out);
  gf_sg2_gan_scratch *sc = gan->s;
  gan->sign_sum = 0.0;
  gan->sign_count = 0;
  sc->seed = seed;
  memset(sc->stats, 0,
         (size_t)sg2g_rounds(gan) * SG2G_NSTAT * sizeof *sc->stats);
  sc->ran_pl = sc->ran_r1 = false;
  sc->wlog_n = 0;
  int kg = hp->g_reg_interval, kd = hp->d_reg_interval;
  bool greg = hp->pl_weight > 0 && kg > 0 && gan->step % kg == 0;
  bool dreg = hp->r1_gamma > 0 && kd > 0 && gan->step % kd == 0;
  GF_TRY(phase_gmain(gan, ctx, in, seed, hp->pl_weight > 0 && kg == 0, err));
  if (greg)
    GF_TRY(phase_reg(gan, ctx, in, gan->greg, kg, &gan->g, &gan->adam_step_g,
                     err));
  GF_TRY(phase_dmain(gan, ctx, in, seed, hp->r1_gamma > 0 && kd == 0, err));
  if (dreg)
    GF_TRY(phase_reg(gan, ctx, in, gan->dreg, kd, &gan->d, &gan->adam_step_d,
                     err));
  double sums[SG2G_NSTAT];
  GF_TRY(sg2g_gather_stats(gan, sums, err));
  GF_TRY(sg2g_w_avg_replay(gan, ctx, err));
  GF_TRY(ema(gan, ctx, err));
  int64_t batch = (int64_t)gan->batch * gan->world; /* the global batch */
  gan->cur_nimg += batch;
  gan->step++;
  if (hp->augment && hp->ada_target > 0) {
    gf_ada_ctl next;
    GF_TRY(gf_ada_ctl_step(&gan->ctl, gan->sign_sum, gan->sign_count,
                           gan->step, batch, hp->ada_interval,
                           hp->ada_target, hp->ada_kimg, &next, err));
    gan->ctl = next;
  }
  if (out) {
    double b = (double)batch, rounds = (double)batch / gan->max_batch;
    out->loss_g = sums[SG2G_LOSS_G] / b;
    out->loss_d = (sums[SG2G_LOSS_DF] + sums[SG2G_LOSS_DR]) / b;
    out->scores_fake = sums[SG2G_SCORE_F] / b;
    out->scores_real = sums[SG2G_SCORE_R] / b;
    out->ada_p = gan->ctl.p;
    out->ada_rt = gan->ctl.rt;
    out->real_sign_sum = gan->sign_sum;
    out->real_sign_count = gan->sign_count;
    out->ran_greg = greg;
    out->ran_dreg = dreg;
    if (sc->ran_pl) out->pl_penalty = sums[SG2G_PL_PEN] / rounds;
    if (sc->ran_r1) out->r1_penalty = sums[SG2G_R1_PEN] / rounds;
    out->pl_mean = gan->pl_mean;
  }
  return GF_OK;
}
