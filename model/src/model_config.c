/* model_config.c - gf_model_config validation and JSON (cJSON) I/O; see
 * gf/model_config.h. */
#include "gf/model_config.h"

#include <stdlib.h>
#include <string.h>

#include "gf/sg2_config.h"
#include "model_config_internal.h"

const char *gf_arch_name(gf_arch a) {
  switch (a) {
  case GF_ARCH_MLP: return "mlp";
  case GF_ARCH_DCGAN: return "dcgan";
  case GF_ARCH_RESNET: return "resnet";
  case GF_ARCH_STYLEGAN2: return "stylegan2";
  }
  return "?";
}

const char *gf_pixel_norm_name(gf_pixel_norm p) {
  switch (p) {
  case GF_PIXEL_TANH_M1_1: return "tanh_-1_1";
  }
  return "?";
}

gf_status gf_arch_parse(const char *s, gf_arch *out, gf_err *err) {
  if (s && strcmp(s, "mlp") == 0) *out = GF_ARCH_MLP;
  else if (s && strcmp(s, "dcgan") == 0) *out = GF_ARCH_DCGAN;
  else if (s && strcmp(s, "resnet") == 0) *out = GF_ARCH_RESNET;
  else if (s && strcmp(s, "stylegan2") == 0) *out = GF_ARCH_STYLEGAN2;
  else
    return gf_fail(err, GF_EINVAL,
                   "config: architecture: expected \"mlp\", \"dcgan\", \"resnet\" "
                   "or \"stylegan2\", "
                   "got \"%.64s\"",
                   s ? s : "(null)");
  return GF_OK;
}

gf_status gf_pixel_norm_parse(const char *s, gf_pixel_norm *out, gf_err *err) {
  if (s && strcmp(s, "tanh_-1_1") == 0) {
    *out = GF_PIXEL_TANH_M1_1;
    return GF_OK;
  }
  return gf_fail(err, GF_EINVAL,
                 "config: pixel_normalization: expected \"tanh_-1_1\", got \"%.64s\"",
                 s ? s : "(null)");
}

void gf_model_config_default(gf_model_config *c, gf_arch arch) {
  memset(c, 0, sizeof *c);
  c->format_version = GF_MODEL_CONFIG_VERSION;
  c->architecture = arch;
  c->num_classes = 0;
  c->pixel_norm = GF_PIXEL_TANH_M1_1;
  if (arch == GF_ARCH_DCGAN) {
    c->z_dim = 100;
    c->image_height = c->image_width = 64;
    c->image_channels = 3;
    c->ngf = c->ndf = 64;
  } else if (arch == GF_ARCH_RESNET) { /* SNGAN's CIFAR-10 network, at 64 wide */
    c->z_dim = 128;
    c->image_height = c->image_width = 32;
    c->image_channels = 3;
    c->ngf = c->ndf = 64;
  } else if (arch == GF_ARCH_STYLEGAN2) { /* the ADA paper's cifar sizes */
    c->z_dim = 512;
    c->image_height = c->image_width = 32;
    c->image_channels = 3;
    c->ngf = c->ndf = 512;
    c->sg2 = (gf_model_sg2){512, 2, 16384, 512, 256};
  } else {
    /* The paper's network: z 50, first hidden widths 1200 (G) and 256 (D),
     * which the mlp builder fixes; the fields record them. */
    c->z_dim = 50;
    c->image_height = c->image_width = 28;
    c->image_channels = 1;
    c->ngf = 1200;
    c->ndf = 256;
  }
}

static gf_status range(const char *field, int v, int lo, int hi, gf_err *err) {
  if (v < lo || v > hi)
    return gf_fail(err, GF_EINVAL, "config: %s: %d is outside [%d, %d]", field, v, lo, hi);
  return GF_OK;
}

