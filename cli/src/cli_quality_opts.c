/* cli_quality_opts.c - the command lines of `ganflow fid` and `ganflow
 * eval` (gf/cli_quality.h): strict parsing, every bad value one GF_EINVAL
 * naming its flag; and what both commands share: --device, the compute
 * context, the feature cache directory. Does no work itself. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gf/cli_quality.h"
#include "gf/feat_cache.h"
#include "gf/fs.h"
#include "gf/text.h"

gf_status gf_cli_parse_device(const char *s, gf_backend *backend, int *index,
                              gf_err *err) {
  if (s && strcmp(s, "cpu") == 0) {
    *backend = GF_BACKEND_CPU;
    *index = 0;
    return GF_OK;
  }
  if (s && strcmp(s, "cuda") == 0) {
    *backend = GF_BACKEND_CUDA;
    *index = 0;
    return GF_OK;
  }
  if (s && strncmp(s, "cuda:", 5) == 0 && s[5] && strlen(s + 5) <= 3 &&
      strspn(s + 5, "0123456789") == strlen(s + 5)) {
    *backend = GF_BACKEND_CUDA;
    *index = atoi(s + 5);
    return GF_OK;
  }
  return gf_fail(err, GF_EINVAL, "--device: '%s' is not cpu, cuda or cuda:N",
                 s ? s : "");
}

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

/* ---- values ------------------------------------------------------------ */

/* Strict decimal in [lo, hi]. */
static gf_status parse_i64(const char *flag, const char *s, int64_t lo,
                           int64_t hi, int64_t *out, gf_err *err) {
  if (!s || !*s || strlen(s) > 19 || strspn(s, "0123456789") != strlen(s))
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not a whole number", flag,
                   s ? s : "");
  errno = 0;
  long long v = strtoll(s, NULL, 10);
  if (errno || v < lo || v > hi)
    return gf_fail(err, GF_EINVAL, "%s: %s is out of range (%lld..%lld)",
                   flag, s, (long long)lo, (long long)hi);
  *out = v;
  return GF_OK;
}

static gf_status parse_int(const char *flag, const char *s, int lo, int hi,
                           int *out, gf_err *err) {
  int64_t v;
  GF_TRY(parse_i64(flag, s, lo, hi, &v, err));
  *out = (int)v;
  return GF_OK;
}

static gf_status parse_u64(const char *flag, const char *s, uint64_t *out,
                           gf_err *err) {
  if (!s || !*s || strlen(s) > 20 || strspn(s, "0123456789") != strlen(s))
    return gf_fail(err, GF_EINVAL, "%s: '%s' is not a whole number", flag,
                   s ? s : "");
  errno = 0;
  unsigned long long v = strtoull(s, NULL, 10);
  if (errno) return gf_fail(err, GF_EINVAL, "%s: %s is out of range", flag, s);
  *out = v;
  return GF_OK;
}

/* Seconds: a plain decimal number in [lo, hi]. */
static gf_status parse_seconds(const char *flag, const char *s, double lo,
                               double hi, double *out, gf_err *err) {
  char *end = NULL;
  if (s && *s && strspn(s, "0123456789.") == strlen(s)) {
    errno = 0;
    double v = strtod(s, &end);
    if (!errno && end && !*end && isfinite(v) && v >= lo && v <= hi) {
      *out = v;
      return GF_OK;
    }
  }
  return gf_fail(err, GF_EINVAL, "%s: '%s' is not a number of seconds in "
                 "%g..%g", flag, s ? s : "", lo, hi);
}

static gf_status parse_metrics(const char *s, unsigned *out, gf_err *err) {
  unsigned m = 0;
  const char *p = s;
  if (!s || !*s) goto bad;
  while (*p) {
    size_t n = strcspn(p, ",");
    unsigned bit = 0;
    if (n == 3 && strncmp(p, "fid", 3) == 0) bit = GF_CLI_EVAL_FID;
    else if (n == 3 && strncmp(p, "kid", 3) == 0) bit = GF_CLI_EVAL_KID;
    else if (n == 3 && strncmp(p, "swd", 3) == 0) bit = GF_CLI_EVAL_SWD;
    if (!bit || (m & bit)) goto bad;
    m |= bit;
    p += n;
    if (*p == ',') {
      p++;
      if (!*p) goto bad;
    }
  }
  *out = m;
  return GF_OK;
bad:
  return gf_fail(err, GF_EINVAL, "--metrics: '%s' is not a comma-separated "
                 "list of fid, kid, swd (each at most once)", s ? s : "");
}

/* A path value: non-empty and short enough for the system. */
static gf_status path_value(const char *flag, const char *v, gf_err *err) {
  if (!v || !*v) return gf_fail(err, GF_EINVAL, "%s: empty path", flag);
  return gf_path_check(flag, v, 0, err);
}

/* ---- the option loop --------------------------------------------------- */

/* Splits argv[*i] into a flag and its value ("--flag value" or
 * "--flag=value"); *val NULL for a flag without one. */
typedef struct arg {
  char flag[64];
  const char *val;
} arg;

