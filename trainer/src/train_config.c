/* train_config.c - the configuration of ganflow-train: defaults, the
 * command line of DESIGN §2 parsed with getopt_long (every bad value is a
 * usage error naming its flag), --help, and the config flattened into the
 * MLflow params of a run. Nothing here touches files, the network or MLflow.
 */
#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gf/comm.h"
#include "gf/ctx.h"
#include "gf/ops.h"
#include "gf/data.h"
#include "gf/energy.h"
#include "gf/fs.h"
#include "gf/gan.h"
#include "gf/text.h"
#include "gf/train.h"
#include "mlflow/registry.h"

_Static_assert(GF_TRAIN_PATH_MAX == GF_PATH_MAX,
               "the config's path fields are the paths gf_base checks");

/* Copies src into a fixed buffer; GF_EINVAL naming the flag when too long. */
static gf_status copy_str(char *dst, size_t cap, const char *src,
                          const char *flag, gf_err *err) {
  size_t n = strlen(src);
  if (n >= cap)
    return gf_fail(err, GF_EINVAL, "%s: value longer than %zu characters",
                   flag, cap - 1);
  memcpy(dst, src, n + 1);
  return GF_OK;
}

void gf_train_config_default(gf_train_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  cfg->model = GF_ARCH_DCGAN;
  cfg->image_size = 28;
  cfg->channels = 1;
  cfg->width = 64;
  cfg->z_dim = 0;
  cfg->steps = 5000;
  cfg->batch = 64;
  cfg->lr_g = 2e-4;
  cfg->lr_d = 2e-4;
  cfg->seed = 1;
  int n = snprintf(cfg->device, sizeof cfg->device, "cpu");
  assert(gf_fits(n, sizeof cfg->device));
  cfg->threads = 0;
  cfg->checkpoint_every = 500;
  cfg->keep = 3;
  cfg->resume = GF_RESUME_AUTO;
  cfg->sample_every = 500;
  cfg->eval_every = 1000;
  cfg->log_every = 10;
  /* A name from the environment that does not fit leaves "", which
   * gf_train_config_finish refuses naming the variable unless --experiment
   * replaced it. */
  const char *exp = getenv("MLFLOW_EXPERIMENT_NAME");
  n = snprintf(cfg->experiment, sizeof cfg->experiment, "%s",
               exp && *exp ? exp : GF_TRAIN_DEFAULT_EXPERIMENT);
  if (!gf_fits(n, sizeof cfg->experiment)) cfg->experiment[0] = '\0';
  cfg->eval_images = GF_TRAIN_EVAL_IMAGES;
  cfg->eval_metrics = GF_EVAL_SWD;
  cfg->allreduce = GF_ALLREDUCE_ENGINE;
  cfg->grad_accum = 1;
  cfg->loss = GF_GAN_LOSS_BCE;
  cfg->d_steps = 1;
  cfg->ema_rampup = 0.05;
  cfg->r1_every = 16;
  cfg->exact_shards = 8;
  cfg->bucket_kb = 1024;
  cfg->comm_timeout = 300;
  cfg->check_every = 100;
  cfg->world_size = 1;
  cfg->price_per_hour = -1;
  cfg->price_unit = GF_PRICE_PER_NODE;
  cfg->market = GF_MARKET_ON_DEMAND;
  cfg->cpu_watts_per_core = 10;
}

/* Integer in [lo, hi]; the message names the flag. */
static gf_status parse_i64(const char *flag, const char *arg, int64_t lo,
                           int64_t hi, int64_t *out, gf_err *err) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(arg, &end, 10);
  if (!*arg || *end || errno == ERANGE || isspace((unsigned char)*arg))
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not an integer", flag, arg);
  if (v < lo || v > hi)
    return gf_fail(err, GF_EINVAL, "%s: %lld is outside [%lld, %lld]", flag,
                   v, (long long)lo, (long long)hi);
  *out = v;
  return GF_OK;
}

static gf_status parse_int(const char *flag, const char *arg, int lo, int hi,
                           int *out, gf_err *err) {
  int64_t v;
  gf_status st = parse_i64(flag, arg, lo, hi, &v, err);
  if (st == GF_OK) *out = (int)v;
  return st;
}

/* A finite number > 0 and <= 1 (learning rates). */
static gf_status parse_lr(const char *flag, const char *arg, double *out,
                          gf_err *err) {
  char *end = NULL;
  errno = 0;
  double v = strtod(arg, &end);
  if (!*arg || *end || errno == ERANGE || isspace((unsigned char)*arg))
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not a number", flag, arg);
  if (!isfinite(v) || v <= 0 || v > 1)
    return gf_fail(err, GF_EINVAL, "%s: %s is not in (0, 1]", flag, arg);
  *out = v;
  return GF_OK;
}

/* A finite number in [lo, hi]. */
static gf_status parse_double(const char *flag, const char *arg, double lo,
                              double hi, double *out, gf_err *err) {
  char *end = NULL;
  errno = 0;
  double v = strtod(arg, &end);
  if (!*arg || *end || errno == ERANGE || isspace((unsigned char)*arg))
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not a number", flag, arg);
  if (!isfinite(v) || v < lo || v > hi)
    return gf_fail(err, GF_EINVAL, "%s: %s is not in [%g, %g]", flag, arg, lo, hi);
  *out = v;
  return GF_OK;
}

static gf_status parse_seed(const char *arg, uint64_t *out, gf_err *err) {
  char *end = NULL;
  errno = 0;
  if (!*arg || *arg == '-' || isspace((unsigned char)*arg))
    return gf_fail(err, GF_EINVAL, "--seed: '%s' is not an unsigned integer",
                   arg);
  unsigned long long v = strtoull(arg, &end, 10);
  if (*end || errno == ERANGE)
    return gf_fail(err, GF_EINVAL, "--seed: '%s' is not an unsigned 64-bit "
                   "integer", arg);
  *out = v;
  return GF_OK;
}

/* "cpu", "cuda" or "cuda:N": syntax only; availability in _finish. */
static gf_status parse_device(const char *arg, gf_train_config *cfg,
                              gf_err *err) {
  int ok = strcmp(arg, "cpu") == 0 || strcmp(arg, "cuda") == 0;
  if (!ok && strncmp(arg, "cuda:", 5) == 0 && arg[5]) {
    ok = 1;
    for (const char *p = arg + 5; *p; p++)
      if (!isdigit((unsigned char)*p)) ok = 0;
  }
  if (!ok)
    return gf_fail(err, GF_EINVAL, "--device: '%s' is not cpu, cuda or "
                   "cuda:N", arg);
  return copy_str(cfg->device, sizeof cfg->device, arg, "--device", err);
}

/* An MLflow-safe name for a folder: [A-Za-z0-9._-], others become '_';
 * src is cut to cap - 1 bytes (cap >= 8). */
