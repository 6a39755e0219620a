/* test_pyfunc_integration.c - a model ganflow-train registered, through
 * MLflow's own Python side, against the `mlflow` fixture: train dcgan
 * (28x28, Fashion-MNIST) for a few steps, registered with an alias; then
 * (pyfunc_serve_check.py, the checkout's .venv) mlflow.pyfunc.load_model
 * ("models:/NAME@ALIAS") and `mlflow models serve -m models:/NAME@ALIAS
 * --env-manager local`, whose /invocations answers every body form MLflow
 * accepts for the model (dataframe_split, dataframe_records, inputs as
 * records; seeds and latents) and refuses the others with 400. Their
 * images are compared with the C generator's (gf_generator on the CPU, the
 * version downloaded by the tracking library, the seeds' per-image
 * latents as ganflow-serve draws them) within PYFUNC_IMG_TOL. Needs the
 * dataset and .venv with mlflow: FAILS without them (an integration test
 * never skips silently). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "proc_util.h"
#include "gf/generator.h"
#include "mlflow_test.h"

#define MODEL "pyfunc-it-dcgan"
#define ALIAS "pyfunc"
#define PYFUNC_IMG_TOL 1e-4
#define N_SEEDS 3
#define N_Z 2

static const uint64_t k_seeds[N_SEEDS] = {1, 2, 31337};

/* Runs argv with output into log and MLFLOW_TRACKING_URI=uri; returns the
 * exit status. */
static int run(char *const *argv, const char *log, const char *uri) {
  return tu_run_log(log, argv, "MLFLOW_TRACKING_URI", uri);
}

static void print_log(const char *path) {
  size_t len = 0;
  unsigned char *b = tu_read(path, &len);
  fprintf(stderr, "---- %s ----\n%.*s\n----\n", path, (int)len, (const char *)b);
  free(b);
}

static double max_abs_diff(const float *a, const float *b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++) {
    double d = fabs((double)a[i] - (double)b[i]);
    if (!(d <= m)) m = d;
  }
  return m;
}

/* Compares OUT/name (float32 [n * numel]) with want; returns max |diff|. */
static double compare(const char *out, const char *name, const float *want, size_t n) {
  char p[700];
  snprintf(p, sizeof p, "%s/%s", out, name);
  size_t len = 0;
  unsigned char *b = tu_read(p, &len);
  CHECKF(len == n * sizeof(float), "%s: %zu bytes, expected %zu", p, len, n * sizeof(float));
  double d = len == n * sizeof(float) ? max_abs_diff((const float *)(void *)b, want, n) : INFINITY;
  fprintf(stderr, "%-32s max|diff| vs the C generator %.3g\n", name, d);
  CHECKF(d <= PYFUNC_IMG_TOL, "%s differs from the C generator by %g", name, d);
  free(b);
  return d;
}

