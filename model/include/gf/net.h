/* net.h - the networks of DESIGN §2 (mlp, dcgan, resnet; generator and
 * discriminator) as sequences of layers over the kernels library: building
 * one from a gf_model_config, its parameter / gradient / Adam-moment / BN
 * running-statistics arenas, initialisation, forward and backward.
 *
 * A gf_net is one network (G or D). Its memory lives in a few arenas
 * (STYLE habit 9), so a checkpoint is one write per arena, an all-reduce one
 * call, and Adam one call over the whole parameter arena:
 *   params   trainable parameters (weights, biases, BN gamma/beta)
 *   grads    their gradients, same layout as params      (training only)
 *   adam_m   Adam first moments, same layout as params   (training only)
 *   adam_v   Adam second moments, same layout as params  (training only)
 *   bn_stats BN running means and variances
 *   acts     activations of the last forward and gradient scratch
 * Each tensor has a PyTorch state_dict name ("g.main.0.weight",
 * "g.main.1.running_mean", ...): dropping the "g." / "d." prefix gives the
 * keys of the equivalent nn.Module with an nn.Sequential called `main`
 * (PyTorch's DCGAN example layout), so generator.safetensors reads from
 * Python. BN's num_batches_tracked is not kept (nothing here uses it).
 *
 * Not here: the GAN step (gf/gan.h), checkpoint files (trainer/), data. */
#ifndef GF_NET_H
#define GF_NET_H

#include <stdbool.h>
#include <stdint.h>

#include "gf/kernels.h"
#include "gf/model_config.h"
#include "gf/rng.h"

/* mlp sizes (the paper's Keras network; DESIGN §2). ngf/ndf of the config
 * do not apply to mlp. */
#define GF_MLP_G_HIDDEN1 1200
#define GF_MLP_G_HIDDEN2 1000
#define GF_MLP_D_HIDDEN1 256
#define GF_MLP_D_HIDDEN2 128
#define GF_MLP_LRELU_SLOPE 0.2f
#define GF_MLP_DROPOUT 0.3f
#define GF_DCGAN_LRELU_SLOPE 0.2f
#define GF_BN_EPS 1e-5f      /* PyTorch BatchNorm defaults, both networks */
#define GF_BN_MOMENTUM 0.1f
#define GF_SN_EPS 1e-12f     /* torch.nn.utils.spectral_norm's eps */
#define GF_COND_EMBED_DIM 128 /* G's shared class embedding (BigGAN's
                                 shared_dim) */

#define GF_NET_MAX_LAYERS 48 /* layers of the deepest network (resnet-64 G: 37) */
#define GF_NET_MAX_TENSORS 96 /* resnet-64: 70 in a conditional G */
#define GF_PARAM_NAME_MAX 48

typedef enum gf_net_role {
  GF_NET_G = 0, /* generator: z [N, z_dim] -> image [N, C, H, W] in [-1, 1] */
  GF_NET_D = 1, /* discriminator: image [N, C, H, W] -> logit [N, 1] */
} gf_net_role;

typedef enum gf_net_mode {
  GF_MODE_TRAIN = 0, /* BN batch statistics (running stats updated), dropout */
  GF_MODE_INFER = 1, /* BN running statistics, dropout off */
} gf_net_mode;

typedef enum gf_param_kind {
  GF_PARAM_WEIGHT,       /* linear [out,in], conv [Cout,Cin,k,k],
                            transposed conv [Cin,Cout,k,k] */
  GF_PARAM_BIAS,         /* linear bias [out] */
  GF_PARAM_BN_WEIGHT,    /* BN gamma [C] */
  GF_PARAM_BN_BIAS,      /* BN beta [C] */
  GF_PARAM_BN_RUNNING_MEAN, /* [C], in bn_stats, not trainable */
  GF_PARAM_BN_RUNNING_VAR,  /* [C], in bn_stats, not trainable */
  GF_PARAM_SN_U,         /* spectral norm's left vector [R] ("weight_u"),
                            in bn_stats, not trainable */
  GF_PARAM_SN_V,         /* its right vector [K] ("weight_v"), the same */
  GF_PARAM_EMBED,        /* a class embedding [classes, dim]: G's shared
                            one ("g.shared.weight"), D's projection
                            ("d.embed.weight"); trainable */
  GF_PARAM_CBN_GAIN_BIAS, /* a conditional BN's gain bias [C]: starts at 1
                            (BigGAN's 1 + gain(y)) */
} gf_param_kind;

