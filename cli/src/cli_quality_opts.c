/* cli_quality_opts.c - the command lines of `ganflow fid` and `ganflow
 * eval` (gf/cli_quality.h) as tables of gf/flags.h rows: strict parsing
 * (numbers through gf/parse.h), every bad value one GF_EINVAL naming its
 * flag, --help from the rows; and what both commands share: the compute
 * context, the feature cache directory. Does no work itself. */
#include <stddef.h>
#include <string.h>

#include "gf/cli_quality.h"
#include "gf/feat_cache.h"
#include "gf/flags.h"
#include "gf/fs.h"
#include "gf/parse.h"
#include "gf/text.h"

gf_status gf_cli_quality_ctx(gf_ctx *ctx, gf_backend backend, int index,
                             int threads, gf_err *err) {
  memset(ctx, 0, sizeof *ctx);
  if (backend == GF_BACKEND_CUDA) {
    if (!gf_cuda_built())
      return gf_fail(err, GF_EUNSUPPORTED, "--device cuda: this build has no "
                     "CUDA backend; use --device cpu");
    gf_err de;
    if (gf_cuda_device_check(index, &de) != GF_OK)
      return gf_fail(err, GF_EDEVICE, "--device cuda:%d: %s; use --device "
                     "cpu", index, de.msg);
  }
  gf_ctx_config cc = {.backend = backend, .nthreads = threads,
                     .device_index = index,
                     .cpu_layout = GF_CPU_LAYOUT_PLAIN};
  return gf_ctx_init(ctx, &cc, err);
}

gf_status gf_cli_cache_dir(const char *dir, char *buf, size_t cap,
                           bool *no_default, gf_err *err) {
  *no_default = false;
  if (dir) return gf_format(buf, cap, err, "--cache-dir", "%s", dir);
  gf_err e;
  gf_status st = gf_feat_cache_default_dir(buf, cap, &e);
  if (st == GF_ENOTFOUND) {
    buf[0] = '\0';
    *no_default = true;
    return GF_OK;
  }
  if (st != GF_OK) return gf_fail(err, st, "feature cache: %s", e.msg);
  return GF_OK;
}

/* ---- values with a grammar of their own -------------------------------- */

/* A path value: non-empty and short enough for the system. */
static gf_status path_value(const char *flag, const char *v, gf_err *err) {
  if (!v || !*v) return gf_fail(err, GF_EINVAL, "%s: empty path", flag);
  return gf_path_check(flag, v, 0, err);
}

static gf_status path_arg(const gf_flag *row, void *obj, const char *v,
                          gf_err *err) {
  GF_TRY(path_value(row->name, v, err));
  return gf_flag_copy(row, obj, v, err);
}

/* --cache-dir: "" turns the cache off; anything else must be a path. */
static gf_status cache_arg(const gf_flag *row, void *obj, const char *v,
                           gf_err *err) {
  if (*v) GF_TRY(path_value(row->name, v, err));
  return gf_flag_copy(row, obj, v, err);
}

static gf_status device_value(const char *what, const char *v, gf_backend *b,
                              int *index, gf_err *err) {
  int ordinal;
  GF_TRY(gf_device_parse(what, v, b, &ordinal, err));
  *index = ordinal < 0 ? 0 : ordinal; /* "cuda": GPU 0 */
  return GF_OK;
}

static gf_status fid_device(const gf_flag *row, void *obj, const char *v,
                            gf_err *err) {
  gf_cli_fid_opts *o = obj;
  return device_value(row->name, v, &o->backend, &o->device_index, err);
}

static gf_status eval_device(const gf_flag *row, void *obj, const char *v,
                             gf_err *err) {
  gf_cli_eval_opts *o = obj;
  return device_value(row->name, v, &o->backend, &o->device_index, err);
}

static gf_status run_id_arg(const gf_flag *row, void *obj, const char *s,
                            gf_err *err) {
  size_t n = strlen(s);
  if (n < 1 || n > 63 ||
      strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                "0123456789_-") != n)
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not an MLflow run id",
                   row->name, s);
  return gf_flag_copy(row, obj, s, err);
}

/* ---- the tables -------------------------------------------------------- */

