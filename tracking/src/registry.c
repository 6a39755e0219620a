/* registry.c - registered models, versions, aliases, models:/ URIs. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "parse.h"

mlflow_status mlflow_registered_model_create(mlflow_client *c,
                                             const char *name,
                                             mlflow_error *err) {
  mlflow_status st = mlflow_need(name, "model name", err);
  if (st) return st;
  mlflow_error e2 = {0};
  st = mlflow_api_fields(c, "POST", "registered-models/create", NULL, &e2,
                         "name", name, NULL);
  if (st == MLFLOW_E_HTTP && !strcmp(e2.error_code, "RESOURCE_ALREADY_EXISTS"))
    return MLFLOW_OK;
  if (st && err) *err = e2;
  return st;
}

mlflow_status mlflow_registered_model_delete(mlflow_client *c,
                                             const char *name,
                                             mlflow_error *err) {
  mlflow_status st = mlflow_need(name, "model name", err);
  if (st) return st;
  return mlflow_api_fields(c, "DELETE", "registered-models/delete", NULL, err,
                           "name", name, NULL);
}

static mlflow_status version_from_answer(cJSON *ans, mlflow_model_version *out,
                                         mlflow_error *err) {
  mlflow_status st = mlflow_parse_model_version(
      cJSON_GetObjectItemCaseSensitive(ans, "model_version"), out, err);
  cJSON_Delete(ans);
  return st;
}

mlflow_status mlflow_model_version_create(mlflow_client *c, const char *name,
                                          const char *source,
                                          const char *run_id,
                                          mlflow_model_version *out,
                                          mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st;
  if ((st = mlflow_need(name, "model name", err)) || (st = mlflow_need(source, "source", err)))
    return st;
  cJSON *ans;
  st = mlflow_api_fields(c, "POST", "model-versions/create", &ans, err, "name",
                         name, "source", source, "run_id", run_id, NULL);
  return st ? st : version_from_answer(ans, out, err);
}

mlflow_status mlflow_model_version_get(mlflow_client *c, const char *name,
                                       const char *version,
                                       mlflow_model_version *out,
                                       mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st;
  if ((st = mlflow_need(name, "model name", err)) ||
      (st = mlflow_need(version, "model version", err)))
    return st;
  cJSON *ans;
  st = mlflow_api_fields(c, "GET", "model-versions/get", &ans, err, "name",
                         name, "version", version, NULL);
  return st ? st : version_from_answer(ans, out, err);
}

mlflow_status mlflow_model_version_wait_ready(mlflow_client *c,
                                              const char *name,
                                              const char *version,
                                              double timeout_s,
                                              mlflow_model_version *out,
                                              mlflow_error *err) {
  int64_t deadline = mlflow_now_ms() + (int64_t)(timeout_s * 1000);
  double wait = 0.1;
  for (;;) {
    mlflow_model_version mv;
    mlflow_status st = mlflow_model_version_get(c, name, version, &mv, err);
    if (st) return st;
    const char *s = mv.status ? mv.status : "";
    if (!strcmp(s, "READY")) {
      if (out) *out = mv;
      else mlflow_model_version_free(&mv);
      return MLFLOW_OK;
    }
    if (!strcmp(s, "FAILED_REGISTRATION")) {
      st = mlflow_fail(err, MLFLOW_E_STATE,
                       "model %s version %s failed registration: %s", name,
                       version, mv.status_message ? mv.status_message : "");
      mlflow_model_version_free(&mv);
      return st;
    }
    mlflow_model_version_free(&mv);
    if (mlflow_now_ms() >= deadline)
      return mlflow_fail(err, MLFLOW_E_TIMEOUT,
                         "model %s version %s not READY after %.0f s (status "
                         "%s)", name, version, timeout_s, s[0] ? "pending" : "?");
    mlflow_sleep(wait);
    if (wait < 2.0) wait *= 2;
  }
}

mlflow_status mlflow_model_versions_search(mlflow_client *c, const char *name,
                                           mlflow_model_version_list *out,
                                           mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st = MLFLOW_OK;
  if (name && strchr(name, '\''))
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "model name '%s' contains a quote", name);
  mlflow_buf filter = {0};
  char *token = NULL;
  if (name && mlflow_buf_appendf(&filter, "name='%s'", name))
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  for (;;) {
    cJSON *ans = NULL;
    st = mlflow_api_fields(c, "GET", "model-versions/search", &ans, err,
                           "filter", name ? filter.data : NULL,
                           "max_results", "1000",
                           "order_by", "version_number DESC", "page_token",
                           token, NULL);
    free(token);
    token = NULL;
    if (st) break;
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(ans, "model_versions");
    size_t n = cJSON_IsArray(arr) ? (size_t)cJSON_GetArraySize(arr) : 0;
    if (n) {
      mlflow_model_version *items =
          realloc(out->items, (out->count + n) * sizeof *items);
      if (!items) st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
      else out->items = items;
      const cJSON *e;
      cJSON_ArrayForEach(e, arr) {
        if (st) break;
        st = mlflow_parse_model_version(e, &out->items[out->count], err);
        if (!st) out->count++;
      }
    }
    const char *tok = mlflow_json_str(ans, "next_page_token");
    if (!st && tok && *tok && !(token = strdup(tok)))
      st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    cJSON_Delete(ans);
    if (st || !token) break;
  }
  free(token);
  mlflow_buf_free(&filter);
  if (st) mlflow_model_version_list_free(out);
  return st;
}

int mlflow_alias_is_valid(const char *alias) {
  if (!alias || !*alias || strlen(alias) > 255) return 0;
  for (const char *p = alias; *p; p++)
    if (!isalnum((unsigned char)*p) && *p != '_' && *p != '-') return 0;
  if (!strcasecmp(alias, "latest")) return 0;
  if ((alias[0] == 'v' || alias[0] == 'V') && alias[1]) {
    const char *p = alias + 1;
    while (isdigit((unsigned char)*p)) p++;
    if (!*p) return 0;
  }
  return 1;
}

mlflow_status mlflow_alias_set(mlflow_client *c, const char *name,
                               const char *alias, const char *version,
                               mlflow_error *err) {
  mlflow_status st;
  if ((st = mlflow_need(name, "model name", err)) ||
      (st = mlflow_need(version, "model version", err)))
    return st;
  if (!mlflow_alias_is_valid(alias))
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "alias '%s': use letters, digits, _ and -; 'latest' "
                       "and v<number> are reserved", alias ? alias : "");
  return mlflow_api_fields(c, "POST", "registered-models/alias", NULL, err,
                           "name", name, "alias", alias, "version", version,
                           NULL);
}

mlflow_status mlflow_alias_get(mlflow_client *c, const char *name,
                               const char *alias, mlflow_model_version *out,
                               mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_status st;
  if ((st = mlflow_need(name, "model name", err)) || (st = mlflow_need(alias, "alias", err)))
    return st;
  cJSON *ans;
  st = mlflow_api_fields(c, "GET", "registered-models/alias", &ans, err, "name",
                         name, "alias", alias, NULL);
  /* A missing alias is 400 INVALID_PARAMETER_VALUE on the server. */
  if (st == MLFLOW_E_HTTP && err && err->http_status == 400 &&
      !strcmp(err->error_code, "INVALID_PARAMETER_VALUE") &&
      strstr(err->message, "alias")) {
    err->status = MLFLOW_E_NOT_FOUND;
    return MLFLOW_E_NOT_FOUND;
  }
  return st ? st : version_from_answer(ans, out, err);
}

