/* train_config.c - the configuration of ganflow-train: one table of its
 * flags (gf/flags.h rows: name, field, bounds, default, help, MLflow param
 * and recipe key), and from it the defaults, the command line of DESIGN §2
 * (every bad value a usage error naming its flag, numbers through
 * gf/parse.h), --help, the MLflow params of a run and the training recipe
 * checkpoints record; the rules between flags (gf_train_config_finish).
 * Adding a flag is one row here and its field in gf/train.h. Nothing here
 * touches files (but --price-file's, read by _finish), the network or
 * MLflow. */
#include <assert.h>
#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "gf/comm.h"
#include "gf/ctx.h"
#include "gf/data.h"
#include "gf/energy.h"
#include "gf/flags.h"
#include "gf/fs.h"
#include "gf/gan.h"
#include "gf/mlflow_env.h"
#include "gf/ops.h"
#include "gf/parse.h"
#include "gf/sg2_config.h"
#include "gf/text.h"
#include "gf/train.h"
#include "mlflow/registry.h"

_Static_assert(GF_TRAIN_PATH_MAX == GF_PATH_MAX,
               "the config's path fields are the paths gf_base checks");

/* ---- flags with a grammar of their own -------------------------------- */

/* --device cpu|cuda|cuda:N: syntax only; availability in _finish. */
static gf_status parse_device(const gf_flag *row, void *obj, const char *v,
                              gf_err *err) {
  gf_backend b;
  int ordinal;
  GF_TRY(gf_device_parse(row->name, v, &b, &ordinal, err));
  return gf_flag_copy(row, obj, v, err);
}

/* --resume auto|never|PATH. */
static gf_status parse_resume(const gf_flag *row, void *obj, const char *v,
                              gf_err *err) {
  gf_train_config *cfg = obj;
  (void)row;
  if (strcmp(v, "auto") == 0) {
    cfg->resume = GF_RESUME_AUTO;
  } else if (strcmp(v, "never") == 0) {
    cfg->resume = GF_RESUME_NEVER;
  } else if (!*v) {
    return gf_fail(err, GF_EINVAL, "--resume: empty (auto, never or a "
                   "checkpoint file)");
  } else {
    size_t n = strlen(v);
    if (n >= sizeof cfg->resume_path)
      return gf_fail(err, GF_EINVAL, "--resume: value longer than %zu "
                     "characters", sizeof cfg->resume_path - 1);
    memcpy(cfg->resume_path, v, n + 1);
    cfg->resume = GF_RESUME_PATH;
  }
  return GF_OK;
}

/* --alias NAME: "" (none) or a valid MLflow alias. */
static gf_status parse_alias(const gf_flag *row, void *obj, const char *v,
                             gf_err *err) {
  if (*v && !mlflow_alias_is_valid(v))
    return gf_fail(err, GF_EINVAL, "--alias: '%s' is not a valid MLflow "
                   "alias ([A-Za-z0-9_-]+, not 'latest' or v<digits>)", v);
  return gf_flag_copy(row, obj, v, err);
}

