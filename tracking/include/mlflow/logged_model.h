/* mlflow/logged_model.h - MLflow 3's logged models over the REST API: the
 * model entity the experiment's Models tab lists, with its own artifact
 * location, metrics linked to it, and registry versions made from it
 * (what mlflow.<flavor>.log_model does since MLflow 3).
 *
 * The sequence a client follows (as MLflow's Python client does):
 *   mlflow_logged_model_create       POST   logged-models
 *   mlflow_run_log_model_output      POST   runs/outputs (the run produced it)
 *   upload the model directory to out->artifact_uri (artifacts.h)
 *   mlflow_logged_model_finalize     PATCH  logged-models/{id} (READY)
 *   mlflow_log_metrics_for_model     POST   runs/log-batch with model_id
 *   mlflow_model_version_create_from_model
 *                                    POST   model-versions/create with
 *                                           source models:/{id}, model_id
 *   mlflow_logged_model_set_tags     PATCH  logged-models/{id}/tags
 *                                           (mlflow.modelVersions)
 * A server without these endpoints (MLflow before 3.0) answers
 * logged-models with 404: mlflow_logged_model_create then returns
 * MLFLOW_E_UNSUPPORTED, and the caller falls back to a run artifact. */
#ifndef MLFLOW_LOGGED_MODEL_H
#define MLFLOW_LOGGED_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "mlflow/client.h"
#include "mlflow/registry.h"
#include "mlflow/tracking.h"

typedef struct mlflow_logged_model {
  char *model_id;      /* "m-<32 hex>" */
  char *experiment_id;
  char *name;
  char *artifact_uri;  /* where its files go, e.g. mlflow-artifacts:/1/models/m-.../artifacts */
  char *status;        /* "LOGGED_MODEL_PENDING", "LOGGED_MODEL_READY", ... */
  char *source_run_id; /* may be NULL */
} mlflow_logged_model;

void mlflow_logged_model_free(mlflow_logged_model *m); /* accepts NULL */

/* Creates a logged model (status PENDING) in experiment_id. name,
 * source_run_id and model_type may be NULL; tags and params (n each) are
 * set on it. *out is owned by the caller (mlflow_logged_model_free).
 * MLFLOW_E_UNSUPPORTED when the server has no logged-models endpoint. */
mlflow_status mlflow_logged_model_create(mlflow_client *c,
                                         const char *experiment_id,
                                         const char *name,
                                         const char *source_run_id,
                                         const char *model_type,
                                         const mlflow_kv *tags, size_t n_tags,
                                         const mlflow_kv *params,
                                         size_t n_params,
                                         mlflow_logged_model *out,
                                         mlflow_error *err);

mlflow_status mlflow_logged_model_get(mlflow_client *c, const char *model_id,
                                      mlflow_logged_model *out,
                                      mlflow_error *err);

/* READY (ok != 0) or UPLOAD_FAILED. */
mlflow_status mlflow_logged_model_finalize(mlflow_client *c,
                                           const char *model_id, int ok,
                                           mlflow_error *err);

mlflow_status mlflow_logged_model_set_tags(mlflow_client *c,
                                           const char *model_id,
                                           const mlflow_kv *tags, size_t n,
                                           mlflow_error *err);

/* Tags logged model model_id with "mlflow.modelVersions" =
 * [{"name": name, "version": version}] as MLflow's client writes it, so
 * that the model's page links to that registry version. */
mlflow_status mlflow_logged_model_link_version(mlflow_client *c,
                                               const char *model_id,
                                               const char *name,
                                               const char *version,
                                               mlflow_error *err);

/* Records the model as an output of the run, at step. */
mlflow_status mlflow_run_log_model_output(mlflow_client *c, const char *run_id,
                                          const char *model_id, int64_t step,
                                          mlflow_error *err);

/* Logs metrics of run_id linked to model_id (log-batch, at most 1000 per
 * call). A point identical to one the run holds (key, value, timestamp,
 * step) is not a second point of the run's history: the server keeps one
 * and links it to the model. */
mlflow_status mlflow_log_metrics_for_model(mlflow_client *c, const char *run_id,
                                           const char *model_id,
                                           const mlflow_metric *metrics,
                                           size_t n, mlflow_error *err);

/* A registry version from a logged model: source "models:/<model_id>".
 * *out as mlflow_model_version_create. */
mlflow_status mlflow_model_version_create_from_model(
    mlflow_client *c, const char *name, const char *model_id,
    const char *run_id, mlflow_model_version *out, mlflow_error *err);

#endif
