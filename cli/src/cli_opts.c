/* cli_opts.c - the command lines of `ganflow generate` and `ganflow
 * promote` (gf/cli.h) as tables of gf/flags.h rows: numbers through
 * gf/parse.h, every bad value one GF_EINVAL naming its flag, --help from
 * the rows. Does no work itself (cli_generate.c, cli_registry.c do). */
#include <stddef.h>
#include <string.h>

#include "gf/cli.h"
#include "gf/flags.h"
#include "gfs/request.h"
#include "mlflow/registry.h"

/* ---- generate ---------------------------------------------------------- */

/* --class: a class (name or index) or a comma-separated list of them. */
static gf_status class_arg(const gf_flag *row, void *obj, const char *v,
                           gf_err *err) {
  if (strlen(v) > GFS_CLASS_SPEC_MAX)
    return gf_fail(err, GF_EINVAL, "%s: longer than %d bytes", row->name,
                   GFS_CLASS_SPEC_MAX);
  return gf_flag_copy(row, obj, v, err);
}

static const gf_flag_choice k_precisions[] = {
  {"fp32", GF_GEN_FP32}, {"bf16", GF_GEN_BF16}, {"int8", GF_GEN_INT8},
  {NULL, 0}};

static const gf_flag_choice k_noises[] = {
  {"const", GF_SG2_NOISE_CONST}, {"random", GF_SG2_NOISE_RANDOM},
  {"none", GF_SG2_NOISE_NONE}, {NULL, 0}};

#define G gf_cli_generate_opts
static const gf_flag k_generate_rows[] = {
  {.name = "--model", .arg = "URI", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(G, uri), .nonempty = true, .def_help = "required",
   .help = "models:/NAME@ALIAS or models:/NAME/VERSION"},
  {.name = "--seed", .arg = "S", .kind = GF_FLAG_U64, GF_FLAG_FIELD(G, seed),
   .ulo = 0, .uhi = UINT64_MAX, GF_FLAG_GIVEN(G, seed_set),
   .def_help = "required",
   .help = "latents: image k is sample k of seed S, as ganflow-serve's"},
  {.name = "--n", .short_name = 'n', .arg = "N", .kind = GF_FLAG_INT,
   GF_FLAG_FIELD(G, n), .lo = 1, .hi = 1024, .def_i = 1,
   .help = "images; more than one make a grid"},
  {.name = "--output", .short_name = 'o', .arg = "FILE", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(G, out_path), .nonempty = true, .def_help = "required",
   .help = "the PNG, written atomically"},
  {.name = "--cache-dir", .arg = "DIR", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(G, cache_dir), .nonempty = true,
   .def_help = "~/.cache/ganflow-serve",
   .help = "download cache, ganflow-serve's layout"},
  {.name = "--class", .arg = "C[,C...]", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(G, cls), .nonempty = true, .parse = class_arg,
   .def_help = "none",
   .help = "a class name or index for every image, or one per equal run of "
           "images; needed by class-conditional versions"},
  {.name = "--threads", .arg = "N", .kind = GF_FLAG_INT,
   GF_FLAG_FIELD(G, threads), .lo = 1, .hi = 256, .def_i = 2,
   .help = "op threads"},
  {.name = "--precision", .kind = GF_FLAG_CHOICE,
   GF_FLAG_FIELD(G, precision), .choices = k_precisions,
   .def_i = GF_GEN_FP32,
   .help = "as ganflow-serve's --precision: the bytes it answers with it"},
  {.name = "--psi", .arg = "X", .kind = GF_FLAG_F64, GF_FLAG_FIELD(G, psi),
   .flo = -8, .fhi = 8, .def_f = 1,
   .help = "stylegan2: truncation toward the average w (1: none)"},
  {.name = "--trunc-cutoff", .arg = "L", .kind = GF_FLAG_INT,
   GF_FLAG_FIELD(G, trunc_cutoff), .lo = 0, .hi = 64, .def_i = 0,
   .def_help = "0: every w", .help = "stylegan2: truncate ws 0..L-1 only"},
  {.name = "--noise", .kind = GF_FLAG_CHOICE, GF_FLAG_FIELD(G, noise),
   .choices = k_noises, .def_i = GF_SG2_NOISE_CONST,
   .help = "stylegan2: the synthesis noise (random: drawn from --seed)"},
  {.name = "--mix", .arg = "S", .kind = GF_FLAG_U64, GF_FLAG_FIELD(G, mix),
   .ulo = 0, .uhi = UINT64_MAX, GF_FLAG_GIVEN(G, mix_set),
   .def_help = "none",
   .help = "stylegan2: style mixing, image k's ws from --mix-from on from "
           "sample k of seed S"},
  {.name = "--mix-from", .arg = "L", .kind = GF_FLAG_INT,
   GF_FLAG_FIELD(G, mix_from), .lo = 1, .hi = 63, .def_i = 0,
   .def_help = "with --mix", .help = "stylegan2: the first mixed w"},
};
#undef G

