/* cli.h - the commands of the `ganflow` admin CLI (DESIGN §2): inspect (a
 * checkpoint or model directory), promote (move an alias to a READY
 * version), models (versions and aliases), generate (a PNG from a
 * registered version, no server). The command lines of generate and
 * promote are tables of gf/flags.h rows here (cli_opts.c); these functions
 * do the work, print their report to `out` and return a status with a
 * message in err (nothing here exits). */
#ifndef GF_CLI_H
#define GF_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gf/generator.h"
#include "gf/status.h"
#include "mlflow/mlflow.h"

/* Human-readable summary (metadata, tensor table with shapes and byte
 * sizes, digest status) of a checkpoint file or an MLflow model directory
 * (MLmodel + files), for `ganflow inspect`. Writes only to out. A file
 * whose digest does not match is still described (status "MISMATCH") and
 * the call returns GF_EINTEGRITY after printing. */
gf_status gf_inspect_print(const char *path, FILE *out, gf_err *err);

/* Points alias at version of registered model name after checking that the
 * version exists and is READY (GF_ESTATE otherwise, naming its status) and
 * that the alias is valid (GF_EINVAL). Prints "name@alias -> version N
 * (was M)" to out. */
gf_status gf_cli_promote(mlflow_client *c, const char *name,
                         const char *version, const char *alias, FILE *out,
                         gf_err *err);

/* `ganflow promote ... --if-better METRIC[:min|max]`: the promotion gate
 * of mlflow/registry.h (mlflow_alias_set_if_better), which moves alias to
 * version only when version's run has a better last value of METRIC than
 * the run of the version holding alias now (min: lower is better, the
 * default). Prints the comparison ("swd/avg (lower is better): version 4 =
 * 12.3 (run ...) vs version 3 = 15 (run ...): better, alias production ->
 * 4") to out. GF_OK with *promoted 1 when the alias is on version
 * afterwards, *promoted 0 when the gate refused (worse, equal, or no value
 * for the candidate); an error status (GF_EINVAL for a bad spec or alias,
 * GF_ESTATE when not READY, ...) when no decision could be made. */
gf_status gf_cli_promote_if_better(mlflow_client *c, const char *name,
                                   const char *version, const char *alias,
                                   const char *metric_spec, FILE *out,
                                   int *promoted, gf_err *err);

/* `promote NAME VERSION --alias ALIAS [--if-better METRIC[:min|max]]`
 * (argv[0] is "promote"), argv strings borrowed. */
typedef struct gf_cli_promote_opts {
  const char *name, *version, *alias;
  const char *if_better; /* NULL: move the alias unconditionally */
} gf_cli_promote_opts;

/* Parses it through its flag table (the METRIC spec checked); *help set
 * for -h/--help. GF_EINVAL naming the flag, "unexpected argument 'X'", or
 * "expected NAME VERSION --alias ALIAS". */
gf_status gf_cli_promote_parse(gf_cli_promote_opts *o, int argc, char **argv,
                               bool *help, gf_err *err);

/* The flag tables of generate and promote (gf/flags.h rows; static), for
 * --help and the tests that walk them. */
struct gf_flag_table;
const struct gf_flag_table *gf_cli_generate_flags(void);
const struct gf_flag_table *gf_cli_promote_flags(void);
const struct gf_flag_table *gf_cli_import_flags(void);

/* Prints one line per version of `name` (NULL: every registered model):
 * name, version, status, aliases, run id, creation time (UTC). */
gf_status gf_cli_models(mlflow_client *c, const char *name, FILE *out,
                        gf_err *err);

