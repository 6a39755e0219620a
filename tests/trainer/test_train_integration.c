/* test_train_integration.c - the ganflow-train executable against the real
 * MLflow server of the `mlflow` ctest fixture, on Fashion-MNIST
 * (/usr/share/datasets/fashion-mnist; the test FAILS without it).
 *
 *   1. A full run (mlp, 60 steps): exit 0; the run FINISHED; params; loss/d
 *      has exactly one point per logged step; swd/ and system metrics;
 *      sample grids logged as MLflow images (checked through MLflow's own
 *      Python client: test_mlflow_images.py) and checkpoints uploaded; a
 *      READY model version with the alias, whose model directory downloads
 *      and verifies (gf_mlmodel_read) and which MLflow's own get_model_info reads with its signature.
 *   2. SIGTERM after the first logged step: exit 0, run KILLED, a checkpoint
 *      on disk; the same command again resumes into the same run id,
 *      finishes, and loss/d still has exactly one point per logged step
 *      (exactly-once across the resume); the final checkpoint's tensors are
 *      byte-identical to run 1's in the same configuration.
 *   3. A class-conditional run (--cond, 10 steps) registered with an alias:
 *      its downloaded model directory verifies and carries Fashion-MNIST's
 *      ten class names (config.json and MLmodel) and the signature's class
 *      column; the names look up to their labels. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

#include "check.h"
#include "fashion.h"
#include "proc_util.h"
#include "gf/checkpoint.h"
#include "gf/mlmodel.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"


static char g_uri[512];

/* Starts ganflow-train with args (NULL-terminated), stderr+stdout into log. */
static pid_t spawn(const char *log, char *const *args) {
  return tu_spawn_log(log, args, NULL, NULL, 0);
}

static int wait_rc(pid_t pid) { return tu_wait_rc(pid); }

static void dump_log(const char *log) {
  char *text = NULL;
  FILE *f = fopen(log, "r");
  if (!f) return;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  text = calloc(1, (size_t)n + 1);
  if (text && fread(text, 1, (size_t)n, f) == (size_t)n)
    fprintf(stderr, "---- %s ----\n%s----\n", log, text);
  free(text);
  fclose(f);
}

static bool log_contains(const char *log, const char *needle) {
  FILE *f = fopen(log, "r");
  if (!f) return false;
  char line[1024];
  bool found = false;
  while (!found && fgets(line, sizeof line, f)) found = strstr(line, needle);
  fclose(f);
  return found;
}

static double mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* key must hold exactly the steps first, first+every, ..., steps (first is
 * every, or 0 for the SWD, which also rates the untrained generator). */
static void check_history(mlflow_client *c, const char *run_id,
                          const char *key, int64_t first, int64_t every,
                          int64_t steps) {
  mlflow_metric_list h;
  mlflow_error e;
  REQUIRE(mlflow_metric_history(c, run_id, key, &h, &e) == MLFLOW_OK);
  int64_t want = (steps - first) / every + 1;
  CHECKF((int64_t)h.count == want, "%s: %zu points, want %lld", key, h.count,
         (long long)want);
  for (size_t i = 0; i < h.count; i++)
    CHECKF(h.items[i].step == first + (int64_t)i * every,
           "%s point %zu at step %lld", key, i, (long long)h.items[i].step);
  mlflow_metric_list_free(&h);
}

static bool has_metric(const mlflow_run *r, const char *prefix) {
  for (size_t i = 0; i < r->n_metrics; i++)
    if (strncmp(r->metrics[i].key, prefix, strlen(prefix)) == 0) return true;
  return false;
}

static bool has_artifact(const mlflow_file_list *l, const char *path) {
  for (size_t i = 0; i < l->count; i++)
    if (strcmp(l->items[i].path, path) == 0) return true;
  return false;
}