/* One named tensor of a network. Every gf_tensor here is a view into one of
 * the net's arenas (owns == false); they are valid until gf_net_free. */
typedef struct gf_param {
  char name[GF_PARAM_NAME_MAX]; /* state_dict name, "g.main.0.weight" */
  gf_param_kind kind;
  bool trainable;   /* in params (and grads/adam_m/adam_v); else bn_stats */
  gf_tensor value;  /* the values */
  gf_tensor grad;   /* gradient; data NULL unless trainable and the net
                       was built for training */
  gf_tensor adam_m; /* Adam moments; as grad */
  gf_tensor adam_v;
  int64_t fan_in;   /* weights: inputs per output unit (init); else 0 */
  int64_t fan_out;  /* weights: outputs per input unit (init); else 0 */
} gf_param;

struct gf_layer; /* one layer; model/src/net_layers.h */

typedef struct gf_net {
  gf_model_config cfg;      /* copy of the config it was built from */
  gf_net_role role;
  int max_batch;            /* forward accepts 1..max_batch samples
                               (GF_MODE_TRAIN with BN needs >= 2); 0:
                               weights alone, no activations, no forward */
  bool training;            /* grads/adam_m/adam_v and dbuf allocated */
  gf_arena params, grads, adam_m, adam_v, bn_stats, acts;
  const struct gf_net *weights_of; /* NULL: the parameters and BN
                               statistics are in params and bn_stats;
                               else they are this net's (views into its
                               arenas, borrowed: gf_net_init_shared), and
                               params and bn_stats stay empty */
  gf_param tensors[GF_NET_MAX_TENSORS]; /* state_dict order: by module,
                                           weight, bias, running_mean,
                                           running_var */
  int n_tensors;
  struct gf_layer *layers;  /* n_layers entries, owned (malloc) */
  int n_layers;
  int in_ndim;              /* per-sample input dims: 1 or 3 */
  int64_t in_shape[3];      /* per-sample input shape */
  int out_ndim;             /* per-sample output dims */
  int64_t out_shape[3];
  int64_t n_trainable;      /* trainable scalars (the paper's counts) */
  int64_t n_bn_stats;       /* running mean + var scalars */
  /* State of the last forward, read by the backward. */
  gf_tensor fwd_in;         /* view of the caller's input (borrowed: it
                               must live until the backward) */
  int fwd_batch;            /* N of the last forward; 0 = none yet */
  gf_net_mode fwd_mode;
  float *dbuf[2];           /* backward ping-pong buffers in acts
                               (training only; NULL otherwise) */
  /* Class conditioning (cfg.num_classes > 0; DESIGN: BigGAN's conditional
   * batch norm with a shared embedding in G, Miyato & Koyama's projection
   * in D). */
  gf_tensor labels;         /* view of the caller's [n] GF_I32 labels of
                               the next forward (gf_net_set_labels;
                               borrowed until its backward) */
  int p_embed;              /* tensor index of the class embedding; -1 */
  float *cond_e;            /* G: [max_batch, GF_COND_EMBED_DIM] the shared
                               embedding's rows; D: [max_batch, F] the
                               projection's rows; in acts */
  float *cond_dx, *cond_dg, *cond_db, *cond_de; /* backward scratch of
                               conditioning, in acts (training only) */
  bool cond_first;          /* the backward's first class-embedding
                               gradient is yet to be written */
  float *sn_dw;             /* spectral norm: the gradient wrt a layer's
                               normalized weight, in acts (training with
                               spectral norm only) */
  /* Data parallelism (DESIGN §4.6; gf_net_set_sync_bn and the GAN step's
   * gradient sync set them; gf_net_free clears them). NULL/false for one
   * rank. */
  struct gf_comm *bn_comm;  /* borrowed: train-mode batch norm takes its
                               statistics over every rank of this
                               communicator (sync BN, net_sync.c) */
  struct gf_net_sync *sync; /* owned: sync-BN scratch (host and device) */
  bool bn_frozen;           /* true: a train-mode forward leaves the BN
                               running statistics alone (a recomputed
                               forward must not count twice) */
  /* Called after layer `layer`'s backward has written its parameter
   * gradients (param_grads true), in backward order (last layer first):
   * the all-reduce of a bucket can start while earlier layers still run
   * their backward. An error stops the backward. NULL: no hook. */
  gf_status (*grad_hook)(void *user, struct gf_net *net, int layer,
                         gf_err *err);
  void *grad_hook_user;     /* borrowed; passed to grad_hook */
  struct gf_net_r1 *r1;     /* owned: gf_net_r1's scratch (net_r1.c), on
                               the net's device; NULL until its first call */
} gf_net;

