/* mlmodel_write.c - writes the MLflow model directory (MLmodel YAML via the
 * libyaml emitter, generator.safetensors, config.json, and through
 * mlmodel_pyfunc.c the python_function flavor's files); see gf/mlmodel.h. */
#include "gf/mlmodel.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <yaml.h>

#include "gf/atomic_file.h"
#include "gf/class_name.h"
#include "gf/fs.h"
#include "gf/strbuf.h"
#include "gf/text.h"
#include "gf/uuid.h"
#include "mlmodel_classes.h"
#include "mlmodel_pyfunc.h"

/* ---- small helpers ------------------------------------------------------ */

static gf_status utc_now(char out[32], gf_err *err) {
  struct timespec ts;
  struct tm tm;
  if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || !gmtime_r(&ts.tv_sec, &tm))
    return gf_fail(err, GF_EIO, "MLmodel: cannot read the clock");
  size_t k = strftime(out, 24, "%Y-%m-%d %H:%M:%S", &tm);
  if (k != 19) return gf_fail(err, GF_EIO, "MLmodel: clock outside years 1000-9999");
  return gf_format(out + k, 32 - k, err, "MLmodel utc_time_created", ".%06u",
                   (unsigned)(ts.tv_nsec / 1000) % 1000000u);
}

/* ---- YAML emission ------------------------------------------------------ */

typedef struct emit {
  yaml_emitter_t em;
  gf_strbuf out;
  int failed; /* latched on the first emitter error */
} emit;

static int write_handler(void *data, unsigned char *buffer, size_t size) {
  gf_strbuf *b = data;
  gf_strbuf_append(b, buffer, size);
  return !b->failed;
}

static void emit_event(emit *e, yaml_event_t *ev, int made) {
  if (!made) {
    e->failed = 1;
    return;
  }
  if (e->failed) {
    yaml_event_delete(ev);
    return;
  }
  if (!yaml_emitter_emit(&e->em, ev)) e->failed = 1; /* ev freed either way */
}

/* 1 when s can be written unquoted and still reads back as a string under
 * YAML 1.1 resolution (PyYAML, which MLflow uses): starts with a letter,
 * only [A-Za-z0-9._/-], not a bool/null word. */
static int plain_safe(const char *s) {
  static const char *const words[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"};
  if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return 0;
  for (const char *p = s; *p; p++) {
    char c = *p;
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
          c == '.' || c == '_' || c == '-' || c == '/'))
      return 0;
  }
  for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
    if (strcasecmp(s, words[i]) == 0) return 0;
  return 1;
}

static void scalar(emit *e, const char *s, int is_number) {
  yaml_event_t ev;
  yaml_scalar_style_t style = is_number || plain_safe(s) ? YAML_PLAIN_SCALAR_STYLE
                                                         : YAML_DOUBLE_QUOTED_SCALAR_STYLE;
  int made = yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1,
                                          1, style);
  emit_event(e, &ev, made);
}

static void map_start(emit *e) {
  yaml_event_t ev;
  emit_event(e, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
                                                         YAML_BLOCK_MAPPING_STYLE));
}

static void map_end(emit *e) {
  yaml_event_t ev;
  emit_event(e, &ev, yaml_mapping_end_event_initialize(&ev));
}

/* A block sequence of strings (flavors.ganflow.config.class_names). */
static void str_seq(emit *e, const char *const *v, int n) {
  yaml_event_t ev;
  emit_event(e, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
                                                          YAML_BLOCK_SEQUENCE_STYLE));
  for (int i = 0; i < n; i++) scalar(e, v[i], 0);
  emit_event(e, &ev, yaml_sequence_end_event_initialize(&ev));
}

/* A scalar in YAML's single-quoted style, as PyYAML writes MLflow's JSON
 * signature strings. */
