/* train_setup.c - how a ganflow-train run gets ready (train_state.h):
 * where it starts, its data, context and GAN, the ranks' slices and
 * shared state, the resource monitor. */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "gf/checkpoint.h"
#include "gf/ctx.h"
#include "gf/data.h"
#include "gf/fs.h"
#include "gf/gan.h"
#include "gf/image_grid.h"
#include "gf/monitor.h"
#include "gf/rng.h"
#include "gf/sg2_gan.h"
#include "gf/swd.h"
#include "gf/text.h"
#include "gf/train.h"
#include "mlflow/mlflow.h"
#include "train_dist.h"
#include "train_state.h"

gf_status train_lock_dir(const char *dir, int *fd, gf_err *err) {
  char path[GF_PATH_MAX];
  GF_TRY(gf_path_join(path, sizeof path, dir, ".lock", err));
  int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (f < 0)
    return gf_fail(err, GF_EIO, "%s: cannot open: %s", path, strerror(errno));
  if (flock(f, LOCK_EX | LOCK_NB) != 0) {
    int e = errno;
    char pid[32] = "";
    ssize_t n = pread(f, pid, sizeof pid - 1, 0);
    if (n > 0) pid[n] = '\0';
    pid[strcspn(pid, "\r\n")] = '\0';
    close(f);
    if (e == EWOULDBLOCK)
      return gf_fail(err, GF_EINVAL, "checkpoint directory %s is in use by "
                     "another ganflow-train (pid %s): two trainers on one "
                     "directory would overwrite each other's checkpoints "
                     "and run; stop that one or give another "
                     "--checkpoint-dir", dir, pid[0] ? pid : "unknown");
    return gf_fail(err, GF_EIO, "%s: cannot lock: %s", path, strerror(e));
  }
  char line[32]; /* a long in decimal and '\n' */
  int len = snprintf(line, sizeof line, "%ld\n", (long)getpid());
  assert(gf_fits(len, sizeof line));
  if (ftruncate(f, 0) != 0 || pwrite(f, line, (size_t)len, 0) != len) {
    /* the pid is only for the message above: the lock is what counts */
  }
  *fd = f;
  return GF_OK;
}

/* <checkpoint-dir>/run_id into st->run_id; *found false when the file is
 * absent or empty. GF_EINVAL when its path does not fit. */
static gf_status read_run_id_file(train_state *st, bool *found, gf_err *err) {
  *found = false;
  char path[GF_PATH_MAX];
  GF_TRY(gf_path_join(path, sizeof path, st->cfg->checkpoint_dir, "run_id",
                      err));
  FILE *f = fopen(path, "r");
  if (!f) return GF_OK;
  char line[128] = "";
  bool ok = fgets(line, sizeof line, f) != NULL;
  fclose(f);
  line[strcspn(line, "\r\n")] = '\0';
  size_t n = strlen(line);
  if (!ok || n == 0 || n > GF_CKPT_RUN_ID_MAX) return GF_OK;
  memcpy(st->run_id, line, n + 1); /* fits: run_id holds MAX + 1 bytes */
  *found = true;
  return GF_OK;
}

/* Decides where to start: fills ckpt_path (or "") and run_id (or "").
 * Returns GF_EINVAL for a refusal the user must resolve (exit 2). */