static gf_status next_value(int argc, char **argv, int *i, arg *a,
                            gf_err *err) {
  if (a->val) return GF_OK;
  if (*i + 1 >= argc)
    return gf_fail(err, GF_EINVAL, "%s: missing value", a->flag);
  a->val = argv[++*i];
  return GF_OK;
}

static void split_arg(const char *s, arg *a) {
  const char *eq = strncmp(s, "--", 2) == 0 ? strchr(s, '=') : NULL;
  size_t n = eq ? (size_t)(eq - s) : strlen(s);
  if (n >= sizeof a->flag) n = sizeof a->flag - 1;
  memcpy(a->flag, s, n);
  a->flag[n] = '\0';
  a->val = eq ? eq + 1 : NULL;
}

static int is_help(const char *s) {
  return strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0;
}

/* Options both commands take; *matched 0 when a is none of them. */
static gf_status common_opt(int argc, char **argv, int *i, arg *a, int *batch,
                            int *threads, gf_backend *backend, int *index,
                            const char **cache_dir, int *matched,
                            gf_err *err) {
  *matched = 1;
  if (strcmp(a->flag, "--batch") == 0) {
    GF_TRY(next_value(argc, argv, i, a, err));
    return parse_int("--batch", a->val, 1, 1024, batch, err);
  }
  if (strcmp(a->flag, "--threads") == 0) {
    GF_TRY(next_value(argc, argv, i, a, err));
    return parse_int("--threads", a->val, 1, 1024, threads, err);
  }
  if (strcmp(a->flag, "--device") == 0) {
    GF_TRY(next_value(argc, argv, i, a, err));
    return gf_cli_parse_device(a->val, backend, index, err);
  }
  if (strcmp(a->flag, "--cache-dir") == 0) {
    GF_TRY(next_value(argc, argv, i, a, err));
    /* "" turns the cache off; anything else must be a usable path. */
    if (*a->val) GF_TRY(path_value("--cache-dir", a->val, err));
    *cache_dir = a->val;
    return GF_OK;
  }
  *matched = 0;
  return GF_OK;
}

/* ---- fid --------------------------------------------------------------- */

void gf_cli_fid_usage(FILE *out) {
  fprintf(out,
"usage: ganflow fid PATH_A PATH_B [--kid] [--batch N] [--threads N]\n"
"                   [--device cpu|cuda[:N]] [--cache-dir DIR]\n"
"  FID (and KID) between two image sets with the FID Inception-v3 network.\n"
"  Each PATH is a folder of PNG/JPEG images (searched recursively; each\n"
"  image at its own size, grey or colour) or a dataset ganflow-train reads\n"
"  (MNIST-format IDX, CIFAR-10 binaries). PATH_A's statistics are cached.\n"
"  --kid            also print KID (100 subsets of up to 1000 images)\n"
"  --batch N        images per network forward, 1..1024 (50)\n"
"  --threads N      CPU threads (every online core)\n"
"  --device D       cpu, cuda or cuda:N (cpu)\n"
"  --cache-dir DIR  feature cache ($GANFLOW_CACHE_DIR/fid, else\n"
"                   $XDG_CACHE_HOME/ganflow/fid, else ~/.cache/ganflow/fid;\n"
"                   '' for none)\n"
"  Prints 'FID: <value>' (and 'KID: <mean> ± <std>') on stdout; progress on\n"
"  stderr. The network file is $GANFLOW_INCEPTION or the one install-deps\n"
"  installs. Exit status: 0 success, 1 error, 2 usage error.\n");
}

gf_status gf_cli_fid_parse(gf_cli_fid_opts *o, int argc, char **argv,
                           bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  *help = false;
  o->batch = 50;
  o->backend = GF_BACKEND_CPU;
  const char *pos[2] = {NULL, NULL};
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (is_help(s)) {
      *help = true;
      return GF_OK;
    }
    if (s[0] != '-' || strcmp(s, "-") == 0) {
      if (npos == 2)
        return gf_fail(err, GF_EINVAL, "unexpected argument '%s' (two paths "
                       "expected)", s);
      GF_TRY(path_value(npos ? "PATH_B" : "PATH_A", s, err));
      pos[npos++] = s;
      continue;
    }
    arg a;
    split_arg(s, &a);
    int matched = 0;
    if (strcmp(a.flag, "--kid") == 0) {
      if (a.val) return gf_fail(err, GF_EINVAL, "--kid takes no value");
      o->kid = true;
      continue;
    }
    GF_TRY(common_opt(argc, argv, &i, &a, &o->batch, &o->threads, &o->backend,
                      &o->device_index, &o->cache_dir, &matched, err));
    if (!matched)
      return gf_fail(err, GF_EINVAL, "unknown option '%s'", s);
  }
  if (npos != 2)
    return gf_fail(err, GF_EINVAL, "expected two paths, PATH_A and PATH_B");
  o->path_a = pos[0];
  o->path_b = pos[1];
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
"  the current checkpoint on SIGINT/SIGTERM.\n"
"  --data SPEC          [idx:|cifar10:|images:]DIR (required)\n"
"  --metrics LIST       of fid, kid, swd (fid,kid)\n"
"  --images N           generated and reference images, 2..10000000 (2000)\n"
"  --seed S             latents: image k is sample k of seed S (0)\n"
"  --batch N            images per network forward, 1..1024 (50)\n"
"  --threads N          CPU threads (every online core)\n"
"  --device D           cpu, cuda or cuda:N (cpu)\n"
"  --run-id ID          log the metrics into this MLflow run (fid, kid,\n"
"                       kid_std, swd/avg); with --follow: instead of the\n"
"                       checkpoints' run\n"
"  --step K             the step to log at (default: the checkpoint's; a\n"
"                       models:/ SOURCE with --run-id needs it)\n"
"  --cache-dir DIR      feature cache (as ganflow fid; '' for none)\n"
"  --model-cache-dir D  models:/ downloads (~/.cache/ganflow-serve)\n"
"  --poll S             --follow: seconds between scans of the folder (5)\n"
"  MLFLOW_TRACKING_URI names the server. Prints 'fid <v>', 'kid <v> kid_std\n"
"  <v>', 'swd/avg <v>' on stdout. Exit status: 0 success, 1 error, 2 usage\n"
"  error.\n");
}

