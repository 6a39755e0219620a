/* gan.h - a generator/discriminator pair and one step of GAN training: the
 * standard non-saturating step of Goodfellow et al. as PyTorch's DCGAN
 * example runs it, which the trainer calls once per step.
 *
 * gf_gan_step, for a real batch x and latents z (n samples):
 *   fake = G(z)                                  (train mode, BN batch stats)
 *   D step: loss_d = BCE(D(x), 1) + BCE(D(fake), 0), fake detached; the two
 *           batches go through D separately (BN statistics per batch), the
 *           D gradient is the sum; one Adam update of D.
 *   G step: loss_g = BCE(D(fake), 1) through the UPDATED D; one Adam
 *           update of G (D's parameter gradients are not formed).
 * Randomness (DESIGN §4.1): z (when not given) from (seed, GF_RNG_LATENT,
 * step, rank); dropout masks from (seed, GF_RNG_DROPOUT, step, rank,
 * pass * 64 + layer) with pass 0 real, 1 fake, 2 G step. No RNG state: on
 * the CPU backend, with the same thread count, the same parameters,
 * inputs, seed and step give bit-identical results.
 *
 * Not here: data loading, checkpoint files, all-reduce (trainer/). */
#ifndef GF_GAN_H
#define GF_GAN_H

#include <stdint.h>

#include "gf/net.h"

typedef struct gf_gan_hparams {
  gf_adam_params adam_g; /* default lr 2e-4, beta1 0.5, beta2 0.999, eps 1e-8 */
  gf_adam_params adam_d; /* the same */
} gf_gan_hparams;

/* DCGAN's Adam settings for both networks (lr 2e-4, betas (0.5, 0.999),
 * eps 1e-8, no weight decay). */
void gf_gan_hparams_default(gf_gan_hparams *hp);

typedef struct gf_gan {
  gf_model_config cfg;  /* copy */
  gf_gan_hparams hp;    /* copy; the caller may change it between steps */
  gf_net g;             /* the generator, built for training */
  gf_net d;             /* the discriminator, built for training */
  int max_batch;        /* samples per step, 2..max_batch */
  int64_t adam_step_g;  /* Adam updates applied to G so far (checkpointed
                           with the moments; the next update is +1) */
  int64_t adam_step_d;  /* the same for D */
  gf_arena scratch;     /* the buffers below, on the ctx's device */
  float *z;             /* [max_batch, z_dim] latents of the last step */
  float *ones, *zeros;  /* [max_batch] labels */
  float *dlogit;        /* [max_batch] gradient of a loss wrt D's logits */
  float *dfake;         /* [max_batch, C, H, W] gradient wrt G's output */
  float *loss;          /* [1] */
  float *host;          /* [max_batch + 1] host memory (owned, malloc) the
                           losses and logits of a device step are read
                           back into; NULL on the CPU */
} gf_gan;

/* What one step measured. Losses are the means PyTorch's BCEWithLogitsLoss
 * returns; D(.) means sigmoid of D's logit, averaged over the batch. */
typedef struct gf_gan_stats {
  double loss_d;        /* loss_d_real + loss_d_fake */
  double loss_d_real;   /* BCE(D(x), 1) */
  double loss_d_fake;   /* BCE(D(G(z)), 0), before the D update */
  double loss_g;        /* BCE(D(G(z)), 1), after the D update */
  double d_real;        /* mean D(x) */
  double d_fake;        /* mean D(G(z)) before the D update (D_G_z1) */
  double d_fake_after;  /* mean D(G(z)) after the D update (D_G_z2) */
} gf_gan_stats;

/* Builds G and D of cfg for steps of up to max_batch (>= 2) samples on ctx's
 * device, with zero parameters until gf_gan_init_params. hp NULL means
 * gf_gan_hparams_default. gan (caller's struct) owns both networks and the
 * scratch arena; release with gf_gan_free, also after a failure. */
gf_status gf_gan_init(gf_gan *gan, gf_ctx *ctx, const gf_model_config *cfg,
                      const gf_gan_hparams *hp, int max_batch, gf_err *err);
/* Releases everything gan owns; accepts NULL and a freed or zeroed gan. */
void gf_gan_free(gf_gan *gan);

/* Initialises G and D from seed (gf_net_init_params: a pure function of
 * the seed), zeroes the Adam moments and step counts. */
gf_status gf_gan_init_params(gf_gan *gan, uint64_t seed, gf_err *err);

/* One training step on real [n, C, H, W] (any shape with n samples of
 * C*H*W values; 2 <= n <= max_batch). z: [n, z_dim] latents, or NULL to
 * draw them from (seed, GF_RNG_LATENT, step, rank); either way they are left
 * in gan->z. Updates both networks' parameters, Adam state, step counts and
 * BN running statistics (G once, D three times, as PyTorch does). stats
 * (may be NULL) receives the losses. On an error the networks may be
 * partly updated: restore them from a checkpoint. real must be on the
 * ctx's device; z may be on the host or the device. On a CUDA ctx the
 * step queues its ops on the ctx's stream and waits only where a loss or
 * D's mean output is read back for stats (3 small copies). */
gf_status gf_gan_step(gf_gan *gan, gf_ctx *ctx, const gf_tensor *real,
                      const gf_tensor *z, uint64_t seed, int64_t step,
                      int rank, gf_gan_stats *stats, gf_err *err);

/* Copies the training state of src into dst: every arena of G and D
 * (parameters, gradients, Adam moments, BN running statistics) and the Adam
 * step counts. dst must be built from the same config (any max_batch, any
 * device): the arenas then have the same layout byte for byte. This is how
 * a GAN on a device is checkpointed and resumed through a host twin.
 * Allocates nothing; returns when dst holds the data. */
gf_status gf_gan_copy_state(gf_gan *dst, const gf_gan *src, gf_err *err);

/* Bytes held by the arenas of G, D and the step's scratch. */
size_t gf_gan_arena_bytes(const gf_gan *gan);

#endif
