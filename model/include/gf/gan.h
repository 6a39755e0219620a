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
 * step) at the rows of the batch's global sample indices; dropout masks
 * from (seed, GF_RNG_DROPOUT, step, pass * 64 + layer) likewise, with pass
 * 0 real, 1 fake, 2 G step, 3 R1 (on the real batch). No RNG state: on the
 * CPU backend, with the same thread count, the same parameters, inputs, seed and step give
 * bit-identical results.
 *
 * Data parallelism (DESIGN §4.6, gf_gan_distribute): each rank runs the
 * step on its slice of the global batch. The step has two seams, one
 * before each Adam update: D's gradient is all-reduced after the D
 * step's backward, G's after the G step's. Each is cut into buckets of
 * consecutive parameters, and a bucket's all-reduce starts as soon as the
 * backward has produced its last gradient (a hook in gf_net_backward),
 * while earlier layers still run their backward; the step waits for all
 * of them just before Adam. A rank's slice may be cut into micro-batches
 * (gradient accumulation), whose gradients add up before the seam. Each
 * micro-batch's loss gradient is scaled by 1 / (micro-batches x ranks)
 * and the all-reduce sums, so the update is that of one rank running the
 * whole global batch with per-micro-batch batch-norm statistics.
 * Exact mode adds the micro-batch gradients in a fixed binary tree, which
 * the all-reduce (algorithm tree) continues across ranks, so the result
 * has the same bits at any power-of-two world size.
 *
 * Not here: data loading, checkpoint files, launching (trainer/). */
#ifndef GF_GAN_H
#define GF_GAN_H

#include <stdint.h>

#include "gf/net.h"
#include "gf/sha256.h"

struct gf_comm;
struct gf_grad_sync;

/* The loss of the step, on D's logits l (means over the batch):
 *   BCE    D: BCE(l_real, 1) + BCE(l_fake, 0)   G: BCE(l_fake, 1)
 *          (the non-saturating loss of Goodfellow et al., DCGAN's)
 *   HINGE  D: mean relu(1 - l_real) + mean relu(1 + l_fake)
 *          G: -mean l_fake                     (SNGAN, BigGAN)
 *   WGAN   D: mean l_fake - mean l_real       G: -mean l_fake
 *          (the Wasserstein critic loss, no clipping or penalty: pair it
 *          with --sn or R1) */
typedef enum gf_gan_loss {
  GF_GAN_LOSS_BCE = 0,
  GF_GAN_LOSS_HINGE = 1,
  GF_GAN_LOSS_WGAN = 2,
} gf_gan_loss;

/* Static names "bce", "hinge", "wgan" ("?" out of range) and the parse. */
const char *gf_gan_loss_name(gf_gan_loss l);
gf_status gf_gan_loss_parse(const char *s, gf_gan_loss *out, gf_err *err);

typedef struct gf_gan_hparams {
  gf_adam_params adam_g; /* default lr 2e-4, beta1 0.5, beta2 0.999, eps 1e-8 */
  gf_adam_params adam_d; /* the same */
  gf_gan_loss loss;      /* default BCE */
  double ema_decay;      /* 0: no EMA generator (the default); else in
                            (0, 1): after every G update the EMA
                            generator's parameters and BN running
                            statistics move to lerp(G, EMA, beta) with
                            beta this decay (see ema_rampup). Fixed at
                            gf_gan_init (it decides whether the EMA
                            generator exists) */
  double ema_rampup;     /* StyleGAN2-ADA's ramp, >= 0 (0: none): the
                            EMA's half-life, h = ln 0.5 / ln ema_decay
                            G updates, is capped at (t - 1) ema_rampup
                            for update t (1-based), beta = 0.5^(1/h_t)
                            (0 while h_t is 0: the first update copies G) */
  double r1_gamma;       /* R1 penalty weight (Mescheder et al. 2018), >= 0;
                            0: none (the default). D's loss gains
                            gamma / 2 mean ||grad_x D(x)||^2 on the real
                            batch, lazily as StyleGAN2: only in the D
                            updates whose step key is a multiple of
                            r1_every, then weighted by r1_every. Needs a D
                            without batch norm (spectral_norm, or mlp) */
  int r1_every;          /* >= 1; StyleGAN2's 16 by default */
  unsigned augment;      /* DiffAugment policy (GF_AUG_* bits of gf/ops.h;
                            0: none, the default): every image D sees, real
                            or fake, is augmented inside the step, with
                            per-sample draws from (seed, GF_RNG_AUGMENT,
                            step, pass) (gf/augment.h), and G's gradient
                            flows back through the augmentation. R1 is
                            taken on the augmented real batch. Fixed at
                            gf_gan_init (it sizes the step's buffers) */
} gf_gan_hparams;