static const gf_flag_table k_generate =
    GF_FLAG_TABLE(k_generate_rows, NULL, 1, 23);

const gf_flag_table *gf_cli_generate_flags(void) { return &k_generate; }

gf_status gf_cli_generate_parse(gf_cli_generate_opts *o, int argc,
                                char **argv, bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  gf_flags_defaults(&k_generate, o);
  GF_TRY(gf_flags_parse(&k_generate, o, argc, argv, NULL, help, NULL, err));
  if (*help) return GF_OK;
  if (!o->uri || !o->seed_set || !o->out_path)
    return gf_fail(err, GF_EINVAL, "--model, --seed and -o are required");
  if (o->mix_set != (o->mix_from > 0))
    return gf_fail(err, GF_EINVAL, "--mix and --mix-from go together");
  return GF_OK;
}

/* ---- import ------------------------------------------------------------ */

static gf_status import_pos(void *obj, const char *s, gf_err *err) {
  gf_cli_import_opts *o = obj;
  if (o->snapshot || s[0] == '-')
    return gf_fail(err, GF_EINVAL, "unexpected argument '%s'", s);
  if (!o->kind) {
    if (strcmp(s, "stylegan2-ada") != 0)
      return gf_fail(err, GF_EINVAL, "KIND: '%.64s' is not one ganflow "
                     "imports (stylegan2-ada)", s);
    o->kind = s;
  } else {
    o->snapshot = s;
  }
  return GF_OK;
}

/* --register NAME: what a models:/NAME@ALIAS URI can name. */
static gf_status registry_name_arg(const gf_flag *row, void *obj,
                                   const char *v, gf_err *err) {
  if (strlen(v) > 200)
    return gf_fail(err, GF_EINVAL, "%s: longer than 200 bytes", row->name);
  for (const char *p = v; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == '/' || *p == '@')
      return gf_fail(err, GF_EINVAL, "%s: '%.64s' holds '/', '@' or a "
                     "control character", row->name, v);
  return gf_flag_copy(row, obj, v, err);
}

/* --alias A: a valid MLflow alias, as ganflow-train's --alias. */
static gf_status alias_arg(const gf_flag *row, void *obj, const char *v,
                           gf_err *err) {
  if (!mlflow_alias_is_valid(v))
    return gf_fail(err, GF_EINVAL, "%s: '%.64s' is not a valid MLflow alias "
                   "([A-Za-z0-9_-]+, not 'latest' or v<digits>)", row->name, v);
  return gf_flag_copy(row, obj, v, err);
}

