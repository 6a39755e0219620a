/* parse.c - server answers to structs; see parse.h. Defensive throughout:
 * the input may come from a broken or hostile server. */
#include "parse.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double mlflow_parse_retry_after(const char *value, time_t now) {
  while (*value == ' ' || *value == '\t') value++;
  char buf[128];
  size_t n = strcspn(value, "\r\n");
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, value, n);
  while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t')) n--;
  buf[n] = '\0';
  if (n == 0) return -1;
  int digits = 1;
  for (size_t i = 0; i < n; i++)
    if (!isdigit((unsigned char)buf[i])) digits = 0;
  if (digits) {
    if (n > 9) return 1e9; /* absurd; the caller caps it */
    return (double)strtol(buf, NULL, 10);
  }
  time_t t = curl_getdate(buf, NULL);
  if (t == (time_t)-1) return -1;
  double d = difftime(t, now);
  return d < 0 ? 0 : d;
}

/* Copies the first len bytes of src (up to a NUL) as printable text,
 * control characters made spaces and trailing spaces dropped, into
 * dst[cap] (cap >= 4). Text that does not fit keeps its start and ends in
 * "..." so that the cut shows. */
static void copy_text(char *dst, size_t cap, const char *src, size_t len) {
  size_t i = 0, j = 0;
  for (; i < len && j + 1 < cap; i++) {
    unsigned char ch = (unsigned char)src[i];
    if (ch == '\0') break;
    dst[j++] = (ch < 0x20 || ch == 0x7f) ? ' ' : (char)ch;
  }
  int cut = i < len && src[i] != '\0';
  if (cut) {
    j = cap - 4;
    memcpy(dst + j, "...", 3);
    j += 3;
  }
  while (!cut && j && dst[j - 1] == ' ') j--;
  dst[j] = '\0';
}

mlflow_status mlflow_error_from_answer(const char *what, long status,
                                       const char *content_type,
                                       const char *body, size_t len,
                                       mlflow_error *err) {
  char code[64] = "";
  char msg[700] = "";
  cJSON *j = NULL;
  (void)content_type; /* some servers mislabel JSON; try parsing anyway */
  if (body && len) j = cJSON_ParseWithLength(body, len);
  if (j && cJSON_IsObject(j)) {
    const char *ec = mlflow_json_str(j, "error_code");
    const char *m = mlflow_json_str(j, "message");
    if (ec) copy_text(code, sizeof code, ec, strlen(ec));
    if (m) copy_text(msg, sizeof msg, m, strlen(m));
  }
  if (!msg[0] && body && len) copy_text(msg, sizeof msg, body, len);
  cJSON_Delete(j);
  mlflow_status st = MLFLOW_E_HTTP;
  if (status == 401 || status == 403) {
    st = MLFLOW_E_AUTH;
  } else if (!strcmp(code, "RESOURCE_DOES_NOT_EXIST") ||
             (status == 404 && !code[0])) {
    st = MLFLOW_E_NOT_FOUND;
  }
  if (err) {
    mlflow_message_format(err->message, sizeof err->message,
                          "%s: HTTP %ld%s%s: %s", what, status,
                          code[0] ? " " : "", code,
                          msg[0] ? msg : "(no message in the answer)");
    err->status = st;
    err->http_status = status;
    _Static_assert(sizeof code == sizeof err->error_code,
                   "code is copied whole into error_code");
    memcpy(err->error_code, code, sizeof code);
  }
  return st;
}

mlflow_status mlflow_parse_json_object(const char *what, const char *body,
                                       size_t len, cJSON **out,
                                       mlflow_error *err) {
  *out = NULL;
  size_t i = 0;
  while (body && i < len && isspace((unsigned char)body[i])) i++;
  if (!body || i == len)
    return mlflow_fail(err, MLFLOW_E_PROTOCOL,
                       "%s: the server's answer is empty (MLflow always sends "
                       "a JSON object; was the connection cut?)", what);
  cJSON *j = cJSON_ParseWithLength(body, len);
  if (!j || !cJSON_IsObject(j)) {
    char start[80];
    copy_text(start, sizeof start, body, len > 60 ? 60 : len);
    cJSON_Delete(j);
    return mlflow_fail(err, MLFLOW_E_PROTOCOL,
                       "%s: the server's answer is not a JSON object "
                       "(starts with \"%s\")", what, start);
  }
  *out = j;
  return MLFLOW_OK;
}

