/* test_train_fid.c - FID and KID in ganflow-train's evaluations, against
 * the real MLflow server of the `mlflow` ctest fixture, on Fashion-MNIST
 * with the FID network deploy/install-deps.sh installs (the test FAILS
 * without either).
 *
 *   1. mlp, 20 steps, --eval-every 10 --eval-metrics swd,fid,kid
 *      --fid-images 40 --promote-if-better champion:fid:min: exit 0; the run
 *      FINISHED; fid, kid and kid_std at steps 10 and 20, each once and
 *      none at step 0 (swd/avg at 0, 10, 20); the reference's tag and its
 *      artifact fid/reference.safetensors; one file in the feature cache;
 *      the alias moved by the fid gate;
 *   2. the same job in a new experiment reads the reference from the cache
 *      and logs the same fid at step 10 (same seed, same images);
 *   3. bad inputs fail before a run exists, naming the file: a truncated
 *      network file, a missing one, a damaged cache file. */
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>

#include "check.h"
#include "fashion.h"
#include "file_util.h"
#include "mlflow/artifacts.h"
#include "mlflow_test.h"
#include "proc_util.h"

#define NETWORK "/usr/local/share/ganflow/fid/inception-v3-2015-12-05.safetensors"

static mlflow_client *g_mc;

static bool log_has(const char *log, const char *needle) {
  char *t = test_read_text(log);
  bool found = t && strstr(t, needle);
  free(t);
  return found;
}

static void dump(const char *log) {
  char *t = test_read_text(log);
  fprintf(stderr, "---- %s ----\n%s----\n", log, t ? t : "(none)");
  free(t);
}

/* Runs the trainer on experiment exp with GANFLOW_CACHE_DIR=cache and, when
 * inception is not NULL, GANFLOW_INCEPTION=inception; returns its exit
 * status. */
static int train(const char *exp, const char *dir, const char *cache,
                 const char *inception, const char *log) {
  char ck[1100], reg[200];
  snprintf(ck, sizeof ck, "%s/ck", dir);
  snprintf(reg, sizeof reg, "%s-g", exp);
  char *argv[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                  "--steps", "20", "--batch", "32", "--threads", "2",
                  "--seed", "5", "--eval-every", "10", "--eval-metrics",
                  "swd,fid,kid", "--fid-images", "40", "--eval-images", "64",
                  "--sample-every", "0", "--checkpoint-every", "0",
                  "--checkpoint-dir", ck, "--experiment", (char *)exp,
                  "--register-model", reg, "--promote-if-better",
                  "champion:fid:min", NULL};
  setenv("GANFLOW_CACHE_DIR", cache, 1);
  if (inception)
    setenv("GANFLOW_INCEPTION", inception, 1);
  else
    unsetenv("GANFLOW_INCEPTION");
  int rc = tu_wait_rc(tu_spawn_log(log, argv, NULL, NULL, 0));
  unsetenv("GANFLOW_INCEPTION");
  return rc;
}

/* The steps of metric key in run_id into steps[] (count returned); *v10
 * the value at step 10. */
static int history(const char *run_id, const char *key, long *steps,
                   int cap, double *v10) {
  mlflow_metric_list l;
  mlflow_error e;
  if (mlflow_metric_history(g_mc, run_id, key, &l, &e) != MLFLOW_OK) {
    CHECKF(0, "history of %s: %s", key, e.message);
    return 0;
  }
  int n = 0;
  for (size_t i = 0; i < l.count && n < cap; i++) {
    steps[n++] = (long)l.items[i].step;
    CHECKF(isfinite(l.items[i].value), "%s at step %lld is %g", key,
           (long long)l.items[i].step, l.items[i].value);
    if (l.items[i].step == 10 && v10) *v10 = l.items[i].value;
  }
  mlflow_metric_list_free(&l);
  return n;
}

static void check_steps(const char *run_id, const char *key, const long *want,
                        int n_want, double *v10) {
  long got[16];
  int n = history(run_id, key, got, 16, v10);
  bool same = n == n_want;
  for (int i = 0; same && i < n; i++) same = got[i] == want[i];
  CHECKF(same, "%s: %d points, want steps %ld..%ld once each", key, n,
         want[0], want[n_want - 1]);
}

static int count_files(const char *dir, const char *suffix) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  int n = 0;
  struct dirent *e;
  size_t ls = strlen(suffix);
  while ((e = readdir(d)))
    if (strlen(e->d_name) > ls &&
        !strcmp(e->d_name + strlen(e->d_name) - ls, suffix))
      n++;
  closedir(d);
  return n;
}

/* A run of experiment exp exists (it must not after a refused start). */
static bool has_run(const char *exp) {
  mlflow_experiment x;
  mlflow_error e;
  if (mlflow_experiment_get_by_name(g_mc, exp, &x, &e) != MLFLOW_OK)
    return false;
  const char *ids[1] = {x.experiment_id};
  mlflow_run_list l;
  bool any = false;
  if (mlflow_runs_search(g_mc, ids, 1, NULL, NULL, 0, NULL, &l, &e) ==
      MLFLOW_OK) {
    any = l.count > 0;
    mlflow_run_list_free(&l);
  }
  mlflow_experiment_free(&x);
  return any;
}

