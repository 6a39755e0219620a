/* train_state.h - one ganflow-train run's state, private to gf_trainer and
 * shared by its three files:
 *   train_setup.c    where the run starts (checkpoint or new run), the
 *                    data, the execution context and the GAN, the ranks'
 *                    slices and state, the resource monitor
 *   train_outputs.c  what rank 0 writes: sample grids, SWD evaluations,
 *                    checkpoints (after a barrier of all ranks)
 *   train_loop.c     the step loop and gf_train_run, start to exit status
 * Every function returns a gf_status and fills err; what a run reports as
 * it goes (resuming, skipped checkpoints, progress, warnings) goes to the
 * log sink the executable passed to gf_train_run, never to stderr. */
#ifndef GF_TRAIN_STATE_H
#define GF_TRAIN_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include "gf/checkpoint.h"
#include "gf/cost.h"
#include "gf/ctx.h"
#include "gf/data.h"
#include "gf/energy.h"
#include "gf/gan.h"
#include "gf/heartbeat.h"
#include "gf/log.h"
#include "gf/monitor.h"
#include "gf/quality.h"
#include "gf/train.h"
#include "train_dist.h"

#define LOADER_DEPTH 4
#define GRID_N (GF_TRAIN_GRID_SIDE * GF_TRAIN_GRID_SIDE)
/* A class-conditional run's grid: one row per class (at most this many),
 * GF_TRAIN_GRID_SIDE columns, each column one latent. */
#define GRID_COND_ROWS 16
#define GRID_MAX (GRID_COND_ROWS * GF_TRAIN_GRID_SIDE)

/* The run's energy and cost as this process counts them (train_cost.c). */
typedef struct train_cost {
  gf_energy_meter *meter;       /* owned; this process's joules */
  double t0;                    /* gf_mono_s() when this process began */
  int slots;                    /* priced slots it pays for: 0 or 1 */
  bool gpu_metered;             /* rank 0: some rank meters a GPU */
  bool ledger_ok;               /* rank 0: base read, run_id set */
  gf_cost_totals base;          /* rank 0: the run's earlier processes */
  double others[4];             /* rank 0: the other ranks' shares at the
                                   last exchange: CPU J, GPU J, USD, slot
                                   seconds */
  bool closing;                 /* rank 0: the final exchange is done;
                                   train_cost_close logs at close_step */
  int64_t close_step;
  bool close_log;               /* close logs the metrics at close_step */
  double run_usd;               /* rank 0: the run's cost/usd at the last
                                   exchange */
  double last_write;            /* rank 0: gf_mono_s() of the last ledger
                                   write; 0 none */
  char run_id[GF_CKPT_RUN_ID_MAX + 1];  /* rank 0: the ledger's run */
  char ledger_path[GF_TRAIN_PATH_MAX];  /* rank 0 */
} train_cost;