typedef struct gf_cli_generate_opts {
  const char *uri;       /* models:/NAME@ALIAS, /VERSION or /latest */
  uint64_t seed;         /* latents: Philox (seed, SAMPLE, 0, 0), image k =
                            sample k (as ganflow-serve) */
  int n;                 /* images, 1..1024; n > 1 gives a grid */
  const char *out_path;  /* PNG written atomically */
  const char *cache_dir; /* download cache (ganflow-serve's layout) */
  int threads;           /* op threads, >= 1 */
  gf_gen_precision precision; /* fp32, or bf16 / int8 where the CPU has
                                 them */
  bool seed_set;         /* --seed was given (it is required) */
  const char *cls;       /* --class: a class (name or index) for every
                            image, or a comma-separated list (as
                            gf_generator_class_labels); needed by a
                            class-conditional version, refused by any
                            other; NULL = none */
  /* A stylegan2 version's style (gf_gen_style; any other version refuses
   * values other than the defaults): */
  double psi;            /* --psi, truncation, default 1 */
  int trunc_cutoff;      /* --trunc-cutoff, 0 = every w */
  int noise;             /* --noise const|random|none (gf_sg2_noise);
                            random: image k's noise is sample k of --seed */
  uint64_t mix;          /* --mix S: image k's ws from --mix-from on are
                            those of sample k of seed S */
  bool mix_set;
  int mix_from;          /* --mix-from L, given with --mix */
} gf_cli_generate_opts;

/* Parses `generate --model URI --seed S -o FILE [-n N] [--class C]
 * [--cache-dir DIR] [--threads N] [--precision P] [--psi X]
 * [--trunc-cutoff L] [--noise const|random|none] [--mix S --mix-from L]` (argv[0] is "generate";
 * --flag=value too) into *o through its flag table (argv strings
 * borrowed; cache_dir NULL when not given). *help set for -h/--help.
 * GF_EINVAL naming the flag; "--model, --seed and -o are required". */
gf_status gf_cli_generate_parse(gf_cli_generate_opts *o, int argc,
                                char **argv, bool *help, gf_err *err);

/* Checks o before anything is contacted or written: every field set and in
 * range, cache_dir at most GFS_CACHE_DIR_MAX bytes (room for the cache's
 * entries, gfs/slot.h) and out_path short enough for its temporary
 * sibling. GF_EINVAL naming the flag (--cache-dir, -o) otherwise. */
gf_status gf_cli_generate_check(const gf_cli_generate_opts *o, gf_err *err);

/* Checks o (gf_cli_generate_check), resolves the URI, fetches the version
 * into the cache and loads it (gfs_model_resolve, gfs_cache_load: digests
 * verified, a damaged cache entry fetched once more), generates and writes
 * the PNG: the same bytes ganflow-serve answers for GET
 * .../generate?seed=S&n=N[&class=C] on that version. */
gf_status gf_cli_generate(mlflow_client *c, const gf_cli_generate_opts *o,
                          FILE *out, gf_err *err);

/* `ganflow import stylegan2-ada SNAPSHOT.pkl [--out DIR] [--register NAME]
 * [--alias A] [--experiment E]`: an official network-snapshot pickle's
 * G_ema as a ganflow stylegan2 model directory (gf/sg2_import.h), written
 * to --out and/or, with --register, logged to MLflow as a trained model
 * is: a run of its own in experiment E, the logged model (MLflow 3; the
 * run's model/ artifacts before), a new version of registered model NAME,
 * alias A on it. Whatever is refused (a truncated, altered or foreign
 * pickle, something the model cannot represent) is refused before anything
 * is written or registered. */
typedef struct gf_cli_import_opts {
  const char *kind;       /* "stylegan2-ada", the only one */
  const char *snapshot;   /* the .pkl */
  const char *out_dir;    /* --out: the model directory; NULL: none (then
                             --register is needed) */
  const char *register_name; /* --register NAME, or NULL */
  const char *alias;      /* --alias A (needs --register), or NULL */
  const char *experiment; /* --experiment, default "ganflow-import" */
} gf_cli_import_opts;

/* Parses `import KIND SNAPSHOT [flags]` (argv[0] "import") through its
 * flag table; GF_EINVAL naming the flag or argument. */
gf_status gf_cli_import_parse(gf_cli_import_opts *o, int argc, char **argv,
                              bool *help, gf_err *err);

/* Does the import; c may be NULL without --register. Prints what it wrote
 * and registered to out. */
gf_status gf_cli_import(mlflow_client *c, const gf_cli_import_opts *o,
                        FILE *out, gf_err *err);

#endif