/* --promote-if-better ALIAS[:METRIC[:min|max]] (METRIC swd/avg, min). */
static gf_status parse_promote(const gf_flag *row, void *obj, const char *arg,
                               gf_err *err) {
  gf_train_config *cfg = obj;
  (void)row;
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

/* ---- params shown otherwise than the field ----------------------------- */

#define TEXT(fn, ...)                                                     \
  static void fn(const gf_flag *row, const void *obj, char *out,          \
                 size_t cap) {                                            \
    const gf_train_config *cfg = obj;                                     \
    (void)row;                                                            \
    GF_FORMAT_FITS(out, cap, __VA_ARGS__);                                \
  }

static int world_of(const gf_train_config *cfg) {
  return cfg->world_size > 0 ? cfg->world_size : 1;
}

TEXT(fid_images_text, "%d", cfg->fid_images ? cfg->fid_images
                                            : cfg->eval_images)
TEXT(local_batch_text, "%d", cfg->batch / world_of(cfg))
TEXT(allreduce_text, "%s", cfg->exact_reduce ? "tree"
     : gf_allreduce_algo_name((gf_allreduce_algo)cfg->allreduce))
TEXT(grad_accum_text, "%d", cfg->exact_reduce
     ? cfg->exact_shards / world_of(cfg) : cfg->grad_accum)
TEXT(export_text, "%s", cfg->ema_decay > 0 && !cfg->export_raw ? "ema"
                                                               : "raw")
TEXT(threads_text, "%d", cfg->threads)
TEXT(bucket_text, "%d", cfg->bucket_kb)

#define ACTIVE(fn, expr)                                                  \
  static bool fn(const void *obj) {                                       \
    const gf_train_config *cfg = obj;                                     \
    return (expr);                                                        \
  }

ACTIVE(conv_model, cfg->model != GF_ARCH_MLP)
ACTIVE(fid_or_kid, (cfg->eval_metrics & (GF_EVAL_FID | GF_EVAL_KID)) != 0)
ACTIVE(has_ema, cfg->ema_decay > 0 || cfg->model == GF_ARCH_STYLEGAN2)
ACTIVE(is_sg2, cfg->model == GF_ARCH_STYLEGAN2)
ACTIVE(sg2_aug_p, cfg->model == GF_ARCH_STYLEGAN2 && cfg->aug != GF_TRAIN_AUG_NONE)
ACTIVE(sg2_ada, cfg->model == GF_ARCH_STYLEGAN2 && cfg->aug == GF_TRAIN_AUG_ADA)
ACTIVE(has_r1, cfg->r1_gamma > 0)
ACTIVE(has_price, cfg->price_per_hour >= 0)
ACTIVE(has_price_file, cfg->price_file[0] != '\0')
ACTIVE(has_kind, cfg->instance_kind[0] != '\0')
ACTIVE(autotune_on, cfg->autotune)
ACTIVE(auto_chosen, cfg->auto_measured[0] != '\0')

/* ---- the table --------------------------------------------------------- */

enum { S_DATA, S_TRAIN, S_RECIPE, S_SG2, S_RANKS, S_CKPT, S_MON, S_COST,
       S_MLFLOW, S_COUNT };

static const char *const k_sections[S_COUNT] = {
  [S_DATA] = "Data and model:",
  [S_TRAIN] = "Training:",
  [S_RECIPE] = "GAN recipe:",
  [S_SG2] = "StyleGAN2-ADA (--model stylegan2; --batch, --lr-g, --lr-d, "
            "--ema-rampup, --z-dim,\n--r1 and --pl-weight default to the "
            "--cfg preset's values; --r1-every is D's\nlazy R1 interval):",
  [S_RANKS] = "Multiple ranks (launch with `ganflow launch`, which restarts "
              "failed jobs,\nmpirun, srun, or torchrun-style RANK, "
              "WORLD_SIZE, LOCAL_RANK,\nLOCAL_WORLD_SIZE, MASTER_ADDR, "
              "MASTER_PORT):",
  [S_CKPT] = "Checkpoints:",
  [S_MON] = "Monitoring:",
  [S_COST] = "Cost and energy (metrics energy/joules, cost/usd, "
             "cost/usd_per_1k_images,\nsummed over every rank and every "
             "restart of the run):",
  [S_MLFLOW] = "MLflow:",
};

static const gf_flag_choice k_models[] = {
  {"dcgan", GF_ARCH_DCGAN}, {"resnet", GF_ARCH_RESNET}, {"mlp", GF_ARCH_MLP},
  {"stylegan2", GF_ARCH_STYLEGAN2}, {NULL, 0}};
/* gf_sg2_preset_name's words (the official --cfg). */
static const gf_flag_choice k_sg2_presets[] = {
  {"auto", GF_SG2_AUTO}, {"stylegan2", GF_SG2_STYLEGAN2},
  {"paper256", GF_SG2_PAPER256}, {"paper512", GF_SG2_PAPER512},
  {"paper1024", GF_SG2_PAPER1024}, {"cifar", GF_SG2_CIFAR}, {NULL, 0}};
static const gf_flag_choice k_aug[] = {
  {"ada", GF_TRAIN_AUG_ADA}, {"fixed", GF_TRAIN_AUG_FIXED},
  {"noaug", GF_TRAIN_AUG_NONE}, {NULL, 0}};
static const gf_flag_choice k_losses[] = {
  {"bce", GF_GAN_LOSS_BCE}, {"hinge", GF_GAN_LOSS_HINGE},
  {"wgan", GF_GAN_LOSS_WGAN}, {NULL, 0}};
static const gf_flag_choice k_allreduce[] = {
  {"ring", GF_ALLREDUCE_ENGINE}, {"reduce-bcast", GF_ALLREDUCE_REDUCE_BCAST},
  {"hierarchical", GF_ALLREDUCE_HIER}, {"tree", GF_ALLREDUCE_TREE},
  {NULL, 0}};
static const gf_flag_choice k_compress[] = {{"none", 0}, {"bf16", 1},
                                            {NULL, 0}};
static const gf_flag_choice k_export[] = {{"ema", 0}, {"raw", 1}, {NULL, 0}};
/* In the order the params and the recipe write them. */
static const gf_flag_choice k_metrics[] = {
  {"swd", GF_EVAL_SWD}, {"fid", GF_EVAL_FID}, {"kid", GF_EVAL_KID},
  {NULL, 0}};
static const gf_flag_choice k_diffaug[] = {
  {"color", GF_AUG_COLOR}, {"translation", GF_AUG_TRANSLATION},
  {"cutout", GF_AUG_CUTOUT}, {NULL, 0}};
static const gf_flag_choice k_price_units[] = {
  {"node", GF_PRICE_PER_NODE}, {"gpu", GF_PRICE_PER_GPU}, {NULL, 0}};
static const gf_flag_choice k_markets[] = {
  {"on-demand", GF_MARKET_ON_DEMAND}, {"spot", GF_MARKET_SPOT}, {NULL, 0}};

#define T gf_train_config
#define FIELD(f) GF_FLAG_FIELD(T, f)
/* steps < 2^32 keeps the Philox keys; cadences up to 2^40 */
#define BIG (INT64_C(1) << 40)

/* In the order of the MLflow params (gf_train_config_params) and of the
 * recipe (gf_train_recipe); --help shows them by section. */
static const gf_flag k_rows[] = {
  {.name = "--data", .arg = "SPEC", .kind = GF_FLAG_STR, FIELD(data),
   .nonempty = true, .def_help = "required", .section = S_DATA,
   .param = "data",
   .help = "[idx:|cifar10:|images:]DIR: MNIST-format IDX files (plain or "
           ".gz), CIFAR-10 binary batches, or a folder of PNG/JPEG images"},
  {.name = "--model", .kind = GF_FLAG_CHOICE, FIELD(model),
   .choices = k_models, .def_i = GF_ARCH_DCGAN, .section = S_DATA,
   .param = "model",
   .help = "network: DCGAN, SNGAN's residual G and D, the paper's MLP, or "
           "StyleGAN2-ADA (its flags below)"},
  {.name = "--image-size", .arg = "N", .kind = GF_FLAG_INT,
   FIELD(image_size), .lo = 1, .hi = 4096, .def_i = 28,
   GF_FLAG_GIVEN(T, image_size_set), .def_help = "28; stylegan2 32",
   .section = S_DATA, .param = "image_size",
   .help = "image side in pixels (the data is resized to it); dcgan, "
           "resnet: 28, 32 or 64; stylegan2: a power of two, 32 to 1024"},
  {.name = "--channels", .arg = "N", .kind = GF_FLAG_INT, FIELD(channels),
   .lo = 1, .hi = 4, .def_i = 1, .section = S_DATA, .param = "channels",
   .help = "1 (gray) or 3 (RGB)"},
  {.name = "--z-dim", .arg = "N", .kind = GF_FLAG_INT, FIELD(z_dim),
   .lo = 1, .hi = 4096, .def_i = 0, GF_FLAG_GIVEN(T, z_dim_set),
   .def_help = "mlp 50, dcgan 100, resnet 128, stylegan2 512",
   .section = S_DATA,
   .param = "z_dim", .help = "latent size"},
  {.name = "--width", .arg = "N", .kind = GF_FLAG_INT, FIELD(width),
   .lo = 1, .hi = 4096, .def_i = 64, GF_FLAG_GIVEN(T, width_set),
   .section = S_DATA, .param = "width", .active = conv_model,
   .help = "dcgan's and resnet's base width: G's ngf and D's ndf"},
  {.name = "--steps", .arg = "N", .kind = GF_FLAG_I64, FIELD(steps),
   .lo = 1, .hi = UINT32_MAX, .def_i = 5000, .section = S_TRAIN,
   .param = "steps", .help = "optimizer steps in all"},
  {.name = "--batch", .arg = "N", .kind = GF_FLAG_INT, FIELD(batch),
   .lo = 2, .hi = 65536, .def_i = 64, GF_FLAG_GIVEN(T, batch_set),
   .def_help = "64; stylegan2 the preset's", .section = S_TRAIN,
   .param = "batch",
   .help = "images per step, all ranks together"},
  {.name = "--lr-g", .arg = "X", .kind = GF_FLAG_F64, FIELD(lr_g), .flo = 0,
   .fhi = 1, .fopen = GF_PARSE_LO_OPEN, .def_f = 2e-4,
   .def_help = "2e-4; stylegan2 the preset's", GF_FLAG_GIVEN(T, lr_g_set),
   .section = S_TRAIN, .param = "lr_g",
   .help = "Adam learning rate of G, in (0, 1] (betas 0.5, 0.999)"},
  {.name = "--lr-d", .arg = "X", .kind = GF_FLAG_F64, FIELD(lr_d), .flo = 0,
   .fhi = 1, .fopen = GF_PARSE_LO_OPEN, .def_f = 2e-4,
   .def_help = "2e-4; stylegan2 the preset's", GF_FLAG_GIVEN(T, lr_d_set),
   .section = S_TRAIN, .param = "lr_d",
   .help = "Adam learning rate of D, in (0, 1]"},
  {.name = "--seed", .arg = "N", .kind = GF_FLAG_U64, FIELD(seed),
   .ulo = 0, .uhi = UINT64_MAX, .def_u = 1, .section = S_TRAIN,
   .param = "seed", .help = "every random number derives from it"},
  {.name = "--device", .arg = "cpu|cuda[:N]", .kind = GF_FLAG_STR,
   FIELD(device), .parse = parse_device, .def_s = "cpu", .section = S_TRAIN,
   .param = "device",
   .help = "where the networks train: CPU or CUDA GPU N"},
  {.name = "--threads", .arg = "N", .kind = GF_FLAG_INT, FIELD(threads),
   .lo = 0, .hi = 4096, .def_i = 0, GF_FLAG_GIVEN(T, threads_set),
   .section = S_TRAIN, .param = "threads",
   .help = "CPU threads, 0 = every core; a bit-identical resume needs the "
           "same value"},
  {.name = "--checkpoint-dir", .arg = "DIR", .kind = GF_FLAG_STR,
   FIELD(checkpoint_dir), .nonempty = true,
   .def_help = "checkpoints/<experiment>/<run-name or default>",
   .section = S_CKPT, .help = "where the run's checkpoints are kept"},
  {.name = "--checkpoint-every", .arg = "N", .kind = GF_FLAG_I64,
   FIELD(checkpoint_every), .lo = 0, .hi = BIG, .def_i = 500,
   .section = S_CKPT, .param = "checkpoint_every",
   .help = "steps between checkpoints; 0 = at the end only"},
  {.name = "--keep", .arg = "N", .kind = GF_FLAG_INT, FIELD(keep), .lo = 1,
   .hi = 1000000, .def_i = 3, .section = S_CKPT, .param = "keep",
   .help = "newest checkpoints kept"},
  {.name = "--resume", .arg = "auto|never|PATH", .kind = GF_FLAG_CUSTOM,
   .parse = parse_resume, .def_s = "auto", .section = S_CKPT,
   .help = "auto: continue from the newest good checkpoint of the dir into "
           "the same MLflow run; never: a new run (refused when the dir "
           "holds checkpoints or a run_id of another run: empty it or pick "
           "another dir); PATH: that checkpoint file"},
  {.name = "--sample-every", .arg = "N", .kind = GF_FLAG_I64,
   FIELD(sample_every), .lo = 0, .hi = BIG, .def_i = 500, .section = S_MON,
   .param = "sample_every",
   .help = "steps between 8x8 sample grids (PNG artifacts); 0 = never"},
  {.name = "--eval-every", .arg = "N", .kind = GF_FLAG_I64,
   FIELD(eval_every), .lo = 0, .hi = BIG, .def_i = 1000, .section = S_MON,
   .param = "eval_every", .help = "steps between evaluations; 0 = never"},
  {.name = "--log-every", .arg = "N", .kind = GF_FLAG_I64, FIELD(log_every),
   .lo = 1, .hi = BIG, .def_i = 10, .section = S_MON, .param = "log_every",
   .help = "steps between metric points and log lines"},
  {.name = "--deterministic", .kind = GF_FLAG_BOOL, FIELD(deterministic),
   .section = S_TRAIN, .param = "deterministic",
   .help = "deterministic GPU algorithms (the CPU path always is)"},
  {.kind = GF_FLAG_INT, FIELD(world_size), .def_i = 1, .lo = 1,
   .hi = INT32_MAX, .param = "world_size"}, /* set by main from the launch */
  {.name = "--eval-images", .arg = "N", .kind = GF_FLAG_INT,
   FIELD(eval_images), .lo = 2, .hi = 100000, .def_i = GF_TRAIN_EVAL_IMAGES,
   .def_help = "2000, or the dataset", .section = S_MON,
   .param = "eval_images", .help = "images per set in the SWD"},
  {.name = "--eval-metrics", .arg = "LIST", .kind = GF_FLAG_BITS,
   FIELD(eval_metrics), .choices = k_metrics, .def_i = GF_EVAL_SWD,
   .section = S_MON, .param = "eval_metrics",
   .help = "what an evaluation computes: swd, fid, kid, comma-separated; "
           "fid and kid use the FID Inception-v3 (GANFLOW_INCEPTION, else "
           "the file deploy/install-deps.sh installs) and are not computed "
           "at step 0"},
  {.name = "--fid-images", .arg = "N", .kind = GF_FLAG_INT,
   FIELD(fid_images), .lo = 2, .hi = 100000, .def_i = 0,
   .def_help = "--eval-images", .section = S_MON, .param = "fid_images",
   .text = fid_images_text, .active = fid_or_kid,
   .help = "generated and real images in FID/KID; the real set's features "
           "are cached (GANFLOW_CACHE_DIR, else ~/.cache/ganflow/fid)"},
  {.kind = GF_FLAG_CUSTOM, .param = "local_batch", .text = local_batch_text},
  {.name = "--allreduce", .arg = "ALGO", .kind = GF_FLAG_CHOICE,
   FIELD(allreduce), .choices = k_allreduce, .def_i = GF_ALLREDUCE_ENGINE,
   GF_FLAG_GIVEN(T, allreduce_set), .section = S_RANKS, .param = "allreduce",
   .text = allreduce_text,
   .help = "ring (the engine's own), reduce-bcast, hierarchical or tree"},
  {.name = "--sync-bn", .kind = GF_FLAG_BOOL, FIELD(sync_bn),
   .section = S_RANKS, .param = "sync_bn",
   .help = "batch norm over the global batch, not each rank's"},
  {.name = "--grad-accum", .arg = "K", .kind = GF_FLAG_INT,
   FIELD(grad_accum), .lo = 1, .hi = 4096, .def_i = 1, .section = S_RANKS,
   .param = "grad_accum", .text = grad_accum_text,
   .help = "cut each rank's slice into K micro-batches"},
  {.name = "--exact-reduce", .kind = GF_FLAG_BOOL, FIELD(exact_reduce),
   .section = S_RANKS, .param = "exact_reduce",
   .help = "bit-identical at 1, 2, 4, ... ranks: the batch is cut into "
           "--exact-shards micro-batches whose gradients add in a fixed "
           "tree (CPU only)"},
  {.name = "--exact-shards", .arg = "S", .kind = GF_FLAG_INT,
   FIELD(exact_shards), .lo = 1, .hi = 4096, .def_i = 8, .section = S_RANKS,
   .help = "the micro-batches of --exact-reduce, a power of two"},
  {.name = "--bucket-kb", .arg = "N", .kind = GF_FLAG_INT, FIELD(bucket_kb),
   .lo = 4, .hi = 1 << 20, .def_i = 1024, GF_FLAG_GIVEN(T, bucket_set),
   .section = S_RANKS, .help = "gradient all-reduce bucket size"},
  {.name = "--compress", .kind = GF_FLAG_CHOICE, FIELD(compress_bf16),
   .choices = k_compress, .def_i = 0, .section = S_RANKS,
   .param = "compress",
   .help = "gradient buckets on the wire as f32 or bf16 (half the bytes, "
           "sums rounded to bf16; not with --exact-reduce)"},
  {.name = "--comm-timeout", .arg = "S", .kind = GF_FLAG_F64,
   FIELD(comm_timeout), .flo = 1, .fhi = 86400, .def_f = 300,
   .section = S_RANKS,
   .help = "seconds a collective may wait before the job fails"},
  {.name = "--check-every", .arg = "N", .kind = GF_FLAG_I64,
   FIELD(check_every), .lo = 0, .hi = BIG, .def_i = 100, .section = S_RANKS,
   .help = "steps between checks that every rank holds the same "
           "parameters; 0 = never"},
  {.name = "--loss", .kind = GF_FLAG_CHOICE, FIELD(loss),
   .choices = k_losses, .def_i = GF_GAN_LOSS_BCE, .section = S_RECIPE,
   .param = "loss", .recipe = "loss",
   .help = "bce: DCGAN's non-saturating loss; hinge: SNGAN's and BigGAN's; "
           "wgan: the Wasserstein critic loss"},
  {.name = "--d-steps", .arg = "K", .kind = GF_FLAG_INT, FIELD(d_steps),
   .lo = 1, .hi = 100, .def_i = 1, .section = S_RECIPE, .param = "d_steps",
   .recipe = "d_steps",
   .help = "D updates per G update, each on its own batch and latents"},
  {.name = "--sn", .kind = GF_FLAG_BOOL, FIELD(spectral_norm),
   .section = S_RECIPE, .param = "spectral_norm",
   .help = "spectral normalization of every D weight, and D without batch "
           "norm (SNGAN)"},
  {.name = "--ema-decay", .arg = "D", .kind = GF_FLAG_F64, FIELD(ema_decay),
   .flo = 0, .fhi = 1, .fopen = GF_PARSE_HI_OPEN, .def_f = 0,
   .section = S_RECIPE, .param = "ema_decay", .recipe = "ema_decay",
   .help = "keep an exponential moving average of G, updated after every G "
           "update with this decay, e.g. 0.999; 0: none"},
  {.name = "--ema-rampup", .arg = "R", .kind = GF_FLAG_F64,
   FIELD(ema_rampup), .flo = 0, .fhi = 1e6, .def_f = 0.05,
   GF_FLAG_GIVEN(T, ema_rampup_set),
   .def_help = "0.05; stylegan2 the preset's", .section = S_RECIPE, .param = "ema_rampup", .recipe = "ema_rampup",
   .active = has_ema,
   .help = "the EMA's half-life is capped at R x the G updates so far, as "
           "StyleGAN2-ADA's; 0: none"},
  {.name = "--export-generator", .kind = GF_FLAG_CHOICE, FIELD(export_raw),
   .choices = k_export, .def_i = 0, GF_FLAG_GIVEN(T, export_set),
   .def_help = "ema when there is one, else raw", .section = S_RECIPE,
   .param = "export_generator", .text = export_text,
   .help = "the generator of sample grids, evaluations and the registered "
           "model"},
  {.name = "--mirror", .kind = GF_FLAG_BOOL, FIELD(mirror),
   .section = S_RECIPE, .param = "mirror", .recipe = "mirror",
   .help = "x-flipped copies double the dataset"},
  {.name = "--r1", .arg = "GAMMA", .kind = GF_FLAG_F64, FIELD(r1_gamma),
   .flo = 0, .fhi = 1e6, .def_f = 0, GF_FLAG_GIVEN(T, r1_set),
   .def_help = "0; stylegan2: the preset's", .section = S_RECIPE,
   .param = "r1_gamma", .recipe = "r1",
   .help = "the R1 gradient penalty on real images (StyleGAN's); needs a D "
           "without batch norm (dcgan with --sn, resnet, mlp)"},
  {.name = "--r1-every", .arg = "N", .kind = GF_FLAG_INT, FIELD(r1_every),
   .lo = 1, .hi = 1000000, .def_i = 16, .section = S_RECIPE,
   .param = "r1_every", .recipe = "r1_every", .active = has_r1,
   .help = "lazy R1: every N D updates, weighted by N"},
  {.name = "--diffaug", .arg = "LIST", .kind = GF_FLAG_BITS, FIELD(diffaug),
   .choices = k_diffaug, .none = "none", .def_i = 0,
   .section = S_RECIPE, .param = "diffaug", .recipe = "diffaug",
   .help = "DiffAugment: none, or color, translation, cutout "
           "(comma-separated), applied to every image D sees, real and "
           "fake, differentiably for G"},
  {.name = "--cond", .kind = GF_FLAG_BOOL, FIELD(cond), .section = S_RECIPE,
   .param = "cond",
   .help = "class-conditional: G with conditional batch norm on a shared "
           "class embedding (BigGAN), D with a projection (Miyato & "
           "Koyama); needs labelled data; stylegan2: the official "
           "conditional G (c embedded into the mapping) and D (projection)"},
  {.name = "--cfg", .kind = GF_FLAG_CHOICE, FIELD(sg2_cfg),
   .choices = k_sg2_presets, .def_i = GF_SG2_AUTO, .section = S_SG2,
   .param = "sg2_cfg", .recipe = "cfg", .active = is_sg2,
   .recipe_if_active = true,
   .help = "the official preset: sizes and recipe (batch, lr, gamma, EMA, "
           "mixing) of train.py's --cfg"},
  {.name = "--map-layers", .arg = "N", .kind = GF_FLAG_INT, FIELD(map_layers),
   .lo = 1, .hi = 16, .def_i = 0, GF_FLAG_GIVEN(T, map_layers_set),
   .def_help = "the preset's", .section = S_SG2, .param = "map_layers",
   .recipe = "map", .active = is_sg2, .recipe_if_active = true,
   .help = "layers of G's mapping network"},
  {.name = "--cbase", .arg = "N", .kind = GF_FLAG_INT, FIELD(cbase),
   .lo = 1, .hi = 1 << 24, .def_i = 0, GF_FLAG_GIVEN(T, cbase_set),
   .def_help = "the preset's", .section = S_SG2, .param = "cbase",
   .recipe = "cbase", .active = is_sg2, .recipe_if_active = true,
   .help = "channel base: a block at resolution r has min(cbase / r, cmax) "
           "channels"},
  {.name = "--cmax", .arg = "N", .kind = GF_FLAG_INT, FIELD(cmax),
   .lo = 1, .hi = 4096, .def_i = 0, GF_FLAG_GIVEN(T, cmax_set),
   .def_help = "the preset's", .section = S_SG2, .param = "cmax",
   .recipe = "cmax", .active = is_sg2, .recipe_if_active = true,
   .help = "channel maximum"},
  {.name = "--aug", .kind = GF_FLAG_CHOICE, FIELD(aug), .choices = k_aug,
   .def_i = GF_TRAIN_AUG_ADA, .section = S_SG2, .param = "aug",
   .recipe = "aug", .active = is_sg2, .recipe_if_active = true,
   .help = "ada: augment every image D sees with p tuned towards "
           "--ada-target; fixed: at p --aug-p; noaug: none"},
  {.name = "--aug-p", .arg = "P", .kind = GF_FLAG_F64, FIELD(aug_p),
   .flo = 0, .fhi = 1, .def_f = 0, .section = S_SG2, .param = "aug_p",
   .recipe = "aug_p", .active = sg2_aug_p, .recipe_if_active = true,
   .help = "augmentation probability at the start (fixed: throughout)"},
  {.name = "--ada-target", .arg = "T", .kind = GF_FLAG_F64, FIELD(ada_target),
   .flo = 0, .fhi = 1, .fopen = GF_PARSE_LO_OPEN, .def_f = 0.6,
   .section = S_SG2, .param = "ada_target", .recipe = "ada_target",
   .active = sg2_ada, .recipe_if_active = true,
   .help = "ADA's target for E[sign(D(real))]"},
  {.name = "--ada-kimg", .arg = "K", .kind = GF_FLAG_F64, FIELD(ada_kimg),
   .flo = 0, .fhi = 1e6, .fopen = GF_PARSE_LO_OPEN, .def_f = 500,
   .section = S_SG2, .param = "ada_kimg", .recipe = "ada_kimg",
   .active = sg2_ada, .recipe_if_active = true,
   .help = "thousands of images for p to go from 0 to 1 at most"},
  {.name = "--pl-weight", .arg = "W", .kind = GF_FLAG_F64, FIELD(pl_weight),
   .flo = 0, .fhi = 1e6, .def_f = 0, GF_FLAG_GIVEN(T, pl_weight_set),
   .def_help = "the preset's", .section = S_SG2,
   .param = "pl_weight", .recipe = "pl", .active = is_sg2,
   .recipe_if_active = true,
   .help = "path-length regularizer weight (lazy, every 4 steps)"},
  {.name = "--style-mixing", .arg = "P", .kind = GF_FLAG_F64,
   FIELD(style_mixing), .flo = 0, .fhi = 1, .def_f = 0,
   GF_FLAG_GIVEN(T, style_mixing_set), .def_help = "the preset's",
   .section = S_SG2, .param = "style_mixing", .recipe = "mix",
   .active = is_sg2, .recipe_if_active = true,
   .help = "style-mixing probability"},
  {.name = "--ema-kimg", .arg = "K", .kind = GF_FLAG_F64, FIELD(ema_kimg),
   .flo = 0, .fhi = 1e6, .def_f = 0, GF_FLAG_GIVEN(T, ema_kimg_set),
   .def_help = "the preset's", .section = S_SG2, .param = "ema_kimg",
   .recipe = "ema_kimg", .active = is_sg2, .recipe_if_active = true,
   .help = "half-life of G's EMA in thousands of images (G_ema makes the "
           "samples and the model)"},
  {.name = "--price-per-hour", .arg = "USD", .kind = GF_FLAG_F64,
   FIELD(price_per_hour), .flo = 0, .fhi = 1e6, .def_f = -1,
   .def_help = "none: energy only", .section = S_COST,
   .param = "price_usd_per_hour", .active = has_price,
   .help = "price of a slot-hour"},
  {.name = "--price-unit", .kind = GF_FLAG_CHOICE, FIELD(price_unit),
   .choices = k_price_units, .def_i = GF_PRICE_PER_NODE,
   GF_FLAG_GIVEN(T, price_unit_set), .section = S_COST,
   .param = "price_unit", .active = has_price,
   .help = "the price is per machine (counted once per node) or per rank's "
           "slot: its GPU, or a CPU rank"},
  {.name = "--price-file", .arg = "FILE", .kind = GF_FLAG_STR,
   FIELD(price_file), .nonempty = true, .section = S_COST,
   .param = "price_file", .active = has_price_file,
   .help = "prices by instance kind and market, lines of KIND MARKET "
           "USD_PER_HOUR node|gpu ('#' comments)"},
  {.name = "--instance-kind", .arg = "KIND", .kind = GF_FLAG_STR,
   FIELD(instance_kind), .nonempty = true,
   .def_help = "GANFLOW_INSTANCE_KIND", .section = S_COST,
   .param = "instance_kind", .active = has_kind,
   .help = "the entry of --price-file"},
  {.name = "--market", .kind = GF_FLAG_CHOICE, FIELD(market),
   .choices = k_markets, .def_i = GF_MARKET_ON_DEMAND, .section = S_COST, .param = "market", .active = has_kind,
   .help = "the entry's market"},
  {.name = "--cpu-watts-per-core", .arg = "W", .kind = GF_FLAG_F64,
   FIELD(cpu_watts_per_core), .flo = 0, .fhi = 1000,
   .fopen = GF_PARSE_LO_OPEN, .def_f = 10, .section = S_COST,
   .param = "cpu_watts_per_core",
   .help = "CPU energy estimate per busy core where RAPL "
           "(/sys/class/powercap) cannot be read"},
  {.name = "--auto", .kind = GF_FLAG_BOOL, FIELD(autotune),
   .section = S_TRAIN, .param = "auto", .active = autotune_on,
   .help = "tuned at start: before step 1, time 1 warm-up and 3 steps of "
           "the run's first batch on a scratch copy of the model for each "
           "candidate (at most 12, a few seconds for small models) and train "
           "with the fastest --threads (1, 2, 4, .. cores per rank), and "
           "with several ranks --bucket-kb (256, 1024, 4096) and "
           "--allreduce (mpirun ranks); those given stay fixed. The choice "
           "is kept in <checkpoint-dir>/auto and reused by every resume of "
           "the run (CPU only)"},
  /* what --auto chose, set by gf_train_run (train_auto.c) */
  {.kind = GF_FLAG_CUSTOM, .param = "auto_threads", .text = threads_text,
   .active = auto_chosen},
  {.kind = GF_FLAG_CUSTOM, .param = "auto_bucket_kb", .text = bucket_text,
   .active = auto_chosen},
  {.kind = GF_FLAG_CUSTOM, .param = "auto_allreduce", .text = allreduce_text,
   .active = auto_chosen},
  {.kind = GF_FLAG_STR, FIELD(auto_measured), .param = "auto_measured",
   .active = auto_chosen},
  {.name = "--experiment", .arg = "NAME", .kind = GF_FLAG_STR,
   FIELD(experiment), .nonempty = true, .def_s = GF_TRAIN_DEFAULT_EXPERIMENT,
   .def_help = "MLFLOW_EXPERIMENT_NAME, else " GF_TRAIN_DEFAULT_EXPERIMENT,
   .section = S_MLFLOW, .help = "experiment"},
  {.name = "--run-name", .arg = "NAME", .kind = GF_FLAG_STR,
   FIELD(run_name), .def_help = "the server picks one", .section = S_MLFLOW,
   .help = "run name"},
  {.name = "--register-model", .arg = "NAME", .kind = GF_FLAG_STR,
   FIELD(register_model), GF_FLAG_GIVEN(T, register_set),
   .def_help = "ganflow-<model>", .section = S_MLFLOW,
   .help = "registered model of the final generator; '' skips "
           "registration"},
  {.name = "--alias", .arg = "NAME", .kind = GF_FLAG_STR, FIELD(alias),
   .parse = parse_alias, .def_help = "none", .section = S_MLFLOW,
   .help = "alias set on the new version"},
  {.name = "--promote-if-better", .arg = "ALIAS[:METRIC[:min|max]]",
   .kind = GF_FLAG_CUSTOM, .parse = parse_promote, .section = S_MLFLOW,
   .help = "move ALIAS to the new version only when its last METRIC "
           "(swd/avg) beats the version holding ALIAS (min: lower is "
           "better); a refusal does not fail the run (tag ganflow.promotion "
           "says why)"},
};

#undef FIELD
#undef T

static const gf_flag_table k_table =
    GF_FLAG_TABLE(k_rows, k_sections, S_COUNT, 26);

const gf_flag_table *gf_train_flags(void) { return &k_table; }

void gf_train_config_default(gf_train_config *cfg) {
  memset(cfg, 0, sizeof *cfg);
  gf_flags_defaults(&k_table, cfg);
  /* A name from the environment that does not fit leaves "", which
   * gf_train_config_finish refuses naming the variable unless --experiment
   * replaced it. */
  const char *exp = getenv("MLFLOW_EXPERIMENT_NAME");
  if (exp && *exp) {
    int n = snprintf(cfg->experiment, sizeof cfg->experiment, "%s", exp);
    if (!gf_fits(n, sizeof cfg->experiment)) cfg->experiment[0] = '\0';
  }
}

/* ---- the rules between flags -------------------------------------------- */

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
    GF_FORMAT_FITS(dst, cap, "default");
  }
}