/* The rows both commands have, over their own struct T. */
#define COMMON_ROWS(T, device_fn)                                          \
  {.name = "--batch", .arg = "N", .kind = GF_FLAG_INT,                     \
   GF_FLAG_FIELD(T, batch), .lo = 1, .hi = 1024, .def_i = 50,              \
   .help = "images per network forward"},                                  \
  {.name = "--threads", .arg = "N", .kind = GF_FLAG_INT,                   \
   GF_FLAG_FIELD(T, threads), .lo = 1, .hi = 1024, .def_i = 0,             \
   .def_help = "every online core", .help = "CPU threads"},                \
  {.name = "--device", .arg = "D", .kind = GF_FLAG_CUSTOM,                 \
   .parse = device_fn, .def_s = "cpu", .help = "cpu, cuda or cuda:N"},     \
  {.name = "--cache-dir", .arg = "DIR", .kind = GF_FLAG_ARG,               \
   GF_FLAG_FIELD(T, cache_dir), .parse = cache_arg,                        \
   .def_help = "$GANFLOW_CACHE_DIR/fid, else $XDG_CACHE_HOME/ganflow/fid, " \
               "else ~/.cache/ganflow/fid",                                \
   .help = "feature cache; '' for none"}

static const gf_flag k_fid_rows[] = {
  {.name = "--kid", .kind = GF_FLAG_BOOL, GF_FLAG_FIELD(gf_cli_fid_opts, kid),
   .help = "also print KID (100 subsets of up to 1000 images)"},
  COMMON_ROWS(gf_cli_fid_opts, fid_device),
};

static const gf_flag_table k_fid =
    GF_FLAG_TABLE(k_fid_rows, NULL, 1, 19);

static const gf_flag_choice k_metrics[] = {
  {"fid", GF_CLI_EVAL_FID}, {"kid", GF_CLI_EVAL_KID},
  {"swd", GF_CLI_EVAL_SWD}, {NULL, 0}};

#define E gf_cli_eval_opts
static const gf_flag k_eval_rows[] = {
  {.name = "--data", .arg = "SPEC", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(E, data), .parse = path_arg, .def_help = "required",
   .help = "[idx:|cifar10:|images:]DIR"},
  {.name = "--follow", .arg = "DIR", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(E, follow_dir), .parse = path_arg, .def_help = "",
   .help = "evaluate every checkpoint that appears in this checkpoint "
           "directory (instead of SOURCE)"},
  {.name = "--metrics", .arg = "LIST", .kind = GF_FLAG_BITS,
   GF_FLAG_FIELD(E, metrics), .choices = k_metrics,
   .def_i = GF_CLI_EVAL_FID | GF_CLI_EVAL_KID,
   .help = "of fid, kid, swd, comma-separated"},
  {.name = "--images", .arg = "N", .kind = GF_FLAG_I64,
   GF_FLAG_FIELD(E, images), .lo = 2, .hi = 10000000, .def_i = 2000,
   .help = "generated and reference images"},
  {.name = "--seed", .arg = "S", .kind = GF_FLAG_U64, GF_FLAG_FIELD(E, seed),
   .ulo = 0, .uhi = UINT64_MAX, .def_u = 0,
   .help = "latents: image k is sample k of seed S"},
  COMMON_ROWS(E, eval_device),
  {.name = "--run-id", .arg = "ID", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(E, run_id), .parse = run_id_arg, .def_help = "",
   .help = "log the metrics into this MLflow run (fid, kid, kid_std, "
           "swd/avg); with --follow: instead of the checkpoints' run"},
  {.name = "--step", .arg = "K", .kind = GF_FLAG_I64, GF_FLAG_FIELD(E, step),
   .lo = 0, .hi = INT64_MAX, .def_i = -1, .def_help = "the checkpoint's",
   .help = "the step to log at (a models:/ SOURCE with --run-id needs it)"},
  {.name = "--model-cache-dir", .arg = "D", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(E, model_cache_dir), .parse = path_arg,
   .def_help = "~/.cache/ganflow-serve", .help = "models:/ downloads"},
  {.name = "--poll", .arg = "S", .kind = GF_FLAG_F64,
   GF_FLAG_FIELD(E, poll_s), .flo = 0.05, .fhi = 3600, .def_f = 5,
   GF_FLAG_GIVEN(E, poll_set),
   .help = "--follow: seconds between scans of the folder"},
};
#undef E

static const gf_flag_table k_eval =
    GF_FLAG_TABLE(k_eval_rows, NULL, 1, 23);

const gf_flag_table *gf_cli_fid_flags(void) { return &k_fid; }
const gf_flag_table *gf_cli_eval_flags(void) { return &k_eval; }

/* ---- fid --------------------------------------------------------------- */

void gf_cli_fid_usage(FILE *out) {
  fprintf(out,
"usage: ganflow fid PATH_A PATH_B [--kid] [--batch N] [--threads N]\n"
"                   [--device cpu|cuda[:N]] [--cache-dir DIR]\n"
"  FID (and KID) between two image sets with the FID Inception-v3 network.\n"
"  Each PATH is a folder of PNG/JPEG images (searched recursively; each\n"
"  image at its own size, grey or colour) or a dataset ganflow-train reads\n"
"  (MNIST-format IDX, CIFAR-10 binaries). PATH_A's statistics are cached.\n");
  gf_flags_usage(out, &k_fid);
  fprintf(out,
"  Prints 'FID: <value>' (and 'KID: <mean> ± <std>') on stdout; progress on\n"
"  stderr. The network file is $GANFLOW_INCEPTION or the one install-deps\n"
"  installs. Exit status: 0 success, 1 error, 2 usage error.\n");
}

