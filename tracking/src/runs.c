/* runs.c - experiments and runs: create, get, update, resume, search. */
#include <assert.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "parse.h"

/* ---- experiments -------------------------------------------------------- */

static mlflow_status experiment_from_answer(cJSON *ans, mlflow_experiment *out,
                                            mlflow_error *err) {
  mlflow_status st = mlflow_parse_experiment(
      cJSON_GetObjectItemCaseSensitive(ans, "experiment"), out, err);
  cJSON_Delete(ans);
  return st;
}

/* GET endpoint?field=value, answered with {experiment: ...}. */
static mlflow_status experiment_fetch(mlflow_client *c, const char *endpoint,
                                      const char *field, const char *value,
                                      const char *what, mlflow_experiment *out,
                                      mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st = mlflow_need(value, what, err);
  if (st) return st;
  cJSON *ans;
  st = mlflow_api_fields(c, "GET", endpoint, &ans, err, field, value, NULL);
  if (st) return st;
  return experiment_from_answer(ans, out, err);
}

mlflow_status mlflow_experiment_get_by_name(mlflow_client *c, const char *name,
                                            mlflow_experiment *out,
                                            mlflow_error *err) {
  return experiment_fetch(c, "experiments/get-by-name", "experiment_name", name,
                          "experiment name", out, err);
}

mlflow_status mlflow_experiment_get(mlflow_client *c, const char *experiment_id,
                                    mlflow_experiment *out, mlflow_error *err) {
  return experiment_fetch(c, "experiments/get", "experiment_id", experiment_id,
                          "experiment id", out, err);
}

mlflow_status mlflow_experiment_create(mlflow_client *c, const char *name,
                                       char **id_out, mlflow_error *err) {
  *id_out = NULL;
  mlflow_status st = mlflow_need(name, "experiment name", err);
  if (st) return st;
  cJSON *ans;
  st = mlflow_api_fields(c, "POST", "experiments/create", &ans, err, "name",
                         name, NULL);
  if (st) return st;
  const char *id = mlflow_json_str(ans, "experiment_id");
  if (!id) st = mlflow_fail(err, MLFLOW_E_PROTOCOL,
                            "experiments/create: no experiment_id in the answer");
  else if (!(*id_out = strdup(id)))
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  cJSON_Delete(ans);
  return st;
}

mlflow_status mlflow_experiment_delete(mlflow_client *c,
                                       const char *experiment_id,
                                       mlflow_error *err) {
  mlflow_status st = mlflow_need(experiment_id, "experiment id", err);
  return st ? st : mlflow_api_fields(c, "POST", "experiments/delete", NULL,
                                     err, "experiment_id", experiment_id, NULL);
}

mlflow_status mlflow_experiment_restore(mlflow_client *c,
                                        const char *experiment_id,
                                        mlflow_error *err) {
  mlflow_status st = mlflow_need(experiment_id, "experiment id", err);
  return st ? st : mlflow_api_fields(c, "POST", "experiments/restore", NULL,
                                     err, "experiment_id", experiment_id, NULL);
}

mlflow_status mlflow_experiment_get_or_create(mlflow_client *c,
                                              const char *name,
                                              mlflow_experiment *out,
                                              mlflow_error *err) {
  mlflow_status st = mlflow_experiment_get_by_name(c, name, out, err);
  if (st == MLFLOW_E_NOT_FOUND) {
    char *id = NULL;
    st = mlflow_experiment_create(c, name, &id, err);
    free(id);
    /* Created now, or by a concurrent creator (RESOURCE_ALREADY_EXISTS, a
     * 400): either way it exists; read it back. */
    if (st == MLFLOW_OK ||
        (st == MLFLOW_E_HTTP && err &&
         !strcmp(err->error_code, "RESOURCE_ALREADY_EXISTS")))
      st = mlflow_experiment_get_by_name(c, name, out, err);
  }
  if (st) return st;
  if (out->lifecycle_stage && !strcmp(out->lifecycle_stage, "deleted")) {
    st = mlflow_experiment_restore(c, out->experiment_id, err);
    if (st) {
      mlflow_experiment_free(out);
      return st;
    }
    free(out->lifecycle_stage);
    if (!(out->lifecycle_stage = strdup("active"))) {
      mlflow_experiment_free(out);
      return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    }
  }
  return MLFLOW_OK;
}

mlflow_status mlflow_experiment_set_tag(mlflow_client *c,
                                        const char *experiment_id,
                                        const char *key, const char *value,
                                        mlflow_error *err) {
  mlflow_status st;
  if ((st = mlflow_need(experiment_id, "experiment id", err)) ||
      (st = mlflow_validate_key(key, err)))
    return st;
  if (!value || strlen(value) > MLFLOW_MAX_TAG_VALUE_LEN)
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "experiment tag '%s': value missing or too long", key);
  return mlflow_api_fields(c, "POST", "experiments/set-experiment-tag", NULL,
                           err, "experiment_id", experiment_id, "key", key,
                           "value", value, NULL);
}

/* ---- runs --------------------------------------------------------------- */

#define CREATE_ID_TAG "ganflow.create_id"