static double f32_decimal(float f) {
  char b[32];
  GF_FORMAT_FITS(b, sizeof b, "%.7g", (double)f);
  return strtod(b, NULL);
}

/* The stylegan2 rules: the preset's recipe fills what was not given,
 * then what the run cannot do yet is refused naming the flag. */
static gf_status finish_sg2(gf_train_config *cfg, gf_err *err) {
  if (!cfg->image_size_set) cfg->image_size = 32;
  int r = cfg->image_size;
  if (r < GF_SG2_MIN_RES || r > GF_SG2_MAX_RES || (r & (r - 1)))
    return gf_fail(err, GF_EINVAL, "--image-size: stylegan2 takes a power of "
                   "two from %d to %d, not %d (the data is resized to it)",
                   GF_SG2_MIN_RES, GF_SG2_MAX_RES, r);
  if (cfg->channels != 1 && cfg->channels != 3)
    return gf_fail(err, GF_EINVAL, "--channels: stylegan2 takes 1 or 3, not "
                   "%d", cfg->channels);
  gf_sg2_config c;
  gf_sg2_recipe rec;
  gf_err pe;
  if (gf_sg2_config_preset(&c, &rec, (gf_sg2_preset)cfg->sg2_cfg, r,
                           cfg->channels, 0, world_of(cfg), &pe) != GF_OK)
    return gf_fail(err, GF_EINVAL, "--cfg %s: %s",
                   gf_sg2_preset_name((gf_sg2_preset)cfg->sg2_cfg), pe.msg);
  if (!cfg->z_dim_set) cfg->z_dim = c.z_dim;
  if (!cfg->batch_set) cfg->batch = rec.batch;
  /* the recipe's floats at their shortest decimal (0.0025, not
   * 0.0024999999441206455), as gf_sg2_gan_hp_default takes them */
  if (!cfg->lr_g_set) cfg->lr_g = f32_decimal(rec.lr);
  if (!cfg->lr_d_set) cfg->lr_d = f32_decimal(rec.lr);
  if (!cfg->map_layers_set) cfg->map_layers = c.map_layers;
  if (!cfg->cbase_set) cfg->cbase = c.channel_base;
  if (!cfg->cmax_set) cfg->cmax = c.channel_max;
  if (!cfg->style_mixing_set) cfg->style_mixing = f32_decimal(rec.style_mixing);
  if (!cfg->ema_kimg_set) cfg->ema_kimg = f32_decimal(rec.ema_kimg);
  if (!cfg->ema_rampup_set) cfg->ema_rampup = f32_decimal(rec.ema_rampup);
  if (!cfg->r1_set) cfg->r1_gamma = f32_decimal(rec.r1_gamma);
  if (!cfg->pl_weight_set) cfg->pl_weight = f32_decimal(rec.pl_weight);
  gf_sg2_config want;
  GF_TRY(gf_train_sg2_config(cfg, 0, &want, err));
  const char *other = cfg->width_set ? "--width"
                    : cfg->loss != GF_GAN_LOSS_BCE ? "--loss"
                    : cfg->d_steps != 1 ? "--d-steps"
                    : cfg->spectral_norm ? "--sn"
                    : cfg->ema_decay > 0 ? "--ema-decay"
                    : cfg->diffaug ? "--diffaug"
                    : cfg->export_set ? "--export-generator"
                    : cfg->sync_bn ? "--sync-bn" : NULL;
  if (other)
    return gf_fail(err, GF_EINVAL, "%s: not a stylegan2 setting (it trains "
                   "with the official loss, EMA and ADA: --cfg, --ema-kimg, "
                   "--aug; see --help)", other);
  return GF_OK;
}

