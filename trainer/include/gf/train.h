/* train.h - ganflow-train (DESIGN §2, §4.1-§4.8): its flattened
 * configuration and command line, the MLflow glue (run creation and resume,
 * exactly-once metrics, artifact uploads, model registration) and the
 * training loop that composes data, the GAN step, checkpoints, SWD and the
 * resource monitor.
 *
 * Source files:
 *   train_config.c    gf_train_config: the table of its flags (gf/flags.h)
 *                     and from it the defaults, argv parsing, --help, the
 *                     MLflow params and the recipe; the rules between flags
 *   train_config_cost.c the price flags resolved (--price-file)
 *   train_cost.c      the run's energy and cost, summed over ranks and
 *                     restarts (gf/cost.h, gf/energy.h)
 *   train_tracking.c  gf_tracker: the MLflow side of one training process
 *   train_upload.c    gf_uploader: artifact uploads on a background thread
 *   train_loop.c      gf_train_run: the whole run, start to exit status,
 *                     over train_setup.c and train_outputs.c (the private
 *                     train_state.h) and train_dist.c (the ranks)
 *   train_auto.c      --auto: threads, bucket size and all-reduce
 *                     algorithm timed on a scratch model before step 1, the
 *                     choice kept in <checkpoint-dir>/auto for resumes
 *
 * Nothing here prints: what a run reports as it goes (progress, resumes,
 * warnings, the reason it failed) goes to a gf_log sink the executable owns
 * (gf/log.h; ganflow_train_main.c writes it to stderr), and gf_train_usage
 * writes to the stream it is given. Nothing exits (ganflow_train_main.c
 * does). No global state: the stop flag that
 * main()'s signal thread sets is owned by main() and passed in by pointer. */
#ifndef GF_TRAIN_H
#define GF_TRAIN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "gf/fs.h"
#include "gf/log.h"
#include "gf/model_config.h"
#include "gf/status.h"

#define GF_TRAIN_PATH_MAX GF_PATH_MAX
/* Room --checkpoint-dir must leave in a path of GF_PATH_MAX bytes for the
 * names ganflow-train makes under it, '/' included; the configuration
 * refuses a longer directory, so every join under it fits. The longest
 * today are "/.model-tmp/code/ganflow_pyfunc.py.tmp.XXXXXX" (45 bytes: the
 * model directory's temporary files) and
 * "/.upload-samples-<step>.webp.tmp.XXXXXX" (43 with --steps below 2^32);
 * "/ckpt-<step>.safetensors.tmp.XXXXXX", "/mlflow.outbox" and
 * "/monitor_step.tmp.XXXXXX" are shorter. The rest is margin. */
#define GF_TRAIN_CKPT_DIR_ROOM 64
#define GF_TRAIN_NAME_MAX 256
#define GF_TRAIN_VERSION "0.1.0"
#define GF_TRAIN_DEFAULT_EXPERIMENT "ganflow"
#define GF_TRAIN_EVAL_IMAGES 2000 /* SWD: generated vs real images */
#define GF_TRAIN_GRID_SIDE 8      /* sample grid: 8 x 8 images */
#define GF_TRAIN_AUTO_MAX 1024    /* --auto's measured alternatives, NUL
                                     included (a param value) */

typedef enum gf_resume_mode {
  GF_RESUME_AUTO = 0,  /* newest good checkpoint of the dir, else run_id file */
  GF_RESUME_NEVER = 1, /* a new run; the checkpoint dir must hold none */
  GF_RESUME_PATH = 2,  /* that checkpoint file */
} gf_resume_mode;

/* The whole configuration of one ganflow-train invocation. Plain values
 * and fixed buffers: copyable, nothing to free. Sizes that depend on the
 * model (z_dim, image size) are resolved by gf_train_config_finish. */
/* The metrics of an evaluation (--eval-metrics). */
enum {
  GF_EVAL_SWD = 1u << 0, /* sliced Wasserstein distance, swd/<level> */
  GF_EVAL_FID = 1u << 1, /* fid: Inception-v3 pool3 features */
  GF_EVAL_KID = 1u << 2, /* kid, kid_std: the same features */
};

