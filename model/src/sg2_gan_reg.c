/* sg2_gan_reg.c - the regularization phases of the StyleGAN2-ADA step
 * (gf/sg2_gan.h): Greg (path length, gf_sg2_g_pl, on a shrunk batch with
 * its own latents, labels, mixing and noise) and Dreg (R1, gf_sg2_d_r1, on
 * the augmented reals), as the official loss's phases run them. */
#include <math.h>

#include "gf/rng.h"
#include "sg2_gan_internal.h"

gf_status gf_sg2_greg_pl(gf_sg2_gan *gan, gf_ctx *ctx, const gf_sg2_step_in *in,
                         int64_t sample0, int64_t n, float gain, gf_accum accum,
                         gf_err *err) {
  if (!gan || !gan->s || !ctx || !in)
    return gf_fail(err, GF_EINVAL, "sg2 Greg: NULL argument");
  const gf_sg2_gan_hp *hp = &gan->hp;
  gf_sg2_gan_scratch *s = gan->s;
  int64_t m = n / hp->pl_batch_shrink;
  if (m < 1 || !s->pl_noise.data || m > s->pl_noise.shape[0])
    return gf_fail(err, GF_EINVAL,
                   "sg2 Greg: a round of %lld samples "
                   "shrunk by %d (gan built with pl_weight %g)",
                   (long long)n, hp->pl_batch_shrink, (double)hp->pl_weight);
  const int ph = GF_SG2_PHASE_GREG;
  /* 'Gboth' (no lazy interval): the official Gpl takes Gmain's latents */
  int zph = hp->g_reg_interval == 0 ? GF_SG2_PHASE_GMAIN : ph;
  int cutoff = sg2g_cutoff(gan, in, s->seed, ph);
  gf_tensor ws;
  GF_TRY(sg2g_run_ws(gan, ctx, in, s->seed, ph, zph, sample0, m, cutoff, &ws,
                     err));
  /* pl_noise = randn / sqrt(H W) (the official divides by a double) */
  const gf_sg2_config *c = &gan->cfg;
  int64_t per = (int64_t)c->img_channels * c->img_resolution *
                c->img_resolution;
  gf_tensor pn = sg2g_rows(&s->pl_noise, 0, m);
  const float *given = in->draws ? in->draws->pl_noise : NULL;
  if (given) {
    GF_TRY(sg2g_put(&pn, given + sample0 * per, err));
  } else {
    gf_philox_stream st = gf_rng_sample_stream(s->seed, GF_RNG_SG2_PL_NOISE,
                                               gan->step, 0, sample0, per);
    gf_philox_normal(&st, s->hpl, (size_t)(m * per), 0.0f, 1.0f);
    float d = (float)sqrt((double)c->img_resolution * c->img_resolution);
    for (int64_t i = 0; i < m * per; i++) s->hpl[i] /= d;
    GF_TRY(sg2g_put(&pn, s->hpl, err));
  }
  gf_tensor dws = sg2g_rows(&s->dws, 0, m);
  gf_sg2_pl_args args = {.pl_mean = gan->pl_mean,
                         .decay = hp->pl_decay,
                         .weight = hp->pl_weight,
                         .scale = gain,
                         .noise = hp->noise,
                         .seed = s->seed,
                         .step = gan->step * 4 + ph,
                         .sample0 = sample0,
                         .dws_out = &dws};
  gf_sg2_pl_out out;
  GF_TRY(gf_sg2_g_pl(&gan->g, ctx, &ws, &pn, &args, accum, &out, err));
  GF_TRY(sg2g_back_ws(gan, ctx, &dws, m, cutoff, accum, err));
  gan->pl_mean = out.pl_mean;
  s->pl_pen_sum += out.penalty;
  s->pl_rounds++;
  return GF_OK;
}

gf_status gf_sg2_dreg_r1(gf_sg2_gan *gan, gf_ctx *ctx, const gf_sg2_step_in *in,
                         int64_t sample0, int64_t n, float gain, gf_accum accum,
                         gf_err *err) {
  if (!gan || !gan->s || !ctx || !in)
    return gf_fail(err, GF_EINVAL, "sg2 Dreg: NULL argument");
  if (!in->real) return gf_fail(err, GF_EINVAL, "sg2 Dreg: no real batch");
  const gf_sg2_gan_hp *hp = &gan->hp;
  gf_sg2_gan_scratch *s = gan->s;
  /* 'Dboth' (no lazy interval): the official R1 differentiates Dmain's
   * real forward: the same augmentation, its signs already counted */
  bool both = hp->d_reg_interval == 0;
  int pass = both ? GF_SG2_PASS_DMAIN_REAL : GF_SG2_PASS_DREG_REAL;
  gf_tensor real, cv;
  const gf_tensor *cp, *x;
  GF_TRY(sg2g_take_rows(&s->real, in->real, sample0, n, &real, err));
  GF_TRY(sg2g_labels(gan, in->real_c, sample0, n, &cv, &cp, err));
  GF_TRY(sg2g_augment(gan, in, &real, s->seed, pass, sample0, n, &x, err));
  if (!both) {
    /* the logits' signs for the controller (the official Dreg reports
     * them); gf_sg2_d_r1 runs this forward again */
    gf_tensor logits;
    GF_TRY(gf_sg2_d_fwd(&gan->d, ctx, x, cp, GF_MODE_TRAIN, &logits, err));
    GF_TRY(sg2g_get(s->hlogits, &logits, err));
    for (int64_t i = 0; i < n; i++) {
      float v = s->hlogits[i];
      gan->sign_sum += v > 0.0f ? 1.0 : v < 0.0f ? -1.0 : 0.0;
    }
    gan->sign_count += n;
  }
  float pen = 0.0f;
  float scale = (float)((double)hp->r1_gamma / 2.0 * (double)gain);
  GF_TRY(gf_sg2_d_r1(&gan->d, ctx, x, cp, hp->augment ? &gan->ada : NULL, scale,
                     accum, &pen, err));
  s->r1_pen_sum += pen;
  s->r1_rounds++;
  return GF_OK;
}