gf_status gf_train_sg2_config(const gf_train_config *cfg, int c_dim,
                              gf_sg2_config *out, gf_err *err) {
  if (cfg->model != GF_ARCH_STYLEGAN2)
    return gf_fail(err, GF_EINVAL, "--model %s is not stylegan2",
                   gf_arch_name(cfg->model));
  gf_err pe;
  if (gf_sg2_config_preset(out, NULL, (gf_sg2_preset)cfg->sg2_cfg,
                           cfg->image_size, cfg->channels, c_dim,
                           world_of(cfg), &pe) != GF_OK)
    return gf_fail(err, GF_EINVAL, "--cfg %s: %s",
                   gf_sg2_preset_name((gf_sg2_preset)cfg->sg2_cfg), pe.msg);
  out->z_dim = cfg->z_dim;
  out->map_layers = cfg->map_layers;
  out->channel_base = cfg->cbase;
  out->channel_max = cfg->cmax;
  if (gf_sg2_config_validate(out, &pe) != GF_OK)
    return gf_fail(err, GF_EINVAL, "--z-dim, --map-layers, --cbase, --cmax: "
                   "%s", pe.msg);
  return GF_OK;
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
    gf_backend b;
    int ordinal = 0;
    GF_TRY(gf_device_parse("--device", cfg->device, &b, &ordinal, err));
    if (gf_cuda_device_check(ordinal < 0 ? 0 : ordinal, &de) != GF_OK)
      return gf_fail(err, GF_EDEVICE, "--device %s: %s; use --device cpu",
                     cfg->device, de.msg);
  }
  if (cfg->model == GF_ARCH_STYLEGAN2) {
    GF_TRY(finish_sg2(cfg, err));
  } else if (cfg->sg2_cfg != GF_SG2_AUTO || cfg->map_layers_set ||
             cfg->cbase_set || cfg->cmax_set || cfg->aug != GF_TRAIN_AUG_ADA ||
             cfg->aug_p != 0 || cfg->ada_target != 0.6 ||
             cfg->ada_kimg != 500 || cfg->pl_weight != 0 ||
             cfg->style_mixing_set || cfg->ema_kimg_set) {
    return gf_fail(err, GF_EINVAL, "--cfg, --map-layers, --cbase, --cmax, "
                   "--aug, --aug-p, --ada-target, --ada-kimg, --pl-weight, "
                   "--style-mixing and --ema-kimg are for --model stylegan2, "
                   "not %s", gf_arch_name(cfg->model));
  }
  bool sg2 = cfg->model == GF_ARCH_STYLEGAN2;
  if (cfg->z_dim == 0)
    cfg->z_dim = cfg->model == GF_ARCH_MLP ? 50
               : cfg->model == GF_ARCH_RESNET ? 128 : 100;
  bool conv = cfg->model != GF_ARCH_MLP && !sg2;
  if (conv && cfg->image_size != 28 && cfg->image_size != 32 &&
      cfg->image_size != 64)
    return gf_fail(err, GF_EINVAL, "--image-size: %s is built for 28, 32 "
                   "or 64 pixels, not %d", gf_arch_name(cfg->model),
                   cfg->image_size);
  if (conv && cfg->channels != 1 && cfg->channels != 3)
    return gf_fail(err, GF_EINVAL, "--channels: %s takes 1 or 3, not %d",
                   gf_arch_name(cfg->model), cfg->channels);
  if (cfg->width_set && !conv && !sg2)
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
  if (cfg->model == GF_ARCH_STYLEGAN2) {
    /* model_config.h's stylegan2 fields, as an imported model's */
    gf_sg2_config c;
    GF_TRY(gf_train_sg2_config(cfg, 0, &c, err));
    out->ngf = out->ndf = c.channel_max;
    out->sg2.w_dim = c.w_dim;
    out->sg2.mapping_layers = c.map_layers;
    out->sg2.channel_base = c.channel_base;
    out->sg2.channel_max = c.channel_max;
    out->sg2.conv_clamp = (int)c.conv_clamp;
    return gf_model_config_validate(out, err);
  }
  if (cfg->model != GF_ARCH_MLP) {
    /* Radford et al. used 64 filters at 64x64; the small images keep it.
     * SNGAN's CIFAR networks have 256 (G) and 128 (D): --width 128. */
    out->ngf = cfg->width;
    out->ndf = cfg->width;
  }
  out->spectral_norm = cfg->spectral_norm;
  return gf_model_config_validate(out, err);
}