/* Everything one run holds; owned by gf_train_run's frame. */
typedef struct train_state {
  const gf_train_config *cfg;   /* borrowed */
  gf_model_config mcfg;
  gf_dataset ds;                /* owned */
  gf_ctx ctx;                   /* owned */
  bool ctx_ok;
  gf_gan gan;                   /* owned; on ctx's device */
  bool on_dev;                  /* ctx is a CUDA ctx: the members below */
  gf_ctx hctx;                  /* owned; CPU ctx of the host twin */
  bool hctx_ok;
  gf_gan host;                  /* owned; host twin of gan (checkpoints,
                                   model directory) */
  gf_tensor dreal;              /* owned; device [batch, C, H, W] batch */
  gf_tensor dz;                 /* owned; device [batch, z_dim] latents */
  struct gf_sg2_gan *sg2;       /* owned; --model stylegan2 (train_sg2.c):
                                   then gan, host, dreal, dz are unused */
  float *sg2_c;                 /* owned; a conditional stylegan2 step's
                                   one-hot real_c and 4 phases' gen_c */
  const int32_t *sg2_labels;    /* borrowed; the loader's labels of the
                                   current batch (conditional stylegan2) */
  gf_data_loader *loader;       /* owned */
  gf_tracker *tracker;          /* owned */
  gf_monitor *monitor;          /* owned */
  int64_t start_step;           /* steps completed when this process began */
  int64_t ckpt_step;            /* step of the newest checkpoint on disk; -1 */
  char run_id[GF_CKPT_RUN_ID_MAX + 1]; /* from the checkpoint or run_id file */
  char ckpt_path[GF_TRAIN_PATH_MAX];
  int n_eval;                   /* SWD set size; 0 = no SWD */
  int n_fid;                    /* FID/KID set size; 0 = neither */
  float *grid_z;                /* owned; [grid_n, z_dim] */
  int grid_n;                   /* images of a sample grid: GRID_N, or a
                                   conditional run's classes (<=
                                   GRID_COND_ROWS) x GF_TRAIN_GRID_SIDE */
  int32_t *gen_labels;          /* owned; [batch] classes of a conditional
                                   run's generated chunk (host) */
  gf_tensor dlab;               /* owned; device [batch] the same (CUDA) */
  float *eval_z;                /* owned; [max(n_eval, n_fid), z_dim] */
  float *gen;                   /* owned; [max(n_eval, n_fid, grid_n), C, H,
                                   W] */
  gf_ctx qctx;                  /* owned; the FID network's context */
  bool qctx_ok;
  gf_inception *inception;      /* owned; NULL without FID/KID */
  gf_quality_ref qref;          /* owned; the real set's statistics */
  bool qref_ok;
  float *qfeats;                /* owned; [n_fid, GF_INCEPTION_DIM] */
  const gf_log *log;            /* borrowed; the executable's sink */
  double last_draw;             /* monotonic seconds of the last progress
                                   line sent to a live sink */
  gf_dist dist;                 /* the ranks (world 1 without a comm) */
  int rank, world;
  int local_batch;              /* this rank's slice of --batch */
  int64_t sample0;              /* its first global sample of a step */
  gf_data_order order;          /* the run's data order (seed, --batch,
                                   ranks, mirror); set by train_plan_slices,
                                   read by the loader, checkpoints, resume */
  gf_relay relay;               /* every rank's system metrics (world > 1) */
  bool relay_ok;
  gf_gan_sync_stats sync_prev;  /* seams' totals at the last log point */
  gf_heartbeat *hb;             /* borrowed; NULL: no supervisor */
  int dir_lock;                 /* owned; rank 0's lock on the checkpoint
                                   directory (train_lock_dir), -1 none */
  train_cost cost;              /* energy meter (owned) and cost sums */
} train_state;

/* ---- train_setup.c ---------------------------------------------------- */

/* Takes an exclusive lock (flock) on <dir>/.lock, holding this process's
 * pid, so that two trainers never write one checkpoint directory; the
 * kernel drops it when the process ends, kill -9 included. *fd receives the
 * lock's descriptor, owned by the caller (closing it releases the lock).
 * GF_EINVAL when another process holds it (the message names its pid),
 * GF_EIO when the file cannot be opened. */
gf_status train_lock_dir(const char *dir, int *fd, gf_err *err);
/* Decides where to start (rank 0): fills ckpt_path (or "") and run_id (or
 * ""). GF_EINVAL for a refusal the user must resolve (exit 2). */
gf_status train_choose_start(train_state *st, gf_err *err);
/* Decodes --data into st->ds. */
gf_status train_load_data(train_state *st, gf_err *err);
/* The execution context of --device ("cuda" alone: LOCAL_RANK's GPU). */
gf_status train_make_ctx(train_state *st, const gf_launch_info *launch,
                         gf_err *err);
/* Builds the GAN (not stylegan2's: train_sg2_build); loads the checkpoint
 * or initialises from the seed.
 * *usage tells a refusal (exit 2) from a failure. */
gf_status train_build_model(train_state *st, bool *usage, gf_err *err);
/* Checks --batch, --grad-accum and --exact-shards against the world size;
 * sets this rank's slice and st->order (where --mirror goes). */
