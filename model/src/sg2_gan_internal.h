/* sg2_gan_internal.h - the scratch of gf_sg2_gan (gf/sg2_gan.h), shared by
 * sg2_gan.c (build, Adam, EMA), sg2_gan_step.c (the phases) and
 * sg2_gan_state.c (save, load). */
#ifndef GF_SG2_GAN_INTERNAL_H
#define GF_SG2_GAN_INTERNAL_H

#include "gf/sg2_gan.h"

typedef struct gf_sg2_gan_scratch {
  /* on the ctx's device, max_batch rows each */
  gf_tensor z, z2;     /* [mb, z_dim] */
  gf_tensor c;         /* [mb, c_dim] (c_dim > 0) */
  gf_tensor real;      /* [mb, C, R, R] */
  gf_tensor aug;       /* [mb, C, R, R] D's augmented input */
  gf_tensor daug;      /* [mb, C, R, R] dL/d(D's input) */
  gf_tensor dimg;      /* [mb, C, R, R] dL/d(G's image) */
  gf_tensor ws2;       /* [mb, num_ws, w_dim] the mixing ws */
  gf_tensor dws2;      /* [mb, num_ws, w_dim] their gradient */
  gf_tensor dlogits;   /* [mb, 1] */
  gf_tensor pl_noise;  /* [mb / pl_batch_shrink, C, R, R] (pl_weight > 0) */
  gf_tensor dws;       /* [mb, num_ws, w_dim] path length's dloss/dws */
  gf_tensor aug_view;  /* the rows of aug sg2g_augment wrote (a view) */
  /* host */
  float *hz;           /* [mb * z_dim] */
  float *hada;         /* [mb * GF_ADA_NPARAMS] */
  float *hlogits, *hdlogits; /* [mb] */
  float *hpl;          /* [mb * C * R * R] the path-length noise */
  /* this step's */
  uint64_t seed;       /* the step's seed (for the hooks' draws) */
  double *stats;       /* [rounds][SG2G_NSTAT] the rounds' sums (world 1's
                          and this rank's); [world][rounds][SG2G_NSTAT + 2]
                          gathered: stats_all */
  double *stats_all;
  bool ran_pl, ran_r1; /* whether the hooks ran this step */
  /* several ranks (sg2_dist.c) */
  float *levels_g, *levels_d; /* exact: the tree's left halves */
  size_t levels_n;     /* rows of each */
  float *wlog;         /* [cap][w_dim] the w means w_avg's updates take */
  float *wlog_all;     /* [world][cap][w_dim] gathered */
  int wlog_n, wlog_cap;
  bool no_w_avg;       /* a forward that must not move w_avg (path
                          length's first pass: lengths only) */
  double *pl_len;      /* [rounds] this rank's rounds' mean path lengths */
  double *pl_len_all;  /* [world rounds] every rank's, gathered */
  float *pl_seq;       /* [world rounds + 1] pl_mean before each round */
  bool pl_seq_valid;   /* Greg's rounds take pl_seq (several ranks) */
} gf_sg2_gan_scratch;

/* What each round leaves in s->stats (sums over its samples). */
enum { SG2G_LOSS_G, SG2G_LOSS_DF, SG2G_LOSS_DR, SG2G_SCORE_F, SG2G_SCORE_R,
       SG2G_PL_PEN, SG2G_R1_PEN, SG2G_NSTAT };

static inline int sg2g_rounds(const gf_sg2_gan *gan) {
  return gan->batch / gan->max_batch;
}

/* sg2_gan_step.c's pieces the regularization phases (sg2_gan_reg.c) run */
gf_tensor sg2g_rows(const gf_tensor *t, int64_t r0, int64_t n);
gf_status sg2g_take_rows(gf_tensor *dst, const gf_tensor *src, int64_t r0,
                         int64_t n, gf_tensor *out, gf_err *err);
gf_status sg2g_put(gf_tensor *dst, const float *h, gf_err *err);
gf_status sg2g_get(float *h, const gf_tensor *src, gf_err *err);
gf_status sg2g_latents(gf_sg2_gan *gan, const gf_sg2_step_in *in,
                       uint64_t seed, int phase, int second, int64_t sample0,
                       int64_t n, gf_tensor *out, gf_err *err);
int sg2g_cutoff(const gf_sg2_gan *gan, const gf_sg2_step_in *in,
                uint64_t seed, int phase);
gf_status sg2g_labels(gf_sg2_gan *gan, const gf_tensor *src, int64_t r0,
                      int64_t n, gf_tensor *out, const gf_tensor **cp,
                      gf_err *err);
gf_status sg2g_run_ws(gf_sg2_gan *gan, gf_ctx *ctx, const gf_sg2_step_in *in,
                      uint64_t seed, int phase, int zphase, int64_t sample0,
                      int64_t n, int cutoff, gf_tensor *ws, gf_err *err);
gf_status sg2g_back_ws(gf_sg2_gan *gan, gf_ctx *ctx, gf_tensor *dws,
                       int64_t n, int cutoff, gf_accum accum, gf_err *err);
gf_status sg2g_augment(gf_sg2_gan *gan, const gf_sg2_step_in *in,
                       const gf_tensor *img, uint64_t seed, int pass,
                       int64_t sample0, int64_t n, const gf_tensor **x,
                       gf_err *err);

/* sg2_dist.c: the seams of several ranks (and of exact mode at one) */
/* Round r (of this rank's) has left its gradient of net in the grads
 * arena: exact mode adds it into the tree. */
void sg2g_round_done(gf_sg2_gan *gan, gf_sg2_net *net, int r);
/* The accumulation of round r's first contribution to a phase's grads. */
gf_accum sg2g_round_accum(const gf_sg2_gan *gan, int r);
/* Before Adam: net's grads summed over the ranks. */
gf_status sg2g_reduce(gf_sg2_gan *gan, gf_sg2_net *net, gf_err *err);
/* A w_avg update of the mapping forward just run: at once (one rank) or
 * logged for sg2g_w_avg_replay; nothing while s->no_w_avg. */
gf_status sg2g_w_avg(gf_sg2_gan *gan, gf_ctx *ctx, gf_err *err);
/* The logged updates of every rank, in one rank's order. */
gf_status sg2g_w_avg_replay(gf_sg2_gan *gan, gf_ctx *ctx, gf_err *err);
/* sums[SG2G_NSTAT] over every round of every rank (in the global rounds'
 * order, from 0) and the ADA signs' totals (gan->sign_sum, sign_count
 * become the whole batch's). */
gf_status sg2g_gather_stats(gf_sg2_gan *gan, double *sums, gf_err *err);
void sg2g_dist_free(gf_sg2_gan_scratch *s);

#endif