/* The tensor bytes of a checkpoint (digest of the data buffer). */
static bool ckpt_digest(const char *path, char out[65]) {
  gf_st_file f;
  gf_st_file_init(&f);
  gf_err err;
  if (gf_st_open(&f, path, GF_ST_VERIFY_SHA256, &err) != GF_OK) return false;
  const char *d = NULL;
  for (size_t i = 0; i < f.n_meta; i++)
    if (strcmp(f.meta[i].key, GF_ST_DATA_SHA256_KEY) == 0) d = f.meta[i].value;
  if (d) snprintf(out, 65, "%s", d);
  gf_st_file_free(&f);
  return d != NULL;
}

/* MLflow's own client reads the registered version: get_model_info on
 * models:/NAME/VERSION finds the signature (columns seed long and z
 * array<double>, both optional -> tensor image float32 [-1, 1, 28, 28]),
 * the run and the python_function flavor. Needs the checkout's .venv (made by
 * deploy/install-deps.sh); without it the check is reported as not run. */
static void check_model_info(const char *model, const char *version,
                             const char *run_id) {
  char py[1024];
  snprintf(py, sizeof py, "%s/.venv/bin/python", GF_SOURCE_DIR);
  if (access(py, X_OK) != 0) {
    fprintf(stderr, "NOTE: %s missing: mlflow.models.get_model_info not "
            "checked\n", py);
    return;
  }
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "'%s' -c \"import sys, numpy as np, mlflow\n"
           "i = mlflow.models.get_model_info('models:/%s/%s')\n"
           "s = i.signature\n"
           "print(s.to_dict())\n"
           "a, b = s.inputs.inputs, s.outputs.inputs\n"
           "from mlflow.types.schema import Array\n"
           "assert [(t.name, t.type, t.required) for t in a] == "
           "[('seed', mlflow.types.DataType.long, False), "
           "('z', Array(mlflow.types.DataType.double), False)], a\n"
           "assert [(t.name, t.type, t.shape) for t in b] == "
           "[('image', np.dtype('float32'), (-1, 1, 28, 28))], b\n"
           "assert i.run_id == '%s', i.run_id\n"
           "assert 'ganflow' in i.flavors, i.flavors\n"
           "assert i.flavors['python_function']['loader_module'] == "
           "'ganflow_pyfunc', i.flavors\n\"", py, model, version,
           run_id);
  int rc = system(cmd);
  CHECKF(rc == 0, "mlflow.models.get_model_info(models:/%s/%s) check failed "
         "(%d)", model, version, rc);
}

/* Runs tests/trainer/<script> with the checkout's .venv python, the
 * tracking URI first and args after it, echoing its output; 1 when it
 * exits 0. */
static int run_python_check(const char *script, const char *args) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s/.venv/bin/python' '%s/tests/trainer/%s' "
           "'%s' %s 2>&1", GF_SOURCE_DIR, GF_SOURCE_DIR, script, g_uri, args);
  FILE *p = popen(cmd, "r");
  REQUIRE(p);
  char line[1024];
  while (fgets(line, sizeof line, p)) fprintf(stderr, "  %s", line);
  int rc = pclose(p);
  if (rc != 0) fprintf(stderr, "  (%s: status %d)\n", script, rc);
  return rc == 0;
}

/* The sample grids as MLflow's own Python client sees them
 * (test_mlflow_images.py): log_image names with key "samples" at exactly
 * `steps`, PNG + compressed WebP pairs, the tag mlflow.loggedImages, a
 * preview as log_image would make it. */
static void check_images(const char *run_id, const char *steps) {
  char args[512];
  snprintf(args, sizeof args, "'%s' '%s'", run_id, steps);
  CHECKF(run_python_check("test_mlflow_images.py", args),
         "MLflow's Python client does not see the sample grids as logged "
         "images");
}

/* MLflow's Python client sees the generator as a logged model of the run,
 * with its files, linked SWD and the registry version made from it. */
static void check_logged_model(const char *run_id, const char *name,
                               const char *version) {
  char args[512];
  snprintf(args, sizeof args, "'%s' '%s' '%s'", run_id, name, version);
  CHECKF(run_python_check("test_mlflow_logged_model.py", args),
         "MLflow's Python client does not see the logged model");
}

