/* sg2_gan.h - one StyleGAN2-ADA training iteration over gf_sg2_net
 * (gf/sg2_net.h) and the ADA pipeline (gf/ada.h), as the official
 * training loop (training/training_loop.py) and loss
 * (training/loss.py, StyleGAN2Loss) of NVlabs/stylegan2-ada-pytorch run
 * it, phase by phase, in the official order:
 *
 *   Gmain  every step: G's gradients of mean(softplus(-D(aug(G(z, c))))),
 *          then one Adam step of G.
 *   Greg   every g_reg_interval steps (step % interval == 0) when
 *          pl_weight > 0: the path-length hook (gf_sg2_gan.greg, by
 *          default gf_sg2_greg_pl) per round with gain = interval, then
 *          one Adam step of G. Skipped when pl_weight is 0 (the official
 *          phase then has no gradients, and Adam skips parameters without
 *          one). When it runs every G parameter has a gradient (the
 *          official loss adds gen_img * 0), so one Adam step count per net
 *          stays the official per-parameter one.
 *   Dmain  every step: D's gradients of mean(softplus(D(aug(G(z, c))))) on
 *          the fakes (no gradient into G) plus mean(softplus(-D(aug(real)))),
 *          then one Adam step of D.
 *   Dreg   every d_reg_interval steps when r1_gamma > 0: the R1 hook
 *          (gf_sg2_gan.dreg, by default gf_sg2_dreg_r1) per round with
 *          gain = interval, then one Adam step of D (every D parameter has
 *          a gradient: the official adds real_logits * 0).
 * With an interval 0 (no lazy regularization) the official 'Gboth' and
 * 'Dboth' phases: the hook runs inside Gmain's / Dmain's round after the
 * main loss, gain 1, one Adam step.
 * then the G EMA, the image counter, and the ADA p controller.
 *
 * Each of G(z, c) runs the official run_G: ws = mapping(z, c) (training
 * mode: w_avg is updated from this forward's w, gf_sg2_w_avg_update, in
 * every phase that runs G, as the official G in train mode does); with
 * style-mixing probability > 0, a cut-off drawn per phase and batch:
 * cutoff uniform in [1, num_ws - 1], replaced by num_ws unless a uniform
 * u < style_mixing; ws[:, cutoff:] = mapping(z2, c)[:, cutoff:] with z2 a
 * second latent batch (no w_avg update); img = synthesis(ws) (noise as
 * hp.noise says; the official training uses random noise).
 * The losses' gradients are formed on the host as PyTorch's softplus
 * backward (threshold 20) and mean (1 / n of the round) times gain
 * (the phase's interval: 1 for the main phases).
 *
 * Adam: betas (0, 0.99), eps 1e-8, the recipe's lr; with lazy
 * regularization (interval k > 0) the official correction c = k / (k + 1):
 * lr c, betas ** c. One Adam step count per net (G's main and reg phases
 * share one optimizer, as the official).
 * EMA: ema_nimg = ema_kimg 1000, min(ema_nimg, cur_nimg ema_rampup) with a
 * ramp-up (cur_nimg before this step's images), beta = 0.5 ** (batch /
 * max(ema_nimg, 1e-8)); G_ema params = lerp(G, G_ema, beta) (gf_lerp),
 * G_ema buffers (w_avg, noise_const) = G's.
 * ADA: every D input (Gmain's fakes, Dmain's fakes and reals) goes through
 * gf_ada_fwd at the controller's p; when hp.ada_target > 0 the controller
 * adds every real logit's sign and, every ada_interval steps, moves p
 * (gf_ada_ctl_step).
 *
 * Randomness (DESIGN §4.1), every draw a pure function of (seed, purpose,
 * step, sub, global sample), so a batch cut into micro-batches (rounds of
 * at most max_batch samples) draws what the whole batch draws:
 *   z, z2     GF_RNG_SG2_LATENT, sub = 2 phase + (0 for z, 1 for z2),
 *             z_dim normals per sample (phase: GF_SG2_PHASE_*)
 *   cut-off   GF_RNG_SG2_MIX, sub = phase: word 0 the gate's u
 *             ((w >> 8) 2^-24), word 1 the cut-off 1 + w mod (num_ws - 1);
 *             one per phase and batch (the official code draws one per
 *             round: the same when the batch is one round)
 *   ADA       gf_ada_draw with pass GF_SG2_PASS_* (Gmain fakes, Dmain fakes,
 *             Dmain reals)
 *   noise     gf_sg2_synthesis_fwd's (seed, GF_RNG_SG2_NOISE, step, layer)
 *             with step 4 step + phase.
 * The results still depend on the cut where the official ones do: D's
 * minibatch-stddev groups and ADA's reflect margin are the round's.
 * A test may give the draws instead (gf_sg2_draws).
 *
 *   path-length noise  GF_RNG_SG2_PL_NOISE, sub 0, C R R normals per
 *             sample (the Greg rows' global samples), over sqrt(R R)
 *
 * Not done here: the official nan_to_num of the gradients before each Adam
 * step (non-finite gradients are passed on as they are). */