/* The stylegan2 rules (see gf/model_config.h). */
static gf_status sg2_validate(const gf_model_config *c, gf_err *err) {
  gf_status st;
  const gf_model_sg2 *g = &c->sg2;
  if ((st = range("w_dim", g->w_dim, 1, 4096, err)) != GF_OK) return st;
  if ((st = range("mapping_layers", g->mapping_layers, 1, 16, err)) != GF_OK) return st;
  if ((st = range("channel_base", g->channel_base, 1, 1 << 24, err)) != GF_OK) return st;
  if ((st = range("channel_max", g->channel_max, 1, 4096, err)) != GF_OK) return st;
  if ((st = range("conv_clamp", g->conv_clamp, 0, 65536, err)) != GF_OK) return st;
  int s = c->image_height;
  if (s < 8 || s > 1024 || (s & (s - 1)) != 0)
    return gf_fail(err, GF_EINVAL, "config: image_height: stylegan2 supports powers of two "
                   "from 8 to 1024, not %d", s);
  if (c->image_width != s)
    return gf_fail(err, GF_EINVAL, "config: image_width: stylegan2 needs a square image "
                   "(%d != %d)", c->image_width, s);
  if (g->channel_base / s < 1)
    return gf_fail(err, GF_EINVAL, "config: channel_base: %d gives no channels at %dx%d",
                   g->channel_base, s, s);
  if (c->ngf != g->channel_max || c->ndf != g->channel_max)
    return gf_fail(err, GF_EINVAL, "config: ngf: a stylegan2 config has ngf = ndf = "
                   "channel_max (%d), not %d and %d", g->channel_max, c->ngf, c->ndf);
  if (c->spectral_norm)
    return gf_fail(err, GF_EINVAL, "config: spectral_norm: not a stylegan2 option");
  return GF_OK;
}

gf_status gf_model_config_sg2(const gf_model_config *c, gf_sg2_config *out, gf_err *err) {
  if (c->architecture != GF_ARCH_STYLEGAN2)
    return gf_fail(err, GF_EINVAL, "config: architecture: %s is not stylegan2",
                   gf_arch_name(c->architecture));
  GF_TRY(gf_model_config_validate(c, err));
  gf_sg2_config g;
  memset(&g, 0, sizeof g);
  g.z_dim = c->z_dim;
  g.w_dim = c->sg2.w_dim;
  g.c_dim = c->num_classes;
  g.img_resolution = c->image_height;
  g.img_channels = c->image_channels;
  g.map_layers = c->sg2.mapping_layers;
  g.d_map_layers = 8;
  g.map_lr_mul = 0.01f;
  g.w_avg_beta = 0.995f;
  g.channel_base = c->sg2.channel_base;
  g.channel_max = c->sg2.channel_max;
  g.conv_clamp = (float)c->sg2.conv_clamp;
  g.mbstd_group = 4;
  g.mbstd_channels = 1;
  g.d_resnet = 1;
  GF_TRY(gf_sg2_config_validate(&g, err));
  *out = g;
  return GF_OK;
}