/* Builds network `role` of cfg (validated; dcgan, resnet: 28/32/64, 1 or 3
 * channels; mlp: any H, W, C, hidden sizes as the paper) on ctx's device
 * for up to max_batch samples. training allocates grads, both Adam
 * moments and the backward's buffers (a generator only served needs none:
 * a net built without them runs forwards only). Parameters are zero and
 * BN running stats are (mean 0, var 1) until gf_net_init_params.
 * Memory: net (caller's struct) owns its arenas and layer table; release
 * with gf_net_free, also after a failure. cfg is copied. */
gf_status gf_net_init(gf_net *net, gf_ctx *ctx, const gf_model_config *cfg,
                      gf_net_role role, int max_batch, bool training,
                      gf_err *err);
/* gf_net_init's max_batch may be 0 for an inference net (training
 * false) of weights alone: parameters and BN statistics, no activations;
 * it runs no forward (GF_ESTATE) and is the source of gf_net_init_shared.
 */

/* Builds an inference net (training false) of the config and role of
 * `weights` (a net built by gf_net_init, any max_batch, 0 included) with
 * activations of its own for max_batch >= 1 samples on ctx, whose
 * parameters and BN statistics are the weights' (views into their params
 * and bn_stats arenas, not copies). Several such nets, each run on its own
 * ctx by its own thread, run forwards at once on one copy of the weights:
 * a forward only reads them. ctx must be on the weights' device.
 * Memory: net (caller's struct) owns its activations and layer table
 * (gf_net_free, also after a failure); the weights are borrowed: they
 * must outlive net and keep their values while it runs.
 * gf_net_init_params refuses such a net (GF_ESTATE). */
gf_status gf_net_init_shared(gf_net *net, gf_ctx *ctx, const gf_net *weights,
                             int max_batch, gf_err *err);
/* Releases everything net owns (not the weights of a gf_net_init_shared
 * net); accepts NULL and a freed or zeroed net. */
void gf_net_free(gf_net *net);

/* Initialises every parameter as the papers do, a pure function of seed
 * (streams GF_RNG_INIT_G / GF_RNG_INIT_D, sub = tensor index):
 *  dcgan: weights N(0, 0.02), BN gamma N(1, 0.02), beta 0 (PyTorch's DCGAN
 *         example weights_init);
 *  mlp:   Keras defaults (the paper is a Keras network): weights Glorot
 *         uniform U(-l, l), l = sqrt(6 / (fan_in + fan_out)), biases 0,
 *         BN gamma 1, beta 0;
 *  resnet: the same Glorot uniform (SNGAN's xavier_uniform, gain 1),
 *         but a conditional BN's gain and bias linears N(0, 0.02).
 * BN running stats are reset to mean 0, var 1; grads and Adam moments to 0.
 * On a device net the values are made on the host (the same bits) and
 * copied over. */