static void full_run(mlflow_client *c, char final_digest[65]) {
  char exp[128], model[128], dir[1024], log[1100];
  test_unique(exp, sizeof exp, "train-it");
  test_unique(model, sizeof model, "train-it-model");
  snprintf(dir, sizeof dir, "%s/full", GF_TEST_TMP);
  snprintf(log, sizeof log, "%s/full.log", GF_TEST_TMP);
  char *args[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                  "--steps", "60", "--batch", "32", "--log-every", "10",
                  "--sample-every", "30", "--eval-every", "30",
                  "--checkpoint-every", "20", "--threads", "2",
                  "--checkpoint-dir", dir, "--experiment", exp,
                  "--register-model", model, "--alias", "candidate", NULL};
  double t0 = mono_s();
  int rc = wait_rc(spawn(log, args));
  fprintf(stderr, "full run: %.1f s\n", mono_s() - t0);
  CHECK_INT_EQ(rc, 0);
  if (rc != 0) dump_log(log);

  char path[1200];
  /* the model directory written for the upload is gone, code/ included */
  snprintf(path, sizeof path, "%s/.model-tmp", dir);
  CHECKF(access(path, F_OK) != 0, "%s is left behind", path);
  snprintf(path, sizeof path, "%s/run_id", dir);
  char *run_id = test_read_text(path);
  REQUIRE(run_id && strlen(run_id) == 32);
  mlflow_run run;
  mlflow_error e;
  REQUIRE(mlflow_run_get(c, run_id, &run, &e) == MLFLOW_OK);
  CHECK(run.info.status == MLFLOW_RUN_FINISHED);
  CHECK(run.info.end_time_ms > 0);
  CHECK_STR_EQ(mlflow_run_param(&run, "model"), "mlp");
  CHECK_STR_EQ(mlflow_run_param(&run, "steps"), "60");
  CHECK_STR_EQ(mlflow_run_param(&run, "z_dim"), "50");
  CHECK_STR_EQ(mlflow_run_param(&run, "lr_g"), "0.0002");
  CHECK_STR_EQ(mlflow_run_tag(&run, "ganflow.version"), "0.1.0");
  CHECK(mlflow_run_tag(&run, "ganflow.device") != NULL);
  CHECK_STR_EQ(mlflow_run_tag(&run, "ganflow.world_size"), "1");
  CHECK(has_metric(&run, "swd/avg"));
  CHECK(has_metric(&run, "swd/28"));
  CHECK(has_metric(&run, "system/cpu_utilization_percentage"));
  /* one rank on the CPU: no all-reduce share, no GPU figures */
  CHECK(!has_metric(&run, "system/step_allreduce_seconds"));
  CHECK(!has_metric(&run, "system/gpu_"));
  CHECK(has_metric(&run, "perf/images_per_sec"));
  CHECK(has_metric(&run, "d/real"));
  check_history(c, run_id, "loss/d", 10, 10, 60);
  check_history(c, run_id, "loss/g", 10, 10, 60);
  check_history(c, run_id, "perf/images_per_sec", 10, 10, 60);
  check_history(c, run_id, "perf/data_wait_s", 10, 10, 60);
  check_history(c, run_id, "perf/compute_s", 10, 10, 60);
  check_history(c, run_id, "swd/avg", 0, 30, 60);

  mlflow_file_list l;
  REQUIRE(mlflow_artifact_list(c, run.info.artifact_uri, NULL, 1, &l, &e) ==
          MLFLOW_OK);
  CHECK(!has_artifact(&l, "samples")); /* grids are MLflow images now */
  CHECK(has_artifact(&l, "checkpoints/ckpt-000000000020.safetensors"));
  CHECK(has_artifact(&l, "checkpoints/ckpt-000000000060.safetensors"));
  /* MLflow 3: the generator is a logged model, not a run artifact */
  CHECK(!has_artifact(&l, "model/MLmodel"));
  mlflow_file_list_free(&l);

  check_images(run_id, "0,30,60");

  mlflow_model_version mv;
  REQUIRE(mlflow_alias_get(c, model, "candidate", &mv, &e) == MLFLOW_OK);
  CHECK_STR_EQ(mv.status, "READY");
  CHECK_STR_EQ(mv.run_id, run_id);
  check_model_info(model, mv.version, run_id);
  check_logged_model(run_id, model, mv.version);
  mlflow_model_version_free(&mv);
  char uri[400], mdir[1200];
  snprintf(uri, sizeof uri, "models:/%s@candidate", model);
  snprintf(mdir, sizeof mdir, "%s/downloaded-model", GF_TEST_TMP);
  CHECK(mlflow_model_download(c, uri, mdir, NULL, &e) == MLFLOW_OK);
  gf_mlmodel m;
  gf_err gerr;
  CHECKF(gf_mlmodel_read(mdir, &m, &gerr) == GF_OK, "%s", gerr.msg);
  CHECK_STR_EQ(m.run_id, run_id);
  CHECK(m.config.architecture == GF_ARCH_MLP);
  CHECK_INT_EQ(m.config.z_dim, 50);
  gf_mlmodel_free(&m);

  snprintf(path, sizeof path, "%s/ckpt-000000000060.safetensors", dir);
  CHECK(ckpt_digest(path, final_digest));
  mlflow_run_free(&run);
  free(run_id);
  test_drop_artifacts(c, exp);
}