static void scalar_quoted(emit *e, const char *s) {
  yaml_event_t ev;
  int made = yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1,
                                          1, YAML_SINGLE_QUOTED_SCALAR_STYLE);
  emit_event(e, &ev, made);
}

static void kv_str(emit *e, const char *k, const char *v) {
  scalar(e, k, 0);
  scalar(e, v, 0);
}

static void kv_int(emit *e, const char *k, int v) {
  char num[16]; /* an int and its sign: 12 bytes at most */
  GF_FORMAT_FITS(num, sizeof num, "%d", v);
  scalar(e, k, 0);
  scalar(e, num, 1);
}

/* One entry of flavors.ganflow.files. */
typedef struct listed {
  const char *name;
  const char *sha256;
} listed;

static int listed_cmp(const void *a, const void *b) {
  return strcmp(((const listed *)a)->name, ((const listed *)b)->name);
}

/* flavors.python_function: MLflow's loader_module convention (as
 * mlflow.pyfunc.add_to_model writes it), the loader under code/. */
static void pyfunc_flavor(emit *e, const char *python) {
  scalar(e, "python_function", 0);
  map_start(e);
  kv_str(e, "code", "code");
  kv_str(e, "data", GF_MLMODEL_GENERATOR);
  scalar(e, "env", 0);
  map_start(e);
  kv_str(e, "conda", "conda.yaml");
  kv_str(e, "virtualenv", "python_env.yaml");
  map_end(e);
  kv_str(e, "loader_module", GF_MLMODEL_PYFUNC_MODULE);
  kv_str(e, "python_version", python);
  map_end(e);
}

/* Builds the MLmodel text into *out (malloc'd, caller frees); files holds
 * n_files entries (sorted here). */
