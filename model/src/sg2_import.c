/* sg2_import.c - a snapshot's G_ema as a stylegan2 model config and G; see
 * gf/sg2_import.h. */
#include "gf/sg2_import.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Kwargs that do not change what G computes in fp32 inference. */
static gf_status extra_ok(const gf_sg2_snap_kv *kv, gf_err *err) {
  const char *k = kv->key, *v = kv->value;
  if (strcmp(k, "synthesis_kwargs.fp16_channels_last") == 0 ||
      strcmp(k, "mapping_kwargs.w_avg_beta") == 0) /* training only */
    return GF_OK;
  if (strcmp(k, "mapping_kwargs.lr_multiplier") == 0) {
    char *end;
    double d = strtod(v, &end);
    if (*end == '\0' && end != v && d == 0.01) return GF_OK;
    return gf_fail(err, GF_EUNSUPPORTED, "G_ema: mapping lr_multiplier %.32s "
                   "(ganflow's stylegan2 models have 0.01)", v);
  }
  if ((strcmp(k, "mapping_kwargs") == 0 || strcmp(k, "synthesis_kwargs") == 0) &&
      strcmp(v, "{}") == 0)
    return GF_OK;
  return gf_fail(err, GF_EUNSUPPORTED, "G_ema: constructor argument %.64s = "
                 "%.32s is not one ganflow can represent", k, v);
}

static int fits_int(int64_t v, int lo, int hi) { return v >= lo && v <= hi; }

gf_status gf_sg2_import_config(const gf_sg2_snap_net *g, gf_model_config *out,
                               gf_err *err) {
  if (!g->present)
    return gf_fail(err, GF_EFORMAT, "the snapshot has no G_ema");
  if (strcmp(g->class_name, "Generator") != 0)
    return gf_fail(err, GF_EUNSUPPORTED, "G_ema: class %.64s, not the "
                   "official Generator", g->class_name);
  if (strcmp(g->architecture, "skip") != 0)
    return gf_fail(err, GF_EUNSUPPORTED, "G_ema: synthesis architecture "
                   "'%.16s': ganflow has 'skip' only", g->architecture);
  for (size_t i = 0; i < g->n_extra; i++) GF_TRY(extra_ok(&g->extra[i], err));
  if (g->c_dim == 1)
    return gf_fail(err, GF_EUNSUPPORTED, "G_ema: c_dim 1 (a conditional "
                   "ganflow model has 2 classes or more)");
  const struct { const char *name; int64_t v; int lo, hi; } f[] = {
      {"z_dim", g->z_dim, 1, 4096},
      {"w_dim", g->w_dim, 1, 4096},
      {"c_dim", g->c_dim, 0, 100000},
      {"img_resolution", g->img_resolution, 8, 1024},
      {"img_channels", g->img_channels, 1, 4},
      {"mapping num_layers", g->mapping_layers, 1, 16},
      {"channel_base", g->channel_base, 1, 1 << 24},
      {"channel_max", g->channel_max, 1, 4096},
      {"conv_clamp", g->conv_clamp, -1, 65536},
  };
  for (size_t i = 0; i < sizeof f / sizeof *f; i++)
    if (!fits_int(f[i].v, f[i].lo, f[i].hi))
      return gf_fail(err, GF_EUNSUPPORTED, "G_ema: %s %lld is outside "
                     "[%d, %d]", f[i].name, (long long)f[i].v, f[i].lo,
                     f[i].hi);
  gf_model_config c;
  gf_model_config_default(&c, GF_ARCH_STYLEGAN2);
  c.z_dim = (int)g->z_dim;
  c.num_classes = (int)g->c_dim;
  c.image_height = c.image_width = (int)g->img_resolution;
  c.image_channels = (int)g->img_channels;
  c.sg2.w_dim = (int)g->w_dim;
  c.sg2.mapping_layers = (int)g->mapping_layers;
  c.sg2.channel_base = (int)g->channel_base;
  c.sg2.channel_max = (int)g->channel_max;
  c.sg2.conv_clamp = g->conv_clamp < 0 ? 0 : (int)g->conv_clamp;
  c.ngf = c.ndf = c.sg2.channel_max;
  gf_err inner = {GF_OK, ""};
  if (gf_model_config_validate(&c, &inner) != GF_OK)
    return gf_fail(err, GF_EUNSUPPORTED, "G_ema: %s", inner.msg);
  *out = c;
  return GF_OK;
}

