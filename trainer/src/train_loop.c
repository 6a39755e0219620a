/* train_loop.c - one ganflow-train run from a finished configuration to
 * its exit status: resume decision, data, networks, MLflow (through
 * train_tracking.c), the step loop with its metrics, sample grids, SWD
 * evaluations and checkpoints, the progress display, and the end (model
 * registration, final run status).
 *
 * Determinism (DESIGN §4.1): step k (0-based) draws its latents and
 * dropout masks from (seed, k) inside gf_gan_step and its data from
 * gf_data_position_of_step(k); a checkpoint taken after k steps holds
 * meta.step = k and every arena byte, so a run resumed from it repeats the
 * uninterrupted run's steps k, k+1, ... bit for bit (same --threads; on
 * --device cuda with --deterministic, on the same GPU model).
 * Sample grids and SWD use G in inference mode (BN running statistics,
 * nothing updated) with fixed latents from (seed, GF_RNG_SAMPLE), so they
 * never perturb training and are comparable over a run.
 *
 * --device cuda[:N]: the GAN's arenas live on the GPU; each batch is copied
 * there, and a host twin of the GAN (same config, CPU memory) is what
 * checkpoints are written from and loaded into (gf_gan_copy_state), and
 * what the model directory is written from; sample grids and SWD images
 * are read back from the GPU.
 *
 * Step numbering in MLflow: a metric logged "at step k" describes the
 * state after k completed optimizer steps (k = 1..steps); checkpoint
 * ckpt-k holds that state.
 *
 * Several ranks (DESIGN §4.6, a gf_comm from main): every rank trains on
 * its slice of the global batch (gf_data_rank_slice) and the GAN step
 * all-reduces the gradients (gf/gan.h). Rank 0 alone decides where to
 * start, reads the checkpoint and sends the state to the others, talks to
 * MLflow, writes sample grids, SWD and checkpoints (after a barrier); the
 * others relay their system metrics to it. After every step the ranks sum
 * a few numbers: the stop flag (so that all stop at the same step), an
 * error flag, and the losses (logged as the means over ranks). Every
 * --check-every steps they compare digests of their parameters. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gf/checkpoint.h"
#include "gf/ctx.h"
#include "gf/data.h"
#include "gf/gan.h"
#include "gf/image_grid.h"
#include "gf/monitor.h"
#include "gf/rng.h"
#include "gf/swd.h"
#include "gf/train.h"
#include "mlflow/mlflow.h"
#include "train_dist.h"

#define LOADER_DEPTH 4
#define GRID_N (GF_TRAIN_GRID_SIDE * GF_TRAIN_GRID_SIDE)

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
  gf_data_loader *loader;       /* owned */
  gf_tracker *tracker;          /* owned */
  gf_monitor *monitor;          /* owned */
  int64_t start_step;           /* steps completed when this process began */
  int64_t ckpt_step;            /* step of the newest checkpoint on disk; -1 */
  char run_id[GF_CKPT_RUN_ID_MAX + 1]; /* from the checkpoint or run_id file */
  char ckpt_path[GF_TRAIN_PATH_MAX + 64];
  int n_eval;                   /* SWD set size; 0 = no SWD */
  float *grid_z;                /* owned; [GRID_N, z_dim] */
  float *eval_z;                /* owned; [n_eval, z_dim] */
  float *gen;                   /* owned; [max(n_eval, GRID_N), C, H, W] */
  bool tty;                     /* stderr is a terminal */
  double last_draw;             /* monotonic seconds of the last \r line */
  gf_dist dist;                 /* the ranks (world 1 without a comm) */
  int rank, world;
  int local_batch;              /* this rank's slice of --batch */
  int64_t sample0;              /* its first global sample of a step */
  gf_relay relay;               /* every rank's system metrics (world > 1) */
  bool relay_ok;
  gf_gan_sync_stats sync_prev;  /* seams' totals at the last log point */
} train_state;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* mkdir -p. */
static gf_status make_dirs(const char *path, gf_err *err) {
  char buf[GF_TRAIN_PATH_MAX];
  snprintf(buf, sizeof buf, "%s", path);
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(buf, 0755) != 0 && errno != EEXIST)
      return gf_fail(err, GF_EIO, "%s: cannot create: %s", buf,
                     strerror(errno));
    *p = '/';
  }
  if (mkdir(buf, 0755) != 0 && errno != EEXIST)
    return gf_fail(err, GF_EIO, "%s: cannot create: %s", buf, strerror(errno));
  return GF_OK;
}

/* <checkpoint-dir>/run_id into st->run_id; false when absent or empty. */
static bool read_run_id_file(train_state *st) {
  char path[GF_TRAIN_PATH_MAX + 16];
  snprintf(path, sizeof path, "%s/run_id", st->cfg->checkpoint_dir);
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[128] = "";
  bool ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  line[strcspn(line, "\r\n")] = '\0';
  size_t n = strlen(line);
  if (!ok || n == 0 || n > GF_CKPT_RUN_ID_MAX) return false;
  memcpy(st->run_id, line, n + 1); /* fits: run_id holds MAX + 1 bytes */
  return true;
}

/* Decides where to start: fills ckpt_path (or "") and run_id (or "").
 * Returns GF_EINVAL for a refusal the user must resolve (exit 2). */
