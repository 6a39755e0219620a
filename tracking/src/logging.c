/* logging.c - params, tags, metrics: validation, log-batch split to the
 * server's limits, metric history. */
#include <stdlib.h>
#include <string.h>

#include "parse.h"

/* Budget for one log-batch body; the server refuses more than 1,000,000. */
#define BATCH_BODY_BUDGET 950000

mlflow_status mlflow_validate_key(const char *key, mlflow_error *err) {
  if (!key || !*key)
    return mlflow_fail(err, MLFLOW_E_INVALID, "empty key");
  size_t n = strlen(key);
  if (n > MLFLOW_MAX_KEY_LEN)
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "key '%.40s...' is %zu characters (at most %d)", key, n,
                       MLFLOW_MAX_KEY_LEN);
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)key[i];
    int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
             (ch >= '0' && ch <= '9') || ch == '_' || ch == '-' || ch == '.' ||
             ch == ' ' || ch == '/' || ch == ':';
    if (!ok)
      return mlflow_fail(err, MLFLOW_E_INVALID,
                         "key '%.250s': character %zu is not one of "
                         "letters, digits, _ - . space / :", key, i + 1);
  }
  if (key[0] == '/')
    return mlflow_fail(err, MLFLOW_E_INVALID, "key '%s' starts with '/'", key);
  if (strstr(key, ".."))
    return mlflow_fail(err, MLFLOW_E_INVALID, "key '%s' contains '..'", key);
  return MLFLOW_OK;
}

/* Length in code points of UTF-8 text (what the server's limits count). */
static size_t utf8_chars(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    if (((unsigned char)*s & 0xC0) != 0x80) n++;
  return n;
}

/* Bytes the string takes as a JSON string literal, quotes included. */
static size_t json_str_bytes(const char *s) {
  size_t n = 2;
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\' || ch == '\b' || ch == '\f' || ch == '\n' ||
        ch == '\r' || ch == '\t')
      n += 2;
    else if (ch < 0x20)
      n += 6;
    else
      n += 1;
  }
  return n;
}

static mlflow_status check_kv(const mlflow_kv *kv, size_t limit,
                              const char *what, mlflow_error *err) {
  mlflow_status st = mlflow_validate_key(kv->key, err);
  if (st) return st;
  if (!kv->value)
    return mlflow_fail(err, MLFLOW_E_INVALID, "%s '%s' has no value", what,
                       kv->key);
  size_t n = utf8_chars(kv->value);
  if (n > limit)
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "%s '%s': value is %zu characters (at most %zu)", what,
                       kv->key, n, limit);
  return MLFLOW_OK;
}

static int add_kv(cJSON *arr, const mlflow_kv *kv) {
  cJSON *o = cJSON_CreateObject();
  if (o && cJSON_AddStringToObject(o, "key", kv->key) &&
      cJSON_AddStringToObject(o, "value", kv->value) && cJSON_AddItemToArray(arr, o))
    return 0;
  cJSON_Delete(o);
  return -1;
}

static int add_metric(cJSON *arr, const mlflow_metric *m) {
  cJSON *o = cJSON_CreateObject();
  cJSON *v = mlflow_json_double(m->value);
  cJSON *t = mlflow_json_int64(m->timestamp_ms);
  cJSON *s = mlflow_json_int64(m->step);
  if (o && v && t && s && cJSON_AddStringToObject(o, "key", m->key)) {
    cJSON_AddItemToObject(o, "value", v);
    cJSON_AddItemToObject(o, "timestamp", t);
    cJSON_AddItemToObject(o, "step", s);
    if (cJSON_AddItemToArray(arr, o)) return 0;
    cJSON_Delete(o);
    return -1;
  }
  cJSON_Delete(o);
  cJSON_Delete(v);
  cJSON_Delete(t);
  cJSON_Delete(s);
  return -1;
}