typedef struct gf_train_config {
  char data[GF_TRAIN_PATH_MAX];       /* --data SPEC ([FORMAT:]PATH); required */
  gf_arch model;                      /* --model (dcgan) */
  int image_size;                     /* --image-size, pixels (28) */
  int channels;                       /* --channels, 1 or 3 (1) */
  int width;                          /* --width: dcgan's and resnet's base
                                         width, ngf = ndf (64) */
  int z_dim;                          /* --z-dim; 0 = model default (mlp 50,
                                         dcgan 100) until _finish */
  int64_t steps;                      /* --steps, optimizer steps (5000) */
  int batch;                          /* --batch, the GLOBAL batch: all
                                         ranks together (64) */
  double lr_g, lr_d;                  /* --lr-g, --lr-d (2e-4) */
  uint64_t seed;                      /* --seed (1) */
  char device[32];                    /* --device as given ("cpu") */
  int threads;                        /* --threads; 0 = every online core */
  char checkpoint_dir[GF_TRAIN_PATH_MAX]; /* --checkpoint-dir; "" = default
                                         ./checkpoints/<experiment>/<run-name
                                         or default> (set by _finish) */
  int64_t checkpoint_every;           /* --checkpoint-every (500); 0 = end only */
  int keep;                           /* --keep (3) */
  gf_resume_mode resume;              /* --resume (auto) */
  char resume_path[GF_TRAIN_PATH_MAX]; /* --resume PATH */
  int64_t sample_every;               /* --sample-every (500); 0 = never */
  int64_t eval_every;                 /* --eval-every (1000); 0 = never */
  int64_t log_every;                  /* --log-every (10), >= 1 */
  char experiment[GF_TRAIN_NAME_MAX]; /* --experiment, else
                                         MLFLOW_EXPERIMENT_NAME, else "ganflow" */
  char run_name[GF_TRAIN_NAME_MAX];   /* --run-name ("" = server's choice) */
  char register_model[GF_TRAIN_NAME_MAX]; /* --register-model; default
                                         "ganflow-<model>"; "" skips */
  bool register_set;                  /* --register-model was given */
  char alias[GF_TRAIN_NAME_MAX];      /* --alias ("" = none) */
  char promote_alias[GF_TRAIN_NAME_MAX]; /* --promote-if-better ALIAS[:METRIC
                                         [:min|max]]: the alias moved to the
                                         new version only when METRIC beats
                                         the holder's ("" = no gate) */
  char promote_metric[256];           /* its METRIC (swd/avg), a valid key */
  bool promote_max;                   /* its goal: true = higher is better
                                         (default false: lower) */
  bool deterministic;                 /* --deterministic */
  int eval_images;                    /* SWD set size (2000; fewer when the
                                         dataset is smaller) */
  unsigned eval_metrics;              /* --eval-metrics: GF_EVAL_* bits
                                         (GF_EVAL_SWD) */
  int fid_images;                     /* --fid-images: FID/KID set size
                                         (0: --eval-images) */
  /* The GAN recipe. */
  int loss;                           /* --loss: a gf_gan_loss (bce) */
  int d_steps;                        /* --d-steps K: D updates per G update,
                                         each on its own batch (1) */
  bool spectral_norm;                 /* --sn: spectrally normalized D
                                         without batch norm (SNGAN) */
  double ema_decay;                   /* --ema-decay D: an EMA generator
                                         (0 = none) */
  double ema_rampup;                  /* --ema-rampup R (0.05) */
  bool export_raw;                    /* --export-generator raw: samples,
                                         evaluations and the model use G, not
                                         its EMA (ema when there is one) */
  bool export_set;                    /* --export-generator was given */
  bool mirror;                        /* --mirror: x-flipped copies of every
                                         image double the dataset */
  double r1_gamma;                    /* --r1 GAMMA: the R1 penalty (0;
                                         stylegan2: the preset's) */
  int r1_every;                       /* --r1-every N: lazy R1 (16) */
  bool width_set;                     /* --width was given */
  bool cond;                          /* --cond: class-conditional G and D,
                                         on the data's labels */
  unsigned diffaug;                   /* --diffaug LIST: GF_AUG_* bits of
                                         DiffAugment's policies (0: none) */
  /* --model stylegan2 (StyleGAN2-ADA, gf/sg2_gan.h). The preset's recipe
   * fills what was not given (gf_train_config_finish), so the fields hold
   * the run's values. */
  int sg2_cfg;                        /* --cfg: a gf_sg2_preset (auto) */
  int map_layers;                     /* --map-layers (the preset's) */
  int cbase, cmax;                    /* --cbase, --cmax: channel_base,
                                         channel_max (the preset's) */
  int aug;                            /* --aug: a gf_train_aug (ada) */
  double aug_p;                       /* --aug-p: ADA's p at the start (0) */
  double ada_target;                  /* --ada-target (0.6) */
  double ada_kimg;                    /* --ada-kimg (500) */
  double pl_weight;                   /* --pl-weight (the preset's) */
  double style_mixing;                /* --style-mixing (the preset's) */
  double ema_kimg;                    /* --ema-kimg (the preset's) */
  bool image_size_set, batch_set, lr_g_set, lr_d_set, map_layers_set,
      cbase_set, cmax_set, style_mixing_set, ema_kimg_set, ema_rampup_set,
      z_dim_set, r1_set, pl_weight_set; /* those flags were given */
  /* Data parallelism (DESIGN §4.6). */
  int allreduce;                      /* --allreduce: a gf_allreduce_algo
                                         (ring) */
  bool sync_bn;                       /* --sync-bn */
  int grad_accum;                     /* --grad-accum K: micro-batches per
                                         rank and step (1) */
  bool exact_reduce;                  /* --exact-reduce */
  int exact_shards;                   /* --exact-shards S: the global batch's
                                         fixed micro-batches in exact mode (8) */
  int bucket_kb;                      /* --bucket-kb: gradient all-reduce
                                         bucket (1024) */
  bool compress_bf16;                 /* --compress bf16: gradient buckets
                                         travel as bf16 (none: f32) */
  double comm_timeout;                /* --comm-timeout SECONDS (300) */
  int64_t check_every;                /* --check-every N: steps between
                                         parameter digest checks across
                                         ranks; 0 = never (100) */
  int world_size;                     /* ranks of the job: set by main from
                                         the launch (1), not a flag */
  double sys_metrics_interval_s;      /* MLFLOW_SYSTEM_METRICS_SAMPLING_
                                         INTERVAL, seconds between system-
                                         metric samples (0: the monitor's
                                         default); not a flag, no param */
  /* What the run costs (gf/cost.h, gf/energy.h; train_config_cost.c). */
  double price_per_hour;              /* USD per slot-hour: --price-per-hour,
                                         or the --price-file entry of
                                         --instance-kind and --market; < 0:
                                         no price, no cost metrics (-1) */
  int price_unit;                     /* --price-unit node|gpu: a
                                         gf_price_unit (gf/energy.h), the
                                         price per machine or per rank's
                                         slot (GF_PRICE_PER_NODE) */
  bool price_unit_set;                /* --price-unit was given */
  char price_file[GF_TRAIN_PATH_MAX]; /* --price-file FILE ("" none) */
  char instance_kind[64];             /* --instance-kind KIND, else
                                         GANFLOW_INSTANCE_KIND ("") */
  int market;                         /* --market on-demand|spot: a
                                         gf_price_market (on-demand) */
  double cpu_watts_per_core;          /* --cpu-watts-per-core W: the CPU
                                         energy estimate where RAPL cannot
                                         be read (10) */
  /* Tuned at start (--auto; train_auto.c). */
  bool autotune;                      /* --auto: measure the first steps and
                                         choose threads, bucket_kb and
                                         allreduce (those not given) */
  bool threads_set;                   /* --threads was given */
  bool bucket_set;                    /* --bucket-kb was given */
  bool allreduce_set;                 /* --allreduce was given */
  char auto_measured[GF_TRAIN_AUTO_MAX]; /* set by gf_train_run, not a
                                         flag: "" = nothing chosen, else
                                         threads, bucket_kb and allreduce
                                         hold the run's choice and this
                                         the alternatives' ms per step
                                         ("threads=1:12.3,..."; "-" when
                                         nothing was left to measure) */
} gf_train_config;