/* Writes 2 * nbytes random hex digits and a NUL into out (nbytes <= 32);
 * 0, or -1 when /dev/urandom cannot be read. */
static int random_hex(char *out, size_t nbytes) {
  unsigned char raw[32];
  if (nbytes > sizeof raw) return -1;
  FILE *f = fopen("/dev/urandom", "rb");
  if (!f) return -1;
  size_t got = fread(raw, 1, nbytes, f);
  fclose(f);
  if (got != nbytes) return -1;
  static const char hex[] = "0123456789abcdef";
  for (size_t i = 0; i < nbytes; i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 0x0F];
  }
  out[2 * nbytes] = '\0';
  return 0;
}

/* After a create that took more than one attempt: keep the earliest run
 * carrying create_id (32 hex digits, random_hex's), delete the others, and
 * return the kept one in out. */
static mlflow_status dedupe_created(mlflow_client *c, const char *experiment_id,
                                    const char create_id[33],
                                    mlflow_run_info *out, mlflow_error *err) {
  char filter[128]; /* the tag name and 32 hex digits: 64 bytes */
  int n = snprintf(filter, sizeof filter, "tags.`%s` = '%s'", CREATE_ID_TAG,
                   create_id);
  assert(n >= 0 && (size_t)n < sizeof filter);
  (void)n;
  const char *ids[1] = {experiment_id};
  mlflow_run_list list;
  mlflow_status st = mlflow_runs_search(c, ids, 1, filter,
                                        "attributes.start_time ASC", 100, NULL,
                                        &list, err);
  if (st) return st;
  if (list.count > 1) {
    /* Keep the lexically smallest run id among the earliest start times so
     * that every observer agrees on which one stays. */
    size_t keep = 0;
    for (size_t i = 1; i < list.count; i++) {
      const mlflow_run_info *a = &list.runs[i].info, *b = &list.runs[keep].info;
      if (a->start_time_ms < b->start_time_ms ||
          (a->start_time_ms == b->start_time_ms &&
           strcmp(a->run_id, b->run_id) < 0))
        keep = i;
    }
    for (size_t i = 0; i < list.count && st == MLFLOW_OK; i++)
      if (i != keep) st = mlflow_run_delete(c, list.runs[i].info.run_id, err);
    if (st == MLFLOW_OK && strcmp(list.runs[keep].info.run_id, out->run_id)) {
      mlflow_run_info_free(out);
      *out = list.runs[keep].info;
      memset(&list.runs[keep].info, 0, sizeof list.runs[keep].info);
    }
  }
  mlflow_run_list_free(&list);
  return st;
}

