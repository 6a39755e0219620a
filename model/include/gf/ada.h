/* ada.h - StyleGAN2-ADA's adaptive discriminator augmentation (Karras et
 * al. 2020, "Training Generative Adversarial Networks with Limited Data"):
 * the 'bgc' pipeline of the official AugmentPipe (NVlabs/
 * stylegan2-ada-pytorch, training/augment.py at d72cc7d) and the p
 * controller of its training loop.
 *
 * bgc is, per sample, each with probability p (a multiplier of 1):
 *   geometric (one resampling)  xflip, rotate90, integer translation
 *     (|t| <= 0.125 of the side, rounded to pixels), isotropic scaling
 *     (lognormal, log2 std 0.2), rotation (uniform over the circle, applied
 *     before and after the anisotropic scaling, each with probability
 *     1 - sqrt(1 - p), so that one of them happens with probability p),
 *     anisotropic scaling (log2 std 0.2), fractional translation (normal,
 *     std 0.125 of the side);
 *   colour (one 4x4 matrix)  brightness (normal, std 0.2), contrast
 *     (lognormal, log2 std 0.5), luma flip, hue rotation (uniform over the
 *     circle about the luma axis), saturation (lognormal, log2 std 1); hue
 *     and saturation only for RGB (C = 3); C = 1 takes the official
 *     1-channel rule (ops.h, gf_color4_fwd).
 * The geometric matrices compose in the official order into one inverse
 * transform G_inv per sample, executed as: reflect padding by the batch's
 * margin (the corners' reach plus the filter's support, at most the side
 * - 1), 2x upsampling with the sym6 low-pass filter (gain 4), the affine
 * bilinear resampling (zeros outside), 2x downsampling with the same
 * filter (flipped) cropped back to H x W. The colour matrix C composes
 * brightness, contrast, luma flip, hue, saturation (left-multiplied in
 * that order) and is applied last. The geometric resampling runs for every
 * sample, also at p = 0 (as the official code, which is then a near-
 * identity low-pass, not a copy).
 *
 * Randomness (DESIGN §4.1): the draws are a params row per sample, a pure
 * function of (seed, GF_RNG_ADA, step, pass, global sample index), so a
 * batch cut across ranks draws per sample what one rank drawing the whole
 * batch draws. The rows hold the raw draws, before the gating by p: the
 * same rows give the official pipeline's result at any p. Columns
 * (GF_ADA_P_*): a uniform u on [0, 1) (24 bits, torch.rand's) or a
 * standard normal z, as the official code draws them:
 *   xflip      i = floor(2 u), applied when gate < p      (scale x by 1-2i)
 *   rotate90   i = floor(4 u), gate < p                   (i quarter turns)
 *   xint       t = (2 u - 1) 0.125 (x and y), one gate < p; shift by
 *              round-half-even(t W), round(t H) pixels
 *   scale      s = 2^(0.2 z), gate < p
 *   rotate     theta = (2 u - 1) pi, twice (pre, post), each gate < p_rot,
 *              p_rot = 1 - sqrt(clamp(1 - p, 0, 1))   (f32, as the official)
 *   aniso      s = 2^(0.2 z), gate < p                (x by s, y by 1/s)
 *   xfrac      t = 0.125 z (x and y), one gate < p; shift by t W, t H
 *   brightness b = 0.2 z, gate < p
 *   contrast   c = 2^(0.5 z), gate < p
 *   lumaflip   i = floor(2 u), gate < p
 *   hue        theta = (2 u - 1) pi, gate < p          (C = 3 only)
 *   saturation s = 2^z, gate < p                        (C = 3 only)
 * A gate is u < p in f32 (a failed gate gives the identity of its step).
 * Sample g owns Philox words g * GF_ADA_WORDS .. + GF_ADA_WORDS - 1 of the
 * stream gf_rng_stream(seed, GF_RNG_ADA, step, pass): a uniform column c
 * is word c (u = (w >> 8) 2^-24); a normal column c is
 * gf_philox_normal's value 32 + c of the sample's words (Box-Muller on
 * words 32 + 2 floor(c / 2) and the next, cos for even c, sin for odd),
 * so no word serves two columns. Every column is drawn whatever C is. */
#ifndef GF_ADA_H
#define GF_ADA_H