mlflow_status mlflow_alias_delete(mlflow_client *c, const char *name,
                                  const char *alias, mlflow_error *err) {
  mlflow_status st;
  if ((st = mlflow_need(name, "model name", err)) || (st = mlflow_need(alias, "alias", err)))
    return st;
  return mlflow_api_fields(c, "DELETE", "registered-models/alias", NULL, err,
                           "name", name, "alias", alias, NULL);
}

mlflow_status mlflow_model_version_download_uri(mlflow_client *c,
                                                const char *name,
                                                const char *version,
                                                char **uri_out,
                                                mlflow_error *err) {
  *uri_out = NULL;
  mlflow_status st;
  if ((st = mlflow_need(name, "model name", err)) ||
      (st = mlflow_need(version, "model version", err)))
    return st;
  cJSON *ans;
  st = mlflow_api_fields(c, "GET", "model-versions/get-download-uri", &ans, err,
                         "name", name, "version", version, NULL);
  if (st) return st;
  const char *u = mlflow_json_str(ans, "artifact_uri");
  if (!u || !*u)
    st = mlflow_fail(err, MLFLOW_E_PROTOCOL,
                     "get-download-uri: no artifact_uri in the answer");
  else if (!(*uri_out = strdup(u)))
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  cJSON_Delete(ans);
  return st;
}

