/* sg2_net.h - the StyleGAN2-ADA generator (mapping + synthesis, the 'skip'
 * architecture) and discriminator ('resnet', or 'orig' when d_resnet is 0)
 * of NVlabs/stylegan2-ada-pytorch, built over the kernel ops (gf/ops.h):
 * parameters with the official state_dict names, the official
 * initialisers from Philox, and the forward and backward passes.
 *
 * They do not fit gf_net's layer sequence (net.h) and get their own
 * struct, but share its pieces: every tensor is a gf_param (a view into
 * one of the net's arenas, with grad / adam_m / adam_v views when built
 * for training), so checkpoints and Adam treat both alike.
 *   params   trainable parameters
 *   grads, adam_m, adam_v   same layout as params (training only)
 *   buffers  tracked, not trained: G's "mapping.w_avg" and every
 *            synthesis layer's "noise_const"
 *   acts     the activations of the last forward (every intermediate is
 *            kept: a backward reads them), scratch and the constants (the
 *            [1,3,3,1] resample filter: constants, not tensors of the net)
 *
 * Names are exactly the official state_dict's ("mapping.fc0.weight",
 * "mapping.w_avg", "synthesis.b4.const", "synthesis.b8.conv0.affine.weight",
 * "synthesis.b8.conv0.noise_strength", "b32.fromrgb.weight",
 * "b4.conv.weight", "mapping.embed.weight", ...), without the
 * resample_filter buffers, so an imported snapshot's tensors drop in by
 * name (gf_sg2_load). A 0-d official tensor (noise_strength) is [1] here.
 *
 * Arithmetic (the official fp32 path; force_fp32, no fp16):
 *  - equalized learning rate as the official layers apply it: a fully
 *    connected layer uses weight * (lr_mul / sqrt(in)) and bias * lr_mul,
 *    a conv weight * 1 / sqrt(Cin k k) (synthesis convs: none, demodulation
 *    normalises; toRGB: the styles times 1 / sqrt(Cin));
 *  - normalize_2nd_moment(x) = x * rsqrt(mean(x^2) + 1e-8): the
 *    demodulation coefficient of gf_modconv_weight_fwd with a weight of
 *    1 / sqrt(D) (its S is then mean(x^2)), times x by
 *    gf_channel_affine_fwd;
 *  - G's up-sampling conv (conv0) is upfirdn2d then conv: gf_upfirdn2d_fwd
 *    (up 2, pads [3,2,3,2], gain 4, the filter) and a 3x3 grouped conv
 *    without padding with the spatially flipped weight (the official
 *    flip_weight False; the flip is a product with a constant 9x9
 *    permutation, gf_linear_fwd, exact), which is the official
 *    conv_transpose + filter path mathematically; D's down-sampling conv
 *    is the official path (filter with pads [2,2,2,2], stride-2 conv),
 *    its 1x1 skip filters with down 2, pads [1,1,1,1] then convolves;
 *  - toRGB's image path: upfirdn2d up 2, pads [2,1,2,1], gain 4.
 * Rounding differs from PyTorch's in the order of sums only
 * (tests/model/test_sg2_nets.c: a few 1e-6 relative).
 *
 * The backward passes (gf_sg2_synthesis_bwd, gf_sg2_mapping_bwd,
 * gf_sg2_d_bwd) read what their forward kept and differentiate the same
 * formulation: the flip is its own inverse, normalize_2nd_moment's
 * gradient is the modulation op's (y = sqrt(D) wmod), a mean's and the
 * const's batch sums are gf_embedding_bwd's row sums, the equalized-lr
 * gains multiply the gradients once (PyTorch's autograd of w * gain).
 * Checked against the official autograd (a few 1e-6 relative; 1e-4
 * allowed).
 *
 * The regularisers (gf_sg2_d_r1: R1 of D; gf_sg2_g_pl: path length of G)
 * need gradients of gradients: they differentiate the backward passes
 * forward (forward-over-reverse: a tangent forward and a tangent backward
 * per layer, second-order terms by gf_mbstd_*_jvp and
 * gf_modconv_demod_jvp). A net built for training carries their tangent
 * activations. Checked against the official double backward
 * (tests/model/test_sg2_reg.c).
 *
 * Every forward and backward runs through the kernel ops only, so a CUDA ctx runs it
 * where the ops run (the random noise is drawn on the host, as
 * gf_latent_sample's latents, and copied). */
#ifndef GF_SG2_NET_H
#define GF_SG2_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "gf/net.h"
#include "gf/sg2_config.h"

