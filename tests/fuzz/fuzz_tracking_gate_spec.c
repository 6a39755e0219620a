/* fuzz_tracking_gate_spec.c - fuzz target for mlflow_gate_metric_parse,
 * the METRIC[:min|max] of `ganflow promote --if-better` and
 * `ganflow-train --promote-if-better` (command-line input). Any input gives
 * MLFLOW_E_INVALID with an empty metric and a NUL-terminated message, or a
 * metric that is a valid MLflow key, a prefix of the input, and a goal. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mlflow/mlflow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *spec = malloc(size + 1);
  if (!spec) return 0;
  memcpy(spec, data, size);
  spec[size] = '\0'; /* a NUL inside ends the argument, as in argv */
  char metric[256];
  mlflow_gate_goal goal = MLFLOW_GATE_MAX;
  mlflow_error err;
  memset(&err, 0, sizeof err);
  mlflow_status st = mlflow_gate_metric_parse(spec, metric, sizeof metric,
                                              &goal, &err);
  if (st != MLFLOW_OK) {
    if (st != MLFLOW_E_INVALID || metric[0] != '\0' ||
        !memchr(err.message, '\0', sizeof err.message))
      abort();
  } else {
    mlflow_error e2;
    size_t n = strlen(metric);
    if (!n || strncmp(spec, metric, n) != 0 ||
        mlflow_validate_key(metric, &e2) != MLFLOW_OK ||
        (goal != MLFLOW_GATE_MIN && goal != MLFLOW_GATE_MAX))
      abort();
  }
  free(spec);
  return 0;
}