static void safe_component(char *dst, size_t cap, const char *src) {
  size_t i = 0;
  for (; src[i] && i + 1 < cap; i++) {
    unsigned char ch = (unsigned char)src[i];
    dst[i] = (isalnum(ch) || ch == '.' || ch == '-' || ch == '_') ? (char)ch : '_';
  }
  dst[i] = '\0';
  if (strcmp(dst, ".") == 0 || strcmp(dst, "..") == 0 || !*dst) {
    int n = snprintf(dst, cap, "default");
    assert(gf_fits(n, cap));
    (void)n;
  }
}

gf_status gf_train_config_finish(gf_train_config *cfg, gf_err *err) {
  GF_TRY(gf_train_price_resolve(cfg, getenv("GANFLOW_INSTANCE_KIND"), err));
  if (!cfg->data[0])
    return gf_fail(err, GF_EINVAL, "--data: required (a directory of IDX "
                   "files, CIFAR-10 batches or PNG/JPEG images)");
  /* The directory of the spec (a FORMAT: prefix is not part of it); a
   * spec without one ("idx:") is left to the loader, which refuses it. */
  gf_data_options dopt;
  gf_err derr;
  if (gf_data_spec_parse(cfg->data, &dopt, &derr) == GF_OK)
    GF_TRY(gf_path_check("--data", dopt.path, GF_DATA_DIR_ROOM, err));
  if (!cfg->experiment[0]) {
    const char *env = getenv("MLFLOW_EXPERIMENT_NAME");
    if (env && strlen(env) >= sizeof cfg->experiment)
      return gf_fail(err, GF_EINVAL, "MLFLOW_EXPERIMENT_NAME: value longer "
                     "than %zu characters (shorten it or pass --experiment)",
                     sizeof cfg->experiment - 1);
    return gf_fail(err, GF_EINVAL, "--experiment: empty");
  }
  if (strncmp(cfg->device, "cuda", 4) == 0) {
    if (!gf_cuda_built())
      return gf_fail(err, GF_EUNSUPPORTED,
                     "--device %s: this build has no CUDA backend (configure "
                     "with the CUDA toolkit and cuDNN); use --device cpu",
                     cfg->device);
    gf_err de;
    int ordinal = cfg->device[4] == ':' ? atoi(cfg->device + 5) : 0;
    if (gf_cuda_device_check(ordinal, &de) != GF_OK)
      return gf_fail(err, GF_EDEVICE, "--device %s: %s; use --device cpu",
                     cfg->device, de.msg);
  }
  if (cfg->z_dim == 0)
    cfg->z_dim = cfg->model == GF_ARCH_MLP ? 50
               : cfg->model == GF_ARCH_RESNET ? 128 : 100;
  bool conv = cfg->model != GF_ARCH_MLP;
  if (conv && cfg->image_size != 28 && cfg->image_size != 32 &&
      cfg->image_size != 64)
    return gf_fail(err, GF_EINVAL, "--image-size: %s is built for 28, 32 "
                   "or 64 pixels, not %d", gf_arch_name(cfg->model),
                   cfg->image_size);
  if (conv && cfg->channels != 1 && cfg->channels != 3)
    return gf_fail(err, GF_EINVAL, "--channels: %s takes 1 or 3, not %d",
                   gf_arch_name(cfg->model), cfg->channels);
  if (cfg->width_set && !conv)
    return gf_fail(err, GF_EINVAL, "--width: the mlp's widths are the "
                   "paper's (1200/1000 and 256/128); --width is for dcgan "
                   "and resnet");
  if (cfg->exact_reduce) {
    int s = cfg->exact_shards;
    if (s & (s - 1))
      return gf_fail(err, GF_EINVAL, "--exact-shards: %d is not a power of two", s);
    if (cfg->batch % s != 0 || cfg->batch / s < 2)
      return gf_fail(err, GF_EINVAL, "--exact-reduce: --batch %d does not cut "
                     "into %d shards of at least 2 images (--exact-shards)",
                     cfg->batch, s);
    if (cfg->sync_bn)
      return gf_fail(err, GF_EINVAL, "--exact-reduce keeps batch-norm "
                     "statistics per shard; it does not combine with --sync-bn");
    if (cfg->grad_accum != 1)
      return gf_fail(err, GF_EINVAL, "--exact-reduce sets the micro-batches "
                     "itself (--exact-shards / ranks); drop --grad-accum");
    if (strcmp(cfg->device, "cpu") != 0)
      return gf_fail(err, GF_EINVAL, "--exact-reduce runs on --device cpu only");
    if (cfg->compress_bf16)
      return gf_fail(err, GF_EINVAL, "--compress bf16 rounds the gradient sums "
                     "to bf16; --exact-reduce keeps every bit: choose one");
  }
  if (cfg->autotune && strcmp(cfg->device, "cpu") != 0)
    return gf_fail(err, GF_EINVAL, "--auto tunes CPU ranks (threads, bucket "
                   "size, all-reduce algorithm); with --device %s give "
                   "--bucket-kb and --allreduce yourself", cfg->device);
  if (cfg->cond && cfg->sync_bn)
    return gf_fail(err, GF_EINVAL, "--cond with --sync-bn: conditional batch "
                   "norm over several ranks is not implemented yet");
  if (cfg->r1_gamma > 0 && cfg->model == GF_ARCH_DCGAN && !cfg->spectral_norm)
    return gf_fail(err, GF_EINVAL, "--r1: the penalty is taken per image, "
                   "which batch norm in D couples across the batch; dcgan's D "
                   "drops its batch norms with --sn: add --sn");
  if (cfg->export_set && !cfg->export_raw && cfg->ema_decay == 0.0)
    return gf_fail(err, GF_EINVAL, "--export-generator ema: there is no EMA "
                   "generator without --ema-decay");
  if (!cfg->register_set)
    GF_TRY(gf_format(cfg->register_model, sizeof cfg->register_model, err,
                     "--register-model default", "ganflow-%s",
                     gf_arch_name(cfg->model)));
  if (cfg->alias[0] && !cfg->register_model[0])
    return gf_fail(err, GF_EINVAL, "--alias: needs a registered model "
                   "(--register-model is '')");
  if (cfg->promote_alias[0] && !cfg->register_model[0])
    return gf_fail(err, GF_EINVAL, "--promote-if-better: needs a registered "
                   "model (--register-model is '')");
  if (cfg->promote_alias[0] && strcmp(cfg->promote_alias, cfg->alias) == 0)
    return gf_fail(err, GF_EINVAL, "--alias %s and --promote-if-better %s: "
                   "the same alias, set unconditionally and gated; give one",
                   cfg->alias, cfg->promote_alias);
  if (!cfg->checkpoint_dir[0]) {
    char e[GF_TRAIN_NAME_MAX], r[GF_TRAIN_NAME_MAX];
    safe_component(e, sizeof e, cfg->experiment);
    safe_component(r, sizeof r, cfg->run_name[0] ? cfg->run_name : "default");
    GF_TRY(gf_format(cfg->checkpoint_dir, sizeof cfg->checkpoint_dir, err,
                     "--checkpoint-dir default", "checkpoints/%s/%s", e, r));
  }
  return gf_path_check("--checkpoint-dir", cfg->checkpoint_dir,
                       GF_TRAIN_CKPT_DIR_ROOM, err);
}

