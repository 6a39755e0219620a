/* train_outputs.c - what rank 0 of a ganflow-train run writes besides
 * metrics (train_state.h): 8x8 sample grids (MLflow images under the key
 * GF_TRAIN_SAMPLES_KEY), SWD evaluations against the
 * data, and checkpoints with their uploads. Sample grids and SWD use G in
 * inference mode with fixed latents from (seed, GF_RNG_SAMPLE), so they
 * never perturb training and are comparable over a run. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "gf/atomic_file.h"
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
#include "train_images.h"
#include "train_state.h"

/* The image key of the sample grids (the UI's chart title). */
#define GF_TRAIN_SAMPLES_KEY "samples"

/* Fixed latents and the buffer generated images go to. */
gf_status train_alloc_eval(train_state *st, gf_err *err) {
  const gf_model_config *m = &st->mcfg;
  size_t img = (size_t)m->image_channels * m->image_height * m->image_width;
  int levels[GF_SWD_MAX_LEVELS];
  gf_swd_config sc = gf_swd_config_default();
  st->n_eval = 0;
  st->n_fid = 0;
  bool swd = st->cfg->eval_every > 0 && (st->cfg->eval_metrics & GF_EVAL_SWD);
  if (swd && m->image_height == m->image_width &&
      gf_swd_levels(m->image_height, sc.min_level, levels) > 0)
    st->n_eval = (int)(st->ds.n < st->cfg->eval_images ? st->ds.n
                                                       : st->cfg->eval_images);
  else if (swd)
    gf_logf(st->log, GF_LOG_WARN,
            "ganflow-train: images of %dx%d are too "
            "small for the SWD (side >= %d); no swd/ metrics",
            m->image_height, m->image_width, sc.min_level);
  if (st->cfg->eval_every > 0 &&
      (st->cfg->eval_metrics & (GF_EVAL_FID | GF_EVAL_KID))) {
    int want = st->cfg->fid_images ? st->cfg->fid_images
                                   : st->cfg->eval_images;
    st->n_fid = (int)(st->ds.n < want ? st->ds.n : want);
  }
  int n_z = st->n_eval > st->n_fid ? st->n_eval : st->n_fid;
  int classes = m->num_classes;
  st->grid_n = classes > 0 ? (classes < GRID_COND_ROWS ? classes : GRID_COND_ROWS) *
                                 GF_TRAIN_GRID_SIDE
                           : GRID_N;
  size_t n_gen = (size_t)(n_z > st->grid_n ? n_z : st->grid_n);
  st->grid_z = malloc((size_t)GRID_MAX * m->z_dim * sizeof(float));
  st->eval_z = malloc((size_t)(n_z ? n_z : 1) * m->z_dim * sizeof(float));
  st->gen = malloc(n_gen * img * sizeof(float));
  if (!st->grid_z || !st->eval_z || !st->gen)
    return gf_fail(err, GF_ENOMEM, "out of memory for sample images");
  if (classes > 0 && !st->sg2) { /* stylegan2: train_sg2_generate's own */
    st->gen_labels = malloc((size_t)st->gan.max_batch * sizeof(int32_t));
    if (!st->gen_labels) return gf_fail(err, GF_ENOMEM, "out of memory for labels");
    if (st->on_dev) {
      int64_t nl = st->gan.max_batch;
      GF_TRY(gf_tensor_init_on(&st->dlab, GF_I32, GF_DEV_CUDA, st->ctx.device_index, 1, &nl,
                               err));
    }
  }
  gf_tensor z;
  int64_t gs[2] = {GRID_N, m->z_dim};
  gf_status s = gf_tensor_view(&z, st->grid_z, GF_F32, GF_DEV_CPU, 2, gs, err);
  if (s == GF_OK)
    s = gf_latent_sample(&z, st->cfg->seed, GF_RNG_SAMPLE, 0, 0, err);
  if (s == GF_OK && classes > 0) { /* rows are classes: column c is latent c */
    for (int i = st->grid_n - 1; i >= 0; i--)
      memmove(st->grid_z + (size_t)i * m->z_dim,
              st->grid_z + (size_t)(i % GF_TRAIN_GRID_SIDE) * m->z_dim,
              (size_t)m->z_dim * sizeof(float));
  }
  if (s == GF_OK && n_z) {
    int64_t es[2] = {n_z, m->z_dim};
    s = gf_tensor_view(&z, st->eval_z, GF_F32, GF_DEV_CPU, 2, es, err);
    if (s == GF_OK)
      s = gf_latent_sample(&z, st->cfg->seed, GF_RNG_SAMPLE, 1, 0, err);
  }
  return s;
}