#define GF_SG2_MAX_TENSORS 224 /* G at 1024 px, conditional: 158 */
#define GF_SG2_LRELU_ALPHA 0.2f
#define GF_SG2_DEMOD_EPS 1e-8f /* modulated_conv2d's and
                                  normalize_2nd_moment's eps */

typedef enum gf_sg2_role {
  GF_SG2_G = 0, /* mapping + synthesis */
  GF_SG2_D = 1, /* discriminator (with its mapping of c when c_dim > 0) */
} gf_sg2_role;

typedef enum gf_sg2_noise {
  GF_SG2_NOISE_CONST = 0,  /* each layer's noise_const buffer */
  GF_SG2_NOISE_RANDOM = 1, /* N(0, 1) from Philox: stream (seed,
                              GF_RNG_SG2_NOISE, step, layer index) at the
                              words of global samples sample0 .. */
  GF_SG2_NOISE_NONE = 2,   /* no noise */
} gf_sg2_noise;

struct gf_sg2_impl; /* the layers; model/src/sg2_internal.h */
struct gf_ada;      /* gf/ada.h: the augmentation pipeline */

typedef struct gf_sg2_net {
  gf_sg2_config cfg;   /* copy of the config it was built from */
  gf_sg2_role role;
  int max_batch;       /* forwards take 1..max_batch samples */
  bool training;       /* grads, adam_m, adam_v allocated */
  gf_device device;
  gf_arena params, grads, adam_m, adam_v, buffers, acts;
  gf_param tensors[GF_SG2_MAX_TENSORS]; /* official state_dict order */
  int n_tensors;
  int64_t n_trainable; /* trainable scalars */
  int num_ws;          /* G: gf_sg2_num_ws(cfg); D: 0 */
  int cmap_dim;        /* D: channels at 4x4 when c_dim > 0, else 0 */
  gf_net_mode fwd_mode; /* mode of the last forward */
  int fwd_batch;       /* its batch; 0: none yet */
  struct gf_sg2_impl *impl; /* owned (malloc): layers, views, scratch */
} gf_sg2_net;

/* Builds network `role` of cfg (validated by gf_sg2_config_validate) on
 * ctx's device for forwards of 1..max_batch samples; training also
 * allocates grads and both Adam moments. Parameters are zero until
 * gf_sg2_init_params or gf_sg2_load. Memory: net (the caller's struct)
 * owns its arenas and impl; release with gf_sg2_net_free, also after a
 * failure. cfg is copied; ctx is only used to fill the constants. */
gf_status gf_sg2_net_init(gf_sg2_net *net, gf_ctx *ctx,
                          const gf_sg2_config *cfg, gf_sg2_role role,
                          int max_batch, bool training, gf_err *err);
/* Releases what net owns; accepts NULL and a freed or zeroed net. */
void gf_sg2_net_free(gf_sg2_net *net);

/* A tensor by its official state_dict name; NULL when absent. */
gf_param *gf_sg2_find(gf_sg2_net *net, const char *name);

/* Copies src (f32, any device; the shape of the tensor `name`, where a
 * 0-d official tensor may come as [1] or []: ndim 0 is not a gf_tensor,
 * so [1]) into the net's tensor `name`. GF_ENOTFOUND for a name the net
 * lacks, GF_EINVAL naming both shapes for another shape. */
gf_status gf_sg2_load(gf_sg2_net *net, const char *name,
                      const gf_tensor *src, gf_err *err);

/* The official initialisers, a pure function of seed (streams
 * GF_RNG_INIT_G / GF_RNG_INIT_D, step 0, sub = tensor index, standard
 * normals by gf_philox_normal):
 *   fully connected weight  N(0, 1) / lr_mul   (torch.randn / lr_mul)
 *   its bias                0; a synthesis affine's 1 (bias_init 1)
 *   conv / modulated weight N(0, 1)
 *   conv bias               0
 *   synthesis.b4.const      N(0, 1)
 *   noise_const (buffer)    N(0, 1)
 *   noise_strength          0
 *   mapping.w_avg (buffer)  0
 * Grads and Adam moments are zeroed. Values are made on the host and
 * copied to a device net. */
gf_status gf_sg2_init_params(gf_sg2_net *net, uint64_t seed, gf_err *err);

/* G's mapping network: z [n, z_dim] (f32 on the net's device) and, when
 * c_dim > 0, c [n, c_dim] (one-hot or any f32; NULL otherwise) to
 * ws [n, num_ws, w_dim] (a view into acts, valid until the next mapping
 * forward). psi != 1 truncates: ws[:, :cutoff] = lerp(w_avg, ws, psi)
 * (cutoff <= 0 or >= num_ws: every w), torch.lerp's bits (gf_lerp).
 * mode is recorded (net->fwd_mode): both modes keep every intermediate
 * for a backward, the w before truncation included, which
 * gf_sg2_w_avg_update reads. z and c are borrowed until the next
 * forward. */