gf_status gf_train_model_config(const gf_train_config *cfg,
                                gf_model_config *out, gf_err *err) {
  gf_model_config_default(out, cfg->model);
  out->z_dim = cfg->z_dim;
  out->image_height = cfg->image_size;
  out->image_width = cfg->image_size;
  out->image_channels = cfg->channels;
  if (cfg->model != GF_ARCH_MLP) {
    /* Radford et al. used 64 filters at 64x64; the small images keep it.
     * SNGAN's CIFAR networks have 256 (G) and 128 (D): --width 128. */
    out->ngf = cfg->width;
    out->ndf = cfg->width;
  }
  out->spectral_norm = cfg->spectral_norm;
  return gf_model_config_validate(out, err);
}

enum {
  OPT_DATA = 256, OPT_MODEL, OPT_STEPS, OPT_BATCH, OPT_LR_G, OPT_LR_D,
  OPT_Z_DIM, OPT_SEED, OPT_DEVICE, OPT_THREADS, OPT_CKPT_DIR, OPT_CKPT_EVERY,
  OPT_KEEP, OPT_RESUME, OPT_SAMPLE_EVERY, OPT_EVAL_EVERY, OPT_EXPERIMENT,
  OPT_RUN_NAME, OPT_REGISTER, OPT_ALIAS, OPT_PROMOTE, OPT_IMAGE_SIZE, OPT_CHANNELS,
  OPT_LOG_EVERY, OPT_DETERMINISTIC, OPT_HELP, OPT_EVAL_IMAGES,
  OPT_EVAL_METRICS, OPT_FID_IMAGES,
  OPT_ALLREDUCE, OPT_SYNC_BN, OPT_GRAD_ACCUM, OPT_EXACT, OPT_EXACT_SHARDS,
  OPT_BUCKET_KB, OPT_COMM_TIMEOUT, OPT_CHECK_EVERY, OPT_COMPRESS,
  OPT_LOSS, OPT_D_STEPS, OPT_SN, OPT_EMA_DECAY, OPT_EMA_RAMPUP, OPT_EXPORT_G,
  OPT_MIRROR, OPT_R1, OPT_R1_EVERY, OPT_DIFFAUG, OPT_COND, OPT_WIDTH,
  OPT_PRICE, OPT_PRICE_UNIT, OPT_PRICE_FILE, OPT_INSTANCE_KIND, OPT_MARKET,
  OPT_CPU_WATTS, OPT_AUTO,
};

static const struct option k_options[] = {
  {"data", required_argument, NULL, OPT_DATA},
  {"model", required_argument, NULL, OPT_MODEL},
  {"steps", required_argument, NULL, OPT_STEPS},
  {"batch", required_argument, NULL, OPT_BATCH},
  {"lr-g", required_argument, NULL, OPT_LR_G},
  {"lr-d", required_argument, NULL, OPT_LR_D},
  {"z-dim", required_argument, NULL, OPT_Z_DIM},
  {"seed", required_argument, NULL, OPT_SEED},
  {"device", required_argument, NULL, OPT_DEVICE},
  {"threads", required_argument, NULL, OPT_THREADS},
  {"checkpoint-dir", required_argument, NULL, OPT_CKPT_DIR},
  {"checkpoint-every", required_argument, NULL, OPT_CKPT_EVERY},
  {"keep", required_argument, NULL, OPT_KEEP},
  {"resume", required_argument, NULL, OPT_RESUME},
  {"sample-every", required_argument, NULL, OPT_SAMPLE_EVERY},
  {"eval-every", required_argument, NULL, OPT_EVAL_EVERY},
  {"eval-images", required_argument, NULL, OPT_EVAL_IMAGES},
  {"eval-metrics", required_argument, NULL, OPT_EVAL_METRICS},
  {"fid-images", required_argument, NULL, OPT_FID_IMAGES},
  {"experiment", required_argument, NULL, OPT_EXPERIMENT},
  {"run-name", required_argument, NULL, OPT_RUN_NAME},
  {"register-model", required_argument, NULL, OPT_REGISTER},
  {"alias", required_argument, NULL, OPT_ALIAS},
  {"promote-if-better", required_argument, NULL, OPT_PROMOTE},
  {"image-size", required_argument, NULL, OPT_IMAGE_SIZE},
  {"channels", required_argument, NULL, OPT_CHANNELS},
  {"log-every", required_argument, NULL, OPT_LOG_EVERY},
  {"deterministic", no_argument, NULL, OPT_DETERMINISTIC},
  {"allreduce", required_argument, NULL, OPT_ALLREDUCE},
  {"sync-bn", no_argument, NULL, OPT_SYNC_BN},
  {"grad-accum", required_argument, NULL, OPT_GRAD_ACCUM},
  {"exact-reduce", no_argument, NULL, OPT_EXACT},
  {"exact-shards", required_argument, NULL, OPT_EXACT_SHARDS},
  {"bucket-kb", required_argument, NULL, OPT_BUCKET_KB},
  {"compress", required_argument, NULL, OPT_COMPRESS},
  {"comm-timeout", required_argument, NULL, OPT_COMM_TIMEOUT},
  {"check-every", required_argument, NULL, OPT_CHECK_EVERY},
  {"loss", required_argument, NULL, OPT_LOSS},
  {"d-steps", required_argument, NULL, OPT_D_STEPS},
  {"sn", no_argument, NULL, OPT_SN},
  {"ema-decay", required_argument, NULL, OPT_EMA_DECAY},
  {"ema-rampup", required_argument, NULL, OPT_EMA_RAMPUP},
  {"export-generator", required_argument, NULL, OPT_EXPORT_G},
  {"mirror", no_argument, NULL, OPT_MIRROR},
  {"r1", required_argument, NULL, OPT_R1},
  {"r1-every", required_argument, NULL, OPT_R1_EVERY},
  {"diffaug", required_argument, NULL, OPT_DIFFAUG},
  {"cond", no_argument, NULL, OPT_COND},
  {"width", required_argument, NULL, OPT_WIDTH},
  {"price-per-hour", required_argument, NULL, OPT_PRICE},
  {"price-unit", required_argument, NULL, OPT_PRICE_UNIT},
  {"price-file", required_argument, NULL, OPT_PRICE_FILE},
  {"instance-kind", required_argument, NULL, OPT_INSTANCE_KIND},
  {"market", required_argument, NULL, OPT_MARKET},
  {"cpu-watts-per-core", required_argument, NULL, OPT_CPU_WATTS},
  {"auto", no_argument, NULL, OPT_AUTO},
  {"help", no_argument, NULL, OPT_HELP},
  {NULL, 0, NULL, 0},
};