/* Reads the hex mask after `field` ("SigBlk:", "SigCgt:") in a
 * /proc/.../status file; false when absent. */
static bool status_mask(const char *path, const char *field,
                        unsigned long long *out) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char line[256];
  bool ok = false;
  size_t n = strlen(field);
  while (!ok && fgets(line, sizeof line, f))
    if (!strncmp(line, field, n))
      ok = sscanf(line + n, "%llx", out) == 1;
  fclose(f);
  return ok;
}

/* The system call a thread is blocked in (/proc/.../syscall), -1 if none
 * could be read. */
static long thread_syscall(const char *task_dir) {
  char path[400];
  snprintf(path, sizeof path, "%s/syscall", task_dir);
  FILE *f = fopen(path, "r");
  long nr = -1;
  if (f) {
    if (fscanf(f, "%ld", &nr) != 1) nr = -1;
    fclose(f);
  }
  return nr;
}

/* While training runs, no thread may take SIGTERM/SIGINT asynchronously:
 * both are blocked in every thread (the OpenMP workers included) and no
 * handler is installed; one thread takes them in sigwait() (the kernel
 * shows them unblocked there while it waits in rt_sigtimedwait). Returns
 * the number of threads seen, 0 when /proc could not be read. */
static int check_signal_masks(pid_t pid) {
  unsigned long long want = (1ULL << (SIGTERM - 1)) | (1ULL << (SIGINT - 1));
  char dir[64];
  snprintf(dir, sizeof dir, "/proc/%d/task", (int)pid);
  DIR *d = opendir(dir);
  if (!d) return 0;
  int threads = 0, waiting = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char task[330], path[350];
    unsigned long long blk = 0, cgt = 0;
    snprintf(task, sizeof task, "%s/%s", dir, e->d_name);
    snprintf(path, sizeof path, "%s/status", task);
    if (!status_mask(path, "SigBlk:", &blk) ||
        !status_mask(path, "SigCgt:", &cgt))
      continue; /* the thread ended meanwhile */
    threads++;
    CHECKF((cgt & want) == 0, "thread %s: SigCgt %llx: a handler is "
           "installed for SIGTERM/SIGINT", e->d_name, cgt);
    if ((blk & want) == want) continue;
    long nr = thread_syscall(task);
    waiting++;
    CHECKF(nr == SYS_rt_sigtimedwait, "thread %s: SigBlk %llx lacks "
           "SIGTERM/SIGINT and it is not in sigwait (syscall %ld)",
           e->d_name, blk, nr);
  }
  closedir(d);
  CHECKF(waiting <= 1, "%d threads take SIGTERM/SIGINT", waiting);
  return threads;
}

