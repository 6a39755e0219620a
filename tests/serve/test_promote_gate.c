/* test_promote_gate.c - `ganflow promote ... --if-better METRIC[:min|max]`
 * (the promotion gate of mlflow/registry.h) against the `mlflow` fixture.
 * Runs with known swd/avg histories are made with the client, each
 * registered as a version of one model, then the CLI is run and the alias
 * read back: no holder (promotes), better (promotes), worse, equal and a
 * candidate without the metric (refused, exit 1, alias unchanged), :max
 * turning worse into better, a holder without the metric (promotes, says
 * so), the alias already there (exit 0), bad specs (exit 2). The value
 * compared is the last one of the run (a run whose first point is better
 * but last is worse loses). Also the spec parser and the library's result
 * fields. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "proc_util.h"
#include "mlflow_test.h"

static char g_uri[512];
static char g_log[600];

/* Runs argv (NULL-terminated) with stdout+stderr into g_log; exit status. */
static int run(char *const *argv) {
  return tu_run_log(g_log, argv, "MLFLOW_TRACKING_URI", g_uri);
}

static char *log_text(void) {
  FILE *f = fopen(g_log, "rb");
  REQUIRE(f);
  static char buf[16384];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

/* `ganflow promote model version --alias alias [--if-better spec]`: the exit
 * status; the output must hold `want` (NULL: anything). */
static int promote(const char *model, const char *version, const char *alias,
                   const char *spec, const char *want) {
  char *argv[] = {GF_CLI_BIN, "promote", (char *)model, (char *)version,
                  "--alias", (char *)alias, spec ? "--if-better" : NULL,
                  (char *)spec, NULL};
  int rc = run(argv);
  const char *text = log_text();
  fprintf(stderr, "promote %s %s --alias %s --if-better %s -> %d: %s",
          model, version, alias, spec ? spec : "-", rc, text);
  if (want) CHECKF(strstr(text, want), "wanted \"%s\" in:\n%s", want, text);
  return rc;
}

static void check_alias(mlflow_client *c, const char *model,
                        const char *alias, const char *version) {
  mlflow_model_version mv;
  mlflow_error e;
  REQUIRE(mlflow_alias_get(c, model, alias, &mv, &e) == MLFLOW_OK);
  CHECK_STR_EQ(mv.version, version);
  mlflow_model_version_free(&mv);
}

/* A run holding `metric` points (values[0..n), steps 0, 10, ...) and a READY
 * version of model made from it; run id into run_id (33 bytes). */
static void make_version(mlflow_client *c, const char *exp_id,
                         const char *model, const char *metric,
                         const double *values, int n, const char *want_version,
                         char run_id[33]) {
  mlflow_run_info info;
  mlflow_error e;
  REQUIRE(mlflow_run_create(c, exp_id, NULL, 1000, NULL, 0, &info, &e) ==
          MLFLOW_OK);
  for (int i = 0; i < n; i++)
    REQUIRE(mlflow_log_metric(c, info.run_id, metric, values[i], 1000 + i,
                              10 * i, &e) == MLFLOW_OK);
  REQUIRE(mlflow_log_metric(c, info.run_id, "loss/d", 0.5, 1000, 0, &e) ==
          MLFLOW_OK);
  char source[1024];
  snprintf(source, sizeof source, "%s/model", info.artifact_uri);
  mlflow_model_version mv;
  REQUIRE(mlflow_model_version_create(c, model, source, info.run_id, &mv,
                                      &e) == MLFLOW_OK);
  CHECK_STR_EQ(mv.version, want_version);
  REQUIRE(mlflow_model_version_wait_ready(c, model, mv.version, 60, NULL,
                                          &e) == MLFLOW_OK);
  snprintf(run_id, 33, "%s", info.run_id);
  mlflow_model_version_free(&mv);
  mlflow_run_info_free(&info);
}

static void check_spec_parser(void) {
  char m[256];
  mlflow_gate_goal g;
  mlflow_error e;
  CHECK(mlflow_gate_metric_parse("swd/avg", m, sizeof m, &g, &e) == MLFLOW_OK);
  CHECK_STR_EQ(m, "swd/avg");
  CHECK(g == MLFLOW_GATE_MIN);
  CHECK(mlflow_gate_metric_parse("acc:max", m, sizeof m, &g, &e) == MLFLOW_OK);
  CHECK_STR_EQ(m, "acc");
  CHECK(g == MLFLOW_GATE_MAX);
  CHECK(mlflow_gate_metric_parse("a:b:min", m, sizeof m, &g, &e) == MLFLOW_OK);
  CHECK_STR_EQ(m, "a:b");
  CHECK(g == MLFLOW_GATE_MIN);
  CHECK(mlflow_gate_metric_parse("a:b", m, sizeof m, &g, &e) == MLFLOW_OK);
  CHECK_STR_EQ(m, "a:b");
  CHECK(mlflow_gate_metric_parse("", m, sizeof m, &g, &e) == MLFLOW_E_INVALID);
  CHECK(mlflow_gate_metric_parse(":min", m, sizeof m, &g, &e) ==
        MLFLOW_E_INVALID);
  CHECK(mlflow_gate_metric_parse("a..b", m, sizeof m, &g, &e) ==
        MLFLOW_E_INVALID);
  CHECK(mlflow_gate_metric_parse("swd/avg", m, 4, &g, &e) == MLFLOW_E_INVALID);
  CHECK(mlflow_gate_metric_parse(NULL, m, sizeof m, &g, &e) ==
        MLFLOW_E_INVALID);
}

int main(void) {
  check_spec_parser();
  char *uri = test_mlflow_uri();
  snprintf(g_uri, sizeof g_uri, "%s", uri);
  free(uri);
  tu_fresh_dir(GF_TEST_TMP);
  snprintf(g_log, sizeof g_log, "%s/promote.log", GF_TEST_TMP);
  mlflow_client *c = test_client_of(g_uri);
  mlflow_error e;
  char exp[128], model[128];
  test_unique(exp, sizeof exp, "promote-gate");
  test_unique(model, sizeof model, "promote-gate-model");
  mlflow_experiment ex;
  REQUIRE(mlflow_experiment_get_or_create(c, exp, &ex, &e) == MLFLOW_OK);
  REQUIRE(mlflow_registered_model_create(c, model, &e) == MLFLOW_OK);

  /* v1: last 15 (first 5); v2: 12.3 (better); v3: first 1, last 20 (worse
   * by its last value); v4: 12.3 (equal to v2); v5: no swd/avg. */
  char r[6][33];
  const double v1[] = {5, 15}, v2[] = {12.3}, v3[] = {1, 20}, v4[] = {12.3};
  make_version(c, ex.experiment_id, model, "swd/avg", v1, 2, "1", r[1]);
  make_version(c, ex.experiment_id, model, "swd/avg", v2, 1, "2", r[2]);
  make_version(c, ex.experiment_id, model, "swd/avg", v3, 2, "3", r[3]);
  make_version(c, ex.experiment_id, model, "swd/avg", v4, 1, "4", r[4]);
  make_version(c, ex.experiment_id, model, "swd/avg", NULL, 0, "5", r[5]);

  /* No holder: promotes. */
  CHECK_INT_EQ(promote(model, "1", "production", "swd/avg",
                       "vs no version holds alias production: promoted"), 0);
  CHECK(strstr(log_text(), "alias production -> 1"));
  check_alias(c, model, "production", "1");
  /* Better (12.3 < 15, v1's last value): promotes, says what it compared. */
  char want[512];
  snprintf(want, sizeof want, "swd/avg (lower is better): version 2 = 12.3 "
           "(run %s) vs version 1 = 15 (run %s): better, alias production "
           "-> 2", r[2], r[1]);
  CHECK_INT_EQ(promote(model, "2", "production", "swd/avg", want), 0);
  check_alias(c, model, "production", "2");
  /* Worse by its last value (20), though its first point (1) was better. */
  CHECK_INT_EQ(promote(model, "3", "production", "swd/avg:min",
                       "version 3 = 20"), 1);
  CHECK(strstr(log_text(), "worse: refused, alias production stays on "
                           "version 2"));
  check_alias(c, model, "production", "2");
  /* Equal: refused. */
  CHECK_INT_EQ(promote(model, "4", "production", "swd/avg",
                       "equal, not better: refused"), 1);
  check_alias(c, model, "production", "2");
  /* The candidate has no value: refused with the reason. */
  snprintf(want, sizeof want, "version 5 (run %s) has no value", r[5]);
  CHECK_INT_EQ(promote(model, "5", "production", "swd/avg", want), 1);
  CHECK(strstr(log_text(), "refused"));
  check_alias(c, model, "production", "2");
  /* :max: 20 beats 12.3. */
  CHECK_INT_EQ(promote(model, "3", "production", "swd/avg:max",
                       "(higher is better)"), 0);
  CHECK(strstr(log_text(), "better, alias production -> 3"));
  check_alias(c, model, "production", "3");
  /* Already there: nothing to do, success. */
  CHECK_INT_EQ(promote(model, "3", "production", "swd/avg",
                       "already on version 3"), 0);
  /* A holder without the metric does not block: promotes, says so. */
  CHECK_INT_EQ(promote(model, "5", "staging", NULL, "-> version 5"), 0);
  CHECK_INT_EQ(promote(model, "1", "staging", "swd/avg",
                       "version 5 without a value"), 0);
  CHECK(strstr(log_text(), "promoted anyway, alias staging -> 1"));
  check_alias(c, model, "staging", "1");
  /* Usage errors and a missing version. */
  CHECK_INT_EQ(promote(model, "2", "production", "", NULL), 2);
  CHECK_INT_EQ(promote(model, "2", "production", "a..b", NULL), 2);
  CHECK_INT_EQ(promote(model, "99", "production", "swd/avg", NULL), 1);
  CHECK(!strstr(log_text(), "refused"));
  check_alias(c, model, "production", "3");

  /* The library's result, without the CLI. */
  mlflow_gate_result res;
  CHECK(mlflow_alias_set_if_better(c, model, "2", "production", "swd/avg",
                                   MLFLOW_GATE_MAX, &res, &e) == MLFLOW_OK);
  CHECK(res.verdict == MLFLOW_GATE_REFUSED_WORSE);
  CHECK(!mlflow_gate_promoted(res.verdict));
  CHECK_STR_EQ(res.holder_version, "3");
  CHECK_STR_EQ(res.candidate_run_id, r[2]);
  CHECK_STR_EQ(res.holder_run_id, r[3]);
  CHECK(res.candidate_has_value && fabs(res.candidate_value - 12.3) < 1e-12);
  CHECK(res.holder_has_value && res.holder_value == 20);
  CHECK(mlflow_alias_set_if_better(c, model, "2", "production", "no/such",
                                   MLFLOW_GATE_MIN, &res, &e) == MLFLOW_OK);
  CHECK(res.verdict == MLFLOW_GATE_REFUSED_MISSING);
  CHECK(mlflow_alias_set_if_better(c, model, "2", "v1", "swd/avg",
                                   MLFLOW_GATE_MIN, &res, &e) ==
        MLFLOW_E_INVALID);
  check_alias(c, model, "production", "3");

  mlflow_registered_model_delete(c, model, &e);
  test_drop_artifacts(c, exp);
  mlflow_experiment_free(&ex);
  mlflow_client_free(c);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