gf_status gf_model_config_validate(const gf_model_config *c, gf_err *err) {
  gf_status st;
  if (c->format_version != GF_MODEL_CONFIG_VERSION)
    return gf_fail(err, c->format_version > GF_MODEL_CONFIG_VERSION ? GF_EUNSUPPORTED : GF_EINVAL,
                   "config: format_version: %d is not the supported version %d",
                   c->format_version, GF_MODEL_CONFIG_VERSION);
  if (c->architecture != GF_ARCH_MLP && c->architecture != GF_ARCH_DCGAN &&
      c->architecture != GF_ARCH_RESNET && c->architecture != GF_ARCH_STYLEGAN2)
    return gf_fail(err, GF_EINVAL, "config: architecture: unknown value %d", (int)c->architecture);
  if (c->pixel_norm != GF_PIXEL_TANH_M1_1)
    return gf_fail(err, GF_EINVAL, "config: pixel_normalization: unknown value %d",
                   (int)c->pixel_norm);
  if ((st = range("z_dim", c->z_dim, 1, 4096, err)) != GF_OK) return st;
  if ((st = range("image_height", c->image_height, 1, 4096, err)) != GF_OK) return st;
  if ((st = range("image_width", c->image_width, 1, 4096, err)) != GF_OK) return st;
  if ((st = range("image_channels", c->image_channels, 1, 4, err)) != GF_OK) return st;
  if ((st = range("num_classes", c->num_classes, 0, 100000, err)) != GF_OK) return st;
  if (c->num_classes == 1)
    return gf_fail(err, GF_EINVAL,
                   "config: num_classes: 1 is not a conditional model (use 0 or >= 2)");
  if ((st = range("ngf", c->ngf, 1, 65536, err)) != GF_OK) return st;
  if ((st = range("ndf", c->ndf, 1, 65536, err)) != GF_OK) return st;
  if ((st = range("spectral_norm", c->spectral_norm, 0, 1, err)) != GF_OK) return st;
  if (c->architecture == GF_ARCH_STYLEGAN2) return sg2_validate(c, err);
  if (c->sg2.w_dim || c->sg2.mapping_layers || c->sg2.channel_base || c->sg2.channel_max ||
      c->sg2.conv_clamp)
    return gf_fail(err, GF_EINVAL, "config: w_dim: only a stylegan2 config has the "
                   "stylegan2 sizes");
  if (c->architecture != GF_ARCH_MLP) {
    const char *a = gf_arch_name(c->architecture);
    int s = c->image_height;
    if (s != 28 && s != 32 && s != 64)
      return gf_fail(err, GF_EINVAL, "config: image_height: %s supports 28, 32 or 64, not %d", a,
                     s);
    if (c->image_width != s)
      return gf_fail(err, GF_EINVAL, "config: image_width: %s needs a square image (%d != %d)", a,
                     c->image_width, s);
    if (c->image_channels != 1 && c->image_channels != 3)
      return gf_fail(err, GF_EINVAL, "config: image_channels: %s supports 1 or 3, not %d", a,
                     c->image_channels);
  }
  return GF_OK;
}

