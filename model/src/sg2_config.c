/* sg2_config.c - StyleGAN2 network sizes, their validation and the
 * official presets; see gf/sg2_config.h. The preset table follows the
 * --cfg choices of stylegan2-ada-pytorch's train.py (its cfg_specs and the
 * rules of 'auto'), written from their documented values. */
#include "gf/sg2_config.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

typedef struct preset_row {
  const char *name;
  int batch;         /* -1: auto */
  int mbstd;         /* -1: auto */
  float fmaps;       /* channel_base = fmaps * 32768; -1: auto */
  float lr;          /* -1: auto */
  float gamma;       /* -1: auto */
  float ema_kimg;    /* -1: auto */
  float ema_rampup;  /* 0: none */
  int map_layers;
} preset_row;

static const preset_row kPresets[GF_SG2_N_PRESETS] = {
    [GF_SG2_AUTO] = {"auto", -1, -1, -1.0f, -1.0f, -1.0f, -1.0f, 0.05f, 2},
    [GF_SG2_STYLEGAN2] = {"stylegan2", 32, 4, 1.0f, 0.002f, 10.0f, 10.0f, 0.0f, 8},
    [GF_SG2_PAPER256] = {"paper256", 64, 8, 0.5f, 0.0025f, 1.0f, 20.0f, 0.0f, 8},
    [GF_SG2_PAPER512] = {"paper512", 64, 8, 1.0f, 0.0025f, 0.5f, 20.0f, 0.0f, 8},
    [GF_SG2_PAPER1024] = {"paper1024", 32, 4, 2.0f, 0.002f, 2.0f, 10.0f, 0.0f, 8},
    [GF_SG2_CIFAR] = {"cifar", 64, 32, 1.0f, 0.0025f, 0.01f, 500.0f, 0.05f, 2},
};

const char *gf_sg2_preset_name(gf_sg2_preset p) {
  return p >= 0 && p < GF_SG2_N_PRESETS ? kPresets[p].name : "?";
}

gf_status gf_sg2_preset_parse(const char *s, gf_sg2_preset *out, gf_err *err) {
  for (int i = 0; s && i < GF_SG2_N_PRESETS; i++)
    if (strcmp(s, kPresets[i].name) == 0) {
      *out = (gf_sg2_preset)i;
      return GF_OK;
    }
  return gf_fail(err, GF_EINVAL, "sg2: unknown preset \"%s\" (auto, stylegan2, "
                 "paper256, paper512, paper1024 or cifar)", s ? s : "(null)");
}

static bool pow2_in(int v, int lo, int hi) {
  return v >= lo && v <= hi && (v & (v - 1)) == 0;
}

int gf_sg2_log2_res(const gf_sg2_config *c) {
  int l = 0;
  while ((1 << (l + 1)) <= c->img_resolution) l++;
  return l;
}

int gf_sg2_channels(const gf_sg2_config *c, int res) {
  int ch = c->channel_base / res;
  return ch < c->channel_max ? ch : c->channel_max;
}

int gf_sg2_num_ws(const gf_sg2_config *c) { return 2 * gf_sg2_log2_res(c) - 2; }

