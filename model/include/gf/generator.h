/* generator.h - one loaded version of a registered generator: the verified
 * MLflow model directory (DESIGN §4.3) turned into G networks ready for
 * inference, reference-counted so that a hot swap in ganflow-serve (§4.5)
 * frees it after the last request that uses it. Used by ganflow-serve and
 * by `ganflow generate`, so both give the same bytes for a version and seed.
 *
 * A generator holds one copy of the version's weights (G's parameters and
 * BN statistics, `weights`) and of their laid-out forms (the oneDNN
 * layouts of frozen inference, `frozen`), both read-only once loaded, and
 * n_exec executors: a worker's per-thread state, only what a forward
 * writes (its ctx with its stream, primitive cache and scratch; its G's
 * activations; its latent and label buffers), each guarded by its own
 * mutex. Executor k is meant for worker k, so workers never wait on one
 * another; any thread may use any executor. Latents are a pure function of
 * the seed (Philox stream (seed, GF_RNG_SAMPLE, step 0, rank 0), image k
 * being sample k): the same (version, seed, n) gives the same pixels.
 * Weights, latents and images enter and leave through gf_tensor_copy, so an
 * executor's ctx may be CPU or CUDA (where the build has that backend);
 * callers always pass host memory. A class-conditional model (config
 * num_classes > 0) needs a class per row (gf_generator_run_labeled); its
 * rows depend on (latent, class) alone where batch_invariant is set.
 * A stylegan2 model (config architecture "stylegan2": an imported
 * StyleGAN2-ADA G_ema, generator.safetensors holding its official
 * state_dict names unprefixed, as the other nets' files hold theirs
 * without "g.") runs gf/sg2_net.h's mapping and synthesis in fp32 and
 * takes per-request style options (gf_gen_style: truncation, noise, style
 * mixing); each of its executors holds its own copy of the weights (the
 * sg2 net has no shared form), it runs in fp32 only, and each row is a
 * forward of its own (the kernels round differently at other batch
 * sizes; so a row's bytes never depend on its batch).
 * Not here: the registry, HTTP, slots (serve/). */
#ifndef GF_GENERATOR_H
#define GF_GENERATOR_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "gf/kernels.h"
#include "gf/model_config.h"
#include "gf/net.h"
#include "gf/sg2_net.h"
#include "gf/status.h"

/* The batch whose kernels every pass runs (gf_ctx.frozen_batch): a lone
 * image's. A constant, not an option, so that a seed's bytes depend on
 * nothing a server or command is started with. */
#define GF_GENERATOR_REF_BATCH 1
/* Seed of the latents the load-time invariance probe runs. */
#define GF_GENERATOR_PROBE_SEED 0x5eedULL

/* Arithmetic of the generator's convolutions (gf_ctx.frozen_bf16). */
typedef enum gf_gen_precision {
  GF_GEN_FP32 = 0,
  GF_GEN_BF16 = 1, /* bf16 inputs and weights, f32 sums (CPU with
                      AVX512_BF16 or AMX; refused elsewhere) */
  GF_GEN_INT8 = 2, /* int8 inputs (scales calibrated at load on
                      GF_GENERATOR_CALIB_N latents of
                      GF_GENERATOR_CALIB_SEED) and weights (a scale per
                      output channel), int32 sums (CPU with AVX512_VNNI or
                      AMX; refused elsewhere) */
} gf_gen_precision;

/* The int8 calibration set: samples 0..N-1 of this seed, run in f32 at
 * load (the same set for every version, so a version's int8 bytes depend
 * on nothing else; once, on executor 0: the ranges are the version's,
 * shared by every executor through `frozen`). */
#define GF_GENERATOR_CALIB_SEED 0xca1bULL
#define GF_GENERATOR_CALIB_N 256

typedef struct gf_generator_opts {
  gf_backend backend;  /* GF_BACKEND_CPU; CUDA when the build has it */
  int device_index;    /* CUDA ordinal */
  int n_exec;          /* executors, >= 1 */
  int threads;         /* op threads per executor, >= 1; 0: every online
                          core (gf_ctx_config's nthreads) */
  int max_batch;       /* most images in one forward pass, >= 1 (a
                          gf_generator_run of more rows makes several) */
  atomic_long *resident; /* counts loaded versions not yet freed (+1 on
                            load, -1 on free); may be NULL */
  gf_gen_precision precision;
} gf_generator_opts;

