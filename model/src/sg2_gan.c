/* sg2_gan.c - building and freeing gf_sg2_gan (gf/sg2_gan.h) and its
 * hyper-parameters. The phases, Adam (with the lazy-regularization
 * correction) and the G EMA are sg2_gan_step.c's; the regularization
 * phases sg2_gan_reg.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gf/text.h"
#include "sg2_gan_internal.h"

/* A recipe float at its shortest decimal (0.0025f -> 0.0025), as the
 * official Python floats are. */
static double decimal(float f) {
  char b[32];
  GF_FORMAT_FITS(b, sizeof b, "%.7g", (double)f);
  return strtod(b, NULL);
}

gf_sg2_gan_hp gf_sg2_gan_hp_default(const gf_sg2_recipe *r) {
  gf_sg2_gan_hp hp;
  memset(&hp, 0, sizeof hp);
  hp.lr_g = hp.lr_d = r ? decimal(r->lr) : 0.0025;
  hp.beta1 = 0.0;
  hp.beta2 = 0.99;
  hp.eps = 1e-8;
  hp.style_mixing = r ? r->style_mixing : 0.9f;
  hp.pl_weight = r ? r->pl_weight : 2.0f;
  hp.pl_decay = 0.01f;
  hp.pl_batch_shrink = 2;
  hp.r1_gamma = r ? r->r1_gamma : 10.0f;
  hp.g_reg_interval = 4;
  hp.d_reg_interval = 16;
  hp.ema_kimg = r ? decimal(r->ema_kimg) : 10.0;
  hp.ema_rampup = r ? decimal(r->ema_rampup) : 0.05;
  hp.augment = true;
  hp.ada_p0 = 0.0f;
  hp.ada_target = 0.6;
  hp.ada_kimg = 500.0;
  hp.ada_interval = 4;
  hp.noise = GF_SG2_NOISE_RANDOM;
  return hp;
}

static gf_status check_hp(const gf_sg2_gan_hp *hp, gf_err *err) {
  if (!(hp->lr_g > 0) || !(hp->lr_d > 0) || !(hp->eps > 0) ||
      !(hp->beta1 >= 0 && hp->beta1 < 1) || !(hp->beta2 >= 0 && hp->beta2 < 1))
    return gf_fail(err, GF_EINVAL, "sg2 gan: Adam lr %g/%g, betas (%g, %g), "
                   "eps %g out of range", hp->lr_g, hp->lr_d, hp->beta1,
                   hp->beta2, hp->eps);
  if (!(hp->style_mixing >= 0 && hp->style_mixing <= 1))
    return gf_fail(err, GF_EINVAL, "sg2 gan: style_mixing %g outside [0, 1]",
                   (double)hp->style_mixing);
  if (!(hp->pl_weight >= 0) || !(hp->r1_gamma >= 0))
    return gf_fail(err, GF_EINVAL, "sg2 gan: pl_weight %g, r1_gamma %g must "
                   "be >= 0", (double)hp->pl_weight, (double)hp->r1_gamma);
  if (!(hp->pl_decay >= 0 && hp->pl_decay <= 1) || hp->pl_batch_shrink < 1)
    return gf_fail(err, GF_EINVAL, "sg2 gan: pl_decay %g outside [0, 1] or "
                   "pl_batch_shrink %d < 1", (double)hp->pl_decay,
                   hp->pl_batch_shrink);
  if (hp->g_reg_interval < 0 || hp->d_reg_interval < 0)
    return gf_fail(err, GF_EINVAL, "sg2 gan: reg intervals %d, %d < 0",
                   hp->g_reg_interval, hp->d_reg_interval);
  if (!(hp->ema_kimg >= 0) || !(hp->ema_rampup >= 0))
    return gf_fail(err, GF_EINVAL, "sg2 gan: ema_kimg %g, ema_rampup %g "
                   "must be >= 0", hp->ema_kimg, hp->ema_rampup);
  if (!(hp->ada_p0 >= 0) || !isfinite(hp->ada_p0) ||
      !isfinite(hp->ada_target) ||
      (hp->ada_target > 0 && (!(hp->ada_kimg > 0) || hp->ada_interval < 1)))
    return gf_fail(err, GF_EINVAL, "sg2 gan: ADA p0 %g, target %g, kimg %g, "
                   "interval %d", (double)hp->ada_p0, hp->ada_target,
                   hp->ada_kimg, hp->ada_interval);
  if (hp->noise != GF_SG2_NOISE_CONST && hp->noise != GF_SG2_NOISE_RANDOM &&
      hp->noise != GF_SG2_NOISE_NONE)
    return gf_fail(err, GF_EINVAL, "sg2 gan: noise mode %d", hp->noise);
  return GF_OK;
}