static gf_status choose_start(train_state *st, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  st->ckpt_path[0] = '\0';
  st->run_id[0] = '\0';
  if (cfg->resume == GF_RESUME_PATH) {
    snprintf(st->ckpt_path, sizeof st->ckpt_path, "%s", cfg->resume_path);
    return GF_OK;
  }
  gf_ckpt_meta meta;
  int skipped = 0;
  char skip_msg[512] = "";
  gf_status s = gf_checkpoint_find_latest(cfg->checkpoint_dir, st->ckpt_path,
                                          sizeof st->ckpt_path, &meta,
                                          &skipped, skip_msg, sizeof skip_msg,
                                          err);
  if (s != GF_OK && s != GF_ENOTFOUND) return s;
  if (skipped)
    fprintf(stderr, "ganflow-train: skipped %d damaged checkpoint(s) in %s "
            "(last: %s)\n", skipped, cfg->checkpoint_dir, skip_msg);
  bool have_ckpt = s == GF_OK;
  if (!have_ckpt) st->ckpt_path[0] = '\0';
  bool have_id = have_ckpt ? false : read_run_id_file(st);
  if (cfg->resume == GF_RESUME_NEVER) {
    if (have_ckpt || have_id)
      return gf_fail(err, GF_EINVAL,
                     "--resume never: %s already holds %s of run %s; use "
                     "--resume auto to continue it, or another (or an "
                     "emptied) --checkpoint-dir for a new run",
                     cfg->checkpoint_dir,
                     have_ckpt ? "checkpoints" : "the run_id",
                     have_ckpt ? meta.run_id : st->run_id);
    st->ckpt_path[0] = '\0';
    return GF_OK;
  }
  if (have_ckpt) {
    if (!gf_model_config_equal(&meta.config, &st->mcfg))
      return gf_fail(err, GF_EINVAL,
                     "%s was written for another model (--model, "
                     "--image-size, --channels or --z-dim differ); use the "
                     "same flags or another --checkpoint-dir",
                     st->ckpt_path);
    snprintf(st->run_id, sizeof st->run_id, "%s", meta.run_id);
  }
  return GF_OK;
}

static gf_status load_data(train_state *st, gf_err *err) {
  gf_data_options opt;
  memset(&opt, 0, sizeof opt);
  gf_status s = gf_data_spec_parse(st->cfg->data, &opt, err);
  if (s != GF_OK) return s;
  opt.fit = GF_DATA_FIT_RESIZE;
  opt.channels = st->mcfg.image_channels;
  opt.height = st->mcfg.image_height;
  opt.width = st->mcfg.image_width;
  return gf_dataset_load(&st->ds, &opt, err);
}

/* The host twin of a device GAN and the device batch / latent buffers
 * (--device cuda). */
static gf_status build_device_side(train_state *st, const gf_gan_hparams *hp,
                                   gf_err *err) {
  const gf_model_config *m = &st->mcfg;
  gf_ctx_config hc = {GF_BACKEND_CPU, 1, 0};
  gf_status s = gf_ctx_init(&st->hctx, &hc, err);
  if (s != GF_OK) return s;
  st->hctx_ok = true;
  s = gf_gan_init(&st->host, &st->hctx, m, hp, 2, err);
  if (s != GF_OK) return s;
  int64_t rs[4] = {st->local_batch, m->image_channels, m->image_height,
                   m->image_width};
  int64_t zs[2] = {st->local_batch, m->z_dim};
  s = gf_tensor_init_on(&st->dreal, GF_F32, GF_DEV_CUDA,
                        st->ctx.device_index, 4, rs, err);
  if (s == GF_OK)
    s = gf_tensor_init_on(&st->dz, GF_F32, GF_DEV_CUDA, st->ctx.device_index,
                          2, zs, err);
  return s;
}

/* Builds ctx and gan; loads the checkpoint or initialises from the seed. */
/* The execution context: the CPU, or the GPU of --device ("cuda" alone:
 * the GPU of this rank's place on its host, LOCAL_RANK). */
static gf_status make_ctx(train_state *st, const gf_launch_info *launch,
                          gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  gf_ctx_config cc = {GF_BACKEND_CPU, cfg->threads, 0};
  if (strncmp(cfg->device, "cuda", 4) == 0) { /* syntax checked by config */
    cc.backend = GF_BACKEND_CUDA;
    cc.device_index = cfg->device[4] == ':' ? atoi(cfg->device + 5)
                      : launch ? launch->local_rank : 0;
  }
  gf_status s = gf_ctx_init(&st->ctx, &cc, err);
  if (s != GF_OK) return s;
  st->ctx_ok = true;
  st->ctx.deterministic = cfg->deterministic;
  st->on_dev = st->ctx.device != GF_DEV_CPU;
  return GF_OK;
}

/* Builds the GAN on ctx; loads the checkpoint or initialises from the
 * seed. */
static gf_status build_model(train_state *st, bool *usage, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  gf_status s;
  gf_gan_hparams hp;
  gf_gan_hparams_default(&hp);
  hp.adam_g.lr = cfg->lr_g;
  hp.adam_d.lr = cfg->lr_d;
  s = gf_gan_init(&st->gan, &st->ctx, &st->mcfg, &hp, st->local_batch, err);
  if (s != GF_OK) return s;
  if (st->on_dev && (s = build_device_side(st, &hp, err)) != GF_OK) return s;
  st->start_step = 0;
  st->ckpt_step = -1;
  if (!st->ckpt_path[0]) return gf_gan_init_params(&st->gan, cfg->seed, err);

  gf_ckpt_meta meta;
  s = gf_checkpoint_load(st->ckpt_path, st->on_dev ? &st->host : &st->gan,
                         &meta, err);
  if (s == GF_OK && st->on_dev) s = gf_gan_copy_state(&st->gan, &st->host, err);
  if (s != GF_OK) {
    *usage = cfg->resume == GF_RESUME_PATH && s == GF_EINVAL;
    return s;
  }
  *usage = true;
  if (meta.seed != cfg->seed)
    return gf_fail(err, GF_EINVAL, "%s was written with --seed %" PRIu64
                   ", not %" PRIu64 ": pass the same seed to continue the run",
                   st->ckpt_path, meta.seed, cfg->seed);
  if (meta.world_size != st->world)
    fprintf(stderr, "ganflow-train: %s was written by %d rank(s); resuming "
            "on %d with the same global batch (--batch %d): %s\n",
            st->ckpt_path, meta.world_size, st->world, cfg->batch,
            cfg->exact_reduce ? "--exact-reduce keeps every bit"
                              : "the numbers follow the run within float "
                                "rounding, not bit for bit");
  if (meta.step > cfg->steps)
    return gf_fail(err, GF_EINVAL, "%s is at step %lld, past --steps %lld",
                   st->ckpt_path, (long long)meta.step, (long long)cfg->steps);
  uint64_t ep, off;
  s = gf_data_position_of_step((uint64_t)meta.step, (uint64_t)cfg->batch,
                               (uint64_t)st->ds.n, &ep, &off, err);
  if (s != GF_OK) return s;
  if (ep != (uint64_t)meta.epoch || off != (uint64_t)meta.epoch_offset)
    return gf_fail(err, GF_EINVAL, "%s: its data position (epoch %lld, "
                   "offset %lld) is not where step %lld of --batch %d over %lld "
                   "images starts: --batch or --data differ from the run's",
                   st->ckpt_path, (long long)meta.epoch,
                   (long long)meta.epoch_offset, (long long)meta.step,
                   cfg->batch, (long long)st->ds.n);
  if (cfg->resume == GF_RESUME_PATH)
    snprintf(st->run_id, sizeof st->run_id, "%s", meta.run_id);
  *usage = false;
  st->start_step = meta.step;
  st->ckpt_step = meta.step;
  fprintf(stderr, "ganflow-train: resuming from %s (step %lld of %lld)\n",
          st->ckpt_path, (long long)meta.step, (long long)cfg->steps);
  return GF_OK;
}