static gf_status fid_path(void *obj, const char *s, gf_err *err) {
  gf_cli_fid_opts *o = obj;
  if (o->path_b)
    return gf_fail(err, GF_EINVAL, "unexpected argument '%s' (two paths "
                   "expected)", s);
  GF_TRY(path_value(o->path_a ? "PATH_B" : "PATH_A", s, err));
  *(o->path_a ? &o->path_b : &o->path_a) = s;
  return GF_OK;
}

gf_status gf_cli_fid_parse(gf_cli_fid_opts *o, int argc, char **argv,
                           bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  gf_flags_defaults(&k_fid, o);
  gf_flags_opts opts = {.positional = fid_path};
  GF_TRY(gf_flags_parse(&k_fid, o, argc, argv, &opts, help, NULL, err));
  if (*help) return GF_OK;
  if (!o->path_b)
    return gf_fail(err, GF_EINVAL, "expected two paths, PATH_A and PATH_B");
  return GF_OK;
}

/* ---- eval -------------------------------------------------------------- */

void gf_cli_eval_usage(FILE *out) {
  fprintf(out,
"usage: ganflow eval SOURCE --data DATASET [options]\n"
"       ganflow eval --follow CHECKPOINT_DIR --data DATASET [options]\n"
"  FID/KID (and SWD) of a generator's images against the first N images of\n"
"  DATASET (read at the model's size, as ganflow-train reads it). SOURCE is\n"
"  a registered version (models:/NAME@ALIAS, models:/NAME/VERSION) or a\n"
"  checkpoint file (ckpt-*.safetensors). --follow evaluates every checkpoint\n"
"  that appears in CHECKPOINT_DIR and logs it into the run its metadata\n"
"  names, at its step (skipped when the run already has fid there); it\n"
"  exits 0 once that run has ended and every checkpoint is done, or after\n"
"  the current checkpoint on SIGINT/SIGTERM.\n");
  gf_flags_usage(out, &k_eval);
  fprintf(out,
"  MLFLOW_TRACKING_URI names the server. Prints 'fid <v>', 'kid <v> kid_std\n"
"  <v>', 'swd/avg <v>' on stdout. Exit status: 0 success, 1 error, 2 usage\n"
"  error.\n");
}

static gf_status eval_source(void *obj, const char *s, gf_err *err) {
  gf_cli_eval_opts *o = obj;
  if (o->source)
    return gf_fail(err, GF_EINVAL, "unexpected argument '%s' (one SOURCE "
                   "expected)", s);
  GF_TRY(path_value("SOURCE", s, err));
  o->source = s;
  return GF_OK;
}

gf_status gf_cli_eval_parse(gf_cli_eval_opts *o, int argc, char **argv,
                            bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  gf_flags_defaults(&k_eval, o);
  gf_flags_opts opts = {.positional = eval_source};
  GF_TRY(gf_flags_parse(&k_eval, o, argc, argv, &opts, help, NULL, err));
  if (*help) return GF_OK;
  if (o->source && o->follow_dir)
    return gf_fail(err, GF_EINVAL, "give SOURCE or --follow DIR, not both");
  if (!o->source && !o->follow_dir)
    return gf_fail(err, GF_EINVAL, "expected SOURCE (models:/NAME@ALIAS, "
                   "models:/NAME/VERSION or a checkpoint file) or --follow "
                   "DIR");
  if (!o->data) return gf_fail(err, GF_EINVAL, "--data DATASET is required");
  if (o->poll_set && !o->follow_dir)
    return gf_fail(err, GF_EINVAL, "--poll applies to --follow only");
  if (o->follow_dir && o->step >= 0)
    return gf_fail(err, GF_EINVAL, "--step does not apply to --follow (each "
                   "checkpoint is logged at its own step)");
  if (o->step >= 0 && !o->run_id)
    return gf_fail(err, GF_EINVAL, "--step needs --run-id (nothing is logged "
                   "without it)");
  if (o->source && strncmp(o->source, "models:/", 8) == 0 && o->run_id &&
      o->step < 0)
    return gf_fail(err, GF_EINVAL, "--run-id with a models:/ SOURCE needs "
                   "--step K (a registered version has no step)");
  if (o->metrics & GF_CLI_EVAL_SWD && o->images > 100000)
    return gf_fail(err, GF_EINVAL, "--metrics swd: at most 100000 --images");
  return GF_OK;
}
