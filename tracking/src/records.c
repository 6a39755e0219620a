/* records.c - the records the library hands out, at the bottom of it:
 * their free functions and accessors (experiments, runs and their lists,
 * metric histories, model versions and their lists, models:/ URIs,
 * artifact listings, logged models). The parsers (parse.c) fill them and
 * the REST calls (runs.c, registry.c, ...) return them; both depend on
 * this file and it on neither. Not here: filling a record from JSON
 * (parse.c), any request. */
#include <stdlib.h>
#include <string.h>

#include "mlflow/mlflow.h"

/* ---- experiments and runs (mlflow/tracking.h) -------------------------- */

void mlflow_experiment_free(mlflow_experiment *e) {
  if (!e) return;
  free(e->experiment_id);
  free(e->name);
  free(e->artifact_location);
  free(e->lifecycle_stage);
  memset(e, 0, sizeof *e);
}

void mlflow_run_info_free(mlflow_run_info *info) {
  if (!info) return;
  free(info->run_id);
  free(info->experiment_id);
  free(info->run_name);
  free(info->user_id);
  free(info->artifact_uri);
  free(info->lifecycle_stage);
  memset(info, 0, sizeof *info);
}

static void kv_free(mlflow_kv *kv, size_t n) {
  for (size_t i = 0; i < n; i++) {
    free((char *)kv[i].key);
    free((char *)kv[i].value);
  }
  free(kv);
}

void mlflow_run_free(mlflow_run *run) {
  if (!run) return;
  mlflow_run_info_free(&run->info);
  for (size_t i = 0; i < run->n_metrics; i++) free((char *)run->metrics[i].key);
  free(run->metrics);
  kv_free(run->params, run->n_params);
  kv_free(run->tags, run->n_tags);
  memset(run, 0, sizeof *run);
}

void mlflow_run_list_free(mlflow_run_list *list) {
  if (!list) return;
  for (size_t i = 0; i < list->count; i++) mlflow_run_free(&list->runs[i]);
  free(list->runs);
  free(list->next_page_token);
  memset(list, 0, sizeof *list);
}

static const char *kv_find(const mlflow_kv *kv, size_t n, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (!strcmp(kv[i].key, key)) return kv[i].value;
  return NULL;
}

const char *mlflow_run_param(const mlflow_run *run, const char *key) {
  return kv_find(run->params, run->n_params, key);
}

const char *mlflow_run_tag(const mlflow_run *run, const char *key) {
  return kv_find(run->tags, run->n_tags, key);
}

const char *mlflow_run_status_name(mlflow_run_status s) {
  switch (s) {
  case MLFLOW_RUN_RUNNING: return "RUNNING";
  case MLFLOW_RUN_SCHEDULED: return "SCHEDULED";
  case MLFLOW_RUN_FINISHED: return "FINISHED";
  case MLFLOW_RUN_FAILED: return "FAILED";
  case MLFLOW_RUN_KILLED: return "KILLED";
  }
  return NULL;
}

void mlflow_metric_list_free(mlflow_metric_list *list) {
  if (!list) return;
  for (size_t i = 0; i < list->count; i++) free((char *)list->items[i].key);
  free(list->items);
  memset(list, 0, sizeof *list);
}

/* ---- the model registry (mlflow/registry.h) ---------------------------- */

void mlflow_model_version_free(mlflow_model_version *mv) {
  if (!mv) return;
  free(mv->name);
  free(mv->version);
  free(mv->source);
  free(mv->run_id);
  free(mv->status);
  free(mv->status_message);
  for (size_t i = 0; i < mv->n_aliases; i++) free(mv->aliases[i]);
  free(mv->aliases);
  memset(mv, 0, sizeof *mv);
}

void mlflow_model_version_list_free(mlflow_model_version_list *l) {
  if (!l) return;
  for (size_t i = 0; i < l->count; i++) mlflow_model_version_free(&l->items[i]);
  free(l->items);
  memset(l, 0, sizeof *l);
}

void mlflow_model_uri_free(mlflow_model_uri *u) {
  if (!u) return;
  free(u->name);
  free(u->version);
  free(u->alias);
  memset(u, 0, sizeof *u);
}

/* ---- artifact listings (mlflow/artifacts.h) ---------------------------- */

void mlflow_file_list_free(mlflow_file_list *list) {
  if (!list) return;
  for (size_t i = 0; i < list->count; i++) free(list->items[i].path);
  free(list->items);
  memset(list, 0, sizeof *list);
}

/* ---- logged models (mlflow/logged_model.h) ----------------------------- */

void mlflow_logged_model_free(mlflow_logged_model *m) {
  if (!m) return;
  free(m->model_id);
  free(m->experiment_id);
  free(m->name);
  free(m->artifact_uri);
  free(m->status);
  free(m->source_run_id);
  memset(m, 0, sizeof *m);
}