static gf_status mlmodel_yaml(const gf_model_config *c, const gf_mlmodel_info *info,
                              const char *python, const char *uuid, const char *when,
                              listed *files, size_t n_files, char **out, size_t *out_len,
                              gf_err *err) {
  /* The signature in MLflow's own form (ModelSignature.to_dict): JSON
   * strings. Inputs: columns, each row a seed or a latent z (both
   * optional; see gf/mlmodel.h). Output: the generator's float32 images in
   * [-1, 1], NCHW, as V2 infer and /invocations answer them. */
  const char *sig_in = c->num_classes > 0 ? GF_MLMODEL_SIG_INPUTS_COND : GF_MLMODEL_SIG_INPUTS;
  char sig_out[200];
  GF_TRY(gf_format(sig_out, sizeof sig_out, err, "MLmodel output signature",
                   "[{\"name\": \"image\", \"type\": \"tensor\", \"tensor-spec\": "
                   "{\"dtype\": \"float32\", \"shape\": [-1, %d, %d, %d]}}]",
                   c->image_channels, c->image_height, c->image_width));
  emit e;
  e.failed = 0;
  gf_strbuf_init(&e.out);
  if (!yaml_emitter_initialize(&e.em)) return gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
  yaml_emitter_set_output(&e.em, write_handler, &e.out);
  yaml_emitter_set_unicode(&e.em, 1);
  yaml_emitter_set_width(&e.em, -1);
  yaml_event_t ev;
  emit_event(&e, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
  emit_event(&e, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
  map_start(&e);
  /* Keys in sorted order, as MLflow's own yaml.safe_dump writes them. */
  kv_str(&e, "artifact_path", info->artifact_path);
  scalar(&e, "flavors", 0);
  map_start(&e);
  scalar(&e, GF_MLMODEL_FLAVOR, 0);
  map_start(&e);
  scalar(&e, "config", 0);
  map_start(&e);
  int sg2 = c->architecture == GF_ARCH_STYLEGAN2; /* its sizes, as config.json */
  kv_str(&e, "architecture", gf_arch_name(c->architecture));
  if (sg2) {
    kv_int(&e, "channel_base", c->sg2.channel_base);
    kv_int(&e, "channel_max", c->sg2.channel_max);
  }
  if (info->class_names) {
    scalar(&e, "class_names", 0);
    str_seq(&e, info->class_names, c->num_classes);
  }
  if (sg2) kv_int(&e, "conv_clamp", c->sg2.conv_clamp);
  kv_int(&e, "format_version", c->format_version);
  kv_int(&e, "image_channels", c->image_channels);
  kv_int(&e, "image_height", c->image_height);
  kv_int(&e, "image_width", c->image_width);
  if (sg2) kv_int(&e, "mapping_layers", c->sg2.mapping_layers);
  kv_int(&e, "ndf", c->ndf);
  kv_int(&e, "ngf", c->ngf);
  kv_int(&e, "num_classes", c->num_classes);
  kv_str(&e, "pixel_normalization", gf_pixel_norm_name(c->pixel_norm));
  if (c->spectral_norm) { /* as config.json: only when set */
    scalar(&e, "spectral_norm", 0);
    scalar(&e, "true", 1);
  }
  if (sg2) kv_int(&e, "w_dim", c->sg2.w_dim);
  kv_int(&e, "z_dim", c->z_dim);
  map_end(&e);
  scalar(&e, "files", 0);
  map_start(&e);
  qsort(files, n_files, sizeof *files, listed_cmp);
  for (size_t i = 0; i < n_files; i++) {
    scalar(&e, files[i].name, 0);
    map_start(&e);
    kv_str(&e, "sha256", files[i].sha256);
    map_end(&e);
  }
  map_end(&e);
  kv_str(&e, "ganflow_version", info->ganflow_version);
  map_end(&e);
  pyfunc_flavor(&e, python);
  map_end(&e);
  kv_str(&e, "mlflow_version", info->mlflow_version);
  kv_str(&e, "model_uuid", uuid);
  if (info->run_id) kv_str(&e, "run_id", info->run_id);
  scalar(&e, "signature", 0);
  map_start(&e);
  scalar(&e, "inputs", 0);
  scalar_quoted(&e, sig_in);
  scalar(&e, "outputs", 0);
  scalar_quoted(&e, sig_out);
  scalar(&e, "params", 0);
  scalar(&e, "null", 1);
  map_end(&e);
  kv_str(&e, "utc_time_created", when);
  map_end(&e);
  emit_event(&e, &ev, yaml_document_end_event_initialize(&ev, 1));
  emit_event(&e, &ev, yaml_stream_end_event_initialize(&ev));
  if (!e.failed && !yaml_emitter_flush(&e.em)) e.failed = 1;
  gf_status st = GF_OK;
  if (e.failed || e.out.failed)
    st = gf_fail(err, e.out.failed ? GF_ENOMEM : GF_EINVAL, "MLmodel: YAML emitter: %s",
                 e.em.problem ? e.em.problem : "out of memory");
  yaml_emitter_delete(&e.em);
  if (st != GF_OK) {
    gf_strbuf_free(&e.out);
    return st;
  }
  *out = e.out.data;
  *out_len = e.out.len;
  return GF_OK;
}

/* ---- the directory ------------------------------------------------------ */

static int text_ok(const char *s) {
  if (!s || !*s) return 0;
  for (const char *p = s; *p; p++)
    if ((unsigned char)*p < 0x20) return 0;
  return gf_utf8_valid((const uint8_t *)s, strlen(s));
}

gf_status gf_mlmodel_write(const char *dir, const gf_model_config *cfg,
                           const gf_st_tensor_desc *tensors, size_t n,
                           const gf_st_kv *meta, size_t n_meta,
                           const gf_mlmodel_info *info, char uuid_out[33],
                           gf_err *err) {
  if (!dir || !*dir || !cfg || !info)
    return gf_fail(err, GF_EINVAL, "MLmodel: NULL directory, config or info");
  const char *python = gf_pyfunc_default_python();
  if (!gf_pyfunc_python_ok(python))
    return gf_fail(err, GF_EINVAL, "MLmodel: python_version \"%.32s\" is not a version", python);
  if (!text_ok(info->artifact_path) || !text_ok(info->mlflow_version) ||
      !text_ok(info->ganflow_version) || (info->run_id && !text_ok(info->run_id)))
    return gf_fail(err, GF_EINVAL,
                   "MLmodel: artifact_path, mlflow_version, ganflow_version and run_id must be "
                   "non-empty printable UTF-8");
  gf_status st = gf_model_config_validate(cfg, err);
  if (st != GF_OK) return st;
  if (info->class_names) {
    if (cfg->num_classes <= 0)
      return gf_fail(err, GF_EINVAL, "MLmodel: class_names for a model that is not "
                                     "class-conditional (num_classes 0)");
    if (cfg->num_classes > GF_MLMODEL_MAX_CLASS_NAMES)
      return gf_fail(err, GF_EINVAL, "MLmodel: %d class names (at most %d)", cfg->num_classes,
                     GF_MLMODEL_MAX_CLASS_NAMES);
    if ((st = gf_class_names_check(info->class_names, cfg->num_classes, err)) != GF_OK)
      return st;
  }
  if ((st = gf_mlmodel_mkdir(dir, err)) != GF_OK) return st;
  char *gen_path = gf_path_join_alloc(dir, GF_MLMODEL_GENERATOR);
  char *ml_path = gf_path_join_alloc(dir, GF_MLMODEL_FILE);
  char *cfg_json = NULL, *yaml = NULL;
  size_t yaml_len = 0;
  char gen_sha[GF_SHA256_HEX_LEN + 1], cfg_sha[GF_SHA256_HEX_LEN + 1];
  char uuid[GF_UUID_HEX_LEN + 1], when[32];
  gf_pyfunc_files py;
  if (!gen_path || !ml_path) {
    st = gf_fail(err, GF_ENOMEM, "MLmodel: out of memory");
    goto done;
  }
  if ((st = gf_st_write_file(gen_path, tensors, n, meta, n_meta, GF_ST_DATA_SHA256, err)) != GF_OK)
    goto done;
  if ((st = gf_sha256_file(gen_path, gen_sha, err)) != GF_OK) goto done;
  /* Without names exactly gf_model_config_to_json's text (as before). */
  st = info->class_names ? gf_mlmodel_config_json_with_names(cfg, info->class_names,
                                                             cfg->num_classes, &cfg_json, err)
                         : gf_model_config_to_json(cfg, &cfg_json, err);
  if (st != GF_OK) goto done;
  if ((st = gf_mlmodel_put(dir, GF_MLMODEL_CONFIG, cfg_json, strlen(cfg_json), cfg_sha, err)) !=
      GF_OK)
    goto done;
  if ((st = gf_pyfunc_write(dir, python, &py, err)) != GF_OK) goto done;
  if ((st = gf_uuid4_hex(uuid, err)) != GF_OK) goto done;
  if ((st = utc_now(when, err)) != GF_OK) goto done;
  listed files[2 + GF_PYFUNC_N_FILES] = {{GF_MLMODEL_GENERATOR, gen_sha},
                                         {GF_MLMODEL_CONFIG, cfg_sha}};
  for (int i = 0; i < GF_PYFUNC_N_FILES; i++) files[2 + i] = (listed){py.name[i], py.sha256[i]};
  if ((st = mlmodel_yaml(cfg, info, python, uuid, when, files, sizeof files / sizeof *files,
                         &yaml, &yaml_len, err)) != GF_OK)
    goto done;
  if ((st = gf_atomic_write_file(ml_path, yaml, yaml_len, err)) != GF_OK) goto done;
  if (uuid_out) memcpy(uuid_out, uuid, sizeof uuid);
done:
  free(gen_path);
  free(ml_path);
  free(cfg_json);
  free(yaml);
  return st;
}
