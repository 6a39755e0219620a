/* test_cli_eval.c - `ganflow eval` against the `mlflow` fixture, on a short
 * mlp run on Fashion-MNIST (20 steps, checkpoints at 10 and 20, registered
 * as version 1 of a fresh model; with an EMA generator, which both the
 * checkpoint's evaluation and the registered version use).
 *   1. A checkpoint with --run-id: stdout has fid, kid, kid_std; the run
 *      holds fid, kid, kid_std at the checkpoint's step (20), once each.
 *   2. models:/NAME/1 with --run-id --step 1000: the same keys at 1000; the
 *      reference statistics come from the cache; the generated images are
 *      the same as the final checkpoint's (same seed, same weights), so the
 *      FID equals step 20's.
 *   3. Inputs that must fail with one line naming the file and nothing
 *      logged: a missing network file, a network file with another digest,
 *      a checkpoint whose images have 2 channels, a missing checkpoint, a
 *      dataset that cannot be read, a feature cache of another network;
 *      and command lines that must be refused (exit 2). */
#include <dirent.h>
#include <math.h>
#include <sys/stat.h>

#include "check.h"
#include "fashion.h"
#include "gf/checkpoint.h"
#include "gf/feat_cache.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"
#include "proc_util.h"


static char g_exp[128], g_model[128];

static char *slurp(const char *path) {
  char *t = test_read_text(path);
  return t ? t : strdup("");
}

/* ganflow with args (NULL-terminated, after argv[0]); the log (stdout and
 * stderr) into *out (malloc'd); returns the exit code. */
static int ganflow(const char *tag, const char *const *args, char **out) {
  char log[1200];
  snprintf(log, sizeof log, "%s/%s.log", GF_TEST_TMP, tag);
  char *argv[40];
  int n = 0;
  argv[n++] = GF_GANFLOW_BIN;
  for (; args[n - 1] && n < 39; n++) argv[n] = (char *)args[n - 1];
  argv[n] = NULL;
  int rc = tu_run_log(log, argv, NULL, NULL);
  char *text = slurp(log);
  if (out) *out = text;
  else free(text);
  return rc;
}

static double value_after(const char *text, const char *key) {
  size_t k = strlen(key);
  for (const char *p = text; p && *p;) {
    if (strncmp(p, key, k) == 0) return atof(p + k);
    p = strchr(p, '\n');
    if (p) p++;
  }
  return NAN;
}

/* Points of key in the run at step; *value the last one's value. */
static int points_at(mlflow_client *c, const char *run, const char *key,
                     int64_t step, double *value) {
  mlflow_metric_list l;
  mlflow_error e;
  REQUIRE(mlflow_metric_history(c, run, key, &l, &e) == MLFLOW_OK);
  int n = 0;
  for (size_t i = 0; i < l.count; i++)
    if (l.items[i].step == step) {
      n++;
      if (value) *value = l.items[i].value;
    }
  mlflow_metric_list_free(&l);
  return n;
}

static int points(mlflow_client *c, const char *run, const char *key) {
  mlflow_metric_list l;
  mlflow_error e;
  REQUIRE(mlflow_metric_history(c, run, key, &l, &e) == MLFLOW_OK);
  int n = (int)l.count;
  mlflow_metric_list_free(&l);
  return n;
}

static void train(const char *dir, char run_id[33]) {
  char log[1200];
  snprintf(log, sizeof log, "%s/train.log", GF_TEST_TMP);
  char *args[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                  "--steps", "20", "--batch", "32", "--seed", "7",
                  "--sample-every", "0", "--eval-every", "0",
                  "--checkpoint-every", "10", "--keep", "10", "--threads", "2",
                  "--ema-decay", "0.9",
                  "--checkpoint-dir", (char *)dir, "--experiment", g_exp,
                  "--register-model", g_model, NULL};
  int rc = tu_run_log(log, args, NULL, NULL);
  if (rc != 0) {
    char *t = slurp(log);
    fprintf(stderr, "---- train (exit %d) ----\n%s\n", rc, t);
    free(t);
  }
  REQUIRE(rc == 0);
  test_run_id_file(dir, run_id, 33);
}

/* A copy of checkpoint src at dst whose config says `channels` image
 * channels (the tensors unchanged). */
