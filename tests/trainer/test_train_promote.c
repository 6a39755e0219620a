/* test_train_promote.c - ganflow-train --promote-if-better against the
 * `mlflow` fixture on Fashion-MNIST: three short mlp runs registering
 * versions 1, 2 and 3 of one model.
 *   1. --promote-if-better production: no holder, so version 1 gets
 *      @production; tag ganflow.promotion "promoted: ...".
 *   2. the same gate (swd/avg, min) with another seed: the alias moves to 2
 *      exactly when run 2's last swd/avg is lower than run 1's, and the tag
 *      says which.
 *   3. production:no/such: the candidate has no such metric, so it is
 *      refused; the run still exits 0 and ends FINISHED, the alias stays,
 *      the tag says "refused: ..." with the reason.
 * Every run also carries --alias candidate, which is set unconditionally. */
#include <fcntl.h>
#include <math.h>
#include <sys/wait.h>

#include "check.h"
#include "fashion.h"
#include "proc_util.h"
#include "mlflow_test.h"


static char g_model[128], g_exp[128];

/* One short run with seed and gate spec; its run id into run_id (33). */
static void train(const char *seed, const char *gate, const char *name,
                  char run_id[33]) {
  char dir[1024], log[1100];
  snprintf(dir, sizeof dir, "%s/%s", GF_TEST_TMP, name);
  snprintf(log, sizeof log, "%s/%s.log", GF_TEST_TMP, name);
  char *args[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                  "--steps", "20", "--batch", "32", "--seed", (char *)seed,
                  "--sample-every", "0", "--eval-every", "20",
                  "--eval-images", "256", "--checkpoint-every", "0",
                  "--threads", "2", "--checkpoint-dir", dir,
                  "--experiment", g_exp, "--register-model", g_model,
                  "--alias", "candidate", "--promote-if-better", (char *)gate,
                  NULL};
  int rc = tu_run_log(log, args, NULL, NULL);
  CHECK_INT_EQ(rc, 0);
  char *text = test_read_text(log);
  fprintf(stderr, "---- %s (exit %d) ----\n%s\n", name, rc,
              text ? text : "(no log)");
  free(text);
  test_run_id_file(dir, run_id, 33);
}

/* The run's status must be FINISHED; returns its ganflow.promotion tag
 * (malloc'd, "" when absent) and its last swd/avg in *swd (NaN if none). */
static char *run_result(mlflow_client *c, const char *run_id, double *swd) {
  mlflow_run run;
  mlflow_error e;
  REQUIRE(mlflow_run_get(c, run_id, &run, &e) == MLFLOW_OK);
  CHECK(run.info.status == MLFLOW_RUN_FINISHED);
  *swd = NAN;
  for (size_t i = 0; i < run.n_metrics; i++)
    if (!strcmp(run.metrics[i].key, "swd/avg")) *swd = run.metrics[i].value;
  const char *tag = mlflow_run_tag(&run, "ganflow.promotion");
  char *out = strdup(tag ? tag : "");
  mlflow_run_free(&run);
  return out;
}

static char *alias_version(mlflow_client *c, const char *alias) {
  mlflow_model_version mv;
  mlflow_error e;
  REQUIRE(mlflow_alias_get(c, g_model, alias, &mv, &e) == MLFLOW_OK);
  char *v = strdup(mv.version);
  mlflow_model_version_free(&mv);
  return v;
}

int main(void) {
  if (!tu_have_fashion()) return 1;
  char *uri = test_mlflow_uri();
  test_tracking_env(uri);
  tu_fresh_dir(GF_TEST_TMP);
  test_unique(g_exp, sizeof g_exp, "train-promote");
  test_unique(g_model, sizeof g_model, "train-promote-model");
  mlflow_client *c = test_client_of(uri);
  free(uri);

  char r1[33], r2[33], r3[33];
  double s1, s2, s3;
  /* 1. no holder: promoted */
  train("1", "production", "run1", r1);
  char *tag = run_result(c, r1, &s1);
  CHECK(isfinite(s1));
  CHECKF(!strncmp(tag, "promoted: ", 10) && strstr(tag, "no version holds "
         "alias production"), "tag: %s", tag);
  free(tag);
  char *v = alias_version(c, "production");
  CHECK_STR_EQ(v, "1");
  free(v);

  /* 2. gated on swd/avg (min) */
  train("2", "production", "run2", r2);
  tag = run_result(c, r2, &s2);
  CHECK(isfinite(s2));
  fprintf(stderr, "swd/avg: run 1 %.10g, run 2 %.10g\n", s1, s2);
  v = alias_version(c, "production");
  if (s2 < s1) {
    CHECK_STR_EQ(v, "2");
    CHECKF(!strncmp(tag, "promoted: ", 10) && strstr(tag, "better, alias "
           "production -> 2"), "tag: %s", tag);
  } else {
    CHECK_STR_EQ(v, "1");
    CHECKF(!strncmp(tag, "refused: ", 9), "tag: %s", tag);
  }
  CHECKF(strstr(tag, r1) && strstr(tag, r2), "tag names both runs: %s", tag);
  char *holder = v;
  free(tag);
  v = alias_version(c, "candidate");
  CHECK_STR_EQ(v, "2");
  free(v);

  /* 3. a metric the run lacks: refused, the run still FINISHED */
  train("3", "production:no/such", "run3", r3);
  tag = run_result(c, r3, &s3);
  CHECKF(!strncmp(tag, "refused: ", 9) && strstr(tag, "has no value"),
         "tag: %s", tag);
  free(tag);
  v = alias_version(c, "production");
  CHECK_STR_EQ(v, holder);
  free(v);
  free(holder);
  v = alias_version(c, "candidate");
  CHECK_STR_EQ(v, "3");
  free(v);

  mlflow_error e;
  mlflow_registered_model_delete(c, g_model, &e);
  test_drop_artifacts(c, g_exp);
  mlflow_client_free(c);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