/* --aug of a stylegan2 run. */
typedef enum gf_train_aug {
  GF_TRAIN_AUG_ADA = 0,   /* ADA: p moved towards --ada-target */
  GF_TRAIN_AUG_FIXED = 1, /* p fixed at --aug-p */
  GF_TRAIN_AUG_NONE = 2,  /* "noaug": no augmentation */
} gf_train_aug;

/* The price flags as a whole (called by gf_train_config_finish, with
 * GANFLOW_INSTANCE_KIND as env_kind): --instance-kind defaults to env_kind
 * (NULL or "": none); with --price-file, the file's entry for the kind and
 * --market sets price_per_hour and the unit (a --price-unit that disagrees
 * is refused); --price-per-hour with --price-file, --price-file without a
 * kind, a kind or market the file lacks: GF_EINVAL, the reason naming the
 * file's line or its kinds. Reads the file; changes nothing else
 * (train_config_cost.c). */
gf_status gf_train_price_resolve(gf_train_config *cfg, const char *env_kind,
                                 gf_err *err);

/* The defaults above (experiment from MLFLOW_EXPERIMENT_NAME when set). */
void gf_train_config_default(gf_train_config *cfg);

/* The flag table of ganflow-train (gf/flags.h rows over gf_train_config),
 * which `ganflow launch` and the tests walk too; static. */
