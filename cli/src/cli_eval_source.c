/* cli_eval_source.c - the generators `ganflow eval` scores
 * (cli_eval_internal.h): a registered version loaded as `ganflow generate`
 * loads it (gfs_model_resolve, gfs_cache_load), or G rebuilt from a
 * training checkpoint (its "g.*" tensors, or its EMA generator's "g_ema.*"
 * when it has one, and the config in its metadata, gf/ckpt_meta.h); a
 * class-conditional G makes image k of class k % classes (class-balanced,
 * as ganflow-train's evaluations). Latents follow ganflow-serve: image k is sample k of
 * Philox (seed, SAMPLE, step 0). */
#include <stdlib.h>
#include <string.h>

#include "cli_eval_internal.h"
#include "gf/checkpoint.h"
#include "gf/safetensors.h"
#include "gf/text.h"
#include "gfs/slot.h"

static gf_status check_channels(const gf_model_config *cfg,
                                const char *label, gf_err *err) {
  if (cfg->image_channels != 1 && cfg->image_channels != 3)
    return gf_fail(err, GF_EUNSUPPORTED, "%s: the model makes %d-channel "
                   "images; FID/KID need 1 (grey) or 3 (RGB) channels",
                   label, cfg->image_channels);
  return GF_OK;
}

/* Copies every tensor of g from the checkpoint's "g.*" tensors, or from
 * its EMA generator's "g_ema.*" ones when it has them (the generator a run
 * with --ema-decay samples, evaluates and registers). *ema says which. */
static gf_status copy_g(gf_net *g, const gf_st_file *f, const char *path,
                        bool *ema, gf_err *err) {
  *ema = g->n_tensors > 0 && g->tensors[0].name[0] == 'g' &&
         g->tensors[0].name[1] == '.';
  if (*ema) {
    char first[GF_PARAM_NAME_MAX + 8];
    GF_TRY(gf_format(first, sizeof first, err, "tensor name", "g_ema%s",
                     g->tensors[0].name + 1));
    *ema = gf_st_find(f, first) != NULL;
  }
  for (int i = 0; i < g->n_tensors; i++) {
    gf_param *p = &g->tensors[i];
    char name[GF_PARAM_NAME_MAX + 8];
    GF_TRY(gf_format(name, sizeof name, err, "tensor name", "%s%s",
                     *ema ? "g_ema" : "g", p->name + 1));
    const gf_st_tensor *t = gf_st_find(f, name);
    size_t numel = (size_t)gf_tensor_numel(&p->value);
    if (!t)
      return gf_fail(err, GF_EFORMAT, "%s: tensor %s missing", path, name);
    if (t->dtype != GF_ST_F32 || t->numel != numel)
      return gf_fail(err, GF_EFORMAT, "%s: %s is %s with %zu values, the "
                     "generator needs F32 with %zu", path, name,
                     gf_st_dtype_name(t->dtype), t->numel, numel);
    gf_tensor src;
    GF_TRY(gf_tensor_view(&src, (void *)t->data, GF_F32, GF_DEV_CPU,
                          p->value.ndim, p->value.shape, err));
    GF_TRY(gf_tensor_copy(&p->value, &src, err));
  }
  return GF_OK;
}

gf_status eval_gen_open_ckpt(eval_gen *g, const char *path,
                             const gf_cli_eval_opts *o, gf_err *err) {
  memset(g, 0, sizeof *g);
  g->is_ckpt = true;
  GF_TRY(gf_format(g->label, sizeof g->label, err, "checkpoint path", "%s",
                   path));
  gf_st_file f;
  gf_st_file_init(&f);
  gf_err e;
  gf_status st = gf_ckpt_open(path, &f, &g->meta, &e);
  if (st != GF_OK) {
    /* gf_ckpt_open's messages do not always name the file. */
    if (strstr(e.msg, path)) return gf_fail(err, st, "%s", e.msg);
    return gf_fail(err, st, "%s: %s", path, e.msg);
  }
  g->cfg = g->meta.config;
  g->max_batch = o->batch;
  g->image_numel = (size_t)g->cfg.image_channels *
                   (size_t)g->cfg.image_height * (size_t)g->cfg.image_width;
  st = check_channels(&g->cfg, path, err);
  if (st == GF_OK) {
    gf_ctx_config cc = {.backend = o->backend, .nthreads = o->threads,
                        .device_index = o->device_index};
    st = gf_ctx_init(&g->ctx, &cc, err);
    g->ctx_ready = st == GF_OK;
  }
  if (st == GF_OK) {
    st = gf_net_init(&g->g, &g->ctx, &g->cfg, GF_NET_G, g->max_batch, false,
                     err);
    g->net_ready = true; /* gf_net_free accepts a half-built net */
  }
  if (st == GF_OK) {
    int64_t zs[2] = {g->max_batch, g->cfg.z_dim};
    st = gf_tensor_init_on(&g->z, GF_F32, g->ctx.device, g->ctx.device_index,
                           2, zs, err);
    g->z_ready = st == GF_OK;
  }
  bool ema = false;
  if (st == GF_OK) st = copy_g(&g->g, &f, path, &ema, err);
  static const char ema_note[] = " (EMA generator)";
  if (st == GF_OK && ema && strlen(g->label) + sizeof ema_note <= sizeof g->label)
    strcat(g->label, ema_note);
  gf_st_file_free(&f);
  if (st != GF_OK) eval_gen_free(g);
  return st;
}