/* DCGAN's Adam settings for both networks (lr 2e-4, betas (0.5, 0.999),
 * eps 1e-8, no weight decay), the BCE loss, no EMA (ema_rampup 0.05 for
 * when one is asked for). */
void gf_gan_hparams_default(gf_gan_hparams *hp);

/* The EMA's beta for G update t (1-based) under hp (0 <= beta < 1). */
double gf_gan_ema_beta(const gf_gan_hparams *hp, int64_t t);

/* How a step is spread over ranks and micro-batches (gf_gan_distribute). */
typedef struct gf_gan_dist {
  struct gf_comm *comm; /* borrowed; NULL: one rank, no all-reduce */
  int micro;            /* micro-batches each rank's slice is cut into
                           (>= 1; 1 = none) */
  bool exact;           /* exact mode: micro-batch gradients summed in a
                           fixed binary tree (micro a power of two, the
                           comm's algorithm tree, CPU backend); BN running
                           statistics replayed in global micro-batch
                           order on every rank */
  bool sync_bn;         /* BN statistics over all ranks (not with exact) */
  size_t bucket_bytes;  /* gradient all-reduce bucket; 0 = 1 MiB */
  bool compress_bf16;   /* gradient buckets travel as bf16 (the comm's
                           GF_CDT_F32_AS_BF16: half the bytes, sums rounded
                           to bf16), fp32 everywhere else; not with exact */
} gf_gan_dist;

/* What the seams measured, summed since gf_gan_distribute (or the last
 * gf_gan_sync_stats_reset). */
typedef struct gf_gan_sync_stats {
  uint64_t steps;        /* seams passed (2 per step) */
  double allreduce_s;    /* wall seconds from the first bucket's start to
                            the last bucket's completion, summed */
  double exposed_s;      /* of which the step waited after its backward
                            had ended (not hidden behind the backward) */
  uint64_t bytes;        /* gradient bytes all-reduced */
  uint64_t buckets;      /* buckets all-reduced */
} gf_gan_sync_stats;

typedef struct gf_gan {
  gf_model_config cfg;  /* copy */
  gf_gan_hparams hp;    /* copy; the caller may change it between steps */
  gf_net g;             /* the generator, built for training */
  gf_net d;             /* the discriminator, built for training */
  gf_net g_ema;         /* the EMA generator (hp.ema_decay > 0), built for
                           inference with G's layout, arena for arena;
                           unbuilt (layers NULL) without an EMA */
  int64_t last_n;       /* samples of the last D step (the G step works on
                           its latents and fake batch); 0: none yet */
  int64_t last_sample0; /* its first global sample */
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
  float *aug;           /* [max_batch, C, H, W] the augmented batch D sees
                           (hp.augment; else NULL) */
  float *aug_params;    /* [max_batch, GF_AUG_NPARAMS] its draws, on the
                           device (hp.augment; else NULL) */
  float *aug_host;      /* [max_batch, GF_AUG_NPARAMS] host memory (owned,
                           malloc) they are drawn into (hp.augment) */
  int32_t *real_labels; /* class-conditional (cfg.num_classes > 0): the
                           next D step's real labels [max_batch] and its
                           fake batch's [max_batch], on the device (in the
                           scratch arena); NULL otherwise */
  int32_t *fake_labels;
  int32_t *labels_host; /* [max_batch] host memory (owned, malloc) */
  int64_t real_labels_n; /* labels given by gf_gan_set_labels; 0 none */
  float *host;          /* [max_batch + 1] host memory (owned, malloc) the
                           losses and logits of a device step are read
                           back into; NULL on the CPU */
  gf_gan_dist dist;      /* copy; comm NULL for one rank */
  struct gf_grad_sync *sync_g, *sync_d; /* owned; NULL for one rank */
} gf_gan;