struct gf_flag_table;
const struct gf_flag_table *gf_train_flags(void);
/* The environment variables ganflow-train reads as numbers into the config
 * (MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL); static. */
const struct gf_flag_table *gf_train_env(void);

/* The training recipe of cfg in words, "loss=hinge,d_steps=2,ema_decay=
 * 0.999,ema_rampup=0.05,mirror=true": what a resumed run must repeat to
 * continue bit for bit (checkpoints record it; the model config and the
 * seed are checked apart). Into out[cap]; GF_EINVAL when it does not fit
 * (cap >= 128 always holds it). */
gf_status gf_train_recipe(const gf_train_config *cfg, char *out, size_t cap,
                          gf_err *err);

/* What gf_train_parse_args found. */
typedef enum gf_parse_result {
  GF_PARSE_OK = 0,    /* train with cfg */
  GF_PARSE_HELP = 1,  /* --help: print gf_train_usage, exit 0 */
  GF_PARSE_USAGE = 2, /* bad command line: err names the flag; exit 2 */
} gf_parse_result;

/* Parses argv through the flag table into cfg, which it first fills with
 * gf_train_config_default, then reads the numbers of the environment
 * (gf_train_env, and the MLflow client's: gf/mlflow_env.h) and runs
 * gf_train_config_finish. argv is not changed. On GF_PARSE_USAGE err->msg
 * names the flag or variable and what is wrong ("--batch: 'x' is not an
 * integer"). */
gf_parse_result gf_train_parse_args(gf_train_config *cfg, int argc,
                                    char **argv, gf_err *err);

/* Resolves defaults that depend on other fields (z_dim, register-model,
 * checkpoint dir) and checks cross-field rules (--device cuda is refused
 * with a clear message in this build). GF_EINVAL naming the flag. */
gf_status gf_train_config_finish(gf_train_config *cfg, gf_err *err);

/* The StyleGAN2 config of a finished stylegan2 cfg (the --cfg preset at
 * --image-size and --channels with --z-dim, --map-layers, --cbase and
 * --cmax) for c_dim classes; GF_EINVAL naming the flags otherwise. */
struct gf_sg2_config;
gf_status gf_train_sg2_config(const gf_train_config *cfg, int c_dim,
                              struct gf_sg2_config *out, gf_err *err);

/* The --help text, every flag with its default. */
void gf_train_usage(FILE *out, const char *prog);

/* The model config of cfg (architecture, z, image size, channels). */
gf_status gf_train_model_config(const gf_train_config *cfg,
                                gf_model_config *out, gf_err *err);

/* The config flattened to MLflow params. Keys are static strings; values
 * are written into the caller's storage `vals` (n_max rows of
 * GF_TRAIN_PARAM_VAL_MAX bytes). Only what defines the training result and
 * its cadence: data, model, image_size, channels, z_dim, steps, batch,
 * lr_g, lr_d, seed, device, threads, checkpoint_every, keep, sample_every,
 * eval_every, log_every, deterministic, world_size, eval_images,
 * local_batch, allreduce, sync_bn, grad_accum, exact_reduce; with --auto,
 * auto, and once the run has chosen (auto_measured), auto_threads,
 * auto_bucket_kb, auto_allreduce and auto_measured. Returns
 * the number of params (<= n_max). */
#define GF_TRAIN_PARAM_VAL_MAX GF_TRAIN_PATH_MAX
#define GF_TRAIN_MAX_PARAMS 96
typedef struct gf_train_param {
  const char *key;
  char value[GF_TRAIN_PARAM_VAL_MAX];
} gf_train_param;
size_t gf_train_config_params(const gf_train_config *cfg,
                              gf_train_param *out, size_t n_max);