/* --eval-metrics LIST: comma-separated swd, fid, kid (at least one). */
static gf_status parse_eval_metrics(const char *arg, unsigned *out,
                                    gf_err *err) {
  unsigned m = 0;
  const char *p = arg;
  for (;;) {
    size_t n = strcspn(p, ",");
    if (n == 3 && strncmp(p, "swd", 3) == 0)
      m |= GF_EVAL_SWD;
    else if (n == 3 && strncmp(p, "fid", 3) == 0)
      m |= GF_EVAL_FID;
    else if (n == 3 && strncmp(p, "kid", 3) == 0)
      m |= GF_EVAL_KID;
    else
      return gf_fail(err, GF_EINVAL, "--eval-metrics: '%s': expected a "
                     "comma-separated list of swd, fid, kid", arg);
    if (!p[n]) break;
    p += n + 1;
  }
  *out = m;
  return GF_OK;
}

/* DiffAugment's policy names, in its order, and their bits. */
static const struct {
  const char *name;
  unsigned bit;
} k_diffaug[] = {{"color", GF_AUG_COLOR},
                 {"translation", GF_AUG_TRANSLATION},
                 {"cutout", GF_AUG_CUTOUT}};

/* --diffaug LIST: comma-separated color, translation, cutout, or none. */
static gf_status parse_diffaug(const char *arg, unsigned *out, gf_err *err) {
  unsigned m = 0;
  if (strcmp(arg, "none") == 0) {
    *out = 0;
    return GF_OK;
  }
  for (const char *p = arg;;) {
    size_t n = strcspn(p, ",");
    size_t i = 0;
    while (i < 3 && !(strlen(k_diffaug[i].name) == n &&
                      strncmp(p, k_diffaug[i].name, n) == 0))
      i++;
    if (i == 3)
      return gf_fail(err, GF_EINVAL, "--diffaug: '%s': expected none or a "
                     "comma-separated list of color, translation, cutout", arg);
    m |= k_diffaug[i].bit;
    if (!p[n]) break;
    p += n + 1;
  }
  *out = m;
  return GF_OK;
}

/* The policy in words: "color,translation" or "none"; out[64]. */
static void diffaug_text(unsigned m, char out[64]) {
  out[0] = '\0';
  for (size_t i = 0; i < 3; i++)
    if (m & k_diffaug[i].bit) {
      if (out[0]) strcat(out, ",");
      strcat(out, k_diffaug[i].name);
    }
  if (!out[0]) strcpy(out, "none");
}

/* --promote-if-better ALIAS[:METRIC[:min|max]] (METRIC swd/avg, min). */
static gf_status parse_promote(gf_train_config *cfg, const char *arg,
                               gf_err *err) {
  const char *colon = strchr(arg, ':');
  size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
  if (n == 0 || n >= sizeof cfg->promote_alias)
    return gf_fail(err, GF_EINVAL, "--promote-if-better: '%s': expected "
                   "ALIAS[:METRIC[:min|max]]", arg);
  char alias[GF_TRAIN_NAME_MAX];
  memcpy(alias, arg, n);
  alias[n] = '\0';
  if (!mlflow_alias_is_valid(alias))
    return gf_fail(err, GF_EINVAL, "--promote-if-better: '%s' is not a valid "
                   "MLflow alias ([A-Za-z0-9_-]+, not 'latest' or v<digits>)",
                   alias);
  const char *spec = colon && colon[1] ? colon + 1 : "swd/avg";
  mlflow_gate_goal goal;
  mlflow_error me;
  if (mlflow_gate_metric_parse(spec, cfg->promote_metric,
                               sizeof cfg->promote_metric, &goal,
                               &me) != MLFLOW_OK)
    return gf_fail(err, GF_EINVAL, "--promote-if-better: %s", me.message);
  memcpy(cfg->promote_alias, alias, n + 1);
  cfg->promote_max = goal == MLFLOW_GATE_MAX;
  return GF_OK;
}