mlflow_status mlflow_model_uri_parse(const char *uri, mlflow_model_uri *out,
                                     mlflow_error *err) {
  memset(out, 0, sizeof *out);
  static const char scheme[] = "models:/";
  if (!uri || strncmp(uri, scheme, sizeof scheme - 1) != 0)
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "model URI '%.300s': expected models:/NAME/VERSION or "
                       "models:/NAME@ALIAS", uri ? uri : "");
  const char *p = uri + sizeof scheme - 1;
  size_t len = strlen(p);
  if (len == 0 || len > 1024)
    return mlflow_fail(err, MLFLOW_E_INVALID, "model URI '%.300s': bad length",
                       uri);
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
      return mlflow_fail(err, MLFLOW_E_INVALID,
                         "model URI has a control character");
  const char *at = strrchr(p, '@');
  const char *slash = strrchr(p, '/');
  if (at && (!slash || at > slash)) {
    /* models:/NAME@ALIAS (NAME has no '/') */
    if (slash || at == p || !mlflow_alias_is_valid(at + 1))
      return mlflow_fail(err, MLFLOW_E_INVALID,
                         "model URI '%.300s': bad name or alias", uri);
    out->name = strndup(p, (size_t)(at - p));
    out->alias = strdup(at + 1);
    if (!out->name || !out->alias) goto nomem;
    return MLFLOW_OK;
  }
  if (!slash || slash == p || strchr(p, '/') != slash || !slash[1])
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "model URI '%.300s': expected models:/NAME/VERSION or "
                       "models:/NAME@ALIAS", uri);
  const char *v = slash + 1;
  if (!strcmp(v, "latest")) {
    out->latest = 1;
  } else {
    for (const char *q = v; *q; q++)
      if (!isdigit((unsigned char)*q) || strlen(v) > 18)
        return mlflow_fail(err, MLFLOW_E_INVALID,
                           "model URI '%.300s': version must be a number or "
                           "'latest'", uri);
    if (!(out->version = strdup(v))) goto nomem;
  }
  if (!(out->name = strndup(p, (size_t)(slash - p)))) goto nomem;
  return MLFLOW_OK;
nomem:
  mlflow_model_uri_free(out);
  return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
}

mlflow_status mlflow_model_resolve(mlflow_client *c, const char *uri,
                                   mlflow_model_version *out,
                                   mlflow_error *err) {
  memset(out, 0, sizeof *out);
  mlflow_model_uri u;
  mlflow_status st = mlflow_model_uri_parse(uri, &u, err);
  if (st) return st;
  if (u.alias) {
    st = mlflow_alias_get(c, u.name, u.alias, out, err);
  } else if (u.version) {
    st = mlflow_model_version_get(c, u.name, u.version, out, err);
  } else {
    mlflow_model_version_list l;
    st = mlflow_model_versions_search(c, u.name, &l, err);
    if (st == MLFLOW_OK) {
      size_t best = l.count;
      for (size_t i = 0; i < l.count; i++)
        if (best == l.count || strtoll(l.items[i].version, NULL, 10) >
                                   strtoll(l.items[best].version, NULL, 10))
          best = i;
      if (best == l.count) {
        st = mlflow_fail(err, MLFLOW_E_NOT_FOUND,
                         "registered model '%s' has no versions", u.name);
      } else {
        *out = l.items[best];
        memset(&l.items[best], 0, sizeof l.items[best]);
      }
      mlflow_model_version_list_free(&l);
    }
  }
  mlflow_model_uri_free(&u);
  return st;
}

mlflow_status mlflow_model_download(mlflow_client *c, const char *uri,
                                    const char *dest_dir,
                                    mlflow_model_version *out,
                                    mlflow_error *err) {
  if (out) memset(out, 0, sizeof *out);
  struct stat sb;
  if (lstat(dest_dir, &sb) == 0)
    return mlflow_fail(err, MLFLOW_E_IO, "%s already exists", dest_dir);
  mlflow_model_version mv;
  mlflow_status st = mlflow_model_resolve(c, uri, &mv, err);
  if (st) return st;
  char *src = NULL;
  mlflow_buf tmp = {0};
  if (mv.status && strcmp(mv.status, "READY")) {
    st = mlflow_fail(err, MLFLOW_E_STATE, "model %s version %s is %s, not READY",
                     mv.name, mv.version, mv.status);
    goto done;
  }
  if ((st = mlflow_model_version_download_uri(c, mv.name, mv.version, &src, err)))
    goto done;
  if (mlflow_buf_appendf(&tmp, "%s.tmp-XXXXXX", dest_dir)) {
    st = mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
    goto done;
  }
  if (!mkdtemp(tmp.data)) {
    st = mlflow_fail(err, MLFLOW_E_IO, "cannot create %s: %s", tmp.data,
                     strerror(errno));
    goto done;
  }
  st = mlflow_artifact_download_dir(c, src, NULL, tmp.data, err);
  if (st == MLFLOW_OK && rename(tmp.data, dest_dir) != 0)
    st = mlflow_fail(err, MLFLOW_E_IO, "cannot rename %s to %s: %s", tmp.data,
                     dest_dir, strerror(errno));
done:
  if (st == MLFLOW_OK && out) {
    *out = mv;
  } else {
    mlflow_model_version_free(&mv);
  }
  if (st && tmp.data) mlflow_remove_tree(tmp.data);
  free(src);
  mlflow_buf_free(&tmp);
  return st;
}
