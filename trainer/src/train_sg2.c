/* train_sg2.c - the StyleGAN2-ADA side of a ganflow-train run (--model
 * stylegan2; train_state.h): the gf_sg2_gan built from the flags (the
 * --cfg preset's recipe with the flags over it), or loaded from a
 * checkpoint; one training step on the loader's batch; images of G_ema
 * (sample grids, evaluations); the final G_ema as a stylegan2 model
 * directory (the official tensor names, as gf_sg2_import_dir writes one).
 *
 * Determinism: every draw of a step is gf_sg2_gan_step's (seed, step)
 * keyed Philox; a conditional run's generated classes per phase are the
 * labels of dataset images drawn from (seed, GF_RNG_LABEL, step,
 * sub 1 + phase), one word per sample (the official code draws them from
 * the data set's labels too). A checkpoint holds the whole gf_sg2_gan
 * state (gf_sg2_gan_save), so a resume repeats the uninterrupted run. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gf/checkpoint.h"
#include "gf/rng.h"
#include "gf/safetensors.h"
#include "gf/sg2_config.h"
#include "gf/sg2_gan.h"
#include "gf/train.h"
#include "train_dist.h"
#include "train_state.h"

static gf_sg2_gan_hp sg2_hp(const gf_train_config *cfg,
                            const gf_sg2_recipe *rec) {
  gf_sg2_gan_hp hp = gf_sg2_gan_hp_default(rec);
  hp.lr_g = cfg->lr_g;
  hp.lr_d = cfg->lr_d;
  hp.style_mixing = (float)cfg->style_mixing;
  hp.pl_weight = (float)cfg->pl_weight;
  hp.r1_gamma = (float)cfg->r1_gamma;
  hp.d_reg_interval = cfg->r1_every; /* --r1-every, 16 as the official */
  hp.ema_kimg = cfg->ema_kimg;
  hp.ema_rampup = cfg->ema_rampup;
  hp.augment = cfg->aug != GF_TRAIN_AUG_NONE;
  hp.ada_p0 = (float)cfg->aug_p;
  hp.ada_target = cfg->aug == GF_TRAIN_AUG_ADA ? cfg->ada_target : 0.0;
  hp.ada_kimg = cfg->ada_kimg;
  return hp;
}

gf_status train_sg2_build(train_state *st, bool *usage, gf_err *err) {
  const gf_train_config *cfg = st->cfg;
  gf_sg2_config c;
  gf_sg2_recipe rec;
  GF_TRY(gf_train_sg2_config(cfg, st->mcfg.num_classes, &c, err));
  GF_TRY(gf_sg2_config_preset(&(gf_sg2_config){0}, &rec,
                              (gf_sg2_preset)cfg->sg2_cfg, cfg->image_size,
                              cfg->channels, st->mcfg.num_classes, st->world,
                              err));
  gf_sg2_gan_hp hp = sg2_hp(cfg, &rec);
  st->sg2 = calloc(1, sizeof *st->sg2);
  if (!st->sg2) return gf_fail(err, GF_ENOMEM, "out of memory");
  /* the round (micro-batch) size: --exact-reduce's shards of the global
   * batch, else each rank's batch cut by --grad-accum */
  int round = cfg->exact_reduce ? cfg->batch / cfg->exact_shards
                                : st->local_batch / cfg->grad_accum;
  GF_TRY(gf_sg2_gan_init(st->sg2, &st->ctx, &c, &hp, st->local_batch, round,
                         cfg->seed, err));
  if (c.c_dim > 0) {
    size_t n = (size_t)st->local_batch * (size_t)c.c_dim;
    st->sg2_c = calloc(5 * n, sizeof(float)); /* real_c + 4 phases' gen_c */
    if (!st->sg2_c) return gf_fail(err, GF_ENOMEM, "out of memory");
  }
  st->start_step = 0;
  st->ckpt_step = -1;
  if (!st->ckpt_path[0]) return GF_OK;
  gf_ckpt_meta meta;
  gf_status s = gf_checkpoint_load_sg2(st->ckpt_path, st->sg2, &meta, err);
  if (s != GF_OK) {
    *usage = s == GF_EINVAL || (cfg->resume == GF_RESUME_PATH &&
                                s == GF_EFORMAT);
    return s;
  }
  if (st->sg2->step != meta.step)
    return gf_fail(err, GF_EFORMAT, "%s: its state is at step %lld, its "
                   "metadata says %lld", st->ckpt_path,
                   (long long)st->sg2->step, (long long)meta.step);
  return train_resume_check(st, &meta, usage, err);
}