static int run_id_ok(const char *s) {
  size_t n = strlen(s);
  return n >= 1 && n <= 63 &&
         strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789_-") == n;
}

gf_status gf_cli_eval_parse(gf_cli_eval_opts *o, int argc, char **argv,
                            bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  *help = false;
  o->metrics = GF_CLI_EVAL_FID | GF_CLI_EVAL_KID;
  o->images = 2000;
  o->batch = 50;
  o->backend = GF_BACKEND_CPU;
  o->step = -1;
  o->poll_s = 5;
  bool have_poll = false;
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i];
    if (is_help(s)) {
      *help = true;
      return GF_OK;
    }
    if (s[0] != '-') {
      if (o->source)
        return gf_fail(err, GF_EINVAL, "unexpected argument '%s' (one SOURCE "
                       "expected)", s);
      GF_TRY(path_value("SOURCE", s, err));
      o->source = s;
      continue;
    }
    arg a;
    split_arg(s, &a);
    int matched = 0;
    GF_TRY(common_opt(argc, argv, &i, &a, &o->batch, &o->threads, &o->backend,
                      &o->device_index, &o->cache_dir, &matched, err));
    if (matched) continue;
    const char *f = a.flag;
    if (strcmp(f, "--data") == 0) {
      GF_TRY(next_value(argc, argv, &i, &a, err));
      GF_TRY(path_value("--data", a.val, err));
      o->data = a.val;
    } else if (strcmp(f, "--follow") == 0) {
      GF_TRY(next_value(argc, argv, &i, &a, err));
      GF_TRY(path_value("--follow", a.val, err));
      o->follow_dir = a.val;
    } else if (strcmp(f, "--metrics") == 0) {
      GF_TRY(next_value(argc, argv, &i, &a, err));
      GF_TRY(parse_metrics(a.val, &o->metrics, err));
    } else if (strcmp(f, "--images") == 0) {
      GF_TRY(next_value(argc, argv, &i, &a, err));
      GF_TRY(parse_i64("--images", a.val, 2, 10000000, &o->images, err));
    } else if (strcmp(f, "--seed") == 0) {
      GF_TRY(next_value(argc, argv, &i, &a, err));
      GF_TRY(parse_u64("--seed", a.val, &o->seed, err));
    } else if (strcmp(f, "--run-id") == 0) {
      GF_TRY(next_value(argc, argv, &i, &a, err));
      if (!run_id_ok(a.val))
        return gf_fail(err, GF_EINVAL, "--run-id: '%s' is not an MLflow run "
                       "id", a.val);
      o->run_id = a.val;
    } else if (strcmp(f, "--step") == 0) {
      GF_TRY(next_value(argc, argv, &i, &a, err));
      GF_TRY(parse_i64("--step", a.val, 0, INT64_MAX, &o->step, err));
    } else if (strcmp(f, "--model-cache-dir") == 0) {
      GF_TRY(next_value(argc, argv, &i, &a, err));
      GF_TRY(path_value("--model-cache-dir", a.val, err));
      o->model_cache_dir = a.val;
    } else if (strcmp(f, "--poll") == 0) {
      GF_TRY(next_value(argc, argv, &i, &a, err));
      GF_TRY(parse_seconds("--poll", a.val, 0.05, 3600, &o->poll_s, err));
      have_poll = true;
    } else {
      return gf_fail(err, GF_EINVAL, "unknown option '%s'", s);
    }
  }
  if (o->source && o->follow_dir)
    return gf_fail(err, GF_EINVAL, "give SOURCE or --follow DIR, not both");
  if (!o->source && !o->follow_dir)
    return gf_fail(err, GF_EINVAL, "expected SOURCE (models:/NAME@ALIAS, "
                   "models:/NAME/VERSION or a checkpoint file) or --follow "
                   "DIR");
  if (!o->data) return gf_fail(err, GF_EINVAL, "--data DATASET is required");
  if (have_poll && !o->follow_dir)
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