static gf_status apply_option(gf_train_config *cfg, int opt, const char *arg,
                              gf_err *err) {
  const int64_t big = INT64_C(1) << 40; /* steps < 2^32 keeps Philox keys */
  switch (opt) {
  case OPT_DATA:
    if (!*arg) return gf_fail(err, GF_EINVAL, "--data: empty");
    return copy_str(cfg->data, sizeof cfg->data, arg, "--data", err);
  case OPT_MODEL:
    if (strcmp(arg, "dcgan") && strcmp(arg, "mlp") && strcmp(arg, "resnet"))
      return gf_fail(err, GF_EINVAL, "--model: '%s' is not dcgan, resnet or "
                     "mlp", arg);
    return gf_arch_parse(arg, &cfg->model, err);
  case OPT_STEPS:
    return parse_i64("--steps", arg, 1, UINT32_MAX, &cfg->steps, err);
  case OPT_BATCH:
    return parse_int("--batch", arg, 2, 65536, &cfg->batch, err);
  case OPT_LR_G: return parse_lr("--lr-g", arg, &cfg->lr_g, err);
  case OPT_LR_D: return parse_lr("--lr-d", arg, &cfg->lr_d, err);
  case OPT_Z_DIM: return parse_int("--z-dim", arg, 1, 4096, &cfg->z_dim, err);
  case OPT_SEED: return parse_seed(arg, &cfg->seed, err);
  case OPT_DEVICE: return parse_device(arg, cfg, err);
  case OPT_THREADS:
    cfg->threads_set = true;
    return parse_int("--threads", arg, 0, 4096, &cfg->threads, err);
  case OPT_AUTO:
    cfg->autotune = true;
    return GF_OK;
  case OPT_CKPT_DIR:
    if (!*arg) return gf_fail(err, GF_EINVAL, "--checkpoint-dir: empty");
    return copy_str(cfg->checkpoint_dir, sizeof cfg->checkpoint_dir, arg,
                    "--checkpoint-dir", err);
  case OPT_CKPT_EVERY:
    return parse_i64("--checkpoint-every", arg, 0, big, &cfg->checkpoint_every,
                     err);
  case OPT_KEEP: return parse_int("--keep", arg, 1, 1000000, &cfg->keep, err);
  case OPT_RESUME:
    if (strcmp(arg, "auto") == 0) cfg->resume = GF_RESUME_AUTO;
    else if (strcmp(arg, "never") == 0) cfg->resume = GF_RESUME_NEVER;
    else if (!*arg)
      return gf_fail(err, GF_EINVAL, "--resume: empty (auto, never or a "
                     "checkpoint file)");
    else {
      cfg->resume = GF_RESUME_PATH;
      return copy_str(cfg->resume_path, sizeof cfg->resume_path, arg,
                      "--resume", err);
    }
    return GF_OK;
  case OPT_SAMPLE_EVERY:
    return parse_i64("--sample-every", arg, 0, big, &cfg->sample_every, err);
  case OPT_EVAL_EVERY:
    return parse_i64("--eval-every", arg, 0, big, &cfg->eval_every, err);
  case OPT_EVAL_IMAGES:
    return parse_int("--eval-images", arg, 2, 100000, &cfg->eval_images, err);
  case OPT_EVAL_METRICS:
    return parse_eval_metrics(arg, &cfg->eval_metrics, err);
  case OPT_FID_IMAGES:
    return parse_int("--fid-images", arg, 2, 100000, &cfg->fid_images, err);
  case OPT_LOG_EVERY:
    return parse_i64("--log-every", arg, 1, big, &cfg->log_every, err);
  case OPT_EXPERIMENT:
    if (!*arg) return gf_fail(err, GF_EINVAL, "--experiment: empty");
    return copy_str(cfg->experiment, sizeof cfg->experiment, arg,
                    "--experiment", err);
  case OPT_RUN_NAME:
    return copy_str(cfg->run_name, sizeof cfg->run_name, arg, "--run-name",
                    err);
  case OPT_REGISTER:
    cfg->register_set = true;
    return copy_str(cfg->register_model, sizeof cfg->register_model, arg,
                    "--register-model", err);
  case OPT_ALIAS:
    if (*arg) {
      int ok = strcmp(arg, "latest") != 0;
      for (const char *p = arg; *p; p++)
        if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-') ok = 0;
      if (arg[0] == 'v' && arg[1]) {
        int digits = 1;
        for (const char *p = arg + 1; *p; p++)
          if (!isdigit((unsigned char)*p)) digits = 0;
        if (digits) ok = 0;
      }
      if (!ok)
        return gf_fail(err, GF_EINVAL, "--alias: '%s' is not a valid MLflow "
                       "alias ([A-Za-z0-9_-]+, not 'latest' or v<digits>)",
                       arg);
    }
    return copy_str(cfg->alias, sizeof cfg->alias, arg, "--alias", err);
  case OPT_PROMOTE:
    return parse_promote(cfg, arg, err);
  case OPT_IMAGE_SIZE:
    return parse_int("--image-size", arg, 1, 4096, &cfg->image_size, err);
  case OPT_CHANNELS:
    return parse_int("--channels", arg, 1, 4, &cfg->channels, err);
  case OPT_DETERMINISTIC:
    cfg->deterministic = true;
    return GF_OK;
  case OPT_ALLREDUCE: {
    gf_allreduce_algo a;
    gf_err e;
    if (gf_allreduce_algo_parse(arg, &a, &e) != GF_OK)
      return gf_fail(err, GF_EINVAL, "--allreduce: '%s' is not ring, "
                     "reduce-bcast, hierarchical or tree", arg);
    cfg->allreduce = (int)a;
    cfg->allreduce_set = true;
    return GF_OK;
  }
  case OPT_SYNC_BN:
    cfg->sync_bn = true;
    return GF_OK;
  case OPT_LOSS: {
    gf_gan_loss l;
    gf_err e;
    if (gf_gan_loss_parse(arg, &l, &e) != GF_OK)
      return gf_fail(err, GF_EINVAL, "--loss: '%s' is not bce, hinge or wgan", arg);
    cfg->loss = (int)l;
    return GF_OK;
  }
  case OPT_D_STEPS:
    return parse_int("--d-steps", arg, 1, 100, &cfg->d_steps, err);
  case OPT_WIDTH:
    cfg->width_set = true;
    return parse_int("--width", arg, 1, 4096, &cfg->width, err);
  case OPT_SN:
    cfg->spectral_norm = true;
    return GF_OK;
  case OPT_EMA_DECAY:
    GF_TRY(parse_double("--ema-decay", arg, 0.0, 1.0, &cfg->ema_decay, err));
    if (cfg->ema_decay >= 1.0)
      return gf_fail(err, GF_EINVAL, "--ema-decay: %s: must be below 1", arg);
    return GF_OK;
  case OPT_EMA_RAMPUP:
    return parse_double("--ema-rampup", arg, 0.0, 1e6, &cfg->ema_rampup, err);
  case OPT_EXPORT_G:
    if (strcmp(arg, "ema") != 0 && strcmp(arg, "raw") != 0)
      return gf_fail(err, GF_EINVAL, "--export-generator: '%s' is not ema or raw", arg);
    cfg->export_raw = strcmp(arg, "raw") == 0;
    cfg->export_set = true;
    return GF_OK;
  case OPT_MIRROR:
    cfg->mirror = true;
    return GF_OK;
  case OPT_R1:
    return parse_double("--r1", arg, 0.0, 1e6, &cfg->r1_gamma, err);
  case OPT_R1_EVERY:
    return parse_int("--r1-every", arg, 1, 1000000, &cfg->r1_every, err);
  case OPT_DIFFAUG:
    return parse_diffaug(arg, &cfg->diffaug, err);
  case OPT_COND:
    cfg->cond = true;
    return GF_OK;
  case OPT_GRAD_ACCUM:
    return parse_int("--grad-accum", arg, 1, 4096, &cfg->grad_accum, err);
  case OPT_EXACT:
    cfg->exact_reduce = true;
    return GF_OK;
  case OPT_EXACT_SHARDS:
    return parse_int("--exact-shards", arg, 1, 4096, &cfg->exact_shards, err);
  case OPT_BUCKET_KB:
    cfg->bucket_set = true;
    return parse_int("--bucket-kb", arg, 4, 1 << 20, &cfg->bucket_kb, err);
  case OPT_COMPRESS:
    if (strcmp(arg, "none") != 0 && strcmp(arg, "bf16") != 0)
      return gf_fail(err, GF_EINVAL, "--compress: '%s' is not none or bf16",
                     arg);
    cfg->compress_bf16 = strcmp(arg, "bf16") == 0;
    return GF_OK;
  case OPT_COMM_TIMEOUT: {
    char *end = NULL;
    errno = 0;
    double v = strtod(arg, &end);
    if (!*arg || *end || errno == ERANGE || !isfinite(v) || v < 1 || v > 86400)
      return gf_fail(err, GF_EINVAL, "--comm-timeout: '%s' is not a number "
                     "of seconds in [1, 86400]", arg);
    cfg->comm_timeout = v;
    return GF_OK;
  }
  case OPT_CHECK_EVERY:
    return parse_i64("--check-every", arg, 0, big, &cfg->check_every, err);
  case OPT_PRICE:
    return parse_double("--price-per-hour", arg, 0.0, 1e6,
                        &cfg->price_per_hour, err);
  case OPT_PRICE_UNIT: {
    gf_price_unit u;
    gf_err e;
    if (gf_price_parse_unit(arg, &u, &e) != GF_OK)
      return gf_fail(err, GF_EINVAL, "--price-unit: %s", e.msg);
    cfg->price_unit = (int)u;
    cfg->price_unit_set = true;
    return GF_OK;
  }
  case OPT_PRICE_FILE:
    if (!*arg) return gf_fail(err, GF_EINVAL, "--price-file: empty");
    return copy_str(cfg->price_file, sizeof cfg->price_file, arg,
                    "--price-file", err);
  case OPT_INSTANCE_KIND:
    if (!*arg) return gf_fail(err, GF_EINVAL, "--instance-kind: empty");
    return copy_str(cfg->instance_kind, sizeof cfg->instance_kind, arg,
                    "--instance-kind", err);
  case OPT_MARKET: {
    gf_price_market m;
    gf_err e;
    if (gf_price_parse_market(arg, &m, &e) != GF_OK)
      return gf_fail(err, GF_EINVAL, "--market: %s", e.msg);
    cfg->market = (int)m;
    return GF_OK;
  }
  case OPT_CPU_WATTS:
    GF_TRY(parse_double("--cpu-watts-per-core", arg, 0.0, 1000.0,
                        &cfg->cpu_watts_per_core, err));
    if (cfg->cpu_watts_per_core <= 0)
      return gf_fail(err, GF_EINVAL, "--cpu-watts-per-core: must be above 0");
    return GF_OK;
  default:
    return gf_fail(err, GF_EINVAL, "unknown option");
  }
}