int main(void) {
  char *uri = test_mlflow_uri();
  char py[700];
  snprintf(py, sizeof py, "%s/.venv/bin/python", GF_SOURCE_DIR);
  REQUIRE(access(py, X_OK) == 0); /* deploy/install-deps.sh makes .venv */
  tu_fresh_dir(GF_TEST_TMP);
  char log[600], ck[600], dl[600], out[600], zpath[700];
  snprintf(log, sizeof log, "%s/train.log", GF_TEST_TMP);
  snprintf(ck, sizeof ck, "%s/ck", GF_TEST_TMP);
  snprintf(dl, sizeof dl, "%s/download", GF_TEST_TMP);
  snprintf(out, sizeof out, "%s/out", GF_TEST_TMP);
  tu_fresh_dir(out);

  /* 1. train a few steps and register with the alias */
  char *train[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "dcgan",
                   "--steps", "6", "--batch", "16", "--threads", "2",
                   "--sample-every", "0", "--eval-every", "0",
                   "--checkpoint-every", "6", "--checkpoint-dir", ck,
                   "--experiment", "pyfunc-integration", "--register-model", MODEL,
                   "--alias", ALIAS, NULL};
  int rc = run(train, log, uri);
  if (rc != 0) print_log(log);
  REQUIRE(rc == 0);

  /* 2. the C generator on the registered version */
  mlflow_client *c = test_client_of(uri);
  mlflow_error me;
  memset(&me, 0, sizeof me);
  CHECKF(mlflow_model_download(c, "models:/" MODEL "@" ALIAS, dl, NULL, &me) == MLFLOW_OK,
         "download: %s", me.message);
  mlflow_client_free(c);
  gf_generator_opts o = {GF_BACKEND_CPU, 0, 1, 2, N_SEEDS + N_Z, NULL,
                         GF_GEN_FP32};
  gf_generator *g = NULL;
  gf_err err = {GF_OK, ""};
  REQUIRE(gf_generator_load(dl, MODEL, "1", &o, &g, &err) == GF_OK);
  int zd = g->cfg.z_dim;
  size_t numel = g->image_numel;
  float *z = malloc((size_t)(N_SEEDS + N_Z) * (size_t)zd * sizeof *z);
  float *img = malloc((size_t)(N_SEEDS + N_Z) * numel * sizeof *img);
  REQUIRE(z && img);
  REQUIRE(gf_generator_latents(g, k_seeds, N_SEEDS, 1, z, &err) == GF_OK);
  for (int r = 0; r < N_Z; r++)
    for (int j = 0; j < zd; j++)
      z[(size_t)(N_SEEDS + r) * (size_t)zd + (size_t)j] = (float)cos(0.11 * (j + 3) * (r + 2));
  REQUIRE(gf_generator_run(g, 0, z, N_SEEDS + N_Z, img, &err) == GF_OK);
  gf_generator_unref(g);
  snprintf(zpath, sizeof zpath, "%s/z_in.f32", out);
  tu_write(zpath, z + (size_t)N_SEEDS * (size_t)zd, (size_t)N_Z * (size_t)zd * sizeof *z);

  /* 3. MLflow's side: pyfunc.load_model and `mlflow models serve` */
  char seeds[128];
  snprintf(seeds, sizeof seeds, "%llu,%llu,%llu", (unsigned long long)k_seeds[0],
           (unsigned long long)k_seeds[1], (unsigned long long)k_seeds[2]);
  char script[700], pylog[700];
  snprintf(script, sizeof script, "%s/tests/model/pyfunc_serve_check.py", GF_SOURCE_DIR);
  snprintf(pylog, sizeof pylog, "%s/check.log", GF_TEST_TMP);
  /* MLflow downloads models:/ URIs into a new folder of the temporary
   * directory and leaves it there: keep that inside the test's own */
  char pytmp[700];
  snprintf(pytmp, sizeof pytmp, "%s/pytmp", GF_TEST_TMP);
  tu_fresh_dir(pytmp);
  REQUIRE(setenv("TMPDIR", pytmp, 1) == 0);
  char *check[] = {py, script, "models:/" MODEL "@" ALIAS, seeds, zpath, out, NULL};
  rc = run(check, pylog, uri);
  print_log(pylog);
  CHECKF(rc == 0, "pyfunc_serve_check.py failed (%d)", rc);

  /* 4. every image against the C generator's */
  if (rc == 0) {
    const float *is = img, *iz = img + (size_t)N_SEEDS * numel;
    double worst = 0, d;
    static const char *const seed_files[] = {"pyfunc_seed.f32", "serve_split_seed.f32",
                                             "serve_records_seed.f32",
                                             "serve_inputs_records_seed.f32"};
    static const char *const z_files[] = {"pyfunc_z.f32", "serve_split_z.f32",
                                          "serve_records_z.f32", "serve_inputs_records_z.f32"};
    for (size_t i = 0; i < sizeof seed_files / sizeof *seed_files; i++)
      if ((d = compare(out, seed_files[i], is, N_SEEDS * numel)) > worst) worst = d;
    for (size_t i = 0; i < sizeof z_files / sizeof *z_files; i++)
      if ((d = compare(out, z_files[i], iz, N_Z * numel)) > worst) worst = d;
    /* The comparison can fail: seed 2's image is not seed 1's. */
    double miss = max_abs_diff(is, is + numel, numel);
    CHECKF(miss > 100 * PYFUNC_IMG_TOL, "images of different seeds agree (%g)", miss);
    fprintf(stderr, "worst max|diff| %.3g (tolerance %g); seeds 1 and 2 differ by %.3g\n",
            worst, PYFUNC_IMG_TOL, miss);
  }
  free(z);
  free(img);
  free(uri);
  return check_report();
}
