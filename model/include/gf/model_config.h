/* model_config.h - the model config (config.json of DESIGN §4.3, also
 * embedded in checkpoints and in the MLmodel ganflow flavor): which network,
 * its sizes, and how generator outputs map to pixels.
 *
 * JSON form (all fields required, unknown fields ignored):
 *   {"format_version": 1, "architecture": "dcgan", "z_dim": 100,
 *    "image_height": 64, "image_width": 64, "image_channels": 3,
 *    "num_classes": 0, "ngf": 64, "ndf": 64,
 *    "pixel_normalization": "tanh_-1_1"}
 * plus the optional "spectral_norm": true (absent means false).
 * Architecture "stylegan2" (an imported StyleGAN2-ADA generator) adds five
 * integer fields, required there and neither read nor written for the
 * other architectures (so their files are as before):
 *   "w_dim", "mapping_layers", "channel_base", "channel_max",
 *   "conv_clamp" (0: None)
 * and takes image_height = image_width = img_resolution (a power of two,
 * 8..1024), image_channels = img_channels, num_classes = c_dim and
 * ngf = ndf = channel_max. The mapping's learning-rate multiplier is the
 * official 0.01 (an import refuses others).
 * Validation errors name the offending field. This file only describes a
 * model; building the network from it is the networks' job. */
#ifndef GF_MODEL_CONFIG_H
#define GF_MODEL_CONFIG_H

#include "gf/status.h"

#define GF_MODEL_CONFIG_VERSION 1 /* the only format_version understood */

typedef enum gf_arch {
  GF_ARCH_MLP,   /* "mlp": fully connected G and D */
  GF_ARCH_DCGAN, /* "dcgan": (transposed) convolutional G and D */
  GF_ARCH_RESNET, /* "resnet": SNGAN/BigGAN residual G and D */
  GF_ARCH_STYLEGAN2, /* "stylegan2": StyleGAN2-ADA's G (mapping +
                        'skip' synthesis, gf/sg2_net.h); inference only */
} gf_arch;

typedef enum gf_pixel_norm {
  GF_PIXEL_TANH_M1_1, /* "tanh_-1_1": G outputs x in [-1,1], pixel = (x+1)/2*255 */
} gf_pixel_norm;

/* The StyleGAN2 sizes beyond the common fields (see above). */
typedef struct gf_model_sg2 {
  int w_dim;          /* 1..4096 */
  int mapping_layers; /* 1..16 */
  int channel_base;   /* 1..2^24 */
  int channel_max;    /* 1..4096 */
  int conv_clamp;     /* 0 (None) ..65536 */
} gf_model_sg2;

typedef struct gf_model_config {
  int format_version;        /* == GF_MODEL_CONFIG_VERSION */
  gf_arch architecture;
  int z_dim;                 /* latent size, 1..4096 */
  int image_height;          /* pixels, 1..4096; dcgan: 28, 32 or 64 */
  int image_width;           /* pixels, 1..4096; dcgan: == image_height */
  int image_channels;        /* 1..4; dcgan: 1 or 3 */
  int num_classes;           /* 0 = unconditional, else 2..100000 */
  int ngf;                   /* generator feature width, 1..65536 */
  int ndf;                   /* discriminator feature width, 1..65536 */
  gf_pixel_norm pixel_norm;
  int spectral_norm;         /* 0 or 1 (JSON "spectral_norm": true, optional,
                                written only when set): the discriminator's
                                weights are spectrally normalized and it has
                                no batch norm (SNGAN); G is unchanged */
  gf_model_sg2 sg2;          /* stylegan2 only; all 0 otherwise */
} gf_model_config;

/* Static names ("dcgan", "tanh_-1_1"); "?" when out of range. */
const char *gf_arch_name(gf_arch a);
const char *gf_pixel_norm_name(gf_pixel_norm p);
gf_status gf_arch_parse(const char *s, gf_arch *out, gf_err *err);
gf_status gf_pixel_norm_parse(const char *s, gf_pixel_norm *out, gf_err *err);

/* A valid config of the given architecture with the papers' sizes
 * (dcgan: 64x64x3, z 100, ngf = ndf = 64; mlp: the paper's 28x28x1, z 50,
 * ngf 1200 and ndf 256, the first hidden widths, fixed for mlp). */
void gf_model_config_default(gf_model_config *c, gf_arch arch);

/* Checks every field and the cross-field rules; the message names the
 * field ("config: image_width: ..."). */
gf_status gf_model_config_validate(const gf_model_config *c, gf_err *err);

/* Validates, then writes pretty-printed JSON ending in a newline into a
 * malloc'd NUL-terminated string *out (caller frees with free()). */
gf_status gf_model_config_to_json(const gf_model_config *c, char **out,
                                  gf_err *err);
/* The same as one line without spaces or newline (checkpoint metadata). */
gf_status gf_model_config_to_json_compact(const gf_model_config *c,
                                          char **out, gf_err *err);
/* Parses len bytes of JSON (need not be NUL-terminated) into *out and
 * validates it; *out is untouched on failure. Copies nothing it keeps. */
gf_status gf_model_config_from_json(const char *json, size_t len,
                                    gf_model_config *out, gf_err *err);
/* The gf_sg2_config of a valid stylegan2 config c (the D-only fields at
 * the official defaults); GF_EINVAL for another architecture. */
struct gf_sg2_config;
gf_status gf_model_config_sg2(const gf_model_config *c,
                              struct gf_sg2_config *out, gf_err *err);

/* 1 when every field is equal, else 0. */
int gf_model_config_equal(const gf_model_config *a, const gf_model_config *b);

#endif