#define I gf_cli_import_opts
static const gf_flag k_import_rows[] = {
  {.name = "--out", .arg = "DIR", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(I, out_dir), .nonempty = true,
   .def_help = "none (needs --register)",
   .help = "write the model directory there (created; its parent must "
           "exist)"},
  {.name = "--register", .arg = "NAME", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(I, register_name), .nonempty = true,
   .parse = registry_name_arg, .def_help = "not registered",
   .help = "log the model to MLFLOW_TRACKING_URI in a run of its own and "
           "register it as a new version of NAME"},
  {.name = "--alias", .arg = "A", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(I, alias), .nonempty = true, .parse = alias_arg,
   .def_help = "none", .help = "point alias A at the new version"},
  {.name = "--experiment", .arg = "NAME", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(I, experiment), .nonempty = true,
   .def_help = "ganflow-import", .help = "the MLflow experiment of the run"},
};
#undef I

static const gf_flag_table k_import = GF_FLAG_TABLE(k_import_rows, NULL, 1, 23);

const gf_flag_table *gf_cli_import_flags(void) { return &k_import; }

gf_status gf_cli_import_parse(gf_cli_import_opts *o, int argc, char **argv,
                              bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  gf_flags_defaults(&k_import, o);
  gf_flags_opts opts = {.positional = import_pos};
  GF_TRY(gf_flags_parse(&k_import, o, argc, argv, &opts, help, NULL, err));
  if (*help) return GF_OK;
  if (!o->kind || !o->snapshot)
    return gf_fail(err, GF_EINVAL, "expected stylegan2-ada SNAPSHOT.pkl");
  if (!o->out_dir && !o->register_name)
    return gf_fail(err, GF_EINVAL, "give --out DIR, --register NAME or both");
  if (o->alias && !o->register_name)
    return gf_fail(err, GF_EINVAL, "--alias: needs --register");
  if (!o->experiment) o->experiment = "ganflow-import";
  return GF_OK;
}

/* ---- promote ----------------------------------------------------------- */

static gf_status if_better_arg(const gf_flag *row, void *obj, const char *v,
                               gf_err *err) {
  char metric[256];
  mlflow_gate_goal goal;
  mlflow_error me;
  if (mlflow_gate_metric_parse(v, metric, sizeof metric, &goal, &me) !=
      MLFLOW_OK)
    return gf_fail(err, GF_EINVAL, "%s: %s", row->name, me.message);
  return gf_flag_copy(row, obj, v, err);
}

static gf_status promote_pos(void *obj, const char *s, gf_err *err) {
  gf_cli_promote_opts *o = obj;
  if (o->version || s[0] == '-')
    return gf_fail(err, GF_EINVAL, "unexpected argument '%s'", s);
  *(o->name ? &o->version : &o->name) = s;
  return GF_OK;
}

#define P gf_cli_promote_opts
static const gf_flag k_promote_rows[] = {
  {.name = "--alias", .arg = "ALIAS", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(P, alias), .nonempty = true, .def_help = "required",
   .help = "the alias moved to VERSION"},
  {.name = "--if-better", .arg = "METRIC[:min|max]", .kind = GF_FLAG_ARG,
   GF_FLAG_FIELD(P, if_better), .parse = if_better_arg,
   .def_help = "always moved",
   .help = "only when the last value of METRIC in VERSION's run beats the "
           "one of the version holding ALIAS now (min: lower is better)"},
};
#undef P

static const gf_flag_table k_promote =
    GF_FLAG_TABLE(k_promote_rows, NULL, 1, 23);

const gf_flag_table *gf_cli_promote_flags(void) { return &k_promote; }

gf_status gf_cli_promote_parse(gf_cli_promote_opts *o, int argc, char **argv,
                               bool *help, gf_err *err) {
  memset(o, 0, sizeof *o);
  gf_flags_opts opts = {.positional = promote_pos};
  GF_TRY(gf_flags_parse(&k_promote, o, argc, argv, &opts, help, NULL, err));
  if (*help) return GF_OK;
  if (!o->version || !o->alias)
    return gf_fail(err, GF_EINVAL, "expected NAME VERSION --alias ALIAS");
  return GF_OK;
}