#include <stdint.h>

#include "gf/kernels.h"
#include "gf/status.h"

/* Columns of a params row. */
enum {
  GF_ADA_P_XFLIP = 0,  /* u */
  GF_ADA_P_XFLIP_GATE, /* u */
  GF_ADA_P_ROT90,      /* u */
  GF_ADA_P_ROT90_GATE,
  GF_ADA_P_XINT_X, /* u */
  GF_ADA_P_XINT_Y, /* u */
  GF_ADA_P_XINT_GATE,
  GF_ADA_P_SCALE, /* z */
  GF_ADA_P_SCALE_GATE,
  GF_ADA_P_ROT_PRE, /* u */
  GF_ADA_P_ROT_PRE_GATE,
  GF_ADA_P_ANISO, /* z */
  GF_ADA_P_ANISO_GATE,
  GF_ADA_P_ROT_POST, /* u */
  GF_ADA_P_ROT_POST_GATE,
  GF_ADA_P_XFRAC_X, /* z */
  GF_ADA_P_XFRAC_Y, /* z */
  GF_ADA_P_XFRAC_GATE,
  GF_ADA_P_BRIGHT, /* z */
  GF_ADA_P_BRIGHT_GATE,
  GF_ADA_P_CONTRAST, /* z */
  GF_ADA_P_CONTRAST_GATE,
  GF_ADA_P_LUMA, /* u */
  GF_ADA_P_LUMA_GATE,
  GF_ADA_P_HUE, /* u */
  GF_ADA_P_HUE_GATE,
  GF_ADA_P_SAT, /* z */
  GF_ADA_P_SAT_GATE,
  GF_ADA_NPARAMS = 28,
};
#define GF_ADA_WORDS 64 /* Philox words per sample */
/* The number of gated augmentations (one gate column each, in column
 * order: xflip, rotate90, xint, scale, rot-pre, aniso, rot-post, xfrac,
 * brightness, contrast, lumaflip, hue, saturation). */
#define GF_ADA_NGATES 13
/* The gate column of gated augmentation k (0 .. GF_ADA_NGATES - 1). */
int gf_ada_gate_column(int k);
/* 1 when column c is a standard normal, 0 when uniform (c in range). */
int gf_ada_column_is_normal(int c);

/* Fills params [n, GF_ADA_NPARAMS] (host memory the caller owns; row i for
 * global sample sample0 + i) with the draws above from (seed, GF_RNG_ADA,
 * step, sub = pass); pass tells apart the augmentations of one step (D's
 * real and fake batches, G's step). A pure function: no allocation, no
 * state. GF_EINVAL for n < 0, params NULL with n > 0, pass outside [0,
 * GF_RNG_SUB_MAX], step < 0, sample0 < 0 or indices past 2^56. */
gf_status gf_ada_draw(float *params, int64_t n, uint64_t seed, int64_t step,
                      int pass, int64_t sample0, gf_err *err);

/* The per-sample matrices of a batch of n images C x H x W (C 1 or 3, H, W
 * >= 1) at probability p (finite, >= 0; above 1 acts as 1) from params [n,
 * GF_ADA_NPARAMS], as the official code builds them (matrix products in
 * double, the scalar draws' transforms in f32 as there): theta [n, 2, 3]
 * (host, the caller's), the normalised resampling matrices for
 * gf_affine_sample_fwd from the upsampled padded image [2 (H + y0 + y1),
 * 2 (W + x0 + x1)] to [2 (H + 6), 2 (W + 6)]; color [n, 4, 4] (host); and
 * pad [x0, x1, y0, y1], the batch's reflect margin (the official ceil of
 * the corners' reach plus 6, clamped to [0, side - 1]). A pure function. */
gf_status gf_ada_matrices(const float *params, int64_t n, int64_t C,
                          int64_t H, int64_t W, float p, float *theta,
                          float *color, int pad[4], gf_err *err);

/* The sym6 low-pass filter of the geometric step, the 12 taps normalised
 * to sum 1 in f32 (the official setup_filter), into taps[12]. */
void gf_ada_sym6(float taps[12]);

/* The pipeline on one ctx: its filter and scratch. Scratch is sized for
 * the largest margin of a batch shape and kept between calls; the last
 * forward's matrices and margin serve the backward. */