gf_parse_result gf_train_parse_args(gf_train_config *cfg, int argc,
                                    char **argv, gf_err *err) {
  gf_train_config_default(cfg);
  optind = 1;
  opterr = 0;
  int help = 0;
  for (;;) {
    int idx = -1;
    int opt = getopt_long(argc, argv, ":h", k_options, &idx);
    if (opt == -1) break;
    if (opt == 'h' || opt == OPT_HELP) {
      help = 1;
      continue;
    }
    if (opt == '?') {
      const char *bad = argv[optind - 1] ? argv[optind - 1] : "?";
      gf_fail(err, GF_EINVAL, "%s: unknown option", bad);
      return GF_PARSE_USAGE;
    }
    if (opt == ':') {
      const char *bad = argv[optind - 1] ? argv[optind - 1] : "?";
      gf_fail(err, GF_EINVAL, "%s: needs a value", bad);
      return GF_PARSE_USAGE;
    }
    if (apply_option(cfg, opt, optarg, err) != GF_OK) return GF_PARSE_USAGE;
  }
  if (help) return GF_PARSE_HELP;
  if (optind < argc) {
    gf_fail(err, GF_EINVAL, "'%s': unexpected argument (flags are --name "
            "VALUE)", argv[optind]);
    return GF_PARSE_USAGE;
  }
  if (gf_train_config_finish(cfg, err) != GF_OK) return GF_PARSE_USAGE;
  return GF_PARSE_OK;
}