/* Same configuration as full_run but longer intervals so the signal lands
 * early; the final state must still equal an uninterrupted run's. */
static void sigterm_run(mlflow_client *c) {
  char exp[128], dir[1024], log[1100];
  test_unique(exp, sizeof exp, "train-sig");
  snprintf(dir, sizeof dir, "%s/sig", GF_TEST_TMP);
  snprintf(log, sizeof log, "%s/sig.log", GF_TEST_TMP);
  char *args[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "mlp",
                  "--steps", "100", "--batch", "16", "--log-every", "10",
                  "--sample-every", "0", "--eval-every", "0",
                  "--checkpoint-every", "50", "--threads", "2",
                  "--checkpoint-dir", dir, "--experiment", exp,
                  "--register-model", "", NULL};
  pid_t pid = spawn(log, args);
  double t0 = mono_s();
  while (!log_contains(log, "step 10/") && mono_s() - t0 < 60) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  /* main, signal, loader, uploader, logger, monitor and an OpenMP worker */
  int threads = check_signal_masks(pid);
  CHECKF(threads >= 5, "%d threads seen in /proc", threads);
  /* A second trainer on the same checkpoint directory is refused (exit 2,
   * naming the first) before it touches anything; the first goes on. */
  char log2[1100], who[96];
  snprintf(log2, sizeof log2, "%s/sig-second.log", GF_TEST_TMP);
  int rc2 = wait_rc(spawn(log2, args));
  CHECK_INT_EQ(rc2, 2);
  snprintf(who, sizeof who, "in use by another ganflow-train (pid %d)",
           (int)pid);
  CHECKF(log_contains(log2, who), "the second trainer's log lacks \"%s\"",
         who);
  if (rc2 != 2) dump_log(log2);
  CHECK(kill(pid, 0) == 0);
  CHECK(kill(pid, SIGTERM) == 0);
  int rc = wait_rc(pid);
  CHECK_INT_EQ(rc, 0);
  CHECK(log_contains(log, "stopped by a signal"));
  if (rc != 0 || !log_contains(log, "stopped by a signal")) dump_log(log);

  char path[1200], latest[1200];
  snprintf(path, sizeof path, "%s/run_id", dir);
  char *run_id = test_read_text(path);
  REQUIRE(run_id);
  mlflow_run run;
  mlflow_error e;
  REQUIRE(mlflow_run_get(c, run_id, &run, &e) == MLFLOW_OK);
  CHECK(run.info.status == MLFLOW_RUN_KILLED);
  mlflow_run_free(&run);
  gf_ckpt_meta meta;
  gf_err gerr;
  CHECKF(gf_checkpoint_find_latest(dir, latest, sizeof latest, &meta, NULL,
                                   NULL, 0, &gerr) == GF_OK, "%s", gerr.msg);
  CHECK(meta.step >= 10 && meta.step < 100);
  CHECK_STR_EQ(meta.run_id, run_id);

  /* The same command resumes into the same run and finishes. */
  snprintf(log, sizeof log, "%s/sig-resume.log", GF_TEST_TMP);
  rc = wait_rc(spawn(log, args));
  CHECK_INT_EQ(rc, 0);
  CHECK(log_contains(log, "resuming from"));
  if (rc != 0) dump_log(log);
  char *run_id2 = test_read_text(path);
  CHECK_STR_EQ(run_id2, run_id);
  REQUIRE(mlflow_run_get(c, run_id, &run, &e) == MLFLOW_OK);
  CHECK(run.info.status == MLFLOW_RUN_FINISHED);
  CHECK(has_metric(&run, "system/"));
  mlflow_run_free(&run);
  check_history(c, run_id, "loss/d", 10, 10, 100);
  check_history(c, run_id, "d/fake", 10, 10, 100);

  /* Bit-identical to an uninterrupted run of the same configuration. */
  char dir2[1100], final1[1200], final2[1200], d1[65] = "", d2[65] = "";
  snprintf(dir2, sizeof dir2, "%s/sig-ref", GF_TEST_TMP);
  args[20] = dir2;
  snprintf(log, sizeof log, "%s/sig-ref.log", GF_TEST_TMP);
  rc = wait_rc(spawn(log, args));
  CHECK_INT_EQ(rc, 0);
  snprintf(final1, sizeof final1, "%s/ckpt-000000000100.safetensors", dir);
  snprintf(final2, sizeof final2, "%s/ckpt-000000000100.safetensors", dir2);
  CHECK(ckpt_digest(final1, d1));
  CHECK(ckpt_digest(final2, d2));
  CHECKF(strcmp(d1, d2) == 0, "resumed %s vs uninterrupted %s", d1, d2);
  free(run_id);
  free(run_id2);
  test_drop_artifacts(c, exp);
}