/* In chunks of max_batch. */
gf_status train_generate(train_state *st, const float *zs, int n, int cols,
                         gf_err *err) {
  if (st->sg2) return train_sg2_generate(st, zs, n, cols, err);
  gf_net *g = gf_gan_generator(&st->gan, st->cfg->export_raw);
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
    if (s == GF_OK && m->num_classes > 0) { /* the chunk's classes */
      gf_tensor lab;
      for (int j = 0; j < c; j++)
        st->gen_labels[j] = (int32_t)(((i + j) / cols) % m->num_classes);
      int64_t nl = c;
      s = gf_tensor_view(&lab, st->gen_labels, GF_I32, GF_DEV_CPU, 1, &nl, err);
      if (s == GF_OK && st->on_dev) {
        gf_tensor dl;
        s = gf_tensor_view(&dl, st->dlab.data, GF_I32, GF_DEV_CUDA, 1, &nl, err);
        dl.device_index = st->dlab.device_index;
        if (s == GF_OK) s = gf_tensor_copy(&dl, &lab, err);
        lab = dl;
      }
      if (s == GF_OK) s = gf_net_set_labels(g, &lab, err);
    }
    if (s == GF_OK)
      s = gf_net_forward(g, &st->ctx, &z, GF_MODE_INFER,
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

/* Writes bytes to <checkpoint-dir>/<name> and queues its upload as dest;
 * the uploader owns (deletes) the file from then on. */
static gf_status stage_upload(train_state *st, const char *name,
                              const void *bytes, size_t len, const char *dest,
                              gf_err *err) {
  char path[GF_PATH_MAX];
  GF_TRY(gf_path_join(path, sizeof path, st->cfg->checkpoint_dir, name, err));
  gf_status s = gf_atomic_write_file(path, bytes, len, err);
  if (s == GF_OK) gf_tracker_upload(st->tracker, path, dest, true);
  return s;
}

/* The 8x8 grid of step k (scaled up by a whole factor when its images are
 * small: GF_IMAGE_GRID_TARGET_SIDE), logged as MlflowClient.log_image(run, grid,
 * key="samples", step=k) logs it (train_images.h): the PNG and its
 * +compressed.webp preview under images/, and the tag mlflow.loggedImages
 * once per process (at its first grid: no due step between the step this
 * process started from and k). No copy stays on disk: the files are staged
 * under hidden names in the checkpoint directory and deleted by the
 * uploader. */
gf_status train_write_samples(train_state *st, int64_t k, gf_err *err) {
  gf_status s = train_generate(st, st->grid_z, st->grid_n, GF_TRAIN_GRID_SIDE,
                               err);
  if (s != GF_OK) return s;
  uint8_t *px = NULL, *png = NULL, *webp = NULL;
  size_t png_len = 0, webp_len = 0;
  int w = 0, h = 0, c = 0;
  char uuid[GF_UUID_LEN + 1], name[64];
  gf_image_names names;
  s = gf_grid_to_rgb8(st->gen, st->grid_n, st->mcfg.image_channels,
                      st->mcfg.image_height, st->mcfg.image_width,
                      GF_TRAIN_GRID_SIDE, GF_GRID_DEFAULT_PAD, &px, &w, &h,
                      &c, err);
  int f = gf_image_upscale_factor(w, h, GF_IMAGE_GRID_TARGET_SIDE);
  if (s == GF_OK && f > 1) { /* small images: legible in MLflow's viewer */
    uint8_t *big = NULL;
    s = gf_image_upscale_nearest(px, w, h, c, f, &big, err);
    free(px);
    px = big;
    w *= f;
    h *= f;
  }
  if (s == GF_OK) s = gf_png_encode(px, w, h, c, &png, &png_len, err);
  if (s == GF_OK) s = gf_image_compressed_webp(px, w, h, c, &webp, &webp_len,
                                               err);
  if (s == GF_OK) s = gf_uuid4(uuid, err);
  if (s == GF_OK)
    s = gf_image_names_make(GF_TRAIN_SAMPLES_KEY, k, mlflow_now_ms(), uuid,
                            &names, err);
  if (s == GF_OK)
    s = gf_format(name, sizeof name, err, "sample grid file name",
                  ".upload-samples-%lld.png", (long long)k);
  if (s == GF_OK) s = stage_upload(st, name, png, png_len, names.png, err);
  if (s == GF_OK)
    s = gf_format(name, sizeof name, err, "sample grid file name",
                  ".upload-samples-%lld.webp", (long long)k);
  if (s == GF_OK) s = stage_upload(st, name, webp, webp_len, names.webp, err);
  free(px);
  free(png);
  free(webp);
  int64_t every = st->cfg->sample_every;
  if (s == GF_OK && every > 0 && (k - 1) / every * every <= st->start_step)
    gf_tracker_set_tag(st->tracker, GF_IMAGE_LOGGED_TAG,
                       GF_IMAGE_LOGGED_VALUE);
  return s;
}

gf_status train_evaluate(train_state *st, int64_t k, double *avg,
                          gf_err *err) {
  gf_status s = train_generate(st, st->eval_z, st->n_eval, 1, err);
  if (s != GF_OK) return s;
  const gf_model_config *m = &st->mcfg;
  gf_swd_images fake = {st->gen, GF_SWD_F32, st->n_eval, m->image_channels,
                        m->image_height, m->image_width};
  /* The dataset's first n_eval images as stored, never the mirror samples
   * of a --mirror order: the reference describes the data. */
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
gf_status train_checkpoint(train_state *st, int64_t k, gf_err *err) {
  /* Every rank has finished step k before rank 0 writes it down. */
  if (st->world > 1) GF_TRY(gf_comm_barrier(st->dist.comm, err));
  if (st->rank != 0) {
    st->ckpt_step = k;
    return GF_OK;
  }
  gf_err ferr;
  if (gf_tracker_flush(st->tracker, 120, &ferr) != GF_OK)
    gf_logf(st->log, GF_LOG_WARN, "ganflow-train: warning: %s", ferr.msg);
  gf_ckpt_meta meta;
  memset(&meta, 0, sizeof meta);
  meta.format_version = GF_CKPT_FORMAT_VERSION;
  meta.step = k;
  uint64_t ep, off, samples;
  gf_status s = gf_data_epoch_samples((uint64_t)st->ds.n, st->order.mirror,
                                      &samples, err);
  if (s != GF_OK) return s;
  s = gf_data_position_of_step((uint64_t)k * (uint64_t)st->cfg->d_steps,
                               (uint64_t)st->cfg->batch, samples,
                               &ep, &off, err);
  if (s != GF_OK) return s;
  meta.epoch = (int64_t)ep;
  meta.epoch_offset = (int64_t)off;
  meta.seed = st->cfg->seed;
  meta.world_size = st->world;
  GF_TRY(gf_format(meta.run_id, sizeof meta.run_id, err, "MLflow run id",
                   "%s", gf_tracker_run_id(st->tracker)));
  meta.config = st->mcfg;
  GF_TRY(gf_train_recipe(st->cfg, meta.recipe, sizeof meta.recipe, err));
  char path[GF_PATH_MAX];
  if (st->sg2) {
    s = gf_checkpoint_save_sg2(st->cfg->checkpoint_dir, st->sg2, &meta,
                               st->cfg->keep, path, sizeof path, err);
  } else {
    if (st->on_dev &&
        (s = gf_gan_copy_state(&st->host, &st->gan, err)) != GF_OK)
      return s;
    s = gf_checkpoint_save(st->cfg->checkpoint_dir,
                           st->on_dev ? &st->host : &st->gan, &meta,
                           st->cfg->keep, path, sizeof path, err);
  }
  if (s != GF_OK) return s;
  st->ckpt_step = k;
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  /* The checkpoint is written: a name that does not fit (which the
   * --checkpoint-dir check rules out) costs its upload, not the run. */
  char stage[GF_PATH_MAX], dest[GF_PATH_MAX];
  gf_err nerr;
  if (gf_format(stage, sizeof stage, &nerr, "checkpoint staging path",
                "%s/.upload-%s", st->cfg->checkpoint_dir, base) != GF_OK ||
      gf_format(dest, sizeof dest, &nerr, "checkpoint artifact path",
                "checkpoints/%s", base) != GF_OK) {
    gf_logf(st->log, GF_LOG_WARN, "ganflow-train: %s not uploaded: %s", base,
            nerr.msg);
    return GF_OK;
  }
  unlink(stage);
  if (link(path, stage) == 0)
    gf_tracker_upload(st->tracker, stage, dest, true);
  else
    gf_logf(st->log, GF_LOG_WARN,
            "ganflow-train: %s not uploaded (cannot "
            "stage it: %s)",
            base, strerror(errno));
  return GF_OK;
}