void gf_train_usage(FILE *out, const char *prog) {
  fprintf(out,
"Usage: %s --data SPEC [options]\n"
"Trains a GAN (generator + discriminator) on an image dataset and tracks the\n"
"run in MLflow: params, metrics, system metrics, sample grids, checkpoints,\n"
"and at the end a registered model version.\n"
"\n"
"Data and model:\n"
"  --data SPEC             [idx:|cifar10:|images:]DIR: MNIST-format IDX files\n"
"                          (plain or .gz), CIFAR-10 binary batches, or a folder\n"
"                          of PNG/JPEG images (required)\n"
"  --model dcgan|resnet|mlp\n"
"                          network: DCGAN, SNGAN's residual G and D, or the\n"
"                          paper's MLP (dcgan)\n"
"  --image-size N          image side in pixels; dcgan, resnet: 28, 32 or 64\n"
"                          (28)\n"
"  --channels N            1 (gray) or 3 (RGB) (1)\n"
"  --width N               dcgan's and resnet's base width: G's ngf and D's\n"
"                          ndf (64)\n"
"  --z-dim N               latent size (mlp 50, dcgan 100, resnet 128)\n"
"Training:\n"
"  --steps N               optimizer steps in all (5000)\n"
"  --batch N               images per step, all ranks together (64)\n"
"  --lr-g X, --lr-d X      Adam learning rates of G and D (2e-4; betas 0.5,\n"
"                          0.999)\n"
"  --seed N                every random number derives from it (1)\n"
"  --device cpu|cuda[:N]   where the networks train: CPU or CUDA GPU N (cpu)\n"
"  --threads N             CPU threads, 0 = every core (0); a bit-identical\n"
"                          resume needs the same value\n"
"  --deterministic         deterministic GPU algorithms (the CPU path always is)\n"
"  --auto                  tuned at start: before step 1, time 1 warm-up and 3\n"
"                          steps of the run's first batch on a scratch copy of\n"
"                          the model for each candidate (at most 12, a few\n"
"                          seconds for small models) and train with the\n"
"                          fastest --threads (1, 2, 4, .. cores per rank), and\n"
"                          with several ranks --bucket-kb (256, 1024, 4096)\n"
"                          and --allreduce (mpirun ranks); those given stay\n"
"                          fixed. The choice is kept in <checkpoint-dir>/auto\n"
"                          and reused by every resume of the run (CPU only)\n"
"GAN recipe:\n"
"  --loss bce|hinge|wgan   bce: DCGAN's non-saturating loss; hinge: SNGAN's and\n"
"                          BigGAN's; wgan: the Wasserstein critic loss (bce)\n"
"  --d-steps K             D updates per G update, each on its own batch and\n"
"                          latents (1)\n"
"  --sn                    spectral normalization of every D weight, and D\n"
"                          without batch norm (SNGAN)\n"
"  --ema-decay D           keep an exponential moving average of G, updated\n"
"                          after every G update with this decay, e.g. 0.999\n"
"                          (0: none) (0)\n"
"  --ema-rampup R          the EMA's half-life is capped at R x the G updates\n"
"                          so far, as StyleGAN2-ADA's; 0: none (0.05)\n"
"  --export-generator ema|raw\n"
"                          the generator of sample grids, evaluations and the\n"
"                          registered model (ema when there is one, else raw)\n"
"  --mirror                x-flipped copies double the dataset\n"
"  --r1 GAMMA              the R1 gradient penalty on real images (StyleGAN's);\n"
"                          needs a D without batch norm (dcgan with --sn,\n"
"                          resnet, mlp) (0)\n"
"  --r1-every N            lazy R1: every N D updates, weighted by N (16)\n"
"  --diffaug LIST          DiffAugment: color, translation, cutout (comma-\n"
"                          separated), applied to every image D sees, real\n"
"                          and fake, differentiably for G; none (none)\n"
"  --cond                  class-conditional: G with conditional batch norm on\n"
"                          a shared class embedding (BigGAN), D with a\n"
"                          projection (Miyato & Koyama); needs labelled data\n"
"Multiple ranks (launch with `ganflow launch`, which restarts failed jobs,\n"
"mpirun, srun, or torchrun-style RANK, WORLD_SIZE, LOCAL_RANK,\n"
"LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT):\n"
"  --allreduce ALGO        ring (the engine's own), reduce-bcast, hierarchical\n"
"                          or tree (ring)\n"
"  --sync-bn               batch norm over the global batch, not each rank's\n"
"  --grad-accum K          cut each rank's slice into K micro-batches (1)\n"
"  --exact-reduce          bit-identical at 1, 2, 4, ... ranks: the batch is cut\n"
"                          into --exact-shards S micro-batches (8) whose\n"
"                          gradients add in a fixed tree (CPU only)\n"
"  --bucket-kb N           gradient all-reduce bucket size (1024)\n"
"  --compress none|bf16    gradient buckets on the wire as f32 or bf16 (half\n"
"                          the bytes, sums rounded to bf16; not with\n"
"                          --exact-reduce) (none)\n"
"  --comm-timeout S        a collective waiting longer fails the job (300)\n"
"  --check-every N         steps between checks that every rank holds the\n"
"                          same parameters; 0 = never (100)\n"
"Checkpoints:\n"
"  --checkpoint-dir DIR    (checkpoints/<experiment>/<run-name or default>)\n"
"  --checkpoint-every N    steps between checkpoints; 0 = at the end only (500)\n"
"  --keep N                newest checkpoints kept (3)\n"
"  --resume auto|never|PATH\n"
"                          auto: continue from the newest good checkpoint of\n"
"                          the dir into the same MLflow run; never: a new run\n"
"                          (refused when the dir holds checkpoints or a run_id\n"
"                          of another run: empty it or pick another dir);\n"
"                          PATH: that checkpoint file (auto)\n"
"Monitoring:\n"
"  --log-every N           steps between metric points and log lines (10)\n"
"  --sample-every N        steps between 8x8 sample grids (PNG artifacts);\n"
"                          0 = never (500)\n"
"  --eval-every N          steps between evaluations; 0 = never (1000)\n"
"  --eval-metrics LIST     what an evaluation computes: swd, fid, kid,\n"
"                          comma-separated (swd); fid and kid use the FID\n"
"                          Inception-v3 (GANFLOW_INCEPTION, else the file\n"
"                          deploy/install-deps.sh installs) and are not\n"
"                          computed at step 0\n"
"  --eval-images N         images per set in the SWD (2000, or the dataset)\n"
"  --fid-images N          generated and real images in FID/KID (--eval-\n"
"                          images); the real set's features are cached\n"
"                          (GANFLOW_CACHE_DIR, else ~/.cache/ganflow/fid)\n"
"Cost and energy (metrics energy/joules, cost/usd, cost/usd_per_1k_images,\n"
"summed over every rank and every restart of the run):\n"
"  --price-per-hour USD    price of a slot-hour (none: energy only)\n"
"  --price-unit node|gpu   the price is per machine (counted once per node)\n"
"                          or per rank's slot: its GPU, or a CPU rank (node)\n"
"  --price-file FILE       prices by instance kind and market, lines of\n"
"                          KIND MARKET USD_PER_HOUR node|gpu ('#' comments)\n"
"  --instance-kind KIND    the entry of --price-file (GANFLOW_INSTANCE_KIND)\n"
"  --market on-demand|spot the entry's market (on-demand)\n"
"  --cpu-watts-per-core W  CPU energy estimate per busy core where RAPL\n"
"                          (/sys/class/powercap) cannot be read (10)\n"
"MLflow:\n"
"  --experiment NAME       experiment (MLFLOW_EXPERIMENT_NAME, else ganflow)\n"
"  --run-name NAME         run name (the server picks one)\n"
"  --register-model NAME   registered model of the final generator\n"
"                          (ganflow-<model>); '' skips registration\n"
"  --alias NAME            alias set on the new version (none)\n"
"  --promote-if-better ALIAS[:METRIC[:min|max]]\n"
"                          move ALIAS to the new version only when its\n"
"                          last METRIC (swd/avg) beats the version holding\n"
"                          ALIAS (min: lower is better); a refusal does not\n"
"                          fail the run (tag ganflow.promotion says why)\n"
"  --help                  this text\n"
"\n"
"Environment: MLFLOW_TRACKING_URI (http://127.0.0.1:5000),\n"
"MLFLOW_EXPERIMENT_NAME, MLFLOW_RUN_ID (log into that existing run),\n"
"MLFLOW_TRACKING_USERNAME/_PASSWORD/_TOKEN, MLFLOW_TRACKING_INSECURE_TLS,\n"
"MLFLOW_TRACKING_SERVER_CERT_PATH, MLFLOW_HTTP_REQUEST_MAX_RETRIES,\n"
"MLFLOW_HTTP_REQUEST_TIMEOUT, MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL\n"
"(seconds between system-metric samples, 10), GANFLOW_HEARTBEAT_DIR (set by\n"
"`ganflow launch`: each rank writes rank-<r>.hb there at every step).\n"
"\n"
"The MLflow server must answer when the run starts (creating or resuming the\n"
"run, with the client's retries); otherwise ganflow-train exits 1 before\n"
"training. Once running, an outage never stops training: metrics wait in\n"
"<checkpoint-dir>/mlflow.outbox and are sent when the server returns (or by\n"
"`ganflow sync DIR`); artifact uploads that fail are reported and skipped.\n"
"SIGTERM/SIGINT: checkpoint at the next step, run KILLED, exit 0; a second\n"
"SIGINT exits at once (130). Exit status: 0 done, 1 error (run FAILED),\n"
"2 usage.\n",
          prog);
}

/* The shortest %g form of v that reads back as exactly v ("0.0002");
 * cap >= 32 holds any of them (at most 24 characters). */
static void fmt_double(char *buf, size_t cap, double v) {
  /* The shortest exact form, without an exponent where one as short as
   * 17 digits exists ("10", not "1e+01"; "1e-05" stays). */
  char first[32] = "";
  for (int prec = 1; prec <= 17; prec++) {
    int n = snprintf(buf, cap, "%.*g", prec, v);
    assert(gf_fits(n, cap));
    (void)n;
    if (strtod(buf, NULL) != v) continue;
    if (!strchr(buf, 'e')) return;
    if (!first[0] && strlen(buf) < sizeof first) memcpy(first, buf, strlen(buf) + 1);
  }
  if (first[0] && strlen(first) < cap) memcpy(buf, first, strlen(first) + 1);
}