typedef struct gf_ada {
  gf_ctx *ctx;        /* borrowed */
  gf_tensor filt;     /* [12, 12] outer product of gf_ada_sym6, on ctx */
  gf_tensor theta;    /* [n, 2, 3] on ctx, the last forward's */
  gf_tensor color;    /* [n, 4, 4] on ctx */
  gf_tensor host;     /* [n, 22] host staging: theta then color rows */
  gf_tensor buf[4];   /* scratch on ctx: padded, upsampled, resampled,
                         geometric result (and their gradients) */
  int64_t shape[4];   /* the batch shape the buffers fit (0: none) */
  int pad[4];         /* the last forward's margin */
  int ready;          /* a forward ran with this shape */
} gf_ada;

/* Initializes *a on ctx (which must outlive it): uploads the filter.
 * Ownership: *a owns its tensors; release with gf_ada_free. */
gf_status gf_ada_init(gf_ada *a, gf_ctx *ctx, gf_err *err);
/* Releases everything *a owns; accepts a zeroed or freed *a. */
void gf_ada_free(gf_ada *a);

/* y = augment(x) for x [N, C, H, W] (C 1 or 3, on a's ctx) with params
 * [N, GF_ADA_NPARAMS] (host) at probability p; y has x's shape and
 * overlaps neither x nor a's scratch. (Re)allocates a's scratch when the
 * batch shape changes (a owns it). The matrices and margin are kept for
 * gf_ada_bwd. */
gf_status gf_ada_fwd(gf_ada *a, const gf_tensor *x, const float *params,
                     float p, gf_tensor *y, gf_err *err);
/* dx = the gradient wrt the last forward's x of sum(y * dy), for dy and dx
 * of that x's shape (GF_EINVAL before a forward or for another shape). dx
 * may not overlap dy. */
gf_status gf_ada_bwd(gf_ada *a, const gf_tensor *dy, gf_tensor *dx,
                     gf_err *err);
/* ydot = the directional derivative of the last forward along xdot: the
 * same draws, the colour matrices without their translation (the pipeline
 * is affine in x; gf_sg2_d_r1's tangent). Shapes and refusals as
 * gf_ada_bwd's; ydot may not overlap xdot. */
gf_status gf_ada_jvp(gf_ada *a, const gf_tensor *xdot, gf_tensor *ydot,
                     gf_err *err);

/* ---- the p controller (training_loop.py) --------------------------------
 * Every `interval` steps, with rt = the mean of sign(D(real)) over the
 * real logits seen since the last adjustment (the official
 * 'Loss/signs/real' collector: every real pass, R1 passes included),
 *   p = max(p + sign(rt - target) batch interval / (ada_kimg 1000), 0)
 * in f32 (the adjustment computed in double, added as f32; p is not
 * clamped above). The official defaults: interval 4, target 0.6,
 * ada_kimg 500. */
typedef struct gf_ada_ctl {
  float p;            /* the augmentation probability ('ada/p') */
  double rt;          /* the last adjustment's E[sign(D(real))] ('ada/rt');
                         NaN before the first */
  double sign_sum;    /* sum of sign(D(real)) since the last adjustment */
  int64_t sign_count; /* how many logits that sum holds */
} gf_ada_ctl;
#define GF_ADA_LOG_P "ada/p"
#define GF_ADA_LOG_RT "ada/rt"

/* The controller at the start: p = p0, rt NaN, nothing accumulated. */
gf_ada_ctl gf_ada_ctl_start(float p0);
/* The state after a step: in's sums plus this step's (sign_sum of
 * sign(D(real)) over sign_count logits, all ranks' when distributed), then,
 * when steps_done (the steps finished, this one included) is a multiple of
 * interval and anything was accumulated, the adjustment above (sums reset,
 * rt set). A pure function of its arguments. GF_EINVAL for batch < 1,
 * interval < 1, ada_kimg not > 0, target not finite, steps_done < 1,
 * sign_count < 0 or |sign_sum| > sign_count. */
gf_status gf_ada_ctl_step(const gf_ada_ctl *in, double sign_sum,
                          int64_t sign_count, int64_t steps_done,
                          int64_t batch, int interval, double target,
                          double ada_kimg, gf_ada_ctl *out, gf_err *err);

#endif
