/* rng.h - how ganflow keys its Philox-4x32-10 streams (DESIGN §4.1): every
 * random number is a pure function of (seed, purpose, step, sub, index), so
 * nothing keeps RNG state and a checkpoint needs only the step. Never of the
 * rank: a per-sample draw (latents, dropout masks) uses the words of its
 * GLOBAL sample index, so N ranks that each take a slice of the global
 * batch draw exactly the numbers one rank draws for the whole batch.
 *
 * The mapping onto gf_philox_stream (kernels/include/gf/philox.h):
 *   key       = { seed & 0xffffffff, seed >> 32 }
 *   ctr_hi[0] = purpose (bits 0..7) | sub (bits 8..31)
 *   ctr_hi[1] = step (low 32 bits; steps are < 2^32)
 *   offset    = 0; the caller sets it to the first word it needs: sample
 *               g of a draw of W words per sample owns words g*W ..
 *               g*W + W-1 (gf_rng_sample_offset)
 * `sub`
 * separates streams of one purpose within a step: the parameter tensor
 * being initialised, the dropout layer and D pass, ...
 *
 * The purpose values are part of the checkpoint contract: changing one
 * changes every run's numbers. Append new purposes; never renumber. */
#ifndef GF_RNG_H
#define GF_RNG_H

#include <stdint.h>

#include "gf/philox.h"

typedef enum gf_rng_purpose {
  GF_RNG_INIT_G = 1,    /* generator parameter init; step 0, sub = tensor */
  GF_RNG_INIT_D = 2,    /* discriminator parameter init; step 0, sub = tensor */
  GF_RNG_LATENT = 3,    /* latent vectors z of a training step; sub 0 */
  GF_RNG_DROPOUT = 4,   /* dropout masks; sub = pass * 64 + layer */
  GF_RNG_DATA_PERM = 5, /* the epoch's data permutation (trainer) */
  GF_RNG_SWD = 6,       /* SWD projections (trainer) */
  GF_RNG_SAMPLE = 7,    /* latent vectors of sample grids / serving */
  GF_RNG_AUGMENT = 8,   /* DiffAugment params (gf/augment.h); sub = pass */
  GF_RNG_LABEL = 9,     /* the classes of a conditional step's fake batch;
                           sub 0, one word per sample */
  GF_RNG_ADA = 10,      /* ADA augmentation draws (gf/ada.h); sub = pass */
  GF_RNG_SG2_NOISE = 11, /* StyleGAN2 synthesis noise (noise mode random);
                           sub = the layer's index in the synthesis
                           network, H W normals per sample */
  GF_RNG_SG2_LATENT = 12, /* StyleGAN2 training latents (gf/sg2_gan.h);
                             sub = 2 phase + (1 for the mixing latents) */
  GF_RNG_SG2_MIX = 13,  /* StyleGAN2 style-mixing cut-off; sub = phase,
                           words 0 (gate) and 1 (cut-off) */
  GF_RNG_SG2_PL_NOISE = 14, /* StyleGAN2 path-length noise (gf/sg2_gan.h);
                               sub 0, C R R normals per sample */
} gf_rng_purpose;

#define GF_RNG_SUB_MAX 0xFFFFFFu /* sub has 24 bits */

/* The stream for (seed, purpose, step, sub) at offset 0; a pure function,
 * no allocation. sub is masked to 24 bits, step to 32 bits. */
gf_philox_stream gf_rng_stream(uint64_t seed, gf_rng_purpose purpose,
                               int64_t step, uint32_t sub);

/* The stream positioned at global sample `sample0` of a draw of
 * words_per_sample words per sample (offset = sample0 * words_per_sample). */
gf_philox_stream gf_rng_sample_stream(uint64_t seed, gf_rng_purpose purpose,
                                      int64_t step, uint32_t sub,
                                      int64_t sample0,
                                      int64_t words_per_sample);

#endif