static void rewrite_channels(const char *src, const char *dst, int channels) {
  gf_st_file f;
  gf_st_file_init(&f);
  gf_ckpt_meta m;
  gf_err err;
  REQUIRE(gf_ckpt_open(src, &f, &m, &err) == GF_OK);
  gf_st_tensor_desc *d = calloc(f.n_tensors, sizeof *d);
  REQUIRE(d);
  for (size_t i = 0; i < f.n_tensors; i++) {
    const gf_st_tensor *t = &f.tensors[i];
    d[i].name = t->name;
    d[i].dtype = t->dtype;
    d[i].ndim = t->ndim;
    d[i].shape = t->shape;
    d[i].data = t->data;
  }
  m.config.image_channels = channels;
  gf_status st = gf_ckpt_write(dst, d, f.n_tensors, &m, &err);
  CHECKF(st == GF_OK, "rewrite: %s", err.msg);
  free(d);
  gf_st_file_free(&f);
}

/* The one cache file in dir, rewritten as if made by another network. */
static void poison_cache(const char *dir, char *path, size_t cap) {
  DIR *d = opendir(dir);
  REQUIRE(d);
  struct dirent *e;
  path[0] = '\0';
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".safetensors") &&
        strlen(dir) + strlen(e->d_name) + 2 <= cap) {
      strcpy(path, dir);
      strcat(path, "/");
      strcat(path, e->d_name);
    }
  closedir(d);
  REQUIRE(path[0]);
  float *feats = NULL;
  gf_feat_moments m = {0};
  gf_err err;
  REQUIRE(gf_feat_cache_read(path, NULL, &feats, &m, &err) == GF_OK);
  gf_st_file f;
  gf_st_file_init(&f);
  REQUIRE(gf_st_open(&f, path, 0, &err) == GF_OK);
  char data_sha[65], pre[300];
  snprintf(data_sha, sizeof data_sha, "%s", gf_st_meta_get(&f, "data_sha256"));
  snprintf(pre, sizeof pre, "%s", gf_st_meta_get(&f, "preprocess"));
  gf_st_file_free(&f);
  gf_feat_cache_key key = {"0000000000000000000000000000000000000000000000000"
                           "000000000000000", data_sha, pre, m.n, m.dim};
  REQUIRE(gf_feat_cache_write(path, &key, feats, &m, &err) == GF_OK);
  free(feats);
  gf_feat_moments_free(&m);
}

/* A command that must fail: exit `want`, `needle` in the output, no
 * metric line printed. */
static void expect_fail(const char *tag, const char *const *args, int want,
                        const char *needle) {
  char *out = NULL;
  int rc = ganflow(tag, args, &out);
  CHECKF(rc == want, "%s: exit %d, want %d\n%s", tag, rc, want, out);
  CHECKF(strstr(out, needle) != NULL, "%s: output lacks '%s':\n%s", tag,
         needle, out);
  CHECKF(!strstr(out, "\nfid ") && strncmp(out, "fid ", 4) != 0,
         "%s: printed a metric:\n%s", tag, out);
  free(out);
}