gf_status gf_net_init_params(gf_net *net, uint64_t seed, gf_err *err);

/* Spectral norm (cfg.spectral_norm, D only): a layer's trainable weight is
 * "weight_orig" and its power-iteration vectors "weight_u" [R] and
 * "weight_v" [K] (bn_stats arena), torch.nn.utils.spectral_norm's names;
 * every forward uses weight_orig / sigma with sigma = u . (W v) from the
 * vectors as they are. gf_net_sn_iterate runs one power iteration of every
 * such layer (u and v move towards W's top singular vectors): the GAN step
 * calls it once per D weight version, before the first forward on new
 * weights, so the result does not depend on how many forwards (micro-
 * batches, ranks) use them. (PyTorch's module iterates at every training
 * forward instead: with one micro-batch, the same weights in the real and
 * fake passes of a D step get one iteration here and two there.) A net
 * without spectral norm returns GF_OK at once. */
gf_status gf_net_sn_iterate(gf_net *net, gf_ctx *ctx, gf_err *err);

/* R1 of D on real images x [n, C, H, W] (Mescheder et al. 2018; StyleGAN's
 * lazy R1): a train-mode forward (dropout masks keyed by (seed, step,
 * sample0, pass) exactly as gf_net_forward keys them), the gradient of
 * sum_i D(x_i) wrt x, *penalty = (1/n) sum_i ||grad_x D(x_i)||^2 (host
 * double; penalty may be NULL), and scale * dP/dtheta ADDED to D's
 * parameter gradients (GF_ACCUMULATE; through spectral norm to weight_orig
 * where the layer has it, with the u, v of the forward; biases get 0).
 * scale finite and >= 0 (0: P only, gradients untouched; the backward is
 * seeded with a power of two near sqrt(2 scale / n), harmless for any
 * realistic scale). A double backward over the ops (model/src/net_r1.c);
 * works on both backends.
 * Residual blocks (the resnet's D) and a conditional D's projection term
 * are differentiated through (net_r1.c). GF_EUNSUPPORTED for a net with
 * batch norm (R1 penalizes each sample's gradient, which train-mode BN
 * couples), tanh or transposed convolution layers (D has none); GF_ESTATE on a net not built for training. It is a
 * forward: the net's last-forward state (gf_net_output, gf_net_backward) is
 * afterwards R1's, on x (borrowed as gf_net_forward borrows it). grad_hook
 * is not called: gradients are complete when it returns. Memory: the first
 * call allocates net->r1 on the net's device (about the size of the
 * activations: the gradient wrt every layer's input for max_batch
 * samples), owned by the net and freed by gf_net_free. */
gf_status gf_net_r1(gf_net *net, gf_ctx *ctx, const gf_tensor *x,
                    float scale, uint64_t seed, int64_t step,
                    int64_t sample0, int pass, double *penalty,
                    gf_err *err);

/* Class-conditional nets (cfg.num_classes > 0): the labels of the next
 * forward, [n] GF_I32 in [0, num_classes) on the net's device (checked on
 * the host, as gf_labels_check; a device's are not read back), borrowed:
 * they must stay unchanged until that forward's backward. A conditional
 * forward without labels of its batch size fails with GF_ESTATE.
 *   G: every batch norm is conditional: BN without affine, then
 *      y = xhat * gain[n, c] + bias[n, c], gain = e W_gain^T + b_gain
 *      (b_gain starts at 1), bias = e W_bias^T + b_bias, e = the shared
 *      embedding's row of the sample's class ("g.shared.weight"
 *      [classes, GF_COND_EMBED_DIM]; "g.main.i.gain.weight", ...).
 *   D: the logit gains <embed[y], h>, h the (flattened) input of D's
 *      last layer ("d.embed.weight" [classes, numel(h)]). */
