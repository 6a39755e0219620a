/* test_train_auto.c - ganflow-train --auto (issue 26, deliverable 3)
 * through the executable: dcgan --width 8 on Fashion-MNIST (the test FAILS
 * without it), STEPS steps of --batch 16, against the MLflow server of the
 * `mlflow` ctest fixture; 2 ranks under the real mpirun (oversubscribed).
 *
 *   0. The choice's file format in-process (train_auto_parse): a written
 *      choice reads back; each broken form is GF_EFORMAT.
 *   1. --auto at 1 rank: the params auto, auto_threads, auto_bucket_kb,
 *      auto_allreduce and auto_measured, threads/allreduce equal to the
 *      choice, <checkpoint-dir>/auto saying the same, the log line; then
 *      the same run with the chosen values as flags and no --auto: final
 *      checkpoints byte-identical (the trial steps left no trace: no data
 *      consumed, no state changed).
 *   2. The same at 2 ranks under mpirun (bucket size and algorithm tuned).
 *   3. kill -9 of a 1-rank --auto run after its first checkpoint, then the
 *      same command again: the second process measures nothing (its log
 *      says it took the run's choice from the file, which is unchanged),
 *      one FINISHED run whose params are the choice, and the final
 *      checkpoint byte-identical to scenario 1's uninterrupted --auto run
 *      (or, when the two measured runs chose differently, to a run with
 *      the killed run's values as flags).
 *
 * Skips (77) when this build has no MPI or mpirun is missing. ~20-40 s. */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fashion.h"
#include "file_util.h"
#include "gf/checkpoint.h"
#include "gf/comm.h"
#include "gf/safetensors.h"
#include "mlflow_test.h"
#include "train_state.h"
#include "train_test_util.h"
#include "wait_util.h"

#define STEPS 160
#define LOG_EVERY 10
#define KILL_CKPT_EVERY 40
#define RUN_TIMEOUT_S 300

typedef struct suite {
  char uri[512];
  char mpirun[1024];
  mlflow_client *mc;
} suite;

/* What a run chose: its params. */
typedef struct choice {
  char threads[32], bucket_kb[32], allreduce[32], measured[1024];
} choice;

static void job_init(tu_job *j, const char *name) {
  tu_job_init(j, GF_TEST_TMP, "auto", name);
}

/* mpirun -np ranks (0: one process), the trainer's fixed flags, checkpoints
 * every ckpt_every (0: the last only). */
static void job_cmd(tu_job *j, const suite *s, int ranks, int ckpt_every) {
  tu_cmd *c = &j->c;
  tu_mpirun(c, s->mpirun, ranks, NULL);
  const char *fixed[] = {GF_TRAIN_BIN, "--data", FASHION, "--model", "dcgan",
                         "--width", "8", "--batch", "16", "--seed", "5",
                         "--sample-every", "0", "--eval-every", "0",
                         "--check-every", "20", "--register-model", "",
                         "--keep", "10", NULL};
  tu_add_all(c, fixed);
  tu_run_flags(c, STEPS, LOG_EVERY, ckpt_every, j->dir, j->exp);
}

static pid_t spawn(const suite *s, const tu_job *j, const char *log) {
  return tu_spawn_trainer(j->c.argv, log, s->uri, NULL);
}

static int run_wait(pid_t pid, const char *log) {
  return tu_wait_child(pid, RUN_TIMEOUT_S, log);
}

static bool run_ok(const suite *s, const tu_job *j, const char *log) {
  if (!log) log = j->log;
  double t0 = mono_s();
  int rc = run_wait(spawn(s, j, log), log);
  fprintf(stderr, "[%s] exit %d after %.1f s\n", j->name, rc, mono_s() - t0);
  CHECKF(rc == 0, "%s: exit %d (log %s)", j->name, rc, log);
  if (rc != 0) dump_log(log);
  return rc == 0;
}

static void final_of(const tu_job *j, char *out, size_t cap) {
  snprintf(out, cap, "%s/" GF_CKPT_NAME_FMT, j->dir, (long long)STEPS);
}

/* The run's --auto params into *c; checks they are there and that threads
 * and allreduce (what runs) are the choice. */
