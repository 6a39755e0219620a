/* cli_import.c - `ganflow import stylegan2-ada SNAPSHOT.pkl`: an official
 * snapshot's G_ema as a ganflow model directory (gf/sg2_import.h),
 * written to --out and/or logged and registered in MLflow as ganflow-train
 * logs its final model (trainer/src/train_tracking.c). See gf/cli.h. */
#include <stdlib.h>
#include <string.h>

#include "gf/cli.h"
#include "gf/fs.h"
#include "gf/mlflow_status.h"
#include "gf/sg2_import.h"
#include "gf/sg2_snapshot.h"
#include "gf/text.h"
#include "gf/train.h"
#include "mlflow/mlflow.h"

static gf_status mlfail(gf_err *err, const char *what, const mlflow_error *e) {
  return gf_fail_mlflow(err, e, "MLflow: %s", what);
}

/* The file name of a path (after its last '/'). */
static const char *base_name(const char *p) {
  const char *s = strrchr(p, '/');
  return s ? s + 1 : p;
}

/* The import's run: the logged model (or, before MLflow 3, the run's
 * model/ artifacts) written from s into the scratch dir tmp and uploaded;
 * *model_id (malloc'd, NULL before MLflow 3) and *source (malloc'd: where
 * a version is created from) on success. */
static gf_status log_model(mlflow_client *c, const gf_sg2_snapshot *s,
                           const gf_model_config *cfg,
                           const mlflow_run_info *run, const char *tmp,
                           const char *snapshot, char **model_id,
                           char **source, gf_err *err) {
  mlflow_error e;
  char *mlv = NULL;
  if (mlflow_server_version(c, &mlv, &e) != MLFLOW_OK)
    return mlfail(err, "server version", &e);
  char z[16], hw[32], ch[16];
  GF_FORMAT_FITS(z, sizeof z, "%d", cfg->z_dim);
  GF_FORMAT_FITS(hw, sizeof hw, "%dx%d", cfg->image_height, cfg->image_width);
  GF_FORMAT_FITS(ch, sizeof ch, "%d", cfg->image_channels);
  mlflow_kv params[] = {{"architecture", gf_arch_name(cfg->architecture)},
                        {"z_dim", z}, {"image_size", hw}, {"channels", ch}};
  mlflow_kv tags[] = {{"ganflow.version", GF_TRAIN_VERSION}};
  gf_st_kv meta[] = {{"ganflow.run_id", run->run_id},
                     {"ganflow.imported_from", base_name(snapshot)}};
  mlflow_logged_model lm;
  memset(&lm, 0, sizeof lm);
  gf_status st = GF_OK;
  mlflow_status ms = mlflow_logged_model_create(
      c, run->experiment_id, "generator", run->run_id, "ganflow", tags, 1,
      params, sizeof params / sizeof *params, &lm, &e);
  if (ms == MLFLOW_OK) {
    gf_mlmodel_info info = {lm.artifact_uri, run->run_id, mlv,
                            GF_TRAIN_VERSION, NULL};
    st = gf_sg2_import_dir(s, tmp, &info, meta, 2, NULL, err);
    if (st == GF_OK &&
        mlflow_run_log_model_output(c, run->run_id, lm.model_id, 0, &e) !=
            MLFLOW_OK)
      st = mlfail(err, "runs/outputs", &e);
    if (st == GF_OK &&
        mlflow_artifact_upload_dir(c, lm.artifact_uri, tmp, NULL, &e) !=
            MLFLOW_OK)
      st = mlfail(err, "uploading the logged model", &e);
    if (mlflow_logged_model_finalize(c, lm.model_id, st == GF_OK, &e) !=
            MLFLOW_OK && st == GF_OK)
      st = mlfail(err, "logged-models/finalize", &e);
    if (st == GF_OK) {
      *model_id = strdup(lm.model_id);
      *source = strdup(lm.artifact_uri);
    }
  } else if (ms == MLFLOW_E_UNSUPPORTED) { /* MLflow 2: the run's model/ */
    gf_mlmodel_info info = {"model", run->run_id, mlv, GF_TRAIN_VERSION, NULL};
    st = gf_sg2_import_dir(s, tmp, &info, meta, 2, NULL, err);
    if (st == GF_OK &&
        mlflow_artifact_upload_dir(c, run->artifact_uri, tmp, "model", &e) !=
            MLFLOW_OK)
      st = mlfail(err, "uploading model/", &e);
    if (st == GF_OK) *source = gf_path_join_alloc(run->artifact_uri, "model");
  } else {
    st = mlfail(err, "logged-models/create", &e);
  }
  if (st == GF_OK && (!*source || (lm.model_id && !*model_id)))
    st = gf_fail(err, GF_ENOMEM, "out of memory");
  mlflow_logged_model_free(&lm);
  free(mlv);
  return st;
}

/* The registry's side: a new version of name from the logged model (or
 * source), READY, alias set, the logged model tagged with it and the run
 * with "ganflow.model_version". version[cap] receives its number. */