gf_status train_choose_start(train_state *st, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  st->ckpt_path[0] = '\0';
  st->run_id[0] = '\0';
  if (cfg->resume == GF_RESUME_PATH)
    return gf_format(st->ckpt_path, sizeof st->ckpt_path, err,
                     "--resume path", "%s", cfg->resume_path);
  gf_ckpt_meta meta;
  int skipped = 0;
  char skip_msg[512] = "";
  gf_status s = gf_checkpoint_find_latest(cfg->checkpoint_dir, st->ckpt_path,
                                          sizeof st->ckpt_path, &meta,
                                          &skipped, skip_msg, sizeof skip_msg,
                                          err);
  if (s != GF_OK && s != GF_ENOTFOUND) return s;
  if (skipped)
    gf_logf(st->log, GF_LOG_WARN,
            "ganflow-train: skipped %d damaged "
            "train_checkpoint(s) in %s (last: %s)",
            skipped, cfg->checkpoint_dir, skip_msg);
  bool have_ckpt = s == GF_OK;
  if (!have_ckpt) st->ckpt_path[0] = '\0';
  bool have_id = false;
  if (!have_ckpt) GF_TRY(read_run_id_file(st, &have_id, err));
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
    /* --cond: the classes come with the data, read later; a checkpoint of
     * a conditional run has them */
    gf_model_config want = st->mcfg;
    if (cfg->cond && meta.config.num_classes > 0) want.num_classes = meta.config.num_classes;
    if (!gf_model_config_equal(&meta.config, &want))
      return gf_fail(err, GF_EINVAL,
                     "%s was written for another model (--model, "
                     "--image-size, --channels, --z-dim, --sn or --cond differ); use "
                     "the same flags or another --checkpoint-dir",
                     st->ckpt_path);
    return gf_format(st->run_id, sizeof st->run_id, err, "checkpoint run id",
                     "%s", meta.run_id);
  }
  return GF_OK;
}

gf_status train_load_data(train_state *st, gf_err *err) {
  gf_data_options opt;
  memset(&opt, 0, sizeof opt);
  gf_status s = gf_data_spec_parse(st->cfg->data, &opt, err);
  if (s != GF_OK) return s;
  opt.fit = GF_DATA_FIT_RESIZE;
  opt.channels = st->mcfg.image_channels;
  opt.height = st->mcfg.image_height;
  opt.width = st->mcfg.image_width;
  GF_TRY(gf_dataset_load(&st->ds, &opt, err));
  if (!st->cfg->cond) return GF_OK;
  if (!st->ds.labels || st->ds.num_classes < 2)
    return gf_fail(err, GF_EINVAL, "--cond: %s has %s; a class-conditional model "
                   "trains on labelled data (IDX label files, CIFAR records, an "
                   "image folder's class subdirectories)", st->cfg->data,
                   st->ds.labels ? "a single class" : "no labels");
  st->mcfg.num_classes = st->ds.num_classes;
  return gf_model_config_validate(&st->mcfg, err);
}

/* The host twin of a device GAN and the device batch / latent buffers
 * (--device cuda). */