gf_status gf_sg2_mapping_fwd(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *z,
                             const gf_tensor *c, float psi, int cutoff,
                             gf_net_mode mode, gf_tensor *ws, gf_err *err);
/* w_avg = lerp(mean over the batch of the last mapping forward's w (before
 * truncation), w_avg, w_avg_beta): the official update, which the
 * official mapping runs inside its training forward, here a call of its
 * own (the trainer calls it after each training-mode mapping forward of
 * a G step). GF_ESTATE without a mapping forward. */
gf_status gf_sg2_w_avg_update(gf_sg2_net *net, gf_ctx *ctx, gf_err *err);
/* The update in two halves, for ranks that gather the means first:
 * mean (w_dim host floats, the caller's) = the batch mean of the last
 * mapping forward's w; then w_avg = lerp(mean, w_avg, w_avg_beta). One
 * after the other, the bits of gf_sg2_w_avg_update. */
gf_status gf_sg2_w_avg_mean(gf_sg2_net *net, gf_ctx *ctx, float *mean,
                            gf_err *err);
gf_status gf_sg2_w_avg_apply(gf_sg2_net *net, gf_ctx *ctx, const float *mean,
                             gf_err *err);

/* G's synthesis network: ws [n, num_ws, w_dim] to img [n, img_channels,
 * res, res] (a view into acts, valid until the next synthesis forward).
 * noise: GF_SG2_NOISE_*; random noise of layer l (its index in the
 * network, b4.conv1 = 0, b8.conv0 = 1, ...) for the batch's sample i is
 * stream (seed, GF_RNG_SG2_NOISE, step, l) at normal (sample0 + i) H W,
 * so a batch cut into slices draws what the whole batch draws. ws is
 * borrowed until the next forward. */
gf_status gf_sg2_synthesis_fwd(gf_sg2_net *net, gf_ctx *ctx,
                               const gf_tensor *ws, gf_sg2_noise noise,
                               uint64_t seed, int64_t step, int64_t sample0,
                               gf_net_mode mode, gf_tensor *img,
                               gf_err *err);
/* The backward of the last synthesis forward (a net built for training):
 * dimg (the image's shape, on the net's device) is dL/dimg; every
 * synthesis parameter's gradient is written (GF_OVERWRITE) or added
 * (GF_ACCUMULATE) in the grads arena, and *dws (may be NULL) receives a
 * view of dL/dws [n, num_ws, w_dim] in acts, valid until the next
 * backward: the input of gf_sg2_mapping_bwd. noise_strength's gradient is
 * that of the last forward's noise (0 contribution for noise none). */
gf_status gf_sg2_synthesis_bwd(gf_sg2_net *net, gf_ctx *ctx,
                               const gf_tensor *dimg, gf_accum accum,
                               gf_tensor *dws, gf_err *err);
/* The backward of the last mapping forward from dws [n, num_ws, w_dim]:
 * the mapping's parameter gradients (the class embedding's included),
 * written or added as accum says. GF_EUNSUPPORTED when that forward
 * truncated (psi != 1: training maps without truncation). */
gf_status gf_sg2_mapping_bwd(gf_sg2_net *net, gf_ctx *ctx,
                             const gf_tensor *dws, gf_accum accum,
                             gf_err *err);

/* Views of a block's outputs of the last synthesis forward (res 4 ..
 * img_resolution): x [n, C, res, res] and img [n, img_channels, res, res]
 * (either may be NULL). For debugging against official intermediates. */
gf_status gf_sg2_synthesis_block(const gf_sg2_net *net, int res,
                                 gf_tensor *x, gf_tensor *img, gf_err *err);

/* D: img [n, img_channels, res, res] and, when c_dim > 0, c [n, c_dim] to
 * logits [n, 1] (a view into acts). n must be a multiple of
 * min(mbstd_group, n) (the official reshape's requirement). img and c are
 * borrowed until the next forward. */
gf_status gf_sg2_d_fwd(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *img,
                       const gf_tensor *c, gf_net_mode mode,
                       gf_tensor *logits, gf_err *err);
/* The backward of the last D forward (a net built for training): dlogits
 * (n values on the net's device) is dL/dlogits; every D parameter's
 * gradient (its mapping's included) is written or added as accum says,
 * and dimg (may be NULL; the forward's img shape, on the device) receives
 * dL/dimg. */
gf_status gf_sg2_d_bwd(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *dlogits,
                       gf_tensor *dimg, gf_accum accum, gf_err *err);