/* One-hot rows of labels into c [n, c_dim]. */
static void one_hot(float *c, const int32_t *labels, int n, int c_dim) {
  memset(c, 0, (size_t)n * (size_t)c_dim * sizeof *c);
  for (int i = 0; i < n; i++)
    if (labels[i] >= 0 && labels[i] < c_dim)
      c[(size_t)i * (size_t)c_dim + (size_t)labels[i]] = 1.0f;
}

gf_status train_sg2_step(train_state *st, const gf_tensor *real,
                         const int32_t *labels, int64_t k,
                         gf_sg2_step_out *out, gf_err *err) {
  gf_sg2_gan *g = st->sg2;
  int n = (int)real->shape[0], cd = g->cfg.c_dim;
  gf_sg2_step_in in;
  memset(&in, 0, sizeof in);
  in.real = real;
  gf_tensor rc, gc[4];
  if (cd > 0) {
    if (!labels)
      return gf_fail(err, GF_ESTATE, "stylegan2: a conditional step without "
                     "the batch's labels");
    size_t rows = (size_t)n * (size_t)cd;
    int64_t shape[2] = {n, cd};
    one_hot(st->sg2_c, labels, n, cd);
    GF_TRY(gf_tensor_view(&rc, st->sg2_c, GF_F32, GF_DEV_CPU, 2, shape, err));
    in.real_c = &rc;
    int32_t *lab = malloc((size_t)n * sizeof *lab);
    uint32_t *w = malloc((size_t)n * sizeof *w);
    if (!lab || !w) {
      free(lab);
      free(w);
      return gf_fail(err, GF_ENOMEM, "out of memory");
    }
    gf_status s = GF_OK;
    for (int p = 0; p < 4 && s == GF_OK; p++) {
      gf_philox_stream ps = gf_rng_sample_stream(
          st->cfg->seed, GF_RNG_LABEL, k, 1u + (uint32_t)p, st->sample0, 1);
      gf_philox_u32(&ps, w, (size_t)n);
      for (int i = 0; i < n; i++)
        lab[i] = st->ds.labels[w[i] % (uint32_t)st->ds.n];
      float *buf = st->sg2_c + (size_t)(p + 1) * rows;
      one_hot(buf, lab, n, cd);
      s = gf_tensor_view(&gc[p], buf, GF_F32, GF_DEV_CPU, 2, shape, err);
      in.gen_c[p] = &gc[p];
    }
    free(lab);
    free(w);
    GF_TRY(s);
  }
  return gf_sg2_gan_step(g, &st->ctx, &in, st->cfg->seed, out, err);
}