gf_status eval_gen_open_uri(eval_gen *g, mlflow_client *c, const char *uri,
                            const gf_cli_eval_opts *o, gf_err *err) {
  memset(g, 0, sizeof *g);
  GF_TRY(gf_format(g->label, sizeof g->label, err, "model URI", "%s", uri));
  char cache[GF_PATH_MAX];
  if (o->model_cache_dir) {
    GF_TRY(gf_format(cache, sizeof cache, err, "--model-cache-dir", "%s",
                     o->model_cache_dir));
  } else { /* ganflow-serve's and ganflow generate's default */
    const char *home = getenv("HOME");
    GF_TRY(gf_format(cache, sizeof cache, err,
                     "$HOME/.cache/ganflow-serve (the default "
                     "--model-cache-dir)", "%s/.cache/ganflow-serve",
                     home && *home ? home : "."));
  }
  GF_TRY(gfs_cache_dir_check(cache, "--model-cache-dir", err));
  gfs_model_ref ref;
  GF_TRY(gfs_model_resolve(c, uri, &ref, err));
  gf_generator_opts mo = {o->backend, o->device_index, 1, o->threads,
                          o->batch, NULL, GF_GEN_FP32};
  GF_TRY(gfs_cache_load(c, cache, ref.name, ref.version, &mo, &g->model,
                        err));
  g->cfg = g->model->cfg;
  g->max_batch = g->model->max_batch;
  g->image_numel = g->model->image_numel;
  gf_status st = gf_format(g->label, sizeof g->label, err, "model label",
                           "models:/%s/%s (%s)", ref.name, ref.version, uri);
  if (st == GF_OK) st = check_channels(&g->cfg, g->label, err);
  if (st != GF_OK) eval_gen_free(g);
  return st;
}

gf_status eval_gen_run(eval_gen *g, uint64_t seed, int64_t sample0, int n,
                       float *z_host, float *out, gf_err *err) {
  if (n < 1 || n > g->max_batch)
    return gf_fail(err, GF_EINVAL, "eval: batch of %d images (1..%d)", n,
                   g->max_batch);
  int64_t zs[2] = {n, g->cfg.z_dim};
  gf_tensor zh;
  GF_TRY(gf_tensor_view(&zh, z_host, GF_F32, GF_DEV_CPU, 2, zs, err));
  GF_TRY(gf_latent_sample(&zh, seed, GF_RNG_SAMPLE, 0, sample0, err));
  if (g->model && g->cfg.num_classes == 0)
    return gf_generator_run(g->model, 0, z_host, n, out, err);
  if (g->model) { /* class-balanced, as below: image k of class k % K */
    if (!g->labels_host &&
        !(g->labels_host = malloc((size_t)g->max_batch * sizeof(int32_t))))
      return gf_fail(err, GF_ENOMEM, "eval: out of memory");
    for (int i = 0; i < n; i++)
      g->labels_host[i] = (int32_t)((sample0 + i) % g->cfg.num_classes);
    return gf_generator_run_labeled(g->model, 0, z_host, g->labels_host, n,
                                    out, err);
  }
  gf_tensor zin, y, yh;
  GF_TRY(gf_tensor_view(&zin, g->z.data, GF_F32, g->z.device, 2, zs, err));
  zin.device_index = g->z.device_index;
  GF_TRY(gf_tensor_copy(&zin, &zh, err));
  if (g->cfg.num_classes > 0) { /* class-balanced: image k of class k % K */
    if (!g->labels_host) {
      int64_t mb = g->max_batch;
      g->labels_host = malloc((size_t)mb * sizeof(int32_t));
      if (!g->labels_host) return gf_fail(err, GF_ENOMEM, "eval: out of memory");
      GF_TRY(gf_tensor_init_on(&g->labels, GF_I32, g->ctx.device, g->ctx.device_index, 1,
                               &mb, err));
    }
    for (int i = 0; i < n; i++)
      g->labels_host[i] = (int32_t)((sample0 + i) % g->cfg.num_classes);
    gf_tensor lh, ld;
    int64_t nl = n;
    GF_TRY(gf_tensor_view(&lh, g->labels_host, GF_I32, GF_DEV_CPU, 1, &nl, err));
    GF_TRY(gf_tensor_view(&ld, g->labels.data, GF_I32, g->labels.device, 1, &nl, err));
    ld.device_index = g->labels.device_index;
    GF_TRY(gf_tensor_copy(&ld, &lh, err));
    GF_TRY(gf_net_set_labels(&g->g, &ld, err));
  }
  GF_TRY(gf_net_forward(&g->g, &g->ctx, &zin, GF_MODE_INFER, 0, 0, 0, 0, &y,
                        err));
  int64_t os[2] = {n, (int64_t)g->image_numel};
  if ((size_t)gf_tensor_numel(&y) != (size_t)n * g->image_numel)
    return gf_fail(err, GF_ESTATE, "%s: generator output has %lld values, "
                   "expected %zu", g->label, (long long)gf_tensor_numel(&y),
                   (size_t)n * g->image_numel);
  GF_TRY(gf_tensor_view(&yh, out, GF_F32, GF_DEV_CPU, 2, os, err));
  return gf_tensor_copy(&yh, &y, err);
}

void eval_gen_free(eval_gen *g) {
  if (!g) return;
  gf_generator_unref(g->model);
  if (g->z_ready) gf_tensor_free(&g->z);
  gf_tensor_free(&g->labels);
  free(g->labels_host);
  if (g->net_ready) gf_net_free(&g->g);
  if (g->ctx_ready) gf_ctx_free(&g->ctx);
  memset(g, 0, sizeof *g);
}