/* ---- the run -------------------------------------------------------- */

/* Exit statuses of ganflow-train (main returns them). */
typedef enum gf_train_exit {
  GF_TRAIN_EXIT_OK = 0,     /* finished, or stopped by SIGTERM/SIGINT with
                               a checkpoint written (run KILLED) */
  GF_TRAIN_EXIT_FAIL = 1,   /* an error; the run is FAILED where it exists */
  GF_TRAIN_EXIT_USAGE = 2,  /* a configuration the run refuses */
} gf_train_exit;

/* Runs the whole training of cfg (finished config): resume, MLflow,
 * loop, checkpoints, model registration. launch (borrowed; NULL: one
 * process) says how the job was started; comm (borrowed; NULL for one
 * rank) holds the job's CPU ranks (MPI); GPU ranks get an NCCL
 * communicator made here from launch. Every rank calls gf_train_run with
 * the same cfg (cfg->world_size its world); rank 0 tracks and
 * checkpoints.
 * *stop (owned by the caller; set from another thread, e.g. the one that
 * receives SIGTERM/SIGINT) is read at every step boundary: nonzero on any
 * rank stops every rank after the same step, with a checkpoint and status
 * KILLED. hb (borrowed; NULL: none) receives a beat at every step and
 * change of phase (gf/heartbeat.h), for a supervisor. log (borrowed; the
 * executable's sink, shared by the run's threads; NULL drops everything)
 * receives progress (GF_LOG_PROGRESS: short and often when log->live, a
 * full line every --log-every steps otherwise), notes about resuming,
 * warnings, and the error that ends the run. Never exits. */
struct gf_comm;
struct gf_launch_info;
struct gf_heartbeat;
gf_train_exit gf_train_run(const gf_train_config *cfg,
                           const struct gf_launch_info *launch,
                           struct gf_comm *comm, const atomic_int *stop,
                           struct gf_heartbeat *hb, const gf_log *log);

/* ---- MLflow glue (train_tracking.c) --------------------------------- */

typedef struct gf_tracker gf_tracker; /* opaque */

/* What gf_tracker_start needs; strings borrowed during the call. */
typedef struct gf_tracker_start_info {
  const gf_train_config *cfg;
  const char *run_id;        /* the run to resume (checkpoint or run_id
                                file), or NULL: MLFLOW_RUN_ID, else a new
                                run */
  const char *device_desc;   /* "cpu (2 threads)" */
  const char *hosts;         /* every rank's host, "a,b" (tag
                                ganflow.hosts); NULL: this host */
} gf_tracker_start_info;

/* Connects (mlflow_config_from_env), then either resumes run_id (replays
 * the previous process's outbox synchronously, sets the run RUNNING,
 * reads the latest step of every metric so that no (key, step) at or
 * below it is logged again, re-logs params that are missing) or creates
 * the experiment/run with tags and params and writes
 * <checkpoint-dir>/run_id. Then opens the metric logger with its outbox at
 * <checkpoint-dir>/mlflow.outbox and the artifact uploader. The server
 * must answer here (with the client's retries); afterwards an outage only
 * delays metrics (outbox) and uploads. *out owned by the caller:
 * gf_tracker_finish. Messages about skipped/changed params go to log. */
gf_status gf_tracker_start(gf_tracker **out, const gf_tracker_start_info *si,
                           const gf_log *log, gf_err *err);

/* The run id (32 hex digits); valid until gf_tracker_finish. */
const char *gf_tracker_run_id(const gf_tracker *t);

/* The step the resource monitor's first sample should carry: 0 for a new
 * run; on resume the first step no earlier process of the run can have
 * sent (one past the newest monitor step the server holds, or past the
 * steps reserved in <checkpoint-dir>/monitor_step, whichever is later;
 * train_tracking.c). gf_tracker_metric drops a monitor figure below it. */
int64_t gf_tracker_monitor_first_step(const gf_tracker *t);

/* Queues one metric point unless the server already holds (key, step) or
 * a later step of key (exactly-once across resumes). Never blocks longer
 * than the logger's max_block_ms. Thread-safe (the monitor's sampler calls
 * it). A failure is counted, not returned. */
void gf_tracker_metric(gf_tracker *t, const char *key, double value,
                       int64_t timestamp_ms, int64_t step);

/* Waits until every point queued so far is on the server or in the outbox. */
gf_status gf_tracker_flush(gf_tracker *t, double timeout_s, gf_err *err);