#ifndef GF_SG2_GAN_H
#define GF_SG2_GAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gf/ada.h"
#include "gf/safetensors.h"
#include "gf/sg2_net.h"

/* The phases, in the official order (their index keys the draws). */
typedef enum gf_sg2_phase {
  GF_SG2_PHASE_GMAIN = 0,
  GF_SG2_PHASE_GREG = 1,
  GF_SG2_PHASE_DMAIN = 2,
  GF_SG2_PHASE_DREG = 3,
} gf_sg2_phase;

/* ADA passes (gf_ada_draw's pass) of one step. */
enum {
  GF_SG2_PASS_GMAIN_FAKE = 0,
  GF_SG2_PASS_DMAIN_FAKE = 1,
  GF_SG2_PASS_DMAIN_REAL = 2,
  GF_SG2_PASS_DREG_REAL = 3, /* for the R1 hook */
};

typedef struct gf_sg2_gan_hp {
  double lr_g, lr_d;      /* Adam's lr before the lazy correction */
  double beta1, beta2;    /* 0, 0.99 */
  double eps;             /* 1e-8 */
  float style_mixing;     /* probability, 0.9 (cifar 0) */
  float pl_weight;        /* 2; 0: no Greg phase */
  float pl_decay;         /* 0.01: the running mean's lerp weight */
  int pl_batch_shrink;    /* 2: Greg runs on the first round size /
                             shrink samples of each round */
  float r1_gamma;         /* recipe's; 0: no Dreg phase */
  int g_reg_interval;     /* 4; 0: no lazy regularization (no correction,
                             Greg never runs) */
  int d_reg_interval;     /* 16; as above */
  double ema_kimg;        /* G EMA half-life in thousands of images */
  double ema_rampup;      /* 0: none */
  bool augment;           /* run gf_ada on every D input */
  float ada_p0;           /* p at the start */
  double ada_target;      /* 0.6; <= 0: p fixed (no controller) */
  double ada_kimg;        /* 500 */
  int ada_interval;       /* 4 */
  gf_sg2_noise noise;     /* synthesis noise in training: RANDOM */
} gf_sg2_gan_hp;

/* The official defaults around a preset's recipe (lr, r1_gamma, ema,
 * style mixing, pl weight; the recipe's floats taken at their shortest
 * decimal, as the official Python floats), ADA on with target 0.6. */
gf_sg2_gan_hp gf_sg2_gan_hp_default(const gf_sg2_recipe *r);

struct gf_sg2_gan;
struct gf_sg2_step_in;
/* A regularization phase (Greg or Dreg) for one round: it writes
 * (accum GF_OVERWRITE, the first round) or adds the gradients of its net's
 * regularizer (times gain, the phase's interval, over the round's mean) and
 * updates what it tracks (pl_mean). Rows sample0 .. sample0 + n - 1 of the
 * step's batch. The step then runs the Adam step. */
typedef gf_status (*gf_sg2_reg_fn)(struct gf_sg2_gan *gan, gf_ctx *ctx,
                                   const struct gf_sg2_step_in *in,
                                   int64_t sample0, int64_t n, float gain,
                                   gf_accum accum, gf_err *err);
