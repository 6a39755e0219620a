/* test_train_sg2.c - ganflow-train --model stylegan2 end to end against the
 * `mlflow` fixture, on Fashion-MNIST resized to 32x32 with a tiny network
 * (--cbase 256 --cmax 16, z 16, 2 mapping layers, batch 4):
 *   1. the reference: STEPS steps with ADA (a low --ada-target and a short
 *      --ada-kimg, so p moves within the run) finishes, logs ada/p and the
 *      losses at every --log-every step once, registers a version that
 *      `ganflow generate` turns into a PNG;
 *   2. kill -9 at a random step past a random checkpoint, then the same
 *      command: it resumes into the same MLflow run and its final
 *      checkpoint is byte-identical to the reference's, tensor by tensor
 *      (ADA's p, the image counter and the Adam moments included), and
 *      every (key, step) of the run is logged once.
 * Under a minute on 2 cores. GF_SG2_TEST_SEED picks the kill plan. */
#include <signal.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "gf/checkpoint.h"
#include "gf/safetensors.h"
#include "gf/train.h"
#include "mlflow_test.h"
#include "train_test_util.h"

#define STEPS 24
#define LOG_EVERY 2
#define CKPT_EVERY 4

static char g_uri[512];

/* The run's flags besides its place. */
static void sg2_cmd(tu_job *j) {
  static const char *const flags[] = {
      "--data", FASHION, "--model", "stylegan2", "--image-size", "32",
      "--cbase", "256", "--cmax", "16", "--z-dim", "16", "--map-layers", "2",
      "--batch", "4", "--ada-target", "0.01", "--ada-kimg", "0.05",
      "--sample-every", "12", "--eval-every", "0", "--threads", "2",
      "--seed", "5", NULL};
  tu_add(&j->c, GF_TRAIN_BIN);
  tu_add_all(&j->c, flags);
  tu_run_flags(&j->c, STEPS, LOG_EVERY, CKPT_EVERY, j->dir, j->exp);
  tu_add(&j->c, "--register-model");
  tu_add(&j->c, j->exp);
}

/* A scalar tensor of a checkpoint as a double (F32, F64 or I64). */
static double ckpt_scalar(const char *path, const char *name) {
  gf_st_file f;
  gf_st_file_init(&f);
  gf_err err;
  double v = NAN;
  if (gf_st_open(&f, path, GF_ST_VERIFY_SHA256, &err) != GF_OK) {
    CHECKF(false, "%s: %s", path, err.msg);
    return v;
  }
  const gf_st_tensor *t = gf_st_find(&f, name);
  CHECKF(t != NULL, "%s: no %s", path, name);
  if (t && t->dtype == GF_ST_F32) {
    float x;
    memcpy(&x, t->data, 4);
    v = x;
  } else if (t && t->dtype == GF_ST_F64) {
    memcpy(&v, t->data, 8);
  } else if (t && t->dtype == GF_ST_I64) {
    int64_t x;
    memcpy(&x, t->data, 8);
    v = (double)x;
  }
  gf_st_file_free(&f);
  return v;
}

static void final_path(char *out, size_t cap, const tu_job *j) {
  snprintf(out, cap, "%s/" GF_CKPT_NAME_FMT, j->dir, (long long)STEPS);
}

