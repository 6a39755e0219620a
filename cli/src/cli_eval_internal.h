/* cli_eval_internal.h - the parts `ganflow eval` and `ganflow eval
 * --follow` share (cli_eval.c, cli_eval_source.c, cli_eval_follow.c):
 * a generator to evaluate (a registered version or a checkpoint), the
 * evaluator (FID network, dataset, reference statistics), one evaluation
 * and its MLflow logging. Private to gf_cli. */
#ifndef GF_CLI_EVAL_INTERNAL_H
#define GF_CLI_EVAL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gf/ckpt_meta.h"
#include "gf/cli_quality.h"
#include "gf/data.h"
#include "gf/fs.h"
#include "gf/generator.h"
#include "gf/net.h"

/* A generator under evaluation: a loaded registered version (model), or G
 * of a checkpoint on a ctx of its own (g, z). */
typedef struct eval_gen {
  gf_generator *model;      /* models:/ source: one reference, owned */
  gf_ctx ctx;               /* checkpoint source: G's context */
  gf_net g;                 /* G in inference mode, max_batch samples */
  gf_tensor z;              /* [max_batch, z_dim] on ctx's device */
  gf_tensor labels;         /* class-conditional: [max_batch] i32 on ctx's
                               device, image i of class i % classes */
  int32_t *labels_host;     /* [max_batch], owned (malloc) */
  bool ctx_ready, net_ready, z_ready;
  gf_model_config cfg;      /* the generator's config */
  int max_batch;            /* images per forward */
  size_t image_numel;       /* c * h * w floats per image */
  bool is_ckpt;
  gf_ckpt_meta meta;        /* checkpoint source: its metadata */
  char label[GF_PATH_MAX];  /* the source as given, for messages */
} eval_gen;

/* Opens checkpoint `path` (digest verified, metadata read) and builds G
 * from its "g.*" tensors on the device of o; the images must have 1 or 3
 * channels. On success g owns everything (eval_gen_free); on failure it is
 * freed. Errors name the file. */
gf_status eval_gen_open_ckpt(eval_gen *g, const char *path,
                             const gf_cli_eval_opts *o, gf_err *err);
/* Resolves a models:/ URI and loads the version through ganflow-serve's
 * download cache (o->model_cache_dir or its default), as ganflow
 * generate does. */
gf_status eval_gen_open_uri(eval_gen *g, mlflow_client *c, const char *uri,
                            const gf_cli_eval_opts *o, gf_err *err);
/* Images k = sample0 .. sample0 + n - 1 of seed (n <= g->max_batch) as
 * floats in [-1, 1] into out (n * image_numel, caller's memory); z_host is
 * scratch of n * z_dim floats (caller's). */
gf_status eval_gen_run(eval_gen *g, uint64_t seed, int64_t sample0, int n,
                       float *z_host, float *out, gf_err *err);
/* Releases what g owns; accepts a zeroed or freed g. */
void eval_gen_free(eval_gen *g);

/* The evaluating side: the FID network, the dataset at one geometry and
 * the reference statistics of its first o->images images. */
typedef struct eval_ref {
  gf_ctx ctx;
  bool ctx_ready;
  gf_inception *net;        /* owned */
  gf_dataset ds;            /* at (c, h, w); empty until prepared */
  gf_quality_ref ref;       /* of ds's first n images */
  bool ready;               /* ds and ref hold geometry (c, h, w) */
  int c, h, w;
  char cache[GF_PATH_MAX];  /* feature cache directory, "" none */
} eval_ref;

/* The context and network of o (--device, --threads, --batch). */
gf_status eval_ref_init(eval_ref *r, const gf_cli_eval_opts *o, FILE *log,
                        gf_err *err);
/* Makes r hold the dataset and reference of geometry (c, h, w): nothing to
 * do when it already does. Errors name the dataset or cache file. */
gf_status eval_ref_prepare(eval_ref *r, const gf_cli_eval_opts *o, int c,
                           int h, int w, FILE *log, gf_err *err);
void eval_ref_free(eval_ref *r);

/* Generates o->images images of g (seed o->seed), computes the metrics of
 * o->metrics against r (prepared for g's geometry) into *res. */
gf_status eval_run(eval_ref *r, eval_gen *g, const gf_cli_eval_opts *o,
                   FILE *log, gf_eval_result *res, gf_err *err);
/* "fid <v>", "kid <v> kid_std <v>", "swd/avg <v>" lines to out. */
void eval_print(FILE *out, unsigned metrics, const gf_eval_result *res);
/* Logs the metrics of res into run_id at step (one log-batch). */
gf_status eval_log(mlflow_client *c, const char *run_id, int64_t step,
                   unsigned metrics, const gf_eval_result *res, gf_err *err);
/* GF_OK when run_id exists and is not deleted; the message names it. */
gf_status eval_check_run(mlflow_client *c, const char *run_id,
                         mlflow_run_status *status, gf_err *err);

#endif
