/* logged_model.c - MLflow 3's logged models; see mlflow/logged_model.h. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "mlflow/logged_model.h"
#include "parse.h"

/* {model: {info: {...}}} into *out (zeroed first); owns nothing of ans. */
static mlflow_status parse_model(const cJSON *ans, mlflow_logged_model *out,
                                 mlflow_error *err) {
  memset(out, 0, sizeof *out);
  const cJSON *model = cJSON_GetObjectItemCaseSensitive(ans, "model");
  const cJSON *info = cJSON_GetObjectItemCaseSensitive(model, "info");
  const char *id = mlflow_json_str(info, "model_id");
  const char *exp = mlflow_json_str(info, "experiment_id");
  const char *uri = mlflow_json_str(info, "artifact_uri");
  if (!cJSON_IsObject(info) || !id || !*id || !exp || !uri || !*uri)
    return mlflow_fail(err, MLFLOW_E_PROTOCOL, "logged-models: the answer "
                       "lacks model.info.model_id, experiment_id or "
                       "artifact_uri");
  const char *name = mlflow_json_str(info, "name");
  const char *status = mlflow_json_str(info, "status");
  const char *run = mlflow_json_str(info, "source_run_id");
  out->model_id = mlflow_strdup(id);
  out->experiment_id = mlflow_strdup(exp);
  out->artifact_uri = mlflow_strdup(uri);
  out->name = name ? mlflow_strdup(name) : NULL;
  out->status = status ? mlflow_strdup(status) : NULL;
  out->source_run_id = run && *run ? mlflow_strdup(run) : NULL;
  if (!out->model_id || !out->experiment_id || !out->artifact_uri ||
      (name && !out->name) || (status && !out->status) ||
      (run && *run && !out->source_run_id)) {
    mlflow_logged_model_free(out);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  return MLFLOW_OK;
}

/* [{key, value}, ...] added to obj under name; 0 on allocation failure. */
static int add_kv_array(cJSON *obj, const char *name, const mlflow_kv *kv,
                        size_t n) {
  if (!n) return 1;
  cJSON *arr = cJSON_AddArrayToObject(obj, name);
  if (!arr) return 0;
  for (size_t i = 0; i < n; i++) {
    cJSON *e = cJSON_CreateObject();
    if (!e) return 0;
    cJSON_AddItemToArray(arr, e);
    if (!cJSON_AddStringToObject(e, "key", kv[i].key) ||
        !cJSON_AddStringToObject(e, "value", kv[i].value ? kv[i].value : ""))
      return 0;
  }
  return 1;
}

/* "logged-models/ID SUFFIX", malloc'd (the caller frees); NULL when out of
 * memory. */
static char *model_endpoint(const char *model_id, const char *suffix) {
  mlflow_buf b = {0};
  if (mlflow_buf_appendf(&b, "logged-models/%s%s", model_id, suffix)) {
    mlflow_buf_free(&b);
    return NULL;
  }
  return b.data;
}

/* A model id is "m-" and hex in MLflow; anything that could leave the path
 * segment is refused before a request. */
static mlflow_status check_id(const char *id, mlflow_error *err) {
  mlflow_status st = mlflow_need(id, "model id", err);
  if (st) return st;
  for (const char *p = id; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
          (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
      return mlflow_fail(err, MLFLOW_E_INVALID, "model id '%s': only "
                         "letters, digits, '-' and '_'", id);
  return MLFLOW_OK;
}

mlflow_status mlflow_logged_model_create(mlflow_client *c,
                                         const char *experiment_id,
                                         const char *name,
                                         const char *source_run_id,
                                         const char *model_type,
                                         const mlflow_kv *tags, size_t n_tags,
                                         const mlflow_kv *params,
                                         size_t n_params,
                                         mlflow_logged_model *out,
                                         mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st = mlflow_need(experiment_id, "experiment id", err);
  if (st) return st;
  cJSON *body = cJSON_CreateObject();
  if (!body || !cJSON_AddStringToObject(body, "experiment_id", experiment_id) ||
      (name && !cJSON_AddStringToObject(body, "name", name)) ||
      (source_run_id &&
       !cJSON_AddStringToObject(body, "source_run_id", source_run_id)) ||
      (model_type && !cJSON_AddStringToObject(body, "model_type", model_type)) ||
      !add_kv_array(body, "tags", tags, n_tags) ||
      !add_kv_array(body, "params", params, n_params)) {
    cJSON_Delete(body);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  cJSON *ans = NULL;
  st = mlflow_api(c, "POST", "logged-models", body, NULL, &ans, err);
  cJSON_Delete(body);
  if (st == MLFLOW_E_NOT_FOUND &&
      (!err || !err->error_code[0] ||
       strcmp(err->error_code, "ENDPOINT_NOT_FOUND") == 0))
    return mlflow_fail(err, MLFLOW_E_UNSUPPORTED, "this MLflow server has no "
                       "logged-models endpoint (MLflow before 3.0)");
  if (st) return st;
  st = parse_model(ans, out, err);
  cJSON_Delete(ans);
  return st;
}

mlflow_status mlflow_logged_model_get(mlflow_client *c, const char *model_id,
                                      mlflow_logged_model *out,
                                      mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st = check_id(model_id, err);
  if (st) return st;
  char *ep = model_endpoint(model_id, "");
  if (!ep) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  cJSON *ans = NULL;
  st = mlflow_api(c, "GET", ep, NULL, NULL, &ans, err);
  free(ep);
  if (st) return st;
  st = parse_model(ans, out, err);
  cJSON_Delete(ans);
  return st;
}

mlflow_status mlflow_logged_model_finalize(mlflow_client *c,
                                           const char *model_id, int ok,
                                           mlflow_error *err) {
  mlflow_status st = check_id(model_id, err);
  if (st) return st;
  char *ep = model_endpoint(model_id, "");
  cJSON *body = cJSON_CreateObject();
  /* LoggedModelStatus: LOGGED_MODEL_READY = 2, LOGGED_MODEL_UPLOAD_FAILED = 3 */
  if (!ep || !body || !cJSON_AddStringToObject(body, "model_id", model_id) ||
      !cJSON_AddNumberToObject(body, "status", ok ? 2 : 3)) {
    free(ep);
    cJSON_Delete(body);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  st = mlflow_api(c, "PATCH", ep, body, NULL, NULL, err);
  free(ep);
  cJSON_Delete(body);
  return st;
}

mlflow_status mlflow_logged_model_set_tags(mlflow_client *c,
                                           const char *model_id,
                                           const mlflow_kv *tags, size_t n,
                                           mlflow_error *err) {
  mlflow_status st = check_id(model_id, err);
  if (st) return st;
  char *ep = model_endpoint(model_id, "/tags");
  cJSON *body = cJSON_CreateObject();
  if (!ep || !body || !add_kv_array(body, "tags", tags, n)) {
    free(ep);
    cJSON_Delete(body);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  st = mlflow_api(c, "PATCH", ep, body, NULL, NULL, err);
  free(ep);
  cJSON_Delete(body);
  return st;
}

mlflow_status mlflow_logged_model_link_version(mlflow_client *c,
                                               const char *model_id,
                                               const char *name,
                                               const char *version,
                                               mlflow_error *err) {
  mlflow_status st;
  if ((st = mlflow_need(name, "model name", err)) ||
      (st = mlflow_need(version, "model version", err)))
    return st;
  cJSON *arr = cJSON_CreateArray(), *o = cJSON_CreateObject();
  char *json = NULL;
  if (arr && o && cJSON_AddStringToObject(o, "name", name) &&
      cJSON_AddStringToObject(o, "version", version)) {
    cJSON_AddItemToArray(arr, o);
    o = NULL;
    json = cJSON_PrintUnformatted(arr);
  }
  cJSON_Delete(o);
  cJSON_Delete(arr);
  if (!json) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  mlflow_kv tag = {"mlflow.modelVersions", json};
  st = mlflow_logged_model_set_tags(c, model_id, &tag, 1, err);
  cJSON_free(json);
  return st;
}

mlflow_status mlflow_run_log_model_output(mlflow_client *c, const char *run_id,
                                          const char *model_id, int64_t step,
                                          mlflow_error *err) {
  mlflow_status st;
  if ((st = mlflow_need(run_id, "run id", err)) || (st = check_id(model_id, err)))
    return st;
  cJSON *body = cJSON_CreateObject();
  cJSON *models = body ? cJSON_AddArrayToObject(body, "models") : NULL;
  cJSON *m = cJSON_CreateObject();
  cJSON *stp = mlflow_json_int64(step);
  if (!models || !m || !stp || !cJSON_AddStringToObject(body, "run_id", run_id) ||
      !cJSON_AddStringToObject(m, "model_id", model_id)) {
    cJSON_Delete(m);
    cJSON_Delete(stp);
    cJSON_Delete(body);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  cJSON_AddItemToObject(m, "step", stp);
  cJSON_AddItemToArray(models, m);
  st = mlflow_api(c, "POST", "runs/outputs", body, NULL, NULL, err);
  cJSON_Delete(body);
  return st;
}

mlflow_status mlflow_log_metrics_for_model(mlflow_client *c, const char *run_id,
                                           const char *model_id,
                                           const mlflow_metric *metrics,
                                           size_t n, mlflow_error *err) {
  mlflow_status st;
  if ((st = mlflow_need(run_id, "run id", err)) || (st = check_id(model_id, err)))
    return st;
  for (size_t i = 0; i < n; i++)
    if ((st = mlflow_validate_key(metrics[i].key, err))) return st;
  for (size_t done = 0; done < n;) {
    size_t k = n - done > 1000 ? 1000 : n - done;
    cJSON *body = cJSON_CreateObject();
    cJSON *arr = body ? cJSON_AddArrayToObject(body, "metrics") : NULL;
    int ok = arr && cJSON_AddStringToObject(body, "run_id", run_id);
    for (size_t i = done; ok && i < done + k; i++) {
      const mlflow_metric *m = &metrics[i];
      cJSON *e = cJSON_CreateObject();
      cJSON *v = mlflow_json_double(m->value);
      cJSON *ts = mlflow_json_int64(m->timestamp_ms);
      cJSON *sp = mlflow_json_int64(m->step);
      ok = e && v && ts && sp && cJSON_AddStringToObject(e, "key", m->key) &&
           cJSON_AddStringToObject(e, "model_id", model_id) &&
           cJSON_AddStringToObject(e, "run_id", run_id);
      if (!ok) {
        cJSON_Delete(e);
        cJSON_Delete(v);
        cJSON_Delete(ts);
        cJSON_Delete(sp);
        break;
      }
      cJSON_AddItemToObject(e, "value", v);
      cJSON_AddItemToObject(e, "timestamp", ts);
      cJSON_AddItemToObject(e, "step", sp);
      cJSON_AddItemToArray(arr, e);
    }
    if (!ok) {
      cJSON_Delete(body);
      return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    }
    st = mlflow_api(c, "POST", "runs/log-batch", body, NULL, NULL, err);
    cJSON_Delete(body);
    if (st) return st;
    done += k;
  }
  return MLFLOW_OK;
}

mlflow_status mlflow_model_version_create_from_model(
    mlflow_client *c, const char *name, const char *model_id,
    const char *run_id, mlflow_model_version *out, mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st;
  if ((st = mlflow_need(name, "model name", err)) || (st = check_id(model_id, err)))
    return st;
  mlflow_buf source = {0};
  if (mlflow_buf_appendf(&source, "models:/%s", model_id)) {
    mlflow_buf_free(&source);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  cJSON *ans = NULL;
  st = mlflow_api_fields(c, "POST", "model-versions/create", &ans, err, "name",
                         name, "source", source.data, "run_id", run_id,
                         "model_id", model_id, NULL);
  mlflow_buf_free(&source);
  if (st) return st;
  st = mlflow_parse_model_version(
      cJSON_GetObjectItemCaseSensitive(ans, "model_version"), out, err);
  cJSON_Delete(ans);
  return st;
}