static bool read_choice(const suite *s, const char *run_id, choice *c,
                        const char *what) {
  memset(c, 0, sizeof *c);
  mlflow_run r;
  mlflow_error e;
  mlflow_status ms = mlflow_run_get(s->mc, run_id, &r, &e);
  CHECKF(ms == MLFLOW_OK, "%s: runs/get: %s", what, e.message);
  if (ms != MLFLOW_OK) return false;
  const char *keys[] = {"auto", "auto_threads", "auto_bucket_kb",
                        "auto_allreduce", "auto_measured", "threads",
                        "allreduce"};
  const char *v[7];
  bool all = true;
  for (int i = 0; i < 7; i++) {
    v[i] = mlflow_run_param(&r, keys[i]);
    CHECKF(v[i] != NULL, "%s: no param %s", what, keys[i]);
    all = all && v[i];
  }
  if (all) {
    CHECKF(strcmp(v[0], "true") == 0, "%s: auto=%s", what, v[0]);
    CHECKF(strcmp(v[5], v[1]) == 0, "%s: threads=%s but auto_threads=%s", what,
           v[5], v[1]);
    CHECKF(strcmp(v[6], v[3]) == 0, "%s: allreduce=%s but auto_allreduce=%s",
           what, v[6], v[3]);
    CHECKF(atoi(v[1]) >= 1, "%s: auto_threads=%s", what, v[1]);
    snprintf(c->threads, sizeof c->threads, "%s", v[1]);
    snprintf(c->bucket_kb, sizeof c->bucket_kb, "%s", v[2]);
    snprintf(c->allreduce, sizeof c->allreduce, "%s", v[3]);
    snprintf(c->measured, sizeof c->measured, "%s", v[4]);
    fprintf(stderr, "[%s] chose threads %s, bucket_kb %s, allreduce %s; "
            "measured %s\n", what, c->threads, c->bucket_kb, c->allreduce,
            c->measured);
  }
  mlflow_run_free(&r);
  return all;
}

/* <dir>/auto holds the choice c. Its text into text (may be NULL). */
static void check_file(const tu_job *j, const choice *c, char **text) {
  char path[1200];
  snprintf(path, sizeof path, "%s/auto", j->dir);
  size_t len = 0;
  char *t = read_all(path, &len);
  CHECKF(t != NULL, "%s: no %s", j->name, path);
  if (!t) return;
  train_auto_choice a;
  gf_err err;
  gf_status st = train_auto_parse(t, len, &a, &err);
  CHECKF(st == GF_OK, "%s: %s: %s", j->name, path, err.msg);
  if (st == GF_OK) {
    char th[32], kb[32];
    snprintf(th, sizeof th, "%d", a.threads);
    snprintf(kb, sizeof kb, "%d", a.bucket_kb);
    CHECKF(strcmp(th, c->threads) == 0 && strcmp(kb, c->bucket_kb) == 0 &&
               strcmp(gf_allreduce_algo_name(a.allreduce), c->allreduce) ==
                   0 &&
               strcmp(a.measured, c->measured) == 0,
           "%s: the file says %d/%d/%s/%s, the params %s/%s/%s/%s", j->name,
           a.threads, a.bucket_kb, gf_allreduce_algo_name(a.allreduce),
           a.measured, c->threads, c->bucket_kb, c->allreduce, c->measured);
  }
  if (text) *text = t;
  else free(t);
}

/* --auto at `ranks` (0: one process) then the same with its choice as
 * flags: byte-identical. The --auto run's final into final, choice into c. */
static bool auto_vs_explicit(const suite *s, int ranks, const char *name,
                             char *final, size_t cap, choice *c) {
  tu_job a, x;
  char nm[64];
  job_init(&a, name);
  job_cmd(&a, s, ranks, 0);
  tu_add(&a.c, "--auto");
  if (!run_ok(s, &a, NULL)) return false;
  CHECKF(log_contains(a.log, "--auto chose --threads"), "%s: no choice in "
         "its log", name);
  char id[64];
  tu_one_run(s->mc, a.exp, MLFLOW_RUN_FINISHED, id, sizeof id, name);
  if (!id[0] || !read_choice(s, id, c, name)) return false;
  check_file(&a, c, NULL);
  if (ranks > 1) /* 2 ranks: bucket sizes and algorithms were timed */
    CHECKF(strstr(c->measured, "bucket_kb=256:") &&
               strstr(c->measured, "allreduce=reduce-bcast:"),
           "%s: measured %s lacks the bucket sizes or algorithms", name,
           c->measured);
  else if (sysconf(_SC_NPROCESSORS_ONLN) > 1)
    CHECKF(strstr(c->measured, "threads=1:") &&
               strstr(c->measured, "threads=2:"),
           "%s: measured %s lacks thread counts", name, c->measured);
  final_of(&a, final, cap);
  snprintf(nm, sizeof nm, "%s-explicit", name);
  job_init(&x, nm);
  job_cmd(&x, s, ranks, 0);
  tu_add(&x.c, "--threads");
  tu_add(&x.c, c->threads);
  tu_add(&x.c, "--bucket-kb");
  tu_add(&x.c, c->bucket_kb);
  tu_add(&x.c, "--allreduce");
  tu_add(&x.c, c->allreduce);
  if (!run_ok(s, &x, NULL)) return false;
  char got[1200];
  final_of(&x, got, sizeof got);
  char what[128];
  snprintf(what, sizeof what, "%s: the choice as flags vs --auto", name);
  compare_ckpts(got, final, what);
  test_drop_artifacts(s->mc, a.exp);
  test_drop_artifacts(s->mc, x.exp);
  return true;
}