/* Queues the upload of local_path as artifact dest (relative path). With
 * take_ownership the file is deleted after the upload (or when it cannot
 * be queued). Failures are reported to the log, never fatal. */
void gf_tracker_upload(gf_tracker *t, const char *local_path,
                       const char *dest, bool take_ownership);

/* Waits for every queued upload to end (successfully or not). */
void gf_tracker_uploads_wait(gf_tracker *t);

/* The end of a successful run: writes the MLflow model directory of
 * generator tensors (gf_mlmodel_write into a temp dir under the checkpoint
 * dir), uploads it under model/, registers a new version of
 * cfg->register_model (unless ""), waits for READY, sets cfg->alias.
 * Skipped when the run already carries the tag ganflow.model_version (a
 * finished run started again). */
struct gf_gan;
gf_status gf_tracker_log_model(gf_tracker *t, const struct gf_gan *gan,
                               const gf_log *log, gf_err *err);

/* A generator as gf_tracker_log_model_tensors writes it: its config, its
 * tensors (host F32, names as generator.safetensors holds them), the G
 * updates it has had, and "raw" or "ema" (metadata ganflow.generator);
 * all borrowed for the call. */
struct gf_st_tensor_desc;
typedef struct gf_tracker_model {
  const gf_model_config *cfg;
  const struct gf_st_tensor_desc *tensors;
  size_t n_tensors;
  int64_t adam_step_g;
  const char *generator;
} gf_tracker_model;
/* gf_tracker_log_model for any generator (a stylegan2 G_ema's official
 * names: gf/sg2_net.h). */
gf_status gf_tracker_log_model_tensors(gf_tracker *t,
                                       const gf_tracker_model *gm,
                                       const gf_log *log, gf_err *err);

/* The class names gf_tracker_log_model writes into a conditional model's
 * directory (config.json and the MLmodel flavor config "class_names"),
 * label k's at [k]: borrowed (the dataset's), they must stay valid until
 * gf_tracker_log_model returns. Used only when n equals the GAN's
 * num_classes; NULL, 0 (the default) writes none. */
void gf_tracker_set_class_names(gf_tracker *t, const char *const *names, int n);

/* Ends the run with status (mlflow_run_status; 0 leaves it as it is),
 * closes the logger (reporting batches left in the outbox and naming
 * `ganflow sync`), stops the uploader and frees t. NULL is fine. Returns
 * nonzero when the run status could not be set. */
int gf_tracker_finish(gf_tracker *t, int run_status, const gf_log *log);

/* The version gf_tracker_log_model registered in this process ("" when
 * none); valid until gf_tracker_finish. */
const char *gf_tracker_model_version(const gf_tracker *t);
/* The run's client (borrowed; the training thread's connection, for
 * synchronous calls from that thread); valid until gf_tracker_finish. */
struct mlflow_client *gf_tracker_client(gf_tracker *t);
/* Sets a run tag through the logger (queued, sent in order with the
 * metrics; a refusal counts as dropped). */
void gf_tracker_set_tag(gf_tracker *t, const char *key, const char *value);

/* ---- artifact uploader (train_upload.c) ------------------------------ */

typedef struct gf_uploader gf_uploader; /* opaque */
struct mlflow_config;

/* Starts a thread with its own client (a copy of cfg with at most 2
 * retries, so an outage costs an upload, not the run) that uploads queued
 * files to artifact_uri (copied) in order. Reports go to log (borrowed:
 * it must outlive the uploader; NULL drops them).
 * *out owned by the caller: gf_uploader_free. */
gf_status gf_uploader_start(gf_uploader **out, const struct mlflow_config *cfg,
                            const char *artifact_uri, const gf_log *log,
                            gf_err *err);
/* Queues one upload (see gf_tracker_upload). Returns false when the queue
 * (16 files) is full; the file is then deleted if owned. */
bool gf_uploader_push(gf_uploader *u, const char *local_path, const char *dest,
                      bool take_ownership);
/* Waits until the queue is empty and no upload runs. */
void gf_uploader_wait(gf_uploader *u);
/* Uploads and failures so far. */
void gf_uploader_counts(gf_uploader *u, int *ok, int *failed);
/* Finishes queued uploads, stops the thread, frees. NULL is fine. */
void gf_uploader_free(gf_uploader *u);

#endif
