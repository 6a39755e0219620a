/* mlflow_env.h - the MLflow client's numeric environment variables
 * (MLFLOW_HTTP_REQUEST_MAX_RETRIES, _BACKOFF_FACTOR, _BACKOFF_JITTER,
 * _TIMEOUT) as a gf/flags.h env table, read through ganflow's one number
 * reader (gf/parse.h) with the client's ranges (mlflow/client.h). Every
 * ganflow program checks them while it reads its flags, so a bad value is
 * a usage error (exit 2) in the one wording, naming the variable, before
 * any work; mlflow_config_from_env, which the client keeps for programs
 * without gf_base, then reads values this check has passed. Part of the
 * bridge library (gf_mlflow_status): the client itself stays free of
 * ganflow. */
#ifndef GF_MLFLOW_ENV_H
#define GF_MLFLOW_ENV_H

#include "gf/flags.h"
#include "gf/status.h"

/* The values the table reads (the client's defaults where unset). */
typedef struct gf_mlflow_env {
  int max_retries;
  double backoff_factor, backoff_jitter, timeout_s;
} gf_mlflow_env;

/* The table (static): one row per variable. */
const gf_flag_table *gf_mlflow_env_table(void);

/* Reads the variables through get (get(user, name): the value or NULL; ""
 * counts as unset, as the client reads it) into *out (NULL: checked
 * only). GF_EINVAL naming the variable ("MLFLOW_HTTP_REQUEST_TIMEOUT: 'x'
 * is not a number"). */
gf_status gf_mlflow_env_read(const char *(*get)(void *user, const char *name),
                             void *user, gf_mlflow_env *out, gf_err *err);

/* gf_mlflow_env_read for checking only. */
gf_status gf_mlflow_env_check(const char *(*get)(void *user, const char *name),
                              void *user, gf_err *err);

#endif