/* The environment variables ganflow-train reads as numbers, besides the
 * MLflow client's (gf/mlflow_env.h) and the launcher's (gf_launch_detect). */
static const gf_flag k_env_rows[] = {
  {.name = "MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", .kind = GF_FLAG_F64,
   GF_FLAG_FIELD(gf_train_config, sys_metrics_interval_s), .flo = 0,
   .fhi = 86400, .fopen = GF_PARSE_LO_OPEN,
   .help = "seconds between system-metric samples"},
};

static const gf_flag_table k_env_table =
    GF_FLAG_TABLE(k_env_rows, NULL, 1, 26);

const gf_flag_table *gf_train_env(void) { return &k_env_table; }

gf_parse_result gf_train_parse_args(gf_train_config *cfg, int argc,
                                    char **argv, gf_err *err) {
  gf_train_config_default(cfg);
  static const gf_flags_opts opts = {.hint = "(flags are --name VALUE)"};
  bool help = false;
  if (gf_flags_parse(&k_table, cfg, argc, argv, &opts, &help, NULL, err) !=
      GF_OK)
    return GF_PARSE_USAGE;
  if (help) return GF_PARSE_HELP;
  if (gf_flags_env(&k_env_table, cfg, gf_launch_getenv, NULL, err) != GF_OK ||
      gf_mlflow_env_check(gf_launch_getenv, NULL, err) != GF_OK ||
      gf_train_config_finish(cfg, err) != GF_OK)
    return GF_PARSE_USAGE;
  return GF_PARSE_OK;
}

