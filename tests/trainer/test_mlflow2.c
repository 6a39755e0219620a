/* test_mlflow2.c - ganflow-train against a real MLflow 2 server (2.22.1,
 * the newest before MLflow 3's logged models; .venv-mlflow2 from
 * deploy/install-deps.sh), started by this test: the trainer finds no
 * logged-models endpoint and falls back to the run's model/ artifact, the
 * version is registered from it, and `ganflow generate` on that version
 * writes the very bytes it writes for the same training logged as an
 * MLflow 3 logged model on the fixture server (so both paths carry the same
 * generator). FAILS when .venv-mlflow2 is missing (install-deps makes it). */
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "proc_util.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"
#include "train_test_util.h"


static pid_t spawn(const char *log, char *const *argv, const char *uri) {
  return tu_spawn_log(log, argv, "MLFLOW_TRACKING_URI", uri, 1);
}

/* A short mlp training registered as `model`@a on uri, then `ganflow
 * generate` of it into png. Returns the trainer's log path in log. */
static void train_and_generate(const char *uri, const char *tag,
                               const char *model, char *log, size_t cap,
                               const char *png) {
  char dir[1024], exp[160], glog[1100], mref[300];
  snprintf(dir, sizeof dir, "%s/%s", GF_TEST_TMP, tag);
  snprintf(log, cap, "%s/%s.log", GF_TEST_TMP, tag);
  snprintf(glog, sizeof glog, "%s/%s-generate.log", GF_TEST_TMP, tag);
  test_unique(exp, sizeof exp, tag);
  char *args[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                  "--steps", "20", "--batch", "32", "--log-every", "10",
                  "--sample-every", "0", "--eval-every", "10",
                  "--eval-images", "200", "--checkpoint-every", "0",
                  "--threads", "1", "--seed", "5", "--checkpoint-dir", dir,
                  "--experiment", exp, "--register-model", (char *)model,
                  "--alias", "a", NULL};
  int rc = wait_group(spawn(log, args, uri), 300, log);
  CHECKF(rc == 0, "%s: ganflow-train exit %d", tag, rc);
  if (rc != 0) dump_log(log);
  snprintf(mref, sizeof mref, "models:/%s@a", model);
  char cache[1100];
  snprintf(cache, sizeof cache, "%s/%s-cache", GF_TEST_TMP, tag);
  char *gen[] = {GF_GANFLOW_BIN, "generate", "--model", mref, "--seed", "3",
                 "-n", "4", "-o", (char *)png, "--cache-dir", cache, NULL};
  rc = wait_group(spawn(glog, gen, uri), 120, glog);
  CHECKF(rc == 0, "%s: ganflow generate exit %d", tag, rc);
  if (rc != 0) dump_log(glog);
}

int main(void) {
  char venv2[1024];
  snprintf(venv2, sizeof venv2, "%s/.venv-mlflow2/bin/mlflow", GF_SOURCE_DIR);
  if (access(venv2, X_OK) != 0) {
    fprintf(stderr, "no MLflow 2 at %s: run deploy/install-deps.sh\n", venv2);
    return 1;
  }
  char *fixture = test_mlflow_uri();
  char state[1024], env[1200];
  snprintf(env, sizeof env, "GANFLOW_MLFLOW_BIN='%s'", venv2);
  char *uri2 = test_own_server_start(state, sizeof state, env);
  mlflow_client *c = test_client_of(uri2);
  char *ver = NULL;
  mlflow_error e;
  REQUIRE(mlflow_server_version(c, &ver, &e) == MLFLOW_OK);
  CHECKF(ver && strncmp(ver, "2.", 2) == 0, "the old server says %s", ver);
  fprintf(stderr, "MLflow %s at %s\n", ver ? ver : "?", uri2);
  free(ver);

  char model[160], log2[1100], log3[1100], png2[1100], png3[1100];
  test_unique(model, sizeof model, "mlflow2-model");
  snprintf(png2, sizeof png2, "%s/mlflow2.png", GF_TEST_TMP);
  snprintf(png3, sizeof png3, "%s/mlflow3.png", GF_TEST_TMP);
  train_and_generate(uri2, "mlflow2", model, log2, sizeof log2, png2);
  CHECK(log_contains(log2, "no logged-models endpoint"));

  /* the version comes from the run's model/ artifact */
  mlflow_model_version mv;
  REQUIRE(mlflow_alias_get(c, model, "a", &mv, &e) == MLFLOW_OK);
  CHECK_STR_EQ(mv.status, "READY");
  size_t sl = mv.source ? strlen(mv.source) : 0;
  CHECKF(sl > 6 && strcmp(mv.source + sl - 6, "/model") == 0, "source %s",
         mv.source ? mv.source : "-");
  mlflow_run run;
  REQUIRE(mlflow_run_get(c, mv.run_id, &run, &e) == MLFLOW_OK);
  mlflow_file_list l;
  REQUIRE(mlflow_artifact_list(c, run.info.artifact_uri, "model", 0, &l, &e) ==
          MLFLOW_OK);
  bool mlmodel = false, weights = false;
  for (size_t i = 0; i < l.count; i++) {
    mlmodel |= strcmp(l.items[i].path, "model/MLmodel") == 0;
    weights |= strcmp(l.items[i].path, "model/generator.safetensors") == 0;
  }
  CHECK(mlmodel && weights);
  mlflow_file_list_free(&l);
  mlflow_run_free(&run);
  mlflow_model_version_free(&mv);

  /* the same training on MLflow 3 (a logged model): the same generator */
  train_and_generate(fixture, "mlflow3", model, log3, sizeof log3, png3);
  CHECK(log_contains(log3, "from logged model m-"));
  size_t n2 = 0, n3 = 0;
  char *b2 = read_all(png2, &n2), *b3 = read_all(png3, &n3);
  CHECKF(b2 && b3 && n2 == n3 && memcmp(b2, b3, n2) == 0,
         "generated PNGs differ between the MLflow 2 and 3 paths (%zu vs %zu "
         "bytes)", n2, n3);
  free(b2);
  free(b3);

  mlflow_client_free(c);
  test_server_cmd(state, "stop", NULL);
  free(uri2);
  free(fixture);
  return check_report();
}