/* The default hooks, the official loss's regularization phases:
 * gf_sg2_greg_pl: the path length penalty (gf_sg2_g_pl) on the first
 *   n / pl_batch_shrink rows of the round: their own latents, labels,
 *   mixing and noise (phase Greg's draws; with g_reg_interval 0, 'Gboth',
 *   Gmain's latents and labels, as the official code), pl_noise =
 *   randn / sqrt(R R) (GF_RNG_SG2_PL_NOISE, or the draws'), weight
 *   pl_weight, decay pl_decay, scale gain; gan->pl_mean becomes the
 *   updated running mean (every round, as the official). At several
 *   ranks its round 0 first runs each of the rank's rounds to its mean
 *   length only and gathers them, so each round starts from the running
 *   mean one rank would have reached there.
 * gf_sg2_dreg_r1: R1 (gf_sg2_d_r1) of D on the round's reals through the
 *   augmentation (pass GF_SG2_PASS_DREG_REAL; with d_reg_interval 0,
 *   'Dboth', Dmain's real pass, whose forward and draws the official code
 *   shares), scale r1_gamma / 2 gain, the gradient wrt the reals before
 *   the augmentation. Its real logits' signs go to the controller (not
 *   in 'Dboth': Dmain counted them). */
gf_status gf_sg2_greg_pl(struct gf_sg2_gan *gan, gf_ctx *ctx,
                         const struct gf_sg2_step_in *in, int64_t sample0,
                         int64_t n, float gain, gf_accum accum, gf_err *err);
gf_status gf_sg2_dreg_r1(struct gf_sg2_gan *gan, gf_ctx *ctx,
                         const struct gf_sg2_step_in *in, int64_t sample0,
                         int64_t n, float gain, gf_accum accum, gf_err *err);
/* Hooks that refuse the phase (GF_EUNSUPPORTED): for a caller that wants
 * a regularizer off whatever its weight. */
gf_status gf_sg2_greg_unsupported(struct gf_sg2_gan *gan, gf_ctx *ctx,
                                  const struct gf_sg2_step_in *in,
                                  int64_t sample0, int64_t n, float gain,
                                  gf_accum accum, gf_err *err);
gf_status gf_sg2_dreg_unsupported(struct gf_sg2_gan *gan, gf_ctx *ctx,
                                  const struct gf_sg2_step_in *in,
                                  int64_t sample0, int64_t n, float gain,
                                  gf_accum accum, gf_err *err);

/* Draws given instead of Philox's (tests against the official code). Any
 * NULL pointer is drawn as above. Host arrays over the WHOLE batch. */
typedef struct gf_sg2_draws {
  const float *z[4];   /* per phase: [batch, z_dim] */
  const float *z2[4];  /* per phase: [batch, z_dim] the mixing latents */
  int cutoff[4];       /* per phase: > 0 given (num_ws: no mixing) */
  const float *ada[4]; /* per GF_SG2_PASS_*: [batch, GF_ADA_NPARAMS] */
  const float *pl_noise; /* [batch, C, R, R] by global sample (the rows
                            path length uses: the first of each round),
                            already divided by sqrt(R R) */
} gf_sg2_draws;

/* One step's data. */
typedef struct gf_sg2_step_in {
  const gf_tensor *real;   /* [batch, C, R, R] in [-1, 1], any device */
  const gf_tensor *real_c; /* [batch, c_dim] or NULL when c_dim 0 */
  const gf_tensor *gen_c[4]; /* per phase [batch, c_dim] (the official
                                draws them from the data set's labels);
                                NULL when c_dim 0; Gmain's and Dmain's are
                                required when c_dim > 0 (GF_EINVAL) */
  const gf_sg2_draws *draws; /* NULL: every draw from Philox */
} gf_sg2_step_in;