void gf_train_usage(FILE *out, const char *prog) {
  fprintf(out,
"Usage: %s --data SPEC [options]\n"
"Trains a GAN (generator + discriminator) on an image dataset and tracks the\n"
"run in MLflow: params, metrics, system metrics, sample grids, checkpoints,\n"
"and at the end a registered model version.\n"
"\n", prog);
  gf_flags_usage(out, &k_table);
  fprintf(out,
"\n"
"Environment: MLFLOW_TRACKING_URI (http://127.0.0.1:5000),\n"
"MLFLOW_EXPERIMENT_NAME, MLFLOW_RUN_ID (log into that existing run),\n"
"MLFLOW_TRACKING_USERNAME/_PASSWORD/_TOKEN, MLFLOW_TRACKING_INSECURE_TLS,\n"
"MLFLOW_TRACKING_SERVER_CERT_PATH, MLFLOW_HTTP_REQUEST_MAX_RETRIES,\n"
"MLFLOW_HTTP_REQUEST_TIMEOUT, MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL\n"
"(seconds between system-metric samples, 10), GANFLOW_HEARTBEAT_DIR (set by\n"
"`ganflow launch`: each rank writes rank-<r>.hb there at every step).\n"
"Numbers (flags and variables) are plain decimals: 64, 2e-4, 0.5; no\n"
"spaces, '+', hex, nan or inf.\n"
"\n"
"The MLflow server must answer when the run starts (creating or resuming the\n"
"run, with the client's retries); otherwise ganflow-train exits 1 before\n"
"training. Once running, an outage never stops training: metrics wait in\n"
"<checkpoint-dir>/mlflow.outbox and are sent when the server returns (or by\n"
"`ganflow sync DIR`); artifact uploads that fail are reported and skipped.\n"
"SIGTERM/SIGINT: checkpoint at the next step, run KILLED, exit 0; a second\n"
"SIGINT exits at once (130). Exit status: 0 done, 1 error (run FAILED),\n"
"2 usage.\n");
}

gf_status gf_train_recipe(const gf_train_config *cfg, char *out, size_t cap,
                          gf_err *err) {
  return gf_flags_recipe(&k_table, cfg, "training recipe", out, cap, err);
}

/* Every param value fits by construction: numbers, fixed words, and the
 * text of config fields no longer than a value. */
_Static_assert(sizeof ((gf_train_config *)0)->data <= GF_TRAIN_PARAM_VAL_MAX &&
               sizeof ((gf_train_config *)0)->device <= GF_TRAIN_PARAM_VAL_MAX &&
               sizeof ((gf_train_config *)0)->price_file <=
                   GF_TRAIN_PARAM_VAL_MAX &&
               sizeof ((gf_train_config *)0)->auto_measured <=
                   GF_TRAIN_PARAM_VAL_MAX,
               "config text fits a param value");

size_t gf_train_config_params(const gf_train_config *cfg,
                              gf_train_param *out, size_t n_max) {
  size_t n = 0;
  for (size_t i = 0; i < k_table.n && n < n_max; i++)
    if (gf_flag_param(&k_rows[i], cfg, out[n].value, sizeof out[n].value)) {
      out[n].key = k_rows[i].param;
      n++;
    }
  return n;
}