/* Fixed latents and the buffer generated images go to. */
static gf_status alloc_eval(train_state *st, gf_err *err) {
  const gf_model_config *m = &st->mcfg;
  size_t img = (size_t)m->image_channels * m->image_height * m->image_width;
  int levels[GF_SWD_MAX_LEVELS];
  gf_swd_config sc = gf_swd_config_default();
  st->n_eval = 0;
  if (st->cfg->eval_every > 0 && m->image_height == m->image_width &&
      gf_swd_levels(m->image_height, sc.min_level, levels) > 0)
    st->n_eval = (int)(st->ds.n < st->cfg->eval_images ? st->ds.n
                                                       : st->cfg->eval_images);
  else if (st->cfg->eval_every > 0)
    fprintf(stderr, "ganflow-train: images of %dx%d are too small for the "
            "SWD (side >= %d); no swd/ metrics\n", m->image_height,
            m->image_width, sc.min_level);
  size_t n_gen = (size_t)(st->n_eval > GRID_N ? st->n_eval : GRID_N);
  st->grid_z = malloc((size_t)GRID_N * m->z_dim * sizeof(float));
  st->eval_z = malloc((size_t)(st->n_eval ? st->n_eval : 1) * m->z_dim *
                      sizeof(float));
  st->gen = malloc(n_gen * img * sizeof(float));
  if (!st->grid_z || !st->eval_z || !st->gen)
    return gf_fail(err, GF_ENOMEM, "out of memory for sample images");
  gf_tensor z;
  int64_t gs[2] = {GRID_N, m->z_dim};
  gf_status s = gf_tensor_view(&z, st->grid_z, GF_F32, GF_DEV_CPU, 2, gs, err);
  if (s == GF_OK)
    s = gf_latent_sample(&z, st->cfg->seed, GF_RNG_SAMPLE, 0, 0, err);
  if (s == GF_OK && st->n_eval) {
    int64_t es[2] = {st->n_eval, m->z_dim};
    s = gf_tensor_view(&z, st->eval_z, GF_F32, GF_DEV_CPU, 2, es, err);
    if (s == GF_OK)
      s = gf_latent_sample(&z, st->cfg->seed, GF_RNG_SAMPLE, 1, 0, err);
  }
  return s;
}

/* G in inference mode on n latents into st->gen, in chunks of max_batch. */
static gf_status generate(train_state *st, const float *zs, int n,
                          gf_err *err) {
  const gf_model_config *m = &st->mcfg;
  size_t img = (size_t)m->image_channels * m->image_height * m->image_width;
  for (int i = 0; i < n; i += st->gan.max_batch) {
    int c = n - i < st->gan.max_batch ? n - i : st->gan.max_batch;
    gf_tensor z, y, dz;
    int64_t shape[2] = {c, m->z_dim};
    gf_status s = gf_tensor_view(&z, (void *)(zs + (size_t)i * m->z_dim),
                                 GF_F32, GF_DEV_CPU, 2, shape, err);
    if (s == GF_OK && st->on_dev) { /* latents in, images out */
      s = gf_tensor_view(&dz, st->dz.data, GF_F32, GF_DEV_CUDA, 2, shape, err);
      dz.device_index = st->dz.device_index; /* c <= batch rows of dz */
      if (s == GF_OK) s = gf_tensor_copy(&dz, &z, err);
      z = dz;
    }
    if (s == GF_OK)
      s = gf_net_forward(&st->gan.g, &st->ctx, &z, GF_MODE_INFER,
                         st->cfg->seed, 0, 0, 0, &y, err);
    if (s != GF_OK) return s;
    if (st->on_dev) {
      gf_tensor h;
      s = gf_tensor_view(&h, st->gen + (size_t)i * img, GF_F32, GF_DEV_CPU,
                         y.ndim, y.shape, err);
      if (s == GF_OK) s = gf_tensor_copy(&h, &y, err);
      if (s != GF_OK) return s;
    } else {
      memcpy(st->gen + (size_t)i * img, y.data, (size_t)c * img * sizeof(float));
    }
  }
  return GF_OK;
}

static gf_status write_samples(train_state *st, int64_t k, gf_err *err) {
  gf_status s = generate(st, st->grid_z, GRID_N, err);
  if (s != GF_OK) return s;
  char dir[GF_TRAIN_PATH_MAX + 16], path[GF_TRAIN_PATH_MAX + 64],
      dest[64];
  snprintf(dir, sizeof dir, "%s/samples", st->cfg->checkpoint_dir);
  s = make_dirs(dir, err);
  if (s != GF_OK) return s;
  snprintf(dest, sizeof dest, "samples/step_%lld.png", (long long)k);
  snprintf(path, sizeof path, "%s/step_%lld.png", dir, (long long)k);
  s = gf_png_write_grid(path, st->gen, GRID_N, st->mcfg.image_channels,
                        st->mcfg.image_height, st->mcfg.image_width,
                        GF_TRAIN_GRID_SIDE, err);
  if (s != GF_OK) return s;
  gf_tracker_upload(st->tracker, path, dest, false);
  return GF_OK;
}