mlflow_status mlflow_run_create(mlflow_client *c, const char *experiment_id,
                                const char *run_name, int64_t start_time_ms,
                                const mlflow_kv *tags, size_t n_tags,
                                mlflow_run_info *out, mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st = mlflow_need(experiment_id, "experiment id", err);
  if (st) return st;
  for (size_t i = 0; i < n_tags; i++) {
    if ((st = mlflow_validate_key(tags[i].key, err))) return st;
    if (!tags[i].value || strlen(tags[i].value) > MLFLOW_MAX_TAG_VALUE_LEN)
      return mlflow_fail(err, MLFLOW_E_INVALID,
                         "tag '%s': value missing or longer than %d",
                         tags[i].key, MLFLOW_MAX_TAG_VALUE_LEN);
  }
  char create_id[33];
  if (random_hex(create_id, 16))
    return mlflow_fail(err, MLFLOW_E_IO, "cannot read /dev/urandom");
  cJSON *b = cJSON_CreateObject(), *ans = NULL;
  cJSON *jt = b ? cJSON_AddArrayToObject(b, "tags") : NULL;
  int ok = b && jt && cJSON_AddStringToObject(b, "experiment_id", experiment_id);
  if (ok && run_name) ok = cJSON_AddStringToObject(b, "run_name", run_name) != NULL;
  cJSON *t0 = mlflow_json_int64(start_time_ms ? start_time_ms : mlflow_now_ms());
  ok = ok && t0 && cJSON_AddItemToObject(b, "start_time", t0);
  if (!ok) cJSON_Delete(t0);
  for (size_t i = 0; ok && i <= n_tags; i++) {
    cJSON *t = cJSON_CreateObject();
    const char *k = i < n_tags ? tags[i].key : CREATE_ID_TAG;
    const char *v = i < n_tags ? tags[i].value : create_id;
    ok = t && cJSON_AddStringToObject(t, "key", k) &&
         cJSON_AddStringToObject(t, "value", v) && cJSON_AddItemToArray(jt, t);
    if (!ok) cJSON_Delete(t);
  }
  if (!ok) {
    cJSON_Delete(b);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  uint64_t attempts0 = c->attempts;
  st = mlflow_api(c, "POST", "runs/create", b, NULL, &ans, err);
  cJSON_Delete(b);
  if (st) return st;
  const cJSON *run = cJSON_GetObjectItemCaseSensitive(ans, "run");
  st = mlflow_parse_run_info(cJSON_GetObjectItemCaseSensitive(run, "info"), out,
                             err);
  cJSON_Delete(ans);
  if (st) return st;
  if (c->attempts - attempts0 > 1) {
    st = dedupe_created(c, experiment_id, create_id, out, err);
    if (st) mlflow_run_info_free(out);
  }
  return st;
}

mlflow_status mlflow_run_get(mlflow_client *c, const char *run_id,
                             mlflow_run *out, mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st = mlflow_need(run_id, "run id", err);
  if (st) return st;
  cJSON *ans;
  st = mlflow_api_fields(c, "GET", "runs/get", &ans, err, "run_id", run_id,
                         NULL);
  if (st) return st;
  st = mlflow_parse_run(cJSON_GetObjectItemCaseSensitive(ans, "run"), out, err);
  cJSON_Delete(ans);
  return st;
}

mlflow_status mlflow_run_update(mlflow_client *c, const char *run_id,
                                mlflow_run_status status, int64_t end_time_ms,
                                mlflow_error *err) {
  mlflow_status st = mlflow_need(run_id, "run id", err);
  if (st) return st;
  const char *sname = mlflow_run_status_name(status);
  if (!sname) return mlflow_fail(err, MLFLOW_E_INVALID, "invalid run status %d",
                                 (int)status);
  cJSON *b = cJSON_CreateObject();
  int ok = b && cJSON_AddStringToObject(b, "run_id", run_id) &&
           cJSON_AddStringToObject(b, "status", sname);
  if (ok && end_time_ms >= 0) {
    cJSON *t = mlflow_json_int64(end_time_ms);
    ok = t && cJSON_AddItemToObject(b, "end_time", t);
    if (!ok) cJSON_Delete(t);
  }
  if (!ok) {
    cJSON_Delete(b);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  st = mlflow_api(c, "POST", "runs/update", b, NULL, NULL, err);
  cJSON_Delete(b);
  return st;
}

mlflow_status mlflow_run_resume(mlflow_client *c, const char *run_id,
                                mlflow_run_info *out, mlflow_error *err) {
  if (out) memset(out, 0, sizeof *out);
  mlflow_run run;
  mlflow_status st = mlflow_run_get(c, run_id, &run, err);
  if (st) return st;
  if (run.info.lifecycle_stage && !strcmp(run.info.lifecycle_stage, "deleted")) {
    mlflow_run_free(&run);
    return mlflow_fail(err, MLFLOW_E_STATE,
                       "run %s is deleted; restore it in MLflow or start a "
                       "new run", run_id);
  }
  st = mlflow_run_update(c, run_id, MLFLOW_RUN_RUNNING, -1, err);
  if (st == MLFLOW_OK && out) {
    *out = run.info;
    out->status = MLFLOW_RUN_RUNNING;
    memset(&run.info, 0, sizeof run.info);
  }
  mlflow_run_free(&run);
  return st;
}

mlflow_status mlflow_run_delete(mlflow_client *c, const char *run_id,
                                mlflow_error *err) {
  mlflow_status st = mlflow_need(run_id, "run id", err);
  return st ? st : mlflow_api_fields(c, "POST", "runs/delete", NULL, err,
                                     "run_id", run_id, NULL);
}

mlflow_status mlflow_runs_search(mlflow_client *c,
                                 const char *const *experiment_ids,
                                 size_t n_experiments, const char *filter,
                                 const char *order_by, int max_results,
                                 const char *page_token, mlflow_run_list *out,
                                 mlflow_error *err) {
  memset(out, 0, sizeof *out);
  if (n_experiments == 0)
    return mlflow_fail(err, MLFLOW_E_INVALID, "runs search needs an experiment");
  cJSON *b = cJSON_CreateObject(), *ans = NULL;
  cJSON *ids = b ? cJSON_AddArrayToObject(b, "experiment_ids") : NULL;
  int ok = ids != NULL;
  for (size_t i = 0; ok && i < n_experiments; i++) {
    cJSON *s = cJSON_CreateString(experiment_ids[i]);
    ok = s && cJSON_AddItemToArray(ids, s);
    if (!ok) cJSON_Delete(s);
  }
  if (ok && filter) ok = cJSON_AddStringToObject(b, "filter", filter) != NULL;
  if (ok && order_by) {
    cJSON *ob = cJSON_AddArrayToObject(b, "order_by");
    cJSON *s = cJSON_CreateString(order_by);
    ok = ob && s && cJSON_AddItemToArray(ob, s);
    if (!ok) cJSON_Delete(s);
  }
  if (ok)
    ok = cJSON_AddNumberToObject(b, "max_results",
                                 max_results > 0 ? max_results : 1000) != NULL;
  if (ok && page_token)
    ok = cJSON_AddStringToObject(b, "page_token", page_token) != NULL;
  if (!ok) {
    cJSON_Delete(b);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  mlflow_status st = mlflow_api(c, "POST", "runs/search", b, NULL, &ans, err);
  cJSON_Delete(b);
  if (st) return st;
  st = mlflow_parse_run_list(ans, out, err);
  cJSON_Delete(ans);
  return st;
}
