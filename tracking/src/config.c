/* config.c - mlflow_config: defaults, the MLflow environment variables,
 * tracking URI validation. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

#define DEFAULT_TRACKING_URI "http://127.0.0.1:5000"

mlflow_status mlflow_config_init(mlflow_config *cfg, mlflow_error *err) {
  memset(cfg, 0, sizeof *cfg);
  cfg->max_retries = 7;
  cfg->backoff_factor = 2.0;
  cfg->backoff_jitter = 1.0;
  cfg->backoff_max_s = 120.0;
  cfg->timeout_s = 120.0;
  return mlflow_config_set_uri(cfg, DEFAULT_TRACKING_URI, err);
}

void mlflow_config_free(mlflow_config *cfg) {
  if (!cfg) return;
  free(cfg->tracking_uri);
  free(cfg->username);
  if (cfg->password) {
    /* volatile keeps the wipe from being optimized away */
    volatile char *p = cfg->password;
    while (*p) *p++ = 0;
  }
  free(cfg->password);
  free(cfg->token);
  free(cfg->server_cert_path);
  free(cfg->client_cert_path);
  memset(cfg, 0, sizeof *cfg);
}

mlflow_status mlflow_config_set_uri(mlflow_config *cfg, const char *uri,
                                    mlflow_error *err) {
  if (!uri || !*uri)
    return mlflow_fail(err, MLFLOW_E_INVALID, "empty tracking URI");
  mlflow_status st = mlflow_uri_check_length(uri, err);
  if (st) return st;
  char shown[MLFLOW_MAX_URI_LEN + 1]; /* as messages show it: no credentials */
  mlflow_uri_redact(uri, shown, sizeof shown); /* fits: checked above */
  if (strncasecmp(uri, "http://", 7) != 0 &&
      strncasecmp(uri, "https://", 8) != 0) {
    if (strncmp(uri, "file:", 5) == 0 || uri[0] == '/' || uri[0] == '.' ||
        strncmp(uri, "databricks", 10) == 0 || strstr(uri, "://"))
      return mlflow_fail(err, MLFLOW_E_UNSUPPORTED,
                         "tracking URI '%s': only http(s):// tracking servers "
                         "are supported (start one with "
                         "deploy/mlflow-local.sh start)", shown);
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "tracking URI '%s' is not an http(s):// URL", shown);
  }
  const char *host = strstr(uri, "://") + 3;
  if (!*host || *host == '/' || *host == ':')
    return mlflow_fail(err, MLFLOW_E_INVALID, "tracking URI '%s' has no host",
                       shown);
  for (const char *p = uri; *p; p++)
    if ((unsigned char)*p <= ' ' || *p == '?' || *p == '#')
      return mlflow_fail(err, MLFLOW_E_INVALID,
                         "tracking URI '%s' contains '%c' or a control "
                         "character or space", shown, *p > ' ' ? *p : '?');
  size_t n = strlen(uri);
  while (n > 0 && uri[n - 1] == '/') n--;
  char *copy = strndup(uri, n);
  if (!copy) return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  free(cfg->tracking_uri);
  cfg->tracking_uri = copy;
  return MLFLOW_OK;
}

static int dup_field(char **dst, const char *src) {
  *dst = NULL;
  if (!src) return 0;
  *dst = strdup(src);
  return *dst ? 0 : -1;
}

mlflow_status mlflow_config_copy(mlflow_config *dst, const mlflow_config *src,
                                 mlflow_error *err) {
  *dst = *src;
  if (dup_field(&dst->tracking_uri, src->tracking_uri) ||
      dup_field(&dst->username, src->username) ||
      dup_field(&dst->password, src->password) ||
      dup_field(&dst->token, src->token) ||
      dup_field(&dst->server_cert_path, src->server_cert_path) ||
      dup_field(&dst->client_cert_path, src->client_cert_path)) {
    mlflow_config_free(dst);
    return mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
  }
  return MLFLOW_OK;
}

static const char *env_nonempty(const char *name) {
  const char *v = getenv(name);
  return v && *v ? v : NULL;
}

