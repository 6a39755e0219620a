/* test_cli_follow.c - `ganflow eval --follow` beside a running ganflow-train
 * against the `mlflow` fixture.
 *   1. The follower starts on the (not yet existing) checkpoint directory of
 *      an mlp run of 300 steps with --checkpoint-every 100 on Fashion-MNIST;
 *      after the trainer ends, the follower exits 0 by itself, and the run
 *      holds fid, kid, kid_std once at every checkpoint step (100, 200,
 *      300, the final one included) and nowhere else.
 *   2. Started again on the same directory, it evaluates nothing (the run
 *      has fid at every step already) and exits 0; still one point each.
 *   3. Waiting on an empty directory for a RUNNING run, it exits 0 soon
 *      after SIGTERM. */
#include <math.h>
#include <signal.h>
#include <sys/stat.h>

#include "check.h"
#include "fashion.h"
#include "gf/checkpoint.h"
#include "mlflow_test.h"
#include "proc_util.h"
#include "train_test_util.h"


static char g_exp[128];

static pid_t follower(const char *tag, const char *dir, const char *run_id,
                      char *log, size_t cap) {
  snprintf(log, cap, "%s/%s.log", GF_TEST_TMP, tag);
  char cache[1200];
  snprintf(cache, sizeof cache, "%s/fid-cache", GF_TEST_TMP);
  char *args[24];
  int n = 0;
  args[n++] = GF_GANFLOW_BIN;
  args[n++] = "eval";
  args[n++] = "--follow";
  args[n++] = (char *)dir;
  args[n++] = "--data";
  args[n++] = FASHION;
  args[n++] = "--images";
  args[n++] = "16";
  args[n++] = "--batch";
  args[n++] = "16";
  args[n++] = "--threads";
  args[n++] = "1";
  args[n++] = "--poll";
  args[n++] = "0.5";
  args[n++] = "--cache-dir";
  args[n++] = cache;
  if (run_id) {
    args[n++] = "--run-id";
    args[n++] = (char *)run_id;
  }
  args[n] = NULL;
  return tu_spawn_log(log, args, NULL, NULL, 1);
}

/* Points of key at each step of want (n_want steps): each must be 1, and
 * no point elsewhere. */
static void check_once(mlflow_client *c, const char *run, const char *key,
                       const int64_t *want, int n_want) {
  mlflow_metric_list l;
  mlflow_error e;
  REQUIRE(mlflow_metric_history(c, run, key, &l, &e) == MLFLOW_OK);
  for (int k = 0; k < n_want; k++) {
    int n = 0;
    for (size_t i = 0; i < l.count; i++) n += l.items[i].step == want[k];
    CHECKF(n == 1, "%s at step %lld: %d points", key, (long long)want[k], n);
  }
  CHECKF(l.count == (size_t)n_want, "%s: %zu points, want %d", key, l.count,
         n_want);
  for (size_t i = 0; i < l.count; i++)
    CHECKF(isfinite(l.items[i].value), "%s at %lld: %g", key,
           (long long)l.items[i].step, l.items[i].value);
  mlflow_metric_list_free(&l);
}

int main(void) {
  if (!tu_have_fashion()) return 1;
  char *uri = test_mlflow_uri();
  test_tracking_env(uri);
  unsetenv("GANFLOW_INCEPTION");
  tu_fresh_dir(GF_TEST_TMP);
  setenv("GANFLOW_CACHE_DIR", GF_TEST_TMP, 1);
  test_unique(g_exp, sizeof g_exp, "cli-follow");
  mlflow_client *c = test_client_of(uri);
  free(uri);

  /* 1. Beside a running trainer. */
  char ckdir[1200], flog[1200], tlog[1200];
  snprintf(ckdir, sizeof ckdir, "%s/ckpt", GF_TEST_TMP);
  snprintf(tlog, sizeof tlog, "%s/train.log", GF_TEST_TMP);
  pid_t fpid = follower("follow", ckdir, NULL, flog, sizeof flog);
  char *targs[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                   "--steps", "300", "--batch", "32", "--seed", "3",
                   "--sample-every", "0", "--eval-every", "0",
                   "--checkpoint-every", "100", "--keep", "10", "--threads",
                   "1", "--checkpoint-dir", ckdir, "--experiment", g_exp,
                   NULL};
  double t0 = mono_s();
  pid_t tpid = tu_spawn_log(tlog, targs, NULL, NULL, 1);
  int trc = wait_group(tpid, 600, tlog);
  double t_train = mono_s() - t0;
  CHECK_INT_EQ(trc, 0);
  if (trc != 0) dump_log(tlog);
  int frc = wait_group(fpid, 600, flog);
  fprintf(stderr, "trainer %.1f s, follower done %.1f s after it\n", t_train,
          mono_s() - t0 - t_train);
  CHECKF(frc == 0, "follower exit %d", frc);
  dump_log(flog);
  char path[1300];
  snprintf(path, sizeof path, "%s/run_id", ckdir);
  char *run = test_read_text(path);
  REQUIRE(run && strlen(run) == 32);
  const int64_t steps[] = {100, 200, 300};
  check_once(c, run, "fid", steps, 3);
  check_once(c, run, "kid", steps, 3);
  check_once(c, run, "kid_std", steps, 3);
  CHECKF(log_contains(flog, "every checkpoint is done: 3 evaluated"),
         "the follower's last line");

  /* 2. Restarted: nothing to do, nothing logged twice. */
  fpid = follower("follow-again", ckdir, NULL, flog, sizeof flog);
  frc = wait_group(fpid, 300, flog);
  CHECKF(frc == 0, "second follower exit %d", frc);
  CHECKF(log_contains(flog, "0 evaluated, 3 skipped"), "restart log");
  if (check_failures_) dump_log(flog);
  check_once(c, run, "fid", steps, 3);

  /* 3. SIGTERM while waiting for a RUNNING run's first checkpoint. */
  mlflow_experiment x;
  mlflow_error e;
  REQUIRE(mlflow_experiment_get_by_name(c, g_exp, &x, &e) == MLFLOW_OK);
  mlflow_run_info ri;
  REQUIRE(mlflow_run_create(c, x.experiment_id, "waiting", mlflow_now_ms(),
                            NULL, 0, &ri, &e) == MLFLOW_OK);
  char empty[1200];
  snprintf(empty, sizeof empty, "%s/empty", GF_TEST_TMP);
  fpid = follower("follow-term", empty, ri.run_id, flog, sizeof flog);
  double t_wait = mono_s();
  while (!log_contains(flog, "waiting for new checkpoints") &&
         mono_s() - t_wait < 60)
    sleep_s(0.1);
  CHECKF(log_contains(flog, "waiting for new checkpoints"), "never waited");
  kill(fpid, SIGTERM);
  double t_sig = mono_s();
  frc = wait_group(fpid, 30, flog);
  CHECKF(frc == 0, "exit %d after SIGTERM", frc);
  CHECKF(mono_s() - t_sig < 5, "took %.1f s to stop", mono_s() - t_sig);
  CHECKF(log_contains(flog, "stopping"), "stop line");
  mlflow_run_update(c, ri.run_id, MLFLOW_RUN_FINISHED, mlflow_now_ms(), &e);
  mlflow_run_info_free(&ri);
  mlflow_experiment_free(&x);

  free(run);
  test_drop_artifacts(c, g_exp);
  mlflow_client_free(c);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