gf_status train_sg2_generate(train_state *st, const float *zs, int n,
                             int cols, gf_err *err) {
  gf_sg2_gan *g = st->sg2;
  gf_sg2_net *net = &g->g_ema;
  const gf_sg2_config *c = &g->cfg;
  size_t img = (size_t)c->img_channels * c->img_resolution * c->img_resolution;
  int mb = g->max_batch;
  gf_tensor dz, dc;
  memset(&dz, 0, sizeof dz);
  memset(&dc, 0, sizeof dc);
  float *hc = NULL;
  gf_status s = GF_OK;
  if (c->c_dim > 0 && !(hc = malloc((size_t)mb * c->c_dim * sizeof *hc)))
    return gf_fail(err, GF_ENOMEM, "out of memory");
  if (st->on_dev) {
    int64_t zsh[2] = {mb, c->z_dim}, csh[2] = {mb, c->c_dim > 0 ? c->c_dim : 1};
    s = gf_tensor_init_on(&dz, GF_F32, GF_DEV_CUDA, st->ctx.device_index, 2,
                          zsh, err);
    if (s == GF_OK && c->c_dim > 0)
      s = gf_tensor_init_on(&dc, GF_F32, GF_DEV_CUDA, st->ctx.device_index,
                            2, csh, err);
  }
  for (int i = 0; s == GF_OK && i < n; i += mb) {
    int b = n - i < mb ? n - i : mb;
    int64_t zsh[2] = {b, c->z_dim}, csh[2] = {b, c->c_dim};
    gf_tensor z, cc, ws, y;
    gf_tensor *cp = NULL;
    s = gf_tensor_view(&z, (void *)(zs + (size_t)i * c->z_dim), GF_F32,
                       GF_DEV_CPU, 2, zsh, err);
    if (s == GF_OK && c->c_dim > 0) {
      memset(hc, 0, (size_t)b * c->c_dim * sizeof *hc);
      for (int j = 0; j < b; j++)
        hc[(size_t)j * c->c_dim + ((i + j) / cols) % c->c_dim] = 1.0f;
      s = gf_tensor_view(&cc, hc, GF_F32, GF_DEV_CPU, 2, csh, err);
      cp = &cc;
    }
    if (s == GF_OK && st->on_dev) {
      gf_tensor d2;
      s = gf_tensor_view(&d2, dz.data, GF_F32, GF_DEV_CUDA, 2, zsh, err);
      d2.device_index = dz.device_index;
      if (s == GF_OK) s = gf_tensor_copy(&d2, &z, err);
      z = d2;
      if (s == GF_OK && cp) {
        s = gf_tensor_view(&d2, dc.data, GF_F32, GF_DEV_CUDA, 2, csh, err);
        d2.device_index = dc.device_index;
        if (s == GF_OK) s = gf_tensor_copy(&d2, &cc, err);
        cc = d2;
      }
    }
    if (s == GF_OK)
      s = gf_sg2_mapping_fwd(net, &st->ctx, &z, cp, 1.0f, 0, GF_MODE_INFER,
                             &ws, err);
    if (s == GF_OK)
      s = gf_sg2_synthesis_fwd(net, &st->ctx, &ws, GF_SG2_NOISE_CONST,
                               st->cfg->seed, 0, 0, GF_MODE_INFER, &y, err);
    gf_tensor h;
    if (s == GF_OK)
      s = gf_tensor_view(&h, st->gen + (size_t)i * img, GF_F32, GF_DEV_CPU,
                         y.ndim, y.shape, err);
    if (s == GF_OK) s = gf_tensor_copy(&h, &y, err);
  }
  free(hc);
  gf_tensor_free(&dz);
  gf_tensor_free(&dc);
  return s;
}

gf_status train_sg2_log_model(train_state *st, gf_err *err) {
  gf_sg2_net *net = &st->sg2->g_ema;
  size_t total = 0;
  for (int i = 0; i < net->n_tensors; i++)
    total += (size_t)gf_tensor_numel(&net->tensors[i].value);
  gf_st_tensor_desc desc[GF_SG2_MAX_TENSORS];
  float *host = malloc((total ? total : 1) * sizeof *host);
  gf_status s = host ? GF_OK : gf_fail(err, GF_ENOMEM, "out of memory");
  size_t off = 0;
  for (int i = 0; s == GF_OK && i < net->n_tensors; i++) {
    const gf_param *p = &net->tensors[i];
    gf_tensor h;
    s = gf_tensor_view(&h, host + off, GF_F32, GF_DEV_CPU, p->value.ndim,
                       p->value.shape, err);
    if (s == GF_OK) s = gf_tensor_copy(&h, &p->value, err);
    desc[i] = (gf_st_tensor_desc){p->name, GF_ST_F32, p->value.ndim,
                                  p->value.shape, host + off};
    off += (size_t)gf_tensor_numel(&p->value);
  }
  if (s == GF_OK) {
    gf_tracker_model gm = {&st->mcfg, desc, (size_t)net->n_tensors,
                           st->sg2->adam_step_g, "ema"};
    s = gf_tracker_log_model_tensors(st->tracker, &gm, st->log, err);
  }
  free(host);
  return s;
}

gf_status train_sg2_check(train_state *st, int64_t k, gf_err *err) {
  if (st->world == 1) return GF_OK;
  char hex[65];
  GF_TRY(gf_sg2_gan_digest(st->sg2, hex, err));
  return gf_dist_check_digest(&st->dist, hex, k, err);
}

void train_sg2_free(train_state *st) {
  if (st->sg2) gf_sg2_gan_free(st->sg2);
  free(st->sg2);
  st->sg2 = NULL;
  free(st->sg2_c);
  st->sg2_c = NULL;
}