static mlflow_status env_int(const char *name, int lo, int hi, int *out,
                             mlflow_error *err) {
  const char *v = env_nonempty(name);
  if (!v) return MLFLOW_OK;
  char *end;
  errno = 0;
  long x = strtol(v, &end, 10);
  if (errno || *end || x < lo || x > hi)
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "%s='%s': expected an integer from %d to %d", name, v,
                       lo, hi);
  *out = (int)x;
  return MLFLOW_OK;
}

static mlflow_status env_double(const char *name, double lo, double hi,
                                double *out, mlflow_error *err) {
  const char *v = env_nonempty(name);
  if (!v) return MLFLOW_OK;
  char *end;
  errno = 0;
  double x = strtod(v, &end);
  if (errno || *end || !isfinite(x) || x < lo || x > hi)
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "%s='%s': expected a number from %g to %g", name, v, lo,
                       hi);
  *out = x;
  return MLFLOW_OK;
}

static mlflow_status env_bool(const char *name, int *out, mlflow_error *err) {
  const char *v = env_nonempty(name);
  if (!v) return MLFLOW_OK;
  if (!strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes")) {
    *out = 1;
  } else if (!strcasecmp(v, "false") || !strcmp(v, "0") ||
             !strcasecmp(v, "no")) {
    *out = 0;
  } else {
    return mlflow_fail(err, MLFLOW_E_INVALID,
                       "%s='%s': expected true or false", name, v);
  }
  return MLFLOW_OK;
}

static mlflow_status env_str(const char *name, char **out, mlflow_error *err) {
  const char *v = env_nonempty(name);
  if (!v) return MLFLOW_OK;
  free(*out);
  *out = strdup(v);
  return *out ? MLFLOW_OK : mlflow_fail(err, MLFLOW_E_NOMEM, "out of memory");
}

mlflow_status mlflow_config_from_env(mlflow_config *cfg, mlflow_error *err) {
  mlflow_status st = mlflow_config_init(cfg, err);
  if (st) return st;
  const char *uri = env_nonempty("MLFLOW_TRACKING_URI");
  if (uri && (st = mlflow_config_set_uri(cfg, uri, err))) goto fail;
  if ((st = env_str("MLFLOW_TRACKING_USERNAME", &cfg->username, err)) ||
      (st = env_str("MLFLOW_TRACKING_PASSWORD", &cfg->password, err)) ||
      (st = env_str("MLFLOW_TRACKING_TOKEN", &cfg->token, err)) ||
      (st = env_str("MLFLOW_TRACKING_SERVER_CERT_PATH",
                    &cfg->server_cert_path, err)) ||
      (st = env_str("MLFLOW_TRACKING_CLIENT_CERT_PATH",
                    &cfg->client_cert_path, err)) ||
      (st = env_bool("MLFLOW_TRACKING_INSECURE_TLS", &cfg->insecure_tls,
                     err)) ||
      (st = env_int("MLFLOW_HTTP_REQUEST_MAX_RETRIES", 0,
                    MLFLOW_ENV_MAX_RETRIES_MAX, &cfg->max_retries, err)) ||
      (st = env_double("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", 0,
                       MLFLOW_ENV_BACKOFF_MAX_S, &cfg->backoff_factor, err)) ||
      (st = env_double("MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", 0,
                       MLFLOW_ENV_BACKOFF_MAX_S, &cfg->backoff_jitter, err)) ||
      (st = env_double("MLFLOW_HTTP_REQUEST_TIMEOUT", MLFLOW_ENV_TIMEOUT_MIN_S,
                       MLFLOW_ENV_TIMEOUT_MAX_S, &cfg->timeout_s, err)))
    goto fail;
  if (cfg->insecure_tls && cfg->server_cert_path) {
    st = mlflow_fail(err, MLFLOW_E_INVALID,
                     "MLFLOW_TRACKING_INSECURE_TLS and "
                     "MLFLOW_TRACKING_SERVER_CERT_PATH cannot both be set");
    goto fail;
  }
  return MLFLOW_OK;
fail:
  mlflow_config_free(cfg);
  return st;
}
