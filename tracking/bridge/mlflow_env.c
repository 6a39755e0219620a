/* mlflow_env.c - the MLflow client's numeric variables as an env table of
 * gf/flags.h rows; see gf/mlflow_env.h. */
#include "gf/mlflow_env.h"

#include <stddef.h>

#include "gf/parse.h"
#include "mlflow/client.h"

#define FIELD(f) GF_FLAG_FIELD(gf_mlflow_env, f)

static const gf_flag k_rows[] = {
  {.name = "MLFLOW_HTTP_REQUEST_MAX_RETRIES", .kind = GF_FLAG_INT,
   FIELD(max_retries), .lo = 0, .hi = MLFLOW_ENV_MAX_RETRIES_MAX, .def_i = 7,
   .help = "retries after the first try"},
  {.name = "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", .kind = GF_FLAG_F64,
   FIELD(backoff_factor), .flo = 0, .fhi = MLFLOW_ENV_BACKOFF_MAX_S,
   .def_f = 2, .help = "seconds; the n-th retry waits factor x 2^(n-1)"},
  {.name = "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER", .kind = GF_FLAG_F64,
   FIELD(backoff_jitter), .flo = 0, .fhi = MLFLOW_ENV_BACKOFF_MAX_S,
   .def_f = 1, .help = "plus up to this many seconds"},
  {.name = "MLFLOW_HTTP_REQUEST_TIMEOUT", .kind = GF_FLAG_F64,
   FIELD(timeout_s), .flo = MLFLOW_ENV_TIMEOUT_MIN_S,
   .fhi = MLFLOW_ENV_TIMEOUT_MAX_S, .def_f = 120,
   .help = "seconds a request may take"},
};

static const gf_flag_table k_table =
    GF_FLAG_TABLE(k_rows, NULL, 1, 40);

const gf_flag_table *gf_mlflow_env_table(void) { return &k_table; }

gf_status gf_mlflow_env_read(const char *(*get)(void *user, const char *name),
                             void *user, gf_mlflow_env *out, gf_err *err) {
  gf_mlflow_env v;
  gf_flags_defaults(&k_table, &v);
  GF_TRY(gf_flags_env(&k_table, &v, get, user, err));
  if (out) *out = v;
  return GF_OK;
}

gf_status gf_mlflow_env_check(const char *(*get)(void *user, const char *name),
                              void *user, gf_err *err) {
  return gf_mlflow_env_read(get, user, NULL, err);
}