static gf_status evaluate(train_state *st, int64_t k, double *avg,
                          gf_err *err) {
  gf_status s = generate(st, st->eval_z, st->n_eval, err);
  if (s != GF_OK) return s;
  const gf_model_config *m = &st->mcfg;
  gf_swd_images fake = {st->gen, GF_SWD_F32, st->n_eval, m->image_channels,
                        m->image_height, m->image_width};
  gf_swd_images real = {st->ds.pixels, GF_SWD_U8, st->n_eval,
                        m->image_channels, m->image_height, m->image_width};
  gf_swd_config sc = gf_swd_config_default();
  sc.seed = st->cfg->seed;
  sc.threads = st->ctx.nthreads < GF_SWD_MAX_THREADS ? st->ctx.nthreads
                                                      : GF_SWD_MAX_THREADS;
  gf_swd_result r;
  s = gf_swd(&fake, &real, &sc, &r, err);
  if (s != GF_OK) return s;
  int64_t ts = mlflow_now_ms();
  char key[64];
  for (int l = -1; l < r.levels; l++)
    if (gf_swd_metric_name(&r, l, key, sizeof key))
      gf_tracker_metric(st->tracker, key, l < 0 ? r.avg : r.swd[l], ts, k);
  *avg = r.avg;
  return GF_OK;
}

/* Flushes the metric logger (so every metric of steps <= k is on the
 * server or in the outbox before a checkpoint claims step k), writes
 * ckpt-k, and queues its upload from a hard-linked staging name, so that
 * pruning cannot pull the file from under the uploader. */
static gf_status checkpoint(train_state *st, int64_t k, gf_err *err) {
  /* Every rank has finished step k before rank 0 writes it down. */
  if (st->world > 1) GF_TRY(gf_comm_barrier(st->dist.comm, err));
  if (st->rank != 0) {
    st->ckpt_step = k;
    return GF_OK;
  }
  gf_err ferr;
  if (gf_tracker_flush(st->tracker, 120, &ferr) != GF_OK)
    fprintf(stderr, "\nganflow-train: warning: %s\n", ferr.msg);
  gf_ckpt_meta meta;
  memset(&meta, 0, sizeof meta);
  meta.format_version = GF_CKPT_FORMAT_VERSION;
  meta.step = k;
  uint64_t ep, off;
  gf_status s = gf_data_position_of_step((uint64_t)k, (uint64_t)st->cfg->batch,
                                         (uint64_t)st->ds.n, &ep, &off, err);
  if (s != GF_OK) return s;
  meta.epoch = (int64_t)ep;
  meta.epoch_offset = (int64_t)off;
  meta.seed = st->cfg->seed;
  meta.world_size = st->world;
  snprintf(meta.run_id, sizeof meta.run_id, "%s",
           gf_tracker_run_id(st->tracker));
  meta.config = st->mcfg;
  char path[GF_TRAIN_PATH_MAX + 64];
  if (st->on_dev && (s = gf_gan_copy_state(&st->host, &st->gan, err)) != GF_OK)
    return s;
  s = gf_checkpoint_save(st->cfg->checkpoint_dir,
                         st->on_dev ? &st->host : &st->gan, &meta,
                         st->cfg->keep, path, sizeof path, err);
  if (s != GF_OK) return s;
  st->ckpt_step = k;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  char stage[2 * GF_TRAIN_PATH_MAX + 96], dest[GF_TRAIN_PATH_MAX + 96];
  snprintf(stage, sizeof stage, "%s/.upload-%s", st->cfg->checkpoint_dir,
           base);
  snprintf(dest, sizeof dest, "checkpoints/%s", base);
  unlink(stage);
  if (link(path, stage) == 0)
    gf_tracker_upload(st->tracker, stage, dest, true);
  else
    fprintf(stderr, "\nganflow-train: %s not uploaded (cannot stage it: %s)\n",
            base, strerror(errno));
  return GF_OK;
}

static void monitor_emit(void *user, const char *name, double value,
                         int64_t step, int64_t timestamp_ms) {
  gf_tracker_metric(user, name, value, timestamp_ms, step);
}

static gf_status start_monitor(train_state *st, int64_t first_step,
                               gf_monitor_emit_fn emit, void *user,
                               gf_err *err) {
  gf_monitor_config mc = gf_monitor_config_default();
  const char *iv = getenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL");
  if (iv && *iv) {
    char *end = NULL;
    double v = strtod(iv, &end);
    if (*end || !(v > 0) || v > 86400)
      return gf_fail(err, GF_EINVAL, "MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL: "
                     "'%s' is not a number of seconds in (0, 86400]", iv);
    mc.interval_s = v;
  }
  mc.first_step = first_step;
  mc.emit = emit;
  mc.user = user;
  return gf_monitor_start(&st->monitor, &mc, err);
}