int main(void) {
  struct stat sb;
  if (!tu_have_fashion()) return 1;
  char *uri = test_mlflow_uri();
  test_tracking_env(uri);
  unsetenv("GANFLOW_INCEPTION");
  tu_fresh_dir(GF_TEST_TMP);
  setenv("GANFLOW_CACHE_DIR", GF_TEST_TMP, 1);
  test_unique(g_exp, sizeof g_exp, "cli-eval");
  test_unique(g_model, sizeof g_model, "cli-eval-model");
  mlflow_client *c = test_client_of(uri);
  free(uri);

  char ckdir[1200], run[33], ck20[1300], cache[1200], mcache[1200];
  snprintf(ckdir, sizeof ckdir, "%s/ckpt", GF_TEST_TMP);
  snprintf(cache, sizeof cache, "%s/fid-cache", GF_TEST_TMP);
  snprintf(mcache, sizeof mcache, "%s/models", GF_TEST_TMP);
  train(ckdir, run);
  snprintf(ck20, sizeof ck20, "%s/" GF_CKPT_NAME_FMT, ckdir, 20LL);
  REQUIRE(stat(ck20, &sb) == 0);

  /* 1. The checkpoint, logged at its step. */
  char *out = NULL;
  const char *a1[] = {"eval", ck20, "--data", FASHION, "--images", "64",
                      "--batch", "32", "--threads", "2", "--run-id", run,
                      "--cache-dir", cache, NULL};
  int rc = ganflow("eval-ckpt", a1, &out);
  CHECKF(rc == 0, "exit %d\n%s", rc, out);
  double fid = value_after(out, "fid "), kid = value_after(out, "kid ");
  CHECKF(isfinite(fid) && fid > 0, "fid %g\n%s", fid, out);
  CHECKF(isfinite(kid) && strstr(out, " kid_std "), "%s", out);
  CHECKF(strstr(out, "(EMA generator): step 20"), "the checkpoint's EMA generator "
         "was not the one scored:\n%s", out);
  fprintf(stderr, "---- eval ckpt ----\n%s", out);
  free(out);
  double v = NAN;
  CHECK_INT_EQ(points_at(c, run, "fid", 20, &v), 1);
  CHECK_NEAR(v, fid, 1e-4 * fid);
  CHECK_INT_EQ(points_at(c, run, "kid", 20, NULL), 1);
  CHECK_INT_EQ(points_at(c, run, "kid_std", 20, NULL), 1);

  /* 2. The registered version at --step 1000. */
  char model_uri[300];
  snprintf(model_uri, sizeof model_uri, "models:/%s/1", g_model);
  const char *a2[] = {"eval", model_uri, "--data", FASHION, "--images", "64",
                      "--batch", "32", "--threads", "2", "--run-id", run,
                      "--step", "1000", "--cache-dir", cache,
                      "--model-cache-dir", mcache, NULL};
  rc = ganflow("eval-uri", a2, &out);
  CHECKF(rc == 0, "exit %d\n%s", rc, out);
  CHECKF(strstr(out, "reference statistics from the cache"), "%s", out);
  double fid_uri = value_after(out, "fid ");
  CHECK_NEAR(fid_uri, fid, 1e-3 * fid);
  fprintf(stderr, "---- eval models:/ ----\n%s", out);
  free(out);
  CHECK_INT_EQ(points_at(c, run, "fid", 1000, NULL), 1);
  CHECK_INT_EQ(points_at(c, run, "kid", 1000, NULL), 1);
  CHECK_INT_EQ(points_at(c, run, "kid_std", 1000, NULL), 1);

  /* 3. Failures: nothing more logged. */
  int before = points(c, run, "fid");
  char bad_net[1200], two_ch[1300], missing[1300], nodata[1200];
  snprintf(bad_net, sizeof bad_net, "%s/short.safetensors", GF_TEST_TMP);
  size_t len = 0;
  unsigned char *head = tu_read("/usr/local/share/ganflow/fid/"
                                "inception-v3-2015-12-05.safetensors", &len);
  REQUIRE(head && len > 4096);
  tu_write(bad_net, head, 4096);
  free(head);
  snprintf(two_ch, sizeof two_ch, "%s/ckpt2/" GF_CKPT_NAME_FMT, GF_TEST_TMP,
           20LL);
  char d2[1300];
  snprintf(d2, sizeof d2, "%s/ckpt2", GF_TEST_TMP);
  mkdir(d2, 0755);
  rewrite_channels(ck20, two_ch, 2);
  snprintf(missing, sizeof missing, "%s/" GF_CKPT_NAME_FMT, ckdir, 99LL);
  snprintf(nodata, sizeof nodata, "%s/no-dataset", GF_TEST_TMP);

  setenv("GANFLOW_INCEPTION", "/nonexistent/inception.safetensors", 1);
  const char *f1[] = {"eval", ck20, "--data", FASHION, "--images", "8",
                      "--run-id", run, "--cache-dir", cache, NULL};
  expect_fail("no-network", f1, 1, "/nonexistent/inception.safetensors");
  setenv("GANFLOW_INCEPTION", bad_net, 1);
  expect_fail("network-digest", f1, 1, bad_net);
  unsetenv("GANFLOW_INCEPTION");
  const char *f3[] = {"eval", two_ch, "--data", FASHION, "--images", "8",
                      "--run-id", run, "--cache-dir", cache, NULL};
  expect_fail("two-channels", f3, 1, two_ch);
  const char *f4[] = {"eval", missing, "--data", FASHION, "--images", "8",
                      "--run-id", run, "--cache-dir", cache, NULL};
  expect_fail("missing-ckpt", f4, 1, missing);
  const char *f5[] = {"eval", ck20, "--data", nodata, "--images", "8",
                      "--run-id", run, "--cache-dir", cache, NULL};
  expect_fail("no-dataset", f5, 1, nodata);
  char poisoned[1300];
  poison_cache(cache, poisoned, sizeof poisoned);
  const char *f6[] = {"eval", ck20, "--data", FASHION, "--images", "64",
                      "--batch", "32", "--threads", "2", "--run-id", run,
                      "--cache-dir", cache, NULL};
  expect_fail("cache-other-network", f6, 1, poisoned);
  CHECK_INT_EQ(points(c, run, "fid"), before);
  CHECK_INT_EQ(points(c, run, "kid"), before);

  /* Command lines (exit 2). */
  const char *u1[] = {"eval", ck20, NULL};
  expect_fail("no-data", u1, 2, "--data");
  const char *u2[] = {"eval", model_uri, "--data", FASHION, "--run-id", run,
                      NULL};
  expect_fail("uri-no-step", u2, 2, "--step");
  const char *u3[] = {"eval", ck20, "--data", FASHION, "--images", "1", NULL};
  expect_fail("images-1", u3, 2, "--images");
  const char *u4[] = {"eval", ck20, "--data", FASHION, "--metrics", "fid,is",
                      NULL};
  expect_fail("metrics", u4, 2, "--metrics");
  const char *u5[] = {"eval", ck20, "--data", FASHION, "--seed", "-3", NULL};
  expect_fail("seed", u5, 2, "--seed");
  const char *u6[] = {"eval", ck20, "--data", FASHION, "--run-id", "a/b",
                      NULL};
  expect_fail("run-id", u6, 2, "--run-id");
  const char *u7[] = {"eval", ck20, "--follow", ckdir, "--data", FASHION,
                      NULL};
  expect_fail("both", u7, 2, "not both");
  const char *u8[] = {"eval", "--follow", ckdir, "--data", FASHION, "--poll",
                      "0", NULL};
  expect_fail("poll", u8, 2, "--poll");
  const char *u9[] = {"eval", ck20, "--data", FASHION, "--step", "5", NULL};
  expect_fail("step-no-run", u9, 2, "--run-id");
  const char *u10[] = {"eval", ck20, "--data", FASHION, "--metrics",
                       "fid,,kid", NULL};
  expect_fail("metrics-empty", u10, 2, "--metrics");

  /* 4. A class-conditional checkpoint: its G needs a class per image; the
   * evaluation is class-balanced (image k of class k % 10). */
  char cdir[1200], clog[1200], ck10[1300];
  snprintf(cdir, sizeof cdir, "%s/ckpt-cond", GF_TEST_TMP);
  snprintf(clog, sizeof clog, "%s/train-cond.log", GF_TEST_TMP);
  char *targs[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp", "--cond",
                   "--steps", "10", "--batch", "32", "--sample-every", "0",
                   "--eval-every", "0", "--checkpoint-every", "10", "--threads", "2",
                   "--checkpoint-dir", cdir, "--experiment", g_exp,
                   "--register-model", "", NULL};
  int trc = tu_run_log(clog, targs, NULL, NULL);
  CHECKF(trc == 0, "conditional training exit %d", trc);
  snprintf(ck10, sizeof ck10, "%s/" GF_CKPT_NAME_FMT, cdir, 10LL);
  const char *a4[] = {"eval", ck10, "--data", FASHION, "--images", "40",
                      "--batch", "16", "--threads", "2", "--cache-dir", cache, NULL};
  rc = ganflow("eval-cond", a4, &out);
  CHECKF(rc == 0, "exit %d\n%s", rc, out);
  double cfid = value_after(out, "fid ");
  CHECKF(isfinite(cfid) && cfid > 0, "conditional fid %g\n%s", cfid, out);
  free(out);

  mlflow_error e;
  mlflow_registered_model_delete(c, g_model, &e);
  test_drop_artifacts(c, g_exp);
  mlflow_client_free(c);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