/* ---- 0. the file format ------------------------------------------------- */

static void format_scenario(void) {
  train_auto_choice c, back;
  memset(&c, 0, sizeof c);
  c.threads = 3;
  c.bucket_kb = 4096;
  c.allreduce = GF_ALLREDUCE_HIER;
  snprintf(c.measured, sizeof c.measured, "threads=1:2.5,allreduce=tree:1.0");
  char text[4096];
  gf_err err;
  REQUIRE(train_auto_format(&c, text, sizeof text, &err) == GF_OK);
  gf_status st = train_auto_parse(text, strlen(text), &back, &err);
  CHECKF(st == GF_OK, "format: %s", err.msg);
  CHECK(back.threads == 3 && back.bucket_kb == 4096 &&
        back.allreduce == GF_ALLREDUCE_HIER &&
        strcmp(back.measured, c.measured) == 0);
  const char *bad[] = {
      "", "ganflow-auto 2\nthreads 1\nbucket_kb 4\nallreduce ring\nmeasured -\n",
      "ganflow-auto 1\nthreads 1\nbucket_kb 4\nallreduce ring\n",
      "ganflow-auto 1\nthreads 0\nbucket_kb 4\nallreduce ring\nmeasured -\n",
      "ganflow-auto 1\nthreads 1\nbucket_kb 3\nallreduce ring\nmeasured -\n",
      "ganflow-auto 1\nthreads 1\nbucket_kb 4\nallreduce star\nmeasured -\n",
      "ganflow-auto 1\nthreads 1\nthreads 1\nbucket_kb 4\nallreduce ring\n"
      "measured -\n",
      "ganflow-auto 1\nthreads 1\nbucket_kb 4\nallreduce ring\nmeasured a b\n",
      "ganflow-auto 1\nthreads 1\nbucket_kb 4\nallreduce ring\nmeasured -\n\n",
      "ganflow-auto 1\nthreads 1\nbucket_kb 4\nallreduce ring\nmeasured -\nx 1\n",
      "ganflow-auto 1\nthreads +1\nbucket_kb 4\nallreduce ring\nmeasured -\n",
      NULL};
  for (int i = 0; bad[i]; i++) {
    st = train_auto_parse(bad[i], strlen(bad[i]), &back, &err);
    CHECKF(st == GF_EFORMAT, "format: bad form %d read as %s", i,
           gf_status_name(st));
  }
  /* without the last newline, and with a NUL inside */
  const char ok[] = "ganflow-auto 1\nmeasured -\nallreduce tree\nbucket_kb "
                    "1048576\nthreads 4096";
  CHECK(train_auto_parse(ok, strlen(ok), &back, &err) == GF_OK &&
        back.threads == 4096 && back.bucket_kb == 1048576);
  CHECK(train_auto_parse(ok, sizeof ok, &back, &err) == GF_EFORMAT);
}

/* ---- 3. kill -9 and the same command again ------------------------------ */