const char *mlflow_json_str(const cJSON *obj, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

int mlflow_json_get_int64(const cJSON *obj, const char *key, int64_t *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (cJSON_IsNumber(v)) {
    double d = v->valuedouble;
    if (!isfinite(d) || d < -9.2e18 || d > 9.2e18 || d != floor(d)) return -1;
    *out = (int64_t)d;
    return 0;
  }
  if (cJSON_IsString(v)) {
    const char *s = v->valuestring;
    if (!*s) return -1;
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (errno || *end) return -1;
    *out = (int64_t)x;
    return 0;
  }
  return -1;
}

int mlflow_json_get_double(const cJSON *obj, const char *key, double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
  if (cJSON_IsNumber(v)) {
    *out = v->valuedouble;
    return 0;
  }
  if (cJSON_IsString(v)) {
    const char *s = v->valuestring;
    if (!strcmp(s, "NaN")) *out = NAN;
    else if (!strcmp(s, "Infinity")) *out = INFINITY;
    else if (!strcmp(s, "-Infinity")) *out = -INFINITY;
    else {
      char *end;
      errno = 0;
      double d = strtod(s, &end);
      if (!*s || *end || errno) return -1;
      *out = d;
    }
    return 0;
  }
  return -1;
}

/* Duplicates an optional string field into *dst; -1 only on ENOMEM. */
static int dup_opt(const cJSON *j, const char *key, char **dst) {
  const char *s = mlflow_json_str(j, key);
  *dst = NULL;
  if (!s) return 0;
  *dst = strdup(s);
  return *dst ? 0 : -1;
}

static mlflow_status missing(mlflow_error *err, const char *obj,
                             const char *field) {
  return mlflow_fail(err, MLFLOW_E_PROTOCOL,
                     "the server's %s has no valid '%s'", obj, field);
}

mlflow_status mlflow_parse_experiment(const cJSON *j, mlflow_experiment *out,
                                      mlflow_error *err) {
  memset(out, 0, sizeof *out);
  if (!cJSON_IsObject(j)) return missing(err, "answer", "experiment");
  if (!mlflow_json_str(j, "experiment_id"))
    return missing(err, "experiment", "experiment_id");
  if (dup_opt(j, "experiment_id", &out->experiment_id) ||
      dup_opt(j, "name", &out->name) ||
      dup_opt(j, "artifact_location", &out->artifact_location) ||
      dup_opt(j, "lifecycle_stage", &out->lifecycle_stage)) {
    mlflow_experiment_free(out);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  return MLFLOW_OK;
}

mlflow_run_status mlflow_run_status_parse(const char *s) {
  if (!s) return 0;
  for (int v = MLFLOW_RUN_RUNNING; v <= MLFLOW_RUN_KILLED; v++)
    if (!strcmp(s, mlflow_run_status_name((mlflow_run_status)v)))
      return (mlflow_run_status)v;
  return 0;
}

mlflow_status mlflow_parse_run_info(const cJSON *j, mlflow_run_info *out,
                                    mlflow_error *err) {
  memset(out, 0, sizeof *out);
  if (!cJSON_IsObject(j)) return missing(err, "run", "info");
  const char *id = mlflow_json_str(j, "run_id");
  if (!id) id = mlflow_json_str(j, "run_uuid");
  if (!id || !*id) return missing(err, "run info", "run_id");
  out->run_id = strdup(id);
  if (!out->run_id || dup_opt(j, "experiment_id", &out->experiment_id) ||
      dup_opt(j, "run_name", &out->run_name) ||
      dup_opt(j, "user_id", &out->user_id) ||
      dup_opt(j, "artifact_uri", &out->artifact_uri) ||
      dup_opt(j, "lifecycle_stage", &out->lifecycle_stage)) {
    mlflow_run_info_free(out);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  out->status = mlflow_run_status_parse(mlflow_json_str(j, "status"));
  int64_t t;
  if (mlflow_json_get_int64(j, "start_time", &t) == 0) out->start_time_ms = t;
  if (mlflow_json_get_int64(j, "end_time", &t) == 0) out->end_time_ms = t;
  return MLFLOW_OK;
}

/* Parses an array of {key, value} into a malloc'd mlflow_kv array with
 * owned strings. Entries without a string key are skipped. */
static mlflow_status parse_kv_array(const cJSON *arr, mlflow_kv **items,
                                    size_t *count, mlflow_error *err) {
  *items = NULL;
  *count = 0;
  if (!arr) return MLFLOW_OK;
  if (!cJSON_IsArray(arr)) return missing(err, "run data", "params/tags");
  int n = cJSON_GetArraySize(arr);
  if (n == 0) return MLFLOW_OK;
  mlflow_kv *kv = calloc((size_t)n, sizeof *kv);
  if (!kv) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  size_t k = 0;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    const char *key = mlflow_json_str(e, "key");
    const char *val = mlflow_json_str(e, "value");
    if (!key) continue;
    kv[k].key = strdup(key);
    kv[k].value = strdup(val ? val : "");
    if (!kv[k].key || !kv[k].value) {
      free((char *)kv[k].key);
      free((char *)kv[k].value);
      for (size_t i = 0; i < k; i++) {
        free((char *)kv[i].key);
        free((char *)kv[i].value);
      }
      free(kv);
      return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    }
    k++;
  }
  *items = kv;
  *count = k;
  return MLFLOW_OK;
}

/* Appends the metric objects of arr to (items, count). Entries without a
 * key or a usable value are a protocol error. */
static mlflow_status parse_metric_array(const cJSON *arr, mlflow_metric **items,
                                        size_t *count, mlflow_error *err) {
  if (!arr) return MLFLOW_OK;
  if (!cJSON_IsArray(arr)) return missing(err, "answer", "metrics");
  size_t n = (size_t)cJSON_GetArraySize(arr);
  if (n == 0) return MLFLOW_OK;
  mlflow_metric *m = realloc(*items, (*count + n) * sizeof *m);
  if (!m) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  *items = m;
  const cJSON *e;
  cJSON_ArrayForEach(e, arr) {
    const char *key = mlflow_json_str(e, "key");
    mlflow_metric p = {0};
    if (!key || mlflow_json_get_double(e, "value", &p.value) != 0)
      return missing(err, "metric", "key/value");
    if (mlflow_json_get_int64(e, "timestamp", &p.timestamp_ms) != 0)
      p.timestamp_ms = 0;
    if (mlflow_json_get_int64(e, "step", &p.step) != 0) p.step = 0;
    p.key = strdup(key);
    if (!p.key) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    m[(*count)++] = p;
  }
  return MLFLOW_OK;
}

mlflow_status mlflow_parse_run(const cJSON *j, mlflow_run *out,
                               mlflow_error *err) {
  memset(out, 0, sizeof *out);
  if (!cJSON_IsObject(j)) return missing(err, "answer", "run");
  mlflow_status st =
      mlflow_parse_run_info(cJSON_GetObjectItemCaseSensitive(j, "info"),
                            &out->info, err);
  if (st) return st;
  const cJSON *data = cJSON_GetObjectItemCaseSensitive(j, "data");
  if (data && !cJSON_IsObject(data)) {
    mlflow_run_free(out);
    return missing(err, "run", "data");
  }
  if (data) {
    if ((st = parse_metric_array(cJSON_GetObjectItemCaseSensitive(data, "metrics"),
                                 &out->metrics, &out->n_metrics, err)) ||
        (st = parse_kv_array(cJSON_GetObjectItemCaseSensitive(data, "params"),
                             &out->params, &out->n_params, err)) ||
        (st = parse_kv_array(cJSON_GetObjectItemCaseSensitive(data, "tags"),
                             &out->tags, &out->n_tags, err))) {
      mlflow_run_free(out);
      return st;
    }
  }
  return MLFLOW_OK;
}

mlflow_status mlflow_parse_run_list(const cJSON *j, mlflow_run_list *out,
                                    mlflow_error *err) {
  memset(out, 0, sizeof *out);
  const cJSON *runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
  if (runs && !cJSON_IsArray(runs)) return missing(err, "search answer", "runs");
  size_t n = runs ? (size_t)cJSON_GetArraySize(runs) : 0;
  if (n) {
    out->runs = calloc(n, sizeof *out->runs);
    if (!out->runs) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  const cJSON *e;
  cJSON_ArrayForEach(e, runs) {
    mlflow_status st = mlflow_parse_run(e, &out->runs[out->count], err);
    if (st) {
      mlflow_run_list_free(out);
      return st;
    }
    out->count++;
  }
  const char *tok = mlflow_json_str(j, "next_page_token");
  if (tok && *tok && !(out->next_page_token = strdup(tok))) {
    mlflow_run_list_free(out);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  return MLFLOW_OK;
}

mlflow_status mlflow_parse_metric_page(const cJSON *j, mlflow_metric_list *out,
                                       mlflow_error *err) {
  return parse_metric_array(cJSON_GetObjectItemCaseSensitive(j, "metrics"),
                            &out->items, &out->count, err);
}

mlflow_status mlflow_parse_model_version(const cJSON *j,
                                         mlflow_model_version *out,
                                         mlflow_error *err) {
  memset(out, 0, sizeof *out);
  if (!cJSON_IsObject(j)) return missing(err, "answer", "model_version");
  const char *name = mlflow_json_str(j, "name");
  const char *version = mlflow_json_str(j, "version");
  int64_t vnum;
  char vbuf[32];
  if (!version && mlflow_json_get_int64(j, "version", &vnum) == 0) {
    int n = snprintf(vbuf, sizeof vbuf, "%" PRId64, vnum); /* <= 20 chars */
    assert(n >= 0 && (size_t)n < sizeof vbuf);
    (void)n;
    version = vbuf;
  }
  if (!name || !version) return missing(err, "model version", "name/version");
  out->name = strdup(name);
  out->version = strdup(version);
  if (!out->name || !out->version || dup_opt(j, "source", &out->source) ||
      dup_opt(j, "run_id", &out->run_id) ||
      dup_opt(j, "status", &out->status) ||
      dup_opt(j, "status_message", &out->status_message))
    goto nomem;
  int64_t t;
  if (mlflow_json_get_int64(j, "creation_timestamp", &t) == 0)
    out->creation_time_ms = t;
  const cJSON *al = cJSON_GetObjectItemCaseSensitive(j, "aliases");
  if (cJSON_IsArray(al) && cJSON_GetArraySize(al) > 0) {
    out->aliases = calloc((size_t)cJSON_GetArraySize(al), sizeof(char *));
    if (!out->aliases) goto nomem;
    const cJSON *e;
    cJSON_ArrayForEach(e, al) {
      if (!cJSON_IsString(e)) continue;
      if (!(out->aliases[out->n_aliases] = strdup(e->valuestring))) goto nomem;
      out->n_aliases++;
    }
  }
  return MLFLOW_OK;
nomem:
  mlflow_model_version_free(out);
  return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
}

mlflow_status mlflow_parse_file_list(const cJSON *j, const char *prefix,
                                     mlflow_file_list *out, mlflow_error *err) {
  const cJSON *files = cJSON_GetObjectItemCaseSensitive(j, "files");
  if (!files) return MLFLOW_OK; /* an empty directory lists as {} */
  if (!cJSON_IsArray(files)) return missing(err, "artifact listing", "files");
  size_t n = (size_t)cJSON_GetArraySize(files);
  if (!n) return MLFLOW_OK;
  mlflow_file_info *items = realloc(out->items, (out->count + n) * sizeof *items);
  if (!items) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  out->items = items;
  const cJSON *e;
  cJSON_ArrayForEach(e, files) {
    const char *path = mlflow_json_str(e, "path");
    if (!path) return missing(err, "artifact listing entry", "path");
    /* The server sends base names: anything else (a '/', "..", an
     * absolute path) is refused, never rewritten into something safe. */
    const char *base = path;
    if (!mlflow_path_is_safe(base) || strchr(base, '/'))
      return mlflow_fail(err, MLFLOW_E_UNSAFE_PATH,
                         "the server listed an unsafe artifact name '%.200s'",
                         path);
    mlflow_file_info fi = {0};
    const cJSON *isdir = cJSON_GetObjectItemCaseSensitive(e, "is_dir");
    fi.is_dir = cJSON_IsTrue(isdir);
    if (fi.is_dir || mlflow_json_get_int64(e, "file_size", &fi.file_size) != 0)
      fi.file_size = -1;
    size_t pl = strlen(prefix), bl = strlen(base);
    fi.path = malloc(pl + bl + 1);
    if (!fi.path) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    memcpy(fi.path, prefix, pl);
    memcpy(fi.path + pl, base, bl + 1);
    out->items[out->count++] = fi;
  }
  return MLFLOW_OK;
}