gf_status train_plan_slices(train_state *st, gf_err *err);
/* Rank 0's start (steps, run id) and GAN state to every rank. */
gf_status train_share_start(train_state *st, gf_err *err);
/* Spreads the GAN step over the ranks (gf_gan_distribute). */
gf_status train_distribute(train_state *st, gf_comm *comm, gf_err *err);
/* Every rank's host name, "a,b" without repeats, into out[cap]. */
gf_status train_gather_hosts(train_state *st, char *out, size_t cap,
                             gf_err *err);
/* Starts the monitor: world 1 into the tracker, else into the relay. */
gf_status train_start_monitors(train_state *st, gf_err *err);

/* After a checkpoint of the run's model was loaded: its seed, step,
 * recipe and data position against cfg's (GF_EINVAL naming what differs,
 * *usage then true); sets start_step and ckpt_step. */
gf_status train_resume_check(train_state *st, const gf_ckpt_meta *meta,
                             bool *usage, gf_err *err);

/* ---- train_sg2.c (--model stylegan2) ---------------------------------- */

struct gf_sg2_step_out;
/* Builds st->sg2 (the --cfg preset's recipe with the flags over it) on
 * st->ctx; loads the checkpoint (gf_checkpoint_load_sg2) or initialises
 * from the seed. */
gf_status train_sg2_build(train_state *st, bool *usage, gf_err *err);
/* Step k on real (this rank's batch, in [-1, 1]; labels: its classes when
 * conditional, else NULL). */
gf_status train_sg2_step(train_state *st, const gf_tensor *real,
                         const int32_t *labels, int64_t k,
                         struct gf_sg2_step_out *out, gf_err *err);
/* G_ema (noise const, psi 1) on n latents zs into st->gen; conditional:
 * image i of class (i / cols) % classes. */
gf_status train_sg2_generate(train_state *st, const float *zs, int n,
                             int cols, gf_err *err);
/* G_ema as a stylegan2 model directory, logged and registered
 * (gf_tracker_log_model_tensors). */
gf_status train_sg2_log_model(train_state *st, gf_err *err);
/* --check-every at several ranks: every rank's state digest against rank
 * 0's (GF_EINTEGRITY when they diverged). */
gf_status train_sg2_check(train_state *st, int64_t k, gf_err *err);
void train_sg2_free(train_state *st);

/* The GAN's hyperparameters of cfg (Adam, loss, EMA, R1, DiffAugment). */
void train_gan_hparams(const gf_train_config *cfg, gf_gan_hparams *hp);

/* ---- train_auto.c ----------------------------------------------------- */

/* The run's --auto choice, as <checkpoint-dir>/auto keeps it. */
typedef struct train_auto_choice {
  int threads;                       /* 1..4096 */
  int bucket_kb;                     /* 4..2^20 */
  int allreduce;                     /* a gf_allreduce_algo */
  char measured[GF_TRAIN_AUTO_MAX];  /* the alternatives' ms per step,
                                        "threads=1:12.3,bucket_kb=256:9.1",
                                        printable ASCII without spaces; "-"
                                        when nothing was measured */
} train_auto_choice;

/* Reads the file's text[0..len) (not NUL-terminated; any bytes):
 *   ganflow-auto 1
 *   threads N
 *   bucket_kb N
 *   allreduce ring|reduce-bcast|hierarchical|tree
 *   measured WORD
 * the four keys once each in any order, '\n' after each line (the last
 * one's optional), nothing else. GF_EFORMAT naming the line otherwise;
 * *out is then zeroed. Allocates nothing. */
gf_status train_auto_parse(const char *text, size_t len,
                           train_auto_choice *out, gf_err *err);
/* The file's text of c into out[cap] (GF_EINVAL when it does not fit). */
gf_status train_auto_format(const train_auto_choice *c, char *out, size_t cap,
                            gf_err *err);