gf_status gf_net_set_labels(gf_net *net, const gf_tensor *labels,
                            gf_err *err);

/* Looks a tensor up by state_dict name; NULL when absent. */
gf_param *gf_net_find(gf_net *net, const char *name);

/* Forward of n = x->shape[0] samples. x: G [n, z_dim]; D [n, C, H, W]
 * (or any shape with the same per-sample numel). y receives a view of the
 * output in the acts arena ([n, C, H, W] for G, [n, 1] for D), valid until
 * the next forward. Dropout masks (mlp D, train mode) come from stream
 * (seed, GF_RNG_DROPOUT, step, pass * 64 + layer) at the words of global
 * samples sample0 .. sample0 + n - 1 (x's first sample is global sample
 * sample0 of the step's batch), so a batch cut into slices gets the masks
 * the whole batch gets: pass separates forwards within one step (the GAN
 * step uses 0 real, 1 fake, 2 G step). x is borrowed: it must stay
 * unchanged until gf_net_backward. */
gf_status gf_net_forward(gf_net *net, gf_ctx *ctx, const gf_tensor *x,
                         gf_net_mode mode, uint64_t seed, int64_t step,
                         int64_t sample0, int pass, gf_tensor *y,
                         gf_err *err);

/* Backward of the last GF_MODE_TRAIN forward. dy: gradient of the loss wrt
 * that forward's output (same shape). dx (may be NULL) receives the
 * gradient wrt the input x. When param_grads, parameter gradients are
 * written (GF_OVERWRITE) or added (GF_ACCUMULATE) into the grads arena;
 * when false they are left alone (a G step only needs D's dx). GF_ESTATE
 * on a net not built for training. */
gf_status gf_net_backward(gf_net *net, gf_ctx *ctx, const gf_tensor *dy,
                          gf_tensor *dx, bool param_grads, gf_accum accum,
                          gf_err *err);

/* A view of the output of the last forward (as gf_net_forward's y), valid
 * until the next forward; GF_ESTATE when there was none. The GAN step
 * leaves G's fake batch here. Allocates nothing. */
gf_status gf_net_output(const gf_net *net, gf_tensor *y, gf_err *err);

/* One Adam update of every trainable parameter (one call over the params
 * arena; padding stays zero). step is 1-based. */
gf_status gf_net_adam(gf_net *net, gf_ctx *ctx, const gf_adam_params *p,
                      int64_t step, gf_err *err);

/* Scalars (not bytes) of the trainable parameters / BN running stats. */
int64_t gf_net_num_trainable(const gf_net *net);
int64_t gf_net_num_bn_stats(const gf_net *net);
/* Bytes held by the net's arenas (all six; a gf_net_init_shared net's
 * weights are the other net's and not counted). */
size_t gf_net_arena_bytes(const gf_net *net);

/* Fills z [n, z_dim] with N(0, 1) latents from stream (seed, purpose,
 * step, 0): row i is global sample sample0 + i, the same values whatever
 * n and however a batch is cut. A device z gets the same values, drawn on
 * the host and copied. */
gf_status gf_latent_sample(gf_tensor *z, uint64_t seed,
                           gf_rng_purpose purpose, int64_t step,
                           int64_t sample0, gf_err *err);

/* Makes train-mode batch norm of net take its statistics over every rank
 * of comm (sync BN: the batch mean and variance, and in the backward the
 * sums of dy and dy * xhat, are all-reduced, so N ranks of B/N samples
 * normalize as one rank of B would); comm NULL returns to per-rank
 * statistics. Allocates the sync scratch (owned by net, freed by
 * gf_net_free); comm is borrowed and must outlive its use. */
gf_status gf_net_set_sync_bn(gf_net *net, gf_ctx *ctx, struct gf_comm *comm,
                             gf_err *err);

#endif