static gf_status dev(gf_tensor *t, gf_ctx *ctx, int ndim, int64_t a,
                     int64_t b, int64_t c, int64_t d, gf_err *err) {
  const int64_t shape[4] = {a, b, c, d};
  int di = ctx->device == GF_DEV_CPU ? 0 : ctx->device_index;
  return gf_tensor_init_on(t, GF_F32, ctx->device, di, ndim, shape, err);
}

static gf_status scratch_init(gf_sg2_gan *gan, gf_ctx *ctx, gf_err *err) {
  gf_sg2_gan_scratch *s = calloc(1, sizeof *s);
  if (!s) return gf_fail(err, GF_ENOMEM, "sg2 gan: scratch");
  gan->s = s;
  const gf_sg2_config *c = &gan->cfg;
  int64_t mb = gan->max_batch, C = c->img_channels, R = c->img_resolution;
  GF_TRY(dev(&s->z, ctx, 2, mb, c->z_dim, 1, 1, err));
  GF_TRY(dev(&s->z2, ctx, 2, mb, c->z_dim, 1, 1, err));
  if (c->c_dim > 0) GF_TRY(dev(&s->c, ctx, 2, mb, c->c_dim, 1, 1, err));
  GF_TRY(dev(&s->real, ctx, 4, mb, C, R, R, err));
  GF_TRY(dev(&s->aug, ctx, 4, mb, C, R, R, err));
  GF_TRY(dev(&s->daug, ctx, 4, mb, C, R, R, err));
  GF_TRY(dev(&s->dimg, ctx, 4, mb, C, R, R, err));
  int nws = gf_sg2_num_ws(c);
  GF_TRY(dev(&s->ws2, ctx, 3, mb, nws, c->w_dim, 1, err));
  GF_TRY(dev(&s->dws2, ctx, 3, mb, nws, c->w_dim, 1, err));
  GF_TRY(dev(&s->dlogits, ctx, 2, mb, 1, 1, 1, err));
  int64_t npl = mb / gan->hp.pl_batch_shrink;
  if (gan->hp.pl_weight > 0 && npl > 0) {
    GF_TRY(dev(&s->pl_noise, ctx, 4, npl, C, R, R, err));
    GF_TRY(dev(&s->dws, ctx, 3, npl, nws, c->w_dim, 1, err));
    s->hpl = malloc((size_t)(npl * C * R * R) * sizeof(float));
    if (!s->hpl) return gf_fail(err, GF_ENOMEM, "sg2 gan: host scratch");
  }
  s->hz = malloc((size_t)(mb * c->z_dim) * sizeof(float));
  s->hada = malloc((size_t)(mb * GF_ADA_NPARAMS) * sizeof(float));
  s->hlogits = malloc((size_t)mb * sizeof(float));
  s->hdlogits = malloc((size_t)mb * sizeof(float));
  /* the rounds' sums, and room for the ADA signs when gathered */
  s->stats = calloc((size_t)sg2g_rounds(gan) * SG2G_NSTAT + 2, sizeof(double));
  if (!s->hz || !s->hada || !s->hlogits || !s->hdlogits || !s->stats)
    return gf_fail(err, GF_ENOMEM, "sg2 gan: host scratch");
  return GF_OK;
}

static void scratch_free(gf_sg2_gan_scratch *s) {
  if (!s) return;
  gf_tensor *t[] = {&s->z,    &s->z2,   &s->c,   &s->real,  &s->aug,
                    &s->daug, &s->dimg, &s->ws2, &s->dws2, &s->dlogits,
                    &s->pl_noise, &s->dws};
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) gf_tensor_free(t[i]);
  free(s->hz);
  free(s->hada);
  free(s->hlogits);
  free(s->hdlogits);
  free(s->hpl);
  free(s->stats);
  sg2g_dist_free(s);
  free(s);
}

void gf_sg2_gan_free(gf_sg2_gan *gan) {
  if (!gan) return;
  gf_sg2_net_free(&gan->g);
  gf_sg2_net_free(&gan->d);
  gf_sg2_net_free(&gan->g_ema);
  gf_ada_free(&gan->ada);
  scratch_free(gan->s);
  memset(gan, 0, sizeof *gan);
}

