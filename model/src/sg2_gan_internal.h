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
  double pl_pen_sum, r1_pen_sum; /* sums over rounds of the round means */
  int pl_rounds, r1_rounds;
} gf_sg2_gan_scratch;

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

#endif
