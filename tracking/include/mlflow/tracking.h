/* mlflow/tracking.h - experiments, runs, params, tags and metrics.
 *
 * Input records (mlflow_kv, mlflow_metric) borrow their strings from the
 * caller. Records returned inside an mlflow_run, mlflow_run_list or
 * mlflow_metric_list own their strings and are released with that
 * container's free function. */
#ifndef MLFLOW_TRACKING_H
#define MLFLOW_TRACKING_H

#include "mlflow/client.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Server limits (MLflow validation.py). */
#define MLFLOW_MAX_KEY_LEN 250
#define MLFLOW_MAX_PARAM_VALUE_LEN 6000
#define MLFLOW_MAX_TAG_VALUE_LEN 8000
#define MLFLOW_BATCH_MAX_METRICS 1000
#define MLFLOW_BATCH_MAX_PARAMS 100
#define MLFLOW_BATCH_MAX_TAGS 100
#define MLFLOW_BATCH_MAX_ITEMS 1000
#define MLFLOW_BATCH_MAX_BYTES (1000 * 1000) /* the request body */

typedef struct mlflow_kv {
  const char *key;
  const char *value;
} mlflow_kv;

typedef struct mlflow_metric {
  const char *key;
  double value;          /* NaN and +-Inf are sent as MLflow expects */
  int64_t timestamp_ms;  /* ms since the epoch */
  int64_t step;
} mlflow_metric;

typedef struct mlflow_experiment {
  char *experiment_id;
  char *name;
  char *artifact_location;
  char *lifecycle_stage;  /* "active" or "deleted" */
} mlflow_experiment;

void mlflow_experiment_free(mlflow_experiment *e); /* accepts NULL */

typedef enum mlflow_run_status {
  MLFLOW_RUN_RUNNING = 1,
  MLFLOW_RUN_SCHEDULED,
  MLFLOW_RUN_FINISHED,
  MLFLOW_RUN_FAILED,
  MLFLOW_RUN_KILLED,
} mlflow_run_status;

/* "RUNNING", ...; NULL for a value outside the enum. */
const char *mlflow_run_status_name(mlflow_run_status s);

typedef struct mlflow_run_info {
  char *run_id;
  char *experiment_id;
  char *run_name;
  char *user_id;
  char *artifact_uri;     /* e.g. "mlflow-artifacts:/1/<run_id>/artifacts" */
  char *lifecycle_stage;  /* "active" or "deleted" */
  mlflow_run_status status;
  int64_t start_time_ms;
  int64_t end_time_ms;    /* 0 while not ended */
} mlflow_run_info;

void mlflow_run_info_free(mlflow_run_info *info); /* accepts NULL */

typedef struct mlflow_run {
  mlflow_run_info info;
  mlflow_metric *metrics;  /* latest value of each metric */
  size_t n_metrics;
  mlflow_kv *params;
  size_t n_params;
  mlflow_kv *tags;
  size_t n_tags;
} mlflow_run;

void mlflow_run_free(mlflow_run *run); /* accepts NULL */

/* The value of a param or tag of a run, or NULL; borrowed from run. */
const char *mlflow_run_param(const mlflow_run *run, const char *key);
const char *mlflow_run_tag(const mlflow_run *run, const char *key);

typedef struct mlflow_run_list {
  mlflow_run *runs;
  size_t count;
  char *next_page_token;  /* NULL on the last page */
} mlflow_run_list;

void mlflow_run_list_free(mlflow_run_list *list); /* accepts NULL */

typedef struct mlflow_metric_list {
  mlflow_metric *items;   /* in the server's order: (step, timestamp) */
  size_t count;
} mlflow_metric_list;

void mlflow_metric_list_free(mlflow_metric_list *list); /* accepts NULL */

/* ---- validation (what the server would reject, caught before sending) -- */

/* Key rules: 1..250 chars of [A-Za-z0-9_ -./:], no "..", no leading '/'. */
mlflow_status mlflow_validate_key(const char *key, mlflow_error *err);

/* ---- experiments ------------------------------------------------------- */

/* MLFLOW_E_NOT_FOUND when no experiment has that name. A deleted
 * experiment is found too (lifecycle_stage "deleted"). */
mlflow_status mlflow_experiment_get_by_name(mlflow_client *c, const char *name,
                                            mlflow_experiment *out,
                                            mlflow_error *err);

mlflow_status mlflow_experiment_get(mlflow_client *c, const char *experiment_id,
                                    mlflow_experiment *out, mlflow_error *err);