mlflow_status mlflow_log_batch(mlflow_client *c, const char *run_id,
                               const mlflow_metric *metrics, size_t n_metrics,
                               const mlflow_kv *params, size_t n_params,
                               const mlflow_kv *tags, size_t n_tags,
                               mlflow_error *err) {
  if (!run_id || !*run_id)
    return mlflow_fail(err, MLFLOW_E_INVALID, "run id is empty");
  mlflow_status st;
  for (size_t i = 0; i < n_metrics; i++)
    if ((st = mlflow_validate_key(metrics[i].key, err))) return st;
  for (size_t i = 0; i < n_params; i++)
    if ((st = check_kv(&params[i], MLFLOW_MAX_PARAM_VALUE_LEN, "param", err)))
      return st;
  for (size_t i = 0; i < n_tags; i++)
    if ((st = check_kv(&tags[i], MLFLOW_MAX_TAG_VALUE_LEN, "tag", err)))
      return st;

  size_t im = 0, ip = 0, it = 0;
  do {
    cJSON *b = cJSON_CreateObject();
    cJSON *jm = b ? cJSON_AddArrayToObject(b, "metrics") : NULL;
    cJSON *jp = b ? cJSON_AddArrayToObject(b, "params") : NULL;
    cJSON *jt = b ? cJSON_AddArrayToObject(b, "tags") : NULL;
    if (!jm || !jp || !jt || !cJSON_AddStringToObject(b, "run_id", run_id)) {
      cJSON_Delete(b);
      return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    }
    size_t bytes = 100 + strlen(run_id), items = 0, np = 0, nt = 0, nm = 0;
    int oom = 0;
    /* Every item fits a batch on its own (the limits above guarantee it),
     * so each pass makes progress. */
    while (!oom && ip < n_params && np < MLFLOW_BATCH_MAX_PARAMS &&
           items < MLFLOW_BATCH_MAX_ITEMS) {
      size_t sz = 30 + json_str_bytes(params[ip].key) + json_str_bytes(params[ip].value);
      if (items && bytes + sz > BATCH_BODY_BUDGET) break;
      oom = add_kv(jp, &params[ip++]);
      bytes += sz, items++, np++;
    }
    while (!oom && it < n_tags && nt < MLFLOW_BATCH_MAX_TAGS &&
           items < MLFLOW_BATCH_MAX_ITEMS) {
      size_t sz = 30 + json_str_bytes(tags[it].key) + json_str_bytes(tags[it].value);
      if (items && bytes + sz > BATCH_BODY_BUDGET) break;
      oom = add_kv(jt, &tags[it++]);
      bytes += sz, items++, nt++;
    }
    while (!oom && im < n_metrics && nm < MLFLOW_BATCH_MAX_METRICS &&
           items < MLFLOW_BATCH_MAX_ITEMS) {
      size_t sz = 100 + json_str_bytes(metrics[im].key);
      if (items && bytes + sz > BATCH_BODY_BUDGET) break;
      oom = add_metric(jm, &metrics[im++]);
      bytes += sz, items++, nm++;
    }
    if (oom) {
      cJSON_Delete(b);
      return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    }
    st = mlflow_api(c, "POST", "runs/log-batch", b, NULL, NULL, err);
    cJSON_Delete(b);
    if (st) return st;
  } while (im < n_metrics || ip < n_params || it < n_tags);
  return MLFLOW_OK;
}

mlflow_status mlflow_log_param(mlflow_client *c, const char *run_id,
                               const char *key, const char *value,
                               mlflow_error *err) {
  mlflow_kv kv = {key, value};
  return mlflow_log_batch(c, run_id, NULL, 0, &kv, 1, NULL, 0, err);
}

mlflow_status mlflow_set_tag(mlflow_client *c, const char *run_id,
                             const char *key, const char *value,
                             mlflow_error *err) {
  mlflow_kv kv = {key, value};
  return mlflow_log_batch(c, run_id, NULL, 0, NULL, 0, &kv, 1, err);
}

mlflow_status mlflow_log_metric(mlflow_client *c, const char *run_id,
                                const char *key, double value,
                                int64_t timestamp_ms, int64_t step,
                                mlflow_error *err) {
  mlflow_metric m = {key, value, timestamp_ms, step};
  return mlflow_log_batch(c, run_id, &m, 1, NULL, 0, NULL, 0, err);
}

mlflow_status mlflow_metric_history(mlflow_client *c, const char *run_id,
                                    const char *key, mlflow_metric_list *out,
                                    mlflow_error *err) {
  memset(out, 0, sizeof *out);
  if (!run_id || !*run_id)
    return mlflow_fail(err, MLFLOW_E_INVALID, "run id is empty");
  mlflow_status st = mlflow_validate_key(key, err);
  if (st) return st;
  char *token = NULL;
  for (int page = 0;; page++) {
    cJSON *ans;
    st = mlflow_api_fields(c, "GET", "metrics/get-history", &ans, err,
                           "run_id", run_id, "metric_key", key, "max_results",
                           "25000", "page_token", token, NULL);
    free(token);
    token = NULL;
    if (st) break;
    st = mlflow_parse_metric_page(ans, out, err);
    const char *tok = mlflow_json_str(ans, "next_page_token");
    if (st == MLFLOW_OK && tok && *tok && !(token = strdup(tok)))
      st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    cJSON_Delete(ans);
    if (st || !token) break;
    if (page > 100000) {
      st = mlflow_fail(err, MLFLOW_E_PROTOCOL,
                       "metric history: the server keeps sending pages");
      break;
    }
  }
  free(token);
  if (st) mlflow_metric_list_free(out);
  return st;
}
