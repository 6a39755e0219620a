/* augment.h - the random draws of DiffAugment (Zhao et al. 2020): the
 * params rows that gf_augment_fwd / gf_augment_bwd (kernels/include/gf/
 * ops.h) apply. The op is in kernels/; this is where its randomness comes
 * from (DESIGN §4.1): a pure function of (seed, GF_RNG_AUGMENT, step,
 * pass, global sample index), so a batch cut into rank slices or
 * micro-batches draws, per sample, what one rank drawing the whole batch
 * draws, and a resumed run redraws the same numbers.
 *
 * Sample g owns Philox words g*GF_AUG_WORDS .. +7 of the stream
 * gf_rng_stream(seed, GF_RNG_AUGMENT, step, pass): word GF_AUG_P_* for
 * column GF_AUG_P_* (word 7 is unused), each drawn whatever the policy,
 * so turning a policy on or off changes no other column's values. With
 * u = (w >> 8) 2^-24 (gf_philox_uniform's float: [0, 1), 24 bits) and
 * int(w, m) = floor(w m / 2^32) (the whole 32-bit word scaled to [0, m),
 * no modulo: each value of [0, m) has probability within m / 2^32 of
 * 1 / m, relative; under 2.5e-7 for m <= 1025), as the official
 * DiffAugment_pytorch.py draws them:
 *   brightness  b  = u - 0.5                 torch.rand - 0.5
 *   saturation  s  = u * 2                   torch.rand * 2
 *   contrast    c  = u + 0.5                 torch.rand + 0.5
 *   tx = int(w, 2 sh + 1) - sh, sh = gf_augment_shift(H): uniform on
 *        [-sh, sh]                           torch.randint(-sh, sh + 1)
 *   ty likewise with W
 *   ox = int(w, H + 1 - S0 % 2), S0 = gf_augment_cutout_size(H)
 *                                            torch.randint(0, H + (1 -
 *                                            S0 % 2))
 *   oy likewise with W
 * (f32 arithmetic: u - 0.5 and u * 2 are exact, u + 0.5 rounds to the
 * nearest 2^-23 above 1, as torch.rand(...) + 0.5 does). The columns of a
 * policy not asked for are written neutral: b 0, s 1, c 1, tx ty 0,
 * ox oy 0 (the op does not read them). */
#ifndef GF_AUGMENT_H
#define GF_AUGMENT_H

#include <stdint.h>

#include "gf/ops.h"
#include "gf/rng.h"
#include "gf/status.h"

#define GF_AUG_WORDS 8 /* Philox words per sample (>= GF_AUG_NPARAMS) */

/* Fills params [n, GF_AUG_NPARAMS] (host memory the caller owns, row i
 * for global sample sample0 + i) with the draws above for H x W images
 * under policy (GF_AUG_* bits), from (seed, GF_RNG_AUGMENT, step, sub =
 * pass): pass tells apart the augmentations of one step (D's real and
 * fake batches, each D step of an n_critic schedule, G's step). A pure
 * function: no allocation, no state. GF_EINVAL for n < 0, params NULL
 * with n > 0, H or W < 1, unknown policy bits, pass outside [0,
 * GF_RNG_SUB_MAX], step < 0, sample0 < 0, or sample indices past 2^60.
 * To apply the rows on a device, copy them into a [n, GF_AUG_NPARAMS]
 * tensor there (gf_tensor_copy). */
gf_status gf_augment_draw(float *params, int64_t n, int H, int W,
                          unsigned policy, uint64_t seed, int64_t step,
                          int pass, int64_t sample0, gf_err *err);

#endif
