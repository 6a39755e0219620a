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
  /* host */
  float *hz;           /* [mb * z_dim] */
  float *hada;         /* [mb * GF_ADA_NPARAMS] */
  float *hlogits, *hdlogits; /* [mb] */
} gf_sg2_gan_scratch;

#endif