/* 1 when t is the official resample filter: outer([1,3,3,1]) / 64. */
static int official_filter(const gf_sg2_snap_tensor *t) {
  static const float k[4] = {1, 3, 3, 1};
  if (t->ndim != 2 || t->shape[0] != 4 || t->shape[1] != 4) return 0;
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++)
      if (fabsf(t->data[i * 4 + j] - k[i] * k[j] / 64.0f) > 1e-7f) return 0;
  return 1;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

gf_status gf_sg2_import_net(const gf_sg2_snap_net *g,
                            const gf_model_config *cfg, gf_ctx *ctx,
                            int max_batch, gf_sg2_net *net, gf_err *err) {
  gf_sg2_config sc;
  GF_TRY(gf_model_config_sg2(cfg, &sc, err));
  GF_TRY(gf_sg2_net_init(net, ctx, &sc, GF_SG2_G, max_batch, false, err));
  int loaded = 0;
  for (size_t i = 0; i < g->n_tensors; i++) {
    const gf_sg2_snap_tensor *t = &g->tensors[i];
    if (ends_with(t->name, "resample_filter")) {
      if (!official_filter(t))
        return gf_fail(err, GF_EUNSUPPORTED, "G_ema: %.96s is not the "
                       "official [1, 3, 3, 1] filter", t->name);
      continue;
    }
    if (t->ndim > GF_MAX_DIMS)
      return gf_fail(err, GF_EUNSUPPORTED, "G_ema: %.96s has %d dims",
                     t->name, t->ndim);
    int64_t one = 1;
    gf_tensor src;
    GF_TRY(gf_tensor_view(&src, t->data, GF_F32, GF_DEV_CPU,
                          t->ndim ? t->ndim : 1, t->ndim ? t->shape : &one,
                          err));
    gf_err inner = {GF_OK, ""};
    gf_status st = gf_sg2_load(net, t->name, &src, &inner);
    if (st != GF_OK)
      return gf_fail(err, GF_EUNSUPPORTED, "G_ema: %s", inner.msg);
    loaded++;
  }
  if (loaded != net->n_tensors) {
    /* the first tensor of the net the snapshot lacks */
    for (int i = 0; i < net->n_tensors; i++)
      if (!gf_sg2_snap_find(g, net->tensors[i].name))
        return gf_fail(err, GF_EUNSUPPORTED, "G_ema: no tensor %.96s",
                       net->tensors[i].name);
    return gf_fail(err, GF_EUNSUPPORTED, "G_ema: %d tensors, the generator "
                   "has %d", loaded, net->n_tensors);
  }
  return GF_OK;
}

#define IMPORT_MAX_META 16

gf_status gf_sg2_import_dir(const gf_sg2_snapshot *s, const char *dir,
                            const gf_mlmodel_info *info, const gf_st_kv *meta,
                            size_t n_meta, gf_model_config *cfg_out,
                            gf_err *err) {
  if (n_meta > IMPORT_MAX_META - 1)
    return gf_fail(err, GF_EINVAL, "import: %zu metadata entries (at most "
                   "%d)", n_meta, IMPORT_MAX_META - 1);
  gf_model_config cfg;
  GF_TRY(gf_sg2_import_config(&s->G_ema, &cfg, err));
  gf_ctx ctx;
  gf_ctx_config cc = {GF_BACKEND_CPU, 1, 0, GF_CPU_LAYOUT_AUTO};
  GF_TRY(gf_ctx_init(&ctx, &cc, err));
  gf_sg2_net net;
  memset(&net, 0, sizeof net);
  gf_status st = gf_sg2_import_net(&s->G_ema, &cfg, &ctx, 1, &net, err);
  gf_st_tensor_desc desc[GF_SG2_MAX_TENSORS];
  for (int i = 0; st == GF_OK && i < net.n_tensors; i++) {
    const gf_param *p = &net.tensors[i];
    desc[i] = (gf_st_tensor_desc){p->name, GF_ST_F32, p->value.ndim,
                                  p->value.shape, p->value.data};
  }
  gf_st_kv all[IMPORT_MAX_META];
  for (size_t i = 0; i < n_meta; i++) all[i] = meta[i];
  all[n_meta] = (gf_st_kv){"ganflow.generator", "ema"};
  if (st == GF_OK)
    st = gf_mlmodel_write(dir, &cfg, desc, (size_t)net.n_tensors, all,
                          n_meta + 1, info, NULL, err);
  gf_sg2_net_free(&net);
  gf_ctx_free(&ctx);
  if (st == GF_OK && cfg_out) *cfg_out = cfg;
  return st;
}
