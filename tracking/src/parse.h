/* parse.h - turning server answers into library structs. Every function
 * here takes untrusted input (a hostile or broken server) and must fail
 * cleanly on anything; each has a fuzz target under tests/fuzz/. */
#ifndef MLFLOW_PARSE_H
#define MLFLOW_PARSE_H

#include <time.h>

#include "internal.h"

/* Seconds from a Retry-After value (delta-seconds or an HTTP date, relative
 * to now); -1 when unparseable or negative. */
double mlflow_parse_retry_after(const char *value, time_t now);

/* Fills err from a non-2xx answer (JSON {"error_code","message"}, or plain
 * text, or nothing) and returns the status it maps to: AUTH for 401/403,
 * NOT_FOUND for RESOURCE_DOES_NOT_EXIST or a bare 404, else HTTP. */
mlflow_status mlflow_error_from_answer(const char *what, long status,
                                       const char *content_type,
                                       const char *body, size_t len,
                                       mlflow_error *err);

/* Parses a 2xx body that must be a JSON object; an empty body is an error
 * (the server always sends at least "{}").
 * *out is owned by the caller (cJSON_Delete). */
mlflow_status mlflow_parse_json_object(const char *what, const char *body,
                                       size_t len, cJSON **out,
                                       mlflow_error *err);

/* Field access that tolerates the protobuf-JSON variants: int64 as a number
 * or a decimal string; doubles as numbers or "NaN"/"Infinity"/"-Infinity". */
const char *mlflow_json_str(const cJSON *obj, const char *key);
int mlflow_json_get_int64(const cJSON *obj, const char *key, int64_t *out);
int mlflow_json_get_double(const cJSON *obj, const char *key, double *out);

/* Each parse_* fills out (zeroed first) or returns MLFLOW_E_PROTOCOL with
 * the missing or malformed field named; out holds nothing on failure. */
mlflow_status mlflow_parse_experiment(const cJSON *j, mlflow_experiment *out,
                                      mlflow_error *err);
mlflow_status mlflow_parse_run_info(const cJSON *j, mlflow_run_info *out,
                                    mlflow_error *err);
mlflow_status mlflow_parse_run(const cJSON *j, mlflow_run *out,
                               mlflow_error *err);
/* runs/search answer {runs: [...], next_page_token}. */
mlflow_status mlflow_parse_run_list(const cJSON *j, mlflow_run_list *out,
                                    mlflow_error *err);
/* Appends the points of a get-history answer {metrics: [...]} to out. */
mlflow_status mlflow_parse_metric_page(const cJSON *j, mlflow_metric_list *out,
                                       mlflow_error *err);
mlflow_status mlflow_parse_model_version(const cJSON *j,
                                         mlflow_model_version *out,
                                         mlflow_error *err);
/* Appends the entries of an artifact listing {files: [{path, is_dir,
 * file_size}]} to out, each path prefixed by prefix ("" or "dir/").
 * A name that is not one safe path component is MLFLOW_E_UNSAFE_PATH. */
mlflow_status mlflow_parse_file_list(const cJSON *j, const char *prefix,
                                     mlflow_file_list *out, mlflow_error *err);

mlflow_run_status mlflow_run_status_parse(const char *s); /* 0 if unknown */

#endif