gf_status gf_sg2_config_validate(const gf_sg2_config *c, gf_err *err) {
#define SG2_RANGE(f, lo, hi)                                                 \
  if (c->f < (lo) || c->f > (hi))                                            \
    return gf_fail(err, GF_EINVAL, "sg2: " #f ": %d is outside [%d, %d]",    \
                   (int)c->f, (int)(lo), (int)(hi));
  SG2_RANGE(z_dim, 1, 4096)
  SG2_RANGE(w_dim, 1, 4096)
  SG2_RANGE(c_dim, 0, 100000)
  SG2_RANGE(img_channels, 1, 4)
  SG2_RANGE(map_layers, 1, 16)
  SG2_RANGE(d_map_layers, 1, 16)
  SG2_RANGE(channel_max, 1, 4096)
  SG2_RANGE(channel_base, 1, 1 << 24)
  SG2_RANGE(mbstd_group, 1, 1024)
  SG2_RANGE(mbstd_channels, 0, 64)
  SG2_RANGE(d_resnet, 0, 1)
#undef SG2_RANGE
  if (!pow2_in(c->img_resolution, GF_SG2_MIN_NET_RES, GF_SG2_MAX_RES))
    return gf_fail(err, GF_EINVAL, "sg2: img_resolution: %d is not a power of "
                   "two from %d to %d", c->img_resolution, GF_SG2_MIN_NET_RES,
                   GF_SG2_MAX_RES);
  if (c->channel_base / c->img_resolution < 1)
    return gf_fail(err, GF_EINVAL, "sg2: channel_base: %d gives no channels "
                   "at %dx%d (at least %d)", c->channel_base, c->img_resolution,
                   c->img_resolution, c->img_resolution);
  if (!(c->map_lr_mul > 0.0f && c->map_lr_mul <= 1.0f))
    return gf_fail(err, GF_EINVAL, "sg2: map_lr_mul: %g is outside (0, 1]",
                   (double)c->map_lr_mul);
  if (!(c->w_avg_beta >= 0.0f && c->w_avg_beta <= 1.0f))
    return gf_fail(err, GF_EINVAL, "sg2: w_avg_beta: %g is outside [0, 1]",
                   (double)c->w_avg_beta);
  if (!(c->conv_clamp >= 0.0f && isfinite(c->conv_clamp)))
    return gf_fail(err, GF_EINVAL, "sg2: conv_clamp: %g is not a finite "
                   "value >= 0", (double)c->conv_clamp);
  return GF_OK;
}

gf_status gf_sg2_config_preset(gf_sg2_config *c, gf_sg2_recipe *recipe,
                               gf_sg2_preset p, int res, int img_channels,
                               int c_dim, int ranks, gf_err *err) {
  if (p < 0 || p >= GF_SG2_N_PRESETS)
    return gf_fail(err, GF_EINVAL, "sg2: preset %d does not exist", (int)p);
  if (ranks < 1 || ranks > 1 << 16)
    return gf_fail(err, GF_EINVAL, "sg2: ranks: %d is outside [1, 65536]", ranks);
  if (!pow2_in(res, GF_SG2_MIN_RES, GF_SG2_MAX_RES))
    return gf_fail(err, GF_EINVAL, "sg2: image size %d is not a power of two "
                   "from %d to %d", res, GF_SG2_MIN_RES, GF_SG2_MAX_RES);
  const preset_row *r = &kPresets[p];
  int batch = r->batch, mbstd = r->mbstd;
  float fmaps = r->fmaps, lr = r->lr, gamma = r->gamma, ema = r->ema_kimg;
  if (p == GF_SG2_AUTO) {
    /* train.py's 'auto': batch max(min(gpus * min(4096 / res, 32), 64),
     * gpus), group min(batch / gpus, 4), half the channels below 512 px,
     * a smaller learning rate at 1024, gamma 0.0002 res^2 / batch, and an
     * EMA of batch * 10 / 32 kimg. */
    int per = 4096 / res < 32 ? 4096 / res : 32;
    long b = (long)ranks * per;
    batch = (int)(b < 64 ? b : 64);
    if (batch < ranks) batch = ranks;
    mbstd = batch / ranks < 4 ? batch / ranks : 4;
    fmaps = res >= 512 ? 1.0f : 0.5f;
    lr = res >= 1024 ? 0.002f : 0.0025f;
    gamma = (float)(0.0002 * (double)res * (double)res / (double)batch);
    ema = (float)batch * 10.0f / 32.0f;
  }
  memset(c, 0, sizeof *c);
  c->z_dim = 512;
  c->w_dim = 512;
  c->c_dim = c_dim;
  c->img_resolution = res;
  c->img_channels = img_channels;
  c->map_layers = r->map_layers;
  c->d_map_layers = 8;
  c->map_lr_mul = 0.01f;
  c->w_avg_beta = 0.995f;
  c->channel_base = (int)(fmaps * 32768.0f);
  c->channel_max = 512;
  c->conv_clamp = 256.0f;
  c->mbstd_group = mbstd;
  c->mbstd_channels = 1;
  c->d_resnet = p != GF_SG2_CIFAR;
  if (recipe) {
    recipe->batch = batch;
    recipe->lr = lr;
    recipe->r1_gamma = gamma;
    recipe->ema_kimg = ema;
    recipe->ema_rampup = r->ema_rampup;
    recipe->pl_weight = p == GF_SG2_CIFAR ? 0.0f : 2.0f;
    recipe->style_mixing = p == GF_SG2_CIFAR ? 0.0f : 0.9f;
  }
  return gf_sg2_config_validate(c, err);
}