static void kill_scenario(const suite *s, const char *ref_final,
                          const choice *ref) {
  tu_job j;
  job_init(&j, "kill");
  job_cmd(&j, s, 0, KILL_CKPT_EVERY);
  tu_add(&j.c, "--auto");
  pid_t pid = spawn(s, &j, j.log);
  const long past = KILL_CKPT_EVERY + LOG_EVERY;
  bool ended;
  long at;
  int rc = tu_kill_past(pid, j.dir, KILL_CKPT_EVERY, j.log, past,
                        RUN_TIMEOUT_S, &ended, &at);
  fprintf(stderr, "[kill] SIGKILL at step %ld (log), exit %d\n", at, rc);
  CHECKF(!ended && rc == 128 + SIGKILL && at < STEPS, "kill: the run ended "
         "by itself (exit %d, step %ld)", rc, at);
  if (ended) return;
  char path[1200];
  snprintf(path, sizeof path, "%s/auto", j.dir);
  size_t l1 = 0, l2 = 0;
  char *before = read_all(path, &l1);
  CHECKF(before != NULL, "kill: no %s after the first process", path);
  char log2[1200];
  snprintf(log2, sizeof log2, "%s.resume", j.log);
  if (!run_ok(s, &j, log2)) {
    free(before);
    return;
  }
  CHECKF(log_contains(log2, "resuming from"), "kill: did not resume");
  CHECKF(log_contains(log2, "the run's --auto choice, from") &&
             !log_contains(log2, "--auto chose"),
         "kill: the resumed process measured again instead of taking the "
         "run's choice (%s)", log2);
  char *after = read_all(path, &l2);
  CHECKF(before && after && l1 == l2 && memcmp(before, after, l1) == 0,
         "kill: %s changed on resume", path);
  free(after);
  free(before);
  char id[64];
  tu_one_run(s->mc, j.exp, MLFLOW_RUN_FINISHED, id, sizeof id, "kill");
  choice c;
  if (!id[0] || !read_choice(s, id, &c, "kill")) return;
  check_file(&j, &c, NULL);
  char got[1200];
  final_of(&j, got, sizeof got);
  if (strcmp(c.threads, ref->threads) == 0 &&
      strcmp(c.bucket_kb, ref->bucket_kb) == 0 &&
      strcmp(c.allreduce, ref->allreduce) == 0) {
    compare_ckpts(got, ref_final, "kill: killed and resumed --auto vs the "
                  "uninterrupted --auto run");
  } else {
    /* the two measurements chose differently: the uninterrupted run with
     * this run's choice is the one given as flags */
    fprintf(stderr, "[kill] chose threads %s (scenario 1: %s): comparing "
            "with that choice as flags\n", c.threads, ref->threads);
    tu_job x;
    job_init(&x, "kill-ref");
    job_cmd(&x, s, 0, 0);
    tu_add(&x.c, "--threads");
    tu_add(&x.c, c.threads);
    if (run_ok(s, &x, NULL)) {
      char ref2[1200];
      final_of(&x, ref2, sizeof ref2);
      compare_ckpts(got, ref2, "kill: killed and resumed --auto vs its "
                    "choice uninterrupted");
    }
    test_drop_artifacts(s->mc, x.exp);
  }
  test_drop_artifacts(s->mc, j.exp);
}

int main(void) {
  double t_all = mono_s();
  format_scenario();
  const char *mpirun = GF_MPIEXEC;
  if (!gf_comm_built(GF_COMM_MPI) || !*mpirun || access(mpirun, X_OK) != 0)
    SKIP_TEST("no MPI in this build or no mpirun (%s)", mpirun);
  if (!tu_have_fashion()) return 1;
  suite s;
  memset(&s, 0, sizeof s);
  snprintf(s.mpirun, sizeof s.mpirun, "%s", mpirun);
  char *uri = test_mlflow_uri();
  snprintf(s.uri, sizeof s.uri, "%s", uri);
  free(uri);
  tu_trainer_test_start(GF_TEST_TMP);
  s.mc = test_client_of(s.uri);

  char one[1200], two[1200];
  choice c1, c2;
  double t0 = mono_s();
  bool ok1 = auto_vs_explicit(&s, 0, "auto-1rank", one, sizeof one, &c1);
  fprintf(stderr, "[1 rank] %.1f s\n", mono_s() - t0);
  t0 = mono_s();
  auto_vs_explicit(&s, 2, "auto-2ranks", two, sizeof two, &c2);
  fprintf(stderr, "[2 ranks] %.1f s\n", mono_s() - t0);
  t0 = mono_s();
  if (ok1) kill_scenario(&s, one, &c1);
  fprintf(stderr, "[kill] %.1f s\n", mono_s() - t0);

  mlflow_client_free(s.mc);
  fprintf(stderr, "test_train_auto: %.1f s in all\n", mono_s() - t_all);
  test_drop_tmp(GF_TEST_TMP);
  return check_report();
}
