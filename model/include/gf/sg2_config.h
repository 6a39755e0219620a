/* sg2_config.h - the sizes of a StyleGAN2 generator and discriminator
 * (Karras et al. 2020, "Analyzing and Improving the Image Quality of
 * StyleGAN"; the networks of StyleGAN2-ADA), and the official training
 * configurations (`--cfg`) that choose them.
 *
 * Channel counts follow the official rule: a block at resolution r has
 * min(channel_base / r, channel_max) channels. G's mapping network turns z
 * into w (map_layers fully connected layers, learning-rate multiplier
 * map_lr_mul), broadcast to num_ws copies: one per synthesis layer (two per
 * block from 8x8 up, one at 4x4) plus one for the last toRGB. This file
 * only describes the networks; building them is sg2 networks' job. */
#ifndef GF_SG2_CONFIG_H
#define GF_SG2_CONFIG_H

#include "gf/status.h"

#define GF_SG2_MIN_RES 32   /* image sides supported: powers of two ... */
#define GF_SG2_MAX_RES 1024 /* ... from GF_SG2_MIN_RES to this */
/* The networks themselves take sides from 8 (an imported snapshot's; the
 * presets, training's, start at GF_SG2_MIN_RES). */
#define GF_SG2_MIN_NET_RES 8

typedef enum gf_sg2_preset {
  GF_SG2_AUTO,      /* "auto": sizes from the resolution (and the batch) */
  GF_SG2_STYLEGAN2, /* "stylegan2": the original StyleGAN2 config F */
  GF_SG2_PAPER256,  /* "paper256", "paper512", "paper1024": the ADA   */
  GF_SG2_PAPER512,  /*   paper's settings at those resolutions        */
  GF_SG2_PAPER1024,
  GF_SG2_CIFAR,     /* "cifar": the ADA paper's CIFAR-10 setting */
  GF_SG2_N_PRESETS,
} gf_sg2_preset;

typedef struct gf_sg2_config {
  int z_dim;          /* latent size (512) */
  int w_dim;          /* intermediate latent size (512) */
  int c_dim;          /* classes of a conditional model (one-hot c); 0 */
  int img_resolution; /* H = W, a power of two in [32, 1024] */
  int img_channels;   /* 1 or 3 */
  int map_layers;     /* mapping depth (8; 2 in auto and cifar) */
  int d_map_layers;   /* depth of D's mapping of c (conditional D only):
                         the official Discriminator's MappingNetwork
                         default, 8, in every preset (train.py passes it
                         no num_layers) */
  float map_lr_mul;   /* the mapping layers' learning-rate multiplier, 0.01 */
  float w_avg_beta;   /* decay of the tracked average of w, 0.995 */
  int channel_base;   /* channels at resolution r: */
  int channel_max;    /*   min(channel_base / r, channel_max) */
  float conv_clamp;   /* clamp of conv outputs, +-conv_clamp; 0: none */
  int mbstd_group;    /* D's minibatch-stddev group size (4) */
  int mbstd_channels; /* its features (1) */
  int d_resnet;       /* 1: D's blocks have residual skips ('resnet');
                         0: plain ('orig', the cifar config) */
} gf_sg2_config;

/* Training settings that come with a preset (train.py's cfg_specs). */
typedef struct gf_sg2_recipe {
  int batch;          /* minibatch over all ranks */
  float lr;           /* Adam's learning rate, G and D */
  float r1_gamma;     /* R1 weight */
  float ema_kimg;     /* G's EMA half-life in thousands of images */
  float ema_rampup;   /* EMA ramp-up ratio; 0: none */
  float pl_weight;    /* path-length regulariser weight (2; cifar 0) */
  float style_mixing; /* style-mixing probability (0.9; cifar 0) */
} gf_sg2_recipe;

/* Static names ("auto", ...) and their parse (GF_EINVAL naming the choices). */
const char *gf_sg2_preset_name(gf_sg2_preset p);
gf_status gf_sg2_preset_parse(const char *s, gf_sg2_preset *out, gf_err *err);

/* The config and recipe of preset p at resolution res with img_channels
 * channels, c_dim classes, for `ranks` data-parallel ranks (auto's batch
 * depends on it, as the official code's on the GPU count). The result is
 * validated (GF_EINVAL for a resolution outside the supported ones, etc.).
 * recipe may be NULL. */
gf_status gf_sg2_config_preset(gf_sg2_config *c, gf_sg2_recipe *recipe,
                               gf_sg2_preset p, int res, int img_channels,
                               int c_dim, int ranks, gf_err *err);

/* Checks every field; the message names it ("sg2: channel_base: ..."). */
gf_status gf_sg2_config_validate(const gf_sg2_config *c, gf_err *err);

/* Channels of a block at resolution res (a power of two, 4..img_resolution). */
int gf_sg2_channels(const gf_sg2_config *c, int res);
/* log2 of the resolution; the synthesis blocks are 4, 8, ... img_resolution. */
int gf_sg2_log2_res(const gf_sg2_config *c);
/* The number of w vectors synthesis reads: 2 log2(res) - 2. */
int gf_sg2_num_ws(const gf_sg2_config *c);

#endif