gf_status gf_train_recipe(const gf_train_config *cfg, char *out, size_t cap,
                          gf_err *err) {
  char decay[32], ramp[32], r1[32], da[64];
  diffaug_text(cfg->diffaug, da);
  fmt_double(decay, sizeof decay, cfg->ema_decay);
  fmt_double(ramp, sizeof ramp, cfg->ema_decay > 0 ? cfg->ema_rampup : 0.0);
  fmt_double(r1, sizeof r1, cfg->r1_gamma);
  return gf_format(out, cap, err, "training recipe",
                   "loss=%s,d_steps=%d,ema_decay=%s,ema_rampup=%s,mirror=%s,"
                   "r1=%s,r1_every=%d,diffaug=%s",
                   gf_gan_loss_name((gf_gan_loss)cfg->loss), cfg->d_steps, decay,
                   ramp, cfg->mirror ? "true" : "false", r1,
                   cfg->r1_gamma > 0 ? cfg->r1_every : 0, da);
}

/* Every param value fits by construction: numbers, fixed words, and the
 * text of config fields no longer than a value. */
_Static_assert(sizeof ((gf_train_config *)0)->data <= GF_TRAIN_PARAM_VAL_MAX &&
               sizeof ((gf_train_config *)0)->device <= GF_TRAIN_PARAM_VAL_MAX &&
               sizeof ((gf_train_config *)0)->auto_measured <=
                   GF_TRAIN_PARAM_VAL_MAX,
               "config text fits a param value");

size_t gf_train_config_params(const gf_train_config *cfg,
                              gf_train_param *out, size_t n_max) {
  size_t n = 0;
#define P(k, ...)                                                         \
  do {                                                                    \
    if (n < n_max) {                                                      \
      out[n].key = (k);                                                   \
      int len_ = snprintf(out[n].value, sizeof out[n].value, __VA_ARGS__); \
      assert(gf_fits(len_, sizeof out[n].value));                         \
      (void)len_;                                                         \
      n++;                                                                \
    }                                                                     \
  } while (0)
  P("data", "%s", cfg->data);
  P("model", "%s", gf_arch_name(cfg->model));
  P("image_size", "%d", cfg->image_size);
  P("channels", "%d", cfg->channels);
  P("z_dim", "%d", cfg->z_dim);
  if (cfg->model != GF_ARCH_MLP) P("width", "%d", cfg->width);
  P("steps", "%" PRId64, cfg->steps);
  P("batch", "%d", cfg->batch);
  char num[32];
  fmt_double(num, sizeof num, cfg->lr_g);
  P("lr_g", "%s", num);
  fmt_double(num, sizeof num, cfg->lr_d);
  P("lr_d", "%s", num);
  P("seed", "%" PRIu64, cfg->seed);
  P("device", "%s", cfg->device);
  P("threads", "%d", cfg->threads);
  P("checkpoint_every", "%" PRId64, cfg->checkpoint_every);
  P("keep", "%d", cfg->keep);
  P("sample_every", "%" PRId64, cfg->sample_every);
  P("eval_every", "%" PRId64, cfg->eval_every);
  P("log_every", "%" PRId64, cfg->log_every);
  P("deterministic", "%s", cfg->deterministic ? "true" : "false");
  P("world_size", "%d", cfg->world_size);
  P("eval_images", "%d", cfg->eval_images);
  char em[16] = "";
  static const char *const names[] = {"swd", "fid", "kid"};
  for (int i = 0; i < 3; i++)
    if (cfg->eval_metrics & (1u << i)) {
      size_t len = strlen(em);
      int w = snprintf(em + len, sizeof em - len, "%s%s", len ? "," : "",
                       names[i]);
      assert(gf_fits(w, sizeof em - len)); /* 3 names of 3 letters */
      (void)w;
    }
  P("eval_metrics", "%s", em);
  if (cfg->eval_metrics & (GF_EVAL_FID | GF_EVAL_KID))
    P("fid_images", "%d", cfg->fid_images ? cfg->fid_images
                                          : cfg->eval_images);
  int world = cfg->world_size > 0 ? cfg->world_size : 1;
  P("local_batch", "%d", cfg->batch / world);
  P("allreduce", "%s",
    cfg->exact_reduce ? "tree" : gf_allreduce_algo_name(cfg->allreduce));
  P("sync_bn", "%s", cfg->sync_bn ? "true" : "false");
  P("grad_accum", "%d", cfg->exact_reduce ? cfg->exact_shards / world
                                          : cfg->grad_accum);
  P("exact_reduce", "%s", cfg->exact_reduce ? "true" : "false");
  P("compress", "%s", cfg->compress_bf16 ? "bf16" : "none");
  P("loss", "%s", gf_gan_loss_name((gf_gan_loss)cfg->loss));
  P("d_steps", "%d", cfg->d_steps);
  P("spectral_norm", "%s", cfg->spectral_norm ? "true" : "false");
  fmt_double(num, sizeof num, cfg->ema_decay);
  P("ema_decay", "%s", num);
  if (cfg->ema_decay > 0) {
    fmt_double(num, sizeof num, cfg->ema_rampup);
    P("ema_rampup", "%s", num);
  }
  P("export_generator", "%s", cfg->ema_decay > 0 && !cfg->export_raw ? "ema" : "raw");
  P("mirror", "%s", cfg->mirror ? "true" : "false");
  fmt_double(num, sizeof num, cfg->r1_gamma);
  P("r1_gamma", "%s", num);
  if (cfg->r1_gamma > 0) P("r1_every", "%d", cfg->r1_every);
  char da[64];
  diffaug_text(cfg->diffaug, da);
  P("diffaug", "%s", da);
  P("cond", "%s", cfg->cond ? "true" : "false");
  if (cfg->price_per_hour >= 0) {
    fmt_double(num, sizeof num, cfg->price_per_hour);
    P("price_usd_per_hour", "%s", num);
    P("price_unit", "%s", gf_price_unit_name((gf_price_unit)cfg->price_unit));
  }
  if (cfg->price_file[0]) P("price_file", "%s", cfg->price_file);
  if (cfg->instance_kind[0]) {
    P("instance_kind", "%s", cfg->instance_kind);
    P("market", "%s", gf_price_market_name((gf_price_market)cfg->market));
  }
  fmt_double(num, sizeof num, cfg->cpu_watts_per_core);
  P("cpu_watts_per_core", "%s", num);
  if (cfg->autotune) P("auto", "true");
  if (cfg->auto_measured[0]) {
    P("auto_threads", "%d", cfg->threads);
    P("auto_bucket_kb", "%d", cfg->bucket_kb);
    P("auto_allreduce", "%s", cfg->exact_reduce ? "tree"
                              : gf_allreduce_algo_name(cfg->allreduce));
    P("auto_measured", "%.*s", (int)sizeof cfg->auto_measured - 1,
      cfg->auto_measured);
  }
#undef P
  return n;
}