static void reference(mlflow_client *c, tu_job *ref) {
  double t0 = mono_s();
  tu_job_init(ref, GF_TEST_TMP, "sg2", "ref");
  sg2_cmd(ref);
  int rc = tu_wait_child(tu_spawn_trainer(ref->c.argv, ref->log, g_uri, NULL),
                         120, ref->log);
  CHECKF(rc == 0, "reference run: exit %d", rc);
  if (rc != 0) dump_log(ref->log);
  REQUIRE(rc == 0);
  char id[64];
  tu_one_run(c, ref->exp, MLFLOW_RUN_FINISHED, id, sizeof id, "reference");
  check_history(c, id, "ada/p", LOG_EVERY, STEPS, "reference");
  check_history(c, id, "loss/d", LOG_EVERY, STEPS, "reference");
  check_history(c, id, "loss/g", LOG_EVERY, STEPS, "reference");
  char fin[1200];
  final_path(fin, sizeof fin, ref);
  double p = ckpt_scalar(fin, "state.ada_p");
  double nimg = ckpt_scalar(fin, "state.cur_nimg");
  CHECKF(p > 0, "ADA's p did not move (%g)", p);
  CHECKF(nimg == STEPS * 4, "image counter %g, want %d", nimg, STEPS * 4);
  CHECK(log_contains(ref->log, "registered models:/"));
  /* the registered version serves: ganflow generate writes a PNG */
  char png[1200], cmd[4096], cache[1200];
  snprintf(png, sizeof png, "%s/gen.png", GF_TEST_TMP);
  snprintf(cache, sizeof cache, "%s/cache", GF_TEST_TMP);
  snprintf(cmd, sizeof cmd, "MLFLOW_TRACKING_URI='%s' '%s' generate --model "
           "'models:/%s/1' --seed 3 -n 4 -o '%s' --cache-dir '%s'", g_uri,
           GF_GANFLOW_BIN, ref->exp, png, cache);
  CHECKF(system(cmd) == 0, "%s failed", cmd);
  size_t len = 0;
  char *bytes = read_all(png, &len);
  CHECKF(bytes && len > 8 && memcmp(bytes, "\x89PNG", 4) == 0,
         "%s is not a PNG", png);
  free(bytes);
  fprintf(stderr, "[reference] %d steps, ada/p %g: %.1f s\n", STEPS, p,
          mono_s() - t0);
}

static void kill_and_resume(mlflow_client *c, const tu_job *ref,
                            unsigned seed) {
  double t0 = mono_s();
  tu_job j;
  tu_job_init(&j, GF_TEST_TMP, "sg2", "kill");
  sg2_cmd(&j);
  long ckpt = CKPT_EVERY * (1 + (long)(seed % 3));   /* 4, 8 or 12 */
  long past = ckpt + 1 + (long)(seed / 3 % 5);       /* a step or more on */
  bool ended = false;
  long at = 0;
  pid_t pid = tu_spawn_trainer(j.c.argv, j.log, g_uri, NULL);
  int rc = tu_kill_past(pid, j.dir, ckpt, j.log, past - past % LOG_EVERY, 120,
                        &ended, &at);
  CHECKF(!ended && rc == 128 + SIGKILL, "kill: exit %d (ended by itself: %d)",
         rc, ended);
  fprintf(stderr, "[kill] killed at log step %ld, newest checkpoint %ld\n",
          at, newest_ckpt_on_disk(j.dir));
  char first_id[64] = "";
  test_run_id_file(j.dir, first_id, sizeof first_id);
  char log2[1200];
  snprintf(log2, sizeof log2, "%s/kill-resume.log", GF_TEST_TMP);
  rc = tu_wait_child(tu_spawn_trainer(j.c.argv, log2, g_uri, NULL), 120,
                     log2);
  CHECKF(rc == 0, "resume: exit %d", rc);
  if (rc != 0) dump_log(log2);
  CHECK(log_contains(log2, "resuming from"));
  char id[64];
  tu_one_run(c, j.exp, MLFLOW_RUN_FINISHED, id, sizeof id, "kill");
  CHECKF(strcmp(id, first_id) == 0, "resumed into run %s, not %s", id,
         first_id);
  check_history(c, id, "ada/p", LOG_EVERY, STEPS, "kill");
  check_history(c, id, "loss/d", LOG_EVERY, STEPS, "kill");
  CHECK(check_exactly_once(c, id, "kill", NULL) > 0);
  char got[1200], want[1200];
  final_path(got, sizeof got, &j);
  final_path(want, sizeof want, ref);
  tu_compare_sg2_states(got, want, "kill: resumed run");
  fprintf(stderr, "[kill] %.1f s\n", mono_s() - t0);
}

int main(void) {
  if (!tu_have_fashion()) return 1;
  const char *s = getenv("GF_SG2_TEST_SEED");
  unsigned seed = s && *s ? (unsigned)strtoul(s, NULL, 0)
                          : (unsigned)time(NULL);
  fprintf(stderr, "GF_SG2_TEST_SEED=%u (kill plan)\n", seed);
  char *uri = test_mlflow_uri();
  snprintf(g_uri, sizeof g_uri, "%s", uri);
  free(uri);
  tu_trainer_test_start(GF_TEST_TMP);
  mlflow_client *c = test_client_of(g_uri);
  tu_job ref;
  reference(c, &ref);
  kill_and_resume(c, &ref, seed);
  mlflow_client_free(c);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
