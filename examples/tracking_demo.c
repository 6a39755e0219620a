/* tracking_demo.c - the MLflow client library on its own: creates (or
 * reuses) an experiment, starts a run, logs params, tags and a metric
 * series through the async logger, uploads an artifact, and ends the run
 * FINISHED. Everything it logs shows in the MLflow UI.
 *
 *   MLFLOW_TRACKING_URI=http://127.0.0.1:5000 ./tracking_demo [EXPERIMENT]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mlflow/mlflow.h"

static int fail(const char *what, const mlflow_error *err) {
  fprintf(stderr, "tracking_demo: %s: %s\n", what, err->message);
  return 1;
}

int main(int argc, char **argv) {
  const char *exp_name = argc > 1 ? argv[1] : "ganflow-quickstart";
  mlflow_config cfg;
  mlflow_error err;
  if (mlflow_config_from_env(&cfg, &err)) return fail("configuration", &err);
  mlflow_client *c;
  if (mlflow_client_new(&c, &cfg, &err)) return fail("client", &err);

  mlflow_experiment e;
  if (mlflow_experiment_get_or_create(c, exp_name, &e, &err))
    return fail("experiment", &err);
  mlflow_kv tags[] = {{"mlflow.source.name", "examples/tracking_demo.c"}};
  mlflow_run_info run;
  if (mlflow_run_create(c, e.experiment_id, "tracking-demo", 0, tags, 1, &run, &err))
    return fail("run", &err);
  printf("run %s in experiment '%s' (%s)\n", run.run_id, exp_name, e.experiment_id);

  mlflow_kv params[] = {{"optimizer", "adam"}, {"lr", "0.0002"}, {"beta1", "0.5"}};
  if (mlflow_log_batch(c, run.run_id, NULL, 0, params, 3, NULL, 0, &err))
    return fail("params", &err);

  mlflow_logger *lg;
  if (mlflow_logger_open(&lg, &cfg, run.run_id, NULL, &err)) return fail("logger", &err);
  int64_t t0 = mlflow_now_ms();
  for (int step = 0; step < 500; step++) {
    double x = step / 50.0;
    mlflow_logger_log_metric(lg, "demo/decay", exp(-x), t0 + step, step);
    mlflow_logger_log_metric(lg, "demo/wave", sin(x) * exp(-x / 4), t0 + step, step);
  }
  mlflow_logger_stats st;
  if (mlflow_logger_close(lg, 60, &st, &err)) return fail("logger close", &err);
  printf("logged %llu metric points\n", (unsigned long long)st.sent);

  char path[] = "/tmp/ganflow-demo-XXXXXX";
  int fd = mkstemp(path);
  if (fd >= 0) {
    const char note[] = "Uploaded by examples/tracking_demo.c\n";
    if (write(fd, note, sizeof note - 1) < 0) perror("write");
    close(fd);
    if (mlflow_artifact_upload_file(c, run.artifact_uri, path,
                                    "notes/README.txt", &err))
      fprintf(stderr, "artifact upload failed: %s\n", err.message);
    unlink(path);
  }
  if (mlflow_run_update(c, run.run_id, MLFLOW_RUN_FINISHED, mlflow_now_ms(), &err))
    return fail("end run", &err);
  printf("see it at %s/#/experiments/%s/runs/%s\n", cfg.tracking_uri,
         e.experiment_id, run.run_id);
  mlflow_run_info_free(&run);
  mlflow_experiment_free(&e);
  mlflow_client_free(c);
  mlflow_config_free(&cfg);
  return 0;
}