typedef struct gf_generator_exec {
  pthread_mutex_t lock; /* guards ctx, g, z and labels */
  gf_ctx ctx;           /* the executor's own (frozen_store: the
                           version's `frozen`) */
  gf_net g;             /* activations for max_batch samples, inference
                           only, over the version's `weights`
                           (gf_net_init_shared: views, not copies) */
  gf_tensor z;          /* [max_batch, z_dim] latent buffer */
  gf_tensor labels;     /* [max_batch] GF_I32 class labels on the ctx's
                           device (conditional models; else unset) */
  int ready;            /* ctx, g, z initialised (for the free path) */
  gf_sg2_net sg;        /* stylegan2: G (mapping + synthesis) for
                           max_batch rows, its own weights */
  gf_tensor c;          /* stylegan2, conditional: [max_batch, c_dim]
                           one-hot classes on the ctx's device */
  gf_tensor ws_mix;     /* stylegan2: [max_batch, num_ws, w_dim], the
                           mixing latents' ws */
} gf_generator_exec;

typedef struct gf_generator {
  atomic_int refs;        /* owners: the slot + each request using it */
  char *name;             /* registered model name (malloc'd) */
  char *version;          /* registry version ("3"), malloc'd */
  char *dir;              /* the verified model directory, malloc'd */
  char *run_id;           /* from MLmodel, malloc'd, may be NULL */
  gf_model_config cfg;
  int num_classes;        /* cfg.num_classes: 0 = unconditional, else K:
                             every row needs a class in [0, K) */
  char **class_names;     /* the model directory's class names (label k's
                             at [k]; n_class_names malloc'd strings), or
                             NULL when it has none (indices only) */
  int n_class_names;      /* 0, or num_classes */
  int max_batch;
  gf_gen_precision precision;
  size_t image_numel;     /* C * H * W floats per image */
  int batch_invariant;    /* 1: the load-time probe found every row's
                             bytes the same alone, at every pass size and
                             on every executor, so rows of different
                             requests may share a pass; 0: they may not
                             (invariance_note says what differed) */
  char invariance_note[160];
  int is_sg2;             /* cfg.architecture == GF_ARCH_STYLEGAN2: the
                             executors' sg nets run, weights and frozen
                             are unused */
  gf_net weights;         /* G's parameters and BN statistics, one copy
                             (a net of weights alone: max_batch 0) on the
                             executors' device; read-only once loaded */
  gf_frozen_store *frozen; /* their laid-out forms, made on the first
                             forward that needs each and shared by every
                             executor's ctx; owned */
  gf_generator_exec *exec; /* n_exec entries, owned */
  int n_exec;
  atomic_long *resident;  /* gf_generator_opts.resident (borrowed), or NULL */
} gf_generator;

/* Name of a precision ("fp32", "bf16", "int8"). */
const char *gf_gen_precision_name(gf_gen_precision p);

/* Reads dir with gf_mlmodel_read (every digest verified), loads
 * generator.safetensors (digest checked on the loaded bytes) into one copy
 * of G's weights (every tensor present with the right shape, nothing
 * extra) that n_exec executors' G networks share, and
 * probes batch invariance: max_batch fixed latents run alone and then as
 * passes of 1, 2, 4, ... max_batch rows on every executor (which also
 * builds every pass size's kernels), setting batch_invariant; a
 * conditional model's probe gives row i class i % num_classes, and the
 * int8 calibration set sample k class k % num_classes. name and version
 * are copied.
 * Memory: *out is malloc'd with refs = 1; release with gf_generator_unref.
 * On failure *out is NULL and nothing is left allocated. */
gf_status gf_generator_load(const char *dir, const char *name,
                            const char *version, const gf_generator_opts *o,
                            gf_generator **out, gf_err *err);

void gf_generator_ref(gf_generator *m);
/* Drops one reference; the last one frees everything. Accepts NULL. */
void gf_generator_unref(gf_generator *m);

/* Fills z [n, z_dim] (n >= 1; n * z_dim floats, caller's memory): image k from
 * seeds[k] (stream (seeds[k], SAMPLE, 0, 0), sample 0) when per_image,
 * else image k is sample k of seeds[0]. */
gf_status gf_generator_latents(const gf_generator *m, const uint64_t *seeds,
                               int n, int per_image, float *z, gf_err *err);

/* The class a text names for m (gf_mlmodel_class_index): one of its class
 * names exactly, else a canonical decimal index in [0, num_classes) ("3",
 * not "03" or "+3"). An error naming the valid range (and the names) for
 * anything else (GF_ENOTFOUND, or GF_EINVAL for an empty text), and
 * GF_EINVAL for any class on an unconditional model. */