static double good_run(const char *tmp, const char *cache, bool cached) {
  char u[96], dir[600], log[700];
  test_unique(u, sizeof u, cached ? "fid-cached" : "fid");
  snprintf(dir, sizeof dir, "%s/%s", tmp, cached ? "cached" : "first");
  snprintf(log, sizeof log, "%s.log", dir);
  tu_fresh_dir(dir);
  int rc = train(u, dir, cache, NULL, log);
  CHECKF(rc == 0, "ganflow-train exited %d (log %s)", rc, log);
  const char *how = cached ? "reference statistics read from the cache"
                           : "reference statistics computed";
  CHECKF(log_has(log, how), "log lacks '%s'", how);
  double fid10 = NAN;
  mlflow_run r;
  if (rc == 0 && test_the_finished_run(g_mc, u, &r)) {
    const char *id = r.info.run_id;
    static const long evals[] = {10, 20}, swd[] = {0, 10, 20};
    check_steps(id, "fid", evals, 2, &fid10);
    check_steps(id, "kid", evals, 2, NULL);
    check_steps(id, "kid_std", evals, 2, NULL);
    check_steps(id, "swd/avg", swd, 3, NULL);
    CHECKF(fid10 > 0, "fid at step 10: %g", fid10);
    const char *ref = mlflow_run_tag(&r, "ganflow.fid.reference");
    CHECKF(ref && strstr(ref, "40 images") && strstr(ref, "network sha256"),
           "tag ganflow.fid.reference: %s", ref ? ref : "(missing)");
    const char *prom = mlflow_run_tag(&r, "ganflow.promotion");
    CHECKF(prom && !strncmp(prom, "promoted: fid", 13),
           "tag ganflow.promotion: %s", prom ? prom : "(missing)");
    mlflow_file_list fl;
    mlflow_error e;
    bool found = false;
    if (mlflow_artifact_list(g_mc, r.info.artifact_uri, "fid", 0, &fl, &e) ==
        MLFLOW_OK) {
      for (size_t i = 0; i < fl.count; i++)
        found |= !strcmp(fl.items[i].path, "fid/reference.safetensors") &&
                 fl.items[i].file_size > 1000;
      mlflow_file_list_free(&fl);
    }
    CHECKF(found, "artifact fid/reference.safetensors missing");
    mlflow_run_free(&r);
  }
  if (check_failures_) dump(log);
  return fid10;
}

/* A refused start: exit status 1 or 2, the message names `names`, and no
 * run in the experiment. */
static void bad_run(const char *tmp, const char *what, const char *cache,
                    const char *inception, const char *names) {
  char u[96], dir[600], log[700];
  test_unique(u, sizeof u, what);
  snprintf(dir, sizeof dir, "%s/%s", tmp, what);
  snprintf(log, sizeof log, "%s.log", dir);
  tu_fresh_dir(dir);
  int rc = train(u, dir, cache, inception, log);
  CHECKF(rc == 1 || rc == 2, "%s: exit %d, want a refusal", what, rc);
  CHECKF(log_has(log, names), "%s: the message does not name %s", what,
         names);
  CHECKF(!has_run(u), "%s: a run was created", what);
  if (check_failures_) dump(log);
}

int main(void) {
  struct stat sb;
  if (stat(FASHION "/train-images-idx3-ubyte.gz", &sb) != 0 ||
      stat(NETWORK, &sb) != 0) {
    fprintf(stderr, "Fashion-MNIST or %s missing: deploy/install-deps.sh "
            "installs both\n", NETWORK);
    return 1;
  }
  test_tracking_env(NULL);
  char *uri = test_mlflow_uri();
  setenv("MLFLOW_TRACKING_URI", uri, 1);
  g_mc = test_client_of(uri);
  tu_fresh_dir(GF_TEST_TMP);
  char cache[600];
  snprintf(cache, sizeof cache, "%s/cache", GF_TEST_TMP);

  double f1 = good_run(GF_TEST_TMP, cache, false);
  char cdir[700];
  snprintf(cdir, sizeof cdir, "%s/fid", cache);
  CHECKF(count_files(cdir, ".safetensors") == 1, "%d files in %s, want 1",
         count_files(cdir, ".safetensors"), cdir);
  double f2 = good_run(GF_TEST_TMP, cache, true);
  CHECKF(f1 == f2, "fid at step 10: %.9g, then %.9g from the cache", f1, f2);

  /* a truncated network file */
  char trunc[700];
  snprintf(trunc, sizeof trunc, "%s/truncated.safetensors", GF_TEST_TMP);
  size_t len = 0;
  unsigned char *bytes = tu_read(NETWORK, &len);
  REQUIRE(bytes && len > 4096);
  tu_write(trunc, bytes, len / 2);
  free(bytes);
  bad_run(GF_TEST_TMP, "fid-truncated", cache, trunc, trunc);
  bad_run(GF_TEST_TMP, "fid-missing", cache, "/nonexistent/inception.st",
          "/nonexistent/inception.st");
  /* a damaged cache file: the reference's, cut short */
  DIR *d = opendir(cdir);
  char cfile[1100] = "";
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, ".safetensors"))
      snprintf(cfile, sizeof cfile, "%s/%s", cdir, e->d_name);
  if (d) closedir(d);
  REQUIRE(cfile[0]);
  bytes = tu_read(cfile, &len);
  REQUIRE(bytes && len > 100);
  tu_write(cfile, bytes, len - 100);
  free(bytes);
  bad_run(GF_TEST_TMP, "fid-badcache", cache, NULL, cfile);

  mlflow_client_free(g_mc);
  free(uri);
  return check_report();
}