static gf_status register_version(mlflow_client *c, const char *name,
                                  const char *alias, const char *run_id,
                                  const char *model_id, const char *source,
                                  char *version, size_t cap, gf_err *err) {
  mlflow_error e;
  if (mlflow_registered_model_create(c, name, &e) != MLFLOW_OK)
    return mlfail(err, "registered-models/create", &e);
  mlflow_model_version mv;
  memset(&mv, 0, sizeof mv);
  mlflow_status ms =
      model_id ? mlflow_model_version_create_from_model(c, name, model_id,
                                                        run_id, &mv, &e)
               : mlflow_model_version_create(c, name, source, run_id, &mv, &e);
  if (ms != MLFLOW_OK) return mlfail(err, "model-versions/create", &e);
  gf_status st = GF_OK;
  if (mlflow_model_version_wait_ready(c, name, mv.version, 300, NULL, &e) !=
      MLFLOW_OK)
    st = mlfail(err, "waiting for the model version", &e);
  if (st == GF_OK && alias &&
      mlflow_alias_set(c, name, alias, mv.version, &e) != MLFLOW_OK)
    st = mlfail(err, "setting the alias", &e);
  if (st == GF_OK && model_id) {
    /* the logged model's page links to its version */
    if (mlflow_logged_model_link_version(c, model_id, name, mv.version, &e) !=
        MLFLOW_OK)
      st = mlfail(err, "tagging the logged model", &e);
  }
  char tag[512];
  if (st == GF_OK)
    st = gf_format(tag, sizeof tag, err, "model version tag", "%s/%s", name,
                   mv.version);
  if (st == GF_OK && mlflow_set_tag(c, run_id, "ganflow.model_version", tag,
                                    &e) != MLFLOW_OK)
    st = mlfail(err, "tagging the run", &e);
  if (st == GF_OK)
    st = gf_format(version, cap, err, "model version", "%s", mv.version);
  mlflow_model_version_free(&mv);
  return st;
}

/* --register: a run of its own in the experiment, the model logged and
 * registered; the run ends FINISHED, or FAILED when a step failed. */
static gf_status import_register(mlflow_client *c, const gf_cli_import_opts *o,
                                 const gf_sg2_snapshot *s,
                                 const gf_model_config *cfg, FILE *out,
                                 gf_err *err) {
  mlflow_error e;
  mlflow_experiment ex;
  if (mlflow_experiment_get_or_create(c, o->experiment, &ex, &e) != MLFLOW_OK)
    return mlfail(err, "experiment", &e);
  char run_name[160];
  gf_status st = gf_format(run_name, sizeof run_name, err, "run name",
                           "import-%.140s", base_name(o->snapshot));
  mlflow_kv tags[] = {{"ganflow.imported_from", base_name(o->snapshot)},
                      {"ganflow.import_kind", o->kind}};
  mlflow_run_info run;
  memset(&run, 0, sizeof run);
  if (st == GF_OK &&
      mlflow_run_create(c, ex.experiment_id, run_name, mlflow_now_ms(), tags,
                        2, &run, &e) != MLFLOW_OK)
    st = mlfail(err, "runs/create", &e);
  mlflow_experiment_free(&ex);
  if (st != GF_OK) return st;
  char tmp[GF_PATH_MAX];
  const char *base = getenv("TMPDIR");
  st = gf_format(tmp, sizeof tmp, err, "scratch directory",
                 "%s/ganflow-import-XXXXXX", base && *base ? base : "/tmp");
  if (st == GF_OK && !mkdtemp(tmp))
    st = gf_fail(err, GF_EIO, "cannot create a scratch directory in %s",
                 base && *base ? base : "/tmp");
  char *model_id = NULL, *source = NULL, version[64] = "";
  if (st == GF_OK) {
    /* into a fresh subfolder: gf_mlmodel_write creates it */
    char dir[GF_PATH_MAX];
    st = gf_path_join(dir, sizeof dir, tmp, "model", err);
    if (st == GF_OK)
      st = log_model(c, s, cfg, &run, dir, o->snapshot, &model_id, &source,
                     err);
    gf_rm_tree(tmp);
  }
  if (st == GF_OK)
    st = register_version(c, o->register_name, o->alias, run.run_id,
                          model_id, source, version, sizeof version, err);
  if (mlflow_run_update(c, run.run_id,
                        st == GF_OK ? MLFLOW_RUN_FINISHED : MLFLOW_RUN_FAILED,
                        mlflow_now_ms(), &e) != MLFLOW_OK && st == GF_OK)
    st = mlfail(err, "ending the run", &e);
  if (st == GF_OK)
    fprintf(out, "registered models:/%s/%s%s%s (run %s%s%s)\n",
            o->register_name, version, o->alias ? " as @" : "",
            o->alias ? o->alias : "", run.run_id,
            model_id ? ", logged model " : "", model_id ? model_id : "");
  free(model_id);
  free(source);
  mlflow_run_info_free(&run);
  return st;
}

gf_status gf_cli_import(mlflow_client *c, const gf_cli_import_opts *o,
                        FILE *out, gf_err *err) {
  if (!o->snapshot || (!o->out_dir && !o->register_name) ||
      (o->register_name && !c))
    return gf_fail(err, GF_EINVAL, "import: bad arguments");
  /* Everything is read and checked before anything is written. */
  gf_sg2_snapshot s;
  GF_TRY(gf_sg2_snapshot_read(o->snapshot, &s, err));
  gf_model_config cfg;
  gf_status st = gf_sg2_import_config(&s.G_ema, &cfg, err);
  if (st == GF_OK && o->out_dir) {
    gf_mlmodel_info info = {"model", NULL, "unknown", GF_TRAIN_VERSION, NULL};
    gf_st_kv meta[] = {{"ganflow.imported_from", base_name(o->snapshot)}};
    st = gf_sg2_import_dir(&s, o->out_dir, &info, meta, 1, NULL, err);
    if (st == GF_OK)
      fprintf(out, "%s: stylegan2 %dx%d, z %d, w %d%s, from %s\n", o->out_dir,
              cfg.image_height, cfg.image_width, cfg.z_dim, cfg.sg2.w_dim,
              cfg.num_classes ? ", conditional" : "", o->snapshot);
  }
  if (st == GF_OK && o->register_name)
    st = import_register(c, o, &s, &cfg, out, err);
  gf_sg2_snapshot_free(&s);
  return st;
}