/* *id_out is malloc'd; the caller frees it. */
mlflow_status mlflow_experiment_create(mlflow_client *c, const char *name,
                                       char **id_out, mlflow_error *err);

mlflow_status mlflow_experiment_delete(mlflow_client *c,
                                       const char *experiment_id,
                                       mlflow_error *err);

mlflow_status mlflow_experiment_restore(mlflow_client *c,
                                        const char *experiment_id,
                                        mlflow_error *err);

/* The active experiment of that name: created when missing (a concurrent
 * creator is tolerated), restored when soft-deleted, since a run cannot be
 * created in a deleted experiment. */
mlflow_status mlflow_experiment_get_or_create(mlflow_client *c,
                                              const char *name,
                                              mlflow_experiment *out,
                                              mlflow_error *err);

/* Sets (or overwrites) a tag of an experiment. MLflow 3's UI reads
 * "mlflow.experimentKind" ("custom_model_development" for training) to
 * choose between its model-training and GenAI views. */
mlflow_status mlflow_experiment_set_tag(mlflow_client *c,
                                        const char *experiment_id,
                                        const char *key, const char *value,
                                        mlflow_error *err);

/* ---- runs -------------------------------------------------------------- */

/* runs/create is not idempotent: a retry after a lost answer can create a
 * second run. Each create carries a unique tag ganflow.create_id; when a
 * create needed more than one attempt, the duplicates with that tag are
 * found and deleted, and the earliest run is returned. */
mlflow_status mlflow_run_create(mlflow_client *c, const char *experiment_id,
                                const char *run_name, int64_t start_time_ms,
                                const mlflow_kv *tags, size_t n_tags,
                                mlflow_run_info *out, mlflow_error *err);

mlflow_status mlflow_run_get(mlflow_client *c, const char *run_id,
                             mlflow_run *out, mlflow_error *err);

/* end_time_ms < 0 leaves the end time unset. */
mlflow_status mlflow_run_update(mlflow_client *c, const char *run_id,
                                mlflow_run_status status, int64_t end_time_ms,
                                mlflow_error *err);

/* Resumes a run by id: it must exist and not be deleted; its status goes
 * back to RUNNING. out (may be NULL) receives the run's info. */
mlflow_status mlflow_run_resume(mlflow_client *c, const char *run_id,
                                mlflow_run_info *out, mlflow_error *err);

mlflow_status mlflow_run_delete(mlflow_client *c, const char *run_id,
                                mlflow_error *err);

/* One page of runs/search. filter and order_by may be NULL; order_by is one
 * clause such as "attributes.start_time ASC"; max_results <= 0 means 1000;
 * page_token NULL for the first page. */
mlflow_status mlflow_runs_search(mlflow_client *c,
                                 const char *const *experiment_ids,
                                 size_t n_experiments, const char *filter,
                                 const char *order_by, int max_results,
                                 const char *page_token, mlflow_run_list *out,
                                 mlflow_error *err);

/* ---- params, tags, metrics -------------------------------------------- */

mlflow_status mlflow_log_param(mlflow_client *c, const char *run_id,
                               const char *key, const char *value,
                               mlflow_error *err);

mlflow_status mlflow_set_tag(mlflow_client *c, const char *run_id,
                             const char *key, const char *value,
                             mlflow_error *err);

mlflow_status mlflow_log_metric(mlflow_client *c, const char *run_id,
                                const char *key, double value,
                                int64_t timestamp_ms, int64_t step,
                                mlflow_error *err);

/* Any number of items; split into log-batch calls that respect the server's
 * limits (1000 metrics, 100 params, 100 tags, 1000 items, 1 MB per call).
 * Everything is validated before the first call. A failure part-way leaves
 * the earlier calls written; retrying the whole call is safe (identical
 * metrics are deduplicated by the server, identical params accepted). */
mlflow_status mlflow_log_batch(mlflow_client *c, const char *run_id,
                               const mlflow_metric *metrics, size_t n_metrics,
                               const mlflow_kv *params, size_t n_params,
                               const mlflow_kv *tags, size_t n_tags,
                               mlflow_error *err);

/* Every point of one metric, following the server's pages. */
mlflow_status mlflow_metric_history(mlflow_client *c, const char *run_id,
                                    const char *key, mlflow_metric_list *out,
                                    mlflow_error *err);

#ifdef __cplusplus
}
#endif
#endif