cJSON *gf_model_config_to_cjson(const gf_model_config *c) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  int ok = cJSON_AddNumberToObject(o, "format_version", c->format_version) &&
           cJSON_AddStringToObject(o, "architecture", gf_arch_name(c->architecture)) &&
           cJSON_AddNumberToObject(o, "z_dim", c->z_dim) &&
           cJSON_AddNumberToObject(o, "image_height", c->image_height) &&
           cJSON_AddNumberToObject(o, "image_width", c->image_width) &&
           cJSON_AddNumberToObject(o, "image_channels", c->image_channels) &&
           cJSON_AddNumberToObject(o, "num_classes", c->num_classes) &&
           cJSON_AddNumberToObject(o, "ngf", c->ngf) &&
           cJSON_AddNumberToObject(o, "ndf", c->ndf) &&
           cJSON_AddStringToObject(o, "pixel_normalization", gf_pixel_norm_name(c->pixel_norm));
  /* Only when set: configs without it read and print as before. */
  if (ok && c->spectral_norm) ok = cJSON_AddTrueToObject(o, "spectral_norm") != NULL;
  if (ok && c->architecture == GF_ARCH_STYLEGAN2)
    ok = cJSON_AddNumberToObject(o, "w_dim", c->sg2.w_dim) &&
         cJSON_AddNumberToObject(o, "mapping_layers", c->sg2.mapping_layers) &&
         cJSON_AddNumberToObject(o, "channel_base", c->sg2.channel_base) &&
         cJSON_AddNumberToObject(o, "channel_max", c->sg2.channel_max) &&
         cJSON_AddNumberToObject(o, "conv_clamp", c->sg2.conv_clamp);
  if (!ok) {
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

/* The member `name` of obj; GF_EINVAL naming it when absent or repeated. */
static gf_status member(const cJSON *obj, const char *name, const cJSON **out, gf_err *err) {
  *out = NULL;
  for (const cJSON *c = obj->child; c; c = c->next) {
    if (!c->string || strcmp(c->string, name) != 0) continue;
    if (*out) return gf_fail(err, GF_EINVAL, "config: %s: given more than once", name);
    *out = c;
  }
  if (!*out) return gf_fail(err, GF_EINVAL, "config: %s: missing", name);
  return GF_OK;
}

static gf_status get_int(const cJSON *obj, const char *name, int *out, gf_err *err) {
  const cJSON *v;
  gf_status st = member(obj, name, &v, err);
  if (st != GF_OK) return st;
  if (!cJSON_IsNumber(v))
    return gf_fail(err, GF_EINVAL, "config: %s: expected an integer", name);
  double d = v->valuedouble;
  if (!(d >= -1e9 && d <= 1e9) || (double)(int)d != d)
    return gf_fail(err, GF_EINVAL, "config: %s: expected an integer, got %g", name, d);
  *out = (int)d;
  return GF_OK;
}

static gf_status get_str(const cJSON *obj, const char *name, const char **out, gf_err *err) {
  const cJSON *v;
  gf_status st = member(obj, name, &v, err);
  if (st != GF_OK) return st;
  if (!cJSON_IsString(v) || !v->valuestring)
    return gf_fail(err, GF_EINVAL, "config: %s: expected a string", name);
  *out = v->valuestring;
  return GF_OK;
}

gf_status gf_model_config_from_cjson(const cJSON *obj, gf_model_config *out, gf_err *err) {
  if (!cJSON_IsObject(obj)) return gf_fail(err, GF_EINVAL, "config: not a JSON object");
  gf_model_config c;
  memset(&c, 0, sizeof c);
  const char *arch = NULL, *norm = NULL;
  gf_status st;
  if ((st = get_int(obj, "format_version", &c.format_version, err)) != GF_OK) return st;
  if (c.format_version != GF_MODEL_CONFIG_VERSION) return gf_model_config_validate(&c, err);
  if ((st = get_str(obj, "architecture", &arch, err)) != GF_OK) return st;
  if ((st = gf_arch_parse(arch, &c.architecture, err)) != GF_OK) return st;
  if ((st = get_int(obj, "z_dim", &c.z_dim, err)) != GF_OK) return st;
  if ((st = get_int(obj, "image_height", &c.image_height, err)) != GF_OK) return st;
  if ((st = get_int(obj, "image_width", &c.image_width, err)) != GF_OK) return st;
  if ((st = get_int(obj, "image_channels", &c.image_channels, err)) != GF_OK) return st;
  if ((st = get_int(obj, "num_classes", &c.num_classes, err)) != GF_OK) return st;
  if ((st = get_int(obj, "ngf", &c.ngf, err)) != GF_OK) return st;
  if ((st = get_int(obj, "ndf", &c.ndf, err)) != GF_OK) return st;
  if ((st = get_str(obj, "pixel_normalization", &norm, err)) != GF_OK) return st;
  if ((st = gf_pixel_norm_parse(norm, &c.pixel_norm, err)) != GF_OK) return st;
  const cJSON *sn = NULL; /* optional */
  for (const cJSON *m = obj->child; m; m = m->next) {
    if (!m->string || strcmp(m->string, "spectral_norm") != 0) continue;
    if (sn) return gf_fail(err, GF_EINVAL, "config: spectral_norm: given more than once");
    sn = m;
  }
  if (sn && !cJSON_IsBool(sn))
    return gf_fail(err, GF_EINVAL, "config: spectral_norm: expected true or false");
  c.spectral_norm = sn && cJSON_IsTrue(sn);
  if (c.architecture == GF_ARCH_STYLEGAN2) {
    if ((st = get_int(obj, "w_dim", &c.sg2.w_dim, err)) != GF_OK) return st;
    if ((st = get_int(obj, "mapping_layers", &c.sg2.mapping_layers, err)) != GF_OK) return st;
    if ((st = get_int(obj, "channel_base", &c.sg2.channel_base, err)) != GF_OK) return st;
    if ((st = get_int(obj, "channel_max", &c.sg2.channel_max, err)) != GF_OK) return st;
    if ((st = get_int(obj, "conv_clamp", &c.sg2.conv_clamp, err)) != GF_OK) return st;
  }
  if ((st = gf_model_config_validate(&c, err)) != GF_OK) return st;
  *out = c;
  return GF_OK;
}

/* Both JSON forms: pretty with a trailing newline (config.json), or one
 * line without spaces (checkpoint metadata). */
static gf_status config_to_json(const gf_model_config *c, int compact, char **out,
                                gf_err *err) {
  *out = NULL;
  gf_status st = gf_model_config_validate(c, err);
  if (st != GF_OK) return st;
  cJSON *o = gf_model_config_to_cjson(c);
  char *text = o ? (compact ? cJSON_PrintUnformatted(o) : cJSON_Print(o)) : NULL;
  cJSON_Delete(o);
  if (!text) return gf_fail(err, GF_ENOMEM, "config: out of memory");
  size_t n = strlen(text);
  /* Re-allocate with plain malloc so the caller frees with free() even if
   * cJSON's allocator hooks were changed; add the trailing newline. */
  char *s = malloc(n + 2);
  if (!s) {
    cJSON_free(text);
    return gf_fail(err, GF_ENOMEM, "config: out of memory");
  }
  memcpy(s, text, n);
  if (!compact) s[n++] = '\n';
  s[n] = '\0';
  cJSON_free(text);
  *out = s;
  return GF_OK;
}

gf_status gf_model_config_to_json(const gf_model_config *c, char **out, gf_err *err) {
  return config_to_json(c, 0, out, err);
}

gf_status gf_model_config_to_json_compact(const gf_model_config *c, char **out,
                                          gf_err *err) {
  return config_to_json(c, 1, out, err);
}

gf_status gf_model_config_from_json(const char *json, size_t len, gf_model_config *out,
                                    gf_err *err) {
  if (!json) return gf_fail(err, GF_EINVAL, "config: NULL JSON text");
  /* Parse a terminated private copy so cJSON never looks past len. */
  char *text = malloc(len + 1);
  if (!text) return gf_fail(err, GF_ENOMEM, "config: out of memory");
  memcpy(text, json, len);
  text[len] = '\0';
  const char *end = NULL;
  cJSON *o = cJSON_ParseWithLengthOpts(text, len, &end, 0);
  gf_status st = GF_OK;
  if (!o) {
    st = gf_fail(err, GF_EFORMAT, "config: not valid JSON (near byte %zu)",
                 end && end >= text ? (size_t)(end - text) : (size_t)0);
  } else {
    for (const char *p = end; p < text + len; p++) {
      if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
        st = gf_fail(err, GF_EFORMAT, "config: trailing bytes after the JSON object");
        break;
      }
    }
  }
  if (st == GF_OK) st = gf_model_config_from_cjson(o, out, err);
  cJSON_Delete(o);
  free(text);
  return st;
}

int gf_model_config_equal(const gf_model_config *a, const gf_model_config *b) {
  return a->format_version == b->format_version && a->architecture == b->architecture &&
         a->z_dim == b->z_dim && a->image_height == b->image_height &&
         a->image_width == b->image_width && a->image_channels == b->image_channels &&
         a->num_classes == b->num_classes && a->ngf == b->ngf && a->ndf == b->ndf &&
         a->pixel_norm == b->pixel_norm && !a->spectral_norm == !b->spectral_norm &&
         memcmp(&a->sg2, &b->sg2, sizeof a->sg2) == 0;
}