/* dst arena = src arena (same layout: the same config's nets). */
static gf_status copy_arena(gf_arena *dst, const gf_arena *src, gf_err *err) {
  if (!src->base || src->used == 0) return GF_OK;
  if (dst->used != src->used)
    return gf_fail(err, GF_ESTATE, "sg2 gan: arenas of %zu and %zu bytes",
                   dst->used, src->used);
  gf_tensor a, b;
  GF_TRY(gf_arena_view_all(dst, &a, err));
  GF_TRY(gf_arena_view_all(src, &b, err));
  a.device_index = dst->device_index;
  b.device_index = src->device_index;
  return gf_tensor_copy(&a, &b, err);
}

gf_status gf_sg2_gan_sync_ema(gf_sg2_gan *gan, gf_ctx *ctx, gf_err *err) {
  (void)ctx;
  GF_TRY(copy_arena(&gan->g_ema.params, &gan->g.params, err));
  return copy_arena(&gan->g_ema.buffers, &gan->g.buffers, err);
}

gf_status gf_sg2_gan_init(gf_sg2_gan *gan, gf_ctx *ctx,
                          const gf_sg2_config *cfg, const gf_sg2_gan_hp *hp,
                          int batch, int max_batch, uint64_t init_seed,
                          gf_err *err) {
  memset(gan, 0, sizeof *gan);
  if (!ctx || !cfg || !hp)
    return gf_fail(err, GF_EINVAL, "sg2 gan: NULL ctx, config or hp");
  if (max_batch < 1 || batch < max_batch || batch % max_batch != 0)
    return gf_fail(err, GF_EINVAL, "sg2 gan: batch %d must be a multiple of "
                   "max_batch %d >= 1", batch, max_batch);
  GF_TRY(gf_sg2_config_validate(cfg, err));
  GF_TRY(check_hp(hp, err));
  if (hp->pl_weight > 0 && max_batch / hp->pl_batch_shrink < 1)
    return gf_fail(err, GF_EINVAL, "sg2 gan: path length needs rounds of at "
                   "least pl_batch_shrink %d samples (max_batch %d)",
                   hp->pl_batch_shrink, max_batch);
  gan->cfg = *cfg;
  gan->hp = *hp;
  gan->batch = batch;
  gan->max_batch = max_batch;
  gan->world = 1;
  gan->ctl = gf_ada_ctl_start(hp->ada_p0);
  gan->greg = gf_sg2_greg_pl;
  gan->dreg = gf_sg2_dreg_r1;
  gf_status st =
      gf_sg2_net_init(&gan->g, ctx, cfg, GF_SG2_G, max_batch, true, err);
  if (st == GF_OK)
    st = gf_sg2_net_init(&gan->d, ctx, cfg, GF_SG2_D, max_batch, true, err);
  if (st == GF_OK)
    st = gf_sg2_net_init(&gan->g_ema, ctx, cfg, GF_SG2_G, max_batch, false,
                         err);
  if (st == GF_OK) st = gf_sg2_init_params(&gan->g, init_seed, err);
  if (st == GF_OK) st = gf_sg2_init_params(&gan->d, init_seed, err);
  if (st == GF_OK) st = gf_sg2_gan_sync_ema(gan, ctx, err);
  if (st == GF_OK && hp->augment) st = gf_ada_init(&gan->ada, ctx, err);
  if (st == GF_OK) st = scratch_init(gan, ctx, err);
  if (st != GF_OK) gf_sg2_gan_free(gan);
  return st;
}

static gf_status unsupported(const char *phase, const char *what,
                             const char *knob, gf_err *err) {
  return gf_fail(err, GF_EUNSUPPORTED, "sg2 gan: the %s (%s) is refused "
                 "by its hook; set %s 0 to run without it", what, phase,
                 knob);
}

gf_status gf_sg2_greg_unsupported(struct gf_sg2_gan *gan, gf_ctx *ctx,
                                  const struct gf_sg2_step_in *in,
                                  int64_t sample0, int64_t n, float gain,
                                  gf_accum accum, gf_err *err) {
  (void)gan, (void)ctx, (void)in, (void)sample0, (void)n, (void)gain;
  (void)accum;
  return unsupported("Greg", "path-length regularization", "pl_weight", err);
}

gf_status gf_sg2_dreg_unsupported(struct gf_sg2_gan *gan, gf_ctx *ctx,
                                  const struct gf_sg2_step_in *in,
                                  int64_t sample0, int64_t n, float gain,
                                  gf_accum accum, gf_err *err) {
  (void)gan, (void)ctx, (void)in, (void)sample0, (void)n, (void)gain;
  (void)accum;
  return unsupported("Dreg", "lazy R1 regularization", "r1_gamma", err);
}