/* What a step reports (means over the batch, as the official stats). */
typedef struct gf_sg2_step_out {
  double loss_g;        /* 'Loss/G/loss' */
  double loss_d;        /* 'Loss/D/loss': fake + real */
  double scores_fake;   /* Dmain's fake logits */
  double scores_real;
  double real_sign_sum; /* this step's sum of sign(D(real)) over */
  int64_t real_sign_count; /*  real_sign_count logits (the controller's) */
  double ada_p;         /* 'ada/p' after the step */
  double ada_rt;        /* 'ada/rt' (NaN before the first adjustment) */
  bool ran_greg, ran_dreg;
  double pl_penalty;    /* 'Loss/pl_penalty' (mean of the rounds' means;
                           0 when Greg did not run) */
  double r1_penalty;    /* 'Loss/r1_penalty' (likewise) */
  double pl_mean;       /* the running mean after the step */
} gf_sg2_step_out;

struct gf_comm;

/* Data parallelism (gf_sg2_gan_distribute). */
typedef struct gf_sg2_gan_dist {
  struct gf_comm *comm; /* borrowed; NULL: one rank */
  bool exact;           /* the rounds' gradients added as a binary tree and
                           the ranks' with the comm's "tree" all-reduce:
                           the same bits at any power-of-two world size for
                           the same global rounds (CPU backend) */
  int64_t sample_base;  /* this rank's first sample of the global batch */
} gf_sg2_gan_dist;

typedef struct gf_sg2_gan {
  gf_sg2_config cfg;
  gf_sg2_gan_hp hp;
  gf_sg2_gan_dist dist; /* one rank after init */
  int world;            /* the comm's ranks (1 without one) */
  int batch;            /* images per step on this rank */
  int max_batch;        /* per round (micro-batch); batch a multiple */
  gf_sg2_net g, d, g_ema; /* G and D built for training; G_ema not */
  gf_ada ada;
  gf_ada_ctl ctl;
  float pl_mean;        /* the path-length regularizer's state */
  int64_t step;         /* steps done (the official batch_idx) */
  int64_t cur_nimg;     /* images seen (the official cur_nimg) */
  int64_t adam_step_g, adam_step_d; /* Adam updates done per net */
  gf_sg2_reg_fn greg, dreg; /* hooks; gf_sg2_greg_pl, gf_sg2_dreg_r1 at
                               init */
  void *reg_user;       /* for the hooks; borrowed */
  double sign_sum;      /* this step's sum of sign(D(real)) and how many */
  int64_t sign_count;   /*   logits it holds: a Dreg hook adds its reals'
                           (the official 'Loss/signs/real' collector) */
  struct gf_sg2_gan_scratch *s; /* owned: device and host scratch */
} gf_sg2_gan;

/* Builds G, D (training) and G_ema on ctx for steps of `batch` images cut
 * into rounds of max_batch (batch % max_batch == 0), initialised from
 * seed (gf_sg2_init_params; G_ema = G). Memory: gan (the caller's) owns
 * its nets and scratch; release with gf_sg2_gan_free, also after a
 * failure. ctx must outlive gan. */
gf_status gf_sg2_gan_init(gf_sg2_gan *gan, gf_ctx *ctx,
                          const gf_sg2_config *cfg, const gf_sg2_gan_hp *hp,
                          int batch, int max_batch, uint64_t init_seed,
                          gf_err *err);
void gf_sg2_gan_free(gf_sg2_gan *gan);

/* Copies G's params and buffers into G_ema (after loading G's weights). */
gf_status gf_sg2_gan_sync_ema(gf_sg2_gan *gan, gf_ctx *ctx, gf_err *err);

/* One training iteration (gan->step is its index, then incremented).
 * seed keys every draw. out may be NULL. Rounds (batch / max_batch) add
 * their means' gradients, as the official rounds do. A failure part-way
 * leaves the state part-updated: reload a checkpoint. */
gf_status gf_sg2_gan_step(gf_sg2_gan *gan, gf_ctx *ctx,
                          const gf_sg2_step_in *in, uint64_t seed,
                          gf_sg2_step_out *out, gf_err *err);

