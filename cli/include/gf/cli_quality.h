/* cli_quality.h - `ganflow fid` and `ganflow eval` (DESIGN §2, §4.8): FID
 * and KID of images with the Inception-v3 network of metrics/
 * (gf/inception.h, gf/quality.h).
 *
 *   fid     two image sets (folders of PNG/JPEG at their own sizes, or
 *           datasets ganflow-train reads), like pytorch-fid's command line;
 *   eval    a generator (a registered version or a checkpoint file) against
 *           the first N images of a dataset, optionally logged into an MLflow
 *           run;
 *   eval --follow  every checkpoint that appears in a training run's
 *           checkpoint directory, logged into that run at its step.
 *
 * The command lines are parsed here (gf_cli_*_parse: tables of gf/flags.h
 * rows, every bad value a GF_EINVAL naming its flag), so tests can check
 * them without a process;
 * cli/ganflow_main.c only maps statuses to exit codes. Nothing here exits;
 * progress and timings go to the `log` stream, results to `out`. */
#ifndef GF_CLI_QUALITY_H
#define GF_CLI_QUALITY_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gf/ctx.h"
#include "gf/image_set_features.h"
#include "gf/quality.h"
#include "gf/status.h"
#include "mlflow/mlflow.h"

/* ---- shared options ---------------------------------------------------- */

/* Inits *ctx (caller's struct; gf_ctx_free it) for the FID network on the
 * backend, with threads op threads (0: every online core) and, on the CPU,
 * the plain conv layout (several times faster for this forward-only
 * network, gf/inception.h); a CUDA request in a build or on a
 * machine without CUDA is GF_EUNSUPPORTED / GF_EDEVICE naming --device. */
gf_status gf_cli_quality_ctx(gf_ctx *ctx, gf_backend backend, int index,
                             int threads, gf_err *err);

/* The feature cache directory to use, into buf[cap]: dir itself when given
 * ("" means no cache), else gf_feat_cache_default_dir, else "" with
 * *no_default set (no HOME or cache variable: nothing is cached). */
gf_status gf_cli_cache_dir(const char *dir, char *buf, size_t cap,
                           bool *no_default, gf_err *err);

/* ---- ganflow fid ------------------------------------------------------- */

typedef struct gf_cli_fid_opts {
  const char *path_a;    /* the reference set (its statistics are cached) */
  const char *path_b;    /* the other set (always computed) */
  bool kid;              /* KID too */
  int batch;             /* images per forward, 1..1024 (50) */
  int threads;           /* op threads, 0 = every online core (0) */
  gf_backend backend;    /* --device */
  int device_index;
  const char *cache_dir; /* NULL: the default cache; "": none */
} gf_cli_fid_opts;

/* Parses `fid PATH_A PATH_B [--kid] [--batch N] [--threads N] [--device D]
 * [--cache-dir DIR]` (argv[0] is "fid"; --flag=value accepted too) into *o
 * (argv strings borrowed). *help is set for -h/--help. GF_EINVAL with a
 * one-line message naming the argument otherwise. */
gf_status gf_cli_fid_parse(gf_cli_fid_opts *o, int argc, char **argv,
                           bool *help, gf_err *err);
void gf_cli_fid_usage(FILE *out);

/* Loads both sets and the network, prints "FID: <v>" (and "KID: <mean> ±
 * <std>") to out, progress and timings to log; *q (may be NULL) gets the
 * numbers. */
gf_status gf_cli_fid(const gf_cli_fid_opts *o, FILE *out, FILE *log,
                     gf_quality *q, gf_err *err);

/* ---- ganflow eval ------------------------------------------------------ */

enum {
  GF_CLI_EVAL_FID = 1u << 0,
  GF_CLI_EVAL_KID = 1u << 1,
  GF_CLI_EVAL_SWD = 1u << 2,
};

typedef struct gf_cli_eval_opts {
  const char *source;       /* models:/NAME@ALIAS, models:/NAME/VERSION or a
                               checkpoint file; NULL with follow_dir */
  const char *follow_dir;   /* --follow: a checkpoint directory, or NULL */
  const char *data;         /* --data SPEC ([idx:|cifar10:|images:]DIR) */
  unsigned metrics;         /* GF_EVAL_* (fid,kid) */
  int64_t images;           /* generated and reference images, >= 2 (2000) */
  uint64_t seed;            /* latents: sample k of Philox (seed, SAMPLE) */
  int batch;                /* images per forward, 1..1024 (50) */
  int threads;              /* op threads, 0 = every online core */
  gf_backend backend;
  int device_index;
  const char *run_id;       /* log into this run (NULL: the checkpoint's in
                               --follow, else nothing is logged) */
  int64_t step;             /* --step; -1: the checkpoint's */
  const char *cache_dir;    /* feature cache: NULL default, "" none */
  const char *model_cache_dir; /* models:/ downloads (NULL: ganflow-serve's
                                  default, $HOME/.cache/ganflow-serve) */
  double poll_s;            /* --follow: seconds between scans (5) */
  bool poll_set;            /* --poll was given */
} gf_cli_eval_opts;

/* Parses `eval (SOURCE | --follow DIR) --data DATASET [options]` (argv[0]
 * is "eval") as gf_cli_fid_parse does, and checks the combinations: SOURCE
 * or --follow, --data required, --step only with --run-id and not with
 * --follow, a models:/ SOURCE with --run-id needs --step, --poll only with
 * --follow. */
gf_status gf_cli_eval_parse(gf_cli_eval_opts *o, int argc, char **argv,
                            bool *help, gf_err *err);
void gf_cli_eval_usage(FILE *out);

/* The flag tables of fid and eval (gf/flags.h rows over the structs
 * above; static), for the tests that walk them. */
struct gf_flag_table;
const struct gf_flag_table *gf_cli_fid_flags(void);
const struct gf_flag_table *gf_cli_eval_flags(void);

/* The metrics of one evaluation (NaN where not asked). */
typedef struct gf_eval_result {
  double fid, kid, kid_std, swd_avg;
  int64_t step;             /* where it is logged (-1 none) */
} gf_eval_result;

/* `ganflow eval SOURCE`: everything is loaded and checked, the metrics
 * computed and printed ("fid <v>", "kid <v> kid_std <v>", "swd/avg <v>")
 * before anything is sent; with o->run_id they are then logged into that
 * run at o->step (default: the checkpoint's step; a model URI needs
 * --step). c may be NULL when nothing needs MLflow (a checkpoint, no
 * --run-id). */
gf_status gf_cli_eval(mlflow_client *c, const gf_cli_eval_opts *o, FILE *out,
                      FILE *log, gf_eval_result *res, gf_err *err);

/* `ganflow eval --follow DIR`: evaluates each checkpoint that appears in
 * DIR (newest pending first) and logs it into the run its metadata names
 * (or o->run_id) at its step, unless that run already holds `fid` at that
 * step. Returns GF_OK when the run is no longer RUNNING and every
 * checkpoint present has been evaluated, or when one of the signals of
 * `stop` (blocked in every thread by the caller) arrives: it is taken
 * between checkpoints, while waiting up to o->poll_s seconds for the next
 * scan (sigtimedwait), never in the middle of an evaluation. *stopped_by
 * (may be NULL) receives the signal or 0. */
gf_status gf_cli_eval_follow(mlflow_client *c, const gf_cli_eval_opts *o,
                             const sigset_t *stop, FILE *out, FILE *log,
                             int *stopped_by, gf_err *err);

#endif