/* What one step measured. Losses are the means of gf_gan_loss (for BCE,
 * what PyTorch's BCEWithLogitsLoss returns); D(.) means sigmoid of D's
 * logit for BCE and the logit itself for hinge and WGAN, averaged over
 * the batch. */
typedef struct gf_gan_stats {
  double loss_d;        /* loss_d_real + loss_d_fake */
  double loss_d_real;   /* D's loss on real images: BCE(D(x), 1), mean
                           relu(1 - D(x)) or -mean D(x) */
  double loss_d_fake;   /* on fake ones, before the D update: BCE(D(G(z)),
                           0), mean relu(1 + D(G(z))) or mean D(G(z)) */
  double loss_g;        /* G's, after the D update: BCE(D(G(z)), 1) or
                           -mean D(G(z)) */
  double d_real;        /* mean D(x) */
  double d_fake;        /* mean D(G(z)) before the D update (D_G_z1) */
  double d_fake_after;  /* mean D(G(z)) after the D update (D_G_z2) */
  double r1;            /* mean ||grad_x D(x)||^2 on the real batch where
                           the D step ran R1 (r1_done), else 0 */
  bool r1_done;         /* the D step applied the R1 penalty */
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

/* Spreads the following steps over the ranks of d->comm and d->micro
 * micro-batches (d NULL: back to one rank, one batch). Allocates the
 * bucket tables (and exact mode's tree levels, micro-batch statistics
 * log), owned by gan until gf_gan_free; d->comm is borrowed and must
 * outlive the steps. Every rank must call it with the same d. GF_EINVAL
 * for combinations that cannot work (exact with sync_bn, exact without a
 * power-of-two micro, micro < 1). */
gf_status gf_gan_distribute(gf_gan *gan, gf_ctx *ctx, const gf_gan_dist *d,
                            gf_err *err);

/* The seams' measurements since gf_gan_distribute or the last reset. */
void gf_gan_sync_stats_get(const gf_gan *gan, gf_gan_sync_stats *out);
void gf_gan_sync_stats_reset(gf_gan *gan);

/* Sends rank 0's training state (the arenas of gf_gan_copy_state and the
 * Adam step counts) to every rank of comm; every rank calls it. */
gf_status gf_gan_broadcast_state(gf_gan *gan, struct gf_comm *comm,
                                 gf_err *err);

/* SHA-256 of G's and D's parameters and Adam moments (and BN running
 * statistics when with_bn_stats), read back from the device when needed:
 * equal digests on every rank mean the ranks hold the same model. */
gf_status gf_gan_digest(const gf_gan *gan, bool with_bn_stats,
                        char hex[GF_SHA256_HEX_LEN + 1], gf_err *err);

/* One training step on real [n, C, H, W] (any shape with n samples of
 * C*H*W values; 2 <= n <= max_batch; with micro-batches, n a multiple of
 * micro with at least 2 samples each). real's first sample is global
 * sample sample0 of the step's batch (0 for one rank). z: [n, z_dim]
 * latents, or NULL to draw them from (seed, GF_RNG_LATENT, step) at global
 * samples sample0 ..; either way they are left in gan->z. Updates both networks' parameters, Adam state, step counts and
 * BN running statistics (G once, D three times, as PyTorch does). stats
 * (may be NULL) receives the losses. On an error the networks may be
 * partly updated: restore them from a checkpoint. real must be on the
 * ctx's device; z may be on the host or the device. On a CUDA ctx the
 * step queues its ops on the ctx's stream and waits only where a loss or
 * D's mean output is read back for stats (3 small copies). */
gf_status gf_gan_step(gf_gan *gan, gf_ctx *ctx, const gf_tensor *real,
                      const gf_tensor *z, uint64_t seed, int64_t step,
                      int64_t sample0, gf_gan_stats *stats, gf_err *err);

/* Class-conditional GANs (cfg.num_classes > 0): the classes of the next D
 * step's real batch, [n] GF_I32 in [0, num_classes) on the host or the
 * ctx's device (copied: not borrowed). Each D step needs them for its
 * batch (GF_ESTATE otherwise); its fake batch's classes are drawn
 * uniformly per sample from (seed, GF_RNG_LABEL, step) at the word of its
 * global sample index, int(w, K) = floor(w K / 2^32) (so any cut of the
 * batch draws the same), and the G step uses them again. G and D are
 * conditioned as gf_net_set_labels says. */
gf_status gf_gan_set_labels(gf_gan *gan, gf_ctx *ctx, const gf_tensor *labels,
                            gf_err *err);

/* The classes drawn for samples sample0 .. sample0 + n - 1 of step: as a
 * conditional D step draws its fake batch's (host memory). */
void gf_gan_draw_labels(int32_t *out, int64_t n, int num_classes, uint64_t seed,
                        int64_t step, int64_t sample0);

/* The two halves of gf_gan_step, for schedules of several D updates per G
 * update (WGAN's and ParaGAN's n_critic): gf_gan_step is gf_gan_d_step then
 * gf_gan_g_step with the same arguments.
 *
 * gf_gan_d_step: the D step of gf_gan_step on real (arguments as there;
 * `step` keys the latents and dropout masks: a schedule of K D steps per
 * G step passes K * g_step + j for D step j, so each D step draws fresh
 * latents). Fills the D half of stats (loss_d, loss_d_real, loss_d_fake,
 * d_real, d_fake); the rest is zeroed.
 *
 * gf_gan_g_step: the G step of gf_gan_step on the latents and fake batch of
 * the last gf_gan_d_step (same step, sample0 and slice), then the EMA
 * generator's update when there is one. Fills loss_g and d_fake_after.
 * GF_ESTATE without a D step since the last G step. */
gf_status gf_gan_d_step(gf_gan *gan, gf_ctx *ctx, const gf_tensor *real,
                        const gf_tensor *z, uint64_t seed, int64_t step,
                        int64_t sample0, gf_gan_stats *stats, gf_err *err);
gf_status gf_gan_g_step(gf_gan *gan, gf_ctx *ctx, uint64_t seed,
                        int64_t step, gf_gan_stats *stats, gf_err *err);

/* Copies the training state of src into dst: every arena of G and D
 * (parameters, gradients, Adam moments, BN running statistics) and the Adam
 * step counts. dst must be built from the same config (any max_batch, any
 * device): the arenas then have the same layout byte for byte. This is how
 * a GAN on a device is checkpointed and resumed through a host twin.
 * Allocates nothing; returns when dst holds the data. */
gf_status gf_gan_copy_state(gf_gan *dst, const gf_gan *src, gf_err *err);

/* The generator a user of the run gets (sample grids, evaluations, the
 * registered model): the EMA generator when the GAN has one and raw is
 * false, else G. */
gf_net *gf_gan_generator(gf_gan *gan, bool raw);
const gf_net *gf_gan_generator_const(const gf_gan *gan, bool raw);

/* Bytes held by the arenas of G, D and the step's scratch. */
size_t gf_gan_arena_bytes(const gf_gan *gan);

#endif
