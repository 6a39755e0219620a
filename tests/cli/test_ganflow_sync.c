/* test_ganflow_sync.c - `ganflow sync PATH` against the real MLflow server:
 * an outbox written while the server was unreachable (a logger pointed at a
 * dead port) is sent by the command, every point arrives once, and the file
 * is removed; with the server unreachable the command fails (exit 1) and
 * keeps the file; usage errors exit 2. argv[1] is the ganflow binary. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "internal.h"
#include "mlflow_test.h"

static int run_cmd(const char *line) {
  int rc = system(line);
  return rc == -1 ? -1 : WEXITSTATUS(rc);
}

int main(int argc, char **argv) {
  REQUIRE(argc == 2);
  const char *ganflow = argv[1];
  char *uri = test_mlflow_uri();
  mlflow_config cfg;
  test_config(&cfg, uri);
  mlflow_error err;
  mlflow_client *c;
  REQUIRE(mlflow_client_new(&c, &cfg, &err) == MLFLOW_OK);
  mlflow_remove_tree(GF_TEST_TMP);
  REQUIRE(mlflow_mkdirs(GF_TEST_TMP, &err) == MLFLOW_OK);

  mlflow_experiment e;
  REQUIRE(mlflow_experiment_get_or_create(c, "ganflow-sync", &e, &err) == MLFLOW_OK);
  mlflow_run_info run;
  REQUIRE(mlflow_run_create(c, e.experiment_id, "sync", 0, NULL, 0, &run, &err) ==
          MLFLOW_OK);

  /* A logger that cannot reach its server leaves everything in the outbox. */
  char outbox[700];
  snprintf(outbox, sizeof outbox, "%s/mlflow.outbox", GF_TEST_TMP);
  mlflow_config dead;
  REQUIRE(mlflow_config_copy(&dead, &cfg, &err) == MLFLOW_OK);
  REQUIRE(mlflow_config_set_uri(&dead, "http://127.0.0.1:9", &err) == MLFLOW_OK);
  mlflow_logger_options o;
  mlflow_logger_options_init(&o);
  o.outbox_path = outbox;
  o.send_retries = 0;
  mlflow_logger *lg;
  REQUIRE(mlflow_logger_open(&lg, &dead, run.run_id, &o, &err) == MLFLOW_OK);
  int64_t t0 = mlflow_now_ms();
  for (int i = 0; i < 1500; i++) mlflow_logger_log_metric(lg, "loss/d", 0.5 * i, t0 + i, i);
  CHECK_INT_EQ(mlflow_logger_close(lg, 30, NULL, &err), MLFLOW_E_CONNECT);
  REQUIRE(access(outbox, F_OK) == 0);

  char line[2048];
  /* Server unreachable: exit 1, the file stays. */
  snprintf(line, sizeof line, "MLFLOW_TRACKING_URI=http://127.0.0.1:9 "
           "MLFLOW_HTTP_REQUEST_MAX_RETRIES=0 '%s' sync '%s'", ganflow, GF_TEST_TMP);
  CHECK_INT_EQ(run_cmd(line), 1);
  CHECK(access(outbox, F_OK) == 0);
  /* Usage errors. */
  snprintf(line, sizeof line, "'%s' sync 2>/dev/null", ganflow);
  CHECK_INT_EQ(run_cmd(line), 2);
  snprintf(line, sizeof line, "'%s' sync a b 2>/dev/null", ganflow);
  CHECK_INT_EQ(run_cmd(line), 2);
  /* The real server: sent, removed, each point once. */
  snprintf(line, sizeof line, "MLFLOW_TRACKING_URI='%s' '%s' sync '%s'", uri, ganflow,
           GF_TEST_TMP);
  CHECK_INT_EQ(run_cmd(line), 0);
  CHECK(access(outbox, F_OK) != 0);
  mlflow_metric_list h;
  CHECK_INT_EQ(mlflow_metric_history(c, run.run_id, "loss/d", &h, &err), MLFLOW_OK);
  CHECK_INT_EQ(h.count, 1500);
  int bad = 0;
  for (size_t i = 0; i < h.count; i++)
    bad += h.items[i].value != 0.5 * (double)h.items[i].step;
  CHECK_INT_EQ(bad, 0);
  mlflow_metric_list_free(&h);
  /* Nothing left: a second sync is a no-op. */
  CHECK_INT_EQ(run_cmd(line), 0);

  mlflow_config_free(&dead);
  mlflow_run_info_free(&run);
  mlflow_experiment_free(&e);
  mlflow_client_free(c);
  mlflow_config_free(&cfg);
  free(uri);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