static gf_status build_device_side(train_state *st, const gf_gan_hparams *hp,
                                   gf_err *err) {
  const gf_model_config *m = &st->mcfg;
  gf_ctx_config hc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
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
gf_status train_make_ctx(train_state *st, const gf_launch_info *launch,
                          gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  gf_ctx_config cc = {GF_BACKEND_CPU, cfg->threads, 0, GF_CPU_LAYOUT_AUTO};
  int ordinal = 0; /* syntax checked by the config */
  GF_TRY(gf_device_parse("--device", cfg->device, &cc.backend, &ordinal,
                         err));
  if (cc.backend == GF_BACKEND_CUDA)
    cc.device_index = ordinal >= 0 ? ordinal : launch ? launch->local_rank : 0;
  gf_status s = gf_ctx_init(&st->ctx, &cc, err);
  if (s != GF_OK) return s;
  st->ctx_ok = true;
  st->ctx.deterministic = cfg->deterministic;
  st->on_dev = st->ctx.device != GF_DEV_CPU;
  return GF_OK;
}

void train_gan_hparams(const gf_train_config *cfg, gf_gan_hparams *hp) {
  gf_gan_hparams_default(hp);
  hp->adam_g.lr = cfg->lr_g;
  hp->adam_d.lr = cfg->lr_d;
  hp->loss = (gf_gan_loss)cfg->loss;
  hp->ema_decay = cfg->ema_decay;
  hp->ema_rampup = cfg->ema_rampup;
  hp->r1_gamma = cfg->r1_gamma;
  hp->r1_every = cfg->r1_every;
  hp->augment = cfg->diffaug;
}

gf_status train_resume_check(train_state *st, const gf_ckpt_meta *m,
                             bool *usage, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  gf_ckpt_meta meta = *m;
  gf_status s;
  *usage = true;
  if (meta.seed != cfg->seed)
    return gf_fail(err, GF_EINVAL, "%s was written with --seed %" PRIu64
                   ", not %" PRIu64 ": pass the same seed to continue the run",
                   st->ckpt_path, meta.seed, cfg->seed);
  if (meta.world_size != st->world)
    gf_logf(st->log, GF_LOG_INFO,
            "ganflow-train: %s was written by %d "
            "rank(s); resuming on %d with the same global batch (--batch %d): "
            "%s",
            st->ckpt_path, meta.world_size, st->world, cfg->batch,
            cfg->exact_reduce ? "--exact-reduce keeps every bit"
                              : "the numbers follow the run within float "
                                "rounding, not bit for bit");
  if (meta.step > cfg->steps)
    return gf_fail(err, GF_EINVAL, "%s is at step %lld, past --steps %lld",
                   st->ckpt_path, (long long)meta.step, (long long)cfg->steps);
  uint64_t ep, off, samples;
  s = gf_data_epoch_samples((uint64_t)st->ds.n, st->order.mirror, &samples,
                            err);
  if (s != GF_OK) return s;
  /* The recipe: one of an older ganflow (none recorded) must be the
   * default one. */
  char want[GF_CKPT_RECIPE_MAX + 1], had[GF_CKPT_RECIPE_MAX + 1];
  GF_TRY(gf_train_recipe(cfg, want, sizeof want, err));
  if (meta.recipe[0]) {
    memcpy(had, meta.recipe, sizeof had);
  } else {
    gf_train_config d;
    gf_train_config_default(&d);
    GF_TRY(gf_train_recipe(&d, had, sizeof had, err));
  }
  if (strcmp(want, had) != 0)
    return gf_fail(err, GF_EINVAL, "%s was trained with %s, not %s: pass the "
                   "same --loss, --d-steps, --ema-decay, --ema-rampup, "
                   "--mirror, --r1, --r1-every and --diffaug to continue "
                   "the run", st->ckpt_path, had, want);
  s = gf_data_position_of_step((uint64_t)meta.step * (uint64_t)cfg->d_steps,
                               (uint64_t)cfg->batch,
                               samples, &ep, &off, err);
  if (s != GF_OK) return s;
  if (ep != (uint64_t)meta.epoch || off != (uint64_t)meta.epoch_offset)
    return gf_fail(err, GF_EINVAL, "%s: its data position (epoch %lld, "
                   "offset %lld) is not where step %lld of --batch %d over %lld "
                   "images%s starts: --batch, --data or --mirror differ from "
                   "the run's",
                   st->ckpt_path, (long long)meta.epoch,
                   (long long)meta.epoch_offset, (long long)meta.step,
                   cfg->batch, (long long)st->ds.n,
                   st->order.mirror ? " (x2 mirrored)" : "");
  if (cfg->resume == GF_RESUME_PATH)
    GF_TRY(gf_format(st->run_id, sizeof st->run_id, err, "checkpoint run id",
                     "%s", meta.run_id));
  *usage = false;
  st->start_step = meta.step;
  st->ckpt_step = meta.step;
  gf_logf(st->log, GF_LOG_INFO,
          "ganflow-train: resuming from %s (step %lld "
          "of %lld)",
          st->ckpt_path, (long long)meta.step, (long long)cfg->steps);
  return GF_OK;
}

/* Builds the GAN on ctx; loads the checkpoint or initialises from the
 * seed. */
gf_status train_build_model(train_state *st, bool *usage, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  gf_status s;
  gf_gan_hparams hp;
  train_gan_hparams(cfg, &hp);
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
  return train_resume_check(st, &meta, usage, err);
}

static void monitor_emit(void *user, const char *name, double value,
                         int64_t step, int64_t timestamp_ms) {
  gf_tracker_metric(user, name, value, timestamp_ms, step);
}

static gf_status start_monitor(train_state *st, int64_t first_step,
                               gf_monitor_emit_fn emit, void *user,
                               gf_err *err) {
  gf_monitor_config mc = gf_monitor_config_default();
  /* MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL, read with the flags */
  if (st->cfg->sys_metrics_interval_s > 0)
    mc.interval_s = st->cfg->sys_metrics_interval_s;
  mc.first_step = first_step;
  mc.world_size = st->world;
  if (!st->on_dev) mc.nvml_library = ""; /* no GPU in use: no GPU figures */
  mc.emit = emit;
  mc.user = user;
  return gf_monitor_start(&st->monitor, &mc, err);
}

/* Every rank's host name, "a,b" without repeats, at most cap - 1 bytes. */
gf_status train_gather_hosts(train_state *st, char *out, size_t cap,
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
 * sets the slice and the data order. */
gf_status train_plan_slices(train_state *st, gf_err *err) {
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
  /* The one data order of the run: the loader walks it, checkpoints record
   * its positions and a resume checks them (gf_data_epoch_samples). */
  memset(&st->order, 0, sizeof st->order);
  st->order.seed = cfg->seed;
  st->order.batch = (uint64_t)cfg->batch;
  st->order.world_size = st->world;
  st->order.rank = st->rank;
  st->order.mirror = cfg->mirror;
  return GF_OK;
}

/* Rank 0's start (step, checkpoint step, run id) and GAN state to all. */
gf_status train_share_start(train_state *st, gf_err *err) {
  if (st->world == 1) return GF_OK;
  int64_t steps[2] = {st->start_step, st->ckpt_step};
  GF_TRY(gf_dist_bcast(&st->dist, steps, sizeof steps, err));
  st->start_step = steps[0];
  st->ckpt_step = steps[1];
  GF_TRY(gf_dist_bcast(&st->dist, st->run_id, sizeof st->run_id, err));
  if (st->sg2) return gf_sg2_gan_broadcast(st->sg2, st->dist.comm, err);
  return gf_gan_broadcast_state(&st->gan, st->dist.comm, err);
}

gf_status train_distribute(train_state *st, gf_comm *comm, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  if (st->sg2) {
    /* rounds of the round size train_sg2_build chose, summed over ranks */
    gf_sg2_gan_dist sd = {st->world > 1 ? comm : NULL, cfg->exact_reduce,
                          st->sample0};
    return gf_sg2_gan_distribute(st->sg2, &st->ctx, &sd, err);
  }
  gf_gan_dist d;
  memset(&d, 0, sizeof d);
  d.comm = st->world > 1 ? comm : NULL;
  d.micro = cfg->exact_reduce ? cfg->exact_shards / st->world : cfg->grad_accum;
  d.exact = cfg->exact_reduce;
  d.sync_bn = cfg->sync_bn;
  d.bucket_bytes = (size_t)cfg->bucket_kb * 1024;
  d.compress_bf16 = cfg->compress_bf16;
  return gf_gan_distribute(&st->gan, &st->ctx, &d, err);
}

/* Starts the monitor: world 1 straight into the tracker, else into the
 * relay (every rank), with rank 0's first step. */
gf_status train_start_monitors(train_state *st, gf_err *err) {
  int64_t first = st->rank == 0 ? gf_tracker_monitor_first_step(st->tracker) : 0;
  if (st->world == 1) return start_monitor(st, first, monitor_emit, st->tracker, err);
  GF_TRY(gf_dist_bcast(&st->dist, &first, sizeof first, err));
  gf_relay_init(&st->relay);
  st->relay_ok = true;
  return start_monitor(st, first, gf_relay_emit, &st->relay, err);
}