/* Every rank, after the data is loaded and before the GAN is built: the
 * run's threads, bucket size and all-reduce algorithm into *tuned (the
 * run's config, st->cfg), from <checkpoint-dir>/auto when the run is
 * being continued (--auto given or not; a flag given now wins, with a
 * warning), else with --auto measured on scratch models (train_auto.c)
 * and written there by rank 0. The ctx is rebuilt for another thread
 * count; an algorithm other than *comm's gets a new MPI communicator,
 * *owned (the caller frees it, before *comm's original), which replaces
 * *comm and st->dist's. The same status on every rank. */
gf_status train_auto_setup(train_state *st, gf_train_config *tuned,
                           const gf_launch_info *launch, gf_comm **comm,
                           gf_comm **owned, gf_err *err);

/* ---- train_outputs.c -------------------------------------------------- */

/* Fixed latents of the sample grid and SWD, and the image buffer (rank 0). */
gf_status train_alloc_eval(train_state *st, gf_err *err);
/* The 8x8 grid of step k: PNG in the checkpoint dir, uploaded. */
gf_status train_write_samples(train_state *st, int64_t k, gf_err *err);
/* G (or its EMA, as --export-generator says) in inference mode on n
 * latents zs into st->gen; a conditional run's image i is of class
 * (i / cols) % classes (a grid's rows, or cols 1: an evaluation's classes
 * in turn). */
gf_status train_generate(train_state *st, const float *zs, int n, int cols,
                         gf_err *err);
/* SWD of step k, logged; *avg its mean over levels. */
gf_status train_evaluate(train_state *st, int64_t k, double *avg,
                         gf_err *err);
/* Barrier, then rank 0 writes and uploads ckpt-k. */
gf_status train_checkpoint(train_state *st, int64_t k, gf_err *err);

/* ---- train_quality.c -------------------------------------------------- */

/* Rank 0, before the run starts: the FID network and the reference
 * statistics of --eval-metrics fid/kid (nothing when n_fid is 0). */
gf_status train_quality_init(train_state *st, gf_err *err);
/* Once the tracker runs: the reference's tag and artifact. */
void train_quality_announce(train_state *st);
/* FID/KID of step k (none at step 0), logged. */
gf_status train_quality_eval(train_state *st, int64_t k, gf_err *err);
void train_quality_free(train_state *st);

/* ---- train_cost.c ----------------------------------------------------- */

/* Every rank, first thing once the ctx exists: opens this process's energy
 * meter (RAPL on the node's local rank 0 — GANFLOW_POWERCAP_ROOT overrides
 * /sys/class/powercap —, else the CPU-time estimate; the GPU's NVML
 * counter when training on one) and the priced slots it pays for. */
gf_status train_cost_start(train_state *st, const gf_launch_info *launch,
                           gf_err *err);
/* Every rank, once the MLflow run is known: the energy sources as run tags,
 * and (rank 0) the earlier processes' totals from the ledger of this run. */
gf_status train_cost_begin_run(train_state *st, gf_err *err);
/* Every rank at the same points (logging steps, and once after the last
 * step): adds the ranks' shares; rank 0 writes the ledger (at most once a
 * second) and, with log_metrics, logs energy/ and cost/ at step k, images
 * being the run's images so far (cost/usd_per_1k_images). */
gf_status train_cost_exchange(train_state *st, int64_t k, double images,
                              bool log_metrics, gf_err *err);
/* Rank 0 at its very end (after the final uploads and the model): the
 * other ranks' shares of the last exchange plus its own up to now, into
 * the ledger and (log_metrics) MLflow at step k; a line to the log. What
 * the other ranks spent after the last exchange is not counted. */
void train_cost_close(train_state *st, int64_t k, double images,
                      bool log_metrics);
/* Rank 0 after an evaluation: cost/<key>_x_usd = value x the run's cost at
 * the last exchange ('/' in key becomes '_'), a score for "quality per
 * cost" where lower is better on both counts. Nothing without a price. */
void train_cost_quality(train_state *st, const char *key, double value,
                        int64_t k);
void train_cost_free(train_state *st);

#endif