/* ---- several ranks (sg2_dist.c) ---------------------------------------
 * Every rank holds the same gan and steps on its slice of the global batch
 * (batch images per rank, world batch in all). The draws stay keyed by
 * the global sample (dist.sample_base + the row), so a sample gets the
 * same latents, noise and augmentation at any world size. Per phase, each
 * net's gradient is the sum over every rank's rounds of the round's mean
 * gradient (the official single-GPU rounds' sum; the official multi-GPU
 * DDP averages over GPUs instead, a factor Adam nearly cancels), summed
 * by an all-reduce before Adam. The step's reports, the ADA signs, w_avg's
 * updates (logged per round, gathered and applied in the order one rank
 * would apply them) and the path-length mean (a first pass computes
 * every round's mean length, so each rank's round starts from the running
 * mean that round has on one rank) are the whole batch's, the same on
 * every rank; EMA, image counter and ADA use the global batch.
 * With exact, a world of 1, 2 or 4 ranks cutting the same global rounds
 * gives the same bits (tests/trainer/test_train_sg2.sh).
 * Not supported at several ranks: a g_reg_interval of 0 ('Gboth', its
 * path length runs inside Gmain's rounds). The comm must take the nets'
 * arenas: host memory for mpi and tcp (the CPU backend), device memory
 * for nccl. d NULL: back to one rank. */
gf_status gf_sg2_gan_distribute(gf_sg2_gan *gan, gf_ctx *ctx,
                                const gf_sg2_gan_dist *d, gf_err *err);
/* Rank 0's whole state (the nets' arenas, Adam moments, counters,
 * pl_mean, the ADA controller) to every rank: after rank 0 alone loaded a
 * checkpoint. */
gf_status gf_sg2_gan_broadcast(gf_sg2_gan *gan, struct gf_comm *comm,
                               gf_err *err);
/* SHA-256 (hex) of the training state gf_sg2_gan_save would write, for the
 * ranks' divergence check. */
gf_status gf_sg2_gan_digest(const gf_sg2_gan *gan, char *hex65,
                            gf_err *err);

/* The Adam settings of a net's optimizer (the lazy correction applied). */
gf_adam_params gf_sg2_gan_adam(const gf_sg2_gan_hp *hp, gf_sg2_role role);

/* ---- the training state (sg2_gan_state.c) ------------------------------
 * Named tensors: "G.<name>", "D.<name>", "G_ema.<name>" (params and
 * buffers, official names), "G.adam_m.<name>", "G.adam_v.<name>",
 * "D.adam_m.<name>", "D.adam_v.<name>" (trainable tensors), and the
 * scalars "state.pl_mean" (F32), "state.ada_p" (F32), "state.ada_rt",
 * "state.ada_sign_sum" (F64), "state.ada_sign_count", "state.step",
 * "state.cur_nimg", "state.adam_step_g", "state.adam_step_d" (I64).
 * Metadata "ganflow.sg2_train" = "1". */
#define GF_SG2_STATE_FORMAT_KEY "ganflow.sg2_train"

/* Writes the state to path atomically (gf_st_write_file). */
gf_status gf_sg2_gan_save(const gf_sg2_gan *gan, const char *path,
                          gf_err *err);
/* The same with n_extra more metadata entries (borrowed for the call; the
 * keys must differ from GF_SG2_STATE_FORMAT_KEY): a trainer's checkpoint
 * metadata (gf/ckpt_meta.h). */
gf_status gf_sg2_gan_save_meta(const gf_sg2_gan *gan, const char *path,
                               const gf_st_kv *extra, size_t n_extra,
                               gf_err *err);
/* Reads a state written by gf_sg2_gan_save into a gan built with the same
 * config (every tensor must be there with its shape and nothing else:
 * GF_EFORMAT naming the first that is not; the counters >= 0, p >= 0).
 * Everything is checked before anything of gan changes, so a refused file
 * leaves gan as it was (a device copy failing part-way excepted). */
gf_status gf_sg2_gan_load(gf_sg2_gan *gan, const char *path, gf_err *err);
/* The same from len bytes at buf (borrowed for the call); flags as
 * gf_st_parse's (gf_sg2_gan_load passes GF_ST_VERIFY_SHA256). */
gf_status gf_sg2_gan_load_buffer(gf_sg2_gan *gan, const void *buf, size_t len,
                                 unsigned flags, gf_err *err);

#endif