static void fmt_eta(char *buf, size_t cap, double s) {
  if (!(s >= 0) || s > 1e7) {
    snprintf(buf, cap, "--:--");
    return;
  }
  long t = (long)(s + 0.5);
  if (t >= 3600)
    snprintf(buf, cap, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else
    snprintf(buf, cap, "%02ld:%02ld", t / 60, t % 60);
}

/* Window of steps since the last metric point. */
typedef struct window {
  int64_t steps;
  double data_s;       /* seconds waiting for the loader's batch */
  double compute_s;    /* seconds in the G+D step (device included) */
  double ema_step_s;   /* smoothed seconds per step, for the ETA */
} window;

/* Seconds of the window's steps: data wait + compute. */
static double window_s(const window *w) { return w->data_s + w->compute_s; }

static void progress(train_state *st, int64_t k, const gf_gan_stats *gs,
                     const window *w, bool log_line) {
  double secs = window_s(w);
  double ips = secs > 0 ? (double)w->steps * st->cfg->batch / secs : 0;
  if (w->ema_step_s > 0) ips = st->cfg->batch / w->ema_step_s;
  char eta[32];
  fmt_eta(eta, sizeof eta, (double)(st->cfg->steps - k) * w->ema_step_s);
  if (st->tty) {
    double t = now_s();
    if (!log_line && t - st->last_draw < 0.2 && k != st->cfg->steps) return;
    st->last_draw = t;
    fprintf(stderr, "\rstep %lld/%lld  %.0f img/s  loss_d %.4f  loss_g %.4f  "
            "ETA %s   ", (long long)k, (long long)st->cfg->steps, ips,
            gs->loss_d, gs->loss_g, eta);
  } else if (log_line) {
    fprintf(stderr, "step %lld/%lld  loss_d %.4f  loss_g %.4f  d_real %.3f  "
            "d_fake %.3f  %.0f img/s  ETA %s\n", (long long)k,
            (long long)st->cfg->steps, gs->loss_d, gs->loss_g, gs->d_real,
            gs->d_fake, ips, eta);
  }
}

/* The seams' figures over the window since the last log point. */
static void log_sync_metrics(train_state *st, int64_t k, int64_t ts,
                             int64_t steps) {
  gf_gan_sync_stats now;
  gf_gan_sync_stats_get(&st->gan, &now);
  double ar = now.allreduce_s - st->sync_prev.allreduce_s;
  double ex = now.exposed_s - st->sync_prev.exposed_s;
  uint64_t bytes = now.bytes - st->sync_prev.bytes;
  st->sync_prev = now;
  if (steps <= 0 || st->world == 1) return;
  gf_tracker *t = st->tracker;
  gf_tracker_metric(t, "perf/allreduce_s", ar / (double)steps, ts, k);
  gf_tracker_metric(t, "perf/allreduce_exposed_s", ex / (double)steps, ts, k);
  if (ar > 0) {
    gf_tracker_metric(t, "perf/allreduce_hidden_fraction", 1.0 - ex / ar, ts, k);
    gf_tracker_metric(t, "perf/allreduce_gbytes_per_sec",
                      (double)bytes / ar * 1e-9, ts, k);
  }
}

static void log_step_metrics(train_state *st, int64_t k,
                             const gf_gan_stats *gs, const window *w) {
  int64_t ts = mlflow_now_ms();
  gf_tracker *t = st->tracker;
  gf_tracker_metric(t, "loss/d", gs->loss_d, ts, k);
  gf_tracker_metric(t, "loss/g", gs->loss_g, ts, k);
  gf_tracker_metric(t, "d/real", gs->d_real, ts, k);
  gf_tracker_metric(t, "d/fake", gs->d_fake, ts, k);
  double secs = window_s(w);
  if (w->steps > 0 && secs > 0) {
    gf_tracker_metric(t, "perf/images_per_sec",
                      (double)w->steps * st->cfg->batch / secs, ts, k);
    /* The step-time split: mean seconds per step over the window. */
    gf_tracker_metric(t, "perf/data_wait_s", w->data_s / (double)w->steps, ts,
                      k);
    gf_tracker_metric(t, "perf/compute_s", w->compute_s / (double)w->steps,
                      ts, k);
  }
  log_sync_metrics(st, k, ts, w->steps);
}

static void train_state_free(train_state *st) {
  gf_monitor_free(st->monitor);
  if (st->relay_ok) gf_relay_destroy(&st->relay);
  gf_data_loader_free(st->loader);
  gf_gan_free(&st->gan);
  gf_gan_free(&st->host);
  gf_tensor_free(&st->dreal);
  gf_tensor_free(&st->dz);
  gf_dist_free(&st->dist);
  if (st->hctx_ok) gf_ctx_free(&st->hctx);
  if (st->ctx_ok) gf_ctx_free(&st->ctx);
  gf_dataset_free(&st->ds);
  free(st->grid_z);
  free(st->eval_z);
  free(st->gen);
}

static bool due(int64_t k, int64_t every) { return every > 0 && k % every == 0; }

/* World > 1: every rank's system figures since the last exchange, logged by
 * rank 0 under MLflow's per-node names. */
static gf_status relay_system_metrics(train_state *st, gf_err *err) {
  if (st->world == 1 || !st->relay_ok) return GF_OK;
  gf_relay_buf *all = calloc((size_t)st->world, sizeof *all);
  if (!all) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status s = gf_relay_exchange(&st->relay, &st->dist, all, err);
  for (int r = 0; s == GF_OK && st->rank == 0 && r < st->world; r++) {
    for (int i = 0; i < all[r].n && i < GF_RELAY_MAX; i++) {
      const gf_relay_entry *e = &all[r].e[i];
      char name[GF_RELAY_NAME + 32];
      char raw[GF_RELAY_NAME];
      memcpy(raw, e->name, sizeof raw);
      raw[sizeof raw - 1] = '\0';
      gf_relay_node_name(name, sizeof name, raw, r);
      gf_tracker_metric(st->tracker, name, e->value, e->timestamp_ms, e->step);
    }
  }
  free(all);
  return s;
}

/* What the ranks sum after each step. */
enum { AGG_STOP, AGG_ERROR, AGG_LOSS_D, AGG_LOSS_DR, AGG_LOSS_DF, AGG_LOSS_G,
       AGG_D_REAL, AGG_D_FAKE, AGG_D_FAKE2, AGG_N };

/* The step loop; *k_out = steps completed when it returns. */
static gf_status loop(train_state *st, const atomic_int *stop,
                      int64_t *k_out, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  const gf_model_config *m = &st->mcfg;
  bool lead = st->rank == 0;
  int64_t k = st->start_step;
  window w = {0, 0, 0, 0};
  gf_gan_stats gs;
  memset(&gs, 0, sizeof gs);
  gf_status s = GF_OK;
  /* The untrained generator's SWD is the baseline the series is read
   * against (a resumed run already logged it; the tracker skips it). */
  if (lead && st->n_eval && k == 0) {
    double avg = 0;
    s = evaluate(st, 0, &avg, err);
    if (s != GF_OK) {
      *k_out = k;
      return s;
    }
    fprintf(stderr, "step 0: swd/avg %.2f (untrained generator)\n", avg);
  }
  gf_gan_sync_stats_get(&st->gan, &st->sync_prev);
  bool stopped = false;
  while (k < cfg->steps && !stopped) {
    const gf_batch *b = NULL;
    double t0 = now_s();
    s = gf_data_loader_next(st->loader, &b, err);
    double t1 = now_s();
    gf_tensor real;
    int64_t shape[4] = {s == GF_OK ? (int64_t)b->n : 0, m->image_channels,
                        m->image_height, m->image_width};
    if (s == GF_OK)
      s = gf_tensor_view(&real, b->images, GF_F32, GF_DEV_CPU, 4, shape, err);
    if (s == GF_OK && st->on_dev) { /* the batch goes to the GPU */
      gf_tensor dr;
      s = gf_tensor_view(&dr, st->dreal.data, GF_F32, GF_DEV_CUDA, 4, shape,
                         err);
      dr.device_index = st->dreal.device_index; /* b->n <= batch samples */
      if (s == GF_OK) s = gf_tensor_copy(&dr, &real, err);
      real = dr;
    }
    if (st->world > 1) { /* a rank without its batch must not enter the step */
      double flag[1] = {s != GF_OK};
      gf_err e2;
      if (gf_dist_sum_f64(&st->dist, flag, 1, &e2) != GF_OK) {
        if (s == GF_OK && err) *err = e2;
        if (s == GF_OK) s = e2.code;
      } else if (flag[0] > 0 && s == GF_OK) {
        s = gf_fail(err, GF_ESTATE, "another rank could not read its batch "
                    "(its message is in its log)");
      }
    }
    if (s != GF_OK) break;
    gf_gan_sync_stats before, after;
    gf_gan_sync_stats_get(&st->gan, &before);
    s = gf_gan_step(&st->gan, &st->ctx, &real, NULL, cfg->seed, k, st->sample0,
                    &gs, err);
    if (s != GF_OK) break;
    gf_gan_sync_stats_get(&st->gan, &after);
    double t2 = now_s();
    k++;
    /* The ranks agree on stopping and average the losses. */
    double agg[AGG_N] = {atomic_load(stop) != 0, 0, gs.loss_d, gs.loss_d_real,
                         gs.loss_d_fake, gs.loss_g, gs.d_real, gs.d_fake,
                         gs.d_fake_after};
    if (st->world > 1) {
      s = gf_dist_sum_f64(&st->dist, agg, AGG_N, err);
      if (s != GF_OK) break;
      double inv = 1.0 / st->world;
      gs.loss_d = agg[AGG_LOSS_D] * inv;
      gs.loss_d_real = agg[AGG_LOSS_DR] * inv;
      gs.loss_d_fake = agg[AGG_LOSS_DF] * inv;
      gs.loss_g = agg[AGG_LOSS_G] * inv;
      gs.d_real = agg[AGG_D_REAL] * inv;
      gs.d_fake = agg[AGG_D_FAKE] * inv;
      gs.d_fake_after = agg[AGG_D_FAKE2] * inv;
    }
    stopped = agg[AGG_STOP] > 0;
    double t3 = now_s();
    /* all-reduce: the seams' waits after the backward, and the sum above */
    double ar = after.exposed_s - before.exposed_s + (t3 - t2);
    gf_monitor_add_step(st->monitor, t1 - t0, t3 - t1 - ar, ar);
    w.steps++;
    w.data_s += t1 - t0;
    w.compute_s += t3 - t1;
    w.ema_step_s = w.ema_step_s > 0 ? 0.9 * w.ema_step_s + 0.1 * (t3 - t0)
                                    : t3 - t0;
    bool log_now = due(k, cfg->log_every);
    if (log_now && (s = relay_system_metrics(st, err)) != GF_OK) break;
    if (due(k, cfg->check_every) &&
        (s = gf_dist_check_params(&st->dist, &st->gan, cfg->sync_bn, k, err)) !=
            GF_OK)
      break;
    if (lead) {
      if (log_now) log_step_metrics(st, k, &gs, &w);
      progress(st, k, &gs, &w, log_now);
    }
    if (log_now) w.steps = 0, w.data_s = w.compute_s = 0;
    if (lead &&
        (due(k, cfg->sample_every) || (k == cfg->steps && cfg->sample_every))) {
      s = write_samples(st, k, err);
      if (s != GF_OK) break;
    }
    if (lead && st->n_eval &&
        (due(k, cfg->eval_every) || (k == cfg->steps && cfg->eval_every))) {
      double avg = 0;
      s = evaluate(st, k, &avg, err);
      if (s != GF_OK) break;
      fprintf(stderr, "%sstep %lld: swd/avg %.2f\n", st->tty ? "\n" : "",
              (long long)k, avg);
    }
    if (due(k, cfg->checkpoint_every) && k != cfg->steps) {
      s = checkpoint(st, k, err);
      if (s != GF_OK) break;
    }
  }
  if (st->tty && lead) fputc('\n', stderr);
  *k_out = k;
  return s;
}

/* Every rank's host name, "a,b" without repeats, at most cap - 1 bytes. */
static gf_status gather_hosts(train_state *st, char *out, size_t cap,
                              gf_err *err) {
  char mine[64] = "";
  gethostname(mine, sizeof mine - 1);
  char *all = calloc((size_t)st->world, sizeof mine);
  if (!all) return gf_fail(err, GF_ENOMEM, "out of memory");
  gf_status s = gf_dist_allgather(&st->dist, mine, sizeof mine, all, err);
  out[0] = '\0';
  size_t len = 0;
  for (int r = 0; s == GF_OK && r < st->world; r++) {
    const char *h = all + (size_t)r * sizeof mine;
    bool seen = false;
    for (int q = 0; q < r && !seen; q++)
      seen = strcmp(h, all + (size_t)q * sizeof mine) == 0;
    size_t hl = strlen(h);
    if (seen || len + hl + 2 >= cap) continue;
    if (len) out[len++] = ',';
    memcpy(out + len, h, hl + 1);
    len += hl;
  }
  free(all);
  return s;
}

/* Checks --batch, --grad-accum and --exact-shards against the world size;
 * sets the slice. */
static gf_status plan_slices(train_state *st, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  if (cfg->batch % st->world != 0)
    return gf_fail(err, GF_EINVAL, "--batch %d does not split evenly over %d "
                   "ranks (it is the global batch; use a multiple of %d)",
                   cfg->batch, st->world, st->world);
  st->local_batch = cfg->batch / st->world;
  if (cfg->exact_reduce) {
    if (cfg->exact_shards % st->world != 0 ||
        (st->world & (st->world - 1)) != 0)
      return gf_fail(err, GF_EINVAL, "--exact-reduce: %d ranks do not divide "
                     "--exact-shards %d (a power of two up to the shards)",
                     st->world, cfg->exact_shards);
  } else if (st->local_batch % cfg->grad_accum != 0 ||
             st->local_batch / cfg->grad_accum < 2) {
    return gf_fail(err, GF_EINVAL, "--grad-accum %d: each rank's %d images "
                   "do not cut into %d micro-batches of at least 2",
                   cfg->grad_accum, st->local_batch, cfg->grad_accum);
  }
  uint64_t begin = 0, count = 0;
  GF_TRY(gf_data_rank_slice((uint64_t)cfg->batch, st->world, st->rank, &begin,
                            &count, err));
  st->sample0 = (int64_t)begin;
  return GF_OK;
}

/* Rank 0's start (step, checkpoint step, run id) and GAN state to all. */
static gf_status share_start(train_state *st, gf_err *err) {
  if (st->world == 1) return GF_OK;
  int64_t steps[2] = {st->start_step, st->ckpt_step};
  GF_TRY(gf_dist_bcast(&st->dist, steps, sizeof steps, err));
  st->start_step = steps[0];
  st->ckpt_step = steps[1];
  GF_TRY(gf_dist_bcast(&st->dist, st->run_id, sizeof st->run_id, err));
  return gf_gan_broadcast_state(&st->gan, st->dist.comm, err);
}

static gf_status distribute(train_state *st, gf_comm *comm, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  gf_gan_dist d;
  memset(&d, 0, sizeof d);
  d.comm = st->world > 1 ? comm : NULL;
  d.micro = cfg->exact_reduce ? cfg->exact_shards / st->world : cfg->grad_accum;
  d.exact = cfg->exact_reduce;
  d.sync_bn = cfg->sync_bn;
  d.bucket_bytes = (size_t)cfg->bucket_kb * 1024;
  return gf_gan_distribute(&st->gan, &st->ctx, &d, err);
}

/* Starts the monitor: world 1 straight into the tracker, else into the
 * relay (every rank), with rank 0's first step. */
static gf_status start_monitors(train_state *st, gf_err *err) {
  int64_t first = st->rank == 0 ? gf_tracker_monitor_first_step(st->tracker) : 0;
  if (st->world == 1) return start_monitor(st, first, monitor_emit, st->tracker, err);
  GF_TRY(gf_dist_bcast(&st->dist, &first, sizeof first, err));
  gf_relay_init(&st->relay);
  st->relay_ok = true;
  return start_monitor(st, first, gf_relay_emit, &st->relay, err);
}

gf_train_exit gf_train_run(const gf_train_config *cfg,
                           const gf_launch_info *launch, gf_comm *comm,
                           const atomic_int *stop) {
  train_state st;
  memset(&st, 0, sizeof st);
  st.cfg = cfg;
  st.tty = isatty(STDERR_FILENO) == 1;
  gf_err err;
  memset(&err, 0, sizeof err);
  gf_train_exit rc = GF_TRAIN_EXIT_FAIL;
  int run_status = MLFLOW_RUN_FAILED;
  bool shared_err = false; /* the same message on every rank: rank 0 says it */
  gf_comm *nccl = NULL;    /* owned: GPU ranks' communicator, made here */
  bool lead = true;

  gf_dist_init(&st.dist, comm, &st.ctx);
  st.rank = st.dist.rank;
  st.world = st.dist.world;
  lead = st.rank == 0;
  if (make_ctx(&st, launch, &err) != GF_OK) goto out;
  if (st.on_dev && launch && launch->world_size > 1) {
    /* GPUs talk over NCCL on the ctx's stream (its id over MPI when MPI
     * launched the job, else through MASTER_ADDR:MASTER_PORT). */
    gf_comm_config ncfg = {GF_COMM_NCCL,
                           cfg->exact_reduce ? GF_ALLREDUCE_TREE
                                             : (gf_allreduce_algo)cfg->allreduce,
                           cfg->comm_timeout, &st.ctx, launch};
    if (gf_comm_init(&nccl, &ncfg, &err) != GF_OK) goto out;
    comm = nccl;
    gf_dist_init(&st.dist, comm, &st.ctx);
    st.rank = st.dist.rank;
    st.world = st.dist.world;
  } else if (!comm && launch && launch->world_size > 1) {
    gf_fail(&err, GF_EINVAL, "launched as rank %d of %d (%s) without a "
            "communicator: CPU ranks start with mpirun or srun",
            launch->rank, launch->world_size, launch->launcher);
    goto out_usage;
  }
  lead = st.rank == 0;

  gf_status s = gf_train_model_config(cfg, &st.mcfg, &err);
  if (s == GF_OK) s = plan_slices(&st, &err);
  if (s != GF_OK) {
    shared_err = true;
    goto out_usage;
  }
  /* Rank 0 decides where the job starts. */
  if (lead) {
    s = make_dirs(cfg->checkpoint_dir, &err);
    if (s == GF_OK) s = choose_start(&st, &err);
    else s = GF_EINVAL;
  }
  s = gf_dist_agree(&st.dist, s, "choosing where to start", &err);
  if (s == GF_EINVAL) goto out_usage;
  if (s != GF_OK) goto out;
  s = gf_dist_agree(&st.dist, load_data(&st, &err), "loading the data", &err);
  if (s != GF_OK) goto out;
  bool usage = false;
  s = build_model(&st, &usage, &err);
  if (s != GF_OK && !usage && s == GF_EINVAL) s = GF_EIO; /* a failure, not usage */
  s = gf_dist_agree(&st.dist, s, "building the model", &err);
  if (s == GF_EINVAL) goto out_usage;
  if (s != GF_OK) goto out;
  s = share_start(&st, &err);
  if (s == GF_OK) s = distribute(&st, comm, &err);
  if (s == GF_OK && lead) s = alloc_eval(&st, &err);
  if (gf_dist_agree(&st.dist, s, "setting up the ranks", &err) != GF_OK) goto out;

  char device_desc[96], hosts[2048];
  if (st.on_dev)
    snprintf(device_desc, sizeof device_desc, "cuda:%d%s",
             st.ctx.device_index, cfg->deterministic ? " (deterministic)" : "");
  else
    snprintf(device_desc, sizeof device_desc, "cpu (%d threads)",
             st.ctx.nthreads);
  if (st.world > 1) {
    size_t dl = strlen(device_desc);
    snprintf(device_desc + dl, sizeof device_desc - dl, " x %d ranks",
             st.world);
  }
  if (gather_hosts(&st, hosts, sizeof hosts, &err) != GF_OK) goto out;
  s = GF_OK;
  if (lead) {
    gf_tracker_start_info si = {cfg, st.run_id[0] ? st.run_id : NULL,
                                device_desc, hosts};
    s = gf_tracker_start(&st.tracker, &si, stderr, &err);
  }
  if (gf_dist_agree(&st.dist, s, "starting the MLflow run", &err) != GF_OK)
    goto out;
  if (lead)
    fprintf(stderr, "ganflow-train: run %s, %s %dx%dx%d, %lld images, %s, "
            "checkpoints in %s\n", gf_tracker_run_id(st.tracker),
            gf_arch_name(st.mcfg.architecture), st.mcfg.image_channels,
            st.mcfg.image_height, st.mcfg.image_width, (long long)st.ds.n,
            device_desc, cfg->checkpoint_dir);
  s = start_monitors(&st, &err);
  gf_data_order order = {cfg->seed, (uint64_t)cfg->batch, st.world, st.rank};
  if (s == GF_OK)
    s = gf_data_loader_start(&st.loader, &st.ds, &order,
                             (uint64_t)st.start_step, LOADER_DEPTH, &err);
  if (gf_dist_agree(&st.dist, s, "starting the monitor and the loader", &err) !=
      GF_OK)
    goto out;

  int64_t k = st.start_step;
  if (loop(&st, stop, &k, &err) != GF_OK) goto out;
  gf_monitor_stop(st.monitor);
  if (relay_system_metrics(&st, &err) != GF_OK) goto out; /* the last ones */

  /* The last state is always on disk (and uploaded) before the run ends. */
  if (st.ckpt_step != k && checkpoint(&st, k, &err) != GF_OK) goto out;
  if (!lead) {
    rc = GF_TRAIN_EXIT_OK;
    goto out;
  }
  if (gf_tracker_flush(st.tracker, 120, &err) != GF_OK)
    fprintf(stderr, "ganflow-train: warning: %s\n", err.msg);
  gf_tracker_uploads_wait(st.tracker);
  if (k < cfg->steps) {
    fprintf(stderr, "ganflow-train: stopped by a signal at step %lld; "
            "checkpoint written; run the same command to resume\n",
            (long long)k);
    run_status = MLFLOW_RUN_KILLED;
    rc = GF_TRAIN_EXIT_OK;
    goto out;
  }
  if ((st.on_dev && gf_gan_copy_state(&st.host, &st.gan, &err) != GF_OK) ||
      gf_tracker_log_model(st.tracker, st.on_dev ? &st.host : &st.gan,
                           stderr, &err) != GF_OK) {
    fprintf(stderr, "ganflow-train: training finished (checkpoint of step "
            "%lld written) but the model could not be logged: %s\nrun the "
            "same command again to retry\n", (long long)k, err.msg);
    err.msg[0] = '\0';
    goto out;
  }
  run_status = MLFLOW_RUN_FINISHED;
  rc = GF_TRAIN_EXIT_OK;
  fprintf(stderr, "ganflow-train: finished %lld steps\n", (long long)k);
  goto out;

out_usage:
  rc = GF_TRAIN_EXIT_USAGE;
out:
  if (rc != GF_TRAIN_EXIT_OK && err.msg[0] && (lead || !shared_err)) {
    if (st.world > 1)
      fprintf(stderr, "%sganflow-train: rank %d: %s\n", st.tty ? "\n" : "",
              st.rank, err.msg);
    else
      fprintf(stderr, "%sganflow-train: %s\n", st.tty ? "\n" : "", err.msg);
  }
  gf_monitor_stop(st.monitor);
  if (st.tracker) {
    /* Everything queued before the status changes, so a FINISHED run is
     * complete when a reader sees it. */
    if (gf_tracker_finish(st.tracker, run_status, stderr) != 0 &&
        run_status == MLFLOW_RUN_FINISHED)
      rc = GF_TRAIN_EXIT_FAIL;
    st.tracker = NULL;
  }
  train_state_free(&st);
  gf_comm_free(nccl);
  return rc;
}
