/* sg2_gan_reg.c - the regularization phases of the StyleGAN2-ADA step
 * (gf/sg2_gan.h): Greg (path length, gf_sg2_g_pl, on a shrunk batch with
 * its own latents, labels, mixing and noise) and Dreg (R1, gf_sg2_d_r1, on
 * the augmented reals), as the official loss's phases run them. */
#include <math.h>

#include "gf/comm.h"
#include "gf/rng.h"
#include "sg2_gan_internal.h"

/* Several ranks: a round's penalty starts from the running mean after
 * every earlier global round, some of them other ranks'. Before its first
 * round each rank runs every one of its rounds to their mean length only
 * (forward and first backward, nothing written), the ranks gather those,
 * and s->pl_seq[g] becomes the running mean before global round g, as one
 * rank would have it. */
static gf_status pl_prepass(gf_sg2_gan *gan, gf_ctx *ctx,
                            const gf_sg2_step_in *in, gf_err *err) {
  gf_sg2_gan_scratch *s = gan->s;
  int rounds = sg2g_rounds(gan);
  int64_t n = gan->max_batch;
  s->no_w_avg = true;
  gf_status st = GF_OK;
  for (int r = 0; st == GF_OK && r < rounds; r++)
    st = gf_sg2_greg_pl(gan, ctx, in, r * n, n, 1.0f, GF_OVERWRITE, err);
  s->no_w_avg = false;
  GF_TRY(st);
  GF_TRY(gf_comm_allgather(gan->dist.comm, s->pl_len,
                           (size_t)rounds * sizeof(double), s->pl_len_all,
                           err));
  int total = rounds * gan->world;
  s->pl_seq[0] = gan->pl_mean;
  for (int g = 0; g < total; g++)
    s->pl_seq[g + 1] =
        gf_sg2_pl_mean_next(s->pl_seq[g], gan->hp.pl_decay, s->pl_len_all[g]);
  s->pl_seq_valid = true;
  return GF_OK;
}

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
  int round = (int)(sample0 / gan->max_batch);
  if (gan->world > 1 && !s->no_w_avg && round == 0) /* before any forward */
    GF_TRY(pl_prepass(gan, ctx, in, err));
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
  int64_t g0 = gan->dist.sample_base + sample0; /* the global sample */
  if (given) {
    GF_TRY(sg2g_put(&pn, given + g0 * per, err));
  } else {
    gf_philox_stream st = gf_rng_sample_stream(s->seed, GF_RNG_SG2_PL_NOISE,
                                               gan->step, 0, g0, per);
    gf_philox_normal(&st, s->hpl, (size_t)(m * per), 0.0f, 1.0f);
    float d = (float)sqrt((double)c->img_resolution * c->img_resolution);
    for (int64_t i = 0; i < m * per; i++) s->hpl[i] /= d;
    GF_TRY(sg2g_put(&pn, s->hpl, err));
  }
  gf_tensor dws = sg2g_rows(&s->dws, 0, m);
  float pl_mean = gan->pl_mean;
  if (s->pl_seq_valid) /* several ranks: this round's mean on one rank */
    pl_mean = s->pl_seq[g0 / gan->max_batch];
  gf_sg2_pl_args args = {.pl_mean = pl_mean,
                         .decay = hp->pl_decay,
                         .weight = hp->pl_weight,
                         .scale = gain,
                         .noise = hp->noise,
                         .seed = s->seed,
                         .step = gan->step * 4 + ph,
                         .sample0 = g0,
                         .lengths_only = s->no_w_avg,
                         .dws_out = &dws};
  gf_sg2_pl_out out;
  GF_TRY(gf_sg2_g_pl(&gan->g, ctx, &ws, &pn, &args, accum, &out, err));
  if (s->no_w_avg) { /* sg2g_pl_prepass's first pass: the length only */
    s->pl_len[round] = out.mean_length;
    return GF_OK;
  }
  GF_TRY(sg2g_back_ws(gan, ctx, &dws, m, cutoff, accum, err));
  gan->pl_mean = out.pl_mean;
  if (s->pl_seq_valid && round == sg2g_rounds(gan) - 1) {
    /* the last round: the running mean after every rank's rounds */
    gan->pl_mean = s->pl_seq[gan->world * sg2g_rounds(gan)];
    s->pl_seq_valid = false;
  }
  s->stats[(size_t)round * SG2G_NSTAT + SG2G_PL_PEN] = out.penalty;
  s->ran_pl = true;
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
  s->stats[(size_t)(sample0 / gan->max_batch) * SG2G_NSTAT + SG2G_R1_PEN] =
      pen;
  s->ran_r1 = true;
  return GF_OK;
}