gf_status gf_generator_class_index(const gf_generator *m, const char *text,
                                   int *k, gf_err *err);

/* labels [n] (caller's memory) from a class spec: one class (as
 * gf_generator_class_index) for every image, or a comma-separated list of
 * c classes, c dividing n, image k taking item k / (n / c) ("0,1" for 4
 * images: 0, 0, 1, 1; class names never hold a comma). An error naming
 * the problem otherwise (and on an unconditional model). ganflow-serve's class= and `ganflow generate
 * --class`. */
gf_status gf_generator_class_labels(const gf_generator *m, const char *spec,
                                    int n, int32_t *labels, gf_err *err);

/* gf_generator_run with the class of each row: labels [n] (host memory,
 * caller's) in [0, num_classes) for a conditional model, which needs them;
 * NULL for an unconditional one, which refuses them (GF_EINVAL). Rows of
 * one call may mix classes; where batch_invariant is set, row k's bytes
 * depend on its latent and its label alone. */
gf_status gf_generator_run_labeled(gf_generator *m, int exec_idx,
                                   const float *z, const int32_t *labels,
                                   int n, float *out, gf_err *err);

/* Runs G on n >= 1 latents (n * z_dim floats) on executor exec_idx %
 * n_exec, in passes of max_batch rows and then of decreasing powers of two
 * (9 rows of max_batch 16: 8 + 1), so a call only ever runs pass sizes the
 * load probed, and copies the images (float NCHW in [-1, 1]) to out
 * (n * image_numel floats, caller's memory). Where batch_invariant is set,
 * row k's bytes depend on its latent alone. gf_generator_run_labeled with
 * no labels: a conditional model answers GF_EINVAL. */
gf_status gf_generator_run(gf_generator *m, int exec_idx, const float *z,
                           int n, float *out, gf_err *err);

/* Per-request options of a stylegan2 model (gf_generator_run_styled). */
typedef struct gf_gen_style {
  float psi;          /* truncation: w = lerp(w_avg, w, psi); 1 = none */
  int trunc_cutoff;   /* only ws 0..cutoff-1 truncated; 0 = every w */
  gf_sg2_noise noise; /* const (each layer's noise_const; the default),
                         random, none */
  uint64_t noise_seed; /* random: row k of the call draws the noise of
                          sample noise_sample0 + k of this seed
                          (gf_sg2_synthesis_fwd), so the same request
                          gives the same bytes however it is cut */
  int64_t noise_sample0;
  const float *mix_z; /* NULL, or [n, z_dim]: row k's ws from mix_from on
                         are those of mix_z row k (same class, same
                         truncation): style mixing */
  int mix_from;       /* 1..num_ws-1 when mix_z is set */
} gf_gen_style;

/* psi 1, cutoff 0, noise const, no mixing: what gf_generator_run uses. */
void gf_gen_style_default(gf_gen_style *s);
/* 1 when s is the default (what every model honours). */
int gf_gen_style_is_default(const gf_gen_style *s);
/* Checks s against m: GF_EINVAL naming the option ("psi", "trunc_cutoff",
 * "noise", "mix_from") when m cannot honour it (any non-default option on
 * a model that is not stylegan2: "psi: model 'x' (dcgan) has no
 * truncation") or it is out of range (psi finite in [-8, 8], cutoff 0..
 * num_ws, mix_from 1..num_ws-1). */
gf_status gf_generator_style_check(const gf_generator *m,
                                   const gf_gen_style *s, gf_err *err);
/* gf_generator_run_labeled with style s (NULL: the default), checked by
 * gf_generator_style_check first. Row k's bytes depend on its latent, its
 * class, its mix latent and its noise sample alone where batch_invariant
 * is set. */
gf_status gf_generator_run_styled(gf_generator *m, int exec_idx,
                                  const float *z, const int32_t *labels,
                                  const gf_gen_style *s, int n, float *out,
                                  gf_err *err);

/* How many passes gf_generator_run makes for n rows. */
int gf_generator_passes(const gf_generator *m, int n);

/* Encodes n images of m's shape as one PNG (a grid with a 2-pixel border
 * when n > 1, the bare image when n == 1). *png is malloc'd (caller frees). */
gf_status gf_generator_png(const gf_generator *m, const float *images,
                           int n, uint8_t **png, size_t *png_len,
                           gf_err *err);

#endif