/* A view of D block res's output x of the last forward (res =
 * img_resolution .. 8: [n, C(res / 2), res / 2, res / 2]). */
gf_status gf_sg2_d_block(const gf_sg2_net *net, int res, gf_tensor *x,
                         gf_err *err);

/* StyleGAN2-ADA's R1 regulariser of D (Dreg): runs D on img and c in
 * training mode and takes the gradient g of sum_i D(img_i, c_i) wrt the
 * reals: wrt img itself (aug NULL), or, with aug, wrt the input x of
 * aug's last gf_ada_fwd, whose output img must be (the official loss
 * augments the reals inside run_D and differentiates wrt the reals):
 * g = A^T grad_img. Then
 *   *penalty = (1/n) sum_n ||g_n||^2
 * (the per-sample sum over channels and pixels; may be NULL: no host
 * sync), and writes (GF_OVERWRITE) or adds (GF_ACCUMULATE) scale dP/dtheta
 * into every D parameter's gradient, its mapping's included. The official
 * loss is mean(penalty_n gamma / 2) times the lazy interval: scale =
 * r1_gamma / 2 * interval. Second order by forward-over-reverse over the
 * kernel ops (model/src/sg2_r1.c; gf_mbstd_jvp, gf_mbstd_bwd_jvp,
 * gf_ada_jvp); against PyTorch's double backward in
 * tests/model/test_sg2_reg.c. A net built for training; D's last forward
 * is this one afterwards. img, c and aug are borrowed for the call. */
gf_status gf_sg2_d_r1(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *img,
                      const gf_tensor *c, struct gf_ada *aug, float scale,
                      gf_accum accum, float *penalty, gf_err *err);

/* StyleGAN2-ADA's path length regulariser (Greg), the official loss's
 * formulation for the batch given (pl_batch_shrink is the caller's). */
typedef struct gf_sg2_pl_args {
  float pl_mean;       /* the running mean before this step */
  float decay;         /* pl_decay (0.01) */
  float weight;        /* pl_weight (2) */
  float scale;         /* the loss's gain (the lazy interval) */
  gf_sg2_noise noise;  /* the synthesis noise, as gf_sg2_synthesis_fwd's */
  uint64_t seed;
  int64_t step, sample0;
  bool lengths_only;   /* stop after the lengths: out's mean_length and
                          pl_mean, no gradient written */
  gf_tensor *dws_out;  /* NULL: the mapping's backward runs here; else
                          dloss/dws [n, num_ws, w_dim] is copied into it
                          and the mapping's gradients are the caller's
                          (ws mixed from two mappings) */
} gf_sg2_pl_args;

typedef struct gf_sg2_pl_out {
  float penalty;       /* mean over samples of (len_i - pl_mean')^2 */
  float pl_mean;       /* pl_mean' = lerp(pl_mean, mean len, decay): the
                          official running mean after the step */
  double mean_length;  /* mean over samples of len_i (the f64 the running
                          mean's update takes: gf_sg2_pl_mean_next) */
} gf_sg2_pl_out;

/* Path length: runs the synthesis on ws [n, num_ws, w_dim] (the output of
 * the caller's last gf_sg2_mapping_fwd, psi 1: that forward is what the
 * mapping's gradients go back through) with args' noise, then with
 * pl_noise (the image's shape; the official randn / sqrt(H W), drawn by
 * the caller)
 *   pl_grads = d sum(img * pl_noise) / dws
 *   len_i    = sqrt(mean over num_ws of sum over w_dim of pl_grads^2)
 *   pl_mean' = lerp(pl_mean, mean_i len_i, decay)   (not detached)
 *   loss     = scale mean_i (weight (len_i - pl_mean')^2)
 * and writes (GF_OVERWRITE) or adds (GF_ACCUMULATE) dloss/dtheta into
 * every G parameter's gradient, the mapping's through ws. out (may be
 * NULL) gets the penalty and pl_mean' (a host sync either way). Second
 * order by forward-over-reverse over the kernel ops (model/src/sg2_pl.c;
 * gf_modconv_demod_jvp); against PyTorch's double backward in
 * tests/model/test_sg2_reg.c. A net built for training. */
gf_status gf_sg2_g_pl(gf_sg2_net *net, gf_ctx *ctx, const gf_tensor *ws,
                      const gf_tensor *pl_noise, const gf_sg2_pl_args *args,
                      gf_accum accum, gf_sg2_pl_out *out, gf_err *err);
/* pl_mean' of gf_sg2_g_pl from pl_mean and the mean length: the running
 * mean's update, the same bits. */
float gf_sg2_pl_mean_next(float pl_mean, float decay, double mean_length);

#endif