static void cond_run(mlflow_client *c) {
  static const char *const names[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress",
                                        "Coat",        "Sandal",  "Shirt",    "Sneaker",
                                        "Bag",         "Ankle boot"};
  char exp[128], model[128], dir[1024], log[1100];
  test_unique(exp, sizeof exp, "train-it-cond");
  test_unique(model, sizeof model, "train-it-cond-model");
  snprintf(dir, sizeof dir, "%s/cond", GF_TEST_TMP);
  snprintf(log, sizeof log, "%s/cond.log", GF_TEST_TMP);
  /* "fashion-mnist:DIR": the IDX files with Fashion-MNIST's class names */
  char *args[] = {GF_TRAIN_BIN, "--data", "fashion-mnist:" FASHION, "--model", "mlp", "--cond",
                  "--steps", "10", "--batch", "32", "--sample-every", "0",
                  "--eval-every", "0", "--checkpoint-every", "10", "--threads", "2",
                  "--checkpoint-dir", dir, "--experiment", exp,
                  "--register-model", model, "--alias", "candidate", NULL};
  int rc = wait_rc(spawn(log, args));
  CHECK_INT_EQ(rc, 0);
  if (rc != 0) dump_log(log);
  char uri[400], mdir[1200];
  snprintf(uri, sizeof uri, "models:/%s@candidate", model);
  snprintf(mdir, sizeof mdir, "%s/downloaded-cond-model", GF_TEST_TMP);
  mlflow_error e;
  CHECK(mlflow_model_download(c, uri, mdir, NULL, &e) == MLFLOW_OK);
  gf_mlmodel m;
  gf_err gerr;
  CHECKF(gf_mlmodel_read(mdir, &m, &gerr) == GF_OK, "%s", gerr.msg);
  CHECK_INT_EQ(m.config.num_classes, 10);
  CHECK_INT_EQ(m.n_class_names, 10);
  for (int k = 0; k < m.n_class_names && k < 10; k++) CHECK_STR_EQ(m.class_names[k], names[k]);
  CHECK(m.n_sig_inputs == 3 && strcmp(m.sig_inputs[2].name, GF_MLMODEL_SIG_CLASS) == 0);
  int label = -1;
  CHECK(gf_mlmodel_class_index(&m, "Ankle boot", &label, &gerr) == GF_OK && label == 9);
  gf_mlmodel_free(&m);
  mlflow_registered_model_delete(c, model, &e);
  test_drop_artifacts(c, exp);
}

int main(void) {
  if (!tu_have_fashion()) return 1;
  char *uri = test_mlflow_uri();
  snprintf(g_uri, sizeof g_uri, "%s", uri);
  free(uri);
  tu_fresh_dir(GF_TEST_TMP);
  setenv("MLFLOW_TRACKING_URI", g_uri, 1);
  /* Short: on a fast machine the SIGTERM'd run and its resume each train
   * for well under half a second, and the run must still hold system/
   * samples. */
  setenv("MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL", "0.05", 1);
  test_tracking_env(NULL);

  mlflow_client *c = test_client_of(g_uri);
  char digest[65] = "";
  full_run(c, digest);
  sigterm_run(c);
  cond_run(c);
  mlflow_client_free(c);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
